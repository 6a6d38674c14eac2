//! ADM (the detail loss measure of Li et al., with its additive-impairment companion AIM), the
//! fixed-point version of libvmaf 3.2.0's `integer_adm` feature extractor
//! (`libvmaf/src/feature/integer_adm.c`, `integer_adm.h`; plain C path, not the x86 SIMD code,
//! which disagrees with the C code at many widths).
//!
//! [`compute`] turns a reference and a distorted luma plane into an [`AdmAccum`]: per scale, the
//! integer sums libvmaf's `adm_csf_den_scale`/`adm_csf_den_s123` (denominator) and
//! `adm_cm`/`i4_adm_cm` (numerator, and the AIM numerator) build before their first
//! floating-point operation. [`AdmAccum::scores`] is the only floating-point step after that:
//! it turns the sums into `integer_adm2`, `integer_adm3`, `integer_aim` and
//! `integer_adm_scale0..3` with libvmaf's types (double and float, `pow` and `powf`) and order.
//!
//! # The algorithm, as libvmaf's C path does it
//!
//! Four scales. Scale 0 works on 16-bit bands, scales 1 to 3 on 32-bit bands:
//! 1. **DWT** (Daubechies-2, 4 taps, fixed point): vertical pass over rows `2i-1 .. 2i+2` of the
//!    input, then horizontal pass over columns `2j-1 .. 2j+2`, giving the approximation band `a`
//!    and the detail bands `h`, `v`, `d` at half size (rounded up). Out-of-image taps come from
//!    libvmaf's index tables ([`dwt_indices`]): index `-1` reads 1, indices `>= n` read `2n - i - 1`.
//!    Scale 0 reads the samples (8-bit content takes libvmaf's `adm_dwt2_8`, which is
//!    `adm_dwt2_16` at 8 bits: the same arithmetic), each further scale the previous `a` band.
//! 2. **Decouple** (over the band minus a border of about 10%): per pixel the distorted detail
//!    `t` is split into a restored part `r = clamp(t / o, 0, 1) * o` (division by the reference
//!    detail `o` through libvmaf's reciprocal table, [`div_lookup`]) and an additive part
//!    `a = t - r`; if the angle between `(o_h, o_v)` and `(t_h, t_v)` is below one degree (a
//!    floating-point test), `r` may grow up to `t`, limited by the enhancement gain limit.
//! 3. **Denominator**: the sum of `|o|^3` over the scored region, per orientation.
//! 4. **CSF** (contrast sensitivity weighting, fixed-point factors from Watson's noise model, or
//!    with `adm_csf_mode` 2 from the blended Barten-Watson tables of the v1 models) of `a` (for
//!    the numerator) or of `r` (for AIM), and `|csf| / 30` for the masking filter.
//! 5. **Contrast masking**: per pixel a threshold from the 3x3 neighbourhood of `|csf| / 30`
//!    (neighbours `-1 -> 1` and `n -> n - 1`) and `|csf| / 15` at the centre, summed over the
//!    three orientations; the numerator sums `max(|csf(r)| - thr, 0)^3` (AIM:
//!    `max(|csf(a)| - thr(csf(r)), 0)^3`), each row's sum rounded and shifted by `log2(height)`.
//!
//! # Exactness
//!
//! Every integer step is libvmaf's, with its types and casts: 16-bit stores that wrap (`(int16_t)`
//! of an out-of-range value), 32-bit sums that wrap in libvmaf (the vertical DWT pass at 16 bits,
//! the shifted masking threshold) use `wrapping_*`, 64-bit sums use `wrapping_add` where the
//! worst case does not provably fit (each bound is written beside the accumulator), and
//! libvmaf's rounding quirks are kept (`add_shift_sq = 1 << shift_sq`, and the
//! `(int32_t)(1u << 31)` "rounding" constant of the scale 1-3 CSF, which is `-2^31`).
//! Two steps are floating point in libvmaf and are reproduced in the same types: the one-degree
//! angle test (float conversions of 64-bit integers, compared in double) and the enhancement
//! gain (`r * enhn_gain_limit` in double, truncated back to an integer).
//!
//! The float steps call the platform's libm as libvmaf does (`pow`, `powf`, `log10`, `log2`,
//! `cos`: Rust's `f64::powf` etc. are those C functions on Linux/glibc); the CSF factors and
//! `cos_1deg_sq` are checked against the values gcc and glibc give for libvmaf's expressions.
//!
//! On x86-64 the AVX2 and AVX-512 builds run hand-written AVX2 kernels for the decouple step and
//! the scale-0 DWT (module `x86`); they compute the same integers and the same IEEE operations
//! as the portable code, which stays the reference (`tests/simd_parity.rs` compares them).
//!
//! # Frame size
//!
//! libvmaf's DWT index tables are valid for an input of 5 or more samples; the scale-3 input of
//! an `n`-sample side is `ceil(ceil(ceil(n / 2) / 2) / 2)`, which is 5 from `n = 33` on and 4 at
//! `n = 32`, where libvmaf reads index -1 (valgrind reports invalid reads at 32x32 and 32x40,
//! none at 33x33, 33x34, 34x33). 33 x 33 ([`MIN_WIDTH`] x [`MIN_HEIGHT`]) is the smallest
//! frame.

use std::f64::consts::PI;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::features::isa::Isa;
use crate::features::{MIN_HEIGHT, MIN_WIDTH};
use crate::picture::Plane;

// ---------------------------------------------------------------------------------------------
// Constants (libvmaf 3.2.0 libvmaf/src/feature/integer_adm.h and integer_adm.c)
// ---------------------------------------------------------------------------------------------

/// `dwt2_db2_coeffs_lo` (integer_adm.h).
const LO: [i32; 4] = [15826, 27411, 7345, -4240];
/// `dwt2_db2_coeffs_hi` (integer_adm.h).
const HI: [i32; 4] = [-4240, -7345, 27411, -15826];
/// `dwt2_db2_coeffs_lo_sum` (integer_adm.h); the high-pass sum is 0.
const LO_SUM: i32 = 46342;
/// `ONE_BY_15` (integer_adm.h): 2^17 / 15, the scale-0 masking centre weight.
const ONE_BY_15: i32 = 8738;
/// `I4_ONE_BY_15` (integer_adm.h): 2^32 / 15, the scale 1-3 masking centre weight.
const I4_ONE_BY_15: i64 = 286_331_153;
/// `FIX_ONE_BY_30` of `adm_csf` (integer_adm.c): 2^17 / 30.
const FIX_ONE_BY_30: i32 = 4369;
/// `FIX_ONE_BY_30` of `i4_adm_csf` (integer_adm.c): 2^32 / 30.
const I4_FIX_ONE_BY_30: i64 = 143_165_577;
/// `add_bef_shift_flt` of `i4_adm_csf`/`i4_adm_cm`: `(int32_t)(1u << 31)`, which gcc (and every
/// two's-complement target) turns into -2^31. libvmaf therefore subtracts 2^31 before its 32-bit
/// shift instead of adding it; kept as is.
const I4_FLT_ROUND: i64 = i32::MIN as i64;
/// `ADM_BORDER_FACTOR` (integer_adm.h).
const BORDER_FACTOR: f64 = 0.1;

/// `DEFAULT_ADM_ENHN_GAIN_LIMIT` (integer_adm.h); also the option's maximum.
pub const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;
/// `DEFAULT_ADM_NORM_VIEW_DIST` (integer_adm.h).
pub const DEFAULT_NORM_VIEW_DIST: f64 = 3.0;
/// `DEFAULT_ADM_REF_DISPLAY_HEIGHT` (integer_adm.h).
pub const DEFAULT_REF_DISPLAY_HEIGHT: u32 = 1080;
/// `DEFAULT_ADM_NOISE_WEIGHT` (integer_adm.h).
pub const DEFAULT_NOISE_WEIGHT: f64 = 0.03125;

/// The smallest `adm_norm_view_dist * adm_ref_display_height` libvmaf's `extract` accepts
/// (`DEFAULT_ADM_NORM_VIEW_DIST * DEFAULT_ADM_REF_DISPLAY_HEIGHT`).
const MIN_NVD_RDH: f64 = DEFAULT_NORM_VIEW_DIST * DEFAULT_REF_DISPLAY_HEIGHT as f64;

/// Watson et al.'s noise model for luma, `dwt_7_9_YCbCr_threshold[0]` (integer_adm.h), as floats.
struct WatsonY {
    a: f32,
    k: f32,
    f0: f32,
    g: [f32; 4],
}
const WATSON_Y: WatsonY = WatsonY {
    a: 0.495,
    k: 0.466,
    f0: 0.401,
    g: [1.501, 1.0, 0.534, 1.0],
};
/// `adm_csf_mode` 0, `ADM_CSF_MODE_WATSON97` (integer_adm.h): CSF factors from Watson's noise
/// model ([`dwt_quant_step`]); libvmaf's default.
pub const CSF_MODE_WATSON: i32 = 0;
/// `adm_csf_mode` 2, `ADM_CSF_MODE_BARTEN_WATSON_BLEND` (integer_adm.h): CSF factors from the
/// blended Barten-Watson tables ([`BLENDED_CSF`]); the VMAF v1.0.16 models use it.
pub const CSF_MODE_BARTEN_WATSON_BLEND: i32 = 2;

/// One blend table: `[theta][scale]`, theta 0 for h and v, 1 for d (double literals; see
/// [`BLENDED_CSF`]).
pub type BlendTable = [[f64; 4]; 2];

/// The blended Barten-Watson CSF tables `BLENDED_CSF_<rdh>_<nvd>H[theta][scale]` (libvmaf 3.2.0
/// `libvmaf/src/feature/barten_csf_tools.h`, the legacy tables of `barten_watson_blend_csf`, not
/// the `_MAE` ones of mode 3), keyed by `(adm_ref_display_height, adm_norm_view_dist)` in the
/// order of that function's tests. Row 0 (theta 0) holds the h and v factors, row 1 the d
/// factors, per scale 0..3. The C tables are `float` arrays initialised from double literals,
/// so they are written here as the same double literals and rounded to float where they are read
/// (decimal -> double -> float, as gcc does, not decimal -> float directly).
/// `barten_watson_blend_csf` also maps 2160 @ 1.5H to the 1080_3H table (the same 56.55 pixels
/// per degree); every other pair returns `-EINVAL` (-22) as a factor, which
/// [`AdmParams::validate`] refuses.
#[rustfmt::skip]
pub const BLENDED_CSF: [((u32, f64), BlendTable); 8] = [
    ((1080, 3.0), [[0.01183, 0.025026, 0.04295, 0.058621], [0.004302, 0.011778, 0.023918, 0.035901]]),
    ((1080, 5.0), [[0.004212, 0.014809, 0.029642, 0.047464], [0.000984, 0.005852, 0.0146, 0.027574]]),
    ((2160, 3.0), [[0.00226, 0.01183, 0.025026, 0.04295], [0.000479, 0.004302, 0.011778, 0.023918]]),
    ((2160, 5.0), [[0.000092, 0.004212, 0.014809, 0.029642], [0.000050, 0.000984, 0.005852, 0.0146]]),
    ((720, 3.0), [[0.018715, 0.035637, 0.052798, 0.061509], [0.007999, 0.018396, 0.031851, 0.037718]]),
    ((720, 5.0), [[0.010144, 0.022561, 0.040309, 0.05672], [0.003463, 0.010282, 0.021839, 0.034641]]),
    ((480, 3.0), [[0.027961, 0.045875, 0.060275, 0.056234], [0.013572, 0.026277, 0.036959, 0.034511]]),
    ((480, 5.0), [[0.016781, 0.032822, 0.05032, 0.061594], [0.00691, 0.016545, 0.029917, 0.037777]]),
];

/// `barten_watson_blend_csf`'s choice of table (barten_csf_tools.h): exact comparisons of
/// `adm_ref_display_height` and `adm_norm_view_dist` (a double compared with `==`), 2160 @ 1.5
/// taking the 1080 @ 3 table; None where libvmaf returns `-EINVAL`.
pub fn blended_csf_table(
    norm_view_dist: f64,
    ref_display_height: u32,
) -> Option<&'static BlendTable> {
    let key = if (ref_display_height, norm_view_dist) == (2160, 1.5) {
        (1080, 3.0)
    } else {
        (ref_display_height, norm_view_dist)
    };
    BLENDED_CSF.iter().find(|(k, _)| *k == key).map(|(_, t)| t)
}

/// `dwt_7_9_basis_function_amplitudes` (integer_adm.h), the rows for lambda 0..3.
const BASIS_AMPLITUDES: [[f32; 4]; 4] = [
    [0.62171, 0.67234, 0.72709, 0.67234],
    [0.34537, 0.41317, 0.49428, 0.41317],
    [0.18004, 0.22727, 0.28688, 0.22727],
    [0.091401, 0.11792, 0.15214, 0.11792],
];

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// Parameters of the ADM feature: libvmaf's `adm` extractor options that change scores.
///
/// libvmaf's `adm_csf_mode` is supported for 0 (Watson, the default) and 2 (the blended
/// Barten-Watson tables of the v1.0.16 models); modes 1 (Barten) and 3 (the `_MAE` blend tables)
/// are refused, as no built-in model uses them. `adm_csf_scale` and `adm_csf_diag_scale` only
/// act in mode 1 (libvmaf passes them to `barten_csf` and nowhere else), so they are not
/// parameters here; `adm_skip_aim` and `adm_skip_scale0` are not supported (no built-in model
/// sets them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdmParams {
    /// `adm_enhn_gain_limit` (alias `egl`), 1.0 to 100.0; 1.0 disables enhancement gain
    /// (vmaf_v0.6.1neg uses 1.0).
    pub enhn_gain_limit: f64,
    /// `adm_norm_view_dist` (alias `nvd`), 0.75 to 24.0: viewing distance / display height.
    pub norm_view_dist: f64,
    /// `adm_ref_display_height` (alias `rdh`), 1 to 4320 pixels.
    pub ref_display_height: u32,
    /// `adm_noise_weight` (alias `nw`), 0.0 to 1500.0.
    pub noise_weight: f64,
    /// `adm_dlm_weight` (alias `dlmw`), 0.0 to 1.0: weight of ADM against AIM in `integer_adm3`.
    pub dlm_weight: f64,
    /// `adm_min_val` (alias `min`), 0.0 to 1.0: lower clip of `integer_adm3`.
    pub min_val: f64,
    /// `adm_csf_mode` (alias `csf`): [`CSF_MODE_WATSON`] (0, the default) or
    /// [`CSF_MODE_BARTEN_WATSON_BLEND`] (2, which needs a `(ref_display_height,
    /// norm_view_dist)` pair that has a table: see [`blended_csf_table`]).
    pub csf_mode: i32,
}

impl Default for AdmParams {
    /// libvmaf 3.2.0's defaults (what vmaf_v0.6.1 uses).
    fn default() -> Self {
        AdmParams {
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
            norm_view_dist: DEFAULT_NORM_VIEW_DIST,
            ref_display_height: DEFAULT_REF_DISPLAY_HEIGHT,
            noise_weight: DEFAULT_NOISE_WEIGHT,
            dlm_weight: 0.5,
            min_val: 0.0,
            csf_mode: CSF_MODE_WATSON,
        }
    }
}

impl AdmParams {
    /// Refuse what libvmaf refuses: values outside its option ranges, and (in `extract`) a
    /// `norm_view_dist * ref_display_height` below the default 3 * 1080 (its 16-bit pipeline
    /// cannot represent lower angular frequencies); and what libvmaf would compute garbage for
    /// (`adm_csf_mode` 2 with a pair that has no blend table: its factors are `-EINVAL`) or
    /// vmafgpu does not implement (`adm_csf_mode` 1 and 3). All as [`Error::Model`].
    pub fn validate(&self) -> Result<()> {
        let range = |name: &str, v: f64, lo: f64, hi: f64| -> Result<()> {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(Error::Model(format!(
                    "{name} {v} is outside libvmaf's range {lo} to {hi}"
                )))
            }
        };
        range("adm_enhn_gain_limit", self.enhn_gain_limit, 1.0, 100.0)?;
        range("adm_norm_view_dist", self.norm_view_dist, 0.75, 24.0)?;
        range(
            "adm_ref_display_height",
            self.ref_display_height as f64,
            1.0,
            4320.0,
        )?;
        range("adm_noise_weight", self.noise_weight, 0.0, 1500.0)?;
        range("adm_dlm_weight", self.dlm_weight, 0.0, 1.0)?;
        range("adm_min_val", self.min_val, 0.0, 1.0)?;
        range("adm_csf_mode", self.csf_mode as f64, 0.0, 3.0)?;
        match self.csf_mode {
            CSF_MODE_WATSON => {}
            CSF_MODE_BARTEN_WATSON_BLEND => {
                if blended_csf_table(self.norm_view_dist, self.ref_display_height).is_none() {
                    // The pairs with a table that also pass the nvd * rdh >= 3240 test below.
                    let pairs: Vec<String> = BLENDED_CSF
                        .iter()
                        .map(|(k, _)| *k)
                        .chain([(2160, 1.5)])
                        .filter(|&(h, d)| d * h as f64 >= MIN_NVD_RDH)
                        .map(|(h, d)| format!("{h}@{d}"))
                        .collect();
                    return Err(Error::Model(format!(
                        "adm_csf_mode 2 (Barten-Watson blend) has no CSF table for \
                         adm_ref_display_height {} with adm_norm_view_dist {} (libvmaf 3.2.0 \
                         has tables for rdh@nvd {} only, and computes garbage for other pairs)",
                        self.ref_display_height,
                        self.norm_view_dist,
                        pairs.join(", ")
                    )));
                }
            }
            m => {
                let name = if m == 1 {
                    "Barten"
                } else {
                    "Barten-Watson blend MAE"
                };
                return Err(Error::Model(format!(
                    "adm_csf_mode {m} ({name}) is not implemented: only 0 (Watson) and 2 \
                     (Barten-Watson blend) are; no libvmaf built-in model uses mode {m}"
                )));
            }
        }
        if self.norm_view_dist * (self.ref_display_height as f64) < MIN_NVD_RDH {
            return Err(Error::Model(format!(
                "adm_norm_view_dist * adm_ref_display_height = {} is below libvmaf's minimum 3240",
                self.norm_view_dist * self.ref_display_height as f64
            )));
        }
        Ok(())
    }
}

