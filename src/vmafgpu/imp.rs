//! GObject glue of `vmafgpu`: pads, properties, pairing, scoring calls, messages, EOS.
//!
//! Lock discipline: `settings` and `state` are only held for bookkeeping. The scorer is taken
//! out of the state for every engine call, and messages are posted and buffers pushed after
//! the lock is dropped, so no lock is ever held across `post_message`, `finish_buffer` or an
//! engine call (a property read or `stop()` from another thread never waits for a frame).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::AGGREGATOR_FLOW_NEED_DATA;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use super::engine;
use super::input::{self, FORMATS, PinnedAllocator};
use super::messages::{FrameMessage, PooledMessage, Timing, WindowMessage};
use super::pairing::{self, Decision, Head, Unpaired};
use super::report::{self, ReportRows, Summary};
use super::settings::{self, Settings};
use super::span::{FrameMeta, Span};
use super::{Backend, Sync};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "vmafgpu",
        gst::DebugColorFlags::empty(),
        Some("VMAF (bit-exact with libvmaf 3.2.0) on GPU or CPU"),
    )
});

/// The `version` written into report files: the libvmaf version whose numbers these are, and us.
const REPORT_VERSION: &str = concat!("3.2.0 (vmafgpu ", env!("CARGO_PKG_VERSION"), ")");

/// Geometry of the current scoring segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    width: u32,
    height: u32,
    format: gst_video::VideoFormat,
}

mod device;
mod negotiation;
use negotiation::{caps_summary, frame_duration};

impl Geometry {
    fn of(info: &gst_video::VideoInfo) -> Self {
        Geometry {
            width: info.width(),
            height: info.height(),
            format: info.format(),
        }
    }
}

/// Everything that exists while the element runs (READY -> PAUSED until PAUSED -> READY).
struct State {
    settings: Settings,
    /// The engine; `None` while an engine call is in flight (it is taken out of the state so
    /// that no lock is held during the call).
    scorer: Option<engine::Scorer>,
    backend_name: String,
    /// Whether a pair's whole work runs on a GPU (Scorer::computes_on_device): a live
    /// pipeline then waits for it after each push.
    on_device: bool,
    model_name: String,
    /// The model or a standalone metric reads chroma (VMAF v1's SpEED chroma): GRAY caps are
    /// refused when they arrive.
    needs_chroma: bool,
    /// Caps of each sink pad, updated when the pad's caps event is processed, i.e. in stream
    /// order with its buffers (the pads' sticky caps may already be ahead of their queues).
    ref_caps: Option<(gst::Caps, gst_video::VideoInfo)>,
    dist_caps: Option<(gst::Caps, gst_video::VideoInfo)>,
    geometry: Option<Geometry>,
    /// Index the next pair gets (counts every pair since start, across flushes and segments).
    next_index: u64,
    /// Global index of the engine's frame 0 of the current scoring segment.
    segment_base: u64,
    pending: VecDeque<FrameMeta>,
    unmatched_ref: u64,
    unmatched_dist: u64,
    warned_unmatched_ref: bool,
    warned_unmatched_dist: bool,
    warned_untimed: bool,
    /// `sync=index` pairs whose running times are at least half a frame apart.
    skewed_pairs: u64,
    warned_skew: bool,
    total: Span,
    window: Span,
    /// The report's rows, written to a spill file as frames are scored (every frame since
    /// start; None without a report, or once a row could not be written).
    report_rows: Option<ReportRows>,
    /// Why a row could not be written (the report cannot be complete: an error at EOS).
    report_rows_error: Option<String>,
    /// A pad reached EOS: the scorer was flushed and no pair can come until a flush.
    scoring_ended: bool,
    /// The pinned-memory allocator offered upstream, where the engine's route uses it
    /// (`Scorer::pinned_memory`: CUDA).
    pinned: Option<PinnedAllocator>,
    /// Frames in CUDA memory of the backend's context are read where they are
    /// (`Scorer::takes_device_planes`), and a pad's first frame mapped to system memory instead
    /// has been logged (ref, dist).
    device_route: bool,
    warned_download: [bool; 2],
    /// The report file, checked (its temporary created) at start; None once written.
    report: Option<report::ReportTarget>,
    eos_done: bool,
    started: Option<Instant>,
    scored_frames_time: Option<Instant>,
}

/// The domain of an error `aggregate()` posts.
#[derive(Clone, Copy, Debug)]
enum ErrorKind {
    /// A report that cannot be written.
    Write,
    /// Nothing was paired.
    NothingPaired,
}

/// What `aggregate()` hands out once the state lock is dropped.
#[derive(Default)]
struct Output {
    messages: Vec<gst::Structure>,
    warnings: Vec<String>,
    /// Error messages, posted after the other messages (the stream still ends with EOS).
    errors: Vec<(ErrorKind, String)>,
}

pub struct VmafGpu {
    ref_pad: gst_base::AggregatorPad,
    dist_pad: gst_base::AggregatorPad,
    settings: Mutex<Settings>,
    /// The settings are in use (from start() until stop()): every property is settable only in
    /// NULL or READY, so `set_property` refuses them meanwhile. Changed with `settings` locked.
    settings_in_use: AtomicBool,
    state: Mutex<Option<State>>,
    /// The CUDA backend's context wrapped for GStreamer (`device.rs`), made at the first
    /// CONTEXT query that asks for one; or why there is none.
    cuda: Mutex<Option<Result<std::sync::Arc<super::cuda::Context>, String>>>,
}

#[glib::object_subclass]
impl ObjectSubclass for VmafGpu {
    const NAME: &'static str = "GstVmafGpu";
    type Type = super::VmafGpu;
    type ParentType = gst_base::Aggregator;

    fn with_class(klass: &Self::Class) -> Self {
        let templ = klass.pad_template("ref_sink").expect("ref_sink template");
        let ref_pad = gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ).build();
        let templ = klass.pad_template("dist_sink").expect("dist_sink template");
        let dist_pad = gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ).build();
        VmafGpu {
            ref_pad,
            dist_pad,
            settings: Mutex::default(),
            settings_in_use: AtomicBool::new(false),
            state: Mutex::default(),
            cuda: Mutex::default(),
        }
    }
}

