// PSNR-HVS: the per-block work of libvmaf 3.2.0
// libvmaf/src/feature/third_party/xiph/psnr_hvs.c (calc_psnrhvs, od_bin_fdct8x8), as ported in
// src/features/psnr_hvs.rs (block_terms).
//
// Eight threads per 8x8 block (blocks every 7 samples while the block fits), HVS_GROUPS = 32
// blocks to a thread block: the integer Daala DCT of both blocks (32-bit int, which no
// intermediate leaves for samples of up to 12 bits: see the i64 test in psnr_hvs.rs) a column
// per thread, the float block statistics and masking in the C code's order (each float chain on
// one thread), and the block's 64 float terms. The plane's score is a sequential float sum over the blocks in
// raster order (features::psnr_hvs::PlaneSum): hvs_chunk_sums, hvs_chunk_bands and hvs_seq
// below compute that very sum, bit for bit (where they cannot, they say so and the host adds the
// terms in order).
//
//   psnr_hvs_blocks(const u16 *r, const u16 *d, int w, int h, const float *csf,
//                   const float *mask, float *terms)
//       grid ceil(bx * by / HVS_GROUPS), bx = ceil((w - 7) / 7), by = ceil((h - 7) / 7), w, h >= 8;
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

// hvs_variance_ratio's float chains (psnr_hvs.rs block_terms), each in the C code's order over
// the block's samples b (8x8, row-major): the block mean and its squared deviations, and the
// four 4x4 sub-block means and theirs (sub-block ((i & 12) >> 2) + ((j & 12) >> 1) of sample
// (i, j)). The C code runs them in one loop with separate accumulators: each accumulator sees
// the same additions in the same order here.
VG_INLINE float hvs_block_var(const vg_i32 *b) {
    float gmean = 0.0f;
    for (int i = 0; i < 64; ++i) gmean += (float)b[i];
    gmean /= 64.0f;
    float gvar = 0.0f;
    for (int i = 0; i < 64; ++i) {
        const float v = (float)b[i];
        gvar += (v - gmean) * (v - gmean);
    }
    gvar *= 1.0f / 63.0f * 64.0f;
    return gvar;
}

// The sum vars[0] + vars[1] + vars[2] + vars[3] of the sub-block variances (left to right).
VG_INLINE float hvs_sub_vars(const vg_i32 *b) {
    float means[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) means[((i & 12) >> 2) + ((j & 12) >> 1)] += (float)b[i * 8 + j];
    for (int k = 0; k < 4; ++k) means[k] /= 16.0f;
    float vars[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            const int sub = ((i & 12) >> 2) + ((j & 12) >> 1);
            const float v = (float)b[i * 8 + j];
            vars[sub] += (v - means[sub]) * (v - means[sub]);
        }
    for (int k = 0; k < 4; ++k) vars[k] *= 1.0f / 15.0f * 16.0f;
    return vars[0] + vars[1] + vars[2] + vars[3];
}

// The masking sum over the DCT coefficients but the DC one, in raster order: an int product
// below 2^31 up to 12 bits, times the float mask.
VG_INLINE float hvs_mask_sum(const vg_i32 *c, const float *mask) {
    float m = 0.0f;
    for (int i = 1; i < 64; ++i) m += (float)((vg_i64)c[i] * c[i]) * mask[i];
    return m;
}

// Threads per 8x8 block: thread c of a group loads column c, transforms column c (then column
// c of the transposed result) and writes column c's terms; the float chains run on threads 0-5
// in one phase after the transform (the variance chains read the samples, kept apart from the
// transform; within a warp the two kinds of chain still diverge and run one after the other).
#define HVS_GROUP 8
#define HVS_GROUPS (VG_BLOCK / HVS_GROUP)
// A group's 64 coefficients in shared memory, padded so that the groups of a warp reading a
// column fall in distinct banks.
#define HVS_PAD 72
// Floats of a group's statistics in shared memory (psnr_hvs_blocks).
#define HVS_STATS 8

