//! vmafgpu through gst-check harnesses: pairing, unmatched frames, EOS on either pad, caps
//! mismatch, flushing, geometry changes, windows, reports, live timeouts, bad models.
//!
//! The expected scores come from the engine run directly on the pairs the element should form
//! (`elementkit::oracle`), so each test checks that the element paired, ordered and reported the
//! right frames; the numbers themselves are checked against libvmaf in tests/element_golden.rs.

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

fn same_bytes(a: &gst::Buffer, b: &gst::Buffer) -> bool {
    a.map_readable().unwrap().as_slice() == b.map_readable().unwrap().as_slice()
        && a.pts() == b.pts()
}

#[test]
fn pairs_in_order_and_passes_the_distorted_frames_through() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 6);
    for i in 0..6 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    let out = rig.finish();
    assert_eq!(out.len(), 6);
    for (o, want) in out.iter().zip(&d) {
        assert!(
            same_bytes(o, want),
            "src must pass the distorted buffer unchanged"
        );
    }
    let m = rig.messages();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let pairs: Vec<_> = r.iter().zip(&d).collect();
    let want = oracle(&info, &pairs, ScorerConfig::default());
    check_frames(&m.frames, &want, &[0, 1, 2, 3, 4, 5]);
    assert_eq!(m.order, "ffffffp", "frames in order, pooled last");
    for (i, f) in m.frames.iter().enumerate() {
        assert_eq!(f.timing.timestamp, Some(FRAME * i as u64));
        assert_eq!(f.timing.running_time, Some(FRAME * i as u64));
        assert_eq!(f.timing.duration, Some(FRAME));
    }
    let p = &m.pooled[0];
    assert_eq!(p.scores.frames, 6);
    assert_eq!((p.unmatched_ref, p.unmatched_dist), (0, 0));
    // backend=auto: whatever the engine's own auto choice is on this machine ("cuda" on the GPU
    // machine, "cpu" elsewhere)
    let auto = gstvmafgpu::engine::Scorer::new(ScorerConfig::default()).unwrap();
    assert_eq!(p.backend, auto.backend_name());
    assert_eq!(p.model, "vmaf_v0.6.1");
    assert_eq!(p.timing.timestamp, Some(gst::ClockTime::ZERO));
    assert_eq!(p.timing.duration, Some(FRAME * 6));
    // the pooled mean is libvmaf's: a running sum in frame order divided by the count
    let mut sum = 0.0;
    for f in &want {
        sum += f.vmaf();
    }
    assert_eq!(p.scores.score(), Some(sum / 6.0));
}

#[test]
fn dropped_distorted_frames_are_counted_and_the_rest_pair_by_timestamp() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 10);
    let kept: Vec<usize> = (0..10).filter(|i| *i != 3 && *i != 7).collect();
    // alternate pushes; a reference frame without partner is pushed alone
    let mut k = kept.iter().peekable();
    for i in 0..10 {
        rig.r.push(r[i].clone()).unwrap();
        if k.peek() == Some(&&i) {
            rig.d.push(d[i].clone()).unwrap();
            k.next();
        }
    }
    let out = rig.finish();
    let want_out: Vec<_> = kept.iter().map(|&i| &d[i]).collect();
    assert_eq!(out.len(), want_out.len());
    for (o, w) in out.iter().zip(want_out) {
        assert!(same_bytes(o, w));
    }
    let m = rig.messages();
    let pairs: Vec<_> = kept.iter().map(|&i| (&r[i], &d[i])).collect();
    let want = oracle(&info, &pairs, ScorerConfig::default());
    check_frames(&m.frames, &want, &[0, 1, 2, 3, 4, 5, 6, 7]);
    // timestamps are those of the distorted frames that were scored
    let ts: Vec<_> = m
        .frames
        .iter()
        .map(|f| f.timing.timestamp.unwrap())
        .collect();
    assert_eq!(
        ts,
        kept.iter().map(|&i| FRAME * i as u64).collect::<Vec<_>>()
    );
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (8, 2, 0)
    );
    assert_eq!(m.warnings.len(), 1, "one warning per pad: {:?}", m.warnings);
    assert!(
        m.warnings[0]
            .0
            .contains("ref_sink frame at running time 0:00:00.120000000 has no partner"),
        "{:?}",
        m.warnings
    );
}

