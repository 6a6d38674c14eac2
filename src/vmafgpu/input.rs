//! From GStreamer video frames to the engine's [`engine::Frame`]: the caps formats the element
//! accepts, how each one's planes are read at its real bit depth ([`frame_of`]: each buffer
//! mapped once, its planes read where they are), and the pool of pinned buffers offered
//! upstream in the ALLOCATION query ([`propose_pinned`]) where the engine's backend can use
//! them, so that a decoder writes its frames straight into memory the GPU copies from by DMA.

use std::sync::Arc;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_video::VideoFormat;
use gst_video::prelude::*;

use crate::engine::{self, HostBytes, HostPlane, HostUv};
use crate::picture::ChromaFormat;

/// The raw formats of the sink pads (and the src pad, which passes the distorted frames on).
pub const FORMATS: &[VideoFormat] = &[
    VideoFormat::I420,
    VideoFormat::Yv12,
    VideoFormat::Nv12,
    VideoFormat::Y42b,
    VideoFormat::Y444,
    VideoFormat::Gray8,
    VideoFormat::I42010le,
    VideoFormat::I42012le,
    VideoFormat::I42210le,
    VideoFormat::I42212le,
    VideoFormat::Y44410le,
    VideoFormat::Y44412le,
    VideoFormat::Y44416le,
    VideoFormat::Gray16Le,
    VideoFormat::P01010le,
    VideoFormat::P016Le,
];

/// Where a format keeps its chroma.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Gray,
    /// Separate planes: the plane index of U and of V (YV12 stores V first).
    Planar {
        u: u32,
        v: u32,
    },
    /// One plane of U,V pairs.
    Interleaved,
}

/// The plane indices of a format's chroma.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChromaPlanes {
    None,
    /// U's plane, V's plane.
    Planar(u32, u32),
    /// The plane of U,V pairs.
    Interleaved(u32),
}

/// How the element reads one caps format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputFormat {
    pub chroma: ChromaFormat,
    /// Bits per sample the engine sees.
    pub bpc: u8,
    /// Right shift that brings a stored 16-bit sample to `bpc` bits (P010 stores its 10 bits in
    /// the high bits of each 16-bit word).
    pub shift: u8,
    layout: Layout,
}

impl InputFormat {
    /// The reading of `format`, or None if the element does not accept it.
    pub fn of(format: VideoFormat) -> Option<InputFormat> {
        use ChromaFormat::*;
        use VideoFormat as F;
        let planar = Layout::Planar { u: 1, v: 2 };
        let (chroma, bpc, shift, layout) = match format {
            F::I420 => (Yuv420, 8, 0, planar),
            F::Yv12 => (Yuv420, 8, 0, Layout::Planar { u: 2, v: 1 }),
            F::Nv12 => (Yuv420, 8, 0, Layout::Interleaved),
            F::Y42b => (Yuv422, 8, 0, planar),
            F::Y444 => (Yuv444, 8, 0, planar),
            F::Gray8 => (Gray, 8, 0, Layout::Gray),
            F::I42010le => (Yuv420, 10, 0, planar),
            F::I42012le => (Yuv420, 12, 0, planar),
            F::I42210le => (Yuv422, 10, 0, planar),
            F::I42212le => (Yuv422, 12, 0, planar),
            F::Y44410le => (Yuv444, 10, 0, planar),
            F::Y44412le => (Yuv444, 12, 0, planar),
            F::Y44416le => (Yuv444, 16, 0, planar),
            F::Gray16Le => (Gray, 16, 0, Layout::Gray),
            F::P01010le => (Yuv420, 10, 6, Layout::Interleaved),
            F::P016Le => (Yuv420, 16, 0, Layout::Interleaved),
            _ => return None,
        };
        Some(InputFormat {
            chroma,
            bpc,
            shift,
            layout,
        })
    }

    /// Which planes hold the chroma samples.
    pub fn chroma_planes(&self) -> ChromaPlanes {
        match self.layout {
            Layout::Gray => ChromaPlanes::None,
            Layout::Planar { u, v } => ChromaPlanes::Planar(u, v),
            Layout::Interleaved => ChromaPlanes::Interleaved(1),
        }
    }
}

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

/// The engine's frame of `buffer` (caps `info`): its luma and chroma planes where they are, in
/// one readable mapping that the planes keep alive (the engine reads them there or copies them,
/// as its backend needs; it holds them until it no longer reads them). Chroma at libvmaf's
/// chroma size; none for gray. The planes of MSB-aligned formats (P010) carry their shift
/// ([`HostPlane::with_shift`]).
pub fn frame_of(
    buffer: &gst::Buffer,
    info: &gst_video::VideoInfo,
) -> Result<engine::Frame<'static>, String> {
    let (format, luma, chroma) = planes_of(buffer, info)?;
    engine::Frame::host(format, luma, chroma).map_err(|e| e.to_string())
}

