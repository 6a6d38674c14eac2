use super::histogram::{LANES, MARGIN};
use super::recip::RECIP;
use super::*;

/// A deterministic generator (xorshift64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Banded content: a gradient quantized in steps of `q`, with flat and noisy rectangles.
fn content(w: usize, h: usize, bpc: u8, seed: u64) -> Vec<u16> {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let max = (1u32 << bpc) - 1;
    let scale = (max + 1) / 256;
    let q = 1 + r.below(3) as usize;
    let base = 16 + r.below(80) as usize;
    let mut v = vec![0u16; w * h];
    for y in 0..h {
        for x in 0..w {
            let g = (base + (x * 60 / w + y * 40 / h) / q * q).min(235);
            v[y * w + x] = (g as u32 * scale).min(max) as u16;
        }
    }
    for _ in 0..8 {
        let (rw, rh) = (
            1 + r.below(w as u64 / 3) as usize,
            1 + r.below(h as u64 / 3) as usize,
        );
        let x0 = r.below((w - rw) as u64 + 1) as usize;
        let y0 = r.below((h - rh) as u64 + 1) as usize;
        let level = (16 + r.below(200)) as u32 * scale;
        let noisy = r.below(2) == 0;
        for y in y0..y0 + rh {
            for x in x0..x0 + rw {
                let n = if noisy { r.below(3) as u32 * scale } else { 0 };
                v[y * w + x] = (level + n).min(max) as u16;
            }
        }
    }
    v
}

fn plane(data: &[u16], w: usize, h: usize, bpc: u8) -> Plane<'_> {
    Plane::from_slice(data, w, h, bpc)
}

fn unsupported(r: Result<Cambi>) -> String {
    match r {
        Err(
            e @ Error::Unsupported {
                metric: "cambi", ..
            },
        ) => e.to_string(),
        other => panic!("expected a cambi refusal, got {other:?}"),
    }
}

#[test]
fn refuses_small_encodes() {
    let p = CambiParams::default();
    let msg = unsupported(Cambi::new(&p, 176, 144, 8));
    assert!(msg.contains("176x144"), "{msg}");
    unsupported(Cambi::new(&p, 215, 215, 8));
    // One dimension of 216 is enough (libvmaf: both must be below 216 to refuse).
    Cambi::new(&p, 216, 100, 8).unwrap();
    Cambi::new(&p, 100, 216, 8).unwrap();
    // An encode below the minimum inside a larger input.
    let small = CambiParams {
        enc_width: 200,
        enc_height: 200,
        ..p
    };
    unsupported(Cambi::new(&small, 1280, 720, 8));
    // An encode larger than the input means the input size.
    let large = CambiParams {
        enc_width: 1920,
        enc_height: 1080,
        ..p
    };
    let c = Cambi::new(&large, 640, 360, 8).unwrap();
    assert_eq!(c.scale_sizes()[0], (640, 360));
}

#[test]
fn refuses_windows_beyond_the_reciprocal_table() {
    let p = CambiParams::default();
    // 8K: ws = ((65 * 12000) / 375) >> 4 | 1 = 131, 131^2 >= 4226.
    let msg = unsupported(Cambi::new(&p, 7680, 4320, 10));
    assert!(
        msg.contains("131x131") && msg.contains("7680x4320"),
        "{msg}"
    );
    // With the 2160p speed-up the window is halved to 65: accepted.
    let hrs = CambiParams {
        high_res_speedup: 2160,
        ..p
    };
    assert_eq!(
        Cambi::new(&hrs, 7680, 4320, 10).unwrap().window_sizes(),
        (65, None)
    );
    // The source window counts even without full_ref (libvmaf's init checks it).
    let src = CambiParams {
        src_width: 7680,
        src_height: 4320,
        ..p
    };
    unsupported(Cambi::new(&src, 3840, 2160, 10));
}

