//! SpEED's parts of a frame's companion [`CompanionPlan`], chroma and temporal: for each side
//! the device computes what the CPU computes ([`SpeedSide`]: the operating image after the
//! local-mean removal, the 25 means and the 25x25 covariances, each sum in the CPU's order and
//! types, kernels/speed.cu), and the host finishes the score from them with the CPU's own code
//! (eigenvalues, QR, entropies and `log2` stay there).
//!
//! - SpEED chroma ([`SpeedChroma::sides`], [`SpeedChroma::finish`]): four sides, the chroma
//!   planes (reference U, distorted U, reference V, distorted V) as floats.
//! - SpEED temporal ([`SpeedTemporal::sides`], [`SpeedTemporal::finish`]): two sides, the
//!   previous frame's luma minus this frame's, as floats (`speed_load_diff`), of the reference
//!   and of the distorted picture (minus the current reference with `speed_use_ref_diff`). The
//!   previous frame's luma planes are inputs of the frame like its own ([`FrameJob::previous`]
//!   uploaded with the frame), so a frame's launches read nothing of another frame's and
//!   frames in flight stay independent; the first frame of a clip has none, runs no SpEED
//!   temporal launch and scores 0, as on the CPU.
//!
//! The tables (prescale indices and weights, filter taps, the sampled filter's mirrored rows and
//! needed columns) are the CPU's ([`GpuLayout`]), uploaded once per geometry. A part's sides
//! share one set of scratch images (their launches run in order on the metric's stream), then
//! one launch computes the sides' means and one their covariances; each side's statistics
//! are results (read back: (op_w x op_h + 650) floats a side; chroma's four 130 KB at 4K
//! 4:2:0).
//!
//! [`CompanionPlan`]: super::companion_plan::CompanionPlan
//! [`FrameJob::previous`]: crate::backend::FrameJob::previous

use std::sync::Arc;

use super::companion_plan::{Arena, CompanionGeometry, Inputs, PREV_DIS, PREV_REF};
use super::launch::*;
use crate::error::{Error, Result};
use crate::features::speed::{
    self, GpuLayout, PrescaleMethod, SpeedChroma, SpeedSide, SpeedTemporal,
};

/// One side's results: the operating image, the 25 means and the 625 covariances (floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SideOut {
    pub(crate) image: Region,
    pub(crate) means: Region,
    pub(crate) cov: Region,
}

/// The constant tables in the arena.
#[derive(Clone, Copy, Debug)]
struct Tables {
    taps: Region,
    rows: Region,
    needed: Region,
    cols: Region,
    small: Region,
    prescale: Option<PrescaleRegions>,
}

/// The shared scratch: the plane as floats, the prescaled image, the vertical pass, the
/// filtered and decimated image before the local-mean removal.
#[derive(Clone, Copy, Debug)]
struct Scratch {
    plane: Region,
    scaled: Option<Region>,
    vert: Region,
    small: Region,
}

/// The CPU extractor whose tail finishes the scores.
#[derive(Clone, Debug)]
pub(crate) enum Extractor {
    Chroma(Arc<SpeedChroma>),
    Temporal(Arc<SpeedTemporal>),
}

/// What the plan keeps for the frame's scores: the CPU extractor (the host's tail) or the CPU's
/// refusal of the geometry, and where the sides' results are.
#[derive(Clone, Debug)]
pub(crate) struct SpeedScores {
    pub(crate) extractor: Result<Extractor>,
    pub(crate) out: Option<Vec<SideOut>>,
}

/// How a side's float image is made: from one input plane (`speed_load`), or as the
/// difference of two (`speed_load_diff`: previous minus current).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    Plane(usize),
    Diff(usize, usize),
}

/// The part (`None` fields where the metric is not asked for or the CPU refuses the
/// geometry).
pub(crate) struct SpeedPart {
    /// `speed_chroma` or `speed_temporal` (the launches' metric).
    metric: &'static str,
    /// Per side, in the CPU's order of sides ([`SpeedChroma::sides`],
    /// [`SpeedTemporal::sides`]).
    loads: Vec<Load>,
    scores: Option<SpeedScores>,
    layout: Option<GpuLayout>,
    tables: Option<Tables>,
    scratch: Option<Scratch>,
    out: Option<Vec<SideOut>>,
}

