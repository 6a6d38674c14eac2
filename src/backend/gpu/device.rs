//! The device trait: what the slot pipeline ([`super::pipeline`]) needs of a GPU runtime, about
//! ten calls (memory, copies, a memset, a launch by kernel, streams and events). CUDA
//! (`cuda/device.rs`, cudarc) and HIP (`hip/device.rs`, the dlopen'd runtime) implement it;
//! everything above it is written once. Used through generics: no dynamic dispatch per call.
//!
//! The companion metrics' executor ([`super::companion`]) uses a few calls more: the
//! companion kernel text's module, a device-to-device copy, a synchronous readback, a blocking
//! event, binding the device to its own threads, and graph capture where the runtime has it
//! (CUDA; a device without graphs answers `None` and the plan's launches go one by one).

use super::kernels;
use super::launch;
use super::plan::VmafKernel;
use crate::backend::{DevicePlane, HostPlane};
use crate::error::Result;

/// A device allocation: its address on the device and its size.
pub trait DeviceMem {
    /// The device address (an integer: CUDA's `CUdeviceptr`, HIP's `void *`).
    fn ptr(&self) -> u64;
    fn bytes(&self) -> usize;
}

/// Page-locked host memory: copies from and into it run by DMA, asynchronously.
pub trait HostMem: Send {
    /// `len` bytes at `off`. Panics out of bounds.
    fn slice(&self, off: usize, len: usize) -> &[u8];
    /// `len` bytes at `off`, to write. Panics out of bounds.
    fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8];
}

/// One kernel argument, resolved: a device address or a by-value argument struct (the
/// `#[repr(C)]` structs of [`kernels`], with layout tests).
#[derive(Clone, Copy, Debug)]
pub enum ArgValue {
    Ptr(u64),
    Vif(kernels::VifArgs),
    Adm(kernels::AdmArgs),
    Motion(kernels::MotionArgs),
    Range(kernels::RangeArgs),
    Shift(kernels::ShiftArgs),
    /// An `int` (the companion kernels' sizes).
    I32(i32),
    /// A `float`.
    F32(f32),
}

