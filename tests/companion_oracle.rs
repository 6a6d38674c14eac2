//! The companion metrics against libvmaf 3.2.0 on synthetic content (tests/common/synth.rs):
//! 4:2:0, 4:2:2 and 4:4:4 at 8, 10, 12 and 16 bits, small and odd sizes, flat, maximal and
//! random content, and sizes that exercise SSIM's automatic down-scaling. The numbers are
//! recorded in tests/data/oracle/companion_v3.2.0.json (how: tests/data/oracle/COMPANION.md);
//! the content is regenerated here and every value is compared with `==` (infinities included).

mod common;
#[path = "common/synth.rs"]
mod synth;

use std::path::PathBuf;

use gstvmafgpu::Error;
use gstvmafgpu::features::{ciede, ms_ssim, psnr, psnr_hvs, ssim};
use gstvmafgpu::picture::{ChromaFormat, Plane};
use synth::{Kind, Spec};

const ORACLE: &str = "oracle/companion_v3.2.0.json";

/// Every metric libvmaf can report for the case. `float_ms_ssim` only where 5 pyramid levels fit
/// (libvmaf's tool otherwise stops the whole run), `psnr_hvs*` only up to 12 bits (libvmaf refuses
/// the feature above). `ciede2000` is recorded but not compared for 4:2:2 and odd sizes, where
/// libvmaf's ciede.c reads outside the chroma rows (see src/features/ciede.rs).
fn metrics(s: &Spec) -> Vec<&'static str> {
    let mut m = vec!["psnr_y", "psnr_cb", "psnr_cr", "float_ssim", "ciede2000"];
    if s.bpc <= 12 {
        m.extend(["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"]);
    }
    if ms_ssim::check_size(s.width, s.height).is_ok() {
        m.push("float_ms_ssim");
    }
    m
}

fn ciede_defined(s: &Spec) -> bool {
    s.format != ChromaFormat::Yuv422 && s.width.is_multiple_of(2) && s.height.is_multiple_of(2)
}

/// The recorded cases. Adding one means regenerating the oracle file (COMPANION.md).
fn cases() -> Vec<Spec> {
    use ChromaFormat::{Yuv420, Yuv422, Yuv444};
    let mut v = Vec::new();
    let mut seed = 500;
    let mut add = |v: &mut Vec<Spec>, width, height, bpc, format, kind, frames| {
        seed += 1;
        v.push(Spec {
            width,
            height,
            bpc,
            format,
            kind,
            seed,
            frames,
        });
    };
    // Small frames, every kind, format and depth.
    for (w, h) in [(48, 40), (33, 35)] {
        for format in [Yuv420, Yuv422, Yuv444] {
            for bpc in [8u8, 10, 12, 16] {
                for kind in Kind::ALL {
                    add(&mut v, w, h, bpc, format, kind, 2);
                }
            }
        }
    }
    // MS-SSIM sizes: the smallest accepted frame and an odd one.
    for (w, h) in [(176, 176), (203, 181)] {
        for format in [Yuv420, Yuv422, Yuv444] {
            for bpc in [8u8, 10, 12, 16] {
                for kind in [Kind::Random, Kind::Checker, Kind::Gradient, Kind::Max] {
                    add(&mut v, w, h, bpc, format, kind, 2);
                }
            }
        }
    }
    // SSIM's automatic scale 2 and 3 (and an odd size with in-place decimation), scale 4 at 1080p.
    for (w, h) in [(512, 384), (771, 641)] {
        for (format, bpc) in [(Yuv420, 8u8), (Yuv444, 10), (Yuv422, 12)] {
            for kind in [Kind::Random, Kind::Gradient, Kind::Checker] {
                add(&mut v, w, h, bpc, format, kind, 2);
            }
        }
    }
    add(&mut v, 1920, 1080, 8, Yuv420, Kind::Gradient, 1);
    add(&mut v, 1920, 1080, 10, Yuv420, Kind::Checker, 1);
    v
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    metrics: Vec<String>,
    /// values[frame][column]: a number, or "inf" / "-inf" / "nan" / "-nan" as libvmaf printed it.
    values: Vec<Vec<serde_json::Value>>,
}

