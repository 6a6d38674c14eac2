/**
 * element-vmafgpu:
 * @short_description: VMAF between a reference and a distorted video, bit-exact with libvmaf 3.2.0
 *
 * `vmafgpu` scores a distorted video against its reference with Netflix's VMAF and posts the
 * scores on the bus: one `frame` message per frame, a `window` message every `window` frames
 * (live monitoring) and a `pooled` summary at EOS. With `results-filename` it also writes
 * libvmaf's JSON, XML or CSV report. The numbers equal libvmaf 3.2.0's bit for bit.
 *
 * Pads: `ref_sink` (the reference), `dist_sink` (the distorted video) and `src`, which passes the
 * distorted buffers through unchanged, so the element can sit inline before a sink or encoder.
 * Both sink pads must carry the same width, height and format (raw I420, YV12, NV12, Y42B,
 * Y444, GRAY8, I420_10LE, I420_12LE, I422_10LE, I422_12LE, Y444_10LE, Y444_12LE, Y444_16LE,
 * GRAY16_LE, P010_10LE or P016_LE); frames are read at their real bit depth.
 *
 * Pairing (`sync`): by default frames whose running times are within half a frame duration
 * are a pair; `sync=index` pairs in arrival order. A frame without a partner (dropped on the
 * other side, after the other pad's EOS, or in a live pipeline not arrived before the
 * aggregator's deadline) is counted in `unmatched-ref`/`unmatched-dist`, never paired with a
 * shifted partner; unmatched distorted frames still go out on `src`.
 *
 * The properties `model-filename`, `disable-clip`, `enable-transform`, `phone-model`,
 * `pool-method`, `threads`, `subsample`, `conf-interval`, `frame-message`, `results-filename`,
 * `results-format`, `psnr`, `ssim` and `ms-ssim` have the names and meanings of GStreamer's
 * `vmaf` element (gst-plugins-bad 1.28; `psnr` here also scores the chroma planes), and the
 * messages are a superset of its messages (`psnr-y`, `ssim`, `ms-ssim` included), so an
 * application written for `vmaf` keeps working. `ciede` and `psnr-hvs` add CIEDE2000 and
 * PSNR-HVS; every companion metric equals libvmaf 3.2.0's.
 *
 * ## Example launch lines
 * ```bash
 * gst-launch-1.0 -m \
 *   filesrc location=ref.yuv ! rawvideoparse width=1920 height=1080 format=i420 framerate=25/1 ! v.ref_sink \
 *   filesrc location=dist.yuv ! rawvideoparse width=1920 height=1080 format=i420 framerate=25/1 ! v.dist_sink \
 *   vmafgpu name=v results-filename=scores.json ! fakesink
 * ```
 *
 * ## Messages
 *
 * Element messages whose structure is named `VMAF`; see [`messages`] for the typed Rust API
 * ([`VmafMessage`], [`FrameMessage`], [`WindowMessage`], [`PooledMessage`]):
 *
 * ```ignore
 * VMAF, type=(string)frame, index=(int)26, timestamp=(guint64)1040000000,
 *   stream-time=(guint64)1040000000, running-time=(guint64)1040000000,
 *   duration=(guint64)40000000, score=(double)78.910751757633022,
 *   integer_adm2=(double)0.93..., integer_motion2=(double)2.1..., ..., vmaf=(double)78.91...;
 * ```
 *
 * Since: 0.1.0
 */
use gst::glib;
use gst::prelude::*;

mod cuda;
mod imp;
mod input;
pub mod messages;
mod pairing;
pub mod report;
mod settings;
mod span;

use crate::engine;

pub use messages::{
    ConfidenceInterval, FrameMessage, MESSAGE_NAME, MessageError, MetricStats, PooledMessage,
    PooledScores, Timing, VmafMessage, WindowMessage,
};

glib::wrapper! {
    /// The `vmafgpu` element. Create it with `gst::ElementFactory::make("vmafgpu")`.
    pub struct VmafGpu(ObjectSubclass<imp::VmafGpu>) @extends gst_base::Aggregator, gst::Element, gst::Object;
}

/// Register the `vmafgpu` element with `plugin`.
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "vmafgpu",
        gst::Rank::NONE,
        VmafGpu::static_type(),
    )
}

/// How frames are pooled into `score` and the plain metric fields of `window` and `pooled`
/// messages (the `pool-method` property; values and nicks as in the `vmaf` element and
/// libvmaf's `VmafPoolingMethod`).
#[derive(Debug, Eq, PartialEq, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafGpuPoolMethod")]
pub enum PoolMethod {
    #[enum_value(name = "Minimum value", nick = "min")]
    Min = 1,
    #[enum_value(name = "Maximum value", nick = "max")]
    Max = 2,
    #[default]
    #[enum_value(name = "Arithmetic mean", nick = "mean")]
    Mean = 3,
    #[enum_value(
        name = "Harmonic mean (libvmaf's: n / sum(1 / (x + 1)) - 1)",
        nick = "harmonic_mean"
    )]
    HarmonicMean = 4,
}

impl From<PoolMethod> for crate::model::PoolMethod {
    fn from(m: PoolMethod) -> Self {
        match m {
            PoolMethod::Min => crate::model::PoolMethod::Min,
            PoolMethod::Max => crate::model::PoolMethod::Max,
            PoolMethod::Mean => crate::model::PoolMethod::Mean,
            PoolMethod::HarmonicMean => crate::model::PoolMethod::HarmonicMean,
        }
    }
}

