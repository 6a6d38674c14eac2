//! The companion metrics (PSNR, SSIM, MS-SSIM, CIEDE2000, PSNR-HVS, and VMAF v1's SpEED
//! chroma) on the GPU, equal to the CPU reference in [`crate::features`].
//!
//! The kernels (kernels/psnr.cu, ssim.cu, ciede.cu, psnr_hvs.cu after compat.h: [`SOURCE`])
//! compute what the CPU computes per pixel or per block, in the same types and order of
//! operations (NVRTC with fmad off, IEEE division and square root). A float sum whose result
//! depends on the order of its terms is either done on the host, in the CPU's order, by the same
//! function the CPU path calls, or decided from the GPU's sums by a rigorous error bound (SSIM),
//! or documented as differing (CIEDE2000). Per metric:
//!
//! - PSNR: integer SSE per plane on the GPU (exact), `psnr_from_sse` on the host.
//! - SSIM, MS-SSIM: decimation, 11-tap convolutions and per-pixel terms (l, c as double, s as
//!   float) on the GPU. libvmaf's means are sequential double sums rounded to float; the GPU
//!   also writes, per block, the sums that bound the sequential sum (`ssim::SumBound`: a
//!   rigorous error bound, so that where both ends of the interval round to one float, that
//!   float is the CPU's). Where they do not (rare: an interval of ~1e-10 relative width across a
//!   float rounding boundary), the host reads that image's terms from the frame's own copy of the
//!   results on the device and adds them in row-major order with the CPU's accumulator
//!   (`ssim::SsimSums`). Either way the result is the CPU's bit for bit; the readback is the
//!   per-block sums (96 bytes per 1,024 pixels) instead of 20 bytes per pixel. MS-SSIM's levels
//!   0-3, whose luminance exponent is 0, run `ssim_terms_cs` (c and s only: 48 bytes per 1,024
//!   pixels, no l terms); their l means are NaN, as on the CPU (`MsSsimScore::l`).
//! - PSNR-HVS: eight threads per 8x8 block (integer DCT, float masking), 64 float terms per block;
//!   libvmaf adds them in raster order into one float. The terms are never negative, so while
//!   the partial sum stays in one binade the float additions are integer additions of the terms
//!   rounded to that binade's step: chunks of terms are added as integers in parallel and only
//!   the steps that leave a binade (about 25 per plane) or tie are float additions
//!   (kernels/psnr_hvs.cu `hvs_seq`), giving the sequential float sum bit for bit. Where the
//!   kernel cannot (a negative or non-finite term, which a square is not), the host reads the
//!   plane's terms and adds them in order (`psnr_hvs::PlaneSum`).
//! - CIEDE2000: per-pixel dE00 on the GPU, summed per block (tree) and the blocks' sums added by
//!   the host in block order: not libvmaf's row-major order ([`ciede_bound`] bounds the effect,
//!   3.2e-8 dB at 4K). The kernel also calls CUDA's pow/sin/cos/exp/atan2 (not glibc's), so the
//!   score may differ from the CPU's in its last digits: tests/companion_parity.rs bounds it
//!   (1e-6 dB, the worst case of 1-ulp pixel errors, plus the sum order's bound) and prints the
//!   largest difference measured. For 8-bit frames the two colour conversions a pixel (YCbCr
//!   to L*a*b*, about half of a pixel's work) are read from a table of all 2^24 sample triples
//!   that the same device code fills once per geometry ([`CiedeTable`], 268 MB of device
//!   memory, with each colour's chroma C*ab): the same values, bit for bit.
//!
//! - SpEED chroma (`gpu/speed.rs`, kernels/speed.cu): per plane side the chroma as float, the
//!   prescale (host tables), the anti-alias filter at the samples dec16 keeps, the local-mean
//!   removal, the 25 means and 325 covariances, each sum one thread in the CPU's order (float
//!   means, double covariances rounded to float): bit for bit the CPU's
//!   (`SpeedChroma::sides`); the host finishes the score with the CPU's code
//!   (`SpeedChroma::finish`: eigenvalues, QR, entropies, `log2`).
//!
//! A frame is described by a [`CompanionPlan`]: regions of one device arena (tables, scratch, results),
//! regions to zero, the launch list and the region to read back. The GPU executes it
//! (`backend::gpu::companion`, on CUDA and HIP); tests/companion_emulated.rs executes the same plan with the kernel
//! text compiled as C++ on the CPU. Each launch is built by one typed function per kernel
//! ([`super::launch`]) that checks the sizes of the regions it names; the kernels index only
//! inside the sizes passed to them. The layout of each metric is in `gpu/companion_metrics.rs`.

use crate::backend::stats::HOST_SUMMED;
use crate::backend::{CompanionScores, Companions, FrameJob, HostChroma, HostFrame, HostPlane};
use crate::error::{Error, Result};
use crate::features::psnr::{self, PsnrScores};
use crate::features::{cambi, ciede, ms_ssim, psnr_hvs, ssim};
use crate::picture::OwnedPlane;
use crate::picture::Plane;

use super::companion_metrics::{Cambi, Ciede, MsSsim, Psnr, PsnrHvs, Ssim};
use super::launch::*;
use super::speed::{SpeedPart, SpeedScores};

/// The companion kernel text: compat.h, then the kernels, one text for NVRTC and hipRTC.
pub const SOURCE: &str = concat!(
    include_str!("../../../kernels/compat.h"),
    "\n",
    include_str!("../../../kernels/psnr.cu"),
    "\n",
    include_str!("../../../kernels/ssim.cu"),
    "\n",
    include_str!("../../../kernels/psnr_hvs.cu"),
    "\n",
    include_str!("../../../kernels/ciede.cu"),
    "\n",
    include_str!("../../../kernels/cambi.cu"),
    "\n",
    include_str!("../../../kernels/speed.cu"),
    "\n"
);

/// libvmaf's 8-bit PSNR sums a row in a `uint32_t`, which wraps above this width (see
/// [`psnr::sse`]); such planes are summed on the host.
pub(crate) const PSNR_U32_ROW_MAX_WIDTH: usize = 66051;

pub(crate) fn missing(metric: &str) -> Error {
    Error::Backend(format!(
        "CUDA companions: {metric} is not in the frame plan"
    ))
}

/// Whether CIEDE2000 reads its colour conversions from a table ([`CIEDE_TABLE_BYTES`] of
/// device memory, filled once per geometry) instead of computing two a pixel: the same
/// values either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CiedeTable {
    /// For 8-bit frames of [`CIEDE_TABLE_MIN_PIXELS`] pixels or more (below that, filling
    /// the table costs more than a few frames of conversions save).
    #[default]
    Auto,
    /// For every 8-bit frame (tests).
    On,
    Off,
}

/// [`CiedeTable::Auto`]'s threshold: 512 x 512. The table is 16.7M conversions, about four
/// 1080p frames' worth.
pub const CIEDE_TABLE_MIN_PIXELS: usize = 1 << 18;

impl CiedeTable {
    pub(crate) fn wanted(self, geom: &CompanionGeometry) -> bool {
        geom.bpc == 8
            && match self {
                CiedeTable::Auto => geom.w * geom.h >= CIEDE_TABLE_MIN_PIXELS,
                CiedeTable::On => true,
                CiedeTable::Off => false,
            }
    }
}

/// Additions a term passes through in `ssim_terms`' block sums: its thread's sum of its
/// [`SSIM_TY`] pixels, then the block's tree sum (log2 of [`BLOCK`]).
pub(crate) const TREE_STEPS: usize = SSIM_TY - 1 + BLOCK.trailing_zeros() as usize;

/// Reads a region of a frame's device results (the frame's own slot) into host memory.
pub type Fetch<'a> = dyn Fn(Region) -> Result<Vec<u8>> + Sync + 'a;

