//! VIF (visual information fidelity), the fixed-point version of libvmaf 3.2.0's `integer_vif`
//! feature extractor (`libvmaf/src/feature/integer_vif.c` and `integer_vif.h`, plain C path).
//!
//! [`compute`] turns a reference and a distorted luma plane into four [`VifScaleAccum`]s (one per
//! scale), the integer sums libvmaf keeps in its `VifResiduals`-shaped locals. [`VifAccum::scores`]
//! is the only floating-point step that follows: it turns the sums into `integer_vif_scale0..3`
//! with libvmaf's types (double sums rounded to float, a float division).
//!
//! # The algorithm, as libvmaf's C path does it
//!
//! Per scale `s` (0..3) on an image of `w x h` (scale 0: the luma plane; each further scale
//! halves `w` and `h`, rounding down):
//! 1. vertical pass of the symmetric filter `s` over every row (rows outside the image are
//!    mirrored: `-1 -> 1`, `h -> h - 2`), giving per column the filtered `mu1`, `mu2` and the
//!    filtered products `ref*ref`, `dis*dis`, `ref*dis`, each rounded and shifted by a
//!    scale- and depth-dependent amount;
//! 2. the same filter horizontally on those rows (columns mirrored the same way);
//! 3. per pixel: `sigma1_sq`, `sigma2_sq`, `sigma12` from the filtered values, then either the
//!    "log" branch (`sigma1_sq >= 2 * 65536`: base-2 logs from a 16-bit table, the gain `g` in
//!    double, limited by `enhn_gain_limit`) or the "non-log" branch;
//! 4. for the next scale: filter `s + 1` over the image (same mirroring), keep every other row
//!    and column.
//!
//! 8-bit content (a [`Plane`] with `bpc == 8`) takes libvmaf's 8-bit code at scale 0
//! (`vif_statistic_8`, `subsample_rd_8`); 9- to 16-bit content the 16-bit code. Above scale 0
//! every depth runs `vif_statistic_16` / `subsample_rd_16` on 16-bit samples.
//!
//! # Exactness and speed
//!
//! Every value libvmaf computes is computed here with the same result: the same rounding
//! constants and shifts, the same truncating casts (`(uint16_t)`, `(uint32_t)`, the wrap-around
//! `(int32_t)(u32 - u32)`), the same double arithmetic for the gain (`g = sigma12 / (sigma1_sq +
//! 65536e-10)` in f64, then truncation to int32 / int64), the same log table. What differs is only
//! how exact integer sums are formed, which cannot change them:
//! - filters are folded on their symmetry (`c * (a + b)` for the two taps `c`);
//! - a 64-bit sum of 32-bit products is kept as two 32-bit sums of their 16-bit halves and
//!   recombined (`hi * 65536 + lo`) before libvmaf's rounding shift, so that the row loops run on
//!   32-bit lanes;
//! - the per-pixel branches become a branch-free pass plus a pass over the pixels that take the
//!   gain path.
//!
//! Every 32-bit sum has its bound beside it (none can wrap; the dev profile's overflow checks
//! would catch one). The row loops work on blocks of columns held in registers; on x86-64 CPUs
//! with AVX2 the same code is compiled a second time for AVX2 and chosen at run time (integer
//! results cannot depend on it; the double steps use no FMA), with explicit AVX2 kernels, and
//! with AVX-512 a fused row kernel (module `avx2::wide512`). The tests compare every build
//! with a literal scalar transcription of libvmaf's C loops, and `tests/simd_parity.rs` the
//! builds with each other.

// Index loops over slices re-cut to one length are the form of the row kernels that the
// compiler vectorises without bounds checks (and the literal C transcription in the tests).
#![allow(clippy::needless_range_loop)]

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::features::isa::Isa;
use crate::picture::Plane;

/// libvmaf 3.2.0 `libvmaf/src/feature/integer_vif.h`: `vif_filter1d_table[0]` (17 taps, sum 65536).
const FILTER_0: [u16; 17] = [
    489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935,
    489,
];
/// libvmaf 3.2.0 `integer_vif.h`: `vif_filter1d_table[1]` (9 taps, sum 65536).
const FILTER_1: [u16; 9] = [1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244];
/// libvmaf 3.2.0 `integer_vif.h`: `vif_filter1d_table[2]` (5 taps, sum 65536).
const FILTER_2: [u16; 5] = [3571, 16004, 26386, 16004, 3571];
/// libvmaf 3.2.0 `integer_vif.h`: `vif_filter1d_table[3]` (3 taps, sum 65536).
const FILTER_3: [u16; 3] = [10904, 43728, 10904];

/// libvmaf 3.2.0 `integer_vif.c`: `sigma_nsq = 65536 << 1` (the noise variance, Q16).
const SIGMA_NSQ: i32 = 65536 << 1;

/// libvmaf 3.2.0 `integer_vif.c`: `eps = 65536 * 1.0e-10` (double).
const GAIN_EPS: f64 = 65536.0 * 1.0e-10;

/// libvmaf 3.2.0 `integer_vif.h`: `DEFAULT_VIF_ENHN_GAIN_LIMIT` (also the option's maximum; its
/// minimum is 1.0, which disables enhancement gain).
pub const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;

/// Parameters of the VIF feature (libvmaf's `vif` extractor options that change scores).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VifParams {
    /// libvmaf's `vif_enhn_gain_limit` (alias `egl`): upper limit of the gain `g`; 1.0 to 100.0.
    pub enhn_gain_limit: f64,
}

impl Default for VifParams {
    fn default() -> Self {
        VifParams {
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
        }
    }
}

impl VifParams {
    /// Refuse values libvmaf's option parser refuses (`vif_enhn_gain_limit` outside 1.0..=100.0).
    pub fn validate(&self) -> Result<()> {
        let g = self.enhn_gain_limit;
        if (1.0..=DEFAULT_ENHN_GAIN_LIMIT).contains(&g) {
            Ok(())
        } else {
            Err(Error::Model(format!(
                "vif_enhn_gain_limit {g} is outside libvmaf's range 1.0 to 100.0"
            )))
        }
    }
}

/// The integer sums of one scale: libvmaf's `VifResiduals` (`accum_num_log`, `accum_den_log`,
/// `accum_num_non_log`, `accum_den_non_log`).
///
/// Bounds at 15360x8640 (132 710 400 pixels at scale 0, fewer above), any depth up to 16 bits,
/// any content, `enhn_gain_limit` in 1..=100; the per-pixel figures are in [`bounds`], and
/// `tests::accumulator_bounds` checks them on worst-case content and that the totals fit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VifScaleAccum {
    /// Sum over "log" pixels with `sigma12 > 0 && sigma2_sq > 0` of
    /// `log2_64(g^2 sigma1_sq + sv_sq + 2^17) - log2_64(sv_sq + 2^17)` (Q11 base-2 logs).
    /// Each term is in `0..=bounds::NUM_LOG_PER_PIXEL` (57 344). Total in `0..=7.62e12`
    /// (i64 max 9.2e18).
    pub num_log: i64,
    /// Sum over "log" pixels (`sigma1_sq >= 2^17`) of `log2_32(sigma1_sq + 2^17) - 17 * 2048`.
    /// Each term is in `2048..=bounds::DEN_LOG_PER_PIXEL` (26 627). Total in `0..=3.54e12`.
    pub den_log: i64,
    /// Sum over "non-log" pixels (`sigma1_sq < 2^17`) of `max(sigma2_sq, 0)` (the Q16 variance
    /// of the distorted image, normalised to 8 bits). Each term is in
    /// `0..=bounds::SIGMA_SQ_MAX` (2^30 + 2^20). Total in `0..=1.43e17` (i64 max 9.2e18).
    pub num_non_log: i64,
    /// Number of "non-log" pixels: `0..=132 710 400`.
    pub den_non_log: i64,
}

/// The four scales of VIF.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VifAccum {
    pub scales: [VifScaleAccum; 4],
}

/// Per-pixel bounds of the accumulator terms (see [`VifScaleAccum`]).
pub mod bounds {
    /// Pixels of a 15360x8640 frame (the largest frame the bounds are written for).
    pub const PIXELS_16K: i64 = 15360 * 8640;
    /// Upper bound of `sigma1_sq`, `sigma2_sq` (Q16 variances normalised to 8 bits): a variance
    /// of samples in `0..=M` is at most `M^2 / 4`, which is below 2^30 in these units at every
    /// depth and scale (`65536 * 255^2 / 4` for 8-bit scale 0, `65535^2 / 4` elsewhere); the
    /// fixed-point rounding adds a few units, far below the 2^20 margin.
    pub const SIGMA_SQ_MAX: i64 = (1 << 30) + (1 << 20);
    /// Upper bound of one `accum_den_log` term: `log2_32(2^17 + SIGMA_SQ_MAX) - 2048 * 17`
    /// (`log2_32` is non-decreasing).
    pub const DEN_LOG_PER_PIXEL: i64 = 26_627;
    /// Upper bound of one `accum_num_log` term. The gain is limited to `g <= 100`, so
    /// `g^2 sigma1_sq <= 10^4 * SIGMA_SQ_MAX < 2^44` and the numerator is below 2^45: its
    /// `log2_64` is at most `32768 + 2048 * 29` (table maximum, shift 29); the denominator's
    /// is at least `2048 * 17`.
    pub const NUM_LOG_PER_PIXEL: i64 = 32768 + 2048 * 29 - 2048 * 17;
}

/// The base-2 log table libvmaf's `log_generate()` fills: entry `i` (32767..=65535) is
/// `(uint16_t)round(log2f((float)i) * 2048)`; every other entry is 0 (libvmaf zero-allocates the
/// state). Built once; a GPU backend uploads it.
///
/// libvmaf calls the C library's `log2f`. This table takes `log2` in double and rounds it to
/// float, which is `log2f` correctly rounded; glibc's `log2f` differs from that on 5 inputs of
/// the range, none of which changes a table entry (`tests::log2_table_matches_log2f` checks this
/// against the platform's `f32::log2`, which is glibc's `log2f` on Linux).
pub fn log2_table() -> &'static [u16; 65537] {
    static TABLE: OnceLock<Box<[u16; 65537]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Box<[u16; 65537]> = vec![0u16; 65537]
            .into_boxed_slice()
            .try_into()
            .expect("65537 entries");
        for (i, e) in t.iter_mut().enumerate().take(65536).skip(32767) {
            let l = (i as f64).log2() as f32;
            *e = ((l * 2048.0) as f64).round() as u16;
        }
        t
    })
}

/// libvmaf 3.2.0 `integer_vif.h`: `log2_32()`: Q11 base-2 log of `temp` from its 16 leading
/// bits. `temp` must be at least 2^15 (always 2^18 or more here).
#[inline(always)]
fn log2_32(table: &[u16; 65537], temp: u32) -> i32 {
    let k = 16 - temp.leading_zeros() as i32;
    debug_assert!(k >= 0);
    let idx = (temp >> k) & 0xffff;
    table[idx as usize] as i32 + 2048 * k
}

/// libvmaf 3.2.0 `integer_vif.h`: `log2_64()`: as [`log2_32`] for 64-bit values (>= 2^17).
#[inline(always)]
fn log2_64(table: &[u16; 65537], temp: u64) -> i32 {
    let k = 48 - temp.leading_zeros() as i32;
    debug_assert!(k >= 0);
    let idx = (temp >> k) & 0xffff;
    table[idx as usize] as i32 + 2048 * k
}

/// Mirror an index into `0..n` the way libvmaf pads (`-k -> k`, `n - 1 + k -> n - 1 - k`).
#[inline(always)]
fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let m = if i < 0 {
        -i
    } else if i >= n {
        2 * (n - 1) - i
    } else {
        i
    };
    m as usize
}

/// A read-only image of one scale: `w x h` samples, rows `stride` apart.
#[derive(Clone, Copy)]
struct Img<'a> {
    data: &'a [u16],
    w: usize,
    h: usize,
    stride: usize,
}

