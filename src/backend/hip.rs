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
//! - One worker thread owns the device. It keeps [`SLOTS`] frames in flight, each slot with its
//!   own non-blocking stream, device buffers, pinned staging and readback memory, allocated
//!   once per geometry. The pipeline is the CUDA backend's (src/backend/cuda.rs): upload of
//!   frame n+1 overlaps compute of frame n, motion reads the previous frame's reference in the
//!   previous slot, results come back in submission order.

pub mod ffi;

use std::collections::{HashMap, VecDeque};
use std::ffi::{CString, c_int, c_void};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use self::ffi::Runtime;
// The launch plan and the kernel text are the CUDA backend's too (backend/gpu).
use super::gpu::kernels;
use super::gpu::plan::{self, Arg, Buf, Kernel, Plan, slot};
use super::{Backend, FrameAccum, FrameJob};
use crate::error::{Error, Result};
use crate::features::adm::{AdmConstants, AdmParams};
use crate::features::vif::VifParams;
use crate::picture::OwnedPlane;

/// Frames in flight on the GPU.
pub const SLOTS: usize = 4;

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

type CodeKey = (String, String);
type CodeCache = Mutex<HashMap<CodeKey, std::result::Result<Arc<Vec<u8>>, String>>>;

/// Compile the kernel text for `arch` with the runtime's hipRTC, or read it from the on-disk
/// kernel cache: once per process, runtime library and architecture (failures are remembered
/// too).
pub fn code_object(rt: &Runtime, arch: &str) -> Result<Arc<Vec<u8>>> {
    use super::gpu::cache as kernel_cache;
    static CACHE: OnceLock<CodeCache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
    let key = (rt.library.clone(), arch.to_string());
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
                kernels::SOURCE.as_bytes(),
                opts.join("\n").as_bytes(),
                id.as_bytes(),
                &lib,
                &rtc_lib,
            ],
        );
        kernel_cache::global()
            .load_or_compile("hip-code-object", key, || {
                rtc.compile(kernels::SOURCE, "vmafgpu.cu", &opts)
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

/// Device memory, freed on drop (by the worker thread, the device current).
struct DevBuf {
    rt: Arc<Runtime>,
    ptr: *mut c_void,
    bytes: usize,
}

impl DevBuf {
    fn new(rt: &Arc<Runtime>, bytes: usize) -> Result<DevBuf> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: plain allocation on the current device.
        let e = unsafe { (rt.malloc)(&mut ptr, bytes.max(8)) };
        rt.check(e, "hipMalloc")
            .map_err(|m| be(&format!("{bytes} bytes of device memory"), m))?;
        Ok(DevBuf {
            rt: rt.clone(),
            ptr,
            bytes,
        })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from hipMalloc; every stream that used it was synchronized before
        // its owner (a slot or the worker) is dropped.
        unsafe { (self.rt.free)(self.ptr) };
    }
}

/// Page-locked host memory, freed on drop.
struct Pinned {
    rt: Arc<Runtime>,
    ptr: *mut u8,
    bytes: usize,
}

impl Pinned {
    fn new(rt: &Arc<Runtime>, bytes: usize, write_combined: bool) -> Result<Pinned> {
        let flags = if write_combined {
            ffi::HOST_MALLOC_WRITE_COMBINED
        } else {
            ffi::HOST_MALLOC_DEFAULT
        };
        let mut p = std::ptr::null_mut();
        // SAFETY: plain page-locked allocation; zeroed below before any read.
        let e = unsafe { (rt.host_malloc)(&mut p, bytes.max(8), flags) };
        rt.check(e, "hipHostMalloc")
            .map_err(|m| be(&format!("{bytes} bytes of pinned memory"), m))?;
        let ptr = p as *mut u8;
        // SAFETY: ptr points to at least `bytes` writable bytes.
        unsafe { std::ptr::write_bytes(ptr, 0, bytes) };
        Ok(Pinned {
            rt: rt.clone(),
            ptr,
            bytes,
        })
    }

    fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.bytes);
        // SAFETY: in bounds (asserted); &mut self gives exclusive host access, and callers
        // only write a slot's memory after that slot's previous copies completed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }

    fn slice(&self, off: usize, len: usize) -> &[u8] {
        assert!(off + len <= self.bytes);
        // SAFETY: in bounds; read only after the copy into it completed (event synchronized).
        unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: ptr came from hipHostMalloc; its copies completed (slot synchronized).
        unsafe { (self.rt.host_free)(self.ptr as *mut c_void) };
    }
}

