// PSNR-HVS: the per-block work of libvmaf 3.2.0
// libvmaf/src/feature/third_party/xiph/psnr_hvs.c (calc_psnrhvs, od_bin_fdct8x8), as ported in
// src/features/psnr_hvs.rs (block_terms).
//
// One thread per 8x8 block (blocks every 7 samples while the block fits): the integer Daala DCT
// of both blocks (32-bit int, which no intermediate leaves for samples of up to 12 bits: see the
// i64 test in psnr_hvs.rs), the float block statistics and masking in the C code's order, and
// the block's 64 float terms. The plane's score is a sequential float sum over the blocks in
// raster order; the host adds the terms read back from here in that order
// (features::psnr_hvs::PlaneSum), so no floating-point sum is done here.
//
//   psnr_hvs_blocks(const u16 *r, const u16 *d, int w, int h, const float *csf,
//                   const float *mask, float *terms)
//       grid ceil(bx * by / VG_BLOCK), bx = ceil((w - 7) / 7), by = ceil((h - 7) / 7), w, h >= 8;
//       r and d are w x h, compact; csf and mask are the plane's 8x8 tables (row-major, uploaded
//       by the host: features::psnr_hvs::csf / mask_table); terms receives 64 floats per block,
//       blocks in raster order.

// OD_DCT_RSHIFT(a, 1) for 32-bit a: (a + (a < 0)) >> 1, as ((u32)a >> 31) + a.
VG_INLINE vg_i32 hvs_half(vg_i32 a) { return (vg_i32)(((vg_u32)a >> 31) + (vg_u32)a) >> 1; }
VG_INLINE vg_i32 hvs_mr(vg_i32 a, vg_i32 c, vg_i32 r, int s) { return (a * c + r) >> s; }

// od_bin_fdct8: reads x[0], x[st], ..., x[7 st], writes y[0..8].
VG_INLINE void hvs_fdct8(vg_i32 *y, const vg_i32 *x, int st) {
    vg_i32 t0 = x[0], t4 = x[st], t2 = x[2 * st], t6 = x[3 * st];
    vg_i32 t7 = x[4 * st], t3 = x[5 * st], t5 = x[6 * st], t1 = x[7 * st];
    t1 = t0 - t1;
    const vg_i32 t1h = hvs_half(t1);
    t0 -= t1h;
    t4 += t5;
    const vg_i32 t4h = hvs_half(t4);
    t5 -= t4h;
    t3 = t2 - t3;
    t2 -= hvs_half(t3);
    t6 += t7;
    const vg_i32 t6h = hvs_half(t6);
    t7 = t6h - t7;
    t0 += t6h;
    t6 = t0 - t6;
    t2 = t4h - t2;
    t4 = t2 - t4;
    t0 -= hvs_mr(t4, 13573, 16384, 15);
    t4 += hvs_mr(t0, 11585, 8192, 14);
    t0 -= hvs_mr(t4, 13573, 16384, 15);
    t6 -= hvs_mr(t2, 21895, 16384, 15);
    t2 += hvs_mr(t6, 15137, 8192, 14);
    t6 -= hvs_mr(t2, 21895, 16384, 15);
    t3 += hvs_mr(t5, 19195, 16384, 15);
    t5 += hvs_mr(t3, 11585, 8192, 14);
    t3 -= hvs_mr(t5, 7489, 4096, 13);
    t7 = hvs_half(t5) - t7;
    t5 -= t7;
    t3 = t1h - t3;
    t1 -= t3;
    t7 += hvs_mr(t1, 3227, 16384, 15);
    t1 -= hvs_mr(t7, 6393, 16384, 15);
    t7 += hvs_mr(t1, 3227, 16384, 15);
    t5 += hvs_mr(t3, 2485, 4096, 13);
    t3 -= hvs_mr(t5, 18205, 16384, 15);
    t5 += hvs_mr(t3, 2485, 4096, 13);
    y[0] = t0; y[1] = t1; y[2] = t2; y[3] = t3;
    y[4] = t4; y[5] = t5; y[6] = t6; y[7] = t7;
}

