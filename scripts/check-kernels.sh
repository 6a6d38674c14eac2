#!/usr/bin/env bash
# Compile the CUDA kernel text with NVRTC, without a GPU or a CUDA toolkit: NVRTC comes from its
# PyPI wheel (nvidia-cuda-nvrtc, CUDA 13.0, the version cudarc's cuda-13000 feature expects),
# downloaded and unpacked into a temporary directory (pip download + Python's zipfile: no
# installation into any Python environment). Runs the kernels_compile_with_nvrtc test, which fails
# rather than skips here (VMAFGPU_REQUIRE_NVRTC=1).
#
#   scripts/check-kernels.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --python-version 3.12 \
  --dest "$tmp/wheel" 'nvidia-cuda-nvrtc==13.0.*'
python3 -m zipfile -e "$tmp"/wheel/*.whl "$tmp/nvrtc"
lib=$(dirname "$(find "$tmp" -name 'libnvrtc.so.13' | head -n 1)")
if [ -z "$lib" ] || [ ! -f "$lib/libnvrtc.so.13" ]; then
  echo "check-kernels: the NVRTC wheel has no libnvrtc.so.13" >&2
  exit 1
fi
echo "check-kernels: NVRTC from $lib"
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VMAFGPU_REQUIRE_NVRTC=1 \
  cargo test --test cuda_parity "$@" -- kernels_compile_with_nvrtc --nocapture
# The companion kernels (kernels/psnr.cu, ssim.cu, psnr_hvs.cu, ciede.cu, cambi.cu, speed.cu), their own text.
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VMAFGPU_REQUIRE_NVRTC=1 \
  cargo test --test companion_parity "$@" -- companion_kernels_compile_with_nvrtc --nocapture
