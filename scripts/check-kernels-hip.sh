#!/usr/bin/env bash
# Compile the kernel text (kernels/*.cu, the same text NVRTC compiles) for AMD GPUs without an
# AMD GPU, with Debian 12's ROCm (hipcc 5.2.3, clang/LLVM 15, libamdhip64 5.2.3, installed by
# scripts/install-deps.sh; this script installs nothing), then run the HIP backend's tests:
#
#  1. hipcc, device code only, for every target in HIP_ARCHS (default: gfx90a, CDNA2, wave64;
#     gfx1030, RDNA2, wave32; HIP 5.2 refuses wave64 on GFX10): each code object must hold the
#     14 kernels, use at most 64 KiB of LDS and no scratch memory.
#  2. The LLVM IR for gfx90a must have no contracted or fused floating-point operation
#     (-ffp-contract=off: hipcc's default would fuse a*b+c, which rounds differently from the CPU).
#  3. hipRTC, through the backend's own dlopen binding and options, compiles the same text for
#     the same targets (tests/hip_backend.rs hiprtc_compiles_every_kernel, which fails here rather
#     than skips: VMAFGPU_REQUIRE_HIPRTC=1); its gfx90a object must have as many double FMA
#     instructions as hipcc's -ffp-contract=off object (those of IEEE division only).
#  4. The rest of tests/hip_backend.rs: the backend against an emulated HIP runtime, errors
#     without ROCm / without a GPU, `auto` falling back.
#
# gfx1100 (RDNA3): LLVM 15 knows it, but Debian 12's ROCm 5.2.3 has no device library for it
# (hipcc: "cannot find ROCm device library for gfx1100") and its hipRTC aborts the process when
# asked for it; it is compiled only where the ROCm installed has oclc_isa_version_1100.bc.
#
#   scripts/check-kernels-hip.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "check-kernels-hip: $1 not found: run scripts/install-deps.sh (Debian packages hipcc, libamdhip64-dev)" >&2
    exit 1
  fi
}
need hipcc
# The LLVM tools of the clang hipcc runs (Debian 12: the -15 suffixed ones).
llvm_ver=$(hipcc --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1)
tool() { if command -v "$1-$llvm_ver" >/dev/null 2>&1; then echo "$1-$llvm_ver"; else echo "$1"; fi; }
bundler=$(tool clang-offload-bundler)
readelf=$(tool llvm-readelf)
objdump=$(tool llvm-objdump)
need "$bundler"
need "$readelf"
need "$objdump"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The kernel text exactly as src/backend/gpu/kernels.rs SOURCE concatenates it.
src="$tmp/vmafgpu.hip"
for f in compat.h vif.cu adm.cu motion.cu; do
  cat "kernels/$f"
  echo
done >"$src"

bitcode_dir=$(dirname "$(find /usr/lib /opt/rocm* -name 'oclc_isa_version_90a.bc' 2>/dev/null | head -n 1)")
archs=${HIP_ARCHS:-"gfx90a gfx1030"}
if [ -z "${HIP_ARCHS:-}" ]; then
  if [ -f "$bitcode_dir/oclc_isa_version_1100.bc" ]; then
    archs="$archs gfx1100"
  else
    echo "check-kernels-hip: gfx1100 skipped: this ROCm ($bitcode_dir) has no gfx1100 device library"
  fi
fi
kernels="vif_s0_u8 vif_s0_u16 vif_s1 vif_s2 vif_s3 adm_dwt_s0_u8 adm_dwt_s0_u16 adm_dwt_s123 adm_cm_s0 adm_cm_s123 adm_finalize motion_u8 motion_u16 range_u16 shift_u16"
flags=(-x hip --cuda-device-only -O3 -std=c++17 -ffp-contract=off -include hip/hip_runtime.h)

