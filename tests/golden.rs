//! The whole engine against libvmaf 3.2.0's numbers for the golden pairs (tests/data/goldens),
//! compared with `==` on f64, plus the engine's behaviour on bad input.

mod common;

use common::{BBB360P10, CARPHONE, Golden, Mismatches, PAIRS, Pair};
use gstvmafgpu::engine::{FrameScores, ModelSource, Scorer, ScorerConfig, Summary};
use gstvmafgpu::features::motion::{self, MotionParams, MotionSequence};
use gstvmafgpu::{Chroma, ChromaFormat, Error, Picture, PlaneRef};

/// One I420 frame of `raw` (8-bit: one byte per sample, else two, little-endian) as a Picture.
fn picture<'a>(pair: &Pair, raw: &'a [u8], i: usize) -> Picture<'a> {
    let bps = if pair.bpc > 8 { 2 } else { 1 };
    let f = &raw[i * pair.frame_bytes()..(i + 1) * pair.frame_bytes()];
    let (w, h) = (pair.width, pair.height);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let (y, rest) = f.split_at(w * h * bps);
    let (u, v) = rest.split_at(cw * ch * bps);
    Picture {
        width: w,
        height: h,
        bpc: pair.bpc,
        format: ChromaFormat::Yuv420,
        luma: PlaneRef {
            data: y,
            stride: w * bps,
        },
        chroma: Chroma::Planar {
            u: PlaneRef {
                data: u,
                stride: cw * bps,
            },
            v: PlaneRef {
                data: v,
                stride: cw * bps,
            },
        },
    }
}

fn config(model: &str, threads: usize) -> ScorerConfig {
    ScorerConfig {
        model: ModelSource::Builtin(model.into()),
        threads,
        ..Default::default()
    }
}

/// Score a whole pair; checks that frames come out in order, each exactly once.
fn score(pair: &Pair, cfg: ScorerConfig) -> (Vec<FrameScores>, Summary) {
    let (r, d) = (pair.raw("ref"), pair.raw("dis"));
    let mut scorer = Scorer::new(cfg).expect("scorer");
    assert_eq!(scorer.backend_name(), "cpu");
    let mut frames = Vec::new();
    for i in 0..pair.frames {
        let out = scorer
            .push(&picture(pair, &r, i), &picture(pair, &d, i))
            .expect("push");
        for f in &out {
            assert!(
                f.index < i as u64,
                "frame {} final before frame {i} was pushed",
                f.index
            );
        }
        frames.extend(out);
    }
    let (rest, summary) = scorer.finish().expect("finish");
    frames.extend(rest);
    (frames, summary)
}

/// The golden metrics the engine computes (the companion metrics of the golden runs are other
/// modules' business).
fn engine_metric(name: &str) -> bool {
    !["psnr", "float_", "ciede"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Every frame's value of every metric, and every pooled value, == golden; the same set of names.
fn compare(
    what: &str,
    golden: &Golden,
    frames: &[FrameScores],
    summary: &Summary,
    mm: &mut Mismatches,
) -> usize {
    let mut checked = 0;
    assert_eq!(frames.len(), golden.frames(), "{what}: number of frames");
    assert_eq!(
        summary.frames,
        golden.frames() as u64,
        "{what}: summary frames"
    );
    let mut want_names: Vec<String> = golden
        .metric_names()
        .into_iter()
        .filter(|n| engine_metric(n))
        .collect();
    want_names.sort();
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.index, i as u64, "{what}: frame order");
        let mut names: Vec<String> = f.metrics.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        assert_eq!(names, want_names, "{what}: metric names of frame {i}");
        for (name, got) in &f.metrics {
            let want = golden.frame(i, name).expect("name checked above");
            mm.check(|| format!("{what} frame {i} {name}"), *got, want);
            checked += 1;
        }
    }
    let mut pooled_names: Vec<String> = summary.pooled.iter().map(|(n, _)| n.clone()).collect();
    pooled_names.sort();
    assert_eq!(pooled_names, want_names, "{what}: pooled metric names");
    for (name, s) in &summary.pooled {
        for (stat, got) in [
            ("min", s.min),
            ("max", s.max),
            ("mean", s.mean),
            ("harmonic_mean", s.harmonic_mean),
        ] {
            let want = golden
                .pooled(name, stat)
                .unwrap_or_else(|| panic!("{what}: golden has no pooled {name} {stat}"));
            mm.check(|| format!("{what} pooled {name} {stat}"), got, want);
            checked += 1;
        }
    }
    checked
}

