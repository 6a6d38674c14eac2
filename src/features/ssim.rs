//! SSIM (`float_ssim`), as libvmaf 3.2.0's feature `float_ssim` computes it, bit for bit.
//!
//! Sources (libvmaf 3.2.0, `libvmaf/src/feature/`): `float_ssim.c` (the extractor, default
//! options), `picture_copy.c` (samples to float), `ssim.c` (`compute_ssim`: automatic
//! down-scaling), `iqa/ssim_tools.c` (`_iqa_ssim`), `iqa/convolve.c` (with `IQA_CONVOLVE_1D`
//! defined in `iqa/iqa_options.h`: separable "valid" convolution; `_iqa_filter_pixel`,
//! `KBND_SYMMETRIC`), `iqa/decimate.c`, `iqa/math_utils.c` (`_round`).
//!
//! Floating point follows the C code's types exactly: `float` products accumulated in `double`
//! in the convolutions, the per-pixel SSIM terms in `double` with the mixed `float`/`double`
//! operands of `_iqa_ssim`, and one sequential `double` sum of the per-pixel terms in row-major
//! order (an order-fixed reduction: a GPU port must produce the same per-pixel terms and sum them
//! in this order). The result is rounded to `float` as libvmaf does.
//!
//! The tools here are shared with [`super::ms_ssim`].

use crate::error::{Error, Result};
use crate::picture::Plane;

use super::psnr::check_pair;

/// Length of the Gaussian window (iqa/ssim_tools.h `GAUSSIAN_LEN`).
pub const GAUSSIAN_LEN: usize = 11;

/// The separable 11-tap Gaussian window (iqa/ssim_tools.h: `g_gaussian_window_h`, equal to
/// `g_gaussian_window_v`).
pub(crate) const GAUSSIAN_WINDOW: [f32; GAUSSIAN_LEN] = [
    0.001028, 0.007599, 0.036001, 0.109361, 0.213006, 0.266012, 0.213006, 0.109361, 0.036001,
    0.007599, 0.001028,
];

/// SSIM of one frame and its mean luminance, contrast and structure terms (libvmaf's
/// `float_ssim`, and `float_ssim_l/_c/_s` with `enable_lcs`). Each is a `float` widened to
/// `double`, as libvmaf reports them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SsimScore {
    pub ssim: f64,
    pub l: f64,
    pub c: f64,
    pub s: f64,
}

/// Convert a plane to floats the way libvmaf's `picture_copy()` does: 8-bit samples as they
/// are, 10/12/16-bit samples divided by 4/16/256 (so every depth lands on the 8-bit scale).
/// libvmaf 3.2.0 has no case for 9, 11, 13, 14 and 15 bits (it would read them as bytes); we
/// divide by `2^(bpc - 8)`, the rule its three cases follow. Division by a power of two is exact.
pub(crate) fn plane_to_float(p: &Plane<'_>) -> Vec<f32> {
    let scaler = (1u32 << (p.bpc - 8)) as f32;
    let mut out = Vec::with_capacity(p.width * p.height);
    for y in 0..p.height {
        if p.bpc == 8 {
            out.extend(p.row(y).iter().map(|&v| f32::from(v)));
        } else {
            // `(float) data[j] / scaler + offset` with offset 0.
            out.extend(p.row(y).iter().map(|&v| f32::from(v) / scaler + 0.0));
        }
    }
    out
}

/// `KBND_SYMMETRIC` (iqa/convolve.c): one mirror reflection, edge sample repeated.
#[inline]
fn mirror(i: isize, n: isize) -> usize {
    let r = if i < 0 {
        -1 - i
    } else if i >= n {
        n - (i - n) - 1
    } else {
        i
    };
    r as usize
}

