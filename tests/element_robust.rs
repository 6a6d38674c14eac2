//! vmafgpu reliability: GAPs under `sync=index`, timestamp skew warnings, report paths checked
//! at start (errors, symlinks, FIFOs, devices), unique temporaries, empty runs, start errors,
//! memory and disk limits (in child processes), errors after scored frames (malformed buffers,
//! caps changes on one pad, engine failures), size changes on both pads through converters,
//! every property at its limits, killed runs, concurrent writers, seek storms, truncated and
//! garbage files, live drops and stalls.

mod elementkit;

use elementkit::*;
use gst::prelude::*;
use gst_video::VideoFormat;
use gstvmafgpu::engine::ScorerConfig;

fn i420() -> gst_video::VideoInfo {
    info(VideoFormat::I420, 64, 48)
}

/// Reference and distorted frames 0..n at 25 fps.
fn clip(info: &gst_video::VideoInfo, n: u64) -> (Vec<gst::Buffer>, Vec<gst::Buffer>) {
    let r = (0..n).map(|i| frame(info, i, false, FRAME * i)).collect();
    let d = (0..n).map(|i| frame(info, i, true, FRAME * i)).collect();
    (r, d)
}

fn gap(i: u64) -> gst::Event {
    gst::event::Gap::builder(FRAME * i).duration(FRAME).build()
}

/// `sync=index`: a GAP on the distorted pad is that pad's frame for its slot, so the reference
/// frame of that slot is unmatched and every later pair stays aligned.
#[test]
fn index_a_distorted_gap_consumes_the_reference_frame_of_its_slot() {
    let info = i420();
    let (r, d) = clip(&info, 6);
    let mut rig = rig(&[("sync", "index")], &info.to_caps().unwrap());
    for i in 0..6 {
        rig.r.push(r[i].clone()).unwrap();
        if i == 2 {
            rig.d.push_event(gap(2));
        } else {
            rig.d.push(d[i].clone()).unwrap();
        }
    }
    let out = rig.finish();
    let scored: Vec<_> = out.iter().filter(|b| b.size() > 0).collect();
    assert_eq!(scored.len(), 5, "the five distorted frames pass on");
    let m = rig.messages();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let keep = [0, 1, 3, 4, 5];
    let pairs: Vec<_> = keep.iter().map(|&i| (&r[i], &d[i])).collect();
    let want = oracle(&info, &pairs, ScorerConfig::default());
    check_frames(&m.frames, &want, &[0, 1, 2, 3, 4]);
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (5, 1, 0)
    );
}

/// ... and a GAP on the reference pad leaves the distorted frame of its slot unmatched (passed
/// on unscored).
#[test]
fn index_a_reference_gap_leaves_the_distorted_frame_of_its_slot_unmatched() {
    let info = i420();
    let (r, d) = clip(&info, 5);
    let mut rig = rig(&[("sync", "index")], &info.to_caps().unwrap());
    for i in 0..5 {
        if i == 1 {
            rig.r.push_event(gap(1));
        } else {
            rig.r.push(r[i].clone()).unwrap();
        }
        rig.d.push(d[i].clone()).unwrap();
    }
    let out = rig.finish();
    assert_eq!(out.len(), 5, "every distorted frame passes on");
    let m = rig.messages();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let keep = [0, 2, 3, 4];
    let pairs: Vec<_> = keep.iter().map(|&i| (&r[i], &d[i])).collect();
    let want = oracle(&info, &pairs, ScorerConfig::default());
    check_frames(&m.frames, &want, &[0, 1, 2, 3]);
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (4, 0, 1)
    );
}

