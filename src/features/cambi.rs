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
//!    flat pixels exceeds `mask_index` ([`mask_index`]).
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
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
#[derive(Clone, Debug, PartialEq)]
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
            *score = pool(
                stats,
                w * h,
                self.topk,
                &mut cv.nz_val,
                &cv.nz_idx,
                &mut s.full,
            );
        }
        // cambi.c weight_scores_per_scale, get_pixels_in_window.
        let mut score = 0.0f64;
        for (sc, wt) in scores.iter().zip(SCALE_WEIGHTS) {
            score += sc * wt as f64;
        }
        let side = 2 * (g.window >> 1) + 1;
        Ok(score / (side * side) as f64)
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
            // SAFETY: only called with `simd`, i.e. from the AVX2 and AVX-512 builds.
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
            // SAFETY: only called with `simd`, i.e. from the AVX2 and AVX-512 builds.
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
mod x86 {
    use std::arch::x86_64::*;

    /// `out[j] = inp[2 * j]` for the whole blocks of 16 outputs; returns the count written.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn decimate_row_u16(out: &mut [u16], inp: &[u16]) -> usize {
        let blocks = (out.len() / 16).min(inp.len() / 32);
        let low = _mm256_set1_epi32(0xFFFF);
        for b in 0..blocks {
            let src = inp[32 * b..32 * b + 32].as_ptr();
            let dst = out[16 * b..16 * b + 16].as_mut_ptr();
            // SAFETY: 32 samples are read at src, 16 written at dst, both in bounds (sliced
            // above); unaligned loads and stores.
            unsafe {
                let x = _mm256_and_si256(_mm256_loadu_si256(src as *const __m256i), low);
                let y = _mm256_and_si256(_mm256_loadu_si256(src.add(16) as *const __m256i), low);
                // The even samples, zero-extended to 32 bits, packed back (no saturation: all
                // fit 16 bits), then the 64-bit lanes put back in order.
                let p = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi32(x, y));
                _mm256_storeu_si256(dst as *mut __m256i, p);
            }
        }
        blocks * 16
    }

    /// `out[j] = inp[2 * j]` for the whole blocks of 32 outputs; returns the count written.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn decimate_row_u8(out: &mut [u8], inp: &[u8]) -> usize {
        let blocks = (out.len() / 32).min(inp.len() / 64);
        let low = _mm256_set1_epi16(0xFF);
        for b in 0..blocks {
            let src = inp[64 * b..64 * b + 64].as_ptr();
            let dst = out[32 * b..32 * b + 32].as_mut_ptr();
            // SAFETY: as in decimate_row_u16, 64 bytes read and 32 written in bounds.
            unsafe {
                let x = _mm256_and_si256(_mm256_loadu_si256(src as *const __m256i), low);
                let y = _mm256_and_si256(_mm256_loadu_si256(src.add(32) as *const __m256i), low);
                let p = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(x, y));
                _mm256_storeu_si256(dst as *mut __m256i, p);
            }
        }
        blocks * 32
    }
}

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

/// Samples per chunk of the row scans (whole chunks are compared as fixed-size arrays).
const CHUNK: usize = 32;

/// Lanes of the histogram updates: a run is added in aligned blocks of this many columns.
const LANES: usize = 16;

/// Columns of margin on each side of a histogram row, so that the blocks covering a run's
/// reach (`pad` <= 32 columns beyond it, rounded out to whole blocks) stay inside the row.
const MARGIN: usize = 48;

/// The histograms of one scale: `rows` rows of counts, column `x` of row `r` at
/// `r * stride + MARGIN + x`. The margins count as if the window went on past the frame edge;
/// they are never read. Only the rows written since the last [`Hist::reset`] are non-zero;
/// `reset` zeroes just those.
#[derive(Default)]
struct Hist {
    counts: Vec<i16>,
    stride: usize,
    /// Every row written since the last reset (start, length).
    dirty: Vec<(usize, usize)>,
    /// Whether row `r` (at the current stride) is in `dirty`.
    is_dirty: Vec<bool>,
}

impl Hist {
    /// All counts zero, `rows` rows for `w` columns.
    fn reset(&mut self, rows: usize, w: usize) {
        for &(start, len) in &self.dirty {
            self.counts[start..start + len].fill(0);
        }
        self.dirty.clear();
        self.stride = (w + 2 * MARGIN).next_multiple_of(LANES);
        if self.counts.len() < rows * self.stride {
            self.counts.resize(rows * self.stride, 0);
        }
        self.is_dirty.clear();
        self.is_dirty.resize(rows, false);
    }

    /// Row `r` (with its margins) for writing.
    #[inline(always)]
    fn row(&mut self, r: usize) -> &mut [i16] {
        let stride = self.stride;
        if !self.is_dirty[r] {
            self.is_dirty[r] = true;
            self.dirty.push((r * stride, stride));
        }
        &mut self.counts[r * stride..(r + 1) * stride]
    }
}

/// A run of equal changes of one histogram row, in consecutive columns `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    /// Histogram row + 1; 0 for no run.
    code: u16,
    /// +1 (pixels entering the window) or -1 (leaving it).
    delta: i16,
    start: u32,
    end: u32,
}

impl Run {
    const NONE: Run = Run {
        code: 0,
        delta: 0,
        start: 0,
        end: 0,
    };

    /// Extend the run by the change of `code` at column `j`, or close it (into `runs`) and start
    /// anew.
    #[inline(always)]
    fn push(&mut self, code: u16, j: u32, delta: i16, runs: &mut Vec<Run>) {
        if self.code == code && self.end + 1 == j {
            self.end = j;
        } else {
            if self.code != 0 {
                runs.push(*self);
            }
            *self = Run {
                code,
                delta,
                start: j,
                end: j,
            };
        }
    }

    /// Add `delta` times the run's box filter to its histogram row: column `x` changes by
    /// `delta` times the number of run columns within `pad` of `x`, `min(x - (start - pad) + 1,
    /// run length, window, (end + pad) - x + 1)`. The row's counts stay within
    /// `0..=ws * ws + ws` while a step's runs are applied one by one (every decrement is of a
    /// pixel counted, every increment of a pixel of the entering row), and end as the exact
    /// counts of the new window (at most `ws * ws` <= 4225).
    #[inline(always)]
    fn apply(&self, hist: &mut Hist, pad: usize) {
        const IOTA: [i16; LANES] = {
            let mut a = [0i16; LANES];
            let mut t = 0;
            while t < LANES {
                a[t] = t as i16;
                t += 1;
            }
            a
        };
        let row = hist.row(self.code as usize - 1);
        let (j0, j1) = (self.start as usize, self.end as usize);
        // Storage columns of the reach, rounded out to whole blocks (inside the row: MARGIN
        // >= pad + LANES - 1).
        let b0 = (j0 + MARGIN - pad) / LANES;
        let b1 = (j1 + MARGIN + pad) / LANES;
        // Lane t of block b is column x = b * LANES + t - MARGIN; its change is
        // max(0, min(x - (j0 - pad) + 1, plateau, (j1 + pad) - x + 1)). Columns are below
        // MAX_DIMENSION and pad at most 32, so all of this fits i16.
        let plateau = (j1 - j0 + 1).min(2 * pad + 1) as i16;
        let mut up = (b0 * LANES + pad + 1) as i16 - (j0 + MARGIN) as i16;
        let mut down = (j1 + MARGIN + pad + 1) as i16 - (b0 * LANES) as i16;
        let delta = self.delta;
        let (blocks, _) = row.as_chunks_mut::<LANES>();
        for blk in &mut blocks[b0..=b1] {
            for t in 0..LANES {
                let cover = (up + IOTA[t]).min(plateau).min(down - IOTA[t]).max(0);
                blk[t] += delta * cover;
            }
            up += LANES as i16;
            down -= LANES as i16;
        }
    }
}

/// The changes of a column whose leaving code `a` and entering code `b` differ.
#[inline(always)]
fn column(sub: &mut Run, add: &mut Run, j: usize, a: u16, b: u16, runs: &mut Vec<Run>) {
    if a != 0 {
        sub.push(a, j as u32, -1, runs);
    }
    if b != 0 {
        add.push(b, j as u32, 1, runs);
    }
}

/// Move the window's histograms by one row: `leave` holds the codes of the row leaving the
/// window, `enter` those of the row entering it (an all-zero row stands for none). A code is 0
/// for a pixel that does not count, else its histogram row + 1. A column whose two codes are
/// equal changes nothing (libvmaf's `uh_slide` skips it too); the other changes are gathered
/// into runs of one row and sign in consecutive columns (`runs`), each applied as one box
/// filter: a run of `n` columns costs `n + ws` additions instead of libvmaf's `n * ws`, for the
/// same counts.
#[inline(always)]
fn step(hist: &mut Hist, w: usize, pad: usize, leave: &[u16], enter: &[u16], runs: &mut Vec<Run>) {
    runs.clear();
    let mut sub = Run::NONE;
    let mut add = Run::NONE;
    let (lc, lr) = leave[..w].as_chunks::<CHUNK>();
    let (ec, er) = enter[..w].as_chunks::<CHUNK>();
    for (k, (l, e)) in lc.iter().zip(ec).enumerate() {
        if l != e {
            for t in 0..CHUNK {
                if l[t] != e[t] {
                    column(&mut sub, &mut add, k * CHUNK + t, l[t], e[t], runs);
                }
            }
        }
    }
    let j0 = lc.len() * CHUNK;
    for (t, (&a, &b)) in lr.iter().zip(er).enumerate() {
        if a != b {
            column(&mut sub, &mut add, j0 + t, a, b, runs);
        }
    }
    for r in [sub, add] {
        if r.code != 0 {
            runs.push(r);
        }
    }
    for r in runs.iter() {
        r.apply(hist, pad);
    }
}

/// cambi.c `calculate_c_values` for one scale: the c-value of every pixel, recorded only when
/// non-zero (`s.nz_val`, with its index `row * w + col` in `s.nz_idx`); the code plane and the
/// histograms live in `s`.
#[inline(always)]
fn c_values(
    img: &[u16],
    mask: &[u8],
    w: usize,
    h: usize,
    pad: usize,
    lut: &Lut,
    s: &mut CScratch,
) -> ScaleStats {
    let CScratch {
        code,
        hist,
        zeros,
        runs,
        nz_val,
        nz_idx,
    } = s;
    nz_val.clear();
    nz_idx.clear();
    grow(code, w * h);
    let code = &mut code[..w * h];
    if lut.len == 0 {
        code.fill(0);
    } else {
        // code = v - lo + nd + 1 for a masked v in lo..lo + len, else 0.
        let lo = lut.lo as u16;
        let span = (lut.len - 1) as u16;
        let off = (lut.num_diffs + 1) as u16;
        let code_of = |v: u16, m: u8| {
            let x = v.wrapping_sub(lo);
            if (m != 0) & (x <= span) { x + off } else { 0 }
        };
        let (cc, cr) = code.as_chunks_mut::<CHUNK>();
        let (ic, ir) = img.as_chunks::<CHUNK>();
        let (mc, mr) = mask.as_chunks::<CHUNK>();
        for ((c, i), m) in cc.iter_mut().zip(ic).zip(mc) {
            for t in 0..CHUNK {
                c[t] = code_of(i[t], m[t]);
            }
        }
        for ((c, &v), &m) in cr.iter_mut().zip(ir).zip(mr) {
            *c = code_of(v, m);
        }
    }
    let code = &code[..];
    hist.reset(lut.rows, w);
    // Never written: all zero.
    grow(zeros, w);
    let zeros = &zeros[..w];
    let row = |r: usize| &code[r * w..(r + 1) * w];

    for r in 0..pad.min(h) {
        step(hist, w, pad, zeros, row(r), runs);
    }
    let mut total = 0u64;
    for i in 0..h {
        let leave = if i > pad { row(i - pad - 1) } else { zeros };
        let enter = if i + pad < h { row(i + pad) } else { zeros };
        if i > pad || i + pad < h {
            step(hist, w, pad, leave, enter, runs);
        }

        // Exact in double: a multiple of 2^-24 below 32000 * 9506.25 < 2^29.
        let mut row_sum = 0.0f64;
        let stride = hist.stride;
        let counts = &hist.counts[..lut.rows * stride];
        for (k, chunk) in row(i).chunks(CHUNK).enumerate() {
            // Skip the chunks without a pixel whose value tests any difference (codes
            // fire_lo..=fire_lo + fire_span; code 0 wraps far above).
            let mut any = 0u16;
            if let Ok(full) = <&[u16; CHUNK]>::try_from(chunk) {
                for &cd in full {
                    any |= (cd.wrapping_sub(lut.fire_lo) <= lut.fire_span) as u16;
                }
            } else {
                for &cd in chunk {
                    any |= (cd.wrapping_sub(lut.fire_lo) <= lut.fire_span) as u16;
                }
            }
            if any == 0 {
                continue;
            }
            let j0 = k * CHUNK;
            row_sum += match lut.num_diffs {
                1 => c_chunk::<1>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                2 => c_chunk::<2>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                4 => c_chunk::<4>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                8 => c_chunk::<8>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                16 => c_chunk::<16>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                _ => c_chunk::<32>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
            };
        }
        total = total.saturating_add(units(row_sum));
    }
    ScaleStats {
        units: total,
        nonzero: nz_val.len(),
    }
}

