//! Which feature a model input is, with which extractor options, and the name libvmaf reports it
//! under.
//!
//! A VMAF model names its inputs with libvmaf's internal feature names
//! (`VMAF_integer_feature_vif_scale0_score`) and may give each one extractor options
//! (`feature_opts_dicts`, e.g. `{"vif_enhn_gain_limit": 1.0}` in vmaf_v0.6.1neg). libvmaf
//! 3.2.0 then
//! 1. finds the extractor providing the name (libvmaf/src/feature/feature_extractor.c:
//!    `vmaf_get_feature_extractor_by_feature_name`),
//! 2. normalises numeric option values (libvmaf/src/dict.c: `strtof`, then `"%g"`) and parses
//!    them into the extractor's option fields with range checks (libvmaf/src/opt.c),
//! 3. appends `_<alias>_<value>` for every non-default feature parameter, sorted by option name,
//!    to the aliased feature name (libvmaf/src/feature/feature_name.c), giving e.g.
//!    `integer_vif_scale0_egl_1`.
//!
//! This module does the same for the extractors vmafgpu computes: libvmaf's integer `vif`,
//! `adm` and `motion`, `cambi`, `speed_chroma` and `speed_temporal`. The option tables below are
//! those of libvmaf 3.2.0 libvmaf/src/feature/integer_vif.c, integer_adm.c, integer_motion.c,
//! cambi.c and speed.c (`options[]`).

use std::borrow::Cow;

/// A libvmaf feature extractor whose features a model can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extractor {
    /// libvmaf's integer `vif` (features `VMAF_integer_feature_vif_scale0_score`, ...).
    Vif,
    /// libvmaf's integer `adm` (`VMAF_integer_feature_adm2_score`, `integer_adm_scale0`, ...).
    Adm,
    /// libvmaf's integer `motion` (`VMAF_integer_feature_motion2_score`, ...).
    Motion,
    /// libvmaf's `cambi` (`Cambi_feature_cambi_score`).
    Cambi,
    /// libvmaf's `speed_chroma` (`Speed_chroma_feature_speed_chroma_{u,v,uv}_score`).
    SpeedChroma,
    /// libvmaf's `speed_temporal` (`Speed_temporal_feature_speed_temporal_score`).
    SpeedTemporal,
}

impl Extractor {
    /// libvmaf's extractor name (`vmaf --feature <name>`).
    pub fn name(self) -> &'static str {
        match self {
            Extractor::Vif => "vif",
            Extractor::Adm => "adm",
            Extractor::Motion => "motion",
            Extractor::Cambi => "cambi",
            Extractor::SpeedChroma => "speed_chroma",
            Extractor::SpeedTemporal => "speed_temporal",
        }
    }

    /// The extractor of a libvmaf extractor name (`vmaf --feature <name>`, a model parameter's
    /// `<name>.<option>`).
    pub fn from_name(name: &str) -> Option<Extractor> {
        [
            Extractor::Vif,
            Extractor::Adm,
            Extractor::Motion,
            Extractor::Cambi,
            Extractor::SpeedChroma,
            Extractor::SpeedTemporal,
        ]
        .into_iter()
        .find(|e| e.name() == name)
    }

    fn table(self) -> &'static [OptDef] {
        match self {
            Extractor::Vif => VIF_OPTIONS,
            Extractor::Adm => ADM_OPTIONS,
            Extractor::Motion => MOTION_OPTIONS,
            Extractor::Cambi => CAMBI_OPTIONS,
            Extractor::SpeedChroma => SPEED_CHROMA_OPTIONS,
            Extractor::SpeedTemporal => SPEED_TEMPORAL_OPTIONS,
        }
    }
}

/// Options of libvmaf's integer `vif` extractor (integer_vif.c `options[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct VifOptions {
    /// `vif_enhn_gain_limit` (alias `egl`), 1.0..=100.0, default 100.0.
    pub enhn_gain_limit: f64,
    /// `vif_skip_scale0` (alias `ssclz`), default false.
    pub skip_scale0: bool,
    /// `debug` (not a feature parameter), default false.
    pub debug: bool,
}

/// Options of libvmaf's integer `adm` extractor (integer_adm.c `options[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct AdmOptions {
    /// `adm_csf_scale` (`scf`), 0..=50, default 1.0.
    pub csf_scale: f64,
    /// `adm_csf_diag_scale` (`scfd`), 0..=50, default 1.0.
    pub csf_diag_scale: f64,
    /// `adm_dlm_weight` (`dlmw`), 0..=1, default 0.5.
    pub dlm_weight: f64,
    /// `adm_enhn_gain_limit` (`egl`), 1..=100, default 100.0.
    pub enhn_gain_limit: f64,
    /// `adm_norm_view_dist` (`nvd`), 0.75..=24, default 3.0.
    pub norm_view_dist: f64,
    /// `adm_ref_display_height` (`rdh`), 1..=4320, default 1080.
    pub ref_display_height: i32,
    /// `adm_csf_mode` (`csf`), 0..=3, default 0 (Watson 97).
    pub csf_mode: i32,
    /// `adm_noise_weight` (`nw`), 0..=1500, default 0.03125.
    pub noise_weight: f64,
    /// `adm_skip_aim` (not a feature parameter), default false.
    pub skip_aim: bool,
    /// `adm_skip_scale0` (`ssz`), default false.
    pub skip_scale0: bool,
    /// `adm_min_val` (`min`), 0..=1, default 0.0.
    pub min_val: f64,
    /// `debug` (not a feature parameter), default false.
    pub debug: bool,
}

/// Options of libvmaf's integer `motion` extractor (integer_motion.c `options[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct MotionOptions {
    /// `motion_force_zero` (`force_0`), default false.
    pub force_zero: bool,
    /// `motion_blend_factor` (`mbf`), 0..=1, default 1.0.
    pub blend_factor: f64,
    /// `motion_blend_offset` (`mbo`), 0..=1000, default 40.0.
    pub blend_offset: f64,
    /// `motion_fps_weight` (`mfw`), 0..=5, default 1.0.
    pub fps_weight: f64,
    /// `motion_max_val` (`mmxv`), 0..=10000, default 10000.0.
    pub max_val: f64,
    /// `motion_five_frame_window` (`mffw`), default false.
    pub five_frame_window: bool,
    /// `motion_moving_average` (`mma`), default false.
    pub moving_average: bool,
    /// `debug` (not a feature parameter), default false.
    pub debug: bool,
}

