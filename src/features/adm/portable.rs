#[cfg(target_arch = "x86_64")]
use super::x86;
use super::{
    AdmConstants, Bands16, Bands32, FIX_ONE_BY_30, HI, I4_FIX_ONE_BY_30, I4_FLT_ROUND,
    I4_ONE_BY_15, LO, LO_SUM, ONE_BY_15, Plane, ScaleGeometry, cm_shifts_s0, cm_shifts_s123,
    den_shift_s0, den_shifts_s123, round_add,
};

// Shared row helpers
// ---------------------------------------------------------------------------------------------

/// Horizontal DWT pass over one row `t` of the vertical pass: output `j` from the four inputs
/// `ix[j]`. Outputs `1 .. reg_end` read `t[2j-1 ..= 2j+2]` without mirroring and are computed
/// from contiguous pairs (so that the loop vectorises); output 0 and the last ones go through
/// the index table. Outputs `1 ..= done` are already there (an AVX2 kernel did them).
#[inline(always)]
fn hpass<T: Copy, U>(
    t: &[T],
    ix: &[[usize; 4]],
    lo: &mut [U],
    hi: &mut [U],
    done: usize,
    f: impl Fn([T; 4]) -> (U, U),
) {
    let half = ix.len();
    debug_assert!(t.len() >= 5 && lo.len() == half && hi.len() == half);
    // Output j needs 2j + 2 <= n - 1.
    let reg_end = ((t.len() - 1) / 2).min(half);
    let at = |j: usize| {
        let i = ix[j];
        [t[i[0]], t[i[1]], t[i[2]], t[i[3]]]
    };
    (lo[0], hi[0]) = f(at(0));
    for j in reg_end..half {
        (lo[j], hi[j]) = f(at(j));
    }
    let first = 1 + done;
    debug_assert!(first <= reg_end);
    let pairs_a = t[2 * first - 1..2 * reg_end - 1].chunks_exact(2);
    let pairs_b = t[2 * first + 1..2 * reg_end + 1].chunks_exact(2);
    let outs = lo[first..reg_end]
        .iter_mut()
        .zip(hi[first..reg_end].iter_mut());
    for ((p, q), (l, h)) in pairs_a.zip(pairs_b).zip(outs) {
        (*l, *h) = f([p[0], p[1], q[0], q[1]]);
    }
}

/// The one-degree angle test of `adm_decouple`/`adm_decouple_s123`, in libvmaf's types (a
/// floating-point step per pixel, reproduced exactly): the 64-bit dot product and squared norms
/// are converted to float, divided by 4096.0 in double and compared in double:
/// `ot >= 0 && ot * ot >= cos_1deg_sq * om * tm` (left to right).
#[inline(always)]
fn angle_flag(ot_dp: i64, o_mag_sq: i64, t_mag_sq: i64, cos_1deg_sq: f32) -> bool {
    let ot = ot_dp as f32 as f64 / 4096.0;
    let om = o_mag_sq as f32 as f64 / 4096.0;
    let tm = t_mag_sq as f32 as f64 / 4096.0;
    // `&` rather than `&&`: both sides are cheap and free of side effects, and the sign of
    // `ot` is data-dependent (a branch would mispredict).
    (ot >= 0.0) & (ot * ot >= cos_1deg_sq as f64 * om * tm)
}

/// The enhancement-gain step of decouple (floating point per pixel in libvmaf, reproduced
/// exactly), applied when the angle test passed: when `rst_f = ((float)k / 32768) *
/// ((float)o / 64)` is positive, `rst = MIN(rst * egl, t)`; when it is negative,
/// `rst = MAX(rst * egl, t)`, with `rst * egl` in double, `MIN(x, y) = x < y ? x : y`,
/// `MAX(x, y) = x > y ? x : y`, and the result (between `t` and `rst * egl`, so in range)
/// truncated back to the integer type. The sign of the float product `rst_f` is the sign of
/// `k * o` (`k` in 0..=32768 and `o` nonzero give a magnitude of 2^-21 or more: no underflow),
/// so it is tested on the integers. Neither operand is NaN or -0.0 (egl >= 1), so `f64::min`
/// and `f64::max` are libvmaf's macros.
#[inline(always)]
fn enhance(rst: i64, k: i64, o: i64, t: i64, egl: f64) -> i64 {
    if k > 0 && o != 0 {
        let (x, tf) = (rst as f64 * egl, t as f64);
        (if o > 0 { x.min(tf) } else { x.max(tf) }) as i64
    } else {
        rst
    }
}