#[test]
fn dropped_reference_frames_leave_distorted_frames_unscored_but_passed_on() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 6);
    for i in 0..6 {
        if i != 2 {
            rig.r.push(r[i].clone()).unwrap();
        }
        rig.d.push(d[i].clone()).unwrap();
    }
    let out = rig.finish();
    assert_eq!(
        out.len(),
        6,
        "every distorted frame goes out, paired or not"
    );
    for (o, w) in out.iter().zip(&d) {
        assert!(same_bytes(o, w));
    }
    let m = rig.messages();
    let kept = [0usize, 1, 3, 4, 5];
    let pairs: Vec<_> = kept.iter().map(|&i| (&r[i], &d[i])).collect();
    check_frames(
        &m.frames,
        &oracle(&info, &pairs, ScorerConfig::default()),
        &[0, 1, 2, 3, 4],
    );
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (5, 0, 1)
    );
}

#[test]
fn eos_on_the_reference_pad_first() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 8);
    for i in 0..5 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    rig.r.push_event(gst::event::Eos::new());
    for b in &d[5..] {
        rig.d.push(b.clone()).unwrap();
    }
    // scoring ended with the reference: the last frame's message does not wait for dist EOS
    let mut out = Vec::new();
    for _ in 0..8 {
        out.push(rig.r.pull().unwrap());
    }
    let before_eos = rig.messages();
    assert_eq!(before_eos.order, "fffff");
    rig.d.push_event(gst::event::Eos::new());
    out.extend(rig.drain());
    assert_eq!(out.len(), 8);
    let m = rig.messages();
    assert_eq!(m.order, "p");
    let pairs: Vec<_> = (0..5).map(|i| (&r[i], &d[i])).collect();
    check_frames(
        &before_eos.frames,
        &oracle(&info, &pairs, ScorerConfig::default()),
        &[0, 1, 2, 3, 4],
    );
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (5, 0, 3)
    );
}

#[test]
fn eos_on_the_distorted_pad_first() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 8);
    for i in 0..5 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    rig.d.push_event(gst::event::Eos::new());
    for b in &r[5..] {
        rig.r.push(b.clone()).unwrap();
    }
    rig.r.push_event(gst::event::Eos::new());
    let out = rig.drain();
    assert_eq!(out.len(), 5);
    let m = rig.messages();
    assert_eq!(m.order, "fffffp");
    let pairs: Vec<_> = (0..5).map(|i| (&r[i], &d[i])).collect();
    check_frames(
        &m.frames,
        &oracle(&info, &pairs, ScorerConfig::default()),
        &[0, 1, 2, 3, 4],
    );
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (5, 3, 0)
    );
}

#[test]
fn mismatched_caps_are_a_negotiation_error_naming_both_caps() {
    for (rf, df) in [
        (
            info(VideoFormat::I420, 64, 48),
            info(VideoFormat::I420, 80, 48),
        ),
        (
            info(VideoFormat::I420, 64, 48),
            info(VideoFormat::Nv12, 64, 48),
        ),
    ] {
        let mut rig = rig(&[], &rf.to_caps().unwrap());
        rig.d.set_src_caps(df.to_caps().unwrap());
        let _ = rig.r.push(frame(&rf, 0, false, gst::ClockTime::ZERO));
        let _ = rig.d.push(gst::Buffer::with_size(df.size()).unwrap());
        // the error is posted from the aggregator's thread
        let msg = rig
            .bus
            .timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Error])
            .expect("an error message");
        let gst::MessageView::Error(e) = msg.view() else {
            unreachable!()
        };
        let text = e.error().to_string();
        assert!(e.error().matches(gst::CoreError::Negotiation), "{text}");
        let want_ref = format!(
            "ref_sink has {}x{} {}",
            rf.width(),
            rf.height(),
            rf.format().to_str()
        );
        let want_dist = format!(
            "dist_sink has {}x{} {}",
            df.width(),
            df.height(),
            df.format().to_str()
        );
        assert!(
            text.contains(&want_ref) && text.contains(&want_dist),
            "{text}"
        );
    }
}

