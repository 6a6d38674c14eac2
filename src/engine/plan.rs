//! The plan of a model: which features to compute, where each model input comes from, and the
//! report names (with libvmaf's option suffixes), including the companion metrics' names.

use super::Extras;
use super::host::{self, HostKind};
use crate::backend::{CompanionScores, Companions};
use crate::error::{Error, Result};
use crate::features::adm::AdmParams;
use crate::features::motion::MotionParams;
use crate::features::vif::VifParams;
use crate::model::{
    AdmOptions, Extractor, ExtractorOptions, FeatureOverload, Model, MotionOptions, PredictOptions,
    VifOptions, alias,
};

/// Where a model input's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Vif(usize),
    Adm2,
    Aim,
    Adm3,
    AdmScale(usize),
    MotionSad,
    Motion2,
    Motion3,
    /// Output `k` of host extractor `j` (`Plan::host`).
    Host(usize, usize),
}

impl Slot {
    /// Which output of its host extractor a model feature is.
    fn host_output(model_name: &str) -> Option<usize> {
        Some(match model_name {
            "Cambi_feature_cambi_score" => 0,
            "Speed_chroma_feature_speed_chroma_u_score" => 0,
            "Speed_chroma_feature_speed_chroma_v_score" => 1,
            "Speed_chroma_feature_speed_chroma_uv_score" => 2,
            "Speed_temporal_feature_speed_temporal_score" => 0,
            _ => return None,
        })
    }

    /// The slot of a libvmaf feature name (collector name, before aliasing).
    fn of(model_name: &str) -> Option<Slot> {
        Some(match model_name {
            "VMAF_integer_feature_vif_scale0_score" => Slot::Vif(0),
            "VMAF_integer_feature_vif_scale1_score" => Slot::Vif(1),
            "VMAF_integer_feature_vif_scale2_score" => Slot::Vif(2),
            "VMAF_integer_feature_vif_scale3_score" => Slot::Vif(3),
            "VMAF_integer_feature_adm2_score" => Slot::Adm2,
            "VMAF_integer_feature_aim_score" => Slot::Aim,
            "VMAF_integer_feature_adm3_score" => Slot::Adm3,
            "integer_adm_scale0" => Slot::AdmScale(0),
            "integer_adm_scale1" => Slot::AdmScale(1),
            "integer_adm_scale2" => Slot::AdmScale(2),
            "integer_adm_scale3" => Slot::AdmScale(3),
            "VMAF_integer_feature_motion_sad_score" => Slot::MotionSad,
            "VMAF_integer_feature_motion2_score" => Slot::Motion2,
            "VMAF_integer_feature_motion3_score" => Slot::Motion3,
            _ => return None,
        })
    }
}

/// Extractors in the order the model first uses them (libvmaf registers them in that order, and
/// its reports list features in the order they were first written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ext {
    Vif,
    Adm,
    Motion,
    /// Host extractor `j` (`Plan::host`).
    Host(usize),
}

/// A host extractor of the plan and its report names (one per output).
#[derive(Clone, Debug)]
pub(super) struct HostPlan {
    pub(super) kind: HostKind,
    pub(super) names: Vec<String>,
}

/// The report names of a host extractor's outputs: libvmaf's provided features with the option
/// suffix, through its alias table (cambi.c, speed.c `provided_features[]`; the full-reference
/// outputs of cambi are written under their plain names).
fn host_names(o: &ExtractorOptions) -> Vec<String> {
    match o {
        ExtractorOptions::Cambi(c) => {
            let mut v = vec![o.feature_name("Cambi_feature_cambi_score")];
            if c.full_ref {
                v.push("cambi_source".into());
                v.push("cambi_full_reference".into());
            }
            v
        }
        ExtractorOptions::SpeedChroma(_) => [
            "Speed_chroma_feature_speed_chroma_u_score",
            "Speed_chroma_feature_speed_chroma_v_score",
            "Speed_chroma_feature_speed_chroma_uv_score",
        ]
        .iter()
        .map(|f| o.feature_name(f))
        .collect(),
        ExtractorOptions::SpeedTemporal(_) => {
            vec![o.feature_name("Speed_temporal_feature_speed_temporal_score")]
        }
        _ => Vec::new(),
    }
}