// One column pass of od_bin_fdct8x8 over a group's block b, in place: thread c transforms
// column c into row c. Every thread of the block must call it.
VG_INLINE void hvs_fdct_pass(vg_i32 *b, int c) {
    vg_i32 y[8];
    hvs_fdct8(y, b + c, 8);
    __syncthreads();
    for (int k = 0; k < 8; ++k) b[c * 8 + k] = y[k];
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK, 4)
psnr_hvs_blocks(const vg_u16 *__restrict__ r, const vg_u16 *__restrict__ d, int w, int h,
                const float *__restrict__ csf, const float *__restrict__ mask,
                float *__restrict__ terms) {
    // A group's samples (qs, qd) and their transforms (ps, pd).
    __shared__ vg_i32 cqs[HVS_GROUPS * HVS_PAD], cqd[HVS_GROUPS * HVS_PAD];
    __shared__ vg_i32 cs[HVS_GROUPS * HVS_PAD], cd[HVS_GROUPS * HVS_PAD];
    __shared__ float st[HVS_GROUPS * HVS_STATS];
    const int bx = (w - 7 + 6) / 7, by = (h - 7 + 6) / 7;
    const int g = vg_tid() / HVS_GROUP, c = vg_tid() % HVS_GROUP;
    const vg_i64 k = (vg_i64)blockIdx.x * HVS_GROUPS + g;
    const bool valid = k < (vg_i64)bx * by;
    vg_i32 *qs = cqs + g * HVS_PAD, *qd = cqd + g * HVS_PAD;
    vg_i32 *ps = cs + g * HVS_PAD, *pd = cd + g * HVS_PAD;
    float *stat = st + g * HVS_STATS;
    if (valid) {
        // Thread c loads column c of the block's rows, so that a warp's load reads its four
        // blocks' row j side by side (consecutive addresses) rather than 32 rows.
        const int x0 = (int)(k % bx) * 7, y0 = (int)(k / bx) * 7;
        const vg_i64 o = (vg_i64)y0 * w + x0 + c;
        for (int j = 0; j < 8; ++j) {
            qs[j * 8 + c] = (vg_i32)r[o + (vg_i64)j * w];
            qd[j * 8 + c] = (vg_i32)d[o + (vg_i64)j * w];
        }
    } else {
        // Past the last block: zeros, which the transform passes (reached by every thread)
        // read harmlessly.
        for (int j = 0; j < 8; ++j) qs[j * 8 + c] = qd[j * 8 + c] = 0;
    }
    __syncthreads();
    // od_bin_fdct8x8 of both blocks: the samples' columns into the transposed blocks ps, pd,
    // then their columns in place.
    {
        vg_i32 y[8];
        hvs_fdct8(y, qs + c, 8);
        for (int j = 0; j < 8; ++j) ps[c * 8 + j] = y[j];
        hvs_fdct8(y, qd + c, 8);
        for (int j = 0; j < 8; ++j) pd[c * 8 + j] = y[j];
    }
    __syncthreads();
    hvs_fdct_pass(ps, c);
    hvs_fdct_pass(pd, c);
    // The float chains, in one phase: threads 0-3 the variance ratios' (hvs_variance_ratio:
    // stat[0..4] = block variance and summed sub-block variances of r, then of d, from the
    // samples), threads 4-5 the masking sums of r and d (stat[4], stat[5], from the
    // coefficients).
    if (valid && c < 4) {
        const vg_i32 *b = c < 2 ? qs : qd;
        stat[c] = (c & 1) == 0 ? hvs_block_var(b) : hvs_sub_vars(b);
    } else if (valid && c < 6) {
        stat[c] = hvs_mask_sum(c == 4 ? ps : pd, mask);
    }
    __syncthreads();
    if (valid && c < 2) {
        // The ratio of the summed sub-block variances to the block's variance (0 stays 0),
        // then the block's mask (stat[6], stat[7]).
        float gvar = stat[2 * c];
        if (gvar > 0.0f) gvar = stat[2 * c + 1] / gvar;
        const float m = stat[4 + c];
        stat[6 + c] = (float)(sqrt((double)(m * gvar)) / 32.0);
    }
    __syncthreads();
    if (!valid) return;
    float s_mask = stat[6];
    const float d_mask = stat[7];
    if (d_mask > s_mask) s_mask = d_mask;
    // Thread c writes the terms of column c (term q = 8 j + c), so that a warp's store writes
    // its blocks' row j side by side.
    float *out = terms + k * 64;
    for (int j = 0; j < 8; ++j) {
        const int q = j * 8 + c;
        vg_i64 e = (vg_i64)ps[q] - (vg_i64)pd[q];
        float err = (float)(e < 0 ? -e : e);
        if (q != 0) {
            const float t = s_mask / mask[q];
            err = err < t ? 0.0f : err - t;
        }
        const float cf = csf[q];
        out[q] = (err * cf) * (err * cf);
    }
}

