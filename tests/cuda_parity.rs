//! CUDA backend against the CPU reference: the integer accumulators of every frame must be
//! equal (`==`), for random, flat, max, max-difference, checkerboard and natural content, odd
//! and even sizes from 33x33 to beyond 4K, 8/10/12/16 bits, and the golden clips' frames; then
//! the whole engine with `BackendKind::Cuda` against `BackendKind::Cpu`.
//!
//! Without a GPU (no driver, no NVRTC, no device) each test prints why and passes, unless
//! VMAFGPU_REQUIRE_GPU=1, which turns the skip into a failure. VMAFGPU_PARITY_QUICK=1 keeps to
//! the small sizes (for compute-sanitizer runs). VMAFGPU_YUV_DIR points at the golden clips'
//! raw I420 files (default tests/data/yuv; only the first frames are read).
#![cfg(feature = "cuda")]

mod gpu_content;

use std::sync::Arc;

use gpu_content::Content;
use gstvmafgpu::backend::cuda::{self, CudaBackend};
use gstvmafgpu::backend::{Backend, ClipConfig, FrameAccum, FrameJob, compute_job_cpu};
use gstvmafgpu::engine::{BackendKind, Scorer, ScorerConfig};
use gstvmafgpu::features::adm::AdmParams;
use gstvmafgpu::features::vif::VifParams;
use gstvmafgpu::picture::{Chroma, ChromaFormat, OwnedPlane, Picture, PlaneRef};

fn require_gpu() -> bool {
    std::env::var("VMAFGPU_REQUIRE_GPU").as_deref() == Ok("1")
}

fn quick() -> bool {
    std::env::var("VMAFGPU_PARITY_QUICK").as_deref() == Ok("1")
}

/// The backend, or None (skip, with the reason printed) where there is no usable GPU.
fn backend_or_skip(test: &str) -> Option<CudaBackend> {
    let r = match cuda::unavailable_reason() {
        Some(why) => Err(why),
        None => CudaBackend::new(0).map_err(|e| e.to_string()),
    };
    match r {
        Ok(b) => {
            eprintln!("{test}: running on {}", b.device_name());
            Some(b)
        }
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

/// Run `jobs` through the GPU configured with `cfg`, with the backend's pipelining (up to
/// max_in_flight submitted before the first receive), returning the results in order.
fn run_gpu(b: &mut CudaBackend, cfg: &ClipConfig, jobs: &[FrameJob]) -> Vec<(u64, FrameAccum)> {
    b.configure(cfg).expect("configure");
    let mut out = Vec::new();
    let mut in_flight = 0;
    for j in jobs {
        if in_flight == b.max_in_flight() {
            out.push(b.receive(true).expect("receive").expect("a result"));
            in_flight -= 1;
        }
        b.submit(j.clone()).expect("submit");
        in_flight += 1;
    }
    while let Some(r) = b.receive(true).expect("receive") {
        out.push(r);
    }
    assert_eq!(out.len(), jobs.len());
    out
}

/// CPU references with `cfg`, computed on all cores.
fn run_cpu(cfg: &ClipConfig, jobs: &[FrameJob]) -> Vec<FrameAccum> {
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<FrameAccum>> = vec![None; jobs.len()];
    let slots: Vec<std::sync::Mutex<Option<FrameAccum>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= jobs.len() {
                        break;
                    }
                    *slots[i].lock().unwrap() =
                        Some(compute_job_cpu(cfg, &jobs[i]).expect("CPU reference"));
                }
            });
        }
    });
    for (o, s) in out.iter_mut().zip(slots) {
        *o = s.into_inner().unwrap();
    }
    out.into_iter().map(|o| o.expect("computed")).collect()
}

/// A sequence of jobs of one geometry: the first with an independent previous reference
/// (uploaded), the others with the previous job's reference (read where it is on the GPU).
fn sequence(first_index: u64, w: usize, h: usize, bpc: u8, contents: &[Content]) -> Vec<FrameJob> {
    let mut jobs: Vec<FrameJob> = Vec::new();
    for (k, &c) in contents.iter().enumerate() {
        let seed = first_index + k as u64 * 31 + (w * 7 + h * 13 + bpc as usize) as u64;
        let (r, d, p) = gpu_content::frames(c, w, h, bpc, seed);
        let prev = match jobs.last() {
            Some(j) => Some(j.reference.clone()),
            None => Some(Arc::new(p)),
        };
        jobs.push(FrameJob {
            index: first_index + k as u64,
            reference: Arc::new(r),
            distorted: Arc::new(d),
            prev_ref: prev,
            features: true,
            chroma: None,
            previous: None,
        });
    }
    jobs
}

