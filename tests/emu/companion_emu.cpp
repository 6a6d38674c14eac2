// CPU emulation of the companion kernel text (kernels/psnr.cu, ssim.cu, ciede.cu, psnr_hvs.cu,
// cambi.cu),
// for tests/companion_emulated.rs. The same scheme as kernel_emu.cpp: a block's VG_BLOCK threads
// are real threads, __syncthreads() is a barrier, __shared__ memory is a static (blocks run one
// at a time). It runs a companion plan (src/backend/cuda/companion.rs) on one arena and prints
// the read-back region to stdout.
//
// Note: the CUDA math functions (sqrt, pow, sin, ...) resolve to the host's libm here, so for
// CIEDE2000 (which calls pow/sin/cos/exp/atan2) emulation checks the arithmetic and the plan, not
// CUDA's libm.
//
// Input (stdin, little-endian):
//   u64 arena_bytes; u32 nzero; nzero x { u64 off, bytes }
//   u32 nup; nup x { u64 off, bytes; bytes of data }
//   u32 nlaunch; nlaunch x { u32 name_len; name; u32 gx, gy; u32 nargs;
//                            nargs x { u8 kind; 0: u64 off | 1: i32 | 2: f32 } }
//   u64 out_off; u64 out_bytes
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

struct EmuDim3 { unsigned x, y, z; };
static thread_local EmuDim3 threadIdx;
static EmuDim3 blockIdx;
static std::barrier<> *g_sync;

#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__ static
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__
static inline void __syncthreads() { g_sync->arrive_and_wait(); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

// IEEE round-to-nearest operations (kernels/speed.cu): plain C++ operations here, built with
// -ffp-contract=off.
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }

