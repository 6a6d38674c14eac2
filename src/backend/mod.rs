//! Backends: where the integer feature accumulators of a frame are computed.
//!
//! A backend turns one frame job (reference luma, distorted luma, the previous reference luma)
//! into a [`FrameAccum`]: the VIF and ADM accumulators and the motion SAD, as integers. The
//! engine turns those into scores with the shared floating-point code in [`crate::features`], so
//! every backend gives the same numbers as long as it gives the same integers.
//!
//! What is fixed for a clip (the model's VIF and ADM parameters, which of them it reads, the
//! companion metrics: a [`ClipConfig`]) reaches the backend once, through
//! [`Backend::configure`], not with every job.
//!
//! The companion metrics are the exception: [`FrameAccum::companions`] carries their final
//! scores ([`CompanionScores`]), which the backend computes from its intermediate values (SSE,
//! per-pixel terms) with the same code in [`crate::features`] that the CPU path calls.
//!
//! Jobs are submitted asynchronously and their results come back in submission order.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(any(feature = "cuda", feature = "hip"))]
pub mod gpu;
#[cfg(feature = "hip")]
pub mod hip;
pub mod stats;

// The engine's path to the timing helper (engine::push_times).
pub(crate) use stats::add_elapsed;

// The host planes live in `crate::picture::host`; these are their old paths.
pub use crate::picture::host;
pub use crate::picture::host::{HostBytes, HostChroma, HostPlane, RawHostBytes};
pub use crate::picture::{DevicePlane, InputPlane};

use std::sync::Arc;

use crate::error::Result;
use crate::features::adm::{AdmAccum, AdmParams};
use crate::features::cambi::CambiParams;
use crate::features::ms_ssim::MsSsimScore;
use crate::features::psnr::PsnrScores;
use crate::features::psnr_hvs::PsnrHvsScores;
use crate::features::speed::{
    SpeedChroma, SpeedChromaParams, SpeedChromaScores, SpeedTemporal, SpeedTemporalParams,
};
use crate::features::ssim::SsimScore;
use crate::features::vif::{VifAccum, VifParams};
use crate::picture::{OwnedPlane, Plane};

/// The companion metrics a clip asks for besides VMAF's features ([`ClipConfig::companions`]:
/// libvmaf's `psnr`, `float_ssim`, `float_ms_ssim`, `ciede`, `psnr_hvs` extractors with their
/// default options), and the VMAF v1 features a backend computes on its device
/// ([`Backend::computes_on_device`]; the engine asks for them only where the backend says so,
/// else they run on host threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Companions {
    pub psnr: bool,
    pub ssim: bool,
    pub ms_ssim: bool,
    pub ciede: bool,
    pub psnr_hvs: bool,
    /// CAMBI of the distorted luma with these options (never `full_ref`: that stays on the
    /// host), reported in [`CompanionScores::cambi`].
    pub cambi: Option<CambiParams>,
    /// libvmaf's `speed_chroma` with these options ([`CompanionScores::speed_chroma`]).
    pub speed_chroma: Option<SpeedChromaParams>,
    /// libvmaf's `speed_temporal` with these options ([`CompanionScores::speed_temporal`]):
    /// the jobs then carry the previous frame's luma ([`FrameJob::previous`],
    /// [`HostFrame::previous`]).
    pub speed_temporal: Option<SpeedTemporalParams>,
}

impl Companions {
    /// Whether any companion metric is asked for.
    pub fn any(&self) -> bool {
        self.psnr
            || self.ssim
            || self.ms_ssim
            || self.ciede
            || self.psnr_hvs
            || self.cambi.is_some()
            || self.speed_chroma.is_some()
            || self.speed_temporal.is_some()
    }

    /// Whether both ask for one v1 feature (each has one set of options per clip).
    pub fn shares_v1_feature(&self, other: &Companions) -> bool {
        (self.cambi.is_some() && other.cambi.is_some())
            || (self.speed_chroma.is_some() && other.speed_chroma.is_some())
            || (self.speed_temporal.is_some() && other.speed_temporal.is_some())
    }

    /// These companions and those of `other` (the options of `other`'s v1 features where both
    /// set one).
    pub fn with(self, other: Companions) -> Companions {
        Companions {
            psnr: self.psnr || other.psnr,
            ssim: self.ssim || other.ssim,
            ms_ssim: self.ms_ssim || other.ms_ssim,
            ciede: self.ciede || other.ciede,
            psnr_hvs: self.psnr_hvs || other.psnr_hvs,
            cambi: other.cambi.or(self.cambi),
            speed_chroma: other.speed_chroma.or(self.speed_chroma),
            speed_temporal: other.speed_temporal.or(self.speed_temporal),
        }
    }

