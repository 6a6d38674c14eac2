//! TEMPORARY stand-in for `crate::engine` (notes/ENGINE_API.md) until the engine lands, so the
//! element's flow (pairing, EOS, messages, reports) can be built and tested. Its numbers are NOT
//! VMAF: "vmaf" is 100 minus the mean absolute luma difference. Removed when src/engine lands.
#![allow(dead_code)]

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::picture::{OwnedPlane, Picture};

#[derive(Clone, Debug)]
pub enum ModelSource {
    Builtin(String),
    Path(PathBuf),
    Json(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Auto,
    Cpu,
    Cuda,
    Hip,
}

#[derive(Clone, Debug)]
pub struct ScorerConfig {
    pub model: ModelSource,
    pub disable_clip: bool,
    pub enable_transform: bool,
    pub threads: usize,
    pub subsample: u32,
    pub backend: BackendKind,
    pub device_id: u32,
}

impl Default for ScorerConfig {
    fn default() -> Self {
        ScorerConfig {
            model: ModelSource::Builtin("vmaf_v0.6.1".into()),
            disable_clip: false,
            enable_transform: false,
            threads: 0,
            subsample: 1,
            backend: BackendKind::Auto,
            device_id: 0,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FrameScores {
    pub index: u64,
    pub metrics: Vec<(String, f64)>,
}

pub const BUILTIN_MODELS: &[&str] = &["vmaf_v0.6.1", "vmaf_v0.6.1neg", "vmaf_4k_v0.6.1", "vmaf_b_v0.6.3"];

pub struct Scorer {
    cfg: ScorerConfig,
    name: String,
    next: u64,
    pending: Option<(u64, f64)>,
}

impl Scorer {
    pub fn new(cfg: ScorerConfig) -> Result<Scorer> {
        let name = match &cfg.model {
            ModelSource::Builtin(n) if BUILTIN_MODELS.contains(&n.as_str()) => n.clone(),
            ModelSource::Builtin(n) => return Err(Error::Model(format!("no built-in model named {n:?}"))),
            ModelSource::Path(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| Error::Model(format!("{}: {e}", p.display())))?;
                let v: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| Error::Model(format!("{}: {e}", p.display())))?;
                if v.get("model_dict").is_none() {
                    return Err(Error::Model(format!("{}: no model_dict", p.display())));
                }
                p.display().to_string()
            }
            ModelSource::Json(_) => "json".into(),
        };
        Ok(Scorer {
            cfg,
            name,
            next: 0,
            pending: None,
        })
    }

    pub fn backend_name(&self) -> &'static str {
        "cpu"
    }

    pub fn model_name(&self) -> &str {
        &self.name
    }

    fn final_scores(&self, (index, mad): (u64, f64)) -> FrameScores {
        FrameScores {
            index,
            metrics: vec![("stub_mad".into(), mad), ("vmaf".into(), 100.0 - mad)],
        }
    }

    pub fn push(&mut self, reference: &Picture<'_>, distorted: &Picture<'_>) -> Result<Vec<FrameScores>> {
        if reference.width < 33 || reference.height < 33 {
            return Err(Error::TooSmall {
                width: reference.width,
                height: reference.height,
                min_width: 33,
                min_height: 33,
            });
        }
        let (mut r, mut d) = (OwnedPlane::default(), OwnedPlane::default());
        reference.copy_luma(&mut r)?;
        distorted.copy_luma(&mut d)?;
        if (r.width, r.height, r.bpc) != (d.width, d.height, d.bpc) {
            return Err(Error::Mismatch("geometry".into()));
        }
        let sum: u64 = r.data.iter().zip(&d.data).map(|(a, b)| (*a as i64 - *b as i64).unsigned_abs()).sum();
        let mad = sum as f64 / r.data.len() as f64;
        let index = self.next;
        self.next += 1;
        let mut out = Vec::new();
        if let Some(p) = self.pending.take() {
            out.push(self.final_scores(p));
        }
        if index % self.cfg.subsample as u64 == 0 {
            self.pending = Some((index, mad));
        }
        Ok(out)
    }

    pub fn finish(&mut self) -> Result<(Vec<FrameScores>, ())> {
        let out = self.pending.take().map(|p| self.final_scores(p)).into_iter().collect();
        self.next = 0;
        Ok((out, ()))
    }

    pub fn reset(&mut self) {
        self.pending = None;
        self.next = 0;
    }
}
