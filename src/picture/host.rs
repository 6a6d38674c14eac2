//! Planes in the caller's memory: the zero-copy input path.
//!
//! A [`HostPlane`] is a luma plane that stays where the caller put it (a mapped GStreamer
//! buffer, a pinned buffer of the element's pool, a `Vec`): 8-bit samples as bytes, deeper
//! samples as two little-endian bytes, any stride. It holds its owner (an `Arc`) and so keeps the
//! bytes alive for as long as a backend needs them: a GPU backend uploads straight from them
//! (asynchronously when they are pinned) and drops its clone once the upload completed.
//!
//! Backends that can read such planes say so ([`Backend::accepts_host_planes`]); the engine then
//! hands them a job with a [`HostFrame`] ([`Backend::submit_host`]) instead of copying the planes
//! into compact `u16` planes. [`compute_job_cpu`] reads either kind, so every backend stays
//! checkable against it.
//!
//! [`Backend::accepts_host_planes`]: crate::backend::Backend::accepts_host_planes
//! [`Backend::submit_host`]: crate::backend::Backend::submit_host
//! [`HostFrame`]: crate::backend::HostFrame
//! [`compute_job_cpu`]: crate::backend::compute_job_cpu

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::picture::OwnedPlane;

/// Bytes that stay put while their owner lives.
///
/// # Safety
/// `host_bytes` must return the same slice (address and length) on every call, and those bytes
/// must stay valid and unchanged for as long as the value lives: a backend may read them
/// asynchronously (DMA) after the call returned, while it holds the value.
pub unsafe trait HostBytes: Send + Sync + 'static {
    fn host_bytes(&self) -> &[u8];
}

// SAFETY: a Vec behind a shared reference cannot be changed or moved.
unsafe impl HostBytes for Vec<u8> {
    fn host_bytes(&self) -> &[u8] {
        self
    }
}

// SAFETY: as for Vec.
unsafe impl HostBytes for Box<[u8]> {
    fn host_bytes(&self) -> &[u8] {
        self
    }
}

/// Bytes borrowed from memory that something else keeps alive (a mapped buffer, a decoder's
/// frame): the escape hatch for owners that cannot implement [`HostBytes`] themselves.
pub struct RawHostBytes {
    ptr: *const u8,
    len: usize,
    _keep_alive: Arc<dyn Any + Send + Sync>,
}

// SAFETY: only reads through ptr, which the constructor's contract keeps valid and unchanged
// (from any thread) while keep_alive lives.
unsafe impl Send for RawHostBytes {}
// SAFETY: as above.
unsafe impl Sync for RawHostBytes {}

impl RawHostBytes {
    /// # Safety
    /// `bytes` must stay valid and unchanged for as long as `keep_alive` lives (for example:
    /// `keep_alive` owns the mapping `bytes` points into).
    pub unsafe fn new(bytes: &[u8], keep_alive: Arc<dyn Any + Send + Sync>) -> RawHostBytes {
        RawHostBytes {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            _keep_alive: keep_alive,
        }
    }
}

// SAFETY: the same pointer and length every time; the constructor's contract keeps them valid.
unsafe impl HostBytes for RawHostBytes {
    fn host_bytes(&self) -> &[u8] {
        // SAFETY: see RawHostBytes::new.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh plane identity, shared by host and device planes (a backend recognises a plane it
/// has already uploaded by it, whichever memory it is in).
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

// SAFETY: the only raw pointer (data) points into the owner's bytes, which are immutable and
// owned by a Send + Sync owner that the plane holds.
unsafe impl Send for HostPlane {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for HostPlane {}

/// One plane of samples in the caller's memory. Cloning shares the owner (and the identity).
#[derive(Clone)]
pub struct HostPlane {
    /// Keeps the bytes alive (and the mapping, for a GStreamer frame).
    _owner: Arc<dyn HostBytes>,
    /// The first sample and the bytes up to the last sample of the last row, taken once from
    /// `owner` (HostBytes promises the same slice on every call): reading a row is then no
    /// call into the owner (a mapped GStreamer frame computes its plane per call).
    data: *const u8,
    span: usize,
    stride: usize,
    width: usize,
    height: usize,
    bpc: u8,
    /// Low bits below the sample in each stored 2-byte word (P010's 6: its 10 bits are the
    /// word's high bits): a sample is `word >> shift`. 0 for every other format.
    shift: u8,
    id: u64,
}

impl std::fmt::Debug for HostPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostPlane")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bpc", &self.bpc)
            .field("shift", &self.shift)
            .field("stride", &self.stride)
            .field("ptr", &self.bytes().as_ptr())
            .field("id", &self.id)
            .finish()
    }
}

