//! Motion: libvmaf 3.2.0's `integer_motion` feature extractor.
//!
//! Per frame, libvmaf 3.2.0 blurs the *signed difference* of the previous and the current
//! reference luma with a 5-tap filter (vertical pass, then horizontal pass) and sums the absolute
//! values: the SAD ([`sad`], the integer accumulator every backend produces). The SAD becomes the
//! per-frame score `VMAF_integer_feature_motion_sad_score` ([`sad_score`]); `integer_motion2` and
//! `integer_motion3` are derived from the sequence of those scores ([`MotionSequence`]), exactly as
//! libvmaf's `flush()` derives them at the end of a clip.
//!
//! What changed against libvmaf 2.x: 2.x blurred each frame separately and mirrored edges as
//! `2n - idx - 1`; 3.2.0 blurs the difference, rounds each pass, and mirrors as `2n - idx - 2`.
//!
//! Source: libvmaf 3.2.0 `libvmaf/src/feature/integer_motion.c` (`motion_score_pipeline_8`,
//! `motion_score_pipeline_16`, `extract`, `flush`, `options`), `integer_motion.h` (`filter`) and
//! `motion_blend_tools.h` (`motion_blend`).

use crate::features::isa::Isa;
use crate::picture::Plane;

/// The 5-tap blur. libvmaf 3.2.0 libvmaf/src/feature/integer_motion.h: `filter`. Sums to 2^16.
pub const FILTER: [i64; 5] = [3571, 16004, 26386, 16004, 3571];

/// Filter radius (taps on each side of the centre).
const RADIUS: usize = 2;

/// libvmaf 3.2.0 integer_motion.c: `DEFAULT_MOTION_MAX_VAL`.
pub const DEFAULT_MOTION_MAX_VAL: f64 = 10000.0;

/// The options of libvmaf's `motion` feature extractor, with libvmaf 3.2.0's defaults
/// (integer_motion.c: `options`). The built-in models use the defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotionParams {
    /// `motion_force_zero`: every motion score is 0. Default false.
    pub force_zero: bool,
    /// `motion_blend_factor` (0..=1). Default 1.0 (no blending).
    pub blend_factor: f64,
    /// `motion_blend_offset` (0..=1000). Default 40.0.
    pub blend_offset: f64,
    /// `motion_fps_weight` (0..=5). Default 1.0.
    pub fps_weight: f64,
    /// `motion_max_val` (0..=10000). Default 10000.0.
    pub max_val: f64,
    /// `motion_five_frame_window`: the SAD of frame i is taken against frame i-2. Default false.
    pub five_frame_window: bool,
    /// `motion_moving_average`: motion3 averages the current and the previous processed score.
    /// Default false.
    pub moving_average: bool,
}

impl Default for MotionParams {
    fn default() -> Self {
        MotionParams {
            force_zero: false,
            blend_factor: 1.0,
            blend_offset: 40.0,
            fps_weight: 1.0,
            max_val: DEFAULT_MOTION_MAX_VAL,
            five_frame_window: false,
            moving_average: false,
        }
    }
}

impl MotionParams {
    /// The first frame index that has a SAD (1, or 2 with the five-frame window); earlier frames
    /// score 0. libvmaf 3.2.0 integer_motion.c: `min_idx`.
    pub fn min_idx(&self) -> u64 {
        if self.five_frame_window { 2 } else { 1 }
    }

    /// How many frames back the SAD looks (1, or 2 with the five-frame window).
    pub fn frame_distance(&self) -> u64 {
        self.min_idx()
    }
}

/// libvmaf 3.2.0 integer_motion.c: `mirror()`. Reflects without repeating the edge sample and,
/// unlike 2.x, maps `size` to `size - 2`. Valid for `-(size-1) <= idx <= 2*size - 2`.
#[inline(always)]
fn mirror(idx: isize, size: usize) -> usize {
    let size = size as isize;
    if idx < 0 {
        (-idx) as usize
    } else if idx >= size {
        (2 * size - idx - 2) as usize
    } else {
        idx as usize
    }
}

