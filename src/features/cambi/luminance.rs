use super::{CambiEotf, CambiParams, LUMA_FOOT, LUMA_HEAD, Lut};

const BT1886_GAMMA: f64 = 2.4;
const BT1886_LW: f64 = 300.0;
const BT1886_LB: f64 = 0.01;

/// luminance_tools.c `vmaf_luminance_bt1886_eotf` (glibc `pow`, as C calls it).
fn bt1886_eotf(v: f64) -> f64 {
    let a = (BT1886_LW.powf(1.0 / BT1886_GAMMA) - BT1886_LB.powf(1.0 / BT1886_GAMMA))
        .powf(BT1886_GAMMA);
    let b = BT1886_LB.powf(1.0 / BT1886_GAMMA)
        / (BT1886_LW.powf(1.0 / BT1886_GAMMA) - BT1886_LB.powf(1.0 / BT1886_GAMMA));
    let x = v + b;
    a * (if x > 0.0 { x } else { 0.0 }).powf(BT1886_GAMMA)
}

/// luminance_tools.c `vmaf_luminance_pq_eotf`.
fn pq_eotf(v: f64) -> f64 {
    const M1: f64 = 0.1593017578125;
    const M2: f64 = 78.84375;
    const C1: f64 = 0.8359375;
    const C2: f64 = 18.8515625;
    const C3: f64 = 18.6875;
    let num = v.powf(1.0 / M2) - C1;
    let num_clipped = if num > 0.0 { num } else { 0.0 };
    let den = C2 - C3 * v.powf(1.0 / M2);
    10000.0 * (num_clipped / den).powf(1.0 / M1)
}

/// luminance_tools.c `vmaf_luminance_get_luminance` at 10-bit limited range.
fn luminance(sample: i32, eotf: CambiEotf) -> f64 {
    let clipped = sample.clamp(LUMA_FOOT, LUMA_HEAD);
    let normalized = (clipped - LUMA_FOOT) as f64 / (LUMA_HEAD - LUMA_FOOT) as f64;
    match eotf {
        CambiEotf::Bt1886 => bt1886_eotf(normalized),
        CambiEotf::Pq => pq_eotf(normalized),
    }
}

/// cambi.c `tvi_condition`.
fn tvi_condition(sample: i32, diff: i32, tvi_threshold: f64, eotf: CambiEotf) -> bool {
    let mean = luminance(sample, eotf);
    let diff_luminance = luminance(sample + diff, eotf);
    let delta = diff_luminance - mean;
    delta > tvi_threshold * mean
}

#[derive(PartialEq)]
enum Bisect {
    TooSmall,
    Correct,
    TooBig,
}

/// cambi.c `tvi_hard_threshold_condition`.
fn tvi_hard_threshold(sample: i32, diff: i32, t: f64, eotf: CambiEotf) -> Bisect {
    if !tvi_condition(sample, diff, t, eotf) {
        Bisect::TooBig
    } else if tvi_condition(sample + 1, diff, t, eotf) {
        Bisect::TooSmall
    } else {
        Bisect::Correct
    }
}

/// cambi.c `get_tvi_for_diff` at 10 bits: the largest sample at which a luma difference of
/// `diff` is still visible. libvmaf's bisection loops forever if it never lands on the
/// transition; this one gives up after 64 steps (an error).
fn tvi_for_diff(diff: i32, t: f64, eotf: CambiEotf) -> std::result::Result<i32, String> {
    let max_val = (1 << 10) - 1;
    let mut foot = LUMA_FOOT;
    let mut head = LUMA_HEAD - diff - 1;
    match tvi_hard_threshold(foot, diff, t, eotf) {
        Bisect::TooBig => return Ok(0),
        Bisect::Correct => return Ok(foot),
        Bisect::TooSmall => {}
    }
    match tvi_hard_threshold(head, diff, t, eotf) {
        Bisect::TooSmall => return Ok(max_val),
        Bisect::Correct => return Ok(head),
        Bisect::TooBig => {}
    }
    for _ in 0..64 {
        let mid = foot + (head - foot) / 2;
        match tvi_hard_threshold(mid, diff, t, eotf) {
            Bisect::TooBig => head = mid,
            Bisect::TooSmall => foot = mid,
            Bisect::Correct => return Ok(mid),
        }
    }
    Err(format!(
        "the TVI bisection for a difference of {diff} at tvi_threshold {t} does not converge \
         (libvmaf would loop forever)"
    ))
}

/// cambi.c `get_vlt_luma`: the smallest sample whose luminance reaches the threshold (0 when
/// the foot does). libvmaf loops forever when no sample reaches it (a threshold above the
/// EOTF's peak): refused.
fn vlt_luma(threshold: f64, eotf: CambiEotf) -> std::result::Result<u16, String> {
    for sample in LUMA_FOOT..=LUMA_HEAD {
        // C: `while (L(sample) < threshold) sample++`, NaN-free here.
        if luminance(sample, eotf) >= threshold {
            return Ok(if sample == LUMA_FOOT {
                0
            } else {
                sample as u16
            });
        }
    }
    Err(format!(
        "no 10-bit sample reaches cambi_vis_lum_threshold {threshold} cd/m² (libvmaf would \
         loop forever)"
    ))
}

impl Lut {
    pub(super) fn new(p: &CambiParams) -> std::result::Result<Lut, String> {
        let nd = 1usize << p.max_log_contrast;
        let mut tvi = Vec::with_capacity(nd);
        for d in 0..nd {
            let t = tvi_for_diff(d as i32 + 1, p.tvi_threshold, p.eotf)?;
            tvi.push((t + nd as i32) as u16);
        }
        let vlt = vlt_luma(p.vis_lum_threshold, p.eotf)?;
        // cambi.c init: v_band_base = max(0, vlt - 3 * num_diffs + 1); the band ends at
        // tvi_for_diff[num_diffs - 1] (inclusive).
        let lo = (vlt as i32 - 3 * nd as i32 + 1).max(0);
        let hi = tvi[nd - 1] as i32;
        let len = if hi >= lo { (hi - lo + 1) as usize } else { 0 };
        let rows = len + 2 * nd;
        let mut fire = vec![0u32; rows];
        for v in lo..=hi {
            let value = v + nd as i32;
            let mut bits = 0u32;
            for (d, &t) in tvi.iter().enumerate() {
                if value <= t as i32 && value + d as i32 + 1 > vlt as i32 {
                    // libvmaf reads the count of v + d + 1 from the band: past its end, it
                    // would read outside its histograms. The TVI thresholds grow with the
                    // difference, so this never happens; refuse rather than guess.
                    if v + d as i32 + 1 > hi {
                        return Err(format!(
                            "the TVI thresholds {tvi:?} do not grow with the difference"
                        ));
                    }
                    bits |= 1 << d;
                }
            }
            fire[(v - lo) as usize + nd] = bits;
        }
        let fired = || {
            fire.iter()
                .enumerate()
                .filter(|(_, f)| **f != 0)
                .map(|(r, _)| r)
        };
        let (fire_lo, fire_span) = match (fired().next(), fired().next_back()) {
            (Some(a), Some(b)) => ((a + 1) as u16, (b - a) as u16),
            // No code reaches u16::MAX (at most 1025 + 64 rows).
            _ => (u16::MAX, 0),
        };
        Ok(Lut {
            num_diffs: nd,
            tvi,
            vlt_luma: vlt,
            lo,
            len,
            rows,
            fire_lo,
            fire_span,
            fire,
        })
    }
}
