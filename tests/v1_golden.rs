//! VMAF v1 and every libvmaf 3.2.0 built-in model through the engine, against libvmaf 3.2.0's
//! own output (tests/data/goldens/v1, see its UPSTREAM-README.md): every metric of every frame
//! and every pooled value, compared with `==` on f64. Also the standalone `cambi`,
//! `speed_chroma` and `speed_temporal`, the model parameters (`cambi.enc_bitdepth=8`) and the
//! sizes libvmaf cannot score (refused here before any frame is taken).

mod common;

use common::{BBB360P10, BBB720, CARPHONE, Golden, Mismatches, Pair, data_dir};
use gstvmafgpu::engine::{Extras, FrameScores, ModelSource, Scorer, ScorerConfig, Summary};
use gstvmafgpu::model::FeatureOverload;
use gstvmafgpu::{Chroma, ChromaFormat, Error, Picture, PlaneRef};

/// bbb720 as 10-bit samples `x << 2` (the goldens' `up10`).
const BBB720UP10: Pair = Pair {
    name: "bbb720up10",
    width: 1280,
    height: 720,
    bpc: 10,
    frames: 48,
};

/// The raw I420 frames of a pair's side; `up10` from bbb720's 8-bit file.
fn raw(pair: &Pair, side: &str) -> Vec<u8> {
    if pair.name == BBB720UP10.name {
        return BBB720
            .raw(side)
            .iter()
            .flat_map(|&x| (u16::from(x) << 2).to_le_bytes())
            .collect();
    }
    pair.raw(side)
}

fn frame_bytes(pair: &Pair) -> usize {
    let bps = if pair.bpc > 8 { 2 } else { 1 };
    (pair.width * pair.height + 2 * pair.width.div_ceil(2) * pair.height.div_ceil(2)) * bps
}

fn picture<'a>(pair: &Pair, raw: &'a [u8], i: usize) -> Picture<'a> {
    let bps = if pair.bpc > 8 { 2 } else { 1 };
    let n = frame_bytes(pair);
    let f = &raw[i * n..(i + 1) * n];
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

fn golden(stem: &str) -> Golden {
    let file = data_dir().join(format!("goldens/v1/{stem}.json"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    Golden(serde_json::from_str(&text).unwrap())
}

fn score(pair: &Pair, cfg: ScorerConfig) -> (Vec<FrameScores>, Summary) {
    let (r, d) = (raw(pair, "ref"), raw(pair, "dis"));
    let mut scorer = Scorer::new(cfg).expect("scorer");
    let mut frames = Vec::new();
    for i in 0..pair.frames {
        frames.extend(
            scorer
                .push(&picture(pair, &r, i), &picture(pair, &d, i))
                .expect("push"),
        );
    }
    let (rest, summary) = scorer.finish().expect("finish");
    frames.extend(rest);
    (frames, summary)
}

/// Every metric libvmaf reports for every frame, and its pooled values, equal ours; we report
/// nothing libvmaf does not. Returns the number of values compared.
fn compare(
    mm: &mut Mismatches,
    what: &str,
    g: &Golden,
    frames: &[FrameScores],
    summary: &Summary,
) -> usize {
    let mut checked = 0;
    if frames.len() != g.frames() {
        mm.0.push(format!(
            "{what}: {} frames, libvmaf {}",
            frames.len(),
            g.frames()
        ));
        return 0;
    }
    let names = g.metric_names();
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.index, i as u64);
        // (serde_json's map sorts the golden's keys: compare the sets.)
        let mut ours: Vec<&str> = f.metrics.iter().map(|(n, _)| n.as_str()).collect();
        ours.sort_unstable();
        if ours != names {
            mm.0.push(format!(
                "{what} frame {i}: metrics {ours:?}, libvmaf {names:?}"
            ));
        }
        for n in &names {
            let want = g.frame(i, n).unwrap();
            match f.get(n) {
                Some(got) => mm.check(|| format!("{what} frame {i} {n}"), got, want),
                None => mm.0.push(format!("{what} frame {i}: no {n}")),
            }
            checked += 1;
        }
    }
    for n in &names {
        for stat in ["min", "max", "mean", "harmonic_mean"] {
            let want = g.pooled(n, stat).unwrap();
            let got = summary.get(n).map(|s| match stat {
                "min" => s.min,
                "max" => s.max,
                "mean" => s.mean,
                _ => s.harmonic_mean,
            });
            match got {
                Some(got) => mm.check(|| format!("{what} pooled {stat} {n}"), got, want),
                None => mm.0.push(format!("{what}: no pooled {n}")),
            }
            checked += 1;
        }
    }
    checked
}

