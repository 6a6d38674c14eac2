//! CAMBI (`cambi`), libvmaf 3.2.0's no-reference banding score, as its plain C path computes it,
//! bit for bit.
//!
//! Sources (libvmaf 3.2.0, `libvmaf/src/feature/`): `cambi.c` (options, `init`, preprocessing,
//! spatial mask, decimation, mode filter, c-values, pooling, `extract`), `cambi.h` (the
//! reciprocal table and the histogram updates) and `luminance_tools.c` (the BT.1886 and PQ
//! EOTFs and the limited-range normalisation behind the TVI and visibility thresholds).
//!
//! Per frame, of the distorted luma only (the reference is read only with `full_ref`):
//!
//! 1. **Preprocessing.** Nearest-neighbour resampling to `enc_width` x `enc_height` when that is
//!    smaller than the input (libvmaf's float index accumulation, replayed once in [`Cambi::new`]
//!    into index tables); conversion to 10 bits (`<<` below 10 bits, `(v + round) >> (bpc - 10)`
//!    above); the 2x2 anti-dithering average when `enc_bitdepth` < 10.
//! 2. **Spatial mask.** A pixel is "flat" when it equals its right and bottom neighbours (the
//!    last column and row count as equal); the mask is set where the zero-padded 7x7 count of
//!    flat pixels exceeds `mask_index` (`mask_index`).
//! 3. **Five scales.** At scale > 0 (and at scale 0 when the high-resolution speed-up is active)
//!    the image and the mask are decimated by two; the image then goes through a 3x3 mode
//!    filter, and each masked pixel gets a c-value from the exact counts of masked pixels of
//!    values `v`, `v ± d` in its `ws x ws` window, clipped at the frame edges.
//! 4. **Pooling.** The mean of the top `topk` fraction of the c-values of each scale, summed in
//!    double in the order libvmaf's `quick_select` leaves them; the scales are weighted 16, 8,
//!    4, 2, 1 and normalised by the window area; the score is clipped at `max_val`.
//!
//! # How this port differs from libvmaf's code (not from its numbers)
//!
//! - **Counts.** libvmaf keeps, for every value of the useful band and every column, the count
//!   of its window, and updates it by a `±1` over `ws` columns for each pixel that enters or
//!   leaves the window (skipping a column whose leaving and entering pixels are equal). Here the
//!   changes between two rows are gathered into runs (one value, one sign, consecutive
//!   columns), and each run adds its box filter to its value's row of the table in aligned
//!   blocks of 16 columns: a run of `n` columns costs `n + ws` additions instead of `n * ws`.
//!   Only the rows written are cleared between scales. Both give the exact integer counts, so
//!   every c-value is the same float (`tests::c_values_match_their_definition` checks them
//!   against a direct count).
//! - **Less copying.** A 10-bit input scored at its own size without anti-dithering is read in
//!   place; with the speed-up, only the even rows and columns of the full-size mask are formed.
//!   The values are those of libvmaf's copies.
//! - **Pooling.** Every non-zero c-value is at least 0.5 (`w * p0 * p / (p0 + p)` with
//!   `p0, p >= 1`), hence a multiple of 2^-24. When a scale's c-values sum to less than 2^29
//!   (2^53 units of 2^-24), every partial sum in any order is exact in double, so the top-k sum
//!   is the exact sum of the k largest values, whatever order libvmaf's `quick_select` leaves
//!   them in: it is computed exactly (in units of 2^-24), without any selection when at most k
//!   values are non-zero. Otherwise (seen at 4K with the default window) libvmaf's
//!   `quick_select` is replayed on the scale's c-values laid out as libvmaf lays them out, and
//!   they are summed in its order.
//!
//! # Refusals ([`Cambi::new`])
//!
//! What libvmaf's `init` refuses (both encoding dimensions below 216, a window whose area
//! reaches the 4226-entry reciprocal table, inconsistent `src_*`/`enc_*`), what its `init`
//! would hang on (a visibility threshold no sample reaches), and what its `extract` would read
//! or write out of bounds on (a scale narrower than half the window or not taller than it, a
//! resampling index past the input, the 10-bit copy with a wrong stride described on
//! [`CambiParams::src_width`]), and frames beyond [`MAX_DIMENSION`].
//!
//! # Verification
//!
//! `tests/cambi_golden.rs` compares every frame and the pooled values of the v1 goldens
//! (default options and the v1 model options, 8-bit, 10-bit, `x << 2` with and without
//! `enc_bitdepth` 8). The unit tests below check the counts against their definition, the
//! pooling against libvmaf's quick-select order, the tables and the refusals.

use std::cell::RefCell;

use crate::error::{Error, Result};
use crate::features::isa::Isa;
use crate::picture::Plane;

use histogram::{Hist, Run, c_values};
use recip::RECIP_LUT_SIZE;

/// Number of scales (cambi.c `NUM_SCALES`).
pub const NUM_SCALES: usize = 5;

/// Weights of the scales (cambi.c `g_scale_weights`).
const SCALE_WEIGHTS: [i32; NUM_SCALES] = [16, 8, 4, 2, 1];

/// Suprathreshold contrast response, the weight of luma difference `d + 1` (cambi.c
/// `g_contrast_weights`).
const CONTRAST_WEIGHTS: [i32; 32] = [
    1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
];

/// Both encoding dimensions below this are refused (cambi.c `CAMBI_MIN_WIDTH_HEIGHT`).
pub const MIN_WIDTH_HEIGHT: usize = 216;

/// Side of the spatial mask's box (cambi.c `MASK_FILTER_SIZE`).
const MASK_FILTER_SIZE: u32 = 7;
const MASK_PAD: usize = (MASK_FILTER_SIZE >> 1) as usize;

/// Speed-up thresholds on the encoding's pixel count (cambi.c
/// `CAMBI_HIGH_RES_SPEEDUP_THRESHOLD_*`).
const HRS_1080: u64 = 1920 * 1080;
const HRS_1440: u64 = 2560 * 1440;
const HRS_2160: u64 = 3840 * 2160;

/// 10-bit limited range (luminance_tools.c `range_foot_head` at 10 bits): foot 16 << 2, head
/// 235 << 2.
const LUMA_FOOT: i32 = 16 << 2;
const LUMA_HEAD: i32 = 235 << 2;

/// The largest frame dimension accepted (far above 16K's 15360; keeps column arithmetic in `i16`
/// and pixel indices in `u32`).
pub const MAX_DIMENSION: usize = 32000;

/// The EOTF of the visibility thresholds (libvmaf's `eotf` / `cambi_eotf` string options).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CambiEotf {
    /// `"bt1886"` (BT.1886 with Lw 300, Lb 0.01 cd/m², gamma 2.4), libvmaf's default.
    #[default]
    Bt1886,
    /// `"pq"` (SMPTE ST 2084).
    Pq,
}

