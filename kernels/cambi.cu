// CAMBI of the distorted luma, libvmaf 3.2.0 libvmaf/src/feature/cambi.c, as ported in
// src/features/cambi/ (whose numbers equal libvmaf's bit for bit): preprocessing, spatial mask,
// per scale decimation and mode filter, c-values and their integer sums. The host finishes the
// score (features::cambi::pool_exact or, where that does not decide, libvmaf's quick_select on
// the c-values read back, then Cambi::score_of_scales). Every kernel is one thread an output
// sample, grid ceil(n / VG_BLOCK), and reads and writes only inside the sizes passed to it.
//
//   cambi_pre(const u16 *src, int in_w, int bpc, const u32 *xs, const u32 *ys, int w, int h,
//             u16 *out)
//       out[y][x] = to10(src[ys[y] * in_w + xs[x]]): the host-computed nearest-neighbour tables
//       (libvmaf's float index accumulation replayed; the identity at the input size), then
//       `v << (10 - bpc)` below 10 bits, `(v + 2^(bpc-11)) >> (bpc - 10)` above (at most
//       (65535 + 32) >> 6 = 1024). xs[x] < in_w, ys[y] < the input height (checked on the host).
//   cambi_dither(const u16 *in, int w, int h, u16 *out)
//       cambi.c anti_dithering_filter, out of place (libvmaf's in-place filter reads only
//       samples not yet written): the floor of the mean of the 2x2 block right and below, the
//       last column and row of 2 samples, the last sample copied. Sums <= 4 * 1024 (u32).
//   cambi_mask(const u16 *img, int w, int h, int mask_index, int half, u8 *mask)
//       cambi.c get_spatial_mask: mask = (zero-padded 7x7 count of flat pixels) > mask_index,
//       a pixel flat where it equals its right and bottom neighbours (a missing one counts as
//       equal). The count is at most 49. With `half` (the speed-up), only the even rows and
//       columns: the mask decimated at once, ((w + 1) / 2) x ((h + 1) / 2).
//   cambi_decimate_u16 / cambi_decimate_u8(const T *in, int w, int h, T *out)
//       out[i][j] = in[2i][2j], ((w + 1) / 2) x ((h + 1) / 2).
//   cambi_mode(const u16 *in, int w, int h, u16 *out)
//       cambi.c filter_mode out of place (libvmaf's in-place pass reads each row before it is
//       written): rows 1..h-2 the mode of the three horizontal modes of rows i-1, i, i+1 (the
//       first and last columns of each row copied), the first and last rows copied; h < 3
//       copies everything.
//   cambi_cvalues(const u16 *img, const u8 *mask, int w, int h, int pad, int lo, int len,
//                 int nd, const u32 *fire, const float *recip, float *cv, u64 *sums)
//       cambi.c calculate_c_values + c_value_pixel: for a masked pixel of value v in the band
//       lo..lo+len with fire[v] != 0, the exact counts over the window rows i-pad..i+pad,
//       columns j-pad..j+pad clipped to the frame, of masked in-band pixels of value v + k,
//       k = -nd..nd (each <= (2 pad + 1)^2 < 4226, int); then for each difference d tested
//       (bit d - 1 of fire[v]) c = (float)(w_d * p0 * pmax) * recip[p0 + pmax] (the product
//       <= 9 * 4225^2 / 4 < 2^26 in int, rounded to float as in C; recip is libvmaf's table,
//       4226 entries, p0 + pmax <= (2 pad + 1)^2), and the largest c. cv[i * w + j] = c
//       (0 elsewhere). sums[0] += sum of c * 2^24 (exact: a non-zero c is a float >= 0.5, so
//       a multiple of 2^-24, below 9506.25 = 2^13.3, so c * 2^24 < 2^38 is an integer; a
//       block's sum < 2^46; the frame's < n * 2^38, which the host checks < 2^64 before
//       building the launch), sums[1] += the count of non-zero c (<= n < 2^31). Integer
//       atomics: the block order does not matter. fire has 1025 entries (every 10-bit value
//       the conversion gives); nd <= 32.

#define CAMBI_MAX_ND 32

__constant__ int CAMBI_CONTRAST_WEIGHTS[CAMBI_MAX_ND] = {
    1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_pre(const vg_u16 *__restrict__ src, int in_w, int bpc, const vg_u32 *__restrict__ xs,
          const vg_u32 *__restrict__ ys, int w, int h, vg_u16 *__restrict__ out) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)w * h) return;
    const int y = (int)(i / w), x = (int)(i % w);
    const vg_u32 v = src[(vg_i64)ys[y] * in_w + xs[x]];
    vg_u32 o;
    if (bpc < 10) {
        o = v << (10 - bpc);
    } else if (bpc == 10) {
        o = v;
    } else {
        const int shift = bpc - 10;
        o = (v + (1u << (shift - 1))) >> shift;
    }
    out[i] = (vg_u16)o;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_dither(const vg_u16 *__restrict__ in, int w, int h, vg_u16 *__restrict__ out) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)w * h) return;
    const int y = (int)(i / w), x = (int)(i % w);
    const vg_u32 a = in[i];
    vg_u32 o;
    if (y + 1 < h && x + 1 < w) {
        o = (a + in[i + 1] + in[i + w] + in[i + w + 1]) >> 2;
    } else if (y + 1 < h) {
        o = (a + in[i + w]) >> 1;
    } else if (x + 1 < w) {
        o = (a + in[i + 1]) >> 1;
    } else {
        o = a;
    }
    out[i] = (vg_u16)o;
}

