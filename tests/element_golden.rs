//! The golden pairs through full pipelines (filesrc ! rawvideoparse ! vmafgpu): the numbers in
//! the messages and in the JSON report must equal libvmaf 3.2.0's (`==` on f64).

mod common;
mod elementkit;

use common::{Golden, Mismatches, Pair};
use gst::prelude::*;

/// Run `launch` to EOS (or error) and collect the messages of the element named `v`.
fn run(launch: &str) -> elementkit::Messages {
    elementkit::init();
    let pipeline = gst::parse::launch(launch).unwrap();
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut m = elementkit::Messages::default();
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(600)) {
        elementkit::push_message(&mut m, &msg);
        match msg.view() {
            gst::MessageView::Eos(_) | gst::MessageView::Error(_) => break,
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(m.errors.is_empty(), "{:?}", m.errors);
    m
}

fn source(pair: &Pair, side: &str) -> String {
    let format = if pair.bpc > 8 { "i420-10le" } else { "i420" };
    let path = common::data_dir().join(format!("yuv/{}_{side}.yuv", pair.name));
    assert!(
        path.exists(),
        "{}: run scripts/fetch-test-data.sh",
        path.display()
    );
    format!(
        "filesrc location={} ! rawvideoparse width={} height={} format={format} framerate=25/1",
        path.display(),
        pair.width,
        pair.height
    )
}

/// `tail`: elements between each parser and the element (e.g. a conversion).
fn pipeline(pair: &Pair, props: &str, tail: &str) -> String {
    format!(
        "{} ! {tail} v.ref_sink {} ! {tail} v.dist_sink vmafgpu name=v {props} ! fakesink",
        source(pair, "ref"),
        source(pair, "dis"),
    )
}

/// Every metric of every frame message and of the pooled message equals the golden.
fn check_messages(
    m: &elementkit::Messages,
    golden: &Golden,
    mm: &mut Mismatches,
    checked: &mut usize,
) {
    assert_eq!(m.frames.len(), golden.frames(), "frame messages");
    for (i, f) in m.frames.iter().enumerate() {
        assert_eq!(f.index, i as u64);
        mm.check(
            || format!("frame {i} score"),
            f.score,
            golden.frame(i, "vmaf").unwrap(),
        );
        *checked += 1;
        for (name, v) in &f.metrics {
            let want = golden
                .frame(i, name)
                .unwrap_or_else(|| panic!("{name} is not in the golden"));
            mm.check(|| format!("frame {i} {name}"), *v, want);
            *checked += 1;
        }
    }
    let p = &m.pooled[0];
    assert_eq!(p.scores.frames as usize, golden.frames());
    assert_eq!((p.unmatched_ref, p.unmatched_dist), (0, 0));
    for (name, st) in &p.scores.metrics {
        for (stat, v) in [
            ("min", st.min),
            ("max", st.max),
            ("mean", st.mean),
            ("harmonic_mean", st.harmonic_mean),
        ] {
            let want = golden.pooled(name, stat).unwrap();
            mm.check(|| format!("pooled {name} {stat}"), v, want);
            *checked += 1;
        }
    }
}

/// The same numbers in the JSON report file.
fn check_report(path: &std::path::Path, golden: &Golden, mm: &mut Mismatches, checked: &mut usize) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), golden.frames());
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f["frameNum"].as_u64(), Some(i as u64));
        for (name, val) in f["metrics"].as_object().unwrap() {
            mm.check(
                || format!("report frame {i} {name}"),
                val.as_f64().unwrap(),
                golden.frame(i, name).unwrap(),
            );
            *checked += 1;
        }
    }
    for (name, stats) in v["pooled_metrics"].as_object().unwrap() {
        for stat in ["min", "max", "mean", "harmonic_mean"] {
            mm.check(
                || format!("report pooled {name} {stat}"),
                stats[stat].as_f64().unwrap(),
                golden.pooled(name, stat).unwrap(),
            );
            *checked += 1;
        }
    }
}

fn golden_run(pair: Pair, model: Option<&str>, extra: &str, tail: &str) -> elementkit::Messages {
    golden_run_against(pair, model, pair.golden(model), extra, tail)
}

/// A v1 golden (tests/data/goldens/v1/<pair>_v3.2.0_<model>.json).
fn v1_golden(pair: &Pair, model: &str) -> Golden {
    let file = common::data_dir().join(format!("goldens/v1/{}_v3.2.0_{model}.json", pair.name));
    Golden(serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap())
}

