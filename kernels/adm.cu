// Integer ADM: libvmaf 3.2.0 libvmaf/src/feature/integer_adm.c, plain C path
// (adm_dwt2_8/_16, adm_dwt2_s123_combined, adm_decouple, adm_decouple_s123, adm_csf,
// i4_adm_csf, adm_csf_den_scale, adm_csf_den_s123, adm_cm, i4_adm_cm), two launches per scale
// plus one final launch for the four scales:
//
//   adm_dwt_s0_u8 / adm_dwt_s0_u16 (const T *ref, const T *dis, AdmArgs a, i32 *next_ref,
//       i32 *next_dis, i32 *rbuf, const i32 *div_lookup, u64 *den_rows)
//   adm_dwt_s123(const i32 *ref, const i32 *dis, AdmArgs a, i32 *next_ref, i32 *next_dis,
//       i32 *rbuf, const i32 *div_lookup, u64 *den_rows, i32 scale)
//       grid ceil(bw / ADM_TW) x ceil(bh / ADM_TH), VG_BLOCK threads. One thread per band
//       position (i, j) of the a.bw x a.bh bands: both DWTs, band A written to next_ref/next_dis
//       (a.bw x a.bh, the next scale's input; may be null at scale 3), the decoupled bands
//       r_h, r_v, r_d, a_h, a_v, a_d written to rbuf (6 planes of a.bw * a.bh), and the
//       denominator's per-row inner sums (rows top..bottom, columns left..right) added to
//       den_rows[q * a.bh + i], q = h, v, d.
//   adm_cm_s0 / adm_cm_s123(const i32 *rbuf, AdmArgs a, u64 *cm_rows)
//       grid ceil((right - left) / ADM_TW) x ceil((bottom - top) / ADM_TH): the contrast
//       masking sums of the region, per row, for the DLM (non-AIM) pass (q = 0, 1, 2: h, v, d)
//       and the AIM pass (q = 3, 4, 5), added to cm_rows[q * a.bh + i].
//   adm_finalize(const u64 *rows, const FinalizeEntry *e, u64 *out)
//       one block per entry: sum over rows e.begin..e.end of (row + add) >> shift (arithmetic
//       shift when e.is_signed), written to out[e.dst]. libvmaf rounds every row's inner sum
//       before adding it up; this keeps that structure exactly.
//
// Band values of scale 0 are int16 in libvmaf and are kept (sign-extended) in int32 here; every
// int16 store of the C code is an explicit (vg_i16) truncation below.

#define ADM_TW 32
#define ADM_TH 8

// Must match AdmArgs in src/backend/gpu/kernels.rs (layout test there).
struct AdmArgs {
    vg_i32 w, h;              // this scale's input size
    vg_i32 bw, bh;            // band size: (w + 1) / 2, (h + 1) / 2
    vg_i32 vp_round, vp_shift;  // DWT vertical pass rounding
    vg_i32 hp_round, hp_shift;  // DWT horizontal pass rounding
    vg_i32 top, bottom, left, right;  // region of the CM and denominator sums (band coordinates)
    vg_u32 den_add_sq; vg_i32 den_shift_sq;    // adm_csf_den_s123 (scales 1..3)
    vg_u32 den_add_cub; vg_i32 den_shift_cub;  // adm_csf_den_s123 (scales 1..3)
    vg_u32 rf[3];             // CSF factors: i_rfactor (scale 0) / rfactor (scales 1..3)
    vg_i32 cm_sub[3];         // adm_cm: shift_x?sub (scale 0); 0 at scales 1..3
    vg_u32 cm_add_sq[3];
    vg_i32 cm_shift_sq[3];
    vg_u32 cm_add_cub[3];
    vg_i32 cm_shift_cub[3];
    float cos1deg_sq;         // adm_decouple: (float)(cos(1 deg) * cos(1 deg))
    vg_i32 pad0;
    double egl;               // adm_enhn_gain_limit
};
static_assert(sizeof(AdmArgs) == 152, "AdmArgs layout");

// Must match FinalizeEntry in src/backend/gpu/kernels.rs.
struct FinalizeEntry {
    vg_u32 src;      // offset of the first row in `rows`
    vg_u32 begin, end;
    vg_i32 shift;
    vg_u64 add;
    vg_u32 is_signed;
    vg_u32 dst;
};
static_assert(sizeof(FinalizeEntry) == 32, "FinalizeEntry layout");

