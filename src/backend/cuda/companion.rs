//! The companion metrics (PSNR, SSIM, MS-SSIM, CIEDE2000, PSNR-HVS) on the GPU, equal to the
//! CPU reference in [`crate::features`].
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
//!   also writes, per block, the sums that bound the sequential sum ([`ssim::SumBound`]: a
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
//! A frame is described by a [`Plan`]: regions of one device arena (tables, scratch, results),
//! regions to zero, the launch list and the region to read back. The GPU executes it
//! ([`CompanionGpu`]); tests/companion_emulated.rs executes the same plan with the kernel text
//! compiled as C++ on the CPU. Each launch is built by one typed function per kernel (the
//! `launch_*` functions below) that checks the sizes of the regions it names; the kernels index
//! only inside the sizes passed to them.
//!
//! Per frame, the host work is small: the planes come as compact `u16` planes (a job) or where
//! the caller has them ([`CompanionGpu::submit_host`]: rows copied into pinned staging, or
//! uploaded straight from pinned memory; interleaved chroma split on the GPU); each ring
//! buffer's launches are CUDA graphs captured once per geometry (`SlotGraphs`: one call for
//! the preparation and one per metric instead of ~50 launches); frames take copies of the
//! metrics' scratch in turn ([`DEFAULT_SCRATCH_SETS`]), each with its own streams
//! ([`Plan::scratch_sets`]; 67 MB a copy at 1080p with all five), so that a metric's kernels of
//! consecutive frames overlap. None of this changes what a kernel computes.

use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaSlice, CudaStream, LaunchConfig,
    PushKernelArg,
};
use cudarc::driver::{DevicePtr, result};

use crate::backend::{CompanionScores, Companions, FrameJob, HostChroma, HostFrame, HostPlane};
use crate::error::{Error, Result};
use crate::features::psnr::{self, PsnrScores};
use crate::features::{ciede, ms_ssim, psnr_hvs, ssim};
use crate::picture::OwnedPlane;
use crate::picture::Plane;

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
    "\n"
);

/// Threads per block of every companion kernel (`VG_BLOCK` in compat.h).
pub const BLOCK: u32 = 256;

/// `PSNR_ITEMS` in kernels/psnr.cu.
const PSNR_ITEMS: usize = 8;

/// libvmaf's 8-bit PSNR sums a row in a `uint32_t`, which wraps above this width (see
/// [`psnr::sse`]); such planes are summed on the host.
const PSNR_U32_ROW_MAX_WIDTH: usize = 66051;

fn missing(metric: &str) -> Error {
    Error::Backend(format!(
        "CUDA companions: {metric} is not in the frame plan"
    ))
}

fn be<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> Error + '_ {
    move |e| Error::Backend(format!("CUDA companions: {what}: {e}"))
}

/// The companion kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    PsnrSse,
    SsimLoad,
    SsimDecimateLpf,
    SsimHconv,
    SsimTerms,
    SsimTermsCs,
    PsnrHvsBlocks,
    HvsChunkSums,
    HvsPrefix,
    HvsChunkBands,
    HvsSeq,
    CiedePixels,
    CiedeLabTable,
    CiedePixelsTable,
    WidenU8,
    SplitUvU8,
    SplitUvU16,
}

/// The C type of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    Ptr,
    I32,
    F32,
}

impl Kernel {
    pub const ALL: [Kernel; 17] = [
        Kernel::PsnrSse,
        Kernel::SsimLoad,
        Kernel::SsimDecimateLpf,
        Kernel::SsimHconv,
        Kernel::SsimTerms,
        Kernel::SsimTermsCs,
        Kernel::PsnrHvsBlocks,
        Kernel::HvsChunkSums,
        Kernel::HvsPrefix,
        Kernel::HvsChunkBands,
        Kernel::HvsSeq,
        Kernel::CiedePixels,
        Kernel::CiedeLabTable,
        Kernel::CiedePixelsTable,
        Kernel::WidenU8,
        Kernel::SplitUvU8,
        Kernel::SplitUvU16,
    ];

    /// The `extern "C"` name.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::PsnrSse => "psnr_sse",
            Kernel::SsimLoad => "ssim_load",
            Kernel::SsimDecimateLpf => "ssim_decimate_lpf",
            Kernel::SsimHconv => "ssim_hconv",
            Kernel::SsimTerms => "ssim_terms",
            Kernel::SsimTermsCs => "ssim_terms_cs",
            Kernel::PsnrHvsBlocks => "psnr_hvs_blocks",
            Kernel::HvsChunkSums => "hvs_chunk_sums",
            Kernel::HvsPrefix => "hvs_prefix",
            Kernel::HvsChunkBands => "hvs_chunk_bands",
            Kernel::HvsSeq => "hvs_seq",
            Kernel::CiedePixels => "ciede_pixels",
            Kernel::CiedeLabTable => "ciede_lab_table",
            Kernel::CiedePixelsTable => "ciede_pixels_table",
            Kernel::WidenU8 => "widen_u8",
            Kernel::SplitUvU8 => "split_uv_u8",
            Kernel::SplitUvU16 => "split_uv_u16",
        }
    }

    /// The parameter list of the kernel's C signature.
    pub fn signature(self) -> &'static [ArgKind] {
        use ArgKind::*;
        match self {
            Kernel::PsnrSse => &[Ptr, Ptr, I32, Ptr],
            Kernel::SsimLoad => &[Ptr, I32, I32, I32, I32, F32, I32, I32, Ptr],
            Kernel::SsimDecimateLpf => &[Ptr, I32, I32, I32, I32, Ptr],
            Kernel::SsimHconv => &[Ptr, Ptr, I32, I32, Ptr],
            Kernel::SsimTerms => &[Ptr, I32, I32, F32, F32, F32, Ptr, Ptr, Ptr, Ptr],
            Kernel::SsimTermsCs => &[Ptr, I32, I32, F32, F32, Ptr, Ptr, Ptr],
            Kernel::PsnrHvsBlocks => &[Ptr, Ptr, I32, I32, Ptr, Ptr, Ptr],
            Kernel::SplitUvU8 | Kernel::SplitUvU16 => &[Ptr, I32, Ptr, Ptr],
            Kernel::HvsChunkSums | Kernel::HvsPrefix | Kernel::HvsChunkBands | Kernel::WidenU8 => {
                &[Ptr, I32, Ptr]
            }
            Kernel::HvsSeq => &[Ptr, Ptr, I32, Ptr, Ptr, I32, Ptr, Ptr, I32, Ptr],
            Kernel::CiedePixels => &[
                Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, I32, I32, I32, I32, I32, I32, I32, Ptr,
            ],
            Kernel::CiedeLabTable => &[Ptr],
            Kernel::CiedePixelsTable => &[
                Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, I32, I32, I32, I32, I32, I32, I32, Ptr, Ptr,
            ],
        }
    }
}

/// A byte range of the device arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Region {
    pub off: usize,
    pub bytes: usize,
}

/// One kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KArg {
    /// Device pointer to the start of an arena region.
    Ptr(Region),
    I32(i32),
    F32(f32),
}

impl KArg {
    fn kind(&self) -> ArgKind {
        match self {
            KArg::Ptr(_) => ArgKind::Ptr,
            KArg::I32(_) => ArgKind::I32,
            KArg::F32(_) => ArgKind::F32,
        }
    }
}

/// One launch: `grid.0 x grid.1` blocks of [`BLOCK`] threads.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub kernel: Kernel,
    pub grid: (u32, u32),
    pub args: Vec<KArg>,
    /// The metric the launch belongs to (for timings).
    pub metric: &'static str,
}

/// Check a launch against its kernel's signature and the arena size.
pub fn check_launch(l: &Launch, arena: usize) -> Result<()> {
    let sig = l.kernel.signature();
    if l.args.len() != sig.len() || l.args.iter().zip(sig).any(|(a, k)| a.kind() != *k) {
        return Err(Error::Backend(format!(
            "CUDA companions: launch of {} with arguments {:?}",
            l.kernel.name(),
            l.args
        )));
    }
    for a in &l.args {
        if let KArg::Ptr(r) = a
            && r.off + r.bytes > arena
        {
            return Err(Error::Backend(format!(
                "CUDA companions: {} names {r:?} beyond the {arena}-byte arena",
                l.kernel.name()
            )));
        }
    }
    if l.grid.0 == 0 || l.grid.1 == 0 || l.grid.1 > 65535 || l.grid.0 > i32::MAX as u32 {
        return Err(Error::Backend(format!(
            "CUDA companions: {} with grid {:?}",
            l.kernel.name(),
            l.grid
        )));
    }
    Ok(())
}

fn blocks(n: usize, per_block: usize) -> u32 {
    n.div_ceil(per_block) as u32
}

fn need(r: Region, bytes: usize, what: &str) {
    assert!(
        r.bytes >= bytes,
        "{what}: region of {} bytes, {bytes} needed",
        r.bytes
    );
}

/// `psnr_sse`: adds the SSE of the `n` samples of `r` and `d` (u16) to the u64 at `out`.
/// The kernel reads `r[i]`, `d[i]` for `i < n` only and writes only `*out`.
fn launch_psnr_sse(r: Region, d: Region, n: usize, out: Region) -> Launch {
    need(r, 2 * n, "psnr_sse ref");
    need(d, 2 * n, "psnr_sse dis");
    need(out, 8, "psnr_sse out");
    assert!(n > 0 && n <= i32::MAX as usize);
    Launch {
        kernel: Kernel::PsnrSse,
        grid: (blocks(n, BLOCK as usize * PSNR_ITEMS), 1),
        args: vec![
            KArg::Ptr(r),
            KArg::Ptr(d),
            KArg::I32(n as i32),
            KArg::Ptr(out),
        ],
        metric: "psnr",
    }
}

/// `split_uv_u8` / `split_uv_u16`: `src` holds `n` Cb,Cr pairs (bytes where `narrow`, else u16),
/// `u` and `v` receive `n` u16 each; reads and writes below `n` pairs only.
fn launch_split_uv(src: Region, n: usize, narrow: bool, u: Region, v: Region) -> Launch {
    need(src, 2 * n * if narrow { 1 } else { 2 }, "split_uv src");
    need(u, 2 * n, "split_uv u");
    need(v, 2 * n, "split_uv v");
    assert!(n > 0);
    Launch {
        kernel: if narrow {
            Kernel::SplitUvU8
        } else {
            Kernel::SplitUvU16
        },
        grid: (blocks(n, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(n)),
            KArg::Ptr(u),
            KArg::Ptr(v),
        ],
        metric: "upload",
    }
}

/// `widen_u8`: `src` holds `n` bytes, `dst` receives `n` u16; reads and writes below `n` only.
fn launch_widen_u8(src: Region, n: usize, dst: Region) -> Launch {
    need(src, n, "widen_u8 src");
    need(dst, 2 * n, "widen_u8 dst");
    assert!(n > 0);
    Launch {
        kernel: Kernel::WidenU8,
        grid: (blocks(n.div_ceil(4), BLOCK as usize), 1),
        args: vec![KArg::Ptr(src), KArg::I32(i32_of(n)), KArg::Ptr(dst)],
        metric: "upload",
    }
}

fn i32_of(v: usize) -> i32 {
    assert!(v <= i32::MAX as usize, "size {v} beyond int");
    v as i32
}

/// `ssim_load`: `src` is a `w` x `h` u16 plane, `dst` receives `sw` x `sh` floats (the plane
/// as floats at scale 1, else its decimation by `scale` with the box filter). Reads of `src` are
/// mirrored into `0..w` x `0..h` (one reflection: `scale / 2 < w, h`); writes `dst[i]`,
/// `i < sw * sh`.
#[allow(clippy::too_many_arguments)]
fn launch_ssim_load(
    metric: &'static str,
    src: Region,
    (w, h, bpc): (usize, usize, u8),
    scale: usize,
    tap: f32,
    (sw, sh): (usize, usize),
    dst: Region,
) -> Launch {
    need(src, 2 * w * h, "ssim_load src");
    need(dst, 4 * sw * sh, "ssim_load dst");
    assert!(scale >= 1 && scale / 2 < w.min(h) && (8..=16).contains(&bpc));
    assert!(scale > 1 || (sw, sh) == (w, h));
    Launch {
        kernel: Kernel::SsimLoad,
        grid: (
            blocks(
                if scale == 1 {
                    (sw * sh).div_ceil(4)
                } else {
                    sw * sh
                },
                BLOCK as usize,
            ),
            1,
        ),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::I32(i32::from(bpc)),
            KArg::I32(i32_of(scale)),
            KArg::F32(tap),
            KArg::I32(i32_of(sw)),
            KArg::I32(i32_of(sh)),
            KArg::Ptr(dst),
        ],
        metric,
    }
}

