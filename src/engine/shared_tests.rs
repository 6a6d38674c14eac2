//! Frames in the caller's memory (`Frame::host`, the zero-copy route) against `Scorer::push`,
//! on a backend that reads host planes: the CPU reference behind a wrapper that records what it
//! was given.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use super::*;
use crate::backend::cpu::CpuBackend;
use crate::backend::{FrameAccum, HostBytes, HostChroma, HostFrame, HostPlane};
use crate::picture::{Chroma, PlaneRef};

/// What the wrapper saw.
#[derive(Default)]
struct Seen {
    host_jobs: usize,
    plain_jobs: usize,
    /// Jobs with a previous reference, and of those, with the previous one as a host plane.
    with_prev: usize,
    host_prev: usize,
    /// Jobs with the previous frame's planes for SpEED temporal ([`HostFrame::previous`]).
    temporal_prev: usize,
}

/// The CPU backend, reading host planes: it keeps each job's HostFrame (the caller's memory)
/// until the job's result is received, as a GPU backend keeps it until the upload completed.
struct HostCpu {
    inner: CpuBackend,
    held: Vec<(u64, HostFrame)>,
    seen: Arc<Mutex<Seen>>,
}

impl Backend for HostCpu {
    fn name(&self) -> &'static str {
        "host-cpu"
    }
    fn submit(&mut self, job: FrameJob) -> Result<()> {
        self.seen.lock().unwrap().plain_jobs += 1;
        self.inner.submit(job)
    }
    fn receive(&mut self, wait: bool) -> Result<Option<(u64, FrameAccum)>> {
        let r = self.inner.receive(wait)?;
        if let Some((i, _)) = &r {
            self.held.retain(|(j, _)| j != i);
        }
        Ok(r)
    }
    fn reset(&mut self) {
        self.held.clear();
        self.inner.reset();
    }
    fn configure(&mut self, cfg: &backend::ClipConfig) -> Result<()> {
        self.inner.configure(cfg)
    }
    fn accepts_host_planes(&self) -> bool {
        true
    }
    /// SpEED temporal, as a GPU backend does (the CPU backend computes the companions it is
    /// configured with): its jobs then carry the previous frame's planes.
    fn computes_on_device(&self, c: Companions) -> bool {
        c == Companions {
            speed_temporal: c.speed_temporal,
            ..Default::default()
        } && c.speed_temporal.is_some()
    }
    fn submit_host(&mut self, job: FrameJob, host: HostFrame) -> Result<()> {
        {
            let mut s = self.seen.lock().unwrap();
            s.host_jobs += 1;
            assert!(
                job.previous.is_none(),
                "previous planes in the job of a host frame"
            );
            if host.previous.is_some() {
                s.temporal_prev += 1;
            }
            // Geometry-only planes: no samples.
            assert!(job.reference.data.is_empty() && job.distorted.data.is_empty());
            if job.prev_ref.is_some() {
                s.with_prev += 1;
                if host.prev_ref.is_some() {
                    s.host_prev += 1;
                }
            } else {
                assert!(host.prev_ref.is_none());
            }
        }
        let index = job.index;
        self.inner.submit(host.materialize(job))?;
        self.held.push((index, host));
        Ok(())
    }
}

fn host_scorer(cfg: ScorerConfig) -> (Scorer, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let b = HostCpu {
        inner: CpuBackend::new(2).unwrap(),
        held: Vec::new(),
        seen: Arc::clone(&seen),
    };
    (Scorer::with_backend(cfg, Box::new(b)).unwrap(), seen)
}

/// Push a pair in the caller's memory (what the element hands over): both lumas and, when
/// given, the pair's chroma planes.
fn push_host(
    s: &mut Scorer,
    format: ChromaFormat,
    ref_luma: HostPlane,
    dist_luma: HostPlane,
    chroma: Option<HostChroma>,
) -> Result<Vec<FrameScores>> {
    let (rc, dc) = match chroma {
        None => (HostUv::None, HostUv::None),
        Some(HostChroma::Planar {
            reference,
            distorted,
        }) => (HostUv::Planar(reference), HostUv::Planar(distorted)),
        Some(HostChroma::Interleaved {
            reference,
            distorted,
        }) => (
            HostUv::Interleaved(reference),
            HostUv::Interleaved(distorted),
        ),
    };
    s.push_frames(
        super::Frame::host(format, ref_luma, rc)?,
        super::Frame::host(format, dist_luma, dc)?,
    )
}