/// Options of libvmaf's `cambi` extractor (cambi.c `options[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct CambiOptions {
    /// `cambi_max_val` (`cmxv`), 0..=1000, default 1000.0.
    pub max_val: f64,
    /// `enc_width` (`encw`), 180..=7680 when set, default 0 (the input's).
    pub enc_width: i32,
    /// `enc_height` (`ench`), 150..=7680 when set, default 0 (the input's).
    pub enc_height: i32,
    /// `enc_bitdepth` (`encbd`), 6..=16 when set, default 0 (the input's).
    pub enc_bitdepth: i32,
    /// `src_width` (`srcw`), 320..=7680 when set, default 0 (full_ref only).
    pub src_width: i32,
    /// `src_height` (`srch`), 200..=4320 when set, default 0 (full_ref only).
    pub src_height: i32,
    /// `window_size` (`ws`), 15..=127, default 65.
    pub window_size: i32,
    /// `topk` (no alias), 0.0001..=1, default 0.6; wins over `cambi_topk` when not the default.
    pub topk: f64,
    /// `cambi_topk` (`ctpk`), 0.0001..=1, default 0.6.
    pub cambi_topk: f64,
    /// `tvi_threshold` (`tvit`), 0.0001..=1, default 0.019.
    pub tvi_threshold: f64,
    /// `cambi_vis_lum_threshold` (`vlt`), 0..=300, default 0.0.
    pub vis_lum_threshold: f64,
    /// `max_log_contrast` (`mlc`), 0..=5, default 2.
    pub max_log_contrast: i32,
    /// `heatmaps_path` (not a feature parameter; vmafgpu writes no heatmaps and refuses it).
    pub heatmaps_path: Option<String>,
    /// `full_ref` (not a feature parameter), default false.
    pub full_ref: bool,
    /// `eotf` (string, no alias), default `bt1886`.
    pub eotf: String,
    /// `cambi_eotf` (`ceot`, string), default `bt1886`; wins over `eotf` when not the default.
    pub cambi_eotf: String,
    /// `cambi_high_res_speedup` (`hrs`), 0..=2160, default 0.
    pub high_res_speedup: i32,
}

/// Options of libvmaf's `speed_chroma` extractor (speed.c `options_chroma[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedChromaOptions {
    /// `speed_kernelscale` (`ks`), 0.1..=4, default 1.0.
    pub kernelscale: f64,
    /// `speed_prescale` (`ps`), 0.1..=4, default 1.0.
    pub prescale: f64,
    /// `speed_prescale_method` (`psm`, string), default `nearest`.
    pub prescale_method: String,
    /// `speed_sigma_nn` (`snn`), 0.1..=2, default 0.29.
    pub sigma_nn: f64,
    /// `speed_nn_floor` (`nnf`), 0..=1, default 0.0.
    pub nn_floor: f64,
    /// `speed_max_val` (`mxv`), 0..=1000, default 1000.0.
    pub max_val: f64,
    /// `speed_weight_var_mode` (`wvm`), 0..=6, default 0.
    pub weight_var_mode: i32,
}

/// Options of libvmaf's `speed_temporal` extractor (speed.c `options[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedTemporalOptions {
    /// `speed_kernelscale` (`ks`), 0.1..=4, default 1.0.
    pub kernelscale: f64,
    /// `speed_prescale` (`ps`), 0.1..=4, default 1.0.
    pub prescale: f64,
    /// `speed_prescale_method` (`psm`, string), default `nearest`.
    pub prescale_method: String,
    /// `speed_sigma_nn` (`snn`), 0.1..=2, default 0.29.
    pub sigma_nn: f64,
    /// `speed_nn_floor` (`nnf`), 0..=1, default 0.0.
    pub nn_floor: f64,
    /// `speed_max_val` (`mxv`), 0..=1000, default 1000.0 (libvmaf never applies it here).
    pub max_val: f64,
    /// `speed_use_ref_diff` (`urd`), default false.
    pub use_ref_diff: bool,
}

impl Default for VifOptions {
    fn default() -> Self {
        VifOptions::from_values(&defaults(VIF_OPTIONS))
    }
}

impl Default for AdmOptions {
    fn default() -> Self {
        AdmOptions::from_values(&defaults(ADM_OPTIONS))
    }
}

impl Default for MotionOptions {
    fn default() -> Self {
        MotionOptions::from_values(&defaults(MOTION_OPTIONS))
    }
}

impl Default for CambiOptions {
    fn default() -> Self {
        CambiOptions::from_values(&defaults(CAMBI_OPTIONS))
    }
}

impl Default for SpeedChromaOptions {
    fn default() -> Self {
        SpeedChromaOptions::from_values(&defaults(SPEED_CHROMA_OPTIONS))
    }
}

impl Default for SpeedTemporalOptions {
    fn default() -> Self {
        SpeedTemporalOptions::from_values(&defaults(SPEED_TEMPORAL_OPTIONS))
    }
}

/// The extractor a model feature comes from, with the options the model asks for (defaults
/// filled in).
#[derive(Clone, Debug, PartialEq)]
pub enum ExtractorOptions {
    Vif(VifOptions),
    Adm(AdmOptions),
    Motion(MotionOptions),
    Cambi(CambiOptions),
    SpeedChroma(SpeedChromaOptions),
    SpeedTemporal(SpeedTemporalOptions),
}

impl ExtractorOptions {
    pub fn extractor(&self) -> Extractor {
        match self {
            ExtractorOptions::Vif(_) => Extractor::Vif,
            ExtractorOptions::Adm(_) => Extractor::Adm,
            ExtractorOptions::Motion(_) => Extractor::Motion,
            ExtractorOptions::Cambi(_) => Extractor::Cambi,
            ExtractorOptions::SpeedChroma(_) => Extractor::SpeedChroma,
            ExtractorOptions::SpeedTemporal(_) => Extractor::SpeedTemporal,
        }
    }

