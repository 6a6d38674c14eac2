//! Planes already in GPU memory: a CUDA decoder's frames, read where they are.
//!
//! A [`DevicePlane`] is a plane of samples at a device address (8-bit samples as bytes, deeper
//! samples as two little-endian bytes, rows `pitch` bytes apart) in the CUDA device's primary
//! context, the one the CUDA backend works in. It holds whatever keeps that memory alive and
//! unwritten (a mapped GStreamer buffer), and so keeps it for as long as a backend reads it.
//! Only a backend that says so reads them ([`Backend::accepts_device_planes`]); the engine
//! refuses them elsewhere, and the element then maps its buffers to system memory instead.
//!
//! [`Backend::accepts_device_planes`]: crate::backend::Backend::accepts_device_planes

use std::any::Any;
use std::sync::Arc;

use super::host::next_id;
use crate::error::{Error, Result};
use crate::picture::HostPlane;

/// One plane of samples in device memory. Cloning shares the owner (and the identity).
#[derive(Clone)]
pub struct DevicePlane {
    /// Keeps the memory alive and unwritten (a mapped GStreamer buffer).
    _owner: Arc<dyn Any + Send + Sync>,
    ptr: u64,
    pitch: usize,
    width: usize,
    height: usize,
    bpc: u8,
    /// As [`HostPlane::shift`]: low bits below each sample in its stored word (P010's 6).
    shift: u8,
    id: u64,
}

impl std::fmt::Debug for DevicePlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevicePlane")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bpc", &self.bpc)
            .field("shift", &self.shift)
            .field("pitch", &self.pitch)
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("id", &self.id)
            .finish()
    }
}

impl DevicePlane {
    /// The plane of `width` x `height` samples at `bpc` bits at device address `ptr`, rows
    /// `pitch` bytes apart, in `span` bytes of device memory from `ptr`. Checks the depth and
    /// that every row lies in the span.
    ///
    /// # Safety
    /// `ptr..ptr + span` must be device memory of the CUDA device the backend uses, in its
    /// primary context, whose writes have completed (nothing queued still writes it), and it
    /// must stay valid and unwritten for as long as `owner` lives.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn new(
        owner: Arc<dyn Any + Send + Sync>,
        ptr: u64,
        span: usize,
        pitch: usize,
        width: usize,
        height: usize,
        bpc: u8,
    ) -> Result<DevicePlane> {
        if !(8..=16).contains(&bpc) {
            return Err(Error::BitDepth(bpc));
        }
        if width == 0 || height == 0 || ptr == 0 {
            return Err(Error::Geometry("device plane: empty plane".into()));
        }
        let row = width * if bpc > 8 { 2 } else { 1 };
        let end = pitch
            .checked_mul(height - 1)
            .and_then(|n| n.checked_add(row));
        if pitch < row || end.is_none_or(|e| e > span) {
            return Err(Error::Geometry(format!(
                "device plane: {span} bytes with pitch {pitch} are too small for \
                 {width}x{height} at {bpc} bits"
            )));
        }
        Ok(DevicePlane {
            _owner: owner,
            ptr,
            pitch,
            width,
            height,
            bpc,
            shift: 0,
            id: next_id(),
        })
    }

    /// The same plane with its samples `shift` bits up in each stored word (P010), as
    /// [`HostPlane::with_shift`].
    pub fn with_shift(mut self, shift: u8) -> Result<DevicePlane> {
        if shift > 0 && (self.bpc <= 8 || u32::from(self.bpc) + u32::from(shift) > 16) {
            return Err(Error::Geometry(format!(
                "device plane: {} bit samples cannot be stored {shift} bits up in 16-bit words",
                self.bpc
            )));
        }
        self.shift = shift;
        Ok(self)
    }

    /// The device address of the first sample.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes from one row to the next.
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn bpc(&self) -> u8 {
        self.bpc
    }

    pub fn shift(&self) -> u8 {
        self.shift
    }

    /// Bytes of samples in a row.
    pub fn row_bytes(&self) -> usize {
        self.width * if self.bpc > 8 { 2 } else { 1 }
    }

    /// Unique per plane (clones share it), from the same counter as [`HostPlane::id`].
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// A plane a backend reads where it is: in host memory or in device memory.
#[derive(Clone, Debug)]
pub enum InputPlane {
    Host(HostPlane),
    Device(DevicePlane),
}

impl InputPlane {
    /// Width, height, bit depth.
    pub fn geometry(&self) -> (usize, usize, u8) {
        match self {
            InputPlane::Host(p) => (p.width(), p.height(), p.bpc()),
            InputPlane::Device(p) => (p.width(), p.height(), p.bpc()),
        }
    }

    pub fn shift(&self) -> u8 {
        match self {
            InputPlane::Host(p) => p.shift(),
            InputPlane::Device(p) => p.shift(),
        }
    }

    pub fn id(&self) -> u64 {
        match self {
            InputPlane::Host(p) => p.id(),
            InputPlane::Device(p) => p.id(),
        }
    }

    /// The host plane, if it is one.
    pub fn host(&self) -> Option<&HostPlane> {
        match self {
            InputPlane::Host(p) => Some(p),
            InputPlane::Device(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane(span: usize, pitch: usize, w: usize, h: usize, bpc: u8) -> Result<DevicePlane> {
        // SAFETY: never read: these planes only go through the geometry checks.
        unsafe { DevicePlane::new(Arc::new(()), 0x1000, span, pitch, w, h, bpc) }
    }

    #[test]
    fn geometry_is_checked() {
        assert!(plane(64 * 3 + 40, 64, 40, 4, 8).is_ok());
        assert!(plane(64 * 3 + 39, 64, 40, 4, 8).is_err());
        assert!(
            plane(64 * 3 + 80, 64, 40, 4, 10).is_err(),
            "pitch below the row"
        );
        assert!(plane(128 * 3 + 80, 128, 40, 4, 10).is_ok());
        assert!(plane(1000, 64, 40, 4, 17).is_err());
        assert!(plane(1000, 64, 0, 4, 8).is_err());
        let p = plane(128 * 3 + 80, 128, 40, 4, 10).unwrap();
        assert_eq!(p.clone().with_shift(6).unwrap().shift(), 6);
        assert!(p.clone().with_shift(7).is_err());
        assert_ne!(p.id(), plane(1000, 64, 40, 4, 8).unwrap().id());
        assert_eq!(p.row_bytes(), 80);
    }
}
