//! The HIP backend: VIF, ADM and motion accumulators on an AMD GPU through ROCm, from the same
//! kernel text (kernels/*.cu) and the same frame plan as the CUDA backend.
//!
//! Support level: built and checked in CI without hardware (the binding loads, hipRTC compiles
//! every kernel for gfx90a and gfx1030, and the whole host side runs against a CPU emulation of
//! the HIP runtime, tests/hip_backend.rs). It has not run on an AMD GPU.
//!
//! - Nothing is linked: the HIP runtime (libamdhip64) and hipRTC are loaded with `dlopen` on
//!   first use ([`ffi`]); without ROCm, [`HipBackend::new`] returns an [`Error::Backend`] that
//!   says so, and the plugin still loads.
//! - The kernels are compiled once per process and architecture with hipRTC, for the device's
//!   own target ID (`hipDeviceProp_t::gcnArchName`, e.g. "gfx90a:sramecc+:xnack-") with
//!   `-ffp-contract=off` (hipcc and hipRTC contract `a * b + c` into FMA by default, which
//!   would round the VIF gain and the ADM angle test differently from the CPU).
//! - Wavefront size: the kernels use no wave-level operation (no shuffles, ballots, lane
//!   masks or `warpSize`; kernels/compat.h); block reductions go through shared memory and
//!   `__syncthreads()` and end in 64-bit integer atomics, so wave64 (CDNA, GCN) and wave32
//!   (RDNA) give the same integers as CUDA's warp 32.
//! - The slot pipeline is the backend-neutral one of [`crate::backend::gpu::pipeline`] (the
//!   CUDA backend's too), over [`device::HipDevice`]: [`SLOTS`] frames in flight, upload of
//!   frame n+1 overlapping compute of frame n, motion from the previous slot, results in
//!   submission order, host planes (staged: HIP uploads none from where it is) and their range
//!   check on the GPU. The companion metrics, CAMBI and SpEED chroma run on the GPU too, with
//!   the CUDA backend's executor ([`crate::backend::gpu::companion`]; their kernel text is
//!   compiled by hipRTC as a second code object), their launches one by one (no graphs).

pub mod device;
pub mod ffi;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use self::device::HipDevice;
use self::ffi::Runtime;
pub use super::gpu::kernels::Text;
use super::gpu::pipeline::GpuBackend;
pub use super::gpu::pipeline::SLOTS;
use crate::error::{Error, Result};

fn be(what: &str, msg: impl std::fmt::Display) -> Error {
    super::gpu::gpu_error("HIP", what, msg)
}

/// hipRTC options for `arch` (a target ID such as "gfx90a:sramecc+:xnack-"): the device's
/// architecture, C++17, and IEEE arithmetic as written (no FMA contraction, no fast math, no
/// flush of denormals), as the NVRTC options of the CUDA backend.
pub fn hiprtc_options(arch: &str) -> Vec<String> {
    vec![
        format!("--offload-arch={arch}"),
        "-O3".into(),
        "-std=c++17".into(),
        "-ffp-contract=off".into(),
        "-fno-fast-math".into(),
        "-fno-gpu-flush-denormals-to-zero".into(),
    ]
}

/// Base architectures that hipRTC of HIP before 5.5 compiles the kernels for, as tested with
/// Debian 12's ROCm 5.2.3 (scripts/check-kernels-hip.sh). That hipRTC does not return an error
/// for a target it does not know (gfx940, gfx942, gfx1100, gfx1101, gfx1200 were tried): it
/// aborts the process. So an older runtime is only asked for these.
pub const OLD_HIPRTC_ARCHS: [&str; 20] = [
    "gfx803", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
    "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033",
    "gfx1034", "gfx1035", "gfx1036",
];

/// Refuse (with the reason) an architecture that the runtime's hipRTC cannot be trusted to
/// compile for without crashing. `version` is `hipRuntimeGetVersion`'s value.
pub fn check_arch(version: i32, arch: &str) -> std::result::Result<(), String> {
    let base = arch.split(':').next().unwrap_or(arch);
    if version < 50_500_000 && !OLD_HIPRTC_ARCHS.contains(&base) {
        return Err(format!(
            "the device is {base}, which HIP {}.{}'s hipRTC cannot compile for (ROCm 5.5 or \
             newer is needed for it)",
            version / 10_000_000,
            version / 100_000 % 100
        ));
    }
    Ok(())
}