/// cambi.c `c_value_pixel` for the pixels of one chunk of a row (`ND` = `num_diffs`):
/// records the non-zero c-values (index `row_start + j0 + t`) and returns their sum, exact in
/// double (every partial sum is a multiple of 2^-24 below 32 * 9506.25 < 2^19).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn c_chunk<const ND: usize>(
    codes: &[u16],
    j0: usize,
    row_start: usize,
    counts: &[i16],
    stride: usize,
    lut: &Lut,
    nz_val: &mut Vec<f32>,
    nz_idx: &mut Vec<u32>,
) -> f64 {
    let mut sum = 0.0f64;
    for (t, &cd) in codes.iter().enumerate() {
        if cd == 0 {
            continue;
        }
        let r = cd as usize - 1;
        let fire = lut.fire[r];
        if fire == 0 {
            continue;
        }
        let at = r * stride + MARGIN + j0 + t;
        let p0 = counts[at] as i32;
        let mut c = 0.0f32;
        // Every difference is evaluated (rows r - ND..=r + ND exist, their counts are those
        // of one window, so p0 + pm <= ws * ws), and only the tested ones are kept: the max of
        // the same floats as libvmaf's.
        for (d, &weight) in CONTRAST_WEIGHTS[..ND].iter().enumerate() {
            let off = (d + 1) * stride;
            let p1 = counts[at + off] as i32;
            let p2 = counts[at - off] as i32;
            let pm = if p1 > p2 { p1 } else { p2 };
            // At most 9 * 4225^2 / 4 < 2^26: exact in i32, rounded to float as in C.
            let val = (weight * p0 * pm) as f32 * RECIP[(p0 + pm) as usize];
            if (fire >> d) & 1 != 0 && val > c {
                c = val;
            }
        }
        if c > 0.0 {
            nz_val.push(c);
            nz_idx.push((row_start + j0 + t) as u32);
            sum += c as f64;
        }
    }
    sum
}

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
    // `clip(topk * num_elements, 1, num_elements)`: the double truncated to int.
    let k = ((topk * n as f64) as i64).clamp(1, n as i64) as usize;
    if stats.units < EXACT_UNITS {
        let sum = if stats.nonzero <= k {
            stats.units
        } else {
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
    quick_select(full, k);
    average_topk(full, k)
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

// ---------------------------------------------------------------------------------------------
// Luminance tools (luminance_tools.c) and the thresholds computed from them at init.

const BT1886_GAMMA: f64 = 2.4;
const BT1886_LW: f64 = 300.0;
const BT1886_LB: f64 = 0.01;

/// luminance_tools.c `vmaf_luminance_bt1886_eotf` (glibc `pow`, as C calls it).
fn bt1886_eotf(v: f64) -> f64 {
    let a = (BT1886_LW.powf(1.0 / BT1886_GAMMA) - BT1886_LB.powf(1.0 / BT1886_GAMMA))
        .powf(BT1886_GAMMA);
    let b = BT1886_LB.powf(1.0 / BT1886_GAMMA)
        / (BT1886_LW.powf(1.0 / BT1886_GAMMA) - BT1886_LB.powf(1.0 / BT1886_GAMMA));
    let x = v + b;
    a * (if x > 0.0 { x } else { 0.0 }).powf(BT1886_GAMMA)
}

/// luminance_tools.c `vmaf_luminance_pq_eotf`.
fn pq_eotf(v: f64) -> f64 {
    const M1: f64 = 0.1593017578125;
    const M2: f64 = 78.84375;
    const C1: f64 = 0.8359375;
    const C2: f64 = 18.8515625;
    const C3: f64 = 18.6875;
    let num = v.powf(1.0 / M2) - C1;
    let num_clipped = if num > 0.0 { num } else { 0.0 };
    let den = C2 - C3 * v.powf(1.0 / M2);
    10000.0 * (num_clipped / den).powf(1.0 / M1)
}

/// luminance_tools.c `vmaf_luminance_get_luminance` at 10-bit limited range.
fn luminance(sample: i32, eotf: CambiEotf) -> f64 {
    let clipped = sample.clamp(LUMA_FOOT, LUMA_HEAD);
    let normalized = (clipped - LUMA_FOOT) as f64 / (LUMA_HEAD - LUMA_FOOT) as f64;
    match eotf {
        CambiEotf::Bt1886 => bt1886_eotf(normalized),
        CambiEotf::Pq => pq_eotf(normalized),
    }
}

/// cambi.c `tvi_condition`.
fn tvi_condition(sample: i32, diff: i32, tvi_threshold: f64, eotf: CambiEotf) -> bool {
    let mean = luminance(sample, eotf);
    let diff_luminance = luminance(sample + diff, eotf);
    let delta = diff_luminance - mean;
    delta > tvi_threshold * mean
}

#[derive(PartialEq)]
enum Bisect {
    TooSmall,
    Correct,
    TooBig,
}

/// cambi.c `tvi_hard_threshold_condition`.
fn tvi_hard_threshold(sample: i32, diff: i32, t: f64, eotf: CambiEotf) -> Bisect {
    if !tvi_condition(sample, diff, t, eotf) {
        Bisect::TooBig
    } else if tvi_condition(sample + 1, diff, t, eotf) {
        Bisect::TooSmall
    } else {
        Bisect::Correct
    }
}

/// cambi.c `get_tvi_for_diff` at 10 bits: the largest sample at which a luma difference of
/// `diff` is still visible. libvmaf's bisection loops forever if it never lands on the
/// transition; this one gives up after 64 steps (an error).
fn tvi_for_diff(diff: i32, t: f64, eotf: CambiEotf) -> std::result::Result<i32, String> {
    let max_val = (1 << 10) - 1;
    let mut foot = LUMA_FOOT;
    let mut head = LUMA_HEAD - diff - 1;
    match tvi_hard_threshold(foot, diff, t, eotf) {
        Bisect::TooBig => return Ok(0),
        Bisect::Correct => return Ok(foot),
        Bisect::TooSmall => {}
    }
    match tvi_hard_threshold(head, diff, t, eotf) {
        Bisect::TooSmall => return Ok(max_val),
        Bisect::Correct => return Ok(head),
        Bisect::TooBig => {}
    }
    for _ in 0..64 {
        let mid = foot + (head - foot) / 2;
        match tvi_hard_threshold(mid, diff, t, eotf) {
            Bisect::TooBig => head = mid,
            Bisect::TooSmall => foot = mid,
            Bisect::Correct => return Ok(mid),
        }
    }
    Err(format!(
        "the TVI bisection for a difference of {diff} at tvi_threshold {t} does not converge \
         (libvmaf would loop forever)"
    ))
}

/// cambi.c `get_vlt_luma`: the smallest sample whose luminance reaches the threshold (0 when
/// the foot does). libvmaf loops forever when no sample reaches it (a threshold above the
/// EOTF's peak): refused.
fn vlt_luma(threshold: f64, eotf: CambiEotf) -> std::result::Result<u16, String> {
    for sample in LUMA_FOOT..=LUMA_HEAD {
        // C: `while (L(sample) < threshold) sample++`, NaN-free here.
        if luminance(sample, eotf) >= threshold {
            return Ok(if sample == LUMA_FOOT {
                0
            } else {
                sample as u16
            });
        }
    }
    Err(format!(
        "no 10-bit sample reaches cambi_vis_lum_threshold {threshold} cd/m² (libvmaf would \
         loop forever)"
    ))
}

impl Lut {
    fn new(p: &CambiParams) -> std::result::Result<Lut, String> {
        let nd = 1usize << p.max_log_contrast;
        let mut tvi = Vec::with_capacity(nd);
        for d in 0..nd {
            let t = tvi_for_diff(d as i32 + 1, p.tvi_threshold, p.eotf)?;
            tvi.push((t + nd as i32) as u16);
        }
        let vlt = vlt_luma(p.vis_lum_threshold, p.eotf)?;
        // cambi.c init: v_band_base = max(0, vlt - 3 * num_diffs + 1); the band ends at
        // tvi_for_diff[num_diffs - 1] (inclusive).
        let lo = (vlt as i32 - 3 * nd as i32 + 1).max(0);
        let hi = tvi[nd - 1] as i32;
        let len = if hi >= lo { (hi - lo + 1) as usize } else { 0 };
        let rows = len + 2 * nd;
        let mut fire = vec![0u32; rows];
        for v in lo..=hi {
            let value = v + nd as i32;
            let mut bits = 0u32;
            for (d, &t) in tvi.iter().enumerate() {
                if value <= t as i32 && value + d as i32 + 1 > vlt as i32 {
                    // libvmaf reads the count of v + d + 1 from the band: past its end, it
                    // would read outside its histograms. The TVI thresholds grow with the
                    // difference, so this never happens; refuse rather than guess.
                    if v + d as i32 + 1 > hi {
                        return Err(format!(
                            "the TVI thresholds {tvi:?} do not grow with the difference"
                        ));
                    }
                    bits |= 1 << d;
                }
            }
            fire[(v - lo) as usize + nd] = bits;
        }
        let fired = || {
            fire.iter()
                .enumerate()
                .filter(|(_, f)| **f != 0)
                .map(|(r, _)| r)
        };
        let (fire_lo, fire_span) = match (fired().next(), fired().next_back()) {
            (Some(a), Some(b)) => ((a + 1) as u16, (b - a) as u16),
            // No code reaches u16::MAX (at most 1025 + 64 rows).
            _ => (u16::MAX, 0),
        };
        Ok(Lut {
            num_diffs: nd,
            tvi,
            vlt_luma: vlt,
            lo,
            len,
            rows,
            fire_lo,
            fire_span,
            fire,
        })
    }
}

// ---------------------------------------------------------------------------------------------

/// Size of libvmaf's reciprocal table (cambi.h `CAMBI_RECIPROCAL_LUT_SIZE`).
const RECIP_LUT_SIZE: usize = 4226;

/// cambi.h `reciprocal_lut` (libvmaf 3.2.0, BSD+Patent), its decimal literals as written there.
/// Described there as `1.0f / (float)i`, it is not exactly that: in 42 entries (82, 83, 244,
/// 488, ...) the 9- to 10-digit literal rounds to a neighbouring float. These are the values
/// libvmaf multiplies by.
#[rustfmt::skip]
#[allow(clippy::excessive_precision)]
static RECIP: [f32; RECIP_LUT_SIZE] = [
    0.0, 1.0, 0.5, 0.333333333, 0.25, 0.2, 0.166666667, 0.142857143,
    0.125, 0.111111111, 0.1, 0.0909090909, 0.0833333333, 0.0769230769, 0.0714285714, 0.0666666667,
    0.0625, 0.0588235294, 0.0555555556, 0.0526315789, 0.05, 0.0476190476, 0.0454545455, 0.0434782609,
    0.0416666667, 0.04, 0.0384615385, 0.037037037, 0.0357142857, 0.0344827586, 0.0333333333, 0.0322580645,
    0.03125, 0.0303030303, 0.0294117647, 0.0285714286, 0.0277777778, 0.027027027, 0.0263157895, 0.0256410256,
    0.025, 0.0243902439, 0.0238095238, 0.023255814, 0.0227272727, 0.0222222222, 0.0217391304, 0.0212765957,
    0.0208333333, 0.0204081633, 0.02, 0.0196078431, 0.0192307692, 0.0188679245, 0.0185185185, 0.0181818182,
    0.0178571429, 0.0175438596, 0.0172413793, 0.0169491525, 0.0166666667, 0.0163934426, 0.0161290323, 0.0158730159,
    0.015625, 0.0153846154, 0.0151515152, 0.0149253731, 0.0147058824, 0.0144927536, 0.0142857143, 0.014084507,
    0.0138888889, 0.0136986301, 0.0135135135, 0.0133333333, 0.0131578947, 0.012987013, 0.0128205128, 0.0126582278,
    0.0125, 0.012345679, 0.012195122, 0.0120481928, 0.0119047619, 0.0117647059, 0.011627907, 0.0114942529,
    0.0113636364, 0.0112359551, 0.0111111111, 0.010989011, 0.0108695652, 0.0107526882, 0.0106382979, 0.0105263158,
    0.0104166667, 0.0103092784, 0.0102040816, 0.0101010101, 0.01, 0.0099009901, 0.00980392157, 0.00970873786,
    0.00961538462, 0.00952380952, 0.00943396226, 0.00934579439, 0.00925925926, 0.00917431193, 0.00909090909, 0.00900900901,
    0.00892857143, 0.00884955752, 0.00877192982, 0.00869565217, 0.00862068966, 0.00854700855, 0.00847457627, 0.00840336134,
    0.00833333333, 0.00826446281, 0.00819672131, 0.0081300813, 0.00806451613, 0.008, 0.00793650794, 0.00787401575,
    0.0078125, 0.00775193798, 0.00769230769, 0.00763358779, 0.00757575758, 0.00751879699, 0.00746268657, 0.00740740741,
    0.00735294118, 0.00729927007, 0.00724637681, 0.0071942446, 0.00714285714, 0.00709219858, 0.00704225352, 0.00699300699,
    0.00694444444, 0.00689655172, 0.00684931507, 0.00680272109, 0.00675675676, 0.0067114094, 0.00666666667, 0.00662251656,
    0.00657894737, 0.00653594771, 0.00649350649, 0.0064516129, 0.00641025641, 0.00636942675, 0.00632911392, 0.00628930818,
    0.00625, 0.00621118012, 0.00617283951, 0.00613496933, 0.00609756098, 0.00606060606, 0.00602409639, 0.00598802395,
    0.00595238095, 0.00591715976, 0.00588235294, 0.00584795322, 0.00581395349, 0.00578034682, 0.00574712644, 0.00571428571,
    0.00568181818, 0.00564971751, 0.00561797753, 0.00558659218, 0.00555555556, 0.00552486188, 0.00549450549, 0.00546448087,
    0.00543478261, 0.00540540541, 0.00537634409, 0.00534759358, 0.00531914894, 0.00529100529, 0.00526315789, 0.00523560209,
    0.00520833333, 0.00518134715, 0.00515463918, 0.00512820513, 0.00510204082, 0.00507614213, 0.00505050505, 0.00502512563,
    0.005, 0.00497512438, 0.00495049505, 0.00492610837, 0.00490196078, 0.00487804878, 0.00485436893, 0.00483091787,
    0.00480769231, 0.004784689, 0.00476190476, 0.00473933649, 0.00471698113, 0.00469483568, 0.0046728972, 0.00465116279,
    0.00462962963, 0.00460829493, 0.00458715596, 0.00456621005, 0.00454545455, 0.00452488688, 0.0045045045, 0.00448430493,
    0.00446428571, 0.00444444444, 0.00442477876, 0.00440528634, 0.00438596491, 0.00436681223, 0.00434782609, 0.00432900433,
    0.00431034483, 0.00429184549, 0.00427350427, 0.00425531915, 0.00423728814, 0.00421940928, 0.00420168067, 0.00418410042,
    0.00416666667, 0.00414937759, 0.0041322314, 0.00411522634, 0.00409836066, 0.00408163265, 0.00406504065, 0.004048583,
    0.00403225806, 0.00401606426, 0.004, 0.00398406375, 0.00396825397, 0.00395256917, 0.00393700787, 0.00392156863,
    0.00390625, 0.00389105058, 0.00387596899, 0.00386100386, 0.00384615385, 0.00383141762, 0.00381679389, 0.00380228137,
    0.00378787879, 0.00377358491, 0.0037593985, 0.00374531835, 0.00373134328, 0.00371747212, 0.0037037037, 0.0036900369,
    0.00367647059, 0.00366300366, 0.00364963504, 0.00363636364, 0.00362318841, 0.0036101083, 0.0035971223, 0.00358422939,
    0.00357142857, 0.00355871886, 0.00354609929, 0.0035335689, 0.00352112676, 0.00350877193, 0.0034965035, 0.00348432056,
    0.00347222222, 0.00346020761, 0.00344827586, 0.00343642612, 0.00342465753, 0.00341296928, 0.00340136054, 0.00338983051,
    0.00337837838, 0.00336700337, 0.0033557047, 0.00334448161, 0.00333333333, 0.00332225914, 0.00331125828, 0.00330033003,
    0.00328947368, 0.00327868852, 0.00326797386, 0.00325732899, 0.00324675325, 0.00323624595, 0.00322580645, 0.00321543408,
    0.00320512821, 0.00319488818, 0.00318471338, 0.00317460317, 0.00316455696, 0.00315457413, 0.00314465409, 0.00313479624,
    0.003125, 0.0031152648, 0.00310559006, 0.00309597523, 0.00308641975, 0.00307692308, 0.00306748466, 0.00305810398,
    0.00304878049, 0.00303951368, 0.00303030303, 0.00302114804, 0.00301204819, 0.003003003, 0.00299401198, 0.00298507463,
    0.00297619048, 0.00296735905, 0.00295857988, 0.00294985251, 0.00294117647, 0.00293255132, 0.00292397661, 0.0029154519,
    0.00290697674, 0.00289855072, 0.00289017341, 0.00288184438, 0.00287356322, 0.00286532951, 0.00285714286, 0.00284900285,
    0.00284090909, 0.00283286119, 0.00282485876, 0.00281690141, 0.00280898876, 0.00280112045, 0.00279329609, 0.00278551532,
    0.00277777778, 0.0027700831, 0.00276243094, 0.00275482094, 0.00274725275, 0.00273972603, 0.00273224044, 0.00272479564,
    0.0027173913, 0.0027100271, 0.0027027027, 0.00269541779, 0.00268817204, 0.00268096515, 0.00267379679, 0.00266666667,
    0.00265957447, 0.00265251989, 0.00264550265, 0.00263852243, 0.00263157895, 0.00262467192, 0.00261780105, 0.00261096606,
    0.00260416667, 0.0025974026, 0.00259067358, 0.00258397933, 0.00257731959, 0.00257069409, 0.00256410256, 0.00255754476,
    0.00255102041, 0.00254452926, 0.00253807107, 0.00253164557, 0.00252525253, 0.00251889169, 0.00251256281, 0.00250626566,
    0.0025, 0.00249376559, 0.00248756219, 0.00248138958, 0.00247524752, 0.0024691358, 0.00246305419, 0.00245700246,
    0.00245098039, 0.00244498778, 0.00243902439, 0.00243309002, 0.00242718447, 0.00242130751, 0.00241545894, 0.00240963855,
    0.00240384615, 0.00239808153, 0.0023923445, 0.00238663484, 0.00238095238, 0.00237529691, 0.00236966825, 0.00236406619,
    0.00235849057, 0.00235294118, 0.00234741784, 0.00234192037, 0.0023364486, 0.00233100233, 0.0023255814, 0.00232018561,
    0.00231481481, 0.00230946882, 0.00230414747, 0.00229885057, 0.00229357798, 0.00228832952, 0.00228310502, 0.00227790433,
    0.00227272727, 0.0022675737, 0.00226244344, 0.00225733634, 0.00225225225, 0.00224719101, 0.00224215247, 0.00223713647,
    0.00223214286, 0.00222717149, 0.00222222222, 0.0022172949, 0.00221238938, 0.00220750552, 0.00220264317, 0.0021978022,
    0.00219298246, 0.00218818381, 0.00218340611, 0.00217864924, 0.00217391304, 0.0021691974, 0.00216450216, 0.00215982721,
    0.00215517241, 0.00215053763, 0.00214592275, 0.00214132762, 0.00213675214, 0.00213219616, 0.00212765957, 0.00212314225,
    0.00211864407, 0.0021141649, 0.00210970464, 0.00210526316, 0.00210084034, 0.00209643606, 0.00209205021, 0.00208768267,
    0.00208333333, 0.00207900208, 0.0020746888, 0.00207039337, 0.0020661157, 0.00206185567, 0.00205761317, 0.00205338809,
    0.00204918033, 0.00204498978, 0.00204081633, 0.00203665988, 0.00203252033, 0.00202839757, 0.0020242915, 0.00202020202,
    0.00201612903, 0.00201207243, 0.00200803213, 0.00200400802, 0.002, 0.00199600798, 0.00199203187, 0.00198807157,
    0.00198412698, 0.00198019802, 0.00197628458, 0.00197238659, 0.00196850394, 0.00196463654, 0.00196078431, 0.00195694716,
    0.001953125, 0.00194931774, 0.00194552529, 0.00194174757, 0.0019379845, 0.00193423598, 0.00193050193, 0.00192678227,
    0.00192307692, 0.0019193858, 0.00191570881, 0.00191204589, 0.00190839695, 0.0019047619, 0.00190114068, 0.00189753321,
    0.00189393939, 0.00189035917, 0.00188679245, 0.00188323917, 0.00187969925, 0.00187617261, 0.00187265918, 0.00186915888,
    0.00186567164, 0.00186219739, 0.00185873606, 0.00185528757, 0.00185185185, 0.00184842884, 0.00184501845, 0.00184162063,
    0.00183823529, 0.00183486239, 0.00183150183, 0.00182815356, 0.00182481752, 0.00182149362, 0.00181818182, 0.00181488203,
    0.0018115942, 0.00180831826, 0.00180505415, 0.0018018018, 0.00179856115, 0.00179533214, 0.0017921147, 0.00178890877,
    0.00178571429, 0.00178253119, 0.00177935943, 0.00177619893, 0.00177304965, 0.0017699115, 0.00176678445, 0.00176366843,
    0.00176056338, 0.00175746924, 0.00175438596, 0.00175131349, 0.00174825175, 0.0017452007, 0.00174216028, 0.00173913043,
    0.00173611111, 0.00173310225, 0.00173010381, 0.00172711572, 0.00172413793, 0.0017211704, 0.00171821306, 0.00171526587,
    0.00171232877, 0.00170940171, 0.00170648464, 0.00170357751, 0.00170068027, 0.00169779287, 0.00169491525, 0.00169204738,
    0.00168918919, 0.00168634064, 0.00168350168, 0.00168067227, 0.00167785235, 0.00167504188, 0.0016722408, 0.00166944908,
    0.00166666667, 0.00166389351, 0.00166112957, 0.00165837479, 0.00165562914, 0.00165289256, 0.00165016502, 0.00164744646,
    0.00164473684, 0.00164203612, 0.00163934426, 0.00163666121, 0.00163398693, 0.00163132137, 0.0016286645, 0.00162601626,
    0.00162337662, 0.00162074554, 0.00161812298, 0.00161550889, 0.00161290323, 0.00161030596, 0.00160771704, 0.00160513644,
    0.0016025641, 0.0016, 0.00159744409, 0.00159489633, 0.00159235669, 0.00158982512, 0.00158730159, 0.00158478605,
    0.00158227848, 0.00157977883, 0.00157728707, 0.00157480315, 0.00157232704, 0.00156985871, 0.00156739812, 0.00156494523,
    0.0015625, 0.0015600624, 0.0015576324, 0.00155520995, 0.00155279503, 0.0015503876, 0.00154798762, 0.00154559505,
    0.00154320988, 0.00154083205, 0.00153846154, 0.00153609831, 0.00153374233, 0.00153139357, 0.00152905199, 0.00152671756,
    0.00152439024, 0.00152207002, 0.00151975684, 0.00151745068, 0.00151515152, 0.0015128593, 0.00151057402, 0.00150829563,
    0.0015060241, 0.0015037594, 0.0015015015, 0.00149925037, 0.00149700599, 0.00149476831, 0.00149253731, 0.00149031297,
    0.00148809524, 0.0014858841, 0.00148367953, 0.00148148148, 0.00147928994, 0.00147710487, 0.00147492625, 0.00147275405,
    0.00147058824, 0.00146842878, 0.00146627566, 0.00146412884, 0.0014619883, 0.00145985401, 0.00145772595, 0.00145560408,
    0.00145348837, 0.00145137881, 0.00144927536, 0.001447178, 0.00144508671, 0.00144300144, 0.00144092219, 0.00143884892,
    0.00143678161, 0.00143472023, 0.00143266476, 0.00143061516, 0.00142857143, 0.00142653352, 0.00142450142, 0.00142247511,
    0.00142045455, 0.00141843972, 0.00141643059, 0.00141442716, 0.00141242938, 0.00141043724, 0.0014084507, 0.00140646976,
    0.00140449438, 0.00140252454, 0.00140056022, 0.0013986014, 0.00139664804, 0.00139470014, 0.00139275766, 0.00139082058,
    0.00138888889, 0.00138696255, 0.00138504155, 0.00138312586, 0.00138121547, 0.00137931034, 0.00137741047, 0.00137551582,
    0.00137362637, 0.00137174211, 0.00136986301, 0.00136798906, 0.00136612022, 0.00136425648, 0.00136239782, 0.00136054422,
    0.00135869565, 0.0013568521, 0.00135501355, 0.00135317997, 0.00135135135, 0.00134952767, 0.00134770889, 0.00134589502,
    0.00134408602, 0.00134228188, 0.00134048257, 0.00133868809, 0.0013368984, 0.00133511348, 0.00133333333, 0.00133155792,
    0.00132978723, 0.00132802125, 0.00132625995, 0.00132450331, 0.00132275132, 0.00132100396, 0.00131926121, 0.00131752306,
    0.00131578947, 0.00131406045, 0.00131233596, 0.00131061599, 0.00130890052, 0.00130718954, 0.00130548303, 0.00130378096,
    0.00130208333, 0.00130039012, 0.0012987013, 0.00129701686, 0.00129533679, 0.00129366106, 0.00129198966, 0.00129032258,
    0.00128865979, 0.00128700129, 0.00128534704, 0.00128369705, 0.00128205128, 0.00128040973, 0.00127877238, 0.00127713921,
    0.0012755102, 0.00127388535, 0.00127226463, 0.00127064803, 0.00126903553, 0.00126742712, 0.00126582278, 0.0012642225,
    0.00126262626, 0.00126103405, 0.00125944584, 0.00125786164, 0.00125628141, 0.00125470514, 0.00125313283, 0.00125156446,
    0.00125, 0.00124843945, 0.00124688279, 0.00124533001, 0.00124378109, 0.00124223602, 0.00124069479, 0.00123915737,
    0.00123762376, 0.00123609394, 0.0012345679, 0.00123304562, 0.00123152709, 0.0012300123, 0.00122850123, 0.00122699387,
    0.0012254902, 0.00122399021, 0.00122249389, 0.00122100122, 0.0012195122, 0.0012180268, 0.00121654501, 0.00121506683,
    0.00121359223, 0.00121212121, 0.00121065375, 0.00120918984, 0.00120772947, 0.00120627262, 0.00120481928, 0.00120336943,
    0.00120192308, 0.00120048019, 0.00119904077, 0.00119760479, 0.00119617225, 0.00119474313, 0.00119331742, 0.00119189511,
    0.00119047619, 0.00118906064, 0.00118764846, 0.00118623962, 0.00118483412, 0.00118343195, 0.0011820331, 0.00118063754,
    0.00117924528, 0.0011778563, 0.00117647059, 0.00117508813, 0.00117370892, 0.00117233294, 0.00117096019, 0.00116959064,
    0.0011682243, 0.00116686114, 0.00116550117, 0.00116414435, 0.0011627907, 0.00116144019, 0.00116009281, 0.00115874855,
    0.00115740741, 0.00115606936, 0.00115473441, 0.00115340254, 0.00115207373, 0.00115074799, 0.00114942529, 0.00114810563,
    0.00114678899, 0.00114547537, 0.00114416476, 0.00114285714, 0.00114155251, 0.00114025086, 0.00113895216, 0.00113765643,
    0.00113636364, 0.00113507378, 0.00113378685, 0.00113250283, 0.00113122172, 0.0011299435, 0.00112866817, 0.00112739572,
    0.00112612613, 0.00112485939, 0.00112359551, 0.00112233446, 0.00112107623, 0.00111982083, 0.00111856823, 0.00111731844,
    0.00111607143, 0.0011148272, 0.00111358575, 0.00111234705, 0.00111111111, 0.00110987791, 0.00110864745, 0.00110741971,
    0.00110619469, 0.00110497238, 0.00110375276, 0.00110253583, 0.00110132159, 0.00110011001, 0.0010989011, 0.00109769484,
    0.00109649123, 0.00109529025, 0.0010940919, 0.00109289617, 0.00109170306, 0.00109051254, 0.00108932462, 0.00108813928,
    0.00108695652, 0.00108577633, 0.0010845987, 0.00108342362, 0.00108225108, 0.00108108108, 0.00107991361, 0.00107874865,
    0.00107758621, 0.00107642626, 0.00107526882, 0.00107411386, 0.00107296137, 0.00107181136, 0.00107066381, 0.00106951872,
    0.00106837607, 0.00106723586, 0.00106609808, 0.00106496273, 0.00106382979, 0.00106269926, 0.00106157113, 0.00106044539,
    0.00105932203, 0.00105820106, 0.00105708245, 0.00105596621, 0.00105485232, 0.00105374078, 0.00105263158, 0.00105152471,
    0.00105042017, 0.00104931794, 0.00104821803, 0.00104712042, 0.0010460251, 0.00104493208, 0.00104384134, 0.00104275287,
    0.00104166667, 0.00104058273, 0.00103950104, 0.0010384216, 0.0010373444, 0.00103626943, 0.00103519669, 0.00103412616,
    0.00103305785, 0.00103199174, 0.00103092784, 0.00102986612, 0.00102880658, 0.00102774923, 0.00102669405, 0.00102564103,
    0.00102459016, 0.00102354145, 0.00102249489, 0.00102145046, 0.00102040816, 0.00101936799, 0.00101832994, 0.001017294,
    0.00101626016, 0.00101522843, 0.00101419878, 0.00101317123, 0.00101214575, 0.00101112235, 0.00101010101, 0.00100908174,
    0.00100806452, 0.00100704935, 0.00100603622, 0.00100502513, 0.00100401606, 0.00100300903, 0.00100200401, 0.001001001,
    0.001, 0.000999000999, 0.000998003992, 0.000997008973, 0.000996015936, 0.000995024876, 0.000994035785, 0.000993048659,
    0.000992063492, 0.000991080278, 0.00099009901, 0.000989119683, 0.000988142292, 0.000987166831, 0.000986193294, 0.000985221675,
    0.000984251969, 0.000983284169, 0.000982318271, 0.000981354269, 0.000980392157, 0.000979431929, 0.000978473581, 0.000977517107,
    0.0009765625, 0.000975609756, 0.000974658869, 0.000973709834, 0.000972762646, 0.000971817298, 0.000970873786, 0.000969932105,
    0.000968992248, 0.000968054211, 0.000967117988, 0.000966183575, 0.000965250965, 0.000964320154, 0.000963391137, 0.000962463908,
    0.000961538462, 0.000960614793, 0.000959692898, 0.000958772771, 0.000957854406, 0.000956937799, 0.000956022945, 0.000955109838,
    0.000954198473, 0.000953288847, 0.000952380952, 0.000951474786, 0.000950570342, 0.000949667616, 0.000948766603, 0.000947867299,
    0.000946969697, 0.000946073794, 0.000945179584, 0.000944287063, 0.000943396226, 0.000942507069, 0.000941619586, 0.000940733772,
    0.000939849624, 0.000938967136, 0.000938086304, 0.000937207123, 0.000936329588, 0.000935453695, 0.000934579439, 0.000933706816,
    0.000932835821, 0.000931966449, 0.000931098696, 0.000930232558, 0.00092936803, 0.000928505107, 0.000927643785, 0.000926784059,
    0.000925925926, 0.00092506938, 0.000924214418, 0.000923361034, 0.000922509225, 0.000921658986, 0.000920810313, 0.000919963201,
    0.000919117647, 0.000918273646, 0.000917431193, 0.000916590284, 0.000915750916, 0.000914913083, 0.000914076782, 0.000913242009,
    0.000912408759, 0.000911577028, 0.000910746812, 0.000909918107, 0.000909090909, 0.000908265213, 0.000907441016, 0.000906618314,
    0.000905797101, 0.000904977376, 0.000904159132, 0.000903342367, 0.000902527076, 0.000901713255, 0.000900900901, 0.000900090009,
    0.000899280576, 0.000898472597, 0.000897666068, 0.000896860987, 0.000896057348, 0.000895255148, 0.000894454383, 0.000893655049,
    0.000892857143, 0.00089206066, 0.000891265597, 0.00089047195, 0.000889679715, 0.000888888889, 0.000888099467, 0.000887311446,
    0.000886524823, 0.000885739593, 0.000884955752, 0.000884173298, 0.000883392226, 0.000882612533, 0.000881834215, 0.000881057269,
    0.00088028169, 0.000879507476, 0.000878734622, 0.000877963126, 0.000877192982, 0.000876424189, 0.000875656743, 0.000874890639,
    0.000874125874, 0.000873362445, 0.000872600349, 0.000871839582, 0.000871080139, 0.000870322019, 0.000869565217, 0.000868809731,
    0.000868055556, 0.000867302689, 0.000866551127, 0.000865800866, 0.000865051903, 0.000864304235, 0.000863557858, 0.00086281277,
    0.000862068966, 0.000861326443, 0.000860585198, 0.000859845228, 0.000859106529, 0.000858369099, 0.000857632933, 0.000856898029,
    0.000856164384, 0.000855431993, 0.000854700855, 0.000853970965, 0.000853242321, 0.000852514919, 0.000851788756, 0.00085106383,
    0.000850340136, 0.000849617672, 0.000848896435, 0.000848176421, 0.000847457627, 0.000846740051, 0.000846023689, 0.000845308538,
    0.000844594595, 0.000843881857, 0.00084317032, 0.000842459983, 0.000841750842, 0.000841042893, 0.000840336134, 0.000839630563,
    0.000838926174, 0.000838222967, 0.000837520938, 0.000836820084, 0.000836120401, 0.000835421888, 0.000834724541, 0.000834028357,
    0.000833333333, 0.000832639467, 0.000831946755, 0.000831255195, 0.000830564784, 0.000829875519, 0.000829187396, 0.000828500414,
    0.00082781457, 0.000827129859, 0.000826446281, 0.000825763832, 0.000825082508, 0.000824402308, 0.000823723229, 0.000823045267,
    0.000822368421, 0.000821692687, 0.000821018062, 0.000820344545, 0.000819672131, 0.000819000819, 0.000818330606, 0.000817661488,
    0.000816993464, 0.000816326531, 0.000815660685, 0.000814995925, 0.000814332248, 0.00081366965, 0.00081300813, 0.000812347685,
    0.000811688312, 0.000811030008, 0.000810372771, 0.000809716599, 0.000809061489, 0.000808407437, 0.000807754443, 0.000807102502,
    0.000806451613, 0.000805801773, 0.000805152979, 0.000804505229, 0.000803858521, 0.000803212851, 0.000802568218, 0.000801924619,
    0.000801282051, 0.000800640512, 0.0008, 0.000799360512, 0.000798722045, 0.000798084597, 0.000797448166, 0.000796812749,
    0.000796178344, 0.000795544948, 0.00079491256, 0.000794281176, 0.000793650794, 0.000793021412, 0.000792393027, 0.000791765637,
    0.000791139241, 0.000790513834, 0.000789889415, 0.000789265983, 0.000788643533, 0.000788022065, 0.000787401575, 0.000786782061,
    0.000786163522, 0.000785545954, 0.000784929356, 0.000784313725, 0.00078369906, 0.000783085356, 0.000782472613, 0.000781860829,
    0.00078125, 0.000780640125, 0.000780031201, 0.000779423227, 0.000778816199, 0.000778210117, 0.000777604977, 0.000777000777,
    0.000776397516, 0.00077579519, 0.000775193798, 0.000774593338, 0.000773993808, 0.000773395205, 0.000772797527, 0.000772200772,
    0.000771604938, 0.000771010023, 0.000770416025, 0.000769822941, 0.000769230769, 0.000768639508, 0.000768049155, 0.000767459708,
    0.000766871166, 0.000766283525, 0.000765696784, 0.000765110941, 0.000764525994, 0.00076394194, 0.000763358779, 0.000762776506,
    0.000762195122, 0.000761614623, 0.000761035008, 0.000760456274, 0.000759878419, 0.000759301443, 0.000758725341, 0.000758150114,
    0.000757575758, 0.000757002271, 0.000756429652, 0.000755857899, 0.000755287009, 0.000754716981, 0.000754147813, 0.000753579503,
    0.000753012048, 0.000752445448, 0.000751879699, 0.000751314801, 0.000750750751, 0.000750187547, 0.000749625187, 0.00074906367,
    0.000748502994, 0.000747943156, 0.000747384155, 0.00074682599, 0.000746268657, 0.000745712155, 0.000745156483, 0.000744601638,
    0.000744047619, 0.000743494424, 0.000742942051, 0.000742390497, 0.000741839763, 0.000741289844, 0.000740740741, 0.00074019245,
    0.00073964497, 0.0007390983, 0.000738552437, 0.00073800738, 0.000737463127, 0.000736919676, 0.000736377025, 0.000735835173,
    0.000735294118, 0.000734753857, 0.000734214391, 0.000733675715, 0.00073313783, 0.000732600733, 0.000732064422, 0.000731528895,
    0.000730994152, 0.00073046019, 0.000729927007, 0.000729394602, 0.000728862974, 0.000728332119, 0.000727802038, 0.000727272727,
    0.000726744186, 0.000726216412, 0.000725689405, 0.000725163162, 0.000724637681, 0.000724112962, 0.000723589001, 0.000723065799,
    0.000722543353, 0.000722021661, 0.000721500722, 0.000720980534, 0.000720461095, 0.000719942405, 0.00071942446, 0.000718907261,
    0.000718390805, 0.00071787509, 0.000717360115, 0.000716845878, 0.000716332378, 0.000715819613, 0.000715307582, 0.000714796283,
    0.000714285714, 0.000713775874, 0.000713266762, 0.000712758375, 0.000712250712, 0.000711743772, 0.000711237553, 0.000710732054,
    0.000710227273, 0.000709723208, 0.000709219858, 0.000708717222, 0.000708215297, 0.000707714084, 0.000707213579, 0.000706713781,
    0.000706214689, 0.000705716302, 0.000705218618, 0.000704721635, 0.000704225352, 0.000703729768, 0.00070323488, 0.000702740689,
    0.000702247191, 0.000701754386, 0.000701262272, 0.000700770848, 0.000700280112, 0.000699790063, 0.000699300699, 0.00069881202,
    0.000698324022, 0.000697836706, 0.00069735007, 0.000696864111, 0.00069637883, 0.000695894224, 0.000695410292, 0.000694927033,
    0.000694444444, 0.000693962526, 0.000693481276, 0.000693000693, 0.000692520776, 0.000692041522, 0.000691562932, 0.000691085003,
    0.000690607735, 0.000690131125, 0.000689655172, 0.000689179876, 0.000688705234, 0.000688231246, 0.000687757909, 0.000687285223,
    0.000686813187, 0.000686341798, 0.000685871056, 0.00068540096, 0.000684931507, 0.000684462697, 0.000683994528, 0.000683526999,
    0.000683060109, 0.000682593857, 0.00068212824, 0.000681663258, 0.00068119891, 0.000680735194, 0.000680272109, 0.000679809653,
    0.000679347826, 0.000678886626, 0.000678426052, 0.000677966102, 0.000677506775, 0.00067704807, 0.000676589986, 0.000676132522,
    0.000675675676, 0.000675219446, 0.000674763833, 0.000674308833, 0.000673854447, 0.000673400673, 0.00067294751, 0.000672494956,
    0.000672043011, 0.000671591672, 0.00067114094, 0.000670690812, 0.000670241287, 0.000669792364, 0.000669344043, 0.000668896321,
    0.000668449198, 0.000668002672, 0.000667556742, 0.000667111408, 0.000666666667, 0.000666222518, 0.000665778961, 0.000665335995,
    0.000664893617, 0.000664451827, 0.000664010624, 0.000663570007, 0.000663129973, 0.000662690524, 0.000662251656, 0.000661813369,
    0.000661375661, 0.000660938533, 0.000660501982, 0.000660066007, 0.000659630607, 0.000659195781, 0.000658761528, 0.000658327847,
    0.000657894737, 0.000657462196, 0.000657030223, 0.000656598818, 0.000656167979, 0.000655737705, 0.000655307995, 0.000654878847,
    0.000654450262, 0.000654022237, 0.000653594771, 0.000653167864, 0.000652741514, 0.000652315721, 0.000651890482, 0.000651465798,
    0.000651041667, 0.000650618087, 0.000650195059, 0.00064977258, 0.000649350649, 0.000648929267, 0.000648508431, 0.00064808814,
    0.000647668394, 0.000647249191, 0.00064683053, 0.000646412411, 0.000645994832, 0.000645577792, 0.00064516129, 0.000644745326,
    0.000644329897, 0.000643915003, 0.000643500644, 0.000643086817, 0.000642673522, 0.000642260758, 0.000641848524, 0.000641436818,
    0.000641025641, 0.00064061499, 0.000640204866, 0.000639795266, 0.000639386189, 0.000638977636, 0.000638569604, 0.000638162093,
    0.000637755102, 0.00063734863, 0.000636942675, 0.000636537237, 0.000636132316, 0.000635727908, 0.000635324015, 0.000634920635,
    0.000634517766, 0.000634115409, 0.000633713561, 0.000633312223, 0.000632911392, 0.000632511069, 0.000632111252, 0.000631711939,
    0.000631313131, 0.000630914826, 0.000630517024, 0.000630119723, 0.000629722922, 0.000629326621, 0.000628930818, 0.000628535512,
    0.000628140704, 0.00062774639, 0.000627352572, 0.000626959248, 0.000626566416, 0.000626174076, 0.000625782228, 0.000625390869,
    0.000625, 0.000624609619, 0.000624219725, 0.000623830318, 0.000623441397, 0.00062305296, 0.000622665006, 0.000622277536,
    0.000621890547, 0.00062150404, 0.000621118012, 0.000620732464, 0.000620347395, 0.000619962802, 0.000619578686, 0.000619195046,
    0.000618811881, 0.00061842919, 0.000618046972, 0.000617665225, 0.000617283951, 0.000616903146, 0.000616522811, 0.000616142945,
    0.000615763547, 0.000615384615, 0.00061500615, 0.00061462815, 0.000614250614, 0.000613873542, 0.000613496933, 0.000613120785,
    0.000612745098, 0.000612369871, 0.000611995104, 0.000611620795, 0.000611246944, 0.000610873549, 0.000610500611, 0.000610128127,
    0.000609756098, 0.000609384522, 0.000609013398, 0.000608642727, 0.000608272506, 0.000607902736, 0.000607533414, 0.000607164542,
    0.000606796117, 0.000606428138, 0.000606060606, 0.000605693519, 0.000605326877, 0.000604960678, 0.000604594921, 0.000604229607,
    0.000603864734, 0.000603500302, 0.000603136309, 0.000602772755, 0.000602409639, 0.00060204696, 0.000601684717, 0.00060132291,
    0.000600961538, 0.000600600601, 0.000600240096, 0.000599880024, 0.000599520384, 0.000599161174, 0.000598802395, 0.000598444045,
    0.000598086124, 0.000597728631, 0.000597371565, 0.000597014925, 0.000596658711, 0.000596302922, 0.000595947557, 0.000595592615,
    0.000595238095, 0.000594883998, 0.000594530321, 0.000594177065, 0.000593824228, 0.00059347181, 0.00059311981, 0.000592768228,
    0.000592417062, 0.000592066311, 0.000591715976, 0.000591366056, 0.000591016548, 0.000590667454, 0.000590318772, 0.000589970501,
    0.000589622642, 0.000589275192, 0.000588928151, 0.000588581519, 0.000588235294, 0.000587889477, 0.000587544066, 0.00058719906,
    0.00058685446, 0.000586510264, 0.000586166471, 0.000585823081, 0.000585480094, 0.000585137507, 0.000584795322, 0.000584453536,
    0.00058411215, 0.000583771162, 0.000583430572, 0.000583090379, 0.000582750583, 0.000582411182, 0.000582072177, 0.000581733566,
    0.000581395349, 0.000581057525, 0.000580720093, 0.000580383053, 0.000580046404, 0.000579710145, 0.000579374276, 0.000579038796,
    0.000578703704, 0.000578368999, 0.000578034682, 0.000577700751, 0.000577367206, 0.000577034045, 0.000576701269, 0.000576368876,
    0.000576036866, 0.000575705239, 0.000575373993, 0.000575043128, 0.000574712644, 0.000574382539, 0.000574052813, 0.000573723465,
    0.000573394495, 0.000573065903, 0.000572737686, 0.000572409845, 0.00057208238, 0.000571755289, 0.000571428571, 0.000571102227,
    0.000570776256, 0.000570450656, 0.000570125428, 0.00056980057, 0.000569476082, 0.000569151964, 0.000568828214, 0.000568504832,
    0.000568181818, 0.000567859171, 0.00056753689, 0.000567214974, 0.000566893424, 0.000566572238, 0.000566251416, 0.000565930956,
    0.00056561086, 0.000565291125, 0.000564971751, 0.000564652739, 0.000564334086, 0.000564015792, 0.000563697858, 0.000563380282,
    0.000563063063, 0.000562746201, 0.000562429696, 0.000562113547, 0.000561797753, 0.000561482313, 0.000561167228, 0.000560852496,
    0.000560538117, 0.00056022409, 0.000559910414, 0.00055959709, 0.000559284116, 0.000558971492, 0.000558659218, 0.000558347292,
    0.000558035714, 0.000557724484, 0.000557413601, 0.000557103064, 0.000556792873, 0.000556483027, 0.000556173526, 0.000555864369,
    0.000555555556, 0.000555247085, 0.000554938957, 0.00055463117, 0.000554323725, 0.00055401662, 0.000553709856, 0.000553403431,
    0.000553097345, 0.000552791598, 0.000552486188, 0.000552181115, 0.00055187638, 0.00055157198, 0.000551267916, 0.000550964187,
    0.000550660793, 0.000550357733, 0.000550055006, 0.000549752611, 0.000549450549, 0.000549148819, 0.00054884742, 0.000548546352,
    0.000548245614, 0.000547945205, 0.000547645126, 0.000547345375, 0.000547045952, 0.000546746856, 0.000546448087, 0.000546149645,
    0.000545851528, 0.000545553737, 0.00054525627, 0.000544959128, 0.000544662309, 0.000544365814, 0.000544069641, 0.00054377379,
    0.000543478261, 0.000543183053, 0.000542888165, 0.000542593597, 0.000542299349, 0.00054200542, 0.000541711809, 0.000541418517,
    0.000541125541, 0.000540832883, 0.000540540541, 0.000540248514, 0.000539956803, 0.000539665407, 0.000539374326, 0.000539083558,
    0.000538793103, 0.000538502962, 0.000538213132, 0.000537923615, 0.000537634409, 0.000537345513, 0.000537056928, 0.000536768653,
    0.000536480687, 0.000536193029, 0.000535905681, 0.00053561864, 0.000535331906, 0.000535045479, 0.000534759358, 0.000534473544,
    0.000534188034, 0.00053390283, 0.00053361793, 0.000533333333, 0.000533049041, 0.000532765051, 0.000532481363, 0.000532197978,
    0.000531914894, 0.000531632111, 0.000531349628, 0.000531067446, 0.000530785563, 0.000530503979, 0.000530222694, 0.000529941706,
    0.000529661017, 0.000529380625, 0.000529100529, 0.00052882073, 0.000528541226, 0.000528262018, 0.000527983105, 0.000527704485,
    0.00052742616, 0.000527148129, 0.00052687039, 0.000526592944, 0.000526315789, 0.000526038927, 0.000525762355, 0.000525486075,
    0.000525210084, 0.000524934383, 0.000524658972, 0.000524383849, 0.000524109015, 0.000523834468, 0.000523560209, 0.000523286238,
    0.000523012552, 0.000522739153, 0.00052246604, 0.000522193211, 0.000521920668, 0.000521648409, 0.000521376434, 0.000521104742,
    0.000520833333, 0.000520562207, 0.000520291363, 0.000520020801, 0.00051975052, 0.000519480519, 0.0005192108, 0.00051894136,
    0.000518672199, 0.000518403318, 0.000518134715, 0.00051786639, 0.000517598344, 0.000517330574, 0.000517063082, 0.000516795866,
    0.000516528926, 0.000516262261, 0.000515995872, 0.000515729758, 0.000515463918, 0.000515198351, 0.000514933059, 0.000514668039,
    0.000514403292, 0.000514138817, 0.000513874615, 0.000513610683, 0.000513347023, 0.000513083633, 0.000512820513, 0.000512557663,
    0.000512295082, 0.00051203277, 0.000511770727, 0.000511508951, 0.000511247444, 0.000510986203, 0.00051072523, 0.000510464523,
    0.000510204082, 0.000509943906, 0.000509683996, 0.00050942435, 0.000509164969, 0.000508905852, 0.000508646999, 0.000508388409,
    0.000508130081, 0.000507872016, 0.000507614213, 0.000507356672, 0.000507099391, 0.000506842372, 0.000506585613, 0.000506329114,
    0.000506072874, 0.000505816894, 0.000505561173, 0.00050530571, 0.000505050505, 0.000504795558, 0.000504540868, 0.000504286435,
    0.000504032258, 0.000503778338, 0.000503524673, 0.000503271263, 0.000503018109, 0.000502765209, 0.000502512563, 0.000502260171,
    0.000502008032, 0.000501756147, 0.000501504514, 0.000501253133, 0.000501002004, 0.000500751127, 0.000500500501, 0.000500250125,
    0.0005, 0.000499750125, 0.0004995005, 0.000499251123, 0.000499001996, 0.000498753117, 0.000498504487, 0.000498256104,
    0.000498007968, 0.00049776008, 0.000497512438, 0.000497265042, 0.000497017893, 0.000496770989, 0.00049652433, 0.000496277916,
    0.000496031746, 0.000495785821, 0.000495540139, 0.0004952947, 0.000495049505, 0.000494804552, 0.000494559842, 0.000494315373,
    0.000494071146, 0.00049382716, 0.000493583416, 0.000493339911, 0.000493096647, 0.000492853622, 0.000492610837, 0.000492368291,
    0.000492125984, 0.000491883915, 0.000491642085, 0.000491400491, 0.000491159136, 0.000490918017, 0.000490677134, 0.000490436488,
    0.000490196078, 0.000489955904, 0.000489715965, 0.00048947626, 0.000489236791, 0.000488997555, 0.000488758553, 0.000488519785,
    0.00048828125, 0.000488042948, 0.000487804878, 0.00048756704, 0.000487329435, 0.00048709206, 0.000486854917, 0.000486618005,
    0.000486381323, 0.000486144871, 0.000485908649, 0.000485672657, 0.000485436893, 0.000485201359, 0.000484966052, 0.000484730974,
    0.000484496124, 0.000484261501, 0.000484027106, 0.000483792937, 0.000483558994, 0.000483325278, 0.000483091787, 0.000482858522,
    0.000482625483, 0.000482392668, 0.000482160077, 0.000481927711, 0.000481695568, 0.000481463649, 0.000481231954, 0.000481000481,
    0.000480769231, 0.000480538203, 0.000480307397, 0.000480076812, 0.000479846449, 0.000479616307, 0.000479386385, 0.000479156684,
    0.000478927203, 0.000478697942, 0.0004784689, 0.000478240077, 0.000478011472, 0.000477783086, 0.000477554919, 0.000477326969,
    0.000477099237, 0.000476871722, 0.000476644423, 0.000476417342, 0.000476190476, 0.000475963827, 0.000475737393, 0.000475511175,
    0.000475285171, 0.000475059382, 0.000474833808, 0.000474608448, 0.000474383302, 0.000474158369, 0.000473933649, 0.000473709143,
    0.000473484848, 0.000473260767, 0.000473036897, 0.000472813239, 0.000472589792, 0.000472366556, 0.000472143532, 0.000471920717,
    0.000471698113, 0.000471475719, 0.000471253534, 0.000471031559, 0.000470809793, 0.000470588235, 0.000470366886, 0.000470145745,
    0.000469924812, 0.000469704086, 0.000469483568, 0.000469263257, 0.000469043152, 0.000468823254, 0.000468603561, 0.000468384075,
    0.000468164794, 0.000467945718, 0.000467726848, 0.000467508181, 0.00046728972, 0.000467071462, 0.000466853408, 0.000466635558,
    0.00046641791, 0.000466200466, 0.000465983225, 0.000465766185, 0.000465549348, 0.000465332713, 0.000465116279, 0.000464900046,
    0.000464684015, 0.000464468184, 0.000464252553, 0.000464037123, 0.000463821892, 0.000463606861, 0.00046339203, 0.000463177397,
    0.000462962963, 0.000462748727, 0.00046253469, 0.000462320851, 0.000462107209, 0.000461893764, 0.000461680517, 0.000461467467,
    0.000461254613, 0.000461041955, 0.000460829493, 0.000460617227, 0.000460405157, 0.000460193281, 0.000459981601, 0.000459770115,
    0.000459558824, 0.000459347726, 0.000459136823, 0.000458926113, 0.000458715596, 0.000458505273, 0.000458295142, 0.000458085204,
    0.000457875458, 0.000457665904, 0.000457456542, 0.000457247371, 0.000457038391, 0.000456829603, 0.000456621005, 0.000456412597,
    0.00045620438, 0.000455996352, 0.000455788514, 0.000455580866, 0.000455373406, 0.000455166136, 0.000454959054, 0.00045475216,
    0.000454545455, 0.000454338937, 0.000454132607, 0.000453926464, 0.000453720508, 0.000453514739, 0.000453309157, 0.000453103761,
    0.000452898551, 0.000452693526, 0.000452488688, 0.000452284034, 0.000452079566, 0.000451875282, 0.000451671183, 0.000451467269,
    0.000451263538, 0.000451059991, 0.000450856628, 0.000450653447, 0.00045045045, 0.000450247636, 0.000450045005, 0.000449842555,
    0.000449640288, 0.000449438202, 0.000449236298, 0.000449034576, 0.000448833034, 0.000448631673, 0.000448430493, 0.000448229494,
    0.000448028674, 0.000447828034, 0.000447627574, 0.000447427293, 0.000447227191, 0.000447027269, 0.000446827525, 0.000446627959,
    0.000446428571, 0.000446229362, 0.00044603033, 0.000445831476, 0.000445632799, 0.000445434298, 0.000445235975, 0.000445037828,
    0.000444839858, 0.000444642063, 0.000444444444, 0.000444247001, 0.000444049734, 0.000443852641, 0.000443655723, 0.00044345898,
    0.000443262411, 0.000443066017, 0.000442869796, 0.000442673749, 0.000442477876, 0.000442282176, 0.000442086649, 0.000441891295,
    0.000441696113, 0.000441501104, 0.000441306267, 0.000441111601, 0.000440917108, 0.000440722785, 0.000440528634, 0.000440334654,
    0.000440140845, 0.000439947206, 0.000439753738, 0.00043956044, 0.000439367311, 0.000439174352, 0.000438981563, 0.000438788943,
    0.000438596491, 0.000438404209, 0.000438212095, 0.000438020149, 0.000437828371, 0.000437636761, 0.000437445319, 0.000437254045,
    0.000437062937, 0.000436871997, 0.000436681223, 0.000436490615, 0.000436300175, 0.0004361099, 0.000435919791, 0.000435729847,
    0.00043554007, 0.000435350457, 0.00043516101, 0.000434971727, 0.000434782609, 0.000434593655, 0.000434404865, 0.00043421624,
    0.000434027778, 0.000433839479, 0.000433651344, 0.000433463372, 0.000433275563, 0.000433087917, 0.000432900433, 0.000432713111,
    0.000432525952, 0.000432338954, 0.000432152118, 0.000431965443, 0.000431778929, 0.000431592577, 0.000431406385, 0.000431220354,
    0.000431034483, 0.000430848772, 0.000430663221, 0.00043047783, 0.000430292599, 0.000430107527, 0.000429922614, 0.00042973786,
    0.000429553265, 0.000429368828, 0.000429184549, 0.000429000429, 0.000428816467, 0.000428632662, 0.000428449015, 0.000428265525,
    0.000428082192, 0.000427899016, 0.000427715997, 0.000427533134, 0.000427350427, 0.000427167877, 0.000426985482, 0.000426803244,
    0.00042662116, 0.000426439232, 0.00042625746, 0.000426075841, 0.000425894378, 0.000425713069, 0.000425531915, 0.000425350915,
    0.000425170068, 0.000424989375, 0.000424808836, 0.00042462845, 0.000424448217, 0.000424268137, 0.00042408821, 0.000423908436,
    0.000423728814, 0.000423549343, 0.000423370025, 0.000423190859, 0.000423011844, 0.000422832981, 0.000422654269, 0.000422475708,
    0.000422297297, 0.000422119038, 0.000421940928, 0.000421762969, 0.00042158516, 0.000421407501, 0.000421229992, 0.000421052632,
    0.000420875421, 0.000420698359, 0.000420521447, 0.000420344683, 0.000420168067, 0.0004199916, 0.000419815281, 0.00041963911,
    0.000419463087, 0.000419287212, 0.000419111484, 0.000418935903, 0.000418760469, 0.000418585182, 0.000418410042, 0.000418235048,
    0.000418060201, 0.000417885499, 0.000417710944, 0.000417536534, 0.00041736227, 0.000417188152, 0.000417014178, 0.00041684035,
    0.000416666667, 0.000416493128, 0.000416319734, 0.000416146484, 0.000415973378, 0.000415800416, 0.000415627598, 0.000415454923,
    0.000415282392, 0.000415110004, 0.000414937759, 0.000414765657, 0.000414593698, 0.000414421881, 0.000414250207, 0.000414078675,
    0.000413907285, 0.000413736036, 0.00041356493, 0.000413393964, 0.00041322314, 0.000413052458, 0.000412881916, 0.000412711515,
    0.000412541254, 0.000412371134, 0.000412201154, 0.000412031314, 0.000411861614, 0.000411692054, 0.000411522634, 0.000411353353,
    0.000411184211, 0.000411015208, 0.000410846343, 0.000410677618, 0.000410509031, 0.000410340583, 0.000410172272, 0.0004100041,
    0.000409836066, 0.000409668169, 0.00040950041, 0.000409332788, 0.000409165303, 0.000408997955, 0.000408830744, 0.00040866367,
    0.000408496732, 0.000408329931, 0.000408163265, 0.000407996736, 0.000407830343, 0.000407664085, 0.000407497963, 0.000407331976,
    0.000407166124, 0.000407000407, 0.000406834825, 0.000406669378, 0.000406504065, 0.000406338887, 0.000406173842, 0.000406008932,
    0.000405844156, 0.000405679513, 0.000405515004, 0.000405350628, 0.000405186386, 0.000405022276, 0.0004048583, 0.000404694456,
    0.000404530744, 0.000404367165, 0.000404203719, 0.000404040404, 0.000403877221, 0.00040371417, 0.000403551251, 0.000403388463,
    0.000403225806, 0.000403063281, 0.000402900886, 0.000402738623, 0.00040257649, 0.000402414487, 0.000402252615, 0.000402090873,
    0.00040192926, 0.000401767778, 0.000401606426, 0.000401445203, 0.000401284109, 0.000401123145, 0.00040096231, 0.000400801603,
    0.000400641026, 0.000400480577, 0.000400320256, 0.000400160064, 0.0004, 0.000399840064, 0.000399680256, 0.000399520575,
    0.000399361022, 0.000399201597, 0.000399042298, 0.000398883127, 0.000398724083, 0.000398565165, 0.000398406375, 0.00039824771,
    0.000398089172, 0.00039793076, 0.000397772474, 0.000397614314, 0.00039745628, 0.000397298371, 0.000397140588, 0.00039698293,
    0.000396825397, 0.000396667989, 0.000396510706, 0.000396353547, 0.000396196513, 0.000396039604, 0.000395882819, 0.000395726157,
    0.00039556962, 0.000395413207, 0.000395256917, 0.000395100751, 0.000394944708, 0.000394788788, 0.000394632991, 0.000394477318,
    0.000394321767, 0.000394166338, 0.000394011032, 0.000393855849, 0.000393700787, 0.000393545848, 0.000393391031, 0.000393236335,
    0.000393081761, 0.000392927308, 0.000392772977, 0.000392618767, 0.000392464678, 0.00039231071, 0.000392156863, 0.000392003136,
    0.00039184953, 0.000391696044, 0.000391542678, 0.000391389432, 0.000391236307, 0.000391083301, 0.000390930414, 0.000390777648,
    0.000390625, 0.000390472472, 0.000390320062, 0.000390167772, 0.000390015601, 0.000389863548, 0.000389711613, 0.000389559797,
    0.0003894081, 0.00038925652, 0.000389105058, 0.000388953715, 0.000388802488, 0.00038865138, 0.000388500389, 0.000388349515,
    0.000388198758, 0.000388048118, 0.000387897595, 0.000387747189, 0.000387596899, 0.000387446726, 0.000387296669, 0.000387146729,
    0.000386996904, 0.000386847195, 0.000386697602, 0.000386548125, 0.000386398764, 0.000386249517, 0.000386100386, 0.00038595137,
    0.000385802469, 0.000385653683, 0.000385505012, 0.000385356455, 0.000385208012, 0.000385059684, 0.00038491147, 0.000384763371,
    0.000384615385, 0.000384467512, 0.000384319754, 0.000384172109, 0.000384024578, 0.000383877159, 0.000383729854, 0.000383582662,
    0.000383435583, 0.000383288616, 0.000383141762, 0.000382995021, 0.000382848392, 0.000382701875, 0.000382555471, 0.000382409178,
    0.000382262997, 0.000382116928, 0.00038197097, 0.000381825124, 0.000381679389, 0.000381533766, 0.000381388253, 0.000381242852,
    0.000381097561, 0.000380952381, 0.000380807312, 0.000380662352, 0.000380517504, 0.000380372765, 0.000380228137, 0.000380083618,
    0.00037993921, 0.000379794911, 0.000379650721, 0.000379506641, 0.000379362671, 0.000379218809, 0.000379075057, 0.000378931413,
    0.000378787879, 0.000378644453, 0.000378501136, 0.000378357927, 0.000378214826, 0.000378071834, 0.000377928949, 0.000377786173,
    0.000377643505, 0.000377500944, 0.000377358491, 0.000377216145, 0.000377073906, 0.000376931775, 0.000376789751, 0.000376647834,
    0.000376506024, 0.000376364321, 0.000376222724, 0.000376081234, 0.00037593985, 0.000375798572, 0.0003756574, 0.000375516335,
    0.000375375375, 0.000375234522, 0.000375093773, 0.000374953131, 0.000374812594, 0.000374672162, 0.000374531835, 0.000374391614,
    0.000374251497, 0.000374111485, 0.000373971578, 0.000373831776, 0.000373692078, 0.000373552484, 0.000373412995, 0.00037327361,
    0.000373134328, 0.000372995151, 0.000372856078, 0.000372717108, 0.000372578241, 0.000372439479, 0.000372300819, 0.000372162263,
    0.00037202381, 0.000371885459, 0.000371747212, 0.000371609067, 0.000371471025, 0.000371333086, 0.000371195249, 0.000371057514,
    0.000370919881, 0.000370782351, 0.000370644922, 0.000370507595, 0.00037037037, 0.000370233247, 0.000370096225, 0.000369959304,
    0.000369822485, 0.000369685767, 0.00036954915, 0.000369412634, 0.000369276219, 0.000369139904, 0.00036900369, 0.000368867577,
    0.000368731563, 0.000368595651, 0.000368459838, 0.000368324125, 0.000368188513, 0.000368053, 0.000367917586, 0.000367782273,
    0.000367647059, 0.000367511944, 0.000367376929, 0.000367242012, 0.000367107195, 0.000366972477, 0.000366837858, 0.000366703337,
    0.000366568915, 0.000366434591, 0.000366300366, 0.000366166239, 0.000366032211, 0.00036589828, 0.000365764448, 0.000365630713,
    0.000365497076, 0.000365363537, 0.000365230095, 0.000365096751, 0.000364963504, 0.000364830354, 0.000364697301, 0.000364564346,
    0.000364431487, 0.000364298725, 0.00036416606, 0.000364033491, 0.000363901019, 0.000363768643, 0.000363636364, 0.00036350418,
    0.000363372093, 0.000363240102, 0.000363108206, 0.000362976407, 0.000362844702, 0.000362713094, 0.000362581581, 0.000362450163,
    0.000362318841, 0.000362187613, 0.000362056481, 0.000361925443, 0.000361794501, 0.000361663653, 0.000361532899, 0.000361402241,
    0.000361271676, 0.000361141206, 0.00036101083, 0.000360880549, 0.000360750361, 0.000360620267, 0.000360490267, 0.00036036036,
    0.000360230548, 0.000360100828, 0.000359971202, 0.00035984167, 0.00035971223, 0.000359582884, 0.00035945363, 0.00035932447,
    0.000359195402, 0.000359066427, 0.000358937545, 0.000358808755, 0.000358680057, 0.000358551452, 0.000358422939, 0.000358294518,
    0.000358166189, 0.000358037952, 0.000357909807, 0.000357781753, 0.000357653791, 0.000357525921, 0.000357398142, 0.000357270454,
    0.000357142857, 0.000357015352, 0.000356887937, 0.000356760614, 0.000356633381, 0.000356506239, 0.000356379187, 0.000356252227,
    0.000356125356, 0.000355998576, 0.000355871886, 0.000355745286, 0.000355618777, 0.000355492357, 0.000355366027, 0.000355239787,
    0.000355113636, 0.000354987575, 0.000354861604, 0.000354735722, 0.000354609929, 0.000354484225, 0.000354358611, 0.000354233085,
    0.000354107649, 0.000353982301, 0.000353857042, 0.000353731871, 0.000353606789, 0.000353481796, 0.00035335689, 0.000353232073,
    0.000353107345, 0.000352982704, 0.000352858151, 0.000352733686, 0.000352609309, 0.000352485019, 0.000352360817, 0.000352236703,
    0.000352112676, 0.000351988736, 0.000351864884, 0.000351741119, 0.00035161744, 0.000351493849, 0.000351370344, 0.000351246927,
    0.000351123596, 0.000351000351, 0.000350877193, 0.000350754121, 0.000350631136, 0.000350508237, 0.000350385424, 0.000350262697,
    0.000350140056, 0.000350017501, 0.000349895031, 0.000349772648, 0.00034965035, 0.000349528137, 0.00034940601, 0.000349283968,
    0.000349162011, 0.00034904014, 0.000348918353, 0.000348796652, 0.000348675035, 0.000348553503, 0.000348432056, 0.000348310693,
    0.000348189415, 0.000348068221, 0.000347947112, 0.000347826087, 0.000347705146, 0.000347584289, 0.000347463516, 0.000347342827,
    0.000347222222, 0.000347101701, 0.000346981263, 0.000346860909, 0.000346740638, 0.000346620451, 0.000346500347, 0.000346380326,
    0.000346260388, 0.000346140533, 0.000346020761, 0.000345901072, 0.000345781466, 0.000345661943, 0.000345542502, 0.000345423143,
    0.000345303867, 0.000345184674, 0.000345065562, 0.000344946533, 0.000344827586, 0.000344708721, 0.000344589938, 0.000344471237,
    0.000344352617, 0.000344234079, 0.000344115623, 0.000343997248, 0.000343878955, 0.000343760743, 0.000343642612, 0.000343524562,
    0.000343406593, 0.000343288706, 0.000343170899, 0.000343053173, 0.000342935528, 0.000342817964, 0.00034270048, 0.000342583076,
    0.000342465753, 0.000342348511, 0.000342231348, 0.000342114266, 0.000341997264, 0.000341880342, 0.0003417635, 0.000341646737,
    0.000341530055, 0.000341413452, 0.000341296928, 0.000341180484, 0.00034106412, 0.000340947835, 0.000340831629, 0.000340715503,
    0.000340599455, 0.000340483487, 0.000340367597, 0.000340251786, 0.000340136054, 0.000340020401, 0.000339904827, 0.000339789331,
    0.000339673913, 0.000339558574, 0.000339443313, 0.00033932813, 0.000339213026, 0.000339097999, 0.000338983051, 0.00033886818,
    0.000338753388, 0.000338638673, 0.000338524035, 0.000338409475, 0.000338294993, 0.000338180588, 0.000338066261, 0.000337952011,
    0.000337837838, 0.000337723742, 0.000337609723, 0.000337495781, 0.000337381916, 0.000337268128, 0.000337154417, 0.000337040782,
    0.000336927224, 0.000336813742, 0.000336700337, 0.000336587008, 0.000336473755, 0.000336360579, 0.000336247478, 0.000336134454,
    0.000336021505, 0.000335908633, 0.000335795836, 0.000335683115, 0.00033557047, 0.0003354579, 0.000335345406, 0.000335232987,
    0.000335120643, 0.000335008375, 0.000334896182, 0.000334784064, 0.000334672021, 0.000334560054, 0.000334448161, 0.000334336342,
    0.000334224599, 0.00033411293, 0.000334001336, 0.000333889816, 0.000333778371, 0.000333667, 0.000333555704, 0.000333444481,
    0.000333333333, 0.000333222259, 0.000333111259, 0.000333000333, 0.000332889481, 0.000332778702, 0.000332667997, 0.000332557366,
    0.000332446809, 0.000332336324, 0.000332225914, 0.000332115576, 0.000332005312, 0.000331895121, 0.000331785003, 0.000331674959,
    0.000331564987, 0.000331455088, 0.000331345262, 0.000331235508, 0.000331125828, 0.00033101622, 0.000330906684, 0.000330797221,
    0.000330687831, 0.000330578512, 0.000330469266, 0.000330360093, 0.000330250991, 0.000330141961, 0.000330033003, 0.000329924117,
    0.000329815303, 0.000329706561, 0.000329597891, 0.000329489292, 0.000329380764, 0.000329272308, 0.000329163924, 0.00032905561,
    0.000328947368, 0.000328839198, 0.000328731098, 0.000328623069, 0.000328515112, 0.000328407225, 0.000328299409, 0.000328191664,
    0.00032808399, 0.000327976386, 0.000327868852, 0.00032776139, 0.000327653997, 0.000327546675, 0.000327439424, 0.000327332242,
    0.000327225131, 0.00032711809, 0.000327011118, 0.000326904217, 0.000326797386, 0.000326690624, 0.000326583932, 0.00032647731,
    0.000326370757, 0.000326264274, 0.00032615786, 0.000326051516, 0.000325945241, 0.000325839036, 0.000325732899, 0.000325626832,
    0.000325520833, 0.000325414904, 0.000325309044, 0.000325203252, 0.000325097529, 0.000324991875, 0.00032488629, 0.000324780773,
    0.000324675325, 0.000324569945, 0.000324464633, 0.00032435939, 0.000324254215, 0.000324149109, 0.00032404407, 0.000323939099,
    0.000323834197, 0.000323729362, 0.000323624595, 0.000323519896, 0.000323415265, 0.000323310702, 0.000323206206, 0.000323101777,
    0.000322997416, 0.000322893122, 0.000322788896, 0.000322684737, 0.000322580645, 0.00032247662, 0.000322372663, 0.000322268772,
    0.000322164948, 0.000322061192, 0.000321957502, 0.000321853878, 0.000321750322, 0.000321646832, 0.000321543408, 0.000321440051,
    0.000321336761, 0.000321233537, 0.000321130379, 0.000321027287, 0.000320924262, 0.000320821303, 0.000320718409, 0.000320615582,
    0.000320512821, 0.000320410125, 0.000320307495, 0.000320204931, 0.000320102433, 0.00032, 0.000319897633, 0.000319795331,
    0.000319693095, 0.000319590924, 0.000319488818, 0.000319386777, 0.000319284802, 0.000319182892, 0.000319081047, 0.000318979266,
    0.000318877551, 0.000318775901, 0.000318674315, 0.000318572794, 0.000318471338, 0.000318369946, 0.000318268619, 0.000318167356,
    0.000318066158, 0.000317965024, 0.000317863954, 0.000317762949, 0.000317662008, 0.000317561131, 0.000317460317, 0.000317359568,
    0.000317258883, 0.000317158262, 0.000317057705, 0.000316957211, 0.000316856781, 0.000316756414, 0.000316656111, 0.000316555872,
    0.000316455696, 0.000316355584, 0.000316255534, 0.000316155549, 0.000316055626, 0.000315955766, 0.00031585597, 0.000315756236,
    0.000315656566, 0.000315556958, 0.000315457413, 0.000315357931, 0.000315258512, 0.000315159155, 0.000315059861, 0.00031496063,
    0.000314861461, 0.000314762354, 0.00031466331, 0.000314564328, 0.000314465409, 0.000314366551, 0.000314267756, 0.000314169023,
    0.000314070352, 0.000313971743, 0.000313873195, 0.00031377471, 0.000313676286, 0.000313577924, 0.000313479624, 0.000313381385,
    0.000313283208, 0.000313185092, 0.000313087038, 0.000312989045, 0.000312891114, 0.000312793244, 0.000312695435, 0.000312597687,
    0.0003125, 0.000312402374, 0.000312304809, 0.000312207306, 0.000312109863, 0.00031201248, 0.000311915159, 0.000311817898,
    0.000311720698, 0.000311623559, 0.00031152648, 0.000311429461, 0.000311332503, 0.000311235605, 0.000311138768, 0.000311041991,
    0.000310945274, 0.000310848617, 0.00031075202, 0.000310655483, 0.000310559006, 0.000310462589, 0.000310366232, 0.000310269935,
    0.000310173697, 0.000310077519, 0.000309981401, 0.000309885342, 0.000309789343, 0.000309693404, 0.000309597523, 0.000309501702,
    0.000309405941, 0.000309310238, 0.000309214595, 0.000309119011, 0.000309023486, 0.00030892802, 0.000308832613, 0.000308737265,
    0.000308641975, 0.000308546745, 0.000308451573, 0.00030835646, 0.000308261406, 0.00030816641, 0.000308071473, 0.000307976594,
    0.000307881773, 0.000307787011, 0.000307692308, 0.000307597662, 0.000307503075, 0.000307408546, 0.000307314075, 0.000307219662,
    0.000307125307, 0.00030703101, 0.000306936771, 0.00030684259, 0.000306748466, 0.0003066544, 0.000306560392, 0.000306466442,
    0.000306372549, 0.000306278714, 0.000306184936, 0.000306091215, 0.000305997552, 0.000305903946, 0.000305810398, 0.000305716906,
    0.000305623472, 0.000305530095, 0.000305436775, 0.000305343511, 0.000305250305, 0.000305157156, 0.000305064063, 0.000304971028,
    0.000304878049, 0.000304785126, 0.000304692261, 0.000304599452, 0.000304506699, 0.000304414003, 0.000304321363, 0.00030422878,
    0.000304136253, 0.000304043782, 0.000303951368, 0.000303859009, 0.000303766707, 0.000303674461, 0.000303582271, 0.000303490137,
    0.000303398058, 0.000303306036, 0.000303214069, 0.000303122158, 0.000303030303, 0.000302938503, 0.00030284676, 0.000302755071,
    0.000302663438, 0.000302571861, 0.000302480339, 0.000302388872, 0.000302297461, 0.000302206105, 0.000302114804, 0.000302023558,
    0.000301932367, 0.000301841232, 0.000301750151, 0.000301659125, 0.000301568154, 0.000301477238, 0.000301386377, 0.000301295571,
    0.000301204819, 0.000301114122, 0.00030102348, 0.000300932892, 0.000300842359, 0.00030075188, 0.000300661455, 0.000300571085,
    0.000300480769, 0.000300390508, 0.0003003003, 0.000300210147, 0.000300120048, 0.000300030003, 0.000299940012, 0.000299850075,
    0.000299760192, 0.000299670363, 0.000299580587, 0.000299490866, 0.000299401198, 0.000299311583, 0.000299222023, 0.000299132516,
    0.000299043062, 0.000298953662, 0.000298864316, 0.000298775022, 0.000298685783, 0.000298596596, 0.000298507463, 0.000298418383,
    0.000298329356, 0.000298240382, 0.000298151461, 0.000298062593, 0.000297973778, 0.000297885016, 0.000297796307, 0.000297707651,
    0.000297619048, 0.000297530497, 0.000297441999, 0.000297353553, 0.000297265161, 0.00029717682, 0.000297088532, 0.000297000297,
    0.000296912114, 0.000296823983, 0.000296735905, 0.000296647879, 0.000296559905, 0.000296471983, 0.000296384114, 0.000296296296,
    0.000296208531, 0.000296120817, 0.000296033156, 0.000295945546, 0.000295857988, 0.000295770482, 0.000295683028, 0.000295595625,
    0.000295508274, 0.000295420975, 0.000295333727, 0.000295246531, 0.000295159386, 0.000295072293, 0.000294985251, 0.00029489826,
    0.000294811321, 0.000294724433, 0.000294637596, 0.00029455081, 0.000294464075, 0.000294377392, 0.000294290759, 0.000294204178,
    0.000294117647, 0.000294031167, 0.000293944738, 0.00029385836, 0.000293772033, 0.000293685756, 0.00029359953, 0.000293513355,
    0.00029342723, 0.000293341156, 0.000293255132, 0.000293169159, 0.000293083236, 0.000292997363, 0.000292911541, 0.000292825769,
    0.000292740047, 0.000292654375, 0.000292568754, 0.000292483182, 0.000292397661, 0.000292312189, 0.000292226768, 0.000292141396,
    0.000292056075, 0.000291970803, 0.000291885581, 0.000291800409, 0.000291715286, 0.000291630213, 0.00029154519, 0.000291460216,
    0.000291375291, 0.000291290417, 0.000291205591, 0.000291120815, 0.000291036088, 0.000290951411, 0.000290866783, 0.000290782204,
    0.000290697674, 0.000290613194, 0.000290528762, 0.00029044438, 0.000290360046, 0.000290275762, 0.000290191526, 0.00029010734,
    0.000290023202, 0.000289939113, 0.000289855072, 0.000289771081, 0.000289687138, 0.000289603244, 0.000289519398, 0.000289435601,
    0.000289351852, 0.000289268152, 0.0002891845, 0.000289100896, 0.000289017341, 0.000288933834, 0.000288850376, 0.000288766965,
    0.000288683603, 0.000288600289, 0.000288517023, 0.000288433804, 0.000288350634, 0.000288267512, 0.000288184438, 0.000288101412,
    0.000288018433, 0.000287935502, 0.000287852619, 0.000287769784, 0.000287686997, 0.000287604257, 0.000287521564, 0.000287438919,
    0.000287356322, 0.000287273772, 0.000287191269, 0.000287108814, 0.000287026406, 0.000286944046, 0.000286861733, 0.000286779467,
    0.000286697248, 0.000286615076, 0.000286532951, 0.000286450874, 0.000286368843, 0.000286286859, 0.000286204923, 0.000286123033,
    0.00028604119, 0.000285959394, 0.000285877644, 0.000285795942, 0.000285714286, 0.000285632676, 0.000285551114, 0.000285469597,
    0.000285388128, 0.000285306705, 0.000285225328, 0.000285143998, 0.000285062714, 0.000284981476, 0.000284900285, 0.00028481914,
    0.000284738041, 0.000284656988, 0.000284575982, 0.000284495021, 0.000284414107, 0.000284333239, 0.000284252416, 0.00028417164,
    0.000284090909, 0.000284010224, 0.000283929585, 0.000283848992, 0.000283768445, 0.000283687943, 0.000283607487, 0.000283527077,
    0.000283446712, 0.000283366393, 0.000283286119, 0.000283205891, 0.000283125708, 0.00028304557, 0.000282965478, 0.000282885431,
    0.00028280543, 0.000282725474, 0.000282645562, 0.000282565697, 0.000282485876, 0.0002824061, 0.000282326369, 0.000282246684,
    0.000282167043, 0.000282087447, 0.000282007896, 0.00028192839, 0.000281848929, 0.000281769513, 0.000281690141, 0.000281610814,
    0.000281531532, 0.000281452294, 0.000281373101, 0.000281293952, 0.000281214848, 0.000281135789, 0.000281056773, 0.000280977803,
    0.000280898876, 0.000280819994, 0.000280741157, 0.000280662363, 0.000280583614, 0.000280504909, 0.000280426248, 0.000280347631,
    0.000280269058, 0.00028019053, 0.000280112045, 0.000280033604, 0.000279955207, 0.000279876854, 0.000279798545, 0.00027972028,
    0.000279642058, 0.00027956388, 0.000279485746, 0.000279407656, 0.000279329609, 0.000279251606, 0.000279173646, 0.00027909573,
    0.000279017857, 0.000278940028, 0.000278862242, 0.0002787845, 0.0002787068, 0.000278629145, 0.000278551532, 0.000278473963,
    0.000278396437, 0.000278318954, 0.000278241514, 0.000278164117, 0.000278086763, 0.000278009452, 0.000277932185, 0.00027785496,
    0.000277777778, 0.000277700639, 0.000277623542, 0.000277546489, 0.000277469478, 0.00027739251, 0.000277315585, 0.000277238703,
    0.000277161863, 0.000277085065, 0.00027700831, 0.000276931598, 0.000276854928, 0.000276778301, 0.000276701716, 0.000276625173,
    0.000276548673, 0.000276472215, 0.000276395799, 0.000276319425, 0.000276243094, 0.000276166805, 0.000276090558, 0.000276014353,
    0.00027593819, 0.000275862069, 0.00027578599, 0.000275709953, 0.000275633958, 0.000275558005, 0.000275482094, 0.000275406224,
    0.000275330396, 0.000275254611, 0.000275178866, 0.000275103164, 0.000275027503, 0.000274951883, 0.000274876306, 0.000274800769,
    0.000274725275, 0.000274649821, 0.00027457441, 0.000274499039, 0.00027442371, 0.000274348422, 0.000274273176, 0.000274197971,
    0.000274122807, 0.000274047684, 0.000273972603, 0.000273897562, 0.000273822563, 0.000273747605, 0.000273672687, 0.000273597811,
    0.000273522976, 0.000273448182, 0.000273373428, 0.000273298715, 0.000273224044, 0.000273149413, 0.000273074823, 0.000273000273,
    0.000272925764, 0.000272851296, 0.000272776869, 0.000272702482, 0.000272628135, 0.000272553829, 0.000272479564, 0.000272405339,
    0.000272331155, 0.000272257011, 0.000272182907, 0.000272108844, 0.00027203482, 0.000271960838, 0.000271886895, 0.000271812993,
    0.00027173913, 0.000271665308, 0.000271591526, 0.000271517784, 0.000271444083, 0.000271370421, 0.000271296799, 0.000271223217,
    0.000271149675, 0.000271076172, 0.00027100271, 0.000270929287, 0.000270855905, 0.000270782562, 0.000270709258, 0.000270635995,
    0.000270562771, 0.000270489586, 0.000270416441, 0.000270343336, 0.00027027027, 0.000270197244, 0.000270124257, 0.00027005131,
    0.000269978402, 0.000269905533, 0.000269832704, 0.000269759914, 0.000269687163, 0.000269614451, 0.000269541779, 0.000269469146,
    0.000269396552, 0.000269323997, 0.000269251481, 0.000269179004, 0.000269106566, 0.000269034167, 0.000268961807, 0.000268889486,
    0.000268817204, 0.000268744961, 0.000268672757, 0.000268600591, 0.000268528464, 0.000268456376, 0.000268384326, 0.000268312316,
    0.000268240343, 0.00026816841, 0.000268096515, 0.000268024658, 0.00026795284, 0.000267881061, 0.00026780932, 0.000267737617,
    0.000267665953, 0.000267594327, 0.000267522739, 0.00026745119, 0.000267379679, 0.000267308206, 0.000267236772, 0.000267165375,
    0.000267094017, 0.000267022697, 0.000266951415, 0.000266880171, 0.000266808965, 0.000266737797, 0.000266666667, 0.000266595575,
    0.00026652452, 0.000266453504, 0.000266382525, 0.000266311585, 0.000266240682, 0.000266169816, 0.000266098989, 0.000266028199,
    0.000265957447, 0.000265886732, 0.000265816055, 0.000265745416, 0.000265674814, 0.00026560425, 0.000265533723, 0.000265463233,
    0.000265392781, 0.000265322367, 0.000265251989, 0.000265181649, 0.000265111347, 0.000265041081, 0.000264970853, 0.000264900662,
    0.000264830508, 0.000264760392, 0.000264690312, 0.00026462027, 0.000264550265, 0.000264480296, 0.000264410365, 0.000264340471,
    0.000264270613, 0.000264200793, 0.000264131009, 0.000264061262, 0.000263991552, 0.000263921879, 0.000263852243, 0.000263782643,
    0.00026371308, 0.000263643554, 0.000263574064, 0.000263504611, 0.000263435195, 0.000263365815, 0.000263296472, 0.000263227165,
    0.000263157895, 0.000263088661, 0.000263019463, 0.000262950302, 0.000262881178, 0.000262812089, 0.000262743037, 0.000262674022,
    0.000262605042, 0.000262536099, 0.000262467192, 0.000262398321, 0.000262329486, 0.000262260687, 0.000262191924, 0.000262123198,
    0.000262054507, 0.000261985853, 0.000261917234, 0.000261848651, 0.000261780105, 0.000261711594, 0.000261643119, 0.00026157468,
    0.000261506276, 0.000261437908, 0.000261369577, 0.00026130128, 0.00026123302, 0.000261164795, 0.000261096606, 0.000261028452,
    0.000260960334, 0.000260892252, 0.000260824204, 0.000260756193, 0.000260688217, 0.000260620276, 0.000260552371, 0.000260484501,
    0.000260416667, 0.000260348867, 0.000260281104, 0.000260213375, 0.000260145682, 0.000260078023, 0.0002600104, 0.000259942813,
    0.00025987526, 0.000259807742, 0.00025974026, 0.000259672812, 0.0002596054, 0.000259538022, 0.00025947068, 0.000259403372,
    0.0002593361, 0.000259268862, 0.000259201659, 0.000259134491, 0.000259067358, 0.000259000259, 0.000258933195, 0.000258866166,
    0.000258799172, 0.000258732212, 0.000258665287, 0.000258598397, 0.000258531541, 0.00025846472, 0.000258397933, 0.000258331181,
    0.000258264463, 0.000258197779, 0.000258131131, 0.000258064516, 0.000257997936, 0.00025793139, 0.000257864879, 0.000257798402,
    0.000257731959, 0.00025766555, 0.000257599176, 0.000257532835, 0.000257466529, 0.000257400257, 0.00025733402, 0.000257267816,
    0.000257201646, 0.00025713551, 0.000257069409, 0.000257003341, 0.000256937307, 0.000256871307, 0.000256805342, 0.000256739409,
    0.000256673511, 0.000256607647, 0.000256541816, 0.000256476019, 0.000256410256, 0.000256344527, 0.000256278831, 0.000256213169,
    0.000256147541, 0.000256081946, 0.000256016385, 0.000255950857, 0.000255885363, 0.000255819903, 0.000255754476, 0.000255689082,
    0.000255623722, 0.000255558395, 0.000255493102, 0.000255427842, 0.000255362615, 0.000255297421, 0.000255232261, 0.000255167134,
    0.000255102041, 0.00025503698, 0.000254971953, 0.000254906959, 0.000254841998, 0.00025477707, 0.000254712175, 0.000254647313,
    0.000254582485, 0.000254517689, 0.000254452926, 0.000254388196, 0.000254323499, 0.000254258835, 0.000254194204, 0.000254129606,
    0.000254065041, 0.000254000508, 0.000253936008, 0.000253871541, 0.000253807107, 0.000253742705, 0.000253678336, 0.000253613999,
    0.000253549696, 0.000253485425, 0.000253421186, 0.00025335698, 0.000253292806, 0.000253228665, 0.000253164557, 0.000253100481,
    0.000253036437, 0.000252972426, 0.000252908447, 0.000252844501, 0.000252780586, 0.000252716705, 0.000252652855, 0.000252589038,
    0.000252525253, 0.0002524615, 0.000252397779, 0.00025233409, 0.000252270434, 0.00025220681, 0.000252143217, 0.000252079657,
    0.000252016129, 0.000251952633, 0.000251889169, 0.000251825737, 0.000251762336, 0.000251698968, 0.000251635632, 0.000251572327,
    0.000251509054, 0.000251445813, 0.000251382604, 0.000251319427, 0.000251256281, 0.000251193168, 0.000251130085, 0.000251067035,
    0.000251004016, 0.000250941029, 0.000250878073, 0.000250815149, 0.000250752257, 0.000250689396, 0.000250626566, 0.000250563768,
    0.000250501002, 0.000250438267, 0.000250375563, 0.000250312891, 0.00025025025, 0.000250187641, 0.000250125063, 0.000250062516,
    0.00025, 0.000249937516, 0.000249875062, 0.000249812641, 0.00024975025, 0.00024968789, 0.000249625562, 0.000249563264,
    0.000249500998, 0.000249438763, 0.000249376559, 0.000249314385, 0.000249252243, 0.000249190132, 0.000249128052, 0.000249066002,
    0.000249003984, 0.000248941997, 0.00024888004, 0.000248818114, 0.000248756219, 0.000248694355, 0.000248632521, 0.000248570718,
    0.000248508946, 0.000248447205, 0.000248385494, 0.000248323814, 0.000248262165, 0.000248200546, 0.000248138958, 0.0002480774,
    0.000248015873, 0.000247954376, 0.00024789291, 0.000247831475, 0.000247770069, 0.000247708695, 0.00024764735, 0.000247586036,
    0.000247524752, 0.000247463499, 0.000247402276, 0.000247341083, 0.000247279921, 0.000247218789, 0.000247157687, 0.000247096615,
    0.000247035573, 0.000246974562, 0.00024691358, 0.000246852629, 0.000246791708, 0.000246730817, 0.000246669956, 0.000246609125,
    0.000246548323, 0.000246487552, 0.000246426811, 0.0002463661, 0.000246305419, 0.000246244767, 0.000246184146, 0.000246123554,
    0.000246062992, 0.00024600246, 0.000245941958, 0.000245881485, 0.000245821042, 0.000245760629, 0.000245700246, 0.000245639892,
    0.000245579568, 0.000245519273, 0.000245459008, 0.000245398773, 0.000245338567, 0.000245278391, 0.000245218244, 0.000245158127,
    0.000245098039, 0.000245037981, 0.000244977952, 0.000244917952, 0.000244857982, 0.000244798042, 0.00024473813, 0.000244678248,
    0.000244618395, 0.000244558572, 0.000244498778, 0.000244439012, 0.000244379277, 0.00024431957, 0.000244259893, 0.000244200244,
    0.000244140625, 0.000244081035, 0.000244021474, 0.000243961942, 0.000243902439, 0.000243842965, 0.00024378352, 0.000243724104,
    0.000243664717, 0.000243605359, 0.00024354603, 0.00024348673, 0.000243427459, 0.000243368216, 0.000243309002, 0.000243249818,
    0.000243190661, 0.000243131534, 0.000243072436, 0.000243013366, 0.000242954325, 0.000242895312, 0.000242836328, 0.000242777373,
    0.000242718447, 0.000242659549, 0.000242600679, 0.000242541838, 0.000242483026, 0.000242424242, 0.000242365487, 0.00024230676,
    0.000242248062, 0.000242189392, 0.000242130751, 0.000242072137, 0.000242013553, 0.000241954996, 0.000241896468, 0.000241837969,
    0.000241779497, 0.000241721054, 0.000241662639, 0.000241604252, 0.000241545894, 0.000241487563, 0.000241429261, 0.000241370987,
    0.000241312741, 0.000241254524, 0.000241196334, 0.000241138172, 0.000241080039, 0.000241021933, 0.000240963855, 0.000240905806,
    0.000240847784, 0.000240789791, 0.000240731825, 0.000240673887, 0.000240615977, 0.000240558095, 0.000240500241, 0.000240442414,
    0.000240384615, 0.000240326845, 0.000240269101, 0.000240211386, 0.000240153698, 0.000240096038, 0.000240038406, 0.000239980802,
    0.000239923225, 0.000239865675, 0.000239808153, 0.000239750659, 0.000239693193, 0.000239635754, 0.000239578342, 0.000239520958,
    0.000239463602, 0.000239406272, 0.000239348971, 0.000239291697, 0.00023923445, 0.00023917723, 0.000239120038, 0.000239062874,
    0.000239005736, 0.000238948626, 0.000238891543, 0.000238834488, 0.000238777459, 0.000238720458, 0.000238663484, 0.000238606538,
    0.000238549618, 0.000238492726, 0.000238435861, 0.000238379023, 0.000238322212, 0.000238265428, 0.000238208671, 0.000238151941,
    0.000238095238, 0.000238038562, 0.000237981913, 0.000237925291, 0.000237868696, 0.000237812128, 0.000237755587, 0.000237699073,
    0.000237642586, 0.000237586125, 0.000237529691, 0.000237473284, 0.000237416904, 0.000237360551, 0.000237304224, 0.000237247924,
    0.000237191651, 0.000237135404, 0.000237079184, 0.000237022991, 0.000236966825, 0.000236910685, 0.000236854571, 0.000236798484,
    0.000236742424, 0.000236686391
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic generator (xorshift64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Banded content: a gradient quantized in steps of `q`, with flat and noisy rectangles.
    fn content(w: usize, h: usize, bpc: u8, seed: u64) -> Vec<u16> {
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let max = (1u32 << bpc) - 1;
        let scale = (max + 1) / 256;
        let q = 1 + r.below(3) as usize;
        let base = 16 + r.below(80) as usize;
        let mut v = vec![0u16; w * h];
        for y in 0..h {
            for x in 0..w {
                let g = (base + (x * 60 / w + y * 40 / h) / q * q).min(235);
                v[y * w + x] = (g as u32 * scale).min(max) as u16;
            }
        }
        for _ in 0..8 {
            let (rw, rh) = (
                1 + r.below(w as u64 / 3) as usize,
                1 + r.below(h as u64 / 3) as usize,
            );
            let x0 = r.below((w - rw) as u64 + 1) as usize;
            let y0 = r.below((h - rh) as u64 + 1) as usize;
            let level = (16 + r.below(200)) as u32 * scale;
            let noisy = r.below(2) == 0;
            for y in y0..y0 + rh {
                for x in x0..x0 + rw {
                    let n = if noisy { r.below(3) as u32 * scale } else { 0 };
                    v[y * w + x] = (level + n).min(max) as u16;
                }
            }
        }
        v
    }

    fn plane(data: &[u16], w: usize, h: usize, bpc: u8) -> Plane<'_> {
        Plane::from_slice(data, w, h, bpc)
    }

    fn unsupported(r: Result<Cambi>) -> String {
        match r {
            Err(
                e @ Error::Unsupported {
                    metric: "cambi", ..
                },
            ) => e.to_string(),
            other => panic!("expected a cambi refusal, got {other:?}"),
        }
    }

    #[test]
    fn refuses_small_encodes() {
        let p = CambiParams::default();
        let msg = unsupported(Cambi::new(&p, 176, 144, 8));
        assert!(msg.contains("176x144"), "{msg}");
        unsupported(Cambi::new(&p, 215, 215, 8));
        // One dimension of 216 is enough (libvmaf: both must be below 216 to refuse).
        Cambi::new(&p, 216, 100, 8).unwrap();
        Cambi::new(&p, 100, 216, 8).unwrap();
        // An encode below the minimum inside a larger input.
        let small = CambiParams {
            enc_width: 200,
            enc_height: 200,
            ..p.clone()
        };
        unsupported(Cambi::new(&small, 1280, 720, 8));
        // An encode larger than the input means the input size.
        let large = CambiParams {
            enc_width: 1920,
            enc_height: 1080,
            ..p
        };
        let c = Cambi::new(&large, 640, 360, 8).unwrap();
        assert_eq!(c.scale_sizes()[0], (640, 360));
    }

    #[test]
    fn refuses_windows_beyond_the_reciprocal_table() {
        let p = CambiParams::default();
        // 8K: ws = ((65 * 12000) / 375) >> 4 | 1 = 131, 131^2 >= 4226.
        let msg = unsupported(Cambi::new(&p, 7680, 4320, 10));
        assert!(
            msg.contains("131x131") && msg.contains("7680x4320"),
            "{msg}"
        );
        // With the 2160p speed-up the window is halved to 65: accepted.
        let hrs = CambiParams {
            high_res_speedup: 2160,
            ..p.clone()
        };
        assert_eq!(
            Cambi::new(&hrs, 7680, 4320, 10).unwrap().window_sizes(),
            (65, None)
        );
        // The source window counts even without full_ref (libvmaf's init checks it).
        let src = CambiParams {
            src_width: 7680,
            src_height: 4320,
            ..p
        };
        unsupported(Cambi::new(&src, 3840, 2160, 10));
    }

    #[test]
    fn refuses_scales_smaller_than_the_window() {
        let p = CambiParams::default();
        // The rule (calculate_c_values reads columns up to pad - 1 and rows up to pad).
        let (mut accepted, mut refused) = (0, 0);
        for (w, h) in [
            (1920usize, 160usize),
            (1920, 100),
            (3840, 160),
            (2400, 216),
            (216, 4000),
            (216, 1200),
            (4000, 96),
        ] {
            let ws = adjust_window_size(65, w, h, false) as usize;
            let pad = ws >> 1;
            let mut ok = true;
            let (mut sw, mut sh) = (w, h);
            for s in 0..NUM_SCALES {
                if s > 0 {
                    (sw, sh) = ((sw + 1) >> 1, (sh + 1) >> 1);
                }
                let min_h = if s == 0 { pad + 1 } else { pad };
                ok &= sw >= pad && sh >= min_h;
            }
            let r = Cambi::new(&p, w, h, 8);
            if ok {
                r.unwrap_or_else(|e| panic!("{w}x{h} refused: {e}"));
                accepted += 1;
            } else {
                let msg = unsupported(r);
                assert!(
                    msg.contains("window") && msg.contains(&format!("{w}x{h}")),
                    "{msg}"
                );
                refused += 1;
            }
        }
        assert!(
            accepted >= 2 && refused >= 2,
            "{accepted} accepted, {refused} refused"
        );
        // 3840x160: ws = 65 * 4000 / 375 >> 4 | 1 = 43, pad 21; scale 4 is 240x10.
        unsupported(Cambi::new(&p, 3840, 160, 8));
        // A coarse scale exactly as tall as the window's half is computed by libvmaf (its
        // extra row lands outside the pooled values; checked against libvmaf 3.2.0 on
        // synthetic content): accepted. 472x96 with window_size 127: ws = 127 * 568 / 375
        // >> 4 | 1 = 13, pad 6; scale 4 is 30x6.
        let wide = CambiParams {
            window_size: 127,
            ..CambiParams::default()
        };
        let c = Cambi::new(&wide, 472, 96, 8).unwrap();
        assert_eq!(c.window_sizes().0, 13);
        assert_eq!(c.scale_sizes()[4], (30, 6));
        let data = content(472, 96, 8, 1);
        c.compute(&plane(&data, 472, 96, 8), None).unwrap();
        // 472x64: ws 11, pad 5, scale 4 is 30x4.
        let msg = unsupported(Cambi::new(&wide, 472, 64, 8));
        assert!(msg.contains("scale 4 is 30x4"), "{msg}");
    }

    #[test]
    fn refuses_bad_options_and_inputs() {
        let bad = [
            CambiParams {
                window_size: 14,
                ..Default::default()
            },
            CambiParams {
                window_size: 128,
                ..Default::default()
            },
            CambiParams {
                topk: 0.0,
                ..Default::default()
            },
            CambiParams {
                topk: 1.5,
                ..Default::default()
            },
            CambiParams {
                tvi_threshold: f64::NAN,
                ..Default::default()
            },
            CambiParams {
                max_val: 1000.5,
                ..Default::default()
            },
            CambiParams {
                vis_lum_threshold: -1.0,
                ..Default::default()
            },
            CambiParams {
                max_log_contrast: 6,
                ..Default::default()
            },
            CambiParams {
                high_res_speedup: 2161,
                ..Default::default()
            },
            CambiParams {
                enc_width: 179,
                ..Default::default()
            },
            CambiParams {
                enc_height: 7681,
                ..Default::default()
            },
            CambiParams {
                enc_bitdepth: 5,
                ..Default::default()
            },
            CambiParams {
                src_width: 319,
                ..Default::default()
            },
            CambiParams {
                src_height: 4321,
                ..Default::default()
            },
        ];
        for p in &bad {
            assert!(matches!(p.validate(), Err(Error::Model(_))), "{p:?}");
            assert!(Cambi::new(p, 1280, 720, 8).is_err(), "{p:?}");
        }
        CambiParams::default().validate().unwrap();
        // A speed-up value in range but not one of 1080, 1440, 2160 is accepted and off.
        let odd = CambiParams {
            high_res_speedup: 1000,
            ..Default::default()
        };
        assert_eq!(
            Cambi::new(&odd, 1920, 1080, 10).unwrap().window_sizes().0,
            33
        );
        assert!(matches!(
            Cambi::new(&CambiParams::default(), 1280, 720, 7),
            Err(Error::BitDepth(7))
        ));
        assert!(matches!(
            Cambi::new(&CambiParams::default(), 1280, 720, 17),
            Err(Error::BitDepth(17))
        ));
        // A source wider but shorter than the encode (libvmaf's init refuses it).
        let skew = CambiParams {
            enc_width: 1280,
            enc_height: 720,
            src_width: 1920,
            src_height: 600,
            ..Default::default()
        };
        unsupported(Cambi::new(&skew, 1920, 1080, 8));
        // full_ref, 10 bits, a source wider than the input: libvmaf copies with the wrong
        // stride.
        let garbled = CambiParams {
            full_ref: true,
            src_width: 1920,
            src_height: 1080,
            ..Default::default()
        };
        unsupported(Cambi::new(&garbled, 1280, 720, 10));
        Cambi::new(&garbled, 1280, 720, 8).unwrap();

        // compute: wrong geometry, short plane, sample range, missing reference.
        let c = Cambi::new(&CambiParams::default(), 320, 240, 8).unwrap();
        let data = vec![16u16; 320 * 240];
        assert!(matches!(
            c.compute(&plane(&data, 320, 240, 10), None),
            Err(Error::Mismatch(_))
        ));
        let short = Plane {
            data: &data[..1000],
            width: 320,
            height: 240,
            stride: 320,
            bpc: 8,
        };
        assert!(matches!(c.compute(&short, None), Err(Error::Geometry(_))));
        let mut hot = data.clone();
        hot[5 * 320 + 7] = 256;
        assert!(matches!(
            c.compute(&plane(&hot, 320, 240, 8), None),
            Err(Error::SampleRange {
                x: 7,
                y: 5,
                value: 256,
                ..
            })
        ));
        let fr = Cambi::new(
            &CambiParams {
                full_ref: true,
                ..Default::default()
            },
            320,
            240,
            8,
        )
        .unwrap();
        assert!(matches!(
            fr.compute(&plane(&data, 320, 240, 8), None),
            Err(Error::Mismatch(_))
        ));
    }

    /// vmaf-v1.md §3.1: mask_index and window sizes (default options, and the v1 options with
    /// the 1080p speed-up), and the scale-0 size with the speed-up.
    #[test]
    fn window_sizes_and_mask_index() {
        let v1 = CambiParams {
            high_res_speedup: 1080,
            vis_lum_threshold: 0.06,
            max_val: 17.0,
            ..Default::default()
        };
        // (width, height, mask_index, default window (None: refused), v1 window, v1 scale 0)
        type Row = (usize, usize, u16, Option<usize>, usize, (usize, usize));
        let table: [Row; 6] = [
            (640, 272, 16, Some(9), 9, (640, 272)),
            (640, 360, 16, Some(11), 11, (640, 360)),
            (1280, 720, 19, Some(21), 21, (1280, 720)),
            (1920, 1080, 21, Some(33), 17, (960, 540)),
            (3840, 2160, 24, Some(65), 33, (1920, 1080)),
            (7680, 4320, 27, None, 65, (3840, 2160)),
        ];
        for (w, h, mi, ws, ws_v1, s0) in table {
            assert_eq!(mask_index(w, h), mi, "{w}x{h}");
            match ws {
                Some(ws) => {
                    let c = Cambi::new(&CambiParams::default(), w, h, 10).unwrap();
                    assert_eq!(c.window_sizes(), (ws, None), "{w}x{h}");
                    assert_eq!(c.dist.mask_index, mi);
                }
                None => assert!(Cambi::new(&CambiParams::default(), w, h, 10).is_err()),
            }
            let c = Cambi::new(&v1, w, h, 10).unwrap();
            assert_eq!(c.window_sizes(), (ws_v1, None), "{w}x{h} v1");
            assert_eq!(c.scale_sizes()[0], s0, "{w}x{h} v1");
        }
        assert_eq!(ceil_log2(0), 0);
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(480), 9);
        assert_eq!(ceil_log2(512), 9);
        assert_eq!(ceil_log2(513), 10);
        // A frame below 64 pixels in a dimension: (w >> 6) * (h >> 6) = 0, ceil_log2(0) = 0.
        assert_eq!(mask_index(1000, 50), (49 - 33 - 1) >> 1);
    }

    #[test]
    fn reciprocal_table_is_not_exactly_one_over_i() {
        assert_eq!(RECIP[0], 0.0);
        assert_eq!(RECIP[1], 1.0);
        assert_eq!(RECIP[2], 0.5);
        let differ: Vec<usize> = (1..RECIP_LUT_SIZE)
            .filter(|&i| RECIP[i] != 1.0f32 / i as f32)
            .collect();
        assert_eq!(differ.len(), 42, "{differ:?}");
        assert_eq!(&differ[..7], &[82, 83, 244, 488, 504, 510, 528]);
        // Each differs by one unit in the last place.
        for &i in &differ {
            let exact = 1.0f32 / i as f32;
            assert_eq!(RECIP[i].to_bits().abs_diff(exact.to_bits()), 1, "{i}");
        }
    }

    /// Bounds of the integer and exact-float accumulators (written beside them).
    #[test]
    fn accumulator_bounds() {
        let max_ws = 65usize; // the largest odd window with ws^2 < 4226
        assert!(max_ws * max_ws < RECIP_LUT_SIZE && (max_ws + 2).pow(2) >= RECIP_LUT_SIZE);
        // Histogram counts (i16): at most ws^2 + ws while a step is applied.
        assert!(max_ws * max_ws + max_ws < i16::MAX as usize);
        // Run covers and columns in i16: columns below MAX_DIMENSION plus margins.
        assert!(MAX_DIMENSION + 2 * MARGIN + LANES < i16::MAX as usize);
        assert!(MARGIN >= (max_ws >> 1) + LANES - 1);
        // The c-value product in i32: weight 9 times p0 * pm with p0 + pm <= 4225.
        assert!(9 * (4225i64 * 4225 / 4) < i32::MAX as i64);
        // Row sums of c-values exact in double: below 2^29 (2^53 units of 2^-24).
        let max_c = 9.0 * 4225.0 / 4.0;
        assert!(MAX_DIMENSION as f64 * max_c < (1u64 << 29) as f64);
        // Pixel indices in u32.
        assert!((MAX_DIMENSION as u64).pow(2) < u32::MAX as u64);
        // Anti-dithering sums of four preprocessed samples (at most 1024) in u16.
        assert!(4 * 1024 < u16::MAX as u32);
        // The preprocessing of 16-bit samples reaches 1024 (one above the 10-bit maximum).
        assert_eq!((65535u32 + 32) >> 6, 1024);
    }

    /// Every non-zero c-value is at least 0.5, so a multiple of 2^-24 (what makes the pooling
    /// sums exact): checked for every pair of counts a 65x65 window allows.
    #[test]
    fn c_values_are_multiples_of_2_pow_minus_24() {
        let mut least = f32::MAX;
        for p0 in 1..RECIP_LUT_SIZE as i32 {
            for pm in 1..RECIP_LUT_SIZE as i32 - p0 {
                let c = (p0 * pm) as f32 * RECIP[(p0 + pm) as usize];
                least = least.min(c);
            }
        }
        assert_eq!(least, 0.5);
        for w in CONTRAST_WEIGHTS {
            assert!((w * 4224) as f32 * RECIP[4225] >= 0.5);
        }
    }

    /// The counts, straight from their definition: for each masked pixel, the masked pixels
    /// of each value in its clipped window, then cambi.c `c_value_pixel`.
    fn reference_c_values(
        img: &[u16],
        mask: &[u8],
        w: usize,
        h: usize,
        pad: usize,
        lut: &Lut,
    ) -> Vec<f32> {
        let nd = lut.num_diffs as i32;
        let hi = lut.lo + lut.len as i32 - 1;
        let in_band = |v: i32| v >= lut.lo && v <= hi;
        let mut out = vec![0.0f32; w * h];
        for i in 0..h {
            for j in 0..w {
                let v = img[i * w + j] as i32;
                if mask[i * w + j] == 0 || !in_band(v) {
                    continue;
                }
                let count = |u: i32| -> i32 {
                    if !in_band(u) {
                        return 0;
                    }
                    let mut n = 0;
                    for y in i.saturating_sub(pad)..(i + pad + 1).min(h) {
                        for x in j.saturating_sub(pad)..(j + pad + 1).min(w) {
                            n += (mask[y * w + x] != 0 && img[y * w + x] as i32 == u) as i32;
                        }
                    }
                    n
                };
                let p0 = count(v);
                let value = v + nd;
                let mut c = 0.0f32;
                for d in 0..nd {
                    if value <= lut.tvi[d as usize] as i32 && value + d + 1 > lut.vlt_luma as i32 {
                        let p1 = count(v + d + 1);
                        let p2 = count(v - d - 1);
                        let pm = p1.max(p2);
                        let val = (CONTRAST_WEIGHTS[d as usize] * p0 * pm) as f32
                            * RECIP[(p0 + pm) as usize];
                        if val > c {
                            c = val;
                        }
                    }
                }
                out[i * w + j] = c;
            }
        }
        out
    }

    /// The run-based counts give the c-values of the definition, for many windows, sizes,
    /// value bands and masks (narrow frames included: a window wider than the frame).
    #[test]
    fn c_values_match_their_definition() {
        let mut rng = Rng(12345);
        let mut s = CScratch::default();
        let params = [
            CambiParams::default(),
            CambiParams {
                vis_lum_threshold: 0.06,
                ..Default::default()
            },
            CambiParams {
                max_log_contrast: 0,
                ..Default::default()
            },
            CambiParams {
                max_log_contrast: 4,
                eotf: CambiEotf::Pq,
                tvi_threshold: 0.3,
                ..Default::default()
            },
        ];
        let (mut checked, mut nonzero) = (0, 0);
        for case in 0..60 {
            let p = &params[case % params.len()];
            let lut = Lut::new(p).unwrap();
            let w = 1 + rng.below(70) as usize;
            let h = 1 + rng.below(50) as usize;
            let pad = rng.below(w.min(h) as u64 + 3).min(32) as usize;
            // Values around the band's edges and in it, few distinct so that counts pile up.
            let centre = [lut.lo, lut.lo + 20, lut.lo + lut.len as i32 - 3, 60, 180][case % 5];
            let spread = 1 + rng.below(12) as i32;
            let density = rng.below(4);
            let mut img = vec![0u16; w * h];
            let mut mask = vec![0u8; w * h];
            for k in 0..w * h {
                // Runs of equal values along rows.
                img[k] = if k > 0 && rng.below(3) != 0 {
                    img[k - 1]
                } else {
                    (centre + rng.below(spread as u64) as i32 - spread / 2).clamp(0, 1024) as u16
                };
                mask[k] = (rng.below(4) >= density) as u8;
            }
            let want = reference_c_values(&img, &mask, w, h, pad, &lut);
            let stats = c_values(&img, &mask, w, h, pad, &lut, &mut s);
            let mut got = vec![0.0f32; w * h];
            for (&i, &c) in s.nz_idx.iter().zip(&s.nz_val) {
                got[i as usize] = c;
            }
            let mismatches: Vec<_> = (0..w * h)
                .filter(|&k| got[k].to_bits() != want[k].to_bits())
                .map(|k| (k % w, k / w, got[k], want[k]))
                .collect();
            assert!(
                mismatches.is_empty(),
                "case {case}: {w}x{h} pad {pad}: {} of {} differ: {:?}",
                mismatches.len(),
                w * h,
                &mismatches[..mismatches.len().min(10)]
            );
            let sum: f64 = want.iter().map(|&c| c as f64).sum();
            assert_eq!(stats.units, units(sum), "case {case}");
            assert_eq!(stats.nonzero, want.iter().filter(|&&c| c != 0.0).count());
            checked += w * h;
            nonzero += stats.nonzero;
        }
        eprintln!("{checked} c-values compared, {nonzero} non-zero");
        assert!(
            nonzero > checked / 10,
            "{nonzero} of {checked}: too few to test the counts"
        );
    }

    /// The largest counts a window holds (65x65, half of it one value, half its neighbour):
    /// no overflow (overflow checks are on in tests), and the c-value of the definition.
    #[test]
    fn c_values_at_the_largest_window() {
        let p = CambiParams {
            window_size: 127,
            ..Default::default()
        };
        let (w, h) = (2048, 1024);
        let c = Cambi::new(&p, w, h, 10).unwrap();
        assert_eq!(c.window_sizes().0, 65);
        let mut data = vec![100u16; w * h];
        for y in 0..h {
            for x in w / 2..w {
                data[y * w + x] = 101;
            }
        }
        let s = c.compute(&plane(&data, w, h, 10), None).unwrap();
        assert!(s.cambi > 0.0);
        // The scale-0 c-value at the boundary: p0 = 33 * 65, p1 = 32 * 65 (or the reverse).
        let lut = &c.lut;
        let (img, mask) = (data.clone(), vec![1u8; w * h]);
        let mut cs = CScratch::default();
        c_values(&img, &mask, w, h, 32, lut, &mut cs);
        let at = (h / 2 * w + w / 2) as u32;
        let k = cs.nz_idx.iter().position(|&i| i == at).unwrap();
        let (p0, p1) = (33 * 65, 32 * 65);
        assert_eq!(cs.nz_val[k], (p0 * p1) as f32 * RECIP[(p0 + p1) as usize]);
    }

    #[test]
    fn quick_select_keeps_the_top_k() {
        let mut rng = Rng(77);
        for case in 0..200 {
            let n = 1 + rng.below(300) as usize;
            let k = 1 + rng.below(n as u64) as usize;
            let distinct = 1 + rng.below(20);
            let mut a: Vec<f32> = (0..n).map(|_| rng.below(distinct) as f32 * 0.5).collect();
            let mut sorted = a.clone();
            sorted.sort_by(|x, y| y.total_cmp(x));
            quick_select(&mut a, k);
            let mut top = a[..k].to_vec();
            top.sort_by(|x, y| y.total_cmp(x));
            assert_eq!(top, sorted[..k], "case {case}: n {n} k {k}");
        }
    }

    /// The exact pooling equals libvmaf's quick_select and sequential sum whenever it is
    /// taken (total below 2^53 units), with at most k and with more than k non-zero values.
    #[test]
    fn pooling_equals_quick_select_order() {
        let mut rng = Rng(4242);
        let mut full = Vec::new();
        for case in 0..300 {
            let n = 1 + rng.below(5000) as usize;
            let topk = [0.6, 0.0001, 1.0, 0.3, 0.99][case % 5];
            let density = rng.below(101);
            let mut arr = vec![0.0f32; n];
            for c in arr.iter_mut() {
                if rng.below(100) < density {
                    let p0 = 1 + rng.below(2000) as i32;
                    let pm = 1 + rng.below(2000) as i32;
                    let wt = CONTRAST_WEIGHTS[rng.below(4) as usize];
                    *c = (wt * p0 * pm) as f32 * RECIP[(p0 + pm) as usize];
                }
            }
            let nz_idx: Vec<u32> = (0..n as u32).filter(|&i| arr[i as usize] != 0.0).collect();
            let mut nz_val: Vec<f32> = nz_idx.iter().map(|&i| arr[i as usize]).collect();
            let sum: f64 = nz_val.iter().map(|&c| c as f64).sum();
            let stats = ScaleStats {
                units: units(sum),
                nonzero: nz_val.len(),
            };
            assert!(stats.units < EXACT_UNITS);
            let got = pool(stats, n, topk, &mut nz_val, &nz_idx, &mut full);
            let k = ((topk * n as f64) as i64).clamp(1, n as i64) as usize;
            let mut c_arr = arr.clone();
            quick_select(&mut c_arr, k);
            let want = average_topk(&c_arr, k);
            assert_eq!(got.to_bits(), want.to_bits(), "case {case}: n {n} k {k}");
        }
    }

    /// Above 2^53 units the replay runs: the same as libvmaf's order by construction.
    #[test]
    fn pooling_replays_quick_select_above_2_pow_53_units() {
        let n = 200_000;
        let mut rng = Rng(9);
        let arr: Vec<f32> = (0..n)
            .map(|_| {
                let p = 1000 + rng.below(1100) as i32;
                (4 * p * p) as f32 * RECIP[(2 * p) as usize]
            })
            .collect();
        let nz_idx: Vec<u32> = (0..n as u32).collect();
        let mut nz_val = arr.clone();
        let sum: f64 = arr.iter().map(|&c| c as f64).sum();
        assert!(sum > (1u64 << 29) as f64);
        let stats = ScaleStats {
            units: u64::MAX,
            nonzero: n,
        };
        let got = pool(stats, n, 0.6, &mut nz_val, &nz_idx, &mut Vec::new());
        let mut c_arr = arr;
        quick_select(&mut c_arr, 120_000);
        assert_eq!(got.to_bits(), average_topk(&c_arr, 120_000).to_bits());
    }

    #[test]
    fn thresholds_depend_on_the_eotf() {
        let bt = Cambi::new(&CambiParams::default(), 640, 360, 10).unwrap();
        assert_eq!(bt.thresholds(), (vec![182, 309, 436, 563], 0));
        let v1 = CambiParams {
            vis_lum_threshold: 0.06,
            ..Default::default()
        };
        assert_eq!(
            Cambi::new(&v1, 640, 360, 10).unwrap().thresholds(),
            (vec![182, 309, 436, 563], 78)
        );
        let pq = CambiParams {
            eotf: CambiEotf::Pq,
            ..Default::default()
        };
        let c = Cambi::new(&pq, 640, 360, 10).unwrap();
        let (tvi, vlt) = c.thresholds();
        assert_ne!(tvi, vec![182, 309, 436, 563]);
        assert_eq!(vlt, 0);
        assert!(tvi.windows(2).all(|t| t[0] <= t[1]), "{tvi:?}");
        // And the score with it: PQ tests differences 2 to 4 at every value, BT.1886 only up
        // to raw 305, 432, 559.
        let (w, h) = (640, 360);
        let mut data = vec![0u16; w * h];
        for y in 0..h {
            for x in 0..w {
                let band = ((16 + x * 60 / w + y * 40 / h) * 4) as u16;
                data[y * w + x] = band + if x > 300 { 500 } else { 0 };
            }
        }
        let a = bt.compute(&plane(&data, w, h, 10), None).unwrap();
        let b = c.compute(&plane(&data, w, h, 10), None).unwrap();
        assert!(a.cambi > 0.0 && b.cambi > a.cambi, "{a:?} {b:?}");
        // The TVI thresholds grow with the difference for both EOTFs over the whole option
        // range (what the histogram band relies on; Lut::new refuses otherwise).
        for eotf in [CambiEotf::Bt1886, CambiEotf::Pq] {
            for t in [0.0001, 0.001, 0.01, 0.019, 0.05, 0.1, 0.3, 0.5, 1.0] {
                for mlc in 0..=5 {
                    let p = CambiParams {
                        eotf,
                        tvi_threshold: t,
                        max_log_contrast: mlc,
                        ..Default::default()
                    };
                    Lut::new(&p).unwrap_or_else(|e| panic!("{eotf:?} {t} {mlc}: {e}"));
                }
            }
        }
        // The brightest visibility threshold: BT.1886 peaks at 300 cd/m², reached at the head.
        let top = CambiParams {
            vis_lum_threshold: 300.0,
            ..Default::default()
        };
        let c = Cambi::new(&top, 640, 360, 10).unwrap();
        assert_eq!(c.thresholds().1, 940);
        assert_eq!(c.lut.len, 0);
        assert_eq!(c.compute(&plane(&data, w, h, 10), None).unwrap().cambi, 0.0);
    }

    #[test]
    fn full_reference_combines_the_two_scores() {
        let (w, h) = (480, 270);
        let dist = content(w, h, 8, 11);
        let refr = content(w, h, 8, 12);
        for max_val in [1000.0, 1.0] {
            let p = CambiParams {
                full_ref: true,
                max_val,
                ..Default::default()
            };
            let c = Cambi::new(&p, w, h, 8).unwrap();
            let unclipped = Cambi::new(&CambiParams::default(), w, h, 8).unwrap();
            for (a, b) in [(&dist, &refr), (&refr, &dist)] {
                let s = c
                    .compute(&plane(a, w, h, 8), Some(&plane(b, w, h, 8)))
                    .unwrap();
                let d = unclipped.compute(&plane(a, w, h, 8), None).unwrap().cambi;
                let r = unclipped.compute(&plane(b, w, h, 8), None).unwrap().cambi;
                assert!(d != r && d > 0.0 && r > 0.0);
                let (src, full) = s.full_ref.unwrap();
                assert_eq!(s.cambi, d.min(max_val));
                assert_eq!(src, r.min(max_val));
                assert_eq!(full, (d - r).max(0.0).min(max_val));
            }
        }
        // The source geometry: the reference resampled to src_width x src_height, with its
        // own window.
        let p = CambiParams {
            full_ref: true,
            src_width: 320,
            src_height: 200,
            ..Default::default()
        };
        let c = Cambi::new(&p, w, h, 8).unwrap();
        let ws = |w, h| adjust_window_size(65, w, h, false) as usize;
        assert_eq!(c.window_sizes(), (ws(480, 270), Some(ws(320, 200))));
        c.compute(&plane(&dist, w, h, 8), Some(&plane(&refr, w, h, 8)))
            .unwrap();
    }

    #[test]
    fn encoding_size_decimates_the_input() {
        let (w, h) = (1280, 720);
        let data = content(w, h, 8, 5);
        let p = CambiParams {
            enc_width: 960,
            enc_height: 540,
            ..Default::default()
        };
        let c = Cambi::new(&p, w, h, 8).unwrap();
        assert_eq!(c.scale_sizes()[0], (960, 540));
        assert_eq!(
            c.window_sizes().0,
            adjust_window_size(65, 960, 540, false) as usize
        );
        let (xs, ys) = c.dist.resample.as_ref().unwrap();
        // ratio 4/3: (int)(x + 0.5) for x = 1/6 + j * 4/3 (1/6, 1.5, 2.83, 4.17, 5.5, ...).
        assert_eq!(&xs[..7], &[0, 2, 3, 4, 6, 7, 8]);
        assert_eq!(xs.len(), 960);
        assert_eq!(*xs.last().unwrap(), 1279);
        assert_eq!(ys.len(), 540);
        // The same score as the input resampled beforehand (no further resampling then).
        let mut small = Vec::with_capacity(960 * 540);
        for &y in ys {
            for &x in xs {
                small.push(data[y as usize * w + x as usize]);
            }
        }
        let direct = Cambi::new(&CambiParams::default(), 960, 540, 8).unwrap();
        let a = c.compute(&plane(&data, w, h, 8), None).unwrap();
        let b = direct.compute(&plane(&small, 960, 540, 8), None).unwrap();
        assert_eq!(a, b);
        let full = Cambi::new(&CambiParams::default(), w, h, 8).unwrap();
        assert_ne!(a, full.compute(&plane(&data, w, h, 8), None).unwrap());
        // Ratio 1 in one dimension is the identity.
        assert_eq!(
            resample_index(720, 720).unwrap(),
            (0..720).collect::<Vec<u32>>()
        );
    }

    /// 10-bit input scored in place (no copy) equals the same samples scored through the
    /// preprocessing copy (8-bit input shifted, without anti-dithering), with and without the
    /// speed-up; and every build of the kernels gives the same scores.
    #[test]
    fn in_place_path_and_instruction_sets_agree() {
        for (w, h, hrs) in [(1920usize, 1080usize, 1080), (641, 361, 0)] {
            let eight = content(w, h, 8, 21);
            let ten: Vec<u16> = eight.iter().map(|&v| v << 2).collect();
            let p10 = CambiParams {
                high_res_speedup: hrs,
                ..Default::default()
            };
            let p8 = CambiParams {
                enc_bitdepth: 10,
                ..p10.clone()
            };
            let c10 = Cambi::new(&p10, w, h, 10).unwrap();
            let c8 = Cambi::new(&p8, w, h, 8).unwrap();
            let a = c10.compute(&plane(&ten, w, h, 10), None).unwrap();
            let b = c8.compute(&plane(&eight, w, h, 8), None).unwrap();
            assert_eq!(a, b, "{w}x{h}");
            for isa in Isa::all_supported() {
                let a2 = c10.compute_with(&plane(&ten, w, h, 10), None, isa).unwrap();
                let b2 = c8.compute_with(&plane(&eight, w, h, 8), None, isa).unwrap();
                assert_eq!((a2, b2), (a, b), "{isa:?}");
            }
        }
    }

    #[test]
    fn cambi_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Cambi>();
    }

    /// A strided plane gives the scores of its compact copy; scratch reused across geometries
    /// and threads changes nothing.
    #[test]
    fn strides_and_scratch_reuse() {
        let (w, h) = (400, 300);
        let data = content(w, h, 10, 8);
        let stride = 416;
        let mut strided = vec![1023u16; stride * h];
        for y in 0..h {
            strided[y * stride..y * stride + w].copy_from_slice(&data[y * w..(y + 1) * w]);
        }
        let c = Cambi::new(&CambiParams::default(), w, h, 10).unwrap();
        let a = c.compute(&plane(&data, w, h, 10), None).unwrap();
        let view = Plane {
            data: &strided,
            width: w,
            height: h,
            stride,
            bpc: 10,
        };
        assert_eq!(c.compute(&view, None).unwrap(), a);
        let other = Cambi::new(&CambiParams::default(), 1280, 720, 8).unwrap();
        let big = content(1280, 720, 8, 9);
        let b = other.compute(&plane(&big, 1280, 720, 8), None).unwrap();
        assert_eq!(c.compute(&plane(&data, w, h, 10), None).unwrap(), a);
        assert_eq!(other.compute(&plane(&big, 1280, 720, 8), None).unwrap(), b);
        std::thread::scope(|sc| {
            let t = sc.spawn(|| c.compute(&plane(&data, w, h, 10), None).unwrap());
            assert_eq!(t.join().unwrap(), a);
        });
    }
}
