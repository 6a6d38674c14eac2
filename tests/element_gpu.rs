//! The robustness suite's GPU cases (issue 23), through the element with `backend=cuda`:
//! - the device out of memory (a 4K clip with nearly all device memory taken by this process),
//!   at the start of a clip and after frames were scored: an error message that names the
//!   memory, the scored frames' messages kept, and the process alive; the same clip scores
//!   again once the memory is back;
//! - a device index that does not exist: the start fails with an error naming the index;
//! - many elements on one GPU at once (16, as in live monitoring of 16 channels): every
//!   element's frames equal the CPU's with `==`.
//!
//! Without a usable CUDA device each test prints why and passes, unless
//! `VMAFGPU_REQUIRE_GPU=1` (then it fails).
#![cfg(feature = "cuda")]

mod elementkit;

use elementkit::*;
use gst::prelude::*;
use gst_video::VideoFormat;
use gstvmafgpu::backend::cuda;
use gstvmafgpu::engine::{FrameScores, ScorerConfig};

fn require_gpu() -> bool {
    std::env::var("VMAFGPU_REQUIRE_GPU").as_deref() == Ok("1")
}

/// Whether the test can run: CUDA usable (else it skips, saying why; a failure under
/// `VMAFGPU_REQUIRE_GPU=1`).
fn gpu_or_skip(test: &str) -> bool {
    let why = cuda::unavailable_reason().or_else(|| {
        cudarc::driver::CudaContext::new(0)
            .err()
            .map(|e| e.to_string())
    });
    match why {
        None => true,
        Some(why) => {
            assert!(
                !require_gpu(),
                "{test}: VMAFGPU_REQUIRE_GPU=1 but CUDA is unusable: {why}"
            );
            eprintln!("{test}: skipped, no usable CUDA device: {why}");
            false
        }
    }
}

/// Device memory held by this process: all of device 0's free memory but `leave` bytes, in
/// 256 MiB blocks (one huge block can fail where smaller ones fit). Freed on drop.
struct Hog {
    _blocks: Vec<cudarc::driver::CudaSlice<u8>>,
}

fn hog(leave: usize) -> Hog {
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let free = || {
        ctx.bind_to_thread().unwrap();
        cudarc::driver::result::mem_get_info().unwrap().0
    };
    let mut blocks = Vec::new();
    let mut block = 256usize << 20;
    while block >= 1 << 20 {
        let f = free();
        if f <= leave + block {
            block /= 2;
            continue;
        }
        // SAFETY: the memory is never read; it is only held, and freed by the slice's drop.
        match unsafe { stream.alloc::<u8>(block) } {
            Ok(b) => blocks.push(b),
            Err(_) => block /= 2,
        }
    }
    stream.synchronize().unwrap();
    eprintln!(
        "hog: {} MiB held, {} MiB left free",
        blocks.iter().map(|b| b.len()).sum::<usize>() >> 20,
        free() >> 20
    );
    Hog { _blocks: blocks }
}

/// Two appsrcs into the element (`props`), its `src` into a fakesink.
struct Line {
    pipeline: gst::Pipeline,
    r: gst::Element,
    d: gst::Element,
}

