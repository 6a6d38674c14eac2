//! Deterministic synthetic test content: reference/distorted frame pairs of any size, bit depth
//! and chroma format, made from a seed, so that the same bytes can be scored by libvmaf (written
//! out as raw planar YUV) and by this crate (regenerated in the test), and only the numbers need to
//! be stored in the repository.
//!
//! The content of frame `t` of a [`Spec`] depends only on the spec and `t` (every plane has its
//! own random stream), so frames can be made one at a time and in any order. The generator is
//! part of the recorded oracle data: changing what it makes for an existing [`Kind`] invalidates
//! `tests/data/oracle/*.json`. Add a new kind instead.
#![allow(dead_code)]

use std::io::{self, Write};
use std::path::Path;

use gstvmafgpu::picture::{Chroma, ChromaFormat, OwnedPlane, Picture, Plane, PlaneRef};

/// splitmix64 (Steele, Lea, Flood 2014): a tiny, well-mixed 64-bit generator.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` >= 1), by multiply-shift (bias below 2^-32 for the `n` used here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }

    /// Uniform in `-a..=a`.
    pub fn signed(&mut self, a: i64) -> i64 {
        self.below(2 * a as u64 + 1) as i64 - a
    }
}

/// What a frame pair looks like. `M` below is `2^bpc - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Reference uniform in `0..=M`; distorted = reference + uniform noise of +-M/12, clamped.
    /// Frames are independent (strong motion).
    Random,
    /// Reference and distorted independent and uniform in `0..=M`.
    Independent,
    /// Each frame is one flat value per side (zero variance: VIF's and ADM's degenerate paths).
    Flat,
    /// Every sample `M` on both sides, every frame.
    Max,
    /// Reference all 0, distorted all `M`, every frame.
    MaxDiff,
    /// One-pixel checkerboard of 0 and `M`, distorted is its inverse, and both invert each frame:
    /// the largest local differences and the largest motion.
    MaxDiffAlt,
    /// Checkerboard of blocks (1 to 8 pixels, from the seed) of two random levels, moving one
    /// pixel a frame; distorted uses other levels and small noise.
    Checker,
    /// Diagonal gradient moving with the frame index plus small noise; distorted is the
    /// reference with its low bits dropped (banding) and its own noise.
    Gradient,
    /// Banding-prone content for CAMBI (not in [`Kind::ALL`], so the v0 case lists stay as they
    /// were): a noise-free ramp (direction, base level and span from the seed, moving with the
    /// frame index) whose reference has every code value of its depth and whose distorted side
    /// keeps only multiples of a coarser step (1, 2 or 4 ten-bit codes from the seed, or 1, 2 or 4
    /// codes at 8 bits): wide flat bands with small steps. Some 24x24 blocks carry noise on both
    /// sides (textured, not banding), so CAMBI's flatness mask has holes.
    Banding,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Random,
        Kind::Independent,
        Kind::Flat,
        Kind::Max,
        Kind::MaxDiff,
        Kind::MaxDiffAlt,
        Kind::Checker,
        Kind::Gradient,
    ];

    /// Kinds added for the VMAF v1 oracle (tests/v1_oracle.rs), outside [`Kind::ALL`].
    pub const V1_EXTRA: [Kind; 1] = [Kind::Banding];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Random => "random",
            Kind::Independent => "independent",
            Kind::Flat => "flat",
            Kind::Max => "max",
            Kind::MaxDiff => "maxdiff",
            Kind::MaxDiffAlt => "maxdiff_alt",
            Kind::Checker => "checker",
            Kind::Gradient => "gradient",
            Kind::Banding => "banding",
        }
    }

    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .chain(Kind::V1_EXTRA)
            .find(|k| k.name() == s)
    }
}

/// libvmaf's name for a chroma format (`--pixel_format`), or "400" for luma only.
pub fn format_name(f: ChromaFormat) -> &'static str {
    match f {
        ChromaFormat::Gray => "400",
        ChromaFormat::Yuv420 => "420",
        ChromaFormat::Yuv422 => "422",
        ChromaFormat::Yuv444 => "444",
    }
}

