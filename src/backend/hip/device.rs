//! [`Device`] over the dlopen'd HIP runtime ([`super::ffi`]): memory, streams, events and the
//! loaded kernels of one AMD GPU, each handle freed on drop.

use std::ffi::{CString, c_int, c_void};
use std::sync::Arc;

use super::ffi::{self, Runtime};
use super::{be, check_arch, code_object};
use crate::backend::HostPlane;
use crate::backend::gpu::device::{ArgValue, Device, DeviceMem, HostMem};
use crate::backend::gpu::kernels;
use crate::backend::gpu::pipeline::{DeviceInfo, HostCompanions};
use crate::backend::gpu::plan::{self, Kernel};
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

impl Drop for HipEvent {
    fn drop(&mut self) {
        // SAFETY: live event, destroyed once.
        unsafe { (self.rt.event_destroy)(self.e) };
    }
}

/// The loaded kernels of one device.
struct HipModule {
    rt: Arc<Runtime>,
    m: ffi::Module,
}

impl Drop for HipModule {
    fn drop(&mut self) {
        // SAFETY: live module, unloaded once, after every stream was synchronized (the
        // pipeline's worker drops the device last).
        unsafe { (self.rt.module_unload)(self.m) };
    }
}

/// One AMD GPU, bound to the worker thread, with the VMAF kernels loaded.
pub struct HipDevice {
    rt: Arc<Runtime>,
    funcs: Vec<ffi::Function>,
    _module: HipModule,
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
        let code = code_object(&rt, &arch)?;

        let mut m: ffi::Module = std::ptr::null_mut();
        // SAFETY: `code` is a complete code object from hipRTC for this device's arch; the
        // runtime copies what it needs before returning.
        let e = unsafe { (rt.module_load_data)(&mut m, code.as_ptr() as *const c_void) };
        rt.check(e, "hipModuleLoadData")
            .map_err(|m| be(&format!("load kernels for {arch}"), m))?;
        let module = HipModule { rt: rt.clone(), m };
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
        let device = HipDevice {
            rt,
            funcs,
            _module: module,
        };
        Ok((device, DeviceInfo { name, arch }))
    }

    fn check(&self, e: ffi::HipError, call: &str, what: &str) -> Result<()> {
        self.rt.check(e, call).map_err(|m| be(what, m))
    }
}

impl Device for HipDevice {
    type Buf = HipBuf;
    type Host = HipPinned;
    type Stream = HipStream;
    type Event = HipEvent;
    type Companions = HostCompanions;
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
        let mut e = std::ptr::null_mut();
        // SAFETY: writes one handle.
        let r = unsafe { (self.rt.event_create_with_flags)(&mut e, ffi::EVENT_DISABLE_TIMING) };
        self.check(r, "hipEventCreateWithFlags", "event")?;
        Ok(HipEvent {
            rt: self.rt.clone(),
            e,
        })
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
        k: Kernel,
        grid: (u32, u32),
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
            })
            .collect();
        // SAFETY: the caller's contract (Device::launch): the arguments match the kernel's
        // signature (a device pointer is 64 bits, as u64), every pointer is live memory of the
        // sizes the kernel indexes.
        let e = unsafe {
            (self.rt.module_launch_kernel)(
                self.funcs[k as usize],
                grid.0,
                grid.1,
                1,
                plan::BLOCK,
                1,
                1,
                0,
                s.s,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.check(e, "hipModuleLaunchKernel", k.name())
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
