//! The zero-copy input path on the GPU: frames in the caller's memory (`Frame::host`) with
//! backend=cuda, from pageable
//! memory (rows copied into the backend's staging) and from pinned memory (uploaded straight
//! from the caller's buffer), must give exactly `push`'s scores (and the CPU backend's), every
//! metric of every frame and the summary, with padded strides, at 8 and 10 bits.
//!
//! Without a GPU each test prints why and passes, unless VMAFGPU_REQUIRE_GPU=1 (then it fails).
#![cfg(feature = "cuda")]

use std::sync::{Arc, Weak};

use gstvmafgpu::backend::HostChroma;
use gstvmafgpu::backend::cuda::pinned::{PinnedHost, PinnedHostBuf};
use gstvmafgpu::backend::cuda::{self};
use gstvmafgpu::backend::{HostBytes, HostPlane};
use gstvmafgpu::engine::{
    BackendKind, Companions, Frame, FrameScores, HostUv, Scorer, ScorerConfig, Summary,
};
use gstvmafgpu::picture::{Chroma, ChromaFormat, Picture, PlaneRef};

/// Push a pair in the caller's memory (what the element hands over): both lumas and, when
/// given, the pair's chroma planes.
fn push_host(
    s: &mut Scorer,
    format: ChromaFormat,
    ref_luma: HostPlane,
    dist_luma: HostPlane,
    chroma: Option<HostChroma>,
) -> gstvmafgpu::Result<Vec<FrameScores>> {
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
        Frame::host(format, ref_luma, rc)?,
        Frame::host(format, dist_luma, dc)?,
    )
}

fn require_gpu() -> bool {
    std::env::var("VMAFGPU_REQUIRE_GPU").as_deref() == Ok("1")
}

fn quick() -> bool {
    std::env::var("VMAFGPU_PARITY_QUICK").as_deref() == Ok("1")
}

/// `r`, or None where CUDA is unusable (the test skips, saying why; a failure under
/// `VMAFGPU_REQUIRE_GPU=1`).
fn or_skip<T>(test: &str, r: Result<T, String>) -> Option<T> {
    match r {
        Ok(x) => Some(x),
        Err(why) => {
            assert!(
                !require_gpu(),
                "{test}: VMAFGPU_REQUIRE_GPU=1 but CUDA is unusable: {why}"
            );
            eprintln!("{test}: skipped, no usable CUDA device: {why}");
            None
        }
    }
}

/// A CUDA scorer and the pinned allocator, or None (skip, saying why).
fn cuda_or_skip(test: &str, cfg: &ScorerConfig) -> Option<(Scorer, PinnedHost)> {
    let r = match cuda::unavailable_reason() {
        Some(why) => Err(why),
        None => Scorer::new(ScorerConfig {
            backend: BackendKind::Cuda,
            ..cfg.clone()
        })
        .and_then(|s| PinnedHost::open(0).map(|p| (s, p)))
        .map_err(|e| e.to_string()),
    };
    or_skip(test, r)
}

/// [`cuda_or_skip`] with the default config and a CUDA backend whose host planes the engine
/// range-checks on the host (`CudaBackend::set_host_range_check`).
fn cuda_host_scan_or_skip(test: &str) -> Option<(Scorer, PinnedHost)> {
    let r = match cuda::unavailable_reason() {
        Some(why) => Err(why),
        None => cuda::CudaBackend::new(0)
            .and_then(|mut b| {
                b.set_host_range_check(true);
                Scorer::with_backend(ScorerConfig::default(), Box::new(b))
            })
            .and_then(|s| PinnedHost::open(0).map(|p| (s, p)))
            .map_err(|e| e.to_string()),
    };
    or_skip(test, r)
}

/// Natural-looking luma (smooth gradients, texture, noise), `stride` bytes a row.
fn luma(w: usize, h: usize, bpc: u8, stride: usize, t: f64, noise: u64, seed: u64) -> Vec<u8> {
    let max = ((1u32 << bpc) - 1) as f64;
    let bps = if bpc > 8 { 2 } else { 1 };
    let mut s = seed | 1;
    let mut out = vec![0x5Au8; stride * h];
    for y in 0..h {
        for x in 0..w {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            let v = 0.5
                + 0.3 * (6.0 * fx + 4.0 * fy + t).sin() * (3.0 * fy - t).cos()
                + 0.08 * ((x * 7 + y * 13) % 17) as f64 / 17.0
                + ((s % 1000) as f64 / 1000.0 - 0.5) * 0.01 * noise as f64;
            let v = (v.clamp(0.0, 1.0) * max) as u16;
            let o = y * stride + x * bps;
            if bps == 2 {
                out[o..o + 2].copy_from_slice(&v.to_le_bytes());
            } else {
                out[o] = v as u8;
            }
        }
    }
    out
}

struct Pair {
    r: Vec<u8>,
    d: Vec<u8>,
}