#[test]
fn refuses_scales_smaller_than_the_window() {
    let p = CambiParams::default();
    // The rule (calculate_c_values reads columns up to pad - 1 and rows up to pad).
    let (mut accepted, mut refused) = (0, 0);
    for (w, h) in [
        (1920usize, 160usize),
        (1920, 100),
        (3840, 160),
        (2400, 216),
        (216, 4000),
        (216, 1200),
        (4000, 96),
    ] {
        let ws = adjust_window_size(65, w, h, false) as usize;
        let pad = ws >> 1;
        let mut ok = true;
        let (mut sw, mut sh) = (w, h);
        for s in 0..NUM_SCALES {
            if s > 0 {
                (sw, sh) = ((sw + 1) >> 1, (sh + 1) >> 1);
            }
            let min_h = if s == 0 { pad + 1 } else { pad };
            ok &= sw >= pad && sh >= min_h;
        }
        let r = Cambi::new(&p, w, h, 8);
        if ok {
            r.unwrap_or_else(|e| panic!("{w}x{h} refused: {e}"));
            accepted += 1;
        } else {
            let msg = unsupported(r);
            assert!(
                msg.contains("window") && msg.contains(&format!("{w}x{h}")),
                "{msg}"
            );
            refused += 1;
        }
    }
    assert!(
        accepted >= 2 && refused >= 2,
        "{accepted} accepted, {refused} refused"
    );
    // 3840x160: ws = 65 * 4000 / 375 >> 4 | 1 = 43, pad 21; scale 4 is 240x10.
    unsupported(Cambi::new(&p, 3840, 160, 8));
    // A coarse scale exactly as tall as the window's half is computed by libvmaf (its
    // extra row lands outside the pooled values; checked against libvmaf 3.2.0 on
    // synthetic content): accepted. 472x96 with window_size 127: ws = 127 * 568 / 375
    // >> 4 | 1 = 13, pad 6; scale 4 is 30x6.
    let wide = CambiParams {
        window_size: 127,
        ..CambiParams::default()
    };
    let c = Cambi::new(&wide, 472, 96, 8).unwrap();
    assert_eq!(c.window_sizes().0, 13);
    assert_eq!(c.scale_sizes()[4], (30, 6));
    let data = content(472, 96, 8, 1);
    c.compute(&plane(&data, 472, 96, 8), None).unwrap();
    // 472x64: ws 11, pad 5, scale 4 is 30x4.
    let msg = unsupported(Cambi::new(&wide, 472, 64, 8));
    assert!(msg.contains("scale 4 is 30x4"), "{msg}");
}

#[test]
fn refuses_bad_options_and_inputs() {
    let bad = [
        CambiParams {
            window_size: 14,
            ..Default::default()
        },
        CambiParams {
            window_size: 128,
            ..Default::default()
        },
        CambiParams {
            topk: 0.0,
            ..Default::default()
        },
        CambiParams {
            topk: 1.5,
            ..Default::default()
        },
        CambiParams {
            tvi_threshold: f64::NAN,
            ..Default::default()
        },
        CambiParams {
            max_val: 1000.5,
            ..Default::default()
        },
        CambiParams {
            vis_lum_threshold: -1.0,
            ..Default::default()
        },
        CambiParams {
            max_log_contrast: 6,
            ..Default::default()
        },
        CambiParams {
            high_res_speedup: 2161,
            ..Default::default()
        },
        CambiParams {
            enc_width: 179,
            ..Default::default()
        },
        CambiParams {
            enc_height: 7681,
            ..Default::default()
        },
        CambiParams {
            enc_bitdepth: 5,
            ..Default::default()
        },
        CambiParams {
            src_width: 319,
            ..Default::default()
        },
        CambiParams {
            src_height: 4321,
            ..Default::default()
        },
    ];
    for p in &bad {
        assert!(matches!(p.validate(), Err(Error::Model(_))), "{p:?}");
        assert!(Cambi::new(p, 1280, 720, 8).is_err(), "{p:?}");
    }
    CambiParams::default().validate().unwrap();
    // A speed-up value in range but not one of 1080, 1440, 2160 is accepted and off.
    let odd = CambiParams {
        high_res_speedup: 1000,
        ..Default::default()
    };
    assert_eq!(
        Cambi::new(&odd, 1920, 1080, 10).unwrap().window_sizes().0,
        33
    );
    assert!(matches!(
        Cambi::new(&CambiParams::default(), 1280, 720, 7),
        Err(Error::BitDepth(7))
    ));
    assert!(matches!(
        Cambi::new(&CambiParams::default(), 1280, 720, 17),
        Err(Error::BitDepth(17))
    ));
    // A source wider but shorter than the encode (libvmaf's init refuses it).
    let skew = CambiParams {
        enc_width: 1280,
        enc_height: 720,
        src_width: 1920,
        src_height: 600,
        ..Default::default()
    };
    unsupported(Cambi::new(&skew, 1920, 1080, 8));
    // full_ref, 10 bits, a source wider than the input: libvmaf copies with the wrong
    // stride.
    let garbled = CambiParams {
        full_ref: true,
        src_width: 1920,
        src_height: 1080,
        ..Default::default()
    };
    unsupported(Cambi::new(&garbled, 1280, 720, 10));
    Cambi::new(&garbled, 1280, 720, 8).unwrap();

    // compute: wrong geometry, short plane, sample range, missing reference.
    let c = Cambi::new(&CambiParams::default(), 320, 240, 8).unwrap();
    let data = vec![16u16; 320 * 240];
    assert!(matches!(
        c.compute(&plane(&data, 320, 240, 10), None),
        Err(Error::Mismatch(_))
    ));
    let short = Plane {
        data: &data[..1000],
        width: 320,
        height: 240,
        stride: 320,
        bpc: 8,
    };
    assert!(matches!(c.compute(&short, None), Err(Error::Geometry(_))));
    let mut hot = data.clone();
    hot[5 * 320 + 7] = 256;
    assert!(matches!(
        c.compute(&plane(&hot, 320, 240, 8), None),
        Err(Error::SampleRange {
            x: 7,
            y: 5,
            value: 256,
            ..
        })
    ));
    let fr = Cambi::new(
        &CambiParams {
            full_ref: true,
            ..Default::default()
        },
        320,
        240,
        8,
    )
    .unwrap();
    assert!(matches!(
        fr.compute(&plane(&data, 320, 240, 8), None),
        Err(Error::Mismatch(_))
    ));
}

