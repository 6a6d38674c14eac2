use super::*;
use crate::features::{ciede, ms_ssim, psnr, psnr_hvs, ssim};
use crate::picture::{Chroma, Plane, PlaneRef};

const ALL: Companions = Companions {
    psnr: true,
    ssim: true,
    ms_ssim: true,
    ciede: true,
    psnr_hvs: true,
    cambi: None,
    speed_chroma: None,
    speed_temporal: None,
};

/// An I420 picture over one buffer (Y then U then V, GStreamer's odd-size rounding up).
fn i420(buf: &[u8], w: usize, h: usize) -> Picture<'_> {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let (y, rest) = buf.split_at(w * h);
    let (u, v) = rest.split_at(cw * ch);
    Picture {
        width: w,
        height: h,
        bpc: 8,
        format: ChromaFormat::Yuv420,
        luma: PlaneRef { data: y, stride: w },
        chroma: Chroma::Planar {
            u: PlaneRef {
                data: u,
                stride: cw,
            },
            v: PlaneRef {
                data: v,
                stride: cw,
            },
        },
    }
}

/// The frame copy at sizes that take the threaded path (and one that does not): the same
/// planes as the sequential copies, chroma at libvmaf's size, and a bad plane's error is the
/// sequential order's first (here: a reference plane too short fails before the distorted
/// one).
#[test]
fn frame_copy_equals_sequential_copies() {
    for (w, h) in [(1920usize, 1080usize), (1281, 819), (64, 48)] {
        let (rb, db) = (content(w, h, 1, true), content(w, h, 2, false));
        let (r, d) = (i420(&rb, w, h), i420(&db, w, h));
        let (mut rl, mut dl) = (OwnedPlane::default(), OwnedPlane::default());
        let mut pair = ChromaPair::default();
        let has = copy_frame(&r, &mut rl, &d, &mut dl, Some(&mut pair)).unwrap();
        assert!(has, "{w}x{h}: chroma expected");
        let (mut wr, mut wd) = (OwnedPlane::default(), OwnedPlane::default());
        r.copy_luma(&mut wr).unwrap();
        d.copy_luma(&mut wd).unwrap();
        assert_eq!((rl.data, dl.data), (wr.data, wd.data), "{w}x{h} luma");
        let mut want = ChromaPair::default();
        let [ru, rv] = &mut want.reference;
        assert!(r.copy_chroma_libvmaf(ru, rv).unwrap());
        let [du, dv] = &mut want.distorted;
        assert!(d.copy_chroma_libvmaf(du, dv).unwrap());
        for k in 0..2 {
            assert_eq!(
                pair.reference[k].data, want.reference[k].data,
                "{w}x{h} ref chroma {k}"
            );
            assert_eq!(
                pair.distorted[k].data, want.distorted[k].data,
                "{w}x{h} dis chroma {k}"
            );
            assert_eq!(
                pair.reference[k].width,
                (w >> 1),
                "{w}x{h}: libvmaf's chroma width"
            );
        }
        // Without chroma wanted: lumas only.
        let (mut a, mut b) = (OwnedPlane::default(), OwnedPlane::default());
        assert!(!copy_frame(&r, &mut a, &d, &mut b, None).unwrap());
        // A reference luma too short fails first, as the sequential copy reports.
        let short = Picture {
            luma: PlaneRef {
                data: &rb[..w * h / 2],
                stride: w,
            },
            ..r
        };
        let seq = short.copy_luma(&mut OwnedPlane::default()).unwrap_err();
        let got = copy_frame(&short, &mut a, &d, &mut b, Some(&mut pair)).unwrap_err();
        assert_eq!(format!("{got:?}"), format!("{seq:?}"), "{w}x{h}");
    }
}

fn content(w: usize, h: usize, t: usize, noisy: bool) -> Vec<u8> {
    let n = w * h + 2 * w.div_ceil(2) * h.div_ceil(2);
    (0..n)
        .map(|i| {
            let v = (i * 7 + t * 31 + (i / w) * 13 + (i * i) % 17) % 240;
            let e = if noisy { (i * 2654435761 + t) % 9 } else { 0 };
            (v + e) as u8
        })
        .collect()
}

fn scorer(companions: Companions, subsample: u32) -> Scorer {
    Scorer::new(ScorerConfig {
        threads: 2,
        backend: BackendKind::Cpu,
        companions,
        subsample,
        ..Default::default()
    })
    .unwrap()
}