/// `if c { a } else { b }` without a branch.
#[inline(always)]
fn select(c: bool, a: i64, b: i64) -> i64 {
    let m = (c as i64).wrapping_neg();
    (a & m) | (b & !m)
}

/// `x.clamp(0, 32768)` without a branch.
#[inline(always)]
fn clamp_q15(x: i64) -> i64 {
    let x = x & !(x >> 63);
    let over = x - 32768;
    x - (over & !(over >> 63))
}

/// Mirrored neighbours of the masking filter: `i - 1` (`-1 -> 1`) and `i + 1` (`n -> n - 1`),
/// as libvmaf's `ADM_CM_THRESH_S_*` macros read them.
#[inline(always)]
fn neighbours(i: usize, n: usize) -> (usize, usize) {
    (
        if i == 0 { 1 } else { i - 1 },
        if i + 1 == n { n - 1 } else { i + 1 },
    )
}

/// Per-row state of the masking step: the 3-row column sums of the masking filter input and the
/// threshold of each pixel of the row.
struct MaskRow {
    colsum: Vec<i32>,
    thr: Vec<i32>,
}

impl MaskRow {
    fn new(g: &ScaleGeometry) -> Self {
        MaskRow {
            colsum: vec![0; g.width],
            thr: vec![0; g.inner.width()],
        }
    }