fn golden_run_against(
    pair: Pair,
    model: Option<&str>,
    golden: Golden,
    extra: &str,
    tail: &str,
) -> elementkit::Messages {
    // one directory per run: tests run in parallel on the same pairs
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run_id = RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!(
        "vmafgpu-golden-{}-{}-{run_id}",
        std::process::id(),
        pair.name
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join(format!("{}.json", model.unwrap_or("default")));
    let props = format!(
        "model-filename={} results-filename={} {extra}",
        model.unwrap_or("vmaf_v0.6.1"),
        report.display()
    );
    let m = run(&pipeline(&pair, &props, tail));
    let mut mm = Mismatches::default();
    let mut checked = 0;
    check_messages(&m, &golden, &mut mm, &mut checked);
    check_report(&report, &golden, &mut mm, &mut checked);
    std::fs::remove_dir_all(&dir).unwrap();
    mm.finish(checked);
    m
}

#[test]
fn carphone_8bit_equals_libvmaf() {
    golden_run(common::CARPHONE, None, "", "");
}

/// Every companion metric property.
const COMPANIONS: &str = "psnr=true ssim=true ms-ssim=true ciede=true psnr-hvs=true";

/// The companion metrics through the element: every metric of the golden (and no other) in
/// every frame message, each `==` libvmaf 3.2.0 (checked by `golden_run`, messages and report).
fn companion_run(pair: Pair, props: &str, backend: &str) {
    let m = golden_run(pair, None, &format!("{props} {backend}"), "");
    let golden = pair.golden(None);
    let mut want = golden.metric_names();
    want.sort();
    for f in &m.frames {
        let mut got: Vec<String> = f.metrics.iter().map(|(n, _)| n.clone()).collect();
        got.sort();
        assert_eq!(got, want, "{} frame {}", pair.name, f.index);
    }
    let mut pooled: Vec<String> = m.pooled[0]
        .scores
        .metrics
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    pooled.sort();
    assert_eq!(pooled, want, "{} pooled", pair.name);
}

// On the CPU backend every companion metric is bit-exact (on a GPU, CIEDE2000 is bounded
// instead: golden_companions_through_cuda_equal_libvmaf).
#[test]
fn bbb360p10_companions_equal_libvmaf() {
    companion_run(common::BBB360P10, COMPANIONS, "backend=cpu");
}

#[test]
fn bbb720_companions_equal_libvmaf() {
    companion_run(common::BBB720, COMPANIONS, "backend=cpu");
}

/// carphone is 176x144: libvmaf computes no MS-SSIM for it (level 4 would be 11x9), and the
/// element refuses `ms-ssim=true` with an error that says so instead of leaving it out.
#[test]
fn carphone_companions_equal_libvmaf_and_ms_ssim_is_refused() {
    companion_run(
        common::CARPHONE,
        "psnr=true ssim=true ciede=true psnr-hvs=true",
        "backend=cpu",
    );
    elementkit::init();
    let launch = pipeline(&common::CARPHONE, "ms-ssim=true", "");
    let pipeline = gst::parse::launch(&launch).unwrap();
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut error = None;
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(60)) {
        match msg.view() {
            gst::MessageView::Error(e) => {
                error = Some(format!("{} {:?}", e.error(), e.debug()));
                break;
            }
            gst::MessageView::Eos(_) => break,
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let error = error.expect("ms-ssim on 176x144 must be an error");
    assert!(
        error.contains("float_ms_ssim") && error.contains("176x176"),
        "{error}"
    );
}

#[test]
fn bbb360p10_10bit_equals_libvmaf() {
    golden_run(common::BBB360P10, None, "", "");
}

/// P010 keeps its 10 bits in the high bits of each word: the element must shift them down.
/// (`dither=none`: videoconvert would otherwise dither when it packs its 16-bit intermediate
/// into 10 bits, changing the samples.)
#[test]
fn bbb360p10_as_p010_equals_libvmaf() {
    golden_run(
        common::BBB360P10,
        None,
        "",
        "videoconvert dither=none ! video/x-raw,format=P010_10LE ! ",
    );
}

#[test]
fn bbb720_equals_libvmaf() {
    golden_run(common::BBB720, None, "", "");
}

#[test]
fn carphone_other_models_equal_libvmaf() {
    golden_run(common::CARPHONE, Some("vmaf_v0.6.1neg"), "", "");
    golden_run(common::CARPHONE, Some("vmaf_4k_v0.6.1"), "", "");
}

#[test]
fn carphone_confidence_interval_equals_libvmaf() {
    let pair = common::CARPHONE;
    golden_run(pair, Some("vmaf_b_v0.6.3"), "conf-interval=true", "");
    // and the interval is in every frame message
    let props = "model-filename=vmaf_b_v0.6.3 conf-interval=true";
    let m = run(&pipeline(&pair, props, ""));
    let golden = pair.golden(Some("vmaf_b_v0.6.3"));
    for (i, f) in m.frames.iter().enumerate() {
        let ci = f.confidence_interval().expect("confidence interval");
        assert_eq!(ci.lo, golden.frame(i, "vmaf_ci_p95_lo").unwrap());
        assert_eq!(ci.hi, golden.frame(i, "vmaf_ci_p95_hi").unwrap());
        assert_eq!(ci.bagging, golden.frame(i, "vmaf_bagging").unwrap());
        assert_eq!(ci.stddev, golden.frame(i, "vmaf_stddev").unwrap());
    }
    assert!(m.pooled[0].confidence_interval().is_some());
}

/// Whether CUDA is usable; else `test` is skipped, saying why (a failure under
/// VMAFGPU_REQUIRE_GPU=1).
#[cfg(feature = "cuda")]
fn cuda_or_skip(test: &str) -> bool {
    let Some(why) = gstvmafgpu::backend::cuda::unavailable_reason() else {
        return true;
    };
    assert!(
        std::env::var("VMAFGPU_REQUIRE_GPU").as_deref() != Ok("1"),
        "{test}: VMAFGPU_REQUIRE_GPU=1 but CUDA is unusable: {why}"
    );
    eprintln!("{test}: skipped, no usable CUDA device: {why}");
    false
}

/// The golden pairs the GPU tests run: VMAFGPU_GOLDEN_PAIRS=carphone,... restricts them (the GPU
/// machine takes only the data that fits its 64 MiB transfer); by default all three.
#[cfg(feature = "cuda")]
fn golden_pairs() -> Vec<Pair> {
    let only = std::env::var("VMAFGPU_GOLDEN_PAIRS").ok();
    let pairs: Vec<_> = common::PAIRS
        .into_iter()
        .filter(|p| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|n| n == p.name))
        })
        .collect();
    assert!(!pairs.is_empty(), "VMAFGPU_GOLDEN_PAIRS selects no pair");
    pairs
}