/// vmaf-v1.md §3.1: mask_index and window sizes (default options, and the v1 options with
/// the 1080p speed-up), and the scale-0 size with the speed-up.
#[test]
fn window_sizes_and_mask_index() {
    let v1 = CambiParams {
        high_res_speedup: 1080,
        vis_lum_threshold: 0.06,
        max_val: 17.0,
        ..Default::default()
    };
    // (width, height, mask_index, default window (None: refused), v1 window, v1 scale 0)
    type Row = (usize, usize, u16, Option<usize>, usize, (usize, usize));
    let table: [Row; 6] = [
        (640, 272, 16, Some(9), 9, (640, 272)),
        (640, 360, 16, Some(11), 11, (640, 360)),
        (1280, 720, 19, Some(21), 21, (1280, 720)),
        (1920, 1080, 21, Some(33), 17, (960, 540)),
        (3840, 2160, 24, Some(65), 33, (1920, 1080)),
        (7680, 4320, 27, None, 65, (3840, 2160)),
    ];
    for (w, h, mi, ws, ws_v1, s0) in table {
        assert_eq!(mask_index(w, h), mi, "{w}x{h}");
        match ws {
            Some(ws) => {
                let c = Cambi::new(&CambiParams::default(), w, h, 10).unwrap();
                assert_eq!(c.window_sizes(), (ws, None), "{w}x{h}");
                assert_eq!(c.dist.mask_index, mi);
            }
            None => assert!(Cambi::new(&CambiParams::default(), w, h, 10).is_err()),
        }
        let c = Cambi::new(&v1, w, h, 10).unwrap();
        assert_eq!(c.window_sizes(), (ws_v1, None), "{w}x{h} v1");
        assert_eq!(c.scale_sizes()[0], s0, "{w}x{h} v1");
    }
    assert_eq!(ceil_log2(0), 0);
    assert_eq!(ceil_log2(1), 0);
    assert_eq!(ceil_log2(2), 1);
    assert_eq!(ceil_log2(480), 9);
    assert_eq!(ceil_log2(512), 9);
    assert_eq!(ceil_log2(513), 10);
    // A frame below 64 pixels in a dimension: (w >> 6) * (h >> 6) = 0, ceil_log2(0) = 0.
    assert_eq!(mask_index(1000, 50), (49 - 33 - 1) >> 1);
}

#[test]
fn reciprocal_table_is_not_exactly_one_over_i() {
    assert_eq!(RECIP[0], 0.0);
    assert_eq!(RECIP[1], 1.0);
    assert_eq!(RECIP[2], 0.5);
    let differ: Vec<usize> = (1..RECIP_LUT_SIZE)
        .filter(|&i| RECIP[i] != 1.0f32 / i as f32)
        .collect();
    assert_eq!(differ.len(), 42, "{differ:?}");
    assert_eq!(&differ[..7], &[82, 83, 244, 488, 504, 510, 528]);
    // Each differs by one unit in the last place.
    for &i in &differ {
        let exact = 1.0f32 / i as f32;
        assert_eq!(RECIP[i].to_bits().abs_diff(exact.to_bits()), 1, "{i}");
    }
}

