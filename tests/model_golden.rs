//! The model and pooling code against libvmaf 3.2.0's numbers, compared with `==` on f64.
//!
//! No pixels are needed: each golden frame's feature values (as libvmaf computed and printed them,
//! `%.17g`) go into the model, and every model output must equal libvmaf's. Pooling is checked the
//! same way on every metric of every golden file. tests/data/model/ adds libvmaf runs with the
//! `disable_clip` and `enable_transform` model options (see its README).

mod common;

use std::path::PathBuf;

use common::{Golden, Mismatches, PAIRS, data_dir};
use gstvmafgpu::Error;
use gstvmafgpu::model::{
    BUILTIN_MODELS, Model, PoolAccumulator, PoolMethod, PredictOptions, pool, pool_all,
};

/// Feed every frame of `golden` into `model` and compare every model output.
fn check_model(
    mm: &mut Mismatches,
    what: &str,
    golden: &Golden,
    model: &Model,
    opts: &PredictOptions,
) -> usize {
    let mut checked = 0;
    for i in 0..golden.frames() {
        let p = model
            .predict_with(|f| golden.frame(i, &f.name), opts)
            .unwrap_or_else(|e| panic!("{what} frame {i}: {e}"));
        for (name, got) in p.named(model) {
            match golden.frame(i, &name) {
                Some(want) => mm.check(|| format!("{what} frame {i} {name}"), got, want),
                None => {
                    mm.0.push(format!("{what} frame {i}: libvmaf reports no {name}"))
                }
            }
            checked += 1;
        }
    }
    // libvmaf reports nothing we do not.
    let ours = model.output_names();
    for name in golden.metric_names() {
        if name.starts_with("vmaf") && !ours.contains(&name) {
            mm.0.push(format!(
                "{what}: libvmaf reports {name}, the model does not"
            ));
        }
    }
    checked
}

#[test]
fn vmaf_v061_every_pair() {
    let model = Model::builtin("vmaf_v0.6.1").unwrap();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for pair in PAIRS {
        let golden = pair.golden(None);
        checked += check_model(
            &mut mm,
            pair.name,
            &golden,
            &model,
            &PredictOptions::default(),
        );
    }
    mm.finish(checked);
}

#[test]
fn carphone_other_builtin_models() {
    let pair = common::CARPHONE;
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for name in ["vmaf_v0.6.1neg", "vmaf_4k_v0.6.1", "vmaf_b_v0.6.3"] {
        let model = Model::builtin(name).unwrap();
        let golden = pair.golden(Some(name));
        checked += check_model(&mut mm, name, &golden, &model, &PredictOptions::default());
    }
    mm.finish(checked);
}

#[test]
fn bootstrap_outputs_are_all_reported() {
    let model = Model::builtin("vmaf_b_v0.6.3").unwrap();
    let golden = common::CARPHONE.golden(Some("vmaf_b_v0.6.3"));
    let mut want: Vec<String> = golden
        .metric_names()
        .into_iter()
        .filter(|n| n.starts_with("vmaf"))
        .collect();
    let mut got = model.output_names().to_vec();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(model.output_names().len(), 25);
}

/// Files in tests/data/model: (file, model, options).
const SWITCH_RUNS: [(&str, &str, PredictOptions); 9] = {
    const fn o(disable_clip: bool, enable_transform: bool) -> PredictOptions {
        PredictOptions {
            disable_clip,
            enable_transform,
        }
    }
    [
        (
            "carphone_dis_vmaf_v0.6.1_enable_transform",
            "vmaf_v0.6.1",
            o(false, true),
        ),
        ("carphone_ref_vmaf_v0.6.1", "vmaf_v0.6.1", o(false, false)),
        (
            "carphone_ref_vmaf_v0.6.1_disable_clip",
            "vmaf_v0.6.1",
            o(true, false),
        ),
        (
            "carphone_ref_vmaf_v0.6.1_enable_transform",
            "vmaf_v0.6.1",
            o(false, true),
        ),
        (
            "carphone_ref_vmaf_v0.6.1_disable_clip_enable_transform",
            "vmaf_v0.6.1",
            o(true, true),
        ),
        (
            "carphone_dis_vmaf_b_v0.6.3_enable_transform",
            "vmaf_b_v0.6.3",
            o(false, true),
        ),
        (
            "carphone_ref_vmaf_b_v0.6.3",
            "vmaf_b_v0.6.3",
            o(false, false),
        ),
        (
            "carphone_ref_vmaf_b_v0.6.3_disable_clip",
            "vmaf_b_v0.6.3",
            o(true, false),
        ),
        (
            "carphone_ref_vmaf_b_v0.6.3_disable_clip_enable_transform",
            "vmaf_b_v0.6.3",
            o(true, true),
        ),
    ]
};

