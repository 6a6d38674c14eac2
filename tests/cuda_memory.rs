//! Frames in CUDA memory (`video/x-raw(memory:CUDAMemory)`) on the sink pads.
//!
//! Everywhere (CI has no GPU): the pads take CUDA-memory caps beside system memory, such caps
//! negotiate and score as system memory does when their buffers are in system memory, the src
//! pad keeps them, and a `gst.cuda.context` CONTEXT query is refused cleanly without CUDA.
//!
//! On a GPU (`VMAFGPU_REQUIRE_GPU=1` makes a missing GPU, decoder or encoder a failure; without
//! it those tests print why and pass): the test pairs are encoded with x264, decoded by
//! `nvh264dec` into CUDA memory (read where they are by the CUDA backend) and by `avdec_h264`
//! into system memory (the decoders are bit-exact), and every frame's every metric is `==`
//! across the routes: CUDA memory, system memory, one pad each, and CUDA memory scored by the
//! CPU backend (downloaded). The golden pairs encoded losslessly with x265 (HEVC's transquant
//! bypass, a Main and Main 10 tool) and decoded by `nvh265dec` into CUDA memory (NV12, P010)
//! give libvmaf 3.2.0's goldens with `==`; the same files through `avdec_h265` into system
//! memory run wherever x265enc and gst-libav are (CI).

mod common;
mod elementkit;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use elementkit::*;
use gst::prelude::*;
use gst_video::VideoFormat;
use gstvmafgpu::FrameMessage;
use gstvmafgpu::engine::ScorerConfig;

fn cuda_caps(info: &gst_video::VideoInfo) -> gst::Caps {
    let mut caps = info.to_caps().unwrap();
    caps.get_mut()
        .unwrap()
        .set_features_simple(Some(gst::CapsFeatures::new(["memory:CUDAMemory"])));
    caps
}

#[test]
fn pads_take_cuda_memory_beside_system_memory() {
    init();
    let f = gst::ElementFactory::find("vmafgpu").unwrap();
    for pad in ["ref_sink", "dist_sink", "src"] {
        let t = f
            .static_pad_templates()
            .into_iter()
            .find(|t| t.name_template() == pad)
            .unwrap()
            .caps();
        let feats: Vec<bool> = t
            .iter_with_features()
            .map(|(_, f)| f.contains("memory:CUDAMemory"))
            .collect();
        assert_eq!(
            feats,
            [false, true],
            "{pad}: system memory, then CUDA memory: {t}"
        );
        for fmt in [
            "NV12",
            "P010_10LE",
            "P016_LE",
            "I420",
            "I420_10LE",
            "Y444",
            "Y444_16LE",
        ] {
            let c = gst::Caps::from_str(&format!(
                "video/x-raw(memory:CUDAMemory),format={fmt},width=64,height=48,framerate=25/1"
            ))
            .unwrap();
            assert!(c.can_intersect(&t), "{pad}: {fmt} in CUDA memory");
        }
    }
}

use std::str::FromStr;

