//! CIEDE2000 (`ciede2000`), as libvmaf 3.2.0's feature `ciede` computes it, bit for bit.
//!
//! Source: libvmaf 3.2.0 `libvmaf/src/feature/ciede.c` (itself a port of av-metrics). Per pixel:
//! Y'CbCr (BT.709, limited range) to linear RGB, XYZ (D65), CIELAB, then the CIEDE2000 colour
//! difference with kL = 0.65, kC = 1, kH = 4. The frame score is `45 - 20 * log10(mean dE00)`.
//!
//! The C code mixes `float` and `double` on nearly every line; each step below keeps its types
//! (a `float` result of a `double` expression is rounded where C stores it) and calls the same
//! libm functions (`pow`, `powf`, `sqrt`, `sin`, `cos`, `exp`, `atan2`, `log10`).
//!
//! The frame sum is a sequential `double` sum of per-pixel `float` dE00 values in row-major
//! order: [`delta_e`] is the per-pixel map (pure, a GPU can reproduce it with the same libm
//! semantics), [`ciede`] the ordered reduction.
//!
//! Chroma: libvmaf up-samples 4:2:0 chroma by repetition (sample `(x/2, y/2)`) and reads 4:4:4
//! as is. Its 4:2:2 path is broken in 3.2.0 (it indexes the half-width chroma rows with the full
//! luma column, reading past each row into padding, and advances one chroma row per two luma
//! rows), so its 4:2:2 result depends on uninitialised buffer padding and is not reproducible.
//! For 4:2:2 we repeat chroma horizontally (sample `(x/2, y)`), the intent of its code.
//! Bit depths: libvmaf accepts 8, 10, 12, 16; the colour conversion's scale `2^(bpc-8)` is
//! applied to any depth from 8 to 16.

use std::f64::consts::PI;

use crate::error::{Error, Result};
use crate::picture::Plane;

use super::psnr::check_pair;

/// `powf(25., 7)` as a float: 25^7 = 6103515625 rounded to float (correctly rounded, as GCC
/// folds the constant call).
const POW_25_7_F32: f32 = 6_103_515_648.0;
/// `pow(25, 7)` in double (exact).
const POW_25_7_F64: f64 = 6_103_515_625.0;

/// A CIELAB colour, stored as floats like ciede.c's `LABColor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lab {
    pub l: f32,
    pub a: f32,
    pub b: f32,
}

fn get_h_prime(x: f32, y: f32) -> f32 {
    if x == 0.0 && y == 0.0 {
        return 0.0;
    }
    let mut hue = f64::from(x).atan2(f64::from(y)) as f32;
    if hue < 0.0 {
        hue = (f64::from(hue) + 2.0 * PI) as f32;
    }
    hue
}

fn get_delta_h_prime(c1: f32, c2: f32, h1: f32, h2: f32) -> f32 {
    if c1 == 0.0 || c2 == 0.0 {
        return 0.0;
    }
    if f64::from((h1 - h2).abs()) <= PI {
        return h2 - h1;
    }
    if h2 <= h1 {
        (f64::from(h2 - h1) + 2.0 * PI) as f32
    } else {
        (f64::from(h2 - h1) - 2.0 * PI) as f32
    }
}

fn get_upcase_h_bar_prime(h1: f32, h2: f32) -> f32 {
    if f64::from(h1 - h2).abs() > PI {
        ((f64::from(h1 + h2) + 2.0 * PI) / 2.0) as f32
    } else {
        (f64::from(h1 + h2) / 2.0) as f32
    }
}

fn get_upcase_t(hbp: f32) -> f32 {
    let h = f64::from(hbp);
    (1.0 - 0.17 * (h - PI / 6.0).cos()
        + 0.24 * (2.0 * h).cos()
        + 0.32 * (3.0 * h + PI / 30.0).cos()
        - 0.20 * (4.0 * h - 7.0 * PI / 20.0).cos()) as f32
}

