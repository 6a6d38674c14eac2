//! The companion metrics on a GPU, written once over [`Device`] (CUDA and HIP): the feeder
//! thread, the ring of buffers, the graphs where the device has them, and [`GpuCompanions`].
//! What a frame runs (its [`CompanionPlan`]: the arena's regions and the
//! launches) and how its scores are made from the GPU's sums are backend-neutral, in
//! [`crate::backend::gpu::companion_plan`].
//!
//! Per frame, the host work is small: the planes come as compact `u16` planes (a job) or where
//! the caller has them ([`GpuCompanions::submit_host`]: rows copied into pinned staging, or
//! uploaded straight from pinned memory; interleaved chroma split on the GPU); each ring
//! buffer's launches are graphs captured once per geometry where the device has them (CUDA;
//! `SlotGraphs`: one call for the preparation and one per metric instead of ~50 launches; a
//! device without graphs, HIP, queues the same launches one by one); frames take copies of the
//! metrics' scratch in turn ([`DEFAULT_SCRATCH_SETS`]), each with its own streams
//! ([`CompanionPlan::scratch_sets`]; 67 MB a copy at 1080p with all five), so that a metric's kernels of
//! consecutive frames overlap. None of this changes what a kernel computes.

use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

use super::companion_plan::*;
use super::device::{ArgValue, Device, DeviceMem, HostMem};
use super::launch::*;
use super::pipeline::SlotLuma;
use super::staging::{StagePool, stage_threads};
use crate::backend::stats::{FEEDER_NS, SETUP_NS, SetupStage, Stage, feeder_add, setup_add};
use crate::backend::{CompanionScores, Companions, FrameJob, HostFrame, HostPlane};
use crate::error::{Error, Result};

/// An error of the companions on device `D` ("CUDA companions: {what}").
fn err<D: Device>(what: impl std::fmt::Display) -> Error {
    Error::Backend(format!("{} companions: {what}", D::NAME))
}

impl<D: Device> Drop for GpuCompanions<D> {
    fn drop(&mut self) {
        // Readbacks may still be writing into the pinned buffers about to be freed, and the
        // scoring threads reading them: the buffers are freed here, in this context's thread.
        self.clear();
        self.feeder = None;
        if let Some(t) = self.feeder_thread.take() {
            let _ = t.join();
        }
    }
}

/// Frames that can be pending at once ([`GpuCompanions::submit`]): at least the backend's
/// frames in flight plus one, at most [`MAX_RING`], as many as [`RING_PINNED_BYTES`] of
/// page-locked memory (a 1080p 4:2:0 8-bit frame: ~6 MB of staged planes, a few hundred KB read
/// back) and [`RING_DEVICE_BYTES`] of device memory (its planes and per-pixel terms, ~90 MB
/// with all five metrics) hold. Deep enough that the GPU works on several frames while earlier
/// ones are finished.
pub const MIN_RING: usize = super::pipeline::SLOTS + 1;
pub const MAX_RING: usize = 12;
pub const RING_PINNED_BYTES: usize = 768 << 20;
/// Device memory for the frames' own planes and results (mostly MS-SSIM's per-pixel terms:
/// ~90 MB a frame at 1080p with all five metrics).
pub const RING_DEVICE_BYTES: usize = 1 << 30;

/// Ring buffers for frames of `pinned` bytes of staging and readback and `device` bytes of
/// results on the device (each frame in flight has its own).
pub fn ring_len(pinned: usize, device: usize) -> usize {
    (RING_PINNED_BYTES / pinned.max(1))
        .min(RING_DEVICE_BYTES / device.max(1))
        .clamp(MIN_RING, MAX_RING)
}

/// One frame's host memory, page-locked so that copies run at DMA speed instead of through the
/// driver's bounce buffer: the planes to upload (copied in by host threads), the readback (the
/// GPU's sums: well under 1 MB a frame at 1080p), and the events that order a frame's uploads,
/// kernels and readback on their streams.
struct RingBuf<D: Device> {
    /// Page-locked staging for the planes copied in from the host: `staging_bytes` (every
    /// input plane), allocated when a frame first stages something. Frames from pinned memory
    /// (the element's pool) are uploaded from where they are and never need it; page-locking
    /// every ring buffer's staging up front delayed a geometry's first frame noticeably
    /// (BENCHMARKS.md, "Figures moved from code comments").
    staging: Option<D::Host>,
    staging_bytes: usize,
    readback: D::Host,
    /// The frame's launches captured as graphs (`None`: launched one by one).
    graphs: Option<SlotGraphs<D>>,
    /// Recorded after the frame's uploads, and after each metric's kernels.
    up: D::Event,
    metric: Vec<D::Event>,
    done: D::Event,
    /// Which copy of the plan's results the frame uses ([`CompanionPlan::device_offset`]).
    slot: usize,
}

impl<D: Device> RingBuf<D> {
    /// The first `bytes` bytes of staging (allocated on first use, on `dev`).
    fn staging_mut(&mut self, dev: &D, bytes: usize) -> Result<&mut [u8]> {
        if bytes > self.staging_bytes {
            return Err(err::<D>(format!(
                "{bytes} bytes to stage in a ring buffer of {}",
                self.staging_bytes
            )));
        }
        let staging = match &mut self.staging {
            Some(s) => s,
            s => s.insert(dev.alloc_host(self.staging_bytes, true)?),
        };
        Ok(staging.slice_mut(0, bytes))
    }
}

/// A ring buffer's launches as graphs, captured once per geometry (the launches' arguments
/// depend only on the plan and the buffer's results slot): what the upload stream runs after
/// the frame's uploads (zeroing, widening), and each metric's kernels on its stream. One call
/// each instead of one per launch: the feeder thread's driver calls a frame go from about 75
/// to about 30 (PSNR-HVS alone has 13 launches, MS-SSIM 20).
struct SlotGraphs<D: Device> {
    prep: D::Graph,
    metric: Vec<Option<D::Graph>>,
}