/// `_iqa_filter_pixel` with a square 2-D kernel of side `k` (row-major `kernel`), `kscale = 1`:
/// `double` sum of `float` products, rows outer, columns inner, out-of-image samples mirrored.
/// For an even side the taps run from `-k/2` to `k/2 - 1`.
#[inline]
fn filter_pixel(
    img: &[f32],
    w: usize,
    h: usize,
    x: usize,
    y: usize,
    kernel: &[f32],
    k: usize,
) -> f32 {
    let c = (k / 2) as isize;
    let even = if k % 2 == 1 { 0 } else { 1 };
    let (xi, yi) = (x as isize, y as isize);
    let (wi, hi) = (w as isize, h as isize);
    let edge = xi < c || yi < c || xi >= wi - c || yi >= hi - c;
    let mut sum = 0.0f64;
    let mut ko = 0;
    for v in -c..=c - even {
        if edge {
            let row = mirror(yi + v, hi) * w;
            for u in -c..=c - even {
                sum += f64::from(img[row + mirror(xi + u, wi)] * kernel[ko]);
                ko += 1;
            }
        } else {
            let start = (yi + v) as usize * w + (xi - c) as usize;
            for (&p, &kv) in img[start..start + k].iter().zip(&kernel[ko..ko + k]) {
                sum += f64::from(p * kv);
            }
            ko += k;
        }
    }
    // `(float)(sum * kscale)` with kscale = 1.0f.
    sum as f32
}

/// `_iqa_decimate` into a separate buffer: output `(w / factor + (w & 1)) x (h / factor + (h & 1))`
/// (sic: libvmaf adds the parity of the size, not a remainder), sample `(x, y)` filtered at
/// `(x * factor, y * factor)`.
pub(crate) fn decimate(
    img: &[f32],
    w: usize,
    h: usize,
    factor: usize,
    kernel: &[f32],
    k: usize,
) -> (Vec<f32>, usize, usize) {
    let sw = w / factor + (w & 1);
    let sh = h / factor + (h & 1);
    let c = k / 2;
    // Outputs whose whole window lies inside the image: `x * factor - c >= 0` and
    // `x * factor - c + k <= w`. There the taps are read directly, several outputs at a time;
    // each output still adds its taps in the C order (rows v, then columns u), and a mirrored
    // read of an in-range coordinate is the coordinate itself, so the result is the same.
    let inner = |n: usize, s: usize| {
        let lo = c.div_ceil(factor);
        let hi = if n + c >= k {
            ((n + c - k) / factor + 1).min(s)
        } else {
            0
        };
        (lo, hi.max(lo))
    };
    let (x0, x1) = inner(w, sw);
    let (y0, y1) = inner(h, sh);
    let mut out = vec![0f32; sw * sh];
    let mut acc = vec![0f64; sw];
    let mut phases: Vec<Vec<f32>> = vec![Vec::with_capacity(w / factor + 1); factor];
    for y in 0..sh {
        let o = &mut out[y * sw..(y + 1) * sw];
        if y < y0 || y >= y1 || x0 == x1 {
            for (x, v) in o.iter_mut().enumerate() {
                *v = filter_pixel(img, w, h, x * factor, y * factor, kernel, k);
            }
            continue;
        }
        acc[x0..x1].fill(0.0);
        for v in 0..k {
            let row = &img[(y * factor + v - c) * w..(y * factor + v - c + 1) * w];
            // The row split into its `factor` phases, so that each tap reads contiguously:
            // row[x * factor + off] == phases[off mod factor][x + off div factor].
            for (p, ph) in phases.iter_mut().enumerate() {
                ph.clear();
                ph.extend(row.iter().skip(p).step_by(factor));
            }
            for u in 0..k {
                let kv = kernel[v * k + u];
                let off = u as isize - c as isize;
                let ph = &phases[off.rem_euclid(factor as isize) as usize];
                let base = (x0 as isize + off.div_euclid(factor as isize)) as usize;
                for (a, &p) in acc[x0..x1].iter_mut().zip(&ph[base..base + (x1 - x0)]) {
                    *a += f64::from(p * kv);
                }
            }
        }
        for x in (0..x0).chain(x1..sw) {
            o[x] = filter_pixel(img, w, h, x * factor, y * factor, kernel, k);
        }
        for (v, &a) in o[x0..x1].iter_mut().zip(&acc[x0..x1]) {
            *v = a as f32;
        }
    }
    (out, sw, sh)
}

