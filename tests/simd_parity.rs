//! Every build of the CPU feature kernels (portable, AVX2 where the CPU has it; see
//! `gstvmafgpu::features::isa`) against the portable build, on content that reaches the edge
//! cases: random noise, flat frames, all-maximum frames, maximum-difference patterns
//! (checkerboards of 0 and 2^bpc - 1 against their inverse), smooth content with small
//! distortions; odd and tiny sizes; bit depths 8, 10, 12 and 16. All mismatches are collected and
//! reported at once.
//!
//! On a CPU without AVX2 only the portable build runs and the test checks nothing but that it
//! runs (it says so on stderr).

use gstvmafgpu::Plane;
use gstvmafgpu::features::isa::Isa;
use gstvmafgpu::features::{adm, motion, vif};

/// xorshift64*.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u32) -> u16 {
        ((self.next() >> 32) % u64::from(n)) as u16
    }
}

#[derive(Clone, Copy, Debug)]
enum Content {
    /// Independent uniform noise over the whole range.
    Random,
    /// Both frames one value (reference 0, distorted max: the largest DC difference).
    Flat,
    /// Both frames at the maximum.
    Max,
    /// Checkerboard of 0 and max against its inverse.
    MaxDifference,
    /// Smooth gradients and texture; distorted = reference plus small noise, clamped.
    Natural,
}

const CONTENTS: [Content; 5] = [
    Content::Random,
    Content::Flat,
    Content::Max,
    Content::MaxDifference,
    Content::Natural,
];

fn frames(c: Content, w: usize, h: usize, bpc: u8, seed: u64) -> (Vec<u16>, Vec<u16>) {
    let max = (1u32 << bpc) - 1;
    let mut rng = Rng(seed | 1);
    let n = w * h;
    match c {
        Content::Random => {
            let r = (0..n).map(|_| rng.below(max + 1)).collect();
            let d = (0..n).map(|_| rng.below(max + 1)).collect();
            (r, d)
        }
        Content::Flat => (vec![0; n], vec![max as u16; n]),
        Content::Max => (vec![max as u16; n], vec![max as u16; n]),
        Content::MaxDifference => {
            let r: Vec<u16> = (0..n)
                .map(|i| {
                    if (i % w + i / w).is_multiple_of(2) {
                        max as u16
                    } else {
                        0
                    }
                })
                .collect();
            let d = r.iter().map(|&v| max as u16 - v).collect();
            (r, d)
        }
        Content::Natural => {
            let mut r = vec![0u16; n];
            let mut d = vec![0u16; n];
            for y in 0..h {
                for x in 0..w {
                    let base = 0.5
                        + 0.3 * (x as f64 * 0.07).sin() * (y as f64 * 0.05).cos()
                        + 0.1 * ((x + 3 * y) as f64 * 0.4).sin();
                    let tex = f64::from(rng.below(1000)) / 1000.0 - 0.5;
                    let v = ((base + 0.1 * tex).clamp(0.0, 1.0) * f64::from(max)) as i64;
                    let noise = i64::from(rng.below(9)) - 4;
                    let scale = i64::from(max) / 255;
                    r[y * w + x] = v as u16;
                    d[y * w + x] = (v + noise * scale.max(1)).clamp(0, i64::from(max)) as u16;
                }
            }
            (r, d)
        }
    }
}

const SIZES: [(usize, usize); 10] = [
    (33, 33),
    (34, 35),
    (65, 33),
    (33, 66),
    (47, 39),
    (130, 71),
    (257, 129),
    // Widths whose 16-column blocks do not fill whole 32-column steps (the AVX-512 passes leave
    // one 16-column step to the AVX2 code), at scale 0 and below.
    (81, 45),
    (241, 97),
    (1921, 1081),
];

/// `v` (w x h, compact) in rows of `stride` samples, the padding filled with `fill` (garbage
/// the kernels must not read).
fn padded(v: &[u16], w: usize, h: usize, stride: usize, fill: u16) -> Vec<u16> {
    let mut out = vec![fill; stride * h];
    for y in 0..h {
        out[y * stride..y * stride + w].copy_from_slice(&v[y * w..(y + 1) * w]);
    }
    out
}

fn plane(v: &[u16], w: usize, h: usize, stride: usize, bpc: u8) -> Plane<'_> {
    Plane {
        data: v,
        width: w,
        height: h,
        stride,
        bpc,
    }
}

