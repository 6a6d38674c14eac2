use super::*;
use crate::features::speed::SpeedChromaParams;

/// The CPU backend never says a pair's work is on a GPU (the element's live wait would
/// then hold its worker threads to one frame at a time), with or without companions.
#[test]
fn cpu_scorer_does_not_compute_on_device() {
    for companions in [
        Companions::default(),
        Companions {
            psnr: true,
            ..Default::default()
        },
    ] {
        let s = Scorer::new(ScorerConfig {
            threads: 1,
            backend: BackendKind::Cpu,
            companions,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.backend_name(), "cpu");
        assert!(!s.computes_on_device(), "{companions:?}");
    }
}

/// 4:2:0 8-bit pairs of `w` x `h` with banding-prone flat areas and texture.
fn yuv_pairs(w: usize, h: usize, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    (0..n)
        .map(|t| {
            let mk = |noise: usize| -> Vec<u8> {
                let mut v = Vec::with_capacity(w * h + 2 * cw * ch);
                for y in 0..h {
                    for x in 0..w {
                        let flat = 60 + (x / 40) + t;
                        let tex = (x * 7 + y * 13 + (x * y) % 29 + noise * (x ^ y) % 5) % 251;
                        v.push(if y < h / 2 { flat } else { tex } as u8);
                    }
                }
                for p in 0..2 {
                    for y in 0..ch {
                        for x in 0..cw {
                            v.push(
                                (128 + (x * (p + 3) + y * 5 + t * 3 + noise * x % 3) % 40) as u8,
                            );
                        }
                    }
                }
                v
            };
            (mk(0), mk(1))
        })
        .collect()
}

fn i420(buf: &[u8], w: usize, h: usize) -> Picture<'_> {
    use crate::picture::{Chroma, PlaneRef};
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    Picture {
        width: w,
        height: h,
        bpc: 8,
        format: ChromaFormat::Yuv420,
        luma: PlaneRef {
            data: &buf[..w * h],
            stride: w,
        },
        chroma: Chroma::Planar {
            u: PlaneRef {
                data: &buf[w * h..w * h + cw * ch],
                stride: cw,
            },
            v: PlaneRef {
                data: &buf[w * h + cw * ch..],
                stride: cw,
            },
        },
    }
}

/// The CPU backend, saying that it computes the v1 features `on_device` accepts "on its
/// device" (its workers compute the companions a job asks for with the CPU reference, CAMBI and
/// SpEED included): records per job what `record` takes from the clip's configuration and the
/// job.
struct OnDevice<T> {
    inner: crate::backend::cpu::CpuBackend,
    cfg: backend::ClipConfig,
    on_device: fn(Companions) -> bool,
    record: fn(&backend::ClipConfig, &FrameJob) -> T,
    asked: Arc<std::sync::Mutex<Vec<T>>>,
}

impl<T> OnDevice<T> {
    fn new(
        threads: usize,
        on_device: fn(Companions) -> bool,
        record: fn(&backend::ClipConfig, &FrameJob) -> T,
    ) -> OnDevice<T> {
        OnDevice {
            inner: crate::backend::cpu::CpuBackend::new(threads).unwrap(),
            cfg: Default::default(),
            on_device,
            record,
            asked: Default::default(),
        }
    }
}

impl<T: Send + 'static> Backend for OnDevice<T> {
    fn name(&self) -> &'static str {
        "on-device"
    }
    fn submit(&mut self, job: FrameJob) -> Result<()> {
        let r = (self.record)(&self.cfg, &job);
        self.asked.lock().unwrap().push(r);
        self.inner.submit(job)
    }
    fn configure(&mut self, cfg: &backend::ClipConfig) -> Result<()> {
        self.cfg = *cfg;
        self.inner.configure(cfg)
    }
    fn receive(&mut self, wait: bool) -> Result<Option<(u64, backend::FrameAccum)>> {
        self.inner.receive(wait)
    }
    fn reset(&mut self) {
        self.inner.reset();
    }
    fn computes_on_device(&self, companions: Companions) -> bool {
        (self.on_device)(companions)
    }
}

/// A backend computing CAMBI: the CAMBI options each job asked for (the configured ones on a
/// job with features, else none).
fn device_cambi(threads: usize) -> OnDevice<Option<crate::features::cambi::CambiParams>> {
    OnDevice::new(
        threads,
        |c| c.cambi.is_some(),
        |cfg, job| cfg.companions.cambi.filter(|_| job.features),
    )
}

/// A backend computing SpEED chroma: per job the options asked for (on a job with features)
/// and whether the job had chroma planes.
fn device_speed(threads: usize) -> OnDevice<(Option<SpeedChromaParams>, bool)> {
    OnDevice::new(
        threads,
        |c| c.speed_chroma.is_some(),
        |cfg, job| {
            (
                cfg.companions.speed_chroma.filter(|_| job.features),
                job.chroma.is_some(),
            )
        },
    )
}

