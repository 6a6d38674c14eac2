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
//! first, so a refused frame changes nothing), or hands planes in the caller's memory
//! ([`Frame::host`], [`Scorer::push_frames`]) to a backend that reads them where they are, and
//! a [`Backend`] computes the integer accumulators
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

use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::{self, Backend, ChromaPair, DeviceFrame, FrameJob, HostChroma, HostFrame};
use crate::error::{Error, Result};
use crate::features::{MIN_HEIGHT, MIN_WIDTH};
use crate::model::{FeatureOverload, Model, PredictOptions};
use crate::picture::{ChromaFormat, OwnedPlane, Picture};

pub use crate::backend::{BackendKind, Companions, DevicePlane, HostBytes, HostPlane, InputPlane};

mod clip;
mod frame;
mod host;
mod pinned;
mod plan;
pub use crate::model::{PoolMethod, PooledStats, pool};
use clip::{Clip, Geometry};
pub use frame::{Frame, HostUv};
use host::{HostPool, HostSet, Routes};
pub use pinned::{PinnedBuffer, PinnedMemory, cuda_primary_context};
use plan::{CIEDE, Ext, MS_SSIM, PSNR_HVS, Plan, SSIM};

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

/// The most CPU worker threads a scorer starts ([`ScorerConfig::threads`]; more is refused
/// with [`Error::State`]): each holds a frame's buffers, and beyond the cores there are to run
/// them more only cost memory.
pub const MAX_THREADS: usize = 256;

/// Scorer settings.
#[derive(Clone, Debug)]
pub struct ScorerConfig {
    pub model: ModelSource,
    /// libvmaf's `disable_clip` model flag: do not clip the score to the model's range.
    pub disable_clip: bool,
    /// libvmaf's `enable_transform` model flag: apply the model's score transform.
    pub enable_transform: bool,
    /// CPU worker threads; 0 = one per available core; at most [`MAX_THREADS`].
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
    /// Standalone v1 metrics (`--feature cambi` ...), with libvmaf's default options unless
    /// `feature_params` sets some.
    pub extras: Extras,
    /// Options of the standalone v1 metrics, libvmaf's `--feature cambi=enc_bitdepth=8` written
    /// `cambi.enc_bitdepth=8`: each applies to the standalone metric its extractor names (which
    /// `extras` must turn on), not to the model's features (those are `model_params`).
    pub feature_params: Vec<FeatureOverload>,
}

/// libvmaf's `cambi`, `speed_chroma` and `speed_temporal` as standalone metrics (default
/// options, reported as `cambi`, `speed_chroma_u`/`_v`/`_uv`, `speed_temporal`). They are
/// computed on host threads beside any backend, or by the backend on its device where it
/// computes that kind (CAMBI on CUDA), with the same numbers.
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
            feature_params: Vec::new(),
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

/// Where the copy route's time goes ([`Scorer::push_frames`] copying the planes), since the
/// process started (a diagnostic for benchmarks, see [`push_times`]): calls, then nanoseconds
/// copying the planes, submitting the frame to the backend, collecting results (waiting when
/// too many frames are in flight).
static PUSH_NS: [std::sync::atomic::AtomicU64; 4] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 4];

fn push_time(i: usize, since: std::time::Instant) -> std::time::Instant {
    crate::backend::add_elapsed(&PUSH_NS[i], since)
}

/// The copy route's totals since the process started: (calls, nanoseconds copying the planes,
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