    /// Whether these metrics read the previous frame's luma planes (SpEED temporal).
    pub fn needs_previous(&self) -> bool {
        self.speed_temporal.is_some()
    }

    /// Whether these metrics read the chroma planes (PSNR of Cb/Cr, CIEDE2000, PSNR-HVS, SpEED
    /// chroma).
    pub fn needs_chroma(&self) -> bool {
        self.psnr || self.ciede || self.psnr_hvs || self.speed_chroma.is_some()
    }
}

/// The chroma planes of a pair, compact u16, at libvmaf's chroma size (`width >> ss_x`,
/// `height >> ss_y`: odd sizes round down, as libvmaf's pictures do).
#[derive(Debug, Default)]
pub struct ChromaPair {
    /// Cb, Cr of the reference.
    pub reference: [OwnedPlane; 2],
    /// Cb, Cr of the distorted picture.
    pub distorted: [OwnedPlane; 2],
}

/// The companion metrics of one frame: final scores, computed from the backend's intermediate
/// values (SSE, per-pixel terms) by the one implementation in [`crate::features`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompanionScores {
    pub psnr: Option<PsnrScores>,
    pub ssim: Option<SsimScore>,
    pub ms_ssim: Option<MsSsimScore>,
    pub ciede: Option<f64>,
    pub psnr_hvs: Option<PsnrHvsScores>,
    /// CAMBI's score (`min(score, max_val)`), when [`Companions::cambi`] asked for it.
    pub cambi: Option<f64>,
    /// SpEED chroma's u, v and uv (`MIN(score, speed_max_val)`), finished on the host by
    /// [`SpeedChroma::finish`](crate::features::speed::SpeedChroma::finish) on every route.
    pub speed_chroma: Option<SpeedChromaScores>,
    /// SpEED temporal's score (0 for a frame without a previous one, as libvmaf), finished on
    /// the host by [`SpeedTemporal::finish`] on every route.
    pub speed_temporal: Option<f64>,
}

/// One frame's work.
#[derive(Clone, Debug)]
pub struct FrameJob {
    /// Frame number (0-based since the start or the last reset).
    pub index: u64,
    /// Reference luma: compact (stride == width), samples within `bpc` bits, at least 33x33.
    pub reference: Arc<OwnedPlane>,
    /// Distorted luma, same geometry and depth as `reference`.
    pub distorted: Arc<OwnedPlane>,
    /// The previous frame's reference luma (same geometry), `None` for the first frame after the
    /// start or a reset: then `motion_sad` is `None`.
    pub prev_ref: Option<Arc<OwnedPlane>>,
    /// Whether VIF, ADM and the companion metrics are computed (with the backend's
    /// [`ClipConfig`]). `false` for the frames that subsampling skips (libvmaf `--subsample N`
    /// still computes motion on every frame); a backend may then leave `FrameAccum::vif` and
    /// `FrameAccum::adm` at their defaults (computing them is harmless), and computes no
    /// companion metric.
    pub features: bool,
    /// The chroma planes, when the configured companions read them
    /// ([`Companions::needs_chroma`]) and the picture has chroma.
    pub chroma: Option<Arc<ChromaPair>>,
    /// The previous frame's (reference, distorted) luma, same geometry, when the configured
    /// companions read them ([`Companions::needs_previous`]) on a frame with
    /// [`FrameJob::features`]; `None` for the first frame after the start or a reset (SpEED
    /// temporal is then 0). The frame pushed just before, subsampling or not (libvmaf runs its
    /// temporal extractors on every frame).
    pub previous: Option<(Arc<OwnedPlane>, Arc<OwnedPlane>)>,
}

/// What every job of a clip asks for, fixed by the model and the settings: the VIF and ADM
/// parameters, which of the two the model reads, and the companion metrics. Given to the
/// backend once, through [`Backend::configure`], instead of with every frame ([`FrameJob`]
/// carries only what changes from frame to frame).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClipConfig {
    pub vif: VifParams,
    pub adm: AdmParams,
    /// Which of VIF and ADM the model reads (on frames with [`FrameJob::features`]): a backend
    /// may skip the others and leave their accumulators at the default. The CPU backend does
    /// (VMAF v1 has no VIF); the GPU backends compute both.
    pub needs: Needs,
    /// Companion metrics to compute (on frames with [`FrameJob::features`]).
    pub companions: Companions,
}

/// Which of VIF and ADM a clip needs ([`ClipConfig::needs`]); both by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Needs {
    pub vif: bool,
    pub adm: bool,
}

