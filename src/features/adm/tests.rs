use super::portable::best15;
use super::*;

/// The content generator shared with the script that produced the libvmaf numbers below
/// (a 64-bit LCG; `next` returns the top 31 bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Reference uniform noise, distorted = reference plus noise of +-max/8 (clamped).
    Noise,
    /// Reference random 0 or max, distorted its inverse (max - reference).
    MaxDiff,
}

fn content(kind: Kind, w: usize, h: usize, bpc: u8, seed: u64) -> (Vec<u16>, Vec<u16>) {
    let max = (1u32 << bpc) - 1;
    let mut g = Lcg(seed);
    let mut r = Vec::with_capacity(w * h);
    let mut d = Vec::with_capacity(w * h);
    for _ in 0..w * h {
        let (a, b) = match kind {
            Kind::Noise => {
                let a = g.next() % (max + 1);
                let n = g.next() % (max / 4 + 1);
                let b = (a as i64 + n as i64 - (max / 8) as i64).clamp(0, max as i64);
                (a, b as u32)
            }
            Kind::MaxDiff => {
                let a = if g.next() & 1 == 1 { max } else { 0 };
                (a, max - a)
            }
        };
        r.push(a as u16);
        d.push(b as u16);
    }
    (r, d)
}

struct Case {
    kind: Kind,
    width: usize,
    height: usize,
    bpc: u8,
    egl: f64,
    seed: u64,
    /// libvmaf 3.2.0 (plain C path, `cpumask` 255) through its API on the same content:
    /// integer_adm2, integer_adm3, integer_aim, integer_adm_scale0..3.
    want: [f64; 7],
}

/// Every width and height of 33, 35, 37, 63, 65, 66, 100, 130, 161 once, every depth 8..16
/// once, noise and max-difference content, enhancement gain limit 100 and 1.
#[rustfmt::skip]
const CASES: [Case; 9] = [
    Case { kind: Kind::Noise, width: 33, height: 63, bpc: 8, egl: 100.0, seed: 1000, want: [0.9139800334118716, 0.9539893353152096, 0.006001362781452599, 0.9172302137380381, 0.9045954823964759, 0.9179104662876021, 0.9173043914649394] },
    Case { kind: Kind::MaxDiff, width: 35, height: 130, bpc: 9, egl: 100.0, seed: 1001, want: [0.0747827132009274, 0.07477811774425683, 0.9252264777124137, 0.13969426946727062, 0.07596035593503363, 0.04989419102733989, 0.04159485991508988] },
    Case { kind: Kind::Noise, width: 37, height: 37, bpc: 10, egl: 1.0, seed: 1002, want: [0.8848502677774778, 0.9359350044843635, 0.012980258808750863, 0.9005827689503114, 0.9023555075698313, 0.8794696588056237, 0.845782519300777] },
    Case { kind: Kind::MaxDiff, width: 63, height: 100, bpc: 11, egl: 100.0, seed: 1003, want: [0.07700072437499618, 0.07699600130097634, 0.9230087217730435, 0.13740164353280937, 0.07785278285543967, 0.04909013593688553, 0.046066894009874744] },
    Case { kind: Kind::Noise, width: 65, height: 35, bpc: 12, egl: 100.0, seed: 1004, want: [0.9050660893207123, 0.9473198849740583, 0.010426319372595763, 0.9088374976033099, 0.9026073115230893, 0.8991297568482922, 0.9118782889912573] },
    Case { kind: Kind::MaxDiff, width: 66, height: 66, bpc: 13, egl: 1.0, seed: 1005, want: [0.0750976023346346, 0.07509399074621265, 0.9249096208422093, 0.13891392416073187, 0.07633944143143177, 0.04999219412199428, 0.042338857816014] },
    Case { kind: Kind::Noise, width: 100, height: 33, bpc: 14, egl: 100.0, seed: 1006, want: [0.8948146733149626, 0.9428427892679805, 0.00912909477900151, 0.9079631005528328, 0.9103763581186336, 0.869970232686999, 0.8931393211498302] },
    Case { kind: Kind::MaxDiff, width: 130, height: 65, bpc: 15, egl: 100.0, seed: 1007, want: [0.07582988860721865, 0.07582554932578052, 0.9241787899556576, 0.13817810233528274, 0.075174550899067, 0.05563998025445032, 0.03945206284210139] },
    Case { kind: Kind::Noise, width: 161, height: 161, bpc: 16, egl: 1.0, seed: 1008, want: [0.8992276679262737, 0.9412956434495143, 0.016636381027244917, 0.9022659430578357, 0.8941215771517679, 0.8933524878278702, 0.9092878790270484] },
];

fn scores_of(r: &[u16], d: &[u16], w: usize, h: usize, bpc: u8, p: &AdmParams) -> [f64; 7] {
    let acc = compute(
        Plane::from_slice(r, w, h, bpc),
        Plane::from_slice(d, w, h, bpc),
        p,
    );
    let s = acc.scores(p, w, h);
    [
        s.adm2, s.adm3, s.aim, s.scale[0], s.scale[1], s.scale[2], s.scale[3],
    ]
}