/// Queue the zeroing of the frame's accumulators and the launches that prepare its planes
/// (after the uploads) on `stream`, for the frame in `slot`.
fn queue_prep<D: Device>(
    k: &Launcher<D>,
    stream: &D::Stream,
    plan: &CompanionPlan,
    base: u64,
    slot: usize,
) -> Result<()> {
    for r in &plan.zero {
        // SAFETY: the region lies in the arena (the plan's), for this slot's copy of the
        // results (device_offset), inside the allocation of device_bytes(ring) bytes.
        unsafe {
            k.dev
                .memset_zero(base + plan.device_offset(*r, slot) as u64, r.bytes, stream)
        }?;
    }
    for l in &plan.prep {
        launch(k, stream, plan, base, slot, l)?;
    }
    Ok(())
}

/// Queue metric `m`'s launches (an index into `METRICS`) on `stream`, for the frame in `slot`.
fn queue_metric<D: Device>(
    k: &Launcher<D>,
    stream: &D::Stream,
    plan: &CompanionPlan,
    base: u64,
    slot: usize,
    m: usize,
) -> Result<()> {
    for (l, _) in plan
        .launches
        .iter()
        .zip(&plan.metric_streams)
        .filter(|(_, i)| **i == m)
    {
        launch(k, stream, plan, base, slot, l)?;
    }
    Ok(())
}

/// Capture slot `slot`'s graphs ([`SlotGraphs`]).
/// `None` where the device has no graphs.
fn capture_slot<D: Device>(
    k: &Launcher<D>,
    plan: &CompanionPlan,
    base: u64,
    slot: usize,
) -> Result<Option<SlotGraphs<D>>> {
    let Some(prep) = k.dev.capture(&k.stream, &mut || {
        queue_prep(k, &k.stream, plan, base, slot)
    })?
    else {
        return Ok(None);
    };
    let mut metric = Vec::with_capacity(METRICS.len());
    for (m, s) in k.metric_set(plan.scratch_set(slot)).iter().enumerate() {
        metric.push(if plan.metrics_used[m] {
            let g = k
                .dev
                .capture(s, &mut || queue_metric(k, s, plan, base, slot, m))?;
            Some(g.ok_or_else(|| err::<D>("a graph for one metric and not another"))?)
        } else {
            None
        });
    }
    Ok(Some(SlotGraphs { prep, metric }))
}

/// A ring buffer, locked by whoever uses it: the feeder while it stages and queues a frame,
/// then that frame's scoring thread until its sums are done. [`GpuCompanions::submit`] hands a
/// buffer to a new frame only once its previous frame's scores are in, so neither waits.
type Readback<D> = Arc<Mutex<RingBuf<D>>>;

/// Where a frame's scores land: filled by its scoring thread (or by the feeder on an error).
#[derive(Default)]
struct FrameOutcome {
    /// The scores and when they were set (for [`Stage::ToOwner`]).
    scores: Mutex<Option<(Result<CompanionScores>, std::time::Instant)>>,
    ready: Condvar,
}

impl FrameOutcome {
    fn set(&self, r: Result<CompanionScores>) {
        *self.scores.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((r, std::time::Instant::now()));
        self.ready.notify_all();
    }