impl<'a> Img<'a> {
    fn of(p: &Plane<'a>) -> Img<'a> {
        Img {
            data: p.data,
            w: p.width,
            h: p.height,
            stride: p.stride,
        }
    }

    fn compact(data: &'a [u16], w: usize, h: usize) -> Img<'a> {
        Img {
            data,
            w,
            h,
            stride: w,
        }
    }

    #[inline(always)]
    fn row(&self, y: usize) -> &'a [u16] {
        &self.data[y * self.stride..y * self.stride + self.w]
    }

    /// The `FW` rows around row `i` (mirrored at the top and bottom edges).
    #[inline(always)]
    fn taps<const FW: usize>(&self, i: usize) -> [&'a [u16]; FW] {
        let half = (FW / 2) as isize;
        std::array::from_fn(|k| self.row(mirror(i as isize - half + k as isize, self.h)))
    }
}

/// Rounding shift `(x + round) >> shift` of libvmaf's vertical passes.
#[derive(Clone, Copy)]
struct Shift {
    round: u64,
    shift: u32,
}

impl Shift {
    fn new(shift: u32) -> Shift {
        Shift {
            round: if shift == 0 { 0 } else { 1 << (shift - 1) },
            shift,
        }
    }
}

/// Which vertical pass a statistic runs.
#[derive(Clone, Copy)]
enum Vertical {
    /// `vif_statistic_8` (8-bit content, scale 0).
    Eight,
    /// `vif_statistic_16` with its `mu` and square rounding shifts.
    Sixteen { mu: Shift, sq: Shift },
}

/// Mirrored columns kept on each side of a vertical-pass row (half of the widest filter).
const PAD: usize = 8;

/// Scratch rows of one call, allocated once for the widest scale (scale 0).
///
/// The eight per-row quantities, in this order in `v` and `h`: `mu1`, `mu2` (the filtered
/// means), then `xx`, `yy`, `xy` (the filtered products), each split into 16-bit halves
/// (`value = hi * 65536 + lo`, `hi` first) so that every horizontal filter sum of a half fits in
/// 32 bits (`<= 65536 * 65535`) and the row loops run on 32-bit lanes.
struct Scratch {
    /// Vertical-pass outputs (libvmaf's `buf.tmp.*`), `PAD + w + PAD` long, data at `PAD..`.
    v: [Vec<u32>; 8],
    /// Horizontal sums (`w` long).
    h: [Vec<u32>; 8],
    /// Per-pixel `sigma1_sq`, `max(sigma2_sq, 0)`, `sigma12` of one row.
    s1: Vec<i32>,
    s2: Vec<i32>,
    s12: Vec<i32>,
    /// `numer1` and `g * g * sigma1_sq` of the pixels of a row that take the gain path.
    numer1: Vec<u32>,
    prod: Vec<f64>,
    /// AVX2 and AVX-512 kernels: the last rows of per-sample quantities (see `avx2::statistic`
    /// and `fused_statistic`), their interleaved pairs, and the vertical-pass rows as offset
    /// `i16` (sized on first use).
    #[cfg(target_arch = "x86_64")]
    ring: Vec<i16>,
    #[cfg(target_arch = "x86_64")]
    pairs: Vec<i16>,
    #[cfg(target_arch = "x86_64")]
    vs: Vec<i32>,
    #[cfg(target_arch = "x86_64")]
    hs: [Vec<i32>; 8],
    #[cfg(target_arch = "x86_64")]
    vh: [Vec<i16>; 8],
    /// AVX-512 kernel: the vertical-pass rows of the output rows that share a pass.
    #[cfg(target_arch = "x86_64")]
    vg: [[Vec<i16>; 8]; avx2::G],
}

impl Scratch {
    fn new(w: usize) -> Scratch {
        Scratch {
            v: std::array::from_fn(|_| vec![0; w + 2 * PAD]),
            h: std::array::from_fn(|_| vec![0; w]),
            s1: vec![0; w],
            s2: vec![0; w],
            s12: vec![0; w],
            numer1: vec![0; w],
            prod: vec![0.0; w],
            #[cfg(target_arch = "x86_64")]
            ring: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            pairs: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            vs: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            hs: Default::default(),
            #[cfg(target_arch = "x86_64")]
            vh: Default::default(),
            #[cfg(target_arch = "x86_64")]
            vg: Default::default(),
        }
    }
}

/// Fill `half` mirrored columns on each side of `row[PAD..PAD + w]` (libvmaf's
/// `PADDING_SQ_DATA`: `-f -> f`, `w - 1 + f -> w - 1 - f`).
#[inline(always)]
fn pad_row(row: &mut [u32], w: usize, half: usize) {
    for f in 1..=half {
        row[PAD - f] = row[PAD + f];
        row[PAD + w - 1 + f] = row[PAD + w - 1 - f];
    }
}

/// Run `block::<CH>(j0)` over `0..w` in blocks of `CH` columns, then `block::<1>` over the
/// remaining columns. The blocks keep their sums in registers (`[u32; CH]` arrays the compiler
/// turns into vectors).
macro_rules! blocks {
    ($w:expr, $ch:literal, |$j0:ident, $n:ident| $body:expr) => {{
        let w = $w;
        let mut start = 0;
        while start + $ch <= w {
            {
                let $j0 = start;
                const $n: usize = $ch;
                $body;
            }
            start += $ch;
        }
        while start < w {
            {
                let $j0 = start;
                const $n: usize = 1;
                $body;
            }
            start += 1;
        }
    }};
}

/// `CH` samples of `row` from `j0`, widened.
#[inline(always)]
fn load<const CH: usize>(row: &[u16], j0: usize) -> [u32; CH] {
    let a: &[u16; CH] = row[j0..j0 + CH].try_into().unwrap();
    a.map(|x| x as u32)
}

/// `CH` values of `row` from `j0`.
#[inline(always)]
fn load32<const CH: usize>(row: &[u32], j0: usize) -> [u32; CH] {
    *<&[u32; CH]>::try_from(&row[j0..j0 + CH]).unwrap()
}

/// Store `x` at `row[j0..]`.
#[inline(always)]
fn store<const CH: usize>(row: &mut [u32], j0: usize, x: [u32; CH]) {
    row[j0..j0 + CH].copy_from_slice(&x);
}

/// `sum_k f[k] * rows[k][j]` for `CH` columns from `j0` (a vertical filter of samples <=
/// 65535), folded on the filter's symmetry. Bound: `<= 65536 * 65535 < 2^32` (filters sum to
/// 65536); a folded term `f[k] * (a + b) <= 16004 * 131070 < 2^32` (16004 is the largest
/// off-centre tap of any filter).
#[inline(always)]
fn vsum<const FW: usize, const CH: usize>(
    f: &[u16; FW],
    rows: &[&[u16]; FW],
    j0: usize,
) -> [u32; CH] {
    let half = FW / 2;
    let c = f[half] as u32;
    let mut acc = load::<CH>(rows[half], j0).map(|a| c * a);
    for k in 0..half {
        let c = f[k] as u32;
        let (a0, a1) = (load::<CH>(rows[k], j0), load::<CH>(rows[FW - 1 - k], j0));
        for l in 0..CH {
            acc[l] += c * (a0[l] + a1[l]);
        }
    }
    acc
}

/// `out[j] = sum_k f[k] * p[j + k]` over a padded row of values <= 65535 (`p.len() >= w + FW -
/// 1`), folded on the symmetry. Same bounds as [`vsum`].
#[inline(always)]
fn hsum<const FW: usize>(f: &[u16; FW], p: &[u32], out: &mut [u32]) {
    let half = FW / 2;
    blocks!(out.len(), 32, |j0, CH| {
        let c = f[half] as u32;
        let mut acc = load32::<CH>(p, j0 + half).map(|a| c * a);
        for k in 0..half {
            let c = f[k] as u32;
            let (a0, a1) = (load32::<CH>(p, j0 + k), load32::<CH>(p, j0 + FW - 1 - k));
            for l in 0..CH {
                acc[l] += c * (a0[l] + a1[l]);
            }
        }
        store(out, j0, acc)
    });
}

/// Vertical pass of `vif_statistic_8` (8-bit samples, scale 0) for one row: libvmaf's 32-bit
/// sums (`mu <= 65536 * 255`, squares `<= 65536 * 255^2 < 2^32`; a folded square term
/// `f[k] * (a0^2 + a1^2) <= 7455 * 130050 < 2^32`), `mu` rounded by `+ 128 >> 8`, squares kept
/// whole (then split into halves).
#[inline(always)]
fn vertical_8<const FW: usize>(
    f: &[u16; FW],
    ra: &[&[u16]; FW],
    da: &[&[u16]; FW],
    w: usize,
    s: &mut Scratch,
) {
    let half = FW / 2;
    let [vm1, vm2, vxxh, vxxl, vyyh, vyyl, vxyh, vxyl] = &mut s.v;
    blocks!(w, 16, |j0, CH| {
        let c = f[half] as u32;
        let (a, b) = (load::<CH>(ra[half], j0), load::<CH>(da[half], j0));
        let mut m1 = a.map(|a| c * a);
        let mut m2 = b.map(|b| c * b);
        let mut xx = a.map(|a| c * (a * a));
        let mut yy = b.map(|b| c * (b * b));
        let mut xy = [0u32; CH];
        for l in 0..CH {
            xy[l] = c * (a[l] * b[l]);
        }
        for k in 0..half {
            let c = f[k] as u32;
            let (a0, a1) = (load::<CH>(ra[k], j0), load::<CH>(ra[FW - 1 - k], j0));
            let (b0, b1) = (load::<CH>(da[k], j0), load::<CH>(da[FW - 1 - k], j0));
            for l in 0..CH {
                let (a0, a1, b0, b1) = (a0[l], a1[l], b0[l], b1[l]);
                m1[l] += c * (a0 + a1);
                m2[l] += c * (b0 + b1);
                xx[l] += c * (a0 * a0 + a1 * a1);
                yy[l] += c * (b0 * b0 + b1 * b1);
                xy[l] += c * (a0 * b0 + a1 * b1);
            }
        }
        let o = PAD + j0;
        store(vm1, o, m1.map(|m| (m + 128) >> 8));
        store(vm2, o, m2.map(|m| (m + 128) >> 8));
        store(vxxh, o, xx.map(|x| x >> 16));
        store(vxxl, o, xx.map(|x| x & 0xffff));
        store(vyyh, o, yy.map(|x| x >> 16));
        store(vyyl, o, yy.map(|x| x & 0xffff));
        store(vxyh, o, xy.map(|x| x >> 16));
        store(vxyl, o, xy.map(|x| x & 0xffff))
    });
}

/// Vertical pass of `vif_statistic_16` for one row. libvmaf sums `mu` in 32 bits (`<= 65536 *
/// 65535`) and the squares in 64 bits (`<= 65536 * 65535^2 < 2^48`); here each product
/// (`<= 65535^2 < 2^32`) is split into 16-bit halves summed in 32 bits (bounds as [`vsum`]),
/// recombined exactly in 64 bits before libvmaf's rounding shift. Outputs are cast as libvmaf
/// casts them (`mu` to 16 bits, squares to 32; neither loses anything: `mu <= 65535`, squares
/// `<= 65535^2`).
#[inline(always)]
fn vertical_16<const FW: usize>(
    f: &[u16; FW],
    ra: &[&[u16]; FW],
    da: &[&[u16]; FW],
    w: usize,
    mu: Shift,
    sq: Shift,
    s: &mut Scratch,
) {
    let half = FW / 2;
    let (mr, ms) = (mu.round as u32, mu.shift);
    let (sr, ss) = (sq.round, sq.shift);
    let [vm1, vm2, vxxh, vxxl, vyyh, vyyl, vxyh, vxyl] = &mut s.v;
    blocks!(w, 8, |j0, CH| {
        let m1 = vsum::<FW, CH>(f, ra, j0);
        let m2 = vsum::<FW, CH>(f, da, j0);
        let c = f[half] as u32;
        let (a, b) = (load::<CH>(ra[half], j0), load::<CH>(da[half], j0));
        let (mut xxh, mut xxl, mut yyh, mut yyl, mut xyh, mut xyl) = (
            [0u32; CH], [0u32; CH], [0u32; CH], [0u32; CH], [0u32; CH], [0u32; CH],
        );
        for l in 0..CH {
            let (pa, pb, pab) = (a[l] * a[l], b[l] * b[l], a[l] * b[l]);
            (xxh[l], xxl[l]) = (c * (pa >> 16), c * (pa & 0xffff));
            (yyh[l], yyl[l]) = (c * (pb >> 16), c * (pb & 0xffff));
            (xyh[l], xyl[l]) = (c * (pab >> 16), c * (pab & 0xffff));
        }
        for k in 0..half {
            let c = f[k] as u32;
            let (a0, a1) = (load::<CH>(ra[k], j0), load::<CH>(ra[FW - 1 - k], j0));
            let (b0, b1) = (load::<CH>(da[k], j0), load::<CH>(da[FW - 1 - k], j0));
            for l in 0..CH {
                let (a0, a1, b0, b1) = (a0[l], a1[l], b0[l], b1[l]);
                let (p0, p1) = (a0 * a0, a1 * a1);
                xxh[l] += c * ((p0 >> 16) + (p1 >> 16));
                xxl[l] += c * ((p0 & 0xffff) + (p1 & 0xffff));
                let (p0, p1) = (b0 * b0, b1 * b1);
                yyh[l] += c * ((p0 >> 16) + (p1 >> 16));
                yyl[l] += c * ((p0 & 0xffff) + (p1 & 0xffff));
                let (p0, p1) = (a0 * b0, a1 * b1);
                xyh[l] += c * ((p0 >> 16) + (p1 >> 16));
                xyl[l] += c * ((p0 & 0xffff) + (p1 & 0xffff));
            }
        }
        let o = PAD + j0;
        // m + round <= 65536 * 65535 + 32768 < 2^32.
        store(vm1, o, m1.map(|m| ((m + mr) >> ms) as u16 as u32));
        store(vm2, o, m2.map(|m| ((m + mr) >> ms) as u16 as u32));
        // (uint32_t)((accum + round) >> shift) of the recombined 64-bit sum, split again.
        for (h, l, vh, vl) in [
            (xxh, xxl, &mut *vxxh, &mut *vxxl),
            (yyh, yyl, &mut *vyyh, &mut *vyyl),
            (xyh, xyl, &mut *vxyh, &mut *vxyl),
        ] {
            let mut x = [0u32; CH];
            for q in 0..CH {
                x[q] = ((((h[q] as u64) << 16) + l[q] as u64 + sr) >> ss) as u32;
            }
            store(vh, o, x.map(|x| x >> 16));
            store(vl, o, x.map(|x| x & 0xffff));
        }
    });
}

/// Horizontal pass shared by both statistics (mirror the row ends, filter), then the sigmas of
/// each pixel of the row.
#[inline(always)]
fn horizontal<const FW: usize>(f: &[u16; FW], w: usize, s: &mut Scratch) {
    let half = FW / 2;
    let base = PAD - half;
    for (v, h) in s.v.iter_mut().zip(s.h.iter_mut()) {
        pad_row(v, w, half);
        hsum(f, &v[base..base + w + FW - 1], &mut h[..w]);
    }
    let [m1, m2, xxh, xxl, yyh, yyl, xyh, xyl] = &s.h;
    let (m1, m2) = (&m1[..w], &m2[..w]);
    let (xxh, xxl, yyh, yyl) = (&xxh[..w], &xxl[..w], &yyh[..w], &yyl[..w]);
    let (xyh, xyl) = (&xyh[..w], &xyl[..w]);
    let (s1, s2, s12) = (&mut s.s1[..w], &mut s.s2[..w], &mut s.s12[..w]);
    for j in 0..w {
        let (mu1, mu2) = (m1[j] as u64, m2[j] as u64);
        // mu <= 65536 * 65535, so mu^2 + 2^31 < 2^64.
        let mu1_sq = ((mu1 * mu1 + 2147483648) >> 32) as u32;
        let mu2_sq = ((mu2 * mu2 + 2147483648) >> 32) as u32;
        let mu1_mu2 = ((mu1 * mu2 + 2147483648) >> 32) as u32;
        // libvmaf: (uint32_t)((accum + 32768) >> 16) with accum = hi * 65536 + lo (64 bits);
        // lo + 32768 <= 65536 * 65535 + 32768 < 2^32; the wrapping add is libvmaf's cast.
        let xx_filt = xxh[j].wrapping_add((xxl[j] + 32768) >> 16);
        let yy_filt = yyh[j].wrapping_add((yyl[j] + 32768) >> 16);
        let xy_filt = xyh[j].wrapping_add((xyl[j] + 32768) >> 16);
        // libvmaf: (int32_t)(u32 - u32), wrapping.
        s1[j] = xx_filt.wrapping_sub(mu1_sq) as i32;
        s2[j] = (yy_filt.wrapping_sub(mu2_sq) as i32).max(0);
        s12[j] = xy_filt.wrapping_sub(mu1_mu2) as i32;
    }
}

/// The per-pixel part of `vif_statistic_8/_16` for one row of sigmas.
///
/// libvmaf branches per pixel; here a first, branch-free pass sums the "non-log" terms and
/// `accum_den_log` and packs the sigmas of the pixels that take the gain path
/// (`sigma1_sq >= sigma_nsq`, `sigma12 > 0`, `sigma2_sq > 0`) to the front of `s`; a second pass
/// does libvmaf's double arithmetic on those (vectorisable: no integer conversion wider than 32
/// bits), a third the 64-bit conversion and the logs. The sums are the same integers.
#[inline(always)]
fn accumulate_row(
    w: usize,
    s: &mut Scratch,
    egl: f64,
    table: &[u16; 65537],
    acc: &mut VifScaleAccum,
) {
    let (s1, s2, s12) = (&mut s.s1[..w], &mut s.s2[..w], &mut s.s12[..w]);
    let (mut num_log, mut den_log, mut num_non_log, mut den_non_log) = (0i64, 0i64, 0i64, 0i64);
    let mut n = 0;
    for j in 0..w {
        let (sigma1_sq, sigma2_sq, sigma12) = (s1[j], s2[j], s12[j]);
        let log = sigma1_sq >= SIGMA_NSQ;
        // The log of a pixel outside the log branch is taken of 2^17 + 2^17 and discarded.
        let arg = (SIGMA_NSQ + if log { sigma1_sq } else { SIGMA_NSQ }) as u32;
        let d = (log2_32(table, arg) - 2048 * 17) as i64;
        den_log += if log { d } else { 0 };
        num_non_log += if log { 0 } else { sigma2_sq as i64 };
        den_non_log += !log as i64;
        // Pack (n <= j: this overwrites entries already read).
        (s1[n], s2[n], s12[n]) = (sigma1_sq, sigma2_sq, sigma12);
        n += (log & (sigma12 > 0) & (sigma2_sq > 0)) as usize;
    }
    let (s1, s2, s12) = (&s1[..n], &s2[..n], &s12[..n]);
    let (numer1, prod) = (&mut s.numer1[..n], &mut s.prod[..n]);
    for j in 0..n {
        let (sigma1_sq, sigma2_sq, sigma12) = (s1[j], s2[j], s12[j]);
        // libvmaf: double g = sigma12 / (sigma1_sq + eps);
        let g = sigma12 as f64 / (sigma1_sq as f64 + GAIN_EPS);
        // int32_t sv_sq = sigma2_sq - g * sigma12;  (truncation toward zero; in range, as
        // 0 <= g * sigma12 and sigma2_sq < 2^31)
        let sv_sq = (sigma2_sq as f64 - g * sigma12 as f64) as i32;
        let sv_sq = sv_sq.max(0);
        // g = MIN(g, vif_enhn_gain_limit);
        let g = if g < egl { g } else { egl };
        // uint32_t numer1 = (sv_sq + sigma_nsq);
        numer1[j] = (sv_sq + SIGMA_NSQ) as u32;
        prod[j] = g * g * sigma1_sq as f64;
    }
    for j in 0..n {
        // int64_t numer1_tmp = (int64_t)((g * g * sigma1_sq)) + numer1;
        let numer1_tmp = prod[j] as i64 + numer1[j] as i64;
        num_log += (log2_64(table, numer1_tmp as u64) - log2_64(table, numer1[j] as u64)) as i64;
    }
    acc.num_log += num_log;
    acc.den_log += den_log;
    acc.num_non_log += num_non_log;
    acc.den_non_log += den_non_log;
}

/// One scale's statistic (`vif_statistic_8` or `vif_statistic_16`).
#[inline(always)]
fn statistic<const FW: usize>(
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Vertical,
    egl: f64,
    s: &mut Scratch,
) -> VifScaleAccum {
    let table = log2_table();
    let mut acc = VifScaleAccum::default();
    let w = r.w;
    for i in 0..r.h {
        let rr = r.taps::<FW>(i);
        let dr = d.taps::<FW>(i);
        match v {
            Vertical::Eight => vertical_8(f, &rr, &dr, w, s),
            Vertical::Sixteen { mu, sq } => vertical_16(f, &rr, &dr, w, mu, sq, s),
        }
        horizontal(f, w, s);
        accumulate_row(w, s, egl, table, &mut acc);
    }
    acc
}

/// `subsample_rd_8` / `subsample_rd_16`: filter `f` over `r` and `d` (vertical sums rounded by
/// `v` and cast to 16 bits, horizontal by `+ 32768 >> 16`), keep even rows and columns into
/// `out_r` / `out_d` (`w / 2 x h / 2`, compact). Only the kept rows are filtered.
#[inline(always)]
fn subsample<const FW: usize>(
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Shift,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    let (w, h) = (r.w, r.h);
    let (ow, oh) = (w / 2, h / 2);
    let half = FW / 2;
    let base = PAD - half;
    let (vr, vs) = (v.round as u32, v.shift);
    for oi in 0..oh {
        let i = 2 * oi;
        let [v_r, v_d, ..] = &mut s.v;
        let [h_r, h_d, ..] = &mut s.h;
        for (img, vv, hh) in [(r, v_r, h_r), (d, v_d, h_d)] {
            let rows = img.taps::<FW>(i);
            blocks!(w, 16, |j0, CH| {
                // subsample_rd_16 casts to uint16_t, subsample_rd_8 does not; the value fits
                // either way (<= 65535).
                let t = vsum::<FW, CH>(f, &rows, j0);
                store(vv, PAD + j0, t.map(|t| ((t + vr) >> vs) as u16 as u32))
            });
            pad_row(vv, w, half);
            hsum(f, &vv[base..base + w + FW - 1], &mut hh[..w]);
        }
        let (hr, hd) = (&s.h[0][..w], &s.h[1][..w]);
        let orow_r = &mut out_r[oi * ow..oi * ow + ow];
        let orow_d = &mut out_d[oi * ow..oi * ow + ow];
        for oj in 0..ow {
            orow_r[oj] = ((hr[2 * oj] + 32768) >> 16) as u16;
            orow_d[oj] = ((hd[2 * oj] + 32768) >> 16) as u16;
        }
    }
}

/// [`statistic`], or its AVX2 kernel when `fast` and the scale suits it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn statistic_any<const FW: usize>(
    fast: bool,
    wide: bool,
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Vertical,
    egl: f64,
    s: &mut Scratch,
) -> VifScaleAccum {
    #[cfg(target_arch = "x86_64")]
    if fast && avx2::fits(f, r.w) {
        // SAFETY: `fast` is true only in compute_avx2, which runs only on CPUs with AVX2, BMI1,
        // BMI2 and LZCNT (Isa::Avx2), the features avx2::statistic requires.
        return unsafe { avx2::statistic(f, r, d, v, egl, s, wide) };
    }
    let _ = (fast, wide);
    statistic(f, r, d, v, egl, s)
}

/// [`subsample`], or its AVX2 kernel when `fast` and the scale suits it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn subsample_any<const FW: usize>(
    fast: bool,
    wide: bool,
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Shift,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    #[cfg(target_arch = "x86_64")]
    if fast && avx2::fits(f, r.w) {
        // SAFETY: as in statistic_any (avx2::subsample requires AVX2 only).
        return unsafe { avx2::subsample(f, r, d, v, s, out_r, out_d, wide) };
    }
    let _ = (fast, wide);
    subsample(f, r, d, v, s, out_r, out_d)
}

