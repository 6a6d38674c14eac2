//! Page-locked (pinned) host memory for the zero-copy input path.
//!
//! The GPU copies pinned memory by DMA at full link speed (several times faster than from
//! pageable memory: BENCHMARKS.md) and asynchronously, so a frame that already lies in pinned
//! memory (a decoder wrote into a buffer of the element's pool) is uploaded straight from the
//! caller's bytes, with no host copy at all.
//!
//! - [`PinnedHost`] opens the device's primary context (shared with the backend's own context:
//!   memory allocated here is usable by it) and allocates [`PinnedHostBuf`]s, which free
//!   themselves on drop.
//! - [`is_registered`] says whether a byte range lies inside one of this process's live
//!   [`PinnedHostBuf`]s (a lookup, no driver call): the CUDA backend's cheap test before its
//!   driver query for foreign pinned memory.
//!
//! No GStreamer types here. The driver library may be absent: every entry point returns
//! [`Error::Backend`] then, never panics.

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, result, sys};

use crate::backend::{DevicePlane, HostBytes, HostPlane};
use crate::error::{Error, Result};

fn be<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> Error + '_ {
    move |e| crate::backend::gpu::gpu_error("CUDA pinned memory", what, e)
}

/// The live allocations: start address -> length. Ranges never overlap (they are distinct
/// allocations), so the entry with the greatest start <= an address is the only candidate.
static REGISTRY: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn registry() -> std::sync::MutexGuard<'static, BTreeMap<usize, usize>> {
    // A panic while holding the lock cannot leave the map half-updated (single insert/remove).
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `[ptr, ptr + len)` lies inside one live [`PinnedHostBuf`] of this process.
pub fn is_registered(ptr: *const u8, len: usize) -> bool {
    let start = ptr as usize;
    let Some(end) = start.checked_add(len) else {
        return false;
    };
    registry()
        .range(..=start)
        .next_back()
        .is_some_and(|(&s, &l)| end <= s + l)
}

/// Makes `ctx` current on the calling thread for the life of the guard, then restores whatever
/// was current before (a GStreamer streaming thread may belong to another CUDA user).
struct Pushed;

impl Pushed {
    fn new(ctx: &CudaContext) -> Result<Pushed> {
        // SAFETY: ctx.cu_ctx() is a live context retained by `ctx`, which outlives the guard.
        unsafe { sys::cuCtxPushCurrent_v2(ctx.cu_ctx()) }
            .result()
            .map_err(be("cuCtxPushCurrent"))?;
        Ok(Pushed)
    }
}

impl Drop for Pushed {
    fn drop(&mut self) {
        let mut old: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context pushed in Pushed::new on this thread.
        let _ = unsafe { sys::cuCtxPopCurrent_v2(&mut old) };
    }
}

/// An allocator of pinned host memory on one CUDA device.
#[derive(Clone)]
pub struct PinnedHost {
    ctx: Arc<CudaContext>,
}

impl std::fmt::Debug for PinnedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedHost")
            .field("device", &self.ctx.ordinal())
            .finish()
    }
}

impl PinnedHost {
    /// Open device `device_id`'s primary context (the one the CUDA backend uses). Fails with
    /// [`Error::Backend`] where there is no driver or no such device.
    pub fn open(device_id: u32) -> Result<PinnedHost> {
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::Backend(
                "CUDA pinned memory: the NVIDIA driver library (libcuda.so) is not installed"
                    .into(),
            ));
        }
        let n = CudaContext::device_count().map_err(be("cuDeviceGetCount"))?;
        if i64::from(device_id) >= i64::from(n) {
            return Err(Error::Backend(format!(
                "CUDA pinned memory: device {device_id} requested, {n} present"
            )));
        }
        // CudaContext::new makes its context current on this thread: put back what was there.
        let before = result::ctx::get_current().map_err(be("cuCtxGetCurrent"))?;
        let ctx = CudaContext::new(device_id as usize).map_err(be("cuDevicePrimaryCtxRetain"));
        // SAFETY: `before` was current on this thread a moment ago and is still alive (it is
        // not ours to destroy); null unbinds.
        let _ = unsafe { result::ctx::set_current(before.unwrap_or(std::ptr::null_mut())) };
        Ok(PinnedHost { ctx: ctx? })
    }

    /// The device ordinal.
    pub fn device_id(&self) -> u32 {
        self.ctx.ordinal() as u32
    }

    /// The device's primary context (`CUcontext`, retained while `self` lives) and its
    /// `CUdevice`: the context the CUDA backend works in, for GStreamer's CUDA elements to
    /// share (the element wraps it in a `GstCudaContext`).
    pub fn context_handle(&self) -> (usize, i32) {
        (self.ctx.cu_ctx() as usize, self.ctx.cu_device())
    }

    /// `len` bytes of pinned, zeroed host memory (portable: usable from every context).
    pub fn alloc(&self, len: usize) -> Result<PinnedHostBuf> {
        let _cur = Pushed::new(&self.ctx)?;
        // Not write-combined: decoders read back their reference frames from these buffers.
        // SAFETY: plain page-locked allocation of at least one byte; zeroed below.
        let p = unsafe { result::malloc_host(len.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) }
            .map_err(be("cuMemHostAlloc"))? as *mut u8;
        let Some(ptr) = NonNull::new(p) else {
            return Err(Error::Backend(
                "CUDA pinned memory: cuMemHostAlloc returned null".into(),
            ));
        };
        // SAFETY: ptr points to at least `len` writable bytes that nothing else references.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
        registry().insert(ptr.as_ptr() as usize, len.max(1));
        Ok(PinnedHostBuf {
            ptr,
            len,
            ctx: Arc::clone(&self.ctx),
        })
    }
}