// ---------------------------------------------------------------------------------------------
// The plane's sequential float sum, on the GPU, bit for bit.
//
// calc_psnrhvs adds the 64 terms of each block, blocks in raster order, into one float `ret`
// starting at 0. Every term is a square, so it is >= 0 (+0 included), and the partial sums only
// grow. While the partial sum s lies in the binade [2^e, 2^(e+1)) (or below 2^-125, e = -126:
// the subnormal grid), the floats there are the multiples of q = 2^(e-23), s = k q, and
// fl(s + x) = (k + r) q with r = round(x / q) to nearest, as long as k + r <= 2^24 - 1 (the sum
// stays in the binade) and x / q is not a tie (a fraction of exactly 1/2, which rounds to even
// and so depends on k). Within a binade the float sum is therefore an integer sum of the
// rounded terms, which blocks can compute in parallel; only the few steps that leave a binade,
// and ties, need the float addition itself.
//
//   work holds, for nch = ceil(n / HVS_CHUNK) chunks: nch doubles (chunk sums), nch doubles
//   (their exclusive prefix sums), then HVS_ROW u64 per chunk.
//   hvs_chunk_sums(const float *terms, int n, double *work)
//       grid nch: work[c] = the double sum of chunk c's terms (HVS_CHUNK terms, the last chunk
//       shorter), a tree sum over the block; only a guide (see hvs_chunk_bands).
//   hvs_prefix(const float *terms, int n, double *work)
//       grid 1: work[nch + c] = work[0] + ... + work[c - 1] (each thread a run of chunks, the
//       runs' totals scanned over the block); a guide only.
//   hvs_chunk_bands(const float *terms, int n, double *work)
//       grid nch: for chunk c, the binades e = b_c + j, j < HVS_BANDS, with b_c placed below
//       the binade of the chunk's starting sum as estimated by work[nch + c] (any b_c is
//       correct; a good one lets more chunks be added as integers). Writes HVS_ROW u64 per
//       chunk: b_c (as a signed value),
//       then per binade the sum of the rounded terms (each capped at 2^26), then per binade the
//       number of ties, then a flag: 1 if a term is negative or not finite (the GPU sum then
//       gives up and the host adds the terms).
//   hvs_seq(const float *t0, const double *w0, int n0, ... t2, w2, n2, float *out)
//       grid 3 (one block per plane): the sequential float sum of plane p's n_p terms, from the
//       tables above; out[2p] = the sum, out[2p+1] = 1.0 where it is valid (0.0: the host adds
//       the terms).

#define HVS_PER_THREAD 8
#define HVS_CHUNK (VG_BLOCK * HVS_PER_THREAD)
#define HVS_BANDS 8
#define HVS_BELOW 6
#define HVS_ROW (2 + 2 * HVS_BANDS)
// hvs_chunk_bands' block sums: HVS_BANDS rounded sums, the tie counts packed four binades to a
// word, the bad flag.
#define HVS_SUMS (HVS_BANDS + HVS_BANDS / 4 + 1)
#if HVS_BANDS % 4 != 0
#error "HVS_BANDS must be a multiple of 4 (tie counts are packed four to a word)"
#endif
#define HVS_RCAP (1ull << 26)
#define HVS_KMAX ((1ull << 24) - 1)

