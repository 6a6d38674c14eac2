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
//       grid ceil(sw * sh / VG_BLOCK) (scale 1: ceil(sw * sh / (4 VG_BLOCK)), four samples a
//       thread), VG_BLOCK threads. scale 1: dst = the samples as floats
//       (picture_copy: divided by 2^(bpc-8) above 8 bits), sw x sh = w x h. scale > 1: dst is
//       the sw x sh decimation (_iqa_decimate) by `scale` with the box filter of side `scale`,
//       every tap `tap`. src is w x h, compact.
//   ssim_decimate_lpf(const float *src, int w, int h, int sw, int sh, float *dst)
//       grid ceil(sw / SSIM_DW) * ceil(sh / SSIM_DH): the MS-SSIM pyramid step, _iqa_decimate
//       by 2 with the 9x9 low-pass g_lpf; sw = w/2 + (w&1), sh = h/2 + (h&1), w, h >= 5.
//       Block b computes the tile of SSIM_DW x SSIM_DH outputs at column
//       (b % tiles_x) * SSIM_DW, row (b / tiles_x) * SSIM_DH (tiles_x = ceil(sw / SSIM_DW)),
//       from its input window staged in shared memory.
//   ssim_hconv(const float *r, const float *d, int w, int h, float *out)
//       grid ceil(dw * h / VG_BLOCK), dw = w - 10: the horizontal pass of the 11-tap Gaussian
//       ("valid" output) of r, d, r*r, d*d, r*d: out holds 5 planes of dw x h, in that order.
//   ssim_terms(const float *hc, int dw, int h, float c1, float c2, float c3, double *l,
//              double *c, float *s, double *part)
//       grid ceil(dw / SSIM_TW) * ceil(dh / SSIM_TH), dh = h - 10: the vertical pass of the 5
//       planes of ssim_hconv and the per-pixel terms, written to l, c, s (dw x dh each). Block
//       b covers the tile of SSIM_TW x SSIM_TH pixels at column (b % tiles_x) * SSIM_TW, row
//       (b / tiles_x) * SSIM_TH (tiles_x = ceil(dw / SSIM_TW)), from its window of the 5
//       planes staged in shared memory; threads q * SSIM_TW + t (q < 5) compute the vertical
//       pass of plane q, column t, all SSIM_TH rows; then thread t computes the terms of the
//       pixels of column t % SSIM_TW at rows t / SSIM_TW + k * SSIM_TR (k < SSIM_TY), one
//       after the other. part receives SSIM_PARTS doubles per block: for each of l*c*s, l,
//       c, s (in that order) the block's sum of the terms, of their magnitudes, and of the
//       magnitudes times (n - i) (i the pixel's row-major index, n = dw * dh): each thread
//       adds its pixels' in order, then a tree sum
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
// The input rows of a tile of ssim_terms (its vertical window).
#define SSIM_VR (SSIM_TH + SSIM_GLEN - 1)

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
VG_INLINE float ssim_convert(vg_u16 s, int bpc, float scaler) {
    const float v = (float)s;
    return bpc == 8 ? v : v / scaler + 0.0f;
}

VG_INLINE float ssim_sample(const vg_u16 *src, vg_i64 i, int bpc, float scaler) {
    return ssim_convert(src[i], bpc, scaler);
}

