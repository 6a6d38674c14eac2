//! NVRTC: run-time compilation of the two kernel texts (VMAF's and the companions') for the CUDA
//! backend, one PTX cache for both, and the driver's view of the kernel argument structs.

use std::sync::OnceLock;

use cudarc::nvrtc::Ptx;

use crate::backend::gpu::kernels::{AdmArgs, MotionArgs, RangeArgs, SOURCE, ShiftArgs, VifArgs};
use crate::error::{Error, Result};

/// A kernel text the CUDA backend compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Text {
    /// VIF, ADM, motion, range check, MSB shift ([`SOURCE`]).
    Vmaf = 0,
    /// PSNR, SSIM, MS-SSIM, CIEDE2000, PSNR-HVS (`gpu::companion_plan::SOURCE`).
    Companions = 1,
}

impl Text {
    fn source(self) -> &'static str {
        match self {
            Text::Vmaf => SOURCE,
            Text::Companions => crate::backend::gpu::companion_plan::SOURCE,
        }
    }

    /// The name in the compiler's log.
    fn name(self) -> &'static str {
        match self {
            Text::Vmaf => "vmafgpu.cu",
            Text::Companions => "vmafgpu_companions.cu",
        }
    }
}

/// Each text's PTX, compiled once per process, for the compute capability of the first device
/// that asked (all devices of one machine share it in practice), or the compiler's error.
static PTX: [OnceLock<std::result::Result<Ptx, String>>; 2] = [const { OnceLock::new() }; 2];

/// The PTX of `text` for `arch` from the process's cache (compiled on the first call).
pub(crate) fn ptx(text: Text, arch: &'static str) -> Result<Ptx> {
    match PTX[text as usize].get_or_init(|| compile_text(text, arch).map_err(|e| e.to_string())) {
        Ok(p) => Ok(p.clone()),
        Err(e) => Err(Error::Backend(e.clone())),
    }
}

/// Compile `text` with NVRTC for `arch` ([`compile_source`]), without the cache.
pub(crate) fn compile_text(text: Text, arch: &'static str) -> Result<Ptx> {
    compile_source(text.source(), text.name(), arch)
}

/// NVRTC options: IEEE arithmetic exactly as written (the VIF gain and the ADM angle test are
/// double/float code that must round like the CPU's): no FMA contraction, no flush to zero,
/// IEEE division and square root, no fast math.
pub const NVRTC_OPTIONS: [&str; 5] = [
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
    "--std=c++17",
];

mod device_repr {
    use super::*;
    // SAFETY: #[repr(C)] structs of plain integers/floats whose layout equals the CUDA structs
    // of the same name (layout tests in gpu/kernels.rs, static_asserts in the .cu files).
    unsafe impl cudarc::driver::DeviceRepr for VifArgs {}
    // SAFETY: as above.
    unsafe impl cudarc::driver::DeviceRepr for AdmArgs {}
    // SAFETY: as above.
    unsafe impl cudarc::driver::DeviceRepr for MotionArgs {}
    // SAFETY: as above (two u32, no padding).
    unsafe impl cudarc::driver::DeviceRepr for RangeArgs {}
    // SAFETY: as above (two u32, no padding).
    unsafe impl cudarc::driver::DeviceRepr for ShiftArgs {}
}

/// Compile [`SOURCE`] to PTX with NVRTC for `arch` (e.g. "compute_90"). Needs only libnvrtc
/// (no driver, no GPU). Returns the PTX, or the compiler log in the error.
pub fn compile_ptx(arch: &'static str) -> crate::Result<cudarc::nvrtc::Ptx> {
    compile_text(Text::Vmaf, arch)
}

/// Compile a kernel text (`name` names it in the compiler's log) with NVRTC for `arch`, with
/// the options every vmafgpu kernel needs for CPU-equal numbers: fmad off, no flush to zero,
/// IEEE division and square root, no fast math.
pub fn compile_source(
    source: &str,
    name: &str,
    arch: &'static str,
) -> crate::Result<cudarc::nvrtc::Ptx> {
    // SAFETY: only probes for the shared library (dlopen), calls nothing in it.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(crate::Error::Backend(
            "NVRTC (libnvrtc.so) is not installed or not on the library path".into(),
        ));
    }
    let opts = cudarc::nvrtc::CompileOptions {
        ftz: Some(false),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fmad: Some(false),
        use_fast_math: None,
        options: vec!["--std=c++17".into()],
        arch: Some(arch),
        name: Some(name.into()),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(source, opts)
        .map_err(|e| crate::Error::Backend(format!("{name}: kernel compilation failed: {e}")))
}

/// The NVRTC architecture for a device of compute capability `major.minor`.
pub fn arch_name(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (7, 5) => "compute_75",
        (8, 0) => "compute_80",
        (8, 6) => "compute_86",
        (8, 7) => "compute_87",
        (8, 9) => "compute_89",
        (9, 0) => "compute_90",
        (10, 0) => "compute_100",
        (12, 0) => "compute_120",
        // Anything newer runs PTX of the newest listed architecture it supports; older GPUs
        // are below what CUDA 13 supports anyway.
        (m, _) if m >= 10 => "compute_100",
        _ => "compute_75",
    }
}
