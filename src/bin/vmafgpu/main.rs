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
mod pair;
mod plot;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gstvmafgpu::model::{FeatureOverload, Model};
use gstvmafgpu::vmafgpu::report::{Format, Report, ReportTarget};

use args::{Args, Command, OutputFormat};
use input::{Input, Kind};
use output::Collected;
use pair::score_pair;

/// When the process started (the `--verbose` timings count from it).
fn process_start() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

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
    process_start();
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
    if !a.no_prediction {
        // libvmaf: each model's line, then each bootstrap collection's
        let lines: Vec<_> = (a.models.iter())
            .map(|m| output::summary_lines(m.label(), &m.name, &scored.collected))
            .collect();
        let lines: Vec<String> = (lines.iter().filter_map(|l| l.0.clone()))
            .chain(lines.iter().filter_map(|l| l.1.clone()))
            .collect();
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
    write_plot(a, &scored)
}

/// `--plot`: VMAF (each model's score under its `name=`) and each `--feature` metric, one
/// panel each, against the frame index (and seconds when the frame rate is known), with the
/// pooled mean (libvmaf's pooled score) and the five worst frames.
fn write_plot(a: &Args, s: &PairScores) -> Result<(), Failure> {
    let Some(path) = &a.plot else {
        return Ok(());
    };
    let mut metrics: Vec<String> = Vec::new();
    if !a.no_prediction {
        metrics.extend(a.models.iter().map(|m| m.name.clone()));
    }
    for f in &a.features {
        metrics.extend(f.metrics().map_err(Failure::Run)?);
    }
    if metrics.is_empty() {
        // --no_prediction with a model: its features are the report
        metrics = (s.collected.frames.first().into_iter())
            .flat_map(|f| f.metrics.iter().map(|(n, _)| n.clone()))
            .collect();
    }
    let panels = metrics
        .into_iter()
        .map(|metric| plot::Panel {
            points: (s.collected.frames.iter())
                .filter_map(|f| {
                    let v = f.metrics.iter().find(|(n, _)| *n == metric)?.1;
                    Some((f.index, v))
                })
                .collect(),
            pooled: s.collected.mean(&metric).map(|v| (v, "mean".to_string())),
            lower_is_better: metric == "cambi" || metric.starts_with("speed_"),
            metric,
        })
        .filter(|p| !p.points.is_empty())
        .collect();
    let (unmatched_ref, unmatched_dist, backend) = match &s.pooled {
        Some(p) => (p.unmatched_ref, p.unmatched_dist, p.backend.as_str()),
        None => (0, 0, "?"),
    };
    let fig = plot::Figure {
        title: format!(
            "vmafgpu: {} vs {}",
            file_name(&a.reference),
            file_name(&a.distorted)
        ),
        caption: format!(
            "{} frames scored on {backend}; unmatched frames: reference {unmatched_ref}, \
             distorted {unmatched_dist}",
            s.collected.scored
        ),
        fps: s.fps,
        x_desc: "frame".into(),
        panels,
        worst: 5,
        points: "frames".into(),
    };
    plot::write(Path::new(path), &fig).map_err(Failure::Run)
}

/// One pair scored: the report's frames and pool, the element's pooled message, the time from
/// start to the last frame, the frame size.
pub struct PairScores {
    pub collected: Collected,
    pub elapsed: f64,
    pub geometry: (u32, u32),
    /// The element's pooled message (unmatched counts, backend).
    pub pooled: Option<gstvmafgpu::PooledMessage>,
    /// The reference's frame rate, when the input says it (not for raw files).
    pub fps: Option<f64>,
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

/// The last component of a path, for titles.
fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
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
