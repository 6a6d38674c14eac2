//! Throughput and latency through the `vmafgpu` element, frames from host memory.
//!
//!   cargo run --release --example bench_element -- [--backend cpu|cuda|auto]... \
//!       [--memory pinned|pageable|both] [--distinct N] [--latency-frames N] [--rate FPS] \
//!       [--metric psnr|ssim|ms-ssim|ciede|psnr-hvs|cambi|speed-chroma|speed-temporal]... [--all-metrics] \
//!       [--model NAME] [--gray | --nv12] [--channels N] \
//!       [WxH:BPC:FRAMES ...]
//!
//! Default: backend cuda, memory both, sizes 1920x1080:8:3000 and 3840x2160:10:600 (I420 and
//! I420_10LE; GRAY8/GRAY16_LE with --gray; with --nv12 what hardware decoders give: NV12 at 8
//! bits, P010_10LE at 10), model vmaf_v0.6.1 (`--model` another, e.g. vmaf_v1.0.16_3d0h); `--metric` turns on a companion
//! metric (the element property of that name), `--all-metrics` all five.
//!
//! The pipeline is built in code: two appsrcs (reference and distorted) into the element's
//! `ref_sink` and `dist_sink`, its `src` into a fakesink. N distinct natural-looking pairs are
//! made up front and cycled (each push is a shallow copy: the same memory, a new timestamp), so
//! the figures are the element's, not a decoder's.
//!
//! - memory=pinned: after the caps are set, the harness asks the element for buffers with an
//!   ALLOCATION query from the appsrc's pad (what a decoder does) and fills buffers acquired
//!   from the offered pool: frames in pinned memory, uploaded by DMA with no host copy. Where
//!   no pool is offered (CPU backend, no GPU) it says so and uses plain buffers.
//! - memory=pageable: plain buffers (Rust `Vec`s).
//!
//! Throughput: frames pushed as fast as the element takes them; frames/s from the first push to
//! the last per-frame message (and in steady state, from the 10th message on). Latency: live
//! appsrcs (clock timestamps), frames pushed at `--rate` frames/s (default 60); per frame, the
//! time from pushing
//! the pair to its `frame` message on the bus (sync handler). Motion needs the next frame, so a
//! frame's message can only come after the next pair: the figure that matters is the time from
//! pushing pair i+1 to the message of frame i ("after next push"), reported beside the total.
//! `--channels N` runs N such live pipelines at once in this process (one thread each, as an
//! application monitoring N live streams on one GPU); the latency columns are then over all
//! channels' frames, and a line gives each channel's median.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gst::prelude::*;
use gst_video::prelude::*;
use gstvmafgpu::VmafMessage;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Memory {
    Pinned,
    Pageable,
}

struct Case {
    w: usize,
    h: usize,
    bpc: u8,
    frames: usize,
}

/// `--model NAME`: the element's model-filename (vmaf_v0.6.1 when not given).
static MODEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

struct Opts {
    backends: Vec<String>,
    memories: Vec<Memory>,
    distinct: Option<usize>,
    latency_frames: usize,
    rate: f64,
    gray: bool,
    /// NV12 instead of I420 at 8 bits, P010 instead of I420_10LE at 10 (what hardware
    /// decoders give).
    nv12: bool,
    metrics: Vec<String>,
    cases: Vec<Case>,
    /// Live pipelines at once in the latency run.
    channels: usize,
}

