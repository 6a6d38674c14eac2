//! MS-SSIM (`float_ms_ssim`), as libvmaf 3.2.0's feature `float_ms_ssim` computes it, bit for bit.
//!
//! Sources (libvmaf 3.2.0, `libvmaf/src/feature/`): `float_ms_ssim.c` (the extractor, default
//! options), `ms_ssim.c` (`compute_ms_ssim`: Wang's MS-SSIM, 5 scales, Gaussian window, the 9x9
//! 9/7 biorthogonal low-pass for down-sampling), and the SSIM tools shared with [`super::ssim`].
//!
//! libvmaf refuses frames for which any of the 5 pyramid levels (sizes halved, rounded down) is
//! narrower or shorter than the 11-tap window ("error: scale below 1x1!"); it then reports no
//! `float_ms_ssim` for the frame. [`ms_ssim`] returns [`Error::Unsupported`] in that case, and
//! [`check_size`] tells ahead of time. The smallest accepted frame is 176x176.

use crate::error::{Error, Result};
use crate::picture::Plane;

use super::psnr::check_pair;
use super::ssim::{GAUSSIAN_LEN, IqaSsim, decimate, iqa_ssim, plane_to_float};

/// Number of scales (iqa/ssim_tools.h `SCALES`).
pub const SCALES: usize = 5;

const LPF_LEN: usize = 9;

/// The 9x9 low-pass filter used between scales (ms_ssim.c `g_lpf`, row-major).
#[rustfmt::skip]
pub(crate) const LPF: [f32; LPF_LEN * LPF_LEN] = [
     0.000714, -0.000450, -0.002090,  0.007132,  0.016114,  0.007132, -0.002090, -0.000450,  0.000714,
    -0.000450,  0.000283,  0.001316, -0.004490, -0.010146, -0.004490,  0.001316,  0.000283, -0.000450,
    -0.002090,  0.001316,  0.006115, -0.020867, -0.047149, -0.020867,  0.006115,  0.001316, -0.002090,
     0.007132, -0.004490, -0.020867,  0.071207,  0.160885,  0.071207, -0.020867, -0.004490,  0.007132,
     0.016114, -0.010146, -0.047149,  0.160885,  0.363505,  0.160885, -0.047149, -0.010146,  0.016114,
     0.007132, -0.004490, -0.020867,  0.071207,  0.160885,  0.071207, -0.020867, -0.004490,  0.007132,
    -0.002090,  0.001316,  0.006115, -0.020867, -0.047149, -0.020867,  0.006115,  0.001316, -0.002090,
    -0.000450,  0.000283,  0.001316, -0.004490, -0.010146, -0.004490,  0.001316,  0.000283, -0.000450,
     0.000714, -0.000450, -0.002090,  0.007132,  0.016114,  0.007132, -0.002090, -0.000450,  0.000714,
];

/// Exponents per scale (ms_ssim.c `g_alphas`, `g_betas`, `g_gammas`).
const ALPHAS: [f32; SCALES] = [0.0, 0.0, 0.0, 0.0, 0.1333];
const BETAS: [f32; SCALES] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];
const GAMMAS: [f32; SCALES] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];

/// Whether level `i`'s luminance mean enters the score (its exponent is not 0: the last level
/// only). Where it does not, `l^0 = 1` whatever `l` is (NaN included), so the GPU does not
/// compute it.
pub(crate) fn uses_luminance(i: usize) -> bool {
    ALPHAS[i] != 0.0
}

/// MS-SSIM of one frame, with the per-scale mean l, c, s terms (libvmaf's
/// `float_ms_ssim_{l,c,s}_scale{0..4}` with `enable_lcs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MsSsimScore {
    pub ms_ssim: f64,
    /// The luminance means, NaN at the levels whose luminance does not enter the score (all
    /// but the last, see `uses_luminance`; libvmaf reports them only with `enable_lcs`, which
    /// this crate does not offer): the GPU does not compute them.
    pub l: [f64; SCALES],
    pub c: [f64; SCALES],
    pub s: [f64; SCALES],
}

/// Whether libvmaf computes MS-SSIM for a `width` x `height` luma plane: every one of the 5
/// levels (halved with truncation, as the check in `compute_ms_ssim` does) must be at least
/// 11x11. Refused: [`Error::Unsupported`] with libvmaf's reason.
pub fn check_size(width: usize, height: usize) -> Result<()> {
    let (mut w, mut h) = (width, height);
    for level in 0..SCALES {
        if w < GAUSSIAN_LEN || h < GAUSSIAN_LEN {
            return Err(Error::Unsupported {
                metric: "float_ms_ssim",
                reason: format!(
                    "a {width}x{height} frame has a {w}x{h} level {level}, smaller than the \
                     {GAUSSIAN_LEN}x{GAUSSIAN_LEN} window (libvmaf: \"scale below 1x1!\"); \
                     the smallest frame is 176x176"
                ),
            });
        }
        w /= 2;
        h /= 2;
    }
    Ok(())
}

