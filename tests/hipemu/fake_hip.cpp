// A CPU stand-in for the HIP runtime (libamdhip64) and hipRTC, for tests/hip_backend.rs: it lets
// the HIP backend's host side (loading, device query, compile call and options, module and
// function lookup, argument packing, streams, events, copies, the slot pipeline, teardown) run
// on a machine without an AMD GPU, and checks it strictly:
//
//  - streams are lazy: nothing queued on a stream runs until the host blocks on it
//    (hipStreamSynchronize, hipEventSynchronize) or another stream's hipStreamWaitEvent needs
//    it; hipEventQuery never makes progress. With a schedule seed, each blocking call first
//    runs a random subset of the other streams in random order, so later frames often run
//    before earlier ones. A missing dependency, or a result read before its event completed,
//    therefore reads stale or poisoned memory and the numbers differ;
//  - host-to-device copies read the host memory when they run, not when queued, so a staging
//    buffer rewritten too early is caught the same way;
//  - device memory starts as 0xA5 poison; every pointer given to a copy, a memset or a kernel
//    must lie inside a live allocation of the right kind, or the call fails;
//  - the kernels (kernels/*.cu, compiled into this library as C++) run with a fiber per GPU
//    thread and a scheduler barrier for __syncthreads() (tests/emu/kernel_emu.cpp does the
//    same with OS threads; fibers keep it fast on a busy 2-core machine);
//  - the "code object" hipRTC returns names the architecture it was compiled for, and
//    hipModuleLoadData refuses one compiled for another architecture than the device's.
//
// Built twice by the test: -DFAKE_ROCM5 gives a ROCm 5 layout (hipRTC in the runtime library,
// hipGetDeviceProperties with the 5.x hipDeviceProp_t), without it a ROCm 6 layout
// (hipGetDevicePropertiesR0600, hipRTC in a separate library built from this file with
// -DFAKE_HIPRTC_ONLY).
#include <algorithm>
#include <ucontext.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

#include "../emu/companion_signatures.h"

typedef int hipError_t;
static const hipError_t hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorNoDevice = 100,
                        hipErrorInvalidDevice = 101, hipErrorInvalidImage = 200,
                        hipErrorInvalidHandle = 400, hipErrorNotFound = 500,
                        hipErrorNotReady = 600, hipErrorLaunchFailure = 719;

// ---------------------------------------------------------------------------------------------
// hipRTC
// ---------------------------------------------------------------------------------------------
#if defined(FAKE_ROCM5) || defined(FAKE_HIPRTC_ONLY)
static const char *const KERNEL_NAMES[] = {
    "vif_s0_u8", "vif_s0_u16", "vif_s1", "vif_s2", "vif_s3", "adm_dwt_s0_u8", "adm_dwt_s0_u16",
    "adm_dwt_s123", "adm_cm_s0", "adm_cm_s123", "adm_finalize", "motion_u8", "motion_u16", "range_u16",
    "shift_u16"};
static const char CODE_MAGIC[] = "VMAFGPU-FAKE-CODE-OBJECT";

struct FakeProgram {
    std::string src, log, code;
};
static std::mutex g_rtc_mu;
static long g_compiles = 0;
static std::string g_last_options;

FAKE_EXPORT int hiprtcCreateProgram(FakeProgram **prog, const char *src, const char *name, int nh,
                                    const char **, const char **) {
    if (!prog || !src || !name || nh != 0) return 3;  // HIPRTC_ERROR_INVALID_INPUT
    *prog = new FakeProgram{src, "", ""};
    return 0;
}