/// `SSIM_DW` in kernels/ssim.cu: `ssim_decimate_lpf`'s tiles are `SSIM_DW` x
/// `BLOCK / SSIM_DW` outputs.
const SSIM_DW: usize = 32;

/// `ssim_decimate_lpf`: `src` is `w` x `h` floats, `dst` receives the `sw` x `sh` level below
/// (`w / 2 + (w & 1)`...). Reads are mirrored into the image (4 < w, h: levels are >= 11).
fn launch_ssim_decimate_lpf(src: Region, (w, h): (usize, usize), dst: Region) -> Launch {
    let (sw, sh) = (w / 2 + (w & 1), h / 2 + (h & 1));
    need(src, 4 * w * h, "ssim_decimate_lpf src");
    need(dst, 4 * sw * sh, "ssim_decimate_lpf dst");
    assert!(w > 4 && h > 4);
    let tiles = sw.div_ceil(SSIM_DW) * sh.div_ceil(BLOCK as usize / SSIM_DW);
    Launch {
        kernel: Kernel::SsimDecimateLpf,
        grid: (i32_of(tiles) as u32, 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::I32(i32_of(sw)),
            KArg::I32(i32_of(sh)),
            KArg::Ptr(dst),
        ],
        metric: "ms_ssim",
    }
}

/// `ssim_hconv`: `r`, `d` are `w` x `h` floats (w, h >= 11), `out` receives 5 planes of
/// `(w - 10) x h` floats.
fn launch_ssim_hconv(
    metric: &'static str,
    r: Region,
    d: Region,
    (w, h): (usize, usize),
    out: Region,
) -> Launch {
    assert!(w >= 11 && h >= 11);
    need(r, 4 * w * h, "ssim_hconv r");
    need(d, 4 * w * h, "ssim_hconv d");
    need(out, 4 * 5 * (w - 10) * h, "ssim_hconv out");
    Launch {
        kernel: Kernel::SsimHconv,
        grid: (blocks((w - 10) * h, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(r),
            KArg::Ptr(d),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::Ptr(out),
        ],
        metric,
    }
}

/// `SSIM_TW`, `SSIM_TY` in kernels/ssim.cu: `ssim_terms`' tiles are `SSIM_TW` x
/// `BLOCK / SSIM_TW * SSIM_TY` pixels, `SSIM_TY` of a column a thread.
const SSIM_TW: usize = 32;
const SSIM_TY: usize = 4;

/// `ssim_terms`' blocks for terms of `dw` x `dh`: one per tile.
fn ssim_tiles((dw, dh): (usize, usize)) -> usize {
    dw.div_ceil(SSIM_TW) * dh.div_ceil(BLOCK as usize / SSIM_TW * SSIM_TY)
}

/// `ssim_terms`, or `ssim_terms_cs` where the terms have no `l` region: `hc` holds 5 planes of
/// `dw` x `h` floats (h >= 11); `l` (if any), `c` receive `dw * (h - 10)` doubles, `s` as many
/// floats, `part` [`Terms::parts`] doubles per block.
fn launch_ssim_terms(
    metric: &'static str,
    hc: Region,
    (dw, h): (usize, usize),
    terms: Terms,
) -> Launch {
    assert!(h >= 11 && dw >= 1);
    let n = dw * (h - 10);
    need(hc, 4 * 5 * dw * h, "ssim_terms hc");
    if let Some(l) = terms.l {
        need(l, 8 * n, "ssim_terms l");
    }
    need(terms.c, 8 * n, "ssim_terms c");
    need(terms.s, 4 * n, "ssim_terms s");
    assert_eq!(terms.n, n);
    assert_eq!(terms.blocks, ssim_tiles((dw, h - 10)));
    need(
        terms.part,
        8 * terms.parts() * terms.blocks,
        "ssim_terms part",
    );
    let (c1, c2, c3) = ssim::ssim_constants();
    let mut args = vec![KArg::Ptr(hc), KArg::I32(i32_of(dw)), KArg::I32(i32_of(h))];
    if terms.l.is_some() {
        args.push(KArg::F32(c1));
    }
    args.extend([KArg::F32(c2), KArg::F32(c3)]);
    args.extend(terms.l.map(KArg::Ptr));
    args.extend([
        KArg::Ptr(terms.c),
        KArg::Ptr(terms.s),
        KArg::Ptr(terms.part),
    ]);
    Launch {
        kernel: if terms.l.is_some() {
            Kernel::SsimTerms
        } else {
            Kernel::SsimTermsCs
        },
        grid: (i32_of(terms.blocks) as u32, 1),
        args,
        metric,
    }
}

/// `psnr_hvs_blocks`: `r`, `d` are `w` x `h` u16 planes (w, h >= 8, samples within 12 bits),
/// `csf` and `mask` 64 floats each; `terms` receives 64 floats per 8x8 block. Reads stay inside
/// the plane (a block at x0 <= w - 8, y0 <= h - 8).
fn launch_psnr_hvs_blocks(
    (r, d): (Region, Region),
    (w, h): (usize, usize),
    csf: Region,
    mask: Region,
    terms: Region,
) -> Launch {
    assert!(w >= 8 && h >= 8);
    let (bx, by) = psnr_hvs::block_grid(w, h);
    need(r, 2 * w * h, "psnr_hvs r");
    need(d, 2 * w * h, "psnr_hvs d");
    need(csf, 4 * 64, "psnr_hvs csf");
    need(mask, 4 * 64, "psnr_hvs mask");
    need(terms, 4 * 64 * bx * by, "psnr_hvs terms");
    Launch {
        kernel: Kernel::PsnrHvsBlocks,
        grid: (blocks(bx * by, HVS_GROUPS), 1),
        args: vec![
            KArg::Ptr(r),
            KArg::Ptr(d),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::Ptr(csf),
            KArg::Ptr(mask),
            KArg::Ptr(terms),
        ],
        metric: "psnr_hvs",
    }
}

/// `HVS_GROUPS` in kernels/psnr_hvs.cu: 8x8 blocks per thread block of `psnr_hvs_blocks` (eight
/// threads each).
const HVS_GROUPS: usize = BLOCK as usize / 8;

/// `HVS_CHUNK` and `HVS_ROW` in kernels/psnr_hvs.cu: terms per chunk of the float-sum tables,
/// and u64 per chunk in them.
const HVS_CHUNK: usize = 2048;
const HVS_ROW: usize = 18;

/// Bytes of the tables of [`launch_hvs_chunk`] for `n` terms: two doubles per chunk (sums,
/// prefix sums), then `HVS_ROW` u64 per chunk.
pub fn hvs_work_bytes(n: usize) -> usize {
    8 * n.div_ceil(HVS_CHUNK) * (2 + HVS_ROW)
}

/// `hvs_chunk_sums` / `hvs_prefix` / `hvs_chunk_bands`: `terms` holds `n` floats, `work` the
/// tables ([`hvs_work_bytes`]); one block per chunk of `HVS_CHUNK` terms (`hvs_prefix`: one
/// block), reads below `n` only.
pub fn launch_hvs_chunk(kernel: Kernel, terms: Region, n: usize, work: Region) -> Launch {
    assert!(matches!(
        kernel,
        Kernel::HvsChunkSums | Kernel::HvsPrefix | Kernel::HvsChunkBands
    ));
    assert!(n > 0);
    need(terms, 4 * n, "hvs terms");
    need(work, hvs_work_bytes(n), "hvs work");
    Launch {
        kernel,
        grid: (
            if kernel == Kernel::HvsPrefix {
                1
            } else {
                n.div_ceil(HVS_CHUNK) as u32
            },
            1,
        ),
        args: vec![KArg::Ptr(terms), KArg::I32(i32_of(n)), KArg::Ptr(work)],
        metric: "psnr_hvs",
    }
}

/// `hvs_seq`: per plane `(terms, work, n)` as for [`launch_hvs_chunk`] (after both), `out`
/// receives 6 floats (per plane the sum and its validity). One block per plane.
pub fn launch_hvs_seq(planes: [(Region, Region, usize); 3], out: Region) -> Launch {
    need(out, 24, "hvs_seq out");
    let mut args = Vec::new();
    for (terms, work, n) in planes {
        need(terms, 4 * n, "hvs_seq terms");
        need(work, hvs_work_bytes(n), "hvs_seq work");
        args.extend([KArg::Ptr(terms), KArg::Ptr(work), KArg::I32(i32_of(n))]);
    }
    args.push(KArg::Ptr(out));
    Launch {
        kernel: Kernel::HvsSeq,
        grid: (3, 1),
        args,
        metric: "psnr_hvs",
    }
}

/// `ciede_pixels`: `r`, `d` are the Y, Cb, Cr regions of each side (luma `w` x `h`, chroma
/// `cw` x `ch`, u16); `part` receives one double per block of [`BLOCK`] pixels. Chroma reads are at
/// `(min(x / fx, cw - 1), min(y / fy, ch - 1))`, inside the chroma plane.
/// With `table` (8-bit samples only), each pixel's colour conversions are read from the
/// table that [`launch_ciede_lab_table`] fills ([`CIEDE_TABLE_BYTES`]; indices below 2^24).
fn launch_ciede_pixels(
    r: [Region; 3],
    d: [Region; 3],
    (w, h, bpc): (usize, usize, u8),
    (cw, ch): (usize, usize),
    (fx, fy): (usize, usize),
    table: Option<Region>,
    de: Region,
) -> Launch {
    assert!(cw >= 1 && ch >= 1 && (1..=2).contains(&fx) && (1..=2).contains(&fy));
    if let Some(t) = table {
        assert_eq!(bpc, 8, "the CIEDE2000 table is for 8-bit samples");
        need(t, CIEDE_TABLE_BYTES, "ciede table");
    }
    for side in [r, d] {
        need(side[0], 2 * w * h, "ciede luma");
        need(side[1], 2 * cw * ch, "ciede cb");
        need(side[2], 2 * cw * ch, "ciede cr");
    }
    need(de, 8 * blocks(w * h, BLOCK as usize) as usize, "ciede part");
    let mut args: Vec<KArg> = r.iter().chain(&d).map(|&x| KArg::Ptr(x)).collect();
    for v in [w, h, cw, ch, fx, fy, usize::from(bpc)] {
        args.push(KArg::I32(i32_of(v)));
    }
    args.extend(table.map(KArg::Ptr));
    args.push(KArg::Ptr(de));
    Launch {
        kernel: if table.is_some() {
            Kernel::CiedePixelsTable
        } else {
            Kernel::CiedePixels
        },
        grid: (blocks(w * h, BLOCK as usize), 1),
        args,
        metric: "ciede",
    }
}

/// `CIEDE_TABLE_LEN` in kernels/ciede.cu: one entry per 8-bit (Y, Cb, Cr) triple.
const CIEDE_TABLE_LEN: usize = 1 << 24;
/// The table's size: four floats (L, a, b and the chroma C*ab) an entry, 16-byte aligned.
pub const CIEDE_TABLE_BYTES: usize = 16 * CIEDE_TABLE_LEN;

/// `ciede_lab_table`: fills `table` (every entry: the kernel's grid covers exactly
/// `CIEDE_TABLE_LEN` threads, each writes its own entry's four floats).
fn launch_ciede_lab_table(table: Region) -> Launch {
    need(table, CIEDE_TABLE_BYTES, "ciede table");
    Launch {
        kernel: Kernel::CiedeLabTable,
        grid: (blocks(CIEDE_TABLE_LEN, BLOCK as usize), 1),
        args: vec![KArg::Ptr(table)],
        metric: "ciede",
    }
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
    fn wanted(self, geom: &Geometry) -> bool {
        geom.bpc == 8
            && match self {
                CiedeTable::Auto => geom.w * geom.h >= CIEDE_TABLE_MIN_PIXELS,
                CiedeTable::On => true,
                CiedeTable::Off => false,
            }
    }

    /// `VMAFGPU_CIEDE_TABLE` = `on` / `off` (benchmarks' A/B), else `Auto`.
    pub fn from_env() -> CiedeTable {
        match std::env::var("VMAFGPU_CIEDE_TABLE").as_deref() {
            Ok("on") => CiedeTable::On,
            Ok("off") => CiedeTable::Off,
            _ => CiedeTable::Auto,
        }
    }
}

/// Where the per-pixel SSIM terms of one image pair go (`n` pixels), and the per-block sums
/// that bound their sequential sums (`blocks` blocks of [`Terms::parts`] doubles). Without
/// `l` the luminance term is not computed (MS-SSIM's levels whose exponent for it is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Terms {
    l: Option<Region>,
    c: Region,
    s: Region,
    part: Region,
    n: usize,
    blocks: usize,
}

