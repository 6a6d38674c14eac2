//! The `vmafgpu` command, run as a script would run libvmaf's `vmaf` (its option spelling, `--json
//! -o FILE`): the report's numbers equal libvmaf 3.2.0's goldens (`==` on f64) in libvmaf's
//! structure, the pooled line is libvmaf's, and option errors give libvmaf's exit statuses.
//! Inputs: raw .yuv, .y4m made here from the raw files, and the encoded golden clips (decodebin).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Golden, Mismatches, Pair};
use gst::prelude::*;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_vmafgpu");

/// libvmaf's `--feature` list of the golden runs (`float_ms_ssim` only from 176x176 up).
const COMPANIONS: [&str; 4] = ["psnr", "float_ssim", "ciede", "psnr_hvs"];

fn vmafgpu(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the vmafgpu command runs")
}

/// Run, expect success, return stdout.
fn ok(args: &[&str]) -> String {
    let out = vmafgpu(args);
    assert!(
        out.status.success(),
        "vmafgpu {args:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Run, expect exit status `code`, return stderr.
fn fails(args: &[&str], code: i32) -> String {
    let out = vmafgpu(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "vmafgpu {args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: stdout not empty");
    err
}

/// A directory of its own for one test (tests run in parallel).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vmafgpu-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn yuv(pair: &Pair, side: &str) -> String {
    let p = common::data_dir().join(format!("yuv/{}_{side}.yuv", pair.name));
    assert!(
        p.exists(),
        "{}: run scripts/fetch-test-data.sh",
        p.display()
    );
    p.display().to_string()
}

fn raw_args(pair: &Pair) -> Vec<String> {
    [
        "-w",
        &pair.width.to_string(),
        "-h",
        &pair.height.to_string(),
        "-p",
        "420",
        "-b",
        &pair.bpc.to_string(),
    ]
    .map(String::from)
    .to_vec()
}

/// A .y4m of frames `from..to` of the pair's raw file (frame headers with a parameter, to read
/// past it).
fn make_y4m(pair: &Pair, side: &str, from: usize, to: usize, path: &Path) {
    let raw = pair.raw(side);
    let colour = if pair.bpc > 8 {
        "C420p10 "
    } else {
        "C420jpeg "
    };
    let mut out = format!(
        "YUV4MPEG2 W{} H{} F25:1 Ip A0:0 {colour}XYSCSS=420JPEG\n",
        pair.width, pair.height
    )
    .into_bytes();
    for f in raw.chunks_exact(pair.frame_bytes()).take(to).skip(from) {
        out.extend_from_slice(b"FRAME Ixyz\n");
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

/// `report` has libvmaf's structure and the golden's metrics (`rename`: golden name -> report
/// name), each `==` the golden, on frames `frames` (all when None: then pooled values too).
fn check_report(
    report: &Value,
    golden: &Golden,
    rename: &[(&str, &str)],
    frames: Option<std::ops::Range<usize>>,
) {
    let name = |g: &str| {
        rename
            .iter()
            .find(|(from, _)| *from == g)
            .map_or(g.to_string(), |(_, to)| to.to_string())
    };
    let g = &golden.0;
    assert_eq!(keys(report), keys(g), "top-level keys");
    assert!(
        report["version"].as_str().unwrap().starts_with("3.2.0"),
        "{}",
        report["version"]
    );
    assert!(report["fps"].is_number());
    assert_eq!(report["aggregate_metrics"], g["aggregate_metrics"]);
    let got = report["frames"].as_array().unwrap();
    let want = g["frames"].as_array().unwrap();
    let range = frames.clone().unwrap_or(0..want.len());
    if frames.is_none() {
        assert_eq!(got.len(), want.len(), "frames");
    }
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for i in range {
        let (f, w) = (&got[i], &want[i]);
        assert_eq!(keys(f), ["frameNum", "metrics"]);
        assert_eq!(f["frameNum"], w["frameNum"]);
        let wm = w["metrics"].as_object().unwrap();
        let mut want_names: Vec<String> = wm.keys().map(|k| name(k)).collect();
        want_names.sort();
        assert_eq!(keys(&f["metrics"]), want_names, "frame {i} metrics");
        for (k, v) in wm {
            let r = name(k);
            mm.check(
                || format!("frame {i} {r}"),
                f["metrics"][&r].as_f64().unwrap(),
                v.as_f64().unwrap(),
            );
            checked += 1;
        }
    }
    if frames.is_none() {
        let gp = g["pooled_metrics"].as_object().unwrap();
        let mut want_names: Vec<String> = gp.keys().map(|k| name(k)).collect();
        want_names.sort();
        assert_eq!(
            keys(&report["pooled_metrics"]),
            want_names,
            "pooled metrics"
        );
        for (k, stats) in gp {
            let r = name(k);
            assert_eq!(keys(&report["pooled_metrics"][&r]), keys(stats));
            for (stat, v) in stats.as_object().unwrap() {
                mm.check(
                    || format!("pooled {r} {stat}"),
                    report["pooled_metrics"][&r][stat].as_f64().unwrap(),
                    v.as_f64().unwrap(),
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}

/// The golden restricted to `metrics` (a run without some of its features).
fn golden_subset(golden: &Golden, metrics: &[&str]) -> Golden {
    let mut g = golden.0.clone();
    for f in g["frames"].as_array_mut().unwrap() {
        f["metrics"]
            .as_object_mut()
            .unwrap()
            .retain(|k, _| metrics.contains(&k.as_str()));
    }
    g["pooled_metrics"]
        .as_object_mut()
        .unwrap()
        .retain(|k, _| metrics.contains(&k.as_str()));
    Golden(g)
}

/// The metrics of vmaf_v0.6.1 in libvmaf 3.2.0's report.
const V061: [&str; 15] = [
    "integer_adm2",
    "integer_aim",
    "integer_adm3",
    "integer_adm_scale0",
    "integer_adm_scale1",
    "integer_adm_scale2",
    "integer_adm_scale3",
    "VMAF_integer_feature_motion_sad_score",
    "integer_vif_scale0",
    "integer_vif_scale1",
    "integer_vif_scale2",
    "integer_vif_scale3",
    "integer_motion2",
    "integer_motion3",
    "vmaf",
];

#[test]
fn carphone_yuv_json_equals_libvmaf() {
    let pair = common::CARPHONE;
    let dir = scratch("carphone-yuv");
    let report = dir.join("carphone.json");
    let (r, d) = (yuv(&pair, "ref"), yuv(&pair, "dis"));
    let mut args: Vec<String> = vec!["-r".into(), r, "-d".into(), d];
    args.extend(raw_args(&pair));
    args.extend(["-m", "version=vmaf_v0.6.1"].map(String::from));
    for f in COMPANIONS {
        args.extend(["--feature".to_string(), f.to_string()]);
    }
    // CIEDE2000 on a GPU is bounded, not equal (README): the CPU backend here
    args.extend(["--backend", "cpu", "--threads", "2", "--json", "-o"].map(String::from));
    args.push(report.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // libvmaf prints nothing on stdout when the report has a path
    assert_eq!(ok(&args), "");
    check_report(&read_json(&report), &pair.golden(None), &[], None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn carphone_y4m_prints_libvmafs_line() {
    let pair = common::CARPHONE;
    let dir = scratch("carphone-y4m");
    let (r, d) = (dir.join("ref.y4m"), dir.join("dis.y4m"));
    make_y4m(&pair, "ref", 0, pair.frames, &r);
    make_y4m(&pair, "dis", 0, pair.frames, &d);
    let golden = pair.golden(None);
    let mean = golden.pooled("vmaf", "mean").unwrap();
    let stdout = ok(&["-r", r.to_str().unwrap(), "-d", d.to_str().unwrap()]);
    // libvmaf: fprintf("%s: %f\n", version, score)
    assert_eq!(stdout, format!("vmaf_v0.6.1: {mean:.6}\n"));
    assert_eq!(stdout, "vmaf_v0.6.1: 34.685719\n");

    // name= renames the model's score; -o /dev/stdout carries the report alone
    let stdout = ok(&[
        "--reference",
        r.to_str().unwrap(),
        "--distorted",
        d.to_str().unwrap(),
        "--model",
        "version=vmaf_v0.6.1:name=carphone_vmaf",
        "--json",
        "--output",
        "/dev/stdout",
        "-q",
    ]);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    check_report(
        &report,
        &golden_subset(&golden, &V061),
        &[("vmaf", "carphone_vmaf")],
        None,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bbb360p10_mkv_all_companions_equal_libvmaf() {
    let g = common::data_dir().join("goldens");
    let dir = scratch("bbb360p10-mkv");
    let report = dir.join("bbb.json");
    let r = g.join("bbb360p10_ref_ffv1.mkv");
    let d = g.join("bbb360p10_dis_x265crf35.mkv");
    ok(&[
        "-r",
        r.to_str().unwrap(),
        "-d",
        d.to_str().unwrap(),
        "--feature",
        "psnr",
        "--feature",
        "float_ssim",
        "--feature",
        "float_ms_ssim",
        "--feature",
        "ciede",
        "--feature",
        "psnr_hvs",
        "--backend",
        "cpu",
        "--threads",
        "2",
        "--json",
        "-o",
        report.to_str().unwrap(),
    ]);
    check_report(
        &read_json(&report),
        &common::BBB360P10.golden(None),
        &[],
        None,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bbb360p10_10bit_y4m_and_frame_cnt() {
    let pair = common::BBB360P10;
    let dir = scratch("bbb360p10-y4m");
    let (r, d) = (dir.join("ref.y4m"), dir.join("dis.y4m"));
    make_y4m(&pair, "ref", 0, 8, &r);
    make_y4m(&pair, "dis", 0, 8, &d);
    let report = dir.join("bbb.json");
    ok(&[
        "-r",
        r.to_str().unwrap(),
        "-d",
        d.to_str().unwrap(),
        "--frame_cnt",
        "6",
        "--json",
        "-o",
        report.to_str().unwrap(),
    ]);
    let report = read_json(&report);
    assert_eq!(report["frames"].as_array().unwrap().len(), 6);
    // the last frame's motion has no next frame: compare the five before it
    check_report(
        &report,
        &golden_subset(&pair.golden(None), &V061),
        &[],
        Some(0..5),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--frame_skip_ref/--frame_skip_dist` on raw files (each frame read by three threads): the
/// same report as files without those frames (made as y4m), in frame and pooled values.
#[test]
fn frame_skip_equals_cut_files() {
    let pair = common::CARPHONE;
    let dir = scratch("skip");
    let (r, d) = (dir.join("ref.y4m"), dir.join("dis.y4m"));
    make_y4m(&pair, "ref", 7, 27, &r);
    make_y4m(&pair, "dis", 5, 25, &d);
    let cut = dir.join("cut.json");
    ok(&[
        "-r",
        r.to_str().unwrap(),
        "-d",
        d.to_str().unwrap(),
        "--json",
        "-o",
        cut.to_str().unwrap(),
    ]);
    let skipped = dir.join("skipped.json");
    let (ry, dy) = (yuv(&pair, "ref"), yuv(&pair, "dis"));
    let mut args: Vec<String> = vec!["-r".into(), ry, "-d".into(), dy];
    args.extend(raw_args(&pair));
    args.extend(
        [
            "--frame_skip_ref",
            "7",
            "--frame_skip_dist",
            "5",
            "--frame_cnt",
            "20",
            "--json",
            "-o",
        ]
        .map(String::from),
    );
    args.push(skipped.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // raw frames read by three threads each (positioned reads past the skipped frames)
    let out = Command::new(BIN)
        .args(&args)
        .env("VMAFGPU_READ_THREADS", "3")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cut = read_json(&cut);
    assert_eq!(cut["frames"].as_array().unwrap().len(), 20);
    check_report(&read_json(&skipped), &Golden(cut), &[], None);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--no_prediction` without a model: only the `--feature` metrics, libvmaf's numbers.
#[test]
fn no_prediction_reports_the_features_alone() {
    let pair = common::CARPHONE;
    let dir = scratch("noprediction");
    let report = dir.join("psnr.json");
    let (r, d) = (yuv(&pair, "ref"), yuv(&pair, "dis"));
    let mut args: Vec<String> = vec!["-r".into(), r, "-d".into(), d];
    args.extend(raw_args(&pair));
    args.extend(
        [
            "-n",
            "--feature",
            "psnr",
            "--frame_cnt",
            "10",
            "--json",
            "-o",
        ]
        .map(String::from),
    );
    args.push(report.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(ok(&args), "");
    let report = read_json(&report);
    assert_eq!(report["frames"].as_array().unwrap().len(), 10);
    let psnr = ["psnr_y", "psnr_cb", "psnr_cr"];
    check_report(
        &report,
        &golden_subset(&pair.golden(None), &psnr),
        &[],
        Some(0..10),
    );
    assert_eq!(
        keys(&report["pooled_metrics"]),
        ["psnr_cb", "psnr_cr", "psnr_y"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--subsample`, and the XML (libvmaf's default) and CSV layouts.
#[test]
fn subsample_xml_and_csv() {
    let pair = common::CARPHONE;
    let dir = scratch("formats");
    let (r, d) = (yuv(&pair, "ref"), yuv(&pair, "dis"));
    let run = |extra: &[&str], file: &str| {
        let path = dir.join(file);
        let mut args: Vec<String> = vec!["-r".into(), r.clone(), "-d".into(), d.clone()];
        args.extend(raw_args(&pair));
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["-o".to_string(), path.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&args);
        std::fs::read_to_string(path).unwrap()
    };
    let json = run(
        &["--subsample", "4", "--frame_cnt", "13", "--json"],
        "s.json",
    );
    let json: Value = serde_json::from_str(&json).unwrap();
    let frames = json["frames"].as_array().unwrap();
    let nums: Vec<u64> = frames
        .iter()
        .map(|f| f["frameNum"].as_u64().unwrap())
        .collect();
    assert_eq!(nums, [0, 4, 8, 12]);
    let golden = pair.golden(None);
    let mut mm = Mismatches::default();
    let mut checked = 0;
    // frame 12 is the last (no next frame for motion)
    for f in &frames[..3] {
        let i = f["frameNum"].as_u64().unwrap() as usize;
        for name in V061 {
            mm.check(
                || format!("frame {i} {name}"),
                f["metrics"][name].as_f64().unwrap(),
                golden.frame(i, name).unwrap(),
            );
            checked += 1;
        }
    }
    mm.finish(checked);

    let xml = run(&["--frame_cnt", "3"], "r.xml");
    assert!(xml.starts_with("<VMAF version=\"3.2.0"), "{xml}");
    assert!(xml.contains("<params qualityWidth=\"176\" qualityHeight=\"144\" />"));
    assert_eq!(xml.matches("<frame frameNum=").count(), 3);
    assert!(xml.contains("<metric name=\"vmaf\" "));
    let csv = run(&["--frame_cnt", "3", "--csv"], "r.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[0].starts_with("Frame,") && lines[0].ends_with("vmaf,"));
    assert!(lines[1].starts_with("0,") && lines[3].starts_with("2,"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Option errors: libvmaf's message and status 1; failures to score: a message and 255.
#[test]
fn errors_have_libvmafs_statuses() {
    let pair = common::CARPHONE;
    let (r, d) = (yuv(&pair, "ref"), yuv(&pair, "dis"));
    let raw = raw_args(&pair);
    let with_raw = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["-r".into(), r.clone(), "-d".into(), d.clone()];
        v.extend(raw.iter().cloned());
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    // a .yuv without its geometry
    let e = fails(&["-r", &r, "-d", &d], 1);
    assert!(
        e.contains("--width/-w") && e.contains("--bitdepth/-b"),
        "{e}"
    );
    let e = fails(&["-r", &r, "-d", &d, "-w", "176", "-h", "144"], 1);
    assert!(e.contains("required for .yuv input"), "{e}");
    // no reference
    let e = fails(&["-d", &d], 1);
    assert!(e.contains("-r/--reference"), "{e}");
    // an unknown feature, and options of a feature computed with libvmaf's defaults only
    let e = fails(&strs(&with_raw(&["--feature", "float_vif"])), 1);
    assert!(e.contains("Unknown feature \"float_vif\""), "{e}");
    let e = fails(
        &strs(&with_raw(&["--feature", "psnr=enable_chroma=false"])),
        1,
    );
    assert!(e.contains("not supported for psnr"), "{e}");
    // bad -m: no key=value, no version/path, two models of one name
    let e = fails(&strs(&with_raw(&["-m", "vmaf_v0.6.1"])), 1);
    assert!(e.contains("Problem parsing model"), "{e}");
    let e = fails(&strs(&with_raw(&["-m", "name=x"])), 1);
    assert!(e.contains("version=NAME or path=FILE"), "{e}");
    let e = fails(
        &strs(&with_raw(&[
            "-m",
            "version=vmaf_v0.6.1",
            "-m",
            "version=vmaf_v0.6.1neg",
        ])),
        1,
    );
    assert!(e.contains("uniquely named"), "{e}");
    let e = fails(&strs(&with_raw(&["-p", "411"])), 1);
    assert!(
        e.contains("Invalid argument \"411\" for option -p/--pixel_format"),
        "{e}"
    );
    let e = fails(&strs(&with_raw(&["--backend", "opencl"])), 1);
    assert!(e.contains("--backend"), "{e}");
    // failures: libvmaf's `return -1`
    let e = fails(&strs(&with_raw(&["-m", "version=vmaf_v9"])), 255);
    assert!(e.contains("problem loading model: vmaf_v9"), "{e}");
    let e = fails(
        &strs(&with_raw(&["-m", "version=vmaf_v0.6.1:foo.bar=1"])),
        255,
    );
    assert!(e.contains("no feature extractor named \"foo\""), "{e}");
    let e = fails(
        &strs(&with_raw(&[
            "-m",
            "version=vmaf_v0.6.1:vif.vif_enhn_gain_limit=x",
        ])),
        255,
    );
    assert!(e.contains("vif_enhn_gain_limit"), "{e}");
    let e = fails(
        &[
            "-r",
            &r,
            "-d",
            "/nonexistent/dis.yuv",
            "-w",
            "176",
            "-h",
            "144",
            "-p",
            "420",
            "-b",
            "8",
        ],
        255,
    );
    assert!(
        e.contains("could not open file: /nonexistent/dis.yuv"),
        "{e}"
    );
    let e = fails(&strs(&with_raw(&["-o", "/nonexistent/dir/out.xml"])), 255);
    assert!(e.contains("/nonexistent/dir/out.xml"), "{e}");
    // y4m against raw of another size
    let dir = scratch("errors");
    let y = dir.join("ref.y4m");
    make_y4m(&pair, "ref", 0, 2, &y);
    let e = fails(
        &[
            "-r",
            y.to_str().unwrap(),
            "-d",
            &d,
            "-w",
            "88",
            "-h",
            "72",
            "-p",
            "420",
            "-b",
            "8",
        ],
        255,
    );
    assert!(e.contains("dimensions do not match: 176x144, 88x72"), "{e}");
    assert!(e.contains("videos are incompatible, 1 problem."), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    // -v prints the version on stderr, as libvmaf
    let out = vmafgpu(&["-v"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("3.2.0 (vmafgpu "));
}

/// Summary rows without what differs between runs (time, GPU, whether taken from a report).
fn rows(summary: &Path) -> Vec<Value> {
    let mut v: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    for r in &mut v {
        let o = r.as_object_mut().unwrap();
        o.remove("seconds");
        o.remove("device");
        o.remove("resumed");
    }
    v
}

/// A report's numbers (its frames and pooled metrics; not its fps).
fn numbers(report: &Path) -> (Value, Value) {
    let v = read_json(report);
    (v["frames"].clone(), v["pooled_metrics"].clone())
}

/// `vmafgpu batch`: a report per pair (libvmaf's numbers), a failed pair recorded while the rest
/// go on, `--resume`, and `--shard I/N` + `vmafgpu merge` giving the whole run pair by pair.
#[test]
fn batch_shards_resume_and_merge() {
    let pair = common::CARPHONE;
    let dir = scratch("batch");
    let (r, d) = (yuv(&pair, "ref"), yuv(&pair, "dis"));
    let y4m = dir.join("ref.y4m");
    make_y4m(&pair, "ref", 0, 20, &y4m);
    // relative paths are relative to the manifest
    std::fs::write(
        dir.join("pairs.jsonl"),
        format!(
            "{{\"reference\": \"{r}\", \"distorted\": \"{d}\", \"id\": \"carphone\"}}\n\
             {{\"reference\": \"{r}\", \"distorted\": \"{d}\", \"options\": \"--frame_cnt 9 --feature psnr\"}}\n\
             {{\"reference\": \"{r}\", \"distorted\": \"missing.yuv\", \"id\": \"broken\"}}\n\
             {{\"reference\": \"ref.y4m\", \"distorted\": \"{d}\", \"id\": \"y4m\", \"options\": [\"--frame_cnt\", \"12\"]}}\n\
             {{\"reference\": \"{r}\", \"distorted\": \"{d}\", \"options\": \"--frame_skip_ref 2 --frame_cnt 7\"}}\n"
        ),
    )
    .unwrap();
    let manifest = dir.join("pairs.jsonl");
    let run = |out: &str, extra: &[&str]| {
        let out = dir.join(out);
        let mut args: Vec<String> = vec![
            "batch".into(),
            manifest.display().to_string(),
            "--output-dir".into(),
            out.display().to_string(),
        ];
        args.extend(raw_args(&pair));
        args.extend(["--backend", "cpu", "--threads", "1", "--jobs", "2"].map(String::from));
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        (vmafgpu(&args), out)
    };

    let (o, whole) = run("whole", &[]);
    // one pair failed: recorded, the others scored, status 255
    assert_eq!(
        o.status.code(),
        Some(255),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let all = rows(&whole.join("summary.json"));
    assert_eq!(all.len(), 5);
    let ids: Vec<&str> = all.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["carphone", "pair-00001", "broken", "y4m", "pair-00004"]
    );
    let status: Vec<&str> = all.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["ok", "ok", "failed", "ok", "ok"]);
    assert!(
        all[2]["error"]
            .as_str()
            .unwrap()
            .contains("could not open file")
    );
    let frames: Vec<u64> = all
        .iter()
        .map(|r| r["frames"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(frames, [120, 9, 0, 12, 7]);
    // the whole pair's report and pooled score are libvmaf's
    let golden = golden_subset(&pair.golden(None), &V061);
    check_report(&read_json(&whole.join("carphone.json")), &golden, &[], None);
    assert_eq!(all[0]["vmaf"].as_f64(), golden.pooled("vmaf", "mean"));
    assert_eq!(all[0]["model"], "vmaf_v0.6.1");
    let csv = std::fs::read_to_string(whole.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 6);
    assert!(csv.starts_with("index,id,reference,distorted,status,"));

    // --resume takes the finished pairs' reports as they are and retries the failed one
    let before = numbers(&whole.join("y4m.json"));
    let (o, _) = run("whole", &["--resume"]);
    assert_eq!(o.status.code(), Some(255));
    let resumed: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(whole.join("summary.json")).unwrap())
            .unwrap();
    let flags: Vec<bool> = resumed
        .iter()
        .map(|r| r["resumed"].as_bool().unwrap())
        .collect();
    assert_eq!(flags, [true, true, false, true, true]);
    assert_eq!(rows(&whole.join("summary.json")), all);
    assert_eq!(numbers(&whole.join("y4m.json")), before);

    // three shards, merged: the whole run, pair by pair
    let mut summaries = Vec::new();
    for i in 0..3 {
        let (o, out) = run(&format!("shard{i}"), &["--shard", &format!("{i}/3")]);
        // pair 2 (the broken one) is in shard 2
        assert_eq!(o.status.code(), Some(if i == 2 { 255 } else { 0 }));
        let s = out.join(format!("summary.shard-{i}-of-3.json"));
        for row in rows(&s) {
            let idx = row["index"].as_u64().unwrap() as usize;
            assert_eq!(idx % 3, i);
            if let Some(file) = row["report"].as_str() {
                assert_eq!(
                    numbers(&out.join(file)),
                    numbers(&whole.join(file)),
                    "{file}"
                );
            }
        }
        summaries.push(s.display().to_string());
    }
    let merged = dir.join("merged");
    let mut args = vec![
        "merge".to_string(),
        "--output-dir".into(),
        merged.display().to_string(),
    ];
    args.extend(summaries.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = vmafgpu(&args);
    assert_eq!(o.status.code(), Some(255), "the broken pair stays failed");
    assert_eq!(rows(&merged.join("summary.json")), all);
    // a pair in two summaries is refused
    let twice = [
        "merge",
        "--output-dir",
        merged.to_str().unwrap(),
        summaries[0].as_str(),
        summaries[0].as_str(),
    ];
    assert!(fails(&twice, 255).contains("in two summaries"));
    // a bad option for every pair is a usage error before anything runs
    let e = fails(
        &["batch", manifest.to_str().unwrap(), "--feature", "vif"],
        1,
    );
    assert!(e.contains("Unknown feature"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Raw files whose rows GStreamer pads (odd sizes, every chroma layout, 8 to 16 bits) read by
/// the command equal the same files read by `filesrc ! rawvideoparse` (tight strides given) into
/// the element, in every number of the report.
#[test]
fn odd_sized_raw_layouts_equal_rawvideoparse() {
    gst::init().unwrap();
    gstvmafgpu::plugin_register_static().unwrap();
    let dir = scratch("layouts");
    for (w, h, pix, bits, format) in [
        (65usize, 49usize, "420", 10u32, "i420-10le"),
        (67, 41, "422", 12, "i422-12le"),
        (35, 37, "444", 8, "y444"),
        (45, 34, "444", 16, "y444-16le"),
    ] {
        let (cw, ch) = match pix {
            "420" => (w.div_ceil(2), h.div_ceil(2)),
            "422" => (w.div_ceil(2), h),
            _ => (w, h),
        };
        let bps = if bits > 8 { 2 } else { 1 };
        let frame = (w * h + 2 * cw * ch) * bps;
        let frames = 5;
        let content = |seed: usize| -> Vec<u8> {
            let max = (1u64 << bits) - 1;
            let mut out = Vec::with_capacity(frame * frames);
            for f in 0..frames {
                for (p, (pw, ph)) in [(w, h), (cw, ch), (cw, ch)].into_iter().enumerate() {
                    for y in 0..ph {
                        for x in 0..pw {
                            let v =
                                ((x * 7 + y * 13 + f * 5 + p * 31) ^ (x * y + seed)) as u64 % 256;
                            let v = (v * (max + 1) / 256).min(max);
                            if bps == 2 {
                                out.extend_from_slice(&(v as u16).to_le_bytes());
                            } else {
                                out.push(v as u8);
                            }
                        }
                    }
                }
            }
            out
        };
        let (r, d) = (
            dir.join(format!("{format}_ref.yuv")),
            dir.join(format!("{format}_dis.yuv")),
        );
        std::fs::write(&r, content(0)).unwrap();
        std::fs::write(&d, content(3)).unwrap();
        let ours = dir.join(format!("{format}_cli.json"));
        ok(&[
            "-r",
            r.to_str().unwrap(),
            "-d",
            d.to_str().unwrap(),
            "-w",
            &w.to_string(),
            "-h",
            &h.to_string(),
            "-p",
            pix,
            "-b",
            &bits.to_string(),
            "--feature",
            "psnr",
            "--backend",
            "cpu",
            "--json",
            "-o",
            ours.to_str().unwrap(),
        ]);
        let theirs = dir.join(format!("{format}_gst.json"));
        let src = |path: &Path| {
            format!(
                "filesrc location={} ! rawvideoparse width={w} height={h} format={format} \
                 framerate=25/1 plane-strides=\"<{},{},{}>\" plane-offsets=\"<0,{},{}>\" \
                 frame-size={frame}",
                path.display(),
                w * bps,
                cw * bps,
                cw * bps,
                w * h * bps,
                (w * h + cw * ch) * bps
            )
        };
        let launch = format!(
            "{} ! v.ref_sink {} ! v.dist_sink vmafgpu name=v psnr=true backend=cpu \
             results-filename={} ! fakesink",
            src(&r),
            src(&d),
            theirs.display()
        );
        let pipeline = gst::parse::launch(&launch).unwrap();
        pipeline.set_state(gst::State::Playing).unwrap();
        let bus = pipeline.bus().unwrap();
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(120),
                &[gst::MessageType::Eos, gst::MessageType::Error],
            )
            .expect("the pipeline ends");
        pipeline.set_state(gst::State::Null).unwrap();
        assert!(
            matches!(msg.view(), gst::MessageView::Eos(_)),
            "{format}: {msg:?}"
        );
        let theirs = read_json(&theirs);
        assert_eq!(
            theirs["frames"].as_array().unwrap().len(),
            frames,
            "{format}"
        );
        check_report(&read_json(&ours), &Golden(theirs), &[], None);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `--plot` charts' number format: at most six decimals, trailing zeros dropped.
fn plot_number(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `--plot`: from .y4m inputs (frame rate known) whose distorted file ends 2 frames early, an
/// SVG with one panel per metric asked for (VMAF and the --feature psnr metrics), each with
/// its title (the report's pooled mean, the five worst frames), one polyline point per scored
/// frame, the pooled line and five markers; the unmatched counts in the caption; and a PNG of
/// the same run: its signature, size and ink.
#[test]
fn plot_svg_and_png() {
    let pair = common::CARPHONE;
    let dir = scratch("plot");
    let (r, d) = (dir.join("ref.y4m"), dir.join("dis.y4m"));
    make_y4m(&pair, "ref", 0, 12, &r);
    make_y4m(&pair, "dis", 0, 10, &d);
    let (svg, png, report) = (dir.join("c.svg"), dir.join("c.png"), dir.join("c.json"));
    let (r, d) = (r.display().to_string(), d.display().to_string());
    let run = |plot: &Path| {
        let plot = plot.display().to_string();
        let rep = report.display().to_string();
        ok(&[
            "-r",
            &r,
            "-d",
            &d,
            "--feature",
            "psnr",
            "--backend",
            "cpu",
            "-q",
            "--json",
            "-o",
            &rep,
            "--plot",
            &plot,
        ]);
    };
    run(&svg);
    let text = std::fs::read_to_string(&svg).unwrap();
    let rep = read_json(&report);
    let frames = rep["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 10);
    assert!(text.starts_with("<svg"));
    assert!(text.contains("vmafgpu: ref.y4m vs dis.y4m"));
    assert!(
        text.contains("10 frames scored on cpu; unmatched frames: reference 2, distorted 0"),
        "caption"
    );
    assert!(text.contains("frame (seconds at 25 fps)"));
    for metric in ["vmaf", "psnr_y", "psnr_cb", "psnr_cr"] {
        let mean = rep["pooled_metrics"][metric]["mean"].as_f64().unwrap();
        let mut values: Vec<(f64, u64)> = frames
            .iter()
            .map(|f| {
                let v = f["metrics"][metric].as_f64().unwrap();
                (v, f["frameNum"].as_u64().unwrap())
            })
            .collect();
        values.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let worst: Vec<_> = values[..5].iter().map(|v| v.1.to_string()).collect();
        let title = format!(
            "{metric} - pooled (mean) {} - worst frames {}",
            plot_number(mean),
            worst.join(", ")
        );
        assert!(text.contains(&title), "no panel title {title:?}");
    }
    // per panel: the series, one point per frame (blue), and the pooled line (green); the
    // axes are black polylines
    let polylines = |stroke: &str| -> Vec<usize> {
        text.match_indices("<polyline")
            .map(|(at, _)| &text[at..at + text[at..].find("/>").unwrap()])
            .filter(|p| p.contains(&format!("stroke=\"{stroke}\"")))
            .map(|p| {
                let rest = &p[p.find("points=\"").unwrap() + 8..];
                rest[..rest.find('"').unwrap()].split_whitespace().count()
            })
            .collect()
    };
    assert_eq!(polylines("#0000FF"), [10, 10, 10, 10]);
    assert_eq!(polylines("#00FF00"), [2, 2, 2, 2]);
    assert_eq!(
        text.matches("<circle").count(),
        4 * 5,
        "worst-frame markers"
    );

    run(&png);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let mut reader = png::Decoder::new(std::io::Cursor::new(&bytes))
        .read_info()
        .unwrap();
    assert_eq!(
        (reader.info().width, reader.info().height),
        (1000, 60 + 4 * 300)
    );
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let px = &buf[..info.buffer_size()];
    let white = px.chunks(3).filter(|c| c == &[255, 255, 255]).count();
    let red = px
        .chunks(3)
        .filter(|c| c[0] > 200 && c[1] < 80 && c[2] < 80)
        .count();
    let total = px.len() / 3;
    assert!(white < total * 97 / 100, "{white} of {total} pixels white");
    assert!(red > 4 * 5 * 20, "{red} red pixels (markers)");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A golden, the metrics kept of it, and their renames.
type GoldenPart<'a> = (&'a Golden, &'a [&'a str], &'a [(&'a str, &'a str)]);

/// The union of goldens (libvmaf's report of several models: one set of features, each model's
/// score under its name).
fn golden_union(parts: &[GoldenPart]) -> Golden {
    let mut out = parts[0].0.0.clone();
    let rename = |k: &str, r: &[(&str, &str)]| {
        r.iter()
            .find(|(from, _)| *from == k)
            .map_or(k.to_string(), |(_, to)| to.to_string())
    };
    for f in out["frames"].as_array_mut().unwrap() {
        f["metrics"].as_object_mut().unwrap().clear();
    }
    out["pooled_metrics"].as_object_mut().unwrap().clear();
    for (g, keep, r) in parts {
        for (i, f) in g.0["frames"].as_array().unwrap().iter().enumerate() {
            for (k, v) in f["metrics"].as_object().unwrap() {
                if keep.contains(&k.as_str()) {
                    out["frames"][i]["metrics"][rename(k, r)] = v.clone();
                }
            }
        }
        for (k, v) in g.0["pooled_metrics"].as_object().unwrap() {
            if keep.contains(&k.as_str()) {
                out["pooled_metrics"][rename(k, r)] = v.clone();
            }
        }
    }
    Golden(out)
}

/// Two `-m` (libvmaf: each model scored on one set of frames, one report with every model's
/// features and each score under its `name=`) and a `--feature`: every number `==` libvmaf
/// 3.2.0's single-model goldens of the same pair (no two-model golden exists; the features of
/// both runs are in the golden files), and libvmaf's line per model.
#[test]
fn two_models_equal_their_goldens() {
    let pair = common::CARPHONE;
    let dir = scratch("two-models");
    let report = dir.join("two.json");
    let (r, d) = (yuv(&pair, "ref"), yuv(&pair, "dis"));
    let mut args: Vec<String> = vec!["-r".into(), r, "-d".into(), d];
    args.extend(raw_args(&pair));
    args.extend(
        [
            "-m",
            "version=vmaf_v0.6.1",
            "-m",
            "version=vmaf_v0.6.1neg:name=vmaf_neg",
            "--feature",
            "psnr",
            "--backend",
            "cpu",
            "--threads",
            "2",
            "--json",
            "-o",
        ]
        .map(String::from),
    );
    args.push(report.display().to_string());
    ok(&strs(&args));
    let main = pair.golden(None);
    let neg = pair.golden(Some("vmaf_v0.6.1neg"));
    let mut keep: Vec<&str> = V061.to_vec();
    keep.extend(["psnr_y", "psnr_cb", "psnr_cr"]);
    let neg_names = neg.metric_names();
    let neg_keep: Vec<&str> = neg_names.iter().map(String::as_str).collect();
    let want = golden_union(&[
        (&main, &keep, &[]),
        (&neg, &neg_keep, &[("vmaf", "vmaf_neg")]),
    ]);
    check_report(&read_json(&report), &want, &[], None);

    // the lines on stdout without -o: one per model, in -m order, under its version
    let out = ok(&strs(&args[..args.len() - 3]));
    let line =
        |g: &Golden, label: &str| format!("{label}: {:.6}", g.pooled("vmaf", "mean").unwrap());
    assert_eq!(
        out,
        format!(
            "{}\n{}\n",
            line(&main, "vmaf_v0.6.1"),
            line(&neg, "vmaf_v0.6.1neg")
        )
    );
    // two models of one name: libvmaf's usage error
    let mut same = args[..args.len() - 3].to_vec();
    same.iter_mut().for_each(|a| {
        if a == "version=vmaf_v0.6.1neg:name=vmaf_neg" {
            *a = "version=vmaf_v0.6.1neg".into();
        }
    });
    assert!(fails(&strs(&same), 1).contains("uniquely named"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--feature cambi=enc_bitdepth=8` (libvmaf's NAME=option=value): on bbb720 made 10-bit by
/// `x << 2` (the goldens' `up10` recipe), CAMBI with an 8-bit encode depth gets the 8-bit
/// input's anti-dithering, so its values `==` libvmaf 3.2.0's `--feature cambi` golden of the
/// 8-bit pair (the goldens' README: encbd8 on up10 equals the 8-bit run in every value),
/// reported under libvmaf's suffixed name `cambi_encbd_8`; a bad option fails as libvmaf's
/// `problem loading feature extractor`.
#[test]
fn cambi_with_options_equals_libvmaf() {
    let pair = common::BBB720;
    let dir = scratch("cambi-options");
    let frames = 3;
    let up10 = |side: &str| {
        let raw = pair.raw(side);
        let mut out = Vec::with_capacity(frames * pair.frame_bytes() * 2);
        for &x in &raw[..frames * pair.frame_bytes()] {
            out.extend_from_slice(&(u16::from(x) << 2).to_le_bytes());
        }
        let p = dir.join(format!("{side}10.yuv"));
        std::fs::write(&p, out).unwrap();
        p.display().to_string()
    };
    let (r, d) = (up10("ref"), up10("dis"));
    let report = dir.join("cambi.json");
    let args = |feature: &str| -> Vec<String> {
        [
            "-r",
            &r,
            "-d",
            &d,
            "-w",
            "1280",
            "-h",
            "720",
            "-p",
            "420",
            "-b",
            "10",
            "-n",
            "--feature",
            feature,
            "--backend",
            "cpu",
            "--json",
            "-o",
            report.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    ok(&strs(&args("cambi=enc_bitdepth=8")));
    let text =
        std::fs::read_to_string(common::data_dir().join("goldens/v1/bbb720_v3.2.0_cambi.json"))
            .unwrap();
    let golden = Golden(serde_json::from_str(&text).unwrap());
    let got = read_json(&report);
    assert_eq!(got["frames"].as_array().unwrap().len(), frames);
    assert_eq!(keys(&got["pooled_metrics"]), ["cambi_encbd_8"]);
    check_report(
        &got,
        &golden,
        &[("cambi", "cambi_encbd_8")],
        Some(0..frames),
    );
    let e = fails(&strs(&args("cambi=enc_bitdepth=99")), 255);
    assert!(
        e.contains("problem loading feature extractor: cambi") && e.contains("enc_bitdepth"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Decoded files with `--verbose`: the decoder choice is said (NVIDIA's first for auto/cuda
/// where nvcodec has them, else the fallback; never for cpu), and the .mkv pair still gives
/// libvmaf's numbers whichever decoded it.
#[test]
fn decoders_said_and_mkv_equals_libvmaf() {
    gst::init().unwrap();
    let nvidia = ["nvh264dec", "nvh265dec"]
        .iter()
        .any(|n| gst::ElementFactory::find(n).is_some());
    let g = common::data_dir().join("goldens");
    let dir = scratch("decoders");
    let report = dir.join("bbb.json");
    let (r, d) = (
        g.join("bbb360p10_ref_ffv1.mkv"),
        g.join("bbb360p10_dis_x265crf35.mkv"),
    );
    for backend in ["auto", "cpu"] {
        let out = vmafgpu(&[
            "-r",
            r.to_str().unwrap(),
            "-d",
            d.to_str().unwrap(),
            "--backend",
            backend,
            "--verbose",
            "--json",
            "-o",
            report.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{backend}: {err}");
        let want = match (backend, nvidia) {
            ("cpu", _) => "decoders: GStreamer's software decoders (backend cpu",
            (_, true) => "decoders: NVIDIA first",
            (_, false) => "decoders: no NVIDIA decoder here",
        };
        assert!(err.contains(want), "{backend}: {err}");
        assert!(err.contains("timing: "), "{err}");
        check_report(
            &read_json(&report),
            &golden_subset(&common::BBB360P10.golden(None), &V061),
            &[],
            None,
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
