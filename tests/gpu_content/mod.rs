//! Frame content for the GPU parity tests (tests/cuda_parity.rs, tests/cuda_emulated.rs):
//! random, flat, max, max-difference, checkerboard and noisy-gradient pairs, plus a previous
//! reference for motion. Deterministic (xorshift), no dependencies.
#![allow(dead_code)]

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use gstvmafgpu::backend::{ClipConfig, Companions, FrameJob};
use gstvmafgpu::features::adm::AdmParams;
use gstvmafgpu::features::vif::VifParams;
use gstvmafgpu::picture::OwnedPlane;

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// Independent uniform samples in both frames.
    Random,
    /// Two different constants.
    Flat,
    /// Every sample at the maximum in both frames.
    Max,
    /// Reference at the maximum, distorted at 0.
    MaxDiff,
    /// Checkerboard 0/max against its inverse (largest local variances).
    Checker,
    /// A smooth gradient with texture, the distorted one a noisy blurred copy (the common case:
    /// most pixels take VIF's log path with a gain computation).
    Natural,
}

pub const ALL: [Content; 6] = [
    Content::Random,
    Content::Flat,
    Content::Max,
    Content::MaxDiff,
    Content::Checker,
    Content::Natural,
];

fn plane(w: usize, h: usize, bpc: u8, f: impl FnMut(usize, usize) -> u16) -> OwnedPlane {
    let mut f = f;
    let mut data = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            data.push(f(x, y));
        }
    }
    OwnedPlane {
        data,
        width: w,
        height: h,
        bpc,
    }
}

/// (reference, distorted, previous reference) of `content`.
pub fn frames(
    content: Content,
    w: usize,
    h: usize,
    bpc: u8,
    seed: u64,
) -> (OwnedPlane, OwnedPlane, OwnedPlane) {
    let max = ((1u32 << bpc) - 1) as u64;
    let mut rng = Rng(seed
        .wrapping_mul(2862933555777941757)
        .wrapping_add(3037000493)
        | 1);
    let natural = |x: usize, y: usize, t: f64, r: &mut Rng| -> u16 {
        let fx = x as f64 / w as f64;
        let fy = y as f64 / h as f64;
        let base = 0.5 + 0.3 * (6.0 * fx + 4.0 * fy + t).sin() * (3.0 * fy - t).cos();
        let tex = 0.08 * ((x * 7 + y * 13) % 17) as f64 / 17.0;
        let noise = (r.below(1000) as f64 / 1000.0 - 0.5) * 0.04;
        ((base + tex + noise).clamp(0.0, 1.0) * max as f64) as u16
    };
    match content {
        Content::Random => {
            let r = plane(w, h, bpc, |_, _| rng.below(max + 1) as u16);
            let d = plane(w, h, bpc, |_, _| rng.below(max + 1) as u16);
            let p = plane(w, h, bpc, |_, _| rng.below(max + 1) as u16);
            (r, d, p)
        }
        Content::Flat => {
            let a = rng.below(max + 1) as u16;
            let b = rng.below(max + 1) as u16;
            (
                plane(w, h, bpc, |_, _| a),
                plane(w, h, bpc, |_, _| b),
                plane(w, h, bpc, |_, _| b),
            )
        }
        Content::Max => (
            plane(w, h, bpc, |_, _| max as u16),
            plane(w, h, bpc, |_, _| max as u16),
            plane(w, h, bpc, |_, _| 0),
        ),
        Content::MaxDiff => (
            plane(w, h, bpc, |_, _| max as u16),
            plane(w, h, bpc, |_, _| 0),
            plane(w, h, bpc, |_, _| 0),
        ),
        Content::Checker => (
            plane(
                w,
                h,
                bpc,
                |x, y| if (x + y) % 2 == 0 { max as u16 } else { 0 },
            ),
            plane(
                w,
                h,
                bpc,
                |x, y| if (x + y) % 2 == 1 { max as u16 } else { 0 },
            ),
            plane(w, h, bpc, |x, y| {
                if (x / 3 + y / 2) % 2 == 0 {
                    max as u16
                } else {
                    0
                }
            }),
        ),
        Content::Natural => {
            let r = plane(w, h, bpc, |x, y| natural(x, y, 0.0, &mut rng));
            let rc = r.clone();
            let d = plane(w, h, bpc, |x, y| {
                // A horizontal 3-tap blur of the reference plus noise.
                let xl = x.saturating_sub(1);
                let xr = (x + 1).min(w - 1);
                let v = (rc.data[y * w + xl] as u64
                    + 2 * rc.data[y * w + x] as u64
                    + rc.data[y * w + xr] as u64)
                    / 4;
                let n = rng.below(max / 16 + 2) as i64 - (max / 32) as i64;
                (v as i64 + n).clamp(0, max as i64) as u16
            });
            let p = plane(w, h, bpc, |x, y| natural(x, y, 0.3, &mut rng));
            (r, d, p)
        }
    }
}