    /// The extractor's options from a libvmaf options dictionary (`key`, value text), e.g. a
    /// `--feature cambi=full_ref=true` of libvmaf's tool: numbers are normalised as libvmaf's
    /// dictionaries do, unknown keys are ignored, bad values are errors naming the option.
    pub fn from_dict(
        extractor: Extractor,
        dict: &[(String, String)],
    ) -> Result<ExtractorOptions, String> {
        let dict: Vec<(&str, String)> = dict
            .iter()
            .map(|(k, v)| (k.as_str(), normalize_text(v)))
            .collect();
        let values = values_of(extractor.table(), extractor.name(), &dict)?;
        Ok(ExtractorOptions::from_values(extractor, &values))
    }

    /// The name libvmaf reports `feature` (one of the extractor's provided features) under with
    /// these options: the plain (aliased) name at default options, else with libvmaf's suffix.
    pub fn feature_name(&self, feature: &str) -> String {
        let table = self.extractor().table();
        alias(&feature_name_from_options(feature, table, &self.values())).to_string()
    }

    fn from_values(extractor: Extractor, values: &[OptValue]) -> ExtractorOptions {
        match extractor {
            Extractor::Vif => ExtractorOptions::Vif(VifOptions::from_values(values)),
            Extractor::Adm => ExtractorOptions::Adm(AdmOptions::from_values(values)),
            Extractor::Motion => ExtractorOptions::Motion(MotionOptions::from_values(values)),
            Extractor::Cambi => ExtractorOptions::Cambi(CambiOptions::from_values(values)),
            Extractor::SpeedChroma => {
                ExtractorOptions::SpeedChroma(SpeedChromaOptions::from_values(values))
            }
            Extractor::SpeedTemporal => {
                ExtractorOptions::SpeedTemporal(SpeedTemporalOptions::from_values(values))
            }
        }
    }

    /// The option values in table order (the inverse of `from_values`).
    fn values(&self) -> Vec<OptValue> {
        use OptValue::{Bool as B, Double as D, Int as I};
        let st = |s: &str| OptValue::Str(Cow::Owned(s.to_string()));
        match self {
            ExtractorOptions::Vif(o) => vec![B(o.debug), D(o.enhn_gain_limit), B(o.skip_scale0)],
            ExtractorOptions::Adm(o) => vec![
                B(o.debug),
                D(o.csf_scale),
                D(o.csf_diag_scale),
                D(o.dlm_weight),
                D(o.enhn_gain_limit),
                D(o.norm_view_dist),
                I(o.ref_display_height),
                I(o.csf_mode),
                D(o.noise_weight),
                B(o.skip_aim),
                B(o.skip_scale0),
                D(o.min_val),
            ],
            ExtractorOptions::Motion(o) => vec![
                B(o.force_zero),
                D(o.blend_factor),
                D(o.blend_offset),
                D(o.fps_weight),
                D(o.max_val),
                B(o.five_frame_window),
                B(o.moving_average),
                B(o.debug),
            ],
            ExtractorOptions::Cambi(o) => vec![
                D(o.max_val),
                I(o.enc_width),
                I(o.enc_height),
                I(o.enc_bitdepth),
                I(o.src_width),
                I(o.src_height),
                I(o.window_size),
                D(o.topk),
                D(o.cambi_topk),
                D(o.tvi_threshold),
                D(o.vis_lum_threshold),
                I(o.max_log_contrast),
                match &o.heatmaps_path {
                    Some(p) => st(p),
                    None => OptValue::Str(Cow::Borrowed("")),
                },
                B(o.full_ref),
                st(&o.eotf),
                st(&o.cambi_eotf),
                I(o.high_res_speedup),
            ],
            ExtractorOptions::SpeedChroma(o) => vec![
                D(o.kernelscale),
                D(o.prescale),
                st(&o.prescale_method),
                D(o.sigma_nn),
                D(o.nn_floor),
                D(o.max_val),
                I(o.weight_var_mode),
            ],
            ExtractorOptions::SpeedTemporal(o) => vec![
                D(o.kernelscale),
                D(o.prescale),
                st(&o.prescale_method),
                D(o.sigma_nn),
                D(o.nn_floor),
                D(o.max_val),
                B(o.use_ref_diff),
            ],
        }
    }
}

/// One input of a model: what to compute and the name libvmaf reports it under.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFeature {
    /// The name in the model JSON (`feature_names`), e.g. `VMAF_integer_feature_vif_scale0_score`.
    pub model_name: String,
    /// The name libvmaf stores the value under in its feature collector: the model name when every
    /// option is at its default, else the aliased name with option suffixes
    /// (`integer_vif_scale0_egl_1`).
    pub collector_name: String,
    /// The name in libvmaf's reports (JSON/XML/CSV, `vmaf --json`): the collector name through
    /// libvmaf's alias table, e.g. `integer_vif_scale0` or `integer_vif_scale0_egl_1`.
    pub name: String,
    /// The extractor and its options.
    pub options: ExtractorOptions,
}

impl ModelFeature {
    pub fn extractor(&self) -> Extractor {
        self.options.extractor()
    }

    /// Resolve a model feature name and its `feature_opts_dicts` entry (JSON values) as libvmaf
    /// does. Errors name the feature and the option.
    pub(crate) fn resolve(
        model_name: &str,
        opts: &[(String, serde_json::Value)],
    ) -> Result<ModelFeature, String> {
        let extractor = extractor_of(model_name).ok_or_else(|| {
            format!(
                "feature {model_name:?} is not one vmafgpu computes (it has libvmaf's integer vif, adm and motion, cambi, speed_chroma and speed_temporal features)"
            )
        })?;
        let table = extractor.table();

        // libvmaf/src/read_json_model.c parse_feature_opts_dicts(): the dictionary values, as
        // strings (numbers normalised by libvmaf/src/dict.c).
        let mut dict: Vec<(&str, String)> = Vec::new();
        for (key, v) in opts {
            let s = match v {
                serde_json::Value::Number(n) => {
                    let d = n.as_f64().ok_or_else(|| {
                        format!("feature {model_name:?}: option {key:?}: number out of range")
                    })?;
                    normalize_number(d)
                }
                serde_json::Value::Bool(b) => b.to_string(),
                serde_json::Value::String(s) => s.clone(),
                _ => {
                    return Err(format!(
                        "feature {model_name:?}: option {key:?} must be a number, a boolean or a string"
                    ));
                }
            };
            dict.push((key.as_str(), s));
        }
        let values = values_of(table, model_name, &dict)?;
        let collector_name = feature_name_from_options(model_name, table, &values);
        let name = alias(&collector_name).to_string();
        let options = ExtractorOptions::from_values(extractor, &values);
        Ok(ModelFeature {
            model_name: model_name.to_string(),
            collector_name,
            name,
            options,
        })
    }
}

