// CPU emulation of the vmafgpu kernel text (kernels/*.cu), for tests/cuda_emulated.rs.
//
// The kernels are compiled as ordinary C++: a block's VG_BLOCK threads are real threads of a
// pool, __syncthreads() is a barrier, __shared__ memory is a static (blocks run one at a time),
// atomics are host atomics. It runs the launch list of a frame plan (src/backend/gpu/plan.rs)
// written by the test, and prints nothing but the requested result bytes to stdout. Slow, but
// it lets a machine without a GPU check the kernels against the CPU reference bit for bit.
//
// Input (stdin, little-endian):
//   u32 nbufs; nbufs x { u32 id; u64 bytes; u8 has_data; [bytes of data] }
//   u32 nlaunch; nlaunch x { u32 name_len; name; u32 gx, gy; u32 nargs;
//                            nargs x { u8 kind; kind 0: u32 buf, u64 offset | 1: null |
//                                      2: u32 len, bytes } }
//   u32 out_buf; u64 out_bytes
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

struct EmuDim3 { unsigned x, y, z; };
static thread_local EmuDim3 threadIdx;
static EmuDim3 blockIdx;
static EmuDim3 gridDim;
static std::barrier<> *g_sync;

#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__ static
#define __shared__ static
#define __launch_bounds__(x)
static inline void __syncthreads() { g_sync->arrive_and_wait(); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

#include "../../kernels/compat.h"
#include "../../kernels/vif.cu"
#include "../../kernels/adm.cu"
#include "../../kernels/motion.cu"

static void fail(const char *m) { fprintf(stderr, "kernel_emu: %s\n", m); exit(2); }

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
        gridDim = {gx, gy, 1};
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

struct ArgV { int kind; void *ptr; std::vector<unsigned char> bytes; };

int main() {
    FILE *f = stdin;
    std::map<uint32_t, std::vector<unsigned char>> bufs;
    uint32_t nb = rd<uint32_t>(f);
    for (uint32_t i = 0; i < nb; ++i) {
        uint32_t id = rd<uint32_t>(f);
        uint64_t n = rd<uint64_t>(f);
        uint8_t has = rd<uint8_t>(f);
        auto &b = bufs[id];
        b.assign(n + 64, 0xA5);  // poison: every byte a kernel reads must have been written
        if (has) {
            if (fread(b.data(), 1, n, f) != n) fail("short buffer");
        }
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
                uint32_t id = rd<uint32_t>(f);
                uint64_t off = rd<uint64_t>(f);
                auto it = bufs.find(id);
                if (it == bufs.end()) fail("unknown buffer");
                a[k].ptr = it->second.data() + off;
            } else if (a[k].kind == 1) {
                a[k].ptr = nullptr;
            } else {
                uint32_t n = rd<uint32_t>(f);
                a[k].bytes.resize(n);
                if (fread(a[k].bytes.data(), 1, n, f) != n) fail("short arg");
            }
        }
        auto P = [&](int i) { return a[i].ptr; };
        auto VA = [&](int i) { VifArgs v; memcpy(&v, a[i].bytes.data(), sizeof v); return v; };
        auto AA = [&](int i) { AdmArgs v; memcpy(&v, a[i].bytes.data(), sizeof v); return v; };
        auto MA = [&](int i) { MotionArgs v; memcpy(&v, a[i].bytes.data(), sizeof v); return v; };
        auto RA = [&](int i) { RangeArgs v; memcpy(&v, a[i].bytes.data(), sizeof v); return v; };
        auto SA = [&](int i) { ShiftArgs v; memcpy(&v, a[i].bytes.data(), sizeof v); return v; };
        std::function<void()> fn;
        if (name == "vif_s0_u8") { auto v = VA(2); fn = [=] { vif_s0_u8((const vg_u8 *)P(0), (const vg_u8 *)P(1), v, (const vg_u16 *)P(3), (vg_u16 *)P(4), (vg_u16 *)P(5), (vg_u64 *)P(6)); }; }
        else if (name == "vif_s0_u16") { auto v = VA(2); fn = [=] { vif_s0_u16((const vg_u16 *)P(0), (const vg_u16 *)P(1), v, (const vg_u16 *)P(3), (vg_u16 *)P(4), (vg_u16 *)P(5), (vg_u64 *)P(6)); }; }
        else if (name == "vif_s1") { auto v = VA(2); fn = [=] { vif_s1((const vg_u16 *)P(0), (const vg_u16 *)P(1), v, (const vg_u16 *)P(3), (vg_u16 *)P(4), (vg_u16 *)P(5), (vg_u64 *)P(6)); }; }
        else if (name == "vif_s2") { auto v = VA(2); fn = [=] { vif_s2((const vg_u16 *)P(0), (const vg_u16 *)P(1), v, (const vg_u16 *)P(3), (vg_u16 *)P(4), (vg_u16 *)P(5), (vg_u64 *)P(6)); }; }
        else if (name == "vif_s3") { auto v = VA(2); fn = [=] { vif_s3((const vg_u16 *)P(0), (const vg_u16 *)P(1), v, (const vg_u16 *)P(3), (vg_u64 *)P(4)); }; }
        else if (name == "adm_dwt_s0_u8") { auto v = AA(2); fn = [=] { adm_dwt_s0_u8((const vg_u8 *)P(0), (const vg_u8 *)P(1), v, (vg_i32 *)P(3), (vg_i32 *)P(4), (vg_i32 *)P(5), (const vg_i32 *)P(6), (vg_u64 *)P(7)); }; }
        else if (name == "adm_dwt_s0_u16") { auto v = AA(2); fn = [=] { adm_dwt_s0_u16((const vg_u16 *)P(0), (const vg_u16 *)P(1), v, (vg_i32 *)P(3), (vg_i32 *)P(4), (vg_i32 *)P(5), (const vg_i32 *)P(6), (vg_u64 *)P(7)); }; }
        else if (name == "adm_dwt_s123") { auto v = AA(2); fn = [=] { adm_dwt_s123((const vg_i32 *)P(0), (const vg_i32 *)P(1), v, (vg_i32 *)P(3), (vg_i32 *)P(4), (vg_i32 *)P(5), (const vg_i32 *)P(6), (vg_u64 *)P(7)); }; }
        else if (name == "adm_cm_s0") { auto v = AA(1); fn = [=] { adm_cm_s0((const vg_i32 *)P(0), v, (vg_u64 *)P(2)); }; }
        else if (name == "adm_cm_s123") { auto v = AA(1); fn = [=] { adm_cm_s123((const vg_i32 *)P(0), v, (vg_u64 *)P(2)); }; }
        else if (name == "adm_finalize") { fn = [=] { adm_finalize((const vg_u64 *)P(0), (const FinalizeEntry *)P(1), (vg_u64 *)P(2)); }; }
        else if (name == "motion_u8") { auto v = MA(2); fn = [=] { motion_u8((const vg_u8 *)P(0), (const vg_u8 *)P(1), v, (vg_u64 *)P(3)); }; }
        else if (name == "motion_u16") { auto v = MA(2); fn = [=] { motion_u16((const vg_u16 *)P(0), (const vg_u16 *)P(1), v, (vg_u64 *)P(3)); }; }
        else if (name == "range_u16") { auto v = RA(2); fn = [=] { range_u16((const vg_u16 *)P(0), (const vg_u16 *)P(1), v, (vg_u64 *)P(3)); }; }
        else if (name == "shift_u16") { auto v = SA(1); fn = [=] { shift_u16((vg_u16 *)P(0), v); }; }
        else fail("unknown kernel");
        pool.run(gx, gy, fn);
    }
    uint32_t ob = rd<uint32_t>(f);
    uint64_t on = rd<uint64_t>(f);
    auto it = bufs.find(ob);
    if (it == bufs.end() || it->second.size() < on) fail("bad output buffer");
    fwrite(it->second.data(), 1, on, stdout);
    return 0;
}