/// The motion SAD between two reference luma planes: the sum over every pixel of
/// |blur(prev - cur)|, with libvmaf 3.2.0's rounding (vertical pass `(acc + 2^(bpc-1)) >> bpc`,
/// horizontal pass `(acc + 2^15) >> 16`, both arithmetic shifts of signed values) and mirroring.
/// libvmaf 3.2.0 integer_motion.c: `motion_score_pipeline_8` (bpc 8; its `1 << 7` and `>> 8` are
/// the bpc = 8 case of the same formula) and `motion_score_pipeline_16`.
///
/// Bounds (worst case 15360x8640, 16-bit samples, max-difference content): the filter sums to
/// 2^16, so the vertical accumulator is at most 2^16 * (2^16 - 1) < 2^32 in magnitude (i64 here,
/// as in libvmaf's 16-bit path), and a vertically blurred sample at most
/// (2^16 * 65535 + 2^15) >> 16 = 65535. The horizontal accumulator is at most 2^16 * 65535 < 2^32
/// (i64), a blurred sample at most 65535. A row sum is at most 15360 * 65535 < 2^30 (libvmaf keeps
/// it in a u32, which would wrap only above 65537 columns; here u64), and the frame SAD at most
/// 8640 * 15360 * 65535 < 2^43, far inside the u64 accumulator.
///
/// Panics if the planes differ in size or depth, or are smaller than 3x3 (the engine validates
/// frames, 33x33 and up, before they get here).
pub fn sad(prev: Plane<'_>, cur: Plane<'_>) -> u64 {
    let (w, h) = (cur.width, cur.height);
    assert!(
        prev.width == w && prev.height == h && prev.bpc == cur.bpc,
        "motion::sad: planes differ in geometry or depth"
    );
    assert!(w >= 3 && h >= 3, "motion::sad: plane smaller than 3x3");
    sad_with(prev, cur, Isa::detected())
}

/// [`sad`] with the build of the kernel chosen by the caller (the parity tests run every build
/// the CPU supports; the results are the same integers).
///
/// # Panics
/// As [`sad`], and if this CPU cannot run `isa` ([`Isa::supported`]).
#[doc(hidden)]
pub fn sad_with(prev: Plane<'_>, cur: Plane<'_>, isa: Isa) -> u64 {
    let (w, h) = (cur.width, cur.height);
    assert!(
        prev.width == w && prev.height == h && prev.bpc == cur.bpc,
        "motion::sad: planes differ in geometry or depth"
    );
    assert!(w >= 3 && h >= 3, "motion::sad: plane smaller than 3x3");
    assert!(
        isa.supported(),
        "motion::sad_with: {isa:?} is not supported by this CPU"
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: sad_avx2 only requires AVX2, part of Isa::Avx2 and Isa::Avx512, checked above
        // (motion is 2 ms of a 1080p frame: no AVX-512 build of its own).
        Isa::Avx2 | Isa::Avx512 => unsafe { sad_avx2(prev, cur) },
        _ => sad_inner(prev, cur),
    }
}

/// [`sad_inner`] compiled for AVX2: the same integer code, its row loops vectorised over 8
/// lanes instead of 4 (the results cannot differ: integers only).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sad_avx2(prev: Plane<'_>, cur: Plane<'_>) -> u64 {
    sad_inner(prev, cur)
}

/// The whole computation, inlined into each instruction-set variant.
#[inline(always)]
fn sad_inner(prev: Plane<'_>, cur: Plane<'_>) -> u64 {
    let (w, h) = (cur.width, cur.height);
    let bpc = u32::from(cur.bpc);
    let mut y_row = vec![0i32; w];
    let mut total: u64 = 0;

    for i in 0..h {
        let rows: [usize; 5] =
            std::array::from_fn(|k| mirror(i as isize - RADIUS as isize + k as isize, h));
        let p: [&[u16]; 5] = rows.map(|r| prev.row(r));
        let c: [&[u16]; 5] = rows.map(|r| cur.row(r));
        let any_nonzero = if bpc <= 15 {
            vertical_i32(&p, &c, bpc, &mut y_row)
        } else {
            vertical_i64(&p, &c, bpc, &mut y_row)
        };
        // A row of zeros blurs to zeros ((0 + 2^15) >> 16 == 0): libvmaf skips it too.
        if !any_nonzero {
            continue;
        }
        total += row_sad(&y_row);
    }
    total
}