// libvmaf 3.2.0 integer_adm.h: dwt2_db2_coeffs_lo / _hi, dwt2_db2_coeffs_lo_sum
__constant__ vg_i32 ADM_LO[4] = {15826, 27411, 7345, -4240};
__constant__ vg_i32 ADM_HI[4] = {-4240, -7345, 27411, -15826};
#define ADM_LO_SUM 46342

// Wrapping 32-bit arithmetic (the C code relies on int32 wrapping in a few places; signed
// overflow is undefined in C++, so it is done in unsigned here).
VG_INLINE vg_i32 wadd(vg_i32 a, vg_i32 b) { return (vg_i32)((vg_u32)a + (vg_u32)b); }
VG_INLINE vg_i32 wsub(vg_i32 a, vg_i32 b) { return (vg_i32)((vg_u32)a - (vg_u32)b); }
VG_INLINE vg_i32 wmul(vg_i32 a, vg_i32 b) { return (vg_i32)((vg_u32)a * (vg_u32)b); }
VG_INLINE vg_i32 wshl(vg_i32 a, int s) { return (vg_i32)((vg_u32)a << s); }
// C's abs() on int: abs(INT_MIN) stays INT_MIN.
VG_INLINE vg_i32 cabs(vg_i32 a) { return a < 0 ? (vg_i32)(0u - (vg_u32)a) : a; }

// dwt2_src_indices_filt: taps 2i-1 .. 2i+2, -1 -> 1, n + k -> n - 1 - k (n >= 5 here).
VG_INLINE int adm_dwt_ind(int v, int n) {
    if (v < 0) v = -v;
    if (v >= n) v = 2 * n - v - 1;
    return v;
}

// One band position of the DWT of one image. Scale 0: int16 intermediates (adm_dwt2_8/_16);
// scales 1..3: int32 intermediates, 64-bit sums (adm_dwt2_s123_combined).
template <typename T, bool S0>
VG_INLINE void adm_dwt_px(const T *__restrict__ src, const AdmArgs &a, const int *yi, const int *xi,
                          vg_i32 &ba, vg_i32 &bv, vg_i32 &bh, vg_i32 &bd) {
    vg_i32 tlo[4], thi[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        const size_t col = (size_t)xi[c];
        if (S0) {
            vg_i32 acc_lo = 0, acc_hi = 0;
#pragma unroll
            for (int m = 0; m < 4; ++m) {
                const vg_i32 u = (vg_i32)src[(size_t)yi[m] * (size_t)a.w + col];
                acc_lo = wadd(acc_lo, wmul(ADM_LO[m], u));
                acc_hi = wadd(acc_hi, wmul(ADM_HI[m], u));
            }
            acc_lo = wsub(acc_lo, wmul(ADM_LO_SUM, a.vp_round));
            tlo[c] = (vg_i16)(wadd(acc_lo, a.vp_round) >> a.vp_shift);
            thi[c] = (vg_i16)(wadd(acc_hi, a.vp_round) >> a.vp_shift);
        } else {
            vg_i64 acc_lo = 0, acc_hi = 0;
#pragma unroll
            for (int m = 0; m < 4; ++m) {
                const vg_i64 u = (vg_i64)(vg_i32)src[(size_t)yi[m] * (size_t)a.w + col];
                acc_lo += (vg_i64)ADM_LO[m] * u;
                acc_hi += (vg_i64)ADM_HI[m] * u;
            }
            tlo[c] = (vg_i32)((acc_lo + (vg_i64)a.vp_round) >> a.vp_shift);
            thi[c] = (vg_i32)((acc_hi + (vg_i64)a.vp_round) >> a.vp_shift);
        }
    }
    if (S0) {
        // |sum| <= 54822 * 32768 < 2^31: no wrap in the horizontal pass.
        vg_i32 s_a = 0, s_v = 0, s_h = 0, s_d = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            s_a += ADM_LO[k] * tlo[k];
            s_v += ADM_HI[k] * tlo[k];
            s_h += ADM_LO[k] * thi[k];
            s_d += ADM_HI[k] * thi[k];
        }
        ba = (vg_i16)((s_a + a.hp_round) >> a.hp_shift);
        bv = (vg_i16)((s_v + a.hp_round) >> a.hp_shift);
        bh = (vg_i16)((s_h + a.hp_round) >> a.hp_shift);
        bd = (vg_i16)((s_d + a.hp_round) >> a.hp_shift);
    } else {
        vg_i64 s_a = 0, s_v = 0, s_h = 0, s_d = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            s_a += (vg_i64)ADM_LO[k] * tlo[k];
            s_v += (vg_i64)ADM_HI[k] * tlo[k];
            s_h += (vg_i64)ADM_LO[k] * thi[k];
            s_d += (vg_i64)ADM_HI[k] * thi[k];
        }
        ba = (vg_i32)((s_a + (vg_i64)a.hp_round) >> a.hp_shift);
        bv = (vg_i32)((s_v + (vg_i64)a.hp_round) >> a.hp_shift);
        bh = (vg_i32)((s_h + (vg_i64)a.hp_round) >> a.hp_shift);
        bd = (vg_i32)((s_d + (vg_i64)a.hp_round) >> a.hp_shift);
    }
}