const V1: [&str; 8] = [
    "vmaf_v1.0.16_3d0h",
    "vmaf_v1.0.16_3d0h_2160",
    "vmaf_v1.0.16_5d0h",
    "vmaf_v1.0.16_1d5h_2160",
    "vmaf_v1.0.16_hfr_3d0h",
    "vmaf_v1.0.16_hfr_3d0h_2160",
    "vmaf_v1.0.16_hfr_5d0h",
    "vmaf_v1.0.16_hfr_1d5h_2160",
];

fn model_cfg(model: &str, params: &str) -> ScorerConfig {
    ScorerConfig {
        model: ModelSource::Builtin(model.into()),
        model_params: FeatureOverload::parse_list(params).unwrap(),
        threads: 2,
        ..Default::default()
    }
}

fn check_models(pair: &Pair, models: &[&str]) {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for m in models {
        let stem = format!("{}_v3.2.0_{m}", pair.name);
        let (frames, summary) = score(pair, model_cfg(m, ""));
        checked += compare(&mut mm, &stem, &golden(&stem), &frames, &summary);
    }
    mm.finish(checked);
}

#[test]
fn v1_models_bbb360p10() {
    check_models(&BBB360P10, &V1);
}

#[test]
fn v1_models_bbb720() {
    check_models(&BBB720, &V1);
}

#[test]
fn v1_models_bbb720up10() {
    check_models(&BBB720UP10, &V1);
}

#[test]
fn vmaf_4k_v061neg_every_pair() {
    check_models(&BBB360P10, &["vmaf_4k_v0.6.1neg"]);
    check_models(&BBB720, &["vmaf_4k_v0.6.1neg"]);
    check_models(&CARPHONE, &["vmaf_4k_v0.6.1neg"]);
}

/// models_v1.md's override for an 8-bit encode measured at 10 bits.
#[test]
fn v1_enc_bitdepth_8_model_parameter() {
    let stem = "bbb720up10_v3.2.0_vmaf_v1.0.16_3d0h_encbd8";
    let (frames, summary) = score(
        &BBB720UP10,
        model_cfg("vmaf_v1.0.16_3d0h", "cambi.enc_bitdepth=8"),
    );
    let mut mm = Mismatches::default();
    let checked = compare(&mut mm, stem, &golden(stem), &frames, &summary);
    mm.finish(checked);
}

/// `--feature cambi`, `speed_chroma`, `speed_temporal` with their default options (the model's
/// own metrics are not in these goldens, so only the standalone ones are compared).
#[test]
fn standalone_metrics() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    let runs: [(&Pair, &str, Extras); 8] = [
        (
            &BBB360P10,
            "cambi",
            Extras {
                cambi: true,
                ..Default::default()
            },
        ),
        (
            &BBB720,
            "cambi",
            Extras {
                cambi: true,
                ..Default::default()
            },
        ),
        (
            &BBB720UP10,
            "cambi",
            Extras {
                cambi: true,
                ..Default::default()
            },
        ),
        (
            &BBB360P10,
            "speed_chroma",
            Extras {
                speed_chroma: true,
                ..Default::default()
            },
        ),
        (
            &BBB720,
            "speed_chroma",
            Extras {
                speed_chroma: true,
                ..Default::default()
            },
        ),
        (
            &BBB360P10,
            "speed_temporal",
            Extras {
                speed_temporal: true,
                ..Default::default()
            },
        ),
        (
            &BBB720,
            "speed_temporal",
            Extras {
                speed_temporal: true,
                ..Default::default()
            },
        ),
        (
            &CARPHONE,
            "speed_temporal",
            Extras {
                speed_temporal: true,
                ..Default::default()
            },
        ),
    ];
    for (pair, metric, extras) in runs {
        let stem = format!("{}_v3.2.0_{metric}", pair.name);
        let g = golden(&stem);
        let names = g.metric_names();
        let (frames, summary) = score(
            pair,
            ScorerConfig {
                extras,
                threads: 2,
                ..Default::default()
            },
        );
        assert_eq!(frames.len(), g.frames(), "{stem}");
        for (i, f) in frames.iter().enumerate() {
            for n in &names {
                let got = f.get(n).unwrap_or_else(|| panic!("{stem}: no {n}"));
                mm.check(
                    || format!("{stem} frame {i} {n}"),
                    got,
                    g.frame(i, n).unwrap(),
                );
                checked += 1;
            }
        }
        for n in &names {
            let s = summary.get(n).unwrap();
            mm.check(
                || format!("{stem} mean {n}"),
                s.mean,
                g.pooled(n, "mean").unwrap(),
            );
            checked += 1;
        }
    }
    mm.finish(checked);
}

