//! Compare two videos with the `vmafgpu` element: a command-line VMAF tool built on GStreamer.
//!
//! ```text
//! cargo run --release --example vmafgpu_compare -- REFERENCE DISTORTED [options]
//! ```
//!
//! REFERENCE and DISTORTED are any files GStreamer can decode (mp4, mkv, webm, y4m, ...), or raw
//! `.yuv` files (give `--width`, `--height` and, unless I420, `--format`). Decoded frames keep
//! their format and bit depth; the distorted video is converted (and scaled) to the reference's
//! format and size only when they differ. A progress bar goes to stderr, the pooled score to
//! stdout; `--frames` adds one line per frame, `--output` writes libvmaf's report.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use gst::prelude::*;
use gstvmafgpu::{FrameMessage, VmafMessage};

const USAGE: &str = "\
usage: vmafgpu_compare REFERENCE DISTORTED [options]

inputs: files GStreamer can decode, or raw .yuv (needs --width and --height)
  --width N --height N     size of raw .yuv input
  --format F               raw .yuv sample format, rawvideoparse names: i420 (default), yv12,
                           nv12, y42b, y444, gray8, i420-10le, i420-12le, i422-10le, i422-12le,
                           y444-10le, y444-12le, y444-16le, gray16-le, p010-10le, p016-le
  --fps N[/D]              frame rate of raw .yuv input (default 25)
scoring (the element's properties):
  --model NAME|PATH        vmaf_v0.6.1 (default), vmaf_v0.6.1neg, vmaf_4k_v0.6.1, vmaf_b_v0.6.3, or a
                           libvmaf model JSON file
  --phone-model            libvmaf's phone model (vmaf_v0.6.1 with its score transform)
  --conf-interval          bootstrap confidence interval (needs e.g. --model vmaf_b_v0.6.3)
  --subsample N            score one frame in N
  --threads N              CPU threads (0 = all cores)
  --backend auto|cpu|...   where to compute
  --pool mean|min|max|harmonic_mean   pooled statistic to print (default mean)
  --sync timestamp|index   pair frames by timestamp (default) or by order
companion metrics (libvmaf's, bit for bit):
  --psnr --ssim --ms-ssim --ciede --psnr-hvs   each one; --all-metrics for all five
output:
  --frames                 print every frame's score on stdout
  --output FILE            write libvmaf's report (--json default, --xml, --csv)
  --quiet                  no progress bar
";

/// The element's companion-metric properties.
const COMPANIONS: [&str; 5] = ["psnr", "ssim", "ms-ssim", "ciede", "psnr-hvs"];

fn companion_property(flag: &str) -> &'static str {
    let name = flag.trim_start_matches('-');
    COMPANIONS
        .into_iter()
        .find(|p| *p == name)
        .expect("a companion flag")
}

/// The companion metrics printed after VMAF (libvmaf names), when present.
const COMPANION_METRICS: [&str; 10] = [
    "psnr_y",
    "psnr_cb",
    "psnr_cr",
    "float_ssim",
    "float_ms_ssim",
    "ciede2000",
    "psnr_hvs_y",
    "psnr_hvs_cb",
    "psnr_hvs_cr",
    "psnr_hvs",
];

#[derive(Default)]
struct Options {
    reference: String,
    distorted: String,
    width: Option<u32>,
    height: Option<u32>,
    format: String,
    fps: String,
    props: Vec<(&'static str, String)>,
    frames: bool,
    quiet: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        format: "i420".into(),
        fps: "25/1".into(),
        ..Default::default()
    };
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    let mut format = None;
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--width" => {
                o.width = Some(
                    value("--width")?
                        .parse()
                        .map_err(|e| format!("--width: {e}"))?,
                )
            }
            "--height" => {
                o.height = Some(
                    value("--height")?
                        .parse()
                        .map_err(|e| format!("--height: {e}"))?,
                )
            }
            "--format" => o.format = value("--format")?,
            "--fps" => {
                let v = value("--fps")?;
                o.fps = if v.contains('/') { v } else { format!("{v}/1") };
            }
            "--model" => o.props.push(("model-filename", value("--model")?)),
            "--phone-model" => o.props.push(("phone-model", "true".into())),
            "--conf-interval" => o.props.push(("conf-interval", "true".into())),
            "--subsample" => o.props.push(("subsample", value("--subsample")?)),
            "--threads" => o.props.push(("threads", value("--threads")?)),
            "--backend" => o.props.push(("backend", value("--backend")?)),
            "--pool" => o.props.push(("pool-method", value("--pool")?)),
            "--sync" => o.props.push(("sync", value("--sync")?)),
            "--output" => o.props.push(("results-filename", value("--output")?)),
            "--json" | "--xml" | "--csv" => format = Some(a[2..].to_string()),
            "--psnr" | "--ssim" | "--ms-ssim" | "--ciede" | "--psnr-hvs" => {
                o.props.push((companion_property(&a), "true".into()))
            }
            "--all-metrics" => {
                for p in COMPANIONS {
                    o.props.push((p, "true".into()));
                }
            }
            "--frames" => o.frames = true,
            "--quiet" => o.quiet = true,
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            _ => files.push(a),
        }
    }
    if let Some(f) = format {
        o.props.push(("results-format", f));
    }
    let [r, d]: [String; 2] = files
        .try_into()
        .map_err(|_| "give exactly two files: REFERENCE DISTORTED".to_string())?;
    o.reference = r;
    o.distorted = d;
    Ok(o)
}

