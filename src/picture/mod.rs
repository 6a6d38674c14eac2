//! Borrowed picture views: the only pixel type the engine accepts.
//!
//! A [`Picture`] borrows the planes of one video frame as bytes (as GStreamer or a file reader
//! hands them over): 8-bit samples take one byte, 9- to 16-bit samples two bytes, little-endian.
//! [`Picture::validate`] checks geometry and sample range; the engine copies the planes it needs
//! into compact `u16` planes ([`OwnedPlane`]) so that feature code sees one sample type.
//!
//! [`host`]: planes left in the caller's memory (the zero-copy input path); [`device`]: planes
//! already in GPU memory (a CUDA decoder's frames).

pub mod device;
pub mod host;

pub use device::{DevicePlane, InputPlane};
pub use host::{HostBytes, HostChroma, HostPlane, RawHostBytes};

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

    /// The chroma size libvmaf scores for a luma plane of `width` x `height` (its pictures
    /// round odd sizes down: `width >> ss_x`, `height >> ss_y`), or `None` for gray.
    pub fn libvmaf_chroma_size(self, width: usize, height: usize) -> Option<(usize, usize)> {
        match self {
            ChromaFormat::Gray => None,
            ChromaFormat::Yuv420 => Some((width >> 1, height >> 1)),
            ChromaFormat::Yuv422 => Some((width >> 1, height)),
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
        if width == 0 || height == 0 {
            return Err(Error::Geometry(format!("{what}: empty plane")));
        }
        let bytes = if bpc > 8 { 2 } else { 1 };
        let row_bytes = ((width - 1) * step + offset + 1) * bytes;
        let needed = plane
            .stride
            .checked_mul(height - 1)
            .and_then(|n| n.checked_add(row_bytes));
        if plane.stride < row_bytes || needed.is_none_or(|n| plane.data.len() < n) {
            return Err(Error::Geometry(format!(
                "{what}: plane of {} bytes with stride {} is too small for {width}x{height} at {bpc} bits",
                plane.data.len(),
                plane.stride
            )));
        }
        self.width = width;
        self.height = height;
        self.bpc = bpc;
        // Every sample is overwritten below; resize only reallocates when the size grows.
        self.data.resize(width * height, 0);
        let max = ((1u32 << bpc) - 1) as u16;
        // Rows from y0 on into dst (whole rows).
        let fill = |dst: &mut [u16], y0: usize| -> Result<(), Error> {
            for (k, dst) in dst.chunks_exact_mut(width).enumerate() {
                let y = y0 + k;
                let row = &plane.data[y * plane.stride..y * plane.stride + row_bytes];
                // Plain loops over zipped slices so that the compiler vectorises the common
                // cases (planar 8-bit and planar 16-bit little-endian).
                match (bytes, step) {
                    (1, 1) => {
                        for (d, &s) in dst.iter_mut().zip(row) {
                            *d = s as u16;
                        }
                    }
                    (1, _) => {
                        for (d, &s) in dst.iter_mut().zip(row[offset..].iter().step_by(step)) {
                            *d = s as u16;
                        }
                    }
                    (_, 1) => {
                        for (d, c) in dst.iter_mut().zip(row.chunks_exact(2)) {
                            *d = u16::from_le_bytes([c[0], c[1]]);
                        }
                    }
                    _ => {
                        let pairs = row.chunks_exact(2).skip(offset).step_by(step);
                        for (d, c) in dst.iter_mut().zip(pairs) {
                            *d = u16::from_le_bytes([c[0], c[1]]);
                        }
                    }
                }
                if bytes == 2 && bpc < 16 && dst.iter().fold(0u16, |m, &v| m.max(v)) > max {
                    let x = dst.iter().position(|&v| v > max).unwrap_or(0);
                    return Err(Error::SampleRange {
                        plane: what,
                        x,
                        y,
                        value: dst[x],
                        bpc,
                    });
                }
            }
            Ok(())
        };
        // A large plane in two halves at once (one core copies only a few GB/s); the top
        // half's error first, as row order has it. Without a thread to be had: in one go.
        const SPLIT_FROM: usize = 1 << 20;
        if width * height < SPLIT_FROM || height < 2 {
            return fill(&mut self.data, 0);
        }
        let half = height / 2;
        let done = std::thread::scope(|s| {
            let (top, bottom) = self.data.split_at_mut(half * width);
            let h = std::thread::Builder::new()
                .spawn_scoped(s, move || fill(bottom, half))
                .ok()?;
            let first = fill(top, 0);
            let second = h
                .join()
                .unwrap_or_else(|_| Err(Error::State("plane copy thread panicked".into())));
            Some(first.and(second))
        });
        done.unwrap_or_else(|| fill(&mut self.data, 0))
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

    /// Copy the chroma planes into `u` and `v` at libvmaf's chroma size: `width >> 1` for
    /// 4:2:0/4:2:2 and `height >> 1` for 4:2:0, rounded down (libvmaf's `vmaf_picture_alloc`),
    /// where GStreamer rounds odd sizes up; the extra column/row is not read. Returns `false`
    /// (and leaves them alone) when the picture has no chroma.
    pub fn copy_chroma_libvmaf(
        &self,
        u: &mut OwnedPlane,
        v: &mut OwnedPlane,
    ) -> Result<bool, Error> {
        let size = self.format.libvmaf_chroma_size(self.width, self.height);
        self.copy_chroma_sized(u, v, size)
    }

    /// Copy the chroma planes into `u` and `v`. Returns `false` (and leaves them alone) when the
    /// picture has no chroma.
    pub fn copy_chroma(&self, u: &mut OwnedPlane, v: &mut OwnedPlane) -> Result<bool, Error> {
        self.copy_chroma_sized(u, v, self.format.chroma_size(self.width, self.height))
    }

    /// Copy `cw` x `ch` samples of each chroma plane (`None`: no chroma).
    fn copy_chroma_sized(
        &self,
        u: &mut OwnedPlane,
        v: &mut OwnedPlane,
        size: Option<(usize, usize)>,
    ) -> Result<bool, Error> {
        self.validate()?;
        let Some((cw, ch)) = size else {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plane(data: &[u8], stride: usize) -> PlaneRef<'_> {
        PlaneRef { data, stride }
    }

    /// A plane large enough to be copied in two halves at once: the samples of both halves, in
    /// place (padded stride, 8- and 10-bit), and the first bad sample in row order whichever
    /// half it is in.
    #[test]
    fn large_planes_copy_in_halves() {
        let (w, h) = (1283usize, 1001usize);
        for bpc in [8u8, 10] {
            let bps = if bpc > 8 { 2 } else { 1 };
            let stride = w * bps + 6;
            let sample = |x: usize, y: usize| ((x * 7 + y * 13 + x * y) % (1 << bpc)) as u16;
            let mut bytes = vec![0u8; stride * h];
            for y in 0..h {
                for x in 0..w {
                    let v = sample(x, y);
                    if bps == 1 {
                        bytes[y * stride + x] = v as u8;
                    } else {
                        bytes[y * stride + 2 * x..y * stride + 2 * x + 2]
                            .copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
            let mut out = OwnedPlane::default();
            out.copy_from(&plane(&bytes, stride), w, h, bpc, 1, 0, "luma")
                .unwrap();
            let bad: Vec<(usize, usize)> = (0..h)
                .flat_map(|y| (0..w).map(move |x| (x, y)))
                .filter(|&(x, y)| out.data[y * w + x] != sample(x, y))
                .take(5)
                .collect();
            assert!(bad.is_empty(), "{bpc}-bit: wrong samples at {bad:?}");
            if bpc == 10 {
                // A bad sample in the bottom half only, then one in each half.
                let put = |b: &mut Vec<u8>, x: usize, y: usize| {
                    b[y * stride + 2 * x..y * stride + 2 * x + 2]
                        .copy_from_slice(&1030u16.to_le_bytes())
                };
                let mut b1 = bytes.clone();
                put(&mut b1, 17, 900);
                let e = out
                    .copy_from(&plane(&b1, stride), w, h, bpc, 1, 0, "luma")
                    .unwrap_err();
                assert!(
                    matches!(
                        e,
                        Error::SampleRange {
                            x: 17,
                            y: 900,
                            value: 1030,
                            ..
                        }
                    ),
                    "{e:?}"
                );
                put(&mut b1, 5, 3);
                let e = out
                    .copy_from(&plane(&b1, stride), w, h, bpc, 1, 0, "luma")
                    .unwrap_err();
                assert!(matches!(e, Error::SampleRange { x: 5, y: 3, .. }), "{e:?}");
            }
        }
    }

    #[test]
    fn copies_padded_8bit_rows() {
        // 3x2 samples in rows of 5 bytes (2 bytes of padding that must be ignored).
        let data = [1, 2, 3, 99, 99, 4, 5, 6, 99, 99];
        let mut out = OwnedPlane::default();
        out.copy_from(&plane(&data, 5), 3, 2, 8, 1, 0, "luma")
            .unwrap();
        assert_eq!(out.data, [1, 2, 3, 4, 5, 6]);
        assert_eq!((out.width, out.height, out.bpc), (3, 2, 8));
    }

    #[test]
    fn copies_16bit_and_interleaved_components() {
        // Two rows of two interleaved (u, v) pairs at 10 bits, stride 10 bytes.
        let mut data = Vec::new();
        for row in [[1u16, 1000, 2, 1001], [3, 1002, 4, 1023]] {
            for v in row {
                data.extend_from_slice(&v.to_le_bytes());
            }
            data.extend_from_slice(&[0xff, 0xff]);
        }
        let (mut u, mut v) = (OwnedPlane::default(), OwnedPlane::default());
        u.copy_from(&plane(&data, 10), 2, 2, 10, 2, 0, "u").unwrap();
        v.copy_from(&plane(&data, 10), 2, 2, 10, 2, 1, "v").unwrap();
        assert_eq!(u.data, [1, 2, 3, 4]);
        assert_eq!(v.data, [1000, 1001, 1002, 1023]);
    }

    #[test]
    fn refuses_out_of_range_samples_and_short_planes() {
        let data: Vec<u8> = [5u16, 1024, 7, 8]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut out = OwnedPlane::default();
        let err = out
            .copy_from(&plane(&data, 4), 2, 2, 10, 1, 0, "luma")
            .unwrap_err();
        assert_eq!(
            err,
            Error::SampleRange {
                plane: "luma",
                x: 1,
                y: 0,
                value: 1024,
                bpc: 10
            }
        );
        // The same bytes are fine at 16 bits.
        out.copy_from(&plane(&data, 4), 2, 2, 16, 1, 0, "luma")
            .unwrap();
        assert_eq!(out.data, [5, 1024, 7, 8]);
        // One byte short of the last row.
        let err = out
            .copy_from(&plane(&data[..7], 4), 2, 2, 16, 1, 0, "luma")
            .unwrap_err();
        assert!(matches!(err, Error::Geometry(_)), "{err:?}");
        let err = out
            .copy_from(&plane(&data, 4), 0, 2, 8, 1, 0, "luma")
            .unwrap_err();
        assert!(matches!(err, Error::Geometry(_)), "{err:?}");
    }
}