    /// The threshold of every pixel of row `i` of the inner region: over the three orientations,
    /// the 8 mirrored neighbours of `flt` plus `centre(csf)` at the pixel, i.e. the 3x3 sum of
    /// `flt` (as column sums over rows `i-1, i, i+1`) minus `flt` at the pixel plus the centre
    /// term. All in int32 as libvmaf (wrapping adds; the terms are far below 2^31 / 27).
    #[inline(always)]
    fn fill<T: Copy + Into<i32>>(
        &mut self,
        flt: &[Vec<T>; 3],
        csf: &[Vec<T>; 3],
        g: &ScaleGeometry,
        i: usize,
        centre: impl Fn(T) -> i32,
    ) {
        let (bw, bh) = (g.width, g.height);
        let rect = g.inner;
        let (im, ip) = neighbours(i, bh);
        // Columns left - 1 ..= right (clamped): every neighbour of the row's pixels (column 1 is
        // included when left = 0 because right >= 2).
        let (c0, c1) = (rect.left.saturating_sub(1), (rect.right + 1).min(bw));
        let cs = &mut self.colsum[c0..c1];
        cs.fill(0);
        for f in flt {
            let rows = [
                &f[im * bw + c0..im * bw + c1],
                &f[i * bw + c0..i * bw + c1],
                &f[ip * bw + c0..ip * bw + c1],
            ];
            for (k, s) in cs.iter_mut().enumerate() {
                *s = s
                    .wrapping_add(rows[0][k].into())
                    .wrapping_add(rows[1][k].into())
                    .wrapping_add(rows[2][k].into());
            }
        }
        let row = i * bw + rect.left..i * bw + rect.right;
        self.thr.fill(0);
        for (f, c) in flt.iter().zip(csf) {
            for ((t, &fv), &cv) in self
                .thr
                .iter_mut()
                .zip(&f[row.clone()])
                .zip(&c[row.clone()])
            {
                *t = t.wrapping_add(centre(cv)).wrapping_sub(fv.into());
            }
        }
        // Columns with both neighbours inside: j - 1, j, j + 1.
        let (j0, j1) = (rect.left.max(1), rect.right.min(bw - 1));
        let cs = &self.colsum;
        let (a, b, c) = (&cs[j0 - 1..j1 - 1], &cs[j0..j1], &cs[j0 + 1..j1 + 1]);
        let t = &mut self.thr[j0 - rect.left..j1 - rect.left];
        for (((t, &a), &b), &c) in t.iter_mut().zip(a).zip(b).zip(c) {
            *t = t.wrapping_add(a).wrapping_add(b).wrapping_add(c);
        }
        // Mirrored columns 0 and bw - 1 when the region reaches them.
        for j in [0, bw - 1] {
            if (rect.left..rect.right).contains(&j) && !(j0..j1).contains(&j) {
                let (jm, jp) = neighbours(j, bw);
                let t = &mut self.thr[j - rect.left];
                *t = t
                    .wrapping_add(cs[jm])
                    .wrapping_add(cs[j])
                    .wrapping_add(cs[jp]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scale 0 (16-bit bands)
// ---------------------------------------------------------------------------------------------

/// `adm_dwt2_16` (and `adm_dwt2_8`, identical at `bpc` 8) on one image: bands `a, v` (low-pass
/// vertical) and `h, d` (high-pass vertical) of `(w + 1) / 2` x `(h + 1) / 2`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn dwt_s0(
    src: &Plane<'_>,
    iy: &[[usize; 4]],
    ix: &[[usize; 4]],
    tlo: &mut [i16],
    thi: &mut [i16],
    out: &mut Bands16,
    bw: usize,
    simd: bool,
) {
    let w = src.width;
    let shift = src.bpc as u32;
    // C: `add_shift_VP = 1 << (inp_size_bits - 1)`; `accum -= dwt2_db2_coeffs_lo_sum *
    // add_shift_VP` (46342 * 2^15 = 1 518 534 656 at 16 bits: fits int32).
    let add: i32 = 1 << (shift - 1);
    let lo_norm = LO_SUM * add;
    let (tlo, thi) = (&mut tlo[..w], &mut thi[..w]);
    for (i, rows) in iy.iter().enumerate() {
        let (r0, r1, r2, r3) = (
            src.row(rows[0]),
            src.row(rows[1]),
            src.row(rows[2]),
            src.row(rows[3]),
        );
        // Vertical pass. In int32 as libvmaf: at 16 bits the low-pass sum of the positive taps
        // (50582 * 65535 = 3.3e9) wraps int32, and subtracting 46342 * 2^15 brings it back in
        // range (the true value is within -1.80e9..1.80e9), so wrapping arithmetic gives the
        // exact result, as libvmaf's wrapping int32 does. Stored values: -27411..=27411.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut v0 = 0;
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `simd` is true only in compute_avx2 and compute_avx512, whose callers
            // checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            v0 = unsafe { x86::dwt_s0_vertical([r0, r1, r2, r3], tlo, thi, shift) };
        }
        let srcs = r0[v0..].iter().zip(&r1[v0..]).zip(&r2[v0..]).zip(&r3[v0..]);
        let outs = tlo[v0..].iter_mut().zip(thi[v0..].iter_mut());
        for ((((&s0, &s1), &s2), &s3), (l, h)) in srcs.zip(outs) {
            let (s0, s1, s2, s3) = (s0 as i32, s1 as i32, s2 as i32, s3 as i32);
            let lo = (LO[0] * s0)
                .wrapping_add(LO[1] * s1)
                .wrapping_add(LO[2] * s2)
                .wrapping_add(LO[3] * s3)
                .wrapping_sub(lo_norm);
            *l = (lo.wrapping_add(add) >> shift) as i16;
            let hi = (HI[0] * s0)
                .wrapping_add(HI[1] * s1)
                .wrapping_add(HI[2] * s2)
                .wrapping_add(HI[3] * s3);
            *h = (hi.wrapping_add(add) >> shift) as i16;
        }
        // Horizontal pass: `(sum + 2^15) >> 16` in int32 (|sum| <= 54822 * 27411 = 1.50e9: no
        // overflow), stored as int16 (|value| <= 22 930).
        let f = |s: [i16; 4]| {
            let s = s.map(i32::from);
            let sl = LO[0] * s[0] + LO[1] * s[1] + LO[2] * s[2] + LO[3] * s[3];
            let sh = HI[0] * s[0] + HI[1] * s[1] + HI[2] * s[2] + HI[3] * s[3];
            (((sl + 32768) >> 16) as i16, ((sh + 32768) >> 16) as i16)
        };
        let o = i * bw..(i + 1) * bw;
        let (a, v) = (&mut out.a[o.clone()], &mut out.v[o.clone()]);
        let (hb, db) = (&mut out.h[o.clone()], &mut out.d[o]);
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let (mut done_lo, mut done_hi) = (0, 0);
        #[cfg(target_arch = "x86_64")]
        if simd {
            // Outputs 1 .. reg_end are the regular ones (see `hpass`).
            let reg_end = ((w - 1) / 2).min(bw);
            // SAFETY: as for the vertical pass.
            unsafe {
                done_lo = x86::dwt_s0_horizontal(tlo, a, v, reg_end);
                done_hi = x86::dwt_s0_horizontal(thi, hb, db, reg_end);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        hpass(tlo, ix, a, v, done_lo, f);
        hpass(thi, ix, hb, db, done_hi, f);
    }
}

/// One orientation of `adm_decouple`: `k = clamp(t / o, 0, 1)` in Q15 through the reciprocal
/// table (`((int64)div_lookup[o + 32768] * t + 16384) >> 15`, fits int32; 32768 for `o = 0`),
/// `rst = (k * o + 16384) >> 15` (int32, in int16 range), the enhancement gain, and the
/// int16 stores of `r = rst` and `a = t - rst`.
#[inline(always)]
fn decouple_one_s0(o: i16, t: i16, flag: bool, egl: f64, lut: &[i32; 65537]) -> (i16, i16) {
    // `o as u16 ^ 0x8000` is `o + 32768`; entry 32768 (o = 0) is 0, replaced by 32768 below.
    let recip = lut[(o as u16 ^ 0x8000) as usize] as i64;
    let k = select(o == 0, 32768, clamp_q15((recip * t as i64 + 16384) >> 15));
    let mut rst = (k * o as i64 + 16384) >> 15;
    if flag {
        rst = enhance(rst, k, o as i64, t as i64, egl);
    }
    let r = rst as i16;
    (r, (t as i32 - r as i32) as i16)
}

/// `adm_decouple` over the outer region, in place: the reference's `h, v, d` become `r`, the
/// distorted's become `a = t - r`.
#[inline(always)]
pub(super) fn decouple_s0(
    o: &mut Bands16,
    t: &mut Bands16,
    g: &ScaleGeometry,
    c: &AdmConstants,
    lut: &[i32; 65537],
    simd: bool,
) {
    let (bw, rect, egl) = (g.width, g.outer, c.enhn_gain_limit);
    for i in rect.top..rect.bottom {
        let row = i * bw + rect.left..i * bw + rect.right;
        let n = row.len();
        let (oh, ov, od) = (
            &mut o.h[row.clone()],
            &mut o.v[row.clone()],
            &mut o.d[row.clone()],
        );
        let (th, tv, td) = (&mut t.h[row.clone()], &mut t.v[row.clone()], &mut t.d[row]);
        let (ov, od, th, tv, td) = (
            &mut ov[..n],
            &mut od[..n],
            &mut th[..n],
            &mut tv[..n],
            &mut td[..n],
        );
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut start = 0;
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `simd` is true only in compute_avx2 and compute_avx512, whose callers
            // checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            start = unsafe {
                x86::decouple_row_s0(
                    [&mut *oh, &mut *ov, &mut *od],
                    [&mut *th, &mut *tv, &mut *td],
                    c.cos_1deg_sq,
                    egl,
                    lut,
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        for j in start..n {
            let (h0, v0, d0) = (oh[j], ov[j], od[j]);
            let (h1, v1, d1) = (th[j], tv[j], td[j]);
            // |products| <= 2^30: exact in int64.
            let ot_dp = h0 as i64 * h1 as i64 + v0 as i64 * v1 as i64;
            let o_mag_sq = h0 as i64 * h0 as i64 + v0 as i64 * v0 as i64;
            let t_mag_sq = h1 as i64 * h1 as i64 + v1 as i64 * v1 as i64;
            let flag = angle_flag(ot_dp, o_mag_sq, t_mag_sq, c.cos_1deg_sq);
            (oh[j], th[j]) = decouple_one_s0(h0, h1, flag, egl, lut);
            (ov[j], tv[j]) = decouple_one_s0(v0, v1, flag, egl, lut);
            (od[j], td[j]) = decouple_one_s0(d0, d1, flag, egl, lut);
        }
    }
}

/// `adm_csf` over the outer region: `csf = (int16)((rfactor * src + round) >> shift)` (Q21 factor
/// and shift 15 for h and v, Q23 and shift 17 for d, libvmaf's rounding constants 16384, 16384,
/// 65535) and the masking filter input `flt = (int16)((4369 * |csf| + 2048) >> 12)`
/// (`|csf| * 32 / 30`, which wraps int16 above |csf| = 30 720, as libvmaf's does).
#[inline(always)]
pub(super) fn csf_s0(
    src: &Bands16,
    csf: &mut [Vec<i16>; 3],
    flt: &mut [Vec<i16>; 3],
    g: &ScaleGeometry,
    c: &AdmConstants,
) {
    const SHIFTS: [u32; 3] = [15, 15, 17];
    const ROUND: [i32; 3] = [16384, 16384, 65535];
    let bw = g.width;
    let rect = g.outer;
    for (theta, s) in src.hvd().into_iter().enumerate() {
        let (rf, round, shift) = (c.rfactor_s0[theta] as i32, ROUND[theta], SHIFTS[theta]);
        for i in rect.top..rect.bottom {
            let range = i * bw + rect.left..i * bw + rect.right;
            let sr = &s[range.clone()];
            let cr = &mut csf[theta][range.clone()];
            let fr = &mut flt[theta][range];
            for ((&x, cv), fv) in sr.iter().zip(cr.iter_mut()).zip(fr.iter_mut()) {
                // |rf * x| <= 49417 * 32768 < 2^31.
                let v = ((rf * x as i32 + round) >> shift) as i16;
                *cv = v;
                *fv = ((FIX_ONE_BY_30 * (v as i32).abs() + 2048) >> 12) as i16;
            }
        }
    }
}

/// The denominator of scale 0 (`adm_csf_den_scale`'s loops): per row of the inner region
/// `sum |o|^3` (u64; a cube is at most 2^45, a row below 2^58), then `(row + round) >> shift`.
#[inline(always)]
pub(super) fn den_s0(o: &Bands16, g: &ScaleGeometry) -> [u64; 3] {
    let shift = den_shift_s0(g) as u32;
    let add = round_add(shift) as u64;
    let rect = g.inner;
    let mut acc = [0u64; 3];
    for (theta, b) in o.hvd().into_iter().enumerate() {
        for i in rect.top..rect.bottom {
            let row = &b[i * g.width + rect.left..i * g.width + rect.right];
            // C: `uint16_t h = (uint16_t)abs(src_h[j]); val = ((uint64_t)h * h) * h;`
            let s: u64 = row
                .iter()
                .map(|&x| {
                    let a = (x as i32).unsigned_abs() as u64;
                    a * a * a
                })
                .sum();
            acc[theta] = acc[theta].wrapping_add((s + add) >> shift);
        }
    }
    acc
}

/// `adm_cm` (scale 0) over the inner region: per pixel the threshold
/// `thr = sum over h, v, d of (8 mirrored neighbours of flt + (int16)((8738 * |csf| + 2048) >> 12))`
/// (int32; the centre term is `|csf| * 32 / 15` and wraps int16 above |csf| = 15 360, as in
/// libvmaf), then per orientation `x = |src * rfactor| - (thr << 10)` (`<< 12` for d; int32,
/// wrapping as libvmaf's does when the shifted threshold exceeds 2^31), `x = max(x, 0)`,
/// `x_sq = (int32)((x * x + 2^28) >> 29)` (`2^29`, `30` for d; the cast wraps for x above
/// 2^30.5, as in libvmaf), `val = (x_sq * x + round) >> cub`; per row `(sum + round) >> inner`.
#[inline(always)]
pub(super) fn cm_s0(
    src: &Bands16,
    csf: &[Vec<i16>; 3],
    flt: &[Vec<i16>; 3],
    g: &ScaleGeometry,
    c: &AdmConstants,
) -> [i64; 3] {
    let bw = g.width;
    let s = cm_shifts_s0(g);
    let add_inner = round_add(s.inner);
    let rect = g.inner;
    let centre = |v: i16| ((ONE_BY_15 * (v as i32).abs() + 2048) >> 12) as i16 as i32;
    let mut mask = MaskRow::new(g);
    let mut acc = [0i64; 3];
    for i in rect.top..rect.bottom {
        mask.fill(flt, csf, g, i, centre);
        let row = i * bw + rect.left..i * bw + rect.right;
        for (theta, b) in src.hvd().into_iter().enumerate() {
            let rf = c.rfactor_s0[theta] as i32;
            let (sub, sq_add, sq_shift, cub) = if theta < 2 {
                (10, 1i64 << 28, 29, s.cub_hv)
            } else {
                (12, 1i64 << 29, 30, s.cub_d)
            };
            let cub_add = round_add(cub);
            let mut sum = 0i64;
            for (&x, &t) in b[row.clone()].iter().zip(&mask.thr) {
                // |x * rf| <= 32768 * 49417 < 2^31.
                let x = (x as i32 * rf).abs().wrapping_sub(t.wrapping_shl(sub));
                let x = x.max(0) as i64;
                let x_sq = ((x * x + sq_add) >> sq_shift) as i32 as i64;
                sum = sum.wrapping_add((x_sq * x + cub_add) >> cub);
            }
            acc[theta] = acc[theta].wrapping_add(sum.wrapping_add(add_inner) >> s.inner);
        }
    }
    acc
}

// ---------------------------------------------------------------------------------------------
// Scales 1-3 (32-bit bands)
// ---------------------------------------------------------------------------------------------

/// The outputs of one scale 1-3 DWT: `a` (None at scale 3, where it is never used), `h, v, d`.
pub(super) struct DwtOut<'a> {
    pub(super) a: Option<&'a mut [i32]>,
    pub(super) h: &'a mut [i32],
    pub(super) v: &'a mut [i32],
    pub(super) d: &'a mut [i32],
}

/// `adm_dwt2_s123_combined` on one image (`input` is the previous scale's `a` band,
/// `in_width` x `in_height`, compact): vertical pass `(sum + round) >> shift` (scale 1: no
/// rounding or shift; 2, 3: `+2^15 >> 16`), horizontal pass (`+2^14 >> 15`, `+2^15 >> 16`,
/// `+2^14 >> 15` for scales 1, 2, 3), sums in int64, results cast to int32 (no wrap: the
/// vertical pass of scale 1 is at most 54822 * 22930 = 1.26e9, every band at most 1.63e9 as
/// bounded in [`AdmScaleAccum`](super::AdmScaleAccum)).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn dwt_s123<T: Copy + Into<i64>>(
    input: &[T],
    iy: &[[usize; 4]],
    ix: &[[usize; 4]],
    tlo: &mut [i32],
    thi: &mut [i32],
    out: DwtOut<'_>,
    g: &ScaleGeometry,
    scale: usize,
) {
    const ADD_VP: [i64; 3] = [0, 32768, 32768];
    const SHIFT_VP: [u32; 3] = [0, 16, 16];
    const ADD_HP: [i64; 3] = [16384, 32768, 16384];
    const SHIFT_HP: [u32; 3] = [15, 16, 15];
    let (add_vp, sh_vp) = (ADD_VP[scale - 1], SHIFT_VP[scale - 1]);
    let (add_hp, sh_hp) = (ADD_HP[scale - 1], SHIFT_HP[scale - 1]);
    let (w, bw) = (g.in_width, g.width);
    let (tlo, thi) = (&mut tlo[..w], &mut thi[..w]);
    let DwtOut { mut a, h, v, d } = out;
    let dot = |c: &[i32; 4], s: [i64; 4]| -> i64 {
        c[0] as i64 * s[0] + c[1] as i64 * s[1] + c[2] as i64 * s[2] + c[3] as i64 * s[3]
    };
    for (i, rows) in iy.iter().enumerate() {
        let row = |k: usize| &input[rows[k] * w..(rows[k] + 1) * w];
        let srcs = row(0).iter().zip(row(1)).zip(row(2)).zip(row(3));
        for ((((&s0, &s1), &s2), &s3), (l, h)) in srcs.zip(tlo.iter_mut().zip(thi.iter_mut())) {
            let s = [s0.into(), s1.into(), s2.into(), s3.into()];
            *l = ((dot(&LO, s) + add_vp) >> sh_vp) as i32;
            *h = ((dot(&HI, s) + add_vp) >> sh_vp) as i32;
        }
        let f = |s: [i32; 4]| {
            let s = s.map(i64::from);
            (
                ((dot(&LO, s) + add_hp) >> sh_hp) as i32,
                ((dot(&HI, s) + add_hp) >> sh_hp) as i32,
            )
        };
        let o = i * bw..(i + 1) * bw;
        match a.as_deref_mut() {
            Some(a) => hpass(tlo, ix, &mut a[o.clone()], &mut v[o.clone()], 0, f),
            None => hpass_hi(tlo, ix, &mut v[o.clone()], |s| f(s).1),
        }
        hpass(thi, ix, &mut h[o.clone()], &mut d[o], 0, f);
    }
}

/// [`hpass`] for the high-pass output only.
#[inline(always)]
fn hpass_hi<T: Copy, U>(t: &[T], ix: &[[usize; 4]], hi: &mut [U], f: impl Fn([T; 4]) -> U) {
    let half = ix.len();
    let reg_end = ((t.len() - 1) / 2).min(half);
    let at = |j: usize| {
        let i = ix[j];
        [t[i[0]], t[i[1]], t[i[2]], t[i[3]]]
    };
    hi[0] = f(at(0));
    for (j, h) in hi.iter_mut().enumerate().take(half).skip(reg_end) {
        *h = f(at(j));
    }
    let pairs_a = t[1..2 * reg_end - 1].chunks_exact(2);
    let pairs_b = t[3..2 * reg_end + 1].chunks_exact(2);
    for ((p, q), h) in pairs_a.zip(pairs_b).zip(hi[1..reg_end].iter_mut()) {
        *h = f([p[0], p[1], q[0], q[1]]);
    }
}

/// The divisor of `adm_decouple_s123`: `|o|` itself below 32768, else libvmaf's
/// `get_best15_from32` (its top 15 significant bits, rounded: `(x + 2^(s-1)) >> s` with
/// `s = 17 - clz(x)`), with the shift `s` (0 below 32768, where `17 - clz` is not positive).
#[inline(always)]
pub(super) fn best15(x: u32) -> (u32, u32) {
    let s = 17u32.saturating_sub(x.leading_zeros());
    ((x + ((1 << s) >> 1)) >> s, s)
}

/// One orientation of `adm_decouple_s123`: `k = clamp(t / o, 0, 1)` in Q15, dividing through
/// the reciprocal of `o`'s top 15 bits when `|o| >= 32768`:
/// `((int64)div_lookup[msb + 32768] * t * sign(o) + 2^(14 + s)) >> (15 + s)` (|lookup * t| <=
/// 2^30 * 2^31: fits int64), `rst = (k * o + 16384) >> 15` (int64, stored int32), the
/// enhancement gain, and `a = t - rst` (int32).
#[inline(always)]
fn decouple_one_s123(o: i32, t: i32, flag: bool, egl: f64, lut: &[i32; 65537]) -> (i32, i32) {
    let abs = o.unsigned_abs();
    let (msb, shift) = best15(abs);
    // `(lookup * t) * sign(o)`, written as `(lookup * sign(o)) * t` (the same exact product).
    let recip = lut[(msb + 32768) as usize] as i64;
    let recip = if o < 0 { -recip } else { recip };
    let tmp = (recip * t as i64 + (1i64 << (14 + shift))) >> (15 + shift);
    let k = select(o == 0, 32768, clamp_q15(tmp));
    let mut rst = (k * o as i64 + 16384) >> 15;
    if flag {
        rst = enhance(rst, k, o as i64, t as i64, egl);
    }
    let r = rst as i32;
    (r, t.wrapping_sub(r))
}

/// `adm_decouple_s123` over the outer region, in place (reference -> r, distorted -> a).
#[inline(always)]
pub(super) fn decouple_s123(
    o: &mut Bands32,
    t: &mut Bands32,
    g: &ScaleGeometry,
    c: &AdmConstants,
    lut: &[i32; 65537],
    simd: bool,
) {
    let (bw, rect, egl) = (g.width, g.outer, c.enhn_gain_limit);
    for i in rect.top..rect.bottom {
        let row = i * bw + rect.left..i * bw + rect.right;
        let n = row.len();
        let (oh, ov, od) = (
            &mut o.h[row.clone()],
            &mut o.v[row.clone()],
            &mut o.d[row.clone()],
        );
        let (th, tv, td) = (&mut t.h[row.clone()], &mut t.v[row.clone()], &mut t.d[row]);
        let (ov, od, th, tv, td) = (
            &mut ov[..n],
            &mut od[..n],
            &mut th[..n],
            &mut tv[..n],
            &mut td[..n],
        );
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut start = 0;
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `simd` is true only in compute_avx2 and compute_avx512, whose callers
            // checked Isa::Avx2 or Isa::Avx512 (both include AVX2, all the kernel needs).
            start = unsafe {
                x86::decouple_row_s123(
                    [&mut *oh, &mut *ov, &mut *od],
                    [&mut *th, &mut *tv, &mut *td],
                    c.cos_1deg_sq,
                    egl,
                    lut,
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        for j in start..n {
            let (h0, v0, d0) = (oh[j], ov[j], od[j]);
            let (h1, v1, d1) = (th[j], tv[j], td[j]);
            // |o|, |t| < 2^31: each product below 2^62, the sums below 2^63 (wrapping adds
            // document that libvmaf's int64 would wrap first).
            let ot_dp = (h0 as i64 * h1 as i64).wrapping_add(v0 as i64 * v1 as i64);
            let o_mag_sq = (h0 as i64 * h0 as i64).wrapping_add(v0 as i64 * v0 as i64);
            let t_mag_sq = (h1 as i64 * h1 as i64).wrapping_add(v1 as i64 * v1 as i64);
            let flag = angle_flag(ot_dp, o_mag_sq, t_mag_sq, c.cos_1deg_sq);
            (oh[j], th[j]) = decouple_one_s123(h0, h1, flag, egl, lut);
            (ov[j], tv[j]) = decouple_one_s123(v0, v1, flag, egl, lut);
            (od[j], td[j]) = decouple_one_s123(d0, d1, flag, egl, lut);
        }
    }
}

/// `i4_adm_csf` over the outer region: `csf = (int32)((rfactor * src + 2^27) >> 28)` (Q32
/// factor), `flt = (int32)((143165577 * |csf| - 2^31) >> 32)` (libvmaf's rounding constant is
/// `(int32_t)(1u << 31)`, i.e. -2^31; a zero csf gives flt = -1).
#[inline(always)]
pub(super) fn csf_s123(
    src: &Bands32,
    csf: &mut [Vec<i32>; 3],
    flt: &mut [Vec<i32>; 3],
    g: &ScaleGeometry,
    rf: &[u32; 3],
) {
    let bw = g.width;
    let rect = g.outer;
    for (theta, s) in src.hvd().into_iter().enumerate() {
        let f = rf[theta] as i64;
        for i in rect.top..rect.bottom {
            let range = i * bw + rect.left..i * bw + rect.right;
            let sr = &s[range.clone()];
            let cr = &mut csf[theta][range.clone()];
            let fr = &mut flt[theta][range];
            for ((&x, cv), fv) in sr.iter().zip(cr.iter_mut()).zip(fr.iter_mut()) {
                // |f * x| < 2^28 * 2^31 (f < 2^28 for every accepted CSF, |x| < 2^31); v is
                // at most 7.74e8 by the bounds of AdmScaleAccum.
                let v = ((f * x as i64 + (1 << 27)) >> 28) as i32;
                *cv = v;
                *fv = ((I4_FIX_ONE_BY_30 * v.unsigned_abs() as i64 + I4_FLT_ROUND) >> 32) as i32;
            }
        }
    }
}

/// The denominator of scales 1-3 (`adm_csf_den_s123`'s loops): per pixel
/// `((((o^2 + 2^q) >> q) * |o|) + round) >> ceil(log2(region width))` in u64 (libvmaf adds
/// `1 << q`, not `1 << (q - 1)`; |o| < 2^31 so every step fits), per row
/// `(sum + round) >> ceil(log2(region height))`.
#[inline(always)]
pub(super) fn den_s123(o: &Bands32, g: &ScaleGeometry, scale: usize) -> [u64; 3] {
    let (sq, cub, accum) = den_shifts_s123(g, scale);
    let add_sq = 1u64 << sq;
    let add_cub = round_add(cub) as u64;
    let add_accum = round_add(accum) as u64;
    let rect = g.inner;
    let mut acc = [0u64; 3];
    for (theta, b) in o.hvd().into_iter().enumerate() {
        for i in rect.top..rect.bottom {
            let row = &b[i * g.width + rect.left..i * g.width + rect.right];
            let mut s = 0u64;
            for &x in row {
                let a = x.unsigned_abs() as u64;
                s = s.wrapping_add((((a * a + add_sq) >> sq) * a + add_cub) >> cub);
            }
            acc[theta] = acc[theta].wrapping_add(s.wrapping_add(add_accum) >> accum);
        }
    }
    acc
}

/// `i4_adm_cm` over the inner region: `thr` as at scale 0 with libvmaf's 32-bit weights
/// (`flt` neighbours plus `(int32)((286331153 * |csf| - 2^31) >> 32)` at the centre), then
/// `x = |(int32)((src * rfactor + 2^27) >> 28)| - thr`, `x = max(x, 0)`,
/// `x_sq = (int32)((x * x + 2^29) >> 30)`, `val = (x_sq * x + round) >> ceil(log2(w))`, per row
/// `(sum + round) >> ceil(log2(h))`.
#[inline(always)]
pub(super) fn cm_s123(
    src: &Bands32,
    csf: &[Vec<i32>; 3],
    flt: &[Vec<i32>; 3],
    g: &ScaleGeometry,
    rf: &[u32; 3],
) -> [i64; 3] {
    let bw = g.width;
    let (cub, inner) = cm_shifts_s123(g);
    let add_cub = round_add(cub);
    let add_inner = round_add(inner);
    let rect = g.inner;
    let centre = |v: i32| ((I4_ONE_BY_15 * v.unsigned_abs() as i64 + I4_FLT_ROUND) >> 32) as i32;
    let mut mask = MaskRow::new(g);
    let mut acc = [0i64; 3];
    for i in rect.top..rect.bottom {
        mask.fill(flt, csf, g, i, centre);
        let row = i * bw + rect.left..i * bw + rect.right;
        for (theta, b) in src.hvd().into_iter().enumerate() {
            let f = rf[theta] as i64;
            let mut sum = 0i64;
            for (&x, &t) in b[row.clone()].iter().zip(&mask.thr) {
                let xv = ((x as i64 * f + (1 << 27)) >> 28) as i32;
                let x = xv.wrapping_abs().wrapping_sub(t);
                let x = x.max(0) as i64;
                let x_sq = ((x * x + (1 << 29)) >> 30) as i32 as i64;
                sum = sum.wrapping_add((x_sq * x + add_cub) >> cub);
            }
            acc[theta] = acc[theta].wrapping_add(sum.wrapping_add(add_inner) >> inner);
        }
    }
    acc
}
