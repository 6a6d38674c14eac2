//! The VMAF v1 features (CAMBI, SpEED chroma, SpEED temporal) and the v1 models against libvmaf
//! 3.2.0 on synthetic content (tests/common/synth.rs): every clip and option set in `cases()`,
//! scored by libvmaf 3.2.0's plain C path and recorded in tests/data/oracle/v1_v3.2.0.json (how:
//! tests/data/oracle/V1.md). The content is regenerated here from the recorded parameters; only
//! the numbers are stored.

mod common;
#[path = "common/synth.rs"]
mod synth;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::Mismatches;
use gstvmafgpu::engine::{BackendKind, ModelSource, Scorer, ScorerConfig};
use gstvmafgpu::features::cambi::{Cambi, CambiEotf, CambiParams};
use gstvmafgpu::features::speed::{
    PrescaleMethod, SpeedChroma, SpeedChromaParams, SpeedTemporal, SpeedTemporalParams,
};
use gstvmafgpu::picture::ChromaFormat;
use serde::Deserialize;
use synth::{Kind, Spec};

/// tests/data/oracle/v1_v3.2.0.json.
#[derive(Deserialize)]
struct Oracle {
    cases: Vec<OracleCase>,
}

#[derive(Deserialize)]
struct OracleCase {
    name: String,
    width: usize,
    height: usize,
    bpc: u8,
    format: String,
    kind: String,
    seed: u64,
    frames: usize,
    /// "cambi", "speed_chroma", "speed_temporal" or "model".
    extractor: String,
    /// libvmaf's option string, `key=value` pairs joined by `:` (for a model, the whole `-m`
    /// argument).
    options: String,
    /// The metric names libvmaf printed, in its order.
    metrics: Vec<String>,
    /// Per frame, one value per entry of `metrics`.
    values: Vec<Vec<f64>>,
}

impl OracleCase {
    fn spec(&self) -> Spec {
        let s = Spec {
            width: self.width,
            height: self.height,
            bpc: self.bpc,
            format: synth::format_from_name(&self.format).expect("format"),
            kind: Kind::from_name(&self.kind).expect("kind"),
            seed: self.seed,
            frames: self.frames,
        };
        let case = Case {
            spec: s,
            extractor: extractor_from_name(&self.extractor),
            options: self.options.clone(),
        };
        assert_eq!(
            case.name(),
            self.name,
            "recorded case name disagrees with its parameters"
        );
        assert_eq!(self.values.len(), self.frames, "{}: frame count", self.name);
        for row in &self.values {
            assert_eq!(row.len(), self.metrics.len(), "{}: row length", self.name);
        }
        s
    }

    /// The options as (key, value) pairs, in their order.
    fn opts(&self) -> Vec<(&str, &str)> {
        parse_options(&self.options)
    }
}

fn parse_options(s: &str) -> Vec<(&str, &str)> {
    if s.is_empty() {
        return Vec::new();
    }
    s.split(':')
        .map(|kv| kv.split_once('=').expect("option is key=value"))
        .collect()
}

impl Oracle {
    fn load() -> Oracle {
        let path = common::data_dir().join("oracle/v1_v3.2.0.json");
        let text = std::fs::read_to_string(&path).expect("oracle file");
        // serde_json's float_roundtrip feature (Cargo.toml) makes the 17-digit numbers parse to
        // the exact f64 libvmaf printed.
        serde_json::from_str(&text).expect("oracle json")
    }

    fn of(&self, extractor: &str) -> impl Iterator<Item = &OracleCase> {
        let e = extractor.to_string();
        self.cases.iter().filter(move |c| c.extractor == e)
    }
}

fn extractor_from_name(s: &str) -> &'static str {
    match s {
        "cambi" => "cambi",
        "speed_chroma" => "speed_chroma",
        "speed_temporal" => "speed_temporal",
        "model" => "model",
        _ => panic!("unknown extractor {s}"),
    }
}

/// One recorded run of libvmaf: a clip and what was computed on it.
#[derive(Debug, Clone)]
struct Case {
    spec: Spec,
    /// "cambi", "speed_chroma", "speed_temporal" (`-n --feature NAME[=OPTIONS]`) or "model"
    /// (`-m OPTIONS`).
    extractor: &'static str,
    options: String,
}

impl Case {
    /// e.g. `cambi[full_ref=true]/banding_641x361_10b_420_s10_f3`.
    fn name(&self) -> String {
        format!("{}[{}]/{}", self.extractor, self.options, self.spec.name())
    }

