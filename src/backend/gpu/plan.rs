//! What the GPU does for one frame of a given geometry, as data: the buffers, the kernel
//! launches with their arguments, and the table that turns per-row sums into the accumulators.
//!
//! No driver here: the plan is executed by the CUDA and HIP backends' workers, and by the CPU
//! emulation of the kernel text in `tests/cuda_emulated.rs` (which checks the kernels against
//! the CPU reference on machines without a GPU).
//!
//! Every constant below is libvmaf 3.2.0's (`libvmaf/src/feature/integer_vif.c`,
//! `integer_adm.c`, `integer_motion.c`); the comments name the C variable.

use super::kernels::{AdmArgs, FinalizeEntry, MotionArgs, RangeArgs, ShiftArgs, VifArgs};
use crate::features::adm::AdmConstants;

/// Index of each accumulator in the frame's result buffer (u64 words).
pub mod slot {
    /// VIF: `VIF + 4 * scale + k`, k = num_log, den_log, num_non_log, den_non_log.
    pub const VIF: usize = 0;
    /// ADM: `ADM + 9 * scale + q`, q = 0..3: DLM contrast-masking sums h, v, d (libvmaf's
    /// `adm_cm` / `i4_adm_cm` `accum_h/v/d`); 3..6: the same for the AIM pass; 6..9: the
    /// denominator sums h, v, d (`adm_csf_den_scale` / `adm_csf_den_s123` `accum_h/v/d`).
    pub const ADM: usize = 16;
    /// Motion SAD.
    pub const MOTION: usize = 52;
    /// The range check's count of threads that saw an out-of-range sample (host planes of 9 to
    /// 15 bits only; kernels/motion.cu `range_u16`).
    pub const RANGE: usize = 53;
    /// Number of result words; per-row sums follow them in the same buffer.
    pub const RESULTS: usize = 54;
}

/// Logical buffers of a frame slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotBuf {
    /// Reference luma, `w * h` samples (u8 for 8-bit content, u16 otherwise).
    Ref,
    /// Distorted luma, as `Ref`.
    Dis,
    /// Previous reference luma, as `Ref`.
    Prev,
    /// VIF images of scales 1..3 (u16), reference and distorted.
    VifRef(u8),
    VifDis(u8),
    /// ADM band A of scale `s - 1` (i32), the input of scale `s` = 1..3.
    AdmRef(u8),
    AdmDis(u8),
    /// Decoupled bands of the current ADM scale: 6 planes (r_h, r_v, r_d, a_h, a_v, a_d) of the
    /// scale-0 band size (i32), reused by every scale.
    RBuf,
    /// Results (`slot::RESULTS` u64) followed by the per-row sums (u64); zeroed every frame.
    Acc,
    /// libvmaf's VIF log2 table (65537 u16), uploaded once.
    Log2,
    /// libvmaf's ADM division table (65537 i32), uploaded once.
    DivLookup,
    /// The finalize table (36 [`FinalizeEntry`]), uploaded once per geometry.
    Finalize,
}

/// Kernels, by entry-point name in `kernels/*.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VmafKernel {
    VifS0U8,
    VifS0U16,
    VifS1,
    VifS2,
    VifS3,
    AdmDwtS0U8,
    AdmDwtS0U16,
    AdmDwtS123,
    AdmCmS0,
    AdmCmS123,
    AdmFinalize,
    MotionU8,
    MotionU16,
    RangeU16,
    ShiftU16,
}

