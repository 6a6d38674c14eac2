//! The scoring engine, without GStreamer: push reference/distorted picture pairs, get per-frame
//! scores as soon as they are final, and a pooled summary at the end.
//!
//! ```no_run
//! use gstvmafgpu::engine::{Scorer, ScorerConfig};
//! # fn frames() -> Vec<(gstvmafgpu::Picture<'static>, gstvmafgpu::Picture<'static>)> { vec![] }
//! let mut scorer = Scorer::new(ScorerConfig::default())?;
//! for (reference, distorted) in frames() {
//!     for f in scorer.push(&reference, &distorted)? {
//!         println!("frame {}: vmaf {}", f.index, f.vmaf());
//!     }
//! }
//! let (last, summary) = scorer.finish()?;
//! # let _ = (last, summary);
//! # Ok::<(), gstvmafgpu::Error>(())
//! ```
//!
//! # What it computes, and how it matches libvmaf 3.2.0
//!
//! For every pushed pair the engine copies the luma planes (checking geometry and sample range
//! first, so a refused frame changes nothing), and a [`Backend`] computes the integer accumulators
//! of VIF, ADM and motion. The engine turns them into libvmaf's feature scores with the shared
//! code in [`crate::features`], derives `integer_motion2`/`integer_motion3` from the sequence of
//! motion SAD scores as libvmaf's motion `flush()` does, evaluates the model
//! ([`crate::model::Model`]) and pools every metric over the clip.
//!
//! - **Motion look-ahead**: `integer_motion2` of frame i is `min(sad[i], sad[i+1])`, so frame i is
//!   final when frame i+1's SAD is known; the last frame uses its own SAD (libvmaf's flush).
//!   [`Scorer::push`] returns the frames that have become final (in index order), [`Scorer::finish`]
//!   the rest.
//! - **Subsampling** (`subsample = N`, libvmaf's `--subsample N`): VIF, ADM and the model are
//!   evaluated only on frames whose index is a multiple of N; motion is computed on every frame
//!   (libvmaf exempts its previous-reference extractors from subsampling), so motion2 of a scored
//!   frame still compares it with its direct neighbours. Only scored frames are reported (with
//!   their original index) and pooled.
//! - **Names**: libvmaf's report names: `integer_adm2`, `integer_aim`, `integer_adm3`,
//!   `integer_adm_scale0..3`, `VMAF_integer_feature_motion_sad_score`, `integer_vif_scale0..3`,
//!   `integer_motion2`, `integer_motion3`, then the model outputs (`vmaf`, and for a bootstrap
//!   collection `vmaf_0001`.., `vmaf_bagging`, `vmaf_stddev`, `vmaf_ci_p95_lo`, `vmaf_ci_p95_hi`).
//!   Features computed with non-default options carry libvmaf's suffix (vmaf_v0.6.1neg:
//!   `integer_adm2_egl_1`, `integer_vif_scale0_egl_1`, ...).
//! - **Threads**: the CPU backend scores whole frames on worker threads; results are reordered,
//!   and the numbers do not depend on the number of threads.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::{
    self, Backend, ChromaPair, CompanionScores, FrameAccum, FrameJob, HostChroma, HostFrame,
    HostPlane,
};
use crate::error::{Error, Result};
use crate::features::adm::AdmParams;
use crate::features::motion::{self, MotionParams, MotionScores, MotionSequence};
use crate::features::vif::VifParams;
use crate::features::{MIN_HEIGHT, MIN_WIDTH};
use crate::model::{
    AdmOptions, Extractor, ExtractorOptions, FeatureOverload, Model, MotionOptions,
    PoolAccumulator, PredictOptions, VifOptions, alias,
};
use crate::picture::{Chroma, ChromaFormat, OwnedPlane, Picture};

pub use crate::backend::{BackendKind, Companions};

mod host;
pub use crate::model::{PoolMethod, PooledStats, pool};
use host::{HostKind, HostPool, HostSet, HostValues};

/// Where the model comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelSource {
    /// A model built into libvmaf 3.2.0 (and into this crate): `vmaf_v0.6.1` (the default),
    /// `vmaf_v0.6.1neg`, `vmaf_4k_v0.6.1`, `vmaf_b_v0.6.3` (bootstrap collection).
    Builtin(String),
    /// A libvmaf JSON model file.
    Path(PathBuf),
    /// The text of a libvmaf JSON model.
    Json(String),
}

impl Default for ModelSource {
    fn default() -> Self {
        ModelSource::Builtin(crate::model::DEFAULT_MODEL.to_string())
    }
}

/// Scorer settings.
#[derive(Clone, Debug)]
pub struct ScorerConfig {
    pub model: ModelSource,
    /// libvmaf's `disable_clip` model flag: do not clip the score to the model's range.
    pub disable_clip: bool,
    /// libvmaf's `enable_transform` model flag: apply the model's score transform.
    pub enable_transform: bool,
    /// CPU worker threads; 0 = one per available core.
    pub threads: usize,
    /// Score every Nth frame (libvmaf `--subsample N`); 0 and 1 score every frame.
    pub subsample: u32,
    pub backend: BackendKind,
    /// GPU ordinal for the GPU backends.
    pub device_id: u32,
    /// Companion metrics computed next to VMAF (none by default).
    pub companions: Companions,
    /// libvmaf's model feature overloads (`vmaf -m version=...:cambi.enc_bitdepth=8`), applied
    /// to the model's features when it is loaded.
    pub model_params: Vec<FeatureOverload>,
    /// Standalone v1 metrics with libvmaf's default options (`--feature cambi` ...).
    pub extras: Extras,
}

/// libvmaf's `cambi`, `speed_chroma` and `speed_temporal` as standalone metrics (default
/// options, reported as `cambi`, `speed_chroma_u`/`_v`/`_uv`, `speed_temporal`). They are
/// computed on the host CPU beside any backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Extras {
    pub cambi: bool,
    pub speed_chroma: bool,
    pub speed_temporal: bool,
}

impl Extras {
    pub fn any(&self) -> bool {
        self.cambi || self.speed_chroma || self.speed_temporal
    }
}

impl Default for ScorerConfig {
    fn default() -> Self {
        ScorerConfig {
            model: ModelSource::default(),
            disable_clip: false,
            enable_transform: false,
            threads: 0,
            subsample: 1,
            backend: BackendKind::Auto,
            device_id: 0,
            companions: Companions::default(),
            model_params: Vec::new(),
            extras: Extras::default(),
        }
    }
}

/// The scores of one frame, with libvmaf's names, in libvmaf's report order.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameScores {
    /// Frame number: 0-based, counting every pushed frame since the start (or the last
    /// `finish()`/`reset()`), including frames that subsampling skips.
    pub index: u64,
    pub metrics: Vec<(String, f64)>,
}

impl FrameScores {
    /// The value of a metric by its libvmaf name.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
    }

    /// The model's score (`vmaf`); NaN if absent.
    pub fn vmaf(&self) -> f64 {
        self.get("vmaf").unwrap_or(f64::NAN)
    }
}

/// The pooled values of every metric over the scored frames of a clip.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Frames scored (and pooled): every frame, or every Nth with subsampling.
    pub frames: u64,
    /// Same names and order as [`FrameScores::metrics`]; empty when no frame was scored.
    pub pooled: Vec<(String, PooledStats)>,
}

impl Summary {
    pub fn get(&self, name: &str) -> Option<&PooledStats> {
        self.pooled.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }
}

// ---------------------------------------------------------------------------------------------
// The plan: what to compute and how to name it, from the model.

/// Where a model input's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Vif(usize),
    Adm2,
    Aim,
    Adm3,
    AdmScale(usize),
    MotionSad,
    Motion2,
    Motion3,
    /// Output `k` of host extractor `j` (`Plan::host`).
    Host(usize, usize),
}

impl Slot {
    /// Which output of its host extractor a model feature is.
    fn host_output(model_name: &str) -> Option<usize> {
        Some(match model_name {
            "Cambi_feature_cambi_score" => 0,
            "Speed_chroma_feature_speed_chroma_u_score" => 0,
            "Speed_chroma_feature_speed_chroma_v_score" => 1,
            "Speed_chroma_feature_speed_chroma_uv_score" => 2,
            "Speed_temporal_feature_speed_temporal_score" => 0,
            _ => return None,
        })
    }

    /// The slot of a libvmaf feature name (collector name, before aliasing).
    fn of(model_name: &str) -> Option<Slot> {
        Some(match model_name {
            "VMAF_integer_feature_vif_scale0_score" => Slot::Vif(0),
            "VMAF_integer_feature_vif_scale1_score" => Slot::Vif(1),
            "VMAF_integer_feature_vif_scale2_score" => Slot::Vif(2),
            "VMAF_integer_feature_vif_scale3_score" => Slot::Vif(3),
            "VMAF_integer_feature_adm2_score" => Slot::Adm2,
            "VMAF_integer_feature_aim_score" => Slot::Aim,
            "VMAF_integer_feature_adm3_score" => Slot::Adm3,
            "integer_adm_scale0" => Slot::AdmScale(0),
            "integer_adm_scale1" => Slot::AdmScale(1),
            "integer_adm_scale2" => Slot::AdmScale(2),
            "integer_adm_scale3" => Slot::AdmScale(3),
            "VMAF_integer_feature_motion_sad_score" => Slot::MotionSad,
            "VMAF_integer_feature_motion2_score" => Slot::Motion2,
            "VMAF_integer_feature_motion3_score" => Slot::Motion3,
            _ => return None,
        })
    }
}

/// Extractors in the order the model first uses them (libvmaf registers them in that order, and
/// its reports list features in the order they were first written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ext {
    Vif,
    Adm,
    Motion,
    /// Host extractor `j` (`Plan::host`).
    Host(usize),
}

/// A host extractor of the plan and its report names (one per output).
#[derive(Clone, Debug)]
struct HostPlan {
    kind: HostKind,
    names: Vec<String>,
}

/// The report names of a host extractor's outputs: libvmaf's provided features with the option
/// suffix, through its alias table (cambi.c, speed.c `provided_features[]`; the full-reference
/// outputs of cambi are written under their plain names).
fn host_names(o: &ExtractorOptions) -> Vec<String> {
    match o {
        ExtractorOptions::Cambi(c) => {
            let mut v = vec![o.feature_name("Cambi_feature_cambi_score")];
            if c.full_ref {
                v.push("cambi_source".into());
                v.push("cambi_full_reference".into());
            }
            v
        }
        ExtractorOptions::SpeedChroma(_) => [
            "Speed_chroma_feature_speed_chroma_u_score",
            "Speed_chroma_feature_speed_chroma_v_score",
            "Speed_chroma_feature_speed_chroma_uv_score",
        ]
        .iter()
        .map(|f| o.feature_name(f))
        .collect(),
        ExtractorOptions::SpeedTemporal(_) => {
            vec![o.feature_name("Speed_temporal_feature_speed_temporal_score")]
        }
        _ => Vec::new(),
    }
}