fn parse() -> Opts {
    let mut o = Opts {
        backends: Vec::new(),
        memories: vec![Memory::Pinned, Memory::Pageable],
        distinct: None,
        latency_frames: 300,
        rate: 60.0,
        gray: false,
        nv12: false,
        metrics: Vec::new(),
        cases: Vec::new(),
        channels: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--backend" => o.backends.push(val()),
            "--memory" => {
                o.memories = match val().as_str() {
                    "pinned" => vec![Memory::Pinned],
                    "pageable" => vec![Memory::Pageable],
                    "both" => vec![Memory::Pinned, Memory::Pageable],
                    m => panic!("--memory pinned|pageable|both, not {m}"),
                }
            }
            "--distinct" => o.distinct = Some(val().parse().expect("--distinct N")),
            "--latency-frames" => o.latency_frames = val().parse().expect("--latency-frames N"),
            "--rate" => o.rate = val().parse().expect("--rate FPS"),
            "--gray" => o.gray = true,
            "--nv12" => o.nv12 = true,
            "--channels" => o.channels = val().parse().expect("--channels N"),
            "--metric" => o.metrics.push(val()),
            "--model" => {
                let _ = MODEL.set(val());
            }
            "--all-metrics" => {
                o.metrics = ["psnr", "ssim", "ms-ssim", "ciede", "psnr-hvs"]
                    .map(String::from)
                    .to_vec()
            }
            s => {
                let p: Vec<&str> = s.split([':', 'x']).collect();
                assert!(p.len() == 4, "size WxH:BPC:FRAMES, not {s}");
                o.cases.push(Case {
                    w: p[0].parse().expect("width"),
                    h: p[1].parse().expect("height"),
                    bpc: p[2].parse().expect("bpc"),
                    frames: p[3].parse().expect("frames"),
                });
            }
        }
    }
    if o.backends.is_empty() {
        o.backends.push("cuda".into());
    }
    if o.cases.is_empty() {
        o.cases = vec![
            Case {
                w: 1920,
                h: 1080,
                bpc: 8,
                frames: 3000,
            },
            Case {
                w: 3840,
                h: 2160,
                bpc: 10,
                frames: 600,
            },
        ];
    }
    o
}

/// Natural-looking luma samples (as examples/bench_gpu.rs): smooth gradients, texture, noise.
fn natural(w: usize, h: usize, bpc: u8, t: f64, noise: u64, seed: u64) -> Vec<u16> {
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
    data
}

/// Write `luma` (and mid-grey chroma) into a mapped frame, whatever its strides.
fn fill(frame: &mut gst_video::VideoFrameRef<&mut gst::BufferRef>, luma: &[u16], bpc: u8) {
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let format = frame.format();
    for plane in 0..frame.n_planes() {
        let stride = frame.plane_stride()[plane as usize] as usize;
        let data = frame.plane_data_mut(plane).expect("plane");
        let (pw, ph) = match (plane, format) {
            (0, _) => (w, h),
            // NV12, P010: one plane of U,V pairs.
            (_, gst_video::VideoFormat::Nv12 | gst_video::VideoFormat::P01010le) => {
                (2 * w.div_ceil(2), h.div_ceil(2))
            }
            _ => (w.div_ceil(2), h.div_ceil(2)),
        };
        // P010 keeps its samples in the high bits of each word.
        let up = if format == gst_video::VideoFormat::P01010le {
            16 - bpc
        } else {
            0
        };
        for y in 0..ph {
            let row = &mut data[y * stride..];
            for x in 0..pw {
                let v = if plane == 0 {
                    luma[y * w + x]
                } else {
                    1 << (bpc - 1)
                };
                if bpc > 8 {
                    row[2 * x..2 * x + 2].copy_from_slice(&(v << up).to_le_bytes());
                } else {
                    row[x] = v as u8;
                }
            }
        }
    }
}

fn video_info(c: &Case, gray: bool, nv12: bool) -> gst_video::VideoInfo {
    use gst_video::VideoFormat as F;
    let format = match (gray, c.bpc) {
        (true, 8) => F::Gray8,
        (true, _) => F::Gray16Le,
        (false, 8) if nv12 => F::Nv12,
        (false, 8) => F::I420,
        (false, 10) if nv12 => F::P01010le,
        (false, 10) => F::I42010le,
        (false, 12) => F::I42012le,
        (false, b) => panic!("no I420 format for {b} bits (use --gray for 16)"),
    };
    gst_video::VideoInfo::builder(format, c.w as u32, c.h as u32)
        .fps(gst::Fraction::new(60, 1))
        .build()
        .expect("video info")
}

