//! Frames per second of the CPU engine (vmaf_v0.6.1: VIF, ADM, motion, model, pooling) at 1080p
//! and 4K, 8 and 10 bits.
//!
//! ```text
//! cargo run --release --example bench_cpu -- [--threads N] [--frames N] [--sizes 1080p,4k] [--bits 8,10] [--components]
//! ```
//!
//! Content: the luma of the first frames of the bbb720 pair (tests/data/yuv: Big Buck Bunny and its
//! x264 crf 35 encode), upscaled bilinearly to 1920x1080 or 3840x2160; for 10 bits each sample is
//! `4 * x + n` with a deterministic noise `n` in 0..=3, drawn independently for reference and
//! distorted. Without the test data, a deterministic textured pattern (moving gradients, a moving
//! checkerboard and noise; distorted = blurred + noise) is used instead. A small set of distinct
//! frames is cycled through, so the cut from the last back to the first adds some motion.
//!
//! `--components` also times each feature alone on one frame pair, on one thread: the VMAF
//! features (VIF, ADM, motion) and the companion metrics (PSNR of Y, Cb and Cr, SSIM, MS-SSIM,
//! CIEDE2000, PSNR-HVS), the latter on a 4:2:0 pair whose chroma is the 2x2 mean of the luma
//! (distorted chroma: of the distorted luma, plus a small offset).
//! `--null-backend` replaces the backend by one that computes nothing (all-zero accumulators,
//! returned at once): what remains is the engine's own work per frame on the calling thread
//! (validation and copy of the planes, scores, model, pooling).

use std::path::Path;
use std::time::Instant;

use gstvmafgpu::backend::{Backend, ClipConfig, FrameAccum, FrameJob};
use gstvmafgpu::engine::{Scorer, ScorerConfig};
use gstvmafgpu::features::isa::Isa;
use gstvmafgpu::features::{adm, ciede, motion, ms_ssim, psnr, psnr_hvs, ssim, vif};
use gstvmafgpu::{Chroma, ChromaFormat, OwnedPlane, Picture, Plane, PlaneRef};

