use std::arch::x86_64::*;

/// Pixels per step.
const L: usize = 8;

/// 8 `i16` from `s[j..]`, sign-extended to `i32`.
#[target_feature(enable = "avx2")]
#[inline]
fn ld16(s: &[i16], j: usize) -> __m256i {
    let s = &s[j..j + L];
    // SAFETY: `s` is 16 readable bytes; loadu needs no alignment.
    _mm256_cvtepi16_epi32(unsafe { _mm_loadu_si128(s.as_ptr().cast()) })
}

/// 8 `i32` from `s[j..]`.
#[target_feature(enable = "avx2")]
#[inline]
fn ld32(s: &[i32], j: usize) -> __m256i {
    let s = &s[j..j + L];
    // SAFETY: `s` is 32 readable bytes; loadu needs no alignment.
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// Store the low 16 bits of each `i32` lane (`as i16`, wrapping) at `s[j..j + 8]`.
#[target_feature(enable = "avx2")]
#[inline]
fn st16(s: &mut [i16], j: usize, x: __m256i) {
    // Bytes 0-1, 4-5, 8-9, 12-13 of each 128-bit half, then the two halves' low quadwords.
    let pick = _mm256_setr_epi8(
        0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9, 12, 13, -1, -1,
        -1, -1, -1, -1, -1, -1,
    );
    let packed = _mm256_permute4x64_epi64::<0b00_00_10_00>(_mm256_shuffle_epi8(x, pick));
    let s = &mut s[j..j + L];
    // SAFETY: `s` is 16 writable bytes; storeu needs no alignment.
    unsafe { _mm_storeu_si128(s.as_mut_ptr().cast(), _mm256_castsi256_si128(packed)) }
}

/// Store 8 `i32` at `s[j..]`.
#[target_feature(enable = "avx2")]
#[inline]
fn st32(s: &mut [i32], j: usize, x: __m256i) {
    let s = &mut s[j..j + L];
    // SAFETY: `s` is 32 writable bytes; storeu needs no alignment.
    unsafe { _mm256_storeu_si256(s.as_mut_ptr().cast(), x) }
}

/// `lut[idx]` per lane.
///
/// # Safety
/// Every lane of `idx` must be in `0..=65536`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn gather(lut: &[i32; 65537], idx: __m256i) -> __m256i {
    // SAFETY: the caller guarantees every index is within the table's 65537 entries.
    unsafe { _mm256_i32gather_epi32::<4>(lut.as_ptr(), idx) }
}

/// The `i32` lanes of a 64-bit-lane vector pair: the low 32 bits of `even`'s lanes go to
/// lanes 0, 2, 4, 6 and the low 32 bits of `odd`'s lanes to lanes 1, 3, 5, 7.
#[target_feature(enable = "avx2")]
#[inline]
fn merge_lo32(even: __m256i, odd: __m256i) -> __m256i {
    _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd))
}

/// The odd `i32` lanes moved to the low halves of the 64-bit lanes (for `_mm256_mul_epi32`,
/// which reads the low 32 bits of each 64-bit lane as signed).
#[target_feature(enable = "avx2")]
#[inline]
fn odd(x: __m256i) -> __m256i {
    _mm256_srli_epi64::<32>(x)
}

/// Four `f64` from four `i32`.
#[target_feature(enable = "avx2")]
#[inline]
fn half_pd<const HI: i32>(x: __m256i) -> __m256d {
    _mm256_cvtepi32_pd(_mm256_extracti128_si256::<HI>(x))
}

