//! ADM against libvmaf 3.2.0: `integer_adm2`, `integer_adm3`, `integer_aim` and
//! `integer_adm_scale0..3` of every frame of the golden pairs, and the same with the
//! enhancement gain limit 1.0 (`*_egl_1`, from the vmaf_v0.6.1neg run on carphone).

mod common;

use common::{BBB360P10, BBB720, CARPHONE, Mismatches, Pair};
use gstvmafgpu::features::adm::{self, AdmParams};

fn check_pair(pair: Pair, model: Option<&str>, params: AdmParams, suffix: &str) {
    let golden = pair.golden(model);
    let refs = pair.luma_frames("ref");
    let dists = pair.luma_frames("dis");
    assert_eq!(golden.frames(), pair.frames);
    assert_eq!(refs.len(), pair.frames);
    assert_eq!(dists.len(), pair.frames);
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (i, (r, d)) in refs.iter().zip(&dists).enumerate() {
        let s = adm::compute(r.view(), d.view(), &params).scores(&params, pair.width, pair.height);
        let got = [
            ("integer_adm2", s.adm2),
            ("integer_adm3", s.adm3),
            ("integer_aim", s.aim),
            ("integer_adm_scale0", s.scale[0]),
            ("integer_adm_scale1", s.scale[1]),
            ("integer_adm_scale2", s.scale[2]),
            ("integer_adm_scale3", s.scale[3]),
        ];
        for (name, value) in got {
            let name = format!("{name}{suffix}");
            let want = golden
                .frame(i, &name)
                .unwrap_or_else(|| panic!("{} frame {i}: no {name} in golden", pair.name));
            mm.check(|| format!("{} frame {i} {name}", pair.name), value, want);
            checked += 1;
        }
    }
    assert_eq!(checked, 7 * pair.frames);
    mm.finish(checked);
}

#[test]
fn carphone_adm() {
    check_pair(CARPHONE, None, AdmParams::default(), "");
}

#[test]
fn bbb720_adm() {
    check_pair(BBB720, None, AdmParams::default(), "");
}

#[test]
fn bbb360p10_adm() {
    check_pair(BBB360P10, None, AdmParams::default(), "");
}

#[test]
fn carphone_adm_egl_1() {
    let p = AdmParams {
        enhn_gain_limit: 1.0,
        ..AdmParams::default()
    };
    check_pair(CARPHONE, Some("vmaf_v0.6.1neg"), p, "_egl_1");
}