/// The integer sums of one scale, per orientation `[h, v, d]` (libvmaf's `accum_h`, `accum_v`,
/// `accum_d` of `adm_csf_den_*` and `adm_cm`/`i4_adm_cm`).
///
/// Each is a sum over the rows of the scored region of `(row_sum + 2^(s-1)) >> s`, where
/// `row_sum` is the sum of the per-pixel terms of the row (in 64 bits, wrapping as in libvmaf)
/// and `s` a shift that depends on the band size ([`ScaleGeometry`]). A backend must form each
/// row's sum completely (in any order: it is a sum modulo 2^64) before shifting it.
///
/// Bounds at 15360x8640 (scale 0 bands 7680x4320, scored region 6146x3458), any depth, any
/// content, both CSFs (Watson at its largest, nvd * rdh = 3240, and every blend table that
/// [`AdmParams::validate`] accepts); `B` is the largest band magnitude:
///
/// | scale | `B` h, v | `B` d | `B` a (next scale's input) |
/// |---|---|---|---|
/// | 0 | 22 930 | 22 930 | 22 930 |
/// | 1 | 1 510 836 459 | 1 407 857 666 | 1 621 348 162 |
/// | 2 | 776 951 815 | 751 569 686 | 803 191 219 |
/// | 3 | 772 371 675 | 736 509 794 | 809 979 926 |
///
/// Scale 0: `54822 * 27411 / 2^16` (the L1 norm of the filter times the largest vertical-pass
/// value; reached, `tests::scale0_band_bound_is_tight`). Scales 1-3: a band is linear in the
/// centred samples up to the rounding of each DWT stage, so `B` is the L1 norm of the
/// composite filter from the samples to the band (the four-tap filters cascaded through
/// libvmaf's mirrored index tables, at the worst output position of any side length) times
/// the largest centred sample `2^(bpc-1)`, over the shifts, plus the rounding carried through
/// (at most 84 223); `tests::band_bounds_every_scale` computes them and
/// `tests::band_bounds_are_reached` builds images that reach them (to within that rounding).
/// They are well below the products of the filters' norms stage by stage (2.10e9 at scale 1,
/// 2.06e9 at scale 3).
///
/// The CSF factors enter the numerators only (the denominator is factor-free until its float
/// step). Scale 0: no accepted blend table has a factor above Watson's hard-coded 36 453
/// (h, v) / 49 417 (d) (the largest, 1080_3H = 2160_1.5H, has 24 809 / 36 087;
/// `tests::csf_factors_largest_cases`), so the scale-0 bounds below, written for Watson, hold
/// for both. Scales 1-3 (`tests::scale123_numerator_bounds_every_csf`), `x` the largest
/// `|csf| - thr` (`|csf| <= ((B + 1) * rfactor + 2^27) >> 28`, `thr >= -27`):
///
/// | scale | Watson 3 * 1080: rfactor h, v / d | `x` h, v / d | blend 1080_3H: rfactor h, v / d | `x` h, v / d |
/// |---|---|---|---|---|
/// | 1 | 137 373 792 / 61 414 028 | 773 181 546 / 322 096 860 | 107 485 848 / 50 586 124 | 604 963 099 / 265 307 984 |
/// | 2 | 186 284 160 / 104 783 920 | 539 175 509 / 293 375 646 | 184 468 848 / 102 727 024 | 533 921 323 / 287 616 717 |
/// | 3 | 196 165 808 / 134 487 184 | 564 429 615 / 368 994 234 | 251 775 280 / 154 193 616 | 724 435 233 / 423 063 024 |
///
/// The blend's scale-3 factors are 1.28x (h, v) and 1.15x (d) Watson's, the only place where
/// mode 2 is larger; its largest `x` (7.24e8) stays far below the 1 518 500 249 from which
/// libvmaf's `(int32_t)` of `x_sq = (x^2 + 2^29) >> 30` would wrap, and the masking
/// threshold (at most `(2 x_hv + x_d) / 3` = 6.2e8) far below i32::MAX.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmScaleAccum {
    /// Denominator: sum of `|o|^3` (scale 0: exact cubes; scales 1-3: `((o^2 + 2^q) >> q) * |o|`
    /// shifted by `ceil(log2(region width))`), `o` the reference's detail band.
    /// Scale 0: at most `rows / 2^shift * cols * B^3` = 3458 / 32 * 6146 * 1.206e13 = 8.0e18;
    /// libvmaf sizes the shift (`ceil(log2(area)) - 20`) so that it stays below 2^20 * B^3 =
    /// 1.26e19 at any size. Scales 1-3: at most 2^62 + 2^31 per row before the row shift and in
    /// total (`|o| < 2^31`, `q` >= 30), at any size. All fit u64 (1.8e19).
    pub den: [u64; 3],
    /// Numerator (detail loss): sum of `max(|csf(r)| - thr, 0)^3`, Q-shifted per pixel
    /// (`>> ceil(log2(band width)) - 4` for h and v, `- 3` for d at scale 0,
    /// `>> ceil(log2(band width))` at scales 1-3).
    /// Scale 0, per pixel: at most 1.09e18 before the shift (`|csf(r)| <= 22 931 * 36 453`,
    /// squared and shifted by 29, times itself again); 6146 such pixels would make a row of
    /// 1.3e19 > i64::MAX, but no content sustains the maximum along a row: the mean of
    /// `|band|^3` over a row is at most 19 383^3 (the best periodic pattern of the vertical
    /// pass's extremes; `tests::scale0_numerator_row_bound`), and `r` is at most `o` where the
    /// threshold is small, which bounds a row (and the total: the row shift divides by at least
    /// the row count) by 8.4e18 for h and v and 5.3e18 for d at any frame size (a row holds at
    /// most 0.8 * 16, resp. 0.8 * 8, times the per-pixel mean after the shift). That is 91% of
    /// i64::MAX (Watson; with the blend's largest scale-0 factors, 24 809 / 36 087, 2.7e18 and
    /// 2.0e18); libvmaf keeps this sum in int64 and so do we, with wrapping adds, so that even
    /// a sum that wrapped would be libvmaf's. Scales 1-3: `x` is at most 773 181 546 (the table
    /// above), so `x_sq` does not wrap, a term is at most `x^3 / 2^30 / 2^shift` and a row
    /// holds fewer than `2^shift` terms: rows, and totals (the row shift divides by at least
    /// the row count), below `x^3 / 2^30` = 4.3e17 at any frame size. At 16K the largest row
    /// is 3.2e17 and the largest total 1.4e17 (Watson, scale 1 h and v; the blend's largest,
    /// scale 3 h and v: 2.7e17 and 1.1e17), 1.5% of i64::MAX.
    pub num: [i64; 3],
    /// AIM numerator: the same as `num` with the roles of `r` and `a` swapped (sum of
    /// `max(|csf(a)| - thr(csf(r)), 0)^3`); the same bounds (`|a| <= |t| + 1`).
    pub aim: [i64; 3],
}

/// The four scales of ADM.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmAccum {
    pub scales: [AdmScaleAccum; 4],
}

/// libvmaf's ADM outputs for one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdmScores {
    /// `integer_adm2` (`VMAF_integer_feature_adm2_score`): total numerator / total denominator.
    pub adm2: f64,
    /// `integer_adm3`: `max(adm2 * dlm_weight + (1 - aim) * (1 - dlm_weight), min_val)`.
    pub adm3: f64,
    /// `integer_aim`: total AIM numerator / total denominator.
    pub aim: f64,
    /// `integer_adm_scale0..3`: numerator / denominator of each scale.
    pub scale: [f64; 4],
}

/// A rectangle of band coordinates, `left..right` x `top..bottom`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub left: usize,
    pub top: usize,
    pub right: usize,
    pub bottom: usize,
}

impl Rect {
    pub fn width(&self) -> usize {
        self.right - self.left
    }
    pub fn height(&self) -> usize {
        self.bottom - self.top
    }
}

/// Sizes of one scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleGeometry {
    /// Size of the DWT input (scale 0: the frame; then the previous scale's band).
    pub in_width: usize,
    pub in_height: usize,
    /// Size of the bands: `(in + 1) / 2`.
    pub width: usize,
    pub height: usize,
    /// The scored region (denominator and masking): libvmaf's `left = (int)(w * 0.1 - 0.5)`,
    /// `right = w - left`, the same vertically.
    pub inner: Rect,
    /// The region decouple and CSF fill (one tap wider on each side):
    /// `left = (int)(w * 0.1 - 1.5)`, `right = w - left + 2`, clamped to the band.
    pub outer: Rect,
}

/// The geometry of the four scales of a `width` x `height` frame.
pub fn geometry(width: usize, height: usize) -> [ScaleGeometry; 4] {
    let mut out = [ScaleGeometry {
        in_width: 0,
        in_height: 0,
        width: 0,
        height: 0,
        inner: Rect {
            left: 0,
            top: 0,
            right: 0,
            bottom: 0,
        },
        outer: Rect {
            left: 0,
            top: 0,
            right: 0,
            bottom: 0,
        },
    }; 4];
    let (mut iw, mut ih) = (width, height);
    for g in out.iter_mut() {
        let (w, h) = (iw.div_ceil(2), ih.div_ceil(2));
        // C: `int left = w * ADM_BORDER_FACTOR - 0.5;` (double, truncated toward zero).
        let inner_start = |n: usize| (n as f64 * BORDER_FACTOR - 0.5) as i64;
        // C: `int left = w * ADM_BORDER_FACTOR - 0.5 - 1; int right = w - left + 2;` then clamped.
        let outer = |n: usize| {
            let s = (n as f64 * BORDER_FACTOR - 0.5 - 1.0) as i64;
            let e = n as i64 - s + 2;
            (s.max(0) as usize, e.min(n as i64) as usize)
        };
        let (il, it) = (inner_start(w) as usize, inner_start(h) as usize);
        let (ol, or) = outer(w);
        let (ot, ob) = outer(h);
        *g = ScaleGeometry {
            in_width: iw,
            in_height: ih,
            width: w,
            height: h,
            inner: Rect {
                left: il,
                top: it,
                right: w - il,
                bottom: h - it,
            },
            outer: Rect {
                left: ol,
                top: ot,
                right: or,
                bottom: ob,
            },
        };
        (iw, ih) = (w, h);
    }
    out
}

/// libvmaf's DWT tap index table for an input of `n` samples (`dwt2_src_indices_filt`): entry
/// `i` (one per output, `(n + 1) / 2` of them) holds the four input indices of output `i`:
/// `[1, 0, 1, 2]` for `i = 0`, `2i-1 .. 2i+2` after, indices `>= n` mirrored to `2n - idx - 1`
/// in the last two entries. Valid for `n >= 5` (libvmaf reads index -1 for `n` = 3 or 4).
pub fn dwt_indices(n: usize) -> Vec<[usize; 4]> {
    assert!(n >= 5, "ADM DWT input of {n} samples (at least 5 needed)");
    let half = n.div_ceil(2);
    let mirror = |i: usize| if i >= n { 2 * n - i - 1 } else { i };
    (0..half)
        .map(|i| {
            if i == 0 {
                [1, 0, 1, 2]
            } else {
                let b = 2 * i;
                [mirror(b - 1), mirror(b), mirror(b + 1), mirror(b + 2)]
            }
        })
        .collect()
}

/// libvmaf's reciprocal table `div_lookup` (`div_lookup_generator`, integer_adm.h): entry
/// `32768 + i` is `2^30 / i` (truncated) for `i` in 1..=32768, entry `32768 - i` its negation,
/// entry 32768 is 0. Built once; a GPU backend uploads it.
pub fn div_lookup() -> &'static [i32; 65537] {
    static TABLE: OnceLock<Box<[i32; 65537]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Box<[i32; 65537]> = vec![0i32; 65537]
            .into_boxed_slice()
            .try_into()
            .expect("65537 entries");
        for i in 1..=32768i32 {
            let recip = (1i32 << 30) / i;
            t[(32768 + i) as usize] = recip;
            t[(32768 - i) as usize] = -recip;
        }
        t
    })
}

/// Per-call constants derived from the parameters (what a backend needs besides the tables).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdmConstants {
    /// `enhn_gain_limit`, used in double per pixel.
    pub enhn_gain_limit: f64,
    /// `cos_1deg_sq` of `adm_decouple` (float: `cos(pi/180)^2` in double, rounded).
    pub cos_1deg_sq: f32,
    /// Scale-0 fixed-point CSF factors `i_rfactor` for h, v, d (Q21, Q21, Q23).
    pub rfactor_s0: [u16; 3],
    /// Scales 1-3 fixed-point CSF factors (Q32) for h, v, d; index 0 unused.
    pub rfactor_s123: [[u32; 3]; 4],
    /// The float CSF factors `factor1` (h, v) and `factor2` (d) per scale, as libvmaf's six
    /// users of them (`adm_csf`, `i4_adm_csf`, `adm_csf_den_scale`, `adm_csf_den_s123`,
    /// `adm_cm`, `i4_adm_cm`) compute them: Watson's `1 / Q(lambda, theta)` for theta 1 and 2
    /// (mode 0) or the blended table's entries (mode 2).
    pub csf_factor: [[f32; 2]; 4],
}

impl AdmConstants {
    /// The constants of validated parameters ([`AdmParams::validate`]). For parameters that
    /// validation refuses (mode 2 without a table, modes 1 and 3) this does not panic: the
    /// factors are then libvmaf's `-EINVAL` (-22.0) and the fixed-point factors 0, meaningless
    /// as libvmaf's are.
    pub fn new(p: &AdmParams) -> AdmConstants {
        let mut csf_factor = [[0f32; 2]; 4];
        let blend = blended_csf_table(p.norm_view_dist, p.ref_display_height);
        for (lambda, f) in csf_factor.iter_mut().enumerate() {
            *f = match (p.csf_mode, blend) {
                // C: `factor1 = 1.0f / dwt_quant_step(..., scale, 1, ...)`, theta 2 for factor2.
                (CSF_MODE_WATSON, _) => [
                    1.0f32 / dwt_quant_step(lambda, 1, p.norm_view_dist, p.ref_display_height),
                    1.0f32 / dwt_quant_step(lambda, 2, p.norm_view_dist, p.ref_display_height),
                ],
                // C: `factor1 = barten_watson_blend_csf(scale, 0, ...)`, theta 1 for factor2:
                // a float table entry.
                (CSF_MODE_BARTEN_WATSON_BLEND, Some(t)) => {
                    [t[0][lambda] as f32, t[1][lambda] as f32]
                }
                // C: `return -EINVAL;` from a float function (validate refuses this).
                _ => [-22.0; 2],
            };
        }
        // adm_csf/adm_cm: Watson at the default viewing condition uses hard-coded factors (they
        // differ from the computed 36451/49414 by design); otherwise, and for every other CSF
        // mode, `(uint16_t)(rfactor * 2^21)` (`2^23` for d).
        let nvd_rdh = p.norm_view_dist * p.ref_display_height as f64;
        let rfactor_s0 = if (nvd_rdh - MIN_NVD_RDH).abs() < 1.0e-8 && p.csf_mode == CSF_MODE_WATSON
        {
            [36453, 36453, 49417]
        } else {
            let p21 = 2f64.powi(21);
            let p23 = 2f64.powi(23);
            // (uint16_t) of a double in range truncates (`as` saturates, which only differs
            // out of range: -22 gives 0 here). In range for every validated input: Watson's
            // factor only shrinks as nvd * rdh grows, so these stay below the default's
            // 36451/49414; the blend tables that validate accepts give at most 24809/36087
            // (1080_3H).
            [
                (csf_factor[0][0] as f64 * p21) as u16,
                (csf_factor[0][0] as f64 * p21) as u16,
                (csf_factor[0][1] as f64 * p23) as u16,
            ]
        };
        let mut rfactor_s123 = [[0u32; 3]; 4];
        for s in 1..4 {
            // C: `(uint32_t)(rfactor1[i] * pow(2, 32))` (float times double). Below 2^28 for
            // every validated input (what the CSF and masking bounds use): Watson's largest is
            // 196 165 808 (scale 3 at 3 * 1080), the blend's 251 775 280 (1080_3H scale 3 h, v).
            let p32 = 2f64.powi(32);
            let f1 = (csf_factor[s][0] as f64 * p32) as u32;
            let f2 = (csf_factor[s][1] as f64 * p32) as u32;
            rfactor_s123[s] = [f1, f1, f2];
        }
        // C: `const float cos_1deg_sq = cos(1.0 * M_PI / 180.0) * cos(1.0 * M_PI / 180.0);`
        let c = (1.0 * PI / 180.0).cos();
        AdmConstants {
            enhn_gain_limit: p.enhn_gain_limit,
            cos_1deg_sq: (c * c) as f32,
            rfactor_s0,
            rfactor_s123,
            csf_factor,
        }
    }
}

/// libvmaf's `dwt_quant_step` (integer_adm.c) for the luma Watson model, in its types:
/// `r` in float, `temp` in float (`log10` in double), `k * temp * temp` in float, `Q` in float.
fn dwt_quant_step(lambda: usize, theta: usize, nvd: f64, rdh: u32) -> f32 {
    let m = &WATSON_Y;
    // C: `float r = adm_norm_view_dist * adm_ref_display_height * M_PI / 180.0;`
    let r = (nvd * rdh as f64 * PI / 180.0) as f32;
    // C: `float temp = log10(pow(2.0, lambda + 1) * params->f0 * params->g[theta] / r);`
    let temp = (2f64.powf((lambda + 1) as f64) * m.f0 as f64 * m.g[theta] as f64 / r as f64).log10()
        as f32;
    // C: `float Q = 2.0 * params->a * pow(10.0, params->k * temp * temp) / amplitude;`
    let kt = m.k * temp * temp;
    (2.0 * m.a as f64 * 10f64.powf(kt as f64) / BASIS_AMPLITUDES[lambda][theta] as f64) as f32
}

/// Check what [`compute`] needs: equal geometry and depth, 8..=16 bits, at least
/// [`MIN_WIDTH`] x [`MIN_HEIGHT`], planes long enough for their stride, valid parameters.
pub fn check(r: &Plane<'_>, d: &Plane<'_>, p: &AdmParams) -> Result<()> {
    super::check_pair(r, d)?;
    p.validate()
}

/// [`check`], then [`compute`].
pub fn try_compute(r: Plane<'_>, d: Plane<'_>, p: &AdmParams) -> Result<AdmAccum> {
    check(&r, &d, p)?;
    Ok(compute(r, d, p))
}

/// The ADM accumulators of one frame pair, as libvmaf 3.2.0's `integer_adm` extractor computes
/// them (plain C path).
///
/// # Panics
/// If the planes break what [`check`] checks (the engine checks first; [`try_compute`] returns
/// the error instead). Samples above `2^bpc - 1` do not panic but give meaningless results.
pub fn compute(r: Plane<'_>, d: Plane<'_>, p: &AdmParams) -> AdmAccum {
    compute_with(r, d, p, Isa::detected())
}