/// The angle test of `portable::angle_flag` for 8 pixels, from the `f32` values of the dot
/// product and the squared norms (the portable code's `as f32` of the same integers): in
/// double, `ot = ot_f / 4096.0` (a multiplication by 2^-12, exact like the division), and
/// `ot >= 0 && ot * ot >= cos_1deg_sq * om * tm` left to right. All lanes set where true.
#[target_feature(enable = "avx2")]
#[inline]
fn angle(ot: __m256, om: __m256, tm: __m256, cos_1deg_sq: f32) -> __m256i {
    let c = _mm256_set1_pd(cos_1deg_sq as f64);
    let scale = _mm256_set1_pd(1.0 / 4096.0);
    let half = |x: __m128| _mm256_mul_pd(_mm256_cvtps_pd(x), scale);
    let test = |ot: __m128, om: __m128, tm: __m128| {
        let (ot, om, tm) = (half(ot), half(om), half(tm));
        let pos = _mm256_cmp_pd::<_CMP_GE_OQ>(ot, _mm256_setzero_pd());
        let rhs = _mm256_mul_pd(_mm256_mul_pd(c, om), tm);
        let big = _mm256_cmp_pd::<_CMP_GE_OQ>(_mm256_mul_pd(ot, ot), rhs);
        _mm256_castpd_si256(_mm256_and_pd(pos, big))
    };
    let lo = test(
        _mm256_castps256_ps128(ot),
        _mm256_castps256_ps128(om),
        _mm256_castps256_ps128(tm),
    );
    let hi = test(
        _mm256_extractf128_ps::<1>(ot),
        _mm256_extractf128_ps::<1>(om),
        _mm256_extractf128_ps::<1>(tm),
    );
    // 64-bit masks of pixels 0-3 and 4-7 to 32-bit lanes 0-7.
    let idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    let lo = _mm256_permutevar8x32_epi32(lo, idx);
    let hi = _mm256_permutevar8x32_epi32(hi, idx);
    _mm256_blend_epi32::<0b1111_0000>(lo, hi)
}

/// `portable::enhance` for 8 pixels, where `cond` (the angle flag, `k > 0` and `o != 0`) is
/// set, else `rst`: `rst * egl` in double, `MIN` with `t` where `o > 0`, `MAX` where
/// `o < 0`, truncated. The selected value lies between `rst` and `t` (both `i32`), so the
/// truncating conversion is exact; `minpd`/`maxpd` equal `f64::min`/`max` here (no NaN, no
/// -0.0: `rst * egl` is +0.0 at `rst = 0`, and equal values are the same value).
#[target_feature(enable = "avx2")]
#[inline]
fn enhance(rst: __m256i, o: __m256i, t: __m256i, cond: __m256i, egl: f64) -> __m256i {
    if _mm256_testz_si256(cond, cond) != 0 {
        return rst;
    }
    let egl = _mm256_set1_pd(egl);
    let zero = _mm256_setzero_pd();
    let lo = {
        let x = _mm256_mul_pd(half_pd::<0>(rst), egl);
        let tf = half_pd::<0>(t);
        let pos = _mm256_cmp_pd::<_CMP_GT_OQ>(half_pd::<0>(o), zero);
        let v = _mm256_blendv_pd(_mm256_max_pd(x, tf), _mm256_min_pd(x, tf), pos);
        _mm256_cvttpd_epi32(v)
    };
    let hi = {
        let x = _mm256_mul_pd(half_pd::<1>(rst), egl);
        let tf = half_pd::<1>(t);
        let pos = _mm256_cmp_pd::<_CMP_GT_OQ>(half_pd::<1>(o), zero);
        let v = _mm256_blendv_pd(_mm256_max_pd(x, tf), _mm256_min_pd(x, tf), pos);
        _mm256_cvttpd_epi32(v)
    };
    _mm256_blendv_epi8(rst, _mm256_set_m128i(hi, lo), cond)
}

/// `cond & k > 0 & o != 0`.
#[target_feature(enable = "avx2")]
#[inline]
fn enhance_cond(flag: __m256i, k: __m256i, o: __m256i) -> __m256i {
    let zero = _mm256_setzero_si256();
    let kpos = _mm256_cmpgt_epi32(k, zero);
    let onz = _mm256_andnot_si256(_mm256_cmpeq_epi32(o, zero), _mm256_set1_epi32(-1));
    _mm256_and_si256(flag, _mm256_and_si256(kpos, onz))
}