/// Bounds of the integer and exact-float accumulators (written beside them).
#[test]
fn accumulator_bounds() {
    let max_ws = 65usize; // the largest odd window with ws^2 < 4226
    assert!(max_ws * max_ws < RECIP_LUT_SIZE && (max_ws + 2).pow(2) >= RECIP_LUT_SIZE);
    // Histogram counts (i16): at most ws^2 + ws while a step is applied.
    assert!(max_ws * max_ws + max_ws < i16::MAX as usize);
    // Run covers and columns in i16: columns below MAX_DIMENSION plus margins.
    assert!(MAX_DIMENSION + 2 * MARGIN + LANES < i16::MAX as usize);
    assert!(MARGIN >= (max_ws >> 1) + LANES - 1);
    // The c-value product in i32: weight 9 times p0 * pm with p0 + pm <= 4225.
    assert!(9 * (4225i64 * 4225 / 4) < i32::MAX as i64);
    // Row sums of c-values exact in double: below 2^29 (2^53 units of 2^-24).
    let max_c = 9.0 * 4225.0 / 4.0;
    assert!(MAX_DIMENSION as f64 * max_c < (1u64 << 29) as f64);
    // Pixel indices in u32.
    assert!((MAX_DIMENSION as u64).pow(2) < u32::MAX as u64);
    // Anti-dithering sums of four preprocessed samples (at most 1024) in u16.
    assert!(4 * 1024 < u16::MAX as u32);
    // The preprocessing of 16-bit samples reaches 1024 (one above the 10-bit maximum).
    assert_eq!((65535u32 + 32) >> 6, 1024);
}

/// Every non-zero c-value is at least 0.5, so a multiple of 2^-24 (what makes the pooling
/// sums exact): checked for every pair of counts a 65x65 window allows.
#[test]
fn c_values_are_multiples_of_2_pow_minus_24() {
    let mut least = f32::MAX;
    for p0 in 1..RECIP_LUT_SIZE as i32 {
        for pm in 1..RECIP_LUT_SIZE as i32 - p0 {
            let c = (p0 * pm) as f32 * RECIP[(p0 + pm) as usize];
            least = least.min(c);
        }
    }
    assert_eq!(least, 0.5);
    for w in CONTRAST_WEIGHTS {
        assert!((w * 4224) as f32 * RECIP[4225] >= 0.5);
    }
}

/// The counts, straight from their definition: for each masked pixel, the masked pixels
/// of each value in its clipped window, then cambi.c `c_value_pixel`.
fn reference_c_values(
    img: &[u16],
    mask: &[u8],
    w: usize,
    h: usize,
    pad: usize,
    lut: &Lut,
) -> Vec<f32> {
    let nd = lut.num_diffs as i32;
    let hi = lut.lo + lut.len as i32 - 1;
    let in_band = |v: i32| v >= lut.lo && v <= hi;
    let mut out = vec![0.0f32; w * h];
    for i in 0..h {
        for j in 0..w {
            let v = img[i * w + j] as i32;
            if mask[i * w + j] == 0 || !in_band(v) {
                continue;
            }
            let count = |u: i32| -> i32 {
                if !in_band(u) {
                    return 0;
                }
                let mut n = 0;
                for y in i.saturating_sub(pad)..(i + pad + 1).min(h) {
                    for x in j.saturating_sub(pad)..(j + pad + 1).min(w) {
                        n += (mask[y * w + x] != 0 && img[y * w + x] as i32 == u) as i32;
                    }
                }
                n
            };
            let p0 = count(v);
            let value = v + nd;
            let mut c = 0.0f32;
            for d in 0..nd {
                if value <= lut.tvi[d as usize] as i32 && value + d + 1 > lut.vlt_luma as i32 {
                    let p1 = count(v + d + 1);
                    let p2 = count(v - d - 1);
                    let pm = p1.max(p2);
                    let val =
                        (CONTRAST_WEIGHTS[d as usize] * p0 * pm) as f32 * RECIP[(p0 + pm) as usize];
                    if val > c {
                        c = val;
                    }
                }
            }
            out[i * w + j] = c;
        }
    }
    out
}

