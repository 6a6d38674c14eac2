use std::arch::x86_64::*;

use super::{B, G, GAIN_EPS, Img, PAD, SIGMA_NSQ, Scratch, Vertical, VifScaleAccum, log2_table};

/// The tap pairs `(f[2t], f[2t + 1])` of a filter (`f[FW]` = 0), one pair per lane.
#[target_feature(enable = "avx512f,avx512bw")]
fn taps<const FW: usize>(f: &[u16; FW]) -> [__m512i; 9] {
    let mut p = [_mm512_setzero_si512(); 9];
    for (t, p) in p.iter_mut().enumerate().take(FW / 2 + 1) {
        let lo = f[2 * t] as u32;
        let hi = if 2 * t + 1 < FW {
            f[2 * t + 1] as u32
        } else {
            0
        };
        *p = _mm512_set1_epi32((lo | hi << 16) as i32);
    }
    p
}

/// The tap pairs `(f[2t - 1], f[2t])` of a filter (`f[-1]` = 0): applied to the pairs
/// `(x[c - half + 2t], x[c - half + 2t + 1])` that [`taps`] applies to for output column
/// `c`, they give the sum of column `c + 1` (the same taps, so the same bounds).
#[target_feature(enable = "avx512f,avx512bw")]
fn odd_taps<const FW: usize>(f: &[u16; FW]) -> [__m512i; 9] {
    let mut p = [_mm512_setzero_si512(); 9];
    for (t, p) in p.iter_mut().enumerate().take(FW / 2 + 1) {
        let lo = if t > 0 { f[2 * t - 1] as u32 } else { 0 };
        let hi = f[2 * t] as u32;
        *p = _mm512_set1_epi32((lo | hi << 16) as i32);
    }
    p
}

/// 32 `i16` from `s[i..]`.
#[target_feature(enable = "avx512f,avx512bw")]
fn ld(s: &[i16], i: usize) -> __m512i {
    let s = &s[i..i + 2 * B];
    // SAFETY: `s` is 64 readable bytes; loadu needs no alignment; AVX-512F is enabled.
    unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }
}

/// Store 32 `i16` at `s[i..]`.
#[target_feature(enable = "avx512f,avx512bw")]
fn st(s: &mut [i16], i: usize, x: __m512i) {
    let s = &mut s[i..i + 2 * B];
    // SAFETY: `s` is 64 writable bytes; storeu needs no alignment; AVX-512F is enabled.
    unsafe { _mm512_storeu_si512(s.as_mut_ptr().cast(), x) }
}

/// `(a * b + 2^31) >> 32` per 32-bit lane (`a, b <= 65536 * 65535`, so no 64-bit wrap).
#[target_feature(enable = "avx512f")]
fn mul_hi_round(a: __m512i, b: __m512i) -> __m512i {
    let r = _mm512_set1_epi64(1 << 31);
    let pe = _mm512_add_epi64(_mm512_mul_epu32(a, b), r);
    let po = _mm512_add_epi64(
        _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32)),
        r,
    );
    _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(pe, 32), po)
}

/// The vertical pass of [`super::subsample`] on one output row, 32 columns a step
/// (`w >= 32`): the same interleave, `vpmaddwd` and pack, per 128-bit lane as there, so
/// the pack restores column order.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
pub(in super::super) fn subsample_vpass<const FW: usize>(
    rows: &[&[u16]; FW],
    w: usize,
    f: &[u16; FW],
    round: u64,
    shift: u32,
    vh: &mut [i16],
) {
    let half = FW / 2;
    let cp = taps(f);
    let bias = _mm512_set1_epi32(i32::MIN);
    let off = _mm512_set1_epi16(i16::MIN);
    let off32 = _mm512_set1_epi32(32768);
    let (vr, vs) = (
        _mm512_set1_epi32(round as i32),
        _mm_cvtsi32_si128(shift as i32),
    );
    let m16 = _mm512_set1_epi32(0xffff);
    let ldu = |s: &[u16], i: usize| {
        let s = &s[i..i + 2 * B];
        // SAFETY: `s` is 64 readable bytes; AVX-512F is enabled in this function.
        _mm512_xor_si512(unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }, off)
    };
    let mut j = 0;
    loop {
        let (mut lo, mut hi) = (bias, bias);
        for t in 0..half + 1 {
            let x = ldu(rows[2 * t], j);
            let y = if 2 * t + 1 < FW {
                ldu(rows[2 * t + 1], j)
            } else {
                x
            };
            lo = _mm512_add_epi32(lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(x, y), cp[t]));
            hi = _mm512_add_epi32(hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(x, y), cp[t]));
        }
        // ((t + round) >> shift) as u16 (t + round < 2^32), then offset by -32768.
        let g = |x| {
            _mm512_sub_epi32(
                _mm512_and_si512(_mm512_srl_epi32(_mm512_add_epi32(x, vr), vs), m16),
                off32,
            )
        };
        let out = &mut vh[PAD + j..PAD + j + 2 * B];
        // SAFETY: `out` is 64 writable bytes; AVX-512BW is enabled in this function.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), _mm512_packs_epi32(g(lo), g(hi))) };
        if j + 2 * B == w {
            break;
        }
        // The last block overlaps the one before when w is not a multiple of 32.
        j = (j + 2 * B).min(w - 2 * B);
    }
}

