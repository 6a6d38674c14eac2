//! The companion metrics on the GPU ([`CompanionGpu`]) against the CPU reference
//! (`compute_companions_cpu`): PSNR, SSIM, MS-SSIM and PSNR-HVS must be equal (`==`, compared
//! through their Debug text so that NaN equals NaN); CIEDE2000 calls CUDA's libm (pow, sin, cos,
//! exp, atan2), which is not glibc's, so its frame score may differ: the largest difference is
//! printed and must stay within [`CIEDE_BOUND`] dB. Synthetic content (random, flat, max,
//! max-difference, checkerboard, natural) at several sizes, depths and chroma layouts, and the
//! golden clips' first frames (VMAFGPU_YUV_DIR, default tests/data/yuv). Then a timing print:
//! GPU milliseconds per frame of each metric's kernels at 1080p 8-bit 4:2:0 (CUDA events).
//!
//! Without a GPU each test prints why and passes, unless VMAFGPU_REQUIRE_GPU=1.
//! VMAFGPU_PARITY_QUICK=1 keeps CAMBI and SpEED to small sizes (compute-sanitizer runs).
#![cfg(feature = "cuda")]

mod gpu_content;

use std::sync::Arc;

use gpu_content::{Content, Job};
use gstvmafgpu::backend::cuda::companion::{self, CompanionGpu};
use gstvmafgpu::backend::cuda::unavailable_reason;
use gstvmafgpu::backend::gpu::{companion_plan, launch};
use gstvmafgpu::backend::stats;
use gstvmafgpu::backend::{ChromaPair, CompanionScores, Companions, compute_companions_cpu};
use gstvmafgpu::picture::OwnedPlane;

/// The largest CIEDE2000 frame-score difference (dB) accepted between the GPU and the CPU.
/// Reason: CUDA's double pow/sin/cos/exp/atan2 are within 1-2 ulp but not glibc's, so a pixel's
/// float dE00 can differ in its last bit or two (relative ~1e-7); the frame score is
/// `45 - 20 log10(mean)`, so a relative error e of the mean moves it by about 8.7 e dB: at worst
/// (every pixel off by 1e-7 the same way) 8.7e-7 dB. 1e-6 dB is that worst case; errors of both
/// signs average out in practice (measured on the H200: at most 9.3e-11), and the measured value
/// is printed. The GPU also adds the per-pixel values in another order (per-block tree sums):
/// each frame's bound adds `companion_plan::ciede_bound` for that (at most 3.2e-8 dB at 4K).
const CIEDE_BOUND: f64 = 1e-6;

fn require_gpu() -> bool {
    std::env::var("VMAFGPU_REQUIRE_GPU").as_deref() == Ok("1")
}

/// VMAFGPU_PARITY_QUICK=1: CAMBI and SpEED at small sizes only (for compute-sanitizer runs,
/// which are two orders of magnitude slower); every kernel variant still runs.
fn quick() -> bool {
    std::env::var("VMAFGPU_PARITY_QUICK").as_deref() == Ok("1")
}