fn radians_to_degrees(r: f32) -> f32 {
    (f64::from(r) * (180.0 / PI)) as f32
}

fn degrees_to_radians(d: f32) -> f32 {
    (f64::from(d) * (PI / 180.0)) as f32
}

fn get_r_sub_t(c_bar_prime: f32, upcase_h_bar_prime: f32) -> f32 {
    let degrees =
        ((f64::from(radians_to_degrees(upcase_h_bar_prime)) - 275.0) * (1.0 / 25.0)) as f32;
    let p7 = c_bar_prime.powf(7.0);
    // powf(degrees, 2) is degrees * degrees (GCC and LLVM both turn pow(x, 2) into x * x).
    let e = (60.0 * f64::from(-(degrees * degrees)).exp()) as f32;
    (-2.0 * f64::from(p7 / (p7 + POW_25_7_F32)).sqrt() * f64::from(degrees_to_radians(e)).sin())
        as f32
}

/// ciede.c `ciede2000()` with its default weights (kL = 0.65, kC = 1, kH = 4).
pub fn ciede2000(c1: Lab, c2: Lab) -> f32 {
    let (k_l, k_c, k_h) = (0.65f32, 1.0f32, 4.0f32);
    let sq = |v: f32| f64::from(v) * f64::from(v); // pow(v, 2) of a float, exact in double
    let delta_l_prime = c2.l - c1.l;
    let l_bar = (c1.l + c2.l) / 2.0;
    let ch1 = (sq(c1.a) + sq(c1.b)).sqrt() as f32;
    let ch2 = (sq(c2.a) + sq(c2.b)).sqrt() as f32;
    let c_bar = (ch1 + ch2) / 2.0;
    let cb7 = f64::from(c_bar).powf(7.0);
    let g = 1.0 - (cb7 / (cb7 + POW_25_7_F64)).sqrt();
    let a_prime_1 = (f64::from(c1.a) + f64::from(c1.a / 2.0) * g) as f32;
    let a_prime_2 = (f64::from(c2.a) + f64::from(c2.a / 2.0) * g) as f32;
    let c_prime_1 = (sq(a_prime_1) + sq(c1.b)).sqrt() as f32;
    let c_prime_2 = (sq(a_prime_2) + sq(c2.b)).sqrt() as f32;
    let c_bar_prime = (c_prime_1 + c_prime_2) / 2.0;
    let delta_c_prime = c_prime_2 - c_prime_1;
    let lb50 = sq(l_bar - 50.0);
    let s_sub_l = (1.0 + (0.015 * lb50) / (20.0 + lb50).sqrt()) as f32;
    let s_sub_c = (1.0 + 0.045 * f64::from(c_bar_prime)) as f32;
    let h_prime_1 = get_h_prime(c1.b, a_prime_1);
    let h_prime_2 = get_h_prime(c2.b, a_prime_2);
    let delta_h_prime = get_delta_h_prime(ch1, ch2, h_prime_1, h_prime_2);
    let delta_upcase_h_prime = (2.0
        * f64::from(c_prime_1 * c_prime_2).sqrt()
        * (f64::from(delta_h_prime) / 2.0).sin()) as f32;
    let upcase_h_bar_prime = get_upcase_h_bar_prime(h_prime_1, h_prime_2);
    let upcase_t = get_upcase_t(upcase_h_bar_prime);
    let s_sub_upcase_h = (1.0 + 0.015 * f64::from(c_bar_prime) * f64::from(upcase_t)) as f32;
    let r_sub_t = get_r_sub_t(c_bar_prime, upcase_h_bar_prime);
    let lightness = delta_l_prime / (k_l * s_sub_l);
    let chroma = delta_c_prime / (k_c * s_sub_c);
    let hue = delta_upcase_h_prime / (k_h * s_sub_upcase_h);
    (sq(lightness) + sq(chroma) + sq(hue) + f64::from(r_sub_t * chroma * hue)).sqrt() as f32
}