// od_bin_fdct8x8, in place: columns into a transposed temporary, then its columns.
VG_INLINE void hvs_fdct8x8(vg_i32 *b) {
    vg_i32 z[64];
    for (int i = 0; i < 8; ++i) hvs_fdct8(z + 8 * i, b + i, 8);
    for (int i = 0; i < 8; ++i) hvs_fdct8(b + 8 * i, z + i, 8);
}

// The ratio of the summed 4x4 sub-block variances to the block's variance (0 stays 0).
VG_INLINE float hvs_variance_ratio(const vg_i32 *b) {
    float gmean = 0.0f;
    float means[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            const int sub = ((i & 12) >> 2) + ((j & 12) >> 1);
            const float v = (float)b[i * 8 + j];
            gmean += v;
            means[sub] += v;
        }
    gmean /= 64.0f;
    for (int k = 0; k < 4; ++k) means[k] /= 16.0f;
    float gvar = 0.0f;
    float vars[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            const int sub = ((i & 12) >> 2) + ((j & 12) >> 1);
            const float v = (float)b[i * 8 + j];
            gvar += (v - gmean) * (v - gmean);
            vars[sub] += (v - means[sub]) * (v - means[sub]);
        }
    gvar *= 1.0f / 63.0f * 64.0f;
    for (int k = 0; k < 4; ++k) vars[k] *= 1.0f / 15.0f * 16.0f;
    if (gvar > 0.0f) gvar = (vars[0] + vars[1] + vars[2] + vars[3]) / gvar;
    return gvar;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
psnr_hvs_blocks(const vg_u16 *__restrict__ r, const vg_u16 *__restrict__ d, int w, int h,
                const float *__restrict__ csf, const float *__restrict__ mask,
                float *__restrict__ terms) {
    const int bx = (w - 7 + 6) / 7, by = (h - 7 + 6) / 7;
    const vg_i64 k = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (k >= (vg_i64)bx * by) return;
    const int x0 = (int)(k % bx) * 7, y0 = (int)(k / bx) * 7;
    vg_i32 ds[64], dd[64];
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            const vg_i64 o = (vg_i64)(y0 + i) * w + x0 + j;
            ds[i * 8 + j] = (vg_i32)r[o];
            dd[i * 8 + j] = (vg_i32)d[o];
        }
    const float s_gvar = hvs_variance_ratio(ds);
    const float d_gvar = hvs_variance_ratio(dd);
    hvs_fdct8x8(ds);
    hvs_fdct8x8(dd);
    // dct * dct: an int product below 2^31 up to 12 bits, then times the float mask.
    float s_mask = 0.0f, d_mask = 0.0f;
    for (int i = 0; i < 8; ++i)
        for (int j = (i == 0 ? 1 : 0); j < 8; ++j)
            s_mask += (float)((vg_i64)ds[i * 8 + j] * ds[i * 8 + j]) * mask[i * 8 + j];
    for (int i = 0; i < 8; ++i)
        for (int j = (i == 0 ? 1 : 0); j < 8; ++j)
            d_mask += (float)((vg_i64)dd[i * 8 + j] * dd[i * 8 + j]) * mask[i * 8 + j];
    s_mask = (float)(sqrt((double)(s_mask * s_gvar)) / 32.0);
    d_mask = (float)(sqrt((double)(d_mask * d_gvar)) / 32.0);
    if (d_mask > s_mask) s_mask = d_mask;
    float *out = terms + k * 64;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            vg_i64 e = (vg_i64)ds[i * 8 + j] - (vg_i64)dd[i * 8 + j];
            float err = (float)(e < 0 ? -e : e);
            if (i != 0 || j != 0) {
                const float t = s_mask / mask[i * 8 + j];
                err = err < t ? 0.0f : err - t;
            }
            const float cs = csf[i * 8 + j];
            out[i * 8 + j] = (err * cs) * (err * cs);
        }
}