fn host_kind(o: &ExtractorOptions) -> Result<Option<HostKind>> {
    Ok(Some(match o {
        ExtractorOptions::Cambi(c) => HostKind::Cambi(host::cambi_params(c)?),
        ExtractorOptions::SpeedChroma(c) => HostKind::SpeedChroma(host::speed_chroma_params(c)?),
        ExtractorOptions::SpeedTemporal(c) => {
            HostKind::SpeedTemporal(host::speed_temporal_params(c)?)
        }
        _ => return Ok(None),
    }))
}

#[derive(Clone, Debug)]
struct Plan {
    vif: VifParams,
    adm: AdmParams,
    motion: MotionParams,
    /// Extractors the model uses, in first-use order.
    order: Vec<Ext>,
    /// Report names (with option suffixes).
    vif_names: [String; 4],
    /// adm2, aim, adm3, scale0..3.
    adm_names: [String; 7],
    /// sad, motion2, motion3.
    motion_names: [String; 3],
    /// One slot per `model.features()` entry.
    slots: Vec<Slot>,
    predict: PredictOptions,
    /// Host extractors: the model's (in first-use order), then the standalone ones.
    host: Vec<HostPlan>,
}

fn unsupported(what: &str) -> Error {
    Error::Model(format!(
        "the model sets {what}, which vmafgpu does not implement"
    ))
}

fn vif_params(o: &VifOptions) -> Result<VifParams> {
    if o.skip_scale0 {
        return Err(unsupported("vif_skip_scale0"));
    }
    if o.debug {
        return Err(unsupported("the vif debug option"));
    }
    let p = VifParams {
        enhn_gain_limit: o.enhn_gain_limit,
    };
    p.validate()?;
    Ok(p)
}

fn adm_params(o: &AdmOptions) -> Result<AdmParams> {
    // adm_csf_mode 0 (Watson) and 2 (the Barten-Watson blend of the v1 models) are computed;
    // AdmParams::validate refuses the others with the reason.
    if o.skip_aim || o.skip_scale0 {
        return Err(unsupported("adm_skip_aim / adm_skip_scale0"));
    }
    if o.debug {
        return Err(unsupported("the adm debug option"));
    }
    let ref_display_height = u32::try_from(o.ref_display_height)
        .map_err(|_| Error::Model(format!("adm_ref_display_height {}", o.ref_display_height)))?;
    let p = AdmParams {
        enhn_gain_limit: o.enhn_gain_limit,
        norm_view_dist: o.norm_view_dist,
        ref_display_height,
        noise_weight: o.noise_weight,
        dlm_weight: o.dlm_weight,
        min_val: o.min_val,
        csf_mode: o.csf_mode,
    };
    p.validate()?;
    Ok(p)
}

fn motion_params(o: &MotionOptions) -> Result<MotionParams> {
    if o.debug {
        return Err(unsupported("the motion debug option"));
    }
    Ok(MotionParams {
        force_zero: o.force_zero,
        blend_factor: o.blend_factor,
        blend_offset: o.blend_offset,
        fps_weight: o.fps_weight,
        max_val: o.max_val,
        five_frame_window: o.five_frame_window,
        moving_average: o.moving_average,
    })
}

impl Plan {
    fn new(model: &Model, predict: PredictOptions, extras: Extras) -> Result<Plan> {
        let mut vif = None;
        let mut adm = None;
        let mut motion = None;
        let mut order = Vec::new();
        let (mut vif_sfx, mut adm_sfx, mut motion_sfx) = (None, None, None);
        let mut slots = Vec::with_capacity(model.features().len());
        let mut host: Vec<HostPlan> = Vec::new();
        // A host extractor's index in `host`, added at its first use.
        fn host_index(host: &mut Vec<HostPlan>, o: &ExtractorOptions) -> Result<Option<usize>> {
            let Some(kind) = host_kind(o)? else {
                return Ok(None);
            };
            let names = host_names(o);
            if let Some(j) = host.iter().position(|h| h.kind == kind) {
                return Ok(Some(j));
            }
            host.push(HostPlan { kind, names });
            Ok(Some(host.len() - 1))
        }
        for f in model.features() {
            if let Some(j) = host_index(&mut host, &f.options)? {
                let k = Slot::host_output(&f.model_name).ok_or_else(|| {
                    Error::Model(format!(
                        "{}: feature {} is not one the engine computes",
                        model.source(),
                        f.model_name
                    ))
                })?;
                slots.push(Slot::Host(j, k));
                if !order.contains(&Ext::Host(j)) {
                    order.push(Ext::Host(j));
                }
                continue;
            }
            let slot = Slot::of(&f.model_name).ok_or_else(|| {
                Error::Model(format!(
                    "{}: feature {} is not one the engine computes",
                    model.source(),
                    f.model_name
                ))
            })?;
            slots.push(slot);
            // libvmaf's name for this feature is alias(name) + suffix of the non-default options.
            let base = alias(&f.model_name);
            let suffix = f
                .name
                .strip_prefix(base)
                .ok_or_else(|| {
                    Error::Model(format!(
                        "{}: unexpected feature name {}",
                        model.source(),
                        f.name
                    ))
                })?
                .to_string();
            let (ext, seen_sfx) = match &f.options {
                ExtractorOptions::Vif(o) => {
                    let p = vif_params(o)?;
                    if vif.is_some_and(|v| v != p) {
                        return Err(unsupported("two different VIF configurations"));
                    }
                    vif = Some(p);
                    (Ext::Vif, &mut vif_sfx)
                }
                ExtractorOptions::Adm(o) => {
                    let p = adm_params(o)?;
                    if adm.is_some_and(|v| v != p) {
                        return Err(unsupported("two different ADM configurations"));
                    }
                    adm = Some(p);
                    (Ext::Adm, &mut adm_sfx)
                }
                ExtractorOptions::Motion(o) => {
                    let p = motion_params(o)?;
                    if motion.is_some_and(|v| v != p) {
                        return Err(unsupported("two different motion configurations"));
                    }
                    motion = Some(p);
                    (Ext::Motion, &mut motion_sfx)
                }
                ExtractorOptions::Cambi(_)
                | ExtractorOptions::SpeedChroma(_)
                | ExtractorOptions::SpeedTemporal(_) => {
                    return Err(Error::State(
                        "internal: host extractor in the device plan".into(),
                    ));
                }
            };
            if seen_sfx.is_none() {
                *seen_sfx = Some(suffix);
            }
            if !order.contains(&ext) {
                order.push(ext);
            }
        }
        // The standalone metrics (libvmaf's default options), unless the model computes them
        // with the same options already.
        for (on, e) in [
            (extras.cambi, Extractor::Cambi),
            (extras.speed_chroma, Extractor::SpeedChroma),
            (extras.speed_temporal, Extractor::SpeedTemporal),
        ] {
            if !on {
                continue;
            }
            let o = ExtractorOptions::from_dict(e, &[]).map_err(Error::Model)?;
            if let Some(j) = host_index(&mut host, &o)?
                && !order.contains(&Ext::Host(j))
            {
                order.push(Ext::Host(j));
            }
        }
        let vs = vif_sfx.unwrap_or_default();
        let a = adm_sfx.unwrap_or_default();
        let m = motion_sfx.unwrap_or_default();
        Ok(Plan {
            vif: vif.unwrap_or_default(),
            adm: adm.unwrap_or_default(),
            motion: motion.unwrap_or_default(),
            order,
            vif_names: std::array::from_fn(|k| format!("integer_vif_scale{k}{vs}")),
            adm_names: [
                format!("integer_adm2{a}"),
                format!("integer_aim{a}"),
                format!("integer_adm3{a}"),
                format!("integer_adm_scale0{a}"),
                format!("integer_adm_scale1{a}"),
                format!("integer_adm_scale2{a}"),
                format!("integer_adm_scale3{a}"),
            ],
            motion_names: [
                format!("VMAF_integer_feature_motion_sad_score{m}"),
                format!("integer_motion2{m}"),
                format!("integer_motion3{m}"),
            ],
            slots,
            predict,
            host,
        })
    }

    /// The host extractors' kinds, in `host` order.
    fn host_kinds(&self) -> Vec<HostKind> {
        self.host.iter().map(|h| h.kind.clone()).collect()
    }

    fn uses(&self, e: Ext) -> bool {
        self.order.contains(&e)
    }
}

/// Where [`Scorer::push`]'s time goes, since the process started (a diagnostic for
/// benchmarks, see [`push_times`]): calls, then nanoseconds copying the planes, submitting the
/// frame to the backend, collecting results (waiting when too many frames are in flight).
static PUSH_NS: [std::sync::atomic::AtomicU64; 4] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 4];

fn push_time(i: usize, since: std::time::Instant) -> std::time::Instant {
    crate::backend::add_elapsed(&PUSH_NS[i], since)
}

/// [`Scorer::push`]'s totals since the process started: (calls, nanoseconds copying the planes,
/// submitting to the backend, collecting results). Differences of two readings give a run's.
pub fn push_times() -> [u64; 4] {
    std::array::from_fn(|i| PUSH_NS[i].load(std::sync::atomic::Ordering::Relaxed))
}

/// Copy (and check) both luma planes and, where `chroma` is given, both pictures' chroma at
/// libvmaf's size (returns whether the pictures have chroma). Large frames on several threads
/// at once, since this copy is the engine's own per-frame work on the calling thread (what
/// limits it in front of a GPU).
fn copy_frame(
    reference: &Picture<'_>,
    r: &mut OwnedPlane,
    distorted: &Picture<'_>,
    d: &mut OwnedPlane,
    chroma: Option<&mut ChromaPair>,
) -> Result<bool> {
    const PARALLEL_FROM: usize = 1 << 20;
    let chroma_of = |p: &Picture<'_>, uv: Option<&mut [OwnedPlane; 2]>| -> Result<bool> {
        match uv {
            Some([u, v]) => p.copy_chroma_libvmaf(u, v),
            None => Ok(false),
        }
    };
    let (rc, dc) = match chroma {
        Some(ChromaPair {
            reference: rc,
            distorted: dc,
        }) => (Some(rc), Some(dc)),
        None => (None, None),
    };
    if reference.width * reference.height < PARALLEL_FROM {
        reference.copy_luma(r)?;
        distorted.copy_luma(d)?;
        let has = chroma_of(reference, rc)?;
        return Ok(chroma_of(distorted, dc)? && has);
    }
    // The planes at once: the distorted luma and each picture's chroma on threads of their
    // own, the reference luma here. Errors in the sequential order (reference luma, distorted
    // luma, reference chroma, distorted chroma).
    fn spawn<'scope, F>(
        s: &'scope std::thread::Scope<'scope, '_>,
        f: F,
    ) -> Result<std::thread::ScopedJoinHandle<'scope, Result<bool>>>
    where
        F: FnOnce() -> Result<bool> + Send + 'scope,
    {
        std::thread::Builder::new()
            .spawn_scoped(s, f)
            // No thread to be had (resources exhausted): refuse the frame, nothing is lost.
            .map_err(|e| Error::State(format!("cannot start a thread to copy the frame: {e}")))
    }
    std::thread::scope(|s| {
        let with_chroma = rc.is_some();
        let dl = spawn(s, || distorted.copy_luma(d).map(|()| true));
        let rch = with_chroma.then(|| spawn(s, move || chroma_of(reference, rc)));
        let dch = with_chroma.then(|| spawn(s, move || chroma_of(distorted, dc)));
        let first = reference.copy_luma(r);
        let join = |h: Result<std::thread::ScopedJoinHandle<'_, Result<bool>>>| {
            h.and_then(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::State("plane copy thread panicked".into())))
            })
        };
        let second = join(dl);
        let third = rch.map(join).unwrap_or(Ok(false));
        let fourth = dch.map(join).unwrap_or(Ok(false));
        first?;
        second?;
        let has = third?;
        Ok(fourth? && has)
    })
}

