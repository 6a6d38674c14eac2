//! What [`Scorer::push_frames`](super::Scorer::push_frames) takes: one picture's planes,
//! wherever they live.
//!
//! A [`Frame`] is a borrowed [`Picture`] (the engine copies its planes, on every backend), or
//! planes in the caller's memory ([`HostPlane`]s that keep their owner alive: a mapped
//! GStreamer buffer, a pinned buffer). The engine reads host planes where they are when the
//! backend can (the zero-copy route, decided once per clip), and copies them otherwise, so a
//! caller hands over the same thing whatever the backend.

use crate::backend::{DevicePlane, HostChroma, HostPlane, InputPlane};
use crate::error::{Error, Result};
use crate::picture::{Chroma, ChromaFormat, Picture, PlaneRef};

/// One picture of a pair.
#[derive(Clone, Debug)]
pub struct Frame<'a>(pub(super) Source<'a>);

#[derive(Clone, Debug)]
pub(super) enum Source<'a> {
    Picture(Picture<'a>),
    Host {
        format: ChromaFormat,
        luma: HostPlane,
        chroma: HostUv,
    },
    /// The luma plane in device memory (a CUDA decoder's frame): read where it is by a backend
    /// that reads device planes, on the route without companion metrics or host extractors
    /// ([`Scorer::takes_device_planes`](super::Scorer::takes_device_planes)); no chroma.
    Device {
        format: ChromaFormat,
        luma: DevicePlane,
    },
}

/// The chroma planes of a [`Frame`] in the caller's memory, at libvmaf's chroma size
/// (`width >> ss_x` x `height >> ss_y` samples of Cb and of Cr; see
/// [`ChromaFormat::libvmaf_chroma_size`]).
#[derive(Clone, Debug)]
pub enum HostUv {
    /// Gray, or chroma the caller does not hand over (metrics that read chroma then refuse it).
    None,
    /// Cb, Cr.
    Planar([HostPlane; 2]),
    /// Cb,Cr pairs: twice the chroma width in samples (NV12, P010, P016).
    Interleaved(HostPlane),
}

impl<'a> Frame<'a> {
    /// A borrowed picture: the engine copies its planes (and checks their samples) when the
    /// frame is pushed.
    pub fn picture(picture: &Picture<'a>) -> Frame<'a> {
        Frame(Source::Picture(*picture))
    }
}

impl Frame<'static> {
    /// Planes in the caller's memory: `luma` and, unless gray, the chroma planes at libvmaf's
    /// chroma size. Planes of MSB-aligned formats (P010) carry their shift
    /// ([`HostPlane::with_shift`]). The frame keeps the planes' owners alive until the backend
    /// no longer reads them. Checks that the chroma planes fit `format` and the luma.
    pub fn host(format: ChromaFormat, luma: HostPlane, chroma: HostUv) -> Result<Frame<'static>> {
        let (w, h, bpc) = (luma.width(), luma.height(), luma.bpc());
        let size = format.libvmaf_chroma_size(w, h);
        let planes: Vec<(&HostPlane, &'static str, usize)> = match &chroma {
            HostUv::None => Vec::new(),
            HostUv::Planar([u, v]) => vec![(u, "u", 1), (v, "v", 1)],
            // Interleaved planes hold two samples (Cb, Cr) a chroma pixel.
            HostUv::Interleaved(uv) => vec![(uv, "uv", 2)],
        };
        if format == ChromaFormat::Gray && !planes.is_empty() {
            return Err(Error::Mismatch("a gray picture with chroma planes".into()));
        }
        for (p, what, pair) in planes {
            let got = (p.width(), p.height(), p.bpc());
            if size.is_none_or(|(cw, ch)| got != (pair * cw, ch, bpc)) {
                return Err(Error::Mismatch(format!(
                    "{what} plane is {}x{} samples at {} bits, libvmaf's chroma of the {w}x{h} \
                     {format:?} picture at {bpc} bits is {size:?} (twice as wide interleaved)",
                    got.0, got.1, got.2
                )));
            }
        }
        Ok(Frame(Source::Host {
            format,
            luma,
            chroma,
        }))
    }
}

impl Frame<'static> {
    /// A picture whose luma plane is in device memory ([`DevicePlane`]; MSB-aligned planes
    /// carry their shift). Only for a scorer that takes device planes
    /// ([`Scorer::takes_device_planes`](super::Scorer::takes_device_planes)): the others refuse
    /// it at the push (a caller maps such frames to host memory for them). The frame keeps the
    /// plane's owner alive until the backend no longer reads it.
    pub fn device(format: ChromaFormat, luma: DevicePlane) -> Frame<'static> {
        Frame(Source::Device { format, luma })
    }
}

