//! The engine's error type: every way bad input or a bad model is refused.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Bits per component outside 8..=16.
    BitDepth(u8),
    /// A frame smaller than the metrics allow.
    TooSmall {
        width: usize,
        height: usize,
        min_width: usize,
        min_height: usize,
    },
    /// Reference and distorted frames (or consecutive frames) disagree in size, format or depth.
    Mismatch(String),
    /// A plane too small for the declared geometry, or an empty picture.
    Geometry(String),
    /// A sample above 2^bpc - 1.
    SampleRange {
        plane: &'static str,
        x: usize,
        y: usize,
        value: u16,
        bpc: u8,
    },
    /// A frame that was taken and refused afterwards, when its result was read: a backend that
    /// checks the samples itself (the CUDA backend, on the GPU) found `cause` (a
    /// [`Error::SampleRange`]) in frame `index`. The clip then ends at the frame before it:
    /// the frames pushed after it are dropped, and `finish()` returns the clip's remaining
    /// scores and its summary as if the stream had ended there.
    FrameRefused { index: u64, cause: Box<Error> },
    /// A model file or model JSON that cannot be used.
    Model(String),
    /// A backend (GPU) failure: driver missing, out of memory, kernel failure.
    Backend(String),
    /// The scorer was used after an error or after `finish()`.
    State(String),
    /// A companion metric that libvmaf 3.2.0 refuses for this input (e.g. MS-SSIM on a frame
    /// too small for 5 pyramid levels, PSNR-HVS above 12 bits, CIEDE2000 without chroma).
    /// `metric` is libvmaf's feature name ("float_ms_ssim", "psnr_hvs", ...).
    Unsupported {
        metric: &'static str,
        reason: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BitDepth(b) => write!(
                f,
                "unsupported bit depth {b} (8 to 16 bits per component are supported)"
            ),
            Error::TooSmall {
                width,
                height,
                min_width,
                min_height,
            } => write!(
                f,
                "frame of {width}x{height} is smaller than the {min_width}x{min_height} minimum the VMAF features need"
            ),
            Error::Mismatch(s) => write!(f, "mismatched frames: {s}"),
            Error::Geometry(s) => write!(f, "bad frame geometry: {s}"),
            Error::SampleRange {
                plane,
                x,
                y,
                value,
                bpc,
            } => write!(
                f,
                "{plane} sample {value} at ({x}, {y}) exceeds the {bpc}-bit maximum {}",
                (1u32 << bpc) - 1
            ),
            Error::FrameRefused { index, cause } => write!(
                f,
                "frame {index} refused: {cause}; the clip ends at the frame before it"
            ),
            Error::Model(s) => write!(f, "model error: {s}"),
            Error::Backend(s) => write!(f, "backend error: {s}"),
            Error::State(s) => write!(f, "{s}"),
            Error::Unsupported { metric, reason } => {
                write!(f, "{metric} cannot be computed: {reason}")
            }
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
