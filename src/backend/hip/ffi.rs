//! A thin run-time binding of the HIP runtime (libamdhip64) and hipRTC, through `dlopen`.
//!
//! Why not the `hip-sys` crate: its `hip-runtime-sys` links `amdhip64` at build time
//! (`cargo:rustc-link-lib=dylib=amdhip64`, `links = "amdhip64"`), so building needs ROCm and
//! the plugin's `.so` would carry a `DT_NEEDED` on libamdhip64: GStreamer could not even load
//! the plugin (CPU backend included) on a machine without ROCm. Nor do we need bindgen output
//! for ~35 functions whose C signatures have been stable since ROCm 5.0. So: `dlopen` +
//! `dlsym` (declared here; glibc provides them), function pointers checked at load time, no
//! new dependency. Nothing is linked; a missing library is an error value, never a panic.
//!
//! The only ABI-versioned piece is `hipDeviceProp_t` (its layout changed in ROCm 6.0, where
//! `hipGetDeviceProperties` became `hipGetDevicePropertiesR0600`): we read just the
//! architecture name from it, at the offset of the layout that matches the symbol we call, and
//! check it looks like one (see [`Runtime::arch_name`]).

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::sync::{Arc, OnceLock};

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;

/// `hipError_t` (a C enum).
pub type HipError = c_int;
/// `hipSuccess`.
pub const HIP_SUCCESS: HipError = 0;
/// `hipErrorNotReady` (an event or stream still has work queued).
pub const HIP_ERROR_NOT_READY: HipError = 600;
/// `hipErrorNoDevice`.
pub const HIP_ERROR_NO_DEVICE: HipError = 100;

/// `hipMemcpyKind`.
pub const MEMCPY_HOST_TO_DEVICE: c_int = 1;
pub const MEMCPY_DEVICE_TO_HOST: c_int = 2;
pub const MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
/// `hipHostMallocDefault` / `hipHostMallocWriteCombined`.
pub const HOST_MALLOC_DEFAULT: c_uint = 0;
pub const HOST_MALLOC_WRITE_COMBINED: c_uint = 4;
/// `hipStreamNonBlocking`: no implicit synchronisation with the null stream.
pub const STREAM_NON_BLOCKING: c_uint = 1;
/// `hipEventDisableTiming`.
pub const EVENT_DISABLE_TIMING: c_uint = 2;
/// `hipEventBlockingSync`: a host thread waiting for the event sleeps.
pub const EVENT_BLOCKING_SYNC: c_uint = 1;

/// Opaque handles (`hipStream_t`, `hipEvent_t`, `hipModule_t`, `hipFunction_t`,
/// `hiprtcProgram`).
pub type Stream = *mut c_void;
pub type Event = *mut c_void;
pub type Module = *mut c_void;
pub type Function = *mut c_void;
pub type Program = *mut c_void;

/// `hipDeviceProp_t` layouts: (size, offset of `gcnArchName`). ROCm 5.x
/// (`hipGetDeviceProperties`, measured with offsetof against ROCm 5.2.3's
/// hip_runtime_api.h) and ROCm 6.x (`hipGetDevicePropertiesR0600`, measured against the HIP
/// 6.3 header). Each call gets a zeroed buffer far larger than either layout.
const PROPS_R0000: (usize, usize) = (792, 396);
const PROPS_R0600: (usize, usize) = (1472, 1160);
const PROPS_BUFFER: usize = 16384;