    /// What selects the computation on libvmaf's command line.
    fn selection(&self) -> String {
        match (self.extractor, self.options.as_str()) {
            ("model", o) => format!("-m {o}"),
            (e, "") => format!("-n --feature {e}"),
            (e, o) => format!("-n --feature {e}={o}"),
        }
    }
}

fn spec(
    width: usize,
    height: usize,
    bpc: u8,
    format: ChromaFormat,
    kind: Kind,
    seed: u64,
    frames: usize,
) -> Spec {
    Spec {
        width,
        height,
        bpc,
        format,
        kind,
        seed,
        frames,
    }
}

fn case(extractor: &'static str, options: &str, spec: Spec) -> Case {
    Case {
        spec,
        extractor,
        options: options.to_string(),
    }
}

/// The recorded cases. Adding one means regenerating the oracle file (V1.md in its folder).
fn cases() -> Vec<Case> {
    use ChromaFormat::{Yuv420, Yuv422, Yuv444};
    use Kind::*;
    let mut v = Vec::new();

    // ---- CAMBI, default options: sizes, depths, formats, content kinds.
    for s in [
        spec(217, 145, 8, Yuv420, Banding, 1, 3),
        spec(145, 217, 10, Yuv420, Banding, 2, 3),
        spec(333, 240, 10, Yuv422, Banding, 3, 3),
        spec(641, 361, 12, Yuv444, Banding, 4, 3),
        spec(641, 361, 16, Yuv420, Banding, 5, 2),
        spec(320, 216, 8, Yuv444, Banding, 6, 3),
        spec(216, 216, 8, Yuv420, Banding, 7, 3),
        spec(500, 300, 8, Yuv420, Banding, 8, 3),
        spec(256, 216, 8, Yuv420, Flat, 20, 2),
        spec(256, 216, 10, Yuv420, Max, 21, 2),
        spec(217, 217, 12, Yuv420, MaxDiff, 22, 2),
        spec(216, 216, 8, Yuv444, MaxDiffAlt, 23, 2),
        spec(333, 240, 8, Yuv420, Checker, 24, 3),
        spec(333, 240, 16, Yuv422, Checker, 25, 3),
        spec(333, 240, 10, Yuv420, Gradient, 26, 3),
        spec(641, 361, 8, Yuv420, Gradient, 27, 3),
        spec(217, 145, 16, Yuv420, Random, 28, 2),
        spec(300, 200, 10, Yuv444, Independent, 29, 2),
        spec(1921, 1081, 8, Yuv420, Banding, 30, 2),
        spec(3841, 2161, 10, Yuv420, Banding, 31, 2),
        spec(1280, 216, 8, Yuv420, Banding, 32, 2),
        spec(216, 1000, 10, Yuv422, Banding, 39, 2),
    ] {
        v.push(case("cambi", "", s));
    }

    // ---- CAMBI option sets, mostly on one 10-bit banding clip.
    let b10 = spec(641, 361, 10, Yuv420, Banding, 10, 3);
    let b8 = spec(333, 240, 8, Yuv420, Banding, 11, 3);
    let b16 = spec(400, 250, 16, Yuv422, Banding, 12, 2);
    let b12 = spec(480, 270, 12, Yuv444, Banding, 13, 2);
    let hd = spec(1921, 1081, 10, Yuv420, Banding, 14, 2);
    let qhd = spec(2561, 1441, 8, Yuv420, Banding, 15, 2);
    let uhd = spec(3841, 2161, 10, Yuv420, Banding, 16, 2);
    // Seed 47: a ramp from ten-bit code 17 to 166, across the 0.06-nit threshold (code 78).
    let dark = spec(641, 361, 10, Yuv420, Banding, 47, 3);
    for (o, s) in [
        ("full_ref=true", b10),
        ("full_ref=true", b8),
        ("full_ref=true", b16),
        ("full_ref=true", spec(333, 240, 10, Yuv420, Gradient, 40, 2)),
        ("cambi_eotf=pq", b10),
        ("eotf=pq", b12),
        ("full_ref=true:cambi_eotf=pq", b8),
        ("window_size=15", b10),
        ("window_size=127", b10),
        ("window_size=40", b12),
        ("window_size=127", hd),
        ("topk=0.2", b10),
        ("topk=1.0", b10),
        ("topk=0.0001", b8),
        ("cambi_topk=0.05", b12),
        ("tvi_threshold=0.0001", b10),
        ("tvi_threshold=0.1", b10),
        ("tvi_threshold=1.0", b8),
        ("max_log_contrast=0", b10),
        ("max_log_contrast=1", b10),
        ("max_log_contrast=3", b10),
        ("max_log_contrast=4", b8),
        ("max_log_contrast=5", b10),
        ("max_log_contrast=5", b16),
        ("cambi_vis_lum_threshold=0.06", b10),
        ("", dark),
        ("cambi_vis_lum_threshold=0.06", dark),
        ("cambi_vis_lum_threshold=1.0", dark),
        ("cambi_vis_lum_threshold=1.0", b8),
        ("cambi_vis_lum_threshold=10", b12),
        ("cambi_max_val=0.01", b10),
        ("cambi_max_val=0", b8),
        ("cambi_high_res_speedup=1080", b10),
        // Accepted by libvmaf (range 0..2160) and treated as 0: off.
        ("cambi_high_res_speedup=720", b10),
        ("cambi_high_res_speedup=1080", hd),
        ("cambi_high_res_speedup=1440", hd),
        ("cambi_high_res_speedup=1440", qhd),
        ("cambi_high_res_speedup=2160", qhd),
        ("cambi_high_res_speedup=2160", uhd),
        ("cambi_high_res_speedup=1080", uhd),
        ("enc_width=320:enc_height=180", b10),
        ("enc_width=480:enc_height=270", b10),
        ("enc_width=216:enc_height=150", b8),
        ("enc_width=400", b10),
        ("enc_width=7680:enc_height=4320", b8),
        ("enc_width=1280:enc_height=720", hd),
        ("enc_bitdepth=8", b10),
        ("enc_bitdepth=8", b16),
        ("enc_bitdepth=8", b12),
        ("enc_bitdepth=10", b8),
        ("enc_bitdepth=6", b8),
        ("full_ref=true:enc_width=480:enc_height=270", b10),
        (
            "full_ref=true:src_width=560:src_height=315:enc_width=480:enc_height=270",
            b10,
        ),
        ("full_ref=true:enc_bitdepth=8", b10),
        (
            "cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:cambi_max_val=17",
            hd,
        ),
        (
            "cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:cambi_max_val=17:enc_bitdepth=8",
            hd,
        ),
        (
            "cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:cambi_max_val=17",
            dark,
        ),
        (
            "window_size=31:topk=0.3:tvi_threshold=0.01:max_log_contrast=3:cambi_eotf=pq",
            b16,
        ),
    ] {
        v.push(case("cambi", o, s));
    }

    // ---- SpEED chroma, default options: sizes (chroma operating size from 5x5 up), depths,
    // formats, content kinds.
    for s in [
        spec(160, 160, 8, Yuv420, Random, 50, 3),
        spec(80, 80, 8, Yuv444, Random, 51, 3),
        spec(161, 161, 10, Yuv444, Random, 52, 3),
        spec(320, 180, 8, Yuv420, Random, 53, 3),
        spec(333, 240, 10, Yuv422, Random, 54, 3),
        spec(641, 361, 12, Yuv420, Random, 55, 3),
        spec(641, 361, 16, Yuv420, Random, 56, 2),
        spec(352, 288, 10, Yuv444, Checker, 57, 3),
        spec(400, 400, 8, Yuv420, Gradient, 58, 3),
        spec(641, 361, 10, Yuv444, Banding, 59, 3),
        spec(240, 240, 8, Yuv444, Flat, 60, 2),
        spec(160, 160, 16, Yuv444, Max, 61, 2),
        spec(320, 160, 12, Yuv422, MaxDiff, 62, 2),
        spec(333, 333, 8, Yuv444, Independent, 63, 2),
        spec(161, 81, 10, Yuv444, MaxDiffAlt, 64, 3),
        spec(1280, 720, 8, Yuv420, Random, 65, 2),
    ] {
        v.push(case("speed_chroma", "", s));
    }

    // ---- SpEED chroma options.
    let c444 = spec(641, 361, 8, Yuv444, Random, 70, 2);
    let c422 = spec(641, 361, 10, Yuv422, Random, 71, 2);
    let c420 = spec(1280, 720, 12, Yuv420, Random, 72, 2);
    let methods = ["nearest", "bilinear", "bicubic", "lanczos4"];
    for (i, m) in methods.iter().enumerate() {
        for (j, ps) in ["0.5", "0.6", "0.75"].iter().enumerate() {
            let s = [c444, c422, c420][(i + j) % 3];
            v.push(case(
                "speed_chroma",
                &format!("speed_prescale={ps}:speed_prescale_method={m}"),
                s,
            ));
        }
    }
    let ck = spec(352, 288, 10, Yuv444, Gradient, 73, 2);
    let gr = spec(400, 300, 16, Yuv444, Gradient, 74, 2);
    for (o, s) in [
        // 481x271 4:4:4 at 0.5: operating size 15x5, singular.
        (
            "speed_prescale=0.5",
            spec(481, 271, 8, Yuv444, Random, 76, 2),
        ),
        ("speed_prescale=1.25:speed_prescale_method=bilinear", ck),
        (
            "speed_prescale=2.0:speed_prescale_method=nearest",
            spec(161, 97, 8, Yuv444, Random, 75, 2),
        ),
        ("speed_weight_var_mode=0", c444),
        ("speed_weight_var_mode=1", c444),
        ("speed_weight_var_mode=2", c444),
        ("speed_weight_var_mode=3", c444),
        ("speed_weight_var_mode=4", ck),
        ("speed_weight_var_mode=5", ck),
        ("speed_weight_var_mode=6", gr),
        ("speed_sigma_nn=0.1", c444),
        ("speed_sigma_nn=2.0", c444),
        ("speed_sigma_nn=0.5", gr),
        ("speed_nn_floor=0.1", c444),
        ("speed_nn_floor=1.0", ck),
        ("speed_nn_floor=0.5", gr),
        ("speed_max_val=0", c444),
        ("speed_max_val=1", c444),
        ("speed_kernelscale=0.5", c444),
        ("speed_kernelscale=1.5", c444),
        ("speed_kernelscale=2.0", ck),
        ("speed_kernelscale=0.666667", c444),
        ("speed_kernelscale=2.4", gr),
        ("speed_kernelscale=3.711340", c444),
        ("speed_kernelscale=3.0", c422),
        ("speed_kernelscale=0.444444", c444),
        ("speed_kernelscale=1.06667", ck),
        // The vmaf_v1.0.16 models' options (3d0h, then 3d0h_2160 and 5d0h).
        (
            "speed_kernelscale=1.0:speed_nn_floor=0.1:speed_sigma_nn=0.19:speed_weight_var_mode=5:speed_max_val=45",
            c422,
        ),
        (
            "speed_kernelscale=1.0:speed_nn_floor=0.1:speed_sigma_nn=0.19:speed_weight_var_mode=5:speed_max_val=45:speed_prescale=0.5:speed_prescale_method=bilinear",
            c420,
        ),
        (
            "speed_kernelscale=1.0:speed_nn_floor=0.1:speed_sigma_nn=0.19:speed_weight_var_mode=5:speed_max_val=45:speed_prescale=0.6:speed_prescale_method=bilinear",
            c444,
        ),
    ] {
        v.push(case("speed_chroma", o, s));
    }

    // ---- SpEED temporal.
    for s in [
        spec(161, 97, 8, Yuv420, Random, 80, 3),
        spec(333, 240, 10, Yuv420, Random, 81, 4),
        spec(352, 288, 12, Yuv422, Checker, 82, 3),
        spec(641, 361, 16, Yuv420, Gradient, 83, 3),
        spec(400, 300, 8, Yuv444, Banding, 84, 3),
        spec(320, 240, 8, Yuv420, Flat, 85, 3),
        spec(240, 160, 10, Yuv420, MaxDiffAlt, 86, 3),
        spec(240, 160, 12, Yuv420, Max, 87, 2),
        spec(80, 80, 8, Yuv420, Random, 88, 3),
    ] {
        v.push(case("speed_temporal", "", s));
    }
    let t10 = spec(641, 361, 10, Yuv420, Random, 90, 3);
    let t8 = spec(333, 240, 8, Yuv420, Checker, 91, 3);
    for (o, s) in [
        ("speed_use_ref_diff=true", t10),
        ("speed_use_ref_diff=true", t8),
        (
            "speed_use_ref_diff=true",
            spec(400, 300, 8, Yuv444, Banding, 92, 3),
        ),
        ("speed_prescale=0.5:speed_prescale_method=nearest", t10),
        ("speed_prescale=0.5:speed_prescale_method=bilinear", t10),
        ("speed_prescale=0.5:speed_prescale_method=bicubic", t10),
        ("speed_prescale=0.5:speed_prescale_method=lanczos4", t10),
        ("speed_prescale=0.75:speed_prescale_method=bilinear", t8),
        ("speed_prescale=0.6:speed_prescale_method=bicubic", t8),
        (
            "speed_prescale=0.6:speed_prescale_method=lanczos4:speed_use_ref_diff=true",
            t10,
        ),
        ("speed_sigma_nn=0.19:speed_nn_floor=0.1", t10),
        ("speed_kernelscale=2.0", t10),
        ("speed_kernelscale=0.5", t10),
        ("speed_max_val=1", t10),
    ] {
        v.push(case("speed_temporal", o, s));
    }

    // ---- The v1 models (libvmaf built-ins), whole pipeline.
    for (m, s) in [
        (
            "version=vmaf_v1.0.16_3d0h",
            spec(641, 361, 10, Yuv420, Banding, 100, 3),
        ),
        (
            "version=vmaf_v1.0.16_3d0h",
            spec(333, 240, 8, Yuv420, Random, 101, 3),
        ),
        (
            "version=vmaf_v1.0.16_3d0h",
            spec(216, 216, 8, Yuv420, Checker, 102, 3),
        ),
        (
            "version=vmaf_v1.0.16_3d0h",
            spec(481, 271, 10, Yuv444, Random, 103, 3),
        ),
        (
            "version=vmaf_v1.0.16_3d0h:cambi.enc_bitdepth=8",
            spec(641, 361, 10, Yuv420, Banding, 100, 3),
        ),
        (
            "version=vmaf_v1.0.16_hfr_5d0h",
            spec(480, 270, 10, Yuv420, Banding, 104, 4),
        ),
        (
            "version=vmaf_v1.0.16_hfr_3d0h",
            spec(333, 240, 10, Yuv422, Random, 110, 4),
        ),
        (
            "version=vmaf_v1.0.16_hfr_5d0h",
            spec(1280, 720, 8, Yuv420, Random, 105, 4),
        ),
        (
            "version=vmaf_v1.0.16_3d0h_2160",
            spec(641, 361, 10, Yuv444, Random, 106, 3),
        ),
        (
            "version=vmaf_v1.0.16_3d0h_2160",
            spec(641, 361, 8, Yuv420, Gradient, 107, 3),
        ),
        (
            "version=vmaf_v1.0.16_1d5h_2160",
            spec(1921, 1081, 8, Yuv420, Banding, 108, 2),
        ),
        (
            "version=vmaf_v1.0.16_1d5h_2160",
            spec(400, 300, 12, Yuv422, Random, 109, 3),
        ),
    ] {
        v.push(case("model", m, s));
    }
    v
}