type CodeKey = (String, String, &'static str);
type CodeCache = Mutex<HashMap<CodeKey, std::result::Result<Arc<Vec<u8>>, String>>>;

/// Compile kernel text `text` for `arch` with the runtime's hipRTC, or read it from the on-disk
/// kernel cache: once per process, runtime library, architecture and text (failures are
/// remembered too).
pub fn code_object(rt: &Runtime, arch: &str, text: Text) -> Result<Arc<Vec<u8>>> {
    use super::gpu::cache as kernel_cache;
    static CACHE: OnceLock<CodeCache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
    let key = (rt.library.clone(), arch.to_string(), text.name());
    let r = map.entry(key).or_insert_with(|| {
        let rtc = rt.rtc()?;
        let opts = hiprtc_options(arch);
        // The on-disk kernel cache (gpu::cache): keyed by the text, the options, the runtime's
        // version and the identity of the runtime and hipRTC libraries.
        let id = format!("{} {}", arch, rt.version().unwrap_or(0));
        let (lib, rtc_lib) = (
            kernel_cache::file_identity(&rt.library),
            kernel_cache::file_identity(&rtc.library),
        );
        let key = kernel_cache::Key::new(
            "hip-code-object",
            &[
                text.source().as_bytes(),
                opts.join("\n").as_bytes(),
                id.as_bytes(),
                &lib,
                &rtc_lib,
            ],
        );
        kernel_cache::global()
            .load_or_compile("hip-code-object", key, || {
                rtc.compile(text.source(), text.name(), &opts)
            })
            .map(|(code, _)| Arc::new(code))
            .map_err(|e| format!("kernel compilation for {arch} failed: {e}"))
    });
    r.clone().map_err(|e| Error::Backend(format!("HIP: {e}")))
}

/// Why HIP cannot be used here, or `None` if the runtime library and hipRTC load. Touches
/// nothing but `dlopen`/`dlsym` (no device query).
pub fn unavailable_reason() -> Option<String> {
    match Runtime::system() {
        Err(e) => Some(e),
        Ok(rt) => rt.rtc().err(),
    }
}

/// The HIP backend: the GPU slot pipeline on an AMD device. See the module documentation.
pub type HipBackend = GpuBackend<HipDevice>;

impl GpuBackend<HipDevice> {
    /// Open HIP device `device_id` with the system's ROCm ([`ffi::default_candidates`]): load
    /// the libraries, open the device, compile (once per process and architecture) and load the
    /// kernels, upload the tables.
    pub fn new(device_id: u32) -> Result<HipBackend> {
        let rt = Runtime::system().map_err(|e| Error::Backend(format!("HIP unavailable: {e}")))?;
        Self::with_runtime(rt, device_id)
    }

    /// As [`new`](Self::new), with the HIP runtime library at `library` (a path or soname).
    #[doc(hidden)]
    pub fn with_library(library: &str, device_id: u32) -> Result<HipBackend> {
        let rt = Runtime::load_from(&[library.to_string()])
            .map_err(|e| Error::Backend(format!("HIP unavailable: {e}")))?;
        Self::with_runtime(Arc::new(rt), device_id)
    }

    fn with_runtime(rt: Arc<Runtime>, device_id: u32) -> Result<HipBackend> {
        GpuBackend::start("vmafgpu-hip", move || HipDevice::open(rt, device_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_turn_off_contraction_for_the_device_arch() {
        let o = hiprtc_options("gfx90a:sramecc+:xnack-");
        assert_eq!(o[0], "--offload-arch=gfx90a:sramecc+:xnack-");
        assert!(o.iter().any(|x| x == "-ffp-contract=off"));
        assert!(
            !o.iter()
                .any(|x| x.contains("fast-math") && !x.starts_with("-fno"))
        );
    }

    #[test]
    fn kernel_text_has_no_wave_size_dependence() {
        // Warp/wavefront-level operations would make wave64 (CDNA, GCN) and wave32 (RDNA,
        // CUDA) differ; the kernels reduce through shared memory and __syncthreads() only.
        for banned in [
            "__shfl",
            "__ballot",
            "__any(",
            "__all(",
            "__syncwarp",
            "__lane_id",
            "__activemask",
            "__reduce_",
            "__match_",
            "warpSize",
            "__AMDGCN_WAVEFRONT_SIZE",
            "0xffffffff",
        ] {
            for text in [Text::Vmaf, Text::Companions] {
                assert!(
                    !text.source().contains(banned),
                    "kernel text {text:?} uses {banned}"
                );
            }
        }
        assert!(Text::Vmaf.source().contains("__syncthreads()"));
        assert!(Text::Companions.source().contains("__syncthreads()"));
    }

    #[test]
    fn old_hiprtc_refuses_architectures_it_would_crash_on() {
        let v52 = 50_221_153;
        for ok in [
            "gfx90a",
            "gfx90a:sramecc+:xnack-",
            "gfx1030",
            "gfx908",
            "gfx1036",
        ] {
            assert_eq!(check_arch(v52, ok), Ok(()), "{ok}");
        }
        for bad in ["gfx1100", "gfx942:sramecc+:xnack-", "gfx940", "gfx1201"] {
            let e = check_arch(v52, bad).unwrap_err();
            assert!(e.contains("HIP 5.2") && e.contains("5.5"), "{e}");
        }
        // Newer runtimes compile for the devices they enumerate.
        assert_eq!(check_arch(60_300_000, "gfx1100"), Ok(()));
        assert_eq!(check_arch(50_500_000, "gfx942:sramecc+:xnack-"), Ok(()));
    }

    #[test]
    fn missing_runtime_is_a_backend_error() {
        let e = match HipBackend::with_library("libvmafgpu-no-such-amdhip64.so", 0) {
            Ok(_) => panic!("opened a HIP runtime that does not exist"),
            Err(e) => e,
        };
        match e {
            Error::Backend(m) => {
                assert!(m.starts_with("HIP unavailable: ROCm not found"), "{m}")
            }
            other => panic!("not a backend error: {other:?}"),
        }
    }
}
