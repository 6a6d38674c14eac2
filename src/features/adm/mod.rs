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
use portable::{
    DwtOut, cm_s0, cm_s123, csf_s0, csf_s123, decouple_s0, decouple_s123, den_s0, den_s123, dwt_s0,
    dwt_s123,
};

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
/// model (`dwt_quant_step`); libvmaf's default.
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
        let band = || super::scratch(n, "the ADM scale-0 bands");
        Bands16 {
            a: band(),
            h: band(),
            v: band(),
            d: band(),
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
        let band = || super::scratch(n, "the ADM scale 1-3 bands");
        Bands32 {
            a: [band(), band()],
            h: band(),
            v: band(),
            d: band(),
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
        let plane16 = || super::scratch::<i16>(n0, "the ADM scale-0 CSF planes");
        let plane32 = || super::scratch::<i32>(n1, "the ADM scale 1-3 CSF planes");
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
/// The portable kernels, the reference of the x86 ones: the shared row helpers, scale 0 (16-bit
/// bands) and scales 1-3 (32-bit bands).
mod portable;

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
mod x86;

#[cfg(test)]
mod tests;