#[test]
fn vmaf_v061_matches_golden_on_every_pair() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for pair in PAIRS {
        let (frames, summary) = score(&pair, config("vmaf_v0.6.1", 2));
        checked += compare(pair.name, &pair.golden(None), &frames, &summary, &mut mm);
    }
    mm.finish(checked);
}

#[test]
fn carphone_other_models_match_golden() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for model in ["vmaf_v0.6.1neg", "vmaf_4k_v0.6.1", "vmaf_b_v0.6.3"] {
        let (frames, summary) = score(&CARPHONE, config(model, 2));
        let golden = CARPHONE.golden(Some(model));
        checked += compare(model, &golden, &frames, &summary, &mut mm);
    }
    mm.finish(checked);
}

/// Thread count changes nothing: every frame and pooled value identical for 1, 2 and 7 threads
/// (and equal to golden, so the comparison is not between equally wrong runs).
#[test]
fn results_identical_for_1_2_7_threads() {
    for pair in [CARPHONE, BBB360P10] {
        let golden = pair.golden(None);
        let runs: Vec<_> = [1, 2, 7]
            .into_iter()
            .map(|t| (t, score(&pair, config("vmaf_v0.6.1", t))))
            .collect();
        let mut mm = Mismatches::default();
        let mut checked = 0;
        for (t, (frames, summary)) in &runs {
            checked += compare(
                &format!("{} threads={t}", pair.name),
                &golden,
                frames,
                summary,
                &mut mm,
            );
        }
        mm.finish(checked);
        for (t, run) in &runs[1..] {
            assert!(
                *run == runs[0].1,
                "{}: threads={t} differs from threads=1",
                pair.name
            );
        }
    }
}

/// libvmaf --subsample N: VIF/ADM/model on every Nth frame, motion on all frames. The frames that
/// are reported are the golden frames with index % N == 0 (frame numbers kept), with the full
/// run's values (motion2 still compares neighbours), and pooling covers only those frames.
#[test]
fn subsample_scores_every_nth_frame() {
    let pair = BBB360P10;
    let golden = pair.golden(None);
    for n in [2u32, 5] {
        let mut cfg = config("vmaf_v0.6.1", 2);
        cfg.subsample = n;
        let (frames, summary) = score(&pair, cfg);
        let want: Vec<u64> = (0..pair.frames as u64)
            .filter(|i| i % u64::from(n) == 0)
            .collect();
        assert_eq!(frames.iter().map(|f| f.index).collect::<Vec<_>>(), want);
        assert_eq!(summary.frames, want.len() as u64);
        let mut mm = Mismatches::default();
        let mut checked = 0;
        for f in &frames {
            for (name, got) in &f.metrics {
                let want = golden.frame(f.index as usize, name).expect(name);
                mm.check(
                    || format!("subsample {n} frame {} {name}", f.index),
                    *got,
                    want,
                );
                checked += 1;
            }
        }
        // Pooled over the reported frames with libvmaf's formulas, from the golden per-frame values.
        for (name, s) in &summary.pooled {
            let vals: Vec<f64> = want
                .iter()
                .map(|&i| golden.frame(i as usize, name).unwrap())
                .collect();
            let k = vals.len() as f64;
            let (mut sum, mut isum) = (0.0, 0.0);
            for v in &vals {
                sum += v;
                isum += 1.0 / (v + 1.0);
            }
            let min = vals.iter().cloned().fold(f64::INFINITY, f64::min);
            let max = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            for (stat, got, want) in [
                ("mean", s.mean, sum / k),
                ("harmonic_mean", s.harmonic_mean, k / isum - 1.0),
                ("min", s.min, min),
                ("max", s.max, max),
            ] {
                mm.check(|| format!("subsample {n} pooled {name} {stat}"), got, want);
                checked += 1;
            }
        }
        mm.finish(checked);
    }
}

