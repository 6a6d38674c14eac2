use std::arch::x86_64::*;

use super::{GAIN_EPS, Img, PAD, SIGMA_NSQ, Scratch, Shift, Vertical, VifScaleAccum, log2_table};

/// Columns of one vector block (16 `i16` lanes).
const B: usize = 16;

/// Output rows that share one vertical pass in the AVX-512 kernel (`i, i + 2, ...`).
pub(super) const G: usize = 4;

/// Whether the kernels take a scale: every tap of `f` fits in `i16` and the image is at least
/// one block wide.
pub(super) fn fits(f: &[u16], w: usize) -> bool {
    w >= B && f.iter().all(|&c| c <= i16::MAX as u16)
}

/// 16 `i16` from `s[i..]`.
///
/// # Safety
/// The CPU must have AVX (all callers are AVX2 functions).
#[inline(always)]
unsafe fn ld(s: &[i16], i: usize) -> __m256i {
    let s = &s[i..i + B];
    // SAFETY: `s` is 32 readable bytes; loadu needs no alignment; AVX per the contract.
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// 16 `u16` from `s[i..]`.
///
/// # Safety
/// As [`ld`].
#[inline(always)]
unsafe fn ldu(s: &[u16], i: usize) -> __m256i {
    let s = &s[i..i + B];
    // SAFETY: as in `ld`.
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// Store 16 `i16` at `s[i..]`.
///
/// # Safety
/// As [`ld`].
#[inline(always)]
unsafe fn st(s: &mut [i16], i: usize, x: __m256i) {
    let s = &mut s[i..i + B];
    // SAFETY: `s` is 32 writable bytes; storeu needs no alignment; AVX per the contract.
    unsafe { _mm256_storeu_si256(s.as_mut_ptr().cast(), x) }
}

/// Store 8 `i32` at `s[i..]`.
///
/// # Safety
/// As [`ld`].
#[inline(always)]
unsafe fn st32(s: &mut [i32], i: usize, x: __m256i) {
    let s = &mut s[i..i + 8];
    // SAFETY: as in `st`.
    unsafe { _mm256_storeu_si256(s.as_mut_ptr().cast(), x) }
}

/// Store 8 `u16` at `s[i..]`.
///
/// # Safety
/// As [`ld`].
#[inline(always)]
unsafe fn st16x8(s: &mut [u16], i: usize, x: __m128i) {
    let s = &mut s[i..i + 8];
    // SAFETY: `s` is 16 writable bytes; storeu needs no alignment; SSE2 is baseline.
    unsafe { _mm_storeu_si128(s.as_mut_ptr().cast(), x) }
}

/// The tap pairs `(f[2t], f[2t + 1])` of a filter (`f[FW]` = 0), one pair per 32-bit lane.
#[target_feature(enable = "avx2")]
fn pairs<const FW: usize>(f: &[u16; FW]) -> [__m256i; 9] {
    let mut p = [_mm256_setzero_si256(); 9];
    for (t, p) in p.iter_mut().enumerate().take(FW / 2 + 1) {
        let lo = f[2 * t] as u32;
        let hi = if 2 * t + 1 < FW {
            f[2 * t + 1] as u32
        } else {
            0
        };
        *p = _mm256_set1_epi32((lo | hi << 16) as i32);
    }
    p
}

/// The vertical sums `S'` of one quantity over the rows `rows` (in `ring` at `q`) for one
/// block, as (low, high) interleave halves.
#[target_feature(enable = "avx2")]
fn vpass<const FW: usize>(
    ring: &[i16],
    rows: &[usize; FW],
    q: usize,
    j: usize,
    cp: &[__m256i; 9],
) -> (__m256i, __m256i) {
    let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    for t in 0..FW / 2 + 1 {
        // SAFETY: `ld` needs only AVX (enabled here) and bounds-checks its slice.
        let x = unsafe { ld(ring, rows[2 * t] + q + j) };
        // The second row of the last pair has tap 0: any row will do.
        let y = if 2 * t + 1 < FW {
            // SAFETY: as above.
            unsafe { ld(ring, rows[2 * t + 1] + q + j) }
        } else {
            x
        };
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x, y), cp[t]));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x, y), cp[t]));
    }
    (lo, hi)
}

/// [`vpass`] for a row whose filter window is inside the image: the tap pairs `(k, k + 1)`
/// come pre-interleaved from `pairs` (`pair[t]`: the offset of the pair rows of tap `2t`, at
/// block `b`), the last tap alone from `ring` (`last`: its row).
#[target_feature(enable = "avx2")]
fn vpass_pairs<const FW: usize>(
    pairs: &[i16],
    pair: &[usize; 8],
    ring: &[i16],
    last: usize,
    j: usize,
    cp: &[__m256i; 9],
) -> (__m256i, __m256i) {
    let half = FW / 2;
    // SAFETY: `ld` needs only AVX (enabled here) and bounds-checks its slice.
    let x = unsafe { ld(ring, last + j) };
    let mut lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(x, x), cp[half]);
    let mut hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(x, x), cp[half]);
    for t in 0..half {
        // SAFETY: as above (both loads).
        let (a, b) = unsafe { (ld(pairs, pair[t]), ld(pairs, pair[t] + B)) };
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(a, cp[t]));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(b, cp[t]));
    }
    (lo, hi)
}

