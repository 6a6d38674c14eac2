//! [`Device`] over the dlopen'd HIP runtime ([`super::ffi`]): memory, streams, events and the
//! loaded kernels of one AMD GPU, each handle freed on drop.

use std::ffi::{CString, c_int, c_void};
use std::sync::Arc;

use super::ffi::{self, Runtime};
use super::{Text, be, check_arch, code_object};
use crate::backend::HostPlane;
use crate::backend::gpu::device::{ArgValue, Device, DeviceMem, HostMem};
use crate::backend::gpu::kernels;
use crate::backend::gpu::launch;
use crate::backend::gpu::pipeline::DeviceInfo;
use crate::backend::gpu::plan::{self, VmafKernel};
use crate::error::{Error, Result};

/// A device address as the runtime's pointer type.
fn dptr(p: u64) -> *mut c_void {
    p as usize as *mut c_void
}

/// Device memory, freed on drop (by the worker thread, the device current).
pub struct HipBuf {
    rt: Arc<Runtime>,
    ptr: *mut c_void,
    bytes: usize,
}

impl DeviceMem for HipBuf {
    fn ptr(&self) -> u64 {
        self.ptr as usize as u64
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
}

// SAFETY (this and the three below): the handles are the HIP runtime's, which is thread-safe;
// each is used from another thread only after the device was made current there
// (Device::bind), and freed once, on drop.
unsafe impl Send for HipBuf {}

impl Drop for HipBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from hipMalloc; every stream that used it was synchronized before
        // its owner (a slot or the worker) is dropped.
        unsafe { (self.rt.free)(self.ptr) };
    }
}

/// Page-locked host memory, freed on drop.
pub struct HipPinned {
    rt: Arc<Runtime>,
    ptr: *mut u8,
    bytes: usize,
}

// SAFETY: plain host memory owned by this value (freed on drop, through the runtime, which is
// thread-safe); writes need `&mut self`, so sending follows Rust's rules for a `Box<[u8]>`.
unsafe impl Send for HipPinned {}

impl HostMem for HipPinned {
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

impl Drop for HipPinned {
    fn drop(&mut self) {
        // SAFETY: ptr came from hipHostMalloc; its copies completed (slot synchronized).
        unsafe { (self.rt.host_free)(self.ptr as *mut c_void) };
    }
}

/// A non-blocking stream, destroyed on drop.
pub struct HipStream {
    rt: Arc<Runtime>,
    s: ffi::Stream,
}

// SAFETY: as for HipBuf.
unsafe impl Send for HipStream {}
// SAFETY: as for HipBuf; the runtime serializes calls on one stream.
unsafe impl Sync for HipStream {}

impl Drop for HipStream {
    fn drop(&mut self) {
        // SAFETY: live stream, destroyed once; its work was synchronized by the owner.
        unsafe { (self.rt.stream_destroy)(self.s) };
    }
}

/// An event (timing disabled), destroyed on drop.
pub struct HipEvent {
    rt: Arc<Runtime>,
    e: ffi::Event,
}

// SAFETY: as for HipBuf.
unsafe impl Send for HipEvent {}
// SAFETY: as for HipBuf; recording and waiting are runtime calls.
unsafe impl Sync for HipEvent {}

impl Drop for HipEvent {
    fn drop(&mut self) {
        // SAFETY: live event, destroyed once.
        unsafe { (self.rt.event_destroy)(self.e) };
    }
}

/// The loaded kernels of one kernel text on one device.
pub struct HipModule {
    rt: Arc<Runtime>,
    m: ffi::Module,
    /// Its functions, in the text's kernel list order.
    funcs: Vec<ffi::Function>,
}

// SAFETY: as for HipBuf (module and function handles are read only after loading).
unsafe impl Send for HipModule {}
// SAFETY: as above.
unsafe impl Sync for HipModule {}

impl HipModule {
    /// Load code object `code` (compiled for `arch`) and look up `names`.
    fn load(rt: &Arc<Runtime>, code: &[u8], arch: &str, names: &[&str]) -> Result<HipModule> {
        let mut m: ffi::Module = std::ptr::null_mut();
        // SAFETY: `code` is a complete code object from hipRTC for this device's arch; the
        // runtime copies what it needs before returning.
        let e = unsafe { (rt.module_load_data)(&mut m, code.as_ptr() as *const c_void) };
        rt.check(e, "hipModuleLoadData")
            .map_err(|m| be(&format!("load kernels for {arch}"), m))?;
        let mut module = HipModule {
            rt: rt.clone(),
            m,
            funcs: Vec::with_capacity(names.len()),
        };
        for name in names {
            let cname = CString::new(*name).expect("kernel names have no NUL");
            let mut f: ffi::Function = std::ptr::null_mut();
            // SAFETY: live module, valid C string, writes one handle.
            let e = unsafe { (rt.module_get_function)(&mut f, module.m, cname.as_ptr()) };
            rt.check(e, "hipModuleGetFunction")
                .map_err(|m| be(name, m))?;
            module.funcs.push(f);
        }
        Ok(module)
    }
}

impl Drop for HipModule {
    fn drop(&mut self) {
        // SAFETY: live module, unloaded once, after every stream was synchronized (the
        // pipeline's worker drops the device last).
        unsafe { (self.rt.module_unload)(self.m) };
    }
}

/// One AMD GPU, bound to the worker thread, with the VMAF kernels loaded.
#[derive(Clone)]
pub struct HipDevice {
    rt: Arc<Runtime>,
    /// The device's ordinal (hipSetDevice).
    ordinal: c_int,
    /// Its architecture (target ID), for the companion kernels' code object.
    arch: String,
    vmaf: Arc<HipModule>,
}

impl HipDevice {
    /// Open device `device_id` on this thread: initialise the runtime, check the device's
    /// architecture, compile (once per process and architecture) and load the kernels.
    pub(crate) fn open(rt: Arc<Runtime>, device_id: u32) -> Result<(HipDevice, DeviceInfo)> {
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
        let code = code_object(&rt, &arch, Text::Vmaf)?;
        let names: Vec<&str> = VmafKernel::ALL.iter().map(|k| k.name()).collect();
        let vmaf = Arc::new(HipModule::load(&rt, &code, &arch, &names)?);
        let device = HipDevice {
            rt,
            ordinal: dev,
            arch: arch.clone(),
            vmaf,
        };
        Ok((device, DeviceInfo { name, arch }))
    }