FAKE_EXPORT int hiprtcCompileProgram(FakeProgram *p, int n, const char **opts) {
    if (!p) return 4;  // HIPRTC_ERROR_INVALID_PROGRAM
    std::lock_guard<std::mutex> g(g_rtc_mu);
    ++g_compiles;
    std::string arch, all;
    bool no_contract = false;
    for (int i = 0; i < n; ++i) {
        std::string o = opts[i];
        all += (i ? " " : "") + o;
        if (o.rfind("--offload-arch=", 0) == 0) {
            if (!arch.empty()) { p->log = "two --offload-arch options"; return 5; }
            arch = o.substr(15);
        }
        if (o == "-ffp-contract=off") no_contract = true;
        if (o == "-ffast-math" || o == "-ffp-contract=fast" || o == "-ffp-contract=on") {
            p->log = "option " + o + " changes floating-point results";
            return 5;  // HIPRTC_ERROR_INVALID_OPTION
        }
    }
    g_last_options = all;
    if (arch.empty()) { p->log = "no --offload-arch option"; return 5; }
    if (!no_contract) { p->log = "-ffp-contract=off missing: FMA contraction would be on"; return 5; }
    // One of the backend's two texts: VMAF's kernels, or the companion metrics'.
    auto has = [&](const char *k) { return p->src.find(std::string(k) + "(") != std::string::npos; };
    bool companions = has(COMPANION_KERNELS[0].name);
    if (companions) {
        for (const CompanionSignature &k : COMPANION_KERNELS)
            if (!has(k.name)) {
                p->log = std::string("error: kernel ") + k.name + " not in the source";
                return 6;  // HIPRTC_ERROR_COMPILATION
            }
    } else {
        for (const char *k : KERNEL_NAMES)
            if (!has(k)) {
                p->log = std::string("error: kernel ") + k + " not in the source";
                return 6;  // HIPRTC_ERROR_COMPILATION
            }
    }
    if (p->src.find("extern \"C\" __global__") == std::string::npos) {
        p->log = "error: no extern \"C\" __global__ kernel";
        return 6;
    }
    p->code = std::string(CODE_MAGIC, sizeof CODE_MAGIC) + arch + std::string(1, '\0');
    p->log = "fake hipRTC: compiled for " + arch;
    return 0;
}

FAKE_EXPORT int hiprtcGetProgramLogSize(FakeProgram *p, size_t *n) {
    if (!p || !n) return 3;
    *n = p->log.size() + 1;
    return 0;
}
FAKE_EXPORT int hiprtcGetProgramLog(FakeProgram *p, char *out) {
    if (!p || !out) return 3;
    memcpy(out, p->log.c_str(), p->log.size() + 1);
    return 0;
}
FAKE_EXPORT int hiprtcGetCodeSize(FakeProgram *p, size_t *n) {
    if (!p || !n) return 3;
    *n = p->code.size();
    return 0;
}
FAKE_EXPORT int hiprtcGetCode(FakeProgram *p, char *out) {
    if (!p || !out) return 3;
    memcpy(out, p->code.data(), p->code.size());
    return 0;
}
FAKE_EXPORT int hiprtcDestroyProgram(FakeProgram **p) {
    if (!p || !*p) return 3;
    delete *p;
    *p = nullptr;
    return 0;
}
FAKE_EXPORT const char *hiprtcGetErrorString(int r) {
    switch (r) {
    case 0: return "HIPRTC_SUCCESS";
    case 5: return "HIPRTC_ERROR_INVALID_OPTION";
    case 6: return "HIPRTC_ERROR_COMPILATION";
    default: return "HIPRTC_ERROR (fake)";
    }
}
FAKE_EXPORT long fakehiprtc_compiles(char *last_options, size_t n) {
    std::lock_guard<std::mutex> g(g_rtc_mu);
    if (last_options && n) snprintf(last_options, n, "%s", g_last_options.c_str());
    return g_compiles;
}
#endif

#ifndef FAKE_HIPRTC_ONLY
// ---------------------------------------------------------------------------------------------
// The kernels, as C++. A block's VG_BLOCK threads are fibers (ucontext) on the calling thread,
// switched round-robin; __syncthreads() yields to the scheduler, which releases the barrier
// when every thread of the block has reached it (and reports a barrier that some threads skip,
// which would hang a GPU). __shared__ memory is a static: blocks run one at a time.
// ---------------------------------------------------------------------------------------------
struct EmuDim3 { unsigned x, y, z; };
static EmuDim3 threadIdx;
static EmuDim3 blockIdx;
static EmuDim3 gridDim;
static void fiber_yield_at_barrier();

static inline void __syncthreads() { fiber_yield_at_barrier(); }
#include "../emu/device_shims.h"

#include "../../kernels/compat.h"
#include "../../kernels/vif.cu"
#include "../../kernels/adm.cu"
#include "../../kernels/motion.cu"
// The companion text (src/backend/gpu/companion_plan.rs SOURCE), after compat.h as there.
#include "../../kernels/psnr.cu"
#include "../../kernels/ssim.cu"
#include "../../kernels/psnr_hvs.cu"
#include "../../kernels/ciede.cu"
#include "../../kernels/cambi.cu"
#include "../../kernels/speed.cu"
#include "../emu/companion_kernels.h"