fn value(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::String(s) => match s.as_str() {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            // printf's "-nan" is a NaN with the sign bit set (x86's default NaN).
            "nan" => f64::NAN,
            "-nan" => -f64::NAN,
            _ => panic!("bad value {s}"),
        },
        _ => v.as_f64().expect("number"),
    }
}

fn load() -> Vec<Case> {
    let path = common::data_dir().join(ORACLE);
    let text = std::fs::read_to_string(&path).expect("oracle file");
    serde_json::from_str(&text).expect("oracle json")
}

/// The planes libvmaf's tool scores: chroma `w >> 1` (and `h >> 1` for 4:2:0), rounded down.
fn cli_frame(f: synth::Frame) -> synth::Frame {
    f.chroma_rounded_down()
}

fn compute(s: &Spec, r: &[Plane<'_>], d: &[Plane<'_>], m: &str) -> f64 {
    match m {
        "psnr_y" => psnr::psnr(r, d).unwrap().y,
        "psnr_cb" => psnr::psnr(r, d).unwrap().cb.unwrap(),
        "psnr_cr" => psnr::psnr(r, d).unwrap().cr.unwrap(),
        "float_ssim" => ssim::ssim(r[0], d[0]).unwrap().ssim,
        "float_ms_ssim" => ms_ssim::ms_ssim(r[0], d[0]).unwrap().ms_ssim,
        "ciede2000" => ciede::ciede(r, d).unwrap(),
        "psnr_hvs_y" => psnr_hvs::psnr_hvs(r, d).unwrap().y,
        "psnr_hvs_cb" => psnr_hvs::psnr_hvs(r, d).unwrap().cb,
        "psnr_hvs_cr" => psnr_hvs::psnr_hvs(r, d).unwrap().cr,
        "psnr_hvs" => psnr_hvs::psnr_hvs(r, d).unwrap().psnr_hvs,
        _ => panic!("{}: unknown metric {m}", s.name()),
    }
}

#[test]
fn recorded_cases_are_the_listed_cases() {
    let recorded: Vec<String> = load().into_iter().map(|c| c.name).collect();
    let listed: Vec<String> = cases().iter().map(Spec::name).collect();
    assert_eq!(
        recorded, listed,
        "cases() changed: regenerate the oracle (tests/data/oracle/COMPANION.md)"
    );
}

/// Every recorded value of every case, compared exactly.
#[test]
fn companion_metrics_match_libvmaf_v320() {
    let oracle = load();
    let specs = cases();
    let mut mm = common::Mismatches::default();
    let mut checked = 0;
    for (case, s) in oracle.iter().zip(&specs) {
        assert_eq!(case.name, s.name());
        assert_eq!(case.metrics, metrics(s), "{}: recorded metrics", case.name);
        assert_eq!(case.values.len(), s.frames, "{}: frames", case.name);
        for (t, row) in case.values.iter().enumerate() {
            let (rf, df) = s.frame(t);
            let (rf, df) = (cli_frame(rf), cli_frame(df));
            let r: Vec<Plane<'_>> = rf.planes.iter().map(|p| p.view()).collect();
            let d: Vec<Plane<'_>> = df.planes.iter().map(|p| p.view()).collect();
            for (m, v) in case.metrics.iter().zip(row) {
                if m == "ciede2000" && !ciede_defined(s) {
                    continue;
                }
                let want = value(v);
                let got = compute(s, &r, &d, m);
                checked += 1;
                // NaN (libvmaf's MS-SSIM of anti-correlated content) must be NaN with the same
                // sign; anything else must be equal.
                let same = if want.is_nan() {
                    got.is_nan() && got.is_sign_negative() == want.is_sign_negative()
                } else {
                    got == want
                };
                if !same {
                    mm.0.push(format!(
                        "{} frame {t} {m}: got {got:.17e}, want {want:.17e}",
                        case.name
                    ));
                }
            }
        }
    }
    mm.finish(checked);
}

