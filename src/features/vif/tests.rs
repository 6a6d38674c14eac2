use super::*;

/// xorshift64*: deterministic test content.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u32) -> u32 {
        ((self.next() >> 32) % n as u64) as u32
    }
}

/// A natural-ish pair: smooth reference with texture; the distorted one is a contrast
/// change (gain above and below 1, which exercises the gain limit), blur-free noise and an
/// offset, clamped to `bpc` bits.
fn natural(w: usize, h: usize, bpc: u8, seed: u64) -> (Vec<u16>, Vec<u16>) {
    let max = (1u32 << bpc) - 1;
    let mut rng = Rng(seed | 1);
    let (fx, fy) = (
        0.05 + rng.below(100) as f64 / 500.0,
        0.03 + rng.below(100) as f64 / 700.0,
    );
    let mut r = vec![0u16; w * h];
    let mut d = vec![0u16; w * h];
    for y in 0..h {
        for x in 0..w {
            let base = 0.5
                + 0.3 * (x as f64 * fx).sin() * (y as f64 * fy).cos()
                + 0.15 * ((x + 2 * y) as f64 * 0.31).sin();
            let tex = (rng.below(1000) as f64 / 1000.0 - 0.5) * if x < w / 2 { 0.2 } else { 0.02 };
            // A flat corner (non-log pixels) next to textured areas.
            let flat = x >= w * 3 / 4 && y >= h * 2 / 3;
            let v = if flat {
                max / 3
            } else {
                ((base + tex).clamp(0.0, 1.0) * max as f64) as u32
            };
            let gain = if y < h / 2 { 1.6 } else { 0.7 };
            let noise = (rng.below(1000) as f64 / 1000.0 - 0.5) * 0.05 * max as f64;
            let dv = ((v as f64 - max as f64 / 2.0) * gain
                + max as f64 / 2.0
                + noise
                + 0.01 * max as f64)
                .clamp(0.0, max as f64) as u32;
            r[y * w + x] = v.min(max) as u16;
            d[y * w + x] = dv.min(max) as u16;
        }
    }
    (r, d)
}

/// Extreme patterns of 0 and 2^bpc - 1.
fn pattern(w: usize, h: usize, bpc: u8, kind: usize) -> Vec<u16> {
    let max = ((1u32 << bpc) - 1) as u16;
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let on = match kind {
                0 => false,                    // all 0
                1 => true,                     // all max
                2 => (x + y) % 2 == 0,         // checkerboard
                3 => (x + y) % 2 == 1,         // inverted checkerboard
                4 => (x / 3 + y / 5) % 2 == 0, // blocks
                _ => x % 2 == 0,               // vertical stripes
            };
            if on { max } else { 0 }
        })
        .collect()
}

fn plane(data: &[u16], w: usize, h: usize, bpc: u8) -> Plane<'_> {
    Plane::from_slice(data, w, h, bpc)
}

/// Optimised (dispatched and portable builds) against the literal transcription.
#[allow(clippy::too_many_arguments)]
fn same_as_literal(
    r: &[u16],
    d: &[u16],
    w: usize,
    h: usize,
    bpc: u8,
    egl: f64,
    what: &str,
    bad: &mut Vec<String>,
) -> VifAccum {
    let p = VifParams {
        enhn_gain_limit: egl,
    };
    let (rp, dp) = (plane(r, w, h, bpc), plane(d, w, h, bpc));
    let want = literal::compute(&rp, &dp, egl);
    let got = compute(rp, dp, &p);
    let portable = compute_inner(rp, dp, &p, false, false);
    if got != want {
        bad.push(format!(
            "{what} {w}x{h} {bpc}-bit egl {egl}: got {got:?}, want {want:?}"
        ));
    }
    if portable != want {
        bad.push(format!(
            "{what} {w}x{h} {bpc}-bit egl {egl} (portable): got {portable:?}, want {want:?}"
        ));
    }
    want
}