impl ObjectImpl for VmafGpu {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(settings::properties);
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let name = pspec.name();
        let mut settings = self.settings.lock().unwrap();
        // Every property is read once, at start (their specs say mutable_ready): a value set
        // while the element runs would not be in effect, so it is refused and reads back as
        // the value in effect.
        if self.settings_in_use.load(Ordering::Acquire) {
            let in_effect = settings.get(name);
            drop(settings);
            let msg = format!(
                "property '{name}' can only be set in the NULL or READY state: {value:?} \
                 ignored while the element runs, {in_effect:?} stays in effect"
            );
            gst::warning!(CAT, imp = self, "{msg}");
            gst::element_imp_warning!(self, gst::LibraryError::Settings, ("{}", msg));
            return;
        }
        settings.set(name, value);
        drop(settings);
        gst::info!(CAT, imp = self, "{name} set to {:?}", value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        self.settings.lock().unwrap().get(pspec.name())
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.add_pad(&self.ref_pad).expect("add ref_sink");
        obj.add_pad(&self.dist_pad).expect("add dist_sink");
    }
}

impl GstObjectImpl for VmafGpu {}

impl ElementImpl for VmafGpu {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static ELEMENT_METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "VMAF video quality (GPU/CPU, libvmaf 3.2.0 exact)",
                "Filter/Analyzer/Video",
                super::DESCRIPTION,
                "vmafgpu developers",
            )
        });
        Some(&*ELEMENT_METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let caps = device::template_caps();
            let sink = |name: &str| {
                gst::PadTemplate::with_gtype(
                    name,
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    &caps,
                    gst_base::AggregatorPad::static_type(),
                )
                .expect("sink template")
            };
            let src = gst::PadTemplate::with_gtype(
                "src",
                gst::PadDirection::Src,
                gst::PadPresence::Always,
                &caps,
                gst_base::AggregatorPad::static_type(),
            )
            .expect("src template");
            vec![sink("ref_sink"), sink("dist_sink"), src]
        });
        PAD_TEMPLATES.as_ref()
    }

    fn request_new_pad(
        &self,
        _templ: &gst::PadTemplate,
        _name: Option<&str>,
        _caps: Option<&gst::Caps>,
    ) -> Option<gst::Pad> {
        gst::error!(CAT, imp = self, "vmafgpu has no request pads");
        None
    }

    fn release_pad(&self, _pad: &gst::Pad) {
        gst::error!(CAT, imp = self, "vmafgpu has no request pads");
    }

    fn set_context(&self, context: &gst::Context) {
        self.context_set(context);
        self.parent_set_context(context)
    }
}

/// Whether `name` is a libvmaf built-in model this engine embeds.
fn is_builtin_model(name: &str) -> bool {
    crate::model::BUILTIN_MODELS.contains(&name)
}

impl VmafGpu {
    fn is_ref(&self, pad: &gst_base::AggregatorPad) -> bool {
        pad == &self.ref_pad
    }