/// Vertical pass of the signed difference for one row, up to 15 bits: i32 suffices, since
/// |acc| <= 2^16 * (2^15 - 1) + 2^14 < 2^31. The filter is symmetric, so the taps are paired
/// (`f0 * (d0 + d4) + ...`, exact in integers). Returns whether any output is non-zero.
#[inline(always)]
fn vertical_i32(p: &[&[u16]; 5], c: &[&[u16]; 5], bpc: u32, out: &mut [i32]) -> bool {
    let w = out.len();
    let (p0, p1, p2, p3, p4) = (&p[0][..w], &p[1][..w], &p[2][..w], &p[3][..w], &p[4][..w]);
    let (c0, c1, c2, c3, c4) = (&c[0][..w], &c[1][..w], &c[2][..w], &c[3][..w], &c[4][..w]);
    let (f0, f1, f2) = (FILTER[0] as i32, FILTER[1] as i32, FILTER[2] as i32);
    let round = 1i32 << (bpc - 1);
    let d = |a: u16, b: u16| i32::from(a) - i32::from(b);
    let mut any = 0i32;
    for j in 0..w {
        let acc = f0 * (d(p0[j], c0[j]) + d(p4[j], c4[j]))
            + f1 * (d(p1[j], c1[j]) + d(p3[j], c3[j]))
            + f2 * d(p2[j], c2[j]);
        let v = (acc + round) >> bpc;
        out[j] = v;
        any |= v;
    }
    any != 0
}

/// Vertical pass for 16-bit samples: |acc| <= 2^16 * 65535 + 2^15 < 2^32, so i64 (as libvmaf's
/// 16-bit path).
#[inline(always)]
fn vertical_i64(p: &[&[u16]; 5], c: &[&[u16]; 5], bpc: u32, out: &mut [i32]) -> bool {
    let w = out.len();
    let round = 1i64 << (bpc - 1);
    let mut any = 0i32;
    for (j, o) in out.iter_mut().enumerate() {
        let mut acc: i64 = 0;
        for k in 0..5 {
            acc += FILTER[k] * (i64::from(p[k][j]) - i64::from(c[k][j]));
        }
        let v = ((acc + round) >> bpc) as i32;
        *o = v;
        any |= v;
    }
    let _ = w;
    any != 0
}

/// Horizontal pass over one vertically blurred row, then the sum of absolute values.
#[inline(always)]
fn row_sad(y: &[i32]) -> u64 {
    let w = y.len();
    let x_round: i64 = 1 << 15;
    let tap = |j: usize| -> u64 {
        let mut acc: i64 = 0;
        for (k, f) in FILTER.iter().enumerate() {
            acc += f * i64::from(y[mirror(j as isize - RADIUS as isize + k as isize, w)]);
        }
        ((acc + x_round) >> 16).unsigned_abs()
    };
    // |blurred| <= 65535 and w <= 15360 at 16K: the row sum stays below 2^30.
    let mut sum: u64 = 0;
    for j in 0..RADIUS.min(w) {
        sum += tap(j);
    }
    sum += row_sad_interior(y);
    for j in w.saturating_sub(RADIUS).max(RADIUS)..w {
        sum += tap(j);
    }
    sum
}

