//! The engine against libvmaf 3.2.0 on synthetic content (tests/common/synth.rs): every size,
//! depth and content kind in `cases()`, scored by libvmaf 3.2.0's plain C path and recorded in
//! tests/data/oracle/synth_v3.2.0.json (how: tests/data/oracle/README.md). The content is
//! regenerated here from the recorded parameters; only the numbers are stored.

mod common;
#[path = "common/synth.rs"]
mod synth;

use std::path::PathBuf;

use common::Mismatches;
use gstvmafgpu::engine::{BackendKind, Scorer, ScorerConfig};
use gstvmafgpu::features::adm::{self, AdmParams};
use gstvmafgpu::features::motion::{self, MotionParams, MotionSequence};
use gstvmafgpu::features::vif::{self, VifParams};
use gstvmafgpu::picture::ChromaFormat;
use serde::Deserialize;
use synth::{Kind, Spec};

/// tests/data/oracle/synth_v3.2.0.json.
#[derive(Deserialize)]
struct Oracle {
    metrics: Vec<String>,
    cases: Vec<OracleCase>,
}

#[derive(Deserialize)]
struct OracleCase {
    name: String,
    width: usize,
    height: usize,
    bpc: u8,
    format: String,
    kind: String,
    seed: u64,
    frames: usize,
    /// Per frame, one value per entry of `Oracle::metrics`.
    values: Vec<Vec<f64>>,
}

impl OracleCase {
    fn spec(&self) -> Spec {
        let s = Spec {
            width: self.width,
            height: self.height,
            bpc: self.bpc,
            format: synth::format_from_name(&self.format).expect("format"),
            kind: Kind::from_name(&self.kind).expect("kind"),
            seed: self.seed,
            frames: self.frames,
        };
        assert_eq!(
            s.name(),
            self.name,
            "recorded case name disagrees with its parameters"
        );
        assert_eq!(self.values.len(), self.frames, "{}: frame count", self.name);
        s
    }
}

impl Oracle {
    fn load() -> Oracle {
        let path = common::data_dir().join("oracle/synth_v3.2.0.json");
        let text = std::fs::read_to_string(&path).expect("oracle file");
        // serde_json's float_roundtrip feature (Cargo.toml) makes the 17-digit numbers parse to
        // the exact f64 libvmaf printed.
        serde_json::from_str(&text).expect("oracle json")
    }

    /// Column of `metric` in `values`.
    fn col(&self, metric: &str) -> usize {
        self.metrics
            .iter()
            .position(|m| m == metric)
            .unwrap_or_else(|| panic!("{metric} not recorded"))
    }
}

fn spec(
    width: usize,
    height: usize,
    bpc: u8,
    format: ChromaFormat,
    kind: Kind,
    seed: u64,
    frames: usize,
) -> Spec {
    Spec {
        width,
        height,
        bpc,
        format,
        kind,
        seed,
        frames,
    }
}

