//! VMAF models: loading libvmaf's JSON model files, predicting the score of a frame from its
//! feature values, and pooling per-frame scores, all bit-equal to libvmaf 3.2.0.
//!
//! # Loading
//!
//! - [`Model::builtin`]`(name)`: one of the models libvmaf 3.2.0 builds in, embedded here from
//!   `models/`: `vmaf_v0.6.1` (the default, [`DEFAULT_MODEL`]), `vmaf_v0.6.1neg`,
//!   `vmaf_4k_v0.6.1`, `vmaf_4k_v0.6.1neg`, the bootstrap collection `vmaf_b_v0.6.3` and the
//!   eight VMAF v1 models `vmaf_v1.0.16_{3d0h,3d0h_2160,5d0h,1d5h_2160}` with their `_hfr_`
//!   twins ([`BUILTIN_MODELS`]). [`Model::builtin_with`] and friends apply libvmaf's feature
//!   overloads ([`FeatureOverload`], `cambi.enc_bitdepth=8`).
//! - [`Model::from_path`]`(path)` and [`Model::from_json`]`(text)`: any libvmaf JSON model, either
//!   a single model (`{"model_dict": {...}}`) or a bootstrap collection (`{"0": {...}, "1": {...},
//!   ...}`; model `"0"` gives `vmaf`, models `"1"`.. give `vmaf_0001`..).
//!
//! A file that cannot be read or parsed, or a model vmafgpu cannot evaluate (a feature it does not
//! compute, a non-RBF kernel, a missing field, an option out of range), is a typed
//! [`Error::Model`] naming the source (path, `built-in <name>` or `JSON string`) and the problem;
//! nothing panics.
//!
//! # What a model needs
//!
//! [`Model::features`] lists the model's inputs ([`ModelFeature`]): the extractor and its options
//! ([`ExtractorOptions`]: e.g. VIF with `vif_enhn_gain_limit` 1.0 for vmaf_v0.6.1neg) and the
//! name libvmaf reports the value under ([`ModelFeature::name`], e.g. `integer_vif_scale0` or
//! `integer_vif_scale0_egl_1`). For a collection it is the union over all its models, each feature
//! once. [`Model::extractor_configs`] gives the distinct extractor configurations to compute.
//!
//! # Predicting
//!
//! [`Model::predict`]`(&values, &PredictOptions)` takes one value per [`Model::features`] entry (same
//! order) and returns a [`Prediction`]: `vmaf`, plus for a collection the [`Bootstrap`] outputs
//! (`vmaf_bagging`, `vmaf_stddev`, `vmaf_ci_p95_lo`, `vmaf_ci_p95_hi` and each model's `vmaf_0001`..).
//! [`Model::predict_with`] looks the values up by feature instead. [`Model::output_names`] and
//! [`Prediction::values`] (or [`Prediction::named`]) give them with libvmaf's names, in libvmaf's
//! report order. [`PredictOptions`] are libvmaf's model flags: `disable_clip` (no clipping to the
//! model's `score_clip`) and `enable_transform` (apply the model's `score_transform` even when
//! the model does not enable it).
//!
//! The arithmetic is libvmaf's (libvmaf/src/predict.c, svm.cpp), in its order and in double
//! precision: per feature `slope * x + intercept`, the libsvm RBF nu-SVR sum over the support
//! vectors in file order, `(y - intercept) / slope`, then the optional polynomial / piecewise-linear
//! transform with rectification, then the clip. Bootstrap statistics are computed on the raw
//! (untransformed, unclipped) scores of the collection's models, then transformed and clipped with
//! the first bootstrap model's settings, as libvmaf does.
//!
//! # Pooling
//!
//! [`PoolMethod`], [`pool()`], [`pool_all`] and [`PoolAccumulator`] (one frame at a time) pool
//! per-frame values into libvmaf's `min`, `max`, `mean` and `harmonic_mean` exactly
//! (libvmaf/src/libvmaf.c `vmaf_feature_score_pooled`).
//!
//! # Differences from libvmaf, all on malformed input
//!
//! - `"p0": null` (and `p1`, `p2`, `knots`) disables that part of the transform; libvmaf means to
//!   but then fails to parse the rest of the object.
//! - Collection members are looked up by key (`"0"`, `"1"`, ...) rather than taken in document
//!   order, so out-of-order keys are all used.
//! - `slopes`/`intercepts` shorter than the feature list are an error (libvmaf uses zeros).
//! - `chroma_correction_parameter` (the v1 models) is applied as libvmaf does; a model where it
//!   cannot be (0, no `adm3` or no `speed_chroma` input, or two of either) is refused: libvmaf
//!   then predicts nothing, reads uninitialised memory or fails every frame.

mod features;
pub mod pool;
mod svm;

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

pub use features::{
    AdmOptions, CambiOptions, Extractor, ExtractorOptions, ModelFeature, MotionOptions,
    SpeedChromaOptions, SpeedTemporalOptions, VifOptions, alias,
};
pub use pool::{PoolAccumulator, PoolMethod, PooledStats, pool, pool_all};

use svm::Svm;

/// The model used when none is named (libvmaf's default).
pub const DEFAULT_MODEL: &str = "vmaf_v0.6.1";