fn rgb_to_xyz_map(c: f64) -> f64 {
    if c > 10.0 / 255.0 {
        const A: f64 = 0.055;
        const D: f64 = 1.0 / 1.055;
        ((c + A) * D).powf(2.4)
    } else {
        const D: f64 = 1.0 / 12.92;
        c * D
    }
}

fn xyz_to_lab_map(c: f64) -> f32 {
    const KAPPA: f64 = 24389.0 / 27.0;
    const EPSILON: f64 = 216.0 / 24389.0;
    if c > EPSILON {
        c.powf(1.0 / 3.0) as f32
    } else {
        ((KAPPA * c + 16.0) * (1.0 / 116.0)) as f32
    }
}

/// ciede.c `get_lab_color()`: one Y'CbCr sample (at `bpc` bits) to CIELAB (BT.709, D65).
pub fn lab(y: u16, u: u16, v: u16, bpc: u8) -> Lab {
    let scale = f64::from(1u32 << (bpc - 8));
    let y = (f64::from(y) - 16.0 * scale) * (1.0 / (219.0 * scale));
    let u = (f64::from(u) - 128.0 * scale) * (1.0 / (224.0 * scale));
    let v = (f64::from(v) - 128.0 * scale) * (1.0 / (224.0 * scale));

    let r = rgb_to_xyz_map(y + 1.28033 * v);
    let g = rgb_to_xyz_map(y - 0.21482 * u - 0.38059 * v);
    let b = rgb_to_xyz_map(y + 2.12798 * u);

    let x = r * 0.4124564390896921 + g * 0.357576077643909 + b * 0.18043748326639894;
    let yy = r * 0.21267285140562248 + g * 0.715152155287818 + b * 0.07217499330655958;
    let z = r * 0.019333895582329317 + g * 0.119192025881303 + b * 0.9503040785363677;

    let x = f64::from(xyz_to_lab_map(x * (1.0 / 0.95047)));
    let yy = f64::from(xyz_to_lab_map(yy));
    let z = f64::from(xyz_to_lab_map(z * (1.0 / 1.08883)));

    Lab {
        l: ((116.0 * yy) - 16.0) as f32,
        a: (500.0 * (x - yy)) as f32,
        b: (200.0 * (yy - z)) as f32,
    }
}

/// dE00 of one reference/distorted pixel given as Y'CbCr samples (the per-pixel map).
#[inline]
pub fn delta_e(r: [u16; 3], d: [u16; 3], bpc: u8) -> f32 {
    ciede2000(lab(r[0], r[1], r[2], bpc), lab(d[0], d[1], d[2], bpc))
}

/// Chroma subsampling factors `(x, y)` of a chroma plane against its luma plane: 1 or 2 each.
/// A subsampled dimension may be rounded up (`ceil(luma / 2)`, as GStreamer stores odd sizes) or
/// down (`luma / 2`, as libvmaf allocates them); in the second case the last luma column/row
/// reads the last chroma sample (where libvmaf reads past its chroma row).
pub(crate) fn chroma_factors(
    luma: &Plane<'_>,
    chroma: &Plane<'_>,
    metric: &'static str,
) -> Result<(usize, usize)> {
    let f = |l: usize, c: usize| {
        if c == l {
            Some(1)
        } else if c == l.div_ceil(2) || (c == l / 2 && c > 0) {
            Some(2)
        } else {
            None
        }
    };
    match (f(luma.width, chroma.width), f(luma.height, chroma.height)) {
        (Some(fx), Some(fy)) if !(fx == 1 && fy == 2) => Ok((fx, fy)),
        _ => Err(Error::Geometry(format!(
            "{metric}: a {}x{} chroma plane does not fit a {}x{} luma plane as 4:2:0, 4:2:2 or 4:4:4",
            chroma.width, chroma.height, luma.width, luma.height
        ))),
    }
}