struct Run {
    fps: f64,
    steady_fps: f64,
    /// From the first push to frame 0's message (ms): the first frame sets up the GPU
    /// buffers of the geometry.
    first_ms: f64,
    frames: usize,
    /// Push of pair i to the message of frame i, and push of pair i+1 to that message (ms).
    latency: Vec<f64>,
    after_next: Vec<f64>,
    pool: bool,
    mean_vmaf: f64,
}

/// One pipeline run: `n` frames, paced at `rate` frames/s if given.
/// `element`: the backend and the companion metrics turned on.
fn run(
    (backend, metrics): (&str, &[String]),
    memory: Memory,
    c: &Case,
    info: &gst_video::VideoInfo,
    luma: &[(Vec<u16>, Vec<u16>)],
    n: usize,
    rate: Option<f64>,
) -> Result<Run, String> {
    let pipeline = gst::Pipeline::new();
    // The latency runs are live (as a capture source or a live decoder): the element then
    // delivers each frame as soon as the next pair is computed.
    let live = rate.is_some();
    let caps = info.to_caps().map_err(|e| e.to_string())?;
    // appsrc through its properties and action signals (no gstreamer-app dependency).
    let mk = |name: &str| -> Result<gst::Element, String> {
        gst::ElementFactory::make("appsrc")
            .name(name)
            .property("caps", &caps)
            .property_from_str("format", "time")
            .property("is-live", live)
            // Live: buffers stamped with the clock on arrival; the element may wait this long
            // for a partner (both come at once here).
            .property("do-timestamp", live)
            .property("min-latency", if live { 20_000_000i64 } else { 0 })
            .property("block", true)
            .property("max-buffers", 4u64)
            .build()
            .map_err(|e| format!("appsrc: {e}"))
    };
    let push = |src: &gst::Element, b: gst::Buffer| -> Result<(), String> {
        match src.emit_by_name::<gst::FlowReturn>("push-buffer", &[&b]) {
            gst::FlowReturn::Ok => Ok(()),
            f => Err(format!("push-buffer: {f:?}")),
        }
    };
    let (rsrc, dsrc) = (mk("ref")?, mk("dist")?);
    let v = metrics
        .iter()
        .fold(
            gst::ElementFactory::make("vmafgpu")
                .property_from_str("backend", backend)
                .property(
                    "model-filename",
                    MODEL.get().map_or("vmaf_v0.6.1", String::as_str),
                ),
            |b, m| b.property(m.as_str(), true),
        )
        .build()
        .map_err(|e| format!("vmafgpu: {e}"))?;
    let sink = gst::ElementFactory::make("fakesink")
        .property("sync", false)
        .build()
        .map_err(|e| e.to_string())?;
    pipeline
        .add_many([&rsrc, &dsrc, &v, &sink])
        .map_err(|e| e.to_string())?;
    rsrc.link_pads(Some("src"), &v, Some("ref_sink"))
        .map_err(|e| e.to_string())?;
    dsrc.link_pads(Some("src"), &v, Some("dist_sink"))
        .map_err(|e| e.to_string())?;
    v.link(&sink).map_err(|e| e.to_string())?;

    // Per-frame messages, timed in the sync handler (the posting thread).
    let arrivals: Arc<Mutex<Vec<(u64, Instant, f64)>>> = Arc::default();
    let (done_tx, done_rx) = mpsc::channel::<Result<(), String>>();
    {
        let arrivals = Arc::clone(&arrivals);
        let done_tx = Mutex::new(done_tx);
        pipeline
            .bus()
            .expect("bus")
            .set_sync_handler(move |_, msg| {
                let now = Instant::now();
                match msg.view() {
                    gst::MessageView::Element(_) => {
                        if let Some(Ok(VmafMessage::Frame(f))) = VmafMessage::from_message(msg) {
                            arrivals.lock().unwrap().push((f.index, now, f.score));
                        }
                    }
                    gst::MessageView::Eos(_) => {
                        let _ = done_tx.lock().unwrap().send(Ok(()));
                    }
                    gst::MessageView::Error(e) => {
                        let _ = done_tx.lock().unwrap().send(Err(format!(
                            "{} ({:?})",
                            e.error(),
                            e.debug()
                        )));
                    }
                    _ => {}
                }
                gst::BusSyncReply::Drop
            });
    }
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| format!("cannot start the pipeline: {e}"))?;

    // Buffers: from the element's pool (pinned) when it offers one, else plain ones.
    let mut pool_used = false;
    let mut premade: Vec<(gst::Buffer, gst::Buffer)> = Vec::new();
    let mut pool = None;
    if memory == Memory::Pinned {
        let mut q = gst::query::Allocation::new(Some(&caps), true);
        let answered = rsrc.static_pad("src").expect("src pad").peer_query(&mut q);
        if let Some((Some(p), _, _, _)) = answered.then(|| q.allocation_pools().next()).flatten() {
            let mut cfg = p.config();
            let (_, size, min, _) = cfg.params().unwrap_or((None, info.size() as u32, 0, 0));
            cfg.set_params(Some(&caps), size, min, 0);
            p.set_config(cfg).map_err(|e| format!("pool config: {e}"))?;
            p.set_active(true).map_err(|e| format!("pool: {e}"))?;
            pool = Some(p);
            pool_used = true;
        } else {
            eprintln!("  (the element offered no buffer pool: plain buffers)");
        }
    }
    let new_buffer = |l: &[u16]| -> Result<gst::Buffer, String> {
        let mut b = match &pool {
            Some(p) => p
                .acquire_buffer(None)
                .map_err(|e| format!("acquire: {e:?}"))?,
            None => gst::Buffer::from_mut_slice(vec![0u8; info.size()]),
        };
        {
            let bm = b.get_mut().ok_or("buffer not writable")?;
            let mut f = gst_video::VideoFrameRef::from_buffer_ref_writable(bm, info)
                .map_err(|e| e.to_string())?;
            fill(&mut f, l, c.bpc);
        }
        Ok(b)
    };
    for (r, d) in luma {
        premade.push((new_buffer(r)?, new_buffer(d)?));
    }

    let frame_dur = gst::ClockTime::from_nseconds(1_000_000_000 / 60);
    let mut pushed = Vec::with_capacity(n);
    let t0 = Instant::now();
    // Live runs: the first pair sets up the backend for the geometry (GPU buffers); the paced
    // pushes start 300 ms after it, as a live source would after its first frame.
    let mut paced_from = t0;
    for i in 0..n {
        if let Some(r) = rate {
            if i == 1 {
                std::thread::sleep(Duration::from_millis(300));
                paced_from = Instant::now();
            }
            let due = paced_from + Duration::from_secs_f64(i.saturating_sub(1) as f64 / r);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        let (r, d) = &premade[i % premade.len()];
        let stamp = |b: &gst::Buffer| {
            // Shallow copy: same memory, own timestamps.
            let mut b = b.copy();
            if !live {
                let bm = b.get_mut().expect("fresh copy");
                bm.set_pts(frame_dur * i as u64);
                bm.set_duration(frame_dur);
            }
            b
        };
        let (rb, db) = (stamp(r), stamp(d));
        pushed.push(Instant::now());
        push(&rsrc, rb)?;
        push(&dsrc, db)?;
    }
    let _ = rsrc.emit_by_name::<gst::FlowReturn>("end-of-stream", &[]);
    let _ = dsrc.emit_by_name::<gst::FlowReturn>("end-of-stream", &[]);
    let r = done_rx
        .recv_timeout(Duration::from_secs(600))
        .map_err(|_| "no EOS within 10 minutes".to_string())?;
    let t_end = Instant::now();
    let _ = pipeline.set_state(gst::State::Null);
    r?;
    drop(premade);
    if let Some(p) = pool {
        let _ = p.set_active(false);
    }

    let arrivals = arrivals.lock().unwrap().clone();
    // A live run may lose a pair that arrives after the aggregator's deadline (the first
    // frame of a new geometry sets up the GPU buffers); it is reported, not fatal. A
    // throughput run must score every frame.
    if arrivals.len() != n && (rate.is_none() || arrivals.len() + 5 < n) {
        return Err(format!("{} frame messages for {n} frames", arrivals.len()));
    }
    if arrivals.len() != n {
        eprintln!(
            "  live run: {} of {n} pairs scored (the others missed the deadline)",
            arrivals.len()
        );
    }
    let last = arrivals.iter().map(|a| a.1).max().unwrap_or(t_end);
    let secs = (last - t0).as_secs_f64();
    let skip = 10.min(n.saturating_sub(2));
    let first = arrivals.iter().find(|a| a.0 == skip as u64).map(|a| a.1);
    let steady_fps = match first {
        Some(f) if last > f => (n - 1 - skip) as f64 / (last - f).as_secs_f64(),
        _ => f64::NAN,
    };
    let mut latency = Vec::new();
    let mut after_next = Vec::new();
    for &(i, at, _) in &arrivals {
        let i = i as usize;
        latency.push((at - pushed[i]).as_secs_f64() * 1e3);
        // The last frame's message comes at EOS, not after a next push.
        if i + 1 < n {
            after_next.push(at.saturating_duration_since(pushed[i + 1]).as_secs_f64() * 1e3);
        }
    }
    let mean_vmaf = arrivals.iter().map(|a| a.2).sum::<f64>() / n as f64;
    let first_ms = arrivals
        .iter()
        .find(|a| a.0 == 0)
        .map_or(f64::NAN, |a| (a.1 - t0).as_secs_f64() * 1e3);
    Ok(Run {
        fps: n as f64 / secs,
        steady_fps,
        first_ms,
        frames: n,
        latency,
        after_next,
        pool: pool_used,
        mean_vmaf,
    })
}

fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() - 1) as f64 * p).round() as usize]
}

/// The latency run on `o.channels` live pipelines at once (one thread each); their frames'
/// latencies together, and each channel's median after the next push printed.
fn live_channels(
    element: (&str, &[String]),
    memory: Memory,
    c: &Case,
    info: &gst_video::VideoInfo,
    luma: &[(Vec<u16>, Vec<u16>)],
    o: &Opts,
) -> Result<Run, String> {
    let one = || {
        run(
            element,
            memory,
            c,
            info,
            luma,
            o.latency_frames,
            Some(o.rate),
        )
    };
    if o.channels <= 1 {
        return one();
    }
    let runs: Vec<Result<Run, String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..o.channels).map(|_| s.spawn(one)).collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a channel panicked".into()))
            })
            .collect()
    });
    let runs = runs.into_iter().collect::<Result<Vec<_>, _>>()?;
    let medians: Vec<String> = runs
        .iter()
        .map(|r| format!("{:.2}", pct(&r.after_next, 0.5)))
        .collect();
    eprintln!(
        "  {} live channels at once, after next push median per channel (ms): {}",
        o.channels,
        medians.join(", ")
    );
    let mut all = runs.into_iter();
    let mut first = all.next().expect("at least two channels");
    for r in all {
        first.latency.extend(r.latency);
        first.after_next.extend(r.after_next);
    }
    Ok(first)
}