impl HostPlane {
    /// The plane of `width` x `height` samples at `bpc` bits starting `offset` bytes into
    /// `owner`'s bytes, rows `stride` bytes apart. Checks the depth and that every row lies
    /// inside the owner's bytes (not the sample values: see [`HostPlane::check_range`]).
    pub fn new(
        owner: Arc<dyn HostBytes>,
        offset: usize,
        stride: usize,
        width: usize,
        height: usize,
        bpc: u8,
    ) -> Result<HostPlane> {
        if !(8..=16).contains(&bpc) {
            return Err(Error::BitDepth(bpc));
        }
        if width == 0 || height == 0 {
            return Err(Error::Geometry("host plane: empty plane".into()));
        }
        let row = width * if bpc > 8 { 2 } else { 1 };
        let len = owner.host_bytes().len();
        let end = stride
            .checked_mul(height - 1)
            .and_then(|n| n.checked_add(row))
            .and_then(|n| n.checked_add(offset));
        if stride < row || end.is_none_or(|e| e > len) {
            return Err(Error::Geometry(format!(
                "host plane: {len} bytes with offset {offset} and stride {stride} are too small \
                 for {width}x{height} at {bpc} bits"
            )));
        }
        let span = stride * (height - 1) + row;
        let data = owner.host_bytes()[offset..offset + span].as_ptr();
        Ok(HostPlane {
            _owner: owner,
            data,
            span,
            stride,
            width,
            height,
            bpc,
            shift: 0,
            id: next_id(),
        })
    }

    /// The same plane with its samples in the high bits of each stored word, `shift` bits up
    /// (MSB-aligned formats: P010 stores 10-bit samples shifted up by 6, so that a sample is
    /// `word >> 6`). The bytes are not touched: readers shift ([`HostPlane::copy_into`]; the
    /// CUDA backend while it stages the rows). Needs 2-byte samples (`bpc` above 8) and
    /// `bpc + shift <= 16`.
    pub fn with_shift(mut self, shift: u8) -> Result<HostPlane> {
        if shift > 0 && (self.bpc <= 8 || u32::from(self.bpc) + u32::from(shift) > 16) {
            return Err(Error::Geometry(format!(
                "host plane: {} bit samples cannot be stored {shift} bits up in 16-bit words",
                self.bpc
            )));
        }
        self.shift = shift;
        Ok(self)
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn bpc(&self) -> u8 {
        self.bpc
    }

    /// Bits below each sample in its stored word ([`HostPlane::with_shift`]); 0 but for
    /// MSB-aligned formats.
    pub fn shift(&self) -> u8 {
        self.shift
    }

    /// Whether a stored word can hold a value above `2^bpc - 1` once shifted: false for 8-bit
    /// planes and where the `bpc` bits fill the word (16-bit samples, P010's 10 bits 6 up).
    pub fn can_exceed(&self) -> bool {
        self.bpc > 8 && self.bpc + self.shift < 16
    }

    /// Bytes from one row to the next.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// 1 for 8-bit samples, 2 above.
    pub fn bytes_per_sample(&self) -> usize {
        if self.bpc > 8 { 2 } else { 1 }
    }

    /// Bytes of samples in a row (`width * bytes_per_sample`).
    pub fn row_bytes(&self) -> usize {
        self.width * self.bytes_per_sample()
    }

    /// Unique per plane made by [`HostPlane::new`] (clones share it): lets a backend recognise
    /// a plane it has already uploaded.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// From the first sample to the last sample of the last row.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: data..data + span was a subslice of owner.host_bytes() (checked in new), and
        // HostBytes guarantees that slice stays the same, valid and unchanged while the owner
        // lives; self holds the owner.
        unsafe { std::slice::from_raw_parts(self.data, self.span) }
    }

