//! PSNR-HVS (`psnr_hvs_y`, `psnr_hvs_cb`, `psnr_hvs_cr`, `psnr_hvs`), as libvmaf 3.2.0's feature
//! `psnr_hvs` computes it, bit for bit.
//!
//! Source: libvmaf 3.2.0 `libvmaf/src/feature/third_party/xiph/psnr_hvs.c` (Xiph's Daala tool):
//! 8x8 blocks every 7 samples, the Daala integer 8-point DCT (`od_bin_fdct8`), contrast masking
//! with the CSF tables, a `float` accumulator over the whole plane.
//!
//! Structure for other backends: [`block_terms`] gives the 64 `float` terms of one block
//! (integer DCT plus per-block float work); `plane_score` adds them in a fixed order (blocks in
//! raster order, terms in coefficient order) into one sequential `float` sum, as libvmaf does.
//!
//! libvmaf refuses depths above 12 bits (its 32-bit DCT arithmetic would overflow) and 4:0:0
//! pictures; both are [`Error::Unsupported`] here. A plane smaller than 8x8 has no block (libvmaf
//! would divide 0 by 0); it is refused too. 9- and 11-bit samples are handled like 10 and 12
//! (libvmaf's code reads them the same way).

use std::num::Wrapping;
use std::ops::{Add, AddAssign, Sub, SubAssign};

use crate::error::{Error, Result};
use crate::picture::Plane;

use super::psnr::check_pair;

/// libvmaf's names for the four scores.
pub const NAMES: [&str; 4] = ["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"];

/// Per-frame PSNR-HVS scores (dB).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PsnrHvsScores {
    pub y: f64,
    pub cb: f64,
    pub cr: f64,
    /// `0.8 * y + 0.1 * (cb + cr)` on the linear scores, then in dB.
    pub psnr_hvs: f64,
}

/// psnr_hvs.c `csf_y` (as `float`).
#[rustfmt::skip]
#[allow(clippy::excessive_precision)] // libvmaf's digits, rounded to float as C does
const CSF_Y: [[f32; 8]; 8] = [
    [1.6193873005, 2.2901594831, 2.08509755623, 1.48366094411, 1.00227514334, 0.678296995242, 0.466224900598, 0.3265091542],
    [2.2901594831, 1.94321815382, 2.04793073064, 1.68731108984, 1.2305666963, 0.868920337363, 0.61280991668, 0.436405793551],
    [2.08509755623, 2.04793073064, 1.34329019223, 1.09205635862, 0.875748795257, 0.670882927016, 0.501731932449, 0.372504254596],
    [1.48366094411, 1.68731108984, 1.09205635862, 0.772819797575, 0.605636379554, 0.48309405692, 0.380429446972, 0.295774038565],
    [1.00227514334, 1.2305666963, 0.875748795257, 0.605636379554, 0.448996256676, 0.352889268808, 0.283006984131, 0.226951348204],
    [0.678296995242, 0.868920337363, 0.670882927016, 0.48309405692, 0.352889268808, 0.27032073436, 0.215017739696, 0.17408067321],
    [0.466224900598, 0.61280991668, 0.501731932449, 0.380429446972, 0.283006984131, 0.215017739696, 0.168869545842, 0.136153931001],
    [0.3265091542, 0.436405793551, 0.372504254596, 0.295774038565, 0.226951348204, 0.17408067321, 0.136153931001, 0.109083846276],
];

/// psnr_hvs.c `csf_cb420` (used for Cb at every subsampling).
#[rustfmt::skip]
#[allow(clippy::excessive_precision)] // libvmaf's digits, rounded to float as C does
const CSF_CB420: [[f32; 8]; 8] = [
    [1.91113096927, 2.46074210438, 1.18284184739, 1.14982565193, 1.05017074788, 0.898018824055, 0.74725392039, 0.615105596242],
    [2.46074210438, 1.58529308355, 1.21363250036, 1.38190029285, 1.33100189972, 1.17428548929, 0.996404342439, 0.830890433625],
    [1.18284184739, 1.21363250036, 0.978712413627, 1.02624506078, 1.03145147362, 0.960060382087, 0.849823426169, 0.731221236837],
    [1.14982565193, 1.38190029285, 1.02624506078, 0.861317501629, 0.801821139099, 0.751437590932, 0.685398513368, 0.608694761374],
    [1.05017074788, 1.33100189972, 1.03145147362, 0.801821139099, 0.676555426187, 0.605503172737, 0.55002013668, 0.495804539034],
    [0.898018824055, 1.17428548929, 0.960060382087, 0.751437590932, 0.605503172737, 0.514674450957, 0.454353482512, 0.407050308965],
    [0.74725392039, 0.996404342439, 0.849823426169, 0.685398513368, 0.55002013668, 0.454353482512, 0.389234902883, 0.342353999733],
    [0.615105596242, 0.830890433625, 0.731221236837, 0.608694761374, 0.495804539034, 0.407050308965, 0.342353999733, 0.295530605237],
];

