//! Frames per second of the CPU engine for VMAF v1 (`vmaf_v1.0.16_3d0h` by default) or the
//! standalone CAMBI, at 1080p and 4K, 8 and 10 bits, 4:2:0; optionally writes the same frames as
//! raw `.yuv` files so that libvmaf's `vmaf` tool can score the very same input.
//!
//! ```text
//! cargo run --release --example bench_v1 -- [--model NAME | --cambi] [--threads N] [--frames N]
//!     [--sizes 1080p,4k] [--bits 8,10] [--write DIR]
//! ```
//!
//! Content: the first frames of the bbb720 pair (tests/data/yuv: Big Buck Bunny and its x264
//! crf 35 encode), every plane upscaled bilinearly; for 10 bits each sample is `x << 2` (the
//! goldens' `up10`). A few distinct frames are cycled through. Without the test data the program
//! stops: the content is what makes the CAMBI and SpEED work realistic.
//!
//! `--components` also times each of the v1 model's features alone on one frame, one thread.
//!
//! With `--write DIR`, `DIR/<size>_<bits>b_{ref,dis}.yuv` hold the frames in the order scored,
//! for `vmaf -r ... -d ... -w W -h H -p 420 -b BITS --threads N -m version=NAME` (or `--feature
//! cambi -n`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use gstvmafgpu::engine::{Extras, ModelSource, Scorer, ScorerConfig};
use gstvmafgpu::{Chroma, ChromaFormat, Picture, PlaneRef};

struct Opts {
    model: String,
    cambi: bool,
    threads: usize,
    frames: usize,
    sizes: Vec<(&'static str, usize, usize)>,
    bits: Vec<u8>,
    write: Option<PathBuf>,
    components: bool,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        model: "vmaf_v1.0.16_3d0h".into(),
        cambi: false,
        threads: 0,
        frames: 0,
        sizes: vec![("1080p", 1920, 1080), ("4k", 3840, 2160)],
        bits: vec![8, 10],
        write: None,
        components: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--model" => o.model = val()?,
            "--cambi" => o.cambi = true,
            "--components" => o.components = true,
            "--threads" => o.threads = val()?.parse().map_err(|_| "bad --threads")?,
            "--frames" => o.frames = val()?.parse().map_err(|_| "bad --frames")?,
            "--write" => o.write = Some(PathBuf::from(val()?)),
            "--sizes" => {
                o.sizes = val()?
                    .split(',')
                    .map(|s| match s {
                        "720p" => Ok(("720p", 1280, 720)),
                        "1080p" => Ok(("1080p", 1920, 1080)),
                        "4k" => Ok(("4k", 3840, 2160)),
                        _ => Err(format!("unknown size {s} (720p, 1080p, 4k)")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--bits" => {
                o.bits = val()?
                    .split(',')
                    .map(|s| s.parse().map_err(|_| format!("bad bit depth {s}")))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(o)
}

/// Bilinear upscale of one 8-bit plane (fixed point, deterministic).
fn upscale(src: &[u8], sw: usize, sh: usize, dw: usize, dh: usize) -> Vec<u16> {
    let mut out = Vec::with_capacity(dw * dh);
    for y in 0..dh {
        let fy = (y * (sh - 1) * 256) / (dh - 1).max(1);
        let (y0, wy) = (fy / 256, fy % 256);
        let y1 = (y0 + 1).min(sh - 1);
        for x in 0..dw {
            let fx = (x * (sw - 1) * 256) / (dw - 1).max(1);
            let (x0, wx) = (fx / 256, fx % 256);
            let x1 = (x0 + 1).min(sw - 1);
            let p = |yy: usize, xx: usize| src[yy * sw + xx] as usize;
            let top = p(y0, x0) * (256 - wx) + p(y0, x1) * wx;
            let bot = p(y1, x0) * (256 - wx) + p(y1, x1) * wx;
            out.push(((top * (256 - wy) + bot * wy + 32768) >> 16) as u16);
        }
    }
    out
}

/// One I420 frame (all planes) of the bbb720 file `buf`, upscaled to `w` x `h`, as bytes.
fn frame(buf: &[u8], i: usize, w: usize, h: usize, bpc: u8) -> Vec<u8> {
    let (sw, sh) = (1280, 720);
    let n = sw * sh * 3 / 2;
    let f = &buf[i * n..(i + 1) * n];
    let (y, c) = f.split_at(sw * sh);
    let (u, v) = c.split_at(sw * sh / 4);
    let mut planes = upscale(y, sw, sh, w, h);
    planes.extend(upscale(u, sw / 2, sh / 2, w / 2, h / 2));
    planes.extend(upscale(v, sw / 2, sh / 2, w / 2, h / 2));
    if bpc == 8 {
        planes.into_iter().map(|s| s as u8).collect()
    } else {
        planes
            .into_iter()
            .flat_map(|s| (s << (bpc - 8)).to_le_bytes())
            .collect()
    }
}

fn picture(buf: &[u8], w: usize, h: usize, bpc: u8) -> Picture<'_> {
    let bps = if bpc > 8 { 2 } else { 1 };
    let (y, c) = buf.split_at(w * h * bps);
    let (u, v) = c.split_at(w * h / 4 * bps);
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
                stride: w / 2 * bps,
            },
            v: PlaneRef {
                data: v,
                stride: w / 2 * bps,
            },
        },
    }
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/yuv");
    let (Ok(r), Ok(d)) = (
        std::fs::read(dir.join("bbb720_ref.yuv")),
        std::fs::read(dir.join("bbb720_dis.yuv")),
    ) else {
        eprintln!("error: tests/data/yuv/bbb720_*.yuv missing: run scripts/fetch-test-data.sh");
        std::process::exit(2);
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let what = if o.cambi {
        "standalone cambi (default options)".to_string()
    } else {
        o.model.clone()
    };
    println!(
        "bench_v1: {what}, CPU backend, threads = {} ({cores} cores available)",
        o.threads
    );
    for &(name, w, h) in &o.sizes {
        for &bpc in &o.bits {
            let distinct = 8;
            let total = if o.frames > 0 {
                o.frames
            } else if w * h > 1920 * 1080 {
                16
            } else {
                48
            };
            let frames: Vec<(Vec<u8>, Vec<u8>)> = (0..distinct)
                .map(|i| (frame(&r, i, w, h, bpc), frame(&d, i, w, h, bpc)))
                .collect();
            if let Some(out) = &o.write {
                std::fs::create_dir_all(out).expect("--write directory");
                for (side, k) in [("ref", 0), ("dis", 1)] {
                    let p = out.join(format!("{name}_{bpc}b_{side}.yuv"));
                    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).expect("create"));
                    for i in 0..total {
                        let fr = &frames[i % distinct];
                        f.write_all(if k == 0 { &fr.0 } else { &fr.1 })
                            .expect("write");
                    }
                }
            }
            if o.components {
                components(&frames[1].0, &frames[1].1, w, h, bpc);
            }
            let cfg = ScorerConfig {
                model: ModelSource::Builtin(if o.cambi {
                    "vmaf_v0.6.1".into()
                } else {
                    o.model.clone()
                }),
                threads: o.threads,
                extras: Extras {
                    cambi: o.cambi,
                    ..Default::default()
                },
                ..Default::default()
            };
            let mut scorer = Scorer::new(cfg).expect("scorer");
            let start = Instant::now();
            let mut n = 0;
            let mut sum = 0.0;
            let key = if o.cambi { "cambi" } else { "vmaf" };
            for i in 0..total {
                let (fr, fd) = &frames[i % distinct];
                for f in scorer
                    .push(&picture(fr, w, h, bpc), &picture(fd, w, h, bpc))
                    .expect("push")
                {
                    n += 1;
                    sum += f.get(key).unwrap_or(f64::NAN);
                }
            }
            let (rest, _) = scorer.finish().expect("finish");
            for f in rest {
                n += 1;
                sum += f.get(key).unwrap_or(f64::NAN);
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{name} {bpc}-bit: {total} frames in {secs:.2} s = {:.1} frames/s (mean {key} {:.6} over {n})",
                total as f64 / secs,
                sum / n as f64
            );
        }
    }
}