fn picture(buf: &[u8], w: usize, h: usize, bpc: u8, stride: usize) -> Picture<'_> {
    Picture {
        width: w,
        height: h,
        bpc,
        format: ChromaFormat::Gray,
        luma: PlaneRef { data: buf, stride },
        chroma: Chroma::None,
    }
}

type Scores = (Vec<FrameScores>, Summary);

fn run(
    s: &mut Scorer,
    pairs: &[Pair],
    (w, h, bpc, stride): (usize, usize, u8, usize),
    owner: &mut dyn FnMut(&[u8]) -> Arc<dyn HostBytes>,
) -> Scores {
    let mut out = Vec::new();
    for p in pairs {
        let (ro, do_) = (owner(&p.r), owner(&p.d));
        let rh = HostPlane::new(ro, 0, stride, w, h, bpc).unwrap();
        let dh = HostPlane::new(do_, 0, stride, w, h, bpc).unwrap();
        out.extend(push_host(s, picture(&p.r, w, h, bpc, stride).format, rh, dh, None).unwrap());
    }
    let (rest, summary) = s.finish().unwrap();
    out.extend(rest);
    (out, summary)
}

fn plain(s: &mut Scorer, pairs: &[Pair], (w, h, bpc, stride): (usize, usize, u8, usize)) -> Scores {
    let mut out = Vec::new();
    for p in pairs {
        out.extend(
            s.push(
                &picture(&p.r, w, h, bpc, stride),
                &picture(&p.d, w, h, bpc, stride),
            )
            .unwrap(),
        );
    }
    let (rest, summary) = s.finish().unwrap();
    out.extend(rest);
    (out, summary)
}