/// Writes the raw YUV files of every clip (once each) and a manifest of the libvmaf runs into
/// the folder named by `VMAF_SYNTH_OUT`: the input for scoring them with libvmaf (V1.md).
#[test]
#[ignore = "writes oracle inputs; run by hand when regenerating tests/data/oracle/v1_v3.2.0.json"]
fn write_v1_inputs() {
    let dir =
        PathBuf::from(std::env::var("VMAF_SYNTH_OUT").expect("set VMAF_SYNTH_OUT to a folder"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut written = BTreeSet::new();
    let mut manifest = String::new();
    for c in cases() {
        let s = c.spec;
        if written.insert(s.name()) {
            s.write_yuv(&dir, synth::Layout::LibvmafCli).unwrap();
        }
        // Case name, clip name, then the arguments of `vmaf` that score it (V1.md adds
        // `--cpumask 255 --threads 2 --json -q -o <out>`).
        manifest += &format!(
            "{}\t{n}\t-r {n}_ref.yuv -d {n}_dis.yuv -w {} -h {} -p {} -b {} {}\n",
            c.name(),
            s.width,
            s.height,
            synth::format_name(s.format),
            s.bpc,
            c.selection(),
            n = s.name(),
        );
    }
    std::fs::write(dir.join("v1_cases.tsv"), manifest).unwrap();
}

#[test]
fn recorded_cases_are_the_listed_cases() {
    let oracle = Oracle::load();
    let recorded: Vec<String> = oracle
        .cases
        .iter()
        .map(|c| {
            c.spec();
            c.name.clone()
        })
        .collect();
    let listed: Vec<String> = cases().iter().map(Case::name).collect();
    assert_eq!(
        recorded, listed,
        "cases() changed: regenerate tests/data/oracle/v1_v3.2.0.json (see V1.md)"
    );
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), listed.len(), "case names must be unique");
}