/// What a plan depends on: the frame's geometry and the metrics asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompanionGeometry {
    pub w: usize,
    pub h: usize,
    pub bpc: u8,
    /// Chroma plane size (both chroma planes), `None` without chroma.
    pub chroma: Option<(usize, usize)>,
    /// The chroma comes as one plane of Cb,Cr pairs per picture (a host frame's
    /// [`HostChroma::Interleaved`]): uploaded as it is and split on the GPU.
    pub interleaved: bool,
    pub companions: Companions,
}

impl CompanionGeometry {
    /// The geometry of a job asking for `companions`, after checking that its planes agree.
    pub fn of(companions: &Companions, job: &FrameJob) -> Result<CompanionGeometry> {
        let (r, d) = (&*job.reference, &*job.distorted);
        let bad = |why: String| Err(Error::Geometry(format!("CUDA companions: {why}")));
        if (r.width, r.height, r.bpc) != (d.width, d.height, d.bpc) {
            return bad(format!(
                "reference {}x{}@{} and distorted {}x{}@{}",
                r.width, r.height, r.bpc, d.width, d.height, d.bpc
            ));
        }
        if r.width == 0 || r.height == 0 || !(8..=16).contains(&r.bpc) {
            return bad(format!("luma {}x{}@{}", r.width, r.height, r.bpc));
        }
        let compact = |p: &OwnedPlane| p.data.len() >= p.width * p.height;
        let mut chroma = None;
        if let Some(c) = &job.chroma {
            let (cw, ch) = (c.reference[0].width, c.reference[0].height);
            for p in c.reference.iter().chain(&c.distorted) {
                if (p.width, p.height, p.bpc) != (cw, ch, r.bpc) || !compact(p) {
                    return bad(format!(
                        "chroma plane {}x{}@{} ({} samples), expected {cw}x{ch}@{}",
                        p.width,
                        p.height,
                        p.bpc,
                        p.data.len(),
                        r.bpc
                    ));
                }
            }
            if cw > 0 && ch > 0 {
                chroma = Some((cw, ch));
            }
        }
        if !compact(r) || !compact(d) {
            return bad("luma plane shorter than width * height".into());
        }
        if let Some((pr, pd)) = &job.previous {
            for p in [pr, pd] {
                if (p.width, p.height, p.bpc) != (r.width, r.height, r.bpc) || !compact(p) {
                    return bad(format!(
                        "previous luma {}x{}@{} ({} samples), expected {}x{}@{}",
                        p.width,
                        p.height,
                        p.bpc,
                        p.data.len(),
                        r.width,
                        r.height,
                        r.bpc
                    ));
                }
            }
        }
        Ok(CompanionGeometry {
            w: r.width,
            h: r.height,
            bpc: r.bpc,
            chroma,
            interleaved: false,
            companions: *companions,
        })
    }

    /// The geometry of a job asking for `companions` whose planes are in the caller's memory
    /// (`host`; the job's own planes carry only the geometry), after checking that they agree.
    pub fn of_host(
        companions: &Companions,
        job: &FrameJob,
        host: &HostFrame,
    ) -> Result<CompanionGeometry> {
        let (r, d) = (&host.reference, &host.distorted);
        let bad = |why: String| Err(Error::Geometry(format!("CUDA companions: {why}")));
        let luma = (r.width(), r.height(), r.bpc());
        let shape = (job.reference.width, job.reference.height, job.reference.bpc);
        if (d.width(), d.height(), d.bpc()) != luma || shape != luma {
            return bad(format!(
                "reference {luma:?}, distorted {:?} and job {shape:?} (width, height, bits)",
                (d.width(), d.height(), d.bpc())
            ));
        }
        if job.chroma.is_some() {
            return bad("chroma planes both in the job and in the caller's memory".into());
        }
        if job.previous.is_some() {
            return bad("previous planes both in the job and in the caller's memory".into());
        }
        if let Some((pr, pd)) = &host.previous {
            for p in [pr, pd] {
                if (p.width(), p.height(), p.bpc()) != luma {
                    return bad(format!(
                        "previous luma {:?}, expected {luma:?} (width, height, bits)",
                        (p.width(), p.height(), p.bpc())
                    ));
                }
            }
        }
        let interleaved = matches!(host.chroma, Some(HostChroma::Interleaved { .. }));
        let chroma = match &host.chroma {
            Some(c) => {
                let (cw, ch) = c.size();
                let want = (if interleaved { 2 * cw } else { cw }, ch, r.bpc());
                for (p, what) in c.named() {
                    if (p.width(), p.height(), p.bpc()) != want {
                        return bad(format!(
                            "{what} plane {}x{}@{}, expected {}x{}@{}",
                            p.width(),
                            p.height(),
                            p.bpc(),
                            want.0,
                            want.1,
                            want.2
                        ));
                    }
                }
                Some((cw, ch))
            }
            None => None,
        };
        Ok(CompanionGeometry {
            w: r.width(),
            h: r.height(),
            bpc: r.bpc(),
            chroma,
            interleaved: interleaved && chroma.is_some(),
            companions: *companions,
        })
    }

    /// (width, height) of plane `p` (0 = luma, 1/2 = chroma).
    pub(crate) fn plane(&self, p: usize) -> (usize, usize) {
        if p == 0 {
            (self.w, self.h)
        } else {
            self.chroma.unwrap_or((0, 0))
        }
    }

    pub(crate) fn planes(&self) -> usize {
        if self.chroma.is_some() { 3 } else { 1 }
    }
}

/// Arena layout builder: 256-byte aligned regions.
#[derive(Default)]
pub(crate) struct Arena {
    pub(crate) bytes: usize,
}

impl Arena {
    pub(crate) fn take(&mut self, bytes: usize) -> Region {
        let off = self.bytes.next_multiple_of(256);
        self.bytes = off + bytes.max(1);
        Region { off, bytes }
    }
}