/// The run-based counts give the c-values of the definition, for many windows, sizes,
/// value bands and masks (narrow frames included: a window wider than the frame).
#[test]
fn c_values_match_their_definition() {
    let mut rng = Rng(12345);
    let mut s = CScratch::default();
    let params = [
        CambiParams::default(),
        CambiParams {
            vis_lum_threshold: 0.06,
            ..Default::default()
        },
        CambiParams {
            max_log_contrast: 0,
            ..Default::default()
        },
        CambiParams {
            max_log_contrast: 4,
            eotf: CambiEotf::Pq,
            tvi_threshold: 0.3,
            ..Default::default()
        },
    ];
    let (mut checked, mut nonzero) = (0, 0);
    for case in 0..60 {
        let p = &params[case % params.len()];
        let lut = Lut::new(p).unwrap();
        let w = 1 + rng.below(70) as usize;
        let h = 1 + rng.below(50) as usize;
        let pad = rng.below(w.min(h) as u64 + 3).min(32) as usize;
        // Values around the band's edges and in it, few distinct so that counts pile up.
        let centre = [lut.lo, lut.lo + 20, lut.lo + lut.len as i32 - 3, 60, 180][case % 5];
        let spread = 1 + rng.below(12) as i32;
        let density = rng.below(4);
        let mut img = vec![0u16; w * h];
        let mut mask = vec![0u8; w * h];
        for k in 0..w * h {
            // Runs of equal values along rows.
            img[k] = if k > 0 && rng.below(3) != 0 {
                img[k - 1]
            } else {
                (centre + rng.below(spread as u64) as i32 - spread / 2).clamp(0, 1024) as u16
            };
            mask[k] = (rng.below(4) >= density) as u8;
        }
        let want = reference_c_values(&img, &mask, w, h, pad, &lut);
        let stats = c_values(&img, &mask, w, h, pad, &lut, &mut s);
        let mut got = vec![0.0f32; w * h];
        for (&i, &c) in s.nz_idx.iter().zip(&s.nz_val) {
            got[i as usize] = c;
        }
        let mismatches: Vec<_> = (0..w * h)
            .filter(|&k| got[k].to_bits() != want[k].to_bits())
            .map(|k| (k % w, k / w, got[k], want[k]))
            .collect();
        assert!(
            mismatches.is_empty(),
            "case {case}: {w}x{h} pad {pad}: {} of {} differ: {:?}",
            mismatches.len(),
            w * h,
            &mismatches[..mismatches.len().min(10)]
        );
        let sum: f64 = want.iter().map(|&c| c as f64).sum();
        assert_eq!(stats.units, units(sum), "case {case}");
        assert_eq!(stats.nonzero, want.iter().filter(|&&c| c != 0.0).count());
        checked += w * h;
        nonzero += stats.nonzero;
    }
    eprintln!("{checked} c-values compared, {nonzero} non-zero");
    assert!(
        nonzero > checked / 10,
        "{nonzero} of {checked}: too few to test the counts"
    );
}

/// The largest counts a window holds (65x65, half of it one value, half its neighbour):
/// no overflow (overflow checks are on in tests), and the c-value of the definition.
#[test]
fn c_values_at_the_largest_window() {
    let p = CambiParams {
        window_size: 127,
        ..Default::default()
    };
    let (w, h) = (2048, 1024);
    let c = Cambi::new(&p, w, h, 10).unwrap();
    assert_eq!(c.window_sizes().0, 65);
    let mut data = vec![100u16; w * h];
    for y in 0..h {
        for x in w / 2..w {
            data[y * w + x] = 101;
        }
    }
    let s = c.compute(&plane(&data, w, h, 10), None).unwrap();
    assert!(s.cambi > 0.0);
    // The scale-0 c-value at the boundary: p0 = 33 * 65, p1 = 32 * 65 (or the reverse).
    let lut = &c.lut;
    let (img, mask) = (data.clone(), vec![1u8; w * h]);
    let mut cs = CScratch::default();
    c_values(&img, &mask, w, h, 32, lut, &mut cs);
    let at = (h / 2 * w + w / 2) as u32;
    let k = cs.nz_idx.iter().position(|&i| i == at).unwrap();
    let (p0, p1) = (33 * 65, 32 * 65);
    assert_eq!(cs.nz_val[k], (p0 * p1) as f32 * RECIP[(p0 + p1) as usize]);
}

