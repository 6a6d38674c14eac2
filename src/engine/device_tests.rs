//! Frames in device memory (`Frame::device`, the device route) against `Scorer::push`, on a
//! backend that reads device planes: the CPU reference behind a wrapper whose "device memory"
//! is host memory (the test's planes point at host buffers), so the route (the job's planes,
//! the previous reference for motion, mixing with host planes) is checked without a GPU.

use std::sync::{Arc, Mutex};

use super::*;
use crate::backend::cpu::CpuBackend;
use crate::backend::{DeviceFrame, FrameAccum, HostBytes};
use crate::picture::{Chroma, PlaneRef};

/// The CPU backend reading "device" planes that are host memory.
struct FakeDevice {
    inner: CpuBackend,
    /// What the scorer configured.
    cfg: backend::ClipConfig,
    /// Jobs through submit_device, and of those with a previous reference read where it is.
    seen: Arc<Mutex<(usize, usize)>>,
}

fn owned(p: &InputPlane) -> OwnedPlane {
    match p {
        InputPlane::Host(h) => h.to_owned_plane(),
        InputPlane::Device(d) => {
            let span = d.pitch() * (d.height() - 1) + d.row_bytes();
            // SAFETY: in this test a DevicePlane's address is that of a live host buffer of
            // at least `span` bytes (kept alive by the plane's owner).
            let bytes = unsafe { std::slice::from_raw_parts(d.ptr() as *const u8, span) };
            let owner: Arc<dyn HostBytes> = Arc::new(bytes.to_vec());
            HostPlane::new(owner, 0, d.pitch(), d.width(), d.height(), d.bpc())
                .and_then(|h| h.with_shift(d.shift()))
                .unwrap()
                .to_owned_plane()
        }
    }
}

impl Backend for FakeDevice {
    fn name(&self) -> &'static str {
        "fake-device"
    }
    fn submit(&mut self, job: FrameJob) -> Result<()> {
        self.inner.submit(job)
    }
    fn receive(&mut self, wait: bool) -> Result<Option<(u64, FrameAccum)>> {
        self.inner.receive(wait)
    }
    fn reset(&mut self) {
        self.inner.reset()
    }
    fn configure(&mut self, cfg: &backend::ClipConfig) -> Result<()> {
        self.cfg = *cfg;
        self.inner.configure(cfg)
    }
    fn accepts_host_planes(&self) -> bool {
        true
    }
    fn accepts_device_planes(&self) -> bool {
        true
    }
    fn submit_device(&mut self, mut job: FrameJob, frame: DeviceFrame) -> Result<()> {
        assert!(job.reference.data.is_empty() && !self.cfg.companions.any());
        {
            let mut s = self.seen.lock().unwrap();
            s.0 += 1;
            if frame.prev_ref.is_some() {
                s.1 += 1;
            }
        }
        job.reference = Arc::new(owned(&frame.reference));
        job.distorted = Arc::new(owned(&frame.distorted));
        if let Some(p) = &frame.prev_ref {
            job.prev_ref = Some(Arc::new(owned(p)));
        }
        self.inner.submit(job)
    }
}

/// A gray 8- or 10-bit frame with padded rows.
fn plane_bytes(w: usize, h: usize, bpc: u8, t: usize, noise: usize) -> (Arc<Vec<u8>>, usize) {
    let bps = if bpc > 8 { 2 } else { 1 };
    let stride = w * bps + 32;
    let max = (1usize << bpc) - 1;
    let mut buf = vec![0u8; stride * h];
    for y in 0..h {
        for x in 0..w {
            let v = ((x * 7 + y * 5 + t * 13) % 89 * max / 88 + (x * y + t) * noise % 11).min(max);
            let o = y * stride + x * bps;
            if bps == 2 {
                buf[o..o + 2].copy_from_slice(&(v as u16).to_le_bytes());
            } else {
                buf[o] = v as u8;
            }
        }
    }
    (Arc::new(buf), stride)
}

