//! SpEED chroma (`speed_chroma`) and SpEED temporal (`speed_temporal`), as libvmaf 3.2.0's plain C
//! path computes them, bit for bit.
//!
//! Sources (libvmaf 3.2.0, `libvmaf/src/feature/`): `speed.c` (both extractors, their options, the
//! per-plane pipeline `filter_and_downscale`, `est_params`, the small dense linear algebra and
//! `get_speed_score`), `vif_tools.c` (the Gaussian kernels, `vif_filter1d_s`, `vif_dec16_s`, the
//! prescalers nearest / bilinear / bicubic / lanczos4) and `picture_copy.c` (samples to float).
//!
//! Per plane, ref and dis separately:
//! 1. samples to float: `x - 128` (8 bits), `x/4 - 128` (10), `x/16 - 128` (12), `x/256 - 128` (16);
//! 2. optional prescale (`speed_prescale` not within 1e-3 of 1);
//! 3. a Gaussian anti-alias filter (9 taps at kernel scale 1), separable, mirrored borders,
//!    then decimation by 16. Decimation keeps one sample in 256, so only those are computed here
//!    (vertical pass on the kept rows, for the columns the kept horizontal taps read; horizontal
//!    pass at the kept columns), each in the C's tap order and types: the values are identical to
//!    filtering the whole frame;
//! 4. a small Gaussian (3 taps at kernel scale 1) on the decimated image, subtracted from it;
//! 5. `est_params` on the operating image truncated to multiples of 5: the 25 means and the
//!    25x25 covariance matrix of the 5x5 shifted sub-images, its eigenvalues (Householder
//!    tridiagonalisation + implicit QR, float), a Householder-QR solve, per 5x5 block the variance
//!    and the entropy. An eigenvalue below 1e-6 (or a QR pivot below 1e-6) makes the side
//!    "singular": its solution is zeroed.
//!
//! Then the score: the mean over blocks of `|ent_ref*log2(1+var_ref) - ent_dis*log2(1+w(var))|`.
//!
//! There is no integer accumulator in this module: everything is float or double, as in the C.

use std::f64::consts::{E, PI};

use crate::error::{Error, Result};
use crate::picture::Plane;

use linalg::{eigenvalues, solve_linear_system};

/// libvmaf's feature name of the chroma extractor.
pub const CHROMA_METRIC: &str = "speed_chroma";
/// libvmaf's feature name of the temporal extractor.
pub const TEMPORAL_METRIC: &str = "speed_temporal";

/// `NUM_SCALES` (speed.c): decimation by `1 << 4`.
const NUM_SCALES: u32 = 4;
/// `DEFAULT_BLOCK_SIZE` (speed.c).
const BLOCK: usize = 5;
/// `elements_in_block`: `BLOCK * BLOCK`.
const EIB: usize = BLOCK * BLOCK;
/// `EIGENVALUE_EPS` (speed.c).
const EIGENVALUE_EPS: f64 = 1e-6;
/// `EIGENVALUE_MAX_ITERS` (speed.c).
const EIGENVALUE_MAX_ITERS: usize = 500;

/// `valid_kernelscales` (vif_tools.h), as the float values the C table holds.
const VALID_KERNELSCALES: [f32; 21] = [
    1.0,
    1.0 / 2.0,
    3.0 / 2.0,
    2.0,
    2.0 / 3.0,
    24.0 / 10.0,
    360.0 / 97.0,
    4.0 / 3.0,
    3.5 / 3.0,
    3.75 / 3.0,
    4.25 / 3.0,
    5.0 / 3.0,
    3.0,
    1.0 / 2.25,
    1.4746,
    1.54,
    1.6,
    1.06667,
    0.711111,
    0.740740,
    1.111111,
];

/// `speed_prescale_method` (a string option in libvmaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PrescaleMethod {
    #[default]
    Nearest,
    Bilinear,
    Bicubic,
    Lanczos4,
}

impl PrescaleMethod {
    /// libvmaf's strings (`vif_get_scaling_method`, exact match).
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "nearest" => Some(PrescaleMethod::Nearest),
            "bilinear" => Some(PrescaleMethod::Bilinear),
            "bicubic" => Some(PrescaleMethod::Bicubic),
            "lanczos4" => Some(PrescaleMethod::Lanczos4),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PrescaleMethod::Nearest => "nearest",
            PrescaleMethod::Bilinear => "bilinear",
            PrescaleMethod::Bicubic => "bicubic",
            PrescaleMethod::Lanczos4 => "lanczos4",
        }
    }
}

/// The options of libvmaf's `speed_chroma` (speed.c `options_chroma`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpeedChromaParams {
    /// `speed_kernelscale` (ks): 0.1..=4.0 and one of the valid VIF kernel scales; default 1.0.
    pub kernelscale: f64,
    /// `speed_prescale` (ps): 0.1..=4.0; default 1.0 (no prescale within 1e-3 of 1).
    pub prescale: f64,
    /// `speed_prescale_method` (psm); default nearest.
    pub prescale_method: PrescaleMethod,
    /// `speed_sigma_nn` (snn): 0.1..=2.0; default 0.29.
    pub sigma_nn: f64,
    /// `speed_nn_floor` (nnf): 0.0..=1.0; default 0.0.
    pub nn_floor: f64,
    /// `speed_max_val` (mxv): 0.0..=1000.0; default 1000. The reported scores are `MIN(s, mxv)`.
    pub max_val: f64,
    /// `speed_weight_var_mode` (wvm): 0..=6; default 0.
    pub weight_var_mode: i32,
}

// `Eq` and `Hash` for the backend's `Companions`, which carries these options: they are finite
// numbers (`validate` refuses NaN), so `==` is an equivalence; the hash adds +0.0 so that -0.0
// and 0.0, which are equal, hash alike.
impl Eq for SpeedChromaParams {}

impl std::hash::Hash for SpeedChromaParams {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        hash_finite(
            [
                self.kernelscale,
                self.prescale,
                self.sigma_nn,
                self.nn_floor,
                self.max_val,
            ],
            h,
        );
        self.prescale_method.hash(h);
        self.weight_var_mode.hash(h);
    }
}