#[test]
fn ten_bit_frames_are_read_at_their_bit_depth() {
    let info = info(VideoFormat::I42010le, 64, 48);
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 4);
    for i in 0..4 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    assert_eq!(rig.finish().len(), 4);
    let m = rig.messages();
    let pairs: Vec<_> = r.iter().zip(&d).collect();
    check_frames(
        &m.frames,
        &oracle(&info, &pairs, ScorerConfig::default()),
        &[0, 1, 2, 3],
    );
}

/// A 10-bit frame with a luma sample above 1023 is an error naming the sample, and the frames
/// before it lose nothing: their messages and a pooled message as if the stream had ended
/// before the bad frame come first. Where it is caught depends on the backend: at its push on
/// the CPU (and with the CUDA backend's host scan), a few frames later on CUDA, which checks on the
/// GPU without waiting. Either way nothing after it is scored.
#[test]
fn an_out_of_range_sample_is_an_error_naming_it() {
    let info = info(VideoFormat::I42010le, 64, 48);
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, mut d) = clip(&info, 8);
    let bad_at = 3;
    {
        let b = d[bad_at].make_mut();
        let mut map = b.map_writable().unwrap();
        let o = info.offset()[0] + 7 * info.stride()[0] as usize + 2 * 5;
        map.as_mut_slice()[o..o + 2].copy_from_slice(&1024u16.to_le_bytes());
    }
    for i in 0..8 {
        if rig.r.push(r[i].clone()).is_err() || rig.d.push(d[i].clone()).is_err() {
            break;
        }
    }
    rig.r.push_event(gst::event::Eos::new());
    rig.d.push_event(gst::event::Eos::new());
    let m = rig.messages();
    assert_eq!(m.errors.len(), 1, "one error: {:?}", m.errors);
    let (text, debug) = &m.errors[0];
    assert!(
        text.contains("sample 1024 at (5, 7) exceeds the 10-bit maximum 1023"),
        "{text} ({debug})"
    );
    // The clip of the frames before the bad one, frame 2 as its last frame.
    let pairs: Vec<_> = r.iter().zip(&d).take(bad_at).collect();
    let want = oracle(&info, &pairs, ScorerConfig::default());
    check_frames(&m.frames, &want, &[0, 1, 2]);
    assert_eq!(m.order, "fffp", "frame messages, then the pooled message");
    assert_eq!(m.pooled[0].scores.frames, bad_at as u64);
}

#[test]
fn sync_index_pairs_in_arrival_order_and_timestamp_does_not() {
    let info = i420();
    let (r, d) = clip(&info, 4);
    // distorted timestamps one second later than the reference ones
    let late: Vec<_> = d
        .iter()
        .map(|b| {
            let mut c = b.copy();
            c.get_mut()
                .unwrap()
                .set_pts(b.pts().unwrap() + gst::ClockTime::SECOND);
            c
        })
        .collect();
    let pairs: Vec<_> = r.iter().zip(&d).collect();
    let want = oracle(&info, &pairs, ScorerConfig::default());

    let mut rig = rig(&[("sync", "index")], &info.to_caps().unwrap());
    for i in 0..4 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(late[i].clone()).unwrap();
    }
    assert_eq!(rig.finish().len(), 4);
    let m = rig.messages();
    check_frames(&m.frames, &want, &[0, 1, 2, 3]);

    let mut rig = elementkit::rig(&[("sync", "timestamp")], &info.to_caps().unwrap());
    // the first late distorted frame waits at the head of its pad while every reference frame
    // (all earlier) is dropped; after the reference EOS the distorted frames pass unscored
    rig.d.push(late[0].clone()).unwrap();
    for b in &r {
        rig.r.push(b.clone()).unwrap();
    }
    rig.r.push_event(gst::event::Eos::new());
    for b in &late[1..] {
        rig.d.push(b.clone()).unwrap();
    }
    rig.d.push_event(gst::event::Eos::new());
    assert_eq!(rig.drain().len(), 4);
    let m = rig.messages();
    assert!(m.frames.is_empty());
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (0, 4, 4)
    );
    assert_eq!(p.scores.score(), None);
}