/// Resolved CAMBI options (libvmaf's defaults in `Default`). 0 in `enc_*` / `src_*` means "the
/// input's".
///
/// Option names (libvmaf alias in brackets; the alias is what the feature name's suffix uses):
/// `enc_width` (encw), `enc_height` (ench), `enc_bitdepth` (encbd), `src_width` (srcw),
/// `src_height` (srch), `window_size` (ws), `topk` (no alias) and `cambi_topk` (ctpk),
/// `tvi_threshold` (tvit), `max_log_contrast` (mlc), `eotf` (no alias) and `cambi_eotf` (ceot),
/// `cambi_vis_lum_threshold` (vlt), `cambi_high_res_speedup` (hrs), `cambi_max_val` (cmxv),
/// `full_ref` (not a feature parameter: no suffix).
///
/// Resolution left to the caller, as libvmaf does it: `topk` wins over `cambi_topk` when it is
/// not 0.6; `cambi_eotf` wins over `eotf` when it is not "bt1886".
///
/// Output names (`extract` in cambi.c): the score is `Cambi_feature_cambi_score`, reported
/// under its alias `cambi` plus the suffix of the non-default feature parameters as the user
/// set them (e.g. `cambi_hrs_1080_cmxv_17_vlt_0.06`, even where the speed-up then turns out
/// inactive). With `full_ref`, libvmaf adds `cambi_source` and `cambi_full_reference`, always
/// under these bare names (no suffix: they are not in its feature-name dictionary).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CambiParams {
    /// Encoding width: the distorted frame is resampled (nearest neighbour) to
    /// `enc_width x enc_height` before CAMBI, when that is smaller than the input. 0 (or 0 in
    /// `enc_height`) = the input size; a size larger than the input in either dimension also
    /// means the input size. libvmaf's range when set: 180..=7680.
    pub enc_width: u32,
    /// Encoding height; see `enc_width`. Range when set: 150..=7680.
    pub enc_height: u32,
    /// Encoding bit depth: below 10, the 2x2 anti-dithering filter runs (also on 10-bit input
    /// of an 8-bit encode). 0 = the input's. Range when set: 6..=16.
    pub enc_bitdepth: u32,
    /// Source width, used with `full_ref` only: the *reference* is resampled (nearest
    /// neighbour, the same float index arithmetic, up or down) to `src_width x src_height` and
    /// scored with a window sized for that geometry; 0 (or 0 in `src_height`) = the input size.
    /// Range when set: 320..=7680. Even without `full_ref`, libvmaf's `init` checks it: both
    /// dimensions below 216, a source wider but shorter (or narrower but taller) than the
    /// encode, or a source window too large for the reciprocal table are refused.
    ///
    /// One case is refused although libvmaf runs it: `full_ref` with a 10-bit input scored at
    /// its own size while `src_width` exceeds the input width (rounded up to 32); libvmaf then
    /// copies the distorted frame with the input's stride into a buffer of another stride and
    /// scores garbled rows.
    pub src_width: u32,
    /// Source height; see `src_width`. Range when set: 200..=4320.
    pub src_height: u32,
    /// `window_size`: 65, range 15..=127. The window used is
    /// `((window_size * (w + h)) / 375) >> 4`, halved (`(x + 1) >> 1`) with the speed-up, then
    /// made odd (`| 1`).
    pub window_size: i32,
    /// Top-k pooling fraction (already resolved between `topk` and `cambi_topk`): 0.6, range
    /// 0.0001..=1.
    pub topk: f64,
    /// `tvi_threshold`: 0.019, range 0.0001..=1.
    pub tvi_threshold: f64,
    /// `max_log_contrast`: 2 (4 luma differences at 10 bits), range 0..=5.
    pub max_log_contrast: i32,
    /// Already resolved between `eotf` and `cambi_eotf`.
    pub eotf: CambiEotf,
    /// `cambi_vis_lum_threshold` in cd/m²: 0.0, range 0..=300. Pixels darker than this give no
    /// banding.
    pub vis_lum_threshold: f64,
    /// `cambi_high_res_speedup`: 0, range 0..=2160. 1080, 1440 and 2160 turn the speed-up on
    /// when the encode has at least that many pixels (1920x1080, 2560x1440, 3840x2160): the
    /// mask is computed at full size, and everything after it at half size. Any other value in
    /// range is accepted and means off, as in libvmaf.
    pub high_res_speedup: i32,
    /// `cambi_max_val`: 1000.0, range 0..=1000. Every reported score is clipped to it.
    pub max_val: f64,
    /// Full-reference mode: also score the reference (the source) and report the difference.
    pub full_ref: bool,
}

impl Default for CambiParams {
    /// libvmaf 3.2.0's defaults (cambi.c `DEFAULT_CAMBI_*`).
    fn default() -> Self {
        CambiParams {
            enc_width: 0,
            enc_height: 0,
            enc_bitdepth: 0,
            src_width: 0,
            src_height: 0,
            window_size: 65,
            topk: 0.6,
            tvi_threshold: 0.019,
            max_log_contrast: 2,
            eotf: CambiEotf::Bt1886,
            vis_lum_threshold: 0.0,
            high_res_speedup: 0,
            max_val: 1000.0,
            full_ref: false,
        }
    }
}

/// Validated options hold no NaN ([`CambiParams::validate`] refuses it), so equality is an
/// equivalence on them (`Companions`, which carries them, is `Eq` and `Hash`).
impl Eq for CambiParams {}

impl std::hash::Hash for CambiParams {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let CambiParams {
            enc_width,
            enc_height,
            enc_bitdepth,
            src_width,
            src_height,
            window_size,
            topk,
            tvi_threshold,
            max_log_contrast,
            eotf,
            vis_lum_threshold,
            high_res_speedup,
            max_val,
            full_ref,
        } = *self;
        (enc_width, enc_height, enc_bitdepth, src_width, src_height).hash(h);
        (
            window_size,
            max_log_contrast,
            eotf,
            high_res_speedup,
            full_ref,
        )
            .hash(h);
        // Equal floats hash alike (0.0 and -0.0 too).
        for v in [topk, tvi_threshold, vis_lum_threshold, max_val] {
            (if v == 0.0 { 0 } else { v.to_bits() }).hash(h);
        }
    }
}

/// The CAMBI score of one distorted luma plane (`min(score, max_val)`), preparing CAMBI for its
/// geometry (the backends' reference for [`crate::backend::Companions::cambi`]; `full_ref` is
/// refused: the backends compute the distorted frame's score only).
pub fn cambi_of(p: &CambiParams, dist: &Plane<'_>) -> Result<f64> {
    if p.full_ref {
        return Err(Error::State(
            "internal: cambi with full_ref as a companion metric".into(),
        ));
    }
    Ok(Cambi::new(p, dist.width, dist.height, dist.bpc)?
        .compute(dist, None)?
        .cambi)
}

impl CambiParams {
    /// Refuse values outside libvmaf's option ranges (cambi.c `options`; the bounds are
    /// inclusive, as opt.c checks them). 0 in `enc_*`, `src_*` stands for "unset".
    pub fn validate(&self) -> Result<()> {
        fn range(name: &str, v: f64, lo: f64, hi: f64) -> Result<()> {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(Error::Model(format!(
                    "cambi option {name} {v} is outside libvmaf's range {lo} to {hi}"
                )))
            }
        }
        fn unset_or(name: &str, v: u32, lo: f64, hi: f64) -> Result<()> {
            if v == 0 {
                Ok(())
            } else {
                range(name, v as f64, lo, hi)
            }
        }
        range("cambi_max_val", self.max_val, 0.0, 1000.0)?;
        unset_or("enc_width", self.enc_width, 180.0, 7680.0)?;
        unset_or("enc_height", self.enc_height, 150.0, 7680.0)?;
        unset_or("enc_bitdepth", self.enc_bitdepth, 6.0, 16.0)?;
        unset_or("src_width", self.src_width, 320.0, 7680.0)?;
        unset_or("src_height", self.src_height, 200.0, 4320.0)?;
        range("window_size", self.window_size as f64, 15.0, 127.0)?;
        range("topk", self.topk, 0.0001, 1.0)?;
        range("tvi_threshold", self.tvi_threshold, 0.0001, 1.0)?;
        range(
            "cambi_vis_lum_threshold",
            self.vis_lum_threshold,
            0.0,
            300.0,
        )?;
        range("max_log_contrast", self.max_log_contrast as f64, 0.0, 5.0)?;
        range(
            "cambi_high_res_speedup",
            self.high_res_speedup as f64,
            0.0,
            2160.0,
        )?;
        Ok(())
    }
}