impl VmafKernel {
    pub const ALL: [VmafKernel; 15] = [
        VmafKernel::VifS0U8,
        VmafKernel::VifS0U16,
        VmafKernel::VifS1,
        VmafKernel::VifS2,
        VmafKernel::VifS3,
        VmafKernel::AdmDwtS0U8,
        VmafKernel::AdmDwtS0U16,
        VmafKernel::AdmDwtS123,
        VmafKernel::AdmCmS0,
        VmafKernel::AdmCmS123,
        VmafKernel::AdmFinalize,
        VmafKernel::MotionU8,
        VmafKernel::MotionU16,
        VmafKernel::RangeU16,
        VmafKernel::ShiftU16,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VmafKernel::VifS0U8 => "vif_s0_u8",
            VmafKernel::VifS0U16 => "vif_s0_u16",
            VmafKernel::VifS1 => "vif_s1",
            VmafKernel::VifS2 => "vif_s2",
            VmafKernel::VifS3 => "vif_s3",
            VmafKernel::AdmDwtS0U8 => "adm_dwt_s0_u8",
            VmafKernel::AdmDwtS0U16 => "adm_dwt_s0_u16",
            VmafKernel::AdmDwtS123 => "adm_dwt_s123",
            VmafKernel::AdmCmS0 => "adm_cm_s0",
            VmafKernel::AdmCmS123 => "adm_cm_s123",
            VmafKernel::AdmFinalize => "adm_finalize",
            VmafKernel::MotionU8 => "motion_u8",
            VmafKernel::MotionU16 => "motion_u16",
            VmafKernel::RangeU16 => "range_u16",
            VmafKernel::ShiftU16 => "shift_u16",
        }
    }
}

/// The kind of one kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmafArgKind {
    Ptr,
    Vif,
    Adm,
    Motion,
    Range,
    Shift,
}

impl VmafKernel {
    /// The kernel's C parameter list (kernels/*.cu), in order.
    pub fn signature(self) -> &'static [VmafArgKind] {
        use VmafArgKind::*;
        match self {
            // (ref, dis, VifArgs, log2_table, out_ref, out_dis, acc)
            VmafKernel::VifS0U8 | VmafKernel::VifS0U16 | VmafKernel::VifS1 | VmafKernel::VifS2 => {
                &[Ptr, Ptr, Vif, Ptr, Ptr, Ptr, Ptr]
            }
            // (ref, dis, VifArgs, log2_table, acc)
            VmafKernel::VifS3 => &[Ptr, Ptr, Vif, Ptr, Ptr],
            // (ref, dis, AdmArgs, next_ref, next_dis, rbuf, div_lookup, den_rows)
            VmafKernel::AdmDwtS0U8 | VmafKernel::AdmDwtS0U16 | VmafKernel::AdmDwtS123 => {
                &[Ptr, Ptr, Adm, Ptr, Ptr, Ptr, Ptr, Ptr]
            }
            // (rbuf, AdmArgs, cm_rows)
            VmafKernel::AdmCmS0 | VmafKernel::AdmCmS123 => &[Ptr, Adm, Ptr],
            // (rows, entries, out)
            VmafKernel::AdmFinalize => &[Ptr, Ptr, Ptr],
            // (prev, cur, MotionArgs, sad)
            VmafKernel::MotionU8 | VmafKernel::MotionU16 => &[Ptr, Ptr, Motion, Ptr],
            // (a, b, RangeArgs, bad)
            VmafKernel::RangeU16 => &[Ptr, Ptr, Range, Ptr],
            // (p, ShiftArgs)
            VmafKernel::ShiftU16 => &[Ptr, Shift],
        }
    }
}

/// Refuse a launch whose arguments do not match the kernel's parameter list.
pub fn check_signature(l: &VmafLaunch) -> crate::Result<()> {
    let kind = |a: &Arg| match a {
        Arg::Ptr(..) | Arg::Null => VmafArgKind::Ptr,
        Arg::Vif(_) => VmafArgKind::Vif,
        Arg::Adm(_) => VmafArgKind::Adm,
        Arg::Motion(_) => VmafArgKind::Motion,
        Arg::Range(_) => VmafArgKind::Range,
        Arg::Shift(_) => VmafArgKind::Shift,
    };
    let sig = l.kernel.signature();
    if l.args.len() != sig.len() || l.args.iter().zip(sig).any(|(a, k)| kind(a) != *k) {
        let kinds: Vec<VmafArgKind> = l.args.iter().map(kind).collect();
        return Err(crate::Error::Backend(format!(
            "launch of {} with arguments {kinds:?}, expected {:?}",
            l.kernel.name(),
            l.kernel.signature()
        )));
    }
    Ok(())
}

