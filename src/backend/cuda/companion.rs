//! The companion metrics on an NVIDIA GPU: the backend-neutral executor
//! ([`crate::backend::gpu::companion`]) on a [`CudaDevice`], which captures each ring buffer's
//! launches as CUDA graphs; the companion kernel text's NVRTC entry point and the per-metric
//! kernel timing of the benchmarks.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use super::device::CudaDevice;
use super::pinned::cuda_error as be;
use crate::backend::gpu::companion::launch;
pub use crate::backend::gpu::companion::{
    DEFAULT_SCRATCH_SETS, GpuCompanions, MAX_RING, MAX_SCRATCH_SETS, MIN_RING, RING_DEVICE_BYTES,
    RING_PINNED_BYTES, ring_len,
};
use crate::backend::{Companions, FrameJob};
use crate::error::Result;

/// The companion metrics on one CUDA context.
pub type CompanionGpu = GpuCompanions<CudaDevice>;

/// Compile the companion kernel text with NVRTC for `arch` (e.g. "compute_90"), with the
/// options of the backend's kernels ([`super::launcher::compile_source`]). Needs only libnvrtc.
pub fn compile_ptx(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    super::launcher::compile_text(super::launcher::Text::Companions, arch)
}

impl GpuCompanions<CudaDevice> {
    /// The companion metrics on `ctx` (bound to the calling thread here): its kernels loaded,
    /// the streams created, the feeder thread started.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<CompanionGpu> {
        let (dev, _) = CudaDevice::of_context(Arc::clone(ctx))?;
        GpuCompanions::open(&dev)
    }

    /// GPU milliseconds per frame of each metric's kernels (events around each metric's
    /// launches, `reps` frames, after one normal run of `job` with `companions`). Uploads and
    /// the readback are not included.
    pub fn time_metrics(
        &mut self,
        companions: &Companions,
        job: &FrameJob,
        reps: usize,
    ) -> Result<Vec<(&'static str, f64)>> {
        self.compute(companions, job)?;
        let f = self.frame.as_ref().expect("set up");
        let mut metrics: Vec<&'static str> = Vec::new();
        for l in &f.plan.launches {
            if !metrics.contains(&l.metric) {
                metrics.push(l.metric);
            }
        }
        let mut out = Vec::new();
        for m in metrics {
            // Timing needs events created without CU_EVENT_DISABLE_TIMING (cudarc's default).
            let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            let ctx = &self.launcher.dev.ctx;
            let start = ctx.new_event(timed).map_err(be("cuEventCreate"))?;
            let end = ctx.new_event(timed).map_err(be("cuEventCreate"))?;
            start
                .record(&self.launcher.stream)
                .map_err(be("cuEventRecord"))?;
            for _ in 0..reps.max(1) {
                for l in f.plan.launches.iter().filter(|l| l.metric == m) {
                    launch(&self.launcher, &self.launcher.stream, &f.plan, f.base, 0, l)?;
                }
            }
            end.record(&self.launcher.stream)
                .map_err(be("cuEventRecord"))?;
            self.launcher
                .stream
                .synchronize()
                .map_err(be("cuStreamSynchronize"))?;
            let ms = start.elapsed_ms(&end).map_err(be("cuEventElapsedTime"))? as f64;
            out.push((m, ms / reps.max(1) as f64));
        }
        Ok(out)
    }

    /// GPU milliseconds of each launch of the frame plan (events around each launch, one
    /// stream, `reps` times each, after one normal run of `job` with `companions`), in plan
    /// order, with the kernel's name: where a metric's time goes. Uploads and the readback are
    /// not included.
    pub fn time_launches(
        &mut self,
        companions: &Companions,
        job: &FrameJob,
        reps: usize,
    ) -> Result<Vec<(&'static str, &'static str, f64)>> {
        self.compute(companions, job)?;
        let f = self.frame.as_ref().expect("set up");
        let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ctx = &self.launcher.dev.ctx;
        let start = ctx.new_event(timed).map_err(be("cuEventCreate"))?;
        let end = ctx.new_event(timed).map_err(be("cuEventCreate"))?;
        let s = &self.launcher.stream;
        let mut out = Vec::new();
        for l in &f.plan.launches {
            start.record(s).map_err(be("cuEventRecord"))?;
            for _ in 0..reps.max(1) {
                launch(&self.launcher, s, &f.plan, f.base, 0, l)?;
            }
            end.record(s).map_err(be("cuEventRecord"))?;
            s.synchronize().map_err(be("cuStreamSynchronize"))?;
            let ms = start.elapsed_ms(&end).map_err(be("cuEventElapsedTime"))? as f64;
            out.push((l.metric, l.kernel.name(), ms / reps.max(1) as f64));
        }
        Ok(out)
    }
}