/// The golden pairs through the element with `backend=cuda`: libvmaf 3.2.0's numbers with `==`,
/// and the pooled message names the CUDA backend. Skips (saying why) without a usable CUDA
/// device; fails instead under VMAFGPU_REQUIRE_GPU=1.
#[cfg(feature = "cuda")]
#[test]
fn golden_pairs_through_cuda_equal_libvmaf() {
    if !cuda_or_skip("golden_pairs_through_cuda_equal_libvmaf") {
        return;
    }
    for pair in golden_pairs() {
        golden_run(pair, None, "backend=cuda", "");
        let m = run(&pipeline(&pair, "backend=cuda frame-message=false", ""));
        assert_eq!(m.pooled.len(), 1);
        assert_eq!(m.pooled[0].backend, "cuda", "{}", pair.name);
    }
    golden_run(common::CARPHONE, Some("vmaf_v0.6.1neg"), "backend=cuda", "");
    golden_run(
        common::CARPHONE,
        Some("vmaf_b_v0.6.3"),
        "backend=cuda conf-interval=true",
        "",
    );
}

/// The companion metrics through the element with `backend=cuda` (the GPU kernels of
/// src/backend/gpu/companion.rs): PSNR, SSIM, MS-SSIM and PSNR-HVS `==` libvmaf 3.2.0;
/// CIEDE2000 within 1e-6 (tests/companion_parity.rs CIEDE_BOUND: CUDA's pow/sin/cos/exp/atan2 are
/// not glibc's), with
/// the largest difference printed. Skips without CUDA; fails under VMAFGPU_REQUIRE_GPU=1.
#[cfg(feature = "cuda")]
#[test]
fn golden_companions_through_cuda_equal_libvmaf() {
    if !cuda_or_skip("golden_companions_through_cuda_equal_libvmaf") {
        return;
    }
    for pair in golden_pairs() {
        let exact = if pair.name == "carphone" {
            "psnr=true ssim=true psnr-hvs=true"
        } else {
            "psnr=true ssim=true ms-ssim=true psnr-hvs=true"
        };
        let m = golden_run(pair, None, &format!("{exact} backend=cuda"), "");
        assert_eq!(m.pooled[0].backend, "cuda");
        // CIEDE2000: bounded, not equal (see the doc comment).
        let m = run(&pipeline(&pair, "ciede=true backend=cuda", ""));
        let golden = pair.golden(None);
        let mut worst = 0f64;
        for (i, f) in m.frames.iter().enumerate() {
            let got = f.get("ciede2000").expect("ciede2000");
            let want = golden.frame(i, "ciede2000").unwrap();
            worst = worst.max((got - want).abs());
        }
        eprintln!(
            "{}: CIEDE2000 through CUDA, largest |difference| from libvmaf over {} frames: {worst:e}",
            pair.name,
            m.frames.len()
        );
        assert!(
            worst <= 1e-6,
            "{}: CIEDE2000 differs by {worst:e}",
            pair.name
        );
    }
}