impl Default for Needs {
    fn default() -> Self {
        Needs {
            vif: true,
            adm: true,
        }
    }
}

/// The integer results of one frame (and the companion metrics' scores).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameAccum {
    pub vif: VifAccum,
    pub adm: AdmAccum,
    /// Motion SAD against `FrameJob::prev_ref` ([`crate::features::motion::sad`]); `None` when
    /// the job had no previous reference.
    pub motion_sad: Option<u64>,
    pub companions: CompanionScores,
}

/// The planes of one job in the caller's memory (see [`FrameJob`]).
#[derive(Clone, Debug)]
pub struct HostFrame {
    pub reference: HostPlane,
    pub distorted: HostPlane,
    /// The previous reference when it, too, is a host plane (else the job's `prev_ref`).
    pub prev_ref: Option<HostPlane>,
    /// The chroma planes when the job's companion metrics read them (`job.chroma` is then
    /// `None`).
    pub chroma: Option<HostChroma>,
    /// The previous frame's (reference, distorted) luma as host planes, as
    /// [`FrameJob::previous`] (which is then `None`).
    pub previous: Option<(HostPlane, HostPlane)>,
}

impl HostFrame {
    /// `job` with compact copies of the host planes in place of its geometry-only planes (what
    /// a backend that cannot read host planes computes; see [`Backend::submit_host`]).
    pub fn materialize(&self, mut job: FrameJob) -> FrameJob {
        job.reference = Arc::new(self.reference.to_owned_plane());
        job.distorted = Arc::new(self.distorted.to_owned_plane());
        if let Some(p) = &self.prev_ref {
            job.prev_ref = Some(Arc::new(p.to_owned_plane()));
        }
        if let Some((r, d)) = &self.previous {
            job.previous = Some((Arc::new(r.to_owned_plane()), Arc::new(d.to_owned_plane())));
        }
        if let Some(c) = &self.chroma {
            job.chroma = Some(Arc::new(ChromaPair {
                reference: c.owned(false),
                distorted: c.owned(true),
            }));
        }
        job
    }
}

/// The luma planes of one job read where they are, each in host or in device memory (one pad
/// may carry CUDA memory and the other system memory): see [`Backend::submit_device`].
#[derive(Clone, Debug)]
pub struct DeviceFrame {
    pub reference: InputPlane,
    pub distorted: InputPlane,
    /// The previous reference when it, too, is read where it is (else the job's `prev_ref`).
    pub prev_ref: Option<InputPlane>,
}

/// Which backend computes the feature accumulators.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The best available: a GPU if one can be used, else the CPU.
    #[default]
    Auto,
    Cpu,
    Cuda,
    Hip,
}

/// What a CPU, CUDA or HIP backend implements.
pub trait Backend: Send {
    /// Short name: "cpu", "cuda", "hip".
    fn name(&self) -> &'static str;

    /// Queue frame `job.index`. Planes are compact u16 (stride == width) owned by the engine; the
    /// backend may keep the `Arc`s until it returns the result.
    fn submit(&mut self, job: FrameJob) -> Result<()>;

    /// The next finished result in submission order. If `wait`, blocks while something is in
    /// flight; returns `Ok(None)` when nothing is in flight (or, without `wait`, nothing is ready).
    fn receive(&mut self, wait: bool) -> Result<Option<(u64, FrameAccum)>>;

    /// Drop every job in flight and every result not yet received (the configuration given by
    /// [`Backend::configure`] stays).
    fn reset(&mut self);

    /// How many jobs the engine keeps in flight before it waits for a result.
    fn max_in_flight(&self) -> usize {
        2
    }

    /// Whether the backend reads jobs whose planes are in the caller's memory ([`HostFrame`])
    /// instead of compact `u16` planes. The engine only sends such jobs to a
    /// backend that says so.
    fn accepts_host_planes(&self) -> bool {
        false
    }

    /// Compute the jobs submitted from now on with `cfg` (in submission order: a call between
    /// jobs applies to the jobs after it). The engine calls it once, when the scorer is made;
    /// before any call a backend uses [`ClipConfig::default()`]. A backend gets ready here for
    /// what `cfg` asks, so that the first frame does not wait (the GPU backends open their
    /// companion metrics' executor here, compiling and loading its kernels, about two seconds
    /// once per process, instead of at the first frame). A failure here is the error the first
    /// frame would get.
    fn configure(&mut self, cfg: &ClipConfig) -> Result<()>;