/// The error of a SpEED chroma asked for on a picture without chroma planes (the host route's
/// own words, engine/host.rs).
pub(crate) fn no_chroma() -> Error {
    Error::Unsupported {
        metric: "speed_chroma",
        reason: "SpEED chroma (and every VMAF v1 model) needs the chroma planes, and the picture \
                 has none (GRAY)"
            .into(),
    }
}

impl SpeedPart {
    fn empty(metric: &'static str, loads: Vec<Load>) -> SpeedPart {
        SpeedPart {
            metric,
            loads,
            scores: None,
            layout: None,
            tables: None,
            scratch: None,
            out: None,
        }
    }

    /// SpEED chroma's part: four sides, the chroma planes (reference U, distorted U,
    /// reference V, distorted V).
    pub(crate) fn chroma(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> SpeedPart {
        let loads = [1, 4, 2, 5].map(Load::Plane).to_vec();
        let mut part = SpeedPart::empty(speed::CHROMA_METRIC, loads);
        let Some(p) = geom.companions.speed_chroma else {
            return part;
        };
        let extractor = match geom.chroma {
            Some((cw, ch)) => SpeedChroma::new(&p, cw, ch, geom.bpc).map(Arc::new),
            None => Err(no_chroma()),
        };
        let layout = extractor
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.gpu_layout());
        if part.prepare(extractor.map(Extractor::Chroma), layout) {
            need_plane[1] = true;
            need_plane[2] = true;
        }
        part
    }

    /// SpEED temporal's part: two sides, the temporal differences of the reference (previous
    /// minus current) and of the distorted picture (previous minus current, or minus the
    /// current reference with `speed_use_ref_diff`), from the luma planes and the previous
    /// frame's ([`PREV_REF`], [`PREV_DIS`]).
    pub(crate) fn temporal(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> SpeedPart {
        let Some(p) = geom.companions.speed_temporal else {
            return SpeedPart::empty(speed::TEMPORAL_METRIC, Vec::new());
        };
        let cur_dis = if p.use_ref_diff { 0 } else { 3 };
        let loads = vec![Load::Diff(PREV_REF, 0), Load::Diff(PREV_DIS, cur_dis)];
        let mut part = SpeedPart::empty(speed::TEMPORAL_METRIC, loads);
        let extractor = SpeedTemporal::new(&p, geom.w, geom.h, geom.bpc).map(Arc::new);
        let layout = extractor
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.gpu_layout());
        if part.prepare(extractor.map(Extractor::Temporal), layout) {
            need_plane[0] = true;
        }
        part
    }

    /// Keep the extractor (or its refusal) and, where the geometry is computed, its layout
    /// (checked); whether it is.
    fn prepare(&mut self, extractor: Result<Extractor>, layout: Result<GpuLayout>) -> bool {
        let (extractor, layout) = match (extractor, layout) {
            (Ok(e), Ok(l)) => {
                check_tables(&l);
                (Ok(e), Some(l))
            }
            (Err(e), _) | (_, Err(e)) => (Err(e), None),
        };
        let computed = layout.is_some();
        self.layout = layout;
        self.scores = Some(SpeedScores {
            extractor,
            out: None,
        });
        computed
    }

    /// Whether the part reads the previous frame's luma planes (SpEED temporal on a geometry
    /// it computes).
    pub(crate) fn reads_previous(&self) -> bool {
        self.layout.is_some()
            && self
                .loads
                .iter()
                .any(|l| matches!(l, Load::Diff(PREV_REF | PREV_DIS, _)))
    }

    pub(crate) fn tables(&mut self, a: &mut Arena) {
        let Some(l) = &self.layout else { return };
        let prescale = l.prescale.as_ref().map(|t| PrescaleRegions {
            method: method_code(t.method),
            taps: t.taps,
            weights: t.col_weight.len() / l.scaled.0,
            col_idx: a.take(4 * t.col_index.len()),
            col_w: a.take(4 * t.col_weight.len()),
            row_idx: a.take(4 * t.row_index.len()),
            row_w: a.take(4 * t.row_weight.len()),
        });
        self.tables = Some(Tables {
            taps: a.take(4 * l.taps.len()),
            rows: a.take(4 * l.rows.len()),
            needed: a.take(4 * l.needed.len()),
            cols: a.take(4 * l.cols.len()),
            small: a.take(4 * l.small_taps.len()),
            prescale,
        });
    }

    pub(crate) fn scratch(&mut self, a: &mut Arena) {
        let Some(l) = &self.layout else { return };
        let (w, h) = l.plane;
        let (sw, sh) = l.scaled;
        let (ow, oh) = l.op;
        self.scratch = Some(Scratch {
            plane: a.take(4 * w * h),
            scaled: l.prescale.as_ref().map(|_| a.take(4 * sw * sh)),
            vert: a.take(4 * oh * l.needed.len()),
            small: a.take(4 * ow * oh),
        });
    }

