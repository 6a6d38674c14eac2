//! Typed bus messages posted by `vmafgpu`.
//!
//! Every message is an element message whose structure is named [`MESSAGE_NAME`] (`VMAF`), the
//! name GStreamer's own `vmaf` element (gst-plugins-bad 1.28) uses, and whose `type` field says
//! which of the three kinds it is:
//!
//! | `type`   | Rust type         | posted                                                   |
//! |----------|-------------------|----------------------------------------------------------|
//! | `frame`  | [`FrameMessage`]  | once per scored frame, in frame order, one frame late    |
//! | `window` | [`WindowMessage`] | every `window` scored frames (live monitoring)           |
//! | `pooled` | [`PooledMessage`] | once at EOS: the whole run, frame counts, backend        |
//!
//! Each type converts into a [`gst::Structure`] with `From` and back with `TryFrom`, so an
//! application decodes a message with `VmafMessage::try_from(structure)` instead of reading
//! fields by name. The field list of each kind is documented on its type and in the element's
//! description (`gst-inspect-1.0 vmafgpu`).
//!
//! Times are `guint64` nanoseconds with `GST_CLOCK_TIME_NONE` (`u64::MAX`) for "unknown", as in the
//! `vmaf` element. `index` is a `gint` as in the `vmaf` element while it fits (below 2^31, about a
//! year of 60 fps video) and a `guint64` after that; [`FrameMessage`] accepts both.

use std::fmt;

use gst::glib;

use super::PoolMethod;
use crate::model::PooledStats;

/// Name of the structure of every message `vmafgpu` posts.
pub const MESSAGE_NAME: &str = "VMAF";

/// Fields with a fixed meaning; every other `double` field of a frame message is a metric.
const RESERVED: &[&str] = &[
    "type",
    "index",
    "timestamp",
    "stream-time",
    "running-time",
    "duration",
    "score",
    "frames",
    "unmatched-ref",
    "unmatched-dist",
    "backend",
    "model",
    "pool-method",
];

/// The field names GStreamer's `vmaf` element gives three metrics, and their libvmaf names.
/// Frame messages carry both; window and pooled messages carry the alias with the
/// `pool-method` statistic next to the libvmaf-named fields.
pub const ALIASES: [(&str, &str); 3] = [
    ("psnr-y", "psnr_y"),
    ("ssim", "float_ssim"),
    ("ms-ssim", "float_ms_ssim"),
];

/// The libvmaf name of a `vmaf`-element field name, or the name itself.
fn unalias(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, n)| n)
}

/// The `vmaf`-element alias of a libvmaf metric name, if it has one.
fn alias_of(name: &str) -> Option<&'static str> {
    ALIASES.iter().find(|(_, n)| *n == name).map(|(a, _)| *a)
}

/// Suffixes of the per-metric statistics fields of `window` and `pooled` messages.
const STAT_SUFFIXES: [&str; 4] = ["-min", "-max", "-mean", "-harmonic-mean"];

/// Why a structure could not be decoded into a typed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageError {
    /// The structure is not named `VMAF`.
    WrongName(String),
    /// The `type` field is missing or not one this type decodes.
    WrongType(String),
    /// A required field is missing or has the wrong type.
    Field { field: String, problem: String },
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageError::WrongName(n) => {
                write!(f, "structure is named {n:?}, not {MESSAGE_NAME:?}")
            }
            MessageError::WrongType(t) => write!(f, "unexpected message type {t:?}"),
            MessageError::Field { field, problem } => write!(f, "field {field:?}: {problem}"),
        }
    }
}

impl std::error::Error for MessageError {}

fn field_err(field: &str, problem: impl fmt::Display) -> MessageError {
    MessageError::Field {
        field: field.to_string(),
        problem: problem.to_string(),
    }
}

/// Timing of a message: the times of the (first) frame it describes, as in the `vmaf` element.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// Buffer PTS of the distorted frame (field `timestamp`).
    pub timestamp: Option<gst::ClockTime>,
    /// Stream time of that PTS in the distorted pad's segment (field `stream-time`).
    pub stream_time: Option<gst::ClockTime>,
    /// Running time of that PTS in the distorted pad's segment (field `running-time`).
    pub running_time: Option<gst::ClockTime>,
    /// Duration covered: the frame's duration, or the span of a window or of the whole run
    /// (field `duration`).
    pub duration: Option<gst::ClockTime>,
}

