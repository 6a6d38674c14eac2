//! [`Device`] over cudarc: the CUDA backend's context, kernels, memory, streams and events.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg, result,
};

use super::companion::{CompanionGpu, DeviceLuma};
use super::launcher;
use super::pinned::cuda_error as be;
use super::pinned::{DevBuf, Pinned, copy_device_2d, upload_2d, uploads_directly};
use crate::backend::gpu::device::{ArgValue, Device, DeviceMem, HostMem};
use crate::backend::gpu::pipeline::{CompanionExec, DeviceInfo, SlotLuma};
use crate::backend::gpu::plan::{self, Kernel};
use crate::backend::{CompanionScores, DevicePlane, FrameJob, HostFrame, HostPlane};
use crate::error::{Error, Result};

/// One CUDA device's context (bound to the worker thread) and the VMAF kernels loaded in it.
pub struct CudaDevice {
    pub(crate) ctx: Arc<CudaContext>,
    funcs: Vec<CudaFunction>,
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
        ctx.bind_to_thread().map_err(be("bind context"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| Error::Backend(e.to_string()))?;
        let arch = launcher::arch_name(major, minor);
        let ptx = launcher::ptx(launcher::Text::Vmaf, arch)?;
        let module = ctx.load_module(ptx).map_err(be("cuModuleLoadData"))?;
        let funcs = Kernel::ALL
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
    type Companions = CompanionGpu;

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
        k: Kernel,
        grid: (u32, u32),
        args: &[ArgValue],
        s: &Arc<CudaStream>,
    ) -> Result<()> {
        let mut b = s.launch_builder(&self.funcs[k as usize]);
        for v in args {
            match v {
                ArgValue::Ptr(p) => b.arg(p),
                ArgValue::Vif(x) => b.arg(x),
                ArgValue::Adm(x) => b.arg(x),
                ArgValue::Motion(x) => b.arg(x),
                ArgValue::Range(x) => b.arg(x),
                ArgValue::Shift(x) => b.arg(x),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (plan::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller's contract (Device::launch): the arguments match the kernel's
        // signature and every pointer is live memory of the sizes the kernel indexes.
        unsafe { b.launch(cfg) }.map_err(be(k.name()))?;
        Ok(())
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

/// The companion metrics on the GPU ([`CompanionGpu`]), sharing VMAF's luma planes.
impl CompanionExec<CudaDevice> for CompanionGpu {
    const ON_DEVICE: bool = true;

    fn open(dev: &CudaDevice) -> Result<Self> {
        CompanionGpu::new(&dev.ctx)
    }

    fn submit(
        &mut self,
        job: &FrameJob,
        host: Option<&HostFrame>,
        luma: SlotLuma<'_, CudaDevice>,
    ) -> Result<u64> {
        // The luma planes were just uploaded into the slot's buffers (compact rows, bytes at
        // 8 bits, u16 above; shifted where MSB-aligned): the companions widen 8-bit ones from
        // there and copy deeper ones.
        let luma = DeviceLuma {
            reference: luma.reference,
            distorted: luma.distorted,
            bytes: luma.bytes,
            stream: luma.stream,
        };
        self.submit_sharing_luma(job, host, luma)
    }

    fn ring_len(&self) -> usize {
        CompanionGpu::ring_len(self)
    }

    fn is_ready(&self, ticket: u64) -> bool {
        CompanionGpu::is_ready(self, ticket)
    }

    fn take(&mut self, ticket: u64) -> Result<CompanionScores> {
        CompanionGpu::take(self, ticket)
    }

    fn clear(&mut self) {
        CompanionGpu::clear(self)
    }
}