/// Pinned host memory, freed on drop. Readable and writable as a byte slice.
pub struct PinnedHostBuf {
    ptr: NonNull<u8>,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the buffer exclusively owns its allocation (like a Box<[u8]>); shared access only
// reads, mutable access needs &mut.
unsafe impl Send for PinnedHostBuf {}
// SAFETY: as above.
unsafe impl Sync for PinnedHostBuf {}

impl std::fmt::Debug for PinnedHostBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedHostBuf")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl PinnedHostBuf {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
}

impl AsRef<[u8]> for PinnedHostBuf {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: ptr is a live allocation of at least len bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl AsMut<[u8]> for PinnedHostBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

// SAFETY: the bytes are the buffer's own allocation: the same slice on every call, valid and
// unchanged (nothing can write without &mut) while the buffer lives.
unsafe impl HostBytes for PinnedHostBuf {
    fn host_bytes(&self) -> &[u8] {
        self.as_ref()
    }
}

impl Drop for PinnedHostBuf {
    fn drop(&mut self) {
        registry().remove(&(self.ptr.as_ptr() as usize));
        let Ok(_cur) = Pushed::new(&self.ctx) else {
            return;
        };
        // SAFETY: ptr came from cuMemHostAlloc and is freed once. Whoever queued asynchronous
        // copies from it held the buffer alive until they completed (the backend keeps its
        // keep-alive until the slot's upload event).
        let _ = unsafe { result::free_host(self.ptr.as_ptr() as *mut std::ffi::c_void) };
    }
}

/// Errors of the CUDA driver calls of the backend ("CUDA: what: error").
pub(crate) fn cuda_error<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> Error + '_ {
    move |e| crate::backend::gpu::gpu_error("CUDA", what, e)
}

/// Device memory, freed on drop (the owning worker thread has the context current).
#[doc(hidden)]
pub struct DevBuf {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) bytes: usize,
}

impl DevBuf {
    pub(crate) fn new(bytes: usize) -> Result<DevBuf> {
        // SAFETY: plain allocation in the current context (bound by the worker at start).
        let ptr = unsafe { result::malloc_sync(bytes.max(8)) }.map_err(cuda_error("cuMemAlloc"))?;
        Ok(DevBuf { ptr, bytes })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc in this context; every stream that used it was
        // synchronized before the owner (a slot or the worker) is dropped.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// Page-locked host memory, freed on drop.
#[doc(hidden)]
pub struct Pinned {
    ptr: *mut u8,
    pub(crate) bytes: usize,
}

// SAFETY: plain host memory owned by this value (freed on drop); `&self` only reads it
// (`slice`) and writes need `&mut self` (`slice_mut`), so sharing and sending follow Rust's
// rules for a `Box<[u8]>`. The GPU writes it only through copies its owner queues with a
// `&mut` slice and waits for before handing out `&self` again.
unsafe impl Send for Pinned {}
// SAFETY: as above.
unsafe impl Sync for Pinned {}

impl Pinned {
    pub(crate) fn new(bytes: usize, write_combined: bool) -> Result<Pinned> {
        let flags = if write_combined {
            sys::CU_MEMHOSTALLOC_WRITECOMBINED
        } else {
            0
        };
        // SAFETY: plain page-locked allocation; the memory is zeroed below before any read.
        let ptr = unsafe { result::malloc_host(bytes.max(8), flags) }
            .map_err(cuda_error("cuMemHostAlloc"))? as *mut u8;
        // SAFETY: ptr points to at least `bytes` writable bytes.
        unsafe { std::ptr::write_bytes(ptr, 0, bytes) };
        Ok(Pinned { ptr, bytes })
    }

    pub(crate) fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.bytes);
        // SAFETY: in bounds (asserted); &mut self gives exclusive access on the host side, and
        // callers only write a slot's memory after that slot's previous copies completed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }

    pub(crate) fn slice(&self, off: usize, len: usize) -> &[u8] {
        assert!(off + len <= self.bytes);
        // SAFETY: in bounds; read only after the copy into it completed (event synchronized).
        unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemHostAlloc; its copies completed (slot synchronized).
        let _ = unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) };
    }
}

