// Integer VIF, one kernel launch per scale: libvmaf 3.2.0 libvmaf/src/feature/integer_vif.c
// (vif_statistic_8, vif_statistic_16, subsample_rd_8, subsample_rd_16), plain C path.
//
// Entry points (grid: ceil(w / VIF_TW) x ceil(h / VIF_TH) blocks of VG_BLOCK threads, 1-D):
//   vif_s0_u8 (const u8 *ref, const u8 *dis, VifArgs a, const u16 *log2_table,
//              u16 *out_ref, u16 *out_dis, u64 *acc)       scale 0, 8-bit samples
//   vif_s0_u16(const u16 *ref, const u16 *dis, ...same)    scale 0, 9..16-bit samples
//   vif_s1, vif_s2 (const u16 *ref, const u16 *dis, ...same)  scales 1 and 2
//   vif_s3 (const u16 *ref, const u16 *dis, VifArgs a, const u16 *log2_table, u64 *acc)
// ref/dis: the scale's image, a.w x a.h, compact (stride a.w). out_ref/out_dis: the next scale's
// image, (a.w / 2) x (a.h / 2), compact. acc: this scale's 4 accumulators, in the order of
// libvmaf's VifResiduals (num_log, den_log, num_non_log, den_non_log), added to atomically.
// log2_table: 65537 entries, libvmaf's log_generate() table built on the host.

#define VIF_TW 64
#define VIF_TH 16

// Must match VifArgs in src/backend/gpu/kernels.rs (layout test there).
struct VifArgs {
    vg_i32 w, h;          // this scale's size
    vg_u32 mu_round;      // vertical rounding of mu and of the subsample filter:
    vg_i32 mu_shift;      //   scale 0: 1 << (bpc - 1), bpc; scales 1..3: 32768, 16
    vg_u64 sq_round;      // vertical rounding of the squares:
    vg_i32 sq_shift;      //   scale 0: 2 * (bpc - 8) (round 0 when 0); scales 1..3: 32768, 16
    vg_i32 pad0;
    double egl;           // vif_enhn_gain_limit
};
static_assert(sizeof(VifArgs) == 40, "VifArgs layout");

// libvmaf 3.2.0 integer_vif.h: vif_filter1d_table
__constant__ vg_u16 VIF_F17[17] = {489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784,
                                   7455, 6547, 5274, 3896, 2640, 1640, 935, 489};
__constant__ vg_u16 VIF_F9[9] = {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244};
__constant__ vg_u16 VIF_F5[5] = {3571, 16004, 26386, 16004, 3571};
__constant__ vg_u16 VIF_F3[3] = {10904, 43728, 10904};

template <int FW> VG_INLINE vg_u32 vif_coef(int k) {
    if (FW == 17) return VIF_F17[k];
    if (FW == 9) return VIF_F9[k];
    if (FW == 5) return VIF_F5[k];
    return VIF_F3[k];
}

// libvmaf 3.2.0 integer_vif.h: log2_32 / log2_64 (arguments are at least 2^17 here).
VG_INLINE vg_i32 vif_log2_32(const vg_u16 *__restrict__ t, vg_u32 temp) {
    const int k = 16 - vg_clz32(temp);
    return (vg_i32)t[(temp >> k) & 0xffff] + 2048 * k;
}
VG_INLINE vg_i32 vif_log2_64(const vg_u16 *__restrict__ t, vg_u64 temp) {
    const int k = 48 - vg_clz64(temp);
    return (vg_i32)t[(vg_u32)((temp >> k) & 0xffff)] + 2048 * k;
}