fn time_to_u64(t: Option<gst::ClockTime>) -> u64 {
    t.map_or(u64::MAX, |t| t.nseconds())
}

fn u64_to_time(v: u64) -> Option<gst::ClockTime> {
    (v != u64::MAX).then(|| gst::ClockTime::from_nseconds(v))
}

impl Timing {
    fn write(&self, b: gst::structure::Builder) -> gst::structure::Builder {
        b.field("timestamp", time_to_u64(self.timestamp))
            .field("stream-time", time_to_u64(self.stream_time))
            .field("running-time", time_to_u64(self.running_time))
            .field("duration", time_to_u64(self.duration))
    }

    fn read(s: &gst::StructureRef) -> Result<Self, MessageError> {
        let t = |name: &str| -> Result<Option<gst::ClockTime>, MessageError> {
            s.get::<u64>(name)
                .map(u64_to_time)
                .map_err(|e| field_err(name, e))
        };
        Ok(Timing {
            timestamp: t("timestamp")?,
            stream_time: t("stream-time")?,
            running_time: t("running-time")?,
            duration: t("duration")?,
        })
    }
}

/// `index` is a `gint` (the `vmaf` element's type) while it fits, a `guint64` beyond.
fn index_value(index: u64) -> glib::SendValue {
    use glib::prelude::*;
    match i32::try_from(index) {
        Ok(i) => i.to_send_value(),
        Err(_) => index.to_send_value(),
    }
}

fn read_index(s: &gst::StructureRef) -> Result<u64, MessageError> {
    if let Ok(i) = s.get::<i32>("index") {
        return u64::try_from(i).map_err(|_| field_err("index", "negative"));
    }
    s.get::<u64>("index").map_err(|e| field_err("index", e))
}

fn read_u64(s: &gst::StructureRef, name: &str) -> Result<u64, MessageError> {
    s.get::<u64>(name).map_err(|e| field_err(name, e))
}

fn read_string(s: &gst::StructureRef, name: &str) -> Result<String, MessageError> {
    s.get::<String>(name).map_err(|e| field_err(name, e))
}

fn check_header(s: &gst::StructureRef, want: &str) -> Result<(), MessageError> {
    if s.name() != MESSAGE_NAME {
        return Err(MessageError::WrongName(s.name().to_string()));
    }
    let t = read_string(s, "type")?;
    if t != want {
        return Err(MessageError::WrongType(t));
    }
    Ok(())
}

/// One scored frame (`type=frame`).
///
/// Fields: `type` = `"frame"`, `index` (frame number from 0, counting every reference/distorted
/// pair the element scored or skipped by `subsample`), `timestamp`, `stream-time`,
/// `running-time`, `duration` (of the distorted frame), `score` (VMAF), then one `double` per
/// metric under its libvmaf name: `vmaf`, `integer_vif_scale0..3`, `integer_adm2`,
/// `integer_adm_scale0..3`, `integer_motion2`, ... and with a bootstrap model collection
/// (`conf-interval=true`) `vmaf_bagging`, `vmaf_stddev`, `vmaf_ci_p95_lo`, `vmaf_ci_p95_hi`
/// and the individual bootstrap scores `vmaf_0001`, ...
#[derive(Clone, Debug, PartialEq)]
pub struct FrameMessage {
    pub index: u64,
    pub timing: Timing,
    /// The VMAF score (field `score`; also present as the metric `vmaf`).
    pub score: f64,
    /// Every metric of this frame, libvmaf names, in the engine's order.
    pub metrics: Vec<(String, f64)>,
}

/// Confidence interval of a frame or pooled score from a bootstrap model collection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConfidenceInterval {
    /// Mean of the bootstrap models' predictions (`vmaf_bagging`).
    pub bagging: f64,
    /// Their standard deviation (`vmaf_stddev`).
    pub stddev: f64,
    /// Lower and upper bound of the 95% interval (`vmaf_ci_p95_lo`, `vmaf_ci_p95_hi`).
    pub lo: f64,
    pub hi: f64,
}

