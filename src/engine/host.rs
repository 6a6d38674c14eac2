//! The features the engine computes on host threads unless the backend computes them: libvmaf's
//! `cambi`, `speed_chroma` and `speed_temporal` (VMAF v1's CAMBI and SpEED, and the standalone
//! metrics).
//!
//! A GPU backend computes VIF, ADM and motion; these run beside it on a pool of host threads, one
//! frame a task, with the CPU reference code of [`crate::features::cambi`] and
//! [`crate::features::speed`], so every backend reports the same numbers. Results are taken in
//! frame order by the engine, which waits for a frame's host result only when it needs it.
//!
//! Where a backend computes a kind on its device instead ([`Backend::computes_on_device`] of the
//! kind's [`device_companion`]), the engine asks the backend for it in the clip's companions
//! ([`ClipConfig::companions`](crate::backend::ClipConfig::companions)) and takes its values from the frame's [`CompanionScores`] ([`device_values`]); [`Routes`] is that
//! decision, made once per scorer, the one place that knows which kinds can go to a device.
//!
//! `speed_temporal` keeps no state of its own: the engine hands each frame the previous frame's
//! planes (libvmaf runs temporal extractors on every frame, subsampling or not, so the previous
//! frame is always the one pushed before).

use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::backend::{Backend, ChromaPair, CompanionScores, Companions};
use crate::error::{Error, Result};
use crate::features::cambi::{Cambi, CambiEotf, CambiParams};
use crate::features::speed::{
    PrescaleMethod, SpeedChroma, SpeedChromaParams, SpeedTemporal, SpeedTemporalParams,
};
use crate::model::{CambiOptions, SpeedChromaOptions, SpeedTemporalOptions};
use crate::picture::OwnedPlane;

/// One host extractor with its options, as resolved from the model or the standalone metrics.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum HostKind {
    Cambi(CambiParams),
    SpeedChroma(SpeedChromaParams),
    SpeedTemporal(SpeedTemporalParams),
}

impl HostKind {
    /// Whether the frame's chroma planes are needed.
    pub(crate) fn needs_chroma(&self) -> bool {
        matches!(self, HostKind::SpeedChroma(_))
    }

    /// Whether the previous frame's planes are needed.
    pub(crate) fn needs_previous(&self) -> bool {
        matches!(self, HostKind::SpeedTemporal(_))
    }
}

/// The companion that asks a backend to compute `k` on its device, for the kinds a backend
/// may compute (`None`: always on host threads). CAMBI with `full_ref` stays on the host (the
/// device computes the distorted frame's score only).
pub(crate) fn device_companion(k: &HostKind) -> Option<Companions> {
    match k {
        HostKind::Cambi(p) if !p.full_ref => Some(Companions {
            cambi: Some(*p),
            ..Default::default()
        }),
        HostKind::SpeedChroma(p) => Some(Companions {
            speed_chroma: Some(*p),
            ..Default::default()
        }),
        HostKind::SpeedTemporal(p) => Some(Companions {
            speed_temporal: Some(*p),
            ..Default::default()
        }),
        _ => None,
    }
}

/// The outputs of kind `k` (as [`compute`] gives them) from a frame's companion scores, where
/// the backend computed them.
pub(crate) fn device_values(k: &HostKind, s: &CompanionScores) -> Option<Vec<f64>> {
    match k {
        HostKind::Cambi(_) => s.cambi.map(|v| vec![v]),
        HostKind::SpeedChroma(_) => s.speed_chroma.map(|v| vec![v.u, v.v, v.uv]),
        HostKind::SpeedTemporal(_) => s.speed_temporal.map(|v| vec![v]),
    }
}

/// Where each host kind of a plan runs: on the backend's device or on host threads.
#[derive(Clone, Debug, Default)]
pub(crate) struct Routes {
    /// Per kind (in the plan's order): computed by the backend.
    pub(crate) on_device: Vec<bool>,
    /// What the clip asks the backend for, for those kinds (added to the
    /// [`ClipConfig`](crate::backend::ClipConfig)'s companions).
    pub(crate) companions: Companions,
}

