//! The whole engine against libvmaf 3.2.0's numbers for the golden pairs (tests/data/goldens),
//! compared with `==` on f64.

mod common;

use common::{Mismatches, PAIRS};
use gstvmafgpu::features::motion::{self, MotionParams, MotionSequence};

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