/// The recorded cases. Adding one means regenerating the oracle file (README in its folder).
fn cases() -> Vec<Spec> {
    use ChromaFormat::{Yuv420, Yuv422, Yuv444};
    let formats = [Yuv420, Yuv422, Yuv444];
    let depths = [8u8, 10, 12, 16];
    let mut v = Vec::new();
    // Small frames, 33x33 to 64x64, many odd: every kind at every depth.
    let small = [
        (33, 33),
        (33, 34),
        (34, 33),
        (35, 37),
        (40, 40),
        (41, 33),
        (33, 48),
        (47, 53),
        (48, 48),
        (55, 39),
        (63, 64),
        (64, 63),
        (64, 64),
        (36, 61),
        (50, 50),
        (39, 45),
    ];
    let mut i = 0;
    for kind in Kind::ALL {
        for bpc in depths {
            let (w, h) = small[i % small.len()];
            v.push(spec(w, h, bpc, formats[i % 3], kind, 100 + i as u64, 4));
            i += 1;
        }
    }
    // Widths at which libvmaf's AVX2/AVX-512 ADM disagrees with its C code.
    let odd_kinds = [
        Kind::Random,
        Kind::Checker,
        Kind::Gradient,
        Kind::MaxDiffAlt,
    ];
    for (j, w) in [66usize, 100, 130, 161].into_iter().enumerate() {
        for (k, h) in [(0usize, 36 + 13 * j), (1, 90 - 7 * j)] {
            let n = 2 * j + k;
            v.push(spec(
                w,
                h,
                depths[n % 4],
                formats[n % 3],
                odd_kinds[(j + k) % 4],
                200 + n as u64,
                4,
            ));
        }
    }
    // Mid sizes.
    v.push(spec(176, 144, 8, Yuv420, Kind::Gradient, 300, 4));
    v.push(spec(320, 240, 10, Yuv422, Kind::Random, 301, 4));
    v.push(spec(352, 288, 12, Yuv444, Kind::Checker, 302, 4));
    v.push(spec(641, 359, 16, Yuv420, Kind::Gradient, 303, 4));
    v.push(spec(501, 281, 8, Yuv420, Kind::Independent, 304, 4));
    v.push(spec(256, 256, 16, Yuv444, Kind::MaxDiffAlt, 305, 4));
    v.push(spec(256, 256, 16, Yuv420, Kind::MaxDiff, 306, 3));
    v.push(spec(257, 255, 16, Yuv420, Kind::Random, 307, 4));
    // Larger than 1080p.
    v.push(spec(1936, 1090, 8, Yuv420, Kind::Random, 400, 3));
    v.push(spec(1936, 1090, 10, Yuv420, Kind::Gradient, 401, 3));
    v
}

/// Frames below the 33x33 minimum, to document what libvmaf 3.2.0 does with them (not compared).
fn small_frame_cases() -> Vec<Spec> {
    let mut v = Vec::new();
    for (i, (w, h)) in [
        (8, 8),
        (16, 16),
        (17, 17),
        (20, 24),
        (24, 24),
        (31, 32),
        (32, 32),
        (32, 17),
        (17, 64),
        (64, 17),
        (32, 33),
        (33, 32),
    ]
    .into_iter()
    .enumerate()
    {
        v.push(spec(
            w,
            h,
            8,
            ChromaFormat::Yuv420,
            Kind::Random,
            500 + i as u64,
            3,
        ));
    }
    v
}

/// Writes the raw YUV files of every case, and a manifest, into the folder named by
/// `VMAF_SYNTH_OUT`: the input for scoring them with libvmaf.
#[test]
#[ignore = "writes oracle inputs; run by hand when regenerating tests/data/oracle"]
fn write_synth_inputs() {
    let dir =
        PathBuf::from(std::env::var("VMAF_SYNTH_OUT").expect("set VMAF_SYNTH_OUT to a folder"));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, list) in [
        ("cases.txt", cases()),
        ("small_cases.txt", small_frame_cases()),
    ] {
        let mut manifest = String::new();
        for s in &list {
            s.write_yuv(&dir, synth::Layout::LibvmafCli).unwrap();
            manifest += &format!(
                "{} {} {} {} {} {} {} {}\n",
                s.name(),
                s.width,
                s.height,
                s.bpc,
                synth::format_name(s.format),
                s.kind.name(),
                s.seed,
                s.frames
            );
        }
        std::fs::write(dir.join(file), manifest).unwrap();
    }
}

#[test]
fn recorded_cases_are_the_listed_cases() {
    let oracle = Oracle::load();
    let recorded: Vec<String> = oracle.cases.iter().map(|c| c.spec().name()).collect();
    let listed: Vec<String> = cases().iter().map(Spec::name).collect();
    assert_eq!(
        recorded, listed,
        "cases() changed: regenerate tests/data/oracle (see its README)"
    );
}