/// A GPU runtime with its device open and bound to the calling thread (the pipeline's worker,
/// which owns it): the kernels of [`VmafKernel::ALL`] loaded, the calls asynchronous on streams.
///
/// A device is cloned into the companion metrics' feeder thread and shared with their scoring
/// threads: its handles are usable from any thread once [`Device::bind`] made it current there.
pub trait Device: Clone + Send + Sync + Sized + 'static {
    /// "CUDA", "HIP": the scope of this backend's errors.
    const NAME: &'static str;
    /// The backend's short name ([`crate::backend::Backend::name`]): "cuda", "hip".
    const BACKEND: &'static str;
    /// Whether host planes in CUDA's page-locked memory (the element's pool) are uploaded from
    /// there ([`crate::backend::Backend::uploads_pinned_memory`]).
    const UPLOADS_PINNED_MEMORY: bool;
    /// Whether planes in device memory ([`DevicePlane`]: CUDA's primary context) are read
    /// ([`Device::copy_device_plane`]; [`crate::backend::Backend::accepts_device_planes`]).
    const READS_DEVICE_PLANES: bool = false;
    type Buf: DeviceMem + Send;
    type Host: HostMem;
    type Stream: Send + Sync;
    type Event: Send + Sync;
    /// The companion kernels ([`launch::Kernel::ALL`] of `gpu::companion_plan::SOURCE`), loaded.
    type Module: Send + Sync;
    /// A captured series of launches, queued again with one call ([`Device::capture`]).
    type Graph: Send;

    /// `bytes` of device memory, freed on drop.
    fn alloc(&self, bytes: usize) -> Result<Self::Buf>;
    /// `bytes` of zeroed page-locked host memory (write-combined: written by the host, read
    /// only by the device), freed on drop.
    fn alloc_host(&self, bytes: usize, write_combined: bool) -> Result<Self::Host>;
    fn stream(&self) -> Result<Self::Stream>;
    /// An event without timing.
    fn event(&self) -> Result<Self::Event>;
    /// An event without timing that a host thread waiting for it sleeps on instead of spinning.
    fn blocking_event(&self) -> Result<Self::Event>;
    /// Make this device current on the calling thread.
    fn bind(&self) -> Result<()>;
    /// Load the companion kernels (compiled once per process).
    fn load_companions(&self) -> Result<Self::Module>;

    /// Queue a copy of `src` to device address `dst` on `s` (`what` names it in errors).
    ///
    /// # Safety
    /// `dst` must hold `src.len()` bytes; `src` must stay valid and unwritten until the copy
    /// completed on `s` (page-locked memory is read when the copy runs).
    unsafe fn upload(&self, dst: u64, src: &[u8], s: &Self::Stream, what: &str) -> Result<()>;
    /// Whether a host plane can be uploaded from where it is ([`Device::upload_plane`]),
    /// without staging.
    fn uploads_directly(&self, p: &HostPlane) -> bool;
    /// Queue a copy of a host plane's rows into compact device rows at `dst`.
    ///
    /// # Safety
    /// `dst` must hold `p.row_bytes() * p.height()` bytes and the plane's bytes must stay
    /// valid until the copy completed on `s`; only for a plane [`Device::uploads_directly`].
    unsafe fn upload_plane(&self, p: &HostPlane, dst: u64, s: &Self::Stream) -> Result<()>;
    /// Queue a copy of a device plane's rows into compact device rows at `dst` on `s`. The
    /// default refuses (a device without [`Device::READS_DEVICE_PLANES`]).
    ///
    /// # Safety
    /// `dst` must hold `p.row_bytes() * p.height()` bytes; the plane's memory must stay valid
    /// and unwritten until the copy completed on `s` (the caller keeps `p`).
    unsafe fn copy_device_plane(&self, p: &DevicePlane, dst: u64, s: &Self::Stream) -> Result<()> {
        let _ = (p, dst, s);
        Err(crate::error::Error::Backend(format!(
            "{}: planes in device memory are not read on this device",
            Self::NAME
        )))
    }
    /// Queue a copy of `src.len()` bytes at device address `src` into `dst` on `s`.
    ///
    /// # Safety
    /// The device range must be live memory; `dst` must not be read before the copy completed.
    unsafe fn download(&self, dst: &mut [u8], src: u64, s: &Self::Stream) -> Result<()>;
    /// Queue the zeroing of `bytes` bytes at `dst` on `s`.
    ///
    /// # Safety
    /// `dst` must hold `bytes` bytes.
    unsafe fn memset_zero(&self, dst: u64, bytes: usize, s: &Self::Stream) -> Result<()>;
    /// Queue kernel `k` on a grid of `grid` blocks of [`super::plan::BLOCK`] threads.
    ///
    /// # Safety
    /// `args` must match the kernel's C signature (`plan::check_signature`), every pointer be
    /// live device memory of the size the kernel indexes for the sizes passed with it.
    unsafe fn launch(
        &self,
        k: VmafKernel,
        grid: (u32, u32),
        args: &[ArgValue],
        s: &Self::Stream,
    ) -> Result<()>;
    /// Queue companion kernel `k` of `m` on a grid of `grid` blocks of [`launch::BLOCK`]
    /// threads.
    ///
    /// # Safety
    /// As [`Device::launch`]: `args` match the kernel's C signature (`launch::check_launch`),
    /// every pointer is live device memory of the size the kernel indexes for its sizes.
    unsafe fn launch_companion(
        &self,
        m: &Self::Module,
        k: launch::Kernel,
        grid: (u32, u32),
        args: &[ArgValue],
        s: &Self::Stream,
    ) -> Result<()>;
    /// Queue a copy of `bytes` bytes from device address `src` to `dst` on `s`.
    ///
    /// # Safety
    /// Both ranges must be live device memory of `bytes` bytes, not overlapping.
    unsafe fn copy_on_device(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        s: &Self::Stream,
    ) -> Result<()>;
    /// Copy `dst.len()` bytes at device address `src` into `dst` now (synchronously).
    ///
    /// # Safety
    /// The device range must be live memory whose writes have completed.
    unsafe fn download_now(&self, dst: &mut [u8], src: u64) -> Result<()>;
    /// Wait for all work queued on the device.
    fn sync_device(&self) -> Result<()>;
    /// Capture what `queue` puts on `s` as a graph, or `Ok(None)` where this device has no
    /// graphs (nothing is queued then). On failure the capture is ended (the stream usable
    /// again) and the error returned.
    fn capture(
        &self,
        s: &Self::Stream,
        queue: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Self::Graph>>;
    /// Queue graph `g` on the stream it was captured on.
    fn launch_graph(&self, g: &Self::Graph) -> Result<()>;
    fn record(&self, e: &Self::Event, s: &Self::Stream) -> Result<()>;
    /// Make `s`'s later work wait for `e`.
    fn wait(&self, s: &Self::Stream, e: &Self::Event) -> Result<()>;
    /// Whether the work before `e` completed (an error reads as complete: the caller then
    /// synchronizes, which reports it).
    fn is_done(&self, e: &Self::Event) -> bool;
    fn sync_event(&self, e: &Self::Event) -> Result<()>;
    fn sync_stream(&self, s: &Self::Stream) -> Result<()>;
}
