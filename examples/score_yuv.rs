//! Score two raw I420 .yuv files with the engine and print per-frame VMAF and the pooled mean.
//!
//! ```text
//! cargo run --release --example score_yuv -- [REF.yuv DIS.yuv WIDTH HEIGHT BPC [MODEL [THREADS]]]
//! ```
//!
//! Without arguments it scores the carphone pair of the test data (tests/data/yuv, 176x144,
//! 8 bits; fetched by scripts/fetch-test-data.sh). Samples above 8 bits are two bytes,
//! little-endian (I420_10LE etc.). MODEL is a built-in model name or a path to a JSON model.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use gstvmafgpu::engine::{ModelSource, Scorer, ScorerConfig};
use gstvmafgpu::model::BUILTIN_MODELS;
use gstvmafgpu::{Chroma, ChromaFormat, Picture, PlaneRef};

struct Args {
    reference: PathBuf,
    distorted: PathBuf,
    width: usize,
    height: usize,
    bpc: u8,
    model: ModelSource,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.iter().any(|s| s == "-h" || s == "--help") {
        return Err(String::new());
    }
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/yuv");
    if a.is_empty() {
        return Ok(Args {
            reference: data.join("carphone_ref.yuv"),
            distorted: data.join("carphone_dis.yuv"),
            width: 176,
            height: 144,
            bpc: 8,
            model: ModelSource::default(),
            threads: 0,
        });
    }
    if a.len() < 5 {
        return Err("expected REF DIS WIDTH HEIGHT BPC [MODEL [THREADS]]".into());
    }
    let num = |s: &str, what: &str| -> Result<usize, String> {
        s.parse().map_err(|_| format!("bad {what}: {s:?}"))
    };
    let model = match a.get(5) {
        None => ModelSource::default(),
        Some(m) if BUILTIN_MODELS.contains(&m.as_str()) => ModelSource::Builtin(m.clone()),
        Some(m) => ModelSource::Path(m.into()),
    };
    Ok(Args {
        reference: a[0].clone().into(),
        distorted: a[1].clone().into(),
        width: num(&a[2], "width")?,
        height: num(&a[3], "height")?,
        bpc: u8::try_from(num(&a[4], "bpc")?).map_err(|_| "bad bpc".to_string())?,
        model,
        threads: a.get(6).map_or(Ok(0), |t| num(t, "threads"))?,
    })
}

/// Reads whole I420 frames from a file.
struct YuvReader {
    r: BufReader<File>,
    frame: Vec<u8>,
}

impl YuvReader {
    fn open(path: &Path, frame_bytes: usize) -> Result<Self, String> {
        let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(YuvReader {
            r: BufReader::new(f),
            frame: vec![0; frame_bytes],
        })
    }

    /// The next frame, or None at the end (a partial last frame is ignored).
    fn next(&mut self) -> Result<Option<&[u8]>, String> {
        let mut got = 0;
        while got < self.frame.len() {
            match self.r.read(&mut self.frame[got..]) {
                Ok(0) => return Ok(None),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(Some(&self.frame))
    }
}

fn i420(buf: &[u8], w: usize, h: usize, bpc: u8) -> Picture<'_> {
    let bps = if bpc > 8 { 2 } else { 1 };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let (y, rest) = buf.split_at(w * h * bps);
    let (u, v) = rest.split_at(cw * ch * bps);
    Picture {
        width: w,
        height: h,
        bpc,
        format: ChromaFormat::Yuv420,
        luma: PlaneRef {
            data: y,
            stride: w * bps,
        },
        chroma: Chroma::Planar {
            u: PlaneRef {
                data: u,
                stride: cw * bps,
            },
            v: PlaneRef {
                data: v,
                stride: cw * bps,
            },
        },
    }
}

fn run(a: Args) -> Result<(), String> {
    let bps = if a.bpc > 8 { 2 } else { 1 };
    let frame_bytes = (a.width * a.height + 2 * a.width.div_ceil(2) * a.height.div_ceil(2)) * bps;
    let mut rr = YuvReader::open(&a.reference, frame_bytes)?;
    let mut dr = YuvReader::open(&a.distorted, frame_bytes)?;
    let mut scorer = Scorer::new(ScorerConfig {
        model: a.model,
        threads: a.threads,
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    eprintln!(
        "scoring {} against {} ({}x{}, {} bits) with {} on the {} backend",
        a.distorted.display(),
        a.reference.display(),
        a.width,
        a.height,
        a.bpc,
        scorer.model_name(),
        scorer.backend_name()
    );
    let start = std::time::Instant::now();
    let mut pushed = 0u64;
    while let (Some(r), Some(d)) = (rr.next()?, dr.next()?) {
        let frames = scorer
            .push(
                &i420(r, a.width, a.height, a.bpc),
                &i420(d, a.width, a.height, a.bpc),
            )
            .map_err(|e| format!("frame {pushed}: {e}"))?;
        pushed += 1;
        for f in frames {
            println!("frame {:5}  vmaf {:.6}", f.index, f.vmaf());
        }
    }
    let (frames, summary) = scorer.finish().map_err(|e| e.to_string())?;
    for f in frames {
        println!("frame {:5}  vmaf {:.6}", f.index, f.vmaf());
    }
    let secs = start.elapsed().as_secs_f64();
    match summary.get("vmaf") {
        Some(s) => println!(
            "vmaf over {} frames: mean {:.6}, harmonic mean {:.6}, min {:.6}, max {:.6}",
            summary.frames, s.mean, s.harmonic_mean, s.min, s.max
        ),
        None => println!("no frame scored"),
    }
    eprintln!(
        "{pushed} frames in {secs:.2} s ({:.1} frames/s)",
        pushed as f64 / secs
    );
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!(
                "usage: score_yuv [REF.yuv DIS.yuv WIDTH HEIGHT BPC [MODEL [THREADS]]]\n\
                 (no arguments: the carphone pair in tests/data/yuv)"
            );
            ExitCode::FAILURE
        }
    }
}
