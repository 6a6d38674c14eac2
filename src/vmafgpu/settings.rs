//! The element's settings: its properties, their defaults, and reading and writing them.

use gst::glib;
use gst::prelude::*;

use super::{Backend, PoolMethod, ResultsFormat, Sync};
use crate::engine;

pub(super) const DEFAULT_MODEL_FILENAME: &str = "vmaf_v0.6.1";
pub(super) const DEFAULT_DISABLE_CLIP: bool = false;
pub(super) const DEFAULT_ENABLE_TRANSFORM: bool = false;
pub(super) const DEFAULT_PHONE_MODEL: bool = false;
pub(super) const DEFAULT_THREADS: u32 = 0;
pub(super) const DEFAULT_SUBSAMPLE: u32 = 1;
pub(super) const DEFAULT_CONF_INTERVAL: bool = false;
pub(super) const DEFAULT_FRAME_MESSAGE: bool = true;
pub(super) const DEFAULT_DEVICE_ID: u32 = 0;
pub(super) const DEFAULT_WINDOW: u32 = 0;
pub(super) const DEFAULT_COMPANION: bool = false;

#[derive(Clone, Debug)]
pub(super) struct Settings {
    pub(super) model_filename: String,
    pub(super) disable_clip: bool,
    pub(super) enable_transform: bool,
    pub(super) phone_model: bool,
    pub(super) pool_method: PoolMethod,
    pub(super) threads: u32,
    pub(super) subsample: u32,
    pub(super) conf_interval: bool,
    pub(super) frame_message: bool,
    pub(super) results_filename: Option<String>,
    pub(super) results_format: ResultsFormat,
    pub(super) backend: Backend,
    pub(super) device_id: u32,
    pub(super) sync: Sync,
    pub(super) window: u32,
    pub(super) companions: engine::Companions,
    /// libvmaf's model feature overloads, `cambi.enc_bitdepth=8:...`.
    pub(super) model_params: String,
    pub(super) extras: engine::Extras,
    /// Options of the standalone CAMBI/SpEED metrics, `cambi.enc_bitdepth=8:...`.
    pub(super) feature_params: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model_filename: DEFAULT_MODEL_FILENAME.into(),
            disable_clip: DEFAULT_DISABLE_CLIP,
            enable_transform: DEFAULT_ENABLE_TRANSFORM,
            phone_model: DEFAULT_PHONE_MODEL,
            pool_method: PoolMethod::default(),
            threads: DEFAULT_THREADS,
            subsample: DEFAULT_SUBSAMPLE,
            conf_interval: DEFAULT_CONF_INTERVAL,
            frame_message: DEFAULT_FRAME_MESSAGE,
            results_filename: None,
            results_format: ResultsFormat::default(),
            backend: Backend::default(),
            device_id: DEFAULT_DEVICE_ID,
            sync: Sync::default(),
            companions: engine::Companions::default(),
            window: DEFAULT_WINDOW,
            model_params: String::new(),
            extras: engine::Extras::default(),
            feature_params: String::new(),
        }
    }
}

