// vmafgpu kernels: the few names that differ between CUDA (NVRTC) and HIP (hipRTC).
//
// The kernel sources (vif.cu, adm.cu, motion.cu and the companion metrics') are one text for both toolchains. They are
// concatenated after this header and compiled at run time, without system headers. Rules the
// kernels keep so that the text stays in the common subset:
//  - no hard-coded warp (wavefront) size and no warp shuffles: block reductions go through
//    shared memory with __syncthreads() that every thread of the block reaches;
//  - every block has VG_BLOCK threads (1-D), a power of two;
//  - block sums go through vg_block_sums (one fixed tree order); integer reductions end in
//    64-bit integer atomics (atomicAdd on unsigned long long), so the result does not depend
//    on the order in which blocks finish;
//  - floating point only where libvmaf's C code has it, compiled with fmad off, no fast math,
//    IEEE division and square root (the host passes the options).

#if defined(__HIPCC_RTC__) || defined(__HIP_DEVICE_COMPILE__)
#define VG_HIP 1
#endif

typedef unsigned char vg_u8;
typedef unsigned short vg_u16;
typedef unsigned int vg_u32;
typedef unsigned long long vg_u64;
typedef short vg_i16;
typedef int vg_i32;
typedef long long vg_i64;

#define VG_BLOCK 256
#define VG_INLINE __device__ __forceinline__

// Count of leading zero bits (CUDA and HIP both provide __clz / __clzll).
VG_INLINE int vg_clz32(vg_u32 x) { return __clz((int)x); }
VG_INLINE int vg_clz64(vg_u64 x) { return __clzll((long long)x); }

VG_INLINE vg_u64 vg_atomic_add_u64(vg_u64 *p, vg_u64 v) { return atomicAdd(p, v); }

VG_INLINE int vg_tid() { return (int)threadIdx.x; }

// Reflect an index into 0..n-1 without repeating the edge sample (libvmaf's VIF padding and
// motion's mirror(): -k -> k, n-1+k -> n-1-k), then clamp: positions far outside the frame are
// only ever loaded for outputs that are discarded.
VG_INLINE int vg_mirror(int i, int n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    if (i < 0) i = 0;
    if (i >= n) i = n - 1;
    return i;
}

// Sum N values per thread over the block, value k in its own tree: stride VG_BLOCK/2, ..., 1,
// a fixed order, so a floating-point sum is the same on every run and toolchain (each value
// passes through log2(VG_BLOCK) additions). `scratch` has N * VG_BLOCK entries; afterwards
// scratch[k * VG_BLOCK] holds sum k, visible to every thread, until the next use of scratch.
// Every thread of the block must call it.
template <typename T, int N>
VG_INLINE void vg_block_sums(const T (&v)[N], T *scratch) {
    const int t = vg_tid();
#pragma unroll
    for (int k = 0; k < N; ++k) scratch[k * VG_BLOCK + t] = v[k];
    __syncthreads();
    for (int s = VG_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) {
#pragma unroll
            for (int k = 0; k < N; ++k) scratch[k * VG_BLOCK + t] += scratch[k * VG_BLOCK + t + s];
        }
        __syncthreads();
    }
}

// One value's block sum (vg_block_sums with N = 1), returned to every thread. `scratch` has
// VG_BLOCK entries. Every thread must call it.
template <typename T>
VG_INLINE T vg_block_sum(T v, T *scratch) {
    const T one[1] = {v};
    vg_block_sums<T, 1>(one, scratch);
    const T r = scratch[0];
    __syncthreads();
    return r;
}

// Inclusive scan of v over the block in thread order (Hillis-Steele: the same additions in the
// same order on every run), returned to each thread. `scratch` has VG_BLOCK entries. Every
// thread must call it.
template <typename T>
VG_INLINE T vg_block_scan(T v, T *scratch) {
    const int t = vg_tid();
    scratch[t] = v;
    __syncthreads();
    for (int off = 1; off < VG_BLOCK; off <<= 1) {
        const T a = t >= off ? scratch[t - off] : (T)0;
        __syncthreads();
        scratch[t] += a;
        __syncthreads();
    }
    const T r = scratch[t];
    __syncthreads();
    return r;
}

// Sum one 64-bit value over the block (two's complement, so signed values sum correctly) and
// add the total to *dst with one atomic. Every thread of the block must call it. `scratch` has
// VG_BLOCK entries.
VG_INLINE void vg_block_sum_atomic(vg_u64 v, vg_u64 *scratch, vg_u64 *dst) {
    const vg_u64 total = vg_block_sum(v, scratch);
    if (vg_tid() == 0) vg_atomic_add_u64(dst, total);
}

// Sum one 64-bit value over each row of a block laid out as rows of `tw` threads (tw a power
// of two dividing VG_BLOCK) and add each row's total to row_dst[row] (skipped where
// row_ok is false for that row's first thread). Every thread must call it.
VG_INLINE void vg_row_sum_atomic(vg_u64 v, int tw, vg_u64 *scratch, vg_u64 *row_dst, bool row_ok) {
    const int t = vg_tid();
    const int tx = t % tw;
    scratch[t] = v;
    __syncthreads();
    for (int s = tw / 2; s > 0; s >>= 1) {
        if (tx < s) scratch[t] += scratch[t + s];
        __syncthreads();
    }
    if (tx == 0 && row_ok) vg_atomic_add_u64(row_dst, scratch[t]);
    __syncthreads();
}