/// `portable::decouple_one_s0` for 8 pixels (`o`, `t`: sign-extended `i16` band values,
/// `|value| <= 27 411`: the horizontal DWT pass of any `i16` row is at most
/// `54 822 * 32 768 / 2^16`). Returns `(rst, t - rst)` as `i32` (stored as `i16`).
#[target_feature(enable = "avx2")]
#[inline]
fn one_s0(
    o: __m256i,
    t: __m256i,
    flag: __m256i,
    egl: f64,
    lut: &[i32; 65537],
) -> (__m256i, __m256i) {
    let zero = _mm256_setzero_si256();
    let q15 = _mm256_set1_epi32(32768);
    // SAFETY: `o + 32768` is in 0..=65535 for an `i16` `o`.
    let recip = unsafe { gather(lut, _mm256_add_epi32(o, q15)) };
    // `recip * t + 16384` in 64 bits (|recip| <= 2^30, |t| <= 27 411: below 2^45), shifted
    // by 15: the quotient is below 2^30 in magnitude, so the low 32 bits of the logical
    // shift are the arithmetic shift's `i32` value.
    let rnd = _mm256_set1_epi64x(16384);
    let pe = _mm256_add_epi64(_mm256_mul_epi32(recip, t), rnd);
    let po = _mm256_add_epi64(_mm256_mul_epi32(odd(recip), odd(t)), rnd);
    let q = merge_lo32(_mm256_srli_epi64::<15>(pe), _mm256_srli_epi64::<15>(po));
    let k = _mm256_min_epi32(_mm256_max_epi32(q, zero), q15);
    let k = _mm256_blendv_epi8(k, q15, _mm256_cmpeq_epi32(o, zero));
    // |k * o| <= 2^15 * 27 411 < 2^30: exact in i32.
    let rst = _mm256_srai_epi32::<15>(_mm256_add_epi32(
        _mm256_mullo_epi32(k, o),
        _mm256_set1_epi32(16384),
    ));
    let rst = enhance(rst, o, t, enhance_cond(flag, k, o), egl);
    (rst, _mm256_sub_epi32(t, rst))
}

/// [`super::decouple_s0`]'s loop over one row of the outer region, 8 pixels per step, in
/// place: `o` (reference h, v, d) becomes `r`, `t` (distorted h, v, d) becomes `a`. Returns
/// how many leading pixels it did (the rest, fewer than 8, are the caller's).
#[target_feature(enable = "avx2")]
pub(super) fn decouple_row_s0(
    o: [&mut [i16]; 3],
    t: [&mut [i16]; 3],
    cos_1deg_sq: f32,
    egl: f64,
    lut: &[i32; 65537],
) -> usize {
    let [oh, ov, od] = o;
    let [th, tv, td] = t;
    let n = oh.len();
    let mut j = 0;
    while j + L <= n {
        let (h0, v0, d0) = (ld16(oh, j), ld16(ov, j), ld16(od, j));
        let (h1, v1, d1) = (ld16(th, j), ld16(tv, j), ld16(td, j));
        // Products of |values| <= 27 411: each below 2^29.5, the sums below 2^30.5, exact
        // in i32 (the portable code's i64 values); `cvtepi32_ps` rounds them to nearest like
        // `as f32`.
        let dot = |a: __m256i, b: __m256i, c: __m256i, d: __m256i| {
            _mm256_cvtepi32_ps(_mm256_add_epi32(
                _mm256_mullo_epi32(a, b),
                _mm256_mullo_epi32(c, d),
            ))
        };
        let flag = angle(
            dot(h0, h1, v0, v1),
            dot(h0, h0, v0, v0),
            dot(h1, h1, v1, v1),
            cos_1deg_sq,
        );
        for (oo, tt, o, t) in [(h0, h1, &mut *oh, &mut *th), (v0, v1, &mut *ov, &mut *tv)]
            .into_iter()
            .chain([(d0, d1, &mut *od, &mut *td)])
        {
            let (r, a) = one_s0(oo, tt, flag, egl, lut);
            st16(o, j, r);
            st16(t, j, a);
        }
        j += L;
    }
    j
}

