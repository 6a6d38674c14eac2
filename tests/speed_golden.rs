//! SpEED against libvmaf 3.2.0 (plain C path): `speed_chroma_{u,v,uv}` with the default options and
//! with the v1 models' options (with and without bilinear prescale), and `speed_temporal`, on every
//! frame of the golden pairs, compared with `==`.

mod common;

use common::{BBB360P10, BBB720, CARPHONE, Golden, Mismatches, Pair, data_dir};
use gstvmafgpu::error::Error;
use gstvmafgpu::features::speed::{
    PrescaleMethod, SpeedChroma, SpeedChromaParams, SpeedTemporal, SpeedTemporalParams,
};
use gstvmafgpu::picture::OwnedPlane;

/// One side of a pair: the Y, U and V planes of every frame.
struct Side {
    y: Vec<OwnedPlane>,
    u: Vec<OwnedPlane>,
    v: Vec<OwnedPlane>,
}

/// The I420 frames of one side; `up10` makes the 8-bit pair 10-bit as `x << 2` (the goldens'
/// `bbb720up10`, see tests/data/goldens/v1/UPSTREAM-README.md).
fn load(pair: Pair, side: &str, up10: bool) -> Side {
    let raw = pair.raw(side);
    let bps = if pair.bpc > 8 { 2 } else { 1 };
    let (w, h) = (pair.width, pair.height);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let bpc = if up10 { 10 } else { pair.bpc };
    let plane = |bytes: &[u8], pw: usize, ph: usize| {
        let mut data: Vec<u16> = if bps == 1 {
            bytes.iter().map(|&b| b as u16).collect()
        } else {
            bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        if up10 {
            assert_eq!(pair.bpc, 8);
            for s in &mut data {
                *s <<= 2;
            }
        }
        OwnedPlane {
            data,
            width: pw,
            height: ph,
            bpc,
        }
    };
    let mut s = Side {
        y: Vec::new(),
        u: Vec::new(),
        v: Vec::new(),
    };
    for f in raw.chunks_exact(pair.frame_bytes()) {
        let (ly, rest) = f.split_at(w * h * bps);
        let (lu, lv) = rest.split_at(cw * ch * bps);
        s.y.push(plane(ly, w, h));
        s.u.push(plane(lu, cw, ch));
        s.v.push(plane(lv, cw, ch));
    }
    assert_eq!(s.y.len(), pair.frames);
    s
}

fn golden_v1(name: &str, selection: &str) -> Golden {
    let file = format!("goldens/v1/{name}_v3.2.0_{selection}.json");
    let text = std::fs::read_to_string(data_dir().join(&file)).expect(&file);
    Golden(serde_json::from_str(&text).expect(&file))
}

/// speed_chroma of every frame of a pair with `params`, compared with the keys
/// `speed_chroma_{u,v,uv}{suffix}` of each golden file `selections`.
fn check_chroma(
    pair: Pair,
    up10: bool,
    params: SpeedChromaParams,
    selections: &[&str],
    suffix: &str,
) {
    let name = if up10 {
        format!("{}up10", pair.name)
    } else {
        pair.name.to_string()
    };
    let (r, d) = (load(pair, "ref", up10), load(pair, "dis", up10));
    let (cw, ch) = (pair.width >> 1, pair.height >> 1);
    let bpc = r.u[0].bpc;
    let speed = SpeedChroma::new(&params, cw, ch, bpc).unwrap();
    let scores: Vec<_> = (0..pair.frames)
        .map(|i| {
            speed
                .compute(
                    &r.u[i].view(),
                    &r.v[i].view(),
                    &d.u[i].view(),
                    &d.v[i].view(),
                )
                .unwrap()
        })
        .collect();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for sel in selections {
        let golden = golden_v1(&name, sel);
        assert_eq!(golden.frames(), pair.frames, "{name} {sel}");
        for (i, s) in scores.iter().enumerate() {
            for (c, got) in [("u", s.u), ("v", s.v), ("uv", s.uv)] {
                let key = format!("speed_chroma_{c}{suffix}");
                let want = golden
                    .frame(i, &key)
                    .unwrap_or_else(|| panic!("{name} {sel} frame {i}: no {key}"));
                mm.check(|| format!("{name} {sel} frame {i} {key}"), got, want);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * pair.frames * selections.len());
    mm.finish(checked);
}

fn v1_params(prescale: f64) -> SpeedChromaParams {
    SpeedChromaParams {
        max_val: 45.0,
        nn_floor: 0.1,
        sigma_nn: 0.19,
        weight_var_mode: 5,
        prescale,
        prescale_method: if prescale == 1.0 {
            PrescaleMethod::Nearest
        } else {
            PrescaleMethod::Bilinear
        },
        ..Default::default()
    }
}

const V1_NO_PRESCALE: [&str; 4] = [
    "vmaf_v1.0.16_3d0h",
    "vmaf_v1.0.16_hfr_3d0h",
    "vmaf_v1.0.16_1d5h_2160",
    "vmaf_v1.0.16_hfr_1d5h_2160",
];
const V1_PS05: [&str; 2] = ["vmaf_v1.0.16_3d0h_2160", "vmaf_v1.0.16_hfr_3d0h_2160"];
const V1_PS06: [&str; 2] = ["vmaf_v1.0.16_5d0h", "vmaf_v1.0.16_hfr_5d0h"];
const SUFFIX_V1: &str = "_mxv_45_nnf_0.1_snn_0.19_wvm_5";
const SUFFIX_PS05: &str = "_mxv_45_nnf_0.1_ps_0.5_psm_bilinear_snn_0.19_wvm_5";
const SUFFIX_PS06: &str = "_mxv_45_nnf_0.1_ps_0.6_psm_bilinear_snn_0.19_wvm_5";

#[test]
fn bbb360p10_speed_chroma_default() {
    check_chroma(
        BBB360P10,
        false,
        SpeedChromaParams::default(),
        &["speed_chroma"],
        "",
    );
}

#[test]
fn bbb720_speed_chroma_default() {
    check_chroma(
        BBB720,
        false,
        SpeedChromaParams::default(),
        &["speed_chroma"],
        "",
    );
}

#[test]
fn bbb720up10_speed_chroma_default() {
    check_chroma(
        BBB720,
        true,
        SpeedChromaParams::default(),
        &["speed_chroma"],
        "",
    );
}

#[test]
fn bbb360p10_speed_chroma_v1() {
    check_chroma(BBB360P10, false, v1_params(1.0), &V1_NO_PRESCALE, SUFFIX_V1);
}

#[test]
fn bbb720_speed_chroma_v1() {
    check_chroma(BBB720, false, v1_params(1.0), &V1_NO_PRESCALE, SUFFIX_V1);
}

#[test]
fn bbb720up10_speed_chroma_v1() {
    check_chroma(BBB720, true, v1_params(1.0), &V1_NO_PRESCALE, SUFFIX_V1);
}

/// At 640x360, both prescaled v1 option sets are singular on every frame (0: the model's chroma
/// correction path).
#[test]
fn bbb360p10_speed_chroma_v1_prescale() {
    check_chroma(BBB360P10, false, v1_params(0.5), &V1_PS05, SUFFIX_PS05);
    check_chroma(BBB360P10, false, v1_params(0.6), &V1_PS06, SUFFIX_PS06);
}

#[test]
fn bbb720_speed_chroma_v1_prescale() {
    check_chroma(BBB720, false, v1_params(0.5), &V1_PS05, SUFFIX_PS05);
    check_chroma(BBB720, false, v1_params(0.6), &V1_PS06, SUFFIX_PS06);
}

#[test]
fn bbb720up10_speed_chroma_v1_prescale() {
    check_chroma(BBB720, true, v1_params(0.5), &V1_PS05, SUFFIX_PS05);
    check_chroma(BBB720, true, v1_params(0.6), &V1_PS06, SUFFIX_PS06);
}

/// libvmaf crashes on speed_chroma at 176x144 (chroma 88x72, operating size 5x4); so is no
/// carphone speed_chroma golden. It must be refused, with the default and every v1 option set.
#[test]
fn carphone_speed_chroma_refused() {
    let (cw, ch) = (CARPHONE.width >> 1, CARPHONE.height >> 1);
    for p in [
        SpeedChromaParams::default(),
        v1_params(1.0),
        v1_params(0.5),
        v1_params(0.6),
    ] {
        match SpeedChroma::new(&p, cw, ch, 8) {
            Err(Error::Unsupported { metric, reason }) => {
                assert_eq!(metric, "speed_chroma");
                assert!(reason.contains("88x72"), "{reason}");
            }
            other => panic!("{p:?}: {other:?}"),
        }
    }
}

fn check_temporal(pair: Pair) {
    let golden = golden_v1(pair.name, "speed_temporal");
    assert_eq!(golden.frames(), pair.frames);
    let (r, d) = (load(pair, "ref", false), load(pair, "dis", false));
    let speed = SpeedTemporal::new(
        &SpeedTemporalParams::default(),
        pair.width,
        pair.height,
        pair.bpc,
    )
    .unwrap();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    let mut nonzero = 0;
    for i in 0..pair.frames {
        let (pr, pd);
        let prev = if i == 0 {
            None
        } else {
            pr = r.y[i - 1].view();
            pd = d.y[i - 1].view();
            Some((&pr, &pd))
        };
        let got = speed.compute(prev, &r.y[i].view(), &d.y[i].view()).unwrap();
        let want = golden
            .frame(i, "speed_temporal")
            .unwrap_or_else(|| panic!("{} frame {i}: no speed_temporal", pair.name));
        if want != 0.0 {
            nonzero += 1;
        }
        mm.check(
            || format!("{} frame {i} speed_temporal", pair.name),
            got,
            want,
        );
        checked += 1;
    }
    eprintln!("{}: {nonzero} nonzero golden values", pair.name);
    mm.finish(checked);
}

#[test]
fn bbb360p10_speed_temporal() {
    check_temporal(BBB360P10);
}

#[test]
fn bbb720_speed_temporal() {
    check_temporal(BBB720);
}

/// 176x144: operating size 11x9, submatrix 6x1: singular on both sides, 0 on every frame.
#[test]
fn carphone_speed_temporal() {
    check_temporal(CARPHONE);
}

/// speed_chroma per frame at 1920x1080 4:2:0 (chroma 960x540), v1 options, without prescale and
/// with bilinear 0.5. Run: `cargo test --release --test speed_golden -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_speed_chroma_1080p() {
    // Content: bbb720's chroma (640x360) resampled to 960x540 by index mapping.
    let (r, d) = (load(BBB720, "ref", false), load(BBB720, "dis", false));
    let (cw, ch) = (960usize, 540usize);
    let up = |p: &OwnedPlane| OwnedPlane {
        data: (0..cw * ch)
            .map(|k| {
                let (y, x) = (k / cw, k % cw);
                p.data[(y * 2 / 3) * p.width + x * 2 / 3]
            })
            .collect(),
        width: cw,
        height: ch,
        bpc: 8,
    };
    let n = 16;
    let planes: Vec<[OwnedPlane; 4]> = (0..n)
        .map(|i| [up(&r.u[i]), up(&r.v[i]), up(&d.u[i]), up(&d.v[i])])
        .collect();
    for (label, p) in [
        ("no prescale", v1_params(1.0)),
        ("bilinear 0.5", v1_params(0.5)),
    ] {
        let speed = SpeedChroma::new(&p, cw, ch, 8).unwrap();
        let mut sum = 0.0;
        // One warm-up pass, then timed passes.
        for f in &planes {
            sum += speed
                .compute(&f[0].view(), &f[1].view(), &f[2].view(), &f[3].view())
                .unwrap()
                .uv;
        }
        let reps = 4;
        let t = std::time::Instant::now();
        for _ in 0..reps {
            for f in &planes {
                sum += speed
                    .compute(&f[0].view(), &f[1].view(), &f[2].view(), &f[3].view())
                    .unwrap()
                    .uv;
            }
        }
        let ms = t.elapsed().as_secs_f64() * 1e3 / (reps * n) as f64;
        eprintln!("speed_chroma 1920x1080 4:2:0 v1 {label}: {ms:.2} ms/frame (checksum {sum})");
    }
}