struct Report {
    bad: Vec<String>,
    checked: usize,
}

impl Report {
    fn compare(
        &mut self,
        what: &str,
        jobs: &[FrameJob],
        gpu: &[(u64, FrameAccum)],
        cpu: &[FrameAccum],
    ) {
        for ((j, (gi, g)), c) in jobs.iter().zip(gpu).zip(cpu) {
            self.checked += 1;
            let r = &j.reference;
            if *gi != j.index {
                self.bad.push(format!(
                    "{what}: result for frame {gi} where {} was due",
                    j.index
                ));
            } else if g != c {
                self.bad.push(format!(
                    "{what}: frame {} ({}x{} {}-bit):\n  cpu  {c:?}\n  cuda {g:?}",
                    j.index, r.width, r.height, r.bpc
                ));
            }
        }
    }

    fn finish(self, test: &str) {
        assert!(self.checked > 0, "{test}: nothing compared");
        if !self.bad.is_empty() {
            panic!(
                "{test}: {} of {} frames differ:\n{}",
                self.bad.len(),
                self.checked,
                self.bad.join("\n")
            );
        }
        eprintln!("{test}: {} frames, CUDA == CPU", self.checked);
    }
}

#[test]
fn cuda_equals_cpu_on_synthetic_content() {
    let Some(mut b) = backend_or_skip("cuda_equals_cpu_on_synthetic_content") else {
        return;
    };
    let v = VifParams::default();
    let a = AdmParams::default();
    let mut groups: Vec<(usize, usize, u8, Vec<Content>, VifParams, AdmParams)> = Vec::new();
    let small = [
        (33, 33),
        (34, 35),
        (47, 61),
        (64, 36),
        (65, 97),
        (130, 70),
        (177, 145),
    ];
    for &(w, h) in &small {
        for bpc in [8u8, 10, 12, 16] {
            groups.push((w, h, bpc, gpu_content::ALL.to_vec(), v, a));
        }
    }
    let egl1 = (
        VifParams {
            enhn_gain_limit: 1.0,
        },
        AdmParams {
            enhn_gain_limit: 1.0,
            ..a
        },
    );
    groups.push((
        120,
        90,
        8,
        vec![Content::Natural, Content::Random],
        egl1.0,
        egl1.1,
    ));
    groups.push((
        121,
        91,
        10,
        vec![Content::Natural],
        v,
        AdmParams {
            ref_display_height: 2160,
            ..a
        },
    ));
    // adm_csf_mode 2 with the v1.0.16 options, at the same geometry as the group before, then
    // the same options with the Watson CSF: the per-geometry state is rebuilt for the CSF mode.
    let v1 = AdmParams {
        csf_mode: 2,
        enhn_gain_limit: 1.0,
        noise_weight: 0.02,
        dlm_weight: 0.7,
        min_val: 0.5,
        ..a
    };
    for ap in [v1, AdmParams { csf_mode: 0, ..v1 }] {
        groups.push((121, 91, 10, vec![Content::Natural, Content::Checker], v, ap));
    }
    groups.push((
        130,
        97,
        16,
        vec![Content::Natural, Content::MaxDiff],
        v,
        AdmParams {
            norm_view_dist: 1.5,
            ref_display_height: 2160,
            ..v1
        },
    ));
    if !quick() {
        use Content::*;
        groups.push((640, 360, 10, vec![Natural, Random, MaxDiff], v, a));
        groups.push((641, 359, 8, vec![Natural, Checker], v, a));
        groups.push((1280, 720, 8, vec![Natural, Natural], v, a));
        groups.push((1920, 1080, 8, vec![Natural, Random, MaxDiff, Natural], v, a));
        groups.push((1920, 1080, 10, vec![Natural, Checker], v, a));
        groups.push((1921, 1081, 12, vec![Natural], v, a));
        groups.push((3840, 2160, 8, vec![Natural, Natural], v, a));
        groups.push((3840, 2160, 10, vec![Natural, Random], v, a));
        groups.push((3840, 2160, 16, vec![Natural, MaxDiff], v, a));
        groups.push((4097, 2305, 10, vec![Natural], v, a));
        groups.push((7680, 4320, 16, vec![Natural], v, a));
    }
    let mut rep = Report {
        bad: Vec::new(),
        checked: 0,
    };
    let mut index = 0u64;
    for (w, h, bpc, contents, vp, ap) in groups {
        let cfg = gpu_content::config(vp, ap);
        let jobs = sequence(index, w, h, bpc, &contents);
        index += jobs.len() as u64;
        let gpu = run_gpu(&mut b, &cfg, &jobs);
        let cpu = run_cpu(&cfg, &jobs);
        rep.compare(&format!("{w}x{h}@{bpc}"), &jobs, &gpu, &cpu);
    }
    rep.finish("cuda_equals_cpu_on_synthetic_content");
}

