//! Each companion metric's part of a frame's [`CompanionPlan`]: which planes it reads, its regions of the
//! arena and its launches.
//!
//! A plan's arena is laid out in phases (shared tables, scratch, the frame's results, its
//! planes, the per-pixel terms; then the launches), and within each phase the metrics take
//! their regions in one order: PSNR, SSIM, MS-SSIM, CIEDE2000, PSNR-HVS. So each metric has one
//! method per phase it takes part in, and [`CompanionPlan::with_ciede_table`] calls them phase by phase
//! in that order; the offsets follow from that order alone.
//!
//! [`CompanionPlan`]: super::companion_plan::CompanionPlan
//! [`CompanionPlan::with_ciede_table`]: super::companion_plan::CompanionPlan::with_ciede_table

use super::companion_plan::{Arena, CiedeTable, CompanionGeometry, Inputs, PSNR_U32_ROW_MAX_WIDTH};
use super::launch::*;
use crate::features::{cambi, ciede, ms_ssim, psnr_hvs, ssim};
use crate::picture::Plane;

/// Where the per-pixel SSIM terms of a `(dw, dh)` image go, with `part` for their block sums.
fn terms(a: &mut Arena, (dw, dh): (usize, usize), part: Region, with_l: bool) -> Terms {
    let n = dw * dh;
    Terms {
        l: with_l.then(|| a.take(8 * n)),
        c: a.take(8 * n),
        s: a.take(4 * n),
        part,
        n,
        blocks: ssim_tiles((dw, dh)),
    }
}

/// PSNR: per plane, the u64 SSE on the GPU (a result), except for the 8-bit planes wider than
/// libvmaf's `uint32_t` row sum allows (summed on the host).
pub(crate) struct Psnr {
    gpu: [bool; 3],
    /// Per plane, the SSE (within the readback).
    pub(crate) out: [Option<Region>; 3],
}