/// Scores of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CambiScores {
    /// `Cambi_feature_cambi_score` (reported as `cambi` plus the option suffix): the distorted
    /// frame's score, `min(score, max_val)`.
    pub cambi: f64,
    /// full_ref only: (source score, full-reference score), libvmaf's `cambi_source` =
    /// `min(src, max_val)` and `cambi_full_reference` = `min(max(0, dist - src), max_val)`,
    /// where `dist` and `src` are the unclipped scores.
    pub full_ref: Option<(f64, f64)>,
}

/// The geometry one picture is scored at (the encode for the distorted frame, the source for
/// the reference with `full_ref`).
#[derive(Clone, Debug)]
struct Geometry {
    /// Size after preprocessing (scale 0 before the speed-up's decimation).
    width: usize,
    height: usize,
    /// Window side (odd) and its half.
    window: usize,
    pad: usize,
    mask_index: u16,
    /// Nearest-neighbour source columns and rows, when the size differs from the input's.
    resample: Option<(Vec<u32>, Vec<u32>)>,
    /// Size of each scale.
    scales: [(usize, usize); NUM_SCALES],
}

/// The value tables shared by every geometry.
#[derive(Clone, Debug)]
struct Lut {
    /// `1 << max_log_contrast`.
    num_diffs: usize,
    /// libvmaf's `tvi_for_diff` (already `+ num_diffs`).
    tvi: Vec<u16>,
    vlt_luma: u16,
    /// The useful band of raw values, `lo..lo + len` (cambi.c `v_band_base`, `v_band_size`;
    /// empty when the visibility threshold lies above every TVI threshold).
    lo: i32,
    len: usize,
    /// Histogram rows: the band plus `num_diffs` always-zero rows on each side, so that the
    /// neighbours `v ± d` of an in-band `v` are always rows.
    rows: usize,
    /// The codes (histogram row + 1) of the values that test at least one difference:
    /// `fire_lo..=fire_lo + fire_span` (`u16::MAX`, a code that does not occur, when none).
    fire_lo: u16,
    fire_span: u16,
    /// For each histogram row: bit `d` set when difference `d + 1` is tested for that value
    /// (cambi.c `c_value_pixel`: `value <= tvi_for_diff[d] && value + d + 1 > vlt_luma`).
    fire: Vec<u32>,
}

/// CAMBI prepared for one geometry (tables, window size, scale sizes). `Send + Sync`;
/// [`Cambi::compute`] takes `&self` and reuses a per-thread scratch, so that many threads can
/// call it at once.
#[derive(Clone, Debug)]
pub struct Cambi {
    width: usize,
    height: usize,
    bpc: u8,
    anti_dither: bool,
    speedup: bool,
    topk: f64,
    max_val: f64,
    dist: Geometry,
    src: Option<Geometry>,
    lut: Lut,
}

impl Cambi {
    /// Prepare CAMBI for `width` x `height` luma at `bpc` bits (8..=16).
    ///
    /// Refuses what libvmaf refuses or crashes on ([`Error::Unsupported`] naming "cambi" and
    /// the size): encoding width and height both below 216, a window whose area reaches 4226
    /// (the reciprocal table), a scale narrower or shorter than half the window (`ws >> 1`;
    /// one row more at an undecimated scale 0: libvmaf then reads outside the scale), and the
    /// rarer cases listed in the module documentation. Options outside libvmaf's ranges give
    /// [`Error::Model`] ([`CambiParams::validate`]), a depth outside 8..=16
    /// [`Error::BitDepth`].
    pub fn new(p: &CambiParams, width: usize, height: usize, bpc: u8) -> Result<Cambi> {
        p.validate()?;
        if !(8..=16).contains(&bpc) {
            return Err(Error::BitDepth(bpc));
        }
        let refuse = |reason: String| Error::Unsupported {
            metric: "cambi",
            reason: format!("{width}x{height} at {bpc} bits: {reason}"),
        };
        if width == 0 || height == 0 || width > MAX_DIMENSION || height > MAX_DIMENSION {
            return Err(refuse(format!(
                "unsupported frame size (1 to {MAX_DIMENSION} in each dimension)"
            )));
        }
        // init: enc_* and src_* default to the input size (both, when either is 0); an encode
        // larger than the input in either dimension means the input size.
        let (mut enc_w, mut enc_h) = (p.enc_width as usize, p.enc_height as usize);
        if enc_w == 0 || enc_h == 0 {
            (enc_w, enc_h) = (width, height);
        }
        let (mut src_w, mut src_h) = (p.src_width as usize, p.src_height as usize);
        if src_w == 0 || src_h == 0 {
            (src_w, src_h) = (width, height);
        }
        if enc_h > height || enc_w > width {
            (enc_w, enc_h) = (width, height);
        }
        if enc_w < MIN_WIDTH_HEIGHT && enc_h < MIN_WIDTH_HEIGHT {
            return Err(refuse(format!(
                "the encoding size {enc_w}x{enc_h} is below libvmaf's minimum: at least one \
                 dimension must be {MIN_WIDTH_HEIGHT} or more"
            )));
        }
        if src_w < MIN_WIDTH_HEIGHT && src_h < MIN_WIDTH_HEIGHT {
            return Err(refuse(format!(
                "the source size {src_w}x{src_h} is below libvmaf's minimum: at least one \
                 dimension must be {MIN_WIDTH_HEIGHT} or more"
            )));
        }
        if (src_w > enc_w && src_h < enc_h) || (src_w < enc_w && src_h > enc_h) {
            return Err(refuse(format!(
                "libvmaf refuses a source size {src_w}x{src_h} that is larger than the \
                 encoding size {enc_w}x{enc_h} in one dimension and smaller in the other"
            )));
        }
        let enc_pix = enc_w as u64 * enc_h as u64;
        let speedup = match p.high_res_speedup {
            1080 => enc_pix >= HRS_1080,
            1440 => enc_pix >= HRS_1440,
            2160 => enc_pix >= HRS_2160,
            _ => false,
        };
        if p.full_ref
            && bpc == 10
            && (enc_w, enc_h) == (width, height)
            && src_w.max(enc_w).next_multiple_of(32) != width.next_multiple_of(32)
        {
            return Err(refuse(format!(
                "with full_ref and a source width {src_w} larger than the input, libvmaf copies \
                 the 10-bit distorted frame with the wrong stride (garbled rows)"
            )));
        }
        let lut = Lut::new(p).map_err(refuse)?;
        let enc_ws = adjust_window_size(p.window_size as u32, enc_w, enc_h, speedup);
        let src_ws = adjust_window_size(p.window_size as u32, src_w, src_h, speedup);
        let max_ws = enc_ws.max(src_ws);
        if max_ws * max_ws >= RECIP_LUT_SIZE as u64 {
            return Err(refuse(format!(
                "the window of {max_ws}x{max_ws} pixels is too large for libvmaf's \
                 {RECIP_LUT_SIZE}-entry reciprocal table (window_size {}, encode {enc_w}x{enc_h}, \
                 source {src_w}x{src_h})",
                p.window_size
            )));
        }
        let dist = Geometry::new(width, height, enc_w, enc_h, enc_ws as usize, speedup)
            .map_err(|r| refuse(format!("encode {enc_w}x{enc_h}: {r}")))?;
        let src = if p.full_ref {
            Some(
                Geometry::new(width, height, src_w, src_h, src_ws as usize, speedup)
                    .map_err(|r| refuse(format!("source {src_w}x{src_h}: {r}")))?,
            )
        } else {
            None
        };
        let enc_bitdepth = if p.enc_bitdepth == 0 {
            bpc as u32
        } else {
            p.enc_bitdepth
        };
        Ok(Cambi {
            width,
            height,
            bpc,
            anti_dither: enc_bitdepth < 10,
            speedup,
            topk: p.topk,
            max_val: p.max_val,
            dist,
            src,
            lut,
        })
    }

