//! [`Device`] over cudarc: the CUDA backend's context, kernels, memory, streams and events.

use std::sync::Arc;

use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaStream, LaunchConfig, PushKernelArg,
    result,
};

use super::launcher;
use super::pinned::cuda_error as be;
use super::pinned::{DevBuf, Pinned, copy_device_2d, upload_2d, uploads_directly};
use crate::backend::gpu::device::{ArgValue, Device, DeviceMem, HostMem};
use crate::backend::gpu::launch;
use crate::backend::gpu::pipeline::DeviceInfo;
use crate::backend::gpu::plan::{self, VmafKernel};
use crate::backend::{DevicePlane, HostPlane};
use crate::error::{Error, Result};

/// One CUDA device's context (bound to the worker thread) and the VMAF kernels loaded in it.
#[derive(Clone)]
pub struct CudaDevice {
    pub(crate) ctx: Arc<CudaContext>,
    funcs: Vec<CudaFunction>,
}

/// The companion kernels loaded in a context.
pub struct CudaModule {
    funcs: Vec<CudaFunction>,
}

/// An instantiated CUDA graph: a fixed series of launches queued with one call (on the stream
/// it was captured on).
pub struct CudaGraphExec(CudaGraph);

// SAFETY: a CUgraphExec is a driver handle, usable from any thread with its context current
// (CudaGraph::launch binds it); the driver API is thread-safe, and the ring buffer that holds
// the graph is used by one thread at a time (its lock).
unsafe impl Send for CudaGraphExec {}