    fn is_set(&self) -> bool {
        self.scores
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    fn wait(&self) -> (Result<CompanionScores>, std::time::Instant) {
        let mut g = self.scores.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            g = self.ready.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// One frame for the feeder thread: everything it needs to stage and queue the frame and to
/// start its scoring thread.
struct Feed<D: Device> {
    /// When `submit` handed it over (for [`Stage::ToFeeder`]).
    submitted: std::time::Instant,
    job: FrameJob,
    /// The planes in the caller's memory, when the job's own carry only the geometry.
    host: Option<HostFrame>,
    plan: Arc<CompanionPlan>,
    base: u64,
    rb: Readback<D>,
    outcome: Arc<FrameOutcome>,
    /// The luma planes came from VMAF's device buffers ([`SlotLuma`]): recorded, on VMAF's
    /// stream, after their widening into this frame's planes. The feeder uploads the other
    /// planes only, and the frame's kernels wait for it.
    luma: Option<Arc<D::Event>>,
}

/// Scratch copies a geometry gets by default where the device has the memory (else one):
/// consecutive frames' kernels of one metric at once. MS-SSIM's five levels and PSNR-HVS's
/// serial sum are chains of short kernels: with one set, each metric's chain ran one frame at a
/// time, a limit of its own beside the GPU's throughput. Three sets were the best measured
/// (BENCHMARKS.md, "Figures moved from code comments").
pub const DEFAULT_SCRATCH_SETS: usize = 3;

/// The most scratch copies ([`GpuCompanions::set_scratch_sets`]).
pub const MAX_SCRATCH_SETS: usize = 4;

impl<D: Device> Launcher<D> {
    /// The metric streams of scratch set `set`.
    fn metric_set(&self, set: usize) -> &[D::Stream] {
        &self.metric[set * METRICS.len()..(set + 1) * METRICS.len()]
    }
}

/// What the feeder launches with: the kernels and the streams. A frame's uploads go on
/// `stream`, each metric's kernels on that metric's stream of the frame's scratch set (after
/// the upload; the metrics of a frame run at once, and each copy of a metric's scratch is used
/// in frame order by the frames of its set: [`CompanionPlan::scratch_set`]), and the readback on
/// `readback` after every metric's kernels. Each frame has its own planes and results on the
/// device ([`CompanionPlan::device_offset`]), so the next frame's upload need not wait for this frame's
/// kernels.
pub(crate) struct Launcher<D: Device> {
    pub(crate) dev: D,
    pub(crate) stream: D::Stream,
    /// [`MAX_SCRATCH_SETS`] sets of one stream per metric (`METRICS` order), set after set.
    metric: Vec<D::Stream>,
    readback: D::Stream,
    module: D::Module,
}

/// Per-geometry device state.
pub(crate) struct RingState<D: Device> {
    pub(crate) plan: Arc<CompanionPlan>,
    _arena: D::Buf,
    pub(crate) base: u64,
    /// [`ring_len`] ring buffers, each locked by the frame using it (see [`Readback`]).
    readbacks: Vec<Readback<D>>,
    /// One a ring buffer: recorded on VMAF's stream after a frame's luma planes were widened
    /// from VMAF's buffers into the ring buffer's planes ([`Feed::luma`]); outside the buffer's
    /// lock, so that the worker records it without taking the lock.
    luma_widened: Vec<Arc<D::Event>>,
    next: usize,
}

/// A submitted frame: where its scores will be.
struct PendingScores {
    ticket: u64,
    outcome: Arc<FrameOutcome>,
}

/// Wait for a frame's readback, then its scores (on the frame's scoring thread). Terms the
/// scores need from the device are copied from the frame's own results (its slot), which no
/// other frame writes while this one holds the ring buffer. `host_previous`: for a frame from the
/// caller's memory, whether it had the previous frame's planes (`None`: the job's planes).
fn score_frame<D: Device>(
    dev: &D,
    plan: &CompanionPlan,
    base: u64,
    rb: &RingBuf<D>,
    job: &FrameJob,
    host_previous: Option<bool>,
    queued: std::time::Instant,
) -> Result<CompanionScores> {
    dev.sync_event(&rb.done)?;
    let gpu_done = feeder_add(Stage::Gpu, queued);
    let slot = rb.slot;
    let fetch = |r: Region| -> Result<Vec<u8>> {
        dev.bind()?;
        let mut v = vec![0u8; r.bytes];
        let off = plan.device_offset(r, slot);
        if off + r.bytes > plan.device_bytes(slot + 1) {
            return Err(err::<D>(format!(
                "{r:?} of slot {slot} beyond the device buffer"
            )));
        }
        // SAFETY: the region lies in the device allocation (checked above: the allocation
        // holds at least slot + 1 copies of the results); its writes completed (`done`); `v`
        // has exactly r.bytes bytes.
        unsafe { dev.download_now(&mut v[..], base + off as u64) }?;
        Ok(v)
    };
    let rb = rb.readback.slice(0, plan.readback.bytes);
    let r = if let Some(previous) = host_previous {
        plan.scores_of_host_frame(rb, &fetch, previous)
    } else {
        plan.scores(job, rb, &fetch)
    };
    feeder_add(Stage::Scoring, gpu_done);
    r
}

/// Whether frame `f` has the previous frame's planes (SpEED temporal runs on it).
fn has_previous<D: Device>(f: &Feed<D>) -> bool {
    f.job.previous.is_some() || f.host.as_ref().is_some_and(|h| h.previous.is_some())
}

/// The feeder thread: frames in submission order, each staged and queued on the stream (one
/// stream and one arena: a frame's kernels run after the previous frame's readback), then
/// scored on a thread of its own. Ends when the sender is dropped.
fn feed<D: Device>(launcher: Arc<Launcher<D>>, rx: Receiver<Feed<D>>) {
    let dev = &launcher.dev;
    let bound = dev.bind();
    // Staging is memory-bound: up to 8 threads with this one (the worker stages VMAF's planes
    // at the same time with its own).
    let pool = StagePool::new(stage_threads().min(8) - 1);
    for f in rx {
        let t0 = feeder_add(Stage::ToFeeder, f.submitted);
        FEEDER_NS[Stage::Frames as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let queued = match &bound {
            Ok(()) => {
                let mut rb = f.rb.lock().unwrap_or_else(|e| e.into_inner());
                feeder_add(Stage::RingWait, t0);
                let r = enqueue(&launcher, &pool, &mut rb, &f);
                if r.is_err() {
                    // What was queued may still run: let it finish before the buffers are
                    // reused.
                    let _ = dev.sync_device();
                }
                r
            }
            Err(e) => Err(e.clone()),
        };
        let direct = match queued {
            Ok(d) => d,
            Err(e) => {
                // As on the scoring threads: the buffers' references go before the outcome.
                let Feed {
                    job,
                    host,
                    plan,
                    rb,
                    outcome,
                    ..
                } = f;
                drop((job, host, plan, rb));
                outcome.set(Err(e));
                continue;
            }
        };
        let Feed {
            job,
            mut host,
            plan,
            base,
            rb,
            outcome,
            ..
        } = f;
        // A frame from the caller's memory: whether it had the previous frame's planes.
        let host_previous = host.as_ref().map(|h| h.previous.is_some());
        if !direct {
            // Copied into staging: the caller's buffers can go now.
            host = None;
        }
        let t_spawn = std::time::Instant::now();
        let for_thread = Arc::clone(&outcome);
        let dev = dev.clone();
        let spawned = std::thread::Builder::new()
            .name("vmafgpu-scores".into())
            .spawn(move || {
                // The buffers' references go before the scores are published: the owner may
                // free the ring buffers (pinned memory) as soon as every frame's scores are in,
                // and must be the one that does (its thread has the context).
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                    let guard = rb.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(h) = host {
                        // Uploaded from where they are: the caller's buffers go once the
                        // uploads are through (not at the scores: a decoder's pool may be
                        // small). Should the wait fail, they go with the context's work.
                        if dev.sync_event(&guard.up).is_err() {
                            let _ = dev.sync_device();
                        }
                        drop(h);
                    }
                    let r = score_frame(&dev, &plan, base, &guard, &job, host_previous, t_spawn);
                    drop(guard);
                    drop((rb, plan, job));
                    r
                }))
                .unwrap_or_else(|_| Err(err::<D>("a scoring thread panicked")));
                for_thread.set(r);
            });
        feeder_add(Stage::Spawn, t_spawn);
        if let Err(e) = spawned {
            // No thread to be had: the frame is not scored (its scores say why).
            outcome.set(Err(err::<D>(format!("cannot start a scoring thread: {e}"))));
        }
    }
}

/// Queue one launch on `stream`, for the frame in `slot`.
pub(crate) fn launch<D: Device>(
    k: &Launcher<D>,
    stream: &D::Stream,
    plan: &CompanionPlan,
    base: u64,
    slot: usize,
    l: &Launch,
) -> Result<()> {
    // SAFETY: no pointer replaced: every pointer is the region's in the arena (see
    // launch_reading).
    unsafe { launch_reading(k, stream, plan, base, slot, l, None) }
}

/// [`launch`], the kernel's first argument (a pointer) replaced by `first` where given.
///
/// # Safety
/// `first` must point at device memory of the launch's context holding what the kernel reads
/// there for the sizes of the launch (the region the launch names would hold), alive and not
/// written until the kernel has run.
unsafe fn launch_reading<D: Device>(
    k: &Launcher<D>,
    stream: &D::Stream,
    plan: &CompanionPlan,
    base: u64,
    slot: usize,
    l: &Launch,
    first: Option<u64>,
) -> Result<()> {
    let args: Vec<ArgValue> = l
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| match (a, first) {
            (KArg::Ptr(_), Some(p)) if i == 0 => ArgValue::Ptr(p),
            (KArg::Ptr(r), _) => ArgValue::Ptr(base + plan.device_offset(*r, slot) as u64),
            (KArg::I32(v), _) => ArgValue::I32(*v),
            (KArg::F32(v), _) => ArgValue::F32(*v),
        })
        .collect();
    // SAFETY: the arguments match the kernel's C signature (check_launch at setup, whose
    // table mirrors kernels/*.cu: pointers, int, float). A replaced first pointer holds what
    // its region would (the caller's contract). Every other pointer is the start of a
    // region of the live arena (check_launch: inside the arena; a results region of slot
    // `slot` is in that slot's copy, inside the allocation of device_bytes(ring length) bytes,
    // slot < ring length; the arena outlives every frame queued on it, GpuCompanions::setup
    // waits for them before it frees it), and the launch_*
    // function that built the launch checked that each region holds what the kernel indexes
    // for the sizes passed with it (the kernels guard every access by those sizes).
    unsafe {
        k.dev
            .launch_companion(&k.module, l.kernel, l.grid, &args, stream)
    }
}