    /// The scores of one frame. `dist` is the distorted luma; `reference` is required iff
    /// `full_ref` (else ignored). Both must have the size and depth given to [`Cambi::new`].
    /// A sample above `2^bpc - 1` is refused ([`Error::SampleRange`]), as libvmaf's
    /// `validate_image` refuses it.
    pub fn compute(&self, dist: &Plane<'_>, reference: Option<&Plane<'_>>) -> Result<CambiScores> {
        self.compute_with(dist, reference, Isa::detected())
    }

    /// [`Cambi::compute`] with the build of the kernels chosen by the caller (the parity tests
    /// run every build the CPU supports; the results are identical).
    ///
    /// # Errors
    /// As [`Cambi::compute`], and [`Error::Backend`] if this CPU cannot run `isa`.
    #[doc(hidden)]
    pub fn compute_with(
        &self,
        dist: &Plane<'_>,
        reference: Option<&Plane<'_>>,
        isa: Isa,
    ) -> Result<CambiScores> {
        if !isa.supported() {
            return Err(Error::Backend(format!(
                "cambi: {isa:?} is not supported by this CPU"
            )));
        }
        self.check_plane("distorted", dist)?;
        let reference = match (&self.src, reference) {
            (Some(_), Some(r)) => {
                self.check_plane("reference", r)?;
                Some(r)
            }
            (Some(_), None) => {
                return Err(Error::Mismatch(
                    "cambi with full_ref needs the reference frame".into(),
                ));
            }
            (None, _) => None,
        };
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut s) => self.compute_in(dist, reference, isa, &mut s),
            Err(_) => self.compute_in(dist, reference, isa, &mut Scratch::default()),
        })
    }

    fn compute_in(
        &self,
        dist: &Plane<'_>,
        reference: Option<&Plane<'_>>,
        isa: Isa,
        s: &mut Scratch,
    ) -> Result<CambiScores> {
        let d = self.score(dist, &self.dist, isa, s)?;
        let cambi = min(d, self.max_val);
        let full_ref = match (&self.src, reference) {
            (Some(g), Some(r)) => {
                let src = self.score(r, g, isa, s)?;
                // cambi.c combine_dist_src_scores: MAX(0, dist - src).
                let diff = d - src;
                let combined = if 0.0 > diff { 0.0 } else { diff };
                Some((min(src, self.max_val), min(combined, self.max_val)))
            }
            _ => None,
        };
        Ok(CambiScores { cambi, full_ref })
    }

    fn check_plane(&self, what: &str, p: &Plane<'_>) -> Result<()> {
        if (p.width, p.height, p.bpc) != (self.width, self.height, self.bpc) {
            return Err(Error::Mismatch(format!(
                "cambi was prepared for {}x{} at {} bits, the {what} plane is {}x{} at {} bits",
                self.width, self.height, self.bpc, p.width, p.height, p.bpc
            )));
        }
        if p.stride < p.width || p.data.len() < p.stride * (p.height - 1) + p.width {
            return Err(Error::Geometry(format!(
                "{what} plane of {} samples with stride {} is too small for {}x{}",
                p.data.len(),
                p.stride,
                p.width,
                p.height
            )));
        }
        Ok(())
    }

    /// The unclipped score of one picture at geometry `g`.
    fn score(&self, p: &Plane<'_>, g: &Geometry, isa: Isa, s: &mut Scratch) -> Result<f64> {
        match isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: score_avx2 only requires the CPU features of Isa::Avx2, and compute_with
            // checked that the CPU supports `isa`.
            Isa::Avx2 => unsafe { self.score_avx2(p, g, s) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for Isa::Avx512.
            Isa::Avx512 => unsafe { self.score_avx512(p, g, s) },
            _ => self.score_inner(p, g, s, false),
        }
    }

    /// [`Cambi::score_inner`] compiled for AVX2 (the integer row loops vectorise over 16 lanes;
    /// no FMA is enabled, and the float steps are the same IEEE operations).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
    unsafe fn score_avx2(&self, p: &Plane<'_>, g: &Geometry, s: &mut Scratch) -> Result<f64> {
        self.score_inner(p, g, s, true)
    }

    /// [`Cambi::score_inner`] compiled for AVX-512 (F, BW, VL). `avx512f` implies FMA in Rust,
    /// which changes nothing: rustc never contracts `a * b + c`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl")]
    unsafe fn score_avx512(&self, p: &Plane<'_>, g: &Geometry, s: &mut Scratch) -> Result<f64> {
        self.score_inner(p, g, s, true)
    }

    /// cambi.c `preprocess_and_extract_cambi` + `cambi_score` for one picture. `simd`: the
    /// AVX2 kernels of module `x86` run (true only in the AVX2 and AVX-512 builds, whose
    /// callers checked the CPU).
    #[inline(always)]
    fn score_inner(&self, p: &Plane<'_>, g: &Geometry, s: &mut Scratch, simd: bool) -> Result<f64> {
        let (w0, h0) = (g.width, g.height);
        let (w1, h1) = g.scales[0];
        grow(&mut s.img, w0 * h0);
        grow(&mut s.mask, w1 * h1);
        // 10-bit input scored at its own size without anti-dithering is its own preprocessed
        // image: the mask and scale 0 read it in place.
        let direct = p.bpc == 10 && g.resample.is_none() && !self.anti_dither;
        if direct {
            validate_samples(p)?;
            let src = View {
                data: p.data,
                stride: p.stride,
            };
            let mask = &mut s.mask[..w1 * h1];
            spatial_mask(
                src,
                w0,
                h0,
                g.mask_index,
                mask,
                self.speedup,
                &mut s.ms,
                simd,
            );
            let img = &mut s.img[..w1 * h1];
            for (i, out) in img.chunks_exact_mut(w1).enumerate() {
                if self.speedup {
                    decimate_row(out, &src.row(2 * i, w0)[..w0], simd);
                } else {
                    out.copy_from_slice(src.row(i, w0));
                }
            }
        } else {
            preprocess(p, g, &mut s.img[..w0 * h0])?;
            if self.anti_dither {
                anti_dither(&mut s.img[..w0 * h0], w0, h0, &mut s.hbuf);
            }
            let mut img = std::mem::take(&mut s.img);
            let src = View {
                data: &img[..w0 * h0],
                stride: w0,
            };
            let mask = &mut s.mask[..w1 * h1];
            spatial_mask(
                src,
                w0,
                h0,
                g.mask_index,
                mask,
                self.speedup,
                &mut s.ms,
                simd,
            );
            if self.speedup {
                decimate(&mut img, w0, h0, simd);
            }
            s.img = img;
        }

        let mut scores = [0.0f64; NUM_SCALES];
        let (mut w, mut h) = (w0, h0);
        for (scale, score) in scores.iter_mut().enumerate() {
            if scale > 0 {
                decimate(&mut s.img, w, h, simd);
                decimate(&mut s.mask, w, h, simd);
                (w, h) = ((w + 1) >> 1, (h + 1) >> 1);
            } else if self.speedup {
                (w, h) = (w1, h1);
            }
            debug_assert_eq!((w, h), g.scales[scale]);
            mode_filter(&mut s.img[..w * h], w, h, &mut s.hbuf);
            let cv = &mut s.cv;
            let stats = c_values(
                &s.img[..w * h],
                &s.mask[..w * h],
                w,
                h,
                g.pad,
                &self.lut,
                cv,
            );
            s.stats[scale] = (stats.units, stats.nonzero as u64);
            *score = pool(
                stats,
                w * h,
                self.topk,
                &mut cv.nz_val,
                &cv.nz_idx,
                &mut s.full,
            );
        }
        Ok(weigh_scales(&scores, g.window))
    }

    /// What a device needs to compute the distorted frame's c-values and their per-scale sums
    /// as this CPU code does (`None` with `full_ref`, which stays on the host).
    #[doc(hidden)]
    pub fn device_setup(&self) -> Option<DeviceSetup> {
        if self.src.is_some() {
            return None;
        }
        let g = &self.dist;
        let l = &self.lut;
        let nd = l.num_diffs;
        // By 10-bit value (at most 1024 after the conversion): the differences tested, 0
        // outside the band.
        let mut fire = vec![0u32; DEVICE_VALUES];
        for (v, f) in fire.iter_mut().enumerate() {
            let v = v as i32;
            if v >= l.lo && ((v - l.lo) as usize) < l.len {
                *f = l.fire[(v - l.lo) as usize + nd];
            }
        }
        let (xs, ys) = match &g.resample {
            Some((xs, ys)) => (xs.clone(), ys.clone()),
            None => (
                (0..g.width as u32).collect(),
                (0..g.height as u32).collect(),
            ),
        };
        Some(DeviceSetup {
            input: (self.width, self.height, self.bpc),
            size: (g.width, g.height),
            xs,
            ys,
            anti_dither: self.anti_dither,
            speedup: self.speedup,
            mask_index: g.mask_index,
            pad: g.pad,
            scales: g.scales,
            num_diffs: nd,
            band: (l.lo, l.len),
            fire,
            topk: self.topk,
        })
    }

    /// The distorted frame's score from its scales' pooled values (the device route's end;
    /// the CPU route ends the same way): cambi.c `weight_scores_per_scale`, the window
    /// normalisation, then `min(score, max_val)`.
    #[doc(hidden)]
    pub fn score_of_scales(&self, scores: &[f64; NUM_SCALES]) -> f64 {
        min(weigh_scales(scores, self.dist.window), self.max_val)
    }

    /// Per scale of the distorted frame: the sum of its c-values in units of 2^-24
    /// (saturating) and the number of non-zero ones, as the pooling sees them (the device's
    /// sums are checked against these).
    #[doc(hidden)]
    pub fn scale_sums(&self, dist: &Plane<'_>) -> Result<[(u64, u64); NUM_SCALES]> {
        self.check_plane("distorted", dist)?;
        let mut s = Scratch::default();
        self.score(dist, &self.dist, Isa::Scalar, &mut s)?;
        Ok(s.stats)
    }

    /// The top-k pooling fraction.
    #[doc(hidden)]
    pub fn topk(&self) -> f64 {
        self.topk
    }

    /// The window side used for the distorted frame (and for the reference with `full_ref`).
    #[doc(hidden)]
    pub fn window_sizes(&self) -> (usize, Option<usize>) {
        (self.dist.window, self.src.as_ref().map(|g| g.window))
    }

    /// The size of every scale of the distorted frame.
    #[doc(hidden)]
    pub fn scale_sizes(&self) -> [(usize, usize); NUM_SCALES] {
        self.dist.scales
    }

    /// libvmaf's `tvi_for_diff` (with its `+ num_diffs`) and `vlt_luma`.
    #[doc(hidden)]
    pub fn thresholds(&self) -> (Vec<u16>, u16) {
        (self.lut.tvi.clone(), self.lut.vlt_luma)
    }
}