#[test]
fn quick_select_keeps_the_top_k() {
    let mut rng = Rng(77);
    for case in 0..200 {
        let n = 1 + rng.below(300) as usize;
        let k = 1 + rng.below(n as u64) as usize;
        let distinct = 1 + rng.below(20);
        let mut a: Vec<f32> = (0..n).map(|_| rng.below(distinct) as f32 * 0.5).collect();
        let mut sorted = a.clone();
        sorted.sort_by(|x, y| y.total_cmp(x));
        quick_select(&mut a, k);
        let mut top = a[..k].to_vec();
        top.sort_by(|x, y| y.total_cmp(x));
        assert_eq!(top, sorted[..k], "case {case}: n {n} k {k}");
    }
}

/// The exact pooling equals libvmaf's quick_select and sequential sum whenever it is
/// taken (total below 2^53 units), with at most k and with more than k non-zero values.
#[test]
fn pooling_equals_quick_select_order() {
    let mut rng = Rng(4242);
    let mut full = Vec::new();
    for case in 0..300 {
        let n = 1 + rng.below(5000) as usize;
        let topk = [0.6, 0.0001, 1.0, 0.3, 0.99][case % 5];
        let density = rng.below(101);
        let mut arr = vec![0.0f32; n];
        for c in arr.iter_mut() {
            if rng.below(100) < density {
                let p0 = 1 + rng.below(2000) as i32;
                let pm = 1 + rng.below(2000) as i32;
                let wt = CONTRAST_WEIGHTS[rng.below(4) as usize];
                *c = (wt * p0 * pm) as f32 * RECIP[(p0 + pm) as usize];
            }
        }
        let nz_idx: Vec<u32> = (0..n as u32).filter(|&i| arr[i as usize] != 0.0).collect();
        let mut nz_val: Vec<f32> = nz_idx.iter().map(|&i| arr[i as usize]).collect();
        let sum: f64 = nz_val.iter().map(|&c| c as f64).sum();
        let stats = ScaleStats {
            units: units(sum),
            nonzero: nz_val.len(),
        };
        assert!(stats.units < EXACT_UNITS);
        let got = pool(stats, n, topk, &mut nz_val, &nz_idx, &mut full);
        let k = ((topk * n as f64) as i64).clamp(1, n as i64) as usize;
        let mut c_arr = arr.clone();
        quick_select(&mut c_arr, k);
        let want = average_topk(&c_arr, k);
        assert_eq!(got.to_bits(), want.to_bits(), "case {case}: n {n} k {k}");
    }
}

/// Above 2^53 units the replay runs: the same as libvmaf's order by construction.
#[test]
fn pooling_replays_quick_select_above_2_pow_53_units() {
    let n = 200_000;
    let mut rng = Rng(9);
    let arr: Vec<f32> = (0..n)
        .map(|_| {
            let p = 1000 + rng.below(1100) as i32;
            (4 * p * p) as f32 * RECIP[(2 * p) as usize]
        })
        .collect();
    let nz_idx: Vec<u32> = (0..n as u32).collect();
    let mut nz_val = arr.clone();
    let sum: f64 = arr.iter().map(|&c| c as f64).sum();
    assert!(sum > (1u64 << 29) as f64);
    let stats = ScaleStats {
        units: u64::MAX,
        nonzero: n,
    };
    let got = pool(stats, n, 0.6, &mut nz_val, &nz_idx, &mut Vec::new());
    let mut c_arr = arr;
    quick_select(&mut c_arr, 120_000);
    assert_eq!(got.to_bits(), average_topk(&c_arr, 120_000).to_bits());
}