/// Names accepted by [`Model::builtin`]: the 13 models of libvmaf 3.2.0's default build
/// (libvmaf/src/model.c `built_in_models[]` without the `enable_float` ones).
pub const BUILTIN_MODELS: [&str; 13] = [
    "vmaf_v0.6.1",
    "vmaf_v0.6.1neg",
    "vmaf_4k_v0.6.1",
    "vmaf_4k_v0.6.1neg",
    "vmaf_b_v0.6.3",
    "vmaf_v1.0.16_3d0h",
    "vmaf_v1.0.16_3d0h_2160",
    "vmaf_v1.0.16_5d0h",
    "vmaf_v1.0.16_1d5h_2160",
    "vmaf_v1.0.16_hfr_3d0h",
    "vmaf_v1.0.16_hfr_3d0h_2160",
    "vmaf_v1.0.16_hfr_5d0h",
    "vmaf_v1.0.16_hfr_1d5h_2160",
];

fn builtin_json(name: &str) -> Option<&'static str> {
    Some(match name {
        "vmaf_v0.6.1" => include_str!("../../models/vmaf_v0.6.1.json"),
        "vmaf_v0.6.1neg" => include_str!("../../models/vmaf_v0.6.1neg.json"),
        "vmaf_4k_v0.6.1" => include_str!("../../models/vmaf_4k_v0.6.1.json"),
        "vmaf_4k_v0.6.1neg" => include_str!("../../models/vmaf_4k_v0.6.1neg.json"),
        "vmaf_b_v0.6.3" => include_str!("../../models/vmaf_b_v0.6.3.json"),
        "vmaf_v1.0.16_3d0h" => include_str!("../../models/vmaf_v1.0.16_3d0h.json"),
        "vmaf_v1.0.16_3d0h_2160" => include_str!("../../models/vmaf_v1.0.16_3d0h_2160.json"),
        "vmaf_v1.0.16_5d0h" => include_str!("../../models/vmaf_v1.0.16_5d0h.json"),
        "vmaf_v1.0.16_1d5h_2160" => include_str!("../../models/vmaf_v1.0.16_1d5h_2160.json"),
        "vmaf_v1.0.16_hfr_3d0h" => include_str!("../../models/vmaf_v1.0.16_hfr_3d0h.json"),
        "vmaf_v1.0.16_hfr_3d0h_2160" => {
            include_str!("../../models/vmaf_v1.0.16_hfr_3d0h_2160.json")
        }
        "vmaf_v1.0.16_hfr_5d0h" => include_str!("../../models/vmaf_v1.0.16_hfr_5d0h.json"),
        "vmaf_v1.0.16_hfr_1d5h_2160" => {
            include_str!("../../models/vmaf_v1.0.16_hfr_1d5h_2160.json")
        }
        _ => return None,
    })
}

/// One of libvmaf's model feature overloads (`vmaf -m version=...:cambi.enc_bitdepth=8`,
/// libvmaf/src/model.c `vmaf_model_feature_overload`): option `key` = `value` for every model
/// feature computed by the extractor named `extractor`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureOverload {
    pub extractor: String,
    pub key: String,
    pub value: String,
}

impl FeatureOverload {
    /// Parse libvmaf's `extractor.option=value` list, separated by `:`, e.g.
    /// `cambi.enc_width=1280:cambi.enc_height=720:cambi.enc_bitdepth=8`. Empty text is no
    /// overload. Errors name the part that is not `name.option=value` or whose extractor
    /// vmafgpu does not know.
    pub fn parse_list(text: &str) -> Result<Vec<FeatureOverload>> {
        let mut out = Vec::new();
        for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || {
                Error::Model(format!(
                    "model parameter {part:?}: expected <feature>.<option>=<value>, e.g. cambi.enc_bitdepth=8"
                ))
            };
            let (lhs, value) = part.split_once('=').ok_or_else(bad)?;
            let (extractor, key) = lhs.split_once('.').ok_or_else(bad)?;
            if extractor.is_empty() || key.is_empty() || value.is_empty() {
                return Err(bad());
            }
            if Extractor::from_name(extractor).is_none() {
                return Err(Error::Model(format!(
                    "model parameter {part:?}: no feature extractor named {extractor:?} (vif, adm, motion, cambi, speed_chroma, speed_temporal)"
                )));
            }
            out.push(FeatureOverload {
                extractor: extractor.to_string(),
                key: key.to_string(),
                value: value.to_string(),
            });
        }
        Ok(out)
    }
}

/// libvmaf's model flags (`VMAF_MODEL_FLAG_DISABLE_CLIP`, `VMAF_MODEL_FLAG_ENABLE_TRANSFORM`;
/// `vmaf -m version=...:disable_clip=true:enable_transform=true`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PredictOptions {
    /// Do not clip scores to the model's `score_clip` range.
    pub disable_clip: bool,
    /// Apply the model's `score_transform` even if it is not `enabled` in the model.
    pub enable_transform: bool,
}

/// The bootstrap outputs of a model collection for one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Bootstrap {
    /// `vmaf_bagging`: mean of the bootstrap models' raw scores, transformed and clipped.
    pub bagging: f64,
    /// `vmaf_stddev`: their standard deviation, scaled by the transform's local slope.
    pub stddev: f64,
    /// `vmaf_ci_p95_lo`: 2.5th percentile, transformed and clipped.
    pub ci_p95_lo: f64,
    /// `vmaf_ci_p95_hi`: 97.5th percentile, transformed and clipped.
    pub ci_p95_hi: f64,
    /// `vmaf_0001`, `vmaf_0002`, ...: each bootstrap model's own score (its transform and clip).
    pub models: Vec<f64>,
}

/// A model's outputs for one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// `vmaf`: the model's score (for a collection, model `"0"`'s score).
    pub vmaf: f64,
    /// The collection outputs; `None` for a single model.
    pub bootstrap: Option<Bootstrap>,
}

