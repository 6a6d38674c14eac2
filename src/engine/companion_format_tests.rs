use super::*;
use crate::features::{ciede, ms_ssim, psnr, psnr_hvs, ssim};
use crate::picture::{Chroma, Plane, PlaneRef};

/// Little-endian bytes of a plane of `w` x `h` samples at `bpc` bits (1 byte at 8 bits).
fn bytes(v: &[u16], bpc: u8) -> Vec<u8> {
    if bpc == 8 {
        v.iter().map(|&x| x as u8).collect()
    } else {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}

fn samples(n: usize, bpc: u8, seed: u64, base: Option<&[u16]>) -> Vec<u16> {
    let max = (1u64 << bpc) - 1;
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|i| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            match base {
                // the distorted plane: the reference plus bounded noise
                Some(b) => {
                    let noise = (s >> 40) % (max / 16 + 2);
                    (u64::from(b[i]) + noise).min(max) as u16
                }
                None => {
                    (((i as u64 * 37) % (max + 1)) ^ ((s >> 33) % (max / 4 + 1))).min(max) as u16
                }
            }
        })
        .collect()
}

type Geom = (usize, usize, u8, ChromaFormat, usize, usize);

fn pic(b: &[Vec<u8>], (w, h, bpc, format, cstride, stride): Geom) -> Picture<'_> {
    Picture {
        width: w,
        height: h,
        bpc,
        format,
        luma: PlaneRef {
            data: &b[0],
            stride,
        },
        chroma: Chroma::Planar {
            u: PlaneRef {
                data: &b[1],
                stride: cstride,
            },
            v: PlaneRef {
                data: &b[2],
                stride: cstride,
            },
        },
    }
}

/// Every chroma format and bit depth through the engine: the companion metrics equal the
/// feature functions on libvmaf's planes (chroma rounded down at odd sizes). All mismatches
/// are collected, then the test fails once.
#[test]
fn every_format_and_depth_equals_the_feature_functions() {
    let (w, h) = (179, 181);
    let mut bad = Vec::new();
    let mut checked = 0;
    for format in [
        ChromaFormat::Yuv420,
        ChromaFormat::Yuv422,
        ChromaFormat::Yuv444,
    ] {
        // GStreamer's stored chroma size (rounded up) and libvmaf's (rounded down).
        let (gw, gh) = format.chroma_size(w, h).unwrap();
        let (lw, lh) = match format {
            ChromaFormat::Yuv420 => (w / 2, h / 2),
            ChromaFormat::Yuv422 => (w / 2, h),
            _ => (w, h),
        };
        for bpc in [8u8, 10, 12, 16] {
            let c = Companions {
                psnr: true,
                ssim: true,
                ms_ssim: true,
                ciede: true,
                psnr_hvs: bpc <= 12,
                cambi: None,
                speed_chroma: None,
                speed_temporal: None,
            };
            let mut s = Scorer::new(ScorerConfig {
                threads: 2,
                backend: BackendKind::Cpu,
                companions: c,
                ..Default::default()
            })
            .unwrap();
            let seed = u64::from(bpc) * 10 + format as u64;
            let r: Vec<Vec<u16>> = [w * h, gw * gh, gw * gh]
                .iter()
                .enumerate()
                .map(|(p, &n)| samples(n, bpc, seed + p as u64, None))
                .collect();
            let d: Vec<Vec<u16>> = r
                .iter()
                .enumerate()
                .map(|(p, x)| samples(x.len(), bpc, seed + 7 + p as u64, Some(x)))
                .collect();
            let rb: Vec<Vec<u8>> = r.iter().map(|p| bytes(p, bpc)).collect();
            let db: Vec<Vec<u8>> = d.iter().map(|p| bytes(p, bpc)).collect();
            let bps = if bpc == 8 { 1 } else { 2 };
            let geom = (w, h, bpc, format, gw * bps, w * bps);
            let (rp, dp) = (pic(&rb, geom), pic(&db, geom));
            let mut out = s.push(&rp, &dp).unwrap();
            out.extend(s.finish().unwrap().0);
            let f = &out[0];
            // libvmaf's planes: luma as is, chroma cropped to lw x lh.
            let crop = |p: &[u16]| -> Vec<u16> {
                (0..lh)
                    .flat_map(|y| p[y * gw..y * gw + lw].iter().copied())
                    .collect()
            };
            let (rc, dc) = ([crop(&r[1]), crop(&r[2])], [crop(&d[1]), crop(&d[2])]);
            let rv = [
                Plane::from_slice(&r[0], w, h, bpc),
                Plane::from_slice(&rc[0], lw, lh, bpc),
                Plane::from_slice(&rc[1], lw, lh, bpc),
            ];
            let dv = [
                Plane::from_slice(&d[0], w, h, bpc),
                Plane::from_slice(&dc[0], lw, lh, bpc),
                Plane::from_slice(&dc[1], lw, lh, bpc),
            ];
            let p = psnr::psnr(&rv, &dv).unwrap();
            let mut want = vec![
                ("psnr_y", p.y),
                ("psnr_cb", p.cb.unwrap()),
                ("psnr_cr", p.cr.unwrap()),
                ("float_ssim", ssim::ssim(rv[0], dv[0]).unwrap().ssim),
                (
                    "float_ms_ssim",
                    ms_ssim::ms_ssim(rv[0], dv[0]).unwrap().ms_ssim,
                ),
                ("ciede2000", ciede::ciede(&rv, &dv).unwrap()),
            ];
            if c.psnr_hvs {
                let hv = psnr_hvs::psnr_hvs(&rv, &dv).unwrap();
                want.extend([
                    ("psnr_hvs_y", hv.y),
                    ("psnr_hvs_cb", hv.cb),
                    ("psnr_hvs_cr", hv.cr),
                    ("psnr_hvs", hv.psnr_hvs),
                ]);
            }
            for (name, v) in want {
                checked += 1;
                if f.get(name) != Some(v) {
                    bad.push(format!(
                        "{format:?} {bpc}-bit {name}: {:?} != {v}",
                        f.get(name)
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {checked} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert_eq!(checked, 3 * (3 * 10 + 6));
}