/// Queue frame `f`'s uploads and launches, and the readback into `rb` (whose previous frame
/// has been scored: nobody else reads it). The planes come from the job, or from the caller's
/// memory (`f.host`): copied into staging, or uploaded from where they are when pinned; the
/// luma planes not at all where they are widened from VMAF's copies (`f.luma`: the kernels
/// wait for that event instead). Returns whether an upload reads the caller's memory (then it
/// must stay until `rb.up`).
fn enqueue<D: Device>(
    k: &Launcher<D>,
    pool: &StagePool,
    rb: &mut RingBuf<D>,
    f: &Feed<D>,
) -> Result<bool> {
    let (plan, base, job, host, luma) =
        (&*f.plan, f.base, &f.job, f.host.as_ref(), f.luma.as_deref());
    let (dev, st) = (&k.dev, &k.stream);
    // Planes already on the device (the luma VMAF uploaded, widened from there: Feed::luma).
    let on_device =
        |r: &Region| luma.is_some() && (Some(*r) == plan.staged[0] || Some(*r) == plan.staged[3]);
    // Each plane's region and where its bytes come from: an offset into staging, or the
    // caller's pinned memory.
    let t_stage = std::time::Instant::now();
    let mut staged: Vec<(Region, usize)> = Vec::new();
    let mut direct: Vec<(Region, &HostPlane)> = Vec::new();
    let mut off = 0;
    match host {
        None => {
            let mut uploads = plan.uploads(job);
            uploads.retain(|(r, _)| !on_device(r));
            let total: usize = uploads.iter().map(|(r, _)| r.bytes).sum();
            let mut rest = if total > 0 {
                rb.staging_mut(dev, total)?
            } else {
                &mut []
            };
            let mut planes = Vec::with_capacity(uploads.len());
            for (r, data) in &uploads {
                let (dst, tail) = std::mem::take(&mut rest).split_at_mut(r.bytes);
                rest = tail;
                staged.push((*r, off));
                off += r.bytes;
                planes.push((*data, dst));
            }
            // Bytes for 8-bit planes, else little-endian u16 samples (a plain copy on x86),
            // all the planes split at once over the feeder's staging threads.
            pool.convert_all(planes, plan.narrow);
        }
        Some(h) => {
            let mut copies = Vec::new();
            for (r, p) in plan.host_uploads(h)? {
                if on_device(&r) {
                    continue;
                }
                // MSB-aligned planes (P010) are shifted while staged.
                if dev.uploads_directly(p) && p.shift() == 0 {
                    direct.push((r, p));
                } else {
                    copies.push((r, p));
                }
            }
            let total: usize = copies.iter().map(|(r, _)| r.bytes).sum();
            let mut rest = if total > 0 {
                rb.staging_mut(dev, total)?
            } else {
                &mut []
            };
            let mut planes = Vec::with_capacity(copies.len());
            for (r, p) in copies {
                let (dst, tail) = std::mem::take(&mut rest).split_at_mut(r.bytes);
                rest = tail;
                staged.push((r, off));
                off += r.bytes;
                planes.push((p, dst));
            }
            // The rows as they are (bytes at 8 bits, little-endian u16 above).
            pool.copy_rows_all(planes, true);
        }
    }
    let t_queue = feeder_add(Stage::Staging, t_stage);
    // SAFETY: every copy stays inside the arena (the plan's regions; the staged planes are
    // exactly region-sized: CompanionGeometry::of checked the job's plane lengths, host_uploads the
    // host planes' sizes) and inside the ring buffer (staging holds every input region,
    // readback readback.bytes). Both host buffers are left alone until this frame's `done`
    // event completed: the buffer's lock is held by this frame until its scoring thread, which
    // waits for `done`, is through. Direct uploads read the caller's planes (HostPlane::new
    // checked that their rows lie in their owners' bytes), which the feeder keeps until `up`.
    let at = |r: &Region| base + plan.device_offset(*r, rb.slot) as u64;
    unsafe {
        for (r, off) in &staged {
            let src = rb
                .staging
                .as_ref()
                .ok_or_else(|| err::<D>("staging not allocated"))?
                .slice(*off, r.bytes);
            dev.upload(at(r), src, st, "upload")?;
        }
        for (r, p) in &direct {
            dev.upload_plane(p, at(r), st)?;
        }
    }
    match luma {
        // The luma planes widened on VMAF's stream, from VMAF's copy: before the kernels.
        Some(e) => dev.wait(st, e)?,
        None => {
            for l in &plan.prep_luma {
                launch(k, &k.stream, plan, base, rb.slot, l)?;
            }
        }
    }
    let graphs = rb.graphs.as_ref();
    match graphs {
        Some(g) => dev.launch_graph(&g.prep)?,
        None => queue_prep(k, &k.stream, plan, base, rb.slot)?,
    }
    dev.record(&rb.up, st)?;
    // SpEED temporal runs only on a frame with the previous frame's planes (the first frame
    // of a clip scores 0 without it).
    let mut used = plan.metrics_used;
    if !has_previous(f) {
        used[metric_index(crate::features::speed::TEMPORAL_METRIC)] = false;
    }
    let streams = k.metric_set(plan.scratch_set(rb.slot));
    for (i, s) in streams.iter().enumerate() {
        if !used[i] {
            continue;
        }
        dev.wait(s, &rb.up)?;
        match graphs.and_then(|g| g.metric[i].as_ref()) {
            Some(g) => dev.launch_graph(g)?,
            None => queue_metric(k, s, plan, base, rb.slot, i)?,
        }
    }
    dev.wait(&k.readback, &rb.up)?;
    for (i, s) in streams.iter().enumerate() {
        if used[i] {
            dev.record(&rb.metric[i], s)?;
            dev.wait(&k.readback, &rb.metric[i])?;
        }
    }
    let n = plan.readback.bytes;
    if n > 0 {
        // SAFETY: readback has exactly readback.bytes bytes; the region is in the arena; the
        // readback stream waits for every kernel of the frame (the events above).
        unsafe { dev.download(rb.readback.slice_mut(0, n), at(&plan.readback), &k.readback) }?;
    }
    dev.record(&rb.done, &k.readback)?;
    feeder_add(Stage::Queueing, t_queue);
    Ok(!direct.is_empty())
}