/// A stream, destroyed on drop.
struct StreamH {
    rt: Arc<Runtime>,
    s: ffi::Stream,
}

impl StreamH {
    fn new(rt: &Arc<Runtime>) -> Result<StreamH> {
        let mut s = std::ptr::null_mut();
        // SAFETY: writes one handle.
        let e = unsafe { (rt.stream_create_with_flags)(&mut s, ffi::STREAM_NON_BLOCKING) };
        rt.check(e, "hipStreamCreateWithFlags")
            .map_err(|m| be("stream", m))?;
        Ok(StreamH { rt: rt.clone(), s })
    }

    fn synchronize(&self) -> Result<()> {
        // SAFETY: live stream.
        let e = unsafe { (self.rt.stream_synchronize)(self.s) };
        self.rt
            .check(e, "hipStreamSynchronize")
            .map_err(|m| be("synchronize", m))
    }

    fn wait(&self, ev: &EventH) -> Result<()> {
        // SAFETY: live stream and event.
        let e = unsafe { (self.rt.stream_wait_event)(self.s, ev.e, 0) };
        self.rt
            .check(e, "hipStreamWaitEvent")
            .map_err(|m| be("stream dependency", m))
    }
}

impl Drop for StreamH {
    fn drop(&mut self) {
        // SAFETY: live stream, destroyed once; its work was synchronized by the owner.
        unsafe { (self.rt.stream_destroy)(self.s) };
    }
}

/// An event (timing disabled), destroyed on drop.
struct EventH {
    rt: Arc<Runtime>,
    e: ffi::Event,
}

impl EventH {
    fn new(rt: &Arc<Runtime>) -> Result<EventH> {
        let mut e = std::ptr::null_mut();
        // SAFETY: writes one handle.
        let r = unsafe { (rt.event_create_with_flags)(&mut e, ffi::EVENT_DISABLE_TIMING) };
        rt.check(r, "hipEventCreateWithFlags")
            .map_err(|m| be("event", m))?;
        Ok(EventH { rt: rt.clone(), e })
    }

    fn record(&self, s: &StreamH) -> Result<()> {
        // SAFETY: live event and stream.
        let r = unsafe { (self.rt.event_record)(self.e, s.s) };
        self.rt
            .check(r, "hipEventRecord")
            .map_err(|m| be("event", m))
    }

    fn synchronize(&self) -> Result<()> {
        // SAFETY: live event.
        let r = unsafe { (self.rt.event_synchronize)(self.e) };
        self.rt
            .check(r, "hipEventSynchronize")
            .map_err(|m| be("event", m))
    }

    /// Whether the work before the event completed. An error reads as "complete": the caller
    /// then synchronizes, which reports it.
    fn is_complete(&self) -> bool {
        // SAFETY: live event.
        unsafe { (self.rt.event_query)(self.e) != ffi::HIP_ERROR_NOT_READY }
    }
}

impl Drop for EventH {
    fn drop(&mut self) {
        // SAFETY: live event, destroyed once.
        unsafe { (self.rt.event_destroy)(self.e) };
    }
}

/// The loaded kernels of one device.
struct ModuleH {
    rt: Arc<Runtime>,
    m: ffi::Module,
}

impl Drop for ModuleH {
    fn drop(&mut self) {
        // SAFETY: live module, unloaded once, after every stream was synchronized.
        unsafe { (self.rt.module_unload)(self.m) };
    }
}

/// What a slot is computing.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    index: u64,
    motion: bool,
    features: bool,
    /// Companion metrics, computed on the host while the kernels run.
    companions: crate::backend::CompanionScores,
}

