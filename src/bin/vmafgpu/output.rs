//! What the command writes: libvmaf's report (the element's report writer, fed from the frame
//! messages so that `name=` and `--no_prediction` can shape it as libvmaf does), the pooled
//! score line, and the progress meter.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::time::Instant;

use gstvmafgpu::model::pool::MetricPool;
use gstvmafgpu::vmafgpu::report::ReportFrame;

/// Turns the element's metric names into the report's.
#[derive(Debug, Default)]
pub struct MetricMap {
    /// The model's outputs (`vmaf`, `vmaf_bagging`, ...) under their `name=` names.
    pub rename: HashMap<String, String>,
    /// Metrics left out (`--no_prediction`: the model's outputs).
    pub drop: HashSet<String>,
    /// Only these (`--no_prediction` without `-m`: the `--feature` metrics).
    pub keep_only: Option<HashSet<String>>,
}

impl MetricMap {
    pub fn apply(&self, metrics: Vec<(String, f64)>) -> Vec<(String, f64)> {
        metrics
            .into_iter()
            .filter(|(n, _)| !self.drop.contains(n))
            .filter(|(n, _)| self.keep_only.as_ref().is_none_or(|k| k.contains(n)))
            .map(|(n, v)| match self.rename.get(&n) {
                Some(r) => (r.clone(), v),
                None => (n, v),
            })
            .collect()
    }
}

/// The frames of the report and their pool, in frame order.
#[derive(Debug, Default)]
pub struct Collected {
    pub frames: Vec<ReportFrame>,
    pub pool: MetricPool,
    /// Frames the element scored (also those whose metrics were all left out).
    pub scored: u64,
}

impl Collected {
    pub fn add(&mut self, index: u64, metrics: Vec<(String, f64)>) {
        self.scored += 1;
        // libvmaf's report has no entry for a frame without metrics
        if metrics.is_empty() {
            return;
        }
        self.pool.push(&metrics);
        self.frames.push(ReportFrame { index, metrics });
    }

    /// The pooled mean of `metric`.
    pub fn mean(&self, metric: &str) -> Option<f64> {
        self.pool
            .stats()
            .into_iter()
            .find(|(n, _)| n == metric)
            .map(|(_, s)| s.mean)
    }
}

/// C's `%f`: six decimals (`nan`, `inf` as glibc prints them).
pub fn c_f(x: f64) -> String {
    if x.is_nan() {
        if x.is_sign_negative() { "-nan" } else { "nan" }.into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:.6}")
    }
}

/// libvmaf's lines after scoring: `vmaf_v0.6.1: 85.415076`, and for a bootstrap collection
/// `vmaf_b_v0.6.3: 76.5, ci.p95: [70.1, 81.9], stddev: 2.9` (pooled means).
pub fn summary_lines(label: &str, name: &str, c: &Collected) -> (Option<String>, Option<String>) {
    let plain = c.mean(name).map(|score| format!("{label}: {}", c_f(score)));
    let stat = |suffix: &str| c.mean(&format!("{name}{suffix}"));
    if let (Some(bagging), Some(lo), Some(hi), Some(stddev)) = (
        stat("_bagging"),
        stat("_ci_p95_lo"),
        stat("_ci_p95_hi"),
        stat("_stddev"),
    ) {
        return (
            plain,
            Some(format!(
                "{label}: {}, ci.p95: [{}, {}], stddev: {}",
                c_f(bagging),
                c_f(lo),
                c_f(hi),
                c_f(stddev)
            )),
        );
    }
    (plain, None)
}

/// The progress meter on a terminal's stderr: a bar when the frame count is known.
pub struct Progress {
    pub enabled: bool,
    started: Instant,
    drawn: bool,
}

impl Progress {
    pub fn new(enabled: bool) -> Self {
        Progress {
            enabled,
            started: Instant::now(),
            drawn: false,
        }
    }

    pub fn update(&mut self, done: u64, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        self.drawn = true;
        let fps = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        let mut err = std::io::stderr().lock();
        match total {
            Some(t) if t > 0 => {
                let frac = (done as f64 / t as f64).min(1.0);
                let bar = (frac * 30.0) as usize;
                let _ = write!(
                    err,
                    "\r[{}{}] {done}/{t} frames {:5.1}% {fps:.2} FPS\x1b[K",
                    "#".repeat(bar),
                    " ".repeat(30 - bar),
                    frac * 100.0
                );
            }
            _ => {
                let _ = write!(err, "\r{done} frames {fps:.2} FPS\x1b[K");
            }
        }
        let _ = err.flush();
    }

    /// End the meter's line (before other output on stderr).
    pub fn finish(&mut self) {
        if self.drawn {
            eprintln!();
            self.drawn = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_format() {
        assert_eq!(c_f(85.4150755), "85.415076");
        assert_eq!(c_f(100.0), "100.000000");
        assert_eq!(c_f(f64::NAN), "nan");
        assert_eq!(c_f(-0.0000001), "-0.000000");
    }

    #[test]
    fn map_and_lines() {
        let m = MetricMap {
            rename: [("vmaf".to_string(), "v".to_string())].into(),
            drop: ["integer_motion2".to_string()].into(),
            keep_only: None,
        };
        let got = m.apply(vec![
            ("integer_motion2".into(), 1.0),
            ("vmaf".into(), 80.0),
            ("psnr_y".into(), 30.0),
        ]);
        assert_eq!(got, [("v".to_string(), 80.0), ("psnr_y".to_string(), 30.0)]);
        let mut c = Collected::default();
        c.add(0, got.clone());
        c.add(1, vec![("v".into(), 90.0), ("psnr_y".into(), 31.0)]);
        c.add(2, Vec::new());
        assert_eq!((c.scored, c.frames.len()), (3, 2));
        assert_eq!(
            summary_lines("vmaf_v0.6.1", "v", &c),
            (Some("vmaf_v0.6.1: 85.000000".to_string()), None)
        );
        assert_eq!(summary_lines("vmaf_v0.6.1", "vmaf", &c), (None, None));
    }
}