// The binade of s >= 0 (subnormals and zero: -126) and s / 2^(e-23).
VG_INLINE int hvs_binade(float s, vg_u64 *k) {
    const vg_u32 b = __float_as_uint(s);
    const int ex = (int)((b >> 23) & 0xff);
    const vg_u32 m = b & 0x7fffff;
    if (ex == 0) {
        *k = m;
        return -126;
    }
    *k = (vg_u64)(m | 0x800000);
    return ex - 127;
}

// x >= 0 taken apart: x = m * 2^(*ex2), m < 2^24 (0 for +0).
VG_INLINE vg_u32 hvs_split(float x, int *ex2) {
    const vg_u32 b = __float_as_uint(x);
    const int ex = (int)((b >> 23) & 0xff);
    const vg_u32 m = b & 0x7fffff;
    if (ex == 0) {
        *ex2 = -149;
        return m;
    }
    *ex2 = ex - 150;
    return m | 0x800000;
}

// m / 2^d rounded to nearest (m < 2^24), capped at HVS_RCAP; *tie when the fraction is exactly
// 1/2. 32-bit arithmetic: shifts below 32, results at most 2^26.
VG_INLINE vg_u32 hvs_round_m(vg_u32 m, int d, bool *tie) {
    *tie = false;
    if (m == 0) return 0;
    if (d <= 0) return -d >= 3 ? (vg_u32)HVS_RCAP : m << (-d);  // m << 2 < 2^26 = HVS_RCAP
    if (d > 25) return 0;  // m < 2^24 < 2^(d-1): below half a step
    const vg_u32 rem = m & ((1u << d) - 1), half = 1u << (d - 1);
    *tie = rem == half;
    return (m >> d) + (rem > half ? 1u : 0u);  // at most 2^24
}

// x / 2^(e-23) rounded to nearest (x >= 0 finite), capped at HVS_RCAP; *tie when the fraction
// is exactly 1/2.
VG_INLINE vg_u32 hvs_round(float x, int e, bool *tie) {
    int ex2;
    const vg_u32 m = hvs_split(x, &ex2);
    return hvs_round_m(m, (e - 23) - ex2, tie);
}

