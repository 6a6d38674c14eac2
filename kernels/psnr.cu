// PSNR: the integer sum of squared differences of one plane, libvmaf 3.2.0
// libvmaf/src/feature/integer_psnr.c (psnr / psnr_hbd), as ported in src/features/psnr.rs.
// The host turns the SSE into dB (features::psnr::psnr_from_sse), so the GPU only has to
// produce the exact integer.
//
//   widen_u8(const u8 *src, int n, u16 *dst)
//       grid ceil(n / (4 VG_BLOCK)): dst[i] = src[i] for i < n, four a thread. 8-bit planes are
//       uploaded as bytes (half the transfer) and widened here for the kernels, which read u16
//       samples.
//   split_uv_u8(const u8 *src, int n, u16 *u, u16 *v)
//   split_uv_u16(const u16 *src, int n, u16 *u, u16 *v)
//       grid ceil(n / VG_BLOCK): u[i] = src[2i], v[i] = src[2i + 1] for i < n. Interleaved
//       chroma (NV12, P016: Cb,Cr pairs) is uploaded as it is and split here.
//   psnr_sse(const u16 *r, const u16 *d, int n, u64 *sse)
//       grid ceil(n / (VG_BLOCK * PSNR_ITEMS)) x 1, VG_BLOCK threads; adds
//       sum_{i < n} (r[i] - d[i])^2 to *sse. r and d hold n samples (a compact plane).
//
// Bounds (15360x8640, 16-bit, max difference): one square <= 65535^2 = 4294836225 < 2^32
// (u32); a thread's sum <= PSNR_ITEMS * 65535^2 < 2^35; a block's <= 2048 * 65535^2 < 2^43;
// the frame's <= 132710400 * 65535^2 ~= 5.7e17 < 2^64. Integer sums: the order of blocks
// and atomics cannot change the result.
//
// libvmaf's 8-bit path sums each row in a uint32_t; that row sum wraps only for rows wider
// than 66051 samples, which the host computes on the CPU instead (see companion.rs).

#define PSNR_ITEMS 8

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
psnr_sse(const vg_u16 *__restrict__ r, const vg_u16 *__restrict__ d, int n,
         vg_u64 *__restrict__ sse) {
    __shared__ vg_u64 red[VG_BLOCK];
    const vg_i64 base = (vg_i64)blockIdx.x * (VG_BLOCK * PSNR_ITEMS) + vg_tid();
    vg_u64 acc = 0;
#pragma unroll
    for (int k = 0; k < PSNR_ITEMS; ++k) {
        const vg_i64 i = base + (vg_i64)k * VG_BLOCK;
        if (i < n) {
            const vg_i32 e = (vg_i32)r[i] - (vg_i32)d[i];
            const vg_u32 a = (vg_u32)(e < 0 ? -e : e);
            acc += (vg_u64)(a * a);
        }
    }
    vg_block_sum_atomic(acc, red, sse);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
widen_u8(const vg_u8 *__restrict__ src, int n, vg_u16 *__restrict__ dst) {
    const vg_i64 i = 4 * ((vg_i64)blockIdx.x * VG_BLOCK + vg_tid());
    if (i >= n) return;
    // Four samples a thread: one 4-byte load and one 8-byte store where the pointers allow.
    if (i + 4 <= n && ((vg_u64)src & 3) == 0 && ((vg_u64)dst & 7) == 0) {
        const vg_u32 w = *(const vg_u32 *)(src + i);
        const vg_u32 lo = (w & 0xffu) | ((w & 0xff00u) << 8);
        const vg_u32 hi = ((w >> 16) & 0xffu) | ((w >> 8) & 0xff0000u);
        *(vg_u64 *)(dst + i) = ((vg_u64)hi << 32) | lo;
        return;
    }
    for (vg_i64 k = i; k < i + 4 && k < n; ++k) dst[k] = (vg_u16)src[k];
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
split_uv_u8(const vg_u8 *__restrict__ src, int n, vg_u16 *__restrict__ u,
            vg_u16 *__restrict__ v) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i < n) {
        u[i] = (vg_u16)src[2 * i];
        v[i] = (vg_u16)src[2 * i + 1];
    }
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
split_uv_u16(const vg_u16 *__restrict__ src, int n, vg_u16 *__restrict__ u,
             vg_u16 *__restrict__ v) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i < n) {
        u[i] = src[2 * i];
        v[i] = src[2 * i + 1];
    }
}