/// [`Mismatches::finish`], but a run where every case failed before comparing anything shows
/// why.
fn finish(mm: Mismatches, checked: usize) {
    if checked == 0 && !mm.0.is_empty() {
        panic!("nothing was compared:\n{}", mm.0.join("\n"));
    }
    mm.finish(checked);
}

fn num(case: &OracleCase, k: &str, v: &str) -> f64 {
    v.parse()
        .unwrap_or_else(|_| panic!("{}: {k}={v} is not a number", case.name))
}

fn int(case: &OracleCase, k: &str, v: &str) -> i32 {
    v.parse()
        .unwrap_or_else(|_| panic!("{}: {k}={v} is not an integer", case.name))
}

fn boolean(case: &OracleCase, k: &str, v: &str) -> bool {
    match v {
        "true" => true,
        "false" => false,
        _ => panic!("{}: {k}={v} is not a boolean", case.name),
    }
}

/// libvmaf's cambi options (cambi.c `options[]`) as [`CambiParams`].
fn cambi_params(case: &OracleCase) -> CambiParams {
    let mut p = CambiParams::default();
    let mut topk = None;
    let mut cambi_topk = None;
    let mut eotf = None;
    let mut cambi_eotf = None;
    for (k, v) in case.opts() {
        let u = |v: &str| u32::try_from(int(case, k, v)).expect("non-negative");
        match k {
            "cambi_max_val" => p.max_val = num(case, k, v),
            "enc_width" => p.enc_width = u(v),
            "enc_height" => p.enc_height = u(v),
            "enc_bitdepth" => p.enc_bitdepth = u(v),
            "src_width" => p.src_width = u(v),
            "src_height" => p.src_height = u(v),
            "window_size" => p.window_size = int(case, k, v),
            "topk" => topk = Some(num(case, k, v)),
            "cambi_topk" => cambi_topk = Some(num(case, k, v)),
            "tvi_threshold" => p.tvi_threshold = num(case, k, v),
            "cambi_vis_lum_threshold" => p.vis_lum_threshold = num(case, k, v),
            "max_log_contrast" => p.max_log_contrast = int(case, k, v),
            "full_ref" => p.full_ref = boolean(case, k, v),
            "eotf" => eotf = Some(v),
            "cambi_eotf" => cambi_eotf = Some(v),
            "cambi_high_res_speedup" => p.high_res_speedup = int(case, k, v),
            _ => panic!("{}: cambi option {k} not handled here", case.name),
        }
    }
    // cambi.c: `topk` wins over `cambi_topk` unless it is the default 0.6; `cambi_eotf` wins
    // over `eotf` unless it is the default "bt1886".
    let default_topk = CambiParams::default().topk;
    p.topk = match (topk, cambi_topk) {
        (Some(t), _) if t != default_topk => t,
        (_, Some(t)) => t,
        (Some(t), None) => t,
        (None, None) => p.topk,
    };
    let name = match (eotf, cambi_eotf) {
        (_, Some(e)) if e != "bt1886" => e,
        (Some(e), _) => e,
        (None, Some(e)) => e,
        (None, None) => "bt1886",
    };
    p.eotf = match name {
        "bt1886" => CambiEotf::Bt1886,
        "pq" => CambiEotf::Pq,
        _ => panic!("{}: eotf {name}", case.name),
    };
    p
}