/// CUDA-memory caps whose buffers are in system memory (what a test can make without a GPU):
/// mapped as system memory, the same scores as system caps; src keeps the caps.
#[test]
fn cuda_caps_with_system_buffers_score_as_system_memory() {
    let info = info(VideoFormat::I420, 64, 48);
    let n = 5;
    let r: Vec<_> = (0..n).map(|i| frame(&info, i, false, FRAME * i)).collect();
    let d: Vec<_> = (0..n).map(|i| frame(&info, i, true, FRAME * i)).collect();
    let run = |caps: &gst::Caps| {
        let mut rig = rig(&[], caps);
        for i in 0..n as usize {
            rig.r.push(r[i].clone()).unwrap();
            rig.d.push(d[i].clone()).unwrap();
        }
        let out = rig.finish();
        let src_caps = rig.element.static_pad("src").unwrap().current_caps();
        (out.len(), rig.messages(), src_caps)
    };
    let (n_sys, sys, _) = run(&info.to_caps().unwrap());
    let (n_cuda, cuda, src_caps) = run(&cuda_caps(&info));
    assert!(cuda.errors.is_empty(), "{:?}", cuda.errors);
    assert_eq!((n_sys, n_cuda), (n as usize, n as usize));
    assert_eq!(cuda.frames.len(), n as usize);
    for (a, b) in sys.frames.iter().zip(&cuda.frames) {
        assert_eq!(a.metrics, b.metrics, "frame {}", a.index);
    }
    let src_caps = src_caps.expect("src negotiated");
    assert!(
        src_caps.features(0).unwrap().contains("memory:CUDAMemory"),
        "the distorted frames go on in the memory they came in: {src_caps}"
    );
    let pairs: Vec<_> = r.iter().zip(&d).collect();
    check_frames(
        &cuda.frames,
        &oracle(&info, &pairs, ScorerConfig::default()),
        &[0, 1, 2, 3, 4],
    );
}

/// Mixed caps: one pad in CUDA memory, the other in system memory.
#[test]
fn one_pad_cuda_memory_the_other_system_memory() {
    let info = info(VideoFormat::Nv12, 64, 48);
    let mut rig = rig(&[], &info.to_caps().unwrap());
    rig.r.set_src_caps(cuda_caps(&info));
    let n = 4;
    for i in 0..n {
        rig.r.push(frame(&info, i, false, FRAME * i)).unwrap();
        rig.d.push(frame(&info, i, true, FRAME * i)).unwrap();
    }
    assert_eq!(rig.finish().len(), n as usize);
    let m = rig.messages();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    assert_eq!(m.frames.len(), n as usize);
}

/// The CONTEXT query for `gst.cuda.context`: refused cleanly where the element does not score
/// on CUDA (backend=cpu) or CUDA is unusable; answered with a context on a CUDA GPU.
#[test]
fn cuda_context_query() {
    init();
    for backend in ["cpu", "auto", "cuda"] {
        let e = gst::ElementFactory::make("vmafgpu")
            .property_from_str("backend", backend)
            .build()
            .unwrap();
        let pad = e.static_pad("ref_sink").unwrap();
        let mut q = gst::query::Context::new("gst.cuda.context");
        let answered = pad.query(&mut q);
        let gpu = gpu_reason().is_none();
        if backend == "cpu" || !gpu {
            assert!(!answered, "backend={backend}, GPU {gpu}");
        } else {
            assert!(answered, "backend={backend} on a GPU");
            let ctx = q.context().expect("a context");
            assert_eq!(ctx.context_type(), "gst.cuda.context");
        }
    }
}

// ---- On a GPU ----

fn require_gpu() -> bool {
    std::env::var("VMAFGPU_REQUIRE_GPU").as_deref() == Ok("1")
}

/// Why the GPU tests cannot run here, or None.
fn gpu_reason() -> Option<String> {
    init();
    #[cfg(feature = "cuda")]
    if let Some(why) = gstvmafgpu::backend::cuda::unavailable_reason() {
        return Some(why);
    }
    // (fails in a build without the cuda feature, saying so)
    gstvmafgpu::engine::cuda_primary_context(0)
        .err()
        .map(|e| e.to_string())
}