/// Queue the widening of `l`'s planes into the luma planes of ring buffer `ring` of `f` on
/// `l.stream` (the plan's `prep_luma` launches, reading VMAF's buffers), or with `copy` their
/// copy (2-byte samples, as VMAF's kernels read them), and record the ring buffer's
/// `luma_widened` event after them. `None` (nothing queued) where the plan's luma planes are
/// not planes of `l`'s size, 8-bit ones unless `copy`: they are uploaded then.
fn widen_luma<D: Device>(
    k: &Launcher<D>,
    f: &RingState<D>,
    ring: usize,
    l: &SlotLuma<'_, D>,
    copy: bool,
) -> Result<Option<Arc<D::Event>>> {
    let plan = &*f.plan;
    // Ring buffer i uses results slot i (setup).
    let slot = ring;
    if !plan.narrow {
        let (Some(r), Some(d)) = (plan.staged[0], plan.staged[3]) else {
            return Ok(None);
        };
        if !copy || r.bytes != l.bytes || d.bytes != l.bytes {
            return Ok(None);
        }
        for (to, src) in [(r, l.reference), (d, l.distorted)] {
            let dst = f.base + plan.device_offset(to, slot) as u64;
            // SAFETY: copies l.bytes bytes from VMAF's buffer, which holds them (SlotLuma's
            // contract), on its stream after their upload (and shift) and before the buffer's
            // next upload (same stream), into the u16 luma plane of ring buffer `slot` (a
            // region of l.bytes bytes inside the live arena), which no other frame uses: as
            // for the widening below.
            unsafe { k.dev.copy_on_device(dst, src, l.bytes, l.stream) }?;
        }
        let ev = &f.luma_widened[ring];
        k.dev.record(ev, l.stream)?;
        return Ok(Some(Arc::clone(ev)));
    }
    let sized = |w: &Launch| matches!(w.args.get(1), Some(KArg::I32(n)) if *n as usize == l.bytes);
    if plan.prep_luma.len() != 2 || !plan.prep_luma.iter().all(sized) {
        return Ok(None);
    }
    for (w, src) in plan.prep_luma.iter().zip([l.reference, l.distorted]) {
        debug_assert_eq!(w.kernel, Kernel::WidenU8);
        // SAFETY: widen_u8 reads n = l.bytes bytes at its first pointer (`sized` above): VMAF's
        // buffer holds them (SlotLuma's contract), on this stream after their upload and
        // before the buffer's next upload (same stream). It writes the frame's u16 plane of
        // ring buffer `slot`, which no other frame uses: its previous frame's scores are in
        // (submit_with waits for the oldest pending frame before a ring buffer is handed out
        // again), so its kernels are through, and this frame's kernels wait for `luma_widened`.
        unsafe { launch_reading(k, l.stream, plan, f.base, slot, w, Some(src)) }?;
    }
    let ev = &f.luma_widened[ring];
    k.dev.record(ev, l.stream)?;
    Ok(Some(Arc::clone(ev)))
}