/// One kernel argument.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// Device pointer to `buf` plus `offset` bytes.
    Ptr(SlotBuf, usize),
    /// A null device pointer.
    Null,
    Vif(VifArgs),
    Adm(AdmArgs),
    Motion(MotionArgs),
    Range(RangeArgs),
    Shift(ShiftArgs),
}

/// One kernel launch: `grid` blocks of `BLOCK` threads (1-D blocks).
#[derive(Clone, Debug)]
pub struct VmafLaunch {
    pub kernel: VmafKernel,
    pub grid: (u32, u32),
    pub args: Vec<Arg>,
}

/// Threads per block of every kernel (`VG_BLOCK` in kernels/compat.h).
pub const BLOCK: u32 = 256;
/// Tile sizes (kernels/*.cu).
const VIF_TW: usize = 64;
const VIF_TH: usize = 16;
const ADM_TW: usize = 32;
const ADM_TH: usize = 8;
const MOT_TW: usize = 64;
const MOT_TH: usize = 16;

/// The frame plan for one geometry.
#[derive(Clone, Debug)]
pub struct VmafPlan {
    pub w: usize,
    pub h: usize,
    pub bpc: u8,
    /// Bytes of each buffer.
    pub bufs: Vec<(SlotBuf, usize)>,
    /// The motion launch (only when the frame has a previous reference).
    pub motion: VmafLaunch,
    /// The range check of the frame's reference and distorted planes, for 9- to 15-bit
    /// samples (8- and 16-bit samples cannot be out of range): run first, and only for planes
    /// taken from the caller's memory without a host check.
    pub range: Option<VmafLaunch>,
    /// For 9- to 15-bit samples: the in-place shift of the reference, distorted and previous
    /// reference planes (in that order) down by `16 - bpc` bits, for planes uploaded as an
    /// MSB-aligned format stores them (P010: 10 bits 6 up). Run right after the uploads.
    pub shift: Option<[VmafLaunch; 3]>,
    /// VIF and ADM launches, in order, then the finalize launch.
    pub launches: Vec<VmafLaunch>,
    /// Contents of `SlotBuf::Finalize`.
    pub finalize: Vec<FinalizeEntry>,
    /// u64 words of `SlotBuf::Acc` (results and per-row sums).
    pub acc_words: usize,
}

/// `ceil(log2(n))` for n >= 1, exactly as libvmaf's `ceil(log2((double)n))` (log2 of a power of
/// two is exact in double, and no other integer up to 2^31 has a log2 within rounding of an
/// integer).
pub fn ceil_log2(n: usize) -> u32 {
    assert!(n >= 1);
    usize::BITS - (n - 1).leading_zeros()
}

/// libvmaf's region of the ADM sums: `left = w * ADM_BORDER_FACTOR - 0.5` (truncated),
/// `right = w - left`, same for rows. Returns (top, bottom, left, right).
pub fn adm_region(bw: usize, bh: usize) -> (i32, i32, i32, i32) {
    let left = (bw as f64 * 0.1 - 0.5) as i32;
    let top = (bh as f64 * 0.1 - 0.5) as i32;
    (top, bh as i32 - top, left, bw as i32 - left)
}

fn grid(w: usize, h: usize, tw: usize, th: usize) -> (u32, u32) {
    (w.div_ceil(tw) as u32, h.div_ceil(th) as u32)
}