/// The engine's companion metrics are the feature functions' values on libvmaf's planes
/// (odd size: chroma cropped to `w >> 1` x `h >> 1`), in libvmaf's report order, and
/// `metric_names()` lists the same names in the same order.
#[test]
fn companion_metrics_equal_the_feature_functions_in_report_order() {
    let (w, h) = (181, 177); // odd: GStreamer chroma 91x89, libvmaf 90x88
    let mut s = scorer(ALL, 1);
    let frames: Vec<_> = (0..3)
        .map(|t| (content(w, h, t, false), content(w, h, t, true)))
        .collect();
    let mut out = Vec::new();
    for (r, d) in &frames {
        out.extend(s.push(&i420(r, w, h), &i420(d, w, h)).unwrap());
    }
    let (last, _summary) = s.finish().unwrap();
    out.extend(last);
    assert_eq!(out.len(), 3);
    let mut bad = Vec::new();
    for (f, (r, d)) in out.iter().zip(&frames) {
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let planes = |b: &[u8]| -> [Vec<u16>; 3] {
            let y: Vec<u16> = b[..w * h].iter().map(|&v| u16::from(v)).collect();
            let crop = |off: usize| -> Vec<u16> {
                (0..h / 2)
                    .flat_map(|row| {
                        b[off + row * cw..off + row * cw + w / 2]
                            .iter()
                            .map(|&v| u16::from(v))
                    })
                    .collect()
            };
            [y, crop(w * h), crop(w * h + cw * ch)]
        };
        let (rp, dp) = (planes(r), planes(d));
        fn view(p: &[Vec<u16>; 3], w: usize, h: usize) -> [Plane<'_>; 3] {
            [
                Plane::from_slice(&p[0], w, h, 8),
                Plane::from_slice(&p[1], w / 2, h / 2, 8),
                Plane::from_slice(&p[2], w / 2, h / 2, 8),
            ]
        }
        let (rv, dv) = (view(&rp, w, h), view(&dp, w, h));
        let p = psnr::psnr(&rv, &dv).unwrap();
        let hv = psnr_hvs::psnr_hvs(&rv, &dv).unwrap();
        let want = [
            ("psnr_y", p.y),
            ("psnr_cb", p.cb.unwrap()),
            ("psnr_cr", p.cr.unwrap()),
            ("float_ssim", ssim::ssim(rv[0], dv[0]).unwrap().ssim),
            (
                "float_ms_ssim",
                ms_ssim::ms_ssim(rv[0], dv[0]).unwrap().ms_ssim,
            ),
            ("ciede2000", ciede::ciede(&rv, &dv).unwrap()),
            ("psnr_hvs_y", hv.y),
            ("psnr_hvs_cb", hv.cb),
            ("psnr_hvs_cr", hv.cr),
            ("psnr_hvs", hv.psnr_hvs),
        ];
        for (name, v) in want {
            if f.get(name) != Some(v) {
                bad.push(format!(
                    "frame {} {name}: {:?} != {v}",
                    f.index,
                    f.get(name)
                ));
            }
        }
        let names: Vec<&str> = f.metrics.iter().map(|(n, _)| n.as_str()).collect();
        if names != s.metric_names() {
            bad.push(format!(
                "frame {} names {names:?} != metric_names()",
                f.index
            ));
        }
        // libvmaf's order: PSNR first, the other companions after the model's features
        // and before integer_motion2.
        let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
        if !(pos("psnr_cr") < pos("integer_adm2")
            && pos("integer_vif_scale3") < pos("float_ssim")
            && pos("psnr_hvs") < pos("integer_motion2"))
        {
            bad.push(format!("frame {} order {names:?}", f.index));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// What libvmaf refuses is a typed error naming the metric, and the scorer stays usable.
#[test]
fn refused_companions_are_errors_that_change_nothing() {
    let (w, h) = (64, 64);
    let (r, d) = (content(w, h, 0, false), content(w, h, 0, true));
    // MS-SSIM below 176x176.
    let mut s = scorer(
        Companions {
            ms_ssim: true,
            ..Default::default()
        },
        1,
    );
    let e = s.push(&i420(&r, w, h), &i420(&d, w, h)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsupported {
                metric: "float_ms_ssim",
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(s.frames_pushed(), 0);
    // CIEDE2000 and PSNR-HVS without chroma.
    for (c, metric) in [
        (
            Companions {
                ciede: true,
                ..Default::default()
            },
            "ciede",
        ),
        (
            Companions {
                psnr_hvs: true,
                ..Default::default()
            },
            "psnr_hvs",
        ),
    ] {
        let mut s = scorer(c, 1);
        let mut gray = i420(&r, w, h);
        gray.format = ChromaFormat::Gray;
        gray.chroma = Chroma::None;
        let e = s.push(&gray, &gray).unwrap_err();
        assert!(
            matches!(&e, Error::Unsupported { metric: m, .. } if *m == metric),
            "{e:?}"
        );
        assert_eq!(s.frames_pushed(), 0);
        // the same scorer takes a picture with chroma
        assert!(s.push(&i420(&r, w, h), &i420(&d, w, h)).is_ok());
        assert_eq!(s.frames_pushed(), 1);
    }
    // PSNR of a GRAY picture is luma only.
    let mut s = scorer(
        Companions {
            psnr: true,
            ..Default::default()
        },
        1,
    );
    let mut gr = i420(&r, w, h);
    let mut gd = i420(&d, w, h);
    for p in [&mut gr, &mut gd] {
        p.format = ChromaFormat::Gray;
        p.chroma = Chroma::None;
    }
    s.push(&gr, &gd).unwrap();
    let (f, summary) = s.finish().unwrap();
    assert!(f[0].get("psnr_y").is_some());
    assert_eq!(f[0].get("psnr_cb"), None);
    assert!(summary.get("psnr_y").is_some());
}

/// Subsampling skips the companion metrics with the features: only scored frames carry
/// them, with the same values as without subsampling.
#[test]
fn subsampled_frames_skip_companions() {
    let (w, h) = (48, 40);
    let c = Companions {
        psnr: true,
        ssim: true,
        ..Default::default()
    };
    let frames: Vec<_> = (0..5)
        .map(|t| (content(w, h, t, false), content(w, h, t, true)))
        .collect();
    let run = |sub: u32| {
        let mut s = scorer(c, sub);
        let mut out = Vec::new();
        for (r, d) in &frames {
            out.extend(s.push(&i420(r, w, h), &i420(d, w, h)).unwrap());
        }
        out.extend(s.finish().unwrap().0);
        out
    };
    let all = run(1);
    let sub = run(2);
    assert_eq!(
        sub.iter().map(|f| f.index).collect::<Vec<_>>(),
        vec![0, 2, 4]
    );
    for f in &sub {
        let full = &all[f.index as usize];
        for n in ["psnr_y", "psnr_cb", "psnr_cr", "float_ssim"] {
            assert_eq!(f.get(n), full.get(n), "frame {} {n}", f.index);
            assert!(f.get(n).is_some());
        }
    }
}