/// `i64 as f32` (round to nearest even) of four 64-bit lanes, exactly: the value is split
/// into `hi * 2^32 + lo` (both exact in double), added in double (`s`, rounded to 53 bits)
/// with its exact error `e` (Fast2Sum: `|hi * 2^32| >= lo` whenever `hi != 0`, and `e = 0`
/// when `hi = 0`), and `s` is turned into the round-to-odd value (one ulp towards the true
/// value where `s` is inexact and its last bit even). Rounding a round-to-odd value of 53
/// bits to 24 bits gives the correctly rounded result (53 >= 24 + 2; Boldo and Melquiond,
/// "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
/// 2008), which `cvtpd_ps` does.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn i64_to_f32(x: __m256i) -> __m128 {
    let lo_idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    let hi_idx = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7);
    let hi = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x, hi_idx));
    let lo = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x, lo_idx));
    let a = _mm256_mul_pd(_mm256_cvtepi32_pd(hi), _mm256_set1_pd(4_294_967_296.0));
    let b = _mm256_cvtepi32_pd(lo);
    // The low half is unsigned: add 2^32 where its signed reading is negative.
    let b = _mm256_add_pd(
        b,
        _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_LT_OQ>(b, _mm256_setzero_pd()),
            _mm256_set1_pd(4_294_967_296.0),
        ),
    );
    let s = _mm256_add_pd(a, b);
    let e = _mm256_sub_pd(b, _mm256_sub_pd(s, a));
    let inexact = _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_NEQ_OQ>(e, _mm256_setzero_pd()));
    let bits = _mm256_castpd_si256(s);
    let one = _mm256_set1_epi64x(1);
    let even = _mm256_cmpeq_epi64(_mm256_and_si256(bits, one), _mm256_setzero_si256());
    // +1 ulp (in magnitude) where e has the sign of s, else -1 ulp.
    let differ = _mm256_cmpgt_epi64(
        _mm256_setzero_si256(),
        _mm256_xor_si256(_mm256_castpd_si256(e), bits),
    );
    let step = _mm256_or_si256(differ, one);
    let adjust = _mm256_and_si256(step, _mm256_and_si256(inexact, even));
    _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_add_epi64(bits, adjust)))
}

/// [`i64_to_f32`] on an array (for the tests).
#[cfg(test)]
#[target_feature(enable = "avx2")]
pub(super) fn i64_to_f32_array(v: [i64; 4]) -> [f32; 4] {
    // SAFETY: `v` is 32 readable bytes; loadu needs no alignment.
    let x = unsafe { _mm256_loadu_si256(v.as_ptr().cast()) };
    let mut out = [0f32; 4];
    // SAFETY: `out` is 16 writable bytes; storeu needs no alignment.
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), i64_to_f32(x)) };
    out
}

/// `(a * b).wrapping_add(c * d)` in 64 bits of the even lanes (the low halves of the 64-bit
/// lanes, read as signed), as `f32` of 4 lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn dot64(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m128 {
    i64_to_f32(_mm256_add_epi64(
        _mm256_mul_epi32(a, b),
        _mm256_mul_epi32(c, d),
    ))
}

/// 8 `f32` in pixel order from the even pixels' and the odd pixels' values.
#[target_feature(enable = "avx2")]
#[inline]
fn interleave(even: __m128, odd: __m128) -> __m256 {
    _mm256_set_m128(_mm_unpackhi_ps(even, odd), _mm_unpacklo_ps(even, odd))
}