    /// Whether a frame's whole work with `companions` on is done on a GPU, so that it takes
    /// about a millisecond once submitted (a live pipeline's streaming thread then waits for
    /// it, and frame n's scores go out as soon as pair n + 1 is computed). The default: no (the
    /// CPU backend, whose frames take tens of milliseconds over its threads).
    ///
    /// The engine also asks it of each VMAF v1 feature alone (a `Companions` with only that
    /// feature set, e.g. [`Companions::cambi`]): yes means the backend computes it into
    /// [`CompanionScores`] when its configuration asks for it, and the engine runs no host
    /// thread for it.
    /// A backend must say no for a feature it does not compute.
    fn computes_on_device(&self, companions: Companions) -> bool {
        let _ = companions;
        false
    }

    /// Whether [`Backend::submit_host`] checks the host planes' samples itself, after taking
    /// the frame. Then a frame with a sample above `2^bpc - 1` is refused when its result is
    /// due: [`Backend::receive`] returns [`Error::SampleRange`](crate::Error::SampleRange) in its place (the first such
    /// sample in row order, reference before distorted, both named "luma"), in submission
    /// order. The engine then does not scan the planes on the host, and on that error ends the
    /// clip before the frame ([`Error::FrameRefused`](crate::Error::FrameRefused)), resetting the backend.
    fn checks_host_ranges(&self) -> bool {
        false
    }

    /// Whether host planes in the engine's pinned memory ([`crate::engine::PinnedMemory`]: CUDA
    /// page-locked) are uploaded by DMA straight from there, so that frames are worth placing
    /// in it ([`crate::engine::Scorer::pinned_memory`]). The default: no.
    fn uploads_pinned_memory(&self) -> bool {
        false
    }

    /// Queue a job whose planes are in the caller's memory: `host` holds the samples;
    /// `job.reference` and `job.distorted` (and `job.prev_ref` when `host.prev_ref` is set)
    /// carry only the geometry (width, height, bpc; no samples), and the chroma planes that the
    /// job's companion metrics read are `host.chroma` (`job.chroma` is then `None`).
    /// `job.prev_ref.is_some()` still says whether the frame has a previous reference. The
    /// backend keeps `host` (the caller's memory) alive until it no longer reads it. The default
    /// copies the planes into compact planes and calls [`Backend::submit`].
    fn submit_host(&mut self, job: FrameJob, host: HostFrame) -> Result<()> {
        self.submit(host.materialize(job))
    }

    /// Whether the backend reads luma planes in device memory ([`DevicePlane`]: the CUDA
    /// backend, in its device's primary context) through [`Backend::submit_device`]. The
    /// default: no.
    fn accepts_device_planes(&self) -> bool {
        false
    }

    /// Queue a job whose luma planes are read where they are, host or device memory
    /// (`job`'s planes carry only the geometry, as for [`Backend::submit_host`]); no companion
    /// metric (the engine sends such jobs only when its [`ClipConfig`] asks for none). The
    /// backend keeps the planes
    /// (their owners) alive until it no longer reads them. The default refuses.
    fn submit_device(&mut self, job: FrameJob, frame: DeviceFrame) -> Result<()> {
        let _ = (job, frame);
        Err(crate::error::Error::Backend(format!(
            "the {} backend cannot read planes in device memory",
            self.name()
        )))
    }
}

/// Compute one job on the calling thread: the CPU reference, also what GPU backends are checked
/// against. Fails only where a companion metric refuses the planes (the engine checks them
/// before it submits a job, so this does not happen through the engine).
pub fn compute_job_cpu(cfg: &ClipConfig, job: &FrameJob) -> Result<FrameAccum> {
    use crate::features::{adm, motion, vif};
    let (r, d) = (job.reference.view(), job.distorted.view());
    let vif = if job.features && cfg.needs.vif {
        vif::compute(r, d, &cfg.vif)
    } else {
        VifAccum::default()
    };
    let adm = if job.features && cfg.needs.adm {
        adm::compute(r, d, &cfg.adm)
    } else {
        AdmAccum::default()
    };
    let motion_sad = job.prev_ref.as_ref().map(|p| motion::sad(p.view(), r));
    let companions = if job.features {
        compute_companions_cpu(&cfg.companions, job)?
    } else {
        CompanionScores::default()
    };
    Ok(FrameAccum {
        vif,
        adm,
        motion_sad,
        companions,
    })
}

/// The planes of one side of a job: luma, then Cb and Cr when the job has chroma.
pub fn job_planes(job: &FrameJob, distorted: bool) -> Vec<Plane<'_>> {
    let luma = if distorted {
        &job.distorted
    } else {
        &job.reference
    };
    let mut planes = vec![luma.view()];
    if let Some(c) = &job.chroma {
        let side = if distorted {
            &c.distorted
        } else {
            &c.reference
        };
        planes.extend(side.iter().map(OwnedPlane::view));
    }
    planes
}

