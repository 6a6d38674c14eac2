//! One pair through a pipeline of its own: the inputs, one `vmafgpu` element per model (libvmaf
//! scores several `-m` models on one set of frames: here each model's element gets the same
//! buffers through a `tee`, and the command joins their frame messages into one report), the
//! bus loop, and the `--verbose` timing of the run's phases.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use gst::prelude::*;
use gstvmafgpu::VmafMessage;

use crate::args::{Args, ModelArg};
use crate::input::{self, Decoders, Kind, Range};
use crate::output::{Collected, MetricMap, Progress};
use crate::{Failure, PairScores, REPORT_VERSION, fail};

/// One element of the run: its model (None: `--no_prediction` without `-m`) and how its
/// metric names become the report's.
struct Unit {
    element: gst::Element,
    map: MetricMap,
}

/// The report names of the `--feature` metrics (with libvmaf's option suffixes).
fn feature_metrics(a: &Args) -> Result<Vec<String>, Failure> {
    let mut out = Vec::new();
    for f in &a.features {
        out.extend(f.metrics().map_err(|e| {
            Failure::Run(format!(
                "problem loading feature extractor: {}: {e}",
                f.feature().name
            ))
        })?);
    }
    Ok(out)
}

/// The element of model `m` (the first element also computes the `--feature`s).
fn element(a: &Args, m: Option<&ModelArg>, features: bool) -> Result<gst::Element, Failure> {
    let vmaf = input::make("vmafgpu").map_err(Failure::Run)?;
    if let Some(m) = m {
        vmaf.set_property("model-filename", crate::model_filename(m));
        if !m.overloads.is_empty() {
            vmaf.set_property("model-params", m.overloads.join(":"));
        }
        vmaf.set_property("disable-clip", m.disable_clip);
        vmaf.set_property("enable-transform", m.enable_transform);
    }
    if features {
        let mut params = Vec::new();
        for f in &a.features {
            vmaf.set_property(f.feature().property, true);
            params.extend(f.params());
        }
        if !params.is_empty() {
            vmaf.set_property("feature-params", params.join(":"));
        }
    }
    if let Some(t) = a.threads {
        vmaf.set_property("threads", t);
    }
    if let Some(s) = a.subsample {
        vmaf.set_property("subsample", s);
    }
    if let Some(b) = &a.backend {
        crate::set_backend(&vmaf, b)?;
    }
    if let Some(d) = a.device {
        vmaf.set_property("device-id", d);
    }
    vmaf.set_property_from_str("sync", &a.sync);
    vmaf.set_property("frame-message", true);
    Ok(vmaf)
}

/// `--verbose` timings, from the process start.
pub struct Phases {
    verbose: bool,
    last: Instant,
    parts: Vec<String>,
}

impl Phases {
    pub fn new(verbose: bool) -> Phases {
        Phases {
            verbose,
            last: crate::process_start(),
            parts: Vec::new(),
        }
    }

    /// The phase that ends now.
    pub fn mark(&mut self, what: &str) {
        if self.verbose {
            let now = Instant::now();
            let ms = (now - self.last).as_secs_f64() * 1e3;
            self.parts.push(format!("{what} {ms:.1} ms"));
            self.last = now;
        }
    }

    pub fn print(&mut self) {
        if self.verbose && !self.parts.is_empty() {
            eprintln!("timing: {}", self.parts.join(", "));
            self.parts.clear();
        }
    }
}

