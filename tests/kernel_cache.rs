//! The on-disk kernel cache (src/backend/gpu/cache.rs) across processes and through the
//! backends' hooks. The cache's own logic (cold, warm, corrupt, truncated, stale, unwritable,
//! disabled, threads, pruning) is unit-tested in src/backend/gpu/cache/tests.rs
//! (`cargo test --lib cache`). Here, with child processes of this test binary:
//!
//! - `processes_write_and_read_one_directory_at_once`: four processes read, delete and write the
//!   same entries at once; every read gives the right payload, every entry is valid afterwards
//!   and no temporary file is left;
//! - `global_cache_follows_the_environment`: `VMAFGPU_CACHE_DIR` (a directory, `off`, empty),
//!   `XDG_CACHE_HOME`, `HOME`;
//! - `hip_code_object_cache_on_emulated_runtime` (feature `hip`): the HIP backend against
//!   tests/hipemu's fake runtime and hipRTC: cold (compiles, stores), warm (hipRTC not called,
//!   the module loads, numbers == CPU), corrupt entry (recompiled, replaced). Needs a C++20
//!   compiler; without one it says why and passes, unless VMAFGPU_REQUIRE_EMU=1;
//! - `cuda_warm_start_compiles_nothing` (feature `cuda`, a GPU): the engine on CUDA with every
//!   companion metric, cold then warm in fresh processes on a fresh directory: the warm start
//!   compiles nothing, both give the same scores, equal (`==`) to the CPU backend's. Skips
//!   without a GPU, fails under VMAFGPU_REQUIRE_GPU=1.

#![cfg(any(feature = "cuda", feature = "hip"))]

mod gpu_content;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gstvmafgpu::backend::gpu::cache::{self, Cache, Key};

/// Environment of the child processes (read by this test only, not by the library).
const CHILD: &str = "KCACHE_TEST_CHILD";
const DIR: &str = "KCACHE_TEST_DIR";
const ID: &str = "KCACHE_TEST_ID";
const EXPECT: &str = "KCACHE_TEST_EXPECT";

fn is_child() -> bool {
    std::env::var(CHILD).as_deref() == Ok("1")
}