fn main() {
    let o = parse();
    gst::init().expect("gst init");
    gstvmafgpu::plugin_register_static().expect("register vmafgpu");
    if !o.metrics.is_empty() {
        println!("companion metrics: {}", o.metrics.join(", "));
    }
    println!(
        "| size | bpc | backend | memory | frames | frames/s | steady frames/s | live {} fps: latency median / p99 ms | after next push median / p99 ms | mean vmaf |",
        o.rate
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut failed = false;
    for c in &o.cases {
        let info = video_info(c, o.gray, o.nv12);
        let k = o
            .distinct
            .unwrap_or(if c.w * c.h > 4_000_000 { 4 } else { 8 });
        let luma: Vec<(Vec<u16>, Vec<u16>)> = (0..k as u64)
            .map(|i| {
                (
                    natural(c.w, c.h, c.bpc, i as f64 * 0.05, 1, 11 + i),
                    natural(c.w, c.h, c.bpc, i as f64 * 0.05, 4, 97 + i),
                )
            })
            .collect();
        for backend in &o.backends {
            for &memory in &o.memories {
                let element = (backend.as_str(), &o.metrics[..]);
                #[cfg(feature = "cuda")]
                let before = gstvmafgpu::backend::stats::feeder_ns();
                #[cfg(feature = "cuda")]
                let setup_before = gstvmafgpu::backend::stats::setup_ms();
                let pushes = gstvmafgpu::engine::push_times();
                let tp = run(element, memory, c, &info, &luma, c.frames, None);
                let p = gstvmafgpu::engine::push_times();
                let calls = (p[0] - pushes[0]).max(1) as f64;
                if p[0] > pushes[0] {
                    let ms = |i: usize| (p[i] - pushes[i]) as f64 / 1e6 / calls;
                    eprintln!(
                        "  engine push (copying route) per frame over {calls} frames: copying the planes {:.3} ms, submitting {:.3} ms, collecting {:.3} ms",
                        ms(1),
                        ms(2),
                        ms(3)
                    );
                }
                #[cfg(feature = "cuda")]
                {
                    use gstvmafgpu::backend::stats::{feeder_ns, per_frame_ms};
                    let after = feeder_ns();
                    let t = per_frame_ms(std::array::from_fn(|i| after[i] - before[i]));
                    let s = gstvmafgpu::backend::stats::setup_ms();
                    let s: [f64; 5] = std::array::from_fn(|i| s[i] - setup_before[i]);
                    if s[0] > 0.0 {
                        eprintln!(
                            "  companion setup ({} geometry): device arena {:.1} ms, tables {:.1} ms, ring buffers {:.1} ms, graphs {:.1} ms",
                            s[0], s[1], s[2], s[3], s[4]
                        );
                    }
                    if t[0] > 0.0 {
                        eprintln!(
                            "  companion metrics per frame over {} frames: submit to feeder {:.3} ms; feeder: waiting for a ring buffer {:.3} ms, staging {:.3} ms, queueing {:.3} ms, starting the scoring thread {:.3} ms; queued to readback done {:.3} ms; scoring {:.3} ms; scores set to taken {:.3} ms",
                            t[0], t[5], t[1], t[2], t[3], t[4], t[6], t[7], t[8]
                        );
                    }
                }
                let lat = if o.latency_frames > 1 {
                    live_channels(element, memory, c, &info, &luma, &o).map(Some)
                } else {
                    Ok(None)
                };
                match (tp, lat) {
                    (Ok(t), Ok(l)) => {
                        eprintln!(
                            "  frame 0's message {:.1} ms after its push (the geometry's set-up)",
                            t.first_ms
                        );
                        let mem = match (memory, t.pool) {
                            (Memory::Pinned, true) => "pinned pool",
                            (Memory::Pinned, false) => "plain (no pool offered)",
                            (Memory::Pageable, _) => "pageable",
                        };
                        let (lm, lp, am, ap) = match &l {
                            Some(l) => (
                                pct(&l.latency, 0.5),
                                pct(&l.latency, 0.99),
                                pct(&l.after_next, 0.5),
                                pct(&l.after_next, 0.99),
                            ),
                            None => (f64::NAN, f64::NAN, f64::NAN, f64::NAN),
                        };
                        println!(
                            "| {}x{} | {} | {backend} | {mem} | {} | {:.0} | {:.0} | {lm:.2} / {lp:.2} | {am:.2} / {ap:.2} | {:.4} |",
                            c.w, c.h, c.bpc, t.frames, t.fps, t.steady_fps, t.mean_vmaf
                        );
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        failed = true;
                        println!(
                            "| {}x{} | {} | {backend} | {memory:?} | failed: {e} |",
                            c.w, c.h, c.bpc
                        );
                    }
                }
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