fn make(factory: &str) -> Result<gst::Element, String> {
    gst::ElementFactory::make(factory)
        .build()
        .map_err(|_| format!("GStreamer element {factory} is missing (install its plugin)"))
}

/// Add a source branch for `path` to `pipeline`, ending in `sink`. With `convert`, a
/// videoconvert ! videoscale pair goes before `sink` (the element steers it to the other pad's
/// format and size; it does nothing when they already match). Returns the branch's first pad
/// after the source/decoder.
fn add_source(
    pipeline: &gst::Pipeline,
    path: &str,
    o: &Options,
    sink: &gst::Pad,
    convert: bool,
) -> Result<gst::Pad, String> {
    if !Path::new(path).is_file() {
        return Err(format!("{path}: no such file"));
    }
    let err = |e: &dyn std::fmt::Debug| format!("{path}: {e:?}");
    let entry = if convert {
        let conv = make("videoconvert")?;
        // no dithering: a 16-bit intermediate packed to 10 bits would change the samples
        conv.set_property_from_str("dither", "none");
        let scale = make("videoscale")?;
        pipeline.add_many([&conv, &scale]).map_err(|e| err(&e))?;
        conv.link(&scale).map_err(|e| err(&e))?;
        scale
            .static_pad("src")
            .unwrap()
            .link(sink)
            .map_err(|e| err(&e))?;
        conv.static_pad("sink").unwrap()
    } else {
        sink.clone()
    };
    let src = make("filesrc")?;
    src.set_property("location", path);
    pipeline.add(&src).map_err(|e| err(&e))?;
    if path.to_ascii_lowercase().ends_with(".yuv") {
        let (Some(w), Some(h)) = (o.width, o.height) else {
            return Err(format!("{path}: raw .yuv input needs --width and --height"));
        };
        let fps = o
            .fps
            .split_once('/')
            .and_then(|(n, d)| Some(gst::Fraction::new(n.parse().ok()?, d.parse().ok()?)))
            .ok_or_else(|| "--fps takes N or N/D".to_string())?;
        let parse = make("rawvideoparse")?;
        parse.set_property("width", w as i32);
        parse.set_property("height", h as i32);
        parse.set_property_from_str("format", &o.format);
        parse.set_property("framerate", fps);
        pipeline.add(&parse).map_err(|e| err(&e))?;
        src.link(&parse).map_err(|e| err(&e))?;
        parse
            .static_pad("src")
            .unwrap()
            .link(&entry)
            .map_err(|e| err(&e))?;
    } else {
        let decode = make("decodebin")?;
        pipeline.add(&decode).map_err(|e| err(&e))?;
        src.link(&decode).map_err(|e| err(&e))?;
        let name = path.to_string();
        let target = entry.clone();
        decode.connect_pad_added(move |_, pad| {
            let is_video = pad
                .current_caps()
                .and_then(|c| c.structure(0).map(|s| s.name().starts_with("video/")))
                .unwrap_or(false);
            if is_video
                && !target.is_linked()
                && let Err(e) = pad.link(&target)
            {
                eprintln!("{name}: cannot use its video stream: {e:?}");
            }
        });
    }
    Ok(entry)
}

fn progress(done: u64, total: Option<u64>, started: Instant, quiet: bool) {
    if quiet {
        return;
    }
    let fps = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
    let mut err = std::io::stderr().lock();
    match total {
        Some(t) if t > 0 => {
            let frac = (done as f64 / t as f64).min(1.0);
            let bar = (frac * 30.0) as usize;
            let _ = write!(
                err,
                "\r[{}{}] {done}/{t} frames {:5.1}% {fps:6.1} fps",
                "#".repeat(bar),
                " ".repeat(30 - bar),
                frac * 100.0
            );
        }
        _ => {
            let _ = write!(err, "\r{done} frames {fps:6.1} fps");
        }
    }
    let _ = err.flush();
}