// adm_decouple_s123: get_best15_from32
VG_INLINE vg_u32 adm_best15(vg_u32 temp, int &x) {
    int k = vg_clz32(temp);
    k = 17 - k;
    temp = (temp + (1u << (k - 1))) >> k;
    x = k;
    return (vg_u16)temp;
}

// One orientation of adm_decouple (S0, int16 values) / adm_decouple_s123.
template <bool S0>
VG_INLINE void adm_decouple_one(vg_i32 o, vg_i32 t, bool angle_flag, double egl,
                                const vg_i32 *__restrict__ div_lookup, vg_i32 &r, vg_i32 &av) {
    if (S0) {
        vg_i32 k = (o == 0) ? 32768
                            : (vg_i32)((((vg_i64)div_lookup[o + 32768] * t) + 16384) >> 15);
        k = k < 0 ? 0 : (k > 32768 ? 32768 : k);
        vg_i32 rst = (vg_i16)(((k * o) + 16384) >> 15);
        const float rst_f = ((float)k / 32768) * ((float)o / 64);
        if (angle_flag && (rst_f > 0.)) {
            const double x = (double)rst * egl;
            rst = (vg_i16)(x < (double)t ? x : (double)t);
        }
        if (angle_flag && (rst_f < 0.)) {
            const double x = (double)rst * egl;
            rst = (vg_i16)(x > (double)t ? x : (double)t);
        }
        r = rst;
        av = (vg_i16)(t - rst);
    } else {
        int shift = 0;
        const vg_u32 abs_o = (vg_u32)cabs(o);
        const int sign = o < 0 ? -1 : 1;
        const vg_u32 msb = abs_o < 32768 ? abs_o : adm_best15(abs_o, shift);
        vg_i64 k = (o == 0) ? 32768
                            : ((((vg_i64)div_lookup[msb + 32768] * t) * sign +
                                (vg_i64)(1 << (14 + shift))) >> (15 + shift));
        k = k < 0 ? 0 : (k > 32768 ? 32768 : k);
        vg_i32 rst = (vg_i32)(((k * o) + 16384) >> 15);
        const float rst_f = ((float)k / 32768) * ((float)o / 64);
        if (angle_flag && (rst_f > 0.)) {
            const double x = (double)rst * egl;
            rst = (vg_i32)(x < (double)t ? x : (double)t);
        }
        if (angle_flag && (rst_f < 0.)) {
            const double x = (double)rst * egl;
            rst = (vg_i32)(x > (double)t ? x : (double)t);
        }
        r = rst;
        av = wsub(t, rst);
    }
}

