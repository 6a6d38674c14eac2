//! The companion kernel text (kernels/psnr.cu, ssim.cu, ciede.cu, psnr_hvs.cu), run on the CPU
//! (tests/emu/companion_emu.cpp: C++ with a thread per GPU thread and a barrier for
//! __syncthreads), through the same frame plan the GPU runs (src/backend/gpu/companion_plan.rs),
//! against the CPU reference (`compute_companions_cpu`): the scores must be equal (`==`).
//!
//! Content: random, flat, max, max-difference, checkerboard and natural pairs; odd and tiny
//! sizes; 8/10/12/16 bits (PSNR-HVS up to 12, as libvmaf); 4:2:0, 4:2:2, 4:4:4 and 4:0:0. All
//! mismatches are collected, then the test fails once with the list.
//!
//! CIEDE2000: the emulated kernels call the host's libm (glibc), as the CPU reference does, so
//! the per-pixel values are the CPU's; the GPU adds them in another order (per-block tree sums),
//! so the score must be within `ciede_bound` of the CPU's (tests/companion_parity.rs measures
//! the difference that CUDA's libm adds on a GPU).
//!
//! SSIM and MS-SSIM are checked both ways the host can finish them: from the GPU's per-block
//! sums where their error bound decides the float mean, and from the per-pixel terms.
//!
//! Needs a C++20 compiler (`g++`, or `$CXX`); without one it prints why and passes, unless
//! VMAFGPU_REQUIRE_EMU=1.
#![cfg(feature = "cuda")]

mod gpu_content;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use gpu_content::{Content, Job};
use gstvmafgpu::backend::gpu::companion_plan::{
    CiedeTable, CompanionGeometry, CompanionPlan, ciede_bound,
};
use gstvmafgpu::backend::gpu::launch::{
    KArg, Kernel, Launch, Region, check_launch, hvs_work_bytes, launch_hvs_chunk, launch_hvs_seq,
};
use gstvmafgpu::backend::{
    ChromaPair, CompanionScores, Companions, HostChroma, HostFrame, HostPlane,
    compute_companions_cpu,
};
use gstvmafgpu::features::cambi::{self, CambiParams};

fn emulator() -> Option<&'static Path> {
    static EXE: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXE.get_or_init(|| {
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emu/companion_emu.cpp");
        let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("vmafgpu_companion_emu");
        let out = Command::new(&cxx)
            .args([
                "-std=c++20",
                "-O2",
                "-ffp-contract=off",
                "-fno-fast-math",
                "-pthread",
                "-w",
                "-o",
            ])
            .arg(&exe)
            .arg(&src)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(exe),
            Ok(o) => panic!(
                "{cxx} failed to compile the companion kernel emulator:\n{}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => {
                let msg = format!("no C++ compiler ({cxx}: {e}): kernel emulation skipped");
                if std::env::var("VMAFGPU_REQUIRE_EMU").as_deref() == Ok("1") {
                    panic!("{msg}, but VMAFGPU_REQUIRE_EMU=1");
                }
                eprintln!("{msg}");
                None
            }
        }
    })
    .as_deref()
}