/// `portable::decouple_one_s123` for 8 pixels. Returns `(rst, t - rst)`.
#[target_feature(enable = "avx2")]
#[inline]
fn one_s123(
    o: __m256i,
    t: __m256i,
    flag: __m256i,
    egl: f64,
    lut: &[i32; 65537],
) -> (__m256i, __m256i) {
    let zero = _mm256_setzero_si256();
    let q15 = _mm256_set1_epi32(32768);
    // |o| as u32 (2^31 for i32::MIN, like `unsigned_abs`).
    let abs = _mm256_abs_epi32(o);
    // best15's shift `17 - clz(abs)` (0 when not positive) is `floor(log2(abs)) - 14`,
    // read from the exponent of `abs >> 7` as f32 (below or equal to 2^24: exact):
    // `exponent_bits - 127 + 7 - 14`; `abs < 128` gives 0.0 (exponent bits 0).
    let e = _mm256_srli_epi32::<23>(_mm256_castps_si256(_mm256_cvtepi32_ps(
        _mm256_srli_epi32::<7>(abs),
    )));
    let s = _mm256_max_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(134)), zero);
    // msb = (abs + ((1 << s) >> 1)) >> s: abs + 2^16 < 2^32, and msb <= 32768.
    let half = _mm256_srli_epi32::<1>(_mm256_sllv_epi32(_mm256_set1_epi32(1), s));
    let msb = _mm256_srlv_epi32(_mm256_add_epi32(abs, half), s);
    // SAFETY: msb <= 32768, so every index is at most 65536.
    let recip = unsafe { gather(lut, _mm256_add_epi32(msb, q15)) };
    // `recip * sign(o)` (0 where o = 0, where k is replaced below anyway).
    let recip = _mm256_sign_epi32(recip, o);
    // tmp = (recip * t + 2^(14 + s)) >> (15 + s) in i64 (|recip * t| <= 2^61), clamped to
    // 0..=32768: 0 where the sum is negative, else the logical shift (the arithmetic one
    // of a non-negative value), clamped above in 64 bits.
    let sh = _mm256_add_epi32(s, _mm256_set1_epi32(15));
    let lo_mask = _mm256_set1_epi64x(0xffff_ffff);
    let one = _mm256_set1_epi64x(1);
    let cap = _mm256_set1_epi64x(32768);
    let k64 = |recip: __m256i, t: __m256i, sh: __m256i| {
        // sh: 15..=32 in the low half of each 64-bit lane, 0 in the high half.
        let rnd = _mm256_srli_epi64::<1>(_mm256_sllv_epi64(one, sh));
        let p = _mm256_add_epi64(_mm256_mul_epi32(recip, t), rnd);
        let neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), p);
        let q = _mm256_srlv_epi64(p, sh);
        let q = _mm256_blendv_epi8(q, cap, _mm256_cmpgt_epi64(q, cap));
        _mm256_andnot_si256(neg, q)
    };
    let ke = k64(recip, t, _mm256_and_si256(sh, lo_mask));
    let ko = k64(odd(recip), odd(t), odd(sh));
    let k = merge_lo32(ke, ko);
    let k = _mm256_blendv_epi8(k, q15, _mm256_cmpeq_epi32(o, zero));
    // rst = (k * o + 16384) >> 15 in i64 (|k * o| <= 2^46); the result is within i32
    // (-2^31 ..= 2^31 - 1), so the low 32 bits of the logical shift are its value.
    let rnd = _mm256_set1_epi64x(16384);
    let re = _mm256_add_epi64(_mm256_mul_epi32(k, o), rnd);
    let ro = _mm256_add_epi64(_mm256_mul_epi32(odd(k), odd(o)), rnd);
    let rst = merge_lo32(_mm256_srli_epi64::<15>(re), _mm256_srli_epi64::<15>(ro));
    let rst = enhance(rst, o, t, enhance_cond(flag, k, o), egl);
    (rst, _mm256_sub_epi32(t, rst))
}