/// `_iqa_decimate` in place (`result == NULL`), as `compute_ssim` calls it: outputs overwrite the
/// start of the buffer while later outputs still read it, exactly as the C loop does.
fn decimate_in_place(
    img: &mut Vec<f32>,
    w: usize,
    h: usize,
    factor: usize,
    kernel: &[f32],
    k: usize,
) -> (usize, usize) {
    let sw = w / factor + (w & 1);
    let sh = h / factor + (h & 1);
    for y in 0..sh {
        for x in 0..sw {
            let v = filter_pixel(img, w, h, x * factor, y * factor, kernel, k);
            img[y * sw + x] = v;
        }
    }
    img.truncate(sw * sh);
    (sw, sh)
}

/// `_iqa_convolve` with `IQA_CONVOLVE_1D` and the 11-tap Gaussian window (normalized, scale 1):
/// "valid" output of `(w - 10) x (h - 10)`. Horizontal pass over every row, then vertical pass;
/// each output is a `double` sum of `float` products in tap order, rounded to `float`.
fn convolve(img: &[f32], w: usize, h: usize) -> (Vec<f32>, usize, usize) {
    let k = &GAUSSIAN_WINDOW;
    let n = GAUSSIAN_LEN;
    let dw = w - n + 1;
    let dh = h - n + 1;
    // Horizontal pass, every row, kept compact (dw per row). Each output's taps are added in order
    // u = 0..n (as in the C loop); the loop runs over outputs innermost so that it vectorises.
    let mut cache = vec![0f32; dw * h];
    let mut acc = vec![0f64; dw];
    for y in 0..h {
        let src = &img[y * w..(y + 1) * w];
        acc.fill(0.0);
        for (u, &kv) in k.iter().enumerate() {
            for (a, &p) in acc.iter_mut().zip(&src[u..u + dw]) {
                *a += f64::from(p * kv);
            }
        }
        for (o, &a) in cache[y * dw..(y + 1) * dw].iter_mut().zip(&acc) {
            *o = a as f32;
        }
    }
    // Vertical pass: for each output the taps are added in order v = 0..n, as in the C loop.
    let mut out = vec![0f32; dw * dh];
    for y in 0..dh {
        acc.fill(0.0);
        for (v, &kv) in k.iter().enumerate() {
            let src = &cache[(y + v) * dw..(y + v + 1) * dw];
            for (a, &p) in acc.iter_mut().zip(src) {
                *a += f64::from(p * kv);
            }
        }
        for (o, &a) in out[y * dw..(y + 1) * dw].iter_mut().zip(&acc) {
            *o = a as f32;
        }
    }
    (out, dw, dh)
}

/// The means libvmaf's `_iqa_ssim` returns in its default case (`args == NULL`): the SSIM index
/// and the mean l, c, s terms, all rounded to `float`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IqaSsim {
    pub ssim: f32,
    pub l: f32,
    pub c: f32,
    pub s: f32,
}

/// `C1 = (K1*L)^2`, `C2 = (K2*L)^2`, `C3 = C2/2` of `_iqa_ssim` with its defaults (K1 = 0.01,
/// K2 = 0.03, L = 255), all in `float` (L is the int 255).
pub(crate) fn ssim_constants() -> (f32, f32, f32) {
    let k1l = 0.01f32 * 255.0;
    let k2l = 0.03f32 * 255.0;
    let c1 = k1l * k1l;
    let c2 = k2l * k2l;
    (c1, c2, c2 / 2.0)
}

/// The per-pixel terms of `_iqa_ssim` (luminance `l`, contrast `c`, structure `s`) from the five
/// filtered values at one pixel (means `mr`, `md`; filtered squares and product). `l` and `c`
/// are `double` quotients, `s` a `float` quotient (widened by the caller where C widens it).
/// kernels/ssim.cu `ssim_terms` computes the same, in the same types and order.
#[inline]
pub(crate) fn pixel_terms(
    mr: f32,
    md: f32,
    sig_r: f32,
    sig_d: f32,
    sig_rd: f32,
    (c1, c2, c3): (f32, f32, f32),
) -> (f64, f64, f32) {
    let mut sr = sig_r - mr * mr;
    let mut sd = sig_d - md * md;
    // MAX(0.0, x) with the C macro: (0.0 > x) ? 0.0 : x.
    if 0.0 > sr {
        sr = 0.0;
    }
    if 0.0 > sd {
        sd = 0.0;
    }
    let srd = sig_rd - mr * md;

    // sqrt of a float product, computed in double, stored to float.
    let sigma_rd = f64::from(sr * sd).sqrt() as f32;
    let l =
        (2.0 * f64::from(mr) * f64::from(md) + f64::from(c1)) / f64::from(mr * mr + md * md + c1);
    let c = (2.0 * f64::from(sigma_rd) + f64::from(c2)) / f64::from(sr + sd + c2);
    let clamped = if srd < 0.0 && sigma_rd <= 0.0 {
        0.0
    } else {
        srd
    };
    // float / float.
    let s = (clamped + c3) / (sigma_rd + c3);
    (l, c, s)
}

