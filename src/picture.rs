//! Borrowed picture views: the only pixel type the engine accepts.
//!
//! A [`Picture`] borrows the planes of one video frame as bytes (as GStreamer or a file reader
//! hands them over): 8-bit samples take one byte, 9- to 16-bit samples two bytes, little-endian.
//! [`Picture::validate`] checks geometry and sample range; the engine copies the planes it needs
//! into compact `u16` planes ([`OwnedPlane`]) so that feature code sees one sample type.

use crate::error::Error;

/// Chroma subsampling of a picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChromaFormat {
    /// Luma only.
    Gray,
    /// 4:2:0: chroma is half width, half height (rounded up).
    Yuv420,
    /// 4:2:2: chroma is half width (rounded up), full height.
    Yuv422,
    /// 4:4:4: chroma at full resolution.
    Yuv444,
}

impl ChromaFormat {
    /// Size of a chroma plane for a luma plane of `width` x `height`, or `None` for gray.
    pub fn chroma_size(self, width: usize, height: usize) -> Option<(usize, usize)> {
        match self {
            ChromaFormat::Gray => None,
            ChromaFormat::Yuv420 => Some((width.div_ceil(2), height.div_ceil(2))),
            ChromaFormat::Yuv422 => Some((width.div_ceil(2), height)),
            ChromaFormat::Yuv444 => Some((width, height)),
        }
    }
}

/// One plane of samples, borrowed as bytes. `stride` is in bytes.
#[derive(Debug, Clone, Copy)]
pub struct PlaneRef<'a> {
    pub data: &'a [u8],
    pub stride: usize,
}

/// The chroma planes of a picture.
#[derive(Debug, Clone, Copy)]
pub enum Chroma<'a> {
    /// No chroma (GRAY formats), or chroma the caller does not want scored.
    None,
    /// Separate U and V planes (I420, Y42B, Y444 and their high-bit-depth forms; YV12 after the
    /// caller swaps the plane order).
    Planar { u: PlaneRef<'a>, v: PlaneRef<'a> },
    /// One plane of interleaved U,V pairs (NV12, P010, P016).
    Interleaved { uv: PlaneRef<'a> },
}

/// A borrowed frame: width and height of the luma plane, bits per component, and the planes.
#[derive(Debug, Clone, Copy)]
pub struct Picture<'a> {
    pub width: usize,
    pub height: usize,
    /// Bits per component, 8 to 16. Samples above 8 bits are stored in two bytes, little-endian,
    /// in the low bits (P010/P016 style MSB-aligned data must be shifted by the caller).
    pub bpc: u8,
    pub format: ChromaFormat,
    pub luma: PlaneRef<'a>,
    pub chroma: Chroma<'a>,
}

/// A compact plane of `u16` samples owned by the engine (stride == width).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnedPlane {
    pub data: Vec<u16>,
    pub width: usize,
    pub height: usize,
    pub bpc: u8,
}

/// A borrowed plane of `u16` samples: what feature code reads. `stride` is in samples.
#[derive(Debug, Clone, Copy)]
pub struct Plane<'a> {
    pub data: &'a [u16],
    pub width: usize,
    pub height: usize,
    pub stride: usize,
    pub bpc: u8,
}

impl<'a> Plane<'a> {
    /// Row `y` (exactly `width` samples).
    #[inline]
    pub fn row(&self, y: usize) -> &'a [u16] {
        &self.data[y * self.stride..y * self.stride + self.width]
    }

    /// A plane view over a compact slice (stride == width). Panics if `data` is too short.
    pub fn from_slice(data: &'a [u16], width: usize, height: usize, bpc: u8) -> Self {
        assert!(data.len() >= width * height, "plane slice too short");
        Plane {
            data,
            width,
            height,
            stride: width,
            bpc,
        }
    }
}

impl OwnedPlane {
    pub fn view(&self) -> Plane<'_> {
        Plane {
            data: &self.data,
            width: self.width,
            height: self.height,
            stride: self.width,
            bpc: self.bpc,
        }
    }

    /// Copy one plane (or one component of an interleaved plane) out of a borrowed byte plane,
    /// checking that every sample fits in `bpc` bits. `step` is 1 for planar data, 2 for
    /// interleaved chroma, `offset` the component within a step.
    #[allow(clippy::too_many_arguments)]
    pub fn copy_from(
        &mut self,
        plane: &PlaneRef<'_>,
        width: usize,
        height: usize,
        bpc: u8,
        step: usize,
        offset: usize,
        what: &'static str,
    ) -> Result<(), Error> {
        let bytes = if bpc > 8 { 2 } else { 1 };
        let row_bytes = (width - 1) * step * bytes + offset * bytes + bytes;
        if width == 0 || height == 0 {
            return Err(Error::Geometry(format!("{what}: empty plane")));
        }
        if plane.stride < row_bytes || plane.data.len() < plane.stride * (height - 1) + row_bytes {
            return Err(Error::Geometry(format!(
                "{what}: plane of {} bytes with stride {} is too small for {width}x{height} at {bpc} bits",
                plane.data.len(),
                plane.stride
            )));
        }
        self.width = width;
        self.height = height;
        self.bpc = bpc;
        self.data.clear();
        self.data.reserve(width * height);
        let max = ((1u32 << bpc) - 1) as u16;
        for y in 0..height {
            let row = &plane.data[y * plane.stride..y * plane.stride + row_bytes];
            if bytes == 1 {
                self.data
                    .extend(row.iter().skip(offset).step_by(step).map(|&b| b as u16));
            } else {
                let start = self.data.len();
                self.data.extend(
                    row.chunks_exact(2)
                        .skip(offset)
                        .step_by(step)
                        .map(|c| u16::from_le_bytes([c[0], c[1]])),
                );
                if bpc < 16 {
                    if let Some(x) = self.data[start..].iter().position(|&v| v > max) {
                        return Err(Error::SampleRange {
                            plane: what,
                            x,
                            y,
                            value: self.data[start + x],
                            bpc,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

impl Picture<'_> {
    /// Check bit depth and plane sizes (not sample values: those are checked while copying).
    pub fn validate(&self) -> Result<(), Error> {
        if !(8..=16).contains(&self.bpc) {
            return Err(Error::BitDepth(self.bpc));
        }
        if self.width == 0 || self.height == 0 {
            return Err(Error::Geometry("empty picture".into()));
        }
        Ok(())
    }

    /// Copy the luma plane into `out` (validating samples).
    pub fn copy_luma(&self, out: &mut OwnedPlane) -> Result<(), Error> {
        self.validate()?;
        out.copy_from(&self.luma, self.width, self.height, self.bpc, 1, 0, "luma")
    }

    /// Copy the chroma planes into `u` and `v`. Returns `false` (and leaves them alone) when the
    /// picture has no chroma.
    pub fn copy_chroma(&self, u: &mut OwnedPlane, v: &mut OwnedPlane) -> Result<bool, Error> {
        self.validate()?;
        let Some((cw, ch)) = self.format.chroma_size(self.width, self.height) else {
            return Ok(false);
        };
        match self.chroma {
            Chroma::None => Ok(false),
            Chroma::Planar { u: pu, v: pv } => {
                u.copy_from(&pu, cw, ch, self.bpc, 1, 0, "u")?;
                v.copy_from(&pv, cw, ch, self.bpc, 1, 0, "v")?;
                Ok(true)
            }
            Chroma::Interleaved { uv } => {
                u.copy_from(&uv, cw, ch, self.bpc, 2, 0, "u")?;
                v.copy_from(&uv, cw, ch, self.bpc, 2, 1, "v")?;
                Ok(true)
            }
        }
    }
}