impl FrameMessage {
    /// A metric by its libvmaf name (or its `vmaf`-element field name: `psnr-y`, `ssim`,
    /// `ms-ssim`).
    pub fn get(&self, name: &str) -> Option<f64> {
        let name = unalias(name);
        self.metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    /// The confidence interval, present when the model is a bootstrap collection.
    pub fn confidence_interval(&self) -> Option<ConfidenceInterval> {
        Some(ConfidenceInterval {
            bagging: self.get("vmaf_bagging")?,
            stddev: self.get("vmaf_stddev")?,
            lo: self.get("vmaf_ci_p95_lo")?,
            hi: self.get("vmaf_ci_p95_hi")?,
        })
    }
}

impl From<FrameMessage> for gst::Structure {
    fn from(m: FrameMessage) -> Self {
        let mut b = gst::Structure::builder(MESSAGE_NAME)
            .field("type", "frame")
            .field("index", index_value(m.index));
        b = m.timing.write(b).field("score", m.score);
        for (name, v) in m.metrics {
            if RESERVED.contains(&name.as_str()) {
                continue;
            }
            let name = unalias(&name);
            if let Some(a) = alias_of(name) {
                b = b.field(a, v);
            }
            b = b.field(name, v);
        }
        b.build()
    }
}

impl TryFrom<&gst::StructureRef> for FrameMessage {
    type Error = MessageError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, MessageError> {
        check_header(s, "frame")?;
        let index = read_index(s)?;
        let timing = Timing::read(s)?;
        let score = s.get::<f64>("score").map_err(|e| field_err("score", e))?;
        // An alias field becomes its libvmaf name, unless that field is there too (ours carry
        // both; the `vmaf` element only the alias).
        let metrics = s
            .iter()
            .filter(|(name, _)| !RESERVED.contains(&name.as_str()))
            .filter(|(name, _)| {
                let n = unalias(name.as_str());
                n == name.as_str() || !s.has_field(n)
            })
            .filter_map(|(name, v)| {
                v.get::<f64>()
                    .ok()
                    .map(|v| (unalias(name.as_str()).to_string(), v))
            })
            .collect();
        Ok(FrameMessage {
            index,
            timing,
            score,
            metrics,
        })
    }
}

impl TryFrom<gst::Structure> for FrameMessage {
    type Error = MessageError;
    fn try_from(s: gst::Structure) -> Result<Self, MessageError> {
        FrameMessage::try_from(s.as_ref())
    }
}

/// min, max, mean and harmonic mean of one metric over a set of frames, as libvmaf pools
/// (`libvmaf/src/libvmaf.c: vmaf_feature_score_pooled`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricStats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub harmonic_mean: f64,
}

impl MetricStats {
    /// The statistic `method` selects.
    pub fn get(&self, method: PoolMethod) -> f64 {
        PooledStats::from(*self).get(method.into())
    }
}

/// The engine's pooled values are the message's statistics.
impl From<PooledStats> for MetricStats {
    fn from(s: PooledStats) -> Self {
        MetricStats {
            min: s.min,
            max: s.max,
            mean: s.mean,
            harmonic_mean: s.harmonic_mean,
        }
    }
}

impl From<MetricStats> for PooledStats {
    fn from(s: MetricStats) -> Self {
        PooledStats {
            min: s.min,
            max: s.max,
            mean: s.mean,
            harmonic_mean: s.harmonic_mean,
        }
    }
}

/// Pooled statistics of every metric over a set of frames.
#[derive(Clone, Debug, PartialEq)]
pub struct PooledScores {
    /// Frames pooled (field `frames`).
    pub frames: u64,
    /// The `pool-method` property: which statistic `score` and the plain metric fields carry.
    pub pool_method: PoolMethod,
    /// Statistics of every metric, libvmaf names, in the engine's order.
    pub metrics: Vec<(String, MetricStats)>,
}