/// The role of each recorded cambi metric: 0 = the score, 1 = `cambi_source`, 2 =
/// `cambi_full_reference`.
fn cambi_role(name: &str) -> usize {
    match name {
        "cambi_source" => 1,
        "cambi_full_reference" => 2,
        n if n.starts_with("cambi") => 0,
        n => panic!("unexpected cambi metric {n}"),
    }
}

/// CAMBI (every option set, and `cambi_source` / `cambi_full_reference` with `full_ref`) of
/// every frame of every cambi case, on the distorted (and reference) luma exactly as libvmaf
/// read it.
#[test]
fn cambi_matches_libvmaf_v320() {
    let oracle = Oracle::load();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in oracle.of("cambi") {
        let spec = case.spec();
        let p = cambi_params(case);
        let roles: Vec<usize> = case.metrics.iter().map(|m| cambi_role(m)).collect();
        let cambi = match Cambi::new(&p, spec.width, spec.height, spec.bpc) {
            Ok(c) => c,
            Err(e) => {
                mm.0.push(format!("{}: Cambi::new failed: {e}", case.name));
                continue;
            }
        };
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let got = match cambi.compute(&d.luma(), p.full_ref.then(|| r.luma()).as_ref()) {
                Ok(s) => s,
                Err(e) => {
                    mm.0.push(format!("{} frame {t}: compute failed: {e}", case.name));
                    continue;
                }
            };
            for (c, (name, &role)) in case.metrics.iter().zip(&roles).enumerate() {
                let want = case.values[t][c];
                let g = match (role, got.full_ref) {
                    (0, _) => Some(got.cambi),
                    (1, Some((src, _))) => Some(src),
                    (2, Some((_, full))) => Some(full),
                    _ => None,
                };
                match g {
                    Some(g) => mm.check(|| format!("{} frame {t} {name}", case.name), g, want),
                    None => mm.0.push(format!(
                        "{} frame {t} {name}: not reported (want {want:.17e})",
                        case.name
                    )),
                }
                checked += 1;
            }
        }
    }
    finish(mm, checked);
}

