//! Live differential tests against libvmaf 2.3.1 (vendored and built by the crate libvmaf-sys
//! 0.4.4), on synthetic content (tests/common/synth.rs) of many sizes, every bit depth from 8 to
//! 16 and padded strides.
//!
//! Only what 2.3.1 computes exactly as 3.2.0 does is compared (tests/data/goldens/UPSTREAM-README.md):
//! integer VIF everywhere, and integer ADM with libvmaf's C code (`cpumask` 255 below; 2.3.1's AVX2
//! ADM is wrong at some sizes). Motion changed in 3.x and is checked against 3.2.0 in
//! tests/oracle_v320.rs instead.

mod common;
#[path = "common/synth.rs"]
mod synth;

use std::ffi::CString;

use common::Mismatches;
use gstvmafgpu::features::adm::{self, AdmParams};
use gstvmafgpu::features::vif::{self, VifParams};
use gstvmafgpu::picture::{ChromaFormat, Plane};
use libvmaf_sys as sys;
use synth::{Kind, Spec, SplitMix64};

/// One libvmaf 2.3.1 context scoring luma-only pictures with its plain C code.
struct Libvmaf231 {
    ctx: *mut sys::VmafContext,
    next_index: u32,
}

impl Libvmaf231 {
    /// A context with the named feature extractors ("vif", "adm"), default options.
    fn new(features: &[&str]) -> Self {
        let cfg = sys::VmafConfiguration {
            log_level: sys::VmafLogLevel::VMAF_LOG_LEVEL_NONE,
            n_threads: 0,
            n_subsample: 0,
            // Every SIMD path off: libvmaf's C code, the reference.
            cpumask: 255,
        };
        let mut ctx = std::ptr::null_mut();
        // SAFETY: vmaf_init writes a new context to `ctx`.
        assert_eq!(unsafe { sys::vmaf_init(&mut ctx, cfg) }, 0, "vmaf_init");
        for f in features {
            let name = CString::new(*f).unwrap();
            // SAFETY: ctx is a live context, name a NUL-terminated string, no options.
            let rc = unsafe { sys::vmaf_use_feature(ctx, name.as_ptr(), std::ptr::null_mut()) };
            assert_eq!(rc, 0, "vmaf_use_feature({f})");
        }
        Libvmaf231 { ctx, next_index: 0 }
    }

    fn picture(p: &Plane<'_>) -> sys::VmafPicture {
        // SAFETY: VmafPicture is plain data; vmaf_picture_alloc fills it in.
        let mut pic: sys::VmafPicture = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            sys::vmaf_picture_alloc(
                &mut pic,
                sys::VmafPixelFormat::VMAF_PIX_FMT_YUV400P,
                p.bpc as u32,
                p.width as u32,
                p.height as u32,
            )
        };
        assert_eq!(rc, 0, "vmaf_picture_alloc");
        let stride = pic.stride[0] as usize;
        for y in 0..p.height {
            let row = p.row(y);
            // SAFETY: the allocated plane has `height` rows of `stride` bytes, stride >= width
            // samples of 1 (8-bit) or 2 bytes.
            unsafe {
                let dst = (pic.data[0] as *mut u8).add(y * stride);
                if p.bpc == 8 {
                    for (x, &v) in row.iter().enumerate() {
                        *dst.add(x) = v as u8;
                    }
                } else {
                    let dst = dst as *mut u16;
                    for (x, &v) in row.iter().enumerate() {
                        *dst.add(x) = v;
                    }
                }
            }
        }
        pic
    }

    /// Scores one pair; returns its frame index.
    fn read(&mut self, r: &Plane<'_>, d: &Plane<'_>) -> u32 {
        let mut pr = Self::picture(r);
        let mut pd = Self::picture(d);
        let i = self.next_index;
        // SAFETY: both pictures are freshly allocated; libvmaf takes ownership of them.
        let rc = unsafe { sys::vmaf_read_pictures(self.ctx, &mut pr, &mut pd, i) };
        assert_eq!(rc, 0, "vmaf_read_pictures");
        self.next_index += 1;
        i
    }

    fn flush(&mut self) {
        // SAFETY: NULL pictures flush the context.
        let rc = unsafe {
            sys::vmaf_read_pictures(self.ctx, std::ptr::null_mut(), std::ptr::null_mut(), 0)
        };
        assert_eq!(rc, 0, "vmaf flush");
    }

    fn score(&self, name: &str, index: u32) -> f64 {
        let c = CString::new(name).unwrap();
        let mut s = 0.0;
        // SAFETY: ctx is live, c NUL-terminated, s a valid out pointer.
        let rc = unsafe { sys::vmaf_feature_score_at_index(self.ctx, c.as_ptr(), &mut s, index) };
        assert_eq!(rc, 0, "no {name} for frame {index}");
        s
    }
}

impl Drop for Libvmaf231 {
    fn drop(&mut self) {
        // SAFETY: ctx came from vmaf_init and is closed once.
        unsafe { sys::vmaf_close(self.ctx) };
    }
}