/// The horizontal pass of [`super::subsample`] (even columns only) over the whole
/// 32-column steps of `0..full`, 16 outputs a step; returns the column where it stopped.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
pub(in super::super) fn subsample_hpass<const FW: usize>(
    vh: &[i16],
    full: usize,
    f: &[u16; FW],
    orow: &mut [u16],
) -> usize {
    let half = FW / 2;
    let cp = taps(f);
    let r15 = _mm512_set1_epi32(32768);
    let steps = full / (2 * B);
    for k in 0..steps {
        let j0 = 2 * B * k;
        let mut e = _mm512_set1_epi32(i32::MIN);
        for (t, &c) in cp.iter().enumerate().take(half + 1) {
            e = _mm512_add_epi32(e, _mm512_madd_epi16(ld(vh, PAD + j0 - half + 2 * t), c));
        }
        // (sum + 32768) >> 16 <= 65535, sixteen u16 in column order.
        let e = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_add_epi32(e, r15), 16));
        let o = &mut orow[j0 / 2..j0 / 2 + B];
        // SAFETY: `o` is 32 writable bytes; AVX is enabled in this function.
        unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), e) };
    }
    steps * 2 * B
}

/// `table[idx & 0xffff]` of the lanes of `m` (0 elsewhere); as [`lookup16`], masked.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
fn lookup16m(table: &[u16; 65537], m: __mmask16, idx: __m512i) -> __m512i {
    let idx = _mm512_and_si512(idx, _mm512_set1_epi32(0xffff));
    // SAFETY: each active lane reads the 4 bytes at `2 * idx <= 131070` of the
    // 131074-byte table (the low 16 bits are entry `idx`); AVX-512F is enabled.
    let v = unsafe {
        _mm512_mask_i32gather_epi32::<2>(_mm512_setzero_si512(), m, idx, table.as_ptr().cast())
    };
    _mm512_and_si512(v, _mm512_set1_epi32(0xffff))
}

/// `log2_32(x)` of 16 lanes `2^17 <= x < 2^31` (those of `m`; the other lanes are
/// meaningless): `k = floor(log2(x)) - 15` from the exponent of the float of `x >> 8`
/// (exact, below 2^24), then the table entry of `x >> k`, plus `2048 * k`.
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
fn log2_32x16(table: &[u16; 65537], m: __mmask16, x: __m512i) -> __m512i {
    let fl = _mm512_cvtepi32_ps(_mm512_srli_epi32(x, 8));
    let k = _mm512_sub_epi32(
        _mm512_srli_epi32(_mm512_castps_si512(fl), 23),
        _mm512_set1_epi32(127 - 8 + 15),
    );
    _mm512_add_epi32(
        lookup16m(table, m, _mm512_srlv_epi32(x, k)),
        _mm512_slli_epi32(k, 11),
    )
}

/// The per-row sums of [`statistic`] (vector lanes; reduced into the scale's
/// [`VifScaleAccum`] at the end of each row).
struct Sums {
    /// `accum_den_log` and `accum_num_log` terms, per `i32` lane: a lane takes at most
    /// 2 pixels per 32-column step, `2 * 480 = 960` at 15360 columns, so at most
    /// `960 * NUM_LOG_PER_PIXEL < 2^26` (`DEN_LOG_PER_PIXEL` is smaller).
    den_log: __m512i,
    num_log: __m512i,
    /// `accum_num_non_log` per `i64` lane (whole scale: `<= 1.43e17` in all).
    num_non_log: __m512i,
    den_non_log: i64,
}