/// integer_vif_scale0..3 of every frame of every case.
#[test]
fn vif_matches_libvmaf_v320() {
    let oracle = Oracle::load();
    let cols: Vec<usize> = (0..4)
        .map(|s| oracle.col(&format!("integer_vif_scale{s}")))
        .collect();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in &oracle.cases {
        let spec = case.spec();
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let got = vif::compute(r.luma(), d.luma(), &VifParams::default()).scores();
            for (s, &c) in cols.iter().enumerate() {
                mm.check(
                    || format!("{} frame {t} integer_vif_scale{s}", case.name),
                    got[s],
                    case.values[t][c],
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}

/// VMAF_integer_feature_motion_sad_score, integer_motion2 and integer_motion3 of every frame.
#[test]
fn motion_matches_libvmaf_v320() {
    let oracle = Oracle::load();
    let names = [
        "VMAF_integer_feature_motion_sad_score",
        "integer_motion2",
        "integer_motion3",
    ];
    let cols: Vec<usize> = names.iter().map(|n| oracle.col(n)).collect();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in &oracle.cases {
        let spec = case.spec();
        let mut seq = MotionSequence::new(MotionParams::default());
        let mut out = Vec::new();
        let mut prev = None;
        for t in 0..spec.frames {
            let (r, _) = spec.frame(t);
            let score = match &prev {
                None => 0.0,
                Some(p) => motion::sad_score(
                    motion::sad(synth::Frame::luma(p), r.luma()),
                    spec.width,
                    spec.height,
                ),
            };
            out.extend(seq.push(score));
            prev = Some(r);
        }
        out.extend(seq.finish());
        assert_eq!(out.len(), spec.frames, "{}: motion frames", case.name);
        for m in out {
            let t = m.index as usize;
            for (k, got) in [m.sad_score, m.motion2, m.motion3].into_iter().enumerate() {
                mm.check(
                    || format!("{} frame {t} {}", case.name, names[k]),
                    got,
                    case.values[t][cols[k]],
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}

/// integer_adm2 and integer_adm_scale0..3 (and integer_adm3, integer_aim) of every frame.
#[test]
fn adm_matches_libvmaf_v320() {
    let oracle = Oracle::load();
    let names = [
        "integer_adm2",
        "integer_adm_scale0",
        "integer_adm_scale1",
        "integer_adm_scale2",
        "integer_adm_scale3",
        "integer_adm3",
        "integer_aim",
    ];
    let cols: Vec<usize> = names.iter().map(|n| oracle.col(n)).collect();
    let p = AdmParams::default();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in &oracle.cases {
        let spec = case.spec();
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let s = adm::compute(r.luma(), d.luma(), &p).scores(&p, spec.width, spec.height);
            let got = [
                s.adm2, s.scale[0], s.scale[1], s.scale[2], s.scale[3], s.adm3, s.aim,
            ];
            for (k, &g) in got.iter().enumerate() {
                mm.check(
                    || format!("{} frame {t} {}", case.name, names[k]),
                    g,
                    case.values[t][cols[k]],
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}

/// The whole engine (CPU backend, two worker threads), fed whole frames (luma and chroma, the
/// chroma planes rounded up as GStreamer lays them out): every recorded metric, VMAF included,
/// of every frame.
#[test]
fn engine_matches_libvmaf_v320() {
    let oracle = Oracle::load();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in &oracle.cases {
        let spec = case.spec();
        let mut scorer = Scorer::new(ScorerConfig {
            backend: BackendKind::Cpu,
            threads: 2,
            ..Default::default()
        })
        .expect("scorer");
        let mut out = Vec::new();
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let (rb, db) = (r.to_bytes(), d.to_bytes());
            let rp = synth::picture(&rb, spec.width, spec.height, spec.bpc, spec.format);
            let dp = synth::picture(&db, spec.width, spec.height, spec.bpc, spec.format);
            out.extend(
                scorer
                    .push(&rp, &dp)
                    .unwrap_or_else(|e| panic!("{}: push: {e}", case.name)),
            );
        }
        let (rest, summary) = scorer.finish().expect("finish");
        out.extend(rest);
        assert_eq!(
            summary.frames, spec.frames as u64,
            "{}: frames scored",
            case.name
        );
        let indices: Vec<u64> = out.iter().map(|f| f.index).collect();
        assert_eq!(
            indices,
            (0..spec.frames as u64).collect::<Vec<_>>(),
            "{}: frame order",
            case.name
        );
        for f in &out {
            let t = f.index as usize;
            for (c, name) in oracle.metrics.iter().enumerate() {
                let want = case.values[t][c];
                match f.get(name) {
                    Some(got) => mm.check(|| format!("{} frame {t} {name}", case.name), got, want),
                    None => mm.0.push(format!(
                        "{} frame {t}: the engine does not report {name}",
                        case.name
                    )),
                }
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}