    pub(crate) fn results(&mut self, a: &mut Arena) {
        let Some(l) = &self.layout else { return };
        let (ow, oh) = l.op;
        let n = self.loads.len();
        // The sides' images, means and covariances each one region, side after side (the
        // statistics' launches take the sides at once).
        let (images, means, cov) = (
            a.take(4 * n * ow * oh),
            a.take(4 * n * 25),
            a.take(4 * n * 625),
        );
        let part = |r: Region, k: usize| {
            let bytes = r.bytes / n;
            Region {
                off: r.off + k * bytes,
                bytes,
            }
        };
        let out: Vec<SideOut> = (0..n)
            .map(|k| SideOut {
                image: part(images, k),
                means: part(means, k),
                cov: part(cov, k),
            })
            .collect();
        if let Some(s) = self.scores.as_mut() {
            s.out = Some(out.clone());
        }
        self.out = Some(out);
    }

    /// The launches, and the constant tables to upload once per geometry.
    pub(crate) fn launches(
        &self,
        inputs: &Inputs,
        tables: &mut Vec<(Region, Vec<u8>)>,
        launches: &mut Vec<Launch>,
    ) {
        let (Some(l), Some(t), Some(s), Some(out)) =
            (&self.layout, self.tables, self.scratch, self.out.as_deref())
        else {
            return;
        };
        let metric = self.metric;
        let mut push = |mut launch: Launch| {
            launch.metric = metric;
            launches.push(launch);
        };
        let f32s = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let i32s = |v: &[usize]| -> Vec<u8> {
            v.iter().flat_map(|&x| (i32_of(x)).to_le_bytes()).collect()
        };
        tables.push((t.taps, f32s(&l.taps)));
        tables.push((t.rows, i32s(&l.rows)));
        tables.push((t.needed, i32s(&l.needed)));
        tables.push((t.cols, i32s(&l.cols)));
        tables.push((t.small, f32s(&l.small_taps)));
        if let (Some(p), Some(pt)) = (&l.prescale, t.prescale) {
            tables.push((pt.col_idx, i32s(&p.col_index)));
            tables.push((pt.col_w, f32s(&p.col_weight)));
            tables.push((pt.row_idx, i32s(&p.row_index)));
            tables.push((pt.row_w, f32s(&p.row_weight)));
        }
        let (w, h) = l.plane;
        let (fw, sfw) = (l.taps.len(), l.small_taps.len());
        let input = |i: usize| inputs[i].expect("the plan uploads the planes its loads read");
        for (k, load) in self.loads.iter().enumerate() {
            push(match *load {
                Load::Plane(i) => launch_speed_load(input(i), w * h, l.bpc, s.plane),
                Load::Diff(p, c) => {
                    launch_speed_load_diff(input(p), input(c), w * h, l.bpc, s.plane)
                }
            });
            // The filter reads the prescaled image, else the plane's top-left scaled size.
            let (img, stride, rows) = match (t.prescale, s.scaled) {
                (Some(pt), Some(scaled)) => {
                    push(launch_speed_prescale(s.plane, (w, h), l.scaled, pt, scaled));
                    (scaled, l.scaled.0, l.scaled.1)
                }
                _ => (s.plane, w, h),
            };
            push(launch_speed_filter_v(
                img,
                (stride, rows),
                (t.taps, fw),
                (t.rows, l.op.1),
                (t.needed, l.needed.len()),
                s.vert,
            ));
            push(launch_speed_filter_h(
                (s.vert, l.needed.len()),
                (t.taps, fw),
                l.op,
                t.cols,
                s.small,
            ));
            let o = out[k];
            debug_assert_eq!(o.image.off, out[0].image.off + k * o.image.bytes);
            push(launch_speed_local_mean(
                s.small,
                l.op,
                (t.small, sfw),
                o.image,
            ));
        }
        // The sides' statistics at once: the sides' regions lie side after side (`results`).
        let n = out.len();
        let all = |f: fn(&SideOut) -> Region| Region {
            off: f(&out[0]).off,
            bytes: n * f(&out[0]).bytes,
        };
        let (images, means, cov) = (all(|o| o.image), all(|o| o.means), all(|o| o.cov));
        push(launch_speed_stats(images, l.op, l.sub, n, means, None));
        push(launch_speed_stats(images, l.op, l.sub, n, means, Some(cov)));
    }

