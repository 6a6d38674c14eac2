// The CUDA device intrinsics the kernel text uses (kernels/*.cu), as host C++, for the CPU
// emulators (tests/emu/companion_emu.cpp, tests/hipemu/fake_hip.cpp). Each emulator defines
// threadIdx, blockIdx and __syncthreads() itself (threads or fibers) before including this.
// Built with -ffp-contract=off: the *_rn operations are the plain IEEE operations.
#pragma once
#include <cmath>
#include <cstring>

#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__ static
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__

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

// IEEE round-to-nearest operations (kernels/speed.cu).
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