/// The first of `elements` that is not installed.
fn missing(elements: &[&'static str]) -> Option<&'static str> {
    elements
        .iter()
        .copied()
        .find(|e| gst::ElementFactory::find(e).is_none())
}

/// Skip (saying why) or fail under VMAFGPU_REQUIRE_GPU=1, unless the GPU and the GStreamer
/// `elements` (the decoders) are here.
fn gpu_or_skip(test: &str, elements: &[&'static str]) -> bool {
    let why = gpu_reason()
        .or_else(|| missing(elements).map(|e| format!("GStreamer element {e} is not installed")));
    match why {
        None => true,
        Some(why) => {
            assert!(!require_gpu(), "{test}: VMAFGPU_REQUIRE_GPU=1 but {why}");
            eprintln!("{test}: skipped: {why}");
            false
        }
    }
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/yuv")
        .join(name)
}

/// H.264 (x264, CPU) as the test pairs are encoded.
const X264: &str = "x264enc speed-preset=faster bitrate=400 key-int-max=24 threads=4 ! \
                    video/x-h264,profile=high ! h264parse ! video/x-h264,stream-format=byte-stream";
/// HEVC without loss (x265 `lossless=1`: transquant bypass, a Main and Main 10 tool).
const X265_LOSSLESS: &str = "x265enc option-string=lossless=1 speed-preset=ultrafast ! \
                             video/x-h265,stream-format=byte-stream";

/// Encode raw `yuv` (w x h, GStreamer's rawvideoparse `format`) with `encoder` (elements and
/// caps) into the elementary stream `out`, unless it is there.
fn encode(yuv: &Path, (w, h): (usize, usize), format: &str, encoder: &str, out: &Path) {
    if out.exists() {
        return;
    }
    let tmp = out.with_extension("part");
    run_pipeline(&format!(
        "filesrc location={} ! rawvideoparse width={w} height={h} format={format} \
         framerate=25/1 ! {encoder} ! filesink location={}",
        yuv.display(),
        tmp.display()
    ));
    std::fs::rename(&tmp, out).unwrap();
}

/// The warnings the element logged (its debug category), to see whether frames were
/// downloaded.
static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Held for a whole [`score`]: the log is one per process and the tests run in parallel, so a
/// pipeline's warnings must not land in another test's capture.
static ONE_PIPELINE: Mutex<()> = Mutex::new(());

fn capture_log() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        gst::log::set_threshold_for_name("vmafgpu", gst::DebugLevel::Warning);
        gst::log::add_log_function(|cat, level, _file, _fn, _line, _obj, msg| {
            if cat.name() == "vmafgpu"
                && level <= gst::DebugLevel::Warning
                && let Some(m) = msg.get()
            {
                LOG.lock().unwrap().push(m.to_string());
            }
        });
    });
}

/// Run a pipeline to EOS; its VMAF frame messages, the backend of its pooled message, and the
/// caps that came out of the element's src pad.
fn run_pipeline(desc: &str) -> (Vec<FrameMessage>, Option<String>, Option<gst::Caps>) {
    let p = gst::parse::launch(desc)
        .unwrap_or_else(|e| panic!("{desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .unwrap();
    let src_caps: Arc<Mutex<Option<gst::Caps>>> = Arc::default();
    if let Some(v) = p.by_name("v") {
        let c = Arc::clone(&src_caps);
        v.static_pad("src")
            .unwrap()
            .add_probe(gst::PadProbeType::EVENT_DOWNSTREAM, move |_, i| {
                if let Some(gst::PadProbeData::Event(e)) = &i.data
                    && let gst::EventView::Caps(caps) = e.view()
                {
                    *c.lock().unwrap() = Some(caps.caps_owned());
                }
                gst::PadProbeReturn::Ok
            });
    }
    p.set_state(gst::State::Playing).unwrap();
    let bus = p.bus().unwrap();
    let mut m = Messages::default();
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(120)) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                let _ = p.set_state(gst::State::Null);
                panic!("{desc}: {} ({:?})", e.error(), e.debug());
            }
            _ => push_message(&mut m, &msg),
        }
    }
    p.set_state(gst::State::Null).unwrap();
    let backend = m.pooled.first().map(|p| p.backend.clone());
    let caps = src_caps.lock().unwrap().clone();
    (m.frames, backend, caps)
}