/// Flat identical frames (every sample at the maximum on both sides): libvmaf's cap values, and
/// ours. PSNR is capped at 6 * bpc + 12 dB; SSIM and MS-SSIM are 1; CIEDE2000 and PSNR-HVS see
/// zero error and report +inf (CIEDE2000 only where libvmaf reads defined chroma, see
/// `metrics()`). Below 176x176 MS-SSIM is refused.
#[test]
fn flat_identical_frames_give_libvmafs_cap_values() {
    let oracle = load();
    let mut seen = 0;
    for (case, s) in oracle.iter().zip(cases()) {
        if s.kind != Kind::Max {
            continue;
        }
        let (rf, _) = s.frame(0);
        let rf = cli_frame(rf);
        let r: Vec<Plane<'_>> = rf.planes.iter().map(|p| p.view()).collect();
        for (m, v) in case.metrics.iter().zip(&case.values[0]) {
            let cap = match m.as_str() {
                "psnr_y" | "psnr_cb" | "psnr_cr" => psnr::psnr_max(s.bpc),
                "float_ssim" | "float_ms_ssim" => 1.0,
                "ciede2000" if !ciede_defined(&s) => continue,
                _ => f64::INFINITY,
            };
            assert_eq!(value(v), cap, "libvmaf: {} {m}", case.name);
            assert_eq!(compute(&s, &r, &r, m), cap, "ours: {} {m}", case.name);
            seen += 1;
        }
        if ms_ssim::check_size(s.width, s.height).is_err() {
            assert!(matches!(
                ms_ssim::ms_ssim(r[0], r[0]),
                Err(Error::Unsupported { .. })
            ));
        }
    }
    assert!(seen > 0);
}

/// A view of `p`'s geometry over a padded copy made by `synth::with_stride`.
fn strided<'a>((data, stride): &'a (Vec<u16>, usize), p: &Plane<'_>) -> Plane<'a> {
    Plane {
        data: data.as_slice(),
        width: p.width,
        height: p.height,
        stride: *stride,
        bpc: p.bpc,
    }
}