/// P010 (10 bits in the high bits of each word) through the element with `backend=cuda`: the
/// buffers go to the GPU as they are stored (the zero-copy route; the backend shifts the
/// samples while it stages them), VMAF and the exact companion metrics `==` libvmaf 3.2.0.
/// Skips without CUDA; fails under VMAFGPU_REQUIRE_GPU=1.
#[cfg(feature = "cuda")]
#[test]
fn bbb360p10_as_p010_through_cuda_equals_libvmaf() {
    if !cuda_or_skip("bbb360p10_as_p010_through_cuda_equals_libvmaf") {
        return;
    }
    if !golden_pairs()
        .iter()
        .any(|p| p.name == common::BBB360P10.name)
    {
        eprintln!("bbb360p10_as_p010_through_cuda_equals_libvmaf: bbb360p10 not selected");
        return;
    }
    let p010 = "videoconvert dither=none ! video/x-raw,format=P010_10LE ! ";
    golden_run(common::BBB360P10, None, "backend=cuda", p010);
    let m = golden_run(
        common::BBB360P10,
        None,
        "psnr=true ssim=true ms-ssim=true psnr-hvs=true backend=cuda",
        p010,
    );
    assert_eq!(m.pooled[0].backend, "cuda");
}

/// VMAF v1 through the element (CPU): every metric of every frame message, the pooled message
/// and the JSON report equal libvmaf 3.2.0's, with the chroma correction taken (bbb360p10 with
/// the prescaled _5d0h: speed_chroma 0 on every frame) and not taken.
#[test]
fn v1_models_through_the_element_equal_libvmaf() {
    for (pair, model) in [
        (common::BBB360P10, "vmaf_v1.0.16_3d0h"),
        (common::BBB360P10, "vmaf_v1.0.16_hfr_5d0h"),
        (common::BBB720, "vmaf_v1.0.16_3d0h_2160"),
    ] {
        golden_run_against(pair, Some(model), v1_golden(&pair, model), "", "");
    }
}

/// The standalone CAMBI and SpEED properties: libvmaf's `--feature cambi` etc. numbers, under
/// libvmaf's names, in the frame messages.
#[test]
fn standalone_cambi_and_speed_through_the_element() {
    standalone_run(
        common::BBB360P10,
        &["cambi", "speed_chroma", "speed_temporal"],
        "",
    );
}