/// Explicit AVX2 kernels of the statistic and the subsampling (filters whose taps all fit in
/// `i16`: scale 0 to 2; scale 3's centre tap 43728 does not, and that scale is tiny).
///
/// # How the sums are formed
/// Every filtered quantity is a sum `S = sum_k c[k] * x[k]` of 16-bit taps `c[k] <= 32767` and
/// 16-bit values `x[k] <= 65535` with `S < 2^32` (the filters sum to 65536). The values are
/// stored offset by `-32768` as `i16` and multiplied pairwise with `vpmaddwd` (two taps per
/// 32-bit lane): `S' = sum_k c[k] * (x[k] - 32768) = S - 32768 * 65536`. Each partial sum of
/// `S'` stays inside `i32` (`|S'| <= 32768 * 65536 = 2^31`, at most `2^31 - 1` upward since every
/// `x - 32768 <= 32767`; a partial sum is bounded by the same figure because its taps are a subset
/// of non-negative taps), and `S = S' + 2^31` is then recovered exactly in wrapping 32-bit
/// arithmetic. The squares are split into 16-bit halves exactly as in the portable code (8-bit
/// content: `a * a <= 65025` is kept whole in the vertical pass).
///
/// Vertical pass: rows `k` and `k + 1` are interleaved (`vpunpck{l,h}wd`) and each pair of taps
/// is one `vpmaddwd`; the in-lane order that the interleave creates is undone by the pack
/// (`vpackssdw`) that stores the results. Horizontal pass: a load at column `j - half + 2t` holds
/// the pairs `(x[j + 2m - half + 2t], x[j + 2m - half + 2t + 1])`, so nine `vpmaddwd` give the 17-tap
/// sums of the even output columns and nine more (from one column further) those of the odd
/// columns. The order of the pixels of a row does not matter to the per-row sums, so the
/// sigmas are stored even columns first.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{
        GAIN_EPS, Img, PAD, SIGMA_NSQ, Scratch, Shift, Vertical, VifScaleAccum, log2_table,
    };

    /// Columns of one vector block (16 `i16` lanes).
    const B: usize = 16;

    /// Output rows that share one vertical pass in the AVX-512 kernel (`i, i + 2, ...`).
    pub(super) const G: usize = 4;

    /// Whether the kernels take a scale: every tap of `f` fits in `i16` and the image is at least
    /// one block wide.
    pub(super) fn fits(f: &[u16], w: usize) -> bool {
        w >= B && f.iter().all(|&c| c <= i16::MAX as u16)
    }

    /// 16 `i16` from `s[i..]`.
    ///
    /// # Safety
    /// The CPU must have AVX (all callers are AVX2 functions).
    #[inline(always)]
    unsafe fn ld(s: &[i16], i: usize) -> __m256i {
        let s = &s[i..i + B];
        // SAFETY: `s` is 32 readable bytes; loadu needs no alignment; AVX per the contract.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    /// 16 `u16` from `s[i..]`.
    ///
    /// # Safety
    /// As [`ld`].
    #[inline(always)]
    unsafe fn ldu(s: &[u16], i: usize) -> __m256i {
        let s = &s[i..i + B];
        // SAFETY: as in `ld`.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    /// Store 16 `i16` at `s[i..]`.
    ///
    /// # Safety
    /// As [`ld`].
    #[inline(always)]
    unsafe fn st(s: &mut [i16], i: usize, x: __m256i) {
        let s = &mut s[i..i + B];
        // SAFETY: `s` is 32 writable bytes; storeu needs no alignment; AVX per the contract.
        unsafe { _mm256_storeu_si256(s.as_mut_ptr().cast(), x) }
    }

    /// Store 8 `i32` at `s[i..]`.
    ///
    /// # Safety
    /// As [`ld`].
    #[inline(always)]
    unsafe fn st32(s: &mut [i32], i: usize, x: __m256i) {
        let s = &mut s[i..i + 8];
        // SAFETY: as in `st`.
        unsafe { _mm256_storeu_si256(s.as_mut_ptr().cast(), x) }
    }

    /// Store 8 `u16` at `s[i..]`.
    ///
    /// # Safety
    /// As [`ld`].
    #[inline(always)]
    unsafe fn st16x8(s: &mut [u16], i: usize, x: __m128i) {
        let s = &mut s[i..i + 8];
        // SAFETY: `s` is 16 writable bytes; storeu needs no alignment; SSE2 is baseline.
        unsafe { _mm_storeu_si128(s.as_mut_ptr().cast(), x) }
    }

    /// The tap pairs `(f[2t], f[2t + 1])` of a filter (`f[FW]` = 0), one pair per 32-bit lane.
    #[target_feature(enable = "avx2")]
    fn pairs<const FW: usize>(f: &[u16; FW]) -> [__m256i; 9] {
        let mut p = [_mm256_setzero_si256(); 9];
        for (t, p) in p.iter_mut().enumerate().take(FW / 2 + 1) {
            let lo = f[2 * t] as u32;
            let hi = if 2 * t + 1 < FW {
                f[2 * t + 1] as u32
            } else {
                0
            };
            *p = _mm256_set1_epi32((lo | hi << 16) as i32);
        }
        p
    }

    /// The vertical sums `S'` of one quantity over the rows `rows` (in `ring` at `q`) for one
    /// block, as (low, high) interleave halves.
    #[target_feature(enable = "avx2")]
    fn vpass<const FW: usize>(
        ring: &[i16],
        rows: &[usize; FW],
        q: usize,
        j: usize,
        cp: &[__m256i; 9],
    ) -> (__m256i, __m256i) {
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for t in 0..FW / 2 + 1 {
            // SAFETY (both loads): AVX2 is enabled in this function.
            let x = unsafe { ld(ring, rows[2 * t] + q + j) };
            // The second row of the last pair has tap 0: any row will do.
            let y = if 2 * t + 1 < FW {
                unsafe { ld(ring, rows[2 * t + 1] + q + j) }
            } else {
                x
            };
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x, y), cp[t]));
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x, y), cp[t]));
        }
        (lo, hi)
    }

    /// [`vpass`] for a row whose filter window is inside the image: the tap pairs `(k, k + 1)`
    /// come pre-interleaved from `pairs` (`pair[t]`: the offset of the pair rows of tap `2t`, at
    /// block `b`), the last tap alone from `ring` (`last`: its row).
    #[target_feature(enable = "avx2")]
    fn vpass_pairs<const FW: usize>(
        pairs: &[i16],
        pair: &[usize; 8],
        ring: &[i16],
        last: usize,
        j: usize,
        cp: &[__m256i; 9],
    ) -> (__m256i, __m256i) {
        let half = FW / 2;
        // SAFETY (loads): AVX2 is enabled in this function.
        let x = unsafe { ld(ring, last + j) };
        let mut lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(x, x), cp[half]);
        let mut hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(x, x), cp[half]);
        for t in 0..half {
            let (a, b) = unsafe { (ld(pairs, pair[t]), ld(pairs, pair[t] + B)) };
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(a, cp[t]));
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(b, cp[t]));
        }
        (lo, hi)
    }

    /// The horizontal sums `S` (no longer offset) of the even and odd output columns `j0 ..
    /// j0 + 16` of a padded row, from a pointer `p` to its column `j0 - half` (no bounds checks).
    ///
    /// # Safety
    /// `p .. p + FW + 16` (`i16`s) must be readable.
    #[target_feature(enable = "avx2")]
    unsafe fn hpass_at<const FW: usize>(p: *const i16, cp: &[__m256i; 9]) -> (__m256i, __m256i) {
        let bias = _mm256_set1_epi32(i32::MIN);
        let (mut e, mut o) = (bias, bias);
        for t in 0..FW / 2 + 1 {
            // SAFETY: p + 2t + 1 + 15 <= p + FW + 15 (2t <= FW - 1): readable per the contract.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_si256(p.add(2 * t).cast()),
                    _mm256_loadu_si256(p.add(2 * t + 1).cast()),
                )
            };
            e = _mm256_add_epi32(e, _mm256_madd_epi16(x, cp[t]));
            o = _mm256_add_epi32(o, _mm256_madd_epi16(y, cp[t]));
        }
        (e, o)
    }

    /// The even columns of [`hpass_at`] (bounds-checked).
    #[target_feature(enable = "avx2")]
    fn hpass_even<const FW: usize>(row: &[i16], j0: usize, cp: &[__m256i; 9]) -> __m256i {
        let base = PAD + j0 - FW / 2;
        let mut e = _mm256_set1_epi32(i32::MIN);
        for t in 0..FW / 2 + 1 {
            // SAFETY: AVX2 is enabled in this function.
            let x = unsafe { ld(row, base + 2 * t) };
            e = _mm256_add_epi32(e, _mm256_madd_epi16(x, cp[t]));
        }
        e
    }

    /// `(a * b + 2^31) >> 32` per 32-bit lane (`a, b <= 65536 * 65535`, so no 64-bit wrap).
    #[target_feature(enable = "avx2")]
    fn mul_hi_round(a: __m256i, b: __m256i) -> __m256i {
        let r = _mm256_set1_epi64x(1 << 31);
        let pe = _mm256_add_epi64(_mm256_mul_epu32(a, b), r);
        let po = _mm256_add_epi64(
            _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32)),
            r,
        );
        _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0b1010_1010)
    }

    /// `(value - 32768)` of 16 unsigned 16-bit values held in two `i32` vectors (interleaved
    /// order), packed back into column order.
    #[target_feature(enable = "avx2")]
    fn pack_off(lo: __m256i, hi: __m256i) -> __m256i {
        let off = _mm256_set1_epi32(32768);
        _mm256_packs_epi32(_mm256_sub_epi32(lo, off), _mm256_sub_epi32(hi, off))
    }

    /// The ring rows of input row `y`: the quantities of `vertical_8` (`a, b, a*a, b*b, a*b`,
    /// five) or `vertical_16` (`a, b` and the high and low halves of `a*a, b*b, a*b`, eight), each
    /// `w` long, offset by -32768.
    #[target_feature(enable = "avx2")]
    fn fill_ring(ra: &[u16], da: &[u16], eight: bool, w: usize, out: &mut [i16]) {
        let off = _mm256_set1_epi16(i16::MIN);
        let mut j = 0;
        loop {
            // SAFETY (loads and stores): AVX2 is enabled in this function.
            let (a, b) = unsafe { (ldu(ra, j), ldu(da, j)) };
            let mut q = [a, b, a, a, a, a, a, a];
            if eight {
                // a, b <= 255: the squares fit in 16 bits.
                q[2] = _mm256_mullo_epi16(a, a);
                q[3] = _mm256_mullo_epi16(b, b);
                q[4] = _mm256_mullo_epi16(a, b);
            } else {
                q[2] = _mm256_mulhi_epu16(a, a);
                q[3] = _mm256_mullo_epi16(a, a);
                q[4] = _mm256_mulhi_epu16(b, b);
                q[5] = _mm256_mullo_epi16(b, b);
                q[6] = _mm256_mulhi_epu16(a, b);
                q[7] = _mm256_mullo_epi16(a, b);
            }
            let n = if eight { 5 } else { 8 };
            for (k, &x) in q.iter().enumerate().take(n) {
                unsafe { st(out, k * w + j, _mm256_xor_si256(x, off)) };
            }
            if j + B == w {
                break;
            }
            // The last block overlaps the one before when w is not a multiple of 16.
            j = (j + B).min(w - B);
        }
    }

    /// Mirror `half` columns at both ends of `row[PAD..PAD + w]`.
    fn pad(row: &mut [i16], w: usize, half: usize) {
        for f in 1..=half {
            row[PAD - f] = row[PAD + f];
            row[PAD + w - 1 + f] = row[PAD + w - 1 - f];
        }
    }

    /// One column of the horizontal filter, scalar (the columns after the last full block).
    fn hcol<const FW: usize>(f: &[u16; FW], row: &[i16], j: usize) -> u32 {
        let base = PAD + j - FW / 2;
        (0..FW)
            .map(|k| f[k] as u32 * (row[base + k] as u16 ^ 0x8000) as u32)
            .sum()
    }

    /// `floor(log2(x))` of 32-bit lanes `x >= 2^8` (any `x < 2^32`): the exponent of the float
    /// of `x >> 8`, which is below 2^24 and so converts exactly.
    #[target_feature(enable = "avx2")]
    fn floor_log2_32(x: __m256i) -> __m256i {
        let f = _mm256_cvtepi32_ps(_mm256_srli_epi32(x, 8));
        let e = _mm256_srli_epi32(_mm256_castps_si256(f), 23);
        _mm256_sub_epi32(e, _mm256_set1_epi32(127 - 8))
    }

    /// [`floor_log2_32`] on four lanes.
    #[target_feature(enable = "avx2")]
    fn floor_log2_32x4(x: __m128i) -> __m128i {
        let f = _mm_cvtepi32_ps(_mm_srli_epi32(x, 8));
        let e = _mm_srli_epi32(_mm_castps_si128(f), 23);
        _mm_sub_epi32(e, _mm_set1_epi32(127 - 8))
    }

    /// `table[idx & 0xffff]` of eight lanes (the callers' indices are below 2^16 already; the
    /// mask keeps every read inside the table whatever the lanes hold).
    #[target_feature(enable = "avx2")]
    fn lookup(table: &[u16; 65537], idx: __m256i) -> __m256i {
        let idx = _mm256_and_si256(idx, _mm256_set1_epi32(0xffff));
        // SAFETY: each lane reads the 4 bytes at `2 * idx <= 131070` of the 131074-byte table
        // (the low 16 bits are entry `idx`); AVX2 is enabled in this function.
        let v = unsafe { _mm256_i32gather_epi32::<2>(table.as_ptr().cast(), idx) };
        _mm256_and_si256(v, _mm256_set1_epi32(0xffff))
    }

    /// [`lookup`] on four lanes.
    #[target_feature(enable = "avx2")]
    fn lookup4(table: &[u16; 65537], idx: __m128i) -> __m128i {
        let idx = _mm_and_si128(idx, _mm_set1_epi32(0xffff));
        // SAFETY: as in `lookup`.
        let v = unsafe { _mm_i32gather_epi32::<2>(table.as_ptr().cast(), idx) };
        _mm_and_si128(v, _mm_set1_epi32(0xffff))
    }

    /// `log2_32` of four lanes `2^17 <= x < 2^32`.
    #[target_feature(enable = "avx2")]
    fn log2_32x4(table: &[u16; 65537], x: __m128i) -> __m128i {
        let k = _mm_sub_epi32(floor_log2_32x4(x), _mm_set1_epi32(15));
        let t = lookup4(table, _mm_srlv_epi32(x, k));
        _mm_add_epi32(t, _mm_slli_epi32(k, 11))
    }

    /// Left-packing permutations: entry `m` lists the set bits of `m` (lowest first).
    fn pack_table() -> &'static [[u32; 8]; 256] {
        static T: std::sync::OnceLock<[[u32; 8]; 256]> = std::sync::OnceLock::new();
        T.get_or_init(|| {
            let mut t = [[0u32; 8]; 256];
            for (m, e) in t.iter_mut().enumerate() {
                let mut n = 0;
                for b in 0..8 {
                    if m >> b & 1 == 1 {
                        e[n] = b as u32;
                        n += 1;
                    }
                }
            }
            t
        })
    }

    /// Load 8 `i32` from `s[i..]`.
    ///
    /// # Safety
    /// As [`ld`].
    #[inline(always)]
    unsafe fn ld32(s: &[i32], i: usize) -> __m256i {
        let s = &s[i..i + 8];
        // SAFETY: as in `ld`.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    /// Load 4 `i32` from `s[i..]`.
    #[inline(always)]
    fn ld32x4(s: &[i32], i: usize) -> __m128i {
        let s = &s[i..i + 4];
        // SAFETY: `s` is 16 readable bytes; loadu needs no alignment; SSE2 is baseline.
        unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
    }

    /// Sum of four `i32` lanes.
    #[target_feature(enable = "avx2")]
    fn hsum4(x: __m128i) -> i64 {
        let mut a = [0i32; 4];
        // SAFETY: `a` is 16 writable bytes; SSE2 is baseline.
        unsafe { _mm_storeu_si128(a.as_mut_ptr().cast(), x) };
        a.iter().map(|&v| v as i64).sum()
    }

    /// [`super::accumulate_row`], vectorised: the same per-pixel integer and double operations
    /// (see there), eight pixels at a time for the first pass and four for the gain path. The
    /// per-lane sums of a row fit in `i32` (`DEN_LOG_PER_PIXEL * 15360` and `NUM_LOG_PER_PIXEL *
    /// 15360` are below 2^31); the non-log variances are summed in 64-bit lanes.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
    pub(super) fn accumulate_row(
        w: usize,
        s: &mut Scratch,
        egl: f64,
        table: &[u16; 65537],
        acc: &mut VifScaleAccum,
    ) {
        let full = w / 8 * 8;
        let nsq = _mm256_set1_epi32(SIGMA_NSQ);
        let zero = _mm256_setzero_si256();
        let (mut den_log, mut den_non_log, mut num_non_log) = (zero, zero, zero);
        let c17 = _mm256_set1_epi32(2048 * 17);
        let one = _mm256_set1_epi32(1);
        let packs = pack_table();
        let mut n = 0;
        for j0 in (0..full).step_by(8) {
            // SAFETY (loads and stores): AVX2 is enabled in this function.
            let (s1, s2, s12) = unsafe { (ld32(&s.s1, j0), ld32(&s.s2, j0), ld32(&s.s12, j0)) };
            // log: sigma1_sq >= sigma_nsq.
            let log = _mm256_cmpgt_epi32(s1, _mm256_sub_epi32(nsq, one));
            let arg = _mm256_add_epi32(nsq, _mm256_blendv_epi8(nsq, s1, log));
            let k = _mm256_sub_epi32(floor_log2_32(arg), _mm256_set1_epi32(15));
            let l = _mm256_add_epi32(
                lookup(table, _mm256_srlv_epi32(arg, k)),
                _mm256_slli_epi32(k, 11),
            );
            den_log = _mm256_add_epi32(den_log, _mm256_and_si256(_mm256_sub_epi32(l, c17), log));
            den_non_log = _mm256_add_epi32(den_non_log, _mm256_andnot_si256(log, one));
            let v = _mm256_andnot_si256(log, s2);
            num_non_log = _mm256_add_epi64(
                num_non_log,
                _mm256_add_epi64(
                    _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)),
                    _mm256_cvtepu32_epi64(_mm256_extracti128_si256(v, 1)),
                ),
            );
            // Gain path: log && sigma12 > 0 && sigma2_sq > 0; packed to the front (n <= j0,
            // and the 8 lanes stored at n end at or before j0 + 8: only this block's entries,
            // already loaded, are overwritten).
            let gain = _mm256_and_si256(
                log,
                _mm256_and_si256(_mm256_cmpgt_epi32(s12, zero), _mm256_cmpgt_epi32(s2, zero)),
            );
            let m = _mm256_movemask_ps(_mm256_castsi256_ps(gain)) as usize;
            if m != 0 {
                // SAFETY: `packs[m]` is 8 readable u32; AVX2 is enabled in this function.
                let p = unsafe { _mm256_loadu_si256(packs[m].as_ptr().cast()) };
                unsafe {
                    st32(&mut s.s1, n, _mm256_permutevar8x32_epi32(s1, p));
                    st32(&mut s.s2, n, _mm256_permutevar8x32_epi32(s2, p));
                    st32(&mut s.s12, n, _mm256_permutevar8x32_epi32(s12, p));
                }
                n += m.count_ones() as usize;
            }
        }
        let mut lanes = [0i64; 4];
        // SAFETY: `lanes` is 32 writable bytes; AVX2 is enabled in this function.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), num_non_log) };
        acc.num_non_log += lanes.iter().sum::<i64>();
        let lo_hi =
            |x: __m256i| hsum4(_mm256_castsi256_si128(x)) + hsum4(_mm256_extracti128_si256(x, 1));
        acc.den_log += lo_hi(den_log);
        acc.den_non_log += lo_hi(den_non_log);
        // The columns after the last block, as the portable first pass.
        let table_s = table;
        for j in full..w {
            let (sigma1_sq, sigma2_sq, sigma12) = (s.s1[j], s.s2[j], s.s12[j]);
            if sigma1_sq >= SIGMA_NSQ {
                acc.den_log +=
                    (super::log2_32(table_s, (SIGMA_NSQ + sigma1_sq) as u32) - 2048 * 17) as i64;
                if sigma12 > 0 && sigma2_sq > 0 {
                    (s.s1[n], s.s2[n], s.s12[n]) = (sigma1_sq, sigma2_sq, sigma12);
                    n += 1;
                }
            } else {
                acc.num_non_log += sigma2_sq as i64;
                acc.den_non_log += 1;
            }
        }
        // Gain path, four pixels at a time in double (libvmaf's expressions, same order).
        let eps = _mm256_set1_pd(GAIN_EPS);
        let eglv = _mm256_set1_pd(egl);
        let two52 = _mm256_set1_pd(4_503_599_627_370_496.0);
        let nsq4 = _mm_set1_epi32(SIGMA_NSQ);
        let mut num_log = _mm_setzero_si128();
        let quads = n / 4 * 4;
        for j0 in (0..quads).step_by(4) {
            let (i1, i2, i12) = (ld32x4(&s.s1, j0), ld32x4(&s.s2, j0), ld32x4(&s.s12, j0));
            let (s1, s2, s12) = (
                _mm256_cvtepi32_pd(i1),
                _mm256_cvtepi32_pd(i2),
                _mm256_cvtepi32_pd(i12),
            );
            // g = sigma12 / (sigma1_sq + eps); sv_sq = (int32)(sigma2_sq - g * sigma12), >= 0.
            let g = _mm256_div_pd(s12, _mm256_add_pd(s1, eps));
            let sv = _mm256_cvttpd_epi32(_mm256_sub_pd(s2, _mm256_mul_pd(g, s12)));
            let numer1 = _mm_add_epi32(_mm_max_epi32(sv, _mm_setzero_si128()), nsq4);
            // g = MIN(g, egl) (`g < egl ? g : egl`, what minpd computes).
            let g = _mm256_min_pd(g, eglv);
            let prod = _mm256_mul_pd(_mm256_mul_pd(g, g), s1);
            // (int64_t)prod + numer1: prod is in 0..2^45, its truncation and the sum are exact
            // in double (< 2^53); the integer is read from the mantissa of x + 2^52.
            let x = _mm256_add_pd(
                _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(prod),
                _mm256_cvtepi32_pd(numer1),
            );
            let xi = _mm256_sub_epi64(
                _mm256_castpd_si256(_mm256_add_pd(x, two52)),
                _mm256_castpd_si256(two52),
            );
            // log2_64(x): k = floor(log2(x)) - 15 from the exponent of the (exact) double.
            let e = _mm256_permutevar8x32_epi32(
                _mm256_srli_epi64(_mm256_castpd_si256(x), 52),
                _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
            );
            let k = _mm_sub_epi32(_mm256_castsi256_si128(e), _mm_set1_epi32(1023 + 15));
            let idx = _mm256_srlv_epi64(xi, _mm256_cvtepu32_epi64(k));
            let idx = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                idx,
                _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
            ));
            let l1 = _mm_add_epi32(lookup4(table, idx), _mm_slli_epi32(k, 11));
            let l2 = log2_32x4(table, numer1);
            num_log = _mm_add_epi32(num_log, _mm_sub_epi32(l1, l2));
        }
        acc.num_log += hsum4(num_log);
        for j in quads..n {
            let (sigma1_sq, sigma2_sq, sigma12) = (s.s1[j], s.s2[j], s.s12[j]);
            let g = sigma12 as f64 / (sigma1_sq as f64 + GAIN_EPS);
            let sv_sq = ((sigma2_sq as f64 - g * sigma12 as f64) as i32).max(0);
            let g = if g < egl { g } else { egl };
            let numer1 = (sv_sq + SIGMA_NSQ) as u32;
            let numer1_tmp = (g * g * sigma1_sq as f64) as i64 + numer1 as i64;
            acc.num_log += (super::log2_64(table, numer1_tmp as u64)
                - super::log2_64(table, numer1 as u64)) as i64;
        }
    }

    /// `vif_statistic_8` / `vif_statistic_16` of one scale (see [`super::statistic`]).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
    pub(super) fn statistic<const FW: usize>(
        f: &[u16; FW],
        r: Img<'_>,
        d: Img<'_>,
        v: Vertical,
        egl: f64,
        s: &mut Scratch,
        wide: bool,
    ) -> VifScaleAccum {
        let (w, h) = (r.w, r.h);
        if wide && w >= 2 * B {
            // SAFETY: `wide` is true only in compute_avx512 (Isa::Avx512 checked).
            return if crate::features::isa::avx512_vnni() && !super::NO_VNNI.with(|c| c.get()) {
                // SAFETY: as above, and the CPU has AVX-512 VNNI.
                unsafe { wide512::statistic_vnni(f, r, d, v, egl, s) }
            } else {
                unsafe { wide512::statistic(f, r, d, v, egl, s) }
            };
        }
        let half = FW / 2;
        assert!(fits(f, w) && FW <= 17 && half <= PAD);
        let cp = pairs(f);
        let eight = matches!(v, Vertical::Eight);
        let nq = if eight { 5 } else { 8 };
        let rowlen = nq * w;
        s.ring.resize(FW * rowlen, 0);
        // Interleaved pairs of consecutive rows (y, y + 1), per quantity and block of 16
        // columns: the vpunpck{l,h}wd of the two rows, 32 values.
        let nb = w.div_ceil(B);
        let block = |b: usize| (B * b).min(w - B);
        let prowlen = nq * nb * 2 * B;
        s.pairs.resize(FW * prowlen, 0);
        s.vs.resize(nq * nb * B, 0);
        for hs in &mut s.hs {
            hs.resize(w, 0);
        }
        for vh in &mut s.vh {
            vh.resize(w + 2 * PAD + 2 * B, 0);
        }
        let table = log2_table();
        let mut acc = VifScaleAccum::default();
        let mut next = 0;
        let bias = _mm256_set1_epi32(i32::MIN);
        for i in 0..h {
            // The ring holds the last FW input rows, which include every (mirrored) row of the
            // filter window of row i.
            while next <= (i + half).min(h - 1) {
                let slot = (next % FW) * rowlen;
                fill_ring(
                    r.row(next),
                    d.row(next),
                    eight,
                    w,
                    &mut s.ring[slot..slot + rowlen],
                );
                if next > 0 {
                    let (r0, r1) = (((next - 1) % FW) * rowlen, slot);
                    let p0 = ((next - 1) % FW) * prowlen;
                    for q in 0..nq {
                        for b in 0..nb {
                            let j = block(b);
                            // SAFETY (loads, stores): AVX2 is enabled in this function.
                            let (x, y) = unsafe {
                                (ld(&s.ring, r0 + q * w + j), ld(&s.ring, r1 + q * w + j))
                            };
                            let o = p0 + (q * nb + b) * 2 * B;
                            unsafe {
                                st(&mut s.pairs, o, _mm256_unpacklo_epi16(x, y));
                                st(&mut s.pairs, o + B, _mm256_unpackhi_epi16(x, y));
                            }
                        }
                    }
                }
                next += 1;
            }
            // Inside the image, the window's tap pairs are pairs of consecutive rows.
            let inner = i >= half && i + half < h;
            let pair_rows: [usize; 8] =
                std::array::from_fn(|t| ((i + 2 * t).wrapping_sub(half) % FW) * prowlen);
            let last = ((i + half) % FW) * rowlen;
            let rows: [usize; FW] = std::array::from_fn(|k| {
                (super::mirror(i as isize - half as isize + k as isize, h) % FW) * rowlen
            });
            // Vertical pass. First the sums `S` of every quantity and block into s.vs (per block
            // 16 lanes: the low then the high interleave half), one quantity at a time.
            for q in 0..nq {
                for b in 0..nb {
                    let j = block(b);
                    let (lo, hi) = if inner {
                        let o = (q * nb + b) * 2 * B;
                        vpass_pairs::<FW>(
                            &s.pairs,
                            &pair_rows.map(|p| p + o),
                            &s.ring,
                            last + q * w,
                            j,
                            &cp,
                        )
                    } else {
                        vpass(&s.ring, &rows, q * w, j, &cp)
                    };
                    let o = (q * nb + b) * B;
                    // SAFETY (stores): AVX2 is enabled in this function.
                    unsafe {
                        st32(&mut s.vs, o, _mm256_add_epi32(lo, bias));
                        st32(&mut s.vs, o + 8, _mm256_add_epi32(hi, bias));
                    }
                }
            }
            // Then the rounding of each statistic, into s.vh: mu1, mu2, xx (hi, lo), yy (hi, lo),
            // xy (hi, lo), as offset i16 in column order.
            for b in 0..nb {
                let j = block(b);
                // SAFETY (loads, stores): AVX2 is enabled in this function.
                let sum = |q: usize| {
                    let o = (q * nb + b) * B;
                    unsafe { (ld32(&s.vs, o), ld32(&s.vs, o + 8)) }
                };
                let mut out = [_mm256_setzero_si256(); 8];
                match v {
                    Vertical::Eight => {
                        // (m + 128) >> 8; the squares whole (< 2^32), split into halves.
                        let r128 = _mm256_set1_epi32(128);
                        for q in 0..2 {
                            let (lo, hi) = sum(q);
                            out[q] = pack_off(
                                _mm256_srli_epi32(_mm256_add_epi32(lo, r128), 8),
                                _mm256_srli_epi32(_mm256_add_epi32(hi, r128), 8),
                            );
                        }
                        let m16 = _mm256_set1_epi32(0xffff);
                        for q in 2..5 {
                            let (lo, hi) = sum(q);
                            out[2 * q - 2] =
                                pack_off(_mm256_srli_epi32(lo, 16), _mm256_srli_epi32(hi, 16));
                            out[2 * q - 1] =
                                pack_off(_mm256_and_si256(lo, m16), _mm256_and_si256(hi, m16));
                        }
                    }
                    Vertical::Sixteen { mu, sq } => {
                        let m16 = _mm256_set1_epi32(0xffff);
                        let (mr, ms) = (_mm256_set1_epi32(mu.round as i32), mu.shift as i32);
                        let msh = _mm_cvtsi32_si128(ms);
                        for q in 0..2 {
                            let (lo, hi) = sum(q);
                            // ((m + round) >> shift) as u16 (m + round < 2^32).
                            let f = |x| {
                                _mm256_and_si256(
                                    _mm256_srl_epi32(_mm256_add_epi32(x, mr), msh),
                                    m16,
                                )
                            };
                            out[q] = pack_off(f(lo), f(hi));
                        }
                        // (uint32_t)((H * 65536 + L + round) >> s) = (H << (16 - s)) +
                        // ((L + round) >> s), wrapping (s in 2..=16; L + round < 2^32).
                        let (sr, ss) = (_mm256_set1_epi32(sq.round as i32), sq.shift as i32);
                        let (shl, shr) = (_mm_cvtsi32_si128(16 - ss), _mm_cvtsi32_si128(ss));
                        for q in 0..3 {
                            let (hl, hh) = sum(2 + 2 * q);
                            let (ll, lh) = sum(3 + 2 * q);
                            let g = |hx, lx| {
                                _mm256_add_epi32(
                                    _mm256_sll_epi32(hx, shl),
                                    _mm256_srl_epi32(_mm256_add_epi32(lx, sr), shr),
                                )
                            };
                            let (xl, xh) = (g(hl, ll), g(hh, lh));
                            out[2 + 2 * q] =
                                pack_off(_mm256_srli_epi32(xl, 16), _mm256_srli_epi32(xh, 16));
                            out[3 + 2 * q] =
                                pack_off(_mm256_and_si256(xl, m16), _mm256_and_si256(xh, m16));
                        }
                    }
                }
                for (vh, &o) in s.vh.iter_mut().zip(&out) {
                    unsafe { st(vh, PAD + j, o) };
                }
            }
            for vh in &mut s.vh {
                pad(vh, w, half);
            }
            // Horizontal pass, one quantity at a time, 16 columns a step (even columns, then
            // odd) into s.hs.
            let full = w / B * B;
            for (vh, hs) in s.vh.iter().zip(s.hs.iter_mut()) {
                // Every load of hpass_at below ends at or before PAD + full + half + B + 1.
                let row = &vh[..PAD + full + half + B + 1];
                for j0 in (0..full).step_by(B) {
                    // SAFETY: the loads of hpass_at read row[j0 + PAD - half ..= j0 + PAD +
                    // half + B], inside `row` (j0 + B <= full); AVX2 is enabled here.
                    let (e, o) = unsafe { hpass_at::<FW>(row.as_ptr().add(PAD + j0 - half), &cp) };
                    unsafe {
                        st32(hs, j0, e);
                        st32(hs, j0 + 8, o);
                    }
                }
            }
            // Sigmas, 8 pixels a step.
            let r15 = _mm256_set1_epi32(32768);
            let zero = _mm256_setzero_si256();
            let filt = |h: __m256i, l: __m256i| {
                _mm256_add_epi32(h, _mm256_srli_epi32(_mm256_add_epi32(l, r15), 16))
            };
            for o in (0..full).step_by(8) {
                // SAFETY (loads, stores): AVX2 is enabled in this function.
                let g = |a: usize| unsafe { ld32(&s.hs[a], o) };
                let (mu1, mu2) = (g(0), g(1));
                let mu1_sq = mul_hi_round(mu1, mu1);
                let mu2_sq = mul_hi_round(mu2, mu2);
                let mu1_mu2 = mul_hi_round(mu1, mu2);
                let s1 = _mm256_sub_epi32(filt(g(2), g(3)), mu1_sq);
                let s2 = _mm256_max_epi32(_mm256_sub_epi32(filt(g(4), g(5)), mu2_sq), zero);
                let s12 = _mm256_sub_epi32(filt(g(6), g(7)), mu1_mu2);
                unsafe {
                    st32(&mut s.s1, o, s1);
                    st32(&mut s.s2, o, s2);
                    st32(&mut s.s12, o, s12);
                }
            }
            for j in full..w {
                let hs: [u32; 8] = std::array::from_fn(|a| hcol(f, &s.vh[a], j));
                let (mu1, mu2) = (hs[0] as u64, hs[1] as u64);
                let mu1_sq = ((mu1 * mu1 + 2147483648) >> 32) as u32;
                let mu2_sq = ((mu2 * mu2 + 2147483648) >> 32) as u32;
                let mu1_mu2 = ((mu1 * mu2 + 2147483648) >> 32) as u32;
                let filt = |h: u32, l: u32| h.wrapping_add((l + 32768) >> 16);
                s.s1[j] = filt(hs[2], hs[3]).wrapping_sub(mu1_sq) as i32;
                s.s2[j] = (filt(hs[4], hs[5]).wrapping_sub(mu2_sq) as i32).max(0);
                s.s12[j] = filt(hs[6], hs[7]).wrapping_sub(mu1_mu2) as i32;
            }
            accumulate_row(w, s, egl, table, &mut acc);
        }
        acc
    }

    /// The Isa::Avx512 kernels: the fused statistic (every scale at least 32 columns wide; see
    /// `fused_statistic` below) and the 512-bit passes of [`subsample`]. The same `vpmaddwd`
    /// sums as the AVX2 code (see the module notes for their bounds), twice the columns a step.
    mod wide512 {
        use std::arch::x86_64::*;

        use super::{
            B, G, GAIN_EPS, Img, PAD, SIGMA_NSQ, Scratch, Vertical, VifScaleAccum, log2_table,
        };

        /// The tap pairs `(f[2t], f[2t + 1])` of a filter (`f[FW]` = 0), one pair per lane.
        #[target_feature(enable = "avx512f,avx512bw")]
        fn taps<const FW: usize>(f: &[u16; FW]) -> [__m512i; 9] {
            let mut p = [_mm512_setzero_si512(); 9];
            for (t, p) in p.iter_mut().enumerate().take(FW / 2 + 1) {
                let lo = f[2 * t] as u32;
                let hi = if 2 * t + 1 < FW {
                    f[2 * t + 1] as u32
                } else {
                    0
                };
                *p = _mm512_set1_epi32((lo | hi << 16) as i32);
            }
            p
        }

        /// The tap pairs `(f[2t - 1], f[2t])` of a filter (`f[-1]` = 0): applied to the pairs
        /// `(x[c - half + 2t], x[c - half + 2t + 1])` that [`taps`] applies to for output column
        /// `c`, they give the sum of column `c + 1` (the same taps, so the same bounds).
        #[target_feature(enable = "avx512f,avx512bw")]
        fn odd_taps<const FW: usize>(f: &[u16; FW]) -> [__m512i; 9] {
            let mut p = [_mm512_setzero_si512(); 9];
            for (t, p) in p.iter_mut().enumerate().take(FW / 2 + 1) {
                let lo = if t > 0 { f[2 * t - 1] as u32 } else { 0 };
                let hi = f[2 * t] as u32;
                *p = _mm512_set1_epi32((lo | hi << 16) as i32);
            }
            p
        }

        /// 32 `i16` from `s[i..]`.
        #[target_feature(enable = "avx512f,avx512bw")]
        fn ld(s: &[i16], i: usize) -> __m512i {
            let s = &s[i..i + 2 * B];
            // SAFETY: `s` is 64 readable bytes; loadu needs no alignment; AVX-512F is enabled.
            unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }
        }

        /// Store 32 `i16` at `s[i..]`.
        #[target_feature(enable = "avx512f,avx512bw")]
        fn st(s: &mut [i16], i: usize, x: __m512i) {
            let s = &mut s[i..i + 2 * B];
            // SAFETY: `s` is 64 writable bytes; storeu needs no alignment; AVX-512F is enabled.
            unsafe { _mm512_storeu_si512(s.as_mut_ptr().cast(), x) }
        }

        /// `(a * b + 2^31) >> 32` per 32-bit lane (`a, b <= 65536 * 65535`, so no 64-bit wrap).
        #[target_feature(enable = "avx512f")]
        fn mul_hi_round(a: __m512i, b: __m512i) -> __m512i {
            let r = _mm512_set1_epi64(1 << 31);
            let pe = _mm512_add_epi64(_mm512_mul_epu32(a, b), r);
            let po = _mm512_add_epi64(
                _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32)),
                r,
            );
            _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(pe, 32), po)
        }

        /// The vertical pass of [`super::subsample`] on one output row, 32 columns a step
        /// (`w >= 32`): the same interleave, `vpmaddwd` and pack, per 128-bit lane as there, so
        /// the pack restores column order.
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
        pub(in super::super) fn subsample_vpass<const FW: usize>(
            rows: &[&[u16]; FW],
            w: usize,
            f: &[u16; FW],
            round: u64,
            shift: u32,
            vh: &mut [i16],
        ) {
            let half = FW / 2;
            let cp = taps(f);
            let bias = _mm512_set1_epi32(i32::MIN);
            let off = _mm512_set1_epi16(i16::MIN);
            let off32 = _mm512_set1_epi32(32768);
            let (vr, vs) = (
                _mm512_set1_epi32(round as i32),
                _mm_cvtsi32_si128(shift as i32),
            );
            let m16 = _mm512_set1_epi32(0xffff);
            let ldu = |s: &[u16], i: usize| {
                let s = &s[i..i + 2 * B];
                // SAFETY: `s` is 64 readable bytes; AVX-512F is enabled in this function.
                _mm512_xor_si512(unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }, off)
            };
            let mut j = 0;
            loop {
                let (mut lo, mut hi) = (bias, bias);
                for t in 0..half + 1 {
                    let x = ldu(rows[2 * t], j);
                    let y = if 2 * t + 1 < FW {
                        ldu(rows[2 * t + 1], j)
                    } else {
                        x
                    };
                    lo =
                        _mm512_add_epi32(lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(x, y), cp[t]));
                    hi =
                        _mm512_add_epi32(hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(x, y), cp[t]));
                }
                // ((t + round) >> shift) as u16 (t + round < 2^32), then offset by -32768.
                let g = |x| {
                    _mm512_sub_epi32(
                        _mm512_and_si512(_mm512_srl_epi32(_mm512_add_epi32(x, vr), vs), m16),
                        off32,
                    )
                };
                let out = &mut vh[PAD + j..PAD + j + 2 * B];
                // SAFETY: `out` is 64 writable bytes; AVX-512BW is enabled in this function.
                unsafe {
                    _mm512_storeu_si512(out.as_mut_ptr().cast(), _mm512_packs_epi32(g(lo), g(hi)))
                };
                if j + 2 * B == w {
                    break;
                }
                // The last block overlaps the one before when w is not a multiple of 32.
                j = (j + 2 * B).min(w - 2 * B);
            }
        }

        /// The horizontal pass of [`super::subsample`] (even columns only) over the whole
        /// 32-column steps of `0..full`, 16 outputs a step; returns the column where it stopped.
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
        pub(in super::super) fn subsample_hpass<const FW: usize>(
            vh: &[i16],
            full: usize,
            f: &[u16; FW],
            orow: &mut [u16],
        ) -> usize {
            let half = FW / 2;
            let cp = taps(f);
            let r15 = _mm512_set1_epi32(32768);
            let steps = full / (2 * B);
            for k in 0..steps {
                let j0 = 2 * B * k;
                let mut e = _mm512_set1_epi32(i32::MIN);
                for (t, &c) in cp.iter().enumerate().take(half + 1) {
                    e = _mm512_add_epi32(e, _mm512_madd_epi16(ld(vh, PAD + j0 - half + 2 * t), c));
                }
                // (sum + 32768) >> 16 <= 65535, sixteen u16 in column order.
                let e = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_add_epi32(e, r15), 16));
                let o = &mut orow[j0 / 2..j0 / 2 + B];
                // SAFETY: `o` is 32 writable bytes; AVX is enabled in this function.
                unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), e) };
            }
            steps * 2 * B
        }

        /// `table[idx & 0xffff]` of the lanes of `m` (0 elsewhere); as [`lookup16`], masked.
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
        fn lookup16m(table: &[u16; 65537], m: __mmask16, idx: __m512i) -> __m512i {
            let idx = _mm512_and_si512(idx, _mm512_set1_epi32(0xffff));
            // SAFETY: each active lane reads the 4 bytes at `2 * idx <= 131070` of the
            // 131074-byte table (the low 16 bits are entry `idx`); AVX-512F is enabled.
            let v = unsafe {
                _mm512_mask_i32gather_epi32::<2>(
                    _mm512_setzero_si512(),
                    m,
                    idx,
                    table.as_ptr().cast(),
                )
            };
            _mm512_and_si512(v, _mm512_set1_epi32(0xffff))
        }

        /// `log2_32(x)` of 16 lanes `2^17 <= x < 2^31` (those of `m`; the other lanes are
        /// meaningless): `k = floor(log2(x)) - 15` from the exponent of the float of `x >> 8`
        /// (exact, below 2^24), then the table entry of `x >> k`, plus `2048 * k`.
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
        fn log2_32x16(table: &[u16; 65537], m: __mmask16, x: __m512i) -> __m512i {
            let fl = _mm512_cvtepi32_ps(_mm512_srli_epi32(x, 8));
            let k = _mm512_sub_epi32(
                _mm512_srli_epi32(_mm512_castps_si512(fl), 23),
                _mm512_set1_epi32(127 - 8 + 15),
            );
            _mm512_add_epi32(
                lookup16m(table, m, _mm512_srlv_epi32(x, k)),
                _mm512_slli_epi32(k, 11),
            )
        }

        /// The per-row sums of [`statistic`] (vector lanes; reduced into the scale's
        /// [`VifScaleAccum`] at the end of each row).
        struct Sums {
            /// `accum_den_log` and `accum_num_log` terms, per `i32` lane: a lane takes at most
            /// 2 pixels per 32-column step, `2 * 480 = 960` at 15360 columns, so at most
            /// `960 * NUM_LOG_PER_PIXEL < 2^26` (`DEN_LOG_PER_PIXEL` is smaller).
            den_log: __m512i,
            num_log: __m512i,
            /// `accum_num_non_log` per `i64` lane (whole scale: `<= 1.43e17` in all).
            num_non_log: __m512i,
            den_non_log: i64,
        }

        /// libvmaf's per-pixel step (see [`super::super::accumulate_row`]) on the 16 pixels of
        /// `valid`, all in registers: the same integer and double operations as the portable
        /// code, per lane. Most pixels of natural content take the gain path, so it runs on
        /// all 16 lanes (masked) whenever one of them takes it.
        #[allow(clippy::too_many_arguments)]
        #[inline]
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
        fn pixels(
            table: &[u16; 65537],
            egl: f64,
            valid: __mmask16,
            s1: __m512i,
            s2: __m512i,
            s12: __m512i,
            sums: &mut Sums,
        ) {
            let nsq = _mm512_set1_epi32(SIGMA_NSQ);
            let zero = _mm512_setzero_si512();
            // log: sigma1_sq >= sigma_nsq.
            let log = _mm512_mask_cmpge_epi32_mask(valid, s1, nsq);
            let non_log = valid & !log;
            if log != 0 {
                // log2_32(sigma_nsq + sigma1_sq) - 2048 * 17 (the argument is in 2^18..2^31).
                let l = log2_32x16(table, log, _mm512_add_epi32(s1, nsq));
                sums.den_log = _mm512_mask_add_epi32(
                    sums.den_log,
                    log,
                    sums.den_log,
                    _mm512_sub_epi32(l, _mm512_set1_epi32(2048 * 17)),
                );
            }
            sums.den_non_log += non_log.count_ones() as i64;
            let v = _mm512_maskz_mov_epi32(non_log, s2);
            sums.num_non_log = _mm512_add_epi64(
                sums.num_non_log,
                _mm512_add_epi64(
                    _mm512_cvtepu32_epi64(_mm512_castsi512_si256(v)),
                    _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(v, 1)),
                ),
            );
            // Gain path: log && sigma12 > 0 && sigma2_sq > 0.
            let gain = _mm512_mask_cmpgt_epi32_mask(
                _mm512_mask_cmpgt_epi32_mask(log, s12, zero),
                s2,
                zero,
            );
            if gain == 0 {
                return;
            }
            let eps = _mm512_set1_pd(GAIN_EPS);
            let eglv = _mm512_set1_pd(egl);
            let two52 = _mm512_set1_pd(4_503_599_627_370_496.0);
            // Eight lanes in double (libvmaf's expressions, same order; see the AVX2 kernel
            // for why each step is exact): numer1, and the index and shift of log2_64 of
            // numer1_tmp.
            let eighth = |i1: __m256i, i2: __m256i, i12: __m256i| {
                let (s1, s2, s12) = (
                    _mm512_cvtepi32_pd(i1),
                    _mm512_cvtepi32_pd(i2),
                    _mm512_cvtepi32_pd(i12),
                );
                // g = sigma12 / (sigma1_sq + eps); sv_sq = (int32)(sigma2_sq - g * sigma12).
                let g = _mm512_div_pd(s12, _mm512_add_pd(s1, eps));
                let sv = _mm512_cvttpd_epi32(_mm512_sub_pd(s2, _mm512_mul_pd(g, s12)));
                let numer1 = _mm256_add_epi32(
                    _mm256_max_epi32(sv, _mm256_setzero_si256()),
                    _mm256_set1_epi32(SIGMA_NSQ),
                );
                // g = MIN(g, egl) (`g < egl ? g : egl`, what minpd computes).
                let g = _mm512_min_pd(g, eglv);
                let prod = _mm512_mul_pd(_mm512_mul_pd(g, g), s1);
                let x = _mm512_add_pd(
                    _mm512_roundscale_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(prod),
                    _mm512_cvtepi32_pd(numer1),
                );
                let xi = _mm512_sub_epi64(
                    _mm512_castpd_si512(_mm512_add_pd(x, two52)),
                    _mm512_castpd_si512(two52),
                );
                // log2_64(x): k = floor(log2(x)) - 15 from the exponent of the (exact) double.
                let k = _mm512_sub_epi64(
                    _mm512_srli_epi64(_mm512_castpd_si512(x), 52),
                    _mm512_set1_epi64(1023 + 15),
                );
                (
                    numer1,
                    _mm512_cvtepi64_epi32(_mm512_srlv_epi64(xi, k)),
                    _mm512_cvtepi64_epi32(k),
                )
            };
            let lo = |x: __m512i| _mm512_castsi512_si256(x);
            let hi = |x: __m512i| _mm512_extracti64x4_epi64(x, 1);
            let join = |a: __m256i, b: __m256i| _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
            let (n0, i0, k0) = eighth(lo(s1), lo(s2), lo(s12));
            let (n1, i1, k1) = eighth(hi(s1), hi(s2), hi(s12));
            let (numer1, idx, k) = (join(n0, n1), join(i0, i1), join(k0, k1));
            let l1 = _mm512_add_epi32(lookup16m(table, gain, idx), _mm512_slli_epi32(k, 11));
            let l2 = log2_32x16(table, gain, numer1);
            sums.num_log =
                _mm512_mask_add_epi32(sums.num_log, gain, sums.num_log, _mm512_sub_epi32(l1, l2));
        }

        /// `madd` then `add` (`vpmaddwd`, `vpaddd`).
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw")]
        fn dp_plain(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
            _mm512_add_epi32(acc, _mm512_madd_epi16(a, b))
        }

        /// The same in one instruction (`vpdpwssd`: the two products and the accumulator are
        /// summed modulo 2^32, as `vpmaddwd` then `vpaddd` do).
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
        fn dp_vnni(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
            _mm512_dpwssd_epi32(acc, a, b)
        }

        /// The rounding of one unit of the vertical pass at one step, into the `i16` rows `vh`
        /// at `o`: `mu1` or `mu2` (unit 0, 1: `sums` holds its sum S), or one product (unit
        /// 2, 3, 4: `xx`, `yy`, `xy`; `sums` holds its S, or for `Sixteen` the S of its high
        /// and low halves), each as (low, high) interleave halves, offset by -32768 and packed
        /// into column order.
        /// (A macro: a call per unit and step costs more than the rounding.)
        macro_rules! round_unit {
            ($v:expr, $unit:expr, $sums:expr, $vh:expr, $o:expr) => {{
                let (v, unit, sums, vh, o): (
                    Vertical,
                    usize,
                    &[(__m512i, __m512i)],
                    &mut [Vec<i16>; 8],
                    usize,
                ) = ($v, $unit, $sums, $vh, $o);
                let off = _mm512_set1_epi32(32768);
                let m16 = _mm512_set1_epi32(0xffff);
                let pack = |lo: __m512i, hi: __m512i| {
                    _mm512_packs_epi32(_mm512_sub_epi32(lo, off), _mm512_sub_epi32(hi, off))
                };
                match v {
                    Vertical::Eight => {
                        let (lo, hi) = sums[0];
                        if unit < 2 {
                            // (m + 128) >> 8.
                            let r128 = _mm512_set1_epi32(128);
                            let g = |x| _mm512_srli_epi32(_mm512_add_epi32(x, r128), 8);
                            st(&mut vh[unit], o, pack(g(lo), g(hi)));
                        } else {
                            // The squares whole (< 2^32), split into halves.
                            let (a, b) = (_mm512_srli_epi32(lo, 16), _mm512_srli_epi32(hi, 16));
                            st(&mut vh[2 * unit - 2], o, pack(a, b));
                            let (a, b) = (_mm512_and_si512(lo, m16), _mm512_and_si512(hi, m16));
                            st(&mut vh[2 * unit - 1], o, pack(a, b));
                        }
                    }
                    Vertical::Sixteen { mu, sq } => {
                        if unit < 2 {
                            // ((m + round) >> shift) as u16 (m + round < 2^32).
                            let (lo, hi) = sums[0];
                            let mr = _mm512_set1_epi32(mu.round as i32);
                            let msh = _mm_cvtsi32_si128(mu.shift as i32);
                            let g = |x| {
                                _mm512_and_si512(
                                    _mm512_srl_epi32(_mm512_add_epi32(x, mr), msh),
                                    m16,
                                )
                            };
                            st(&mut vh[unit], o, pack(g(lo), g(hi)));
                        } else {
                            // (uint32_t)((H * 65536 + L + round) >> s) = (H << (16 - s)) +
                            // ((L + round) >> s), wrapping (s in 2..=16; L + round < 2^32).
                            let ((hl, hh), (ll, lh)) = (sums[0], sums[1]);
                            let sr = _mm512_set1_epi32(sq.round as i32);
                            let ss = sq.shift as i32;
                            let (shl, shr) = (_mm_cvtsi32_si128(16 - ss), _mm_cvtsi32_si128(ss));
                            let g = |hx, lx| {
                                _mm512_add_epi32(
                                    _mm512_sll_epi32(hx, shl),
                                    _mm512_srl_epi32(_mm512_add_epi32(lx, sr), shr),
                                )
                            };
                            let (xl, xh) = (g(hl, ll), g(hh, lh));
                            let (a, b) = (_mm512_srli_epi32(xl, 16), _mm512_srli_epi32(xh, 16));
                            st(&mut vh[2 * unit - 2], o, pack(a, b));
                            let (a, b) = (_mm512_and_si512(xl, m16), _mm512_and_si512(xh, m16));
                            st(&mut vh[2 * unit - 1], o, pack(a, b));
                        }
                    }
                }
            }};
        }

        /// The horizontal pass, sigmas and per-pixel terms of one output row (the padded `i16`
        /// rows `vh` of its vertical pass), 32 columns a step: 16 even columns, then 16 odd
        /// ones (the last step masked to the columns of the image); the row's sums are added
        /// to `acc` (and `sums.num_non_log`, `sums.den_non_log`).
        macro_rules! fused_row {
            ($name:ident, $features:literal, $dp:ident) => {
                #[target_feature(enable = $features)]
                #[allow(clippy::too_many_arguments)]
                fn $name<const FW: usize>(
                    vh: &[Vec<i16>; 8],
                    w: usize,
                    cp: &[__m512i; 9],
                    cq: &[__m512i; 9],
                    table: &[u16; 65537],
                    egl: f64,
                    sums: &mut Sums,
                    acc: &mut VifScaleAccum,
                ) {
                    let half = FW / 2;
                    let bias = _mm512_set1_epi32(i32::MIN);
                    let r15 = _mm512_set1_epi32(32768);
                    let zero = _mm512_setzero_si512();
                    for k in 0..w.div_ceil(2 * B) {
                        let j0 = 2 * B * k;
                        let rem = w - j0;
                        let mask = |n: usize| ((1u32 << n.min(16)) - 1) as __mmask16;
                        let (ve, vo) = (mask(rem.div_ceil(2)), mask(rem / 2));
                        // The horizontal sums S of quantity q at the even and odd columns.
                        let hsum = |q: usize| {
                            let row = &vh[q][PAD + j0 - half..PAD + j0 + half + 2 * B + 1];
                            let (mut e, mut o) = (bias, bias);
                            // One load of pairs for both: the odd columns through odd_taps.
                            for t in 0..half + 1 {
                                let x = ld(row, 2 * t);
                                e = $dp(e, x, cp[t]);
                                o = $dp(o, x, cq[t]);
                            }
                            (e, o)
                        };
                        let filt = |(h, l): (__m512i, __m512i)| {
                            _mm512_add_epi32(h, _mm512_srli_epi32(_mm512_add_epi32(l, r15), 16))
                        };
                        let ((m1e, m1o), (m2e, m2o)) = (hsum(0), hsum(1));
                        let ((xxhe, xxho), (xxle, xxlo)) = (hsum(2), hsum(3));
                        let ((yyhe, yyho), (yyle, yylo)) = (hsum(4), hsum(5));
                        let ((xyhe, xyho), (xyle, xylo)) = (hsum(6), hsum(7));
                        for (valid, mu1, mu2, xx, yy, xy) in [
                            (ve, m1e, m2e, (xxhe, xxle), (yyhe, yyle), (xyhe, xyle)),
                            (vo, m1o, m2o, (xxho, xxlo), (yyho, yylo), (xyho, xylo)),
                        ] {
                            if valid == 0 {
                                continue;
                            }
                            let s1 = _mm512_sub_epi32(filt(xx), mul_hi_round(mu1, mu1));
                            let s2 = _mm512_max_epi32(
                                _mm512_sub_epi32(filt(yy), mul_hi_round(mu2, mu2)),
                                zero,
                            );
                            let s12 = _mm512_sub_epi32(filt(xy), mul_hi_round(mu1, mu2));
                            pixels(table, egl, valid, s1, s2, s12, sums);
                        }
                    }
                    // Per-row reductions (a row's sums are below 15360 * NUM_LOG_PER_PIXEL <
                    // 2^31).
                    acc.den_log += _mm512_reduce_add_epi32(sums.den_log) as i64;
                    acc.num_log += _mm512_reduce_add_epi32(sums.num_log) as i64;
                    sums.den_log = zero;
                    sums.num_log = zero;
                }
            };
        }

        /// Defines `$name`: [`super::statistic`] with the passes of a row fused (Isa::Avx512,
        /// images at least 32 columns wide), built for `$features` with `$dp` as its
        /// multiply-accumulate (`dp_plain` or `dp_vnni`) and `$row` (from [`fused_row`]) as its
        /// horizontal pass.
        ///
        /// Per input row: the quantities (`super::fill_ring`) into a ring of `FW + 2G - 1`
        /// rows, and the 512-bit interleave (`vpunpck{l,h}wd`) of each row with the next, per
        /// quantity and 32-column step. Per output row, 32 columns a step: the vertical sums of
        /// every quantity, rounded and packed straight into the `i16` rows of `s.vg[0]`; then
        /// `$row`. Inside the image the output rows go in groups of `2G`, the even rows `i, i +
        /// 2, ..., i + 2G - 2` then the odd ones: tap pair `t` of row `i + 2g` is tap pair `t +
        /// g` of row `i`, so the `G` rows of one parity load their tap pairs once (into
        /// `s.vg[g]`), `half + G - 1` loads instead of `G * half`. The sums are the same
        /// integers as the AVX2 kernel's (module notes).
        macro_rules! fused_statistic {
            ($name:ident, $features:literal, $dp:ident, $row:ident) => {
                #[target_feature(enable = $features)]
                pub(in super::super) fn $name<const FW: usize>(
                    f: &[u16; FW],
                    r: Img<'_>,
                    d: Img<'_>,
                    v: Vertical,
                    egl: f64,
                    s: &mut Scratch,
                ) -> VifScaleAccum {
                    let (w, h) = (r.w, r.h);
                    let half = FW / 2;
                    assert!(super::fits(f, w) && w >= 2 * B && FW <= 17 && half <= PAD);
                    let (cp, cq) = (taps(f), odd_taps(f));
                    let eight = matches!(v, Vertical::Eight);
                    let nq = if eight { 5 } else { 8 };
                    // Units of the rounding (see round_unit) and their quantities.
                    let units: &[&[usize]] = if eight {
                        &[&[0], &[1], &[2], &[3], &[4]]
                    } else {
                        &[&[0], &[1], &[2, 3], &[4, 5], &[6, 7]]
                    };
                    let rowlen = nq * w;
                    // Ring slots: the window of the last row of a group.
                    let rs = FW + 2 * G - 1;
                    // 32-column steps; the last one of the vertical pass overlaps the one before
                    // when w is not a multiple of 32.
                    let ns = w.div_ceil(2 * B);
                    let step = |k: usize| (2 * B * k).min(w - 2 * B);
                    // Per input row y (paired with y + 1), step k and quantity q, 64 values: the
                    // 512-bit vpunpck{l,h}wd of the two rows (32 columns each).
                    let prowlen = nq * ns * 4 * B;
                    s.ring.resize(rs * rowlen, 0);
                    s.pairs.resize(rs * prowlen, 0);
                    for vh in s.vg.iter_mut().flatten() {
                        // Written at PAD..PAD + w, mirrored around; the last horizontal step
                        // reads up to PAD + (w - 1) + half + 2 * B (lanes outside the image,
                        // masked).
                        vh.resize(w + 2 * PAD + 2 * B, 0);
                    }
                    let table = log2_table();
                    let mut acc = VifScaleAccum::default();
                    let bias = _mm512_set1_epi32(i32::MIN);
                    let mut sums = Sums {
                        den_log: _mm512_setzero_si512(),
                        num_log: _mm512_setzero_si512(),
                        num_non_log: _mm512_setzero_si512(),
                        den_non_log: 0,
                    };
                    let mut next = 0;
                    let mut i = 0;
                    while i < h {
                        let group = i % (2 * G) == 0 && i >= half && i + 2 * G - 1 + half < h;
                        // Input rows up to the window of the group's last row.
                        let top = (i + half + if group { 2 * G - 1 } else { 0 }).min(h - 1);
                        while next <= top {
                            let slot = (next % rs) * rowlen;
                            super::fill_ring(
                                r.row(next),
                                d.row(next),
                                eight,
                                w,
                                &mut s.ring[slot..slot + rowlen],
                            );
                            if next > 0 {
                                let r0 = ((next - 1) % rs) * rowlen;
                                let p0 = ((next - 1) % rs) * prowlen;
                                for k in 0..ns {
                                    let j = step(k);
                                    for q in 0..nq {
                                        let x = ld(&s.ring, r0 + q * w + j);
                                        let y = ld(&s.ring, slot + q * w + j);
                                        let o = p0 + (k * nq + q) * 4 * B;
                                        st(&mut s.pairs, o, _mm512_unpacklo_epi16(x, y));
                                        st(&mut s.pairs, o + 2 * B, _mm512_unpackhi_epi16(x, y));
                                    }
                                }
                            }
                            next += 1;
                        }
                        let (ring, pairs) = (&s.ring, &s.pairs);
                        let rows: &[usize] = if group { &[i, i + 1] } else { &[i] };
                        for &i in rows {
                            if group {
                                // Rows i + 2g, g < G: pair rows i - half + 2t, t < half + G - 1.
                                let pr: [usize; 8 + G] = std::array::from_fn(|t| {
                                    ((i + 2 * t).wrapping_sub(half) % rs) * prowlen
                                });
                                let last: [usize; G] =
                                    std::array::from_fn(|g| ((i + 2 * g + half) % rs) * rowlen);
                                for k in 0..ns {
                                    let j = step(k);
                                    for (u, qs) in units.iter().enumerate() {
                                        let mut out = [[(bias, bias); 2]; G];
                                        for (n, &q) in qs.iter().enumerate() {
                                            let po = (k * nq + q) * 4 * B;
                                            let (mut lo, mut hi) = ([bias; G], [bias; G]);
                                            for g in 0..G {
                                                let x = ld(ring, last[g] + q * w + j);
                                                let (a, b) = (
                                                    _mm512_unpacklo_epi16(x, x),
                                                    _mm512_unpackhi_epi16(x, x),
                                                );
                                                lo[g] = _mm512_madd_epi16(a, cp[half]);
                                                hi[g] = _mm512_madd_epi16(b, cp[half]);
                                            }
                                            for t in 0..half + G - 1 {
                                                let a = ld(pairs, pr[t] + po);
                                                let b = ld(pairs, pr[t] + po + 2 * B);
                                                for g in 0..G {
                                                    if t >= g && t - g < half {
                                                        lo[g] = $dp(lo[g], a, cp[t - g]);
                                                        hi[g] = $dp(hi[g], b, cp[t - g]);
                                                    }
                                                }
                                            }
                                            // S = S' + 2^31 (wrapping).
                                            for g in 0..G {
                                                out[g][n] = (
                                                    _mm512_add_epi32(lo[g], bias),
                                                    _mm512_add_epi32(hi[g], bias),
                                                );
                                            }
                                        }
                                        for (g, out) in out.iter().enumerate() {
                                            round_unit!(
                                                v,
                                                u,
                                                &out[..qs.len()],
                                                &mut s.vg[g],
                                                PAD + j
                                            );
                                        }
                                    }
                                }
                            } else {
                                // One row: its window's rows from the ring (mirrored at the
                                // top and bottom edges).
                                let wr: [usize; FW] = std::array::from_fn(|k| {
                                    (super::super::mirror(
                                        i as isize - half as isize + k as isize,
                                        h,
                                    ) % rs)
                                        * rowlen
                                });
                                for k in 0..ns {
                                    let j = step(k);
                                    for (u, qs) in units.iter().enumerate() {
                                        let mut out = [(bias, bias); 2];
                                        for (n, &q) in qs.iter().enumerate() {
                                            let (mut lo, mut hi) = (bias, bias);
                                            for t in 0..half + 1 {
                                                let x = ld(ring, wr[2 * t] + q * w + j);
                                                // The second row of the last pair has tap 0:
                                                // any row will do.
                                                let y = if 2 * t + 1 < FW {
                                                    ld(ring, wr[2 * t + 1] + q * w + j)
                                                } else {
                                                    x
                                                };
                                                lo = $dp(lo, _mm512_unpacklo_epi16(x, y), cp[t]);
                                                hi = $dp(hi, _mm512_unpackhi_epi16(x, y), cp[t]);
                                            }
                                            out[n] = (lo, hi);
                                        }
                                        round_unit!(v, u, &out[..qs.len()], &mut s.vg[0], PAD + j);
                                    }
                                }
                            }
                            for vh in s.vg.iter_mut().take(if group { G } else { 1 }) {
                                for row in vh.iter_mut() {
                                    super::pad(row, w, half);
                                }
                                $row::<FW>(vh, w, &cp, &cq, table, egl, &mut sums, &mut acc);
                            }
                        }
                        i += if group { 2 * G } else { 1 };
                    }
                    let mut lanes = [0i64; 8];
                    // SAFETY: `lanes` is 64 writable bytes; AVX-512F is enabled.
                    unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), sums.num_non_log) };
                    acc.num_non_log = lanes.iter().sum::<i64>();
                    acc.den_non_log = sums.den_non_log;
                    acc
                }
            };
        }

        fused_row!(row_plain, "avx2,avx512f,avx512bw,avx512vl", dp_plain);
        fused_row!(
            row_vnni,
            "avx2,avx512f,avx512bw,avx512vl,avx512vnni",
            dp_vnni
        );
        fused_statistic!(
            statistic,
            "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl",
            dp_plain,
            row_plain
        );
        fused_statistic!(
            statistic_vnni,
            "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl,avx512vnni",
            dp_vnni,
            row_vnni
        );
    }

    /// `subsample_rd_8` / `subsample_rd_16` (see [`super::subsample`]).
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2")]
    pub(super) fn subsample<const FW: usize>(
        f: &[u16; FW],
        r: Img<'_>,
        d: Img<'_>,
        v: Shift,
        s: &mut Scratch,
        out_r: &mut [u16],
        out_d: &mut [u16],
        wide: bool,
    ) {
        let (w, h) = (r.w, r.h);
        let (ow, oh) = (w / 2, h / 2);
        let half = FW / 2;
        assert!(fits(f, w) && FW <= 17 && half <= PAD);
        // The 512-bit passes need one 32-column block.
        let wide = wide && w >= 2 * B;
        let cp = pairs(f);
        for vh in &mut s.vh {
            vh.resize(w + 2 * PAD + 2 * B, 0);
        }
        let bias = _mm256_set1_epi32(i32::MIN);
        let off = _mm256_set1_epi16(i16::MIN);
        let (vr, vs) = (
            _mm256_set1_epi32(v.round as i32),
            _mm_cvtsi32_si128(v.shift as i32),
        );
        let m16 = _mm256_set1_epi32(0xffff);
        let r15 = _mm256_set1_epi32(32768);
        let full = w / B * B;
        for oi in 0..oh {
            let i = 2 * oi;
            for (img, vh, out) in [(r, 0, &mut *out_r), (d, 1, &mut *out_d)] {
                let rows = img.taps::<FW>(i);
                let vh = &mut s.vh[vh];
                // The wide pass does the whole row (then j = w), else 16 columns a step.
                let mut j = 0;
                if wide {
                    // SAFETY: `wide` is true only in compute_avx512 (Isa::Avx512 checked).
                    unsafe { wide512::subsample_vpass::<FW>(&rows, w, f, v.round, v.shift, vh) };
                    j = w;
                }
                while j < w {
                    let (mut lo, mut hi) = (bias, bias);
                    for t in 0..half + 1 {
                        // SAFETY: AVX2 is enabled in this function.
                        let x = _mm256_xor_si256(unsafe { ldu(rows[2 * t], j) }, off);
                        let y = if 2 * t + 1 < FW {
                            _mm256_xor_si256(unsafe { ldu(rows[2 * t + 1], j) }, off)
                        } else {
                            x
                        };
                        lo = _mm256_add_epi32(
                            lo,
                            _mm256_madd_epi16(_mm256_unpacklo_epi16(x, y), cp[t]),
                        );
                        hi = _mm256_add_epi32(
                            hi,
                            _mm256_madd_epi16(_mm256_unpackhi_epi16(x, y), cp[t]),
                        );
                    }
                    // ((t + round) >> shift) as u16 (t + round < 2^32).
                    let g =
                        |x| _mm256_and_si256(_mm256_srl_epi32(_mm256_add_epi32(x, vr), vs), m16);
                    unsafe { st(vh, PAD + j, pack_off(g(lo), g(hi))) };
                    if j + B == w {
                        break;
                    }
                    j = (j + B).min(w - B);
                }
                pad(vh, w, half);
                let orow = &mut out[oi * ow..oi * ow + ow];
                let done = if wide {
                    // SAFETY: as above.
                    unsafe { wide512::subsample_hpass::<FW>(vh, full, f, orow) }
                } else {
                    0
                };
                for j0 in (done..full).step_by(B) {
                    // SAFETY: AVX2 is enabled in this function.
                    let e = hpass_even::<FW>(vh, j0, &cp);
                    // (sum + 32768) >> 16, eight u16 in column order.
                    let e = _mm256_srli_epi32(_mm256_add_epi32(e, r15), 16);
                    let p = _mm256_permute4x64_epi64(_mm256_packus_epi32(e, e), 0b1000);
                    unsafe { st16x8(orow, j0 / 2, _mm256_castsi256_si128(p)) };
                }
                for oj in full / 2..ow {
                    orow[oj] = ((hcol(f, vh, 2 * oj) + 32768) >> 16) as u16;
                }
            }
        }
    }
}

