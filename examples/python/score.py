#!/usr/bin/env python3
"""Score a raw .yuv pair with the vmafgpu GStreamer element from Python (PyGObject).

    GST_PLUGIN_PATH=$PWD/target/release python3 examples/python/score.py \
        tests/data/yuv/carphone_ref.yuv tests/data/yuv/carphone_dis.yuv -W 176 -H 144 \
        --golden tests/data/goldens/carphone_v3.2.0.json

The element posts element messages whose structure is named "VMAF"; their "type" field is
"frame" (one per scored frame), "window" (every `window` frames) or "pooled" (once, at EOS).
Every field is read into a dict (doubles as Python floats, the exact f64 the element computed),
so the messages become a list of dicts. The script prints the pooled VMAF (libvmaf's line) and,
with --golden, checks the per-frame and pooled VMAF against a libvmaf JSON report with ==.
Needs python3-gi and gir1.2-gstreamer-1.0 (Debian); exit status 0, 1 on a mismatch or error.
"""

import argparse
import json
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def structure_to_dict(s):
    """Every field of a Gst.Structure, by name (uint64 times stay ints: u64::MAX is unknown)."""
    return {s.nth_field_name(i): s.get_value(s.nth_field_name(i)) for i in range(s.n_fields())}


def score(ref, dist, width, height, bitdepth, fps, backend, window):
    fmt = "i420" if bitdepth == 8 else "i420-10le"
    if bitdepth not in (8, 10):
        raise SystemExit("score.py: --bitdepth 8 or 10")
    src = (
        "filesrc location={loc} ! rawvideoparse width={w} height={h} format={fmt} "
        "framerate={fps}/1 ! v.{pad}"
    )
    desc = " ".join(
        [
            "vmafgpu name=v frame-message=true backend={} window={} ! fakesink".format(
                backend, window
            ),
            src.format(loc=ref, w=width, h=height, fmt=fmt, fps=fps, pad="ref_sink"),
            src.format(loc=dist, w=width, h=height, fmt=fmt, fps=fps, pad="dist_sink"),
        ]
    )
    pipeline = Gst.parse_launch(desc)
    bus = pipeline.get_bus()
    messages = []
    pipeline.set_state(Gst.State.PLAYING)
    try:
        while True:
            msg = bus.timed_pop_filtered(
                Gst.CLOCK_TIME_NONE,
                Gst.MessageType.ELEMENT | Gst.MessageType.EOS | Gst.MessageType.ERROR,
            )
            if msg.type == Gst.MessageType.EOS:
                break
            if msg.type == Gst.MessageType.ERROR:
                err, debug = msg.parse_error()
                raise RuntimeError("{} ({})".format(err.message, debug))
            s = msg.get_structure()
            if s is not None and s.get_name() == "VMAF":
                messages.append(structure_to_dict(s))
    finally:
        pipeline.set_state(Gst.State.NULL)
    return messages


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("reference")
    p.add_argument("distorted")
    p.add_argument("-W", "--width", type=int, required=True)
    p.add_argument("-H", "--height", type=int, required=True)
    p.add_argument("-b", "--bitdepth", type=int, default=8)
    p.add_argument("--fps", type=int, default=25)
    p.add_argument("--backend", default="auto", help="auto, cpu, cuda, hip")
    p.add_argument("--window", type=int, default=0, help="frames per window message (0: none)")
    p.add_argument("--golden", help="libvmaf JSON report to check the VMAF scores against (==)")
    a = p.parse_args()

    Gst.init(None)
    if Gst.ElementFactory.find("vmafgpu") is None:
        print("score.py: no vmafgpu element (set GST_PLUGIN_PATH to the plugin's folder)",
              file=sys.stderr)
        return 1
    messages = score(a.reference, a.distorted, a.width, a.height, a.bitdepth, a.fps,
                     a.backend, a.window)
    frames = [m for m in messages if m["type"] == "frame"]
    windows = [m for m in messages if m["type"] == "window"]
    pooled = [m for m in messages if m["type"] == "pooled"]
    if len(pooled) != 1:
        print("score.py: {} pooled messages".format(len(pooled)), file=sys.stderr)
        return 1
    pooled = pooled[0]
    vmaf = pooled["vmaf-mean"]
    print("vmaf_v0.6.1: {:.6f}".format(vmaf))
    print(
        "frames {} (messages: {} frame, {} window), backend {}, unmatched ref {} dist {}, "
        "pooled VMAF {!r} (min {!r}, harmonic mean {!r})".format(
            pooled["frames"], len(frames), len(windows), pooled["backend"],
            pooled["unmatched-ref"], pooled["unmatched-dist"], vmaf, pooled["vmaf-min"],
            pooled["vmaf-harmonic-mean"],
        )
    )
    if a.golden:
        with open(a.golden) as f:
            golden = json.load(f)
        want = [fr["metrics"]["vmaf"] for fr in golden["frames"]]
        got = [fr["vmaf"] for fr in sorted(frames, key=lambda fr: fr["index"])]
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        want_pooled = golden["pooled_metrics"]["vmaf"]
        checks = [
            ("frame count", len(got) == len(want) and pooled["frames"] == len(want)),
            ("per-frame VMAF ==", not bad),
            ("pooled mean ==", vmaf == want_pooled["mean"]),
            ("pooled min ==", pooled["vmaf-min"] == want_pooled["min"]),
            ("pooled max ==", pooled["vmaf-max"] == want_pooled["max"]),
            ("pooled harmonic mean ==",
             pooled["vmaf-harmonic-mean"] == want_pooled["harmonic_mean"]),
        ]
        for name, ok in checks:
            print("{}: {}".format(name, "ok" if ok else "MISMATCH"))
        if bad:
            i = bad[0]
            print("first mismatch: frame {}: {!r} != {!r}".format(i, got[i], want[i]))
        if not all(ok for _, ok in checks):
            return 1
        print("golden {}: pooled VMAF {!r} == libvmaf's".format(a.golden, want_pooled["mean"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