// ---------------------------------------------------------------------------------------------
// Companion metrics.

/// libvmaf's names of the companion metrics.
const SSIM: &str = "float_ssim";
const MS_SSIM: &str = "float_ms_ssim";
const CIEDE: &str = "ciede2000";
const PSNR_HVS: [&str; 4] = ["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"];

type Named = Vec<(String, f64)>;

/// The companion metrics of a frame with their libvmaf names, split as libvmaf 3.2.0 orders its
/// report (the goldens): `psnr_y/_cb/_cr` before the model's features, `float_ssim`,
/// `float_ms_ssim`, `ciede2000`, `psnr_hvs_*` after them (and before `integer_motion2`, which
/// libvmaf writes at the look-ahead).
fn companion_metrics(c: Companions, s: &CompanionScores) -> Result<(Named, Named)> {
    fn missing(what: &str) -> Error {
        Error::Backend(format!("the backend did not compute {what}"))
    }
    let mut before = Vec::new();
    let mut after = Vec::new();
    if c.psnr {
        let p = s.psnr.ok_or_else(|| missing("psnr"))?;
        let names = crate::features::psnr::NAMES;
        before.push((names[0].to_string(), p.y));
        if let (Some(cb), Some(cr)) = (p.cb, p.cr) {
            before.push((names[1].to_string(), cb));
            before.push((names[2].to_string(), cr));
        }
    }
    if c.ssim {
        let v = s.ssim.ok_or_else(|| missing(SSIM))?;
        after.push((SSIM.to_string(), v.ssim));
    }
    if c.ms_ssim {
        let v = s.ms_ssim.ok_or_else(|| missing(MS_SSIM))?;
        after.push((MS_SSIM.to_string(), v.ms_ssim));
    }
    if c.ciede {
        let v = s.ciede.ok_or_else(|| missing(CIEDE))?;
        after.push((CIEDE.to_string(), v));
    }
    if c.psnr_hvs {
        let v = s.psnr_hvs.ok_or_else(|| missing("psnr_hvs"))?;
        after.extend(
            PSNR_HVS
                .iter()
                .map(|n| n.to_string())
                .zip([v.y, v.cb, v.cr, v.psnr_hvs]),
        );
    }
    Ok((before, after))
}

// ---------------------------------------------------------------------------------------------
// Per-clip state.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    width: usize,
    height: usize,
    bpc: u8,
    format: ChromaFormat,
}

#[derive(Default)]
struct Clip {
    /// Set by the first frame of the clip; later frames must match it.
    geometry: Option<Geometry>,
    /// Index of the next pushed frame.
    next_index: u64,
    /// The last reference planes (the newest at the back), for motion (2 with the five-frame
    /// window); with the caller's plane when the frame came through [`Scorer::push_shared`]
    /// on the zero-copy route (the compact plane then holds only the geometry).
    refs: VecDeque<(Arc<OwnedPlane>, Option<HostPlane>)>,
    /// Jobs submitted and not yet received.
    in_flight: usize,
    /// Received results (with their host features' values) waiting for their motion scores to
    /// become final, in index order.
    waiting: VecDeque<(u64, bool, FrameAccum, HostValues)>,
    /// The last pushed frame's (reference, distorted) luma, for `speed_temporal`.
    previous: Option<(Arc<OwnedPlane>, Arc<OwnedPlane>)>,
    /// A frame's host values taken from the host pool before the backend's result came.
    host_ready: Option<(u64, HostValues)>,
    motion: Option<MotionSequence>,
    /// Pooling accumulators, one per metric in report order (set up by the first scored frame).
    pooled: Vec<(String, PoolAccumulator)>,
    frames_scored: u64,
    /// Set when a backend refused a frame after taking it ([`Error::FrameRefused`]): the clip
    /// ends before that frame and takes no more frames until `finish()`.
    cut: Option<u64>,
    /// Frames made final by the call that met the refusal, returned first by `finish()`.
    held: Vec<FrameScores>,
}

/// The scorer. See the [module docs](self).
pub struct Scorer {
    cfg: ScorerConfig,
    model: Model,
    model_name: String,
    plan: Plan,
    backend: Box<dyn Backend>,
    clip: Clip,
    /// Recycled planes: an entry whose `Arc` is unique is free.
    buffers: Vec<Arc<OwnedPlane>>,
    /// Planes allocated so far (they are recycled, so this stays small).
    buffers_allocated: u64,
    /// Recycled chroma planes for the companion metrics.
    chroma_buffers: Vec<Arc<ChromaPair>>,
    /// The geometry-only plane of zero-copy jobs (see [`Backend::submit_host`]).
    shape: Option<Arc<OwnedPlane>>,
    /// The host feature threads (CAMBI, SpEED), when the plan has host extractors.
    host_pool: Option<HostPool>,
    /// The host extractors prepared for a geometry.
    host_set: Option<(Geometry, Arc<HostSet>)>,
}

impl Scorer {
    /// Load the model (a bad model is [`Error::Model`]) and open the backend
    /// ([`Error::Backend`] if an explicitly requested GPU backend cannot be used).
    pub fn new(cfg: ScorerConfig) -> Result<Scorer> {
        Scorer::build(cfg, |c| backend::create(c.backend, c.threads, c.device_id))
    }

    /// A scorer on a backend of the caller's (for tests and measurements of the engine alone;
    /// `cfg.backend`, `cfg.threads` and `cfg.device_id` are then not used).
    pub fn with_backend(cfg: ScorerConfig, backend: Box<dyn Backend>) -> Result<Scorer> {
        Scorer::build(cfg, |_| Ok(backend))
    }

