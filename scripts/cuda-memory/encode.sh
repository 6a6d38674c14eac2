#!/usr/bin/env bash
# On the build machine (x264enc: gstreamer1.0-plugins-ugly; x265enc: -bad), git-ignored:
#   .gpudata/h264     what tests/cuda_memory.rs reads (VMAFGPU_H264_DIR): the H.264 test pairs and
#                     the golden pairs losslessly in HEVC (~8 MB)
#   .gpudata/nvbench  what compare.sh and bench.sh add: a 1080p H.264 pair, a 4K 10-bit HEVC
#                     pair (with ENCODE_AVDEC=1 carphone's avdec_h264 decode, gzipped: the GPU
#                     bundle has no gst-libav)
# The two do not fit one 64 MiB transfer with the test data: carry one or the other.
set -euo pipefail
o=.gpudata/h264; nb=.gpudata/nvbench; mkdir -p "$o" "$nb"
for n in carphone:176:144 bbb720:1280:720; do IFS=: read -r name w h <<< "$n"; for s in ref dis; do
  gst-launch-1.0 -q filesrc location=tests/data/yuv/${name}_${s}.yuv ! rawvideoparse width=$w height=$h format=i420 framerate=25/1 ! x264enc speed-preset=faster bitrate=400 key-int-max=24 threads=4 ! video/x-h264,profile=high ! h264parse ! video/x-h264,stream-format=byte-stream ! filesink location=$o/${name}_${s}.h264
done; done
for b in ref:2000 dis:1000; do IFS=: read -r s br <<< "$b"
  gst-launch-1.0 -q videotestsrc num-buffers=300 pattern=smpte horizontal-speed=4 ! video/x-raw,format=I420,width=1920,height=1080,framerate=25/1 ! x264enc speed-preset=ultrafast bitrate=$br key-int-max=50 threads=2 ! video/x-h264,profile=high ! h264parse ! video/x-h264,stream-format=byte-stream ! filesink location=$nb/b1080_${s}.h264
done
# ENCODE_AVDEC=1: carphone's avdec_h264 decode too (5 MB; compare.sh checks it against nvh264dec)
if [ "${ENCODE_AVDEC:-0}" = 1 ]; then for s in ref dis; do
  gst-launch-1.0 -q filesrc location=$o/carphone_$s.h264 ! h264parse ! avdec_h264 ! video/x-raw,format=I420 ! filesink location=$nb/carphone_$s.avdec.yuv
  gzip -9f $nb/carphone_$s.avdec.yuv
done; fi
# The golden pairs losslessly in HEVC (x265 lossless=1: transquant bypass, a Main / Main 10 tool):
# nvh265dec gives back the raw samples, so the element must give libvmaf's goldens
# (tests/cuda_memory.rs nvdec_lossless_hevc_equals_libvmaf).
for n in carphone:176:144:i420 bbb360p10:640:360:i420-10le; do IFS=: read -r name w h f <<< "$n"; for s in ref dis; do
  gst-launch-1.0 -q filesrc location=tests/data/yuv/${name}_${s}.yuv ! rawvideoparse width=$w height=$h format=$f framerate=25/1 ! x265enc option-string=lossless=1 speed-preset=ultrafast ! video/x-h265,stream-format=byte-stream ! filesink location=$o/${name}_${s}.lossless.h265
done; done
# 4K 10-bit HEVC (Main 10) for bench.sh: 100 frames, two rates (reference, distorted).
if [ "${ENCODE_4K:-1}" = 1 ]; then for b in ref:6000 dis:2000; do IFS=: read -r s br <<< "$b"
  gst-launch-1.0 -q videotestsrc num-buffers=100 pattern=smpte horizontal-speed=8 ! video/x-raw,format=I420_10LE,width=3840,height=2160,framerate=25/1 ! x265enc speed-preset=ultrafast bitrate=$br key-int-max=50 ! video/x-h265,stream-format=byte-stream ! filesink location=$nb/b2160p10_${s}.h265
done; fi
