use super::*;
use crate::features::motion::{self, MotionParams, MotionSequence};
use crate::features::vif::VifParams;
use crate::picture::{Chroma, PlaneRef};

fn gray(buf: &[u8], w: usize, h: usize) -> Picture<'_> {
    Picture {
        width: w,
        height: h,
        bpc: 8,
        format: ChromaFormat::Gray,
        luma: PlaneRef {
            data: buf,
            stride: w,
        },
        chroma: Chroma::None,
    }
}

/// Deterministic content: a textured frame moving by `t` pixels, and a noisy copy.
fn frame(w: usize, h: usize, t: usize) -> (Vec<u8>, Vec<u8>) {
    let r: Vec<u8> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w + 3 * t, i / w + t);
            ((x * 7 + y * 13 + (x * y) % 29) % 251) as u8
        })
        .collect();
    let d = r
        .iter()
        .enumerate()
        .map(|(i, &v)| v.saturating_add((i * 2654435761 % 7) as u8))
        .collect();
    (r, d)
}

#[test]
fn scorer_is_send() {
    fn send<T: Send>() {}
    send::<Scorer>();
}

#[test]
fn names_carry_libvmaf_option_suffixes() {
    let s = Scorer::new(ScorerConfig {
        model: ModelSource::Builtin("vmaf_v0.6.1neg".into()),
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let names = s.metric_names();
    for n in [
        "integer_adm2_egl_1",
        "integer_aim_egl_1",
        "integer_adm_scale3_egl_1",
        "integer_vif_scale0_egl_1",
        "VMAF_integer_feature_motion_sad_score",
        "integer_motion2",
        "integer_motion3",
        "vmaf",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    assert_eq!(names.len(), 7 + 1 + 4 + 2 + 1);
}

/// Options of the standalone v1 metrics (`feature_params`): libvmaf's suffixed names, beside
/// the model's own features; options of a metric not asked for, and bad values, are refused.
#[test]
fn standalone_metric_options() {
    let cfg = |extras: Extras, params: &str| ScorerConfig {
        threads: 1,
        backend: BackendKind::Cpu,
        extras,
        feature_params: FeatureOverload::parse_list(params).unwrap(),
        ..Default::default()
    };
    let cambi = Extras {
        cambi: true,
        ..Default::default()
    };
    let s = Scorer::new(cfg(cambi, "cambi.enc_bitdepth=8")).unwrap();
    let names = s.metric_names();
    assert!(names.iter().any(|n| n == "cambi_encbd_8"), "{names:?}");
    assert!(!names.iter().any(|n| n == "cambi"), "{names:?}");
    assert!(names.iter().any(|n| n == "vmaf"), "{names:?}");
    for (extras, params, want) in [
        (
            Extras::default(),
            "cambi.enc_bitdepth=8",
            "not a standalone metric",
        ),
        (
            cambi,
            "speed_chroma.speed_kernelscale=2",
            "not a standalone metric",
        ),
        (
            cambi,
            "vif.vif_enhn_gain_limit=1",
            "not a standalone metric",
        ),
        (cambi, "cambi.enc_bitdepth=99", "enc_bitdepth"),
    ] {
        let e = Scorer::new(cfg(extras, params)).err().unwrap().to_string();
        assert!(e.contains(want), "{params}: {e}");
    }
}

/// A model asking for motion with the five-frame window (libvmaf's `motion_five_frame_window`):
/// the SAD of frame i is taken against frame i-2 (none before frame 2), the names get `_mffw`,
/// and motion2/motion3 follow libvmaf's flush for that window ([`MotionSequence`]).
#[test]
fn five_frame_window_model_option() {
    let text = include_str!("../../models/vmaf_v0.6.1.json");
    let mut json: serde_json::Value = serde_json::from_str(text).unwrap();
    let n = json["model_dict"]["feature_names"]
        .as_array()
        .unwrap()
        .len();
    let opts: Vec<serde_json::Value> = json["model_dict"]["feature_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            if f.as_str().unwrap().contains("motion") {
                serde_json::json!({ "motion_five_frame_window": true })
            } else {
                serde_json::json!({})
            }
        })
        .collect();
    assert_eq!(opts.len(), n);
    json["model_dict"]["feature_opts_dicts"] = serde_json::Value::Array(opts);
    let mut s = Scorer::new(ScorerConfig {
        model: ModelSource::Json(json.to_string()),
        threads: 2,
        ..Default::default()
    })
    .unwrap();
    let (w, h) = (48, 40);
    let frames: Vec<_> = (0..7).map(|t| frame(w, h, t * t)).collect();
    let mut out = Vec::new();
    for (r, d) in &frames {
        out.extend(s.push(&gray(r, w, h), &gray(d, w, h)).unwrap());
    }
    let (rest, _) = s.finish().unwrap();
    out.extend(rest);
    assert_eq!(out.len(), 7);

    let planes: Vec<OwnedPlane> = frames
        .iter()
        .map(|(r, _)| {
            let mut p = OwnedPlane::default();
            gray(r, w, h).copy_luma(&mut p).unwrap();
            p
        })
        .collect();
    let params = MotionParams {
        five_frame_window: true,
        ..Default::default()
    };
    let mut seq = MotionSequence::new(params);
    let mut want = Vec::new();
    for i in 0..planes.len() {
        let score = if i < 2 {
            0.0
        } else {
            motion::sad_score(motion::sad(planes[i - 2].view(), planes[i].view()), w, h)
        };
        want.extend(seq.push(score));
    }
    want.extend(seq.finish());
    for (f, m) in out.iter().zip(&want) {
        assert_eq!(f.index, m.index);
        assert_eq!(
            f.get("VMAF_integer_feature_motion_sad_score_mffw"),
            Some(m.sad_score)
        );
        assert_eq!(f.get("integer_motion2_mffw"), Some(m.motion2));
        assert_eq!(f.get("integer_motion3_mffw"), Some(m.motion3));
    }
    // The content moves, so this is not a comparison of zeros.
    assert!(want[3].motion2 > 0.0);
}

/// Plane buffers are recycled: a long clip allocates only about as many as can be in use
/// at once (in flight, plus the previous reference).
#[test]
fn plane_buffers_are_recycled() {
    for threads in [1, 2, 7] {
        let mut s = Scorer::new(ScorerConfig {
            threads,
            ..Default::default()
        })
        .unwrap();
        let (w, h) = (40, 36);
        let frames: Vec<_> = (0..4).map(|t| frame(w, h, t)).collect();
        for i in 0..60 {
            let (r, d) = &frames[i % 4];
            s.push(&gray(r, w, h), &gray(d, w, h)).unwrap();
        }
        s.finish().unwrap();
        let in_use = 2 * (s.backend.max_in_flight() as u64 + 1) + 1;
        assert!(
            s.buffers_allocated <= in_use,
            "threads {threads}: {} planes allocated for 60 frames",
            s.buffers_allocated
        );
    }
}

/// Frames of a megapixel and more are copied on two threads: errors of either plane still
/// come back typed (the reference's first), and nothing is taken.
#[test]
fn large_frames_copy_in_parallel_and_refuse_bad_samples() {
    let (w, h) = (1024, 1024);
    let to10 = |v: &[u8]| -> Vec<u8> {
        v.iter()
            .flat_map(|&x| (u16::from(x) << 2).to_le_bytes())
            .collect()
    };
    fn pic(buf: &[u8], w: usize, h: usize) -> Picture<'_> {
        let mut p = gray(buf, w, h);
        p.bpc = 10;
        p.luma.stride = 2 * w;
        p
    }
    let (r8, d8) = frame(w, h, 0);
    let (r, d) = (to10(&r8), to10(&d8));
    let mut bad_d = d.clone();
    bad_d[2 * (700 * w + 3)..][..2].copy_from_slice(&1024u16.to_le_bytes());
    let mut bad_r = r.clone();
    bad_r[2 * (5 * w + 9)..][..2].copy_from_slice(&2000u16.to_le_bytes());

    let mut s = Scorer::new(ScorerConfig {
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    match s.push(&pic(&r, w, h), &pic(&bad_d, w, h)) {
        Err(Error::SampleRange {
            x: 3,
            y: 700,
            value: 1024,
            ..
        }) => {}
        other => panic!("expected the distorted plane's SampleRange, got {other:?}"),
    }
    match s.push(&pic(&bad_r, w, h), &pic(&bad_d, w, h)) {
        Err(Error::SampleRange {
            x: 9,
            y: 5,
            value: 2000,
            ..
        }) => {}
        other => panic!("expected the reference plane's SampleRange, got {other:?}"),
    }
    assert_eq!(s.frames_pushed(), 0);
    s.push(&pic(&r, w, h), &pic(&d, w, h)).unwrap();
    let (out, summary) = s.finish().unwrap();
    assert_eq!((out.len(), summary.frames, out[0].index), (1, 1, 0));
    // The same pair scored directly from its planes.
    let plane = |b: &[u8]| {
        let mut p = OwnedPlane::default();
        pic(b, w, h).copy_luma(&mut p).unwrap();
        p
    };
    let (rp, dp) = (plane(&r), plane(&d));
    let vif = crate::features::vif::compute(rp.view(), dp.view(), &VifParams::default());
    assert_eq!(out[0].get("integer_vif_scale0"), Some(vif.scores()[0]));
}

/// subsample 0 means every frame, as libvmaf's `n_subsample` of 0.
#[test]
fn subsample_zero_scores_every_frame() {
    let mut s = Scorer::new(ScorerConfig {
        subsample: 0,
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let (w, h) = (40, 36);
    let mut n = 0;
    for t in 0..4 {
        let (r, d) = frame(w, h, t);
        n += s.push(&gray(&r, w, h), &gray(&d, w, h)).unwrap().len();
    }
    let (rest, summary) = s.finish().unwrap();
    assert_eq!(n + rest.len(), 4);
    assert_eq!(summary.frames, 4);
}