/// psnr_hvs.c `csf_cr420` (used for Cr at every subsampling).
#[rustfmt::skip]
#[allow(clippy::excessive_precision)] // libvmaf's digits, rounded to float as C does
const CSF_CR420: [[f32; 8]; 8] = [
    [2.03871978502, 2.62502345193, 1.26180942886, 1.11019789803, 1.01397751469, 0.867069376285, 0.721500455585, 0.593906509971],
    [2.62502345193, 1.69112867013, 1.17180569821, 1.3342742857, 1.28513006198, 1.13381474809, 0.962064122248, 0.802254508198],
    [1.26180942886, 1.17180569821, 0.944981930573, 0.990876405848, 0.995903384143, 0.926972725286, 0.820534991409, 0.706020324706],
    [1.11019789803, 1.3342742857, 0.990876405848, 0.831632933426, 0.77418706195, 0.725539939514, 0.661776842059, 0.587716619023],
    [1.01397751469, 1.28513006198, 0.995903384143, 0.77418706195, 0.653238524286, 0.584635025748, 0.531064164893, 0.478717061273],
    [0.867069376285, 1.13381474809, 0.926972725286, 0.725539939514, 0.584635025748, 0.496936637883, 0.438694579826, 0.393021669543],
    [0.721500455585, 0.962064122248, 0.820534991409, 0.661776842059, 0.531064164893, 0.438694579826, 0.375820256136, 0.330555063063],
    [0.593906509971, 0.802254508198, 0.706020324706, 0.587716619023, 0.478717061273, 0.393021669543, 0.330555063063, 0.285345396658],
];

/// The CSF table of plane `p` (0 = Y, 1 = Cb, 2 = Cr).
pub fn csf(p: usize) -> &'static [[f32; 8]; 8] {
    match p {
        0 => &CSF_Y,
        1 => &CSF_CB420,
        _ => &CSF_CR420,
    }
}

/// Integer arithmetic of the DCT. libvmaf runs it in 32-bit `int`; [`Wrapping<i32>`] is that
/// arithmetic without a panic path (on x86-64 C's `int` wraps the same way). The test build also
/// runs it in `i64` to show that no intermediate leaves the `int` range for valid samples of up to
/// 12 bits, so the wrapping never happens.
trait DctInt: Copy + Add<Output = Self> + Sub<Output = Self> + AddAssign + SubAssign {
    fn from_sample(v: i32) -> Self;
    /// `(self * c + r) >> s` (arithmetic shift).
    fn mul_round(self, c: i32, r: i32, s: u32) -> Self;
    /// `OD_DCT_RSHIFT(a, 1)` = `OD_UNBIASED_RSHIFT32(a, 1)`: `(a + (a < 0)) >> 1` for 32-bit `a`.
    fn half(self) -> Self;
}

impl DctInt for Wrapping<i32> {
    #[inline(always)]
    fn from_sample(v: i32) -> Self {
        Wrapping(v)
    }
    #[inline(always)]
    fn mul_round(self, c: i32, r: i32, s: u32) -> Self {
        (self * Wrapping(c) + Wrapping(r)) >> s as usize
    }
    #[inline(always)]
    fn half(self) -> Self {
        // ((int32_t)(((uint32_t)a >> 31) + a)) >> 1
        Wrapping(((self.0 as u32 >> 31) as i32).wrapping_add(self.0) >> 1)
    }
}

#[cfg(test)]
impl DctInt for i64 {
    fn from_sample(v: i32) -> Self {
        i64::from(v)
    }
    fn mul_round(self, c: i32, r: i32, s: u32) -> Self {
        (self * i64::from(c) + i64::from(r)) >> s
    }
    fn half(self) -> Self {
        (self + i64::from(self < 0)) >> 1
    }
}