    fn pad_name(&self, is_ref: bool) -> &'static str {
        if is_ref { "ref_sink" } else { "dist_sink" }
    }

    /// Running time and duration of a head buffer.
    fn head(
        pad: &gst_base::AggregatorPad,
        buf: &gst::Buffer,
        info: Option<&gst_video::VideoInfo>,
    ) -> Head {
        let running_time = buf.pts().and_then(|pts| {
            pad.segment()
                .downcast_ref::<gst::ClockTime>()
                .and_then(|seg| seg.to_running_time(pts))
        });
        Head {
            running_time,
            duration: buf.duration().or_else(|| frame_duration(info)),
            // GAP buffers (the aggregator's form of GAP events) carry no picture
            gap: buf.flags().contains(gst::BufferFlags::GAP) && buf.size() == 0,
        }
    }

    /// Timing of a distorted buffer in its pad's segment.
    fn timing(&self, buf: &gst::Buffer, info: Option<&gst_video::VideoInfo>) -> Timing {
        let seg = self.dist_pad.segment();
        let seg = seg.downcast_ref::<gst::ClockTime>();
        let pts = buf.pts();
        Timing {
            timestamp: pts,
            stream_time: pts.and_then(|p| seg.and_then(|s| s.to_stream_time(p))),
            running_time: pts.and_then(|p| seg.and_then(|s| s.to_running_time(p))),
            duration: buf.duration().or_else(|| frame_duration(info)),
        }
    }

    fn build_config(&self, s: &Settings) -> Result<engine::ScorerConfig, gst::ErrorMessage> {
        let model = if is_builtin_model(&s.model_filename) {
            engine::ModelSource::Builtin(s.model_filename.clone())
        } else if Path::new(&s.model_filename).is_file() {
            engine::ModelSource::Path(PathBuf::from(&s.model_filename))
        } else {
            return Err(gst::error_msg!(
                gst::LibraryError::Settings,
                (
                    "model-filename '{}' is neither a built-in model ({}) nor a readable file",
                    s.model_filename,
                    crate::model::BUILTIN_MODELS.join(", ")
                )
            ));
        };
        let model_params =
            crate::model::FeatureOverload::parse_list(&s.model_params).map_err(|e| {
                gst::error_msg!(
                    gst::LibraryError::Settings,
                    ("model-params '{}': {}", s.model_params, e)
                )
            })?;
        let feature_params =
            crate::model::FeatureOverload::parse_list(&s.feature_params).map_err(|e| {
                gst::error_msg!(
                    gst::LibraryError::Settings,
                    ("feature-params '{}': {}", s.feature_params, e)
                )
            })?;
        Ok(engine::ScorerConfig {
            model,
            disable_clip: s.disable_clip,
            enable_transform: s.enable_transform || s.phone_model,
            threads: s.threads as usize,
            subsample: s.subsample,
            backend: s.backend.into(),
            device_id: s.device_id,
            companions: s.companions,
            model_params,
            extras: s.extras,
            feature_params,
        })
    }

    /// Turn final engine scores into messages, pools and report rows (state locked).
    fn take_scores(&self, state: &mut State, frames: Vec<engine::FrameScores>, out: &mut Output) {
        for fs in frames {
            let index = state.segment_base + fs.index;
            while state.pending.front().is_some_and(|m| m.index < index) {
                let skipped = state.pending.pop_front().expect("front exists");
                gst::trace!(
                    CAT,
                    imp = self,
                    "frame {} not scored (subsample)",
                    skipped.index
                );
            }
            let meta = match state.pending.front() {
                Some(m) if m.index == index => state.pending.pop_front().expect("front exists"),
                _ => {
                    gst::warning!(CAT, imp = self, "no timing recorded for frame {index}");
                    FrameMeta {
                        index,
                        timing: Timing::default(),
                    }
                }
            };
            let score = fs.vmaf();
            gst::debug!(CAT, imp = self, "frame {index} final: vmaf {score}");
            state.total.add(meta, &fs.metrics);
            if state.settings.window > 0 {
                state.window.add(meta, &fs.metrics);
            }
            if let Some(rows) = state.report_rows.as_mut()
                && let Err(e) = rows.push(index, &fs.metrics)
            {
                // the report cannot be complete: say so now, and as an error at EOS
                let why = format!("{e} (writing the row of frame {index})");
                gst::warning!(CAT, imp = self, "report rows: {why}");
                out.warnings.push(format!(
                    "Cannot write results-filename '{}': {why}; the report will not be written",
                    state
                        .settings
                        .results_filename
                        .as_deref()
                        .unwrap_or_default()
                ));
                state.report_rows = None;
                state.report_rows_error = Some(why);
            }
            if state.settings.frame_message {
                out.messages.push(
                    FrameMessage {
                        index,
                        timing: meta.timing,
                        score,
                        metrics: fs.metrics,
                    }
                    .into(),
                );
            }
            if state.settings.window > 0
                && state.window.pool.frames() >= state.settings.window as u64
            {
                let w = std::mem::take(&mut state.window);
                let first = w.first.map_or(index, |m| m.index);
                gst::debug!(
                    CAT,
                    imp = self,
                    "window of {} frames from frame {first}",
                    w.pool.frames()
                );
                out.messages.push(
                    WindowMessage {
                        index: first,
                        timing: w.timing(),
                        scores: w.scores(state.settings.pool_method),
                        unmatched_ref: state.unmatched_ref,
                        unmatched_dist: state.unmatched_dist,
                    }
                    .into(),
                );
            }
        }
    }

    /// Run `f` on the scorer with no lock held; the scorer goes back into the state after.
    fn with_scorer<T>(
        &self,
        f: impl FnOnce(&mut engine::Scorer) -> T,
    ) -> Result<T, gst::FlowError> {
        let mut scorer = {
            let mut guard = self.state.lock().unwrap();
            let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
            state.scorer.take().ok_or_else(|| {
                gst::error!(CAT, imp = self, "scorer already in use");
                gst::FlowError::Error
            })?
        };
        let r = f(&mut scorer);
        if let Some(state) = self.state.lock().unwrap().as_mut() {
            state.scorer = Some(scorer);
        }
        Ok(r)
    }

    /// Flush the scorer: final scores of the frames still pending (state unlocked).
    ///
    /// A frame the backend refuses only now (`FrameRefused`: CUDA's range check read late) ends
    /// the stream as a refusal at a push does (`finish_before_refused`): the frames before it,
    /// the pooled message and the report are posted, then the error.
    fn finish_scorer(&self, why: &str, out: &mut Output) -> Result<(), gst::FlowError> {
        gst::debug!(CAT, imp = self, "finishing the scoring segment: {why}");
        let (r, refused) = self.with_scorer(|s| match s.finish() {
            // The clip was cut before the refused frame: the second call gives what is left.
            Err(e @ crate::Error::FrameRefused { .. }) => (s.finish(), Some(e)),
            r => (r, None),
        })?;
        // The engine's summary pools this clip; the pooled message pools every clip since
        // start (flushing seeks, size changes): `take_scores` feeds the same accumulators frame
        // by frame (pooling clip summaries again would not be libvmaf's sums).
        let (frames, _clip_summary) = match r {
            Ok(r) => r,
            Err(e) => {
                // What was final before the failure keeps its messages, the pooled message and
                // the report (the frames still in the engine are lost with it), then the error.
                gst::debug!(CAT, imp = self, "engine failed ({why}): {e}");
                if let Err(flow) = self.summary(out) {
                    gst::debug!(CAT, imp = self, "no summary before the error: {flow:?}");
                }
                self.post(std::mem::take(out));
                gst::element_imp_error!(
                    self,
                    gst::LibraryError::Failed,
                    ("VMAF engine failed: {e}")
                );
                return Err(gst::FlowError::Error);
            }
        };
        {
            let mut guard = self.state.lock().unwrap();
            let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
            self.take_scores(state, frames, out);
            state.segment_base = state.next_index;
        }
        if let Some(e) = refused {
            gst::debug!(
                CAT,
                imp = self,
                "refused frame ({why}): finishing the clip before it ({e})"
            );
            self.summary(out)?;
            self.post(std::mem::take(out));
            gst::element_imp_error!(
                self,
                gst::StreamError::Format,
                ("Cannot score this frame pair: {e}")
            );
            return Err(gst::FlowError::Error);
        }
        Ok(())
    }

    fn post(&self, out: Output) {
        for w in out.warnings {
            gst::warning!(CAT, imp = self, "{w}");
            gst::element_imp_warning!(self, gst::StreamError::Failed, ("{}", w));
        }
        let obj = self.obj();
        for s in out.messages {
            let msg = gst::message::Element::builder(s).src(&*obj).build();
            if obj.post_message(msg).is_err() {
                gst::debug!(CAT, imp = self, "no bus to post a message on");
            }
        }
        for (kind, e) in out.errors {
            gst::error!(CAT, imp = self, "{e}");
            match kind {
                ErrorKind::Write => {
                    gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e))
                }
                ErrorKind::NothingPaired => {
                    gst::element_imp_error!(self, gst::StreamError::Failed, ("{}", e))
                }
            }
        }
    }

    /// Push a distorted buffer out of `src` and advance the output position.
    fn push_dist(&self, buf: gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        if let Some(pts) = buf.pts() {
            let end = pts + buf.duration().unwrap_or(gst::ClockTime::ZERO);
            if self.obj().src_pad().segment().format() == gst::Format::Time {
                self.obj().set_position(end);
            }
        }
        gst::trace!(CAT, imp = self, "pushing distorted buffer {:?}", buf.pts());
        self.finish_buffer(buf)
    }

    /// Count an unmatched frame (state locked); warn once per pad.
    fn unmatched(
        &self,
        state: &mut State,
        is_ref: bool,
        why: Unpaired,
        rt: Option<gst::ClockTime>,
        out: &mut Output,
    ) {
        let (count, warned) = if is_ref {
            (&mut state.unmatched_ref, &mut state.warned_unmatched_ref)
        } else {
            (&mut state.unmatched_dist, &mut state.warned_unmatched_dist)
        };
        *count += 1;
        let what = match why {
            Unpaired::Passed => {
                "the other pad is already past it (frame dropped on the other side?)"
            }
            Unpaired::PartnerEos => "the other pad is at EOS",
            Unpaired::Timeout => "its partner did not arrive before the deadline",
            Unpaired::Gap => "the other pad has a GAP (a dropped frame) in its slot (sync=index)",
        };
        gst::debug!(
            CAT,
            imp = self,
            "unmatched {} frame at running time {} ({} so far): {what}",
            self.pad_name(is_ref),
            rt.display(),
            *count
        );
        if !*warned {
            *warned = true;
            out.warnings.push(format!(
                "{} frame at running time {} has no partner: {what}; unmatched frames are counted \
                 in the window and pooled messages (this warning is posted once per pad)",
                self.pad_name(is_ref),
                rt.display()
            ));
        }
    }

    /// Score a pair: checks, engine push (no lock held), messages, then the distorted buffer out.
    fn score_pair(
        &self,
        ref_buf: gst::Buffer,
        dist_buf: gst::Buffer,
        untimed: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut out = Output::default();
        let (ref_info, dist_info, segment_change, on_device) = {
            let mut guard = self.state.lock().unwrap();
            let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
            let (Some((_, ri)), Some((_, di))) = (&state.ref_caps, &state.dist_caps) else {
                drop(guard);
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("Received buffers before caps on both sink pads")
                );
                return Err(gst::FlowError::NotNegotiated);
            };
            let (ri, di) = (ri.clone(), di.clone());
            if Geometry::of(&ri) != Geometry::of(&di) {
                let msg = format!(
                    "ref_sink and dist_sink must have the same width, height and format: \
                     ref_sink has {}, dist_sink has {}",
                    caps_summary(&state.ref_caps),
                    caps_summary(&state.dist_caps)
                );
                drop(guard);
                self.finish_clip_before("caps of the two pads differ");
                gst::error!(CAT, imp = self, "{msg}");
                gst::element_imp_error!(self, gst::CoreError::Negotiation, ("{}", msg));
                return Err(gst::FlowError::NotNegotiated);
            }
            if untimed && !state.warned_untimed {
                state.warned_untimed = true;
                out.warnings.push(
                    "buffers without timestamps: pairing them in arrival order although sync=timestamp".into(),
                );
            }
            let geometry = Geometry::of(&ri);
            // a new size or format starts a fresh clip (the engine refuses to mix them);
            // finishing a clip that is already empty is harmless
            let change = state.geometry.is_some_and(|g| g != geometry);
            if state.geometry != Some(geometry) {
                gst::info!(
                    CAT,
                    imp = self,
                    "scoring segment at {}x{} {} from frame {}",
                    geometry.width,
                    geometry.height,
                    geometry.format.to_str(),
                    state.next_index
                );
            }
            state.geometry = Some(geometry);
            (
                ri,
                di,
                change,
                // Waiting pays off only when a pair's work is short (see below).
                state.on_device,
            )
        };
        if segment_change {
            self.finish_scorer("geometry change", &mut out)?;
            // the last frames of the clip that ended go out now, whatever this pair does
            self.post(std::mem::take(&mut out));
        }

        let timing = self.timing(&dist_buf, Some(&dist_info));
        {
            let mut guard = self.state.lock().unwrap();
            let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
            let index = state.next_index;
            state.next_index += 1;
            state.pending.push_back(FrameMeta { index, timing });
            state.started.get_or_insert_with(Instant::now);
            gst::debug!(
                CAT,
                imp = self,
                "pair {index}: running time {}",
                timing.running_time.display()
            );
        }

        // Each buffer mapped once; the engine reads the planes where they are or copies them,
        // as its backend needs.
        let frames = self
            .frame_of(&ref_buf, &ref_info, true)
            .and_then(|r| Ok((r, self.frame_of(&dist_buf, &dist_info, false)?)));
        let pushed = match frames {
            Ok((r, d)) => self.with_scorer(|s| s.push_frames(r, d))?,
            Err(e) => {
                self.finish_clip_before("a buffer that cannot be read");
                gst::element_imp_error!(self, gst::StreamError::Format, ("{}", e));
                return Err(gst::FlowError::Error);
            }
        };
        let frames = pushed.map_err(|e| {
            self.finish_after_push_error(&e);
            gst::element_imp_error!(
                self,
                gst::StreamError::Format,
                ("Cannot score this frame pair: {e}"),
                [
                    "ref_sink {}, dist_sink {}",
                    ref_info.format().to_str(),
                    dist_info.format().to_str()
                ]
            );
            gst::FlowError::Error
        })?;
        let frames = if on_device && self.obj().latency().is_some() {
            self.wait_live(frames)?
        } else {
            frames
        };
        {
            let mut guard = self.state.lock().unwrap();
            let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
            self.take_scores(state, frames, &mut out);
            state.scored_frames_time = Some(Instant::now());
        }
        self.post(out);
        self.push_dist(dist_buf)
    }

    /// Live, with a pair's whole work on a GPU (Scorer::computes_on_device): frame n-1 is
    /// final once pair n is computed (motion needs the next frame), about a millisecond
    /// after pair n arrived, and this thread has nothing else to do until the next pair:
    /// wait for it, so that its message goes out now instead of with the next pair (a frame
    /// period later). Not where part of the work is on the CPU (the CPU backend; HIP's
    /// companion metrics), whose work per pair is long: waiting would serialise the pairs.
    fn wait_live(
        &self,
        mut frames: Vec<engine::FrameScores>,
    ) -> Result<Vec<engine::FrameScores>, gst::FlowError> {
        match self.with_scorer(|s| s.poll(true))? {
            Ok(more) => {
                gst::debug!(
                    CAT,
                    imp = self,
                    "live: waited for the pair's GPU work, {} frame(s) final",
                    frames.len() + more.len()
                );
                frames.extend(more)
            }
            Err(e) => {
                self.finish_before_refused(&e);
                gst::element_imp_error!(
                    self,
                    gst::LibraryError::Failed,
                    ("Cannot score this frame pair: {e}")
                );
                return Err(gst::FlowError::Error);
            }
        }
        Ok(frames)
    }

    /// A frame refused for its samples (at its push, or after it on a backend that checks on
    /// the GPU): the frames before it keep their scores. Finish the clip there as at EOS (their
    /// frame messages, the pooled message, the report) before the error goes out.
    fn finish_before_refused(&self, e: &crate::Error) {
        if !matches!(
            e,
            crate::Error::SampleRange { .. } | crate::Error::FrameRefused { .. }
        ) {
            return;
        }
        self.finish_clip_before(&format!("refused frame ({e})"));
    }

    /// A push the engine failed (a refused frame, or a backend or allocation failure): finish
    /// the clip before it (`finish_before_refused`; for other errors where a pair came before
    /// this one) so that the frames scored keep their messages, the pooled message and the
    /// report.
    fn finish_after_push_error(&self, e: &crate::Error) {
        if matches!(
            e,
            crate::Error::SampleRange { .. } | crate::Error::FrameRefused { .. }
        ) {
            return self.finish_before_refused(e);
        }
        let earlier = {
            let guard = self.state.lock().unwrap();
            guard.as_ref().is_some_and(|s| s.next_index > 1)
        };
        if earlier {
            self.finish_clip_before(&format!("engine error ({e})"));
        }
    }

    /// An error after frames were paired: finish the clip before it as at EOS (the frames'
    /// messages, the pooled message, the report), so that nothing scored is lost; the caller
    /// posts the error after.
    fn finish_clip_before(&self, why: &str) {
        let paired = {
            let guard = self.state.lock().unwrap();
            guard.as_ref().is_some_and(|s| s.next_index > 0)
        };
        if !paired {
            return;
        }
        gst::debug!(CAT, imp = self, "{why}: finishing the clip before it");
        let mut out = Output::default();
        match self.end_of_stream(&mut out) {
            Ok(()) => self.post(out),
            Err(flow) => gst::debug!(CAT, imp = self, "no summary before the error: {flow:?}"),
        }
    }

    /// Everything at EOS: last frames, pooled message, report (messages posted by the caller).
    fn end_of_stream(&self, out: &mut Output) -> Result<(), gst::FlowError> {
        let needs_finish = {
            let guard = self.state.lock().unwrap();
            let state = guard.as_ref().ok_or(gst::FlowError::Flushing)?;
            !state.scoring_ended
        };
        if needs_finish {
            self.finish_scorer("EOS", out)?;
        }
        self.summary(out)
    }

    /// At EOS: no frame scored is a warning, nothing paired at all an error (posted after the
    /// pooled message; the stream still ends with EOS).
    fn check_scored(&self, out: &mut Output) {
        let guard = self.state.lock().unwrap();
        let Some(state) = guard.as_ref() else {
            return;
        };
        if state.total.pool.frames() > 0 {
            return;
        }
        let (pairs, ur, ud) = (state.next_index, state.unmatched_ref, state.unmatched_dist);
        drop(guard);
        if pairs == 0 {
            gst::debug!(CAT, imp = self, "EOS with nothing paired: error");
            out.errors.push((
                ErrorKind::NothingPaired,
                format!(
                    "No frame was scored: nothing was paired ({ur} reference and {ud} distorted \
                     frames unmatched; a stream that decodes to nothing, or timestamps that do \
                     not overlap?)"
                ),
            ));
        } else {
            gst::debug!(
                CAT,
                imp = self,
                "EOS with {pairs} pairs and no frame scored: warning"
            );
            out.warnings.push(format!(
                "No frame was scored although {pairs} pairs were formed ({ur} reference and {ud} \
                 distorted frames unmatched)"
            ));
        }
    }

    /// The pooled message and the report, once per stream (scoring ends).
    fn summary(&self, out: &mut Output) -> Result<(), gst::FlowError> {
        let mut guard = self.state.lock().unwrap();
        let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
        state.scoring_ended = true;
        if state.eos_done {
            return Ok(());
        }
        state.eos_done = true;
        let pooled = PooledMessage {
            timing: state.total.timing(),
            scores: state.total.scores(state.settings.pool_method),
            unmatched_ref: state.unmatched_ref,
            unmatched_dist: state.unmatched_dist,
            backend: state.backend_name.clone(),
            model: state.model_name.clone(),
        };
        gst::info!(
            CAT,
            imp = self,
            "EOS: {} frames scored, {} + {} unmatched, {} pairs with timestamps half a frame \
             or more apart (sync=index), score {:?}",
            pooled.scores.frames,
            pooled.unmatched_ref,
            pooled.unmatched_dist,
            state.skewed_pairs,
            pooled.scores.score()
        );
        out.messages.push(pooled.into());
        if let Some(path) = state.settings.results_filename.clone() {
            let fps = match (state.started, state.scored_frames_time) {
                (Some(a), Some(b)) if b > a => {
                    state.total.pool.frames() as f64 / (b - a).as_secs_f64()
                }
                _ => f64::NAN,
            };
            let pooled_stats = state.total.stats();
            let (width, height) = state.geometry.map_or((0, 0), |g| (g.width, g.height));
            let summary = Summary {
                version: REPORT_VERSION,
                fps,
                width,
                height,
                pooled: &pooled_stats,
            };
            let target = state.report.take();
            // out of the state while the file is written (no lock held), back after it
            let rows = state.report_rows.take();
            let rows_error = state.report_rows_error.clone();
            drop(guard);
            let (written, rows) = match (rows, rows_error) {
                (Some(mut rows), None) => {
                    // a second EOS (after a flushing seek) writes the report again
                    let target = match target {
                        Some(t) => Ok(t),
                        None => report::ReportTarget::prepare(Path::new(&path)).map(|(t, _)| t),
                    };
                    let written = target.and_then(|mut t| {
                        t.write_with(|w| rows.write_report(&summary, w)).map(|()| t)
                    });
                    (written, Some(rows))
                }
                (_, why) => (
                    Err(std::io::Error::other(why.unwrap_or_else(|| {
                        "the report's rows were not kept".into()
                    }))),
                    None,
                ),
            };
            if let Some(state) = self.state.lock().unwrap().as_mut() {
                state.report_rows = rows;
            }
            match written {
                Ok(t) => gst::info!(
                    CAT,
                    imp = self,
                    "wrote report {path} ({})",
                    t.path().display()
                ),
                Err(e) => out.errors.push((
                    ErrorKind::Write,
                    format!("Cannot write results-filename '{path}': {e}"),
                )),
            }
        }
        Ok(())
    }
}