fn finish(what: &str, bad: Vec<String>, checked: usize) {
    assert!(checked > 0);
    if Isa::all_supported().len() < 2 {
        eprintln!("{what}: only the portable build runs on this CPU; nothing to compare");
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {checked} cases differ between builds:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Run `f` on every case with every supported build and compare with the portable build.
fn each_case<T: PartialEq + std::fmt::Debug>(
    what: &str,
    depths: &[u8],
    f: impl Fn(Plane<'_>, Plane<'_>, Isa) -> T,
) {
    let isas = Isa::all_supported();
    let mut bad = vec![];
    let mut checked = 0;
    for &(w, h) in &SIZES {
        for &bpc in depths {
            for (k, &c) in CONTENTS.iter().enumerate() {
                // The largest size only with the two contents that reach the most paths.
                if w * h > 1_000_000 && !matches!(c, Content::Random | Content::Natural) {
                    continue;
                }
                let (r, d) = frames(
                    c,
                    w,
                    h,
                    bpc,
                    (w * 7919 + h * 31 + k) as u64 + u64::from(bpc),
                );
                let (rp, dp) = (
                    Plane::from_slice(&r, w, h, bpc),
                    Plane::from_slice(&d, w, h, bpc),
                );
                let want = f(rp, dp, Isa::Scalar);
                for &isa in &isas[1..] {
                    let got = f(rp, dp, isa);
                    if got != want {
                        bad.push(format!(
                            "{w}x{h} {bpc}-bit {c:?} {isa:?}: got {got:?}, want {want:?}"
                        ));
                    }
                }
                checked += 1;
            }
        }
    }
    finish(what, bad, checked);
}

const DEPTHS: [u8; 4] = [8, 10, 12, 16];

#[test]
fn vif_builds_agree() {
    for egl in [100.0, 1.0] {
        let p = vif::VifParams {
            enhn_gain_limit: egl,
        };
        each_case(&format!("vif egl {egl}"), &DEPTHS, |r, d, isa| {
            vif::compute_with(r, d, &p, isa)
        });
    }
}

/// VIF's AVX-512 statistic kernel (used at every scale at least 32 columns wide; without and,
/// where the CPU has it, with AVX-512 VNNI), the AVX2 kernel and the portable code on sizes
/// that reach their edges: widths whose last 32-column step is partial (the masked horizontal
/// step, the overlapping vertical one) at scale 0, 1 and 2, widths below 32 at some scale (the
/// AVX2 kernel), heights whose output rows split differently between groups of four rows and
/// single rows (near the top and bottom edges, per scale); every depth 8 to 16, the five
/// contents, every other case through a padded stride, gain limits 100 and 1.
#[test]
fn vif_builds_agree_edge_sizes() {
    let isas = Isa::all_supported();
    let no_vnni = Isa::Avx512.supported();
    let mut bad = vec![];
    let mut checked = 0;
    let widths = [33usize, 47, 63, 64, 65, 79, 96, 97, 127, 128, 129, 161, 193];
    let heights = [33usize, 34, 35, 36, 37, 38, 39, 40, 45, 54, 71, 76];
    for (n, &w) in widths.iter().enumerate() {
        for (m, &h) in heights.iter().enumerate() {
            for bpc in 8..=16u8 {
                let k = (n * 7 + m * 3 + usize::from(bpc)) % CONTENTS.len();
                let max = (1u32 << bpc) - 1;
                let (r, d) = frames(CONTENTS[k], w, h, bpc, (w * 31 + h) as u64 + u64::from(bpc));
                // Every other case through a padded stride (9 samples of garbage per row).
                let stride = if (n + m + usize::from(bpc)).is_multiple_of(2) {
                    w
                } else {
                    w + 9
                };
                let pad = |v: &[u16]| padded(v, w, h, stride, max as u16);
                let (rs, ds) = (pad(&r), pad(&d));
                let (rp, dp) = (plane(&rs, w, h, stride, bpc), plane(&ds, w, h, stride, bpc));
                for egl in [100.0, 1.0] {
                    let p = vif::VifParams {
                        enhn_gain_limit: egl,
                    };
                    let want = vif::compute_with(rp, dp, &p, Isa::Scalar);
                    let mut got: Vec<(String, vif::VifAccum)> = isas[1..]
                        .iter()
                        .map(|&isa| (format!("{isa:?}"), vif::compute_with(rp, dp, &p, isa)))
                        .collect();
                    if no_vnni {
                        got.push((
                            "Avx512 without VNNI".into(),
                            vif::compute_with_avx512_no_vnni(rp, dp, &p),
                        ));
                    }
                    for (name, got) in got {
                        if got != want {
                            bad.push(format!(
                                "{w}x{h} stride {stride} {bpc}-bit {:?} egl {egl} {name}: \
                                 got {got:?}, want {want:?}",
                                CONTENTS[k]
                            ));
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    finish("vif edge sizes", bad, checked);
}

#[test]
fn adm_builds_agree() {
    let p = adm::AdmParams::default();
    each_case("adm", &DEPTHS, |r, d, isa| adm::compute_with(r, d, &p, isa));
}

/// ADM's hand-written decouple kernels (8 pixels per step, the rest of each row portable) on
/// every width from 33 to 80 (scale-0 rows of every length modulo 8, scale 1-3 rows shorter
/// than one step), odd and even heights, every depth 8 to 16, padded strides, three
/// enhancement gain limits (100, 1, and a non-integer one), and two more contents that reach
/// the enhancement step: a contrast-amplified and a contrast-reduced distorted frame (the angle
/// test passes, `k` clamps at 1 or stays below it).
#[test]
fn adm_builds_agree_edge_widths() {
    let isas = Isa::all_supported();
    let mut bad = vec![];
    let mut checked = 0;
    for w in 33..=80usize {
        for h in [33usize, 38] {
            for bpc in 8..=16u8 {
                let max = (1i64 << bpc) - 1;
                let k = (w * 131 + h * 7 + usize::from(bpc)) % (CONTENTS.len() + 2);
                let (r, d) = if k < CONTENTS.len() {
                    frames(
                        CONTENTS[k],
                        w,
                        h,
                        bpc,
                        (w * 977 + h) as u64 + u64::from(bpc),
                    )
                } else {
                    // Natural reference, distorted = mean + (reference - mean) * gain.
                    let (r, _) = frames(Content::Natural, w, h, bpc, w as u64 + u64::from(bpc));
                    let gain = if k == CONTENTS.len() { 1.5 } else { 0.6 };
                    let mean = max / 2;
                    let d = r
                        .iter()
                        .map(|&v| {
                            let x = mean as f64 + (i64::from(v) - mean) as f64 * gain;
                            (x as i64).clamp(0, max) as u16
                        })
                        .collect();
                    (r, d)
                };
                // Every other case through a padded stride (7 samples of garbage per row).
                let stride = if (w + h).is_multiple_of(2) { w } else { w + 7 };
                let pad = |v: &[u16]| padded(v, w, h, stride, max as u16);
                let (rs, ds) = (pad(&r), pad(&d));
                let (rp, dp) = (plane(&rs, w, h, stride, bpc), plane(&ds, w, h, stride, bpc));
                for egl in [100.0, 1.0, 37.3] {
                    let p = adm::AdmParams {
                        enhn_gain_limit: egl,
                        ..adm::AdmParams::default()
                    };
                    let want = adm::compute_with(rp, dp, &p, Isa::Scalar);
                    for &isa in &isas[1..] {
                        let got = adm::compute_with(rp, dp, &p, isa);
                        if got != want {
                            bad.push(format!(
                                "{w}x{h} stride {stride} {bpc}-bit content {k} egl {egl} {isa:?}: \
                                 got {got:?}, want {want:?}"
                            ));
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    finish("adm edge widths", bad, checked);
}

#[test]
fn motion_builds_agree() {
    each_case("motion", &DEPTHS, motion::sad_with);
}

/// A reused per-thread workspace gives the same result as a fresh one: alternate sizes and
/// contents on one thread, compare each with the same call on a new thread.
#[test]
fn reused_buffers_do_not_leak_between_calls() {
    let mut bad = vec![];
    let mut checked = 0;
    let cases = [
        (65, 33, 8, Content::Random),
        (65, 33, 8, Content::Flat),
        // Same width, other heights: the VIF workspace is kept per width.
        (65, 47, 8, Content::Natural),
        (65, 34, 12, Content::Max),
        (130, 71, 10, Content::Natural),
        (65, 33, 8, Content::MaxDifference),
        (130, 71, 10, Content::Max),
        (130, 71, 10, Content::Random),
    ];
    for (w, h, bpc, c) in cases {
        let (r, d) = frames(c, w, h, bpc, 99);
        let run = || {
            let (rp, dp) = (
                Plane::from_slice(&r, w, h, bpc),
                Plane::from_slice(&d, w, h, bpc),
            );
            (
                vif::compute(rp, dp, &vif::VifParams::default()),
                adm::compute(rp, dp, &adm::AdmParams::default()),
            )
        };
        let here = run();
        let fresh = std::thread::scope(|s| s.spawn(run).join().expect("thread"));
        if here != fresh {
            bad.push(format!(
                "{w}x{h} {bpc}-bit {c:?}: {here:?} vs fresh {fresh:?}"
            ));
        }
        checked += 1;
    }
    finish("reuse", bad, checked);
}