/// Check what [`compute`] needs: equal geometry and depth, 8..=16 bits, at least
/// [`super::MIN_WIDTH`] x [`super::MIN_HEIGHT`], planes long enough for their stride, a valid gain limit.
pub fn check(r: &Plane<'_>, d: &Plane<'_>, p: &VifParams) -> Result<()> {
    super::check_pair(r, d)?;
    p.validate()
}

/// [`check`], then [`compute`].
pub fn try_compute(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> Result<VifAccum> {
    check(&r, &d, p)?;
    Ok(compute(r, d, p))
}

/// The VIF accumulators of one frame pair, as libvmaf 3.2.0's `integer_vif` extractor computes
/// them (plain C path).
///
/// # Panics
/// If the planes break what [`check`] checks (the engine checks first; [`try_compute`] returns
/// the error instead). Samples above `2^bpc - 1` do not panic but give meaningless results.
pub fn compute(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    compute_with(r, d, p, Isa::detected())
}

/// [`compute`] with the build of the kernels chosen by the caller (the parity tests run every
/// build the CPU supports; the results are the same integers).
///
/// # Panics
/// As [`compute`], and if this CPU cannot run `isa` ([`Isa::supported`]).
#[doc(hidden)]
pub fn compute_with(r: Plane<'_>, d: Plane<'_>, p: &VifParams, isa: Isa) -> VifAccum {
    if let Err(e) = check(&r, &d, p) {
        panic!("vif::compute: {e}");
    }
    assert!(
        isa.supported(),
        "vif::compute_with: {isa:?} is not supported by this CPU"
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compute_avx2 only requires the CPU features of Isa::Avx2, checked above.
        Isa::Avx2 => unsafe { compute_avx2(r, d, p) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compute_avx512 only requires the CPU features of Isa::Avx512, checked above.
        Isa::Avx512 => unsafe { compute_avx512(r, d, p) },
        _ => compute_inner(r, d, p, false, false),
    }
}

/// [`compute_inner`] compiled for AVX2 (the integer row loops vectorise over 8 lanes). Floating
/// point is unaffected: AVX2 does not include FMA, and Rust never contracts `a * b + c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
unsafe fn compute_avx2(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    compute_inner(r, d, p, true, false)
}

/// [`compute_inner`] compiled for AVX-512 (F, BW, VL), with the 512-bit filter passes of the
/// explicit kernels. Floating point is unaffected: `avx512f` implies FMA in Rust, but rustc
/// never contracts `a * b + c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl")]
unsafe fn compute_avx512(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    compute_inner(r, d, p, true, true)
}

/// The whole computation, inlined into each instruction-set variant.
#[inline(always)]
///
/// `fast`: use the explicit AVX2 kernels (only from [`compute_avx2`] and [`compute_avx512`]);
/// `wide`: with their 512-bit filter passes (only from [`compute_avx512`]).
fn compute_inner(r: Plane<'_>, d: Plane<'_>, p: &VifParams, fast: bool, wide: bool) -> VifAccum {
    let (w, h, bpc) = (r.width, r.height, r.bpc);
    let egl = p.enhn_gain_limit;
    // The buffers of the last call on this thread, reused when the width is the same (taken out
    // of the cell for the call, so a nested call would simply allocate its own). Every element
    // that is read has been written earlier in the same call (the scales already share them).
    let Workspace {
        mut s,
        img: [mut r1, mut d1, mut r2, mut d2, mut r3, mut d3],
        ..
    } = match WORKSPACE.with(|c| c.take()) {
        Some(ws) if ws.w == w => *ws,
        _ => Workspace {
            w,
            s: Scratch::new(w),
            img: Default::default(),
        },
    };
    let mut acc = VifAccum::default();

    let (r0, d0) = (Img::of(&r), Img::of(&d));
    let b = bpc as u32;

    // Scale 0: vif_statistic_8 for 8-bit content, vif_statistic_16 otherwise (vertical mu shift
    // bpc, square shift 2 * (bpc - 8)).
    acc.scales[0] = statistic_any(
        fast,
        wide,
        &FILTER_0,
        r0,
        d0,
        if bpc == 8 {
            Vertical::Eight
        } else {
            Vertical::Sixteen {
                mu: Shift::new(b),
                sq: Shift::new(2 * (b - 8)),
            }
        },
        egl,
        &mut s,
    );

    // Scales 1..3 images, compact.
    let (w1, h1) = (w / 2, h / 2);
    let (w2, h2) = (w1 / 2, h1 / 2);
    let (w3, h3) = (w2 / 2, h2 / 2);
    for (v, n) in [(&mut r1, w1 * h1), (&mut d1, w1 * h1)]
        .into_iter()
        .chain([(&mut r2, w2 * h2), (&mut d2, w2 * h2)])
        .chain([(&mut r3, w3 * h3), (&mut d3, w3 * h3)])
    {
        v.resize(n, 0);
    }
    let cimg = Img::compact;
    let s16 = Shift::new(16);
    let v16 = Vertical::Sixteen { mu: s16, sq: s16 };

    // subsample_rd_8 (8-bit) / subsample_rd_16 at scale 0: vertical shift bpc.
    subsample_any(
        fast,
        wide,
        &FILTER_1,
        r0,
        d0,
        Shift::new(b),
        &mut s,
        &mut r1,
        &mut d1,
    );
    acc.scales[1] = statistic_any(
        fast,
        wide,
        &FILTER_1,
        cimg(&r1, w1, h1),
        cimg(&d1, w1, h1),
        v16,
        egl,
        &mut s,
    );
    subsample_any(
        fast,
        wide,
        &FILTER_2,
        cimg(&r1, w1, h1),
        cimg(&d1, w1, h1),
        s16,
        &mut s,
        &mut r2,
        &mut d2,
    );
    acc.scales[2] = statistic_any(
        fast,
        wide,
        &FILTER_2,
        cimg(&r2, w2, h2),
        cimg(&d2, w2, h2),
        v16,
        egl,
        &mut s,
    );
    subsample_any(
        fast,
        wide,
        &FILTER_3,
        cimg(&r2, w2, h2),
        cimg(&d2, w2, h2),
        s16,
        &mut s,
        &mut r3,
        &mut d3,
    );
    acc.scales[3] = statistic_any(
        fast,
        wide,
        &FILTER_3,
        cimg(&r3, w3, h3),
        cimg(&d3, w3, h3),
        v16,
        egl,
        &mut s,
    );
    WORKSPACE.with(|c| {
        c.set(Some(Box::new(Workspace {
            w,
            s,
            img: [r1, d1, r2, d2, r3, d3],
        })))
    });
    acc
}

/// The buffers of one [`compute`] at width `w`: the scratch rows and the images of scales 1..3
/// (reference, distorted, per scale).
struct Workspace {
    w: usize,
    s: Scratch,
    img: [Vec<u16>; 6],
}

thread_local! {
    /// The [`Workspace`] of the last [`compute`] on this thread (about 3 MB at 1080p).
    static WORKSPACE: std::cell::Cell<Option<Box<Workspace>>> =
        const { std::cell::Cell::new(None) };
}

thread_local! {
    /// Set by [`compute_with_avx512_no_vnni`] for the duration of its call.
    static NO_VNNI: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`compute_with`] with [`Isa::Avx512`], but its statistic kernel built without AVX-512 VNNI
/// (`vpmaddwd` then `vpaddd` instead of `vpdpwssd`), which a CPU with VNNI never runs otherwise:
/// for the parity tests.
///
/// # Panics
/// As [`compute_with`].
#[doc(hidden)]
pub fn compute_with_avx512_no_vnni(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            NO_VNNI.with(|c| c.set(false));
        }
    }
    NO_VNNI.with(|c| c.set(true));
    let _reset = Reset;
    compute_with(r, d, p, Isa::Avx512)
}