/// Milliseconds a call of each v1 feature takes on one frame (best of 5), one thread.
fn components(r: &[u8], d: &[u8], w: usize, h: usize, bpc: u8) {
    use gstvmafgpu::OwnedPlane;
    use gstvmafgpu::features::adm::{self, AdmParams};
    use gstvmafgpu::features::cambi::{Cambi, CambiParams};
    use gstvmafgpu::features::motion;
    use gstvmafgpu::features::speed::{SpeedChroma, SpeedChromaParams};
    let plane = |buf: &[u8], off: usize, pw: usize, ph: usize| -> OwnedPlane {
        let bps = if bpc > 8 { 2 } else { 1 };
        let b = &buf[off * bps..(off + pw * ph) * bps];
        let data = if bps == 1 {
            b.iter().map(|&x| u16::from(x)).collect()
        } else {
            b.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        OwnedPlane {
            data,
            width: pw,
            height: ph,
            bpc,
        }
    };
    let (ry, dy) = (plane(r, 0, w, h), plane(d, 0, w, h));
    let (cw, ch) = (w / 2, h / 2);
    let ru = plane(r, w * h, cw, ch);
    let rv = plane(r, w * h + cw * ch, cw, ch);
    let du = plane(d, w * h, cw, ch);
    let dv = plane(d, w * h + cw * ch, cw, ch);
    let best = |f: &mut dyn FnMut()| {
        let mut b = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            f();
            b = b.min(t.elapsed().as_secs_f64() * 1e3);
        }
        b
    };
    let ap = AdmParams {
        csf_mode: 2,
        dlm_weight: 0.7,
        enhn_gain_limit: 1.0,
        noise_weight: 0.02,
        min_val: 0.5,
        ..Default::default()
    };
    let t_adm = best(&mut || {
        std::hint::black_box(adm::compute(ry.view(), dy.view(), &ap));
    });
    let t_motion = best(&mut || {
        std::hint::black_box(motion::sad(ry.view(), dy.view()));
    });
    let cp = CambiParams {
        high_res_speedup: 1080,
        vis_lum_threshold: 0.06,
        max_val: 17.0,
        ..Default::default()
    };
    let cambi = Cambi::new(&cp, w, h, bpc).expect("cambi");
    let t_cambi = best(&mut || {
        std::hint::black_box(cambi.compute(&dy.view(), None).expect("cambi"));
    });
    let sp = SpeedChromaParams {
        nn_floor: 0.1,
        sigma_nn: 0.19,
        weight_var_mode: 5,
        max_val: 45.0,
        ..Default::default()
    };
    let speed = SpeedChroma::new(&sp, cw, ch, bpc).expect("speed");
    let t_speed = best(&mut || {
        std::hint::black_box(
            speed
                .compute(&ru.view(), &rv.view(), &du.view(), &dv.view())
                .expect("speed"),
        );
    });
    println!(
        "  one thread, ms/frame: adm (csf 2) {t_adm:.2}, motion {t_motion:.2}, cambi (v1 options) {t_cambi:.2}, speed_chroma (3d0h) {t_speed:.2}"
    );
}