fn prescale_method(case: &OracleCase, v: &str) -> PrescaleMethod {
    PrescaleMethod::from_name(v)
        .unwrap_or_else(|| panic!("{}: speed_prescale_method {v}", case.name))
}

/// libvmaf's speed_chroma options (speed.c `options_chroma[]`) as [`SpeedChromaParams`].
fn speed_chroma_params(case: &OracleCase) -> SpeedChromaParams {
    let mut p = SpeedChromaParams::default();
    for (k, v) in case.opts() {
        match k {
            "speed_kernelscale" => p.kernelscale = num(case, k, v),
            "speed_prescale" => p.prescale = num(case, k, v),
            "speed_prescale_method" => p.prescale_method = prescale_method(case, v),
            "speed_sigma_nn" => p.sigma_nn = num(case, k, v),
            "speed_nn_floor" => p.nn_floor = num(case, k, v),
            "speed_max_val" => p.max_val = num(case, k, v),
            "speed_weight_var_mode" => p.weight_var_mode = int(case, k, v),
            _ => panic!("{}: speed_chroma option {k} not handled here", case.name),
        }
    }
    p
}

/// libvmaf's speed_temporal options (speed.c `options[]`) as [`SpeedTemporalParams`].
fn speed_temporal_params(case: &OracleCase) -> SpeedTemporalParams {
    let mut p = SpeedTemporalParams::default();
    for (k, v) in case.opts() {
        match k {
            "speed_kernelscale" => p.kernelscale = num(case, k, v),
            "speed_prescale" => p.prescale = num(case, k, v),
            "speed_prescale_method" => p.prescale_method = prescale_method(case, v),
            "speed_sigma_nn" => p.sigma_nn = num(case, k, v),
            "speed_nn_floor" => p.nn_floor = num(case, k, v),
            "speed_max_val" => p.max_val = num(case, k, v),
            "speed_use_ref_diff" => p.use_ref_diff = boolean(case, k, v),
            _ => panic!("{}: speed_temporal option {k} not handled here", case.name),
        }
    }
    p
}