type FnInit = unsafe extern "C" fn(c_uint) -> HipError;
type FnVoid = unsafe extern "C" fn() -> HipError;
type FnIntOut = unsafe extern "C" fn(*mut c_int) -> HipError;
type FnInt = unsafe extern "C" fn(c_int) -> HipError;
type FnDeviceName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipError;
type FnProps = unsafe extern "C" fn(*mut c_void, c_int) -> HipError;
type FnErrStr = unsafe extern "C" fn(HipError) -> *const c_char;
type FnMalloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> HipError;
type FnHostMalloc = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> HipError;
type FnFree = unsafe extern "C" fn(*mut c_void) -> HipError;
type FnMemcpyAsync =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, Stream) -> HipError;
type FnMemsetAsync = unsafe extern "C" fn(*mut c_void, c_int, usize, Stream) -> HipError;
type FnStreamCreate = unsafe extern "C" fn(*mut Stream, c_uint) -> HipError;
type FnStream = unsafe extern "C" fn(Stream) -> HipError;
type FnStreamWait = unsafe extern "C" fn(Stream, Event, c_uint) -> HipError;
type FnEventCreate = unsafe extern "C" fn(*mut Event, c_uint) -> HipError;
type FnEventRecord = unsafe extern "C" fn(Event, Stream) -> HipError;
type FnEvent = unsafe extern "C" fn(Event) -> HipError;
type FnModuleLoadData = unsafe extern "C" fn(*mut Module, *const c_void) -> HipError;
type FnModuleUnload = unsafe extern "C" fn(Module) -> HipError;
type FnModuleGetFunction = unsafe extern "C" fn(*mut Function, Module, *const c_char) -> HipError;
#[allow(clippy::type_complexity)]
type FnLaunch = unsafe extern "C" fn(
    Function,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Stream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> HipError;

type RtcResult = c_int;
type FnRtcCreate = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> RtcResult;
type FnRtcCompile = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> RtcResult;
type FnRtcSize = unsafe extern "C" fn(Program, *mut usize) -> RtcResult;
type FnRtcGet = unsafe extern "C" fn(Program, *mut c_char) -> RtcResult;
type FnRtcDestroy = unsafe extern "C" fn(*mut Program) -> RtcResult;
type FnRtcErrStr = unsafe extern "C" fn(RtcResult) -> *const c_char;

/// hipRTC's entry points (in libamdhip64 up to ROCm 5.x, in libhiprtc from ROCm 6.0).
pub struct Rtc {
    /// Where they came from.
    pub library: String,
    pub create_program: FnRtcCreate,
    pub compile_program: FnRtcCompile,
    pub get_program_log_size: FnRtcSize,
    pub get_program_log: FnRtcGet,
    pub get_code_size: FnRtcSize,
    pub get_code: FnRtcGet,
    pub destroy_program: FnRtcDestroy,
    pub get_error_string: FnRtcErrStr,
}

/// The HIP runtime's entry points this backend uses.
pub struct Runtime {
    /// The library that was loaded (name or path as given to dlopen).
    pub library: String,
    pub init: FnInit,
    pub runtime_get_version: FnIntOut,
    pub get_device_count: FnIntOut,
    pub set_device: FnInt,
    pub device_synchronize: FnVoid,
    pub device_get_name: FnDeviceName,
    /// `hipGetDevicePropertiesR0600` when the library has it, else `hipGetDeviceProperties`;
    /// with the matching layout.
    get_device_properties: FnProps,
    props_layout: (usize, usize),
    pub get_error_string: FnErrStr,
    pub malloc: FnMalloc,
    pub free: FnFree,
    pub host_malloc: FnHostMalloc,
    pub host_free: FnFree,
    pub memcpy_async: FnMemcpyAsync,
    pub memset_async: FnMemsetAsync,
    pub stream_create_with_flags: FnStreamCreate,
    pub stream_destroy: FnStream,
    pub stream_synchronize: FnStream,
    pub stream_wait_event: FnStreamWait,
    pub event_create_with_flags: FnEventCreate,
    pub event_record: FnEventRecord,
    pub event_synchronize: FnEvent,
    pub event_query: FnEvent,
    pub event_destroy: FnEvent,
    pub module_load_data: FnModuleLoadData,
    pub module_unload: FnModuleUnload,
    pub module_get_function: FnModuleGetFunction,
    pub module_launch_kernel: FnLaunch,
    /// hipRTC, found on first use.
    rtc: OnceLock<Result<Rtc, String>>,
    /// Where to look for libhiprtc when the runtime library does not export hipRTC.
    rtc_candidates: Vec<String>,
}

/// A `dlopen` handle. Never closed: the HIP runtime does not support being unloaded, and the
/// function pointers taken from it live as long as the process.
#[derive(Clone, Copy)]
struct Handle(*mut c_void);

fn last_dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated thread-local string valid until the
    // next dl* call on this thread; it is copied at once.
    let p = unsafe { dlerror() };
    if p.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null, NUL-terminated (above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn open(name: &str) -> Result<Handle, String> {
    let c = CString::new(name).map_err(|_| format!("{name:?}: NUL in library name"))?;
    // SAFETY: dlopen with a valid C string; RTLD_LOCAL keeps the library's symbols out of the
    // global namespace. Loading runs the library's constructors (the HIP runtime's own).
    let h = unsafe { dlopen(c.as_ptr(), RTLD_NOW | RTLD_LOCAL) };
    if h.is_null() {
        Err(last_dl_error())
    } else {
        Ok(Handle(h))
    }
}

fn symbol(h: Handle, name: &str) -> Option<*mut c_void> {
    let c = CString::new(name).ok()?;
    // SAFETY: h is a live dlopen handle, c a valid C string.
    let p = unsafe { dlsym(h.0, c.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Resolve `name` in `h` as a function pointer of type `F`.
///
/// # Safety
/// `F` must be an `unsafe extern "C" fn` type matching the C declaration of `name`.
unsafe fn func<F: Copy>(h: Handle, lib: &str, name: &str) -> Result<F, String> {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    let p = symbol(h, name).ok_or_else(|| format!("{lib} has no symbol {name}"))?;
    // SAFETY: F is a function pointer type (size checked) matching the symbol (caller).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// `dir/name` for each name in ROCm's usual library directories ($ROCM_PATH/lib, /opt/rocm/lib),
/// after the bare names (the dynamic linker's own search).
fn candidates(names: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut dirs = Vec::new();
    if let Ok(p) = std::env::var("ROCM_PATH")
        && !p.is_empty()
    {
        dirs.push(format!("{}/lib", p.trim_end_matches('/')));
    }
    dirs.push("/opt/rocm/lib".into());
    for d in dirs {
        for n in names {
            let p = format!("{d}/{n}");
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Environment variable naming the HIP runtime library to load instead of the default search.
pub const ENV_HIP_LIBRARY: &str = "VMAFGPU_HIP_LIBRARY";
/// Environment variable naming the hipRTC library to load instead of the default search.
pub const ENV_HIPRTC_LIBRARY: &str = "VMAFGPU_HIPRTC_LIBRARY";

/// The default HIP runtime candidates: `$VMAFGPU_HIP_LIBRARY` alone if set, else
/// libamdhip64.so (the system's default ROCm), then ROCm 7, 6, 5 by soname, each also under
/// `$ROCM_PATH/lib` and `/opt/rocm/lib`.
pub fn default_candidates() -> Vec<String> {
    match std::env::var(ENV_HIP_LIBRARY) {
        Ok(p) if !p.is_empty() => vec![p],
        _ => candidates(&[
            "libamdhip64.so",
            "libamdhip64.so.7",
            "libamdhip64.so.6",
            "libamdhip64.so.5",
        ]),
    }
}

fn rtc_default_candidates() -> Vec<String> {
    match std::env::var(ENV_HIPRTC_LIBRARY) {
        Ok(p) if !p.is_empty() => vec![p],
        _ => candidates(&["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"]),
    }
}

impl Runtime {
    /// Load the first of `candidates` that opens and has every entry point. The error says
    /// which were tried and why each failed, and how to fix it.
    pub fn load_from(candidates: &[String]) -> Result<Runtime, String> {
        let mut why = Vec::new();
        for c in candidates {
            match open(c).and_then(|h| Self::resolve(h, c)) {
                Ok(rt) => return Ok(rt),
                Err(e) => why.push(e),
            }
        }
        Err(format!(
            "ROCm not found: the HIP runtime library could not be loaded ({}). Install ROCm's \
             HIP runtime (libamdhip64; Debian: libamdhip64-5) or set {ENV_HIP_LIBRARY} to its path",
            if why.is_empty() {
                "no candidates".to_string()
            } else {
                why.join("; ")
            }
        ))
    }

    /// The process-wide runtime from [`default_candidates`], loaded once.
    pub fn system() -> Result<Arc<Runtime>, String> {
        static RT: OnceLock<Result<Arc<Runtime>, String>> = OnceLock::new();
        RT.get_or_init(|| Runtime::load_from(&default_candidates()).map(Arc::new))
            .clone()
    }

    fn resolve(h: Handle, lib: &str) -> Result<Runtime, String> {
        // SAFETY (every `func` call below): each type alias matches the C declaration of the
        // named function in hip_runtime_api.h (ROCm 5.0 to 6.x; the signatures are unchanged).
        unsafe {
            let (get_device_properties, props_layout) =
                match func::<FnProps>(h, lib, "hipGetDevicePropertiesR0600") {
                    Ok(f) => (f, PROPS_R0600),
                    Err(_) => (
                        func::<FnProps>(h, lib, "hipGetDeviceProperties")?,
                        PROPS_R0000,
                    ),
                };
            let host_malloc = match func::<FnHostMalloc>(h, lib, "hipHostMalloc") {
                Ok(f) => f,
                // Same signature and flag values; the newer name where the old one is gone.
                Err(_) => func::<FnHostMalloc>(h, lib, "hipExtHostAlloc")?,
            };
            let mut rt = Runtime {
                library: lib.to_string(),
                init: func(h, lib, "hipInit")?,
                runtime_get_version: func(h, lib, "hipRuntimeGetVersion")?,
                get_device_count: func(h, lib, "hipGetDeviceCount")?,
                set_device: func(h, lib, "hipSetDevice")?,
                device_synchronize: func(h, lib, "hipDeviceSynchronize")?,
                device_get_name: func(h, lib, "hipDeviceGetName")?,
                get_device_properties,
                props_layout,
                get_error_string: func(h, lib, "hipGetErrorString")?,
                malloc: func(h, lib, "hipMalloc")?,
                free: func(h, lib, "hipFree")?,
                host_malloc,
                host_free: func(h, lib, "hipHostFree")?,
                memcpy_async: func(h, lib, "hipMemcpyAsync")?,
                memset_async: func(h, lib, "hipMemsetAsync")?,
                stream_create_with_flags: func(h, lib, "hipStreamCreateWithFlags")?,
                stream_destroy: func(h, lib, "hipStreamDestroy")?,
                stream_synchronize: func(h, lib, "hipStreamSynchronize")?,
                stream_wait_event: func(h, lib, "hipStreamWaitEvent")?,
                event_create_with_flags: func(h, lib, "hipEventCreateWithFlags")?,
                event_record: func(h, lib, "hipEventRecord")?,
                event_synchronize: func(h, lib, "hipEventSynchronize")?,
                event_query: func(h, lib, "hipEventQuery")?,
                event_destroy: func(h, lib, "hipEventDestroy")?,
                module_load_data: func(h, lib, "hipModuleLoadData")?,
                module_unload: func(h, lib, "hipModuleUnload")?,
                module_get_function: func(h, lib, "hipModuleGetFunction")?,
                module_launch_kernel: func(h, lib, "hipModuleLaunchKernel")?,
                rtc: OnceLock::new(),
                rtc_candidates: Vec::new(),
            };
            // ROCm 5.x: hipRTC lives in the runtime library itself.
            if symbol(h, "hiprtcCreateProgram").is_some() {
                let _ = rt.rtc.set(Rtc::resolve(h, lib));
            } else {
                rt.rtc_candidates = rtc_default_candidates();
            }
            Ok(rt)
        }
    }

    /// hipRTC: from the runtime library (ROCm 5.x) or libhiprtc (ROCm 6+), loaded on first use.
    pub fn rtc(&self) -> Result<&Rtc, String> {
        self.rtc
            .get_or_init(|| {
                // Prefer the hipRTC of the runtime's own major version.
                let mut list = Vec::new();
                if let Ok(v) = self.version()
                    && self
                        .rtc_candidates
                        .iter()
                        .any(|c| c.ends_with("libhiprtc.so"))
                {
                    list.push(format!("libhiprtc.so.{}", v / 10_000_000));
                }
                list.extend(self.rtc_candidates.iter().cloned());
                let mut why = Vec::new();
                for c in &list {
                    match open(c).and_then(|h| Rtc::resolve(h, c)) {
                        Ok(r) => return Ok(r),
                        Err(e) => why.push(e),
                    }
                }
                Err(format!(
                    "hipRTC not found ({}); install ROCm's hipRTC (libhiprtc) or set \
                     {ENV_HIPRTC_LIBRARY} to its path",
                    why.join("; ")
                ))
            })
            .as_ref()
            .map_err(|e| e.clone())
    }

    /// `hipGetErrorString(e)`, with the code.
    pub fn error_string(&self, e: HipError) -> String {
        // SAFETY: hipGetErrorString takes any value and returns a static string or null.
        let p = unsafe { (self.get_error_string)(e) };
        if p.is_null() {
            format!("HIP error {e}")
        } else {
            // SAFETY: non-null static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
            format!("{s} (HIP error {e})")
        }
    }

    /// `Ok(())` for hipSuccess, else the error string prefixed with `what`.
    pub fn check(&self, e: HipError, what: &str) -> Result<(), String> {
        if e == HIP_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what}: {}", self.error_string(e)))
        }
    }

    /// `hipRuntimeGetVersion`: HIP_VERSION, major * 10^7 + minor * 10^5 + patch
    /// (e.g. 50221153 for 5.2.21153).
    pub fn version(&self) -> Result<i32, String> {
        let mut v: c_int = 0;
        // SAFETY: writes one int.
        let e = unsafe { (self.runtime_get_version)(&mut v) };
        self.check(e, "hipRuntimeGetVersion")?;
        Ok(v)
    }

    /// The device's name (`hipDeviceGetName`).
    pub fn device_name(&self, device: c_int) -> Result<String, String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf holds len bytes; the runtime writes a NUL-terminated name into it.
        let e = unsafe { (self.device_get_name)(buf.as_mut_ptr(), buf.len() as c_int, device) };
        self.check(e, "hipDeviceGetName")?;
        buf[255] = 0;
        // SAFETY: NUL-terminated (forced above).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// The device's architecture name with its target features, e.g. "gfx90a:sramecc+:xnack-"
    /// (`hipDeviceProp_t::gcnArchName`), as hipRTC's `--offload-arch` takes it.
    pub fn arch_name(&self, device: c_int) -> Result<String, String> {
        let mut buf = vec![0u8; PROPS_BUFFER];
        // SAFETY: buf is larger than every hipDeviceProp_t layout (792 / 1472 bytes), zeroed.
        let e = unsafe { (self.get_device_properties)(buf.as_mut_ptr() as *mut c_void, device) };
        self.check(e, "hipGetDeviceProperties")?;
        let (size, off) = self.props_layout;
        arch_from_props(&buf[..size.max(off + 256)], off).ok_or_else(|| {
            format!(
                "hipGetDeviceProperties: no gfx architecture name at offset {off} of the \
                 device properties (unknown hipDeviceProp_t layout in {})",
                self.library
            )
        })
    }
}

/// The NUL-terminated string at `off` if it is an AMD target ID ("gfx" + alphanumerics, then
/// optional ":feature+/-" parts).
pub fn arch_from_props(buf: &[u8], off: usize) -> Option<String> {
    let field = buf.get(off..(off + 256).min(buf.len()))?;
    let end = field.iter().position(|&b| b == 0)?;
    let s = std::str::from_utf8(&field[..end]).ok()?;
    let base = s.split(':').next()?;
    let ok = base.len() > 3
        && base.starts_with("gfx")
        && base[3..].bytes().all(|b| b.is_ascii_alphanumeric())
        && s.split(':').skip(1).all(|f| {
            f.len() > 1
                && (f.ends_with('+') || f.ends_with('-'))
                && f[..f.len() - 1].bytes().all(|b| b.is_ascii_alphanumeric())
        });
    ok.then(|| s.to_string())
}

impl Rtc {
    fn resolve(h: Handle, lib: &str) -> Result<Rtc, String> {
        // SAFETY: each type alias matches the C declaration in hiprtc.h (ROCm 5.0 to 6.x).
        unsafe {
            Ok(Rtc {
                library: lib.to_string(),
                create_program: func(h, lib, "hiprtcCreateProgram")?,
                compile_program: func(h, lib, "hiprtcCompileProgram")?,
                get_program_log_size: func(h, lib, "hiprtcGetProgramLogSize")?,
                get_program_log: func(h, lib, "hiprtcGetProgramLog")?,
                get_code_size: func(h, lib, "hiprtcGetCodeSize")?,
                get_code: func(h, lib, "hiprtcGetCode")?,
                destroy_program: func(h, lib, "hiprtcDestroyProgram")?,
                get_error_string: func(h, lib, "hiprtcGetErrorString")?,
            })
        }
    }

    fn error_string(&self, r: RtcResult) -> String {
        // SAFETY: takes any value, returns a static string or null.
        let p = unsafe { (self.get_error_string)(r) };
        if p.is_null() {
            format!("hipRTC error {r}")
        } else {
            // SAFETY: non-null static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
            format!("{s} (hipRTC error {r})")
        }
    }

    /// Compile `source` (named `name` in messages) with `options`; returns the code object, or
    /// the error with the compiler's log.
    pub fn compile(&self, source: &str, name: &str, options: &[String]) -> Result<Vec<u8>, String> {
        let src = CString::new(source).map_err(|_| "kernel source contains NUL".to_string())?;
        let cname = CString::new(name).map_err(|_| "program name contains NUL".to_string())?;
        let opts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|_| "compiler option contains NUL".to_string())?;
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: valid C strings; no headers (0, null arrays).
        let r = unsafe {
            (self.create_program)(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if r != 0 {
            return Err(format!("hiprtcCreateProgram: {}", self.error_string(r)));
        }
        struct Guard<'a>(&'a Rtc, Program);
        impl Drop for Guard<'_> {
            fn drop(&mut self) {
                // SAFETY: the program was created above and is destroyed once.
                unsafe { (self.0.destroy_program)(&mut self.1) };
            }
        }
        let g = Guard(self, prog);
        // SAFETY: opt_ptrs holds opts.len() valid C strings that outlive the call.
        let r = unsafe { (self.compile_program)(g.1, opt_ptrs.len() as c_int, opt_ptrs.as_ptr()) };
        let log = self.log(g.1);
        if r != 0 {
            return Err(format!(
                "hiprtcCompileProgram: {}\n{}",
                self.error_string(r),
                log.trim_end()
            ));
        }
        let mut size = 0usize;
        // SAFETY: writes one size_t.
        let r = unsafe { (self.get_code_size)(g.1, &mut size) };
        if r != 0 {
            return Err(format!("hiprtcGetCodeSize: {}", self.error_string(r)));
        }
        let mut code = vec![0u8; size];
        // SAFETY: code holds `size` bytes, what hipRTC writes.
        let r = unsafe { (self.get_code)(g.1, code.as_mut_ptr() as *mut c_char) };
        if r != 0 {
            return Err(format!("hiprtcGetCode: {}", self.error_string(r)));
        }
        if code.is_empty() {
            return Err(format!("hipRTC returned an empty code object\n{log}"));
        }
        Ok(code)
    }

    fn log(&self, prog: Program) -> String {
        let mut size = 0usize;
        // SAFETY: writes one size_t.
        if unsafe { (self.get_program_log_size)(prog, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size + 1];
        // SAFETY: buf holds size + 1 bytes; hipRTC writes `size` (NUL included).
        if unsafe { (self.get_program_log)(prog, buf.as_mut_ptr() as *mut c_char) } != 0 {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_a_clear_error() {
        let err = match Runtime::load_from(&["libvmafgpu-no-such-hip-runtime.so.99".to_string()]) {
            Ok(_) => panic!("a library that does not exist was loaded"),
            Err(e) => e,
        };
        assert!(err.starts_with("ROCm not found"), "{err}");
        assert!(
            err.contains("libvmafgpu-no-such-hip-runtime.so.99"),
            "{err}"
        );
        assert!(err.contains(ENV_HIP_LIBRARY), "{err}");
    }

    #[test]
    fn a_library_without_hip_symbols_is_refused() {
        // libc is loaded in every process and has no HIP entry points.
        let err = match Runtime::load_from(&["libc.so.6".to_string()]) {
            Ok(_) => panic!("libc accepted as the HIP runtime"),
            Err(e) => e,
        };
        assert!(err.contains("libc.so.6 has no symbol hip"), "{err}");
    }

    #[test]
    fn candidates_search_rocm_directories() {
        let c = candidates(&["libamdhip64.so.6"]);
        assert_eq!(c[0], "libamdhip64.so.6");
        assert!(
            c.contains(&"/opt/rocm/lib/libamdhip64.so.6".to_string()),
            "{c:?}"
        );
    }

    #[test]
    fn arch_name_parsing() {
        let mut b = vec![0u8; 2048];
        let put = |b: &mut Vec<u8>, off: usize, s: &str| {
            b[off..off + 256].fill(0);
            b[off..off + s.len()].copy_from_slice(s.as_bytes());
        };
        put(&mut b, PROPS_R0600.1, "gfx90a:sramecc+:xnack-");
        assert_eq!(
            arch_from_props(&b, PROPS_R0600.1).as_deref(),
            Some("gfx90a:sramecc+:xnack-")
        );
        put(&mut b, PROPS_R0000.1, "gfx1100");
        assert_eq!(
            arch_from_props(&b, PROPS_R0000.1).as_deref(),
            Some("gfx1100")
        );
        for bad in [
            "",
            "gfx",
            "AMD Instinct MI210",
            "gfx90a:sramecc",
            "gfx 90a",
            "gfx90a:+",
        ] {
            put(&mut b, 0, bad);
            assert_eq!(arch_from_props(&b, 0), None, "{bad:?}");
        }
        // No NUL within the field.
        let full = vec![b'x'; 300];
        assert_eq!(arch_from_props(&full, 0), None);
        // Field beyond the buffer.
        assert_eq!(arch_from_props(&b, 4096), None);
    }
}