fn host_kind(o: &ExtractorOptions) -> Result<Option<HostKind>> {
    Ok(Some(match o {
        ExtractorOptions::Cambi(c) => HostKind::Cambi(host::cambi_params(c)?),
        ExtractorOptions::SpeedChroma(c) => HostKind::SpeedChroma(host::speed_chroma_params(c)?),
        ExtractorOptions::SpeedTemporal(c) => {
            HostKind::SpeedTemporal(host::speed_temporal_params(c)?)
        }
        _ => return Ok(None),
    }))
}

#[derive(Clone, Debug)]
pub(super) struct Plan {
    pub(super) vif: VifParams,
    pub(super) adm: AdmParams,
    pub(super) motion: MotionParams,
    /// Extractors the model uses, in first-use order.
    pub(super) order: Vec<Ext>,
    /// Report names (with option suffixes).
    pub(super) vif_names: [String; 4],
    /// adm2, aim, adm3, scale0..3.
    pub(super) adm_names: [String; 7],
    /// sad, motion2, motion3.
    pub(super) motion_names: [String; 3],
    /// One slot per `model.features()` entry.
    pub(super) slots: Vec<Slot>,
    pub(super) predict: PredictOptions,
    /// Host extractors: the model's (in first-use order), then the standalone ones.
    pub(super) host: Vec<HostPlan>,
}

fn unsupported(what: &str) -> Error {
    Error::Model(format!(
        "the model sets {what}, which vmafgpu does not implement"
    ))
}

fn vif_params(o: &VifOptions) -> Result<VifParams> {
    if o.skip_scale0 {
        return Err(unsupported("vif_skip_scale0"));
    }
    if o.debug {
        return Err(unsupported("the vif debug option"));
    }
    let p = VifParams {
        enhn_gain_limit: o.enhn_gain_limit,
    };
    p.validate()?;
    Ok(p)
}

fn adm_params(o: &AdmOptions) -> Result<AdmParams> {
    // adm_csf_mode 0 (Watson) and 2 (the Barten-Watson blend of the v1 models) are computed;
    // AdmParams::validate refuses the others with the reason.
    if o.skip_aim || o.skip_scale0 {
        return Err(unsupported("adm_skip_aim / adm_skip_scale0"));
    }
    if o.debug {
        return Err(unsupported("the adm debug option"));
    }
    let ref_display_height = u32::try_from(o.ref_display_height)
        .map_err(|_| Error::Model(format!("adm_ref_display_height {}", o.ref_display_height)))?;
    let p = AdmParams {
        enhn_gain_limit: o.enhn_gain_limit,
        norm_view_dist: o.norm_view_dist,
        ref_display_height,
        noise_weight: o.noise_weight,
        dlm_weight: o.dlm_weight,
        min_val: o.min_val,
        csf_mode: o.csf_mode,
    };
    p.validate()?;
    Ok(p)
}

fn motion_params(o: &MotionOptions) -> Result<MotionParams> {
    if o.debug {
        return Err(unsupported("the motion debug option"));
    }
    Ok(MotionParams {
        force_zero: o.force_zero,
        blend_factor: o.blend_factor,
        blend_offset: o.blend_offset,
        fps_weight: o.fps_weight,
        max_val: o.max_val,
        five_frame_window: o.five_frame_window,
        moving_average: o.moving_average,
    })
}