/// `od_bin_fdct8`: the Daala 8-point forward DCT (lifting steps, constants from psnr_hvs.c).
/// Reads `x[0], x[stride], ..., x[7 * stride]`, writes `y[0..8]`.
#[inline(always)]
fn fdct8<T: DctInt>(y: &mut [T], x: &[T], stride: usize) {
    let mut t0 = x[0];
    let mut t4 = x[stride];
    let mut t2 = x[2 * stride];
    let mut t6 = x[3 * stride];
    let mut t7 = x[4 * stride];
    let mut t3 = x[5 * stride];
    let mut t5 = x[6 * stride];
    let mut t1 = x[7 * stride];
    t1 = t0 - t1;
    let t1h = t1.half();
    t0 -= t1h;
    t4 += t5;
    let t4h = t4.half();
    t5 -= t4h;
    t3 = t2 - t3;
    t2 -= t3.half();
    t6 += t7;
    let t6h = t6.half();
    t7 = t6h - t7;
    t0 += t6h;
    t6 = t0 - t6;
    t2 = t4h - t2;
    t4 = t2 - t4;
    t0 -= t4.mul_round(13573, 16384, 15);
    t4 += t0.mul_round(11585, 8192, 14);
    t0 -= t4.mul_round(13573, 16384, 15);
    t6 -= t2.mul_round(21895, 16384, 15);
    t2 += t6.mul_round(15137, 8192, 14);
    t6 -= t2.mul_round(21895, 16384, 15);
    t3 += t5.mul_round(19195, 16384, 15);
    t5 += t3.mul_round(11585, 8192, 14);
    t3 -= t5.mul_round(7489, 4096, 13);
    t7 = t5.half() - t7;
    t5 -= t7;
    t3 = t1h - t3;
    t1 -= t3;
    t7 += t1.mul_round(3227, 16384, 15);
    t1 -= t7.mul_round(6393, 16384, 15);
    t7 += t1.mul_round(3227, 16384, 15);
    t5 += t3.mul_round(2485, 4096, 13);
    t3 -= t5.mul_round(18205, 16384, 15);
    t5 += t3.mul_round(2485, 4096, 13);
    y[0] = t0;
    y[1] = t1;
    y[2] = t2;
    y[3] = t3;
    y[4] = t4;
    y[5] = t5;
    y[6] = t6;
    y[7] = t7;
}

/// `od_bin_fdct8x8`: columns into a temporary (transposed), then columns of that. In place.
#[inline(always)]
fn fdct8x8<T: DctInt>(b: &mut [T; 64]) {
    let mut z = [T::from_sample(0); 64];
    for i in 0..8 {
        fdct8(&mut z[8 * i..8 * i + 8], &b[i..], 8);
    }
    for i in 0..8 {
        fdct8(&mut b[8 * i..8 * i + 8], &z[i..], 8);
    }
}

/// The masking table: `(csf * 0.3885746225901003)^2`, computed in double, stored as float.
pub fn mask_table(csf: &[[f32; 8]; 8]) -> [[f32; 8]; 8] {
    let mut m = [[0f32; 8]; 8];
    for x in 0..8 {
        for y in 0..8 {
            let v = f64::from(csf[x][y]) * 0.3885746225901003;
            m[x][y] = (v * v) as f32;
        }
    }
    m
}

/// Block mean/variance statistic of psnr_hvs.c: the ratio of the summed 4x4 sub-block variances
/// to the whole block's variance (0 stays 0), in its float order of operations.
fn block_variance_ratio(b: &[i32; 64]) -> f32 {
    let mut gmean = 0f32;
    let mut means = [0f32; 4];
    for i in 0..8 {
        for j in 0..8 {
            let sub = ((i & 12) >> 2) + ((j & 12) >> 1);
            let v = b[i * 8 + j] as f32;
            gmean += v;
            means[sub] += v;
        }
    }
    gmean /= 64.0;
    for m in &mut means {
        *m /= 16.0;
    }
    let mut gvar = 0f32;
    let mut vars = [0f32; 4];
    for i in 0..8 {
        for j in 0..8 {
            let sub = ((i & 12) >> 2) + ((j & 12) >> 1);
            let v = b[i * 8 + j] as f32;
            gvar += (v - gmean) * (v - gmean);
            vars[sub] += (v - means[sub]) * (v - means[sub]);
        }
    }
    // `1 / 63.f * 64` and `1 / 15.f * 16`, float constants.
    gvar *= 1.0f32 / 63.0 * 64.0;
    for v in &mut vars {
        *v *= 1.0f32 / 15.0 * 16.0;
    }
    if gvar > 0.0 {
        gvar = (vars[0] + vars[1] + vars[2] + vars[3]) / gvar;
    }
    gvar
}