/// speed_chroma_u, _v and _uv of every frame of every speed_chroma case, on the chroma planes
/// exactly as libvmaf read them (`w >> 1` / `h >> 1`, see [`synth::Layout::LibvmafCli`]).
#[test]
fn speed_chroma_matches_libvmaf_v320() {
    let oracle = Oracle::load();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in oracle.of("speed_chroma") {
        let spec = case.spec();
        let p = speed_chroma_params(case);
        let (cw, ch) = spec
            .format
            .libvmaf_chroma_size(spec.width, spec.height)
            .expect("chroma");
        let sc = match SpeedChroma::new(&p, cw, ch, spec.bpc) {
            Ok(s) => s,
            Err(e) => {
                mm.0.push(format!("{}: SpeedChroma::new failed: {e}", case.name));
                continue;
            }
        };
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let (r, d) = (r.chroma_rounded_down(), d.chroma_rounded_down());
            let got = match sc.compute(
                &r.planes[1].view(),
                &r.planes[2].view(),
                &d.planes[1].view(),
                &d.planes[2].view(),
            ) {
                Ok(s) => s,
                Err(e) => {
                    mm.0.push(format!("{} frame {t}: compute failed: {e}", case.name));
                    continue;
                }
            };
            for (c, name) in case.metrics.iter().enumerate() {
                let g = if name.starts_with("speed_chroma_uv") {
                    got.uv
                } else if name.starts_with("speed_chroma_u") {
                    got.u
                } else if name.starts_with("speed_chroma_v") {
                    got.v
                } else {
                    panic!("unexpected speed_chroma metric {name}")
                };
                mm.check(
                    || format!("{} frame {t} {name}", case.name),
                    g,
                    case.values[t][c],
                );
                checked += 1;
            }
        }
    }
    finish(mm, checked);
}