impl Plan {
    pub(super) fn new(
        model: &Model,
        predict: PredictOptions,
        extras: Extras,
        feature_params: &[FeatureOverload],
    ) -> Result<Plan> {
        let mut vif = None;
        let mut adm = None;
        let mut motion = None;
        let mut order = Vec::new();
        let (mut vif_sfx, mut adm_sfx, mut motion_sfx) = (None, None, None);
        let mut slots = Vec::with_capacity(model.features().len());
        let mut host: Vec<HostPlan> = Vec::new();
        // A host extractor's index in `host`, added at its first use.
        fn host_index(host: &mut Vec<HostPlan>, o: &ExtractorOptions) -> Result<Option<usize>> {
            let Some(kind) = host_kind(o)? else {
                return Ok(None);
            };
            let names = host_names(o);
            if let Some(j) = host.iter().position(|h| h.kind == kind) {
                return Ok(Some(j));
            }
            host.push(HostPlan { kind, names });
            Ok(Some(host.len() - 1))
        }
        for f in model.features() {
            if let Some(j) = host_index(&mut host, &f.options)? {
                let k = Slot::host_output(&f.model_name).ok_or_else(|| {
                    Error::Model(format!(
                        "{}: feature {} is not one the engine computes",
                        model.source(),
                        f.model_name
                    ))
                })?;
                slots.push(Slot::Host(j, k));
                if !order.contains(&Ext::Host(j)) {
                    order.push(Ext::Host(j));
                }
                continue;
            }
            let slot = Slot::of(&f.model_name).ok_or_else(|| {
                Error::Model(format!(
                    "{}: feature {} is not one the engine computes",
                    model.source(),
                    f.model_name
                ))
            })?;
            slots.push(slot);
            // libvmaf's name for this feature is alias(name) + suffix of the non-default options.
            let base = alias(&f.model_name);
            let suffix = f
                .name
                .strip_prefix(base)
                .ok_or_else(|| {
                    Error::Model(format!(
                        "{}: unexpected feature name {}",
                        model.source(),
                        f.name
                    ))
                })?
                .to_string();
            let (ext, seen_sfx) = match &f.options {
                ExtractorOptions::Vif(o) => {
                    let p = vif_params(o)?;
                    if vif.is_some_and(|v| v != p) {
                        return Err(unsupported("two different VIF configurations"));
                    }
                    vif = Some(p);
                    (Ext::Vif, &mut vif_sfx)
                }
                ExtractorOptions::Adm(o) => {
                    let p = adm_params(o)?;
                    if adm.is_some_and(|v| v != p) {
                        return Err(unsupported("two different ADM configurations"));
                    }
                    adm = Some(p);
                    (Ext::Adm, &mut adm_sfx)
                }
                ExtractorOptions::Motion(o) => {
                    let p = motion_params(o)?;
                    if motion.is_some_and(|v| v != p) {
                        return Err(unsupported("two different motion configurations"));
                    }
                    motion = Some(p);
                    (Ext::Motion, &mut motion_sfx)
                }
                ExtractorOptions::Cambi(_)
                | ExtractorOptions::SpeedChroma(_)
                | ExtractorOptions::SpeedTemporal(_) => {
                    return Err(Error::State(
                        "internal: host extractor in the device plan".into(),
                    ));
                }
            };
            if seen_sfx.is_none() {
                *seen_sfx = Some(suffix);
            }
            if !order.contains(&ext) {
                order.push(ext);
            }
        }
        // The standalone metrics (libvmaf's default options, or `feature_params`'), unless the
        // model computes them with the same options already.
        let standalone = [
            (extras.cambi, Extractor::Cambi),
            (extras.speed_chroma, Extractor::SpeedChroma),
            (extras.speed_temporal, Extractor::SpeedTemporal),
        ];
        if let Some(p) = feature_params.iter().find(|p| {
            !standalone
                .iter()
                .any(|(on, e)| *on && e.name() == p.extractor)
        }) {
            return Err(Error::Model(format!(
                "feature option {}.{}={}: {} is not a standalone metric asked for (options \
                 are taken for cambi, speed_chroma and speed_temporal when they are on; the \
                 model's own features take theirs from the model parameters)",
                p.extractor, p.key, p.value, p.extractor
            )));
        }
        for (on, e) in standalone {
            if !on {
                continue;
            }
            let dict: Vec<(String, String)> = (feature_params.iter())
                .filter(|p| p.extractor == e.name())
                .map(|p| (p.key.clone(), p.value.clone()))
                .collect();
            let o = ExtractorOptions::from_dict(e, &dict)
                .map_err(|m| Error::Model(format!("{}: {m}", e.name())))?;
            if let Some(j) = host_index(&mut host, &o)?
                && !order.contains(&Ext::Host(j))
            {
                order.push(Ext::Host(j));
            }
        }
        let vs = vif_sfx.unwrap_or_default();
        let a = adm_sfx.unwrap_or_default();
        let m = motion_sfx.unwrap_or_default();
        Ok(Plan {
            vif: vif.unwrap_or_default(),
            adm: adm.unwrap_or_default(),
            motion: motion.unwrap_or_default(),
            order,
            vif_names: std::array::from_fn(|k| format!("integer_vif_scale{k}{vs}")),
            adm_names: [
                format!("integer_adm2{a}"),
                format!("integer_aim{a}"),
                format!("integer_adm3{a}"),
                format!("integer_adm_scale0{a}"),
                format!("integer_adm_scale1{a}"),
                format!("integer_adm_scale2{a}"),
                format!("integer_adm_scale3{a}"),
            ],
            motion_names: [
                format!("VMAF_integer_feature_motion_sad_score{m}"),
                format!("integer_motion2{m}"),
                format!("integer_motion3{m}"),
            ],
            slots,
            predict,
            host,
        })
    }