impl Prediction {
    /// All outputs in libvmaf's report order, matching [`Model::output_names`]: `vmaf`, then for a
    /// collection `vmaf_0001`.., `vmaf_bagging`, `vmaf_stddev`, `vmaf_ci_p95_lo`, `vmaf_ci_p95_hi`.
    pub fn values(&self) -> Vec<f64> {
        let mut v = vec![self.vmaf];
        if let Some(b) = &self.bootstrap {
            v.extend_from_slice(&b.models);
            v.extend_from_slice(&[b.bagging, b.stddev, b.ci_p95_lo, b.ci_p95_hi]);
        }
        v
    }

    /// [`Prediction::values`] paired with the model's [`Model::output_names`].
    pub fn named(&self, model: &Model) -> Vec<(String, f64)> {
        model
            .output_names()
            .iter()
            .cloned()
            .zip(self.values())
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The model.

/// libvmaf's `enum VmafModelType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ModelType {
    Unknown,
    SvmNuSvr,
    BootstrapSvmNuSvr,
    ResidueBootstrapSvmNuSvr,
}

/// One input of one SVM: which feature (index into [`Model::features`]) and its normalisation.
#[derive(Clone, Debug, PartialEq)]
struct Input {
    feature: usize,
    slope: f64,
    intercept: f64,
}

/// `score_transform` (libvmaf/src/model.h `score_transform`).
#[derive(Clone, Debug, PartialEq)]
struct Transform {
    enabled: bool,
    p0: Option<f64>,
    p1: Option<f64>,
    p2: Option<f64>,
    knots: Option<Vec<(f64, f64)>>,
    out_lte_in: bool,
    out_gte_in: bool,
}

/// One SVM model (libvmaf's `VmafModel`).
#[derive(Clone, Debug, PartialEq)]
struct SubModel {
    kind: ModelType,
    /// `linear_rescale` normalisation: `Some((slope, intercept))` of the output; `None` for `none`.
    rescale: Option<(f64, f64)>,
    inputs: Vec<Input>,
    clip: Option<(f64, f64)>,
    transform: Option<Transform>,
    chroma_correction: Option<ChromaCorrection>,
    svm: Svm,
}

/// `chroma_correction_parameter` (libvmaf/src/predict.c post_process_feature_from_another(),
/// called with guiding substring `adm3`, guided substring `speed_chroma` and the value 0.0): when
/// the guided input, denormalised, is exactly 0.0, its node becomes
/// `normalize(-p * guiding' + p)`, where `guiding'` is the guiding *node* denormalised.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ChromaCorrection {
    parameter: f64,
    /// Index into `SubModel::inputs` of the one input whose model name contains `adm3`.
    guiding: usize,
    /// Index into `SubModel::inputs` of the one input whose model name contains `speed_chroma`.
    guided: usize,
}

/// A loaded VMAF model or bootstrap model collection. See the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    name: String,
    source: String,
    main: SubModel,
    /// The collection's models (`"1"`, `"2"`, ...); empty for a single model.
    bootstrap: Vec<SubModel>,
    features: Vec<ModelFeature>,
    output_names: Vec<String>,
}

impl Model {
    /// A built-in model by name (see [`BUILTIN_MODELS`]).
    pub fn builtin(name: &str) -> Result<Model> {
        Model::builtin_with(name, &[])
    }

    /// [`Model::builtin`] with libvmaf's feature overloads applied ([`FeatureOverload`]).
    pub fn builtin_with(name: &str, overloads: &[FeatureOverload]) -> Result<Model> {
        let text = builtin_json(name).ok_or_else(|| {
            Error::Model(format!(
                "no built-in model named {name:?} (built-in models: {})",
                BUILTIN_MODELS.join(", ")
            ))
        })?;
        Model::parse(text, &format!("built-in {name}"), overloads)
    }

