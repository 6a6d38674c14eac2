//! The element's zero-copy input: the planes of a mapped buffer handed to the engine where
//! they are ([`host_planes`]), and, with CUDA, a pool of pinned buffers offered upstream in the
//! ALLOCATION query ([`propose_pinned`]) so that a decoder writes its frames straight into
//! memory the GPU copies from by DMA.

use std::sync::Arc;

use gst_video::prelude::*;

use super::input::{ChromaPlanes, InputFormat};
use crate::backend::{HostBytes, HostPlane};

/// One plane of a readable mapping of a buffer (the mapping holds a reference to the buffer):
/// its bytes stay valid and unchanged while the mapping lives.
struct MappedPlane(
    Arc<gst_video::VideoFrame<gst_video::video_frame::Readable>>,
    u32,
);

// SAFETY: plane_data(n) is computed from the mapping's fixed pointer and the frame's fixed
// info: the same slice on every call. The mapping lives as long as the value (the Arc), and a
// buffer that has been pushed (we hold a reference) is not written by its producer until
// released.
unsafe impl HostBytes for MappedPlane {
    fn host_bytes(&self) -> &[u8] {
        self.0.plane_data(self.1).unwrap_or(&[])
    }
}

/// The planes of a buffer that the engine reads where they are.
pub struct HostPicture {
    pub luma: HostPlane,
    /// Cb, Cr at libvmaf's chroma size, when asked for.
    pub chroma: Option<HostUv>,
}

/// A buffer's chroma planes at libvmaf's chroma size.
pub enum HostUv {
    /// Cb, Cr.
    Planar([HostPlane; 2]),
    /// Cb,Cr pairs: twice the chroma width in samples.
    Interleaved(HostPlane),
}

/// The luma plane of `buffer` (caps `info`) and, with `with_chroma`, its chroma planes, as host
/// planes that keep the buffer mapped (one mapping for all of them), or `None` where the engine
/// must get a copy instead (a buffer that cannot be mapped; a negative stride). Chroma is `None`
/// for gray. The planes of MSB-aligned formats (P010) carry their shift
/// ([`HostPlane::with_shift`]): the backend shifts the samples down (CUDA: on the GPU after the
/// upload, or while it stages them).
pub fn host_planes(
    buffer: &gst::Buffer,
    info: &gst_video::VideoInfo,
    with_chroma: bool,
) -> Option<HostPicture> {
    let format = InputFormat::of(info.format())?;
    let frame = gst_video::VideoFrame::from_buffer_readable(buffer.clone(), info).ok()?;
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let strides: Vec<i32> = frame.plane_stride().to_vec();
    let frame = Arc::new(frame);
    let plane = |index: u32, (pw, ph): (usize, usize)| {
        let stride = usize::try_from(*strides.get(index as usize)?).ok()?;
        let owner: Arc<dyn HostBytes> = Arc::new(MappedPlane(Arc::clone(&frame), index));
        HostPlane::new(owner, 0, stride, pw, ph, format.bpc)
            .and_then(|p| p.with_shift(format.shift))
            .ok()
    };
    let luma = plane(0, (w, h))?;
    let size = format
        .chroma
        .libvmaf_chroma_size(w, h)
        .filter(|&(cw, ch)| with_chroma && cw > 0 && ch > 0);
    let chroma = size.and_then(|(cw, ch)| match format.chroma_planes() {
        ChromaPlanes::None => None,
        ChromaPlanes::Planar(u, v) => {
            Some(HostUv::Planar([plane(u, (cw, ch))?, plane(v, (cw, ch))?]))
        }
        ChromaPlanes::Interleaved(uv) => Some(HostUv::Interleaved(plane(uv, (2 * cw, ch))?)),
    });
    Some(HostPicture { luma, chroma })
}

#[cfg(feature = "cuda")]
pub use pinned::{PinnedAllocator, propose_pinned};

#[cfg(feature = "cuda")]
mod pinned {
    use gst::glib;
    use gst::prelude::*;
    use gst::subclass::prelude::*;

    use super::InputFormat;
    use crate::backend::cuda::pinned::PinnedHost;