/// What a frame runs on the GPU: the arena's regions and the launch list.
///
/// The arena holds, in this order, what every frame shares (each metric's scratch, constant
/// tables) and the frame's own part (`results`: what is read back, then the frame's planes,
/// then the per-pixel terms that stay on the device). A GPU with several frames in flight gives
/// each its own copy of that part ([`CompanionPlan::device_offset`]), so that a frame's planes can be
/// uploaded while the previous frame's kernels run and its terms are still there when its
/// scores are computed; a plan run alone (slot 0) is exactly `arena` bytes. A metric's
/// launches only touch its own scratch, the planes, the tables and its results, so the metrics
/// may run at once.
#[derive(Clone, Debug)]
pub struct CompanionPlan {
    pub geom: CompanionGeometry,
    /// Arena size in bytes (with one copy of the results).
    pub arena: usize,
    /// Where the job's planes go, as u16: reference Y, Cb, Cr, then distorted Y, Cb, Cr, then
    /// the previous frame's reference and distorted Y ([`FrameJob::previous`], for SpEED
    /// temporal) (`None` for planes the plan does not read).
    pub inputs: Inputs,
    /// Where the planes are uploaded: `inputs` themselves, or for 8-bit planes (`narrow`) byte
    /// regions that `prep` widens into `inputs`.
    pub staged: Inputs,
    pub narrow: bool,
    /// Launches on the upload stream after the uploads, before the metrics' launches.
    pub prep: Vec<Launch>,
    /// The widening of the two luma planes (8-bit planes; else empty): launched like `prep`
    /// when the planes were uploaded, or on VMAF's stream from VMAF's copy of them
    /// ([`super::companion::GpuCompanions::submit_sharing_luma`]).
    pub prep_luma: Vec<Launch>,
    /// Launches run once when the arena is set up, after the tables' uploads (tables that
    /// the GPU computes).
    pub setup: Vec<Launch>,
    /// Regions to zero before the launches (accumulators).
    pub zero: Vec<Region>,
    pub launches: Vec<Launch>,
    /// Each launch's metric as an index into the feeder's streams (`METRICS`), and which of
    /// them the plan uses: worked out once here, not per frame.
    pub metric_streams: Vec<usize>,
    pub metrics_used: [bool; METRICS.len()],
    /// The frame's results, the last region of the arena.
    pub results: Region,
    /// What is read back after the launches: the start of `results`.
    pub readback: Region,
    /// The metrics' scratch (between the constant tables and `results`; a multiple of 256
    /// bytes).
    pub scratch: Region,
    /// Copies of `scratch` on the device (at least 1): the frame in ring slot `s` uses copy
    /// `s % scratch_sets` and that copy's streams, so that consecutive frames' kernels of one
    /// metric can run at once ([`CompanionPlan::device_offset`]).
    pub scratch_sets: usize,
    /// PSNR: per plane, the u64 SSE (within `readback`), or `None` where the host sums.
    psnr: [Option<Region>; 3],
    /// SSIM: the per-pixel terms of the (scaled) image, `None` where libvmaf refuses the size.
    ssim: Option<Terms>,
    /// MS-SSIM: the per-pixel terms of each level, `None` where libvmaf refuses the size.
    ms_ssim: Option<[Terms; ms_ssim::SCALES]>,
    /// PSNR-HVS (`None` where libvmaf refuses): per plane the 64 terms of each block (on the
    /// device) and the number of blocks, and the GPU's float sums (read back).
    psnr_hvs: Option<([Region; 3], [usize; 3], Region)>,
    /// CIEDE2000: the per-block sums (`blocks` doubles) and the chroma factors (`None` where
    /// libvmaf refuses).
    ciede: Option<(Region, usize, (usize, usize))>,
    /// CAMBI: its regions and the CPU's preparation (see [`Cambi`]).
    cambi: Cambi,
    /// SpEED chroma: the CPU extractor (or its refusal) and the sides' statistics (`None`
    /// where not asked for).
    speed_chroma: Option<SpeedScores>,
    /// SpEED temporal, likewise.
    speed_temporal: Option<SpeedScores>,
    /// Constant tables to upload once per geometry (before the first frame): (region, bytes).
    pub tables: Vec<(Region, Vec<u8>)>,
    /// Add every SSIM, MS-SSIM and PSNR-HVS sum on the host from the terms, whatever the GPU's
    /// sums say (a test hook: the path that the GPU leaves to rare frames).
    pub host_sums: bool,
    /// [`CompanionPlan::scores`]' checks for the geometry, for frames whose planes the host does not
    /// have ([`CompanionPlan::check_geometry`]; `None` until then).
    geometry_check: Option<Result<()>>,
}

impl CompanionPlan {
    /// The plan for a geometry. Metrics the GPU path leaves to the host are not in it.
    pub fn new(geom: CompanionGeometry) -> CompanionPlan {
        CompanionPlan::with_ciede_table(geom, CiedeTable::Auto)
    }

    /// [`CompanionPlan::new`], with CIEDE2000's colour-conversion table as `table` says.
    pub fn with_ciede_table(geom: CompanionGeometry, table: CiedeTable) -> CompanionPlan {
        let mut a = Arena::default();
        let mut need_plane = [false; 3];
        let mut psnr = Psnr::new(&geom, &mut need_plane);
        let mut ssim = Ssim::new(&geom, &mut need_plane);
        let mut ms = MsSsim::new(&geom, &mut need_plane);
        let mut ciede = Ciede::new(&geom, &mut need_plane);
        let mut hvs = PsnrHvs::new(&geom, &mut need_plane);
        let mut cambi = Cambi::new(&geom, &mut need_plane);
        let mut tables = Vec::new();
        let mut speed = SpeedPart::chroma(&geom, &mut need_plane);
        let mut temporal = SpeedPart::temporal(&geom, &mut need_plane);

        // Shared by every frame: constant tables, then scratch, each used by one metric's
        // launches (which run in order on that metric's stream; with several scratch sets,
        // frames take the sets in turn, each set with its own streams: CompanionPlan::scratch_sets).
        ciede.tables(&mut a, &geom, table);
        hvs.tables(&mut a);
        cambi.tables(&mut a, &mut tables);
        speed.tables(&mut a);
        temporal.tables(&mut a);
        let scratch_off = a.bytes.next_multiple_of(256);
        ssim.scratch_hconv(&mut a);
        ms.scratch_hconv(&mut a, &geom);
        ssim.scratch_images(&mut a);
        ms.scratch_images(&mut a);
        hvs.scratch_images(&mut a);
        cambi.scratch(&mut a);
        speed.scratch(&mut a);
        temporal.scratch(&mut a);

        // The frame's results: what is read back, then the terms that stay on the device.
        let results_off = a.bytes.next_multiple_of(256);
        psnr.results(&mut a);
        ssim.results(&mut a);
        ms.results(&mut a);
        ciede.results(&mut a, &geom);
        hvs.results(&mut a);
        cambi.results(&mut a);
        speed.results(&mut a);
        temporal.results(&mut a);
        let readback = Region {
            off: results_off,
            bytes: a.bytes.max(results_off) - results_off,
        };
        // The frame's planes (each frame in flight its own, so that the next frame's upload
        // need not wait for this frame's kernels).
        let mut inputs = [None; INPUTS];
        for p in 0..3 {
            if need_plane[p] {
                let (pw, ph) = geom.plane(p);
                inputs[p] = Some(a.take(2 * pw * ph));
                inputs[3 + p] = Some(a.take(2 * pw * ph));
            }
        }
        if temporal.reads_previous() {
            for i in [PREV_REF, PREV_DIS] {
                inputs[i] = Some(a.take(2 * geom.w * geom.h));
            }
        }
        let narrow = geom.bpc == 8;
        let mut prep = Vec::new();
        let mut prep_luma = Vec::new();
        let mut staged = [None; INPUTS];
        for (i, r) in inputs.iter().enumerate() {
            let Some(r) = *r else { continue };
            let chroma = i < 6 && i % 3 != 0;
            if geom.interleaved && chroma {
                continue;
            }
            staged[i] = Some(if narrow {
                let b = a.take(r.bytes / 2);
                let widen = launch_widen_u8(b, r.bytes / 2, r);
                // This frame's luma (which may come from VMAF's copies instead), apart.
                if i == 0 || i == 3 {
                    prep_luma.push(widen);
                } else {
                    prep.push(widen);
                }
                b
            } else {
                r
            });
        }
        if geom.interleaved {
            // Each side's Cb,Cr pairs in one region (where Cb's would be), split (and widened)
            // into the Cb and Cr inputs.
            for side in [0, 3] {
                if let (Some(u), Some(v)) = (inputs[side + 1], inputs[side + 2]) {
                    let n = u.bytes / 2;
                    let pairs = a.take(2 * n * if narrow { 1 } else { 2 });
                    prep.push(launch_split_uv(pairs, n, narrow, u, v));
                    staged[side + 1] = Some(pairs);
                }
            }
        }
        ssim.terms(&mut a);
        ms.terms(&mut a);
        hvs.terms(&mut a);
        cambi.terms(&mut a);
        let results = Region {
            off: results_off,
            bytes: a.bytes.max(results_off) - results_off,
        };

        let mut zero = Vec::new();
        let mut launches = Vec::new();
        psnr.launches(&geom, &inputs, &mut zero, &mut launches);
        ssim.launches(&geom, &inputs, &mut launches);
        ms.launches(&geom, &inputs, &mut launches);
        ciede.launches(&geom, &inputs, &mut launches);
        hvs.launches(&geom, &inputs, &mut tables, &mut launches);
        cambi.launches(&inputs, &mut zero, &mut launches);
        speed.launches(&inputs, &mut tables, &mut launches);
        temporal.launches(&inputs, &mut tables, &mut launches);
        let metric_streams: Vec<usize> = launches.iter().map(|l| metric_index(l.metric)).collect();
        let mut metrics_used = [false; METRICS.len()];
        for &i in &metric_streams {
            metrics_used[i] = true;
        }
        CompanionPlan {
            geom,
            arena: a.bytes.max(256),
            inputs,
            staged,
            narrow,
            prep,
            prep_luma,
            setup: ciede.setup(),
            zero,
            launches,
            metric_streams,
            metrics_used,
            results,
            readback,
            scratch: Region {
                off: scratch_off,
                bytes: results_off.max(scratch_off) - scratch_off,
            },
            scratch_sets: 1,
            psnr: psnr.out,
            ssim: ssim.terms,
            ms_ssim: ms.terms,
            psnr_hvs: hvs.terms.zip(hvs.out).map(|(t, o)| (t, hvs.blocks, o)),
            ciede: ciede.part,
            cambi,
            speed_chroma: speed.into_scores(),
            speed_temporal: temporal.into_scores(),
            tables,
            host_sums: false,
            geometry_check: None,
        }
    }