/// The clips (2 frames each): a few fixed sizes that matter (the 33x33 minimum, widths where libvmaf's SIMD
/// disagrees with its C code, sizes just above multiples of the SIMD widths), then random sizes,
/// depths, kinds and strides from a fixed seed.
fn cases() -> Vec<(Spec, usize)> {
    let fixed = [
        (33, 33, 8),
        (33, 33, 16),
        (34, 36, 9),
        (66, 41, 10),
        (100, 57, 11),
        (130, 45, 12),
        (161, 38, 13),
        (65, 65, 14),
        (129, 67, 15),
        (257, 35, 16),
        (176, 144, 8),
    ];
    let mut v = Vec::new();
    let mut rng = SplitMix64(0x5EED_0231);
    for (i, (w, h, bpc)) in fixed.into_iter().enumerate() {
        let kind = Kind::ALL[i % Kind::ALL.len()];
        let pad = [0, 1, 7, 32][i % 4];
        v.push((spec(w, h, bpc, kind, 1000 + i as u64), pad));
    }
    for i in 0..46 {
        // 40 small to mid sizes, then 6 up to 1000x600.
        let (wr, hr) = if i < 40 { (268, 200) } else { (968, 568) };
        let w = 33 + rng.below(wr) as usize;
        let h = 33 + rng.below(hr) as usize;
        let bpc = 8 + rng.below(9) as u8;
        let kind = Kind::ALL[rng.below(Kind::ALL.len() as u64) as usize];
        let pad = if i % 3 == 0 {
            0
        } else {
            rng.below(40) as usize
        };
        v.push((spec(w, h, bpc, kind, 2000 + i), pad));
    }
    v
}

fn spec(width: usize, height: usize, bpc: u8, kind: Kind, seed: u64) -> Spec {
    Spec {
        width,
        height,
        bpc,
        format: ChromaFormat::Gray,
        kind,
        seed,
        frames: 2,
    }
}

/// integer_vif_scale0..3 against libvmaf 2.3.1 (equal to 3.2.0 for VIF).
#[test]
fn vif_matches_libvmaf_231() {
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (spec, pad) in cases() {
        let mut lv = Libvmaf231::new(&["vif"]);
        let mut ours = Vec::new();
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let (rl, dl) = (r.luma(), d.luma());
            lv.read(&rl, &dl);
            let (rb, stride) = synth::with_stride(&rl, pad);
            let (db, _) = synth::with_stride(&dl, pad);
            let rp = Plane {
                data: &rb,
                stride,
                ..rl
            };
            let dp = Plane {
                data: &db,
                stride,
                ..dl
            };
            ours.push(vif::compute(rp, dp, &VifParams::default()).scores());
        }
        lv.flush();
        for (t, got) in ours.iter().enumerate() {
            for (s, &g) in got.iter().enumerate() {
                let want = lv.score(
                    &format!("VMAF_integer_feature_vif_scale{s}_score"),
                    t as u32,
                );
                mm.check(
                    || {
                        format!(
                            "{} stride+{pad} frame {t} integer_vif_scale{s}",
                            spec.name()
                        )
                    },
                    g,
                    want,
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}

/// integer_adm2 and integer_adm_scale0..3 against libvmaf 2.3.1's C code (equal to 3.2.0's on
/// every frame of at least 33x33: checked on all of tests/data/oracle's clips).
#[test]
fn adm_matches_libvmaf_231() {
    let p = AdmParams::default();
    let mut mm = Mismatches::default();
    let mut checked = 0;
    for (spec, pad) in cases() {
        let mut lv = Libvmaf231::new(&["adm"]);
        let mut ours = Vec::new();
        for t in 0..spec.frames {
            let (r, d) = spec.frame(t);
            let (rl, dl) = (r.luma(), d.luma());
            lv.read(&rl, &dl);
            let (rb, stride) = synth::with_stride(&rl, pad);
            let (db, _) = synth::with_stride(&dl, pad);
            let rp = Plane {
                data: &rb,
                stride,
                ..rl
            };
            let dp = Plane {
                data: &db,
                stride,
                ..dl
            };
            ours.push(adm::compute(rp, dp, &p).scores(&p, spec.width, spec.height));
        }
        lv.flush();
        for (t, got) in ours.iter().enumerate() {
            let pairs = [
                ("VMAF_integer_feature_adm2_score", got.adm2),
                ("integer_adm_scale0", got.scale[0]),
                ("integer_adm_scale1", got.scale[1]),
                ("integer_adm_scale2", got.scale[2]),
                ("integer_adm_scale3", got.scale[3]),
            ];
            for (name, g) in pairs {
                let want = lv.score(name, t as u32);
                mm.check(
                    || format!("{} stride+{pad} frame {t} {name}", spec.name()),
                    g,
                    want,
                );
                checked += 1;
            }
        }
    }
    mm.finish(checked);
}