#[test]
fn thresholds_depend_on_the_eotf() {
    let bt = Cambi::new(&CambiParams::default(), 640, 360, 10).unwrap();
    assert_eq!(bt.thresholds(), (vec![182, 309, 436, 563], 0));
    let v1 = CambiParams {
        vis_lum_threshold: 0.06,
        ..Default::default()
    };
    assert_eq!(
        Cambi::new(&v1, 640, 360, 10).unwrap().thresholds(),
        (vec![182, 309, 436, 563], 78)
    );
    let pq = CambiParams {
        eotf: CambiEotf::Pq,
        ..Default::default()
    };
    let c = Cambi::new(&pq, 640, 360, 10).unwrap();
    let (tvi, vlt) = c.thresholds();
    assert_ne!(tvi, vec![182, 309, 436, 563]);
    assert_eq!(vlt, 0);
    assert!(tvi.windows(2).all(|t| t[0] <= t[1]), "{tvi:?}");
    // And the score with it: PQ tests differences 2 to 4 at every value, BT.1886 only up
    // to raw 305, 432, 559.
    let (w, h) = (640, 360);
    let mut data = vec![0u16; w * h];
    for y in 0..h {
        for x in 0..w {
            let band = ((16 + x * 60 / w + y * 40 / h) * 4) as u16;
            data[y * w + x] = band + if x > 300 { 500 } else { 0 };
        }
    }
    let a = bt.compute(&plane(&data, w, h, 10), None).unwrap();
    let b = c.compute(&plane(&data, w, h, 10), None).unwrap();
    assert!(a.cambi > 0.0 && b.cambi > a.cambi, "{a:?} {b:?}");
    // The TVI thresholds grow with the difference for both EOTFs over the whole option
    // range (what the histogram band relies on; Lut::new refuses otherwise).
    for eotf in [CambiEotf::Bt1886, CambiEotf::Pq] {
        for t in [0.0001, 0.001, 0.01, 0.019, 0.05, 0.1, 0.3, 0.5, 1.0] {
            for mlc in 0..=5 {
                let p = CambiParams {
                    eotf,
                    tvi_threshold: t,
                    max_log_contrast: mlc,
                    ..Default::default()
                };
                Lut::new(&p).unwrap_or_else(|e| panic!("{eotf:?} {t} {mlc}: {e}"));
            }
        }
    }
    // The brightest visibility threshold: BT.1886 peaks at 300 cd/m², reached at the head.
    let top = CambiParams {
        vis_lum_threshold: 300.0,
        ..Default::default()
    };
    let c = Cambi::new(&top, 640, 360, 10).unwrap();
    assert_eq!(c.thresholds().1, 940);
    assert_eq!(c.lut.len, 0);
    assert_eq!(c.compute(&plane(&data, w, h, 10), None).unwrap().cambi, 0.0);
}

#[test]
fn full_reference_combines_the_two_scores() {
    let (w, h) = (480, 270);
    let dist = content(w, h, 8, 11);
    let refr = content(w, h, 8, 12);
    for max_val in [1000.0, 1.0] {
        let p = CambiParams {
            full_ref: true,
            max_val,
            ..Default::default()
        };
        let c = Cambi::new(&p, w, h, 8).unwrap();
        let unclipped = Cambi::new(&CambiParams::default(), w, h, 8).unwrap();
        for (a, b) in [(&dist, &refr), (&refr, &dist)] {
            let s = c
                .compute(&plane(a, w, h, 8), Some(&plane(b, w, h, 8)))
                .unwrap();
            let d = unclipped.compute(&plane(a, w, h, 8), None).unwrap().cambi;
            let r = unclipped.compute(&plane(b, w, h, 8), None).unwrap().cambi;
            assert!(d != r && d > 0.0 && r > 0.0);
            let (src, full) = s.full_ref.unwrap();
            assert_eq!(s.cambi, d.min(max_val));
            assert_eq!(src, r.min(max_val));
            assert_eq!(full, (d - r).max(0.0).min(max_val));
        }
    }
    // The source geometry: the reference resampled to src_width x src_height, with its
    // own window.
    let p = CambiParams {
        full_ref: true,
        src_width: 320,
        src_height: 200,
        ..Default::default()
    };
    let c = Cambi::new(&p, w, h, 8).unwrap();
    let ws = |w, h| adjust_window_size(65, w, h, false) as usize;
    assert_eq!(c.window_sizes(), (ws(480, 270), Some(ws(320, 200))));
    c.compute(&plane(&dist, w, h, 8), Some(&plane(&refr, w, h, 8)))
        .unwrap();
}