/// libvmaf/src/feature/feature_extractor.c vmaf_fex_ctx_parse_options() + libvmaf/src/opt.c
/// vmaf_option_set(): every option of the table, from the dictionary (the last entry of a key
/// wins, as libvmaf's merged dictionaries overwrite) or its default; keys that are not options of
/// the extractor are ignored. `what` names the feature in errors.
fn values_of(
    table: &[OptDef],
    what: &str,
    dict: &[(&str, String)],
) -> Result<Vec<OptValue>, String> {
    let mut values = Vec::with_capacity(table.len());
    for opt in table {
        let given = dict.iter().rev().find(|(k, _)| *k == opt.name);
        let v = match given {
            None => opt.default.clone(),
            Some((_, s)) => opt.parse(s).ok_or_else(|| {
                format!(
                    "feature {what:?}: option {}: bad value {s:?}{}",
                    opt.name,
                    opt.range_text()
                )
            })?,
        };
        values.push(v);
    }
    Ok(values)
}

/// libvmaf/src/dict.c vmaf_feature_dictionary_set(): a value that `sscanf("%f %c")` reads as one
/// number and nothing else is normalised (`strtof`, then `"%g"`); other text is kept as it is.
pub(crate) fn normalize_text(v: &str) -> String {
    let t = v.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let p = c_number_prefix(t);
    let rest = &t[p.len()..];
    if !p.is_empty() && rest.trim().is_empty() {
        format_g(c_atof(p) as f32 as f64)
    } else {
        v.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Option tables (libvmaf 3.2.0 integer_vif.c, integer_adm.c, integer_motion.c: `options[]`,
// defaults from integer_vif.h / integer_adm.h / integer_motion.c DEFAULT_* macros).

#[derive(Clone, Debug, PartialEq)]
enum OptValue {
    Bool(bool),
    Int(i32),
    Double(f64),
    /// VMAF_OPT_TYPE_STRING (the first such feature parameters: cambi's `eotf`, speed's
    /// `speed_prescale_method`); libvmaf takes any text and its extractor checks it at init.
    Str(Cow<'static, str>),
}

#[derive(Clone, Debug)]
struct OptDef {
    name: &'static str,
    alias: Option<&'static str>,
    default: OptValue,
    min: f64,
    max: f64,
    /// VMAF_OPT_FLAG_FEATURE_PARAM: a non-default value changes the feature's name.
    feature_param: bool,
}

const fn b(name: &'static str, alias: Option<&'static str>, param: bool) -> OptDef {
    OptDef {
        name,
        alias,
        default: OptValue::Bool(false),
        min: 0.0,
        max: 0.0,
        feature_param: param,
    }
}

const fn d(name: &'static str, alias: &'static str, default: f64, min: f64, max: f64) -> OptDef {
    OptDef {
        name,
        alias: Some(alias),
        default: OptValue::Double(default),
        min,
        max,
        feature_param: true,
    }
}

const fn st(name: &'static str, alias: Option<&'static str>, default: &'static str) -> OptDef {
    OptDef {
        name,
        alias,
        default: OptValue::Str(Cow::Borrowed(default)),
        min: 0.0,
        max: 0.0,
        feature_param: true,
    }
}

const fn i(name: &'static str, alias: &'static str, default: i32, min: f64, max: f64) -> OptDef {
    OptDef {
        name,
        alias: Some(alias),
        default: OptValue::Int(default),
        min,
        max,
        feature_param: true,
    }
}

// libvmaf 3.2.0 libvmaf/src/feature/integer_vif.c: options[] (DEFAULT_VIF_ENHN_GAIN_LIMIT 100.0).
const VIF_OPTIONS: &[OptDef] = &[
    b("debug", None, false),
    d("vif_enhn_gain_limit", "egl", 100.0, 1.0, 100.0),
    b("vif_skip_scale0", Some("ssclz"), true),
];

// libvmaf 3.2.0 libvmaf/src/feature/integer_adm.c: options[] (defaults from integer_adm.h).
const ADM_OPTIONS: &[OptDef] = &[
    b("debug", None, false),
    d("adm_csf_scale", "scf", 1.0, 0.0, 50.0),
    d("adm_csf_diag_scale", "scfd", 1.0, 0.0, 50.0),
    d("adm_dlm_weight", "dlmw", 0.5, 0.0, 1.0),
    d("adm_enhn_gain_limit", "egl", 100.0, 1.0, 100.0),
    d("adm_norm_view_dist", "nvd", 3.0, 0.75, 24.0),
    i("adm_ref_display_height", "rdh", 1080, 1.0, 4320.0),
    i("adm_csf_mode", "csf", 0, 0.0, 3.0),
    d("adm_noise_weight", "nw", 0.03125, 0.0, 1500.0),
    b("adm_skip_aim", None, false),
    b("adm_skip_scale0", Some("ssz"), true),
    d("adm_min_val", "min", 0.0, 0.0, 1.0),
];

// libvmaf 3.2.0 libvmaf/src/feature/integer_motion.c: options[] (DEFAULT_MOTION_MAX_VAL 10000.0).
const MOTION_OPTIONS: &[OptDef] = &[
    b("motion_force_zero", Some("force_0"), true),
    d("motion_blend_factor", "mbf", 1.0, 0.0, 1.0),
    d("motion_blend_offset", "mbo", 40.0, 0.0, 1000.0),
    d("motion_fps_weight", "mfw", 1.0, 0.0, 5.0),
    d("motion_max_val", "mmxv", 10000.0, 0.0, 10000.0),
    b("motion_five_frame_window", Some("mffw"), true),
    b("motion_moving_average", Some("mma"), true),
    b("debug", None, false),
];

// libvmaf 3.2.0 libvmaf/src/feature/cambi.c: options[] (DEFAULT_CAMBI_* macros there;
// CAMBI_4K_HEIGHT 2160 bounds the speed-up). `topk` has no alias; `heatmaps_path` and `full_ref`
// are not feature parameters.
const CAMBI_OPTIONS: &[OptDef] = &[
    d("cambi_max_val", "cmxv", 1000.0, 0.0, 1000.0),
    i("enc_width", "encw", 0, 180.0, 7680.0),
    i("enc_height", "ench", 0, 150.0, 7680.0),
    i("enc_bitdepth", "encbd", 0, 6.0, 16.0),
    i("src_width", "srcw", 0, 320.0, 7680.0),
    i("src_height", "srch", 0, 200.0, 4320.0),
    i("window_size", "ws", 65, 15.0, 127.0),
    OptDef {
        name: "topk",
        alias: None,
        default: OptValue::Double(0.6),
        min: 0.0001,
        max: 1.0,
        feature_param: true,
    },
    d("cambi_topk", "ctpk", 0.6, 0.0001, 1.0),
    d("tvi_threshold", "tvit", 0.019, 0.0001, 1.0),
    d("cambi_vis_lum_threshold", "vlt", 0.0, 0.0, 300.0),
    i("max_log_contrast", "mlc", 2, 0.0, 5.0),
    OptDef {
        name: "heatmaps_path",
        alias: None,
        default: OptValue::Str(Cow::Borrowed("")),
        min: 0.0,
        max: 0.0,
        feature_param: false,
    },
    b("full_ref", None, false),
    st("eotf", None, "bt1886"),
    st("cambi_eotf", Some("ceot"), "bt1886"),
    i("cambi_high_res_speedup", "hrs", 0, 0.0, 2160.0),
];

// libvmaf 3.2.0 libvmaf/src/feature/speed.c: options_chroma[] (DEFAULT_SPEED_* macros there).
const SPEED_CHROMA_OPTIONS: &[OptDef] = &[
    d("speed_kernelscale", "ks", 1.0, 0.1, 4.0),
    d("speed_prescale", "ps", 1.0, 0.1, 4.0),
    st("speed_prescale_method", Some("psm"), "nearest"),
    d("speed_sigma_nn", "snn", 0.29, 0.1, 2.0),
    d("speed_nn_floor", "nnf", 0.0, 0.0, 1.0),
    d("speed_max_val", "mxv", 1000.0, 0.0, 1000.0),
    i("speed_weight_var_mode", "wvm", 0, 0.0, 6.0),
];

// libvmaf 3.2.0 libvmaf/src/feature/speed.c: options[] of speed_temporal.
const SPEED_TEMPORAL_OPTIONS: &[OptDef] = &[
    d("speed_kernelscale", "ks", 1.0, 0.1, 4.0),
    d("speed_prescale", "ps", 1.0, 0.1, 4.0),
    st("speed_prescale_method", Some("psm"), "nearest"),
    d("speed_sigma_nn", "snn", 0.29, 0.1, 2.0),
    d("speed_nn_floor", "nnf", 0.0, 0.0, 1.0),
    d("speed_max_val", "mxv", 1000.0, 0.0, 1000.0),
    OptDef {
        name: "speed_use_ref_diff",
        alias: Some("urd"),
        default: OptValue::Bool(false),
        min: 0.0,
        max: 0.0,
        feature_param: true,
    },
];

fn defaults(table: &[OptDef]) -> Vec<OptValue> {
    table.iter().map(|o| o.default.clone()).collect()
}

fn get_b(v: &[OptValue], i: usize) -> bool {
    match v[i] {
        OptValue::Bool(x) => x,
        _ => unreachable!("option table and struct disagree"),
    }
}

fn get_i(v: &[OptValue], i: usize) -> i32 {
    match v[i] {
        OptValue::Int(x) => x,
        _ => unreachable!("option table and struct disagree"),
    }
}

fn get_d(v: &[OptValue], i: usize) -> f64 {
    match v[i] {
        OptValue::Double(x) => x,
        _ => unreachable!("option table and struct disagree"),
    }
}

fn get_s(v: &[OptValue], i: usize) -> String {
    match &v[i] {
        OptValue::Str(x) => x.to_string(),
        _ => unreachable!("option table and struct disagree"),
    }
}

impl CambiOptions {
    fn from_values(v: &[OptValue]) -> Self {
        let heatmaps = get_s(v, 12);
        CambiOptions {
            max_val: get_d(v, 0),
            enc_width: get_i(v, 1),
            enc_height: get_i(v, 2),
            enc_bitdepth: get_i(v, 3),
            src_width: get_i(v, 4),
            src_height: get_i(v, 5),
            window_size: get_i(v, 6),
            topk: get_d(v, 7),
            cambi_topk: get_d(v, 8),
            tvi_threshold: get_d(v, 9),
            vis_lum_threshold: get_d(v, 10),
            max_log_contrast: get_i(v, 11),
            heatmaps_path: (!heatmaps.is_empty()).then_some(heatmaps),
            full_ref: get_b(v, 13),
            eotf: get_s(v, 14),
            cambi_eotf: get_s(v, 15),
            high_res_speedup: get_i(v, 16),
        }
    }
}

impl SpeedChromaOptions {
    fn from_values(v: &[OptValue]) -> Self {
        SpeedChromaOptions {
            kernelscale: get_d(v, 0),
            prescale: get_d(v, 1),
            prescale_method: get_s(v, 2),
            sigma_nn: get_d(v, 3),
            nn_floor: get_d(v, 4),
            max_val: get_d(v, 5),
            weight_var_mode: get_i(v, 6),
        }
    }
}

impl SpeedTemporalOptions {
    fn from_values(v: &[OptValue]) -> Self {
        SpeedTemporalOptions {
            kernelscale: get_d(v, 0),
            prescale: get_d(v, 1),
            prescale_method: get_s(v, 2),
            sigma_nn: get_d(v, 3),
            nn_floor: get_d(v, 4),
            max_val: get_d(v, 5),
            use_ref_diff: get_b(v, 6),
        }
    }
}

impl VifOptions {
    fn from_values(v: &[OptValue]) -> Self {
        VifOptions {
            debug: get_b(v, 0),
            enhn_gain_limit: get_d(v, 1),
            skip_scale0: get_b(v, 2),
        }
    }
}

impl AdmOptions {
    fn from_values(v: &[OptValue]) -> Self {
        AdmOptions {
            debug: get_b(v, 0),
            csf_scale: get_d(v, 1),
            csf_diag_scale: get_d(v, 2),
            dlm_weight: get_d(v, 3),
            enhn_gain_limit: get_d(v, 4),
            norm_view_dist: get_d(v, 5),
            ref_display_height: get_i(v, 6),
            csf_mode: get_i(v, 7),
            noise_weight: get_d(v, 8),
            skip_aim: get_b(v, 9),
            skip_scale0: get_b(v, 10),
            min_val: get_d(v, 11),
        }
    }
}

impl MotionOptions {
    fn from_values(v: &[OptValue]) -> Self {
        MotionOptions {
            force_zero: get_b(v, 0),
            blend_factor: get_d(v, 1),
            blend_offset: get_d(v, 2),
            fps_weight: get_d(v, 3),
            max_val: get_d(v, 4),
            five_frame_window: get_b(v, 5),
            moving_average: get_b(v, 6),
            debug: get_b(v, 7),
        }
    }
}

impl OptDef {
    /// libvmaf/src/opt.c set_option_bool/int/double: `"true"`/`"false"`; `atoi`/`atof` with
    /// "zero must be spelled with a leading 0" and the min/max range check (NaN passes it, as in C).
    fn parse(&self, s: &str) -> Option<OptValue> {
        match self.default {
            OptValue::Bool(_) => match s {
                "true" => Some(OptValue::Bool(true)),
                "false" => Some(OptValue::Bool(false)),
                _ => None,
            },
            OptValue::Int(_) => {
                let n = c_atoi(s);
                if n == 0 && !s.starts_with('0') {
                    return None;
                }
                // The C code compares the int with the double bounds converted to int.
                if n < self.min as i32 || n > self.max as i32 {
                    return None;
                }
                Some(OptValue::Int(n))
            }
            OptValue::Double(_) => {
                let n = c_atof(s);
                if n == 0.0 && !s.starts_with('0') {
                    return None;
                }
                if n < self.min || n > self.max {
                    return None;
                }
                Some(OptValue::Double(n))
            }
            // set_option_string: any text.
            OptValue::Str(_) => Some(OptValue::Str(Cow::Owned(s.to_string()))),
        }
    }

    fn range_text(&self) -> String {
        match self.default {
            OptValue::Bool(_) => " (true or false)".into(),
            OptValue::Str(_) => String::new(),
            _ => format!(" (allowed: {} to {})", self.min, self.max),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Names.

/// Which extractor provides a feature (libvmaf 3.2.0 integer_adm.c, integer_motion.c,
/// integer_vif.c: `provided_features[]`; searched in feature_extractor_list order, adm first).
pub(crate) fn extractor_of(name: &str) -> Option<Extractor> {
    const ADM: &[&str] = &[
        "VMAF_integer_feature_adm2_score",
        "VMAF_integer_feature_aim_score",
        "VMAF_integer_feature_adm3_score",
        "integer_adm_scale0",
        "integer_adm_scale1",
        "integer_adm_scale2",
        "integer_adm_scale3",
        "integer_adm",
        "integer_adm_num",
        "integer_adm_den",
        "integer_adm_num_scale0",
        "integer_adm_den_scale0",
        "integer_adm_num_scale1",
        "integer_adm_den_scale1",
        "integer_adm_num_scale2",
        "integer_adm_den_scale2",
        "integer_adm_num_scale3",
        "integer_adm_den_scale3",
    ];
    const MOTION: &[&str] = &[
        "VMAF_integer_feature_motion_sad_score",
        "VMAF_integer_feature_motion_score",
        "VMAF_integer_feature_motion2_score",
        "VMAF_integer_feature_motion3_score",
    ];
    const VIF: &[&str] = &[
        "VMAF_integer_feature_vif_scale0_score",
        "VMAF_integer_feature_vif_scale1_score",
        "VMAF_integer_feature_vif_scale2_score",
        "VMAF_integer_feature_vif_scale3_score",
        "integer_vif",
        "integer_vif_num",
        "integer_vif_den",
        "integer_vif_num_scale0",
        "integer_vif_den_scale0",
        "integer_vif_num_scale1",
        "integer_vif_den_scale1",
        "integer_vif_num_scale2",
        "integer_vif_den_scale2",
        "integer_vif_num_scale3",
        "integer_vif_den_scale3",
    ];
    // cambi.c, speed.c: provided_features[], provided_features_chroma[].
    const CAMBI: &[&str] = &["Cambi_feature_cambi_score"];
    const SPEED_CHROMA: &[&str] = &[
        "Speed_chroma_feature_speed_chroma_u_score",
        "Speed_chroma_feature_speed_chroma_v_score",
        "Speed_chroma_feature_speed_chroma_uv_score",
    ];
    const SPEED_TEMPORAL: &[&str] = &["Speed_temporal_feature_speed_temporal_score"];
    if CAMBI.contains(&name) {
        Some(Extractor::Cambi)
    } else if SPEED_CHROMA.contains(&name) {
        Some(Extractor::SpeedChroma)
    } else if SPEED_TEMPORAL.contains(&name) {
        Some(Extractor::SpeedTemporal)
    } else if ADM.contains(&name) {
        Some(Extractor::Adm)
    } else if MOTION.contains(&name) {
        Some(Extractor::Motion)
    } else if VIF.contains(&name) {
        Some(Extractor::Vif)
    } else {
        None
    }
}

/// libvmaf's report name of a collector name (libvmaf 3.2.0 libvmaf/src/feature/alias.c:
/// `alias_map`); names without an alias are returned unchanged.
pub fn alias(name: &str) -> &str {
    const MAP: &[(&str, &str)] = &[
        ("VMAF_feature_adm2_score", "adm2"),
        ("VMAF_feature_aim_score", "aim"),
        ("VMAF_feature_adm3_score", "adm3"),
        ("VMAF_feature_adm_scale0_score", "adm_scale0"),
        ("VMAF_feature_adm_scale1_score", "adm_scale1"),
        ("VMAF_feature_adm_scale2_score", "adm_scale2"),
        ("VMAF_feature_adm_scale3_score", "adm_scale3"),
        ("VMAF_feature_motion_score", "motion"),
        ("VMAF_feature_motion2_score", "motion2"),
        ("VMAF_feature_motion3_score", "motion3"),
        ("VMAF_feature_vif_scale0_score", "vif_scale0"),
        ("VMAF_feature_vif_scale1_score", "vif_scale1"),
        ("VMAF_feature_vif_scale2_score", "vif_scale2"),
        ("VMAF_feature_vif_scale3_score", "vif_scale3"),
        ("VMAF_integer_feature_adm2_score", "integer_adm2"),
        ("VMAF_integer_feature_aim_score", "integer_aim"),
        ("VMAF_integer_feature_adm3_score", "integer_adm3"),
        ("VMAF_integer_feature_motion_score", "integer_motion"),
        ("VMAF_integer_feature_motion2_score", "integer_motion2"),
        ("VMAF_integer_feature_motion3_score", "integer_motion3"),
        (
            "VMAF_integer_feature_vif_scale0_score",
            "integer_vif_scale0",
        ),
        (
            "VMAF_integer_feature_vif_scale1_score",
            "integer_vif_scale1",
        ),
        (
            "VMAF_integer_feature_vif_scale2_score",
            "integer_vif_scale2",
        ),
        (
            "VMAF_integer_feature_vif_scale3_score",
            "integer_vif_scale3",
        ),
        ("Cambi_feature_cambi_score", "cambi"),
        (
            "Speed_chroma_feature_speed_chroma_u_score",
            "speed_chroma_u",
        ),
        (
            "Speed_chroma_feature_speed_chroma_v_score",
            "speed_chroma_v",
        ),
        (
            "Speed_chroma_feature_speed_chroma_uv_score",
            "speed_chroma_uv",
        ),
        (
            "Speed_temporal_feature_speed_temporal_score",
            "speed_temporal",
        ),
    ];
    MAP.iter()
        .find(|(n, _)| *n == name)
        .map_or(name, |(_, a)| a)
}

/// libvmaf 3.2.0 libvmaf/src/feature/feature_name.c: vmaf_feature_name_from_options() and
/// vmaf_feature_name_from_opts_dict(). The non-default feature parameters, printed (`%d`, `%g`,
/// or for a boolean just its key), sorted by option name, appended as `_<alias>_<value>` to the
/// aliased name; the plain name when all are default. libvmaf builds it in a 256-byte buffer,
/// so it is cut at 255 bytes.
fn feature_name_from_options(name: &str, table: &[OptDef], values: &[OptValue]) -> String {
    let mut changed: Vec<(&OptDef, String)> = Vec::new();
    for (opt, v) in table.iter().zip(values) {
        if !opt.feature_param || *v == opt.default {
            continue;
        }
        let text = match v {
            OptValue::Bool(x) => x.to_string(),
            OptValue::Int(x) => x.to_string(),
            OptValue::Double(x) => format_g(*x),
            OptValue::Str(x) => x.to_string(),
        };
        changed.push((opt, text));
    }
    if changed.is_empty() {
        return truncate_255(name.to_string());
    }
    changed.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
    let mut out = alias(name).to_string();
    for (opt, text) in changed {
        let key = opt.alias.unwrap_or(opt.name);
        match opt.default {
            OptValue::Bool(_) => {
                out.push('_');
                out.push_str(key);
            }
            _ => {
                out.push('_');
                out.push_str(key);
                out.push('_');
                out.push_str(&text);
            }
        }
    }
    truncate_255(out)
}

fn truncate_255(mut s: String) -> String {
    if s.len() > 255 {
        let mut end = 255;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

// ---------------------------------------------------------------------------------------------
// C number formatting and parsing, as glibc does them.

/// libvmaf/src/dict.c with VMAF_DICT_NORMALIZE_NUMERICAL_VALUES: the JSON number read with
/// `strtof` (to float), printed back with `"%g"`.
///
/// libvmaf converts the number's decimal text to float directly; here the text has already become
/// the nearest double (serde_json with float_roundtrip), then the nearest float. The two differ
/// only for a decimal within about 1e-16 (relative) of the midpoint between two floats, and then
/// the `%g` text differs only if that midpoint also sits on a 6-significant-digit rounding boundary.
fn normalize_number(v: f64) -> String {
    format_g(v as f32 as f64)
}

/// C's `printf("%g", x)`: 6 significant digits, `%e` style when the exponent is below -4 or at
/// least 6, trailing zeros removed. Rust's exact formatting rounds half to even on the exact binary
/// value, as glibc does in the default rounding mode.
pub(crate) fn format_g(x: f64) -> String {
    const P: i32 = 6;
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent after rounding to P significant digits.
    let e_form = format!("{:.*e}", (P - 1) as usize, x);
    let (mantissa, exp) = e_form.split_once('e').expect("Rust's {:e} has an exponent");
    let exp: i32 = exp.parse().expect("Rust's {:e} exponent is an integer");
    if !(-4..P).contains(&exp) {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let f = format!("{:.*}", (P - 1 - exp) as usize, x);
        strip_zeros(&f).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The longest prefix of `s` (after leading white space) that C's strtod would read as a decimal
/// number, infinity or NaN.
fn c_number_prefix(s: &str) -> &str {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let bytes = t.as_bytes();
    let mut i = 0;
    if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
        i += 1;
    }
    let lower = t[i..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if lower.starts_with(word) {
            return &t[..i + word.len()];
        }
    }
    let digits_from = |mut j: usize| {
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let int_end = digits_from(i);
    let mut end = int_end;
    let mut have_digits = int_end > i;
    if end < bytes.len() && bytes[end] == b'.' {
        let frac_end = digits_from(end + 1);
        have_digits |= frac_end > end + 1;
        end = frac_end;
    }
    if !have_digits {
        return "";
    }
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut j = end + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        let exp_end = digits_from(j);
        if exp_end > j {
            end = exp_end;
        }
    }
    &t[..end]
}

/// C's `atof` (strtod without error reporting); hexadecimal floats are not recognised.
fn c_atof(s: &str) -> f64 {
    let p = c_number_prefix(s);
    if p.is_empty() {
        return 0.0;
    }
    let lower = p.to_ascii_lowercase();
    let (neg, body) = match lower.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, lower.strip_prefix('+').unwrap_or(&lower)),
    };
    let v = if body.starts_with("inf") {
        f64::INFINITY
    } else if body.starts_with("nan") {
        f64::NAN
    } else {
        // A trailing '.' ("1.") is valid C but not Rust syntax.
        let body = body.strip_suffix('.').unwrap_or(body);
        let body = if body.starts_with('.') {
            format!("0{body}")
        } else {
            body.to_string()
        };
        body.replace(".e", "e").parse().unwrap_or(0.0)
    };
    if neg { -v } else { v }
}

/// C's `atoi`: optional sign and decimal digits; saturates instead of C's undefined overflow.
fn c_atoi(s: &str) -> i32 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        n = (n * 10 + i64::from(c - b'0')).min(i64::from(i32::MAX) + 1);
    }
    let n = if neg { -n } else { n };
    n.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn format_g_like_printf() {
        // Expected strings are C's printf("%g") output (C99 7.19.6.1 rules).
        for (x, want) in [
            (1.0, "1"),
            (100.0, "100"),
            (0.5, "0.5"),
            (1.2000000476837158, "1.2"),
            (0.03125, "0.03125"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (999999.5, "1e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e100, "1e+100"),
            (0.0, "0"),
        ] {
            assert_eq!(format_g(x), want, "{x}");
        }
    }

    #[test]
    fn atof_atoi_like_c() {
        assert_eq!(c_atof("1"), 1.0);
        assert_eq!(c_atof(" 2.5x"), 2.5);
        assert_eq!(c_atof("1e+06"), 1e6);
        assert_eq!(c_atof("1."), 1.0);
        assert_eq!(c_atof(".5"), 0.5);
        assert_eq!(c_atof("-3e"), -3.0);
        assert_eq!(c_atof("abc"), 0.0);
        assert!(c_atof("nan").is_nan());
        assert_eq!(c_atoi("1080"), 1080);
        assert_eq!(c_atoi("1e+06"), 1);
        assert_eq!(c_atoi("-7z"), -7);
        assert_eq!(c_atoi("x"), 0);
    }

    fn resolve(name: &str, opts: serde_json::Value) -> Result<ModelFeature, String> {
        let opts: Vec<(String, serde_json::Value)> =
            opts.as_object().unwrap().clone().into_iter().collect();
        ModelFeature::resolve(name, &opts)
    }

    #[test]
    fn default_options_keep_the_plain_name() {
        let f = resolve("VMAF_integer_feature_vif_scale0_score", json!({})).unwrap();
        assert_eq!(f.collector_name, "VMAF_integer_feature_vif_scale0_score");
        assert_eq!(f.name, "integer_vif_scale0");
        assert_eq!(f.options, ExtractorOptions::Vif(VifOptions::default()));
        // Explicit default values do not change the name either.
        let f = resolve(
            "VMAF_integer_feature_adm2_score",
            json!({"adm_enhn_gain_limit": 100}),
        )
        .unwrap();
        assert_eq!(f.name, "integer_adm2");
        let f = resolve("VMAF_integer_feature_motion2_score", json!({})).unwrap();
        assert_eq!(f.name, "integer_motion2");
        assert_eq!(f.extractor(), Extractor::Motion);
    }

    #[test]
    fn option_suffixes() {
        let f = resolve(
            "VMAF_integer_feature_vif_scale0_score",
            json!({"vif_enhn_gain_limit": 1.0}),
        )
        .unwrap();
        assert_eq!(f.collector_name, "integer_vif_scale0_egl_1");
        assert_eq!(f.name, "integer_vif_scale0_egl_1");
        let ExtractorOptions::Vif(v) = &f.options else {
            panic!()
        };
        assert_eq!(v.enhn_gain_limit, 1.0);

        // Sorted by option name; bool options add just their alias; float values via strtof+%g.
        let f = resolve(
            "VMAF_integer_feature_adm2_score",
            json!({"adm_skip_scale0": true, "adm_enhn_gain_limit": 1.2, "adm_csf_mode": 2,
                   "adm_ref_display_height": "2160", "debug": true}),
        )
        .unwrap();
        assert_eq!(f.name, "integer_adm2_csf_2_egl_1.2_rdh_2160_ssz");
        let ExtractorOptions::Adm(a) = &f.options else {
            panic!()
        };
        assert_eq!(a.enhn_gain_limit, 1.2);
        assert_eq!(a.csf_mode, 2);
        assert_eq!(a.ref_display_height, 2160);
        assert!(a.skip_scale0 && a.debug);

        // A name without an alias keeps its spelling as the base.
        let f = resolve("integer_adm_scale0", json!({"adm_enhn_gain_limit": 1})).unwrap();
        assert_eq!(f.name, "integer_adm_scale0_egl_1");
    }

    #[test]
    fn bad_options_and_features() {
        for (name, opts, needle) in [
            (
                "VMAF_integer_feature_vif_scale0_score",
                json!({"vif_enhn_gain_limit": 0.5}),
                "vif_enhn_gain_limit",
            ),
            (
                "VMAF_integer_feature_vif_scale0_score",
                json!({"vif_enhn_gain_limit": "x"}),
                "vif_enhn_gain_limit",
            ),
            (
                "VMAF_integer_feature_vif_scale0_score",
                json!({"vif_skip_scale0": 1}),
                "vif_skip_scale0",
            ),
            (
                "VMAF_integer_feature_adm2_score",
                json!({"adm_csf_mode": 4}),
                "adm_csf_mode",
            ),
            (
                "VMAF_integer_feature_adm2_score",
                json!({"adm_csf_mode": [1]}),
                "adm_csf_mode",
            ),
            (
                "VMAF_feature_vif_scale0_score",
                json!({}),
                "not one vmafgpu computes",
            ),
        ] {
            let e = resolve(name, opts.clone()).unwrap_err();
            assert!(e.contains(needle), "{name} {opts}: {e}");
        }
    }
}