/// The 64 terms one 8x8 block adds to the plane's `float` sum, in coefficient order, for samples
/// `src`/`dst` (row-major, any depth up to 12 bits).
pub fn block_terms(
    src: &[i32; 64],
    dst: &[i32; 64],
    csf: &[[f32; 8]; 8],
    mask: &[[f32; 8]; 8],
) -> [f32; 64] {
    let s_gvar = block_variance_ratio(src);
    let d_gvar = block_variance_ratio(dst);
    let mut ds = src.map(Wrapping);
    let mut dd = dst.map(Wrapping);
    fdct8x8(&mut ds);
    fdct8x8(&mut dd);
    let ds = ds.map(|v| v.0);
    let dd = dd.map(|v| v.0);

    // Masks: `dct * dct` is an int product (below 2^31 up to 12 bits), times the float mask.
    let mut s_mask = 0f32;
    let mut d_mask = 0f32;
    for i in 0..8 {
        for j in usize::from(i == 0)..8 {
            s_mask += (i64::from(ds[i * 8 + j]) * i64::from(ds[i * 8 + j])) as f32 * mask[i][j];
        }
    }
    for i in 0..8 {
        for j in usize::from(i == 0)..8 {
            d_mask += (i64::from(dd[i * 8 + j]) * i64::from(dd[i * 8 + j])) as f32 * mask[i][j];
        }
    }
    // sqrt in double of a float product, divided by 32, stored to float.
    let mut s_mask = (f64::from(s_mask * s_gvar).sqrt() / 32.0) as f32;
    let d_mask = (f64::from(d_mask * d_gvar).sqrt() / 32.0) as f32;
    if d_mask > s_mask {
        s_mask = d_mask;
    }
    let mut out = [0f32; 64];
    for i in 0..8 {
        for j in 0..8 {
            let mut err = (i64::from(ds[i * 8 + j]) - i64::from(dd[i * 8 + j])).abs() as f32;
            if i != 0 || j != 0 {
                let t = s_mask / mask[i][j];
                err = if err < t { 0.0 } else { err - t };
            }
            out[i * 8 + j] = (err * csf[i][j]) * (err * csf[i][j]);
        }
    }
    out
}

/// The number of 8x8 blocks of a `w` x `h` plane along x and y (blocks every 7 samples while
/// the block fits; `w, h >= 8`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn block_grid(w: usize, h: usize) -> (usize, usize) {
    ((w - 7).div_ceil(7), (h - 7).div_ceil(7))
}

/// The sequential `float` sum of `calc_psnrhvs` (blocks in raster order, each block's 64 terms
/// in coefficient order) and the plane's linear score from it: shared by the CPU path and the
/// GPU path (which reads the per-block terms back and adds them here in the same order).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PlaneSum {
    ret: f32,
    // Bound: 64 per block, at most 64 * (15360/7 + 1) * (8640/7 + 1) ~= 1.7e8 < 2^31.
    pixels: i32,
}

impl PlaneSum {
    /// Add one block's 64 terms.
    #[inline]
    pub(crate) fn add_block(&mut self, terms: impl IntoIterator<Item = f32>) {
        for v in terms {
            self.ret += v;
        }
        self.pixels += 64;
    }

    /// The sum of `blocks` blocks' terms added elsewhere in this order (the GPU's, bit for bit).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn from_sum(ret: f32, blocks: usize) -> PlaneSum {
        PlaneSum {
            ret,
            pixels: (64 * blocks) as i32,
        }
    }

    /// The linear score (mean masked squared error, normalised by the peak squared).
    pub(crate) fn finish(self, bpc: u8) -> f64 {
        let mut ret = self.ret / self.pixels as f32;
        let samplemax = (1i32 << bpc) - 1;
        ret /= (samplemax * samplemax) as f32;
        f64::from(ret)
    }
}