struct Slot {
    stream: StreamH,
    bufs: Vec<(Buf, DevBuf)>,
    /// Host staging: reference, distorted, previous reference (`plane_bytes` each).
    staging: Pinned,
    readback: Pinned,
    uploaded: EventH,
    done: EventH,
    job: Option<InFlight>,
    /// The slot whose reference this slot's current frame reads as its previous frame.
    motion_from: Option<usize>,
}

impl Slot {
    fn buf(&self, b: Buf) -> Option<&DevBuf> {
        self.bufs.iter().find(|(k, _)| *k == b).map(|(_, d)| d)
    }
}

/// Key of the per-geometry state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GeomKey {
    w: usize,
    h: usize,
    bpc: u8,
    vif_egl: u64,
    adm: [u64; 7],
}

impl GeomKey {
    fn of(p: &OwnedPlane, v: &VifParams, a: &AdmParams) -> GeomKey {
        GeomKey {
            w: p.width,
            h: p.height,
            bpc: p.bpc,
            vif_egl: v.enhn_gain_limit.to_bits(),
            adm: [
                a.enhn_gain_limit.to_bits(),
                a.norm_view_dist.to_bits(),
                a.ref_display_height as u64,
                a.noise_weight.to_bits(),
                a.dlm_weight.to_bits(),
                a.min_val.to_bits(),
                a.csf_mode as u64,
            ],
        }
    }
}

enum Pending {
    Slot(usize),
    Failed(Error),
}

enum Msg {
    Job(Box<FrameJob>),
    Reset,
}

enum Out {
    Result(Box<Result<(u64, FrameAccum)>>),
    ResetDone,
}

/// What the worker learns about the device when it opens it.
#[derive(Clone, Debug)]
struct DeviceInfo {
    name: String,
    arch: String,
}

struct Worker {
    rt: Arc<Runtime>,
    // Field order is drop order: slots and tables before the module.
    slots: Vec<Slot>,
    finalize: Option<DevBuf>,
    log2: DevBuf,
    div: DevBuf,
    funcs: Vec<ffi::Function>,
    _module: ModuleH,
    /// The stream for one-off uploads (tables).
    aux: StreamH,
    key: Option<GeomKey>,
    plan: Option<Plan>,
    next: usize,
    queue: VecDeque<Pending>,
    last_ref: Option<(Arc<OwnedPlane>, usize)>,
}

