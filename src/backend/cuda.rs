//! The CUDA backend: VIF, ADM and motion accumulators on an NVIDIA GPU, equal to the CPU
//! reference's bit for bit.
//!
//! - The driver library is probed (dlopen) before any cudarc call, so a machine without CUDA gets
//!   an [`Error::Backend`] instead of cudarc's panic.
//! - The kernels (kernels/*.cu, one text for CUDA and HIP) are compiled once per process with
//!   NVRTC (fmad off, IEEE division and square root) and loaded once per backend.
//! - One worker thread owns the context. It keeps [`SLOTS`] frames in flight, each slot with its
//!   own stream, device buffers, pinned staging (host -> device) and pinned readback memory, all
//!   allocated once per geometry: no per-frame allocation. While the GPU computes frame n, the
//!   worker copies frame n+1 into pinned memory and queues its upload; results come back
//!   asynchronously (a 432-byte readback per frame) and are returned in submission order.
//! - 8-bit content is uploaded as 8-bit samples.
//! - Host planes ([`Backend::submit_host`], the engine's zero-copy route): a plane in pinned
//!   memory (the element's pool, [`pinned`]) is uploaded straight from the caller's buffer with
//!   one cuMemcpy2DAsync (its stride as the source pitch) and kept alive until the slot's upload
//!   event; a plane in pageable memory is row-copied into the slot's staging on the stage
//!   threads (no sample conversion), then uploaded.
//! - Host planes of 9 to 15 bits are range-checked on the GPU (kernels/motion.cu `range_u16`,
//!   right after their upload, into a word of the frame's results): nobody waits for the
//!   verdict and no host thread reads the planes. A frame with a sample out of range is
//!   refused when its result is read ([`Backend::checks_host_ranges`]); its host planes are
//!   kept until then to name the first bad sample exactly.
//! - Motion reads the previous frame's reference where it already is on the GPU (the previous
//!   slot), so each reference is uploaded once.
//! - Companion metrics ([`companion`]) run on their own stream; each frame's ordered host sums
//!   run on a thread of their own. A slot about to be reused is read out into the queue while
//!   its frame's sums go on, so up to [`companion::MAX_RING`] frames can be summing at once
//!   (the engine keeps as many in flight: [`Backend::max_in_flight`]).

#[doc(hidden)]
pub mod companion;
#[doc(hidden)]
pub mod launcher;
pub mod pinned;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg, result, sys,
};
use cudarc::nvrtc::Ptx;

use super::gpu::kernels;
use super::gpu::plan::{self, Arg, Buf, Kernel, Plan, slot};
use super::{Backend, FrameAccum, FrameJob, HostFrame, HostPlane};
use crate::error::{Error, Result};
use crate::features::adm::{AdmConstants, AdmParams};
use crate::features::vif::VifParams;
use crate::picture::OwnedPlane;

/// Frames in flight on the GPU.
pub const SLOTS: usize = 4;

use self::pinned::cuda_error as be;
use self::pinned::{DevBuf, Pinned, upload_2d, uploads_directly};
use super::gpu::staging::{StagePool, stage_threads};
pub use super::stats::KernelTimes;
use super::stats::{CompanionTimes, WorkerTimes};

/// Why CUDA cannot be used here, or `None` if the driver and NVRTC libraries can be loaded.
/// Touches nothing but `dlopen`.
pub fn unavailable_reason() -> Option<String> {
    // SAFETY: is_culib_present only tries to dlopen the library names; it calls nothing in them.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("the NVIDIA driver library (libcuda.so) is not installed".into());
    }
    // SAFETY: as above, for libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Some(
            "NVRTC (libnvrtc.so, CUDA 13) is not installed or not on the library path".into(),
        );
    }
    None
}

/// The VMAF kernels' PTX for the device of `ctx` ([`launcher::ptx`]: compiled once per process).
fn ptx_for(ctx: &Arc<CudaContext>) -> Result<Ptx> {
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| Error::Backend(e.to_string()))?;
    launcher::ptx(launcher::Text::Vmaf, launcher::arch_name(major, minor))
}

/// What a slot is computing.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    index: u64,
    motion: bool,
    features: bool,
    /// The companion metrics' ticket ([`companion::CompanionGpu::submit`]), if any.
    companions: Option<u64>,
}