/// Motion alone: the SAD score, integer_motion2 and integer_motion3 of every frame.
#[test]
fn motion_matches_golden() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for pair in PAIRS {
        let golden = pair.golden(None);
        let frames = pair.luma_frames("ref");
        assert_eq!(golden.frames(), frames.len());
        let mut seq = MotionSequence::new(MotionParams::default());
        let mut out = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let s = if i == 0 {
                0.0
            } else {
                let sad = motion::sad(frames[i - 1].view(), f.view());
                motion::sad_score(sad, pair.width, pair.height)
            };
            out.extend(seq.push(s));
        }
        out.extend(seq.finish());
        assert_eq!(out.len(), frames.len());
        for m in out {
            let i = m.index as usize;
            for (name, got) in [
                ("VMAF_integer_feature_motion_sad_score", m.sad_score),
                ("integer_motion2", m.motion2),
                ("integer_motion3", m.motion3),
            ] {
                let want = golden.frame(i, name).expect(name);
                mm.check(|| format!("{} frame {i} {name}", pair.name), got, want);
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}

// ---------------------------------------------------------------------------------------------
// Bad input.

/// A gray 8-bit or 16-bit-container picture over `buf`.
fn gray(buf: &[u8], w: usize, h: usize, bpc: u8) -> Picture<'_> {
    let bps = if bpc > 8 { 2 } else { 1 };
    Picture {
        width: w,
        height: h,
        bpc,
        format: ChromaFormat::Gray,
        luma: PlaneRef {
            data: buf,
            stride: w * bps,
        },
        chroma: Chroma::None,
    }
}

/// Bad frames pushed in the middle of the carphone clip are refused with typed errors, and the
/// clip's results are still exactly libvmaf's: nothing was lost or changed by the refusals.
#[test]
fn bad_frames_are_refused_without_losing_state() {
    let pair = CARPHONE;
    let (r, d) = (pair.raw("ref"), pair.raw("dis"));
    let mut scorer = Scorer::new(config("vmaf_v0.6.1", 2)).unwrap();
    let mut frames = Vec::new();

    let small32 = vec![16u8; 32 * 32];
    let small16 = vec![16u8; 16 * 16];
    let ok40 = vec![16u8; 40 * 40];
    // 10-bit 40x40 with one sample of 1024 (and one with 1023, the maximum, as control).
    let mut over = vec![0u8; 40 * 40 * 2];
    let mut at_max = vec![0u8; 40 * 40 * 2];
    over[2 * (7 * 40 + 5)..][..2].copy_from_slice(&1024u16.to_le_bytes());
    at_max[2 * (7 * 40 + 5)..][..2].copy_from_slice(&1023u16.to_le_bytes());
    let mut over16 = over.clone();
    over16[2 * (39 * 40 + 39)..][..2].copy_from_slice(&65535u16.to_le_bytes());

    for i in 0..pair.frames {
        let (rp, dp) = (picture(&pair, &r, i), picture(&pair, &d, i));
        match i {
            3 => {
                for (w, buf) in [(32, &small32), (16, &small16)] {
                    let p = gray(buf, w, w, 8);
                    match scorer.push(&p, &p) {
                        Err(Error::TooSmall {
                            width,
                            height,
                            min_width: 33,
                            min_height: 33,
                        }) => assert_eq!((width, height), (w, w)),
                        other => panic!("{w}x{w}: expected TooSmall, got {other:?}"),
                    }
                }
            }
            5 => {
                // Reference and distorted disagree.
                let a = gray(&ok40, 40, 40, 8);
                let b = gray(&ok40[..40 * 36], 40, 36, 8);
                assert!(matches!(scorer.push(&a, &b), Err(Error::Mismatch(_))));
                // Consistent pair, but not the clip's geometry (176x144 I420).
                assert!(matches!(scorer.push(&a, &a), Err(Error::Mismatch(_))));
                // The clip's size with another bit depth.
                let mut dp10 = dp;
                dp10.bpc = 10;
                assert!(matches!(scorer.push(&rp, &dp10), Err(Error::Mismatch(_))));
            }
            7 => {
                // A sample above 2^bpc - 1, in the distorted and in the reference picture.
                let mut mid_clip = Scorer::new(config("vmaf_v0.6.1", 1)).unwrap();
                let good = gray(&at_max, 40, 40, 10);
                let bad = gray(&over, 40, 40, 10);
                assert!(
                    mid_clip.push(&good, &good).is_ok(),
                    "1023 is a valid 10-bit sample"
                );
                match mid_clip.push(&good, &bad) {
                    Err(Error::SampleRange {
                        x: 5,
                        y: 7,
                        value: 1024,
                        bpc: 10,
                        ..
                    }) => {}
                    other => panic!("expected SampleRange, got {other:?}"),
                }
                let bad16 = gray(&over16, 40, 40, 10);
                assert!(matches!(
                    mid_clip.push(&bad16, &good),
                    Err(Error::SampleRange { value: 1024, .. })
                ));
                // That scorer is still usable: one frame in its clip.
                let (rest, summary) = mid_clip.finish().unwrap();
                assert_eq!((rest.len(), summary.frames), (1, 1));
                // And in the carphone clip, an 8-bit clip, a 10-bit frame is a mismatch.
                let bad = gray(&over, 40, 40, 10);
                assert!(scorer.push(&bad, &bad).is_err());
            }
            _ => {}
        }
        frames.extend(scorer.push(&rp, &dp).expect("valid frame"));
    }
    let (rest, summary) = scorer.finish().unwrap();
    frames.extend(rest);
    let mut mm = Mismatches::default();
    let checked = compare(
        "carphone with bad frames",
        &pair.golden(None),
        &frames,
        &summary,
        &mut mm,
    );
    mm.finish(checked);

    // finish() starts a fresh clip: another geometry is accepted now.
    let p = gray(&ok40, 40, 40, 8);
    assert!(scorer.push(&p, &p).is_ok());
    let (rest, summary) = scorer.finish().unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(summary.frames, 1);
    // Identical frames: perfect VIF, no motion.
    assert_eq!(rest[0].get("integer_vif_scale0"), Some(1.0));
    assert_eq!(rest[0].get("integer_motion2"), Some(0.0));
}