#[test]
fn push_host_on_cuda_equals_push_pinned_and_pageable() {
    let test = "push_host_on_cuda_equals_push_pinned_and_pageable";
    let mut sizes = vec![(67usize, 45usize, 10u8), (176, 144, 8), (1920, 1080, 8)];
    if !quick() {
        sizes.push((3840, 2160, 10));
        sizes.push((1281, 719, 12));
    }
    let mut bad = Vec::new();
    for cfg in [
        ScorerConfig::default(),
        ScorerConfig {
            subsample: 2,
            ..Default::default()
        },
    ] {
        let Some((mut gpu, pinned)) = cuda_or_skip(test, &cfg) else {
            return;
        };
        assert!(gpu.takes_host_planes());
        let mut cpu = Scorer::new(ScorerConfig {
            backend: BackendKind::Cpu,
            ..cfg.clone()
        })
        .unwrap();
        for &(w, h, bpc) in &sizes {
            let bps = if bpc > 8 { 2 } else { 1 };
            // Padded rows (a decoder's stride), odd padding for 8-bit.
            let stride = w * bps + if bpc > 8 { 64 } else { 37 };
            let n = 6;
            let pairs: Vec<Pair> = (0..n)
                .map(|i| Pair {
                    r: luma(w, h, bpc, stride, i as f64 * 0.05, 1, 11 + i),
                    d: luma(w, h, bpc, stride, i as f64 * 0.05, 4, 97 + i),
                })
                .collect();
            let g = (w, h, bpc, stride);
            let want = plain(&mut cpu, &pairs, g);
            let via_push = plain(&mut gpu, &pairs, g);
            let mut weak: Vec<Weak<dyn HostBytes>> = Vec::new();
            let mut pageable = |b: &[u8]| -> Arc<dyn HostBytes> {
                let a: Arc<dyn HostBytes> = Arc::new(b.to_vec());
                weak.push(Arc::downgrade(&a));
                a
            };
            let via_pageable = run(&mut gpu, &pairs, g, &mut pageable);
            let mut pinned_owner = |b: &[u8]| -> Arc<dyn HostBytes> {
                let mut p: PinnedHostBuf = pinned.alloc(b.len()).expect("pinned alloc");
                p.as_mut().copy_from_slice(b);
                let a: Arc<dyn HostBytes> = Arc::new(p);
                weak.push(Arc::downgrade(&a));
                a
            };
            let via_pinned = run(&mut gpu, &pairs, g, &mut pinned_owner);
            let label = format!("{w}x{h} {bpc}-bit subsample {}", cfg.subsample);
            assert!(!want.0.is_empty(), "{label}: no frames scored");
            for (name, got) in [
                ("push", &via_push),
                ("push_host pageable", &via_pageable),
                ("push_host pinned", &via_pinned),
            ] {
                if *got != want {
                    bad.push(format!("{label}: {name} differs from the CPU backend"));
                }
            }
            let alive = weak.iter().filter(|w| w.upgrade().is_some()).count();
            if alive != 0 {
                bad.push(format!(
                    "{label}: {alive} of {} host buffers still held after finish()",
                    weak.len()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Out-of-range samples are refused, the error naming the first bad sample in row order
/// (reference before distorted): pinned and pageable planes, 10 and 12 bits, a bad sample in
/// either plane, in a 4-sample word or the kernel's tail, one above the maximum or far above.
///
/// By default the CUDA backend checks on the GPU and refuses a frame when its result is read:
/// some later call returns `FrameRefused` for it, and the clip ends before it (`finish` gives
/// exactly the scores of a clip of the frames before it). With the host scan
/// (`CudaBackend::set_host_range_check`) the engine scans on the host: the push itself fails
/// and the clip goes on unchanged. Both are tested.
#[test]
fn cuda_push_host_refuses_out_of_range_samples() {
    refuses_out_of_range_samples("cuda_push_host_refuses_out_of_range_samples", false);
}

/// [`cuda_push_host_refuses_out_of_range_samples`] with the engine's host scan.
#[test]
fn cuda_push_host_refuses_out_of_range_samples_host_scan() {
    refuses_out_of_range_samples(
        "cuda_push_host_refuses_out_of_range_samples_host_scan",
        true,
    );
}

fn refuses_out_of_range_samples(test: &str, on_host: bool) {
    let Some((mut gpu, pinned)) = (if on_host {
        cuda_host_scan_or_skip(test)
    } else {
        cuda_or_skip(test, &ScorerConfig::default())
    }) else {
        return;
    };
    let mut bad = Vec::new();
    let mut refusals = 0;
    // w * h % 4 = 0 and 3 (the kernel's tail).
    for (w, h, bpc) in [(96usize, 64usize, 10u8), (97, 67, 12), (1920, 1080, 10)] {
        let stride = 2 * w + 32;
        let max = (1u16 << bpc) - 1;
        let pairs: Vec<Pair> = (0..5)
            .map(|i| Pair {
                r: luma(w, h, bpc, stride, i as f64 * 0.1, 1, 5 + i),
                d: luma(w, h, bpc, stride, i as f64 * 0.1, 3, 50 + i),
            })
            .collect();
        let g = (w, h, bpc, stride);
        let want = plain(&mut gpu, &pairs, g);
        // A clip of the first k frames, for each k a case cuts at.
        let prefix: Vec<Scores> = (0..4).map(|k| plain(&mut gpu, &pairs[..k], g)).collect();
        // (frame, plane 0 = reference / 1 = distorted, x, y, value); a second bad sample later
        // in row order (or in the distorted plane) must not be the one named.
        let cases = [
            (1, 1, 7, 10, max + 1),
            (2, 0, w - 1, h - 1, u16::MAX),
            (3, 1, 0, 0, 1 << 15),
            (3, 0, w - 2, h - 1, max + 1),
        ];
        // The pair with the case's bad samples.
        let spoil = |p: &Pair, (_, plane, x, y, value): (usize, usize, usize, usize, u16)| {
            let mut planes = [p.r.clone(), p.d.clone()];
            let o = y * stride + 2 * x;
            planes[plane][o..o + 2].copy_from_slice(&value.to_le_bytes());
            let lo = if plane == 0 {
                0
            } else {
                (y * stride + 2 * x + 2).min((h - 1) * stride + 2 * (w - 1))
            };
            if lo != o || plane != 1 {
                planes[1][lo..lo + 2].copy_from_slice(&(max + 1).to_le_bytes());
            }
            planes
        };
        let named = |got: &gstvmafgpu::Error,
                     (_, _, x, y, value): (usize, usize, usize, usize, u16)| {
            matches!(got, gstvmafgpu::Error::SampleRange { x: ex, y: ey, value: ev, bpc: eb, .. }
                if (*ex, *ey, *ev, *eb) == (x, y, value, bpc))
        };
        for on_pinned in [false, true] {
            let mem = if on_pinned { "pinned" } else { "pageable" };
            let owner = |b: &[u8]| -> Arc<dyn HostBytes> {
                if on_pinned {
                    let mut p: PinnedHostBuf = pinned.alloc(b.len()).expect("pinned alloc");
                    p.as_mut().copy_from_slice(b);
                    Arc::new(p)
                } else {
                    Arc::new(b.to_vec())
                }
            };
            let hp = |b: &[u8]| HostPlane::new(owner(b), 0, stride, w, h, bpc).unwrap();
            let push = |gpu: &mut Scorer, r: &[u8], d: &[u8]| {
                push_host(
                    gpu,
                    picture(r, w, h, bpc, stride).format,
                    hp(r),
                    hp(d),
                    None,
                )
            };
            if on_host {
                // Refused at the push; the clip goes on as if the bad pairs were never pushed.
                let mut out = Vec::new();
                for (i, p) in pairs.iter().enumerate() {
                    for &case in cases.iter().filter(|c| c.0 == i) {
                        let [r, d] = spoil(p, case);
                        refusals += 1;
                        match push(&mut gpu, &r, &d) {
                            Err(e) if named(&e, case) => {}
                            other => {
                                bad.push(format!("{w}x{h} {bpc}-bit {mem} {case:?}: got {other:?}"))
                            }
                        }
                    }
                    out.extend(push(&mut gpu, &p.r, &p.d).unwrap());
                }
                let (rest, summary) = gpu.finish().unwrap();
                out.extend(rest);
                if (&out, &summary) != (&want.0, &want.1) {
                    bad.push(format!(
                        "{w}x{h} {bpc}-bit {mem}: the clip around the refused frames differs"
                    ));
                }
                continue;
            }
            // Refused when its result is read; the clip ends before it.
            for case in cases {
                refusals += 1;
                let label = format!("{w}x{h} {bpc}-bit {mem} {case:?}");
                let mut out = Vec::new();
                let mut refused = None;
                for (i, p) in pairs.iter().enumerate() {
                    let got = if i == case.0 {
                        let [r, d] = spoil(p, case);
                        push(&mut gpu, &r, &d)
                    } else {
                        push(&mut gpu, &p.r, &p.d)
                    };
                    match (got, refused.is_some()) {
                        (Ok(f), false) => out.extend(f),
                        (Err(e), false) => refused = Some(e),
                        (Err(gstvmafgpu::Error::State(_)), true) => {}
                        (other, true) => {
                            bad.push(format!("{label}: push {i} after the refusal: {other:?}"))
                        }
                    }
                }
                if refused.is_none() {
                    refused = gpu.poll(true).err();
                }
                match &refused {
                    Some(gstvmafgpu::Error::FrameRefused { index, cause })
                        if *index == case.0 as u64 && named(cause, case) => {}
                    other => bad.push(format!("{label}: refusal {other:?}")),
                }
                let (rest, summary) = gpu.finish().unwrap();
                out.extend(rest);
                if (&out, &summary) != (&prefix[case.0].0, &prefix[case.0].1) {
                    bad.push(format!(
                        "{label}: the clip before the refused frame differs"
                    ));
                }
            }
            // Usable again: a clean clip gives the clean scores.
            let mut out = Vec::new();
            for p in &pairs {
                out.extend(push(&mut gpu, &p.r, &p.d).unwrap());
            }
            let (rest, summary) = gpu.finish().unwrap();
            out.extend(rest);
            if (&out, &summary) != (&want.0, &want.1) {
                bad.push(format!(
                    "{w}x{h} {bpc}-bit {mem}: a clean clip after the refusals differs"
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {refusals} refusals wrong:\n{}",
        bad.len(),
        bad.join("\n")
    );
    let how = if on_host {
        "at the push (host scan), clips unchanged"
    } else {
        "when read (GPU check), clips cut before them"
    };
    eprintln!("{test}: {refusals} refusals, each naming its first bad sample, {how}");
}

/// A YUV frame in one buffer, planes one after the other with padded rows: (bytes, (offset,
/// stride) of Y, U, V; U's for the plane of U,V pairs when interleaved, as NV12). The chroma
/// planes are GStreamer's size (odd sizes round up).
type Yuv = (Vec<u8>, [(usize, usize); 3]);

fn yuv(
    (w, h, bpc): (usize, usize, u8),
    (format, interleaved): (ChromaFormat, bool),
    t: f64,
    noise: u64,
    seed: u64,
) -> Yuv {
    let bps = if bpc > 8 { 2 } else { 1 };
    let (cw, ch) = format.chroma_size(w, h).unwrap();
    let mut buf = Vec::new();
    let mut at = [(0, 0); 3];
    let planes = if interleaved { 2 } else { 3 };
    for (p, a) in at.iter_mut().enumerate().take(planes) {
        let (pw, ph) = match (p, interleaved) {
            (0, _) => (w, h),
            (_, true) => (2 * cw, ch),
            (_, false) => (cw, ch),
        };
        let stride = pw * bps + 24 + 13 * p * (2 - bps);
        *a = (buf.len(), stride);
        buf.extend(luma(
            pw,
            ph,
            bpc,
            stride,
            t + p as f64,
            noise,
            seed + 7 * p as u64,
        ));
    }
    (buf, at)
}

fn yuv_picture<'a>(
    buf: &'a [u8],
    at: &[(usize, usize); 3],
    (w, h, bpc): (usize, usize, u8),
    (format, interleaved): (ChromaFormat, bool),
) -> Picture<'a> {
    let plane = |p: usize| PlaneRef {
        data: &buf[at[p].0..],
        stride: at[p].1,
    };
    Picture {
        width: w,
        height: h,
        bpc,
        format,
        luma: plane(0),
        chroma: if interleaved {
            Chroma::Interleaved { uv: plane(1) }
        } else {
            Chroma::Planar {
                u: plane(1),
                v: plane(2),
            }
        },
    }
}

/// A `yuv` frame's planes in the caller's memory, as `Frame::host` takes them: the
/// bytes copied into one owner (pinned memory from `pinned`, else a `Vec`), returned for the
/// caller to watch; the luma and the chroma at libvmaf's size (Cb,Cr pairs where interleaved),
/// each `shift` bits up in its words (0: plain samples).
fn host_yuv(
    (b, at): (&[u8], &[(usize, usize); 3]),
    (w, h, bpc): (usize, usize, u8),
    (format, interleaved): (ChromaFormat, bool),
    shift: u8,
    pinned: Option<&PinnedHost>,
) -> (
    HostPlane,
    gstvmafgpu::backend::HostChroma,
    Arc<dyn HostBytes>,
) {
    let owner: Arc<dyn HostBytes> = match pinned {
        Some(pinned) => {
            let mut p: PinnedHostBuf = pinned.alloc(b.len()).expect("pinned");
            p.as_mut().copy_from_slice(b);
            Arc::new(p)
        }
        None => Arc::new(b.to_vec()),
    };
    let plane = |p: usize, (pw, ph): (usize, usize)| {
        HostPlane::new(Arc::clone(&owner), at[p].0, at[p].1, pw, ph, bpc)
            .and_then(|x| x.with_shift(shift))
            .unwrap()
    };
    let (cw, ch) = format.libvmaf_chroma_size(w, h).unwrap();
    (
        plane(0, (w, h)),
        if interleaved {
            HostChroma::Interleaved {
                reference: plane(1, (2 * cw, ch)),
                distorted: plane(1, (2 * cw, ch)),
            }
        } else {
            HostChroma::Planar {
                reference: [plane(1, (cw, ch)), plane(2, (cw, ch))],
                distorted: [plane(1, (cw, ch)), plane(2, (cw, ch))],
            }
        },
        owner,
    )
}

/// The chroma of a pair from the reference's and the distorted picture's [`host_yuv`].
fn pair_chroma(r: HostChroma, d: HostChroma) -> HostChroma {
    use HostChroma::*;
    match (r, d) {
        (
            Interleaved { reference, .. },
            Interleaved {
                reference: dist, ..
            },
        ) => Interleaved {
            reference,
            distorted: dist,
        },
        (
            Planar { reference, .. },
            Planar {
                reference: dist, ..
            },
        ) => Planar {
            reference,
            distorted: dist,
        },
        _ => panic!("one picture interleaved, the other not"),
    }
}

/// A 2-byte `yuv` frame as an MSB-aligned format stores it: every word shifted up by `shift`,
/// its low bits from a hash of its position (the padding between rows too: nobody reads it).
/// `shift` 0 gives the frame as it is.
fn msb_words((b, at): &Yuv, shift: u8) -> Yuv {
    let mut out = b.clone();
    if shift > 0 {
        for (k, c) in out.chunks_exact_mut(2).enumerate() {
            let v = u16::from_le_bytes([c[0], c[1]]);
            let low = (k as u16).wrapping_mul(40503) >> (16 - shift);
            c.copy_from_slice(&((v << shift) | low).to_le_bytes());
        }
    }
    (out, *at)
}

/// A CUDA scorer with `companions` (and the pinned allocator) and a CPU scorer of the same
/// configuration, or None (skip, saying why).
fn cuda_and_cpu(test: &str, companions: Companions) -> Option<(Scorer, PinnedHost, Scorer)> {
    let cfg = ScorerConfig {
        companions,
        ..Default::default()
    };
    let (gpu, pinned) = cuda_or_skip(test, &cfg)?;
    let cpu = Scorer::new(ScorerConfig {
        backend: BackendKind::Cpu,
        ..cfg
    })
    .unwrap();
    Some((gpu, pinned, cpu))
}

/// Every companion metric.
const ALL_FIVE: Companions = Companions {
    psnr: true,
    ssim: true,
    ms_ssim: true,
    ciede: true,
    psnr_hvs: true,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

/// The metrics of GPU frame `g` that differ from CPU frame `c`: every metric equal, CIEDE2000
/// within `ciede_bound` (the GPU adds its per-pixel values in another order).
fn metrics_differ(
    label: &str,
    g: &FrameScores,
    c: &FrameScores,
    (w, h): (usize, usize),
) -> Vec<String> {
    use gstvmafgpu::backend::gpu::companion_plan::ciede_bound;
    let mut bad = Vec::new();
    for ((name, gv), (cname, cv)) in g.metrics.iter().zip(&c.metrics) {
        let ok = name == cname
            && if name == "ciede2000" {
                (gv - cv).abs() <= ciede_bound(w, h)
            } else {
                gv == cv
            };
        if !ok {
            bad.push(format!(
                "{label}: frame {} {name} {gv:e} vs the CPU's {cname} {cv:e}",
                g.index
            ));
        }
    }
    bad
}

/// Companion metrics through the zero-copy route on the GPU: `Scorer::push_frames` with host frames and
/// pageable planes (copied into staging) and pinned planes (uploaded from where they are) gives
/// exactly the scores of `push` on the GPU (the same kernels on the same samples), and those
/// equal the CPU backend's (CIEDE2000 within `ciede_bound`, as in companion_parity); the
/// caller's buffers are all let go by `finish`. 4:2:0, 4:2:2 and 4:4:4, odd sizes (libvmaf's
/// chroma rounds down), 8 to 12 bits, 1080p 8-bit (the CIEDE2000 table), and interleaved
/// chroma (NV12, P016: split on the GPU).
#[test]
fn push_host_with_chroma_on_cuda_equals_push() {
    let test = "push_host_with_chroma_on_cuda_equals_push";
    use ChromaFormat::*;
    // (.., (format, interleaved: NV12 at 8 bits, P016 at 16))
    let mut cases = vec![
        (177usize, 179usize, 8u8, (Yuv420, false)),
        (181, 178, 10, (Yuv422, false)),
        (180, 177, 12, (Yuv444, false)),
        (1920, 1080, 8, (Yuv420, false)),
        (179, 177, 8, (Yuv420, true)),
        (1920, 1080, 8, (Yuv420, true)),
        (178, 180, 16, (Yuv420, true)),
    ];
    if !quick() {
        cases.push((1281, 719, 10, (Yuv420, false)));
    }
    let companions = ALL_FIVE;
    let mut bad = Vec::new();
    // libvmaf's PSNR-HVS takes at most 12 bits: a scorer without it for the 16-bit frames.
    let mut scorers = Vec::new();
    for subsample in [1, 2] {
        for psnr_hvs in [true, false] {
            let cfg = ScorerConfig {
                companions: Companions {
                    psnr_hvs,
                    ..companions
                },
                subsample,
                ..Default::default()
            };
            let Some((gpu, pinned)) = cuda_or_skip(test, &cfg) else {
                return;
            };
            assert!(gpu.takes_host_planes());
            let cpu = Scorer::new(ScorerConfig {
                backend: BackendKind::Cpu,
                ..cfg.clone()
            })
            .unwrap();
            scorers.push((subsample, psnr_hvs, gpu, pinned, cpu));
        }
    }
    for (subsample, psnr_hvs, gpu, pinned, cpu) in &mut scorers {
        let (subsample, gpu, pinned, cpu) = (*subsample, gpu, &*pinned, cpu);
        let cases = cases.iter().filter(|c| (c.2 <= 12) == *psnr_hvs);
        for &(w, h, bpc, format) in cases {
            let g = (w, h, bpc);
            let label = format!("{w}x{h} {bpc}-bit {format:?} subsample {subsample}");
            let frames: Vec<[Yuv; 2]> = (0..4)
                .map(|i| {
                    let t = i as f64 * 0.05;
                    [yuv(g, format, t, 1, 11 + i), yuv(g, format, t, 4, 97 + i)]
                })
                .collect();
            let plain = |s: &mut Scorer| -> Scores {
                let mut out = Vec::new();
                for [(r, ra), (d, da)] in &frames {
                    let (rp, dp) = (yuv_picture(r, ra, g, format), yuv_picture(d, da, g, format));
                    out.extend(s.push(&rp, &dp).unwrap());
                }
                let (rest, summary) = s.finish().unwrap();
                out.extend(rest);
                (out, summary)
            };
            let want = plain(cpu);
            let via_push = plain(gpu);
            let mut weak: Vec<Weak<dyn HostBytes>> = Vec::new();
            let mut shared = |s: &mut Scorer, on_pinned: bool| -> Scores {
                let mut out = Vec::new();
                for [(r, ra), (d, da)] in &frames {
                    let on = on_pinned.then_some(pinned);
                    let (rl, rc, ro) = host_yuv((r, ra), g, format, 0, on);
                    let (dl, dc, dop) = host_yuv((d, da), g, format, 0, on);
                    weak.extend([Arc::downgrade(&ro), Arc::downgrade(&dop)]);
                    let chroma = pair_chroma(rc, dc);
                    out.extend(push_host(s, format.0, rl, dl, Some(chroma)).unwrap());
                }
                let (rest, summary) = s.finish().unwrap();
                out.extend(rest);
                (out, summary)
            };
            let via_pageable = shared(gpu, false);
            let via_pinned = shared(gpu, true);
            for (name, got) in [("pageable", &via_pageable), ("pinned", &via_pinned)] {
                if *got != via_push {
                    bad.push(format!(
                        "{label}: push_host_with_chroma {name} differs from push"
                    ));
                }
            }
            let alive = weak.iter().filter(|w| w.upgrade().is_some()).count();
            if alive != 0 {
                bad.push(format!(
                    "{label}: {alive} host buffers still held after finish()"
                ));
            }
            // The GPU against the CPU: every metric equal, CIEDE2000 within its bound.
            let frames_with =
                |s: &Scores, m: &str| s.0.iter().filter(|f| f.get(m).is_some()).count();
            for m in ["psnr_cb", "ciede2000", "psnr_hvs", "float_ms_ssim"] {
                let expected: usize = if m == "psnr_hvs" && bpc > 12 { 0 } else { 4 };
                if frames_with(&want, m) != expected.div_ceil(subsample as usize) {
                    bad.push(format!("{label}: the CPU run lacks {m}"));
                }
            }
            if via_push.0.len() != want.0.len() {
                bad.push(format!(
                    "{label}: {} frames vs the CPU's {}",
                    via_push.0.len(),
                    want.0.len()
                ));
            }
            for (g, c) in via_push.0.iter().zip(&want.0) {
                bad.extend(metrics_differ(&label, g, c, (w, h)));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The companion metrics widen the 8-bit luma planes VMAF uploaded from VMAF's buffers (on
/// VMAF's stream) instead of uploading them again, and copy deeper ones from there (P010's
/// shifted by VMAF's kernel): over many frames of distinct content, more than the backend's slots and the
/// companions' ring buffers hold at once (so every buffer is reused while other frames are in
/// flight), each frame's companion scores through `push`, host frames through `push_frames` from
/// pageable and from pinned memory equal the CPU backend's for that frame (CIEDE2000 within
/// its bound): a frame scored on another frame's luma, or on a buffer rewritten before its
/// widening, would not. (Staging, page-locked on first use, is reached by `push` and the
/// pageable route.)
#[test]
fn companions_on_vmafs_luma_over_many_frames_equal_cpu() {
    use gstvmafgpu::backend::cuda::companion::MAX_RING;
    let test = "companions_on_vmafs_luma_over_many_frames_equal_cpu";
    use ChromaFormat::*;
    let n = 3 * (cuda::SLOTS + MAX_RING);
    let Some((mut gpu, pinned, mut cpu)) = cuda_and_cpu(test, ALL_FIVE) else {
        return;
    };
    let mut bad = Vec::new();
    // (.., interleaved, shift): the last is P010, whose luma the companions copy from VMAF's
    // buffer, shifted there.
    for (w, h, bpc, format, interleaved, shift) in [
        (321usize, 243usize, 8u8, Yuv420, false, 0u8),
        (250, 186, 10, Yuv422, false, 0),
        (246, 190, 10, Yuv420, true, 6),
    ] {
        let g = (w, h, bpc);
        let f = (format, interleaved);
        let label = format!("{w}x{h} {bpc}-bit {format:?} {shift} up");
        // Distinct content each frame: other noise, other seeds, moving gradients.
        let frames: Vec<[Yuv; 2]> = (0..n)
            .map(|i| {
                let t = i as f64 * 0.13;
                let i = i as u64;
                [
                    yuv(g, f, t, 1 + i % 3, 5 + 2 * i),
                    yuv(g, f, t, 2 + i % 5, 1001 + 3 * i),
                ]
            })
            .collect();
        fn pictures<'a>(
            [(r, ra), (d, da)]: &'a [Yuv; 2],
            g: (usize, usize, u8),
            f: (ChromaFormat, bool),
        ) -> (Picture<'a>, Picture<'a>) {
            (yuv_picture(r, ra, g, f), yuv_picture(d, da, g, f))
        }
        let mut want = Vec::new();
        for fr in &frames {
            let (rp, dp) = pictures(fr, g, f);
            want.extend(cpu.push(&rp, &dp).unwrap());
        }
        want.extend(cpu.finish().unwrap().0);
        // `push` reads the pictures' planes: plain samples only.
        let routes = if shift == 0 {
            &["push", "pageable", "pinned"][..]
        } else {
            &["pageable", "pinned"][..]
        };
        for &route in routes {
            let mut got = Vec::new();
            for fr in &frames {
                if route == "push" {
                    let (rp, dp) = pictures(fr, g, f);
                    got.extend(gpu.push(&rp, &dp).unwrap());
                    continue;
                }
                let on = (route == "pinned").then_some(&pinned);
                let stored = [msb_words(&fr[0], shift), msb_words(&fr[1], shift)];
                let [(r, ra), (d, da)] = &stored;
                let (rl, rc, _) = host_yuv((r, ra), g, f, shift, on);
                let (dl, dc, _) = host_yuv((d, da), g, f, shift, on);
                let chroma = pair_chroma(rc, dc);
                got.extend(push_host(&mut gpu, f.0, rl, dl, Some(chroma)).unwrap());
            }
            got.extend(gpu.finish().unwrap().0);
            if got.len() != want.len() || got.len() != n {
                bad.push(format!(
                    "{label} {route}: {} frames, the CPU {} of {n}",
                    got.len(),
                    want.len()
                ));
            }
            for (gf, cf) in got.iter().zip(&want) {
                if gf.metrics.len() != cf.metrics.len() {
                    bad.push(format!(
                        "{label} {route}: frame {}: {} metrics vs {}",
                        gf.index,
                        gf.metrics.len(),
                        cf.metrics.len()
                    ));
                }
                bad.extend(metrics_differ(&format!("{label} {route}"), gf, cf, (w, h)));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// MSB-aligned planes on the zero-copy route: the caller's words, their low bits holding
/// anything (0xFFFF included), marked with their shift (`HostPlane::with_shift`). P010's 10 bits
/// 6 up and a 12-bit layout 4 up fill their words: VMAF's planes are uploaded as stored (from
/// pinned memory directly) and shifted on the GPU; 10 bits 4 up do not: shifted while staged.
/// The companion metrics copy the luma from VMAF's shifted buffer; their chroma is shifted while
/// staged. VMAF, its features and all five
/// companion metrics of every frame equal the CPU backend's on the plain (LSB-aligned) samples
/// (CIEDE2000 within its bound), from pageable and pinned memory, with interleaved chroma (P010)
/// and planar, and no frame is refused; where the bits do not fill the word, a word above them
/// is refused (its sample is above 2^bpc - 1).
#[test]
fn msb_aligned_planes_on_cuda_equal_cpu() {
    let test = "msb_aligned_planes_on_cuda_equal_cpu";
    use ChromaFormat::*;
    let Some((mut gpu, pinned, mut cpu)) = cuda_and_cpu(test, ALL_FIVE) else {
        return;
    };
    assert!(gpu.takes_host_planes());
    let mut bad = Vec::new();
    let mut cases = vec![
        (179usize, 177usize, 10u8, 6u8, (Yuv420, true)),
        (181, 178, 12, 4, (Yuv422, false)),
        (180, 179, 10, 4, (Yuv444, false)),
    ];
    if !quick() {
        cases.push((1920, 1080, 10, 6, (Yuv420, true)));
    }
    for (w, h, bpc, shift, f) in cases {
        let g = (w, h, bpc);
        let label = format!("{w}x{h} {bpc}-bit {f:?} {shift} up");
        let frames: Vec<[Yuv; 2]> = (0..5)
            .map(|i| {
                let t = i as f64 * 0.07;
                let i = i as u64;
                [yuv(g, f, t, 1, 21 + i), yuv(g, f, t, 3, 301 + i)]
            })
            .collect();
        let mut want = Vec::new();
        for [(r, ra), (d, da)] in &frames {
            let (rp, dp) = (yuv_picture(r, ra, g, f), yuv_picture(d, da, g, f));
            want.extend(cpu.push(&rp, &dp).unwrap());
        }
        want.extend(cpu.finish().unwrap().0);
        for route in ["pageable", "pinned"] {
            let mut got = Vec::new();
            for fr in &frames {
                let [(r, ra), (d, da)] = [msb_words(&fr[0], shift), msb_words(&fr[1], shift)];
                let on = (route == "pinned").then_some(&pinned);
                let (rl, rc, _) = host_yuv((&r, &ra), g, f, shift, on);
                let (dl, dc, _) = host_yuv((&d, &da), g, f, shift, on);
                let chroma = pair_chroma(rc, dc);
                match push_host(&mut gpu, f.0, rl, dl, Some(chroma)) {
                    Ok(s) => got.extend(s),
                    Err(e) => bad.push(format!("{label} {route}: refused: {e}")),
                }
            }
            match gpu.finish() {
                Ok((rest, _)) => got.extend(rest),
                Err(e) => bad.push(format!("{label} {route}: finish: {e}")),
            }
            if got.len() != want.len() || got.len() != frames.len() {
                bad.push(format!(
                    "{label} {route}: {} frames, the CPU {} of {}",
                    got.len(),
                    want.len(),
                    frames.len()
                ));
            }
            // A word above the sample's bits (10 bits 4 up: 0x4000 is 1024) in frame 2's
            // distorted luma: refused, at the push (host scan) or when read (GPU check).
            if shift + bpc < 16 {
                let mut refused = None;
                for (i, fr) in frames.iter().enumerate() {
                    let [(r, ra), (mut d, da)] =
                        [msb_words(&fr[0], shift), msb_words(&fr[1], shift)];
                    if i == 2 {
                        let o = da[0].0 + 3 * da[0].1 + 2 * 5;
                        d[o..o + 2].copy_from_slice(&(1u16 << (bpc + shift)).to_le_bytes());
                    }
                    let on = (route == "pinned").then_some(&pinned);
                    let (rl, rc, _) = host_yuv((&r, &ra), g, f, shift, on);
                    let (dl, dc, _) = host_yuv((&d, &da), g, f, shift, on);
                    let pushed = push_host(&mut gpu, f.0, rl, dl, Some(pair_chroma(rc, dc)));
                    if let Err(e) = pushed {
                        refused = Some(e);
                        break;
                    }
                }
                if refused.is_none() {
                    refused = gpu.poll(true).err();
                }
                let at_2 = |e: &gstvmafgpu::Error| {
                    matches!(
                        e,
                        gstvmafgpu::Error::SampleRange {
                            x: 5,
                            y: 3,
                            value: 1024,
                            ..
                        }
                    )
                };
                match &refused {
                    Some(gstvmafgpu::Error::FrameRefused { index: 2, cause }) if at_2(cause) => {}
                    Some(e) if at_2(e) => {}
                    other => bad.push(format!("{label} {route}: a word above the bits: {other:?}")),
                }
                let _ = gpu.finish();
            }
            for (gf, cf) in got.iter().zip(&want) {
                if gf.metrics.len() != cf.metrics.len() || cf.get("vmaf").is_none() {
                    bad.push(format!(
                        "{label} {route}: frame {}: {} metrics vs the CPU's {} (vmaf {:?})",
                        gf.index,
                        gf.metrics.len(),
                        cf.metrics.len(),
                        cf.get("vmaf")
                    ));
                }
                bad.extend(metrics_differ(&format!("{label} {route}"), gf, cf, (w, h)));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