    /// The model first (a bad model fails before any device is opened), then the backend.
    fn build(
        cfg: ScorerConfig,
        open: impl FnOnce(&ScorerConfig) -> Result<Box<dyn Backend>>,
    ) -> Result<Scorer> {
        let o = &cfg.model_params;
        let (model, model_name) = match &cfg.model {
            ModelSource::Builtin(name) => (Model::builtin_with(name, o)?, name.clone()),
            ModelSource::Path(p) => (
                Model::from_path_with(p, o)?,
                p.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| p.display().to_string()),
            ),
            ModelSource::Json(text) => (Model::from_json_with(text, o)?, "custom".to_string()),
        };
        let plan = Plan::new(
            &model,
            PredictOptions {
                disable_clip: cfg.disable_clip,
                enable_transform: cfg.enable_transform,
            },
            cfg.extras,
        )?;
        let host_pool = if plan.host.is_empty() {
            None
        } else {
            let threads = match cfg.threads {
                0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
                n => n,
            };
            Some(HostPool::new(threads)?)
        };
        let mut backend = open(&cfg)?;
        if cfg.companions.any() {
            backend.prepare(cfg.companions)?;
        }
        Ok(Scorer {
            cfg,
            model,
            model_name,
            plan,
            backend,
            clip: Clip::default(),
            buffers: Vec::new(),
            buffers_allocated: 0,
            chroma_buffers: Vec::new(),
            shape: None,
            host_pool,
            host_set: None,
        })
    }

    /// The backend computing the features: "cpu", "cuda", ...
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The model: its built-in name, the file stem of a model file, or "custom" for JSON text.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The loaded model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn config(&self) -> &ScorerConfig {
        &self.cfg
    }

    /// The metric names every frame reports, in order.
    pub fn metric_names(&self) -> Vec<String> {
        let p = &self.plan;
        let c = self.cfg.companions;
        let gray = self
            .clip
            .geometry
            .is_some_and(|g| g.format == ChromaFormat::Gray);
        let mut names = Vec::new();
        if c.psnr {
            let planes = if gray { 1 } else { 3 };
            names.extend(
                crate::features::psnr::NAMES[..planes]
                    .iter()
                    .map(|n| n.to_string()),
            );
        }
        for e in &p.order {
            match e {
                Ext::Adm => names.extend(p.adm_names.iter().cloned()),
                Ext::Motion => names.push(p.motion_names[0].clone()),
                Ext::Vif => names.extend(p.vif_names.iter().cloned()),
                Ext::Host(j) => names.extend(p.host[*j].names.iter().cloned()),
            }
        }
        for (on, list) in [
            (c.ssim, &[SSIM][..]),
            (c.ms_ssim, &[MS_SSIM][..]),
            (c.ciede, &[CIEDE][..]),
            (c.psnr_hvs, &PSNR_HVS[..]),
        ] {
            if on {
                names.extend(list.iter().map(|n| n.to_string()));
            }
        }
        if p.uses(Ext::Motion) {
            names.extend(p.motion_names[1..].iter().cloned());
        }
        names.extend(self.model.output_names().iter().cloned());
        names
    }

    /// Frames pushed in the current clip.
    pub fn frames_pushed(&self) -> u64 {
        self.clip.next_index
    }

    fn subsample(&self) -> u64 {
        u64::from(self.cfg.subsample.max(1))
    }

    /// Check a pair before anything is taken from it.
    fn validate(&self, r: &Picture<'_>, d: &Picture<'_>) -> Result<Geometry> {
        if let Some(n) = self.clip.cut {
            return Err(Error::State(format!(
                "frame {n} was refused after it was taken, which ended the clip at frame {}: \
                 call finish() (its remaining scores) or reset() before pushing again",
                n.saturating_sub(1)
            )));
        }
        r.validate()?;
        d.validate()?;
        let g = Geometry {
            width: r.width,
            height: r.height,
            bpc: r.bpc,
            format: r.format,
        };
        let gd = Geometry {
            width: d.width,
            height: d.height,
            bpc: d.bpc,
            format: d.format,
        };
        if g != gd {
            return Err(Error::Mismatch(format!(
                "reference is {}x{} {:?} at {} bits, distorted {}x{} {:?} at {} bits",
                g.width, g.height, g.format, g.bpc, gd.width, gd.height, gd.format, gd.bpc
            )));
        }
        if g.width < MIN_WIDTH || g.height < MIN_HEIGHT {
            return Err(Error::TooSmall {
                width: g.width,
                height: g.height,
                min_width: MIN_WIDTH,
                min_height: MIN_HEIGHT,
            });
        }
        self.validate_companions(r, d, &g)?;
        if let Some(c) = self.clip.geometry
            && c != g
        {
            return Err(Error::Mismatch(format!(
                "frame {} is {}x{} {:?} at {} bits, but the clip started at {}x{} {:?} at {} bits",
                self.clip.next_index,
                g.width,
                g.height,
                g.format,
                g.bpc,
                c.width,
                c.height,
                c.format,
                c.bpc
            )));
        }
        Ok(g)
    }

    /// What the companion metrics need of a pair; libvmaf refuses the same cases.
    fn validate_companions(&self, r: &Picture<'_>, d: &Picture<'_>, g: &Geometry) -> Result<()> {
        let c = self.cfg.companions;
        if c.ms_ssim {
            crate::features::ms_ssim::check_size(g.width, g.height)?;
        }
        let no_chroma = g.format == ChromaFormat::Gray
            || matches!(r.chroma, Chroma::None)
            || matches!(d.chroma, Chroma::None);
        for (on, metric, what) in [
            (c.ciede, "ciede", "CIEDE2000"),
            (c.psnr_hvs, "psnr_hvs", "PSNR-HVS"),
        ] {
            if on && no_chroma {
                return Err(Error::Unsupported {
                    metric,
                    reason: format!("{what} needs the chroma planes, and the picture has none"),
                });
            }
        }
        if c.psnr_hvs && g.bpc > 12 {
            return Err(Error::Unsupported {
                metric: "psnr_hvs",
                reason: format!("{}-bit samples (libvmaf allows at most 12 bits)", g.bpc),
            });
        }
        Ok(())
    }

    /// A free chroma buffer (unique `Arc`), recycled when possible.
    fn take_chroma(&mut self) -> Arc<ChromaPair> {
        match self
            .chroma_buffers
            .iter_mut()
            .position(|b| Arc::get_mut(b).is_some())
        {
            Some(i) => self.chroma_buffers.swap_remove(i),
            None => Arc::new(ChromaPair::default()),
        }
    }

    /// Keep `pair` for reuse (up to a few more than the frames in flight), returning it.
    fn keep_chroma(&mut self, pair: Arc<ChromaPair>) -> Arc<ChromaPair> {
        let cap = self.backend.max_in_flight() + 4;
        if self.chroma_buffers.len() < cap {
            self.chroma_buffers.push(Arc::clone(&pair));
        }
        pair
    }

    /// A free plane buffer (unique `Arc`), recycled when possible.
    fn take_buffer(&mut self) -> Arc<OwnedPlane> {
        match self
            .buffers
            .iter_mut()
            .position(|b| Arc::get_mut(b).is_some())
        {
            Some(i) => self.buffers.swap_remove(i),
            None => {
                self.buffers_allocated += 1;
                Arc::new(OwnedPlane::default())
            }
        }
    }

    /// Keep a buffer for reuse (bounded: a few more than can be in use at once).
    fn keep_buffer(&mut self, b: Arc<OwnedPlane>) {
        let cap = 2 * self.backend.max_in_flight() + 6;
        if self.buffers.len() < cap {
            self.buffers.push(b);
        }
    }

    /// Submit one pair. It is validated (size at least 33x33, equal geometry, format and bit depth
    /// for both pictures and for every frame of the clip, samples within `bpc` bits) before the
    /// scorer takes it: an `Err` changes nothing and the scorer stays usable.
    ///
    /// Returns the frames that became final, in index order (usually earlier frames: motion needs
    /// the next frame, and the backend works on several frames at once).
    pub fn push(
        &mut self,
        reference: &Picture<'_>,
        distorted: &Picture<'_>,
    ) -> Result<Vec<FrameScores>> {
        let geometry = self.validate(reference, distorted)?;
        let host_set = self.host_set_for(&geometry)?;
        let t_copy = std::time::Instant::now();

        let index = self.clip.next_index;
        let features = index.is_multiple_of(self.subsample());
        let companions = self.cfg.companions;
        let host_chroma = self.plan.host.iter().any(|h| h.kind.needs_chroma());
        let mut rbuf = self.take_buffer();
        let mut dbuf = self.take_buffer();
        let mut pair =
            (features && (companions.needs_chroma() || host_chroma)).then(|| self.take_chroma());
        let copied = {
            // All are unique: fresh, or free buffers from the pools.
            let (Some(r), Some(d)) = (Arc::get_mut(&mut rbuf), Arc::get_mut(&mut dbuf)) else {
                return Err(Error::State("internal: plane buffer in use".into()));
            };
            match pair.as_mut().map(Arc::get_mut) {
                Some(None) => Err(Error::State("internal: chroma buffer in use".into())),
                Some(Some(c)) => copy_frame(reference, r, distorted, d, Some(c)),
                None => copy_frame(reference, r, distorted, d, None),
            }
        };
        let chroma = match copied {
            Ok(has) => pair.map(|p| self.keep_chroma(p)).filter(|_| has),
            Err(e) => {
                self.keep_buffer(rbuf);
                self.keep_buffer(dbuf);
                if let Some(p) = pair {
                    self.keep_chroma(p);
                }
                return Err(e);
            }
        };
        let t_submit = push_time(1, t_copy);

        // Accepted: from here on the frame belongs to the clip.
        let distance = self.plan.motion.frame_distance() as usize;
        // libvmaf: the SAD of frame i looks at frame i-1 (i-2 with the five-frame window), and
        // frames before that have none.
        let prev_ref = if self.plan.uses(Ext::Motion) && self.clip.refs.len() >= distance {
            Some(match &self.clip.refs[self.clip.refs.len() - distance] {
                (p, None) => Arc::clone(p),
                // The previous frame came through push_shared: its samples are the caller's.
                (_, Some(h)) => Arc::new(h.to_owned_plane()),
            })
        } else {
            None
        };
        let job = FrameJob {
            index,
            reference: Arc::clone(&rbuf),
            distorted: Arc::clone(&dbuf),
            prev_ref,
            vif: self.plan.vif,
            adm: self.plan.adm,
            features,
            needs: backend::Needs {
                vif: self.plan.uses(Ext::Vif),
                adm: self.plan.uses(Ext::Adm),
            },
            companions: if features {
                companions
            } else {
                Companions::default()
            },
            chroma: chroma.clone().filter(|_| companions.needs_chroma()),
        };
        if let Err(e) = self.backend.submit(job) {
            self.abort_clip();
            return Err(e);
        }
        let previous = self.clip.previous.take();
        if self.plan.host.iter().any(|h| h.kind.needs_previous()) {
            self.clip.previous = Some((Arc::clone(&rbuf), Arc::clone(&dbuf)));
        }
        if let (Some(set), Some(pool), true) = (&host_set, self.host_pool.as_mut(), features) {
            let frame = host::HostFrame {
                reference: Arc::clone(&rbuf),
                distorted: Arc::clone(&dbuf),
                chroma,
                previous,
            };
            if let Err(e) = pool.submit(index, set, frame) {
                self.abort_clip();
                return Err(e);
            }
        }
        let t_collect = push_time(2, t_submit);
        self.clip.geometry = Some(geometry);
        self.clip.next_index += 1;
        self.clip.in_flight += 1;
        self.clip.refs.push_back((Arc::clone(&rbuf), None));
        while self.clip.refs.len() > distance {
            self.clip.refs.pop_front();
        }
        self.keep_buffer(rbuf);
        self.keep_buffer(dbuf);

        let mut out = Vec::new();
        // Keep the backend busy but bounded: wait once too much is in flight.
        let max = self.backend.max_in_flight().max(1);
        self.collect(false, &mut out)?;
        while self.clip.in_flight > max {
            self.collect_one(true, &mut out)?;
        }
        push_time(3, t_collect);
        PUSH_NS[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(out)
    }

    /// Whether a frame's whole work (VMAF and the companion metrics asked for) runs on a GPU,
    /// about a millisecond a frame once pushed: then waiting for it ([`Scorer::poll`] with
    /// `wait`) right after a push gives the previous frame's scores without holding up the
    /// next frames.
    pub fn computes_on_device(&self) -> bool {
        self.plan.host.is_empty() && self.backend.computes_on_device(self.cfg.companions)
    }

    /// Whether [`Scorer::push_shared`] takes the zero-copy route: the backend reads planes in
    /// the caller's memory (the CUDA backend). Otherwise `push_shared` is `push`.
    pub fn takes_host_planes(&self) -> bool {
        // The host extractors (CAMBI, SpEED) read the engine's own copies of the planes.
        self.plan.host.is_empty() && self.backend.accepts_host_planes()
    }

    /// Whether the zero-copy route also wants the pictures' chroma planes
    /// ([`Scorer::push_shared_with_chroma`]): a companion metric that reads them is on.
    /// Without them such frames take `push`'s route (as every frame with a companion metric
    /// does under VMAFGPU_HOST_CHROMA=0, a switch for measurements).
    pub fn wants_host_chroma(&self) -> bool {
        static OFF: std::sync::LazyLock<bool> =
            std::sync::LazyLock::new(|| std::env::var("VMAFGPU_HOST_CHROMA").as_deref() == Ok("0"));
        self.takes_host_planes() && self.cfg.companions.needs_chroma() && !*OFF
    }

    /// Whether [`Scorer::push_shared_with_chroma`] scores every frame from the planes it is
    /// handed (with the pictures' chroma where [`Scorer::wants_host_chroma`]), never reading the
    /// pictures' own planes (`push`'s route). Callers whose pictures' planes are not the samples
    /// (MSB-aligned formats such as P010, whose host planes say their shift) may use the
    /// zero-copy route only then.
    pub fn shares_every_frame(&self) -> bool {
        self.takes_host_planes()
            && (self.wants_host_chroma() || !self.cfg.companions.needs_chroma())
    }

    /// [`Scorer::push`] without copying the luma planes where the backend can read them where
    /// they are ([`Scorer::takes_host_planes`]): `ref_luma` and `dist_luma` are the luma planes of
    /// `reference` and `distorted` in memory they keep alive (a mapped buffer, a pinned buffer of
    /// the element's pool). The backend uploads straight from them (without any host copy when
    /// they are pinned) and drops them once it no longer reads them; the scorer keeps the last
    /// reference for motion. Validation is `push`'s and the scores are `push`'s. Samples above
    /// `bpc` bits are refused before anything is taken (an `Err` changes nothing), except on a
    /// backend that checks them itself ([`Backend::checks_host_ranges`]: the CUDA backend, on
    /// the GPU, so that the streaming thread never reads the planes): there the frame is
    /// refused when its result is read, by a later `push_shared`, `poll` or `finish`, with
    /// [`Error::FrameRefused`]; the clip then ends at the frame before it (the frames pushed
    /// after it are dropped) and `finish()` returns its remaining scores and summary.
    ///
    /// The samples scored are those of `ref_luma` and `dist_luma` (the caller promises they are
    /// the pictures' luma); the pictures' own luma planes are read only when the route is
    /// `push`'s. With a companion metric that reads chroma on, frames take `push`'s route:
    /// [`Scorer::push_shared_with_chroma`] hands the chroma planes over too.
    pub fn push_shared(
        &mut self,
        reference: &Picture<'_>,
        distorted: &Picture<'_>,
        ref_luma: HostPlane,
        dist_luma: HostPlane,
    ) -> Result<Vec<FrameScores>> {
        self.push_shared_with_chroma(reference, distorted, ref_luma, dist_luma, None)
    }

    /// [`Scorer::push_shared`] with the pictures' chroma planes in the caller's memory too, at
    /// libvmaf's chroma size (`width >> ss_x` x `height >> ss_y` of the pictures' format; Cb,
    /// Cr), for the companion metrics that read them ([`Scorer::wants_host_chroma`]). A frame
    /// whose companion metrics need chroma and that comes without it takes `push`'s route.
    /// Chroma samples above `bpc` bits are refused before the frame is taken, by a scan on the
    /// host (9 to 15 bits; 8- and 16-bit planes cannot hold one).
    pub fn push_shared_with_chroma(
        &mut self,
        reference: &Picture<'_>,
        distorted: &Picture<'_>,
        ref_luma: HostPlane,
        dist_luma: HostPlane,
        chroma: Option<HostChroma>,
    ) -> Result<Vec<FrameScores>> {
        if !self.takes_host_planes() {
            return self.push(reference, distorted);
        }
        let features = self.clip.next_index.is_multiple_of(self.subsample());
        let companions = if features {
            self.cfg.companions
        } else {
            Companions::default()
        };
        let chroma = if companions.needs_chroma() {
            match chroma {
                Some(c) => Some(c),
                None => return self.push(reference, distorted),
            }
        } else {
            None
        };
        let geometry = self.validate(reference, distorted)?;
        for (p, what) in [(&ref_luma, "reference"), (&dist_luma, "distorted")] {
            if (p.width(), p.height(), p.bpc()) != (geometry.width, geometry.height, geometry.bpc) {
                return Err(Error::Mismatch(format!(
                    "{what} luma plane is {}x{} at {} bits, the picture {}x{} at {} bits",
                    p.width(),
                    p.height(),
                    p.bpc(),
                    geometry.width,
                    geometry.height,
                    geometry.bpc
                )));
            }
        }
        if let Some(c) = &chroma {
            let size = geometry
                .format
                .libvmaf_chroma_size(geometry.width, geometry.height);
            // Interleaved planes hold two samples (Cb, Cr) a chroma pixel.
            let pair = if matches!(c, HostChroma::Interleaved { .. }) {
                2
            } else {
                1
            };
            for (p, what) in c.named() {
                let got = (p.width(), p.height(), p.bpc());
                if size.is_none_or(|(w, h)| got != (pair * w, h, geometry.bpc)) {
                    return Err(Error::Mismatch(format!(
                        "{what} plane is {}x{} samples at {} bits, libvmaf's chroma of the {}x{} \
                         {:?} picture at {} bits is {size:?} (twice as wide interleaved)",
                        got.0,
                        got.1,
                        got.2,
                        geometry.width,
                        geometry.height,
                        geometry.format,
                        geometry.bpc
                    )));
                }
            }
        }
        // Luma first, then chroma, as push checks them. The backend's own check
        // (checks_host_ranges) covers the luma planes only.
        let mut scan = Vec::new();
        if !self.backend.checks_host_ranges() {
            scan.extend([(&ref_luma, "luma"), (&dist_luma, "luma")]);
        }
        if let Some(c) = &chroma {
            scan.extend(c.named());
        }
        crate::backend::host::check_ranges(&scan)?;

        // Accepted: from here on the frame belongs to the clip.
        let shape = match &self.shape {
            Some(s)
                if (s.width, s.height, s.bpc)
                    == (geometry.width, geometry.height, geometry.bpc) =>
            {
                Arc::clone(s)
            }
            _ => {
                let s = Arc::new(OwnedPlane {
                    data: Vec::new(),
                    width: geometry.width,
                    height: geometry.height,
                    bpc: geometry.bpc,
                });
                self.shape = Some(Arc::clone(&s));
                s
            }
        };
        let index = self.clip.next_index;
        let distance = self.plan.motion.frame_distance() as usize;
        let (prev_ref, host_prev) =
            if self.plan.uses(Ext::Motion) && self.clip.refs.len() >= distance {
                match &self.clip.refs[self.clip.refs.len() - distance] {
                    (p, None) => (Some(Arc::clone(p)), None),
                    (_, Some(h)) => (Some(Arc::clone(&shape)), Some(h.clone())),
                }
            } else {
                (None, None)
            };
        let job = FrameJob {
            index,
            reference: Arc::clone(&shape),
            distorted: Arc::clone(&shape),
            prev_ref,
            vif: self.plan.vif,
            adm: self.plan.adm,
            features,
            needs: backend::Needs {
                vif: self.plan.uses(Ext::Vif),
                adm: self.plan.uses(Ext::Adm),
            },
            companions,
            chroma: None,
        };
        let host = HostFrame {
            reference: ref_luma.clone(),
            distorted: dist_luma,
            prev_ref: host_prev,
            chroma,
        };
        if let Err(e) = self.backend.submit_host(job, host) {
            self.abort_clip();
            return Err(e);
        }
        self.clip.geometry = Some(geometry);
        self.clip.next_index += 1;
        self.clip.in_flight += 1;
        self.clip.refs.push_back((shape, Some(ref_luma)));
        while self.clip.refs.len() > distance {
            self.clip.refs.pop_front();
        }

        let mut out = Vec::new();
        let max = self.backend.max_in_flight().max(1);
        self.collect(false, &mut out)?;
        while self.clip.in_flight > max {
            self.collect_one(true, &mut out)?;
        }
        Ok(out)
    }

    /// Collect what the backend has finished without pushing a frame. With `wait`, blocks until
    /// every submitted frame is computed (then every frame but the last of the clip is final).
    pub fn poll(&mut self, wait: bool) -> Result<Vec<FrameScores>> {
        let mut out = Vec::new();
        self.collect(wait, &mut out)?;
        Ok(out)
    }

    /// Flush: every remaining frame, then the pooled summary. The scorer then starts a fresh clip
    /// (frame numbers from 0, any geometry).
    pub fn finish(&mut self) -> Result<(Vec<FrameScores>, Summary)> {
        let mut out = std::mem::take(&mut self.clip.held);
        self.collect(true, &mut out)?;
        if let Some(seq) = self.clip.motion.as_mut() {
            let done = seq.finish();
            self.finalize(done, &mut out)?;
        }
        if !self.clip.waiting.is_empty() {
            // Only when the model does not use motion: nothing is waiting for a look-ahead.
            let waiting: Vec<_> = self.clip.waiting.drain(..).collect();
            for (index, features, acc, host) in waiting {
                if features {
                    let f = self.frame_scores(index, &acc, &host, None)?;
                    out.push(f);
                }
            }
        }
        let summary = Summary {
            frames: self.clip.frames_scored,
            pooled: self
                .clip
                .pooled
                .iter()
                .map(|(n, a)| (n.clone(), a.stats()))
                .collect(),
        };
        self.clip = Clip::default();
        Ok((out, summary))
    }

    /// Forget pending frames and motion history (a flushing seek). The next frame starts a fresh
    /// clip at index 0.
    pub fn reset(&mut self) {
        self.abort_clip();
    }

    /// After a backend failure: drop the clip so that the scorer is usable again.
    fn abort_clip(&mut self) {
        self.backend.reset();
        if let Some(pool) = self.host_pool.as_mut() {
            pool.reset();
        }
        self.clip = Clip::default();
    }

    /// The host extractors prepared for `g` (`None` without host extractors): prepared at a
    /// clip's first frame, so that the sizes they refuse are refused before a frame is taken.
    fn host_set_for(&mut self, g: &Geometry) -> Result<Option<Arc<HostSet>>> {
        if self.plan.host.is_empty() {
            return Ok(None);
        }
        if let Some((pg, set)) = &self.host_set
            && pg == g
        {
            return Ok(Some(Arc::clone(set)));
        }
        let chroma = g.format.libvmaf_chroma_size(g.width, g.height);
        let set = host::prepare(&self.plan.host_kinds(), g.width, g.height, g.bpc, chroma)?;
        self.host_set = Some((*g, Arc::clone(&set)));
        Ok(Some(set))
    }

    /// Whether the model or a standalone metric needs the chroma planes (VMAF v1's SpEED
    /// chroma): GRAY input is then refused.
    pub fn needs_chroma(&self) -> bool {
        self.plan.host.iter().any(|h| h.kind.needs_chroma())
    }

    /// Receive results until the backend has nothing ready (or, with `wait`, nothing in flight).
    fn collect(&mut self, wait: bool, out: &mut Vec<FrameScores>) -> Result<()> {
        while self.clip.in_flight > 0 {
            if !self.collect_one(wait, out)? {
                break;
            }
        }
        Ok(())
    }

    /// Receive one result; false if none was ready.
    fn collect_one(&mut self, wait: bool, out: &mut Vec<FrameScores>) -> Result<bool> {
        // The host values of the frame the backend returns next, first (results come in
        // submission order): without `wait`, nothing is taken before both are ready.
        let next = self.clip.next_index - self.clip.in_flight as u64;
        if self.clip.host_ready.is_none()
            && let Some(pool) = self.host_pool.as_mut()
            && pool.front() == Some(next)
        {
            match pool.take(wait) {
                Ok(Some(v)) => self.clip.host_ready = Some(v),
                Ok(None) => return Ok(false),
                Err(e) => {
                    self.abort_clip();
                    return Err(e);
                }
            }
        }
        let got = match self.backend.receive(wait) {
            Ok(g) => g,
            Err(e @ Error::SampleRange { .. }) if self.backend.checks_host_ranges() => {
                // Refused after it was taken (Backend::checks_host_ranges): results come in
                // submission order, so it is the oldest frame in flight. The clip ends before
                // it: the frames after it are dropped, those before it stay (finish()).
                let index = self.clip.next_index - self.clip.in_flight as u64;
                self.backend.reset();
                if let Some(pool) = self.host_pool.as_mut() {
                    pool.reset();
                }
                self.clip.host_ready = None;
                self.clip.previous = None;
                self.clip.in_flight = 0;
                self.clip.next_index = index;
                self.clip.cut = Some(index);
                self.clip.refs.clear();
                self.clip.held.append(out);
                return Err(Error::FrameRefused {
                    index,
                    cause: Box::new(e),
                });
            }
            Err(e) => {
                self.abort_clip();
                return Err(e);
            }
        };
        let Some((index, acc)) = got else {
            if wait && self.clip.in_flight > 0 {
                self.abort_clip();
                return Err(Error::Backend(
                    "the backend lost frames in flight; the clip was dropped".into(),
                ));
            }
            return Ok(false);
        };
        self.clip.in_flight -= 1;
        let host = match self.clip.host_ready.take() {
            Some((i, v)) if i == index => v,
            other => {
                self.clip.host_ready = other;
                Vec::new()
            }
        };
        let features = index.is_multiple_of(self.subsample());
        if !self.plan.uses(Ext::Motion) {
            // No look-ahead: the frame is final now.
            if features {
                let f = self.frame_scores(index, &acc, &host, None)?;
                out.push(f);
            }
            return Ok(true);
        }
        let (w, h) = self
            .clip
            .geometry
            .map(|g| (g.width, g.height))
            .unwrap_or((1, 1));
        let sad_score = match acc.motion_sad {
            Some(sad) => motion::sad_score_with(sad, w, h, &self.plan.motion),
            None => 0.0,
        };
        self.clip.waiting.push_back((index, features, acc, host));
        let plan_motion = self.plan.motion;
        let done = self
            .clip
            .motion
            .get_or_insert_with(|| MotionSequence::new(plan_motion))
            .push(sad_score);
        self.finalize(done, out)?;
        Ok(true)
    }

    /// Turn frames whose motion scores are final into FrameScores.
    fn finalize(&mut self, done: Vec<MotionScores>, out: &mut Vec<FrameScores>) -> Result<()> {
        for m in done {
            let Some((index, features, acc, host)) = self.clip.waiting.pop_front() else {
                return Err(Error::State(format!(
                    "internal: motion of frame {} without its features",
                    m.index
                )));
            };
            if index != m.index {
                return Err(Error::State(format!(
                    "internal: motion of frame {} paired with frame {index}",
                    m.index
                )));
            }
            if features {
                let f = self.frame_scores(index, &acc, &host, Some(&m))?;
                out.push(f);
            }
        }
        Ok(())
    }

    /// All scores of one frame, and pool them.
    fn frame_scores(
        &mut self,
        index: u64,
        acc: &FrameAccum,
        host: &HostValues,
        m: Option<&MotionScores>,
    ) -> Result<FrameScores> {
        let host_value = |j: usize, k: usize| {
            host.get(j).and_then(|v| v.get(k)).copied().ok_or_else(|| {
                Error::State(format!(
                    "internal: frame {index} has no host feature values"
                ))
            })
        };
        let p = &self.plan;
        let g = self
            .clip
            .geometry
            .ok_or_else(|| Error::State("internal: no geometry".into()))?;
        let vif = acc.vif.scores();
        let adm = acc.adm.scores(&p.adm, g.width, g.height);
        let (sad, m2, m3) = m.map_or((0.0, 0.0, 0.0), |m| (m.sad_score, m.motion2, m.motion3));

        let mut metrics: Vec<(String, f64)> = Vec::with_capacity(32);
        let (before, after) = companion_metrics(self.cfg.companions, &acc.companions)?;
        metrics.extend(before);
        for e in &p.order {
            match e {
                Ext::Adm => {
                    let v = [
                        adm.adm2,
                        adm.aim,
                        adm.adm3,
                        adm.scale[0],
                        adm.scale[1],
                        adm.scale[2],
                        adm.scale[3],
                    ];
                    metrics.extend(p.adm_names.iter().cloned().zip(v));
                }
                Ext::Motion => metrics.push((p.motion_names[0].clone(), sad)),
                Ext::Vif => metrics.extend(p.vif_names.iter().cloned().zip(vif)),
                Ext::Host(j) => {
                    for (k, n) in p.host[*j].names.iter().enumerate() {
                        metrics.push((n.clone(), host_value(*j, k)?));
                    }
                }
            }
        }
        metrics.extend(after);
        if p.uses(Ext::Motion) {
            metrics.push((p.motion_names[1].clone(), m2));
            metrics.push((p.motion_names[2].clone(), m3));
        }

        let values: Vec<f64> = p
            .slots
            .iter()
            .map(|s| {
                Ok(match *s {
                    Slot::Vif(k) => vif[k],
                    Slot::Adm2 => adm.adm2,
                    Slot::Aim => adm.aim,
                    Slot::Adm3 => adm.adm3,
                    Slot::AdmScale(k) => adm.scale[k],
                    Slot::MotionSad => sad,
                    Slot::Motion2 => m2,
                    Slot::Motion3 => m3,
                    Slot::Host(j, k) => host_value(j, k)?,
                })
            })
            .collect::<Result<_>>()?;
        let prediction = self.model.predict(&values, &p.predict)?;
        metrics.extend(prediction.named(&self.model));

        let pooled = &mut self.clip.pooled;
        if pooled.is_empty() {
            pooled.extend(
                metrics
                    .iter()
                    .map(|(n, _)| (n.clone(), PoolAccumulator::new())),
            );
        }
        for ((_, acc), (_, v)) in pooled.iter_mut().zip(&metrics) {
            acc.push(*v);
        }
        self.clip.frames_scored += 1;
        Ok(FrameScores { index, metrics })
    }
}

