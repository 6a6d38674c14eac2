//! The CUDA backend: VIF, ADM and motion accumulators on an NVIDIA GPU, equal to the CPU
//! reference's bit for bit, and the companion metrics on the GPU.
//!
//! - The driver library is probed (dlopen) before any cudarc call, so a machine without CUDA gets
//!   an [`Error::Backend`] instead of cudarc's panic.
//! - The kernels (kernels/*.cu, one text for CUDA and HIP) are compiled once per process with
//!   NVRTC (fmad off, IEEE division and square root) and loaded once per backend.
//! - The slot pipeline (frames in flight, in-order results, motion from the previous slot, host
//!   planes, the GPU range check) is the backend-neutral one of
//!   [`crate::backend::gpu::pipeline`], over [`device::CudaDevice`]; host planes in pinned
//!   memory (the element's pool, [`pinned`]) are uploaded straight from the caller's buffer
//!   with one cuMemcpy2DAsync.
//! - Companion metrics ([`companion`]) run on their own streams; each frame's ordered host sums
//!   run on a thread of their own, so up to [`companion::MAX_RING`] frames can be summing at
//!   once (the engine keeps as many in flight: [`Backend::max_in_flight`]).

#[doc(hidden)]
pub mod companion;
pub mod device;
#[doc(hidden)]
pub mod launcher;
pub mod pinned;

use cudarc::driver::sys;

use self::device::CudaDevice;
use self::pinned::cuda_error as be;
#[cfg(doc)]
use super::Backend;
use super::FrameJob;
pub use super::gpu::pipeline::SLOTS;
use super::gpu::pipeline::{GpuBackend, GpuWorker};
use super::gpu::plan;
pub use super::stats::KernelTimes;
use super::stats::{CompanionTimes, WorkerTimes};
use crate::error::{Error, Result};

type Worker = GpuWorker<CudaDevice>;

/// Why CUDA cannot be used here, or `None` if the driver and NVRTC libraries can be loaded.
/// Touches nothing but `dlopen`.
pub fn unavailable_reason() -> Option<String> {
    // SAFETY: is_culib_present only tries to dlopen the library names; it calls nothing in them.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("the NVIDIA driver library (libcuda.so) is not installed".into());
    }
    // SAFETY: as above, for libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Some(
            "NVRTC (libnvrtc.so, CUDA 13) is not installed or not on the library path".into(),
        );
    }
    None
}

/// The CUDA backend: the GPU slot pipeline on a CUDA device. See the module documentation.
pub type CudaBackend = GpuBackend<CudaDevice>;

impl GpuBackend<CudaDevice> {
    /// Open CUDA device `device_id`: probe the libraries, create the context, compile (once per
    /// process) and load the kernels, upload the tables.
    pub fn new(device_id: u32) -> Result<CudaBackend> {
        if let Some(why) = unavailable_reason() {
            return Err(Error::Backend(format!("CUDA unavailable: {why}")));
        }
        GpuBackend::start("vmafgpu-cuda", move || CudaDevice::open(device_id))
    }

    /// GPU time of `job`'s kernels (see [`KernelTimes`]), with the configuration given last
    /// ([`Backend::configure`]). Uploads, readbacks and host work are not included. Needs
    /// nothing in flight. For benchmarks.
    pub fn time_kernels(&mut self, job: FrameJob, reps: usize) -> Result<KernelTimes> {
        if self.in_flight() != 0 {
            return Err(Error::State("time_kernels with frames in flight".into()));
        }
        let reps = reps.max(1);
        self.on_worker(move |w: &mut Worker| {
            let host = std::mem::take(&mut w.host);
            let r = time_kernels(w, &job, reps).map(|(one, many)| {
                let per_kernel = std::mem::take(&mut w.kernel_times);
                KernelTimes::new((one, many), per_kernel, &host, &w.companion_host)
            });
            w.host = WorkerTimes::default();
            w.companion_host = CompanionTimes::default();
            r
        })
    }
}

/// GPU time of one frame's kernels (after one normal submission of `job`): milliseconds per
/// frame with `reps` frames back to back on one stream, and with them spread over the
/// slots' streams (what frames in flight give). Uploads and readbacks are not included.
fn time_kernels(w: &mut Worker, job: &FrameJob, reps: usize) -> Result<(f64, f64)> {
    if !w.is_idle() {
        return Err(Error::State("time_kernels with frames in flight".into()));
    }
    // Once through every slot, so that each holds the frame.
    let mut s = 0;
    for _ in 0..SLOTS {
        s = w.submit(job, None, false)?;
        w.result_of(s)?;
    }
    let plan = w.plan.take().expect("plan");
    let run = |w: &Worker, slots: &[usize]| -> Result<f64> {
        for sl in &w.slots {
            sl.stream.synchronize().map_err(be("synchronize"))?;
        }
        let t0 = std::time::Instant::now();
        for i in 0..reps {
            let k = slots[i % slots.len()];
            if job.prev_ref.is_some() {
                w.launch(k, &plan.motion)?;
            }
            for l in &plan.launches {
                w.launch(k, l)?;
            }
        }
        for sl in &w.slots {
            sl.stream.synchronize().map_err(be("synchronize"))?;
        }
        Ok(t0.elapsed().as_secs_f64() * 1e3 / reps as f64)
    };
    // Per-kernel times, one stream, events around each launch.
    let mut per_kernel: Vec<(&'static str, f64)> = Vec::new();
    {
        let st = &w.slots[s].stream;
        let ev = || {
            w.dev
                .ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        };
        let reps_k = 10.min(reps).max(1);
        let mut launches: Vec<&plan::VmafLaunch> = Vec::new();
        if job.prev_ref.is_some() {
            launches.push(&plan.motion);
        }
        launches.extend(plan.launches.iter());
        for _ in 0..reps_k {
            let mut evs = vec![ev().map_err(be("cuEventCreate"))?];
            evs[0].record(st).map_err(be("cuEventRecord"))?;
            for l in &launches {
                w.launch(s, l)?;
                let e = ev().map_err(be("cuEventCreate"))?;
                e.record(st).map_err(be("cuEventRecord"))?;
                evs.push(e);
            }
            st.synchronize().map_err(be("synchronize"))?;
            for (i, l) in launches.iter().enumerate() {
                let ms = evs[i]
                    .elapsed_ms(&evs[i + 1])
                    .map_err(be("cuEventElapsedTime"))? as f64;
                let name = l.kernel.name();
                match per_kernel.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, t)) => *t += ms / reps_k as f64,
                    None => per_kernel.push((name, ms / reps_k as f64)),
                }
            }
        }
    }
    w.kernel_times = per_kernel;
    let one = run(w, &[s]);
    let all: Vec<usize> = (0..SLOTS).collect();
    let many = run(w, &all);
    w.plan = Some(plan);
    Ok((one?, many?))
}