/// A buffer mapped as CUDA device memory (`GST_MAP_READ | GST_MAP_CUDA`): its planes' device
/// addresses stay valid, and the buffer unwritten (we hold a reference), until unmapped on
/// drop.
struct CudaMapped(gst_video::ffi::GstVideoFrame);

// SAFETY: the mapping is only read (its plane pointers and strides) and unmapped once, on
// drop; GstBuffer/GstMemory reference counting and unmapping are thread-safe.
unsafe impl Send for CudaMapped {}
// SAFETY: as above (shared access reads plain fields).
unsafe impl Sync for CudaMapped {}

impl Drop for CudaMapped {
    fn drop(&mut self) {
        // SAFETY: mapped by gst_video_frame_map in frame_on_device, unmapped only here.
        unsafe { gst_video::ffi::gst_video_frame_unmap(&mut self.0) }
    }
}

/// Why a buffer is not read where it is on the device route, or `None` when every memory of
/// it is CUDA memory of the context `ctx` (the CUDA backend's).
pub fn not_on_device(buffer: &gst::Buffer, ctx: usize) -> Option<String> {
    for (i, m) in buffer.iter_memories().enumerate() {
        match super::cuda::memory_context(m) {
            None => return Some(format!("memory {i} is not CUDA memory")),
            Some(c) if c != ctx => {
                return Some(format!(
                    "its CUDA memory belongs to another CUDA context ({c:#x}, the backend's is \
                     {ctx:#x}): an upstream element that did not take the element's context"
                ));
            }
            Some(_) => {}
        }
    }
    None
}

/// The engine's frame of a `buffer` in CUDA memory of the backend's context (checked by the
/// caller: [`not_on_device`]): its luma plane where it is on the device, in one mapping the
/// plane keeps alive (and with it the buffer) until the backend has read it.
pub fn frame_on_device(
    buffer: &gst::Buffer,
    info: &gst_video::VideoInfo,
) -> Result<engine::Frame<'static>, String> {
    use gst::glib::translate::ToGlibPtr;
    let format = InputFormat::of(info.format())
        .ok_or_else(|| format!("unsupported format {}", info.format().to_str()))?;
    for m in buffer.iter_memories() {
        super::cuda::sync_memory(m);
    }
    let mut frame = std::mem::MaybeUninit::<gst_video::ffi::GstVideoFrame>::zeroed();
    // SAFETY: frame is writable storage for a GstVideoFrame; info and buffer are live for the
    // call; on success the frame holds its own reference to the buffer and the mapping until
    // gst_video_frame_unmap (CudaMapped's drop).
    let ok = unsafe {
        gst_video::ffi::gst_video_frame_map(
            frame.as_mut_ptr(),
            info.to_glib_none().0 as *mut _,
            buffer.as_mut_ptr(),
            gst::ffi::GST_MAP_READ | super::cuda::GST_MAP_CUDA,
        )
    };
    if ok == gst::glib::ffi::GFALSE {
        return Err(format!(
            "cannot map a {}x{} {} frame in CUDA memory",
            info.width(),
            info.height(),
            info.format().to_str()
        ));
    }
    // SAFETY: initialised by the successful map above.
    let mapped = std::sync::Arc::new(CudaMapped(unsafe { frame.assume_init() }));
    let ptr = mapped.0.data[0] as u64;
    let pitch = usize::try_from(mapped.0.info.stride[0])
        .map_err(|_| format!("plane 0: stride {}", mapped.0.info.stride[0]))?;
    let (w, h) = (info.width() as usize, info.height() as usize);
    let row = w * if format.bpc > 8 { 2 } else { 1 };
    let span = pitch * h.saturating_sub(1) + row;
    // SAFETY: ptr..ptr + span is plane 0 of the mapped frame (pitch * (h - 1) + one row), CUDA
    // memory of the backend's context (the caller checked every memory's context); its writer
    // finished before pushing it (GStreamer 1.22; sync_memory where the library has a stream
    // to wait for), and the mapping, which the plane owns, holds the buffer unwritten.
    let luma = unsafe { engine::DevicePlane::new(mapped, ptr, span, pitch, w, h, format.bpc) }
        .and_then(|p| p.with_shift(format.shift))
        .map_err(|e| format!("plane 0: {e}"))?;
    Ok(engine::Frame::device(format.chroma, luma))
}