/// Hash finite options so that equal values hash alike (+0.0 makes -0.0 and 0.0 one value).
fn hash_finite<H: std::hash::Hasher>(values: [f64; 5], h: &mut H) {
    use std::hash::Hash;
    for v in values {
        (v + 0.0).to_bits().hash(h);
    }
}

/// speed.c `DEFAULT_SPEED_*`.
const DEFAULT_KERNELSCALE: f64 = 1.0;
const DEFAULT_PRESCALE: f64 = 1.0;
const DEFAULT_SIGMA_NN: f64 = 0.29;
const DEFAULT_NN_FLOOR: f64 = 0.0;
const DEFAULT_MAX_VAL: f64 = 1000.0;

impl Default for SpeedChromaParams {
    fn default() -> Self {
        SpeedChromaParams {
            kernelscale: DEFAULT_KERNELSCALE,
            prescale: DEFAULT_PRESCALE,
            prescale_method: PrescaleMethod::Nearest,
            sigma_nn: DEFAULT_SIGMA_NN,
            nn_floor: DEFAULT_NN_FLOOR,
            max_val: DEFAULT_MAX_VAL,
            weight_var_mode: 0,
        }
    }
}

/// The options of libvmaf's `speed_temporal` (speed.c `options`). It has no
/// `speed_weight_var_mode` (mode 0 always applies) and never applies `speed_max_val`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpeedTemporalParams {
    /// `speed_kernelscale` (ks), as for chroma.
    pub kernelscale: f64,
    /// `speed_prescale` (ps), as for chroma (but see [`SpeedTemporal::new`]).
    pub prescale: f64,
    /// `speed_prescale_method` (psm).
    pub prescale_method: PrescaleMethod,
    /// `speed_sigma_nn` (snn).
    pub sigma_nn: f64,
    /// `speed_nn_floor` (nnf).
    pub nn_floor: f64,
    /// `speed_max_val` (mxv): 0.0..=1000.0; validated and part of the feature name, but libvmaf's
    /// temporal extractor never applies it.
    pub max_val: f64,
    /// `speed_use_ref_diff` (urd, bool): the distorted difference is `prev_dis - cur_ref`
    /// instead of `prev_dis - cur_dis`.
    pub use_ref_diff: bool,
}

// `Eq` and `Hash` as for [`SpeedChromaParams`].
impl Eq for SpeedTemporalParams {}

impl std::hash::Hash for SpeedTemporalParams {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        hash_finite(
            [
                self.kernelscale,
                self.prescale,
                self.sigma_nn,
                self.nn_floor,
                self.max_val,
            ],
            h,
        );
        self.prescale_method.hash(h);
        self.use_ref_diff.hash(h);
    }
}

impl Default for SpeedTemporalParams {
    fn default() -> Self {
        SpeedTemporalParams {
            kernelscale: DEFAULT_KERNELSCALE,
            prescale: DEFAULT_PRESCALE,
            prescale_method: PrescaleMethod::Nearest,
            sigma_nn: DEFAULT_SIGMA_NN,
            nn_floor: DEFAULT_NN_FLOOR,
            max_val: DEFAULT_MAX_VAL,
            use_ref_diff: false,
        }
    }
}

/// libvmaf's option ranges (opt.c: inclusive; NaN is refused here) and `vif_validate_kernelscale`
/// (speed_init fails on a kernel scale outside the table, and libvmaf then crashes).
fn validate_common(
    metric: &str,
    kernelscale: f64,
    prescale: f64,
    sigma_nn: f64,
    nn_floor: f64,
    max_val: f64,
) -> Result<()> {
    let range = |name: &str, v: f64, lo: f64, hi: f64| -> Result<()> {
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(Error::Model(format!(
                "{metric}: {name} {v} is outside libvmaf's range {lo} to {hi}"
            )))
        }
    };
    range("speed_kernelscale", kernelscale, 0.1, 4.0)?;
    range("speed_prescale", prescale, 0.1, 4.0)?;
    range("speed_sigma_nn", sigma_nn, 0.1, 2.0)?;
    range("speed_nn_floor", nn_floor, 0.0, 1.0)?;
    range("speed_max_val", max_val, 0.0, 1000.0)?;
    if !valid_kernelscale(kernelscale as f32) {
        return Err(Error::Model(format!(
            "{metric}: speed_kernelscale {kernelscale} is not one of libvmaf's valid kernel scales \
             (vif_tools.h valid_kernelscales)"
        )));
    }
    Ok(())
}

/// `vif_validate_kernelscale`: within 1e-3 of a table entry, in float.
fn valid_kernelscale(ks: f32) -> bool {
    VALID_KERNELSCALES
        .iter()
        .any(|&v| (((ks - v).abs()) as f64) < 1e-3)
}

impl SpeedChromaParams {
    pub fn validate(&self) -> Result<()> {
        validate_common(
            CHROMA_METRIC,
            self.kernelscale,
            self.prescale,
            self.sigma_nn,
            self.nn_floor,
            self.max_val,
        )?;
        if !(0..=6).contains(&self.weight_var_mode) {
            return Err(Error::Model(format!(
                "{CHROMA_METRIC}: speed_weight_var_mode {} is outside libvmaf's range 0 to 6",
                self.weight_var_mode
            )));
        }
        Ok(())
    }
}

impl SpeedTemporalParams {
    pub fn validate(&self) -> Result<()> {
        validate_common(
            TEMPORAL_METRIC,
            self.kernelscale,
            self.prescale,
            self.sigma_nn,
            self.nn_floor,
            self.max_val,
        )
    }
}

/// The three chroma scores as libvmaf reports them (the f64 of what `extract_chroma` appends:
/// `MIN(score, speed_max_val)`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpeedChromaScores {
    pub u: f64,
    pub v: f64,
    pub uv: f64,
}

