#!/usr/bin/env bash
# The zero-copy input path on the GPU machine (part of scripts/gpu-machine-run.sh, or alone):
#   - tests/cuda_host_planes.rs under VMAFGPU_REQUIRE_GPU=1 (planes in the caller's memory through Scorer::push_frames, pinned and pageable,
#     equals push and the CPU backend; refusals with the GPU range check and the host scan);
#   - examples/bench_element.rs: appsrc pairs -> vmafgpu -> fakesink, frames/s and live latency,
#     frames in the element's pinned pool (ALLOCATION query) and in plain pageable buffers, for
#     1080p 8-bit and 4K 10-bit with backend=cuda; the CPU backend at a small frame count. GPU
#     memory sampled with nvidia-smi.
#
# Here:  cargo build --release && ../shared/tools/device-bundle.sh --tests
#        (the bundle lists bench_element and cuda_host_planes in .gstbundle/tests.txt)
# There: source .gstbundle/env.sh && OUT=... scripts/gpu-host-planes-run.sh     (logs in $OUT)
set -uo pipefail
OUT=${OUT:-/tmp/vmafgpu-gpu-run}
mkdir -p "$OUT"
export VMAFGPU_REQUIRE_GPU=1
bin() { echo ".gstbundle/$(grep -m1 "/$1-" .gstbundle/tests.txt)"; }
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
fail=0
BE=.gstbundle/bin/bench_element
[ -x "$BE" ] || BE=$(bin bench_element)

step "test cuda_host_planes (host planes on the GPU: pinned and pageable equal push and the CPU)"
timeout 300 "$(bin cuda_host_planes)" --nocapture 2>&1 | tee "$OUT/cuda_host_planes.txt" | tail -20
[ "${PIPESTATUS[0]}" = 0 ] || { echo "FAILED: cuda_host_planes"; fail=1; }

nvidia-smi --query-gpu=memory.used --format=csv,noheader -lms 100 > "$OUT/mem-bench_element.txt" 2>/dev/null &
smi=$!
step "bench_element backend=cuda, pinned pool and pageable, 1080p 8-bit and 4K 10-bit (+ live latency at 60 fps)"
timeout 420 "$BE" --backend cuda --memory both 1920x1080:8:3000 3840x2160:10:600 2>&1 | tee "$OUT/bench_element-cuda.txt"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "FAILED: bench_element cuda"; fail=1; }
kill $smi 2>/dev/null
echo "peak GPU memory used during bench_element (MiB): $(sort -n "$OUT/mem-bench_element.txt" | tail -1)"
step "bench_element backend=cpu (small frame counts; live latency at 20 fps)"
timeout 300 "$BE" --backend cpu --memory pageable --latency-frames 60 --rate 20 \
  1920x1080:8:200 3840x2160:10:60 2>&1 | tee "$OUT/bench_element-cpu.txt"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "FAILED: bench_element cpu"; fail=1; }
step "host planes done, fail=$fail"
exit $fail