/// A fresh directory for one test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("kernel-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        TempDir(p)
    }

    fn s(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A child process running one `#[ignore]`d test of this binary with `env` (`None`: removed).
fn child(test: &str, env: &[(&str, Option<&str>)]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    c.env(CHILD, "1");
    for (k, v) in env {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Wait for a child, require that its test ran and passed, and return its `RESULT` lines.
fn finish(test: &str, c: std::process::Child) -> Vec<String> {
    let o = c.wait_with_output().expect("child output");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && out.contains("1 passed"),
        "child {test} failed:\n{out}\n{err}"
    );
    eprint!("{err}");
    out.lines()
        // (libtest's "test NAME ... " precedes the first line printed, on the same line)
        .filter_map(|l| Some(&l[l.find("RESULT ")? + 7..]))
        .map(str::to_string)
        .collect()
}

fn run_child(test: &str, env: &[(&str, Option<&str>)]) -> Vec<String> {
    finish(test, child(test, env).spawn().expect("spawn child"))
}

/// The value of `name=` in a `RESULT` line.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}

fn counters_line() -> String {
    let c = cache::counters();
    format!(
        "compiles={} hits={} stored={} invalid={} write_failures={}",
        c.compiles, c.hits, c.stored, c.invalid, c.write_failures
    )
}

/// The `.bin` entries and any other files of a cache directory.
fn listing(dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut bins = Vec::new();
    let mut other = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().into_owned();
        if n.ends_with(".bin") && !n.starts_with('.') {
            bins.push(n);
        } else {
            other.push(n);
        }
    }
    bins.sort();
    (bins, other)
}

// ---------------------------------------------------------------------------------------------
// Processes at once
// ---------------------------------------------------------------------------------------------

const RACE_KEYS: usize = 3;

fn race_key(i: usize) -> Key {
    Key::new("race", &[format!("kernel text {i}").as_bytes(), b"--opts"])
}

/// A few hundred KiB, different per key (a torn or mixed file would not match).
fn race_payload(i: usize) -> Vec<u8> {
    (0..300_000u32)
        .map(|j| (j.wrapping_mul(2_654_435_761) >> 13) as u8 ^ i as u8)
        .collect()
}

#[test]
fn processes_write_and_read_one_directory_at_once() {
    let d = TempDir::new("race");
    let test = "child_race";
    let children: Vec<_> = (0..4)
        .map(|id| {
            let id = id.to_string();
            child(test, &[(DIR, Some(d.s())), (ID, Some(&id))])
                .spawn()
                .expect("spawn child")
        })
        .collect();
    let mut writes = 0;
    for c in children {
        let r = finish(test, c);
        writes += field(&r[0], "stored").parse::<u64>().unwrap();
    }
    assert!(writes >= 4, "the children wrote {writes} entries in all");
    let (bins, other) = listing(&d.0);
    assert_eq!(bins.len(), RACE_KEYS, "{bins:?}");
    assert!(other.is_empty(), "left behind: {other:?}");
    let cache = Cache::at(&d.0);
    for i in 0..RACE_KEYS {
        let file = fs::read(cache.entry_path("race", race_key(i)).unwrap()).unwrap();
        assert!(
            cache::decode(race_key(i), &file) == Ok(&race_payload(i)[..]),
            "entry {i} invalid after the race"
        );
    }
    eprintln!("4 processes: {writes} writes, every read and every entry valid");
}

#[test]
#[ignore = "run by processes_write_and_read_one_directory_at_once in a child process"]
fn child_race() {
    assert!(is_child());
    let dir = std::env::var(DIR).unwrap();
    let id: usize = std::env::var(ID).unwrap().parse().unwrap();
    let cache = Cache::at(&dir);
    let payloads: Vec<Vec<u8>> = (0..RACE_KEYS).map(race_payload).collect();
    for round in 0..120 {
        let i = (round + id) % RACE_KEYS;
        // Deleting entries now and then keeps every process writing while others read.
        if round % 4 == id % 4 {
            let _ = fs::remove_file(cache.entry_path("race", race_key(i)).unwrap());
        }
        let (b, _) = cache
            .load_or_compile("race", race_key(i), || Ok::<_, ()>(payloads[i].clone()))
            .unwrap();
        assert!(
            b == payloads[i],
            "process {id}, round {round}: wrong payload"
        );
    }
    let c = cache::counters();
    assert_eq!(c.invalid, 0, "a process saw a torn or foreign entry");
    assert_eq!(c.write_failures, 0);
    println!("RESULT {}", counters_line());
}

// ---------------------------------------------------------------------------------------------
// The environment
// ---------------------------------------------------------------------------------------------

/// A variable set (`Some`) or removed (`None`) in a child's environment.
type Var<'a> = (&'a str, Option<&'a str>);

#[test]
fn global_cache_follows_the_environment() {
    let e = cache::ENV_CACHE_DIR;
    let cases: [(&[Var], &str); 6] = [
        (
            &[(e, Some("/tmp/kc-mine")), ("XDG_CACHE_HOME", Some("/x"))],
            "/tmp/kc-mine",
        ),
        (&[(e, Some("off")), ("HOME", Some("/h"))], "none"),
        (&[(e, Some("")), ("HOME", Some("/h"))], "none"),
        (
            &[
                (e, None),
                ("XDG_CACHE_HOME", Some("/x")),
                ("HOME", Some("/h")),
            ],
            "/x/vmafgpu",
        ),
        (
            &[(e, None), ("XDG_CACHE_HOME", None), ("HOME", Some("/h"))],
            "/h/.cache/vmafgpu",
        ),
        (
            &[(e, None), ("XDG_CACHE_HOME", None), ("HOME", None)],
            "none",
        ),
    ];
    for (env, expect) in cases {
        let mut env = env.to_vec();
        env.push((EXPECT, Some(expect)));
        run_child("child_env", &env);
    }
}

#[test]
#[ignore = "run by global_cache_follows_the_environment in a child process"]
fn child_env() {
    assert!(is_child());
    let expect = std::env::var(EXPECT).unwrap();
    let dir = cache::global()
        .dir()
        .map(|p| p.to_str().unwrap().to_string());
    assert_eq!(dir.as_deref().unwrap_or("none"), expect);
}

// ---------------------------------------------------------------------------------------------
// HIP: the code object hook, on the emulated runtime
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "hip")]
mod hip_hook {
    use super::*;
    use std::ffi::{CString, c_char, c_int, c_long, c_void};