    /// The host extractors' kinds, in `host` order.
    pub(super) fn host_kinds(&self) -> Vec<HostKind> {
        self.host.iter().map(|h| h.kind.clone()).collect()
    }

    pub(super) fn uses(&self, e: Ext) -> bool {
        self.order.contains(&e)
    }
}

// ---------------------------------------------------------------------------------------------
// Companion metrics.

/// libvmaf's names of the companion metrics.
pub(super) const SSIM: &str = "float_ssim";
pub(super) const MS_SSIM: &str = "float_ms_ssim";
pub(super) const CIEDE: &str = "ciede2000";
pub(super) const PSNR_HVS: [&str; 4] = ["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"];

pub(super) type Named = Vec<(String, f64)>;

/// The companion metrics of a frame with their libvmaf names, split as libvmaf 3.2.0 orders its
/// report (the goldens): `psnr_y/_cb/_cr` before the model's features, `float_ssim`,
/// `float_ms_ssim`, `ciede2000`, `psnr_hvs_*` after them (and before `integer_motion2`, which
/// libvmaf writes at the look-ahead).
pub(super) fn companion_metrics(c: Companions, s: &CompanionScores) -> Result<(Named, Named)> {
    fn missing(what: &str) -> Error {
        Error::Backend(format!("the backend did not compute {what}"))
    }
    let mut before = Vec::new();
    let mut after = Vec::new();
    if c.psnr {
        let p = s.psnr.ok_or_else(|| missing("psnr"))?;
        let names = crate::features::psnr::NAMES;
        before.push((names[0].to_string(), p.y));
        if let (Some(cb), Some(cr)) = (p.cb, p.cr) {
            before.push((names[1].to_string(), cb));
            before.push((names[2].to_string(), cr));
        }
    }
    if c.ssim {
        let v = s.ssim.ok_or_else(|| missing(SSIM))?;
        after.push((SSIM.to_string(), v.ssim));
    }
    if c.ms_ssim {
        let v = s.ms_ssim.ok_or_else(|| missing(MS_SSIM))?;
        after.push((MS_SSIM.to_string(), v.ms_ssim));
    }
    if c.ciede {
        let v = s.ciede.ok_or_else(|| missing(CIEDE))?;
        after.push((CIEDE.to_string(), v));
    }
    if c.psnr_hvs {
        let v = s.psnr_hvs.ok_or_else(|| missing("psnr_hvs"))?;
        after.extend(
            PSNR_HVS
                .iter()
                .map(|n| n.to_string())
                .zip([v.y, v.cb, v.cr, v.psnr_hvs]),
        );
    }
    Ok((before, after))
}