#[test]
fn bad_models_are_typed_errors() {
    let dir = std::env::temp_dir().join(format!("vmafgpu-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, b"{ \"model_dict\": [ this is not json").unwrap();
    let cases = [
        ModelSource::Path(garbage.clone()),
        ModelSource::Path(dir.join("does-not-exist.json")),
        ModelSource::Json("not json at all".into()),
        ModelSource::Json("{}".into()),
        ModelSource::Builtin("vmaf_v9".into()),
    ];
    for model in cases {
        let cfg = ScorerConfig {
            model: model.clone(),
            ..Default::default()
        };
        match Scorer::new(cfg) {
            Err(Error::Model(msg)) => assert!(!msg.is_empty()),
            Err(e) => panic!("{model:?}: expected Error::Model, got {e:?}"),
            Ok(_) => panic!("{model:?}: accepted"),
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    // A valid model file by path works.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/vmaf_v0.6.1.json");
    let s = Scorer::new(ScorerConfig {
        model: ModelSource::Path(path),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(s.model_name(), "vmaf_v0.6.1");
}

#[test]
fn unavailable_gpu_backend_is_an_error() {
    use gstvmafgpu::engine::BackendKind;
    // No HIP backend exists: asking for it explicitly is an error, not a silent CPU fallback.
    let cfg = ScorerConfig {
        backend: BackendKind::Hip,
        ..Default::default()
    };
    assert!(matches!(Scorer::new(cfg), Err(Error::Backend(_))));
    let auto = Scorer::new(ScorerConfig::default()).unwrap();
    assert!(!auto.backend_name().is_empty());
}

/// reset() forgets the pending frames and the motion history: after five frames and a reset, the
/// whole clip pushed again scores exactly as a fresh run.
#[test]
fn reset_starts_a_fresh_clip() {
    let pair = BBB360P10;
    let (r, d) = (pair.raw("ref"), pair.raw("dis"));
    let mut scorer = Scorer::new(config("vmaf_v0.6.1", 2)).unwrap();
    for i in 0..5 {
        scorer
            .push(&picture(&pair, &r, i), &picture(&pair, &d, i))
            .unwrap();
    }
    scorer.reset();
    let mut frames = Vec::new();
    for i in 0..pair.frames {
        frames.extend(
            scorer
                .push(&picture(&pair, &r, i), &picture(&pair, &d, i))
                .unwrap(),
        );
    }
    let (rest, summary) = scorer.finish().unwrap();
    frames.extend(rest);
    let mut mm = Mismatches::default();
    let checked = compare(
        "bbb360p10 after reset",
        &pair.golden(None),
        &frames,
        &summary,
        &mut mm,
    );
    mm.finish(checked);
}