/// The columns 2..w-2 (no mirroring). |y| <= 65535, so the accumulator needs 33 bits; it is
/// split exactly into i32 halves: with y = 256 * yh + yl (0 <= yl < 256), A = sum f * yh
/// (|A| <= 2^16 * 256) and B = sum f * yl (0 <= B < 2^24), acc = 256 * A + B; with A = 256 * Ah + Al
/// (0 <= Al < 256), (acc + 2^15) >> 16 = Ah + ((256 * Al + B + 2^15) >> 16) (floor division by
/// 2^16 of a multiple of 2^16 plus a rest), every term below 2^26.
#[inline(always)]
fn row_sad_interior(y: &[i32]) -> u64 {
    let (f0, f1, f2) = (FILTER[0] as i32, FILTER[1] as i32, FILTER[2] as i32);
    if y.len() < 5 {
        return 0;
    }
    let n = y.len() - 4;
    let (y0, y1, y2, y3, y4) = (
        &y[..n],
        &y[1..n + 1],
        &y[2..n + 2],
        &y[3..n + 3],
        &y[4..n + 4],
    );
    let mut sum: u32 = 0;
    let mut total: u64 = 0;
    // Sum in u32 chunks: each |value| <= 65535, so 2^15 of them stay below 2^32.
    for start in (0..n).step_by(1 << 15) {
        let end = (start + (1 << 15)).min(n);
        sum = 0;
        for j in start..end {
            let (h0, l0) = (y0[j] >> 8, y0[j] & 255);
            let (h1, l1) = (y1[j] >> 8, y1[j] & 255);
            let (h2, l2) = (y2[j] >> 8, y2[j] & 255);
            let (h3, l3) = (y3[j] >> 8, y3[j] & 255);
            let (h4, l4) = (y4[j] >> 8, y4[j] & 255);
            let a = f0 * (h0 + h4) + f1 * (h1 + h3) + f2 * h2;
            let b = f0 * (l0 + l4) + f1 * (l1 + l3) + f2 * l2;
            let v = (a >> 8) + (((a & 255) * 256 + b + (1 << 15)) >> 16);
            sum += v.unsigned_abs();
        }
        total += u64::from(sum);
    }
    let _ = sum;
    total
}

/// The per-frame score `VMAF_integer_feature_motion_sad_score` with libvmaf's default options:
/// `min(sad / 256 / (w*h) * fps_weight, max_val)`. libvmaf 3.2.0 integer_motion.c: `extract`.
pub fn sad_score(sad: u64, w: usize, h: usize) -> f64 {
    sad_score_with(sad, w, h, &MotionParams::default())
}

/// [`sad_score`] with explicit options (`force_zero` gives 0).
pub fn sad_score_with(sad: u64, w: usize, h: usize, p: &MotionParams) -> f64 {
    if p.force_zero {
        return 0.0;
    }
    // libvmaf: `(double)sad / 256. / (w * h) * s->motion_fps_weight`, then MIN with max_val.
    // w * h is an unsigned (32-bit) product there; at 16K it is 132710400 < 2^32.
    let score = sad as f64 / 256.0 / ((w * h) as f64) * p.fps_weight;
    c_min(score, p.max_val)
}

/// C's `MIN(x, y)`: `x < y ? x : y`.
#[inline]
fn c_min(x: f64, y: f64) -> f64 {
    if x < y { x } else { y }
}

/// libvmaf 3.2.0 motion_blend_tools.h: `motion_blend`.
#[inline]
pub fn motion_blend(score: f64, blend_factor: f64, blend_offset: f64) -> f64 {
    score * blend_factor + (1.0 - blend_factor) * c_min(blend_offset, score)
}

/// The motion scores of one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotionScores {
    /// Frame index (counts every frame pushed since the start or the last reset).
    pub index: u64,
    /// `VMAF_integer_feature_motion_sad_score`.
    pub sad_score: f64,
    /// `integer_motion2`.
    pub motion2: f64,
    /// `integer_motion3`.
    pub motion3: f64,
}