/// One plane's statistics after `est_params`' first step, for one side (reference or
/// distorted): the operating image (compact, after the local mean removal), the 25 means of the
/// 5x5 shifted sub-images (float sums, in source order) and the 25x25 covariance matrix (row
/// major; each a double sum in source order, rounded to float). This is what the GPU computes;
/// the host finishes the score from it ([`SpeedChroma::finish`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedSide {
    pub image: Vec<f32>,
    pub means: [f32; EIB],
    pub cov: Vec<f32>,
}

/// What a GPU needs to compute a plane's [`SpeedSide`] as the CPU does: the sizes and the
/// tables that the host computes (the prescale's indices and weights, the filters' taps and
/// the sampled filter's mirrored positions).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuLayout {
    /// The plane (`width`, `height`) and its depth.
    pub plane: (usize, usize),
    pub bpc: u8,
    /// The prescaled size (what the anti-alias filter reads).
    pub scaled: (usize, usize),
    /// The operating image (`scaled / 16`).
    pub op: (usize, usize),
    /// The submatrix of the means and covariances.
    pub sub: (usize, usize),
    /// The prescale, `None` where the filter reads the plane itself (no prescale, or a prescale
    /// that keeps the size: libvmaf copies the frame).
    pub prescale: Option<PrescaleTables>,
    /// The anti-alias filter's taps.
    pub taps: Vec<f32>,
    /// Per kept row `a` (`op.1` of them), the source rows of its taps (`taps.len()` each).
    pub rows: Vec<usize>,
    /// The source columns the kept horizontal taps read, ascending.
    pub needed: Vec<usize>,
    /// Per kept column `b` (`op.0` of them), its taps as positions in `needed`.
    pub cols: Vec<usize>,
    /// The local-mean filter's taps (mirrored on the operating image).
    pub small_taps: Vec<f32>,
}

/// A prescale as tables: per output column and per output row, `taps` source indices (mirrored)
/// and `taps` weights, as the CPU computes them. Nearest: one index, no weight; bilinear: two
/// indices and one weight (`dx`, `dy`); bicubic: 4 and 4; lanczos4: 9 and 9.
#[derive(Clone, Debug, PartialEq)]
pub struct PrescaleTables {
    pub method: PrescaleMethod,
    pub taps: usize,
    pub col_index: Vec<usize>,
    pub col_weight: Vec<f32>,
    pub row_index: Vec<usize>,
    pub row_weight: Vec<f32>,
}

// ---------------------------------------------------------------------------------------------
// Gaussian kernels (vif_tools.c)

/// `round_up_to_odd`.
fn round_up_to_odd(f: f32) -> i32 {
    let ceiling = (f as f64).ceil() as i32;
    if ceiling % 2 == 0 {
        ceiling + 1
    } else {
        ceiling
    }
}

/// `vif_get_filter_size(scale, kernelscale)`.
fn filter_size(scale: u32, kernelscale: f32) -> usize {
    let n = (1i32 << (4 - scale)) + 1;
    round_up_to_odd(n as f32 * kernelscale).max(3) as usize
}

/// `get_gaussian_pdf`.
fn gaussian_pdf(x: f32, mean: f32, stdev: f32) -> f32 {
    let xm = (x - mean) as f64;
    let sd = stdev as f64;
    let num = ((-0.5 * xm / sd * xm / sd).exp()) as f32;
    let den = (1.0 / (sd * (2.0 * PI).sqrt())) as f32;
    num / den
}

/// `get_1d_gaussian_kernel`.
fn gaussian_kernel(size: usize, stdev: f32) -> Vec<f32> {
    let k = (size as i32 - 1) / 2;
    let mut out: Vec<f32> = (0..size as i32)
        .map(|i| gaussian_pdf((i - k) as f32, 0.0, stdev))
        .collect();
    let mut sum = 0.0f32;
    for &o in &out {
        sum += o;
    }
    for o in &mut out {
        *o /= sum;
    }
    out
}

/// `speed_get_antialias_filter(out, NUM_SCALES, kernelscale)`: the scale-1 size with sigma
/// `sqrt(4) * size / 5`.
fn antialias_filter(kernelscale: f32) -> Vec<f32> {
    let size = filter_size(1, kernelscale);
    let stdev = ((NUM_SCALES as f64).sqrt() * size as f64 / 5.0) as f32;
    gaussian_kernel(size, stdev)
}

/// `vif_get_filter(out, NUM_SCALES, kernelscale)`.
fn small_filter(kernelscale: f32) -> Vec<f32> {
    let size = filter_size(NUM_SCALES, kernelscale);
    gaussian_kernel(size, size as f32 / 5.0)
}

// ---------------------------------------------------------------------------------------------
// Separable filter (vif_filter1d_s) and its mirrored taps

/// The mirrored index `vif_filter1d_s` reads for tap position `i` in a dimension of `n`:
/// `-i` below 0, `2n - i - 2` from `n` on. `None` if even that is outside (a dimension too small
/// for the filter; the callers refuse those sizes first).
fn mirror_tap(i: isize, n: usize) -> Option<usize> {
    let n = n as isize;
    let m = if i < 0 {
        -i
    } else if i >= n {
        2 * n - i - 2
    } else {
        i
    };
    if (0..n).contains(&m) {
        Some(m as usize)
    } else {
        None
    }
}

/// For each position `p` in `positions`, the `fw` mirrored source indices of its taps
/// (`p - fw/2 + t`), flattened.
fn tap_table(
    metric: &'static str,
    positions: impl Iterator<Item = usize>,
    n: usize,
    fw: usize,
) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for p in positions {
        for t in 0..fw {
            let i = p as isize - (fw / 2) as isize + t as isize;
            out.push(mirror_tap(i, n).ok_or_else(|| Error::Unsupported {
                metric,
                reason: format!("a dimension of {n} is too small for the {fw}-tap filter"),
            })?);
        }
    }
    Ok(out)
}

