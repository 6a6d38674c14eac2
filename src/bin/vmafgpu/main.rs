//! `vmafgpu`: libvmaf's `vmaf` command on the `vmafgpu` GStreamer element.
//!
//! ```text
//! vmafgpu -r ref.y4m -d dist.y4m --json -o scores.json
//! vmafgpu -r ref.yuv -d dist.yuv -w 1920 -h 1080 -p 420 -b 8 --feature psnr
//! vmafgpu -r ref.mkv -d encode.mp4 -m version=vmaf_v1.0.16_3d0h --backend cuda
//! ```
//!
//! The options are libvmaf 3.2.0's (`libvmaf/tools/cli_parse.c`), with the same meanings and exit
//! statuses (1 for a usage error, 255 when scoring fails), so a script written for `vmaf` runs
//! with `vmafgpu` instead, and its report has libvmaf's layout and numbers (at 17 significant
//! digits). Beyond libvmaf: any input GStreamer decodes, `--backend`, `--device`, `--sync`.
//! The plugin is linked in and registered statically: no GST_PLUGIN_PATH needed.

mod args;
mod batch;
mod input;
mod output;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gstvmafgpu::VmafMessage;
use gstvmafgpu::model::{FeatureOverload, Model};
use gstvmafgpu::vmafgpu::report::{Format, Report, ReportTarget};

use args::{Args, Command, FEATURES, OutputFormat};
use input::{Input, Kind, Range};
use output::{Collected, MetricMap, Progress};

/// The `version` written into reports, as the element writes it.
const REPORT_VERSION: &str = concat!("3.2.0 (vmafgpu ", env!("CARGO_PKG_VERSION"), ")");

/// Why the command failed: a usage error (status 1) or a failure while scoring (255, libvmaf's
/// `return -1`).
enum Failure {
    Usage(String),
    Run(String),
}

fn fail<T>(msg: impl Into<String>) -> Result<T, Failure> {
    Err(Failure::Run(msg.into()))
}

fn main() -> ExitCode {
    let mut argv = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => argv.push(s),
            Err(a) => {
                eprintln!("vmafgpu: argument {a:?} is not valid UTF-8");
                return ExitCode::from(1);
            }
        }
    }
    let result = match argv.first().map(String::as_str) {
        Some("batch" | "merge") if argv[1..].iter().any(|a| a == "--help") => {
            print!("{}", batch::USAGE);
            Ok(())
        }
        Some("batch") => batch::batch(&argv[1..]),
        Some("merge") => batch::merge(&argv[1..]),
        _ => single(&argv),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!(
                "{msg}\n\nUsage: vmafgpu -r REFERENCE -d DISTORTED [options]; vmafgpu --help lists them"
            );
            ExitCode::from(1)
        }
        Err(Failure::Run(msg)) => {
            eprintln!("{msg}");
            ExitCode::from(255)
        }
    }
}

/// One pair, libvmaf's way.
fn single(argv: &[String]) -> Result<(), Failure> {
    match args::parse(argv) {
        Err(e) => Err(Failure::Usage(e.0)),
        Ok(Command::Help) => {
            print!("{}", args::USAGE);
            Ok(())
        }
        Ok(Command::Version) => {
            // libvmaf prints its version on stderr
            eprintln!("{REPORT_VERSION}");
            Ok(())
        }
        Ok(Command::Run(a)) => run(&a),
    }
}

