#!/usr/bin/env bash
# Here (the build machine): everything a lease on the GPU machine needs, small enough for the
# device tool's 64 MiB transfer (tracked files + what is carried):
#   .gstbundle/          GStreamer runtime and plugins (../shared/tools/device-bundle.sh), the
#                        plugin (stripped), libgstcheck for the element tests
#   .gpudata/bins.tar.xz the release test binaries and examples that scripts/gpu-machine-run.sh runs
#   .gpudata/full/       carphone and bbb360p10 whole (xz)
#   .gpudata/h264/       scripts/cuda-memory/encode.sh (H.264, lossless HEVC, 4K 10-bit HEVC)
#   .gpudata/nvbench/    the NVDEC benchmarks' files (encode.sh too)
# Then, with the device tool: carry .gstbundle .gpudata/bins.tar.xz .gpudata/h264 and either
# .gpudata/full (PARTS "T B S C X") or .gpudata/nvbench (PARTS "M B S C X"): both do not fit;
# run `source .gstbundle/env.sh && PARTS=... BUDGET=540 scripts/gpu-machine-run.sh`.
# All git-ignored. Needs scripts/install-deps.sh and scripts/fetch-test-data.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=(cuda_parity companion_parity cuda_host_planes element_golden element element_robust kernel_cache element_gpu cuda_memory)
examples=(bench_element soak_element startup)
cargo build --release --bins --lib "${examples[@]/#/--example=}"
cargo test --release --no-run "${tests[@]/#/--test=}"
../shared/tools/device-bundle.sh
strip .gstbundle/plugin/*.so
cp -L "$(ldconfig -p | awk '/libgstcheck-1.0.so.0 /{print $NF; exit}')" .gstbundle/lib/
b=$(mktemp -d)
for t in "${tests[@]}"; do
  f=$(ls -t target/release/deps/"$t"-* | grep -v '\.d$' | head -1)
  cp "$f" "$b/$t"
done
for e in "${examples[@]}"; do cp target/release/examples/"$e" "$b/"; done
cp target/release/vmafgpu "$b/"
strip "$b"/*
mkdir -p .gpudata/full
tar -cJf .gpudata/bins.tar.xz -C "$b" .
rm -rf "$b"
for f in carphone_ref carphone_dis bbb360p10_ref bbb360p10_dis; do
  [ -e .gpudata/full/$f.yuv.xz ] || xz -T2 -6 -c tests/data/yuv/$f.yuv > .gpudata/full/$f.yuv.xz
done
[ -e .gpudata/nvbench/b2160p10_dis.h265 ] || scripts/cuda-memory/encode.sh
tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
for data in .gpudata/full .gpudata/nvbench; do
  carried=$(du -cb .gstbundle .gpudata/bins.tar.xz .gpudata/h264 $data | tail -1 | cut -f1)
  echo "transfer with $data: tracked $((tracked >> 20)) MiB + carried $((carried >> 20)) MiB (limit 64 MiB)"
done
du -sh .gstbundle .gpudata/bins.tar.xz .gpudata/full .gpudata/h264 .gpudata/nvbench