// Whether pixel (y, x) of a w x h image is flat (cambi.c get_derivative_data_for_row).
VG_INLINE int cambi_flat(const vg_u16 *img, int w, int h, int y, int x) {
    const vg_i64 i = (vg_i64)y * w + x;
    const vg_u16 a = img[i];
    const int right = x + 1 < w ? a == img[i + 1] : 1;
    const int below = y + 1 < h ? a == img[i + w] : 1;
    return right & below;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_mask(const vg_u16 *__restrict__ img, int w, int h, int mask_index, int half,
           vg_u8 *__restrict__ mask) {
    const int mw = half ? (w + 1) >> 1 : w, mh = half ? (h + 1) >> 1 : h;
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)mw * mh) return;
    int y = (int)(i / mw), x = (int)(i % mw);
    if (half) {
        y *= 2;
        x *= 2;
    }
    int n = 0;
    for (int dy = -3; dy <= 3; ++dy) {
        const int yy = y + dy;
        if (yy < 0 || yy >= h) continue;
        for (int dx = -3; dx <= 3; ++dx) {
            const int xx = x + dx;
            if (xx < 0 || xx >= w) continue;
            n += cambi_flat(img, w, h, yy, xx);
        }
    }
    mask[i] = (vg_u8)(n > mask_index);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_decimate_u16(const vg_u16 *__restrict__ in, int w, int h, vg_u16 *__restrict__ out) {
    const int ow = (w + 1) >> 1, oh = (h + 1) >> 1;
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)ow * oh) return;
    const int y = (int)(i / ow), x = (int)(i % ow);
    out[i] = in[(vg_i64)(2 * y) * w + 2 * x];
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_decimate_u8(const vg_u8 *__restrict__ in, int w, int h, vg_u8 *__restrict__ out) {
    const int ow = (w + 1) >> 1, oh = (h + 1) >> 1;
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)ow * oh) return;
    const int y = (int)(i / ow), x = (int)(i % ow);
    out[i] = in[(vg_i64)(2 * y) * w + 2 * x];
}

// cambi.c mode3: the value two of the three share, else the smallest.
VG_INLINE vg_u16 cambi_mode3(vg_u16 a, vg_u16 b, vg_u16 c) {
    if (a == b || a == c) return a;
    if (b == c) return b;
    vg_u16 m = a < b ? a : b;
    return m < c ? m : c;
}

// The horizontal mode of row y at column x (the first and last columns as they are).
VG_INLINE vg_u16 cambi_hmode(const vg_u16 *in, int w, int y, int x) {
    const vg_i64 i = (vg_i64)y * w + x;
    if (x == 0 || x == w - 1) return in[i];
    return cambi_mode3(in[i - 1], in[i], in[i + 1]);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_mode(const vg_u16 *__restrict__ in, int w, int h, vg_u16 *__restrict__ out) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)w * h) return;
    const int y = (int)(i / w), x = (int)(i % w);
    if (h < 3 || y == 0 || y == h - 1) {
        out[i] = in[i];
        return;
    }
    out[i] = cambi_mode3(cambi_hmode(in, w, y - 1, x), cambi_hmode(in, w, y, x),
                         cambi_hmode(in, w, y + 1, x));
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_cvalues(const vg_u16 *__restrict__ img, const vg_u8 *__restrict__ mask, int w, int h,
              int pad, int lo, int len, int nd, const vg_u32 *__restrict__ fire,
              const float *__restrict__ recip, float *__restrict__ cv, vg_u64 *__restrict__ sums) {
    __shared__ vg_u64 red[2 * VG_BLOCK];
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    float c = 0.0f;
    if (i < (vg_i64)w * h) {
        const int y = (int)(i / w), x = (int)(i % w);
        const int v = img[i];
        const vg_u32 bits = mask[i] && (vg_u32)(v - lo) < (vg_u32)len ? fire[v] : 0u;
        if (bits != 0) {
            int counts[2 * CAMBI_MAX_ND + 1];
            for (int k = 0; k <= 2 * nd; ++k) counts[k] = 0;
            const int y0 = y - pad < 0 ? 0 : y - pad, y1 = y + pad >= h ? h - 1 : y + pad;
            const int x0 = x - pad < 0 ? 0 : x - pad, x1 = x + pad >= w ? w - 1 : x + pad;
            for (int yy = y0; yy <= y1; ++yy) {
                const vg_i64 row = (vg_i64)yy * w;
                for (int xx = x0; xx <= x1; ++xx) {
                    const int u = img[row + xx];
                    const int k = u - v + nd;
                    if (mask[row + xx] && (vg_u32)(u - lo) < (vg_u32)len && (vg_u32)k <= (vg_u32)(2 * nd))
                        counts[k] += 1;
                }
            }
            const int p0 = counts[nd];
            for (int d = 1; d <= nd; ++d) {
                if (!((bits >> (d - 1)) & 1u)) continue;
                const int p1 = counts[nd + d], p2 = counts[nd - d];
                const int pm = p1 > p2 ? p1 : p2;
                const float val = (float)(CAMBI_CONTRAST_WEIGHTS[d - 1] * p0 * pm) * recip[p0 + pm];
                if (val > c) c = val;
            }
        }
        cv[i] = c;
    }
    // c * 2^24 is an integer below 2^38 (see above): exact in double and in u64.
    vg_u64 v2[2] = {(vg_u64)((double)c * 16777216.0), c > 0.0f ? 1ull : 0ull};
    vg_block_sums<vg_u64, 2>(v2, red);
    if (vg_tid() == 0) {
        vg_atomic_add_u64(&sums[0], red[0]);
        vg_atomic_add_u64(&sums[1], red[VG_BLOCK]);
    }
}