/// The horizontal sums `S` (no longer offset) of the even and odd output columns `j0 ..
/// j0 + 16` of a padded row, from a pointer `p` to its column `j0 - half` (no bounds checks).
///
/// # Safety
/// `p .. p + FW + 16` (`i16`s) must be readable.
#[target_feature(enable = "avx2")]
unsafe fn hpass_at<const FW: usize>(p: *const i16, cp: &[__m256i; 9]) -> (__m256i, __m256i) {
    let bias = _mm256_set1_epi32(i32::MIN);
    let (mut e, mut o) = (bias, bias);
    for t in 0..FW / 2 + 1 {
        // SAFETY: p + 2t + 1 + 15 <= p + FW + 15 (2t <= FW - 1): readable per the contract.
        let (x, y) = unsafe {
            (
                _mm256_loadu_si256(p.add(2 * t).cast()),
                _mm256_loadu_si256(p.add(2 * t + 1).cast()),
            )
        };
        e = _mm256_add_epi32(e, _mm256_madd_epi16(x, cp[t]));
        o = _mm256_add_epi32(o, _mm256_madd_epi16(y, cp[t]));
    }
    (e, o)
}

/// The even columns of [`hpass_at`] (bounds-checked).
#[target_feature(enable = "avx2")]
fn hpass_even<const FW: usize>(row: &[i16], j0: usize, cp: &[__m256i; 9]) -> __m256i {
    let base = PAD + j0 - FW / 2;
    let mut e = _mm256_set1_epi32(i32::MIN);
    for t in 0..FW / 2 + 1 {
        // SAFETY: AVX2 is enabled in this function.
        let x = unsafe { ld(row, base + 2 * t) };
        e = _mm256_add_epi32(e, _mm256_madd_epi16(x, cp[t]));
    }
    e
}

/// `(a * b + 2^31) >> 32` per 32-bit lane (`a, b <= 65536 * 65535`, so no 64-bit wrap).
#[target_feature(enable = "avx2")]
fn mul_hi_round(a: __m256i, b: __m256i) -> __m256i {
    let r = _mm256_set1_epi64x(1 << 31);
    let pe = _mm256_add_epi64(_mm256_mul_epu32(a, b), r);
    let po = _mm256_add_epi64(
        _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32)),
        r,
    );
    _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0b1010_1010)
}

/// `(value - 32768)` of 16 unsigned 16-bit values held in two `i32` vectors (interleaved
/// order), packed back into column order.
#[target_feature(enable = "avx2")]
fn pack_off(lo: __m256i, hi: __m256i) -> __m256i {
    let off = _mm256_set1_epi32(32768);
    _mm256_packs_epi32(_mm256_sub_epi32(lo, off), _mm256_sub_epi32(hi, off))
}

/// The ring rows of input row `y`: the quantities of `vertical_8` (`a, b, a*a, b*b, a*b`,
/// five) or `vertical_16` (`a, b` and the high and low halves of `a*a, b*b, a*b`, eight), each
/// `w` long, offset by -32768.
#[target_feature(enable = "avx2")]
fn fill_ring(ra: &[u16], da: &[u16], eight: bool, w: usize, out: &mut [i16]) {
    let off = _mm256_set1_epi16(i16::MIN);
    let mut j = 0;
    loop {
        // SAFETY: `ldu` needs only AVX (enabled here) and bounds-checks its slice.
        let (a, b) = unsafe { (ldu(ra, j), ldu(da, j)) };
        let mut q = [a, b, a, a, a, a, a, a];
        if eight {
            // a, b <= 255: the squares fit in 16 bits.
            q[2] = _mm256_mullo_epi16(a, a);
            q[3] = _mm256_mullo_epi16(b, b);
            q[4] = _mm256_mullo_epi16(a, b);
        } else {
            q[2] = _mm256_mulhi_epu16(a, a);
            q[3] = _mm256_mullo_epi16(a, a);
            q[4] = _mm256_mulhi_epu16(b, b);
            q[5] = _mm256_mullo_epi16(b, b);
            q[6] = _mm256_mulhi_epu16(a, b);
            q[7] = _mm256_mullo_epi16(a, b);
        }
        let n = if eight { 5 } else { 8 };
        for (k, &x) in q.iter().enumerate().take(n) {
            // SAFETY: `st` needs only AVX (enabled here) and bounds-checks its slice.
            unsafe { st(out, k * w + j, _mm256_xor_si256(x, off)) };
        }
        if j + B == w {
            break;
        }
        // The last block overlaps the one before when w is not a multiple of 16.
        j = (j + B).min(w - B);
    }
}