pub fn format_from_name(s: &str) -> Option<ChromaFormat> {
    Some(match s {
        "400" => ChromaFormat::Gray,
        "420" => ChromaFormat::Yuv420,
        "422" => ChromaFormat::Yuv422,
        "444" => ChromaFormat::Yuv444,
        _ => return None,
    })
}

/// A synthetic clip: geometry, depth, content kind, seed and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub width: usize,
    pub height: usize,
    pub bpc: u8,
    pub format: ChromaFormat,
    pub kind: Kind,
    pub seed: u64,
    pub frames: usize,
}

/// One side (reference or distorted) of one frame: its planes (luma, then chroma if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub planes: Vec<OwnedPlane>,
    pub format: ChromaFormat,
}

impl Frame {
    pub fn luma(&self) -> Plane<'_> {
        self.planes[0].view()
    }

    /// The same frame with its chroma planes cropped to `w >> 1` / `h >> 1` (see [`Layout`]).
    pub fn chroma_rounded_down(&self) -> Frame {
        let (w, h) = (self.planes[0].width, self.planes[0].height);
        let (cw, ch) = match self.format {
            ChromaFormat::Gray => return self.clone(),
            ChromaFormat::Yuv420 => (w >> 1, h >> 1),
            ChromaFormat::Yuv422 => (w >> 1, h),
            ChromaFormat::Yuv444 => (w, h),
        };
        let mut planes = vec![self.planes[0].clone()];
        for p in &self.planes[1..] {
            let mut data = Vec::with_capacity(cw * ch);
            for y in 0..ch {
                data.extend_from_slice(&p.data[y * p.width..y * p.width + cw]);
            }
            planes.push(OwnedPlane {
                data,
                width: cw,
                height: ch,
                bpc: p.bpc,
            });
        }
        Frame {
            planes,
            format: self.format,
        }
    }

    /// The frame as raw planar bytes (one byte a sample at 8 bits, two little-endian bytes above):
    /// what libvmaf's `--pixel_format`/`--bitdepth` raw YUV reader expects.
    pub fn to_bytes(&self) -> Vec<u8> {
        let bpc = self.planes[0].bpc;
        let n: usize = self.planes.iter().map(|p| p.data.len()).sum();
        let mut out = Vec::with_capacity(if bpc > 8 { 2 * n } else { n });
        for p in &self.planes {
            if bpc > 8 {
                out.extend(p.data.iter().flat_map(|v| v.to_le_bytes()));
            } else {
                out.extend(p.data.iter().map(|&v| v as u8));
            }
        }
        out
    }
}

/// How odd-sized chroma planes are laid out in a raw YUV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Chroma planes of `ceil(w / 2)` (and for 4:2:0 `ceil(h / 2)`) samples, as GStreamer and
    /// FFmpeg store I420/Y42B: what [`Frame::to_bytes`] and [`picture`] use.
    RoundUp,
    /// Chroma planes of `w >> 1` (and `h >> 1`), rounded down: what the `vmaf` tool of libvmaf
    /// 3.2.0 reads from a raw .yuv file (libvmaf/tools/yuv_input.c reads `VmafPicture::w[i]` samples
    /// a row, allocated as `w >> ss_hor`). On odd sizes it misreads round-up files (the frames
    /// drift, then it fails with "Error reading YUV frame data." and crashes). Only the chroma
    /// samples of the last column/row are dropped; luma, the only plane VMAF reads, is unchanged.
    LibvmafCli,
}

