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
//       grid ceil(dw * h / VG_BLOCK), dw = w - 10: the horizontal pass of the 11-tap Gaussian
//       ("valid" output) of r, d, r*r, d*d, r*d: out holds 5 planes of dw x h, in that order.
//   ssim_terms(const float *hc, int dw, int h, float c1, float c2, float c3, double *l,
//              double *c, float *s, double *part)
//       grid ceil(dw / SSIM_TW) * ceil(dh / SSIM_TH), dh = h - 10: the vertical pass of the 5
//       planes of ssim_hconv and the per-pixel terms, written to l, c, s (dw x dh each). Block
//       b covers the tile of SSIM_TW x SSIM_TH pixels at column (b % tiles_x) * SSIM_TW, row
//       (b / tiles_x) * SSIM_TH (tiles_x = ceil(dw / SSIM_TW)), so that a block's reads share
//       rows in the cache; thread t computes the pixels of column t % SSIM_TW at rows
//       t / SSIM_TW + k * SSIM_TR (k < SSIM_TY), one after the other. part receives SSIM_PARTS
//       doubles per block: for each of l*c*s, l, c, s (in that order) the block's sum of the
//       terms, of their magnitudes, and of the magnitudes times (n - i) (i the pixel's
//       row-major index, n = dw * dh): each thread adds its pixels' in order, then a tree sum
//       over the block (stride 128, 64, ..., 1), so a term passes through at most
//       SSIM_TY - 1 + 8 additions here (one block sum, with its 8 barriers, per SSIM_TY pixels
//       a thread).
//   ssim_terms_cs(const float *hc, int dw, int h, float c2, float c3, double *c, float *s,
//                 double *part)
//       ssim_terms without l (MS-SSIM's levels 0-3, whose luminance exponent is 0: only their
//       c and s means count): writes c and s, and SSIM_PARTS_CS doubles per block, the three
//       sums of c, then of s.

#define SSIM_GLEN 11
#define SSIM_PARTS 12
#define SSIM_PARTS_CS 6
#define SSIM_LPF_LEN 9
// ssim_terms' tile: SSIM_TW columns by SSIM_TH rows of pixels, SSIM_TY of a column a thread
// (rows SSIM_TR apart).
#define SSIM_TW 32
#define SSIM_TY 4
#define SSIM_TR (VG_BLOCK / SSIM_TW)
#define SSIM_TH (SSIM_TR * SSIM_TY)

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
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= n) return;
    const int x = (int)(i % dw), y = (int)(i / dw);
    const float *rr = r + (vg_i64)y * w + x;
    const float *dd = d + (vg_i64)y * w + x;
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, a4 = 0.0;
    for (int u = 0; u < SSIM_GLEN; ++u) {
        const float k = SSIM_GAUSS[u];
        const float p = rr[u], q = dd[u];
        a0 += (double)(p * k);
        a1 += (double)(q * k);
        a2 += (double)((p * p) * k);
        a3 += (double)((q * q) * k);
        a4 += (double)((p * q) * k);
    }
    out[i] = (float)a0;
    out[n + i] = (float)a1;
    out[2 * n + i] = (float)a2;
    out[3 * n + i] = (float)a3;
    out[4 * n + i] = (float)a4;
}

// ssim_terms (L: l, c, s) and ssim_terms_cs (c and s only).
template <bool L>
VG_INLINE void ssim_terms_body(const float *__restrict__ hc, int dw, int h, float c1, float c2,
                               float c3, double *__restrict__ l_out, double *__restrict__ c_out,
                               float *__restrict__ s_out, double *__restrict__ part) {
    // The terms summed: l*c*s, l, c, s with L; c, s without.
    constexpr int NT = L ? 4 : 2;
    constexpr int NP = L ? SSIM_PARTS : SSIM_PARTS_CS;
    static_assert(NP == 3 * NT, "three sums a term");
    __shared__ double red[NP * VG_BLOCK];
    const int dh = h - SSIM_GLEN + 1;
    const vg_i64 plane = (vg_i64)dw * h;
    const vg_i64 n = (vg_i64)dw * dh;
    const int tiles_x = (dw + SSIM_TW - 1) / SSIM_TW;
    const int x = (int)(blockIdx.x % tiles_x) * SSIM_TW + vg_tid() % SSIM_TW;
    const int y0 = (int)(blockIdx.x / tiles_x) * SSIM_TH + vg_tid() / SSIM_TW;
    // Per thread, its pixels' terms: the term, its magnitude and the magnitude times (n - i),
    // added in pixel order.
    double v[NP];
#pragma unroll
    for (int q = 0; q < NP; ++q) v[q] = 0.0;
#pragma unroll 1
    for (int k = 0; k < SSIM_TY; ++k) {
        const int y = y0 + k * SSIM_TR;
        if (x >= dw || y >= dh) continue;
        const vg_i64 i = (vg_i64)y * dw + x;
        double a[5] = {0.0, 0.0, 0.0, 0.0, 0.0};
        for (int u = 0; u < SSIM_GLEN; ++u) {
            const float g = SSIM_GAUSS[u];
            const vg_i64 o = (vg_i64)(y + u) * dw + x;
#pragma unroll
            for (int q = 0; q < 5; ++q) a[q] += (double)(hc[q * plane + o] * g);
        }
        const float mr = (float)a[0], md = (float)a[1];
        float sr = (float)a[2] - mr * mr;
        float sd = (float)a[3] - md * md;
        if (0.0 > sr) sr = 0.0f;
        if (0.0 > sd) sd = 0.0f;
        const float srd = (float)a[4] - mr * md;
        const float sigma_rd = (float)sqrt((double)(sr * sd));
        const double c = (2.0 * (double)sigma_rd + (double)c2) / (double)(sr + sd + c2);
        const float clamped = (srd < 0.0f && sigma_rd <= 0.0f) ? 0.0f : srd;
        const float s = (clamped + c3) / (sigma_rd + c3);
        c_out[i] = c;
        s_out[i] = s;
        double t[NT];
        if (L) {
            const double l =
                (2.0 * (double)mr * (double)md + (double)c1) / (double)(mr * mr + md * md + c1);
            l_out[i] = l;
            // SsimSums::add: ssim += l * c * s (left to right, in double).
            t[0] = l * c * (double)s;
            t[1] = l;
        }
        t[NT - 2] = c;
        t[NT - 1] = (double)s;
        const double weight = (double)(n - i);
#pragma unroll
        for (int q = 0; q < NT; ++q) {
            const double m = fabs(t[q]);
            v[3 * q] += t[q];
            v[3 * q + 1] += m;
            v[3 * q + 2] += m * weight;
        }
    }
    vg_block_sums<double, NP>(v, red);
    if (vg_tid() < NP) part[(vg_i64)blockIdx.x * NP + vg_tid()] = red[vg_tid() * VG_BLOCK];
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_terms(const float *__restrict__ hc, int dw, int h, float c1, float c2, float c3,
           double *__restrict__ l_out, double *__restrict__ c_out, float *__restrict__ s_out,
           double *__restrict__ part) {
    ssim_terms_body<true>(hc, dw, h, c1, c2, c3, l_out, c_out, s_out, part);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_terms_cs(const float *__restrict__ hc, int dw, int h, float c2, float c3,
              double *__restrict__ c_out, float *__restrict__ s_out, double *__restrict__ part) {
    ssim_terms_body<false>(hc, dw, h, 0.0f, c2, c3, 0, c_out, s_out, part);
}