/// The planes of [`frame_of`], with the picture's chroma format.
fn planes_of(
    buffer: &gst::Buffer,
    info: &gst_video::VideoInfo,
) -> Result<(ChromaFormat, HostPlane, HostUv), String> {
    let format = InputFormat::of(info.format())
        .ok_or_else(|| format!("unsupported format {}", info.format().to_str()))?;
    let frame =
        gst_video::VideoFrame::from_buffer_readable(buffer.clone(), info).map_err(|_| {
            format!(
                "cannot map a {}x{} {} frame",
                info.width(),
                info.height(),
                info.format().to_str()
            )
        })?;
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let strides: Vec<i32> = frame.plane_stride().to_vec();
    let frame = Arc::new(frame);
    let plane = |index: u32, (pw, ph): (usize, usize)| -> Result<HostPlane, String> {
        let stride = strides
            .get(index as usize)
            .and_then(|&s| usize::try_from(s).ok())
            .ok_or_else(|| format!("plane {index}: stride {:?}", strides.get(index as usize)))?;
        let owner: Arc<dyn HostBytes> = Arc::new(MappedPlane(Arc::clone(&frame), index));
        HostPlane::new(owner, 0, stride, pw, ph, format.bpc)
            .and_then(|p| p.with_shift(format.shift))
            .map_err(|e| format!("plane {index}: {e}"))
    };
    let luma = plane(0, (w, h))?;
    let size = format
        .chroma
        .libvmaf_chroma_size(w, h)
        .filter(|&(cw, ch)| cw > 0 && ch > 0);
    let chroma = match (size, format.chroma_planes()) {
        (Some((cw, ch)), ChromaPlanes::Planar(u, v)) => {
            HostUv::Planar([plane(u, (cw, ch))?, plane(v, (cw, ch))?])
        }
        (Some((cw, ch)), ChromaPlanes::Interleaved(uv)) => {
            HostUv::Interleaved(plane(uv, (2 * cw, ch))?)
        }
        _ => HostUv::None,
    };
    Ok((format.chroma, luma, chroma))
}

/// Buffers the pool keeps ready (the element holds a few frames: pairing, frames in flight
/// on the GPU, the previous reference for motion). The pool grows beyond this on demand
/// (no maximum), so upstream never waits for the element.
const MIN_BUFFERS: u32 = 8;

mod imp {
    use std::sync::OnceLock;

    use gst::glib;
    use gst::glib::translate::IntoGlibPtr;
    use gst::subclass::prelude::*;

    use crate::engine::PinnedMemory;

