//! Page-locked host memory for frames on the zero-copy route: a GPU copies such planes by DMA,
//! with no host copy. Exists in every build; it opens only where the scorer's backend can use
//! it (CUDA).

use crate::error::Result;

/// An allocator of pinned host memory on the scorer's GPU ([`Scorer::pinned_memory`]).
///
/// [`Scorer::pinned_memory`]: super::Scorer::pinned_memory
#[derive(Debug)]
pub struct PinnedMemory(Inner);

#[cfg(feature = "cuda")]
type Inner = crate::backend::cuda::pinned::PinnedHost;
#[cfg(not(feature = "cuda"))]
#[derive(Debug)]
enum Inner {}

/// A buffer of [`PinnedMemory`]: page-aligned bytes, freed when dropped.
#[derive(Debug)]
pub struct PinnedBuffer(Buf);

#[cfg(feature = "cuda")]
type Buf = crate::backend::cuda::pinned::PinnedHostBuf;
#[cfg(not(feature = "cuda"))]
#[derive(Debug)]
enum Buf {}

impl PinnedMemory {
    /// Pinned memory on CUDA device `device_id`; fails where CUDA is unusable (no driver, no
    /// such device, a build without CUDA).
    pub(super) fn open(device_id: u32) -> Result<PinnedMemory> {
        #[cfg(feature = "cuda")]
        return Ok(PinnedMemory(Inner::open(device_id)?));
        #[cfg(not(feature = "cuda"))]
        Err(crate::error::Error::Backend(format!(
            "pinned memory on device {device_id} needs CUDA, which this build does not have"
        )))
    }

    /// `len` bytes of pinned memory.
    pub fn alloc(&self, len: usize) -> Result<PinnedBuffer> {
        #[cfg(feature = "cuda")]
        return self.0.alloc(len).map(PinnedBuffer);
        #[cfg(not(feature = "cuda"))]
        {
            let _ = len;
            match self.0 {}
        }
    }
}

impl AsRef<[u8]> for PinnedBuffer {
    fn as_ref(&self) -> &[u8] {
        #[cfg(feature = "cuda")]
        return self.0.as_ref();
        #[cfg(not(feature = "cuda"))]
        match self.0 {}
    }
}

impl AsMut<[u8]> for PinnedBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        #[cfg(feature = "cuda")]
        return self.0.as_mut();
        #[cfg(not(feature = "cuda"))]
        match self.0 {}
    }
}

/// The primary context of CUDA device `device_id` (its `CUcontext` and `CUdevice` as integers):
/// the context the CUDA backend works in, for GStreamer's CUDA elements to share, so that their
/// frames are memory of this context. Retained once per device for the rest of the process
/// (an element that was handed it may outlive the scorer). Fails where CUDA is unusable.
pub fn cuda_primary_context(device_id: u32) -> Result<(usize, i32)> {
    #[cfg(feature = "cuda")]
    {
        use std::sync::Mutex;
        static RETAINED: Mutex<Vec<Inner>> = Mutex::new(Vec::new());
        let mut held = RETAINED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.iter().find(|h| h.device_id() == device_id) {
            return Ok(h.context_handle());
        }
        let h = Inner::open(device_id)?;
        let handle = h.context_handle();
        held.push(h);
        Ok(handle)
    }
    #[cfg(not(feature = "cuda"))]
    Err(crate::error::Error::Backend(format!(
        "the CUDA context of device {device_id} needs CUDA, which this build does not have"
    )))
}