/// Width, height, bit depth and chroma format of a frame.
pub(super) fn geometry(f: &Frame<'_>) -> Result<super::Geometry> {
    Ok(match &f.0 {
        Source::Picture(p) => {
            p.validate()?;
            super::Geometry {
                width: p.width,
                height: p.height,
                bpc: p.bpc,
                format: p.format,
            }
        }
        Source::Host { format, luma, .. } => super::Geometry {
            width: luma.width(),
            height: luma.height(),
            bpc: luma.bpc(),
            format: *format,
        },
        Source::Device { format, luma } => super::Geometry {
            width: luma.width(),
            height: luma.height(),
            bpc: luma.bpc(),
            format: *format,
        },
    })
}

impl Frame<'_> {
    /// Whether the frame has chroma planes.
    pub(super) fn has_chroma(&self) -> bool {
        match &self.0 {
            Source::Picture(p) => {
                p.format != ChromaFormat::Gray && !matches!(p.chroma, Chroma::None)
            }
            Source::Host { format, chroma, .. } => {
                *format != ChromaFormat::Gray && !matches!(chroma, HostUv::None)
            }
            Source::Device { .. } => false,
        }
    }

    /// The luma plane, when the frame is in the caller's host memory.
    pub(super) fn host_luma(&self) -> Option<&HostPlane> {
        match &self.0 {
            Source::Host { luma, .. } => Some(luma),
            Source::Picture(_) | Source::Device { .. } => None,
        }
    }

    /// Whether the luma plane is in device memory.
    pub(super) fn on_device(&self) -> bool {
        matches!(self.0, Source::Device { .. })
    }

    /// The luma plane read where it is (host or device memory), for the device route.
    pub(super) fn input_luma(&self) -> Option<InputPlane> {
        match &self.0 {
            Source::Host { luma, .. } => Some(InputPlane::Host(luma.clone())),
            Source::Device { luma, .. } => Some(InputPlane::Device(luma.clone())),
            Source::Picture(_) => None,
        }
    }

    /// Run `f` on the frame as a picture (the copy route): a borrowed picture as it is, host
    /// planes as views of their bytes, or of copies shifted down for MSB-aligned planes. A
    /// frame in device memory has no host picture: an error (the engine never copies one).
    pub(super) fn with_picture<T>(&self, f: impl FnOnce(&Picture<'_>) -> Result<T>) -> Result<T> {
        let (format, luma, chroma) = match &self.0 {
            Source::Picture(p) => return f(p),
            Source::Device { .. } => {
                return Err(Error::State(
                    "a frame in device memory cannot take the copy route".into(),
                ));
            }
            Source::Host {
                format,
                luma,
                chroma,
            } => (*format, luma, chroma),
        };
        let planes: Vec<&HostPlane> = match chroma {
            HostUv::None => vec![luma],
            HostUv::Planar([u, v]) => vec![luma, u, v],
            HostUv::Interleaved(uv) => vec![luma, uv],
        };
        let shifted: Vec<Option<Vec<u8>>> = planes
            .iter()
            .map(|p| (p.shift() > 0).then(|| unshifted(p)))
            .collect();
        let view = |k: usize| match &shifted[k] {
            Some(bytes) => PlaneRef {
                data: bytes,
                stride: planes[k].row_bytes(),
            },
            None => PlaneRef {
                data: planes[k].bytes(),
                stride: planes[k].stride(),
            },
        };
        let chroma = match chroma {
            HostUv::None => Chroma::None,
            HostUv::Planar(_) => Chroma::Planar {
                u: view(1),
                v: view(2),
            },
            HostUv::Interleaved(_) => Chroma::Interleaved { uv: view(1) },
        };
        f(&Picture {
            width: luma.width(),
            height: luma.height(),
            bpc: luma.bpc(),
            format,
            luma: view(0),
            chroma,
        })
    }
}

/// The samples of a plane stored `shift` bits up, shifted down: compact rows of little-endian
/// words.
fn unshifted(p: &HostPlane) -> Vec<u8> {
    let row = p.row_bytes();
    let mut out = vec![0u8; row * p.height()];
    for (y, o) in out.chunks_exact_mut(row).enumerate() {
        for (o, c) in o.chunks_exact_mut(2).zip(p.row(y).chunks_exact(2)) {
            o.copy_from_slice(&(u16::from_le_bytes([c[0], c[1]]) >> p.shift()).to_le_bytes());
        }
    }
    out
}

/// The chroma planes of a pair in the caller's memory, for the zero-copy route; `None` when
/// either side has none or the two are laid out differently.
pub(super) fn host_chroma(r: &Frame<'_>, d: &Frame<'_>) -> Option<HostChroma> {
    let (Source::Host { chroma: rc, .. }, Source::Host { chroma: dc, .. }) = (&r.0, &d.0) else {
        return None;
    };
    match (rc, dc) {
        (HostUv::Planar(reference), HostUv::Planar(distorted)) => Some(HostChroma::Planar {
            reference: reference.clone(),
            distorted: distorted.clone(),
        }),
        (HostUv::Interleaved(reference), HostUv::Interleaved(distorted)) => {
            Some(HostChroma::Interleaved {
                reference: reference.clone(),
                distorted: distorted.clone(),
            })
        }
        _ => None,
    }
}
