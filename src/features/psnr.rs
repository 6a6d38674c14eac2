//! PSNR (`psnr_y`, `psnr_cb`, `psnr_cr`), as libvmaf 3.2.0's feature `psnr` computes it.
//!
//! In libvmaf 3.2.0 the feature name `psnr` maps to `vmaf_fex_psnr` in
//! `libvmaf/src/feature/integer_psnr.c` (not `float_psnr.c`, which is `float_psnr`). It runs with
//! its default options: chroma enabled (unless the picture is 4:0:0), no MSE/APSNR output,
//! `reduced_hbd_peak = false`, `min_sse = 0`.
//!
//! The pixel work is one integer sum per plane ([`sse`]); [`psnr_from_sse`] is the only
//! floating-point step, so a GPU backend only has to reproduce the integer SSE.
//!
//! Bit depths: libvmaf 3.2.0 accepts 8, 10, 12 and 16 bits and refuses the others with EINVAL.
//! For 9, 11, 13, 14 and 15 bits we apply the same high-bit-depth formula (peak `2^bpc - 1`,
//! cap `6 * bpc + 12` dB), which is what libvmaf's code would compute if it let them through.

use crate::error::{Error, Result};
use crate::picture::Plane;

/// libvmaf's names for the three planes' scores.
pub const NAMES: [&str; 3] = ["psnr_y", "psnr_cb", "psnr_cr"];

/// Per-frame PSNR scores. `cb`/`cr` are `None` when only a luma plane was given (4:0:0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PsnrScores {
    pub y: f64,
    pub cb: Option<f64>,
    pub cr: Option<f64>,
}

/// Check that a reference/distorted plane pair can be read: non-empty, same geometry and depth,
/// depth 8..=16, `stride >= width`, and enough samples for `stride * (height - 1) + width`
/// ([`super::check_planes`], `what` naming the metric in the errors).
pub(crate) fn check_pair(r: &Plane<'_>, d: &Plane<'_>, what: &'static str) -> Result<()> {
    super::check_planes(r, d, what, None)
}

/// The peak sample value libvmaf uses for PSNR at `bpc` bits (integer_psnr.c: 255 in the 8-bit
/// path, `(1 << bpc) - 1` in the high-bit-depth path with `reduced_hbd_peak` off).
pub fn peak(bpc: u8) -> u32 {
    (1u32 << bpc) - 1
}

/// The cap on PSNR at `bpc` bits: `6 * bpc + 12` dB (integer_psnr.c `init`, `min_sse == 0`).
pub fn psnr_max(bpc: u8) -> f64 {
    f64::from(6 * u32::from(bpc) + 12)
}

/// Sum of squared differences of one plane, as libvmaf 3.2.0 sums it.
///
/// 8-bit (integer_psnr.c `psnr`): each row is summed in a `uint32_t` (wrapping, as C's unsigned
/// arithmetic does), then added to the `uint64_t` total. Bound: a row adds at most
/// `width * 255^2`, which stays below 2^32 for widths up to 66051 (15360 * 65025 = 998_784_000),
/// so at any real frame size the row sum never wraps and the result is the exact SSE.
///
/// 9 to 16 bits (`psnr_hbd`): every `|r - d|^2` (at most 65535^2 = 4_294_836_225 < 2^32) is added
/// straight to the `uint64_t` total. Bound: at 15360x8640 and 16 bits the total is at most
/// 132_710_400 * 4_294_836_225 ~= 5.7e17 < 2^64 ~= 1.8e19.
///
/// The caller checks geometry (see [`psnr`]); this function only indexes within
/// `stride * (height - 1) + width`.
pub fn sse(r: Plane<'_>, d: Plane<'_>) -> u64 {
    let mut sse: u64 = 0;
    if r.bpc == 8 {
        for y in 0..r.height {
            // uint32_t sse_inner in libvmaf; wrapping only above width 66051 (see above).
            let mut row: u32 = 0;
            for (&a, &b) in r.row(y).iter().zip(d.row(y)) {
                let e = i32::from(a) - i32::from(b);
                row = row.wrapping_add((e * e) as u32);
            }
            sse += u64::from(row);
        }
    } else {
        for y in 0..r.height {
            for (&a, &b) in r.row(y).iter().zip(d.row(y)) {
                let e = u32::from(a.abs_diff(b));
                sse += u64::from(e * e);
            }
        }
    }
    sse
}

/// PSNR of one plane from its SSE (the float step of integer_psnr.c, in its order):
/// `mse = sse / (w * h)`, `min(10 * log10(peak^2 / max(mse, 1e-16)), 6 * bpc + 12)`.
pub fn psnr_from_sse(sse: u64, width: usize, height: usize, bpc: u8) -> f64 {
    let mse = sse as f64 / (width * height) as f64;
    let peak = peak(bpc);
    // peak * peak is computed in 32-bit unsigned arithmetic in libvmaf (65535^2 < 2^32).
    let pp = f64::from(peak * peak);
    let v = 10.0 * (pp / if mse > 1e-16 { mse } else { 1e-16 }).log10();
    let max = psnr_max(bpc);
    if v < max { v } else { max }
}