/// Run launches in the emulator on an arena of `arena` bytes (`zero` regions zeroed, `uploads`
/// copied in first); the whole arena afterwards.
fn emulate(
    exe: &Path,
    arena: usize,
    zero: &[Region],
    uploads: &[(Region, Vec<u8>)],
    launches: &[Launch],
) -> Vec<u8> {
    let mut input = Vec::new();
    let u32le = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
    let u64le = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_le_bytes());
    u64le(&mut input, arena as u64);
    u32le(&mut input, zero.len() as u32);
    for r in zero {
        u64le(&mut input, r.off as u64);
        u64le(&mut input, r.bytes as u64);
    }
    u32le(&mut input, uploads.len() as u32);
    for (r, bytes) in uploads {
        assert_eq!(bytes.len(), r.bytes);
        u64le(&mut input, r.off as u64);
        u64le(&mut input, r.bytes as u64);
        input.extend_from_slice(bytes);
    }
    u32le(&mut input, launches.len() as u32);
    for l in launches {
        check_launch(l, arena).unwrap();
        let name = l.kernel.name();
        u32le(&mut input, name.len() as u32);
        input.extend_from_slice(name.as_bytes());
        u32le(&mut input, l.grid.0);
        u32le(&mut input, l.grid.1);
        u32le(&mut input, l.args.len() as u32);
        for a in &l.args {
            match *a {
                KArg::Ptr(r) => {
                    input.push(0);
                    u64le(&mut input, r.off as u64);
                }
                KArg::I32(v) => {
                    input.push(1);
                    input.extend_from_slice(&v.to_le_bytes());
                }
                KArg::F32(v) => {
                    input.push(2);
                    input.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
    // The whole arena back.
    u64le(&mut input, 0);
    u64le(&mut input, arena as u64);

    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start companion kernel emulator");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "companion kernel emulator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), arena);
    out.stdout
}

/// What the plan of `job` uploads: its constant tables, then the job's planes (8-bit samples as
/// bytes, the host's narrowing that widen_u8 restores; else little-endian u16).
fn plan_uploads(plan: &CompanionPlan, job: &Job) -> Vec<(Region, Vec<u8>)> {
    let mut uploads: Vec<(Region, Vec<u8>)> = plan.tables.clone();
    for (r, data) in plan.uploads(job) {
        let bytes = if plan.narrow {
            data.iter().map(|&v| u8::try_from(v).unwrap()).collect()
        } else {
            data.iter().flat_map(|v| v.to_le_bytes()).collect()
        };
        uploads.push((r, bytes));
    }
    uploads
}

/// Run the plan of `job` in the emulator; the scores from its read-back bytes (the terms, where
/// needed, from its arena; with `host_sums` every SSIM, MS-SSIM and PSNR-HVS sum is added from
/// them). Also says whether any terms were fetched.
fn run_emulated(
    exe: &Path,
    job: &Job,
    host_sums: bool,
) -> (gstvmafgpu::Result<CompanionScores>, bool) {
    run_emulated_with(exe, job, host_sums, CiedeTable::Auto)
}

/// [`run_emulated`] with CIEDE2000's colour-conversion table as `table` says.
fn run_emulated_with(
    exe: &Path,
    job: &Job,
    host_sums: bool,
    table: CiedeTable,
) -> (gstvmafgpu::Result<CompanionScores>, bool) {
    let mut plan = match CompanionGeometry::of(&job.cfg.companions, job) {
        Ok(g) => CompanionPlan::with_ciede_table(g, table),
        Err(e) => return (Err(e), false),
    };
    plan.host_sums = host_sums;
    let uploads = plan_uploads(&plan, job);
    assert_eq!(
        plan.setup.is_empty(),
        !plan
            .launches
            .iter()
            .any(|l| l.kernel == Kernel::CiedePixelsTable),
        "the CIEDE2000 table is filled exactly when it is read"
    );
    let arena = run_plan(exe, &plan, &uploads);
    let rb = &arena[plan.readback.off..plan.readback.off + plan.readback.bytes];
    let fetched = std::sync::atomic::AtomicBool::new(false);
    let fetch = |r: Region| -> gstvmafgpu::Result<Vec<u8>> {
        fetched.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(
            r.off >= plan.results.off && r.off + r.bytes <= plan.results.off + plan.results.bytes,
            "fetch of {r:?} outside the results {:?}",
            plan.results
        );
        Ok(arena[r.off..r.off + r.bytes].to_vec())
    };
    let scores = plan.scores(job, rb, &fetch);
    (scores, fetched.into_inner())
}

/// Chroma layouts: (name, x shift, y shift), `None` for 4:0:0.
const LAYOUTS: [(&str, Option<(u32, u32)>); 4] = [
    ("420", Some((1, 1))),
    ("422", Some((1, 0))),
    ("444", Some((0, 0))),
    ("400", None),
];

/// A job of `content` with chroma at libvmaf's size (`w >> sx`, `h >> sy`).
fn job(
    content: Content,
    w: usize,
    h: usize,
    bpc: u8,
    layout: Option<(u32, u32)>,
    companions: Companions,
    seed: u64,
) -> Job {
    let (r, d, _) = gpu_content::frames(content, w, h, bpc, seed);
    let mut j = Job::with_companions(gpu_content::job(seed, r, d, None), companions);
    if let Some((sx, sy)) = layout {
        let (cw, ch) = (w >> sx, h >> sy);
        let (rb, db, _) = gpu_content::frames(content, cw, ch, bpc, seed ^ 0x5a5a);
        let (rr, dr, _) = gpu_content::frames(content, cw, ch, bpc, seed ^ 0xa5a5);
        j.chroma = Some(Arc::new(ChromaPair {
            reference: [rb, rr],
            distorted: [db, dr],
        }));
    }
    j
}

fn compare(
    what: Companions,
    sizes: &[(usize, usize)],
    depths: &[u8],
    layouts: &[(&str, Option<(u32, u32)>)],
) {
    let Some(exe) = emulator() else { return };
    let mut bad = Vec::new();
    let mut n = 0;
    // Frames with SSIM, MS-SSIM or PSNR-HVS scores, and those of them finished from the GPU's
    // sums alone (no terms read).
    let mut bounded = (0, 0);
    let mut seed = 11;
    for &(w, h) in sizes {
        for &bpc in depths {
            for &(lname, layout) in layouts {
                for c in gpu_content::ALL {
                    seed += 1;
                    let j = job(c, w, h, bpc, layout, what, seed);
                    let want = compute_companions_cpu(&j.cfg.companions, &j);
                    // Both ways of adding SSIM's sums: from the GPU's bound, from the terms.
                    let sums = what.ssim || what.ms_ssim || what.psnr_hvs;
                    for host_sums in [false, true] {
                        if host_sums && !sums {
                            continue;
                        }
                        let (got, fetched) = run_emulated(exe, &j, host_sums);
                        n += 1;
                        if sums && !host_sums && got.is_ok() {
                            bounded.1 += 1;
                            bounded.0 += usize::from(!fetched);
                        }
                        if !same_scores(&want, &got, w, h) {
                            bad.push(format!(
                                "{c:?} {w}x{h} {bpc}-bit {lname} (host sums {host_sums}):\n  \
                                 cpu {want:?}\n  emu {got:?}"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(n > 0);
    if !bad.is_empty() {
        panic!("{} of {n} frames differ:\n{}", bad.len(), bad.join("\n"));
    }
    eprintln!(
        "{n} frames: emulated companion kernels == CPU reference; sums from the GPU alone in {} \
         of {} frames",
        bounded.0, bounded.1
    );
    // The GPU's sums must finish most frames (else every frame reads its terms back).
    assert!(
        bounded.0 * 4 >= bounded.1 * 3,
        "the GPU's sums finished only {} of {} frames",
        bounded.0,
        bounded.1
    );
}

/// Equal scores: the Debug text of each (shortest round-trip digits, the sign of zero included;
/// NaN, as MS-SSIM of a negative structure term, equals NaN), except CIEDE2000, whose sum the
/// GPU adds in another order: within [`ciede_bound`] of the CPU's, and the rest equal.
fn same_scores(
    want: &gstvmafgpu::Result<CompanionScores>,
    got: &gstvmafgpu::Result<CompanionScores>,
    w: usize,
    h: usize,
) -> bool {
    match (want, got) {
        (Ok(a), Ok(b)) => {
            let ciede_ok = match (a.ciede, b.ciede) {
                (Some(x), Some(y)) => {
                    (x - y).abs() <= ciede_bound(w, h) || (x.is_nan() && y.is_nan()) || x == y
                }
                (x, y) => x.is_none() && y.is_none(),
            };
            let (mut a, mut b) = (*a, *b);
            a.ciede = None;
            b.ciede = None;
            ciede_ok && format!("{a:?}") == format!("{b:?}")
        }
        (Err(a), Err(b)) => a.to_string() == b.to_string(),
        _ => false,
    }
}

const PSNR: Companions = Companions {
    psnr: true,
    ssim: false,
    ms_ssim: false,
    ciede: false,
    psnr_hvs: false,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

#[test]
fn psnr_equals_cpu() {
    compare(
        PSNR,
        &[(1, 1), (3, 2), (33, 33), (47, 61), (64, 36), (301, 7)],
        &[8, 10, 12, 16],
        &LAYOUTS,
    );
}

const SSIM: Companions = Companions {
    psnr: false,
    ssim: true,
    ms_ssim: false,
    ciede: false,
    psnr_hvs: false,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

const MS_SSIM: Companions = Companions {
    psnr: false,
    ssim: false,
    ms_ssim: true,
    ciede: false,
    psnr_hvs: false,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

#[test]
fn ssim_equals_cpu() {
    // 10x40 is refused (smaller than the window); 400x390 runs at scale 2, 700x768 at scale 3.
    compare(
        SSIM,
        &[(10, 40), (11, 11), (33, 33), (47, 61), (64, 36)],
        &[8, 10, 12, 16],
        &LAYOUTS[3..],
    );
    compare(SSIM, &[(400, 390), (700, 768)], &[8, 16], &LAYOUTS[3..]);
    // Scale 1, a thousand columns: 31 tiles of ssim_terms a row, the last one partial.
    compare(SSIM, &[(1001, 255)], &[8], &LAYOUTS[3..]);
}

#[test]
fn ms_ssim_equals_cpu() {
    // 175x300 is refused (level 4 below 11x11); 176x176 is the smallest frame.
    compare(
        MS_SSIM,
        &[(175, 300), (176, 176), (181, 190)],
        &[8, 10, 12, 16],
        &LAYOUTS[3..],
    );
    // A thousand columns at level 0, 63 at level 4.
    compare(MS_SSIM, &[(1001, 177)], &[10], &LAYOUTS[3..]);
}

const PSNR_HVS: Companions = Companions {
    psnr: false,
    ssim: false,
    ms_ssim: false,
    ciede: false,
    psnr_hvs: true,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

#[test]
fn psnr_hvs_equals_cpu() {
    // 16-bit and 4:0:0 are refused (as libvmaf); 15x9 at 4:2:0 has a chroma plane below 8x8.
    compare(
        PSNR_HVS,
        &[(15, 9), (16, 16), (33, 33), (47, 61), (64, 36)],
        &[8, 10, 12, 16],
        &LAYOUTS,
    );
}

const CIEDE: Companions = Companions {
    psnr: false,
    ssim: false,
    ms_ssim: false,
    ciede: true,
    psnr_hvs: false,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

#[test]
fn ciede_equals_cpu_with_host_libm() {
    // 4:0:0 is refused (no chroma), as 1x1 at 4:2:0 (an empty chroma plane).
    compare(
        CIEDE,
        &[(1, 1), (3, 2), (33, 33), (47, 61), (64, 36)],
        &[8, 10, 12, 16],
        &LAYOUTS,
    );
}

/// CIEDE2000 from the 8-bit colour-conversion table (kernels/ciede.cu ciede_lab_table,
/// ciede_pixels_table) equals the computed conversions bit for bit, and the CPU within
/// `ciede_bound`. Filling the table is 16.7M conversions in the emulator: two frames.
#[test]
fn ciede_table_equals_computed_conversions() {
    let Some(exe) = emulator() else { return };
    let mut bad = Vec::new();
    for (seed, (lname, layout), c) in [
        (71, LAYOUTS[0], Content::Random),
        (72, LAYOUTS[2], Content::Natural),
    ] {
        let (w, h) = (47, 33);
        let j = job(c, w, h, 8, layout, CIEDE, seed);
        let want = compute_companions_cpu(&j.cfg.companions, &j);
        let (table, _) = run_emulated_with(exe, &j, false, CiedeTable::On);
        let (computed, _) = run_emulated_with(exe, &j, false, CiedeTable::Off);
        let (t, c2) = (
            table.as_ref().map(|s| s.ciede),
            computed.as_ref().map(|s| s.ciede),
        );
        assert!(matches!(t, Ok(Some(_))), "{lname}: no score: {t:?}");
        if t.as_ref().ok() != c2.as_ref().ok() {
            bad.push(format!("{c:?} {lname}: table {t:?}, computed {c2:?}"));
        }
        if !same_scores(&want, &table, w, h) {
            bad.push(format!("{c:?} {lname}: cpu {want:?}, table {table:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn all_metrics_together() {
    let all = Companions {
        psnr: true,
        ssim: true,
        ms_ssim: true,
        ciede: true,
        psnr_hvs: true,
        cambi: None,
        speed_chroma: None,
        speed_temporal: None,
    };
    compare(all, &[(177, 180)], &[8, 10], &LAYOUTS[..3]);
}

/// The plan's setup, preparation and metric launches, in that order, on an arena holding
/// `uploads`: the arena afterwards.
fn run_plan(exe: &Path, plan: &CompanionPlan, uploads: &[(Region, Vec<u8>)]) -> Vec<u8> {
    let launches: Vec<Launch> = plan
        .setup
        .iter()
        .chain(&plan.prep)
        .chain(&plan.prep_luma)
        .chain(&plan.launches)
        .cloned()
        .collect();
    emulate(exe, plan.arena, &plan.zero, uploads, &launches)
}

/// A host plane over a copy of `p`'s samples (bytes at 8 bits, little-endian u16 above) in rows
/// `pad` bytes longer than the samples, starting `pad` bytes into its buffer.
fn host_plane(p: &[u16], w: usize, h: usize, bpc: u8, pad: usize) -> HostPlane {
    let bps = if bpc > 8 { 2 } else { 1 };
    let stride = w * bps + pad;
    let mut buf = vec![0xA5u8; pad + stride * h];
    for y in 0..h {
        for x in 0..w {
            let o = pad + y * stride + x * bps;
            let v = p[y * w + x];
            if bps == 2 {
                buf[o..o + 2].copy_from_slice(&v.to_le_bytes());
            } else {
                buf[o] = u8::try_from(v).unwrap();
            }
        }
    }
    HostPlane::new(Arc::new(buf), pad, stride, w, h, bpc).unwrap()
}

/// [`run_emulated`] for `job`'s planes in the caller's memory (the zero-copy route: padded
/// rows, chroma as two planes or, `interleaved`, one plane of Cb,Cr pairs split on the GPU),
/// uploaded as `CompanionPlan::host_uploads` lays them out and scored by `scores_of_host_frame`.
fn run_emulated_host(
    exe: &Path,
    job: &Job,
    interleaved: bool,
) -> gstvmafgpu::Result<CompanionScores> {
    let (r, d) = (&job.reference, &job.distorted);
    let (w, h, bpc) = (r.width, r.height, r.bpc);
    let chroma = job.chroma.as_ref().map(|c| {
        let (cw, ch) = (c.reference[0].width, c.reference[0].height);
        if interleaved {
            let pairs = |[u, v]: &[gstvmafgpu::OwnedPlane; 2]| -> Vec<u16> {
                u.data
                    .iter()
                    .zip(&v.data)
                    .flat_map(|(a, b)| [*a, *b])
                    .collect()
            };
            HostChroma::Interleaved {
                reference: host_plane(&pairs(&c.reference), 2 * cw, ch, bpc, 7),
                distorted: host_plane(&pairs(&c.distorted), 2 * cw, ch, bpc, 12),
            }
        } else {
            let side = |s: &[gstvmafgpu::OwnedPlane; 2]| {
                s.each_ref().map(|p| host_plane(&p.data, cw, ch, bpc, 5))
            };
            HostChroma::Planar {
                reference: side(&c.reference),
                distorted: side(&c.distorted),
            }
        }
    });
    let host = HostFrame {
        reference: host_plane(&r.data, w, h, bpc, 3),
        distorted: host_plane(&d.data, w, h, bpc, 16),
        prev_ref: None,
        chroma,
        previous: None,
    };
    let mut shape = job.clone();
    shape.chroma = None;
    let mut plan = CompanionPlan::new(CompanionGeometry::of_host(
        &job.cfg.companions,
        &shape,
        &host,
    )?);
    assert_eq!(plan.geom.interleaved, interleaved && job.chroma.is_some());
    plan.check_geometry();
    assert!(plan.reads_host_planes());
    let mut uploads: Vec<(Region, Vec<u8>)> = plan.tables.clone();
    for (region, p) in plan.host_uploads(&host)? {
        let rows: Vec<u8> = (0..p.height()).flat_map(|y| p.row(y).to_vec()).collect();
        uploads.push((region, rows));
    }
    let arena = run_plan(exe, &plan, &uploads);
    let rb = &arena[plan.readback.off..plan.readback.off + plan.readback.bytes];
    let fetch =
        |r: Region| -> gstvmafgpu::Result<Vec<u8>> { Ok(arena[r.off..r.off + r.bytes].to_vec()) };
    plan.scores_of_host_frame(rb, &fetch, host.previous.is_some())
}

/// Frames whose planes stay in the caller's memory (`CompanionGpu::submit_host`): the planes
/// uploaded from padded rows, chroma planar or interleaved (NV12, P016: split by
/// `split_uv_u8` / `split_uv_u16`), give the CPU's scores, errors included.
#[test]
fn host_frames_equal_cpu() {
    let Some(exe) = emulator() else { return };
    let mut bad = Vec::new();
    let (mut n, mut scored) = (0, 0);
    let mut seed = 4400;
    for (w, h, bpc, layout, interleaved) in [
        (47usize, 61usize, 8u8, Some((1, 1)), true),
        (176, 176, 16, Some((1, 1)), true),
        (181, 190, 8, Some((1, 0)), true),
        (177, 180, 10, Some((1, 1)), false),
        (64, 48, 12, Some((0, 0)), false),
        (47, 61, 8, None, false),
    ] {
        // MS-SSIM only where libvmaf takes the size (else every frame would be its refusal).
        let companions = Companions {
            psnr: true,
            ssim: true,
            ms_ssim: gstvmafgpu::features::ms_ssim::check_size(w, h).is_ok(),
            ciede: true,
            psnr_hvs: bpc <= 12,
            cambi: None,
            speed_chroma: None,
            speed_temporal: None,
        };
        for c in [Content::Natural, Content::MaxDiff] {
            seed += 1;
            let mut j = job(c, w, h, bpc, layout, companions, seed);
            if layout.is_none() {
                // Gray: the metrics without chroma.
                j.cfg.companions.ciede = false;
                j.cfg.companions.psnr_hvs = false;
            }
            let want = compute_companions_cpu(&j.cfg.companions, &j);
            let got = run_emulated_host(exe, &j, interleaved);
            n += 1;
            scored += usize::from(want.is_ok());
            if !same_scores(&want, &got, w, h) {
                bad.push(format!(
                    "{c:?} {w}x{h} {bpc}-bit {layout:?} interleaved {interleaved}:\n  cpu {want:?}\n  emu {got:?}"
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {n} frames differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(scored * 4 >= n * 3, "only {scored} of {n} frames scored");
}

/// The sequential float sum of PSNR-HVS on the GPU (kernels/psnr_hvs.cu hvs_chunk_sums,
/// hvs_chunk_bands, hvs_seq) against `ret += x` in order, on term sequences chosen to leave the
/// binade often, to tie, to stagnate (terms below half a step of the sum), to start with zeros
/// or subnormals, and long enough to jump over many chunks. The sum must be valid (no negative
/// terms here) and equal bit for bit.
#[test]
fn psnr_hvs_float_sum_equals_sequential() {
    let Some(exe) = emulator() else { return };
    // kernels/psnr_hvs.cu: HVS_CHUNK.
    const CHUNK: usize = 2048;
    let mut st = 0x2545f4914f6cdd1du64;
    let mut rnd = move || {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        (st >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut cases: Vec<(String, Vec<f32>)> = Vec::new();
    for n in [1usize, 2047, 2048, 2049, 70_001, 600_000] {
        cases.push((format!("uniform {n}"), (0..n).map(|_| rnd()).collect()));
        cases.push((format!("ones {n}"), vec![1.0; n]));
        cases.push((format!("halves {n}"), vec![0.5; n]));
        cases.push((
            format!("zeros then squares {n}"),
            (0..n)
                .map(|i| {
                    if i < n / 2 {
                        0.0
                    } else {
                        let e = (rnd() * 300.0).floor() * 0.37;
                        (e * 0.8) * (e * 0.8)
                    }
                })
                .collect(),
        ));
        cases.push((
            format!("subnormal then large {n}"),
            (0..n)
                .map(|i| {
                    if i < n / 3 {
                        f32::from_bits(1 + (i as u32 % 7))
                    } else if i % 1000 == 0 {
                        1e6 * rnd()
                    } else {
                        rnd() * 1e-3
                    }
                })
                .collect(),
        ));
        cases.push((
            format!("powers of two {n}"),
            (0..n)
                .map(|i| f32::from_bits(((100 + (i * 7) % 60) as u32) << 23))
                .collect(),
        ));
        cases.push((
            format!("rising {n}"),
            (0..n).map(|i| (i as f32).sqrt() * rnd()).collect(),
        ));
    }
    // 600 000 terms (293 chunks: jumps over more than a block's 256 chunks at once) for three
    // kinds only, to keep the emulation short.
    cases.retain(|(name, x)| {
        x.len() < 100_000
            || ["uniform", "zeros", "rising"]
                .iter()
                .any(|k| name.starts_with(k))
    });
    let mut bad = Vec::new();
    for trio in cases.chunks(3) {
        let mut a = 0usize;
        let mut take = |bytes: usize| {
            let off = a.next_multiple_of(256);
            a = off + bytes.max(1);
            Region { off, bytes }
        };
        let mut uploads = Vec::new();
        let mut planes = Vec::new();
        for (_, x) in trio {
            let n = x.len();
            let t = take(4 * n);
            let w = take(hvs_work_bytes(n));
            uploads.push((t, x.iter().flat_map(|v| v.to_le_bytes()).collect()));
            planes.push((t, w, n));
        }
        // A third plane where the trio has two: run the first again.
        while planes.len() < 3 {
            planes.push(planes[0]);
        }
        let out = take(24);
        let mut launches = Vec::new();
        for kernel in [
            Kernel::HvsChunkSums,
            Kernel::HvsPrefix,
            Kernel::HvsChunkBands,
        ] {
            for &(t, w, n) in &planes {
                launches.push(launch_hvs_chunk(kernel, t, n, w));
            }
        }
        let trio_planes: [(Region, Region, usize); 3] =
            planes.clone().try_into().expect("cases come in threes");
        launches.push(launch_hvs_seq(trio_planes, out));
        let arena = emulate(exe, a, &[], &uploads, &launches);
        let f = |i: usize| {
            f32::from_le_bytes(
                arena[out.off + 4 * i..out.off + 4 * i + 4]
                    .try_into()
                    .unwrap(),
            )
        };
        for (p, (name, x)) in trio.iter().enumerate() {
            // The prefix sums that place each chunk's binades (a guide: checked loosely).
            let (_, w, n) = planes[p];
            let nch = n.div_ceil(CHUNK);
            let word = |i: usize| {
                f64::from_le_bytes(arena[w.off + 8 * i..w.off + 8 * i + 8].try_into().unwrap())
            };
            let mut pre = 0f64;
            for c in 0..nch {
                let got = word(nch + c);
                if (got - pre).abs() > 1e-9 * pre.abs() {
                    bad.push(format!(
                        "{name}: prefix of chunk {c}: {got:e}, want {pre:e}"
                    ));
                    break;
                }
                pre += x[c * CHUNK..((c + 1) * CHUNK).min(n)]
                    .iter()
                    .map(|&v| f64::from(v))
                    .sum::<f64>();
            }
            let mut want = 0f32;
            for &v in x {
                want += v;
            }
            let (got, valid) = (f(2 * p), f(2 * p + 1));
            if valid != 1.0 || got.to_bits() != want.to_bits() {
                bad.push(format!(
                    "{name}: sequential {want:e}, GPU {got:e} (valid {valid})"
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} sums differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// `ssim_hconv` widens the r*d products on the integer pipe and takes the conversion
/// instruction again for an output with a subnormal, infinite or NaN product: every kind of
/// product, against the C code's horizontal pass (float products widened to double, added from
/// 0.0 in tap order, rounded to float).
#[test]
fn hconv_widens_every_kind_of_product_as_the_c_code() {
    let Some(exe) = emulator() else { return };
    // iqa/ssim_tools.h g_gaussian_window_h.
    const G: [f32; 11] = [
        0.001028, 0.007599, 0.036001, 0.109361, 0.213006, 0.266012, 0.213006, 0.109361, 0.036001,
        0.007599, 0.001028,
    ];
    let (w, h) = (40usize, 6usize);
    let dw = w - 10;
    // Row by row: ordinary samples; zeros and negatives; products below the normal range (and
    // some that underflow to zero); products that overflow to infinity; NaN; a mix.
    let value = |y: usize, x: usize, which: u32| -> f32 {
        let s = (x as f32 + 1.0) * if which == 0 { 1.0 } else { 0.75 };
        match y {
            0 => s * 3.1,
            1 => [0.0, -0.0, -s, s][x % 4],
            2 => [1e-20, 3e-21, -2e-22, 1e-19, 5.0][x % 5],
            3 => [3e38, -2e30, 7.0, 1e10][x % 4],
            4 => [f32::NAN, 1.0, 2.0][x % 3],
            _ => [1e-20, 0.0, 2.5e19, -1.5, 1e-30, 4e-39][x % 6],
        }
    };
    let r: Vec<f32> = (0..h * w).map(|i| value(i / w, i % w, 0)).collect();
    let d: Vec<f32> = (0..h * w).map(|i| value(i / w, i % w, 1)).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let rr = Region {
        off: 0,
        bytes: 4 * w * h,
    };
    let dr = Region {
        off: 4 * w * h,
        bytes: 4 * w * h,
    };
    let out = Region {
        off: 8 * w * h,
        bytes: 4 * 5 * dw * h,
    };
    let arena = out.off + out.bytes;
    let launch = Launch {
        kernel: Kernel::SsimHconv,
        grid: ((dw * h).div_ceil(256) as u32, 1),
        args: vec![
            KArg::Ptr(rr),
            KArg::Ptr(dr),
            KArg::I32(w as i32),
            KArg::I32(h as i32),
            KArg::Ptr(out),
        ],
        metric: "ssim",
    };
    let got = emulate(
        exe,
        arena,
        &[],
        &[(rr, bytes(&r)), (dr, bytes(&d))],
        &[launch],
    );
    let mut bad = Vec::new();
    let mut kinds = [0usize; 4]; // zero, subnormal, infinite, NaN products seen
    for y in 0..h {
        for x in 0..dw {
            for (q, name) in ["r", "d", "r*r", "d*d", "r*d"].iter().enumerate() {
                let mut sum = 0.0f64;
                for (u, &k) in G.iter().enumerate() {
                    let (p, s) = (r[y * w + x + u], d[y * w + x + u]);
                    let m = [p, s, p * p, s * s, p * s][q];
                    let prod = m * k;
                    if q == 4 {
                        let c = prod.classify();
                        let i = [
                            std::num::FpCategory::Zero,
                            std::num::FpCategory::Subnormal,
                            std::num::FpCategory::Infinite,
                            std::num::FpCategory::Nan,
                        ]
                        .iter()
                        .position(|&k| k == c);
                        if let Some(i) = i {
                            kinds[i] += 1;
                        }
                    }
                    sum += f64::from(prod);
                }
                let want = sum as f32;
                let at = out.off + 4 * (q * dw * h + y * dw + x);
                let g = f32::from_le_bytes(got[at..at + 4].try_into().unwrap());
                if g.to_bits() != want.to_bits() && !(g.is_nan() && want.is_nan()) {
                    bad.push(format!("({x}, {y}) {name}: kernel {g:e}, C code {want:e}"));
                }
            }
        }
    }
    eprintln!(
        "hconv: r*d products zero {}, subnormal {}, infinite {}, NaN {}",
        kinds[0], kinds[1], kinds[2], kinds[3]
    );
    assert!(
        kinds.iter().all(|&k| k > 0),
        "every kind of product: {kinds:?}"
    );
    assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
}

/// A CAMBI job of `p`'s options on the distorted plane `d` (the reference is a copy).
fn cambi_job(d: gstvmafgpu::picture::OwnedPlane, p: CambiParams, seed: u64) -> Job {
    let r = d.clone();
    Job::with_companions(
        gpu_content::job(seed, r, d, None),
        Companions {
            cambi: Some(p),
            ..Default::default()
        },
    )
}

/// The plan of a CAMBI job in the emulator: the scores and the device's per-scale sums.
fn run_cambi(
    exe: &Path,
    job: &Job,
    host_sums: bool,
) -> (
    gstvmafgpu::Result<CompanionScores>,
    Option<[(u64, u64); cambi::NUM_SCALES]>,
) {
    let mut plan = CompanionPlan::new(CompanionGeometry::of(&job.cfg.companions, job).unwrap());
    plan.host_sums = host_sums;
    let uploads = plan_uploads(&plan, job);
    let arena = run_plan(exe, &plan, &uploads);
    let rb = &arena[plan.readback.off..plan.readback.off + plan.readback.bytes];
    let fetch = |r: Region| -> gstvmafgpu::Result<Vec<u8>> {
        assert!(
            r.off >= plan.results.off && r.off + r.bytes <= plan.results.off + plan.results.bytes
        );
        Ok(arena[r.off..r.off + r.bytes].to_vec())
    };
    (plan.scores(job, rb, &fetch), plan.cambi_sums(rb))
}

/// libvmaf's defaults, the v1 models' options, and options with `enc_*` set.
fn cambi_options() -> Vec<(&'static str, CambiParams)> {
    let v1 = CambiParams {
        high_res_speedup: 1080,
        max_val: 17.0,
        vis_lum_threshold: 0.06,
        ..Default::default()
    };
    vec![
        ("default", CambiParams::default()),
        ("v1", v1),
        (
            "v1 encbd 8",
            CambiParams {
                enc_bitdepth: 8,
                ..v1
            },
        ),
        (
            "enc 200x180 encbd 8 ws 63 topk 0.1 mlc 3",
            CambiParams {
                enc_width: 200,
                enc_height: 180,
                enc_bitdepth: 8,
                window_size: 63,
                topk: 0.1,
                max_log_contrast: 3,
                ..Default::default()
            },
        ),
    ]
}

/// Emulated CAMBI == the CPU reference: the score (`==` on f64 bits) and, per scale, the
/// c-values' sum in units of 2^-24 and the non-zero count; for the banded content with the
/// fallback to libvmaf's order forced too (`host_sums`: every scale from the device's c-values
/// by quick_select). `contents`: also every content of gpu_content; `options`: the
/// [`cambi_options`] to run (all when empty). The emulator is slow (a thread per GPU thread):
/// the large sizes run few cases.
fn cambi_compare(cases: &[(usize, usize, u8)], contents: bool, options: &[&str]) {
    let Some(exe) = emulator() else { return };
    let mut bad = Vec::new();
    let (mut n, mut scored, mut nonzero) = (0, 0, 0);
    let mut seed = 400;
    for &(w, h, bpc) in cases {
        let mut planes = vec![("banded", gpu_content::banded(w, h, bpc, seed))];
        if contents {
            for c in gpu_content::ALL {
                seed += 1;
                let (_, d, _) = gpu_content::frames(c, w, h, bpc, seed);
                planes.push((
                    match c {
                        gpu_content::Content::Random => "random",
                        gpu_content::Content::Flat => "flat",
                        gpu_content::Content::Max => "max",
                        gpu_content::Content::MaxDiff => "max-diff",
                        gpu_content::Content::Checker => "checker",
                        gpu_content::Content::Natural => "natural",
                    },
                    d,
                ));
            }
        }
        for (cname, d) in planes {
            for (oname, p) in cambi_options() {
                if !options.is_empty() && !options.contains(&oname) {
                    continue;
                }
                seed += 1;
                let j = cambi_job(d.clone(), p, seed);
                let want = compute_companions_cpu(&j.cfg.companions, &j)
                    .map(|s| s.cambi.map(f64::to_bits));
                let cpu = cambi::Cambi::new(&p, w, h, bpc);
                let want_sums = cpu.as_ref().ok().map(|c| c.scale_sums(&d.view()).unwrap());
                for host_sums in [false, true] {
                    if host_sums && cname != "banded" {
                        continue;
                    }
                    let (got, sums) = run_cambi(exe, &j, host_sums);
                    let got = got.map(|s| s.cambi.map(f64::to_bits));
                    n += 1;
                    let what =
                        format!("{cname} {w}x{h} {bpc}-bit {oname} (host order {host_sums})");
                    match (&want, &got) {
                        (Ok(a), Ok(b)) if a == b => {
                            scored += 1;
                            nonzero += usize::from(a.is_some_and(|v| f64::from_bits(v) > 0.0));
                        }
                        (Err(a), Err(b)) if a.to_string() == b.to_string() => {}
                        _ => bad.push(format!("{what}: cpu {want:?}, emu {got:?}")),
                    }
                    if sums != want_sums {
                        bad.push(format!("{what}: sums cpu {want_sums:?}, emu {sums:?}"));
                    }
                }
            }
        }
    }
    if !bad.is_empty() {
        panic!(
            "{} of {n} CAMBI frames differ:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
    eprintln!("{n} CAMBI frames: emulated == CPU ({scored} scored, {nonzero} with banding)");
    assert!(
        scored > 0 && nonzero > 0,
        "no frame with banding was compared"
    );
}

#[test]
fn cambi_equals_cpu_every_content() {
    // The minimum size (216x216), every content and set of options.
    cambi_compare(&[(216, 216, 8)], true, &[]);
}

#[test]
fn cambi_equals_cpu_odd_sizes_and_depths() {
    // One dimension at the minimum, odd sizes, 9 to 16 bits.
    cambi_compare(
        &[
            (216, 150, 10),
            (217, 221, 12),
            (233, 216, 16),
            (301, 219, 9),
        ],
        false,
        &[],
    );
}

#[test]
fn cambi_equals_cpu_360p() {
    cambi_compare(&[(640, 360, 8), (641, 359, 10)], false, &["default", "v1"]);
}

#[test]
fn cambi_equals_cpu_720p_and_1080p() {
    // 1080p: the v1 options' speed-up (scale 0 at 960x540).
    cambi_compare(&[(1280, 720, 10), (1920, 1080, 8)], false, &["v1"]);
}

// ---------------------------------------------------------------------------------------------
// SpEED chroma (kernels/speed.cu): the four sides' statistics (operating image, 25 means, 625
// covariances) bit for bit, and the scores (or the refusal) equal to the CPU's.

use gstvmafgpu::backend::speed_chroma_extractor;
use gstvmafgpu::features::speed::{PrescaleMethod, SpeedChromaParams, SpeedSide};

/// VMAF v1's speed_chroma options (model/vmaf_v1.0.16*: nnf 0.1, snn 0.19, wvm 5, mxv 45) with
/// a prescale.
fn v1_speed(prescale: f64, method: PrescaleMethod) -> SpeedChromaParams {
    SpeedChromaParams {
        kernelscale: 1.0,
        prescale,
        prescale_method: method,
        sigma_nn: 0.19,
        nn_floor: 0.1,
        max_val: 45.0,
        weight_var_mode: 5,
    }
}

fn speed_only(p: SpeedChromaParams) -> Companions {
    Companions {
        speed_chroma: Some(p),
        ..Default::default()
    }
}

/// The plan of `job` in the emulator: its scores and SpEED chroma's sides.
fn run_speed(
    exe: &Path,
    job: &Job,
) -> (gstvmafgpu::Result<CompanionScores>, Option<[SpeedSide; 4]>) {
    let plan = match CompanionGeometry::of(&job.cfg.companions, job) {
        Ok(g) => CompanionPlan::new(g),
        Err(e) => return (Err(e), None),
    };
    let uploads = plan_uploads(&plan, job);
    let arena = run_plan(exe, &plan, &uploads);
    let rb = &arena[plan.readback.off..plan.readback.off + plan.readback.bytes];
    let fetch = |r: Region| -> gstvmafgpu::Result<Vec<u8>> {
        panic!("SpEED chroma fetched {r:?}: its statistics are all read back")
    };
    (plan.scores(job, rb, &fetch), plan.speed_chroma_sides(rb))
}

/// The differences between two sets of sides, bit for bit (NaN payloads included).
fn side_diffs(want: &[SpeedSide], got: &[SpeedSide], names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    assert_eq!((want.len(), got.len()), (names.len(), names.len()));
    for (k, (a, b)) in want.iter().zip(got).enumerate() {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (what, x, y) in [
            ("image", &a.image[..], &b.image[..]),
            ("means", &a.means[..], &b.means[..]),
            ("cov", &a.cov[..], &b.cov[..]),
        ] {
            if bits(x) != bits(y) {
                let first = x
                    .iter()
                    .zip(y)
                    .position(|(p, q)| p.to_bits() != q.to_bits())
                    .unwrap_or(x.len().min(y.len()));
                out.push(format!(
                    "{}: {what} differs first at {first} of {} ({:?} vs {:?})",
                    names[k],
                    x.len(),
                    x.get(first),
                    y.get(first)
                ));
            }
        }
    }
    out
}

/// Counts of what [`compare_speed`] saw: frames, refusals, frames with a singular side (a
/// score of 0 for a channel), frames with every channel regular.
#[derive(Default, Debug)]
struct SpeedSeen {
    frames: usize,
    refused: usize,
    zero: usize,
    nonzero: usize,
}

/// One SpEED case: width, height, depth, chroma layout, content, options.
type SpeedCase = (
    usize,
    usize,
    u8,
    Option<(u32, u32)>,
    Content,
    SpeedChromaParams,
);

/// Each case through the emulated plan against the CPU: the sides bit for bit, the scores (or
/// the error) equal.
fn compare_speed(cases: &[SpeedCase]) -> Option<SpeedSeen> {
    let exe = emulator()?;
    let mut bad = Vec::new();
    let mut seen = SpeedSeen::default();
    for (i, &(w, h, bpc, layout, c, p)) in cases.iter().enumerate() {
        let j = job(c, w, h, bpc, layout, speed_only(p), 9100 + i as u64);
        let want = compute_companions_cpu(&j.cfg.companions, &j);
        let (got, sides) = run_speed(exe, &j);
        seen.frames += 1;
        let what = format!(
            "{c:?} {w}x{h} {bpc}-bit {layout:?} ps {} {:?} ks {}",
            p.prescale, p.prescale_method, p.kernelscale
        );
        match &want {
            Err(e) => {
                eprintln!("{what}: refused: {e}");
                seen.refused += 1;
            }
            Ok(s) => {
                let s = s.speed_chroma.expect("asked for");
                if s.u == 0.0 || s.v == 0.0 {
                    seen.zero += 1;
                } else {
                    seen.nonzero += 1;
                }
                let (r, d) = (
                    gstvmafgpu::backend::job_planes(&j, false),
                    gstvmafgpu::backend::job_planes(&j, true),
                );
                let cpu = speed_chroma_extractor(&p, &r)
                    .unwrap()
                    .sides(&r[1], &r[2], &d[1], &d[2])
                    .unwrap();
                match &sides {
                    Some(g) => {
                        for e in side_diffs(&cpu, g, &["ref U", "dis U", "ref V", "dis V"]) {
                            bad.push(format!("{what}: {e}"));
                        }
                    }
                    None => bad.push(format!("{what}: no GPU statistics")),
                }
            }
        }
        if !same_scores(&want, &got, w, h) {
            bad.push(format!("{what}:\n  cpu {want:?}\n  emu {got:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} differences in {} frames:\n{}",
        bad.len(),
        seen.frames,
        bad.join("\n")
    );
    eprintln!("SpEED chroma: emulated == CPU: {seen:?}");
    Some(seen)
}

const YUV420: Option<(u32, u32)> = Some((1, 1));

/// The frame sizes of vmaf-v1.md's table (4:2:0) with the v1 models' three prescales: the
/// refusals ("image too small", libvmaf crashes), the singular sides (score 0) and the regular
/// ones are the CPU's.
#[test]
fn speed_chroma_equals_cpu_at_the_table_sizes() {
    let mut cases = Vec::new();
    for (w, h) in [
        (176, 144),
        (320, 180),
        (352, 288),
        (640, 272),
        (640, 360),
        (1280, 720),
    ] {
        for p in [
            v1_speed(1.0, PrescaleMethod::Nearest),
            v1_speed(0.5, PrescaleMethod::Bilinear),
            v1_speed(0.6, PrescaleMethod::Bilinear),
        ] {
            cases.push((w, h, 10, YUV420, Content::Natural, p));
        }
    }
    // Gray: refused, as the host route refuses it.
    cases.push((
        640,
        360,
        8,
        None,
        Content::Natural,
        v1_speed(1.0, PrescaleMethod::Nearest),
    ));
    let Some(seen) = compare_speed(&cases) else {
        return;
    };
    // 176x144 (3), 320x180, 352x288 and 640x272 at 0.5 (3), 320x180 at 0.6, gray.
    assert_eq!(seen.refused, 8, "{seen:?}");
    assert!(seen.zero >= 5 && seen.nonzero >= 3, "{seen:?}");
}

/// 8/10/12/16 bits, 4:2:0/4:2:2/4:4:4, every content, at 640x360 without prescale and at
/// 1280x720 with the 2160 models' bilinear 0.5.
#[test]
fn speed_chroma_equals_cpu_depths_layouts_contents() {
    let mut cases = Vec::new();
    for &(_, layout) in &LAYOUTS[..3] {
        for bpc in [8, 10, 12, 16] {
            for c in gpu_content::ALL {
                cases.push((
                    640,
                    360,
                    bpc,
                    layout,
                    c,
                    v1_speed(1.0, PrescaleMethod::Nearest),
                ));
            }
        }
        for c in gpu_content::ALL {
            cases.push((
                1280,
                720,
                10,
                layout,
                c,
                v1_speed(0.5, PrescaleMethod::Bilinear),
            ));
        }
    }
    let Some(seen) = compare_speed(&cases) else {
        return;
    };
    assert_eq!(seen.refused, 0, "{seen:?}");
    assert!(seen.nonzero >= 20, "{seen:?}");
}

/// Every prescale method (nearest, bilinear, bicubic, lanczos4) down and up, libvmaf's default
/// options, and other kernel scales (5, 17 and 27 taps); one 1920x1080 frame with the 5d0h model's
/// options.
#[test]
fn speed_chroma_equals_cpu_prescale_methods_and_kernel_scales() {
    let mut cases = Vec::new();
    for method in [
        PrescaleMethod::Nearest,
        PrescaleMethod::Bilinear,
        PrescaleMethod::Bicubic,
        PrescaleMethod::Lanczos4,
    ] {
        for (ps, c) in [(0.6, Content::Natural), (0.5, Content::Random)] {
            cases.push((1280, 720, 10, YUV420, c, v1_speed(ps, method)));
        }
        // Up (the plane 640x360 to 800x450).
        cases.push((
            1280,
            720,
            8,
            YUV420,
            Content::Natural,
            v1_speed(1.25, method),
        ));
    }
    for ks in [0.5, 2.0, 3.0] {
        let p = SpeedChromaParams {
            kernelscale: ks,
            ..SpeedChromaParams::default()
        };
        cases.push((1280, 720, 8, Some((0, 0)), Content::Natural, p));
    }
    cases.push((
        1280,
        720,
        12,
        Some((1, 0)),
        Content::Checker,
        SpeedChromaParams::default(),
    ));
    cases.push((
        1920,
        1080,
        10,
        YUV420,
        Content::Natural,
        v1_speed(0.6, PrescaleMethod::Bilinear),
    ));
    let Some(seen) = compare_speed(&cases) else {
        return;
    };
    assert_eq!(seen.refused, 0, "{seen:?}");
    assert!(seen.nonzero >= 12, "{seen:?}");
}

// SpEED temporal (kernels/speed.cu `speed_load_diff`, then SpEED's filters and statistics): the
// two sides' statistics bit for bit and the score (or the refusal) equal to the CPU's, with the
// previous frame's planes as the job's inputs; 0 without them (a clip's first frame).

use gstvmafgpu::features::speed::{SpeedTemporal, SpeedTemporalParams};

/// One SpEED temporal case: width, height, depth, the previous frame's content (`None`: the
/// clip's first frame), this frame's content, options.
type TemporalCase = (
    usize,
    usize,
    u8,
    Option<Content>,
    Content,
    SpeedTemporalParams,
);

/// A job asking for SpEED temporal with `p`, with the previous frame's luma of `prev` content.
fn temporal_job((w, h, bpc, prev, c, p): TemporalCase, seed: u64) -> Job {
    let companions = Companions {
        speed_temporal: Some(p),
        ..Default::default()
    };
    let mut j = job(c, w, h, bpc, None, companions, seed);
    if let Some(pc) = prev {
        let (pr, pd, _) = gpu_content::frames(pc, w, h, bpc, seed ^ 0x3c3c);
        j.previous = Some((Arc::new(pr), Arc::new(pd)));
    }
    j
}

/// Counts of what [`compare_temporal`] saw.
#[derive(Default, Debug)]
struct TemporalSeen {
    frames: usize,
    refused: usize,
    first: usize,
    zero: usize,
    nonzero: usize,
}

/// Each case through the emulated plan against the CPU.
fn compare_temporal(cases: &[TemporalCase]) -> Option<TemporalSeen> {
    let exe = emulator()?;
    let mut bad = Vec::new();
    let mut seen = TemporalSeen::default();
    for (i, &case) in cases.iter().enumerate() {
        let (w, h, bpc, prev, c, p) = case;
        let j = temporal_job(case, 9300 + i as u64);
        let want = compute_companions_cpu(&j.cfg.companions, &j);
        let what = format!(
            "{prev:?} -> {c:?} {w}x{h} {bpc}-bit ps {} {:?} ks {} urd {}",
            p.prescale, p.prescale_method, p.kernelscale, p.use_ref_diff
        );
        seen.frames += 1;
        let plan = match CompanionGeometry::of(&j.cfg.companions, &j) {
            Ok(g) => CompanionPlan::new(g),
            Err(e) => {
                bad.push(format!("{what}: no plan: {e}"));
                continue;
            }
        };
        let uploads = plan_uploads(&plan, &j);
        let arena = run_plan(exe, &plan, &uploads);
        let rb = &arena[plan.readback.off..plan.readback.off + plan.readback.bytes];
        let fetch = |r: Region| -> gstvmafgpu::Result<Vec<u8>> {
            panic!("SpEED temporal fetched {r:?}: its statistics are all read back")
        };
        let got = plan.scores(&j, rb, &fetch);
        match &want {
            Err(e) => {
                eprintln!("{what}: refused: {e}");
                seen.refused += 1;
            }
            Ok(s) => {
                let v = s.speed_temporal.expect("asked for");
                match (&j.previous, v == 0.0) {
                    (None, _) => seen.first += 1,
                    (Some(_), true) => seen.zero += 1,
                    (Some(_), false) => seen.nonzero += 1,
                }
                if let Some((pr, pd)) = &j.previous {
                    let cpu = SpeedTemporal::new(&p, w, h, bpc)
                        .unwrap()
                        .sides(
                            (&pr.view(), &pd.view()),
                            &j.reference.view(),
                            &j.distorted.view(),
                        )
                        .unwrap();
                    match plan.speed_temporal_sides(rb) {
                        Some(g) => {
                            for e in side_diffs(&cpu, &g, &["ref", "dis"]) {
                                bad.push(format!("{what}: {e}"));
                            }
                        }
                        None => bad.push(format!("{what}: no GPU statistics")),
                    }
                }
            }
        }
        if !same_scores(&want, &got, w, h) {
            bad.push(format!("{what}:\n  cpu {want:?}\n  emu {got:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} differences in {} frames:\n{}",
        bad.len(),
        seen.frames,
        bad.join("\n")
    );
    eprintln!("SpEED temporal: emulated == CPU: {seen:?}");
    Some(seen)
}

fn temporal(prescale: f64, method: PrescaleMethod, use_ref_diff: bool) -> SpeedTemporalParams {
    SpeedTemporalParams {
        prescale,
        prescale_method: method,
        use_ref_diff,
        ..SpeedTemporalParams::default()
    }
}

/// Every depth and content, both differences (`speed_use_ref_diff`), the first frame (0), odd
/// and tiny sizes (the refusals are the CPU's), extreme differences (a maximal frame after its
/// opposite).
#[test]
fn speed_temporal_equals_cpu_depths_contents_sizes() {
    let mut cases: Vec<TemporalCase> = Vec::new();
    let d = SpeedTemporalParams::default();
    for bpc in [8, 10, 12, 16] {
        for c in gpu_content::ALL {
            cases.push((320, 180, bpc, Some(c), c, d));
        }
    }
    for c in [Content::Natural, Content::Random] {
        cases.push((
            320,
            180,
            10,
            Some(c),
            c,
            temporal(1.0, PrescaleMethod::Nearest, true),
        ));
    }
    cases.push((640, 360, 8, Some(Content::Max), Content::MaxDiff, d));
    cases.push((640, 360, 16, Some(Content::MaxDiff), Content::Checker, d));
    cases.push((640, 360, 10, None, Content::Natural, d));
    for (w, h) in [(641, 359), (176, 144), (81, 83), (33, 33), (1280, 720)] {
        cases.push((w, h, 10, Some(Content::Natural), Content::Natural, d));
    }
    let Some(seen) = compare_temporal(&cases) else {
        return;
    };
    // 33x33 is refused (an operating size of 2x2).
    assert_eq!((seen.first, seen.refused), (1, 1), "{seen:?}");
    assert!(seen.nonzero >= 12, "{seen:?}");
}

/// Every prescale method down (libvmaf refuses a taller frame), other kernel scales (5, 17 and 27
/// taps). (1080p and larger: tests/companion_parity.rs on the GPU.)
#[test]
fn speed_temporal_equals_cpu_prescale_methods_and_kernel_scales() {
    let mut cases: Vec<TemporalCase> = Vec::new();
    let n = (Some(Content::Natural), Content::Natural);
    for method in [
        PrescaleMethod::Nearest,
        PrescaleMethod::Bilinear,
        PrescaleMethod::Bicubic,
        PrescaleMethod::Lanczos4,
    ] {
        for ps in [0.5, 0.6] {
            cases.push((640, 360, 10, n.0, n.1, temporal(ps, method, false)));
        }
    }
    // Taller: refused, as on the CPU.
    cases.push((
        640,
        360,
        8,
        n.0,
        n.1,
        temporal(1.25, PrescaleMethod::Bilinear, false),
    ));
    for ks in [0.5, 2.0, 3.0] {
        let p = SpeedTemporalParams {
            kernelscale: ks,
            ..SpeedTemporalParams::default()
        };
        cases.push((320, 180, 8, n.0, n.1, p));
    }
    let Some(seen) = compare_temporal(&cases) else {
        return;
    };
    assert_eq!(seen.refused, 1, "{seen:?}");
    assert!(seen.nonzero >= 9, "{seen:?}");
}