impl Routes {
    /// Ask `backend`, kind by kind. A clip asks for one set of options per v1 feature, so a
    /// second kind of the same feature (the model's CAMBI and the standalone one with other
    /// options) stays on host threads.
    pub(crate) fn of(kinds: &[HostKind], backend: &dyn Backend) -> Routes {
        let mut r = Routes::default();
        for k in kinds {
            let c = device_companion(k)
                .filter(|c| !r.companions.shares_v1_feature(c) && backend.computes_on_device(*c));
            r.on_device.push(c.is_some());
            if let Some(c) = c {
                r.companions = r.companions.with(c);
            }
        }
        r
    }

    /// Whether kind `j` runs on host threads.
    pub(crate) fn on_host(&self, j: usize) -> bool {
        !self.on_device.get(j).copied().unwrap_or(false)
    }

    /// Whether any kind runs on host threads.
    pub(crate) fn any_on_host(&self) -> bool {
        self.on_device.iter().any(|d| !d)
    }
}

fn model_err(metric: &str, e: impl std::fmt::Display) -> Error {
    Error::Model(format!("{metric}: {e}"))
}

/// cambi.c init(): `topk` wins over `cambi_topk` when not the default, `cambi_eotf` over `eotf`.
pub(crate) fn cambi_params(o: &CambiOptions) -> Result<CambiParams> {
    const DEFAULT_TOPK: f64 = 0.6;
    const DEFAULT_EOTF: &str = "bt1886";
    if o.heatmaps_path.is_some() {
        return Err(model_err(
            "cambi",
            "heatmaps_path (vmafgpu writes no CAMBI heatmaps)",
        ));
    }
    let eotf = if o.cambi_eotf != DEFAULT_EOTF {
        &o.cambi_eotf
    } else {
        &o.eotf
    };
    let eotf = match eotf.as_str() {
        "bt1886" => CambiEotf::Bt1886,
        "pq" => CambiEotf::Pq,
        other => {
            return Err(model_err(
                "cambi",
                format!("eotf {other:?} (libvmaf knows bt1886 and pq)"),
            ));
        }
    };
    // The option table's ranges keep these non-negative (0 means the input's).
    let dim = |v: i32| u32::try_from(v).map_err(|_| model_err("cambi", format!("size {v}")));
    let p = CambiParams {
        enc_width: dim(o.enc_width)?,
        enc_height: dim(o.enc_height)?,
        enc_bitdepth: dim(o.enc_bitdepth)?,
        src_width: dim(o.src_width)?,
        src_height: dim(o.src_height)?,
        window_size: o.window_size,
        topk: if o.topk != DEFAULT_TOPK {
            o.topk
        } else {
            o.cambi_topk
        },
        tvi_threshold: o.tvi_threshold,
        max_log_contrast: o.max_log_contrast,
        eotf,
        vis_lum_threshold: o.vis_lum_threshold,
        high_res_speedup: o.high_res_speedup,
        max_val: o.max_val,
        full_ref: o.full_ref,
    };
    p.validate()?;
    Ok(p)
}

fn prescale_method(name: &str, metric: &str) -> Result<PrescaleMethod> {
    PrescaleMethod::from_name(name).ok_or_else(|| {
        model_err(
            metric,
            format!(
                "speed_prescale_method {name:?} (libvmaf knows nearest, bilinear, bicubic and lanczos4)"
            ),
        )
    })
}

pub(crate) fn speed_chroma_params(o: &SpeedChromaOptions) -> Result<SpeedChromaParams> {
    let p = SpeedChromaParams {
        kernelscale: o.kernelscale,
        prescale: o.prescale,
        prescale_method: prescale_method(&o.prescale_method, "speed_chroma")?,
        sigma_nn: o.sigma_nn,
        nn_floor: o.nn_floor,
        max_val: o.max_val,
        weight_var_mode: o.weight_var_mode,
    };
    p.validate()?;
    Ok(p)
}

