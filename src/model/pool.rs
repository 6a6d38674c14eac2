//! Pooling of per-frame scores into one clip score, as libvmaf 3.2.0 does it.
//!
//! libvmaf 3.2.0 libvmaf/src/libvmaf.c: `vmaf_feature_score_pooled()` walks the frames in index
//! order with four double accumulators (`sum`, `i_sum`, `min`, `max`) and derives every pooled
//! value from them; its JSON/XML output (libvmaf/src/output.c) prints exactly these values.
//! [`PoolAccumulator`] keeps the same accumulators in the same order, so its results are bit-equal
//! to libvmaf's whether the values come all at once ([`pool`], [`pool_all`]) or one frame at a
//! time (a live stream's running summary).
//!
//! With `--subsample N`, libvmaf pools only the frames whose index is a multiple of N: pass only
//! those values.

/// A pooling method (libvmaf's `enum VmafPoolingMethod`, without its `UNKNOWN` value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolMethod {
    /// Arithmetic mean: `sum / n`.
    Mean,
    /// Smallest value.
    Min,
    /// Largest value.
    Max,
    /// libvmaf's harmonic mean of `x + 1`, minus one: `n / sum(1 / (x + 1)) - 1`.
    HarmonicMean,
}

impl PoolMethod {
    /// Every method, in libvmaf's output order (min, max, mean, harmonic_mean).
    pub const ALL: [PoolMethod; 4] = [
        PoolMethod::Min,
        PoolMethod::Max,
        PoolMethod::Mean,
        PoolMethod::HarmonicMean,
    ];

    /// The name libvmaf's reports use for the method (`"min"`, `"max"`, `"mean"`,
    /// `"harmonic_mean"`; libvmaf/src/output.c: `pool_method_name`).
    pub fn name(self) -> &'static str {
        match self {
            PoolMethod::Mean => "mean",
            PoolMethod::Min => "min",
            PoolMethod::Max => "max",
            PoolMethod::HarmonicMean => "harmonic_mean",
        }
    }
}

/// All four pooled values of one metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PooledStats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub harmonic_mean: f64,
}

impl PooledStats {
    /// The value of one method.
    pub fn get(&self, method: PoolMethod) -> f64 {
        match method {
            PoolMethod::Mean => self.mean,
            PoolMethod::Min => self.min,
            PoolMethod::Max => self.max,
            PoolMethod::HarmonicMean => self.harmonic_mean,
        }
    }
}

/// libvmaf's pooling accumulators, fed one frame at a time in frame order.
///
/// The pooled values of no frame at all are NaN (libvmaf never pools an empty range).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoolAccumulator {
    /// Frames pooled. libvmaf counts them in an `unsigned` and converts to double; a u64 is
    /// exact in f64 up to 2^53 frames (centuries of video at any frame rate).
    count: u64,
    sum: f64,
    /// Sum of `1 / (x + 1)` (libvmaf's `i_sum`).
    inv_sum: f64,
    min: f64,
    max: f64,
}

impl PoolAccumulator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add the next frame's value.
    pub fn push(&mut self, x: f64) {
        // libvmaf 3.2.0 libvmaf/src/libvmaf.c: vmaf_feature_score_pooled(). The first frame sets
        // min and max unconditionally; later ones replace them only on a strict comparison (so a
        // NaN first value sticks, and later NaNs are skipped, as in libvmaf).
        let first = self.count == 0;
        self.count += 1;
        self.sum += x;
        self.inv_sum += 1. / (x + 1.);
        if first || x < self.min {
            self.min = x;
        }
        if first || x > self.max {
            self.max = x;
        }
    }

    /// Number of values pushed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The pooled value of one method (NaN before the first value).
    pub fn get(&self, method: PoolMethod) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let n = self.count as f64;
        match method {
            PoolMethod::Mean => self.sum / n,
            PoolMethod::Min => self.min,
            PoolMethod::Max => self.max,
            PoolMethod::HarmonicMean => n / self.inv_sum - 1.0,
        }
    }

    /// All four pooled values.
    pub fn stats(&self) -> PooledStats {
        PooledStats {
            min: self.get(PoolMethod::Min),
            max: self.get(PoolMethod::Max),
            mean: self.get(PoolMethod::Mean),
            harmonic_mean: self.get(PoolMethod::HarmonicMean),
        }
    }
}

