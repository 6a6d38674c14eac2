//! The backend-neutral part of the GPU backends (CUDA and HIP): the kernel text and its argument
//! structs, and the VMAF frame plan as data. No driver calls here; the CPU emulators in
//! `tests/cuda_emulated.rs` and `tests/hip_backend.rs` execute the very same plans.

mod companion_metrics;
#[doc(hidden)]
pub mod companion_plan;
#[doc(hidden)]
pub mod kernels;
#[doc(hidden)]
pub mod launch;
#[doc(hidden)]
pub mod plan;
#[cfg(feature = "cuda")] // the CUDA backend's for now; HIP stages through its own pinned buffers
pub(crate) mod staging;