struct Fibers {
    static const int N = VG_BLOCK;
    static const size_t STACK = 256 * 1024;
    ucontext_t main_ctx, ctx[N];
    std::vector<char> stacks = std::vector<char>(N * STACK);
    enum State { RUN, AT_BARRIER, DONE } state[N];
    std::function<void()> fn;
    int cur = 0;
    bool divergent = false;

    static void entry();
    // Run one block of `fn`; false if its threads disagreed on a barrier.
    bool run_block() {
        for (int t = 0; t < N; ++t) {
            getcontext(&ctx[t]);
            ctx[t].uc_stack.ss_sp = stacks.data() + (size_t)t * STACK;
            ctx[t].uc_stack.ss_size = STACK;
            ctx[t].uc_link = nullptr;
            makecontext(&ctx[t], entry, 0);
            state[t] = RUN;
        }
        for (;;) {
            for (int t = 0; t < N; ++t) {
                if (state[t] != RUN) continue;
                cur = t;
                threadIdx = {(unsigned)t, 0, 0};
                swapcontext(&main_ctx, &ctx[t]);
            }
            int done = 0, waiting = 0;
            for (int t = 0; t < N; ++t) (state[t] == DONE ? done : waiting)++;
            if (done == N) return true;
            if (done > 0) return false;  // some threads exited, others wait at a barrier
            for (int t = 0; t < N; ++t) state[t] = RUN;
        }
    }
};
static Fibers *g_fibers;
void Fibers::entry() {
    Fibers *f = g_fibers;
    f->fn();
    f->state[f->cur] = DONE;
    swapcontext(&f->ctx[f->cur], &f->main_ctx);
}
static void fiber_yield_at_barrier() {
    Fibers *f = g_fibers;
    f->state[f->cur] = Fibers::AT_BARRIER;
    swapcontext(&f->ctx[f->cur], &f->main_ctx);
}
static long g_divergent = 0;
// Run a grid of gx x gy blocks.
static void run_grid(unsigned gx, unsigned gy, std::function<void()> fn) {
    if (!g_fibers) g_fibers = new Fibers();  // kept for the process
    g_fibers->fn = std::move(fn);
    gridDim = {gx, gy, 1};
    for (unsigned by = 0; by < gy; ++by)
        for (unsigned bx = 0; bx < gx; ++bx) {
            blockIdx = {bx, by, 0};
            if (!g_fibers->run_block()) ++g_divergent;
        }
}

// ---------------------------------------------------------------------------------------------
// Runtime state
// ---------------------------------------------------------------------------------------------
struct FakeStream {
    std::deque<std::function<void()>> q;
    uint64_t enqueued = 0, done = 0;
    uint64_t id = 0;
};
struct FakeEvent {
    FakeStream *s = nullptr;
    uint64_t seq = 0;
};
struct FakeModule {
    std::string arch;
};

static std::recursive_mutex g_mu;
#define LOCK std::lock_guard<std::recursive_mutex> lock_(g_mu)
static int g_devices = 1;
static std::string g_arch = "gfx90a:sramecc+:xnack-";
static int g_version =
#ifdef FAKE_ROCM5
    50221153;
#else
    60342131;