/// [`super::decouple_s123`]'s loop over one row of the outer region (as
/// [`decouple_row_s0`], on `i32` bands).
#[target_feature(enable = "avx2")]
pub(super) fn decouple_row_s123(
    o: [&mut [i32]; 3],
    t: [&mut [i32]; 3],
    cos_1deg_sq: f32,
    egl: f64,
    lut: &[i32; 65537],
) -> usize {
    let [oh, ov, od] = o;
    let [th, tv, td] = t;
    let n = oh.len();
    let mut j = 0;
    while j + L <= n {
        let (h0, v0, d0) = (ld32(oh, j), ld32(ov, j), ld32(od, j));
        let (h1, v1, d1) = (ld32(th, j), ld32(tv, j), ld32(td, j));
        // The portable code's i64 sums (products below 2^62, sums wrapping like its
        // `wrapping_add`), for even and odd pixels, converted exactly like `as f32`.
        let dot = |a: __m256i, b: __m256i, c: __m256i, d: __m256i| {
            interleave(dot64(a, b, c, d), dot64(odd(a), odd(b), odd(c), odd(d)))
        };
        let flag = angle(
            dot(h0, h1, v0, v1),
            dot(h0, h0, v0, v0),
            dot(h1, h1, v1, v1),
            cos_1deg_sq,
        );
        for (oo, tt, o, t) in [(h0, h1, &mut *oh, &mut *th), (v0, v1, &mut *ov, &mut *tv)]
            .into_iter()
            .chain([(d0, d1, &mut *od, &mut *td)])
        {
            let (r, a) = one_s123(oo, tt, flag, egl, lut);
            st32(o, j, r);
            st32(t, j, a);
        }
        j += L;
    }
    j
}
/// Coefficient pairs `(c[2m], c[2m + 1])` of a 4-tap filter in each 32-bit lane, for
/// `_mm256_madd_epi16` on interleaved sample pairs.
#[target_feature(enable = "avx2")]
#[inline]
fn coef_pair(c: &[i32; 4], m: usize) -> __m256i {
    // Every tap of LO and HI fits i16 (|tap| <= 27 411).
    let pair = (c[2 * m] as i16 as u16 as u32) | ((c[2 * m + 1] as i16 as u16 as u32) << 16);
    _mm256_set1_epi32(pair as i32)
}

/// The vertical pass of [`super::dwt_s0`] for one output row, 16 columns per step: `tlo`
/// and `thi` from the four input rows `rows`. Returns how many leading columns it did.
///
/// The sums are the portable code's wrapping `i32` sums, modulo 2^32: the samples enter
/// `_mm256_madd_epi16` as `s - 32768` (an `i16`), which changes the low-pass sum by
/// `32768 * 46 342` (added back with the constant) and the high-pass sum by nothing (its
/// taps sum to 0). Each `madd` is exact (at most `32768 * (15 826 + 27 411)` < 2^31); the
/// adds wrap like the portable code's `wrapping_add`, so the shifted values are the same.
#[target_feature(enable = "avx2")]
pub(super) fn dwt_s0_vertical(
    rows: [&[u16]; 4],
    tlo: &mut [i16],
    thi: &mut [i16],
    shift: u32,
) -> usize {
    use super::{HI, LO, LO_SUM};
    let n = tlo.len().min(thi.len());
    let add = 1i32 << (shift - 1);
    // C_lo = 32768 * LO_SUM - LO_SUM * add + add, wrapping like the portable sums.
    let c_lo = _mm256_set1_epi32(
        (32768i32 * LO_SUM)
            .wrapping_sub(LO_SUM.wrapping_mul(add))
            .wrapping_add(add),
    );
    let c_hi = _mm256_set1_epi32(add);
    let (lo01, lo23) = (coef_pair(&LO, 0), coef_pair(&LO, 1));
    let (hi01, hi23) = (coef_pair(&HI, 0), coef_pair(&HI, 1));
    let sh = _mm_cvtsi32_si128(shift as i32);
    let bias = _mm256_set1_epi16(i16::MIN);
    let ld = |s: &[u16], j: usize| {
        let s = &s[j..j + 16];
        // SAFETY: `s` is 32 readable bytes; loadu needs no alignment.
        _mm256_xor_si256(unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }, bias)
    };
    let mut j = 0;
    while j + 16 <= n {
        let (s0, s1, s2, s3) = (
            ld(rows[0], j),
            ld(rows[1], j),
            ld(rows[2], j),
            ld(rows[3], j),
        );
        // Columns 0-3 and 8-11 (`unpacklo`), 4-7 and 12-15 (`unpackhi`).
        let p01 = [_mm256_unpacklo_epi16(s0, s1), _mm256_unpackhi_epi16(s0, s1)];
        let p23 = [_mm256_unpacklo_epi16(s2, s3), _mm256_unpackhi_epi16(s2, s3)];
        let pass = |c01: __m256i, c23: __m256i, k: __m256i| {
            let f = |m: usize| {
                let s = _mm256_add_epi32(
                    _mm256_madd_epi16(p01[m], c01),
                    _mm256_madd_epi16(p23[m], c23),
                );
                _mm256_sra_epi32(_mm256_add_epi32(s, k), sh)
            };
            // `packs` of (0-3 | 8-11) and (4-7 | 12-15) is in column order.
            let (a, b) = (f(0), f(1));
            let a = _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(a));
            let b = _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(b));
            _mm256_packs_epi32(a, b)
        };
        let l = pass(lo01, lo23, c_lo);
        let h = pass(hi01, hi23, c_hi);
        let (tl, th) = (&mut tlo[j..j + 16], &mut thi[j..j + 16]);
        // SAFETY: `tl` and `th` are 32 writable bytes each; storeu needs no alignment.
        unsafe {
            _mm256_storeu_si256(tl.as_mut_ptr().cast(), l);
            _mm256_storeu_si256(th.as_mut_ptr().cast(), h);
        }
        j += 16;
    }
    j
}

