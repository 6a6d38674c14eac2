//! Page-locked (pinned) host memory for the zero-copy input path.
//!
//! The GPU copies pinned memory by DMA at full link speed (~55 GB/s on the H200 machine against
//! ~9 GB/s from pageable memory) and asynchronously, so a frame that already lies in pinned
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

use crate::backend::HostBytes;
use crate::error::{Error, Result};

fn be<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> Error + '_ {
    move |e| Error::Backend(format!("CUDA pinned memory: {what}: {e}"))
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