/// `sync=index` with paired timestamps more than half a frame apart: one warning (not one per
/// pair), carrying the count.
#[test]
fn index_pairs_whose_timestamps_disagree_warn_once() {
    let info = i420();
    let (r, d) = clip(&info, 4);
    let mut rig = rig(&[("sync", "index")], &info.to_caps().unwrap());
    for i in 0..4 {
        rig.r.push(r[i].clone()).unwrap();
        let mut late = d[i].copy();
        late.get_mut()
            .unwrap()
            .set_pts(FRAME * i as u64 + FRAME / 2 + gst::ClockTime::from_mseconds(1));
        rig.d.push(late).unwrap();
    }
    rig.finish();
    let m = rig.messages();
    assert_eq!(m.frames.len(), 4);
    let skew: Vec<_> = m
        .warnings
        .iter()
        .filter(|(w, _)| w.contains("timestamps"))
        .collect();
    assert_eq!(skew.len(), 1, "one warning: {:?}", m.warnings);
    assert!(skew[0].0.contains("1 pair"), "{:?}", skew[0]);

    // within half a frame: no warning
    let mut rig = elementkit::rig(&[("sync", "index")], &info.to_caps().unwrap());
    for i in 0..4 {
        rig.r.push(r[i].clone()).unwrap();
        let mut late = d[i].copy();
        late.get_mut()
            .unwrap()
            .set_pts(FRAME * i as u64 + gst::ClockTime::from_mseconds(19));
        rig.d.push(late).unwrap();
    }
    rig.finish();
    let m = rig.messages();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

/// Run a gst-launch line to its end; its messages and whether it ended in EOS.
fn run_pipeline(line: &str) -> (Messages, bool) {
    init();
    let pipeline = gst::parse::launch(line).unwrap();
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut m = Messages::default();
    let mut eos = false;
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(300)) {
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
    pipeline.set_state(gst::State::Null).unwrap();
    (m, eos)
}

/// The issue's pipeline: identity drop-probability sends a GAP event for every dropped frame.
/// With those GAPs taken as the distorted pad's frames the pairs stay aligned: the pooled score
/// is close to the one without drops (not equal: the frames after a drop have a different
/// previous frame for motion; misaligned pairs scored about 12), and the unmatched count is the
/// number of dropped frames.
#[test]
fn index_pipeline_with_dropped_frames_scores_the_aligned_pairs() {
    let src = "videotestsrc num-buffers=150 pattern=ball ! \
               video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! tee name=t \
               t. ! queue ! v.ref_sink t. ! queue ! ";
    let sink = " ! v.dist_sink vmafgpu name=v sync=index frame-message=false ! fakesink";
    let (clean, eos) = run_pipeline(&format!("{src}identity{sink}"));
    assert!(eos && clean.errors.is_empty(), "{:?}", clean.errors);
    let clean_score = clean.pooled[0].scores.score().unwrap();

    let (m, eos) = run_pipeline(&format!(
        "{src}identity drop-probability=0.05 name=drop{sink}"
    ));
    assert!(eos && m.errors.is_empty(), "{:?}", m.errors);
    let p = &m.pooled[0];
    let score = p.scores.score().unwrap();
    assert!(p.unmatched_ref > 0, "no frame was dropped: {p:?}");
    assert_eq!(p.unmatched_dist, 0);
    assert_eq!(p.scores.frames + p.unmatched_ref, 150);
    assert!(
        (score - clean_score).abs() < 1.0,
        "pooled {score} with drops, {clean_score} without"
    );
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vmafgpu-robust-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The element with `results-filename=path` taken from NULL to PAUSED: the state change's
/// result and the bus messages.
fn start_with_report(path: &str) -> (bool, Messages, gst::Element) {
    init();
    let element = gst::ElementFactory::make("vmafgpu")
        .property("results-filename", path)
        .build()
        .unwrap();
    let bus = gst::Bus::new();
    element.set_bus(Some(&bus));
    let ok = element.set_state(gst::State::Paused).is_ok();
    (ok, collect(&bus), element)
}

/// A report path that cannot be written fails the start, with an error naming the path and the
/// OS error (not a warning at EOS).
#[test]
fn an_unwritable_report_path_fails_the_start() {
    let dir = scratch("unwritable");
    let missing = dir.join("no-such-dir/r.json");
    let cases = [
        (missing.to_str().unwrap().to_string(), "No such file"),
        (dir.to_str().unwrap().to_string(), "directory"),
    ];
    let mut bad = Vec::new();
    for (path, os) in &cases {
        let (ok, m, element) = start_with_report(path);
        element.set_state(gst::State::Null).unwrap();
        if ok {
            bad.push(format!("{path}: the start succeeded"));
            continue;
        }
        let named = m
            .errors
            .iter()
            .any(|(e, _)| e.contains(path.as_str()) && e.contains(os));
        if !named {
            bad.push(format!(
                "{path}: no error naming it and '{os}': {:?}",
                m.errors
            ));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Four pairs through the element with `results-filename=path`; its messages.
fn run_with_report(path: &str) -> Messages {
    let info = i420();
    let mut rig = rig(&[("results-filename", path)], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 4);
    for i in 0..4 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    rig.finish();
    rig.messages()
}

/// A write that fails at EOS (/dev/full: no space left) is an error message.
#[test]
fn a_report_write_failure_at_eos_is_an_error() {
    let m = run_with_report("/dev/full");
    assert_eq!(m.pooled.len(), 1);
    assert!(
        m.errors.iter().any(|(e, _)| e.contains("/dev/full")),
        "errors {:?}, warnings {:?}",
        m.errors,
        m.warnings
    );
}

/// A symbolic link is written through: the link stays, its target gets the report.
#[test]
fn a_symlinked_report_path_writes_the_target() {
    let dir = scratch("symlink");
    let target = dir.join("target.json");
    std::fs::write(&target, "old").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("target.json", &link).unwrap();
    // and a dangling link: its target is created
    let dangling = dir.join("dangling.json");
    std::os::unix::fs::symlink("new.json", &dangling).unwrap();
    let m = run_with_report(link.to_str().unwrap());
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let m = run_with_report(dangling.to_str().unwrap());
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let mut bad = Vec::new();
    for (l, t) in [(&link, "target.json"), (&dangling, "new.json")] {
        let meta = std::fs::symlink_metadata(l).unwrap();
        if !meta.file_type().is_symlink() {
            bad.push(format!("{} is no longer a symbolic link", l.display()));
        }
        let text = std::fs::read_to_string(dir.join(t)).unwrap_or_default();
        if !text.contains("pooled_metrics") {
            bad.push(format!("{t} holds no report: {text:?}"));
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    if left.len() != 4 {
        bad.push(format!("files left: {left:?}"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A FIFO is written directly: it stays a FIFO and its reader gets the report.
#[test]
fn a_fifo_report_path_is_written_directly() {
    let dir = scratch("fifo");
    let fifo = dir.join("r.json");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let f = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(&f));
    });
    let m = run_with_report(fifo.to_str().unwrap());
    let got = rx.recv_timeout(std::time::Duration::from_secs(20));
    let is_fifo = {
        use std::os::unix::fs::FileTypeExt;
        std::fs::symlink_metadata(&fifo)
            .map(|m| m.file_type().is_fifo())
            .unwrap_or(false)
    };
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    assert!(is_fifo, "the FIFO was replaced");
    let text = got.expect("the FIFO's reader got nothing").unwrap();
    assert!(text.contains("pooled_metrics"), "{text:?}");
}

/// Two elements on one path in one process each have their own temporary (created at start),
/// and both reports are written; a stale temporary of a dead process is removed at start.
#[test]
fn two_elements_on_one_path_and_a_stale_temporary() {
    let dir = scratch("two");
    let path = dir.join("r.json");
    // the temporary a killed process left (its pid: a child that has exited)
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.join(format!(".r.json.vmafgpu-{dead}-0.tmp"));
    std::fs::write(&stale, "half a report").unwrap();

    let p = path.to_str().unwrap();
    let (ok_a, ma, a) = start_with_report(p);
    let (ok_b, mb, b) = start_with_report(p);
    let temporaries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    a.set_state(gst::State::Null).unwrap();
    b.set_state(gst::State::Null).unwrap();
    let m = run_with_report(p);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let left = std::fs::read_dir(&dir).unwrap().count();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(ok_a && ok_b, "{:?} {:?}", ma.errors, mb.errors);
    assert_eq!(
        temporaries.len(),
        2,
        "two distinct temporaries: {temporaries:?}"
    );
    assert!(
        !temporaries.iter().any(|t| stale.ends_with(t)),
        "the stale temporary is still there: {temporaries:?}"
    );
    assert!(m.errors.is_empty() && m.warnings.is_empty(), "{m:?}");
    assert!(text.contains("pooled_metrics"));
    assert_eq!(left, 1, "temporaries left behind");
}

/// Nothing paired at all (a distorted stream that decodes to nothing): an error, after the
/// pooled message; the stream still ends with EOS.
#[test]
fn nothing_paired_is_an_error() {
    let info = i420();
    let (r, _) = clip(&info, 3);
    let mut rig = rig(&[], &info.to_caps().unwrap());
    // the distorted pad ends first (a full reference queue would wait for a partner)
    rig.d.push_event(gst::event::Eos::new());
    for b in &r {
        rig.r.push(b.clone()).unwrap();
    }
    rig.r.push_event(gst::event::Eos::new());
    rig.drain();
    let m = rig.messages();
    assert_eq!(m.pooled.len(), 1);
    assert_eq!(m.pooled[0].scores.frames, 0);
    assert!(
        m.errors
            .iter()
            .any(|(e, _)| e.contains("nothing was paired")),
        "errors {:?}",
        m.errors
    );
}

/// start() failures say what failed: a backend that cannot start is not "Cannot load VMAF
/// model"; and backend=auto falling back to the CPU is a warning message.
#[test]
fn start_errors_name_what_failed_and_the_cpu_fallback_warns() {
    use gstvmafgpu::engine::{BackendKind, Scorer};
    init();
    let mut bad = Vec::new();
    let cuda = ScorerConfig {
        backend: BackendKind::Cuda,
        ..ScorerConfig::default()
    };
    if Scorer::new(cuda).is_err() {
        let element = gst::ElementFactory::make("vmafgpu")
            .property_from_str("backend", "cuda")
            .build()
            .unwrap();
        let bus = gst::Bus::new();
        element.set_bus(Some(&bus));
        assert!(element.set_state(gst::State::Paused).is_err());
        element.set_state(gst::State::Null).unwrap();
        let m = collect(&bus);
        match m.errors.first() {
            Some((e, _)) if e.contains("model") || !e.contains("cuda") => {
                bad.push(format!("backend failure reads: {e}"))
            }
            None => bad.push("no error for backend=cuda".into()),
            _ => {}
        }
    }
    let auto_on_cpu = Scorer::new(ScorerConfig::default())
        .map(|s| s.backend_name() == "cpu")
        .unwrap_or(false);
    if auto_on_cpu && cfg!(any(feature = "cuda", feature = "hip")) {
        let element = gst::ElementFactory::make("vmafgpu").build().unwrap();
        let bus = gst::Bus::new();
        element.set_bus(Some(&bus));
        element.set_state(gst::State::Paused).unwrap();
        element.set_state(gst::State::Null).unwrap();
        let m = collect(&bus);
        if m.fallback.len() != 1 {
            bad.push(format!("no fallback warning: {:?}", m.warnings));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every property is settable only in NULL or READY (its spec says so): set while the element
/// runs it is refused with a warning, reads back as the value in effect, and changes nothing;
/// back in NULL it can be set again.
#[test]
fn properties_set_while_running_are_refused_and_read_back_as_in_effect() {
    let info = i420();
    let (r, d) = clip(&info, 4);
    let mut rig = rig(&[], &info.to_caps().unwrap());
    rig.r.push(r[0].clone()).unwrap();
    rig.d.push(d[0].clone()).unwrap();
    assert!(rig.element.current_state() > gst::State::Ready);
    rig.element.set_property("window", 1u32);
    rig.element.set_property("frame-message", false);
    let mut bad = Vec::new();
    if rig.element.property::<u32>("window") != 0 {
        bad.push("window reads back the refused 1".to_string());
    }
    if !rig.element.property::<bool>("frame-message") {
        bad.push("frame-message reads back the refused false".to_string());
    }
    for i in 1..4 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    rig.finish();
    let m = rig.messages();
    if m.frames.len() != 4 || !m.windows.is_empty() {
        bad.push(format!(
            "{} frame and {} window messages: the refused values took effect",
            m.frames.len(),
            m.windows.len()
        ));
    }
    for name in ["window", "frame-message"] {
        let named = m
            .warnings
            .iter()
            .any(|(w, _)| w.contains(name) && w.contains("NULL or READY"));
        if !named {
            bad.push(format!("no warning naming {name}: {:?}", m.warnings));
        }
    }
    rig.element.set_state(gst::State::Null).unwrap();
    rig.element.set_property("window", 3u32);
    if rig.element.property::<u32>("window") != 3 {
        bad.push("window cannot be set again in NULL".to_string());
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The pooled `duration` spans every segment in running time: six frames, then (a size
/// change, or the same size: a concatenation) a new segment whose timestamps start again at 0
/// with its running time after the first part, four frames. 400 ms, not the last part's 160.
#[test]
fn the_pooled_duration_covers_every_segment() {
    let first = i420();
    let mut bad = Vec::new();
    for second in [info(VideoFormat::I420, 80, 64), i420()] {
        let mut rig = rig(&[("frame-message", "false")], &first.to_caps().unwrap());
        let (r, d) = clip(&first, 6);
        for i in 0..6 {
            rig.r.push(r[i].clone()).unwrap();
            rig.d.push(d[i].clone()).unwrap();
        }
        let mut seg = gst::FormattedSegment::<gst::ClockTime>::new();
        seg.set_base(FRAME * 6);
        for h in [&mut rig.r, &mut rig.d] {
            h.set_src_caps(second.to_caps().unwrap());
            h.push_event(gst::event::Segment::new(&seg));
        }
        let (r, d) = clip(&second, 4);
        for i in 0..4 {
            rig.r.push(r[i].clone()).unwrap();
            rig.d.push(d[i].clone()).unwrap();
        }
        rig.finish();
        let m = rig.messages();
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        let p = &m.pooled[0];
        let got = (p.scores.frames, p.timing.running_time, p.timing.duration);
        let want = (10, Some(gst::ClockTime::ZERO), Some(FRAME * 10));
        if got != want {
            bad.push(format!(
                "{}x{} second part: (frames, running time, duration) {got:?}, expected {want:?}",
                second.width(),
                second.height()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `threads` is capped at a sane number (the property's maximum, documented), and the engine
/// refuses more with an error (no thread started) instead of trying to start them all.
#[test]
fn threads_are_capped() {
    use gstvmafgpu::engine::{BackendKind, MAX_THREADS, Scorer};
    init();
    let element = gst::ElementFactory::make("vmafgpu").build().unwrap();
    let pspec = element.find_property("threads").unwrap();
    let max = pspec
        .downcast_ref::<gst::glib::ParamSpecUInt>()
        .unwrap()
        .maximum();
    assert_eq!(max as usize, MAX_THREADS, "the property's maximum");
    assert_eq!(MAX_THREADS, 256, "the number README documents");
    let cfg = ScorerConfig {
        threads: MAX_THREADS + 1,
        backend: BackendKind::Cpu,
        ..ScorerConfig::default()
    };
    match Scorer::new(cfg) {
        Ok(_) => panic!("{} threads were started", MAX_THREADS + 1),
        Err(e) => assert!(e.to_string().contains("256"), "{e}"),
    }
}

/// Set this process's address-space limit (RLIMIT_AS) to `bytes`.
fn limit_address_space(bytes: u64) {
    #[repr(C)]
    struct Rlimit {
        cur: u64,
        max: u64,
    }
    unsafe extern "C" {
        fn setrlimit(resource: i32, rlim: *const Rlimit) -> i32;
    }
    const RLIMIT_AS: i32 = 9;
    let lim = Rlimit {
        cur: bytes,
        max: bytes,
    };
    // SAFETY: setrlimit reads one rlimit struct, which lives for the call.
    assert_eq!(unsafe { setrlimit(RLIMIT_AS, &lim) }, 0, "setrlimit");
}

fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

const ALLOC_CHILD: &str = "VMAFGPU_ROBUST_ALLOC_CHILD";

/// The child of `a_frame_too_large_for_memory_is_an_error_message`: one 16384x16384 GRAY8 pair
/// into a running element, the address space then limited to what it uses plus `margin_mib`;
/// prints the error messages.
fn alloc_child(margin_mib: u64) {
    let info = info(VideoFormat::Gray8, 16384, 16384);
    // the CPU path (on a GPU machine backend=auto fails first in the driver, with its own error)
    let mut rig = rig(
        &[("threads", "1"), ("backend", "cpu")],
        &info.to_caps().unwrap(),
    );
    let buf = |i: u64| {
        // fresh anonymous memory: zero samples, and nothing touched until read
        let mut b = gst::Buffer::with_size(info.size()).unwrap();
        b.get_mut().unwrap().set_pts(FRAME * i);
        b
    };
    let (r, d) = (buf(0), buf(0));
    assert!(rig.element.current_state() > gst::State::Ready);
    limit_address_space(vm_size() + (margin_mib << 20));
    let _ = rig.r.push(r);
    let _ = rig.d.push(d);
    rig.r.push_event(gst::event::Eos::new());
    rig.d.push_event(gst::event::Eos::new());
    let error = rig
        .bus
        .timed_pop_filtered(gst::ClockTime::from_seconds(60), &[gst::MessageType::Error]);
    match error.as_ref().map(|m| m.view()) {
        Some(gst::MessageView::Error(e)) => println!("ERROR: {} ({:?})", e.error(), e.debug()),
        _ => println!("NO ERROR"),
    }
}

/// A frame too large for the memory there is (16384x16384 under an address-space limit) on the CPU
/// backend is an error message on the bus, whichever allocation fails (the engine's copy of the planes, or the
/// features' scratch planes), not an abort of the host process. Run in a child process.
#[test]
fn a_frame_too_large_for_memory_is_an_error_message() {
    if let Ok(margin) = std::env::var(ALLOC_CHILD) {
        alloc_child(margin.parse().unwrap());
        return;
    }
    let mut bad = Vec::new();
    // 256 MiB: the 512 MiB copy of a plane fails; 1536 MiB: both copies fit, the VIF and ADM
    // scratch planes do not
    for margin in [256, 1536] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_frame_too_large_for_memory_is_an_error_message",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ALLOC_CHILD, margin.to_string())
            // no backtrace of the worker's panic: printing one allocates, and with the memory
            // used up it could fail in turn (and deadlock on the backtrace lock)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // (after the test harness's "test ... " on the same line)
        let error = stdout
            .lines()
            .find_map(|l| l.find("ERROR: ").map(|i| &l[i..]));
        match error {
            _ if !out.status.success() => bad.push(format!(
                "margin {margin} MiB: the child ended with {}:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )),
            Some(e) if e.contains("allocate") => {}
            _ => bad.push(format!(
                "margin {margin} MiB: no error naming the allocation: {stdout}"
            )),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Bus messages until the first error (10 s at most), decoded.
fn messages_until_error(bus: &gst::Bus) -> Messages {
    let mut m = Messages::default();
    while let Some(msg) = bus.timed_pop(gst::ClockTime::from_seconds(10)) {
        push_message(&mut m, &msg);
        if !m.errors.is_empty() {
            break;
        }
    }
    m
}

/// An error after the first scored frame ends the clip as an out-of-range sample does: a short
/// buffer at pair 3, or a size change on one pad only: frames 0-2 get their messages and the
/// pooled message comes before the error.
#[test]
fn a_mid_stream_error_finishes_the_clip_before_it() {
    let info = i420();
    let mut bad = Vec::new();
    let dir = scratch("mid-stream");
    let report = dir.join("r.json");
    for case in ["short buffer", "size change on one pad"] {
        let _ = std::fs::remove_file(&report);
        let props = [("results-filename", report.to_str().unwrap())];
        let mut rig = rig(&props, &info.to_caps().unwrap());
        let (r, d) = clip(&info, 5);
        for i in 0..5 {
            if i == 3 {
                if case == "short buffer" {
                    let mut short = gst::Buffer::with_size(10).unwrap();
                    short.get_mut().unwrap().set_pts(FRAME * 3);
                    let _ = rig.r.push(r[i].clone());
                    let _ = rig.d.push(short);
                    break;
                }
                let other = elementkit::info(VideoFormat::I420, 80, 64);
                rig.r.set_src_caps(other.to_caps().unwrap());
            }
            if rig.r.push(r[i].clone()).is_err() || rig.d.push(d[i].clone()).is_err() {
                break;
            }
        }
        let m = messages_until_error(&rig.bus);
        if m.errors.is_empty() || m.order != "fffp" {
            bad.push(format!(
                "{case}: messages {:?} before the errors {:?}",
                m.order, m.errors
            ));
        }
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        if !text.contains("pooled_metrics") || text.matches("\"frameNum\"").count() != 3 {
            bad.push(format!(
                "{case}: the report is not the three frames' one: {text:?}"
            ));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Set this process's file-size limit (RLIMIT_FSIZE) to `bytes`, with SIGXFSZ ignored so that
/// a write past it fails with EFBIG (as on a full disk) instead of killing the process.
fn limit_file_size(bytes: u64) {
    #[repr(C)]
    struct Rlimit {
        cur: u64,
        max: u64,
    }
    unsafe extern "C" {
        fn setrlimit(resource: i32, rlim: *const Rlimit) -> i32;
        fn signal(sig: i32, handler: usize) -> usize;
    }
    const RLIMIT_FSIZE: i32 = 1;
    const SIGXFSZ: i32 = 25;
    const SIG_IGN: usize = 1;
    let lim = Rlimit {
        cur: bytes,
        max: bytes,
    };
    // SAFETY: signal installs SIG_IGN (no handler code runs); setrlimit reads one rlimit
    // struct, which lives for the call.
    unsafe {
        assert_ne!(signal(SIGXFSZ, SIG_IGN), usize::MAX, "signal");
        assert_eq!(setrlimit(RLIMIT_FSIZE, &lim), 0, "setrlimit");
    }
}

const FSIZE_CHILD: &str = "VMAFGPU_ROBUST_FSIZE_CHILD";
/// Frames of the full-disk child: their JSON rows (about 300 bytes each) pass the limit.
const FSIZE_FRAMES: u64 = 1500;
const FSIZE_LIMIT: u64 = 150_000;

/// The child of `a_full_disk_while_rows_are_written_is_an_error`: a run with a report in `dir`
/// under a file-size limit; prints its messages.
fn fsize_child(dir: &str) {
    let report = std::path::Path::new(dir).join("r.json");
    let info = i420();
    let mut rig = rig(
        &[("results-filename", report.to_str().unwrap())],
        &info.to_caps().unwrap(),
    );
    limit_file_size(FSIZE_LIMIT);
    let (r, d) = clip(&info, 2);
    for i in 0..FSIZE_FRAMES {
        let mut rb = r[(i % 2) as usize].copy();
        let mut db = d[(i % 2) as usize].copy();
        rb.get_mut().unwrap().set_pts(FRAME * i);
        db.get_mut().unwrap().set_pts(FRAME * i);
        rig.r.push(rb).unwrap();
        rig.d.push(db).unwrap();
    }
    rig.finish();
    let m = rig.messages();
    for (w, _) in &m.warnings {
        println!("WARNING: {w}");
    }
    for (e, _) in &m.errors {
        println!("ERROR: {e}");
    }
    for p in &m.pooled {
        println!("POOLED: {}", p.scores.frames);
    }
}

/// A file system that fills while the rows are streamed (a file-size limit in a child process,
/// where no small tmpfs can be mounted): a warning when the row cannot be written, every
/// frame's pooled message, then an error naming the path at EOS; no report and no temporary
/// left behind.
#[test]
fn a_full_disk_while_rows_are_written_is_an_error() {
    if let Ok(dir) = std::env::var(FSIZE_CHILD) {
        fsize_child(&dir);
        return;
    }
    let dir = scratch("fsize");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_full_disk_while_rows_are_written_is_an_error",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FSIZE_CHILD, dir.to_str().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let tagged = |tag: &str| -> Vec<String> {
        stdout
            .lines()
            .filter_map(|l| l.find(tag).map(|i| l[i + tag.len()..].to_string()))
            .collect()
    };
    let (warnings, errors, pooled) = (tagged("WARNING: "), tagged("ERROR: "), tagged("POOLED: "));
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "child: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(pooled, [FSIZE_FRAMES.to_string()], "{stdout}");
    let limit_hit = |t: &String| t.contains("r.json") && t.contains("File too large");
    assert!(warnings.iter().any(limit_hit), "{stdout}");
    assert!(
        errors.len() == 1 && limit_hit(&errors[0]) && errors[0].contains("frame"),
        "{stdout}"
    );
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Five pairs at 176x144 then five at 320x240 on both pads (on the distorted pad only unless
/// `both`), each from an appsrc through `converters`: the messages until EOS or an error, and
/// the XML report.
fn size_change_through(converters: &str, both: bool) -> (Messages, bool, String) {
    init();
    let dir = scratch(&format!("renegotiate-{}-{both}", converters.len()));
    let report = dir.join("r.xml");
    let line = format!(
        "appsrc name=r format=time ! {converters} ! v.ref_sink \
         appsrc name=d format=time ! {converters} ! v.dist_sink \
         vmafgpu name=v frame-message=false results-format=xml results-filename={} ! fakesink",
        report.display()
    );
    let pipeline = gst::parse::launch(&line).unwrap();
    let bin = pipeline.clone().downcast::<gst::Bin>().unwrap();
    let (rsrc, dsrc) = (bin.by_name("r").unwrap(), bin.by_name("d").unwrap());
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let small = info(VideoFormat::I420, 176, 144);
    let large = info(VideoFormat::I420, 320, 240);
    for i in 0..10u64 {
        for (src, distort) in [(&rsrc, false), (&dsrc, true)] {
            let info = if i < 5 || (!both && !distort) {
                &small
            } else {
                &large
            };
            if i == 0 || i == 5 {
                src.set_property("caps", info.to_caps().unwrap());
            }
            let b = frame(info, i, distort, FRAME * i);
            let _ = src.emit_by_name::<gst::FlowReturn>("push-buffer", &[&b]);
        }
    }
    for src in [&rsrc, &dsrc] {
        let _ = src.emit_by_name::<gst::FlowReturn>("end-of-stream", &[]);
    }
    let mut m = Messages::default();
    let mut eos = false;
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(60)) {
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
    pipeline.set_state(gst::State::Null).unwrap();
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    std::fs::remove_dir_all(&dir).unwrap();
    (m, eos, text)
}

/// A resolution change on both streams through converters (`videoconvert`, and `videoconvert
/// ! videoscale`) renegotiates to the new size and starts a new segment: every pair is scored,
/// the last segment at 320x240 (the report's size), no not-negotiated error, no rescaling to
/// the old size (the caps query used to pin each pad to the other pad's old size).
#[test]
fn a_size_change_on_both_pads_through_converters_renegotiates() {
    let mut bad = Vec::new();
    for converters in ["videoconvert", "videoconvert ! videoscale"] {
        let (m, eos, report) = size_change_through(converters, true);
        let frames = m.pooled.first().map(|p| p.scores.frames);
        if !eos || !m.errors.is_empty() || frames != Some(10) {
            bad.push(format!(
                "{converters}: eos {eos}, frames {frames:?}, errors {:?}",
                m.errors
            ));
        }
        if !report.contains("qualityWidth=\"320\" qualityHeight=\"240\"") {
            bad.push(format!(
                "{converters}: the last segment is not at 320x240: {}",
                report.lines().nth(1).unwrap_or("no report")
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A size change on the distorted stream only, through `videoconvert ! videoscale`, once
/// scoring has started: not scaled back to the reference's size in silence, but an error
/// naming both pads' caps, after the five pairs before it were scored and reported.
#[test]
fn a_size_change_on_one_pad_through_videoscale_is_an_error() {
    let (m, eos, report) = size_change_through("videoconvert ! videoscale", false);
    assert!(!eos, "the change on one pad passed: {:?}", m.order);
    assert!(
        m.errors
            .iter()
            .any(|(e, _)| e.contains("same width") && e.contains("320")),
        "{:?}",
        m.errors
    );
    assert_eq!(m.pooled.first().map(|p| p.scores.frames), Some(5));
    assert_eq!(report.matches("<frame ").count(), 5, "{report}");
}

const LATE_ALLOC_CHILD: &str = "VMAFGPU_ROBUST_LATE_ALLOC_CHILD";

/// The child of `an_engine_failure_after_scored_frames_keeps_them`: three 64x48 pairs with a
/// report, then one 16384x16384 GRAY8 pair on both pads (a new segment) under an address-space
/// limit of what is used plus `margin_mib`, then EOS; prints the messages up to the error.
fn late_alloc_child(margin_mib: u64, report: &str) {
    let small = i420();
    let mut rig = rig(
        &[
            ("threads", "1"),
            ("backend", "cpu"),
            ("results-filename", report),
        ],
        &small.to_caps().unwrap(),
    );
    let (r, d) = clip(&small, 3);
    for i in 0..3 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    let big = info(VideoFormat::Gray8, 16384, 16384);
    rig.r.set_src_caps(big.to_caps().unwrap());
    rig.d.set_src_caps(big.to_caps().unwrap());
    let buf = || {
        // fresh anonymous memory: zero samples, and nothing touched until read
        let mut b = gst::Buffer::with_size(big.size()).unwrap();
        b.get_mut().unwrap().set_pts(FRAME * 3);
        b
    };
    let (rb, db) = (buf(), buf());
    limit_address_space(vm_size() + (margin_mib << 20));
    let _ = rig.r.push(rb);
    let _ = rig.d.push(db);
    rig.r.push_event(gst::event::Eos::new());
    rig.d.push_event(gst::event::Eos::new());
    // the scratch failure comes after VIF on the whole frame: seconds on a loaded machine
    let mut m = Messages::default();
    while let Some(msg) = rig.bus.timed_pop(gst::ClockTime::from_seconds(120)) {
        push_message(&mut m, &msg);
        if !m.errors.is_empty() {
            break;
        }
    }
    println!("ORDER: {}", m.order);
    for p in &m.pooled {
        println!("POOLED: {}", p.scores.frames);
    }
    for (e, _) in &m.errors {
        println!("ERROR: {e}");
    }
}

/// An engine failure after frames were scored, at the push (the plane copy does not fit) or
/// inside the engine's finish at EOS (the VIF and ADM scratch planes do not): the frames scored
/// before it keep their messages, the pooled message and the report, then the error. Run in a
/// child process.
#[test]
fn an_engine_failure_after_scored_frames_keeps_them() {
    if let Ok(margin) = std::env::var(LATE_ALLOC_CHILD) {
        let report = std::env::var("VMAFGPU_ROBUST_REPORT").unwrap();
        late_alloc_child(margin.parse().unwrap(), &report);
        return;
    }
    let dir = scratch("late-alloc");
    let report = dir.join("r.json");
    let mut bad = Vec::new();
    for margin in [256, 1536] {
        let _ = std::fs::remove_file(&report);
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "an_engine_failure_after_scored_frames_keeps_them",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(LATE_ALLOC_CHILD, margin.to_string())
            .env("VMAFGPU_ROBUST_REPORT", &report)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let tagged = |tag: &str| -> Vec<String> {
            stdout
                .lines()
                .filter_map(|l| l.find(tag).map(|i| l[i + tag.len()..].to_string()))
                .collect()
        };
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let frames_in_report = text.matches("\"frameNum\"").count();
        let ok = out.status.success()
            && tagged("ORDER: ") == ["fffp"]
            && tagged("POOLED: ") == ["3"]
            && tagged("ERROR: ").iter().any(|e| e.contains("allocate"))
            && frames_in_report == 3;
        if !ok {
            bad.push(format!(
                "margin {margin} MiB: child {}, {frames_in_report} frames in the report:\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every property of the element at its limits (each unsigned at its minimum and maximum,
/// each enum value, each boolean on, each string empty and garbage), one at a time: the start
/// fails with an error message, or three pairs run to a pooled message or an error message;
/// never a panic or an abort.
#[test]
fn every_property_at_its_limits() {
    init();
    let probe = gst::ElementFactory::make("vmafgpu").build().unwrap();
    let own = probe.type_();
    let mut cases: Vec<(String, String)> = Vec::new();
    for p in probe.list_properties() {
        if p.owner_type() != own || !p.flags().contains(gst::glib::ParamFlags::WRITABLE) {
            continue;
        }
        let name = p.name().to_string();
        if name == "results-filename" {
            // its own tests: every target kind
            continue;
        }
        if let Some(u) = p.downcast_ref::<gst::glib::ParamSpecUInt>() {
            cases.push((name.clone(), u.minimum().to_string()));
            cases.push((name, u.maximum().to_string()));
        } else if let Some(e) = p.downcast_ref::<gst::glib::ParamSpecEnum>() {
            for v in e.enum_class().values() {
                cases.push((name.clone(), v.nick().to_string()));
            }
        } else if p.downcast_ref::<gst::glib::ParamSpecBoolean>().is_some() {
            cases.push((name, "true".into()));
        } else if p.downcast_ref::<gst::glib::ParamSpecString>().is_some() {
            cases.push((name.clone(), String::new()));
            cases.push((name, format!("\u{1}{}/../:=;{}", "x".repeat(300), "é")));
        } else {
            panic!("property {name} of a kind this test does not cover");
        }
    }
    assert!(cases.len() > 30, "{cases:?}");
    let info = i420();
    let mut bad = Vec::new();
    for (name, value) in &cases {
        let element = gst::ElementFactory::make("vmafgpu").build().unwrap();
        element.set_property_from_str(name, value);
        let bus = gst::Bus::new();
        element.set_bus(Some(&bus));
        let started = element.set_state(gst::State::Paused).is_ok();
        element.set_state(gst::State::Null).unwrap();
        if !started {
            let m = collect(&bus);
            if m.errors.iter().all(|(e, _)| e.is_empty()) {
                bad.push(format!(
                    "{name}={value:?}: the start failed without an error"
                ));
            }
            continue;
        }
        let mut rig = rig(&[(name.as_str(), value.as_str())], &info.to_caps().unwrap());
        let (r, d) = clip(&info, 3);
        for i in 0..3 {
            if rig.r.push(r[i].clone()).is_err() || rig.d.push(d[i].clone()).is_err() {
                break;
            }
        }
        rig.r.push_event(gst::event::Eos::new());
        rig.d.push_event(gst::event::Eos::new());
        let mut m = Messages::default();
        while let Some(msg) = rig.bus.timed_pop(gst::ClockTime::from_seconds(20)) {
            push_message(&mut m, &msg);
            if !m.errors.is_empty() || !m.pooled.is_empty() {
                break;
            }
        }
        let scored = m.pooled.first().map_or(0, |p| p.scores.frames);
        if scored == 0 && m.errors.is_empty() {
            bad.push(format!(
                "{name}={value:?}: neither a frame scored nor an error ({:?}, warnings {:?})",
                m.order, m.warnings
            ));
        }
        rig.element.set_state(gst::State::Null).unwrap();
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

const KILL_CHILD: &str = "VMAFGPU_ROBUST_KILL_CHILD";
const KILL_PAIRS: u64 = 3000;

/// The child of `a_killed_run_leaves_the_previous_report_or_a_whole_one`: `KILL_PAIRS` pairs
/// with a report at `path`, then EOS.
fn kill_child(path: &str) {
    let info = i420();
    let mut rig = rig(&[("results-filename", path)], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 2);
    println!("PUSHING");
    for i in 0..KILL_PAIRS {
        let mut rb = r[(i % 2) as usize].copy();
        let mut db = d[(i % 2) as usize].copy();
        rb.get_mut().unwrap().set_pts(FRAME * i);
        db.get_mut().unwrap().set_pts(FRAME * i);
        rig.r.push(rb).unwrap();
        rig.d.push(db).unwrap();
    }
    rig.finish();
    println!("DONE");
}

/// A run killed (SIGKILL) at any moment, scoring or writing: the path holds the previous
/// report untouched or the whole new one, never part of one; the next start on that path
/// removes the temporary the killed run left, and nothing else is left (the rows' spill file
/// is unlinked from the start).
#[test]
fn a_killed_run_leaves_the_previous_report_or_a_whole_one() {
    if let Ok(path) = std::env::var(KILL_CHILD) {
        kill_child(&path);
        return;
    }
    let dir = scratch("kill");
    let report = dir.join("r.json");
    let mut bad = Vec::new();
    let mut whole = 0;
    // delays in ms after the child starts pushing; the last one is never killed
    for delay in [0u64, 20, 100, 400, 1000, 2500, u64::MAX] {
        std::fs::write(&report, "previous").unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_killed_run_leaves_the_previous_report_or_a_whole_one",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(KILL_CHILD, &report)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        use std::io::BufRead as _;
        while !line.contains("PUSHING") {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                break;
            }
        }
        if delay == u64::MAX {
            assert!(child.wait().unwrap().success());
        } else {
            std::thread::sleep(std::time::Duration::from_millis(delay));
            let _ = child.kill();
            let _ = child.wait();
        }
        let text = std::fs::read_to_string(&report).unwrap();
        if text != "previous" {
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) if v["frames"].as_array().map(Vec::len) == Some(KILL_PAIRS as usize) => {
                    whole += 1
                }
                _ => bad.push(format!(
                    "killed after {delay} ms: the path holds {} bytes, neither the previous \
                     report nor a whole one",
                    text.len()
                )),
            }
        }
        // the next start on that path removes what the killed run left
        let (ok, _, element) = start_with_report(report.to_str().unwrap());
        assert!(ok);
        element.set_state(gst::State::Null).unwrap();
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != "r.json")
            .collect();
        if !left.is_empty() {
            bad.push(format!("killed after {delay} ms: left behind {left:?}"));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        whole >= 1,
        "the run that was not killed wrote no whole report"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A storm of flushing seeks on a running pipeline (`videotestsrc ! tee`, both pads), each to
/// a segment of one second: no error, EOS at the end of the last segment, frame numbers only
/// go up, and the last pooled message counts every frame message posted (a pooled message
/// comes at each EOS, and covers every frame since the start).
#[test]
fn a_seek_storm_keeps_the_counts() {
    init();
    let pipeline = gst::parse::launch(
        "videotestsrc pattern=ball ! \
         video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! tee name=t \
         t. ! queue ! v.ref_sink t. ! queue ! v.dist_sink \
         vmafgpu name=v backend=cpu ! fakesink sync=false",
    )
    .unwrap();
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Paused).unwrap();
    let _ = pipeline.state(gst::ClockTime::from_seconds(10));
    let segment = |start: gst::ClockTime| {
        pipeline
            .seek(
                1.0,
                gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE,
                gst::SeekType::Set,
                start,
                gst::SeekType::Set,
                start + gst::ClockTime::from_seconds(1),
            )
            .is_ok()
    };
    assert!(segment(gst::ClockTime::ZERO));
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut m = Messages::default();
    let mut ended = None;
    // 60 flushing seeks, a few milliseconds apart
    for k in 0..60u64 {
        ended = None;
        segment(gst::ClockTime::from_mseconds((k * 7919) % 12_000));
        std::thread::sleep(std::time::Duration::from_millis(3 + k % 5));
        while let Some(msg) = bus.pop() {
            push_message(&mut m, &msg);
            match msg.view() {
                gst::MessageView::Eos(_) => ended = Some(true),
                gst::MessageView::Error(_) => ended = Some(false),
                _ => {}
            }
        }
        if ended == Some(false) {
            break;
        }
    }
    while ended.is_none() {
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_seconds(60)) else {
            break;
        };
        push_message(&mut m, &msg);
        match msg.view() {
            gst::MessageView::Eos(_) => ended = Some(true),
            gst::MessageView::Error(_) => ended = Some(false),
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    assert_eq!(ended, Some(true), "errors {:?}", m.errors);
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let idx: Vec<u64> = m.frames.iter().map(|f| f.index).collect();
    assert!(idx.windows(2).all(|w| w[0] < w[1]), "frame numbers {idx:?}");
    let last = m.pooled.last().expect("a pooled message");
    assert_eq!(last.scores.frames, m.frames.len() as u64, "{:?}", m.order);
    assert!(m.frames.len() >= 10, "{} frames", m.frames.len());
}

/// Raw files through `filesrc ! rawvideoparse`: a truncated distorted file (its last frame cut
/// in half) scores the whole frames and ends in EOS; a garbage 10-bit file (samples above
/// 1023) is a clean error naming the sample, after the pooled message.
#[test]
fn truncated_and_garbage_files() {
    init();
    let dir = scratch("files");
    let info = i420();
    let frames = |distort: bool| -> Vec<u8> {
        (0..10)
            .flat_map(|i| {
                let b = frame(&info, i, distort, FRAME * i);
                b.map_readable().unwrap().as_slice().to_vec()
            })
            .collect()
    };
    let (r, d) = (frames(false), frames(true));
    let frame_bytes = info.size();
    std::fs::write(dir.join("ref.yuv"), &r).unwrap();
    std::fs::write(dir.join("cut.yuv"), &d[..9 * frame_bytes + frame_bytes / 2]).unwrap();
    // deterministic garbage: every byte pair a little-endian value up to 65535
    let garbage: Vec<u8> = (0..10 * 2 * frame_bytes as u64)
        .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
        .collect();
    std::fs::write(dir.join("garbage.yuv"), &garbage).unwrap();
    let parse = |file: &str, format: &str| {
        format!(
            "filesrc location={} ! rawvideoparse width=64 height=48 format={format} \
             framerate=25/1",
            dir.join(file).display()
        )
    };
    let sink = "vmafgpu name=v backend=cpu frame-message=false ! fakesink";
    let (m, eos) = run_pipeline(&format!(
        "{} ! v.ref_sink {} ! v.dist_sink {sink}",
        parse("ref.yuv", "i420"),
        parse("cut.yuv", "i420")
    ));
    let scored = m.pooled.first().map(|p| p.scores.frames);
    let truncated_ok = eos && m.errors.is_empty() && scored == Some(9);
    let (g, geos) = run_pipeline(&format!(
        "{} ! v.ref_sink {} ! v.dist_sink {sink}",
        parse("garbage.yuv", "i420-10le"),
        parse("garbage.yuv", "i420-10le")
    ));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        truncated_ok,
        "truncated: eos {eos}, scored {scored:?}, errors {:?}",
        m.errors
    );
    assert!(
        !geos && g.pooled.len() == 1 && g.order.ends_with('p'),
        "garbage: eos {geos}, messages {:?}",
        g.order
    );
    assert!(
        g.errors.iter().any(|(e, _)| e.contains("1023")),
        "garbage: {:?}",
        g.errors
    );
}

/// A live pipeline whose distorted branch stalls for half a second at frame 10 (a probe that
/// sleeps): no hang and no error; the reference frames whose deadline passed are unmatched,
/// and every frame of each pad is either scored or counted unmatched.
#[test]
fn a_live_stall_on_one_pad_is_counted_and_the_stream_goes_on() {
    use std::sync::atomic::{AtomicU32, Ordering};
    init();
    let caps = "video/x-raw,format=I420,width=64,height=48,framerate=25/1";
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc is-live=true num-buffers=40 pattern=ball ! {caps} ! v.ref_sink \
         videotestsrc is-live=true num-buffers=40 pattern=ball ! {caps} ! identity name=stall ! \
         v.dist_sink vmafgpu name=v backend=cpu frame-message=false latency=100000000 ! \
         fakesink sync=true"
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let seen = AtomicU32::new(0);
    pipeline
        .by_name("stall")
        .unwrap()
        .static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            if seen.fetch_add(1, Ordering::SeqCst) == 10 {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            gst::PadProbeReturn::Ok
        });
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut m = Messages::default();
    let mut eos = false;
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(30)) {
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
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(eos && m.errors.is_empty(), "{:?}", m.errors);
    let p = &m.pooled[0];
    assert!(p.unmatched_ref > 0, "the stall missed no deadline: {p:?}");
    assert_eq!(p.scores.frames + p.unmatched_ref, 40, "{p:?}");
    assert_eq!(p.scores.frames + p.unmatched_dist, 40, "{p:?}");
}

/// Six elements in six threads writing reports to one path at once: the path ends with one
/// whole report (four frames), and no temporary is left.
#[test]
fn concurrent_writers_on_one_path() {
    let dir = scratch("concurrent");
    let report = dir.join("r.json");
    let path = report.to_str().unwrap().to_string();
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || run_with_report(&path))
        })
        .collect();
    for t in threads {
        let m = t.join().unwrap();
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        assert_eq!(m.pooled.len(), 1);
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["frames"].as_array().map(Vec::len), Some(4));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(left, ["r.json"], "left behind");
}