/// libvmaf's per-pixel step (see [`super::super::accumulate_row`]) on the 16 pixels of
/// `valid`, all in registers: the same integer and double operations as the portable
/// code, per lane. Most pixels of natural content take the gain path, so it runs on
/// all 16 lanes (masked) whenever one of them takes it.
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
fn pixels(
    table: &[u16; 65537],
    egl: f64,
    valid: __mmask16,
    s1: __m512i,
    s2: __m512i,
    s12: __m512i,
    sums: &mut Sums,
) {
    let nsq = _mm512_set1_epi32(SIGMA_NSQ);
    let zero = _mm512_setzero_si512();
    // log: sigma1_sq >= sigma_nsq.
    let log = _mm512_mask_cmpge_epi32_mask(valid, s1, nsq);
    let non_log = valid & !log;
    if log != 0 {
        // log2_32(sigma_nsq + sigma1_sq) - 2048 * 17 (the argument is in 2^18..2^31).
        let l = log2_32x16(table, log, _mm512_add_epi32(s1, nsq));
        sums.den_log = _mm512_mask_add_epi32(
            sums.den_log,
            log,
            sums.den_log,
            _mm512_sub_epi32(l, _mm512_set1_epi32(2048 * 17)),
        );
    }
    sums.den_non_log += non_log.count_ones() as i64;
    let v = _mm512_maskz_mov_epi32(non_log, s2);
    sums.num_non_log = _mm512_add_epi64(
        sums.num_non_log,
        _mm512_add_epi64(
            _mm512_cvtepu32_epi64(_mm512_castsi512_si256(v)),
            _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(v, 1)),
        ),
    );
    // Gain path: log && sigma12 > 0 && sigma2_sq > 0.
    let gain = _mm512_mask_cmpgt_epi32_mask(_mm512_mask_cmpgt_epi32_mask(log, s12, zero), s2, zero);
    if gain == 0 {
        return;
    }
    let eps = _mm512_set1_pd(GAIN_EPS);
    let eglv = _mm512_set1_pd(egl);
    let two52 = _mm512_set1_pd(4_503_599_627_370_496.0);
    // Eight lanes in double (libvmaf's expressions, same order; see the AVX2 kernel
    // for why each step is exact): numer1, and the index and shift of log2_64 of
    // numer1_tmp.
    let eighth = |i1: __m256i, i2: __m256i, i12: __m256i| {
        let (s1, s2, s12) = (
            _mm512_cvtepi32_pd(i1),
            _mm512_cvtepi32_pd(i2),
            _mm512_cvtepi32_pd(i12),
        );
        // g = sigma12 / (sigma1_sq + eps); sv_sq = (int32)(sigma2_sq - g * sigma12).
        let g = _mm512_div_pd(s12, _mm512_add_pd(s1, eps));
        let sv = _mm512_cvttpd_epi32(_mm512_sub_pd(s2, _mm512_mul_pd(g, s12)));
        let numer1 = _mm256_add_epi32(
            _mm256_max_epi32(sv, _mm256_setzero_si256()),
            _mm256_set1_epi32(SIGMA_NSQ),
        );
        // g = MIN(g, egl) (`g < egl ? g : egl`, what minpd computes).
        let g = _mm512_min_pd(g, eglv);
        let prod = _mm512_mul_pd(_mm512_mul_pd(g, g), s1);
        let x = _mm512_add_pd(
            _mm512_roundscale_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(prod),
            _mm512_cvtepi32_pd(numer1),
        );
        let xi = _mm512_sub_epi64(
            _mm512_castpd_si512(_mm512_add_pd(x, two52)),
            _mm512_castpd_si512(two52),
        );
        // log2_64(x): k = floor(log2(x)) - 15 from the exponent of the (exact) double.
        let k = _mm512_sub_epi64(
            _mm512_srli_epi64(_mm512_castpd_si512(x), 52),
            _mm512_set1_epi64(1023 + 15),
        );
        (
            numer1,
            _mm512_cvtepi64_epi32(_mm512_srlv_epi64(xi, k)),
            _mm512_cvtepi64_epi32(k),
        )
    };
    let lo = |x: __m512i| _mm512_castsi512_si256(x);
    let hi = |x: __m512i| _mm512_extracti64x4_epi64(x, 1);
    let join = |a: __m256i, b: __m256i| _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    let (n0, i0, k0) = eighth(lo(s1), lo(s2), lo(s12));
    let (n1, i1, k1) = eighth(hi(s1), hi(s2), hi(s12));
    let (numer1, idx, k) = (join(n0, n1), join(i0, i1), join(k0, k1));
    let l1 = _mm512_add_epi32(lookup16m(table, gain, idx), _mm512_slli_epi32(k, 11));
    let l2 = log2_32x16(table, gain, numer1);
    sums.num_log =
        _mm512_mask_add_epi32(sums.num_log, gain, sums.num_log, _mm512_sub_epi32(l1, l2));
}

