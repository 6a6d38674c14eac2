//! One clip's state: the frames in flight, the motion look-ahead, and the final scores of a
//! frame (pooled as they are made).

use std::collections::VecDeque;
use std::sync::Arc;

use super::host::HostValues;
use super::plan::{Ext, Slot, companion_metrics};
use super::{FrameScores, Scorer};
use crate::backend::{FrameAccum, HostPlane, InputPlane};
use crate::error::{Error, Result};
use crate::features::motion::{self, MotionScores, MotionSequence};
use crate::model::pool::MetricPool;
use crate::picture::{ChromaFormat, OwnedPlane};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Geometry {
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) bpc: u8,
    pub(super) format: ChromaFormat,
}

#[derive(Default)]
pub(super) struct Clip {
    /// Set by the first frame of the clip; later frames must match it.
    pub(super) geometry: Option<Geometry>,
    /// Whether the clip's frames in the caller's memory are read where they are (decided at
    /// its first frame).
    pub(super) zero_copy: bool,
    /// Index of the next pushed frame.
    pub(super) next_index: u64,
    /// The last reference planes (the newest at the back), for motion (2 with the five-frame
    /// window); with the caller's plane when the frame took the zero-copy route (the compact
    /// plane then holds only the geometry).
    pub(super) refs: VecDeque<(Arc<OwnedPlane>, Option<InputPlane>)>,
    /// Jobs submitted and not yet received.
    pub(super) in_flight: usize,
    /// Received results (with their host features' values) waiting for their motion scores to
    /// become final, in index order.
    pub(super) waiting: VecDeque<(u64, bool, FrameAccum, HostValues)>,
    /// The last pushed frame's (reference, distorted) luma, for `speed_temporal` (kept only
    /// where it runs).
    pub(super) previous: Option<PreviousLuma>,
    /// A frame's host values taken from the host pool before the backend's result came.
    pub(super) host_ready: Option<(u64, HostValues)>,
    pub(super) motion: Option<MotionSequence>,
    /// Every metric pooled over the scored frames, in report order (its frame count is the
    /// frames scored).
    pub(super) pooled: MetricPool,
    /// Set when a backend refused a frame after taking it ([`Error::FrameRefused`]): the clip
    /// ends before that frame and takes no more frames until `finish()`.
    pub(super) cut: Option<u64>,
    /// Frames made final by the call that met the refusal, returned first by `finish()`.
    pub(super) held: Vec<FrameScores>,
}

/// A pushed frame's (reference, distorted) luma, kept for the next frame's `speed_temporal`.
pub(super) enum PreviousLuma {
    /// The engine's copies (the copy route).
    Copied(Arc<OwnedPlane>, Arc<OwnedPlane>),
    /// The caller's planes (the zero-copy route).
    Host(HostPlane, HostPlane),
}

impl Scorer {
    /// Receive results until the backend has nothing ready (or, with `wait`, nothing in flight).
    pub(super) fn collect(&mut self, wait: bool, out: &mut Vec<FrameScores>) -> Result<()> {
        while self.clip.in_flight > 0 {
            if !self.collect_one(wait, out)? {
                break;
            }
        }
        Ok(())
    }

    /// Receive one result; false if none was ready.
    pub(super) fn collect_one(&mut self, wait: bool, out: &mut Vec<FrameScores>) -> Result<bool> {
        // The host values of the frame the backend returns next, first (results come in
        // submission order): without `wait`, nothing is taken before both are ready.
        let next = self.clip.next_index - self.clip.in_flight as u64;
        if self.clip.host_ready.is_none()
            && let Some(pool) = self.host_pool.as_mut()
            && pool.front() == Some(next)
        {
            match pool.take(wait) {
                Ok(Some(v)) => self.clip.host_ready = Some(v),
                Ok(None) => return Ok(false),
                Err(e) => {
                    self.abort_clip();
                    return Err(e);
                }
            }
        }
        let got = match self.backend.receive(wait) {
            Ok(g) => g,
            Err(e @ Error::SampleRange { .. }) if self.backend.checks_host_ranges() => {
                // Refused after it was taken (Backend::checks_host_ranges): results come in
                // submission order, so it is the oldest frame in flight. The clip ends before
                // it: the frames after it are dropped, those before it stay (finish()).
                let index = self.clip.next_index - self.clip.in_flight as u64;
                self.backend.reset();
                if let Some(pool) = self.host_pool.as_mut() {
                    pool.reset();
                }
                self.clip.host_ready = None;
                self.clip.previous = None;
                self.clip.in_flight = 0;
                self.clip.next_index = index;
                self.clip.cut = Some(index);
                self.clip.refs.clear();
                self.clip.held.append(out);
                return Err(Error::FrameRefused {
                    index,
                    cause: Box::new(e),
                });
            }
            Err(e) => {
                self.abort_clip();
                return Err(e);
            }
        };
        let Some((index, acc)) = got else {
            if wait && self.clip.in_flight > 0 {
                self.abort_clip();
                return Err(Error::Backend(
                    "the backend lost frames in flight; the clip was dropped".into(),
                ));
            }
            return Ok(false);
        };
        self.clip.in_flight -= 1;
        let host = match self.clip.host_ready.take() {
            Some((i, v)) if i == index => v,
            other => {
                self.clip.host_ready = other;
                Vec::new()
            }
        };
        let features = index.is_multiple_of(self.subsample());
        if !self.plan.uses(Ext::Motion) {
            // No look-ahead: the frame is final now.
            if features {
                let f = self.frame_scores(index, &acc, &host, None)?;
                out.push(f);
            }
            return Ok(true);
        }
        let (w, h) = self
            .clip
            .geometry
            .map(|g| (g.width, g.height))
            .unwrap_or((1, 1));
        let sad_score = match acc.motion_sad {
            Some(sad) => motion::sad_score_with(sad, w, h, &self.plan.motion),
            None => 0.0,
        };
        self.clip.waiting.push_back((index, features, acc, host));
        let plan_motion = self.plan.motion;
        let done = self
            .clip
            .motion
            .get_or_insert_with(|| MotionSequence::new(plan_motion))
            .push(sad_score);
        self.finalize(done, out)?;
        Ok(true)
    }