pub(crate) fn speed_temporal_params(o: &SpeedTemporalOptions) -> Result<SpeedTemporalParams> {
    let p = SpeedTemporalParams {
        kernelscale: o.kernelscale,
        prescale: o.prescale,
        prescale_method: prescale_method(&o.prescale_method, "speed_temporal")?,
        sigma_nn: o.sigma_nn,
        nn_floor: o.nn_floor,
        max_val: o.max_val,
        use_ref_diff: o.use_ref_diff,
    };
    p.validate()?;
    Ok(p)
}

/// An extractor prepared for one geometry (`OnDevice`: the backend computes it; prepared all
/// the same, so that the sizes it refuses are refused before a frame is taken).
enum Prepared {
    Cambi(Cambi),
    SpeedChroma(SpeedChroma),
    SpeedTemporal(SpeedTemporal),
    OnDevice,
}

/// The host extractors of a clip, prepared for its geometry (each refuses the sizes libvmaf
/// refuses or crashes on, before any frame is taken).
pub(crate) struct HostSet {
    list: Vec<Prepared>,
}

/// Prepare every extractor for luma `width` x `height` at `bpc` bits, with chroma planes of
/// `chroma` (libvmaf's size) or none. Errors name the metric and the size. The kinds `routes`
/// puts on the device are checked the same way and computed by the backend.
pub(crate) fn prepare(
    kinds: &[HostKind],
    routes: &Routes,
    width: usize,
    height: usize,
    bpc: u8,
    chroma: Option<(usize, usize)>,
) -> Result<Arc<HostSet>> {
    let mut list = Vec::with_capacity(kinds.len());
    for (j, k) in kinds.iter().enumerate() {
        let prepared = match k {
            HostKind::Cambi(p) => Prepared::Cambi(Cambi::new(p, width, height, bpc)?),
            HostKind::SpeedChroma(p) => {
                let Some((cw, ch)) = chroma else {
                    return Err(Error::Unsupported {
                        metric: "speed_chroma",
                        reason: "SpEED chroma (and every VMAF v1 model) needs the chroma planes, and the picture has none (GRAY)".into(),
                    });
                };
                Prepared::SpeedChroma(SpeedChroma::new(p, cw, ch, bpc)?)
            }
            HostKind::SpeedTemporal(p) => {
                Prepared::SpeedTemporal(SpeedTemporal::new(p, width, height, bpc)?)
            }
        };
        list.push(if routes.on_host(j) {
            prepared
        } else {
            Prepared::OnDevice
        });
    }
    Ok(Arc::new(HostSet { list }))
}

/// The planes of one frame's host task.
pub(crate) struct ExtractorFrame {
    pub reference: Arc<OwnedPlane>,
    pub distorted: Arc<OwnedPlane>,
    pub chroma: Option<Arc<ChromaPair>>,
    /// The previous frame's (reference, distorted) luma, for `speed_temporal`.
    pub previous: Option<(Arc<OwnedPlane>, Arc<OwnedPlane>)>,
}

/// One frame's values: per extractor (in `kinds` order) its outputs (none for those on the
/// device).
pub(crate) type HostValues = Vec<Vec<f64>>;

fn compute(p: &HostSet, f: &ExtractorFrame) -> Result<HostValues> {
    let mut out = Vec::with_capacity(p.list.len());
    for e in &p.list {
        out.push(match e {
            Prepared::Cambi(c) => {
                let s = c.compute(&f.distorted.view(), Some(&f.reference.view()))?;
                match s.full_ref {
                    Some((source, full)) => vec![s.cambi, source, full],
                    None => vec![s.cambi],
                }
            }
            Prepared::SpeedChroma(c) => {
                let pair = f.chroma.as_ref().ok_or_else(|| {
                    Error::State("internal: speed_chroma without the chroma planes".into())
                })?;
                let [ru, rv] = &pair.reference;
                let [du, dv] = &pair.distorted;
                let s = c.compute(&ru.view(), &rv.view(), &du.view(), &dv.view())?;
                vec![s.u, s.v, s.uv]
            }
            Prepared::SpeedTemporal(t) => {
                let prev = f.previous.as_ref();
                let prev = prev.map(|(r, d)| (r.view(), d.view()));
                let v = t.compute(
                    prev.as_ref().map(|(r, d)| (r, d)),
                    &f.reference.view(),
                    &f.distorted.view(),
                )?;
                vec![v]
            }
            // Taken from the frame's companion scores (Routes).
            Prepared::OnDevice => Vec::new(),
        });
    }
    Ok(out)
}