/// The H.264 pairs: in `VMAFGPU_H264_DIR` where they were encoded beforehand (on the build
/// machine: the GPU machine has no copy of tests/data/yuv), else encoded once into the
/// temporary directory.
fn pair(name: &str, w: u32, h: u32) -> (PathBuf, PathBuf) {
    let dir = std::env::var_os("VMAFGPU_H264_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("vmafgpu-cuda-memory"));
    std::fs::create_dir_all(&dir).unwrap();
    let r = dir.join(format!("{name}_ref.h264"));
    let d = dir.join(format!("{name}_dis.h264"));
    for (side, out) in [("ref", &r), ("dis", &d)] {
        let yuv = data(&format!("{name}_{side}.yuv"));
        encode(&yuv, (w as usize, h as usize), "i420", X264, out);
    }
    (r, d)
}

const CUDA: &str = "nvh264dec ! video/x-raw(memory:CUDAMemory)";
/// System memory: avdec_h264 where it is installed, else nvh264dec into system memory (the
/// GPU machine's bundle may lack gst-libav, whose libraries are large).
fn system() -> &'static str {
    if gst::ElementFactory::find("avdec_h264").is_some() {
        "avdec_h264 ! video/x-raw"
    } else {
        "nvh264dec ! video/x-raw"
    }
}

/// Score the pair with each side decoded by `ref_dec` / `dist_dec`.
fn score((r, d): &(PathBuf, PathBuf), ref_dec: &str, dist_dec: &str, props: &str) -> Scored {
    score_desc(&format!(
        "filesrc location={} ! h264parse ! {ref_dec} ! v.ref_sink \
         filesrc location={} ! h264parse ! {dist_dec} ! v.dist_sink \
         vmafgpu name=v {props} ! fakesink",
        r.display(),
        d.display()
    ))
}

/// Frame messages, the pooled message's backend, the src caps and the element's warnings.
type Scored = (
    Vec<FrameMessage>,
    Option<String>,
    Option<gst::Caps>,
    Vec<String>,
);

/// Run one pipeline (its element named `v`) with the element's warnings captured.
fn score_desc(desc: &str) -> Scored {
    let _one = ONE_PIPELINE.lock().unwrap_or_else(|e| e.into_inner());
    capture_log();
    LOG.lock().unwrap().clear();
    let (f, b, c) = run_pipeline(desc);
    let log = std::mem::take(&mut *LOG.lock().unwrap());
    (f, b, c, log)
}

fn is_cuda(c: &Option<gst::Caps>) -> bool {
    c.as_ref()
        .and_then(|c| c.features(0).map(|f| f.contains("memory:CUDAMemory")))
        .unwrap_or(false)
}

fn same(a: &[FrameMessage], b: &[FrameMessage], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: frame counts");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.index, y.index, "{what}");
        assert_eq!(x.metrics, y.metrics, "{what}: frame {}", x.index);
        assert_eq!(
            x.score.to_bits(),
            y.score.to_bits(),
            "{what}: frame {}",
            x.index
        );
    }
}