/// `madd` then `add` (`vpmaddwd`, `vpaddd`).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn dp_plain(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(acc, _mm512_madd_epi16(a, b))
}

/// The same in one instruction (`vpdpwssd`: the two products and the accumulator are
/// summed modulo 2^32, as `vpmaddwd` then `vpaddd` do).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn dp_vnni(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    _mm512_dpwssd_epi32(acc, a, b)
}

/// The rounding of one unit of the vertical pass at one step, into the `i16` rows `vh`
/// at `o`: `mu1` or `mu2` (unit 0, 1: `sums` holds its sum S), or one product (unit
/// 2, 3, 4: `xx`, `yy`, `xy`; `sums` holds its S, or for `Sixteen` the S of its high
/// and low halves), each as (low, high) interleave halves, offset by -32768 and packed
/// into column order.
/// (A macro: a call per unit and step costs more than the rounding.)
macro_rules! round_unit {
    ($v:expr, $unit:expr, $sums:expr, $vh:expr, $o:expr) => {{
        let (v, unit, sums, vh, o): (
            Vertical,
            usize,
            &[(__m512i, __m512i)],
            &mut [Vec<i16>; 8],
            usize,
        ) = ($v, $unit, $sums, $vh, $o);
        let off = _mm512_set1_epi32(32768);
        let m16 = _mm512_set1_epi32(0xffff);
        let pack = |lo: __m512i, hi: __m512i| {
            _mm512_packs_epi32(_mm512_sub_epi32(lo, off), _mm512_sub_epi32(hi, off))
        };
        match v {
            Vertical::Eight => {
                let (lo, hi) = sums[0];
                if unit < 2 {
                    // (m + 128) >> 8.
                    let r128 = _mm512_set1_epi32(128);
                    let g = |x| _mm512_srli_epi32(_mm512_add_epi32(x, r128), 8);
                    st(&mut vh[unit], o, pack(g(lo), g(hi)));
                } else {
                    // The squares whole (< 2^32), split into halves.
                    let (a, b) = (_mm512_srli_epi32(lo, 16), _mm512_srli_epi32(hi, 16));
                    st(&mut vh[2 * unit - 2], o, pack(a, b));
                    let (a, b) = (_mm512_and_si512(lo, m16), _mm512_and_si512(hi, m16));
                    st(&mut vh[2 * unit - 1], o, pack(a, b));
                }
            }
            Vertical::Sixteen { mu, sq } => {
                if unit < 2 {
                    // ((m + round) >> shift) as u16 (m + round < 2^32).
                    let (lo, hi) = sums[0];
                    let mr = _mm512_set1_epi32(mu.round as i32);
                    let msh = _mm_cvtsi32_si128(mu.shift as i32);
                    let g =
                        |x| _mm512_and_si512(_mm512_srl_epi32(_mm512_add_epi32(x, mr), msh), m16);
                    st(&mut vh[unit], o, pack(g(lo), g(hi)));
                } else {
                    // (uint32_t)((H * 65536 + L + round) >> s) = (H << (16 - s)) +
                    // ((L + round) >> s), wrapping (s in 2..=16; L + round < 2^32).
                    let ((hl, hh), (ll, lh)) = (sums[0], sums[1]);
                    let sr = _mm512_set1_epi32(sq.round as i32);
                    let ss = sq.shift as i32;
                    let (shl, shr) = (_mm_cvtsi32_si128(16 - ss), _mm_cvtsi32_si128(ss));
                    let g = |hx, lx| {
                        _mm512_add_epi32(
                            _mm512_sll_epi32(hx, shl),
                            _mm512_srl_epi32(_mm512_add_epi32(lx, sr), shr),
                        )
                    };
                    let (xl, xh) = (g(hl, ll), g(hh, lh));
                    let (a, b) = (_mm512_srli_epi32(xl, 16), _mm512_srli_epi32(xh, 16));
                    st(&mut vh[2 * unit - 2], o, pack(a, b));
                    let (a, b) = (_mm512_and_si512(xl, m16), _mm512_and_si512(xh, m16));
                    st(&mut vh[2 * unit - 1], o, pack(a, b));
                }
            }
        }
    }};
}

