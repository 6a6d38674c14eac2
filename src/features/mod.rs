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

/// Resize `v` to `n` elements (new ones `fill`) for a buffer sized by the frame: where the memory
/// cannot be had (a huge frame, a memory limit) this panics with a message naming `what` and
/// the size instead of aborting the process, and the CPU backend's workers turn that panic into
/// the frame's error (`Error::Backend`, "CPU worker failed on frame N: ...").
pub(crate) fn resize_scratch<T: Clone>(v: &mut Vec<T>, n: usize, fill: T, what: &str) {
    if let Err(e) = v.try_reserve_exact(n.saturating_sub(v.len())) {
        let mib = (n as u128 * std::mem::size_of::<T>() as u128).div_ceil(1 << 20);
        panic!("cannot allocate {mib} MiB for {what}: {e}");
    }
    v.resize(n, fill);
}

/// A buffer of `n` default elements, allocated as [`resize_scratch`] does.
pub(crate) fn scratch<T: Clone + Default>(n: usize, what: &str) -> Vec<T> {
    let mut v = Vec::new();
    resize_scratch(&mut v, n, T::default(), what);
    v
}

/// What every VMAF feature needs of a reference/distorted plane pair: equal geometry and depth,
/// 8..=16 bits, at least [`MIN_WIDTH`] x [`MIN_HEIGHT`], and planes long enough for their stride.
pub fn check_pair(r: &Plane<'_>, d: &Plane<'_>) -> Result<()> {
    check_planes(r, d, "VMAF", Some((MIN_WIDTH, MIN_HEIGHT)))
}

/// The one check of a reference/distorted plane pair, for every feature (`what` names it in the
/// errors), in this order: depth 8..=16, the same geometry and depth, at least `min` (width,
/// height) where given ([`Error::TooSmall`]), non-empty, and `stride >= width` with enough
/// samples for `stride * (height - 1) + width`.
pub(crate) fn check_planes(
    r: &Plane<'_>,
    d: &Plane<'_>,
    what: &str,
    min: Option<(usize, usize)>,
) -> Result<()> {
    if !(8..=16).contains(&r.bpc) {
        return Err(Error::BitDepth(r.bpc));
    }
    if (r.width, r.height, r.bpc) != (d.width, d.height, d.bpc) {
        return Err(Error::Mismatch(format!(
            "{what}: reference plane {}x{} at {} bits, distorted plane {}x{} at {} bits",
            r.width, r.height, r.bpc, d.width, d.height, d.bpc
        )));
    }
    if let Some((min_width, min_height)) = min
        && (r.width < min_width || r.height < min_height)
    {
        return Err(Error::TooSmall {
            width: r.width,
            height: r.height,
            min_width,
            min_height,
        });
    }
    for (p, side) in [(r, "reference"), (d, "distorted")] {
        if p.width == 0 || p.height == 0 {
            return Err(Error::Geometry(format!("{what}: empty {side} plane")));
        }
        if p.stride < p.width || p.data.len() < p.stride * (p.height - 1) + p.width {
            return Err(Error::Geometry(format!(
                "{what}: {side} plane of {} samples with stride {} is too small for {}x{}",
                p.data.len(),
                p.stride,
                p.width,
                p.height
            )));
        }
    }
    Ok(())
}
