#!/usr/bin/env bash
# Routes compared with ==: the element's frame messages (every metric, GStreamer's round-trip
# double serialisation), timing fields stripped. $1 = out dir.
set -u
O=$1; H=${VMAFGPU_H264_DIR:-.gpudata/h264}; N=${VMAFGPU_NVBENCH_DIR:-.gpudata/nvbench}
CU='nvh264dec ! video/x-raw(memory:CUDAMemory)'
SY='nvh264dec ! video/x-raw'
run() { # name ref_src dist_src props
  local n=$1 r=$2 d=$3 p=$4
  GST_DEBUG=vmafgpu:2 gst-launch-1.0 -m -v $r ! v.ref_sink $d ! v.dist_sink vmafgpu name=v $p ! fakesink sync=false > $O/$n.raw 2> $O/$n.err
  echo "rc=$?" >> $O/$n.err
  grep -o 'VMAF, type=(string)frame.*' $O/$n.raw | sed -E 's/timestamp=[^,]*, stream-time=[^,]*, running-time=[^,]*, duration=[^,]*, //' > $O/$n.frames
  local src=$(grep -o 'vmafgpu0.GstAggregatorPad:src: caps = [^,]*\|v.GstAggregatorPad:src: caps = [^,]*' $O/$n.raw | head -1)
  echo "$n: $(wc -l < $O/$n.frames) frames, downloaded-warnings=$(grep -c downloaded $O/$n.err), src: ${src##*caps = }, $(grep -o 'backend=(string)[a-z]*' $O/$n.raw | head -1), $(tail -1 $O/$n.err)"
}
same() { if cmp -s $O/$1.frames $O/$2.frames && [ -s $O/$1.frames ]; then echo "  == $1 vs $2: identical"; else echo "  !! $1 vs $2 DIFFER"; diff $O/$1.frames $O/$2.frames | head -4 | cut -c1-300; fi; }
for c in carphone bbb720 b1080; do
  d=$H; [ $c = b1080 ] && d=$N
  R="filesrc location=$d/${c}_ref.h264 ! h264parse"; D="filesrc location=$d/${c}_dis.h264 ! h264parse"
  run ${c}_cuda "$R ! $CU" "$D ! $CU" backend=cuda
  run ${c}_sys "$R ! $SY" "$D ! $SY" backend=cuda
  run ${c}_mix1 "$R ! $CU" "$D ! $SY" backend=cuda
  run ${c}_mix2 "$R ! $SY" "$D ! $CU" backend=cuda
  same ${c}_cuda ${c}_sys; same ${c}_mix1 ${c}_sys; same ${c}_mix2 ${c}_sys
  if [ $c != b1080 ]; then
    run ${c}_cpu "$R ! $CU" "$D ! $CU" backend=cpu; same ${c}_cpu ${c}_sys
    run ${c}_psnr_cuda "$R ! $CU" "$D ! $CU" "backend=cuda psnr=true ssim=true"
    run ${c}_psnr_sys "$R ! $SY" "$D ! $SY" "backend=cuda psnr=true ssim=true"; same ${c}_psnr_cuda ${c}_psnr_sys
  fi
done
# avdec_h264 (decoded on the build machine into raw I420) vs nvh264dec
if [ -e $N/carphone_ref.avdec.yuv.gz ]; then
  for s in ref dis; do gunzip -c $N/carphone_$s.avdec.yuv.gz > /tmp/carphone_$s.avdec.yuv; done
  run carphone_avdec "filesrc location=/tmp/carphone_ref.avdec.yuv ! rawvideoparse width=176 height=144 format=i420 framerate=25/1" "filesrc location=/tmp/carphone_dis.avdec.yuv ! rawvideoparse width=176 height=144 format=i420 framerate=25/1" backend=cuda
  same carphone_avdec carphone_cuda
fi