/// The sequential `double` sums of `_iqa_ssim`, pixel after pixel in row-major order: the one
/// order-dependent step, shared by the CPU path and the GPU path (which reads the per-pixel terms
/// back and adds them here in the same order).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SsimSums {
    ssim: f64,
    l: f64,
    c: f64,
    s: f64,
}

impl SsimSums {
    #[inline]
    pub(crate) fn add(&mut self, l: f64, c: f64, s: f32) {
        let s = f64::from(s);
        self.ssim += l * c * s;
        self.l += l;
        self.c += c;
        self.s += s;
    }

    /// The means over `n` pixels (`(double)(w*h)` of the int sizes), rounded to `float`.
    pub(crate) fn finish(&self, n: usize) -> IqaSsim {
        let n = n as f64;
        IqaSsim {
            ssim: (self.ssim / n) as f32,
            l: (self.l / n) as f32,
            c: (self.c / n) as f32,
            s: (self.s / n) as f32,
        }
    }
}

/// What a parallel reduction (the GPU's) knows of one of [`SsimSums`]' sequential sums over `n`
/// terms `x_0 .. x_{n-1}`: its own sum of the terms, of their magnitudes, and of the magnitudes
/// weighted by `n - i`, each computed in `double` in any order in which every term passes
/// through at most `steps` additions. [`SumBound::mean_if_determined`] then tells, without the
/// terms, whether the sequential sum's mean rounds to one `float` (and which), with a rigorous
/// error bound; when it cannot tell, the terms are needed (the caller adds them in order).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SumBound {
    pub sum: f64,
    pub abs: f64,
    pub weighted: f64,
}

/// The unit roundoff of `double`, `2^-53`.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
const U64: f64 = f64::EPSILON / 2.0;

/// `gamma_k = k u / (1 - k u)` (Higham, Accuracy and Stability of Numerical Algorithms, 3.1),
/// rounded up by a margin that covers its own rounding; `None` when `k u` is not small.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn gamma(k: f64) -> Option<f64> {
    let ku = k * U64;
    (ku < 0.01).then(|| ku / (1.0 - ku) * (1.0 + 1e-12))
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl SumBound {
    /// Add a block's partial sums (in block order).
    pub(crate) fn add(&mut self, sum: f64, abs: f64, weighted: f64) {
        self.sum += sum;
        self.abs += abs;
        self.weighted += weighted;
    }

    /// The `float` that `(S / n) as f32` is, where `S` is the sequential `double` sum
    /// `((x_0 + x_1) + x_2) + ...` started at `+0.0` ([`SsimSums`]), if every sum within the
    /// bound below rounds to the same `float` (bit for bit); `None` otherwise (or when a term is
    /// not finite: the bounds are then NaN or infinite).
    ///
    /// Bound. Each addition of the sequential sum rounds with a relative error at most `u`:
    /// `|S - sum x| <= u/(1-u) * sum_{k>=2} |s_k|` for the partial sums `s_k`, and
    /// `|s_k| <= (1 + gamma_n) * sum_{i<k} |x_i|`, so
    /// `|S - sum x| <= u/(1-u) * (1 + gamma_n) * sum_i |x_i| (n - i)` (each term counted once
    /// per partial sum that contains it). The
    /// reduction's own sums are within `gamma_steps` of the exact ones (`gamma_{steps+1}` for
    /// the weighted one: its products round once). `S` therefore lies in `sum +- E`, and since
    /// `/ n` and the conversion to `float` are monotonic, both ends rounding to one `float`
    /// decides the result.
    pub(crate) fn mean_if_determined(&self, n: usize, steps: usize) -> Option<f32> {
        let g_steps = gamma(steps as f64 + 1.0)?;
        let g_n = gamma(n as f64)?;
        let abs = self.abs / (1.0 - g_steps);
        let weighted = self.weighted / (1.0 - g_steps);
        let e = U64 / (1.0 - U64) * (1.0 + g_n) * weighted + g_steps * abs;
        // Margins for the rounding of `e` itself (a handful of operations) and of `sum +- e`.
        let e = e * (1.0 + 1e-12) + 4.0 * U64 * self.sum.abs();
        if !(self.sum.is_finite() && e.is_finite()) {
            return None;
        }
        let nf = n as f64;
        let lo = ((self.sum - e) / nf) as f32;
        let hi = ((self.sum + e) / nf) as f32;
        (lo.to_bits() == hi.to_bits()).then_some(lo)
    }
}