/// `SSIM_PARTS` in kernels/ssim.cu: per block, for each of l*c*s, l, c, s, the sum, the sum of
/// magnitudes and the weighted sum of magnitudes ([`ssim::SumBound`]).
const SSIM_PARTS: usize = 12;
/// `SSIM_PARTS_CS` in kernels/ssim.cu: `ssim_terms_cs`' sums, those of c and s.
const SSIM_PARTS_CS: usize = 6;

impl Terms {
    /// Doubles a block in `part`.
    fn parts(&self) -> usize {
        if self.l.is_some() {
            SSIM_PARTS
        } else {
            SSIM_PARTS_CS
        }
    }
}

/// Additions a term passes through in `ssim_terms`' block sums: its thread's sum of its
/// [`SSIM_TY`] pixels, then the block's tree sum (log2 of [`BLOCK`]).
const TREE_STEPS: usize = SSIM_TY - 1 + BLOCK.trailing_zeros() as usize;

/// Sums the GPU did not finish (SSIM or MS-SSIM images whose bound did not decide, PSNR-HVS
/// planes whose GPU sum gave up), so that their terms were read back and added on the host,
/// since the process started: a diagnostic for tests and benchmarks.
pub static HOST_SUMMED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where a frame's time goes, since the process started (nanoseconds; a diagnostic for
/// benchmarks, see [`feeder_times`]), indexed by [`Stage`].
static FEEDER_NS: [std::sync::atomic::AtomicU64; 9] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 9];

/// Where the setup of a geometry's buffers goes (a diagnostic for benchmarks, see
/// [`setup_ms`]): geometries set up, then nanoseconds of each [`SetupStage`].
static SETUP_NS: [std::sync::atomic::AtomicU64; 5] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 5];

/// The entries of [`setup_ms`]' result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupStage {
    /// Geometries set up (a count).
    Geometries = 0,
    /// The device arena (planes, scratch, results of every ring buffer; zeroed).
    Arena,
    /// The tables' uploads and the launches that fill tables (queued, not waited for).
    Tables,
    /// The ring buffers: page-locked readback, events (their staging is page-locked when a
    /// frame first needs it).
    Ring,
    /// Capturing each ring buffer's launches as graphs.
    Graphs,
}

/// Milliseconds spent in each [`SetupStage`] since the process started (`Geometries`: the
/// count), on the thread that submits frames: the time the first frame of a geometry waits.
pub fn setup_ms() -> [f64; 5] {
    std::array::from_fn(|i| {
        let v = SETUP_NS[i].load(std::sync::atomic::Ordering::Relaxed) as f64;
        if i == 0 { v } else { v / 1e6 }
    })
}

fn setup_add(stage: SetupStage, since: std::time::Instant) -> std::time::Instant {
    crate::backend::add_elapsed(&SETUP_NS[stage as usize], since)
}

/// The entries of [`feeder_times`]' result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Frames fed (a count).
    Frames = 0,
    /// The feeder waiting for the frame's ring buffer (held by a frame whose scores are not
    /// finished: the GPU or the scoring threads are behind).
    RingWait,
    /// The feeder staging the planes into the ring buffer.
    Staging,
    /// The feeder queueing the uploads, kernels and readback.
    Queueing,
    /// The feeder starting the frame's scoring thread.
    Spawn,
    /// From `submit` to the feeder taking the frame (the feeder busy with earlier frames).
    ToFeeder,
    /// From the end of queueing to the frame's readback done, as its scoring thread sees it
    /// (the GPU's share of the latency).
    Gpu,
    /// From the readback done to the scores set (the scoring thread's work).
    Scoring,
    /// From the scores set to the owner taking them (`take`).
    ToOwner,
}

/// Milliseconds per frame of each [`Stage`] since the process started, indexed by `Stage`
/// (`Stage::Frames`: the frame count).
pub fn feeder_times() -> [f64; 9] {
    per_frame_ms(feeder_ns())
}

/// The raw totals behind [`feeder_times`] (nanoseconds; `Stage::Frames`: the frame count).
pub fn feeder_ns() -> [u64; 9] {
    std::array::from_fn(|i| FEEDER_NS[i].load(std::sync::atomic::Ordering::Relaxed))
}

/// Totals from [`feeder_ns`] (or a difference of two) as milliseconds per frame.
pub fn per_frame_ms(t: [u64; 9]) -> [f64; 9] {
    let n = t[0].max(1) as f64;
    std::array::from_fn(|i| {
        if i == 0 {
            t[0] as f64
        } else {
            t[i] as f64 / 1e6 / n
        }
    })
}

fn feeder_add(stage: Stage, since: std::time::Instant) -> std::time::Instant {
    crate::backend::add_elapsed(&FEEDER_NS[stage as usize], since)
}

/// Reads a region of a frame's device results (the frame's own slot) into host memory.
pub type Fetch<'a> = dyn Fn(Region) -> Result<Vec<u8>> + Sync + 'a;

/// What a plan depends on: the frame's geometry and the metrics asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
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

impl Geometry {
    /// The geometry of a job, after checking that its planes agree.
    pub fn of(job: &FrameJob) -> Result<Geometry> {
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
        Ok(Geometry {
            w: r.width,
            h: r.height,
            bpc: r.bpc,
            chroma,
            interleaved: false,
            companions: job.companions,
        })
    }

    /// The geometry of a job whose planes are in the caller's memory (`host`; the job's own
    /// planes carry only the geometry), after checking that they agree.
    pub fn of_host(job: &FrameJob, host: &HostFrame) -> Result<Geometry> {
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
        Ok(Geometry {
            w: r.width(),
            h: r.height(),
            bpc: r.bpc(),
            chroma,
            interleaved: interleaved && chroma.is_some(),
            companions: job.companions,
        })
    }

    /// (width, height) of plane `p` (0 = luma, 1/2 = chroma).
    fn plane(&self, p: usize) -> (usize, usize) {
        if p == 0 {
            (self.w, self.h)
        } else {
            self.chroma.unwrap_or((0, 0))
        }
    }

    fn planes(&self) -> usize {
        if self.chroma.is_some() { 3 } else { 1 }
    }
}

/// Arena layout builder: 256-byte aligned regions.
#[derive(Default)]
struct Arena {
    bytes: usize,
}