/// Turns the sequence of per-frame SAD scores into `integer_motion2` and `integer_motion3`,
/// frame by frame, as libvmaf 3.2.0's `flush()` (integer_motion.c) does for the whole clip.
///
/// With the default options (`stride` = `min_idx` = 1):
/// - `motion2[0] = 0`; `motion2[i] = min(s[i], s[i+1])`; the last frame: `motion2[n-1] = s[n-1]`.
/// - `motion3[0] = min(blend(s[1]), max_val)` (`s[min_idx]`, if the clip has a second frame, else 0);
///   `motion3[i] = min(blend(motion2[i]), max_val)`, averaged with the previous processed value
///   when `moving_average` is set.
///
/// So frame i is final as soon as frame i+1's SAD score is known ([`MotionSequence::push`]), and
/// the last frame at the end of the clip ([`MotionSequence::finish`]).
#[derive(Clone, Debug)]
pub struct MotionSequence {
    params: MotionParams,
    /// Frames seen so far.
    count: u64,
    /// The next frame to emit.
    next_out: u64,
    /// libvmaf's `prev_processed` (the previous frame's processed motion3 input).
    prev_processed: f64,
    /// The last SAD scores with their indices (frame i needs i-1 .. i+1 and `min_idx`).
    history: std::collections::VecDeque<(u64, f64)>,
}

impl MotionSequence {
    pub fn new(params: MotionParams) -> Self {
        MotionSequence {
            params,
            count: 0,
            next_out: 0,
            prev_processed: 0.0,
            history: Default::default(),
        }
    }

    pub fn params(&self) -> &MotionParams {
        &self.params
    }

    /// Forget everything (a new clip starts at index 0).
    pub fn reset(&mut self) {
        *self = MotionSequence::new(self.params);
    }