fn line(props: &str, caps: &gst::Caps) -> Line {
    init();
    let pipeline = gst::parse::launch(&format!(
        "appsrc name=r format=time ! v.ref_sink appsrc name=d format=time ! v.dist_sink \
         vmafgpu name=v {props} ! fakesink"
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let src = |n: &str| {
        let s = pipeline.by_name(n).unwrap();
        s.set_property("caps", caps);
        s
    };
    let (r, d) = (src("r"), src("d"));
    Line { pipeline, r, d }
}

impl Line {
    fn push(&self, r: &gst::Buffer, d: &gst::Buffer) {
        // (appsrc's action signals; a refused push means the pipeline has already stopped with
        // an error: the bus says why)
        for (src, b) in [(&self.r, r), (&self.d, d)] {
            let _ = src.emit_by_name::<gst::FlowReturn>("push-buffer", &[b]);
        }
    }

    /// Caps for the frames pushed from now on (a size change on both pads).
    fn set_caps(&self, caps: &gst::Caps) {
        self.r.set_property("caps", caps);
        self.d.set_property("caps", caps);
    }

    /// EOS on both sources, then every message until EOS or the first error (120 s at most).
    fn finish(&self) -> (Messages, bool) {
        for src in [&self.r, &self.d] {
            let _ = src.emit_by_name::<gst::FlowReturn>("end-of-stream", &[]);
        }
        let bus = self.pipeline.bus().unwrap();
        let mut m = Messages::default();
        let mut eos = false;
        for msg in bus.iter_timed(gst::ClockTime::from_seconds(120)) {
            push_message(&mut m, &msg);
            match msg.view() {
                gst::MessageView::Eos(_) => {
                    eos = true;
                    break;
                }
                gst::MessageView::Error(_) => break,
                _ => {}
            }
        }
        // the rest of what was posted before the end (the error comes last)
        while let Some(msg) = bus.pop() {
            push_message(&mut m, &msg);
        }
        (m, eos)
    }

    /// Take messages into `m` until it holds `n` frame messages (60 s at most per message).
    fn wait_frames(&self, m: &mut Messages, n: usize) {
        let bus = self.pipeline.bus().unwrap();
        while m.frames.len() < n {
            match bus.timed_pop(gst::ClockTime::from_seconds(60)) {
                Some(msg) => push_message(m, &msg),
                None => panic!("no frame message within 60 s ({} of {n})", m.frames.len()),
            }
        }
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

fn clip(info: &gst_video::VideoInfo, n: u64, seed: u64) -> Vec<(gst::Buffer, gst::Buffer)> {
    (0..n)
        .map(|i| {
            (
                frame(info, seed + i, false, FRAME * i),
                frame(info, seed + i, true, FRAME * i),
            )
        })
        .collect()
}

fn oracle_of(info: &gst_video::VideoInfo, c: &[(gst::Buffer, gst::Buffer)]) -> Vec<FrameScores> {
    let pairs: Vec<_> = c.iter().map(|(r, d)| (r, d)).collect();
    oracle(info, &pairs, ScorerConfig::default())
}

fn names_memory(errors: &[(String, String)]) -> bool {
    errors.iter().any(|(e, d)| {
        let t = format!("{e} {d}").to_lowercase();
        t.contains("memory") || t.contains("alloc")
    })
}

/// The device out of memory when a 4K clip starts: an error message naming the memory (not an
/// abort, not a hang); with the memory given back the same clip scores, equal to the CPU.
#[test]
fn a_4k_clip_on_a_full_device_is_an_error_then_scores_when_memory_is_back() {
    let test = "a_4k_clip_on_a_full_device_is_an_error_then_scores_when_memory_is_back";
    if !gpu_or_skip(test) {
        return;
    }
    let info = info(VideoFormat::I420, 3840, 2160);
    let caps = info.to_caps().unwrap();
    let c = clip(&info, 3, 0);
    {
        let _hog = hog(16 << 20);
        let l = line("backend=cuda", &caps);
        let started = l.pipeline.set_state(gst::State::Playing).is_ok();
        if started {
            for (r, d) in &c {
                l.push(r, d);
            }
        }
        let (m, eos) = l.finish();
        assert!(!eos, "scored a 4K clip with 16 MiB of device memory free");
        assert!(
            names_memory(&m.errors),
            "no error naming the memory: {:?}",
            m.errors
        );
    }
    let l = line("backend=cuda", &caps);
    l.pipeline.set_state(gst::State::Playing).unwrap();
    for (r, d) in &c {
        l.push(r, d);
    }
    let (m, eos) = l.finish();
    assert!(eos && m.errors.is_empty(), "{:?}", m.errors);
    check_frames(&m.frames, &oracle_of(&info, &c), &[0, 1, 2]);
}

/// The device out of memory after frames were scored (a size change on both pads to 4K, with the
/// memory taken in between): the scored frames keep their messages, the pooled message comes,
/// and the error names the memory.
#[test]
fn the_device_out_of_memory_after_scored_frames_keeps_them() {
    let test = "the_device_out_of_memory_after_scored_frames_keeps_them";
    if !gpu_or_skip(test) {
        return;
    }
    // Not live: the GPU backend keeps up to a ring of frames in flight and gives results back
    // as later frames come, so enough small frames that some are scored before the change.
    const SMALL: u64 = 60;
    let small = info(VideoFormat::I420, 320, 240);
    let big = info(VideoFormat::I420, 3840, 2160);
    let first = clip(&small, SMALL, 0);
    let l = line("backend=cuda", &small.to_caps().unwrap());
    l.pipeline.set_state(gst::State::Playing).unwrap();
    for (r, d) in &first {
        l.push(r, d);
    }
    let mut m = Messages::default();
    l.wait_frames(&mut m, SMALL as usize / 2);
    let _hog = hog(16 << 20);
    l.set_caps(&big.to_caps().unwrap());
    for (i, (r, d)) in clip(&big, 3, 1000).iter().enumerate() {
        let (mut r, mut d) = (r.clone(), d.clone());
        for b in [&mut r, &mut d] {
            b.make_mut().set_pts(FRAME * (SMALL + i as u64));
        }
        l.push(&r, &d);
    }
    let (rest, eos) = l.finish();
    m.frames.extend(rest.frames);
    m.pooled.extend(rest.pooled);
    m.errors.extend(rest.errors);
    assert!(!eos, "scored 4K frames with 16 MiB of device memory free");
    assert!(
        names_memory(&m.errors),
        "no error naming the memory: {:?}",
        m.errors
    );
    // every small frame (the last one too: the size change ends its segment) has its message,
    // equal to the CPU's
    let want = oracle_of(&small, &first);
    let idx: Vec<u64> = (0..SMALL).collect();
    let got: Vec<_> = m
        .frames
        .iter()
        .filter(|f| f.index < SMALL)
        .cloned()
        .collect();
    check_frames(&got, &want, &idx);
    assert!(!m.pooled.is_empty(), "no pooled message before the error");
}

/// A device index that does not exist: the start fails with an error naming it.
#[test]
fn a_device_index_that_does_not_exist_fails_the_start() {
    let test = "a_device_index_that_does_not_exist_fails_the_start";
    if !gpu_or_skip(test) {
        return;
    }
    init();
    let element = gst::ElementFactory::make("vmafgpu")
        .property_from_str("backend", "cuda")
        .property("device-id", 99u32)
        .build()
        .unwrap();
    let bus = gst::Bus::new();
    element.set_bus(Some(&bus));
    assert!(
        element.set_state(gst::State::Paused).is_err(),
        "device-id 99 started"
    );
    let m = collect(&bus);
    let _ = element.set_state(gst::State::Null);
    assert!(
        m.errors
            .iter()
            .any(|(e, d)| format!("{e} {d}").contains("device-id 99")),
        "no error naming device-id 99: {:?}",
        m.errors
    );
}

/// 16 elements on one GPU at once, each in its own thread with its own content: every frame of
/// every element equals the CPU's.
#[test]
fn sixteen_elements_on_one_gpu_equal_the_cpu() {
    let test = "sixteen_elements_on_one_gpu_equal_the_cpu";
    if !gpu_or_skip(test) {
        return;
    }
    const N: u64 = 16;
    const FRAMES: u64 = 20;
    let info = info(VideoFormat::I420, 320, 240);
    let handles: Vec<_> = (0..N)
        .map(|k| {
            let info = info.clone();
            std::thread::spawn(move || {
                let c = clip(&info, FRAMES, 100 * k);
                let l = line("backend=cuda", &info.to_caps().unwrap());
                l.pipeline.set_state(gst::State::Playing).unwrap();
                for (r, d) in &c {
                    l.push(r, d);
                }
                let (m, eos) = l.finish();
                (k, c, m, eos)
            })
        })
        .collect();
    let mut bad = Vec::new();
    for h in handles {
        let (k, c, m, eos) = h.join().unwrap();
        if !eos || !m.errors.is_empty() {
            bad.push(format!("element {k}: eos {eos}, errors {:?}", m.errors));
            continue;
        }
        let want = oracle_of(&info, &c);
        let idx: Vec<u64> = (0..FRAMES).collect();
        if let Err(e) = std::panic::catch_unwind(|| check_frames(&m.frames, &want, &idx)) {
            bad.push(format!("element {k}: {e:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