/// speed_temporal of every frame of every speed_temporal case (frame 0 included: libvmaf
/// reports 0 there).
#[test]
fn speed_temporal_matches_libvmaf_v320() {
    let oracle = Oracle::load();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in oracle.of("speed_temporal") {
        let spec = case.spec();
        let p = speed_temporal_params(case);
        assert_eq!(case.metrics.len(), 1, "{}: one metric", case.name);
        let name = &case.metrics[0];
        assert!(name.starts_with("speed_temporal"), "{}: {name}", case.name);
        let st = match SpeedTemporal::new(&p, spec.width, spec.height, spec.bpc) {
            Ok(s) => s,
            Err(e) => {
                mm.0.push(format!("{}: SpeedTemporal::new failed: {e}", case.name));
                continue;
            }
        };
        let mut prev: Option<(synth::Frame, synth::Frame)> = None;
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let pv = prev.as_ref().map(|(pr, pd)| (pr.luma(), pd.luma()));
            match st.compute(pv.as_ref().map(|(a, b)| (a, b)), &r.luma(), &d.luma()) {
                Ok(g) => mm.check(
                    || format!("{} frame {t} {name}", case.name),
                    g,
                    case.values[t][0],
                ),
                Err(e) => {
                    mm.0.push(format!("{} frame {t}: compute failed: {e}", case.name))
                }
            }
            checked += 1;
            prev = Some((r, d));
        }
    }
    finish(mm, checked);
}

/// The model and its parameter overrides of a "model" case: `version=NAME[:key=value...]`.
fn model_of(case: &OracleCase) -> (String, Vec<(&str, &str)>) {
    let mut opts = case.opts().into_iter();
    let (k, name) = opts.next().expect("version=");
    assert_eq!(k, "version", "{}", case.name);
    (name.to_string(), opts.collect())
}

/// The v1 models through the whole engine (CPU backend, two worker threads), fed whole frames
/// (luma and chroma, the chroma rounded up as GStreamer lays it out): every metric libvmaf
/// printed, VMAF included, of every frame; model parameters (`cambi.enc_bitdepth=8`, libvmaf's
/// `vmaf_model_feature_overload`) through `ScorerConfig::model_params`.
#[test]
fn v1_models_match_libvmaf_v320() {
    let oracle = Oracle::load();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for case in oracle.of("model") {
        let spec = case.spec();
        let (model, overrides) = model_of(case);
        let Some(config) = scorer_config(&model, &overrides) else {
            mm.0.push(format!(
                "{}: no API for the model parameters {overrides:?}",
                case.name
            ));
            continue;
        };
        let mut scorer = match Scorer::new(config) {
            Ok(s) => s,
            Err(e) => {
                mm.0.push(format!("{}: Scorer::new failed: {e}", case.name));
                continue;
            }
        };
        let mut out = Vec::new();
        let mut failed = false;
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let (rb, db) = (r.to_bytes(), d.to_bytes());
            let rp = synth::picture(&rb, spec.width, spec.height, spec.bpc, spec.format);
            let dp = synth::picture(&db, spec.width, spec.height, spec.bpc, spec.format);
            match scorer.push(&rp, &dp) {
                Ok(f) => out.extend(f),
                Err(e) => {
                    mm.0.push(format!("{} frame {t}: push failed: {e}", case.name));
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            continue;
        }
        match scorer.finish() {
            Ok((rest, _)) => out.extend(rest),
            Err(e) => {
                mm.0.push(format!("{}: finish failed: {e}", case.name));
                continue;
            }
        }
        let indices: Vec<u64> = out.iter().map(|f| f.index).collect();
        assert_eq!(
            indices,
            (0..spec.frames as u64).collect::<Vec<_>>(),
            "{}: frame order",
            case.name
        );
        for f in &out {
            let t = f.index as usize;
            for (c, name) in case.metrics.iter().enumerate() {
                let want = case.values[t][c];
                match f.get(name) {
                    Some(got) => mm.check(|| format!("{} frame {t} {name}", case.name), got, want),
                    None => mm.0.push(format!(
                        "{} frame {t}: the engine does not report {name}",
                        case.name
                    )),
                }
                checked += 1;
            }
        }
    }
    finish(mm, checked);
}

/// The engine configuration of a model case (`None` if its parameters do not parse).
fn scorer_config(model: &str, overrides: &[(&str, &str)]) -> Option<ScorerConfig> {
    let text: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let model_params = gstvmafgpu::model::FeatureOverload::parse_list(&text.join(":")).ok()?;
    Some(ScorerConfig {
        model: ModelSource::Builtin(model.to_string()),
        backend: BackendKind::Cpu,
        threads: 2,
        model_params,
        ..Default::default()
    })
}
