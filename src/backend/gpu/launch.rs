//! The companion kernels' launch vocabulary: the kernel list with each kernel's C signature, an
//! argument (a region of the device arena or a scalar), a launch, and the check of a launch
//! against its signature and the arena. Each launch is built by one typed function per kernel
//! (the `launch_*` functions below) that checks the sizes of the regions it names; the kernels
//! index only inside the sizes passed to them. No driver here: the CUDA backend and the CPU
//! emulation (tests/companion_emulated.rs) execute the same launches.

use crate::error::{Error, Result};
use crate::features::{psnr_hvs, ssim};

/// Threads per block of every companion kernel (`VG_BLOCK` in compat.h).
pub const BLOCK: u32 = 256;

/// `PSNR_ITEMS` in kernels/psnr.cu.
pub(crate) const PSNR_ITEMS: usize = 8;

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
    CambiPre,
    CambiDither,
    CambiMask,
    CambiMode,
    CambiCvalues,
    CambiCvaluesTiled,
    SpeedLoad,
    SpeedLoadDiff,
    SpeedPrescale,
    SpeedFilterV,
    SpeedFilterH,
    SpeedLocalMean,
    SpeedMeans,
    SpeedCov,
}

/// The C type of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    Ptr,
    I32,
    F32,
}

impl Kernel {
    pub const ALL: [Kernel; 31] = [
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
        Kernel::CambiPre,
        Kernel::CambiDither,
        Kernel::CambiMask,
        Kernel::CambiMode,
        Kernel::CambiCvalues,
        Kernel::CambiCvaluesTiled,
        Kernel::SpeedLoad,
        Kernel::SpeedLoadDiff,
        Kernel::SpeedPrescale,
        Kernel::SpeedFilterV,
        Kernel::SpeedFilterH,
        Kernel::SpeedLocalMean,
        Kernel::SpeedMeans,
        Kernel::SpeedCov,
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
            Kernel::CambiPre => "cambi_pre",
            Kernel::CambiDither => "cambi_dither",
            Kernel::CambiMask => "cambi_mask",
            Kernel::CambiMode => "cambi_mode",
            Kernel::CambiCvalues => "cambi_cvalues",
            Kernel::CambiCvaluesTiled => "cambi_cvalues_tiled",
            Kernel::SpeedLoad => "speed_load",
            Kernel::SpeedLoadDiff => "speed_load_diff",
            Kernel::SpeedPrescale => "speed_prescale",
            Kernel::SpeedFilterV => "speed_filter_v",
            Kernel::SpeedFilterH => "speed_filter_h",
            Kernel::SpeedLocalMean => "speed_local_mean",
            Kernel::SpeedMeans => "speed_means",
            Kernel::SpeedCov => "speed_cov",
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
            Kernel::CambiPre => &[Ptr, I32, I32, Ptr, Ptr, I32, I32, Ptr],
            Kernel::CambiDither => &[Ptr, I32, I32, Ptr],
            Kernel::CambiMode => &[Ptr, I32, I32, I32, Ptr],
            Kernel::CambiMask => &[Ptr, I32, I32, I32, I32, Ptr],
            Kernel::CambiCvalues | Kernel::CambiCvaluesTiled => &[
                Ptr, Ptr, I32, I32, I32, I32, I32, I32, I32, I32, Ptr, Ptr, Ptr, Ptr,
            ],
            Kernel::SpeedLoad => &[Ptr, I32, I32, Ptr],
            Kernel::SpeedLoadDiff => &[Ptr, Ptr, I32, I32, Ptr],
            Kernel::SpeedPrescale => &[Ptr, I32, I32, I32, I32, I32, I32, Ptr, Ptr, Ptr, Ptr, Ptr],
            Kernel::SpeedFilterV => &[Ptr, I32, I32, Ptr, I32, Ptr, I32, Ptr, Ptr],
            Kernel::SpeedFilterH => &[Ptr, I32, I32, Ptr, I32, I32, Ptr, Ptr],
            Kernel::SpeedLocalMean => &[Ptr, I32, I32, I32, Ptr, Ptr],
            Kernel::SpeedMeans => &[Ptr, I32, I32, I32, I32, Ptr],
            Kernel::SpeedCov => &[Ptr, I32, I32, I32, I32, Ptr, Ptr],
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

pub(crate) fn blocks(n: usize, per_block: usize) -> u32 {
    n.div_ceil(per_block) as u32
}

pub(crate) fn need(r: Region, bytes: usize, what: &str) {
    assert!(
        r.bytes >= bytes,
        "{what}: region of {} bytes, {bytes} needed",
        r.bytes
    );
}

/// `psnr_sse`: adds the SSE of the `n` samples of `r` and `d` (u16) to the u64 at `out`.
/// The kernel reads `r[i]`, `d[i]` for `i < n` only and writes only `*out`.
pub(crate) fn launch_psnr_sse(r: Region, d: Region, n: usize, out: Region) -> Launch {
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
pub(crate) fn launch_split_uv(src: Region, n: usize, narrow: bool, u: Region, v: Region) -> Launch {
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
pub(crate) fn launch_widen_u8(src: Region, n: usize, dst: Region) -> Launch {
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

pub(crate) fn i32_of(v: usize) -> i32 {
    assert!(v <= i32::MAX as usize, "size {v} beyond int");
    v as i32
}

/// `ssim_load`: `src` is a `w` x `h` u16 plane, `dst` receives `sw` x `sh` floats (the plane
/// as floats at scale 1, else its decimation by `scale` with the box filter). Reads of `src` are
/// mirrored into `0..w` x `0..h` (one reflection: `scale / 2 < w, h`); writes `dst[i]`,
/// `i < sw * sh`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_ssim_load(
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
pub(crate) const SSIM_DW: usize = 32;

/// `ssim_decimate_lpf`: `src` is `w` x `h` floats, `dst` receives the `sw` x `sh` level below
/// (`w / 2 + (w & 1)`...). Reads are mirrored into the image (4 < w, h: levels are >= 11).
pub(crate) fn launch_ssim_decimate_lpf(src: Region, (w, h): (usize, usize), dst: Region) -> Launch {
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
pub(crate) fn launch_ssim_hconv(
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
pub(crate) const SSIM_TW: usize = 32;
pub(crate) const SSIM_TY: usize = 4;

/// `ssim_terms`' blocks for terms of `dw` x `dh`: one per tile.
pub(crate) fn ssim_tiles((dw, dh): (usize, usize)) -> usize {
    dw.div_ceil(SSIM_TW) * dh.div_ceil(BLOCK as usize / SSIM_TW * SSIM_TY)
}

/// `ssim_terms`, or `ssim_terms_cs` where the terms have no `l` region: `hc` holds 5 planes of
/// `dw` x `h` floats (h >= 11); `l` (if any), `c` receive `dw * (h - 10)` doubles, `s` as many
/// floats, `part` [`Terms::parts`] doubles per block.
pub(crate) fn launch_ssim_terms(
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
pub(crate) fn launch_psnr_hvs_blocks(
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
pub(crate) const HVS_GROUPS: usize = BLOCK as usize / 8;

/// `HVS_CHUNK` and `HVS_ROW` in kernels/psnr_hvs.cu: terms per chunk of the float-sum tables,
/// and u64 per chunk in them.
pub(crate) const HVS_CHUNK: usize = 2048;
pub(crate) const HVS_ROW: usize = 18;

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
pub(crate) fn launch_ciede_pixels(
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
pub(crate) const CIEDE_TABLE_LEN: usize = 1 << 24;
/// The table's size: four floats (L, a, b and the chroma C*ab) an entry, 16-byte aligned.
pub const CIEDE_TABLE_BYTES: usize = 16 * CIEDE_TABLE_LEN;

/// `ciede_lab_table`: fills `table` (every entry: the kernel's grid covers exactly
/// `CIEDE_TABLE_LEN` threads, each writes its own entry's four floats).
pub(crate) fn launch_ciede_lab_table(table: Region) -> Launch {
    need(table, CIEDE_TABLE_BYTES, "ciede table");
    Launch {
        kernel: Kernel::CiedeLabTable,
        grid: (blocks(CIEDE_TABLE_LEN, BLOCK as usize), 1),
        args: vec![KArg::Ptr(table)],
        metric: "ciede",
    }
}

/// Where the per-pixel SSIM terms of one image pair go (`n` pixels), and the per-block sums
/// that bound their sequential sums (`blocks` blocks of [`Terms::parts`] doubles). Without
/// `l` the luminance term is not computed (MS-SSIM's levels whose exponent for it is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Terms {
    pub(crate) l: Option<Region>,
    pub(crate) c: Region,
    pub(crate) s: Region,
    pub(crate) part: Region,
    pub(crate) n: usize,
    pub(crate) blocks: usize,
}

/// `SSIM_PARTS` in kernels/ssim.cu: per block, for each of l*c*s, l, c, s, the sum, the sum of
/// magnitudes and the weighted sum of magnitudes ([`ssim::SumBound`]).
pub(crate) const SSIM_PARTS: usize = 12;
/// `SSIM_PARTS_CS` in kernels/ssim.cu: `ssim_terms_cs`' sums, those of c and s.
pub(crate) const SSIM_PARTS_CS: usize = 6;

impl Terms {
    /// Doubles a block in `part`.
    pub(crate) fn parts(&self) -> usize {
        if self.l.is_some() {
            SSIM_PARTS
        } else {
            SSIM_PARTS_CS
        }
    }
}

/// `cambi_pre`: `src` is the `in_w` x `in_h` u16 luma at `bpc` bits, `xs` and `ys` hold `w`
/// and `h` u32 source columns and rows (each below `in_w`, `in_h`: the caller checked them),
/// `out` receives `w` x `h` 10-bit samples. Reads `src` at those indices only.
pub(crate) fn launch_cambi_pre(
    src: Region,
    (in_w, in_h, bpc): (usize, usize, u8),
    (xs, ys): (Region, Region),
    (w, h): (usize, usize),
    out: Region,
) -> Launch {
    need(src, 2 * in_w * in_h, "cambi_pre src");
    need(xs, 4 * w, "cambi_pre xs");
    need(ys, 4 * h, "cambi_pre ys");
    need(out, 2 * w * h, "cambi_pre out");
    assert!(w > 0 && h > 0 && (8..=16).contains(&bpc));
    Launch {
        kernel: Kernel::CambiPre,
        grid: (blocks(w * h, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(in_w)),
            KArg::I32(i32::from(bpc)),
            KArg::Ptr(xs),
            KArg::Ptr(ys),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::Ptr(out),
        ],
        metric: "cambi",
    }
}

/// `cambi_dither`: `src`, `dst` are `w` x `h` u16 (distinct regions).
pub(crate) fn launch_cambi_dither(src: Region, (w, h): (usize, usize), dst: Region) -> Launch {
    assert!(w > 0 && h > 0 && src.off != dst.off);
    need(src, 2 * w * h, "cambi_dither src");
    need(dst, 2 * w * h, "cambi_dither dst");
    Launch {
        kernel: Kernel::CambiDither,
        grid: (blocks(w * h, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::Ptr(dst),
        ],
        metric: "cambi",
    }
}

/// `cambi_mode`: `src` is `w` x `h` u16; `dst` (a distinct region) receives the mode filter of
/// `src`, or with `dec` of its decimation by 2 (`((w + 1) / 2) x ((h + 1) / 2)`, read at the
/// even rows and columns of `src`). Returns the launch and the output size.
pub(crate) fn launch_cambi_mode(
    src: Region,
    (w, h): (usize, usize),
    dec: bool,
    dst: Region,
) -> (Launch, (usize, usize)) {
    let (ow, oh) = if dec {
        (w.div_ceil(2), h.div_ceil(2))
    } else {
        (w, h)
    };
    assert!(w > 0 && h > 0 && src.off != dst.off);
    need(src, 2 * w * h, "cambi_mode src");
    need(dst, 2 * ow * oh, "cambi_mode dst");
    let l = Launch {
        kernel: Kernel::CambiMode,
        grid: (blocks(ow * oh, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::I32(i32::from(dec)),
            KArg::Ptr(dst),
        ],
        metric: "cambi",
    };
    (l, (ow, oh))
}

const _: () = assert!(BLOCK == 16 * 16, "cambi_mask's 16 x 16 tile");

/// `cambi_mask`: `img` is `w` x `h` u16, `mask` receives `w` x `h` flags, or with `half` the
/// even rows and columns' (`((w + 1) / 2) x ((h + 1) / 2)`); blocks of 16 x 16 flags (the
/// kernel's tile, [`BLOCK`] = 256 threads), `grid.1 <= 65535` (heights up to 1M rows; checked
/// by `check_launch`). Reads inside the image only.
pub(crate) fn launch_cambi_mask(
    img: Region,
    (w, h): (usize, usize),
    mask_index: u16,
    half: bool,
    mask: Region,
) -> Launch {
    let (mw, mh) = if half {
        (w.div_ceil(2), h.div_ceil(2))
    } else {
        (w, h)
    };
    assert!(w > 0 && h > 0);
    need(img, 2 * w * h, "cambi_mask img");
    need(mask, mw * mh, "cambi_mask mask");
    Launch {
        kernel: Kernel::CambiMask,
        grid: (
            u32::try_from(mw.div_ceil(16)).expect("mask width"),
            u32::try_from(mh.div_ceil(16)).expect("mask height"),
        ),
        args: vec![
            KArg::Ptr(img),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::I32(i32::from(mask_index)),
            KArg::I32(i32::from(half)),
            KArg::Ptr(mask),
        ],
        metric: "cambi",
    }
}

/// The values of one scale's [`launch_cambi_cvalues`]: the window's half `pad`, the band
/// `lo..lo + len` and `nd` differences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CambiWindow {
    pub(crate) pad: usize,
    pub(crate) lo: i32,
    pub(crate) len: usize,
    pub(crate) nd: usize,
}

/// Entries of libvmaf's reciprocal table (cambi.h `recip_lut`).
pub(crate) const CAMBI_RECIP_LEN: usize = 4226;

/// `cambi_cvalues`: `img` (u16) is `w` x `h`, `mask` (u8) scale 0's `mw` x `mh` mask, of which
/// the scale's is every `2^mshift`-th row and column; `fire` holds
/// [`crate::features::cambi::DEVICE_VALUES`] u32, `recip` [`CAMBI_RECIP_LEN`] floats (the
/// window's area `(2 pad + 1)^2` below it, so every `p0 + pmax` indexes inside); `cv` receives
/// `w` x `h` floats and `sums` (zeroed before) two u64: the c-values' sum in units of 2^-24 and
/// their non-zero count. The sum's bound: each c-value is at most `9 * area / 4` (`< 2^13.3`),
/// so under `2^38` units, and the caller checks `w * h * 2^38 < 2^64` ([`cambi_sum_fits`]).
pub(crate) fn launch_cambi_cvalues(
    (img, mask): (Region, Region),
    (w, h): (usize, usize),
    ((mw, mh), mshift): ((usize, usize), u32),
    win: CambiWindow,
    (fire, recip): (Region, Region),
    cv: Region,
    sums: Region,
) -> Launch {
    let side = 2 * win.pad + 1;
    assert!(w > 0 && h > 0 && side * side < CAMBI_RECIP_LEN);
    assert!((1..=32).contains(&win.nd) && win.lo >= 0 && cambi_sum_fits(w * h));
    need(img, 2 * w * h, "cambi_cvalues img");
    // The scale's mask is scale 0's (mw x mh) at every 2^mshift-th row and column.
    assert!(mshift < 8 && ((w - 1) << mshift) < mw && ((h - 1) << mshift) < mh);
    need(mask, mw * mh, "cambi_cvalues mask");
    need(
        fire,
        4 * crate::features::cambi::DEVICE_VALUES,
        "cambi_cvalues fire",
    );
    need(recip, 4 * CAMBI_RECIP_LEN, "cambi_cvalues recip");
    need(cv, 4 * w * h, "cambi_cvalues cv");
    need(sums, 16, "cambi_cvalues sums");
    // The tiled kernel (16 x 16 pixels a block, the window's samples from shared memory) holds
    // a window row's counts in 7-bit fields of a u64 (2 nd + 1 <= 9 fields); pad <= 32 follows
    // from the area's bound above.
    let tiled = win.nd <= CAMBI_TILE_ND;
    Launch {
        kernel: if tiled {
            Kernel::CambiCvaluesTiled
        } else {
            Kernel::CambiCvalues
        },
        grid: if tiled {
            (
                u32::try_from(w.div_ceil(16)).expect("width"),
                u32::try_from(h.div_ceil(16)).expect("height"),
            )
        } else {
            (blocks(w * h, BLOCK as usize), 1)
        },
        args: vec![
            KArg::Ptr(img),
            KArg::Ptr(mask),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::I32(i32_of(mw)),
            KArg::I32(mshift as i32),
            KArg::I32(i32_of(win.pad)),
            KArg::I32(win.lo),
            KArg::I32(i32_of(win.len)),
            KArg::I32(i32_of(win.nd)),
            KArg::Ptr(fire),
            KArg::Ptr(recip),
            KArg::Ptr(cv),
            KArg::Ptr(sums),
        ],
        metric: "cambi",
    }
}

/// The largest `nd` of `cambi_cvalues_tiled` (kernels/cambi.cu `CAMBI_TILE_ND`).
pub(crate) const CAMBI_TILE_ND: usize = 4;

/// The largest c-value in units of 2^-24, bounded: `9 * 4225 / 4 * 2^24 < 2^38`.
pub(crate) const CAMBI_MAX_C_UNITS: u64 = 1 << 38;

/// Whether `n` c-values' sum in units of 2^-24 fits `u64` (`n * 2^38 < 2^64`: `n < 2^26`, 67M
/// pixels a scale, beyond 8K's 33M).
pub(crate) fn cambi_sum_fits(n: usize) -> bool {
    (n as u128) * (CAMBI_MAX_C_UNITS as u128) < (1u128 << 64)
}

// SpEED chroma and temporal (kernels/speed.cu; the launches below name `speed_chroma`, and
// gpu/speed.rs sets each launch's metric to its part's). The index tables these read (prescale indices, filter rows,
// needed columns, column positions) are built on the host by the CPU's own code
// (`features::speed::GpuLayout`) and checked to lie inside their images when they are laid
// out (gpu/speed.rs), so every read below stays inside the regions checked here.

/// `speed_load`: `src` holds `n` u16 samples of `bpc` bits (8, 10, 12 or 16), `dst` receives `n`
/// floats; reads and writes below `n` only.
pub(crate) fn launch_speed_load(src: Region, n: usize, bpc: u8, dst: Region) -> Launch {
    need(src, 2 * n, "speed_load src");
    need(dst, 4 * n, "speed_load dst");
    assert!(n > 0 && matches!(bpc, 8 | 10 | 12 | 16));
    Launch {
        kernel: Kernel::SpeedLoad,
        grid: (blocks(n, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(n)),
            KArg::I32(i32::from(bpc)),
            KArg::Ptr(dst),
        ],
        metric: "speed_chroma",
    }
}

/// `speed_load_diff`: `prev` and `cur` hold `n` u16 samples of `bpc` bits (8, 10, 12 or 16) each,
/// `dst` receives `n` floats (each sample converted as `speed_load` converts it, previous minus
/// current); reads and writes below `n` only.
pub(crate) fn launch_speed_load_diff(
    prev: Region,
    cur: Region,
    n: usize,
    bpc: u8,
    dst: Region,
) -> Launch {
    need(prev, 2 * n, "speed_load_diff prev");
    need(cur, 2 * n, "speed_load_diff cur");
    need(dst, 4 * n, "speed_load_diff dst");
    assert!(n > 0 && matches!(bpc, 8 | 10 | 12 | 16));
    Launch {
        kernel: Kernel::SpeedLoadDiff,
        grid: (blocks(n, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(prev),
            KArg::Ptr(cur),
            KArg::I32(i32_of(n)),
            KArg::I32(i32::from(bpc)),
            KArg::Ptr(dst),
        ],
        metric: "speed_temporal",
    }
}

/// The prescale's tables in the arena: per output column and row, `taps` indices (i32) and
/// weights (f32; bilinear: one weight a position, nearest: none, so `col_w`/`row_w` may be
/// empty regions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PrescaleRegions {
    pub(crate) method: i32,
    pub(crate) taps: usize,
    pub(crate) weights: usize,
    pub(crate) col_idx: Region,
    pub(crate) col_w: Region,
    pub(crate) row_idx: Region,
    pub(crate) row_w: Region,
}

/// `speed_prescale`: `src` is a `sw` x `sh` float image, `dst` receives `dw` x `dh` floats; the
/// tables hold `taps` indices (below `sw` for columns, `sh` for rows) and `weights` weights per
/// position. Writes `dst[i]`, `i < dw * dh`.
pub(crate) fn launch_speed_prescale(
    src: Region,
    (sw, sh): (usize, usize),
    (dw, dh): (usize, usize),
    t: PrescaleRegions,
    dst: Region,
) -> Launch {
    assert!((0..=3).contains(&t.method) && dw * dh > 0);
    assert_eq!(
        (t.taps, t.weights),
        [(1, 0), (2, 1), (4, 4), (9, 9)][t.method as usize]
    );
    need(src, 4 * sw * sh, "speed_prescale src");
    need(dst, 4 * dw * dh, "speed_prescale dst");
    need(t.col_idx, 4 * t.taps * dw, "speed_prescale col_idx");
    need(t.row_idx, 4 * t.taps * dh, "speed_prescale row_idx");
    need(t.col_w, 4 * t.weights * dw, "speed_prescale col_w");
    need(t.row_w, 4 * t.weights * dh, "speed_prescale row_w");
    Launch {
        kernel: Kernel::SpeedPrescale,
        grid: (blocks(dw * dh, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(sw)),
            KArg::I32(i32_of(sh)),
            KArg::I32(i32_of(dw)),
            KArg::I32(i32_of(dh)),
            KArg::I32(t.method),
            KArg::I32(i32_of(t.taps)),
            KArg::Ptr(t.col_idx),
            KArg::Ptr(t.col_w),
            KArg::Ptr(t.row_idx),
            KArg::Ptr(t.row_w),
            KArg::Ptr(dst),
        ],
        metric: "speed_chroma",
    }
}

/// `speed_filter_v`: `src` is a float image of `src_rows` rows of `stride` floats; `taps` holds
/// `fw` floats, `rows` `out_h * fw` row indices (below `src_rows`), `needed` `nn` column indices
/// (below `stride`); `vert` receives `out_h * nn` floats.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_speed_filter_v(
    src: Region,
    (stride, src_rows): (usize, usize),
    (taps, fw): (Region, usize),
    (rows, out_h): (Region, usize),
    (needed, nn): (Region, usize),
    vert: Region,
) -> Launch {
    assert!(fw > 0 && out_h > 0 && nn > 0);
    need(src, 4 * stride * src_rows, "speed_filter_v src");
    need(taps, 4 * fw, "speed_filter_v taps");
    need(rows, 4 * out_h * fw, "speed_filter_v rows");
    need(needed, 4 * nn, "speed_filter_v needed");
    need(vert, 4 * out_h * nn, "speed_filter_v vert");
    Launch {
        kernel: Kernel::SpeedFilterV,
        grid: (blocks(out_h * nn, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(stride)),
            KArg::I32(i32_of(fw)),
            KArg::Ptr(taps),
            KArg::I32(i32_of(out_h)),
            KArg::Ptr(rows),
            KArg::I32(i32_of(nn)),
            KArg::Ptr(needed),
            KArg::Ptr(vert),
        ],
        metric: "speed_chroma",
    }
}

/// `speed_filter_h`: `vert` holds `out_h * nn` floats, `taps` `fw` floats, `cols` `out_w * fw`
/// positions (below `nn`); `dst` receives `out_w * out_h` floats.
pub(crate) fn launch_speed_filter_h(
    (vert, nn): (Region, usize),
    (taps, fw): (Region, usize),
    (out_w, out_h): (usize, usize),
    cols: Region,
    dst: Region,
) -> Launch {
    assert!(fw > 0 && out_w > 0 && out_h > 0 && nn > 0);
    need(vert, 4 * out_h * nn, "speed_filter_h vert");
    need(taps, 4 * fw, "speed_filter_h taps");
    need(cols, 4 * out_w * fw, "speed_filter_h cols");
    need(dst, 4 * out_w * out_h, "speed_filter_h dst");
    Launch {
        kernel: Kernel::SpeedFilterH,
        grid: (blocks(out_w * out_h, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(vert),
            KArg::I32(i32_of(nn)),
            KArg::I32(i32_of(fw)),
            KArg::Ptr(taps),
            KArg::I32(i32_of(out_w)),
            KArg::I32(i32_of(out_h)),
            KArg::Ptr(cols),
            KArg::Ptr(dst),
        ],
        metric: "speed_chroma",
    }
}

/// `speed_local_mean`: `src` is a `w` x `h` float image, `taps` `fw` floats with `fw / 2 < w, h`
/// (one mirror reflection stays inside); `dst` receives `w * h` floats.
pub(crate) fn launch_speed_local_mean(
    src: Region,
    (w, h): (usize, usize),
    (taps, fw): (Region, usize),
    dst: Region,
) -> Launch {
    assert!(fw > 0 && fw / 2 < w && fw / 2 < h);
    need(src, 4 * w * h, "speed_local_mean src");
    need(taps, 4 * fw, "speed_local_mean taps");
    need(dst, 4 * w * h, "speed_local_mean dst");
    Launch {
        kernel: Kernel::SpeedLocalMean,
        grid: (blocks(w * h, BLOCK as usize), 1),
        args: vec![
            KArg::Ptr(src),
            KArg::I32(i32_of(w)),
            KArg::I32(i32_of(h)),
            KArg::I32(i32_of(fw)),
            KArg::Ptr(taps),
            KArg::Ptr(dst),
        ],
        metric: "speed_chroma",
    }
}

/// `speed_means` (`cov` `None`) or `speed_cov`, for `sides` images at once (one chain of
/// additions a sum, grid `(.., sides)`): `img` holds `sides` consecutive `w` x `h` float images
/// and the `sw` x `sh` submatrix shifted by up to 4 in each direction stays inside each
/// (`sw + 4 <= w`, `sh + 4 <= h`); `means` receives (`speed_means`) or holds (`speed_cov`) 25
/// floats a side, `cov` receives 625 floats a side.
pub(crate) fn launch_speed_stats(
    img: Region,
    (w, h): (usize, usize),
    (sw, sh): (usize, usize),
    sides: usize,
    means: Region,
    cov: Option<Region>,
) -> Launch {
    assert!(sw > 0 && sh > 0 && sw + 4 <= w && sh + 4 <= h);
    assert!((1..=65535).contains(&sides));
    need(img, 4 * w * h * sides, "speed_stats img");
    need(means, 4 * 25 * sides, "speed_stats means");
    let mut args = vec![
        KArg::Ptr(img),
        KArg::I32(i32_of(w)),
        KArg::I32(i32_of(sw)),
        KArg::I32(i32_of(sh)),
        KArg::I32(i32_of(w * h)),
        KArg::Ptr(means),
    ];
    if let Some(c) = cov {
        need(c, 4 * 625 * sides, "speed_cov cov");
        args.push(KArg::Ptr(c));
    }
    Launch {
        kernel: if cov.is_some() {
            Kernel::SpeedCov
        } else {
            Kernel::SpeedMeans
        },
        grid: (
            if cov.is_some() {
                blocks(325, BLOCK as usize)
            } else {
                1
            },
            u32::try_from(sides).expect("sides <= 65535"),
        ),
        args,
        metric: "speed_chroma",
    }
}
