//! Start-up to the first score, with a cold and a warm kernel cache (src/backend/gpu/cache.rs).
//!
//! ```text
//! cargo run --release --example startup -- [--backend cuda|hip|cpu] [--companions] [--runs N]
//! ```
//!
//! Runs this program as fresh child processes on a fresh cache directory (`VMAFGPU_CACHE_DIR`):
//! first cold (the kernels are compiled and stored), then warm N times (default 3: read from the
//! cache), then with the cache off. Each child creates a `Scorer` on the backend, pushes 1080p
//! I420 frames until the first score comes out, and reports the time from `Scorer::new` to the
//! scorer being ready and to the first score, and what the cache did; the parent adds the whole
//! process's wall time (exec, libraries, driver start-up, teardown). `--companions` adds PSNR,
//! SSIM, MS-SSIM, CIEDE2000 and PSNR-HVS (the second kernel text on CUDA). Run it with
//! `CUDA_CACHE_DISABLE=1` as well: the driver's own JIT cache (`~/.nv`) also speeds up NVRTC's
//! compile once it is warm, which hides the cold cost on a machine that ran the kernels before.

#[cfg(not(any(feature = "cuda", feature = "hip")))]
fn main() {
    eprintln!("startup: built without a GPU backend (features cuda or hip): nothing to measure");
}

#[cfg(any(feature = "cuda", feature = "hip"))]
fn main() {
    gpu::main()
}

#[cfg(any(feature = "cuda", feature = "hip"))]
mod gpu {
    use std::process::Command;
    use std::time::Instant;

    use gstvmafgpu::backend::Companions;
    use gstvmafgpu::backend::gpu::cache;
    use gstvmafgpu::engine::{BackendKind, Scorer, ScorerConfig};
    use gstvmafgpu::picture::{Chroma, ChromaFormat, Picture, PlaneRef};

    const W: usize = 1920;
    const H: usize = 1080;

    pub fn main() {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let flag = |name: &str| args.iter().any(|a| a == name);
        let value = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .cloned()
        };
        let backend = value("--backend").unwrap_or_else(|| "cuda".into());
        if flag("--child") {
            child(&backend, flag("--companions"));
            return;
        }
        let runs: usize = value("--runs").and_then(|r| r.parse().ok()).unwrap_or(3);
        let dir = std::env::temp_dir().join(format!("vmafgpu-startup-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        println!(
            "start-up to the first score, backend {backend}, {W}x{H} I420{}; cache {}",
            if flag("--companions") {
                ", VMAF + companions"
            } else {
                ", VMAF"
            },
            dir.display()
        );
        let mut plan = vec![("cold", dir.to_str().unwrap().to_string())];
        plan.extend((0..runs).map(|_| ("warm", dir.to_str().unwrap().to_string())));
        plan.push(("cache off", "off".into()));
        let mut ok = true;
        for (what, cache_dir) in plan {
            let mut c = Command::new(std::env::current_exe().expect("own path"));
            c.args(["--child", "--backend", &backend]);
            if flag("--companions") {
                c.arg("--companions");
            }
            c.env(cache::ENV_CACHE_DIR, &cache_dir);
            let t = Instant::now();
            let o = c.output().expect("run child");
            let wall = t.elapsed().as_secs_f64() * 1e3;
            let out = String::from_utf8_lossy(&o.stdout);
            if !o.status.success() {
                println!(
                    "{what:>9}: failed: {}{}",
                    out.trim(),
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                ok = false;
                break;
            }
            println!("{what:>9}: {}; process {wall:.0} ms", out.trim());
        }
        let _ = std::fs::remove_dir_all(&dir);
        if !ok {
            std::process::exit(1);
        }
    }

    /// One start: the scorer, then frames until the first score.
    fn child(backend: &str, companions: bool) {
        let kind = match backend {
            "cuda" => BackendKind::Cuda,
            "hip" => BackendKind::Hip,
            "cpu" => BackendKind::Cpu,
            other => {
                println!("unknown backend {other}");
                std::process::exit(2);
            }
        };
        let frame = |seed: u32| -> Vec<u8> {
            let mut x = seed.wrapping_mul(2_654_435_761) | 1;
            (0..W * H * 3 / 2)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    ((i % W) as u32 / 8 + (i / W) as u32 / 5 + (x & 15)) as u8
                })
                .collect()
        };
        let frames: Vec<(Vec<u8>, Vec<u8>)> = (0..4).map(|i| (frame(i), frame(i + 100))).collect();
        let all = Companions {
            psnr: true,
            ssim: true,
            ms_ssim: true,
            ciede: true,
            psnr_hvs: true,
            ..Companions::default()
        };
        let t = Instant::now();
        let mut s = match Scorer::new(ScorerConfig {
            backend: kind,
            companions: if companions {
                all
            } else {
                Companions::default()
            },
            ..ScorerConfig::default()
        }) {
            Ok(s) => s,
            Err(e) => {
                println!("{e}");
                std::process::exit(1);
            }
        };
        let ready = t.elapsed();
        let mut first = None;
        for (r, d) in &frames {
            match s.push(&pic(r), &pic(d)) {
                Ok(v) if !v.is_empty() => {
                    first = Some(t.elapsed());
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    println!("{e}");
                    std::process::exit(1);
                }
            }
        }
        let first = match first {
            Some(f) => f,
            None => {
                let _ = s.finish();
                t.elapsed()
            }
        };
        let c = cache::counters();
        println!(
            "{}: first score {:.0} ms after Scorer::new (scorer ready {:.0} ms, then {:.0} ms); \
             kernel cache: {} compiled, {} read",
            s.backend_name(),
            first.as_secs_f64() * 1e3,
            ready.as_secs_f64() * 1e3,
            (first - ready).as_secs_f64() * 1e3,
            c.compiles,
            c.hits
        );
    }

    /// An I420 picture in `b` (Y, then U, then V).
    fn pic(b: &[u8]) -> Picture<'_> {
        let (y, c) = b.split_at(W * H);
        let (u, v) = c.split_at(W * H / 4);
        Picture {
            width: W,
            height: H,
            bpc: 8,
            format: ChromaFormat::Yuv420,
            luma: PlaneRef { data: y, stride: W },
            chroma: Chroma::Planar {
                u: PlaneRef {
                    data: u,
                    stride: W / 2,
                },
                v: PlaneRef {
                    data: v,
                    stride: W / 2,
                },
            },
        }
    }
}