/// The companion metrics on one device: their own streams, kernels and buffers (allocated
/// once per geometry, reused for every frame of that geometry).
///
/// Frames are pipelined: [`GpuCompanions::submit`] hands a frame to the feeder thread, which
/// copies its planes into a page-locked ring buffer, queues its uploads, kernels and readback
/// and starts a thread that waits for the readback and finishes the scores; submit
/// returns a ticket at once, and [`GpuCompanions::take`] waits for that frame's scores. The
/// caller (the backend's worker) thus spends no time per frame on the companion metrics, the
/// GPU works on later frames meanwhile (uploads, each metric's kernels and readbacks on
/// streams of their own, ordered by events: see `Launcher`), and the scores of up to
/// [`ring_len`] frames are finished at once.
pub struct GpuCompanions<D: Device> {
    pub(crate) launcher: Arc<Launcher<D>>,
    pub(crate) frame: Option<RingState<D>>,
    pending: std::collections::VecDeque<PendingScores>,
    finished: std::collections::VecDeque<(u64, Result<CompanionScores>)>,
    next_ticket: u64,
    feeder: Option<Sender<Feed<D>>>,
    feeder_thread: Option<std::thread::JoinHandle<()>>,
    ciede_table: CiedeTable,
    /// Capture each ring buffer's launches as graphs ([`SlotGraphs`]).
    graphs: bool,
    /// Scratch copies wanted ([`CompanionPlan::scratch_sets`]).
    scratch_sets: usize,
    /// [`CompanionPlan::host_sums`] for the next geometry ([`GpuCompanions::set_host_sums`]).
    host_sums: bool,
}