impl Worker {
    fn new(rt: Arc<Runtime>, device_id: u32) -> Result<(Worker, DeviceInfo)> {
        // SAFETY: hipInit takes flags 0.
        let e = unsafe { (rt.init)(0) };
        rt.check(e, "hipInit").map_err(|m| {
            Error::Backend(format!(
                "HIP: no usable AMD GPU (ROCm's runtime {} is installed, but {m})",
                rt.library
            ))
        })?;
        let mut n: c_int = 0;
        // SAFETY: writes one int.
        let e = unsafe { (rt.get_device_count)(&mut n) };
        rt.check(e, "hipGetDeviceCount")
            .map_err(|m| Error::Backend(format!("HIP: no usable AMD GPU ({m})")))?;
        if device_id as i64 >= n as i64 {
            return Err(Error::Backend(format!(
                "HIP: device {device_id} requested, {n} present"
            )));
        }
        let dev = device_id as c_int;
        // SAFETY: a valid device ordinal (checked above); binds this (worker) thread to it.
        let e = unsafe { (rt.set_device)(dev) };
        rt.check(e, "hipSetDevice")
            .map_err(|m| be("open device", m))?;
        let name = rt.device_name(dev).map_err(|m| be("device name", m))?;
        let arch = rt
            .arch_name(dev)
            .map_err(|m| be("device architecture", m))?;
        let version = rt.version().map_err(|m| be("runtime version", m))?;
        check_arch(version, &arch).map_err(|m| be(&name, m))?;
        let code = code_object(&rt, &arch)?;

        let mut m: ffi::Module = std::ptr::null_mut();
        // SAFETY: `code` is a complete code object from hipRTC for this device's arch; the
        // runtime copies what it needs before returning.
        let e = unsafe { (rt.module_load_data)(&mut m, code.as_ptr() as *const c_void) };
        rt.check(e, "hipModuleLoadData")
            .map_err(|m| be(&format!("load kernels for {arch}"), m))?;
        let module = ModuleH { rt: rt.clone(), m };
        let mut funcs = Vec::new();
        for k in Kernel::ALL {
            let cname = CString::new(k.name()).expect("kernel names have no NUL");
            let mut f: ffi::Function = std::ptr::null_mut();
            // SAFETY: live module, valid C string, writes one handle.
            let e = unsafe { (rt.module_get_function)(&mut f, module.m, cname.as_ptr()) };
            rt.check(e, "hipModuleGetFunction")
                .map_err(|m| be(k.name(), m))?;
            funcs.push(f);
        }

        let aux = StreamH::new(&rt)?;
        let log2 = DevBuf::new(&rt, 65537 * 2)?;
        let div = DevBuf::new(&rt, 65537 * 4)?;
        let l2 = crate::features::vif::log2_table();
        let dl = crate::features::adm::div_lookup();
        // SAFETY: each copy is exactly its buffer's size; the host tables are 'static and the
        // stream is synchronized below.
        unsafe {
            let e = (rt.memcpy_async)(
                log2.ptr,
                l2.as_ptr() as *const c_void,
                std::mem::size_of_val(&l2[..]),
                ffi::MEMCPY_HOST_TO_DEVICE,
                aux.s,
            );
            rt.check(e, "hipMemcpyAsync")
                .map_err(|m| be("upload log2 table", m))?;
            let e = (rt.memcpy_async)(
                div.ptr,
                dl.as_ptr() as *const c_void,
                std::mem::size_of_val(&dl[..]),
                ffi::MEMCPY_HOST_TO_DEVICE,
                aux.s,
            );
            rt.check(e, "hipMemcpyAsync")
                .map_err(|m| be("upload division table", m))?;
        }
        aux.synchronize()?;
        Ok((
            Worker {
                rt,
                slots: Vec::new(),
                finalize: None,
                log2,
                div,
                funcs,
                _module: module,
                aux,
                key: None,
                plan: None,
                next: 0,
                queue: VecDeque::new(),
                last_ref: None,
            },
            DeviceInfo { name, arch },
        ))
    }

    /// Allocate everything a geometry needs (after draining the previous one).
    fn setup(&mut self, key: GeomKey, vif: &VifParams, adm: &AdmParams) -> Result<()> {
        self.slots.clear();
        self.finalize = None;
        self.plan = None;
        self.key = None;
        let consts = AdmConstants::new(adm);
        let plan = Plan::new(key.w, key.h, key.bpc, vif.enhn_gain_limit, &consts);
        let fin_bytes: Vec<u8> = plan.finalize.iter().flat_map(|e| e.to_bytes()).collect();
        let fin = DevBuf::new(&self.rt, fin_bytes.len())?;
        // SAFETY: fin has exactly fin_bytes.len() bytes; synchronized before fin_bytes drops.
        let e = unsafe {
            (self.rt.memcpy_async)(
                fin.ptr,
                fin_bytes.as_ptr() as *const c_void,
                fin_bytes.len(),
                ffi::MEMCPY_HOST_TO_DEVICE,
                self.aux.s,
            )
        };
        self.rt
            .check(e, "hipMemcpyAsync")
            .map_err(|m| be("upload finalize table", m))?;
        self.aux.synchronize()?;
        let plane_bytes = plan.bytes(Buf::Ref);
        for _ in 0..SLOTS {
            let stream = StreamH::new(&self.rt)?;
            let mut bufs = Vec::new();
            for &(b, bytes) in &plan.bufs {
                if matches!(b, Buf::Log2 | Buf::DivLookup | Buf::Finalize) {
                    continue;
                }
                bufs.push((b, DevBuf::new(&self.rt, bytes)?));
            }
            self.slots.push(Slot {
                stream,
                bufs,
                staging: Pinned::new(&self.rt, 3 * plane_bytes, true)?,
                readback: Pinned::new(&self.rt, slot::RESULTS * 8, false)?,
                uploaded: EventH::new(&self.rt)?,
                done: EventH::new(&self.rt)?,
                job: None,
                motion_from: None,
            });
        }
        self.finalize = Some(fin);
        self.plan = Some(plan);
        self.key = Some(key);
        self.next = 0;
        self.last_ref = None;
        Ok(())
    }