impl VmafGpu {
    /// start() with the settings taken: engine, checks, report target, state.
    fn start_with(&self, settings: Settings) -> Result<(), gst::ErrorMessage> {
        let cfg = self.build_config(&settings)?;
        gst::debug!(CAT, imp = self, "starting with {cfg:?}");
        let scorer = engine::Scorer::new(cfg).map_err(|e| {
            gst::error!(CAT, imp = self, "cannot start the VMAF engine: {e}");
            // say what failed: the model, the backend, the engine's threads, or the settings
            match &e {
                crate::Error::Model(_) => gst::error_msg!(
                    gst::LibraryError::Settings,
                    ("Cannot load VMAF model '{}': {e}", settings.model_filename)
                ),
                crate::Error::Backend(_) => gst::error_msg!(
                    gst::LibraryError::Init,
                    (
                        "Cannot start backend={} (device-id {}): {e}",
                        format!("{:?}", settings.backend).to_lowercase(),
                        settings.device_id
                    )
                ),
                crate::Error::State(_) => gst::error_msg!(
                    gst::ResourceError::Failed,
                    (
                        "Cannot start the VMAF engine's worker threads (threads={}): {e}",
                        settings.threads
                    )
                ),
                _ => gst::error_msg!(
                    gst::LibraryError::Settings,
                    ("The VMAF engine refused these settings: {e}")
                ),
            }
        })?;
        if settings.conf_interval && !scorer.model().is_collection() {
            return Err(gst::error_msg!(
                gst::LibraryError::Settings,
                (
                    "conf-interval=true needs a bootstrap model collection, and model '{}' is not one \
                     (use e.g. model-filename=vmaf_b_v0.6.3)",
                    settings.model_filename
                )
            ));
        }
        let backend_name = scorer.backend_name().to_string();
        let on_device = scorer.computes_on_device();
        let model_name = scorer.model_name().to_string();
        let needs_chroma = scorer.needs_chroma();
        let scorer_takes_device = scorer.takes_device_planes();
        gst::debug!(
            CAT,
            imp = self,
            "input route: {}",
            if scorer.takes_host_planes() {
                "planes read where they are (zero-copy)"
            } else {
                "planes copied by the engine"
            }
        );
        let pinned = match scorer.pinned_memory() {
            Ok(m) => m.map(PinnedAllocator::new),
            Err(e) => {
                gst::warning!(CAT, imp = self, "no pinned buffer pool: {e}");
                None
            }
        };
        if settings.backend == Backend::Auto
            && backend_name == "cpu"
            && (cfg!(feature = "cuda") || cfg!(feature = "hip"))
        {
            let msg = "backend=auto: no GPU backend could be started; scoring on the CPU \
                       (set backend explicitly to see why)";
            gst::warning!(CAT, imp = self, "{msg}");
            gst::element_imp_warning!(self, gst::ResourceError::NotFound, ("{}", msg));
        }
        // The report's path is checked now, not at EOS: a missing or read-only directory, or a
        // directory as the target, fails the start (its temporary is created beside it now).
        let report_target = match &settings.results_filename {
            None => None,
            Some(path) => match report::ReportTarget::prepare(Path::new(path)) {
                Ok((target, stale)) => {
                    for p in stale {
                        gst::info!(CAT, imp = self, "removed stale temporary {}", p.display());
                    }
                    gst::debug!(CAT, imp = self, "report target {target:?}");
                    Some(target)
                }
                Err(e) => {
                    gst::error!(CAT, imp = self, "results-filename '{path}': {e}");
                    return Err(gst::error_msg!(
                        gst::ResourceError::OpenWrite,
                        ("Cannot write results-filename '{}': {}", path, e)
                    ));
                }
            },
        };
        let report_rows = match &report_target {
            None => None,
            Some(target) => {
                let format = settings.results_format.report_format();
                match ReportRows::new(format, &target.spill_dir()) {
                    Ok(rows) => Some(rows),
                    Err(e) => {
                        let path = settings.results_filename.as_deref().unwrap_or_default();
                        gst::error!(CAT, imp = self, "results-filename '{path}': {e}");
                        return Err(gst::error_msg!(
                            gst::ResourceError::OpenWrite,
                            ("Cannot write results-filename '{}': {}", path, e)
                        ));
                    }
                }
            }
        };
        *self.state.lock().unwrap() = Some(State {
            settings,
            scorer: Some(scorer),
            backend_name,
            on_device,
            model_name,
            needs_chroma,
            ref_caps: None,
            dist_caps: None,
            geometry: None,
            next_index: 0,
            segment_base: 0,
            pending: VecDeque::new(),
            unmatched_ref: 0,
            unmatched_dist: 0,
            warned_unmatched_ref: false,
            warned_unmatched_dist: false,
            warned_untimed: false,
            skewed_pairs: 0,
            warned_skew: false,
            total: Span::default(),
            window: Span::default(),
            report_rows,
            report_rows_error: None,
            scoring_ended: false,
            pinned,
            device_route: scorer_takes_device,
            warned_download: [false; 2],
            report: report_target,
            eos_done: false,
            started: None,
            scored_frames_time: None,
        });
        Ok(())
    }
}

