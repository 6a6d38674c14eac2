use super::*;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn plane(&mut self, w: usize, h: usize, bpc: u8) -> Vec<u16> {
        (0..w * h)
            .map(|_| (self.next() >> 40) as u16 & ((1u32 << bpc) - 1) as u16)
            .collect()
    }
}

/// The straightforward reference: the whole-frame `vif_filter1d_s`, then `vif_dec16_s`.
fn full_filter_dec16(taps: &[f32], img: &[f32], w: usize, h: usize, stride: usize) -> Vec<f32> {
    let full = filter1d_full("test", taps, img, w, h, stride).unwrap();
    let mut out = Vec::new();
    for a in 0..h / 16 {
        for b in 0..w / 16 {
            out.push(full[a * 16 * w + b * 16]);
        }
    }
    out
}

#[test]
fn sampled_filter_equals_full_filter_then_dec16() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut checked = 0;
    let mut bad = Vec::new();
    // Kernel scales from 0.5 (5 taps) to 4 (37 taps, wider than the decimation step), sizes
    // that are and are not multiples of 16, and a stride wider than the image.
    for &ks in &[1.0f32, 0.5, 1.5, 2.0, 3.0, 4.0] {
        for &(w, h, stride) in &[(96usize, 80usize, 96usize), (181, 97, 190), (333, 130, 333)] {
            let img: Vec<f32> = (0..stride * h)
                .map(|_| (rng.next() >> 40) as f32 / 65536.0 - 128.0)
                .collect();
            let taps = antialias_filter(ks);
            let want = full_filter_dec16(&taps, &img, w, h, stride);
            let got = SampledFilter::new("test", taps, w, h)
                .unwrap()
                .apply(&img, stride);
            assert_eq!(got.len(), want.len());
            for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                if g.to_bits() != e.to_bits() {
                    bad.push(format!("ks {ks} {w}x{h} sample {i}: {g} != {e}"));
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 1000);
    assert!(
        bad.is_empty(),
        "{} of {checked} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn filter_sizes() {
    // vif_get_filter_size: 9 / 3 taps at kernel scale 1; 37 / 9 at 4; 5 / 3 at 0.5.
    assert_eq!(antialias_filter(1.0).len(), 9);
    assert_eq!(small_filter(1.0).len(), 3);
    assert_eq!(antialias_filter(4.0).len(), 37);
    assert_eq!(small_filter(4.0).len(), 9);
    assert_eq!(antialias_filter(0.5).len(), 5);
    assert_eq!(small_filter(0.5).len(), 3);
    let s: f32 = antialias_filter(1.0).iter().sum();
    assert!((s - 1.0).abs() < 1e-6);
}

fn chroma_err(p: &SpeedChromaParams, w: usize, h: usize) -> Option<Error> {
    SpeedChroma::new(p, w, h, 8).err()
}

/// The sizes of vmaf-v1.md §3.2's table (4:2:0 chroma of the frame sizes, and luma).
#[test]
fn refusals_at_the_table_sizes() {
    let v1 = SpeedChromaParams {
        max_val: 45.0,
        nn_floor: 0.1,
        sigma_nn: 0.19,
        weight_var_mode: 5,
        ..Default::default()
    };
    let ps = |s: f64| SpeedChromaParams {
        prescale: s,
        prescale_method: PrescaleMethod::Bilinear,
        ..v1
    };
    // (frame, no prescale ok?, 0.5 ok?, 0.6 ok?)
    let table = [
        ((176, 144), false, false, false),
        ((320, 180), true, false, false),
        ((352, 288), true, false, true),
        ((640, 272), true, false, true),
        ((640, 360), true, true, true),
        ((1280, 720), true, true, true),
        ((1920, 1080), true, true, true),
        ((3840, 2160), true, true, true),
    ];
    for &((w, h), ok1, ok05, ok06) in &table {
        let (cw, ch) = (w >> 1, h >> 1);
        for (p, ok) in [(v1, ok1), (ps(0.5), ok05), (ps(0.6), ok06)] {
            let e = chroma_err(&p, cw, ch);
            assert_eq!(e.is_none(), ok, "{w}x{h} prescale {}: {e:?}", p.prescale);
            if let Some(e) = e {
                match &e {
                    Error::Unsupported { metric, reason } => {
                        assert_eq!(*metric, "speed_chroma");
                        assert!(reason.contains(&format!("{cw}x{ch}")), "{reason}");
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        // Luma (speed_temporal) works at every size of the table.
        assert!(SpeedTemporal::new(&SpeedTemporalParams::default(), w, h, 8).is_ok());
    }
    // Luma below 80 in a dimension (operating size < 5) is refused.
    match SpeedTemporal::new(&SpeedTemporalParams::default(), 176, 79, 8) {
        Err(Error::Unsupported { metric, reason }) => {
            assert_eq!(metric, "speed_temporal");
            assert!(reason.contains("176x79"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn refused_depths_and_options() {
    let p = SpeedChromaParams::default();
    for bpc in [9u8, 11, 13, 14, 15] {
        assert!(matches!(
            SpeedChroma::new(&p, 320, 180, bpc),
            Err(Error::Unsupported { .. })
        ));
        assert!(matches!(
            SpeedTemporal::new(&SpeedTemporalParams::default(), 320, 180, bpc),
            Err(Error::Unsupported { .. })
        ));
    }
    for bpc in [8u8, 10, 12, 16] {
        assert!(SpeedChroma::new(&p, 320, 180, bpc).is_ok());
    }
    let bad = [
        SpeedChromaParams {
            kernelscale: 0.3,
            ..p
        },
        SpeedChromaParams {
            kernelscale: 5.0,
            ..p
        },
        SpeedChromaParams {
            prescale: 0.05,
            ..p
        },
        SpeedChromaParams { sigma_nn: 0.0, ..p },
        SpeedChromaParams {
            nn_floor: f64::NAN,
            ..p
        },
        SpeedChromaParams {
            max_val: 1001.0,
            ..p
        },
        SpeedChromaParams {
            weight_var_mode: 7,
            ..p
        },
    ];
    for b in bad {
        assert!(matches!(b.validate(), Err(Error::Model(_))), "{b:?}");
    }
    // Kernel scales within 1e-3 of a table entry pass.
    assert!(
        SpeedChromaParams {
            kernelscale: 1.0 / 3.0 * 4.0 + 0.0005,
            ..p
        }
        .validate()
        .is_ok()
    );
    // Within 1e-3 of 1 but rounding the size up: libvmaf reads unwritten memory.
    let up = SpeedChromaParams {
        prescale: 1.0009,
        ..p
    };
    assert!(matches!(
        SpeedChroma::new(&up, 960, 540, 8),
        Err(Error::Unsupported { .. })
    ));
    // Temporal prescale above 1 that grows the height: libvmaf overflows its buffers.
    let t = SpeedTemporalParams {
        prescale: 1.5,
        ..Default::default()
    };
    assert!(matches!(
        SpeedTemporal::new(&t, 640, 360, 8),
        Err(Error::Unsupported { .. })
    ));
    assert!(SpeedChroma::new(&SpeedChromaParams { prescale: 1.5, ..p }, 640, 360, 8).is_ok());
}

#[test]
fn extractors_are_send_sync() {
    fn check<T: Send + Sync>() {}
    check::<SpeedChroma>();
    check::<SpeedTemporal>();
}

#[test]
fn prescale_names() {
    for m in [
        PrescaleMethod::Nearest,
        PrescaleMethod::Bilinear,
        PrescaleMethod::Bicubic,
        PrescaleMethod::Lanczos4,
    ] {
        assert_eq!(PrescaleMethod::from_name(m.name()), Some(m));
    }
    assert_eq!(PrescaleMethod::from_name("Bilinear"), None);
    assert_eq!(PrescaleMethod::default(), PrescaleMethod::Nearest);
}

/// Every prescale method runs (down and up) on random content and gives finite scores that
/// differ between methods (the libvmaf comparison is a separate oracle test).
#[test]
fn prescale_methods_run() {
    let (w, h) = (640, 400);
    let mut rng = Rng(42);
    let planes: Vec<Vec<u16>> = (0..4).map(|_| rng.plane(w, h, 10)).collect();
    let pl: Vec<Plane<'_>> = planes
        .iter()
        .map(|d| Plane::from_slice(d, w, h, 10))
        .collect();
    for &s in &[0.5, 0.75, 1.5] {
        let mut seen = Vec::new();
        for m in [
            PrescaleMethod::Nearest,
            PrescaleMethod::Bilinear,
            PrescaleMethod::Bicubic,
            PrescaleMethod::Lanczos4,
        ] {
            let p = SpeedChromaParams {
                prescale: s,
                prescale_method: m,
                ..Default::default()
            };
            let sc = SpeedChroma::new(&p, w, h, 10)
                .unwrap()
                .compute(&pl[0], &pl[1], &pl[2], &pl[3])
                .unwrap();
            assert!(sc.u > 0.0 && sc.v > 0.0 && sc.uv > 0.0, "{s} {m:?}: {sc:?}");
            assert!(sc.u.is_finite() && sc.v.is_finite() && sc.uv.is_finite());
            seen.push(sc);
        }
        for i in 0..seen.len() {
            for j in 0..i {
                assert_ne!(seen[i], seen[j], "prescale {s}: methods {i} and {j}");
            }
        }
    }
}

/// Flat planes are singular on both sides: every score is 0.
#[test]
fn flat_is_singular_zero() {
    let (w, h) = (320, 180);
    let flat = vec![128u16; w * h];
    let p = Plane::from_slice(&flat, w, h, 8);
    let s = SpeedChroma::new(&SpeedChromaParams::default(), w, h, 8)
        .unwrap()
        .compute(&p, &p, &p, &p)
        .unwrap();
    assert_eq!(s, SpeedChromaScores::default());
}

#[test]
fn eigenvalues_of_a_known_matrix() {
    // diag(1..=5) rotated is not needed: a symmetric tridiagonal with known spectrum.
    let n = 4;
    let mut m = vec![0.0f32; n * n];
    for i in 0..n {
        m[i * n + i] = 2.0;
        if i + 1 < n {
            m[i * n + i + 1] = -1.0;
            m[(i + 1) * n + i] = -1.0;
        }
    }
    let mut e = eigenvalues(&m, n);
    e.sort_by(|a, b| a.partial_cmp(b).unwrap());
    // 2 - 2 cos(k pi / 5)
    for (k, &v) in e.iter().enumerate() {
        let want = 2.0 - 2.0 * ((k + 1) as f64 * PI / 5.0).cos();
        assert!((v as f64 - want).abs() < 1e-5, "{k}: {v} vs {want}");
    }
}