fn switch_golden(file: &str) -> Golden {
    let path = data_dir().join(format!("model/{file}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Golden(serde_json::from_str(&text).unwrap())
}

#[test]
fn disable_clip_and_enable_transform_match_libvmaf() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (file, model, opts) in SWITCH_RUNS {
        let golden = switch_golden(file);
        let model = Model::builtin(model).unwrap();
        checked += check_model(&mut mm, file, &golden, &model, &opts);
    }
    mm.finish(checked);
}

/// The switches change the scores where libvmaf's do (a check that the runs above are not all
/// the same numbers, so the comparison tests what it claims to).
#[test]
fn switches_have_effect() {
    let ref_default = switch_golden("carphone_ref_vmaf_v0.6.1");
    let m = Model::builtin("vmaf_v0.6.1").unwrap();
    let b = Model::builtin("vmaf_b_v0.6.3").unwrap();
    let frames = ref_default.frames();
    let run = |m: &Model, g: &Golden, i: usize, disable_clip, enable_transform| {
        m.predict_with(
            |f| g.frame(i, &f.name),
            &PredictOptions {
                disable_clip,
                enable_transform,
            },
        )
        .unwrap()
    };
    let (mut clipped, mut above, mut transformed) = (0, 0, 0);
    for i in 0..frames {
        let plain = run(&m, &ref_default, i, false, false).vmaf;
        let unclipped = run(&m, &ref_default, i, true, false).vmaf;
        let both = run(&m, &ref_default, i, true, true).vmaf;
        assert!(plain <= 100.0);
        if plain == 100.0 {
            clipped += 1;
        }
        if unclipped > 100.0 {
            above += 1;
            assert_eq!(plain, 100.0);
        } else {
            assert_eq!(plain, unclipped);
        }
        // vmaf_v0.6.1's transform is rectified (out_gte_in): never below its input.
        assert!(both >= unclipped);
        if both > unclipped {
            transformed += 1;
        }

        // Bootstrap: every output clipped by default, some above 100 without the clip.
        let bp = run(&b, &ref_default, i, false, false).bootstrap.unwrap();
        let bu = run(&b, &ref_default, i, true, false).bootstrap.unwrap();
        for v in bp
            .models
            .iter()
            .chain([&bp.bagging, &bp.ci_p95_lo, &bp.ci_p95_hi])
        {
            assert!((0.0..=100.0).contains(v));
        }
        assert!(bu.ci_p95_hi > 100.0);
    }
    assert!(
        clipped > 0 && above > 0 && transformed > 0,
        "{clipped} {above} {transformed}"
    );

    // On the distorted clip the transform raises every score.
    let dis = common::CARPHONE.golden(None);
    for i in 0..dis.frames() {
        let plain = run(&m, &dis, i, false, false).vmaf;
        let t = run(&m, &dis, i, false, true).vmaf;
        assert!(t > plain, "frame {i}: {t} vs {plain}");
    }
}

/// Every file with libvmaf's pooled numbers.
fn all_goldens() -> Vec<(String, Golden)> {
    let mut v = Vec::new();
    for pair in PAIRS {
        v.push((pair.name.to_string(), pair.golden(None)));
    }
    for m in ["vmaf_v0.6.1neg", "vmaf_4k_v0.6.1", "vmaf_b_v0.6.3"] {
        v.push((format!("carphone {m}"), common::CARPHONE.golden(Some(m))));
    }
    for (file, _, _) in SWITCH_RUNS {
        v.push((file.to_string(), switch_golden(file)));
    }
    v
}

#[test]
fn pooling_matches_golden() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (what, golden) in all_goldens() {
        for metric in golden.metric_names() {
            let values: Vec<f64> = (0..golden.frames())
                .map(|i| {
                    golden
                        .frame(i, &metric)
                        .unwrap_or_else(|| panic!("{what}: frame {i} has no {metric}"))
                })
                .collect();
            let stats = pool_all(&values);
            let mut acc = PoolAccumulator::new();
            for &v in &values {
                acc.push(v);
            }
            assert_eq!(acc.count(), values.len() as u64);
            for m in PoolMethod::ALL {
                let want = golden
                    .pooled(&metric, m.name())
                    .unwrap_or_else(|| panic!("{what}: no pooled {} {metric}", m.name()));
                mm.check(
                    || format!("{what} {metric} {}", m.name()),
                    stats.get(m),
                    want,
                );
                mm.check(
                    || format!("{what} {metric} {} (pool)", m.name()),
                    pool(&values, m),
                    want,
                );
                mm.check(
                    || format!("{what} {metric} {} (acc)", m.name()),
                    acc.get(m),
                    want,
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}

/// Every number in the model files and golden JSON parses to the same f64 through serde_json as
/// through a correctly rounded parser (serde_json's default parser is not; the crate enables its
/// float_roundtrip feature). Without this, a coefficient could be one ulp off.
#[test]
fn json_numbers_parse_exactly() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = BUILTIN_MODELS
        .iter()
        .map(|m| root.join(format!("models/{m}.json")))
        .collect();
    for dir in ["goldens", "model"] {
        for e in std::fs::read_dir(data_dir().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for tok in json_number_tokens(&text) {
            let want: f64 = tok.parse().unwrap();
            let got: f64 = serde_json::from_str(tok).unwrap();
            mm.check(|| format!("{} {tok}", path.display()), got, want);
            checked += 1;
        }
    }
    mm.finish(checked);
}

/// The number tokens of a JSON text (outside strings).
fn json_number_tokens(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                out.push(&text[start..i]);
            }
            _ => i += 1,
        }
    }
    out
}

fn model_err(r: gstvmafgpu::Result<Model>) -> String {
    match r {
        Err(Error::Model(s)) => s,
        Err(e) => panic!("expected Error::Model, got {e:?}"),
        Ok(_) => panic!("expected Error::Model, the model loaded"),
    }
}

#[test]
fn bad_model_json_is_a_typed_error() {
    let good: serde_json::Value =
        serde_json::from_str(include_str!("../models/vmaf_v0.6.1.json")).unwrap();
    let with = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        edit(&mut v);
        v.to_string()
    };
    fn md(v: &mut serde_json::Value) -> &mut serde_json::Map<String, serde_json::Value> {
        v["model_dict"].as_object_mut().unwrap()
    }
    let cases: Vec<(String, &str)> = vec![
        ("".into(), "not a JSON model object"),
        ("{\"model_dict\": ".into(), "EOF"),
        ("[1, 2]".into(), "not a JSON model object"),
        ("{}".into(), "neither a model"),
        ("{\"0\": {}}".into(), "collection model \"0\""),
        (with(&|v| drop(md(v).remove("norm_type"))), "norm_type"),
        (
            with(&|v| drop(md(v).insert("norm_type".into(), "cubic".into()))),
            "cubic",
        ),
        (
            with(&|v| drop(md(v).insert("model_type".into(), "XGBOOST".into()))),
            "XGBOOST",
        ),
        (
            with(&|v| drop(md(v).insert("slopes".into(), "x".into()))),
            "invalid type",
        ),
        (
            with(&|v| drop(md(v).insert("slopes".into(), serde_json::json!([1.0, 2.0])))),
            "slopes",
        ),
        (with(&|v| drop(md(v).remove("model"))), "libsvm model text"),
        (
            with(&|v| drop(md(v).insert("model".into(), "garbage".into()))),
            "libsvm model",
        ),
        (
            with(&|v| drop(md(v).insert("score_clip".into(), serde_json::json!([0.0])))),
            "score_clip",
        ),
        (
            with(&|v| {
                md(v)["feature_names"][0] = "VMAF_feature_adm2_score".into();
            }),
            "VMAF_feature_adm2_score",
        ),
        (
            with(&|v| {
                md(v).insert(
                    "feature_opts_dicts".into(),
                    serde_json::json!([{"adm_enhn_gain_limit": 0.5}]),
                );
            }),
            "adm_enhn_gain_limit",
        ),
        (
            with(&|v| drop(md(v).insert("chroma_correction_parameter".into(), 1.0.into()))),
            "chroma_correction_parameter",
        ),
    ];
    for (text, needle) in &cases {
        let e = model_err(Model::from_json(text));
        assert!(e.starts_with("JSON string: "), "{e}");
        assert!(e.contains(needle), "{text:.80}: {e:?} lacks {needle:?}");
    }

    // A collection whose members disagree, or that is not a bootstrap collection.
    let b: serde_json::Value =
        serde_json::from_str(include_str!("../models/vmaf_b_v0.6.3.json")).unwrap();
    let mut mixed = b.clone();
    mixed["3"]["model_dict"]["model_type"] = "LIBSVMNUSVR".into();
    let e = model_err(Model::from_json(&mixed.to_string()));
    assert!(e.contains("\"3\""), "{e}");
    let mut plain = b.clone();
    for i in 1..=20 {
        plain[i.to_string()]["model_dict"]["model_type"] = "LIBSVMNUSVR".into();
    }
    let e = model_err(Model::from_json(&plain.to_string()));
    assert!(e.contains("BOOTSTRAP"), "{e}");

    // Files: unreadable, and unparsable (the message names the path and has serde's position).
    let dir = std::env::temp_dir().join(format!("vmafgpu-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.json");
    let e = model_err(Model::from_path(&missing));
    assert!(e.contains(&missing.display().to_string()), "{e}");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        "{\"model_dict\": {\"norm_type\": \"linear_rescale\",,}}",
    )
    .unwrap();
    let e = model_err(Model::from_path(&bad));
    assert!(
        e.contains(&bad.display().to_string()) && e.contains("line 1 column"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let e = model_err(Model::builtin("vmaf_v9"));
    assert!(e.contains("vmaf_v9") && e.contains("vmaf_b_v0.6.3"), "{e}");

    // predict with the wrong number of values, or a missing one.
    let m = Model::builtin("vmaf_v0.6.1").unwrap();
    assert!(matches!(
        m.predict(&[0.5; 5], &PredictOptions::default()),
        Err(Error::Model(_))
    ));
    let r = m.predict_with(
        |f| (f.name != "integer_motion2").then_some(0.5),
        &PredictOptions::default(),
    );
    assert!(matches!(r, Err(Error::Model(s)) if s.contains("integer_motion2")));
}

/// The same model loads the same from a file, from its text and built in.
#[test]
fn from_path_and_from_json_equal_builtin() {
    for name in BUILTIN_MODELS {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("models/{name}.json"));
        let a = Model::from_path(&path).unwrap();
        let b = Model::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let c = Model::builtin(name).unwrap();
        assert_eq!(a.features(), c.features());
        assert_eq!(a.output_names(), c.output_names());
        assert_eq!(a.source(), path.display().to_string());
        assert_eq!(b.source(), "JSON string");
        assert_eq!(c.source(), format!("built-in {name}"));
        // Same numbers on the golden frames (a v1 model on a v1 golden of its own).
        let g = if name.starts_with("vmaf_v1") {
            v1_golden(&format!("bbb720_v3.2.0_{name}"))
        } else {
            common::CARPHONE.golden(None)
        };
        let opts = PredictOptions::default();
        for i in [0, g.frames() / 2, g.frames() - 1] {
            let f = |f: &gstvmafgpu::model::ModelFeature| {
                g.frame(i, &f.name)
                    .or_else(|| g.frame(i, &f.name.replace("_egl_1", "")))
            };
            let pa = a.predict_with(f, &opts).unwrap();
            assert_eq!(pa, c.predict_with(f, &opts).unwrap());
            assert_eq!(pa, b.predict_with(f, &opts).unwrap());
        }
    }
}

/// Every v1 golden in tests/data/goldens/v1 with a model: (file stem, built-in model, model
/// parameters).
fn v1_model_goldens() -> Vec<(String, &'static str, &'static str)> {
    let mut v = Vec::new();
    for pair in ["bbb360p10", "bbb720", "bbb720up10"] {
        for m in [
            "vmaf_v1.0.16_3d0h",
            "vmaf_v1.0.16_3d0h_2160",
            "vmaf_v1.0.16_5d0h",
            "vmaf_v1.0.16_1d5h_2160",
            "vmaf_v1.0.16_hfr_3d0h",
            "vmaf_v1.0.16_hfr_3d0h_2160",
            "vmaf_v1.0.16_hfr_5d0h",
            "vmaf_v1.0.16_hfr_1d5h_2160",
        ] {
            v.push((format!("{pair}_v3.2.0_{m}"), m, ""));
        }
    }
    v.push((
        "bbb720up10_v3.2.0_vmaf_v1.0.16_3d0h_encbd8".into(),
        "vmaf_v1.0.16_3d0h",
        "cambi.enc_bitdepth=8",
    ));
    for pair in ["bbb360p10", "bbb720", "carphone"] {
        v.push((
            format!("{pair}_v3.2.0_vmaf_4k_v0.6.1neg"),
            "vmaf_4k_v0.6.1neg",
            "",
        ));
    }
    v
}

fn v1_golden(stem: &str) -> Golden {
    let file = data_dir().join(format!("goldens/v1/{stem}.json"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    Golden(serde_json::from_str(&text).unwrap())
}

/// The v1 models (and vmaf_4k_v0.6.1neg) on libvmaf's own feature values: option-suffixed
/// feature names, chroma correction, the transform and the [0,110] clip give libvmaf's VMAF on
/// every frame of every v1 golden.
#[test]
fn v1_models_on_libvmafs_features() {
    use gstvmafgpu::model::FeatureOverload;
    let mut mm = Mismatches::default();
    let mut checked = 0;
    let mut corrected = 0;
    for (stem, name, params) in v1_model_goldens() {
        let overloads = FeatureOverload::parse_list(params).unwrap();
        let model = Model::builtin_with(name, &overloads).unwrap();
        let golden = v1_golden(&stem);
        // Every feature the model reads is in the golden under the name we give it.
        for f in model.features() {
            if golden.frame(0, &f.name).is_none() {
                mm.0.push(format!("{stem}: libvmaf reports no {}", f.name));
            }
        }
        checked += check_model(&mut mm, &stem, &golden, &model, &PredictOptions::default());
        corrected += (0..golden.frames())
            .filter(|&i| {
                model.features().iter().any(|f| {
                    f.name.starts_with("speed_chroma_uv") && golden.frame(i, &f.name) == Some(0.0)
                })
            })
            .count();
    }
    // The chroma correction is taken on many frames (speed_chroma singular at 640x360 for the
    // prescaled models) and not taken on the others.
    assert!(
        corrected > 40,
        "chroma correction taken on only {corrected} frames"
    );
    mm.finish(checked);
}

/// Without the chroma correction the frames where speed_chroma is 0 would not reproduce: the
/// correction changes VMAF there (a check that the test above can fail).
#[test]
fn chroma_correction_changes_the_score() {
    let model = Model::builtin("vmaf_v1.0.16_5d0h").unwrap();
    let golden = v1_golden("bbb360p10_v3.2.0_vmaf_v1.0.16_5d0h");
    let mut text: serde_json::Value =
        serde_json::from_str(include_str!("../models/vmaf_v1.0.16_5d0h.json")).unwrap();
    text["model_dict"]
        .as_object_mut()
        .unwrap()
        .remove("chroma_correction_parameter");
    let plain = Model::from_json(&text.to_string()).unwrap();
    let opts = PredictOptions::default();
    let mut differ = 0;
    for i in 0..golden.frames() {
        let a = model
            .predict_with(|f| golden.frame(i, &f.name), &opts)
            .unwrap();
        let b = plain
            .predict_with(|f| golden.frame(i, &f.name), &opts)
            .unwrap();
        assert_eq!(Some(a.vmaf), golden.frame(i, "vmaf"), "frame {i}");
        if a.vmaf != b.vmaf {
            differ += 1;
        }
    }
    assert_eq!(
        differ,
        golden.frames(),
        "speed_chroma is 0 on every frame here"
    );
}

#[test]
fn v1_pooling_matches_golden() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (stem, _, _) in v1_model_goldens() {
        let golden = v1_golden(&stem);
        for metric in golden.metric_names() {
            let values: Vec<f64> = (0..golden.frames())
                .map(|i| golden.frame(i, &metric).unwrap())
                .collect();
            let stats = pool_all(&values);
            for m in PoolMethod::ALL {
                let want = golden.pooled(&metric, m.name()).unwrap();
                mm.check(
                    || format!("{stem} {metric} {}", m.name()),
                    stats.get(m),
                    want,
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}
