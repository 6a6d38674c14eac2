// CAMBI of the distorted luma, libvmaf 3.2.0 libvmaf/src/feature/cambi.c, as ported in
// src/features/cambi/ (whose numbers equal libvmaf's bit for bit): preprocessing, spatial mask,
// per scale decimation fused with the mode filter, c-values and their integer sums. The host
// finishes the score (features::cambi::pool_exact or, where that does not decide, libvmaf's
// quick_select on the c-values read back, then Cambi::score_of_scales). Every kernel but
// cambi_mask is one thread an output sample, grid ceil(n / VG_BLOCK), and each reads and
// writes only inside the sizes passed to it.
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
//       columns: the mask decimated at once, ((w + 1) / 2) x ((h + 1) / 2). Grid
//       (ceil(mw / 16), ceil(mh / 16)) for the mw x mh mask: a block's 16 x 16 outputs count
//       from its flags, computed once into shared memory (at most 37 x 37: 15 steps of 2 and
//       the window's 6).
//   cambi_mode(const u16 *in, int iw, int ih, int dec, u16 *out)
//       cambi.c filter_mode out of place (libvmaf's in-place pass reads each row before it is
//       written) of the iw x ih image, or with `dec` of its decimation by 2 (cambi.c
//       decimate: sample (y, x) = in[2y][2x], ((iw + 1) / 2) x ((ih + 1) / 2)) read straight
//       from `in`: rows 1..h-2 the mode of the three horizontal modes of rows i-1, i, i+1 (the
//       first and last columns of each row copied), the first and last rows copied; h < 3
//       copies everything.
//   cambi_cvalues(const u16 *img, const u8 *mask, int w, int h, int mw, int mshift, int pad,
//                 int lo, int len, int nd, const u32 *fire, const float *recip, float *cv,
//                 u64 *sums)
//       cambi.c calculate_c_values + c_value_pixel, the mask of scale `mshift` read from scale
//       0's (row length mw: the decimated mask's (y, x) is mask[(y << mshift) * mw +
//       (x << mshift)], inside: checked on the host): for a masked pixel of value v in the band
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

#define CAMBI_MASK_TILE 16
#define CAMBI_MASK_FLAT (2 * (CAMBI_MASK_TILE - 1) + 7)

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_mask(const vg_u16 *__restrict__ img, int w, int h, int mask_index, int half,
           vg_u8 *__restrict__ mask) {
    __shared__ vg_u8 flat[CAMBI_MASK_FLAT * CAMBI_MASK_FLAT];
    const int mw = half ? (w + 1) >> 1 : w, mh = half ? (h + 1) >> 1 : h;
    const int step = half ? 2 : 1;
    // The flags of image rows y0 - 3 .. y0 + (TILE - 1) * step + 3 (fs of them), likewise the
    // columns; 0 outside the image (the zero padding).
    const int y0 = (int)blockIdx.y * CAMBI_MASK_TILE * step - 3;
    const int x0 = (int)blockIdx.x * CAMBI_MASK_TILE * step - 3;
    const int fs = (CAMBI_MASK_TILE - 1) * step + 7;
    for (int k = vg_tid(); k < fs * fs; k += VG_BLOCK) {
        const int yy = y0 + k / fs, xx = x0 + k % fs;
        flat[k] = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? (vg_u8)cambi_flat(img, w, h, yy, xx)
                                                           : (vg_u8)0;
    }
    __syncthreads();
    const int oy = vg_tid() / CAMBI_MASK_TILE, ox = vg_tid() % CAMBI_MASK_TILE;
    const int my = (int)blockIdx.y * CAMBI_MASK_TILE + oy;
    const int mx = (int)blockIdx.x * CAMBI_MASK_TILE + ox;
    if (my >= mh || mx >= mw) return;
    // Image pixel (my * step, mx * step) is flag (oy * step + 3, ox * step + 3).
    int n = 0;
    for (int dy = 0; dy < 7; ++dy) {
        const vg_u8 *row = flat + (oy * step + dy) * fs + ox * step;
        for (int dx = 0; dx < 7; ++dx) n += row[dx];
    }
    mask[(vg_i64)my * mw + mx] = (vg_u8)(n > mask_index);
}

// cambi.c mode3: the value two of the three share, else the smallest.
VG_INLINE vg_u16 cambi_mode3(vg_u16 a, vg_u16 b, vg_u16 c) {
    if (a == b || a == c) return a;
    if (b == c) return b;
    vg_u16 m = a < b ? a : b;
    return m < c ? m : c;
}