/// Mirror `half` columns at both ends of `row[PAD..PAD + w]`.
fn pad(row: &mut [i16], w: usize, half: usize) {
    for f in 1..=half {
        row[PAD - f] = row[PAD + f];
        row[PAD + w - 1 + f] = row[PAD + w - 1 - f];
    }
}

/// One column of the horizontal filter, scalar (the columns after the last full block).
fn hcol<const FW: usize>(f: &[u16; FW], row: &[i16], j: usize) -> u32 {
    let base = PAD + j - FW / 2;
    (0..FW)
        .map(|k| f[k] as u32 * (row[base + k] as u16 ^ 0x8000) as u32)
        .sum()
}

/// `floor(log2(x))` of 32-bit lanes `x >= 2^8` (any `x < 2^32`): the exponent of the float
/// of `x >> 8`, which is below 2^24 and so converts exactly.
#[target_feature(enable = "avx2")]
fn floor_log2_32(x: __m256i) -> __m256i {
    let f = _mm256_cvtepi32_ps(_mm256_srli_epi32(x, 8));
    let e = _mm256_srli_epi32(_mm256_castps_si256(f), 23);
    _mm256_sub_epi32(e, _mm256_set1_epi32(127 - 8))
}

/// [`floor_log2_32`] on four lanes.
#[target_feature(enable = "avx2")]
fn floor_log2_32x4(x: __m128i) -> __m128i {
    let f = _mm_cvtepi32_ps(_mm_srli_epi32(x, 8));
    let e = _mm_srli_epi32(_mm_castps_si128(f), 23);
    _mm_sub_epi32(e, _mm_set1_epi32(127 - 8))
}

/// `table[idx & 0xffff]` of eight lanes (the callers' indices are below 2^16 already; the
/// mask keeps every read inside the table whatever the lanes hold).
#[target_feature(enable = "avx2")]
fn lookup(table: &[u16; 65537], idx: __m256i) -> __m256i {
    let idx = _mm256_and_si256(idx, _mm256_set1_epi32(0xffff));
    // SAFETY: each lane reads the 4 bytes at `2 * idx <= 131070` of the 131074-byte table
    // (the low 16 bits are entry `idx`); AVX2 is enabled in this function.
    let v = unsafe { _mm256_i32gather_epi32::<2>(table.as_ptr().cast(), idx) };
    _mm256_and_si256(v, _mm256_set1_epi32(0xffff))
}

/// [`lookup`] on four lanes.
#[target_feature(enable = "avx2")]
fn lookup4(table: &[u16; 65537], idx: __m128i) -> __m128i {
    let idx = _mm_and_si128(idx, _mm_set1_epi32(0xffff));
    // SAFETY: as in `lookup`.
    let v = unsafe { _mm_i32gather_epi32::<2>(table.as_ptr().cast(), idx) };
    _mm_and_si128(v, _mm_set1_epi32(0xffff))
}

/// `log2_32` of four lanes `2^17 <= x < 2^32`.
#[target_feature(enable = "avx2")]
fn log2_32x4(table: &[u16; 65537], x: __m128i) -> __m128i {
    let k = _mm_sub_epi32(floor_log2_32x4(x), _mm_set1_epi32(15));
    let t = lookup4(table, _mm_srlv_epi32(x, k));
    _mm_add_epi32(t, _mm_slli_epi32(k, 11))
}

/// Left-packing permutations: entry `m` lists the set bits of `m` (lowest first).
fn pack_table() -> &'static [[u32; 8]; 256] {
    static T: std::sync::OnceLock<[[u32; 8]; 256]> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = [[0u32; 8]; 256];
        for (m, e) in t.iter_mut().enumerate() {
            let mut n = 0;
            for b in 0..8 {
                if m >> b & 1 == 1 {
                    e[n] = b as u32;
                    n += 1;
                }
            }
        }
        t
    })
}

