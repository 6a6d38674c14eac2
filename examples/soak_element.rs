//! Soak: a long run through the `vmafgpu` element with a report and windows, its memory sampled.
//!
//!   cargo run --release --example soak_element -- [--backend cpu|cuda|auto] [--window N] \
//!       [--format json|xml|csv] [--report PATH] [--samples N] [--threads N] [WxH:FRAMES ...]
//!
//! Default: backend auto, window 30, JSON report in the system's temporary directory, 20 RSS
//! samples, cases 176x144:1000000 and 1920x1080:100000 (I420, 8 bits, vmaf_v0.6.1).
//!
//! Two appsrcs (reference, distorted) into the element, its `src` into a fakesink. Four distinct
//! natural-looking pairs are made up front and cycled (each push a shallow copy with a new
//! timestamp). Every message is taken in a bus sync handler and dropped there, as a long-running
//! application does (a bus nobody reads keeps every message: see the README's Messages).
//!
//! The process's resident set (VmRSS) is sampled every FRAMES/samples pairs. The growth figure
//! is from the sample after the first 5% of the frames (allocator and caches warm) to the last,
//! per million frames; the element's goal is under 1 MB per million frames with the report being
//! written (its rows go to a spill file as frames are scored).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use gst::prelude::*;
use gst_video::prelude::*;

struct Opts {
    backend: String,
    window: u32,
    format: String,
    report: Option<String>,
    samples: u64,
    threads: Option<u32>,
    cases: Vec<(u32, u32, u64)>,
}

fn parse() -> Opts {
    let mut o = Opts {
        backend: "auto".into(),
        window: 30,
        format: "json".into(),
        report: None,
        samples: 20,
        threads: None,
        cases: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--backend" => o.backend = value(),
            "--window" => o.window = value().parse().expect("--window N"),
            "--format" => o.format = value(),
            "--report" => o.report = Some(value()),
            "--samples" => o.samples = value().parse().expect("--samples N"),
            "--threads" => o.threads = Some(value().parse().expect("--threads N")),
            case => {
                let (size, frames) = case.split_once(':').expect("WxH:FRAMES");
                let (w, h) = size.split_once('x').expect("WxH");
                o.cases.push((
                    w.parse().expect("width"),
                    h.parse().expect("height"),
                    frames.parse().expect("frames"),
                ));
            }
        }
    }
    if o.cases.is_empty() {
        o.cases = vec![(176, 144, 1_000_000), (1920, 1080, 100_000)];
    }
    o.samples = o.samples.max(2);
    o
}

/// `field` of /proc/self/status (kB), in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field}"));
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("kB");
    kb * 1024
}

/// A smooth picture with texture and a little noise (luma), mid-grey chroma; `t` moves it.
fn picture(info: &gst_video::VideoInfo, t: f64, noise: u32, seed: u64) -> gst::Buffer {
    let mut buf = gst::Buffer::with_size(info.size()).expect("buffer");
    {
        let b = buf.get_mut().expect("writable");
        let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(b, info).expect("map");
        let (w, h) = (info.width() as usize, info.height() as usize);
        let mut s = seed | 1;
        for plane in 0..frame.n_planes() {
            let stride = frame.plane_stride()[plane as usize] as usize;
            let data = frame.plane_data_mut(plane).expect("plane");
            let (pw, ph) = if plane == 0 {
                (w, h)
            } else {
                (w.div_ceil(2), h.div_ceil(2))
            };
            for y in 0..ph {
                for x in 0..pw {
                    data[y * stride + x] = if plane == 0 {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
                        let v = 0.5
                            + 0.3 * (6.0 * fx + 4.0 * fy + t).sin() * (3.0 * fy - t).cos()
                            + 0.08 * ((x * 7 + y * 13) % 17) as f64 / 17.0
                            + ((s % 1000) as f64 / 1000.0 - 0.5) * 0.01 * noise as f64;
                        (v.clamp(0.0, 1.0) * 255.0) as u8
                    } else {
                        128
                    };
                }
            }
        }
    }
    buf
}

struct Counts {
    frames: AtomicU64,
    windows: AtomicU64,
    warnings: Mutex<Vec<String>>,
}