#[cfg(test)]
mod shared_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::picture::{Chroma, PlaneRef};

    fn gray(buf: &[u8], w: usize, h: usize) -> Picture<'_> {
        Picture {
            width: w,
            height: h,
            bpc: 8,
            format: ChromaFormat::Gray,
            luma: PlaneRef {
                data: buf,
                stride: w,
            },
            chroma: Chroma::None,
        }
    }

    /// Deterministic content: a textured frame moving by `t` pixels, and a noisy copy.
    fn frame(w: usize, h: usize, t: usize) -> (Vec<u8>, Vec<u8>) {
        let r: Vec<u8> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w + 3 * t, i / w + t);
                ((x * 7 + y * 13 + (x * y) % 29) % 251) as u8
            })
            .collect();
        let d = r
            .iter()
            .enumerate()
            .map(|(i, &v)| v.saturating_add((i * 2654435761 % 7) as u8))
            .collect();
        (r, d)
    }

    #[test]
    fn scorer_is_send() {
        fn send<T: Send>() {}
        send::<Scorer>();
    }

    #[test]
    fn names_carry_libvmaf_option_suffixes() {
        let s = Scorer::new(ScorerConfig {
            model: ModelSource::Builtin("vmaf_v0.6.1neg".into()),
            threads: 1,
            ..Default::default()
        })
        .unwrap();
        let names = s.metric_names();
        for n in [
            "integer_adm2_egl_1",
            "integer_aim_egl_1",
            "integer_adm_scale3_egl_1",
            "integer_vif_scale0_egl_1",
            "VMAF_integer_feature_motion_sad_score",
            "integer_motion2",
            "integer_motion3",
            "vmaf",
        ] {
            assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
        }
        assert_eq!(names.len(), 7 + 1 + 4 + 2 + 1);
    }

    /// A model asking for motion with the five-frame window (libvmaf's `motion_five_frame_window`):
    /// the SAD of frame i is taken against frame i-2 (none before frame 2), the names get `_mffw`,
    /// and motion2/motion3 follow libvmaf's flush for that window ([`MotionSequence`]).
    #[test]
    fn five_frame_window_model_option() {
        let text = include_str!("../../models/vmaf_v0.6.1.json");
        let mut json: serde_json::Value = serde_json::from_str(text).unwrap();
        let n = json["model_dict"]["feature_names"]
            .as_array()
            .unwrap()
            .len();
        let opts: Vec<serde_json::Value> = json["model_dict"]["feature_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                if f.as_str().unwrap().contains("motion") {
                    serde_json::json!({ "motion_five_frame_window": true })
                } else {
                    serde_json::json!({})
                }
            })
            .collect();
        assert_eq!(opts.len(), n);
        json["model_dict"]["feature_opts_dicts"] = serde_json::Value::Array(opts);
        let mut s = Scorer::new(ScorerConfig {
            model: ModelSource::Json(json.to_string()),
            threads: 2,
            ..Default::default()
        })
        .unwrap();
        let (w, h) = (48, 40);
        let frames: Vec<_> = (0..7).map(|t| frame(w, h, t * t)).collect();
        let mut out = Vec::new();
        for (r, d) in &frames {
            out.extend(s.push(&gray(r, w, h), &gray(d, w, h)).unwrap());
        }
        let (rest, _) = s.finish().unwrap();
        out.extend(rest);
        assert_eq!(out.len(), 7);

        let planes: Vec<OwnedPlane> = frames
            .iter()
            .map(|(r, _)| {
                let mut p = OwnedPlane::default();
                gray(r, w, h).copy_luma(&mut p).unwrap();
                p
            })
            .collect();
        let params = MotionParams {
            five_frame_window: true,
            ..Default::default()
        };
        let mut seq = MotionSequence::new(params);
        let mut want = Vec::new();
        for i in 0..planes.len() {
            let score = if i < 2 {
                0.0
            } else {
                motion::sad_score(motion::sad(planes[i - 2].view(), planes[i].view()), w, h)
            };
            want.extend(seq.push(score));
        }
        want.extend(seq.finish());
        for (f, m) in out.iter().zip(&want) {
            assert_eq!(f.index, m.index);
            assert_eq!(
                f.get("VMAF_integer_feature_motion_sad_score_mffw"),
                Some(m.sad_score)
            );
            assert_eq!(f.get("integer_motion2_mffw"), Some(m.motion2));
            assert_eq!(f.get("integer_motion3_mffw"), Some(m.motion3));
        }
        // The content moves, so this is not a comparison of zeros.
        assert!(want[3].motion2 > 0.0);
    }

    /// Plane buffers are recycled: a long clip allocates only about as many as can be in use
    /// at once (in flight, plus the previous reference).
    #[test]
    fn plane_buffers_are_recycled() {
        for threads in [1, 2, 7] {
            let mut s = Scorer::new(ScorerConfig {
                threads,
                ..Default::default()
            })
            .unwrap();
            let (w, h) = (40, 36);
            let frames: Vec<_> = (0..4).map(|t| frame(w, h, t)).collect();
            for i in 0..60 {
                let (r, d) = &frames[i % 4];
                s.push(&gray(r, w, h), &gray(d, w, h)).unwrap();
            }
            s.finish().unwrap();
            let in_use = 2 * (s.backend.max_in_flight() as u64 + 1) + 1;
            assert!(
                s.buffers_allocated <= in_use,
                "threads {threads}: {} planes allocated for 60 frames",
                s.buffers_allocated
            );
        }
    }

    /// Frames of a megapixel and more are copied on two threads: errors of either plane still
    /// come back typed (the reference's first), and nothing is taken.
    #[test]
    fn large_frames_copy_in_parallel_and_refuse_bad_samples() {
        let (w, h) = (1024, 1024);
        let to10 = |v: &[u8]| -> Vec<u8> {
            v.iter()
                .flat_map(|&x| (u16::from(x) << 2).to_le_bytes())
                .collect()
        };
        fn pic(buf: &[u8], w: usize, h: usize) -> Picture<'_> {
            let mut p = gray(buf, w, h);
            p.bpc = 10;
            p.luma.stride = 2 * w;
            p
        }
        let (r8, d8) = frame(w, h, 0);
        let (r, d) = (to10(&r8), to10(&d8));
        let mut bad_d = d.clone();
        bad_d[2 * (700 * w + 3)..][..2].copy_from_slice(&1024u16.to_le_bytes());
        let mut bad_r = r.clone();
        bad_r[2 * (5 * w + 9)..][..2].copy_from_slice(&2000u16.to_le_bytes());

        let mut s = Scorer::new(ScorerConfig {
            threads: 1,
            ..Default::default()
        })
        .unwrap();
        match s.push(&pic(&r, w, h), &pic(&bad_d, w, h)) {
            Err(Error::SampleRange {
                x: 3,
                y: 700,
                value: 1024,
                ..
            }) => {}
            other => panic!("expected the distorted plane's SampleRange, got {other:?}"),
        }
        match s.push(&pic(&bad_r, w, h), &pic(&bad_d, w, h)) {
            Err(Error::SampleRange {
                x: 9,
                y: 5,
                value: 2000,
                ..
            }) => {}
            other => panic!("expected the reference plane's SampleRange, got {other:?}"),
        }
        assert_eq!(s.frames_pushed(), 0);
        s.push(&pic(&r, w, h), &pic(&d, w, h)).unwrap();
        let (out, summary) = s.finish().unwrap();
        assert_eq!((out.len(), summary.frames, out[0].index), (1, 1, 0));
        // The same pair scored directly from its planes.
        let plane = |b: &[u8]| {
            let mut p = OwnedPlane::default();
            pic(b, w, h).copy_luma(&mut p).unwrap();
            p
        };
        let (rp, dp) = (plane(&r), plane(&d));
        let vif = crate::features::vif::compute(rp.view(), dp.view(), &VifParams::default());
        assert_eq!(out[0].get("integer_vif_scale0"), Some(vif.scores()[0]));
    }

    /// subsample 0 means every frame, as libvmaf's `n_subsample` of 0.
    #[test]
    fn subsample_zero_scores_every_frame() {
        let mut s = Scorer::new(ScorerConfig {
            subsample: 0,
            threads: 1,
            ..Default::default()
        })
        .unwrap();
        let (w, h) = (40, 36);
        let mut n = 0;
        for t in 0..4 {
            let (r, d) = frame(w, h, t);
            n += s.push(&gray(&r, w, h), &gray(&d, w, h)).unwrap().len();
        }
        let (rest, summary) = s.finish().unwrap();
        assert_eq!(n + rest.len(), 4);
        assert_eq!(summary.frames, 4);
    }
}