impl PooledScores {
    /// Statistics of one metric.
    pub fn get(&self, name: &str) -> Option<&MetricStats> {
        self.metrics.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// VMAF pooled with `pool_method` (field `score`); `None` when no frame was scored.
    pub fn score(&self) -> Option<f64> {
        self.get("vmaf").map(|s| s.get(self.pool_method))
    }

    fn write(&self, mut b: gst::structure::Builder) -> gst::structure::Builder {
        if let Some(score) = self.score() {
            b = b.field("score", score);
        }
        b = b
            .field("frames", self.frames)
            .field("pool-method", pool_method_nick(self.pool_method));
        for (name, st) in &self.metrics {
            if RESERVED.contains(&name.as_str()) {
                continue;
            }
            if let Some(a) = alias_of(name) {
                b = b.field(a, st.get(self.pool_method));
            }
            b = b
                .field(name.as_str(), st.get(self.pool_method))
                .field(format!("{name}-min"), st.min)
                .field(format!("{name}-max"), st.max)
                .field(format!("{name}-mean"), st.mean)
                .field(format!("{name}-harmonic-mean"), st.harmonic_mean);
        }
        b
    }

    fn read(s: &gst::StructureRef) -> Result<Self, MessageError> {
        let frames = read_u64(s, "frames")?;
        let nick = read_string(s, "pool-method")?;
        let pool_method = pool_method_from_nick(&nick)
            .ok_or_else(|| field_err("pool-method", format!("unknown pool method {nick:?}")))?;
        let mut metrics = Vec::new();
        for name in s.fields() {
            let Some(base) = name.as_str().strip_suffix("-min") else {
                continue;
            };
            let get = |suffix: &str| -> Result<f64, MessageError> {
                let f = format!("{base}{suffix}");
                s.get::<f64>(f.as_str()).map_err(|e| field_err(&f, e))
            };
            metrics.push((
                base.to_string(),
                MetricStats {
                    min: get(STAT_SUFFIXES[0])?,
                    max: get(STAT_SUFFIXES[1])?,
                    mean: get(STAT_SUFFIXES[2])?,
                    harmonic_mean: get(STAT_SUFFIXES[3])?,
                },
            ));
        }
        Ok(PooledScores {
            frames,
            pool_method,
            metrics,
        })
    }
}

/// The `nick` of a pool method, as in the `pool-method` property and the `vmaf` element.
pub fn pool_method_nick(m: PoolMethod) -> &'static str {
    crate::model::PoolMethod::from(m).name()
}

fn pool_method_from_nick(s: &str) -> Option<PoolMethod> {
    Some(match s {
        "min" => PoolMethod::Min,
        "max" => PoolMethod::Max,
        "mean" => PoolMethod::Mean,
        "harmonic_mean" | "harmonic-mean" => PoolMethod::HarmonicMean,
        _ => return None,
    })
}

/// Statistics over the last `window` scored frames (`type=window`), for live monitoring.
///
/// Fields: `type` = `"window"`, `index` (first frame of the window), `timestamp`,
/// `stream-time`, `running-time` (of the first frame), `duration` (from the first frame's
/// start to the last frame's end), `score` (VMAF pooled with `pool-method`), `frames`,
/// `pool-method`, `unmatched-ref`, `unmatched-dist` (frames without a partner on each pad since
/// the element started), and for every metric `<name>` (pooled with `pool-method`),
/// `<name>-min`, `<name>-max`, `<name>-mean`, `<name>-harmonic-mean`.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowMessage {
    pub index: u64,
    pub timing: Timing,
    pub scores: PooledScores,
    pub unmatched_ref: u64,
    pub unmatched_dist: u64,
}

impl From<WindowMessage> for gst::Structure {
    fn from(m: WindowMessage) -> Self {
        let b = gst::Structure::builder(MESSAGE_NAME)
            .field("type", "window")
            .field("index", index_value(m.index));
        let b = m
            .timing
            .write(b)
            .field("unmatched-ref", m.unmatched_ref)
            .field("unmatched-dist", m.unmatched_dist);
        m.scores.write(b).build()
    }
}

impl TryFrom<&gst::StructureRef> for WindowMessage {
    type Error = MessageError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, MessageError> {
        check_header(s, "window")?;
        Ok(WindowMessage {
            index: read_index(s)?,
            timing: Timing::read(s)?,
            unmatched_ref: read_u64(s, "unmatched-ref")?,
            unmatched_dist: read_u64(s, "unmatched-dist")?,
            scores: PooledScores::read(s)?,
        })
    }
}

impl TryFrom<gst::Structure> for WindowMessage {
    type Error = MessageError;
    fn try_from(s: gst::Structure) -> Result<Self, MessageError> {
        WindowMessage::try_from(s.as_ref())
    }
}

/// The summary of the run, posted once at EOS (`type=pooled`).
///
/// Fields: `type` = `"pooled"`, `timestamp`, `stream-time`, `running-time` (of the first scored
/// frame), `duration` (first scored frame's start to last scored frame's end in running time,
/// so across segments: size changes, concatenations; summed over the runs a flushing seek
/// restarts), `score` (VMAF pooled with `pool-method`; absent when no frame was scored), `frames` (frames scored),
/// `pool-method`, `unmatched-ref`, `unmatched-dist` (frames that had no partner on the other
/// pad), `backend` (`cpu`, `cuda`, ...), `model`, and for every metric `<name>` (pooled with
/// `pool-method`), `<name>-min`, `<name>-max`, `<name>-mean`, `<name>-harmonic-mean`.
#[derive(Clone, Debug, PartialEq)]
pub struct PooledMessage {
    pub timing: Timing,
    pub scores: PooledScores,
    pub unmatched_ref: u64,
    pub unmatched_dist: u64,
    pub backend: String,
    pub model: String,
}

