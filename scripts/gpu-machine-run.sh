#!/usr/bin/env bash
# The GPU machine's run, after scripts/gpu-prepare.sh here. Parts (PARTS, default "T"):
#   T  every GPU test with VMAFGPU_REQUIRE_GPU=1 (nothing passes by skipping); carry .gstbundle,
#      .gpudata/bins.tar.xz, .gpudata/full, .gpudata/h264
#   M  CUDA memory from NVDEC: every route's frame messages == (compare.sh), decode alone against
#      decode and score (bench.sh); carry .gpudata/h264 and .gpudata/nvbench instead of full
#   B  bench_element: v0 1080p 8-bit, 4K 10-bit, five companions; v1 3d0h 1080p and 1d5h_2160 4K;
#      standalone CAMBI and SpEED temporal (v0 beside them) at 1080p 8-bit and 4K 10-bit; 16 live channels
#   S  soak: 300,000 1080p frames with backend=cuda, report written, RSS and GPU memory sampled
#   C  the vmafgpu command, whole process on 2,000 raw 1080p frames (scripts/cli-raw-bench.sh)
#   Q  vmafgpu batch: 200 pairs of 60 frames against one process per pair (scripts/cli-batch-bench.sh;
#      after C, whose files it reads)
#   X  compute-sanitizer: memcheck and racecheck on the quick parity runs
# Steps run in that order under one deadline (BUDGET seconds from the start, default 540: one
# device call is at most 600 s); a step the deadline cuts is recorded as such. One line per step
# in $OUT/steps.txt and on stdout (the device tool returns only a few files).
#   there: source .gstbundle/env.sh && PARTS="T" BUDGET=540 scripts/gpu-machine-run.sh
set -uo pipefail
OUT=${OUT:-/tmp/vmafgpu-gpu-run}; mkdir -p "$OUT"
PARTS=${PARTS:-T}
export VMAFGPU_REQUIRE_GPU=1
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-540}))
B=.gpudata/bins
mkdir -p $B && tar -xJf .gpudata/bins.tar.xz -C $B
export PATH=$PWD/$B:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p tests/data/yuv
for f in .gpudata/full/*.xz; do [ -e "$f" ] && xz -dc "$f" > "tests/data/yuv/$(basename "$f" .xz)"; done
export VMAFGPU_YUV_DIR=tests/data/yuv VMAFGPU_H264_DIR=.gpudata/h264 VMAFGPU_NVBENCH_DIR=.gpudata/nvbench
export VMAFGPU_GOLDEN_PAIRS=carphone,bbb360p10
has() { [[ " $PARTS " == *" $1 "* ]]; }
# t NAME SECONDS CMD...: run with what is left of the deadline; a summary line
t() {
  local name=$1 want=$2; shift 2
  local left=$((DEADLINE - $(date +%s)))
  if [ $left -le 5 ]; then echo "$name: not run (deadline)" | tee -a "$OUT/steps.txt"; return; fi
  [ $want -lt $left ] || want=$left
  local t0=$(date +%s)
  timeout $want "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local sum
  sum=$(grep -E "^test result|ERROR SUMMARY|RACECHECK SUMMARY|panicked at" "$OUT/$name.log" | tail -2 | tr '\n' ' ')
  echo "$name: rc=$rc $(( $(date +%s) - t0 ))s $sum" | tee -a "$OUT/steps.txt"
  [ $rc = 0 ] || grep -E "FAILED|panicked|differ|Error" "$OUT/$name.log" | head -8 | cut -c1-300
}
if has T; then
  t cuda_parity 90 $B/cuda_parity
  t companion_parity 200 $B/companion_parity --nocapture
  t element_gpu 90 $B/element_gpu --test-threads=1 --nocapture
  t cuda_memory 90 $B/cuda_memory --nocapture
  t element_golden 120 $B/element_golden carphone bbb360p10 cuda
  t element 60 $B/element
  t element_robust 90 $B/element_robust
  t cuda_host_planes 90 $B/cuda_host_planes
  t kernel_cache 90 $B/kernel_cache --nocapture
fi
if has M; then
  mkdir -p "$OUT/cmp"
  t nvdec_compare 150 bash scripts/cuda-memory/compare.sh "$OUT/cmp"
  grep -E "DIFFER|identical" "$OUT/nvdec_compare.log" | sort | uniq -c | head -20
  t nvdec_bench 200 bash scripts/cuda-memory/bench.sh
  grep -E "wall_s" "$OUT/nvdec_bench.log" | sed 's/ rc_tail=.*//'
fi
be() { local name=$1; shift; t "$name" 120 $B/bench_element --backend cuda --memory pinned "$@"; grep -E "^\| [0-9]" "$OUT/$name.log"; }
if has B; then
  be bench_v0 --latency-frames 0 1920x1080:8:3000 3840x2160:10:600
  be bench_companions --latency-frames 0 --all-metrics 1920x1080:8:2000
  be bench_3d0h --latency-frames 0 --model vmaf_v1.0.16_3d0h 1920x1080:10:3000
  be bench_1d5h --latency-frames 0 --model vmaf_v1.0.16_1d5h_2160 3840x2160:10:600
  be bench_v1_8bit --latency-frames 0 --model vmaf_v1.0.16_3d0h 1920x1080:8:3000
  be bench_cambi --latency-frames 0 --metric cambi 1920x1080:8:1000 3840x2160:10:300
  be bench_temporal --latency-frames 0 --metric speed-temporal 1920x1080:8:1000 3840x2160:10:300
  be bench_channels --latency-frames 600 --channels 16 1920x1080:8:600
fi
if has S; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader -l 10 > "$OUT/soak-gpu-mem.txt" 2>/dev/null &
  smi=$!
  t soak 300 $B/soak_element --backend cuda --samples 30 1920x1080:${SOAK_FRAMES:-300000}
  kill $smi 2>/dev/null
  grep -iE "growth|RSS|frames/s" "$OUT/soak.log" | tail -6
  echo "GPU memory used (MiB), distinct samples: $(sort -u "$OUT/soak-gpu-mem.txt" | tr '\n' ' ')"
fi
if has C; then
  t cli_raw 240 bash scripts/cli-raw-bench.sh $B/vmafgpu "$OUT/cli" 2000
  grep -E "frames/s|timing:" "$OUT/cli_raw.log" | head -12
fi
if has Q; then
  t cli_batch 240 bash scripts/cli-batch-bench.sh $B/vmafgpu "$OUT/batch"
  grep -E "process per pair|^batch|pooled|failed|no /tmp" "$OUT/cli_batch.log" | head -8
fi
if has X; then
  VMAFGPU_PARITY_QUICK=1 t memcheck_cuda 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/cuda_parity
  VMAFGPU_PARITY_QUICK=1 t racecheck_cuda 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/cuda_parity cuda_reset
  VMAFGPU_PARITY_QUICK=1 t memcheck_v1 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/companion_parity cambi speed
  VMAFGPU_PARITY_QUICK=1 t racecheck_v1 240 compute-sanitizer --tool racecheck --error-exitcode 9 $B/companion_parity cambi_equals speed_chroma speed_temporal --test-threads=1
fi
echo "done in $(( $(date +%s) - START ))s"