/// Score `a`'s pair through a pipeline of its own (`progress`: the meter on stderr).
pub fn score_pair(a: &Args, progress: bool) -> Result<PairScores, Failure> {
    let mut phases = Phases::new(a.verbose);
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
    crate::validate(&reference, &distorted)?;

    let models: Vec<_> = (a.models.iter())
        .map(|m| crate::load_model(m).map(|x| (m, x)))
        .collect::<Result<_, _>>()?;
    let feature_names = feature_metrics(a)?;
    phases.mark("process start to inputs and models");

    crate::init_gstreamer()?;
    phases.mark("GStreamer init");

    let pipeline = gst::Pipeline::new();
    let gst_err =
        |e: &dyn std::fmt::Debug| Failure::Run(format!("cannot build the pipeline: {e:?}"));
    let mut units = Vec::new();
    let specs: Vec<Option<&(&ModelArg, gstvmafgpu::model::Model)>> = if models.is_empty() {
        vec![None]
    } else {
        models.iter().map(Some).collect()
    };
    for (i, spec) in specs.into_iter().enumerate() {
        let mut map = MetricMap::default();
        match spec {
            Some((m, model)) if !a.no_prediction => {
                let renamed = model.clone().with_name(&m.name);
                for (from, to) in model.output_names().iter().zip(renamed.output_names()) {
                    map.rename.insert(from.clone(), to.clone());
                }
            }
            Some((_, model)) => map.drop = model.output_names().iter().cloned().collect(),
            None => map.keep_only = Some(feature_names.iter().cloned().collect()),
        }
        let element = element(a, spec.map(|(m, _)| *m), i == 0)?;
        let sink = input::make("fakesink").map_err(Failure::Run)?;
        sink.set_property("sync", false);
        pipeline
            .add_many([&element, &sink])
            .map_err(|e| gst_err(&e))?;
        element.link(&sink).map_err(|e| gst_err(&e))?;
        units.push(Unit { element, map });
    }
    // One element: the inputs go straight in (the reader fills the element's own buffers).
    // Several: a tee per input, a queue per element.
    let entry = |pad: &str| -> Result<gst::Pad, Failure> {
        if units.len() == 1 {
            return Ok(units[0]
                .element
                .static_pad(pad)
                .expect("vmafgpu's sink pad"));
        }
        let tee = input::make("tee").map_err(Failure::Run)?;
        pipeline.add(&tee).map_err(|e| gst_err(&e))?;
        for u in &units {
            let q = input::make("queue").map_err(Failure::Run)?;
            pipeline.add(&q).map_err(|e| gst_err(&e))?;
            tee.link(&q).map_err(|e| gst_err(&e))?;
            q.static_pad("src")
                .expect("queue has src")
                .link(&u.element.static_pad(pad).expect("vmafgpu's sink pad"))
                .map_err(|e| gst_err(&e))?;
        }
        Ok(tee.static_pad("sink").expect("tee has sink"))
    };
    let ref_entry = entry("ref_sink")?;
    let dist_sink = entry("dist_sink")?;
    let ref_sink = units[0]
        .element
        .static_pad("ref_sink")
        .expect("vmafgpu has ref_sink");

    // A decoded input's format and size are known only once it plays: the distorted video then
    // goes through videoconvert ! videoscale, which the element steers to the reference's.
    let decoded = reference.kind == Kind::Decoded || distorted.kind == Kind::Decoded;
    let dist_entry = if decoded {
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
    let decoders = if decoded {
        let d = input::decoders(a.backend.as_deref());
        if a.verbose {
            eprintln!("{}", d.describe(a.backend.as_deref().unwrap_or("auto")));
        }
        d
    } else {
        Decoders::Software
    };
    // NVIDIA's decoders give NV12 and P010: the reference converted too (exact: a repacking)
    let convert_ref = matches!(decoders, Decoders::Nvidia(_));

    let stop = Arc::new(AtomicBool::new(false));
    let range = |skip| Range {
        skip,
        count: a.frame_cnt,
    };
    let mut readers = Vec::new();
    for (input, skip, entry, convert) in [
        (&reference, a.frame_skip_ref, &ref_entry, convert_ref),
        (&distorted, a.frame_skip_dist, &dist_entry, false),
    ] {
        readers.extend(
            input::add_source(
                &pipeline,
                input,
                range(skip),
                entry,
                &stop,
                &decoders,
                convert,
            )
            .map_err(Failure::Run)?,
        );
    }
    if decoded {
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
    if a.verbose && matches!(reference.kind, Kind::Raw(_)) {
        eprintln!("raw reads: {} threads per input", input::read_threads());
    }
    phases.mark("pipeline built");

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

    let result = score(a, &pipeline, &units, known_total, progress, &mut phases);
    let info = ref_sink
        .current_caps()
        .and_then(|c| gst_video::VideoInfo::from_caps(&c).ok());
    let geometry = info.as_ref().map_or((0, 0), |i| (i.width(), i.height()));
    let fps = match reference.kind {
        Kind::Raw(_) => None,
        Kind::Y4m(y) => Some(f64::from(y.fps.0) / f64::from(y.fps.1)),
        Kind::Decoded => info
            .map(|i| i.fps())
            .filter(|f| f.numer() > 0 && f.denom() > 0)
            .map(|f| f64::from(f.numer()) / f64::from(f.denom())),
    };
    stop.store(true, Ordering::Relaxed);
    let _ = pipeline.set_state(gst::State::Null);
    for r in readers {
        let _ = r.join();
    }
    phases.mark("teardown (pipeline to NULL, readers joined)");
    phases.print();
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
        pooled,
        fps,
    })
}