impl Extend<f64> for PoolAccumulator {
    fn extend<I: IntoIterator<Item = f64>>(&mut self, iter: I) {
        for x in iter {
            self.push(x);
        }
    }
}

/// [`PoolAccumulator`]s of every metric of a sequence of frames, by name: what a clip's
/// summary, a live window and a whole run's pooled message pool. A metric that appears from
/// some frame on (a new clip whose format has more planes) pools the frames that carry it.
#[derive(Clone, Debug, Default)]
pub struct MetricPool {
    /// Frames pushed.
    frames: u64,
    /// Every metric's accumulator, in first-seen order.
    metrics: Vec<(String, PoolAccumulator)>,
    /// Where each name is in `metrics`, for frames whose metrics come in another order.
    index: std::collections::HashMap<String, usize>,
}

impl MetricPool {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add one frame's metrics (frames in index order).
    pub fn push(&mut self, metrics: &[(String, f64)]) {
        self.frames += 1;
        for (k, (name, v)) in metrics.iter().enumerate() {
            // Frames of one clip carry the same names in the same order: no lookup.
            let i = match self.metrics.get(k) {
                Some((n, _)) if n == name => k,
                _ => match self.index.get(name) {
                    Some(&i) => i,
                    None => {
                        self.index.insert(name.clone(), self.metrics.len());
                        self.metrics.push((name.clone(), PoolAccumulator::new()));
                        self.metrics.len() - 1
                    }
                },
            };
            self.metrics[i].1.push(*v);
        }
    }

    /// Frames pushed.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The pooled values of every metric, in first-seen order (empty before the first frame).
    pub fn stats(&self) -> Vec<(String, PooledStats)> {
        self.metrics
            .iter()
            .map(|(n, a)| (n.clone(), a.stats()))
            .collect()
    }
}

/// Pool `values` (in frame order) with one method, exactly as libvmaf does. NaN if empty.
pub fn pool(values: &[f64], method: PoolMethod) -> f64 {
    pool_all(values).get(method)
}

/// Pool `values` (in frame order) with every method, exactly as libvmaf does. NaN if empty.
pub fn pool_all(values: &[f64]) -> PooledStats {
    let mut acc = PoolAccumulator::new();
    acc.extend(values.iter().copied());
    acc.stats()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_cases() {
        let s = pool_all(&[1.0, 3.0]);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 3.0);
        assert_eq!(s.mean, 2.0);
        // 2 / (1/2 + 1/4) - 1 = 2 / 0.75 - 1
        assert_eq!(s.harmonic_mean, 2.0 / 0.75 - 1.0);
        assert_eq!(pool(&[5.0], PoolMethod::HarmonicMean), 5.0);
        assert!(pool(&[], PoolMethod::Mean).is_nan());
        assert!(pool(&[], PoolMethod::Min).is_nan());
    }

    #[test]
    fn nan_handling_follows_libvmaf() {
        // A NaN first value sticks as min and max; later NaNs never replace them.
        assert!(pool(&[f64::NAN, 1.0], PoolMethod::Min).is_nan());
        assert_eq!(pool(&[1.0, f64::NAN, 0.5], PoolMethod::Min), 0.5);
        assert_eq!(pool(&[1.0, f64::NAN, 2.0], PoolMethod::Max), 2.0);
    }

    /// Metrics pool by name whatever their order, each over the frames that carry it.
    #[test]
    fn metric_pool_by_name() {
        let m = |v: &[(&str, f64)]| -> Vec<(String, f64)> {
            v.iter().map(|&(n, x)| (n.to_string(), x)).collect()
        };
        let mut p = MetricPool::new();
        p.push(&m(&[("a", 1.0), ("b", 2.0)]));
        p.push(&m(&[("b", 4.0), ("c", 5.0), ("a", 3.0)]));
        assert_eq!(p.frames(), 2);
        let s = p.stats();
        let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(s[0].1, pool_all(&[1.0, 3.0]));
        assert_eq!(s[1].1, pool_all(&[2.0, 4.0]));
        assert_eq!(s[2].1, pool_all(&[5.0]));
        assert!(MetricPool::new().stats().is_empty());
    }
}