/// Room in the plane buffers for the copies of a frame of `g` (luma and, where `chroma` is
/// given, libvmaf's chroma size), before [`copy_frame`] fills them: a frame too large for the
/// memory there is is refused with an error ([`Error::Backend`], out of memory) instead of
/// aborting the process.
fn reserve_copies(
    g: &Geometry,
    r: &mut OwnedPlane,
    d: &mut OwnedPlane,
    chroma: Option<&mut ChromaPair>,
) -> Result<()> {
    let room = |p: &mut OwnedPlane, n: usize, what: &str| {
        p.data
            .try_reserve_exact(n.saturating_sub(p.data.len()))
            .map_err(|e| {
                let mib = (n as u128 * 2).div_ceil(1 << 20);
                Error::Backend(format!(
                    "cannot allocate {mib} MiB for the copy of the {what} plane of a {}x{} frame: \
                     {e}",
                    g.width, g.height
                ))
            })
    };
    room(r, g.width * g.height, "reference luma")?;
    room(d, g.width * g.height, "distorted luma")?;
    if let (Some(c), Some((cw, ch))) = (chroma, g.format.libvmaf_chroma_size(g.width, g.height)) {
        let [ru, rv] = &mut c.reference;
        let [du, dv] = &mut c.distorted;
        for (p, what) in [
            (ru, "reference Cb"),
            (rv, "reference Cr"),
            (du, "distorted Cb"),
            (dv, "distorted Cr"),
        ] {
            room(p, cw * ch, what)?;
        }
    }
    Ok(())
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
    /// Which of the plan's host extractors the backend computes on its device instead.
    routes: Routes,
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
        if cfg.threads > MAX_THREADS {
            return Err(Error::State(format!(
                "threads={} is more than the {MAX_THREADS} worker threads a scorer starts at most",
                cfg.threads
            )));
        }
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
            &cfg.feature_params,
        )?;
        let mut backend = open(&cfg)?;
        let routes = Routes::of(&plan.host_kinds(), backend.as_ref());
        let host_pool = if routes.any_on_host() {
            let threads = match cfg.threads {
                0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
                n => n,
            };
            Some(HostPool::new(threads)?)
        } else {
            None
        };
        // What every job of the clip asks for, given to the backend once.
        let clip_cfg = backend::ClipConfig {
            vif: plan.vif,
            adm: plan.adm,
            needs: backend::Needs {
                vif: plan.uses(Ext::Vif),
                adm: plan.uses(Ext::Adm),
            },
            companions: cfg.companions.with(routes.companions),
        };
        backend.configure(&clip_cfg)?;
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
            routes,
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
    fn validate(&self, r: &Frame<'_>, d: &Frame<'_>) -> Result<Geometry> {
        if let Some(n) = self.clip.cut {
            return Err(Error::State(format!(
                "frame {n} was refused after it was taken, which ended the clip at frame {}: \
                 call finish() (its remaining scores) or reset() before pushing again",
                n.saturating_sub(1)
            )));
        }
        let g = frame::geometry(r)?;
        let gd = frame::geometry(d)?;
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
    fn validate_companions(&self, r: &Frame<'_>, d: &Frame<'_>, g: &Geometry) -> Result<()> {
        let c = self.cfg.companions;
        if c.ms_ssim {
            crate::features::ms_ssim::check_size(g.width, g.height)?;
        }
        let no_chroma = g.format == ChromaFormat::Gray || !r.has_chroma() || !d.has_chroma();
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

    /// Submit one pair of borrowed pictures: [`Scorer::push_frames`] with
    /// [`Frame::picture`] (the engine copies the planes).
    pub fn push(
        &mut self,
        reference: &Picture<'_>,
        distorted: &Picture<'_>,
    ) -> Result<Vec<FrameScores>> {
        self.push_frames(Frame::picture(reference), Frame::picture(distorted))
    }

    /// Submit one pair. It is validated (size at least 33x33, equal geometry, format and bit depth
    /// for both pictures and for every frame of the clip, samples within `bpc` bits) before the
    /// scorer takes it: an `Err` changes nothing and the scorer stays usable.
    ///
    /// Frames whose planes are in the caller's memory ([`Frame::host`]) are read where they are
    /// when the backend can ([`Scorer::takes_host_planes`]; the route is decided at a clip's
    /// first frame): the backend uploads straight from them (without any host copy when they
    /// are pinned) and drops them once it no longer reads them; the scorer keeps the last
    /// reference for motion. Otherwise, and for borrowed pictures, the engine copies the planes.
    /// The scores are the same on both routes. On a backend that checks the samples of host
    /// planes itself ([`Backend::checks_host_ranges`]: the CUDA backend, on the GPU, so that the
    /// calling thread never reads the planes) a frame with a sample above `bpc` bits is refused
    /// when its result is read, by a later push, `poll` or `finish`, with
    /// [`Error::FrameRefused`]; the clip then ends at the frame before it (the frames pushed after
    /// it are dropped) and `finish()` returns its remaining scores and summary.
    ///
    /// Returns the frames that became final, in index order (usually earlier frames: motion needs
    /// the next frame, and the backend works on several frames at once).
    pub fn push_frames(
        &mut self,
        reference: Frame<'_>,
        distorted: Frame<'_>,
    ) -> Result<Vec<FrameScores>> {
        let geometry = self.validate(&reference, &distorted)?;
        // A clip whose last reference is in device memory stays on the device route (a pad
        // that moved to system memory: its planes are read where they are too).
        let clip_on_device = self
            .clip
            .refs
            .back()
            .is_some_and(|(_, p)| matches!(p, Some(InputPlane::Device(_))));
        if reference.on_device() || distorted.on_device() || clip_on_device {
            return self.push_device(geometry, &reference, &distorted);
        }
        let host_set = self.host_set_for(&geometry)?;
        // The route, once per clip: host planes are read where they are when the backend takes
        // them, no host extractor reads the engine's copies, and the frames carry the chroma
        // the companion metrics read.
        let zero_copy = match self.clip.geometry {
            Some(_) => self.clip.zero_copy,
            None => {
                self.takes_host_planes()
                    && (!self.job_companions().needs_chroma()
                        || (reference.has_chroma() && distorted.has_chroma()))
            }
        };
        // When the copy route's collecting began (its timings for push_times).
        let t_collect = match self.shared_planes(zero_copy, &reference, &distorted) {
            Some((rl, dl, chroma)) => {
                self.submit_shared(geometry, rl, dl, chroma)?;
                None
            }
            None => Some(self.submit_copied(geometry, host_set, &reference, &distorted)?),
        };
        self.clip.zero_copy = zero_copy;

        let mut out = Vec::new();
        // Keep the backend busy but bounded: wait once too much is in flight.
        let max = self.backend.max_in_flight().max(1);
        self.collect(false, &mut out)?;
        while self.clip.in_flight > max {
            self.collect_one(true, &mut out)?;
        }
        if let Some(t) = t_collect {
            push_time(3, t);
            PUSH_NS[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(out)
    }

    /// The planes of a zero-copy job, when the clip's route is zero-copy and the frames are in
    /// the caller's memory (with their chroma where this frame's companion metrics read it).
    fn shared_planes(
        &self,
        zero_copy: bool,
        reference: &Frame<'_>,
        distorted: &Frame<'_>,
    ) -> Option<(HostPlane, HostPlane, Option<HostChroma>)> {
        if !zero_copy {
            return None;
        }
        let (rl, dl) = (reference.host_luma()?, distorted.host_luma()?);
        let features = self.clip.next_index.is_multiple_of(self.subsample());
        let chroma = if features && self.job_companions().needs_chroma() {
            Some(frame::host_chroma(reference, distorted)?)
        } else {
            None
        };
        Some((rl.clone(), dl.clone(), chroma))
    }

    /// The copy route: copy (and check) the planes, submit the job, and the host extractors'
    /// work. Returns when the collecting began (for [`push_times`]).
    fn submit_copied(
        &mut self,
        geometry: Geometry,
        host_set: Option<Arc<HostSet>>,
        reference: &Frame<'_>,
        distorted: &Frame<'_>,
    ) -> Result<std::time::Instant> {
        let t_copy = std::time::Instant::now();
        let index = self.clip.next_index;
        let features = index.is_multiple_of(self.subsample());
        let companions = self.job_companions();
        let host_chroma = self.on_host().any(|k| k.needs_chroma());
        let mut rbuf = self.take_buffer();
        let mut dbuf = self.take_buffer();
        let mut pair =
            (features && (companions.needs_chroma() || host_chroma)).then(|| self.take_chroma());
        let copied = {
            // All are unique: fresh, or free buffers from the pools.
            let (Some(r), Some(d)) = (Arc::get_mut(&mut rbuf), Arc::get_mut(&mut dbuf)) else {
                return Err(Error::State("internal: plane buffer in use".into()));
            };
            let chroma = match pair.as_mut().map(Arc::get_mut) {
                Some(None) => return Err(Error::State("internal: chroma buffer in use".into())),
                Some(Some(c)) => Some(c),
                None => None,
            };
            let mut chroma = chroma;
            reserve_copies(&geometry, r, d, chroma.as_deref_mut()).and_then(|()| {
                reference.with_picture(|rp| {
                    distorted.with_picture(|dp| copy_frame(rp, r, dp, d, chroma))
                })
            })
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
                // The previous frame took the zero-copy route: its samples are the caller's.
                (_, Some(InputPlane::Host(h))) => Arc::new(h.to_owned_plane()),
                (_, Some(InputPlane::Device(_))) => return Err(device_clip()),
            })
        } else {
            None
        };
        // SpEED temporal's previous frame: the one pushed just before (on this route, the
        // engine's copies), whether this frame is scored or not.
        let previous = match self.clip.previous.take() {
            Some(clip::PreviousLuma::Copied(r, d)) => Some((r, d)),
            _ => None,
        };
        let job = FrameJob {
            index,
            reference: Arc::clone(&rbuf),
            distorted: Arc::clone(&dbuf),
            prev_ref,
            features,
            chroma: chroma.clone().filter(|_| companions.needs_chroma()),
            previous: previous
                .clone()
                .filter(|_| features && companions.needs_previous()),
        };
        if let Err(e) = self.backend.submit(job) {
            self.abort_clip();
            return Err(e);
        }
        if companions.needs_previous() || self.on_host().any(|k| k.needs_previous()) {
            self.clip.previous = Some(clip::PreviousLuma::Copied(
                Arc::clone(&rbuf),
                Arc::clone(&dbuf),
            ));
        }
        if let (Some(set), Some(pool), true) = (&host_set, self.host_pool.as_mut(), features) {
            let frame = host::ExtractorFrame {
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
        Ok(t_collect)
    }

    /// The zero-copy route: check what the backend does not, and submit the caller's planes.
    /// Chroma samples above `bpc` bits are refused before the frame is taken, by a scan on the
    /// host (9 to 15 bits; 8- and 16-bit planes cannot hold one); luma samples too, unless the
    /// backend checks them itself ([`Backend::checks_host_ranges`]).
    fn submit_shared(
        &mut self,
        geometry: Geometry,
        ref_luma: HostPlane,
        dist_luma: HostPlane,
        chroma: Option<HostChroma>,
    ) -> Result<()> {
        let features = self.clip.next_index.is_multiple_of(self.subsample());
        // Luma first, then chroma, as the copy route checks them.
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
                    (_, Some(InputPlane::Host(h))) => (Some(Arc::clone(&shape)), Some(h.clone())),
                    (_, Some(InputPlane::Device(_))) => return Err(device_clip()),
                }
            } else {
                (None, None)
            };
        let companions = self.job_companions();
        // SpEED temporal's previous frame: the one pushed just before (on this route, the
        // caller's planes), whether this frame is scored or not.
        let previous = match self.clip.previous.take() {
            Some(clip::PreviousLuma::Host(r, d)) => Some((r, d)),
            _ => None,
        };
        if companions.needs_previous() {
            self.clip.previous = Some(clip::PreviousLuma::Host(
                ref_luma.clone(),
                dist_luma.clone(),
            ));
        }
        let job = FrameJob {
            index,
            reference: Arc::clone(&shape),
            distorted: Arc::clone(&shape),
            prev_ref,
            features,
            chroma: None,
            previous: None,
        };
        let host = HostFrame {
            reference: ref_luma.clone(),
            distorted: dist_luma,
            prev_ref: host_prev,
            chroma,
            previous: previous.filter(|_| features && companions.needs_previous()),
        };
        if let Err(e) = self.backend.submit_host(job, host) {
            self.abort_clip();
            return Err(e);
        }
        self.clip.geometry = Some(geometry);
        self.clip.next_index += 1;
        self.clip.in_flight += 1;
        self.clip
            .refs
            .push_back((shape, Some(InputPlane::Host(ref_luma))));
        while self.clip.refs.len() > distance {
            self.clip.refs.pop_front();
        }
        Ok(())
    }

    /// Whether frames whose luma is in device memory ([`Frame::device`]) are read where they
    /// are (the device route): the backend reads device planes (CUDA), no companion metric is
    /// asked for and no host extractor runs (those read the chroma or the engine's copies on
    /// the host). Where not, a caller maps such frames to host memory and pushes them so.
    pub fn takes_device_planes(&self) -> bool {
        !self.routes.any_on_host()
            && !self.job_companions().any()
            && self.backend.accepts_device_planes()
    }

    /// The device route: a pair with a plane in device memory, read where it is (the other
    /// may be in host memory: one pad in CUDA memory, one in system memory). The backend
    /// checks the samples of 9- to 15-bit planes on the GPU.
    fn push_device(
        &mut self,
        geometry: Geometry,
        reference: &Frame<'_>,
        distorted: &Frame<'_>,
    ) -> Result<Vec<FrameScores>> {
        if !self.takes_device_planes() {
            return Err(Error::Unsupported {
                metric: "input",
                reason: format!(
                    "frames in device memory are read only by a GPU backend that reads them \
                     (CUDA) without companion metrics or host extractors; backend {} with this \
                     configuration takes frames in host memory",
                    self.backend.name()
                ),
            });
        }
        if self.clip.geometry.is_some() && !self.clip.zero_copy {
            return Err(device_clip());
        }
        let (Some(rl), Some(dl)) = (reference.input_luma(), distorted.input_luma()) else {
            return Err(Error::State(
                "a frame in device memory paired with a borrowed picture".into(),
            ));
        };
        let features = self.clip.next_index.is_multiple_of(self.subsample());
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
        let (prev_ref, input_prev) =
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
            features,
            chroma: None,
            previous: None,
        };
        let frame = DeviceFrame {
            reference: rl.clone(),
            distorted: dl,
            prev_ref: input_prev,
        };
        if let Err(e) = self.backend.submit_device(job, frame) {
            self.abort_clip();
            return Err(e);
        }
        self.clip.geometry = Some(geometry);
        self.clip.zero_copy = true;
        self.clip.next_index += 1;
        self.clip.in_flight += 1;
        self.clip.refs.push_back((shape, Some(rl)));
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

    /// Whether a frame's whole work (VMAF and the companion metrics asked for) runs on a GPU,
    /// about a millisecond a frame once pushed: then waiting for it ([`Scorer::poll`] with
    /// `wait`) right after a push gives the previous frame's scores without holding up the
    /// next frames.
    pub fn computes_on_device(&self) -> bool {
        !self.routes.any_on_host() && self.backend.computes_on_device(self.job_companions())
    }

    /// What every scored frame asks the backend for: the companion metrics, and the host
    /// extractors the backend computes on its device ([`Routes`]).
    fn job_companions(&self) -> Companions {
        self.cfg.companions.with(self.routes.companions)
    }

    /// The host extractors that run on host threads.
    fn on_host(&self) -> impl Iterator<Item = &host::HostKind> {
        self.plan
            .host
            .iter()
            .enumerate()
            .filter(|(j, _)| self.routes.on_host(*j))
            .map(|(_, h)| &h.kind)
    }

    /// Whether frames in the caller's memory ([`Frame::host`]) are read where they are (the
    /// zero-copy route): the backend reads host planes (the GPU backends), and no host
    /// extractor (CAMBI, SpEED) needs the engine's own copies. Otherwise they are copied.
    pub fn takes_host_planes(&self) -> bool {
        !self.routes.any_on_host() && self.backend.accepts_host_planes()
    }

    /// Pinned host memory for frames in the caller's memory, where it pays: on the zero-copy
    /// route to a CUDA device, frames a producer writes into it are uploaded by DMA with no host
    /// copy. `None` on the other routes.
    pub fn pinned_memory(&self) -> Result<Option<PinnedMemory>> {
        if !self.takes_host_planes() || !self.backend.uploads_pinned_memory() {
            return Ok(None);
        }
        PinnedMemory::open(self.cfg.device_id).map(Some)
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
            frames: self.clip.pooled.frames(),
            pooled: self.clip.pooled.stats(),
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
        let set = host::prepare(
            &self.plan.host_kinds(),
            &self.routes,
            g.width,
            g.height,
            g.bpc,
            chroma,
        )?;
        self.host_set = Some((*g, Arc::clone(&set)));
        Ok(Some(set))
    }

    /// Whether the model or a standalone metric needs the chroma planes (VMAF v1's SpEED
    /// chroma): GRAY input is then refused.
    pub fn needs_chroma(&self) -> bool {
        self.plan.host.iter().any(|h| h.kind.needs_chroma())
    }
}

#[cfg(test)]
mod shared_tests;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod companion_tests;

#[cfg(test)]
mod companion_format_tests;

#[cfg(test)]
mod on_device_tests;

#[cfg(test)]
mod device_tests;

/// A clip read from device planes cannot go on with frames copied by the engine, nor the other
/// way round (motion reads the previous reference where the clip's route left it).
fn device_clip() -> Error {
    Error::State(
        "frames in device memory and frames the engine copies cannot be mixed in one clip \
         (every frame of a clip takes one route): finish() the clip first"
            .into(),
    )
}