    /// Load a libvmaf JSON model (single or collection) from a file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Model> {
        Model::from_path_with(path, &[])
    }

    /// [`Model::from_path`] with libvmaf's feature overloads applied ([`FeatureOverload`]).
    pub fn from_path_with(path: impl AsRef<Path>, overloads: &[FeatureOverload]) -> Result<Model> {
        let path = path.as_ref();
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Model(format!("{source}: cannot read the model file: {e}")))?;
        Model::parse(&text, &source, overloads)
    }

    /// Load a libvmaf JSON model (single or collection) from its text.
    pub fn from_json(text: &str) -> Result<Model> {
        Model::from_json_with(text, &[])
    }

    /// [`Model::from_json`] with libvmaf's feature overloads applied ([`FeatureOverload`]).
    pub fn from_json_with(text: &str, overloads: &[FeatureOverload]) -> Result<Model> {
        Model::parse(text, "JSON string", overloads)
    }

    /// The same model reporting under another name (libvmaf's `name=` model option): `name`,
    /// and for a collection `name_0001`.., `name_bagging`, ... The default is `vmaf`.
    pub fn with_name(mut self, name: &str) -> Model {
        self.name = name.to_string();
        self.output_names = output_names(name, self.bootstrap.len());
        self
    }

    /// The name of the model's score (`vmaf` unless changed with [`Model::with_name`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the model came from: `built-in vmaf_v0.6.1`, a file path, or `JSON string`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether this is a bootstrap collection (with [`Bootstrap`] outputs).
    pub fn is_collection(&self) -> bool {
        !self.bootstrap.is_empty()
    }

    /// Number of bootstrap models (0 for a single model).
    pub fn bootstrap_models(&self) -> usize {
        self.bootstrap.len()
    }

    /// The inputs [`Model::predict`] expects, in order.
    pub fn features(&self) -> &[ModelFeature] {
        &self.features
    }

    /// The distinct extractor configurations the features need, in order of first use.
    pub fn extractor_configs(&self) -> Vec<ExtractorOptions> {
        let mut out: Vec<ExtractorOptions> = Vec::new();
        for f in &self.features {
            if !out.contains(&f.options) {
                out.push(f.options.clone());
            }
        }
        out
    }

    /// The names of the outputs, in libvmaf's report order (see [`Prediction::values`]).
    pub fn output_names(&self) -> &[String] {
        &self.output_names
    }

    /// Predict one frame. `values[i]` is the value of `self.features()[i]`.
    pub fn predict(&self, values: &[f64], opts: &PredictOptions) -> Result<Prediction> {
        if values.len() != self.features.len() {
            return Err(Error::Model(format!(
                "{}: {} feature values given, the model has {} features",
                self.source,
                values.len(),
                self.features.len()
            )));
        }
        let vmaf = self.main.predict(values, Flags::from(opts));
        let bootstrap = if self.bootstrap.is_empty() {
            None
        } else {
            Some(self.predict_bootstrap(values, opts))
        };
        Ok(Prediction { vmaf, bootstrap })
    }

    /// Predict one frame, looking each feature's value up with `value_of` (e.g. by
    /// [`ModelFeature::name`]). A feature without a value is an error naming it.
    pub fn predict_with(
        &self,
        mut value_of: impl FnMut(&ModelFeature) -> Option<f64>,
        opts: &PredictOptions,
    ) -> Result<Prediction> {
        let mut values = Vec::with_capacity(self.features.len());
        for f in &self.features {
            values.push(value_of(f).ok_or_else(|| {
                Error::Model(format!("{}: no value for feature {}", self.source, f.name))
            })?);
        }
        self.predict(&values, opts)
    }

    /// libvmaf 3.2.0 libvmaf/src/predict.c: vmaf_bootstrap_predict_score_at_index().
    fn predict_bootstrap(&self, values: &[f64], opts: &PredictOptions) -> Bootstrap {
        let n = self.bootstrap.len();
        let mut scores = Vec::with_capacity(n);
        let mut models = Vec::with_capacity(n);
        for m in &self.bootstrap {
            // Statistics on the raw scores (libvmaf predicts with VMAF_MODEL_FLAG_DISABLE_CLIP |
            // VMAF_MODEL_FLAG_DISABLE_TRANSFORM); the reported per-model scores keep their own
            // transform and clip. libvmaf runs the SVM twice; once gives the same double.
            let raw = m.raw_score(values);
            scores.push(m.post_process(raw, Flags::RAW));
            models.push(m.post_process(raw, Flags::from(opts)));
        }

        let mut sum = 0.;
        for s in &scores {
            sum += s;
        }
        let count = n as f64;
        let mean = sum / count;
        let delta = 0.01;
        let mut plus_delta = mean + delta;
        let mut minus_delta = mean - delta;

        let mut ssd = 0.;
        for s in &scores {
            // libvmaf: pow(scores[i] - mean, 2), which GCC folds to (x * x).
            let d = s - mean;
            ssd += d * d;
        }
        let mut stddev = (ssd / count).sqrt();

        scores.sort_by(f64::total_cmp);
        let mut lo = percentile(&scores, 2.5);
        let mut hi = percentile(&scores, 97.5);
        let mut bagging = mean;

        // Transformed and clipped as the first bootstrap model would be (model_collection->model[0]).
        let first = &self.bootstrap[0];
        let flags = Flags::from(opts);
        for v in [
            &mut bagging,
            &mut lo,
            &mut hi,
            &mut plus_delta,
            &mut minus_delta,
        ] {
            *v = first.post_process(*v, flags);
        }
        let slope = (plus_delta - minus_delta) / (2.0 * delta);
        stddev *= slope;

        Bootstrap {
            bagging,
            stddev,
            ci_p95_lo: lo,
            ci_p95_hi: hi,
            models,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Parsing.

    fn parse(text: &str, source: &str, overloads: &[FeatureOverload]) -> Result<Model> {
        let err = |msg: String| Error::Model(format!("{source}: {msg}"));
        let top: Map<String, Value> =
            serde_json::from_str(text).map_err(|e| err(format!("not a JSON model object: {e}")))?;

        let mut features = Vec::new();
        let (main, bootstrap) = if top.contains_key("model_dict") {
            // A single model; serde parses the text again for messages with line and column.
            let file: ModelFile =
                serde_json::from_str(text).map_err(|e| err(format!("bad model: {e}")))?;
            let main = SubModel::build(file.model_dict, &mut features, overloads).map_err(err)?;
            (main, Vec::new())
        } else {
            // libvmaf/src/read_json_model.c model_collection_parse(): "0" is the model, "1".. the
            // bootstrap models.
            let mut models = Vec::new();
            for i in 0.. {
                let Some(v) = top.get(&i.to_string()) else {
                    break;
                };
                let file = ModelFile::deserialize(v)
                    .map_err(|e| err(format!("collection model \"{i}\": {e}")))?;
                let m = SubModel::build(file.model_dict, &mut features, overloads)
                    .map_err(|e| err(format!("collection model \"{i}\": {e}")))?;
                models.push(m);
            }
            if models.len() < 2 {
                return Err(err(
                    "neither a model (no \"model_dict\") nor a model collection (no models \"0\" and \"1\")"
                        .into(),
                ));
            }
            let main = models.remove(0);
            // vmaf_model_collection_append(): every member has the type of the first;
            // vmaf_predict_score_at_index_model_collection(): only bootstrap types are evaluated.
            let kind = models[0].kind;
            if let Some(i) = models.iter().position(|m| m.kind != kind) {
                return Err(err(format!(
                    "collection model \"{}\" has another model_type than model \"1\"",
                    i + 1
                )));
            }
            if !matches!(
                kind,
                ModelType::BootstrapSvmNuSvr | ModelType::ResidueBootstrapSvmNuSvr
            ) {
                return Err(err(
                    "a model collection needs model_type BOOTSTRAP_LIBSVMNUSVR or RESIDUEBOOTSTRAP_LIBSVMNUSVR"
                        .into(),
                ));
            }
            (main, models)
        };

        let name = "vmaf";
        Ok(Model {
            name: name.to_string(),
            source: source.to_string(),
            output_names: output_names(name, bootstrap.len()),
            main,
            bootstrap,
            features,
        })
    }
}

fn output_names(name: &str, bootstrap: usize) -> Vec<String> {
    let mut v = vec![name.to_string()];
    if bootstrap > 0 {
        // libvmaf/src/read_json_model.c: "%s_%04d"; predict.c: the collection suffixes.
        v.extend((1..=bootstrap).map(|i| format!("{name}_{i:04}")));
        for suffix in ["_bagging", "_stddev", "_ci_p95_lo", "_ci_p95_hi"] {
            v.push(format!("{name}{suffix}"));
        }
    }
    v
}

/// libvmaf 3.2.0 libvmaf/src/predict.c: percentile() on sorted scores.
fn percentile(scores: &[f64], perc: f64) -> f64 {
    let p = perc * (scores.len() - 1) as f64 / 100.;
    let idx_l = p.floor() as usize;
    let idx_r = p.ceil() as usize;
    if idx_l == idx_r {
        scores[idx_l]
    } else {
        scores[idx_l] * (idx_r as f64 - p) + scores[idx_r] * (p - idx_l as f64)
    }
}

/// Which post-processing steps a prediction applies (libvmaf's model flags, combined with what the
/// model enables).
#[derive(Clone, Copy, Debug)]
struct Flags {
    /// Honour the model's clip (not VMAF_MODEL_FLAG_DISABLE_CLIP).
    clip: bool,
    /// VMAF_MODEL_FLAG_ENABLE_TRANSFORM.
    force_transform: bool,
    /// VMAF_MODEL_FLAG_DISABLE_TRANSFORM.
    no_transform: bool,
}

impl Flags {
    /// The bootstrap statistics' raw scores: VMAF_MODEL_FLAG_DISABLE_CLIP |
    /// VMAF_MODEL_FLAG_DISABLE_TRANSFORM.
    const RAW: Flags = Flags {
        clip: false,
        force_transform: false,
        no_transform: true,
    };
}

impl From<&PredictOptions> for Flags {
    fn from(o: &PredictOptions) -> Flags {
        Flags {
            clip: !o.disable_clip,
            force_transform: o.enable_transform,
            no_transform: false,
        }
    }
}

impl SubModel {
    /// libvmaf 3.2.0 libvmaf/src/predict.c: vmaf_predict_score_at_index().
    fn predict(&self, values: &[f64], flags: Flags) -> f64 {
        self.post_process(self.raw_score(values), flags)
    }

    /// vmaf_predict_score_at_index() up to the denormalisation: normalise the features, run the
    /// SVM, denormalise.
    fn raw_score(&self, values: &[f64]) -> f64 {
        let mut nodes = Vec::with_capacity(self.inputs.len());
        for input in &self.inputs {
            let x = values[input.feature];
            nodes.push(match self.rescale {
                Some(_) => input.slope * x + input.intercept,
                None => x,
            });
        }
        if let Some(c) = self.chroma_correction {
            // predict.c: normalize() and denormalize_feature() are identities without
            // linear_rescale.
            let denorm = |i: usize| match self.rescale {
                Some(_) => (nodes[i] - self.inputs[i].intercept) / self.inputs[i].slope,
                None => nodes[i],
            };
            let guiding = denorm(c.guiding);
            if denorm(c.guided) == 0.0 {
                let corrected = (-c.parameter * guiding) + c.parameter;
                let g = &self.inputs[c.guided];
                nodes[c.guided] = match self.rescale {
                    Some(_) => g.slope * corrected + g.intercept,
                    None => corrected,
                };
            }
        }
        let mut y = self.svm.predict(&nodes);
        if let Some((slope, intercept)) = self.rescale {
            y = (y - intercept) / slope;
        }
        y
    }

    /// predict.c transform() then clip().
    fn post_process(&self, mut y: f64, flags: Flags) -> f64 {
        if let Some(t) = &self.transform
            && (t.enabled || flags.force_transform)
            && !flags.no_transform
        {
            y = t.apply(y);
        }
        if let Some((lo, hi)) = self.clip
            && flags.clip
        {
            y = if y < lo { lo } else { y };
            y = if y > hi { hi } else { y };
        }
        y
    }

    /// Check a parsed `model_dict` and resolve its features, adding them to `features` (the
    /// model's union) and pointing the inputs there.
    fn build(
        d: ModelDict,
        features: &mut Vec<ModelFeature>,
        overloads: &[FeatureOverload],
    ) -> std::result::Result<SubModel, String> {
        // libvmaf/src/read_json_model.c parse_model_dict().
        let kind = match d.model_type.as_deref() {
            None => ModelType::Unknown,
            Some("LIBSVMNUSVR") => ModelType::SvmNuSvr,
            Some("BOOTSTRAP_LIBSVMNUSVR") => ModelType::BootstrapSvmNuSvr,
            Some("RESIDUEBOOTSTRAP_LIBSVMNUSVR") => ModelType::ResidueBootstrapSvmNuSvr,
            Some(other) => return Err(format!("unknown model_type {other:?}")),
        };
        let linear = match d.norm_type.as_deref() {
            Some("linear_rescale") => true,
            Some("none") => false,
            Some(other) => return Err(format!("unknown norm_type {other:?}")),
            None => return Err("norm_type is missing".into()),
        };
        let names = d.feature_names.ok_or("feature_names is missing")?;
        if names.is_empty() {
            return Err("feature_names is empty".into());
        }
        // MAX_FEATURE_COUNT in read_json_model.c.
        if names.len() > 64 {
            return Err(format!("{} features (libvmaf allows 64)", names.len()));
        }
        let opts = d.feature_opts_dicts.unwrap_or_default();
        if opts.len() > 64 {
            return Err(format!(
                "{} feature_opts_dicts (libvmaf allows 64)",
                opts.len()
            ));
        }

        let (slopes, intercepts) = if linear {
            let slopes = d
                .slopes
                .ok_or("slopes is missing (norm_type linear_rescale)")?;
            let intercepts = d
                .intercepts
                .ok_or("intercepts is missing (norm_type linear_rescale)")?;
            for (what, v) in [("slopes", &slopes), ("intercepts", &intercepts)] {
                if v.len() < names.len() + 1 {
                    return Err(format!(
                        "{what} has {} values, {} needed (the output's, then one per feature)",
                        v.len(),
                        names.len() + 1
                    ));
                }
            }
            (slopes, intercepts)
        } else {
            (vec![1.0; names.len() + 1], vec![0.0; names.len() + 1])
        };

        let mut inputs = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let mut dict: Vec<(String, Value)> = opts
                .get(i)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            // vmaf_model_feature_overload(): merged after the model's own options (later keys
            // win), for the features of the named extractor. The CLI's dictionary normalises
            // numeric text (libvmaf/src/dict.c), which the JSON string path then keeps.
            if let Some(e) = features::extractor_of(name) {
                for o in overloads.iter().filter(|o| o.extractor == e.name()) {
                    dict.push((
                        o.key.clone(),
                        Value::String(features::normalize_text(&o.value)),
                    ));
                }
            }
            let f = ModelFeature::resolve(name, &dict)?;
            let index = match features
                .iter()
                .position(|g| g.collector_name == f.collector_name)
            {
                Some(j) if features[j] == f => j,
                Some(_) => {
                    return Err(format!(
                        "feature {} is used with two different option sets",
                        f.collector_name
                    ));
                }
                None => {
                    features.push(f);
                    features.len() - 1
                }
            };
            inputs.push(Input {
                feature: index,
                slope: slopes[i + 1],
                intercept: intercepts[i + 1],
            });
        }

        let chroma_correction = match d.chroma_correction_parameter {
            None => None,
            Some(p) => {
                // libvmaf predicts nothing when the parameter is 0, reads uninitialised values
                // when a substring matches no input, and fails every frame when one matches two:
                // all refused here.
                if p == 0.0 || !p.is_finite() {
                    return Err(format!(
                        "chroma_correction_parameter {p} (must be a non-zero number)"
                    ));
                }
                let find = |needle: &str| {
                    let hits: Vec<usize> = inputs
                        .iter()
                        .enumerate()
                        .filter(|(_, inp)| features[inp.feature].model_name.contains(needle))
                        .map(|(i, _)| i)
                        .collect();
                    match hits[..] {
                        [i] => Ok(i),
                        [] => Err(format!(
                            "chroma_correction_parameter needs a feature whose name contains {needle:?}"
                        )),
                        _ => Err(format!(
                            "chroma_correction_parameter: more than one feature name contains {needle:?}"
                        )),
                    }
                };
                Some(ChromaCorrection {
                    parameter: p,
                    guiding: find("adm3")?,
                    guided: find("speed_chroma")?,
                })
            }
        };

        let clip = match d.score_clip {
            None => None,
            Some(v) if v.len() >= 2 => Some((v[0], v[1])),
            Some(_) => return Err("score_clip needs two numbers [min, max]".into()),
        };

        let transform = match d.score_transform {
            None => None,
            Some(t) => {
                let knots = match t.knots {
                    None => None,
                    Some(list) => {
                        // MAX_KNOT_COUNT in read_json_model.c; a knot is [x, y], missing
                        // coordinates are 0 as in libvmaf's zeroed list.
                        if list.len() > 10 {
                            return Err(format!("{} knots (libvmaf allows 10)", list.len()));
                        }
                        let mut k = Vec::with_capacity(list.len());
                        for p in list {
                            if p.len() > 2 {
                                return Err("a knot has more than two coordinates".into());
                            }
                            k.push((
                                p.first().copied().unwrap_or(0.0),
                                p.get(1).copied().unwrap_or(0.0),
                            ));
                        }
                        Some(k)
                    }
                };
                Some(Transform {
                    enabled: t.enabled.unwrap_or(false),
                    p0: t.p0,
                    p1: t.p1,
                    p2: t.p2,
                    knots,
                    out_lte_in: t.out_lte_in.as_deref() == Some("true"),
                    out_gte_in: t.out_gte_in.as_deref() == Some("true"),
                })
            }
        };

        let svm_text = d.model.ok_or("model (the libsvm model text) is missing")?;
        let svm = Svm::parse(&svm_text)?;

        Ok(SubModel {
            kind,
            rescale: linear.then_some((slopes[0], intercepts[0])),
            inputs,
            clip,
            transform,
            chroma_correction,
            svm,
        })
    }
}