/// `vif_filter1d_s` (the C fallback) on a `w` x `h` image with row stride `stride`: for each
/// row, the vertical pass over all columns, then the horizontal pass; float accumulation in tap
/// order. Output compact (stride `w`).
fn filter1d_full(
    metric: &'static str,
    taps: &[f32],
    src: &[f32],
    w: usize,
    h: usize,
    stride: usize,
) -> Result<Vec<f32>> {
    let fw = taps.len();
    let rows = tap_table(metric, 0..h, h, fw)?;
    let cols = tap_table(metric, 0..w, w, fw)?;
    let mut tmp = vec![0.0f32; w];
    let mut dst = vec![0.0f32; w * h];
    for i in 0..h {
        let ri = &rows[i * fw..(i + 1) * fw];
        for (j, t) in tmp.iter_mut().enumerate() {
            let mut accum = 0.0f32;
            for (&f, &ii) in taps.iter().zip(ri) {
                accum += f * src[ii * stride + j];
            }
            *t = accum;
        }
        let drow = &mut dst[i * w..(i + 1) * w];
        for (j, d) in drow.iter_mut().enumerate() {
            let cj = &cols[j * fw..(j + 1) * fw];
            let mut accum = 0.0f32;
            for (&f, &jj) in taps.iter().zip(cj) {
                accum += f * tmp[jj];
            }
            *d = accum;
        }
    }
    Ok(dst)
}

/// The anti-alias filter followed by `vif_dec16_s`, computing only the samples decimation keeps:
/// output `(a, b)` is the filtered sample at `(16a, 16b)` of the `w` x `h` image.
#[derive(Debug)]
struct SampledFilter {
    taps: Vec<f32>,
    /// For each kept row `a`, the source rows of its vertical taps (mirrored in `h`).
    rows: Vec<usize>,
    /// The distinct source columns the kept horizontal taps read, ascending.
    needed: Vec<usize>,
    /// For each kept column `b`, its horizontal taps as positions in `needed`.
    cols: Vec<usize>,
    out_w: usize,
    out_h: usize,
}

impl SampledFilter {
    fn new(metric: &'static str, taps: Vec<f32>, w: usize, h: usize) -> Result<Self> {
        let fw = taps.len();
        let (out_w, out_h) = (w / 16, h / 16);
        let rows = tap_table(metric, (0..out_h).map(|a| a * 16), h, fw)?;
        let src_cols = tap_table(metric, (0..out_w).map(|b| b * 16), w, fw)?;
        let mut used = vec![false; w];
        for &c in &src_cols {
            used[c] = true;
        }
        let needed: Vec<usize> = (0..w).filter(|&c| used[c]).collect();
        let mut pos = vec![0usize; w];
        for (k, &c) in needed.iter().enumerate() {
            pos[c] = k;
        }
        let cols = src_cols.iter().map(|&c| pos[c]).collect();
        Ok(SampledFilter {
            taps,
            rows,
            needed,
            cols,
            out_w,
            out_h,
        })
    }