    /// Bytes between two frames' copies of the results.
    pub fn slot_stride(&self) -> usize {
        self.results.bytes.next_multiple_of(256)
    }

    /// Device bytes for `slots` frames in flight (each with its own results) and
    /// `scratch_sets` copies of the scratch.
    pub fn device_bytes(&self, slots: usize) -> usize {
        let extra = self.extra_scratch();
        (self.results.off + extra + slots.max(1) * self.slot_stride()).max(self.arena + extra)
    }

    /// The scratch copies after the first.
    fn extra_scratch(&self) -> usize {
        (self.scratch_sets.max(1) - 1) * self.scratch.bytes
    }

    /// The scratch copy (and stream set) of the frame in `slot`.
    pub fn scratch_set(&self, slot: usize) -> usize {
        slot % self.scratch_sets.max(1)
    }

    /// Offset in the device allocation of arena region `r` for the frame in `slot`: tables
    /// are where the plan put them, scratch in the slot's scratch copy (after the tables, one
    /// copy after the other), results in the slot's copy (after the last scratch copy).
    pub fn device_offset(&self, r: Region, slot: usize) -> usize {
        if r.off >= self.results.off {
            r.off + self.extra_scratch() + slot * self.slot_stride()
        } else if r.off >= self.scratch.off {
            r.off + self.scratch_set(slot) * self.scratch.bytes
        } else {
            r.off
        }
    }