impl From<crate::model::PoolMethod> for PoolMethod {
    fn from(m: crate::model::PoolMethod) -> Self {
        match m {
            crate::model::PoolMethod::Min => PoolMethod::Min,
            crate::model::PoolMethod::Max => PoolMethod::Max,
            crate::model::PoolMethod::Mean => PoolMethod::Mean,
            crate::model::PoolMethod::HarmonicMean => PoolMethod::HarmonicMean,
        }
    }
}

/// Format of the `results-filename` report (values and nicks as in the `vmaf` element).
#[derive(Debug, Eq, PartialEq, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafGpuResultsFormat")]
pub enum ResultsFormat {
    #[enum_value(
        name = "JSON (accepted for compatibility with the vmaf element)",
        nick = "none"
    )]
    None = 0,
    #[enum_value(name = "libvmaf's XML report", nick = "xml")]
    Xml = 1,
    #[default]
    #[enum_value(name = "libvmaf's JSON report", nick = "json")]
    Json = 2,
    #[enum_value(name = "libvmaf's CSV report", nick = "csv")]
    Csv = 3,
}

impl ResultsFormat {
    pub(crate) fn report_format(self) -> report::Format {
        match self {
            ResultsFormat::None | ResultsFormat::Json => report::Format::Json,
            ResultsFormat::Xml => report::Format::Xml,
            ResultsFormat::Csv => report::Format::Csv,
        }
    }
}

/// How reference and distorted frames are paired (the `sync` property).
#[derive(Debug, Eq, PartialEq, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafGpuSync")]
pub enum Sync {
    #[default]
    #[enum_value(
        name = "Timestamp: frames whose running times are within half a frame duration are a pair",
        nick = "timestamp"
    )]
    Timestamp = 0,
    #[enum_value(name = "Index: frames pair in arrival order", nick = "index")]
    Index = 1,
}

/// Where the features are computed (the `backend` property).
#[derive(Debug, Eq, PartialEq, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafGpuBackend")]
#[non_exhaustive]
pub enum Backend {
    #[default]
    #[enum_value(
        name = "Auto: the first GPU backend that works, else the CPU (with a warning)",
        nick = "auto"
    )]
    Auto = 0,
    #[enum_value(name = "Cpu: the fixed-point reference on CPU threads", nick = "cpu")]
    Cpu = 1,
    #[enum_value(
        name = "Cuda: an NVIDIA GPU through the CUDA driver (device-id selects it); an error if the driver or the GPU is missing",
        nick = "cuda"
    )]
    Cuda = 2,
    #[enum_value(
        name = "Hip: an AMD GPU through ROCm (device-id selects it); an error if ROCm or the GPU is missing",
        nick = "hip"
    )]
    Hip = 3,
}

impl From<Backend> for engine::BackendKind {
    fn from(b: Backend) -> Self {
        match b {
            Backend::Auto => engine::BackendKind::Auto,
            Backend::Cpu => engine::BackendKind::Cpu,
            Backend::Cuda => engine::BackendKind::Cuda,
            Backend::Hip => engine::BackendKind::Hip,
        }
    }
}

/// The element description `gst-inspect-1.0 vmafgpu` shows: what it does and the message schema.
pub(crate) const DESCRIPTION: &str = "\
Computes VMAF between a reference (ref_sink) and a distorted (dist_sink) video, bit-exact with \
libvmaf 3.2.0, on a GPU or the CPU. src passes the distorted buffers through unchanged. Both sink \
pads must have the same width, height and format. Frames are paired by running time (sync=timestamp: \
within half a frame duration) or arrival order (sync=index); a frame without a partner is counted \
as unmatched, never paired with a shifted one.

Messages: element messages named \"VMAF\" (a superset of the vmaf element's):
  type=frame, one per scored frame, in frame order, posted when the next frame has been scored \
(motion needs it; the last one at EOS), if frame-message=true:
    index (gint; guint64 from 2^31), timestamp, stream-time, running-time, duration (guint64 ns of \
the distorted frame; GST_CLOCK_TIME_NONE if unknown), score (gdouble, VMAF), and one gdouble per \
metric under its libvmaf name: vmaf, integer_vif_scale0..3, integer_adm2, integer_adm_scale0..3, \
integer_aim, integer_adm3, integer_motion2, integer_motion3, VMAF_integer_feature_motion_sad_score; \
with a bootstrap model (conf-interval=true, model-filename=vmaf_b_v0.6.3) also vmaf_bagging, \
vmaf_stddev, vmaf_ci_p95_lo, vmaf_ci_p95_hi and the bootstrap scores vmaf_0001...; with the \
companion properties psnr_y, psnr_cb, psnr_cr, float_ssim, float_ms_ssim, ciede2000, psnr_hvs_y, \
psnr_hvs_cb, psnr_hvs_cr, psnr_hvs, and psnr_y, float_ssim, float_ms_ssim again under the vmaf \
element's names psnr-y, ssim, ms-ssim.
  type=window, every 'window' scored frames: index (first frame), timestamp, stream-time, \
running-time (first frame), duration (first frame start to last frame end), frames, pool-method, \
score (VMAF pooled with pool-method), unmatched-ref, unmatched-dist (guint64, since start), and for \
every metric M: M (pooled with pool-method), M-min, M-max, M-mean, M-harmonic-mean.
  type=pooled, once at EOS: the window fields without index, over every frame scored since the \
element started (across flushing seeks and size changes), plus backend (string: cpu, cuda, ...) \
and model (string); score is absent if no frame was scored.

results-filename writes libvmaf's JSON, XML or CSV report at EOS with 17 significant digits.";