impl VifScaleAccum {
    /// libvmaf's `num[0]` and `den[0]`: double arithmetic, stored as float.
    pub fn num_den(&self) -> (f32, f32) {
        let num = self.num_log as f64 / 2048.0
            + (self.den_non_log as f64 - (self.num_non_log as f64 / 16384.0) / 65025.0);
        let den = self.den_log as f64 / 2048.0 + self.den_non_log as f64;
        (num as f32, den as f32)
    }

    /// `integer_vif_scaleN`: libvmaf's `num / den` in float, widened to double.
    pub fn score(&self) -> f64 {
        let (num, den) = self.num_den();
        (num / den) as f64
    }
}

impl VifAccum {
    /// `integer_vif_scale0..3` (libvmaf's `VMAF_integer_feature_vif_scaleN_score`).
    pub fn scores(&self) -> [f64; 4] {
        self.scales.map(|s| s.score())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A literal, scalar transcription of libvmaf 3.2.0's C loops (`extract`, `subsample_rd_8/16`,
    /// `decimate_and_pad`, `pad_top_and_bottom`, `vif_statistic_8/16`): frame buffers with
    /// mirrored rows above and below, temporary rows with mirrored columns, the C types with C's
    /// wrap-around for unsigned sums, and the per-pixel branches. It shares nothing with the
    /// optimised code but the filter constants and the log table, and checks it where there
    /// are no goldens (other depths, sizes, strides, synthetic extremes).
    mod literal {
        use super::super::*;

        const FILTERS: [&[u16]; 4] = [&FILTER_0, &FILTER_1, &FILTER_2, &FILTER_3];
        const ROWS_PAD: usize = 8;
        const COLS_PAD: usize = 8;

        /// A frame buffer: `ROWS_PAD` rows above and below row 0..h, `stride` samples a row.
        struct Frame {
            data: Vec<u16>,
            stride: usize,
        }

        impl Frame {
            fn idx(&self, y: isize, x: usize) -> usize {
                ((ROWS_PAD as isize + y) as usize) * self.stride + x
            }
            fn get(&self, y: isize, x: usize) -> u16 {
                self.data[self.idx(y, x)]
            }
            /// libvmaf's `pad_top_and_bottom`.
            fn pad_top_and_bottom(&mut self, h: usize, fwidth: usize) {
                let s = self.stride;
                for i in 1..=(fwidth / 2) as isize {
                    let (dst, src) = (self.idx(-i, 0), self.idx(i, 0));
                    self.data.copy_within(src..src + s, dst);
                    let (dst, src) = (
                        self.idx(h as isize - 1 + i, 0),
                        self.idx(h as isize - 1 - i, 0),
                    );
                    self.data.copy_within(src..src + s, dst);
                }
            }
        }

        /// libvmaf's `PADDING_SQ_DATA(_2)` on one temporary row (`COLS_PAD` before column 0).
        fn pad_cols<T: Copy>(t: &mut [T], w: usize, half: usize) {
            for f in 1..=half {
                t[COLS_PAD - f] = t[COLS_PAD + f];
                t[COLS_PAD + w - 1 + f] = t[COLS_PAD + w - 1 - f];
            }
        }

        pub fn compute(r: &Plane<'_>, d: &Plane<'_>, egl: f64) -> VifAccum {
            let (mut w, mut h, bpc) = (r.width, r.height, r.bpc as u32);
            let stride = w;
            let mk = |p: &Plane<'_>| {
                let mut f = Frame {
                    data: vec![0; (h + 2 * ROWS_PAD) * stride],
                    stride,
                };
                for y in 0..h {
                    let i = f.idx(y as isize, 0);
                    f.data[i..i + w].copy_from_slice(p.row(y));
                }
                f.pad_top_and_bottom(h, FILTERS[0].len());
                f
            };
            let (mut rf, mut df) = (mk(r), mk(d));
            let mut acc = VifAccum::default();
            for scale in 0..4 {
                if scale > 0 {
                    subsample(&mut rf, &mut df, w, h, scale, bpc);
                    w /= 2;
                    h /= 2;
                }
                acc.scales[scale] = statistic(&rf, &df, w, h, scale, bpc, egl);
            }
            acc
        }

        fn subsample(rf: &mut Frame, df: &mut Frame, w: usize, h: usize, scale: usize, bpc: u32) {
            let filt = FILTERS[scale];
            let (fw, half) = (filt.len(), filt.len() / 2);
            let eight = bpc == 8 && scale == 1;
            let (round_vp, shift_vp) = if scale == 1 {
                (1u32 << (bpc - 1), bpc)
            } else {
                (32768, 16)
            };
            let mut mu1 = vec![0u16; w * h];
            let mut mu2 = vec![0u16; w * h];
            let mut tr = vec![0u32; w + 2 * COLS_PAD];
            let mut td = vec![0u32; w + 2 * COLS_PAD];
            for i in 0..h {
                for j in 0..w {
                    let (mut ar, mut ad) = (0u32, 0u32);
                    for (fi, &c) in filt.iter().enumerate() {
                        let y = i as isize - half as isize + fi as isize;
                        ar = ar.wrapping_add((c as u32).wrapping_mul(rf.get(y, j) as u32));
                        ad = ad.wrapping_add((c as u32).wrapping_mul(df.get(y, j) as u32));
                    }
                    let (vr, vd) = (
                        ar.wrapping_add(round_vp) >> shift_vp,
                        ad.wrapping_add(round_vp) >> shift_vp,
                    );
                    // subsample_rd_8 keeps the u32, subsample_rd_16 casts to uint16_t.
                    tr[COLS_PAD + j] = if eight { vr } else { vr as u16 as u32 };
                    td[COLS_PAD + j] = if eight { vd } else { vd as u16 as u32 };
                }
                pad_cols(&mut tr, w, half);
                pad_cols(&mut td, w, half);
                for j in 0..w {
                    let (mut ar, mut ad) = (0u32, 0u32);
                    for fj in 0..fw {
                        let c = filt[fj] as u32;
                        let x = COLS_PAD + j + fj - half;
                        ar = ar.wrapping_add(c.wrapping_mul(tr[x]));
                        ad = ad.wrapping_add(c.wrapping_mul(td[x]));
                    }
                    mu1[i * w + j] = (ar.wrapping_add(32768) >> 16) as u16;
                    mu2[i * w + j] = (ad.wrapping_add(32768) >> 16) as u16;
                }
            }
            // decimate_and_pad: pad width is that of filter scale - 1 (libvmaf passes the
            // subsample's own scale index, 0 for subsample_rd_8).
            for i in 0..h / 2 {
                for j in 0..w / 2 {
                    let (ir, id) = (rf.idx(i as isize, j), df.idx(i as isize, j));
                    rf.data[ir] = mu1[(2 * i) * w + 2 * j];
                    df.data[id] = mu2[(2 * i) * w + 2 * j];
                }
            }
            rf.pad_top_and_bottom(h / 2, FILTERS[scale - 1].len());
            df.pad_top_and_bottom(h / 2, FILTERS[scale - 1].len());
        }

        fn log2_32(t: &[u16; 65537], temp: u32) -> i32 {
            let k = 16 - temp.leading_zeros() as i32;
            t[(temp >> k) as usize] as i32 + 2048 * k
        }

        fn log2_64(t: &[u16; 65537], temp: u64) -> i32 {
            assert!(temp >= 0x20000);
            let k = 48 - temp.leading_zeros() as i32;
            t[(temp >> k) as usize] as i32 + 2048 * k
        }

        fn statistic(
            rf: &Frame,
            df: &Frame,
            w: usize,
            h: usize,
            scale: usize,
            bpc: u32,
            egl: f64,
        ) -> VifScaleAccum {
            let table = log2_table();
            let filt = FILTERS[scale];
            let (fw, half) = (filt.len(), filt.len() / 2);
            let eight = bpc == 8 && scale == 0;
            let (round_vp, shift_vp, round_sq, shift_sq) = if scale == 0 {
                let sq = (bpc - 8) * 2;
                (
                    1u32 << (bpc - 1),
                    bpc,
                    if bpc == 8 { 0 } else { 1u64 << (sq - 1) },
                    sq,
                )
            } else {
                (32768, 16, 32768, 16)
            };
            let n = w + 2 * COLS_PAD;
            let (mut tm1, mut tm2) = (vec![0u32; n], vec![0u32; n]);
            let (mut txx, mut tyy, mut txy) = (vec![0u32; n], vec![0u32; n], vec![0u32; n]);
            let mut a = VifScaleAccum::default();
            for i in 0..h {
                for j in 0..w {
                    let (mut m1, mut m2) = (0u32, 0u32);
                    let (mut xx8, mut yy8, mut xy8) = (0u32, 0u32, 0u32);
                    let (mut xx, mut yy, mut xy) = (0u64, 0u64, 0u64);
                    for (fi, &c) in filt.iter().enumerate() {
                        let y = i as isize - half as isize + fi as isize;
                        let (pr, pd) = (rf.get(y, j) as u32, df.get(y, j) as u32);
                        let (cr, cd) = ((c as u32).wrapping_mul(pr), (c as u32).wrapping_mul(pd));
                        m1 = m1.wrapping_add(cr);
                        m2 = m2.wrapping_add(cd);
                        if eight {
                            xx8 = xx8.wrapping_add(cr.wrapping_mul(pr));
                            yy8 = yy8.wrapping_add(cd.wrapping_mul(pd));
                            xy8 = xy8.wrapping_add(cr.wrapping_mul(pd));
                        } else {
                            xx = xx.wrapping_add(cr as u64 * pr as u64);
                            yy = yy.wrapping_add(cd as u64 * pd as u64);
                            xy = xy.wrapping_add(cr as u64 * pd as u64);
                        }
                    }
                    let x = COLS_PAD + j;
                    if eight {
                        tm1[x] = m1.wrapping_add(128) >> 8;
                        tm2[x] = m2.wrapping_add(128) >> 8;
                        (txx[x], tyy[x], txy[x]) = (xx8, yy8, xy8);
                    } else {
                        tm1[x] = (m1.wrapping_add(round_vp) >> shift_vp) as u16 as u32;
                        tm2[x] = (m2.wrapping_add(round_vp) >> shift_vp) as u16 as u32;
                        txx[x] = (xx.wrapping_add(round_sq) >> shift_sq) as u32;
                        tyy[x] = (yy.wrapping_add(round_sq) >> shift_sq) as u32;
                        txy[x] = (xy.wrapping_add(round_sq) >> shift_sq) as u32;
                    }
                }
                for t in [&mut tm1, &mut tm2, &mut txx, &mut tyy, &mut txy] {
                    pad_cols(t, w, half);
                }
                for j in 0..w {
                    let (mut m1, mut m2) = (0u32, 0u32);
                    let (mut xx, mut yy, mut xy) = (0u64, 0u64, 0u64);
                    for fj in 0..fw {
                        let c = filt[fj] as u32;
                        let x = COLS_PAD + j + fj - half;
                        m1 = m1.wrapping_add(c.wrapping_mul(tm1[x]));
                        m2 = m2.wrapping_add(c.wrapping_mul(tm2[x]));
                        xx = xx.wrapping_add(c as u64 * txx[x] as u64);
                        yy = yy.wrapping_add(c as u64 * tyy[x] as u64);
                        xy = xy.wrapping_add(c as u64 * txy[x] as u64);
                    }
                    let sq =
                        |a: u32, b: u32| ((a as u64 * b as u64).wrapping_add(1 << 31) >> 32) as u32;
                    let (mu1_sq, mu2_sq, mu1_mu2) = (sq(m1, m1), sq(m2, m2), sq(m1, m2));
                    let xx_filt = (xx.wrapping_add(32768) >> 16) as u32;
                    let yy_filt = (yy.wrapping_add(32768) >> 16) as u32;
                    let xy_filt = (xy.wrapping_add(32768) >> 16) as u32;
                    let sigma1_sq = xx_filt.wrapping_sub(mu1_sq) as i32;
                    let mut sigma2_sq = yy_filt.wrapping_sub(mu2_sq) as i32;
                    let sigma12 = xy_filt.wrapping_sub(mu1_mu2) as i32;
                    sigma2_sq = sigma2_sq.max(0);
                    if sigma1_sq >= SIGMA_NSQ {
                        a.den_log +=
                            (log2_32(table, (SIGMA_NSQ + sigma1_sq) as u32) - 2048 * 17) as i64;
                        if sigma12 > 0 && sigma2_sq > 0 {
                            let eps = 65536.0 * 1.0e-10;
                            let mut g = sigma12 as f64 / (sigma1_sq as f64 + eps);
                            let mut sv_sq = (sigma2_sq as f64 - g * sigma12 as f64) as i32;
                            sv_sq = sv_sq.max(0);
                            g = if g < egl { g } else { egl };
                            let numer1 = (sv_sq + SIGMA_NSQ) as u32;
                            let numer1_tmp = (g * g * sigma1_sq as f64) as i64 + numer1 as i64;
                            a.num_log += (log2_64(table, numer1_tmp as u64)
                                - log2_64(table, numer1 as u64))
                                as i64;
                        }
                    } else {
                        a.num_non_log += sigma2_sq as i64;
                        a.den_non_log += 1;
                    }
                }
            }
            a
        }
    }