/// A job's previous luma samples (reference, distorted).
type PreviousLuma = (Vec<u16>, Vec<u16>);

/// A backend computing SpEED temporal: per job whether it was asked for (on a job with
/// features) and the previous planes' samples (reference, distorted), if any.
fn device_temporal(threads: usize) -> OnDevice<(bool, Option<PreviousLuma>)> {
    OnDevice::new(
        threads,
        |c| c.speed_temporal.is_some(),
        |cfg, job| {
            (
                cfg.companions.speed_temporal.is_some() && job.features,
                job.previous
                    .as_ref()
                    .map(|(r, d)| (r.data.clone(), d.data.clone())),
            )
        },
    )
}

#[test]
fn cambi_goes_to_a_backend_that_computes_it() {
    let (w, h) = (256, 240);
    let pairs = yuv_pairs(w, h, 3);
    for extras in [
        Extras::default(),
        Extras {
            cambi: true,
            ..Default::default()
        },
    ] {
        let cfg = ScorerConfig {
            model: ModelSource::Builtin("vmaf_v1.0.16_3d0h".into()),
            threads: 2,
            backend: BackendKind::Cpu,
            extras,
            ..Default::default()
        };
        let run = |mut s: Scorer| {
            let mut out = Vec::new();
            for (r, d) in &pairs {
                out.extend(s.push(&i420(r, w, h), &i420(d, w, h)).unwrap());
            }
            let (rest, summary) = s.finish().unwrap();
            out.extend(rest);
            (out, summary)
        };
        let want = run(Scorer::new(cfg.clone()).unwrap());
        let backend = device_cambi(2);
        let asked = Arc::clone(&backend.asked);
        let s = Scorer::with_backend(cfg, Box::new(backend)).unwrap();
        // SpEED stays on host threads: not all on the device.
        assert!(!s.computes_on_device());
        let got = run(s);
        assert_eq!(got, want, "{extras:?}");
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), pairs.len());
        for a in asked.iter() {
            let p = a.expect("every scored job asks for CAMBI");
            // The v1 model's options (cambi_max_val 17), not the standalone defaults.
            assert_eq!(p.max_val, 17.0);
            assert_eq!(p.high_res_speedup, 1080);
        }
        assert!(want.0.iter().all(|f| f.get("vmaf").is_some()));
        if extras.cambi {
            assert!(want.0.iter().all(|f| f.get("cambi").is_some()));
        }
    }
}

/// The routing decides per kind: CAMBI with full_ref never goes to a device, SpEED does not
/// (no backend computes it yet), and a backend that computes nothing gets nothing.
#[test]
fn routes_are_decided_per_kind() {
    use super::host::{HostKind, Routes};
    use crate::features::cambi::CambiParams;
    let cambi = CambiParams::default();
    let full = CambiParams {
        full_ref: true,
        ..Default::default()
    };
    let kinds = [
        HostKind::Cambi(cambi),
        HostKind::SpeedChroma(SpeedChromaParams::default()),
        HostKind::Cambi(CambiParams {
            max_val: 17.0,
            ..Default::default()
        }),
        HostKind::Cambi(full),
    ];
    let dev = device_cambi(1);
    let r = Routes::of(&kinds, &dev);
    assert_eq!(r.on_device, [true, false, false, false]);
    assert_eq!(r.companions.cambi, Some(cambi));
    assert!(r.any_on_host() && !r.on_host(0) && r.on_host(1));
    let cpu = crate::backend::cpu::CpuBackend::new(1).unwrap();
    let r = Routes::of(&kinds, &cpu);
    assert_eq!(r.on_device, [false; 4]);
    assert_eq!(r.companions, Companions::default());
}