/// A [`Picture`] over raw planar bytes as made by [`Frame::to_bytes`] (compact planes).
pub fn picture(
    bytes: &[u8],
    width: usize,
    height: usize,
    bpc: u8,
    format: ChromaFormat,
) -> Picture<'_> {
    let bps = if bpc > 8 { 2 } else { 1 };
    let luma_len = width * height * bps;
    let luma = PlaneRef {
        data: &bytes[..luma_len],
        stride: width * bps,
    };
    let chroma = match format.chroma_size(width, height) {
        None => Chroma::None,
        Some((cw, ch)) => {
            let clen = cw * ch * bps;
            Chroma::Planar {
                u: PlaneRef {
                    data: &bytes[luma_len..luma_len + clen],
                    stride: cw * bps,
                },
                v: PlaneRef {
                    data: &bytes[luma_len + clen..luma_len + 2 * clen],
                    stride: cw * bps,
                },
            }
        }
    };
    Picture {
        width,
        height,
        bpc,
        format,
        luma,
        chroma,
    }
}

/// A plane copied into a buffer with a wider stride (`pad` extra samples a row, filled with a
/// value that is out of range for the plane's depth where possible, so a reader that strays past
/// `width` gets noticed). Returns the data and the stride.
pub fn with_stride(p: &Plane<'_>, pad: usize) -> (Vec<u16>, usize) {
    let stride = p.width + pad;
    let fill = if p.bpc < 16 { u16::MAX } else { 0x5A5A };
    let mut data = vec![fill; stride * p.height];
    for y in 0..p.height {
        data[y * stride..y * stride + p.width].copy_from_slice(p.row(y));
    }
    (data, stride)
}

impl Spec {
    pub fn max(&self) -> u16 {
        ((1u32 << self.bpc) - 1) as u16
    }

    /// A name that says everything about the clip, e.g. `random_176x144_10b_420_s7_f4`.
    pub fn name(&self) -> String {
        format!(
            "{}_{}x{}_{}b_{}_s{}_f{}",
            self.kind.name(),
            self.width,
            self.height,
            self.bpc,
            format_name(self.format),
            self.seed,
            self.frames
        )
    }

    /// Reference and distorted frame `t`.
    pub fn frame(&self, t: usize) -> (Frame, Frame) {
        let mut sizes = vec![(self.width, self.height)];
        if let Some((cw, ch)) = self.format.chroma_size(self.width, self.height) {
            sizes.push((cw, ch));
            sizes.push((cw, ch));
        }
        let mut r = Vec::with_capacity(3);
        let mut d = Vec::with_capacity(3);
        for (i, &(w, h)) in sizes.iter().enumerate() {
            let (pr, pd) = self.plane_pair(t, i, w, h);
            r.push(OwnedPlane {
                data: pr,
                width: w,
                height: h,
                bpc: self.bpc,
            });
            d.push(OwnedPlane {
                data: pd,
                width: w,
                height: h,
                bpc: self.bpc,
            });
        }
        (
            Frame {
                planes: r,
                format: self.format,
            },
            Frame {
                planes: d,
                format: self.format,
            },
        )
    }

    /// The random stream of plane `plane` of frame `t`.
    fn rng(&self, t: usize, plane: usize) -> SplitMix64 {
        let mut s = SplitMix64(self.seed ^ 0x6A09_E667_F3BC_C908);
        let a = s.next_u64();
        SplitMix64(a ^ ((t as u64) << 8) ^ plane as u64)
    }