/// The element's properties (names, nicks, blurbs, ranges and defaults).
pub(super) fn properties() -> Vec<glib::ParamSpec> {
    vec![
        glib::ParamSpecString::builder("model-filename")
            .nick("Model")
            .blurb(
                "VMAF model: a built-in model name (vmaf_v0.6.1, vmaf_v0.6.1neg, \
                 vmaf_4k_v0.6.1, vmaf_b_v0.6.3) or the path of a libvmaf model JSON file; \
                 built-in names are tried first",
            )
            .default_value(Some(DEFAULT_MODEL_FILENAME))
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("disable-clip")
            .nick("Disable clip")
            .blurb("Do not clip the score to the model's range (libvmaf VMAF_MODEL_FLAG_DISABLE_CLIP)")
            .default_value(DEFAULT_DISABLE_CLIP)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("enable-transform")
            .nick("Enable transform")
            .blurb(
                "Apply the model's score_transform (libvmaf VMAF_MODEL_FLAG_ENABLE_TRANSFORM): \
                 for vmaf_v0.6.1 and vmaf_v0.6.1neg the phone-viewing polynomial \
                 p0 + p1*x + p2*x^2, never below the plain score; no effect on models \
                 without a transform (vmaf_4k_v0.6.1)",
            )
            .default_value(DEFAULT_ENABLE_TRANSFORM)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("phone-model")
            .nick("Phone model")
            .blurb(
                "Score for a phone screen: libvmaf's phone model is vmaf_v0.6.1 with its \
                 score transform enabled, so this is the same as enable-transform=true \
                 (as in the vmaf element)",
            )
            .default_value(DEFAULT_PHONE_MODEL)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("pool-method", PoolMethod::default())
            .nick("Pool method")
            .blurb(
                "Statistic that the 'score' field and the plain metric fields of window and \
                 pooled messages carry (all four are always in the <metric>-min/-max/-mean/\
                 -harmonic-mean fields)",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("threads")
            .nick("Threads")
            .blurb(
                "CPU worker threads of the cpu backend (0 = one per core, at most 256); \
                 scores do not depend on it",
            )
            .maximum(engine::MAX_THREADS as u32)
            .default_value(DEFAULT_THREADS)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("subsample")
            .nick("Subsample")
            .blurb(
                "Score one frame in N (frames 0, N, 2N, ...), as libvmaf --subsample; \
                 motion still uses every frame",
            )
            .minimum(1)
            .maximum(128)
            .default_value(DEFAULT_SUBSAMPLE)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("conf-interval")
            .nick("Confidence interval")
            .blurb(
                "Require a bootstrap model collection (e.g. model-filename=vmaf_b_v0.6.3) \
                 and put its confidence interval into the messages: vmaf_bagging, \
                 vmaf_stddev, vmaf_ci_p95_lo, vmaf_ci_p95_hi",
            )
            .default_value(DEFAULT_CONF_INTERVAL)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("frame-message")
            .nick("Frame messages")
            .blurb("Post a 'frame' message for every scored frame (one frame late: motion needs the next frame)")
            .default_value(DEFAULT_FRAME_MESSAGE)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("results-filename")
            .nick("Results file")
            .blurb(
                "Write libvmaf's report (format: results-format) to this file at EOS, \
                 through a temporary file beside it (created at start: an unwritable path \
                 fails the start) renamed into place, symbolic links followed; FIFOs and \
                 devices (/dev/stdout) are written directly; numbers have 17 significant \
                 digits (NULL = no report)",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("results-format", ResultsFormat::default())
            .nick("Results format")
            .blurb("Layout of the results-filename report: libvmaf's json, xml or csv")
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("backend", Backend::default())
            .nick("Backend")
            .blurb(
                "Where the features are computed; every backend gives the same numbers. \
                 auto falls back to the CPU with a warning; an explicit GPU backend that \
                 cannot start is an error",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("device-id")
            .nick("Device")
            .blurb("GPU index for GPU backends")
            .default_value(DEFAULT_DEVICE_ID)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("sync", Sync::default())
            .nick("Sync")
            .blurb(
                "How frames are paired: timestamp = running times within half a frame \
                 duration; index = arrival order. Frames without a partner are counted, \
                 never paired with a shifted one",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("window")
            .nick("Window")
            .blurb("Post a 'window' message pooling every N scored frames (0 = no window messages)")
            .default_value(DEFAULT_WINDOW)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("psnr")
            .nick("PSNR")
            .blurb(
                "Also compute PSNR (libvmaf psnr): metrics psnr_y, psnr_cb, psnr_cr \
                 (luma only for GRAY input); field psnr-y as in the vmaf element",
            )
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("ssim")
            .nick("SSIM")
            .blurb("Also compute SSIM (libvmaf float_ssim); field ssim as in the vmaf element")
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("ms-ssim")
            .nick("MS-SSIM")
            .blurb(
                "Also compute MS-SSIM (libvmaf float_ms_ssim); field ms-ssim as in the \
                 vmaf element. Like libvmaf, refused (an error) below 176x176",
            )
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("ciede")
            .nick("CIEDE2000")
            .blurb("Also compute CIEDE2000 (libvmaf ciede): metric ciede2000; needs chroma")
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("psnr-hvs")
            .nick("PSNR-HVS")
            .blurb(
                "Also compute PSNR-HVS (libvmaf psnr_hvs): metrics psnr_hvs_y, psnr_hvs_cb, \
                 psnr_hvs_cr, psnr_hvs; needs chroma and at most 12 bits",
            )
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("model-params")
            .nick("Model parameters")
            .blurb(
                "libvmaf's model feature overloads, as after version=... in vmaf -m: \
                 <feature>.<option>=<value> separated by ':', e.g. \
                 cambi.enc_width=1280:cambi.enc_height=720:cambi.enc_bitdepth=8 \
                 (VMAF v1 measured at 10 bits for an 8-bit encode: cambi.enc_bitdepth=8)",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("cambi")
            .nick("CAMBI")
            .blurb(
                "Also compute CAMBI with libvmaf's default options (libvmaf cambi, banding \
                 of the distorted picture): metric cambi; frames of at least 216 pixels \
                 in one dimension",
            )
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("speed-chroma")
            .nick("SpEED chroma")
            .blurb(
                "Also compute SpEED chroma with libvmaf's default options (libvmaf \
                 speed_chroma): metrics speed_chroma_u, speed_chroma_v, speed_chroma_uv; \
                 needs chroma",
            )
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("speed-temporal")
            .nick("SpEED temporal")
            .blurb(
                "Also compute SpEED temporal with libvmaf's default options (libvmaf \
                 speed_temporal): metric speed_temporal",
            )
            .default_value(DEFAULT_COMPANION)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("feature-params")
            .nick("Feature parameters")
            .blurb(
                "Options of the standalone cambi, speed-chroma and speed-temporal metrics \
                 (libvmaf's vmaf --feature cambi=enc_bitdepth=8), as \
                 <feature>.<option>=<value> separated by ':', e.g. \
                 cambi.enc_bitdepth=8:speed_chroma.speed_kernelscale=2; the metrics are \
                 then reported under libvmaf's names with the option suffix (cambi_encbd_8); \
                 each named feature's property must be on",
            )
            .mutable_ready()
            .build(),
    ]
}

impl Settings {
    /// Set property `name` (type checked by GObject).
    pub(super) fn set(&mut self, name: &str, value: &glib::Value) {
        match name {
            "model-filename" => {
                self.model_filename = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .unwrap_or_else(|| DEFAULT_MODEL_FILENAME.into())
            }
            "disable-clip" => self.disable_clip = value.get().expect("type checked upstream"),
            "enable-transform" => {
                self.enable_transform = value.get().expect("type checked upstream")
            }
            "phone-model" => self.phone_model = value.get().expect("type checked upstream"),
            "pool-method" => self.pool_method = value.get().expect("type checked upstream"),
            "threads" => self.threads = value.get().expect("type checked upstream"),
            "subsample" => self.subsample = value.get().expect("type checked upstream"),
            "conf-interval" => self.conf_interval = value.get().expect("type checked upstream"),
            "frame-message" => self.frame_message = value.get().expect("type checked upstream"),
            "results-filename" => {
                self.results_filename = value.get().expect("type checked upstream")
            }
            "results-format" => self.results_format = value.get().expect("type checked upstream"),
            "backend" => self.backend = value.get().expect("type checked upstream"),
            "device-id" => self.device_id = value.get().expect("type checked upstream"),
            "sync" => self.sync = value.get().expect("type checked upstream"),
            "window" => self.window = value.get().expect("type checked upstream"),
            "psnr" => self.companions.psnr = value.get().expect("type checked upstream"),
            "ssim" => self.companions.ssim = value.get().expect("type checked upstream"),
            "ms-ssim" => self.companions.ms_ssim = value.get().expect("type checked upstream"),
            "ciede" => self.companions.ciede = value.get().expect("type checked upstream"),
            "psnr-hvs" => self.companions.psnr_hvs = value.get().expect("type checked upstream"),
            "model-params" => {
                self.model_params = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .unwrap_or_default()
            }
            "cambi" => self.extras.cambi = value.get().expect("type checked upstream"),
            "speed-chroma" => {
                self.extras.speed_chroma = value.get().expect("type checked upstream")
            }
            "speed-temporal" => {
                self.extras.speed_temporal = value.get().expect("type checked upstream")
            }
            "feature-params" => {
                self.feature_params = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .unwrap_or_default()
            }
            _ => unimplemented!(),
        }
    }

    /// The value of property `name`.
    pub(super) fn get(&self, name: &str) -> glib::Value {
        match name {
            "model-filename" => self.model_filename.to_value(),
            "disable-clip" => self.disable_clip.to_value(),
            "enable-transform" => self.enable_transform.to_value(),
            "phone-model" => self.phone_model.to_value(),
            "pool-method" => self.pool_method.to_value(),
            "threads" => self.threads.to_value(),
            "subsample" => self.subsample.to_value(),
            "conf-interval" => self.conf_interval.to_value(),
            "frame-message" => self.frame_message.to_value(),
            "results-filename" => self.results_filename.to_value(),
            "results-format" => self.results_format.to_value(),
            "backend" => self.backend.to_value(),
            "device-id" => self.device_id.to_value(),
            "sync" => self.sync.to_value(),
            "window" => self.window.to_value(),
            "psnr" => self.companions.psnr.to_value(),
            "ssim" => self.companions.ssim.to_value(),
            "ms-ssim" => self.companions.ms_ssim.to_value(),
            "ciede" => self.companions.ciede.to_value(),
            "psnr-hvs" => self.companions.psnr_hvs.to_value(),
            "model-params" => self.model_params.to_value(),
            "cambi" => self.extras.cambi.to_value(),
            "speed-chroma" => self.extras.speed_chroma.to_value(),
            "speed-temporal" => self.extras.speed_temporal.to_value(),
            "feature-params" => self.feature_params.to_value(),
            _ => unimplemented!(),
        }
    }
}
