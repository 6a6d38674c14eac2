//! Throughput of the CUDA backend, alone and behind the engine.
//!
//!   cargo run --release --example bench_gpu [-- [--all-metrics] WxH:BPC:FRAMES ...]
//!
//! Default: 1920x1080:8:2000 and 3840x2160:10:600 (vmaf_v0.6.1). Frames are made up front
//! (8 distinct natural-looking pairs, cycled), so the figures are the backend's and the engine's,
//! not a decoder's. Prints frames per second for:
//!   backend  CudaBackend::submit/receive with the engine's in-flight depth (upload included);
//!   engine   Scorer::push with BackendKind::Cuda (byte planes in, scores out: validation, copy,
//!            upload, GPU, model).
//! With `--all-metrics`, the backend's frames also carry 4:2:0 chroma and ask for the five
//! companion metrics (the engine run is skipped), and the worker's host time per frame is
//! split into VMAF's and the companion metrics' (queueing; taking: readback wait, host sums).

use std::sync::Arc;
use std::time::Instant;

use gstvmafgpu::backend::cuda::CudaBackend;
use gstvmafgpu::backend::{Backend, ChromaPair, ClipConfig, Companions, FrameJob};
use gstvmafgpu::engine::{BackendKind, Scorer, ScorerConfig};
use gstvmafgpu::picture::{Chroma, ChromaFormat, OwnedPlane, Picture, PlaneRef};

fn natural(w: usize, h: usize, bpc: u8, t: f64, noise: u64, seed: u64) -> OwnedPlane {
    let max = ((1u32 << bpc) - 1) as f64;
    let mut s = seed | 1;
    let mut data = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let fx = x as f64 / w as f64;
            let fy = y as f64 / h as f64;
            let v = 0.5
                + 0.3 * (6.0 * fx + 4.0 * fy + t).sin() * (3.0 * fy - t).cos()
                + 0.08 * ((x * 7 + y * 13) % 17) as f64 / 17.0
                + ((s % 1000) as f64 / 1000.0 - 0.5) * 0.01 * noise as f64;
            data.push((v.clamp(0.0, 1.0) * max) as u16);
        }
    }
    OwnedPlane {
        data,
        width: w,
        height: h,
        bpc,
    }
}