    fn plane_pair(&self, t: usize, plane: usize, w: usize, h: usize) -> (Vec<u16>, Vec<u16>) {
        let m = self.max() as i64;
        let mut rng = self.rng(t, plane);
        let n = w * h;
        let clamp = |v: i64| v.clamp(0, m) as u16;
        match self.kind {
            Kind::Random => {
                let a = (m / 12).max(1);
                let mut r = Vec::with_capacity(n);
                let mut d = Vec::with_capacity(n);
                for _ in 0..n {
                    let v = rng.below(m as u64 + 1) as i64;
                    r.push(v as u16);
                    d.push(clamp(v + rng.signed(a)));
                }
                (r, d)
            }
            Kind::Independent => {
                let r = (0..n).map(|_| rng.below(m as u64 + 1) as u16).collect();
                let d = (0..n).map(|_| rng.below(m as u64 + 1) as u16).collect();
                (r, d)
            }
            Kind::Flat => {
                let vr = rng.below(m as u64 + 1) as u16;
                let vd = rng.below(m as u64 + 1) as u16;
                (vec![vr; n], vec![vd; n])
            }
            Kind::Max => (vec![m as u16; n], vec![m as u16; n]),
            Kind::MaxDiff => (vec![0; n], vec![m as u16; n]),
            Kind::MaxDiffAlt => {
                let mut r = Vec::with_capacity(n);
                for y in 0..h {
                    for x in 0..w {
                        r.push(if (x + y + t) % 2 == 1 { m as u16 } else { 0 });
                    }
                }
                let d = r.iter().map(|&v| m as u16 - v).collect();
                (r, d)
            }
            Kind::Checker => {
                // Block size and levels depend on the seed only, so the pattern just moves.
                let mut srng =
                    SplitMix64(self.seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ plane as u64);
                let b = 1 + srng.below(8) as usize;
                let lv = [
                    srng.below(m as u64 + 1) as i64,
                    srng.below(m as u64 + 1) as i64,
                    srng.below(m as u64 + 1) as i64,
                    srng.below(m as u64 + 1) as i64,
                ];
                let a = (m / 32).max(1);
                let mut r = Vec::with_capacity(n);
                let mut d = Vec::with_capacity(n);
                for y in 0..h {
                    for x in 0..w {
                        let c = ((x + t) / b + y / b) % 2;
                        r.push(lv[c] as u16);
                        d.push(clamp(lv[2 + c] + rng.signed(a)));
                    }
                }
                (r, d)
            }
            Kind::Gradient => {
                let drop_bits = (self.bpc as u32).saturating_sub(5).min(6);
                let a = (m >> 6).max(1);
                let span = (w + h) as i64;
                let mut r = Vec::with_capacity(n);
                let mut d = Vec::with_capacity(n);
                for y in 0..h {
                    for x in 0..w {
                        let pos = (x as i64 * 3 + y as i64 * 2 + t as i64 * 5) % (3 * span);
                        let g = pos * m / (3 * span);
                        let v = clamp(g + rng.signed(a)) as i64;
                        r.push(v as u16);
                        let q = (v >> drop_bits) << drop_bits;
                        d.push(clamp(q + rng.signed(a / 2 + 1)));
                    }
                }
                (r, d)
            }
            Kind::Banding => {
                // Shape and levels depend on the seed and the plane only; the ramp moves 3
                // positions a frame. Levels are in 16-bit units (a ten-bit code is 64).
                let mut srng = SplitMix64(
                    self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xBA4D ^ ((plane as u64) << 32),
                );
                let base = (16 + srng.below(600) as i64) << 6;
                let span = (40 + srng.below(160) as i64) << 6;
                let ax = 1 + srng.below(4) as i64;
                let ay = srng.below(3) as i64;
                let q = srng.below(3) as u32;
                let shift16 = 16 - self.bpc as u32;
                let dis_shift = (self.bpc as u32).saturating_sub(10) + q;
                let noise = ((m + 1) >> 8).max(1) * 3;
                let period = ax * w as i64 + ay * h as i64 + 1;
                let mut r = Vec::with_capacity(n);
                let mut d = Vec::with_capacity(n);
                for y in 0..h {
                    for x in 0..w {
                        let p = (ax * x as i64 + ay * y as i64 + 3 * t as i64) % period;
                        let v = clamp((base + span * p / period) >> shift16);
                        let vq = (v as i64 >> dis_shift) << dis_shift;
                        if ((x / 24) * 7 + (y / 24) * 3 + self.seed as usize).is_multiple_of(5) {
                            r.push(clamp(v as i64 + rng.signed(noise)));
                            d.push(clamp(vq + rng.signed(noise)));
                        } else {
                            r.push(v);
                            d.push(vq as u16);
                        }
                    }
                }
                (r, d)
            }
        }
    }