/// libvmaf's `float_ms_ssim` of a luma plane pair (default options, no dB).
pub fn ms_ssim(r: Plane<'_>, d: Plane<'_>) -> Result<MsSsimScore> {
    check_pair(&r, &d, "float_ms_ssim")?;
    check_size(r.width, r.height)?;

    // The pyramid: level 0 is the picture, each next level the 9x9 low-pass sampled at even
    // positions (size w/2 + (w&1)).
    let mut refs = vec![(plane_to_float(&r), r.width, r.height)];
    let mut diss = vec![plane_to_float(&d)];
    for _ in 1..SCALES {
        let (prev, w, h) = refs.last().unwrap();
        let (nr, sw, sh) = decimate(prev, *w, *h, 2, &LPF, LPF_LEN);
        let (nd, _, _) = decimate(diss.last().unwrap(), *w, *h, 2, &LPF, LPF_LEN);
        refs.push((nr, sw, sh));
        diss.push(nd);
    }

    let levels: Vec<IqaSsim> = refs
        .iter()
        .zip(&diss)
        .map(|((rf, w, h), df)| iqa_ssim(rf, df, *w, *h))
        .collect();
    combine(&levels)
}

/// The pyramid's level sizes for a `width` x `height` frame: level 0 is the frame, each next
/// level `w / 2 + (w & 1)` x `h / 2 + (h & 1)` (`_iqa_decimate` by 2).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn level_sizes(width: usize, height: usize) -> [(usize, usize); SCALES] {
    let mut out = [(width, height); SCALES];
    for i in 1..SCALES {
        let (w, h) = out[i - 1];
        out[i] = (w / 2 + (w & 1), h / 2 + (h & 1));
    }
    out
}

/// MS-SSIM from the per-level `_iqa_ssim` means (levels 0..5 in order): the product of
/// `l^alpha * c^beta * s^gamma` over the levels, in `double`, as `compute_ms_ssim` does. Shared
/// by the CPU path and the GPU path.
pub(crate) fn combine(levels: &[IqaSsim]) -> Result<MsSsimScore> {
    let mut out = MsSsimScore {
        ms_ssim: 0.0,
        l: [0.0; SCALES],
        c: [0.0; SCALES],
        s: [0.0; SCALES],
    };
    let mut msssim = 1.0f64;
    for (i, m) in levels.iter().enumerate().take(SCALES) {
        let (l, c, s) = (f64::from(m.l), f64::from(m.c), f64::from(m.s));
        // pow(l, 0) is 1 for every l (NaN included, C99 F.9.4.4): written out, so that the
        // levels without l (NaN from the GPU) do not rest on powf's handling of NaN.
        let lp = if uses_luminance(i) {
            l.powf(f64::from(ALPHAS[i]))
        } else {
            1.0
        };
        msssim *= lp * c.powf(f64::from(BETAS[i])) * s.powf(f64::from(GAMMAS[i]));
        out.l[i] = if uses_luminance(i) { l } else { f64::NAN };
        out.c[i] = c;
        out.s[i] = s;
        if msssim == f64::INFINITY {
            return Err(Error::Unsupported {
                metric: "float_ms_ssim",
                reason: "MS-SSIM is infinite (libvmaf: \"ms_ssim is INFINITY\")".into(),
            });
        }
    }
    out.ms_ssim = msssim;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_limits() {
        assert!(check_size(176, 176).is_ok());
        assert!(check_size(1920, 1080).is_ok());
        assert!(check_size(640, 360).is_ok());
        for (w, h) in [(176, 144), (175, 1000), (1000, 175), (33, 33)] {
            match check_size(w, h) {
                Err(Error::Unsupported {
                    metric: "float_ms_ssim",
                    reason,
                }) => {
                    assert!(reason.contains("scale below 1x1"), "{reason}")
                }
                other => panic!("{w}x{h}: {other:?}"),
            }
            let v = vec![0u16; w * h];
            let p = Plane::from_slice(&v, w, h, 8);
            assert!(matches!(ms_ssim(p, p), Err(Error::Unsupported { .. })));
        }
    }

    /// The levels whose luminance exponent is 0 leave l out of the score: any l there (NaN, as
    /// the GPU leaves it, or a value) gives the same MS-SSIM bits, and `l` reports NaN there;
    /// the last level's l counts.
    #[test]
    fn luminance_only_at_the_last_level() {
        assert_eq!(
            (0..SCALES).map(uses_luminance).collect::<Vec<_>>(),
            [false, false, false, false, true]
        );
        let level = |l: f32, k: usize| IqaSsim {
            ssim: f32::NAN,
            l,
            c: 0.9 + 0.01 * k as f32,
            s: 0.8 + 0.02 * k as f32,
        };
        let with = |l: &dyn Fn(usize) -> f32| {
            let levels: Vec<IqaSsim> = (0..SCALES).map(|k| level(l(k), k)).collect();
            combine(&levels).unwrap()
        };
        let a = with(&|k| 0.5 + 0.1 * k as f32);
        let b = with(&|k| if k < SCALES - 1 { f32::NAN } else { 0.9 });
        assert_eq!(a.ms_ssim.to_bits(), b.ms_ssim.to_bits());
        assert!(a.ms_ssim.is_finite() && a.ms_ssim > 0.0);
        assert!(a.l[..SCALES - 1].iter().all(|l| l.is_nan()));
        assert_eq!(a.l[SCALES - 1], f64::from(0.9f32));
        // The last level's l does enter the score.
        let c = with(&|k| if k < SCALES - 1 { 0.5 } else { 0.6 });
        assert_ne!(a.ms_ssim, c.ms_ssim);
    }
}