/// The companion metrics `companions` of a job on the CPU (the reference implementation in
/// [`crate::features`]), whatever `job.features` says.
pub fn compute_companions_cpu(companions: &Companions, job: &FrameJob) -> Result<CompanionScores> {
    use crate::features::{ciede, ms_ssim, psnr, psnr_hvs, ssim};
    let c = *companions;
    if !c.any() {
        return Ok(CompanionScores::default());
    }
    let (r, d) = (job_planes(job, false), job_planes(job, true));
    Ok(CompanionScores {
        psnr: c.psnr.then(|| psnr::psnr(&r, &d)).transpose()?,
        ssim: c.ssim.then(|| ssim::ssim(r[0], d[0])).transpose()?,
        ms_ssim: c
            .ms_ssim
            .then(|| ms_ssim::ms_ssim(r[0], d[0]))
            .transpose()?,
        ciede: c.ciede.then(|| ciede::ciede(&r, &d)).transpose()?,
        psnr_hvs: c.psnr_hvs.then(|| psnr_hvs::psnr_hvs(&r, &d)).transpose()?,
        cambi: c
            .cambi
            .as_ref()
            .map(|p| crate::features::cambi::cambi_of(p, &d[0]))
            .transpose()?,
        speed_chroma: c
            .speed_chroma
            .map(|p| {
                let e = speed_chroma_extractor(&p, &r)?;
                e.compute(&r[1], &r[2], &d[1], &d[2])
            })
            .transpose()?,
        speed_temporal: c
            .speed_temporal
            .map(|p| {
                let (rl, dl) = (&r[0], &d[0]);
                let t = SpeedTemporal::new(&p, rl.width, rl.height, rl.bpc)?;
                let prev = job.previous.as_ref().map(|(a, b)| (a.view(), b.view()));
                t.compute(prev.as_ref().map(|(a, b)| (a, b)), rl, dl)
            })
            .transpose()?,
    })
}

/// SpEED chroma prepared for the chroma planes of one side of a job (`planes`: luma, then Cb
/// and Cr when the job has chroma), or its refusal: a job without chroma, or a plane size or
/// depth libvmaf refuses.
pub fn speed_chroma_extractor(p: &SpeedChromaParams, planes: &[Plane<'_>]) -> Result<SpeedChroma> {
    match planes.get(1) {
        Some(u) => SpeedChroma::new(p, u.width, u.height, u.bpc),
        None => Err(crate::error::Error::Unsupported {
            metric: "speed_chroma",
            reason: "SpEED chroma (and every VMAF v1 model) needs the chroma planes, and the \
                     picture has none (GRAY)"
                .into(),
        }),
    }
}

/// Open a backend. `Cpu` gives the CPU backend with `threads` workers (0 = one per core).
/// `Cuda` opens CUDA device `device_id` or fails with the driver's message; `Hip` likewise for
/// an AMD GPU through ROCm. `Auto` takes CUDA when the build has it and the device opens, else
/// HIP likewise, else the CPU backend (the caller learns which from [`Backend::name`]). A GPU
/// backend this build cannot provide is an [`Error::Backend`](crate::Error::Backend).
pub fn create(kind: BackendKind, threads: usize, device_id: u32) -> Result<Box<dyn Backend>> {
    #[cfg(not(all(feature = "cuda", feature = "hip")))]
    use crate::error::Error;
    match kind {
        BackendKind::Cpu => Ok(Box::new(cpu::CpuBackend::new(threads)?)),
        BackendKind::Auto => {
            #[cfg(feature = "cuda")]
            if let Ok(b) = cuda::CudaBackend::new(device_id) {
                return Ok(Box::new(b));
            }
            #[cfg(feature = "hip")]
            if let Ok(b) = hip::HipBackend::new(device_id) {
                return Ok(Box::new(b));
            }
            Ok(Box::new(cpu::CpuBackend::new(threads)?))
        }
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Ok(Box::new(cuda::CudaBackend::new(device_id)?)),
        #[cfg(not(feature = "cuda"))]
        BackendKind::Cuda => Err(Error::Backend(format!(
            "CUDA backend (device {device_id}) is not available in this build"
        ))),
        #[cfg(feature = "hip")]
        BackendKind::Hip => Ok(Box::new(hip::HipBackend::new(device_id)?)),
        #[cfg(not(feature = "hip"))]
        BackendKind::Hip => Err(Error::Backend(format!(
            "HIP backend (device {device_id}) is not available in this build"
        ))),
    }
}