#[test]
fn encoding_size_decimates_the_input() {
    let (w, h) = (1280, 720);
    let data = content(w, h, 8, 5);
    let p = CambiParams {
        enc_width: 960,
        enc_height: 540,
        ..Default::default()
    };
    let c = Cambi::new(&p, w, h, 8).unwrap();
    assert_eq!(c.scale_sizes()[0], (960, 540));
    assert_eq!(
        c.window_sizes().0,
        adjust_window_size(65, 960, 540, false) as usize
    );
    let (xs, ys) = c.dist.resample.as_ref().unwrap();
    // ratio 4/3: (int)(x + 0.5) for x = 1/6 + j * 4/3 (1/6, 1.5, 2.83, 4.17, 5.5, ...).
    assert_eq!(&xs[..7], &[0, 2, 3, 4, 6, 7, 8]);
    assert_eq!(xs.len(), 960);
    assert_eq!(*xs.last().unwrap(), 1279);
    assert_eq!(ys.len(), 540);
    // The same score as the input resampled beforehand (no further resampling then).
    let mut small = Vec::with_capacity(960 * 540);
    for &y in ys {
        for &x in xs {
            small.push(data[y as usize * w + x as usize]);
        }
    }
    let direct = Cambi::new(&CambiParams::default(), 960, 540, 8).unwrap();
    let a = c.compute(&plane(&data, w, h, 8), None).unwrap();
    let b = direct.compute(&plane(&small, 960, 540, 8), None).unwrap();
    assert_eq!(a, b);
    let full = Cambi::new(&CambiParams::default(), w, h, 8).unwrap();
    assert_ne!(a, full.compute(&plane(&data, w, h, 8), None).unwrap());
    // Ratio 1 in one dimension is the identity.
    assert_eq!(
        resample_index(720, 720).unwrap(),
        (0..720).collect::<Vec<u32>>()
    );
}

/// 10-bit input scored in place (no copy) equals the same samples scored through the
/// preprocessing copy (8-bit input shifted, without anti-dithering), with and without the
/// speed-up; and every build of the kernels gives the same scores.
#[test]
fn in_place_path_and_instruction_sets_agree() {
    for (w, h, hrs) in [(1920usize, 1080usize, 1080), (641, 361, 0)] {
        let eight = content(w, h, 8, 21);
        let ten: Vec<u16> = eight.iter().map(|&v| v << 2).collect();
        let p10 = CambiParams {
            high_res_speedup: hrs,
            ..Default::default()
        };
        let p8 = CambiParams {
            enc_bitdepth: 10,
            ..p10
        };
        let c10 = Cambi::new(&p10, w, h, 10).unwrap();
        let c8 = Cambi::new(&p8, w, h, 8).unwrap();
        let a = c10.compute(&plane(&ten, w, h, 10), None).unwrap();
        let b = c8.compute(&plane(&eight, w, h, 8), None).unwrap();
        assert_eq!(a, b, "{w}x{h}");
        for isa in Isa::all_supported() {
            let a2 = c10.compute_with(&plane(&ten, w, h, 10), None, isa).unwrap();
            let b2 = c8.compute_with(&plane(&eight, w, h, 8), None, isa).unwrap();
            assert_eq!((a2, b2), (a, b), "{isa:?}");
        }
    }
}

#[test]
fn cambi_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Cambi>();
}

/// A strided plane gives the scores of its compact copy; scratch reused across geometries
/// and threads changes nothing.
#[test]
fn strides_and_scratch_reuse() {
    let (w, h) = (400, 300);
    let data = content(w, h, 10, 8);
    let stride = 416;
    let mut strided = vec![1023u16; stride * h];
    for y in 0..h {
        strided[y * stride..y * stride + w].copy_from_slice(&data[y * w..(y + 1) * w]);
    }
    let c = Cambi::new(&CambiParams::default(), w, h, 10).unwrap();
    let a = c.compute(&plane(&data, w, h, 10), None).unwrap();
    let view = Plane {
        data: &strided,
        width: w,
        height: h,
        stride,
        bpc: 10,
    };
    assert_eq!(c.compute(&view, None).unwrap(), a);
    let other = Cambi::new(&CambiParams::default(), 1280, 720, 8).unwrap();
    let big = content(1280, 720, 8, 9);
    let b = other.compute(&plane(&big, 1280, 720, 8), None).unwrap();
    assert_eq!(c.compute(&plane(&data, w, h, 10), None).unwrap(), a);
    assert_eq!(other.compute(&plane(&big, 1280, 720, 8), None).unwrap(), b);
    std::thread::scope(|sc| {
        let t = sc.spawn(|| c.compute(&plane(&data, w, h, 10), None).unwrap());
        assert_eq!(t.join().unwrap(), a);
    });
}