fn routes_agree(name: &str, w: u32, h: u32, frames: usize) {
    let test = format!("nvdec_{name}");
    if !gpu_or_skip(&test, &["nvh264dec", "h264parse"]) {
        return;
    }
    let p = pair(name, w, h);
    let (sys, b_sys, c_sys, _) = score(&p, system(), system(), "backend=cuda");
    assert_eq!(sys.len(), frames, "{test}: system memory frames");
    assert_eq!(b_sys.as_deref(), Some("cuda"));
    assert!(!is_cuda(&c_sys));

    let (dev, b_dev, c_dev, log) = score(&p, CUDA, CUDA, "backend=cuda");
    assert_eq!(b_dev.as_deref(), Some("cuda"));
    assert!(
        !log.iter().any(|l| l.contains("downloaded")),
        "{test}: CUDA memory must be read where it is: {log:?}"
    );
    assert!(
        is_cuda(&c_dev),
        "{test}: src stays in CUDA memory: {c_dev:?}"
    );
    same(&sys, &dev, &format!("{test}: CUDA memory vs system memory"));

    let (mix, _, c_mix, log) = score(&p, CUDA, system(), "backend=cuda");
    assert!(
        !log.iter().any(|l| l.contains("downloaded")),
        "{test}: {log:?}"
    );
    assert!(
        !is_cuda(&c_mix),
        "{test}: the distorted pad was system memory"
    );
    same(&sys, &mix, &format!("{test}: ref CUDA, dist system"));
    let (mix, _, c_mix, _) = score(&p, system(), CUDA, "backend=cuda");
    assert!(is_cuda(&c_mix));
    same(&sys, &mix, &format!("{test}: ref system, dist CUDA"));

    // Companion metrics read the chroma on the host: CUDA memory downloaded (logged), the
    // numbers those of system memory.
    let (sys_c, ..) = score(&p, system(), system(), "backend=cuda psnr=true ssim=true");
    let (dev_c, _, _, log) = score(&p, CUDA, CUDA, "backend=cuda psnr=true ssim=true");
    assert!(
        log.iter().any(|l| l.contains("downloaded")),
        "{test}: {log:?}"
    );
    same(
        &sys_c,
        &dev_c,
        &format!("{test}: companions, CUDA vs system memory"),
    );

    // The CPU backend downloads CUDA memory (logged): the CPU's numbers are the CUDA
    // backend's.
    if frames <= 48 {
        let (cpu, b_cpu, c_cpu, log) = score(&p, CUDA, CUDA, "backend=cpu");
        assert_eq!(b_cpu.as_deref(), Some("cpu"));
        assert!(
            log.iter().any(|l| l.contains("downloaded")),
            "{test}: {log:?}"
        );
        assert!(is_cuda(&c_cpu));
        same(&sys, &cpu, &format!("{test}: CPU backend on CUDA memory"));
    }
}

#[test]
fn nvdec_carphone_routes_agree() {
    routes_agree("carphone", 176, 144, 120);
}

#[test]
fn nvdec_bbb720_routes_agree() {
    routes_agree("bbb720", 1280, 720, 48);
}

/// The pipelines of the GPU tests on system memory only (x264 here, avdec_h264): they run
/// wherever those elements are (skipped, saying why, elsewhere).
#[test]
fn h264_system_memory_pipeline() {
    init();
    if let Some(e) = missing(&["avdec_h264", "x264enc", "h264parse"]) {
        eprintln!("h264_system_memory_pipeline: skipped: {e} is not installed");
        return;
    }
    let p = pair("carphone", 176, 144);
    let (a, _, c, log) = score(&p, system(), system(), "backend=cpu");
    assert_eq!(a.len(), 120);
    assert!(!is_cuda(&c));
    assert!(!log.iter().any(|l| l.contains("downloaded")), "{log:?}");
    let (b, ..) = score(&p, system(), system(), "backend=auto");
    same(&a, &b, "backend=cpu vs auto");
}