/// The regular outputs of the horizontal pass of [`super::dwt_s0`] (see
/// `portable::hpass`), 16 per step: output `j` (from 1) of the low- and high-pass filters
/// from `t[2j - 1 ..= 2j + 2]`, `(sum + 32768) >> 16`, for `j` below `reg_end`. Returns
/// how many outputs after output 0 it did. `|sum| <= 54 822 * 32 768 < 2^31` for any `i16`
/// row: every `madd` and add is exact, and the outputs (at most 27 411 in magnitude) fit
/// `i16`, so the saturating pack keeps them.
#[target_feature(enable = "avx2")]
pub(super) fn dwt_s0_horizontal(
    t: &[i16],
    lo: &mut [i16],
    hi: &mut [i16],
    reg_end: usize,
) -> usize {
    use super::{HI, LO};
    let (lo01, lo23) = (coef_pair(&LO, 0), coef_pair(&LO, 1));
    let (hi01, hi23) = (coef_pair(&HI, 0), coef_pair(&HI, 1));
    let rnd = _mm256_set1_epi32(32768);
    let ld = |i: usize| {
        let s = &t[i..i + 16];
        // SAFETY: `s` is 32 readable bytes; loadu needs no alignment.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    };
    let mut j = 1;
    while j + 16 <= reg_end {
        // Pairs (t[2j-1], t[2j]) and (t[2j+1], t[2j+2]) of outputs j..j+8 and j+8..j+16.
        let (a0, a1) = (ld(2 * j - 1), ld(2 * j + 15));
        let (b0, b1) = (ld(2 * j + 1), ld(2 * j + 17));
        let f = |c01: __m256i, c23: __m256i, a: __m256i, b: __m256i| {
            let s = _mm256_add_epi32(_mm256_madd_epi16(a, c01), _mm256_madd_epi16(b, c23));
            _mm256_srai_epi32::<16>(_mm256_add_epi32(s, rnd))
        };
        let l = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(
            f(lo01, lo23, a0, b0),
            f(lo01, lo23, a1, b1),
        ));
        let h = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(
            f(hi01, hi23, a0, b0),
            f(hi01, hi23, a1, b1),
        ));
        let (ol, oh) = (&mut lo[j..j + 16], &mut hi[j..j + 16]);
        // SAFETY: `ol` and `oh` are 32 writable bytes each; storeu needs no alignment.
        unsafe {
            _mm256_storeu_si256(ol.as_mut_ptr().cast(), l);
            _mm256_storeu_si256(oh.as_mut_ptr().cast(), h);
        }
        j += 16;
    }
    j - 1
}