/// [`compute`] with the build of the kernels chosen by the caller (the parity tests run every
/// build the CPU supports; the results are the same integers).
///
/// # Panics
/// As [`compute`], and if this CPU cannot run `isa` ([`Isa::supported`]).
#[doc(hidden)]
pub fn compute_with(r: Plane<'_>, d: Plane<'_>, p: &AdmParams, isa: Isa) -> AdmAccum {
    assert!(
        isa.supported(),
        "adm::compute_with: {isa:?} is not supported by this CPU"
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compute_avx2 only requires the CPU features of Isa::Avx2, checked above.
        Isa::Avx2 => unsafe { compute_avx2(r, d, p) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compute_avx512 only requires the CPU features of Isa::Avx512, checked above.
        Isa::Avx512 => unsafe { compute_avx512(r, d, p) },
        _ => compute_inner(r, d, p, false),
    }
}

/// [`compute_inner`] compiled for AVX2: the integer row loops vectorise over 8 to 16 lanes.
/// Floating point is unaffected (no FMA is enabled, and Rust never contracts `a * b + c`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
unsafe fn compute_avx2(r: Plane<'_>, d: Plane<'_>, p: &AdmParams) -> AdmAccum {
    compute_inner(r, d, p, true)
}

/// [`compute_inner`] compiled for AVX-512 (F, BW, VL): the row loops vectorise over 16 to 32
/// lanes. Floating point is unaffected: `avx512f` implies FMA in Rust, but rustc never
/// contracts `a * b + c`, so every step stays the separate IEEE operations.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl")]
unsafe fn compute_avx512(r: Plane<'_>, d: Plane<'_>, p: &AdmParams) -> AdmAccum {
    compute_inner(r, d, p, true)
}

/// The whole computation, inlined into each instruction-set variant. `simd`: the hand-written
/// AVX2 kernels (module `x86`) run the decouple step and the scale-0 DWT; true only in
/// [`compute_avx2`] and [`compute_avx512`], whose callers checked the CPU features.
#[inline(always)]
fn compute_inner(r: Plane<'_>, d: Plane<'_>, p: &AdmParams, simd: bool) -> AdmAccum {
    let (w, h, bpc) = (r.width, r.height, r.bpc);
    assert!(
        (8..=16).contains(&bpc) && (w, h, bpc) == (d.width, d.height, d.bpc),
        "adm::compute: planes {}x{}@{} and {}x{}@{} (use adm::check first)",
        w,
        h,
        bpc,
        d.width,
        d.height,
        d.bpc
    );
    assert!(
        w >= MIN_WIDTH && h >= MIN_HEIGHT,
        "adm::compute: {w}x{h} is below the minimum"
    );
    let c = AdmConstants::new(p);
    let geo = geometry(w, h);
    let lut = div_lookup();
    // The buffers of the last call on this thread, reused when the size is the same (taken out
    // of the cell for the call, so a nested call would simply allocate its own).
    let mut ws = match WORKSPACE.with(|c| c.take()) {
        Some(ws) if ws.size == (w, h) => ws,
        _ => Workspace::new(&geo, (w, h)),
    };
    let acc = compute_in(&r, &d, &c, &geo, lut, &mut ws, simd);
    WORKSPACE.with(|c| c.set(Some(ws)));
    acc
}

thread_local! {
    /// The [`Workspace`] of the last [`compute`] on this thread (one frame size's worth of
    /// buffers: about 15 MB at 1080p, 60 MB at 4K).
    static WORKSPACE: std::cell::Cell<Option<Workspace>> = const { std::cell::Cell::new(None) };
}

/// [`compute_inner`] on a workspace of the right size. Every buffer element that is read has
/// been written earlier in the same call (or is never written at this size, so still zero), so
/// a reused workspace gives the same results as a fresh one.
#[inline(always)]
fn compute_in(
    r: &Plane<'_>,
    d: &Plane<'_>,
    c: &AdmConstants,
    geo: &[ScaleGeometry; 4],
    lut: &[i32; 65537],
    ws: &mut Workspace,
    simd: bool,
) -> AdmAccum {
    let mut acc = AdmAccum::default();

    // Scale 0: 16-bit bands.
    {
        let g = &geo[0];
        let iy = dwt_indices(g.in_height);
        let ix = dwt_indices(g.in_width);
        dwt_s0(
            r,
            &iy,
            &ix,
            &mut ws.tlo16,
            &mut ws.thi16,
            &mut ws.ref16,
            g.width,
            simd,
        );
        dwt_s0(
            d,
            &iy,
            &ix,
            &mut ws.tlo16,
            &mut ws.thi16,
            &mut ws.dis16,
            g.width,
            simd,
        );
        let s = &mut acc.scales[0];
        s.den = den_s0(&ws.ref16, g);
        decouple_s0(&mut ws.ref16, &mut ws.dis16, g, c, lut, simd);
        // Numerator: csf of a (dis bands now hold a), masking of r (ref bands now hold r).
        csf_s0(&ws.dis16, &mut ws.csf16, &mut ws.flt16, g, c);
        s.num = cm_s0(&ws.ref16, &ws.csf16, &ws.flt16, g, c);
        // AIM: csf of r, masking of a.
        csf_s0(&ws.ref16, &mut ws.csf16, &mut ws.flt16, g, c);
        s.aim = cm_s0(&ws.dis16, &ws.csf16, &ws.flt16, g, c);
    }

    // Scales 1-3: 32-bit bands.
    for (scale, g) in geo.iter().enumerate().skip(1) {
        let iy = dwt_indices(g.in_height);
        let ix = dwt_indices(g.in_width);
        // Ping-pong on the `a` bands: scale 1 writes a[1], scale 2 reads it and writes a[0],
        // scale 3 reads a[0] (its own `a` band is never used, so it is not computed).
        for (b16, b32) in [(&ws.ref16, &mut ws.ref32), (&ws.dis16, &mut ws.dis32)] {
            let [a0, a1] = &mut b32.a;
            let (input, a): (&[i32], _) = match scale {
                1 => (&[], Some(&mut a1[..])),
                2 => (&a1[..], Some(&mut a0[..])),
                _ => (&a0[..], None),
            };
            let out = DwtOut {
                a,
                h: &mut b32.h,
                v: &mut b32.v,
                d: &mut b32.d,
            };
            let (tlo, thi) = (&mut ws.tlo32, &mut ws.thi32);
            if scale == 1 {
                dwt_s123(&b16.a, &iy, &ix, tlo, thi, out, g, scale);
            } else {
                dwt_s123(input, &iy, &ix, tlo, thi, out, g, scale);
            }
        }
        let s = &mut acc.scales[scale];
        s.den = den_s123(&ws.ref32, g, scale);
        decouple_s123(&mut ws.ref32, &mut ws.dis32, g, c, lut, simd);
        let rf = &c.rfactor_s123[scale];
        csf_s123(&ws.dis32, &mut ws.csf32, &mut ws.flt32, g, rf);
        s.num = cm_s123(&ws.ref32, &ws.csf32, &ws.flt32, g, rf);
        csf_s123(&ws.ref32, &mut ws.csf32, &mut ws.flt32, g, rf);
        s.aim = cm_s123(&ws.dis32, &ws.csf32, &ws.flt32, g, rf);
    }
    acc
}

impl AdmAccum {
    /// libvmaf's floating-point steps (`adm_csf_den_scale`, `adm_csf_den_s123`, `adm_cm`,
    /// `i4_adm_cm` after their loops, then `integer_compute_adm` and `extract`) for a frame of
    /// `width` x `height`.
    pub fn scores(&self, p: &AdmParams, width: usize, height: usize) -> AdmScores {
        let geo = geometry(width, height);
        let c = AdmConstants::new(p);
        let mut num = 0f64;
        let mut den = 0f64;
        let mut aim_num = 0f64;
        let mut per_scale = [(0f32, 0f32); 4];
        for (scale, (s, g)) in self.scales.iter().zip(geo.iter()).enumerate() {
            let f = c.csf_factor[scale];
            let rf = [f[0], f[0], f[1]];
            let (n, d, a) = if scale == 0 {
                (
                    num_score_s0(&s.num, g, p.noise_weight),
                    den_score_s0(&s.den, g, &rf, p.noise_weight),
                    // C: the AIM call of adm_cm passes adm_noise_weight = 0.0.
                    num_score_s0(&s.aim, g, 0.0),
                )
            } else {
                (
                    num_score_s123(&s.num, g, scale, p.noise_weight),
                    den_score_s123(&s.den, g, scale, &rf, p.noise_weight),
                    num_score_s123(&s.aim, g, scale, 0.0),
                )
            };
            // C: `double num, den, aim_num; ... num += num_scale;` (float into double).
            num += n as f64;
            den += d as f64;
            aim_num += a as f64;
            per_scale[scale] = (n, d);
        }
        // C: `const double numden_limit = 1e-10 * (w * h) / (1920.0 * 1080.0);`
        let numden_limit = 1e-10 * ((width * height) as i32 as f64) / (1920.0 * 1080.0);
        if num < numden_limit {
            num = 0.0;
        }
        if den < numden_limit {
            den = 0.0;
        }
        let (adm2, aim) = if den == 0.0 {
            // libvmaf sets the score to 1 and leaves the AIM score uninitialised; only
            // reachable with noise_weight 0 (the noise term keeps den > 0 otherwise).
            (1.0, 0.0)
        } else {
            (num / den, aim_num / den)
        };
        // C (extract): `MAX(score * adm_dlm_weight + (1 - score_aim) * (1 - adm_dlm_weight),
        // adm_min_val)` with `MAX(x, y) = x > y ? x : y`.
        let adm3_raw = adm2 * p.dlm_weight + (1.0 - aim) * (1.0 - p.dlm_weight);
        let adm3 = if adm3_raw > p.min_val {
            adm3_raw
        } else {
            p.min_val
        };
        let mut scale = [0f64; 4];
        for (o, (n, d)) in scale.iter_mut().zip(per_scale) {
            // C: `scores[2 * scale + 0] / scores[2 * scale + 1]` (floats stored in doubles).
            *o = n as f64 / d as f64;
        }
        AdmScores {
            adm2,
            adm3,
            aim,
            scale,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Float steps per scale
// ---------------------------------------------------------------------------------------------

/// C `pow(2, e)` for an integer (possibly wrapped-unsigned) exponent: exact for any libm.
fn pow2(e: f64) -> f64 {
    2f64.powf(e)
}

/// `powf(x, 1.0f / 3.0f)` as libvmaf calls it.
fn cbrtf_libvmaf(x: f32) -> f32 {
    x.powf(1.0f32 / 3.0f32)
}

/// The noise term `powf((bottom - top) * (right - left) * adm_noise_weight, 1.0f / 3.0f)`:
/// int product, times a double, rounded to float for `powf`.
fn noise_term(g: &ScaleGeometry, noise_weight: f64) -> f32 {
    let area = (g.inner.height() * g.inner.width()) as i32;
    cbrtf_libvmaf((area as f64 * noise_weight) as f32)
}

/// The tail of `adm_cm` (scale 0).
fn num_score_s0(acc: &[i64; 3], g: &ScaleGeometry, noise_weight: f64) -> f32 {
    let s = cm_shifts_s0(g);
    // C: `(float)(accum_h / pow(2, (52 - shift_xhcub - shift_inner_accum)))`, the exponent in
    // unsigned arithmetic, the division in double.
    let f = |a: i64, base: u32, cub: u32| -> f32 {
        let e = base.wrapping_sub(cub).wrapping_sub(s.inner);
        (a as f64 / pow2(e as f64)) as f32
    };
    let fh = f(acc[0], 52, s.cub_hv);
    let fv = f(acc[1], 52, s.cub_hv);
    let fd = f(acc[2], 57, s.cub_d);
    let add = noise_term(g, noise_weight);
    let nh = cbrtf_libvmaf(fh) + add;
    let nv = cbrtf_libvmaf(fv) + add;
    let nd = cbrtf_libvmaf(fd) + add;
    nh + nv + nd
}

/// The tail of `adm_csf_den_scale` (scale 0).
fn den_score_s0(acc: &[u64; 3], g: &ScaleGeometry, rf: &[f32; 3], noise_weight: f64) -> f32 {
    let shift = den_shift_s0(g);
    // C: `double shift_csf = pow(2, (18 - shift_accum));`
    let shift_csf = pow2((18 - shift) as f64);
    den_tail(acc, shift_csf, rf, g, noise_weight)
}

/// `csf = (double)(accum / shift_csf) * pow(rfactor, 3)`, then
/// `powf(csf, 1/3) + powf(area * noise_weight, 1/3)` per orientation, summed in float.
fn den_tail(acc: &[u64; 3], shift_csf: f64, rf: &[f32; 3], g: &ScaleGeometry, nw: f64) -> f32 {
    let add = noise_term(g, nw);
    let mut out = [0f32; 3];
    for ((o, &a), &r) in out.iter_mut().zip(acc).zip(rf) {
        let csf = (a as f64 / shift_csf) * (r as f64).powf(3.0);
        *o = cbrtf_libvmaf(csf as f32) + add;
    }
    out[0] + out[1] + out[2]
}

/// The tail of `i4_adm_cm` (scales 1-3).
fn num_score_s123(acc: &[i64; 3], g: &ScaleGeometry, scale: usize, noise_weight: f64) -> f32 {
    let (cub, inner) = cm_shifts_s123(g);
    // C: `float final_shift[3] = { pow(2, (45 - shift_cub - shift_inner_accum)), pow(2, (39 -
    // ...)), pow(2, (36 - ...)) };` (unsigned exponents), then
    // `(float)(accum_h / final_shift[scale - 1])`: int64 divided by float is a float division.
    let base = [45u32, 39, 36][scale - 1];
    let final_shift = pow2(base.wrapping_sub(cub).wrapping_sub(inner) as f64) as f32;
    let add = noise_term(g, noise_weight);
    let mut out = [0f32; 3];
    for (o, &a) in out.iter_mut().zip(acc) {
        let f = a as f32 / final_shift;
        *o = cbrtf_libvmaf(f) + add;
    }
    out[0] + out[1] + out[2]
}

/// The tail of `adm_csf_den_s123` (scales 1-3).
fn den_score_s123(
    acc: &[u64; 3],
    g: &ScaleGeometry,
    scale: usize,
    rf: &[f32; 3],
    noise_weight: f64,
) -> f32 {
    let (_, cub, accum) = den_shifts_s123(g, scale);
    // C: `double shift_csf = pow(2, (accum_convert_float[scale - 1] - shift_accum - shift_cub));`
    // (unsigned arithmetic).
    let conv = [32u32, 27, 23][scale - 1];
    let shift_csf = pow2(conv.wrapping_sub(accum).wrapping_sub(cub) as f64);
    den_tail(acc, shift_csf, rf, g, noise_weight)
}

// ---------------------------------------------------------------------------------------------
// Shifts (functions of the band size only)
// ---------------------------------------------------------------------------------------------

/// `(uint32_t)ceil(log2(n) - k)` with libm's `log2`, as libvmaf computes its shifts.
fn ceil_log2_minus(n: usize, k: f64) -> u32 {
    ((n as f64).log2() - k).ceil() as u32
}

/// `(uint32_t)pow(2, (shift - 1))`: the rounding constant of a shift (0 for shift 0, where
/// libvmaf's `pow(2, 4294967295)` is infinite and its conversion undefined; unreachable at
/// 33x33 and up).
fn round_add(shift: u32) -> i64 {
    if shift == 0 { 0 } else { 1i64 << (shift - 1) }
}

struct CmShiftsS0 {
    cub_hv: u32,
    cub_d: u32,
    inner: u32,
}

/// `adm_cm`: `shift_xhcub = ceil(log2(w) - 4)`, `shift_xdcub = ceil(log2(w) - 3)`,
/// `shift_inner_accum = ceil(log2(h))` (band size).
fn cm_shifts_s0(g: &ScaleGeometry) -> CmShiftsS0 {
    CmShiftsS0 {
        cub_hv: ceil_log2_minus(g.width, 4.0),
        cub_d: ceil_log2_minus(g.width, 3.0),
        inner: ceil_log2_minus(g.height, 0.0),
    }
}

/// `i4_adm_cm`: `shift_cub = ceil(log2(w))`, `shift_inner_accum = ceil(log2(h))`.
fn cm_shifts_s123(g: &ScaleGeometry) -> (u32, u32) {
    (
        ceil_log2_minus(g.width, 0.0),
        ceil_log2_minus(g.height, 0.0),
    )
}

/// `adm_csf_den_scale`: `shift_accum = max(ceil(log2(area) - 20), 0)` (int).
fn den_shift_s0(g: &ScaleGeometry) -> i32 {
    let area = (g.inner.height() * g.inner.width()) as i32;
    let s = ((area as f64).log2() - 20.0).ceil() as i32;
    s.max(0)
}

/// `adm_csf_den_s123`: (`shift_sq`, `shift_cub = ceil(log2(right - left))`,
/// `shift_accum = ceil(log2(bottom - top))`).
fn den_shifts_s123(g: &ScaleGeometry, scale: usize) -> (u32, u32, u32) {
    (
        [31u32, 30, 31][scale - 1],
        ceil_log2_minus(g.inner.width(), 0.0),
        ceil_log2_minus(g.inner.height(), 0.0),
    )
}

// ---------------------------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------------------------

/// The four scale-0 bands of one image, compact (stride = band width).
struct Bands16 {
    a: Vec<i16>,
    h: Vec<i16>,
    v: Vec<i16>,
    d: Vec<i16>,
}

impl Bands16 {
    fn new(n: usize) -> Self {
        Bands16 {
            a: vec![0; n],
            h: vec![0; n],
            v: vec![0; n],
            d: vec![0; n],
        }
    }
    fn hvd(&self) -> [&[i16]; 3] {
        [&self.h, &self.v, &self.d]
    }
}

/// The scale 1-3 bands of one image (sized for scale 1, compact at each scale's width), with two
/// `a` bands for ping-pong between scales.
struct Bands32 {
    a: [Vec<i32>; 2],
    h: Vec<i32>,
    v: Vec<i32>,
    d: Vec<i32>,
}

impl Bands32 {
    fn new32(n: usize) -> Self {
        Bands32 {
            a: [vec![0; n], vec![0; n]],
            h: vec![0; n],
            v: vec![0; n],
            d: vec![0; n],
        }
    }
    fn hvd(&self) -> [&[i32]; 3] {
        [&self.h, &self.v, &self.d]
    }
}

/// Everything one call needs, allocated once: scale-0 bands of both images (decouple overwrites
/// the detail bands in place: reference -> r, distorted -> a), scale 1-3 bands (sized for
/// scale 1 and reused), the CSF and masking-filter planes, the DWT row buffers.
struct Workspace {
    /// The frame size the buffers are for.
    size: (usize, usize),
    ref16: Bands16,
    dis16: Bands16,
    csf16: [Vec<i16>; 3],
    flt16: [Vec<i16>; 3],
    tlo16: Vec<i16>,
    thi16: Vec<i16>,
    ref32: Bands32,
    dis32: Bands32,
    csf32: [Vec<i32>; 3],
    flt32: [Vec<i32>; 3],
    tlo32: Vec<i32>,
    thi32: Vec<i32>,
}

impl Workspace {
    fn new(geo: &[ScaleGeometry; 4], size: (usize, usize)) -> Self {
        let n0 = geo[0].width * geo[0].height;
        let n1 = geo[1].width * geo[1].height;
        let plane16 = || vec![0i16; n0];
        let plane32 = || vec![0i32; n1];
        Workspace {
            size,
            ref16: Bands16::new(n0),
            dis16: Bands16::new(n0),
            csf16: [plane16(), plane16(), plane16()],
            flt16: [plane16(), plane16(), plane16()],
            tlo16: vec![0; geo[0].in_width],
            thi16: vec![0; geo[0].in_width],
            ref32: Bands32::new32(n1),
            dis32: Bands32::new32(n1),
            csf32: [plane32(), plane32(), plane32()],
            flt32: [plane32(), plane32(), plane32()],
            tlo32: vec![0; geo[1].in_width],
            thi32: vec![0; geo[1].in_width],
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared row helpers
// ---------------------------------------------------------------------------------------------

/// Horizontal DWT pass over one row `t` of the vertical pass: output `j` from the four inputs
/// `ix[j]`. Outputs `1 .. reg_end` read `t[2j-1 ..= 2j+2]` without mirroring and are computed
/// from contiguous pairs (so that the loop vectorises); output 0 and the last ones go through
/// the index table. Outputs `1 ..= done` are already there (an AVX2 kernel did them).
#[inline(always)]
fn hpass<T: Copy, U>(
    t: &[T],
    ix: &[[usize; 4]],
    lo: &mut [U],
    hi: &mut [U],
    done: usize,
    f: impl Fn([T; 4]) -> (U, U),
) {
    let half = ix.len();
    debug_assert!(t.len() >= 5 && lo.len() == half && hi.len() == half);
    // Output j needs 2j + 2 <= n - 1.
    let reg_end = ((t.len() - 1) / 2).min(half);
    let at = |j: usize| {
        let i = ix[j];
        [t[i[0]], t[i[1]], t[i[2]], t[i[3]]]
    };
    (lo[0], hi[0]) = f(at(0));
    for j in reg_end..half {
        (lo[j], hi[j]) = f(at(j));
    }
    let first = 1 + done;
    debug_assert!(first <= reg_end);
    let pairs_a = t[2 * first - 1..2 * reg_end - 1].chunks_exact(2);
    let pairs_b = t[2 * first + 1..2 * reg_end + 1].chunks_exact(2);
    let outs = lo[first..reg_end]
        .iter_mut()
        .zip(hi[first..reg_end].iter_mut());
    for ((p, q), (l, h)) in pairs_a.zip(pairs_b).zip(outs) {
        (*l, *h) = f([p[0], p[1], q[0], q[1]]);
    }
}

/// The one-degree angle test of `adm_decouple`/`adm_decouple_s123`, in libvmaf's types (a
/// floating-point step per pixel, reproduced exactly): the 64-bit dot product and squared norms
/// are converted to float, divided by 4096.0 in double and compared in double:
/// `ot >= 0 && ot * ot >= cos_1deg_sq * om * tm` (left to right).
#[inline(always)]
fn angle_flag(ot_dp: i64, o_mag_sq: i64, t_mag_sq: i64, cos_1deg_sq: f32) -> bool {
    let ot = ot_dp as f32 as f64 / 4096.0;
    let om = o_mag_sq as f32 as f64 / 4096.0;
    let tm = t_mag_sq as f32 as f64 / 4096.0;
    // `&` rather than `&&`: both sides are cheap and free of side effects, and the sign of
    // `ot` is data-dependent (a branch would mispredict).
    (ot >= 0.0) & (ot * ot >= cos_1deg_sq as f64 * om * tm)
}

/// The enhancement-gain step of decouple (floating point per pixel in libvmaf, reproduced
/// exactly), applied when the angle test passed: when `rst_f = ((float)k / 32768) *
/// ((float)o / 64)` is positive, `rst = MIN(rst * egl, t)`; when it is negative,
/// `rst = MAX(rst * egl, t)`, with `rst * egl` in double, `MIN(x, y) = x < y ? x : y`,
/// `MAX(x, y) = x > y ? x : y`, and the result (between `t` and `rst * egl`, so in range)
/// truncated back to the integer type. The sign of the float product `rst_f` is the sign of
/// `k * o` (`k` in 0..=32768 and `o` nonzero give a magnitude of 2^-21 or more: no underflow),
/// so it is tested on the integers. Neither operand is NaN or -0.0 (egl >= 1), so `f64::min`
/// and `f64::max` are libvmaf's macros.
#[inline(always)]
fn enhance(rst: i64, k: i64, o: i64, t: i64, egl: f64) -> i64 {
    if k > 0 && o != 0 {
        let (x, tf) = (rst as f64 * egl, t as f64);
        (if o > 0 { x.min(tf) } else { x.max(tf) }) as i64
    } else {
        rst
    }
}

/// `if c { a } else { b }` without a branch.
#[inline(always)]
fn select(c: bool, a: i64, b: i64) -> i64 {
    let m = (c as i64).wrapping_neg();
    (a & m) | (b & !m)
}

/// `x.clamp(0, 32768)` without a branch.
#[inline(always)]
fn clamp_q15(x: i64) -> i64 {
    let x = x & !(x >> 63);
    let over = x - 32768;
    x - (over & !(over >> 63))
}

/// Mirrored neighbours of the masking filter: `i - 1` (`-1 -> 1`) and `i + 1` (`n -> n - 1`),
/// as libvmaf's `ADM_CM_THRESH_S_*` macros read them.
#[inline(always)]
fn neighbours(i: usize, n: usize) -> (usize, usize) {
    (
        if i == 0 { 1 } else { i - 1 },
        if i + 1 == n { n - 1 } else { i + 1 },
    )
}

/// Per-row state of the masking step: the 3-row column sums of the masking filter input and the
/// threshold of each pixel of the row.
struct MaskRow {
    colsum: Vec<i32>,
    thr: Vec<i32>,
}

impl MaskRow {
    fn new(g: &ScaleGeometry) -> Self {
        MaskRow {
            colsum: vec![0; g.width],
            thr: vec![0; g.inner.width()],
        }
    }

    /// The threshold of every pixel of row `i` of the inner region: over the three orientations,
    /// the 8 mirrored neighbours of `flt` plus `centre(csf)` at the pixel, i.e. the 3x3 sum of
    /// `flt` (as column sums over rows `i-1, i, i+1`) minus `flt` at the pixel plus the centre
    /// term. All in int32 as libvmaf (wrapping adds; the terms are far below 2^31 / 27).
    #[inline(always)]
    fn fill<T: Copy + Into<i32>>(
        &mut self,
        flt: &[Vec<T>; 3],
        csf: &[Vec<T>; 3],
        g: &ScaleGeometry,
        i: usize,
        centre: impl Fn(T) -> i32,
    ) {
        let (bw, bh) = (g.width, g.height);
        let rect = g.inner;
        let (im, ip) = neighbours(i, bh);
        // Columns left - 1 ..= right (clamped): every neighbour of the row's pixels (column 1 is
        // included when left = 0 because right >= 2).
        let (c0, c1) = (rect.left.saturating_sub(1), (rect.right + 1).min(bw));
        let cs = &mut self.colsum[c0..c1];
        cs.fill(0);
        for f in flt {
            let rows = [
                &f[im * bw + c0..im * bw + c1],
                &f[i * bw + c0..i * bw + c1],
                &f[ip * bw + c0..ip * bw + c1],
            ];
            for (k, s) in cs.iter_mut().enumerate() {
                *s = s
                    .wrapping_add(rows[0][k].into())
                    .wrapping_add(rows[1][k].into())
                    .wrapping_add(rows[2][k].into());
            }
        }
        let row = i * bw + rect.left..i * bw + rect.right;
        self.thr.fill(0);
        for (f, c) in flt.iter().zip(csf) {
            for ((t, &fv), &cv) in self
                .thr
                .iter_mut()
                .zip(&f[row.clone()])
                .zip(&c[row.clone()])
            {
                *t = t.wrapping_add(centre(cv)).wrapping_sub(fv.into());
            }
        }
        // Columns with both neighbours inside: j - 1, j, j + 1.
        let (j0, j1) = (rect.left.max(1), rect.right.min(bw - 1));
        let cs = &self.colsum;
        let (a, b, c) = (&cs[j0 - 1..j1 - 1], &cs[j0..j1], &cs[j0 + 1..j1 + 1]);
        let t = &mut self.thr[j0 - rect.left..j1 - rect.left];
        for (((t, &a), &b), &c) in t.iter_mut().zip(a).zip(b).zip(c) {
            *t = t.wrapping_add(a).wrapping_add(b).wrapping_add(c);
        }
        // Mirrored columns 0 and bw - 1 when the region reaches them.
        for j in [0, bw - 1] {
            if (rect.left..rect.right).contains(&j) && !(j0..j1).contains(&j) {
                let (jm, jp) = neighbours(j, bw);
                let t = &mut self.thr[j - rect.left];
                *t = t
                    .wrapping_add(cs[jm])
                    .wrapping_add(cs[j])
                    .wrapping_add(cs[jp]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scale 0 (16-bit bands)
// ---------------------------------------------------------------------------------------------

/// `adm_dwt2_16` (and `adm_dwt2_8`, identical at `bpc` 8) on one image: bands `a, v` (low-pass
/// vertical) and `h, d` (high-pass vertical) of `(w + 1) / 2` x `(h + 1) / 2`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn dwt_s0(
    src: &Plane<'_>,
    iy: &[[usize; 4]],
    ix: &[[usize; 4]],
    tlo: &mut [i16],
    thi: &mut [i16],
    out: &mut Bands16,
    bw: usize,
    simd: bool,
) {
    let w = src.width;
    let shift = src.bpc as u32;
    // C: `add_shift_VP = 1 << (inp_size_bits - 1)`; `accum -= dwt2_db2_coeffs_lo_sum *
    // add_shift_VP` (46342 * 2^15 = 1 518 534 656 at 16 bits: fits int32).
    let add: i32 = 1 << (shift - 1);
    let lo_norm = LO_SUM * add;
    let (tlo, thi) = (&mut tlo[..w], &mut thi[..w]);
    for (i, rows) in iy.iter().enumerate() {
        let (r0, r1, r2, r3) = (
            src.row(rows[0]),
            src.row(rows[1]),
            src.row(rows[2]),
            src.row(rows[3]),
        );
        // Vertical pass. In int32 as libvmaf: at 16 bits the low-pass sum of the positive taps
        // (50582 * 65535 = 3.3e9) wraps int32, and subtracting 46342 * 2^15 brings it back in
        // range (the true value is within -1.80e9..1.80e9), so wrapping arithmetic gives the
        // exact result, as libvmaf's wrapping int32 does. Stored values: -27411..=27411.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut v0 = 0;
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `simd` is true only in compute_avx2 and compute_avx512, whose callers
            // checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            v0 = unsafe { x86::dwt_s0_vertical([r0, r1, r2, r3], tlo, thi, shift) };
        }
        let srcs = r0[v0..].iter().zip(&r1[v0..]).zip(&r2[v0..]).zip(&r3[v0..]);
        let outs = tlo[v0..].iter_mut().zip(thi[v0..].iter_mut());
        for ((((&s0, &s1), &s2), &s3), (l, h)) in srcs.zip(outs) {
            let (s0, s1, s2, s3) = (s0 as i32, s1 as i32, s2 as i32, s3 as i32);
            let lo = (LO[0] * s0)
                .wrapping_add(LO[1] * s1)
                .wrapping_add(LO[2] * s2)
                .wrapping_add(LO[3] * s3)
                .wrapping_sub(lo_norm);
            *l = (lo.wrapping_add(add) >> shift) as i16;
            let hi = (HI[0] * s0)
                .wrapping_add(HI[1] * s1)
                .wrapping_add(HI[2] * s2)
                .wrapping_add(HI[3] * s3);
            *h = (hi.wrapping_add(add) >> shift) as i16;
        }
        // Horizontal pass: `(sum + 2^15) >> 16` in int32 (|sum| <= 54822 * 27411 = 1.50e9: no
        // overflow), stored as int16 (|value| <= 22 930).
        let f = |s: [i16; 4]| {
            let s = s.map(i32::from);
            let sl = LO[0] * s[0] + LO[1] * s[1] + LO[2] * s[2] + LO[3] * s[3];
            let sh = HI[0] * s[0] + HI[1] * s[1] + HI[2] * s[2] + HI[3] * s[3];
            (((sl + 32768) >> 16) as i16, ((sh + 32768) >> 16) as i16)
        };
        let o = i * bw..(i + 1) * bw;
        let (a, v) = (&mut out.a[o.clone()], &mut out.v[o.clone()]);
        let (hb, db) = (&mut out.h[o.clone()], &mut out.d[o]);
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let (mut done_lo, mut done_hi) = (0, 0);
        #[cfg(target_arch = "x86_64")]
        if simd {
            // Outputs 1 .. reg_end are the regular ones (see `hpass`).
            let reg_end = ((w - 1) / 2).min(bw);
            // SAFETY: as for the vertical pass.
            unsafe {
                done_lo = x86::dwt_s0_horizontal(tlo, a, v, reg_end);
                done_hi = x86::dwt_s0_horizontal(thi, hb, db, reg_end);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        hpass(tlo, ix, a, v, done_lo, f);
        hpass(thi, ix, hb, db, done_hi, f);
    }
}

/// One orientation of `adm_decouple`: `k = clamp(t / o, 0, 1)` in Q15 through the reciprocal
/// table (`((int64)div_lookup[o + 32768] * t + 16384) >> 15`, fits int32; 32768 for `o = 0`),
/// `rst = (k * o + 16384) >> 15` (int32, in int16 range), the enhancement gain, and the
/// int16 stores of `r = rst` and `a = t - rst`.
#[inline(always)]
fn decouple_one_s0(o: i16, t: i16, flag: bool, egl: f64, lut: &[i32; 65537]) -> (i16, i16) {
    // `o as u16 ^ 0x8000` is `o + 32768`; entry 32768 (o = 0) is 0, replaced by 32768 below.
    let recip = lut[(o as u16 ^ 0x8000) as usize] as i64;
    let k = select(o == 0, 32768, clamp_q15((recip * t as i64 + 16384) >> 15));
    let mut rst = (k * o as i64 + 16384) >> 15;
    if flag {
        rst = enhance(rst, k, o as i64, t as i64, egl);
    }
    let r = rst as i16;
    (r, (t as i32 - r as i32) as i16)
}

/// `adm_decouple` over the outer region, in place: the reference's `h, v, d` become `r`, the
/// distorted's become `a = t - r`.
#[inline(always)]
fn decouple_s0(
    o: &mut Bands16,
    t: &mut Bands16,
    g: &ScaleGeometry,
    c: &AdmConstants,
    lut: &[i32; 65537],
    simd: bool,
) {
    let (bw, rect, egl) = (g.width, g.outer, c.enhn_gain_limit);
    for i in rect.top..rect.bottom {
        let row = i * bw + rect.left..i * bw + rect.right;
        let n = row.len();
        let (oh, ov, od) = (
            &mut o.h[row.clone()],
            &mut o.v[row.clone()],
            &mut o.d[row.clone()],
        );
        let (th, tv, td) = (&mut t.h[row.clone()], &mut t.v[row.clone()], &mut t.d[row]);
        let (ov, od, th, tv, td) = (
            &mut ov[..n],
            &mut od[..n],
            &mut th[..n],
            &mut tv[..n],
            &mut td[..n],
        );
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut start = 0;
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `simd` is true only in compute_avx2 and compute_avx512, whose callers
            // checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            start = unsafe {
                x86::decouple_row_s0(
                    [&mut *oh, &mut *ov, &mut *od],
                    [&mut *th, &mut *tv, &mut *td],
                    c.cos_1deg_sq,
                    egl,
                    lut,
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        for j in start..n {
            let (h0, v0, d0) = (oh[j], ov[j], od[j]);
            let (h1, v1, d1) = (th[j], tv[j], td[j]);
            // |products| <= 2^30: exact in int64.
            let ot_dp = h0 as i64 * h1 as i64 + v0 as i64 * v1 as i64;
            let o_mag_sq = h0 as i64 * h0 as i64 + v0 as i64 * v0 as i64;
            let t_mag_sq = h1 as i64 * h1 as i64 + v1 as i64 * v1 as i64;
            let flag = angle_flag(ot_dp, o_mag_sq, t_mag_sq, c.cos_1deg_sq);
            (oh[j], th[j]) = decouple_one_s0(h0, h1, flag, egl, lut);
            (ov[j], tv[j]) = decouple_one_s0(v0, v1, flag, egl, lut);
            (od[j], td[j]) = decouple_one_s0(d0, d1, flag, egl, lut);
        }
    }
}

/// `adm_csf` over the outer region: `csf = (int16)((rfactor * src + round) >> shift)` (Q21 factor
/// and shift 15 for h and v, Q23 and shift 17 for d, libvmaf's rounding constants 16384, 16384,
/// 65535) and the masking filter input `flt = (int16)((4369 * |csf| + 2048) >> 12)`
/// (`|csf| * 32 / 30`, which wraps int16 above |csf| = 30 720, as libvmaf's does).
#[inline(always)]
fn csf_s0(
    src: &Bands16,
    csf: &mut [Vec<i16>; 3],
    flt: &mut [Vec<i16>; 3],
    g: &ScaleGeometry,
    c: &AdmConstants,
) {
    const SHIFTS: [u32; 3] = [15, 15, 17];
    const ROUND: [i32; 3] = [16384, 16384, 65535];
    let bw = g.width;
    let rect = g.outer;
    for (theta, s) in src.hvd().into_iter().enumerate() {
        let (rf, round, shift) = (c.rfactor_s0[theta] as i32, ROUND[theta], SHIFTS[theta]);
        for i in rect.top..rect.bottom {
            let range = i * bw + rect.left..i * bw + rect.right;
            let sr = &s[range.clone()];
            let cr = &mut csf[theta][range.clone()];
            let fr = &mut flt[theta][range];
            for ((&x, cv), fv) in sr.iter().zip(cr.iter_mut()).zip(fr.iter_mut()) {
                // |rf * x| <= 49417 * 32768 < 2^31.
                let v = ((rf * x as i32 + round) >> shift) as i16;
                *cv = v;
                *fv = ((FIX_ONE_BY_30 * (v as i32).abs() + 2048) >> 12) as i16;
            }
        }
    }
}

/// The denominator of scale 0 (`adm_csf_den_scale`'s loops): per row of the inner region
/// `sum |o|^3` (u64; a cube is at most 2^45, a row below 2^58), then `(row + round) >> shift`.
#[inline(always)]
fn den_s0(o: &Bands16, g: &ScaleGeometry) -> [u64; 3] {
    let shift = den_shift_s0(g) as u32;
    let add = round_add(shift) as u64;
    let rect = g.inner;
    let mut acc = [0u64; 3];
    for (theta, b) in o.hvd().into_iter().enumerate() {
        for i in rect.top..rect.bottom {
            let row = &b[i * g.width + rect.left..i * g.width + rect.right];
            // C: `uint16_t h = (uint16_t)abs(src_h[j]); val = ((uint64_t)h * h) * h;`
            let s: u64 = row
                .iter()
                .map(|&x| {
                    let a = (x as i32).unsigned_abs() as u64;
                    a * a * a
                })
                .sum();
            acc[theta] = acc[theta].wrapping_add((s + add) >> shift);
        }
    }
    acc
}

/// `adm_cm` (scale 0) over the inner region: per pixel the threshold
/// `thr = sum over h, v, d of (8 mirrored neighbours of flt + (int16)((8738 * |csf| + 2048) >> 12))`
/// (int32; the centre term is `|csf| * 32 / 15` and wraps int16 above |csf| = 15 360, as in
/// libvmaf), then per orientation `x = |src * rfactor| - (thr << 10)` (`<< 12` for d; int32,
/// wrapping as libvmaf's does when the shifted threshold exceeds 2^31), `x = max(x, 0)`,
/// `x_sq = (int32)((x * x + 2^28) >> 29)` (`2^29`, `30` for d; the cast wraps for x above
/// 2^30.5, as in libvmaf), `val = (x_sq * x + round) >> cub`; per row `(sum + round) >> inner`.
#[inline(always)]
fn cm_s0(
    src: &Bands16,
    csf: &[Vec<i16>; 3],
    flt: &[Vec<i16>; 3],
    g: &ScaleGeometry,
    c: &AdmConstants,
) -> [i64; 3] {
    let bw = g.width;
    let s = cm_shifts_s0(g);
    let add_inner = round_add(s.inner);
    let rect = g.inner;
    let centre = |v: i16| ((ONE_BY_15 * (v as i32).abs() + 2048) >> 12) as i16 as i32;
    let mut mask = MaskRow::new(g);
    let mut acc = [0i64; 3];
    for i in rect.top..rect.bottom {
        mask.fill(flt, csf, g, i, centre);
        let row = i * bw + rect.left..i * bw + rect.right;
        for (theta, b) in src.hvd().into_iter().enumerate() {
            let rf = c.rfactor_s0[theta] as i32;
            let (sub, sq_add, sq_shift, cub) = if theta < 2 {
                (10, 1i64 << 28, 29, s.cub_hv)
            } else {
                (12, 1i64 << 29, 30, s.cub_d)
            };
            let cub_add = round_add(cub);
            let mut sum = 0i64;
            for (&x, &t) in b[row.clone()].iter().zip(&mask.thr) {
                // |x * rf| <= 32768 * 49417 < 2^31.
                let x = (x as i32 * rf).abs().wrapping_sub(t.wrapping_shl(sub));
                let x = x.max(0) as i64;
                let x_sq = ((x * x + sq_add) >> sq_shift) as i32 as i64;
                sum = sum.wrapping_add((x_sq * x + cub_add) >> cub);
            }
            acc[theta] = acc[theta].wrapping_add(sum.wrapping_add(add_inner) >> s.inner);
        }
    }
    acc
}

// ---------------------------------------------------------------------------------------------
// Scales 1-3 (32-bit bands)
// ---------------------------------------------------------------------------------------------

/// The outputs of one scale 1-3 DWT: `a` (None at scale 3, where it is never used), `h, v, d`.
struct DwtOut<'a> {
    a: Option<&'a mut [i32]>,
    h: &'a mut [i32],
    v: &'a mut [i32],
    d: &'a mut [i32],
}

/// `adm_dwt2_s123_combined` on one image (`input` is the previous scale's `a` band,
/// `in_width` x `in_height`, compact): vertical pass `(sum + round) >> shift` (scale 1: no
/// rounding or shift; 2, 3: `+2^15 >> 16`), horizontal pass (`+2^14 >> 15`, `+2^15 >> 16`,
/// `+2^14 >> 15` for scales 1, 2, 3), sums in int64, results cast to int32 (no wrap: the
/// vertical pass of scale 1 is at most 54822 * 22930 = 1.26e9, every band at most 1.63e9 as
/// bounded in [`AdmScaleAccum`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn dwt_s123<T: Copy + Into<i64>>(
    input: &[T],
    iy: &[[usize; 4]],
    ix: &[[usize; 4]],
    tlo: &mut [i32],
    thi: &mut [i32],
    out: DwtOut<'_>,
    g: &ScaleGeometry,
    scale: usize,
) {
    const ADD_VP: [i64; 3] = [0, 32768, 32768];
    const SHIFT_VP: [u32; 3] = [0, 16, 16];
    const ADD_HP: [i64; 3] = [16384, 32768, 16384];
    const SHIFT_HP: [u32; 3] = [15, 16, 15];
    let (add_vp, sh_vp) = (ADD_VP[scale - 1], SHIFT_VP[scale - 1]);
    let (add_hp, sh_hp) = (ADD_HP[scale - 1], SHIFT_HP[scale - 1]);
    let (w, bw) = (g.in_width, g.width);
    let (tlo, thi) = (&mut tlo[..w], &mut thi[..w]);
    let DwtOut { mut a, h, v, d } = out;
    let dot = |c: &[i32; 4], s: [i64; 4]| -> i64 {
        c[0] as i64 * s[0] + c[1] as i64 * s[1] + c[2] as i64 * s[2] + c[3] as i64 * s[3]
    };
    for (i, rows) in iy.iter().enumerate() {
        let row = |k: usize| &input[rows[k] * w..(rows[k] + 1) * w];
        let srcs = row(0).iter().zip(row(1)).zip(row(2)).zip(row(3));
        for ((((&s0, &s1), &s2), &s3), (l, h)) in srcs.zip(tlo.iter_mut().zip(thi.iter_mut())) {
            let s = [s0.into(), s1.into(), s2.into(), s3.into()];
            *l = ((dot(&LO, s) + add_vp) >> sh_vp) as i32;
            *h = ((dot(&HI, s) + add_vp) >> sh_vp) as i32;
        }
        let f = |s: [i32; 4]| {
            let s = s.map(i64::from);
            (
                ((dot(&LO, s) + add_hp) >> sh_hp) as i32,
                ((dot(&HI, s) + add_hp) >> sh_hp) as i32,
            )
        };
        let o = i * bw..(i + 1) * bw;
        match a.as_deref_mut() {
            Some(a) => hpass(tlo, ix, &mut a[o.clone()], &mut v[o.clone()], 0, f),
            None => hpass_hi(tlo, ix, &mut v[o.clone()], |s| f(s).1),
        }
        hpass(thi, ix, &mut h[o.clone()], &mut d[o], 0, f);
    }
}

/// [`hpass`] for the high-pass output only.
#[inline(always)]
fn hpass_hi<T: Copy, U>(t: &[T], ix: &[[usize; 4]], hi: &mut [U], f: impl Fn([T; 4]) -> U) {
    let half = ix.len();
    let reg_end = ((t.len() - 1) / 2).min(half);
    let at = |j: usize| {
        let i = ix[j];
        [t[i[0]], t[i[1]], t[i[2]], t[i[3]]]
    };
    hi[0] = f(at(0));
    for (j, h) in hi.iter_mut().enumerate().take(half).skip(reg_end) {
        *h = f(at(j));
    }
    let pairs_a = t[1..2 * reg_end - 1].chunks_exact(2);
    let pairs_b = t[3..2 * reg_end + 1].chunks_exact(2);
    for ((p, q), h) in pairs_a.zip(pairs_b).zip(hi[1..reg_end].iter_mut()) {
        *h = f([p[0], p[1], q[0], q[1]]);
    }
}

/// The divisor of `adm_decouple_s123`: `|o|` itself below 32768, else libvmaf's
/// `get_best15_from32` (its top 15 significant bits, rounded: `(x + 2^(s-1)) >> s` with
/// `s = 17 - clz(x)`), with the shift `s` (0 below 32768, where `17 - clz` is not positive).
#[inline(always)]
fn best15(x: u32) -> (u32, u32) {
    let s = 17u32.saturating_sub(x.leading_zeros());
    ((x + ((1 << s) >> 1)) >> s, s)
}

/// One orientation of `adm_decouple_s123`: `k = clamp(t / o, 0, 1)` in Q15, dividing through
/// the reciprocal of `o`'s top 15 bits when `|o| >= 32768`:
/// `((int64)div_lookup[msb + 32768] * t * sign(o) + 2^(14 + s)) >> (15 + s)` (|lookup * t| <=
/// 2^30 * 2^31: fits int64), `rst = (k * o + 16384) >> 15` (int64, stored int32), the
/// enhancement gain, and `a = t - rst` (int32).
#[inline(always)]
fn decouple_one_s123(o: i32, t: i32, flag: bool, egl: f64, lut: &[i32; 65537]) -> (i32, i32) {
    let abs = o.unsigned_abs();
    let (msb, shift) = best15(abs);
    // `(lookup * t) * sign(o)`, written as `(lookup * sign(o)) * t` (the same exact product).
    let recip = lut[(msb + 32768) as usize] as i64;
    let recip = if o < 0 { -recip } else { recip };
    let tmp = (recip * t as i64 + (1i64 << (14 + shift))) >> (15 + shift);
    let k = select(o == 0, 32768, clamp_q15(tmp));
    let mut rst = (k * o as i64 + 16384) >> 15;
    if flag {
        rst = enhance(rst, k, o as i64, t as i64, egl);
    }
    let r = rst as i32;
    (r, t.wrapping_sub(r))
}

/// `adm_decouple_s123` over the outer region, in place (reference -> r, distorted -> a).
#[inline(always)]
fn decouple_s123(
    o: &mut Bands32,
    t: &mut Bands32,
    g: &ScaleGeometry,
    c: &AdmConstants,
    lut: &[i32; 65537],
    simd: bool,
) {
    let (bw, rect, egl) = (g.width, g.outer, c.enhn_gain_limit);
    for i in rect.top..rect.bottom {
        let row = i * bw + rect.left..i * bw + rect.right;
        let n = row.len();
        let (oh, ov, od) = (
            &mut o.h[row.clone()],
            &mut o.v[row.clone()],
            &mut o.d[row.clone()],
        );
        let (th, tv, td) = (&mut t.h[row.clone()], &mut t.v[row.clone()], &mut t.d[row]);
        let (ov, od, th, tv, td) = (
            &mut ov[..n],
            &mut od[..n],
            &mut th[..n],
            &mut tv[..n],
            &mut td[..n],
        );
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut start = 0;
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `simd` is true only in compute_avx2 and compute_avx512, whose callers
            // checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            start = unsafe {
                x86::decouple_row_s123(
                    [&mut *oh, &mut *ov, &mut *od],
                    [&mut *th, &mut *tv, &mut *td],
                    c.cos_1deg_sq,
                    egl,
                    lut,
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        for j in start..n {
            let (h0, v0, d0) = (oh[j], ov[j], od[j]);
            let (h1, v1, d1) = (th[j], tv[j], td[j]);
            // |o|, |t| < 2^31: each product below 2^62, the sums below 2^63 (wrapping adds
            // document that libvmaf's int64 would wrap first).
            let ot_dp = (h0 as i64 * h1 as i64).wrapping_add(v0 as i64 * v1 as i64);
            let o_mag_sq = (h0 as i64 * h0 as i64).wrapping_add(v0 as i64 * v0 as i64);
            let t_mag_sq = (h1 as i64 * h1 as i64).wrapping_add(v1 as i64 * v1 as i64);
            let flag = angle_flag(ot_dp, o_mag_sq, t_mag_sq, c.cos_1deg_sq);
            (oh[j], th[j]) = decouple_one_s123(h0, h1, flag, egl, lut);
            (ov[j], tv[j]) = decouple_one_s123(v0, v1, flag, egl, lut);
            (od[j], td[j]) = decouple_one_s123(d0, d1, flag, egl, lut);
        }
    }
}

/// `i4_adm_csf` over the outer region: `csf = (int32)((rfactor * src + 2^27) >> 28)` (Q32
/// factor), `flt = (int32)((143165577 * |csf| - 2^31) >> 32)` (libvmaf's rounding constant is
/// `(int32_t)(1u << 31)`, i.e. -2^31; a zero csf gives flt = -1).
#[inline(always)]
fn csf_s123(
    src: &Bands32,
    csf: &mut [Vec<i32>; 3],
    flt: &mut [Vec<i32>; 3],
    g: &ScaleGeometry,
    rf: &[u32; 3],
) {
    let bw = g.width;
    let rect = g.outer;
    for (theta, s) in src.hvd().into_iter().enumerate() {
        let f = rf[theta] as i64;
        for i in rect.top..rect.bottom {
            let range = i * bw + rect.left..i * bw + rect.right;
            let sr = &s[range.clone()];
            let cr = &mut csf[theta][range.clone()];
            let fr = &mut flt[theta][range];
            for ((&x, cv), fv) in sr.iter().zip(cr.iter_mut()).zip(fr.iter_mut()) {
                // |f * x| < 2^28 * 2^31 (f < 2^28 for every accepted CSF, |x| < 2^31); v is
                // at most 7.74e8 by the bounds of AdmScaleAccum.
                let v = ((f * x as i64 + (1 << 27)) >> 28) as i32;
                *cv = v;
                *fv = ((I4_FIX_ONE_BY_30 * v.unsigned_abs() as i64 + I4_FLT_ROUND) >> 32) as i32;
            }
        }
    }
}

/// The denominator of scales 1-3 (`adm_csf_den_s123`'s loops): per pixel
/// `((((o^2 + 2^q) >> q) * |o|) + round) >> ceil(log2(region width))` in u64 (libvmaf adds
/// `1 << q`, not `1 << (q - 1)`; |o| < 2^31 so every step fits), per row
/// `(sum + round) >> ceil(log2(region height))`.
#[inline(always)]
fn den_s123(o: &Bands32, g: &ScaleGeometry, scale: usize) -> [u64; 3] {
    let (sq, cub, accum) = den_shifts_s123(g, scale);
    let add_sq = 1u64 << sq;
    let add_cub = round_add(cub) as u64;
    let add_accum = round_add(accum) as u64;
    let rect = g.inner;
    let mut acc = [0u64; 3];
    for (theta, b) in o.hvd().into_iter().enumerate() {
        for i in rect.top..rect.bottom {
            let row = &b[i * g.width + rect.left..i * g.width + rect.right];
            let mut s = 0u64;
            for &x in row {
                let a = x.unsigned_abs() as u64;
                s = s.wrapping_add((((a * a + add_sq) >> sq) * a + add_cub) >> cub);
            }
            acc[theta] = acc[theta].wrapping_add(s.wrapping_add(add_accum) >> accum);
        }
    }
    acc
}

/// `i4_adm_cm` over the inner region: `thr` as at scale 0 with libvmaf's 32-bit weights
/// (`flt` neighbours plus `(int32)((286331153 * |csf| - 2^31) >> 32)` at the centre), then
/// `x = |(int32)((src * rfactor + 2^27) >> 28)| - thr`, `x = max(x, 0)`,
/// `x_sq = (int32)((x * x + 2^29) >> 30)`, `val = (x_sq * x + round) >> ceil(log2(w))`, per row
/// `(sum + round) >> ceil(log2(h))`.
#[inline(always)]
fn cm_s123(
    src: &Bands32,
    csf: &[Vec<i32>; 3],
    flt: &[Vec<i32>; 3],
    g: &ScaleGeometry,
    rf: &[u32; 3],
) -> [i64; 3] {
    let bw = g.width;
    let (cub, inner) = cm_shifts_s123(g);
    let add_cub = round_add(cub);
    let add_inner = round_add(inner);
    let rect = g.inner;
    let centre = |v: i32| ((I4_ONE_BY_15 * v.unsigned_abs() as i64 + I4_FLT_ROUND) >> 32) as i32;
    let mut mask = MaskRow::new(g);
    let mut acc = [0i64; 3];
    for i in rect.top..rect.bottom {
        mask.fill(flt, csf, g, i, centre);
        let row = i * bw + rect.left..i * bw + rect.right;
        for (theta, b) in src.hvd().into_iter().enumerate() {
            let f = rf[theta] as i64;
            let mut sum = 0i64;
            for (&x, &t) in b[row.clone()].iter().zip(&mask.thr) {
                let xv = ((x as i64 * f + (1 << 27)) >> 28) as i32;
                let x = xv.wrapping_abs().wrapping_sub(t);
                let x = x.max(0) as i64;
                let x_sq = ((x * x + (1 << 29)) >> 30) as i32 as i64;
                sum = sum.wrapping_add((x_sq * x + add_cub) >> cub);
            }
            acc[theta] = acc[theta].wrapping_add(sum.wrapping_add(add_inner) >> inner);
        }
    }
    acc
}

// ---------------------------------------------------------------------------------------------
// Hand-written AVX2 kernels (x86-64)
// ---------------------------------------------------------------------------------------------

/// The decouple step (scale 0 and scales 1-3, 8 pixels per step) and the scale-0 DWT (16
/// columns per step) with AVX2 intrinsics, for the AVX2 and AVX-512 builds (the portable loops
/// stay the reference and do the rest of each row: the last pixels that do not fill a step, and
/// the DWT's mirrored edge outputs). Each kernel is the portable code's arithmetic lane by lane,
/// with the same integer values (every bound below shows that a narrower type or a different
/// shift holds the exact value, or that a sum is the same modulo 2^32 where the portable code
/// wraps) and the same IEEE double operations in the same order for the two floating-point
/// steps of decouple.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Pixels per step.
    const L: usize = 8;

    /// 8 `i16` from `s[j..]`, sign-extended to `i32`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn ld16(s: &[i16], j: usize) -> __m256i {
        let s = &s[j..j + L];
        // SAFETY: `s` is 16 readable bytes; loadu needs no alignment.
        _mm256_cvtepi16_epi32(unsafe { _mm_loadu_si128(s.as_ptr().cast()) })
    }

    /// 8 `i32` from `s[j..]`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn ld32(s: &[i32], j: usize) -> __m256i {
        let s = &s[j..j + L];
        // SAFETY: `s` is 32 readable bytes; loadu needs no alignment.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    /// Store the low 16 bits of each `i32` lane (`as i16`, wrapping) at `s[j..j + 8]`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn st16(s: &mut [i16], j: usize, x: __m256i) {
        // Bytes 0-1, 4-5, 8-9, 12-13 of each 128-bit half, then the two halves' low quadwords.
        let pick = _mm256_setr_epi8(
            0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9, 12, 13, -1,
            -1, -1, -1, -1, -1, -1, -1,
        );
        let packed = _mm256_permute4x64_epi64::<0b00_00_10_00>(_mm256_shuffle_epi8(x, pick));
        let s = &mut s[j..j + L];
        // SAFETY: `s` is 16 writable bytes; storeu needs no alignment.
        unsafe { _mm_storeu_si128(s.as_mut_ptr().cast(), _mm256_castsi256_si128(packed)) }
    }

    /// Store 8 `i32` at `s[j..]`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn st32(s: &mut [i32], j: usize, x: __m256i) {
        let s = &mut s[j..j + L];
        // SAFETY: `s` is 32 writable bytes; storeu needs no alignment.
        unsafe { _mm256_storeu_si256(s.as_mut_ptr().cast(), x) }
    }

    /// `lut[idx]` per lane.
    ///
    /// # Safety
    /// Every lane of `idx` must be in `0..=65536`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn gather(lut: &[i32; 65537], idx: __m256i) -> __m256i {
        // SAFETY: the caller guarantees every index is within the table's 65537 entries.
        unsafe { _mm256_i32gather_epi32::<4>(lut.as_ptr(), idx) }
    }

    /// The `i32` lanes of a 64-bit-lane vector pair: the low 32 bits of `even`'s lanes go to
    /// lanes 0, 2, 4, 6 and the low 32 bits of `odd`'s lanes to lanes 1, 3, 5, 7.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn merge_lo32(even: __m256i, odd: __m256i) -> __m256i {
        _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd))
    }

    /// The odd `i32` lanes moved to the low halves of the 64-bit lanes (for `_mm256_mul_epi32`,
    /// which reads the low 32 bits of each 64-bit lane as signed).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn odd(x: __m256i) -> __m256i {
        _mm256_srli_epi64::<32>(x)
    }

    /// Four `f64` from four `i32`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn half_pd<const HI: i32>(x: __m256i) -> __m256d {
        _mm256_cvtepi32_pd(_mm256_extracti128_si256::<HI>(x))
    }

    /// The angle test of [`super::angle_flag`] for 8 pixels, from the `f32` values of the dot
    /// product and the squared norms (the portable code's `as f32` of the same integers): in
    /// double, `ot = ot_f / 4096.0` (a multiplication by 2^-12, exact like the division), and
    /// `ot >= 0 && ot * ot >= cos_1deg_sq * om * tm` left to right. All lanes set where true.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn angle(ot: __m256, om: __m256, tm: __m256, cos_1deg_sq: f32) -> __m256i {
        let c = _mm256_set1_pd(cos_1deg_sq as f64);
        let scale = _mm256_set1_pd(1.0 / 4096.0);
        let half = |x: __m128| _mm256_mul_pd(_mm256_cvtps_pd(x), scale);
        let test = |ot: __m128, om: __m128, tm: __m128| {
            let (ot, om, tm) = (half(ot), half(om), half(tm));
            let pos = _mm256_cmp_pd::<_CMP_GE_OQ>(ot, _mm256_setzero_pd());
            let rhs = _mm256_mul_pd(_mm256_mul_pd(c, om), tm);
            let big = _mm256_cmp_pd::<_CMP_GE_OQ>(_mm256_mul_pd(ot, ot), rhs);
            _mm256_castpd_si256(_mm256_and_pd(pos, big))
        };
        let lo = test(
            _mm256_castps256_ps128(ot),
            _mm256_castps256_ps128(om),
            _mm256_castps256_ps128(tm),
        );
        let hi = test(
            _mm256_extractf128_ps::<1>(ot),
            _mm256_extractf128_ps::<1>(om),
            _mm256_extractf128_ps::<1>(tm),
        );
        // 64-bit masks of pixels 0-3 and 4-7 to 32-bit lanes 0-7.
        let idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        let lo = _mm256_permutevar8x32_epi32(lo, idx);
        let hi = _mm256_permutevar8x32_epi32(hi, idx);
        _mm256_blend_epi32::<0b1111_0000>(lo, hi)
    }

    /// [`super::enhance`] for 8 pixels, where `cond` (the angle flag, `k > 0` and `o != 0`) is
    /// set, else `rst`: `rst * egl` in double, `MIN` with `t` where `o > 0`, `MAX` where
    /// `o < 0`, truncated. The selected value lies between `rst` and `t` (both `i32`), so the
    /// truncating conversion is exact; `minpd`/`maxpd` equal `f64::min`/`max` here (no NaN, no
    /// -0.0: `rst * egl` is +0.0 at `rst = 0`, and equal values are the same value).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn enhance(rst: __m256i, o: __m256i, t: __m256i, cond: __m256i, egl: f64) -> __m256i {
        if _mm256_testz_si256(cond, cond) != 0 {
            return rst;
        }
        let egl = _mm256_set1_pd(egl);
        let zero = _mm256_setzero_pd();
        let lo = {
            let x = _mm256_mul_pd(half_pd::<0>(rst), egl);
            let tf = half_pd::<0>(t);
            let pos = _mm256_cmp_pd::<_CMP_GT_OQ>(half_pd::<0>(o), zero);
            let v = _mm256_blendv_pd(_mm256_max_pd(x, tf), _mm256_min_pd(x, tf), pos);
            _mm256_cvttpd_epi32(v)
        };
        let hi = {
            let x = _mm256_mul_pd(half_pd::<1>(rst), egl);
            let tf = half_pd::<1>(t);
            let pos = _mm256_cmp_pd::<_CMP_GT_OQ>(half_pd::<1>(o), zero);
            let v = _mm256_blendv_pd(_mm256_max_pd(x, tf), _mm256_min_pd(x, tf), pos);
            _mm256_cvttpd_epi32(v)
        };
        _mm256_blendv_epi8(rst, _mm256_set_m128i(hi, lo), cond)
    }

    /// `cond & k > 0 & o != 0`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn enhance_cond(flag: __m256i, k: __m256i, o: __m256i) -> __m256i {
        let zero = _mm256_setzero_si256();
        let kpos = _mm256_cmpgt_epi32(k, zero);
        let onz = _mm256_andnot_si256(_mm256_cmpeq_epi32(o, zero), _mm256_set1_epi32(-1));
        _mm256_and_si256(flag, _mm256_and_si256(kpos, onz))
    }

    /// [`super::decouple_one_s0`] for 8 pixels (`o`, `t`: sign-extended `i16` band values,
    /// `|value| <= 27 411`: the horizontal DWT pass of any `i16` row is at most
    /// `54 822 * 32 768 / 2^16`). Returns `(rst, t - rst)` as `i32` (stored as `i16`).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn one_s0(
        o: __m256i,
        t: __m256i,
        flag: __m256i,
        egl: f64,
        lut: &[i32; 65537],
    ) -> (__m256i, __m256i) {
        let zero = _mm256_setzero_si256();
        let q15 = _mm256_set1_epi32(32768);
        // SAFETY: `o + 32768` is in 0..=65535 for an `i16` `o`.
        let recip = unsafe { gather(lut, _mm256_add_epi32(o, q15)) };
        // `recip * t + 16384` in 64 bits (|recip| <= 2^30, |t| <= 27 411: below 2^45), shifted
        // by 15: the quotient is below 2^30 in magnitude, so the low 32 bits of the logical
        // shift are the arithmetic shift's `i32` value.
        let rnd = _mm256_set1_epi64x(16384);
        let pe = _mm256_add_epi64(_mm256_mul_epi32(recip, t), rnd);
        let po = _mm256_add_epi64(_mm256_mul_epi32(odd(recip), odd(t)), rnd);
        let q = merge_lo32(_mm256_srli_epi64::<15>(pe), _mm256_srli_epi64::<15>(po));
        let k = _mm256_min_epi32(_mm256_max_epi32(q, zero), q15);
        let k = _mm256_blendv_epi8(k, q15, _mm256_cmpeq_epi32(o, zero));
        // |k * o| <= 2^15 * 27 411 < 2^30: exact in i32.
        let rst = _mm256_srai_epi32::<15>(_mm256_add_epi32(
            _mm256_mullo_epi32(k, o),
            _mm256_set1_epi32(16384),
        ));
        let rst = enhance(rst, o, t, enhance_cond(flag, k, o), egl);
        (rst, _mm256_sub_epi32(t, rst))
    }

    /// [`super::decouple_s0`]'s loop over one row of the outer region, 8 pixels per step, in
    /// place: `o` (reference h, v, d) becomes `r`, `t` (distorted h, v, d) becomes `a`. Returns
    /// how many leading pixels it did (the rest, fewer than 8, are the caller's).
    #[target_feature(enable = "avx2")]
    pub(super) fn decouple_row_s0(
        o: [&mut [i16]; 3],
        t: [&mut [i16]; 3],
        cos_1deg_sq: f32,
        egl: f64,
        lut: &[i32; 65537],
    ) -> usize {
        let [oh, ov, od] = o;
        let [th, tv, td] = t;
        let n = oh.len();
        let mut j = 0;
        while j + L <= n {
            let (h0, v0, d0) = (ld16(oh, j), ld16(ov, j), ld16(od, j));
            let (h1, v1, d1) = (ld16(th, j), ld16(tv, j), ld16(td, j));
            // Products of |values| <= 27 411: each below 2^29.5, the sums below 2^30.5, exact
            // in i32 (the portable code's i64 values); `cvtepi32_ps` rounds them to nearest like
            // `as f32`.
            let dot = |a: __m256i, b: __m256i, c: __m256i, d: __m256i| {
                _mm256_cvtepi32_ps(_mm256_add_epi32(
                    _mm256_mullo_epi32(a, b),
                    _mm256_mullo_epi32(c, d),
                ))
            };
            let flag = angle(
                dot(h0, h1, v0, v1),
                dot(h0, h0, v0, v0),
                dot(h1, h1, v1, v1),
                cos_1deg_sq,
            );
            for (oo, tt, o, t) in [(h0, h1, &mut *oh, &mut *th), (v0, v1, &mut *ov, &mut *tv)]
                .into_iter()
                .chain([(d0, d1, &mut *od, &mut *td)])
            {
                let (r, a) = one_s0(oo, tt, flag, egl, lut);
                st16(o, j, r);
                st16(t, j, a);
            }
            j += L;
        }
        j
    }

    /// `i64 as f32` (round to nearest even) of four 64-bit lanes, exactly: the value is split
    /// into `hi * 2^32 + lo` (both exact in double), added in double (`s`, rounded to 53 bits)
    /// with its exact error `e` (Fast2Sum: `|hi * 2^32| >= lo` whenever `hi != 0`, and `e = 0`
    /// when `hi = 0`), and `s` is turned into the round-to-odd value (one ulp towards the true
    /// value where `s` is inexact and its last bit even). Rounding a round-to-odd value of 53
    /// bits to 24 bits gives the correctly rounded result (53 >= 24 + 2; Boldo and Melquiond,
    /// "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
    /// 2008), which `cvtpd_ps` does.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn i64_to_f32(x: __m256i) -> __m128 {
        let lo_idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        let hi_idx = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7);
        let hi = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x, hi_idx));
        let lo = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x, lo_idx));
        let a = _mm256_mul_pd(_mm256_cvtepi32_pd(hi), _mm256_set1_pd(4_294_967_296.0));
        let b = _mm256_cvtepi32_pd(lo);
        // The low half is unsigned: add 2^32 where its signed reading is negative.
        let b = _mm256_add_pd(
            b,
            _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_LT_OQ>(b, _mm256_setzero_pd()),
                _mm256_set1_pd(4_294_967_296.0),
            ),
        );
        let s = _mm256_add_pd(a, b);
        let e = _mm256_sub_pd(b, _mm256_sub_pd(s, a));
        let inexact = _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_NEQ_OQ>(e, _mm256_setzero_pd()));
        let bits = _mm256_castpd_si256(s);
        let one = _mm256_set1_epi64x(1);
        let even = _mm256_cmpeq_epi64(_mm256_and_si256(bits, one), _mm256_setzero_si256());
        // +1 ulp (in magnitude) where e has the sign of s, else -1 ulp.
        let differ = _mm256_cmpgt_epi64(
            _mm256_setzero_si256(),
            _mm256_xor_si256(_mm256_castpd_si256(e), bits),
        );
        let step = _mm256_or_si256(differ, one);
        let adjust = _mm256_and_si256(step, _mm256_and_si256(inexact, even));
        _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_add_epi64(bits, adjust)))
    }

    /// [`i64_to_f32`] on an array (for the tests).
    #[cfg(test)]
    #[target_feature(enable = "avx2")]
    pub(super) fn i64_to_f32_array(v: [i64; 4]) -> [f32; 4] {
        // SAFETY: `v` is 32 readable bytes; loadu needs no alignment.
        let x = unsafe { _mm256_loadu_si256(v.as_ptr().cast()) };
        let mut out = [0f32; 4];
        // SAFETY: `out` is 16 writable bytes; storeu needs no alignment.
        unsafe { _mm_storeu_ps(out.as_mut_ptr(), i64_to_f32(x)) };
        out
    }

    /// `(a * b).wrapping_add(c * d)` in 64 bits of the even lanes (the low halves of the 64-bit
    /// lanes, read as signed), as `f32` of 4 lanes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn dot64(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m128 {
        i64_to_f32(_mm256_add_epi64(
            _mm256_mul_epi32(a, b),
            _mm256_mul_epi32(c, d),
        ))
    }

    /// 8 `f32` in pixel order from the even pixels' and the odd pixels' values.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn interleave(even: __m128, odd: __m128) -> __m256 {
        _mm256_set_m128(_mm_unpackhi_ps(even, odd), _mm_unpacklo_ps(even, odd))
    }

    /// [`super::decouple_one_s123`] for 8 pixels. Returns `(rst, t - rst)`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn one_s123(
        o: __m256i,
        t: __m256i,
        flag: __m256i,
        egl: f64,
        lut: &[i32; 65537],
    ) -> (__m256i, __m256i) {
        let zero = _mm256_setzero_si256();
        let q15 = _mm256_set1_epi32(32768);
        // |o| as u32 (2^31 for i32::MIN, like `unsigned_abs`).
        let abs = _mm256_abs_epi32(o);
        // best15's shift `17 - clz(abs)` (0 when not positive) is `floor(log2(abs)) - 14`,
        // read from the exponent of `abs >> 7` as f32 (below or equal to 2^24: exact):
        // `exponent_bits - 127 + 7 - 14`; `abs < 128` gives 0.0 (exponent bits 0).
        let e = _mm256_srli_epi32::<23>(_mm256_castps_si256(_mm256_cvtepi32_ps(
            _mm256_srli_epi32::<7>(abs),
        )));
        let s = _mm256_max_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(134)), zero);
        // msb = (abs + ((1 << s) >> 1)) >> s: abs + 2^16 < 2^32, and msb <= 32768.
        let half = _mm256_srli_epi32::<1>(_mm256_sllv_epi32(_mm256_set1_epi32(1), s));
        let msb = _mm256_srlv_epi32(_mm256_add_epi32(abs, half), s);
        // SAFETY: msb <= 32768, so every index is at most 65536.
        let recip = unsafe { gather(lut, _mm256_add_epi32(msb, q15)) };
        // `recip * sign(o)` (0 where o = 0, where k is replaced below anyway).
        let recip = _mm256_sign_epi32(recip, o);
        // tmp = (recip * t + 2^(14 + s)) >> (15 + s) in i64 (|recip * t| <= 2^61), clamped to
        // 0..=32768: 0 where the sum is negative, else the logical shift (the arithmetic one
        // of a non-negative value), clamped above in 64 bits.
        let sh = _mm256_add_epi32(s, _mm256_set1_epi32(15));
        let lo_mask = _mm256_set1_epi64x(0xffff_ffff);
        let one = _mm256_set1_epi64x(1);
        let cap = _mm256_set1_epi64x(32768);
        let k64 = |recip: __m256i, t: __m256i, sh: __m256i| {
            // sh: 15..=32 in the low half of each 64-bit lane, 0 in the high half.
            let rnd = _mm256_srli_epi64::<1>(_mm256_sllv_epi64(one, sh));
            let p = _mm256_add_epi64(_mm256_mul_epi32(recip, t), rnd);
            let neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), p);
            let q = _mm256_srlv_epi64(p, sh);
            let q = _mm256_blendv_epi8(q, cap, _mm256_cmpgt_epi64(q, cap));
            _mm256_andnot_si256(neg, q)
        };
        let ke = k64(recip, t, _mm256_and_si256(sh, lo_mask));
        let ko = k64(odd(recip), odd(t), odd(sh));
        let k = merge_lo32(ke, ko);
        let k = _mm256_blendv_epi8(k, q15, _mm256_cmpeq_epi32(o, zero));
        // rst = (k * o + 16384) >> 15 in i64 (|k * o| <= 2^46); the result is within i32
        // (-2^31 ..= 2^31 - 1), so the low 32 bits of the logical shift are its value.
        let rnd = _mm256_set1_epi64x(16384);
        let re = _mm256_add_epi64(_mm256_mul_epi32(k, o), rnd);
        let ro = _mm256_add_epi64(_mm256_mul_epi32(odd(k), odd(o)), rnd);
        let rst = merge_lo32(_mm256_srli_epi64::<15>(re), _mm256_srli_epi64::<15>(ro));
        let rst = enhance(rst, o, t, enhance_cond(flag, k, o), egl);
        (rst, _mm256_sub_epi32(t, rst))
    }

    /// [`super::decouple_s123`]'s loop over one row of the outer region (as
    /// [`decouple_row_s0`], on `i32` bands).
    #[target_feature(enable = "avx2")]
    pub(super) fn decouple_row_s123(
        o: [&mut [i32]; 3],
        t: [&mut [i32]; 3],
        cos_1deg_sq: f32,
        egl: f64,
        lut: &[i32; 65537],
    ) -> usize {
        let [oh, ov, od] = o;
        let [th, tv, td] = t;
        let n = oh.len();
        let mut j = 0;
        while j + L <= n {
            let (h0, v0, d0) = (ld32(oh, j), ld32(ov, j), ld32(od, j));
            let (h1, v1, d1) = (ld32(th, j), ld32(tv, j), ld32(td, j));
            // The portable code's i64 sums (products below 2^62, sums wrapping like its
            // `wrapping_add`), for even and odd pixels, converted exactly like `as f32`.
            let dot = |a: __m256i, b: __m256i, c: __m256i, d: __m256i| {
                interleave(dot64(a, b, c, d), dot64(odd(a), odd(b), odd(c), odd(d)))
            };
            let flag = angle(
                dot(h0, h1, v0, v1),
                dot(h0, h0, v0, v0),
                dot(h1, h1, v1, v1),
                cos_1deg_sq,
            );
            for (oo, tt, o, t) in [(h0, h1, &mut *oh, &mut *th), (v0, v1, &mut *ov, &mut *tv)]
                .into_iter()
                .chain([(d0, d1, &mut *od, &mut *td)])
            {
                let (r, a) = one_s123(oo, tt, flag, egl, lut);
                st32(o, j, r);
                st32(t, j, a);
            }
            j += L;
        }
        j
    }
    /// Coefficient pairs `(c[2m], c[2m + 1])` of a 4-tap filter in each 32-bit lane, for
    /// `_mm256_madd_epi16` on interleaved sample pairs.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn coef_pair(c: &[i32; 4], m: usize) -> __m256i {
        // Every tap of LO and HI fits i16 (|tap| <= 27 411).
        let pair = (c[2 * m] as i16 as u16 as u32) | ((c[2 * m + 1] as i16 as u16 as u32) << 16);
        _mm256_set1_epi32(pair as i32)
    }

    /// The vertical pass of [`super::dwt_s0`] for one output row, 16 columns per step: `tlo`
    /// and `thi` from the four input rows `rows`. Returns how many leading columns it did.
    ///
    /// The sums are the portable code's wrapping `i32` sums, modulo 2^32: the samples enter
    /// `_mm256_madd_epi16` as `s - 32768` (an `i16`), which changes the low-pass sum by
    /// `32768 * 46 342` (added back with the constant) and the high-pass sum by nothing (its
    /// taps sum to 0). Each `madd` is exact (at most `32768 * (15 826 + 27 411)` < 2^31); the
    /// adds wrap like the portable code's `wrapping_add`, so the shifted values are the same.
    #[target_feature(enable = "avx2")]
    pub(super) fn dwt_s0_vertical(
        rows: [&[u16]; 4],
        tlo: &mut [i16],
        thi: &mut [i16],
        shift: u32,
    ) -> usize {
        use super::{HI, LO, LO_SUM};
        let n = tlo.len().min(thi.len());
        let add = 1i32 << (shift - 1);
        // C_lo = 32768 * LO_SUM - LO_SUM * add + add, wrapping like the portable sums.
        let c_lo = _mm256_set1_epi32(
            (32768i32 * LO_SUM)
                .wrapping_sub(LO_SUM.wrapping_mul(add))
                .wrapping_add(add),
        );
        let c_hi = _mm256_set1_epi32(add);
        let (lo01, lo23) = (coef_pair(&LO, 0), coef_pair(&LO, 1));
        let (hi01, hi23) = (coef_pair(&HI, 0), coef_pair(&HI, 1));
        let sh = _mm_cvtsi32_si128(shift as i32);
        let bias = _mm256_set1_epi16(i16::MIN);
        let ld = |s: &[u16], j: usize| {
            let s = &s[j..j + 16];
            // SAFETY: `s` is 32 readable bytes; loadu needs no alignment.
            _mm256_xor_si256(unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }, bias)
        };
        let mut j = 0;
        while j + 16 <= n {
            let (s0, s1, s2, s3) = (
                ld(rows[0], j),
                ld(rows[1], j),
                ld(rows[2], j),
                ld(rows[3], j),
            );
            // Columns 0-3 and 8-11 (`unpacklo`), 4-7 and 12-15 (`unpackhi`).
            let p01 = [_mm256_unpacklo_epi16(s0, s1), _mm256_unpackhi_epi16(s0, s1)];
            let p23 = [_mm256_unpacklo_epi16(s2, s3), _mm256_unpackhi_epi16(s2, s3)];
            let pass = |c01: __m256i, c23: __m256i, k: __m256i| {
                let f = |m: usize| {
                    let s = _mm256_add_epi32(
                        _mm256_madd_epi16(p01[m], c01),
                        _mm256_madd_epi16(p23[m], c23),
                    );
                    _mm256_sra_epi32(_mm256_add_epi32(s, k), sh)
                };
                // `packs` of (0-3 | 8-11) and (4-7 | 12-15) is in column order.
                let (a, b) = (f(0), f(1));
                let a = _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(a));
                let b = _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(b));
                _mm256_packs_epi32(a, b)
            };
            let l = pass(lo01, lo23, c_lo);
            let h = pass(hi01, hi23, c_hi);
            let (tl, th) = (&mut tlo[j..j + 16], &mut thi[j..j + 16]);
            // SAFETY: `tl` and `th` are 32 writable bytes each; storeu needs no alignment.
            unsafe {
                _mm256_storeu_si256(tl.as_mut_ptr().cast(), l);
                _mm256_storeu_si256(th.as_mut_ptr().cast(), h);
            }
            j += 16;
        }
        j
    }

    /// The regular outputs of the horizontal pass of [`super::dwt_s0`] (see
    /// [`super::hpass`]), 16 per step: output `j` (from 1) of the low- and high-pass filters
    /// from `t[2j - 1 ..= 2j + 2]`, `(sum + 32768) >> 16`, for `j` below `reg_end`. Returns
    /// how many outputs after output 0 it did. `|sum| <= 54 822 * 32 768 < 2^31` for any `i16`
    /// row: every `madd` and add is exact, and the outputs (at most 27 411 in magnitude) fit
    /// `i16`, so the saturating pack keeps them.
    #[target_feature(enable = "avx2")]
    pub(super) fn dwt_s0_horizontal(
        t: &[i16],
        lo: &mut [i16],
        hi: &mut [i16],
        reg_end: usize,
    ) -> usize {
        use super::{HI, LO};
        let (lo01, lo23) = (coef_pair(&LO, 0), coef_pair(&LO, 1));
        let (hi01, hi23) = (coef_pair(&HI, 0), coef_pair(&HI, 1));
        let rnd = _mm256_set1_epi32(32768);
        let ld = |i: usize| {
            let s = &t[i..i + 16];
            // SAFETY: `s` is 32 readable bytes; loadu needs no alignment.
            unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
        };
        let mut j = 1;
        while j + 16 <= reg_end {
            // Pairs (t[2j-1], t[2j]) and (t[2j+1], t[2j+2]) of outputs j..j+8 and j+8..j+16.
            let (a0, a1) = (ld(2 * j - 1), ld(2 * j + 15));
            let (b0, b1) = (ld(2 * j + 1), ld(2 * j + 17));
            let f = |c01: __m256i, c23: __m256i, a: __m256i, b: __m256i| {
                let s = _mm256_add_epi32(_mm256_madd_epi16(a, c01), _mm256_madd_epi16(b, c23));
                _mm256_srai_epi32::<16>(_mm256_add_epi32(s, rnd))
            };
            let l = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(
                f(lo01, lo23, a0, b0),
                f(lo01, lo23, a1, b1),
            ));
            let h = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(
                f(hi01, hi23, a0, b0),
                f(hi01, hi23, a1, b1),
            ));
            let (ol, oh) = (&mut lo[j..j + 16], &mut hi[j..j + 16]);
            // SAFETY: `ol` and `oh` are 32 writable bytes each; storeu needs no alignment.
            unsafe {
                _mm256_storeu_si256(ol.as_mut_ptr().cast(), l);
                _mm256_storeu_si256(oh.as_mut_ptr().cast(), h);
            }
            j += 16;
        }
        j - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The content generator shared with the script that produced the libvmaf numbers below
    /// (a 64-bit LCG; `next` returns the top 31 bits).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
    }

    #[derive(Clone, Copy, Debug)]
    enum Kind {
        /// Reference uniform noise, distorted = reference plus noise of +-max/8 (clamped).
        Noise,
        /// Reference random 0 or max, distorted its inverse (max - reference).
        MaxDiff,
    }

    fn content(kind: Kind, w: usize, h: usize, bpc: u8, seed: u64) -> (Vec<u16>, Vec<u16>) {
        let max = (1u32 << bpc) - 1;
        let mut g = Lcg(seed);
        let mut r = Vec::with_capacity(w * h);
        let mut d = Vec::with_capacity(w * h);
        for _ in 0..w * h {
            let (a, b) = match kind {
                Kind::Noise => {
                    let a = g.next() % (max + 1);
                    let n = g.next() % (max / 4 + 1);
                    let b = (a as i64 + n as i64 - (max / 8) as i64).clamp(0, max as i64);
                    (a, b as u32)
                }
                Kind::MaxDiff => {
                    let a = if g.next() & 1 == 1 { max } else { 0 };
                    (a, max - a)
                }
            };
            r.push(a as u16);
            d.push(b as u16);
        }
        (r, d)
    }

    struct Case {
        kind: Kind,
        width: usize,
        height: usize,
        bpc: u8,
        egl: f64,
        seed: u64,
        /// libvmaf 3.2.0 (plain C path, `cpumask` 255) through its API on the same content:
        /// integer_adm2, integer_adm3, integer_aim, integer_adm_scale0..3.
        want: [f64; 7],
    }

    /// Every width and height of 33, 35, 37, 63, 65, 66, 100, 130, 161 once, every depth 8..16
    /// once, noise and max-difference content, enhancement gain limit 100 and 1.
    #[rustfmt::skip]
    const CASES: [Case; 9] = [
        Case { kind: Kind::Noise, width: 33, height: 63, bpc: 8, egl: 100.0, seed: 1000, want: [0.9139800334118716, 0.9539893353152096, 0.006001362781452599, 0.9172302137380381, 0.9045954823964759, 0.9179104662876021, 0.9173043914649394] },
        Case { kind: Kind::MaxDiff, width: 35, height: 130, bpc: 9, egl: 100.0, seed: 1001, want: [0.0747827132009274, 0.07477811774425683, 0.9252264777124137, 0.13969426946727062, 0.07596035593503363, 0.04989419102733989, 0.04159485991508988] },
        Case { kind: Kind::Noise, width: 37, height: 37, bpc: 10, egl: 1.0, seed: 1002, want: [0.8848502677774778, 0.9359350044843635, 0.012980258808750863, 0.9005827689503114, 0.9023555075698313, 0.8794696588056237, 0.845782519300777] },
        Case { kind: Kind::MaxDiff, width: 63, height: 100, bpc: 11, egl: 100.0, seed: 1003, want: [0.07700072437499618, 0.07699600130097634, 0.9230087217730435, 0.13740164353280937, 0.07785278285543967, 0.04909013593688553, 0.046066894009874744] },
        Case { kind: Kind::Noise, width: 65, height: 35, bpc: 12, egl: 100.0, seed: 1004, want: [0.9050660893207123, 0.9473198849740583, 0.010426319372595763, 0.9088374976033099, 0.9026073115230893, 0.8991297568482922, 0.9118782889912573] },
        Case { kind: Kind::MaxDiff, width: 66, height: 66, bpc: 13, egl: 1.0, seed: 1005, want: [0.0750976023346346, 0.07509399074621265, 0.9249096208422093, 0.13891392416073187, 0.07633944143143177, 0.04999219412199428, 0.042338857816014] },
        Case { kind: Kind::Noise, width: 100, height: 33, bpc: 14, egl: 100.0, seed: 1006, want: [0.8948146733149626, 0.9428427892679805, 0.00912909477900151, 0.9079631005528328, 0.9103763581186336, 0.869970232686999, 0.8931393211498302] },
        Case { kind: Kind::MaxDiff, width: 130, height: 65, bpc: 15, egl: 100.0, seed: 1007, want: [0.07582988860721865, 0.07582554932578052, 0.9241787899556576, 0.13817810233528274, 0.075174550899067, 0.05563998025445032, 0.03945206284210139] },
        Case { kind: Kind::Noise, width: 161, height: 161, bpc: 16, egl: 1.0, seed: 1008, want: [0.8992276679262737, 0.9412956434495143, 0.016636381027244917, 0.9022659430578357, 0.8941215771517679, 0.8933524878278702, 0.9092878790270484] },
    ];

    fn scores_of(r: &[u16], d: &[u16], w: usize, h: usize, bpc: u8, p: &AdmParams) -> [f64; 7] {
        let acc = compute(
            Plane::from_slice(r, w, h, bpc),
            Plane::from_slice(d, w, h, bpc),
            p,
        );
        let s = acc.scores(p, w, h);
        [
            s.adm2, s.adm3, s.aim, s.scale[0], s.scale[1], s.scale[2], s.scale[3],
        ]
    }

    #[test]
    fn odd_sizes_every_depth_match_libvmaf() {
        let mut bad = Vec::new();
        for c in &CASES {
            let (r, d) = content(c.kind, c.width, c.height, c.bpc, c.seed);
            let p = AdmParams {
                enhn_gain_limit: c.egl,
                ..AdmParams::default()
            };
            let got = scores_of(&r, &d, c.width, c.height, c.bpc, &p);
            for (k, (g, w)) in got.iter().zip(c.want).enumerate() {
                if *g != w {
                    bad.push(format!(
                        "{:?} {}x{} {} bits egl {}: value {k}: got {g:?}, want {w:?}",
                        c.kind, c.width, c.height, c.bpc, c.egl
                    ));
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} mismatches:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }

    /// Flat frames have no detail: every sum is 0, and libvmaf's scores are exactly 1 (the
    /// numerator and denominator are both the noise term) with AIM 0; a flat 0 against a flat
    /// 2^bpc - 1 is the same (the DWT's high-pass bands ignore the mean).
    #[test]
    fn flat_and_dc_difference_score_one() {
        for bpc in 8..=16u8 {
            let max = ((1u32 << bpc) - 1) as u16;
            for (w, h) in [(33, 33), (64, 37)] {
                for (a, b) in [(max / 3, max / 3), (0, max), (max, 0)] {
                    let (r, d) = (vec![a; w * h], vec![b; w * h]);
                    let p = AdmParams::default();
                    let acc = compute(
                        Plane::from_slice(&r, w, h, bpc),
                        Plane::from_slice(&d, w, h, bpc),
                        &p,
                    );
                    assert_eq!(acc, AdmAccum::default(), "{w}x{h} {bpc} bits {a} vs {b}");
                    let s = acc.scores(&p, w, h);
                    assert_eq!((s.adm2, s.adm3, s.aim), (1.0, 1.0, 0.0));
                    assert_eq!(s.scale, [1.0; 4]);
                }
            }
        }
    }

    /// The AVX2 decouple kernel's `i64 -> f32` conversion (double with round-to-odd) equals
    /// `as f32` (round to nearest even) on values next to the f32 rounding boundaries of every
    /// exponent (midpoints, one off, the double-rounding traps just beside a midpoint), both
    /// signs, and the extremes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_i64_to_f32_rounds_like_as_f32() {
        if !Isa::Avx2.supported() {
            eprintln!("no AVX2 on this CPU: nothing to check");
            return;
        }
        let mut vals = vec![
            0i64,
            1,
            -1,
            i64::MIN,
            i64::MAX,
            i64::MIN + 1,
            1 << 53,
            -(1 << 53),
        ];
        let mut g = Lcg(77);
        for e in 23..=62u32 {
            for _ in 0..64 {
                // A 24-bit mantissa at exponent e, the midpoint above it, and offsets that a
                // rounding to 53 bits would move onto or off the midpoint.
                let m = ((1i64 << 23) | (g.next() as i64 & ((1 << 23) - 1))) << (e - 23);
                let half = if e > 23 { 1i64 << (e - 24) } else { 0 };
                let tiny = if e > 53 { 1i64 << (e - 53) } else { 1 };
                for off in [
                    0,
                    half,
                    half - 1,
                    half + 1,
                    half - tiny,
                    half + tiny,
                    half - tiny / 2,
                ] {
                    for base in [m, m.saturating_add(off)] {
                        let low = (g.next() as i64) & (tiny - 1).max(0);
                        for v in [base, base ^ low, base.wrapping_neg()] {
                            vals.push(v);
                        }
                    }
                }
            }
        }
        let mut bad = vec![];
        for c in vals.chunks(4) {
            let mut v = [0i64; 4];
            v[..c.len()].copy_from_slice(c);
            // SAFETY: AVX2 checked above.
            let got = unsafe { x86::i64_to_f32_array(v) };
            for (x, y) in v.iter().zip(got) {
                if (*x as f32).to_bits() != y.to_bits() {
                    bad.push(format!("{x}: got {y:e}, want {:e}", *x as f32));
                }
            }
        }
        assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
    }

    #[test]
    fn strided_equals_compact() {
        let (w, h, bpc) = (67, 45, 10);
        let (r, d) = content(Kind::Noise, w, h, bpc, 7);
        let stride = w + 13;
        let embed = |v: &[u16]| {
            let mut out = vec![0xffffu16; 5 + stride * h];
            for y in 0..h {
                out[5 + y * stride..5 + y * stride + w].copy_from_slice(&v[y * w..(y + 1) * w]);
            }
            out
        };
        let (rs, ds) = (embed(&r), embed(&d));
        fn view(v: &[u16], w: usize, h: usize, stride: usize, bpc: u8) -> Plane<'_> {
            Plane {
                data: &v[5..],
                width: w,
                height: h,
                stride,
                bpc,
            }
        }
        let p = AdmParams::default();
        let strided = compute(
            view(&rs, w, h, stride, bpc),
            view(&ds, w, h, stride, bpc),
            &p,
        );
        let compact = compute(
            Plane::from_slice(&r, w, h, bpc),
            Plane::from_slice(&d, w, h, bpc),
            &p,
        );
        assert_eq!(strided, compact);
        assert_ne!(compact, AdmAccum::default());
    }

    /// Extreme content at every depth: stripes and checkerboards of 0 and 2^bpc - 1 (the
    /// patterns that drive the DWT bands to their limits) against their inverse, a black frame
    /// and themselves. Overflow checks are on in the test profile, so an unintended overflow
    /// panics here. The scores must be finite and in range; a frame against itself has AIM 0
    /// and ADM 1 up to libvmaf's fixed-point rounding (libvmaf 3.2.0 gives 1.0000062 for the
    /// 8-bit row stripes and 0.99944 for the 8-bit checkerboard, hence the 1e-3 here).
    #[test]
    fn extreme_content_every_depth() {
        let (w, h) = (70, 41);
        for bpc in 8..=16u8 {
            let max = ((1u32 << bpc) - 1) as u16;
            let patterns: [&dyn Fn(usize, usize) -> bool; 5] = [
                &|x, y| (x + y) % 2 == 1,
                &|_, y| y % 4 == 2,
                &|x, _| x % 4 == 2,
                &|x, y| (x / 8 + y / 8) % 2 == 1,
                &|x, y| x % 4 != 1 && y % 4 == 2,
            ];
            for (k, pat) in patterns.iter().enumerate() {
                let r: Vec<u16> = (0..w * h)
                    .map(|i| if pat(i % w, i / w) { max } else { 0 })
                    .collect();
                let inverse: Vec<u16> = r.iter().map(|&v| max - v).collect();
                for (which, d) in [(0, inverse), (1, vec![0; w * h]), (2, r.clone())] {
                    let s = scores_of(&r, &d, w, h, bpc, &AdmParams::default());
                    let what = format!("{bpc} bits pattern {k} distorted {which}: {s:?}");
                    assert!(s.iter().all(|v| v.is_finite()), "{what}");
                    assert!((0.0..=1.0001).contains(&s[0]), "{what}");
                    assert!((0.0..=1.0).contains(&s[2]), "{what}");
                    if which == 2 {
                        assert!((s[0] - 1.0).abs() < 1e-3 && s[2] == 0.0, "{what}");
                    }
                }
            }
        }
    }

    /// The largest scale-0 band magnitude B = 22 930 that the bounds of [`AdmScaleAccum`] use
    /// is reached (by the +,+,+,- pattern of extreme vertical high-pass values) and not
    /// exceeded on random extreme content.
    #[test]
    fn scale0_band_bound_is_tight() {
        let (w, h, bpc) = (40, 40, 16u8);
        let max = u16::MAX;
        // Output row 1 reads rows 1..=4, output column 1 reads columns 1..=4 of the vertical
        // pass. High-pass taps (-4240, -7345, 27411, -15826): rows (0, 0, max, 0) give +27411,
        // rows (max, max, 0, max) give -27411; columns 1, 2, 3 positive, 4 negative.
        let mut img = vec![0u16; w * h];
        for x in 1..=4 {
            let col = if x < 4 {
                [0, 0, max, 0]
            } else {
                [max, max, 0, max]
            };
            for (k, &v) in col.iter().enumerate() {
                img[(1 + k) * w + x] = v;
            }
        }
        let geo = geometry(w, h);
        let g = &geo[0];
        let (iy, ix) = (dwt_indices(h), dwt_indices(w));
        let mut b = Bands16::new(g.width * g.height);
        let (mut tlo, mut thi) = (vec![0i16; w], vec![0i16; w]);
        let plane = Plane::from_slice(&img, w, h, bpc);
        dwt_s0(&plane, &iy, &ix, &mut tlo, &mut thi, &mut b, g.width, false);
        assert_eq!(b.h[g.width + 1], 22930);

        let mut rng = Lcg(99);
        let mut largest = 0i32;
        for bpc in [8u8, 12, 16] {
            let m = ((1u32 << bpc) - 1) as u16;
            for _ in 0..20 {
                let img: Vec<u16> = (0..w * h)
                    .map(|_| if rng.next() & 1 == 1 { m } else { 0 })
                    .collect();
                let plane = Plane::from_slice(&img, w, h, bpc);
                dwt_s0(&plane, &iy, &ix, &mut tlo, &mut thi, &mut b, g.width, false);
                for band in [&b.a, &b.h, &b.v, &b.d] {
                    largest = largest.max(band.iter().map(|&v| (v as i32).abs()).max().unwrap());
                }
            }
        }
        assert!(
            largest <= 22930 && largest > 15000,
            "largest band {largest}"
        );
    }

    /// The row bound of the scale-0 numerator (see [`AdmScaleAccum::num`]): along one band row,
    /// the mean of |band|^3 is at most 19 383^3 (the best periodic pattern of the +-27 411
    /// vertical-pass extremes, found as the maximum mean cycle over the 4 states of the two
    /// taps that neighbouring outputs share), so with the masking threshold at its most
    /// favourable (0) a row sum stays below i64::MAX at any frame size.
    #[test]
    fn scale0_numerator_row_bound() {
        let m = 27411i64;
        let mut best = 0f64;
        for f in [LO, HI] {
            let gain = |a: i64, b: i64, c: i64, d: i64| {
                let v = (f[0] as i64 * a + f[1] as i64 * b + f[2] as i64 * c + f[3] as i64 * d)
                    .abs()
                    * m;
                let v = ((v + 32768) >> 16) as f64;
                v * v * v
            };
            let states = [(-1i64, -1i64), (-1, 1), (1, -1), (1, 1)];
            // Simple cycles of up to 4 states (enough for the maximum mean cycle of 4 nodes).
            for len in 1..=4usize {
                for code in 0..4usize.pow(len as u32) {
                    let cyc: Vec<_> = (0..len).map(|i| states[(code >> (2 * i)) & 3]).collect();
                    let total: f64 = (0..len)
                        .map(|i| {
                            let (a, b) = cyc[i];
                            let (c, d) = cyc[(i + 1) % len];
                            gain(a, b, c, d)
                        })
                        .sum();
                    best = best.max(total / len as f64);
                }
            }
        }
        assert_eq!(best, 19383f64.powi(3));
        // Per pixel before the cube shift (h, v): x = 19 383 * 36 453, x_sq = x^2 >> 29,
        // x_sq * x; a row holds at most 0.8 * band width pixels and is shifted by
        // ceil(log2(band width)) - 4, so at most 0.8 * 16 of these per row.
        let x = 19383f64 * 36453.0;
        let row_hv = 0.8 * 16.0 * (x * x / 2f64.powi(29)) * x;
        let x = 19383f64 * 49417.0;
        let row_d = 0.8 * 8.0 * (x * x / 2f64.powi(30)) * x;
        assert!(row_hv < 8.5e18 && row_d < 5.3e18, "{row_hv:e} {row_d:e}");
        assert!(row_hv < i64::MAX as f64);
        // The same with every accepted CSF's scale-0 factors: the blend's largest (1080_3H,
        // 24 809 / 36 087) gives 2.7e18 and 2.0e18.
        let mut largest = (0f64, 0f64);
        for (name, c) in factor_sets().into_iter().skip(1) {
            let x = 19383f64 * c.rfactor_s0[0] as f64;
            let hv = 0.8 * 16.0 * (x * x / 2f64.powi(29)) * x;
            let x = 19383f64 * c.rfactor_s0[2] as f64;
            let d = 0.8 * 8.0 * (x * x / 2f64.powi(30)) * x;
            assert!(hv <= row_hv && d <= row_d, "{name}: {hv:e} {d:e}");
            largest = (largest.0.max(hv), largest.1.max(d));
        }
        assert!(
            (2.6e18..2.7e18).contains(&largest.0) && (2.0e18..2.1e18).contains(&largest.1),
            "{largest:?}"
        );
    }

    /// A linear form over the samples of one side: coefficient `k` is that of sample
    /// `start + k`.
    #[derive(Clone)]
    struct Form {
        start: usize,
        coef: Vec<i128>,
    }

    impl Form {
        fn l1(&self) -> u128 {
            self.coef.iter().map(|c| c.unsigned_abs()).sum()
        }
    }

    /// `c[0] * f[t[0]] + ... + c[3] * f[t[3]]`.
    fn combine(f: &[Form], t: &[usize; 4], c: &[i32; 4]) -> Form {
        let start = t.iter().map(|&i| f[i].start).min().unwrap();
        let end = t
            .iter()
            .map(|&i| f[i].start + f[i].coef.len())
            .max()
            .unwrap();
        let mut coef = vec![0i128; end - start];
        for (&i, &ck) in t.iter().zip(c) {
            for (k, &x) in f[i].coef.iter().enumerate() {
                coef[f[i].start - start + k] += ck as i128 * x;
            }
        }
        Form { start, coef }
    }

    /// The one-dimensional composite filters of the DWT cascade on a side of `n` samples,
    /// through libvmaf's mirrored index tables ([`dwt_indices`]): per scale, for every output,
    /// the low-pass form (what the next scale reads) and the high-pass form, as integer taps
    /// before any shift. A 2-D band value is the outer product of a vertical and a horizontal
    /// form (h: vertical high, horizontal low; v: vertical low, horizontal high; d: both high).
    fn composites(n: usize) -> Vec<Vec<(Form, Form)>> {
        let mut cur: Vec<Form> = (0..n)
            .map(|i| Form {
                start: i,
                coef: vec![1],
            })
            .collect();
        let mut out = Vec::new();
        for _ in 0..4 {
            let scale: Vec<(Form, Form)> = dwt_indices(cur.len())
                .iter()
                .map(|t| (combine(&cur, t, &LO), combine(&cur, t, &HI)))
                .collect();
            cur = scale.iter().map(|(lo, _)| lo.clone()).collect();
            out.push(scale);
        }
        out
    }

    /// The DWT's (vertical, horizontal) shifts per scale: scale 0 `bpc` (16 here: the
    /// normalisation below makes every depth the same) and 16, then libvmaf's
    /// `adm_dwt2_s123_combined` shifts.
    const DWT_SHIFTS: [(u32, u32); 4] = [(16, 16), (0, 15), (16, 16), (16, 15)];

    /// Largest band magnitudes per scale, `[h and v, d, a]`: with the centred sample
    /// `u = (x - 2^(bpc-1)) / 2^bpc` in [-1/2, 1/2) (the scale-0 vertical pass subtracts
    /// `46342 * 2^(bpc-1)`, the high-pass taps sum to 0), a band is `(Cv x Ch) . u` over
    /// `2^(total shift - 16)`, whose maximum is `L1(Cv) * L1(Ch) / 2^(total - 15)`, plus the
    /// rounding of every stage (at most 1/2 each, carried through the later stages' gains).
    /// Maximised over every output position of every side length 33..=160 (beyond about 100
    /// the two edges no longer interact, and the edge cases repeat with period 16) and of the
    /// 16K sides 15360 and 8640.
    fn band_bounds() -> [[u128; 3]; 4] {
        let mut l1 = [[0u128; 2]; 4];
        for n in (33..=160).chain([8640, 15360]) {
            for (s, outs) in composites(n).iter().enumerate() {
                for (lo, hi) in outs {
                    l1[s][0] = l1[s][0].max(lo.l1());
                    l1[s][1] = l1[s][1].max(hi.l1());
                }
            }
        }
        let mut out = [[0u128; 3]; 4];
        let (mut total, mut slack) = (0u32, 0f64);
        for s in 0..4 {
            for sh in [DWT_SHIFTS[s].0, DWT_SHIFTS[s].1] {
                total += sh;
                slack = slack * 54822.0 / 2f64.powi(sh as i32) + if sh > 0 { 0.5 } else { 0.0 };
            }
            let [lo, hi] = l1[s];
            let div = 1u128 << (total - 15);
            let b = |x: u128, y: u128| (x * y).div_ceil(div) + slack.ceil() as u128;
            out[s] = [b(hi, lo), b(hi, hi), b(lo, lo)];
        }
        out
    }

    /// The band bounds of [`AdmScaleAccum`] at scales 1-3 (scale 0's 22 930 is
    /// `scale0_band_bound_is_tight`, which this reproduces up to its rounding allowance).
    #[test]
    fn band_bounds_every_scale() {
        let b = band_bounds();
        assert_eq!(b[0], [22931, 22931, 22931]);
        assert_eq!(b[1], [1_510_836_459, 1_407_857_666, 1_621_348_162]);
        assert_eq!(b[2], [776_951_815, 751_569_686, 803_191_219]);
        assert_eq!(b[3], [772_371_675, 736_509_794, 809_979_926]);
    }

    /// The h, v, d bands of every scale of one image, as the DWT of [`compute_in`] makes them.
    fn dwt_bands(img: &[u16], w: usize, h: usize, bpc: u8) -> Vec<[Vec<i32>; 3]> {
        let geo = geometry(w, h);
        let mut ws = Workspace::new(&geo, (w, h));
        let g = &geo[0];
        let (iy, ix) = (dwt_indices(g.in_height), dwt_indices(g.in_width));
        let plane = Plane::from_slice(img, w, h, bpc);
        dwt_s0(
            &plane,
            &iy,
            &ix,
            &mut ws.tlo16,
            &mut ws.thi16,
            &mut ws.ref16,
            g.width,
            false,
        );
        let widen = |v: &[i16]| v[..g.width * g.height].iter().map(|&x| x as i32).collect();
        let mut out = vec![[widen(&ws.ref16.h), widen(&ws.ref16.v), widen(&ws.ref16.d)]];
        for (scale, g) in geo.iter().enumerate().skip(1) {
            let (iy, ix) = (dwt_indices(g.in_height), dwt_indices(g.in_width));
            let b32 = &mut ws.ref32;
            let [a0, a1] = &mut b32.a;
            let (input, a): (&[i32], _) = match scale {
                1 => (&[], Some(&mut a1[..])),
                2 => (&a1[..], Some(&mut a0[..])),
                _ => (&a0[..], None),
            };
            let dout = DwtOut {
                a,
                h: &mut b32.h,
                v: &mut b32.v,
                d: &mut b32.d,
            };
            let (tlo, thi) = (&mut ws.tlo32, &mut ws.thi32);
            if scale == 1 {
                dwt_s123(&ws.ref16.a, &iy, &ix, tlo, thi, dout, g, scale);
            } else {
                dwt_s123(input, &iy, &ix, tlo, thi, dout, g, scale);
            }
            let n = g.width * g.height;
            out.push([
                b32.h[..n].to_vec(),
                b32.v[..n].to_vec(),
                b32.d[..n].to_vec(),
            ]);
        }
        out
    }

    /// The bounds of `band_bounds_every_scale` are reached: for every scale 1-3 and orientation,
    /// at the worst output position of the side lengths where the global maxima occur, the
    /// 16-bit image `2^16 - 1` where the composite coefficient is positive and 0 elsewhere
    /// gives a band value equal to the linear prediction up to the rounding allowance, and
    /// within 0.01% + the allowance of the bound.
    #[test]
    fn band_bounds_are_reached() {
        let bounds = band_bounds();
        // The side lengths (33..=160) where each scale's largest low-pass and high-pass forms
        // occur, and those positions.
        let mut worst: [[(u128, usize, usize); 2]; 4] = [[(0, 0, 0); 2]; 4];
        for n in 33..=160 {
            for (s, outs) in composites(n).iter().enumerate() {
                for (j, (lo, hi)) in outs.iter().enumerate() {
                    for (k, f) in [lo, hi].into_iter().enumerate() {
                        if f.l1() > worst[s][k].0 {
                            worst[s][k] = (f.l1(), n, j);
                        }
                    }
                }
            }
        }
        let mut bad = Vec::new();
        let mut total = 0u32;
        let mut slack = 0f64;
        for s in 0..4 {
            for sh in [DWT_SHIFTS[s].0, DWT_SHIFTS[s].1] {
                total += sh;
                slack = slack * 54822.0 / 2f64.powi(sh as i32) + if sh > 0 { 0.5 } else { 0.0 };
            }
            if s == 0 {
                continue;
            }
            // (orientation, vertical form kind, horizontal form kind); kind 0 low, 1 high.
            for (theta, kv, kh) in [(0usize, 1usize, 0usize), (1, 0, 1), (2, 1, 1)] {
                let (_, h, i) = worst[s][kv];
                let (_, w, j) = worst[s][kh];
                let cv = &composites(h)[s][i];
                let ch = &composites(w)[s][j];
                let fv = if kv == 0 { &cv.0 } else { &cv.1 };
                let fh = if kh == 0 { &ch.0 } else { &ch.1 };
                let coef = |f: &Form, x: usize| {
                    x.checked_sub(f.start)
                        .and_then(|k| f.coef.get(k))
                        .copied()
                        .unwrap_or(0)
                };
                let mut img = vec![0u16; w * h];
                let mut predicted = 0f64;
                for y in 0..h {
                    for x in 0..w {
                        let c = coef(fv, y) * coef(fh, x);
                        let px = if c > 0 { u16::MAX } else { 0 };
                        img[y * w + x] = px;
                        predicted += c as f64 * (px as f64 - 32768.0);
                    }
                }
                // C . q over 2^(total shift), q = x - 2^15 (the scale-0 vertical pass's shift
                // is part of the total).
                predicted /= 2f64.powi(total as i32);
                let bands = dwt_bands(&img, w, h, 16);
                let bw = geometry(w, h)[s].width;
                let got = bands[s][theta][i * bw + j] as f64;
                let bound = bounds[s][[0, 0, 1][theta]] as f64;
                if (got - predicted).abs() > slack || got < bound * 0.9999 - 2.0 * slack {
                    bad.push(format!(
                        "scale {s} theta {theta} ({w}x{h} at {i},{j}): got {got}, linear \
                         {predicted}, bound {bound}, allowance {slack}"
                    ));
                }
                for (t, band) in bands.iter().enumerate() {
                    for (o, b) in band.iter().enumerate() {
                        let lim = bounds[t][[0, 0, 1][o]] as i64;
                        let m = b.iter().map(|&v| (v as i64).abs()).max().unwrap();
                        if m > lim {
                            bad.push(format!("scale {t} theta {o}: |band| {m} > {lim}"));
                        }
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// Every CSF factor set that validation accepts: Watson's (largest at nvd * rdh = 3240,
    /// where scale 0 takes the hard-coded factors) and each blend table's.
    fn factor_sets() -> Vec<(String, AdmConstants)> {
        let mut out = vec![(
            "Watson 1080@3".to_string(),
            AdmConstants::new(&AdmParams::default()),
        )];
        for (rdh, nvd) in BLENDED_CSF.iter().map(|(k, _)| *k).chain([(2160, 1.5)]) {
            let p = AdmParams {
                csf_mode: CSF_MODE_BARTEN_WATSON_BLEND,
                norm_view_dist: nvd,
                ref_display_height: rdh,
                ..AdmParams::default()
            };
            if p.validate().is_ok() {
                out.push((format!("blend {rdh}@{nvd}"), AdmConstants::new(&p)));
            }
        }
        out
    }

    /// Watson's factors shrink as nvd * rdh grows (what the bounds use: the default is the
    /// largest), and no blend table that validation accepts has a scale-0 factor above the
    /// hard-coded Watson ones, so every scale-0 bound of [`AdmScaleAccum`] (written for
    /// 36 453 / 49 417) holds for both CSFs.
    #[test]
    fn csf_factors_largest_cases() {
        let def = AdmConstants::new(&AdmParams::default());
        let mut bad = Vec::new();
        for rdh in [1080u32, 1440, 2160, 4320] {
            for k in 0..=96 {
                let nvd = 0.75 + 0.25 * k as f64;
                let p = AdmParams {
                    norm_view_dist: nvd,
                    ref_display_height: rdh,
                    ..AdmParams::default()
                };
                if p.validate().is_err() {
                    continue;
                }
                let c = AdmConstants::new(&p);
                let s0_ok = c
                    .rfactor_s0
                    .iter()
                    .zip(def.rfactor_s0)
                    .all(|(a, b)| *a <= b);
                let s123_ok = (1..4).all(|s| {
                    c.rfactor_s123[s]
                        .iter()
                        .zip(def.rfactor_s123[s])
                        .all(|(a, b)| *a <= b)
                });
                if !s0_ok || !s123_ok {
                    bad.push(format!("Watson {rdh}@{nvd}: {c:?}"));
                }
            }
        }
        for (name, c) in factor_sets() {
            if c.rfactor_s0.iter().zip(def.rfactor_s0).any(|(a, b)| *a > b) {
                bad.push(format!("{name}: scale 0 {:?}", c.rfactor_s0));
            }
            for s in 1..4 {
                if c.rfactor_s123[s].iter().any(|&f| f >= 1 << 28) {
                    bad.push(format!("{name}: scale {s} {:?} >= 2^28", c.rfactor_s123[s]));
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// The scale 1-3 numerator bounds of [`AdmScaleAccum::num`] for every accepted CSF: the
    /// largest CSF value `|csf| = ((B + 1) * rfactor + 2^27) >> 28` (`B + 1`: the decoupled
    /// `a = t - r` is at most `|t| + 1`), the threshold (at least -27: each of the 27 terms is
    /// at least -1, libvmaf's -2^31 rounding) and so the largest `x = |csf| - thr`; `x_sq =
    /// (x^2 + 2^29) >> 30` must fit int32 (x <= 1 518 500 249), and the row and total sums at
    /// 16K must fit int64. Prints the table of the documentation.
    #[test]
    fn scale123_numerator_bounds_every_csf() {
        let b = band_bounds();
        let geo = geometry(15360, 8640);
        let mut bad = Vec::new();
        // Per CSF: name, then per scale 1-3 [h,v; d] of `x` and of the 16K total.
        type PerScale = [[i128; 2]; 3];
        let mut table: Vec<(String, PerScale, PerScale)> = Vec::new();
        for (name, c) in factor_sets() {
            let (mut xs, mut totals) = ([[0i128; 2]; 3], [[0i128; 2]; 3]);
            for s in 1..4 {
                let g = &geo[s];
                let (cub, inner) = cm_shifts_s123(g);
                // Threshold: the 8 neighbours' flt and the centre term of each orientation.
                let mut thr = 0i128;
                let mut x_max = [0i128; 3];
                for theta in 0..3 {
                    let bb = b[s][if theta < 2 { 0 } else { 1 }] as i128 + 1;
                    let f = c.rfactor_s123[s][theta] as i128;
                    let csf = (bb * f + (1 << 27)) >> 28;
                    let flt = (I4_FIX_ONE_BY_30 as i128 * csf + I4_FLT_ROUND as i128) >> 32;
                    let centre = (I4_ONE_BY_15 as i128 * csf + I4_FLT_ROUND as i128) >> 32;
                    thr += 8 * flt + centre;
                    x_max[theta] = csf + 27;
                }
                if thr > i32::MAX as i128 {
                    bad.push(format!("{name} scale {s}: threshold {thr} > i32::MAX"));
                }
                for (theta, &x) in x_max.iter().enumerate() {
                    let x_sq = (x * x + (1 << 29)) >> 30;
                    if x_sq > i32::MAX as i128 {
                        bad.push(format!("{name} scale {s} theta {theta}: x_sq {x_sq} wraps"));
                    }
                    let term = (x_sq * x + (1 << (cub - 1))) >> cub;
                    let row = term * g.inner.width() as i128;
                    let total = g.inner.height() as i128 * ((row + (1 << (inner - 1))) >> inner);
                    if row > i64::MAX as i128 || total > i64::MAX as i128 {
                        bad.push(format!("{name} scale {s} theta {theta}: {row} {total}"));
                    }
                    if theta != 1 {
                        eprintln!(
                            "{name:>16} scale {s} {}: rfactor {:>9} x <= {x:>10} \
                             row <= {row:.3e} total <= {total:.3e}",
                            ["h,v", "", "d"][theta],
                            c.rfactor_s123[s][theta],
                            row = row as f64,
                            total = total as f64,
                        );
                        xs[s - 1][theta / 2] = x;
                        totals[s - 1][theta / 2] = total;
                    }
                }
            }
            table.push((name, xs, totals));
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
        let find = |n: &str| table.iter().find(|t| t.0 == n).unwrap();
        // The numbers of the documentation: Watson at 3 * 1080 and the blend's 1080_3H table
        // (the same as 2160_1.5H) bound every accepted CSF, scale by scale.
        let (watson, blend) = (find("Watson 1080@3"), find("blend 1080@3"));
        assert_eq!(find("blend 2160@1.5").1, blend.1);
        assert_eq!(
            watson.1,
            [
                [773_181_546, 322_096_860],
                [539_175_509, 293_375_646],
                [564_429_615, 368_994_234]
            ]
        );
        assert_eq!(
            blend.1,
            [
                [604_963_099, 265_307_984],
                [533_921_323, 287_616_717],
                [724_435_233, 423_063_024]
            ]
        );
        for (name, xs, totals) in &table {
            for s in 0..3 {
                for k in 0..2 {
                    let lim = watson.1[s][k].max(blend.1[s][k]);
                    let tlim = watson.2[s][k].max(blend.2[s][k]);
                    assert!(
                        xs[s][k] <= lim && totals[s][k] <= tlim,
                        "{name} scale {}",
                        s + 1
                    );
                }
            }
        }
        let largest_total = table.iter().flat_map(|t| t.2.concat()).max().unwrap();
        assert!(largest_total < 1.4e17 as i128, "{largest_total}");
    }

    #[test]
    fn dwt_indices_mirror_like_libvmaf() {
        assert_eq!(
            dwt_indices(5),
            vec![[1, 0, 1, 2], [1, 2, 3, 4], [3, 4, 4, 3]]
        );
        assert_eq!(
            dwt_indices(6),
            vec![[1, 0, 1, 2], [1, 2, 3, 4], [3, 4, 5, 5]]
        );
        let t = dwt_indices(33);
        assert_eq!(t.len(), 17);
        assert_eq!(t[1], [1, 2, 3, 4]);
        assert_eq!(t[15], [29, 30, 31, 32]);
        assert_eq!(t[16], [31, 32, 32, 31]);
        // 33 is the smallest size whose scale-3 DWT input (5) has a valid table.
        assert_eq!(geometry(33, 33)[3].in_width, 5);
        assert_eq!(geometry(32, 32)[3].in_width, 4);
    }

    #[test]
    fn geometry_of_carphone() {
        let g = geometry(176, 144);
        assert_eq!((g[0].width, g[0].height), (88, 72));
        assert_eq!(
            g[0].inner,
            Rect {
                left: 8,
                top: 6,
                right: 80,
                bottom: 66
            }
        );
        assert_eq!(
            g[0].outer,
            Rect {
                left: 7,
                top: 5,
                right: 83,
                bottom: 69
            }
        );
        assert_eq!((g[3].width, g[3].height), (11, 9));
        // 1.1 - 0.5 truncates to 0: the region reaches the border at scale 3.
        assert_eq!(g[3].inner.left, 0);
        assert_eq!(
            g[3].outer,
            Rect {
                left: 0,
                top: 0,
                right: 11,
                bottom: 9
            }
        );
    }

    /// Constants against a C program that evaluates libvmaf's expressions with gcc and glibc.
    #[test]
    fn constants_match_libvmaf_expressions() {
        let c = AdmConstants::new(&AdmParams::default());
        assert_eq!(c.cos_1deg_sq.to_bits(), 0x3f7fec0a);
        let want = [
            [0x3c8e63ba, 0x3bc106aa],
            [0x3d030286, 0x3c6a46a3],
            [0x3d31a788, 0x3cc7dc06],
            [0x3d3b140b, 0x3d0041c9],
        ];
        assert_eq!(c.csf_factor.map(|f| f.map(f32::to_bits)), want);
        assert_eq!(c.rfactor_s0, [36453, 36453, 49417]);
        assert_eq!(c.rfactor_s123[1], [137373792, 137373792, 61414028]);
        assert_eq!(c.rfactor_s123[2], [186284160, 186284160, 104783920]);
        assert_eq!(c.rfactor_s123[3], [196165808, 196165808, 134487184]);

        let p = AdmParams {
            norm_view_dist: 4.5,
            ref_display_height: 2160,
            ..AdmParams::default()
        };
        let c = AdmConstants::new(&p);
        let want = [
            [0x3b067743, 0x3a09e8d6],
            [0x3ba86227, 0x3ae3ce8c],
            [0x3c1b61f5, 0x3b843ff2],
            [0x3c5eb1fa, 0x3be70426],
        ];
        assert_eq!(c.csf_factor.map(|f| f.map(f32::to_bits)), want);
        assert_eq!(c.rfactor_s0, [4302, 4302, 4413]);
        assert_eq!(c.rfactor_s123[3], [58378216, 58378216, 30279756]);
    }

    /// Mode 2 constants against a C program that includes libvmaf's barten_csf_tools.h and
    /// evaluates `barten_watson_blend_csf` and the `(uint16_t)(f * pow(2, 21))` (`2^23` for d)
    /// and `(uint32_t)(f * pow(2, 32))` conversions with gcc 12 and glibc, for every
    /// `(rdh, nvd)` pair that validation accepts in mode 2. Scale 0 does not take Watson's
    /// hard-coded 36453/49417 in mode 2, even at 3 * 1080.
    #[test]
    fn blend_constants_match_libvmaf() {
        #[rustfmt::skip]
        // (rdh, nvd), the float factors' bits per scale [h,v; d], scale-0 i_rfactor [h,v; d],
        // scales 1-3 rfactor [h,v; d].
        type Case = ((u32, f64), [[u32; 2]; 4], [u16; 2], [[u32; 2]; 3]);
        let cases: [Case; 6] = [
            (
                (1080, 3.0),
                [
                    [0x3c41d29e, 0x3b8cf7cb],
                    [0x3ccd0353, 0x3c40f883],
                    [0x3d2fec57, 0x3cc3efae],
                    [0x3d701c93, 0x3d130ced],
                ],
                [24809, 36087],
                [
                    [107485848, 50586124],
                    [184468848, 102727024],
                    [251775280, 154193616],
                ],
            ),
            (
                (1080, 5.0),
                [
                    [0x3b8a04d1, 0x3a80f990],
                    [0x3c72a173, 0x3bbfc222],
                    [0x3cf2d3c8, 0x3c6f34d7],
                    [0x3d42699c, 0x3ce1e2df],
                ],
                [8833, 8254],
                [
                    [63604172, 25134148],
                    [127311424, 62706524],
                    [203856320, 118429432],
                ],
            ),
            (
                (2160, 1.5),
                [
                    [0x3c41d29e, 0x3b8cf7cb],
                    [0x3ccd0353, 0x3c40f883],
                    [0x3d2fec57, 0x3cc3efae],
                    [0x3d701c93, 0x3d130ced],
                ],
                [24809, 36087],
                [
                    [107485848, 50586124],
                    [184468848, 102727024],
                    [251775280, 154193616],
                ],
            ),
            (
                (2160, 3.0),
                [
                    [0x3b141c82, 0x39fb224b],
                    [0x3c41d29e, 0x3b8cf7cb],
                    [0x3ccd0353, 0x3c40f883],
                    [0x3d2fec57, 0x3cc3efae],
                ],
                [4739, 4018],
                [
                    [50809464, 18476950],
                    [107485848, 50586124],
                    [184468848, 102727024],
                ],
            ),
            (
                (2160, 5.0),
                [
                    [0x38c0f020, 0x3851b717],
                    [0x3b8a04d1, 0x3a80f990],
                    [0x3c72a173, 0x3bbfc222],
                    [0x3cf2d3c8, 0x3c6f34d7],
                ],
                [192, 419],
                [
                    [18090402, 4226248],
                    [63604172, 25134148],
                    [127311424, 62706524],
                ],
            ),
            (
                (720, 5.0),
                [
                    [0x3c263305, 0x3b62f380],
                    [0x3cb8d1d9, 0x3c2875d5],
                    [0x3d251b0d, 0x3cb2e7b4],
                    [0x3d68533b, 0x3d0de3b9],
                ],
                [21273, 29049],
                [
                    [96898760, 44160852],
                    [173125840, 93797792],
                    [243610544, 148781968],
                ],
            ),
        ];
        let mut bad = Vec::new();
        for ((rdh, nvd), bits, s0, s123) in cases {
            let p = AdmParams {
                csf_mode: CSF_MODE_BARTEN_WATSON_BLEND,
                norm_view_dist: nvd,
                ref_display_height: rdh,
                ..AdmParams::default()
            };
            if let Err(e) = p.validate() {
                bad.push(format!("{rdh}@{nvd}: {e}"));
            }
            let c = AdmConstants::new(&p);
            let got = (
                c.csf_factor.map(|f| f.map(f32::to_bits)),
                c.rfactor_s0,
                [1, 2, 3].map(|s| [c.rfactor_s123[s][0], c.rfactor_s123[s][2]]),
            );
            let want = (bits, [s0[0], s0[0], s0[1]], s123);
            let hv_equal = (1..4).all(|s| c.rfactor_s123[s][0] == c.rfactor_s123[s][1]);
            if got != want || !hv_equal {
                bad.push(format!("{rdh}@{nvd}: got {got:?}, want {want:?}"));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// `adm_csf_mode`: 0 and 2 are accepted (2 only with a table and nvd * rdh >= 3240), 1 and
    /// 3 refused as not implemented, anything else as out of libvmaf's range; each error names
    /// what it refuses.
    #[test]
    fn csf_mode_validation() {
        let mode = |m: i32, rdh: u32, nvd: f64| AdmParams {
            csf_mode: m,
            norm_view_dist: nvd,
            ref_display_height: rdh,
            ..AdmParams::default()
        };
        let err = |p: AdmParams| match p.validate() {
            Err(Error::Model(m)) => m,
            other => panic!("{p:?}: {other:?}"),
        };
        for (rdh, nvd) in [
            (1080, 3.0),
            (1080, 5.0),
            (2160, 1.5),
            (2160, 3.0),
            (2160, 5.0),
            (720, 5.0),
        ] {
            assert!(mode(2, rdh, nvd).validate().is_ok(), "{rdh}@{nvd}");
        }
        // Watson takes any viewing condition from 3240 on.
        assert!(mode(0, 1080, 4.0).validate().is_ok());
        for (rdh, nvd) in [
            (1080, 4.0),
            (1080, 3.0000001),
            (1440, 3.0),
            (4320, 1.5),
            (2160, 2.0),
        ] {
            let m = err(mode(2, rdh, nvd));
            assert!(
                m.contains("adm_csf_mode 2")
                    && m.contains(&format!("adm_ref_display_height {rdh} "))
                    && m.contains(&format!("adm_norm_view_dist {nvd} ")),
                "{m}"
            );
            assert!(
                m.contains("1080@3, 1080@5, 2160@3, 2160@5, 720@5, 2160@1.5"),
                "{m}"
            );
        }
        // A table, but below libvmaf's 3 * 1080.
        for (rdh, nvd) in [(720, 3.0), (480, 3.0), (480, 5.0)] {
            assert!(err(mode(2, rdh, nvd)).contains("below libvmaf's minimum 3240"));
        }
        for m in [1, 3] {
            let e = err(mode(m, 1080, 3.0));
            assert!(
                e.contains(&format!("adm_csf_mode {m}")) && e.contains("not implemented"),
                "{e}"
            );
        }
        for m in [-1, 4] {
            assert!(err(mode(m, 1080, 3.0)).contains("outside libvmaf's range 0 to 3"));
        }
        // Refused parameters still give constants without panicking.
        let c = AdmConstants::new(&mode(2, 1080, 4.0));
        assert_eq!((c.rfactor_s0, c.csf_factor[3]), ([0; 3], [-22.0; 2]));
    }

    #[test]
    fn div_lookup_is_libvmafs() {
        let t = div_lookup();
        assert_eq!(t[32768], 0);
        assert_eq!(t[32769], 1 << 30);
        assert_eq!(t[32767], -(1 << 30));
        assert_eq!(t[32768 + 3], 357913941);
        assert_eq!(t[32768 + 32768], 32768);
        assert_eq!(t[0], -32768);
    }

    #[test]
    fn best15_is_get_best15_from32() {
        assert_eq!(best15(0), (0, 0));
        assert_eq!(best15(32767), (32767, 0));
        // clz(32768) = 16: shift 1.
        assert_eq!(best15(32768), (16384, 1));
        assert_eq!(best15(65535), (32768, 1));
        assert_eq!(best15(0x7fff_ffff), (32768, 16));
        assert_eq!(best15(1_000_000), ((1_000_000 + 16) >> 5, 5));
    }

    #[test]
    fn bad_input_is_refused() {
        let p = AdmParams::default();
        let v = vec![0u16; 64 * 64];
        let plane = |w, h, bpc| Plane::from_slice(&v, w, h, bpc);
        assert!(matches!(
            check(&plane(32, 33, 8), &plane(32, 33, 8), &p),
            Err(Error::TooSmall { .. })
        ));
        assert!(matches!(
            check(&plane(40, 40, 8), &plane(40, 41, 8), &p),
            Err(Error::Mismatch(_))
        ));
        assert!(matches!(
            check(&plane(40, 40, 7), &plane(40, 40, 7), &p),
            Err(Error::BitDepth(7))
        ));
        let short = Plane {
            data: &v[..100],
            width: 40,
            height: 40,
            stride: 40,
            bpc: 8,
        };
        assert!(matches!(check(&short, &short, &p), Err(Error::Geometry(_))));
        assert!(check(&plane(33, 33, 16), &plane(33, 33, 16), &p).is_ok());
        for bad in [
            AdmParams {
                enhn_gain_limit: 0.5,
                ..p
            },
            AdmParams {
                norm_view_dist: 1.0,
                ..p
            },
            AdmParams {
                ref_display_height: 5000,
                ..p
            },
            AdmParams {
                dlm_weight: 1.5,
                ..p
            },
        ] {
            assert!(matches!(bad.validate(), Err(Error::Model(_))), "{bad:?}");
        }
        assert!(
            AdmParams {
                norm_view_dist: 0.75,
                ref_display_height: 4320,
                ..p
            }
            .validate()
            .is_ok()
        );
    }
}