/// Queue `args` for `f` on `s` on a grid of `grid` blocks of `block` threads.
///
/// # Safety
/// `args` must match `f`'s C signature, every pointer be live device memory of the size the
/// kernel indexes for the sizes passed with it.
unsafe fn launch_function(
    f: &CudaFunction,
    name: &str,
    grid: (u32, u32),
    block: u32,
    args: &[ArgValue],
    s: &Arc<CudaStream>,
) -> Result<()> {
    let mut b = s.launch_builder(f);
    for v in args {
        match v {
            ArgValue::Ptr(p) => b.arg(p),
            ArgValue::Vif(x) => b.arg(x),
            ArgValue::Adm(x) => b.arg(x),
            ArgValue::Motion(x) => b.arg(x),
            ArgValue::Range(x) => b.arg(x),
            ArgValue::Shift(x) => b.arg(x),
            ArgValue::I32(x) => b.arg(x),
            ArgValue::F32(x) => b.arg(x),
        };
    }
    let cfg = LaunchConfig {
        grid_dim: (grid.0, grid.1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the caller's contract: the arguments match the kernel's signature and every
    // pointer is live memory of the sizes the kernel indexes.
    unsafe { b.launch(cfg) }.map_err(be(name))?;
    Ok(())
}

impl CudaDevice {
    /// Open device `device_id`: create the context, bind it to this thread, compile (once per
    /// process) and load the kernels.
    pub(crate) fn open(device_id: u32) -> Result<(CudaDevice, DeviceInfo)> {
        let n = CudaContext::device_count().map_err(be("cuDeviceGetCount"))?;
        if device_id as i64 >= n as i64 {
            return Err(Error::Backend(format!(
                "CUDA: device {device_id} requested, {n} present"
            )));
        }
        let ctx = CudaContext::new(device_id as usize).map_err(be("cuCtxCreate"))?;
        // Dependencies between streams are explicit (events); cudarc's per-argument event
        // tracking would only add work to every launch.
        // SAFETY: called before any allocation or stream of this context exists.
        unsafe { ctx.disable_event_tracking() };
        Self::of_context(ctx)
    }

    /// The device of context `ctx`, bound to this thread, with the kernels loaded.
    pub(crate) fn of_context(ctx: Arc<CudaContext>) -> Result<(CudaDevice, DeviceInfo)> {
        ctx.bind_to_thread().map_err(be("bind context"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| Error::Backend(e.to_string()))?;
        let arch = launcher::arch_name(major, minor);
        let ptx = launcher::ptx(launcher::Text::Vmaf, arch)?;
        let module = ctx.load_module(ptx).map_err(be("cuModuleLoadData"))?;
        let funcs = VmafKernel::ALL
            .iter()
            .map(|k| module.load_function(k.name()).map_err(be(k.name())))
            .collect::<Result<Vec<_>>>()?;
        let info = DeviceInfo {
            name: ctx.name().unwrap_or_else(|_| "CUDA device".into()),
            arch: arch.into(),
        };
        Ok((CudaDevice { ctx, funcs }, info))
    }
}

impl DeviceMem for DevBuf {
    fn ptr(&self) -> u64 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
}

impl HostMem for Pinned {
    fn slice(&self, off: usize, len: usize) -> &[u8] {
        Pinned::slice(self, off, len)
    }
    fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        Pinned::slice_mut(self, off, len)
    }
}

impl Device for CudaDevice {
    const NAME: &'static str = "CUDA";
    const BACKEND: &'static str = "cuda";
    const UPLOADS_PINNED_MEMORY: bool = true;
    const READS_DEVICE_PLANES: bool = true;
    type Buf = DevBuf;
    type Host = Pinned;
    type Stream = Arc<CudaStream>;
    type Event = CudaEvent;
    type Module = CudaModule;
    type Graph = CudaGraphExec;

    fn alloc(&self, bytes: usize) -> Result<DevBuf> {
        DevBuf::new(bytes)
    }

    fn alloc_host(&self, bytes: usize, write_combined: bool) -> Result<Pinned> {
        Pinned::new(bytes, write_combined)
    }

    fn stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx.new_stream().map_err(be("cuStreamCreate"))
    }

    fn event(&self) -> Result<CudaEvent> {
        self.ctx.new_event(None).map_err(be("cuEventCreate"))
    }

    fn blocking_event(&self) -> Result<CudaEvent> {
        self.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_BLOCKING_SYNC))
            .map_err(be("cuEventCreate"))
    }

    fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(be("bind context"))
    }

    fn load_companions(&self) -> Result<CudaModule> {
        let (major, minor) = self
            .ctx
            .compute_capability()
            .map_err(be("compute capability"))?;
        let arch = launcher::arch_name(major, minor);
        let ptx = launcher::ptx(launcher::Text::Companions, arch)?;
        let module = self.ctx.load_module(ptx).map_err(be("cuModuleLoadData"))?;
        let funcs = launch::Kernel::ALL
            .iter()
            .map(|k| module.load_function(k.name()).map_err(be(k.name())))
            .collect::<Result<Vec<_>>>()?;
        Ok(CudaModule { funcs })
    }

    unsafe fn launch_companion(
        &self,
        m: &CudaModule,
        k: launch::Kernel,
        grid: (u32, u32),
        args: &[ArgValue],
        s: &Arc<CudaStream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract (Device::launch_companion).
        unsafe { launch_function(&m.funcs[k as usize], k.name(), grid, launch::BLOCK, args, s) }
    }

    unsafe fn copy_on_device(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        s: &Arc<CudaStream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, s.cu_stream()) }
            .map_err(be("cuMemcpyDtoDAsync"))
    }

    unsafe fn download_now(&self, dst: &mut [u8], src: u64) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { result::memcpy_dtoh_sync(dst, src) }.map_err(be("read back terms"))
    }

    fn sync_device(&self) -> Result<()> {
        self.ctx.synchronize().map_err(be("cuCtxSynchronize"))
    }

    fn capture(
        &self,
        s: &Arc<CudaStream>,
        queue: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<CudaGraphExec>> {
        s.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
            .map_err(be("cuStreamBeginCapture"))?;
        let queued = queue();
        // (The graphs allocate nothing: the flag, the one every CUDA version has, changes
        // nothing.)
        let flags = CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
        let ended = s.end_capture(flags).map_err(be("cuStreamEndCapture"));
        queued?;
        match ended? {
            Some(g) => Ok(Some(CudaGraphExec(g))),
            None => Err(Error::Backend("CUDA: an empty graph".into())),
        }
    }

    fn launch_graph(&self, g: &CudaGraphExec) -> Result<()> {
        g.0.launch().map_err(be("cuGraphLaunch"))
    }

    unsafe fn upload(&self, dst: u64, src: &[u8], s: &Arc<CudaStream>, what: &str) -> Result<()> {
        // SAFETY: the caller's contract (dst holds src.len() bytes, src outlives the copy).
        unsafe { result::memcpy_htod_async(dst, src, s.cu_stream()) }.map_err(be(what))
    }

    fn uploads_directly(&self, p: &HostPlane) -> bool {
        uploads_directly(p)
    }

    unsafe fn upload_plane(&self, p: &HostPlane, dst: u64, s: &Arc<CudaStream>) -> Result<()> {
        // SAFETY: the caller's contract, upload_2d's.
        unsafe { upload_2d(p, dst, s.cu_stream()) }
    }

    unsafe fn copy_device_plane(
        &self,
        p: &DevicePlane,
        dst: u64,
        s: &Arc<CudaStream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, copy_device_2d's (the plane is in this context: the
        // primary one, DevicePlane::new's contract).
        unsafe { copy_device_2d(p, dst, s.cu_stream()) }
    }

    unsafe fn download(&self, dst: &mut [u8], src: u64, s: &Arc<CudaStream>) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { result::memcpy_dtoh_async(dst, src, s.cu_stream()) }
            .map_err(be("read back results"))
    }

    unsafe fn memset_zero(&self, dst: u64, bytes: usize, s: &Arc<CudaStream>) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { result::memset_d8_async(dst, 0, bytes, s.cu_stream()) }
            .map_err(be("cuMemsetD8Async"))
    }

    unsafe fn launch(
        &self,
        k: VmafKernel,
        grid: (u32, u32),
        args: &[ArgValue],
        s: &Arc<CudaStream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract (Device::launch): the arguments match the kernel's
        // signature and every pointer is live memory of the sizes the kernel indexes.
        unsafe {
            launch_function(
                &self.funcs[k as usize],
                k.name(),
                grid,
                plan::BLOCK,
                args,
                s,
            )
        }
    }

    fn record(&self, e: &CudaEvent, s: &Arc<CudaStream>) -> Result<()> {
        e.record(s).map_err(be("cuEventRecord"))
    }

    fn wait(&self, s: &Arc<CudaStream>, e: &CudaEvent) -> Result<()> {
        s.wait(e).map_err(be("cuStreamWaitEvent"))
    }

    fn is_done(&self, e: &CudaEvent) -> bool {
        e.is_complete()
    }

    fn sync_event(&self, e: &CudaEvent) -> Result<()> {
        e.synchronize().map_err(be("cuEventSynchronize"))
    }

    fn sync_stream(&self, s: &Arc<CudaStream>) -> Result<()> {
        s.synchronize().map_err(be("cuStreamSynchronize"))
    }
}