    /// Buffers the pool keeps ready (the element holds a few frames: pairing, frames in flight
    /// on the GPU, the previous reference for motion). The pool grows beyond this on demand
    /// (no maximum), so upstream never waits for the element.
    const MIN_BUFFERS: u32 = 8;

    mod imp {
        use std::sync::OnceLock;

        use gst::glib;
        use gst::glib::translate::IntoGlibPtr;
        use gst::subclass::prelude::*;

        use crate::backend::cuda::pinned::PinnedHost;

        #[derive(Default)]
        pub struct PinnedAllocator {
            pub host: OnceLock<PinnedHost>,
        }

        #[glib::object_subclass]
        impl ObjectSubclass for PinnedAllocator {
            const NAME: &'static str = "GstVmafGpuPinnedAllocator";
            type Type = super::PinnedAllocator;
            type ParentType = gst::Allocator;
        }

        impl ObjectImpl for PinnedAllocator {}
        impl GstObjectImpl for PinnedAllocator {}

        // SAFETY: alloc returns a new, owned GstMemory (from_mut_slice) or null on failure.
        unsafe impl AllocatorImpl for PinnedAllocator {
            unsafe fn alloc(
                &self,
                size: usize,
                params: &gst::AllocationParams,
            ) -> *mut gst::ffi::GstMemory {
                let Some(host) = self.host.get() else {
                    return std::ptr::null_mut();
                };
                let (prefix, padding) = (params.prefix(), params.padding());
                let Some(total) = size
                    .checked_add(prefix)
                    .and_then(|s| s.checked_add(padding))
                else {
                    return std::ptr::null_mut();
                };
                // Page-aligned, which satisfies any alignment a pool asks for (below 4 KiB).
                let Ok(buf) = host.alloc(total) else {
                    return std::ptr::null_mut();
                };
                let mut mem = gst::Memory::from_mut_slice(buf);
                if (prefix > 0 || padding > 0)
                    && let Some(m) = mem.get_mut()
                {
                    m.resize(prefix..prefix + size);
                }
                // Hands our reference to the caller, as alloc must.
                mem.into_glib_ptr()
            }
        }
    }

    glib::wrapper! {
        /// A GStreamer allocator of pinned (page-locked) host memory on one CUDA device.
        pub struct PinnedAllocator(ObjectSubclass<imp::PinnedAllocator>)
            @extends gst::Allocator, gst::Object;
    }

    impl PinnedAllocator {
        /// Fails where CUDA is unusable (no driver, no such device).
        pub fn new(device_id: u32) -> crate::Result<PinnedAllocator> {
            let host = PinnedHost::open(device_id)?;
            let a: PinnedAllocator = glib::Object::new();
            let _ = a.imp().host.set(host);
            Ok(a)
        }
    }

    /// Answer an ALLOCATION query: a video buffer pool whose memory is `allocator`'s (pinned),
    /// with video meta (custom strides), and the allocator itself for producers that keep their
    /// own pool. MSB-aligned formats (P010) too: the backend uploads their luma as stored and
    /// shifts it on the GPU (the companion metrics' planes are shifted while staged).
    pub fn propose_pinned(
        allocator: &PinnedAllocator,
        query: &mut gst::query::Allocation,
    ) -> Result<bool, String> {
        let (caps, need_pool) = query.get_owned();
        let Some(caps) = caps else {
            return Ok(false);
        };
        let info = gst_video::VideoInfo::from_caps(&caps).map_err(|e| e.to_string())?;
        if InputFormat::of(info.format()).is_none() {
            return Ok(false);
        }
        let size = u32::try_from(info.size()).map_err(|e| e.to_string())?;
        if need_pool {
            let pool = gst_video::VideoBufferPool::new();
            let mut config = pool.config();
            config.set_params(Some(&caps), size, MIN_BUFFERS, 0);
            config.set_allocator(Some(allocator), None);
            config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_META);
            pool.set_config(config).map_err(|e| e.to_string())?;
            query.add_allocation_pool(Some(&pool), size, MIN_BUFFERS, 0);
        }
        query.add_allocation_param(Some(allocator), gst::AllocationParams::default());
        query.add_allocation_meta::<gst_video::VideoMeta>(None);
        Ok(true)
    }
}