/// Every metric, on every chroma format (including 4:0:0) and every depth from 8 to 16 bits (also
/// those libvmaf's tool cannot read), with chroma rounded up and down on odd sizes: a value or a
/// typed refusal, never a panic; and the same value bit for bit when the planes have padded strides
/// (padding filled with out-of-range samples).
#[test]
fn every_format_and_depth_is_scored_or_refused() {
    use ChromaFormat::{Gray, Yuv420, Yuv422, Yuv444};
    let all = [
        "psnr_y",
        "psnr_cb",
        "psnr_cr",
        "float_ssim",
        "float_ms_ssim",
        "ciede2000",
        "psnr_hvs_y",
        "psnr_hvs_cb",
        "psnr_hvs_cr",
        "psnr_hvs",
    ];
    let try_metric = |r: &[Plane<'_>], d: &[Plane<'_>], m: &str| -> Result<f64, Error> {
        Ok(match m {
            "psnr_y" => psnr::psnr(r, d)?.y,
            "psnr_cb" => psnr::psnr(r, d)?.cb.unwrap_or(-1.0),
            "psnr_cr" => psnr::psnr(r, d)?.cr.unwrap_or(-1.0),
            "float_ssim" => ssim::ssim(r[0], d[0])?.ssim,
            "float_ms_ssim" => ms_ssim::ms_ssim(r[0], d[0])?.ms_ssim,
            "ciede2000" => ciede::ciede(r, d)?,
            "psnr_hvs_y" => psnr_hvs::psnr_hvs(r, d)?.y,
            "psnr_hvs_cb" => psnr_hvs::psnr_hvs(r, d)?.cb,
            "psnr_hvs_cr" => psnr_hvs::psnr_hvs(r, d)?.cr,
            _ => psnr_hvs::psnr_hvs(r, d)?.psnr_hvs,
        })
    };
    let mut scored = 0;
    for (w, h) in [(33, 35), (48, 40), (177, 176)] {
        for format in [Gray, Yuv420, Yuv422, Yuv444] {
            for bpc in 8..=16u8 {
                for kind in [Kind::Random, Kind::MaxDiff] {
                    let s = Spec {
                        width: w,
                        height: h,
                        bpc,
                        format,
                        kind,
                        seed: 77,
                        frames: 1,
                    };
                    let (rf, df) = s.frame(0);
                    for (rf, df) in [
                        (rf.clone(), df.clone()),
                        (rf.chroma_rounded_down(), df.chroma_rounded_down()),
                    ] {
                        let r: Vec<Plane<'_>> = rf.planes.iter().map(|p| p.view()).collect();
                        let d: Vec<Plane<'_>> = df.planes.iter().map(|p| p.view()).collect();
                        let rp: Vec<_> = r.iter().map(|p| synth::with_stride(p, 5)).collect();
                        let dp: Vec<_> = d.iter().map(|p| synth::with_stride(p, 3)).collect();
                        let rs: Vec<Plane<'_>> =
                            rp.iter().zip(&r).map(|(b, p)| strided(b, p)).collect();
                        let ds: Vec<Plane<'_>> =
                            dp.iter().zip(&d).map(|(b, p)| strided(b, p)).collect();
                        for m in all {
                            let what = format!("{} {m}", s.name());
                            let a = try_metric(&r, &d, m);
                            let b = try_metric(&rs, &ds, m);
                            match (&a, &b) {
                                (Ok(x), Ok(y)) => {
                                    assert!(
                                        x.to_bits() == y.to_bits(),
                                        "{what}: compact {x}, strided {y}"
                                    );
                                    scored += 1;
                                }
                                (Err(x), Err(y)) => assert_eq!(x, y, "{what}"),
                                _ => panic!("{what}: compact {a:?}, strided {b:?}"),
                            }
                            let refused = match m {
                                "float_ms_ssim" => w < 176,
                                "ciede2000" => format == Gray,
                                m if m.starts_with("psnr_hvs") => format == Gray || bpc > 12,
                                _ => false,
                            };
                            match a {
                                Ok(_) => assert!(!refused, "{what}: not refused"),
                                Err(Error::Unsupported { .. }) => {
                                    assert!(refused, "{what}: refused")
                                }
                                Err(e) => panic!("{what}: {e}"),
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(scored > 0);
}

/// Writes the inputs for libvmaf (raw YUV as its tool reads them) and a manifest with the
/// features to run: `VMAF_COMPANION_OUT=<folder> cargo test --test companion_oracle -- --ignored`.
#[test]
#[ignore]
fn write_companion_inputs() {
    let dir = PathBuf::from(
        std::env::var("VMAF_COMPANION_OUT").expect("set VMAF_COMPANION_OUT to a folder"),
    );
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = String::new();
    for s in cases() {
        s.write_yuv(&dir, synth::Layout::LibvmafCli).unwrap();
        manifest += &format!(
            "{} {} {} {} {} {} {} {} {}\n",
            s.name(),
            s.width,
            s.height,
            s.bpc,
            synth::format_name(s.format),
            s.kind.name(),
            s.seed,
            s.frames,
            metrics(&s).join(",")
        );
    }
    std::fs::write(dir.join("companion_cases.txt"), manifest).unwrap();
}

/// Time of each metric on one 1920x1080 8-bit 4:2:0 frame (random content, best of 3):
/// `cargo test --release --test companion_oracle -- --ignored time_one_1080p_frame --nocapture`.
#[test]
#[ignore]
fn time_one_1080p_frame() {
    let s = Spec {
        width: 1920,
        height: 1080,
        bpc: 8,
        format: ChromaFormat::Yuv420,
        kind: Kind::Random,
        seed: 1,
        frames: 1,
    };
    let (rf, df) = s.frame(0);
    let r: Vec<Plane<'_>> = rf.planes.iter().map(|p| p.view()).collect();
    let d: Vec<Plane<'_>> = df.planes.iter().map(|p| p.view()).collect();
    let time = |name: &str, f: &dyn Fn() -> f64| {
        let mut best = f64::INFINITY;
        let mut v = 0.0;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            v = f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        eprintln!("{name:>14}: {:8.2} ms  ({v})", best * 1e3);
    };
    time("psnr (3 planes)", &|| psnr::psnr(&r, &d).unwrap().y);
    time("float_ssim", &|| ssim::ssim(r[0], d[0]).unwrap().ssim);
    time("float_ms_ssim", &|| {
        ms_ssim::ms_ssim(r[0], d[0]).unwrap().ms_ssim
    });
    time("ciede2000", &|| ciede::ciede(&r, &d).unwrap());
    time("psnr_hvs (3)", &|| {
        psnr_hvs::psnr_hvs(&r, &d).unwrap().psnr_hvs
    });
}