fail=0
check_object() { # name, offload target id, code object
  local name=$1 target=$2 co=$3 notes
  notes=$("$readelf" --notes "$co")
  for k in $kernels; do
    if ! grep -q "\.name: *$k\$" <<<"$notes"; then
      echo "check-kernels-hip: $name: kernel $k missing" >&2
      fail=1
    fi
  done
  local lds scratch waves
  lds=$(sed -n 's/.*\.group_segment_fixed_size: *//p' <<<"$notes" | sort -n | tail -n 1)
  scratch=$(sed -n 's/.*\.private_segment_fixed_size: *//p' <<<"$notes" | sort -n | tail -n 1)
  waves=$(sed -n 's/.*\.wavefront_size: *//p' <<<"$notes" | sort -u | tr '\n' ' ')
  if [ "$lds" -gt 65536 ] || [ "$scratch" -ne 0 ]; then
    echo "check-kernels-hip: $name: LDS $lds bytes (max 65536), scratch $scratch bytes (want 0)" >&2
    fail=1
  fi
  echo "check-kernels-hip: $name ($target): 15 kernels, wavefront $waves, LDS <= $lds bytes, scratch $scratch"
}

compile() { # name, offload arch, extra flags...
  local name=$1 arch=$2
  shift 2
  local obj="$tmp/$name.o" co="$tmp/$name.co"
  if ! hipcc "${flags[@]}" --offload-arch="$arch" "$@" -c "$src" -o "$obj" 2>"$tmp/$name.log"; then
    grep -v rocm_agent_enumerator "$tmp/$name.log" >&2 || true
    echo "check-kernels-hip: hipcc failed for $name" >&2
    fail=1
    return
  fi
  local target
  target=$("$bundler" --list --type=o --input="$obj" | grep amdgcn | head -n 1)
  "$bundler" --unbundle --type=o --input="$obj" --targets="$target" --output="$co"
  check_object "$name" "$target" "$co"
}

for a in $archs; do
  compile "$a" "$a"
done

# 2. No contraction in the IR (fmuladd intrinsics or `contract`/fast-math flags on FP ops).
hipcc "${flags[@]}" --offload-arch=gfx90a -emit-llvm -S "$src" -o "$tmp/gfx90a.ll" 2>/dev/null
if grep -qE 'llvm\.fmuladd|llvm\.fma\.|(fadd|fsub|fmul|fdiv|frem|fneg|fcmp)( [a-z]+)* (contract|fast|reassoc|afn|arcp)' "$tmp/gfx90a.ll"; then
  echo "check-kernels-hip: gfx90a IR has contracted or fast-math floating point:" >&2
  grep -nE 'llvm\.fmuladd|llvm\.fma\.| contract | fast | reassoc | afn | arcp ' "$tmp/gfx90a.ll" | head >&2
  fail=1
else
  echo "check-kernels-hip: gfx90a IR: $(grep -cE '= (fadd|fsub|fmul|fdiv) ' "$tmp/gfx90a.ll") FP operations, none contracted or fast-math"
fi

# 5. The companion kernels (src/backend/gpu/companion_plan.rs SOURCE, CAMBI and SpEED chroma included): every entry point in each
# code object, LDS within 64 KiB (psnr_hvs_blocks and ciede_pixels keep per-thread arrays and
# libm state in scratch, which is allowed here), and no contraction in the IR. The device libm
# brings its own fused operations: its correctly rounded double sqrt (psnr_hvs, ssim) is a Newton
# iteration on explicit llvm.fma, and the pow/sin/cos/exp/atan2 that ciede.cu calls evaluate
# polynomials with llvm.fmuladd. Neither comes from our arithmetic, so: no fast-math or contract
# flag anywhere, and no llvm.fmuladd (what -ffp-contract would make of a*b+c) in the text
# without ciede.cu.
csrc="$tmp/companions.hip"
cnofma="$tmp/companions-nociede.hip"
for f in compat.h psnr.cu ssim.cu psnr_hvs.cu ciede.cu cambi.cu speed.cu; do cat "kernels/$f"; echo; done >"$csrc"
for f in compat.h psnr.cu ssim.cu psnr_hvs.cu cambi.cu speed.cu; do cat "kernels/$f"; echo; done >"$cnofma"
ckernels="psnr_sse ssim_load ssim_decimate_lpf ssim_hconv ssim_terms psnr_hvs_blocks ciede_pixels
  cambi_pre cambi_dither cambi_mask cambi_mode cambi_cvalues cambi_cvalues_tiled
  speed_load speed_load_diff speed_prescale speed_filter_v speed_filter_h speed_local_mean speed_means speed_cov"
