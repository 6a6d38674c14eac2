//! The metrics, one module each.
//!
//! Every VMAF feature is split in two halves:
//! - an **integer accumulator** (`#[repr(C)]`, `Copy`, `Eq`): what a backend computes from the
//!   pixels. The CPU reference in each module computes it exactly as libvmaf 3.2.0's plain C path
//!   does; a GPU backend must produce the identical value;
//! - the **score step** (`Accum::scores()`), the only place where the accumulator becomes
//!   floating-point scores, in libvmaf's order of operations. Every backend shares it.
//!
//! Feature code reads [`crate::picture::Plane`] (compact or strided `u16` samples plus `bpc`):
//! 8-bit content is widened to `u16` but still follows libvmaf's 8-bit arithmetic.

pub mod adm;
pub mod cambi;
pub mod ciede;
pub mod isa;
pub mod motion;
pub mod ms_ssim;
pub mod psnr;
pub mod psnr_hvs;
pub mod speed;
pub mod ssim;
pub mod vif;

/// The smallest frame the VMAF features accept (both dimensions).
///
/// libvmaf 3.2.0's C ADM reads outside its buffers below 33x33 (undefined results) and crashes at
/// 16x16 and below, so smaller frames are refused with [`crate::Error::TooSmall`].
pub const MIN_WIDTH: usize = 33;
pub const MIN_HEIGHT: usize = 33;

use crate::error::{Error, Result};
use crate::picture::Plane;

/// What every VMAF feature needs of a reference/distorted plane pair: equal geometry and depth,
/// 8..=16 bits, at least [`MIN_WIDTH`] x [`MIN_HEIGHT`], and planes long enough for their stride.
pub fn check_pair(r: &Plane<'_>, d: &Plane<'_>) -> Result<()> {
    if !(8..=16).contains(&r.bpc) {
        return Err(Error::BitDepth(r.bpc));
    }
    if (r.width, r.height, r.bpc) != (d.width, d.height, d.bpc) {
        return Err(Error::Mismatch(format!(
            "reference {}x{} at {} bits, distorted {}x{} at {} bits",
            r.width, r.height, r.bpc, d.width, d.height, d.bpc
        )));
    }
    if r.width < MIN_WIDTH || r.height < MIN_HEIGHT {
        return Err(Error::TooSmall {
            width: r.width,
            height: r.height,
            min_width: MIN_WIDTH,
            min_height: MIN_HEIGHT,
        });
    }
    for (what, pl) in [("reference", r), ("distorted", d)] {
        if pl.stride < pl.width || pl.data.len() < pl.stride * (pl.height - 1) + pl.width {
            return Err(Error::Geometry(format!(
                "{what} plane of {} samples with stride {} is too small for {}x{}",
                pl.data.len(),
                pl.stride,
                pl.width,
                pl.height
            )));
        }
    }
    Ok(())
}