/// The horizontal pass, sigmas and per-pixel terms of one output row (the padded `i16`
/// rows `vh` of its vertical pass), 32 columns a step: 16 even columns, then 16 odd
/// ones (the last step masked to the columns of the image); the row's sums are added
/// to `acc` (and `sums.num_non_log`, `sums.den_non_log`).
macro_rules! fused_row {
    ($name:ident, $features:literal, $dp:ident) => {
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        fn $name<const FW: usize>(
            vh: &[Vec<i16>; 8],
            w: usize,
            cp: &[__m512i; 9],
            cq: &[__m512i; 9],
            table: &[u16; 65537],
            egl: f64,
            sums: &mut Sums,
            acc: &mut VifScaleAccum,
        ) {
            let half = FW / 2;
            let bias = _mm512_set1_epi32(i32::MIN);
            let r15 = _mm512_set1_epi32(32768);
            let zero = _mm512_setzero_si512();
            for k in 0..w.div_ceil(2 * B) {
                let j0 = 2 * B * k;
                let rem = w - j0;
                let mask = |n: usize| ((1u32 << n.min(16)) - 1) as __mmask16;
                let (ve, vo) = (mask(rem.div_ceil(2)), mask(rem / 2));
                // The horizontal sums S of quantity q at the even and odd columns.
                let hsum = |q: usize| {
                    let row = &vh[q][PAD + j0 - half..PAD + j0 + half + 2 * B + 1];
                    let (mut e, mut o) = (bias, bias);
                    // One load of pairs for both: the odd columns through odd_taps.
                    for t in 0..half + 1 {
                        let x = ld(row, 2 * t);
                        e = $dp(e, x, cp[t]);
                        o = $dp(o, x, cq[t]);
                    }
                    (e, o)
                };
                let filt = |(h, l): (__m512i, __m512i)| {
                    _mm512_add_epi32(h, _mm512_srli_epi32(_mm512_add_epi32(l, r15), 16))
                };
                let ((m1e, m1o), (m2e, m2o)) = (hsum(0), hsum(1));
                let ((xxhe, xxho), (xxle, xxlo)) = (hsum(2), hsum(3));
                let ((yyhe, yyho), (yyle, yylo)) = (hsum(4), hsum(5));
                let ((xyhe, xyho), (xyle, xylo)) = (hsum(6), hsum(7));
                for (valid, mu1, mu2, xx, yy, xy) in [
                    (ve, m1e, m2e, (xxhe, xxle), (yyhe, yyle), (xyhe, xyle)),
                    (vo, m1o, m2o, (xxho, xxlo), (yyho, yylo), (xyho, xylo)),
                ] {
                    if valid == 0 {
                        continue;
                    }
                    let s1 = _mm512_sub_epi32(filt(xx), mul_hi_round(mu1, mu1));
                    let s2 =
                        _mm512_max_epi32(_mm512_sub_epi32(filt(yy), mul_hi_round(mu2, mu2)), zero);
                    let s12 = _mm512_sub_epi32(filt(xy), mul_hi_round(mu1, mu2));
                    pixels(table, egl, valid, s1, s2, s12, sums);
                }
            }
            // Per-row reductions (a row's sums are below 15360 * NUM_LOG_PER_PIXEL <
            // 2^31).
            acc.den_log += _mm512_reduce_add_epi32(sums.den_log) as i64;
            acc.num_log += _mm512_reduce_add_epi32(sums.num_log) as i64;
            sums.den_log = zero;
            sums.num_log = zero;
        }
    };
}