type Scored = (Collected, Option<gstvmafgpu::PooledMessage>, f64);

/// A frame's metrics, as one element posted them.
type Metrics = Vec<(String, f64)>;

/// The report's metrics of one frame from every element's: the first element's, then each
/// other's not yet there (the models' scores; features two models share are one
/// computation's, equal).
fn join(parts: Vec<Metrics>) -> Metrics {
    let mut out: Metrics = Vec::new();
    for part in parts {
        for (n, v) in part {
            if !out.iter().any(|(m, _)| *m == n) {
                out.push((n, v));
            }
        }
    }
    out
}

/// Play the pipeline to its end, collecting the frame messages (each frame once every element
/// has posted it: they score the same frames, in order).
fn score(
    a: &Args,
    pipeline: &gst::Pipeline,
    units: &[Unit],
    known_total: Option<u64>,
    show_progress: bool,
    phases: &mut Phases,
) -> Result<Scored, Failure> {
    let bus = pipeline.bus().expect("a pipeline has a bus");
    let started = Instant::now();
    if pipeline.set_state(gst::State::Playing).is_err() {
        return fail(
            crate::first_error(&bus).unwrap_or_else(|| "cannot start the pipeline".into()),
        );
    }
    phases.mark("to PLAYING");
    let mut progress = Progress::new(show_progress);
    let mut total = known_total;
    let mut collected = Collected::default();
    let mut pooled = None;
    let mut last = started;
    let mut first = true;
    let mut waiting: Vec<std::collections::VecDeque<(u64, Metrics)>> =
        units.iter().map(|_| Default::default()).collect();
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                progress.finish();
                return fail(crate::error_text(e));
            }
            gst::MessageView::Warning(w) if !a.quiet => {
                progress.finish();
                eprintln!("warning: {}", w.error());
            }
            _ => {}
        }
        let from = msg.src().and_then(|s| {
            units
                .iter()
                .position(|u| u.element.upcast_ref::<gst::Object>() == s)
        });
        let Some(k) = from else { continue };
        match VmafMessage::from_message(&msg) {
            Some(Ok(VmafMessage::Frame(f))) => {
                if first {
                    phases.mark("to the first frame scored");
                    first = false;
                }
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
                waiting[k].push_back((f.index, units[k].map.apply(f.metrics)));
                while waiting.iter().all(|w| !w.is_empty()) {
                    let parts: Vec<_> =
                        waiting.iter_mut().map(|w| w.pop_front().unwrap()).collect();
                    let index = parts[0].0;
                    if let Some((other, _)) = parts.iter().find(|(i, _)| *i != index) {
                        return fail(format!(
                            "internal: the models' elements scored frames {index} and {other} \
                             together"
                        ));
                    }
                    collected.add(index, join(parts.into_iter().map(|p| p.1).collect()));
                    progress.update(index + 1, total);
                }
            }
            Some(Ok(VmafMessage::Pooled(p))) if k == 0 => pooled = Some(p),
            Some(Err(e)) => eprintln!("undecodable VMAF message: {e}"),
            _ => {}
        }
    }
    progress.finish();
    let scored = collected.scored;
    let elapsed = (last - started).as_secs_f64();
    phases.mark(&format!(
        "to EOS ({scored} frames; {:.0} frames/s from PLAYING to the last frame)",
        scored as f64 / elapsed.max(1e-9)
    ));
    Ok((collected, pooled, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_join() {
        let a = vec![("vmaf".to_string(), 1.0), ("integer_adm2".into(), 0.5)];
        let b = vec![("neg".to_string(), 2.0), ("integer_adm2".into(), 0.5)];
        assert_eq!(
            join(vec![a, b]),
            [
                ("vmaf".to_string(), 1.0),
                ("integer_adm2".into(), 0.5),
                ("neg".into(), 2.0)
            ]
        );
    }
}