struct Slot {
    stream: Arc<CudaStream>,
    bufs: Vec<(Buf, DevBuf)>,
    /// Host staging: reference, distorted, previous reference (`plane_bytes` each, 3 x that
    /// in `staging_bytes`), page-locked when a frame first stages a plane: planes in pinned
    /// memory (the element's pool) are uploaded from where they are and never need it (at 4K
    /// 10-bit the four slots' staging is 200 MB, tens of milliseconds to page-lock before the
    /// first frame).
    staging: Option<Pinned>,
    staging_bytes: usize,
    readback: Pinned,
    uploaded: CudaEvent,
    done: CudaEvent,
    job: Option<InFlight>,
    /// The slot whose reference this slot's current frame reads as its previous frame.
    motion_from: Option<usize>,
    /// Host planes uploaded straight from the caller's (pinned) memory: kept alive until the
    /// `uploaded` event completed.
    keep: Vec<HostPlane>,
    /// The luma planes of a frame range-checked on the GPU, kept until its result is read, to
    /// name the first bad sample when the check fails.
    checked: Option<[HostPlane; 2]>,
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

/// Which reference plane a slot holds, to recognise it as the next frame's previous one.
#[derive(Clone, Debug)]
enum RefId {
    Owned(Arc<OwnedPlane>),
    Host(u64),
}

impl RefId {
    fn same(&self, other: &RefId) -> bool {
        match (self, other) {
            (RefId::Owned(a), RefId::Owned(b)) => Arc::ptr_eq(a, b),
            (RefId::Host(a), RefId::Host(b)) => a == b,
            _ => false,
        }
    }
}

enum Pending {
    /// In a slot: its kernels may still run.
    Slot(usize),
    /// Read out of its slot (so the slot could take another frame) while its companion
    /// metrics' scores are still being computed: ticket of [`companion::CompanionGpu`].
    Read {
        index: u64,
        acc: Box<FrameAccum>,
        companions: Option<u64>,
    },
    Failed(Error),
}

enum Msg {
    /// A job; with host planes of 9 to 15 bits and the GPU range check on (the bool), the
    /// worker checks the samples on the GPU and refuses the frame when its result is read.
    Job(Box<FrameJob>, Option<Box<HostFrame>>, bool),
    Reset,
    Time(Box<FrameJob>, usize, Sender<Result<KernelTimes>>),
    /// Set up the companion metrics' kernels now (Backend::prepare).
    PrepareCompanions(Sender<Result<()>>),
}

enum Out {
    Result(Box<Result<(u64, FrameAccum)>>),
    ResetDone,
}

struct Worker {
    /// How many frames the engine may keep in flight (CudaBackend::max_in_flight): SLOTS + 1,
    /// more while the companion metrics' ring holds more frames.
    depth: Arc<AtomicUsize>,
    ctx: Arc<CudaContext>,
    funcs: Vec<CudaFunction>,
    log2: DevBuf,
    div: DevBuf,
    key: Option<GeomKey>,
    plan: Option<Plan>,
    finalize: Option<DevBuf>,
    slots: Vec<Slot>,
    next: usize,
    queue: VecDeque<Pending>,
    last_ref: Option<(RefId, usize)>,
    stage: StagePool,
    /// Per-kernel milliseconds of the last time_kernels call.
    kernel_times: Vec<(&'static str, f64)>,
    /// Host time since the last time_kernels call (benchmarks).
    host: WorkerTimes,
    /// The companion metrics' share of it (benchmarks).
    companion_host: CompanionTimes,
    /// The companion metrics' kernels, set up by the first job that asks for one.
    companion: Option<companion::CompanionGpu>,
}

impl Worker {
    fn new(device_id: u32) -> Result<Worker> {
        let n = CudaContext::device_count().map_err(be("cuDeviceGetCount"))?;
        if device_id as i64 >= n as i64 {
            return Err(Error::Backend(format!(
                "CUDA: device {device_id} requested, {n} present"
            )));
        }
        let ctx = CudaContext::new(device_id as usize).map_err(be("cuCtxCreate"))?;
        // Dependencies between streams are explicit (events below); cudarc's per-argument
        // event tracking would only add work to every launch.
        // SAFETY: called before any allocation or stream of this context exists.
        unsafe { ctx.disable_event_tracking() };
        ctx.bind_to_thread().map_err(be("bind context"))?;
        let ptx = ptx_for(&ctx)?;
        let module = ctx.load_module(ptx).map_err(be("cuModuleLoadData"))?;
        let funcs = Kernel::ALL
            .iter()
            .map(|k| module.load_function(k.name()).map_err(be(k.name())))
            .collect::<Result<Vec<_>>>()?;

        let log2 = DevBuf::new(65537 * 2)?;
        let div = DevBuf::new(65537 * 4)?;
        let s = ctx.default_stream();
        // SAFETY: the tables are 65537 elements, the buffers exactly that many bytes; the copy
        // is synchronous with respect to the host slices (synchronized just below).
        unsafe {
            result::memcpy_htod_async(
                log2.ptr,
                &crate::features::vif::log2_table()[..],
                s.cu_stream(),
            )
            .map_err(be("upload log2 table"))?;
            result::memcpy_htod_async(
                div.ptr,
                &crate::features::adm::div_lookup()[..],
                s.cu_stream(),
            )
            .map_err(be("upload division table"))?;
        }
        s.synchronize().map_err(be("synchronize"))?;
        Ok(Worker {
            ctx,
            funcs,
            log2,
            div,
            key: None,
            plan: None,
            finalize: None,
            slots: Vec::new(),
            next: 0,
            queue: VecDeque::new(),
            last_ref: None,
            kernel_times: Vec::new(),
            host: WorkerTimes::default(),
            companion_host: CompanionTimes::default(),
            stage: StagePool::new(stage_threads() - 1),
            companion: None,
            depth: Arc::new(AtomicUsize::new(SLOTS + 1)),
        })
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
        let fin = DevBuf::new(fin_bytes.len())?;
        let stream0 = self.ctx.default_stream();
        // SAFETY: fin has exactly fin_bytes.len() bytes; synchronized before fin_bytes drops.
        unsafe { result::memcpy_htod_async(fin.ptr, &fin_bytes[..], stream0.cu_stream()) }
            .map_err(be("upload finalize table"))?;
        stream0.synchronize().map_err(be("synchronize"))?;
        let plane_bytes = plan.bytes(Buf::Ref);
        for _ in 0..SLOTS {
            let stream = self.ctx.new_stream().map_err(be("cuStreamCreate"))?;
            let mut bufs = Vec::new();
            for &(b, bytes) in &plan.bufs {
                if matches!(b, Buf::Log2 | Buf::DivLookup | Buf::Finalize) {
                    continue;
                }
                bufs.push((b, DevBuf::new(bytes)?));
            }
            self.slots.push(Slot {
                stream,
                bufs,
                staging: None,
                staging_bytes: 3 * plane_bytes,
                readback: Pinned::new(slot::RESULTS * 8, false)?,
                uploaded: self.ctx.new_event(None).map_err(be("cuEventCreate"))?,
                done: self.ctx.new_event(None).map_err(be("cuEventCreate"))?,
                job: None,
                motion_from: None,
                keep: Vec::new(),
                checked: None,
            });
        }
        self.finalize = Some(fin);
        self.plan = Some(plan);
        self.key = Some(key);
        self.next = 0;
        self.last_ref = None;
        Ok(())
    }

