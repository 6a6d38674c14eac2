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

static inline void __syncthreads() { g_sync->arrive_and_wait(); }
#include "device_shims.h"

#include "../../kernels/compat.h"
#include "../../kernels/psnr.cu"
#include "../../kernels/ssim.cu"
#include "../../kernels/psnr_hvs.cu"
#include "../../kernels/ciede.cu"
#include "../../kernels/cambi.cu"
#include "../../kernels/speed.cu"
#include "companion_kernels.h"

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
        std::function<void()> fn = companion_kernel(name, a);
        if (!fn) fail(("unknown kernel " + name).c_str());
        pool.run(gx, gy, fn);
    }
    uint64_t ob = rd<uint64_t>(f), on = rd<uint64_t>(f);
    if (ob + on > arena_bytes) fail("bad output region");
    fwrite(arena.data() + ob, 1, on, stdout);
    return 0;
}
