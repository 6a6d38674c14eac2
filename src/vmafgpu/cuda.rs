//! GStreamer's CUDA library (libgstcuda-1.0, gst-plugins-bad 1.22), loaded at run time: the
//! `gst.cuda.context` sharing, the test for CUDA memory and the CUDA buffer pool.
//!
//! gstreamer-rs has no binding of libgstcuda, so this is a small hand-made one. It is
//! `dlopen`ed, never linked: the plugin loads (and negotiates system memory) on a machine
//! without it, where no CUDA memory can exist anyway. Every entry point is checked at load
//! time; a missing library or symbol is a `None`, never a panic.
//!
//! One context per device: the element wraps the CUDA backend's own context (the device's
//! primary context, [`engine::cuda_primary_context`]) in a `GstCudaContext`
//! (`gst_cuda_context_new_wrapped`, new in 1.22) and hands it to the decoders that ask for one
//! (the CONTEXT query, `gst_cuda_handle_context_query`), so that their frames are memory the
//! backend reads where it is. cudarc (0.18) cannot adopt another CUcontext (its
//! `CudaContext::new` retains the device's primary context, and nothing wraps a raw one), so
//! a context set on the element from elsewhere is not adopted: frames in another context's
//! memory are mapped to system memory instead (logged).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use gst::glib;
use gst::glib::translate::{FromGlibPtrFull, ToGlibPtr};

use crate::engine;

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;

/// `GstMapFlags`' `GST_MAP_CUDA` (`GST_MAP_FLAG_LAST << 1`, gstcudamemory.h): map the device
/// memory itself.
pub const GST_MAP_CUDA: u32 = gst::ffi::GST_MAP_FLAG_LAST << 1;

/// The caps feature of CUDA memory (`GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY`).
pub const CAPS_FEATURE: &str = "memory:CUDAMemory";

/// An opaque `GstCudaContext` (a `GstObject`).
#[repr(C)]
pub struct GstCudaContext {
    _private: [u8; 0],
}

type FnLoad = unsafe extern "C" fn() -> glib::ffi::gboolean;
type FnNewWrapped = unsafe extern "C" fn(*mut c_void, c_int) -> *mut GstCudaContext;
type FnGetHandle = unsafe extern "C" fn(*mut GstCudaContext) -> *mut c_void;
type FnContextQuery = unsafe extern "C" fn(
    *mut gst::ffi::GstElement,
    *mut gst::ffi::GstQuery,
    *mut GstCudaContext,
) -> glib::ffi::gboolean;
type FnSetContext = unsafe extern "C" fn(
    *mut gst::ffi::GstElement,
    *mut gst::ffi::GstContext,
    c_int,
    *mut *mut GstCudaContext,
) -> glib::ffi::gboolean;
type FnIsCudaMemory = unsafe extern "C" fn(*mut gst::ffi::GstMemory) -> glib::ffi::gboolean;
type FnPoolNew = unsafe extern "C" fn(*mut GstCudaContext) -> *mut gst::ffi::GstBufferPool;
type FnMemorySync = unsafe extern "C" fn(*mut gst::ffi::GstMemory);

/// libgstcuda's entry points the element uses.
pub struct Lib {
    new_wrapped: FnNewWrapped,
    get_handle: FnGetHandle,
    context_query: FnContextQuery,
    set_context: FnSetContext,
    is_cuda_memory: FnIsCudaMemory,
    pool_new: FnPoolNew,
    /// `gst_cuda_memory_sync` (GStreamer 1.24 and later, where CUDA memory carries the stream
    /// that writes it); absent in 1.22, whose writers finish their work before they push.
    memory_sync: Option<FnMemorySync>,
}

/// The library, loaded once; `Err` says why it cannot be used.
pub fn lib() -> Result<&'static Lib, &'static str> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(|e| e.as_str())
}

fn load() -> Result<Lib, String> {
    // SAFETY: dlopen with a NUL-terminated name; the handle is never closed (the functions
    // stay valid for the process).
    let h = unsafe { dlopen(c"libgstcuda-1.0.so.0".as_ptr(), RTLD_NOW | RTLD_LOCAL) };
    if h.is_null() {
        return Err("libgstcuda-1.0.so.0 (gst-plugins-bad's CUDA library) is not installed".into());
    }
    let sym = |name: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: h is a live handle, name is NUL-terminated.
        let p = unsafe { dlsym(h, name.as_ptr()) };
        if p.is_null() {
            Err(format!("libgstcuda-1.0 has no {}", name.to_string_lossy()))
        } else {
            Ok(p)
        }
    };
    // SAFETY (every transmute below): each symbol is the libgstcuda 1.22 function of that name,
    // whose C signature (gst/cuda/*.h of 1.22) the function pointer type repeats.
    let load: FnLoad = unsafe { std::mem::transmute(sym(c"gst_cuda_load_library")?) };
    let lib = unsafe {
        Lib {
            new_wrapped: std::mem::transmute::<*mut c_void, FnNewWrapped>(sym(
                c"gst_cuda_context_new_wrapped",
            )?),
            get_handle: std::mem::transmute::<*mut c_void, FnGetHandle>(sym(
                c"gst_cuda_context_get_handle",
            )?),
            context_query: std::mem::transmute::<*mut c_void, FnContextQuery>(sym(
                c"gst_cuda_handle_context_query",
            )?),
            set_context: std::mem::transmute::<*mut c_void, FnSetContext>(sym(
                c"gst_cuda_handle_set_context",
            )?),
            is_cuda_memory: std::mem::transmute::<*mut c_void, FnIsCudaMemory>(sym(
                c"gst_is_cuda_memory",
            )?),
            pool_new: std::mem::transmute::<*mut c_void, FnPoolNew>(sym(
                c"gst_cuda_buffer_pool_new",
            )?),
            memory_sync: sym(c"gst_cuda_memory_sync")
                .ok()
                .map(|p| std::mem::transmute::<*mut c_void, FnMemorySync>(p)),
        }
    };
    // SAFETY: takes no argument; loads the CUDA driver's entry points into libgstcuda (false
    // where the driver is missing).
    if unsafe { load() } == glib::ffi::GFALSE {
        return Err("libgstcuda-1.0 cannot load the CUDA driver library (libcuda.so)".into());
    }
    Ok(lib)
}