    use gstvmafgpu::backend::hip::HipBackend;
    use gstvmafgpu::backend::{Backend, compute_job_cpu};
    use gstvmafgpu::features::adm::AdmParams;
    use gstvmafgpu::features::vif::VifParams;

    const LIB: &str = "KCACHE_TEST_LIB";
    const ARCH: &str = "gfx90a:sramecc+:xnack-";

    unsafe extern "C" {
        fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }

    /// The fake ROCm 5 runtime (hipRTC inside) of tests/hipemu, built for this test under its
    /// own name (tests/hip_backend.rs builds its own), or None without a C++ compiler.
    fn fake_lib() -> Option<PathBuf> {
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hipemu/fake_hip.cpp");
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("libvmafgpu-kcache-fakehip5.so");
        let r = Command::new(&cxx)
            .args(["-std=c++20", "-O1", "-ffp-contract=off", "-fPIC", "-shared"])
            .args([
                "-pthread",
                "-w",
                "-fvisibility=hidden",
                "-DFAKE_ROCM5",
                "-o",
            ])
            .arg(&path)
            .arg(&src)
            .output();
        match r {
            Ok(o) if o.status.success() => Some(path),
            Ok(o) => panic!("{cxx} failed:\n{}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => {
                let msg = format!("no C++ compiler ({cxx}: {e}): HIP hook check skipped");
                assert!(
                    std::env::var("VMAFGPU_REQUIRE_EMU").as_deref() != Ok("1"),
                    "{msg}, but VMAFGPU_REQUIRE_EMU=1"
                );
                eprintln!("{msg}");
                None
            }
        }
    }

