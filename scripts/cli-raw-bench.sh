#!/usr/bin/env bash
# Issue 24's goal, measured: raw 1080p 8-bit I420, 2,000 frames, the whole `vmafgpu` process
# (exec to exit, report written) with --backend cuda. On the GPU machine (Python with numpy):
#
#   source .gstbundle/env.sh
#   scripts/cli-raw-bench.sh .gstbundle/bin/vmafgpu [OUT_DIR] [FRAMES]
#
# Makes /tmp/cli_ref.yuv and /tmp/cli_dis.yuv (20 distinct frames cycled; about 6.2 GB each,
# kept in the page cache), warms GStreamer's registry and the kernel cache with one short run,
# then times three whole runs, one with --verbose (its `timing:` line splits start-up,
# scoring and teardown), and one per raw-reader thread count (VMAFGPU_READ_THREADS 1, 2, 4, 8).
set -uo pipefail
bin=${1:?usage: $0 path/to/vmafgpu [OUT_DIR] [FRAMES]}
out=${2:-${OUT:-/tmp/cli-bench}}
n=${3:-2000}
mkdir -p "$out"
w=1920 h=1080
for side in ref dis; do
  f=/tmp/cli_$side.yuv
  want=$((w * h * 3 / 2 * n))
  if [ "$(stat -c %s "$f" 2>/dev/null || echo 0)" != "$want" ]; then
    python3 - "$f" "$n" "$side" <<'PY'
import sys, numpy as np
path, n, side = sys.argv[1], int(sys.argv[2]), sys.argv[3]
w, h, k = 1920, 1080, 20
rng = np.random.default_rng(1 if side == "ref" else 2)
y, x = np.mgrid[0:h, 0:w]
frames = []
for i in range(k):
    base = 0.5 + 0.3 * np.sin(6.0 * x / w + 4.0 * y / h + i * 0.1) * np.cos(3.0 * y / h - i * 0.05)
    noise = 0.01 if side == "ref" else 0.04
    luma = np.clip(base + rng.normal(0, noise, (h, w)), 0, 1) * 255
    chroma = np.full(2 * (w // 2) * (h // 2), 128)
    frames.append(np.concatenate([luma.ravel(), chroma]).astype(np.uint8).tobytes())
with open(path, "wb") as o:
    for j in range(n):
        o.write(frames[j % k])
PY
  fi
  cat "$f" > /dev/null # into the page cache
done
args=(-r /tmp/cli_ref.yuv -d /tmp/cli_dis.yuv -w $w -h $h -p 420 -b 8 --backend cuda -q)
# warm-up: GStreamer's registry, the kernel cache
"$bin" "${args[@]}" --frame_cnt 10 > /dev/null || exit 1
for round in 1 2 3; do
  t0=$(date +%s.%N)
  "$bin" "${args[@]}" --json -o "$out/cli-$round.json" || exit 1
  t1=$(date +%s.%N)
  python3 -c "import json; d=json.load(open('$out/cli-$round.json')); f=len(d['frames']); s=$t1-$t0; print(f'round $round: {f} frames in {s:.3f} s = {f/s:.0f} frames/s (whole process), vmaf mean', d['pooled_metrics']['vmaf']['mean'])"
done
"$bin" "${args[@]}" --json -o "$out/cli-verbose.json" --verbose 2>&1 | grep -E "timing:|raw reads:"
# the raw reader's threads per input (default: a quarter of the cores, at most 4)
for t in 1 2 4 8; do
  t0=$(date +%s.%N)
  VMAFGPU_READ_THREADS=$t "$bin" "${args[@]}" --json -o "$out/cli-t$t.json" || exit 1
  t1=$(date +%s.%N)
  python3 -c "print(f'VMAFGPU_READ_THREADS=$t: {$n/($t1-$t0):.0f} frames/s (whole process)')"
done