    /// The planes of `job` to upload: (region, samples), the samples as bytes in the region
    /// where the plan is `narrow`, else as little-endian u16.
    pub fn uploads<'a>(&self, job: &'a FrameJob) -> Vec<(Region, &'a [u16])> {
        let mut out = Vec::new();
        let per = if self.narrow { 1 } else { 2 };
        for (i, r) in self.staged.iter().enumerate() {
            let Some(r) = r else { continue };
            let (side, p) = (i / 3, i % 3);
            let plane: &OwnedPlane = match (i, &job.previous) {
                // The first frame has no previous one (SpEED temporal is then 0).
                (PREV_REF | PREV_DIS, None) => continue,
                (PREV_REF, Some((r, _))) => r,
                (PREV_DIS, Some((_, d))) => d,
                _ => match (side, p, &job.chroma) {
                    (0, 0, _) => &job.reference,
                    (1, 0, _) => &job.distorted,
                    (0, _, Some(c)) => &c.reference[p - 1],
                    (_, _, Some(c)) => &c.distorted[p - 1],
                    _ => unreachable!("plan names chroma of a job without chroma"),
                },
            };
            out.push((*r, &plane.data[..r.bytes / per]));
        }
        out
    }

    /// The planes of a frame in the caller's memory to upload (as [`CompanionPlan::uploads`]): the host
    /// planes as they are, bytes for 8-bit planes (`narrow`), little-endian u16 above, each
    /// filling its region exactly.
    pub fn host_uploads<'a>(&self, host: &'a HostFrame) -> Result<Vec<(Region, &'a HostPlane)>> {
        let mut out = Vec::new();
        for (i, r) in self.staged.iter().enumerate() {
            let Some(r) = r else { continue };
            let (side, p) = (i / 3, i % 3);
            let plane = match (i, &host.previous) {
                (PREV_REF | PREV_DIS, None) => continue,
                (PREV_REF, Some((r, _))) => r,
                (PREV_DIS, Some((_, d))) => d,
                _ => match (side, p, &host.chroma) {
                    (0, 0, _) => &host.reference,
                    (1, 0, _) => &host.distorted,
                    (0, _, Some(HostChroma::Planar { reference, .. })) => &reference[p - 1],
                    (_, _, Some(HostChroma::Planar { distorted, .. })) => &distorted[p - 1],
                    // The pairs go where the plan staged them (Cb's place; Cr has none).
                    (0, 1, Some(HostChroma::Interleaved { reference, .. })) => reference,
                    (1, 1, Some(HostChroma::Interleaved { distorted, .. })) => distorted,
                    _ => {
                        return Err(Error::Backend(
                            "CUDA companions: the plan reads chroma a host frame lacks".into(),
                        ));
                    }
                },
            };
            if plane.row_bytes() * plane.height() != r.bytes || (plane.bpc() == 8) != self.narrow {
                return Err(Error::Backend(format!(
                    "CUDA companions: a {}x{} plane at {} bits for a region of {} bytes",
                    plane.width(),
                    plane.height(),
                    plane.bpc(),
                    r.bytes
                )));
            }
            out.push((*r, plane));
        }
        Ok(out)
    }

    /// The bytes of read-back region `r`.
    fn bytes<'a>(&self, rb: &'a [u8], r: Region) -> &'a [u8] {
        let o = r.off - self.readback.off;
        &rb[o..o + r.bytes]
    }

    fn word(&self, rb: &[u8], r: Region) -> u64 {
        u64::from_le_bytes(self.bytes(rb, r)[..8].try_into().expect("8 bytes"))
    }

    /// The scores of `job` from the read-back results (the host's float steps: the same
    /// functions the CPU path calls); `fetch` reads the frame's terms that stay on the device,
    /// where a sum needs them. Metrics or planes the plan leaves to the host are computed here
    /// with the CPU code.
    ///
    /// Every metric's checks run first, in the CPU's order (so a job two metrics refuse fails
    /// with the CPU's error); then the sums, each independent of the others: PSNR, SSIM,
    /// MS-SSIM, CIEDE2000 and PSNR-HVS from the GPU's sums on the calling thread, a PSNR-HVS
    /// plane whose GPU sum gave up added in order on a scoped thread of its own.
    pub fn scores(&self, job: &FrameJob, rb: &[u8], fetch: &Fetch<'_>) -> Result<CompanionScores> {
        let (rp, dp) = (
            crate::backend::job_planes(job, false),
            crate::backend::job_planes(job, true),
        );
        self.check(&rp, &dp)?;
        self.sums(rb, fetch, Some((&rp, &dp)), job.previous.is_some())
    }

    /// [`CompanionPlan::scores`] of a frame whose planes the host does not have (they were uploaded
    /// from the caller's memory: [`CompanionPlan::reads_host_planes`]): the checks are the geometry's,
    /// made once ([`CompanionPlan::check_geometry`]). `previous`: whether the frame had the
    /// previous frame's planes ([`HostFrame::previous`]).
    pub fn scores_of_host_frame(
        &self,
        rb: &[u8],
        fetch: &Fetch<'_>,
        previous: bool,
    ) -> Result<CompanionScores> {
        match &self.geometry_check {
            Some(r) => r.clone()?,
            None => {
                return Err(Error::Backend(
                    "CUDA companions: a host frame's plan without its geometry check".into(),
                ));
            }
        }
        self.sums(rb, fetch, None, previous)
    }

    /// Whether frames of this plan can be computed from planes that only the GPU has: every
    /// sum is the GPU's or comes from the device's terms (PSNR's host fallback for rows too
    /// wide for 32-bit sums reads the planes).
    pub fn reads_host_planes(&self) -> bool {
        (!self.geom.companions.psnr || (0..self.geom.planes()).all(|p| self.psnr[p].is_some()))
            && (self.geom.companions.cambi.is_none() || self.cambi.on_device())
    }

    /// SpEED chroma's per-side statistics in the read-back results `rb` (reference U, distorted
    /// U, reference V, distorted V), `None` where the plan does not compute them (tests compare
    /// them with the CPU's [`SpeedChroma::sides`](crate::features::speed::SpeedChroma::sides)).
    pub fn speed_chroma_sides(&self, rb: &[u8]) -> Option<[crate::features::speed::SpeedSide; 4]> {
        let bytes = |r: Region| self.bytes(rb, r).to_vec();
        self.speed_chroma.as_ref()?.sides(&bytes)?.try_into().ok()
    }

    /// SpEED temporal's statistics in the read-back results `rb` (the reference's, then the
    /// distorted picture's temporal difference), `None` where the plan does not compute them
    /// (tests compare them with the CPU's
    /// [`SpeedTemporal::sides`](crate::features::speed::SpeedTemporal::sides)).
    pub fn speed_temporal_sides(
        &self,
        rb: &[u8],
    ) -> Option<[crate::features::speed::SpeedSide; 2]> {
        let bytes = |r: Region| self.bytes(rb, r).to_vec();
        self.speed_temporal.as_ref()?.sides(&bytes)?.try_into().ok()
    }

    /// Set [`CompanionPlan::scores_of_host_frame`]'s checks: [`CompanionPlan::scores`]' checks on planes of the
    /// geometry (they read sizes and depths, not samples; the zeroed planes are not touched).
    pub fn check_geometry(&mut self) {
        let g = self.geom;
        let plane = |w: usize, h: usize| OwnedPlane {
            data: vec![0; w * h],
            width: w,
            height: h,
            bpc: g.bpc,
        };
        let side = || {
            let mut v = vec![plane(g.w, g.h)];
            if let Some((cw, ch)) = g.chroma {
                v.push(plane(cw, ch));
                v.push(plane(cw, ch));
            }
            v
        };
        let (r, d) = (side(), side());
        fn views(s: &[OwnedPlane]) -> Vec<Plane<'_>> {
            s.iter().map(OwnedPlane::view).collect()
        }
        self.geometry_check = Some(self.check(&views(&r), &views(&d)));
    }

    /// Every metric's checks, in the CPU's order (so a job two metrics refuse fails with the
    /// CPU's error), and that the plan computes each metric asked for.
    fn check(&self, rp: &[Plane<'_>], dp: &[Plane<'_>]) -> Result<()> {
        let c = self.geom.companions;
        // (Empty chroma planes make a plan without chroma: the metrics that read chroma then
        // refuse them below, as on the CPU.)
        let (Some(r0), Some(d0)) = (rp.first(), dp.first()) else {
            return Err(Error::Backend(
                "CUDA companions: a frame without luma".into(),
            ));
        };
        if c.psnr {
            for p in 0..rp.len() {
                psnr::check_pair(&rp[p], &dp[p], psnr::NAMES[p])?;
            }
        }
        if c.ssim {
            psnr::check_pair(r0, d0, "float_ssim")?;
            ssim::scaled_geometry(r0.width, r0.height)?;
            self.ssim.ok_or_else(|| missing("float_ssim"))?;
        }
        if c.ms_ssim {
            psnr::check_pair(r0, d0, "float_ms_ssim")?;
            ms_ssim::check_size(r0.width, r0.height)?;
            self.ms_ssim.ok_or_else(|| missing("float_ms_ssim"))?;
        }
        // CIEDE2000 before PSNR-HVS, as compute_companions_cpu checks them.
        if c.ciede {
            ciede::check_planes(rp, dp)?;
            self.ciede.ok_or_else(|| missing("ciede"))?;
        }
        if c.psnr_hvs {
            psnr_hvs::check_planes(rp, dp)?;
            self.psnr_hvs.ok_or_else(|| missing("psnr_hvs"))?;
        }
        if c.cambi.is_some() {
            // The CPU's refusal of the geometry, as compute_companions_cpu gives it.
            match &self.cambi.cpu {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.clone()),
                None => return Err(missing("cambi")),
            }
        }
        // SpEED chroma last, as compute_companions_cpu: the CPU's refusal of the geometry.
        if let Some(p) = c.speed_chroma {
            let s = self
                .speed_chroma
                .as_ref()
                .ok_or_else(|| missing("speed_chroma"))?;
            if rp.len() == 3 && self.geom.chroma.is_none() {
                // Empty chroma planes: the CPU's words for them.
                crate::backend::speed_chroma_extractor(&p, rp)?;
            }
            s.extractor.as_ref().map_err(Clone::clone)?;
        }
        // SpEED temporal after it, as compute_companions_cpu.
        if c.speed_temporal.is_some() {
            let s = self
                .speed_temporal
                .as_ref()
                .ok_or_else(|| missing("speed_temporal"))?;
            s.extractor.as_ref().map_err(Clone::clone)?;
        }
        Ok(())
    }

    /// The scores from the read-back results and the device's terms, after [`CompanionPlan::check`].
    /// `planes`: the frame's planes (reference, distorted sides) where the host has them, for
    /// PSNR sums the GPU leaves to the host; `previous`: whether the frame had the previous
    /// frame's planes (else SpEED temporal is 0 and the GPU did not compute it).
    fn sums(
        &self,
        rb: &[u8],
        fetch: &Fetch<'_>,
        planes: Option<(&[Plane<'_>], &[Plane<'_>])>,
        previous: bool,
    ) -> Result<CompanionScores> {
        if rb.len() < self.readback.bytes {
            return Err(Error::Backend(format!(
                "CUDA companions: {} result bytes, {} expected",
                rb.len(),
                self.readback.bytes
            )));
        }
        let c = self.geom.companions;
        let ssim_terms = if c.ssim { self.ssim } else { None };
        let ms_terms = if c.ms_ssim { self.ms_ssim } else { None };
        let ciede_part = if c.ciede { self.ciede } else { None };
        let hvs_terms = if c.psnr_hvs { self.psnr_hvs } else { None };
        let np = self.geom.planes();

        enum Part {
            Light(Box<CompanionScores>),
            Hvs(usize, f64),
            Cambi(f64),
            Speed(crate::features::speed::SpeedChromaScores),
            Temporal(f64),
        }
        let mut tasks: Vec<SumTask<'_, Result<Part>>> = Vec::new();
        let mut hvs_direct = [None; 3];
        if let (Some(_), Some(s)) = (c.speed_chroma, &self.speed_chroma) {
            // Eigenvalues, QR and entropies (under a millisecond), beside the other sums.
            tasks.push(Box::new(move || {
                let bytes = |r: Region| self.bytes(rb, r).to_vec();
                Ok(Part::Speed(s.finish_chroma(&bytes)?))
            }));
        }
        if let (Some(_), Some(s)) = (c.speed_temporal, &self.speed_temporal) {
            tasks.push(Box::new(move || {
                let bytes = |r: Region| self.bytes(rb, r).to_vec();
                Ok(Part::Temporal(if previous {
                    s.finish_temporal(&bytes)?
                } else {
                    0.0
                }))
            }));
        }
        tasks.push(Box::new(move || {
            let mut out = CompanionScores::default();
            if c.psnr {
                let mut v = [None; 3];
                for (p, vp) in v.iter_mut().enumerate().take(np) {
                    let sse = match (self.psnr[p], planes) {
                        (Some(r), _) => self.word(rb, r),
                        (None, Some((rp, dp))) => psnr::sse(rp[p], dp[p]),
                        (None, None) => {
                            return Err(Error::Backend(
                                "CUDA companions: a PSNR sum for the host without the planes"
                                    .into(),
                            ));
                        }
                    };
                    let (pw, ph) = self.geom.plane(p);
                    *vp = Some(psnr::psnr_from_sse(sse, pw, ph, self.geom.bpc));
                }
                out.psnr = Some(PsnrScores {
                    y: v[0].unwrap_or_default(),
                    cb: v[1],
                    cr: v[2],
                });
            }
            if let Some(t) = ssim_terms {
                out.ssim = Some(self.iqa(rb, t, true, fetch)?.into());
            }
            if let Some(ts) = ms_terms {
                let mut levels = Vec::with_capacity(ms_ssim::SCALES);
                for t in ts {
                    levels.push(self.iqa(rb, t, false, fetch)?);
                }
                out.ms_ssim = Some(ms_ssim::combine(&levels)?);
            }
            if let Some((part, nb, _)) = ciede_part {
                // The blocks' sums in block order (see ciede_bound for the difference from the
                // CPU's row-major order).
                let mut sum = 0f64;
                for v in self.bytes(rb, part)[..8 * nb].chunks_exact(8) {
                    sum += f64::from_le_bytes(v.try_into().expect("8 bytes"));
                }
                out.ciede = Some(ciede::score_from_sum(sum, self.geom.w, self.geom.h));
            }
            Ok(Part::Light(Box::new(out)))
        }));
        if let Some((ts, nb, out)) = hvs_terms {
            let sums = self.bytes(rb, out);
            let f = |i: usize| f32::from_le_bytes(sums[4 * i..4 * i + 4].try_into().expect("4"));
            for (p, t) in ts.into_iter().enumerate() {
                // The GPU's sum where it is valid (1.0), else the terms added here in order.
                if f(2 * p + 1) == 1.0 && !self.host_sums {
                    let sum = psnr_hvs::PlaneSum::from_sum(f(2 * p), nb[p]);
                    hvs_direct[p] = Some(sum.finish(self.geom.bpc));
                    continue;
                }
                tasks.push(Box::new(move || {
                    HOST_SUMMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let terms = fetch(t)?;
                    let mut sum = psnr_hvs::PlaneSum::default();
                    for block in terms.chunks_exact(4 * 64).take(nb[p]) {
                        sum.add_block(
                            block
                                .chunks_exact(4)
                                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))),
                        );
                    }
                    Ok(Part::Hvs(p, sum.finish(self.geom.bpc)))
                }));
            }
        }

        if c.cambi.is_some() {
            tasks.push(Box::new(move || {
                self.cambi_score(rb, fetch, planes).map(Part::Cambi)
            }));
        }

        let mut out = CompanionScores::default();
        let mut hvs = hvs_direct.map(|v| v.unwrap_or(0.0));
        let mut cambi = None;
        let mut speed_chroma = None;
        let mut speed_temporal = None;
        for part in run_parallel(tasks)? {
            match part? {
                Part::Light(v) => out = *v,
                Part::Hvs(p, v) => hvs[p] = v,
                Part::Cambi(v) => cambi = Some(v),
                Part::Speed(v) => speed_chroma = Some(v),
                Part::Temporal(v) => speed_temporal = Some(v),
            }
        }
        out.cambi = cambi;
        out.speed_chroma = speed_chroma;
        out.speed_temporal = speed_temporal;
        if c.psnr_hvs {
            out.psnr_hvs = Some(psnr_hvs::scores(hvs));
        }
        Ok(out)
    }

    /// CAMBI's per-scale sums from read-back bytes (sum of c-values in units of 2^-24, non-zero
    /// count), `None` where the device does not compute them (for tests).
    #[doc(hidden)]
    pub fn cambi_sums(&self, rb: &[u8]) -> Option<[(u64, u64); cambi::NUM_SCALES]> {
        let sums = self.cambi.sums?;
        Some(sums.map(|r| {
            let b = self.bytes(rb, r);
            let word = |k: usize| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().expect("8"));
            (word(0), word(1))
        }))
    }

    /// CAMBI's score (after [`CompanionPlan::check`]): per scale the pooled value from the device's exact
    /// sum where it decides it ([`cambi::pool_exact`]), else from the scale's c-values read from
    /// the device in libvmaf's order; then the CPU code's weighting. Where the device does not
    /// compute the frame, the CPU code on the distorted plane.
    fn cambi_score(
        &self,
        rb: &[u8],
        fetch: &Fetch<'_>,
        planes: Option<(&[Plane<'_>], &[Plane<'_>])>,
    ) -> Result<f64> {
        let Some(Ok(cpu)) = &self.cambi.cpu else {
            return Err(missing("cambi"));
        };
        let (Some(sums), Some(cv)) = (self.cambi.sums, self.cambi.cv) else {
            return match planes {
                Some((_, dp)) => Ok(cpu.compute(&dp[0], None)?.cambi),
                None => Err(Error::Backend(
                    "CUDA companions: CAMBI for the host without the planes".into(),
                )),
            };
        };
        if self.host_sums {
            // The test hook: every scale from its c-values, in libvmaf's order.
            return self.cambi_from_cvalues(cpu, cv, fetch);
        }
        let mut scores = [0.0f64; cambi::NUM_SCALES];
        for (s, score) in scores.iter_mut().enumerate() {
            let b = self.bytes(rb, sums[s]);
            let word = |k: usize| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().expect("8"));
            let (units, nonzero) = (word(0), word(1));
            let n = cv[s].bytes / 4;
            *score = match cambi::pool_exact(units, nonzero, n, cpu.topk()) {
                Some(v) => v,
                None => {
                    HOST_SUMMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.cambi_scale_in_order(cpu, cv[s], fetch)?
                }
            };
        }
        Ok(cpu.score_of_scales(&scores))
    }

    /// Every scale of the frame from its c-values in libvmaf's order (the fallback forced).
    fn cambi_from_cvalues(
        &self,
        cpu: &cambi::Cambi,
        cv: [Region; cambi::NUM_SCALES],
        fetch: &Fetch<'_>,
    ) -> Result<f64> {
        let mut scores = [0.0f64; cambi::NUM_SCALES];
        for (s, score) in scores.iter_mut().enumerate() {
            HOST_SUMMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *score = self.cambi_scale_in_order(cpu, cv[s], fetch)?;
        }
        Ok(cpu.score_of_scales(&scores))
    }

    /// One scale's pooled value from its c-values (row-major, as libvmaf lays them out), by
    /// libvmaf's quick_select and sequential sum.
    fn cambi_scale_in_order(
        &self,
        cpu: &cambi::Cambi,
        cv: Region,
        fetch: &Fetch<'_>,
    ) -> Result<f64> {
        let bytes = fetch(cv)?;
        if bytes.len() < cv.bytes {
            return Err(Error::Backend(
                "CUDA companions: short CAMBI c-values".into(),
            ));
        }
        let mut c: Vec<f32> = bytes[..cv.bytes]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        Ok(cambi::pool_in_libvmaf_order(&mut c, cpu.topk()))
    }

    /// `_iqa_ssim`'s means of one image pair: from the GPU's per-block sums where their bound
    /// decides each `float` mean ([`ssim::SumBound`]), else from the terms (fetched from the
    /// device) added in row-major order by the CPU path's own accumulator. `with_ssim`: the
    /// SSIM mean is wanted (MS-SSIM's levels use only l, c and s; their `ssim` is then NaN).
    fn iqa(
        &self,
        rb: &[u8],
        t: Terms,
        with_ssim: bool,
        fetch: &Fetch<'_>,
    ) -> Result<ssim::IqaSsim> {
        let part = self.bytes(rb, t.part);
        // The bounds of l*c*s, l, c, s; without l (ssim_terms_cs) those of c and s only, and
        // the l and l*c*s means are NaN (MS-SSIM's levels that use only c and s).
        let with_l = t.l.is_some();
        debug_assert!(with_l || !with_ssim, "an SSIM mean needs the l terms");
        let first = if with_l { 0 } else { 2 };
        let np = t.parts();
        let mut b = [ssim::SumBound::default(); 4];
        for blk in part[..8 * np * t.blocks].chunks_exact(8 * np) {
            let v =
                |k: usize| f64::from_le_bytes(blk[8 * k..8 * k + 8].try_into().expect("8 bytes"));
            for (q, bq) in b.iter_mut().enumerate().skip(first) {
                let k = 3 * (q - first);
                bq.add(v(k), v(k + 1), v(k + 2));
            }
        }
        let steps = TREE_STEPS + t.blocks;
        let m = b.map(|bq| bq.mean_if_determined(t.n, steps));
        let (m0, m1) = if with_l {
            (m[0], m[1])
        } else {
            (Some(f32::NAN), Some(f32::NAN))
        };
        if !self.host_sums
            && let (Some(l), Some(c), Some(s)) = (m1, m[2], m[3])
            && (m0.is_some() || !with_ssim)
        {
            return Ok(ssim::IqaSsim {
                ssim: m0.unwrap_or(f32::NAN),
                l,
                c,
                s,
            });
        }
        HOST_SUMMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (c, s) = (fetch(t.c)?, fetch(t.s)?);
        let l = t.l.map(fetch).transpose()?;
        if c.len() < 8 * t.n || s.len() < 4 * t.n || l.as_ref().is_some_and(|l| l.len() < 8 * t.n) {
            return Err(Error::Backend("CUDA companions: short SSIM terms".into()));
        }
        let mut sums = ssim::SsimSums::default();
        for (i, (c, s)) in c
            .chunks_exact(8)
            .zip(s.chunks_exact(4))
            .take(t.n)
            .enumerate()
        {
            let l = l.as_ref().map_or(f64::NAN, |l| {
                f64::from_le_bytes(l[8 * i..8 * i + 8].try_into().expect("8 bytes"))
            });
            sums.add(
                l,
                f64::from_le_bytes(c.try_into().expect("8 bytes")),
                f32::from_le_bytes(s.try_into().expect("4 bytes")),
            );
        }
        Ok(sums.finish(t.n))
    }
}