    /// Writes the whole clip as raw planar YUV: `<dir>/<name>_ref.yuv` and `<dir>/<name>_dis.yuv`,
    /// with chroma laid out as `layout` says.
    pub fn write_yuv(&self, dir: &Path, layout: Layout) -> io::Result<()> {
        let name = self.name();
        let mut fr =
            io::BufWriter::new(std::fs::File::create(dir.join(format!("{name}_ref.yuv")))?);
        let mut fd =
            io::BufWriter::new(std::fs::File::create(dir.join(format!("{name}_dis.yuv")))?);
        for t in 0..self.frames {
            let (r, d) = self.frame(t);
            let (r, d) = match layout {
                Layout::RoundUp => (r, d),
                Layout::LibvmafCli => (r.chroma_rounded_down(), d.chroma_rounded_down()),
            };
            fr.write_all(&r.to_bytes())?;
            fd.write_all(&d.to_bytes())?;
        }
        fr.flush()?;
        fd.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: Kind, bpc: u8, format: ChromaFormat) -> Spec {
        Spec {
            width: 37,
            height: 35,
            bpc,
            format,
            kind,
            seed: 3,
            frames: 3,
        }
    }

    #[test]
    fn synth_is_deterministic_in_range_and_sized() {
        for kind in Kind::ALL.into_iter().chain(Kind::V1_EXTRA) {
            for bpc in [8, 10, 12, 16] {
                for format in [
                    ChromaFormat::Gray,
                    ChromaFormat::Yuv420,
                    ChromaFormat::Yuv422,
                    ChromaFormat::Yuv444,
                ] {
                    let s = spec(kind, bpc, format);
                    let (r1, d1) = s.frame(1);
                    let (r2, d2) = s.frame(1);
                    assert_eq!((&r1, &d1), (&r2, &d2), "{} not deterministic", s.name());
                    for p in r1.planes.iter().chain(&d1.planes) {
                        assert!(
                            p.data.iter().all(|&v| v <= s.max()),
                            "{} out of range",
                            s.name()
                        );
                        assert_eq!(p.data.len(), p.width * p.height);
                    }
                    let chroma = format.chroma_size(37, 35).map_or(0, |(w, h)| 2 * w * h);
                    let bps = if bpc > 8 { 2 } else { 1 };
                    assert_eq!(r1.to_bytes().len(), (37 * 35 + chroma) * bps);
                    let bytes = d1.to_bytes();
                    let pic = picture(&bytes, 37, 35, bpc, format);
                    let mut back = OwnedPlane::default();
                    pic.copy_luma(&mut back).unwrap();
                    assert_eq!(back, d1.planes[0]);
                }
            }
        }
    }

    #[test]
    fn synth_kinds_differ_where_they_should() {
        let s = spec(Kind::Random, 10, ChromaFormat::Yuv420);
        assert_ne!(
            s.frame(0).0,
            s.frame(1).0,
            "frames of random content must differ"
        );
        let s2 = Spec { seed: 4, ..s };
        assert_ne!(s.frame(0).0, s2.frame(0).0, "seeds must matter");
        let (r, d) = spec(Kind::MaxDiff, 12, ChromaFormat::Yuv444).frame(0);
        assert!(r.luma().data.iter().all(|&v| v == 0) && d.luma().data.iter().all(|&v| v == 4095));
        let (r0, _) = spec(Kind::MaxDiffAlt, 8, ChromaFormat::Gray).frame(0);
        let (r1, d1) = spec(Kind::MaxDiffAlt, 8, ChromaFormat::Gray).frame(1);
        assert!(
            r0.luma()
                .data
                .iter()
                .zip(r1.luma().data)
                .all(|(&a, &b)| a + b == 255)
        );
        assert!(
            r1.luma()
                .data
                .iter()
                .zip(d1.luma().data)
                .all(|(&a, &b)| a + b == 255)
        );
    }
}