fn bytes_of(p: &OwnedPlane) -> Vec<u8> {
    if p.bpc == 8 {
        p.data.iter().map(|&v| v as u8).collect()
    } else {
        p.data.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let all_metrics = args.iter().any(|a| a == "--all-metrics");
    args.retain(|a| a != "--all-metrics");
    let companions = if all_metrics {
        Companions {
            psnr: true,
            ssim: true,
            ms_ssim: true,
            ciede: true,
            psnr_hvs: true,
            cambi: None,
            speed_chroma: None,
            speed_temporal: None,
        }
    } else {
        Companions::default()
    };
    let cases: Vec<(usize, usize, u8, usize)> = if args.is_empty() {
        vec![(1920, 1080, 8, 2000), (3840, 2160, 10, 600)]
    } else {
        args.iter()
            .map(|a| {
                let p: Vec<&str> = a.split([':', 'x']).collect();
                (
                    p[0].parse().expect("width"),
                    p[1].parse().expect("height"),
                    p[2].parse().expect("bpc"),
                    p[3].parse().expect("frames"),
                )
            })
            .collect()
    };
    let mut b = CudaBackend::new(0).unwrap_or_else(|e| panic!("no CUDA device: {e}"));
    println!("device: {}", b.device_name());
    println!(
        "| size | bpc | frames | backend fps | engine fps | GPU ms/frame (1 stream) | GPU fps ({} streams) |",
        gstvmafgpu::backend::cuda::SLOTS
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (w, h, bpc, frames) in cases {
        let pairs: Vec<(Arc<OwnedPlane>, Arc<OwnedPlane>)> = (0..8)
            .map(|i| {
                (
                    Arc::new(natural(w, h, bpc, i as f64 * 0.05, 1, 11 + i)),
                    Arc::new(natural(w, h, bpc, i as f64 * 0.05, 4, 97 + i)),
                )
            })
            .collect();
        // 4:2:0 chroma for the companion metrics (one pair of planes for every frame).
        let chroma = all_metrics.then(|| {
            let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
            let c = |seed: u64, noise: u64| natural(cw, ch, bpc, 0.3, noise, seed);
            Arc::new(ChromaPair {
                reference: [c(3, 1), c(5, 1)],
                distorted: [c(4, 3), c(6, 3)],
            })
        });

        // Backend alone, with as many frames in flight as the engine keeps (which grows with
        // the companion metrics' ring once their first frame is in).
        let run = |b: &mut CudaBackend, n: usize| -> f64 {
            b.configure(&ClipConfig {
                companions,
                ..ClipConfig::default()
            })
            .expect("configure");
            let t0 = Instant::now();
            let mut in_flight = 0;
            let mut prev: Option<Arc<OwnedPlane>> = None;
            for i in 0..n {
                let (r, d) = &pairs[i % pairs.len()];
                while in_flight > 0 && in_flight >= b.max_in_flight() {
                    b.receive(true).expect("receive").expect("result");
                    in_flight -= 1;
                }
                b.submit(FrameJob {
                    index: i as u64,
                    reference: r.clone(),
                    distorted: d.clone(),
                    prev_ref: prev.replace(r.clone()),
                    features: true,
                    chroma: chroma.clone(),
                    previous: None,
                })
                .expect("submit");
                in_flight += 1;
            }
            while b.receive(true).expect("receive").is_some() {}
            n as f64 / t0.elapsed().as_secs_f64()
        };
        run(&mut b, 20); // warm-up: allocation for this geometry
        let backend_fps = run(&mut b, frames);
        eprintln!(
            "  {w}x{h}@{bpc} backend: {} frames in flight",
            b.max_in_flight()
        );

        // Engine with the CUDA backend (skipped with VMAFGPU_BENCH_NO_ENGINE=1).
        let engine_fps =
            if all_metrics || std::env::var("VMAFGPU_BENCH_NO_ENGINE").as_deref() == Ok("1") {
                f64::NAN
            } else {
                let raw: Vec<(Vec<u8>, Vec<u8>)> = pairs
                    .iter()
                    .map(|(r, d)| (bytes_of(r), bytes_of(d)))
                    .collect();
                let bps = if bpc > 8 { 2 } else { 1 };
                fn pic(data: &[u8], w: usize, h: usize, bpc: u8, bps: usize) -> Picture<'_> {
                    Picture {
                        width: w,
                        height: h,
                        bpc,
                        format: ChromaFormat::Gray,
                        luma: PlaneRef {
                            data,
                            stride: w * bps,
                        },
                        chroma: Chroma::None,
                    }
                }
                let mut s = Scorer::new(ScorerConfig {
                    backend: BackendKind::Cuda,
                    ..ScorerConfig::default()
                })
                .expect("scorer");
                let n_engine = frames;
                for (r, d) in raw.iter().take(4) {
                    s.push(&pic(r, w, h, bpc, bps), &pic(d, w, h, bpc, bps))
                        .expect("push");
                }
                s.finish().expect("finish");
                let t0 = Instant::now();
                let mut scored = 0;
                for i in 0..n_engine {
                    let (r, d) = &raw[i % raw.len()];
                    scored += s
                        .push(&pic(r, w, h, bpc, bps), &pic(d, w, h, bpc, bps))
                        .expect("push")
                        .len();
                }
                let (rest, _) = s.finish().expect("finish");
                scored += rest.len();
                let engine_fps = n_engine as f64 / t0.elapsed().as_secs_f64();
                assert_eq!(scored, n_engine);
                engine_fps
            };

        // GPU time alone (VMAF's kernels: no companion metric).
        b.configure(&ClipConfig::default()).expect("configure");
        let kt = b
            .time_kernels(
                FrameJob {
                    index: 0,
                    reference: pairs[1].0.clone(),
                    distorted: pairs[1].1.clone(),
                    prev_ref: Some(pairs[0].0.clone()),
                    features: true,
                    chroma: None,
                    previous: None,
                },
                200,
            )
            .expect("time_kernels");
        println!(
            "| {w}x{h} | {bpc} | {frames} | {backend_fps:.0} | {engine_fps:.0} | {:.3} | {:.0} |",
            kt.serial_ms,
            1e3 / kt.overlapped_ms
        );
        let per: Vec<String> = kt
            .per_kernel_ms
            .iter()
            .map(|(n, ms)| format!("{n} {:.1}us", ms * 1e3))
            .collect();
        eprintln!("  {w}x{h}@{bpc} kernels: {}", per.join(", "));
        eprintln!(
            "  {w}x{h}@{bpc} worker host time per frame over {} frames: staging {:.3} ms, enqueue {:.3} ms, waiting {:.3} ms",
            kt.host_frames, kt.host_stage_ms, kt.host_enqueue_ms, kt.host_wait_ms
        );
        if all_metrics {
            eprintln!(
                "  {w}x{h}@{bpc} companion metrics, worker host time per frame: queueing {:.3} ms (in enqueue above), taking the scores {:.3} ms",
                kt.host_companion_submit_ms, kt.host_companion_take_ms
            );
            let t = gstvmafgpu::backend::stats::feeder_times();
            eprintln!(
                "  {w}x{h}@{bpc} companion metrics per frame over {} frames (process total): submit to feeder {:.3} ms; feeder: waiting for a ring buffer {:.3} ms, staging {:.3} ms, queueing {:.3} ms, starting the scoring thread {:.3} ms; queued to readback done {:.3} ms; scoring {:.3} ms; scores set to taken {:.3} ms",
                t[0], t[5], t[1], t[2], t[3], t[4], t[6], t[7], t[8]
            );
        }
    }
}