/// `calc_psnrhvs` of one plane: the linear score (mean masked squared error, normalised by the
/// peak squared). The plane must be at least 8x8 and at most 12 bits (checked by the caller).
pub(crate) fn plane_score(r: &Plane<'_>, d: &Plane<'_>, plane: usize) -> f64 {
    let csf = csf(plane);
    let mask = mask_table(csf);
    let (w, h) = (r.width, r.height);
    let mut sum = PlaneSum::default();
    let mut s = [0i32; 64];
    let mut t = [0i32; 64];
    // Blocks at every 7th row and column while the 8x8 block fits.
    for y in (0..h - 7).step_by(7) {
        for x in (0..w - 7).step_by(7) {
            for i in 0..8 {
                let (rr, dr) = (r.row(y + i), d.row(y + i));
                for j in 0..8 {
                    s[i * 8 + j] = i32::from(rr[x + j]);
                    t[i * 8 + j] = i32::from(dr[x + j]);
                }
            }
            sum.add_block(block_terms(&s, &t, csf, &mask));
        }
    }
    sum.finish(r.bpc)
}

/// `convert_score_db`: `10 * (-1 * log10(weight * score))` with weight 1.
fn to_db(score: f64) -> f64 {
    10.0 * (-(1.0 * score).log10())
}

/// libvmaf's `psnr_hvs` scores of a picture pair: `r` and `d` are the Y, Cb, Cr planes (chroma
/// at any subsampling; each plane is scored at its own size).
pub fn psnr_hvs(r: &[Plane<'_>], d: &[Plane<'_>]) -> Result<PsnrHvsScores> {
    check_planes(r, d)?;
    let mut lin = [0f64; 3];
    for p in 0..3 {
        lin[p] = plane_score(&r[p], &d[p], p);
    }
    Ok(scores(lin))
}