struct Opts {
    threads: usize,
    frames: usize,
    sizes: Vec<(&'static str, usize, usize)>,
    bits: Vec<u8>,
    components: bool,
    null_backend: bool,
}

/// A backend that computes nothing: every job's result is ready at once, all zeros.
struct NullBackend(std::collections::VecDeque<(u64, bool)>);

impl Backend for NullBackend {
    fn name(&self) -> &'static str {
        "null"
    }
    fn submit(&mut self, job: FrameJob) -> gstvmafgpu::Result<()> {
        self.0.push_back((job.index, job.prev_ref.is_some()));
        Ok(())
    }
    fn receive(&mut self, _wait: bool) -> gstvmafgpu::Result<Option<(u64, FrameAccum)>> {
        Ok(self.0.pop_front().map(|(i, prev)| {
            let acc = FrameAccum {
                motion_sad: prev.then_some(0),
                ..Default::default()
            };
            (i, acc)
        }))
    }
    fn reset(&mut self) {
        self.0.clear();
    }
    /// Nothing to get ready: the configuration changes nothing of all-zero results.
    fn configure(&mut self, _cfg: &ClipConfig) -> gstvmafgpu::Result<()> {
        Ok(())
    }
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        threads: 0,
        frames: 0,
        sizes: vec![("1080p", 1920, 1080), ("4k", 3840, 2160)],
        bits: vec![8, 10],
        components: false,
        null_backend: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--threads" => o.threads = val()?.parse().map_err(|_| "bad --threads")?,
            "--frames" => o.frames = val()?.parse().map_err(|_| "bad --frames")?,
            "--sizes" => {
                o.sizes = val()?
                    .split(',')
                    .map(|s| match s {
                        "1080p" => Ok(("1080p", 1920, 1080)),
                        "4k" => Ok(("4k", 3840, 2160)),
                        "720p" => Ok(("720p", 1280, 720)),
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
            "--components" => o.components = true,
            "--null-backend" => o.null_backend = true,
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(o)
}

/// xorshift64*.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Bilinear upscale of an 8-bit plane (fixed point, 8 fractional bits).
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

/// Deterministic textured content when the test data is absent.
fn pattern(w: usize, h: usize, t: usize, rng: &mut Rng) -> (Vec<u16>, Vec<u16>) {
    let mut r = vec![0u16; w * h];
    for y in 0..h {
        for x in 0..w {
            let g = ((x + 3 * t) * 255 / w + (y + t) * 128 / h) % 256;
            let c = if ((x + 2 * t) / 16 + y / 16).is_multiple_of(2) {
                40
            } else {
                0
            };
            let n = (rng.next() % 24) as usize;
            r[y * w + x] = ((g + c + n) / 2).min(255) as u16;
        }
    }
    // Distorted: 3x3 box blur plus noise.
    let mut d = r.clone();
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let mut s = 0u32;
            for dy in 0..3 {
                for dx in 0..3 {
                    s += u32::from(r[(y + dy - 1) * w + x + dx - 1]);
                }
            }
            let n = (rng.next() % 9) as u32;
            d[y * w + x] = ((s + n) / 9).min(255) as u16;
        }
    }
    (r, d)
}

/// `count` distinct (reference, distorted) luma pairs at `w`x`h`, `bpc` bits.
/// A (reference, distorted) pair of luma planes as bytes.
type FramePair = (Vec<u8>, Vec<u8>);

fn content(w: usize, h: usize, bpc: u8, count: usize) -> (Vec<FramePair>, &'static str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/yuv");
    let (sw, sh) = (1280, 720);
    let frame_bytes = sw * sh * 3 / 2;
    let files = (
        std::fs::read(dir.join("bbb720_ref.yuv")),
        std::fs::read(dir.join("bbb720_dis.yuv")),
    );
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut out = Vec::with_capacity(count);
    let source;
    match files {
        (Ok(r), Ok(d)) if r.len() >= frame_bytes * count && d.len() >= frame_bytes * count => {
            source = "bbb720 luma, bilinear upscale";
            for i in 0..count {
                let f = |buf: &[u8]| upscale(&buf[i * frame_bytes..][..sw * sh], sw, sh, w, h);
                out.push((f(&r), f(&d)));
            }
        }
        _ => {
            source = "synthetic textured pattern with noise";
            for t in 0..count {
                out.push(pattern(w, h, t, &mut rng));
            }
        }
    }
    let to_bytes = |p: Vec<u16>, rng: &mut Rng| -> Vec<u8> {
        if bpc == 8 {
            p.into_iter().map(|v| v as u8).collect()
        } else {
            let shift = bpc - 8;
            p.into_iter()
                .flat_map(|v| {
                    let n = (rng.next() % (1 << shift)) as u16;
                    ((v << shift) + n).to_le_bytes()
                })
                .collect()
        }
    };
    let frames = out
        .into_iter()
        .map(|(r, d)| (to_bytes(r, &mut rng), to_bytes(d, &mut rng)))
        .collect();
    (frames, source)
}

/// CPU time (user + system) of this process or of the calling thread, in seconds, from
/// /proc (Linux; 0 elsewhere). On a loaded machine wall-clock rates understate the speed; CPU
/// time does not.
fn cpu_secs(thread: bool) -> f64 {
    let path = if thread {
        "/proc/thread-self/stat"
    } else {
        "/proc/self/stat"
    };
    let Ok(s) = std::fs::read_to_string(path) else {
        return 0.0;
    };
    // Fields after the command name (which ends with the last ')'): utime is field 14, stime 15.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // After ')': field 3 (state) is index 0, so utime (14) is index 11, stime (15) index 12.
    (ticks(11) + ticks(12)) / 100.0
}

fn gray(buf: &[u8], w: usize, h: usize, bpc: u8) -> Picture<'_> {
    Picture {
        width: w,
        height: h,
        bpc,
        format: ChromaFormat::Gray,
        luma: PlaneRef {
            data: buf,
            stride: w * if bpc > 8 { 2 } else { 1 },
        },
        chroma: Chroma::None,
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
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "bench_cpu: vmaf_v0.6.1, CPU backend, threads = {} ({} cores available)",
        if o.threads == 0 {
            format!("0 (= {cores})")
        } else {
            o.threads.to_string()
        },
        cores
    );
    for &(name, w, h) in &o.sizes {
        for &bpc in &o.bits {
            let distinct = if w * h > 1920 * 1080 { 8 } else { 12 };
            let total = if o.frames > 0 {
                o.frames
            } else if o.null_backend {
                300
            } else if w * h > 1920 * 1080 {
                24
            } else {
                60
            };
            let (frames, source) = content(w, h, bpc, distinct);
            let cfg = ScorerConfig {
                threads: o.threads,
                ..Default::default()
            };
            let mut scorer = if o.null_backend {
                Scorer::with_backend(cfg, Box::new(NullBackend(Default::default())))
            } else {
                Scorer::new(cfg)
            }
            .expect("scorer");
            // Warm-up: start the workers, fill the buffer pool.
            for (r, d) in frames.iter().take(2) {
                scorer
                    .push(&gray(r, w, h, bpc), &gray(d, w, h, bpc))
                    .expect("push");
            }
            scorer.reset();
            let start = Instant::now();
            let cpu0 = cpu_secs(false);
            let mut scored = 0usize;
            let mut sum = 0.0;
            for i in 0..total {
                let (r, d) = &frames[i % distinct];
                for f in scorer
                    .push(&gray(r, w, h, bpc), &gray(d, w, h, bpc))
                    .expect("push")
                {
                    scored += 1;
                    sum += f.vmaf();
                }
            }
            let (rest, summary) = scorer.finish().expect("finish");
            scored += rest.len();
            sum += rest.iter().map(|f| f.vmaf()).sum::<f64>();
            let secs = start.elapsed().as_secs_f64();
            let cpu = cpu_secs(false) - cpu0;
            assert_eq!(scored, total);
            let threads = if o.threads == 0 { cores } else { o.threads };
            println!(
                "{name:>5} {w}x{h} {bpc:>2}-bit, {} backend: {total} frames in {secs:.2} s = {:.2} frames/s wall; \
                 {cpu:.1} CPU s = {:.2} frames/s per {threads} fully available cores \
                 (mean vmaf {:.3}; content: {source})",
                scorer.backend_name(),
                total as f64 / secs,
                total as f64 / cpu * threads.min(cores) as f64,
                summary.get("vmaf").map_or(sum / total as f64, |s| s.mean),
            );

            if o.components {
                let plane = |b: &[u8]| {
                    let mut p = OwnedPlane::default();
                    gray(b, w, h, bpc).copy_luma(&mut p).expect("copy");
                    p
                };
                let (r0, d0) = (&frames[0].0, &frames[0].1);
                let r1 = &frames[1].0;
                let reps = if w * h > 1920 * 1080 { 4 } else { 12 };
                // Thread CPU time: unaffected by other processes on the machine.
                let time = |f: &mut dyn FnMut()| {
                    f();
                    let t = cpu_secs(true);
                    for _ in 0..reps {
                        f();
                    }
                    (cpu_secs(true) - t) * 1000.0 / reps as f64
                };
                let (rp, dp, rp1) = (plane(r0), plane(d0), plane(r1));
                let mut scratch = OwnedPlane::default();
                let t_copy = time(&mut || {
                    gray(r0, w, h, bpc).copy_luma(&mut scratch).expect("copy");
                    gray(d0, w, h, bpc).copy_luma(&mut scratch).expect("copy");
                });
                let vp = vif::VifParams::default();
                let ap = adm::AdmParams::default();
                let t_vif = time(&mut || {
                    std::hint::black_box(vif::compute(rp.view(), dp.view(), &vp));
                });
                let t_adm = time(&mut || {
                    std::hint::black_box(adm::compute(rp.view(), dp.view(), &ap));
                });
                let t_motion = time(&mut || {
                    std::hint::black_box(motion::sad(rp.view(), rp1.view()));
                });
                println!(
                    "      one thread, CPU ms per frame: vif {t_vif:.1}, adm {t_adm:.1}, motion {t_motion:.1}, \
                     luma copy+check (ref+dis) {t_copy:.1}"
                );

                // Each build of the VMAF feature kernels (features::isa), best of 5 rounds of 2
                // (the minimum is the figure least disturbed by other load on the machine).
                for isa in Isa::all_supported() {
                    let best = |f: &mut dyn FnMut()| {
                        f();
                        (0..5)
                            .map(|_| {
                                let t = Instant::now();
                                f();
                                f();
                                t.elapsed().as_secs_f64() * 500.0
                            })
                            .fold(f64::INFINITY, f64::min)
                    };
                    let tv = best(&mut || {
                        std::hint::black_box(vif::compute_with(rp.view(), dp.view(), &vp, isa));
                    });
                    let ta = best(&mut || {
                        std::hint::black_box(adm::compute_with(rp.view(), dp.view(), &ap, isa));
                    });
                    let tm = best(&mut || {
                        std::hint::black_box(motion::sad_with(rp.view(), rp1.view(), isa));
                    });
                    println!(
                        "      one thread, {isa:?} build, best wall ms per frame: vif {tv:.1}, adm {ta:.1}, motion {tm:.1}"
                    );
                }
                // Companion metrics on a 4:2:0 pair (fewer repetitions: some are slow).
                let chroma = |p: &OwnedPlane, offset: u16| {
                    let view = p.view();
                    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
                    let max = ((1u32 << bpc) - 1) as u16;
                    let mut c = Vec::with_capacity(cw * ch);
                    for y in 0..ch {
                        for x in 0..cw {
                            let (x1, y1) = ((2 * x + 1).min(w - 1), (2 * y + 1).min(h - 1));
                            let s = [(2 * x, 2 * y), (x1, 2 * y), (2 * x, y1), (x1, y1)]
                                .iter()
                                .map(|&(xx, yy)| u32::from(view.row(yy)[xx]))
                                .sum::<u32>();
                            c.push((((s + 2) / 4) as u16).saturating_add(offset).min(max));
                        }
                    }
                    (c, cw, ch)
                };
                let (rc, cw, ch) = chroma(&rp, 0);
                let (dc, _, _) = chroma(&dp, 3);
                let rpl = [
                    rp.view(),
                    Plane::from_slice(&rc, cw, ch, bpc),
                    Plane::from_slice(&rc, cw, ch, bpc),
                ];
                let dpl = [
                    dp.view(),
                    Plane::from_slice(&dc, cw, ch, bpc),
                    Plane::from_slice(&dc, cw, ch, bpc),
                ];
                let time_few = |f: &mut dyn FnMut()| {
                    f();
                    let t = cpu_secs(true);
                    let n = 3;
                    for _ in 0..n {
                        f();
                    }
                    (cpu_secs(true) - t) * 1000.0 / n as f64
                };
                let t_psnr = time_few(&mut || {
                    std::hint::black_box(psnr::psnr(&rpl, &dpl).expect("psnr"));
                });
                let t_ssim = time_few(&mut || {
                    std::hint::black_box(ssim::ssim(rpl[0], dpl[0]).expect("ssim"));
                });
                let t_ms_ssim = time_few(&mut || {
                    std::hint::black_box(ms_ssim::ms_ssim(rpl[0], dpl[0]).expect("ms_ssim"));
                });
                let t_ciede = time_few(&mut || {
                    std::hint::black_box(ciede::ciede(&rpl, &dpl).expect("ciede"));
                });
                let t_hvs = if bpc <= 12 {
                    format!(
                        "{:.1}",
                        time_few(&mut || {
                            std::hint::black_box(psnr_hvs::psnr_hvs(&rpl, &dpl).expect("psnr_hvs"));
                        })
                    )
                } else {
                    "n/a (above 12 bits)".to_string()
                };
                println!(
                    "      one thread, CPU ms per frame (4:2:0): psnr (y, cb, cr) {t_psnr:.1}, \
                     float_ssim {t_ssim:.1}, float_ms_ssim {t_ms_ssim:.1}, ciede2000 {t_ciede:.1}, \
                     psnr_hvs {t_hvs}"
                );
            }
        }
    }
}