/// `_iqa_ssim` (iqa/ssim_tools.c), default parameters (K1 = 0.01, K2 = 0.03, L = 255, Gaussian
/// window), the zli-nflx default branch. `w, h >= 11`.
pub(crate) fn iqa_ssim(r: &[f32], d: &[f32], w: usize, h: usize) -> IqaSsim {
    let consts = ssim_constants();

    let (mu_r, dw, dh) = convolve(r, w, h);
    let (mu_d, _, _) = convolve(d, w, h);
    let mut rr = Vec::with_capacity(w * h);
    let mut dd = Vec::with_capacity(w * h);
    let mut rd = Vec::with_capacity(w * h);
    for (&a, &b) in r.iter().zip(d) {
        rr.push(a * a);
        dd.push(b * b);
        rd.push(a * b);
    }
    let (sig_r, _, _) = convolve(&rr, w, h);
    let (sig_d, _, _) = convolve(&dd, w, h);
    let (sig_rd, _, _) = convolve(&rd, w, h);
    drop((rr, dd, rd));

    let mut sums = SsimSums::default();
    for i in 0..dw * dh {
        let (l, c, s) = pixel_terms(mu_r[i], mu_d[i], sig_r[i], sig_d[i], sig_rd[i], consts);
        sums.add(l, c, s);
    }
    sums.finish(dw * dh)
}

/// `_round` (iqa/math_utils.c): rounds half away from zero, via a float difference compared
/// against the double 0.5.
fn iqa_round(a: f32) -> i32 {
    let sign = if a > 0.0 { 1 } else { -1 };
    let t = a as i32;
    if f64::from(a - t as f32) >= 0.5 {
        t + sign
    } else {
        t
    }
}

/// The automatic down-scaling factor of `compute_ssim`: `max(1, round(min(w, h) / 256))`.
pub fn auto_scale(width: usize, height: usize) -> usize {
    let m = width.min(height) as i32 as f32;
    iqa_round(m / 256.0).max(1) as usize
}

/// The smallest luma plane `float_ssim` accepts: the 11x11 window must fit after scaling.
fn check_size(w: usize, h: usize, metric: &'static str) -> Result<()> {
    if w < GAUSSIAN_LEN || h < GAUSSIAN_LEN {
        return Err(Error::Unsupported {
            metric,
            reason: format!(
                "a {w}x{h} plane is smaller than the {GAUSSIAN_LEN}x{GAUSSIAN_LEN} SSIM window"
            ),
        });
    }
    Ok(())
}

/// The automatic down-scaling of `float_ssim` for a `w` x `h` luma plane, after libvmaf's size
/// checks: `(scale, scaled width, scaled height)` (the scaled size is `w` x `h` at scale 1).
pub(crate) fn scaled_geometry(w: usize, h: usize) -> Result<(usize, usize, usize)> {
    check_size(w, h, "float_ssim")?;
    let scale = auto_scale(w, h);
    if scale == 1 {
        return Ok((1, w, h));
    }
    let (sw, sh) = (w / scale + (w & 1), h / scale + (h & 1));
    check_size(sw, sh, "float_ssim")?;
    Ok((scale, sw, sh))
}

/// The tap of the box low-pass of side `scale`: `1.0f / (scale * scale)` (int product).
pub(crate) fn box_tap(scale: usize) -> f32 {
    1.0f32 / (scale * scale) as i32 as f32
}

