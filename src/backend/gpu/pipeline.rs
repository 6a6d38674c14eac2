//! The slot pipeline of both GPU backends, written once over [`Device`]: VIF, ADM and motion
//! accumulators equal to the CPU reference's bit for bit, and the companion metrics on the
//! device ([`GpuCompanions`]).
//!
//! - One worker thread owns the device. It keeps [`SLOTS`] frames in flight, each slot with its
//!   own stream, device buffers, pinned staging (host -> device) and pinned readback memory, all
//!   allocated once per geometry: no per-frame allocation. While the GPU computes frame n, the
//!   worker copies frame n+1 into pinned memory and queues its upload; results come back
//!   asynchronously (a 432-byte readback per frame) and are returned in submission order.
//! - 8-bit content is uploaded as 8-bit samples.
//! - Host planes ([`Backend::submit_host`], the engine's zero-copy route): a plane the device
//!   can upload from where it is ([`Device::uploads_directly`]: CUDA's pinned memory, the
//!   element's pool) is uploaded straight from the caller's buffer (its stride as the source
//!   pitch) and kept alive until the slot's upload event; any other plane is row-copied into
//!   the slot's staging on the stage threads (no sample conversion), then uploaded.
//! - Host planes of 9 to 15 bits are range-checked on the GPU (kernels/motion.cu `range_u16`,
//!   right after their upload, into a word of the frame's results): nobody waits for the
//!   verdict and no host thread reads the planes. A frame with a sample out of range is
//!   refused when its result is read ([`Backend::checks_host_ranges`]); its host planes are
//!   kept until then to name the first bad sample exactly.
//! - Motion reads the previous frame's reference where it already is on the GPU (the previous
//!   slot), so each reference is uploaded once.
//! - Companion metrics ([`GpuCompanions`]) are queued after a frame's uploads, sharing its luma
//!   planes on the device; a slot about to be reused is read out into the queue while its
//!   frame's companion scores are still being computed, so the engine may keep
//!   [`GpuCompanions::ring_len`] + 1 frames in flight ([`Backend::max_in_flight`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

use super::companion::GpuCompanions;
use super::device::{ArgValue, Device, DeviceMem, HostMem};
use super::plan::{self, Arg, SlotBuf, VmafPlan, slot};
use super::staging::{StagePool, stage_threads};
use crate::backend::stats::{CompanionTimes, WorkerTimes};
use crate::backend::{Backend, ClipConfig, Companions, FrameAccum, FrameJob, HostFrame};
use crate::backend::{DeviceFrame, DevicePlane, HostPlane, InputPlane};
use crate::error::{Error, Result};
use crate::features::adm::{AdmConstants, AdmParams};
use crate::features::vif::VifParams;
use crate::picture::OwnedPlane;

/// Frames in flight on the GPU.
pub const SLOTS: usize = 4;

/// A frame's luma planes where the pipeline just uploaded them (a slot's device buffers:
/// compact rows, bytes at 8 bits, u16 above; shifted where MSB-aligned), queued on `stream`.
pub struct SlotLuma<'a, D: Device> {
    pub reference: u64,
    pub distorted: u64,
    /// The planes' bytes in those buffers.
    pub bytes: usize,
    pub stream: &'a D::Stream,
}

/// What a slot is computing.
#[derive(Clone, Copy, Debug)]
struct SlotJob {
    index: u64,
    motion: bool,
    features: bool,
    /// The companion metrics' ticket ([`GpuCompanions::submit`]), if any.
    companions: Option<u64>,
}

/// One frame in flight: its stream, buffers and host memory.
pub(crate) struct FrameSlot<D: Device> {
    pub(crate) stream: D::Stream,
    bufs: Vec<(SlotBuf, D::Buf)>,
    /// Host staging: reference, distorted, previous reference (`plane_bytes` each, 3 x that
    /// in `staging_bytes`), page-locked when a frame first stages a plane: planes the device
    /// uploads from where they are never need it (at 4K 10-bit the four slots' staging is
    /// 200 MB, tens of milliseconds to page-lock before the first frame).
    staging: Option<D::Host>,
    staging_bytes: usize,
    readback: D::Host,
    uploaded: D::Event,
    done: D::Event,
    job: Option<SlotJob>,
    /// The slot whose reference this slot's current frame reads as its previous frame.
    motion_from: Option<usize>,
    /// Host planes uploaded straight from the caller's (pinned) memory: kept alive until the
    /// `uploaded` event completed.
    keep: Vec<HostPlane>,
    /// The luma planes of a frame range-checked on the GPU, kept until its result is read, to
    /// name the first bad sample when the check fails.
    checked: Option<[HostPlane; 2]>,
    /// Device planes copied from where they are: kept alive until the `uploaded` event
    /// completed (the copy is all that reads them).
    keep_device: Vec<DevicePlane>,
    /// A frame read from device planes was range-checked on the GPU: a failure is named from
    /// the slot's own copies of its planes.
    checked_device: bool,
}

impl<D: Device> FrameSlot<D> {
    fn buf(&self, b: SlotBuf) -> Option<&D::Buf> {
        self.bufs.iter().find(|(k, _)| *k == b).map(|(_, d)| d)
    }
}