/// Load 8 `i32` from `s[i..]`.
///
/// # Safety
/// As [`ld`].
#[inline(always)]
unsafe fn ld32(s: &[i32], i: usize) -> __m256i {
    let s = &s[i..i + 8];
    // SAFETY: as in `ld`.
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// Load 4 `i32` from `s[i..]`.
#[inline(always)]
fn ld32x4(s: &[i32], i: usize) -> __m128i {
    let s = &s[i..i + 4];
    // SAFETY: `s` is 16 readable bytes; loadu needs no alignment; SSE2 is baseline.
    unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
}

/// Sum of four `i32` lanes.
#[target_feature(enable = "avx2")]
fn hsum4(x: __m128i) -> i64 {
    let mut a = [0i32; 4];
    // SAFETY: `a` is 16 writable bytes; SSE2 is baseline.
    unsafe { _mm_storeu_si128(a.as_mut_ptr().cast(), x) };
    a.iter().map(|&v| v as i64).sum()
}

/// [`super::accumulate_row`], vectorised: the same per-pixel integer and double operations
/// (see there), eight pixels at a time for the first pass and four for the gain path. The
/// per-lane sums of a row fit in `i32` (`DEN_LOG_PER_PIXEL * 15360` and `NUM_LOG_PER_PIXEL *
/// 15360` are below 2^31); the non-log variances are summed in 64-bit lanes.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
pub(super) fn accumulate_row(
    w: usize,
    s: &mut Scratch,
    egl: f64,
    table: &[u16; 65537],
    acc: &mut VifScaleAccum,
) {
    let full = w / 8 * 8;
    let nsq = _mm256_set1_epi32(SIGMA_NSQ);
    let zero = _mm256_setzero_si256();
    let (mut den_log, mut den_non_log, mut num_non_log) = (zero, zero, zero);
    let c17 = _mm256_set1_epi32(2048 * 17);
    let one = _mm256_set1_epi32(1);
    let packs = pack_table();
    let mut n = 0;
    for j0 in (0..full).step_by(8) {
        // SAFETY: `ld32` needs only AVX (enabled here) and bounds-checks its slice.
        let (s1, s2, s12) = unsafe { (ld32(&s.s1, j0), ld32(&s.s2, j0), ld32(&s.s12, j0)) };
        // log: sigma1_sq >= sigma_nsq.
        let log = _mm256_cmpgt_epi32(s1, _mm256_sub_epi32(nsq, one));
        let arg = _mm256_add_epi32(nsq, _mm256_blendv_epi8(nsq, s1, log));
        let k = _mm256_sub_epi32(floor_log2_32(arg), _mm256_set1_epi32(15));
        let l = _mm256_add_epi32(
            lookup(table, _mm256_srlv_epi32(arg, k)),
            _mm256_slli_epi32(k, 11),
        );
        den_log = _mm256_add_epi32(den_log, _mm256_and_si256(_mm256_sub_epi32(l, c17), log));
        den_non_log = _mm256_add_epi32(den_non_log, _mm256_andnot_si256(log, one));
        let v = _mm256_andnot_si256(log, s2);
        num_non_log = _mm256_add_epi64(
            num_non_log,
            _mm256_add_epi64(
                _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)),
                _mm256_cvtepu32_epi64(_mm256_extracti128_si256(v, 1)),
            ),
        );
        // Gain path: log && sigma12 > 0 && sigma2_sq > 0; packed to the front (n <= j0,
        // and the 8 lanes stored at n end at or before j0 + 8: only this block's entries,
        // already loaded, are overwritten).
        let gain = _mm256_and_si256(
            log,
            _mm256_and_si256(_mm256_cmpgt_epi32(s12, zero), _mm256_cmpgt_epi32(s2, zero)),
        );
        let m = _mm256_movemask_ps(_mm256_castsi256_ps(gain)) as usize;
        if m != 0 {
            // SAFETY: `packs[m]` is 8 readable u32; AVX2 is enabled in this function.
            let p = unsafe { _mm256_loadu_si256(packs[m].as_ptr().cast()) };
            // SAFETY: `st32` needs only AVX (enabled here) and bounds-checks its slice.
            unsafe {
                st32(&mut s.s1, n, _mm256_permutevar8x32_epi32(s1, p));
                st32(&mut s.s2, n, _mm256_permutevar8x32_epi32(s2, p));
                st32(&mut s.s12, n, _mm256_permutevar8x32_epi32(s12, p));
            }
            n += m.count_ones() as usize;
        }
    }
    let mut lanes = [0i64; 4];
    // SAFETY: `lanes` is 32 writable bytes; AVX2 is enabled in this function.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), num_non_log) };
    acc.num_non_log += lanes.iter().sum::<i64>();
    let lo_hi =
        |x: __m256i| hsum4(_mm256_castsi256_si128(x)) + hsum4(_mm256_extracti128_si256(x, 1));
    acc.den_log += lo_hi(den_log);
    acc.den_non_log += lo_hi(den_non_log);
    // The columns after the last block, as the portable first pass.
    let table_s = table;
    for j in full..w {
        let (sigma1_sq, sigma2_sq, sigma12) = (s.s1[j], s.s2[j], s.s12[j]);
        if sigma1_sq >= SIGMA_NSQ {
            acc.den_log +=
                (super::log2_32(table_s, (SIGMA_NSQ + sigma1_sq) as u32) - 2048 * 17) as i64;
            if sigma12 > 0 && sigma2_sq > 0 {
                (s.s1[n], s.s2[n], s.s12[n]) = (sigma1_sq, sigma2_sq, sigma12);
                n += 1;
            }
        } else {
            acc.num_non_log += sigma2_sq as i64;
            acc.den_non_log += 1;
        }
    }
    // Gain path, four pixels at a time in double (libvmaf's expressions, same order).
    let eps = _mm256_set1_pd(GAIN_EPS);
    let eglv = _mm256_set1_pd(egl);
    let two52 = _mm256_set1_pd(4_503_599_627_370_496.0);
    let nsq4 = _mm_set1_epi32(SIGMA_NSQ);
    let mut num_log = _mm_setzero_si128();
    let quads = n / 4 * 4;
    for j0 in (0..quads).step_by(4) {
        let (i1, i2, i12) = (ld32x4(&s.s1, j0), ld32x4(&s.s2, j0), ld32x4(&s.s12, j0));
        let (s1, s2, s12) = (
            _mm256_cvtepi32_pd(i1),
            _mm256_cvtepi32_pd(i2),
            _mm256_cvtepi32_pd(i12),
        );
        // g = sigma12 / (sigma1_sq + eps); sv_sq = (int32)(sigma2_sq - g * sigma12), >= 0.
        let g = _mm256_div_pd(s12, _mm256_add_pd(s1, eps));
        let sv = _mm256_cvttpd_epi32(_mm256_sub_pd(s2, _mm256_mul_pd(g, s12)));
        let numer1 = _mm_add_epi32(_mm_max_epi32(sv, _mm_setzero_si128()), nsq4);
        // g = MIN(g, egl) (`g < egl ? g : egl`, what minpd computes).
        let g = _mm256_min_pd(g, eglv);
        let prod = _mm256_mul_pd(_mm256_mul_pd(g, g), s1);
        // (int64_t)prod + numer1: prod is in 0..2^45, its truncation and the sum are exact
        // in double (< 2^53); the integer is read from the mantissa of x + 2^52.
        let x = _mm256_add_pd(
            _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(prod),
            _mm256_cvtepi32_pd(numer1),
        );
        let xi = _mm256_sub_epi64(
            _mm256_castpd_si256(_mm256_add_pd(x, two52)),
            _mm256_castpd_si256(two52),
        );
        // log2_64(x): k = floor(log2(x)) - 15 from the exponent of the (exact) double.
        let e = _mm256_permutevar8x32_epi32(
            _mm256_srli_epi64(_mm256_castpd_si256(x), 52),
            _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
        );
        let k = _mm_sub_epi32(_mm256_castsi256_si128(e), _mm_set1_epi32(1023 + 15));
        let idx = _mm256_srlv_epi64(xi, _mm256_cvtepu32_epi64(k));
        let idx = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
            idx,
            _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
        ));
        let l1 = _mm_add_epi32(lookup4(table, idx), _mm_slli_epi32(k, 11));
        let l2 = log2_32x4(table, numer1);
        num_log = _mm_add_epi32(num_log, _mm_sub_epi32(l1, l2));
    }
    acc.num_log += hsum4(num_log);
    for j in quads..n {
        let (sigma1_sq, sigma2_sq, sigma12) = (s.s1[j], s.s2[j], s.s12[j]);
        let g = sigma12 as f64 / (sigma1_sq as f64 + GAIN_EPS);
        let sv_sq = ((sigma2_sq as f64 - g * sigma12 as f64) as i32).max(0);
        let g = if g < egl { g } else { egl };
        let numer1 = (sv_sq + SIGMA_NSQ) as u32;
        let numer1_tmp = (g * g * sigma1_sq as f64) as i64 + numer1 as i64;
        acc.num_log += (super::log2_64(table, numer1_tmp as u64)
            - super::log2_64(table, numer1 as u64)) as i64;
    }
}