// k q as a float (k <= 2^24 - 1, exact).
VG_INLINE float hvs_value(vg_u64 k, int e) { return ldexpf((float)k, e - 23); }

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
hvs_chunk_sums(const float *__restrict__ terms, int n, double *__restrict__ work) {
    __shared__ double red[VG_BLOCK];
    const int t = vg_tid();
    const vg_i64 base = (vg_i64)blockIdx.x * HVS_CHUNK;
    double v = 0.0;
    for (int i = 0; i < HVS_PER_THREAD; ++i) {
        const vg_i64 g = base + (vg_i64)i * VG_BLOCK + t;
        if (g < n) v += (double)terms[g];
    }
    const double total = vg_block_sum(v, red);
    if (t == 0) work[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
hvs_prefix(const float *__restrict__ terms, int n, double *__restrict__ work) {
    __shared__ double red[VG_BLOCK];
    (void)terms;
    const int t = vg_tid();
    const int nch = (n + HVS_CHUNK - 1) / HVS_CHUNK;
    const int per = (nch + VG_BLOCK - 1) / VG_BLOCK;
    const int lo = t * per < nch ? t * per : nch;
    const int hi = lo + per < nch ? lo + per : nch;
    double mine = 0.0;
    for (int c = lo; c < hi; ++c) mine += work[c];
    // Scan of the runs' totals; exclusive: the inclusive scan of the runs before (not
    // incl - mine, which loses a small prefix next to a large run).
    const double incl = vg_block_scan(mine, red);
    red[t] = incl;
    __syncthreads();
    double run = t > 0 ? red[t - 1] : 0.0;
    for (int c = lo; c < hi; ++c) {
        work[nch + c] = run;
        run += work[c];
    }
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
hvs_chunk_bands(const float *__restrict__ terms, int n, double *__restrict__ work) {
    __shared__ vg_u64 ured[HVS_SUMS * VG_BLOCK];
    const int t = vg_tid();
    const int nch = (n + HVS_CHUNK - 1) / HVS_CHUNK;
    const int c = (int)blockIdx.x;
    // The estimated start: the sum of the chunks before (a guide only).
    const double start = work[nch + c];
    int b = -126;
    if (start > 0.0 && start < 3.0e38) {
        vg_u64 k0;
        b = hvs_binade((float)start, &k0) - HVS_BELOW;
        if (b < -126) b = -126;
    }
    vg_u64 *row = (vg_u64 *)(work + 2 * (vg_i64)nch) + (vg_i64)c * HVS_ROW;
    float x[HVS_PER_THREAD];
    vg_u64 bad = 0;
    for (int i = 0; i < HVS_PER_THREAD; ++i) {
        const vg_i64 g = (vg_i64)c * HVS_CHUNK + (vg_i64)i * VG_BLOCK + t;
        x[i] = g < n ? terms[g] : 0.0f;
        // Negative, infinite or NaN (a square is none of these).
        if (!(x[i] >= 0.0f && x[i] <= 3.4028234663852886e38f)) bad = 1;
    }
    // This thread's rounded sums per binade (hvs_round of each term at the binades b + j, the
    // term taken apart once; each at most HVS_PER_THREAD * 2^26 = 2^29: 32-bit), then its tie
    // counts (at most HVS_PER_THREAD per binade, so at most HVS_CHUNK = 2^11 over the block:
    // 16-bit fields, four binades to a word), then `bad`.
    vg_u64 v[HVS_SUMS];
#pragma unroll
    for (int j = 0; j < HVS_SUMS; ++j) v[j] = 0;
    vg_u32 s32[HVS_BANDS];
#pragma unroll
    for (int j = 0; j < HVS_BANDS; ++j) s32[j] = 0;
    // Bit i: term i needs hvs_round_m's general cases (a binade at or above the term's last
    // bit), added in a second loop that reloads it.
    vg_u32 slow = 0;
#pragma unroll
    for (int i = 0; i < HVS_PER_THREAD; ++i) {
        int ex2;
        const vg_u32 m = hvs_split(x[i] >= 0.0f ? x[i] : 0.0f, &ex2);
        // The shift of binade b + j is dd + j.
        const int dd = (b - 23) - ex2;
        if (m == 0) continue;
        if (dd < 1) {
            slow |= 1u << i;
            continue;
        }
        // Every binade shifts right (the usual case: terms far below the sum), where
        // hvs_round_m(m, d) = (m >> d) + (rem > half) = ((m - 1) + 2^(d-1)) >> d, which is
        // (w + 2^j) >> (j + 1) with w = (m - 1) >> (dd - 1) (nested floor divisions; w = 0
        // once dd - 1 >= 24 > log2(m)). A tie (rem == half: bit d-1 set, those below clear) is
        // d - 1 == ctz(m), so at most one binade ties: j = ctz(m) + 1 - dd.
        const vg_u32 w = dd - 1 >= 24 ? 0u : (m - 1) >> (dd - 1);
#pragma unroll
        for (int j = 0; j < HVS_BANDS; ++j) s32[j] += (w + (1u << j)) >> (j + 1);
        const int jt = (__ffs((int)m) - 1) + 1 - dd;
        const vg_u64 one = (jt >= 0 && jt < HVS_BANDS) ? 1ull << (16 * (jt & 3)) : 0ull;
        // Unconditional adds at static indices, so that v stays in registers.
#pragma unroll
        for (int q = 0; q < HVS_BANDS / 4; ++q) v[HVS_BANDS + q] += (jt >> 2) == q ? one : 0ull;
    }
#pragma unroll 1
    for (int i = 0; i < HVS_PER_THREAD; ++i) {
        if (((slow >> i) & 1u) == 0) continue;
        int ex2;
        const float xi = terms[(vg_i64)c * HVS_CHUNK + (vg_i64)i * VG_BLOCK + t];
        const vg_u32 m = hvs_split(xi, &ex2);
#pragma unroll
        for (int j = 0; j < HVS_BANDS; ++j) {
            bool tie;
            s32[j] += hvs_round_m(m, (b + j - 23) - ex2, &tie);
            if (tie) v[HVS_BANDS + j / 4] += 1ull << (16 * (j % 4));
        }
    }
#pragma unroll
    for (int j = 0; j < HVS_BANDS; ++j) v[j] = s32[j];
    v[HVS_SUMS - 1] = bad;
    vg_block_sums<vg_u64, HVS_SUMS>(v, ured);
    if (t < HVS_BANDS) {
        row[1 + t] = ured[t * VG_BLOCK];
        row[1 + HVS_BANDS + t] = (ured[(HVS_BANDS + t / 4) * VG_BLOCK] >> (16 * (t % 4))) & 0xffff;
    }
    if (t == 0) {
        row[0] = (vg_u64)(vg_i64)b;
        row[1 + 2 * HVS_BANDS] = ured[(HVS_SUMS - 1) * VG_BLOCK];
    }
}

// Minimum of v over the block; every thread must call it.
VG_INLINE int hvs_min(int v, int *s) {
    const int t = vg_tid();
    s[t] = v;
    __syncthreads();
    for (int st = VG_BLOCK / 2; st > 0; st >>= 1) {
        if (t < st && s[t + st] < s[t]) s[t] = s[t + st];
        __syncthreads();
    }
    const int r = s[0];
    __syncthreads();
    return r;
}

// One plane's sum (all threads of the block; control flow depends only on values every thread
// holds alike).
VG_INLINE void hvs_seq_plane(const float *terms, const double *work, int n, float *out) {
    __shared__ vg_u64 sc[VG_BLOCK];
    __shared__ int mn[VG_BLOCK];
    __shared__ float xs[HVS_CHUNK];
    __shared__ vg_u64 incl_at[2];
    const int t = vg_tid();
    const int nch = (n + HVS_CHUNK - 1) / HVS_CHUNK;
    const vg_u64 *rows = (const vg_u64 *)(work + 2 * (vg_i64)nch);
    float s = 0.0f;
    int c = 0;
    bool ok = true;
    while (c < nch && ok) {
        // Whole chunks c, c+1, ... (up to VG_BLOCK at a time) while they stay in s's binade.
        {
            vg_u64 k;
            const int e = hvs_binade(s, &k);
            const int cc = c + t;
            bool valid = false;
            vg_u64 r = 0;
            if (cc < nch) {
                const vg_u64 *row = rows + (vg_i64)cc * HVS_ROW;
                const int j = e - (int)(vg_i64)row[0];
                if (s == 0.0f) {
                    // From 0 only chunks of zeros can be skipped (a first non-zero term is
                    // added exactly, not rounded).
                    valid = work[cc] == 0.0 && row[1 + 2 * HVS_BANDS] == 0;
                } else if (j >= 0 && j < HVS_BANDS) {
                    r = row[1 + j];
                    valid = row[1 + HVS_BANDS + j] == 0 && row[1 + 2 * HVS_BANDS] == 0;
                }
            }
            const vg_u64 incl = vg_block_scan(valid ? r : 0, sc);
            const bool go = cc < nch && valid && k + incl <= HVS_KMAX;
            const int stop = hvs_min(go ? VG_BLOCK : t, mn);
            // `stop` chunks can be added: the new sum is (k + incl[stop - 1]) q.
            if (stop > 0) {
                if (t == stop - 1) incl_at[0] = incl;
                __syncthreads();
                const vg_u64 add = incl_at[0];
                __syncthreads();
                if (s != 0.0f) s = hvs_value(k + add, e);
                c += stop;
                if (c >= nch) break;
                if (stop == VG_BLOCK) continue;
            }
        }
        // Chunk c term by term: runs of terms within a binade as integers, the step that
        // leaves it (or a tie) as a float addition.
        {
            const vg_u64 *row = rows + (vg_i64)c * HVS_ROW;
            if (row[1 + 2 * HVS_BANDS] != 0) {
                ok = false;
                break;
            }
            for (int i = 0; i < HVS_PER_THREAD; ++i) {
                const vg_i64 g = (vg_i64)c * HVS_CHUNK + (vg_i64)t * HVS_PER_THREAD + i;
                xs[t * HVS_PER_THREAD + i] = g < n ? terms[g] : 0.0f;
            }
            __syncthreads();
            int pos = 0;
            while (pos < HVS_CHUNK) {
                if (s == 0.0f) {
                    // The first non-zero term from pos: s becomes it exactly (0 + x = x).
                    int first = HVS_CHUNK;
                    for (int i = 0; i < HVS_PER_THREAD; ++i) {
                        const int q = t * HVS_PER_THREAD + i;
                        if (q >= pos && xs[q] != 0.0f && q < first) first = q;
                    }
                    first = hvs_min(first, mn);
                    if (first == HVS_CHUNK) {
                        pos = HVS_CHUNK;
                    } else {
                        s = xs[first];
                        pos = first + 1;
                    }
                    continue;
                }
                vg_u64 k;
                const int e = hvs_binade(s, &k);
                // This thread's terms (from pos): rounded values, local prefix, first stop.
                vg_u64 r[HVS_PER_THREAD];
                bool tie[HVS_PER_THREAD];
                vg_u64 mine = 0;
                for (int i = 0; i < HVS_PER_THREAD; ++i) {
                    const int q = t * HVS_PER_THREAD + i;
                    tie[i] = false;
                    r[i] = q >= pos ? hvs_round(xs[q], e, &tie[i]) : 0;
                    mine += r[i];
                }
                const vg_u64 incl = vg_block_scan(mine, sc);
                vg_u64 run = k + (incl - mine);
                int stop = HVS_CHUNK;
                for (int i = 0; i < HVS_PER_THREAD; ++i) {
                    const int q = t * HVS_PER_THREAD + i;
                    if (q < pos) continue;
                    if (tie[i] || run + r[i] > HVS_KMAX) {
                        stop = q;
                        break;
                    }
                    run += r[i];
                }
                // The first stop in the chunk; its owner publishes the sum before it.
                const int first = hvs_min(stop, mn);
                if (first == HVS_CHUNK) {
                    if (t == VG_BLOCK - 1) incl_at[1] = k + incl;
                } else if (stop == first) {
                    incl_at[1] = run;
                }
                __syncthreads();
                const vg_u64 before = incl_at[1];
                __syncthreads();
                s = hvs_value(before, e);
                if (first == HVS_CHUNK) {
                    pos = HVS_CHUNK;
                } else {
                    s = s + xs[first];  // the float addition itself
                    pos = first + 1;
                }
            }
            __syncthreads();
            c += 1;
        }
    }
    if (t == 0) {
        out[0] = s;
        out[1] = ok ? 1.0f : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
hvs_seq(const float *__restrict__ t0, const double *__restrict__ w0, int n0,
        const float *__restrict__ t1, const double *__restrict__ w1, int n1,
        const float *__restrict__ t2, const double *__restrict__ w2, int n2,
        float *__restrict__ out) {
    const int p = (int)blockIdx.x;
    if (p == 0) hvs_seq_plane(t0, w0, n0, out);
    else if (p == 1) hvs_seq_plane(t1, w1, n1, out + 2);
    else hvs_seq_plane(t2, w2, n2, out + 4);
}
