//! Benchmark counters and timers: what the benchmarks (examples/bench_element.rs,
//! examples/bench_gpu.rs) and a few tests read to say where the time goes. Relaxed atomics
//! and clock reads only; nothing here changes what is computed.

/// Sums the GPU did not finish (SSIM or MS-SSIM images whose bound did not decide, PSNR-HVS
/// planes whose GPU sum gave up), so that their terms were read back and added on the host,
/// since the process started: a diagnostic for tests and benchmarks.
pub static HOST_SUMMED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where a frame's time goes, since the process started (nanoseconds; a diagnostic for
/// benchmarks, see [`feeder_times`]), indexed by [`Stage`].
pub(crate) static FEEDER_NS: [std::sync::atomic::AtomicU64; 9] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 9];

/// Where the setup of a geometry's buffers goes (a diagnostic for benchmarks, see
/// [`setup_ms`]): geometries set up, then nanoseconds of each [`SetupStage`].
pub(crate) static SETUP_NS: [std::sync::atomic::AtomicU64; 5] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 5];

/// The entries of [`setup_ms`]' result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupStage {
    /// Geometries set up (a count).
    Geometries = 0,
    /// The device arena (planes, scratch, results of every ring buffer; zeroed).
    Arena,
    /// The tables' uploads and the launches that fill tables (queued, not waited for).
    Tables,
    /// The ring buffers: page-locked readback, events (their staging is page-locked when a
    /// frame first needs it).
    Ring,
    /// Capturing each ring buffer's launches as graphs.
    Graphs,
}

/// Milliseconds spent in each [`SetupStage`] since the process started (`Geometries`: the
/// count), on the thread that submits frames: the time the first frame of a geometry waits.
pub fn setup_ms() -> [f64; 5] {
    std::array::from_fn(|i| {
        let v = SETUP_NS[i].load(std::sync::atomic::Ordering::Relaxed) as f64;
        if i == 0 { v } else { v / 1e6 }
    })
}

pub fn setup_add(stage: SetupStage, since: std::time::Instant) -> std::time::Instant {
    add_elapsed(&SETUP_NS[stage as usize], since)
}

/// The entries of [`feeder_times`]' result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Frames fed (a count).
    Frames = 0,
    /// The feeder waiting for the frame's ring buffer (held by a frame whose scores are not
    /// finished: the GPU or the scoring threads are behind).
    RingWait,
    /// The feeder staging the planes into the ring buffer.
    Staging,
    /// The feeder queueing the uploads, kernels and readback.
    Queueing,
    /// The feeder starting the frame's scoring thread.
    Spawn,
    /// From `submit` to the feeder taking the frame (the feeder busy with earlier frames).
    ToFeeder,
    /// From the end of queueing to the frame's readback done, as its scoring thread sees it
    /// (the GPU's share of the latency).
    Gpu,
    /// From the readback done to the scores set (the scoring thread's work).
    Scoring,
    /// From the scores set to the owner taking them (`take`).
    ToOwner,
}

/// Milliseconds per frame of each [`Stage`] since the process started, indexed by `Stage`
/// (`Stage::Frames`: the frame count).
pub fn feeder_times() -> [f64; 9] {
    per_frame_ms(feeder_ns())
}

/// The raw totals behind [`feeder_times`] (nanoseconds; `Stage::Frames`: the frame count).
pub fn feeder_ns() -> [u64; 9] {
    std::array::from_fn(|i| FEEDER_NS[i].load(std::sync::atomic::Ordering::Relaxed))
}

/// Totals from [`feeder_ns`] (or a difference of two) as milliseconds per frame.
pub fn per_frame_ms(t: [u64; 9]) -> [f64; 9] {
    let n = t[0].max(1) as f64;
    std::array::from_fn(|i| {
        if i == 0 {
            t[0] as f64
        } else {
            t[i] as f64 / 1e6 / n
        }
    })
}

pub fn feeder_add(stage: Stage, since: std::time::Instant) -> std::time::Instant {
    add_elapsed(&FEEDER_NS[stage as usize], since)
}

/// Add the time since `since` to `counter` (nanoseconds) and return now: the per-stage timing
/// counters that benchmarks read (engine::push_times, [`feeder_times`]).
pub(crate) fn add_elapsed(
    counter: &std::sync::atomic::AtomicU64,
    since: std::time::Instant,
) -> std::time::Instant {
    let now = std::time::Instant::now();
    let ns = u64::try_from(now.saturating_duration_since(since).as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
    now
}

/// The GPU worker thread's host time since the last `time_kernels` call (seconds).
#[cfg(any(feature = "cuda", feature = "hip"))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WorkerTimes {
    /// Frames submitted.
    pub(crate) frames: u64,
    /// Staging copies.
    pub(crate) stage: f64,
    /// Enqueueing uploads and launches.
    pub(crate) enqueue: f64,
    /// Waiting for results.
    pub(crate) wait: f64,
}

/// The companion metrics' share of the worker's host time (seconds): queueing them (uploads
/// from pageable planes), taking their scores (readback wait, host sums).
#[cfg(any(feature = "cuda", feature = "hip"))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CompanionTimes {
    pub(crate) submit: f64,
    pub(crate) take: f64,
}

/// GPU time of one frame's kernels, in milliseconds.
#[derive(Clone, Debug)]
pub struct KernelTimes {
    /// Per frame, frames back to back on one stream.
    pub serial_ms: f64,
    /// Per frame, frames spread over the in-flight slots' streams (throughput).
    pub overlapped_ms: f64,
    /// Per kernel (one stream, CUDA events around each launch).
    pub per_kernel_ms: Vec<(&'static str, f64)>,
    /// The worker thread's host time per frame over the frames submitted since the previous
    /// call: staging copies, enqueueing (uploads and launches), waiting for results.
    pub host_frames: u64,
    pub host_stage_ms: f64,
    pub host_enqueue_ms: f64,
    pub host_wait_ms: f64,
    /// The companion metrics' share of the worker's time per frame: queueing (uploads of
    /// pageable planes, launches) and taking the scores (readback wait, ordered host sums).
    pub host_companion_submit_ms: f64,
    pub host_companion_take_ms: f64,
}

#[cfg(feature = "cuda")]
impl KernelTimes {
    /// The figures of one `time_kernels` call: its (serial, overlapped) milliseconds, its
    /// per-kernel times, and the host times per frame of the frames submitted before it.
    pub(crate) fn new(
        (serial_ms, overlapped_ms): (f64, f64),
        per_kernel_ms: Vec<(&'static str, f64)>,
        host: &WorkerTimes,
        companion: &CompanionTimes,
    ) -> KernelTimes {
        let f = host.frames.max(1) as f64 * 1e-3;
        KernelTimes {
            serial_ms,
            overlapped_ms,
            per_kernel_ms,
            host_frames: host.frames,
            host_stage_ms: host.stage / f,
            host_enqueue_ms: host.enqueue / f,
            host_wait_ms: host.wait / f,
            host_companion_submit_ms: companion.submit / f,
            host_companion_take_ms: companion.take / f,
        }
    }
}
