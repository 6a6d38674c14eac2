//! From GStreamer video frames to the engine's [`Picture`]: the caps formats the element
//! accepts and how each one's planes are read at its real bit depth.

use gst_video::VideoFormat;
use gst_video::prelude::*;

use crate::picture::{Chroma, ChromaFormat, Picture, PlaneRef};

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

/// A mapped frame plus, for MSB-aligned formats, its planes shifted down to `bpc` bits (unless
/// mapped as stored: see [`MappedFrame::map`]).
pub struct MappedFrame<'a> {
    frame: gst_video::VideoFrameRef<&'a gst::BufferRef>,
    format: InputFormat,
    /// Shifted copies of plane 0 and plane 1 (P010 only), with their strides.
    shifted: Option<[(Vec<u8>, usize); 2]>,
}

/// Copy `rows` rows of `samples` little-endian 16-bit samples, each shifted right by `shift`.
fn shift_plane(
    data: &[u8],
    stride: usize,
    samples: usize,
    rows: usize,
    shift: u8,
) -> (Vec<u8>, usize) {
    let out_stride = samples * 2;
    let mut out = vec![0u8; out_stride * rows];
    for (y, o) in out.chunks_exact_mut(out_stride).enumerate() {
        let start = y * stride;
        let row = data.get(start..start + out_stride).unwrap_or(&[]);
        for (o, c) in o.chunks_exact_mut(2).zip(row.chunks_exact(2)) {
            o.copy_from_slice(&(u16::from_le_bytes([c[0], c[1]]) >> shift).to_le_bytes());
        }
    }
    (out, out_stride)
}

impl<'a> MappedFrame<'a> {
    /// Map `buffer` readable with `info`. With `shift` false, the planes of an MSB-aligned
    /// format (P010) are left as stored: the picture then gives the geometry but not the
    /// samples (for the zero-copy route, whose host planes carry the shift).
    pub fn map(
        buffer: &'a gst::BufferRef,
        info: &gst_video::VideoInfo,
        shift: bool,
    ) -> Result<Self, String> {
        let format = InputFormat::of(info.format())
            .ok_or_else(|| format!("unsupported format {}", info.format().to_str()))?;
        let frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, info).map_err(|e| {
                format!(
                    "cannot map a {}x{} {} frame: {e}",
                    info.width(),
                    info.height(),
                    info.format().to_str()
                )
            })?;
        let shifted = if shift && format.shift > 0 {
            let (w, h) = (info.width() as usize, info.height() as usize);
            let (cw, ch) = format.chroma.chroma_size(w, h).unwrap_or((0, 0));
            let strides = frame.plane_stride();
            let p0 = frame.plane_data(0).map_err(|e| e.to_string())?;
            let p1 = frame.plane_data(1).map_err(|e| e.to_string())?;
            Some([
                shift_plane(p0, strides[0] as usize, w, h, format.shift),
                shift_plane(p1, strides[1] as usize, 2 * cw, ch, format.shift),
            ])
        } else {
            None
        };
        Ok(MappedFrame {
            frame,
            format,
            shifted,
        })
    }

    fn plane(&self, plane: u32) -> PlaneRef<'_> {
        if let Some(sh) = &self.shifted {
            let (data, stride) = &sh[plane as usize];
            return PlaneRef {
                data,
                stride: *stride,
            };
        }
        PlaneRef {
            data: self.frame.plane_data(plane).unwrap_or(&[]),
            stride: self.frame.plane_stride()[plane as usize].max(0) as usize,
        }
    }

    /// The engine's view of the frame.
    pub fn picture(&self) -> Picture<'_> {
        let chroma = match self.format.layout {
            Layout::Gray => Chroma::None,
            Layout::Planar { u, v } => Chroma::Planar {
                u: self.plane(u),
                v: self.plane(v),
            },
            Layout::Interleaved => Chroma::Interleaved { uv: self.plane(1) },
        };
        Picture {
            width: self.frame.width() as usize,
            height: self.frame.height() as usize,
            bpc: self.format.bpc,
            format: self.format.chroma,
            luma: self.plane(0),
            chroma,
        }
    }
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
        let mapped = MappedFrame::map(buffer.as_ref(), &info, true).unwrap();
        let pic = mapped.picture();
        assert_eq!(
            (pic.width, pic.height, pic.bpc),
            (w as usize, h as usize, r.bpc)
        );
        let mut luma = OwnedPlane::default();
        pic.copy_luma(&mut luma).unwrap();
        for y in 0..h {
            for x in 0..w {
                assert_eq!(
                    luma.data[(y * w + x) as usize] as u32,
                    val(x, y, 0),
                    "{format:?} luma ({x},{y})"
                );
            }
        }
        let (mut u, mut v) = (OwnedPlane::default(), OwnedPlane::default());
        if pic.copy_chroma(&mut u, &mut v).unwrap() {
            let (sw, sh) = (finfo.w_sub()[1], finfo.h_sub()[1]);
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

        // The zero-copy route's planes (the buffer mapped as stored) read back the same
        // samples: P010's through their shift.
        use super::super::host_input::{HostUv, host_planes};
        let host = host_planes(&buffer, &info, true).expect("host planes");
        assert_eq!(host.luma.shift(), r.shift, "{format:?}");
        assert_eq!(
            host.luma.to_owned_plane().data,
            luma.data,
            "{format:?} host luma"
        );
        let (mut u, mut v) = (OwnedPlane::default(), OwnedPlane::default());
        let has_chroma = pic.copy_chroma_libvmaf(&mut u, &mut v).unwrap();
        match host.chroma {
            Some(HostUv::Planar([hu, hv])) => {
                assert_eq!(hu.to_owned_plane().data, u.data, "{format:?} host u");
                assert_eq!(hv.to_owned_plane().data, v.data, "{format:?} host v");
            }
            Some(HostUv::Interleaved(uv)) => {
                let uv = uv.to_owned_plane().data;
                let half = |k: usize| uv.iter().skip(k).step_by(2).copied().collect::<Vec<_>>();
                assert_eq!(half(0), u.data, "{format:?} host uv (u)");
                assert_eq!(half(1), v.data, "{format:?} host uv (v)");
            }
            None => assert!(!has_chroma, "{format:?}: host planes lack the chroma"),
        }
    }

    #[test]
    fn every_format_reads_back_its_samples() {
        init();
        for &f in FORMATS {
            roundtrip(f);
        }
    }
}