/// cambi.c `weight_scores_per_scale` and `get_pixels_in_window`: the unclipped score.
fn weigh_scales(scores: &[f64; NUM_SCALES], window: usize) -> f64 {
    let mut score = 0.0f64;
    for (sc, wt) in scores.iter().zip(SCALE_WEIGHTS) {
        score += sc * wt as f64;
    }
    let side = 2 * (window >> 1) + 1;
    score / (side * side) as f64
}

/// Entries of [`DeviceSetup::fire`]: every 10-bit value the conversion gives (0..=1024).
pub const DEVICE_VALUES: usize = 1025;

/// [`Cambi::device_setup`]: the distorted frame's geometry and value tables.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSetup {
    /// The input luma (width, height, bits).
    pub input: (usize, usize, u8),
    /// The preprocessed size (before the speed-up's decimation).
    pub size: (usize, usize),
    /// The input column and row of each preprocessed sample (the identity at the input size).
    pub xs: Vec<u32>,
    pub ys: Vec<u32>,
    pub anti_dither: bool,
    /// The mask is computed at `size` and decimated at once; scale 0 is decimated.
    pub speedup: bool,
    /// The mask is set where more than this many of the 7x7 pixels are flat.
    pub mask_index: u16,
    /// Half the window (the window is `2 * pad + 1` wide, clipped at the edges).
    pub pad: usize,
    pub scales: [(usize, usize); NUM_SCALES],
    /// `1 << max_log_contrast`.
    pub num_diffs: usize,
    /// The values counted: `lo..lo + len`.
    pub band: (i32, usize),
    /// Per 10-bit value ([`DEVICE_VALUES`]): bit `d` set where difference `d + 1` is tested
    /// (0 outside the band).
    pub fire: Vec<u32>,
    pub topk: f64,
}

/// libvmaf's reciprocal table (cambi.h `recip_lut`, as embedded here), for the device.
#[doc(hidden)]
pub fn recip_table() -> &'static [f32] {
    &recip::RECIP
}

/// The suprathreshold contrast weights (cambi.c `g_contrast_weights`), for the device.
#[doc(hidden)]
pub const fn contrast_weights() -> &'static [i32; 32] {
    &CONTRAST_WEIGHTS
}

/// C's `MIN(x, y)`: `x < y ? x : y`.
fn min(x: f64, y: f64) -> f64 {
    if x < y { x } else { y }
}

/// cambi.c `adjust_window_size` (computed without the C's truncation to 16 bits, which only
/// sizes far beyond the reciprocal table would reach; they are refused either way).
fn adjust_window_size(window_size: u32, w: usize, h: usize, speedup: bool) -> u64 {
    let mut ws = ((window_size as u64 * (w as u64 + h as u64)) / 375) >> 4;
    if speedup {
        ws = (ws + 1) >> 1;
    }
    ws | 1
}

/// cambi.c `ceil_log2`.
fn ceil_log2(num: u32) -> u32 {
    if num == 0 {
        0
    } else {
        32 - (num - 1).leading_zeros()
    }
}

