#!/usr/bin/env bash
# decode-only vs decode+score: 1080p H.264 (x264, 300 frames x8 concatenated, nvh264dec) and 4K 10-bit HEVC (x265, 100 frames x10, nvh265dec), from encode.sh
set -u
cd "${VMAFGPU_NVBENCH_DIR:-.gpudata/nvbench}"
for s in ref dis; do for i in 1 2 3 4 5 6 7 8; do cat b1080_$s.h264; done > /tmp/b4_$s.h264; done
R=/tmp/b4_ref.h264; D=/tmp/b4_dis.h264
CU='nvh264dec ! video/x-raw(memory:CUDAMemory)'
SY='nvh264dec ! video/x-raw'
TIMEFORMAT=%R
t() { local name=$1; shift; for i in 1 2; do
  local s; s=$( { time gst-launch-1.0 -q "$@" > /tmp/out.txt 2>&1; } 2>&1 ); echo "$name run$i wall_s=$s rc_tail=$(tail -c 300 /tmp/out.txt | tr '\n' ' ')"; done; }
t decode_only_cuda filesrc location=$R ! h264parse ! $CU ! fakesink sync=false filesrc location=$D ! h264parse ! $CU ! fakesink sync=false
t decode_score_cuda filesrc location=$R ! h264parse ! $CU ! v.ref_sink filesrc location=$D ! h264parse ! $CU ! v.dist_sink vmafgpu name=v backend=cuda ! fakesink sync=false
t decode_only_system filesrc location=$R ! h264parse ! $SY ! fakesink sync=false filesrc location=$D ! h264parse ! $SY ! fakesink sync=false
t decode_score_system filesrc location=$R ! h264parse ! $SY ! v.ref_sink filesrc location=$D ! h264parse ! $SY ! v.dist_sink vmafgpu name=v backend=cuda ! fakesink sync=false
# frames and the route taken (warnings of the element)
GST_DEBUG=vmafgpu:2 gst-launch-1.0 -m filesrc location=$R ! h264parse ! $CU ! v.ref_sink filesrc location=$D ! h264parse ! $CU ! v.dist_sink vmafgpu name=v backend=cuda ! fakesink sync=false 2>&1 | grep -E "type=\(string\)pooled|downloaded|WARN|ERROR" | cut -c1-400 | head -8
# 4K 10-bit HEVC (encode.sh: 100 frames x10 concatenated), nvh265dec (P010 in CUDA memory)
if [ -e b2160p10_ref.h265 ]; then
  for s in ref dis; do for i in 1 2 3 4 5 6 7 8 9 10; do cat b2160p10_$s.h265; done > /tmp/c4_$s.h265; done
  R=/tmp/c4_ref.h265; D=/tmp/c4_dis.h265
  C5='nvh265dec ! video/x-raw(memory:CUDAMemory)'
  t hevc4k_decode_only_cuda filesrc location=$R ! h265parse ! $C5 ! fakesink sync=false filesrc location=$D ! h265parse ! $C5 ! fakesink sync=false
  t hevc4k_decode_score_cuda filesrc location=$R ! h265parse ! $C5 ! v.ref_sink filesrc location=$D ! h265parse ! $C5 ! v.dist_sink vmafgpu name=v backend=cuda ! fakesink sync=false
fi