/// Luma planes of the first `n` frames of a raw I420 file.
fn golden_luma(name: &str, w: usize, h: usize, bpc: u8, n: usize) -> Option<Vec<OwnedPlane>> {
    let dir = std::env::var("VMAFGPU_YUV_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/yuv").to_string());
    let data = std::fs::read(format!("{dir}/{name}.yuv")).ok()?;
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    Some(
        data.chunks_exact(frame)
            .take(n)
            .map(|f| {
                let l = &f[..w * h * bps];
                let data = if bps == 1 {
                    l.iter().map(|&b| b as u16).collect()
                } else {
                    l.chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect()
                };
                OwnedPlane {
                    data,
                    width: w,
                    height: h,
                    bpc,
                }
            })
            .collect(),
    )
}

#[test]
fn cuda_equals_cpu_on_golden_clips() {
    let Some(mut b) = backend_or_skip("cuda_equals_cpu_on_golden_clips") else {
        return;
    };
    let n = if quick() { 2 } else { 4 };
    let mut rep = Report {
        bad: Vec::new(),
        checked: 0,
    };
    let mut index = 0;
    for (name, w, h, bpc) in [
        ("carphone", 176, 144, 8u8),
        ("bbb720", 1280, 720, 8),
        ("bbb360p10", 640, 360, 10),
    ] {
        let (Some(r), Some(d)) = (
            golden_luma(&format!("{name}_ref"), w, h, bpc, n),
            golden_luma(&format!("{name}_dis"), w, h, bpc, n),
        ) else {
            eprintln!("golden clip {name} not found (run scripts/fetch-test-data.sh): skipped");
            continue;
        };
        let mut jobs: Vec<FrameJob> = Vec::new();
        for (r, d) in r.into_iter().zip(d) {
            let prev = jobs.last().map(|j| j.reference.clone());
            jobs.push(FrameJob {
                index,
                reference: Arc::new(r),
                distorted: Arc::new(d),
                prev_ref: prev,
                features: true,
                chroma: None,
                previous: None,
            });
            index += 1;
        }
        let cfg = gpu_content::config(VifParams::default(), AdmParams::default());
        let gpu = run_gpu(&mut b, &cfg, &jobs);
        let cpu = run_cpu(&cfg, &jobs);
        rep.compare(name, &jobs, &gpu, &cpu);
    }
    if rep.checked == 0 {
        eprintln!("cuda_equals_cpu_on_golden_clips: no golden clip available, nothing compared");
        return;
    }
    rep.finish("cuda_equals_cpu_on_golden_clips");
}

#[test]
fn cuda_reset_geometry_changes_and_skipped_features() {
    let Some(mut b) = backend_or_skip("cuda_reset_geometry_changes_and_skipped_features") else {
        return;
    };
    let cfg = gpu_content::config(VifParams::default(), AdmParams::default());
    let mut rep = Report {
        bad: Vec::new(),
        checked: 0,
    };
    // Geometry changes between consecutive jobs, then a reset in the middle of a sequence.
    let mut jobs = sequence(0, 96, 64, 8, &[Content::Natural; 3]);
    jobs.extend(sequence(3, 97, 65, 10, &[Content::Random; 2]));
    jobs.extend(sequence(5, 96, 64, 8, &[Content::Natural; 2]));
    let gpu = run_gpu(&mut b, &cfg, &jobs);
    rep.compare("geometry changes", &jobs, &gpu, &run_cpu(&cfg, &jobs));

    let pending = sequence(100, 80, 48, 12, &[Content::Natural; 3]);
    for j in &pending {
        b.submit(j.clone()).unwrap();
    }
    b.reset();
    assert!(
        b.receive(false).unwrap().is_none(),
        "results survived a reset"
    );
    let mut after = sequence(0, 80, 48, 12, &[Content::Checker; 3]);
    after[0].prev_ref = None;
    // Frames whose features are skipped (subsampling) still give motion.
    after[1].features = false;
    let gpu = run_gpu(&mut b, &cfg, &after);
    rep.compare("after reset", &after, &gpu, &run_cpu(&cfg, &after));
    rep.finish("cuda_reset_geometry_changes_and_skipped_features");
}

