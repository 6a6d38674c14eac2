#!/usr/bin/env bash
# The `vmafgpu` command's NVIDIA decoders on the GPU machine: the H.264 distorted clip of the
# goldens (tests/data/goldens/bbb720_dis_x264crf35.mkv, tracked) decoded by nvh264dec, against a
# .y4m of the raw reference's first 16 frames; every VMAF feature and score of frames 0-14 must
# `==` libvmaf 3.2.0's golden (frame 15's motion has no next frame in the cut file).
#
#   here:  scripts/cli-nvdec-check.sh make          (.gpudata/bbb720_ref16.y4m, 22 MB; carry it)
#   there: source .gstbundle/env.sh && scripts/cli-nvdec-check.sh run .gstbundle/bin/vmafgpu
set -euo pipefail
y4m=.gpudata/bbb720_ref16.y4m
case "${1:-}" in
make)
  mkdir -p .gpudata
  python3 - "$y4m" <<'PY'
import sys
w, h, n = 1280, 720, 16
fb = w * h * 3 // 2
with open("tests/data/yuv/bbb720_ref.yuv", "rb") as i, open(sys.argv[1], "wb") as o:
    o.write(b"YUV4MPEG2 W1280 H720 F25:1 Ip A1:1 C420jpeg\n")
    for _ in range(n):
        o.write(b"FRAME\n" + i.read(fb))
PY
  ls -l "$y4m" ;;
run)
  bin=${2:?usage: $0 run path/to/vmafgpu}
  out=${OUT:-/tmp}
  "$bin" -r "$y4m" -d tests/data/goldens/bbb720_dis_x264crf35.mkv --backend cuda --verbose \
    --json -o "$out/nvdec.json" 2> "$out/nvdec.err" || { cat "$out/nvdec.err"; exit 1; }
  cat "$out/nvdec.err"
  grep -q "decoders: NVIDIA first" "$out/nvdec.err" || { echo "FAIL: NVIDIA decoders not chosen"; exit 1; }
  python3 - "$out/nvdec.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))["frames"]
want = json.load(open("tests/data/goldens/bbb720_v3.2.0.json"))["frames"]
bad = checked = 0
for i in range(15):
    for k, v in got[i]["metrics"].items():
        if k in want[i]["metrics"]:
            checked += 1
            if want[i]["metrics"][k] != v:
                bad += 1
                print(f"frame {i} {k}: got {v!r}, want {want[i]['metrics'][k]!r}")
print(f"nvdec check: {checked} values compared, {bad} differ")
sys.exit(1 if bad or checked < 15 * 15 else 0)
PY
  ;;
*) echo "usage: $0 make | run path/to/vmafgpu" >&2; exit 2 ;;
esac