/// cambi.c `get_mask_index` for the 7x7 box: the spatial mask is set where more than this many
/// of the 49 pixels are flat.
fn mask_index(w: usize, h: usize) -> u16 {
    let shifted = ((w >> 6) as u32).wrapping_mul((h >> 6) as u32);
    let f2 = (MASK_FILTER_SIZE * MASK_FILTER_SIZE) as i32;
    ((f2 + 3 * (ceil_log2(shifted) as i32 - 11) - 1) >> 1) as u16
}

impl Geometry {
    /// A picture of `in_w x in_h` scored at `w x h` with a `window`-pixel window.
    fn new(
        in_w: usize,
        in_h: usize,
        w: usize,
        h: usize,
        window: usize,
        speedup: bool,
    ) -> std::result::Result<Geometry, String> {
        let pad = window >> 1;
        let mut scales = [(0, 0); NUM_SCALES];
        let (mut sw, mut sh) = (w, h);
        for (i, sc) in scales.iter_mut().enumerate() {
            if i > 0 || speedup {
                (sw, sh) = ((sw + 1) >> 1, (sh + 1) >> 1);
            }
            *sc = (sw, sh);
            // calculate_c_values reads columns up to `pad - 1` and rows up to `pad` (the
            // latter harmlessly one past a decimated scale, which still lies in libvmaf's
            // full-size buffer, but past the picture and c-value buffers at an undecimated
            // scale 0).
            let min_h = if i == 0 && !speedup { pad + 1 } else { pad };
            if sw < pad || sh < min_h {
                return Err(format!(
                    "scale {i} is {sw}x{sh}, smaller than the {window}x{window} window allows \
                     (libvmaf would read outside it)"
                ));
            }
        }
        let resample = if (w, h) == (in_w, in_h) {
            None
        } else {
            Some((resample_index(in_w, w)?, resample_index(in_h, h)?))
        };
        Ok(Geometry {
            width: w,
            height: h,
            window,
            pad,
            mask_index: mask_index(w, h),
            resample,
            scales,
        })
    }
}

/// cambi.c `decimate_generic_*_and_convert_to_10b`: the source index of each of `out_n`
/// samples, replaying the float accumulation (`x += ratio`, started at `ratio / 2 - 0.5`,
/// `(int)(x + 0.5)`).
fn resample_index(in_n: usize, out_n: usize) -> std::result::Result<Vec<u32>, String> {
    let ratio = in_n as f32 / out_n as f32;
    // `ratio_x / 2 - 0.5`: float / int, then a double subtraction stored as float.
    let start = ((ratio / 2.0) as f64 - 0.5) as f32;
    let mut x = start;
    let mut idx = Vec::with_capacity(out_n);
    for _ in 0..out_n {
        let ori = (x as f64 + 0.5) as i32;
        if ori < 0 || ori as usize >= in_n {
            return Err(format!(
                "resampling {in_n} to {out_n} samples reads sample {ori}, outside the input"
            ));
        }
        idx.push(ori as u32);
        x += ratio;
    }
    Ok(idx)
}

/// libvmaf's `validate_image`: every sample at most `2^bpc - 1`.
#[inline(always)]
fn validate_samples(p: &Plane<'_>) -> Result<()> {
    for y in 0..p.height {
        let row = &p.data[y * p.stride..y * p.stride + p.width];
        check_row(p, y, row.iter().fold(0u16, |m, &v| m.max(v)))?;
    }
    Ok(())
}

/// The error for row `y` of `p` if its largest sample `row_max` exceeds `2^bpc - 1`.
#[inline(always)]
fn check_row(p: &Plane<'_>, y: usize, row_max: u16) -> Result<()> {
    let max = ((1u32 << p.bpc) - 1) as u16;
    if row_max <= max {
        return Ok(());
    }
    let row = &p.data[y * p.stride..y * p.stride + p.width];
    let (x, &value) = row
        .iter()
        .enumerate()
        .find(|&(_, &v)| v > max)
        .unwrap_or((0, &0));
    Err(Error::SampleRange {
        plane: "luma",
        x,
        y,
        value,
        bpc: p.bpc,
    })
}

/// libvmaf's `validate_image` (every sample at most `2^bpc - 1`, checked on the whole input),
/// then the resampling (when the geometry asks for it) and the conversion to 10 bits into `out`
/// (`g.width * g.height`, compact).
#[inline(always)]
fn preprocess(p: &Plane<'_>, g: &Geometry, out: &mut [u16]) -> Result<()> {
    match p.bpc {
        8 => convert(p, g, out, |v| v << 2),
        9 => convert(p, g, out, |v| v << 1),
        10 => convert(p, g, out, |v| v),
        bpc => {
            let shift = (bpc - 10) as u32;
            let round = 1u32 << (shift - 1);
            // At most (65535 + 32) >> 6 = 1024.
            convert(p, g, out, move |v| ((v as u32 + round) >> shift) as u16)
        }
    }
}

#[inline(always)]
fn convert(p: &Plane<'_>, g: &Geometry, out: &mut [u16], f: impl Fn(u16) -> u16) -> Result<()> {
    let w = g.width;
    match &g.resample {
        None => {
            // Validated and converted in one pass (an invalid row's output is never used).
            for (y, o) in out.chunks_exact_mut(w).enumerate() {
                let row = &p.data[y * p.stride..y * p.stride + w];
                let mut row_max = 0u16;
                for (o, &v) in o.iter_mut().zip(row) {
                    row_max = row_max.max(v);
                    *o = f(v);
                }
                check_row(p, y, row_max)?;
            }
        }
        Some((xs, ys)) => {
            validate_samples(p)?;
            for (o, &sy) in out.chunks_exact_mut(w).zip(ys) {
                let row = &p.data[sy as usize * p.stride..sy as usize * p.stride + p.width];
                for (o, &sx) in o.iter_mut().zip(xs) {
                    *o = f(row[sx as usize]);
                }
            }
        }
    }
    Ok(())
}

/// cambi.c `anti_dithering_filter`. In place in C, where each write reads only samples not
/// yet written; here each row is first copied to `tmp`. Sums of four 10-bit samples (at most
/// 4 * 1024) fit `u16`.
#[inline(always)]
fn anti_dither(img: &mut [u16], w: usize, h: usize, tmp: &mut Vec<u16>) {
    grow(tmp, w);
    let tmp = &mut tmp[..w];
    for i in 0..h - 1 {
        let (top, bottom) = img[i * w..(i + 2) * w].split_at_mut(w);
        tmp.copy_from_slice(top);
        for ((((o, &a), &b), &c), &d) in top[..w - 1]
            .iter_mut()
            .zip(&tmp[..w - 1])
            .zip(&tmp[1..])
            .zip(&bottom[..w - 1])
            .zip(&bottom[1..])
        {
            *o = (a + b + c + d) >> 2;
        }
        top[w - 1] = (tmp[w - 1] + bottom[w - 1]) >> 1;
    }
    let last = &mut img[(h - 1) * w..h * w];
    tmp.copy_from_slice(last);
    for ((o, &a), &b) in last[..w - 1].iter_mut().zip(&tmp[..w - 1]).zip(&tmp[1..]) {
        *o = (a + b) >> 1;
    }
}

/// Grow `v` to at least `n` elements (new ones default); never shrinks, so that a buffer
/// reused across scales and frames is not refilled.
fn grow<T: Clone + Default>(v: &mut Vec<T>, n: usize) {
    if v.len() < n {
        v.resize(n, T::default());
    }
}