    fn resolve(&self, s: usize, b: Buf) -> Result<u64> {
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
            .ok_or_else(|| Error::Backend(format!("CUDA: plan names a missing buffer {b:?}")))
    }

    /// Queue one launch of the plan on slot `s`'s stream.
    fn launch(&self, s: usize, l: &plan::Launch) -> Result<()> {
        plan::check_signature(l)?;
        enum V {
            P(u64),
            Vif(kernels::VifArgs),
            Adm(kernels::AdmArgs),
            Mot(kernels::MotionArgs),
            Range(kernels::RangeArgs),
            Shift(kernels::ShiftArgs),
        }
        let mut vals = Vec::with_capacity(l.args.len());
        for a in &l.args {
            vals.push(match *a {
                Arg::Ptr(b, off) => V::P(self.resolve(s, b)? + off as u64),
                Arg::Null => V::P(0),
                Arg::Vif(v) => V::Vif(v),
                Arg::Adm(v) => V::Adm(v),
                Arg::Motion(v) => V::Mot(v),
                Arg::Range(v) => V::Range(v),
                Arg::Shift(v) => V::Shift(v),
            });
        }
        let stream = &self.slots[s].stream;
        let mut b = stream.launch_builder(&self.funcs[l.kernel as usize]);
        for v in &vals {
            match v {
                V::P(p) => b.arg(p),
                V::Vif(x) => b.arg(x),
                V::Adm(x) => b.arg(x),
                V::Mot(x) => b.arg(x),
                V::Range(x) => b.arg(x),
                V::Shift(x) => b.arg(x),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (l.grid.0, l.grid.1, 1),
            block_dim: (plan::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches the kernel's C signature (check_signature above,
        // whose table mirrors kernels/*.cu; by-value structs have layout tests). Every pointer
        // is a live allocation of this slot (or a shared table) of the size the plan gives it,
        // and the kernels only index inside the sizes passed in their argument struct: images
        // of w x h (mirrored/clamped indices), bands of bw x bh, row sums of bh rows per
        // quantity, results at the plan's slot offsets (plan tests check the offsets).
        unsafe { b.launch(cfg) }.map_err(be(l.kernel.name()))?;
        Ok(())
    }

    /// Queue one frame. With `check_range` (host planes of 9 to 15 bits), the reference and
    /// distorted planes are checked on the GPU right after their upload; a frame with a sample
    /// above `2^bpc - 1` is refused when its result is read (result_of: the host scan's error,
    /// naming its first bad sample).
    fn submit(
        &mut self,
        job: &FrameJob,
        host: Option<&HostFrame>,
        check_range: bool,
    ) -> Result<usize> {
        let (r, d) = (&*job.reference, &*job.distorted);
        let (w, h, bpc) = (r.width, r.height, r.bpc);
        // A host plane replaces the job's (geometry-only) plane and must have its geometry.
        let fits = |o: &OwnedPlane, hp: Option<&HostPlane>| match hp {
            Some(p) => (p.width(), p.height(), p.bpc()) == (w, h, bpc),
            None => o.data.len() >= w * h,
        };
        if (d.width, d.height, d.bpc) != (w, h, bpc)
            || !fits(r, host.map(|x| &x.reference))
            || !fits(d, host.map(|x| &x.distorted))
            || w < crate::features::MIN_WIDTH
            || h < crate::features::MIN_HEIGHT
            || !(8..=16).contains(&bpc)
        {
            return Err(Error::Geometry(format!(
                "CUDA backend: frame pair {w}x{h}@{bpc} / {}x{}@{} ({} / {} samples)",
                d.width,
                d.height,
                d.bpc,
                r.data.len(),
                d.data.len()
            )));
        }
        if let Some(p) = &job.prev_ref
            && ((p.width, p.height, p.bpc) != (w, h, bpc)
                || !fits(p, host.and_then(|x| x.prev_ref.as_ref())))
        {
            return Err(Error::Geometry(
                "CUDA backend: previous reference differs in geometry".into(),
            ));
        }
        let key = GeomKey::of(r, &job.vif, &job.adm);
        if self.key != Some(key) {
            self.drain_for_setup()?;
            self.setup(key, &job.vif, &job.adm)?;
        }
        // Host planes the engine did not scan and the plan cannot check (frames above 2^31
        // samples): scan them here, before anything is queued.
        if check_range
            && self.plan.as_ref().is_some_and(|p| p.range.is_none())
            && let Some(x) = host
        {
            crate::backend::host::check_ranges(&[(&x.reference, "luma"), (&x.distorted, "luma")])?;
        }
        let s = self.next;
        self.next = (s + 1) % SLOTS;
        if self.slots[s].job.is_some() {
            return Err(Error::Backend(
                "CUDA: slot reused before its result was read".into(),
            ));
        }
        let this_ref = match host {
            Some(x) => RefId::Host(x.reference.id()),
            None => RefId::Owned(job.reference.clone()),
        };
        let prev_id = match (host.and_then(|x| x.prev_ref.as_ref()), &job.prev_ref) {
            (Some(p), _) => Some(RefId::Host(p.id())),
            (None, Some(p)) => Some(RefId::Owned(p.clone())),
            (None, None) => None,
        };
        let motion_from = match (&prev_id, &self.last_ref) {
            (Some(p), Some((lr, ls))) if p.same(lr) && *ls != s => Some(*ls),
            _ => None,
        };
        let plan = self.plan.as_ref().expect("plan set up");
        let n = w * h;
        let plane_bytes = plan.bytes(Buf::Ref);

        // MSB-aligned host planes (P010: bpc bits 16 - bpc up) are uploaded as stored and
        // shifted down on the GPU (plan.shift); a plane stored some other way is shifted while
        // staged.
        let can_shift = plan.shift.is_some();
        let gpu_shifts = move |p: &HostPlane| p.shift() > 0 && can_shift && p.shift() + bpc == 16;
        // Where each plane to upload comes from: the job's compact plane (converted into
        // staging), a host plane in pageable memory (rows copied into staging), or a host
        // plane in pinned memory (uploaded from where it is, no host copy).
        enum Src<'a> {
            Owned(&'a OwnedPlane),
            Staged(&'a HostPlane),
            Direct(&'a HostPlane),
        }
        fn src<'a>(
            o: &'a OwnedPlane,
            hp: Option<&'a HostPlane>,
            gpu_shifts: impl Fn(&HostPlane) -> bool,
        ) -> Src<'a> {
            match hp {
                None => Src::Owned(o),
                Some(p) if uploads_directly(p) && (p.shift() == 0 || gpu_shifts(p)) => {
                    Src::Direct(p)
                }
                Some(p) => Src::Staged(p),
            }
        }
        let mut srcs = vec![
            src(r, host.map(|x| &x.reference), gpu_shifts),
            src(d, host.map(|x| &x.distorted), gpu_shifts),
        ];
        if let (Some(p), None) = (&job.prev_ref, motion_from) {
            srcs.push(src(p, host.and_then(|x| x.prev_ref.as_ref()), gpu_shifts));
        }

        // Stage the planes (8-bit content as bytes).
        let t_stage = std::time::Instant::now();
        {
            let slot = &mut self.slots[s];
            let stage = &self.stage;
            for (i, sp) in srcs.iter().enumerate() {
                if matches!(sp, Src::Direct(_)) {
                    continue;
                }
                let staging = match &mut slot.staging {
                    Some(p) => p,
                    p => p.insert(Pinned::new(slot.staging_bytes, true)?),
                };
                let dst = staging.slice_mut(i * plane_bytes, plane_bytes);
                match sp {
                    Src::Owned(p) => stage.convert(&p.data[..n], dst, bpc == 8),
                    // MSB-aligned rows as stored where the GPU shifts them, else shifted here.
                    Src::Staged(p) => stage.copy_rows(p, dst, !gpu_shifts(p)),
                    Src::Direct(_) => {}
                }
            }
        }

        let t_enqueue = std::time::Instant::now();
        self.host.stage += (t_enqueue - t_stage).as_secs_f64();
        let slot = &self.slots[s];
        let st = slot.stream.cu_stream();
        // The next slot's frame may still be reading this slot's reference (motion): wait.
        let nx = (s + 1) % SLOTS;
        if self.slots[nx].motion_from == Some(s) {
            slot.stream
                .wait(&self.slots[nx].done)
                .map_err(be("cuStreamWaitEvent"))?;
        }
        let acc = slot.buf(Buf::Acc).expect("Acc");
        let dst = |b: Buf| slot.buf(b).expect("plane buffer").ptr;
        // SAFETY: every copy stays inside its buffers (plane_bytes each, staging 3 * plane_bytes,
        // acc.bytes); the staging memory is not written again before this slot's `done` event
        // (results are read before a slot is reused), so it outlives the asynchronous copies.
        // Direct uploads read the caller's memory asynchronously: HostPlane::new checked that
        // its rows lie in its owner's bytes, the device buffers hold plane_bytes =
        // row_bytes * height, and the planes are kept alive in `keep` until `uploaded`.
        let mut keep = Vec::new();
        let queued = unsafe {
            let stg = slot.staging.as_ref();
            // The uploads first: the copy engine can start them while the previous frames'
            // kernels still hold the SMs (the zeroing below is a kernel).
            let mut queue = || -> Result<()> {
                for (i, sp) in srcs.iter().enumerate() {
                    let to = dst([Buf::Ref, Buf::Dis, Buf::Prev][i]);
                    match sp {
                        Src::Direct(p) => {
                            keep.push((*p).clone());
                            upload_2d(p, to, st)?;
                        }
                        Src::Owned(_) | Src::Staged(_) => {
                            let stg = stg.ok_or_else(|| {
                                Error::Backend("CUDA: staging not allocated".into())
                            })?;
                            result::memcpy_htod_async(
                                to,
                                stg.slice(i * plane_bytes, plane_bytes),
                                st,
                            )
                            .map_err(be([
                                "upload reference",
                                "upload distorted",
                                "upload previous reference",
                            ][i]))?;
                        }
                    }
                }
                result::memset_d8_async(acc.ptr, 0, acc.bytes, st)
                    .map_err(be("cuMemsetD8Async"))?;
                Ok(())
            };
            queue()
        };
        if let Err(e) = queued {
            // Copies already queued may still read the caller's planes: let them finish
            // before `keep` lets go of them.
            let _ = slot.stream.synchronize();
            return Err(e);
        }
        // MSB-aligned planes uploaded as stored: shifted down in place on this stream, after
        // their upload and before `uploaded` (the next frame's motion reads this reference
        // after that event) and every kernel of the frame.
        let shift = self.plan.as_ref().and_then(|p| p.shift.as_ref());
        for (i, sp) in srcs.iter().enumerate() {
            let (Src::Direct(p) | Src::Staged(p)) = sp else {
                continue;
            };
            if let (true, Some(l)) = (gpu_shifts(p), shift)
                && let Err(e) = self.launch(s, &l[i])
            {
                // The uploads may still read the caller's planes (`keep`).
                let _ = slot.stream.synchronize();
                return Err(e);
            }
        }
        slot.uploaded
            .record(&slot.stream)
            .map_err(be("cuEventRecord"))?;
        // The companion metrics on their own streams while this frame's VMAF kernels run
        // (companion.rs: equal to the CPU code, CIEDE2000 within its documented bound). Their
        // scores are summed when the frame's result is taken (result_of), while the GPU works
        // on the following frames. Queued now, after the uploads and before VMAF's kernels, so
        // that the luma they take from this slot's buffers is there for them at once.
        let t_companions = std::time::Instant::now();
        let companions = if job.features && job.companions.any() {
            let luma_bytes = n * if bpc == 8 { 1 } else { 2 };
            let (rp, dp) = (dst(Buf::Ref), dst(Buf::Dis));
            let stream = Arc::clone(&slot.stream);
            let submitted = (|| {
                let gpu = self.companion_gpu()?;
                // The luma planes were just uploaded into this slot's buffers (compact rows,
                // bytes at 8 bits, u16 above; shifted where MSB-aligned): the companions widen
                // 8-bit ones from there and copy deeper ones.
                let luma = companion::DeviceLuma {
                    reference: rp,
                    distorted: dp,
                    bytes: luma_bytes.min(plane_bytes),
                    stream: &stream,
                };
                let t = gpu.submit_sharing_luma(job, host, luma)?;
                // Frames whose companion scores are pending, plus the one being queued.
                let ring = gpu.ring_len();
                self.depth.store(ring + 1, Ordering::Relaxed);
                Ok(t)
            })();
            match submitted {
                Ok(t) => Some(t),
                Err(e) => {
                    // The uploads may still read the caller's planes (`keep`).
                    let _ = self.slots[s].stream.synchronize();
                    return Err(e);
                }
            }
        } else {
            None
        };
        self.companion_host.submit += t_companions.elapsed().as_secs_f64();
        // The range check (host planes of 9 to 15 bits): after the uploads and the zeroing,
        // into the RANGE word of the results; its verdict is read with them (result_of).
        let range = self.plan.as_ref().expect("plan set up").range.clone();
        let checked = match (check_range, host, range) {
            (true, Some(x), Some(l)) => {
                if let Err(e) = self.launch(s, &l) {
                    // The uploads may still read the caller's planes (`keep`).
                    let _ = self.slots[s].stream.synchronize();
                    return Err(e);
                }
                Some([x.reference.clone(), x.distorted.clone()])
            }
            _ => None,
        };
        self.slots[s].checked = checked;
        let plan = self.plan.as_ref().expect("plan set up");
        self.slots[s].keep = keep;
        let slot = &self.slots[s];
        if let Some(k) = motion_from {
            slot.stream
                .wait(&self.slots[k].uploaded)
                .map_err(be("cuStreamWaitEvent"))?;
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
        // SAFETY: readback holds RESULTS u64; acc holds at least that many; readback is read
        // only after `done` completes.
        unsafe {
            let rb = slot.readback.slice_mut(0, slot::RESULTS * 8);
            result::memcpy_dtoh_async(rb, acc_ptr, st).map_err(be("read back results"))?;
        }
        slot.done
            .record(&slot.stream)
            .map_err(be("cuEventRecord"))?;
        let slot = &mut self.slots[s];
        slot.job = Some(InFlight {
            index: job.index,
            motion: job.prev_ref.is_some(),
            features: job.features,
            companions,
        });
        self.last_ref = Some((this_ref, s));
        self.host.frames += 1;
        self.host.enqueue += t_enqueue.elapsed().as_secs_f64();
        Ok(s)
    }

    /// The companion metrics' kernels and buffers, set up by the first call (Backend::prepare
    /// or the first job that asks for a companion metric).
    fn companion_gpu(&mut self) -> Result<&mut companion::CompanionGpu> {
        if self.companion.is_none() {
            self.companion = Some(companion::CompanionGpu::new(&self.ctx)?);
        }
        Ok(self.companion.as_mut().expect("set just above"))
    }

    /// Block until every frame in flight is done (their results stay queued).
    fn drain_for_setup(&mut self) -> Result<()> {
        for s in &self.slots {
            s.stream.synchronize().map_err(be("cuStreamSynchronize"))?;
        }
        Ok(())
    }

    fn result_of(&mut self, s: usize) -> Result<(u64, FrameAccum)> {
        let (index, acc, companions) = self.read_slot(s)?;
        self.with_companions(index, acc, companions)
    }

    /// Wait for slot `s`'s frame, free the slot and turn its readback into accumulators (the
    /// range check's refusal, if any), leaving its companion metrics' ticket to the caller.
    fn read_slot(&mut self, s: usize) -> Result<(u64, FrameAccum, Option<u64>)> {
        let t_wait = std::time::Instant::now();
        self.slots[s]
            .done
            .synchronize()
            .map_err(be("cuEventSynchronize"))?;
        self.host.wait += t_wait.elapsed().as_secs_f64();
        let job = self.slots[s]
            .job
            .take()
            .ok_or_else(|| Error::Backend("CUDA: result of an empty slot".into()))?;
        self.slots[s].keep.clear();
        let raw = self.slots[s].readback.slice(0, slot::RESULTS * 8);
        let words: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        if let Some([r, d]) = self.slots[s].checked.take()
            && words[slot::RANGE] != 0
        {
            // Refused: the companion metrics' scores of the frame are not wanted (taken only
            // to free their ring entry), and the host planes name the first bad sample.
            if let (Some(t), Some(gpu)) = (job.companions, self.companion.as_mut()) {
                let _ = gpu.take(t);
            }
            crate::backend::host::check_ranges(&[(&r, "luma"), (&d, "luma")])?;
            return Err(Error::Backend(
                "CUDA: the range check found a sample the host scan does not".into(),
            ));
        }
        let acc = plan::accum_from_words(&words, job.features, job.motion);
        Ok((job.index, acc, job.companions))
    }

    /// A frame's result with its companion metrics' scores (waiting for them).
    fn with_companions(
        &mut self,
        index: u64,
        mut acc: FrameAccum,
        companions: Option<u64>,
    ) -> Result<(u64, FrameAccum)> {
        if let Some(t) = companions {
            let t_take = std::time::Instant::now();
            let gpu = self.companion.as_mut().ok_or_else(|| {
                Error::Backend("CUDA: companion metrics of a frame without their state".into())
            })?;
            acc.companions = gpu.take(t)?;
            self.companion_host.take += t_take.elapsed().as_secs_f64();
        }
        Ok((index, acc))
    }

    /// Free the slot the next frame goes to: read its frame out (its place in the queue keeps
    /// the result, whose companion metrics may still be computing). Waits for its kernels.
    fn free_next_slot(&mut self) {
        let s = self.next;
        let Some(i) = self
            .queue
            .iter()
            .position(|p| matches!(p, Pending::Slot(k) if *k == s))
        else {
            return;
        };
        self.queue[i] = match self.read_slot(s) {
            Ok((index, acc, companions)) => Pending::Read {
                index,
                acc: Box::new(acc),
                companions,
            },
            Err(e) => Pending::Failed(e),
        };
    }

    /// GPU time of one frame's kernels (after one normal submission of `job`): milliseconds per
    /// frame with `reps` frames back to back on one stream, and with them spread over the
    /// slots' streams (what frames in flight give). Uploads and readbacks are not included.
    fn time_kernels(&mut self, job: &FrameJob, reps: usize) -> Result<(f64, f64)> {
        if !self.queue.is_empty() {
            return Err(Error::State("time_kernels with frames in flight".into()));
        }
        // Once through every slot, so that each holds the frame.
        let mut s = 0;
        for _ in 0..SLOTS {
            s = self.submit(job, None, false)?;
            self.result_of(s)?;
        }
        let plan = self.plan.take().expect("plan");
        let run = |w: &Worker, slots: &[usize]| -> Result<f64> {
            for sl in &w.slots {
                sl.stream.synchronize().map_err(be("synchronize"))?;
            }
            let t0 = std::time::Instant::now();
            for i in 0..reps {
                let k = slots[i % slots.len()];
                if job.prev_ref.is_some() {
                    w.launch(k, &plan.motion)?;
                }
                for l in &plan.launches {
                    w.launch(k, l)?;
                }
            }
            for sl in &w.slots {
                sl.stream.synchronize().map_err(be("synchronize"))?;
            }
            Ok(t0.elapsed().as_secs_f64() * 1e3 / reps as f64)
        };
        // Per-kernel times, one stream, events around each launch.
        let mut per_kernel: Vec<(&'static str, f64)> = Vec::new();
        {
            let st = &self.slots[s].stream;
            let ev = || {
                self.ctx
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            };
            let reps_k = 10.min(reps).max(1);
            let mut launches: Vec<&plan::Launch> = Vec::new();
            if job.prev_ref.is_some() {
                launches.push(&plan.motion);
            }
            launches.extend(plan.launches.iter());
            for _ in 0..reps_k {
                let mut evs = vec![ev().map_err(be("cuEventCreate"))?];
                evs[0].record(st).map_err(be("cuEventRecord"))?;
                for l in &launches {
                    self.launch(s, l)?;
                    let e = ev().map_err(be("cuEventCreate"))?;
                    e.record(st).map_err(be("cuEventRecord"))?;
                    evs.push(e);
                }
                st.synchronize().map_err(be("synchronize"))?;
                for (i, l) in launches.iter().enumerate() {
                    let ms = evs[i]
                        .elapsed_ms(&evs[i + 1])
                        .map_err(be("cuEventElapsedTime"))? as f64;
                    let name = l.kernel.name();
                    match per_kernel.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, t)) => *t += ms / reps_k as f64,
                        None => per_kernel.push((name, ms / reps_k as f64)),
                    }
                }
            }
        }
        self.kernel_times = per_kernel;
        let one = run(self, &[s]);
        let all: Vec<usize> = (0..SLOTS).collect();
        let many = run(self, &all);
        self.plan = Some(plan);
        Ok((one?, many?))
    }

    /// Drop the host planes whose uploads completed (the caller's buffers go back to it as
    /// early as possible: a decoder's pool is small).
    fn release_uploaded(&mut self) {
        for sl in &mut self.slots {
            if !sl.keep.is_empty() && sl.uploaded.is_complete() {
                sl.keep.clear();
            }
        }
    }

    /// Is the oldest pending result ready without blocking? (Its kernels, and its companion
    /// metrics' scores: taking them early would make the worker wait for their host sums
    /// instead of queueing the next frames.)
    fn front_ready(&self) -> bool {
        match self.queue.front() {
            Some(Pending::Failed(_)) => true,
            Some(Pending::Read { companions, .. }) => self.companions_ready(*companions),
            Some(Pending::Slot(s)) => {
                let sl = &self.slots[*s];
                sl.done.is_complete() && self.companions_ready(sl.job.and_then(|j| j.companions))
            }
            None => false,
        }
    }

    /// Whether the companion scores of `ticket` (if any) can be taken without waiting (a
    /// ticket without companion state is taken at once: `with_companions` reports the error).
    fn companions_ready(&self, ticket: Option<u64>) -> bool {
        ticket.is_none_or(|t| self.companion.as_ref().is_none_or(|g| g.is_ready(t)))
    }

    /// Whether the oldest frame's kernels are done and only its companion metrics' scores are
    /// missing.
    fn front_waits_for_companions(&self) -> bool {
        match self.queue.front() {
            Some(Pending::Read { companions, .. }) => !self.companions_ready(*companions),
            Some(Pending::Slot(s)) => {
                let sl = &self.slots[*s];
                sl.done.is_complete() && !self.companions_ready(sl.job.and_then(|j| j.companions))
            }
            _ => false,
        }
    }

    fn pop_front(&mut self) -> Option<Result<(u64, FrameAccum)>> {
        match self.queue.pop_front()? {
            Pending::Failed(e) => Some(Err(e)),
            Pending::Slot(s) => Some(self.result_of(s)),
            Pending::Read {
                index,
                acc,
                companions,
            } => Some(self.with_companions(index, *acc, companions)),
        }
    }

    fn run(mut self, rx: Receiver<Msg>, out: Sender<Out>) {
        loop {
            let msg = if self.queue.is_empty() {
                match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => break,
                }
            } else if self.front_waits_for_companions() {
                // The oldest frame waits for its companion metrics' host sums (milliseconds):
                // stay ready for new jobs meanwhile instead of blocking on them.
                match rx.recv_timeout(std::time::Duration::from_micros(200)) {
                    Ok(m) => Some(m),
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match rx.try_recv() {
                    Ok(m) => Some(m),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => break,
                }
            };
            match msg {
                Some(Msg::Job(job, host, range_check)) => {
                    // Results that must be delivered before this job: all of them when the
                    // geometry changes (the slots are rebuilt). Else the slot about to be
                    // reused is read out (its result keeps its place in the queue, which is in
                    // submission order, until its companion metrics' scores are in).
                    let geom_change =
                        self.key != Some(GeomKey::of(&job.reference, &job.vif, &job.adm));
                    while geom_change && !self.queue.is_empty() {
                        let Some(r) = self.pop_front() else { break };
                        if out.send(Out::Result(Box::new(r))).is_err() {
                            return;
                        }
                    }
                    if self.slots.get(self.next).is_some_and(|sl| sl.job.is_some()) {
                        self.free_next_slot();
                    }
                    // Planes whose samples fill their words (P010) hold no sample above their
                    // bits once shifted: a pair of them needs no check.
                    let check_range = range_check
                        && host.as_ref().is_some_and(|x| {
                            (9..=15).contains(&x.reference.bpc())
                                && (x.reference.can_exceed() || x.distorted.can_exceed())
                        });
                    let submitted = self.submit(&job, host.as_deref(), check_range);
                    drop(host);
                    self.release_uploaded();
                    self.queue.push_back(match submitted {
                        Ok(s) => Pending::Slot(s),
                        Err(e) => Pending::Failed(e),
                    });
                    while self.front_ready() {
                        let r = self.pop_front().expect("ready");
                        if out.send(Out::Result(Box::new(r))).is_err() {
                            return;
                        }
                    }
                }
                Some(Msg::Time(job, reps, reply)) => {
                    let host = std::mem::take(&mut self.host);
                    let r = self.time_kernels(&job, reps).map(|(one, many)| {
                        let per_kernel = std::mem::take(&mut self.kernel_times);
                        KernelTimes::new((one, many), per_kernel, &host, &self.companion_host)
                    });
                    self.host = WorkerTimes::default();
                    self.companion_host = CompanionTimes::default();
                    let _ = reply.send(r);
                }
                Some(Msg::PrepareCompanions(reply)) => {
                    let _ = reply.send(self.companion_gpu().map(|_| ()));
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
                        s.keep.clear();
                        s.checked = None;
                    }
                    self.last_ref = None;
                    if let Some(gpu) = self.companion.as_mut() {
                        gpu.clear();
                    }
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
        // Let every stream finish before the buffers are freed.
        for s in &self.slots {
            let _ = s.stream.synchronize();
        }
    }
}

/// The CUDA backend. See the module documentation.
pub struct CudaBackend {
    tx: Option<Sender<Msg>>,
    rx: Receiver<Out>,
    worker: Option<JoinHandle<()>>,
    in_flight: usize,
    device_name: String,
    /// Shared with the worker: see `Worker::depth`.
    depth: Arc<AtomicUsize>,
    /// Whether host planes of 9 to 15 bits are range-checked on the GPU after their upload
    /// (the default) instead of scanned by the engine on the host before it
    /// ([`CudaBackend::set_host_range_check`]).
    ///
    /// The host scan reads every sample before the frame is taken (a 4K 10-bit pair is 33 MB,
    /// on top of the 33 MB the upload reads), which held the element's 4K 10-bit rate down
    /// (BENCHMARKS.md). The GPU check reads the uploaded planes in the GPU's memory and nobody
    /// waits for it: its verdict comes back with the frame's results, and a bad frame is
    /// refused then (Error::FrameRefused in the engine).
    range_check_on_gpu: bool,
}

impl CudaBackend {
    /// Open CUDA device `device_id`: probe the libraries, create the context, compile (once per
    /// process) and load the kernels, upload the tables.
    pub fn new(device_id: u32) -> Result<CudaBackend> {
        if let Some(why) = unavailable_reason() {
            return Err(Error::Backend(format!("CUDA unavailable: {why}")));
        }
        let (tx, rx_worker) = mpsc::channel::<Msg>();
        let (out_tx, rx) = mpsc::channel::<Out>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(String, Arc<AtomicUsize>)>>();
        let worker = std::thread::Builder::new()
            .name("vmafgpu-cuda".into())
            .spawn(move || match Worker::new(device_id) {
                Ok(w) => {
                    let name = w.ctx.name().unwrap_or_else(|_| "CUDA device".into());
                    if ready_tx.send(Ok((name, Arc::clone(&w.depth)))).is_ok() {
                        w.run(rx_worker, out_tx);
                    }
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| Error::Backend(format!("CUDA: cannot start worker thread: {e}")))?;
        let (device_name, depth) = match ready_rx.recv() {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                let _ = worker.join();
                return Err(e);
            }
            Err(_) => {
                let _ = worker.join();
                return Err(Error::Backend("CUDA: worker thread failed to start".into()));
            }
        };
        Ok(CudaBackend {
            tx: Some(tx),
            rx,
            worker: Some(worker),
            in_flight: 0,
            device_name,
            depth,
            range_check_on_gpu: true,
        })
    }

    /// Have the engine scan host planes of 9 to 15 bits on the host before it takes them
    /// (`true`) instead of this backend checking them on the GPU after their upload (`false`,
    /// the default): a test hook for the host path, which refuses a bad frame at its push
    /// rather than when its result is read. The same verdicts either way.
    #[doc(hidden)]
    pub fn set_host_range_check(&mut self, on: bool) {
        self.range_check_on_gpu = !on;
    }

    /// GPU time of `job`'s kernels (see [`KernelTimes`]). Uploads, readbacks and host work are
    /// not included. Needs nothing in flight. For benchmarks.
    pub fn time_kernels(&mut self, job: FrameJob, reps: usize) -> Result<KernelTimes> {
        if self.in_flight != 0 {
            return Err(Error::State("time_kernels with frames in flight".into()));
        }
        let (tx, rx) = mpsc::channel();
        self.send(Msg::Time(Box::new(job), reps.max(1), tx))?;
        rx.recv()
            .map_err(|_| Error::Backend("CUDA: worker thread has stopped".into()))?
    }

    /// The device's name (e.g. "NVIDIA H200").
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    fn send(&self, m: Msg) -> Result<()> {
        self.tx
            .as_ref()
            .and_then(|t| t.send(m).ok())
            .ok_or_else(|| Error::Backend("CUDA: worker thread has stopped".into()))
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    /// VMAF's features and every companion metric run on the GPU (the companions' float
    /// sums finish there too; the host adds terms only for the rare frame their bound does
    /// not decide). CAMBI is not on the GPU yet: the engine keeps it on host threads.
    fn computes_on_device(&self, companions: crate::backend::Companions) -> bool {
        companions.cambi.is_none()
    }

    fn submit(&mut self, job: FrameJob) -> Result<()> {
        self.send(Msg::Job(Box::new(job), None, false))?;
        self.in_flight += 1;
        Ok(())
    }

    fn accepts_host_planes(&self) -> bool {
        true
    }

    fn checks_host_ranges(&self) -> bool {
        self.range_check_on_gpu
    }

    fn prepare(&mut self, companions: crate::backend::Companions) -> Result<()> {
        if !companions.any() {
            return Ok(());
        }
        let (tx, rx) = mpsc::channel();
        self.send(Msg::PrepareCompanions(tx))?;
        rx.recv()
            .map_err(|_| Error::Backend("CUDA: worker thread has stopped".into()))?
    }

    fn submit_host(&mut self, job: FrameJob, host: HostFrame) -> Result<()> {
        let range_check = self.range_check_on_gpu;
        self.send(Msg::Job(Box::new(job), Some(Box::new(host)), range_check))?;
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
                Err(_) => return Err(Error::Backend("CUDA: worker thread has stopped".into())),
            }
        } else {
            match self.rx.try_recv() {
                Ok(o) => o,
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => {
                    return Err(Error::Backend("CUDA: worker thread has stopped".into()));
                }
            }
        };
        match got {
            Out::Result(r) => {
                self.in_flight -= 1;
                (*r).map(Some)
            }
            Out::ResetDone => Err(Error::Backend(
                "CUDA: unexpected reset acknowledgement".into(),
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
        self.depth.load(Ordering::Relaxed)
    }
}

impl Drop for CudaBackend {
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
    fn ref_ids_match_only_the_same_plane() {
        let a = Arc::new(OwnedPlane::default());
        let b = Arc::new(OwnedPlane::default());
        assert!(RefId::Owned(a.clone()).same(&RefId::Owned(a.clone())));
        assert!(!RefId::Owned(a.clone()).same(&RefId::Owned(b)));
        assert!(RefId::Host(3).same(&RefId::Host(3)));
        assert!(!RefId::Host(3).same(&RefId::Host(4)));
        assert!(!RefId::Host(3).same(&RefId::Owned(a)));
    }
}
