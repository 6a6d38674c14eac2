// SSIM (float_ssim) and MS-SSIM (float_ms_ssim): the per-pixel work of libvmaf 3.2.0
// libvmaf/src/feature/{float_ssim.c, ssim.c, ms_ssim.c, picture_copy.c, iqa/ssim_tools.c,
// iqa/convolve.c, iqa/decimate.c}, as ported in src/features/ssim.rs and ms_ssim.rs.
//
// Every value is computed in the C code's types and order of operations: float products
// accumulated in double, in tap order, rounded to float; the per-pixel terms l, c (double) and
// s (float) as features::ssim::pixel_terms. The frame's means are sequential double sums over the
// pixels in row-major order, which no parallel sum reproduces: ssim_terms writes the terms and,
// per block, the sums the host needs to bound that sequential sum (features::ssim::SumBound);
// where the bound does not decide the float mean, the host reads the terms and adds them in
// order (src/backend/cuda/companion.rs).
//
//   ssim_load(const u16 *src, int w, int h, int bpc, int scale, float tap, int sw, int sh,
//             float *dst)
//       grid ceil(sw * sh / VG_BLOCK), VG_BLOCK threads. scale 1: dst = the samples as floats
//       (picture_copy: divided by 2^(bpc-8) above 8 bits), sw x sh = w x h. scale > 1: dst is
//       the sw x sh decimation (_iqa_decimate) by `scale` with the box filter of side `scale`,
//       every tap `tap`. src is w x h, compact.
//   ssim_decimate_lpf(const float *src, int w, int h, int sw, int sh, float *dst)
//       grid ceil(sw * sh / VG_BLOCK): the MS-SSIM pyramid step, _iqa_decimate by 2 with the
//       9x9 low-pass g_lpf; sw = w/2 + (w&1), sh = h/2 + (h&1).
//   ssim_hconv(const float *r, const float *d, int w, int h, float *out)
//       grid ceil(ceil(dw / SSIM_HX) * h / VG_BLOCK), dw = w - 10: the horizontal pass of the
//       11-tap Gaussian ("valid" output) of r, d, r*r, d*d, r*d: out holds 5 planes of dw x h,
//       in that order. A thread computes SSIM_HX neighbouring outputs of a row (their windows
//       share samples: each sample and its squares are read and formed once).
//   ssim_terms(const float *hc, int dw, int h, float c1, float c2, float c3, double *l,
//              double *c, float *s, double *part)
//       grid ceil(dw / SSIM_TW) * ceil(dh / SSIM_TH), dh = h - 10: the vertical pass of the 5
//       planes of ssim_hconv and the per-pixel terms, written to l, c, s (dw x dh each). Block
//       b covers the tile of SSIM_TW x SSIM_TH pixels at column (b % tiles_x) * SSIM_TW, row
//       (b / tiles_x) * SSIM_TH (tiles_x = ceil(dw / SSIM_TW)); a thread computes SSIM_TY
//       pixels of one column, one below the other (their windows share rows: each row is read
//       once). part receives SSIM_PARTS doubles per block: for each of l*c*s, l, c, s (in that
//       order) the block's sum of the terms, of their magnitudes, and of the magnitudes times
//       (n - i) (i the pixel's row-major index, n = dw * dh): each thread adds its pixels' in
//       order, then a tree sum over the block (stride 128, 64, ..., 1), so a term passes through
//       at most SSIM_TY - 1 + 8 additions here.

#define SSIM_GLEN 11
#define SSIM_PARTS 12
#define SSIM_LPF_LEN 9
// ssim_terms' tile: SSIM_TW columns by SSIM_TH rows of pixels, SSIM_TY of a column a thread.
#define SSIM_TW 32
#define SSIM_TY 4
#define SSIM_TH (VG_BLOCK / SSIM_TW * SSIM_TY)
// ssim_hconv: outputs a thread.
#define SSIM_HX 4

// iqa/ssim_tools.h: g_gaussian_window_h (= g_gaussian_window_v).
__constant__ float SSIM_GAUSS[SSIM_GLEN] = {0.001028f, 0.007599f, 0.036001f, 0.109361f,
                                            0.213006f, 0.266012f, 0.213006f, 0.109361f,
                                            0.036001f, 0.007599f, 0.001028f};

