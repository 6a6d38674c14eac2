//! Shared test helpers: the golden pairs (decoded by scripts/fetch-test-data.sh) and libvmaf 3.2.0's
//! reference numbers for them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use gstvmafgpu::picture::OwnedPlane;

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// A golden pair: name, geometry, and the libvmaf 3.2.0 JSON file with its numbers.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    pub name: &'static str,
    pub width: usize,
    pub height: usize,
    pub bpc: u8,
    pub frames: usize,
}

pub const CARPHONE: Pair = Pair {
    name: "carphone",
    width: 176,
    height: 144,
    bpc: 8,
    frames: 120,
};
pub const BBB720: Pair = Pair {
    name: "bbb720",
    width: 1280,
    height: 720,
    bpc: 8,
    frames: 48,
};
pub const BBB360P10: Pair = Pair {
    name: "bbb360p10",
    width: 640,
    height: 360,
    bpc: 10,
    frames: 24,
};
pub const PAIRS: [Pair; 3] = [CARPHONE, BBB720, BBB360P10];

impl Pair {
    fn yuv_path(&self, side: &str) -> PathBuf {
        data_dir().join(format!("yuv/{}_{side}.yuv", self.name))
    }

    /// Bytes of one I420 frame (luma + both chroma planes).
    pub fn frame_bytes(&self) -> usize {
        let bps = if self.bpc > 8 { 2 } else { 1 };
        let (cw, ch) = (self.width.div_ceil(2), self.height.div_ceil(2));
        (self.width * self.height + 2 * cw * ch) * bps
    }

    /// The whole raw I420 file of one side ("ref" or "dis"). Panics with the command to run when
    /// the data has not been fetched: these tests must not pass by skipping.
    pub fn raw(&self, side: &str) -> Vec<u8> {
        let p = self.yuv_path(side);
        let data = std::fs::read(&p).unwrap_or_else(|e| {
            panic!("{}: {e}; run scripts/fetch-test-data.sh first", p.display())
        });
        assert_eq!(
            data.len(),
            self.frame_bytes() * self.frames,
            "{} has the wrong size",
            p.display()
        );
        data
    }

    /// Luma planes of every frame of one side, as compact u16 planes.
    pub fn luma_frames(&self, side: &str) -> Vec<OwnedPlane> {
        let raw = self.raw(side);
        let bps = if self.bpc > 8 { 2 } else { 1 };
        raw.chunks_exact(self.frame_bytes())
            .map(|f| {
                let luma = &f[..self.width * self.height * bps];
                let data = if bps == 1 {
                    luma.iter().map(|&b| b as u16).collect()
                } else {
                    luma.chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect()
                };
                OwnedPlane {
                    data,
                    width: self.width,
                    height: self.height,
                    bpc: self.bpc,
                }
            })
            .collect()
    }

    /// The golden JSON for this pair (`model` = None for the default vmaf_v0.6.1 run with all
    /// companion metrics, or Some("vmaf_v0.6.1neg") etc. for the carphone model runs).
    pub fn golden(&self, model: Option<&str>) -> Golden {
        let file = match model {
            None => format!("goldens/{}_v3.2.0.json", self.name),
            Some(m) => format!("goldens/{}_v3.2.0_{m}.json", self.name),
        };
        let text = std::fs::read_to_string(data_dir().join(&file)).expect(&file);
        Golden(serde_json::from_str(&text).expect(&file))
    }
}

/// libvmaf's `--json` output, numbers printed with %.17g (so they parse back to the exact f64).
pub struct Golden(pub serde_json::Value);

impl Golden {
    pub fn frames(&self) -> usize {
        self.0["frames"].as_array().unwrap().len()
    }

    /// Frame `i`'s value of `metric`, or None if libvmaf did not report it.
    pub fn frame(&self, i: usize, metric: &str) -> Option<f64> {
        let f = &self.0["frames"][i];
        assert_eq!(f["frameNum"].as_u64(), Some(i as u64));
        f["metrics"][metric].as_f64()
    }

    /// Names of the metrics reported per frame.
    pub fn metric_names(&self) -> Vec<String> {
        self.0["frames"][0]["metrics"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    /// Pooled value: `stat` is "min", "max", "mean" or "harmonic_mean".
    pub fn pooled(&self, metric: &str, stat: &str) -> Option<f64> {
        self.0["pooled_metrics"][metric][stat].as_f64()
    }
}

/// Collects mismatches and fails once with the full list (rav1e-style parity reporting).
#[derive(Default)]
pub struct Mismatches(pub Vec<String>);

impl Mismatches {
    pub fn check(&mut self, what: impl FnOnce() -> String, got: f64, want: f64) {
        if got.to_bits() != want.to_bits() && got != want {
            self.0
                .push(format!("{}: got {got:.17e}, want {want:.17e}", what()));
        }
    }

    pub fn finish(self, checked: usize) {
        assert!(checked > 0, "nothing was compared");
        if !self.0.is_empty() {
            let n = self.0.len();
            let shown: Vec<_> = self.0.into_iter().take(40).collect();
            panic!("{n} of {checked} values differ:\n{}", shown.join("\n"));
        }
        eprintln!("{checked} values compared, all equal");
    }
}