    /// xorshift64*: deterministic test content.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u32) -> u32 {
            ((self.next() >> 32) % n as u64) as u32
        }
    }

    /// A natural-ish pair: smooth reference with texture; the distorted one is a contrast
    /// change (gain above and below 1, which exercises the gain limit), blur-free noise and an
    /// offset, clamped to `bpc` bits.
    fn natural(w: usize, h: usize, bpc: u8, seed: u64) -> (Vec<u16>, Vec<u16>) {
        let max = (1u32 << bpc) - 1;
        let mut rng = Rng(seed | 1);
        let (fx, fy) = (
            0.05 + rng.below(100) as f64 / 500.0,
            0.03 + rng.below(100) as f64 / 700.0,
        );
        let mut r = vec![0u16; w * h];
        let mut d = vec![0u16; w * h];
        for y in 0..h {
            for x in 0..w {
                let base = 0.5
                    + 0.3 * (x as f64 * fx).sin() * (y as f64 * fy).cos()
                    + 0.15 * ((x + 2 * y) as f64 * 0.31).sin();
                let tex =
                    (rng.below(1000) as f64 / 1000.0 - 0.5) * if x < w / 2 { 0.2 } else { 0.02 };
                // A flat corner (non-log pixels) next to textured areas.
                let flat = x >= w * 3 / 4 && y >= h * 2 / 3;
                let v = if flat {
                    max / 3
                } else {
                    ((base + tex).clamp(0.0, 1.0) * max as f64) as u32
                };
                let gain = if y < h / 2 { 1.6 } else { 0.7 };
                let noise = (rng.below(1000) as f64 / 1000.0 - 0.5) * 0.05 * max as f64;
                let dv = ((v as f64 - max as f64 / 2.0) * gain
                    + max as f64 / 2.0
                    + noise
                    + 0.01 * max as f64)
                    .clamp(0.0, max as f64) as u32;
                r[y * w + x] = v.min(max) as u16;
                d[y * w + x] = dv.min(max) as u16;
            }
        }
        (r, d)
    }

    /// Extreme patterns of 0 and 2^bpc - 1.
    fn pattern(w: usize, h: usize, bpc: u8, kind: usize) -> Vec<u16> {
        let max = ((1u32 << bpc) - 1) as u16;
        (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                let on = match kind {
                    0 => false,                    // all 0
                    1 => true,                     // all max
                    2 => (x + y) % 2 == 0,         // checkerboard
                    3 => (x + y) % 2 == 1,         // inverted checkerboard
                    4 => (x / 3 + y / 5) % 2 == 0, // blocks
                    _ => x % 2 == 0,               // vertical stripes
                };
                if on { max } else { 0 }
            })
            .collect()
    }

    fn plane(data: &[u16], w: usize, h: usize, bpc: u8) -> Plane<'_> {
        Plane::from_slice(data, w, h, bpc)
    }

    /// Optimised (dispatched and portable builds) against the literal transcription.
    #[allow(clippy::too_many_arguments)]
    fn same_as_literal(
        r: &[u16],
        d: &[u16],
        w: usize,
        h: usize,
        bpc: u8,
        egl: f64,
        what: &str,
        bad: &mut Vec<String>,
    ) -> VifAccum {
        let p = VifParams {
            enhn_gain_limit: egl,
        };
        let (rp, dp) = (plane(r, w, h, bpc), plane(d, w, h, bpc));
        let want = literal::compute(&rp, &dp, egl);
        let got = compute(rp, dp, &p);
        let portable = compute_inner(rp, dp, &p, false, false);
        if got != want {
            bad.push(format!(
                "{what} {w}x{h} {bpc}-bit egl {egl}: got {got:?}, want {want:?}"
            ));
        }
        if portable != want {
            bad.push(format!(
                "{what} {w}x{h} {bpc}-bit egl {egl} (portable): got {portable:?}, want {want:?}"
            ));
        }
        want
    }

    fn finish(bad: Vec<String>, checked: usize) {
        assert!(checked > 0);
        assert!(
            bad.is_empty(),
            "{} of {checked} cases differ:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }

    #[test]
    fn matches_literal_on_natural_content_every_depth_and_odd_sizes() {
        let mut bad = vec![];
        let mut n = 0;
        for (i, &(w, h)) in [
            (33, 33),
            (34, 35),
            (47, 39),
            (64, 64),
            (97, 61),
            (130, 41),
            (161, 100),
        ]
        .iter()
        .enumerate()
        {
            for bpc in 8..=16u8 {
                let (r, d) = natural(w, h, bpc, 1000 + i as u64 * 17 + bpc as u64);
                for egl in [100.0, 1.0, 1.3] {
                    let acc = same_as_literal(&r, &d, w, h, bpc, egl, "natural", &mut bad);
                    // The content reaches every branch at scale 0.
                    let s0 = acc.scales[0];
                    assert!(
                        s0.num_log > 0 && s0.den_log > 0 && s0.den_non_log > 0,
                        "{w}x{h} {bpc}: {s0:?}"
                    );
                    n += 1;
                }
            }
        }
        finish(bad, n);
    }

    #[test]
    fn matches_literal_on_max_difference_patterns() {
        let mut bad = vec![];
        let mut n = 0;
        for bpc in 8..=16u8 {
            for (w, h) in [(33, 33), (40, 37)] {
                for kr in 0..6 {
                    for kd in 0..6 {
                        let (r, d) = (pattern(w, h, bpc, kr), pattern(w, h, bpc, kd));
                        same_as_literal(
                            &r,
                            &d,
                            w,
                            h,
                            bpc,
                            100.0,
                            &format!("pattern {kr}/{kd}"),
                            &mut bad,
                        );
                        n += 1;
                    }
                }
            }
        }
        finish(bad, n);
    }

    #[test]
    fn flat_frames_score_one() {
        for bpc in 8..=16u8 {
            let max = ((1u32 << bpc) - 1) as u16;
            for (vr, vd) in [(0, 0), (max / 3, max / 3), (0, max), (max, 0)] {
                let (w, h) = (45, 38);
                let (r, d) = (vec![vr; w * h], vec![vd; w * h]);
                let acc = compute(
                    plane(&r, w, h, bpc),
                    plane(&d, w, h, bpc),
                    &VifParams::default(),
                );
                // No variance anywhere: every pixel is "non-log" with sigma2_sq = 0, so num = den =
                // the pixel count of the scale.
                let (mut sw, mut sh) = (w, h);
                for (s, a) in acc.scales.iter().enumerate() {
                    let want = VifScaleAccum {
                        num_log: 0,
                        den_log: 0,
                        num_non_log: 0,
                        den_non_log: (sw * sh) as i64,
                    };
                    assert_eq!(*a, want, "{bpc}-bit {vr}/{vd} scale {s}");
                    (sw, sh) = (sw / 2, sh / 2);
                }
                assert_eq!(acc.scores(), [1.0; 4]);
            }
        }
    }

    #[test]
    fn strided_planes_equal_compact() {
        let (w, h) = (71, 50);
        for bpc in [8u8, 10, 12, 16] {
            let (r, d) = natural(w, h, bpc, 77 + bpc as u64);
            let want = compute(
                plane(&r, w, h, bpc),
                plane(&d, w, h, bpc),
                &VifParams::default(),
            );
            for stride in [w + 1, w + 13, 2 * w + 5] {
                // Padding filled with maximal values: must not be read.
                let max = ((1u32 << bpc) - 1) as u16;
                let mut rs = vec![max; stride * (h - 1) + w];
                let mut ds = vec![max; stride * (h - 1) + w];
                for y in 0..h {
                    rs[y * stride..y * stride + w].copy_from_slice(&r[y * w..y * w + w]);
                    ds[y * stride..y * stride + w].copy_from_slice(&d[y * w..y * w + w]);
                }
                let pr = Plane {
                    data: &rs,
                    width: w,
                    height: h,
                    stride,
                    bpc,
                };
                let pd = Plane {
                    data: &ds,
                    width: w,
                    height: h,
                    stride,
                    bpc,
                };
                assert_eq!(
                    compute(pr, pd, &VifParams::default()),
                    want,
                    "{bpc}-bit stride {stride}"
                );
            }
            // Different strides for the two planes.
            let mut ds = vec![0u16; (w + 3) * h];
            for y in 0..h {
                ds[y * (w + 3)..y * (w + 3) + w].copy_from_slice(&d[y * w..y * w + w]);
            }
            let pd = Plane {
                data: &ds,
                width: w,
                height: h,
                stride: w + 3,
                bpc,
            };
            assert_eq!(
                compute(plane(&r, w, h, bpc), pd, &VifParams::default()),
                want
            );
        }
    }

    #[test]
    fn every_depth_at_a_modest_size_runs_without_overflow() {
        // Overflow checks are on in the dev profile: a sum that leaves its type panics here.
        let (w, h) = (256, 144);
        for bpc in 8..=16u8 {
            let (r, d) = natural(w, h, bpc, 5 + bpc as u64);
            let s = compute(
                plane(&r, w, h, bpc),
                plane(&d, w, h, bpc),
                &VifParams::default(),
            )
            .scores();
            for (i, v) in s.iter().enumerate() {
                assert!(
                    v.is_finite() && *v > 0.0 && *v < 2.0,
                    "{bpc}-bit scale {i}: {v}"
                );
            }
            for kind in 2..6 {
                let (r, d) = (pattern(w, h, bpc, kind), pattern(w, h, bpc, (kind + 1) % 6));
                compute(
                    plane(&r, w, h, bpc),
                    plane(&d, w, h, bpc),
                    &VifParams::default(),
                );
            }
        }
    }

    #[test]
    fn accumulator_bounds() {
        use bounds::*;
        let t = log2_table();
        // The per-pixel constants follow from the table.
        assert_eq!(
            log2_32(t, ((1 << 17) + SIGMA_SQ_MAX) as u32) as i64 - 2048 * 17,
            DEN_LOG_PER_PIXEL
        );
        let num_max = 100.0f64 * 100.0 * SIGMA_SQ_MAX as f64 + (SIGMA_SQ_MAX + (1 << 17)) as f64;
        assert!(num_max < (1u64 << 45) as f64);
        assert!(
            log2_64(t, (1u64 << 45) - 1) as i64 - log2_64(t, 1 << 17) as i64 <= NUM_LOG_PER_PIXEL
        );
        // Totals at 16K fit in i64 with room to spare.
        for per_pixel in [NUM_LOG_PER_PIXEL, DEN_LOG_PER_PIXEL, SIGMA_SQ_MAX, 1] {
            assert!(
                per_pixel
                    .checked_mul(PIXELS_16K)
                    .is_some_and(|v| v < i64::MAX / 8)
            );
        }
        // Worst-case content at 16 bits (and 8): every term within its per-pixel bound.
        let (w, h) = (96, 80);
        for bpc in [8u8, 16] {
            let mut cases = vec![];
            for kr in 0..6 {
                for kd in 0..6 {
                    cases.push((pattern(w, h, bpc, kr), pattern(w, h, bpc, kd)));
                }
            }
            cases.push(natural(w, h, bpc, 3));
            for (r, d) in &cases {
                let acc = compute(
                    plane(r, w, h, bpc),
                    plane(d, w, h, bpc),
                    &VifParams::default(),
                );
                let (mut sw, mut sh) = (w as i64, h as i64);
                for a in acc.scales {
                    let (px, log_px) = (sw * sh, sw * sh - a.den_non_log);
                    assert!((0..=px).contains(&a.den_non_log));
                    assert!(
                        a.num_non_log >= 0 && a.num_non_log <= SIGMA_SQ_MAX * a.den_non_log,
                        "{a:?}"
                    );
                    assert!(
                        a.den_log >= 2048 * log_px && a.den_log <= DEN_LOG_PER_PIXEL * log_px,
                        "{a:?}"
                    );
                    assert!(
                        a.num_log >= 0 && a.num_log <= NUM_LOG_PER_PIXEL * log_px,
                        "{a:?}"
                    );
                    (sw, sh) = (sw / 2, sh / 2);
                }
            }
            // Flat reference, checkerboard distorted: the largest non-log variance there is.
            let (r, d) = (pattern(w, h, bpc, 0), pattern(w, h, bpc, 2));
            let a = compute(
                plane(&r, w, h, bpc),
                plane(&d, w, h, bpc),
                &VifParams::default(),
            )
            .scales[0];
            assert_eq!(a.den_non_log, (w * h) as i64);
            assert!(a.num_non_log > (SIGMA_SQ_MAX / 2) * a.den_non_log, "{a:?}");
        }
    }

    #[test]
    fn log2_table_matches_log2f() {
        let t = log2_table();
        // libvmaf's definition with the platform's log2f (glibc's on Linux, as libvmaf uses).
        let mut diff = vec![];
        for i in 32767..65536usize {
            let want = ((i as f32).log2() * 2048.0) as f64;
            if t[i] != want.round() as u16 {
                diff.push(i);
            }
        }
        assert!(
            diff.is_empty(),
            "entries differ from round(log2f(i) * 2048): {diff:?}"
        );
        assert_eq!(t[32768], 15 * 2048);
        assert_eq!(t[65535], 16 * 2048);
        assert!(t[..32767].iter().all(|&v| v == 0) && t[65536] == 0);
        assert!(t[32767..65536].windows(2).all(|p| p[0] <= p[1]));
    }

    #[test]
    fn log2_helpers() {
        let t = log2_table();
        for k in 17..31 {
            assert_eq!(log2_32(t, 1 << k), 2048 * k);
            assert_eq!(log2_64(t, 1 << k), 2048 * k);
        }
        assert_eq!(log2_64(t, 1 << 47), 2048 * 47);
    }

    #[test]
    fn scores_follow_libvmafs_float_steps() {
        let a = VifScaleAccum {
            num_log: 123_456_789,
            den_log: 223_456_789,
            num_non_log: 987_654_321_000,
            den_non_log: 4321,
        };
        let num =
            (123_456_789f64 / 2048.0 + (4321.0 - (987_654_321_000f64 / 16384.0) / 65025.0)) as f32;
        let den = (223_456_789f64 / 2048.0 + 4321.0) as f32;
        assert_eq!(a.num_den(), (num, den));
        assert_eq!(a.score(), (num / den) as f64);
        assert_ne!(
            a.score(),
            num as f64 / den as f64,
            "division must be in float"
        );
    }

    #[test]
    fn check_refuses_bad_input() {
        let (w, h) = (40, 40);
        let v = vec![0u16; w * h];
        let ok = plane(&v, w, h, 10);
        let p = VifParams::default();
        assert!(check(&ok, &ok, &p).is_ok());
        assert!(matches!(
            check(&plane(&v, w, h, 7), &plane(&v, w, h, 7), &p),
            Err(Error::BitDepth(7))
        ));
        assert!(matches!(
            check(&plane(&v, w, h, 17), &plane(&v, w, h, 17), &p),
            Err(Error::BitDepth(17))
        ));
        assert!(matches!(
            check(&ok, &plane(&v, w, h, 12), &p),
            Err(Error::Mismatch(_))
        ));
        assert!(matches!(
            check(&ok, &plane(&v, w - 1, h, 10), &p),
            Err(Error::Mismatch(_))
        ));
        let small = plane(&v, 32, 40, 10);
        assert!(matches!(
            check(&small, &small, &p),
            Err(Error::TooSmall { width: 32, .. })
        ));
        let short = Plane {
            data: &v[..w * h - 1],
            width: w,
            height: h,
            stride: w,
            bpc: 10,
        };
        assert!(matches!(check(&short, &short, &p), Err(Error::Geometry(_))));
        let narrow = Plane {
            data: &v,
            width: w,
            height: h,
            stride: w - 1,
            bpc: 10,
        };
        assert!(matches!(
            check(&narrow, &narrow, &p),
            Err(Error::Geometry(_))
        ));
        for egl in [0.5, 100.5, f64::NAN, -1.0] {
            assert!(
                check(
                    &ok,
                    &ok,
                    &VifParams {
                        enhn_gain_limit: egl
                    }
                )
                .is_err(),
                "{egl}"
            );
            assert!(
                try_compute(
                    ok,
                    ok,
                    &VifParams {
                        enhn_gain_limit: egl
                    }
                )
                .is_err()
            );
        }
        assert!(try_compute(small, small, &p).is_err());
        assert_eq!(try_compute(ok, ok, &p), Ok(compute(ok, ok, &p)));
        assert_eq!(VifParams::default().enhn_gain_limit, 100.0);
    }

    #[test]
    fn filters_sum_to_one_in_q16() {
        for f in [&FILTER_0[..], &FILTER_1, &FILTER_2, &FILTER_3] {
            assert_eq!(f.iter().map(|&c| c as u32).sum::<u32>(), 65536);
            assert!(f.iter().eq(f.iter().rev()), "symmetric");
        }
        // The largest off-centre tap, used in the folded-sum bounds.
        let off = [&FILTER_0[..], &FILTER_1, &FILTER_2, &FILTER_3]
            .iter()
            .flat_map(|f| f[..f.len() / 2].iter().copied())
            .max();
        assert_eq!(off, Some(16004));
    }
}