    #[test]
    fn hip_code_object_cache_on_emulated_runtime() {
        let Some(lib) = fake_lib() else { return };
        let d = TempDir::new("hip");
        let env = [
            (cache::ENV_CACHE_DIR, Some(d.s())),
            (LIB, Some(lib.to_str().unwrap())),
        ];
        let run = || {
            let r = run_child("hip_hook::child_hip", &env);
            let l = r[0].clone();
            let n = |f: &str| field(&l, f).parse::<u64>().unwrap();
            (
                n("hiprtc"),
                n("compiles"),
                n("hits"),
                n("stored"),
                n("invalid"),
            )
        };
        // Cold: hipRTC compiles once, the entry is stored.
        assert_eq!(run(), (1, 1, 0, 1, 0), "cold");
        let (bins, other) = listing(&d.0);
        assert!(
            bins.len() == 1 && bins[0].starts_with("hip-code-object-") && other.is_empty(),
            "{bins:?} {other:?}"
        );
        let entry = d.0.join(&bins[0]);
        // Warm: no hipRTC call; the module loaded from the stored code object.
        assert_eq!(run(), (0, 0, 1, 0, 0), "warm");
        // Corrupt: detected, recompiled, replaced; then warm again.
        let mut bytes = fs::read(&entry).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        fs::write(&entry, &bytes).unwrap();
        assert_eq!(run(), (1, 1, 0, 1, 1), "corrupt entry");
        assert_eq!(run(), (0, 0, 1, 0, 0), "warm after replacing");
        // Truncated.
        fs::write(&entry, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(run(), (1, 1, 0, 1, 1), "truncated entry");
        // Disabled: compiles, writes nothing.
        let off = [(cache::ENV_CACHE_DIR, Some("off")), env[1]];
        let r = run_child("hip_hook::child_hip", &off);
        assert_eq!(field(&r[0], "hiprtc"), "1");
        assert_eq!(field(&r[0], "stored"), "0");
    }

    #[test]
    #[ignore = "run by hip_code_object_cache_on_emulated_runtime in a child process"]
    fn child_hip() {
        assert!(is_child());
        let lib = std::env::var(LIB).unwrap();
        let c = CString::new(lib.as_str()).unwrap();
        // SAFETY: dlopen of the library the backend loads too (same handle, refcounted).
        let h = unsafe { dlopen(c.as_ptr(), 2) };
        assert!(!h.is_null());
        let sym = |n: &str| {
            let c = CString::new(n).unwrap();
            // SAFETY: live handle, valid name.
            let p = unsafe { dlsym(h, c.as_ptr()) };
            assert!(!p.is_null(), "{n}");
            p
        };
        // SAFETY: the fake's C signatures (tests/hipemu/fake_hip.cpp).
        let (configure, compiles) = unsafe {
            (
                std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(c_int, *const c_char, c_int, c_int),
                >(sym("fakehip_configure")),
                std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut c_char, usize) -> c_long,
                >(sym("fakehiprtc_compiles")),
            )
        };
        let arch = CString::new(ARCH).unwrap();
        // SAFETY: plain values and a valid C string.
        unsafe { configure(1, arch.as_ptr(), 50_221_153, 0) };

        let mut b = HipBackend::with_library(&lib, 0).expect("open the fake device");
        let (r, d, p) = gpu_content::frames(gpu_content::Content::Natural, 64, 48, 8, 7);
        let cfg = gpu_content::config(VifParams::default(), AdmParams::default());
        let job = gpu_content::job(0, r, d, Some(p));
        let want = compute_job_cpu(&cfg, &job).unwrap();
        b.configure(&cfg).unwrap();
        b.submit(job).unwrap();
        let (i, got) = b.receive(true).unwrap().expect("a result");
        assert_eq!((i, got), (0, want), "HIP (emulated) != CPU");
        drop(b);
        let mut buf = [0 as c_char; 512];
        // SAFETY: a 512-byte buffer.
        let n = unsafe { compiles(buf.as_mut_ptr(), buf.len()) };
        println!("RESULT hiprtc={n} {}", counters_line());
    }
}

// ---------------------------------------------------------------------------------------------
// CUDA on a GPU: cold and warm start
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "cuda")]
mod cuda_start {
    use super::*;
    use gstvmafgpu::backend::Companions;
    use gstvmafgpu::engine::{BackendKind, Scorer, ScorerConfig};
    use gstvmafgpu::picture::{Chroma, ChromaFormat, OwnedPlane, Picture, PlaneRef};

    /// Why CUDA cannot run here, if it cannot.
    fn no_gpu() -> Option<String> {
        if let Some(why) = gstvmafgpu::backend::cuda::unavailable_reason() {
            return Some(why);
        }
        match cudarc::driver::CudaContext::device_count() {
            Ok(n) if n > 0 => None,
            Ok(_) => Some("no CUDA device".into()),
            Err(e) => Some(format!("cuDeviceGetCount: {e}")),
        }
    }

    #[test]
    fn cuda_warm_start_compiles_nothing() {
        let test = "cuda_warm_start_compiles_nothing";
        if let Some(why) = no_gpu() {
            assert!(
                std::env::var("VMAFGPU_REQUIRE_GPU").as_deref() != Ok("1"),
                "{test}: VMAFGPU_REQUIRE_GPU=1 but CUDA is unusable: {why}"
            );
            eprintln!("{test}: skipped, no usable CUDA device: {why}");
            return;
        }
        let d = TempDir::new("cuda");
        let env = [(cache::ENV_CACHE_DIR, Some(d.s()))];
        let cold = run_child("cuda_start::child_cuda_start", &env);
        let (bins, other) = listing(&d.0);
        let warm = run_child("cuda_start::child_cuda_start", &env);
        let n = |l: &str, f: &str| field(l, f).parse::<u64>().unwrap();
        // Two kernel texts (VMAF's and the companions'), each a CUBIN for the device.
        assert_eq!(
            (
                n(&cold[0], "compiles"),
                n(&cold[0], "stored"),
                n(&cold[0], "hits")
            ),
            (2, 2, 0),
            "cold: {}",
            cold[0]
        );
        assert!(
            bins.len() == 2
                && bins.iter().all(|b| b.starts_with("cuda-cubin-"))
                && other.is_empty(),
            "{bins:?} {other:?}"
        );
        assert_eq!(
            (
                n(&warm[0], "compiles"),
                n(&warm[0], "stored"),
                n(&warm[0], "hits")
            ),
            (0, 0, 2),
            "warm: {}",
            warm[0]
        );
        assert_eq!(cold[1], warm[1], "cold and warm starts score differently");
        eprintln!(
            "{test}: cold start {} ms to the first score, warm {} ms; scores equal",
            field(&cold[0], "first_score_ms"),
            field(&warm[0], "first_score_ms")
        );
    }