impl Psnr {
    pub(crate) fn new(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> Psnr {
        let mut gpu = [false; 3];
        if geom.companions.psnr {
            for (p, g) in gpu.iter_mut().enumerate().take(geom.planes()) {
                *g = !(geom.bpc == 8 && geom.plane(p).0 > PSNR_U32_ROW_MAX_WIDTH);
                need_plane[p] |= *g;
            }
        }
        Psnr {
            gpu,
            out: [None; 3],
        }
    }

    pub(crate) fn results(&mut self, a: &mut Arena) {
        for p in 0..3 {
            if self.gpu[p] {
                self.out[p] = Some(a.take(8));
            }
        }
    }

    pub(crate) fn launches(
        &self,
        geom: &CompanionGeometry,
        inputs: &Inputs,
        zero: &mut Vec<Region>,
        launches: &mut Vec<Launch>,
    ) {
        for p in 0..3 {
            if let Some(out) = self.out[p] {
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
    }
}

/// SSIM of the luma, at libvmaf's scale (`None` where libvmaf refuses the size).
pub(crate) struct Ssim {
    /// (scale, scaled width, scaled height).
    geom: Option<(usize, usize, usize)>,
    /// The horizontal pass's scratch.
    hc: Option<Region>,
    /// The scaled reference and distorted images.
    scaled: Option<(Region, Region)>,
    part: Option<Region>,
    pub(crate) terms: Option<Terms>,
}

impl Ssim {
    pub(crate) fn new(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> Ssim {
        let ssim_geom = geom
            .companions
            .ssim
            .then(|| ssim::scaled_geometry(geom.w, geom.h).ok())
            .flatten();
        need_plane[0] |= ssim_geom.is_some();
        Ssim {
            geom: ssim_geom,
            hc: None,
            scaled: None,
            part: None,
            terms: None,
        }
    }

    /// The terms' dimensions (the "valid" output of the 11x11 window).
    fn dims(&self) -> Option<(usize, usize)> {
        self.geom.map(|(_, sw, sh)| (sw - 10, sh - 10))
    }

    pub(crate) fn scratch_hconv(&mut self, a: &mut Arena) {
        self.hc = self.geom.map(|(_, sw, sh)| a.take(4 * 5 * (sw - 10) * sh));
    }

    pub(crate) fn scratch_images(&mut self, a: &mut Arena) {
        self.scaled = self
            .geom
            .map(|(_, sw, sh)| (a.take(4 * sw * sh), a.take(4 * sw * sh)));
    }

    pub(crate) fn results(&mut self, a: &mut Arena) {
        self.part = self.dims().map(|d| a.take(8 * SSIM_PARTS * ssim_tiles(d)));
    }

    pub(crate) fn terms(&mut self, a: &mut Arena) {
        self.terms = self
            .dims()
            .zip(self.part)
            .map(|(d, p)| terms(a, d, p, true));
    }

    pub(crate) fn launches(
        &self,
        geom: &CompanionGeometry,
        inputs: &Inputs,
        launches: &mut Vec<Launch>,
    ) {
        if let (Some((scale, sw, sh)), Some(t), Some((fr, fd))) =
            (self.geom, self.terms, self.scaled)
        {
            let tap = ssim::box_tap(scale);
            for (src, dst) in [(inputs[0], fr), (inputs[3], fd)] {
                launches.push(launch_ssim_load(
                    "ssim",
                    src.unwrap(),
                    (geom.w, geom.h, geom.bpc),
                    scale,
                    tap,
                    (sw, sh),
                    dst,
                ));
            }
            let hc = self.hc.expect("with SSIM");
            launches.push(launch_ssim_hconv("ssim", fr, fd, (sw, sh), hc));
            launches.push(launch_ssim_terms("ssim", hc, (sw - 10, sh), t));
        }
    }
}

/// MS-SSIM of the luma: five levels (`None` where libvmaf refuses the size).
pub(crate) struct MsSsim {
    ok: bool,
    levels: [(usize, usize); ms_ssim::SCALES],
    /// The horizontal pass's scratch (the size of level 0, reused by every level).
    hc: Option<Region>,
    /// The pyramid: per level, the reference and distorted images.
    pyr: Vec<(Region, Region)>,
    part: Option<[Region; ms_ssim::SCALES]>,
    pub(crate) terms: Option<[Terms; ms_ssim::SCALES]>,
}

impl MsSsim {
    pub(crate) fn new(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> MsSsim {
        let ok = geom.companions.ms_ssim && ms_ssim::check_size(geom.w, geom.h).is_ok();
        need_plane[0] |= ok;
        MsSsim {
            ok,
            levels: ms_ssim::level_sizes(geom.w, geom.h),
            hc: None,
            pyr: Vec::new(),
            part: None,
            terms: None,
        }
    }

    fn dims(&self) -> [(usize, usize); ms_ssim::SCALES] {
        self.levels
            .map(|(lw, lh)| (lw.max(10) - 10, lh.max(10) - 10))
    }

    pub(crate) fn scratch_hconv(&mut self, a: &mut Arena, geom: &CompanionGeometry) {
        self.hc = self.ok.then(|| a.take(4 * 5 * (geom.w - 10) * geom.h));
    }

    pub(crate) fn scratch_images(&mut self, a: &mut Arena) {
        if self.ok {
            self.pyr = self
                .levels
                .iter()
                .map(|&(lw, lh)| (a.take(4 * lw * lh), a.take(4 * lw * lh)))
                .collect();
        }
    }

    pub(crate) fn results(&mut self, a: &mut Arena) {
        // The levels without the luminance term have fewer sums (ssim_terms_cs).
        let parts = |i: usize| {
            if ms_ssim::uses_luminance(i) {
                SSIM_PARTS
            } else {
                SSIM_PARTS_CS
            }
        };
        let dims = self.dims();
        self.part = self.ok.then(|| {
            let mut i = 0;
            dims.map(|d| {
                let r = a.take(8 * parts(i) * ssim_tiles(d));
                i += 1;
                r
            })
        });
    }

    pub(crate) fn terms(&mut self, a: &mut Arena) {
        let dims = self.dims();
        self.terms = self.part.map(|parts| {
            let mut i = 0;
            parts.map(|p| {
                let t = terms(a, dims[i], p, ms_ssim::uses_luminance(i));
                i += 1;
                t
            })
        });
    }

    pub(crate) fn launches(
        &self,
        geom: &CompanionGeometry,
        inputs: &Inputs,
        launches: &mut Vec<Launch>,
    ) {
        let Some(ts) = self.terms else { return };
        let (pyr, levels) = (&self.pyr, &self.levels);
        for (src, dst) in [(inputs[0], pyr[0].0), (inputs[3], pyr[0].1)] {
            launches.push(launch_ssim_load(
                "ms_ssim",
                src.unwrap(),
                (geom.w, geom.h, geom.bpc),
                1,
                1.0,
                (geom.w, geom.h),
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
        let hc = self.hc.expect("with MS-SSIM");
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
}

/// CIEDE2000: per-pixel values summed per block (a result), with the colour-conversion table
/// for 8-bit frames where [`CiedeTable`] wants it (`None` where libvmaf refuses).
pub(crate) struct Ciede {
    factors: Option<(usize, usize)>,
    /// The colour-conversion table (shared by every frame; filled once by `setup`).
    pub(crate) table: Option<Region>,
    /// The per-block sums, the number of blocks and the chroma factors.
    pub(crate) part: Option<(Region, usize, (usize, usize))>,
}

impl Ciede {
    pub(crate) fn new(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> Ciede {
        let factors = match (geom.companions.ciede, geom.chroma) {
            (true, Some((cw, ch))) => {
                let view = |width, height| Plane {
                    data: &[],
                    width,
                    height,
                    stride: width,
                    bpc: geom.bpc,
                };
                ciede::chroma_factors(&view(geom.w, geom.h), &view(cw, ch), "ciede").ok()
            }
            _ => None,
        };
        if factors.is_some() {
            *need_plane = [true; 3];
        }
        Ciede {
            factors,
            table: None,
            part: None,
        }
    }

    pub(crate) fn tables(&mut self, a: &mut Arena, geom: &CompanionGeometry, table: CiedeTable) {
        self.table =
            (self.factors.is_some() && table.wanted(geom)).then(|| a.take(CIEDE_TABLE_BYTES));
    }

    pub(crate) fn results(&mut self, a: &mut Arena, geom: &CompanionGeometry) {
        self.part = self.factors.map(|f| {
            let b = blocks(geom.w * geom.h, BLOCK as usize) as usize;
            (a.take(8 * b), b, f)
        });
    }

    pub(crate) fn launches(
        &self,
        geom: &CompanionGeometry,
        inputs: &Inputs,
        launches: &mut Vec<Launch>,
    ) {
        if let Some((part, _, f)) = self.part {
            let side = |o: usize| [0, 1, 2].map(|p| inputs[o + p].unwrap());
            launches.push(launch_ciede_pixels(
                side(0),
                side(3),
                (geom.w, geom.h, geom.bpc),
                geom.plane(1),
                f,
                self.table,
                part,
            ));
        }
    }

    /// The launches that fill the table once per geometry.
    pub(crate) fn setup(&self) -> Vec<Launch> {
        self.table.map(launch_ciede_lab_table).into_iter().collect()
    }
}

/// PSNR-HVS of the three planes: 64 float terms per 8x8 block on the device, and their float
/// sums on the GPU (a result; `None` where libvmaf refuses).
pub(crate) struct PsnrHvs {
    ok: bool,
    /// Per plane, the number of blocks.
    pub(crate) blocks: [usize; 3],
    /// Per plane, the CSF and masking tables (shared by every frame).
    tables: Option<[(Region, Region); 3]>,
    /// Per plane, the float-sum tables' scratch.
    work: Option<[Region; 3]>,
    /// The three planes' float sums.
    pub(crate) out: Option<Region>,
    /// Per plane, the terms.
    pub(crate) terms: Option<[Region; 3]>,
}

impl PsnrHvs {
    pub(crate) fn new(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> PsnrHvs {
        let ok = geom.companions.psnr_hvs
            && geom.bpc <= 12
            && geom.planes() == 3
            && (0..3).all(|p| geom.plane(p).0 >= 8 && geom.plane(p).1 >= 8);
        if ok {
            *need_plane = [true; 3];
        }
        let blocks = [0, 1, 2].map(|p| {
            let (pw, ph) = geom.plane(p);
            if ok {
                let (bx, by) = psnr_hvs::block_grid(pw, ph);
                bx * by
            } else {
                0
            }
        });
        PsnrHvs {
            ok,
            blocks,
            tables: None,
            work: None,
            out: None,
            terms: None,
        }
    }

    pub(crate) fn tables(&mut self, a: &mut Arena) {
        self.tables = self
            .ok
            .then(|| [0, 1, 2].map(|_| (a.take(256), a.take(256))));
    }

    pub(crate) fn scratch_images(&mut self, a: &mut Arena) {
        self.work = self
            .ok
            .then(|| self.blocks.map(|b| a.take(hvs_work_bytes(64 * b))));
    }

    pub(crate) fn results(&mut self, a: &mut Arena) {
        self.out = self.ok.then(|| a.take(24));
    }

    pub(crate) fn terms(&mut self, a: &mut Arena) {
        self.terms = self.ok.then(|| self.blocks.map(|b| a.take(4 * 64 * b)));
    }

    /// The launches, and the constant tables to upload once per geometry.
    pub(crate) fn launches(
        &self,
        geom: &CompanionGeometry,
        inputs: &Inputs,
        tables: &mut Vec<(Region, Vec<u8>)>,
        launches: &mut Vec<Launch>,
    ) {
        let (Some(ts), Some(tabs), Some(work), Some(out)) =
            (self.terms, self.tables, self.work, self.out)
        else {
            return;
        };
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
        let n = self.blocks.map(|b| 64 * b);
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
}

/// CAMBI of the distorted luma ([`crate::backend::Companions::cambi`]): the preprocessing, mask,
/// scales and c-values on the device (kernels/cambi.cu), each scale's c-value sum (in units of
/// 2^-24) and non-zero count a result, the c-values themselves left on the device for the host's
/// fallback to libvmaf's order ([`crate::features::cambi::pool_in_libvmaf_order`]). Where a scale
/// has too many pixels for the `u64` sum ([`cambi_sum_fits`]; only windows of the smallest
/// `window_size` on frames above 67M pixels) the host computes the frame with the CPU code.
#[derive(Clone, Debug)]
pub(crate) struct Cambi {
    /// The CPU's preparation for the geometry (its refusal is the frame's error, as on the CPU);
    /// `None` without CAMBI.
    pub(crate) cpu: Option<crate::Result<cambi::Cambi>>,
    setup: Option<cambi::DeviceSetup>,
    /// xs, ys, fire, recip.
    tables: Option<[Region; 4]>,
    /// Two images of the preprocessed size (ping-pong) and scale 0's mask.
    scratch: Option<([Region; 2], Region)>,
    /// Per scale: the sums (a result) and the c-values (on the device).
    pub(crate) sums: Option<[Region; cambi::NUM_SCALES]>,
    pub(crate) cv: Option<[Region; cambi::NUM_SCALES]>,
}

impl Cambi {
    pub(crate) fn new(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> Cambi {
        let cpu = geom
            .companions
            .cambi
            .map(|p| cambi::Cambi::new(&p, geom.w, geom.h, geom.bpc));
        let setup = match &cpu {
            Some(Ok(c)) => c
                .device_setup()
                .filter(|s| s.scales.iter().all(|&(w, h)| cambi_sum_fits(w * h))),
            _ => None,
        };
        need_plane[0] |= setup.is_some();
        Cambi {
            cpu,
            setup,
            tables: None,
            scratch: None,
            sums: None,
            cv: None,
        }
    }

    /// Whether the device computes the frames (else the host does, from the planes).
    pub(crate) fn on_device(&self) -> bool {
        self.setup.is_some()
    }

    pub(crate) fn tables(&mut self, a: &mut Arena, tables: &mut Vec<(Region, Vec<u8>)>) {
        let Some(s) = &self.setup else { return };
        let u32s = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let recip: Vec<u8> = cambi::recip_table()
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(recip.len(), 4 * CAMBI_RECIP_LEN);
        let mut put = |bytes: Vec<u8>| {
            let r = a.take(bytes.len());
            tables.push((r, bytes));
            r
        };
        self.tables = Some([
            put(u32s(&s.xs)),
            put(u32s(&s.ys)),
            put(u32s(&s.fire)),
            put(recip),
        ]);
    }

    pub(crate) fn scratch(&mut self, a: &mut Arena) {
        let Some(s) = &self.setup else { return };
        let (w0, h0) = s.size;
        let (w1, h1) = s.scales[0];
        self.scratch = Some(([a.take(2 * w0 * h0), a.take(2 * w0 * h0)], a.take(w1 * h1)));
    }

    pub(crate) fn results(&mut self, a: &mut Arena) {
        if self.setup.is_some() {
            self.sums = Some(std::array::from_fn(|_| a.take(16)));
        }
    }

    pub(crate) fn terms(&mut self, a: &mut Arena) {
        if let Some(s) = &self.setup {
            self.cv = Some(s.scales.map(|(w, h)| a.take(4 * w * h)));
        }
    }

    pub(crate) fn launches(
        &self,
        inputs: &Inputs,
        zero: &mut Vec<Region>,
        launches: &mut Vec<Launch>,
    ) {
        let (Some(s), Some(t), Some((img, mask)), Some(sums), Some(cv)) =
            (&self.setup, self.tables, self.scratch, self.sums, self.cv)
        else {
            return;
        };
        let [xs, ys, fire, recip] = t;
        let other = |r: Region, pair: [Region; 2]| if r == pair[0] { pair[1] } else { pair[0] };
        launches.push(launch_cambi_pre(
            inputs[3].expect("the distorted luma"),
            s.input,
            (xs, ys),
            s.size,
            img[0],
        ));
        let mut cur = img[0];
        if s.anti_dither {
            launches.push(launch_cambi_dither(cur, s.size, img[1]));
            cur = img[1];
        }
        launches.push(launch_cambi_mask(
            cur,
            s.size,
            s.mask_index,
            s.speedup,
            mask,
        ));
        let win = CambiWindow {
            pad: s.pad,
            lo: s.band.0,
            len: s.band.1,
            nd: s.num_diffs,
        };
        // Each scale: the mode filter of the previous image decimated by 2 (scale 0: of the
        // preprocessed image, decimated with the speed-up), then the c-values, with the mask of
        // scale 0 read at every 2^scale-th row and column (cambi.c decimates image and mask
        // alike).
        let mut prev = s.size;
        for scale in 0..cambi::NUM_SCALES {
            let next = other(cur, img);
            let (l, size) = launch_cambi_mode(cur, prev, scale > 0 || s.speedup, next);
            assert_eq!(size, s.scales[scale], "CAMBI scale {scale}'s size");
            launches.push(l);
            cur = next;
            prev = size;
            zero.push(sums[scale]);
            launches.push(launch_cambi_cvalues(
                (cur, mask),
                size,
                (s.scales[0], scale as u32),
                win,
                (fire, recip),
                cv[scale],
                sums[scale],
            ));
        }
    }
}