/// A borrowed plane of samples with a stride.
#[derive(Clone, Copy)]
struct View<'a> {
    data: &'a [u16],
    stride: usize,
}

impl<'a> View<'a> {
    #[inline(always)]
    fn row(&self, r: usize, w: usize) -> &'a [u16] {
        &self.data[r * self.stride..r * self.stride + w]
    }
}

/// The flat-pixel flags of row `r` (cambi.c `get_derivative_data_for_row`): equal to the right
/// and the bottom neighbour, a missing neighbour counting as equal.
#[inline(always)]
fn flat_row(img: View<'_>, w: usize, h: usize, r: usize, out: &mut [u8]) {
    let row = img.row(r, w);
    let out = &mut out[..w];
    if r + 1 < h {
        let below = img.row(r + 1, w);
        for (((o, &a), &b), &c) in out[..w - 1]
            .iter_mut()
            .zip(&row[..w - 1])
            .zip(&row[1..])
            .zip(&below[..w - 1])
        {
            *o = ((a == b) & (a == c)) as u8;
        }
        out[w - 1] = (row[w - 1] == below[w - 1]) as u8;
    } else {
        for ((o, &a), &b) in out[..w - 1].iter_mut().zip(&row[..w - 1]).zip(&row[1..]) {
            *o = (a == b) as u8;
        }
        out[w - 1] = 1;
    }
}

/// cambi.c `get_spatial_mask`: `mask = (7x7 zero-padded count of flat pixels) > mask_index`.
/// The count is formed as a sliding sum of 7 rows of flags per column (at most 7, in `u8`),
/// then a 7-tap horizontal sum (at most 49, in `u8`). With `half` (the speed-up, whose scale 0
/// decimates the mask at once), only the even rows and columns are produced, as the decimated
/// mask (`((w + 1) >> 1) x ((h + 1) >> 1)`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn spatial_mask(
    img: View<'_>,
    w: usize,
    h: usize,
    mask_index: u16,
    mask: &mut [u8],
    half: bool,
    s: &mut MaskScratch,
    simd: bool,
) {
    const RING: usize = 2 * MASK_PAD + 2;
    const TAPS: usize = 2 * MASK_PAD + 1;
    let MaskScratch {
        deriv,
        colsum,
        maskrow,
    } = s;
    grow(deriv, RING * w);
    grow(maskrow, w);
    colsum.clear();
    colsum.resize(w + 2 * MASK_PAD, 0);
    let w2 = (w + 1) >> 1;
    // The count is at most 49: a mask_index of 49 or more masks nothing.
    let threshold = mask_index.min(255) as u8;
    for r in 0..MASK_PAD.min(h) {
        let slot = &mut deriv[(r % RING) * w..(r % RING + 1) * w];
        flat_row(img, w, h, r, slot);
        for (c, &d) in colsum[MASK_PAD..MASK_PAD + w].iter_mut().zip(slot.iter()) {
            *c += d;
        }
    }
    for i in 0..h {
        if i + MASK_PAD < h {
            let r = i + MASK_PAD;
            let slot = &mut deriv[(r % RING) * w..(r % RING + 1) * w];
            flat_row(img, w, h, r, slot);
            for (c, &d) in colsum[MASK_PAD..MASK_PAD + w].iter_mut().zip(slot.iter()) {
                *c += d;
            }
        }
        if i > MASK_PAD {
            let r = i - MASK_PAD - 1;
            let slot = &deriv[(r % RING) * w..(r % RING + 1) * w];
            for (c, &d) in colsum[MASK_PAD..MASK_PAD + w].iter_mut().zip(slot) {
                *c -= d;
            }
        }
        if half && i % 2 == 1 {
            continue;
        }
        let out = if half {
            &mut maskrow[..w]
        } else {
            &mut mask[i * w..(i + 1) * w]
        };
        let cs = &colsum[..w + TAPS - 1];
        for (j, m) in out.iter_mut().enumerate() {
            let n = cs[j] + cs[j + 1] + cs[j + 2] + cs[j + 3] + cs[j + 4] + cs[j + 5] + cs[j + 6];
            *m = (n > threshold) as u8;
        }
        if half {
            decimate_row(
                &mut mask[(i / 2) * w2..(i / 2 + 1) * w2],
                &maskrow[..w],
                simd,
            );
        }
    }
}

/// One decimated row: `out[j] = inp[2 * j]` (`out` has `(inp.len() + 1) / 2` samples). `simd`:
/// the AVX2 kernel runs (callers with `simd` checked the CPU).
#[inline(always)]
fn decimate_row<T: Decimate>(out: &mut [T], inp: &[T], simd: bool) {
    let done = if simd { T::decimate_simd(out, inp) } else { 0 };
    for (o, &v) in out[done..]
        .iter_mut()
        .zip(inp[2 * done..].iter().step_by(2))
    {
        *o = v;
    }
}

/// The sample types decimated: 10-bit samples (`u16`) and mask flags (`u8`).
trait Decimate: Copy {
    /// Decimate a prefix of the row with the AVX2 kernel; returns the samples written.
    fn decimate_simd(out: &mut [Self], inp: &[Self]) -> usize;
}

impl Decimate for u16 {
    #[inline(always)]
    fn decimate_simd(out: &mut [u16], inp: &[u16]) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: only called with `simd`, i.e. from the AVX2 and AVX-512 builds, whose
            // callers checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            unsafe { x86::decimate_row_u16(out, inp) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (out, inp);
            0
        }
    }
}

impl Decimate for u8 {
    #[inline(always)]
    fn decimate_simd(out: &mut [u8], inp: &[u8]) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: only called with `simd`, i.e. from the AVX2 and AVX-512 builds, whose
            // callers checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            unsafe { x86::decimate_row_u8(out, inp) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (out, inp);
            0
        }
    }
}

/// cambi.c `decimate` on a compact plane, in place: `out[i][j] = in[2i][2j]`, size halved
/// rounding up. Each write goes at or before the sample it reads, and after every sample read
/// so far, so in place equals out of place.
#[inline(always)]
fn decimate<T: Decimate>(img: &mut [T], w: usize, h: usize, simd: bool) {
    let (w2, h2) = ((w + 1) >> 1, (h + 1) >> 1);
    for j in 0..w2 {
        img[j] = img[2 * j];
    }
    for i in 1..h2 {
        // Output row i ends at or before input row 2i starts: (i + 1) * w2 <= 2 * i * w.
        let (out, inp) = img.split_at_mut(2 * i * w);
        decimate_row(&mut out[i * w2..(i + 1) * w2], &inp[..w], simd);
    }
}

/// The AVX2 kernels.
#[cfg(target_arch = "x86_64")]
mod x86;

/// cambi.c `mode3`: the value two of the three share, else the smallest (written without
/// branches, so that it vectorises).
#[inline(always)]
fn mode3(a: u16, b: u16, c: u16) -> u16 {
    let m = a.min(b).min(c);
    let bc = if b == c { b } else { m };
    if (a == b) | (a == c) { a } else { bc }
}

/// The horizontal pass of cambi.c `filter_mode`: `mode3` of each sample and its two
/// neighbours, the first and last samples copied.
#[inline(always)]
fn horizontal_mode(row: &[u16], out: &mut [u16]) {
    let w = row.len();
    let out = &mut out[..w];
    out[0] = row[0];
    out[w - 1] = row[w - 1];
    if w > 2 {
        for (((o, &a), &b), &c) in out[1..w - 1]
            .iter_mut()
            .zip(&row[..w - 2])
            .zip(&row[1..w - 1])
            .zip(&row[2..])
        {
            *o = mode3(a, b, c);
        }
    }
}