for a in $archs; do
  cobj="$tmp/comp-$a.o" cco="$tmp/comp-$a.co"
  if ! hipcc "${flags[@]}" --offload-arch="$a" -c "$csrc" -o "$cobj" 2>"$tmp/comp-$a.log"; then
    grep -v rocm_agent_enumerator "$tmp/comp-$a.log" >&2 || true
    echo "check-kernels-hip: hipcc failed for the companion kernels ($a)" >&2
    fail=1
    continue
  fi
  ctarget=$("$bundler" --list --type=o --input="$cobj" | grep amdgcn | head -n 1)
  "$bundler" --unbundle --type=o --input="$cobj" --targets="$ctarget" --output="$cco"
  cnotes=$("$readelf" --notes "$cco")
  for k in $ckernels; do
    if ! grep -q "\.name: *$k\$" <<<"$cnotes"; then
      echo "check-kernels-hip: companions $a: kernel $k missing" >&2
      fail=1
    fi
  done
  clds=$(sed -n 's/.*\.group_segment_fixed_size: *//p' <<<"$cnotes" | sort -n | tail -n 1)
  if [ "$clds" -gt 65536 ]; then
    echo "check-kernels-hip: companions $a: LDS $clds bytes (max 65536)" >&2
    fail=1
  fi
  echo "check-kernels-hip: companions $a ($ctarget): $(wc -w <<<"$ckernels") kernels, LDS <= $clds bytes"
done
hipcc "${flags[@]}" --offload-arch=gfx90a -emit-llvm -S "$csrc" -o "$tmp/comp.ll" 2>/dev/null
hipcc "${flags[@]}" --offload-arch=gfx90a -emit-llvm -S "$cnofma" -o "$tmp/comp-nociede.ll" 2>/dev/null
if grep -qE '(fadd|fsub|fmul|fdiv|frem|fneg|fcmp)( [a-z]+)* (contract|fast|reassoc|afn|arcp)' "$tmp/comp.ll" \
  || grep -qE 'llvm\.fmuladd' "$tmp/comp-nociede.ll"; then
  echo "check-kernels-hip: companion IR has contracted or fast-math floating point" >&2
  fail=1
else
  echo "check-kernels-hip: companion IR (gfx90a): no contracted or fast-math floating point"
fi

[ "$fail" -eq 0 ] || exit 1

# An AMD-only build (no CUDA) compiles cleanly too.
cargo clippy --lib --no-default-features --features hip -- -D warnings

# 3. and 4. The backend's tests, hipRTC required.
VMAFGPU_REQUIRE_HIPRTC=1 VMAFGPU_HIP_ARCHS="$archs" VMAFGPU_HIP_CODE_DIR="$tmp" \
  cargo test --all-features --test hip_backend "$@" -- --nocapture

fma_count() { "$objdump" -d --mcpu=gfx90a "$1" | grep -cE '^\s+v_fmac?_f64' || true; }
if [ -f "$tmp/hiprtc-gfx90a.co" ]; then
  rtc=$(fma_count "$tmp/hiprtc-gfx90a.co")
  cc=$(fma_count "$tmp/gfx90a.co")
  if [ "$rtc" != "$cc" ]; then
    echo "check-kernels-hip: hipRTC's gfx90a object has $rtc double FMA instructions, hipcc -ffp-contract=off's $cc: contraction is not off in hipRTC" >&2
    exit 1
  fi
  echo "check-kernels-hip: gfx90a double FMA instructions: hipRTC $rtc, hipcc -ffp-contract=off $cc (division sequences only)"
else
  echo "check-kernels-hip: hipRTC wrote no gfx90a code object" >&2
  exit 1
fi
echo "check-kernels-hip: ok ($archs)"