/// `vif_statistic_8` / `vif_statistic_16` of one scale (see [`super::statistic`]).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
pub(super) fn statistic<const FW: usize>(
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Vertical,
    egl: f64,
    s: &mut Scratch,
    wide: bool,
) -> VifScaleAccum {
    let (w, h) = (r.w, r.h);
    if wide && w >= 2 * B {
        // SAFETY: `wide` is true only in compute_avx512 (Isa::Avx512 checked).
        return if crate::features::isa::avx512_vnni() && !super::NO_VNNI.with(|c| c.get()) {
            // SAFETY: as above, and the CPU has AVX-512 VNNI.
            unsafe { wide512::statistic_vnni(f, r, d, v, egl, s) }
        } else {
            // SAFETY: as above (`wide`: the caller checked Isa::Avx512, AVX-512 F, BW and VL).
            unsafe { wide512::statistic(f, r, d, v, egl, s) }
        };
    }
    let half = FW / 2;
    assert!(fits(f, w) && FW <= 17 && half <= PAD);
    let cp = pairs(f);
    let eight = matches!(v, Vertical::Eight);
    let nq = if eight { 5 } else { 8 };
    let rowlen = nq * w;
    s.ring.resize(FW * rowlen, 0);
    // Interleaved pairs of consecutive rows (y, y + 1), per quantity and block of 16
    // columns: the vpunpck{l,h}wd of the two rows, 32 values.
    let nb = w.div_ceil(B);
    let block = |b: usize| (B * b).min(w - B);
    let prowlen = nq * nb * 2 * B;
    s.pairs.resize(FW * prowlen, 0);
    s.vs.resize(nq * nb * B, 0);
    for hs in &mut s.hs {
        hs.resize(w, 0);
    }
    for vh in &mut s.vh {
        vh.resize(w + 2 * PAD + 2 * B, 0);
    }
    let table = log2_table();
    let mut acc = VifScaleAccum::default();
    let mut next = 0;
    let bias = _mm256_set1_epi32(i32::MIN);
    for i in 0..h {
        // The ring holds the last FW input rows, which include every (mirrored) row of the
        // filter window of row i.
        while next <= (i + half).min(h - 1) {
            let slot = (next % FW) * rowlen;
            fill_ring(
                r.row(next),
                d.row(next),
                eight,
                w,
                &mut s.ring[slot..slot + rowlen],
            );
            if next > 0 {
                let (r0, r1) = (((next - 1) % FW) * rowlen, slot);
                let p0 = ((next - 1) % FW) * prowlen;
                for q in 0..nq {
                    for b in 0..nb {
                        let j = block(b);
                        // SAFETY: `ld` needs only AVX (enabled here) and bounds-checks its slice.
                        let (x, y) =
                            unsafe { (ld(&s.ring, r0 + q * w + j), ld(&s.ring, r1 + q * w + j)) };
                        let o = p0 + (q * nb + b) * 2 * B;
                        // SAFETY: `st` needs only AVX (enabled here) and bounds-checks its slice.
                        unsafe {
                            st(&mut s.pairs, o, _mm256_unpacklo_epi16(x, y));
                            st(&mut s.pairs, o + B, _mm256_unpackhi_epi16(x, y));
                        }
                    }
                }
            }
            next += 1;
        }
        // Inside the image, the window's tap pairs are pairs of consecutive rows.
        let inner = i >= half && i + half < h;
        let pair_rows: [usize; 8] =
            std::array::from_fn(|t| ((i + 2 * t).wrapping_sub(half) % FW) * prowlen);
        let last = ((i + half) % FW) * rowlen;
        let rows: [usize; FW] = std::array::from_fn(|k| {
            (super::mirror(i as isize - half as isize + k as isize, h) % FW) * rowlen
        });
        // Vertical pass. First the sums `S` of every quantity and block into s.vs (per block
        // 16 lanes: the low then the high interleave half), one quantity at a time.
        for q in 0..nq {
            for b in 0..nb {
                let j = block(b);
                let (lo, hi) = if inner {
                    let o = (q * nb + b) * 2 * B;
                    vpass_pairs::<FW>(
                        &s.pairs,
                        &pair_rows.map(|p| p + o),
                        &s.ring,
                        last + q * w,
                        j,
                        &cp,
                    )
                } else {
                    vpass(&s.ring, &rows, q * w, j, &cp)
                };
                let o = (q * nb + b) * B;
                // SAFETY: `st32` needs only AVX (enabled here) and bounds-checks its slice.
                unsafe {
                    st32(&mut s.vs, o, _mm256_add_epi32(lo, bias));
                    st32(&mut s.vs, o + 8, _mm256_add_epi32(hi, bias));
                }
            }
        }
        // Then the rounding of each statistic, into s.vh: mu1, mu2, xx (hi, lo), yy (hi, lo),
        // xy (hi, lo), as offset i16 in column order.
        for b in 0..nb {
            let j = block(b);
            // SAFETY (loads, stores): AVX2 is enabled in this function.
            let sum = |q: usize| {
                let o = (q * nb + b) * B;
                // SAFETY: `ld32` needs only AVX (enabled here) and bounds-checks its slice.
                unsafe { (ld32(&s.vs, o), ld32(&s.vs, o + 8)) }
            };
            let mut out = [_mm256_setzero_si256(); 8];
            match v {
                Vertical::Eight => {
                    // (m + 128) >> 8; the squares whole (< 2^32), split into halves.
                    let r128 = _mm256_set1_epi32(128);
                    for q in 0..2 {
                        let (lo, hi) = sum(q);
                        out[q] = pack_off(
                            _mm256_srli_epi32(_mm256_add_epi32(lo, r128), 8),
                            _mm256_srli_epi32(_mm256_add_epi32(hi, r128), 8),
                        );
                    }
                    let m16 = _mm256_set1_epi32(0xffff);
                    for q in 2..5 {
                        let (lo, hi) = sum(q);
                        out[2 * q - 2] =
                            pack_off(_mm256_srli_epi32(lo, 16), _mm256_srli_epi32(hi, 16));
                        out[2 * q - 1] =
                            pack_off(_mm256_and_si256(lo, m16), _mm256_and_si256(hi, m16));
                    }
                }
                Vertical::Sixteen { mu, sq } => {
                    let m16 = _mm256_set1_epi32(0xffff);
                    let (mr, ms) = (_mm256_set1_epi32(mu.round as i32), mu.shift as i32);
                    let msh = _mm_cvtsi32_si128(ms);
                    for q in 0..2 {
                        let (lo, hi) = sum(q);
                        // ((m + round) >> shift) as u16 (m + round < 2^32).
                        let f = |x| {
                            _mm256_and_si256(_mm256_srl_epi32(_mm256_add_epi32(x, mr), msh), m16)
                        };
                        out[q] = pack_off(f(lo), f(hi));
                    }
                    // (uint32_t)((H * 65536 + L + round) >> s) = (H << (16 - s)) +
                    // ((L + round) >> s), wrapping (s in 2..=16; L + round < 2^32).
                    let (sr, ss) = (_mm256_set1_epi32(sq.round as i32), sq.shift as i32);
                    let (shl, shr) = (_mm_cvtsi32_si128(16 - ss), _mm_cvtsi32_si128(ss));
                    for q in 0..3 {
                        let (hl, hh) = sum(2 + 2 * q);
                        let (ll, lh) = sum(3 + 2 * q);
                        let g = |hx, lx| {
                            _mm256_add_epi32(
                                _mm256_sll_epi32(hx, shl),
                                _mm256_srl_epi32(_mm256_add_epi32(lx, sr), shr),
                            )
                        };
                        let (xl, xh) = (g(hl, ll), g(hh, lh));
                        out[2 + 2 * q] =
                            pack_off(_mm256_srli_epi32(xl, 16), _mm256_srli_epi32(xh, 16));
                        out[3 + 2 * q] =
                            pack_off(_mm256_and_si256(xl, m16), _mm256_and_si256(xh, m16));
                    }
                }
            }
            for (vh, &o) in s.vh.iter_mut().zip(&out) {
                // SAFETY: `st` needs only AVX (enabled here) and bounds-checks its slice.
                unsafe { st(vh, PAD + j, o) };
            }
        }
        for vh in &mut s.vh {
            pad(vh, w, half);
        }
        // Horizontal pass, one quantity at a time, 16 columns a step (even columns, then
        // odd) into s.hs.
        let full = w / B * B;
        for (vh, hs) in s.vh.iter().zip(s.hs.iter_mut()) {
            // Every load of hpass_at below ends at or before PAD + full + half + B + 1.
            let row = &vh[..PAD + full + half + B + 1];
            for j0 in (0..full).step_by(B) {
                // SAFETY: the loads of hpass_at read row[j0 + PAD - half ..= j0 + PAD +
                // half + B], inside `row` (j0 + B <= full); AVX2 is enabled here.
                let (e, o) = unsafe { hpass_at::<FW>(row.as_ptr().add(PAD + j0 - half), &cp) };
                // SAFETY: `st32` needs only AVX (enabled here) and bounds-checks its slice.
                unsafe {
                    st32(hs, j0, e);
                    st32(hs, j0 + 8, o);
                }
            }
        }
        // Sigmas, 8 pixels a step.
        let r15 = _mm256_set1_epi32(32768);
        let zero = _mm256_setzero_si256();
        let filt = |h: __m256i, l: __m256i| {
            _mm256_add_epi32(h, _mm256_srli_epi32(_mm256_add_epi32(l, r15), 16))
        };
        for o in (0..full).step_by(8) {
            // SAFETY: `ld32` needs only AVX (enabled here) and bounds-checks its slice.
            let g = |a: usize| unsafe { ld32(&s.hs[a], o) };
            let (mu1, mu2) = (g(0), g(1));
            let mu1_sq = mul_hi_round(mu1, mu1);
            let mu2_sq = mul_hi_round(mu2, mu2);
            let mu1_mu2 = mul_hi_round(mu1, mu2);
            let s1 = _mm256_sub_epi32(filt(g(2), g(3)), mu1_sq);
            let s2 = _mm256_max_epi32(_mm256_sub_epi32(filt(g(4), g(5)), mu2_sq), zero);
            let s12 = _mm256_sub_epi32(filt(g(6), g(7)), mu1_mu2);
            // SAFETY: `st32` needs only AVX (enabled here) and bounds-checks its slice.
            unsafe {
                st32(&mut s.s1, o, s1);
                st32(&mut s.s2, o, s2);
                st32(&mut s.s12, o, s12);
            }
        }
        for j in full..w {
            let hs: [u32; 8] = std::array::from_fn(|a| hcol(f, &s.vh[a], j));
            let (mu1, mu2) = (hs[0] as u64, hs[1] as u64);
            let mu1_sq = ((mu1 * mu1 + 2147483648) >> 32) as u32;
            let mu2_sq = ((mu2 * mu2 + 2147483648) >> 32) as u32;
            let mu1_mu2 = ((mu1 * mu2 + 2147483648) >> 32) as u32;
            let filt = |h: u32, l: u32| h.wrapping_add((l + 32768) >> 16);
            s.s1[j] = filt(hs[2], hs[3]).wrapping_sub(mu1_sq) as i32;
            s.s2[j] = (filt(hs[4], hs[5]).wrapping_sub(mu2_sq) as i32).max(0);
            s.s12[j] = filt(hs[6], hs[7]).wrapping_sub(mu1_mu2) as i32;
        }
        accumulate_row(w, s, egl, table, &mut acc);
    }
    acc
}