// FW: this scale's filter; FW2: the next scale's filter (0 at scale 3: no subsample).
// SQ32: the 8-bit scale-0 path (vif_statistic_8), whose square sums fit 32 bits unshifted.
template <typename T, int FW, int FW2, bool SQ32>
VG_INLINE void vif_impl(const T *__restrict__ ref, const T *__restrict__ dis, const VifArgs &a,
                        const vg_u16 *__restrict__ lt, vg_u16 *__restrict__ out_ref,
                        vg_u16 *__restrict__ out_dis, vg_u64 *__restrict__ acc) {
    constexpr int R = FW / 2;
    constexpr int IW = VIF_TW + 2 * R;
    constexpr int IH = VIF_TH + 2 * R;
    __shared__ vg_u16 s_r[IH * IW];
    __shared__ vg_u16 s_d[IH * IW];
    __shared__ vg_u32 v_mu1[VIF_TH * IW];
    __shared__ vg_u32 v_mu2[VIF_TH * IW];
    __shared__ vg_u32 v_xx[VIF_TH * IW];
    __shared__ vg_u32 v_yy[VIF_TH * IW];
    __shared__ vg_u32 v_xy[VIF_TH * IW];
    __shared__ vg_u64 red[VG_BLOCK];

    const int t = vg_tid();
    const int x0 = (int)blockIdx.x * VIF_TW;
    const int y0 = (int)blockIdx.y * VIF_TH;
    const int w = a.w, h = a.h;

    // Input tile with R mirrored rows/columns around it (libvmaf pads rows with
    // pad_top_and_bottom and columns with PADDING_SQ_DATA: both reflect without repeating the
    // edge). Indices stay inside the image: every load is in bounds.
    for (int idx = t; idx < IH * IW; idx += VG_BLOCK) {
        const int ly = idx / IW, lx = idx - (idx / IW) * IW;
        const int gy = vg_mirror(y0 - R + ly, h);
        const int gx = vg_mirror(x0 - R + lx, w);
        s_r[idx] = (vg_u16)ref[(size_t)gy * (size_t)w + (size_t)gx];
        s_d[idx] = (vg_u16)dis[(size_t)gy * (size_t)w + (size_t)gx];
    }
    __syncthreads();

    // Vertical pass for the tile's rows, over the tile's columns plus R on each side.
    for (int idx = t; idx < VIF_TH * IW; idx += VG_BLOCK) {
        const int ly = idx / IW, lx = idx - (idx / IW) * IW;
        vg_u32 m1 = 0, m2 = 0;
        if (SQ32) {
            // vif_statistic_8: 65536 * 255^2 < 2^32, so 32-bit sums, no shift.
            vg_u32 xx = 0, yy = 0, xy = 0;
#pragma unroll
            for (int k = 0; k < FW; ++k) {
                const vg_u32 c = vif_coef<FW>(k);
                const vg_u32 r = s_r[(ly + k) * IW + lx];
                const vg_u32 d = s_d[(ly + k) * IW + lx];
                const vg_u32 cr = c * r, cd = c * d;
                m1 += cr;
                m2 += cd;
                xx += cr * r;
                yy += cd * d;
                xy += cr * d;
            }
            v_xx[idx] = xx;
            v_yy[idx] = yy;
            v_xy[idx] = xy;
        } else {
            // vif_statistic_16: 32-bit mu sums (<= 65536 * 65535 + 2^15 < 2^32), 64-bit square
            // sums (<= 65536 * 65535^2 < 2^48), rounded down to 32 bits.
            vg_u64 xx = 0, yy = 0, xy = 0;
#pragma unroll
            for (int k = 0; k < FW; ++k) {
                const vg_u32 c = vif_coef<FW>(k);
                const vg_u32 r = s_r[(ly + k) * IW + lx];
                const vg_u32 d = s_d[(ly + k) * IW + lx];
                const vg_u32 cr = c * r, cd = c * d;
                m1 += cr;
                m2 += cd;
                xx += (vg_u64)cr * r;
                yy += (vg_u64)cd * d;
                xy += (vg_u64)cr * d;
            }
            v_xx[idx] = (vg_u32)((xx + a.sq_round) >> a.sq_shift);
            v_yy[idx] = (vg_u32)((yy + a.sq_round) >> a.sq_shift);
            v_xy[idx] = (vg_u32)((xy + a.sq_round) >> a.sq_shift);
        }
        v_mu1[idx] = (vg_u16)((m1 + a.mu_round) >> a.mu_shift);
        v_mu2[idx] = (vg_u16)((m2 + a.mu_round) >> a.mu_shift);
    }
    __syncthreads();

    // Horizontal pass and the per-pixel statistic.
    vg_i64 num_log = 0, den_log = 0, num_non_log = 0, den_non_log = 0;
    const vg_i32 sigma_nsq = 65536 << 1;
    for (int p = t; p < VIF_TW * VIF_TH; p += VG_BLOCK) {
        const int ly = p / VIF_TW, lx = p - (p / VIF_TW) * VIF_TW;
        if (x0 + lx >= w || y0 + ly >= h) continue;
        vg_u32 mu1 = 0, mu2 = 0;
        vg_u64 sxx = 0, syy = 0, sxy = 0;
#pragma unroll
        for (int k = 0; k < FW; ++k) {
            const vg_u32 c = vif_coef<FW>(k);
            const int i = ly * IW + lx + k;
            mu1 += c * v_mu1[i];
            mu2 += c * v_mu2[i];
            sxx += (vg_u64)c * v_xx[i];
            syy += (vg_u64)c * v_yy[i];
            sxy += (vg_u64)c * v_xy[i];
        }
        const vg_u32 mu1_sq = (vg_u32)(((vg_u64)mu1 * mu1 + 2147483648ULL) >> 32);
        const vg_u32 mu2_sq = (vg_u32)(((vg_u64)mu2 * mu2 + 2147483648ULL) >> 32);
        const vg_u32 mu1_mu2 = (vg_u32)(((vg_u64)mu1 * mu2 + 2147483648ULL) >> 32);
        const vg_u32 xx_filt = (vg_u32)((sxx + 32768) >> 16);
        const vg_u32 yy_filt = (vg_u32)((syy + 32768) >> 16);
        const vg_u32 xy_filt = (vg_u32)((sxy + 32768) >> 16);
        const vg_i32 sigma1_sq = (vg_i32)(xx_filt - mu1_sq);
        vg_i32 sigma2_sq = (vg_i32)(yy_filt - mu2_sq);
        const vg_i32 sigma12 = (vg_i32)(xy_filt - mu1_mu2);
        if (sigma2_sq < 0) sigma2_sq = 0;
        if (sigma1_sq >= sigma_nsq) {
            den_log += vif_log2_32(lt, (vg_u32)(sigma_nsq + sigma1_sq)) - 2048 * 17;
            if (sigma12 > 0 && sigma2_sq > 0) {
                // Double arithmetic exactly as the C code (no contraction: fmad is off).
                const double eps = 65536 * 1.0e-10;
                double g = (double)sigma12 / ((double)sigma1_sq + eps);
                // Conversion saturates (PTX cvt.rzi), as Rust's `as`; only a negative overflow
                // is possible, and it is clamped to 0 just below either way.
                vg_i32 sv_sq = (vg_i32)((double)sigma2_sq - g * (double)sigma12);
                if (sv_sq < 0) sv_sq = 0;
                g = g < a.egl ? g : a.egl;
                const vg_u32 numer1 = (vg_u32)(sv_sq + sigma_nsq);
                const vg_i64 numer1_tmp = (vg_i64)(g * g * (double)sigma1_sq) + (vg_i64)numer1;
                num_log += vif_log2_64(lt, (vg_u64)numer1_tmp) - vif_log2_64(lt, (vg_u64)numer1);
            }
        } else {
            num_non_log += sigma2_sq;
            den_non_log += 1;
        }
    }

    // Subsample for the next scale: filter FW2 over this scale's image at even rows and columns
    // (libvmaf computes every position and decimates; only the kept ones are computed here).
    if (FW2 > 0) {
        constexpr int R2 = FW2 / 2;
        constexpr int SW = VIF_TW + 2 * R2;
        __shared__ vg_u32 u_r[(VIF_TH / 2) * SW];
        __shared__ vg_u32 u_d[(VIF_TH / 2) * SW];
        for (int idx = t; idx < (VIF_TH / 2) * SW; idx += VG_BLOCK) {
            const int lr = idx / SW, c = idx - (idx / SW) * SW;
            vg_u32 sr = 0, sd = 0;
#pragma unroll
            for (int k = 0; k < FW2; ++k) {
                const vg_u32 f = vif_coef<FW2>(k);
                const int i = (R + 2 * lr - R2 + k) * IW + (R - R2) + c;
                sr += f * s_r[i];
                sd += f * s_d[i];
            }
            u_r[idx] = (vg_u16)((sr + a.mu_round) >> a.mu_shift);
            u_d[idx] = (vg_u16)((sd + a.mu_round) >> a.mu_shift);
        }
        __syncthreads();
        const int ow = w / 2, oh = h / 2;
        for (int o = t; o < (VIF_TH / 2) * (VIF_TW / 2); o += VG_BLOCK) {
            const int orr = o / (VIF_TW / 2), oc = o - (o / (VIF_TW / 2)) * (VIF_TW / 2);
            const int oy = y0 / 2 + orr, ox = x0 / 2 + oc;
            if (oy < oh && ox < ow) {
                vg_u32 sr = 0, sd = 0;
#pragma unroll
                for (int k = 0; k < FW2; ++k) {
                    const vg_u32 f = vif_coef<FW2>(k);
                    sr += f * u_r[orr * SW + 2 * oc + k];
                    sd += f * u_d[orr * SW + 2 * oc + k];
                }
                out_ref[(size_t)oy * (size_t)ow + (size_t)ox] = (vg_u16)((sr + 32768) >> 16);
                out_dis[(size_t)oy * (size_t)ow + (size_t)ox] = (vg_u16)((sd + 32768) >> 16);
            }
        }
    }

    vg_block_sum_atomic((vg_u64)num_log, red, acc + 0);
    vg_block_sum_atomic((vg_u64)den_log, red, acc + 1);
    vg_block_sum_atomic((vg_u64)num_non_log, red, acc + 2);
    vg_block_sum_atomic((vg_u64)den_non_log, red, acc + 3);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
vif_s0_u8(const vg_u8 *ref, const vg_u8 *dis, VifArgs a, const vg_u16 *log2_table,
          vg_u16 *out_ref, vg_u16 *out_dis, vg_u64 *acc) {
    vif_impl<vg_u8, 17, 9, true>(ref, dis, a, log2_table, out_ref, out_dis, acc);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
vif_s0_u16(const vg_u16 *ref, const vg_u16 *dis, VifArgs a, const vg_u16 *log2_table,
           vg_u16 *out_ref, vg_u16 *out_dis, vg_u64 *acc) {
    vif_impl<vg_u16, 17, 9, false>(ref, dis, a, log2_table, out_ref, out_dis, acc);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
vif_s1(const vg_u16 *ref, const vg_u16 *dis, VifArgs a, const vg_u16 *log2_table,
       vg_u16 *out_ref, vg_u16 *out_dis, vg_u64 *acc) {
    vif_impl<vg_u16, 9, 5, false>(ref, dis, a, log2_table, out_ref, out_dis, acc);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
vif_s2(const vg_u16 *ref, const vg_u16 *dis, VifArgs a, const vg_u16 *log2_table,
       vg_u16 *out_ref, vg_u16 *out_dis, vg_u64 *acc) {
    vif_impl<vg_u16, 5, 3, false>(ref, dis, a, log2_table, out_ref, out_dis, acc);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
vif_s3(const vg_u16 *ref, const vg_u16 *dis, VifArgs a, const vg_u16 *log2_table, vg_u64 *acc) {
    vif_impl<vg_u16, 3, 0, false>(ref, dis, a, log2_table, (vg_u16 *)0, (vg_u16 *)0, acc);
}