    /// Frames pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    fn score_at(&self, idx: u64) -> Option<f64> {
        self.history
            .iter()
            .find(|&&(i, _)| i == idx)
            .map(|&(_, s)| s)
    }

    /// Append the next frame's SAD score (frames before `min_idx` have score 0, as libvmaf writes
    /// them). Returns the frames that became final.
    pub fn push(&mut self, sad_score: f64) -> Vec<MotionScores> {
        let idx = self.count;
        self.count += 1;
        self.history.push_back((idx, sad_score));
        // motion2 of frame i looks at i - (stride - 1) .. i + 1; motion3 of frame 0 at min_idx.
        while self.history.len() > 4 {
            self.history.pop_front();
        }
        let mut out = Vec::new();
        while let Some(s) = self.emit(false) {
            out.push(s);
        }
        out
    }

    /// End of clip: the remaining frames (normally the last one).
    pub fn finish(&mut self) -> Vec<MotionScores> {
        let mut out = Vec::new();
        while let Some(s) = self.emit(true) {
            out.push(s);
        }
        out
    }

    fn emit(&mut self, flushing: bool) -> Option<MotionScores> {
        let i = self.next_out;
        if i >= self.count {
            return None;
        }
        let p = self.params;
        let min_idx = p.min_idx();
        let stride = p.frame_distance();
        // Frame i needs s[i+1] (or the end of the clip); frame 0's motion3 needs s[min_idx].
        let needed = (i + 1).max(if i < min_idx { min_idx } else { 0 });
        if !flushing && needed >= self.count {
            return None;
        }
        let has = |k: u64| k < self.count;
        let sad_i = self.score_at(i)?;

        let motion2 = if i < min_idx {
            0.0
        } else {
            let lo_idx = i + 1 - stride;
            let hi_idx = i + 1;
            if !has(hi_idx) {
                sad_i
            } else {
                let hi = self.score_at(hi_idx)?;
                if lo_idx >= min_idx {
                    let lo = self.score_at(lo_idx)?;
                    if lo < hi { lo } else { hi }
                } else {
                    hi
                }
            }
        };

        let motion3 = if i < min_idx {
            // libvmaf's `stamp_value`: the processed score at min_idx, if the clip reaches it.
            let stamp = if has(min_idx) {
                let s = self.score_at(min_idx)?;
                c_min(motion_blend(s, p.blend_factor, p.blend_offset), p.max_val)
            } else {
                0.0
            };
            self.prev_processed = stamp;
            stamp
        } else {
            let processed = c_min(
                motion_blend(motion2, p.blend_factor, p.blend_offset),
                p.max_val,
            );
            let m3 = if p.moving_average {
                (processed + self.prev_processed) / 2.0
            } else {
                processed
            };
            self.prev_processed = processed;
            m3
        };

        self.next_out += 1;
        Some(MotionScores {
            index: i,
            sad_score: sad_i,
            motion2,
            motion3,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::picture::OwnedPlane;

    fn plane(w: usize, h: usize, bpc: u8, mut f: impl FnMut(usize, usize) -> u16) -> OwnedPlane {
        let mut data = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                data.push(f(x, y));
            }
        }
        OwnedPlane {
            data,
            width: w,
            height: h,
            bpc,
        }
    }

    /// A direct transcription of the reference algorithm (two full passes over the frame, every
    /// tap mirrored), to check the row-fused, symmetric-interior code above.
    fn sad_naive(prev: &OwnedPlane, cur: &OwnedPlane) -> u64 {
        let (w, h, bpc) = (cur.width, cur.height, u32::from(cur.bpc));
        let mut v = vec![0i64; w * h];
        for i in 0..h {
            for j in 0..w {
                let mut acc = 0i64;
                for (k, f) in FILTER.iter().enumerate() {
                    let r = mirror(i as isize - 2 + k as isize, h);
                    acc += f * (i64::from(prev.data[r * w + j]) - i64::from(cur.data[r * w + j]));
                }
                v[i * w + j] = (acc + (1 << (bpc - 1))) >> bpc;
            }
        }
        let mut sad = 0u64;
        for i in 0..h {
            for j in 0..w {
                let mut acc = 0i64;
                for (k, f) in FILTER.iter().enumerate() {
                    let c = mirror(j as isize - 2 + k as isize, w);
                    acc += f * v[i * w + c];
                }
                sad += ((acc + (1 << 15)) >> 16).unsigned_abs();
            }
        }
        sad
    }

    /// xorshift64*: deterministic test content.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    #[test]
    fn identical_frames_have_zero_motion() {
        for bpc in [8u8, 10, 16] {
            let max = (1u32 << bpc) - 1;
            let a = plane(67, 41, bpc, |x, y| {
                ((x * 37 + y * 11) as u32 % (max + 1)) as u16
            });
            assert_eq!(sad(a.view(), a.view()), 0, "bpc {bpc}");
        }
        assert_eq!(sad_score(0, 67, 41), 0.0);
    }

    #[test]
    fn filter_sums_to_two_to_the_sixteen() {
        assert_eq!(FILTER.iter().sum::<i64>(), 1 << 16);
    }

    #[test]
    fn mirror_matches_libvmaf() {
        // 3.2.0: idx < 0 -> -idx, idx >= n -> 2n - idx - 2.
        assert_eq!(mirror(-1, 10), 1);
        assert_eq!(mirror(-2, 10), 2);
        assert_eq!(mirror(10, 10), 8);
        assert_eq!(mirror(11, 10), 7);
        assert_eq!(mirror(5, 10), 5);
    }

    /// A constant offset between frames: the vertical pass turns a difference `d` into
    /// `d * 2^(16 - bpc)` exactly (the filter sums to 2^16), the horizontal pass keeps it, so
    /// SAD = offset * 2^(16 - bpc) * w * h and the score is offset / 2^(bpc - 8).
    #[test]
    fn constant_offset_gives_offset_per_pixel() {
        for bpc in [8u8, 10, 12, 16] {
            let off = 3u16 << (bpc - 8);
            let a = plane(40, 35, bpc, |x, y| ((x * 3 + y * 5) % 200) as u16);
            let b = plane(40, 35, bpc, |x, y| ((x * 3 + y * 5) % 200) as u16 + off);
            let want = (u64::from(off) << (16 - bpc)) * 40 * 35;
            assert_eq!(sad(a.view(), b.view()), want, "bpc {bpc}");
            assert_eq!(sad(b.view(), a.view()), want, "bpc {bpc}");
            assert_eq!(sad_score(want, 40, 35), 3.0, "bpc {bpc}");
        }
    }

    /// A known shift: a vertical step edge (20 | 120, 8 bit) moved right by one column. The
    /// difference is one column of 100; the vertical pass gives (2^16 * 100 + 2^7) >> 8 = 25600 on
    /// every row, the horizontal pass (f * 25600 + 2^15) >> 16 for the five taps:
    /// 1395, 6252, 10307, 6252, 1395 = 25601 per row.
    #[test]
    fn shifted_edge_known_sad() {
        let (w, h) = (48, 36);
        let edge = |e: usize| move |x: usize, _y: usize| if x < e { 20u16 } else { 120u16 };
        let a = plane(w, h, 8, edge(20));
        let b = plane(w, h, 8, edge(21));
        let per_row = 1395 + 6252 + 10307 + 6252 + 1395;
        assert_eq!(sad(a.view(), b.view()), per_row * h as u64);
        assert_eq!(sad(b.view(), a.view()), per_row * h as u64);
        assert_eq!(sad_naive(&a, &b), per_row * h as u64);
    }

    #[test]
    fn matches_naive_reference_on_random_content() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for &(w, h, bpc) in &[
            (33usize, 33usize, 8u8),
            (34, 35, 10),
            (67, 41, 12),
            (100, 37, 16),
            (1920, 40, 8),
            (257, 36, 15),
            (4, 6, 10),
            (5, 5, 8),
            (3, 7, 16),
        ] {
            let max = (1u64 << bpc) - 1;
            let a = plane(w, h, bpc, |_, _| (rng.next() % (max + 1)) as u16);
            let b = plane(w, h, bpc, |_, _| (rng.next() % (max + 1)) as u16);
            let want = sad_naive(&a, &b);
            assert_eq!(sad(a.view(), b.view()), want, "{w}x{h} {bpc}-bit");
            // The baseline (non-AVX2) variant too, whatever this CPU dispatches to.
            assert_eq!(sad_inner(a.view(), b.view()), want, "{w}x{h} {bpc}-bit");
        }
    }

    /// Max-difference content (a checkerboard of 0 and 2^bpc - 1 against its inverse) stays within
    /// the documented per-pixel bound of 65535 and matches the naive transcription.
    #[test]
    fn max_difference_within_bound() {
        for bpc in [8u8, 16] {
            let max = ((1u32 << bpc) - 1) as u16;
            let a = plane(64, 40, bpc, |x, y| if (x + y) % 2 == 0 { max } else { 0 });
            let b = plane(64, 40, bpc, |x, y| if (x + y) % 2 == 0 { 0 } else { max });
            let z = plane(64, 40, bpc, |_, _| 0);
            let m = plane(64, 40, bpc, |_, _| max);
            for (p, c) in [(&a, &b), (&z, &m), (&m, &z)] {
                let s = sad(p.view(), c.view());
                assert_eq!(s, sad_naive(p, c));
                assert_eq!(sad_inner(p.view(), c.view()), s);
                assert!(s <= 65535 * 64 * 40, "bpc {bpc}: {s}");
            }
            // all-max against all-zero: every blurred sample is the full difference, scaled.
            assert_eq!(
                sad(m.view(), z.view()),
                (u64::from(max) << (16 - bpc)) * 64 * 40
            );
        }
    }

    /// The documented worst case of a row: 16K wide, 16-bit, all-max against all-zero: every
    /// blurred sample is 65535, each row sums to 15360 * 65535 (the row accumulator's bound), and
    /// the frame SAD scales with the height (here 6 rows; 8640 rows give 8.7e12 < 2^64).
    #[test]
    fn row_bound_at_16k_width() {
        let (w, h) = (15360, 6);
        let m = plane(w, h, 16, |_, _| u16::MAX);
        let z = plane(w, h, 16, |_, _| 0);
        let want = 65535 * w as u64 * h as u64;
        assert_eq!(sad(m.view(), z.view()), want);
        assert_eq!(sad(z.view(), m.view()), want);
        assert_eq!(sad_inner(m.view(), z.view()), want);
        let m15 = plane(w, h, 15, |_, _| 0x7fff);
        let z15 = plane(w, h, 15, |_, _| 0);
        // 15 bits: (2^16 * 32767 + 2^14) >> 15 = 65534 per sample.
        assert_eq!(sad(m15.view(), z15.view()), 65534 * w as u64 * h as u64);
    }

    #[test]
    fn sad_score_formula() {
        // 256 * w * h -> exactly 1.0
        assert_eq!(sad_score(256 * 40 * 35, 40, 35), 1.0);
        // clipped at max_val
        assert_eq!(sad_score(u64::MAX / 2, 33, 33), DEFAULT_MOTION_MAX_VAL);
        let p = MotionParams {
            force_zero: true,
            ..Default::default()
        };
        assert_eq!(sad_score_with(1 << 20, 40, 35, &p), 0.0);
    }

    fn run(scores: &[f64], p: MotionParams) -> Vec<MotionScores> {
        let mut seq = MotionSequence::new(p);
        let mut out = Vec::new();
        for (i, &s) in scores.iter().enumerate() {
            let got = seq.push(s);
            // Frame i - 1 becomes final when frame i arrives (frame 0 needs s[min_idx]).
            for g in &got {
                assert!(g.index < i as u64);
            }
            out.extend(got);
        }
        out.extend(seq.finish());
        out
    }

    #[test]
    fn motion2_motion3_defaults() {
        let s = [0.0, 4.0, 2.0, 7.0, 5.0];
        let out = run(&s, MotionParams::default());
        let m2: Vec<f64> = out.iter().map(|m| m.motion2).collect();
        let m3: Vec<f64> = out.iter().map(|m| m.motion3).collect();
        assert_eq!(m2, [0.0, 2.0, 2.0, 5.0, 5.0]);
        // frame 0: stamp = s[1]; others: motion2 (blend factor 1, max 10000).
        assert_eq!(m3, [4.0, 2.0, 2.0, 5.0, 5.0]);
        assert_eq!(
            out.iter().map(|m| m.index).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn motion_single_and_two_frames() {
        let out = run(&[0.0], MotionParams::default());
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].motion2, out[0].motion3), (0.0, 0.0));
        let out = run(&[0.0, 3.5], MotionParams::default());
        assert_eq!(
            out.iter()
                .map(|m| (m.motion2, m.motion3))
                .collect::<Vec<_>>(),
            [(0.0, 3.5), (3.5, 3.5)]
        );
    }

    #[test]
    fn motion3_options() {
        let p = MotionParams {
            moving_average: true,
            blend_factor: 0.5,
            blend_offset: 3.0,
            max_val: 4.5,
            ..Default::default()
        };
        let s = [0.0, 4.0, 2.0, 7.0, 8.0];
        let out = run(&s, p);
        let blend = |x: f64| c_min(x * 0.5 + 0.5 * c_min(3.0, x), 4.5);
        let m2 = [0.0, 2.0, 2.0, 7.0, 8.0];
        let stamp = blend(4.0);
        let mut want = vec![stamp];
        let mut prev = stamp;
        for &m in &m2[1..] {
            let pr = blend(m);
            want.push((pr + prev) / 2.0);
            prev = pr;
        }
        assert_eq!(out.iter().map(|m| m.motion2).collect::<Vec<_>>(), m2);
        assert_eq!(out.iter().map(|m| m.motion3).collect::<Vec<_>>(), want);
    }

    #[test]
    fn five_frame_window_motion2() {
        // stride 2, min_idx 2: frames 0,1 -> 0; frame 2 -> s[3]; frame i>2 -> min(s[i-1], s[i+1]);
        // last -> s[n-1].
        let p = MotionParams {
            five_frame_window: true,
            ..Default::default()
        };
        let s = [0.0, 0.0, 6.0, 3.0, 9.0, 1.0];
        let out = run(&s, p);
        assert_eq!(
            out.iter().map(|m| m.motion2).collect::<Vec<_>>(),
            [0.0, 0.0, 3.0, 6.0, 1.0, 1.0]
        );
        assert_eq!(out[0].motion3, 6.0);
        assert_eq!(out[1].motion3, 6.0);
    }
}