fn finish(bad: Vec<String>, checked: usize) {
    assert!(checked > 0);
    assert!(
        bad.is_empty(),
        "{} of {checked} cases differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn matches_literal_on_natural_content_every_depth_and_odd_sizes() {
    let mut bad = vec![];
    let mut n = 0;
    for (i, &(w, h)) in [
        (33, 33),
        (34, 35),
        (47, 39),
        (64, 64),
        (97, 61),
        (130, 41),
        (161, 100),
    ]
    .iter()
    .enumerate()
    {
        for bpc in 8..=16u8 {
            let (r, d) = natural(w, h, bpc, 1000 + i as u64 * 17 + bpc as u64);
            for egl in [100.0, 1.0, 1.3] {
                let acc = same_as_literal(&r, &d, w, h, bpc, egl, "natural", &mut bad);
                // The content reaches every branch at scale 0.
                let s0 = acc.scales[0];
                assert!(
                    s0.num_log > 0 && s0.den_log > 0 && s0.den_non_log > 0,
                    "{w}x{h} {bpc}: {s0:?}"
                );
                n += 1;
            }
        }
    }
    finish(bad, n);
}

#[test]
fn matches_literal_on_max_difference_patterns() {
    let mut bad = vec![];
    let mut n = 0;
    for bpc in 8..=16u8 {
        for (w, h) in [(33, 33), (40, 37)] {
            for kr in 0..6 {
                for kd in 0..6 {
                    let (r, d) = (pattern(w, h, bpc, kr), pattern(w, h, bpc, kd));
                    same_as_literal(
                        &r,
                        &d,
                        w,
                        h,
                        bpc,
                        100.0,
                        &format!("pattern {kr}/{kd}"),
                        &mut bad,
                    );
                    n += 1;
                }
            }
        }
    }
    finish(bad, n);
}

#[test]
fn flat_frames_score_one() {
    for bpc in 8..=16u8 {
        let max = ((1u32 << bpc) - 1) as u16;
        for (vr, vd) in [(0, 0), (max / 3, max / 3), (0, max), (max, 0)] {
            let (w, h) = (45, 38);
            let (r, d) = (vec![vr; w * h], vec![vd; w * h]);
            let acc = compute(
                plane(&r, w, h, bpc),
                plane(&d, w, h, bpc),
                &VifParams::default(),
            );
            // No variance anywhere: every pixel is "non-log" with sigma2_sq = 0, so num = den =
            // the pixel count of the scale.
            let (mut sw, mut sh) = (w, h);
            for (s, a) in acc.scales.iter().enumerate() {
                let want = VifScaleAccum {
                    num_log: 0,
                    den_log: 0,
                    num_non_log: 0,
                    den_non_log: (sw * sh) as i64,
                };
                assert_eq!(*a, want, "{bpc}-bit {vr}/{vd} scale {s}");
                (sw, sh) = (sw / 2, sh / 2);
            }
            assert_eq!(acc.scores(), [1.0; 4]);
        }
    }
}

#[test]
fn strided_planes_equal_compact() {
    let (w, h) = (71, 50);
    for bpc in [8u8, 10, 12, 16] {
        let (r, d) = natural(w, h, bpc, 77 + bpc as u64);
        let want = compute(
            plane(&r, w, h, bpc),
            plane(&d, w, h, bpc),
            &VifParams::default(),
        );
        for stride in [w + 1, w + 13, 2 * w + 5] {
            // Padding filled with maximal values: must not be read.
            let max = ((1u32 << bpc) - 1) as u16;
            let mut rs = vec![max; stride * (h - 1) + w];
            let mut ds = vec![max; stride * (h - 1) + w];
            for y in 0..h {
                rs[y * stride..y * stride + w].copy_from_slice(&r[y * w..y * w + w]);
                ds[y * stride..y * stride + w].copy_from_slice(&d[y * w..y * w + w]);
            }
            let pr = Plane {
                data: &rs,
                width: w,
                height: h,
                stride,
                bpc,
            };
            let pd = Plane {
                data: &ds,
                width: w,
                height: h,
                stride,
                bpc,
            };
            assert_eq!(
                compute(pr, pd, &VifParams::default()),
                want,
                "{bpc}-bit stride {stride}"
            );
        }
        // Different strides for the two planes.
        let mut ds = vec![0u16; (w + 3) * h];
        for y in 0..h {
            ds[y * (w + 3)..y * (w + 3) + w].copy_from_slice(&d[y * w..y * w + w]);
        }
        let pd = Plane {
            data: &ds,
            width: w,
            height: h,
            stride: w + 3,
            bpc,
        };
        assert_eq!(
            compute(plane(&r, w, h, bpc), pd, &VifParams::default()),
            want
        );
    }
}

#[test]
fn every_depth_at_a_modest_size_runs_without_overflow() {
    // Overflow checks are on in the dev profile: a sum that leaves its type panics here.
    let (w, h) = (256, 144);
    for bpc in 8..=16u8 {
        let (r, d) = natural(w, h, bpc, 5 + bpc as u64);
        let s = compute(
            plane(&r, w, h, bpc),
            plane(&d, w, h, bpc),
            &VifParams::default(),
        )
        .scores();
        for (i, v) in s.iter().enumerate() {
            assert!(
                v.is_finite() && *v > 0.0 && *v < 2.0,
                "{bpc}-bit scale {i}: {v}"
            );
        }
        for kind in 2..6 {
            let (r, d) = (pattern(w, h, bpc, kind), pattern(w, h, bpc, (kind + 1) % 6));
            compute(
                plane(&r, w, h, bpc),
                plane(&d, w, h, bpc),
                &VifParams::default(),
            );
        }
    }
}

#[test]
fn accumulator_bounds() {
    use bounds::*;
    let t = log2_table();
    // The per-pixel constants follow from the table.
    assert_eq!(
        log2_32(t, ((1 << 17) + SIGMA_SQ_MAX) as u32) as i64 - 2048 * 17,
        DEN_LOG_PER_PIXEL
    );
    let num_max = 100.0f64 * 100.0 * SIGMA_SQ_MAX as f64 + (SIGMA_SQ_MAX + (1 << 17)) as f64;
    assert!(num_max < (1u64 << 45) as f64);
    assert!(log2_64(t, (1u64 << 45) - 1) as i64 - log2_64(t, 1 << 17) as i64 <= NUM_LOG_PER_PIXEL);
    // Totals at 16K fit in i64 with room to spare.
    for per_pixel in [NUM_LOG_PER_PIXEL, DEN_LOG_PER_PIXEL, SIGMA_SQ_MAX, 1] {
        assert!(
            per_pixel
                .checked_mul(PIXELS_16K)
                .is_some_and(|v| v < i64::MAX / 8)
        );
    }
    // Worst-case content at 16 bits (and 8): every term within its per-pixel bound.
    let (w, h) = (96, 80);
    for bpc in [8u8, 16] {
        let mut cases = vec![];
        for kr in 0..6 {
            for kd in 0..6 {
                cases.push((pattern(w, h, bpc, kr), pattern(w, h, bpc, kd)));
            }
        }
        cases.push(natural(w, h, bpc, 3));
        for (r, d) in &cases {
            let acc = compute(
                plane(r, w, h, bpc),
                plane(d, w, h, bpc),
                &VifParams::default(),
            );
            let (mut sw, mut sh) = (w as i64, h as i64);
            for a in acc.scales {
                let (px, log_px) = (sw * sh, sw * sh - a.den_non_log);
                assert!((0..=px).contains(&a.den_non_log));
                assert!(
                    a.num_non_log >= 0 && a.num_non_log <= SIGMA_SQ_MAX * a.den_non_log,
                    "{a:?}"
                );
                assert!(
                    a.den_log >= 2048 * log_px && a.den_log <= DEN_LOG_PER_PIXEL * log_px,
                    "{a:?}"
                );
                assert!(
                    a.num_log >= 0 && a.num_log <= NUM_LOG_PER_PIXEL * log_px,
                    "{a:?}"
                );
                (sw, sh) = (sw / 2, sh / 2);
            }
        }
        // Flat reference, checkerboard distorted: the largest non-log variance there is.
        let (r, d) = (pattern(w, h, bpc, 0), pattern(w, h, bpc, 2));
        let a = compute(
            plane(&r, w, h, bpc),
            plane(&d, w, h, bpc),
            &VifParams::default(),
        )
        .scales[0];
        assert_eq!(a.den_non_log, (w * h) as i64);
        assert!(a.num_non_log > (SIGMA_SQ_MAX / 2) * a.den_non_log, "{a:?}");
    }
}

#[test]
fn log2_table_matches_log2f() {
    let t = log2_table();
    // libvmaf's definition with the platform's log2f (glibc's on Linux, as libvmaf uses).
    let mut diff = vec![];
    for i in 32767..65536usize {
        let want = ((i as f32).log2() * 2048.0) as f64;
        if t[i] != want.round() as u16 {
            diff.push(i);
        }
    }
    assert!(
        diff.is_empty(),
        "entries differ from round(log2f(i) * 2048): {diff:?}"
    );
    assert_eq!(t[32768], 15 * 2048);
    assert_eq!(t[65535], 16 * 2048);
    assert!(t[..32767].iter().all(|&v| v == 0) && t[65536] == 0);
    assert!(t[32767..65536].windows(2).all(|p| p[0] <= p[1]));
}

#[test]
fn log2_helpers() {
    let t = log2_table();
    for k in 17..31 {
        assert_eq!(log2_32(t, 1 << k), 2048 * k);
        assert_eq!(log2_64(t, 1 << k), 2048 * k);
    }
    assert_eq!(log2_64(t, 1 << 47), 2048 * 47);
}

#[test]
fn scores_follow_libvmafs_float_steps() {
    let a = VifScaleAccum {
        num_log: 123_456_789,
        den_log: 223_456_789,
        num_non_log: 987_654_321_000,
        den_non_log: 4321,
    };
    let num =
        (123_456_789f64 / 2048.0 + (4321.0 - (987_654_321_000f64 / 16384.0) / 65025.0)) as f32;
    let den = (223_456_789f64 / 2048.0 + 4321.0) as f32;
    assert_eq!(a.num_den(), (num, den));
    assert_eq!(a.score(), (num / den) as f64);
    assert_ne!(
        a.score(),
        num as f64 / den as f64,
        "division must be in float"
    );
}

#[test]
fn check_refuses_bad_input() {
    let (w, h) = (40, 40);
    let v = vec![0u16; w * h];
    let ok = plane(&v, w, h, 10);
    let p = VifParams::default();
    assert!(check(&ok, &ok, &p).is_ok());
    assert!(matches!(
        check(&plane(&v, w, h, 7), &plane(&v, w, h, 7), &p),
        Err(Error::BitDepth(7))
    ));
    assert!(matches!(
        check(&plane(&v, w, h, 17), &plane(&v, w, h, 17), &p),
        Err(Error::BitDepth(17))
    ));
    assert!(matches!(
        check(&ok, &plane(&v, w, h, 12), &p),
        Err(Error::Mismatch(_))
    ));
    assert!(matches!(
        check(&ok, &plane(&v, w - 1, h, 10), &p),
        Err(Error::Mismatch(_))
    ));
    let small = plane(&v, 32, 40, 10);
    assert!(matches!(
        check(&small, &small, &p),
        Err(Error::TooSmall { width: 32, .. })
    ));
    let short = Plane {
        data: &v[..w * h - 1],
        width: w,
        height: h,
        stride: w,
        bpc: 10,
    };
    assert!(matches!(check(&short, &short, &p), Err(Error::Geometry(_))));
    let narrow = Plane {
        data: &v,
        width: w,
        height: h,
        stride: w - 1,
        bpc: 10,
    };
    assert!(matches!(
        check(&narrow, &narrow, &p),
        Err(Error::Geometry(_))
    ));
    for egl in [0.5, 100.5, f64::NAN, -1.0] {
        assert!(
            check(
                &ok,
                &ok,
                &VifParams {
                    enhn_gain_limit: egl
                }
            )
            .is_err(),
            "{egl}"
        );
        assert!(
            try_compute(
                ok,
                ok,
                &VifParams {
                    enhn_gain_limit: egl
                }
            )
            .is_err()
        );
    }
    assert!(try_compute(small, small, &p).is_err());
    assert_eq!(try_compute(ok, ok, &p), Ok(compute(ok, ok, &p)));
    assert_eq!(VifParams::default().enhn_gain_limit, 100.0);
}

#[test]
fn filters_sum_to_one_in_q16() {
    for f in [&FILTER_0[..], &FILTER_1, &FILTER_2, &FILTER_3] {
        assert_eq!(f.iter().map(|&c| c as u32).sum::<u32>(), 65536);
        assert!(f.iter().eq(f.iter().rev()), "symmetric");
    }
    // The largest off-centre tap, used in the folded-sum bounds.
    let off = [&FILTER_0[..], &FILTER_1, &FILTER_2, &FILTER_3]
        .iter()
        .flat_map(|f| f[..f.len() / 2].iter().copied())
        .max();
    assert_eq!(off, Some(16004));
}