/// Whether the driver knows `bytes` as page-locked host memory (ours or anyone's): then the
/// GPU copies it by DMA, asynchronously. Both ends are asked (a plane lies in one allocation).
/// Needs a current context (the worker's).
pub(crate) fn driver_says_pinned(bytes: &[u8]) -> bool {
    let ask = |p: *const u8| {
        let mut t: u32 = 0;
        // SAFETY: writes one unsigned int (the CUmemorytype) into t; the pointer is only looked
        // up, not dereferenced.
        let r = unsafe {
            sys::cuPointerGetAttribute(
                &mut t as *mut u32 as *mut std::ffi::c_void,
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                p as sys::CUdeviceptr,
            )
        };
        r == sys::cudaError_enum::CUDA_SUCCESS && t == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
    };
    !bytes.is_empty() && ask(bytes.as_ptr()) && ask(bytes[bytes.len() - 1..].as_ptr())
}

/// Whether `p` can be uploaded from where it is (pinned memory: the element's pool, or memory
/// the driver knows as page-locked) instead of through staging. Needs a current context. An
/// MSB-aligned plane (P010) uploaded so must be shifted on the GPU (the caller's business).
pub(crate) fn uploads_directly(p: &HostPlane) -> bool {
    is_registered(p.bytes().as_ptr(), p.bytes().len()) || driver_says_pinned(p.bytes())
}

/// Queue a copy of a host plane's rows into compact device rows.
///
/// # Safety
/// `dst` must hold `p.row_bytes() * p.height()` bytes, and the plane's bytes must stay valid
/// until the copy completed on `st` (the caller keeps `p` alive until then).
pub(crate) unsafe fn upload_2d(
    p: &HostPlane,
    dst: sys::CUdeviceptr,
    st: sys::CUstream,
) -> Result<()> {
    let c = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
        srcHost: p.bytes().as_ptr() as *const std::ffi::c_void,
        srcDevice: 0,
        srcArray: std::ptr::null_mut(),
        srcPitch: p.stride(),
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstPitch: p.row_bytes(),
        WidthInBytes: p.row_bytes(),
        Height: p.height(),
    };
    // SAFETY: the descriptor names a host range inside p.bytes() (HostPlane::new checked that
    // every row lies inside its owner's bytes) and a device range inside dst (contract above).
    unsafe { sys::cuMemcpy2DAsync_v2(&c, st) }
        .result()
        .map_err(cuda_error("upload a host plane"))
}

/// Queue a copy of a device plane's rows (pitched) into compact device rows.
///
/// # Safety
/// `dst` must hold `p.row_bytes() * p.height()` bytes; the plane's memory (DevicePlane::new's
/// contract: in the current context's device, writes complete) must stay valid until the copy
/// completed on `st` (the caller keeps `p` alive until then).
pub(crate) unsafe fn copy_device_2d(
    p: &DevicePlane,
    dst: sys::CUdeviceptr,
    st: sys::CUstream,
) -> Result<()> {
    let c = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: p.ptr(),
        srcArray: std::ptr::null_mut(),
        srcPitch: p.pitch(),
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstPitch: p.row_bytes(),
        WidthInBytes: p.row_bytes(),
        Height: p.height(),
    };
    // SAFETY: the descriptor names a device range of `height` rows of row_bytes at `pitch`
    // from p.ptr() (DevicePlane::new checked they lie in its span) and a device range inside
    // dst (contract above).
    unsafe { sys::cuMemcpy2DAsync_v2(&c, st) }
        .result()
        .map_err(cuda_error("copy a device plane"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_lookup_covers_whole_ranges_only() {
        // Fake entries far from any real allocation (the registry is only a map).
        let base = usize::MAX / 2;
        registry().insert(base, 100);
        registry().insert(base + 1000, 10);
        assert!(is_registered(base as *const u8, 100));
        assert!(is_registered((base + 50) as *const u8, 50));
        assert!(!is_registered((base + 50) as *const u8, 51));
        assert!(!is_registered((base - 1) as *const u8, 2));
        assert!(is_registered((base + 1000) as *const u8, 10));
        assert!(!is_registered((base + 999) as *const u8, 1));
        assert!(!is_registered((base + 1000) as *const u8, 11));
        assert!(!is_registered(usize::MAX as *const u8, 2));
        registry().remove(&base);
        registry().remove(&(base + 1000));
        assert!(!is_registered(base as *const u8, 1));
    }

    #[test]
    fn open_without_a_gpu_is_an_error_or_works() {
        // No GPU here usually: a typed error, never a panic. With a GPU: a usable buffer.
        match PinnedHost::open(0) {
            Err(e) => assert!(matches!(e, Error::Backend(_)), "{e}"),
            Ok(h) => {
                let mut b = h.alloc(4096).expect("alloc");
                assert!(b.as_ref().iter().all(|&v| v == 0));
                b.as_mut()[4095] = 7;
                assert!(is_registered(b.as_ptr(), 4096));
                let p = b.as_ptr();
                drop(b);
                assert!(!is_registered(p, 1));
            }
        }
        assert!(matches!(PinnedHost::open(4096), Err(Error::Backend(_))));
    }
}