/// PSNR of a picture pair: `r` and `d` hold the luma plane and, optionally, the two chroma planes
/// (1 or 3 planes; a `&[Plane; 3]` coerces). Chroma planes may be subsampled (any size); each
/// plane is scored at its own size.
///
/// Odd sizes: libvmaf's pictures have chroma planes of `w >> 1` (and `h >> 1` for 4:2:0), rounded
/// down, so to reproduce its `psnr_cb`/`psnr_cr` pass chroma views cropped to those sizes (same
/// data and stride, smaller `width`/`height`). The same holds for [`super::psnr_hvs`].
pub fn psnr(r: &[Plane<'_>], d: &[Plane<'_>]) -> Result<PsnrScores> {
    if r.len() != d.len() || !(r.len() == 1 || r.len() == 3) {
        return Err(Error::Mismatch(format!(
            "psnr: {} reference and {} distorted planes (1 or 3 each expected)",
            r.len(),
            d.len()
        )));
    }
    let mut out = [None; 3];
    for (p, (a, b)) in r.iter().zip(d).enumerate() {
        check_pair(a, b, NAMES[p])?;
        if a.bpc != r[0].bpc {
            return Err(Error::Mismatch(format!(
                "psnr: plane {p} has {} bits, luma {}",
                a.bpc, r[0].bpc
            )));
        }
        out[p] = Some(psnr_from_sse(sse(*a, *b), a.width, a.height, a.bpc));
    }
    Ok(PsnrScores {
        y: out[0].unwrap_or_default(),
        cb: out[1],
        cr: out[2],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane(data: &[u16], w: usize, h: usize, bpc: u8) -> Plane<'_> {
        Plane::from_slice(data, w, h, bpc)
    }

    #[test]
    fn identical_frames_give_the_cap() {
        for bpc in 8..=16u8 {
            let v = vec![(1u32 << (bpc - 1)) as u16; 40 * 36];
            let c = vec![7u16; 20 * 18];
            let r = [
                plane(&v, 40, 36, bpc),
                plane(&c, 20, 18, bpc),
                plane(&c, 20, 18, bpc),
            ];
            let s = psnr(&r, &r).unwrap();
            let cap = f64::from(6 * u32::from(bpc) + 12);
            assert_eq!(s.y, cap, "bpc {bpc}");
            assert_eq!(s.cb, Some(cap));
            assert_eq!(s.cr, Some(cap));
        }
    }

    #[test]
    fn max_difference_frames() {
        // Every sample differs by the peak: mse = peak^2, psnr = 10 * log10(1) = 0.
        for bpc in 8..=16u8 {
            let peak = ((1u32 << bpc) - 1) as u16;
            let a = vec![0u16; 64 * 33];
            let b = vec![peak; 64 * 33];
            let s = psnr(&[plane(&a, 64, 33, bpc)], &[plane(&b, 64, 33, bpc)]).unwrap();
            assert_eq!(s.y, 0.0, "bpc {bpc}");
            assert_eq!(s.cb, None);
            let e = u64::from(peak) * u64::from(peak);
            assert_eq!(
                sse(plane(&a, 64, 33, bpc), plane(&b, 64, 33, bpc)),
                e * 64 * 33
            );
        }
    }

    #[test]
    fn sse_bound_at_16k_width() {
        // Max-difference rows 15360 wide: the 8-bit per-row u32 sum (libvmaf's `sse_inner`)
        // must not wrap, and the 16-bit total must be exact.
        for bpc in [8u8, 16] {
            let peak = ((1u32 << bpc) - 1) as u16;
            let (w, h) = (15360, 3);
            let a = vec![0u16; w * h];
            let b = vec![peak; w * h];
            let want = u128::from(peak) * u128::from(peak) * (w * h) as u128;
            let got = sse(plane(&a, w, h, bpc), plane(&b, w, h, bpc));
            assert_eq!(u128::from(got), want, "bpc {bpc}");
        }
        // The documented 16K 16-bit worst case fits in u64.
        let worst = 65535u64 * 65535;
        assert!(worst.checked_mul(15360 * 8640).is_some());
    }

    #[test]
    fn strided_planes_and_errors() {
        // A stride larger than the width: padding must be ignored.
        let w = 35;
        let h = 34;
        let stride = 40;
        let mut a = vec![0u16; stride * h];
        let mut b = vec![0u16; stride * h];
        for y in 0..h {
            for x in 0..stride {
                a[y * stride + x] = if x < w { (x * 3 + y) as u16 % 256 } else { 255 };
                b[y * stride + x] = if x < w {
                    (x * 3 + y + 1) as u16 % 256
                } else {
                    0
                };
            }
        }
        let pa = Plane {
            data: &a,
            width: w,
            height: h,
            stride,
            bpc: 8,
        };
        let pb = Plane {
            data: &b,
            width: w,
            height: h,
            stride,
            bpc: 8,
        };
        let s = psnr(&[pa], &[pb]).unwrap();
        // Differences are 1 except where (x*3+y) % 256 == 255 (then 255 vs 0).
        let mut want = 0u64;
        for y in 0..h {
            for x in 0..w {
                let e = i64::from(a[y * stride + x]) - i64::from(b[y * stride + x]);
                want += (e * e) as u64;
            }
        }
        assert_eq!(sse(pa, pb), want);
        assert_eq!(s.y, psnr_from_sse(want, w, h, 8));

        let short = Plane {
            data: &a[..100],
            width: w,
            height: h,
            stride,
            bpc: 8,
        };
        assert!(matches!(psnr(&[short], &[pb]), Err(Error::Geometry(_))));
        let other = Plane {
            data: &b,
            width: w - 1,
            height: h,
            stride,
            bpc: 8,
        };
        assert!(matches!(psnr(&[pa], &[other]), Err(Error::Mismatch(_))));
        let deep = Plane {
            data: &a,
            width: w,
            height: h,
            stride,
            bpc: 17,
        };
        assert!(matches!(psnr(&[deep], &[deep]), Err(Error::BitDepth(17))));
        assert!(matches!(
            psnr(&[pa, pa], &[pb, pb]),
            Err(Error::Mismatch(_))
        ));
    }
}