    #[derive(Default)]
    pub struct PinnedAllocator {
        pub memory: OnceLock<PinnedMemory>,
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
            let Some(memory) = self.memory.get() else {
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
            let Ok(buf) = memory.alloc(total) else {
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
    /// A GStreamer allocator of the engine's pinned (page-locked) host memory
    /// ([`engine::Scorer::pinned_memory`]).
    pub struct PinnedAllocator(ObjectSubclass<imp::PinnedAllocator>)
        @extends gst::Allocator, gst::Object;
}

impl PinnedAllocator {
    pub fn new(memory: engine::PinnedMemory) -> PinnedAllocator {
        let a: PinnedAllocator = glib::Object::new();
        let _ = a.imp().memory.set(memory);
        a
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::picture::OwnedPlane;

    fn init() {
        static INIT: std::sync::Once = std::sync::Once::new();
        INIT.call_once(|| gst::init().unwrap());
    }

    /// Every accepted format has a reading, and its bit depth is GStreamer's own.
    #[test]
    fn formats_agree_with_gstreamer() {
        init();
        for &f in FORMATS {
            let r = InputFormat::of(f).unwrap();
            let info = gst_video::VideoFormatInfo::from_format(f);
            assert_eq!(r.bpc as u32, info.depth()[0], "{f:?}");
            assert_eq!(r.shift as u32, info.shift()[0], "{f:?}");
            if r.chroma != ChromaFormat::Gray {
                assert_eq!(info.n_components(), 3, "{f:?}");
                let (cw, ch) = r.chroma.chroma_size(16, 16).unwrap();
                assert_eq!(
                    (16 >> info.w_sub()[1], 16 >> info.h_sub()[1]),
                    (cw, ch),
                    "{f:?}"
                );
                match r.layout {
                    Layout::Planar { u, v } => {
                        assert_eq!([u, v], [info.plane()[1], info.plane()[2]], "{f:?}")
                    }
                    Layout::Interleaved => assert_eq!(info.plane()[1], info.plane()[2], "{f:?}"),
                    Layout::Gray => panic!("{f:?}"),
                }
            } else {
                assert_eq!(info.n_components(), 1, "{f:?}");
            }
        }
        assert_eq!(InputFormat::of(VideoFormat::Rgba), None);
    }

    /// Build a frame of `format` whose components hold (x + y) * k + c at full bit depth,
    /// written through GStreamer's own pack function, and read it back through `picture()`.
    fn roundtrip(format: VideoFormat) {
        let (w, h) = (6u32, 4u32);
        let info = gst_video::VideoInfo::builder(format, w, h).build().unwrap();
        let r = InputFormat::of(format).unwrap();
        let finfo = info.format_info();
        let max = (1u32 << r.bpc) - 1;
        let val = |x: u32, y: u32, c: u32| ((x * 7 + y * 13 + c * 101) * 977) % (max + 1);
        let wide = finfo.unpack_format() == VideoFormat::Ayuv64;
        let mut buffer = gst::Buffer::with_size(info.size()).unwrap();
        {
            let buf = buffer.get_mut().unwrap();
            let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(buf, &info).unwrap();
            let n = frame.n_planes() as usize;
            let strides: Vec<i32> = frame.plane_stride()[..n].to_vec();
            // full-height scratch planes: the binding's size check of pack() ignores vertical
            // chroma subsampling; they are copied into the frame afterwards
            let mut scratch: Vec<Vec<u8>> = strides
                .iter()
                .map(|&st| vec![0u8; st as usize * h as usize])
                .collect();
            let mut dest: Vec<&mut [u8]> = scratch.iter_mut().map(|v| v.as_mut_slice()).collect();
            for y in 0..h {
                let mut line = Vec::new();
                for x in 0..w {
                    for c in [None, Some(0), Some(1), Some(2)] {
                        let v = c.map_or(max, |c| val(x, y, c));
                        if wide {
                            line.extend_from_slice(&((v << (16 - r.bpc)) as u16).to_ne_bytes());
                        } else {
                            line.push(v as u8);
                        }
                    }
                }
                finfo.pack(
                    gst_video::VideoPackFlags::empty(),
                    &line,
                    line.len() as i32,
                    &mut dest,
                    &strides,
                    gst_video::VideoChromaSite::empty(),
                    y as i32,
                    w as i32,
                );
            }
            for (plane, src) in frame.planes_data_mut().into_iter().take(n).zip(&scratch) {
                let len = plane.len();
                plane.copy_from_slice(&src[..len]);
            }
        }
        // The planes the engine gets (one mapping), read back as it reads them: P010's
        // through their shift.
        let (chroma_format, luma_plane, chroma) = planes_of(&buffer, &info).unwrap();
        assert_eq!(chroma_format, r.chroma, "{format:?}");
        assert_eq!(luma_plane.shift(), r.shift, "{format:?}");
        assert_eq!(
            (luma_plane.width(), luma_plane.height(), luma_plane.bpc()),
            (w as usize, h as usize, r.bpc)
        );
        let luma: OwnedPlane = luma_plane.to_owned_plane();
        for y in 0..h {
            for x in 0..w {
                assert_eq!(
                    luma.data[(y * w + x) as usize] as u32,
                    val(x, y, 0),
                    "{format:?} luma ({x},{y})"
                );
            }
        }
        let uv = match chroma {
            HostUv::Planar([hu, hv]) => Some((hu.to_owned_plane(), hv.to_owned_plane())),
            HostUv::Interleaved(uv) => {
                let uv = uv.to_owned_plane();
                let half = |k: usize| OwnedPlane {
                    data: uv.data.iter().skip(k).step_by(2).copied().collect(),
                    width: uv.width / 2,
                    height: uv.height,
                    bpc: uv.bpc,
                };
                Some((half(0), half(1)))
            }
            HostUv::None => None,
        };
        if let Some((u, v)) = uv {
            let (sw, sh) = (finfo.w_sub()[1], finfo.h_sub()[1]);
            assert_eq!(
                (u.width, u.height),
                r.chroma.chroma_size(w as usize, h as usize).unwrap(),
                "{format:?}"
            );
            for y in 0..u.height as u32 {
                for x in 0..u.width as u32 {
                    // GStreamer packs the chroma of the first pixel of each subsampled block
                    let (px, py) = (x << sw, y << sh);
                    assert_eq!(
                        u.data[(y * u.width as u32 + x) as usize] as u32,
                        val(px, py, 1),
                        "{format:?} u ({x},{y})"
                    );
                    assert_eq!(
                        v.data[(y * v.width as u32 + x) as usize] as u32,
                        val(px, py, 2),
                        "{format:?} v ({x},{y})"
                    );
                }
            }
        } else {
            assert_eq!(r.chroma, ChromaFormat::Gray);
        }
        assert!(frame_of(&buffer, &info).is_ok(), "{format:?}");
    }

    #[test]
    fn every_format_reads_back_its_samples() {
        init();
        for &f in FORMATS {
            roundtrip(f);
        }
    }
}
