#!/usr/bin/env bash
# Issue 24's batch goal, measured: PAIRS pairs of FRAMES raw 1080p 8-bit frames each (the first
# FRAMES frames of scripts/cli-raw-bench.sh's files, which must exist: run that first), one
# report per pair, `vmafgpu batch` in one process against one `vmafgpu` process per pair (20
# timed), with --backend cuda. On the GPU machine:
#
#   source .gstbundle/env.sh
#   scripts/cli-batch-bench.sh .gstbundle/bin/vmafgpu [OUT_DIR] [PAIRS] [FRAMES]
set -uo pipefail
bin=${1:?usage: $0 path/to/vmafgpu [OUT_DIR] [PAIRS] [FRAMES]}
out=${2:-${OUT:-/tmp/cli-batch}}
pairs=${3:-200}
frames=${4:-60}
ref=/tmp/cli_ref.yuv dis=/tmp/cli_dis.yuv
[ -s $ref ] && [ -s $dis ] || { echo "no $ref / $dis: run scripts/cli-raw-bench.sh first"; exit 1; }
mkdir -p "$out"
geom=(-w 1920 -h 1080 -p 420 -b 8 --backend cuda -q)
m=$out/manifest.csv
echo "reference,distorted,id,options" > $m
for i in $(seq 0 $((pairs - 1))); do echo "$ref,$dis,p$i,--frame_cnt $frames" >> $m; done
now() { date +%s.%N; }
t0=$(now)
for i in $(seq 1 20); do
  "$bin" -r $ref -d $dis "${geom[@]}" --frame_cnt $frames --json -o "$out/single-$i.json" || exit 1
done
single=$(python3 -c "print(($(now) - $t0) / 20)")
echo "one process per pair: $single s a pair (20 pairs)"
run() {
  local name=$1; shift
  rm -rf "$out/$name"
  local t0=$(now)
  "$bin" batch $m --output-dir "$out/$name" "${geom[@]}" "$@" || { echo "$name: failed"; return; }
  python3 - "$out/$name/summary.json" "$t0" "$(now)" "$single" "$name" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows["pairs"] if isinstance(rows, dict) else rows
ok = sum(1 for r in rows if r["status"] == "ok")
s = float(sys.argv[3]) - float(sys.argv[2])
per = s / len(rows)
print(f"batch {sys.argv[5]}: {len(rows)} pairs ({ok} ok) in {s:.3f} s = {per:.3f} s a pair, "
      f"{float(sys.argv[4]) / per:.1f}x one process per pair")
PY
}
run default
run jobs1 --jobs 1
run jobs8 --jobs 8
# the same numbers as the single runs (pooled VMAF of the first pair)
python3 - "$out/single-1.json" "$out/default/p0.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["pooled_metrics"]["vmaf"]["mean"] for p in sys.argv[1:3])
print("pooled vmaf, single run vs batch:", a, b, "equal" if a == b else "DIFFER")
PY