    fn frames(n: usize, w: usize, h: usize) -> Vec<[OwnedPlane; 6]> {
        (0..n)
            .map(|i| {
                let c = gpu_content::Content::Natural;
                let (ry, dy, _) = gpu_content::frames(c, w, h, 8, 90 + i as u64);
                let (ru, du, _) = gpu_content::frames(c, w / 2, h / 2, 8, 190 + i as u64);
                let (rv, dv, _) = gpu_content::frames(c, w / 2, h / 2, 8, 290 + i as u64);
                [ry, ru, rv, dy, du, dv]
            })
            .collect()
    }

    fn bytes(p: &OwnedPlane) -> Vec<u8> {
        p.data.iter().map(|&v| v as u8).collect()
    }

    fn picture<'a>(y: &'a OwnedPlane, b: &'a [Vec<u8>]) -> Picture<'a> {
        let (w, cw) = (y.width, y.width / 2);
        Picture {
            width: y.width,
            height: y.height,
            bpc: 8,
            format: ChromaFormat::Yuv420,
            luma: PlaneRef {
                data: &b[0],
                stride: w,
            },
            chroma: Chroma::Planar {
                u: PlaneRef {
                    data: &b[1],
                    stride: cw,
                },
                v: PlaneRef {
                    data: &b[2],
                    stride: cw,
                },
            },
        }
    }

    /// Every frame's metrics, as exact bits, and the time from `Scorer::new` to the first score.
    fn score(kind: BackendKind, frames: &[[OwnedPlane; 6]]) -> (String, f64) {
        let t = std::time::Instant::now();
        let mut s = Scorer::new(ScorerConfig {
            backend: kind,
            companions: Companions {
                psnr: true,
                ssim: true,
                ms_ssim: true,
                ciede: true,
                psnr_hvs: true,
                ..Companions::default()
            },
            ..ScorerConfig::default()
        })
        .expect("scorer");
        let mut first = None;
        let mut out = Vec::new();
        for f in frames {
            let b: Vec<Vec<u8>> = f.iter().map(bytes).collect();
            let got = s
                .push(&picture(&f[0], &b[0..3]), &picture(&f[3], &b[3..6]))
                .expect("push");
            if !got.is_empty() && first.is_none() {
                first = Some(t.elapsed());
            }
            out.extend(got);
        }
        let (rest, _) = s.finish().expect("finish");
        first.get_or_insert(t.elapsed());
        out.extend(rest);
        assert_eq!(out.len(), frames.len());
        let text = out
            .iter()
            .flat_map(|f| {
                f.metrics
                    .iter()
                    .map(|(n, v)| format!("{n}:{:x}", v.to_bits()))
            })
            .collect::<Vec<_>>()
            .join(",");
        (text, first.unwrap().as_secs_f64() * 1e3)
    }

    #[test]
    #[ignore = "run by cuda_warm_start_compiles_nothing in a child process"]
    fn child_cuda_start() {
        assert!(is_child());
        let f = frames(4, 352, 288);
        let (gpu, ms) = score(BackendKind::Cuda, &f);
        let counters = counters_line();
        let (cpu, _) = score(BackendKind::Cpu, &f);
        assert_eq!(gpu, cpu, "CUDA scores differ from the CPU's");
        println!("RESULT {counters} first_score_ms={ms:.0}");
        println!("RESULT {gpu}");
    }
}
