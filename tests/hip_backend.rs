//! The HIP backend without an AMD GPU, and with one where there is one.
//!
//! - `hiprtc_compiles_every_kernel`: the system's hipRTC (Debian 12: ROCm 5.2.3) compiles the
//!   kernel text through our binding, with our options, for gfx90a and gfx1030 (or
//!   `VMAFGPU_HIP_ARCHS`); each code object is checked to be an AMDGPU ELF for that architecture
//!   with every entry point. Skips without ROCm unless `VMAFGPU_REQUIRE_HIPRTC=1`
//!   (scripts/check-kernels-hip.sh sets it).
//! - `*_emulated_runtime*`: the whole backend against tests/hipemu/fake_hip.cpp, a CPU stand-in
//!   for the HIP runtime and hipRTC (lazy streams, poisoned memory, pointer checks, the kernels
//!   run as C++): the accumulators must equal the CPU reference's, through slot reuse, motion
//!   chaining, geometry changes with frames in flight, skipped features and reset; nothing may
//!   leak. Needs a C++20 compiler (`g++` or `$CXX`); without one it prints why and passes,
//!   unless VMAFGPU_REQUIRE_EMU=1.
//! - errors: no ROCm, ROCm without a GPU, a device ordinal out of range, an architecture the
//!   runtime's hipRTC cannot compile for; `backend=hip` then fails with a clear error and `auto`
//!   falls back.
//! - `hip_on_device_equals_cpu`: the same comparison on a real AMD GPU, when there is one
//!   (never, so far: it skips unless VMAFGPU_REQUIRE_AMD_GPU=1).
#![cfg(feature = "hip")]

mod gpu_content;

use std::ffi::{CString, c_char, c_int, c_long, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use gpu_content::{Content, Job};
use gstvmafgpu::backend::gpu::companion_plan::ciede_bound;
use gstvmafgpu::backend::hip::{self, HipBackend, ffi::Runtime};
use gstvmafgpu::backend::{
    Backend, ChromaPair, ClipConfig, Companions, FrameAccum, FrameJob, HostFrame, HostPlane,
    compute_job_cpu,
};
use gstvmafgpu::engine::{BackendKind, Scorer, ScorerConfig};
use gstvmafgpu::features::adm::AdmParams;
use gstvmafgpu::features::cambi::CambiParams;
use gstvmafgpu::features::speed::{PrescaleMethod, SpeedChromaParams};
use gstvmafgpu::features::vif::VifParams;
use gstvmafgpu::picture::OwnedPlane;

fn env_is(name: &str) -> bool {
    std::env::var(name).as_deref() == Ok("1")
}

// ---------------------------------------------------------------------------------------------
// The real hipRTC
// ---------------------------------------------------------------------------------------------

/// EF_AMDGPU_MACH_* (LLVM's ELF.h) of the architectures we check by default.
fn amdgpu_mach(arch: &str) -> Option<u32> {
    match arch.split(':').next()? {
        "gfx906" => Some(0x02f),
        "gfx908" => Some(0x030),
        "gfx90a" => Some(0x03f),
        "gfx1030" => Some(0x036),
        _ => None,
    }
}

#[test]
fn hiprtc_compiles_every_kernel() {
    let require = env_is("VMAFGPU_REQUIRE_HIPRTC");
    let rt = match Runtime::system() {
        Ok(rt) => rt,
        Err(e) => {
            assert!(!require, "VMAFGPU_REQUIRE_HIPRTC=1 but: {e}");
            eprintln!("hiprtc_compiles_every_kernel: skipped: {e}");
            return;
        }
    };
    if let Err(e) = rt.rtc() {
        assert!(!require, "VMAFGPU_REQUIRE_HIPRTC=1 but: {e}");
        eprintln!("hiprtc_compiles_every_kernel: skipped: {e}");
        return;
    }
    let version = rt
        .version()
        .expect("hipRuntimeGetVersion works without a device");
    let archs = std::env::var("VMAFGPU_HIP_ARCHS").unwrap_or_else(|_| "gfx90a gfx1030".into());
    let dump = std::env::var_os("VMAFGPU_HIP_CODE_DIR").map(PathBuf::from);
    let mut bad = Vec::new();
    let mut n = 0;
    for arch in archs.split_whitespace() {
        // An architecture this hipRTC would abort on is refused before the call.
        if let Err(e) = hip::check_arch(version, arch) {
            bad.push(format!("{arch}: {e}"));
            continue;
        }
        // Both kernel texts: VMAF's and the companion metrics'.
        let vmaf: Vec<&str> = gstvmafgpu::backend::gpu::plan::VmafKernel::ALL
            .iter()
            .map(|k| k.name())
            .collect();
        let companions: Vec<&str> = gstvmafgpu::backend::gpu::launch::Kernel::ALL
            .iter()
            .map(|k| k.name())
            .collect();
        for (text, names, prefix) in [
            (hip::Text::Vmaf, vmaf, "hiprtc"),
            (hip::Text::Companions, companions, "hiprtc-companions"),
        ] {
            let t = std::time::Instant::now();
            let code = match hip::code_object(&rt, arch, text) {
                Ok(c) => c,
                Err(e) => {
                    bad.push(format!("{arch} {text:?}: {e}"));
                    continue;
                }
            };
            n += 1;
            eprintln!(
                "hipRTC ({}, HIP {version}): {arch} {text:?}: {} bytes in {:.1} s",
                rt.rtc().unwrap().library,
                code.len(),
                t.elapsed().as_secs_f64()
            );
            if code.len() < 64 || &code[..4] != b"\x7fELF" {
                bad.push(format!("{arch}: not an ELF code object"));
                continue;
            }
            let machine = u16::from_le_bytes([code[18], code[19]]);
            if machine != 224 {
                bad.push(format!("{arch}: e_machine {machine}, not EM_AMDGPU (224)"));
            }
            let flags = u32::from_le_bytes(code[48..52].try_into().unwrap());
            if let Some(m) = amdgpu_mach(arch)
                && flags & 0xff != m
            {
                bad.push(format!(
                    "{arch}: EF_AMDGPU_MACH {:#x}, expected {m:#x}",
                    flags & 0xff
                ));
            }
            for k in &names {
                let kd = format!("{k}.kd\0");
                if !code.windows(kd.len()).any(|w| w == kd.as_bytes()) {
                    bad.push(format!("{arch}: no kernel descriptor {k}.kd"));
                }
            }
            if let Some(d) = &dump {
                let name = arch.replace(':', "_");
                std::fs::write(d.join(format!("{prefix}-{name}.co")), &code[..]).expect("write");
            }
        }
    }
    assert!(bad.is_empty(), "hipRTC:\n{}", bad.join("\n"));
    assert!(n > 0, "no architecture compiled");
}

// ---------------------------------------------------------------------------------------------
// The emulated runtime
// ---------------------------------------------------------------------------------------------

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

struct FakeLibs {
    rocm5: PathBuf,
    rocm6: PathBuf,
    rocm6_rtc: PathBuf,
}

/// Build the fake runtimes (once per process), or None without a C++ compiler.
fn fake_libs() -> Option<&'static FakeLibs> {
    static LIBS: OnceLock<Option<FakeLibs>> = OnceLock::new();
    LIBS.get_or_init(|| {
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hipemu/fake_hip.cpp");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let build = |out: &str, defs: &[&str]| -> Option<PathBuf> {
            let path = dir.join(out);
            if is_child() {
                // Built by the parent process, which may have it loaded: never rewrite it.
                assert!(path.exists(), "{} not built", path.display());
                return Some(path);
            }
            let r = Command::new(&cxx)
                .args(["-std=c++20", "-O2", "-ffp-contract=off", "-fPIC", "-shared"])
                .args(["-pthread", "-w", "-fvisibility=hidden"])
                .args(defs)
                .arg("-o")
                .arg(&path)
                .arg(&src)
                .output();
            match r {
                Ok(o) if o.status.success() => Some(path),
                Ok(o) => panic!(
                    "{cxx} failed to build {out}:\n{}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => {
                    let msg =
                        format!("no C++ compiler ({cxx}: {e}): HIP runtime emulation skipped");
                    assert!(
                        !env_is("VMAFGPU_REQUIRE_EMU"),
                        "{msg}, but VMAFGPU_REQUIRE_EMU=1"
                    );
                    eprintln!("{msg}");
                    None
                }
            }
        };
        Some(FakeLibs {
            rocm5: build("libvmafgpu-fakehip5.so", &["-DFAKE_ROCM5"])?,
            rocm6: build("libvmafgpu-fakehip6.so", &[])?,
            rocm6_rtc: build("libvmafgpu-fakehiprtc6.so", &["-DFAKE_HIPRTC_ONLY"])?,
        })
    })
    .as_ref()
}