#[test]
fn odd_sizes_every_depth_match_libvmaf() {
    let mut bad = Vec::new();
    for c in &CASES {
        let (r, d) = content(c.kind, c.width, c.height, c.bpc, c.seed);
        let p = AdmParams {
            enhn_gain_limit: c.egl,
            ..AdmParams::default()
        };
        let got = scores_of(&r, &d, c.width, c.height, c.bpc, &p);
        for (k, (g, w)) in got.iter().zip(c.want).enumerate() {
            if *g != w {
                bad.push(format!(
                    "{:?} {}x{} {} bits egl {}: value {k}: got {g:?}, want {w:?}",
                    c.kind, c.width, c.height, c.bpc, c.egl
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Flat frames have no detail: every sum is 0, and libvmaf's scores are exactly 1 (the
/// numerator and denominator are both the noise term) with AIM 0; a flat 0 against a flat
/// 2^bpc - 1 is the same (the DWT's high-pass bands ignore the mean).
#[test]
fn flat_and_dc_difference_score_one() {
    for bpc in 8..=16u8 {
        let max = ((1u32 << bpc) - 1) as u16;
        for (w, h) in [(33, 33), (64, 37)] {
            for (a, b) in [(max / 3, max / 3), (0, max), (max, 0)] {
                let (r, d) = (vec![a; w * h], vec![b; w * h]);
                let p = AdmParams::default();
                let acc = compute(
                    Plane::from_slice(&r, w, h, bpc),
                    Plane::from_slice(&d, w, h, bpc),
                    &p,
                );
                assert_eq!(acc, AdmAccum::default(), "{w}x{h} {bpc} bits {a} vs {b}");
                let s = acc.scores(&p, w, h);
                assert_eq!((s.adm2, s.adm3, s.aim), (1.0, 1.0, 0.0));
                assert_eq!(s.scale, [1.0; 4]);
            }
        }
    }
}

/// The AVX2 decouple kernel's `i64 -> f32` conversion (double with round-to-odd) equals
/// `as f32` (round to nearest even) on values next to the f32 rounding boundaries of every
/// exponent (midpoints, one off, the double-rounding traps just beside a midpoint), both
/// signs, and the extremes.
#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_i64_to_f32_rounds_like_as_f32() {
    if !Isa::Avx2.supported() {
        eprintln!("no AVX2 on this CPU: nothing to check");
        return;
    }
    let mut vals = vec![
        0i64,
        1,
        -1,
        i64::MIN,
        i64::MAX,
        i64::MIN + 1,
        1 << 53,
        -(1 << 53),
    ];
    let mut g = Lcg(77);
    for e in 23..=62u32 {
        for _ in 0..64 {
            // A 24-bit mantissa at exponent e, the midpoint above it, and offsets that a
            // rounding to 53 bits would move onto or off the midpoint.
            let m = ((1i64 << 23) | (g.next() as i64 & ((1 << 23) - 1))) << (e - 23);
            let half = if e > 23 { 1i64 << (e - 24) } else { 0 };
            let tiny = if e > 53 { 1i64 << (e - 53) } else { 1 };
            for off in [
                0,
                half,
                half - 1,
                half + 1,
                half - tiny,
                half + tiny,
                half - tiny / 2,
            ] {
                for base in [m, m.saturating_add(off)] {
                    let low = (g.next() as i64) & (tiny - 1).max(0);
                    for v in [base, base ^ low, base.wrapping_neg()] {
                        vals.push(v);
                    }
                }
            }
        }
    }
    let mut bad = vec![];
    for c in vals.chunks(4) {
        let mut v = [0i64; 4];
        v[..c.len()].copy_from_slice(c);
        // SAFETY: AVX2 checked above.
        let got = unsafe { x86::i64_to_f32_array(v) };
        for (x, y) in v.iter().zip(got) {
            if (*x as f32).to_bits() != y.to_bits() {
                bad.push(format!("{x}: got {y:e}, want {:e}", *x as f32));
            }
        }
    }
    assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn strided_equals_compact() {
    let (w, h, bpc) = (67, 45, 10);
    let (r, d) = content(Kind::Noise, w, h, bpc, 7);
    let stride = w + 13;
    let embed = |v: &[u16]| {
        let mut out = vec![0xffffu16; 5 + stride * h];
        for y in 0..h {
            out[5 + y * stride..5 + y * stride + w].copy_from_slice(&v[y * w..(y + 1) * w]);
        }
        out
    };
    let (rs, ds) = (embed(&r), embed(&d));
    fn view(v: &[u16], w: usize, h: usize, stride: usize, bpc: u8) -> Plane<'_> {
        Plane {
            data: &v[5..],
            width: w,
            height: h,
            stride,
            bpc,
        }
    }
    let p = AdmParams::default();
    let strided = compute(
        view(&rs, w, h, stride, bpc),
        view(&ds, w, h, stride, bpc),
        &p,
    );
    let compact = compute(
        Plane::from_slice(&r, w, h, bpc),
        Plane::from_slice(&d, w, h, bpc),
        &p,
    );
    assert_eq!(strided, compact);
    assert_ne!(compact, AdmAccum::default());
}

/// Extreme content at every depth: stripes and checkerboards of 0 and 2^bpc - 1 (the
/// patterns that drive the DWT bands to their limits) against their inverse, a black frame
/// and themselves. Overflow checks are on in the test profile, so an unintended overflow
/// panics here. The scores must be finite and in range; a frame against itself has AIM 0
/// and ADM 1 up to libvmaf's fixed-point rounding (libvmaf 3.2.0 gives 1.0000062 for the
/// 8-bit row stripes and 0.99944 for the 8-bit checkerboard, hence the 1e-3 here).
#[test]
fn extreme_content_every_depth() {
    let (w, h) = (70, 41);
    for bpc in 8..=16u8 {
        let max = ((1u32 << bpc) - 1) as u16;
        let patterns: [&dyn Fn(usize, usize) -> bool; 5] = [
            &|x, y| (x + y) % 2 == 1,
            &|_, y| y % 4 == 2,
            &|x, _| x % 4 == 2,
            &|x, y| (x / 8 + y / 8) % 2 == 1,
            &|x, y| x % 4 != 1 && y % 4 == 2,
        ];
        for (k, pat) in patterns.iter().enumerate() {
            let r: Vec<u16> = (0..w * h)
                .map(|i| if pat(i % w, i / w) { max } else { 0 })
                .collect();
            let inverse: Vec<u16> = r.iter().map(|&v| max - v).collect();
            for (which, d) in [(0, inverse), (1, vec![0; w * h]), (2, r.clone())] {
                let s = scores_of(&r, &d, w, h, bpc, &AdmParams::default());
                let what = format!("{bpc} bits pattern {k} distorted {which}: {s:?}");
                assert!(s.iter().all(|v| v.is_finite()), "{what}");
                assert!((0.0..=1.0001).contains(&s[0]), "{what}");
                assert!((0.0..=1.0).contains(&s[2]), "{what}");
                if which == 2 {
                    assert!((s[0] - 1.0).abs() < 1e-3 && s[2] == 0.0, "{what}");
                }
            }
        }
    }
}

/// The largest scale-0 band magnitude B = 22 930 that the bounds of [`AdmScaleAccum`] use
/// is reached (by the +,+,+,- pattern of extreme vertical high-pass values) and not
/// exceeded on random extreme content.
#[test]
fn scale0_band_bound_is_tight() {
    let (w, h, bpc) = (40, 40, 16u8);
    let max = u16::MAX;
    // Output row 1 reads rows 1..=4, output column 1 reads columns 1..=4 of the vertical
    // pass. High-pass taps (-4240, -7345, 27411, -15826): rows (0, 0, max, 0) give +27411,
    // rows (max, max, 0, max) give -27411; columns 1, 2, 3 positive, 4 negative.
    let mut img = vec![0u16; w * h];
    for x in 1..=4 {
        let col = if x < 4 {
            [0, 0, max, 0]
        } else {
            [max, max, 0, max]
        };
        for (k, &v) in col.iter().enumerate() {
            img[(1 + k) * w + x] = v;
        }
    }
    let geo = geometry(w, h);
    let g = &geo[0];
    let (iy, ix) = (dwt_indices(h), dwt_indices(w));
    let mut b = Bands16::new(g.width * g.height);
    let (mut tlo, mut thi) = (vec![0i16; w], vec![0i16; w]);
    let plane = Plane::from_slice(&img, w, h, bpc);
    dwt_s0(&plane, &iy, &ix, &mut tlo, &mut thi, &mut b, g.width, false);
    assert_eq!(b.h[g.width + 1], 22930);

    let mut rng = Lcg(99);
    let mut largest = 0i32;
    for bpc in [8u8, 12, 16] {
        let m = ((1u32 << bpc) - 1) as u16;
        for _ in 0..20 {
            let img: Vec<u16> = (0..w * h)
                .map(|_| if rng.next() & 1 == 1 { m } else { 0 })
                .collect();
            let plane = Plane::from_slice(&img, w, h, bpc);
            dwt_s0(&plane, &iy, &ix, &mut tlo, &mut thi, &mut b, g.width, false);
            for band in [&b.a, &b.h, &b.v, &b.d] {
                largest = largest.max(band.iter().map(|&v| (v as i32).abs()).max().unwrap());
            }
        }
    }
    assert!(
        largest <= 22930 && largest > 15000,
        "largest band {largest}"
    );
}

/// The row bound of the scale-0 numerator (see [`AdmScaleAccum::num`]): along one band row,
/// the mean of |band|^3 is at most 19 383^3 (the best periodic pattern of the +-27 411
/// vertical-pass extremes, found as the maximum mean cycle over the 4 states of the two
/// taps that neighbouring outputs share), so with the masking threshold at its most
/// favourable (0) a row sum stays below i64::MAX at any frame size.
#[test]
fn scale0_numerator_row_bound() {
    let m = 27411i64;
    let mut best = 0f64;
    for f in [LO, HI] {
        let gain = |a: i64, b: i64, c: i64, d: i64| {
            let v =
                (f[0] as i64 * a + f[1] as i64 * b + f[2] as i64 * c + f[3] as i64 * d).abs() * m;
            let v = ((v + 32768) >> 16) as f64;
            v * v * v
        };
        let states = [(-1i64, -1i64), (-1, 1), (1, -1), (1, 1)];
        // Simple cycles of up to 4 states (enough for the maximum mean cycle of 4 nodes).
        for len in 1..=4usize {
            for code in 0..4usize.pow(len as u32) {
                let cyc: Vec<_> = (0..len).map(|i| states[(code >> (2 * i)) & 3]).collect();
                let total: f64 = (0..len)
                    .map(|i| {
                        let (a, b) = cyc[i];
                        let (c, d) = cyc[(i + 1) % len];
                        gain(a, b, c, d)
                    })
                    .sum();
                best = best.max(total / len as f64);
            }
        }
    }
    assert_eq!(best, 19383f64.powi(3));
    // Per pixel before the cube shift (h, v): x = 19 383 * 36 453, x_sq = x^2 >> 29,
    // x_sq * x; a row holds at most 0.8 * band width pixels and is shifted by
    // ceil(log2(band width)) - 4, so at most 0.8 * 16 of these per row.
    let x = 19383f64 * 36453.0;
    let row_hv = 0.8 * 16.0 * (x * x / 2f64.powi(29)) * x;
    let x = 19383f64 * 49417.0;
    let row_d = 0.8 * 8.0 * (x * x / 2f64.powi(30)) * x;
    assert!(row_hv < 8.5e18 && row_d < 5.3e18, "{row_hv:e} {row_d:e}");
    assert!(row_hv < i64::MAX as f64);
    // The same with every accepted CSF's scale-0 factors: the blend's largest (1080_3H,
    // 24 809 / 36 087) gives 2.7e18 and 2.0e18.
    let mut largest = (0f64, 0f64);
    for (name, c) in factor_sets().into_iter().skip(1) {
        let x = 19383f64 * c.rfactor_s0[0] as f64;
        let hv = 0.8 * 16.0 * (x * x / 2f64.powi(29)) * x;
        let x = 19383f64 * c.rfactor_s0[2] as f64;
        let d = 0.8 * 8.0 * (x * x / 2f64.powi(30)) * x;
        assert!(hv <= row_hv && d <= row_d, "{name}: {hv:e} {d:e}");
        largest = (largest.0.max(hv), largest.1.max(d));
    }
    assert!(
        (2.6e18..2.7e18).contains(&largest.0) && (2.0e18..2.1e18).contains(&largest.1),
        "{largest:?}"
    );
}

/// A linear form over the samples of one side: coefficient `k` is that of sample
/// `start + k`.
#[derive(Clone)]
struct Form {
    start: usize,
    coef: Vec<i128>,
}

impl Form {
    fn l1(&self) -> u128 {
        self.coef.iter().map(|c| c.unsigned_abs()).sum()
    }
}

/// `c[0] * f[t[0]] + ... + c[3] * f[t[3]]`.
fn combine(f: &[Form], t: &[usize; 4], c: &[i32; 4]) -> Form {
    let start = t.iter().map(|&i| f[i].start).min().unwrap();
    let end = t
        .iter()
        .map(|&i| f[i].start + f[i].coef.len())
        .max()
        .unwrap();
    let mut coef = vec![0i128; end - start];
    for (&i, &ck) in t.iter().zip(c) {
        for (k, &x) in f[i].coef.iter().enumerate() {
            coef[f[i].start - start + k] += ck as i128 * x;
        }
    }
    Form { start, coef }
}

/// The one-dimensional composite filters of the DWT cascade on a side of `n` samples,
/// through libvmaf's mirrored index tables ([`dwt_indices`]): per scale, for every output,
/// the low-pass form (what the next scale reads) and the high-pass form, as integer taps
/// before any shift. A 2-D band value is the outer product of a vertical and a horizontal
/// form (h: vertical high, horizontal low; v: vertical low, horizontal high; d: both high).
fn composites(n: usize) -> Vec<Vec<(Form, Form)>> {
    let mut cur: Vec<Form> = (0..n)
        .map(|i| Form {
            start: i,
            coef: vec![1],
        })
        .collect();
    let mut out = Vec::new();
    for _ in 0..4 {
        let scale: Vec<(Form, Form)> = dwt_indices(cur.len())
            .iter()
            .map(|t| (combine(&cur, t, &LO), combine(&cur, t, &HI)))
            .collect();
        cur = scale.iter().map(|(lo, _)| lo.clone()).collect();
        out.push(scale);
    }
    out
}

/// The DWT's (vertical, horizontal) shifts per scale: scale 0 `bpc` (16 here: the
/// normalisation below makes every depth the same) and 16, then libvmaf's
/// `adm_dwt2_s123_combined` shifts.
const DWT_SHIFTS: [(u32, u32); 4] = [(16, 16), (0, 15), (16, 16), (16, 15)];

/// Largest band magnitudes per scale, `[h and v, d, a]`: with the centred sample
/// `u = (x - 2^(bpc-1)) / 2^bpc` in [-1/2, 1/2) (the scale-0 vertical pass subtracts
/// `46342 * 2^(bpc-1)`, the high-pass taps sum to 0), a band is `(Cv x Ch) . u` over
/// `2^(total shift - 16)`, whose maximum is `L1(Cv) * L1(Ch) / 2^(total - 15)`, plus the
/// rounding of every stage (at most 1/2 each, carried through the later stages' gains).
/// Maximised over every output position of every side length 33..=160 (beyond about 100
/// the two edges no longer interact, and the edge cases repeat with period 16) and of the
/// 16K sides 15360 and 8640.
fn band_bounds() -> [[u128; 3]; 4] {
    let mut l1 = [[0u128; 2]; 4];
    for n in (33..=160).chain([8640, 15360]) {
        for (s, outs) in composites(n).iter().enumerate() {
            for (lo, hi) in outs {
                l1[s][0] = l1[s][0].max(lo.l1());
                l1[s][1] = l1[s][1].max(hi.l1());
            }
        }
    }
    let mut out = [[0u128; 3]; 4];
    let (mut total, mut slack) = (0u32, 0f64);
    for s in 0..4 {
        for sh in [DWT_SHIFTS[s].0, DWT_SHIFTS[s].1] {
            total += sh;
            slack = slack * 54822.0 / 2f64.powi(sh as i32) + if sh > 0 { 0.5 } else { 0.0 };
        }
        let [lo, hi] = l1[s];
        let div = 1u128 << (total - 15);
        let b = |x: u128, y: u128| (x * y).div_ceil(div) + slack.ceil() as u128;
        out[s] = [b(hi, lo), b(hi, hi), b(lo, lo)];
    }
    out
}

/// The band bounds of [`AdmScaleAccum`] at scales 1-3 (scale 0's 22 930 is
/// `scale0_band_bound_is_tight`, which this reproduces up to its rounding allowance).
#[test]
fn band_bounds_every_scale() {
    let b = band_bounds();
    assert_eq!(b[0], [22931, 22931, 22931]);
    assert_eq!(b[1], [1_510_836_459, 1_407_857_666, 1_621_348_162]);
    assert_eq!(b[2], [776_951_815, 751_569_686, 803_191_219]);
    assert_eq!(b[3], [772_371_675, 736_509_794, 809_979_926]);
}

/// The h, v, d bands of every scale of one image, as the DWT of [`compute_in`] makes them.
fn dwt_bands(img: &[u16], w: usize, h: usize, bpc: u8) -> Vec<[Vec<i32>; 3]> {
    let geo = geometry(w, h);
    let mut ws = Workspace::new(&geo, (w, h));
    let g = &geo[0];
    let (iy, ix) = (dwt_indices(g.in_height), dwt_indices(g.in_width));
    let plane = Plane::from_slice(img, w, h, bpc);
    dwt_s0(
        &plane,
        &iy,
        &ix,
        &mut ws.tlo16,
        &mut ws.thi16,
        &mut ws.ref16,
        g.width,
        false,
    );
    let widen = |v: &[i16]| v[..g.width * g.height].iter().map(|&x| x as i32).collect();
    let mut out = vec![[widen(&ws.ref16.h), widen(&ws.ref16.v), widen(&ws.ref16.d)]];
    for (scale, g) in geo.iter().enumerate().skip(1) {
        let (iy, ix) = (dwt_indices(g.in_height), dwt_indices(g.in_width));
        let b32 = &mut ws.ref32;
        let [a0, a1] = &mut b32.a;
        let (input, a): (&[i32], _) = match scale {
            1 => (&[], Some(&mut a1[..])),
            2 => (&a1[..], Some(&mut a0[..])),
            _ => (&a0[..], None),
        };
        let dout = DwtOut {
            a,
            h: &mut b32.h,
            v: &mut b32.v,
            d: &mut b32.d,
        };
        let (tlo, thi) = (&mut ws.tlo32, &mut ws.thi32);
        if scale == 1 {
            dwt_s123(&ws.ref16.a, &iy, &ix, tlo, thi, dout, g, scale);
        } else {
            dwt_s123(input, &iy, &ix, tlo, thi, dout, g, scale);
        }
        let n = g.width * g.height;
        out.push([
            b32.h[..n].to_vec(),
            b32.v[..n].to_vec(),
            b32.d[..n].to_vec(),
        ]);
    }
    out
}

/// The bounds of `band_bounds_every_scale` are reached: for every scale 1-3 and orientation,
/// at the worst output position of the side lengths where the global maxima occur, the
/// 16-bit image `2^16 - 1` where the composite coefficient is positive and 0 elsewhere
/// gives a band value equal to the linear prediction up to the rounding allowance, and
/// within 0.01% + the allowance of the bound.
#[test]
fn band_bounds_are_reached() {
    let bounds = band_bounds();
    // The side lengths (33..=160) where each scale's largest low-pass and high-pass forms
    // occur, and those positions.
    let mut worst: [[(u128, usize, usize); 2]; 4] = [[(0, 0, 0); 2]; 4];
    for n in 33..=160 {
        for (s, outs) in composites(n).iter().enumerate() {
            for (j, (lo, hi)) in outs.iter().enumerate() {
                for (k, f) in [lo, hi].into_iter().enumerate() {
                    if f.l1() > worst[s][k].0 {
                        worst[s][k] = (f.l1(), n, j);
                    }
                }
            }
        }
    }
    let mut bad = Vec::new();
    let mut total = 0u32;
    let mut slack = 0f64;
    for s in 0..4 {
        for sh in [DWT_SHIFTS[s].0, DWT_SHIFTS[s].1] {
            total += sh;
            slack = slack * 54822.0 / 2f64.powi(sh as i32) + if sh > 0 { 0.5 } else { 0.0 };
        }
        if s == 0 {
            continue;
        }
        // (orientation, vertical form kind, horizontal form kind); kind 0 low, 1 high.
        for (theta, kv, kh) in [(0usize, 1usize, 0usize), (1, 0, 1), (2, 1, 1)] {
            let (_, h, i) = worst[s][kv];
            let (_, w, j) = worst[s][kh];
            let cv = &composites(h)[s][i];
            let ch = &composites(w)[s][j];
            let fv = if kv == 0 { &cv.0 } else { &cv.1 };
            let fh = if kh == 0 { &ch.0 } else { &ch.1 };
            let coef = |f: &Form, x: usize| {
                x.checked_sub(f.start)
                    .and_then(|k| f.coef.get(k))
                    .copied()
                    .unwrap_or(0)
            };
            let mut img = vec![0u16; w * h];
            let mut predicted = 0f64;
            for y in 0..h {
                for x in 0..w {
                    let c = coef(fv, y) * coef(fh, x);
                    let px = if c > 0 { u16::MAX } else { 0 };
                    img[y * w + x] = px;
                    predicted += c as f64 * (px as f64 - 32768.0);
                }
            }
            // C . q over 2^(total shift), q = x - 2^15 (the scale-0 vertical pass's shift
            // is part of the total).
            predicted /= 2f64.powi(total as i32);
            let bands = dwt_bands(&img, w, h, 16);
            let bw = geometry(w, h)[s].width;
            let got = bands[s][theta][i * bw + j] as f64;
            let bound = bounds[s][[0, 0, 1][theta]] as f64;
            if (got - predicted).abs() > slack || got < bound * 0.9999 - 2.0 * slack {
                bad.push(format!(
                    "scale {s} theta {theta} ({w}x{h} at {i},{j}): got {got}, linear \
                     {predicted}, bound {bound}, allowance {slack}"
                ));
            }
            for (t, band) in bands.iter().enumerate() {
                for (o, b) in band.iter().enumerate() {
                    let lim = bounds[t][[0, 0, 1][o]] as i64;
                    let m = b.iter().map(|&v| (v as i64).abs()).max().unwrap();
                    if m > lim {
                        bad.push(format!("scale {t} theta {o}: |band| {m} > {lim}"));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every CSF factor set that validation accepts: Watson's (largest at nvd * rdh = 3240,
/// where scale 0 takes the hard-coded factors) and each blend table's.
fn factor_sets() -> Vec<(String, AdmConstants)> {
    let mut out = vec![(
        "Watson 1080@3".to_string(),
        AdmConstants::new(&AdmParams::default()),
    )];
    for (rdh, nvd) in BLENDED_CSF.iter().map(|(k, _)| *k).chain([(2160, 1.5)]) {
        let p = AdmParams {
            csf_mode: CSF_MODE_BARTEN_WATSON_BLEND,
            norm_view_dist: nvd,
            ref_display_height: rdh,
            ..AdmParams::default()
        };
        if p.validate().is_ok() {
            out.push((format!("blend {rdh}@{nvd}"), AdmConstants::new(&p)));
        }
    }
    out
}

/// Watson's factors shrink as nvd * rdh grows (what the bounds use: the default is the
/// largest), and no blend table that validation accepts has a scale-0 factor above the
/// hard-coded Watson ones, so every scale-0 bound of [`AdmScaleAccum`] (written for
/// 36 453 / 49 417) holds for both CSFs.
#[test]
fn csf_factors_largest_cases() {
    let def = AdmConstants::new(&AdmParams::default());
    let mut bad = Vec::new();
    for rdh in [1080u32, 1440, 2160, 4320] {
        for k in 0..=96 {
            let nvd = 0.75 + 0.25 * k as f64;
            let p = AdmParams {
                norm_view_dist: nvd,
                ref_display_height: rdh,
                ..AdmParams::default()
            };
            if p.validate().is_err() {
                continue;
            }
            let c = AdmConstants::new(&p);
            let s0_ok = c
                .rfactor_s0
                .iter()
                .zip(def.rfactor_s0)
                .all(|(a, b)| *a <= b);
            let s123_ok = (1..4).all(|s| {
                c.rfactor_s123[s]
                    .iter()
                    .zip(def.rfactor_s123[s])
                    .all(|(a, b)| *a <= b)
            });
            if !s0_ok || !s123_ok {
                bad.push(format!("Watson {rdh}@{nvd}: {c:?}"));
            }
        }
    }
    for (name, c) in factor_sets() {
        if c.rfactor_s0.iter().zip(def.rfactor_s0).any(|(a, b)| *a > b) {
            bad.push(format!("{name}: scale 0 {:?}", c.rfactor_s0));
        }
        for s in 1..4 {
            if c.rfactor_s123[s].iter().any(|&f| f >= 1 << 28) {
                bad.push(format!("{name}: scale {s} {:?} >= 2^28", c.rfactor_s123[s]));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The scale 1-3 numerator bounds of [`AdmScaleAccum::num`] for every accepted CSF: the
/// largest CSF value `|csf| = ((B + 1) * rfactor + 2^27) >> 28` (`B + 1`: the decoupled
/// `a = t - r` is at most `|t| + 1`), the threshold (at least -27: each of the 27 terms is
/// at least -1, libvmaf's -2^31 rounding) and so the largest `x = |csf| - thr`; `x_sq =
/// (x^2 + 2^29) >> 30` must fit int32 (x <= 1 518 500 249), and the row and total sums at
/// 16K must fit int64. Prints the table of the documentation.
#[test]
fn scale123_numerator_bounds_every_csf() {
    let b = band_bounds();
    let geo = geometry(15360, 8640);
    let mut bad = Vec::new();
    // Per CSF: name, then per scale 1-3 [h,v; d] of `x` and of the 16K total.
    type PerScale = [[i128; 2]; 3];
    let mut table: Vec<(String, PerScale, PerScale)> = Vec::new();
    for (name, c) in factor_sets() {
        let (mut xs, mut totals) = ([[0i128; 2]; 3], [[0i128; 2]; 3]);
        for s in 1..4 {
            let g = &geo[s];
            let (cub, inner) = cm_shifts_s123(g);
            // Threshold: the 8 neighbours' flt and the centre term of each orientation.
            let mut thr = 0i128;
            let mut x_max = [0i128; 3];
            for theta in 0..3 {
                let bb = b[s][if theta < 2 { 0 } else { 1 }] as i128 + 1;
                let f = c.rfactor_s123[s][theta] as i128;
                let csf = (bb * f + (1 << 27)) >> 28;
                let flt = (I4_FIX_ONE_BY_30 as i128 * csf + I4_FLT_ROUND as i128) >> 32;
                let centre = (I4_ONE_BY_15 as i128 * csf + I4_FLT_ROUND as i128) >> 32;
                thr += 8 * flt + centre;
                x_max[theta] = csf + 27;
            }
            if thr > i32::MAX as i128 {
                bad.push(format!("{name} scale {s}: threshold {thr} > i32::MAX"));
            }
            for (theta, &x) in x_max.iter().enumerate() {
                let x_sq = (x * x + (1 << 29)) >> 30;
                if x_sq > i32::MAX as i128 {
                    bad.push(format!("{name} scale {s} theta {theta}: x_sq {x_sq} wraps"));
                }
                let term = (x_sq * x + (1 << (cub - 1))) >> cub;
                let row = term * g.inner.width() as i128;
                let total = g.inner.height() as i128 * ((row + (1 << (inner - 1))) >> inner);
                if row > i64::MAX as i128 || total > i64::MAX as i128 {
                    bad.push(format!("{name} scale {s} theta {theta}: {row} {total}"));
                }
                if theta != 1 {
                    eprintln!(
                        "{name:>16} scale {s} {}: rfactor {:>9} x <= {x:>10} \
                         row <= {row:.3e} total <= {total:.3e}",
                        ["h,v", "", "d"][theta],
                        c.rfactor_s123[s][theta],
                        row = row as f64,
                        total = total as f64,
                    );
                    xs[s - 1][theta / 2] = x;
                    totals[s - 1][theta / 2] = total;
                }
            }
        }
        table.push((name, xs, totals));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let find = |n: &str| table.iter().find(|t| t.0 == n).unwrap();
    // The numbers of the documentation: Watson at 3 * 1080 and the blend's 1080_3H table
    // (the same as 2160_1.5H) bound every accepted CSF, scale by scale.
    let (watson, blend) = (find("Watson 1080@3"), find("blend 1080@3"));
    assert_eq!(find("blend 2160@1.5").1, blend.1);
    assert_eq!(
        watson.1,
        [
            [773_181_546, 322_096_860],
            [539_175_509, 293_375_646],
            [564_429_615, 368_994_234]
        ]
    );
    assert_eq!(
        blend.1,
        [
            [604_963_099, 265_307_984],
            [533_921_323, 287_616_717],
            [724_435_233, 423_063_024]
        ]
    );
    for (name, xs, totals) in &table {
        for s in 0..3 {
            for k in 0..2 {
                let lim = watson.1[s][k].max(blend.1[s][k]);
                let tlim = watson.2[s][k].max(blend.2[s][k]);
                assert!(
                    xs[s][k] <= lim && totals[s][k] <= tlim,
                    "{name} scale {}",
                    s + 1
                );
            }
        }
    }
    let largest_total = table.iter().flat_map(|t| t.2.concat()).max().unwrap();
    assert!(largest_total < 1.4e17 as i128, "{largest_total}");
}

#[test]
fn dwt_indices_mirror_like_libvmaf() {
    assert_eq!(
        dwt_indices(5),
        vec![[1, 0, 1, 2], [1, 2, 3, 4], [3, 4, 4, 3]]
    );
    assert_eq!(
        dwt_indices(6),
        vec![[1, 0, 1, 2], [1, 2, 3, 4], [3, 4, 5, 5]]
    );
    let t = dwt_indices(33);
    assert_eq!(t.len(), 17);
    assert_eq!(t[1], [1, 2, 3, 4]);
    assert_eq!(t[15], [29, 30, 31, 32]);
    assert_eq!(t[16], [31, 32, 32, 31]);
    // 33 is the smallest size whose scale-3 DWT input (5) has a valid table.
    assert_eq!(geometry(33, 33)[3].in_width, 5);
    assert_eq!(geometry(32, 32)[3].in_width, 4);
}

#[test]
fn geometry_of_carphone() {
    let g = geometry(176, 144);
    assert_eq!((g[0].width, g[0].height), (88, 72));
    assert_eq!(
        g[0].inner,
        Rect {
            left: 8,
            top: 6,
            right: 80,
            bottom: 66
        }
    );
    assert_eq!(
        g[0].outer,
        Rect {
            left: 7,
            top: 5,
            right: 83,
            bottom: 69
        }
    );
    assert_eq!((g[3].width, g[3].height), (11, 9));
    // 1.1 - 0.5 truncates to 0: the region reaches the border at scale 3.
    assert_eq!(g[3].inner.left, 0);
    assert_eq!(
        g[3].outer,
        Rect {
            left: 0,
            top: 0,
            right: 11,
            bottom: 9
        }
    );
}

/// Constants against a C program that evaluates libvmaf's expressions with gcc and glibc.
#[test]
fn constants_match_libvmaf_expressions() {
    let c = AdmConstants::new(&AdmParams::default());
    assert_eq!(c.cos_1deg_sq.to_bits(), 0x3f7fec0a);
    let want = [
        [0x3c8e63ba, 0x3bc106aa],
        [0x3d030286, 0x3c6a46a3],
        [0x3d31a788, 0x3cc7dc06],
        [0x3d3b140b, 0x3d0041c9],
    ];
    assert_eq!(c.csf_factor.map(|f| f.map(f32::to_bits)), want);
    assert_eq!(c.rfactor_s0, [36453, 36453, 49417]);
    assert_eq!(c.rfactor_s123[1], [137373792, 137373792, 61414028]);
    assert_eq!(c.rfactor_s123[2], [186284160, 186284160, 104783920]);
    assert_eq!(c.rfactor_s123[3], [196165808, 196165808, 134487184]);

    let p = AdmParams {
        norm_view_dist: 4.5,
        ref_display_height: 2160,
        ..AdmParams::default()
    };
    let c = AdmConstants::new(&p);
    let want = [
        [0x3b067743, 0x3a09e8d6],
        [0x3ba86227, 0x3ae3ce8c],
        [0x3c1b61f5, 0x3b843ff2],
        [0x3c5eb1fa, 0x3be70426],
    ];
    assert_eq!(c.csf_factor.map(|f| f.map(f32::to_bits)), want);
    assert_eq!(c.rfactor_s0, [4302, 4302, 4413]);
    assert_eq!(c.rfactor_s123[3], [58378216, 58378216, 30279756]);
}

/// Mode 2 constants against a C program that includes libvmaf's barten_csf_tools.h and
/// evaluates `barten_watson_blend_csf` and the `(uint16_t)(f * pow(2, 21))` (`2^23` for d)
/// and `(uint32_t)(f * pow(2, 32))` conversions with gcc 12 and glibc, for every
/// `(rdh, nvd)` pair that validation accepts in mode 2. Scale 0 does not take Watson's
/// hard-coded 36453/49417 in mode 2, even at 3 * 1080.
#[test]
fn blend_constants_match_libvmaf() {
    #[rustfmt::skip]
    // (rdh, nvd), the float factors' bits per scale [h,v; d], scale-0 i_rfactor [h,v; d],
    // scales 1-3 rfactor [h,v; d].
    type Case = ((u32, f64), [[u32; 2]; 4], [u16; 2], [[u32; 2]; 3]);
    let cases: [Case; 6] = [
        (
            (1080, 3.0),
            [
                [0x3c41d29e, 0x3b8cf7cb],
                [0x3ccd0353, 0x3c40f883],
                [0x3d2fec57, 0x3cc3efae],
                [0x3d701c93, 0x3d130ced],
            ],
            [24809, 36087],
            [
                [107485848, 50586124],
                [184468848, 102727024],
                [251775280, 154193616],
            ],
        ),
        (
            (1080, 5.0),
            [
                [0x3b8a04d1, 0x3a80f990],
                [0x3c72a173, 0x3bbfc222],
                [0x3cf2d3c8, 0x3c6f34d7],
                [0x3d42699c, 0x3ce1e2df],
            ],
            [8833, 8254],
            [
                [63604172, 25134148],
                [127311424, 62706524],
                [203856320, 118429432],
            ],
        ),
        (
            (2160, 1.5),
            [
                [0x3c41d29e, 0x3b8cf7cb],
                [0x3ccd0353, 0x3c40f883],
                [0x3d2fec57, 0x3cc3efae],
                [0x3d701c93, 0x3d130ced],
            ],
            [24809, 36087],
            [
                [107485848, 50586124],
                [184468848, 102727024],
                [251775280, 154193616],
            ],
        ),
        (
            (2160, 3.0),
            [
                [0x3b141c82, 0x39fb224b],
                [0x3c41d29e, 0x3b8cf7cb],
                [0x3ccd0353, 0x3c40f883],
                [0x3d2fec57, 0x3cc3efae],
            ],
            [4739, 4018],
            [
                [50809464, 18476950],
                [107485848, 50586124],
                [184468848, 102727024],
            ],
        ),
        (
            (2160, 5.0),
            [
                [0x38c0f020, 0x3851b717],
                [0x3b8a04d1, 0x3a80f990],
                [0x3c72a173, 0x3bbfc222],
                [0x3cf2d3c8, 0x3c6f34d7],
            ],
            [192, 419],
            [
                [18090402, 4226248],
                [63604172, 25134148],
                [127311424, 62706524],
            ],
        ),
        (
            (720, 5.0),
            [
                [0x3c263305, 0x3b62f380],
                [0x3cb8d1d9, 0x3c2875d5],
                [0x3d251b0d, 0x3cb2e7b4],
                [0x3d68533b, 0x3d0de3b9],
            ],
            [21273, 29049],
            [
                [96898760, 44160852],
                [173125840, 93797792],
                [243610544, 148781968],
            ],
        ),
    ];
    let mut bad = Vec::new();
    for ((rdh, nvd), bits, s0, s123) in cases {
        let p = AdmParams {
            csf_mode: CSF_MODE_BARTEN_WATSON_BLEND,
            norm_view_dist: nvd,
            ref_display_height: rdh,
            ..AdmParams::default()
        };
        if let Err(e) = p.validate() {
            bad.push(format!("{rdh}@{nvd}: {e}"));
        }
        let c = AdmConstants::new(&p);
        let got = (
            c.csf_factor.map(|f| f.map(f32::to_bits)),
            c.rfactor_s0,
            [1, 2, 3].map(|s| [c.rfactor_s123[s][0], c.rfactor_s123[s][2]]),
        );
        let want = (bits, [s0[0], s0[0], s0[1]], s123);
        let hv_equal = (1..4).all(|s| c.rfactor_s123[s][0] == c.rfactor_s123[s][1]);
        if got != want || !hv_equal {
            bad.push(format!("{rdh}@{nvd}: got {got:?}, want {want:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `adm_csf_mode`: 0 and 2 are accepted (2 only with a table and nvd * rdh >= 3240), 1 and
/// 3 refused as not implemented, anything else as out of libvmaf's range; each error names
/// what it refuses.
#[test]
fn csf_mode_validation() {
    let mode = |m: i32, rdh: u32, nvd: f64| AdmParams {
        csf_mode: m,
        norm_view_dist: nvd,
        ref_display_height: rdh,
        ..AdmParams::default()
    };
    let err = |p: AdmParams| match p.validate() {
        Err(Error::Model(m)) => m,
        other => panic!("{p:?}: {other:?}"),
    };
    for (rdh, nvd) in [
        (1080, 3.0),
        (1080, 5.0),
        (2160, 1.5),
        (2160, 3.0),
        (2160, 5.0),
        (720, 5.0),
    ] {
        assert!(mode(2, rdh, nvd).validate().is_ok(), "{rdh}@{nvd}");
    }
    // Watson takes any viewing condition from 3240 on.
    assert!(mode(0, 1080, 4.0).validate().is_ok());
    for (rdh, nvd) in [
        (1080, 4.0),
        (1080, 3.0000001),
        (1440, 3.0),
        (4320, 1.5),
        (2160, 2.0),
    ] {
        let m = err(mode(2, rdh, nvd));
        assert!(
            m.contains("adm_csf_mode 2")
                && m.contains(&format!("adm_ref_display_height {rdh} "))
                && m.contains(&format!("adm_norm_view_dist {nvd} ")),
            "{m}"
        );
        assert!(
            m.contains("1080@3, 1080@5, 2160@3, 2160@5, 720@5, 2160@1.5"),
            "{m}"
        );
    }
    // A table, but below libvmaf's 3 * 1080.
    for (rdh, nvd) in [(720, 3.0), (480, 3.0), (480, 5.0)] {
        assert!(err(mode(2, rdh, nvd)).contains("below libvmaf's minimum 3240"));
    }
    for m in [1, 3] {
        let e = err(mode(m, 1080, 3.0));
        assert!(
            e.contains(&format!("adm_csf_mode {m}")) && e.contains("not implemented"),
            "{e}"
        );
    }
    for m in [-1, 4] {
        assert!(err(mode(m, 1080, 3.0)).contains("outside libvmaf's range 0 to 3"));
    }
    // Refused parameters still give constants without panicking.
    let c = AdmConstants::new(&mode(2, 1080, 4.0));
    assert_eq!((c.rfactor_s0, c.csf_factor[3]), ([0; 3], [-22.0; 2]));
}

#[test]
fn div_lookup_is_libvmafs() {
    let t = div_lookup();
    assert_eq!(t[32768], 0);
    assert_eq!(t[32769], 1 << 30);
    assert_eq!(t[32767], -(1 << 30));
    assert_eq!(t[32768 + 3], 357913941);
    assert_eq!(t[32768 + 32768], 32768);
    assert_eq!(t[0], -32768);
}

#[test]
fn best15_is_get_best15_from32() {
    assert_eq!(best15(0), (0, 0));
    assert_eq!(best15(32767), (32767, 0));
    // clz(32768) = 16: shift 1.
    assert_eq!(best15(32768), (16384, 1));
    assert_eq!(best15(65535), (32768, 1));
    assert_eq!(best15(0x7fff_ffff), (32768, 16));
    assert_eq!(best15(1_000_000), ((1_000_000 + 16) >> 5, 5));
}

#[test]
fn bad_input_is_refused() {
    let p = AdmParams::default();
    let v = vec![0u16; 64 * 64];
    let plane = |w, h, bpc| Plane::from_slice(&v, w, h, bpc);
    assert!(matches!(
        check(&plane(32, 33, 8), &plane(32, 33, 8), &p),
        Err(Error::TooSmall { .. })
    ));
    assert!(matches!(
        check(&plane(40, 40, 8), &plane(40, 41, 8), &p),
        Err(Error::Mismatch(_))
    ));
    assert!(matches!(
        check(&plane(40, 40, 7), &plane(40, 40, 7), &p),
        Err(Error::BitDepth(7))
    ));
    let short = Plane {
        data: &v[..100],
        width: 40,
        height: 40,
        stride: 40,
        bpc: 8,
    };
    assert!(matches!(check(&short, &short, &p), Err(Error::Geometry(_))));
    assert!(check(&plane(33, 33, 16), &plane(33, 33, 16), &p).is_ok());
    for bad in [
        AdmParams {
            enhn_gain_limit: 0.5,
            ..p
        },
        AdmParams {
            norm_view_dist: 1.0,
            ..p
        },
        AdmParams {
            ref_display_height: 5000,
            ..p
        },
        AdmParams {
            dlm_weight: 1.5,
            ..p
        },
    ] {
        assert!(matches!(bad.validate(), Err(Error::Model(_))), "{bad:?}");
    }
    assert!(
        AdmParams {
            norm_view_dist: 0.75,
            ref_display_height: 4320,
            ..p
        }
        .validate()
        .is_ok()
    );
}