// ms_ssim.c: g_lpf (9/7 biorthogonal low-pass, row-major).
__constant__ float SSIM_LPF[SSIM_LPF_LEN * SSIM_LPF_LEN] = {
     0.000714f, -0.000450f, -0.002090f,  0.007132f,  0.016114f,  0.007132f, -0.002090f, -0.000450f,  0.000714f,
    -0.000450f,  0.000283f,  0.001316f, -0.004490f, -0.010146f, -0.004490f,  0.001316f,  0.000283f, -0.000450f,
    -0.002090f,  0.001316f,  0.006115f, -0.020867f, -0.047149f, -0.020867f,  0.006115f,  0.001316f, -0.002090f,
     0.007132f, -0.004490f, -0.020867f,  0.071207f,  0.160885f,  0.071207f, -0.020867f, -0.004490f,  0.007132f,
     0.016114f, -0.010146f, -0.047149f,  0.160885f,  0.363505f,  0.160885f, -0.047149f, -0.010146f,  0.016114f,
     0.007132f, -0.004490f, -0.020867f,  0.071207f,  0.160885f,  0.071207f, -0.020867f, -0.004490f,  0.007132f,
    -0.002090f,  0.001316f,  0.006115f, -0.020867f, -0.047149f, -0.020867f,  0.006115f,  0.001316f, -0.002090f,
    -0.000450f,  0.000283f,  0.001316f, -0.004490f, -0.010146f, -0.004490f,  0.001316f,  0.000283f, -0.000450f,
     0.000714f, -0.000450f, -0.002090f,  0.007132f,  0.016114f,  0.007132f, -0.002090f, -0.000450f,  0.000714f,
};

// KBND_SYMMETRIC (iqa/convolve.c): one reflection, the edge sample repeated.
VG_INLINE int ssim_mirror(int i, int n) {
    if (i < 0) return -1 - i;
    if (i >= n) return n - (i - n) - 1;
    return i;
}

// picture_copy(): 8-bit samples as they are, deeper ones divided by 2^(bpc-8) (exact).
VG_INLINE float ssim_sample(const vg_u16 *src, vg_i64 i, int bpc, float scaler) {
    const float v = (float)src[i];
    return bpc == 8 ? v : v / scaler + 0.0f;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_load(const vg_u16 *__restrict__ src, int w, int h, int bpc, int scale, float tap, int sw,
          int sh, float *__restrict__ dst) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)sw * sh) return;
    const float scaler = (float)(1u << (bpc - 8));
    if (scale == 1) {
        dst[i] = ssim_sample(src, i, bpc, scaler);
        return;
    }
    // _iqa_filter_pixel at (x * scale, y * scale), square kernel of side `scale`, kscale 1:
    // rows outer, columns inner; an even side has taps -scale/2 .. scale/2 - 1.
    const int x = (int)(i % sw), y = (int)(i / sw);
    const int c = scale / 2, even = (scale % 2 == 0) ? 1 : 0;
    const int cx = x * scale, cy = y * scale;
    double sum = 0.0;
    for (int v = -c; v <= c - even; ++v) {
        const vg_i64 row = (vg_i64)ssim_mirror(cy + v, h) * w;
        for (int u = -c; u <= c - even; ++u) {
            const float p = ssim_sample(src, row + ssim_mirror(cx + u, w), bpc, scaler);
            sum += (double)(p * tap);
        }
    }
    dst[i] = (float)sum;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_decimate_lpf(const float *__restrict__ src, int w, int h, int sw, int sh,
                  float *__restrict__ dst) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)sw * sh) return;
    const int x = (int)(i % sw), y = (int)(i / sw);
    const int c = SSIM_LPF_LEN / 2;
    // The window's columns, mirrored once; rows outer, columns inner, as _iqa_filter_pixel.
    int cols[SSIM_LPF_LEN];
#pragma unroll
    for (int u = 0; u < SSIM_LPF_LEN; ++u) cols[u] = ssim_mirror(2 * x + u - c, w);
    double sum = 0.0;