/// A plane read where it is, host or device memory.
#[derive(Clone, Copy)]
enum In<'a> {
    Host(&'a HostPlane),
    Device(&'a DevicePlane),
}

impl<'a> In<'a> {
    fn of(p: &'a InputPlane) -> In<'a> {
        match p {
            InputPlane::Host(p) => In::Host(p),
            InputPlane::Device(p) => In::Device(p),
        }
    }

    fn geometry(self) -> (usize, usize, u8) {
        match self {
            In::Host(p) => (p.width(), p.height(), p.bpc()),
            In::Device(p) => (p.width(), p.height(), p.bpc()),
        }
    }

    fn id(self) -> u64 {
        match self {
            In::Host(p) => p.id(),
            In::Device(p) => p.id(),
        }
    }

    fn can_exceed(self) -> bool {
        match self {
            In::Host(p) => p.can_exceed(),
            In::Device(p) => p.bpc() > 8 && p.bpc() + p.shift() < 16,
        }
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

/// A frame in the worker's queue, in submission order.
enum Queued {
    /// In a slot: its kernels may still run.
    Slot(usize),
    /// Read out of its slot (so the slot could take another frame) while its companion
    /// metrics' scores are still being computed.
    Read {
        index: u64,
        acc: Box<FrameAccum>,
        companions: Option<u64>,
    },
    Failed(Error),
}

/// Work run on the worker thread with the worker (benchmarks: `time_kernels`).
pub(crate) type OnWorker<D> = Box<dyn FnOnce(&mut GpuWorker<D>) + Send>;

enum Request<D: Device> {
    /// A job; with host planes of 9 to 15 bits and the GPU range check on (the bool), the
    /// worker checks the samples on the GPU and refuses the frame when its result is read.
    Job(Box<FrameJob>, Option<Box<HostFrame>>, bool),
    /// A job whose luma planes are read where they are, host or device memory (the range
    /// check as for `Job`).
    DeviceJob(Box<FrameJob>, Box<DeviceFrame>, bool),
    Reset,
    /// The configuration of the jobs after it (Backend::configure): the worker keeps it and
    /// sets up the companion metrics' executor now if it asks for any.
    Configure(Box<ClipConfig>, Sender<Result<()>>),
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the CUDA backend's benchmarks
    Run(OnWorker<D>),
}

enum Reply {
    Result(Box<Result<(u64, FrameAccum)>>),
    ResetDone,
}

/// The worker thread's state: the device, the per-geometry slots, the queue of frames.
pub(crate) struct GpuWorker<D: Device> {
    /// How many frames the engine may keep in flight (GpuBackend::max_in_flight): SLOTS + 1,
    /// more while the companion metrics' ring holds more frames.
    depth: Arc<AtomicUsize>,
    pub(crate) slots: Vec<FrameSlot<D>>,
    log2: D::Buf,
    div: D::Buf,
    finalize: Option<D::Buf>,
    key: Option<GeomKey>,
    pub(crate) plan: Option<VmafPlan>,
    next: usize,
    queue: VecDeque<Queued>,
    last_ref: Option<(RefId, usize)>,
    stage: StagePool,
    /// The stream of one-off uploads (tables).
    aux: D::Stream,
    /// Per-kernel milliseconds of the last time_kernels call.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the CUDA backend's benchmarks
    pub(crate) kernel_times: Vec<(&'static str, f64)>,
    /// Host time since the last time_kernels call (benchmarks).
    pub(crate) host: WorkerTimes,
    /// The companion metrics' share of it (benchmarks).
    pub(crate) companion_host: CompanionTimes,
    /// What the jobs are computed with (Backend::configure; in the channel's order, so that a
    /// configuration applies to the jobs sent after it).
    config: ClipConfig,
    /// The companion metrics' executor, set up by a configuration (or the first job) that asks
    /// for one.
    companion: Option<GpuCompanions<D>>,
    // Last: dropped after everything allocated on it.
    pub(crate) dev: D,
}

fn err<D: Device>(what: impl std::fmt::Display) -> Error {
    Error::Backend(format!("{}: {what}", D::NAME))
}

impl<D: Device> GpuWorker<D> {
    fn new(dev: D) -> Result<GpuWorker<D>> {
        let log2 = dev.alloc(65537 * 2)?;
        let div = dev.alloc(65537 * 4)?;
        let aux = dev.stream()?;
        let l2 = crate::features::vif::log2_table();
        let dl = crate::features::adm::div_lookup();
        // SAFETY: the tables are 65537 elements, the buffers exactly that many bytes; the host
        // tables are 'static and the stream is synchronized just below.
        unsafe {
            dev.upload(log2.ptr(), as_bytes(&l2[..]), &aux, "upload log2 table")?;
            dev.upload(div.ptr(), as_bytes(&dl[..]), &aux, "upload division table")?;
        }
        dev.sync_stream(&aux)?;
        Ok(GpuWorker {
            depth: Arc::new(AtomicUsize::new(SLOTS + 1)),
            slots: Vec::new(),
            log2,
            div,
            finalize: None,
            key: None,
            plan: None,
            next: 0,
            queue: VecDeque::new(),
            last_ref: None,
            stage: StagePool::new(stage_threads() - 1),
            aux,
            kernel_times: Vec::new(),
            host: WorkerTimes::default(),
            companion_host: CompanionTimes::default(),
            config: ClipConfig::default(),
            companion: None,
            dev,
        })
    }

    /// Allocate everything a geometry needs, with the configuration's VIF and ADM parameters
    /// (after draining the previous one).
    fn setup(&mut self, key: GeomKey) -> Result<()> {
        self.slots.clear();
        self.finalize = None;
        self.plan = None;
        self.key = None;
        let dev = &self.dev;
        let consts = AdmConstants::new(&self.config.adm);
        let plan = VmafPlan::new(
            key.w,
            key.h,
            key.bpc,
            self.config.vif.enhn_gain_limit,
            &consts,
        );
        let fin_bytes: Vec<u8> = plan.finalize.iter().flat_map(|e| e.to_bytes()).collect();
        let fin = dev.alloc(fin_bytes.len())?;
        // SAFETY: fin has exactly fin_bytes.len() bytes; synchronized before fin_bytes drops.
        unsafe { dev.upload(fin.ptr(), &fin_bytes, &self.aux, "upload finalize table")? };
        dev.sync_stream(&self.aux)?;
        let plane_bytes = plan.bytes(SlotBuf::Ref);
        for _ in 0..SLOTS {
            let stream = dev.stream()?;
            let mut bufs = Vec::new();
            for &(b, bytes) in &plan.bufs {
                if matches!(b, SlotBuf::Log2 | SlotBuf::DivLookup | SlotBuf::Finalize) {
                    continue;
                }
                bufs.push((b, dev.alloc(bytes)?));
            }
            self.slots.push(FrameSlot {
                stream,
                bufs,
                staging: None,
                staging_bytes: 3 * plane_bytes,
                readback: dev.alloc_host(slot::RESULTS * 8, false)?,
                uploaded: dev.event()?,
                done: dev.event()?,
                job: None,
                motion_from: None,
                keep: Vec::new(),
                checked: None,
                keep_device: Vec::new(),
                checked_device: false,
            });
        }
        self.finalize = Some(fin);
        self.plan = Some(plan);
        self.key = Some(key);
        self.next = 0;
        self.last_ref = None;
        Ok(())
    }

    fn resolve(&self, s: usize, b: SlotBuf) -> Result<u64> {
        let d = match b {
            SlotBuf::Log2 => Some(&self.log2),
            SlotBuf::DivLookup => Some(&self.div),
            SlotBuf::Finalize => self.finalize.as_ref(),
            SlotBuf::Prev => match self.slots[s].motion_from {
                Some(k) => self.slots[k].buf(SlotBuf::Ref),
                None => self.slots[s].buf(SlotBuf::Prev),
            },
            other => self.slots[s].buf(other),
        };
        d.map(|d| d.ptr())
            .ok_or_else(|| err::<D>(format!("plan names a missing buffer {b:?}")))
    }

    /// Queue one launch of the plan on slot `s`'s stream.
    pub(crate) fn launch(&self, s: usize, l: &plan::VmafLaunch) -> Result<()> {
        plan::check_signature(l)?;
        let mut vals = Vec::with_capacity(l.args.len());
        for a in &l.args {
            vals.push(match *a {
                Arg::Ptr(b, off) => ArgValue::Ptr(self.resolve(s, b)? + off as u64),
                Arg::Null => ArgValue::Ptr(0),
                Arg::Vif(v) => ArgValue::Vif(v),
                Arg::Adm(v) => ArgValue::Adm(v),
                Arg::Motion(v) => ArgValue::Motion(v),
                Arg::Range(v) => ArgValue::Range(v),
                Arg::Shift(v) => ArgValue::Shift(v),
            });
        }
        // SAFETY: the argument list matches the kernel's C signature (check_signature above,
        // whose table mirrors kernels/*.cu; by-value structs have layout tests). Every pointer
        // is a live allocation of this slot (or a shared table) of the size the plan gives it,
        // and the kernels only index inside the sizes passed in their argument struct: images
        // of w x h (mirrored/clamped indices), bands of bw x bh, row sums of bh rows per
        // quantity, results at the plan's slot offsets (plan tests check the offsets).
        unsafe {
            self.dev
                .launch(l.kernel, l.grid, &vals, &self.slots[s].stream)
        }
    }

    /// Queue one frame, computed with the worker's configuration. With `check_range` (host
    /// planes of 9 to 15 bits), the reference and distorted planes are checked on the GPU right
    /// after their upload; a frame with a sample above `2^bpc - 1` is refused when its result
    /// is read (read_slot: the host scan's error, naming its first bad sample).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the CUDA backend's benchmarks
    pub(crate) fn submit(
        &mut self,
        job: &FrameJob,
        host: Option<&HostFrame>,
        check_range: bool,
    ) -> Result<usize> {
        self.submit_from(job, host, None, check_range)
    }

    /// [`GpuWorker::submit`] with the planes of `host` (host memory) or `device` (each in host
    /// or device memory; no companion metrics), or the job's own planes when neither is given.
    fn submit_from(
        &mut self,
        job: &FrameJob,
        host: Option<&HostFrame>,
        device: Option<&DeviceFrame>,
        check_range: bool,
    ) -> Result<usize> {
        let (r, d) = (&*job.reference, &*job.distorted);
        let (w, h, bpc) = (r.width, r.height, r.bpc);
        if device.is_some() && job.features && self.config.companions.any() {
            return Err(err::<D>(
                "companion metrics of a frame read from device planes (the engine copies such \
                 frames to the host)",
            ));
        }
        // The planes read where they are: reference, distorted, previous reference.
        let ins: [Option<In<'_>>; 3] = match (host, device) {
            (Some(x), _) => [
                Some(In::Host(&x.reference)),
                Some(In::Host(&x.distorted)),
                x.prev_ref.as_ref().map(In::Host),
            ],
            (None, Some(x)) => [
                Some(In::of(&x.reference)),
                Some(In::of(&x.distorted)),
                x.prev_ref.as_ref().map(In::of),
            ],
            (None, None) => [None, None, None],
        };
        // A plane read where it is replaces the job's (geometry-only) plane and must have its
        // geometry.
        let fits = |o: &OwnedPlane, p: Option<In<'_>>| match p {
            Some(p) => p.geometry() == (w, h, bpc),
            None => o.data.len() >= w * h,
        };
        if (d.width, d.height, d.bpc) != (w, h, bpc)
            || !fits(r, ins[0])
            || !fits(d, ins[1])
            || w < crate::features::MIN_WIDTH
            || h < crate::features::MIN_HEIGHT
            || !(8..=16).contains(&bpc)
        {
            return Err(Error::Geometry(format!(
                "{} backend: frame pair {w}x{h}@{bpc} / {}x{}@{} ({} / {} samples)",
                D::NAME,
                d.width,
                d.height,
                d.bpc,
                r.data.len(),
                d.data.len()
            )));
        }
        if let Some(p) = &job.prev_ref
            && ((p.width, p.height, p.bpc) != (w, h, bpc) || !fits(p, ins[2]))
        {
            return Err(Error::Geometry(format!(
                "{} backend: previous reference differs in geometry",
                D::NAME
            )));
        }
        let key = GeomKey::of(r, &self.config.vif, &self.config.adm);
        if self.key != Some(key) {
            self.drain_for_setup()?;
            self.setup(key)?;
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
            return Err(err::<D>("slot reused before its result was read"));
        }
        let this_ref = match ins[0] {
            Some(p) => RefId::Host(p.id()),
            None => RefId::Owned(job.reference.clone()),
        };
        let prev_id = match (ins[2], &job.prev_ref) {
            (Some(p), _) => Some(RefId::Host(p.id())),
            (None, Some(p)) => Some(RefId::Owned(p.clone())),
            (None, None) => None,
        };
        let motion_from = match (&prev_id, &self.last_ref) {
            (Some(p), Some((lr, ls))) if p.same(lr) && *ls != s => Some(*ls),
            _ => None,
        };
        // Set before any launch of the frame: the GPU shift of an uploaded previous reference
        // resolves `SlotBuf::Prev` through it (a stale value from the slot's last frame would name
        // another slot's reference).
        self.slots[s].motion_from = motion_from;
        let plan = self.plan.as_ref().expect("plan set up");
        let n = w * h;
        let plane_bytes = plan.bytes(SlotBuf::Ref);

        // MSB-aligned host planes (P010: bpc bits 16 - bpc up) are uploaded as stored and
        // shifted down on the GPU (plan.shift); a plane stored some other way is shifted while
        // staged.
        let can_shift = plan.shift.is_some();
        let gpu_shifts = move |p: &HostPlane| p.shift() > 0 && can_shift && p.shift() + bpc == 16;
        // Where each plane to upload comes from: the job's compact plane (converted into
        // staging), a host plane in pageable memory (rows copied into staging), or a host
        // plane the device uploads from where it is (no host copy).
        // A device plane is copied on the device (its MSB-aligned samples shifted there too).
        enum Src<'a> {
            Owned(&'a OwnedPlane),
            Staged(&'a HostPlane),
            Direct(&'a HostPlane),
            Device(&'a DevicePlane),
        }
        fn src<'a>(
            o: &'a OwnedPlane,
            hp: Option<In<'a>>,
            direct: impl Fn(&HostPlane) -> bool,
            gpu_shifts: impl Fn(&HostPlane) -> bool,
        ) -> Src<'a> {
            match hp {
                None => Src::Owned(o),
                Some(In::Device(p)) => Src::Device(p),
                Some(In::Host(p)) if direct(p) && (p.shift() == 0 || gpu_shifts(p)) => {
                    Src::Direct(p)
                }
                Some(In::Host(p)) => Src::Staged(p),
            }
        }
        let direct = |p: &HostPlane| self.dev.uploads_directly(p);
        let mut srcs = vec![
            src(r, ins[0], direct, gpu_shifts),
            src(d, ins[1], direct, gpu_shifts),
        ];
        if let (Some(p), None) = (&job.prev_ref, motion_from) {
            srcs.push(src(p, ins[2], direct, gpu_shifts));
        }
        // A device plane stored MSB-aligned some way the GPU does not shift cannot be staged.
        if let Some(Src::Device(p)) = srcs
            .iter()
            .find(|sp| matches!(sp, Src::Device(p) if p.shift() > 0 && !(can_shift && p.shift() + bpc == 16)))
        {
            return Err(err::<D>(format!(
                "a device plane with {} bit samples {} bits up is not read",
                p.bpc(),
                p.shift()
            )));
        }

        // Stage the planes (8-bit content as bytes).
        let t_stage = std::time::Instant::now();
        {
            let slot = &mut self.slots[s];
            let stage = &self.stage;
            for (i, sp) in srcs.iter().enumerate() {
                if matches!(sp, Src::Direct(_) | Src::Device(_)) {
                    continue;
                }
                let staging = match &mut slot.staging {
                    Some(p) => p,
                    p => p.insert(self.dev.alloc_host(slot.staging_bytes, true)?),
                };
                let dst = staging.slice_mut(i * plane_bytes, plane_bytes);
                match sp {
                    Src::Owned(p) => stage.convert(&p.data[..n], dst, bpc == 8),
                    // MSB-aligned rows as stored where the GPU shifts them, else shifted here.
                    Src::Staged(p) => stage.copy_rows(p, dst, !gpu_shifts(p)),
                    Src::Direct(_) | Src::Device(_) => {}
                }
            }
        }

        let t_enqueue = std::time::Instant::now();
        self.host.stage += (t_enqueue - t_stage).as_secs_f64();
        let dev = &self.dev;
        let slot = &self.slots[s];
        let st = &slot.stream;
        // The next slot's frame may still be reading this slot's reference (motion): wait.
        let nx = (s + 1) % SLOTS;
        if self.slots[nx].motion_from == Some(s) {
            dev.wait(st, &self.slots[nx].done)?;
        }
        let acc = slot.buf(SlotBuf::Acc).expect("Acc");
        let dst = |b: SlotBuf| slot.buf(b).expect("plane buffer").ptr();
        // SAFETY: every copy stays inside its buffers (plane_bytes each, staging 3 * plane_bytes,
        // acc.bytes); the staging memory is not written again before this slot's `done` event
        // (results are read before a slot is reused), so it outlives the asynchronous copies.
        // Direct uploads read the caller's memory asynchronously: HostPlane::new checked that
        // its rows lie in its owner's bytes, the device buffers hold plane_bytes =
        // row_bytes * height, and the planes are kept alive in `keep` until `uploaded`.
        let mut keep = Vec::new();
        let mut keep_device = Vec::new();
        let queued = unsafe {
            let stg = slot.staging.as_ref();
            // The uploads first: the copy engine can start them while the previous frames'
            // kernels still hold the SMs (the zeroing below is a kernel).
            let mut queue = || -> Result<()> {
                for (i, sp) in srcs.iter().enumerate() {
                    let to = dst([SlotBuf::Ref, SlotBuf::Dis, SlotBuf::Prev][i]);
                    match sp {
                        Src::Direct(p) => {
                            keep.push((*p).clone());
                            dev.upload_plane(p, to, st)?;
                        }
                        // DevicePlane::new's contract: the memory is the device's, complete and
                        // kept unwritten while the plane (in keep_device) lives.
                        Src::Device(p) => {
                            keep_device.push((*p).clone());
                            dev.copy_device_plane(p, to, st)?;
                        }
                        Src::Owned(_) | Src::Staged(_) => {
                            let stg = stg.ok_or_else(|| err::<D>("staging not allocated"))?;
                            dev.upload(
                                to,
                                stg.slice(i * plane_bytes, plane_bytes),
                                st,
                                [
                                    "upload reference",
                                    "upload distorted",
                                    "upload previous reference",
                                ][i],
                            )?;
                        }
                    }
                }
                dev.memset_zero(acc.ptr(), acc.bytes(), st)?;
                Ok(())
            };
            queue()
        };
        if let Err(e) = queued {
            // Copies already queued may still read the caller's planes: let them finish
            // before `keep` lets go of them.
            let _ = dev.sync_stream(st);
            return Err(e);
        }
        // MSB-aligned planes uploaded as stored: shifted down in place on this stream, after
        // their upload and before `uploaded` (the next frame's motion reads this reference
        // after that event) and every kernel of the frame.
        let shift = self.plan.as_ref().and_then(|p| p.shift.as_ref());
        for (i, sp) in srcs.iter().enumerate() {
            let shifted = match sp {
                Src::Direct(p) | Src::Staged(p) => gpu_shifts(p),
                Src::Device(p) => p.shift() > 0,
                Src::Owned(_) => false,
            };
            if let (true, Some(l)) = (shifted, shift)
                && let Err(e) = self.launch(s, &l[i])
            {
                // The uploads may still read the caller's planes (`keep`).
                let _ = dev.sync_stream(st);
                return Err(e);
            }
        }
        dev.record(&slot.uploaded, st)?;
        // The companion metrics (on the GPU on their own streams, CUDA) while this frame's
        // VMAF kernels run. Their scores are taken when the frame's result is (read_slot),
        // while the GPU works on the following frames. Queued now, after the uploads and
        // before VMAF's kernels, so that the luma they take from this slot's buffers is there
        // for them at once.
        let t_companions = std::time::Instant::now();
        let asked = self.config.companions;
        let companions = if job.features && asked.any() {
            let luma = SlotLuma {
                reference: dst(SlotBuf::Ref),
                distorted: dst(SlotBuf::Dis),
                bytes: (n * if bpc == 8 { 1 } else { 2 }).min(plane_bytes),
                stream: st,
            };
            let submitted = (|| {
                let exec = match &mut self.companion {
                    Some(c) => c,
                    c => c.insert(GpuCompanions::open(dev)?),
                };
                let t = exec.submit_sharing_luma(&asked, job, host, luma)?;
                // Frames whose companion scores are pending, plus the one being queued.
                self.depth.store(exec.ring_len() + 1, Ordering::Relaxed);
                Ok(t)
            })();
            match submitted {
                Ok(t) => Some(t),
                Err(e) => {
                    // The uploads may still read the caller's planes (`keep`).
                    let _ = dev.sync_stream(st);
                    return Err(e);
                }
            }
        } else {
            None
        };
        self.companion_host.submit += t_companions.elapsed().as_secs_f64();
        // The range check (host planes of 9 to 15 bits): after the uploads and the zeroing,
        // into the RANGE word of the results; its verdict is read with them (read_slot).
        let plan = self.plan.as_ref().expect("plan set up");
        let checked = match (check_range, &plan.range) {
            (true, Some(l)) if host.is_some() || device.is_some() => {
                if let Err(e) = self.launch(s, l) {
                    // The uploads may still read the caller's planes (`keep`).
                    let _ = self.dev.sync_stream(&self.slots[s].stream);
                    return Err(e);
                }
                host.map(|x| [x.reference.clone(), x.distorted.clone()])
            }
            _ => None,
        };
        self.slots[s].checked_device = check_range && host.is_none() && device.is_some();
        self.slots[s].checked = checked;
        self.slots[s].keep = keep;
        self.slots[s].keep_device = keep_device;
        if let Some(k) = motion_from {
            self.dev
                .wait(&self.slots[s].stream, &self.slots[k].uploaded)?;
        }
        if job.prev_ref.is_some() {
            self.launch(s, &plan.motion)?;
        }
        if job.features {
            for l in &plan.launches {
                self.launch(s, l)?;
            }
        }
        let slot = &mut self.slots[s];
        let acc_ptr = slot.buf(SlotBuf::Acc).expect("Acc").ptr();
        // SAFETY: readback holds RESULTS u64; acc holds at least that many; readback is read
        // only after `done` completes.
        unsafe {
            let rb = slot.readback.slice_mut(0, slot::RESULTS * 8);
            self.dev.download(rb, acc_ptr, &slot.stream)?;
        }
        self.dev.record(&slot.done, &slot.stream)?;
        slot.job = Some(SlotJob {
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

    /// The companion metrics' executor, set up by the first call (a configuration or the first
    /// job that asks for a companion metric).
    fn companions(&mut self) -> Result<&mut GpuCompanions<D>> {
        match &mut self.companion {
            Some(c) => Ok(c),
            c => Ok(c.insert(GpuCompanions::open(&self.dev)?)),
        }
    }

    /// Block until every frame in flight is done (their results stay queued).
    fn drain_for_setup(&mut self) -> Result<()> {
        for s in &self.slots {
            self.dev.sync_stream(&s.stream)?;
        }
        Ok(())
    }

    pub(crate) fn result_of(&mut self, s: usize) -> Result<(u64, FrameAccum)> {
        let (index, acc, companions) = self.read_slot(s)?;
        self.with_companions(index, acc, companions)
    }

    /// Wait for slot `s`'s frame, free the slot and turn its readback into accumulators (the
    /// range check's refusal, if any), leaving its companion metrics' ticket to the caller.
    fn read_slot(&mut self, s: usize) -> Result<(u64, FrameAccum, Option<u64>)> {
        let t_wait = std::time::Instant::now();
        self.dev.sync_event(&self.slots[s].done)?;
        self.host.wait += t_wait.elapsed().as_secs_f64();
        let job = self.slots[s]
            .job
            .take()
            .ok_or_else(|| err::<D>("result of an empty slot"))?;
        self.slots[s].keep.clear();
        self.slots[s].keep_device.clear();
        let checked_device = std::mem::take(&mut self.slots[s].checked_device);
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
            if let (Some(t), Some(exec)) = (job.companions, self.companion.as_mut()) {
                let _ = exec.take(t);
            }
            crate::backend::host::check_ranges(&[(&r, "luma"), (&d, "luma")])?;
            return Err(err::<D>(
                "the range check found a sample the host scan does not",
            ));
        }
        if checked_device && words[slot::RANGE] != 0 {
            if let (Some(t), Some(exec)) = (job.companions, self.companion.as_mut()) {
                let _ = exec.take(t);
            }
            return Err(self.name_bad_sample(s));
        }
        let acc = plan::accum_from_words(&words, job.features, job.motion);
        Ok((job.index, acc, job.companions))
    }

    /// The refusal of slot `s`'s frame read from device planes: its first bad sample, found in
    /// the slot's compact copies of the planes (read back; the caller's planes are gone).
    fn name_bad_sample(&mut self, s: usize) -> Error {
        let Some(key) = self.key else {
            return err::<D>("range check of a slot without geometry");
        };
        let row = key.w * 2;
        let mut planes = Vec::new();
        for b in [SlotBuf::Ref, SlotBuf::Dis] {
            let Some(buf) = self.slots[s].buf(b) else {
                return err::<D>("range check: plane buffer missing");
            };
            let mut v = vec![0u8; row * key.h];
            // SAFETY: the buffer holds plane_bytes >= row * h (9 to 15 bits: u16 samples); the
            // stream is synchronized before `v` is read.
            let r = unsafe { self.dev.download(&mut v, buf.ptr(), &self.slots[s].stream) }
                .and_then(|()| self.dev.sync_stream(&self.slots[s].stream))
                .and_then(|()| HostPlane::new(Arc::new(v), 0, row, key.w, key.h, key.bpc));
            match r {
                Ok(p) => planes.push(p),
                Err(e) => return e,
            }
        }
        match crate::backend::host::check_ranges(&[(&planes[0], "luma"), (&planes[1], "luma")]) {
            Err(e) => e,
            Ok(()) => err::<D>("the range check found a sample the host scan does not"),
        }
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
            let exec = self
                .companion
                .as_mut()
                .ok_or_else(|| err::<D>("companion metrics of a frame without their state"))?;
            acc.companions = exec.take(t)?;
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
            .position(|p| matches!(p, Queued::Slot(k) if *k == s))
        else {
            return;
        };
        self.queue[i] = match self.read_slot(s) {
            Ok((index, acc, companions)) => Queued::Read {
                index,
                acc: Box::new(acc),
                companions,
            },
            Err(e) => Queued::Failed(e),
        };
    }

    /// Whether nothing is queued (benchmarks need an idle pipeline).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the CUDA backend's benchmarks
    pub(crate) fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Drop the host planes whose uploads completed (the caller's buffers go back to it as
    /// early as possible: a decoder's pool is small).
    fn release_uploaded(&mut self) {
        for sl in &mut self.slots {
            if (!sl.keep.is_empty() || !sl.keep_device.is_empty()) && self.dev.is_done(&sl.uploaded)
            {
                sl.keep.clear();
                sl.keep_device.clear();
            }
        }
    }

    /// Is the oldest pending result ready without blocking? (Its kernels, and its companion
    /// metrics' scores: taking them early would make the worker wait for them instead of
    /// queueing the next frames.)
    fn front_ready(&self) -> bool {
        match self.queue.front() {
            Some(Queued::Failed(_)) => true,
            Some(Queued::Read { companions, .. }) => self.companions_ready(*companions),
            Some(Queued::Slot(s)) => {
                let sl = &self.slots[*s];
                self.dev.is_done(&sl.done)
                    && self.companions_ready(sl.job.and_then(|j| j.companions))
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
            Some(Queued::Read { companions, .. }) => !self.companions_ready(*companions),
            Some(Queued::Slot(s)) => {
                let sl = &self.slots[*s];
                self.dev.is_done(&sl.done)
                    && !self.companions_ready(sl.job.and_then(|j| j.companions))
            }
            _ => false,
        }
    }

    fn pop_front(&mut self) -> Option<Result<(u64, FrameAccum)>> {
        match self.queue.pop_front()? {
            Queued::Failed(e) => Some(Err(e)),
            Queued::Slot(s) => Some(self.result_of(s)),
            Queued::Read {
                index,
                acc,
                companions,
            } => Some(self.with_companions(index, *acc, companions)),
        }
    }

    /// Queue a job (host planes, or planes read where they are) and send what became ready;
    /// false once nobody listens.
    fn take_job(
        &mut self,
        job: &FrameJob,
        host: Option<HostFrame>,
        device: Option<DeviceFrame>,
        range_check: bool,
        out: &Sender<Reply>,
    ) -> bool {
        // Results that must be delivered before this job: all of them when the geometry
        // changes (the slots are rebuilt). Else the slot about to be reused is read out (its
        // result keeps its place in the queue, which is in submission order, until its
        // companion metrics' scores are in).
        let geom_change = self.key
            != Some(GeomKey::of(
                &job.reference,
                &self.config.vif,
                &self.config.adm,
            ));
        while geom_change && !self.queue.is_empty() {
            let Some(r) = self.pop_front() else { break };
            if out.send(Reply::Result(Box::new(r))).is_err() {
                return false;
            }
        }
        if self.slots.get(self.next).is_some_and(|sl| sl.job.is_some()) {
            self.free_next_slot();
        }
        // Planes whose samples fill their words (P010) hold no sample above their bits once
        // shifted: a pair of them needs no check.
        let pair = match (&host, &device) {
            (Some(x), _) => Some((In::Host(&x.reference), In::Host(&x.distorted))),
            (None, Some(x)) => Some((In::of(&x.reference), In::of(&x.distorted))),
            (None, None) => None,
        };
        let check_range = range_check
            && pair.is_some_and(|(r, d)| {
                (9..=15).contains(&r.geometry().2) && (r.can_exceed() || d.can_exceed())
            });
        let submitted = self.submit_from(job, host.as_ref(), device.as_ref(), check_range);
        drop(host);
        drop(device);
        self.release_uploaded();
        self.queue.push_back(match submitted {
            Ok(s) => Queued::Slot(s),
            Err(e) => Queued::Failed(e),
        });
        while self.front_ready() {
            let r = self.pop_front().expect("ready");
            if out.send(Reply::Result(Box::new(r))).is_err() {
                return false;
            }
        }
        true
    }

    fn run(mut self, rx: Receiver<Request<D>>, out: Sender<Reply>) {
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
                Some(Request::DeviceJob(job, frame, range_check)) => {
                    if !self.take_job(&job, None, Some(*frame), range_check, &out) {
                        return;
                    }
                }
                Some(Request::Job(job, host, range_check)) => {
                    if !self.take_job(&job, host.map(|h| *h), None, range_check, &out) {
                        return;
                    }
                }
                Some(Request::Run(f)) => f(&mut self),
                Some(Request::Configure(cfg, reply)) => {
                    self.config = *cfg;
                    let ready = if self.config.companions.any() {
                        self.companions().map(|_| ())
                    } else {
                        Ok(())
                    };
                    let _ = reply.send(ready);
                }
                Some(Request::Reset) => {
                    for s in &self.slots {
                        let _ = self.dev.sync_stream(&s.stream);
                    }
                    while let Some(p) = self.queue.pop_front() {
                        if let Queued::Slot(s) = p {
                            self.slots[s].job = None;
                        }
                    }
                    for s in &mut self.slots {
                        s.motion_from = None;
                        s.keep.clear();
                        s.keep_device.clear();
                        s.checked = None;
                        s.checked_device = false;
                    }
                    self.last_ref = None;
                    if let Some(exec) = self.companion.as_mut() {
                        exec.clear();
                    }
                    if out.send(Reply::ResetDone).is_err() {
                        return;
                    }
                }
                None => {
                    let r = self.pop_front().expect("queue not empty");
                    if out.send(Reply::Result(Box::new(r))).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

impl<D: Device> Drop for GpuWorker<D> {
    fn drop(&mut self) {
        // Let every stream finish before the buffers, streams and kernels are freed.
        for s in &self.slots {
            let _ = self.dev.sync_stream(&s.stream);
        }
        let _ = self.dev.sync_stream(&self.aux);
    }
}

/// The bytes of a table of plain integers.
fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: T is a plain integer type (u16, u32 tables) without padding; the bytes are read
    // only, for the lifetime of `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// What the worker learns about the device when it opens it.
#[derive(Clone, Debug, Default)]
pub struct DeviceInfo {
    /// The device's name (e.g. "NVIDIA H200").
    pub name: String,
    /// The architecture the kernels were compiled for ("compute_90", "gfx90a:sramecc+:xnack-").
    pub arch: String,
}

/// A GPU backend: the worker thread owning device `D` and the slot pipeline. The CUDA and HIP
/// backends are this type with their device (`CudaBackend`, `HipBackend`).
pub struct GpuBackend<D: Device> {
    tx: Option<Sender<Request<D>>>,
    rx: Receiver<Reply>,
    worker: Option<JoinHandle<()>>,
    in_flight: usize,
    info: DeviceInfo,
    /// Shared with the worker: see `GpuWorker::depth`.
    depth: Arc<AtomicUsize>,
    /// Whether host planes of 9 to 15 bits are range-checked on the GPU after their upload
    /// (the default) instead of scanned by the engine on the host before it
    /// ([`GpuBackend::set_host_range_check`]).
    ///
    /// The host scan reads every sample before the frame is taken (a 4K 10-bit pair is 33 MB,
    /// on top of the 33 MB the upload reads), which held the element's 4K 10-bit rate down
    /// (BENCHMARKS.md). The GPU check reads the uploaded planes in the GPU's memory and nobody
    /// waits for it: its verdict comes back with the frame's results, and a bad frame is
    /// refused then (Error::FrameRefused in the engine).
    range_check_on_gpu: bool,
}

impl<D: Device> GpuBackend<D> {
    /// Start the worker thread `thread`, which opens the device with `open` (on that thread:
    /// the device is bound to it) and uploads the tables.
    pub(crate) fn start(
        thread: &str,
        open: impl FnOnce() -> Result<(D, DeviceInfo)> + Send + 'static,
    ) -> Result<GpuBackend<D>> {
        let (tx, rx_worker) = mpsc::channel::<Request<D>>();
        let (out_tx, rx) = mpsc::channel::<Reply>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(DeviceInfo, Arc<AtomicUsize>)>>();
        let worker = std::thread::Builder::new()
            .name(thread.into())
            .spawn(
                move || match open().and_then(|(d, i)| Ok((GpuWorker::new(d)?, i))) {
                    Ok((w, info)) => {
                        if ready_tx.send(Ok((info, Arc::clone(&w.depth)))).is_ok() {
                            w.run(rx_worker, out_tx);
                        }
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                },
            )
            .map_err(|e| err::<D>(format!("cannot start worker thread: {e}")))?;
        let (info, depth) = match ready_rx.recv() {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                let _ = worker.join();
                return Err(e);
            }
            Err(_) => {
                let _ = worker.join();
                return Err(err::<D>("worker thread failed to start"));
            }
        };
        Ok(GpuBackend {
            tx: Some(tx),
            rx,
            worker: Some(worker),
            in_flight: 0,
            info,
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

    /// The device's name (e.g. "NVIDIA H200", "AMD Instinct MI210").
    pub fn device_name(&self) -> &str {
        &self.info.name
    }

    /// The architecture the kernels were compiled for (e.g. "gfx90a:sramecc+:xnack-").
    pub fn arch(&self) -> &str {
        &self.info.arch
    }

    /// Whether anything is in flight.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the CUDA backend's benchmarks
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Run `f` on the worker thread (with the worker) and wait for its answer.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the CUDA backend's benchmarks
    pub(crate) fn on_worker<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut GpuWorker<D>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = mpsc::channel();
        self.send(Request::Run(Box::new(move |w| {
            let _ = tx.send(f(w));
        })))?;
        rx.recv().map_err(|_| self.stopped())?
    }

    fn stopped(&self) -> Error {
        err::<D>("worker thread has stopped")
    }

    fn send(&self, m: Request<D>) -> Result<()> {
        self.tx
            .as_ref()
            .and_then(|t| t.send(m).ok())
            .ok_or_else(|| self.stopped())
    }
}

impl<D: Device> Backend for GpuBackend<D> {
    fn name(&self) -> &'static str {
        D::BACKEND
    }

    /// VMAF's features and the companion metrics run on the GPU ([`GpuCompanions`]), their
    /// float sums too; the host adds terms only for the rare frame their bound does not decide;
    /// CAMBI: the host finishes each scale's pooling from the GPU's exact sums, or in libvmaf's
    /// order from the c-values where those do not decide it; SpEED chroma: the host finishes
    /// the score with the CPU code's tail.
    fn computes_on_device(&self, _: Companions) -> bool {
        true
    }

    fn submit(&mut self, job: FrameJob) -> Result<()> {
        self.send(Request::Job(Box::new(job), None, false))?;
        self.in_flight += 1;
        Ok(())
    }

    fn accepts_host_planes(&self) -> bool {
        true
    }

    fn checks_host_ranges(&self) -> bool {
        self.range_check_on_gpu
    }

    fn uploads_pinned_memory(&self) -> bool {
        D::UPLOADS_PINNED_MEMORY
    }

    fn configure(&mut self, cfg: &ClipConfig) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.send(Request::Configure(Box::new(*cfg), tx))?;
        rx.recv().map_err(|_| self.stopped())?
    }

    fn accepts_device_planes(&self) -> bool {
        D::READS_DEVICE_PLANES
    }

    fn submit_device(&mut self, job: FrameJob, frame: DeviceFrame) -> Result<()> {
        if !D::READS_DEVICE_PLANES {
            return Err(err::<D>(
                "planes in device memory are not read on this device",
            ));
        }
        let range_check = self.range_check_on_gpu;
        self.send(Request::DeviceJob(
            Box::new(job),
            Box::new(frame),
            range_check,
        ))?;
        self.in_flight += 1;
        Ok(())
    }

    fn submit_host(&mut self, job: FrameJob, host: HostFrame) -> Result<()> {
        let range_check = self.range_check_on_gpu;
        self.send(Request::Job(
            Box::new(job),
            Some(Box::new(host)),
            range_check,
        ))?;
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
                Err(_) => return Err(self.stopped()),
            }
        } else {
            match self.rx.try_recv() {
                Ok(o) => o,
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => return Err(self.stopped()),
            }
        };
        match got {
            Reply::Result(r) => {
                self.in_flight -= 1;
                (*r).map(Some)
            }
            Reply::ResetDone => Err(err::<D>("unexpected reset acknowledgement")),
        }
    }

    fn reset(&mut self) {
        if self.send(Request::Reset).is_err() {
            self.in_flight = 0;
            return;
        }
        while let Ok(o) = self.rx.recv() {
            if let Reply::ResetDone = o {
                break;
            }
        }
        self.in_flight = 0;
    }

    fn max_in_flight(&self) -> usize {
        self.depth.load(Ordering::Relaxed)
    }
}

impl<D: Device> Drop for GpuBackend<D> {
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