    /// The filtered and decimated image (compact, `out_w` x `out_h`) of `src` (row stride
    /// `stride`, at least the `w` x `h` of construction).
    fn apply(&self, src: &[f32], stride: usize) -> Vec<f32> {
        let fw = self.taps.len();
        let mut vert = vec![0.0f32; self.needed.len()];
        let mut out = vec![0.0f32; self.out_w * self.out_h];
        for a in 0..self.out_h {
            // Vertical pass (the C's `accum`, from 0, one tap after another) at the needed columns.
            vert.fill(0.0);
            for (&f, &ii) in self.taps.iter().zip(&self.rows[a * fw..(a + 1) * fw]) {
                let row = &src[ii * stride..];
                for (v, &c) in vert.iter_mut().zip(&self.needed) {
                    *v += f * row[c];
                }
            }
            // Horizontal pass at the kept columns.
            for b in 0..self.out_w {
                let mut accum = 0.0f32;
                for (&f, &k) in self.taps.iter().zip(&self.cols[b * fw..(b + 1) * fw]) {
                    accum += f * vert[k];
                }
                out[a * self.out_w + b] = accum;
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Prescalers (vif_tools.c)

mod prescale;
use prescale::*;

// ---------------------------------------------------------------------------------------------
// Dense linear algebra on the 25x25 covariance matrix (speed.c), float throughout

mod linalg;

// ---------------------------------------------------------------------------------------------
// Geometry (speed_init_dimensions) and the shared per-plane pipeline

#[derive(Clone, Copy, Debug)]
struct Dims {
    orig_w: usize,
    orig_h: usize,
    scaled_w: usize,
    scaled_h: usize,
    /// The decimated image (`scaled >> 4`).
    op_w: usize,
    op_h: usize,
    trunc_w: usize,
    trunc_h: usize,
    nbh: usize,
    nb: usize,
    sub_w: usize,
    sub_h: usize,
}

/// `ALMOST_EQUAL(speed_prescale, 1.0)`: no prescale.
fn prescale_off(prescale: f64) -> bool {
    (prescale - 1.0).abs() < 1.0e-3
}

impl Dims {
    fn new(metric: &'static str, w: usize, h: usize, prescale: f64) -> Result<Dims> {
        let scaled = |n: usize| (n as f64 * prescale + 0.5) as i32 as usize;
        let (scaled_w, scaled_h) = (scaled(w), scaled(h));
        let (op_w, op_h) = (scaled_w >> NUM_SCALES, scaled_h >> NUM_SCALES);
        let trunc_w = op_w / BLOCK * BLOCK;
        let trunc_h = op_h / BLOCK * BLOCK;
        if trunc_w == 0 || trunc_h == 0 {
            let scaled_note = if prescale_off(prescale) {
                String::new()
            } else {
                format!(" (prescaled by {prescale} to {scaled_w}x{scaled_h})")
            };
            return Err(Error::Unsupported {
                metric,
                reason: format!(
                    "a {w}x{h} plane{scaled_note} has an operating size of {op_w}x{op_h} \
                     (the plane / 16), below SpEED's 5x5 block; libvmaf reports \"SpEED: image \
                     too small\" and crashes"
                ),
            });
        }
        Ok(Dims {
            orig_w: w,
            orig_h: h,
            scaled_w,
            scaled_h,
            op_w,
            op_h,
            trunc_w,
            trunc_h,
            nbh: trunc_w / BLOCK,
            nb: (trunc_w / BLOCK) * (trunc_h / BLOCK),
            sub_w: trunc_w - BLOCK + 1,
            sub_h: trunc_h - BLOCK + 1,
        })
    }
}

/// The per-block entropies and variances of one side (`SpeedResultBuffers`).
struct Est {
    entropies: Vec<f32>,
    variances: Vec<f32>,
}

/// `log2(2 * M_PI * M_E)`.
fn log2_2pie() -> f64 {
    (2.0 * PI * E).log2()
}

/// Everything `speed_init` prepares, plus the options `speed_extract_score` reads.
#[derive(Debug)]
struct Core {
    metric: &'static str,
    dims: Dims,
    /// `None` when the prescale is off (within 1e-3 of 1).
    prescaler: Option<Prescaler>,
    /// `speed_prescale_method` (for the GPU's tables).
    method: PrescaleMethod,
    antialias: SampledFilter,
    small_taps: Vec<f32>,
    sigma_nn: f32,
    nn_floor: f32,
    weight_var_mode: i32,
}

impl Core {
    #[allow(clippy::too_many_arguments)]
    fn new(
        metric: &'static str,
        w: usize,
        h: usize,
        bpc: u8,
        kernelscale: f64,
        prescale: f64,
        method: PrescaleMethod,
        sigma_nn: f64,
        nn_floor: f64,
        weight_var_mode: i32,
    ) -> Result<Core> {
        if !matches!(bpc, 8 | 10 | 12 | 16) {
            return Err(Error::Unsupported {
                metric,
                reason: format!(
                    "{bpc}-bit samples: libvmaf's picture_copy converts only 8, 10, 12 and 16 \
                     bits (other depths are read as bytes)"
                ),
            });
        }
        if w == 0 || h == 0 {
            return Err(Error::Geometry(format!("{metric}: empty {w}x{h} plane")));
        }
        let dims = Dims::new(metric, w, h, prescale)?;
        let prescaler = if prescale_off(prescale) {
            if dims.scaled_w > w || dims.scaled_h > h {
                return Err(Error::Unsupported {
                    metric,
                    reason: format!(
                        "speed_prescale {prescale} is within 1e-3 of 1, so libvmaf does not \
                         prescale, yet filters a {}x{} frame larger than the {w}x{h} plane \
                         (reading memory it never wrote)",
                        dims.scaled_w, dims.scaled_h
                    ),
                });
            }
            None
        } else {
            Some(Prescaler::new(method, w, h, dims.scaled_w, dims.scaled_h)?)
        };
        let ks = kernelscale as f32;
        let antialias =
            SampledFilter::new(metric, antialias_filter(ks), dims.scaled_w, dims.scaled_h)?;
        let small_taps = small_filter(ks);
        // The small filter's mirror must stay inside the operating image.
        tap_table(metric, 0..dims.op_w, dims.op_w, small_taps.len())?;
        tap_table(metric, 0..dims.op_h, dims.op_h, small_taps.len())?;
        Ok(Core {
            metric,
            dims,
            prescaler,
            method,
            antialias,
            small_taps,
            sigma_nn: sigma_nn as f32,
            nn_floor: nn_floor as f32,
            weight_var_mode,
        })
    }

    /// [`GpuLayout`] of this geometry at depth `bpc`.
    fn gpu_layout(&self, bpc: u8) -> Result<GpuLayout> {
        let d = &self.dims;
        let prescale = match &self.prescaler {
            None | Some(Prescaler::Identity) => None,
            Some(_) => Some(prescale_tables(
                self.method,
                (d.orig_w, d.orig_h),
                (d.scaled_w, d.scaled_h),
            )?),
        };
        let f = &self.antialias;
        Ok(GpuLayout {
            plane: (d.orig_w, d.orig_h),
            bpc,
            scaled: (d.scaled_w, d.scaled_h),
            op: (d.op_w, d.op_h),
            sub: (d.sub_w, d.sub_h),
            prescale,
            taps: f.taps.clone(),
            rows: f.rows.clone(),
            needed: f.needed.clone(),
            cols: f.cols.clone(),
            small_taps: self.small_taps.clone(),
        })
    }

    /// `filter_and_downscale` of the compact `orig_w` x `orig_h` float image: the operating image
    /// (compact, `op_w` x `op_h`) after local mean subtraction.
    fn filter_and_downscale(&self, img: &[f32]) -> Result<Vec<f32>> {
        let d = &self.dims;
        let mut small = match &self.prescaler {
            // Without prescale the filter reads the top-left scaled_w x scaled_h of the plane.
            None => self.antialias.apply(img, d.orig_w),
            Some(p) => {
                let scaled = p.apply(img, d.orig_w, d.orig_h, d.scaled_w, d.scaled_h)?;
                self.antialias.apply(&scaled, d.scaled_w)
            }
        };
        let blurred = filter1d_full(
            self.metric,
            &self.small_taps,
            &small,
            d.op_w,
            d.op_h,
            d.op_w,
        )?;
        for (s, b) in small.iter_mut().zip(&blurred) {
            *s -= *b;
        }
        Ok(small)
    }

    /// `est_params`' first step on an operating image (compact, `op_w` x `op_h`): the 25 means
    /// of the shifted sub-images (float sums) and the 25x25 covariance matrix (double sums, each
    /// rounded to float). The GPU computes the same ([`SpeedSide`]).
    fn side(&self, data: Vec<f32>) -> SpeedSide {
        let d = &self.dims;
        let stride = d.op_w;
        let (sw, sh) = (d.sub_w, d.sub_h);
        let count = sw * sh;

        // The 25 means (float sums) and the covariance matrix (double sums).
        let mut means = [0.0f32; EIB];
        let mut centered: Vec<Vec<f64>> = Vec::with_capacity(EIB);
        for (k, m) in means.iter_mut().enumerate() {
            let (r0, c0) = (k / BLOCK, k % BLOCK);
            let mut sum = 0.0f32;
            for i in 0..sh {
                for &v in &data[(r0 + i) * stride + c0..(r0 + i) * stride + c0 + sw] {
                    sum += v;
                }
            }
            *m = sum / count as f32;
            let mean = *m as f64;
            let mut c = Vec::with_capacity(count);
            for i in 0..sh {
                for &v in &data[(r0 + i) * stride + c0..(r0 + i) * stride + c0 + sw] {
                    c.push(v as f64 - mean);
                }
            }
            centered.push(c);
        }
        // compute_cov_kernel_scalar: each covariance one sequential double sum over the
        // submatrix, row by row. Four independent sums share a pass (each keeps its own order).
        let mut cov = vec![0.0f32; EIB * EIB];
        let mut store = |x: usize, y: usize, acc: f64| {
            let c = (acc / count as f64) as f32;
            cov[x * EIB + y] = c;
            cov[y * EIB + x] = c;
        };
        for x in 0..EIB {
            let cx = &centered[x][..count];
            let mut y = 0;
            while y + 4 <= x + 1 {
                let c0 = &centered[y][..count];
                let c1 = &centered[y + 1][..count];
                let c2 = &centered[y + 2][..count];
                let c3 = &centered[y + 3][..count];
                let (mut a0, mut a1, mut a2, mut a3) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
                for i in 0..count {
                    let v = cx[i];
                    a0 += v * c0[i];
                    a1 += v * c1[i];
                    a2 += v * c2[i];
                    a3 += v * c3[i];
                }
                store(x, y, a0);
                store(x, y + 1, a1);
                store(x, y + 2, a2);
                store(x, y + 3, a3);
                y += 4;
            }
            while y <= x {
                let mut acc = 0.0f64;
                for (&a, &b) in cx.iter().zip(&centered[y][..count]) {
                    acc += a * b;
                }
                store(x, y, acc);
                y += 1;
            }
        }
        SpeedSide {
            image: data,
            means,
            cov,
        }
    }

    /// The rest of `est_params` (the host's part on every route): from a side's operating image
    /// and covariance matrix, the entropies and variances, and whether the side was singular
    /// (`-EINVAL`).
    fn est_params(&self, side: &SpeedSide) -> (Est, bool) {
        let d = &self.dims;
        let stride = d.op_w;
        let data = &side.image[..];
        let cov = &side.cov[..];

        // Step 2: eigenvalues.
        let eig = eigenvalues(cov, EIB);

        // Step 3: the independent term Y (EIB x nb): row = position in the block, column =
        // block index.
        let nb = d.nb;
        let mut y = vec![0.0f32; EIB * nb];
        for i in 0..d.trunc_h {
            for j in 0..d.trunc_w {
                let row = (i % BLOCK) * BLOCK + j % BLOCK;
                let col = (i / BLOCK) * d.nbh + j / BLOCK;
                y[row * nb + col] = data[i * stride + j];
            }
        }

        // Step 4: solve K X = Y unless K is singular.
        // is_matrix_regular: `eigenvalue < EIGENVALUE_EPS` makes it singular (a NaN does not).
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let regular = eig.iter().all(|&e| !((e as f64) < EIGENVALUE_EPS));
        let solution = if regular {
            solve_linear_system(cov, EIB, &y, nb)
        } else {
            None
        };
        let singular = solution.is_none();
        let mut x = solution.unwrap_or_else(|| vec![0.0f32; EIB * nb]);

        // Step 5: Z = (X * Y) / 25, pointwise.
        let denominator = EIB as f32;
        for (xv, &yv) in x.iter_mut().zip(&y) {
            *xv = (*xv * yv) / denominator;
        }
        // Step 6: S = the column sums, into row 0.
        for i in 1..EIB {
            for j in 0..nb {
                let v = x[i * nb + j];
                x[j] += v;
            }
        }
        x.truncate(nb);
        let variances = x;

        // Steps 8-9: the entropies.
        let l2 = log2_2pie();
        let mut entropies = vec![0.0f32; nb];
        for &e in &eig {
            let l = if e < 0.0 { 0.0 } else { e };
            for (ent, &s) in entropies.iter_mut().zip(&variances) {
                // entropy += log2(L * S + sigma_nn) + log2(2 pi e): the right side first.
                *ent = (*ent as f64 + (((l * s + self.sigma_nn) as f64).log2() + l2)) as f32;
            }
        }
        (
            Est {
                entropies,
                variances,
            },
            singular,
        )
    }

    /// `get_speed_score` with mode `wvm`.
    fn speed_score(&self, r: &Est, d: &Est, wvm: i32) -> f32 {
        let l2 = log2_2pie();
        let base_entropy =
            (EIB as f64 * ((((1.0 + self.nn_floor) * self.sigma_nn) as f64).log2() + l2)) as f32;
        let lg = |v: f32| ((1.0 + v) as f64).log2();
        let lgd = |v: f64| (1.0 + v).log2();
        let mut score = 0.0f32;
        for i in 0..self.dims.nb {
            let (re, de) = (r.entropies[i], d.entropies[i]);
            let (rv, dv) = (r.variances[i], d.variances[i]);
            if re < base_entropy && de < base_entropy {
                score += 0.0;
                continue;
            }
            let (sr, sd) = match wvm {
                0 => (re as f64 * lg(rv), de as f64 * lg(dv)),
                1 => (re as f64 * lg(rv), de as f64 * lg(rv)),
                2 => (re as f64 * lg(dv), de as f64 * lg(dv)),
                3 => {
                    let m = lgd((rv + dv) as f64 / 2.0);
                    (re as f64 * m, de as f64 * m)
                }
                4 => (re as f64 * lg(rv), de as f64 * lgd((rv + dv) as f64 / 2.0)),
                5 => (
                    re as f64 * lg(rv),
                    de as f64 * lgd(0.75 * rv as f64 + 0.25 * dv as f64),
                ),
                6 => (
                    re as f64 * lg(rv),
                    de as f64 * lgd(0.25 * rv as f64 + 0.75 * dv as f64),
                ),
                // Refused by validate(); libvmaf returns -EINVAL as the score.
                _ => return -22.0,
            };
            let (sr, sd) = (sr as f32, sd as f32);
            score += (sr - sd).abs();
        }
        score / self.dims.nb as f32
    }

    /// `speed_extract_score` from the two sides' statistics (the shared tail of the CPU and
    /// GPU routes).
    fn score_of(&self, r: &SpeedSide, d: &SpeedSide) -> (f32, bool) {
        let (re, err_r) = self.est_params(r);
        let (de, err_d) = self.est_params(d);
        let score = if err_r != err_d {
            0.0
        } else {
            self.speed_score(&re, &de, self.weight_var_mode)
        };
        (score, err_r || err_d)
    }

    /// That a side has the sizes of this geometry (statistics from elsewhere, e.g. a GPU).
    fn check_side(&self, s: &SpeedSide) -> Result<()> {
        let d = &self.dims;
        if s.image.len() != d.op_w * d.op_h || s.cov.len() != EIB * EIB {
            return Err(Error::Backend(format!(
                "{}: statistics of {} samples and {} covariances, expected {} and {}",
                self.metric,
                s.image.len(),
                s.cov.len(),
                d.op_w * d.op_h,
                EIB * EIB
            )));
        }
        Ok(())
    }

    /// `picture_copy(..., -128, bpc, ...)`: the plane as a compact float image. The plane must be
    /// exactly `orig_w` x `orig_h` at depth `bpc`.
    fn to_float(&self, p: &Plane<'_>, bpc: u8, what: &str) -> Result<Vec<f32>> {
        let (w, h) = (self.dims.orig_w, self.dims.orig_h);
        if p.width != w || p.height != h || p.bpc != bpc {
            return Err(Error::Mismatch(format!(
                "{}: {what} plane is {}x{} at {} bits, expected {w}x{h} at {bpc} bits",
                self.metric, p.width, p.height, p.bpc
            )));
        }
        if p.stride < w || p.data.len() < p.stride * (h - 1) + w {
            return Err(Error::Geometry(format!(
                "{}: {what} plane of {} samples with stride {} is too small for {w}x{h}",
                self.metric,
                p.data.len(),
                p.stride
            )));
        }
        let scaler: f32 = match bpc {
            10 => 4.0,
            12 => 16.0,
            16 => 256.0,
            _ => 1.0,
        };
        let offset = -128.0f32;
        let mut out = Vec::with_capacity(w * h);
        for y in 0..h {
            let row = &p.data[y * p.stride..y * p.stride + w];
            if bpc == 8 {
                out.extend(row.iter().map(|&s| s as f32 + offset));
            } else {
                out.extend(row.iter().map(|&s| s as f32 / scaler + offset));
            }
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------------
// The extractors

/// libvmaf's `speed_chroma` for one chroma plane geometry. Stateless per frame.
#[derive(Debug)]
pub struct SpeedChroma {
    core: Core,
    bpc: u8,
    max_val: f64,
}

/// `MIN(score, max_val)` as the C macro evaluates it (a float against a double: the result is a
/// double; a NaN score gives `max_val`).
fn min_c(score: f32, max_val: f64) -> f64 {
    if (score as f64) < max_val {
        score as f64
    } else {
        max_val
    }
}

impl SpeedChroma {
    /// `width` x `height`: the chroma plane size libvmaf scores (luma `w >> ss_x`, `h >> ss_y`);
    /// `bpc` of the samples (8, 10, 12 or 16).
    ///
    /// Refused ([`Error::Unsupported`]): an operating size (the plane, prescaled, / 16) below 5x5
    /// in either dimension (libvmaf crashes), a depth libvmaf does not convert, and a prescale
    /// within 1e-3 of 1 but rounding the size up (libvmaf reads memory it never wrote).
    pub fn new(p: &SpeedChromaParams, width: usize, height: usize, bpc: u8) -> Result<SpeedChroma> {
        p.validate()?;
        let core = Core::new(
            CHROMA_METRIC,
            width,
            height,
            bpc,
            p.kernelscale,
            p.prescale,
            p.prescale_method,
            p.sigma_nn,
            p.nn_floor,
            p.weight_var_mode,
        )?;
        Ok(SpeedChroma {
            core,
            bpc,
            max_val: p.max_val,
        })
    }

    /// The scores of one frame. Each plane must be exactly the size of construction.
    pub fn compute(
        &self,
        ref_u: &Plane<'_>,
        ref_v: &Plane<'_>,
        dis_u: &Plane<'_>,
        dis_v: &Plane<'_>,
    ) -> Result<SpeedChromaScores> {
        let sides = self.sides(ref_u, ref_v, dis_u, dis_v)?;
        self.finish(&sides)
    }

    /// The per-plane statistics of one frame ([`SpeedSide`]: what the GPU computes), in the
    /// order reference U, distorted U, reference V, distorted V. Each plane must be exactly the
    /// size of construction.
    pub fn sides(
        &self,
        ref_u: &Plane<'_>,
        ref_v: &Plane<'_>,
        dis_u: &Plane<'_>,
        dis_v: &Plane<'_>,
    ) -> Result<[SpeedSide; 4]> {
        let c = &self.core;
        let side = |p: &Plane<'_>, what: &str| -> Result<SpeedSide> {
            Ok(c.side(c.filter_and_downscale(&c.to_float(p, self.bpc, what)?)?))
        };
        Ok([
            side(ref_u, "reference U")?,
            side(dis_u, "distorted U")?,
            side(ref_v, "reference V")?,
            side(dis_v, "distorted V")?,
        ])
    }

    /// The scores from the four sides' statistics (reference U, distorted U, reference V,
    /// distorted V): eigenvalues, QR, entropies and the score, the host's part on every route.
    pub fn finish(&self, sides: &[SpeedSide; 4]) -> Result<SpeedChromaScores> {
        let c = &self.core;
        for s in sides {
            c.check_side(s)?;
        }
        let (u, err_u) = c.score_of(&sides[0], &sides[1]);
        let (v, err_v) = c.score_of(&sides[2], &sides[3]);
        // One singular channel: uv takes the other one's score.
        let uv = if err_u && !err_v {
            v
        } else if err_v && !err_u {
            u
        } else {
            ((u + v) as f64 / 2.0) as f32
        };
        Ok(SpeedChromaScores {
            u: min_c(u, self.max_val),
            v: min_c(v, self.max_val),
            uv: min_c(uv, self.max_val),
        })
    }

    /// What a GPU needs to compute [`SpeedChroma::sides`]: the sizes and the host-computed
    /// tables ([`GpuLayout`]).
    pub fn gpu_layout(&self) -> Result<GpuLayout> {
        self.core.gpu_layout(self.bpc)
    }
}

/// libvmaf's `speed_temporal` for one luma geometry. Stateless: the caller passes the previous
/// frame's planes back in.
///
/// libvmaf keeps the previous frame's planes as converted floats, untouched by the previous
/// frame's computation (it only subtracts the current frame from them and then filters that
/// difference in place, and the next frame overwrites that buffer). So frame `i`'s score depends
/// on `float(prev) - float(cur)` only, which this recomputes exactly from the raw planes.
#[derive(Debug)]
pub struct SpeedTemporal {
    core: Core,
    bpc: u8,
    use_ref_diff: bool,
}

impl SpeedTemporal {
    /// `width` x `height`: the luma size; `bpc` 8, 10, 12 or 16.
    ///
    /// Refused ([`Error::Unsupported`]) as for [`SpeedChroma::new`], and also a prescale that
    /// makes the frame taller: libvmaf's temporal frame buffers hold only the original height,
    /// so it reads and writes past them.
    pub fn new(
        p: &SpeedTemporalParams,
        width: usize,
        height: usize,
        bpc: u8,
    ) -> Result<SpeedTemporal> {
        p.validate()?;
        let core = Core::new(
            TEMPORAL_METRIC,
            width,
            height,
            bpc,
            p.kernelscale,
            p.prescale,
            p.prescale_method,
            p.sigma_nn,
            p.nn_floor,
            0,
        )?;
        if core.dims.scaled_h > height {
            return Err(Error::Unsupported {
                metric: TEMPORAL_METRIC,
                reason: format!(
                    "speed_prescale {} makes the {width}x{height} frame {}x{}: libvmaf's temporal \
                     buffers hold only the original height (heap overflow)",
                    p.prescale, core.dims.scaled_w, core.dims.scaled_h
                ),
            });
        }
        Ok(SpeedTemporal {
            core,
            bpc,
            use_ref_diff: p.use_ref_diff,
        })
    }

    /// The score of one frame: 0 for the first (`prev = None`), as libvmaf. `prev` is
    /// `(prev_ref, prev_dis)`. The score is not clipped to `speed_max_val` (libvmaf does not).
    pub fn compute(
        &self,
        prev: Option<(&Plane<'_>, &Plane<'_>)>,
        cur_ref: &Plane<'_>,
        cur_dis: &Plane<'_>,
    ) -> Result<f64> {
        match prev {
            None => {
                // The current planes are checked all the same.
                self.core.to_float(cur_ref, self.bpc, "reference")?;
                self.core.to_float(cur_dis, self.bpc, "distorted")?;
                Ok(0.0)
            }
            Some(prev) => self.finish(&self.sides(prev, cur_ref, cur_dis)?),
        }
    }

    /// The statistics ([`SpeedSide`]: what the GPU computes) of the reference's and the
    /// distorted picture's temporal differences, in that order, for a frame with a previous
    /// one (`prev`: the previous reference and distorted planes). Each plane must be exactly
    /// the size of construction.
    pub fn sides(
        &self,
        prev: (&Plane<'_>, &Plane<'_>),
        cur_ref: &Plane<'_>,
        cur_dis: &Plane<'_>,
    ) -> Result<[SpeedSide; 2]> {
        let c = &self.core;
        let cr = c.to_float(cur_ref, self.bpc, "reference")?;
        let cd = c.to_float(cur_dis, self.bpc, "distorted")?;
        let mut dr = c.to_float(prev.0, self.bpc, "previous reference")?;
        let mut dd = c.to_float(prev.1, self.bpc, "previous distorted")?;
        // subtract_image: prev -= cur (dis: prev_dis - cur_ref with speed_use_ref_diff).
        for (p, &q) in dr.iter_mut().zip(&cr) {
            *p -= q;
        }
        let sub = if self.use_ref_diff { &cr } else { &cd };
        for (p, &q) in dd.iter_mut().zip(sub) {
            *p -= q;
        }
        Ok([
            c.side(c.filter_and_downscale(&dr)?),
            c.side(c.filter_and_downscale(&dd)?),
        ])
    }

    /// The score from the two sides' statistics (reference, distorted): eigenvalues, QR,
    /// entropies and the score, the host's part on every route.
    pub fn finish(&self, sides: &[SpeedSide; 2]) -> Result<f64> {
        let c = &self.core;
        c.check_side(&sides[0])?;
        c.check_side(&sides[1])?;
        let (score, _) = c.score_of(&sides[0], &sides[1]);
        Ok(score as f64)
    }

    /// Whether the distorted side's difference subtracts the current reference
    /// (`speed_use_ref_diff`) instead of the current distorted picture.
    pub fn uses_ref_diff(&self) -> bool {
        self.use_ref_diff
    }

    /// What a GPU needs to compute [`SpeedTemporal::sides`]: the sizes and the host-computed
    /// tables ([`GpuLayout`]; its `plane` is the luma's size).
    pub fn gpu_layout(&self) -> Result<GpuLayout> {
        self.core.gpu_layout(self.bpc)
    }
}

#[cfg(test)]
mod tests;