impl From<IqaSsim> for SsimScore {
    fn from(m: IqaSsim) -> SsimScore {
        SsimScore {
            ssim: f64::from(m.ssim),
            l: f64::from(m.l),
            c: f64::from(m.c),
            s: f64::from(m.s),
        }
    }
}

/// libvmaf's `float_ssim` of a luma plane pair (default options: automatic scale, no dB).
pub fn ssim(r: Plane<'_>, d: Plane<'_>) -> Result<SsimScore> {
    check_pair(&r, &d, "float_ssim")?;
    let (scale, sw, sh) = scaled_geometry(r.width, r.height)?;
    let (w, h) = (r.width, r.height);
    let mut rf = plane_to_float(&r);
    let mut df = plane_to_float(&d);
    if scale > 1 {
        // Box low-pass of side `scale`.
        let kernel = vec![box_tap(scale); scale * scale];
        decimate_in_place(&mut rf, w, h, scale, &kernel, scale);
        let wh = decimate_in_place(&mut df, w, h, scale, &kernel, scale);
        debug_assert_eq!(wh, (sw, sh));
    }
    Ok(iqa_ssim(&rf, &df, sw, sh).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reduction of kernels/ssim.cu `ssim_terms`: per block of 256 terms a pairwise tree
    /// (stride 128, 64, ...), the blocks' partials then added in order; `steps` as the caller
    /// passes it.
    fn tree_bound(x: &[f64]) -> (SumBound, usize) {
        let n = x.len();
        let mut b = SumBound::default();
        let blocks = n.div_ceil(256);
        for blk in 0..blocks {
            let mut v = [[0f64; 3]; 256];
            for (t, e) in v.iter_mut().enumerate() {
                let i = blk * 256 + t;
                if i < n {
                    *e = [x[i], x[i].abs(), x[i].abs() * (n - i) as f64];
                }
            }
            let mut s = 128;
            while s > 0 {
                for t in 0..s {
                    let hi = v[t + s];
                    for (a, b) in v[t].iter_mut().zip(hi) {
                        *a += b;
                    }
                }
                s /= 2;
            }
            b.add(v[0][0], v[0][1], v[0][2]);
        }
        (b, 8 + blocks)
    }

    fn sequential_mean(x: &[f64]) -> f32 {
        let mut s = 0.0f64;
        for &v in x {
            s += v;
        }
        (s / x.len() as f64) as f32
    }

    #[test]
    fn bound_decides_only_the_sequential_mean() {
        // xorshift: terms like SSIM's (l, c near 1; s and the product of both signs), with
        // cancellation, growing and tiny terms. Whenever the bound decides, it must give the
        // sequential sum's mean bit for bit; it must decide most typical frames.
        let mut st = 0x9e3779b97f4a7c15u64;
        let mut rnd = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            (st >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut decided = 0;
        let mut typical = (0, 0);
        let mut wrong = Vec::new();
        for trial in 0..600 {
            let n = [1, 2, 255, 256, 257, 4099, 70_001][trial % 7];
            let kind = (trial / 7) % 7;
            // Kind 6: a mean within rounding noise of the midpoint of two floats (pairs of
            // terms that cancel around it), where sums in different orders round apart.
            let mid = 1.0 + f64::powi(2.0, -24) + (rnd() - 0.5) * f64::powi(2.0, -50);
            let mut last = 0.0;
            let x: Vec<f64> = (0..n)
                .map(|i| match kind {
                    6 => {
                        last = if i % 2 == 0 { 0.3 * rnd() } else { -last };
                        mid + last
                    }
                    0 => 0.9 + 0.1 * rnd(),
                    1 => 2.0 * rnd() - 1.0,
                    2 => (2.0 * rnd() - 1.0) * 1e6 + 1e-3,
                    3 => rnd() * i as f64,
                    4 => (rnd() * 1e-300) * if i % 2 == 0 { 1.0 } else { -1.0 },
                    _ => f64::from((0.5 + 0.5 * rnd()) as f32),
                })
                .collect();
            let (b, steps) = tree_bound(&x);
            let want = sequential_mean(&x);
            if kind == 0 || kind == 5 {
                typical.1 += 1;
            }
            if let Some(m) = b.mean_if_determined(n, steps) {
                decided += 1;
                if kind == 0 || kind == 5 {
                    typical.0 += 1;
                }
                if m.to_bits() != want.to_bits() {
                    wrong.push(format!(
                        "trial {trial} n {n} kind {kind}: {m:e} vs {want:e}"
                    ));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert!(decided > 0);
        assert!(
            typical.0 * 10 >= typical.1 * 9,
            "typical sums decided {} of {}",
            typical.0,
            typical.1
        );
    }

    #[test]
    fn bound_refuses_a_mean_between_two_floats() {
        // 1 + 2^-24 is halfway between the floats 1 and 1 + 2^-23: no interval around it rounds
        // to one float.
        let x = [1.0 + f64::powi(2.0, -24)];
        let (b, steps) = tree_bound(&x);
        assert_eq!(b.mean_if_determined(1, steps), None);
        // Just off the midpoint by far more than the bound: decided.
        let x = [1.0 + f64::powi(2.0, -24) + f64::powi(2.0, -40)];
        let (b, steps) = tree_bound(&x);
        assert_eq!(b.mean_if_determined(1, steps), Some(1.0 + f32::EPSILON));
        // Not finite: never decided.
        for bad in [f64::NAN, f64::INFINITY] {
            let (b, steps) = tree_bound(&[1.0, bad, 2.0]);
            assert_eq!(b.mean_if_determined(3, steps), None);
        }
        // All zero: +0.
        let (b, steps) = tree_bound(&[0.0; 300]);
        assert_eq!(b.mean_if_determined(300, steps).map(f32::to_bits), Some(0));
    }

    #[test]
    fn round_and_scale() {
        assert_eq!(iqa_round(0.5625), 1);
        assert_eq!(iqa_round(1.40625), 1);
        assert_eq!(iqa_round(2.5), 3);
        assert_eq!(iqa_round(2.8125), 3);
        // libvmaf's _round: -1.5 - (int)-1.5 = -0.5 < 0.5, so -1 (never reached: sizes are positive).
        assert_eq!(iqa_round(-1.5), -1);
        assert_eq!(auto_scale(176, 144), 1);
        assert_eq!(auto_scale(640, 360), 1);
        assert_eq!(auto_scale(1280, 720), 3);
        assert_eq!(auto_scale(1920, 1080), 4);
        assert_eq!(auto_scale(3840, 2160), 8);
    }

    #[test]
    fn flat_identical_frames() {
        // Every sample at the maximum: libvmaf 3.2.0 reports exactly 1 (its tool on such frames,
        // tests/companion_oracle.rs records it at 8..16 bits and several sizes).
        for bpc in 8..=16u8 {
            for (w, h) in [(11, 11), (33, 40), (700, 400)] {
                let v = vec![((1u32 << bpc) - 1) as u16; w * h];
                let p = Plane::from_slice(&v, w, h, bpc);
                let s = ssim(p, p).unwrap();
                assert_eq!(s.ssim, 1.0, "{w}x{h} bpc {bpc}");
                assert_eq!((s.l, s.c, s.s), (1.0, 1.0, 1.0));
            }
        }
        // Mid-grey is not exactly 1 in libvmaf's float arithmetic: its tool gives
        // 0.99999994039535522 for a flat 85 on both sides at 48x40, 8-bit 4:2:0.
        let v = vec![85u16; 48 * 40];
        let p = Plane::from_slice(&v, 48, 40, 8);
        assert_eq!(ssim(p, p).unwrap().ssim, 0.9999999403953552);
    }

    #[test]
    fn small_planes_are_refused() {
        let v = vec![0u16; 10 * 40];
        let p = Plane::from_slice(&v, 10, 40, 8);
        assert!(matches!(
            ssim(p, p),
            Err(Error::Unsupported {
                metric: "float_ssim",
                ..
            })
        ));
    }

    #[test]
    fn picture_copy_scaling() {
        for (bpc, v, want) in [
            (8u8, 200u16, 200.0f32),
            (10, 1023, 255.75),
            (12, 4095, 255.9375),
            (16, 65535, 65535.0 / 256.0),
            (9, 511, 255.5),
        ] {
            let d = [v];
            let p = Plane::from_slice(&d, 1, 1, bpc);
            assert_eq!(plane_to_float(&p), vec![want], "bpc {bpc}");
        }
    }
}