/// cambi.c `filter_mode`, in place: rows 1..h-1 become the vertical mode of the horizontal
/// modes of rows i-1, i, i+1; the first and last rows are left as they are. `mode3` is
/// symmetric, so the order of the three rows does not matter.
#[inline(always)]
fn mode_filter(img: &mut [u16], w: usize, h: usize, hbuf: &mut Vec<u16>) {
    if h < 3 {
        return;
    }
    grow(hbuf, 3 * w);
    horizontal_mode(&img[..w], &mut hbuf[..w]);
    horizontal_mode(&img[w..2 * w], &mut hbuf[w..2 * w]);
    for i in 2..h {
        let slot = i % 3;
        horizontal_mode(
            &img[i * w..(i + 1) * w],
            &mut hbuf[slot * w..(slot + 1) * w],
        );
        let (h0, rest) = hbuf.split_at(w);
        let (h1, h2) = rest.split_at(w);
        for (((o, &a), &b), &c) in img[(i - 1) * w..i * w]
            .iter_mut()
            .zip(h0)
            .zip(h1)
            .zip(&h2[..w])
        {
            *o = mode3(a, b, c);
        }
    }
}

/// Sums of one scale's c-values, in units of 2^-24.
#[derive(Clone, Copy, Debug)]
struct ScaleStats {
    /// Sum of all c-values in units of 2^-24, saturating (only "below 2^53" matters). Each row
    /// is summed first, exactly in double: at most 32000 columns * 9506.25 (the largest
    /// c-value, `9 * 4225 / 4`) < 2^29, in multiples of 2^-24, so below 2^53 units.
    units: u64,
    /// Number of non-zero c-values.
    nonzero: usize,
}

/// A sum of c-values in units of 2^-24 (exact: a non-zero c-value is a float of at least 0.5,
/// hence a multiple of 2^-24, and so are the sums, below 2^29 where used).
#[inline(always)]
fn units(c: f64) -> u64 {
    (c * 16777216.0) as u64
}

/// The window counts (histograms updated by runs) and the c-values of one scale.
mod histogram;

/// 2^53 units of 2^-24: below it, every partial sum of c-values is exact in double.
const EXACT_UNITS: u64 = 1 << 53;

/// cambi.c `spatial_pooling` of one scale of `n` pixels: the mean of the `k` largest c-values
/// as libvmaf sums them (see the module documentation).
fn pool(
    stats: ScaleStats,
    n: usize,
    topk: f64,
    nz_val: &mut [f32],
    nz_idx: &[u32],
    full: &mut Vec<f32>,
) -> f64 {
    let k = topk_count(topk, n);
    if let Some(v) = pool_exact(stats.units, stats.nonzero as u64, n, topk) {
        return v;
    }
    if stats.units < EXACT_UNITS {
        let sum = {
            // The k largest of the non-zero values (positive floats order as their bits).
            nz_val.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
            nz_val[..k].iter().map(|&c| units(c as f64)).sum::<u64>()
        };
        return (sum as f64 * (1.0 / 16777216.0)) / k as f64;
    }
    // The order-dependent case: libvmaf's array, its quick_select, its sequential sum.
    full.clear();
    full.resize(n, 0.0);
    for (&i, &c) in nz_idx.iter().zip(nz_val.iter()) {
        full[i as usize] = c;
    }
    pool_in_libvmaf_order(full, topk)
}

/// `clip(topk * num_elements, 1, num_elements)`: the double truncated to int (cambi.c
/// `spatial_pooling`).
fn topk_count(topk: f64, n: usize) -> usize {
    ((topk * n as f64) as i64).clamp(1, n as i64) as usize
}

/// cambi.c `spatial_pooling` of a scale of `n` pixels from the exact sum of its c-values
/// (`units` of 2^-24) and the count of non-zero ones, where that decides it: at most k
/// non-zero values (the top k are all of them, with zeros) and a sum below 2^53 units (every
/// partial sum in any order is exact in double, so libvmaf's order gives this sum). `None`
/// otherwise: then [`pool_in_libvmaf_order`] on the scale's c-values.
#[doc(hidden)]
pub fn pool_exact(units: u64, nonzero: u64, n: usize, topk: f64) -> Option<f64> {
    let k = topk_count(topk, n);
    (units < EXACT_UNITS && nonzero <= k as u64)
        .then(|| (units as f64 * (1.0 / 16777216.0)) / k as f64)
}

/// cambi.c `spatial_pooling` of one scale's c-values (`c`: all `n` of them, row-major, as libvmaf
/// lays them out; reordered): libvmaf's `quick_select`, then its sequential double sum.
#[doc(hidden)]
pub fn pool_in_libvmaf_order(c: &mut [f32], topk: f64) -> f64 {
    let k = topk_count(topk, c.len());
    quick_select(c, k);
    average_topk(c, k)
}

/// cambi.c `quick_select` (Wirth's selection, descending): afterwards the `k` largest values
/// are in `arr[..k]`, in an order that depends on the input's.
fn quick_select(arr: &mut [f32], k: usize) {
    let n = arr.len();
    if n == k {
        return;
    }
    let k = k as isize;
    let (mut left, mut right) = (0isize, n as isize - 1);
    while left < right {
        let pivot = arr[k as usize];
        let (mut i, mut j) = (left, right);
        loop {
            while arr[i as usize] > pivot {
                i += 1;
            }
            while arr[j as usize] < pivot {
                j -= 1;
            }
            if i <= j {
                arr.swap(i as usize, j as usize);
                i += 1;
                j -= 1;
            }
            if i > j {
                break;
            }
        }
        if j < k {
            left = i;
        }
        if k < i {
            right = j;
        }
    }
}

/// cambi.c `average_topk_elements`: a double sum in index order, divided by k.
fn average_topk(arr: &[f32], k: usize) -> f64 {
    let mut sum = 0.0f64;
    for &c in &arr[..k] {
        sum += c as f64;
    }
    sum / k as f64
}

/// Per-thread working memory, grown on demand and kept between frames.
#[derive(Default)]
struct Scratch {
    /// The last picture's per-scale (sum of c-values in units of 2^-24, non-zero count).
    stats: [(u64, u64); NUM_SCALES],
    img: Vec<u16>,
    mask: Vec<u8>,
    ms: MaskScratch,
    hbuf: Vec<u16>,
    cv: CScratch,
    full: Vec<f32>,
}

/// The working memory of [`spatial_mask`].
#[derive(Default)]
struct MaskScratch {
    /// The flat flags of the last 8 rows.
    deriv: Vec<u8>,
    /// Per column, the count of flat pixels in the 7 rows around the current one (at most 7),
    /// with 3 zero columns on each side.
    colsum: Vec<u8>,
    /// One full-width mask row, before its decimation.
    maskrow: Vec<u8>,
}

/// The working memory of [`c_values`].
#[derive(Default)]
struct CScratch {
    code: Vec<u16>,
    hist: Hist,
    zeros: Vec<u16>,
    runs: Vec<Run>,
    nz_val: Vec<f32>,
    nz_idx: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Luminance tools (luminance_tools.c) and the thresholds computed from them at init.
mod luminance;

/// libvmaf's reciprocal table (cambi.h).
mod recip;

#[cfg(test)]
mod tests;
