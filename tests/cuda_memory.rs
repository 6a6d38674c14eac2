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
//! CPU backend (downloaded).

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

/// Skip (saying why) or fail under VMAFGPU_REQUIRE_GPU=1, unless the GPU, nvh264dec,
/// avdec_h264 and x264enc are all here.
fn gpu_or_skip(test: &str) -> bool {
    let why = gpu_reason().or_else(|| {
        ["nvh264dec", "h264parse"]
            .into_iter()
            .find(|e| gst::ElementFactory::find(e).is_none())
            .map(|e| format!("GStreamer element {e} is not installed"))
    });
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

/// Encode raw I420 `yuv` (w x h) to an H.264 elementary stream in `out` (x264, CPU).
fn encode(yuv: &Path, w: u32, h: u32, out: &Path) {
    if out.exists() {
        return;
    }
    let tmp = out.with_extension("part");
    let p = format!(
        "filesrc location={} ! rawvideoparse width={w} height={h} format=i420 framerate=25/1 ! \
         x264enc speed-preset=faster bitrate=400 key-int-max=24 threads=4 ! \
         video/x-h264,profile=high ! h264parse ! video/x-h264,stream-format=byte-stream ! \
         filesink location={}",
        yuv.display(),
        tmp.display()
    );
    run_pipeline(&p);
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
    encode(&data(&format!("{name}_ref.yuv")), w, h, &r);
    encode(&data(&format!("{name}_dis.yuv")), w, h, &d);
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
fn score(
    (r, d): &(PathBuf, PathBuf),
    ref_dec: &str,
    dist_dec: &str,
    props: &str,
) -> (
    Vec<FrameMessage>,
    Option<String>,
    Option<gst::Caps>,
    Vec<String>,
) {
    let _one = ONE_PIPELINE.lock().unwrap_or_else(|e| e.into_inner());
    capture_log();
    LOG.lock().unwrap().clear();
    let desc = format!(
        "filesrc location={} ! h264parse ! {ref_dec} ! v.ref_sink \
         filesrc location={} ! h264parse ! {dist_dec} ! v.dist_sink \
         vmafgpu name=v {props} ! fakesink",
        r.display(),
        d.display()
    );
    let (f, b, c) = run_pipeline(&desc);
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
    if !gpu_or_skip(&test) {
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
    if let Some(e) = ["avdec_h264", "x264enc", "h264parse"]
        .into_iter()
        .find(|e| gst::ElementFactory::find(e).is_none())
    {
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