#[test]
fn a_flush_resets_pairing_and_motion_and_keeps_counting() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 10);
    for i in 0..5 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    // an unpaired reference frame queued at the flush must be forgotten, not paired later
    rig.r.push(r[5].clone()).unwrap();
    for _ in 0..5 {
        rig.r.pull().unwrap();
    }
    let seqnum = gst::Seqnum::next();
    for h in [&mut rig.r, &mut rig.d] {
        assert!(h.push_event(gst::event::FlushStart::builder().seqnum(seqnum).build()));
    }
    for h in [&mut rig.r, &mut rig.d] {
        assert!(h.push_event(gst::event::FlushStop::builder(true).seqnum(seqnum).build()));
        let mut seg = gst::FormattedSegment::<gst::ClockTime>::new();
        seg.set_start(FRAME * 5);
        seg.set_time(FRAME * 5);
        assert!(h.push_event(gst::event::Segment::new(&seg)));
    }
    for i in 5..10 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    let out = rig.finish();
    assert_eq!(out.len(), 5);
    let m = rig.messages();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    // before the flush: a clip of 5 frames (the last one finished at the flush); after it a
    // fresh clip: motion starts again
    let before: Vec<_> = (0..5).map(|i| (&r[i], &d[i])).collect();
    let after: Vec<_> = (5..10).map(|i| (&r[i], &d[i])).collect();
    let mut want = oracle(&info, &before, ScorerConfig::default());
    want.extend(oracle(&info, &after, ScorerConfig::default()));
    check_frames(&m.frames, &want, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (10, 0, 0)
    );
}

#[test]
fn a_size_change_starts_a_new_scoring_segment() {
    let small = i420();
    let big = info(VideoFormat::I420, 80, 64);
    let mut rig = rig(&[], &small.to_caps().unwrap());
    let (r1, d1) = clip(&small, 3);
    let r2: Vec<_> = (3..6).map(|i| frame(&big, i, false, FRAME * i)).collect();
    let d2: Vec<_> = (3..6).map(|i| frame(&big, i, true, FRAME * i)).collect();
    for i in 0..3 {
        rig.r.push(r1[i].clone()).unwrap();
        rig.d.push(d1[i].clone()).unwrap();
    }
    rig.r
        .push_event(gst::event::Caps::new(&big.to_caps().unwrap()));
    rig.d
        .push_event(gst::event::Caps::new(&big.to_caps().unwrap()));
    for i in 0..3 {
        rig.r.push(r2[i].clone()).unwrap();
        rig.d.push(d2[i].clone()).unwrap();
    }
    assert_eq!(rig.finish().len(), 6);
    let m = rig.messages();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let p1: Vec<_> = r1.iter().zip(&d1).collect();
    let p2: Vec<_> = r2.iter().zip(&d2).collect();
    let mut want = oracle(&small, &p1, ScorerConfig::default());
    want.extend(oracle(&big, &p2, ScorerConfig::default()));
    check_frames(&m.frames, &want, &[0, 1, 2, 3, 4, 5]);
    assert_eq!(
        m.pooled[0].scores.frames, 6,
        "the summary covers both segments"
    );
}

