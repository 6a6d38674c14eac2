#!/usr/bin/env bash
# Untracked: one GPU lease: tests + A/B of the host-chroma route (VMAFGPU_HOST_CHROMA=0 vs default).
set -uo pipefail
source .gstbundle/env.sh
export VMAFGPU_REQUIRE_GPU=1
L=$OUT/logs; mkdir -p $L
ln -sfn "$PWD" /work/devrun 2>/dev/null || true
bin() { ls .gstbundle/bin/$1-* | head -1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; } > $L/machine.txt 2>&1
mkdir -p tests/data/yuv
if [ "${TESTS:-1}" = 1 ]; then
  for f in .gpudata/full/*.xz; do xz -dc "$f" > "tests/data/yuv/$(basename "$f" .xz)"; done
  dec() { gst-launch-1.0 -q filesrc location=$1 ! $2 ! h264parse ! nvh264dec ! videoconvert ! video/x-raw,format=I420 ! filesink location=$3; }
  dec .gpudata/skv/carphone_pristine.mp4 qtdemux tests/data/yuv/carphone_ref.yuv > $L/dec.log 2>&1
  dec .gpudata/skv/carphone_distorted.mp4 qtdemux tests/data/yuv/carphone_dis.yuv >> $L/dec.log 2>&1
  dec .gpudata/skv/bigbuckbunny.mp4 qtdemux /tmp/bbb_full.yuv >> $L/dec.log 2>&1
  head -c $((1382400*48)) /tmp/bbb_full.yuv > tests/data/yuv/bbb720_ref.yuv
  dec .gpudata/skv/bbb720_dis_x264crf35.mkv matroskademux tests/data/yuv/bbb720_dis.yuv >> $L/dec.log 2>&1
  sha256sum -c tests/data/yuv.sha256 > $L/sha.log 2>&1
  export VMAFGPU_YUV_DIR=tests/data/yuv
  timeout 300 $(bin cuda_host_planes) --nocapture > $L/cuda_host_planes.log 2>&1; echo "rc $?" >> $L/cuda_host_planes.log
  timeout 300 $(bin element_golden) > $L/element_golden.log 2>&1; echo "rc $?" >> $L/element_golden.log
  timeout 300 $(bin element) > $L/element.log 2>&1; echo "rc $?" >> $L/element.log
  [ "${SKIP_MORE:-0}" = 1 ] || { timeout 300 $(bin companion_parity) --nocapture > $L/companion_parity.log 2>&1; echo "rc $?" >> $L/companion_parity.log; }
  [ "${SKIP_MORE:-0}" = 1 ] || { timeout 300 $(bin cuda_parity) > $L/cuda_parity.log 2>&1; echo "rc $?" >> $L/cuda_parity.log; }
fi
if [ "${BENCH:-1}" = 1 ]; then
B=".gstbundle/bin/bench_element --backend cuda --latency-frames 0"
{
  for r in 1 2; do
    echo "== all five pinned baseline (copy route, no graphs)"; VMAFGPU_HOST_CHROMA=0 VMAFGPU_COMPANION_GRAPHS=0 $B --memory pinned --all-metrics 1920x1080:8:1500
    echo "== all five pinned host route, no graphs"; VMAFGPU_COMPANION_GRAPHS=0 $B --memory pinned --all-metrics 1920x1080:8:1500
    echo "== all five pinned host route + graphs"; $B --memory pinned --all-metrics 1920x1080:8:1500
  done
  echo "== all five pageable baseline"; VMAFGPU_HOST_CHROMA=0 VMAFGPU_COMPANION_GRAPHS=0 $B --memory pageable --all-metrics 1920x1080:8:1500
  echo "== all five pageable host route + graphs"; $B --memory pageable --all-metrics 1920x1080:8:1500
  echo "== 4K10 all five baseline"; VMAFGPU_HOST_CHROMA=0 VMAFGPU_COMPANION_GRAPHS=0 $B --memory pinned --all-metrics 3840x2160:10:300
  echo "== 4K10 all five new"; $B --memory pinned --all-metrics 3840x2160:10:300
  echo "== 1080p10 all five new"; $B --memory pinned --all-metrics 1920x1080:10:1500
  for m in psnr ssim ms-ssim ciede psnr-hvs; do echo "== $m new"; $B --memory pinned --metric $m 1920x1080:8:1500; done
  echo "== VMAF alone"; $B --memory pinned 1920x1080:8:3000
} > $L/bench.log 2>&1
.gstbundle/bin/bench_element --backend cuda --memory pinned --latency-frames 300 --all-metrics 1920x1080:8:10 > $L/latency.log 2>&1
for r in 1 2; do
  VMAFGPU_COMPANION_GRAPHS=0 timeout 120 .gstbundle/bin/bench_gpu --all-metrics 1920x1080:8:300 >> $L/bench_gpu_nographs.log 2>&1
  timeout 120 .gstbundle/bin/bench_gpu --all-metrics 1920x1080:8:300 >> $L/bench_gpu.log 2>&1
done
fi
[ "${PROF:-0}" = 1 ] && bash prof2.sh
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