/// A backend that computes SpEED chroma on its device gets the model's SpEED chroma (and the
/// chroma planes) in every scored job, the standalone speed_chroma of other options stays on
/// host threads (one SpEED chroma a job), CAMBI stays on host threads, and the scores are the
/// host threads' bit for bit.
#[test]
fn speed_chroma_goes_to_a_backend_that_computes_it() {
    use super::host::{HostKind, Routes};
    let (w, h) = (640, 360);
    let pairs = yuv_pairs(w, h, 3);
    for extras in [
        Extras::default(),
        Extras {
            speed_chroma: true,
            ..Default::default()
        },
    ] {
        let cfg = ScorerConfig {
            model: ModelSource::Builtin("vmaf_v1.0.16_3d0h".into()),
            threads: 2,
            backend: BackendKind::Cpu,
            extras,
            ..Default::default()
        };
        let run = |mut s: Scorer| {
            let mut out = Vec::new();
            for (r, d) in &pairs {
                out.extend(s.push(&i420(r, w, h), &i420(d, w, h)).unwrap());
            }
            let (rest, summary) = s.finish().unwrap();
            out.extend(rest);
            (out, summary)
        };
        let want = run(Scorer::new(cfg.clone()).unwrap());
        let backend = device_speed(2);
        let asked = Arc::clone(&backend.asked);
        let s = Scorer::with_backend(cfg, Box::new(backend)).unwrap();
        // CAMBI stays on host threads: not all on the device.
        assert!(!s.computes_on_device());
        let got = run(s);
        assert_eq!(got, want, "{extras:?}");
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), pairs.len());
        for (p, chroma) in asked.iter() {
            let p = p.expect("every scored job asks for SpEED chroma");
            // The v1 model's options (speed_max_val 45, wvm 5), not the standalone defaults.
            assert_eq!((p.max_val, p.weight_var_mode), (45.0, 5));
            assert!(chroma, "the job carries the chroma planes");
        }
        assert!(want.0.iter().all(|f| f.get("vmaf").is_some()));
        if extras.speed_chroma {
            assert!(want.0.iter().all(|f| f.get("speed_chroma_uv").is_some()));
        }
    }
    // The routing: SpEED chroma to the device, CAMBI and SpEED temporal on host threads.
    let kinds = [
        HostKind::Cambi(Default::default()),
        HostKind::SpeedChroma(SpeedChromaParams::default()),
        HostKind::SpeedTemporal(Default::default()),
        HostKind::SpeedChroma(SpeedChromaParams {
            max_val: 45.0,
            ..Default::default()
        }),
    ];
    let dev = device_speed(1);
    let r = Routes::of(&kinds, &dev);
    assert_eq!(r.on_device, [false, true, false, false]);
    assert_eq!(
        r.companions.speed_chroma,
        Some(SpeedChromaParams::default())
    );
    assert!(r.companions.needs_chroma());
}

/// A backend that computes SpEED temporal on its device gets it in the clip's companions and,
/// in every scored job but the first, the previous frame's luma (the frame pushed just before,
/// subsampling or not); the scores equal the host threads' bit for bit, and nothing runs on
/// host threads.
#[test]
fn speed_temporal_goes_to_a_backend_that_computes_it() {
    let (w, h) = (320, 180);
    // Texture that moves from frame to frame (yuv_pairs' changes only by a constant).
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..7usize)
        .map(|t| {
            let mk = |noise: usize| -> Vec<u8> {
                let mut v: Vec<u8> = (0..w * h)
                    .map(|i| {
                        let (x, y) = (i % w + 3 * t, i / w);
                        ((x * 7 + y * 13 + (x * y) % 29 + noise * ((x ^ y) % 7)) % 251) as u8
                    })
                    .collect();
                v.resize(w * h + 2 * (w / 2) * (h / 2), 128);
                v
            };
            (mk(0), mk(1))
        })
        .collect();
    for subsample in [1, 3] {
        let cfg = ScorerConfig {
            threads: 2,
            backend: BackendKind::Cpu,
            subsample,
            extras: Extras {
                speed_temporal: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let run = |mut s: Scorer| {
            let mut out = Vec::new();
            for (r, d) in &pairs {
                out.extend(s.push(&i420(r, w, h), &i420(d, w, h)).unwrap());
            }
            let (rest, summary) = s.finish().unwrap();
            out.extend(rest);
            (out, summary)
        };
        let want = run(Scorer::new(cfg.clone()).unwrap());
        let backend = device_temporal(2);
        let asked = Arc::clone(&backend.asked);
        let s = Scorer::with_backend(cfg, Box::new(backend)).unwrap();
        assert!(s.computes_on_device(), "nothing on host threads");
        let got = run(s);
        assert_eq!(got, want, "subsample {subsample}");
        assert!(want.0.iter().all(|f| f.get("speed_temporal").is_some()));
        assert!(
            want.0
                .iter()
                .skip(1)
                .any(|f| f.get("speed_temporal") != Some(0.0))
        );
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), pairs.len());
        for (i, (temporal, prev)) in asked.iter().enumerate() {
            let scored = i % subsample as usize == 0;
            assert_eq!(*temporal, scored, "frame {i}");
            match (scored && i > 0, prev) {
                (true, Some(p)) => {
                    let (r, d) = &pairs[i - 1];
                    let luma = |b: &[u8]| b[..w * h].iter().map(|&v| u16::from(v)).collect();
                    let want: (Vec<u16>, Vec<u16>) = (luma(r), luma(d));
                    assert!(*p == want, "frame {i}: not the previous frame's luma");
                }
                (false, None) => {}
                (want, got) => panic!(
                    "frame {i}: previous planes {}, expected: {want}",
                    got.is_some()
                ),
            }
        }
    }
}