fn run(o: Options) -> Result<(), String> {
    gst::init().map_err(|e| e.to_string())?;
    gstvmafgpu::plugin_register_static().map_err(|e| e.to_string())?;
    let pipeline = gst::Pipeline::new();
    let vmaf = make("vmafgpu")?;
    for (k, v) in &o.props {
        vmaf.set_property_from_str(k, v);
    }
    let sink = make("fakesink")?;
    sink.set_property("sync", false);
    pipeline
        .add_many([&vmaf, &sink])
        .map_err(|e| e.to_string())?;
    vmaf.link(&sink).map_err(|e| e.to_string())?;
    let ref_sink = vmaf.static_pad("ref_sink").unwrap();
    add_source(&pipeline, &o.reference, &o, &ref_sink, false)?;
    let dist_entry = add_source(
        &pipeline,
        &o.distorted,
        &o,
        &vmaf.static_pad("dist_sink").unwrap(),
        true,
    )?;
    // hold the distorted branch until the reference has caps, so that the element steers the
    // distorted conversion to the reference's format and size (not the other way round)
    let probe = dist_entry.add_probe(gst::PadProbeType::BLOCK_DOWNSTREAM, |_, _| {
        gst::PadProbeReturn::Ok
    });
    let probe = std::sync::Mutex::new(probe);
    let entry = dist_entry.clone();
    ref_sink.connect_notify(Some("caps"), move |pad, _| {
        if pad.current_caps().is_some()
            && let Some(id) = probe.lock().unwrap().take()
        {
            entry.remove_probe(id);
        }
    });

    let bus = pipeline.bus().unwrap();
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|_| first_error(&bus).unwrap_or_else(|| "cannot start the pipeline".into()))?;
    let started = Instant::now();
    let mut total: Option<u64> = None;
    let mut frame_duration: Option<gst::ClockTime> = None;
    let mut result = Ok(());
    let mut stdout = std::io::stdout().lock();
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                result = Err(format!(
                    "{}{}",
                    e.error(),
                    e.debug().map(|d| format!("\n  ({d})")).unwrap_or_default()
                ));
                break;
            }
            gst::MessageView::Warning(w) if !o.quiet => eprintln!("\nwarning: {}", w.error()),
            _ => {}
        }
        match VmafMessage::from_message(&msg) {
            Some(Ok(VmafMessage::Frame(f))) => {
                let done = f.index + 1;
                if frame_duration.is_none() {
                    frame_duration = f.timing.duration;
                }
                if total.is_none() {
                    total = pipeline
                        .query_duration::<gst::ClockTime>()
                        .zip(frame_duration)
                        .map(|(d, f)| d.nseconds() / f.nseconds().max(1));
                }
                if o.frames {
                    if !o.quiet {
                        // clear the progress line before the frame line
                        eprint!("\r\x1b[K");
                    }
                    print_frame(&mut stdout, &f);
                    let _ = stdout.flush();
                }
                progress(done, total, started, o.quiet);
            }
            Some(Ok(VmafMessage::Pooled(p))) => {
                if !o.quiet {
                    eprintln!();
                }
                let m = p.scores.pool_method;
                match p.scores.score() {
                    Some(s) => {
                        let _ = writeln!(
                            stdout,
                            "VMAF ({}, {} frames, backend {}): {s:.6}",
                            gstvmafgpu::vmafgpu::messages::pool_method_nick(m),
                            p.scores.frames,
                            p.backend
                        );
                    }
                    None => result = Err("no frame pair was scored".into()),
                }
                for name in COMPANION_METRICS {
                    if let Some(st) = p.scores.get(name) {
                        let _ = writeln!(stdout, "{name}: {:.6}", st.get(m));
                    }
                }
                if let Some(ci) = p.confidence_interval() {
                    let _ = writeln!(
                        stdout,
                        "95% interval: [{:.6}, {:.6}] (bagging {:.6}, stddev {:.6})",
                        ci.lo, ci.hi, ci.bagging, ci.stddev
                    );
                }
                if p.unmatched_ref + p.unmatched_dist > 0 {
                    eprintln!(
                        "frames without a partner: {} reference, {} distorted",
                        p.unmatched_ref, p.unmatched_dist
                    );
                }
            }
            Some(Err(e)) => eprintln!("undecodable VMAF message: {e}"),
            _ => {}
        }
    }
    let _ = pipeline.set_state(gst::State::Null);
    result
}

fn print_frame(out: &mut impl Write, f: &FrameMessage) {
    let _ = write!(out, "frame {:6} vmaf {:10.6}", f.index, f.score);
    if let Some(t) = f.timing.timestamp {
        let _ = write!(out, "  pts {t}");
    }
    if let Some(ci) = f.confidence_interval() {
        let _ = write!(out, "  ci [{:.6}, {:.6}]", ci.lo, ci.hi);
    }
    let _ = writeln!(out);
}

fn first_error(bus: &gst::Bus) -> Option<String> {
    bus.pop_filtered(&[gst::MessageType::Error])
        .and_then(|m| match m.view() {
            gst::MessageView::Error(e) => Some(e.error().to_string()),
            _ => None,
        })
}

fn main() -> ExitCode {
    match parse_args() {
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}\n");
            }
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
        Ok(o) => match run(o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("\nerror: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
