//! ADM with the VMAF v1.0.16 options against libvmaf 3.2.0 (tests/data/goldens/v1/): for every
//! `*_vmaf_v1.0.16_*` golden of bbb360p10, bbb720 and bbb720up10, every frame's
//! `integer_adm2`, `integer_adm3`, `integer_aim` and `integer_adm_scale0..3` (with the key
//! suffix libvmaf gives them, e.g. `_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_nvd_1.5_rdh_2160`),
//! computed by `features::adm` on the luma planes with the options of the model file
//! (`models/vmaf_v1.0.16_*.json`, `feature_opts_dicts`: `adm_csf_mode` 2, the blended
//! Barten-Watson CSF); and the ADM values of the vmaf_4k_v0.6.1neg goldens (Watson CSF,
//! `adm_enhn_gain_limit` 1). Every value is compared with `==`.

mod common;

use std::collections::BTreeMap;

use common::{BBB360P10, BBB720, CARPHONE, Golden, Mismatches, Pair, data_dir};
use gstvmafgpu::features::adm::{self, AdmParams};
use gstvmafgpu::picture::OwnedPlane;

const NAMES: [&str; 7] = [
    "integer_adm2",
    "integer_adm3",
    "integer_aim",
    "integer_adm_scale0",
    "integer_adm_scale1",
    "integer_adm_scale2",
    "integer_adm_scale3",
];