impl AggregatorImpl for VmafGpu {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let settings = {
            let guard = self.settings.lock().unwrap();
            self.settings_in_use.store(true, Ordering::Release);
            guard.clone()
        };
        let r = self.start_with(settings);
        if r.is_err() {
            // the element stays in READY, where the properties can be set again
            let _guard = self.settings.lock().unwrap();
            self.settings_in_use.store(false, Ordering::Release);
        }
        r
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let state = self.state.lock().unwrap().take();
        drop(state);
        {
            let _guard = self.settings.lock().unwrap();
            self.settings_in_use.store(false, Ordering::Release);
        }
        gst::debug!(CAT, imp = self, "stopped");
        Ok(())
    }

    fn flush(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        gst::debug!(
            CAT,
            imp = self,
            "flush: scoring the pending frames, then resetting pairing and motion"
        );
        let mut out = Output::default();
        let ended = self
            .state
            .lock()
            .unwrap()
            .as_ref()
            .is_none_or(|s| s.scoring_ended);
        if !ended {
            self.finish_scorer("flush", &mut out)?;
        }
        if let Some(state) = self.state.lock().unwrap().as_mut() {
            state.pending.clear();
            state.window = Span::default();
            state.scoring_ended = false;
            state.eos_done = false;
            state.segment_base = state.next_index;
        }
        self.post(out);
        self.parent_flush()
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        if timeout {
            gst::debug!(
                CAT,
                imp = self,
                "aggregate after the live deadline passed (timeout)"
            );
        } else {
            gst::trace!(CAT, imp = self, "aggregate");
        }
        let ref_buf = self.ref_pad.peek_buffer();
        let dist_buf = self.dist_pad.peek_buffer();

        let ref_eos = self.ref_pad.is_eos();
        let dist_eos = self.dist_pad.is_eos();
        let mut out = Output::default();
        let decision = {
            let mut guard = self.state.lock().unwrap();
            let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
            let rh = ref_buf
                .as_ref()
                .map(|b| Self::head(&self.ref_pad, b, state.ref_caps.as_ref().map(|c| &c.1)));
            let dh = dist_buf
                .as_ref()
                .map(|b| Self::head(&self.dist_pad, b, state.dist_caps.as_ref().map(|c| &c.1)));
            let d = pairing::decide(state.settings.sync, rh, dh, ref_eos, dist_eos, timeout);
            gst::trace!(
                CAT,
                imp = self,
                "ref {rh:?} (eos {ref_eos}), dist {dh:?} (eos {dist_eos}): {d:?}"
            );
            match d {
                Decision::DropRef(why) => {
                    self.unmatched(state, true, why, rh.and_then(|h| h.running_time), &mut out)
                }
                Decision::PassDist(why) => {
                    self.unmatched(state, false, why, dh.and_then(|h| h.running_time), &mut out)
                }
                Decision::GapSlot { ref_gap, dist_gap } => {
                    if !ref_gap {
                        let rt = rh.and_then(|h| h.running_time);
                        self.unmatched(state, true, Unpaired::Gap, rt, &mut out)
                    }
                    if !dist_gap {
                        let rt = dh.and_then(|h| h.running_time);
                        self.unmatched(state, false, Unpaired::Gap, rt, &mut out)
                    }
                }
                Decision::Pair { .. } if state.settings.sync == Sync::Index => {
                    if let (Some(r), Some(d)) = (rh, dh)
                        && pairing::skewed(&r, &d)
                    {
                        state.skewed_pairs += 1;
                        gst::debug!(
                            CAT,
                            imp = self,
                            "pair {} by arrival: running times {} and {} are at least half a \
                             frame apart ({} such pairs)",
                            state.next_index,
                            r.running_time.display(),
                            d.running_time.display(),
                            state.skewed_pairs
                        );
                        if !state.warned_skew {
                            state.warned_skew = true;
                            out.warnings.push(format!(
                                "sync=index: pair {} has timestamps at least half a frame apart \
                                 (ref_sink running time {}, dist_sink {}): 1 pair so far; \
                                 the streams are not aligned, their frames may be paired with \
                                 the wrong partners (this warning is posted once; the EOS log \
                                 line has the count)",
                                state.next_index,
                                r.running_time.display(),
                                d.running_time.display()
                            ));
                        }
                    }
                }
                _ => {}
            }
            // once a pad is at EOS no pair can come: finish scoring now so that the last
            // frames' messages do not wait for the other pad's EOS
            let end_now = (ref_eos || dist_eos)
                && !state.scoring_ended
                && !matches!(
                    d,
                    Decision::Pair { .. } | Decision::Eos | Decision::GapSlot { .. }
                );
            if end_now {
                state.scoring_ended = true;
            }
            (d, end_now)
        };
        let (decision, end_now) = decision;
        if end_now {
            let eos = if ref_eos { "ref_sink" } else { "dist_sink" };
            self.finish_scorer(&format!("{eos} is at EOS"), &mut out)?;
        }

        match decision {
            Decision::Pair { untimed } => {
                self.post(out);
                let r = self.ref_pad.pop_buffer().expect("peeked");
                let d = self.dist_pad.pop_buffer().expect("peeked");
                self.score_pair(r, d, untimed)
            }
            Decision::DropRef(_) => {
                self.ref_pad.drop_buffer();
                self.post(out);
                Ok(gst::FlowSuccess::Ok)
            }
            Decision::GapSlot { ref_gap, dist_gap } => {
                gst::debug!(
                    CAT,
                    imp = self,
                    "sync=index: a GAP is its pad's frame of this slot (ref_sink {}, dist_sink \
                     {}): both heads popped, the distorted one passed on",
                    if ref_gap { "GAP" } else { "frame, unmatched" },
                    if dist_gap { "GAP" } else { "frame, unmatched" },
                );
                self.ref_pad.drop_buffer();
                let d = self.dist_pad.pop_buffer();
                self.post(out);
                match d {
                    Some(d) => self.push_dist(d),
                    None => Ok(gst::FlowSuccess::Ok),
                }
            }
            Decision::SkipGap { is_ref: true } => {
                gst::debug!(CAT, imp = self, "dropping reference GAP buffer");
                self.ref_pad.drop_buffer();
                self.post(out);
                Ok(gst::FlowSuccess::Ok)
            }
            Decision::SkipGap { is_ref: false } => {
                gst::debug!(CAT, imp = self, "passing distorted GAP buffer on");
                let d = self.dist_pad.pop_buffer();
                self.post(out);
                match d {
                    Some(d) => self.push_dist(d),
                    None => Ok(gst::FlowSuccess::Ok),
                }
            }
            Decision::PassDist(_) => {
                let d = self.dist_pad.pop_buffer().expect("peeked");
                self.post(out);
                self.push_dist(d)
            }
            Decision::NeedData => {
                self.post(out);
                gst::debug!(
                    CAT,
                    imp = self,
                    "need data: waiting for {}",
                    match (ref_buf.is_some(), dist_buf.is_some()) {
                        (true, false) => "a distorted frame",
                        (false, true) => "a reference frame",
                        _ => "frames",
                    }
                );
                Err(AGGREGATOR_FLOW_NEED_DATA)
            }
            Decision::Eos => {
                let r = self.end_of_stream(&mut out);
                if r.is_ok() {
                    self.check_scored(&mut out);
                }
                self.post(out);
                r?;
                gst::debug!(CAT, imp = self, "both sink pads at EOS: EOS");
                Err(gst::FlowError::Eos)
            }
        }
    }

    fn next_time(&self) -> Option<gst::ClockTime> {
        // Live: wait for a lone head frame's partner until its running time plus the latency,
        // then aggregate(timeout=true) counts it as unmatched. Nothing queued: no deadline.
        let r = self.ref_pad.peek_buffer();
        let d = self.dist_pad.peek_buffer();
        let lone = match (&r, &d) {
            (Some(b), None) => Some((&self.ref_pad, b)),
            (None, Some(b)) => Some((&self.dist_pad, b)),
            _ => None,
        }?;
        let (pad, buf) = lone;
        let t = Self::head(pad, buf, None).running_time;
        gst::trace!(CAT, imp = self, "next time {}", t.display());
        t
    }

    fn sink_event(&self, pad: &gst_base::AggregatorPad, event: gst::Event) -> bool {
        use gst::EventView;
        let is_ref = self.is_ref(pad);
        match event.view() {
            EventView::Caps(c) => {
                let caps = c.caps_owned();
                let info = match gst_video::VideoInfo::from_caps(&caps) {
                    Ok(i) => i,
                    Err(e) => {
                        gst::error!(CAT, obj = pad, "invalid caps {caps}: {e}");
                        return false;
                    }
                };
                gst::debug!(CAT, obj = pad, "caps {caps}");
                let latency = frame_duration(Some(&info));
                {
                    let mut guard = self.state.lock().unwrap();
                    let Some(state) = guard.as_mut() else {
                        return false;
                    };
                    if state.needs_chroma && info.format_info().is_gray() {
                        let msg = format!(
                            "{}: {} is luma only, and the model '{}' (or speed-chroma) needs \
                             the chroma planes (VMAF v1 uses SpEED chroma); give it YUV",
                            self.pad_name(is_ref),
                            info.format().to_str(),
                            state.settings.model_filename
                        );
                        drop(guard);
                        gst::error!(CAT, obj = pad, "{msg}");
                        gst::element_imp_error!(self, gst::CoreError::Negotiation, ("{}", msg));
                        return false;
                    }
                    let slot = if is_ref {
                        &mut state.ref_caps
                    } else {
                        &mut state.dist_caps
                    };
                    *slot = Some((caps.clone(), info));
                }
                if !is_ref {
                    self.obj().set_src_caps(&caps);
                    // one frame: the time a pair may spend being scored before the distorted
                    // frame goes on
                    if let Some(l) = latency {
                        self.obj().set_latency(l, None);
                    }
                }
                true
            }
            EventView::Segment(s) => {
                if !is_ref {
                    self.obj().update_segment(s.segment());
                }
                self.parent_sink_event(pad, event)
            }
            EventView::Eos(_) => {
                gst::debug!(CAT, obj = pad, "EOS on {}", self.pad_name(is_ref));
                self.parent_sink_event(pad, event)
            }
            _ => self.parent_sink_event(pad, event),
        }
    }

    /// Where the engine uses it (CUDA), offer upstream a pool of pinned buffers (see
    /// `input::propose_pinned`):
    /// frames a decoder writes into them are uploaded by DMA with no host copy.
    fn propose_allocation(
        &self,
        pad: &gst_base::AggregatorPad,
        decide_query: Option<&gst::query::Allocation>,
        query: &mut gst::query::Allocation,
    ) -> Result<(), gst::LoggableError> {
        self.propose_pinned(pad, query);
        self.parent_propose_allocation(pad, decide_query, query)
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        use gst::QueryViewMut;
        let is_ref = self.is_ref(pad);
        // Pinned buffers for the GPU, answered here: the aggregator's default refuses ALLOCATION
        // until its src pad is negotiated (after the first frames), and a decoder asks before
        // its first frame.
        if let (true, QueryViewMut::Allocation(q)) = (is_ref, query.view_mut())
            && self.propose_pinned(pad, q)
        {
            return true;
        }
        if let gst::QueryView::Context(_) = query.view() {
            return self.answer_context(query) || self.parent_sink_query(pad, query);
        }
        match query.view_mut() {
            QueryViewMut::Caps(q) => self.answer_caps(pad, is_ref, q),
            QueryViewMut::AcceptCaps(q) => {
                // the template only: a size or format mismatch with the other pad gets our
                // own error naming both caps instead of a bare not-negotiated
                let ok = q.caps().is_subset(&pad.pad_template_caps());
                q.set_result(ok);
                true
            }
            // The distorted frames pass through: downstream's pool first; where downstream
            // offers none, pinned buffers for the GPU (as on ref_sink).
            QueryViewMut::Allocation(q) if !is_ref => {
                let answered = self.obj().src_pad().peer_query(q);
                if q.allocation_pools().len() == 0 {
                    return self.propose_pinned(pad, q) || answered;
                }
                answered
            }
            QueryViewMut::Allocation(_)
            | QueryViewMut::Position(_)
            | QueryViewMut::Duration(_)
            | QueryViewMut::Uri(_)
                if !is_ref =>
            {
                self.obj().src_pad().peer_query(query)
            }
            _ => self.parent_sink_query(pad, query),
        }
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        use gst::QueryViewMut;
        if let gst::QueryView::Context(_) = query.view() {
            return self.answer_context(query) || self.parent_src_query(query);
        }
        match query.view_mut() {
            QueryViewMut::Position(_) | QueryViewMut::Duration(_) | QueryViewMut::Uri(_) => {
                self.dist_pad.peer_query(query)
            }
            QueryViewMut::Caps(q) => {
                let templ = self.obj().src_pad().pad_template_caps();
                let mut caps = self.dist_pad.peer_query_caps(Some(&templ));
                if let Some(filter) = q.filter() {
                    caps = filter.intersect_with_mode(&caps, gst::CapsIntersectMode::First);
                }
                q.set_result(&caps);
                true
            }
            _ => self.parent_src_query(query),
        }
    }

    fn negotiate(&self) -> bool {
        // src caps are the distorted pad's caps, set in sink_event
        true
    }
}
