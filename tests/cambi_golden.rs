//! CAMBI against libvmaf 3.2.0's numbers (tests/data/goldens/v1, plain C path), compared with
//! `==` on f64, through the public API of `gstvmafgpu::features::cambi` only.

mod common;

use common::{BBB360P10, BBB720, Golden, Mismatches, Pair};
use gstvmafgpu::features::cambi::{Cambi, CambiParams};
use gstvmafgpu::{Error, OwnedPlane};

fn golden_v1(file: &str) -> Golden {
    let path = common::data_dir().join("goldens/v1").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Golden(serde_json::from_str(&text).expect(file))
}

/// The distorted luma of a pair; with `up10`, every 8-bit sample `x` becomes the 10-bit
/// `x << 2` (how the goldens' bbb720up10 was made, see tests/data/goldens/v1/UPSTREAM-README.md).
fn dist_frames(pair: &Pair, up10: bool) -> Vec<OwnedPlane> {
    let mut frames = pair.luma_frames("dis");
    if up10 {
        assert_eq!(pair.bpc, 8);
        for f in &mut frames {
            for v in &mut f.data {
                *v <<= 2;
            }
            f.bpc = 10;
        }
    }
    frames
}

fn v1_params() -> CambiParams {
    CambiParams {
        high_res_speedup: 1080,
        vis_lum_threshold: 0.06,
        max_val: 17.0,
        ..Default::default()
    }
}

/// Score every frame and compare with `key` in `golden`, frame by frame and pooled (libvmaf's
/// min, max, mean = sum / n in frame order, harmonic mean = n / sum(1 / (x + 1)) - 1).
fn check(
    what: &str,
    frames: &[OwnedPlane],
    p: &CambiParams,
    golden: &Golden,
    key: &str,
    mm: &mut Mismatches,
) -> usize {
    let f0 = &frames[0];
    let cambi = Cambi::new(p, f0.width, f0.height, f0.bpc).expect("Cambi::new");
    assert_eq!(golden.frames(), frames.len(), "{what}: frame count");
    let mut checked = 0;
    let (mut sum, mut inv_sum) = (0.0f64, 0.0f64);
    let (mut lo, mut hi) = (f64::NAN, f64::NAN);
    for (i, f) in frames.iter().enumerate() {
        let s = cambi.compute(&f.view(), None).expect("compute");
        assert_eq!(s.full_ref, None);
        let want = golden
            .frame(i, key)
            .unwrap_or_else(|| panic!("{what}: no {key} in frame {i}"));
        mm.check(|| format!("{what} frame {i} {key}"), s.cambi, want);
        checked += 1;
        sum += s.cambi;
        inv_sum += 1.0 / (s.cambi + 1.0);
        if i == 0 || s.cambi < lo {
            lo = s.cambi;
        }
        if i == 0 || s.cambi > hi {
            hi = s.cambi;
        }
    }
    let n = frames.len() as f64;
    for (stat, got) in [
        ("min", lo),
        ("max", hi),
        ("mean", sum / n),
        ("harmonic_mean", n / inv_sum - 1.0),
    ] {
        let want = golden.pooled(key, stat).expect("pooled");
        mm.check(|| format!("{what} pooled {stat} {key}"), got, want);
        checked += 1;
    }
    checked
}

#[test]
fn standalone_default_options() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (name, pair, up10) in [
        ("bbb360p10", BBB360P10, false),
        ("bbb720", BBB720, false),
        ("bbb720up10", BBB720, true),
    ] {
        let frames = dist_frames(&pair, up10);
        let golden = golden_v1(&format!("{name}_v3.2.0_cambi.json"));
        checked += check(
            name,
            &frames,
            &CambiParams::default(),
            &golden,
            "cambi",
            &mut mm,
        );
    }
    mm.finish(checked);
}

#[test]
fn v1_model_options() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    let key = "cambi_hrs_1080_cmxv_17_vlt_0.06";
    for (name, pair, up10) in [
        ("bbb360p10", BBB360P10, false),
        ("bbb720", BBB720, false),
        ("bbb720up10", BBB720, true),
    ] {
        let frames = dist_frames(&pair, up10);
        let golden = golden_v1(&format!("{name}_v3.2.0_vmaf_v1.0.16_3d0h.json"));
        checked += check(name, &frames, &v1_params(), &golden, key, &mut mm);
    }
    // 10-bit input of an 8-bit encode: the anti-dithering filter runs.
    let frames = dist_frames(&BBB720, true);
    let golden = golden_v1("bbb720up10_v3.2.0_vmaf_v1.0.16_3d0h_encbd8.json");
    let p = CambiParams {
        enc_bitdepth: 8,
        ..v1_params()
    };
    checked += check(
        "bbb720up10 encbd 8",
        &frames,
        &p,
        &golden,
        "cambi_hrs_1080_cmxv_17_vlt_0.06_encbd_8",
        &mut mm,
    );
    mm.finish(checked);
}

/// libvmaf refuses CAMBI at 176x144 (both dimensions below 216): the v1 models fail there and
/// standalone `--feature cambi` reports nothing (carphone_v3.2.0_cambi.json has no frames).
#[test]
fn carphone_is_refused() {
    let golden = golden_v1("carphone_v3.2.0_cambi.json");
    assert_eq!(golden.frames(), 0);
    for p in [CambiParams::default(), v1_params()] {
        let e = Cambi::new(&p, 176, 144, 8).expect_err("176x144 must be refused");
        assert!(
            matches!(
                e,
                Error::Unsupported {
                    metric: "cambi",
                    ..
                }
            ),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(msg.contains("cambi") && msg.contains("176x144"), "{msg}");
    }
}

/// Per-frame time in release mode: `cargo test --release --test cambi_golden -- --ignored
/// --nocapture`. 1280x720 8-bit (bbb720) with the default options, and 1920x1080 10-bit (bbb720
/// scaled up by nearest neighbour, `x << 2`) with the v1 options.
#[test]
#[ignore]
fn speed() {
    let frames = dist_frames(&BBB720, false);
    let time = |what: &str, frames: &[OwnedPlane], p: &CambiParams| {
        let f0 = &frames[0];
        let cambi = Cambi::new(p, f0.width, f0.height, f0.bpc).unwrap();
        cambi.compute(&f0.view(), None).unwrap();
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            for f in frames {
                std::hint::black_box(cambi.compute(&f.view(), None).unwrap());
            }
            best = best.min(t.elapsed().as_secs_f64() / frames.len() as f64);
        }
        eprintln!("{what}: {:.2} ms/frame (best of 3 passes)", best * 1e3);
    };
    time(
        "1280x720 8-bit, default options",
        &frames,
        &CambiParams::default(),
    );
    let big: Vec<OwnedPlane> = frames
        .iter()
        .map(|f| {
            let (w, h) = (1920, 1080);
            let mut data = Vec::with_capacity(w * h);
            for y in 0..h {
                for x in 0..w {
                    data.push(f.data[(y * 2 / 3) * f.width + x * 2 / 3] << 2);
                }
            }
            OwnedPlane {
                data,
                width: w,
                height: h,
                bpc: 10,
            }
        })
        .collect();
    time("1920x1080 10-bit, v1 options", &big, &v1_params());
    time(
        "1920x1080 10-bit, default options",
        &big,
        &CambiParams::default(),
    );
}