#endif
static hipError_t g_init_error = hipSuccess;
static std::map<uintptr_t, size_t> g_dev, g_host;  // live allocations: start -> bytes
static std::set<FakeStream *> g_streams;
static std::set<FakeEvent *> g_events;
static std::set<FakeModule *> g_modules;
static long g_launches = 0, g_errors = 0, g_destroyed_busy = 0, g_not_ready = 0;
static std::string g_last_error;
static FakeStream g_null_stream;
static uint64_t g_stream_ids = 0;
// Schedule: 0 = minimal (a blocking call runs only the awaited work and what it waits for);
// else the seed of a random schedule: before each blocking call completes, a random subset of
// the other streams runs to completion, in random order (as a GPU may progress any stream),
// so later frames often run before earlier ones and a missing dependency shows.
static uint64_t g_schedule = 0;
static uint64_t rnd() {
    uint64_t x = g_schedule;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    g_schedule = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static hipError_t fail(hipError_t e, const std::string &why) {
    ++g_errors;
    g_last_error = why;
    return e;
}

static void run_until(FakeStream *s, uint64_t seq) {
    while (s->done < seq) {
        auto f = std::move(s->q.front());
        s->q.pop_front();
        ++s->done;
        f();
    }
}
// Before a blocking call for `target` completes: maybe progress other streams (schedule).
static void progress_others(FakeStream *target) {
    if (g_schedule == 0) return;
    std::vector<FakeStream *> c;
    for (FakeStream *s : g_streams)
        if (s != target && s->done < s->enqueued && (rnd() >> 32) % 2 == 0) c.push_back(s);
    std::sort(c.begin(), c.end(), [](FakeStream *a, FakeStream *b) { return a->id < b->id; });
    for (size_t i = c.size(); i > 1; --i) std::swap(c[i - 1], c[(rnd() >> 33) % i]);
    for (FakeStream *s : c) run_until(s, s->enqueued);
}
static void run_all() {
    for (FakeStream *s : g_streams) run_until(s, s->enqueued);
    run_until(&g_null_stream, g_null_stream.enqueued);
}
static FakeStream *stream_of(void *s) {
    if (!s) return &g_null_stream;
    auto *fs = (FakeStream *)s;
    return g_streams.count(fs) ? fs : nullptr;
}
static void enqueue(FakeStream *s, std::function<void()> f) {
    s->q.push_back(std::move(f));
    ++s->enqueued;
}
// The allocation of `m` containing [p, p + n), or false.
static bool inside(const std::map<uintptr_t, size_t> &m, const void *p, size_t n) {
    auto a = (uintptr_t)p;
    auto it = m.upper_bound(a);
    if (it == m.begin()) return false;
    --it;
    return a >= it->first && a + n <= it->first + it->second;
}

// ---------------------------------------------------------------------------------------------
// Test controls
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT void fakehip_schedule(uint64_t seed) {
    LOCK;
    g_schedule = seed;
}
FAKE_EXPORT void fakehip_configure(int devices, const char *arch, int version, int init_error) {
    LOCK;
    g_devices = devices;
    g_arch = arch;
    g_version = version;
    g_init_error = init_error;
}
// out: live device allocations, live host allocations, live streams, live events, live
// modules, kernel launches, API errors, streams destroyed with work pending, NotReady answers.
FAKE_EXPORT void fakehip_stats(long *out, char *last_error, size_t n) {
    LOCK;
    long v[9] = {(long)g_dev.size(), (long)g_host.size(), (long)g_streams.size(),
                 (long)g_events.size(), (long)g_modules.size(), g_launches,
                 g_errors + g_divergent, g_destroyed_busy, g_not_ready};
    if (g_divergent) g_last_error = "a block's threads disagreed on a __syncthreads() barrier";
    memcpy(out, v, sizeof v);
    if (last_error && n) snprintf(last_error, n, "%s", g_last_error.c_str());
}

// ---------------------------------------------------------------------------------------------
// HIP runtime API
// ---------------------------------------------------------------------------------------------
FAKE_EXPORT hipError_t hipInit(unsigned flags) {
    LOCK;
    if (flags != 0) return fail(hipErrorInvalidValue, "hipInit flags");
    return g_init_error;
}
FAKE_EXPORT hipError_t hipRuntimeGetVersion(int *v) {
    LOCK;
    if (!v) return fail(hipErrorInvalidValue, "hipRuntimeGetVersion null");
    *v = g_version;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipGetDeviceCount(int *n) {
    LOCK;
    if (!n) return fail(hipErrorInvalidValue, "hipGetDeviceCount null");
    *n = g_devices;
    return g_devices == 0 ? hipErrorNoDevice : hipSuccess;
}
FAKE_EXPORT hipError_t hipDeviceSynchronize() {
    LOCK;
    run_all();
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipSetDevice(int d) {
    LOCK;
    if (d < 0 || d >= g_devices) return fail(hipErrorInvalidDevice, "hipSetDevice ordinal");
    return hipSuccess;
}
static const char DEVICE_NAME[] = "Fake AMD GPU (CPU emulation)";
FAKE_EXPORT hipError_t hipDeviceGetName(char *name, int len, int d) {
    LOCK;
    if (!name || len <= 0 || d < 0 || d >= g_devices)
        return fail(hipErrorInvalidValue, "hipDeviceGetName args");
    snprintf(name, (size_t)len, "%s", DEVICE_NAME);
    return hipSuccess;
}
static hipError_t props(void *p, int d, size_t size, size_t arch_off) {
    if (!p || d < 0 || d >= g_devices) return fail(hipErrorInvalidValue, "properties args");
    memset(p, 0, size);
    snprintf((char *)p, 256, "%s", DEVICE_NAME);
    snprintf((char *)p + arch_off, 256, "%s", g_arch.c_str());
    return hipSuccess;
}
#ifdef FAKE_ROCM5
FAKE_EXPORT hipError_t hipGetDeviceProperties(void *p, int d) { LOCK; return props(p, d, 792, 396); }
#else
FAKE_EXPORT hipError_t hipGetDevicePropertiesR0600(void *p, int d) { LOCK; return props(p, d, 1472, 1160); }
#endif
FAKE_EXPORT const char *hipGetErrorString(hipError_t e) {
    switch (e) {
    case hipSuccess: return "no error";
    case hipErrorInvalidValue: return "invalid argument";
    case hipErrorNoDevice: return "no ROCm-capable device is detected";
    case hipErrorInvalidDevice: return "invalid device ordinal";
    case hipErrorInvalidImage: return "device kernel image is invalid";
    case hipErrorNotFound: return "named symbol not found";
    case hipErrorNotReady: return "device not ready";
    default: return "unknown error (fake)";
    }
}

FAKE_EXPORT hipError_t hipMalloc(void **p, size_t n) {
    LOCK;
    if (!p || n == 0) return fail(hipErrorInvalidValue, "hipMalloc args");
    void *m = malloc(n);
    memset(m, 0xA5, n);
    g_dev[(uintptr_t)m] = n;
    *p = m;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipFree(void *p) {
    LOCK;
    if (!p) return hipSuccess;
    run_all();  // hipFree synchronizes the device
    if (!g_dev.erase((uintptr_t)p)) return fail(hipErrorInvalidValue, "hipFree of a non-device pointer");
    free(p);
    return hipSuccess;
}
static hipError_t host_alloc(void **p, size_t n, unsigned flags) {
    LOCK;
    if (!p || n == 0 || (flags & ~4u) != 0) return fail(hipErrorInvalidValue, "hipHostMalloc args");
    void *m = malloc(n);
    memset(m, 0x5A, n);
    g_host[(uintptr_t)m] = n;
    *p = m;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipHostMalloc(void **p, size_t n, unsigned flags) { return host_alloc(p, n, flags); }
FAKE_EXPORT hipError_t hipHostFree(void *p) {
    LOCK;
    if (!p) return hipSuccess;
    run_all();
    if (!g_host.erase((uintptr_t)p)) return fail(hipErrorInvalidValue, "hipHostFree of a non-pinned pointer");
    free(p);
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s) {
    LOCK;
    FakeStream *fs = stream_of(s);
    if (!fs) return fail(hipErrorInvalidHandle, "hipMemcpyAsync stream");
    if (kind == 1) {  // host to device
        if (!inside(g_dev, dst, n)) return fail(hipErrorInvalidValue, "H2D destination not device memory");
        if (inside(g_dev, src, 1)) return fail(hipErrorInvalidValue, "H2D source is device memory");
    } else if (kind == 2) {  // device to host
        if (!inside(g_dev, src, n)) return fail(hipErrorInvalidValue, "D2H source not device memory");
        if (inside(g_dev, dst, 1)) return fail(hipErrorInvalidValue, "D2H destination is device memory");
    } else if (kind == 3) {  // device to device
        if (!inside(g_dev, src, n) || !inside(g_dev, dst, n))
            return fail(hipErrorInvalidValue, "D2D copy outside device memory");
        auto a = (uintptr_t)src, b = (uintptr_t)dst;
        if (a < b + n && b < a + n) return fail(hipErrorInvalidValue, "D2D copy overlaps");
    } else {
        return fail(hipErrorInvalidValue, "memcpy kind");
    }
    enqueue(fs, [=] { memcpy(dst, src, n); });
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipMemsetAsync(void *dst, int v, size_t n, void *s) {
    LOCK;
    FakeStream *fs = stream_of(s);
    if (!fs) return fail(hipErrorInvalidHandle, "hipMemsetAsync stream");
    if (!inside(g_dev, dst, n)) return fail(hipErrorInvalidValue, "memset outside device memory");
    enqueue(fs, [=] { memset(dst, v, n); });
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamCreateWithFlags(void **s, unsigned flags) {
    LOCK;
    if (!s || flags > 1) return fail(hipErrorInvalidValue, "hipStreamCreateWithFlags args");
    auto *fs = new FakeStream();
    fs->id = ++g_stream_ids;
    g_streams.insert(fs);
    *s = fs;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipStreamDestroy(void *s) {
    LOCK;
    auto *fs = (FakeStream *)s;
    if (!g_streams.count(fs)) return fail(hipErrorInvalidHandle, "hipStreamDestroy handle");
    if (fs->done < fs->enqueued) ++g_destroyed_busy;
    run_until(fs, fs->enqueued);
    for (FakeEvent *e : g_events)
        if (e->s == fs) e->s = nullptr;  // recorded work has completed
    g_streams.erase(fs);
    delete fs;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipStreamSynchronize(void *s) {
    LOCK;
    FakeStream *fs = stream_of(s);
    if (!fs) return fail(hipErrorInvalidHandle, "hipStreamSynchronize handle");
    progress_others(fs);
    run_until(fs, fs->enqueued);
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipStreamWaitEvent(void *s, void *e, unsigned flags) {
    LOCK;
    FakeStream *fs = stream_of(s);
    auto *fe = (FakeEvent *)e;
    if (!fs || !g_events.count(fe) || flags != 0) return fail(hipErrorInvalidHandle, "hipStreamWaitEvent args");
    FakeStream *es = fe->s;
    uint64_t seq = fe->seq;
    if (es) enqueue(fs, [=] {
            if (g_streams.count(es) || es == &g_null_stream) run_until(es, seq);
        });
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipEventCreateWithFlags(void **e, unsigned flags) {
    LOCK;
    if (!e || (flags & ~3u) != 0) return fail(hipErrorInvalidValue, "hipEventCreateWithFlags args");
    auto *fe = new FakeEvent();
    g_events.insert(fe);
    *e = fe;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipEventRecord(void *e, void *s) {
    LOCK;
    auto *fe = (FakeEvent *)e;
    FakeStream *fs = stream_of(s);
    if (!g_events.count(fe) || !fs) return fail(hipErrorInvalidHandle, "hipEventRecord args");
    fe->s = fs;
    fe->seq = fs->enqueued;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipEventSynchronize(void *e) {
    LOCK;
    auto *fe = (FakeEvent *)e;
    if (!g_events.count(fe)) return fail(hipErrorInvalidHandle, "hipEventSynchronize handle");
    if (fe->s) {
        progress_others(fe->s);
        run_until(fe->s, fe->seq);
    }
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipEventQuery(void *e) {
    LOCK;
    auto *fe = (FakeEvent *)e;
    if (!g_events.count(fe)) return fail(hipErrorInvalidHandle, "hipEventQuery handle");
    if (!fe->s || fe->s->done >= fe->seq) return hipSuccess;
    // Work only progresses in blocking calls (see the schedule).
    ++g_not_ready;
    return hipErrorNotReady;
}
FAKE_EXPORT hipError_t hipEventDestroy(void *e) {
    LOCK;
    auto *fe = (FakeEvent *)e;
    if (!g_events.erase(fe)) return fail(hipErrorInvalidHandle, "hipEventDestroy handle");
    delete fe;
    return hipSuccess;
}

FAKE_EXPORT hipError_t hipModuleLoadData(void **m, const void *image) {
    LOCK;
    if (!m || !image) return fail(hipErrorInvalidValue, "hipModuleLoadData args");
    static const char magic[] = "VMAFGPU-FAKE-CODE-OBJECT";
    if (memcmp(image, magic, sizeof magic) != 0) return fail(hipErrorInvalidImage, "not a fake code object");
    std::string arch = (const char *)image + sizeof magic;
    if (arch != g_arch) return fail(hipErrorInvalidImage, "code object for " + arch + " on a " + g_arch + " device");
    auto *fm = new FakeModule{arch};
    g_modules.insert(fm);
    *m = fm;
    return hipSuccess;
}
FAKE_EXPORT hipError_t hipModuleUnload(void *m) {
    LOCK;
    auto *fm = (FakeModule *)m;
    if (!g_modules.erase(fm)) return fail(hipErrorInvalidHandle, "hipModuleUnload handle");
    delete fm;
    return hipSuccess;
}

enum Sig { VIF7, VIF5, ADM_DWT, ADM_CM, FIN, MOT, RANGE, SHIFT };
struct KernelInfo { const char *name; Sig sig; };
static const KernelInfo KERNELS[] = {
    {"vif_s0_u8", VIF7}, {"vif_s0_u16", VIF7}, {"vif_s1", VIF7}, {"vif_s2", VIF7},
    {"vif_s3", VIF5}, {"adm_dwt_s0_u8", ADM_DWT}, {"adm_dwt_s0_u16", ADM_DWT},
    {"adm_dwt_s123", ADM_DWT}, {"adm_cm_s0", ADM_CM}, {"adm_cm_s123", ADM_CM},
    {"adm_finalize", FIN}, {"motion_u8", MOT}, {"motion_u16", MOT},
    {"range_u16", RANGE}, {"shift_u16", SHIFT}};
static const int NKERNELS = sizeof KERNELS / sizeof KERNELS[0];
// k: an index into KERNELS, or NKERNELS + an index into COMPANION_KERNELS.
struct FakeFunction { FakeModule *m; int k; };
static std::vector<FakeFunction *> g_functions;

FAKE_EXPORT hipError_t hipModuleGetFunction(void **f, void *m, const char *name) {
    LOCK;
    auto *fm = (FakeModule *)m;
    if (!f || !name || !g_modules.count(fm)) return fail(hipErrorInvalidValue, "hipModuleGetFunction args");
    for (int k = 0; k < NKERNELS; ++k)
        if (!strcmp(KERNELS[k].name, name)) {
            auto *ff = new FakeFunction{fm, k};
            g_functions.push_back(ff);  // kept: handles stay valid for the process
            *f = ff;
            return hipSuccess;
        }
    for (int k = 0; k < NCOMPANION; ++k)
        if (!strcmp(COMPANION_KERNELS[k].name, name)) {
            auto *ff = new FakeFunction{fm, NKERNELS + k};
            g_functions.push_back(ff);
            *f = ff;
            return hipSuccess;
        }
    return hipErrorNotFound;
}

FAKE_EXPORT hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                             void *s, void **params, void **extra) {
    LOCK;
    auto *ff = (FakeFunction *)f;
    bool known = false;
    for (auto *x : g_functions) known |= x == ff;
    if (!known || !g_modules.count(ff->m)) return fail(hipErrorInvalidHandle, "launch of an unknown function");
    FakeStream *fs = stream_of(s);
    if (!fs) return fail(hipErrorInvalidHandle, "launch stream");
    const char *kname = ff->k < NKERNELS ? KERNELS[ff->k].name : COMPANION_KERNELS[ff->k - NKERNELS].name;
    if (bx != VG_BLOCK || by != 1 || bz != 1 || gz != 1 || gx == 0 || gy == 0 || shm != 0 || extra || !params)
        return fail(hipErrorInvalidValue, std::string("launch configuration of ") + kname);
    if (ff->k >= NKERNELS) {
        // A companion kernel: each argument read with its C type (companion_signatures.h), now
        // (as the runtime does); every pointer must lie in a live device allocation.
        const CompanionSignature &S = COMPANION_KERNELS[ff->k - NKERNELS];
        std::vector<ArgV> a;
        for (int i = 0; S.args[i]; ++i) {
            ArgV v{};
            v.kind = S.args[i] == 'p' ? 0 : S.args[i] == 'i' ? 1 : 2;
            if (v.kind == 0) {
                v.ptr = *(void **)params[i];
                if (!inside(g_dev, v.ptr, 1))
                    return fail(hipErrorLaunchFailure, std::string(S.name) + ": argument " + std::to_string(i) + " is not device memory");
            } else if (v.kind == 1) {
                v.i = *(int32_t *)params[i];
            } else {
                v.f = *(float *)params[i];
            }
            a.push_back(v);
        }
        std::function<void()> fn = companion_kernel(S.name, a);
        if (!fn) return fail(hipErrorLaunchFailure, std::string("no emulation of ") + S.name);
        ++g_launches;
        enqueue(fs, [=] { run_grid(gx, gy, fn); });
        return hipSuccess;
    }
    const KernelInfo &K = KERNELS[ff->k];
    // Argument values are taken now (as the runtime does); pointers are checked against the
    // live device allocations (null only where the plan passes null: next_ref/next_dis of
    // adm_dwt_s123 at scale 3).
    auto P = [&](int i) { return *(void **)params[i]; };
    std::string bad;
    auto dev = [&](int i, bool may_be_null) -> void * {
        void *p = P(i);
        if (!p && may_be_null) return p;
        if (!inside(g_dev, p, 1)) bad = std::string(K.name) + ": argument " + std::to_string(i) + " is not device memory";
        return p;
    };
    std::function<void()> fn;
    switch (K.sig) {
    case VIF7: {
        VifArgs a; memcpy(&a, params[2], sizeof a);
        void *p0 = dev(0, false), *p1 = dev(1, false), *p3 = dev(3, false), *p4 = dev(4, false), *p5 = dev(5, false), *p6 = dev(6, false);
        int k = ff->k;
        fn = [=] {
            if (k == 0) vif_s0_u8((const vg_u8 *)p0, (const vg_u8 *)p1, a, (const vg_u16 *)p3, (vg_u16 *)p4, (vg_u16 *)p5, (vg_u64 *)p6);
            else if (k == 1) vif_s0_u16((const vg_u16 *)p0, (const vg_u16 *)p1, a, (const vg_u16 *)p3, (vg_u16 *)p4, (vg_u16 *)p5, (vg_u64 *)p6);
            else if (k == 2) vif_s1((const vg_u16 *)p0, (const vg_u16 *)p1, a, (const vg_u16 *)p3, (vg_u16 *)p4, (vg_u16 *)p5, (vg_u64 *)p6);
            else vif_s2((const vg_u16 *)p0, (const vg_u16 *)p1, a, (const vg_u16 *)p3, (vg_u16 *)p4, (vg_u16 *)p5, (vg_u64 *)p6);
        };
        break;
    }
    case VIF5: {
        VifArgs a; memcpy(&a, params[2], sizeof a);
        void *p0 = dev(0, false), *p1 = dev(1, false), *p3 = dev(3, false), *p4 = dev(4, false);
        fn = [=] { vif_s3((const vg_u16 *)p0, (const vg_u16 *)p1, a, (const vg_u16 *)p3, (vg_u64 *)p4); };
        break;
    }
    case ADM_DWT: {
        AdmArgs a; memcpy(&a, params[2], sizeof a);
        void *p0 = dev(0, false), *p1 = dev(1, false), *p3 = dev(3, true), *p4 = dev(4, true), *p5 = dev(5, false), *p6 = dev(6, false), *p7 = dev(7, false);
        int k = ff->k;
        fn = [=] {
            if (k == 5) adm_dwt_s0_u8((const vg_u8 *)p0, (const vg_u8 *)p1, a, (vg_i32 *)p3, (vg_i32 *)p4, (vg_i32 *)p5, (const vg_i32 *)p6, (vg_u64 *)p7);
            else if (k == 6) adm_dwt_s0_u16((const vg_u16 *)p0, (const vg_u16 *)p1, a, (vg_i32 *)p3, (vg_i32 *)p4, (vg_i32 *)p5, (const vg_i32 *)p6, (vg_u64 *)p7);
            else adm_dwt_s123((const vg_i32 *)p0, (const vg_i32 *)p1, a, (vg_i32 *)p3, (vg_i32 *)p4, (vg_i32 *)p5, (const vg_i32 *)p6, (vg_u64 *)p7);
        };
        break;
    }
    case ADM_CM: {
        AdmArgs a; memcpy(&a, params[1], sizeof a);
        void *p0 = dev(0, false), *p2 = dev(2, false);
        int k = ff->k;
        fn = [=] {
            if (k == 8) adm_cm_s0((const vg_i32 *)p0, a, (vg_u64 *)p2);
            else adm_cm_s123((const vg_i32 *)p0, a, (vg_u64 *)p2);
        };
        break;
    }
    case FIN: {
        void *p0 = dev(0, false), *p1 = dev(1, false), *p2 = dev(2, false);
        fn = [=] { adm_finalize((const vg_u64 *)p0, (const FinalizeEntry *)p1, (vg_u64 *)p2); };
        break;
    }
    case MOT: {
        MotionArgs a; memcpy(&a, params[2], sizeof a);
        void *p0 = dev(0, false), *p1 = dev(1, false), *p3 = dev(3, false);
        int k = ff->k;
        fn = [=] {
            if (k == 11) motion_u8((const vg_u8 *)p0, (const vg_u8 *)p1, a, (vg_u64 *)p3);
            else motion_u16((const vg_u16 *)p0, (const vg_u16 *)p1, a, (vg_u64 *)p3);
        };
        break;
    }
    case RANGE: {
        RangeArgs a; memcpy(&a, params[2], sizeof a);
        void *p0 = dev(0, false), *p1 = dev(1, false), *p3 = dev(3, false);
        fn = [=] { range_u16((const vg_u16 *)p0, (const vg_u16 *)p1, a, (vg_u64 *)p3); };
        break;
    }
    case SHIFT: {
        ShiftArgs a; memcpy(&a, params[1], sizeof a);
        void *p0 = dev(0, false);
        fn = [=] { shift_u16((vg_u16 *)p0, a); };
        break;
    }
    }
    if (!bad.empty()) return fail(hipErrorLaunchFailure, bad);
    ++g_launches;
    enqueue(fs, [=] { run_grid(gx, gy, fn); });
    return hipSuccess;
}
#endif