/// Store sample `v` at index `x` of the row starting at byte `row` (`bps` bytes a sample,
/// little-endian).
fn put(buf: &mut [u8], row: usize, x: usize, bps: usize, v: usize) {
    let o = row + x * bps;
    if bps == 2 {
        buf[o..o + 2].copy_from_slice(&(v as u16).to_le_bytes());
    } else {
        buf[o] = v as u8;
    }
}

/// A gray frame in a buffer with padded rows (stride > row bytes), 8 or 10 bits.
struct Frame {
    buf: Arc<Vec<u8>>,
    w: usize,
    h: usize,
    bpc: u8,
    stride: usize,
}

impl Frame {
    fn new(w: usize, h: usize, bpc: u8, t: usize, noise: usize) -> Frame {
        let bps = if bpc > 8 { 2 } else { 1 };
        let stride = w * bps + 24;
        let max = (1usize << bpc) - 1;
        let mut buf = vec![0xEEu8; stride * h];
        for y in 0..h {
            for x in 0..w {
                let v =
                    ((x * 5 + y * 3 + t * 11) % 97 * max / 96 + (x * y + t) * noise % 13).min(max);
                put(&mut buf, y * stride, x, bps, v);
            }
        }
        Frame {
            buf: Arc::new(buf),
            w,
            h,
            bpc,
            stride,
        }
    }

    fn picture(&self) -> Picture<'_> {
        Picture {
            width: self.w,
            height: self.h,
            bpc: self.bpc,
            format: ChromaFormat::Gray,
            luma: PlaneRef {
                data: &self.buf,
                stride: self.stride,
            },
            chroma: Chroma::None,
        }
    }

    fn host(&self) -> HostPlane {
        let owner: Arc<dyn HostBytes> = self.buf.clone();
        HostPlane::new(owner, 0, self.stride, self.w, self.h, self.bpc).unwrap()
    }

    fn set(&mut self, x: usize, y: usize, v: u16) {
        let buf = Arc::get_mut(&mut self.buf).expect("unique");
        let o = y * self.stride + 2 * x;
        buf[o..o + 2].copy_from_slice(&v.to_le_bytes());
    }
}

// SAFETY (for Arc<Vec<u8>> as an owner): the test never mutates a shared buffer.
unsafe impl HostBytes for Arc<Vec<u8>> {
    fn host_bytes(&self) -> &[u8] {
        self
    }
}

fn frames(w: usize, h: usize, bpc: u8, n: usize) -> Vec<(Frame, Frame)> {
    (0..n)
        .map(|t| {
            (
                Frame::new(w, h, bpc, t * t, 0),
                Frame::new(w, h, bpc, t * t, 3),
            )
        })
        .collect()
}

fn plain(cfg: ScorerConfig, frames: &[(Frame, Frame)]) -> (Vec<FrameScores>, Summary) {
    let mut s = Scorer::new(ScorerConfig {
        backend: BackendKind::Cpu,
        threads: 2,
        ..cfg
    })
    .unwrap();
    let mut out = Vec::new();
    for (r, d) in frames {
        out.extend(s.push(&r.picture(), &d.picture()).unwrap());
    }
    let (rest, summary) = s.finish().unwrap();
    out.extend(rest);
    (out, summary)
}

fn shared(s: &mut Scorer, frames: &[(Frame, Frame)]) -> (Vec<FrameScores>, Summary) {
    let mut out = Vec::new();
    for (r, d) in frames {
        out.extend(push_host(s, r.picture().format, r.host(), d.host(), None).unwrap());
    }
    let (rest, summary) = s.finish().unwrap();
    out.extend(rest);
    (out, summary)
}

fn five_frame_window_model() -> ModelSource {
    let text = include_str!("../../models/vmaf_v0.6.1.json");
    let mut json: serde_json::Value = serde_json::from_str(text).unwrap();
    let opts: Vec<serde_json::Value> = json["model_dict"]["feature_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            if f.as_str().unwrap().contains("motion") {
                serde_json::json!({ "motion_five_frame_window": true })
            } else {
                serde_json::json!({})
            }
        })
        .collect();
    json["model_dict"]["feature_opts_dicts"] = serde_json::Value::Array(opts);
    ModelSource::Json(json.to_string())
}