impl PooledMessage {
    /// The pooled confidence interval (each bound pooled over frames with `pool-method`, as the
    /// libvmaf report's `pooled_metrics`), present with a bootstrap model collection.
    pub fn confidence_interval(&self) -> Option<ConfidenceInterval> {
        let m = self.scores.pool_method;
        let g = |n: &str| self.scores.get(n).map(|s| s.get(m));
        Some(ConfidenceInterval {
            bagging: g("vmaf_bagging")?,
            stddev: g("vmaf_stddev")?,
            lo: g("vmaf_ci_p95_lo")?,
            hi: g("vmaf_ci_p95_hi")?,
        })
    }
}

impl From<PooledMessage> for gst::Structure {
    fn from(m: PooledMessage) -> Self {
        let b = gst::Structure::builder(MESSAGE_NAME).field("type", "pooled");
        let b = m
            .timing
            .write(b)
            .field("unmatched-ref", m.unmatched_ref)
            .field("unmatched-dist", m.unmatched_dist)
            .field("backend", m.backend)
            .field("model", m.model);
        m.scores.write(b).build()
    }
}

impl TryFrom<&gst::StructureRef> for PooledMessage {
    type Error = MessageError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, MessageError> {
        check_header(s, "pooled")?;
        Ok(PooledMessage {
            timing: Timing::read(s)?,
            unmatched_ref: read_u64(s, "unmatched-ref")?,
            unmatched_dist: read_u64(s, "unmatched-dist")?,
            backend: read_string(s, "backend")?,
            model: read_string(s, "model")?,
            scores: PooledScores::read(s)?,
        })
    }
}

impl TryFrom<gst::Structure> for PooledMessage {
    type Error = MessageError;
    fn try_from(s: gst::Structure) -> Result<Self, MessageError> {
        PooledMessage::try_from(s.as_ref())
    }
}

/// Any message `vmafgpu` posts.
#[derive(Clone, Debug, PartialEq)]
pub enum VmafMessage {
    Frame(FrameMessage),
    Window(WindowMessage),
    Pooled(PooledMessage),
}

impl VmafMessage {
    /// Decode a bus message: `None` if it is not a `VMAF` element message, `Some(Err)` if it is
    /// one that does not decode.
    pub fn from_message(msg: &gst::MessageRef) -> Option<Result<VmafMessage, MessageError>> {
        match msg.view() {
            gst::MessageView::Element(e) => {
                let s = e.structure()?;
                (s.name() == MESSAGE_NAME).then(|| VmafMessage::try_from(s))
            }
            _ => None,
        }
    }
}

impl From<VmafMessage> for gst::Structure {
    fn from(m: VmafMessage) -> Self {
        match m {
            VmafMessage::Frame(m) => m.into(),
            VmafMessage::Window(m) => m.into(),
            VmafMessage::Pooled(m) => m.into(),
        }
    }
}

impl TryFrom<&gst::StructureRef> for VmafMessage {
    type Error = MessageError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, MessageError> {
        if s.name() != MESSAGE_NAME {
            return Err(MessageError::WrongName(s.name().to_string()));
        }
        match read_string(s, "type")?.as_str() {
            "frame" => FrameMessage::try_from(s).map(VmafMessage::Frame),
            "window" => WindowMessage::try_from(s).map(VmafMessage::Window),
            "pooled" => PooledMessage::try_from(s).map(VmafMessage::Pooled),
            t => Err(MessageError::WrongType(t.to_string())),
        }
    }
}

impl TryFrom<gst::Structure> for VmafMessage {
    type Error = MessageError;
    fn try_from(s: gst::Structure) -> Result<Self, MessageError> {
        VmafMessage::try_from(s.as_ref())
    }
}

