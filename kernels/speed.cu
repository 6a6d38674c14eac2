// SpEED chroma and temporal (libvmaf 3.2.0 libvmaf/src/feature/speed.c, with vif_tools.c and
// picture_copy.c), as ported in src/features/speed: the statistics of one side (a chroma
// plane, or a luma plane's temporal difference), which the host turns into the score
// (eigenvalues, QR, entropies: features::speed::SpeedChroma::finish, SpeedTemporal::finish). Every float and double operation is the CPU's, in
// the CPU's order, written with explicit IEEE round-to-nearest operations (__fmul_rn,
// __fadd_rn, ...: nothing can be contracted into an FMA whatever the compiler's options).
// The host computes every table (prescale indices and weights, filter taps, mirrored rows and
// columns) exactly as the CPU does, and checks every size; the kernels index only inside the
// sizes passed to them (the tables hold indices inside the images, checked on the host).
//
//   speed_load(const u16 *src, int n, int bpc, float *dst)
//       grid ceil(n / VG_BLOCK): dst[i] = src[i] - 128 (8 bits), src[i] / 4 - 128 (10),
//       / 16 (12), / 256 (16), for i < n (picture_copy with offset -128).
//   speed_load_diff(const u16 *prev, const u16 *cur, int n, int bpc, float *dst)
//       grid ceil(n / VG_BLOCK): dst[i] = the float of prev[i] minus the float of cur[i], each
//       converted as speed_load converts it, for i < n (speed_temporal: picture_copy of both
//       frames, then subtract_image, one float subtraction).
//   speed_prescale(const float *src, int sw, int sh, int dw, int dh, int method, int k,
//                  const int *col_idx, const float *col_w, const int *row_idx,
//                  const float *row_w, float *dst)
//       grid ceil(dw * dh / VG_BLOCK): the dw x dh prescaled image of the sw x sh image (both
//       compact). method 0 nearest (k 1), 1 bilinear (k 2: weights dx, dy), 2 bicubic (k 4),
//       3 lanczos4 (k 9); per output column k indices (< sw) and weights, per row k indices
//       (< sh) and weights.
//   speed_filter_v(const float *src, int stride, int fw, const float *taps, int out_h,
//                  const int *rows, int nn, const int *needed, float *vert)
//       grid ceil(out_h * nn / VG_BLOCK): vert[a * nn + k] = sum over t of
//       taps[t] * src[rows[a * fw + t] * stride + needed[k]], from 0, in tap order (the
//       vertical pass of vif_filter1d_s at the rows dec16 keeps, the columns its horizontal
//       taps read).
//   speed_filter_h(const float *vert, int nn, int fw, const float *taps, int out_w, int out_h,
//                  const int *cols, float *dst)
//       grid ceil(out_w * out_h / VG_BLOCK): dst[a * out_w + b] = sum over t of
//       taps[t] * vert[a * nn + cols[b * fw + t]] (the horizontal pass at the kept columns).
//   speed_local_mean(const float *src, int w, int h, int fw, const float *taps, float *dst)
//       grid ceil(w * h / VG_BLOCK): dst = src - the separable filter of src (vertical pass,
//       then horizontal, mirrored -i / 2n - i - 2: the host checks fw / 2 < w, h).
//   speed_means(const float *img, int stride, int sw, int sh, int side_elems, float *means)
//       grid (1, sides): for side s = blockIdx.y, the image at img + s * side_elems;
//       means[s * 25 + k] (k < 25) = the float sum of the sw x sh sub-image at (k / 5, k % 5),
//       row by row, divided by sw * sh (as float).
//   speed_cov(const float *img, int stride, int sw, int sh, int side_elems, const float *means,
//             float *cov)
//       grid (ceil(325 / VG_BLOCK), sides): for side s = blockIdx.y (image at
//       img + s * side_elems, means at means + s * 25), for x < 25, y <= x, the double sum
//       over the sub-images of (img_x - mean_x) * (img_y - mean_y), row by row, divided by
//       sw * sh and rounded to float, into cov[s * 625 + x * 25 + y] and [s * 625 + y * 25 + x].
//   Each sum is one thread's chain in the CPU's order; the loads of SPEED_UNROLL terms are
//   issued before their additions (the order of the additions is unchanged), so the chain
//   waits on the additions, not on each load.
//
// There is no integer accumulator here: everything is float or double, as in the C.

#define SPEED_BLOCK 5
#define SPEED_EIB 25
#define SPEED_PAIRS 325

VG_INLINE float speed_fma_free(float acc, float f, float x) {
    return __fadd_rn(acc, __fmul_rn(f, x));
}