    fn resolve(&self, s: usize, b: Buf) -> Result<*mut c_void> {
        let d = match b {
            Buf::Log2 => Some(&self.log2),
            Buf::DivLookup => Some(&self.div),
            Buf::Finalize => self.finalize.as_ref(),
            Buf::Prev => match self.slots[s].motion_from {
                Some(k) => self.slots[k].buf(Buf::Ref),
                None => self.slots[s].buf(Buf::Prev),
            },
            other => self.slots[s].buf(other),
        };
        d.map(|d| d.ptr)
            .ok_or_else(|| Error::Backend(format!("HIP: plan names a missing buffer {b:?}")))
    }

    /// Queue one launch of the plan on slot `s`'s stream.
    fn launch(&self, s: usize, l: &plan::Launch) -> Result<()> {
        plan::check_signature(l)?;
        enum V {
            P(*mut c_void),
            Vif(kernels::VifArgs),
            Adm(kernels::AdmArgs),
            Mot(kernels::MotionArgs),
            Range(kernels::RangeArgs),
            Shift(kernels::ShiftArgs),
        }
        let mut vals = Vec::with_capacity(l.args.len());
        for a in &l.args {
            vals.push(match *a {
                Arg::Ptr(b, off) => {
                    // In-bounds offset into a live allocation (plan tests check offsets).
                    V::P(self.resolve(s, b)?.wrapping_byte_add(off))
                }
                Arg::Null => V::P(std::ptr::null_mut()),
                Arg::Vif(v) => V::Vif(v),
                Arg::Adm(v) => V::Adm(v),
                Arg::Motion(v) => V::Mot(v),
                Arg::Range(v) => V::Range(v),
                Arg::Shift(v) => V::Shift(v),
            });
        }
        // hipModuleLaunchKernel's kernelParams: one pointer to each argument's value. `vals`
        // is complete and not moved until the call returns (the runtime copies the values).
        let mut params: Vec<*mut c_void> = vals
            .iter_mut()
            .map(|v| match v {
                V::P(p) => p as *mut *mut c_void as *mut c_void,
                V::Vif(x) => x as *mut kernels::VifArgs as *mut c_void,
                V::Adm(x) => x as *mut kernels::AdmArgs as *mut c_void,
                V::Mot(x) => x as *mut kernels::MotionArgs as *mut c_void,
                V::Range(x) => x as *mut kernels::RangeArgs as *mut c_void,
                V::Shift(x) => x as *mut kernels::ShiftArgs as *mut c_void,
            })
            .collect();
        // SAFETY: the argument list matches the kernel's C signature (check_signature above,
        // whose table mirrors kernels/*.cu; by-value structs have layout tests). Every pointer
        // is a live allocation of this slot (or a shared table) of the size the plan gives it,
        // and the kernels only index inside the sizes passed in their argument struct.
        let e = unsafe {
            (self.rt.module_launch_kernel)(
                self.funcs[l.kernel as usize],
                l.grid.0,
                l.grid.1,
                1,
                plan::BLOCK,
                1,
                1,
                0,
                self.slots[s].stream.s,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.rt
            .check(e, "hipModuleLaunchKernel")
            .map_err(|m| be(l.kernel.name(), m))
    }

    fn memcpy_htod(&self, dst: *mut c_void, src: &[u8], s: &StreamH, what: &str) -> Result<()> {
        // SAFETY: callers pass a device buffer of at least src.len() bytes and pinned host
        // memory that is not written again before the copy completes.
        let e = unsafe {
            (self.rt.memcpy_async)(
                dst,
                src.as_ptr() as *const c_void,
                src.len(),
                ffi::MEMCPY_HOST_TO_DEVICE,
                s.s,
            )
        };
        self.rt.check(e, "hipMemcpyAsync").map_err(|m| be(what, m))
    }

    fn submit(&mut self, job: &FrameJob) -> Result<Pending> {
        let (r, d) = (&*job.reference, &*job.distorted);
        let (w, h, bpc) = (r.width, r.height, r.bpc);
        if (d.width, d.height, d.bpc) != (w, h, bpc)
            || r.data.len() < w * h
            || d.data.len() < w * h
            || w < crate::features::MIN_WIDTH
            || h < crate::features::MIN_HEIGHT
            || !(8..=16).contains(&bpc)
        {
            return Err(Error::Geometry(format!(
                "HIP backend: frame pair {w}x{h}@{bpc} / {}x{}@{} ({} / {} samples)",
                d.width,
                d.height,
                d.bpc,
                r.data.len(),
                d.data.len()
            )));
        }
        if let Some(p) = &job.prev_ref
            && ((p.width, p.height, p.bpc) != (w, h, bpc) || p.data.len() < w * h)
        {
            return Err(Error::Geometry(
                "HIP backend: previous reference differs in geometry".into(),
            ));
        }
        let key = GeomKey::of(r, &job.vif, &job.adm);
        if self.key != Some(key) {
            self.drain_for_setup()?;
            self.setup(key, &job.vif, &job.adm)?;
        }
        let s = self.next;
        self.next = (s + 1) % SLOTS;
        if self.slots[s].job.is_some() {
            return Err(Error::Backend(
                "HIP: slot reused before its result was read".into(),
            ));
        }
        let motion_from = match (&job.prev_ref, &self.last_ref) {
            (Some(p), Some((lr, ls))) if Arc::ptr_eq(p, lr) && *ls != s => Some(*ls),
            _ => None,
        };
        let plan = self.plan.as_ref().expect("plan set up");
        let n = w * h;
        let plane_bytes = plan.bytes(Buf::Ref);

        // Stage the planes (8-bit content as bytes).
        {
            let slot = &mut self.slots[s];
            let mut put = |i: usize, p: &OwnedPlane| {
                let dst = slot.staging.slice_mut(i * plane_bytes, plane_bytes);
                if bpc == 8 {
                    for (o, v) in dst.iter_mut().zip(&p.data[..n]) {
                        *o = *v as u8;
                    }
                } else {
                    for (o, v) in dst.chunks_exact_mut(2).zip(&p.data[..n]) {
                        o.copy_from_slice(&v.to_le_bytes());
                    }
                }
            };
            put(0, r);
            put(1, d);
            if let (Some(p), None) = (&job.prev_ref, motion_from) {
                put(2, p);
            }
        }

        let slot = &self.slots[s];
        // The next slot's frame may still be reading this slot's reference (motion): wait.
        let nx = (s + 1) % SLOTS;
        if self.slots[nx].motion_from == Some(s) {
            slot.stream.wait(&self.slots[nx].done)?;
        }
        let acc = slot.buf(Buf::Acc).expect("Acc");
        let dst = |b: Buf| slot.buf(b).expect("plane buffer").ptr;
        // SAFETY: acc.bytes is the buffer's size.
        let e = unsafe { (self.rt.memset_async)(acc.ptr, 0, acc.bytes, slot.stream.s) };
        self.rt
            .check(e, "hipMemsetAsync")
            .map_err(|m| be("clear results", m))?;
        let stg = &slot.staging;
        self.memcpy_htod(
            dst(Buf::Ref),
            stg.slice(0, plane_bytes),
            &slot.stream,
            "upload reference",
        )?;
        self.memcpy_htod(
            dst(Buf::Dis),
            stg.slice(plane_bytes, plane_bytes),
            &slot.stream,
            "upload distorted",
        )?;
        if job.prev_ref.is_some() && motion_from.is_none() {
            self.memcpy_htod(
                dst(Buf::Prev),
                stg.slice(2 * plane_bytes, plane_bytes),
                &slot.stream,
                "upload previous reference",
            )?;
        }
        slot.uploaded.record(&slot.stream)?;
        if let Some(k) = motion_from {
            slot.stream.wait(&self.slots[k].uploaded)?;
        }
        self.slots[s].motion_from = motion_from;
        if job.prev_ref.is_some() {
            self.launch(s, &plan.motion)?;
        }
        if job.features {
            for l in &plan.launches {
                self.launch(s, l)?;
            }
        }
        let slot = &mut self.slots[s];
        let acc_ptr = slot.buf(Buf::Acc).expect("Acc").ptr;
        let rb = slot.readback.slice_mut(0, slot::RESULTS * 8);
        // SAFETY: readback holds RESULTS u64 and acc at least that many; readback is read
        // only after `done` completes.
        let e = unsafe {
            (self.rt.memcpy_async)(
                rb.as_mut_ptr() as *mut c_void,
                acc_ptr,
                rb.len(),
                ffi::MEMCPY_DEVICE_TO_HOST,
                slot.stream.s,
            )
        };
        self.rt
            .check(e, "hipMemcpyAsync")
            .map_err(|m| be("read back results", m))?;
        slot.done.record(&slot.stream)?;
        // The companion metrics on the host, with the CPU reference code, while the kernels
        // run: the same numbers as the CPU backend.
        let companions = if job.features {
            crate::backend::compute_companions_cpu(job)?
        } else {
            crate::backend::CompanionScores::default()
        };
        let slot = &mut self.slots[s];
        slot.job = Some(InFlight {
            index: job.index,
            motion: job.prev_ref.is_some(),
            features: job.features,
            companions,
        });
        self.last_ref = Some((job.reference.clone(), s));
        Ok(Pending::Slot(s))
    }

    /// Block until every frame in flight is done (their results stay queued).
    fn drain_for_setup(&mut self) -> Result<()> {
        for s in &self.slots {
            s.stream.synchronize()?;
        }
        Ok(())
    }

    fn result_of(&mut self, s: usize) -> Result<(u64, FrameAccum)> {
        self.slots[s].done.synchronize()?;
        let job = self.slots[s]
            .job
            .take()
            .ok_or_else(|| Error::Backend("HIP: result of an empty slot".into()))?;
        let raw = self.slots[s].readback.slice(0, slot::RESULTS * 8);
        let words: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let mut acc = plan::accum_from_words(&words, job.features, job.motion);
        acc.companions = job.companions;
        Ok((job.index, acc))
    }

    /// Is the oldest pending result ready without blocking?
    fn front_ready(&self) -> bool {
        match self.queue.front() {
            Some(Pending::Failed(_)) => true,
            Some(Pending::Slot(s)) => self.slots[*s].done.is_complete(),
            None => false,
        }
    }

    fn pop_front(&mut self) -> Option<Result<(u64, FrameAccum)>> {
        match self.queue.pop_front()? {
            Pending::Failed(e) => Some(Err(e)),
            Pending::Slot(s) => Some(self.result_of(s)),
        }
    }

    fn run(mut self, rx: Receiver<Msg>, out: Sender<Out>) {
        loop {
            let msg = if self.queue.is_empty() {
                match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => break,
                }
            } else {
                match rx.try_recv() {
                    Ok(m) => Some(m),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => break,
                }
            };
            match msg {
                Some(Msg::Job(job)) => {
                    // Results that must be delivered before this job: all of them when the
                    // geometry changes (the slots are rebuilt), else up to the one of the slot
                    // about to be reused. The queue is in submission order.
                    let geom_change =
                        self.key != Some(GeomKey::of(&job.reference, &job.vif, &job.adm));
                    loop {
                        let busy = self.slots.get(self.next).is_some_and(|sl| sl.job.is_some());
                        if !(busy || geom_change && !self.queue.is_empty()) {
                            break;
                        }
                        let Some(r) = self.pop_front() else { break };
                        if out.send(Out::Result(Box::new(r))).is_err() {
                            return;
                        }
                    }
                    let p = match self.submit(&job) {
                        Ok(p) => p,
                        Err(e) => Pending::Failed(e),
                    };
                    self.queue.push_back(p);
                    while self.front_ready() {
                        let r = self.pop_front().expect("ready");
                        if out.send(Out::Result(Box::new(r))).is_err() {
                            return;
                        }
                    }
                }
                Some(Msg::Reset) => {
                    for s in &self.slots {
                        let _ = s.stream.synchronize();
                    }
                    while let Some(p) = self.queue.pop_front() {
                        if let Pending::Slot(s) = p {
                            self.slots[s].job = None;
                        }
                    }
                    for s in &mut self.slots {
                        s.motion_from = None;
                    }
                    self.last_ref = None;
                    if out.send(Out::ResetDone).is_err() {
                        return;
                    }
                }
                None => {
                    let r = self.pop_front().expect("queue not empty");
                    if out.send(Out::Result(Box::new(r))).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Let every stream finish before the buffers, streams and module are freed.
        for s in &self.slots {
            let _ = s.stream.synchronize();
        }
        let _ = self.aux.synchronize();
    }
}

/// The HIP backend. See the module documentation.
pub struct HipBackend {
    tx: Option<Sender<Msg>>,
    rx: Receiver<Out>,
    worker: Option<JoinHandle<()>>,
    in_flight: usize,
    device: DeviceInfo,
}

impl HipBackend {
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
        let (tx, rx_worker) = mpsc::channel::<Msg>();
        let (out_tx, rx) = mpsc::channel::<Out>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<DeviceInfo>>();
        let worker = std::thread::Builder::new()
            .name("vmafgpu-hip".into())
            .spawn(move || match Worker::new(rt, device_id) {
                Ok((w, info)) => {
                    if ready_tx.send(Ok(info)).is_ok() {
                        w.run(rx_worker, out_tx);
                    }
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| Error::Backend(format!("HIP: cannot start worker thread: {e}")))?;
        let device = match ready_rx.recv() {
            Ok(Ok(info)) => info,
            Ok(Err(e)) => {
                let _ = worker.join();
                return Err(e);
            }
            Err(_) => {
                let _ = worker.join();
                return Err(Error::Backend("HIP: worker thread failed to start".into()));
            }
        };
        Ok(HipBackend {
            tx: Some(tx),
            rx,
            worker: Some(worker),
            in_flight: 0,
            device,
        })
    }

    /// The device's name (e.g. "AMD Instinct MI210").
    pub fn device_name(&self) -> &str {
        &self.device.name
    }

    /// The architecture the kernels were compiled for (e.g. "gfx90a:sramecc+:xnack-").
    pub fn arch(&self) -> &str {
        &self.device.arch
    }

    fn send(&self, m: Msg) -> Result<()> {
        self.tx
            .as_ref()
            .and_then(|t| t.send(m).ok())
            .ok_or_else(|| Error::Backend("HIP: worker thread has stopped".into()))
    }
}

impl Backend for HipBackend {
    fn name(&self) -> &'static str {
        "hip"
    }

    /// VMAF's features run on the GPU; the companion metrics on the host's CPU (several
    /// milliseconds a frame at 1080p).
    fn computes_on_device(&self, companions: crate::backend::Companions) -> bool {
        !companions.any()
    }

    fn submit(&mut self, job: FrameJob) -> Result<()> {
        self.send(Msg::Job(Box::new(job)))?;
        self.in_flight += 1;
        Ok(())
    }

    fn receive(&mut self, wait: bool) -> Result<Option<(u64, FrameAccum)>> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        let got = if wait {
            match self.rx.recv() {
                Ok(o) => o,
                Err(_) => return Err(Error::Backend("HIP: worker thread has stopped".into())),
            }
        } else {
            match self.rx.try_recv() {
                Ok(o) => o,
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => {
                    return Err(Error::Backend("HIP: worker thread has stopped".into()));
                }
            }
        };
        match got {
            Out::Result(r) => {
                self.in_flight -= 1;
                (*r).map(Some)
            }
            Out::ResetDone => Err(Error::Backend(
                "HIP: unexpected reset acknowledgement".into(),
            )),
        }
    }

    fn reset(&mut self) {
        if self.send(Msg::Reset).is_err() {
            self.in_flight = 0;
            return;
        }
        while let Ok(o) = self.rx.recv() {
            if let Out::ResetDone = o {
                break;
            }
        }
        self.in_flight = 0;
    }

    fn max_in_flight(&self) -> usize {
        SLOTS + 1
    }
}

impl Drop for HipBackend {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
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
            assert!(
                !kernels::SOURCE.contains(banned),
                "kernel text uses {banned}"
            );
        }
        assert!(kernels::SOURCE.contains("__syncthreads()"));
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