/// libvmaf's `validate_videos` for two inputs whose format the files say (raw, y4m).
fn validate(r: &Input, d: &Input) -> Result<(), Failure> {
    let format = |i: &Input| match i.kind {
        Kind::Raw(f) => Some(f),
        Kind::Y4m(y) => Some(y.format),
        Kind::Decoded => None,
    };
    let (Some(a), Some(b)) = (format(r), format(d)) else {
        return Ok(());
    };
    let mut problems = Vec::new();
    if (a.width, a.height) != (b.width, b.height) {
        problems.push(format!(
            "dimensions do not match: {}x{}, {}x{}",
            a.width, a.height, b.width, b.height
        ));
    }
    if a.pix != b.pix {
        problems.push(format!(
            "pixel formats do not match: {}, {}",
            input::pix_name(a.pix),
            input::pix_name(b.pix)
        ));
    }
    if a.bitdepth != b.bitdepth {
        problems.push(format!(
            "bitdepths do not match: {}, {}",
            a.bitdepth, b.bitdepth
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    let n = problems.len();
    fail(format!(
        "{}\nvideos are incompatible, {n} {}.",
        problems.join("\n"),
        if n == 1 { "problem" } else { "problems" }
    ))
}

/// The model as the element will load it, to check `-m` before starting and to learn the names
/// of its outputs.
fn load_model(m: &args::ModelArg) -> Result<Model, Failure> {
    let overloads = FeatureOverload::parse_list(&m.overloads.join(":")).map_err(|e| {
        Failure::Run(format!(
            "problem overloading feature extractors from model: {}: {e}",
            m.label()
        ))
    })?;
    let model = match (&m.version, &m.path) {
        (Some(v), _) => Model::builtin_with(v, &overloads),
        (None, Some(p)) => Model::from_path_with(p, &overloads),
        (None, None) => unreachable!("checked by the parser"),
    };
    model.map_err(|e| Failure::Run(format!("problem loading model: {}: {e}", m.label())))
}

/// `path=` as the element's `model-filename`: a path the element cannot take for a built-in name.
fn model_filename(m: &args::ModelArg) -> String {
    match (&m.version, &m.path) {
        (Some(v), _) => v.clone(),
        (None, Some(p)) if p.contains('/') => p.clone(),
        (None, Some(p)) => format!("./{p}"),
        (None, None) => unreachable!("checked by the parser"),
    }
}

fn set_backend(vmaf: &gst::Element, backend: &str) -> Result<(), Failure> {
    let class =
        glib::EnumClass::with_type(gstvmafgpu::Backend::static_type()).expect("Backend is an enum");
    if class.value_by_nick(backend).is_none() {
        let nicks: Vec<_> = class.values().iter().map(|v| v.nick()).collect();
        return Err(Failure::Usage(format!(
            "Invalid argument \"{backend}\" for option --backend; should be one of {}",
            nicks.join(", ")
        )));
    }
    vmaf.set_property_from_str("backend", backend);
    Ok(())
}

fn run(a: &Args) -> Result<(), Failure> {
    // the report's path is checked now, not after scoring (its temporary is created beside it)
    let mut target = match &a.output {
        Some(path) => Some(
            ReportTarget::prepare(Path::new(path))
                .map_err(|e| Failure::Run(format!("could not open file: {path} ({e})")))?
                .0,
        ),
        None => None,
    };
    let terminal = std::io::stderr().is_terminal();
    let scored = score_pair(a, terminal && !a.quiet)?;
    if let (Some(m), false) = (&a.model, a.no_prediction) {
        let lines = output::summary_lines(m.label(), &m.name, &scored.collected);
        if a.output.is_none() {
            // libvmaf prints nothing on stdout then: the line goes there, for scripts
            for l in &lines {
                println!("{l}");
            }
        } else if terminal && !a.quiet {
            for l in &lines {
                eprintln!("{l}");
            }
        }
    }
    if let (Some(t), Some(path)) = (target.as_mut(), &a.output) {
        t.write(&scored.render(a.output_format))
            .map_err(|e| Failure::Run(format!("could not write {path}: {e}")))?;
    }
    Ok(())
}

/// One pair scored: the report's frames and pool, the element's pooled message, the time from
/// start to the last frame, the frame size.
pub struct PairScores {
    pub collected: Collected,
    pub elapsed: f64,
    pub geometry: (u32, u32),
}

impl PairScores {
    /// libvmaf's report in `format`.
    pub fn render(&self, format: OutputFormat) -> String {
        let stats: Vec<_> = (self.collected.pool.stats().into_iter())
            .map(|(name, s)| (name, s.into()))
            .collect();
        Report {
            version: REPORT_VERSION,
            fps: self.collected.scored as f64 / self.elapsed,
            width: self.geometry.0,
            height: self.geometry.1,
            frames: &self.collected.frames,
            pooled: &stats,
        }
        .render(match format {
            OutputFormat::Xml => Format::Xml,
            OutputFormat::Json => Format::Json,
            OutputFormat::Csv => Format::Csv,
        })
    }
}

/// GStreamer and the statically linked plugin, once per process.
fn init_gstreamer() -> Result<(), Failure> {
    static INIT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INIT.get_or_init(|| {
        gst::init().map_err(|e| format!("cannot start GStreamer: {e}"))?;
        gstvmafgpu::plugin_register_static()
            .map_err(|e| format!("cannot register the vmafgpu plugin: {e}"))
    })
    .clone()
    .map_err(Failure::Run)
}

/// Score `a`'s pair through a pipeline of its own (`progress`: the meter on stderr).
fn score_pair(a: &Args, progress: bool) -> Result<PairScores, Failure> {
    let probe = |path: &str| {
        input::probe(path, a).map_err(|e| {
            if e.is_empty() {
                Failure::Usage(format!(
                    "{path}: raw .yuv input needs these options:\n  --width/-w\n  --height/-h\n  \
                     --pixel_format/-p\n  --bitdepth/-b"
                ))
            } else {
                Failure::Run(e)
            }
        })
    };
    let reference = probe(&a.reference)?;
    let distorted = probe(&a.distorted)?;
    validate(&reference, &distorted)?;

    let mut map = MetricMap::default();
    let model = a
        .model
        .as_ref()
        .map(|m| load_model(m).map(|x| (m, x)))
        .transpose()?;
    match &model {
        Some((m, model)) if !a.no_prediction => {
            let renamed = model.clone().with_name(&m.name);
            for (from, to) in model.output_names().iter().zip(renamed.output_names()) {
                map.rename.insert(from.clone(), to.clone());
            }
        }
        Some((_, model)) => map.drop = model.output_names().iter().cloned().collect(),
        None => {
            map.keep_only = Some(
                a.features
                    .iter()
                    .flat_map(|&f| FEATURES[f].metrics.iter().map(|m| m.to_string()))
                    .collect(),
            )
        }
    }

    init_gstreamer()?;

    let pipeline = gst::Pipeline::new();
    let vmaf = input::make("vmafgpu").map_err(Failure::Run)?;
    if let Some((m, _)) = &model {
        vmaf.set_property("model-filename", model_filename(m));
        if !m.overloads.is_empty() {
            vmaf.set_property("model-params", m.overloads.join(":"));
        }
        vmaf.set_property("disable-clip", m.disable_clip);
        vmaf.set_property("enable-transform", m.enable_transform);
    }
    for &f in &a.features {
        vmaf.set_property(FEATURES[f].property, true);
    }
    if let Some(t) = a.threads {
        vmaf.set_property("threads", t);
    }
    if let Some(s) = a.subsample {
        vmaf.set_property("subsample", s);
    }
    if let Some(b) = &a.backend {
        set_backend(&vmaf, b)?;
    }
    if let Some(d) = a.device {
        vmaf.set_property("device-id", d);
    }
    vmaf.set_property_from_str("sync", &a.sync);
    vmaf.set_property("frame-message", true);
    let sink = input::make("fakesink").map_err(Failure::Run)?;
    sink.set_property("sync", false);
    let gst_err =
        |e: &dyn std::fmt::Debug| Failure::Run(format!("cannot build the pipeline: {e:?}"));
    pipeline.add_many([&vmaf, &sink]).map_err(|e| gst_err(&e))?;
    vmaf.link(&sink).map_err(|e| gst_err(&e))?;

    let ref_sink = vmaf.static_pad("ref_sink").expect("vmafgpu has ref_sink");
    let dist_sink = vmaf.static_pad("dist_sink").expect("vmafgpu has dist_sink");
    // A decoded input's format and size are known only once it plays: the distorted video then
    // goes through videoconvert ! videoscale, which the element steers to the reference's.
    let convert = reference.kind == Kind::Decoded || distorted.kind == Kind::Decoded;
    let dist_entry = if convert {
        let conv = input::make("videoconvert").map_err(Failure::Run)?;
        // no dithering: a 16-bit intermediate packed to 10 bits would change the samples
        conv.set_property_from_str("dither", "none");
        let scale = input::make("videoscale").map_err(Failure::Run)?;
        pipeline
            .add_many([&conv, &scale])
            .map_err(|e| gst_err(&e))?;
        conv.link(&scale).map_err(|e| gst_err(&e))?;
        scale
            .static_pad("src")
            .expect("videoscale has src")
            .link(&dist_sink)
            .map_err(|e| gst_err(&e))?;
        conv.static_pad("sink").expect("videoconvert has sink")
    } else {
        dist_sink.clone()
    };

    let stop = Arc::new(AtomicBool::new(false));
    let range = |skip| Range {
        skip,
        count: a.frame_cnt,
    };
    let mut readers = Vec::new();
    readers.extend(
        input::add_source(
            &pipeline,
            &reference,
            range(a.frame_skip_ref),
            &ref_sink,
            &stop,
        )
        .map_err(Failure::Run)?,
    );
    readers.extend(
        input::add_source(
            &pipeline,
            &distorted,
            range(a.frame_skip_dist),
            &dist_entry,
            &stop,
        )
        .map_err(Failure::Run)?,
    );
    if convert {
        // hold the distorted branch until the reference has caps, so that the element steers
        // the conversion to the reference's format and size (not the other way round)
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
    }

    if progress {
        eprintln!("VMAF version {REPORT_VERSION}");
    }
    let known_total = [
        (&reference, a.frame_skip_ref),
        (&distorted, a.frame_skip_dist),
    ]
    .iter()
    .map(|(i, skip)| i.frames.map(|n| n.saturating_sub(*skip)))
    .collect::<Option<Vec<u64>>>()
    .and_then(|v| v.into_iter().min())
    .map(|n| {
        if a.frame_cnt > 0 {
            n.min(a.frame_cnt)
        } else {
            n
        }
    });

    let result = score(a, &pipeline, &map, known_total, progress);
    let geometry = ref_sink
        .current_caps()
        .and_then(|c| gst_video::VideoInfo::from_caps(&c).ok())
        .map_or((0, 0), |i| (i.width(), i.height()));
    stop.store(true, Ordering::Relaxed);
    let _ = pipeline.set_state(gst::State::Null);
    for r in readers {
        let _ = r.join();
    }
    let (collected, pooled, elapsed) = result?;

    if let Some(p) = &pooled {
        let (r, d) = (&a.reference, &a.distorted);
        if p.unmatched_dist > 0 {
            eprintln!("\"{r}\" ended before \"{d}\".");
        } else if p.unmatched_ref > 0 {
            eprintln!("\"{d}\" ended before \"{r}\".");
        }
    }
    if collected.scored == 0 {
        return fail("problem generating pooled VMAF score: no frame pair was scored");
    }
    Ok(PairScores {
        collected,
        elapsed,
        geometry,
    })
}

type Scored = (Collected, Option<gstvmafgpu::PooledMessage>, f64);

/// Play the pipeline to its end, collecting the frame messages.
fn score(
    a: &Args,
    pipeline: &gst::Pipeline,
    map: &MetricMap,
    known_total: Option<u64>,
    show_progress: bool,
) -> Result<Scored, Failure> {
    let bus = pipeline.bus().expect("a pipeline has a bus");
    let started = Instant::now();
    if pipeline.set_state(gst::State::Playing).is_err() {
        return fail(first_error(&bus).unwrap_or_else(|| "cannot start the pipeline".into()));
    }
    let mut progress = Progress::new(show_progress);
    let mut total = known_total;
    let mut collected = Collected::default();
    let mut pooled = None;
    let mut last = started;
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                progress.finish();
                return fail(error_text(e));
            }
            gst::MessageView::Warning(w) if !a.quiet => {
                progress.finish();
                eprintln!("warning: {}", w.error());
            }
            _ => {}
        }
        match VmafMessage::from_message(&msg) {
            Some(Ok(VmafMessage::Frame(f))) => {
                last = Instant::now();
                if total.is_none()
                    && let (Some(d), Some(fd)) = (
                        pipeline.query_duration::<gst::ClockTime>(),
                        f.timing.duration,
                    )
                {
                    total = Some(d.nseconds() / fd.nseconds().max(1));
                    if a.frame_cnt > 0 {
                        total = total.map(|t| t.min(a.frame_cnt));
                    }
                }
                let index = f.index;
                collected.add(index, map.apply(f.metrics));
                progress.update(index + 1, total);
            }
            Some(Ok(VmafMessage::Pooled(p))) => pooled = Some(p),
            Some(Err(e)) => eprintln!("undecodable VMAF message: {e}"),
            _ => {}
        }
    }
    progress.finish();
    let elapsed = (last - started).as_secs_f64();
    Ok((collected, pooled, elapsed))
}

fn error_text(e: &gst::message::Error) -> String {
    match e.debug() {
        Some(d) => format!("{}\n  ({d})", e.error()),
        None => e.error().to_string(),
    }
}

fn first_error(bus: &gst::Bus) -> Option<String> {
    bus.pop_filtered(&[gst::MessageType::Error])
        .and_then(|m| match m.view() {
            gst::MessageView::Error(e) => Some(error_text(e)),
            _ => None,
        })
}