    /// The `row_bytes` bytes of row `y`, as stored (not shifted: see [`HostPlane::shift`]).
    pub fn row(&self, y: usize) -> &[u8] {
        let s = y * self.stride;
        &self.bytes()[s..s + self.row_bytes()]
    }

    /// The samples as a compact `u16` plane (what the CPU code reads).
    pub fn to_owned_plane(&self) -> OwnedPlane {
        let mut out = OwnedPlane::default();
        self.copy_into(&mut out);
        out
    }

    /// Copy the samples into a compact `u16` plane (reusing its allocation).
    pub fn copy_into(&self, out: &mut OwnedPlane) {
        out.width = self.width;
        out.height = self.height;
        out.bpc = self.bpc;
        out.data.resize(self.width * self.height, 0);
        for (y, dst) in out.data.chunks_exact_mut(self.width).enumerate() {
            let row = self.row(y);
            if self.bpc > 8 {
                let shift = self.shift;
                for (d, c) in dst.iter_mut().zip(row.chunks_exact(2)) {
                    *d = u16::from_le_bytes([c[0], c[1]]) >> shift;
                }
            } else {
                for (d, &s) in dst.iter_mut().zip(row) {
                    *d = u16::from(s);
                }
            }
        }
    }

    /// Refuse a plane with a sample above `2^bpc - 1` ([`Error::SampleRange`], naming the first
    /// one in row order). 8- and 16-bit planes cannot hold one, nor can planes whose samples
    /// fill their words' high bits (P010); others are scanned, large planes on several threads.
    pub fn check_range(&self, what: &'static str) -> Result<()> {
        check_ranges(&[(self, what)])
    }