// The vmaf element's documented message carries 17-digit numbers.
#[cfg(test)]
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    fn init() {
        static INIT: std::sync::Once = std::sync::Once::new();
        INIT.call_once(|| gst::init().unwrap());
    }

    fn timing() -> Timing {
        Timing {
            timestamp: Some(gst::ClockTime::from_mseconds(40)),
            stream_time: Some(gst::ClockTime::from_mseconds(40)),
            running_time: None,
            duration: Some(gst::ClockTime::from_nseconds(33_366_667)),
        }
    }

    fn frame(index: u64) -> FrameMessage {
        FrameMessage {
            index,
            timing: timing(),
            score: 76.66890501970558,
            metrics: vec![
                ("integer_adm2".into(), 0.9345149030293196),
                ("integer_motion2".into(), 0.0),
                ("vmaf".into(), 76.66890501970558),
                ("vmaf_ci_p95_lo".into(), 70.1),
                ("vmaf_bagging".into(), 75.0),
                ("vmaf_stddev".into(), 2.5),
                ("vmaf_ci_p95_hi".into(), 80.0),
            ],
        }
    }

    fn pooled_scores() -> PooledScores {
        PooledScores {
            frames: 48,
            pool_method: PoolMethod::HarmonicMean,
            metrics: vec![
                (
                    "integer_vif_scale0".into(),
                    MetricStats {
                        min: 0.1,
                        max: 0.9,
                        mean: 0.5,
                        harmonic_mean: 0.45,
                    },
                ),
                (
                    "vmaf".into(),
                    MetricStats {
                        min: 20.0,
                        max: 99.5,
                        mean: 70.25,
                        harmonic_mean: 65.125,
                    },
                ),
            ],
        }
    }

    #[test]
    fn frame_round_trip() {
        init();
        for index in [0u64, 26, i32::MAX as u64, i32::MAX as u64 + 1, u64::MAX - 1] {
            let m = frame(index);
            let s: gst::Structure = m.clone().into();
            assert_eq!(s.name(), "VMAF");
            assert_eq!(s.get::<&str>("type").unwrap(), "frame");
            assert_eq!(s.get::<f64>("score").unwrap(), m.score);
            assert_eq!(s.get::<u64>("running-time").unwrap(), u64::MAX);
            // compatibility with the vmaf element: index is a gint while it fits
            if index <= i32::MAX as u64 {
                assert_eq!(s.get::<i32>("index").unwrap() as u64, index);
            } else {
                assert_eq!(s.get::<u64>("index").unwrap(), index);
            }
            let back = FrameMessage::try_from(s.clone()).unwrap();
            assert_eq!(back, m);
            assert_eq!(VmafMessage::try_from(s).unwrap(), VmafMessage::Frame(m));
        }
    }

    #[test]
    fn frame_confidence_interval() {
        let ci = frame(0).confidence_interval().unwrap();
        assert_eq!(
            (ci.bagging, ci.stddev, ci.lo, ci.hi),
            (75.0, 2.5, 70.1, 80.0)
        );
        let mut plain = frame(0);
        plain.metrics.retain(|(n, _)| !n.starts_with("vmaf_"));
        assert_eq!(plain.confidence_interval(), None);
    }

    #[test]
    fn frame_parses_the_vmaf_element_message() {
        init();
        // the structure documented by GStreamer's vmaf element
        let s: gst::Structure =
            "VMAF, timestamp=(guint64)1234567890, stream-time=(guint64)1234567890, \
             running-time=(guint64)1234567890, duration=(guint64)40000000, \
             score=(double)78.910751757633022, index=(int)26, type=(string)frame, \
             ms-ssim=(double)0.96676034472760064, ssim=(double)0.8706783652305603, \
             psnr-y=(double)30.758853484390933;"
                .parse()
                .unwrap();
        let m = FrameMessage::try_from(s).unwrap();
        assert_eq!(m.index, 26);
        assert_eq!(m.score, 78.910751757633022);
        assert_eq!(m.timing.duration, Some(gst::ClockTime::from_mseconds(40)));
        assert_eq!(m.get("psnr-y"), Some(30.758853484390933));
        assert_eq!(m.metrics.len(), 3);
    }

    #[test]
    fn companion_metrics_carry_the_vmaf_element_aliases() {
        init();
        let mut m = frame(7);
        m.metrics.insert(0, ("psnr_y".into(), 31.25));
        m.metrics.push(("float_ssim".into(), 0.875));
        m.metrics.push(("float_ms_ssim".into(), 0.9375));
        m.metrics.push(("ciede2000".into(), 33.5));
        let s: gst::Structure = m.clone().into();
        for (alias, name) in ALIASES {
            assert_eq!(
                s.get::<f64>(alias).unwrap(),
                s.get::<f64>(name).unwrap(),
                "{alias}"
            );
        }
        assert_eq!(s.get::<f64>("psnr-y").unwrap(), 31.25);
        assert!(
            !s.has_field("ciede"),
            "only the three vmaf-element names get an alias"
        );
        let back = FrameMessage::try_from(s).unwrap();
        assert_eq!(back, m, "aliases are not read back as extra metrics");
        assert_eq!(back.get("ms-ssim"), Some(0.9375));

        let mut p = pooled_scores();
        let stats = MetricStats {
            min: 30.0,
            max: 40.0,
            mean: 35.0,
            harmonic_mean: 34.0,
        };
        p.metrics.push(("psnr_y".into(), stats));
        p.pool_method = PoolMethod::Min;
        let s = p.write(gst::Structure::builder(MESSAGE_NAME)).build();
        assert_eq!(s.get::<f64>("psnr-y").unwrap(), 30.0);
        assert_eq!(PooledScores::read(&s).unwrap(), p);
    }

    #[test]
    fn window_round_trip() {
        init();
        let m = WindowMessage {
            index: 300,
            timing: timing(),
            scores: pooled_scores(),
            unmatched_ref: 2,
            unmatched_dist: 0,
        };
        let s: gst::Structure = m.clone().into();
        assert_eq!(s.get::<&str>("type").unwrap(), "window");
        assert_eq!(s.get::<f64>("score").unwrap(), 65.125);
        assert_eq!(s.get::<f64>("vmaf-max").unwrap(), 99.5);
        assert_eq!(s.get::<f64>("integer_vif_scale0").unwrap(), 0.45);
        assert_eq!(s.get::<&str>("pool-method").unwrap(), "harmonic_mean");
        assert_eq!(WindowMessage::try_from(s.clone()).unwrap(), m);
        assert_eq!(VmafMessage::try_from(s).unwrap(), VmafMessage::Window(m));
    }

    #[test]
    fn pooled_round_trip() {
        init();
        let m = PooledMessage {
            timing: Timing::default(),
            scores: pooled_scores(),
            unmatched_ref: 1,
            unmatched_dist: 3,
            backend: "cpu".into(),
            model: "vmaf_v0.6.1".into(),
        };
        let s: gst::Structure = m.clone().into();
        assert_eq!(s.get::<&str>("type").unwrap(), "pooled");
        assert!(!s.has_field("index"));
        assert_eq!(s.get::<u64>("frames").unwrap(), 48);
        assert_eq!(s.get::<u64>("unmatched-dist").unwrap(), 3);
        assert_eq!(s.get::<&str>("backend").unwrap(), "cpu");
        assert_eq!(PooledMessage::try_from(s.clone()).unwrap(), m);
        assert_eq!(VmafMessage::try_from(s).unwrap(), VmafMessage::Pooled(m));
    }

    #[test]
    fn pooled_without_frames_has_no_score() {
        init();
        let m = PooledMessage {
            timing: Timing::default(),
            scores: PooledScores {
                frames: 0,
                pool_method: PoolMethod::Mean,
                metrics: vec![],
            },
            unmatched_ref: 5,
            unmatched_dist: 0,
            backend: "cpu".into(),
            model: "vmaf_v0.6.1".into(),
        };
        let s: gst::Structure = m.clone().into();
        assert!(!s.has_field("score"));
        let back = PooledMessage::try_from(s).unwrap();
        assert_eq!(back.scores.score(), None);
        assert_eq!(back, m);
    }

    #[test]
    fn wrong_structures_are_refused() {
        init();
        let s = gst::Structure::builder("videocompare").build();
        assert!(matches!(
            VmafMessage::try_from(s),
            Err(MessageError::WrongName(_))
        ));
        let s = gst::Structure::builder("VMAF")
            .field("type", "bogus")
            .build();
        assert!(matches!(
            VmafMessage::try_from(s),
            Err(MessageError::WrongType(_))
        ));
        let s: gst::Structure = frame(1).into();
        assert!(matches!(
            PooledMessage::try_from(s),
            Err(MessageError::WrongType(_))
        ));
        let mut s: gst::Structure = frame(1).into();
        s.remove_field("score");
        assert!(matches!(
            FrameMessage::try_from(s),
            Err(MessageError::Field { .. })
        ));
    }
}