impl VmafPlan {
    /// The plan for `w x h` frames of `bpc` bits (8..=16, at least 33x33).
    pub fn new(w: usize, h: usize, bpc: u8, vif_egl: f64, adm: &AdmConstants) -> VmafPlan {
        assert!(w >= 33 && h >= 33 && (8..=16).contains(&bpc));
        let sample = if bpc == 8 { 1 } else { 2 };
        let b = bpc as u32;
        let mut bufs = vec![
            (SlotBuf::Ref, w * h * sample),
            (SlotBuf::Dis, w * h * sample),
            (SlotBuf::Prev, w * h * sample),
            (SlotBuf::Log2, 65537 * 2),
            (SlotBuf::DivLookup, 65537 * 4),
        ];

        // ---- VIF ----
        let mut launches = Vec::new();
        let mut vw = [w; 4];
        let mut vh = [h; 4];
        for s in 1..4 {
            vw[s] = vw[s - 1] / 2;
            vh[s] = vh[s - 1] / 2;
            bufs.push((SlotBuf::VifRef(s as u8), vw[s] * vh[s] * 2));
            bufs.push((SlotBuf::VifDis(s as u8), vw[s] * vh[s] * 2));
        }
        for s in 0..4 {
            let (mu_round, mu_shift, sq_round, sq_shift) = if s == 0 {
                let sq = 2 * (b - 8);
                (
                    1u32 << (b - 1),
                    b as i32,
                    if sq == 0 { 0 } else { 1u64 << (sq - 1) },
                    sq as i32,
                )
            } else {
                (32768, 16, 32768, 16)
            };
            let va = VifArgs {
                w: vw[s] as i32,
                h: vh[s] as i32,
                mu_round,
                mu_shift,
                sq_round,
                sq_shift,
                pad0: 0,
                egl: vif_egl,
            };
            let (src_r, src_d) = if s == 0 {
                (SlotBuf::Ref, SlotBuf::Dis)
            } else {
                (SlotBuf::VifRef(s as u8), SlotBuf::VifDis(s as u8))
            };
            let kernel = match s {
                0 if bpc == 8 => VmafKernel::VifS0U8,
                0 => VmafKernel::VifS0U16,
                1 => VmafKernel::VifS1,
                2 => VmafKernel::VifS2,
                _ => VmafKernel::VifS3,
            };
            let mut args = vec![
                Arg::Ptr(src_r, 0),
                Arg::Ptr(src_d, 0),
                Arg::Vif(va),
                Arg::Ptr(SlotBuf::Log2, 0),
            ];
            if s < 3 {
                args.push(Arg::Ptr(SlotBuf::VifRef(s as u8 + 1), 0));
                args.push(Arg::Ptr(SlotBuf::VifDis(s as u8 + 1), 0));
            }
            args.push(Arg::Ptr(SlotBuf::Acc, 8 * (slot::VIF + 4 * s)));
            launches.push(VmafLaunch {
                kernel,
                grid: grid(vw[s], vh[s], VIF_TW, VIF_TH),
                args,
            });
        }

        // ---- ADM ----
        let mut aw = [w; 5]; // input size of scale s; aw[s + 1] = band size of scale s
        let mut ah = [h; 5];
        for s in 0..4 {
            aw[s + 1] = aw[s].div_ceil(2);
            ah[s + 1] = ah[s].div_ceil(2);
        }
        let rbuf_plane = aw[1] * ah[1];
        bufs.push((SlotBuf::RBuf, 6 * rbuf_plane * 4));
        for s in 1..4 {
            bufs.push((SlotBuf::AdmRef(s as u8), aw[s] * ah[s] * 4));
            bufs.push((SlotBuf::AdmDis(s as u8), aw[s] * ah[s] * 4));
        }
        let mut rows_at = slot::RESULTS;
        let mut finalize = Vec::new();
        for s in 0..4 {
            let (w_in, h_in, bw, bh) = (aw[s], ah[s], aw[s + 1], ah[s + 1]);
            let (top, bottom, left, right) = adm_region(bw, bh);
            let (vp_round, vp_shift, hp_round, hp_shift) = if s == 0 {
                // adm_dwt2_8 / adm_dwt2_16: shift_VP = bpc, add_shift_VP = 1 << (bpc - 1).
                (1i32 << (b - 1), b as i32, 32768, 16)
            } else {
                // adm_dwt2_s123_combined: add_bef_shift_round_VP/HP, shift_VerticalPass/HorizontalPass.
                [
                    (0, 0, 16384, 15),
                    (32768, 16, 32768, 16),
                    (32768, 16, 16384, 15),
                ][s - 1]
            };
            let (rw, rh) = ((right - left) as usize, (bottom - top) as usize);
            // adm_csf_den_s123: shift_sq {31, 30, 31}, shift_cub = ceil(log2(right - left)).
            let den_shift_sq = if s == 0 { 0 } else { [31, 30, 31][s - 1] };
            let den_shift_cub = if s == 0 { 0 } else { ceil_log2(rw) as i32 };
            let (rf, cm_sub, cm_add_sq, cm_shift_sq, cm_shift_cub) = if s == 0 {
                // adm_cm: shift_x{h,v,d}sub, shift_x{h,v,d}sq, shift_x{h,v,d}cub.
                let c = ceil_log2(bw) as i32;
                (
                    adm.rfactor_s0.map(u32::from),
                    [10, 10, 12],
                    [268435456, 268435456, 536870912],
                    [29, 29, 30],
                    [c - 4, c - 4, c - 3],
                )
            } else {
                // i4_adm_cm: shift_sub 0, shift_sq 30, shift_cub = ceil(log2(w)).
                let c = ceil_log2(bw) as i32;
                (adm.rfactor_s123[s], [0; 3], [536870912; 3], [30; 3], [c; 3])
            };
            let aa = AdmArgs {
                w: w_in as i32,
                h: h_in as i32,
                bw: bw as i32,
                bh: bh as i32,
                vp_round,
                vp_shift,
                hp_round,
                hp_shift,
                top,
                bottom,
                left,
                right,
                den_add_sq: if s == 0 { 0 } else { 1u32 << den_shift_sq },
                den_shift_sq,
                den_add_cub: if s == 0 {
                    0
                } else {
                    1u32 << (den_shift_cub - 1)
                },
                den_shift_cub,
                rf,
                cm_sub,
                cm_add_sq,
                cm_shift_sq,
                cm_add_cub: cm_shift_cub.map(|c| 1u32 << (c - 1)),
                cm_shift_cub,
                cos1deg_sq: adm.cos_1deg_sq,
                pad0: 0,
                egl: adm.enhn_gain_limit,
            };
            let cm_rows = rows_at;
            let den_rows = rows_at + 6 * bh;
            rows_at += 9 * bh;
            let (src_r, src_d, dwt) = if s == 0 {
                (
                    SlotBuf::Ref,
                    SlotBuf::Dis,
                    if bpc == 8 {
                        VmafKernel::AdmDwtS0U8
                    } else {
                        VmafKernel::AdmDwtS0U16
                    },
                )
            } else {
                (
                    SlotBuf::AdmRef(s as u8),
                    SlotBuf::AdmDis(s as u8),
                    VmafKernel::AdmDwtS123,
                )
            };
            let (next_r, next_d) = if s < 3 {
                (
                    Arg::Ptr(SlotBuf::AdmRef(s as u8 + 1), 0),
                    Arg::Ptr(SlotBuf::AdmDis(s as u8 + 1), 0),
                )
            } else {
                (Arg::Null, Arg::Null)
            };
            launches.push(VmafLaunch {
                kernel: dwt,
                grid: grid(bw, bh, ADM_TW, ADM_TH),
                args: vec![
                    Arg::Ptr(src_r, 0),
                    Arg::Ptr(src_d, 0),
                    Arg::Adm(aa),
                    next_r,
                    next_d,
                    Arg::Ptr(SlotBuf::RBuf, 0),
                    Arg::Ptr(SlotBuf::DivLookup, 0),
                    Arg::Ptr(SlotBuf::Acc, 8 * den_rows),
                ],
            });
            launches.push(VmafLaunch {
                kernel: if s == 0 {
                    VmafKernel::AdmCmS0
                } else {
                    VmafKernel::AdmCmS123
                },
                grid: grid(rw, rh, ADM_TW, ADM_TH),
                args: vec![
                    Arg::Ptr(SlotBuf::RBuf, 0),
                    Arg::Adm(aa),
                    Arg::Ptr(SlotBuf::Acc, 8 * cm_rows),
                ],
            });

            // Per-row rounding of the inner sums.
            // adm_cm / i4_adm_cm: shift_inner_accum = ceil(log2(h)), add = 2^(shift - 1).
            let cm_shift = ceil_log2(bh);
            // adm_csf_den_scale: shift_accum = max(0, ceil(log2(area) - 20)), add = 2^(shift-1)
            // or 0; adm_csf_den_s123: shift_accum = ceil(log2(bottom - top)).
            let den_shift = if s == 0 {
                (ceil_log2(rw * rh) as i32 - 20).max(0) as u32
            } else {
                ceil_log2(rh)
            };
            for q in 0..9 {
                let (shift, signed) = if q < 6 { (cm_shift, 1) } else { (den_shift, 0) };
                finalize.push(FinalizeEntry {
                    src: (cm_rows + q * bh) as u32,
                    begin: top as u32,
                    end: bottom as u32,
                    shift: shift as i32,
                    add: if shift == 0 { 0 } else { 1u64 << (shift - 1) },
                    is_signed: signed,
                    dst: (slot::ADM + 9 * s + q) as u32,
                });
            }
        }
        launches.push(VmafLaunch {
            kernel: VmafKernel::AdmFinalize,
            grid: (finalize.len() as u32, 1),
            args: vec![
                Arg::Ptr(SlotBuf::Acc, 0),
                Arg::Ptr(SlotBuf::Finalize, 0),
                Arg::Ptr(SlotBuf::Acc, 0),
            ],
        });
        bufs.push((
            SlotBuf::Finalize,
            finalize.len() * std::mem::size_of::<FinalizeEntry>(),
        ));
        let acc_words = rows_at;
        bufs.push((SlotBuf::Acc, acc_words * 8));

        let motion = VmafLaunch {
            kernel: if bpc == 8 {
                VmafKernel::MotionU8
            } else {
                VmafKernel::MotionU16
            },
            grid: grid(w, h, MOT_TW, MOT_TH),
            args: vec![
                Arg::Ptr(SlotBuf::Prev, 0),
                Arg::Ptr(SlotBuf::Ref, 0),
                Arg::Motion(MotionArgs {
                    w: w as i32,
                    h: h as i32,
                    bpc: bpc as i32,
                    pad0: 0,
                }),
                Arg::Ptr(SlotBuf::Acc, 8 * slot::MOTION),
            ],
        };

        // The range check and the in-place shift of 9- to 15-bit planes (8- and 16-bit samples
        // can be neither out of range nor MSB-aligned): one thread per 4 samples up to 1024
        // blocks (grid-stride beyond: a 4K pair is read in a few microseconds either way). The
        // kernels' u32 indices need w * h <= 2^31 (a 46340 x 46340 frame); beyond, there is no
        // launch: the backend scans on the host, and shifts while it stages.
        let words = (bpc != 8 && bpc != 16 && w * h <= 1 << 31).then(|| {
            (
                (w * h).div_ceil(4 * BLOCK as usize).clamp(1, 1024) as u32,
                // <= 2^31 (checked above).
                (w * h) as u32,
            )
        });
        let range = words.map(|(blocks, n)| VmafLaunch {
            kernel: VmafKernel::RangeU16,
            grid: (blocks, 1),
            args: vec![
                Arg::Ptr(SlotBuf::Ref, 0),
                Arg::Ptr(SlotBuf::Dis, 0),
                Arg::Range(RangeArgs {
                    n,
                    mask: (0xffffu32 << bpc) & 0xffff,
                }),
                Arg::Ptr(SlotBuf::Acc, 8 * slot::RANGE),
            ],
        });
        let shift = words.map(|(blocks, n)| {
            [SlotBuf::Ref, SlotBuf::Dis, SlotBuf::Prev].map(|b| VmafLaunch {
                kernel: VmafKernel::ShiftU16,
                grid: (blocks, 1),
                args: vec![
                    Arg::Ptr(b, 0),
                    Arg::Shift(ShiftArgs {
                        n,
                        shift: u32::from(16 - bpc),
                    }),
                ],
            })
        });

        VmafPlan {
            w,
            h,
            bpc,
            bufs,
            motion,
            range,
            shift,
            launches,
            finalize,
            acc_words,
        }
    }