/// The zero-copy route gives push's scores (every metric, every frame, the summary) at 8 and
/// 10 bits, with subsampling and with the five-frame motion window (previous reference two
/// frames back, still a host plane).
#[test]
fn push_host_scores_equal_push() {
    let cases = [
        (8u8, ScorerConfig::default()),
        (10, ScorerConfig::default()),
        (
            10,
            ScorerConfig {
                subsample: 3,
                ..Default::default()
            },
        ),
        (
            8,
            ScorerConfig {
                model: five_frame_window_model(),
                ..Default::default()
            },
        ),
    ];
    for (bpc, cfg) in cases {
        let fr = frames(45, 37, bpc, 7);
        let want = plain(cfg.clone(), &fr);
        let (mut s, seen) = host_scorer(cfg.clone());
        assert!(s.takes_host_planes());
        let got = shared(&mut s, &fr);
        assert_eq!(got, want, "bpc {bpc}, subsample {}", cfg.subsample);
        assert!(!want.0.is_empty());
        let seen = seen.lock().unwrap();
        assert_eq!((seen.host_jobs, seen.plain_jobs), (7, 0));
        // Every frame but the first (two with the five-frame window) has a previous reference,
        // and it is the caller's plane.
        assert!(seen.with_prev >= 5, "{}", seen.with_prev);
        assert_eq!(seen.host_prev, seen.with_prev);
        // The scorer is reusable: a second clip gives the same again.
        drop(seen);
        assert_eq!(shared(&mut s, &fr), want);
    }
}

