//! A span of scored frames (the whole run, or the current live window): their pool of every
//! metric and the time they cover, in running time across segments.

use super::PoolMethod;
use super::messages::{MetricStats, PooledScores, Timing};
use crate::model::pool::MetricPool;

/// Timing of a pushed pair, kept until the engine returns its final scores.
#[derive(Clone, Copy, Debug)]
pub(super) struct FrameMeta {
    pub(super) index: u64,
    pub(super) timing: Timing,
}

/// Pooled frames since some start (the whole run, or the current window).
#[derive(Default)]
pub(super) struct Span {
    pub(super) pool: MetricPool,
    pub(super) first: Option<FrameMeta>,
    /// End of the last frame's timestamp (the duration where frames have no running time).
    end: Option<gst::ClockTime>,
    /// Running time covered by earlier runs: a run ends where running time goes back (a
    /// flushing seek restarts it), and the duration is the sum of the runs.
    covered: gst::ClockTime,
    /// The current run in running time: its first frame's start, its last frame's start, and
    /// the latest frame end.
    run: Option<(gst::ClockTime, gst::ClockTime, gst::ClockTime)>,
}

impl Span {
    pub(super) fn add(&mut self, meta: FrameMeta, metrics: &[(String, f64)]) {
        self.pool.push(metrics);
        if self.first.is_none() {
            self.first = Some(meta);
        }
        let duration = meta.timing.duration.unwrap_or(gst::ClockTime::ZERO);
        let end = meta.timing.timestamp.map(|t| t + duration);
        if end.is_some() {
            self.end = end;
        }
        // Running time goes on across segments (a size change, a concatenation), where
        // timestamps may start again.
        if let Some(rt) = meta.timing.running_time {
            let rt_end = rt + duration;
            self.run = Some(match self.run {
                Some((start, last, e)) if rt >= last => (start, rt, e.max(rt_end)),
                Some((start, _, e)) => {
                    self.covered += e.saturating_sub(start);
                    (rt, rt, rt_end)
                }
                None => (rt, rt, rt_end),
            });
        }
    }

    /// Timing of the first frame with the duration up to the last frame's end, in running
    /// time (every segment's frames), else in timestamps.
    pub(super) fn timing(&self) -> Timing {
        let mut t = self.first.map(|m| m.timing).unwrap_or_default();
        t.duration = match (self.run, t.timestamp, self.end) {
            (Some((start, _, end)), _, _) => Some(self.covered + end.saturating_sub(start)),
            (None, Some(start), Some(end)) => end.checked_sub(start),
            _ => None,
        };
        t
    }

    pub(super) fn scores(&self, pool_method: PoolMethod) -> PooledScores {
        PooledScores {
            frames: self.pool.frames(),
            pool_method,
            metrics: self.stats(),
        }
    }

    /// Every metric's statistics, in first-seen order.
    pub(super) fn stats(&self) -> Vec<(String, MetricStats)> {
        let stats = self.pool.stats().into_iter();
        stats.map(|(name, s)| (name, s.into())).collect()
    }
}
