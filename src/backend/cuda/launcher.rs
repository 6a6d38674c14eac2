//! NVRTC: run-time compilation of the two kernel texts (VMAF's and the companions') for the CUDA
//! backend, to a CUBIN for the device kept in the on-disk kernel cache (`gpu::cache`), and the
//! driver's view of the kernel argument structs.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::nvrtc::Ptx;

use crate::backend::gpu::cache;
pub(crate) use crate::backend::gpu::kernels::Text;
use crate::backend::gpu::kernels::{AdmArgs, MotionArgs, RangeArgs, ShiftArgs, VifArgs};
use crate::error::{Error, Result};

/// One module image per text and compute capability, made once per process ([`ptx`]).
type Images = Mutex<HashMap<(Text, i32, i32), Arc<OnceLock<std::result::Result<Ptx, String>>>>>;

/// The module image of `text` for the device of the calling thread's current context: the
/// CUBIN for its real architecture, from the on-disk kernel cache ([`image`]), made once per
/// process and device architecture; `arch` is the PTX target of the fallback.
pub(crate) fn ptx(text: Text, arch: &'static str) -> Result<Ptx> {
    let Ok(cc) = current_capability() else {
        return compile_text(text, arch);
    };
    static IMAGES: OnceLock<Images> = OnceLock::new();
    let cell = IMAGES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry((text, cc.0, cc.1))
        .or_default()
        .clone();
    match cell.get_or_init(|| image(text, arch, cc)) {
        Ok(p) => Ok(p.clone()),
        Err(e) => Err(Error::Backend(e.clone())),
    }
}

/// The compute capability of the current context's device.
fn current_capability() -> std::result::Result<(i32, i32), cudarc::driver::DriverError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let mut dev: cudarc::driver::sys::CUdevice = 0;
    // SAFETY: writes one device handle; fails without a current context.
    unsafe { cudarc::driver::sys::cuCtxGetDevice(&mut dev) }.result()?;
    let attr = |a| {
        // SAFETY: `dev` is the current context's device.
        unsafe { cudarc::driver::result::device::get_attribute(dev, a) }
    };
    Ok((
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    ))
}

/// `text` compiled for compute capability `major.minor`: the CUBIN for `sm_{major}{minor}`
/// from the kernel cache (`gpu::cache`, compiled and stored on a miss), keyed by the text, the
/// options, the architecture, the driver's and NVRTC's versions. Where NVRTC cannot build that
/// CUBIN (an NVRTC older than the device), the PTX for `arch` as before, uncached: the driver
/// compiles it; a kernel text that does not compile fails here with the PTX compiler's log.
fn image(
    text: Text,
    arch: &'static str,
    (major, minor): (i32, i32),
) -> std::result::Result<Ptx, String> {
    // SAFETY: only probes for the shared library (dlopen), calls nothing in it.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return compile_text(text, arch).map_err(|e| e.to_string()); // says NVRTC is missing
    }
    let mut options: Vec<String> = NVRTC_OPTIONS.iter().map(|o| o.to_string()).collect();
    options.push(format!("--gpu-architecture=sm_{major}{minor}"));
    let mut driver: std::ffi::c_int = 0;
    // SAFETY: writes one int.
    let _ = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
    let (mut nv_major, mut nv_minor): (std::ffi::c_int, std::ffi::c_int) = (0, 0);
    // SAFETY: writes two ints (libnvrtc is present: checked above).
    let _ = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut nv_major, &mut nv_minor) };
    let key = cache::Key::new(
        "cuda-cubin",
        &[
            text.source().as_bytes(),
            options.join("\n").as_bytes(),
            format!("sm_{major}{minor} driver {driver} nvrtc {nv_major}.{nv_minor}").as_bytes(),
        ],
    );
    match cache::global().load_or_compile("cuda-cubin", key, || {
        compile_cubin(text.source(), text.name(), &options)
    }) {
        Ok((cubin, _)) => Ok(Ptx::from_binary(cubin)),
        Err(_) => compile_text(text, arch).map_err(|e| e.to_string()),
    }
}

/// Compile `source` to a CUBIN with NVRTC (`options` name the real architecture).
fn compile_cubin(
    source: &str,
    name: &str,
    options: &[String],
) -> std::result::Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    // SAFETY: only probes for the shared library (dlopen), calls nothing in it.
    if !unsafe { sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc.so) is not installed or not on the library path".into());
    }
    let src = CString::new(source).map_err(|_| "kernel text contains NUL".to_string())?;
    let cname = CString::new(name).map_err(|_| "name contains NUL".to_string())?;
    let prog = result::create_program(&src, Some(&cname)).map_err(|e| format!("{name}: {e}"))?;
    // SAFETY: `prog` is live (created above, destroyed below); `src` and `cname` outlive it;
    // the CUBIN buffer is exactly the size NVRTC reports.
    let r = unsafe {
        result::compile_program(prog, options)
            .map_err(|e| {
                let log = result::get_program_log(prog).unwrap_or_default();
                let log: Vec<u8> = log
                    .iter()
                    .map(|&c| c as u8)
                    .take_while(|&c| c != 0)
                    .collect();
                format!("{name}: {e}: {}", String::from_utf8_lossy(&log))
            })
            .and_then(|()| {
                let mut n = 0usize;
                sys::nvrtcGetCUBINSize(prog, &mut n)
                    .result()
                    .map_err(|e| e.to_string())?;
                let mut cubin = vec![0u8; n];
                sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut std::ffi::c_char)
                    .result()
                    .map_err(|e| e.to_string())?;
                Ok(cubin)
            })
    };
    // SAFETY: `prog` is live and not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    r.and_then(|c| {
        if c.is_empty() {
            Err(format!("{name}: NVRTC returned no CUBIN"))
        } else {
            Ok(c)
        }
    })
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

/// Compile [`crate::backend::gpu::kernels::SOURCE`] to PTX with NVRTC for `arch` (e.g. "compute_90"). Needs only libnvrtc
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