#pragma unroll
    for (int v = 0; v < SSIM_LPF_LEN; ++v) {
        const float *row = src + (vg_i64)ssim_mirror(2 * y + v - c, h) * w;
#pragma unroll
        for (int u = 0; u < SSIM_LPF_LEN; ++u)
            sum += (double)(row[cols[u]] * SSIM_LPF[v * SSIM_LPF_LEN + u]);
    }
    dst[i] = (float)sum;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_hconv(const float *__restrict__ r, const float *__restrict__ d, int w, int h,
           float *__restrict__ out) {
    const int dw = w - SSIM_GLEN + 1;
    const vg_i64 n = (vg_i64)dw * h;
    const int groups = (dw + SSIM_HX - 1) / SSIM_HX;
    const vg_i64 g = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (g >= (vg_i64)groups * h) return;
    const int x0 = (int)(g % groups) * SSIM_HX, y = (int)(g / groups);
    const float *rr = r + (vg_i64)y * w + x0;
    const float *dd = d + (vg_i64)y * w + x0;
    // Output x0 + o of planes r, d, r*r, d*d, r*d: the products of sample x0 + o + u with
    // tap u, added in tap order (sample order), each product rounded to float as in the C code.
    double a[SSIM_HX][5];
#pragma unroll
    for (int o = 0; o < SSIM_HX; ++o)
#pragma unroll
        for (int q = 0; q < 5; ++q) a[o][q] = 0.0;
#pragma unroll
    for (int s = 0; s < SSIM_HX + SSIM_GLEN - 1; ++s) {
        // Samples past the row's end feed only outputs past dw (not written).
        if (x0 + s < w) {
            const float p = rr[s], q = dd[s];
            const float v[5] = {p, q, p * p, q * q, p * q};
#pragma unroll
            for (int o = 0; o < SSIM_HX; ++o) {
                const int u = s - o;
                if (u >= 0 && u < SSIM_GLEN) {
#pragma unroll
                    for (int k = 0; k < 5; ++k) a[o][k] += (double)(v[k] * SSIM_GAUSS[u]);
                }
            }
        }
    }
    const vg_i64 i = (vg_i64)y * dw + x0;
#pragma unroll
    for (int o = 0; o < SSIM_HX; ++o) {
        if (x0 + o < dw) {
#pragma unroll
            for (int k = 0; k < 5; ++k) out[k * n + i + o] = (float)a[o][k];
        }
    }
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_terms(const float *__restrict__ hc, int dw, int h, float c1, float c2, float c3,
           double *__restrict__ l_out, double *__restrict__ c_out, float *__restrict__ s_out,
           double *__restrict__ part) {
    __shared__ double red[SSIM_PARTS * VG_BLOCK];
    const int dh = h - SSIM_GLEN + 1;
    const vg_i64 plane = (vg_i64)dw * h;
    const vg_i64 n = (vg_i64)dw * dh;
    const int tiles_x = (dw + SSIM_TW - 1) / SSIM_TW;
    const int x = (int)(blockIdx.x % tiles_x) * SSIM_TW + vg_tid() % SSIM_TW;
    const int y0 = (int)(blockIdx.x / tiles_x) * SSIM_TH + vg_tid() / SSIM_TW * SSIM_TY;
    // Pixel (x, y0 + p): the products of row y0 + p + v with tap v, added in tap order (row
    // order).
    double a[SSIM_TY][5];
#pragma unroll
    for (int p = 0; p < SSIM_TY; ++p)
#pragma unroll
        for (int q = 0; q < 5; ++q) a[p][q] = 0.0;
    if (x < dw && y0 < dh) {
        const float *col = hc + (vg_i64)y0 * dw + x;
#pragma unroll
        for (int r = 0; r < SSIM_TY + SSIM_GLEN - 1; ++r) {
            // Rows past h - 1 feed only pixels past dh - 1 (not used).
            if (y0 + r < h) {
                float v[5];
#pragma unroll
                for (int q = 0; q < 5; ++q) v[q] = col[q * plane + (vg_i64)r * dw];
#pragma unroll
                for (int p = 0; p < SSIM_TY; ++p) {
                    const int u = r - p;
                    if (u >= 0 && u < SSIM_GLEN) {
#pragma unroll
                        for (int q = 0; q < 5; ++q) a[p][q] += (double)(v[q] * SSIM_GAUSS[u]);
                    }
                }
            }
        }
    }
    // Per thread, its pixels' l * c * s, l, c, s: the term, its magnitude and the magnitude
    // times (n - i), added in pixel order.
    double v[SSIM_PARTS];
#pragma unroll
    for (int k = 0; k < SSIM_PARTS; ++k) v[k] = 0.0;
#pragma unroll
    for (int p = 0; p < SSIM_TY; ++p) {
        const int y = y0 + p;
        if (x < dw && y < dh) {
            const vg_i64 i = (vg_i64)y * dw + x;
            const float mr = (float)a[p][0], md = (float)a[p][1];
            float sr = (float)a[p][2] - mr * mr;
            float sd = (float)a[p][3] - md * md;
            if (0.0 > sr) sr = 0.0f;
            if (0.0 > sd) sd = 0.0f;
            const float srd = (float)a[p][4] - mr * md;
            const float sigma_rd = (float)sqrt((double)(sr * sd));
            const double l =
                (2.0 * (double)mr * (double)md + (double)c1) / (double)(mr * mr + md * md + c1);
            const double c = (2.0 * (double)sigma_rd + (double)c2) / (double)(sr + sd + c2);
            const float clamped = (srd < 0.0f && sigma_rd <= 0.0f) ? 0.0f : srd;
            const float s = (clamped + c3) / (sigma_rd + c3);
            l_out[i] = l;
            c_out[i] = c;
            s_out[i] = s;
            // SsimSums::add: ssim += l * c * s (left to right, in double).
            const double t4[4] = {l * c * (double)s, l, c, (double)s};
            const double weight = (double)(n - i);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const double m = fabs(t4[q]);
                v[3 * q] += t4[q];
                v[3 * q + 1] += m;
                v[3 * q + 2] += m * weight;
            }
        }
    }
    vg_block_sums<double, SSIM_PARTS>(v, red);
    if (vg_tid() < SSIM_PARTS) part[(vg_i64)blockIdx.x * SSIM_PARTS + vg_tid()] = red[vg_tid() * VG_BLOCK];
}