// picture_copy of one sample with offset -128: s - 128 at 8 bits, s / scaler - 128 above.
VG_INLINE float speed_sample(vg_u16 s, int bpc) {
    const float x = (float)s;
    if (bpc == 8) return __fadd_rn(x, -128.0f);
    const float scaler = bpc == 10 ? 4.0f : bpc == 12 ? 16.0f : bpc == 16 ? 256.0f : 1.0f;
    return __fadd_rn(__fdiv_rn(x, scaler), -128.0f);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_load(const vg_u16 *__restrict__ src, int n, int bpc, float *__restrict__ dst) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= n) return;
    dst[i] = speed_sample(src[i], bpc);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_load_diff(const vg_u16 *__restrict__ prev, const vg_u16 *__restrict__ cur, int n, int bpc,
                float *__restrict__ dst) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= n) return;
    dst[i] = __fadd_rn(speed_sample(prev[i], bpc), -speed_sample(cur[i], bpc));
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_prescale(const float *__restrict__ src, int sw, int sh, int dw, int dh, int method, int k,
               const int *__restrict__ col_idx, const float *__restrict__ col_w,
               const int *__restrict__ row_idx, const float *__restrict__ row_w,
               float *__restrict__ dst) {
    const vg_i64 o = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (o >= (vg_i64)dw * dh) return;
    const int y = (int)(o / dw), x = (int)(o % dw);
    (void)sh;
    const int *xi = col_idx + (vg_i64)x * k;
    const int *yi = row_idx + (vg_i64)y * k;
    float out;
    if (method == 0) {
        out = src[(vg_i64)yi[0] * sw + xi[0]];
    } else if (method == 1) {
        // (1-dy)*(1-dx)*r1[x1] + (1-dy)*dx*r1[x2] + dy*(1-dx)*r2[x1] + dy*dx*r2[x2], left to
        // right.
        const float dx = col_w[x], dy = row_w[y];
        const float *r1 = src + (vg_i64)yi[0] * sw;
        const float *r2 = src + (vg_i64)yi[1] * sw;
        const float ex = __fadd_rn(1.0f, -dx), ey = __fadd_rn(1.0f, -dy);
        float v = __fmul_rn(__fmul_rn(ey, ex), r1[xi[0]]);
        v = __fadd_rn(v, __fmul_rn(__fmul_rn(ey, dx), r1[xi[1]]));
        v = __fadd_rn(v, __fmul_rn(__fmul_rn(dy, ex), r2[xi[0]]));
        v = __fadd_rn(v, __fmul_rn(__fmul_rn(dy, dx), r2[xi[1]]));
        out = v;
    } else if (method == 2) {
        const float *wx = col_w + (vg_i64)x * k;
        const float *wy = row_w + (vg_i64)y * k;
        float interp = 0.0f;
        for (int j = 0; j < 4; ++j) {
            for (int i = 0; i < 4; ++i) {
                const float weight = __fmul_rn(wx[i], wy[j]);
                interp = __fadd_rn(interp, __fmul_rn(src[(vg_i64)yi[j] * sw + xi[i]], weight));
            }
        }
        out = interp;
    } else {
        const float *wx = col_w + (vg_i64)x * k;
        const float *wy = row_w + (vg_i64)y * k;
        float value = 0.0f, weight_sum = 0.0f;
        for (int iy = 0; iy < 9; ++iy) {
            for (int ix = 0; ix < 9; ++ix) {
                const float weight = __fmul_rn(wx[ix], wy[iy]);
                weight_sum = __fadd_rn(weight_sum, weight);
                value = __fadd_rn(value, __fmul_rn(src[(vg_i64)yi[iy] * sw + xi[ix]], weight));
            }
        }
        out = __fdiv_rn(value, weight_sum);
    }
    dst[o] = out;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_filter_v(const float *__restrict__ src, int stride, int fw, const float *__restrict__ taps,
               int out_h, const int *__restrict__ rows, int nn, const int *__restrict__ needed,
               float *__restrict__ vert) {
    const vg_i64 o = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (o >= (vg_i64)out_h * nn) return;
    const int a = (int)(o / nn), c = needed[o % nn];
    const int *r = rows + (vg_i64)a * fw;
    float accum = 0.0f;
    for (int t = 0; t < fw; ++t) accum = speed_fma_free(accum, taps[t], src[(vg_i64)r[t] * stride + c]);
    vert[o] = accum;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_filter_h(const float *__restrict__ vert, int nn, int fw, const float *__restrict__ taps,
               int out_w, int out_h, const int *__restrict__ cols, float *__restrict__ dst) {
    const vg_i64 o = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (o >= (vg_i64)out_w * out_h) return;
    const int a = (int)(o / out_w), b = (int)(o % out_w);
    const int *cb = cols + (vg_i64)b * fw;
    const float *v = vert + (vg_i64)a * nn;
    float accum = 0.0f;
    for (int t = 0; t < fw; ++t) accum = speed_fma_free(accum, taps[t], v[cb[t]]);
    dst[o] = accum;
}

// vif_filter1d_s's mirror: -i below 0, 2n - i - 2 from n on (the host checks that one
// reflection stays inside).
VG_INLINE int speed_mirror(int i, int n) {
    if (i < 0) return -i;
    if (i >= n) return 2 * n - i - 2;
    return i;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_local_mean(const float *__restrict__ src, int w, int h, int fw,
                 const float *__restrict__ taps, float *__restrict__ dst) {
    const vg_i64 o = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (o >= (vg_i64)w * h) return;
    const int i = (int)(o / w), j = (int)(o % w);
    const int half = fw / 2;
    float blurred = 0.0f;
    for (int t = 0; t < fw; ++t) {
        // The vertical pass at column jj (the CPU's tmp[jj]), then its horizontal tap.
        const int jj = speed_mirror(j - half + t, w);
        float tmp = 0.0f;
        for (int s = 0; s < fw; ++s) {
            const int ii = speed_mirror(i - half + s, h);
            tmp = speed_fma_free(tmp, taps[s], src[(vg_i64)ii * w + jj]);
        }
        blurred = speed_fma_free(blurred, taps[t], tmp);
    }
    dst[o] = __fadd_rn(src[o], -blurred);
}

#define SPEED_UNROLL 16

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_means(const float *__restrict__ img, int stride, int sw, int sh, int side_elems,
            float *__restrict__ means) {
    const int k = vg_tid();
    if (blockIdx.x != 0 || k >= SPEED_EIB) return;
    img += (vg_i64)blockIdx.y * side_elems;
    const int r0 = k / SPEED_BLOCK, c0 = k % SPEED_BLOCK;
    float sum = 0.0f;
    for (int i = 0; i < sh; ++i) {
        const float *row = img + (vg_i64)(r0 + i) * stride + c0;
        int j = 0;
        for (; j + SPEED_UNROLL <= sw; j += SPEED_UNROLL) {
            float v[SPEED_UNROLL];
#pragma unroll
            for (int u = 0; u < SPEED_UNROLL; ++u) v[u] = row[j + u];
#pragma unroll
            for (int u = 0; u < SPEED_UNROLL; ++u) sum = __fadd_rn(sum, v[u]);
        }
        for (; j < sw; ++j) sum = __fadd_rn(sum, row[j]);
    }
    means[blockIdx.y * SPEED_EIB + k] = __fdiv_rn(sum, (float)(sw * sh));
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
speed_cov(const float *__restrict__ img, int stride, int sw, int sh, int side_elems,
          const float *__restrict__ means, float *__restrict__ cov) {
    const int p = (int)blockIdx.x * VG_BLOCK + vg_tid();
    if (p >= SPEED_PAIRS) return;
    img += (vg_i64)blockIdx.y * side_elems;
    means += blockIdx.y * SPEED_EIB;
    cov += blockIdx.y * SPEED_EIB * SPEED_EIB;
    // Pair p = x (x + 1) / 2 + y with y <= x.
    int x = 0;
    while ((x + 1) * (x + 2) / 2 <= p) ++x;
    const int y = p - x * (x + 1) / 2;
    const double mx = (double)means[x], my = (double)means[y];
    const int rx = x / SPEED_BLOCK, cx = x % SPEED_BLOCK;
    const int ry = y / SPEED_BLOCK, cy = y % SPEED_BLOCK;
    double acc = 0.0;
    for (int i = 0; i < sh; ++i) {
        const float *ax = img + (vg_i64)(rx + i) * stride + cx;
        const float *ay = img + (vg_i64)(ry + i) * stride + cy;
        int j = 0;
        for (; j + SPEED_UNROLL <= sw; j += SPEED_UNROLL) {
            float va[SPEED_UNROLL], vb[SPEED_UNROLL];
#pragma unroll
            for (int u = 0; u < SPEED_UNROLL; ++u) {
                va[u] = ax[j + u];
                vb[u] = ay[j + u];
            }
#pragma unroll
            for (int u = 0; u < SPEED_UNROLL; ++u) {
                const double a = __dadd_rn((double)va[u], -mx);
                const double b = __dadd_rn((double)vb[u], -my);
                acc = __dadd_rn(acc, __dmul_rn(a, b));
            }
        }
        for (; j < sw; ++j) {
            const double a = __dadd_rn((double)ax[j], -mx);
            const double b = __dadd_rn((double)ay[j], -my);
            acc = __dadd_rn(acc, __dmul_rn(a, b));
        }
    }
    const float c = (float)__ddiv_rn(acc, (double)(sw * sh));
    cov[x * SPEED_EIB + y] = c;
    cov[y * SPEED_EIB + x] = c;
}