fn gray<'a>(p: &'a OwnedPlane, bytes: &'a [u8]) -> Picture<'a> {
    let bps = if p.bpc > 8 { 2 } else { 1 };
    Picture {
        width: p.width,
        height: p.height,
        bpc: p.bpc,
        format: ChromaFormat::Gray,
        luma: PlaneRef {
            data: bytes,
            stride: p.width * bps,
        },
        chroma: Chroma::None,
    }
}

fn bytes_of(p: &OwnedPlane) -> Vec<u8> {
    if p.bpc == 8 {
        p.data.iter().map(|&v| v as u8).collect()
    } else {
        p.data.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

#[test]
fn engine_scores_equal_with_cuda_and_cpu() {
    if backend_or_skip("engine_scores_equal_with_cuda_and_cpu").is_none() {
        return;
    }
    let frames: Vec<(OwnedPlane, OwnedPlane)> = (0..6)
        .map(|i| {
            let (r, d, _) = gpu_content::frames(Content::Natural, 320, 180, 10, 40 + i);
            (r, d)
        })
        .collect();
    let run = |kind: BackendKind| {
        let mut s = Scorer::new(ScorerConfig {
            backend: kind,
            ..ScorerConfig::default()
        })
        .expect("scorer");
        let mut out = Vec::new();
        for (r, d) in &frames {
            let (rb, db) = (bytes_of(r), bytes_of(d));
            out.extend(s.push(&gray(r, &rb), &gray(d, &db)).expect("push"));
        }
        let (rest, summary) = s.finish().expect("finish");
        out.extend(rest);
        (s.backend_name(), out, summary)
    };
    let (cpu_name, cpu, cpu_sum) = run(BackendKind::Cpu);
    let (gpu_name, gpu, gpu_sum) = run(BackendKind::Cuda);
    assert_eq!((cpu_name, gpu_name), ("cpu", "cuda"));
    assert_eq!(cpu.len(), frames.len());
    assert_eq!(
        gpu, cpu,
        "per-frame scores differ between the CUDA and CPU backends"
    );
    assert_eq!(gpu_sum, cpu_sum, "pooled scores differ");
    let (auto_name, _, _) = run(BackendKind::Auto);
    assert_eq!(auto_name, "cuda", "Auto did not pick the GPU");
    eprintln!("engine: {} frames, CUDA scores == CPU scores", cpu.len());
}

/// Compiling the kernels needs only NVRTC (no driver, no GPU): scripts/check-kernels.sh runs
/// this with a pip-installed NVRTC and VMAFGPU_REQUIRE_NVRTC=1.
#[test]
fn kernels_compile_with_nvrtc() {
    // SAFETY: only probes for the shared library (dlopen).
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        assert!(
            std::env::var("VMAFGPU_REQUIRE_NVRTC").as_deref() != Ok("1"),
            "VMAFGPU_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded"
        );
        eprintln!("kernels_compile_with_nvrtc: skipped, NVRTC (libnvrtc.so) not found");
        return;
    }
    for arch in ["compute_75", "compute_90"] {
        let ptx = gstvmafgpu::backend::cuda::launcher::compile_ptx(arch)
            .unwrap_or_else(|e| panic!("{arch}: {e}"))
            .to_src();
        for k in gstvmafgpu::backend::gpu::plan::VmafKernel::ALL {
            assert!(
                ptx.contains(&format!(".entry {}(", k.name())),
                "{arch}: entry point {} missing from the PTX",
                k.name()
            );
        }
        // fmad=false: no contracted multiply-adds in the floating-point code.
        assert!(
            !ptx.contains("fma.rn.f64"),
            "{arch}: contracted double FMA in the PTX"
        );
        assert!(
            !ptx.contains("fma.rn.f32"),
            "{arch}: contracted float FMA in the PTX"
        );
        eprintln!("{arch}: {} bytes of PTX", ptx.len());
    }
}
