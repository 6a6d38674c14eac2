//! VIF against libvmaf 3.2.0: `integer_vif_scale0..3` of every frame of the golden pairs, and
//! `integer_vif_scale0..3_egl_1` (enhancement gain limit 1.0, from the vmaf_v0.6.1neg run).

mod common;

use common::{BBB360P10, BBB720, CARPHONE, Mismatches, Pair};
use gstvmafgpu::features::vif::{self, VifParams};

fn check_pair(pair: Pair, model: Option<&str>, params: VifParams, suffix: &str) {
    let golden = pair.golden(model);
    let refs = pair.luma_frames("ref");
    let dists = pair.luma_frames("dis");
    assert_eq!(golden.frames(), pair.frames);
    assert_eq!(refs.len(), pair.frames);
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (i, (r, d)) in refs.iter().zip(&dists).enumerate() {
        let scores = vif::compute(r.view(), d.view(), &params).scores();
        for (s, &got) in scores.iter().enumerate() {
            let name = format!("integer_vif_scale{s}{suffix}");
            let want = golden
                .frame(i, &name)
                .unwrap_or_else(|| panic!("{} frame {i}: no {name} in golden", pair.name));
            mm.check(|| format!("{} frame {i} {name}", pair.name), got, want);
            checked += 1;
        }
    }
    assert_eq!(checked, 4 * pair.frames);
    mm.finish(checked);
}

#[test]
fn carphone_vif() {
    check_pair(CARPHONE, None, VifParams::default(), "");
}

#[test]
fn bbb720_vif() {
    check_pair(BBB720, None, VifParams::default(), "");
}

#[test]
fn bbb360p10_vif() {
    check_pair(BBB360P10, None, VifParams::default(), "");
}

#[test]
fn carphone_vif_egl_1() {
    let p = VifParams {
        enhn_gain_limit: 1.0,
    };
    check_pair(CARPHONE, Some("vmaf_v0.6.1neg"), p, "_egl_1");
}