/// A golden pair encoded losslessly to HEVC: in `VMAFGPU_H264_DIR` where
/// scripts/cuda-memory/encode.sh put it (the GPU machine has neither x265 nor the raw files),
/// else encoded once into the temporary directory with x265enc (`None`, saying why, when
/// x265enc is missing).
fn lossless_pair(p: &common::Pair) -> Option<(PathBuf, PathBuf)> {
    // one encode at a time: the tests run in parallel and share the files
    static ENCODE: Mutex<()> = Mutex::new(());
    let _one = ENCODE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::var_os("VMAFGPU_H264_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("vmafgpu-cuda-memory"));
    std::fs::create_dir_all(&dir).unwrap();
    let out = |side: &str| dir.join(format!("{}_{side}.lossless.h265", p.name));
    for side in ["ref", "dis"] {
        let o = out(side);
        if !o.exists() && missing(&["x265enc"]).is_some() {
            eprintln!(
                "{}: no {} and x265enc is not installed",
                p.name,
                o.display()
            );
            return None;
        }
        let format = if p.bpc > 8 { "i420-10le" } else { "i420" };
        let yuv = data(&format!("{}_{side}.yuv", p.name));
        encode(&yuv, (p.width, p.height), format, X265_LOSSLESS, &o);
    }
    Some((out("ref"), out("dis")))
}

/// Every frame's score and metrics and the frame count against libvmaf 3.2.0's golden (`==`);
/// all mismatches listed, then one failure.
fn equals_golden(p: &common::Pair, frames: &[FrameMessage], what: &str) {
    let g = p.golden(None);
    assert_eq!(frames.len(), g.frames(), "{what}: frame messages");
    let mut mm = common::Mismatches::default();
    let mut checked = 0;
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.index, i as u64, "{what}");
        mm.check(
            || format!("{what}: frame {i} score"),
            f.score,
            g.frame(i, "vmaf").unwrap(),
        );
        checked += 1;
        for (name, v) in &f.metrics {
            let want = g
                .frame(i, name)
                .unwrap_or_else(|| panic!("{what}: {name} is not in the golden"));
            mm.check(|| format!("{what}: frame {i} {name}"), *v, want);
            checked += 1;
        }
    }
    mm.finish(checked);
}

fn lossless_hevc_pipeline(r: &Path, d: &Path, dec: &str, props: &str) -> String {
    format!(
        "filesrc location={} ! h265parse ! {dec} ! v.ref_sink \
         filesrc location={} ! h265parse ! {dec} ! v.dist_sink \
         vmafgpu name=v {props} ! fakesink",
        r.display(),
        d.display()
    )
}

/// The golden pairs (8-bit carphone, 10-bit bbb360p10) losslessly in HEVC, decoded by
/// nvh265dec into CUDA memory (NV12, P010) and read where they are by the CUDA backend:
/// libvmaf 3.2.0's numbers with `==`, nothing downloaded, CUDA memory on src.
#[test]
fn nvdec_lossless_hevc_equals_libvmaf() {
    let test = "nvdec_lossless_hevc_equals_libvmaf";
    if !gpu_or_skip(test, &["nvh265dec", "h265parse"]) {
        return;
    }
    for p in [common::CARPHONE, common::BBB360P10] {
        let Some((r, d)) = lossless_pair(&p) else {
            panic!(
                "{test}: {}: no lossless HEVC pair (scripts/cuda-memory/encode.sh)",
                p.name
            );
        };
        let desc = lossless_hevc_pipeline(
            &r,
            &d,
            "nvh265dec ! video/x-raw(memory:CUDAMemory)",
            "backend=cuda",
        );
        let (frames, backend, caps, log) = score_desc(&desc);
        assert_eq!(backend.as_deref(), Some("cuda"), "{test}: {}", p.name);
        assert!(is_cuda(&caps), "{test}: {}: src caps {caps:?}", p.name);
        assert!(
            !log.iter().any(|l| l.contains("downloaded")),
            "{test}: {}: CUDA memory must be read where it is: {log:?}",
            p.name
        );
        equals_golden(&p, &frames, &format!("{test}: {}", p.name));
    }
}

/// The same lossless HEVC files through avdec_h265 into system memory (here and in CI, where
/// x265enc and gst-libav are installed; skipped, saying why, elsewhere): the encode and decode
/// are exact, so the element gives the goldens' numbers.
#[test]
fn lossless_hevc_system_memory_equals_libvmaf() {
    init();
    if let Some(e) = missing(&["avdec_h265", "x265enc", "h265parse"]) {
        eprintln!("lossless_hevc_system_memory_equals_libvmaf: skipped: {e} is not installed");
        return;
    }
    for p in [common::CARPHONE, common::BBB360P10] {
        let (r, d) = lossless_pair(&p).expect("x265enc is installed");
        let (frames, ..) = score_desc(&lossless_hevc_pipeline(&r, &d, "avdec_h265", "backend=cpu"));
        equals_golden(&p, &frames, &format!("avdec_h265 {}", p.name));
    }
}