#[cfg(test)]
mod companion_tests {
    use super::*;
    use crate::features::{ciede, ms_ssim, psnr, psnr_hvs, ssim};
    use crate::picture::{Chroma, Plane, PlaneRef};

    const ALL: Companions = Companions {
        psnr: true,
        ssim: true,
        ms_ssim: true,
        ciede: true,
        psnr_hvs: true,
    };

    /// An I420 picture over one buffer (Y then U then V, GStreamer's odd-size rounding up).
    fn i420(buf: &[u8], w: usize, h: usize) -> Picture<'_> {
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let (y, rest) = buf.split_at(w * h);
        let (u, v) = rest.split_at(cw * ch);
        Picture {
            width: w,
            height: h,
            bpc: 8,
            format: ChromaFormat::Yuv420,
            luma: PlaneRef { data: y, stride: w },
            chroma: Chroma::Planar {
                u: PlaneRef {
                    data: u,
                    stride: cw,
                },
                v: PlaneRef {
                    data: v,
                    stride: cw,
                },
            },
        }
    }

    /// The frame copy at sizes that take the threaded path (and one that does not): the same
    /// planes as the sequential copies, chroma at libvmaf's size, and a bad plane's error is the
    /// sequential order's first (here: a reference plane too short fails before the distorted
    /// one).
    #[test]
    fn frame_copy_equals_sequential_copies() {
        for (w, h) in [(1920usize, 1080usize), (1281, 819), (64, 48)] {
            let (rb, db) = (content(w, h, 1, true), content(w, h, 2, false));
            let (r, d) = (i420(&rb, w, h), i420(&db, w, h));
            let (mut rl, mut dl) = (OwnedPlane::default(), OwnedPlane::default());
            let mut pair = ChromaPair::default();
            let has = copy_frame(&r, &mut rl, &d, &mut dl, Some(&mut pair)).unwrap();
            assert!(has, "{w}x{h}: chroma expected");
            let (mut wr, mut wd) = (OwnedPlane::default(), OwnedPlane::default());
            r.copy_luma(&mut wr).unwrap();
            d.copy_luma(&mut wd).unwrap();
            assert_eq!((rl.data, dl.data), (wr.data, wd.data), "{w}x{h} luma");
            let mut want = ChromaPair::default();
            let [ru, rv] = &mut want.reference;
            assert!(r.copy_chroma_libvmaf(ru, rv).unwrap());
            let [du, dv] = &mut want.distorted;
            assert!(d.copy_chroma_libvmaf(du, dv).unwrap());
            for k in 0..2 {
                assert_eq!(
                    pair.reference[k].data, want.reference[k].data,
                    "{w}x{h} ref chroma {k}"
                );
                assert_eq!(
                    pair.distorted[k].data, want.distorted[k].data,
                    "{w}x{h} dis chroma {k}"
                );
                assert_eq!(
                    pair.reference[k].width,
                    (w >> 1),
                    "{w}x{h}: libvmaf's chroma width"
                );
            }
            // Without chroma wanted: lumas only.
            let (mut a, mut b) = (OwnedPlane::default(), OwnedPlane::default());
            assert!(!copy_frame(&r, &mut a, &d, &mut b, None).unwrap());
            // A reference luma too short fails first, as the sequential copy reports.
            let short = Picture {
                luma: PlaneRef {
                    data: &rb[..w * h / 2],
                    stride: w,
                },
                ..r
            };
            let seq = short.copy_luma(&mut OwnedPlane::default()).unwrap_err();
            let got = copy_frame(&short, &mut a, &d, &mut b, Some(&mut pair)).unwrap_err();
            assert_eq!(format!("{got:?}"), format!("{seq:?}"), "{w}x{h}");
        }
    }

    fn content(w: usize, h: usize, t: usize, noisy: bool) -> Vec<u8> {
        let n = w * h + 2 * w.div_ceil(2) * h.div_ceil(2);
        (0..n)
            .map(|i| {
                let v = (i * 7 + t * 31 + (i / w) * 13 + (i * i) % 17) % 240;
                let e = if noisy { (i * 2654435761 + t) % 9 } else { 0 };
                (v + e) as u8
            })
            .collect()
    }

    fn scorer(companions: Companions, subsample: u32) -> Scorer {
        Scorer::new(ScorerConfig {
            threads: 2,
            backend: BackendKind::Cpu,
            companions,
            subsample,
            ..Default::default()
        })
        .unwrap()
    }

    /// The engine's companion metrics are the feature functions' values on libvmaf's planes
    /// (odd size: chroma cropped to `w >> 1` x `h >> 1`), in libvmaf's report order, and
    /// `metric_names()` lists the same names in the same order.
    #[test]
    fn companion_metrics_equal_the_feature_functions_in_report_order() {
        let (w, h) = (181, 177); // odd: GStreamer chroma 91x89, libvmaf 90x88
        let mut s = scorer(ALL, 1);
        let frames: Vec<_> = (0..3)
            .map(|t| (content(w, h, t, false), content(w, h, t, true)))
            .collect();
        let mut out = Vec::new();
        for (r, d) in &frames {
            out.extend(s.push(&i420(r, w, h), &i420(d, w, h)).unwrap());
        }
        let (last, _summary) = s.finish().unwrap();
        out.extend(last);
        assert_eq!(out.len(), 3);
        let mut bad = Vec::new();
        for (f, (r, d)) in out.iter().zip(&frames) {
            let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
            let planes = |b: &[u8]| -> [Vec<u16>; 3] {
                let y: Vec<u16> = b[..w * h].iter().map(|&v| u16::from(v)).collect();
                let crop = |off: usize| -> Vec<u16> {
                    (0..h / 2)
                        .flat_map(|row| {
                            b[off + row * cw..off + row * cw + w / 2]
                                .iter()
                                .map(|&v| u16::from(v))
                        })
                        .collect()
                };
                [y, crop(w * h), crop(w * h + cw * ch)]
            };
            let (rp, dp) = (planes(r), planes(d));
            fn view(p: &[Vec<u16>; 3], w: usize, h: usize) -> [Plane<'_>; 3] {
                [
                    Plane::from_slice(&p[0], w, h, 8),
                    Plane::from_slice(&p[1], w / 2, h / 2, 8),
                    Plane::from_slice(&p[2], w / 2, h / 2, 8),
                ]
            }
            let (rv, dv) = (view(&rp, w, h), view(&dp, w, h));
            let p = psnr::psnr(&rv, &dv).unwrap();
            let hv = psnr_hvs::psnr_hvs(&rv, &dv).unwrap();
            let want = [
                ("psnr_y", p.y),
                ("psnr_cb", p.cb.unwrap()),
                ("psnr_cr", p.cr.unwrap()),
                ("float_ssim", ssim::ssim(rv[0], dv[0]).unwrap().ssim),
                (
                    "float_ms_ssim",
                    ms_ssim::ms_ssim(rv[0], dv[0]).unwrap().ms_ssim,
                ),
                ("ciede2000", ciede::ciede(&rv, &dv).unwrap()),
                ("psnr_hvs_y", hv.y),
                ("psnr_hvs_cb", hv.cb),
                ("psnr_hvs_cr", hv.cr),
                ("psnr_hvs", hv.psnr_hvs),
            ];
            for (name, v) in want {
                if f.get(name) != Some(v) {
                    bad.push(format!(
                        "frame {} {name}: {:?} != {v}",
                        f.index,
                        f.get(name)
                    ));
                }
            }
            let names: Vec<&str> = f.metrics.iter().map(|(n, _)| n.as_str()).collect();
            if names != s.metric_names() {
                bad.push(format!(
                    "frame {} names {names:?} != metric_names()",
                    f.index
                ));
            }
            // libvmaf's order: PSNR first, the other companions after the model's features
            // and before integer_motion2.
            let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
            if !(pos("psnr_cr") < pos("integer_adm2")
                && pos("integer_vif_scale3") < pos("float_ssim")
                && pos("psnr_hvs") < pos("integer_motion2"))
            {
                bad.push(format!("frame {} order {names:?}", f.index));
            }
        }
        assert!(
            bad.is_empty(),
            "{} mismatches:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }

    /// What libvmaf refuses is a typed error naming the metric, and the scorer stays usable.
    #[test]
    fn refused_companions_are_errors_that_change_nothing() {
        let (w, h) = (64, 64);
        let (r, d) = (content(w, h, 0, false), content(w, h, 0, true));
        // MS-SSIM below 176x176.
        let mut s = scorer(
            Companions {
                ms_ssim: true,
                ..Default::default()
            },
            1,
        );
        let e = s.push(&i420(&r, w, h), &i420(&d, w, h)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Unsupported {
                    metric: "float_ms_ssim",
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(s.frames_pushed(), 0);
        // CIEDE2000 and PSNR-HVS without chroma.
        for (c, metric) in [
            (
                Companions {
                    ciede: true,
                    ..Default::default()
                },
                "ciede",
            ),
            (
                Companions {
                    psnr_hvs: true,
                    ..Default::default()
                },
                "psnr_hvs",
            ),
        ] {
            let mut s = scorer(c, 1);
            let mut gray = i420(&r, w, h);
            gray.format = ChromaFormat::Gray;
            gray.chroma = Chroma::None;
            let e = s.push(&gray, &gray).unwrap_err();
            assert!(
                matches!(&e, Error::Unsupported { metric: m, .. } if *m == metric),
                "{e:?}"
            );
            assert_eq!(s.frames_pushed(), 0);
            // the same scorer takes a picture with chroma
            assert!(s.push(&i420(&r, w, h), &i420(&d, w, h)).is_ok());
            assert_eq!(s.frames_pushed(), 1);
        }
        // PSNR of a GRAY picture is luma only.
        let mut s = scorer(
            Companions {
                psnr: true,
                ..Default::default()
            },
            1,
        );
        let mut gr = i420(&r, w, h);
        let mut gd = i420(&d, w, h);
        for p in [&mut gr, &mut gd] {
            p.format = ChromaFormat::Gray;
            p.chroma = Chroma::None;
        }
        s.push(&gr, &gd).unwrap();
        let (f, summary) = s.finish().unwrap();
        assert!(f[0].get("psnr_y").is_some());
        assert_eq!(f[0].get("psnr_cb"), None);
        assert!(summary.get("psnr_y").is_some());
    }

    /// Subsampling skips the companion metrics with the features: only scored frames carry
    /// them, with the same values as without subsampling.
    #[test]
    fn subsampled_frames_skip_companions() {
        let (w, h) = (48, 40);
        let c = Companions {
            psnr: true,
            ssim: true,
            ..Default::default()
        };
        let frames: Vec<_> = (0..5)
            .map(|t| (content(w, h, t, false), content(w, h, t, true)))
            .collect();
        let run = |sub: u32| {
            let mut s = scorer(c, sub);
            let mut out = Vec::new();
            for (r, d) in &frames {
                out.extend(s.push(&i420(r, w, h), &i420(d, w, h)).unwrap());
            }
            out.extend(s.finish().unwrap().0);
            out
        };
        let all = run(1);
        let sub = run(2);
        assert_eq!(
            sub.iter().map(|f| f.index).collect::<Vec<_>>(),
            vec![0, 2, 4]
        );
        for f in &sub {
            let full = &all[f.index as usize];
            for n in ["psnr_y", "psnr_cb", "psnr_cr", "float_ssim"] {
                assert_eq!(f.get(n), full.get(n), "frame {} {n}", f.index);
                assert!(f.get(n).is_some());
            }
        }
    }
}

#[cfg(test)]
mod companion_format_tests {
    use super::*;
    use crate::features::{ciede, ms_ssim, psnr, psnr_hvs, ssim};
    use crate::picture::{Chroma, Plane, PlaneRef};

    /// Little-endian bytes of a plane of `w` x `h` samples at `bpc` bits (1 byte at 8 bits).
    fn bytes(v: &[u16], bpc: u8) -> Vec<u8> {
        if bpc == 8 {
            v.iter().map(|&x| x as u8).collect()
        } else {
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
    }

    fn samples(n: usize, bpc: u8, seed: u64, base: Option<&[u16]>) -> Vec<u16> {
        let max = (1u64 << bpc) - 1;
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match base {
                    // the distorted plane: the reference plus bounded noise
                    Some(b) => {
                        let noise = (s >> 40) % (max / 16 + 2);
                        (u64::from(b[i]) + noise).min(max) as u16
                    }
                    None => (((i as u64 * 37) % (max + 1)) ^ ((s >> 33) % (max / 4 + 1))).min(max)
                        as u16,
                }
            })
            .collect()
    }

    type Geom = (usize, usize, u8, ChromaFormat, usize, usize);

    fn pic(b: &[Vec<u8>], (w, h, bpc, format, cstride, stride): Geom) -> Picture<'_> {
        Picture {
            width: w,
            height: h,
            bpc,
            format,
            luma: PlaneRef {
                data: &b[0],
                stride,
            },
            chroma: Chroma::Planar {
                u: PlaneRef {
                    data: &b[1],
                    stride: cstride,
                },
                v: PlaneRef {
                    data: &b[2],
                    stride: cstride,
                },
            },
        }
    }

    /// Every chroma format and bit depth through the engine: the companion metrics equal the
    /// feature functions on libvmaf's planes (chroma rounded down at odd sizes). All mismatches
    /// are collected, then the test fails once.
    #[test]
    fn every_format_and_depth_equals_the_feature_functions() {
        let (w, h) = (179, 181);
        let mut bad = Vec::new();
        let mut checked = 0;
        for format in [
            ChromaFormat::Yuv420,
            ChromaFormat::Yuv422,
            ChromaFormat::Yuv444,
        ] {
            // GStreamer's stored chroma size (rounded up) and libvmaf's (rounded down).
            let (gw, gh) = format.chroma_size(w, h).unwrap();
            let (lw, lh) = match format {
                ChromaFormat::Yuv420 => (w / 2, h / 2),
                ChromaFormat::Yuv422 => (w / 2, h),
                _ => (w, h),
            };
            for bpc in [8u8, 10, 12, 16] {
                let c = Companions {
                    psnr: true,
                    ssim: true,
                    ms_ssim: true,
                    ciede: true,
                    psnr_hvs: bpc <= 12,
                };
                let mut s = Scorer::new(ScorerConfig {
                    threads: 2,
                    backend: BackendKind::Cpu,
                    companions: c,
                    ..Default::default()
                })
                .unwrap();
                let seed = u64::from(bpc) * 10 + format as u64;
                let r: Vec<Vec<u16>> = [w * h, gw * gh, gw * gh]
                    .iter()
                    .enumerate()
                    .map(|(p, &n)| samples(n, bpc, seed + p as u64, None))
                    .collect();
                let d: Vec<Vec<u16>> = r
                    .iter()
                    .enumerate()
                    .map(|(p, x)| samples(x.len(), bpc, seed + 7 + p as u64, Some(x)))
                    .collect();
                let rb: Vec<Vec<u8>> = r.iter().map(|p| bytes(p, bpc)).collect();
                let db: Vec<Vec<u8>> = d.iter().map(|p| bytes(p, bpc)).collect();
                let bps = if bpc == 8 { 1 } else { 2 };
                let geom = (w, h, bpc, format, gw * bps, w * bps);
                let (rp, dp) = (pic(&rb, geom), pic(&db, geom));
                let mut out = s.push(&rp, &dp).unwrap();
                out.extend(s.finish().unwrap().0);
                let f = &out[0];
                // libvmaf's planes: luma as is, chroma cropped to lw x lh.
                let crop = |p: &[u16]| -> Vec<u16> {
                    (0..lh)
                        .flat_map(|y| p[y * gw..y * gw + lw].iter().copied())
                        .collect()
                };
                let (rc, dc) = ([crop(&r[1]), crop(&r[2])], [crop(&d[1]), crop(&d[2])]);
                let rv = [
                    Plane::from_slice(&r[0], w, h, bpc),
                    Plane::from_slice(&rc[0], lw, lh, bpc),
                    Plane::from_slice(&rc[1], lw, lh, bpc),
                ];
                let dv = [
                    Plane::from_slice(&d[0], w, h, bpc),
                    Plane::from_slice(&dc[0], lw, lh, bpc),
                    Plane::from_slice(&dc[1], lw, lh, bpc),
                ];
                let p = psnr::psnr(&rv, &dv).unwrap();
                let mut want = vec![
                    ("psnr_y", p.y),
                    ("psnr_cb", p.cb.unwrap()),
                    ("psnr_cr", p.cr.unwrap()),
                    ("float_ssim", ssim::ssim(rv[0], dv[0]).unwrap().ssim),
                    (
                        "float_ms_ssim",
                        ms_ssim::ms_ssim(rv[0], dv[0]).unwrap().ms_ssim,
                    ),
                    ("ciede2000", ciede::ciede(&rv, &dv).unwrap()),
                ];
                if c.psnr_hvs {
                    let hv = psnr_hvs::psnr_hvs(&rv, &dv).unwrap();
                    want.extend([
                        ("psnr_hvs_y", hv.y),
                        ("psnr_hvs_cb", hv.cb),
                        ("psnr_hvs_cr", hv.cr),
                        ("psnr_hvs", hv.psnr_hvs),
                    ]);
                }
                for (name, v) in want {
                    checked += 1;
                    if f.get(name) != Some(v) {
                        bad.push(format!(
                            "{format:?} {bpc}-bit {name}: {:?} != {v}",
                            f.get(name)
                        ));
                    }
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} of {checked} mismatches:\n{}",
            bad.len(),
            bad.join("\n")
        );
        assert_eq!(checked, 3 * (3 * 10 + 6));
    }
}

#[cfg(test)]
mod on_device_tests {
    use super::*;

    /// The CPU backend never says a pair's work is on a GPU (the element's live wait would
    /// then hold its worker threads to one frame at a time), with or without companions.
    #[test]
    fn cpu_scorer_does_not_compute_on_device() {
        for companions in [
            Companions::default(),
            Companions {
                psnr: true,
                ..Default::default()
            },
        ] {
            let s = Scorer::new(ScorerConfig {
                threads: 1,
                backend: BackendKind::Cpu,
                companions,
                ..Default::default()
            })
            .unwrap();
            assert_eq!(s.backend_name(), "cpu");
            assert!(!s.computes_on_device(), "{companions:?}");
        }
    }
}