/// The checks of [`psnr_hvs`]: three plane pairs of one depth up to 12 bits, each at least 8x8,
/// samples within the depth.
pub(crate) fn check_planes(r: &[Plane<'_>], d: &[Plane<'_>]) -> Result<()> {
    if r.len() != 3 || d.len() != 3 {
        return Err(Error::Unsupported {
            metric: "psnr_hvs",
            reason: "PSNR-HVS needs the luma and both chroma planes".into(),
        });
    }
    for p in 0..3 {
        check_pair(&r[p], &d[p], NAMES[p])?;
        let bpc = r[p].bpc;
        if bpc != r[0].bpc {
            return Err(Error::Mismatch(format!(
                "psnr_hvs: plane {p} has {bpc} bits, luma {}",
                r[0].bpc
            )));
        }
        if bpc > 12 {
            return Err(Error::Unsupported {
                metric: "psnr_hvs",
                reason: format!("{bpc}-bit samples (libvmaf allows at most 12 bits)"),
            });
        }
        if r[p].width < 8 || r[p].height < 8 {
            return Err(Error::Unsupported {
                metric: "psnr_hvs",
                reason: format!("a {}x{} plane has no 8x8 block", r[p].width, r[p].height),
            });
        }
        // Samples above the depth would take the DCT outside 32-bit range.
        let max = (1u16 << bpc) - 1;
        for pl in [&r[p], &d[p]] {
            for y in 0..pl.height {
                // The row's largest sample first (a loop the compiler vectorises), the position
                // only for the error.
                if pl.row(y).iter().fold(0u16, |m, &v| m.max(v)) <= max {
                    continue;
                }
                if let Some(x) = pl.row(y).iter().position(|&v| v > max) {
                    return Err(Error::SampleRange {
                        plane: NAMES[p],
                        x,
                        y,
                        value: pl.row(y)[x],
                        bpc,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The scores from the three planes' linear scores.
pub(crate) fn scores(lin: [f64; 3]) -> PsnrHvsScores {
    let combined = lin[0] * 0.8 + 0.1 * (lin[1] + lin[2]);
    PsnrHvsScores {
        y: to_db(lin[0]),
        cb: to_db(lin[1]),
        cr: to_db(lin[2]),
        psnr_hvs: to_db(combined),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the 2-D DCT in `i64` and in wrapping `i32`; returns the largest magnitude reached by
    /// any coefficient, and whether both agree.
    fn dct_both(b: &[i32; 64]) -> (i64, bool) {
        let mut w = b.map(Wrapping);
        fdct8x8(&mut w);
        let mut l = b.map(i64::from);
        fdct8x8(&mut l);
        let max = l.iter().map(|v| v.abs()).max().unwrap();
        (max, w.iter().zip(&l).all(|(a, b)| i64::from(a.0) == *b))
    }

    #[test]
    fn dct_stays_in_32_bits_up_to_12_bits() {
        // Extreme blocks: every 0/max pattern of a row repeated, checkerboards, the sign
        // patterns of the DCT basis functions, and pseudo-random 0/max blocks.
        let m = 4095;
        let mut blocks: Vec<[i32; 64]> = Vec::new();
        for pat in 0..256u32 {
            blocks.push(std::array::from_fn(|k| {
                if pat >> (k % 8) & 1 == 1 { m } else { 0 }
            }));
            blocks.push(std::array::from_fn(|k| {
                if pat >> (k / 8) & 1 == 1 { m } else { 0 }
            }));
            blocks.push(std::array::from_fn(|k| {
                if (pat >> (k % 8) & 1) ^ (pat >> (k / 8) & 1) == 1 {
                    m
                } else {
                    0
                }
            }));
        }
        for u in 0..8 {
            for v in 0..8 {
                let basis = |k: usize| {
                    let (i, j) = ((k / 8) as f64, (k % 8) as f64);
                    ((2.0 * i + 1.0) * u as f64 * std::f64::consts::PI / 16.0).cos()
                        * ((2.0 * j + 1.0) * v as f64 * std::f64::consts::PI / 16.0).cos()
                };
                blocks.push(std::array::from_fn(|k| if basis(k) > 0.0 { m } else { 0 }));
                blocks.push(std::array::from_fn(|k| if basis(k) < 0.0 { m } else { 0 }));
            }
        }
        let mut seed = 0x9e3779b97f4a7c15u64;
        for _ in 0..20000 {
            blocks.push(std::array::from_fn(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                if seed & 1 == 1 { m } else { 0 }
            }));
        }
        let mut worst = 0;
        for b in &blocks {
            let (max, same) = dct_both(b);
            assert!(same, "32-bit DCT wrapped on {b:?}");
            worst = worst.max(max);
        }
        // Coefficients stay below 46341, so `dct * dct` in int (below 2^31) cannot overflow.
        assert!(worst < 46341, "largest coefficient {worst}");
        eprintln!("largest 12-bit DCT coefficient: {worst}");
    }

    #[test]
    fn identical_frames_give_infinity() {
        // Zero error: log10(0) = -inf, so libvmaf reports +inf dB for every plane.
        for bpc in 8..=12u8 {
            let v: Vec<u16> = (0..40 * 40).map(|k| (k * 37 % (1 << bpc)) as u16).collect();
            let c: Vec<u16> = (0..20 * 20).map(|k| (k * 11 % (1 << bpc)) as u16).collect();
            let p = [
                Plane::from_slice(&v, 40, 40, bpc),
                Plane::from_slice(&c, 20, 20, bpc),
                Plane::from_slice(&c, 20, 20, bpc),
            ];
            let s = psnr_hvs(&p, &p).unwrap();
            assert_eq!(
                (s.y, s.cb, s.cr, s.psnr_hvs),
                (f64::INFINITY, f64::INFINITY, f64::INFINITY, f64::INFINITY)
            );
        }
    }

    #[test]
    fn refusals() {
        let v = vec![0u16; 40 * 40];
        for bpc in 13..=16u8 {
            let p = [Plane::from_slice(&v, 40, 40, bpc); 3];
            assert!(matches!(
                psnr_hvs(&p, &p),
                Err(Error::Unsupported {
                    metric: "psnr_hvs",
                    ..
                })
            ));
        }
        let p = [Plane::from_slice(&v, 40, 40, 8)];
        assert!(matches!(psnr_hvs(&p, &p), Err(Error::Unsupported { .. })));
        let small = Plane::from_slice(&v, 7, 7, 8);
        let p = [Plane::from_slice(&v, 40, 40, 8), small, small];
        assert!(matches!(psnr_hvs(&p, &p), Err(Error::Unsupported { .. })));
        let mut hi = vec![0u16; 40 * 40];
        hi[41] = 1024;
        let p = [Plane::from_slice(&hi, 40, 40, 10); 3];
        assert!(matches!(
            psnr_hvs(&p, &p),
            Err(Error::SampleRange {
                x: 1,
                y: 1,
                value: 1024,
                ..
            })
        ));
    }
}