static inline double __hiloint2double(int hi, int lo) {
    const unsigned long long b =
        ((unsigned long long)(unsigned)hi << 32) | (unsigned long long)(unsigned)lo;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

#include "../../kernels/compat.h"
#include "../../kernels/psnr.cu"
#include "../../kernels/ssim.cu"
#include "../../kernels/psnr_hvs.cu"
#include "../../kernels/ciede.cu"
#include "../../kernels/cambi.cu"
#include "../../kernels/speed.cu"

static void fail(const char *m) { fprintf(stderr, "companion_emu: %s\n", m); exit(2); }

template <typename T> static T rd(FILE *f) {
    T v;
    if (fread(&v, sizeof v, 1, f) != 1) fail("short input");
    return v;
}

struct Pool {
    std::vector<std::thread> th;
    std::barrier<> start{VG_BLOCK + 1}, end{VG_BLOCK + 1};
    std::function<void()> fn;
    bool quit = false;
    Pool() {
        for (unsigned t = 0; t < VG_BLOCK; ++t)
            th.emplace_back([this, t] {
                threadIdx = {t, 0, 0};
                for (;;) {
                    start.arrive_and_wait();
                    if (quit) return;
                    fn();
                    end.arrive_and_wait();
                }
            });
    }
    void run(unsigned gx, unsigned gy, std::function<void()> f) {
        fn = std::move(f);
        for (unsigned by = 0; by < gy; ++by)
            for (unsigned bx = 0; bx < gx; ++bx) {
                blockIdx = {bx, by, 0};
                start.arrive_and_wait();
                end.arrive_and_wait();
            }
    }
    ~Pool() {
        quit = true;
        start.arrive_and_wait();
        for (auto &t : th) t.join();
    }
};

struct ArgV { int kind; void *ptr; int32_t i; float f; };

int main() {
    FILE *f = stdin;
    uint64_t arena_bytes = rd<uint64_t>(f);
    // Poison: every byte a kernel reads must have been uploaded, zeroed or written before.
    std::vector<unsigned char> arena(arena_bytes + 64, 0xA5);
    uint32_t nz = rd<uint32_t>(f);
    for (uint32_t i = 0; i < nz; ++i) {
        uint64_t off = rd<uint64_t>(f), n = rd<uint64_t>(f);
        if (off + n > arena_bytes) fail("zero region out of range");
        memset(arena.data() + off, 0, n);
    }
    uint32_t nu = rd<uint32_t>(f);
    for (uint32_t i = 0; i < nu; ++i) {
        uint64_t off = rd<uint64_t>(f), n = rd<uint64_t>(f);
        if (off + n > arena_bytes) fail("upload out of range");
        if (fread(arena.data() + off, 1, n, f) != n) fail("short upload");
    }
    std::barrier<> sync(VG_BLOCK);
    g_sync = &sync;
    Pool pool;
    uint32_t nl = rd<uint32_t>(f);
    for (uint32_t l = 0; l < nl; ++l) {
        uint32_t len = rd<uint32_t>(f);
        std::string name(len, '\0');
        if (fread(name.data(), 1, len, f) != len) fail("short name");
        uint32_t gx = rd<uint32_t>(f), gy = rd<uint32_t>(f);
        uint32_t na = rd<uint32_t>(f);
        std::vector<ArgV> a(na);
        for (uint32_t k = 0; k < na; ++k) {
            a[k].kind = rd<uint8_t>(f);
            if (a[k].kind == 0) {
                uint64_t off = rd<uint64_t>(f);
                if (off > arena_bytes) fail("pointer out of range");
                a[k].ptr = arena.data() + off;
            } else if (a[k].kind == 1) {
                a[k].i = rd<int32_t>(f);
            } else {
                a[k].f = rd<float>(f);
            }
        }
        auto P = [&](int i) { return a[i].ptr; };
        auto I = [&](int i) { return a[i].i; };
        auto F = [&](int i) { return a[i].f; };
        (void)F;
        std::function<void()> fn;
        if (name == "psnr_sse") { fn = [=] { psnr_sse((const vg_u16 *)P(0), (const vg_u16 *)P(1), I(2), (vg_u64 *)P(3)); }; }
        else if (name == "ssim_load") { fn = [=] { ssim_load((const vg_u16 *)P(0), I(1), I(2), I(3), I(4), F(5), I(6), I(7), (float *)P(8)); }; }
        else if (name == "ssim_decimate_lpf") { fn = [=] { ssim_decimate_lpf((const float *)P(0), I(1), I(2), I(3), I(4), (float *)P(5)); }; }
        else if (name == "ssim_hconv") { fn = [=] { ssim_hconv((const float *)P(0), (const float *)P(1), I(2), I(3), (float *)P(4)); }; }
        else if (name == "ssim_terms") { fn = [=] { ssim_terms((const float *)P(0), I(1), I(2), F(3), F(4), F(5), (double *)P(6), (double *)P(7), (float *)P(8), (double *)P(9)); }; }
        else if (name == "ssim_terms_cs") { fn = [=] { ssim_terms_cs((const float *)P(0), I(1), I(2), F(3), F(4), (double *)P(5), (float *)P(6), (double *)P(7)); }; }
        else if (name == "psnr_hvs_blocks") { fn = [=] { psnr_hvs_blocks((const vg_u16 *)P(0), (const vg_u16 *)P(1), I(2), I(3), (const float *)P(4), (const float *)P(5), (float *)P(6)); }; }
        else if (name == "widen_u8") { fn = [=] { widen_u8((const vg_u8 *)P(0), I(1), (vg_u16 *)P(2)); }; }
        else if (name == "split_uv_u8") { fn = [=] { split_uv_u8((const vg_u8 *)P(0), I(1), (vg_u16 *)P(2), (vg_u16 *)P(3)); }; }
        else if (name == "split_uv_u16") { fn = [=] { split_uv_u16((const vg_u16 *)P(0), I(1), (vg_u16 *)P(2), (vg_u16 *)P(3)); }; }
        else if (name == "hvs_chunk_sums") { fn = [=] { hvs_chunk_sums((const float *)P(0), I(1), (double *)P(2)); }; }
        else if (name == "hvs_prefix") { fn = [=] { hvs_prefix((const float *)P(0), I(1), (double *)P(2)); }; }
        else if (name == "hvs_chunk_bands") { fn = [=] { hvs_chunk_bands((const float *)P(0), I(1), (double *)P(2)); }; }
        else if (name == "hvs_seq") { fn = [=] { hvs_seq((const float *)P(0), (const double *)P(1), I(2), (const float *)P(3), (const double *)P(4), I(5), (const float *)P(6), (const double *)P(7), I(8), (float *)P(9)); }; }
        else if (name == "ciede_pixels") { fn = [=] { ciede_pixels((const vg_u16 *)P(0), (const vg_u16 *)P(1), (const vg_u16 *)P(2), (const vg_u16 *)P(3), (const vg_u16 *)P(4), (const vg_u16 *)P(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), (double *)P(13)); }; }
        else if (name == "ciede_lab_table") { fn = [=] { ciede_lab_table((CiedeEntry *)P(0)); }; }
        else if (name == "ciede_pixels_table") { fn = [=] { ciede_pixels_table((const vg_u16 *)P(0), (const vg_u16 *)P(1), (const vg_u16 *)P(2), (const vg_u16 *)P(3), (const vg_u16 *)P(4), (const vg_u16 *)P(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), (const CiedeEntry *)P(13), (double *)P(14)); }; }
        else if (name == "cambi_pre") { fn = [=] { cambi_pre((const vg_u16 *)P(0), I(1), I(2), (const vg_u32 *)P(3), (const vg_u32 *)P(4), I(5), I(6), (vg_u16 *)P(7)); }; }
        else if (name == "cambi_dither") { fn = [=] { cambi_dither((const vg_u16 *)P(0), I(1), I(2), (vg_u16 *)P(3)); }; }
        else if (name == "cambi_mode") { fn = [=] { cambi_mode((const vg_u16 *)P(0), I(1), I(2), I(3), (vg_u16 *)P(4)); }; }
        else if (name == "cambi_mask") { fn = [=] { cambi_mask((const vg_u16 *)P(0), I(1), I(2), I(3), I(4), (vg_u8 *)P(5)); }; }
        else if (name == "cambi_cvalues") { fn = [=] { cambi_cvalues((const vg_u16 *)P(0), (const vg_u8 *)P(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), (const vg_u32 *)P(10), (const float *)P(11), (float *)P(12), (vg_u64 *)P(13)); }; }
        else if (name == "cambi_cvalues_tiled") { fn = [=] { cambi_cvalues_tiled((const vg_u16 *)P(0), (const vg_u8 *)P(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), (const vg_u32 *)P(10), (const float *)P(11), (float *)P(12), (vg_u64 *)P(13)); }; }
        else if (name == "speed_load") { fn = [=] { speed_load((const vg_u16 *)P(0), I(1), I(2), (float *)P(3)); }; }
        else if (name == "speed_prescale") { fn = [=] { speed_prescale((const float *)P(0), I(1), I(2), I(3), I(4), I(5), I(6), (const int *)P(7), (const float *)P(8), (const int *)P(9), (const float *)P(10), (float *)P(11)); }; }
        else if (name == "speed_filter_v") { fn = [=] { speed_filter_v((const float *)P(0), I(1), I(2), (const float *)P(3), I(4), (const int *)P(5), I(6), (const int *)P(7), (float *)P(8)); }; }
        else if (name == "speed_filter_h") { fn = [=] { speed_filter_h((const float *)P(0), I(1), I(2), (const float *)P(3), I(4), I(5), (const int *)P(6), (float *)P(7)); }; }
        else if (name == "speed_local_mean") { fn = [=] { speed_local_mean((const float *)P(0), I(1), I(2), I(3), (const float *)P(4), (float *)P(5)); }; }
        else if (name == "speed_means") { fn = [=] { speed_means((const float *)P(0), I(1), I(2), I(3), I(4), (float *)P(5)); }; }
        else if (name == "speed_cov") { fn = [=] { speed_cov((const float *)P(0), I(1), I(2), I(3), I(4), (const float *)P(5), (float *)P(6)); }; }
        else fail(("unknown kernel " + name).c_str());
        pool.run(gx, gy, fn);
    }
    uint64_t ob = rd<uint64_t>(f), on = rd<uint64_t>(f);
    if (ob + on > arena_bytes) fail("bad output region");
    fwrite(arena.data() + ob, 1, on, stdout);
    return 0;
}