impl Transform {
    /// libvmaf 3.2.0 libvmaf/src/predict.c: transform() (polynomial, piecewise-linear mapping,
    /// rectification).
    fn apply(&self, y_in: f64) -> f64 {
        let mut y_stage = y_in;
        let mut y_out = if self.p0.is_some() || self.p1.is_some() || self.p2.is_some() {
            let mut acc = 0.;
            if let Some(p0) = self.p0 {
                acc += p0;
            }
            if let Some(p1) = self.p1 {
                acc += p1 * y_stage;
            }
            if let Some(p2) = self.p2 {
                acc += p2 * y_stage * y_stage;
            }
            acc
        } else {
            y_stage
        };

        y_stage = y_out;
        if let Some(knots) = &self.knots {
            piecewise_linear_mapping(y_stage, knots, &mut y_out);
        } else {
            y_out = y_stage;
        }

        if self.out_lte_in {
            y_out = if y_out > y_in { y_in } else { y_out };
        }
        if self.out_gte_in {
            y_out = if y_out < y_in { y_in } else { y_out };
        }
        y_out
    }
}

/// libvmaf 3.2.0 libvmaf/src/predict.c: find_linear_function_parameters(); on an error the
/// outputs are left as they were.
fn find_linear_function_parameters(
    p1: (f64, f64),
    p2: (f64, f64),
    alpha: &mut f64,
    beta: &mut f64,
) {
    if !(p1.0 <= p2.0 && p1.1 <= p2.1) {
        return;
    }
    if p2.0 - p1.0 == 0. || p2.1 - p1.1 == 0. {
        if !(p1.0 == p2.0 && p1.1 == p2.1) {
            return;
        }
        *alpha = 1.0;
        *beta = 0.0;
    } else if p1.0 == 0. {
        *beta = p1.1;
        *alpha = (p2.1 - *beta) / p2.0;
    } else {
        *alpha = (p2.1 - p1.1) / (p2.0 - p1.0);
        *beta = p1.1 - (p1.0 * *alpha);
    }
}

