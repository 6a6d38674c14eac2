//! SpEED chroma's part of a frame's companion [`CompanionPlan`]: for each of the four plane sides
//! (reference U, distorted U, reference V, distorted V) the device computes what
//! [`SpeedChroma::sides`] computes on the CPU ([`SpeedSide`]: the operating image after the
//! local-mean removal, the 25 means and the 25x25 covariances, each sum in the CPU's order and
//! types, kernels/speed.cu), and the host finishes the score from them with the CPU's own code
//! ([`SpeedChroma::finish`]: eigenvalues, QR, entropies and `log2` stay there).
//!
//! The tables (prescale indices and weights, filter taps, the sampled filter's mirrored rows and
//! needed columns) are the CPU's ([`GpuLayout`]), uploaded once per geometry. The four sides
//! share one set of scratch images (their launches run in order on the metric's stream), then
//! one launch computes the four sides' means and one their covariances; each side's statistics
//! are results (read back: 4 x (op_w x op_h + 650) floats, 130 KB at 4K
//! 4:2:0).
//!
//! [`CompanionPlan`]: super::companion_plan::CompanionPlan

use std::sync::Arc;

use super::companion_plan::{Arena, CompanionGeometry, Inputs};
use super::launch::*;
use crate::error::{Error, Result};
use crate::features::speed::{self, GpuLayout, PrescaleMethod, SpeedChroma, SpeedSide};

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

/// What the plan keeps for the frame's scores: the CPU extractor (the host's tail) or the CPU's
/// refusal of the geometry, and where the sides' results are.
#[derive(Clone, Debug)]
pub(crate) struct SpeedScores {
    pub(crate) extractor: Result<Arc<SpeedChroma>>,
    pub(crate) out: Option<[SideOut; 4]>,
}

/// The part (`None` fields where SpEED chroma is not asked for or the CPU refuses the
/// geometry).
pub(crate) struct SpeedPart {
    scores: Option<SpeedScores>,
    layout: Option<GpuLayout>,
    tables: Option<Tables>,
    scratch: Option<Scratch>,
    out: Option<[SideOut; 4]>,
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
    pub(crate) fn new(geom: &CompanionGeometry, need_plane: &mut [bool; 3]) -> SpeedPart {
        let mut part = SpeedPart {
            scores: None,
            layout: None,
            tables: None,
            scratch: None,
            out: None,
        };
        let Some(p) = geom.companions.speed_chroma else {
            return part;
        };
        let extractor = match geom.chroma {
            Some((cw, ch)) => SpeedChroma::new(&p, cw, ch, geom.bpc).map(Arc::new),
            None => Err(no_chroma()),
        };
        let layout = extractor.as_ref().map_err(Clone::clone).and_then(|e| {
            let l = e.gpu_layout()?;
            check_tables(&l);
            Ok(l)
        });
        match layout {
            Ok(l) => {
                need_plane[1] = true;
                need_plane[2] = true;
                part.layout = Some(l);
                part.scores = Some(SpeedScores {
                    extractor,
                    out: None,
                });
            }
            Err(e) => {
                part.scores = Some(SpeedScores {
                    extractor: Err(e),
                    out: None,
                });
            }
        }
        part
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
        // The four sides' images, means and covariances each one region, side after side (the
        // statistics' launches take the four sides at once).
        let (images, means, cov) = (
            a.take(4 * 4 * ow * oh),
            a.take(4 * 4 * 25),
            a.take(4 * 4 * 625),
        );
        let part = |r: Region, k: usize| {
            let bytes = r.bytes / 4;
            Region {
                off: r.off + k * bytes,
                bytes,
            }
        };
        self.out = Some(std::array::from_fn(|k| SideOut {
            image: part(images, k),
            means: part(means, k),
            cov: part(cov, k),
        }));
        if let Some(s) = self.scores.as_mut() {
            s.out = self.out;
        }
    }

    /// The launches, and the constant tables to upload once per geometry.
    pub(crate) fn launches(
        &self,
        inputs: &Inputs,
        tables: &mut Vec<(Region, Vec<u8>)>,
        launches: &mut Vec<Launch>,
    ) {
        let (Some(l), Some(t), Some(s), Some(out)) =
            (&self.layout, self.tables, self.scratch, self.out)
        else {
            return;
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
        // Reference U, distorted U, reference V, distorted V (SpeedChroma::sides' order).
        for (k, input) in [1, 4, 2, 5].into_iter().enumerate() {
            let src = inputs[input].expect("the plan uploads the chroma planes");
            launches.push(launch_speed_load(src, w * h, l.bpc, s.plane));
            // The filter reads the prescaled image, else the plane's top-left scaled size.
            let (img, stride, rows) = match (t.prescale, s.scaled) {
                (Some(pt), Some(scaled)) => {
                    launches.push(launch_speed_prescale(s.plane, (w, h), l.scaled, pt, scaled));
                    (scaled, l.scaled.0, l.scaled.1)
                }
                _ => (s.plane, w, h),
            };
            launches.push(launch_speed_filter_v(
                img,
                (stride, rows),
                (t.taps, fw),
                (t.rows, l.op.1),
                (t.needed, l.needed.len()),
                s.vert,
            ));
            launches.push(launch_speed_filter_h(
                (s.vert, l.needed.len()),
                (t.taps, fw),
                l.op,
                t.cols,
                s.small,
            ));
            let o = out[k];
            debug_assert_eq!(o.image.off, out[0].image.off + k * o.image.bytes);
            launches.push(launch_speed_local_mean(
                s.small,
                l.op,
                (t.small, sfw),
                o.image,
            ));
        }
        // The four sides' statistics at once: the sides' regions lie side after side
        // (`results`).
        let all = |f: fn(&SideOut) -> Region| Region {
            off: f(&out[0]).off,
            bytes: 4 * f(&out[0]).bytes,
        };
        let (images, means, cov) = (all(|o| o.image), all(|o| o.means), all(|o| o.cov));
        launches.push(launch_speed_stats(images, l.op, l.sub, 4, means, None));
        launches.push(launch_speed_stats(images, l.op, l.sub, 4, means, Some(cov)));
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
    /// The four sides' statistics from the read-back results (`bytes` of a region).
    pub(crate) fn sides(&self, bytes: &dyn Fn(Region) -> Vec<u8>) -> Option<[SpeedSide; 4]> {
        let out = self.out?;
        let floats = |r: Region| -> Vec<f32> {
            bytes(r)
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect()
        };
        Some(out.map(|o| {
            let m = floats(o.means);
            let mut means = [0f32; 25];
            means.copy_from_slice(&m[..25]);
            SpeedSide {
                image: floats(o.image),
                means,
                cov: floats(o.cov),
            }
        }))
    }

    /// The scores: the CPU's refusal, or the host's tail on the GPU's statistics.
    pub(crate) fn finish(
        &self,
        bytes: &dyn Fn(Region) -> Vec<u8>,
    ) -> Result<speed::SpeedChromaScores> {
        let e = self.extractor.as_ref().map_err(Clone::clone)?;
        let sides = self
            .sides(bytes)
            .ok_or_else(|| super::companion_plan::missing("speed_chroma"))?;
        e.finish(&sides)
    }
}