fn soak(o: &Opts, (w, h, n): (u32, u32, u64)) -> Result<(), String> {
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, w, h)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .map_err(|e| e.to_string())?;
    let caps = info.to_caps().map_err(|e| e.to_string())?;
    let report = o.report.clone().unwrap_or_else(|| {
        std::env::temp_dir()
            .join(format!(
                "vmafgpu-soak-{}-{w}x{h}.{}",
                std::process::id(),
                o.format
            ))
            .to_string_lossy()
            .into_owned()
    });
    let pipeline = gst::Pipeline::new();
    let mk = |name: &str| -> Result<gst::Element, String> {
        gst::ElementFactory::make("appsrc")
            .name(name)
            .property("caps", &caps)
            .property_from_str("format", "time")
            .property("block", true)
            .property("max-buffers", 4u64)
            .build()
            .map_err(|e| format!("appsrc: {e}"))
    };
    let (rsrc, dsrc) = (mk("ref")?, mk("dist")?);
    let mut v = gst::ElementFactory::make("vmafgpu")
        .property_from_str("backend", &o.backend)
        .property("window", o.window)
        .property("results-filename", &report)
        .property_from_str("results-format", &o.format);
    if let Some(t) = o.threads {
        v = v.property("threads", t);
    }
    let v = v.build().map_err(|e| format!("vmafgpu: {e}"))?;
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

    let counts = Arc::new(Counts {
        frames: AtomicU64::new(0),
        windows: AtomicU64::new(0),
        warnings: Mutex::new(Vec::new()),
    });
    let (done_tx, done_rx) = mpsc::channel::<Result<(), String>>();
    {
        let counts = Arc::clone(&counts);
        let done_tx = Mutex::new(done_tx);
        pipeline
            .bus()
            .expect("bus")
            .set_sync_handler(move |_, msg| {
                match msg.view() {
                    gst::MessageView::Element(e) => {
                        let t = e.structure().and_then(|s| s.get::<String>("type").ok());
                        match t.as_deref() {
                            Some("frame") => counts.frames.fetch_add(1, Ordering::Relaxed),
                            Some("window") => counts.windows.fetch_add(1, Ordering::Relaxed),
                            _ => 0,
                        };
                    }
                    gst::MessageView::Warning(w) => {
                        counts.warnings.lock().unwrap().push(w.error().to_string())
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
                // taken here: nothing piles up on the bus
                gst::BusSyncReply::Drop
            });
    }
    let pairs: Vec<(gst::Buffer, gst::Buffer)> = (0..4u64)
        .map(|k| {
            let t = k as f64 * 0.1;
            (picture(&info, t, 0, 7 + k), picture(&info, t, 6, 1000 + k))
        })
        .collect();
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| format!("to PLAYING: {e}"))?;
    let push = |src: &gst::Element, b: &gst::Buffer, i: u64| -> Result<(), String> {
        let mut b = b.copy();
        {
            let b = b.get_mut().expect("fresh copy");
            b.set_pts(gst::ClockTime::from_nseconds(i * 33_333_333));
            b.set_duration(gst::ClockTime::from_nseconds(33_333_333));
        }
        match src.emit_by_name::<gst::FlowReturn>("push-buffer", &[&b]) {
            gst::FlowReturn::Ok => Ok(()),
            f => Err(format!("push-buffer at pair {i}: {f:?}")),
        }
    };
    println!(
        "{w}x{h}, {n} frames, backend={}, window={}, report {} ({})",
        o.backend, o.window, report, o.format
    );
    println!(
        "{:>10} {:>10} {:>10} {:>10}",
        "frames", "RSS MiB", "s", "frames/s"
    );
    let every = (n / o.samples).max(1);
    let start = Instant::now();
    let mut samples: Vec<(u64, u64)> = Vec::new();
    for i in 0..n {
        let (r, d) = &pairs[(i % 4) as usize];
        push(&rsrc, r, i)?;
        push(&dsrc, d, i)?;
        if (i + 1) % every == 0 || i + 1 == n {
            let rss = status_bytes("VmRSS:");
            let s = start.elapsed().as_secs_f64();
            println!(
                "{:>10} {:>10.2} {:>10.1} {:>10.0}",
                i + 1,
                rss as f64 / 1048576.0,
                s,
                (i + 1) as f64 / s
            );
            samples.push((i + 1, rss));
        }
    }
    for src in [&rsrc, &dsrc] {
        let _ = src.emit_by_name::<gst::FlowReturn>("end-of-stream", &[]);
    }
    let ended = done_rx
        .recv_timeout(std::time::Duration::from_secs(3600))
        .map_err(|_| "no EOS".to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let rss_end = status_bytes("VmRSS:");
    pipeline
        .set_state(gst::State::Null)
        .map_err(|e| e.to_string())?;
    ended?;
    let report_bytes = std::fs::metadata(&report).map(|m| m.len()).unwrap_or(0);
    // the growth from the first sample after 5% of the frames to the last
    let from = samples
        .iter()
        .find(|(f, _)| *f * 20 >= n)
        .copied()
        .unwrap_or(samples[0]);
    let to = *samples.last().expect("samples");
    let growth = to.1 as f64 - from.1 as f64;
    let per_million = if to.0 > from.0 {
        growth / (to.0 - from.0) as f64 * 1e6
    } else {
        f64::NAN
    };
    println!(
        "scored {} frames ({} frame, {} window messages) in {secs:.1} s, {:.0} frames/s",
        n,
        counts.frames.load(Ordering::Relaxed),
        counts.windows.load(Ordering::Relaxed),
        n as f64 / secs
    );
    println!(
        "RSS: {:.2} MiB after {} frames, {:.2} MiB after {}, {:.2} MiB after EOS, peak {:.2} MiB; \
         growth {:.3} MB per million frames",
        from.1 as f64 / 1048576.0,
        from.0,
        to.1 as f64 / 1048576.0,
        to.0,
        rss_end as f64 / 1048576.0,
        // (VmHWM is updated lazily: never below a sample)
        samples
            .iter()
            .map(|s| s.1)
            .chain([status_bytes("VmHWM:"), rss_end])
            .max()
            .unwrap_or(0) as f64
            / 1048576.0,
        per_million / 1e6
    );
    println!("report: {report_bytes} bytes");
    for w in counts.warnings.lock().unwrap().iter() {
        println!("warning: {w}");
    }
    if o.report.is_none() {
        let _ = std::fs::remove_file(&report);
    }
    Ok(())
}

fn main() {
    gst::init().expect("gst init");
    gstvmafgpu::plugin_register_static().expect("register the plugin");
    let o = parse();
    let mut failed = false;
    for &case in &o.cases {
        if let Err(e) = soak(&o, case) {
            eprintln!("{}x{}: {e}", case.0, case.1);
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