    pub(crate) fn into_scores(self) -> Option<SpeedScores> {
        self.scores
    }
}

/// `speed_prescale`'s method codes.
fn method_code(m: PrescaleMethod) -> i32 {
    match m {
        PrescaleMethod::Nearest => 0,
        PrescaleMethod::Bilinear => 1,
        PrescaleMethod::Bicubic => 2,
        PrescaleMethod::Lanczos4 => 3,
    }
}

/// Every index of the tables lies inside the image it indexes (the kernels rely on it): the
/// CPU's own construction guarantees it; this makes it a checked fact of every plan.
fn check_tables(l: &GpuLayout) {
    let (w, h) = l.plane;
    let (sw, sh) = l.scaled;
    let (ow, oh) = l.op;
    let fw = l.taps.len();
    // The image the filter reads: the prescaled one, or the plane's top-left scaled size.
    let (stride, rows) = if l.prescale.is_some() {
        (sw, sh)
    } else {
        (w, h)
    };
    assert!(
        sw <= stride && sh <= rows,
        "scaled {sw}x{sh} inside {stride}x{rows}"
    );
    assert_eq!(l.rows.len(), oh * fw);
    assert_eq!(l.cols.len(), ow * fw);
    assert!(l.rows.iter().all(|&r| r < sh), "filter rows inside");
    assert!(l.needed.iter().all(|&c| c < sw), "filter columns inside");
    assert!(
        l.cols.iter().all(|&c| c < l.needed.len()),
        "column positions inside"
    );
    assert!(l.small_taps.len() / 2 < ow.min(oh));
    assert!(l.sub.0 + 4 <= ow && l.sub.1 + 4 <= oh);
    if let Some(p) = &l.prescale {
        assert_eq!(p.col_index.len(), p.taps * sw);
        assert_eq!(p.row_index.len(), p.taps * sh);
        assert!(p.col_index.iter().all(|&i| i < w) && p.row_index.iter().all(|&i| i < h));
        assert_eq!(
            p.col_weight.len() / sw.max(1),
            p.row_weight.len() / sh.max(1)
        );
        assert!(p.col_index.len() <= i32::MAX as usize);
    }
}

impl SpeedScores {
    /// The sides' statistics from the read-back results (`bytes` of a region).
    pub(crate) fn sides(&self, bytes: &dyn Fn(Region) -> Vec<u8>) -> Option<Vec<SpeedSide>> {
        let out = self.out.as_ref()?;
        let floats = |r: Region| -> Vec<f32> {
            bytes(r)
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect()
        };
        Some(
            out.iter()
                .map(|o| {
                    let m = floats(o.means);
                    let mut means = [0f32; 25];
                    means.copy_from_slice(&m[..25]);
                    SpeedSide {
                        image: floats(o.image),
                        means,
                        cov: floats(o.cov),
                    }
                })
                .collect(),
        )
    }

    /// SpEED chroma's scores: the CPU's refusal, or the host's tail on the GPU's statistics.
    pub(crate) fn finish_chroma(
        &self,
        bytes: &dyn Fn(Region) -> Vec<u8>,
    ) -> Result<speed::SpeedChromaScores> {
        match self.extractor.as_ref().map_err(Clone::clone)? {
            Extractor::Chroma(e) => e.finish(&self.sides_of(bytes, speed::CHROMA_METRIC)?),
            Extractor::Temporal(_) => Err(super::companion_plan::missing(speed::CHROMA_METRIC)),
        }
    }

    /// SpEED temporal's score of a frame with a previous one, likewise.
    pub(crate) fn finish_temporal(&self, bytes: &dyn Fn(Region) -> Vec<u8>) -> Result<f64> {
        match self.extractor.as_ref().map_err(Clone::clone)? {
            Extractor::Temporal(e) => e.finish(&self.sides_of(bytes, speed::TEMPORAL_METRIC)?),
            Extractor::Chroma(_) => Err(super::companion_plan::missing(speed::TEMPORAL_METRIC)),
        }
    }

    /// The `N` sides' statistics of `metric`, or the error that the plan has none.
    fn sides_of<const N: usize>(
        &self,
        bytes: &dyn Fn(Region) -> Vec<u8>,
        metric: &str,
    ) -> Result<[SpeedSide; N]> {
        self.sides(bytes)
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| super::companion_plan::missing(metric))
    }
}
