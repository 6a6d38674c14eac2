//! vmafgpu: VMAF and its companion metrics, bit-exact with libvmaf 3.2.0, as a GStreamer element
//! and as a Rust library.

pub mod error;
pub mod features;
pub mod model;
pub mod picture;

pub use error::{Error, Result};
pub use picture::{Chroma, ChromaFormat, OwnedPlane, Picture, Plane, PlaneRef};