template <typename T, bool S0>
VG_INLINE void adm_dwt_impl(const T *__restrict__ ref, const T *__restrict__ dis, const AdmArgs &a,
                            vg_i32 *__restrict__ next_ref, vg_i32 *__restrict__ next_dis,
                            vg_i32 *__restrict__ rbuf, const vg_i32 *__restrict__ div_lookup,
                            vg_u64 *__restrict__ den_rows) {
    __shared__ vg_u64 red[VG_BLOCK];
    const int t = vg_tid();
    const int j = (int)blockIdx.x * ADM_TW + t % ADM_TW;
    const int i = (int)blockIdx.y * ADM_TH + t / ADM_TW;
    const bool in = i < a.bh && j < a.bw;
    vg_u64 den_h = 0, den_v = 0, den_d = 0;
    if (in) {
        int yi[4], xi[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            yi[k] = adm_dwt_ind(2 * i - 1 + k, a.h);
            xi[k] = adm_dwt_ind(2 * j - 1 + k, a.w);
        }
        vg_i32 ra, rv, rh, rd, da, dv, dh, dd;
        adm_dwt_px<T, S0>(ref, a, yi, xi, ra, rv, rh, rd);
        adm_dwt_px<T, S0>(dis, a, yi, xi, da, dv, dh, dd);
        const size_t plane = (size_t)a.bw * (size_t)a.bh;
        const size_t p = (size_t)i * (size_t)a.bw + (size_t)j;
        if (next_ref) {
            next_ref[p] = ra;
            next_dis[p] = da;
        }

        // adm_decouple / adm_decouple_s123: o = reference, t = distorted.
        const vg_i64 ot_dp = (vg_i64)rh * dh + (vg_i64)rv * dv;
        const vg_i64 o_mag_sq = (vg_i64)rh * rh + (vg_i64)rv * rv;
        const vg_i64 t_mag_sq = (vg_i64)dh * dh + (vg_i64)dv * dv;
        const double ot = (double)(float)ot_dp / 4096.0;
        const bool angle_flag =
            (ot >= (double)0.0f) &&
            (ot * ot >= (double)a.cos1deg_sq * ((double)(float)o_mag_sq / 4096.0) *
                            ((double)(float)t_mag_sq / 4096.0));
        vg_i32 r_h, r_v, r_d, a_h, a_v, a_d;
        adm_decouple_one<S0>(rh, dh, angle_flag, a.egl, div_lookup, r_h, a_h);
        adm_decouple_one<S0>(rv, dv, angle_flag, a.egl, div_lookup, r_v, a_v);
        adm_decouple_one<S0>(rd, dd, angle_flag, a.egl, div_lookup, r_d, a_d);
        rbuf[0 * plane + p] = r_h;
        rbuf[1 * plane + p] = r_v;
        rbuf[2 * plane + p] = r_d;
        rbuf[3 * plane + p] = a_h;
        rbuf[4 * plane + p] = a_v;
        rbuf[5 * plane + p] = a_d;

        // Denominator (adm_csf_den_scale / adm_csf_den_s123) on the reference bands.
        if (i >= a.top && i < a.bottom && j >= a.left && j < a.right) {
            if (S0) {
                const vg_u64 uh = (vg_u16)cabs(rh), uv = (vg_u16)cabs(rv), ud = (vg_u16)cabs(rd);
                den_h = uh * uh * uh;
                den_v = uv * uv * uv;
                den_d = ud * ud * ud;
            } else {
                const vg_u64 uh = (vg_u32)cabs(rh), uv = (vg_u32)cabs(rv), ud = (vg_u32)cabs(rd);
                den_h = ((((uh * uh) + a.den_add_sq) >> a.den_shift_sq) * uh + a.den_add_cub) >> a.den_shift_cub;
                den_v = ((((uv * uv) + a.den_add_sq) >> a.den_shift_sq) * uv + a.den_add_cub) >> a.den_shift_cub;
                den_d = ((((ud * ud) + a.den_add_sq) >> a.den_shift_sq) * ud + a.den_add_cub) >> a.den_shift_cub;
            }
        }
    }
    const bool row_ok = i < a.bh && i >= a.top && i < a.bottom;
    const size_t row = (size_t)(i < a.bh ? i : 0);
    vg_row_sum_atomic(den_h, ADM_TW, red, den_rows + 0 * (size_t)a.bh + row, row_ok);
    vg_row_sum_atomic(den_v, ADM_TW, red, den_rows + 1 * (size_t)a.bh + row, row_ok);
    vg_row_sum_atomic(den_d, ADM_TW, red, den_rows + 2 * (size_t)a.bh + row, row_ok);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
adm_dwt_s0_u8(const vg_u8 *ref, const vg_u8 *dis, AdmArgs a, vg_i32 *next_ref, vg_i32 *next_dis,
              vg_i32 *rbuf, const vg_i32 *div_lookup, vg_u64 *den_rows) {
    adm_dwt_impl<vg_u8, true>(ref, dis, a, next_ref, next_dis, rbuf, div_lookup, den_rows);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
adm_dwt_s0_u16(const vg_u16 *ref, const vg_u16 *dis, AdmArgs a, vg_i32 *next_ref,
               vg_i32 *next_dis, vg_i32 *rbuf, const vg_i32 *div_lookup, vg_u64 *den_rows) {
    adm_dwt_impl<vg_u16, true>(ref, dis, a, next_ref, next_dis, rbuf, div_lookup, den_rows);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
adm_dwt_s123(const vg_i32 *ref, const vg_i32 *dis, AdmArgs a, vg_i32 *next_ref,
             vg_i32 *next_dis, vg_i32 *rbuf, const vg_i32 *div_lookup, vg_u64 *den_rows) {
    adm_dwt_impl<vg_i32, false>(ref, dis, a, next_ref, next_dis, rbuf, div_lookup, den_rows);
}

// CSF of one band value: dst (the CSF-weighted value), flt (its |.|/30 threshold term) and
// the centre term (|.|/15) of the CM threshold. Scale 0: adm_csf and ADM_CM_THRESH_S_*;
// scales 1..3: i4_adm_csf and I4_ADM_CM_THRESH_S_*, whose rounding constant
// (int32_t)(1u << 31) is -2^31 in libvmaf (kept: it is what libvmaf computes).
template <bool S0>
VG_INLINE void adm_csf_one(vg_i32 v, int theta, const AdmArgs &a, vg_i32 &flt, vg_i32 &centre) {
    if (S0) {
        const int sh = theta == 2 ? 17 : 15;
        const vg_i32 add = theta == 2 ? 65535 : 16384;
        const vg_i32 dst = (vg_i16)(((vg_i32)a.rf[theta] * v + add) >> sh);
        flt = (vg_i16)((4369 * cabs(dst) + 2048) >> 12);
        centre = (vg_i16)((8738 * cabs(dst) + 2048) >> 12);
    } else {
        const vg_i32 dst = (vg_i32)((((vg_i64)a.rf[theta] * (vg_i64)v) + (1 << 27)) >> 28);
        const vg_i64 neg = -2147483648LL;
        flt = (vg_i32)((((vg_i64)143165577 * (vg_i64)cabs(dst)) + neg) >> 32);
        centre = (vg_i32)((((vg_i64)286331153 * (vg_i64)cabs(dst)) + neg) >> 32);
    }
}

// ADM_CM_ACCUM_ROUND / I4_ADM_CM_ACCUM_ROUND for one orientation.
template <bool S0>
VG_INLINE vg_i64 adm_cm_term(vg_i32 band, vg_i32 thr, int theta, const AdmArgs &a) {
    vg_i32 x;
    if (S0) {
        x = wmul(band, (vg_i32)a.rf[theta]);
    } else {
        x = (vg_i32)((((vg_i64)band * (vg_i64)a.rf[theta]) + (1 << 27)) >> 28);
    }
    x = wsub(cabs(x), wshl(thr, a.cm_sub[theta]));
    x = x < 0 ? 0 : x;
    const vg_i32 x_sq = (vg_i32)((((vg_i64)x * x) + (vg_i64)a.cm_add_sq[theta]) >> a.cm_shift_sq[theta]);
    return (((vg_i64)x_sq * x) + (vg_i64)a.cm_add_cub[theta]) >> a.cm_shift_cub[theta];
}

// CM neighbour index: -1 -> 1, n -> n - 1 (the ADM_CM_THRESH_S_* edge cases), clamped.
VG_INLINE int adm_cm_ind(int v, int n) {
    if (v < 0) v = -v;
    if (v >= n) v = 2 * n - 1 - v;
    if (v < 0) v = 0;
    if (v >= n) v = n - 1;
    return v;
}

template <bool S0>
VG_INLINE void adm_cm_impl(const vg_i32 *__restrict__ rbuf, const AdmArgs &a,
                           vg_u64 *__restrict__ cm_rows) {
    constexpr int HW = ADM_TW + 2, HH = ADM_TH + 2;
    __shared__ vg_i32 f_n[HH * HW], c_n[HH * HW], f_a[HH * HW], c_a[HH * HW];
    __shared__ vg_u64 red[VG_BLOCK];
    const int t = vg_tid();
    const int j0 = a.left + (int)blockIdx.x * ADM_TW;
    const int i0 = a.top + (int)blockIdx.y * ADM_TH;
    const size_t plane = (size_t)a.bw * (size_t)a.bh;

    // Threshold terms of the tile and a one-position border, both passes: the DLM pass takes
    // its CSF from the decoupled "a" bands, the AIM pass from the "r" bands.
    for (int idx = t; idx < HH * HW; idx += VG_BLOCK) {
        const int hy = idx / HW, hx = idx - (idx / HW) * HW;
        const int bi = adm_cm_ind(i0 - 1 + hy, a.bh);
        const int bj = adm_cm_ind(j0 - 1 + hx, a.bw);
        const size_t p = (size_t)bi * (size_t)a.bw + (size_t)bj;
        vg_i32 fn = 0, cn = 0, fa = 0, ca = 0;
#pragma unroll
        for (int th = 0; th < 3; ++th) {
            vg_i32 fl, ce;
            adm_csf_one<S0>(rbuf[(size_t)(3 + th) * plane + p], th, a, fl, ce);
            fn = wadd(fn, fl);
            cn = wadd(cn, ce);
            adm_csf_one<S0>(rbuf[(size_t)th * plane + p], th, a, fl, ce);
            fa = wadd(fa, fl);
            ca = wadd(ca, ce);
        }
        f_n[idx] = fn;
        c_n[idx] = cn;
        f_a[idx] = fa;
        c_a[idx] = ca;
    }
    __syncthreads();

    const int lx = t % ADM_TW, ly = t / ADM_TW;
    const int i = i0 + ly, j = j0 + lx;
    const bool in = i < a.bottom && j < a.right;
    vg_i64 s[6] = {0, 0, 0, 0, 0, 0};
    if (in) {
        const int c = (ly + 1) * HW + (lx + 1);
        vg_i32 thr_n = c_n[c], thr_a = c_a[c];
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy) {
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx) {
                if (dy == 0 && dx == 0) continue;
                thr_n = wadd(thr_n, f_n[c + dy * HW + dx]);
                thr_a = wadd(thr_a, f_a[c + dy * HW + dx]);
            }
        }
        const size_t p = (size_t)i * (size_t)a.bw + (size_t)j;
#pragma unroll
        for (int th = 0; th < 3; ++th) {
            s[th] = adm_cm_term<S0>(rbuf[(size_t)th * plane + p], thr_n, th, a);
            s[3 + th] = adm_cm_term<S0>(rbuf[(size_t)(3 + th) * plane + p], thr_a, th, a);
        }
    }
    const bool row_ok = i < a.bottom;
    const size_t row = (size_t)(row_ok ? i : 0);
#pragma unroll
    for (int q = 0; q < 6; ++q) {
        vg_row_sum_atomic((vg_u64)s[q], ADM_TW, red, cm_rows + (size_t)q * (size_t)a.bh + row, row_ok);
    }
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
adm_cm_s0(const vg_i32 *rbuf, AdmArgs a, vg_u64 *cm_rows) {
    adm_cm_impl<true>(rbuf, a, cm_rows);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
adm_cm_s123(const vg_i32 *rbuf, AdmArgs a, vg_u64 *cm_rows) {
    adm_cm_impl<false>(rbuf, a, cm_rows);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
adm_finalize(const vg_u64 *rows, const FinalizeEntry *entries, vg_u64 *out) {
    __shared__ vg_u64 red[VG_BLOCK];
    const FinalizeEntry e = entries[blockIdx.x];
    vg_u64 sum = 0;
    for (vg_u32 r = e.begin + (vg_u32)vg_tid(); r < e.end; r += VG_BLOCK) {
        const vg_u64 v = rows[(size_t)e.src + r];
        if (e.is_signed) {
            sum += (vg_u64)(((vg_i64)v + (vg_i64)e.add) >> e.shift);
        } else {
            sum += (v + e.add) >> e.shift;
        }
    }
    const vg_u64 total = vg_block_sum(sum, red);
    if (vg_tid() == 0) out[e.dst] = total;
}