fn gpu_or_skip(test: &str) -> Option<CompanionGpu> {
    let r = match unavailable_reason() {
        Some(why) => Err(why),
        None => cudarc::driver::CudaContext::new(0)
            .map_err(|e| e.to_string())
            .and_then(|ctx| CompanionGpu::new(&ctx).map_err(|e| e.to_string())),
    };
    match r {
        Ok(g) => Some(g),
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

const ALL: Companions = Companions {
    psnr: true,
    ssim: true,
    ms_ssim: true,
    ciede: true,
    psnr_hvs: true,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

fn job(
    content: Content,
    (w, h, bpc): (usize, usize, u8),
    layout: Option<(u32, u32)>,
    seed: u64,
) -> Job {
    let (r, d, _) = gpu_content::frames(content, w, h, bpc, seed);
    let mut j = Job::with_companions(gpu_content::job(seed, r, d, None), ALL);
    if let Some((sx, sy)) = layout {
        let (cw, ch) = (w >> sx, h >> sy);
        let (rb, db, _) = gpu_content::frames(content, cw, ch, bpc, seed ^ 0x5a5a);
        let (rr, dr, _) = gpu_content::frames(content, cw, ch, bpc, seed ^ 0xa5a5);
        j.chroma = Some(Arc::new(ChromaPair {
            reference: [rb, rr],
            distorted: [db, dr],
        }));
    }
    j
}

#[derive(Default)]
struct Report {
    bad: Vec<String>,
    checked: usize,
    ciede_max: f64,
}

impl Report {
    fn check(&mut self, what: &str, g: &mut CompanionGpu, j: &Job) {
        self.checked += 1;
        let want = compute_companions_cpu(&j.cfg.companions, j);
        let got = g.compute(&j.cfg.companions, j);
        match (want, got) {
            (Ok(mut a), Ok(mut b)) => {
                match (a.ciede, b.ciede) {
                    (Some(x), Some(y)) => {
                        // Equal values (infinities included: identical frames) differ by 0.
                        let same = x == y || (x.is_nan() && y.is_nan());
                        let d = if same { 0.0 } else { (x - y).abs() };
                        if d > self.ciede_max || d.is_nan() {
                            self.ciede_max = d;
                        }
                        let bound = CIEDE_BOUND
                            + companion_plan::ciede_bound(j.reference.width, j.reference.height);
                        if d.is_nan() || d > bound {
                            self.bad
                                .push(format!("{what}: ciede cpu {x:?} gpu {y:?} (diff {d:e})"));
                        }
                    }
                    (x, y) if x.is_some() != y.is_some() => {
                        self.bad.push(format!("{what}: ciede cpu {x:?} gpu {y:?}"))
                    }
                    _ => {}
                }
                a.ciede = None;
                b.ciede = None;
                if format!("{a:?}") != format!("{b:?}") {
                    self.bad.push(format!("{what}:\n  cpu {a:?}\n  gpu {b:?}"));
                }
            }
            (Err(a), Err(b)) if a.to_string() == b.to_string() => {}
            (a, b) => self.bad.push(format!("{what}:\n  cpu {a:?}\n  gpu {b:?}")),
        }
    }

    fn finish(self, test: &str) {
        assert!(self.checked > 0);
        eprintln!(
            "{test}: {} frames; largest CIEDE2000 difference GPU vs CPU: {:e} dB (bound {CIEDE_BOUND:e} \
             + the sum order's); sums the host finished from read-back terms (SSIM/MS-SSIM images, PSNR-HVS planes; process total): {}",
            self.checked,
            self.ciede_max,
            stats::HOST_SUMMED.load(std::sync::atomic::Ordering::Relaxed)
        );
        if !self.bad.is_empty() {
            panic!(
                "{test}: {} of {} frames differ:\n{}",
                self.bad.len(),
                self.checked,
                self.bad.join("\n")
            );
        }
    }
}

#[test]
fn companions_equal_cpu_on_synthetic_content() {
    let Some(mut g) = gpu_or_skip("companions_equal_cpu_on_synthetic_content") else {
        return;
    };
    let mut rep = Report::default();
    let mut seed = 100;
    let layouts = [
        ("420", Some((1, 1))),
        ("422", Some((1, 0))),
        ("444", Some((0, 0))),
        ("400", None),
    ];
    let sizes: &[(usize, usize)] = &[(1, 1), (11, 11), (33, 33), (47, 61), (176, 176), (181, 190)];
    for &(w, h) in sizes {
        for bpc in [8u8, 10, 12, 16] {
            for (lname, layout) in layouts {
                for c in gpu_content::ALL {
                    seed += 1;
                    let j = job(c, (w, h, bpc), layout, seed);
                    rep.check(&format!("{c:?} {w}x{h} {bpc}-bit {lname}"), &mut g, &j);
                }
            }
        }
    }
    // Scaled SSIM (scale 2, 3, 4, 8) and large frames, fewer contents.
    for (w, h, bpc) in [
        (400, 390, 8u8),
        (1280, 720, 10),
        (1920, 1080, 8),
        (1919, 1081, 12),
        (3840, 2160, 16),
    ] {
        for c in [Content::Natural, Content::Random, Content::MaxDiff] {
            seed += 1;
            let j = job(c, (w, h, bpc), Some((1, 1)), seed);
            rep.check(&format!("{c:?} {w}x{h} {bpc}-bit 420"), &mut g, &j);
        }
    }
    rep.finish("companions_equal_cpu_on_synthetic_content");
}

/// Every SSIM, MS-SSIM and PSNR-HVS sum added on the host from the read-back terms
/// (`CompanionGpu::set_host_sums`: the path the GPU leaves to the rare images and planes whose
/// GPU sums do not decide) gives the CPU's scores too.
#[test]
fn host_sums_equal_cpu() {
    let Some(mut g) = gpu_or_skip("host_sums_equal_cpu") else {
        return;
    };
    g.set_host_sums(true);
    let mut rep = Report::default();
    let mut seed = 2100;
    for (w, h, bpc, layout) in [
        (181, 190, 8u8, Some((1, 1))),
        (176, 176, 10, Some((1, 0))),
        (1920, 1080, 8, Some((1, 1))),
    ] {
        for c in gpu_content::ALL {
            seed += 1;
            let j = job(c, (w, h, bpc), layout, seed);
            rep.check(&format!("{c:?} {w}x{h} {bpc}-bit"), &mut g, &j);
        }
    }
    rep.finish("host_sums_equal_cpu");
}

/// CIEDE2000 from the 8-bit colour-conversion table (kernels/ciede.cu ciede_pixels_table)
/// equals the computed conversions (ciede_pixels) bit for bit on the GPU: the table holds what
/// the same device code returns.
#[test]
fn ciede_table_equals_computed_conversions() {
    let test = "ciede_table_equals_computed_conversions";
    let (Some(mut on), Some(mut off)) = (gpu_or_skip(test), gpu_or_skip(test)) else {
        return;
    };
    on.set_ciede_table(companion_plan::CiedeTable::On);
    off.set_ciede_table(companion_plan::CiedeTable::Off);
    let mut bad = Vec::new();
    let (mut n, mut scored) = (0, 0);
    let mut seed = 900;
    for (w, h) in [(1, 1), (33, 33), (47, 61), (181, 190), (1920, 1080)] {
        for layout in [Some((1, 1)), Some((1, 0)), Some((0, 0))] {
            for c in gpu_content::ALL {
                seed += 1;
                let mut j = job(c, (w, h, 8), layout, seed);
                j.cfg.companions = Companions {
                    psnr: false,
                    ssim: false,
                    ms_ssim: false,
                    ciede: true,
                    psnr_hvs: false,
                    cambi: None,
                    speed_chroma: None,
                    speed_temporal: None,
                };
                let a = on
                    .compute(&j.cfg.companions, &j)
                    .map(|s| s.ciede.map(f64::to_bits));
                let b = off
                    .compute(&j.cfg.companions, &j)
                    .map(|s| s.ciede.map(f64::to_bits));
                n += 1;
                scored += usize::from(matches!(a, Ok(Some(_))));
                // Bits, or the same refusal.
                if format!("{a:?}") != format!("{b:?}") {
                    bad.push(format!(
                        "{c:?} {w}x{h} {layout:?}: table {a:?}, computed {b:?}"
                    ));
                }
            }
        }
    }
    eprintln!("{test}: {n} frames ({scored} scored), {} differ", bad.len());
    assert!(scored * 10 >= n * 8, "only {scored} of {n} frames scored");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The kernels launched as captured graphs with the most scratch sets (consecutive frames'
/// kernels of a metric at once) give the scores of the same kernels launched one by one with
/// one scratch set (a frame at a time per metric), bit for bit, for frames in flight
/// together (every ring buffer has its own graphs: more frames than buffers per geometry), and
/// the graphs and sets are in use.
#[test]
fn graphs_equal_launches_one_by_one() {
    let test = "graphs_equal_launches_one_by_one";
    let (Some(mut on), Some(mut off)) = (gpu_or_skip(test), gpu_or_skip(test)) else {
        return;
    };
    on.set_graphs(true);
    on.set_scratch_sets(companion::MAX_SCRATCH_SETS);
    off.set_graphs(false);
    off.set_scratch_sets(1);
    let mut bad = Vec::new();
    let mut n = 0;
    let mut seed = 1700;
    for (w, h, bpc, layout) in [
        (181, 190, 8u8, Some((1, 1))),
        (176, 176, 10, Some((1, 0))),
        (1920, 1080, 8, Some((1, 1))),
        (1280, 720, 12, Some((0, 0))),
    ] {
        let jobs: Vec<Job> = (0..companion::MAX_RING + 3)
            .map(|i| {
                seed += 1;
                job(
                    gpu_content::ALL[i % gpu_content::ALL.len()],
                    (w, h, bpc),
                    layout,
                    seed,
                )
            })
            .collect();
        // All submitted before any is taken: several frames in flight at once.
        let run = |g: &mut CompanionGpu| -> Vec<String> {
            let tickets: Vec<u64> = jobs
                .iter()
                .map(|j| g.submit(&j.cfg.companions, j).unwrap())
                .collect();
            tickets
                .into_iter()
                .map(|t| format!("{:?}", g.take(t).map(|s| bits(&s))))
                .collect()
        };
        let (a, b) = (run(&mut on), run(&mut off));
        if !on.uses_graphs()
            || on.scratch_sets() != companion::MAX_SCRATCH_SETS
            || off.scratch_sets() != 1
        {
            bad.push(format!(
                "{w}x{h} {bpc}-bit: graphs {}, scratch sets {} and {}",
                on.uses_graphs(),
                on.scratch_sets(),
                off.scratch_sets()
            ));
        }
        if off.uses_graphs() {
            bad.push(format!(
                "{w}x{h} {bpc}-bit: graphs in use though turned off"
            ));
        }
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            n += 1;
            if x != y || x.contains("Err") {
                bad.push(format!(
                    "{w}x{h} {bpc}-bit frame {i}: graphs {x}, one by one {y}"
                ));
            }
        }
    }
    eprintln!("{test}: {n} frames, {} differ", bad.len());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every score of `s` as bits (NaN and -0.0 compared as what they are); a missing metric as
/// an empty list.
fn bits(s: &CompanionScores) -> [Vec<u64>; 5] {
    let b = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    [
        s.psnr
            .map(|p| b(&[p.y, p.cb.unwrap_or(-1.0), p.cr.unwrap_or(-1.0)]))
            .unwrap_or_default(),
        s.ssim.map(|x| b(&[x.ssim])).unwrap_or_default(),
        s.ms_ssim
            .map(|x| [b(&[x.ms_ssim]), b(&x.l), b(&x.c), b(&x.s)].concat())
            .unwrap_or_default(),
        s.ciede.map(|x| b(&[x])).unwrap_or_default(),
        s.psnr_hvs
            .map(|x| b(&[x.y, x.cb, x.cr, x.psnr_hvs]))
            .unwrap_or_default(),
    ]
}

/// Y, Cb, Cr of the first `n` frames of a raw I420 file.
fn golden_frames(
    name: &str,
    w: usize,
    h: usize,
    bpc: u8,
    n: usize,
) -> Option<Vec<[OwnedPlane; 3]>> {
    let dir = std::env::var("VMAFGPU_YUV_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/yuv").to_string());
    let data = std::fs::read(format!("{dir}/{name}.yuv")).ok()?;
    let bps = if bpc > 8 { 2 } else { 1 };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let frame = (w * h + 2 * cw * ch) * bps;
    let plane = |b: &[u8], pw: usize, ph: usize, stride: usize| -> OwnedPlane {
        let s: Vec<u16> = if bps == 1 {
            b.iter().map(|&v| u16::from(v)).collect()
        } else {
            b.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        // libvmaf's chroma size is (w >> 1) x (h >> 1): crop the stored ceil-sized plane.
        let mut data = Vec::with_capacity(pw * ph);
        for y in 0..ph {
            data.extend_from_slice(&s[y * stride..y * stride + pw]);
        }
        OwnedPlane {
            data,
            width: pw,
            height: ph,
            bpc,
        }
    };
    Some(
        data.chunks_exact(frame)
            .take(n)
            .map(|f| {
                let (y, c) = f.split_at(w * h * bps);
                let (u, v) = c.split_at(cw * ch * bps);
                [
                    plane(y, w, h, w),
                    plane(u, w >> 1, h >> 1, cw),
                    plane(v, w >> 1, h >> 1, cw),
                ]
            })
            .collect(),
    )
}

#[test]
fn companions_equal_cpu_on_golden_clips() {
    let Some(mut g) = gpu_or_skip("companions_equal_cpu_on_golden_clips") else {
        return;
    };
    let mut rep = Report::default();
    for (name, w, h, bpc) in [
        ("carphone", 176, 144, 8u8),
        ("bbb720", 1280, 720, 8),
        ("bbb360p10", 640, 360, 10),
    ] {
        let (Some(r), Some(d)) = (
            golden_frames(&format!("{name}_ref"), w, h, bpc, 3),
            golden_frames(&format!("{name}_dis"), w, h, bpc, 3),
        ) else {
            eprintln!("golden clip {name} not found (run scripts/fetch-test-data.sh): skipped");
            continue;
        };
        for (i, ([ry, ru, rv], [dy, du, dv])) in r.into_iter().zip(d).enumerate() {
            let mut j = Job::with_companions(gpu_content::job(i as u64, ry, dy, None), ALL);
            j.chroma = Some(Arc::new(ChromaPair {
                reference: [ru, rv],
                distorted: [du, dv],
            }));
            rep.check(&format!("{name} frame {i}"), &mut g, &j);
        }
    }
    if rep.checked == 0 {
        eprintln!("companions_equal_cpu_on_golden_clips: no clip found, skipped");
        return;
    }
    rep.finish("companions_equal_cpu_on_golden_clips");
}

#[test]
fn companion_timing_1080p() {
    let Some(mut g) = gpu_or_skip("companion_timing_1080p") else {
        return;
    };
    let j = job(Content::Natural, (1920, 1080, 8), Some((1, 1)), 7);
    let t = g.time_metrics(&j.cfg.companions, &j, 50).expect("timing");
    let total: f64 = t.iter().map(|(_, ms)| ms).sum();
    for (m, ms) in &t {
        eprintln!("companion_timing_1080p: {m}: {ms:.4} ms/frame (GPU kernels, 1080p 8-bit 4:2:0)");
    }
    eprintln!("companion_timing_1080p: all: {total:.4} ms/frame");
    let t0 = std::time::Instant::now();
    for _ in 0..10 {
        g.compute(&j.cfg.companions, &j).expect("compute");
    }
    eprintln!(
        "companion_timing_1080p: compute() incl. uploads, readback, host sums: {:.3} ms/frame",
        t0.elapsed().as_secs_f64() * 100.0
    );
    assert!(total > 0.0);
}

#[test]
fn companion_kernels_compile_with_nvrtc() {
    // SAFETY: only probes for the shared library (dlopen).
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        assert!(
            std::env::var("VMAFGPU_REQUIRE_NVRTC").as_deref() != Ok("1"),
            "VMAFGPU_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded"
        );
        eprintln!("companion_kernels_compile_with_nvrtc: skipped, NVRTC (libnvrtc.so) not found");
        return;
    }
    for arch in ["compute_75", "compute_90"] {
        let ptx = companion::compile_ptx(arch)
            .unwrap_or_else(|e| panic!("{arch}: {e}"))
            .to_src();
        for k in launch::Kernel::ALL {
            assert!(
                ptx.contains(&format!(".entry {}(", k.name())),
                "{arch}: entry point {} missing from the PTX",
                k.name()
            );
        }
    }
}

/// CAMBI on the GPU (kernels/cambi.cu through the companion plan) `==` the CPU reference, bit
/// for bit: libvmaf's default options (at 4K the window of 65, whose scale-0 sums reach the
/// order-dependent range, so the host's fallback to libvmaf's order is taken) and the v1
/// models' options (hrs 1080, vlt 0.06, cmxv 17), `enc_*` set, 8 to 16 bits, from the minimum
/// size to 4K; then with every scale finished in libvmaf's order from the read-back c-values
/// (`set_host_sums`, the fallback forced).
#[test]
fn cambi_equals_cpu() {
    use gstvmafgpu::features::cambi::CambiParams;
    let Some(mut g) = gpu_or_skip("cambi_equals_cpu") else {
        return;
    };
    let v1 = CambiParams {
        high_res_speedup: 1080,
        max_val: 17.0,
        vis_lum_threshold: 0.06,
        ..Default::default()
    };
    let options = [
        ("default", CambiParams::default()),
        ("v1", v1),
        (
            "v1 encbd 8",
            CambiParams {
                enc_bitdepth: 8,
                ..v1
            },
        ),
        (
            "enc 1280x720 encbd 8",
            CambiParams {
                enc_width: 1280,
                enc_height: 720,
                enc_bitdepth: 8,
                ..Default::default()
            },
        ),
    ];
    let mut bad = Vec::new();
    let (mut n, mut banding, mut fallback) = (0, 0, 0);
    let mut seed = 9100;
    for host_sums in [false, true] {
        g.set_host_sums(host_sums);
        for (w, h, bpc) in [
            (216usize, 216usize, 8u8),
            (217, 221, 9),
            (641, 359, 10),
            (1280, 720, 12),
            (1920, 1080, 8),
            (1920, 1080, 10),
            (2560, 1440, 16),
            (3840, 2160, 10),
            (7680, 4320, 10),
        ] {
            if host_sums && w * h > 1920 * 1080 || quick() && w * h > 640 * 360 {
                continue;
            }
            let mut planes = vec![("banded", gpu_content::banded(w, h, bpc, seed))];
            for c in gpu_content::ALL {
                seed += 1;
                planes.push(("synthetic", gpu_content::frames(c, w, h, bpc, seed).1));
            }
            // 8K: banded and one synthetic content (the CPU reference takes seconds a frame)
            if w * h > 3840 * 2160 {
                planes.truncate(2);
            }
            for (cname, d) in planes {
                for (oname, p) in options {
                    seed += 1;
                    let j = gpu_content::job(seed, d.clone(), d.clone(), None);
                    let c = Companions {
                        cambi: Some(p),
                        ..Default::default()
                    };
                    let want = compute_companions_cpu(&c, &j).map(|s| s.cambi.map(f64::to_bits));
                    let before = stats::HOST_SUMMED.load(std::sync::atomic::Ordering::Relaxed);
                    let got = g.compute(&c, &j).map(|s| s.cambi.map(f64::to_bits));
                    fallback += usize::from(
                        stats::HOST_SUMMED.load(std::sync::atomic::Ordering::Relaxed) > before,
                    );
                    n += 1;
                    let same = match (&want, &got) {
                        (Ok(a), Ok(b)) => a == b,
                        (Err(a), Err(b)) => a.to_string() == b.to_string(),
                        _ => false,
                    };
                    if same {
                        banding += usize::from(
                            want.as_ref()
                                .is_ok_and(|v| v.is_some_and(|v| f64::from_bits(v) > 0.0)),
                        );
                    } else {
                        bad.push(format!(
                            "{cname} {w}x{h} {bpc}-bit {oname} (host order {host_sums}): cpu \
                             {want:?}, gpu {got:?}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {n} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
    eprintln!(
        "cambi_equals_cpu: {n} frames == CPU ({banding} with banding, {fallback} finished in \
         libvmaf's order on the host)"
    );
    assert!(banding > 0 && fallback > 0);
}

/// SpEED chroma on the GPU (kernels/speed.cu; the host finishes each score with the CPU's code)
/// equals the CPU (`==` on u, v and uv, and the same refusals): vmaf-v1.md's table sizes with
/// the v1 models' prescales (refused, singular and regular), 8-16 bits, 4:2:0/4:2:2/4:4:4 and
/// gray, every content, every prescale method, other kernel scales, up to 4K.
#[test]
fn speed_chroma_equals_cpu() {
    use gstvmafgpu::features::speed::{PrescaleMethod, SpeedChromaParams};
    let Some(mut g) = gpu_or_skip("speed_chroma_equals_cpu") else {
        return;
    };
    let v1 = |prescale: f64, prescale_method: PrescaleMethod| SpeedChromaParams {
        kernelscale: 1.0,
        prescale,
        prescale_method,
        sigma_nn: 0.19,
        nn_floor: 0.1,
        max_val: 45.0,
        weight_var_mode: 5,
    };
    let models = [
        v1(1.0, PrescaleMethod::Nearest),
        v1(0.5, PrescaleMethod::Bilinear),
        v1(0.6, PrescaleMethod::Bilinear),
    ];
    let mut rep = Report::default();
    let mut seed = 7100;
    let mut run = |rep: &mut Report,
                   g: &mut CompanionGpu,
                   c: Content,
                   (w, h, bpc): (usize, usize, u8),
                   layout: Option<(u32, u32)>,
                   p: SpeedChromaParams| {
        seed += 1;
        let mut j = job(c, (w, h, bpc), layout, seed);
        j.cfg.companions = Companions {
            speed_chroma: Some(p),
            ..Default::default()
        };
        rep.check(
            &format!(
                "{c:?} {w}x{h} {bpc}-bit {layout:?} ps {} {:?} ks {}",
                p.prescale, p.prescale_method, p.kernelscale
            ),
            g,
            &j,
        );
    };
    for (w, h) in [
        (176, 144),
        (320, 180),
        (352, 288),
        (640, 272),
        (640, 360),
        (1280, 720),
        (1920, 1080),
        (3840, 2160),
        (7680, 4320),
    ] {
        if quick() && w * h > 640 * 360 {
            continue;
        }
        for p in models {
            for c in [Content::Natural, Content::Random] {
                run(&mut rep, &mut g, c, (w, h, 10), Some((1, 1)), p);
            }
        }
    }
    for layout in [Some((1, 1)), Some((1, 0)), Some((0, 0)), None] {
        for bpc in [8u8, 10, 12, 16] {
            for c in gpu_content::ALL {
                for p in models {
                    let (w, h) = if quick() { (352, 288) } else { (1280, 720) };
                    run(&mut rep, &mut g, c, (w, h, bpc), layout, p);
                }
            }
        }
    }
    for method in [
        PrescaleMethod::Nearest,
        PrescaleMethod::Bilinear,
        PrescaleMethod::Bicubic,
        PrescaleMethod::Lanczos4,
    ] {
        for ps in [0.3, 0.5, 0.6, 1.25, 2.0] {
            run(
                &mut rep,
                &mut g,
                Content::Natural,
                if quick() {
                    (640, 360, 10)
                } else {
                    (1920, 1080, 10)
                },
                Some((1, 1)),
                v1(ps, method),
            );
        }
    }
    for ks in [0.5, 1.5, 2.0, 3.0] {
        let p = SpeedChromaParams {
            kernelscale: ks,
            ..SpeedChromaParams::default()
        };
        run(
            &mut rep,
            &mut g,
            Content::Natural,
            if quick() {
                (640, 360, 8)
            } else {
                (1920, 1080, 8)
            },
            Some((0, 0)),
            p,
        );
    }
    rep.finish("speed_chroma_equals_cpu");
}

/// SpEED temporal on the GPU (`speed_load_diff`, then SpEED's filters and statistics; the host
/// finishes the score with the CPU's code): `==` the CPU at every size from the smallest it
/// takes to 8K, every depth and content, both differences (`speed_use_ref_diff`), every
/// prescale method and other kernel scales (the refusals the CPU's); a clip's first frame (no
/// previous planes) is 0. Then clips pipelined through the ring (all frames submitted before any
/// is taken, each with the one before as its previous frame, the first without): every frame
/// `==` the CPU.
#[test]
fn speed_temporal_equals_cpu() {
    use gstvmafgpu::features::speed::{PrescaleMethod, SpeedTemporalParams};
    let Some(mut g) = gpu_or_skip("speed_temporal_equals_cpu") else {
        return;
    };
    let temporal = |p: SpeedTemporalParams| Companions {
        speed_temporal: Some(p),
        ..Default::default()
    };
    let d = SpeedTemporalParams::default();
    let mut rep = Report::default();
    let mut seed = 7500;
    let mut run = |rep: &mut Report,
                   g: &mut CompanionGpu,
                   (prev, c): (Option<Content>, Content),
                   (w, h, bpc): (usize, usize, u8),
                   p: SpeedTemporalParams| {
        seed += 1;
        let mut j = job(c, (w, h, bpc), None, seed);
        j.cfg.companions = temporal(p);
        if let Some(pc) = prev {
            let (pr, pd, _) = gpu_content::frames(pc, w, h, bpc, seed ^ 0x3c3c);
            j.previous = Some((Arc::new(pr), Arc::new(pd)));
        }
        rep.check(
            &format!(
                "{prev:?} -> {c:?} {w}x{h} {bpc}-bit ps {} {:?} ks {} urd {}",
                p.prescale, p.prescale_method, p.kernelscale, p.use_ref_diff
            ),
            g,
            &j,
        );
    };
    let nat = (Some(Content::Natural), Content::Natural);
    for (w, h) in [
        (33, 33),
        (81, 83),
        (176, 144),
        (352, 288),
        (641, 359),
        (1280, 720),
        (1920, 1080),
        (3840, 2160),
        (7680, 4320),
    ] {
        if quick() && w * h > 640 * 360 {
            continue;
        }
        for c in [Content::Natural, Content::Random] {
            run(&mut rep, &mut g, (Some(c), c), (w, h, 10), d);
        }
    }
    let (w, h) = if quick() { (352, 288) } else { (1280, 720) };
    for bpc in [8u8, 10, 12, 16] {
        for c in gpu_content::ALL {
            for urd in [false, true] {
                let p = SpeedTemporalParams {
                    use_ref_diff: urd,
                    ..d
                };
                run(&mut rep, &mut g, (Some(c), c), (w, h, bpc), p);
            }
        }
        run(
            &mut rep,
            &mut g,
            (Some(Content::Max), Content::MaxDiff),
            (w, h, bpc),
            d,
        );
        run(&mut rep, &mut g, (None, Content::Natural), (w, h, bpc), d);
    }
    let big = if quick() {
        (640, 360, 10)
    } else {
        (1920, 1080, 10)
    };
    for method in [
        PrescaleMethod::Nearest,
        PrescaleMethod::Bilinear,
        PrescaleMethod::Bicubic,
        PrescaleMethod::Lanczos4,
    ] {
        // 1.25 makes the frame taller: refused, as on the CPU.
        for ps in [0.3, 0.5, 0.6, 1.25] {
            let p = SpeedTemporalParams {
                prescale: ps,
                prescale_method: method,
                ..d
            };
            run(&mut rep, &mut g, nat, big, p);
        }
    }
    for ks in [0.5, 1.5, 2.0, 3.0] {
        let p = SpeedTemporalParams {
            kernelscale: ks,
            ..d
        };
        run(&mut rep, &mut g, nat, (big.0, big.1, 8), p);
    }
    // Clips through the ring: frame i's previous planes are frame i - 1's.
    for (w, h, bpc) in [(352, 288, 8u8), (1280, 720, 10)] {
        if quick() && w * h > 640 * 360 {
            continue;
        }
        let n = companion::MAX_RING + 3;
        let frames: Vec<(OwnedPlane, OwnedPlane)> = (0..n)
            .map(|i| {
                let (r, d, _) = gpu_content::frames(Content::Natural, w, h, bpc, 7700 + i as u64);
                (r, d)
            })
            .collect();
        let jobs: Vec<Job> = (0..n)
            .map(|i| {
                let (r, d) = frames[i].clone();
                let mut j =
                    Job::with_companions(gpu_content::job(i as u64, r, d, None), temporal(d0()));
                if i > 0 {
                    let (pr, pd) = frames[i - 1].clone();
                    j.previous = Some((Arc::new(pr), Arc::new(pd)));
                }
                j
            })
            .collect();
        let tickets: Vec<u64> = jobs
            .iter()
            .map(|j| g.submit(&j.cfg.companions, j).unwrap())
            .collect();
        for (i, (t, j)) in tickets.into_iter().zip(&jobs).enumerate() {
            rep.checked += 1;
            let want = compute_companions_cpu(&j.cfg.companions, j).unwrap();
            let got = g.take(t).unwrap();
            if i == 0 {
                assert_eq!(want.speed_temporal, Some(0.0));
            }
            if format!("{want:?}") != format!("{got:?}") {
                rep.bad.push(format!(
                    "clip {w}x{h} {bpc}-bit frame {i}:\n  cpu {want:?}\n  gpu {got:?}"
                ));
            }
        }
    }
    rep.finish("speed_temporal_equals_cpu");
}

fn d0() -> gstvmafgpu::features::speed::SpeedTemporalParams {
    gstvmafgpu::features::speed::SpeedTemporalParams::default()
}

/// Where the GPU time of VMAF v1's companions goes: each launch of the CAMBI and SpEED chroma
/// plan timed alone (CUDA events, 20 repetitions), with the v1 models' options, at 1080p and
/// 4K 10-bit 4:2:0 (3d0h's SpEED kernel scale 1.0, 1d5h_2160's the default); then the
/// metrics' totals and `compute()` end to end; then CAMBI alone on banded 4K content. Prints
/// only (figures go to BENCHMARKS.md).
#[test]
fn v1_kernel_timing() {
    use gstvmafgpu::features::cambi::CambiParams;
    use gstvmafgpu::features::speed::SpeedChromaParams;
    let Some(mut g) = gpu_or_skip("v1_kernel_timing") else {
        return;
    };
    let cambi = CambiParams {
        high_res_speedup: 1080,
        max_val: 17.0,
        vis_lum_threshold: 0.06,
        ..Default::default()
    };
    let speed = |kernelscale: f64| SpeedChromaParams {
        kernelscale,
        sigma_nn: 0.19,
        nn_floor: 0.1,
        max_val: 45.0,
        weight_var_mode: 5,
        ..SpeedChromaParams::default()
    };
    for (name, w, h, ks) in [
        ("3d0h 1080p10", 1920, 1080, 1.0),
        (
            "1d5h_2160 4K10",
            3840,
            2160,
            SpeedChromaParams::default().kernelscale,
        ),
    ] {
        let mut j = job(Content::Natural, (w, h, 10), Some((1, 1)), 11);
        j.cfg.companions = Companions {
            cambi: Some(cambi),
            speed_chroma: Some(speed(ks)),
            ..Default::default()
        };
        let t = g.time_launches(&j.cfg.companions, &j, 20).expect("timing");
        let mut total = 0.0;
        for (m, k, ms) in &t {
            total += ms;
            eprintln!("v1_kernel_timing {name}: {m} {k}: {:.1} us", ms * 1000.0);
        }
        eprintln!("v1_kernel_timing {name}: launches one by one: {total:.4} ms");
        for (m, ms) in g.time_metrics(&j.cfg.companions, &j, 20).expect("timing") {
            eprintln!("v1_kernel_timing {name}: metric {m}: {ms:.4} ms/frame");
        }
        let t0 = std::time::Instant::now();
        for _ in 0..20 {
            g.compute(&j.cfg.companions, &j).expect("compute");
        }
        eprintln!(
            "v1_kernel_timing {name}: compute() incl. uploads, readback, host tail: {:.3} ms/frame",
            t0.elapsed().as_secs_f64() * 50.0
        );
    }
    // CAMBI on banded content (most pixels masked and in band: the c-values' worst case), with
    // the v1 options and libvmaf's defaults (window 65), 4K 10-bit.
    for (oname, p) in [("v1", cambi), ("default", CambiParams::default())] {
        let d = gpu_content::banded(3840, 2160, 10, 5);
        let c = Companions {
            cambi: Some(p),
            ..Default::default()
        };
        let j = gpu_content::job(5, d.clone(), d, None);
        let t = g.time_launches(&c, &j, 5).expect("timing");
        let mut total = 0.0;
        for (_, k, ms) in &t {
            total += ms;
            if ms * 1000.0 > 20.0 {
                eprintln!(
                    "v1_kernel_timing cambi {oname} 4K10 banded: {k}: {:.1} us",
                    ms * 1000.0
                );
            }
        }
        eprintln!("v1_kernel_timing cambi {oname} 4K10 banded: launches one by one: {total:.4} ms");
    }
}