fn load_json(rel: &str) -> serde_json::Value {
    let path = data_dir().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ADM options of a model file: the `feature_opts_dicts` entry of its ADM feature, over
/// libvmaf's defaults. Any `adm_` option this test does not know fails it.
fn model_adm_params(model: &str) -> AdmParams {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("models/{model}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let md = &v["model_dict"];
    let names = md["feature_names"].as_array().expect("feature_names");
    let opts = md["feature_opts_dicts"]
        .as_array()
        .expect("feature_opts_dicts");
    let adm: Vec<_> = names
        .iter()
        .zip(opts)
        .filter(|(n, _)| n.as_str().unwrap().contains("integer_feature_adm"))
        .map(|(_, o)| o.as_object().unwrap())
        .collect();
    assert!(!adm.is_empty(), "{model}: no ADM feature");
    let mut p = AdmParams::default();
    for o in &adm {
        assert_eq!(*o, adm[0], "{model}: ADM features with different options");
    }
    for (k, val) in adm[0] {
        let f = val
            .as_f64()
            .unwrap_or_else(|| panic!("{model}: {k} = {val}"));
        match k.as_str() {
            "adm_enhn_gain_limit" => p.enhn_gain_limit = f,
            "adm_norm_view_dist" => p.norm_view_dist = f,
            "adm_ref_display_height" => p.ref_display_height = f as u32,
            "adm_noise_weight" => p.noise_weight = f,
            "adm_dlm_weight" => p.dlm_weight = f,
            "adm_min_val" => p.min_val = f,
            "adm_csf_mode" => p.csf_mode = f as i32,
            other => panic!("{model}: ADM option {other} unknown to this test"),
        }
    }
    p.validate().unwrap_or_else(|e| panic!("{model}: {e}"));
    p
}

/// The luma frames of a pair; `up10`: bbb720 made 10-bit as UPSTREAM-README.md says (every
/// sample `x << 2`).
fn luma(pair: Pair, up10: bool) -> Vec<OwnedPlane> {
    let mut frames = pair.luma_frames("ref");
    frames.extend(pair.luma_frames("dis"));
    if up10 {
        for f in &mut frames {
            assert_eq!(f.bpc, 8);
            f.data.iter_mut().for_each(|x| *x <<= 2);
            f.bpc = 10;
        }
    }
    frames
}

/// The metric-name suffix libvmaf gave the ADM outputs in this golden (the one key that starts
/// with `integer_adm2`), checked to be present for all seven names.
fn suffix(g: &Golden, file: &str) -> String {
    let keys: Vec<String> = g
        .metric_names()
        .into_iter()
        .filter(|k| k.starts_with("integer_adm2"))
        .collect();
    assert_eq!(keys.len(), 1, "{file}: ADM keys {keys:?}");
    let s = keys[0]["integer_adm2".len()..].to_string();
    for n in NAMES {
        assert!(
            g.frame(0, &format!("{n}{s}")).is_some(),
            "{file}: no {n}{s}"
        );
    }
    s
}

/// Compare every frame of every golden in `goldens` (file name, model name); the scores are
/// computed once per distinct parameter set. Returns the number of values compared.
fn check(pair: Pair, up10: bool, goldens: &[(String, String)], mm: &mut Mismatches) -> usize {
    let frames = luma(pair, up10);
    let (refs, dists) = frames.split_at(pair.frames);
    assert_eq!(refs.len(), pair.frames);
    assert_eq!(dists.len(), pair.frames);
    let mut cache: BTreeMap<String, Vec<[f64; 7]>> = BTreeMap::new();
    let mut checked = 0;
    for (file, model) in goldens {
        let p = model_adm_params(model);
        let scores = cache.entry(format!("{p:?}")).or_insert_with(|| {
            refs.iter()
                .zip(dists)
                .map(|(r, d)| {
                    let s = adm::try_compute(r.view(), d.view(), &p)
                        .unwrap_or_else(|e| panic!("{file}: {e}"))
                        .scores(&p, pair.width, pair.height);
                    [
                        s.adm2, s.adm3, s.aim, s.scale[0], s.scale[1], s.scale[2], s.scale[3],
                    ]
                })
                .collect()
        });
        let g = Golden(load_json(&format!("goldens/{file}")));
        assert_eq!(g.frames(), pair.frames, "{file}");
        let sfx = suffix(&g, file);
        for (i, s) in scores.iter().enumerate() {
            for (n, &got) in NAMES.iter().zip(s) {
                let name = format!("{n}{sfx}");
                let want = g
                    .frame(i, &name)
                    .unwrap_or_else(|| panic!("{file} frame {i}: no {name}"));
                mm.check(|| format!("{file} frame {i} {name}"), got, want);
                checked += 1;
            }
        }
    }
    checked
}

/// The v1.0.16 goldens of a pair (`name` as in the file names): (file under goldens/, model).
/// `_encbd8` is the 3d0h model with a CAMBI override (UPSTREAM-README.md), so its ADM options
/// are 3d0h's.
fn v1_goldens(name: &str) -> Vec<(String, String)> {
    let prefix = format!("{name}_v3.2.0_");
    let mut out: Vec<(String, String)> = std::fs::read_dir(data_dir().join("goldens/v1"))
        .expect("goldens/v1")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.starts_with(&prefix) && f.contains("_vmaf_v1.0.16_") && f.ends_with(".json"))
        .map(|f| {
            let model = f[prefix.len()..f.len() - ".json".len()].to_string();
            let model = model.strip_suffix("_encbd8").unwrap_or(&model).to_string();
            (format!("v1/{f}"), model)
        })
        .collect();
    out.sort();
    out
}

fn run(pair: Pair, name: &str, up10: bool, expect_files: usize) {
    let goldens = v1_goldens(name);
    assert_eq!(goldens.len(), expect_files, "{name}: {goldens:?}");
    let mut mm = Mismatches::default();
    let checked = check(pair, up10, &goldens, &mut mm);
    assert_eq!(checked, expect_files * 7 * pair.frames);
    mm.finish(checked);
}

#[test]
fn bbb360p10_v1_adm() {
    run(BBB360P10, "bbb360p10", false, 8);
}

#[test]
fn bbb720_v1_adm() {
    run(BBB720, "bbb720", false, 8);
}

#[test]
fn bbb720up10_v1_adm() {
    run(BBB720, "bbb720up10", true, 9);
}

/// vmaf_4k_v0.6.1neg: the Watson CSF with `adm_enhn_gain_limit` 1 (keys `..._egl_1`).
#[test]
fn vmaf_4k_v061neg_adm() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for pair in [BBB360P10, BBB720, CARPHONE] {
        let file = format!("v1/{}_v3.2.0_vmaf_4k_v0.6.1neg.json", pair.name);
        let goldens = [(file, "vmaf_4k_v0.6.1neg".to_string())];
        assert_eq!(model_adm_params("vmaf_4k_v0.6.1neg").csf_mode, 0);
        checked += check(pair, false, &goldens, &mut mm);
    }
    assert_eq!(checked, 7 * (24 + 48 + 120));
    mm.finish(checked);
}