/// The checks of [`ciede`]: Y, Cb, Cr plane pairs of one depth, chroma 4:2:0, 4:2:2 or 4:4:4.
/// Returns the chroma subsampling factors `(x, y)`.
pub(crate) fn check_planes(r: &[Plane<'_>], d: &[Plane<'_>]) -> Result<(usize, usize)> {
    if r.len() != 3 || d.len() != 3 {
        return Err(Error::Unsupported {
            metric: "ciede",
            reason: "CIEDE2000 needs the luma and both chroma planes".into(),
        });
    }
    for p in 0..3 {
        check_pair(&r[p], &d[p], "ciede")?;
        if r[p].bpc != r[0].bpc {
            return Err(Error::Mismatch(format!(
                "ciede: plane {p} has {} bits, luma {}",
                r[p].bpc, r[0].bpc
            )));
        }
    }
    if (r[1].width, r[1].height) != (r[2].width, r[2].height) {
        return Err(Error::Geometry(
            "ciede: the two chroma planes differ in size".into(),
        ));
    }
    chroma_factors(&r[0], &r[1], "ciede")
}

/// The frame's sequential `double` sum of per-pixel dE00 values in row-major order, and the
/// score from it: shared by the CPU path and the GPU path (which reads the per-pixel values back
/// and adds them here in the same order).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DeltaSum(f64);

impl DeltaSum {
    #[inline]
    pub(crate) fn add(&mut self, v: f32) {
        self.0 += f64::from(v);
    }

    /// `45 - 20 * log10(sum / (w * h))` (`ref_pic->w[0] * ref_pic->h[0]`: unsigned int product,
    /// converted to double).
    pub(crate) fn finish(self, w: usize, h: usize) -> f64 {
        score_from_sum(self.0, w, h)
    }
}

/// The score from the sum of the per-pixel values of a `w` x `h` picture.
pub(crate) fn score_from_sum(sum: f64, w: usize, h: usize) -> f64 {
    45.0 - 20.0 * (sum / (w * h) as f64).log10()
}

/// libvmaf's `ciede2000` score of a picture pair: `r` and `d` are the Y, Cb, Cr planes (chroma
/// 4:2:0, 4:2:2 or 4:4:4). Without chroma libvmaf refuses the feature.
pub fn ciede(r: &[Plane<'_>], d: &[Plane<'_>]) -> Result<f64> {
    let (fx, fy) = check_planes(r, d)?;
    let bpc = r[0].bpc;
    let (w, h) = (r[0].width, r[0].height);
    let (cw, ch) = (r[1].width, r[1].height);
    let mut sum = DeltaSum::default();
    for y in 0..h {
        let cy = (y / fy).min(ch - 1);
        let (ry, dy) = (r[0].row(y), d[0].row(y));
        let (ru, rv) = (r[1].row(cy), r[2].row(cy));
        let (du, dv) = (d[1].row(cy), d[2].row(cy));
        for x in 0..w {
            let c = (x / fx).min(cw - 1);
            let (a, b) = ([ry[x], ru[c], rv[c]], [dy[x], du[c], dv[c]]);
            // Identical samples give dE00 = +0 exactly (every difference term is 0, each
            // divisor is at least 1, and the Lab values are finite), and `sum + 0.0 == sum`,
            // so skipping them changes nothing.
            if a != b {
                sum.add(delta_e(a, b, bpc));
            }
        }
    }
    Ok(sum.finish(w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow_constants() {
        assert_eq!(25f32.powf(7.0), POW_25_7_F32);
        assert_eq!(25f64.powf(7.0), POW_25_7_F64);
    }

    #[test]
    fn identical_pixels_have_zero_difference() {
        for bpc in 8..=16u8 {
            let m = (1u32 << bpc) - 1;
            for s in [[0, 0, 0], [m, m, m], [m / 2, m / 3, m / 5], [m / 7, m, 0]] {
                let s = s.map(|v| v as u16);
                assert_eq!(delta_e(s, s, bpc), 0.0, "bpc {bpc} {s:?}");
            }
        }
    }
}
