//! The CUDA kernel text, run on the CPU (tests/emu/kernel_emu.cpp: C++ with a thread per GPU
//! thread and a barrier for __syncthreads), against the CPU reference: the accumulators must be
//! equal. This checks the kernels' arithmetic and the frame plan (launch list, arguments, row
//! rounding table) on machines without a GPU; tests/cuda_parity.rs checks the real thing.
//!
//! Needs a C++20 compiler (`g++`, or `$CXX`); without one it prints why and passes, unless
//! VMAFGPU_REQUIRE_EMU=1.
#![cfg(feature = "cuda")]

mod gpu_content;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use gpu_content::Content;
use gstvmafgpu::backend::gpu::kernels::{FinalizeEntry, struct_bytes};
use gstvmafgpu::backend::gpu::plan::{self, Arg, SlotBuf, VmafPlan};
use gstvmafgpu::backend::{ClipConfig, FrameAccum, FrameJob, compute_job_cpu};
use gstvmafgpu::features::adm::{AdmConstants, AdmParams};
use gstvmafgpu::features::vif::VifParams;

fn emulator() -> Option<&'static Path> {
    static EXE: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXE.get_or_init(|| {
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emu/kernel_emu.cpp");
        let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("vmafgpu_kernel_emu");
        let out = Command::new(&cxx)
            .args([
                "-std=c++20",
                "-O2",
                "-ffp-contract=off",
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
                "{cxx} failed to compile the kernel emulator:\n{}",
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

fn buf_id(b: SlotBuf) -> u32 {
    match b {
        SlotBuf::Ref => 0,
        SlotBuf::Dis => 1,
        SlotBuf::Prev => 2,
        SlotBuf::VifRef(s) => 10 + s as u32,
        SlotBuf::VifDis(s) => 20 + s as u32,
        SlotBuf::AdmRef(s) => 30 + s as u32,
        SlotBuf::AdmDis(s) => 40 + s as u32,
        SlotBuf::RBuf => 50,
        SlotBuf::Acc => 51,
        SlotBuf::Log2 => 52,
        SlotBuf::DivLookup => 53,
        SlotBuf::Finalize => 54,
    }
}

fn plane_bytes(p: &gstvmafgpu::picture::OwnedPlane) -> Vec<u8> {
    if p.bpc == 8 {
        p.data.iter().map(|&v| v as u8).collect()
    } else {
        p.data.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

/// A 9- to 15-bit plane as an MSB-aligned format stores it (P010): each sample `16 - bpc`
/// bits up in its word, the bits below it from a hash of its position.
fn msb_bytes(p: &gstvmafgpu::picture::OwnedPlane) -> Vec<u8> {
    let up = 16 - u32::from(p.bpc);
    p.data
        .iter()
        .enumerate()
        .flat_map(|(i, &v)| {
            let low = ((i as u32).wrapping_mul(2654435761) >> (32 - up)) as u16;
            ((v << up) | low).to_le_bytes()
        })
        .collect()
}

/// Run one job's plan, built with `cfg`'s parameters, in the emulator (with `range_only`, only
/// its range check). With `msb` (9- to 15-bit jobs), its planes are stored MSB-aligned
/// ([`msb_bytes`]) and the plan's shift launches run first, as the backend runs them after
/// uploading such planes.
fn run_plan(
    exe: &Path,
    cfg: &ClipConfig,
    job: &FrameJob,
    range_only: bool,
    msb: bool,
) -> (FrameAccum, u64) {
    let r = &job.reference;
    let consts = AdmConstants::new(&cfg.adm);
    let p = VmafPlan::new(r.width, r.height, r.bpc, cfg.vif.enhn_gain_limit, &consts);
    let bytes_of = |x: &gstvmafgpu::picture::OwnedPlane| {
        if msb { msb_bytes(x) } else { plane_bytes(x) }
    };
    let mut input = Vec::new();
    let u32le = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
    let u64le = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_le_bytes());
    u32le(&mut input, p.bufs.len() as u32);
    for &(b, bytes) in &p.bufs {
        let data: Option<Vec<u8>> = match b {
            SlotBuf::Ref => Some(bytes_of(&job.reference)),
            SlotBuf::Dis => Some(bytes_of(&job.distorted)),
            SlotBuf::Prev => job.prev_ref.as_ref().map(|x| bytes_of(x)),
            SlotBuf::Log2 => Some(
                gstvmafgpu::features::vif::log2_table()
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            SlotBuf::DivLookup => Some(
                gstvmafgpu::features::adm::div_lookup()
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            SlotBuf::Finalize => Some(
                p.finalize
                    .iter()
                    .flat_map(|e: &FinalizeEntry| e.to_bytes())
                    .collect(),
            ),
            // The GPU zeroes the results and row sums every frame.
            SlotBuf::Acc => Some(vec![0u8; bytes]),
            _ => None,
        };
        u32le(&mut input, buf_id(b));
        u64le(&mut input, bytes as u64);
        match data {
            Some(d) => {
                assert_eq!(d.len(), bytes, "{b:?}");
                input.push(1);
                input.extend_from_slice(&d);
            }
            None => input.push(0),
        }
    }
    let mut launches: Vec<&plan::VmafLaunch> = Vec::new();
    if msb {
        let shift = p.shift.as_ref().expect("shift launches for 9 to 15 bits");
        launches.extend(&shift[..if job.prev_ref.is_some() { 3 } else { 2 }]);
    }
    launches.extend(p.range.as_ref());
    if !range_only {
        if job.prev_ref.is_some() {
            launches.push(&p.motion);
        }
        launches.extend(p.launches.iter());
    }
    u32le(&mut input, launches.len() as u32);
    for l in launches {
        plan::check_signature(l).unwrap();
        let name = l.kernel.name();
        u32le(&mut input, name.len() as u32);
        input.extend_from_slice(name.as_bytes());
        u32le(&mut input, l.grid.0);
        u32le(&mut input, l.grid.1);
        u32le(&mut input, l.args.len() as u32);
        for a in &l.args {
            match a {
                Arg::Ptr(b, off) => {
                    input.push(0);
                    u32le(&mut input, buf_id(*b));
                    u64le(&mut input, *off as u64);
                }
                Arg::Null => input.push(1),
                Arg::Vif(v) => push_bytes(&mut input, struct_bytes(v)),
                Arg::Adm(v) => push_bytes(&mut input, struct_bytes(v)),
                Arg::Motion(v) => push_bytes(&mut input, struct_bytes(v)),
                Arg::Range(v) => push_bytes(&mut input, struct_bytes(v)),
                Arg::Shift(v) => push_bytes(&mut input, struct_bytes(v)),
            }
        }
    }
    u32le(&mut input, buf_id(SlotBuf::Acc));
    u64le(&mut input, (plan::slot::RESULTS * 8) as u64);

    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kernel emulator");
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kernel emulator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let words: Vec<u64> = out
        .stdout
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words.len(), plan::slot::RESULTS);
    (
        plan::accum_from_words(&words, job.features, job.prev_ref.is_some()),
        words[plan::slot::RANGE],
    )
}

fn push_bytes(v: &mut Vec<u8>, b: Vec<u8>) {
    v.push(2);
    v.extend_from_slice(&(b.len() as u32).to_le_bytes());
    v.extend_from_slice(&b);
}

fn compare(cases: &[(Content, usize, usize, u8, VifParams, AdmParams)]) {
    compare_stored(cases, false)
}

/// [`compare`], the planes stored MSB-aligned and shifted by the plan's shift launches where
/// `msb`.
fn compare_stored(cases: &[(Content, usize, usize, u8, VifParams, AdmParams)], msb: bool) {
    let Some(exe) = emulator() else { return };
    let mut bad = Vec::new();
    let mut n = 0;
    for (i, &(c, w, h, bpc, vif, adm)) in cases.iter().enumerate() {
        let (r, d, prev) = gpu_content::frames(c, w, h, bpc, 7 + i as u64);
        let cfg = gpu_content::config(vif, adm);
        let job = gpu_content::job(i as u64, r, d, Some(prev));
        let want = compute_job_cpu(&cfg, &job).expect("CPU reference");
        let (got, range) = run_plan(exe, &cfg, &job, false, msb);
        n += 1;
        if range != 0 {
            bad.push(format!(
                "{c:?} {w}x{h} {bpc}-bit: the range check flags in-range samples ({range})"
            ));
        }
        if got != want {
            bad.push(format!(
                "{c:?} {w}x{h} {bpc}-bit egl {}/{}:\n  cpu {want:?}\n  emu {got:?}",
                vif.enhn_gain_limit, adm.enhn_gain_limit
            ));
        }
    }
    assert!(n > 0);
    if !bad.is_empty() {
        panic!("{} of {n} frames differ:\n{}", bad.len(), bad.join("\n"));
    }
    eprintln!("{n} frames: emulated kernels == CPU reference");
}

#[test]
fn emulated_kernels_equal_cpu_small_sizes() {
    let v = VifParams::default();
    let a = AdmParams::default();
    let mut cases = Vec::new();
    for &(w, h) in &[(33, 33), (34, 35), (47, 61), (64, 36)] {
        for bpc in [8u8, 10, 12, 16] {
            for c in gpu_content::ALL {
                cases.push((c, w, h, bpc, v, a));
            }
        }
    }
    compare(&cases);
}

#[test]
fn emulated_kernels_equal_cpu_larger_and_options() {
    let v = VifParams::default();
    let a = AdmParams::default();
    let egl1v = VifParams {
        enhn_gain_limit: 1.0,
    };
    let egl1a = AdmParams {
        enhn_gain_limit: 1.0,
        ..AdmParams::default()
    };
    let rdh = AdmParams {
        ref_display_height: 2160,
        ..AdmParams::default()
    };
    let cases = vec![
        (Content::Natural, 177, 145, 8, v, a),
        (Content::Natural, 131, 97, 10, v, a),
        (Content::Random, 150, 66, 12, v, a),
        (Content::Natural, 96, 80, 16, v, a),
        (Content::Checker, 101, 77, 8, v, a),
        (Content::Natural, 120, 90, 8, egl1v, egl1a),
        (Content::Natural, 120, 90, 10, v, rdh),
    ];
    compare(&cases);
}

/// `adm_csf_mode` 2 (the v1.0.16 models' blended Barten-Watson CSF, with their other ADM
/// options): the plan built from the mode-2 `AdmConstants` (as the backend builds it) gives the
/// CPU's accumulators, for every table validation accepts, on content that drives the bands
/// hard (checkerboards, max-difference) and natural content, at several depths and odd sizes.
/// The mode-2 constants and the CPU's mode-2 accumulators differ from Watson's, so the case
/// tests the blend's constants, not Watson's again.
#[test]
fn emulated_kernels_equal_cpu_blend_csf() {
    let v = VifParams::default();
    let blend = |rdh: u32, nvd: f64| AdmParams {
        csf_mode: 2,
        norm_view_dist: nvd,
        ref_display_height: rdh,
        enhn_gain_limit: 1.0,
        noise_weight: 0.02,
        dlm_weight: 0.7,
        min_val: 0.5,
    };
    let pairs = [
        (1080, 3.0),
        (2160, 1.5),
        (1080, 5.0),
        (2160, 3.0),
        (2160, 5.0),
        (720, 5.0),
    ];
    let watson = AdmConstants::new(&AdmParams::default());
    for &(rdh, nvd) in &pairs {
        let p = blend(rdh, nvd);
        p.validate().expect("an accepted pair");
        let c = AdmConstants::new(&p);
        assert_ne!(
            (c.rfactor_s0, c.rfactor_s123),
            (watson.rfactor_s0, watson.rfactor_s123),
            "{rdh}@{nvd}"
        );
    }
    {
        let (r, d, prev) = gpu_content::frames(Content::Natural, 96, 80, 10, 3);
        let job = gpu_content::job(0, r, d, Some(prev));
        let cpu = |a| compute_job_cpu(&gpu_content::config(v, a), &job);
        let with_blend = cpu(blend(1080, 3.0)).expect("CPU");
        let with_watson = cpu(AdmParams {
            csf_mode: 0,
            ..blend(1080, 3.0)
        })
        .expect("CPU");
        assert_ne!(with_blend, with_watson);
    }
    let mut cases = Vec::new();
    for (k, &(rdh, nvd)) in pairs.iter().enumerate() {
        let (w, h, bpc) = [(65, 47, 10), (130, 97, 8), (33, 33, 16)][k % 3];
        for c in [
            Content::Natural,
            Content::Checker,
            Content::MaxDiff,
            Content::Random,
        ] {
            cases.push((c, w, h, bpc, v, blend(rdh, nvd)));
        }
    }
    cases.push((Content::Checker, 96, 80, 12, v, blend(1080, 3.0)));
    cases.push((Content::Natural, 177, 145, 16, v, blend(2160, 1.5)));
    compare(&cases);
}

/// MSB-aligned planes (P010 and the like, 9 to 15 bits `16 - bpc` up, anything below) shifted
/// in place by `shift_u16` (the plan's shift launches, which the CUDA backend runs after
/// uploading such planes as stored): every kernel's accumulators then equal the CPU's on the
/// plain samples, with the previous reference shifted too (motion), whatever `w * h % 4` (the
/// kernel's 4-word steps and its tail), and the range check finds nothing.
#[test]
fn emulated_shift_of_msb_aligned_planes_equals_cpu() {
    let v = VifParams::default();
    let a = AdmParams::default();
    let mut cases = Vec::new();
    for &(w, h) in &[(36, 33), (33, 33), (33, 34), (35, 33), (131, 97)] {
        for bpc in [9u8, 10, 12, 15] {
            for c in [Content::Natural, Content::Random, Content::Max] {
                cases.push((c, w, h, bpc, v, a));
            }
        }
    }
    compare_stored(&cases, true);
}

/// The range check (kernels/motion.cu `range_u16`, run before a zero-copy frame is taken) finds
/// one out-of-range sample wherever it is: first, last, in the 4-sample words or the tail, in
/// either plane; and passes planes at the largest value.
#[test]
fn emulated_range_check_finds_every_out_of_range_sample() {
    use gstvmafgpu::picture::OwnedPlane;
    let Some(exe) = emulator() else { return };
    let mut bad = Vec::new();
    let mut runs = 0;
    // w * h % 4 = 0, 1, 2, 3.
    for &(w, h) in &[(36, 33), (33, 33), (33, 34), (35, 33)] {
        for bpc in [9u8, 10, 12, 15] {
            let max = (1u16 << bpc) - 1;
            let n = w * h;
            let plane = |data: Vec<u16>| OwnedPlane {
                data,
                width: w,
                height: h,
                bpc,
            };
            let job = |r: Vec<u16>, d: Vec<u16>| gpu_content::job(0, plane(r), plane(d), None);
            let cfg = ClipConfig::default();
            let full = vec![max; n];
            let (_, word) = run_plan(exe, &cfg, &job(full.clone(), full.clone()), true, false);
            runs += 1;
            if word != 0 {
                bad.push(format!("{w}x{h} {bpc}-bit: planes at {max} flagged"));
            }
            for at in [0, 1, n / 2, n - 4, n - 3, n - 2, n - 1] {
                for (which, over) in [(0, max + 1), (1, max + 1), (0, u16::MAX), (1, 1 << 15)] {
                    let mut planes = [full.clone(), full.clone()];
                    planes[which][at] = over;
                    let [r, d] = planes;
                    let (_, word) = run_plan(exe, &cfg, &job(r, d), true, false);
                    runs += 1;
                    if word == 0 {
                        bad.push(format!(
                            "{w}x{h} {bpc}-bit: {over} at sample {at} of plane {which} not found"
                        ));
                    }
                }
            }
        }
    }
    if !bad.is_empty() {
        panic!(
            "{} of {runs} range checks wrong:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
    eprintln!("{runs} range checks: every out-of-range sample found, no false alarm");
}