/// Defines `$name`: [`super::statistic`] with the passes of a row fused (Isa::Avx512,
/// images at least 32 columns wide), built for `$features` with `$dp` as its
/// multiply-accumulate (`dp_plain` or `dp_vnni`) and `$row` (from [`fused_row`]) as its
/// horizontal pass.
///
/// Per input row: the quantities (`super::fill_ring`) into a ring of `FW + 2G - 1`
/// rows, and the 512-bit interleave (`vpunpck{l,h}wd`) of each row with the next, per
/// quantity and 32-column step. Per output row, 32 columns a step: the vertical sums of
/// every quantity, rounded and packed straight into the `i16` rows of `s.vg[0]`; then
/// `$row`. Inside the image the output rows go in groups of `2G`, the even rows `i, i +
/// 2, ..., i + 2G - 2` then the odd ones: tap pair `t` of row `i + 2g` is tap pair `t +
/// g` of row `i`, so the `G` rows of one parity load their tap pairs once (into
/// `s.vg[g]`), `half + G - 1` loads instead of `G * half`. The sums are the same
/// integers as the AVX2 kernel's (module notes).
macro_rules! fused_statistic {
    ($name:ident, $features:literal, $dp:ident, $row:ident) => {
        #[target_feature(enable = $features)]
        pub(in super::super) fn $name<const FW: usize>(
            f: &[u16; FW],
            r: Img<'_>,
            d: Img<'_>,
            v: Vertical,
            egl: f64,
            s: &mut Scratch,
        ) -> VifScaleAccum {
            let (w, h) = (r.w, r.h);
            let half = FW / 2;
            assert!(super::fits(f, w) && w >= 2 * B && FW <= 17 && half <= PAD);
            let (cp, cq) = (taps(f), odd_taps(f));
            let eight = matches!(v, Vertical::Eight);
            let nq = if eight { 5 } else { 8 };
            // Units of the rounding (see round_unit) and their quantities.
            let units: &[&[usize]] = if eight {
                &[&[0], &[1], &[2], &[3], &[4]]
            } else {
                &[&[0], &[1], &[2, 3], &[4, 5], &[6, 7]]
            };
            let rowlen = nq * w;
            // Ring slots: the window of the last row of a group.
            let rs = FW + 2 * G - 1;
            // 32-column steps; the last one of the vertical pass overlaps the one before
            // when w is not a multiple of 32.
            let ns = w.div_ceil(2 * B);
            let step = |k: usize| (2 * B * k).min(w - 2 * B);
            // Per input row y (paired with y + 1), step k and quantity q, 64 values: the
            // 512-bit vpunpck{l,h}wd of the two rows (32 columns each).
            let prowlen = nq * ns * 4 * B;
            s.ring.resize(rs * rowlen, 0);
            s.pairs.resize(rs * prowlen, 0);
            for vh in s.vg.iter_mut().flatten() {
                // Written at PAD..PAD + w, mirrored around; the last horizontal step
                // reads up to PAD + (w - 1) + half + 2 * B (lanes outside the image,
                // masked).
                vh.resize(w + 2 * PAD + 2 * B, 0);
            }
            let table = log2_table();
            let mut acc = VifScaleAccum::default();
            let bias = _mm512_set1_epi32(i32::MIN);
            let mut sums = Sums {
                den_log: _mm512_setzero_si512(),
                num_log: _mm512_setzero_si512(),
                num_non_log: _mm512_setzero_si512(),
                den_non_log: 0,
            };
            let mut next = 0;
            let mut i = 0;
            while i < h {
                let group = i % (2 * G) == 0 && i >= half && i + 2 * G - 1 + half < h;
                // Input rows up to the window of the group's last row.
                let top = (i + half + if group { 2 * G - 1 } else { 0 }).min(h - 1);
                while next <= top {
                    let slot = (next % rs) * rowlen;
                    super::fill_ring(
                        r.row(next),
                        d.row(next),
                        eight,
                        w,
                        &mut s.ring[slot..slot + rowlen],
                    );
                    if next > 0 {
                        let r0 = ((next - 1) % rs) * rowlen;
                        let p0 = ((next - 1) % rs) * prowlen;
                        for k in 0..ns {
                            let j = step(k);
                            for q in 0..nq {
                                let x = ld(&s.ring, r0 + q * w + j);
                                let y = ld(&s.ring, slot + q * w + j);
                                let o = p0 + (k * nq + q) * 4 * B;
                                st(&mut s.pairs, o, _mm512_unpacklo_epi16(x, y));
                                st(&mut s.pairs, o + 2 * B, _mm512_unpackhi_epi16(x, y));
                            }
                        }
                    }
                    next += 1;
                }
                let (ring, pairs) = (&s.ring, &s.pairs);
                let rows: &[usize] = if group { &[i, i + 1] } else { &[i] };
                for &i in rows {
                    if group {
                        // Rows i + 2g, g < G: pair rows i - half + 2t, t < half + G - 1.
                        let pr: [usize; 8 + G] = std::array::from_fn(|t| {
                            ((i + 2 * t).wrapping_sub(half) % rs) * prowlen
                        });
                        let last: [usize; G] =
                            std::array::from_fn(|g| ((i + 2 * g + half) % rs) * rowlen);
                        for k in 0..ns {
                            let j = step(k);
                            for (u, qs) in units.iter().enumerate() {
                                let mut out = [[(bias, bias); 2]; G];
                                for (n, &q) in qs.iter().enumerate() {
                                    let po = (k * nq + q) * 4 * B;
                                    let (mut lo, mut hi) = ([bias; G], [bias; G]);
                                    for g in 0..G {
                                        let x = ld(ring, last[g] + q * w + j);
                                        let (a, b) = (
                                            _mm512_unpacklo_epi16(x, x),
                                            _mm512_unpackhi_epi16(x, x),
                                        );
                                        lo[g] = _mm512_madd_epi16(a, cp[half]);
                                        hi[g] = _mm512_madd_epi16(b, cp[half]);
                                    }
                                    for t in 0..half + G - 1 {
                                        let a = ld(pairs, pr[t] + po);
                                        let b = ld(pairs, pr[t] + po + 2 * B);
                                        for g in 0..G {
                                            if t >= g && t - g < half {
                                                lo[g] = $dp(lo[g], a, cp[t - g]);
                                                hi[g] = $dp(hi[g], b, cp[t - g]);
                                            }
                                        }
                                    }
                                    // S = S' + 2^31 (wrapping).
                                    for g in 0..G {
                                        out[g][n] = (
                                            _mm512_add_epi32(lo[g], bias),
                                            _mm512_add_epi32(hi[g], bias),
                                        );
                                    }
                                }
                                for (g, out) in out.iter().enumerate() {
                                    round_unit!(v, u, &out[..qs.len()], &mut s.vg[g], PAD + j);
                                }
                            }
                        }
                    } else {
                        // One row: its window's rows from the ring (mirrored at the
                        // top and bottom edges).
                        let wr: [usize; FW] = std::array::from_fn(|k| {
                            (super::super::mirror(i as isize - half as isize + k as isize, h) % rs)
                                * rowlen
                        });
                        for k in 0..ns {
                            let j = step(k);
                            for (u, qs) in units.iter().enumerate() {
                                let mut out = [(bias, bias); 2];
                                for (n, &q) in qs.iter().enumerate() {
                                    let (mut lo, mut hi) = (bias, bias);
                                    for t in 0..half + 1 {
                                        let x = ld(ring, wr[2 * t] + q * w + j);
                                        // The second row of the last pair has tap 0:
                                        // any row will do.
                                        let y = if 2 * t + 1 < FW {
                                            ld(ring, wr[2 * t + 1] + q * w + j)
                                        } else {
                                            x
                                        };
                                        lo = $dp(lo, _mm512_unpacklo_epi16(x, y), cp[t]);
                                        hi = $dp(hi, _mm512_unpackhi_epi16(x, y), cp[t]);
                                    }
                                    out[n] = (lo, hi);
                                }
                                round_unit!(v, u, &out[..qs.len()], &mut s.vg[0], PAD + j);
                            }
                        }
                    }
                    for vh in s.vg.iter_mut().take(if group { G } else { 1 }) {
                        for row in vh.iter_mut() {
                            super::pad(row, w, half);
                        }
                        $row::<FW>(vh, w, &cp, &cq, table, egl, &mut sums, &mut acc);
                    }
                }
                i += if group { 2 * G } else { 1 };
            }
            let mut lanes = [0i64; 8];
            // SAFETY: `lanes` is 64 writable bytes; AVX-512F is enabled.
            unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), sums.num_non_log) };
            acc.num_non_log = lanes.iter().sum::<i64>();
            acc.den_non_log = sums.den_non_log;
            acc
        }
    };
}

fused_row!(row_plain, "avx2,avx512f,avx512bw,avx512vl", dp_plain);
fused_row!(
    row_vnni,
    "avx2,avx512f,avx512bw,avx512vl,avx512vnni",
    dp_vnni
);
fused_statistic!(
    statistic,
    "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl",
    dp_plain,
    row_plain
);
fused_statistic!(
    statistic_vnni,
    "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl,avx512vnni",
    dp_vnni,
    row_vnni
);