/// The Isa::Avx512 kernels: the fused statistic (every scale at least 32 columns wide; see
/// `fused_statistic` below) and the 512-bit passes of [`subsample`]. The same `vpmaddwd`
/// sums as the AVX2 code (see the module notes for their bounds), twice the columns a step.
mod wide512;

/// `subsample_rd_8` / `subsample_rd_16` (see [`super::subsample`]).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub(super) fn subsample<const FW: usize>(
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Shift,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
    wide: bool,
) {
    let (w, h) = (r.w, r.h);
    let (ow, oh) = (w / 2, h / 2);
    let half = FW / 2;
    assert!(fits(f, w) && FW <= 17 && half <= PAD);
    // The 512-bit passes need one 32-column block.
    let wide = wide && w >= 2 * B;
    let cp = pairs(f);
    for vh in &mut s.vh {
        vh.resize(w + 2 * PAD + 2 * B, 0);
    }
    let bias = _mm256_set1_epi32(i32::MIN);
    let off = _mm256_set1_epi16(i16::MIN);
    let (vr, vs) = (
        _mm256_set1_epi32(v.round as i32),
        _mm_cvtsi32_si128(v.shift as i32),
    );
    let m16 = _mm256_set1_epi32(0xffff);
    let r15 = _mm256_set1_epi32(32768);
    let full = w / B * B;
    for oi in 0..oh {
        let i = 2 * oi;
        for (img, vh, out) in [(r, 0, &mut *out_r), (d, 1, &mut *out_d)] {
            let rows = img.taps::<FW>(i);
            let vh = &mut s.vh[vh];
            // The wide pass does the whole row (then j = w), else 16 columns a step.
            let mut j = 0;
            if wide {
                // SAFETY: `wide` is true only in compute_avx512 (Isa::Avx512 checked).
                unsafe { wide512::subsample_vpass::<FW>(&rows, w, f, v.round, v.shift, vh) };
                j = w;
            }
            while j < w {
                let (mut lo, mut hi) = (bias, bias);
                for t in 0..half + 1 {
                    // SAFETY: AVX2 is enabled in this function.
                    let x = _mm256_xor_si256(unsafe { ldu(rows[2 * t], j) }, off);
                    let y = if 2 * t + 1 < FW {
                        // SAFETY: as above.
                        _mm256_xor_si256(unsafe { ldu(rows[2 * t + 1], j) }, off)
                    } else {
                        x
                    };
                    lo =
                        _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x, y), cp[t]));
                    hi =
                        _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x, y), cp[t]));
                }
                // ((t + round) >> shift) as u16 (t + round < 2^32).
                let g = |x| _mm256_and_si256(_mm256_srl_epi32(_mm256_add_epi32(x, vr), vs), m16);
                // SAFETY: `st` needs only AVX (enabled here) and bounds-checks its slice.
                unsafe { st(vh, PAD + j, pack_off(g(lo), g(hi))) };
                if j + B == w {
                    break;
                }
                j = (j + B).min(w - B);
            }
            pad(vh, w, half);
            let orow = &mut out[oi * ow..oi * ow + ow];
            let done = if wide {
                // SAFETY: as above.
                unsafe { wide512::subsample_hpass::<FW>(vh, full, f, orow) }
            } else {
                0
            };
            for j0 in (done..full).step_by(B) {
                // SAFETY: AVX2 is enabled in this function.
                let e = hpass_even::<FW>(vh, j0, &cp);
                // (sum + 32768) >> 16, eight u16 in column order.
                let e = _mm256_srli_epi32(_mm256_add_epi32(e, r15), 16);
                let p = _mm256_permute4x64_epi64(_mm256_packus_epi32(e, e), 0b1000);
                // SAFETY: `st16x8` needs only AVX (enabled here) and bounds-checks its slice.
                unsafe { st16x8(orow, j0 / 2, _mm256_castsi256_si128(p)) };
            }
            for oj in full / 2..ow {
                orow[oj] = ((hcol(f, vh, 2 * oj) + 32768) >> 16) as u16;
            }
        }
    }
}