/// The largest difference between CIEDE2000's score from the GPU's sum of `w * h` per-pixel
/// values (per-block tree sums of [`BLOCK`] added in block order) and the score from the same
/// values added in row-major order (libvmaf's order), in dB (the values are never negative).
/// Each order is within `gamma_{n-1} * sum` of the exact sum
/// (Higham 4.2, for any order), so the two sums differ by at most `2 gamma_{n-1} sum`, and
/// `45 - 20 log10(sum / n)` moves by `20 / ln 10` times the relative difference (to first
/// order; the bound is doubled for the rest).
pub fn ciede_bound(w: usize, h: usize) -> f64 {
    let n = (w * h) as f64;
    let u = f64::EPSILON / 2.0;
    let g = n * u / (1.0 - n * u);
    2.0 * 20.0 / std::f64::consts::LN_10 * 2.0 * g
}

/// The frame's planes in the arena, as u16: reference Y, Cb, Cr, then distorted Y, Cb, Cr
/// (what each metric's part of the plan reads).
pub(crate) type Inputs = [Option<Region>; INPUTS];

/// The input planes of a plan ([`CompanionPlan::inputs`]): six of the frame, then the previous
/// frame's two luma planes.
pub(crate) const INPUTS: usize = 8;
/// [`CompanionPlan::inputs`]' previous reference and previous distorted luma.
pub(crate) const PREV_REF: usize = 6;
pub(crate) const PREV_DIS: usize = 7;