impl Arena {
    fn take(&mut self, bytes: usize) -> Region {
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
/// each its own copy of that part ([`Plan::device_offset`]), so that a frame's planes can be
/// uploaded while the previous frame's kernels run and its terms are still there when its
/// scores are computed; a plan run alone (slot 0) is exactly `arena` bytes. A metric's
/// launches only touch its own scratch, the planes, the tables and its results, so the metrics
/// may run at once.
#[derive(Clone, Debug)]
pub struct Plan {
    pub geom: Geometry,
    /// Arena size in bytes (with one copy of the results).
    pub arena: usize,
    /// Where the job's planes go, as u16: reference Y, Cb, Cr, then distorted Y, Cb, Cr
    /// (`None` for planes the plan does not read).
    pub inputs: [Option<Region>; 6],
    /// Where the planes are uploaded: `inputs` themselves, or for 8-bit planes (`narrow`) byte
    /// regions that `prep` widens into `inputs`.
    pub staged: [Option<Region>; 6],
    pub narrow: bool,
    /// Launches on the upload stream after the uploads, before the metrics' launches.
    pub prep: Vec<Launch>,
    /// The widening of the two luma planes (8-bit planes; else empty): launched like `prep`
    /// when the planes were uploaded, or on VMAF's stream from VMAF's copy of them
    /// ([`CompanionGpu::submit_sharing_luma`]).
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
    /// metric can run at once ([`Plan::device_offset`]).
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
    /// Constant tables to upload once per geometry (before the first frame): (region, bytes).
    pub tables: Vec<(Region, Vec<u8>)>,
    /// Add every SSIM, MS-SSIM and PSNR-HVS sum on the host from the terms, whatever the GPU's
    /// sums say (a test hook: the path that the GPU leaves to rare frames).
    pub host_sums: bool,
    /// [`Plan::scores`]' checks for the geometry, for frames whose planes the host does not
    /// have ([`Plan::check_geometry`]; `None` until then).
    geometry_check: Option<Result<()>>,
}

impl Plan {
    /// The plan for a geometry. Metrics the GPU path leaves to the host are not in it.
    pub fn new(geom: Geometry) -> Plan {
        Plan::with_ciede_table(geom, CiedeTable::Auto)
    }

    /// [`Plan::new`], with CIEDE2000's colour-conversion table as `table` says.
    pub fn with_ciede_table(geom: Geometry, table: CiedeTable) -> Plan {
        let mut a = Arena::default();
        let c = geom.companions;
        let (w, h) = (geom.w, geom.h);
        let np = geom.planes();
        let mut need_plane = [false; 3];
        let mut psnr_gpu = [false; 3];
        if c.psnr {
            for (p, g) in psnr_gpu.iter_mut().enumerate().take(np) {
                *g = !(geom.bpc == 8 && geom.plane(p).0 > PSNR_U32_ROW_MAX_WIDTH);
                need_plane[p] |= *g;
            }
        }
        let ssim_geom = c.ssim.then(|| ssim::scaled_geometry(w, h).ok()).flatten();
        let ms_ok = c.ms_ssim && ms_ssim::check_size(w, h).is_ok();
        let levels = ms_ssim::level_sizes(w, h);
        need_plane[0] |= ssim_geom.is_some() || ms_ok;
        let hvs_ok = c.psnr_hvs
            && geom.bpc <= 12
            && np == 3
            && (0..3).all(|p| geom.plane(p).0 >= 8 && geom.plane(p).1 >= 8);
        if hvs_ok {
            need_plane = [true; 3];
        }
        let ciede_factors = match (c.ciede, geom.chroma) {
            (true, Some((cw, ch))) => {
                let view = |width, height| Plane {
                    data: &[],
                    width,
                    height,
                    stride: width,
                    bpc: geom.bpc,
                };
                ciede::chroma_factors(&view(w, h), &view(cw, ch), "ciede").ok()
            }
            _ => None,
        };
        if ciede_factors.is_some() {
            need_plane = [true; 3];
        }

        // Shared by every frame: constant tables, then scratch, each used by one metric's
        // launches (which run in order on that metric's stream; with several scratch sets,
        // frames take the sets in turn, each set with its own streams: Plan::scratch_sets).
        let ciede_table =
            (ciede_factors.is_some() && table.wanted(&geom)).then(|| a.take(CIEDE_TABLE_BYTES));
        let hvs_tables = hvs_ok.then(|| [0, 1, 2].map(|_| (a.take(256), a.take(256))));
        let scratch_off = a.bytes.next_multiple_of(256);
        // The horizontal-pass scratch of SSIM, and of the MS-SSIM levels.
        let hc_ssim = ssim_geom.map(|(_, sw, sh)| a.take(4 * 5 * (sw - 10) * sh));
        let hc_ms = ms_ok.then(|| a.take(4 * 5 * (w - 10) * h));
        let ssim_scaled = ssim_geom.map(|(_, sw, sh)| (a.take(4 * sw * sh), a.take(4 * sw * sh)));
        let pyr: Vec<(Region, Region)> = if ms_ok {
            levels
                .iter()
                .map(|&(lw, lh)| (a.take(4 * lw * lh), a.take(4 * lw * lh)))
                .collect()
        } else {
            Vec::new()
        };
        let hvs_blocks = [0, 1, 2].map(|p| {
            let (pw, ph) = geom.plane(p);
            if hvs_ok {
                let (bx, by) = psnr_hvs::block_grid(pw, ph);
                bx * by
            } else {
                0
            }
        });
        let hvs_work = hvs_ok.then(|| hvs_blocks.map(|b| a.take(hvs_work_bytes(64 * b))));

        // The frame's results: what is read back, then the terms that stay on the device.
        let results_off = a.bytes.next_multiple_of(256);
        let mut psnr = [None; 3];
        for p in 0..3 {
            if psnr_gpu[p] {
                psnr[p] = Some(a.take(8));
            }
        }
        // The terms' dimensions (the "valid" output of the 11x11 window).
        let ssim_dims = ssim_geom.map(|(_, sw, sh)| (sw - 10, sh - 10));
        let ssim_part = ssim_dims.map(|d| a.take(8 * SSIM_PARTS * ssim_tiles(d)));
        let ms_dims = levels.map(|(lw, lh)| (lw.max(10) - 10, lh.max(10) - 10));
        // MS-SSIM's levels without the luminance term have fewer sums (ssim_terms_cs).
        let ms_parts = |i: usize| {
            if ms_ssim::uses_luminance(i) {
                SSIM_PARTS
            } else {
                SSIM_PARTS_CS
            }
        };
        let ms_part = ms_ok.then(|| {
            let mut i = 0;
            ms_dims.map(|d| {
                let r = a.take(8 * ms_parts(i) * ssim_tiles(d));
                i += 1;
                r
            })
        });
        let ciede_part = ciede_factors.map(|f| {
            let b = blocks(w * h, BLOCK as usize) as usize;
            (a.take(8 * b), b, f)
        });
        let hvs_out = hvs_ok.then(|| a.take(24));
        let readback = Region {
            off: results_off,
            bytes: a.bytes.max(results_off) - results_off,
        };
        // The frame's planes (each frame in flight its own, so that the next frame's upload
        // need not wait for this frame's kernels).
        let mut inputs = [None; 6];
        for p in 0..3 {
            if need_plane[p] {
                let (pw, ph) = geom.plane(p);
                inputs[p] = Some(a.take(2 * pw * ph));
                inputs[3 + p] = Some(a.take(2 * pw * ph));
            }
        }
        let narrow = geom.bpc == 8;
        let mut prep = Vec::new();
        let mut prep_luma = Vec::new();
        let mut staged = [None; 6];
        for (i, r) in inputs.iter().enumerate() {
            let Some(r) = *r else { continue };
            if geom.interleaved && i % 3 != 0 {
                continue;
            }
            staged[i] = Some(if narrow {
                let b = a.take(r.bytes / 2);
                let widen = launch_widen_u8(b, r.bytes / 2, r);
                if i % 3 == 0 {
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
        let terms = |a: &mut Arena, (dw, dh): (usize, usize), part: Region, with_l: bool| {
            let n = dw * dh;
            Terms {
                l: with_l.then(|| a.take(8 * n)),
                c: a.take(8 * n),
                s: a.take(4 * n),
                part,
                n,
                blocks: ssim_tiles((dw, dh)),
            }
        };
        let ssim_terms = ssim_dims
            .zip(ssim_part)
            .map(|(d, p)| terms(&mut a, d, p, true));
        let ms_terms = ms_part.map(|parts| {
            let mut i = 0;
            parts.map(|p| {
                let t = terms(&mut a, ms_dims[i], p, ms_ssim::uses_luminance(i));
                i += 1;
                t
            })
        });
        let hvs_terms = hvs_ok.then(|| hvs_blocks.map(|b| a.take(4 * 64 * b)));
        let results = Region {
            off: results_off,
            bytes: a.bytes.max(results_off) - results_off,
        };

        let mut zero = Vec::new();
        let mut launches = Vec::new();
        for p in 0..3 {
            if let Some(out) = psnr[p] {
                zero.push(out);
                let (pw, ph) = geom.plane(p);
                launches.push(launch_psnr_sse(
                    inputs[p].unwrap(),
                    inputs[3 + p].unwrap(),
                    pw * ph,
                    out,
                ));
            }
        }
        if let (Some((scale, sw, sh)), Some(t), Some((fr, fd))) =
            (ssim_geom, ssim_terms, ssim_scaled)
        {
            let tap = ssim::box_tap(scale);
            for (src, dst) in [(inputs[0], fr), (inputs[3], fd)] {
                launches.push(launch_ssim_load(
                    "ssim",
                    src.unwrap(),
                    (w, h, geom.bpc),
                    scale,
                    tap,
                    (sw, sh),
                    dst,
                ));
            }
            let hc = hc_ssim.expect("with SSIM");
            launches.push(launch_ssim_hconv("ssim", fr, fd, (sw, sh), hc));
            launches.push(launch_ssim_terms("ssim", hc, (sw - 10, sh), t));
        }
        if let Some(ts) = ms_terms {
            for (src, dst) in [(inputs[0], pyr[0].0), (inputs[3], pyr[0].1)] {
                launches.push(launch_ssim_load(
                    "ms_ssim",
                    src.unwrap(),
                    (w, h, geom.bpc),
                    1,
                    1.0,
                    (w, h),
                    dst,
                ));
            }
            for i in 1..ms_ssim::SCALES {
                launches.push(launch_ssim_decimate_lpf(
                    pyr[i - 1].0,
                    levels[i - 1],
                    pyr[i].0,
                ));
                launches.push(launch_ssim_decimate_lpf(
                    pyr[i - 1].1,
                    levels[i - 1],
                    pyr[i].1,
                ));
            }
            let hc = hc_ms.expect("with MS-SSIM");
            for i in 0..ms_ssim::SCALES {
                let (lw, lh) = levels[i];
                launches.push(launch_ssim_hconv(
                    "ms_ssim",
                    pyr[i].0,
                    pyr[i].1,
                    (lw, lh),
                    hc,
                ));
                launches.push(launch_ssim_terms("ms_ssim", hc, (lw - 10, lh), ts[i]));
            }
        }
        if let Some((part, _, f)) = ciede_part {
            let side = |o: usize| [0, 1, 2].map(|p| inputs[o + p].unwrap());
            launches.push(launch_ciede_pixels(
                side(0),
                side(3),
                (w, h, geom.bpc),
                geom.plane(1),
                f,
                ciede_table,
                part,
            ));
        }
        let mut tables = Vec::new();
        if let (Some(ts), Some(tabs), Some(work), Some(out)) =
            (hvs_terms, hvs_tables, hvs_work, hvs_out)
        {
            for (p, (&t, &(rc, rm))) in ts.iter().zip(&tabs).enumerate() {
                let csf = psnr_hvs::csf(p);
                let mask = psnr_hvs::mask_table(csf);
                let bytes = |m: &[[f32; 8]; 8]| -> Vec<u8> {
                    m.iter().flatten().flat_map(|v| v.to_le_bytes()).collect()
                };
                tables.push((rc, bytes(csf)));
                tables.push((rm, bytes(&mask)));
                launches.push(launch_psnr_hvs_blocks(
                    (inputs[p].unwrap(), inputs[3 + p].unwrap()),
                    geom.plane(p),
                    rc,
                    rm,
                    t,
                ));
            }
            // The planes' float sums on the GPU (kernels/psnr_hvs.cu).
            let n = hvs_blocks.map(|b| 64 * b);
            for kernel in [
                Kernel::HvsChunkSums,
                Kernel::HvsPrefix,
                Kernel::HvsChunkBands,
            ] {
                for p in 0..3 {
                    launches.push(launch_hvs_chunk(kernel, ts[p], n[p], work[p]));
                }
            }
            launches.push(launch_hvs_seq(
                [0, 1, 2].map(|p| (ts[p], work[p], n[p])),
                out,
            ));
        }
        let metric_streams: Vec<usize> = launches.iter().map(|l| metric_index(l.metric)).collect();
        let mut metrics_used = [false; METRICS.len()];
        for &i in &metric_streams {
            metrics_used[i] = true;
        }
        Plan {
            geom,
            arena: a.bytes.max(256),
            inputs,
            staged,
            narrow,
            prep,
            prep_luma,
            setup: ciede_table
                .map(launch_ciede_lab_table)
                .into_iter()
                .collect(),
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
            psnr,
            ssim: ssim_terms,
            ms_ssim: ms_terms,
            psnr_hvs: hvs_terms.zip(hvs_out).map(|(t, o)| (t, hvs_blocks, o)),
            ciede: ciede_part,
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
            let plane: &OwnedPlane = match (side, p, &job.chroma) {
                (0, 0, _) => &job.reference,
                (1, 0, _) => &job.distorted,
                (0, _, Some(c)) => &c.reference[p - 1],
                (_, _, Some(c)) => &c.distorted[p - 1],
                _ => unreachable!("plan names chroma of a job without chroma"),
            };
            out.push((*r, &plane.data[..r.bytes / per]));
        }
        out
    }

    /// The planes of a frame in the caller's memory to upload (as [`Plan::uploads`]): the host
    /// planes as they are, bytes for 8-bit planes (`narrow`), little-endian u16 above, each
    /// filling its region exactly.
    pub fn host_uploads<'a>(&self, host: &'a HostFrame) -> Result<Vec<(Region, &'a HostPlane)>> {
        let mut out = Vec::new();
        for (i, r) in self.staged.iter().enumerate() {
            let Some(r) = r else { continue };
            let (side, p) = (i / 3, i % 3);
            let plane = match (side, p, &host.chroma) {
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
        self.sums(rb, fetch, Some((&rp, &dp)))
    }

    /// [`Plan::scores`] of a frame whose planes the host does not have (they were uploaded
    /// from the caller's memory: [`Plan::reads_host_planes`]): the checks are the geometry's,
    /// made once ([`Plan::check_geometry`]).
    pub fn scores_of_host_frame(&self, rb: &[u8], fetch: &Fetch<'_>) -> Result<CompanionScores> {
        match &self.geometry_check {
            Some(r) => r.clone()?,
            None => {
                return Err(Error::Backend(
                    "CUDA companions: a host frame's plan without its geometry check".into(),
                ));
            }
        }
        self.sums(rb, fetch, None)
    }

    /// Whether frames of this plan can be computed from planes that only the GPU has: every
    /// sum is the GPU's or comes from the device's terms (PSNR's host fallback for rows too
    /// wide for 32-bit sums reads the planes).
    pub fn reads_host_planes(&self) -> bool {
        !self.geom.companions.psnr || (0..self.geom.planes()).all(|p| self.psnr[p].is_some())
    }

    /// Set [`Plan::scores_of_host_frame`]'s checks: [`Plan::scores`]' checks on planes of the
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
        Ok(())
    }

    /// The scores from the read-back results and the device's terms, after [`Plan::check`].
    /// `planes`: the frame's planes (reference, distorted sides) where the host has them, for
    /// PSNR sums the GPU leaves to the host.
    fn sums(
        &self,
        rb: &[u8],
        fetch: &Fetch<'_>,
        planes: Option<(&[Plane<'_>], &[Plane<'_>])>,
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
        }
        let mut tasks: Vec<Task<'_, Result<Part>>> = Vec::new();
        let mut hvs_direct = [None; 3];
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

        let mut out = CompanionScores::default();
        let mut hvs = hvs_direct.map(|v| v.unwrap_or(0.0));
        for part in run_parallel(tasks)? {
            match part? {
                Part::Light(v) => out = *v,
                Part::Hvs(p, v) => hvs[p] = v,
            }
        }
        if c.psnr_hvs {
            out.psnr_hvs = Some(psnr_hvs::scores(hvs));
        }
        Ok(out)
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

/// Independent work for [`run_parallel`].
type Task<'a, T> = Box<dyn FnOnce() -> T + Send + 'a>;

/// Run independent tasks at once: the first on the calling thread, the others on scoped
/// threads (on the calling thread where no thread can be started). Results in task order; a
/// task that panicked is an error, not a panic of the caller.
fn run_parallel<'a, T: Send>(tasks: Vec<Task<'a, T>>) -> Result<Vec<T>> {
    use std::sync::Mutex;
    let cells: Vec<Mutex<Option<Task<'a, T>>>> =
        tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let take = |c: &Mutex<Option<Task<'a, T>>>| c.lock().ok().and_then(|mut g| g.take());
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

impl Drop for CompanionGpu {
    fn drop(&mut self) {
        // Readbacks may still be writing into the pinned buffers about to be freed, and the
        // scoring threads reading them: the buffers are freed here, in this context's thread.
        self.clear();
        self.feeder = None;
        if let Some(t) = self.feeder_thread.take() {
            let _ = t.join();
        }
    }
}

/// The compiled companion kernels, once per process.
static PTX: OnceLock<std::result::Result<cudarc::nvrtc::Ptx, String>> = OnceLock::new();

/// Compile [`SOURCE`] with NVRTC for `arch` (e.g. "compute_90"), with the options of the
/// backend's kernels ([`super::launcher::compile_source`]). Needs only libnvrtc.
pub fn compile_ptx(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    super::launcher::compile_source(SOURCE, "vmafgpu_companions.cu", arch)
}

fn arch_of(ctx: &Arc<CudaContext>) -> Result<&'static str> {
    let (major, minor) = ctx.compute_capability().map_err(be("compute capability"))?;
    Ok(super::launcher::arch_name(major, minor))
}

/// Frames that can be pending at once ([`CompanionGpu::submit`]): at least the backend's
/// frames in flight plus one, at most [`MAX_RING`], as many as [`RING_PINNED_BYTES`] of
/// page-locked memory (a 1080p 4:2:0 8-bit frame: ~6 MB of staged planes, a few hundred KB read
/// back) and [`RING_DEVICE_BYTES`] of device memory (its planes and per-pixel terms, ~90 MB
/// with all five metrics) hold. Deep enough that the GPU works on several frames while earlier
/// ones are finished.
pub const MIN_RING: usize = super::SLOTS + 1;
pub const MAX_RING: usize = 12;
pub const RING_PINNED_BYTES: usize = 768 << 20;
/// Device memory for the frames' own planes and results (mostly MS-SSIM's per-pixel terms:
/// ~90 MB a frame at 1080p with all five metrics).
pub const RING_DEVICE_BYTES: usize = 1 << 30;

/// Ring buffers for frames of `pinned` bytes of staging and readback and `device` bytes of
/// results on the device (each frame in flight has its own).
pub fn ring_len(pinned: usize, device: usize) -> usize {
    (RING_PINNED_BYTES / pinned.max(1))
        .min(RING_DEVICE_BYTES / device.max(1))
        .clamp(MIN_RING, MAX_RING)
}

/// One frame's host memory, page-locked so that copies run at DMA speed instead of through the
/// driver's bounce buffer: the planes to upload (copied in by host threads), the readback (the
/// GPU's sums: well under 1 MB a frame at 1080p), and the events that order a frame's uploads,
/// kernels and readback on their streams.
struct RingBuf {
    /// Page-locked staging for the planes copied in from the host: `staging_bytes` (every
    /// input plane), allocated when a frame first stages something. Frames from pinned memory
    /// (the element's pool) are uploaded from where they are and never need it; page-locking
    /// every ring buffer's staging up front took 50-170 ms before a geometry's first frame
    /// (1080p 8-bit to 4K 10-bit, all five metrics).
    staging: Option<super::Pinned>,
    staging_bytes: usize,
    readback: super::Pinned,
    /// The frame's launches captured as graphs (`None`: launched one by one).
    graphs: Option<SlotGraphs>,
    /// Recorded after the frame's uploads, and after each metric's kernels.
    up: CudaEvent,
    metric: Vec<CudaEvent>,
    done: CudaEvent,
    /// Which copy of the plan's results the frame uses ([`Plan::device_offset`]).
    slot: usize,
}

impl RingBuf {
    /// The first `bytes` bytes of staging (allocated on first use).
    fn staging_mut(&mut self, bytes: usize) -> Result<&mut [u8]> {
        if bytes > self.staging_bytes {
            return Err(Error::Backend(format!(
                "CUDA companions: {bytes} bytes to stage in a ring buffer of {}",
                self.staging_bytes
            )));
        }
        let staging = match &mut self.staging {
            Some(s) => s,
            s => s.insert(super::Pinned::new(self.staging_bytes, true)?),
        };
        Ok(staging.slice_mut(0, bytes))
    }
}

/// An instantiated CUDA graph: a fixed series of launches queued with one call.
struct Graph(CudaGraph);

// SAFETY: a CUgraphExec is a driver handle, usable from any thread with its context current
// (CudaGraph::launch binds it); the driver API is thread-safe, and the ring buffer that holds
// the graph is used by one thread at a time (its lock).
unsafe impl Send for Graph {}

/// A ring buffer's launches as graphs, captured once per geometry (the launches' arguments
/// depend only on the plan and the buffer's results slot): what the upload stream runs after
/// the frame's uploads (zeroing, widening), and each metric's kernels on its stream. One call
/// each instead of one per launch: the feeder thread's driver calls a frame go from about 75
/// to about 30 (PSNR-HVS alone has 13 launches, MS-SSIM 20).
struct SlotGraphs {
    prep: Graph,
    metric: Vec<Option<Graph>>,
}

/// Whether the launches are captured as graphs (VMAFGPU_COMPANION_GRAPHS=0: launched one by
/// one, a switch for measurements).
fn scratch_sets_from_env() -> usize {
    std::env::var("VMAFGPU_COMPANION_SCRATCH_SETS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(DEFAULT_SCRATCH_SETS)
        .clamp(1, MAX_SCRATCH_SETS)
}

fn graphs_from_env() -> bool {
    std::env::var("VMAFGPU_COMPANION_GRAPHS").as_deref() != Ok("0")
}

/// Capture what `queue` puts on `stream` as a graph. On failure the capture is ended (the
/// stream usable again) and the error returned.
fn capture(stream: &Arc<CudaStream>, queue: impl FnOnce() -> Result<()>) -> Result<Graph> {
    stream
        .begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
        .map_err(be("cuStreamBeginCapture"))?;
    let queued = queue();
    // (The graphs allocate nothing: the flag, the one every CUDA version has, changes nothing.)
    let flags = cudarc::driver::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
    let ended = stream.end_capture(flags).map_err(be("cuStreamEndCapture"));
    queued?;
    match ended? {
        Some(g) => Ok(Graph(g)),
        None => Err(Error::Backend("CUDA companions: an empty graph".into())),
    }
}

/// Queue the zeroing of the frame's accumulators and the launches that prepare its planes
/// (after the uploads) on `stream`, for the frame in `slot`.
fn queue_prep(
    k: &Launcher,
    stream: &CudaStream,
    plan: &Plan,
    base: u64,
    slot: usize,
) -> Result<()> {
    for r in &plan.zero {
        // SAFETY: the region lies in the arena (the plan's), for this slot's copy of the
        // results (device_offset), inside the allocation of device_bytes(ring) bytes.
        unsafe {
            result::memset_d8_async(
                base + plan.device_offset(*r, slot) as u64,
                0,
                r.bytes,
                stream.cu_stream(),
            )
        }
        .map_err(be("cuMemsetD8Async"))?;
    }
    for l in &plan.prep {
        launch(k, stream, plan, base, slot, l)?;
    }
    Ok(())
}

/// Queue metric `m`'s launches (an index into `METRICS`) on `stream`, for the frame in `slot`.
fn queue_metric(
    k: &Launcher,
    stream: &CudaStream,
    plan: &Plan,
    base: u64,
    slot: usize,
    m: usize,
) -> Result<()> {
    for (l, _) in plan
        .launches
        .iter()
        .zip(&plan.metric_streams)
        .filter(|(_, i)| **i == m)
    {
        launch(k, stream, plan, base, slot, l)?;
    }
    Ok(())
}

/// Capture slot `slot`'s graphs ([`SlotGraphs`]).
fn capture_slot(k: &Launcher, plan: &Plan, base: u64, slot: usize) -> Result<SlotGraphs> {
    let prep = capture(&k.stream, || queue_prep(k, &k.stream, plan, base, slot))?;
    let mut metric = Vec::with_capacity(METRICS.len());
    for (m, s) in k.metric_set(plan.scratch_set(slot)).iter().enumerate() {
        metric.push(if plan.metrics_used[m] {
            Some(capture(s, || queue_metric(k, s, plan, base, slot, m))?)
        } else {
            None
        });
    }
    Ok(SlotGraphs { prep, metric })
}

/// A ring buffer, locked by whoever uses it: the feeder while it stages and queues a frame,
/// then that frame's scoring thread until its sums are done. [`CompanionGpu::submit`] hands a
/// buffer to a new frame only once its previous frame's scores are in, so neither waits.
type Readback = Arc<Mutex<RingBuf>>;

/// Where a frame's scores land: filled by its scoring thread (or by the feeder on an error).
#[derive(Default)]
struct Outcome {
    /// The scores and when they were set (for [`Stage::ToOwner`]).
    scores: Mutex<Option<(Result<CompanionScores>, std::time::Instant)>>,
    ready: Condvar,
}

impl Outcome {
    fn set(&self, r: Result<CompanionScores>) {
        *self.scores.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((r, std::time::Instant::now()));
        self.ready.notify_all();
    }

    fn is_set(&self) -> bool {
        self.scores
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    fn wait(&self) -> (Result<CompanionScores>, std::time::Instant) {
        let mut g = self.scores.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            g = self.ready.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// One frame for the feeder thread: everything it needs to stage and queue the frame and to
/// start its scoring thread.
struct Feed {
    /// When `submit` handed it over (for [`Stage::ToFeeder`]).
    submitted: std::time::Instant,
    job: FrameJob,
    /// The planes in the caller's memory, when the job's own carry only the geometry.
    host: Option<HostFrame>,
    plan: Arc<Plan>,
    base: u64,
    rb: Readback,
    outcome: Arc<Outcome>,
    /// The luma planes came from VMAF's device buffers ([`DeviceLuma`]): recorded, on VMAF's
    /// stream, after their widening into this frame's planes. The feeder uploads the other
    /// planes only, and the frame's kernels wait for it.
    luma: Option<Arc<CudaEvent>>,
}

/// The metrics, in the order of [`Launcher::metric`]'s streams ([`Launch::metric`]).
const METRICS: [&str; 5] = ["psnr", "ssim", "ms_ssim", "ciede", "psnr_hvs"];

/// Scratch copies a geometry gets by default where the device has the memory (else one):
/// consecutive frames' kernels of one metric at once. MS-SSIM's five levels one after the
/// other take 0.35 ms a frame on one stream at 1080p, PSNR-HVS's serial sum 0.2 ms: with one
/// set, each metric's chain of kernels was one frame at a time, a limit of its own beside the
/// GPU's throughput. All five at 1080p 8-bit through the element (H200, steady frames/s):
/// 1 set 1622, 2 sets 1711, 3 sets 1737, 4 sets 1732 (BENCHMARKS.md).
pub const DEFAULT_SCRATCH_SETS: usize = 3;

/// The most scratch copies ([`CompanionGpu::set_scratch_sets`], VMAFGPU_COMPANION_SCRATCH_SETS).
pub const MAX_SCRATCH_SETS: usize = 4;

impl Launcher {
    /// The metric streams of scratch set `set`.
    fn metric_set(&self, set: usize) -> &[Arc<CudaStream>] {
        &self.metric[set * METRICS.len()..(set + 1) * METRICS.len()]
    }
}

fn metric_index(m: &str) -> usize {
    METRICS
        .iter()
        .position(|x| *x == m)
        .expect("every launch names one of METRICS")
}

/// What the feeder launches with: the kernels and the streams. A frame's uploads go on
/// `stream`, each metric's kernels on that metric's stream of the frame's scratch set (after
/// the upload; the metrics of a frame run at once, and each copy of a metric's scratch is used
/// in frame order by the frames of its set: [`Plan::scratch_set`]), and the readback on
/// `readback` after every metric's kernels. Each frame has its own planes and results on the
/// device ([`Plan::device_offset`]), so the next frame's upload need not wait for this frame's
/// kernels.
struct Launcher {
    stream: Arc<CudaStream>,
    /// [`MAX_SCRATCH_SETS`] sets of one stream per metric (`METRICS` order), set after set.
    metric: Vec<Arc<CudaStream>>,
    readback: Arc<CudaStream>,
    funcs: Vec<CudaFunction>,
}

/// Per-geometry device state.
struct Frame {
    plan: Arc<Plan>,
    _arena: CudaSlice<u8>,
    base: u64,
    /// [`ring_len`] ring buffers, each locked by the frame using it (see [`Readback`]).
    readbacks: Vec<Readback>,
    /// One a ring buffer: recorded on VMAF's stream after a frame's luma planes were widened
    /// from VMAF's buffers into the ring buffer's planes ([`Feed::luma`]); outside the buffer's
    /// lock, so that the worker records it without taking the lock.
    luma_widened: Vec<Arc<CudaEvent>>,
    next: usize,
}

/// A submitted frame: where its scores will be.
struct Pending {
    ticket: u64,
    outcome: Arc<Outcome>,
}

/// Wait for a frame's readback, then its scores (on the frame's scoring thread). Terms the
/// scores need from the device are copied from the frame's own results (its slot), which no
/// other frame writes while this one holds the ring buffer.
fn score_frame(
    ctx: &Arc<CudaContext>,
    plan: &Plan,
    base: u64,
    rb: &RingBuf,
    job: &FrameJob,
    host_frame: bool,
    queued: std::time::Instant,
) -> Result<CompanionScores> {
    rb.done.synchronize().map_err(be("cuEventSynchronize"))?;
    let gpu_done = feeder_add(Stage::Gpu, queued);
    let slot = rb.slot;
    let fetch = |r: Region| -> Result<Vec<u8>> {
        ctx.bind_to_thread().map_err(be("bind context"))?;
        let mut v = vec![0u8; r.bytes];
        let off = plan.device_offset(r, slot);
        if off + r.bytes > plan.device_bytes(slot + 1) {
            return Err(Error::Backend(format!(
                "CUDA companions: {r:?} of slot {slot} beyond the device buffer"
            )));
        }
        // SAFETY: the region lies in the device allocation (checked above: the allocation
        // holds at least slot + 1 copies of the results); its writes completed (`done`); `v`
        // has exactly r.bytes bytes.
        unsafe { result::memcpy_dtoh_sync(&mut v[..], base + off as u64) }
            .map_err(be("read back terms"))?;
        Ok(v)
    };
    let rb = rb.readback.slice(0, plan.readback.bytes);
    let r = if host_frame {
        plan.scores_of_host_frame(rb, &fetch)
    } else {
        plan.scores(job, rb, &fetch)
    };
    feeder_add(Stage::Scoring, gpu_done);
    r
}

/// The feeder thread: frames in submission order, each staged and queued on the stream (one
/// stream and one arena: a frame's kernels run after the previous frame's readback), then
/// scored on a thread of its own. Ends when the sender is dropped.
fn feed(ctx: Arc<CudaContext>, launcher: Arc<Launcher>, rx: Receiver<Feed>) {
    let bound = ctx.bind_to_thread().map_err(be("bind context"));
    // Staging is memory-bound: up to 8 threads with this one (the worker stages VMAF's planes
    // at the same time with its own).
    let pool = super::StagePool::new(super::stage_threads().min(8) - 1);
    for f in rx {
        let t0 = feeder_add(Stage::ToFeeder, f.submitted);
        FEEDER_NS[Stage::Frames as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let queued = match &bound {
            Ok(()) => {
                let mut rb = f.rb.lock().unwrap_or_else(|e| e.into_inner());
                feeder_add(Stage::RingWait, t0);
                let r = enqueue(&launcher, &pool, &mut rb, &f);
                if r.is_err() {
                    // What was queued may still run: let it finish before the buffers are
                    // reused.
                    let _ = ctx.synchronize();
                }
                r
            }
            Err(e) => Err(e.clone()),
        };
        let direct = match queued {
            Ok(d) => d,
            Err(e) => {
                // As on the scoring threads: the buffers' references go before the outcome.
                let Feed {
                    job,
                    host,
                    plan,
                    rb,
                    outcome,
                    ..
                } = f;
                drop((job, host, plan, rb));
                outcome.set(Err(e));
                continue;
            }
        };
        let Feed {
            job,
            mut host,
            plan,
            base,
            rb,
            outcome,
            ..
        } = f;
        let host_frame = host.is_some();
        if !direct {
            // Copied into staging: the caller's buffers can go now.
            host = None;
        }
        let t_spawn = std::time::Instant::now();
        let for_thread = Arc::clone(&outcome);
        let ctx = Arc::clone(&ctx);
        let spawned = std::thread::Builder::new()
            .name("vmafgpu-scores".into())
            .spawn(move || {
                // The buffers' references go before the scores are published: the owner may
                // free the ring buffers (pinned memory) as soon as every frame's scores are in,
                // and must be the one that does (its thread has the context).
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                    let guard = rb.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(h) = host {
                        // Uploaded from where they are: the caller's buffers go once the
                        // uploads are through (not at the scores: a decoder's pool may be
                        // small). Should the wait fail, they go with the context's work.
                        if guard.up.synchronize().is_err() {
                            let _ = ctx.synchronize();
                        }
                        drop(h);
                    }
                    let r = score_frame(&ctx, &plan, base, &guard, &job, host_frame, t_spawn);
                    drop(guard);
                    drop((rb, plan, job));
                    r
                }))
                .unwrap_or_else(|_| {
                    Err(Error::Backend(
                        "CUDA companions: a scoring thread panicked".into(),
                    ))
                });
                for_thread.set(r);
            });
        feeder_add(Stage::Spawn, t_spawn);
        if let Err(e) = spawned {
            // No thread to be had: the frame is not scored (its scores say why).
            outcome.set(Err(Error::Backend(format!(
                "CUDA companions: cannot start a scoring thread: {e}"
            ))));
        }
    }
}

/// Queue one launch on `stream`, for the frame in `slot`.
fn launch(
    k: &Launcher,
    stream: &CudaStream,
    plan: &Plan,
    base: u64,
    slot: usize,
    l: &Launch,
) -> Result<()> {
    // SAFETY: no pointer replaced: every pointer is the region's in the arena (see
    // launch_reading).
    unsafe { launch_reading(k, stream, plan, base, slot, l, None) }
}

/// [`launch`], the kernel's first argument (a pointer) replaced by `first` where given.
///
/// # Safety
/// `first` must point at device memory of the launch's context holding what the kernel reads
/// there for the sizes of the launch (the region the launch names would hold), alive and not
/// written until the kernel has run.
unsafe fn launch_reading(
    k: &Launcher,
    stream: &CudaStream,
    plan: &Plan,
    base: u64,
    slot: usize,
    l: &Launch,
    first: Option<u64>,
) -> Result<()> {
    let ptrs: Vec<u64> = l
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| match (a, first) {
            (KArg::Ptr(_), Some(p)) if i == 0 => p,
            (KArg::Ptr(r), _) => base + plan.device_offset(*r, slot) as u64,
            _ => 0,
        })
        .collect();
    let mut b = stream.launch_builder(&k.funcs[l.kernel as usize]);
    for (a, p) in l.args.iter().zip(&ptrs) {
        match a {
            KArg::Ptr(_) => b.arg(p),
            KArg::I32(v) => b.arg(v),
            KArg::F32(v) => b.arg(v),
        };
    }
    let cfg = LaunchConfig {
        grid_dim: (l.grid.0, l.grid.1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments match the kernel's C signature (check_launch at setup, whose
    // table mirrors kernels/*.cu: pointers, int, float). A replaced first pointer holds what
    // its region would (the caller's contract). Every other pointer is the start of a
    // region of the live arena (check_launch: inside the arena; a results region of slot
    // `slot` is in that slot's copy, inside the allocation of device_bytes(ring length) bytes,
    // slot < ring length; the arena outlives every frame queued on it, CompanionGpu::setup
    // waits for them before it frees it), and the launch_*
    // function that built the launch checked that each region holds what the kernel indexes
    // for the sizes passed with it (the kernels guard every access by those sizes).
    unsafe { b.launch(cfg) }.map_err(be(l.kernel.name()))?;
    Ok(())
}

/// Queue frame `f`'s uploads and launches, and the readback into `rb` (whose previous frame
/// has been scored: nobody else reads it). The planes come from the job, or from the caller's
/// memory (`f.host`): copied into staging, or uploaded from where they are when pinned; the
/// luma planes not at all where they are widened from VMAF's copies (`f.luma`: the kernels
/// wait for that event instead). Returns whether an upload reads the caller's memory (then it
/// must stay until `rb.up`).
fn enqueue(k: &Launcher, pool: &super::StagePool, rb: &mut RingBuf, f: &Feed) -> Result<bool> {
    let (plan, base, job, host, luma) =
        (&*f.plan, f.base, &f.job, f.host.as_ref(), f.luma.as_deref());
    let st = k.stream.cu_stream();
    // Planes already on the device (the luma VMAF uploaded, widened from there: Feed::luma).
    let on_device =
        |r: &Region| luma.is_some() && (Some(*r) == plan.staged[0] || Some(*r) == plan.staged[3]);
    // Each plane's region and where its bytes come from: an offset into staging, or the
    // caller's pinned memory.
    let t_stage = std::time::Instant::now();
    let mut staged: Vec<(Region, usize)> = Vec::new();
    let mut direct: Vec<(Region, &HostPlane)> = Vec::new();
    let mut off = 0;
    match host {
        None => {
            let mut uploads = plan.uploads(job);
            uploads.retain(|(r, _)| !on_device(r));
            let total: usize = uploads.iter().map(|(r, _)| r.bytes).sum();
            let mut rest = if total > 0 {
                rb.staging_mut(total)?
            } else {
                &mut []
            };
            let mut planes = Vec::with_capacity(uploads.len());
            for (r, data) in &uploads {
                let (dst, tail) = std::mem::take(&mut rest).split_at_mut(r.bytes);
                rest = tail;
                staged.push((*r, off));
                off += r.bytes;
                planes.push((*data, dst));
            }
            // Bytes for 8-bit planes, else little-endian u16 samples (a plain copy on x86),
            // all the planes split at once over the feeder's staging threads.
            pool.convert_all(planes, plan.narrow);
        }
        Some(h) => {
            let mut copies = Vec::new();
            for (r, p) in plan.host_uploads(h)? {
                if on_device(&r) {
                    continue;
                }
                // MSB-aligned planes (P010) are shifted while staged.
                if super::uploads_directly(p) && p.shift() == 0 {
                    direct.push((r, p));
                } else {
                    copies.push((r, p));
                }
            }
            let total: usize = copies.iter().map(|(r, _)| r.bytes).sum();
            let mut rest = if total > 0 {
                rb.staging_mut(total)?
            } else {
                &mut []
            };
            let mut planes = Vec::with_capacity(copies.len());
            for (r, p) in copies {
                let (dst, tail) = std::mem::take(&mut rest).split_at_mut(r.bytes);
                rest = tail;
                staged.push((r, off));
                off += r.bytes;
                planes.push((p, dst));
            }
            // The rows as they are (bytes at 8 bits, little-endian u16 above).
            pool.copy_rows_all(planes, true);
        }
    }
    let t_queue = feeder_add(Stage::Staging, t_stage);
    // SAFETY: every copy stays inside the arena (the plan's regions; the staged planes are
    // exactly region-sized: Geometry::of checked the job's plane lengths, host_uploads the
    // host planes' sizes) and inside the ring buffer (staging holds every input region,
    // readback readback.bytes). Both host buffers are left alone until this frame's `done`
    // event completed: the buffer's lock is held by this frame until its scoring thread, which
    // waits for `done`, is through. Direct uploads read the caller's planes (HostPlane::new
    // checked that their rows lie in their owners' bytes), which the feeder keeps until `up`.
    let at = |r: &Region| base + plan.device_offset(*r, rb.slot) as u64;
    unsafe {
        for (r, off) in &staged {
            let src = rb
                .staging
                .as_ref()
                .ok_or_else(|| Error::Backend("CUDA companions: staging not allocated".into()))?
                .slice(*off, r.bytes);
            result::memcpy_htod_async(at(r), src, st).map_err(be("upload"))?;
        }
        for (r, p) in &direct {
            super::upload_2d(p, at(r), st)?;
        }
    }
    match luma {
        // The luma planes widened on VMAF's stream, from VMAF's copy: before the kernels.
        Some(e) => k.stream.wait(e).map_err(be("cuStreamWaitEvent"))?,
        None => {
            for l in &plan.prep_luma {
                launch(k, &k.stream, plan, base, rb.slot, l)?;
            }
        }
    }
    let ev = be("cuEventRecord");
    let graphs = rb.graphs.as_ref();
    match graphs {
        Some(g) => g.prep.0.launch().map_err(be("cuGraphLaunch"))?,
        None => queue_prep(k, &k.stream, plan, base, rb.slot)?,
    }
    rb.up.record(&k.stream).map_err(be("cuEventRecord"))?;
    let used = &plan.metrics_used;
    let streams = k.metric_set(plan.scratch_set(rb.slot));
    for (i, s) in streams.iter().enumerate() {
        if !used[i] {
            continue;
        }
        s.wait(&rb.up).map_err(be("cuStreamWaitEvent"))?;
        match graphs.and_then(|g| g.metric[i].as_ref()) {
            Some(g) => g.0.launch().map_err(be("cuGraphLaunch"))?,
            None => queue_metric(k, s, plan, base, rb.slot, i)?,
        }
    }
    k.readback.wait(&rb.up).map_err(be("cuStreamWaitEvent"))?;
    for (i, s) in streams.iter().enumerate() {
        if used[i] {
            rb.metric[i].record(s).map_err(be("cuEventRecord"))?;
            k.readback
                .wait(&rb.metric[i])
                .map_err(be("cuStreamWaitEvent"))?;
        }
    }
    let n = plan.readback.bytes;
    if n > 0 {
        // SAFETY: readback has exactly readback.bytes bytes; the region is in the arena; the
        // readback stream waits for every kernel of the frame (the events above).
        unsafe {
            result::memcpy_dtoh_async(
                rb.readback.slice_mut(0, n),
                at(&plan.readback),
                k.readback.cu_stream(),
            )
            .map_err(be("read back"))?;
        }
    }
    rb.done.record(&k.readback).map_err(ev)?;
    feeder_add(Stage::Queueing, t_queue);
    Ok(!direct.is_empty())
}

/// A frame's 8-bit luma planes where VMAF's kernels read them: the backend's device buffers
/// (compact rows of bytes), filled by uploads queued on `stream`.
/// [`CompanionGpu::submit_sharing_luma`] widens them from there into the frame's u16 planes,
/// on that stream (the widening the companions do anyway), instead of uploading the planes a
/// second time over PCIe (2 x 2 MB a pair at 1080p).
pub struct DeviceLuma<'a> {
    pub reference: u64,
    pub distorted: u64,
    /// The planes' bytes in those buffers (width x height).
    pub bytes: usize,
    /// The stream the uploads into the buffers are queued on: the widening goes there after
    /// them, so that the buffers' next uploads (on the same stream) come after it.
    pub stream: &'a CudaStream,
}

/// Whether the luma planes VMAF uploaded are taken from VMAF's copy rather than uploaded again:
/// 8-bit planes widened, deeper ones copied (MSB-aligned ones, P010, as VMAF's kernel shifted
/// them). The default; VMAFGPU_COMPANION_DEVICE_LUMA=0 uploads them again: the same scores.
fn device_luma() -> bool {
    std::env::var("VMAFGPU_COMPANION_DEVICE_LUMA").as_deref() != Ok("0")
}

/// Queue the widening of `l`'s planes into the luma planes of ring buffer `ring` of `f` on
/// `l.stream` (the plan's `prep_luma` launches, reading VMAF's buffers), or with `copy` their
/// copy (2-byte samples, as VMAF's kernels read them), and record the ring buffer's
/// `luma_widened` event after them. `None` (nothing queued) where the plan's luma planes are
/// not planes of `l`'s size, 8-bit ones unless `copy`: they are uploaded then.
fn widen_luma(
    k: &Launcher,
    f: &Frame,
    ring: usize,
    l: &DeviceLuma<'_>,
    copy: bool,
) -> Result<Option<Arc<CudaEvent>>> {
    let plan = &*f.plan;
    // Ring buffer i uses results slot i (setup).
    let slot = ring;
    if !plan.narrow {
        let (Some(r), Some(d)) = (plan.staged[0], plan.staged[3]) else {
            return Ok(None);
        };
        if !copy || r.bytes != l.bytes || d.bytes != l.bytes {
            return Ok(None);
        }
        for (to, src) in [(r, l.reference), (d, l.distorted)] {
            let dst = f.base + plan.device_offset(to, slot) as u64;
            // SAFETY: copies l.bytes bytes from VMAF's buffer, which holds them (DeviceLuma's
            // contract), on its stream after their upload (and shift) and before the buffer's
            // next upload (same stream), into the u16 luma plane of ring buffer `slot` (a
            // region of l.bytes bytes inside the live arena), which no other frame uses: as
            // for the widening below.
            unsafe { result::memcpy_dtod_async(dst, src, l.bytes, l.stream.cu_stream()) }
                .map_err(be("copy VMAF's luma plane"))?;
        }
        let ev = &f.luma_widened[ring];
        ev.record(l.stream).map_err(be("cuEventRecord"))?;
        return Ok(Some(Arc::clone(ev)));
    }
    let sized = |w: &Launch| matches!(w.args.get(1), Some(KArg::I32(n)) if *n as usize == l.bytes);
    if plan.prep_luma.len() != 2 || !plan.prep_luma.iter().all(sized) {
        return Ok(None);
    }
    for (w, src) in plan.prep_luma.iter().zip([l.reference, l.distorted]) {
        debug_assert_eq!(w.kernel, Kernel::WidenU8);
        // SAFETY: widen_u8 reads n = l.bytes bytes at its first pointer (`sized` above): VMAF's
        // buffer holds them (DeviceLuma's contract), on this stream after their upload and
        // before the buffer's next upload (same stream). It writes the frame's u16 plane of
        // ring buffer `slot`, which no other frame uses: its previous frame's scores are in
        // (submit_with waits for the oldest pending frame before a ring buffer is handed out
        // again), so its kernels are through, and this frame's kernels wait for `luma_widened`.
        unsafe { launch_reading(k, l.stream, plan, f.base, slot, w, Some(src)) }?;
    }
    let ev = &f.luma_widened[ring];
    ev.record(l.stream).map_err(be("cuEventRecord"))?;
    Ok(Some(Arc::clone(ev)))
}

/// The companion metrics on one CUDA context: their own streams, kernels and buffers (allocated
/// once per geometry, reused for every frame of that geometry).
///
/// Frames are pipelined: [`CompanionGpu::submit`] hands a frame to the feeder thread, which
/// copies its planes into a page-locked ring buffer, queues its uploads, kernels and readback
/// and starts a thread that waits for the readback and finishes the scores; submit
/// returns a ticket at once, and [`CompanionGpu::take`] waits for that frame's scores. The
/// caller (the backend's worker) thus spends no time per frame on the companion metrics, the
/// GPU works on later frames meanwhile (uploads, each metric's kernels and readbacks on
/// streams of their own, ordered by events: see [`Launcher`]), and the scores of up to
/// [`ring_len`] frames are finished at once.
pub struct CompanionGpu {
    ctx: Arc<CudaContext>,
    launcher: Arc<Launcher>,
    frame: Option<Frame>,
    pending: std::collections::VecDeque<Pending>,
    finished: std::collections::VecDeque<(u64, Result<CompanionScores>)>,
    next_ticket: u64,
    feeder: Option<Sender<Feed>>,
    feeder_thread: Option<std::thread::JoinHandle<()>>,
    ciede_table: CiedeTable,
    /// Capture each ring buffer's launches as graphs ([`SlotGraphs`]).
    graphs: bool,
    /// Scratch copies wanted ([`Plan::scratch_sets`]).
    scratch_sets: usize,
}

impl CompanionGpu {
    /// Load the companion kernels (compiled once per process) on `ctx`, create a stream and
    /// start the feeder thread. The calling thread must have `ctx` bound (as the backend's
    /// worker does).
    pub fn new(ctx: &Arc<CudaContext>) -> Result<CompanionGpu> {
        ctx.bind_to_thread().map_err(be("bind context"))?;
        let arch = arch_of(ctx)?;
        let ptx = match PTX.get_or_init(|| compile_ptx(arch).map_err(|e| e.to_string())) {
            Ok(p) => p.clone(),
            Err(e) => return Err(Error::Backend(e.clone())),
        };
        let module = ctx.load_module(ptx).map_err(be("cuModuleLoadData"))?;
        let funcs = Kernel::ALL
            .iter()
            .map(|k| module.load_function(k.name()).map_err(be(k.name())))
            .collect::<Result<Vec<_>>>()?;
        let new_stream = || ctx.new_stream().map_err(be("cuStreamCreate"));
        let launcher = Arc::new(Launcher {
            stream: new_stream()?,
            metric: (0..MAX_SCRATCH_SETS * METRICS.len())
                .map(|_| new_stream())
                .collect::<Result<_>>()?,
            readback: new_stream()?,
            funcs,
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let (c, l) = (Arc::clone(ctx), Arc::clone(&launcher));
        let feeder_thread = std::thread::Builder::new()
            .name("vmafgpu-companions".into())
            .spawn(move || feed(c, l, rx))
            .map_err(|e| Error::Backend(format!("CUDA companions: cannot start a thread: {e}")))?;
        Ok(CompanionGpu {
            ctx: ctx.clone(),
            launcher,
            frame: None,
            pending: Default::default(),
            finished: Default::default(),
            next_ticket: 0,
            feeder: Some(tx),
            feeder_thread: Some(feeder_thread),
            ciede_table: CiedeTable::from_env(),
            graphs: graphs_from_env(),
            scratch_sets: scratch_sets_from_env(),
        })
    }

    /// Give each geometry `n` copies of the metrics' scratch (1 to [`MAX_SCRATCH_SETS`]; the
    /// default is [`DEFAULT_SCRATCH_SETS`], unless VMAFGPU_COMPANION_SCRATCH_SETS says
    /// otherwise), from the next geometry set up. The same scores either way.
    pub fn set_scratch_sets(&mut self, n: usize) {
        let n = n.clamp(1, MAX_SCRATCH_SETS);
        if self.scratch_sets != n {
            self.scratch_sets = n;
            self.drop_frame();
        }
    }

    /// The current geometry's scratch copies (0 before the first frame).
    pub fn scratch_sets(&self) -> usize {
        self.frame.as_ref().map_or(0, |f| f.plan.scratch_sets)
    }

    /// Launch the kernels as captured graphs (the default, unless VMAFGPU_COMPANION_GRAPHS=0)
    /// or one by one (from the next geometry set up). Either way the same kernels with the same
    /// arguments in the same order on each stream.
    pub fn set_graphs(&mut self, on: bool) {
        if self.graphs != on {
            self.graphs = on;
            self.drop_frame();
        }
    }

    /// Whether the current geometry's frames are launched as graphs (`false` before the
    /// first frame, with graphs off, or where the driver could not capture them). A diagnostic:
    /// it waits for the frames in flight (their ring buffers).
    pub fn uses_graphs(&self) -> bool {
        self.frame.as_ref().is_some_and(|f| {
            f.readbacks.iter().all(|rb| {
                rb.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .graphs
                    .is_some()
            })
        })
    }

    /// Use CIEDE2000's colour-conversion table as `table` says (from the next geometry set
    /// up; the default is [`CiedeTable::from_env`]).
    pub fn set_ciede_table(&mut self, table: CiedeTable) {
        if self.ciede_table != table {
            self.ciede_table = table;
            self.drop_frame();
        }
    }

    /// Finish the frames pending (they read the current geometry's buffers: a frame's scores
    /// are in only after its readback completed), then free those buffers.
    fn drop_frame(&mut self) {
        while !self.pending.is_empty() {
            self.finish_oldest();
        }
        self.frame = None;
    }

    /// Make sure the buffers fit `geom` (reallocated only when the geometry changes).
    fn setup(&mut self, geom: Geometry) -> Result<()> {
        if self.frame.as_ref().is_some_and(|f| f.plan.geom == geom) {
            return Ok(());
        }
        self.drop_frame();
        let t0 = std::time::Instant::now();
        SETUP_NS[SetupStage::Geometries as usize]
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stream = &self.launcher.stream;
        let mut plan = Plan::with_ciede_table(geom, self.ciede_table);
        let alloc = |plan: &Plan| {
            let staged: usize = plan.staged.iter().flatten().map(|r| r.bytes).sum();
            let ring = ring_len(staged + plan.readback.bytes, plan.slot_stride());
            let arena = stream.alloc_zeros::<u8>(plan.device_bytes(ring));
            (ring, staged, arena)
        };
        plan.scratch_sets = self.scratch_sets;
        let (mut ring, mut staged, mut arena) = alloc(&plan);
        if arena.is_err() && plan.scratch_sets > 1 {
            // No room for a second scratch set: one (the same scores, a frame at a time per
            // metric).
            plan.scratch_sets = 1;
            (ring, staged, arena) = alloc(&plan);
        }
        if arena.is_err() && !plan.setup.is_empty() {
            // No room for CIEDE2000's table: without it (the same scores, computed).
            plan = Plan::with_ciede_table(geom, CiedeTable::Off);
            (ring, staged, arena) = alloc(&plan);
        }
        let arena = arena.map_err(be("cuMemAlloc"))?;
        // A diagnostic (tests, benchmarks): add every SSIM, MS-SSIM and PSNR-HVS sum from the
        // terms.
        plan.host_sums = std::env::var("VMAFGPU_COMPANION_SUMS").as_deref() == Ok("host");
        plan.check_geometry();
        for l in plan
            .setup
            .iter()
            .chain(&plan.prep)
            .chain(&plan.prep_luma)
            .chain(&plan.launches)
        {
            check_launch(l, plan.arena)?;
        }
        let base = {
            let (p, _sync) = arena.device_ptr(stream);
            p
        };
        let t_tables = setup_add(SetupStage::Arena, t0);
        for (r, bytes) in &plan.tables {
            // SAFETY: the table region has exactly bytes.len() bytes in the arena; the copy
            // from pageable memory has read `bytes` when the call returns.
            unsafe {
                result::memcpy_htod_async(base + r.off as u64, &bytes[..], stream.cu_stream())
            }
            .map_err(be("upload tables"))?;
        }
        // Tables the GPU fills, on the upload stream: before any frame's uploads, so before
        // its kernels.
        for l in &plan.setup {
            launch(&self.launcher, stream, &plan, base, 0, l)?;
        }
        let t_ring = setup_add(SetupStage::Tables, t_tables);
        let readbacks = (0..ring)
            .map(|slot| {
                Ok(Arc::new(Mutex::new(RingBuf {
                    // Written by the host, read only by the GPU.
                    staging: None,
                    staging_bytes: staged,
                    readback: super::Pinned::new(plan.readback.bytes, false)?,
                    graphs: None,
                    // Blocking too: a scoring thread waits for it before it lets the
                    // caller's buffers go (direct uploads).
                    up: self
                        .ctx
                        .new_event(Some(
                            cudarc::driver::sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC,
                        ))
                        .map_err(be("cuEventCreate"))?,
                    metric: METRICS
                        .iter()
                        .map(|_| self.ctx.new_event(None).map_err(be("cuEventCreate")))
                        .collect::<Result<_>>()?,
                    // The scoring thread waits for it: blocking, not spinning (a dozen
                    // frames' threads spinning took the cores the pipeline's threads need).
                    done: self
                        .ctx
                        .new_event(Some(
                            cudarc::driver::sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC,
                        ))
                        .map_err(be("cuEventCreate"))?,
                    slot,
                })))
            })
            .collect::<Result<Vec<_>>>()?;
        let luma_widened = (0..ring)
            .map(|_| {
                Ok(Arc::new(
                    self.ctx.new_event(None).map_err(be("cuEventCreate"))?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let t_graphs = setup_add(SetupStage::Ring, t_ring);
        if self.graphs {
            let captured: Result<Vec<SlotGraphs>> = readbacks
                .iter()
                .map(|rb| {
                    let slot = rb.lock().unwrap_or_else(|e| e.into_inner()).slot;
                    capture_slot(&self.launcher, &plan, base, slot)
                })
                .collect();
            // Without graphs (a driver that cannot capture) the launches go one by one: the
            // same work.
            if let Ok(graphs) = captured {
                for (rb, g) in readbacks.iter().zip(graphs) {
                    rb.lock().unwrap_or_else(|e| e.into_inner()).graphs = Some(g);
                }
            }
        }
        setup_add(SetupStage::Graphs, t_graphs);
        self.frame = Some(Frame {
            plan: Arc::new(plan),
            _arena: arena,
            base,
            readbacks,
            luma_widened,
            next: 0,
        });
        Ok(())
    }

    /// The companion metrics of `job`, computed on the GPU (synchronous). Equal to
    /// [`crate::backend::compute_companions_cpu`], CIEDE2000 within its documented bound.
    pub fn compute(&mut self, job: &FrameJob) -> Result<CompanionScores> {
        let t = self.submit(job)?;
        self.take(t)
    }

    /// Queue `job`'s companion metrics; [`CompanionGpu::take`] with the ticket returned gives
    /// the scores. Waits only when every ring buffer is pending (for the oldest).
    pub fn submit(&mut self, job: &FrameJob) -> Result<u64> {
        self.submit_with(job, None, None)
    }

    /// [`CompanionGpu::submit`] for a job whose planes are in the caller's memory (`host`; the
    /// job's carry only the geometry): they are uploaded from there (copied into staging, or
    /// straight from pinned memory), and the caller's buffers are let go once uploaded.
    pub fn submit_host(&mut self, job: &FrameJob, host: &HostFrame) -> Result<u64> {
        self.submit_with(job, Some(host), None)
    }

    /// [`CompanionGpu::submit`] or [`CompanionGpu::submit_host`] (with `host`) of a frame
    /// whose luma planes VMAF has uploaded already (`luma`): 8-bit planes are widened from
    /// there and deeper ones copied instead of uploaded again (planes of another size are
    /// uploaded as usual).
    pub fn submit_sharing_luma(
        &mut self,
        job: &FrameJob,
        host: Option<&HostFrame>,
        luma: DeviceLuma<'_>,
    ) -> Result<u64> {
        self.submit_with(job, host, Some(luma))
    }

    fn submit_with(
        &mut self,
        job: &FrameJob,
        host: Option<&HostFrame>,
        luma: Option<DeviceLuma<'_>>,
    ) -> Result<u64> {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        if !job.companions.any() {
            self.finished
                .push_back((ticket, Ok(CompanionScores::default())));
            return Ok(ticket);
        }
        let geom = match host {
            Some(h) => Geometry::of_host(job, h)?,
            None => Geometry::of(job)?,
        };
        self.ctx.bind_to_thread().map_err(be("bind context"))?;
        self.setup(geom)?;
        let mut job = job.clone();
        // 2-byte luma: copied from VMAF's copy on the GPU instead of uploaded again (P010: VMAF's
        // copy holds it shifted, staging would shift it again; every 10-bit format: half the
        // PCIe traffic, which limits the lighter metric sets).
        let copy = job.reference.bpc > 8;
        let host = match host {
            // A plan that sums something from the planes on the host: give it compact copies.
            Some(h)
                if !self
                    .frame
                    .as_ref()
                    .expect("set up")
                    .plan
                    .reads_host_planes() =>
            {
                job = h.materialize(job);
                None
            }
            h => h.cloned(),
        };
        if self.pending.len() >= self.ring_len() {
            self.finish_oldest();
        }
        let f = self.frame.as_mut().expect("set up");
        let ring = f.next;
        f.next = (ring + 1) % f.readbacks.len();
        let luma = match luma {
            Some(l) if device_luma() => widen_luma(&self.launcher, f, ring, &l, copy)?,
            _ => None,
        };
        let outcome = Arc::new(Outcome::default());
        let item = Feed {
            submitted: std::time::Instant::now(),
            job,
            host,
            plan: Arc::clone(&f.plan),
            base: f.base,
            rb: Arc::clone(&f.readbacks[ring]),
            outcome: Arc::clone(&outcome),
            luma,
        };
        let sent = self.feeder.as_ref().is_some_and(|tx| tx.send(item).is_ok());
        if !sent {
            return Err(Error::Backend(
                "CUDA companions: the feeder thread has stopped".into(),
            ));
        }
        self.pending.push_back(Pending { ticket, outcome });
        Ok(ticket)
    }

    /// The scores of the frame `ticket` (from [`CompanionGpu::submit`]), waiting for them;
    /// tickets are taken in submission order.
    pub fn take(&mut self, ticket: u64) -> Result<CompanionScores> {
        loop {
            if let Some(i) = self.finished.iter().position(|(t, _)| *t == ticket) {
                let (_, r) = self.finished.remove(i).expect("found just above");
                return r;
            }
            if self.pending.is_empty() {
                return Err(Error::Backend(format!(
                    "CUDA companions: no frame with ticket {ticket}"
                )));
            }
            self.finish_oldest();
        }
    }

    /// How many frames can be pending at once for the current geometry ([`ring_len`];
    /// [`MIN_RING`] before the first frame).
    pub fn ring_len(&self) -> usize {
        self.frame.as_ref().map_or(MIN_RING, |f| f.readbacks.len())
    }

    /// Whether [`CompanionGpu::take`] of `ticket` would return without waiting.
    pub fn is_ready(&self, ticket: u64) -> bool {
        self.finished.iter().any(|(t, _)| *t == ticket)
            || self
                .pending
                .iter()
                .any(|p| p.ticket == ticket && p.outcome.is_set())
    }

    /// Forget every pending frame (a reset): waits for them, drops the results.
    pub fn clear(&mut self) {
        while !self.pending.is_empty() {
            self.finish_oldest();
        }
        let _ = self.ctx.synchronize();
        self.finished.clear();
    }

    /// Wait for the oldest pending frame's scores (kept in `finished` until taken).
    fn finish_oldest(&mut self) {
        let Some(p) = self.pending.pop_front() else {
            return;
        };
        let (r, set_at) = p.outcome.wait();
        feeder_add(Stage::ToOwner, set_at);
        self.finished.push_back((p.ticket, r));
    }

    /// GPU milliseconds per frame of each metric's kernels (events around each metric's
    /// launches, `reps` frames, after one normal run of `job`). Uploads and the readback are
    /// not included.
    pub fn time_metrics(
        &mut self,
        job: &FrameJob,
        reps: usize,
    ) -> Result<Vec<(&'static str, f64)>> {
        self.compute(job)?;
        let f = self.frame.as_ref().expect("set up");
        let mut metrics: Vec<&'static str> = Vec::new();
        for l in &f.plan.launches {
            if !metrics.contains(&l.metric) {
                metrics.push(l.metric);
            }
        }
        let mut out = Vec::new();
        for m in metrics {
            // Timing needs events created without CU_EVENT_DISABLE_TIMING (cudarc's default).
            let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            let start = self.ctx.new_event(timed).map_err(be("cuEventCreate"))?;
            let end = self.ctx.new_event(timed).map_err(be("cuEventCreate"))?;
            start
                .record(&self.launcher.stream)
                .map_err(be("cuEventRecord"))?;
            for _ in 0..reps.max(1) {
                for l in f.plan.launches.iter().filter(|l| l.metric == m) {
                    launch(&self.launcher, &self.launcher.stream, &f.plan, f.base, 0, l)?;
                }
            }
            end.record(&self.launcher.stream)
                .map_err(be("cuEventRecord"))?;
            self.launcher
                .stream
                .synchronize()
                .map_err(be("cuStreamSynchronize"))?;
            let ms = start.elapsed_ms(&end).map_err(be("cuEventElapsedTime"))? as f64;
            out.push((m, ms / reps.max(1) as f64));
        }
        Ok(out)
    }
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
        };
        for (w, h, bpc, sets) in [(1920usize, 1080usize, 8u8, 2), (181, 190, 10, 3)] {
            let g = Geometry {
                w,
                h,
                bpc,
                chroma: Some((w / 2, h / 2)),
                interleaved: false,
                companions: all,
            };
            let mut plan = Plan::new(g);
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
    fn run_parallel_keeps_task_order_and_turns_panics_into_errors() {
        // Tasks of different lengths: the results still come back in task order.
        let tasks: Vec<Task<'_, usize>> = (0..12usize)
            .map(|i| -> Task<'_, usize> {
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
            let tasks: Vec<Task<'_, usize>> = (0..4usize)
                .map(|i| -> Task<'_, usize> {
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
