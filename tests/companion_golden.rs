//! The companion metrics (PSNR, SSIM, MS-SSIM, CIEDE2000, PSNR-HVS) against libvmaf 3.2.0's
//! golden numbers: every frame of every golden pair, compared with `==` on f64.

mod common;

use common::{Mismatches, Pair};
use gstvmafgpu::Error;
use gstvmafgpu::features::{ciede, ms_ssim, psnr, psnr_hvs, ssim};
use gstvmafgpu::picture::Plane;

/// The Y, U, V planes of every frame of one side, as compact u16 planes.
fn frames(pair: &Pair, side: &str) -> Vec<[Vec<u16>; 3]> {
    let raw = pair.raw(side);
    let bps = if pair.bpc > 8 { 2 } else { 1 };
    let (w, h) = (pair.width, pair.height);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let sizes = [w * h, cw * ch, cw * ch];
    raw.chunks_exact(pair.frame_bytes())
        .map(|f| {
            let mut off = 0;
            sizes.map(|n| {
                let bytes = &f[off * bps..(off + n) * bps];
                off += n;
                if bps == 1 {
                    bytes.iter().map(|&b| u16::from(b)).collect()
                } else {
                    bytes
                        .chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect()
                }
            })
        })
        .collect()
}

fn planes<'a>(pair: &Pair, f: &'a [Vec<u16>; 3]) -> [Plane<'a>; 3] {
    let (w, h) = (pair.width, pair.height);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    [
        Plane::from_slice(&f[0], w, h, pair.bpc),
        Plane::from_slice(&f[1], cw, ch, pair.bpc),
        Plane::from_slice(&f[2], cw, ch, pair.bpc),
    ]
}

fn check_pair(pair: Pair) {
    let golden = pair.golden(None);
    assert_eq!(golden.frames(), pair.frames);
    let refs = frames(&pair, "ref");
    let diss = frames(&pair, "dis");
    let mut mm = Mismatches::default();
    let mut checked = 0;
    let mut refused = 0;
    for (i, (rf, df)) in refs.iter().zip(&diss).enumerate() {
        let r = planes(&pair, rf);
        let d = planes(&pair, df);
        let mut cmp = |name: &str, got: f64| {
            let want = golden
                .frame(i, name)
                .unwrap_or_else(|| panic!("{}: frame {i} has no {name}", pair.name));
            mm.check(|| format!("{} frame {i} {name}", pair.name), got, want);
            checked += 1;
        };

        let p = psnr::psnr(&r, &d).unwrap();
        cmp("psnr_y", p.y);
        cmp("psnr_cb", p.cb.unwrap());
        cmp("psnr_cr", p.cr.unwrap());

        cmp("float_ssim", ssim::ssim(r[0], d[0]).unwrap().ssim);

        cmp("ciede2000", ciede::ciede(&r, &d).unwrap());

        let h = psnr_hvs::psnr_hvs(&r, &d).unwrap();
        cmp("psnr_hvs_y", h.y);
        cmp("psnr_hvs_cb", h.cb);
        cmp("psnr_hvs_cr", h.cr);
        cmp("psnr_hvs", h.psnr_hvs);

        match ms_ssim::ms_ssim(r[0], d[0]) {
            Ok(m) => cmp("float_ms_ssim", m.ms_ssim),
            Err(e) => {
                // libvmaf refuses MS-SSIM below 5 pyramid levels and reports nothing.
                assert!(
                    matches!(
                        e,
                        Error::Unsupported {
                            metric: "float_ms_ssim",
                            ..
                        }
                    ),
                    "{e}"
                );
                assert_eq!(
                    golden.frame(i, "float_ms_ssim"),
                    None,
                    "{} frame {i}",
                    pair.name
                );
                refused += 1;
            }
        }
    }
    if pair.name == "carphone" {
        assert_eq!(refused, pair.frames, "MS-SSIM must be refused at 176x144");
    } else {
        assert_eq!(refused, 0);
    }
    mm.finish(checked);
}

#[test]
fn carphone() {
    check_pair(common::CARPHONE);
}

#[test]
fn bbb720() {
    check_pair(common::BBB720);
}

#[test]
fn bbb360p10() {
    check_pair(common::BBB360P10);
}