/// Independent work for [`run_parallel`].
pub(crate) type SumTask<'a, T> = Box<dyn FnOnce() -> T + Send + 'a>;

/// Run independent tasks at once: the first on the calling thread, the others on scoped
/// threads (on the calling thread where no thread can be started). Results in task order; a
/// task that panicked is an error, not a panic of the caller.
pub(crate) fn run_parallel<'a, T: Send>(tasks: Vec<SumTask<'a, T>>) -> Result<Vec<T>> {
    use std::sync::Mutex;
    let cells: Vec<Mutex<Option<SumTask<'a, T>>>> =
        tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let take = |c: &Mutex<Option<SumTask<'a, T>>>| c.lock().ok().and_then(|mut g| g.take());
    let lost = || Error::Backend("CUDA companions: a summing task panicked".into());
    std::thread::scope(|sc| {
        let handles: Vec<_> = cells
            .iter()
            .skip(1)
            .map(|c| {
                std::thread::Builder::new()
                    .name("vmafgpu-sums".into())
                    .spawn_scoped(sc, move || take(c).map(|t| t()))
                    .ok()
            })
            .collect();
        // The first task here, meanwhile; then every thread is joined before any error is
        // returned (a scope whose thread panicked unjoined would panic itself).
        let first = cells
            .first()
            .and_then(take)
            .map(|t| std::panic::catch_unwind(std::panic::AssertUnwindSafe(t)).map_err(|_| lost()));
        let joined: Vec<Option<std::thread::Result<Option<T>>>> =
            handles.into_iter().map(|h| h.map(|h| h.join())).collect();
        let mut out = Vec::with_capacity(cells.len());
        if let Some(v) = first {
            out.push(v?);
        }
        for (c, j) in cells.iter().skip(1).zip(joined) {
            let v = match j {
                Some(Ok(Some(v))) => v,
                Some(_) => return Err(lost()),
                // No thread: run it here.
                None => {
                    let t = take(c).ok_or_else(lost)?;
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(t)).map_err(|_| lost())?
                }
            };
            out.push(v);
        }
        Ok(out)
    })
}

/// The metrics, in the order of [`Launcher::metric`]'s streams ([`Launch::metric`]).
pub(crate) const METRICS: [&str; 8] = [
    "psnr",
    "ssim",
    "ms_ssim",
    "ciede",
    "psnr_hvs",
    "cambi",
    "speed_chroma",
    "speed_temporal",
];