#[test]
fn window_messages_pool_every_n_frames() {
    let info = i420();
    let mut rig = rig(
        &[("window", "3"), ("pool-method", "min")],
        &info.to_caps().unwrap(),
    );
    let (r, d) = clip(&info, 7);
    for i in 0..7 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    rig.finish();
    let m = rig.messages();
    assert_eq!(m.order, "fffwfffwfp");
    assert_eq!(m.windows.len(), 2);
    for (w, first) in m.windows.iter().zip([0usize, 3]) {
        assert_eq!(w.index, first as u64);
        assert_eq!(w.scores.frames, 3);
        assert_eq!(w.timing.timestamp, Some(FRAME * first as u64));
        assert_eq!(w.timing.duration, Some(FRAME * 3));
        let v: Vec<f64> = m.frames[first..first + 3].iter().map(|f| f.score).collect();
        let st = w.scores.get("vmaf").unwrap();
        assert_eq!(st.mean, (v[0] + v[1] + v[2]) / 3.0);
        assert_eq!(st.min, v.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(st.max, v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        assert_eq!(w.scores.score(), Some(st.min), "pool-method=min");
    }
}

#[test]
fn frame_message_false_posts_only_the_summary() {
    let info = i420();
    let mut rig = rig(&[("frame-message", "false")], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 3);
    for i in 0..3 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    rig.finish();
    assert_eq!(rig.messages().order, "p");
}

fn report(format: &str) -> (String, elementkit::Messages) {
    let info = i420();
    let dir = std::env::temp_dir().join(format!("vmafgpu-el-{}-{format}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("r.{format}"));
    let p = path.to_str().unwrap();
    let mut rig = rig(
        &[("results-filename", p), ("results-format", format)],
        &info.to_caps().unwrap(),
    );
    let (r, d) = clip(&info, 4);
    for i in 0..4 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    rig.finish();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (text, rig.messages())
}

#[test]
fn the_json_report_holds_the_message_numbers() {
    let (text, m) = report("json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 4);
    let mut bad = Vec::new();
    for (f, msg) in frames.iter().zip(&m.frames) {
        assert_eq!(f["frameNum"].as_u64(), Some(msg.index));
        for (name, value) in &msg.metrics {
            if f["metrics"][name].as_f64() != Some(*value) {
                bad.push(format!("frame {} {name}", msg.index));
            }
        }
    }
    let p = &m.pooled[0];
    for (name, st) in &p.scores.metrics {
        for (stat, value) in [
            ("min", st.min),
            ("max", st.max),
            ("mean", st.mean),
            ("harmonic_mean", st.harmonic_mean),
        ] {
            if v["pooled_metrics"][name][stat].as_f64() != Some(value) {
                bad.push(format!("pooled {name} {stat}"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn xml_and_csv_reports() {
    let (xml, m) = report("xml");
    assert!(xml.starts_with("<VMAF version=\"3.2.0"), "{xml}");
    assert!(xml.contains("<params qualityWidth=\"64\" qualityHeight=\"48\" />"));
    assert_eq!(xml.matches("<frame frameNum=").count(), 4);
    assert!(xml.contains(&format!(
        "vmaf=\"{}\"",
        gstvmafgpu::vmafgpu::report::fmt_g17(m.frames[2].score)
    )));
    let (csv, m) = report("csv");
    let lines: Vec<_> = csv.lines().collect();
    assert_eq!(lines.len(), 5);
    assert!(lines[0].starts_with("Frame,"));
    let vmaf_col = lines[0].split(',').position(|c| c == "vmaf").unwrap();
    let row: Vec<_> = lines[4].split(',').collect();
    assert_eq!(row[0], "3");
    assert_eq!(row[vmaf_col].parse::<f64>().unwrap(), m.frames[3].score);
}

#[test]
fn live_a_partner_that_does_not_arrive_in_time_is_unmatched_and_the_stream_goes_on() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    // the harness sources answer the latency query as live: the aggregator becomes live and
    // waits for a missing partner on the (test) clock until running time + latency
    let (r, d) = clip(&info, 6);
    rig.r.push(r[0].clone()).unwrap();
    rig.d.push(d[0].clone()).unwrap();
    rig.r.pull().unwrap();
    let latency = rig.r.query_latency().expect("live latency");
    assert_eq!(latency, FRAME, "vmafgpu reports one frame of latency");
    // frame 1: only the reference arrives; the aggregator waits on the test clock for the
    // partner until running time + latency: let that wait run out
    rig.r.push(r[1].clone()).unwrap();
    rig.r.crank_single_clock_wait().unwrap();
    // (skipping the backend=auto fallback warning of a machine without a usable GPU)
    let w = loop {
        let w = rig
            .bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(10),
                &[gst::MessageType::Warning],
            )
            .expect("the timeout is reported");
        let gst::MessageView::Warning(v) = w.view() else {
            unreachable!()
        };
        if !v.error().to_string().starts_with("backend=auto:") {
            break w;
        }
    };
    let gst::MessageView::Warning(w) = w.view() else {
        unreachable!()
    };
    assert!(
        w.error()
            .to_string()
            .contains("did not arrive before the deadline"),
        "{}",
        w.error()
    );
    // frame 2 on: both sides again
    for i in 2..6 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    let out = rig.finish();
    assert_eq!(out.len(), 4);
    let m = rig.messages();
    let kept = [0usize, 2, 3, 4, 5];
    let pairs: Vec<_> = kept.iter().map(|&i| (&r[i], &d[i])).collect();
    check_frames(
        &m.frames,
        &oracle(&info, &pairs, ScorerConfig::default()),
        &[0, 1, 2, 3, 4],
    );
    let p = &m.pooled[0];
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (5, 1, 0)
    );
}

#[test]
fn a_bad_model_is_a_clear_error() {
    init();
    let dir = std::env::temp_dir().join(format!("vmafgpu-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.json");
    std::fs::write(&bad, "{ this is not a model").unwrap();
    for (model, want) in [
        (bad.to_str().unwrap().to_string(), "Cannot load VMAF model"),
        ("vmaf_v9.9".to_string(), "neither a built-in model"),
    ] {
        let e = gst::ElementFactory::make("vmafgpu")
            .property("model-filename", &model)
            .build()
            .unwrap();
        let bus = gst::Bus::new();
        e.set_bus(Some(&bus));
        assert!(e.set_state(gst::State::Paused).is_err());
        let msg = bus
            .pop_filtered(&[gst::MessageType::Error])
            .expect("an error message");
        let gst::MessageView::Error(err) = msg.view() else {
            unreachable!()
        };
        let text = err.error().to_string();
        assert!(
            text.contains(want) && text.contains(model.as_str()),
            "{text}"
        );
        e.set_state(gst::State::Null).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A live pipeline (two live test sources) whose distorted branch loses frames 10 to 19: the
/// aggregator's deadline passes for the reference frames without partner, they are counted, and
/// scoring goes on with the right pairs. (`latency=200000000`: 200 ms of slack so that a busy
/// machine does not make a late distorted frame miss its deadline too; `backend=cpu`: a GPU
/// backend's start-up (context, kernels) delays the two live sources' first frames unequally,
/// which this pairing test is not about.)
#[test]
fn live_pipeline_with_lost_distorted_frames() {
    use std::sync::atomic::{AtomicU32, Ordering};
    init();
    let caps = "video/x-raw,format=I420,width=64,height=48,framerate=25/1";
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc is-live=true num-buffers=30 pattern=ball ! {caps} ! v.ref_sink \
         videotestsrc is-live=true num-buffers=30 pattern=ball ! {caps} ! identity name=loss ! v.dist_sink \
         vmafgpu name=v backend=cpu latency=200000000 ! fakesink sync=true"
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let loss = pipeline.by_name("loss").unwrap();
    let seen = AtomicU32::new(0);
    loss.static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            if (10..20).contains(&seen.fetch_add(1, Ordering::SeqCst)) {
                gst::PadProbeReturn::Drop
            } else {
                gst::PadProbeReturn::Ok
            }
        });
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut m = Messages::default();
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(30)) {
        push_message(&mut m, &msg);
        if matches!(
            msg.view(),
            gst::MessageView::Eos(_) | gst::MessageView::Error(_)
        ) {
            break;
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    let p = m.pooled.first().expect("pooled message at EOS");
    assert_eq!(
        (p.scores.frames, p.unmatched_ref, p.unmatched_dist),
        (20, 10, 0)
    );
    assert_eq!(m.frames.len(), 20);
    for (k, f) in m.frames.iter().enumerate() {
        assert_eq!(f.index, k as u64);
        // the distorted frame scored as pair k is source frame k (k < 10) or k + 10
        // (running times relative to the first pair's: the live sources' first timestamps
        // depend on how long the pipeline took to start)
        let src = if k < 10 { k } else { k + 10 } as u64;
        let ts = f.timing.running_time.unwrap();
        let t0 = m.frames[0].timing.running_time.unwrap();
        let rel = ts.nseconds() as i128 - t0.nseconds() as i128;
        let want = (FRAME * src).nseconds() as i128;
        assert!(
            (rel - want).abs() < (FRAME / 2).nseconds() as i128,
            "pair {k} at {ts} (first pair at {t0})"
        );
        // both sources draw the same picture for the same frame number: a right pair is
        // identical (VIF 1 - 2e-7 in libvmaf's fixed point), a pair one frame apart scores
        // about 0.58 (the ball moves)
        let vif = f.get("integer_vif_scale0").unwrap();
        assert!(vif > 0.9999, "pair {k}: vif {vif}");
    }
}

#[test]
fn subsample_reports_every_nth_frame_with_its_own_index() {
    let info = i420();
    let mut rig = rig(&[("subsample", "2")], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 5);
    for i in 0..5 {
        rig.r.push(r[i].clone()).unwrap();
        rig.d.push(d[i].clone()).unwrap();
    }
    assert_eq!(rig.finish().len(), 5);
    let m = rig.messages();
    let pairs: Vec<_> = r.iter().zip(&d).collect();
    let cfg = ScorerConfig {
        subsample: 2,
        ..Default::default()
    };
    check_frames(&m.frames, &oracle(&info, &pairs, cfg), &[0, 2, 4]);
    for f in &m.frames {
        assert_eq!(f.timing.timestamp, Some(FRAME * f.index));
    }
    assert_eq!(m.pooled[0].scores.frames, 3);
}

#[test]
fn untimed_buffers_pair_in_arrival_order_with_a_warning() {
    let info = i420();
    let mut rig = rig(&[], &info.to_caps().unwrap());
    let (r, d) = clip(&info, 3);
    let untimed = |b: &gst::Buffer| {
        let mut c = b.copy();
        c.get_mut().unwrap().set_pts(gst::ClockTime::NONE);
        c
    };
    for i in 0..3 {
        rig.r.push(untimed(&r[i])).unwrap();
        rig.d.push(untimed(&d[i])).unwrap();
    }
    assert_eq!(rig.finish().len(), 3);
    let m = rig.messages();
    let pairs: Vec<_> = r.iter().zip(&d).collect();
    check_frames(
        &m.frames,
        &oracle(&info, &pairs, ScorerConfig::default()),
        &[0, 1, 2],
    );
    assert!(m.frames.iter().all(|f| f.timing.timestamp.is_none()));
    assert_eq!(m.warnings.len(), 1);
    assert!(
        m.warnings[0].0.contains("without timestamps"),
        "{:?}",
        m.warnings
    );
}