struct ExtractorTask {
    prepared: Arc<HostSet>,
    frame: ExtractorFrame,
    reply: SyncSender<Result<HostValues>>,
}

/// A pool of host threads computing one frame a task.
pub(crate) struct HostPool {
    tasks: Option<mpsc::Sender<ExtractorTask>>,
    threads: Vec<JoinHandle<()>>,
    /// Frames submitted and not yet taken, oldest first.
    pending: std::collections::VecDeque<(u64, Receiver<Result<HostValues>>)>,
}

impl HostPool {
    /// `threads` workers (at least one).
    pub(crate) fn new(threads: usize) -> Result<HostPool> {
        let (tx, rx) = mpsc::channel::<ExtractorTask>();
        let rx = Arc::new(Mutex::new(rx));
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let h = std::thread::Builder::new()
                .name(format!("vmafgpu-host{i}"))
                .spawn(move || {
                    loop {
                        // The lock is held only while waiting for the next task.
                        let task = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        let Ok(task) = task else { return };
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            compute(&task.prepared, &task.frame)
                        }))
                        .unwrap_or_else(|_| {
                            Err(Error::State("a host feature thread panicked".into()))
                        });
                        // The engine may have dropped the frame (reset): nobody to tell.
                        let _ = task.reply.send(r);
                    }
                })
                .map_err(|e| Error::State(format!("cannot start a host feature thread: {e}")))?;
            handles.push(h);
        }
        Ok(HostPool {
            tasks: Some(tx),
            threads: handles,
            pending: Default::default(),
        })
    }

    /// Queue frame `index`.
    pub(crate) fn submit(
        &mut self,
        index: u64,
        prepared: &Arc<HostSet>,
        frame: ExtractorFrame,
    ) -> Result<()> {
        let (reply, rx) = mpsc::sync_channel(1);
        let tasks = self
            .tasks
            .as_ref()
            .ok_or_else(|| Error::State("internal: host pool stopped".into()))?;
        tasks
            .send(ExtractorTask {
                prepared: Arc::clone(prepared),
                frame,
                reply,
            })
            .map_err(|_| Error::State("the host feature threads have stopped".into()))?;
        self.pending.push_back((index, rx));
        Ok(())
    }

    /// The oldest pending frame's index.
    pub(crate) fn front(&self) -> Option<u64> {
        self.pending.front().map(|(i, _)| *i)
    }

    /// The oldest pending frame's values: `Ok(None)` when not ready and not `wait`.
    pub(crate) fn take(&mut self, wait: bool) -> Result<Option<(u64, HostValues)>> {
        let Some((index, rx)) = self.pending.front() else {
            return Ok(None);
        };
        let index = *index;
        let got = if wait {
            rx.recv().map_err(|_| ())
        } else {
            match rx.try_recv() {
                Ok(v) => Ok(v),
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => Err(()),
            }
        };
        self.pending.pop_front();
        match got {
            Ok(v) => Ok(Some((index, v?))),
            Err(()) => Err(Error::State(format!(
                "the host feature threads lost frame {index}"
            ))),
        }
    }

    /// Forget every pending frame (their threads finish them and nobody reads the result).
    pub(crate) fn reset(&mut self) {
        self.pending.clear();
    }
}

impl Drop for HostPool {
    fn drop(&mut self) {
        self.pending.clear();
        self.tasks = None;
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}
