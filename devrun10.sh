#!/usr/bin/env bash
# Untracked: one GPU lease: tests + A/B of the host-chroma route (VMAFGPU_HOST_CHROMA=0 vs default).
set -uo pipefail
source .gstbundle/env.sh
export VMAFGPU_REQUIRE_GPU=1
L=$OUT/logs; mkdir -p $L
ln -sfn "$PWD" /work/devrun 2>/dev/null || true
bin() { ls .gstbundle/bin/$1-* | head -1; }
[ -f .gstbundle/bin/bench_element_old.xz ] && xz -d .gstbundle/bin/bench_element_old.xz && chmod +x .gstbundle/bin/bench_element_old
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
if [ "${SANIT:-0}" = 1 ]; then
  VMAFGPU_PARITY_QUICK=1 timeout 280 compute-sanitizer --tool memcheck --report-api-errors no $(bin cuda_host_planes) push_shared_with_chroma > $L/memcheck_host.log 2>&1; echo "rc $?" >> $L/memcheck_host.log
  timeout 250 compute-sanitizer --tool memcheck --report-api-errors no $(bin companion_parity) graphs_equal > $L/memcheck_graphs.log 2>&1; echo "rc $?" >> $L/memcheck_graphs.log
  timeout 250 compute-sanitizer --tool racecheck --report-api-errors no $(bin companion_parity) graphs_equal > $L/racecheck_graphs.log 2>&1; echo "rc $?" >> $L/racecheck_graphs.log
  timeout 250 compute-sanitizer --tool synccheck --report-api-errors no $(bin companion_parity) graphs_equal > $L/synccheck_graphs.log 2>&1; echo "rc $?" >> $L/synccheck_graphs.log
fi
if [ "${BENCH:-1}" = 1 ]; then
B=".gstbundle/bin/bench_element --backend cuda --latency-frames 0"
O=".gstbundle/bin/bench_element_old --backend cuda --latency-frames 0"
{
  for r in 1 2; do
    echo "== all five pinned (this session)"; $B --memory pinned --all-metrics 1920x1080:8:1500
    [ -x .gstbundle/bin/bench_element_old ] && { echo "== all five pinned (session start ad8d341)"; $O --memory pinned --all-metrics 1920x1080:8:1500; }
  done
  echo "== all five NV12 pinned"; $B --memory pinned --nv12 --all-metrics 1920x1080:8:1500
  echo "== 1080p10 all five"; $B --memory pinned --all-metrics 1920x1080:10:1500
  [ -x .gstbundle/bin/bench_element_old ] && { echo "== 1080p10 all five (session start ad8d341)"; $O --memory pinned --all-metrics 1920x1080:10:1500; }
  echo "== 4K10 all five"; $B --memory pinned --all-metrics 3840x2160:10:300
  [ -x .gstbundle/bin/bench_element_old ] && { echo "== 4K10 all five (session start ad8d341)"; $O --memory pinned --all-metrics 3840x2160:10:300; }
  echo "== VMAF alone"; $B --memory pinned 1920x1080:8:3000
  for m in psnr ssim ms-ssim ciede psnr-hvs; do echo "== $m alone"; $B --memory pinned --metric $m 1920x1080:8:1500; done
  [ -x .gstbundle/bin/bench_element_old ] && for m in ms-ssim ssim; do echo "== $m alone (session start ad8d341)"; $O --memory pinned --metric $m 1920x1080:8:1500; done
} > $L/bench.log 2>&1
fi
[ "${PROF:-0}" = 1 ] && bash prof5.sh
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