impl<D: Device> GpuCompanions<D> {
    /// Load the companion kernels (compiled once per process) on `dev`, create the streams and
    /// start the feeder thread. The calling thread must have `dev` bound (as the backend's
    /// worker does).
    pub fn open(dev: &D) -> Result<GpuCompanions<D>> {
        dev.bind()?;
        let module = dev.load_companions()?;
        let launcher = Arc::new(Launcher {
            stream: dev.stream()?,
            metric: (0..MAX_SCRATCH_SETS * METRICS.len())
                .map(|_| dev.stream())
                .collect::<Result<_>>()?,
            readback: dev.stream()?,
            module,
            dev: dev.clone(),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let l = Arc::clone(&launcher);
        let feeder_thread = std::thread::Builder::new()
            .name("vmafgpu-companions".into())
            .spawn(move || feed(l, rx))
            .map_err(|e| err::<D>(format!("cannot start a thread: {e}")))?;
        Ok(GpuCompanions {
            launcher,
            frame: None,
            pending: Default::default(),
            finished: Default::default(),
            next_ticket: 0,
            feeder: Some(tx),
            feeder_thread: Some(feeder_thread),
            ciede_table: CiedeTable::Auto,
            graphs: true,
            scratch_sets: DEFAULT_SCRATCH_SETS,
            host_sums: false,
        })
    }

    /// Give each geometry `n` copies of the metrics' scratch (1 to [`MAX_SCRATCH_SETS`]; the
    /// default is [`DEFAULT_SCRATCH_SETS`]), from the next geometry set up. The same scores
    /// either way.
    pub fn set_scratch_sets(&mut self, n: usize) {
        let n = n.clamp(1, MAX_SCRATCH_SETS);
        if self.scratch_sets != n {
            self.scratch_sets = n;
            self.drop_frame();
        }
    }

    /// The current geometry's scratch copies (0 before the first frame).
    pub fn scratch_sets(&self) -> usize {
        self.frame.as_ref().map_or(0, |f| f.plan.scratch_sets)
    }

    /// Launch the kernels as captured graphs (the default) or one by one (from the next
    /// geometry set up; also the fallback where the driver cannot capture them). Either way the same kernels with the same
    /// arguments in the same order on each stream.
    pub fn set_graphs(&mut self, on: bool) {
        if self.graphs != on {
            self.graphs = on;
            self.drop_frame();
        }
    }

    /// Whether the current geometry's frames are launched as graphs (`false` before the
    /// first frame, with graphs off, or where the driver could not capture them). A diagnostic:
    /// it waits for the frames in flight (their ring buffers).
    pub fn uses_graphs(&self) -> bool {
        self.frame.as_ref().is_some_and(|f| {
            f.readbacks.iter().all(|rb| {
                rb.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .graphs
                    .is_some()
            })
        })
    }

    /// Use CIEDE2000's colour-conversion table as `table` says (from the next geometry set
    /// up; the default is [`CiedeTable::Auto`]).
    pub fn set_ciede_table(&mut self, table: CiedeTable) {
        if self.ciede_table != table {
            self.ciede_table = table;
            self.drop_frame();
        }
    }

    /// Add every SSIM, MS-SSIM and PSNR-HVS sum on the host from the terms, whatever the GPU's
    /// sums say (from the next geometry set up): a test hook for the path the GPU leaves to
    /// rare frames. The same scores either way.
    #[doc(hidden)]
    pub fn set_host_sums(&mut self, on: bool) {
        if self.host_sums != on {
            self.host_sums = on;
            self.drop_frame();
        }
    }

    /// Finish the frames pending (they read the current geometry's buffers: a frame's scores
    /// are in only after its readback completed), then free those buffers.
    fn drop_frame(&mut self) {
        while !self.pending.is_empty() {
            self.finish_oldest();
        }
        self.frame = None;
    }

    /// Make sure the buffers fit `geom` (reallocated only when the geometry changes).
    fn setup(&mut self, geom: CompanionGeometry) -> Result<()> {
        if self.frame.as_ref().is_some_and(|f| f.plan.geom == geom) {
            return Ok(());
        }
        self.drop_frame();
        let t0 = std::time::Instant::now();
        SETUP_NS[SetupStage::Geometries as usize]
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (dev, stream) = (&self.launcher.dev, &self.launcher.stream);
        let mut plan = CompanionPlan::with_ciede_table(geom, self.ciede_table);
        let alloc = |plan: &CompanionPlan| {
            let staged: usize = plan.staged.iter().flatten().map(|r| r.bytes).sum();
            let ring = ring_len(staged + plan.readback.bytes, plan.slot_stride());
            let arena = dev.alloc(plan.device_bytes(ring));
            (ring, staged, arena)
        };
        plan.scratch_sets = self.scratch_sets;
        let (mut ring, mut staged, mut arena) = alloc(&plan);
        if arena.is_err() && plan.scratch_sets > 1 {
            // No room for a second scratch set: one (the same scores, a frame at a time per
            // metric).
            plan.scratch_sets = 1;
            (ring, staged, arena) = alloc(&plan);
        }
        if arena.is_err() && !plan.setup.is_empty() {
            // No room for CIEDE2000's table: without it (the same scores, computed).
            plan = CompanionPlan::with_ciede_table(geom, CiedeTable::Off);
            (ring, staged, arena) = alloc(&plan);
        }
        let arena = arena?;
        // SAFETY: the arena holds exactly arena.bytes() bytes.
        unsafe { dev.memset_zero(arena.ptr(), arena.bytes(), stream) }?;
        plan.host_sums = self.host_sums;
        plan.check_geometry();
        for l in plan
            .setup
            .iter()
            .chain(&plan.prep)
            .chain(&plan.prep_luma)
            .chain(&plan.launches)
        {
            check_launch(l, plan.arena)?;
        }
        let base = arena.ptr();
        let t_tables = setup_add(SetupStage::Arena, t0);
        for (r, bytes) in &plan.tables {
            // SAFETY: the table region has exactly bytes.len() bytes in the arena; the copy
            // from pageable memory has read `bytes` when the call returns.
            unsafe { dev.upload(base + r.off as u64, &bytes[..], stream, "upload tables") }?;
        }
        // Tables the GPU fills, on the upload stream: before any frame's uploads, so before
        // its kernels.
        for l in &plan.setup {
            launch(&self.launcher, stream, &plan, base, 0, l)?;
        }
        // The arena's zeroing, the tables and the setup launches complete before any frame:
        // a frame's luma planes are written from VMAF's stream (widen_luma), which nothing else
        // orders after them.
        dev.sync_stream(stream)?;
        let t_ring = setup_add(SetupStage::Tables, t_tables);
        let readbacks = (0..ring)
            .map(|slot| {
                Ok(Arc::new(Mutex::new(RingBuf {
                    // Written by the host, read only by the GPU.
                    staging: None,
                    staging_bytes: staged,
                    readback: dev.alloc_host(plan.readback.bytes, false)?,
                    graphs: None,
                    // Blocking too: a scoring thread waits for it before it lets the
                    // caller's buffers go (direct uploads).
                    up: dev.blocking_event()?,
                    metric: METRICS.iter().map(|_| dev.event()).collect::<Result<_>>()?,
                    // The scoring thread waits for it: blocking, not spinning (a dozen
                    // frames' threads spinning took the cores the pipeline's threads need).
                    done: dev.blocking_event()?,
                    slot,
                })))
            })
            .collect::<Result<Vec<_>>>()?;
        let luma_widened = (0..ring)
            .map(|_| Ok(Arc::new(dev.event()?)))
            .collect::<Result<Vec<_>>>()?;
        let t_graphs = setup_add(SetupStage::Ring, t_ring);
        if self.graphs {
            let captured: Result<Option<Vec<SlotGraphs<D>>>> = readbacks
                .iter()
                .map(|rb| {
                    let slot = rb.lock().unwrap_or_else(|e| e.into_inner()).slot;
                    capture_slot(&self.launcher, &plan, base, slot)
                })
                .collect();
            // Without graphs (a driver that cannot capture) the launches go one by one: the
            // same work.
            // A device without graphs (HIP) answers None.
            if let Ok(Some(graphs)) = captured {
                for (rb, g) in readbacks.iter().zip(graphs) {
                    rb.lock().unwrap_or_else(|e| e.into_inner()).graphs = Some(g);
                }
            }
        }
        setup_add(SetupStage::Graphs, t_graphs);
        self.frame = Some(RingState {
            plan: Arc::new(plan),
            _arena: arena,
            base,
            readbacks,
            luma_widened,
            next: 0,
        });
        Ok(())
    }

    /// The companion metrics `companions` of `job`, computed on the GPU (synchronous; whatever
    /// `job.features` says). Equal to [`crate::backend::compute_companions_cpu`], CIEDE2000
    /// within its documented bound.
    pub fn compute(&mut self, companions: &Companions, job: &FrameJob) -> Result<CompanionScores> {
        let t = self.submit(companions, job)?;
        self.take(t)
    }

    /// Queue the companion metrics `companions` of `job`; [`GpuCompanions::take`] with the
    /// ticket returned gives the scores. Waits only when every ring buffer is pending (for the
    /// oldest).
    pub fn submit(&mut self, companions: &Companions, job: &FrameJob) -> Result<u64> {
        self.submit_with(companions, job, None, None)
    }

    /// [`GpuCompanions::submit`] for a job whose planes are in the caller's memory (`host`; the
    /// job's carry only the geometry): they are uploaded from there (copied into staging, or
    /// straight from pinned memory), and the caller's buffers are let go once uploaded.
    pub fn submit_host(
        &mut self,
        companions: &Companions,
        job: &FrameJob,
        host: &HostFrame,
    ) -> Result<u64> {
        self.submit_with(companions, job, Some(host), None)
    }

    /// [`GpuCompanions::submit`] or [`GpuCompanions::submit_host`] (with `host`) of a frame
    /// whose luma planes VMAF has uploaded already (`luma`): 8-bit planes are widened from
    /// there and deeper ones copied instead of uploaded again (planes of another size are
    /// uploaded as usual).
    pub fn submit_sharing_luma(
        &mut self,
        companions: &Companions,
        job: &FrameJob,
        host: Option<&HostFrame>,
        luma: SlotLuma<'_, D>,
    ) -> Result<u64> {
        self.submit_with(companions, job, host, Some(luma))
    }

    fn submit_with(
        &mut self,
        companions: &Companions,
        job: &FrameJob,
        host: Option<&HostFrame>,
        luma: Option<SlotLuma<'_, D>>,
    ) -> Result<u64> {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        if !companions.any() {
            self.finished
                .push_back((ticket, Ok(CompanionScores::default())));
            return Ok(ticket);
        }
        let geom = match host {
            Some(h) => CompanionGeometry::of_host(companions, job, h)?,
            None => CompanionGeometry::of(companions, job)?,
        };
        self.launcher.dev.bind()?;
        self.setup(geom)?;
        let mut job = job.clone();
        // 2-byte luma: copied from VMAF's copy on the GPU instead of uploaded again (P010: VMAF's
        // copy holds it shifted, staging would shift it again; every 10-bit format: half the
        // PCIe traffic, which limits the lighter metric sets).
        let copy = job.reference.bpc > 8;
        let host = match host {
            // A plan that sums something from the planes on the host: give it compact copies.
            Some(h)
                if !self
                    .frame
                    .as_ref()
                    .expect("set up")
                    .plan
                    .reads_host_planes() =>
            {
                job = h.materialize(job);
                None
            }
            h => h.cloned(),
        };
        if self.pending.len() >= self.ring_len() {
            self.finish_oldest();
        }
        let f = self.frame.as_mut().expect("set up");
        let ring = f.next;
        f.next = (ring + 1) % f.readbacks.len();
        let luma = match luma {
            // The luma planes VMAF uploaded, from VMAF's copy: 8-bit planes widened, deeper ones
            // copied (MSB-aligned ones, P010, as VMAF's kernel shifted them); uploaded again
            // where widen_luma cannot take them.
            Some(l) => widen_luma(&self.launcher, f, ring, &l, copy)?,
            None => None,
        };
        let outcome = Arc::new(FrameOutcome::default());
        let item = Feed {
            submitted: std::time::Instant::now(),
            job,
            host,
            plan: Arc::clone(&f.plan),
            base: f.base,
            rb: Arc::clone(&f.readbacks[ring]),
            outcome: Arc::clone(&outcome),
            luma,
        };
        let sent = self.feeder.as_ref().is_some_and(|tx| tx.send(item).is_ok());
        if !sent {
            return Err(err::<D>("the feeder thread has stopped"));
        }
        self.pending.push_back(PendingScores { ticket, outcome });
        Ok(ticket)
    }

    /// The scores of the frame `ticket` (from [`GpuCompanions::submit`]), waiting for them;
    /// tickets are taken in submission order.
    pub fn take(&mut self, ticket: u64) -> Result<CompanionScores> {
        loop {
            if let Some(i) = self.finished.iter().position(|(t, _)| *t == ticket) {
                let (_, r) = self.finished.remove(i).expect("found just above");
                return r;
            }
            if self.pending.is_empty() {
                return Err(err::<D>(format!("no frame with ticket {ticket}")));
            }
            self.finish_oldest();
        }
    }

    /// How many frames can be pending at once for the current geometry ([`ring_len`];
    /// [`MIN_RING`] before the first frame).
    pub fn ring_len(&self) -> usize {
        self.frame.as_ref().map_or(MIN_RING, |f| f.readbacks.len())
    }

    /// Whether [`GpuCompanions::take`] of `ticket` would return without waiting.
    pub fn is_ready(&self, ticket: u64) -> bool {
        self.finished.iter().any(|(t, _)| *t == ticket)
            || self
                .pending
                .iter()
                .any(|p| p.ticket == ticket && p.outcome.is_set())
    }

    /// Forget every pending frame (a reset): waits for them, drops the results.
    pub fn clear(&mut self) {
        while !self.pending.is_empty() {
            self.finish_oldest();
        }
        let _ = self.launcher.dev.sync_device();
        self.finished.clear();
    }

    /// Wait for the oldest pending frame's scores (kept in `finished` until taken).
    fn finish_oldest(&mut self) {
        let Some(p) = self.pending.pop_front() else {
            return;
        };
        let (r, set_at) = p.outcome.wait();
        feeder_add(Stage::ToOwner, set_at);
        self.finished.push_back((p.ticket, r));
    }
}