    /// The first sample above `2^bpc - 1` in row order, as the error.
    fn first_bad_sample(&self, what: &'static str) -> Result<()> {
        let max = (1u32 << self.bpc) - 1;
        for y in 0..self.height {
            for (x, c) in self.row(y).chunks_exact(2).enumerate() {
                let v = u16::from_le_bytes([c[0], c[1]]) >> self.shift;
                if u32::from(v) > max {
                    return Err(Error::SampleRange {
                        plane: what,
                        x,
                        y,
                        value: v,
                        bpc: self.bpc,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether every sample of row `y` fits in `bpc` bits (2-byte samples, `shift` bits up):
    /// OR of the row in 64-bit words (four samples a word; a row starts on a sample), then the
    /// bits above the sample's.
    fn row_fits(&self, y: usize) -> bool {
        let row = self.row(y);
        let lane_mask = !((1u16 << (self.bpc + self.shift)) - 1);
        let word_mask = u64::from(lane_mask) * 0x0001_0001_0001_0001;
        let words = row.chunks_exact(8);
        let tail = words.remainder();
        let acc = words.fold(0u64, |a, c| {
            a | u64::from_le_bytes(c.try_into().expect("8-byte chunk"))
        });
        let tail_acc = tail
            .chunks_exact(2)
            .fold(0u16, |a, c| a | u16::from_le_bytes([c[0], c[1]]));
        acc & word_mask == 0 && tail_acc & lane_mask == 0
    }
}

/// [`HostPlane::check_range`] for several planes at once (one set of threads for all: a
/// 4K 10-bit pair is 33 MB to scan, and starting threads once per frame instead of once per
/// plane saves a good part of the cost). The error names the first bad sample of the first bad
/// plane in `planes` order.
pub fn check_ranges(planes: &[(&HostPlane, &'static str)]) -> Result<()> {
    let scan: Vec<&HostPlane> = planes
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| p.can_exceed())
        .collect();
    if scan.is_empty() {
        return Ok(());
    }
    // Threads from 2 MiB of samples on (a core ORs a few GB/s from memory; a thread costs
    // some tens of microseconds).
    const BYTES_PER_THREAD: usize = 2 << 20;
    let bytes: usize = scan.iter().map(|p| p.row_bytes() * p.height).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(bytes / BYTES_PER_THREAD)
        .clamp(1, 8);
    // Part t of every plane: rows [t * per, (t + 1) * per).
    let part = |t: usize| {
        scan.iter().all(|p| {
            let per = p.height.div_ceil(threads);
            ((t * per).min(p.height)..((t + 1) * per).min(p.height)).all(|y| p.row_fits(y))
        })
    };
    let ok = if threads == 1 {
        part(0)
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .map(|t| std::thread::Builder::new().spawn_scoped(s, move || part(t)))
                .collect();
            let mut ok = part(0);
            for h in handles {
                // No thread to be had: the slow path below scans everything.
                ok &= match h {
                    Ok(h) => h.join().unwrap_or(false),
                    Err(_) => false,
                };
            }
            ok
        })
    };
    if ok {
        return Ok(());
    }
    for (p, what) in planes {
        if p.can_exceed() {
            p.first_bad_sample(what)?;
        }
    }
    Ok(())
}

/// The chroma planes of a pair in the caller's memory, at libvmaf's chroma size (as
/// [`crate::backend::ChromaPair`]: `width >> ss_x` x `height >> ss_y` samples of Cb and of Cr).
#[derive(Clone, Debug)]
pub enum HostChroma {
    /// Separate Cb and Cr planes per picture.
    Planar {
        /// Cb, Cr of the reference.
        reference: [HostPlane; 2],
        /// Cb, Cr of the distorted picture.
        distorted: [HostPlane; 2],
    },
    /// One plane of Cb,Cr pairs per picture (NV12, P016): `2 * width` samples a row.
    Interleaved {
        reference: HostPlane,
        distorted: HostPlane,
    },
}

impl HostChroma {
    /// The planes, reference first, with the names [`Error::SampleRange`] gives them (`u`,
    /// `v`; `uv` for interleaved planes, whose `x` then counts samples, two a pair).
    pub fn named(&self) -> Vec<(&HostPlane, &'static str)> {
        match self {
            HostChroma::Planar {
                reference: [ru, rv],
                distorted: [du, dv],
            } => vec![(ru, "u"), (rv, "v"), (du, "u"), (dv, "v")],
            HostChroma::Interleaved {
                reference,
                distorted,
            } => vec![(reference, "uv"), (distorted, "uv")],
        }
    }

    /// Width and height of each of Cb and Cr (as the planes' geometry says).
    pub fn size(&self) -> (usize, usize) {
        match self {
            HostChroma::Planar { reference, .. } => (reference[0].width, reference[0].height),
            HostChroma::Interleaved { reference, .. } => (reference.width / 2, reference.height),
        }
    }

    /// Compact Cb and Cr copies of one side (`distorted` or the reference).
    pub(crate) fn owned(&self, distorted: bool) -> [OwnedPlane; 2] {
        match self {
            HostChroma::Planar {
                reference,
                distorted: d,
            } => (if distorted { d } else { reference })
                .each_ref()
                .map(HostPlane::to_owned_plane),
            HostChroma::Interleaved {
                reference,
                distorted: d,
            } => {
                let uv = (if distorted { d } else { reference }).to_owned_plane();
                let half = |k: usize| OwnedPlane {
                    data: uv.data.iter().skip(k).step_by(2).copied().collect(),
                    width: uv.width / 2,
                    height: uv.height,
                    bpc: uv.bpc,
                };
                [half(0), half(1)]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane16(
        w: usize,
        h: usize,
        stride: usize,
        bpc: u8,
        f: impl Fn(usize, usize) -> u16,
    ) -> HostPlane {
        let mut v = vec![0xAAu8; stride * h + 3];
        for y in 0..h {
            for x in 0..w {
                let o = 3 + y * stride + 2 * x;
                v[o..o + 2].copy_from_slice(&f(x, y).to_le_bytes());
            }
        }
        HostPlane::new(Arc::new(v), 3, stride, w, h, bpc).unwrap()
    }

    #[test]
    fn geometry_is_checked() {
        let v: Arc<dyn HostBytes> = Arc::new(vec![0u8; 100]);
        assert!(HostPlane::new(v.clone(), 0, 10, 10, 10, 8).is_ok());
        assert!(matches!(
            HostPlane::new(v.clone(), 1, 10, 10, 10, 8),
            Err(Error::Geometry(_))
        ));
        assert!(matches!(
            HostPlane::new(v.clone(), 0, 9, 10, 10, 8),
            Err(Error::Geometry(_))
        ));
        assert!(matches!(
            HostPlane::new(v.clone(), 0, 25, 5, 5, 10),
            Err(Error::Geometry(_))
        ));
        // Last row needs only its samples, not a whole stride.
        assert!(HostPlane::new(v.clone(), 0, 20, 5, 5, 8).is_ok());
        assert!(HostPlane::new(v.clone(), 0, 11, 5, 9, 10).is_ok());
        assert!(matches!(
            HostPlane::new(v.clone(), 0, usize::MAX, 5, 9, 10),
            Err(Error::Geometry(_))
        ));
        assert!(matches!(
            HostPlane::new(v.clone(), 0, 10, 10, 10, 7),
            Err(Error::BitDepth(7))
        ));
        assert!(matches!(
            HostPlane::new(v, 0, 10, 0, 10, 8),
            Err(Error::Geometry(_))
        ));
    }

    #[test]
    fn copies_with_stride_and_offset() {
        let p = plane16(7, 5, 20, 10, |x, y| (x * 100 + y) as u16);
        let o = p.to_owned_plane();
        assert_eq!((o.width, o.height, o.bpc), (7, 5, 10));
        for y in 0..5 {
            for x in 0..7 {
                assert_eq!(o.data[y * 7 + x], (x * 100 + y) as u16);
            }
        }
        let v: Vec<u8> = (0..=255).collect();
        let p8 = HostPlane::new(Arc::new(v), 1, 16, 9, 3, 8).unwrap();
        let o8 = p8.to_owned_plane();
        assert_eq!(o8.data[0], 1);
        assert_eq!(o8.data[9 + 8], 1 + 16 + 8);
        assert_eq!(o8.data[2 * 9], 1 + 32);
        assert_eq!(p8.clone().id(), p8.id());
    }

    /// MSB-aligned planes (P010): readers shift the stored words down, whatever their low bits
    /// hold; a plane whose samples fill the words' high bits is never out of range, one that
    /// leaves bits above them unused is scanned through its shift.
    #[test]
    fn shifted_planes_read_the_high_bits() {
        let word = |x: usize, y: usize| ((x * 977 + y * 131) % 65536) as u16;
        let p = plane16(37, 9, 2 * 37 + 4, 10, word).with_shift(6).unwrap();
        assert_eq!(p.shift(), 6);
        let o = p.to_owned_plane();
        for y in 0..9 {
            for x in 0..37 {
                assert_eq!(o.data[y * 37 + x], word(x, y) >> 6, "({x},{y})");
            }
        }
        // Every word, 0xFFFF too, holds a 10-bit sample 6 bits up.
        let full = plane16(40, 40, 80, 10, |_, _| u16::MAX)
            .with_shift(6)
            .unwrap();
        assert_eq!(full.check_range("luma"), Ok(()));
        assert!(
            plane16(40, 40, 80, 10, |_, _| u16::MAX)
                .check_range("luma")
                .is_err()
        );
        // 10-bit samples 4 bits up leave the top two bits of the word unused.
        let ok = plane16(35, 20, 70, 10, |_, _| 0x3FFF)
            .with_shift(4)
            .unwrap();
        assert_eq!(ok.check_range("uv"), Ok(()));
        let bad = plane16(35, 20, 70, 10, |x, y| {
            if (x, y) == (34, 19) { 0x4000 } else { 0x3FF0 }
        })
        .with_shift(4)
        .unwrap();
        assert_eq!(
            bad.check_range("uv"),
            Err(Error::SampleRange {
                plane: "uv",
                x: 34,
                y: 19,
                value: 0x400,
                bpc: 10
            })
        );
        // No shift for bytes, nor past the word.
        let v: Arc<dyn HostBytes> = Arc::new(vec![0u8; 100]);
        let p8 = HostPlane::new(v, 0, 10, 10, 10, 8).unwrap();
        assert!(matches!(p8.with_shift(2), Err(Error::Geometry(_))));
        assert!(matches!(
            plane16(4, 4, 8, 12, |_, _| 0).with_shift(5),
            Err(Error::Geometry(_))
        ));
        assert!(plane16(4, 4, 8, 12, |_, _| 0).with_shift(4).is_ok());
    }

    #[test]
    fn range_check_finds_the_first_bad_sample() {
        for bpc in [9u8, 10, 12, 15] {
            let max = (1u16 << bpc) - 1;
            // Every width residue mod 4 (the word tail), padding bytes of 0xAA ignored.
            for w in [33usize, 34, 35, 36] {
                let ok = plane16(w, 40, 2 * w + 6, bpc, |x, y| {
                    if (x + y) % 3 == 0 { max } else { 0 }
                });
                assert_eq!(ok.check_range("luma"), Ok(()), "bpc {bpc} w {w}");
                for (bx, by) in [(0, 0), (w - 1, 39), (w / 2, 17), (w - 2, 0)] {
                    let bad = plane16(w, 40, 2 * w + 6, bpc, |x, y| {
                        if (x, y) == (bx, by) || (x, y) == (w - 1, 39) {
                            max + 1
                        } else {
                            max
                        }
                    });
                    assert_eq!(
                        bad.check_range("luma"),
                        Err(Error::SampleRange {
                            plane: "luma",
                            x: bx,
                            y: by,
                            value: max + 1,
                            bpc
                        }),
                        "bpc {bpc} w {w} at {bx},{by}"
                    );
                }
            }
        }
        // 16-bit and 8-bit planes cannot be out of range.
        let p = plane16(40, 40, 80, 16, |_, _| u16::MAX);
        assert_eq!(p.check_range("luma"), Ok(()));
    }

    #[test]
    fn range_check_on_threads_for_large_planes() {
        // 4K 10-bit: 16.6 MB, several threads; one bad sample near the end and one in the
        // middle: the first in row order is reported.
        let (w, h) = (3840, 2160);
        let good = plane16(w, h, 2 * w, 10, |x, y| ((x * 7 + y) % 1024) as u16);
        assert_eq!(good.check_range("luma"), Ok(()));
        let bad = plane16(w, h, 2 * w, 10, |x, y| match (x, y) {
            (5, 2000) => 1024,
            (3000, 1100) => 0xFFFF,
            _ => 3,
        });
        assert_eq!(
            bad.check_range("distorted"),
            Err(Error::SampleRange {
                plane: "distorted",
                x: 3000,
                y: 1100,
                value: 0xFFFF,
                bpc: 10
            })
        );
    }

    #[test]
    fn range_check_of_a_pair_names_the_first_bad_plane() {
        let (w, h) = (1920, 1080);
        let good = plane16(w, h, 2 * w + 2, 10, |x, y| ((x + 3 * y) % 1024) as u16);
        let bad_at = |bx: usize, by: usize| {
            plane16(w, h, 2 * w + 2, 10, move |x, y| {
                if (x, y) == (bx, by) { 1024 } else { 9 }
            })
        };
        let (b1, b2) = (bad_at(1900, 1070), bad_at(0, 3));
        let p8 = HostPlane::new(Arc::new(vec![255u8; 64 * 40]), 0, 64, 64, 40, 8).unwrap();
        assert_eq!(
            check_ranges(&[(&good, "a"), (&good, "b"), (&p8, "c")]),
            Ok(())
        );
        let e = |x, y, plane| {
            Err(Error::SampleRange {
                plane,
                x,
                y,
                value: 1024,
                bpc: 10,
            })
        };
        assert_eq!(
            check_ranges(&[(&good, "a"), (&b1, "b")]),
            e(1900, 1070, "b")
        );
        assert_eq!(check_ranges(&[(&b1, "a"), (&b2, "b")]), e(1900, 1070, "a"));
        assert_eq!(check_ranges(&[(&b2, "a"), (&b1, "b")]), e(0, 3, "a"));
        assert_eq!(check_ranges(&[]), Ok(()));
    }

    #[test]
    fn raw_bytes_keep_their_owner_alive() {
        let owner: Arc<Vec<u8>> = Arc::new(vec![9u8; 64]);
        let weak = Arc::downgrade(&owner);
        // SAFETY: the slice belongs to `owner`, which the keep-alive holds.
        let raw = unsafe { RawHostBytes::new(&owner[..], owner.clone()) };
        drop(owner);
        let p = HostPlane::new(Arc::new(raw), 0, 8, 8, 8, 8).unwrap();
        assert!(weak.upgrade().is_some());
        assert_eq!(p.row(7), &[9u8; 8]);
        drop(p);
        assert!(weak.upgrade().is_none());
    }
}