/// A job for the pair (features on), with the previous reference `prev` for motion.
pub fn job(index: u64, r: OwnedPlane, d: OwnedPlane, prev: Option<OwnedPlane>) -> FrameJob {
    FrameJob {
        index,
        reference: Arc::new(r),
        distorted: Arc::new(d),
        prev_ref: prev.map(Arc::new),
        features: true,
        chroma: None,
        previous: None,
    }
}

/// The configuration of a clip with these VIF and ADM parameters, both features and no
/// companion metric (what a backend is given through `Backend::configure`).
pub fn config(vif: VifParams, adm: AdmParams) -> ClipConfig {
    ClipConfig {
        vif,
        adm,
        ..ClipConfig::default()
    }
}

/// A job with the clip configuration it is computed with. The engine configures a backend
/// once and then submits the jobs; a test whose jobs differ in their configuration configures
/// the backend again before the first job of each change (a configuration applies to the jobs
/// submitted after it). Reads as its [`FrameJob`].
#[derive(Clone, Debug)]
pub struct Job {
    pub cfg: ClipConfig,
    pub job: FrameJob,
}

impl Job {
    /// `job` asking for the companion metrics `companions` (VIF and ADM with their defaults).
    pub fn with_companions(job: FrameJob, companions: Companions) -> Job {
        Job {
            cfg: ClipConfig {
                companions,
                ..ClipConfig::default()
            },
            job,
        }
    }
}

impl Deref for Job {
    type Target = FrameJob;
    fn deref(&self) -> &FrameJob {
        &self.job
    }
}

impl DerefMut for Job {
    fn deref_mut(&mut self) -> &mut FrameJob {
        &mut self.job
    }
}

/// Banding-prone luma: plateaus of one value a few samples apart (a staircase of 1-step
/// increments at 8 bits, 4 at 10), dark enough for the visibility threshold, with a dithered
/// (noisy) quarter, as 10-bit values scaled to `bpc`.
pub fn banded(w: usize, h: usize, bpc: u8, seed: u64) -> OwnedPlane {
    let mut rng = Rng(seed | 1);
    let mut data = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let mut v10 = 80 + 4 * (x * 24 / w) as u32 + 4 * (y * 6 / h) as u32;
            if x < w / 2 && y >= h / 2 {
                v10 += rng.below(9) as u32;
            }
            if x >= 3 * w / 4 && y < h / 4 {
                v10 = (x as u32 * 37 + y as u32 * 11) % 1024;
            }
            data.push(match bpc {
                8 => (v10 >> 2) as u16,
                9 => (v10 >> 1) as u16,
                10 => v10 as u16,
                b => ((v10 << (b - 10)) | (rng.below(1 << (b - 10)) as u32)) as u16,
            });
        }
    }
    OwnedPlane {
        data,
        width: w,
        height: h,
        bpc,
    }
}
