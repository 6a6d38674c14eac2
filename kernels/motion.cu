// Integer motion: the SAD of the blurred signed difference of two consecutive reference frames,
// libvmaf 3.2.0 libvmaf/src/feature/integer_motion.c (motion_score_pipeline_8/_16), plain C path,
// as ported in src/features/motion.rs.
//
//   motion_u8 / motion_u16(const T *prev, const T *cur, MotionArgs a, u64 *sad)
//       grid ceil(w / MOT_TW) x ceil(h / MOT_TH), VG_BLOCK threads; adds the frame's SAD to
//       *sad. prev and cur are a.w x a.h, compact.

#define MOT_TW 64
#define MOT_TH 16

// Must match MotionArgs in src/backend/gpu/kernels.rs.
struct MotionArgs {
    vg_i32 w, h, bpc, pad0;
};
static_assert(sizeof(MotionArgs) == 16, "MotionArgs layout");

// libvmaf 3.2.0 integer_motion.h: filter
__constant__ vg_i32 MOT_F[5] = {3571, 16004, 26386, 16004, 3571};

template <typename T>
VG_INLINE void motion_impl(const T *__restrict__ prev, const T *__restrict__ cur,
                           const MotionArgs &a, vg_u64 *__restrict__ sad) {
    constexpr int IW = MOT_TW + 4;
    __shared__ vg_i32 s_y[MOT_TH * IW];
    __shared__ vg_u64 red[VG_BLOCK];
    const int t = vg_tid();
    const int x0 = (int)blockIdx.x * MOT_TW, y0 = (int)blockIdx.y * MOT_TH;
    const int w = a.w, h = a.h;
    const vg_i64 y_round = (vg_i64)1 << (a.bpc - 1);

    // Vertical pass on the difference, for the tile's rows and 2 mirrored columns each side.
    // |sum| <= 2^16 * 65535 < 2^32: 64-bit sums as libvmaf's 16-bit path.
    for (int idx = t; idx < MOT_TH * IW; idx += VG_BLOCK) {
        const int ly = idx / IW, lx = idx - (idx / IW) * IW;
        const int gy = y0 + ly;
        vg_i32 v = 0;
        if (gy < h) {
            const size_t gx = (size_t)vg_mirror(x0 - 2 + lx, w);
            vg_i64 acc = 0;
#pragma unroll
            for (int k = 0; k < 5; ++k) {
                const size_t row = (size_t)vg_mirror(gy - 2 + k, h) * (size_t)w;
                const vg_i64 d = (vg_i64)prev[row + gx] - (vg_i64)cur[row + gx];
                acc += (vg_i64)MOT_F[k] * d;
            }
            v = (vg_i32)((acc + y_round) >> a.bpc);
        }
        s_y[idx] = v;
    }
    __syncthreads();

    vg_u64 sum = 0;
    for (int p = t; p < MOT_TW * MOT_TH; p += VG_BLOCK) {
        const int ly = p / MOT_TW, lx = p - (p / MOT_TW) * MOT_TW;
        if (x0 + lx >= w || y0 + ly >= h) continue;
        vg_i64 acc = 0;
#pragma unroll
        for (int k = 0; k < 5; ++k) acc += (vg_i64)MOT_F[k] * s_y[ly * IW + lx + k];
        const vg_i32 v = (vg_i32)((acc + 32768) >> 16);
        sum += (vg_u64)(v < 0 ? -(vg_i64)v : (vg_i64)v);
    }
    vg_block_sum_atomic(sum, red, sad);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
motion_u8(const vg_u8 *prev, const vg_u8 *cur, MotionArgs a, vg_u64 *sad) {
    motion_impl<vg_u8>(prev, cur, a, sad);
}
extern "C" __global__ void __launch_bounds__(VG_BLOCK)
motion_u16(const vg_u16 *prev, const vg_u16 *cur, MotionArgs a, vg_u64 *sad) {
    motion_impl<vg_u16>(prev, cur, a, sad);
}

// Range check of host planes taken without a host copy (the zero-copy route, bpc 9..15): a
// sample above 2^bpc - 1 has a bit of `mask` set. The engine refuses such a frame before it
// takes it, so this runs before the frame's other kernels and the host waits for *bad.
//
//   range_u16(const u16 *a, const u16 *b, RangeArgs r, u64 *bad)
//       any grid, VG_BLOCK threads; a and b are r.n compact 2-byte samples each, 8-byte
//       aligned (device allocations); adds to *bad the number of threads that saw a sample
//       with a bit of r.mask set (0 when every sample fits).
//
// Must match RangeArgs in src/backend/gpu/kernels.rs.
struct RangeArgs {
    vg_u32 n;    // samples per plane, <= 15360 x 8640 < 2^28: no index below wraps
    vg_u32 mask; // 0xffff << bpc, in the low 16 bits
};
static_assert(sizeof(RangeArgs) == 8, "RangeArgs layout");

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
range_u16(const vg_u16 *__restrict__ a, const vg_u16 *__restrict__ b, RangeArgs r,
          vg_u64 *__restrict__ bad) {
    const vg_u64 lanes = (vg_u64)(r.mask & 0xffffu) * 0x0001000100010001ull;
    const vg_u32 step = gridDim.x * VG_BLOCK;
    const vg_u32 first = blockIdx.x * VG_BLOCK + (vg_u32)vg_tid();
    // Four samples per 8-byte word, then the last n % 4 samples one by one.
    const vg_u32 words = r.n / 4;
    const vg_u64 *a8 = (const vg_u64 *)a;
    const vg_u64 *b8 = (const vg_u64 *)b;
    vg_u64 acc = 0;
    for (vg_u32 i = first; i < words; i += step) acc |= a8[i] | b8[i];
    for (vg_u32 i = words * 4 + first; i < r.n; i += step) acc |= (vg_u64)a[i] | (vg_u64)b[i];
    if ((acc & lanes) != 0) vg_atomic_add_u64(bad, 1);
}

// MSB-aligned planes (P010: 10-bit samples 6 bits up in each word) uploaded as they are stored
// (the zero-copy route): each word shifted down in place to its sample, before any kernel of
// the frame reads the plane.
//
//   shift_u16(u16 *p, ShiftArgs a)
//       any grid, VG_BLOCK threads; p holds a.n compact 2-byte words, 8-byte aligned (a device
//       allocation); p[i] = p[i] >> a.shift for i < a.n, four words at a time.
//
// Must match ShiftArgs in src/backend/gpu/kernels.rs.
struct ShiftArgs {
    vg_u32 n;     // words, <= 2^31 (the plan's bound): no index below wraps
    vg_u32 shift; // 1..7 (16 - bpc for bpc 9..15)
};
static_assert(sizeof(ShiftArgs) == 8, "ShiftArgs layout");

extern "C" __global__ void __launch_bounds__(VG_BLOCK) shift_u16(vg_u16 *__restrict__ p, ShiftArgs a) {
    const vg_u64 lanes = (vg_u64)(0xffffu >> a.shift) * 0x0001000100010001ull;
    const vg_u32 step = gridDim.x * VG_BLOCK;
    const vg_u32 first = blockIdx.x * VG_BLOCK + (vg_u32)vg_tid();
    const vg_u32 words = a.n / 4;
    vg_u64 *p8 = (vg_u64 *)p;
    for (vg_u32 i = first; i < words; i += step) p8[i] = (p8[i] >> a.shift) & lanes;
    for (vg_u32 i = words * 4 + first; i < a.n; i += step) p[i] = (vg_u16)(p[i] >> a.shift);
}