/// `metrics` (libvmaf's names: `cambi`, `speed_chroma`, `speed_temporal`) as standalone
/// properties with `extra`: every frame message's values equal the pair's v1 goldens. Returns the
/// messages.
fn standalone_run(pair: Pair, metrics: &[&str], extra: &str) -> elementkit::Messages {
    let props: Vec<String> = metrics
        .iter()
        .map(|m| format!("{}=true", m.replace('_', "-")))
        .collect();
    let m = run(&pipeline(
        &pair,
        &format!("{} {extra}", props.join(" ")),
        "",
    ));
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for metric in metrics {
        let g = v1_golden(&pair, metric);
        assert_eq!(m.frames.len(), g.frames());
        for (i, f) in m.frames.iter().enumerate() {
            for name in g.metric_names() {
                let got = f
                    .metrics
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| *v)
                    .unwrap_or_else(|| panic!("{} frame {i}: no {name}", pair.name));
                mm.check(
                    || format!("{} frame {i} {name}", pair.name),
                    got,
                    g.frame(i, &name).unwrap(),
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
    m
}

/// `model-params`: libvmaf's model overloads; a bad one fails the start with a message naming it.
#[test]
fn model_params_property() {
    let pair = common::BBB360P10;
    let m = run(&pipeline(
        &pair,
        "model-filename=vmaf_v1.0.16_3d0h model-params=cambi.enc_bitdepth=8 frame-message=true",
        "",
    ));
    assert!(
        m.frames[0]
            .metrics
            .iter()
            .any(|(n, _)| n == "cambi_hrs_1080_cmxv_17_vlt_0.06_encbd_8"),
        "{:?}",
        m.frames[0].metrics
    );
    elementkit::init();
    let p = gst::parse::launch(&pipeline(&pair, "model-params=cambi.nope", "")).unwrap();
    let e = p.set_state(gst::State::Playing);
    let bus = p.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(gst::ClockTime::from_seconds(30), &[gst::MessageType::Error])
        .expect("an error");
    let gst::MessageView::Error(err) = msg.view() else {
        unreachable!()
    };
    assert!(
        err.error().to_string().contains("cambi.nope"),
        "{e:?} {}",
        err.error()
    );
    p.set_state(gst::State::Null).unwrap();
}

/// GRAY caps with a v1 model: a negotiation error naming the model (SpEED chroma needs chroma).
#[test]
fn gray_with_a_v1_model_is_refused_at_negotiation() {
    elementkit::init();
    let src = "videotestsrc num-buffers=3 ! video/x-raw,format=GRAY8,width=640,height=360";
    let p = gst::parse::launch(&format!(
        "{src} ! v.ref_sink {src} ! v.dist_sink vmafgpu name=v model-filename=vmaf_v1.0.16_3d0h ! fakesink"
    ))
    .unwrap();
    let _ = p.set_state(gst::State::Playing);
    let bus = p.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(gst::ClockTime::from_seconds(30), &[gst::MessageType::Error])
        .expect("an error");
    let gst::MessageView::Error(err) = msg.view() else {
        unreachable!()
    };
    let text = err.error().to_string();
    assert!(
        text.contains("vmaf_v1.0.16_3d0h") && text.contains("GRAY8"),
        "{text}"
    );
    p.set_state(gst::State::Null).unwrap();
}

/// VMAF v1 with `backend=cuda`: ADM, motion and CAMBI on the GPU, SpEED on the host CPU,
/// libvmaf 3.2.0's numbers with `==`, and the pooled message names the CUDA backend. Skips
/// without a usable CUDA device; fails instead under VMAFGPU_REQUIRE_GPU=1.
#[cfg(feature = "cuda")]
#[test]
fn v1_models_through_cuda_equal_libvmaf() {
    if !cuda_or_skip("v1_models_through_cuda_equal_libvmaf") {
        return;
    }
    let pairs = golden_pairs();
    for (pair, model) in [
        (common::BBB360P10, "vmaf_v1.0.16_3d0h"),
        (common::BBB360P10, "vmaf_v1.0.16_hfr_5d0h"),
        (common::BBB720, "vmaf_v1.0.16_1d5h_2160"),
        (common::BBB720, "vmaf_v1.0.16_hfr_3d0h_2160"),
        (common::CARPHONE, "vmaf_4k_v0.6.1neg"),
    ] {
        if !pairs.iter().any(|p| p.name == pair.name) {
            continue;
        }
        let m = golden_run_against(
            pair,
            Some(model),
            v1_golden(&pair, model),
            "backend=cuda",
            "",
        );
        assert_eq!(m.pooled[0].backend, "cuda", "{} {model}", pair.name);
    }
}

/// The standalone CAMBI, SpEED chroma and SpEED temporal properties with `backend=cuda` (all
/// three on the GPU, libvmaf's default options): libvmaf's `--feature` numbers with `==` in
/// every frame message, on bbb360p10 and, for SpEED temporal (CAMBI refuses 176x144, as libvmaf
/// does, and SpEED chroma its chroma), on carphone.
#[cfg(feature = "cuda")]
#[test]
fn standalone_cambi_and_speed_through_cuda_equal_libvmaf() {
    if !cuda_or_skip("standalone_cambi_and_speed_through_cuda_equal_libvmaf") {
        return;
    }
    let pairs = golden_pairs();
    let mut ran = 0;
    for (pair, metrics) in [
        (
            common::BBB360P10,
            &["cambi", "speed_chroma", "speed_temporal"][..],
        ),
        (common::CARPHONE, &["speed_temporal"][..]),
    ] {
        if !pairs.iter().any(|p| p.name == pair.name) {
            continue;
        }
        let m = standalone_run(pair, metrics, "backend=cuda");
        assert_eq!(m.pooled[0].backend, "cuda", "{}", pair.name);
        ran += 1;
    }
    assert!(
        ran > 0,
        "VMAFGPU_GOLDEN_PAIRS selects no pair with v1 goldens"
    );
}
