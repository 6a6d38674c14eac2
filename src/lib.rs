//! vmafgpu: VMAF and its companion metrics, bit-exact with libvmaf 3.2.0, as a GStreamer element
//! and as a Rust library.

pub mod backend;
pub mod engine;
pub mod error;
pub mod features;
pub mod model;
pub mod picture;
pub mod vmafgpu;

pub use error::{Error, Result};
pub use picture::{Chroma, ChromaFormat, OwnedPlane, Picture, Plane, PlaneRef};

pub use vmafgpu::{
    Backend, ConfidenceInterval, FrameMessage, MetricStats, PoolMethod, PooledMessage,
    PooledScores, ResultsFormat, Sync, Timing, VmafGpu, VmafMessage, WindowMessage,
};

fn plugin_init(plugin: &gst::Plugin) -> Result<(), gst::glib::BoolError> {
    vmafgpu::register(plugin)
}

gst::plugin_define!(
    vmafgpu,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    env!("CARGO_PKG_VERSION"),
    "MPL",
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_REPOSITORY")
);