    /// Bytes of `buf`.
    pub fn bytes(&self, buf: SlotBuf) -> usize {
        self.bufs
            .iter()
            .find(|(b, _)| *b == buf)
            .map(|(_, n)| *n)
            .unwrap_or(0)
    }
}

/// The frame's accumulators from the first [`slot::RESULTS`] words of `SlotBuf::Acc`.
pub fn accum_from_words(words: &[u64], features: bool, motion: bool) -> crate::backend::FrameAccum {
    use crate::features::adm::{AdmAccum, AdmScaleAccum};
    use crate::features::vif::{VifAccum, VifScaleAccum};
    let mut acc = crate::backend::FrameAccum::default();
    if features {
        acc.vif = VifAccum {
            scales: std::array::from_fn(|sc| {
                let b = slot::VIF + 4 * sc;
                VifScaleAccum {
                    num_log: words[b] as i64,
                    den_log: words[b + 1] as i64,
                    num_non_log: words[b + 2] as i64,
                    den_non_log: words[b + 3] as i64,
                }
            }),
        };
        acc.adm = AdmAccum {
            scales: std::array::from_fn(|sc| {
                let b = slot::ADM + 9 * sc;
                AdmScaleAccum {
                    num: std::array::from_fn(|q| words[b + q] as i64),
                    aim: std::array::from_fn(|q| words[b + 3 + q] as i64),
                    den: std::array::from_fn(|q| words[b + 6 + q]),
                }
            }),
        };
    }
    if motion {
        acc.motion_sad = Some(words[slot::MOTION]);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_log2_matches_float() {
        for n in 1..5000usize {
            assert_eq!(ceil_log2(n), (n as f64).log2().ceil() as u32, "n = {n}");
        }
        for k in 12..31 {
            for n in [(1usize << k) - 1, 1 << k, (1 << k) + 1] {
                assert_eq!(ceil_log2(n), (n as f64).log2().ceil() as u32, "n = {n}");
            }
        }
    }

    #[test]
    fn region_matches_the_cpu_geometry() {
        for (w, h) in [
            (33, 33),
            (1920, 1080),
            (641, 359),
            (3840, 2160),
            (15360, 8640),
            (47, 1001),
        ] {
            let g = crate::features::adm::geometry(w, h);
            let mut bw = w;
            let mut bh = h;
            for sg in g.iter() {
                bw = bw.div_ceil(2);
                bh = bh.div_ceil(2);
                assert_eq!((sg.width, sg.height), (bw, bh));
                let (top, bottom, left, right) = adm_region(bw, bh);
                let r = &sg.inner;
                assert_eq!(
                    (top as usize, bottom as usize, left as usize, right as usize),
                    (r.top, r.bottom, r.left, r.right),
                    "{w}x{h}"
                );
            }
        }
    }

    #[test]
    fn region_matches_libvmaf_examples() {
        // 1080p scale 0 bands: 960x540; int left = 960 * 0.1 - 0.5 = 95.5 -> 95.
        assert_eq!(adm_region(960, 540), (53, 487, 95, 865));
        // The smallest frame (33x33): scale 3 bands are 3x3, region is all of it.
        assert_eq!(adm_region(3, 3), (0, 3, 0, 3));
    }

    #[test]
    fn range_check_only_where_a_sample_can_be_out_of_range() {
        let consts = AdmConstants::new(&crate::features::adm::AdmParams::default());
        for bpc in 8..=16u8 {
            let p = VmafPlan::new(641, 359, bpc, 100.0, &consts);
            assert_eq!(p.range.is_some(), bpc != 8 && bpc != 16, "{bpc}-bit");
            if let Some(VmafLaunch { args, .. }) = &p.range {
                let Arg::Range(r) = args[2] else {
                    panic!("{args:?}")
                };
                assert_eq!((r.n, r.mask), (641 * 359, 0xffff & !((1 << bpc) - 1)));
            }
        }
        // Above 2^31 samples the kernel's u32 indices could wrap: no launch (host scan).
        assert!(
            VmafPlan::new(46341, 46341, 10, 100.0, &consts)
                .range
                .is_none()
        );
        assert!(
            VmafPlan::new(46340, 46340, 10, 100.0, &consts)
                .range
                .is_some()
        );
    }

    /// The in-place shift of MSB-aligned planes: for 9- to 15-bit samples only, each of the
    /// three input planes whole (every sample of a plane of the plan's size), by 16 - bpc.
    #[test]
    fn shift_launches_cover_the_three_input_planes() {
        let consts = AdmConstants::new(&crate::features::adm::AdmParams::default());
        for bpc in 8..=16u8 {
            let p = VmafPlan::new(641, 359, bpc, 100.0, &consts);
            assert_eq!(p.shift.is_some(), bpc != 8 && bpc != 16, "{bpc}-bit");
            for (l, b) in p
                .shift
                .iter()
                .flatten()
                .zip([SlotBuf::Ref, SlotBuf::Dis, SlotBuf::Prev])
            {
                let (Arg::Ptr(pb, 0), Arg::Shift(a)) = (l.args[0], l.args[1]) else {
                    panic!("{l:?}")
                };
                assert_eq!(pb, b);
                assert_eq!((a.n, a.shift), (641 * 359, u32::from(16 - bpc)));
                assert!(p.bytes(b) >= 2 * 641 * 359, "{b:?}");
                assert!(
                    u64::from(l.grid.0) * 4 * u64::from(BLOCK) >= 641 * 359 || l.grid.0 == 1024
                );
            }
        }
        assert!(
            VmafPlan::new(46341, 46341, 10, 100.0, &consts)
                .shift
                .is_none()
        );
    }

    #[test]
    fn every_launch_argument_names_a_buffer_of_the_plan() {
        let consts = AdmConstants::new(&crate::features::adm::AdmParams::default());
        for (w, h, bpc) in [
            (33, 33, 8),
            (1920, 1080, 8),
            (641, 359, 10),
            (15360, 8640, 16),
        ] {
            let p = VmafPlan::new(w, h, bpc, 100.0, &consts);
            for l in p
                .launches
                .iter()
                .chain(std::iter::once(&p.motion))
                .chain(p.range.as_ref())
                .chain(p.shift.iter().flatten())
            {
                for a in &l.args {
                    if let Arg::Ptr(b, off) = a {
                        assert!(
                            off < &p.bytes(*b).max(1),
                            "{l:?}: offset {off} outside {b:?}"
                        );
                    }
                }
            }
            for l in p
                .launches
                .iter()
                .chain(std::iter::once(&p.motion))
                .chain(p.range.as_ref())
                .chain(p.shift.iter().flatten())
            {
                check_signature(l).unwrap();
            }
            assert_eq!(p.finalize.len(), 36);
            for e in &p.finalize {
                assert!((e.src + e.end) as usize <= p.acc_words);
            }
        }
    }
}