fn device(buf: &Arc<Vec<u8>>, stride: usize, w: usize, h: usize, bpc: u8) -> DevicePlane {
    let keep: Arc<dyn std::any::Any + Send + Sync> = buf.clone();
    // SAFETY: not device memory: FakeDevice reads it as host memory, which `keep` holds.
    unsafe { DevicePlane::new(keep, buf.as_ptr() as u64, buf.len(), stride, w, h, bpc) }.unwrap()
}

/// A shared buffer as a host plane's owner.
struct Shared(Arc<Vec<u8>>);

// SAFETY: the test never mutates a shared buffer.
unsafe impl HostBytes for Shared {
    fn host_bytes(&self) -> &[u8] {
        &self.0
    }
}

#[test]
fn device_frames_equal_pushed_pictures_and_mix_with_host_frames() {
    let (w, h) = (64, 48);
    for bpc in [8u8, 10] {
        let frames: Vec<_> = (0..6)
            .map(|t| {
                (
                    plane_bytes(w, h, bpc, t * t, 0),
                    plane_bytes(w, h, bpc, t * t, 3),
                )
            })
            .collect();
        let cfg = ScorerConfig {
            backend: BackendKind::Cpu,
            ..ScorerConfig::default()
        };
        let mut plain = Scorer::new(cfg.clone()).unwrap();
        let mut want = Vec::new();
        for ((r, rs), (d, ds)) in &frames {
            fn pic(b: &[u8], s: usize, w: usize, h: usize, bpc: u8) -> Picture<'_> {
                Picture {
                    width: w,
                    height: h,
                    bpc,
                    format: ChromaFormat::Gray,
                    luma: PlaneRef { data: b, stride: s },
                    chroma: Chroma::None,
                }
            }
            let (rp, dp) = (pic(r, *rs, w, h, bpc), pic(d, *ds, w, h, bpc));
            want.extend(plain.push(&rp, &dp).unwrap());
        }
        want.extend(plain.finish().unwrap().0);
        for mix in [false, true] {
            let seen = Arc::new(Mutex::new((0, 0)));
            let b = FakeDevice {
                inner: CpuBackend::new(2).unwrap(),
                cfg: Default::default(),
                seen: Arc::clone(&seen),
            };
            let mut s = Scorer::with_backend(cfg.clone(), Box::new(b)).unwrap();
            assert!(s.takes_device_planes());
            let mut got = Vec::new();
            for ((r, rs), (d, ds)) in &frames {
                let rf = Frame::device(ChromaFormat::Gray, device(r, *rs, w, h, bpc));
                let df = if mix {
                    let owner: Arc<dyn HostBytes> = Arc::new(Shared(d.clone()));
                    let p = HostPlane::new(owner, 0, *ds, w, h, bpc).unwrap();
                    Frame::host(ChromaFormat::Gray, p, HostUv::None).unwrap()
                } else {
                    Frame::device(ChromaFormat::Gray, device(d, *ds, w, h, bpc))
                };
                got.extend(s.push_frames(rf, df).unwrap());
            }
            got.extend(s.finish().unwrap().0);
            assert_eq!(got.len(), want.len());
            for (g, x) in got.iter().zip(&want) {
                assert_eq!(
                    g.metrics, x.metrics,
                    "{bpc} bits, mix {mix}, frame {}",
                    g.index
                );
            }
            assert_eq!(
                *seen.lock().unwrap(),
                (6, 5),
                "every job on the device route"
            );
        }
    }
}

#[test]
fn device_frames_are_refused_where_the_backend_cannot_read_them() {
    let (r, rs) = plane_bytes(64, 48, 8, 0, 0);
    let mut s = Scorer::new(ScorerConfig {
        backend: BackendKind::Cpu,
        ..ScorerConfig::default()
    })
    .unwrap();
    assert!(!s.takes_device_planes());
    let f = || Frame::device(ChromaFormat::Gray, device(&r, rs, 64, 48, 8));
    let e = s.push_frames(f(), f()).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    // the scorer stays usable
    assert_eq!(s.frames_pushed(), 0);
}
