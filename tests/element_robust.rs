//! vmafgpu reliability: GAPs under `sync=index`, timestamp skew warnings, report paths checked
//! at start (errors, symlinks, FIFOs, devices), unique temporaries, empty runs, start errors.

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

/// The pipeline: identity drop-probability sends a GAP event for every dropped frame.
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