/// The fake's test controls (the same library instance the backend loads).
struct Fake {
    configure: unsafe extern "C" fn(c_int, *const c_char, c_int, c_int),
    schedule: unsafe extern "C" fn(u64),
    stats: unsafe extern "C" fn(*mut c_long, *mut c_char, usize),
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Stats {
    dev: c_long,
    host: c_long,
    streams: c_long,
    events: c_long,
    modules: c_long,
    launches: c_long,
    errors: c_long,
    destroyed_busy: c_long,
    not_ready: c_long,
    last_error: String,
}

impl Fake {
    fn open(lib: &Path) -> Fake {
        let c = CString::new(lib.to_str().unwrap()).unwrap();
        // SAFETY: dlopen of the library the backend also loads (same handle, refcounted).
        let h = unsafe { dlopen(c.as_ptr(), 2) };
        assert!(!h.is_null(), "dlopen {}", lib.display());
        let sym = |n: &str| {
            let c = CString::new(n).unwrap();
            // SAFETY: live handle, valid name.
            let p = unsafe { dlsym(h, c.as_ptr()) };
            assert!(!p.is_null(), "{n}");
            p
        };
        // SAFETY: the fake's C signatures (tests/hipemu/fake_hip.cpp).
        unsafe {
            Fake {
                configure: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(c_int, *const c_char, c_int, c_int),
                >(sym("fakehip_configure")),
                schedule: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u64)>(sym(
                    "fakehip_schedule",
                )),
                stats: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut c_long, *mut c_char, usize),
                >(sym("fakehip_stats")),
            }
        }
    }

    fn configure(&self, devices: i32, arch: &str, version: i32, init_error: i32) {
        let a = CString::new(arch).unwrap();
        // SAFETY: plain values and a valid C string.
        unsafe { (self.configure)(devices, a.as_ptr(), version, init_error) };
    }

    /// 0: blocking calls run only what they wait for; else the seed of a random schedule.
    fn schedule(&self, seed: u64) {
        // SAFETY: plain value.
        unsafe { (self.schedule)(seed) };
    }

    fn stats(&self) -> Stats {
        let mut v = [0 as c_long; 9];
        let mut e = [0 as c_char; 512];
        // SAFETY: 9 longs and a 512-byte buffer.
        unsafe { (self.stats)(v.as_mut_ptr(), e.as_mut_ptr(), e.len()) };
        // SAFETY: NUL-terminated by snprintf.
        let last_error = unsafe { std::ffi::CStr::from_ptr(e.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Stats {
            dev: v[0],
            host: v[1],
            streams: v[2],
            events: v[3],
            modules: v[4],
            launches: v[5],
            errors: v[6],
            destroyed_busy: v[7],
            not_ready: v[8],
            last_error,
        }
    }
}

/// Serialises the tests that share the in-process fake (its state is global).
static FAKE_LOCK: Mutex<()> = Mutex::new(());

const DEFAULT_ARCH: &str = "gfx90a:sramecc+:xnack-";

// ---------------------------------------------------------------------------------------------
// The scenario, on any HipBackend
// ---------------------------------------------------------------------------------------------

/// Jobs of one geometry, configured with `vif` and `adm`: the first with an independent
/// previous reference (uploaded), the others with the previous job's reference (read where it
/// already is on the GPU).
fn sequence(
    first: u64,
    (w, h, bpc): (usize, usize, u8),
    contents: &[Content],
    vif: VifParams,
    adm: AdmParams,
) -> Vec<Job> {
    let mut jobs: Vec<Job> = Vec::new();
    for (k, &c) in contents.iter().enumerate() {
        let (r, d, p) = gpu_content::frames(c, w, h, bpc, 1 + first * 17 + k as u64);
        let prev = match jobs.last() {
            Some(j) => Some(j.reference.clone()),
            None => Some(Arc::new(p)),
        };
        jobs.push(Job {
            cfg: gpu_content::config(vif, adm),
            job: FrameJob {
                index: first + k as u64,
                reference: Arc::new(r),
                distorted: Arc::new(d),
                prev_ref: prev,
                features: true,
                chroma: None,
                previous: None,
            },
        });
    }
    jobs
}

/// Configure `b` with `j`'s configuration before `j` is submitted, where it is not the one of
/// the job submitted before it (`prev`; always before the first): frames in flight keep theirs.
fn configure_for(b: &mut HipBackend, prev: Option<&Job>, j: &Job) {
    if prev.is_none_or(|p| p.cfg != j.cfg) {
        b.configure(&j.cfg).expect("configure");
    }
}

/// Submit with the backend's pipelining (max_in_flight before the first receive), each job
/// with its configuration.
fn run(b: &mut HipBackend, jobs: &[Job]) -> Vec<(u64, FrameAccum)> {
    let mut out = Vec::new();
    let mut in_flight = 0;
    for (k, j) in jobs.iter().enumerate() {
        if in_flight == b.max_in_flight() {
            out.push(b.receive(true).expect("receive").expect("a result"));
            in_flight -= 1;
        }
        configure_for(b, k.checked_sub(1).map(|p| &jobs[p]), j);
        b.submit(j.job.clone()).expect("submit");
        in_flight += 1;
    }
    while let Some(r) = b.receive(true).expect("receive") {
        out.push(r);
    }
    out
}

fn compare(what: &str, jobs: &[Job], got: &[(u64, FrameAccum)], bad: &mut Vec<String>) {
    if got.len() != jobs.len() {
        bad.push(format!(
            "{what}: {} results for {} jobs",
            got.len(),
            jobs.len()
        ));
    }
    for (j, (gi, g)) in jobs.iter().zip(got) {
        let want = compute_job_cpu(&j.cfg, j).expect("CPU reference");
        let r = &j.reference;
        if *gi != j.index {
            bad.push(format!(
                "{what}: result for frame {gi} where {} was due",
                j.index
            ));
        } else if *g != want {
            bad.push(format!(
                "{what}: frame {} ({}x{} {}-bit, features {}, motion {}):\n  cpu {want:?}\n  hip {g:?}",
                j.index,
                r.width,
                r.height,
                r.bpc,
                j.features,
                j.prev_ref.is_some()
            ));
        }
    }
}

/// Everything the pipeline does, against the CPU reference. Returns the frames compared.
fn scenario(b: &mut HipBackend) -> usize {
    let v = VifParams::default();
    let a = AdmParams::default();
    let mut bad = Vec::new();
    let mut all = Vec::new();
    // More frames than slots (slot reuse, motion read from the previous slot), then geometry
    // and depth changes while frames are in flight.
    let mut jobs = sequence(
        0,
        (33, 33, 8),
        &[
            Content::Natural,
            Content::Random,
            Content::Checker,
            Content::MaxDiff,
            Content::Flat,
            Content::Natural,
            Content::Max,
        ],
        v,
        a,
    );
    jobs.extend(sequence(
        7,
        (64, 48, 10),
        &[Content::Natural, Content::Random, Content::Natural],
        v,
        a,
    ));
    let mut odd = sequence(
        10,
        (97, 65, 16),
        &[Content::Random, Content::Natural, Content::Checker],
        v,
        a,
    );
    odd[1].features = false; // a frame subsampling skips: motion only
    odd[2].prev_ref = None; // as after a reset: no motion
    jobs.extend(odd);
    let egl1 = sequence(
        13,
        (48, 40, 12),
        &[Content::Natural, Content::Natural],
        VifParams {
            enhn_gain_limit: 1.0,
        },
        AdmParams {
            enhn_gain_limit: 1.0,
            ..AdmParams::default()
        },
    );
    jobs.extend(egl1);
    // The same geometry and options but adm_csf_mode 2 (the v1 models' blended CSF), then back:
    // the per-geometry state is rebuilt for the CSF mode alone.
    let egl1_adm = AdmParams {
        enhn_gain_limit: 1.0,
        ..AdmParams::default()
    };
    for (first, csf_mode) in [(15, 2), (17, 0)] {
        jobs.extend(sequence(
            first,
            (48, 40, 12),
            &[Content::Natural, Content::Checker],
            VifParams {
                enhn_gain_limit: 1.0,
            },
            AdmParams {
                csf_mode,
                ..egl1_adm
            },
        ));
    }
    let got = run(b, &jobs);
    compare("pipeline", &jobs, &got, &mut bad);
    all.extend(jobs);

    // Reset with frames in flight: their results are dropped, the next frames are right.
    let pending = sequence(20, (40, 36, 8), &[Content::Random, Content::Natural], v, a);
    b.configure(&pending[0].cfg).expect("configure");
    for j in &pending {
        b.submit(j.job.clone()).expect("submit");
    }
    b.reset();
    assert!(
        b.receive(false).expect("receive").is_none(),
        "a result survived reset"
    );
    let after = sequence(
        0,
        (40, 36, 8),
        &[Content::Checker, Content::Natural, Content::Random],
        v,
        a,
    );
    let got = run(b, &after);
    compare("after reset", &after, &got, &mut bad);
    all.extend(after);

    assert!(
        bad.is_empty(),
        "{} problems in {} frames:\n{}",
        bad.len(),
        all.len(),
        bad.join("\n")
    );
    all.len()
}

/// A copy of `p` in the caller's memory as a frame would hold it: 4 bytes into its buffer, rows
/// `pad` bytes longer than the samples (filled with 0xEE), samples stored `shift` bits up.
fn host_plane(p: &OwnedPlane, pad: usize, shift: u8) -> HostPlane {
    let bps = if p.bpc > 8 { 2 } else { 1 };
    let stride = p.width * bps + pad;
    let mut bytes = vec![0xEEu8; 4 + stride * p.height];
    for y in 0..p.height {
        for x in 0..p.width {
            let v = p.data[y * p.width + x] << shift;
            let at = 4 + y * stride + x * bps;
            if bps == 1 {
                bytes[at] = v as u8;
            } else {
                bytes[at..at + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    HostPlane::new(Arc::new(bytes), 4, stride, p.width, p.height, p.bpc)
        .unwrap()
        .with_shift(shift)
        .unwrap()
}

/// A plane with `p`'s geometry and no samples (what a host job's planes carry).
fn geometry_of(p: &OwnedPlane) -> Arc<OwnedPlane> {
    Arc::new(OwnedPlane {
        data: Vec::new(),
        width: p.width,
        height: p.height,
        bpc: p.bpc,
    })
}

/// `jobs` as host jobs: every plane in the caller's memory (padded rows, stored `shift` bits
/// up), each frame's previous reference the previous frame's host plane (motion reads it in
/// the previous slot), the job's planes geometry only.
fn host_jobs(jobs: &[Job], pad: usize, shift: u8) -> Vec<(Job, HostFrame)> {
    let mut out: Vec<(Job, HostFrame)> = Vec::new();
    for (k, j) in jobs.iter().enumerate() {
        let reference = host_plane(&j.reference, pad, shift);
        let prev_ref = match &j.prev_ref {
            None => None,
            Some(p) if k > 0 && Arc::ptr_eq(p, &jobs[k - 1].reference) => {
                Some(out[k - 1].1.reference.clone())
            }
            Some(p) => Some(host_plane(p, pad, shift)),
        };
        let mut g = j.clone();
        g.reference = geometry_of(&j.reference);
        g.distorted = geometry_of(&j.distorted);
        g.prev_ref = j.prev_ref.as_deref().map(geometry_of);
        let hf = HostFrame {
            reference,
            distorted: host_plane(&j.distorted, pad, shift),
            prev_ref,
            chroma: None,
            previous: None,
        };
        out.push((g, hf));
    }
    out
}

/// [`run`] for host jobs.
fn run_host(b: &mut HipBackend, jobs: &[(Job, HostFrame)]) -> Vec<(u64, FrameAccum)> {
    let mut out = Vec::new();
    let mut in_flight = 0;
    for (k, (j, hf)) in jobs.iter().enumerate() {
        if in_flight == b.max_in_flight() {
            out.push(b.receive(true).expect("receive").expect("a result"));
            in_flight -= 1;
        }
        configure_for(b, k.checked_sub(1).map(|p| &jobs[p].0), j);
        b.submit_host(j.job.clone(), hf.clone())
            .expect("submit_host");
        in_flight += 1;
    }
    while let Some(r) = b.receive(true).expect("receive") {
        out.push(r);
    }
    out
}

/// Host planes (the engine's zero-copy route) against the CPU reference: padded strides at 8,
/// 10, 12 and 16 bits, MSB-aligned 10-bit planes (P010: shifted on the GPU), companion metrics
/// from host planes (PSNR, SSIM: MS-SSIM needs 176x176), and the GPU range check refusing a frame in order. Returns the frames
/// compared.
fn host_scenario(b: &mut HipBackend) -> usize {
    assert!(b.accepts_host_planes() && b.checks_host_ranges());
    let (v, a) = (VifParams::default(), AdmParams::default());
    let mut bad = Vec::new();
    let mut n = 0;
    let luma_companions = Companions {
        psnr: true,
        ssim: true,
        ..Companions::default()
    };
    let contents = [
        Content::Natural,
        Content::Random,
        Content::Checker,
        Content::MaxDiff,
        Content::Flat,
        Content::Natural,
    ];
    for (first, geom, pad, shift) in [
        (0, (33, 33, 8), 5, 0),
        (10, (64, 48, 10), 6, 0),
        (20, (64, 48, 10), 2, 6),
        (30, (48, 40, 12), 10, 0),
        (40, (97, 65, 16), 4, 0),
    ] {
        let mut jobs = sequence(first, geom, &contents, v, a);
        jobs[2].cfg.companions = luma_companions;
        jobs[3].features = false;
        jobs[4].cfg.companions = luma_companions;
        let host = host_jobs(&jobs, pad, shift);
        let got = run_host(b, &host);
        compare(
            &format!("host planes {geom:?} pad {pad} shift {shift}"),
            &jobs,
            &got,
            &mut bad,
        );
        n += jobs.len();
    }

    // A 10-bit sample above 1023 in the caller's memory: that frame is refused when its result
    // is due (the first bad sample named), the frames before it are computed.
    let jobs = sequence(50, (40, 36, 10), &contents[..3], v, a);
    let mut host = host_jobs(&jobs, 2, 0);
    let mut worst = jobs[1].distorted.as_ref().clone();
    worst.data[7 * 40 + 5] = 1024;
    host[1].1.distorted = host_plane(&worst, 2, 0);
    b.configure(&host[0].0.cfg).expect("configure");
    for (j, hf) in &host {
        b.submit_host(j.job.clone(), hf.clone())
            .expect("submit_host");
    }
    let first = b.receive(true).expect("frame 50").expect("a result");
    compare("before the bad frame", &jobs[..1], &[first], &mut bad);
    match b.receive(true) {
        Err(gstvmafgpu::Error::SampleRange {
            plane,
            x,
            y,
            value,
            bpc,
        }) => assert_eq!((plane, x, y, value, bpc), ("luma", 5, 7, 1024, 10)),
        other => panic!("frame 51 not refused: {other:?}"),
    }
    b.reset();
    let after = sequence(60, (40, 36, 10), &contents[..3], v, a);
    let got = run_host(b, &host_jobs(&after, 2, 0));
    compare("after a refused frame", &after, &got, &mut bad);
    n += 1 + after.len();
    assert!(
        bad.is_empty(),
        "{} problems in {n} host frames:\n{}",
        bad.len(),
        bad.join("\n")
    );
    n
}

/// Schedules the scenario runs under: the minimal one, then random ones (fixed seeds).
const SCHEDULES: [u64; 4] = [0, 0x9e37_79b9_7f4a_7c15, 12345, 0xdead_beef];

/// Open the fake (`lib`), run the scenario under every schedule, drop the backend each time,
/// and check nothing leaked.
fn scenario_on_fake(lib: &Path, fake: &Fake) {
    for seed in SCHEDULES {
        fake.schedule(seed);
        scenario_on_fake_once(lib, fake, seed, (DEFAULT_ARCH, scenario));
    }
    fake.schedule(0);
}

fn scenario_on_fake_once(
    lib: &Path,
    fake: &Fake,
    seed: u64,
    (arch, scenario): (&str, fn(&mut HipBackend) -> usize),
) {
    let before = fake.stats();
    let mut b = HipBackend::with_library(lib.to_str().unwrap(), 0).expect("open fake device");
    assert_eq!(b.name(), "hip");
    assert_eq!(b.device_name(), "Fake AMD GPU (CPU emulation)");
    assert_eq!(b.arch(), arch);
    let n = scenario(&mut b);
    drop(b);
    let s = fake.stats();
    assert_eq!(
        s.errors, before.errors,
        "runtime calls failed: {}",
        s.last_error
    );
    assert_eq!(
        (s.dev, s.host, s.streams, s.events, s.modules),
        (0, 0, 0, 0, 0),
        "leaked after drop: {s:?}"
    );
    assert_eq!(
        s.destroyed_busy, 0,
        "a stream was destroyed with work pending"
    );
    assert!(s.launches > before.launches);
    assert!(
        s.not_ready > before.not_ready,
        "the backend never polled an event"
    );
    eprintln!(
        "{} (schedule {seed:#x}): {n} frames, HIP (emulated runtime) == CPU; {} launches",
        lib.display(),
        s.launches - before.launches
    );
}

fn last_options() -> String {
    let libs = fake_libs().unwrap();
    let c = CString::new(libs.rocm5.to_str().unwrap()).unwrap();
    // SAFETY: as in Fake::open.
    let h = unsafe { dlopen(c.as_ptr(), 2) };
    let n = CString::new("fakehiprtc_compiles").unwrap();
    // SAFETY: live handle.
    let p = unsafe { dlsym(h, n.as_ptr()) };
    assert!(!p.is_null());
    // SAFETY: long fakehiprtc_compiles(char *, size_t).
    let f = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_char, usize) -> c_long>(p)
    };
    let mut buf = [0 as c_char; 512];
    // SAFETY: 512-byte buffer.
    unsafe { f(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn hip_on_emulated_runtime_equals_cpu() {
    let Some(libs) = fake_libs() else { return };
    let _g = FAKE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let fake = Fake::open(&libs.rocm5);
    fake.configure(1, DEFAULT_ARCH, 50_221_153, 0);
    scenario_on_fake(&libs.rocm5, &fake);
    let opts = last_options();
    assert!(
        opts.contains(&format!("--offload-arch={DEFAULT_ARCH}"))
            && opts.contains("-ffp-contract=off"),
        "hipRTC options: {opts}"
    );
}

#[test]
fn hip_host_planes_on_emulated_runtime_equal_cpu() {
    let Some(libs) = fake_libs() else { return };
    let _g = FAKE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let fake = Fake::open(&libs.rocm5);
    // Another architecture than the other tests': hip_on_emulated_runtime_equals_cpu checks the
    // options of its own (first) compilation for DEFAULT_ARCH.
    let arch = "gfx1030";
    fake.configure(1, arch, 50_221_153, 0);
    for seed in SCHEDULES {
        fake.schedule(seed);
        scenario_on_fake_once(&libs.rocm5, &fake, seed, (arch, host_scenario));
    }
    fake.schedule(0);
    fake.configure(1, DEFAULT_ARCH, 50_221_153, 0);
}

// ---------------------------------------------------------------------------------------------
// The companion metrics, CAMBI and SpEED chroma on the emulated device
// ---------------------------------------------------------------------------------------------

/// Every companion metric the plan has.
const ALL_FIVE: Companions = Companions {
    psnr: true,
    ssim: true,
    ms_ssim: true,
    ciede: true,
    psnr_hvs: true,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

/// VMAF v1's speed_chroma options (model/vmaf_v1.0.16*: nnf 0.1, snn 0.19, wvm 5, mxv 45),
/// without prescale.
fn v1_speed() -> SpeedChromaParams {
    SpeedChromaParams {
        kernelscale: 1.0,
        prescale: 1.0,
        prescale_method: PrescaleMethod::Nearest,
        sigma_nn: 0.19,
        nn_floor: 0.1,
        max_val: 45.0,
        weight_var_mode: 5,
    }
}

/// `jobs` asking for `companions`, with chroma planes of `content` at libvmaf's size
/// (`w >> sx`, `h >> sy`).
fn with_companions(jobs: &mut [Job], companions: Companions, (sx, sy): (u32, u32)) {
    for (k, j) in jobs.iter_mut().enumerate() {
        let (w, h, bpc) = (j.reference.width, j.reference.height, j.reference.bpc);
        let (cw, ch) = (w >> sx, h >> sy);
        let c = gpu_content::ALL[k % gpu_content::ALL.len()];
        let seed = 7 + j.index * 31;
        let (rb, db, _) = gpu_content::frames(c, cw, ch, bpc, seed ^ 0x5a5a);
        let (rr, dr, _) = gpu_content::frames(c, cw, ch, bpc, seed ^ 0xa5a5);
        j.chroma = Some(Arc::new(ChromaPair {
            reference: [rb, rr],
            distorted: [db, dr],
        }));
        j.cfg.companions = companions;
    }
}

/// [`compare`] for frames with companion scores: the accumulators equal, the scores equal by
/// their Debug text (shortest round-trip digits, the sign of zero; MS-SSIM's NaN equals NaN),
/// except CIEDE2000, within [`ciede_bound`]: its GPU kernels add the per-pixel differences in
/// per-block tree sums, another order than the CPU's sequential sum
/// (src/backend/gpu/companion_plan.rs; tests/companion_emulated.rs checks the same bound).
fn compare_scores(what: &str, jobs: &[Job], got: &[(u64, FrameAccum)], bad: &mut Vec<String>) {
    if got.len() != jobs.len() {
        bad.push(format!(
            "{what}: {} results for {} jobs",
            got.len(),
            jobs.len()
        ));
    }
    for (j, (gi, g)) in jobs.iter().zip(got) {
        let want = compute_job_cpu(&j.cfg, j).expect("CPU reference");
        let (w, h) = (j.reference.width, j.reference.height);
        let ciede_ok = match (want.companions.ciede, g.companions.ciede) {
            (Some(x), Some(y)) => (x - y).abs() <= ciede_bound(w, h) || x == y,
            (x, y) => x.is_none() && y.is_none(),
        };
        let (mut a, mut b) = (want, *g);
        a.companions.ciede = None;
        b.companions.ciede = None;
        if *gi != j.index || !ciede_ok || format!("{a:?}") != format!("{b:?}") {
            bad.push(format!(
                "{what}: frame {gi} (due {}, {w}x{h} {}-bit):\n  cpu {want:?}\n  hip {g:?}",
                j.index, j.reference.bpc
            ));
        }
    }
}

/// The five companion metrics (4:2:0 and 4:4:4, 8 and 10 bits, every content), CAMBI and
/// SpEED chroma computed by the HIP backend's companion executor, against the CPU reference.
/// Returns the frames compared.
fn companion_scenario(b: &mut HipBackend) -> usize {
    let (v, a) = (VifParams::default(), AdmParams::default());
    // The v1 features: on the device (the engine's Routes ask exactly this).
    for c in [
        Companions {
            cambi: Some(CambiParams::default()),
            ..Default::default()
        },
        Companions {
            speed_chroma: Some(v1_speed()),
            ..Default::default()
        },
        temporal_only(),
        ALL_FIVE,
    ] {
        assert!(b.computes_on_device(c), "{c:?} not on the device");
    }
    b.configure(&ClipConfig {
        companions: ALL_FIVE,
        ..ClipConfig::default()
    })
    .expect("configure: open the companion executor");
    let mut bad = Vec::new();
    let mut n = 0;
    let contents = [Content::Natural, Content::Random, Content::Checker];
    // MS-SSIM needs 176x176 (five levels of its 11-tap filter).
    for (first, geom, layout) in [(0, (176, 176, 8), (1, 1)), (10, (176, 176, 10), (0, 0))] {
        let mut jobs = sequence(first, geom, &contents, v, a);
        with_companions(&mut jobs, ALL_FIVE, layout);
        let got = run(b, &jobs);
        compare_scores(
            &format!("companions {geom:?} {layout:?}"),
            &jobs,
            &got,
            &mut bad,
        );
        n += jobs.len();
    }
    // CAMBI of the distorted luma, 8 and 10 bits (one dimension 216 or more, as libvmaf
    // requires); then SpEED chroma (10-bit 4:2:0 at 320x180,
    // the smallest v1 size it scores).
    for (first, geom) in [(20, (256, 144, 8)), (30, (256, 144, 10))] {
        let mut jobs = sequence(first, geom, &contents[..2], v, a);
        for j in &mut jobs {
            j.cfg.companions = Companions {
                cambi: Some(CambiParams::default()),
                ..Default::default()
            };
        }
        let got = run(b, &jobs);
        compare_scores(&format!("CAMBI {geom:?}"), &jobs, &got, &mut bad);
        n += jobs.len();
    }
    let mut jobs = sequence(40, (320, 180, 10), &contents[..2], v, a);
    with_companions(
        &mut jobs,
        Companions {
            speed_chroma: Some(v1_speed()),
            speed_temporal: None,
            psnr: true,
            ..Default::default()
        },
        (1, 1),
    );
    let got = run(b, &jobs);
    compare_scores("SpEED chroma (320, 180, 10)", &jobs, &got, &mut bad);
    n += jobs.len();
    for (_, g) in &got {
        assert!(g.companions.speed_chroma.is_some(), "no SpEED chroma score");
    }
    // SpEED temporal: each frame's previous planes those of the frame before it (the first
    // has none: 0).
    let mut jobs = sequence(50, (320, 180, 10), &contents, v, a);
    for i in 0..jobs.len() {
        let prev = (i > 0).then(|| {
            (
                Arc::clone(&jobs[i - 1].reference),
                Arc::clone(&jobs[i - 1].distorted),
            )
        });
        jobs[i].previous = prev;
        jobs[i].cfg.companions = temporal_only();
    }
    let got = run(b, &jobs);
    compare_scores("SpEED temporal (320, 180, 10)", &jobs, &got, &mut bad);
    n += jobs.len();
    assert_eq!(got[0].1.companions.speed_temporal, Some(0.0));
    assert!(
        got.iter()
            .skip(1)
            .any(|(_, g)| g.companions.speed_temporal.is_some_and(|v| v != 0.0)),
        "SpEED temporal: no frame with a non-zero score"
    );
    assert!(
        bad.is_empty(),
        "{} problems in {n} companion frames:\n{}",
        bad.len(),
        bad.join("\n")
    );
    n
}

fn temporal_only() -> Companions {
    Companions {
        speed_temporal: Some(gstvmafgpu::features::speed::SpeedTemporalParams::default()),
        ..Default::default()
    }
}

/// The companion metrics, CAMBI and SpEED chroma and temporal on the emulated HIP runtime (each kernel a
/// C++ function over fibers, no graphs: every launch one by one), under the minimal schedule
/// and a random one; nothing may leak. 12 frames, 572 launches a schedule: 153 s for both on a
/// 2-core machine shared with other builds (85 s and 68 s).
#[test]
fn hip_companions_on_emulated_runtime_equal_cpu() {
    let Some(libs) = fake_libs() else { return };
    let _g = FAKE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let fake = Fake::open(&libs.rocm5);
    // An architecture of its own (see hip_host_planes_on_emulated_runtime_equal_cpu).
    let arch = "gfx908:sramecc+:xnack-";
    fake.configure(1, arch, 50_221_153, 0);
    for seed in [0, 0x9e37_79b9_7f4a_7c15] {
        fake.schedule(seed);
        let t = std::time::Instant::now();
        scenario_on_fake_once(&libs.rocm5, &fake, seed, (arch, companion_scenario));
        eprintln!(
            "companions, schedule {seed:#x}: {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    fake.schedule(0);
    fake.configure(1, DEFAULT_ARCH, 50_221_153, 0);
}

/// The fake's companion kernel signatures (tests/emu/companion_signatures.h, how its
/// hipModuleLaunchKernel reads each argument) are the plan's (`launch::Kernel::signature`).
#[test]
fn fake_companion_signatures_are_the_plans() {
    use gstvmafgpu::backend::gpu::launch::{ArgKind, Kernel};
    let h = include_str!("emu/companion_signatures.h");
    let mut rows = Vec::new();
    for line in h.lines() {
        let t = line.trim();
        if let Some(r) = t.strip_prefix("{\"") {
            let mut it = r.split('"');
            let name = it.next().unwrap().to_string();
            let args = it.nth(1).unwrap().to_string();
            rows.push((name, args));
        }
    }
    let want: Vec<(String, String)> = Kernel::ALL
        .iter()
        .map(|k| {
            let sig = k
                .signature()
                .iter()
                .map(|a| match a {
                    ArgKind::Ptr => 'p',
                    ArgKind::I32 => 'i',
                    ArgKind::F32 => 'f',
                })
                .collect();
            (k.name().to_string(), sig)
        })
        .collect();
    let (mut a, mut b) = (rows, want);
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[test]
fn hip_host_errors_on_emulated_runtime() {
    let Some(libs) = fake_libs() else { return };
    let _g = FAKE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let fake = Fake::open(&libs.rocm5);
    let lib = libs.rocm5.to_str().unwrap();
    let open_err = |dev: u32| match HipBackend::with_library(lib, dev) {
        Ok(_) => panic!("opened device {dev}"),
        Err(gstvmafgpu::Error::Backend(m)) => m,
        Err(e) => panic!("not a backend error: {e:?}"),
    };

    // ROCm installed, no GPU (what hipGetDeviceCount says on such a machine).
    fake.configure(0, DEFAULT_ARCH, 50_221_153, 0);
    let m = open_err(0);
    assert!(
        m.contains("no usable AMD GPU") && m.contains("no ROCm-capable device"),
        "{m}"
    );
    // hipInit itself failing (no KFD device node, driver missing).
    fake.configure(1, DEFAULT_ARCH, 50_221_153, 100);
    let m = open_err(0);
    assert!(
        m.contains("no usable AMD GPU") && m.contains("hipInit"),
        "{m}"
    );
    // Ordinal out of range.
    fake.configure(1, DEFAULT_ARCH, 50_221_153, 0);
    let m = open_err(1);
    assert!(m.contains("device 1 requested, 1 present"), "{m}");
    // A device the runtime's hipRTC would abort on: refused before compiling.
    fake.configure(1, "gfx1100", 50_221_153, 0);
    let m = open_err(0);
    assert!(m.contains("gfx1100") && m.contains("5.5"), "{m}");
    // The same device with a newer runtime opens.
    fake.configure(1, "gfx1100", 60_342_131, 0);
    let b = HipBackend::with_library(lib, 0).expect("gfx1100 with HIP 6.3");
    assert_eq!(b.arch(), "gfx1100");
    drop(b);
    fake.configure(1, DEFAULT_ARCH, 50_221_153, 0);
    let s = fake.stats();
    assert_eq!(
        (s.dev, s.host, s.streams, s.events, s.modules),
        (0, 0, 0, 0, 0),
        "leaked after failed opens: {s:?}"
    );
    assert_eq!(s.errors, 0, "{}", s.last_error);
}

#[test]
fn rocm6_layout_without_hiprtc_is_a_clear_error() {
    let Some(libs) = fake_libs() else { return };
    if std::env::var_os(hip::ffi::ENV_HIPRTC_LIBRARY).is_some() {
        return; // the child run below
    }
    // The ROCm 6 runtime has no hipRTC inside; with no libhiprtc installed, the error says so.
    let have_system_hiprtc = Runtime::system()
        .map(|rt| rt.rtc().is_ok_and(|r| r.library.contains("libhiprtc")))
        .unwrap_or(false);
    match HipBackend::with_library(libs.rocm6.to_str().unwrap(), 0) {
        Ok(_) => panic!("compiled with a hipRTC that is not there"),
        Err(e) => {
            let m = e.to_string();
            if !have_system_hiprtc {
                assert!(m.contains("hipRTC not found"), "{m}");
                assert!(m.contains(hip::ffi::ENV_HIPRTC_LIBRARY), "{m}");
            }
        }
    }
}

/// Run one `#[ignore]`d test of this binary in a child process with `env`, and require that it
/// ran and passed.
fn run_child(test: &str, env: &[(&str, &str)]) {
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(exe);
    c.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.env("VMAFGPU_HIP_TEST_CHILD", "1");
    let o = c.output().expect("run child test");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && out.contains("1 passed"),
        "child {test} failed:\n{out}\n{err}"
    );
    eprint!("{err}");
}

fn is_child() -> bool {
    env_is("VMAFGPU_HIP_TEST_CHILD")
}

#[test]
fn rocm6_layout_on_emulated_runtime_equals_cpu() {
    let Some(libs) = fake_libs() else { return };
    run_child(
        "child_rocm6_layout",
        &[(
            hip::ffi::ENV_HIPRTC_LIBRARY,
            libs.rocm6_rtc.to_str().unwrap(),
        )],
    );
}

#[test]
#[ignore = "run by rocm6_layout_on_emulated_runtime_equals_cpu in a child process"]
fn child_rocm6_layout() {
    assert!(is_child());
    let libs = fake_libs().expect("built by the parent");
    let fake = Fake::open(&libs.rocm6);
    // hipGetDevicePropertiesR0600 layout, hipRTC from the separate library.
    scenario_on_fake(&libs.rocm6, &fake);
}

#[test]
fn backend_hip_without_rocm_fails_and_auto_falls_back() {
    run_child(
        "child_without_rocm",
        &[(
            hip::ffi::ENV_HIP_LIBRARY,
            "/nonexistent/vmafgpu-test/libamdhip64.so",
        )],
    );
}

#[test]
#[ignore = "run by backend_hip_without_rocm_fails_and_auto_falls_back in a child process"]
fn child_without_rocm() {
    assert!(is_child());
    let why = hip::unavailable_reason().expect("ROCm hidden by VMAFGPU_HIP_LIBRARY");
    assert!(why.starts_with("ROCm not found"), "{why}");
    assert!(
        why.contains("/nonexistent/vmafgpu-test/libamdhip64.so"),
        "{why}"
    );
    let cfg = |backend| ScorerConfig {
        backend,
        threads: 1,
        ..ScorerConfig::default()
    };
    let e = match Scorer::new(cfg(BackendKind::Hip)) {
        Ok(_) => panic!("backend=hip opened without ROCm"),
        Err(e) => e,
    };
    match &e {
        gstvmafgpu::Error::Backend(m) => {
            assert!(m.starts_with("HIP unavailable: ROCm not found"), "{m}")
        }
        other => panic!("not a backend error: {other:?}"),
    }
    let s = Scorer::new(cfg(BackendKind::Auto)).expect("auto always opens");
    // CUDA first when there is a usable NVIDIA GPU, never HIP here, else the CPU.
    #[cfg(feature = "cuda")]
    let cuda_ok = gstvmafgpu::backend::cuda::CudaBackend::new(0).is_ok();
    #[cfg(not(feature = "cuda"))]
    let cuda_ok = false;
    assert_eq!(s.backend_name(), if cuda_ok { "cuda" } else { "cpu" });

    // The element: backend=hip fails to start with the reason on the bus; auto starts.
    use gst::prelude::*;
    gst::init().unwrap();
    gstvmafgpu::plugin_register_static().unwrap();
    let element = |backend: &str| {
        let e = gst::ElementFactory::make("vmafgpu")
            .property_from_str("backend", backend)
            .property("device-id", 0u32)
            .build()
            .unwrap();
        let bus = gst::Bus::new();
        e.set_bus(Some(&bus));
        (e, bus)
    };
    let (e, bus) = element("hip");
    assert!(
        e.set_state(gst::State::Paused).is_err(),
        "backend=hip started"
    );
    let mut errors = Vec::new();
    while let Some(m) = bus.pop() {
        if let gst::MessageView::Error(err) = m.view() {
            errors.push(format!("{} {:?}", err.error(), err.debug()));
        }
    }
    assert!(
        errors.iter().any(|m| m.contains("ROCm not found")),
        "backend=hip: {errors:?}"
    );
    e.set_state(gst::State::Null).unwrap();
    let (e, _bus) = element("auto");
    assert!(
        e.set_state(gst::State::Paused).is_ok(),
        "backend=auto failed"
    );
    e.set_state(gst::State::Null).unwrap();
}

// ---------------------------------------------------------------------------------------------
// A real AMD GPU
// ---------------------------------------------------------------------------------------------

#[test]
fn hip_on_device_equals_cpu() {
    let require = env_is("VMAFGPU_REQUIRE_AMD_GPU");
    let mut b = match HipBackend::new(0) {
        Ok(b) => b,
        Err(e) => {
            assert!(!require, "VMAFGPU_REQUIRE_AMD_GPU=1 but: {e}");
            eprintln!("hip_on_device_equals_cpu: skipped: {e}");
            return;
        }
    };
    eprintln!(
        "hip_on_device_equals_cpu: {} ({})",
        b.device_name(),
        b.arch()
    );
    let n = scenario(&mut b);
    eprintln!("hip_on_device_equals_cpu: {n} frames, HIP == CPU");
}

#[test]
fn backend_hip_is_a_clear_error_without_an_amd_gpu() {
    match gstvmafgpu::backend::create(BackendKind::Hip, 1, 0) {
        Ok(b) => assert_eq!(b.name(), "hip"),
        Err(gstvmafgpu::Error::Backend(m)) => {
            assert!(
                m.starts_with("HIP unavailable: ROCm not found")
                    || m.starts_with("HIP: no usable AMD GPU")
                    || m.contains("requested"),
                "{m}"
            );
        }
        Err(e) => panic!("not a backend error: {e:?}"),
    }
}