/// SpEED temporal on a backend that reads host planes and computes it on its device: the
/// zero-copy route, each scored frame but the first with the previous frame's planes (the
/// caller's), the scores those of the copy route with SpEED temporal on host threads.
#[test]
fn push_host_speed_temporal_equals_push() {
    for subsample in [1, 2] {
        let cfg = ScorerConfig {
            subsample,
            extras: Extras {
                speed_temporal: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let fr = frames(352, 288, 10, 6);
        let want = plain(cfg.clone(), &fr);
        let (mut s, seen) = host_scorer(cfg.clone());
        assert!(s.takes_host_planes(), "SpEED temporal on the device");
        let got = shared(&mut s, &fr);
        assert_eq!(got, want, "subsample {subsample}");
        assert!(want.0.iter().all(|f| f.get("speed_temporal").is_some()));
        assert!(want.0.iter().any(|f| f.get("speed_temporal") != Some(0.0)));
        let seen = seen.lock().unwrap();
        assert_eq!((seen.host_jobs, seen.plain_jobs), (6, 0));
        // Scored frames 1.. (every frame, or 2 and 4).
        assert_eq!(seen.temporal_prev, if subsample == 1 { 5 } else { 2 });
    }
}

/// Frames pushed one way and the other in one clip: the same scores (motion against a previous
/// reference of the other kind).
#[test]
fn push_and_push_host_mix_in_one_clip() {
    let fr = frames(40, 36, 10, 6);
    let want = plain(ScorerConfig::default(), &fr);
    let (mut s, seen) = host_scorer(ScorerConfig::default());
    let mut out = Vec::new();
    for (i, (r, d)) in fr.iter().enumerate() {
        out.extend(if i % 2 == 0 {
            push_host(&mut s, r.picture().format, r.host(), d.host(), None).unwrap()
        } else {
            s.push(&r.picture(), &d.picture()).unwrap()
        });
    }
    let (rest, summary) = s.finish().unwrap();
    out.extend(rest);
    assert_eq!((out, summary), want);
    let seen = seen.lock().unwrap();
    assert_eq!((seen.host_jobs, seen.plain_jobs), (3, 3));
    // Host frames 2 and 4 follow plain frames: their previous reference is a compact plane.
    assert_eq!((seen.with_prev, seen.host_prev), (2, 0));
}

/// A sample above 2^bpc - 1 in either host plane is refused before the frame is taken: the
/// error names it, and the clip goes on as if the frame had never been pushed.
#[test]
fn out_of_range_host_planes_change_nothing() {
    let fr = frames(40, 36, 10, 5);
    let want = plain(ScorerConfig::default(), &fr);
    let (mut s, seen) = host_scorer(ScorerConfig::default());
    let mut out = Vec::new();
    for (i, (r, d)) in fr.iter().enumerate() {
        if i == 2 {
            for (bad_ref, x, y, v) in [(false, 39, 35, 1024u16), (true, 3, 0, 0xFFFF)] {
                let mut bad = Frame::new(40, 36, 10, 0, 1);
                bad.set(x, y, v);
                let (rh, dh) = if bad_ref {
                    (bad.host(), d.host())
                } else {
                    (r.host(), bad.host())
                };
                let before = s.frames_pushed();
                let e = push_host(&mut s, ChromaFormat::Gray, rh, dh, None).unwrap_err();
                assert_eq!(
                    e,
                    Error::SampleRange {
                        plane: "luma",
                        x,
                        y,
                        value: v,
                        bpc: 10
                    }
                );
                assert_eq!(s.frames_pushed(), before);
            }
        }
        out.extend(push_host(&mut s, r.picture().format, r.host(), d.host(), None).unwrap());
    }
    let (rest, summary) = s.finish().unwrap();
    out.extend(rest);
    assert_eq!((out, summary), want);
    assert_eq!(seen.lock().unwrap().host_jobs, 5);
}

/// Host planes that disagree with their pictures are refused (and change nothing).
#[test]
fn host_planes_must_match_the_pictures() {
    let (mut s, _) = host_scorer(ScorerConfig::default());
    let a = Frame::new(40, 36, 8, 0, 0);
    let b = Frame::new(41, 36, 8, 0, 0);
    let c = Frame::new(40, 36, 10, 0, 0);
    let e = push_host(&mut s, a.picture().format, a.host(), b.host(), None).unwrap_err();
    assert!(matches!(e, Error::Mismatch(_)), "{e}");
    let e = push_host(&mut s, a.picture().format, c.host(), a.host(), None).unwrap_err();
    assert!(matches!(e, Error::Mismatch(_)), "{e}");
    assert_eq!(s.frames_pushed(), 0);
}

/// The caller's memory is released: each distorted plane once its result is back, each
/// reference once it is neither in flight nor the previous reference of the next frame, and
/// everything at `finish`.
#[test]
fn host_planes_are_released() {
    let fr = frames(40, 36, 8, 8);
    let (mut s, _) = host_scorer(ScorerConfig::default());
    type Owners = (Weak<Vec<u8>>, Weak<Vec<u8>>);
    let mut weak: Vec<Owners> = Vec::new();
    let mut scored = 0;
    for (i, (r, d)) in fr.iter().enumerate() {
        // Owners that only the scorer holds once pushed.
        let r2 = Frame {
            buf: Arc::new(r.buf.to_vec()),
            ..*r
        };
        let d2 = Frame {
            buf: Arc::new(d.buf.to_vec()),
            ..*d
        };
        weak.push((Arc::downgrade(&r2.buf), Arc::downgrade(&d2.buf)));
        let (rh, dh) = (r2.host(), d2.host());
        scored += push_host(&mut s, ChromaFormat::Gray, rh, dh, None)
            .unwrap()
            .len();
        drop((r2, d2));
        // Frames whose results are final (all before `scored`, bar motion's one-frame delay)
        // hold nothing any more but the last reference.
        for (j, (wr, wd)) in weak.iter().enumerate() {
            if j + 1 < scored {
                assert!(
                    wd.upgrade().is_none(),
                    "distorted {j} alive after frame {i}"
                );
                assert!(
                    wr.upgrade().is_none(),
                    "reference {j} alive after frame {i}"
                );
            }
        }
        // The newest reference is kept for the next frame's motion.
        assert!(weak[i].0.upgrade().is_some());
    }
    assert!(scored > 0);
    s.finish().unwrap();
    for (j, (wr, wd)) in weak.iter().enumerate() {
        assert!(
            wr.upgrade().is_none() && wd.upgrade().is_none(),
            "frame {j} alive after finish"
        );
    }
    // reset() releases too.
    let keep = Frame::new(40, 36, 8, 1, 0);
    let w = Arc::downgrade(&keep.buf);
    let owned = Frame {
        buf: Arc::new(keep.buf.to_vec()),
        ..keep
    };
    let w2 = Arc::downgrade(&owned.buf);
    push_host(
        &mut s,
        owned.picture().format,
        owned.host(),
        owned.host(),
        None,
    )
    .unwrap();
    drop(owned);
    assert!(w2.upgrade().is_some());
    s.reset();
    assert!(w2.upgrade().is_none());
    drop(w);
}

/// Without a backend that reads host planes, or without the chroma planes that a companion
/// metric reads, frames in the caller's memory take push's route (copied).
#[test]
fn push_host_falls_back_to_push() {
    let fr = frames(40, 36, 10, 4);
    let want = plain(ScorerConfig::default(), &fr);
    let mut cpu = Scorer::new(ScorerConfig {
        backend: BackendKind::Cpu,
        threads: 2,
        ..Default::default()
    })
    .unwrap();
    assert!(!cpu.takes_host_planes());
    assert_eq!(shared(&mut cpu, &fr), want);

    // A companion metric that reads chroma, and no chroma planes given (gray pictures here):
    // push's route.
    let cfg = ScorerConfig {
        companions: Companions {
            psnr: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let want = plain(cfg.clone(), &fr);
    let (mut s, seen) = host_scorer(cfg);
    assert!(s.takes_host_planes());
    assert_eq!(shared(&mut s, &fr), want);
    let seen = seen.lock().unwrap();
    assert_eq!((seen.host_jobs, seen.plain_jobs), (0, 4));
}

/// A frame of three planes (4:2:0, 4:2:2 or 4:4:4; or Y and one plane of U,V pairs, as NV12)
/// in one buffer with padded rows; the picture's chroma planes are GStreamer's size (rounded
/// up), the host planes libvmaf's (rounded down).
struct Yuv {
    buf: Arc<Vec<u8>>,
    w: usize,
    h: usize,
    bpc: u8,
    format: ChromaFormat,
    interleaved: bool,
    /// (offset, stride) of Y, U, V (U's for the pairs when interleaved).
    planes: [(usize, usize); 3],
}

impl Yuv {
    fn new(w: usize, h: usize, bpc: u8, format: ChromaFormat, t: usize, noise: usize) -> Yuv {
        Yuv::with_layout(w, h, bpc, format, false, t, noise)
    }

    fn with_layout(
        w: usize,
        h: usize,
        bpc: u8,
        format: ChromaFormat,
        interleaved: bool,
        t: usize,
        noise: usize,
    ) -> Yuv {
        let bps = if bpc > 8 { 2 } else { 1 };
        let (cw, ch) = format.chroma_size(w, h).unwrap();
        let max = (1usize << bpc) - 1;
        let mut planes = [(0, 0); 3];
        let mut buf = Vec::new();
        let value = |p: usize, x: usize, y: usize| {
            ((x * (5 + p) + y * 3 + t * 11 + p * 40) % 97 * max / 96 + (x * y + t + p) * noise % 13)
                .min(max)
        };
        let count = if interleaved { 2 } else { 3 };
        for (p, plane) in planes.iter_mut().enumerate().take(count) {
            let (pw, ph) = match (p, interleaved) {
                (0, _) => (w, h),
                (_, true) => (2 * cw, ch),
                (_, false) => (cw, ch),
            };
            let stride = pw * bps + 8 * (p + 1);
            *plane = (buf.len(), stride);
            let start = buf.len();
            buf.resize(start + stride * ph, 0xEE);
            for y in 0..ph {
                for x in 0..pw {
                    // Interleaved: U at even samples, V at odd ones.
                    let v = match (p, interleaved) {
                        (0, _) | (_, false) => value(p, x, y),
                        (_, true) => value(1 + x % 2, x / 2, y),
                    };
                    put(&mut buf, start + y * stride, x, bps, v);
                }
            }
        }
        Yuv {
            buf: Arc::new(buf),
            w,
            h,
            bpc,
            format,
            interleaved,
            planes,
        }
    }

    fn plane(&self, p: usize) -> PlaneRef<'_> {
        let (off, stride) = self.planes[p];
        PlaneRef {
            data: &self.buf[off..],
            stride,
        }
    }

    fn picture(&self) -> Picture<'_> {
        Picture {
            width: self.w,
            height: self.h,
            bpc: self.bpc,
            format: self.format,
            luma: self.plane(0),
            chroma: if self.interleaved {
                Chroma::Interleaved { uv: self.plane(1) }
            } else {
                Chroma::Planar {
                    u: self.plane(1),
                    v: self.plane(2),
                }
            },
        }
    }

    fn host(&self, p: usize, (w, h): (usize, usize)) -> HostPlane {
        let owner: Arc<dyn HostBytes> = self.buf.clone();
        let (off, stride) = self.planes[p];
        HostPlane::new(owner, off, stride, w, h, self.bpc).unwrap()
    }

    fn luma(&self) -> HostPlane {
        self.host(0, (self.w, self.h))
    }

    /// Cb, Cr (planar frames).
    fn chroma(&self) -> [HostPlane; 2] {
        let size = self.format.libvmaf_chroma_size(self.w, self.h).unwrap();
        [self.host(1, size), self.host(2, size)]
    }

    /// The chroma of a pair (both of this one's layout).
    fn host_chroma(&self, distorted: &Yuv) -> HostChroma {
        if self.interleaved {
            let (cw, ch) = self.format.libvmaf_chroma_size(self.w, self.h).unwrap();
            HostChroma::Interleaved {
                reference: self.host(1, (2 * cw, ch)),
                distorted: distorted.host(1, (2 * cw, ch)),
            }
        } else {
            HostChroma::Planar {
                reference: self.chroma(),
                distorted: distorted.chroma(),
            }
        }
    }

    fn set(&mut self, p: usize, x: usize, y: usize, v: u16) {
        let (off, stride) = self.planes[p];
        let buf = Arc::get_mut(&mut self.buf).expect("unique");
        let o = off + y * stride + 2 * x;
        buf[o..o + 2].copy_from_slice(&v.to_le_bytes());
    }
}

fn all_companions(ms_ssim: bool) -> Companions {
    Companions {
        psnr: true,
        ssim: true,
        ms_ssim,
        ciede: true,
        psnr_hvs: true,
        cambi: None,
        speed_chroma: None,
        speed_temporal: None,
    }
}

/// Both routes over the same frames: (push's scores and summary, the zero-copy route's,
/// the host jobs and plain jobs the backend saw).
#[allow(clippy::type_complexity)]
fn both_routes(
    cfg: &ScorerConfig,
    fr: &[(Yuv, Yuv)],
) -> (
    (Vec<FrameScores>, Summary),
    (Vec<FrameScores>, Summary),
    (usize, usize),
) {
    let mut plain = Scorer::new(ScorerConfig {
        backend: BackendKind::Cpu,
        threads: 2,
        ..cfg.clone()
    })
    .unwrap();
    let (mut s, seen) = host_scorer(cfg.clone());
    assert!(s.takes_host_planes());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (r, d) in fr {
        a.extend(plain.push(&r.picture(), &d.picture()).unwrap());
        let chroma = r.host_chroma(d);
        b.extend(push_host(&mut s, r.picture().format, r.luma(), d.luma(), Some(chroma)).unwrap());
    }
    let (rest_a, sum_a) = plain.finish().unwrap();
    let (rest_b, sum_b) = s.finish().unwrap();
    a.extend(rest_a);
    b.extend(rest_b);
    let seen = seen.lock().unwrap();
    ((a, sum_a), (b, sum_b), (seen.host_jobs, seen.plain_jobs))
}

/// Companion metrics through the zero-copy route (chroma planes in the caller's memory, at
/// libvmaf's size: odd sizes round down) give push's scores, at every chroma format and at
/// 8, 10, 12 and 16 bits, with subsampling, and MS-SSIM at a size it accepts.
#[test]
fn push_host_with_chroma_equals_push() {
    use ChromaFormat::*;
    // (.., interleaved: NV12 at 8 bits, P016 at 16)
    let cases = [
        (45, 37, 8u8, Yuv420, 1, false, false),
        (45, 37, 10, Yuv422, 1, false, false),
        (41, 36, 12, Yuv444, 1, false, false),
        (40, 35, 16, Yuv420, 1, false, false),
        (45, 37, 8, Yuv420, 2, false, false),
        (177, 176, 10, Yuv420, 1, true, false),
        (45, 37, 8, Yuv420, 1, false, true),
        (44, 38, 16, Yuv420, 2, false, true),
    ];
    let mut failures = Vec::new();
    for (w, h, bpc, format, subsample, ms, interleaved) in cases {
        let n = if ms { 3 } else { 5 };
        let fr: Vec<(Yuv, Yuv)> = (0..n)
            .map(|t| {
                (
                    Yuv::with_layout(w, h, bpc, format, interleaved, t * t, 0),
                    Yuv::with_layout(w, h, bpc, format, interleaved, t * t, 3),
                )
            })
            .collect();
        let mut companions = all_companions(ms);
        // libvmaf's PSNR-HVS takes at most 12 bits.
        companions.psnr_hvs = bpc <= 12;
        let cfg = ScorerConfig {
            subsample,
            companions,
            ..Default::default()
        };
        let (want, got, (host_jobs, plain_jobs)) = both_routes(&cfg, &fr);
        let case =
            format!("{w}x{h} {bpc}-bit {format:?} subsample {subsample} interleaved {interleaved}");
        if got != want {
            failures.push(format!("{case}: scores differ\n{got:?}\n{want:?}"));
        }
        if (host_jobs, plain_jobs) != (n, 0) {
            failures.push(format!("{case}: {host_jobs} host jobs, {plain_jobs} plain"));
        }
        let psnr_cb = want
            .0
            .iter()
            .filter(|f| f.metrics.iter().any(|(m, _)| m == "psnr_cb"));
        if psnr_cb.count() != n.div_ceil(subsample as usize) {
            failures.push(format!("{case}: frames with chroma scores missing"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Chroma planes that do not fit the pictures, or hold a sample above the depth, are refused
/// before the frame is taken (nothing changes: the next frame scores as in a clean clip).
#[test]
fn host_chroma_is_checked() {
    let cfg = ScorerConfig {
        companions: all_companions(false),
        ..Default::default()
    };
    let fr: Vec<(Yuv, Yuv)> = (0..3)
        .map(|t| {
            (
                Yuv::new(45, 37, 10, ChromaFormat::Yuv420, t, 0),
                Yuv::new(45, 37, 10, ChromaFormat::Yuv420, t, 3),
            )
        })
        .collect();
    let ((want, want_sum), _, _) = both_routes(&cfg, &fr);
    let (mut s, _) = host_scorer(cfg);
    let (r, d) = &fr[0];
    let push = |s: &mut Scorer, r: &Yuv, d: &Yuv, chroma: HostChroma| {
        push_host(s, r.picture().format, r.luma(), d.luma(), Some(chroma))
    };
    // GStreamer's rounded-up chroma size instead of libvmaf's.
    let wide = HostChroma::Planar {
        reference: [r.host(1, (23, 19)), r.host(2, (23, 19))],
        distorted: d.chroma(),
    };
    let e = push(&mut s, r, d, wide).unwrap_err();
    assert!(matches!(e, Error::Mismatch(_)), "{e}");
    // Interleaved planes must be twice libvmaf's chroma width (a plane of pairs).
    let narrow = HostChroma::Interleaved {
        reference: r.host(1, (22, 18)),
        distorted: d.host(1, (22, 18)),
    };
    let e = push(&mut s, r, d, narrow).unwrap_err();
    assert!(matches!(e, Error::Mismatch(_)), "{e}");
    // A 10-bit sample of 1024 in the distorted V plane.
    let mut bad = Yuv::new(45, 37, 10, ChromaFormat::Yuv420, 0, 3);
    bad.set(2, 21, 17, 1024);
    let chroma = r.host_chroma(&bad);
    let e = push(&mut s, r, &bad, chroma).unwrap_err();
    assert_eq!(
        e,
        Error::SampleRange {
            plane: "v",
            x: 21,
            y: 17,
            value: 1024,
            bpc: 10
        }
    );
    // A bad luma sample too: luma is named first, as push checks it first.
    let mut worse = Yuv::new(45, 37, 10, ChromaFormat::Yuv420, 0, 3);
    worse.set(2, 21, 17, 1024);
    worse.set(0, 44, 36, 2000);
    let e = push(&mut s, r, &worse, r.host_chroma(&worse)).unwrap_err();
    assert_eq!(
        e,
        Error::SampleRange {
            plane: "luma",
            x: 44,
            y: 36,
            value: 2000,
            bpc: 10
        }
    );
    assert_eq!(s.frames_pushed(), 0);
    let mut out = Vec::new();
    for (r, d) in &fr {
        out.extend(push(&mut s, r, d, r.host_chroma(d)).unwrap());
    }
    let (rest, sum) = s.finish().unwrap();
    out.extend(rest);
    assert_eq!((out, sum), (want, want_sum));
}

/// The CPU backend behind a wrapper that checks host planes' samples itself, after taking the
/// frame, as the CUDA backend does on the GPU: a bad frame is not computed, and its error comes
/// out of `receive` in the frame's place (submission order).
struct LateCheck {
    inner: CpuBackend,
    /// Submitted frames, oldest first, with the refusal of a bad one.
    order: VecDeque<(u64, Option<Error>)>,
    resets: Arc<Mutex<usize>>,
}

impl Backend for LateCheck {
    fn name(&self) -> &'static str {
        "late-check"
    }
    fn submit(&mut self, job: FrameJob) -> Result<()> {
        self.order.push_back((job.index, None));
        self.inner.submit(job)
    }
    fn receive(&mut self, wait: bool) -> Result<Option<(u64, FrameAccum)>> {
        match self.order.front() {
            None => Ok(None),
            Some((_, Some(_))) => Err(self.order.pop_front().unwrap().1.unwrap()),
            Some(&(index, None)) => {
                let r = self.inner.receive(wait)?;
                if let Some((i, _)) = &r {
                    assert_eq!(*i, index, "results in submission order");
                    self.order.pop_front();
                }
                Ok(r)
            }
        }
    }
    fn reset(&mut self) {
        *self.resets.lock().unwrap() += 1;
        self.order.clear();
        self.inner.reset();
    }
    fn configure(&mut self, cfg: &backend::ClipConfig) -> Result<()> {
        self.inner.configure(cfg)
    }
    fn accepts_host_planes(&self) -> bool {
        true
    }
    fn checks_host_ranges(&self) -> bool {
        true
    }
    fn submit_host(&mut self, job: FrameJob, host: HostFrame) -> Result<()> {
        let index = job.index;
        match crate::backend::host::check_ranges(&[
            (&host.reference, "luma"),
            (&host.distorted, "luma"),
        ]) {
            Err(e) => self.order.push_back((index, Some(e))),
            Ok(()) => {
                self.inner.submit(host.materialize(job))?;
                self.order.push_back((index, None));
            }
        }
        Ok(())
    }
}

/// A frame refused after it was taken (a backend that checks samples itself): the call that
/// reads its result returns `FrameRefused` naming the frame and its first bad sample, the clip
/// ends at the frame before it (later frames dropped, pushes refused until `finish`), and
/// `finish` gives exactly the scores and summary of a clip that ended there. For the bad frame
/// at each position, with and without the five-frame motion window.
#[test]
fn frames_refused_late_end_the_clip_before_them() {
    let fr = frames(40, 36, 10, 6);
    let mut failures = Vec::new();
    for five in [false, true] {
        let cfg = || ScorerConfig {
            model: if five {
                five_frame_window_model()
            } else {
                ScorerConfig::default().model
            },
            ..ScorerConfig::default()
        };
        for bad_at in 0..fr.len() {
            let want = plain(cfg(), &fr[..bad_at]);
            let resets = Arc::new(Mutex::new(0));
            let backend = LateCheck {
                inner: CpuBackend::new(2).unwrap(),
                order: VecDeque::new(),
                resets: Arc::clone(&resets),
            };
            let mut s = Scorer::with_backend(cfg(), Box::new(backend)).unwrap();
            let mut out = Vec::new();
            let mut refused = None;
            let mut after = Vec::new();
            for (i, (r, _)) in fr.iter().enumerate() {
                // frames()'s distorted frame, with two bad samples in frame `bad_at`.
                let mut dist = Frame::new(40, 36, 10, i * i, 3);
                if i == bad_at {
                    dist.set(39, 35, 1024);
                    dist.set(39, 34, 4000);
                }
                let got = push_host(&mut s, r.picture().format, r.host(), dist.host(), None);
                match (got, refused.is_some()) {
                    (Ok(f), false) => out.extend(f),
                    (Err(e @ Error::FrameRefused { .. }), false) => refused = Some(e),
                    (Err(e), false) => failures.push(format!("bad at {bad_at}: push {i}: {e}")),
                    (got, true) => after.push(format!("{got:?}")),
                }
            }
            if refused.is_none() {
                match s.poll(true) {
                    Err(e @ Error::FrameRefused { .. }) => refused = Some(e),
                    other => failures.push(format!("bad at {bad_at}: poll gave {other:?}")),
                }
            }
            let want_err = Error::FrameRefused {
                index: bad_at as u64,
                cause: Box::new(Error::SampleRange {
                    plane: "luma",
                    x: 39,
                    y: 34,
                    value: 4000,
                    bpc: 10,
                }),
            };
            if refused.as_ref() != Some(&want_err) {
                failures.push(format!("bad at {bad_at}: refusal {refused:?}"));
            }
            if let Some(a) = after.iter().find(|a| !a.starts_with("Err(State(")) {
                failures.push(format!(
                    "bad at {bad_at}: a push after the refusal gave {a}"
                ));
            }
            if s.frames_pushed() != bad_at as u64 {
                failures.push(format!(
                    "bad at {bad_at}: {} frames pushed after the cut",
                    s.frames_pushed()
                ));
            }
            let (rest, summary) = s.finish().unwrap();
            out.extend(rest);
            if (&out, &summary) != (&want.0, &want.1) {
                failures.push(format!(
                    "bad at {bad_at} (five-frame window {five}): scores differ from a clip of \
                     {bad_at} frames: {} frames vs {}",
                    out.len(),
                    want.0.len()
                ));
            }
            if *resets.lock().unwrap() == 0 {
                failures.push(format!("bad at {bad_at}: the backend was not reset"));
            }
            // The scorer is usable again: a fresh clip equal to a clean run.
            let again = shared(&mut s, &fr[..3]);
            if again != plain(cfg(), &fr[..3]) {
                failures.push(format!("bad at {bad_at}: the next clip differs"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