    /// Turn frames whose motion scores are final into FrameScores.
    pub(super) fn finalize(
        &mut self,
        done: Vec<MotionScores>,
        out: &mut Vec<FrameScores>,
    ) -> Result<()> {
        for m in done {
            let Some((index, features, acc, host)) = self.clip.waiting.pop_front() else {
                return Err(Error::State(format!(
                    "internal: motion of frame {} without its features",
                    m.index
                )));
            };
            if index != m.index {
                return Err(Error::State(format!(
                    "internal: motion of frame {} paired with frame {index}",
                    m.index
                )));
            }
            if features {
                let f = self.frame_scores(index, &acc, &host, Some(&m))?;
                out.push(f);
            }
        }
        Ok(())
    }

    /// All scores of one frame, and pool them.
    pub(super) fn frame_scores(
        &mut self,
        index: u64,
        acc: &FrameAccum,
        host: &HostValues,
        m: Option<&MotionScores>,
    ) -> Result<FrameScores> {
        let p = &self.plan;
        let routes = &self.routes;
        let host_value = |j: usize, k: usize| {
            let v = if routes.on_host(j) {
                host.get(j).and_then(|v| v.get(k)).copied()
            } else {
                super::host::device_values(&p.host[j].kind, &acc.companions)
                    .and_then(|v| v.get(k).copied())
            };
            v.ok_or_else(|| {
                Error::State(format!(
                    "internal: frame {index} has no values of {}",
                    p.host[j].names.first().map_or("a host feature", |n| n)
                ))
            })
        };
        let g = self
            .clip
            .geometry
            .ok_or_else(|| Error::State("internal: no geometry".into()))?;
        let vif = acc.vif.scores();
        let adm = acc.adm.scores(&p.adm, g.width, g.height);
        let (sad, m2, m3) = m.map_or((0.0, 0.0, 0.0), |m| (m.sad_score, m.motion2, m.motion3));

        let mut metrics: Vec<(String, f64)> = Vec::with_capacity(32);
        let (before, after) = companion_metrics(self.cfg.companions, &acc.companions)?;
        metrics.extend(before);
        for e in &p.order {
            match e {
                Ext::Adm => {
                    let v = [
                        adm.adm2,
                        adm.aim,
                        adm.adm3,
                        adm.scale[0],
                        adm.scale[1],
                        adm.scale[2],
                        adm.scale[3],
                    ];
                    metrics.extend(p.adm_names.iter().cloned().zip(v));
                }
                Ext::Motion => metrics.push((p.motion_names[0].clone(), sad)),
                Ext::Vif => metrics.extend(p.vif_names.iter().cloned().zip(vif)),
                Ext::Host(j) => {
                    for (k, n) in p.host[*j].names.iter().enumerate() {
                        metrics.push((n.clone(), host_value(*j, k)?));
                    }
                }
            }
        }
        metrics.extend(after);
        if p.uses(Ext::Motion) {
            metrics.push((p.motion_names[1].clone(), m2));
            metrics.push((p.motion_names[2].clone(), m3));
        }

        let values: Vec<f64> = p
            .slots
            .iter()
            .map(|s| {
                Ok(match *s {
                    Slot::Vif(k) => vif[k],
                    Slot::Adm2 => adm.adm2,
                    Slot::Aim => adm.aim,
                    Slot::Adm3 => adm.adm3,
                    Slot::AdmScale(k) => adm.scale[k],
                    Slot::MotionSad => sad,
                    Slot::Motion2 => m2,
                    Slot::Motion3 => m3,
                    Slot::Host(j, k) => host_value(j, k)?,
                })
            })
            .collect::<Result<_>>()?;
        let prediction = self.model.predict(&values, &p.predict)?;
        metrics.extend(prediction.named(&self.model));

        self.clip.pooled.push(&metrics);
        Ok(FrameScores { index, metrics })
    }
}