struct alignas(16) SsimFloat4 { float v[4]; };

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_load(const vg_u16 *__restrict__ src, int w, int h, int bpc, int scale, float tap, int sw,
          int sh, float *__restrict__ dst) {
    const vg_i64 t = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    const vg_i64 n = (vg_i64)sw * sh;
    const float scaler = (float)(1u << (bpc - 8));
    if (scale == 1) {
        // Four samples a thread: one 8-byte load and one 16-byte store where the pointers
        // allow.
        const vg_i64 i = 4 * t;
        if (i + 4 <= n && ((vg_u64)src & 7) == 0 && ((vg_u64)dst & 15) == 0) {
            const vg_u64 q = *(const vg_u64 *)(src + i);
            SsimFloat4 o;
            o.v[0] = ssim_convert((vg_u16)(q & 0xffff), bpc, scaler);
            o.v[1] = ssim_convert((vg_u16)((q >> 16) & 0xffff), bpc, scaler);
            o.v[2] = ssim_convert((vg_u16)((q >> 32) & 0xffff), bpc, scaler);
            o.v[3] = ssim_convert((vg_u16)(q >> 48), bpc, scaler);
            *(SsimFloat4 *)(dst + i) = o;
            return;
        }
        for (vg_i64 k = i; k < i + 4 && k < n; ++k) dst[k] = ssim_sample(src, k, bpc, scaler);
        return;
    }
    const vg_i64 i = t;
    if (i >= n) return;
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

// ssim_decimate_lpf's tile: SSIM_DW x SSIM_DH outputs a block (one a thread), which read
// SSIM_DIH rows of SSIM_DIW input columns, kept in shared memory split by column parity (so that
// the threads of a warp, two columns apart, read consecutive words).
#define SSIM_DW 32
#define SSIM_DH (VG_BLOCK / SSIM_DW)
#define SSIM_DIW (2 * SSIM_DW + SSIM_LPF_LEN - 2)
#define SSIM_DIH (2 * SSIM_DH + SSIM_LPF_LEN - 2)
#define SSIM_DHALF ((SSIM_DIW + 1) / 2)
#define SSIM_DLOAD (VG_BLOCK / SSIM_DIW)

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ssim_decimate_lpf(const float *__restrict__ src, int w, int h, int sw, int sh,
                  float *__restrict__ dst) {
    // tile[p][r][k]: input row y0 * 2 - c + r, column x0 * 2 - c + 2 k + p (mirrored once).
    __shared__ float tile[2][SSIM_DIH][SSIM_DHALF];
    const int c = SSIM_LPF_LEN / 2;
    const int tiles_x = (sw + SSIM_DW - 1) / SSIM_DW;
    const int x0 = (int)(blockIdx.x % tiles_x) * SSIM_DW, y0 = (int)(blockIdx.x / tiles_x) * SSIM_DH;
    // Thread t < SSIM_DLOAD * SSIM_DIW loads column t % SSIM_DIW of rows t / SSIM_DIW,
    // + SSIM_DLOAD, ... Positions are mirrored as _iqa_filter_pixel reads them; the clamp only
    // moves positions that no output of the frame reads (past a partial tile), so that they
    // stay inside the plane.
    if (vg_tid() < SSIM_DLOAD * SSIM_DIW) {
        const int q = vg_tid() % SSIM_DIW;
        int xx = ssim_mirror(2 * x0 - c + q, w);
        xx = xx < 0 ? 0 : (xx > w - 1 ? w - 1 : xx);
        for (int r = vg_tid() / SSIM_DIW; r < SSIM_DIH; r += SSIM_DLOAD) {
            int yy = ssim_mirror(2 * y0 - c + r, h);
            yy = yy < 0 ? 0 : (yy > h - 1 ? h - 1 : yy);
            tile[q & 1][r][q >> 1] = src[(vg_i64)yy * w + xx];
        }
    }
    __syncthreads();
    const int tx = vg_tid() % SSIM_DW, ty = vg_tid() / SSIM_DW;
    const int x = x0 + tx, y = y0 + ty;
    if (x >= sw || y >= sh) return;
    // Rows outer, columns inner, as _iqa_filter_pixel: window column u is tile column
    // 2 tx + u, window row v tile row 2 ty + v.
    double sum = 0.0;
#pragma unroll
    for (int v = 0; v < SSIM_LPF_LEN; ++v) {
#pragma unroll
        for (int u = 0; u < SSIM_LPF_LEN; ++u)
            sum += (double)(tile[u & 1][2 * ty + v][tx + (u >> 1)] * SSIM_LPF[v * SSIM_LPF_LEN + u]);
    }
    dst[(vg_i64)y * sw + x] = (float)sum;
}

// A run of L outputs of the 11-tap Gaussian ("valid": output o reads inputs o .. o + 10) of the
// inputs in[j * is] (j < L + 10), written as floats to out[o * os]. Output o is, as
// _iqa_convolve computes it, 0.0 plus (double)(in[o + u] * g[u]) for u = 0, 1, ..., 10 in that
// order, rounded to float. The window is symmetric (g[u] = g[10 - u]), so input j's products are
// the 6 values in[j] * g[k], k <= 5: each is computed and converted to double once (where the
// run reads it; the compiler drops the rest) and added to every output of the run that reads
// it. Input j is output (j - u)'s term u, so each output still receives its terms in tap order;
// the L outputs' sums live in 11 registers, output o in o % 11.
template <int L>
VG_INLINE void ssim_gauss_run(const float *in, int is, float *out, int os) {
    double acc[SSIM_GLEN];
#pragma unroll
    for (int j = 0; j < L + SSIM_GLEN - 1; ++j) {
        const float m = in[j * is];
        double p[SSIM_GLEN / 2 + 1];
#pragma unroll
        for (int k = 0; k <= SSIM_GLEN / 2; ++k) p[k] = (double)(m * SSIM_GAUSS[k]);
#pragma unroll
        for (int u = 0; u < SSIM_GLEN; ++u) {
            const int o = j - u;
            if (o < 0 || o >= L) continue;
            double &a = acc[o % SSIM_GLEN];
            if (u == 0) a = 0.0;
            a += p[u <= SSIM_GLEN / 2 ? u : SSIM_GLEN - 1 - u];
            if (u == SSIM_GLEN - 1) out[o * os] = (float)a;
        }
    }
}

// (double)f computed on the integer pipe: the sign, the exponent rebased from 127 to 1023, the
// 23 mantissa bits at the top of the 52. Equal to (double)f for zero and every normal f (checked
// for all 2^32 floats on the host); for subnormal, infinite and NaN f it sets *other and returns
// another value (the caller then converts again with the conversion instruction).
VG_INLINE double ssim_f2d_int(float f, bool *other) {
    const vg_u32 u = __float_as_uint(f);
    const vg_u32 a = u & 0x7fffffffu;
    *other |= a - 0x00800000u >= 0x7f000000u && a != 0u;
    const vg_u32 hi = a == 0u ? u : (((vg_u32)((vg_i32)u >> 3) & 0x8fffffffu) + 0x38000000u);
    return __hiloint2double((int)hi, (int)(u << 29));
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
    // The r*d map's products are widened on the integer pipe (ssim_f2d_int), the others by
    // the conversion instruction: the XU pipe, which the 55 conversions an output otherwise
    // keep busy (89% in ncu), shares the work with the ALU pipe.
    bool other = false;
#pragma unroll
    for (int u = 0; u < SSIM_GLEN; ++u) {
        const float k = SSIM_GAUSS[u];
        const float p = rr[u], q = dd[u];
        a0 += (double)(p * k);
        a1 += (double)(q * k);
        a2 += (double)((p * p) * k);
        a3 += (double)((q * q) * k);
        a4 += ssim_f2d_int((p * q) * k, &other);
    }
    if (other) {
        // A subnormal (or infinite, or NaN) product: the r*d sum again, every product converted
        // by the instruction.
        a4 = 0.0;
#pragma unroll 1
        for (int u = 0; u < SSIM_GLEN; ++u) a4 += (double)((rr[u] * dd[u]) * SSIM_GAUSS[u]);
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
    // The tile's input, the 5 planes' rows ty0 .. ty0 + SSIM_VR - 1 of columns tx0 .. tx0 +
    // SSIM_TW - 1 (tile[(q * SSIM_VR + r) * SSIM_TW + t]); afterwards the block sums' scratch.
    constexpr int TILE = 5 * SSIM_VR * SSIM_TW;
    constexpr int WORDS = TILE > 2 * NP * VG_BLOCK ? TILE : 2 * NP * VG_BLOCK;
    __shared__ double smem[WORDS / 2];
    // The vertical pass's output, the 5 planes' rows ty0 .. ty0 + SSIM_TH - 1
    // (vc[(q * SSIM_TH + r) * SSIM_TW + t]).
    __shared__ float vc[5 * SSIM_TH * SSIM_TW];
    float *tile = (float *)smem;
    double *red = smem;
    const int dh = h - SSIM_GLEN + 1;
    const vg_i64 plane = (vg_i64)dw * h;
    const vg_i64 n = (vg_i64)dw * dh;
    const int tiles_x = (dw + SSIM_TW - 1) / SSIM_TW;
    const int tx0 = (int)(blockIdx.x % tiles_x) * SSIM_TW;
    const int ty0 = (int)(blockIdx.x / tiles_x) * SSIM_TH;
    // Stage the tile (rows and columns past the plane, read by no output, as 0).
    {
        // Thread t loads column t % SSIM_TW of rows t / SSIM_TW, + SSIM_TR, ... of each plane.
        const int t = vg_tid() % SSIM_TW, xx = tx0 + t;
        for (int q = 0; q < 5; ++q) {
            for (int r = vg_tid() / SSIM_TW; r < SSIM_VR; r += SSIM_TR) {
                const int yy = ty0 + r;
                tile[(q * SSIM_VR + r) * SSIM_TW + t] =
                    (xx < dw && yy < h) ? hc[q * plane + (vg_i64)yy * dw + xx] : 0.0f;
            }
        }
    }
    __syncthreads();
    // The vertical pass: thread q * SSIM_TW + t (q < 5) runs down column t of plane q, all
    // SSIM_TH rows (ssim_gauss_run: each product converted once, each output's taps in order).
    if (vg_tid() < 5 * SSIM_TW) {
        const int q = vg_tid() / SSIM_TW, t = vg_tid() % SSIM_TW;
        const float *col = tile + q * SSIM_VR * SSIM_TW + t;
        ssim_gauss_run<SSIM_TH>(col, SSIM_TW, vc + q * SSIM_TH * SSIM_TW + t, SSIM_TW);
    }
    __syncthreads();
    const int x = tx0 + vg_tid() % SSIM_TW;
    const int y0 = ty0 + vg_tid() / SSIM_TW;
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
        const float *v5 = vc + (y - ty0) * SSIM_TW + (x - tx0);
        const float mr = v5[0], md = v5[SSIM_TH * SSIM_TW];
        float sr = v5[2 * SSIM_TH * SSIM_TW] - mr * mr;
        float sd = v5[3 * SSIM_TH * SSIM_TW] - md * md;
        if (0.0 > sr) sr = 0.0f;
        if (0.0 > sd) sd = 0.0f;
        const float srd = v5[4 * SSIM_TH * SSIM_TW] - mr * md;
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
    // The tile was last read before the barrier after the vertical pass: its memory is the
    // block sums' scratch.
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
