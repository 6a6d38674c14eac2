//! The backend-neutral part of the GPU backends (CUDA and HIP): the kernel text and its argument
//! structs, the VMAF frame plan as data, the device trait and the one slot pipeline written over
//! it ([`device`], [`pipeline`]). No driver calls here; the CPU emulators in
//! `tests/cuda_emulated.rs` and `tests/hip_backend.rs` execute the very same plans.

use crate::error::Error;

/// A GPU backend's error: `Error::Backend("{scope}: {what}: {cause}")`, the one shape of every
/// driver and runtime failure. Each part of the backends has its scope ("CUDA",
/// "CUDA companions", "CUDA pinned memory", "HIP") and a short wrapper of this.
pub(crate) fn gpu_error(scope: &str, what: &str, cause: impl std::fmt::Display) -> Error {
    Error::Backend(format!("{scope}: {what}: {cause}"))
}

#[doc(hidden)]
pub mod cache;
#[doc(hidden)]
pub mod companion;
mod companion_metrics;
#[doc(hidden)]
pub mod companion_plan;
#[doc(hidden)]
pub mod device;
#[doc(hidden)]
pub mod kernels;
#[doc(hidden)]
pub mod launch;
#[doc(hidden)]
pub mod pipeline;
#[doc(hidden)]
pub mod plan;
mod speed;
pub(crate) mod staging;