// Sample (y, x) of the image `in` (rows of iw), decimated by `step` (1 or 2).
VG_INLINE vg_u16 cambi_px(const vg_u16 *in, int iw, int step, int y, int x) {
    return in[(vg_i64)(y * step) * iw + x * step];
}

// The horizontal mode of row y at column x of the w-wide (decimated) image (the first and
// last columns as they are).
VG_INLINE vg_u16 cambi_hmode(const vg_u16 *in, int iw, int step, int w, int y, int x) {
    const vg_u16 c = cambi_px(in, iw, step, y, x);
    if (x == 0 || x == w - 1) return c;
    return cambi_mode3(cambi_px(in, iw, step, y, x - 1), c, cambi_px(in, iw, step, y, x + 1));
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_mode(const vg_u16 *__restrict__ in, int iw, int ih, int dec, vg_u16 *__restrict__ out) {
    const int step = dec ? 2 : 1;
    const int w = dec ? (iw + 1) >> 1 : iw, h = dec ? (ih + 1) >> 1 : ih;
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= (vg_i64)w * h) return;
    const int y = (int)(i / w), x = (int)(i % w);
    if (h < 3 || y == 0 || y == h - 1) {
        out[i] = cambi_px(in, iw, step, y, x);
        return;
    }
    out[i] = cambi_mode3(cambi_hmode(in, iw, step, w, y - 1, x),
                         cambi_hmode(in, iw, step, w, y, x),
                         cambi_hmode(in, iw, step, w, y + 1, x));
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_cvalues(const vg_u16 *__restrict__ img, const vg_u8 *__restrict__ mask, int w, int h,
              int mw, int mshift, int pad, int lo, int len, int nd, const vg_u32 *__restrict__ fire,
              const float *__restrict__ recip, float *__restrict__ cv, vg_u64 *__restrict__ sums) {
    __shared__ vg_u64 red[2 * VG_BLOCK];
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    float c = 0.0f;
    if (i < (vg_i64)w * h) {
        const int y = (int)(i / w), x = (int)(i % w);
        const int v = img[i];
        const vg_u32 bits =
            mask[((vg_i64)y << mshift) * mw + ((vg_i64)x << mshift)] && (vg_u32)(v - lo) < (vg_u32)len
                ? fire[v]
                : 0u;
        if (bits != 0) {
            int counts[2 * CAMBI_MAX_ND + 1];
            for (int k = 0; k <= 2 * nd; ++k) counts[k] = 0;
            const int y0 = y - pad < 0 ? 0 : y - pad, y1 = y + pad >= h ? h - 1 : y + pad;
            const int x0 = x - pad < 0 ? 0 : x - pad, x1 = x + pad >= w ? w - 1 : x + pad;
            for (int yy = y0; yy <= y1; ++yy) {
                const vg_i64 row = (vg_i64)yy * w;
                const vg_u8 *mrow = mask + ((vg_i64)yy << mshift) * mw;
                for (int xx = x0; xx <= x1; ++xx) {
                    const int u = img[row + xx];
                    const int k = u - v + nd;
                    if (mrow[(vg_i64)xx << mshift] && (vg_u32)(u - lo) < (vg_u32)len &&
                        (vg_u32)k <= (vg_u32)(2 * nd))
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

// cambi_cvalues_tiled: cambi_cvalues (same arguments, same results) for nd <= 4 (libvmaf's
// default max_log_contrast 2 and VMAF v1's), grid (ceil(w / 16), ceil(h / 16)): a block's
// 16 x 16 pixels count their windows from shared memory, where the block first writes the
// (16 + 2 pad)^2 samples around its tile (at most 80 x 80: pad <= 32, the window's area below
// 4226) as keys, a masked in-band value or CAMBI_NO_KEY (unmasked, out of band or outside the
// frame: never counted, so the window is clipped at the frame's edges as in cambi_cvalues).
// A window row's counts of the 2 nd + 1 values v - nd .. v + nd go to 7-bit fields of one u64
// (a row holds at most 2 pad + 1 <= 65 < 128 samples; 9 fields x 7 bits = 63), then are added
// to the int counts (each <= (2 pad + 1)^2 < 4226). Integer counts: the order does not matter.
#define CAMBI_TILE 16
#define CAMBI_TILE_MAX_PAD 32
#define CAMBI_TILE_SIDE (CAMBI_TILE + 2 * CAMBI_TILE_MAX_PAD)
#define CAMBI_TILE_ND 4
#define CAMBI_NO_KEY 0xFFFFu

// counts[k] (k <= 2 CAMBI_TILE_ND) by selection, so that the counts stay in registers.
VG_INLINE int cambi_pick(const int (&counts)[2 * CAMBI_TILE_ND + 1], int k) {
    int r = 0;
#pragma unroll
    for (int j = 0; j <= 2 * CAMBI_TILE_ND; ++j) r = j == k ? counts[j] : r;
    return r;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
cambi_cvalues_tiled(const vg_u16 *__restrict__ img, const vg_u8 *__restrict__ mask, int w, int h,
                    int mw, int mshift, int pad, int lo, int len, int nd,
                    const vg_u32 *__restrict__ fire, const float *__restrict__ recip,
                    float *__restrict__ cv, vg_u64 *__restrict__ sums) {
    __shared__ vg_u16 key[CAMBI_TILE_SIDE * CAMBI_TILE_SIDE];
    __shared__ vg_u64 red[2 * VG_BLOCK];
    const int side = CAMBI_TILE + 2 * pad;
    const int ty = (int)blockIdx.y * CAMBI_TILE - pad, tx = (int)blockIdx.x * CAMBI_TILE - pad;
    for (int k = vg_tid(); k < side * side; k += VG_BLOCK) {
        const int yy = ty + k / side, xx = tx + k % side;
        vg_u32 kv = CAMBI_NO_KEY;
        if (yy >= 0 && yy < h && xx >= 0 && xx < w) {
            const vg_u32 u = img[(vg_i64)yy * w + xx];
            if (mask[((vg_i64)yy << mshift) * mw + ((vg_i64)xx << mshift)] &&
                u - (vg_u32)lo < (vg_u32)len)
                kv = u;
        }
        key[k] = (vg_u16)kv;
    }
    __syncthreads();
    const int oy = vg_tid() / CAMBI_TILE, ox = vg_tid() % CAMBI_TILE;
    const int y = (int)blockIdx.y * CAMBI_TILE + oy, x = (int)blockIdx.x * CAMBI_TILE + ox;
    float c = 0.0f;
    if (y < h && x < w) {
        // The key at the centre is the pixel's value where it is masked and in band.
        const vg_u32 v = key[(oy + pad) * side + ox + pad];
        const vg_u32 bits = v != CAMBI_NO_KEY ? fire[v] : 0u;
        if (bits != 0) {
            int counts[2 * CAMBI_TILE_ND + 1];
#pragma unroll
            for (int k = 0; k <= 2 * CAMBI_TILE_ND; ++k) counts[k] = 0;
            // Field k counts value v - nd + k: d = u - (v - nd), in 0..2 nd (keys of value
            // CAMBI_NO_KEY give d > 2 nd: 65535 - 1024 - 4 > 8).
            const vg_u32 base = v - (vg_u32)nd, span = (vg_u32)(2 * nd);
            for (int r = 0; r <= 2 * pad; ++r) {
                const vg_u16 *row = key + (oy + r) * side + ox;
                vg_u64 acc = 0;
                for (int q = 0; q <= 2 * pad; ++q) {
                    const vg_u32 d = (vg_u32)row[q] - base;
                    if (d <= span) acc += 1ull << (7 * d);
                }
#pragma unroll
                for (int k = 0; k <= 2 * CAMBI_TILE_ND; ++k) counts[k] += (int)((acc >> (7 * k)) & 127u);
            }
            const int p0 = cambi_pick(counts, nd);
            for (int d = 1; d <= nd; ++d) {
                if (!((bits >> (d - 1)) & 1u)) continue;
                const int p1 = cambi_pick(counts, nd + d), p2 = cambi_pick(counts, nd - d);
                const int pm = p1 > p2 ? p1 : p2;
                const float val = (float)(CAMBI_CONTRAST_WEIGHTS[d - 1] * p0 * pm) * recip[p0 + pm];
                if (val > c) c = val;
            }
        }
        cv[(vg_i64)y * w + x] = c;
    }
    // c * 2^24 is an integer below 2^38 (cambi_cvalues): exact in double and in u64.
    vg_u64 v2[2] = {(vg_u64)((double)c * 16777216.0), c > 0.0f ? 1ull : 0ull};
    vg_block_sums<vg_u64, 2>(v2, red);
    if (vg_tid() == 0) {
        vg_atomic_add_u64(&sums[0], red[0]);
        vg_atomic_add_u64(&sums[1], red[VG_BLOCK]);
    }
}