/// A `GstCudaContext` reference (unreffed on drop).
pub struct Context {
    ptr: *mut GstCudaContext,
}

// SAFETY: a GstCudaContext is a GstObject: reference counting and its API are thread-safe.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { gst::ffi::gst_object_unref(self.ptr as *mut _) }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GstCudaContext({:p}, CUcontext {:#x})",
            self.ptr,
            self.handle()
        )
    }
}

impl Context {
    /// The primary context of CUDA device `device_id` (the CUDA backend's), wrapped.
    pub fn primary(device_id: u32) -> Result<Context, String> {
        let lib = lib()?;
        let (ctx, dev) = engine::cuda_primary_context(device_id).map_err(|e| e.to_string())?;
        // SAFETY: ctx is a live CUcontext of device dev, retained for the rest of the process
        // (cuda_primary_context), so it outlives the wrapper, which does not release it.
        let ptr = unsafe { (lib.new_wrapped)(ctx as *mut c_void, dev) };
        if ptr.is_null() {
            return Err(format!(
                "gst_cuda_context_new_wrapped failed for CUDA device {device_id}"
            ));
        }
        Ok(Context { ptr })
    }

    /// The `CUcontext` it wraps.
    pub fn handle(&self) -> usize {
        match lib() {
            // SAFETY: self.ptr is a live GstCudaContext.
            Ok(lib) => unsafe { (lib.get_handle)(self.ptr) as usize },
            Err(_) => 0,
        }
    }

    /// Answer a CONTEXT query for `gst.cuda.context` with this context; whether it did.
    pub fn answer(&self, element: &gst::Element, query: &mut gst::QueryRef) -> bool {
        let Ok(lib) = lib() else { return false };
        // SAFETY: element and query are live for the call; the function refs the context it
        // puts in the query.
        unsafe { (lib.context_query)(element.to_glib_none().0, query.as_mut_ptr(), self.ptr) != 0 }
    }

    /// A CUDA buffer pool of this context (not configured).
    pub fn buffer_pool(&self) -> Option<gst::BufferPool> {
        let lib = lib().ok()?;
        // SAFETY: self.ptr is live; the function returns a new (floating-sunk) reference or
        // null.
        let p = unsafe { (lib.pool_new)(self.ptr) };
        if p.is_null() {
            None
        } else {
            // SAFETY: p is a new reference we take over.
            Some(unsafe { gst::BufferPool::from_glib_full(p) })
        }
    }
}

/// The CUDA context in a `gst.cuda.context` GstContext set on the element (for device
/// `device_id`, or any device with -1), if it has one: GStreamer's own parsing of it.
pub fn context_of(
    element: &gst::Element,
    context: &gst::Context,
    device_id: i32,
) -> Option<Context> {
    let lib = lib().ok()?;
    let mut out: *mut GstCudaContext = std::ptr::null_mut();
    // SAFETY: element and context are live for the call; on success the function stores a new
    // reference in `out` (null stays null otherwise).
    let ok = unsafe {
        (lib.set_context)(
            element.to_glib_none().0,
            context.to_glib_none().0,
            device_id,
            &mut out,
        )
    };
    (ok != 0 && !out.is_null()).then_some(Context { ptr: out })
}

/// Whether `mem` is CUDA memory, and the `CUcontext` of its `GstCudaContext`.
pub fn memory_context(mem: &gst::MemoryRef) -> Option<usize> {
    let lib = lib().ok()?;
    let m = mem.as_mut_ptr();
    // SAFETY: m is a live GstMemory.
    if unsafe { (lib.is_cuda_memory)(m) } == 0 {
        return None;
    }
    // SAFETY: m is a GstCudaMemory (checked above), whose public layout (gstcudamemory.h of
    // 1.22) starts with the GstMemory and then the GstCudaContext pointer; the memory holds
    // a reference to that context while it lives.
    let ctx = unsafe {
        *(m as *const u8)
            .add(std::mem::size_of::<gst::ffi::GstMemory>())
            .cast::<*mut GstCudaContext>()
    };
    if ctx.is_null() {
        return None;
    }
    // SAFETY: ctx is the memory's live context.
    Some(unsafe { (lib.get_handle)(ctx) as usize })
}

/// Wait for the work that writes `mem` where the library says how (GStreamer 1.24 and later:
/// `gst_cuda_memory_sync`); nothing to do with 1.22, whose CUDA elements finish writing a
/// buffer (their stream synchronized) before they push it.
pub fn sync_memory(mem: &gst::MemoryRef) {
    if let Ok(Lib {
        memory_sync: Some(f),
        ..
    }) = lib()
    {
        // SAFETY: mem is CUDA memory (the caller checked: memory_context) and live.
        unsafe { f(mem.as_mut_ptr()) }
    }
}
