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
pub mod ciede;
pub mod motion;
pub mod ms_ssim;
pub mod psnr;
pub mod psnr_hvs;
pub mod ssim;
pub mod vif;

/// The smallest frame the VMAF features accept (both dimensions).
///
/// libvmaf 3.2.0's C ADM reads outside its buffers below 33x33 (undefined results) and crashes at
/// 16x16 and below, so smaller frames are refused with [`crate::Error::TooSmall`].
pub const MIN_WIDTH: usize = 33;
pub const MIN_HEIGHT: usize = 33;