pub(crate) fn metric_index(m: &str) -> usize {
    METRICS
        .iter()
        .position(|x| *x == m)
        .expect("every launch names one of METRICS")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `#define name value` in the kernel text.
    fn define(name: &str) -> &'static str {
        let key = format!("#define {name} ");
        SOURCE
            .lines()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .unwrap_or_else(|| panic!("no #define {name} in the kernel text"))
            .trim()
    }

    /// The floats of the `__constant__` array `name` in the kernel text.
    fn constant_array(name: &str) -> Vec<f32> {
        let key = format!("__constant__ float {name}[");
        let at = SOURCE
            .find(key.as_str())
            .unwrap_or_else(|| panic!("no array {name} in the kernel text"));
        let body = &SOURCE[at..];
        let (open, close) = (body.find('{').unwrap(), body.find('}').unwrap());
        body[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| v.trim_end_matches('f').parse::<f32>().unwrap())
            .collect()
    }

    #[test]
    fn ssim_windows_match_the_cpu_and_the_gaussian_is_symmetric() {
        // ssim_gauss_run converts one product for each pair of taps g[u], g[10 - u]: exact only
        // while the window is symmetric, bit for bit.
        let gauss = constant_array("SSIM_GAUSS");
        let lpf = constant_array("SSIM_LPF");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&gauss), bits(&ssim::GAUSSIAN_WINDOW));
        assert_eq!(bits(&lpf), bits(&ms_ssim::LPF));
        let n = ssim::GAUSSIAN_LEN;
        for u in 0..n {
            assert_eq!(
                gauss[u].to_bits(),
                gauss[n - 1 - u].to_bits(),
                "gauss tap {u}"
            );
        }
    }

    /// With two or three scratch sets every region of every slot lies in the allocation; the tables are
    /// shared, each scratch region has a copy per set (slots of one set share it), and results
    /// are the slot's own, clear of every scratch copy.
    #[test]
    fn scratch_sets_and_results_do_not_overlap() {
        let all = Companions {
            psnr: true,
            ssim: true,
            ms_ssim: true,
            ciede: true,
            psnr_hvs: true,
            cambi: Some(cambi::CambiParams {
                enc_bitdepth: 8,
                ..Default::default()
            }),
            speed_chroma: Some(crate::features::speed::SpeedChromaParams::default()),
            speed_temporal: Some(crate::features::speed::SpeedTemporalParams::default()),
        };
        for (w, h, bpc, sets) in [
            (1920usize, 1080usize, 8u8, 2),
            (181, 190, 10, 3),
            (217, 221, 10, 2),
        ] {
            let g = CompanionGeometry {
                w,
                h,
                bpc,
                chroma: Some((w / 2, h / 2)),
                interleaved: false,
                companions: all,
            };
            let mut plan = CompanionPlan::new(g);
            plan.scratch_sets = sets;
            let ring = 7;
            let total = plan.device_bytes(ring);
            let regions: Vec<Region> = plan
                .setup
                .iter()
                .chain(&plan.prep)
                .chain(&plan.prep_luma)
                .chain(&plan.launches)
                .flat_map(|l| l.args.iter())
                .filter_map(|a| match a {
                    KArg::Ptr(r) => Some(*r),
                    _ => None,
                })
                .collect();
            assert!(plan.scratch.bytes > 0 && plan.scratch.bytes.is_multiple_of(256));
            let span = |r: Region, slot: usize| {
                let o = plan.device_offset(r, slot);
                o..o + r.bytes
            };
            let overlap = |a: std::ops::Range<usize>, b: std::ops::Range<usize>| {
                a.start < b.end && b.start < a.end
            };
            for &r in &regions {
                for slot in 0..ring {
                    assert!(
                        span(r, slot).end <= total,
                        "{r:?} slot {slot} beyond {total}"
                    );
                }
                let kind = |r: Region| {
                    if r.off >= plan.results.off {
                        2
                    } else if r.off >= plan.scratch.off {
                        1
                    } else {
                        0
                    }
                };
                for &q in &regions {
                    for (a, b) in [(0, 1), (0, 2), (1, 2), (2, 4), (3, 4), (0, 3), (1, 6)] {
                        let shared = match (kind(r), kind(q)) {
                            (0, _) | (_, 0) => true,
                            (1, 1) => a % sets == b % sets,
                            _ => false,
                        };
                        if !shared && overlap(span(r, a), span(q, b)) {
                            panic!("{w}x{h}: {r:?} of slot {a} overlaps {q:?} of slot {b}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn constants_match_the_kernel_text() {
        // The launch geometry and the SSIM bound's step count depend on these: a kernel
        // changed alone would size grids and regions wrongly, or make the bound too tight.
        for (name, v) in [
            ("VG_BLOCK", BLOCK as usize),
            ("PSNR_ITEMS", PSNR_ITEMS),
            ("SSIM_PARTS", SSIM_PARTS),
            ("SSIM_PARTS_CS", SSIM_PARTS_CS),
            ("SSIM_DW", SSIM_DW),
            ("SSIM_TW", SSIM_TW),
            ("SSIM_TY", SSIM_TY),
        ] {
            assert_eq!(define(name), v.to_string(), "{name}");
        }
        assert_eq!(define("CIEDE_TABLE_LEN"), "(1ll << 24)");
        assert_eq!(CIEDE_TABLE_LEN, 1 << 24);
        assert_eq!(define("SSIM_TR"), "(VG_BLOCK / SSIM_TW)");
        assert_eq!(define("SSIM_TH"), "(SSIM_TR * SSIM_TY)");
        assert_eq!(TREE_STEPS, SSIM_TY - 1 + 8);
    }

    #[test]
    fn cambi_tables_match_the_kernel_text_and_bounds_hold() {
        assert_eq!(define("CAMBI_MAX_ND"), "32");
        let key = "__constant__ int CAMBI_CONTRAST_WEIGHTS[CAMBI_MAX_ND] = {";
        let at = SOURCE
            .find(key)
            .expect("the contrast weights in the kernel text")
            + key.len();
        let body = &SOURCE[at..at + SOURCE[at..].find('}').unwrap()];
        let weights: Vec<i32> = body
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(weights, cambi::contrast_weights());
        assert_eq!(cambi::recip_table().len(), CAMBI_RECIP_LEN);
        // The largest c-value: w_d * p0 * pm / (p0 + pm) with w_d <= 9 and p0 + pm < 4226, in
        // units of 2^-24, is below the bound the u64 sums are sized with; the int product in
        // the kernel (before its rounding to float) stays below 2^31.
        let mut max_units = 0u64;
        let mut max_product = 0i64;
        for p0 in 1..4226i64 {
            let pm = (4225 - p0).max(0);
            max_product = max_product.max(9 * p0 * pm);
            let c = (9 * p0 * pm) as f32 * cambi::recip_table()[(p0 + pm) as usize];
            max_units = max_units.max((c as f64 * 16777216.0) as u64);
        }
        assert!(max_units < CAMBI_MAX_C_UNITS, "{max_units}");
        assert!(max_product < i32::MAX as i64);
        assert!(cambi_sum_fits(7680 * 4320) && cambi_sum_fits((1 << 26) - 1));
        assert!(!cambi_sum_fits(1 << 26));
        // A frame of c-values all at the bound does not wrap: (2^26 - 1) * 2^38 < 2^64.
        assert!(((1u64 << 26) - 1).checked_mul(CAMBI_MAX_C_UNITS).is_some());
    }

    #[test]
    fn run_parallel_keeps_task_order_and_turns_panics_into_errors() {
        // Tasks of different lengths: the results still come back in task order.
        let tasks: Vec<SumTask<'_, usize>> = (0..12usize)
            .map(|i| -> SumTask<'_, usize> {
                Box::new(move || {
                    std::thread::sleep(std::time::Duration::from_millis((12 - i as u64) * 2));
                    i * i
                })
            })
            .collect();
        assert_eq!(
            run_parallel(tasks).unwrap(),
            (0..12).map(|i| i * i).collect::<Vec<_>>()
        );
        assert!(run_parallel::<u8>(Vec::new()).unwrap().is_empty());
        // A panicking task (the first, run on the calling thread, or another, on its own
        // thread) is an error of the call, and the other tasks are still joined.
        for bad in [0usize, 2] {
            let tasks: Vec<SumTask<'_, usize>> = (0..4usize)
                .map(|i| -> SumTask<'_, usize> {
                    Box::new(move || {
                        if i == bad {
                            panic!("task {i} fails");
                        }
                        i
                    })
                })
                .collect();
            let e = run_parallel(tasks).unwrap_err();
            assert!(e.to_string().contains("panicked"), "{e}");
        }
    }
}