    fn check(&self, e: ffi::HipError, call: &str, what: &str) -> Result<()> {
        self.rt.check(e, call).map_err(|m| be(what, m))
    }

    fn new_event(&self, flags: std::ffi::c_uint) -> Result<HipEvent> {
        let mut e = std::ptr::null_mut();
        // SAFETY: writes one handle.
        let r = unsafe { (self.rt.event_create_with_flags)(&mut e, flags) };
        self.check(r, "hipEventCreateWithFlags", "event")?;
        Ok(HipEvent {
            rt: self.rt.clone(),
            e,
        })
    }

    /// Queue function `f` (`name` in errors) of a loaded module with `args` on `s`.
    ///
    /// # Safety
    /// `args` must match the kernel's C signature, every pointer be live device memory of the
    /// size the kernel indexes for the sizes passed with it.
    unsafe fn launch_function(
        &self,
        f: ffi::Function,
        name: &str,
        grid: (u32, u32),
        block: u32,
        args: &[ArgValue],
        s: &HipStream,
    ) -> Result<()> {
        // hipModuleLaunchKernel's kernelParams: one pointer to each argument's value. `vals`
        // is complete and not moved until the call returns (the runtime copies the values).
        let mut vals = args.to_vec();
        let mut params: Vec<*mut c_void> = vals
            .iter_mut()
            .map(|v| match v {
                ArgValue::Ptr(p) => p as *mut u64 as *mut c_void,
                ArgValue::Vif(x) => x as *mut kernels::VifArgs as *mut c_void,
                ArgValue::Adm(x) => x as *mut kernels::AdmArgs as *mut c_void,
                ArgValue::Motion(x) => x as *mut kernels::MotionArgs as *mut c_void,
                ArgValue::Range(x) => x as *mut kernels::RangeArgs as *mut c_void,
                ArgValue::Shift(x) => x as *mut kernels::ShiftArgs as *mut c_void,
                ArgValue::I32(x) => x as *mut i32 as *mut c_void,
                ArgValue::F32(x) => x as *mut f32 as *mut c_void,
            })
            .collect();
        // SAFETY: the caller's contract: the arguments match the kernel's signature (a device
        // pointer is 64 bits, as u64), every pointer is live memory of the sizes the kernel
        // indexes.
        let e = unsafe {
            (self.rt.module_launch_kernel)(
                f,
                grid.0,
                grid.1,
                1,
                block,
                1,
                1,
                0,
                s.s,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.check(e, "hipModuleLaunchKernel", name)
    }
}

impl Device for HipDevice {
    type Buf = HipBuf;
    type Host = HipPinned;
    type Stream = HipStream;
    type Event = HipEvent;
    type Module = HipModule;
    /// HIP has graphs, but the companions' launches go one by one here ([`Device::capture`]).
    type Graph = std::convert::Infallible;
    const NAME: &'static str = "HIP";
    const BACKEND: &'static str = "hip";
    /// The element's pool is CUDA's page-locked memory: HIP stages every host plane.
    const UPLOADS_PINNED_MEMORY: bool = false;

    fn alloc(&self, bytes: usize) -> Result<HipBuf> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: plain allocation on the current device.
        let e = unsafe { (self.rt.malloc)(&mut ptr, bytes.max(8)) };
        self.check(e, "hipMalloc", &format!("{bytes} bytes of device memory"))?;
        Ok(HipBuf {
            rt: self.rt.clone(),
            ptr,
            bytes,
        })
    }

    fn alloc_host(&self, bytes: usize, write_combined: bool) -> Result<HipPinned> {
        let flags = if write_combined {
            ffi::HOST_MALLOC_WRITE_COMBINED
        } else {
            ffi::HOST_MALLOC_DEFAULT
        };
        let mut p = std::ptr::null_mut();
        // SAFETY: plain page-locked allocation; zeroed below before any read.
        let e = unsafe { (self.rt.host_malloc)(&mut p, bytes.max(8), flags) };
        self.check(
            e,
            "hipHostMalloc",
            &format!("{bytes} bytes of pinned memory"),
        )?;
        let ptr = p as *mut u8;
        // SAFETY: ptr points to at least `bytes` writable bytes.
        unsafe { std::ptr::write_bytes(ptr, 0, bytes) };
        Ok(HipPinned {
            rt: self.rt.clone(),
            ptr,
            bytes,
        })
    }

    fn stream(&self) -> Result<HipStream> {
        let mut s = std::ptr::null_mut();
        // SAFETY: writes one handle.
        let e = unsafe { (self.rt.stream_create_with_flags)(&mut s, ffi::STREAM_NON_BLOCKING) };
        self.check(e, "hipStreamCreateWithFlags", "stream")?;
        Ok(HipStream {
            rt: self.rt.clone(),
            s,
        })
    }

    fn event(&self) -> Result<HipEvent> {
        self.new_event(ffi::EVENT_DISABLE_TIMING)
    }

    fn blocking_event(&self) -> Result<HipEvent> {
        self.new_event(ffi::EVENT_DISABLE_TIMING | ffi::EVENT_BLOCKING_SYNC)
    }

    fn bind(&self) -> Result<()> {
        // SAFETY: a valid ordinal (checked when the device was opened).
        let e = unsafe { (self.rt.set_device)(self.ordinal) };
        self.check(e, "hipSetDevice", "bind device")
    }

    fn load_companions(&self) -> Result<HipModule> {
        let code = code_object(&self.rt, &self.arch, Text::Companions)?;
        let names: Vec<&str> = launch::Kernel::ALL.iter().map(|k| k.name()).collect();
        HipModule::load(&self.rt, &code, &self.arch, &names)
    }

    unsafe fn launch_companion(
        &self,
        m: &HipModule,
        k: launch::Kernel,
        grid: (u32, u32),
        args: &[ArgValue],
        s: &HipStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract (Device::launch_companion).
        unsafe { self.launch_function(m.funcs[k as usize], k.name(), grid, launch::BLOCK, args, s) }
    }

    unsafe fn copy_on_device(&self, dst: u64, src: u64, bytes: usize, s: &HipStream) -> Result<()> {
        // SAFETY: the caller's contract.
        let e = unsafe {
            (self.rt.memcpy_async)(
                dptr(dst),
                dptr(src),
                bytes,
                ffi::MEMCPY_DEVICE_TO_DEVICE,
                s.s,
            )
        };
        self.check(e, "hipMemcpyAsync", "copy on the device")
    }

    unsafe fn download_now(&self, dst: &mut [u8], src: u64) -> Result<()> {
        // On the null stream, then waited for: the caller's contract says the source's writes
        // are done.
        let null = std::ptr::null_mut();
        // SAFETY: the caller's contract; `dst` is written before hipStreamSynchronize returns.
        let e = unsafe {
            (self.rt.memcpy_async)(
                dst.as_mut_ptr() as *mut c_void,
                dptr(src),
                dst.len(),
                ffi::MEMCPY_DEVICE_TO_HOST,
                null,
            )
        };
        self.check(e, "hipMemcpyAsync", "read back terms")?;
        // SAFETY: the null stream.
        let e = unsafe { (self.rt.stream_synchronize)(null) };
        self.check(e, "hipStreamSynchronize", "read back terms")
    }

    fn sync_device(&self) -> Result<()> {
        // SAFETY: no arguments; the calling thread's current device.
        let e = unsafe { (self.rt.device_synchronize)() };
        self.check(e, "hipDeviceSynchronize", "synchronize")
    }

    fn capture(
        &self,
        _: &HipStream,
        _: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<std::convert::Infallible>> {
        Ok(None)
    }

    fn launch_graph(&self, g: &std::convert::Infallible) -> Result<()> {
        match *g {}
    }

    unsafe fn upload(&self, dst: u64, src: &[u8], s: &HipStream, what: &str) -> Result<()> {
        // SAFETY: the caller's contract (dst holds src.len() bytes, src outlives the copy).
        let e = unsafe {
            (self.rt.memcpy_async)(
                dptr(dst),
                src.as_ptr() as *const c_void,
                src.len(),
                ffi::MEMCPY_HOST_TO_DEVICE,
                s.s,
            )
        };
        self.check(e, "hipMemcpyAsync", what)
    }

    /// Never: the caller's pinned memory is CUDA's (the element's pool); HIP stages every
    /// host plane.
    fn uploads_directly(&self, _: &HostPlane) -> bool {
        false
    }

    unsafe fn upload_plane(&self, _: &HostPlane, _: u64, _: &HipStream) -> Result<()> {
        Err(Error::Backend(
            "HIP: a host plane uploaded without staging".into(),
        ))
    }

    unsafe fn download(&self, dst: &mut [u8], src: u64, s: &HipStream) -> Result<()> {
        // SAFETY: the caller's contract.
        let e = unsafe {
            (self.rt.memcpy_async)(
                dst.as_mut_ptr() as *mut c_void,
                dptr(src),
                dst.len(),
                ffi::MEMCPY_DEVICE_TO_HOST,
                s.s,
            )
        };
        self.check(e, "hipMemcpyAsync", "read back results")
    }

    unsafe fn memset_zero(&self, dst: u64, bytes: usize, s: &HipStream) -> Result<()> {
        // SAFETY: the caller's contract.
        let e = unsafe { (self.rt.memset_async)(dptr(dst), 0, bytes, s.s) };
        self.check(e, "hipMemsetAsync", "clear results")
    }

    unsafe fn launch(
        &self,
        k: VmafKernel,
        grid: (u32, u32),
        args: &[ArgValue],
        s: &HipStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract (Device::launch).
        unsafe {
            self.launch_function(
                self.vmaf.funcs[k as usize],
                k.name(),
                grid,
                plan::BLOCK,
                args,
                s,
            )
        }
    }

    fn record(&self, e: &HipEvent, s: &HipStream) -> Result<()> {
        // SAFETY: live event and stream.
        let r = unsafe { (self.rt.event_record)(e.e, s.s) };
        self.check(r, "hipEventRecord", "event")
    }

    fn wait(&self, s: &HipStream, e: &HipEvent) -> Result<()> {
        // SAFETY: live stream and event.
        let r = unsafe { (self.rt.stream_wait_event)(s.s, e.e, 0) };
        self.check(r, "hipStreamWaitEvent", "stream dependency")
    }

    fn is_done(&self, e: &HipEvent) -> bool {
        // SAFETY: live event.
        unsafe { (self.rt.event_query)(e.e) != ffi::HIP_ERROR_NOT_READY }
    }

    fn sync_event(&self, e: &HipEvent) -> Result<()> {
        // SAFETY: live event.
        let r = unsafe { (self.rt.event_synchronize)(e.e) };
        self.check(r, "hipEventSynchronize", "event")
    }

    fn sync_stream(&self, s: &HipStream) -> Result<()> {
        // SAFETY: live stream.
        let e = unsafe { (self.rt.stream_synchronize)(s.s) };
        self.check(e, "hipStreamSynchronize", "synchronize")
    }
}