/// The standalone metrics and a v1 model at once: each under its own name, the same numbers as
/// alone.
#[test]
fn standalone_beside_a_v1_model() {
    let mut cfg = model_cfg("vmaf_v1.0.16_3d0h", "");
    cfg.extras = Extras {
        cambi: true,
        speed_chroma: true,
        speed_temporal: true,
    };
    let (frames, _) = score(&BBB360P10, cfg);
    let model = golden("bbb360p10_v3.2.0_vmaf_v1.0.16_3d0h");
    let cambi = golden("bbb360p10_v3.2.0_cambi");
    let temporal = golden("bbb360p10_v3.2.0_speed_temporal");
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (i, f) in frames.iter().enumerate() {
        for (g, n) in [
            (&model, "vmaf"),
            (&model, "cambi_hrs_1080_cmxv_17_vlt_0.06"),
            (&cambi, "cambi"),
            (&temporal, "speed_temporal"),
        ] {
            mm.check(
                || format!("frame {i} {n}"),
                f.get(n).unwrap_or(f64::NAN),
                g.frame(i, n).unwrap(),
            );
            checked += 1;
        }
        assert!(f.get("speed_chroma_uv").is_some());
    }
    mm.finish(checked);
}

/// Frames libvmaf cannot score with v1 (CAMBI below 216 pixels in both dimensions; SpEED whose
/// operating size is under 5x5, where libvmaf crashes) are refused at the first push with an
/// error naming the metric and the size; nothing is taken.
#[test]
fn v1_refuses_what_libvmaf_cannot_score() {
    let (r, d) = (CARPHONE.raw("ref"), CARPHONE.raw("dis"));
    for m in V1 {
        let mut s = Scorer::new(model_cfg(m, "")).unwrap();
        let e = s
            .push(&picture(&CARPHONE, &r, 0), &picture(&CARPHONE, &d, 0))
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("cambi") && text.contains("176") && text.contains("144"),
            "{m}: {text}"
        );
        assert_eq!(s.frames_pushed(), 0);
    }
    // speed_chroma alone at 176x144 (chroma 88x72: operating size 5x4).
    let mut s = Scorer::new(ScorerConfig {
        extras: Extras {
            speed_chroma: true,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    let e = s
        .push(&picture(&CARPHONE, &r, 0), &picture(&CARPHONE, &d, 0))
        .unwrap_err();
    assert!(e.to_string().contains("speed_chroma"), "{e}");
    // GRAY input for a v1 model: no chroma for SpEED.
    let (w, h) = (640, 360);
    let y = vec![100u8; w * h];
    let gray = Picture {
        width: w,
        height: h,
        bpc: 8,
        format: ChromaFormat::Gray,
        luma: PlaneRef {
            data: &y,
            stride: w,
        },
        chroma: Chroma::None,
    };
    let mut s = Scorer::new(model_cfg("vmaf_v1.0.16_3d0h", "")).unwrap();
    assert!(s.needs_chroma());
    match s.push(&gray, &gray) {
        Err(Error::Unsupported { metric, .. }) => assert_eq!(metric, "speed_chroma"),
        other => panic!("GRAY with v1: {other:?}"),
    }
}

/// Every built-in model loads by name in the engine and scores a frame.
#[test]
fn every_builtin_model_scores() {
    let (r, d) = (BBB360P10.raw("ref"), BBB360P10.raw("dis"));
    for m in gstvmafgpu::model::BUILTIN_MODELS {
        let mut s = Scorer::new(model_cfg(m, "")).unwrap();
        for i in 0..2 {
            s.push(&picture(&BBB360P10, &r, i), &picture(&BBB360P10, &d, i))
                .unwrap();
        }
        let (frames, summary) = s.finish().unwrap();
        assert_eq!(summary.frames, 2, "{m}");
        assert!(frames.iter().all(|f| f.vmaf().is_finite()), "{m}");
    }
}