/// libvmaf 3.2.0 libvmaf/src/predict.c: piecewise_linear_mapping(). With fewer than two knots
/// `y` is left alone; a non-increasing knot list stops the mapping where libvmaf stops it.
fn piecewise_linear_mapping(x: f64, knots: &[(f64, f64)], y: &mut f64) {
    let (mut slope, mut offset) = (0.0, 0.0);
    if knots.len() <= 1 {
        return;
    }
    let n_seg = knots.len() - 1;
    *y = 0.0;
    for idx in 0..n_seg {
        let (k0, k1) = (knots[idx], knots[idx + 1]);
        if !(k0.0 < k1.0 && k0.1 <= k1.1) {
            return;
        }
        let cond0 = k0.0 <= x;
        let cond1 = x <= k1.0;
        if k0.1 == k1.1 {
            if cond0 && cond1 {
                *y = k0.1;
            }
            if idx == 0 && x < k0.0 {
                *y = k0.1;
            }
            if idx == n_seg - 1 && x > k1.0 {
                *y = k0.1;
            }
        } else {
            find_linear_function_parameters(k0, k1, &mut slope, &mut offset);
            if cond0 && cond1 {
                *y = slope * x + offset;
            }
            if idx == 0 && x < k0.0 {
                *y = slope * x + offset;
            }
            if idx == n_seg - 1 && x > k1.0 {
                *y = slope * x + offset;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON shapes (libvmaf/src/read_json_model.c). Unknown keys are ignored, as libvmaf ignores them.

#[derive(Deserialize)]
struct ModelFile {
    model_dict: ModelDict,
}

#[derive(Deserialize)]
struct ModelDict {
    model_type: Option<String>,
    norm_type: Option<String>,
    score_clip: Option<Vec<f64>>,
    score_transform: Option<TransformJson>,
    chroma_correction_parameter: Option<f64>,
    slopes: Option<Vec<f64>>,
    intercepts: Option<Vec<f64>>,
    feature_names: Option<Vec<String>>,
    feature_opts_dicts: Option<Vec<Map<String, Value>>>,
    model: Option<String>,
}

#[derive(Deserialize)]
struct TransformJson {
    enabled: Option<bool>,
    p0: Option<f64>,
    p1: Option<f64>,
    p2: Option<f64>,
    knots: Option<Vec<Vec<f64>>>,
    out_lte_in: Option<String>,
    out_gte_in: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load() {
        for name in BUILTIN_MODELS {
            let m = Model::builtin(name).unwrap();
            assert_eq!(m.name(), "vmaf");
            let want = if name.starts_with("vmaf_v1") { 4 } else { 6 };
            assert_eq!(m.features().len(), want, "{name}");
            assert_eq!(m.is_collection(), name == "vmaf_b_v0.6.3");
        }
        let b = Model::builtin("vmaf_b_v0.6.3").unwrap();
        assert_eq!(b.bootstrap_models(), 20);
        assert_eq!(b.output_names().len(), 1 + 20 + 4);
        assert_eq!(b.output_names()[1], "vmaf_0001");
        assert_eq!(b.output_names()[21], "vmaf_bagging");
        let n = Model::builtin("vmaf_v0.6.1neg").unwrap();
        let names: Vec<_> = n.features().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "integer_adm2_egl_1",
                "integer_motion2",
                "integer_vif_scale0_egl_1",
                "integer_vif_scale1_egl_1",
                "integer_vif_scale2_egl_1",
                "integer_vif_scale3_egl_1"
            ]
        );
        assert_eq!(n.extractor_configs().len(), 3);
    }

    #[test]
    fn v1_feature_names_and_overloads() {
        let names =
            |m: &Model| -> Vec<String> { m.features().iter().map(|f| f.name.clone()).collect() };
        let m = Model::builtin("vmaf_v1.0.16_3d0h_2160").unwrap();
        assert_eq!(
            names(&m),
            [
                "cambi_hrs_1080_cmxv_17_vlt_0.06",
                "speed_chroma_uv_mxv_45_nnf_0.1_ps_0.5_psm_bilinear_snn_0.19_wvm_5",
                "integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_rdh_2160",
                "integer_motion3_mmxv_18",
            ]
        );
        let m = Model::builtin("vmaf_v1.0.16_hfr_1d5h_2160").unwrap();
        assert_eq!(m.features()[3].name, "integer_motion3_mffw_mmxv_18_mma");
        assert_eq!(
            m.features()[2].name,
            "integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_nvd_1.5_rdh_2160"
        );
        // libvmaf's overloads: numbers normalised, merged over the model's options.
        let o =
            FeatureOverload::parse_list("cambi.enc_bitdepth=8.0: cambi.enc_width=1280").unwrap();
        assert_eq!(o.len(), 2);
        let m = Model::builtin_with("vmaf_v1.0.16_3d0h", &o).unwrap();
        // Sorted by option name: cambi_high_res_speedup, cambi_max_val, ..., enc_width.
        assert_eq!(
            m.features()[0].name,
            "cambi_hrs_1080_cmxv_17_vlt_0.06_encbd_8_encw_1280"
        );
        let ExtractorOptions::Cambi(c) = &m.features()[0].options else {
            panic!("not cambi")
        };
        assert_eq!(
            (c.enc_bitdepth, c.enc_width, c.high_res_speedup),
            (8, 1280, 1080)
        );
        // An overload for an extractor the model does not use changes nothing.
        let o = FeatureOverload::parse_list("vif.vif_enhn_gain_limit=1").unwrap();
        assert_eq!(
            Model::builtin_with("vmaf_v1.0.16_3d0h", &o).unwrap(),
            Model::builtin("vmaf_v1.0.16_3d0h").unwrap()
        );
        // Bad overloads are errors naming the part.
        for bad in [
            "cambi",
            "cambi=1",
            "nope.x=1",
            "cambi.enc_bitdepth=",
            ".x=1",
        ] {
            let e = FeatureOverload::parse_list(bad).unwrap_err().to_string();
            assert!(e.contains(bad.split(':').next().unwrap()), "{bad}: {e}");
        }
        let o = FeatureOverload::parse_list("cambi.enc_bitdepth=99").unwrap();
        let e = Model::builtin_with("vmaf_v1.0.16_3d0h", &o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("enc_bitdepth"), "{e}");
        assert!(FeatureOverload::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn chroma_correction_is_refused_where_libvmaf_misbehaves() {
        let mut v: serde_json::Value =
            serde_json::from_str(builtin_json("vmaf_v1.0.16_3d0h").unwrap()).unwrap();
        let load = |v: &serde_json::Value| Model::from_json(&v.to_string());
        assert!(load(&v).is_ok());
        v["model_dict"]["chroma_correction_parameter"] = serde_json::json!(0.0);
        assert!(
            load(&v)
                .unwrap_err()
                .to_string()
                .contains("chroma_correction_parameter 0")
        );
        v["model_dict"]["chroma_correction_parameter"] = serde_json::json!(120.0);
        // No adm3 input: replace it by adm2.
        v["model_dict"]["feature_names"][2] = serde_json::json!("VMAF_integer_feature_adm2_score");
        assert!(load(&v).unwrap_err().to_string().contains("adm3"));
    }

    #[test]
    fn with_name_renames_outputs() {
        let b = Model::builtin("vmaf_b_v0.6.3").unwrap().with_name("q");
        assert_eq!(b.output_names()[0], "q");
        assert_eq!(b.output_names()[20], "q_0020");
        assert_eq!(b.output_names()[24], "q_ci_p95_hi");
    }

    #[test]
    fn percentile_interpolates() {
        let s = [0.0, 10.0, 20.0];
        assert_eq!(percentile(&s, 50.0), 10.0);
        // p = 2.5 * 2 / 100 = 0.05
        assert_eq!(percentile(&s, 2.5), 0.0 * (1.0 - 0.05) + 10.0 * 0.05);
        assert_eq!(percentile(&[7.0], 97.5), 7.0);
    }

    #[test]
    fn piecewise_mapping_by_hand() {
        let knots = [(0.0, 0.0), (50.0, 25.0), (100.0, 100.0)];
        let mut y = -1.0;
        piecewise_linear_mapping(25.0, &knots, &mut y);
        assert_eq!(y, 12.5);
        piecewise_linear_mapping(75.0, &knots, &mut y);
        assert_eq!(y, 62.5);
        // Above the last knot: the last segment extended.
        piecewise_linear_mapping(110.0, &knots, &mut y);
        assert_eq!(y, 115.0);
        // Below the first knot: the first segment extended.
        piecewise_linear_mapping(-10.0, &knots, &mut y);
        assert_eq!(y, -5.0);
        // Horizontal segment below the range.
        let flat = [(10.0, 5.0), (20.0, 5.0)];
        piecewise_linear_mapping(0.0, &flat, &mut y);
        assert_eq!(y, 5.0);
        // One knot: untouched.
        let mut y = 3.0;
        piecewise_linear_mapping(1.0, &[(0.0, 0.0)], &mut y);
        assert_eq!(y, 3.0);
        // Decreasing knots: libvmaf stops with y = 0.
        piecewise_linear_mapping(1.0, &[(2.0, 0.0), (1.0, 1.0)], &mut y);
        assert_eq!(y, 0.0);
    }
}
