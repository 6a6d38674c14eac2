//! Negotiation and allocation answers of the sink pads: the caps query (steering upstream
//! converters to the size being scored or to the other pad's new size) and the pool of pinned
//! buffers offered in the ALLOCATION query.

use super::*;

impl VmafGpu {
    /// Offer the pinned pool in `query` (where the engine's route uses it); whether it did.
    pub(super) fn propose_pinned(
        &self,
        pad: &gst_base::AggregatorPad,
        query: &mut gst::query::Allocation,
    ) -> bool {
        // Caps in CUDA memory: a CUDA buffer pool (never pinned system memory).
        if query.get().0.is_some_and(device::is_cuda) {
            return self.propose_cuda_pool(pad, query);
        }
        let allocator = {
            let guard = self.state.lock().unwrap();
            match guard.as_ref().and_then(|s| s.pinned.clone()) {
                Some(a) => a,
                None => return false,
            }
        };
        match input::propose_pinned(&allocator, query) {
            Ok(true) => {
                gst::debug!(CAT, obj = pad, "offered a pool of pinned buffers");
                true
            }
            Ok(false) => false,
            Err(e) => {
                gst::warning!(CAT, obj = pad, "no pinned buffer pool: {e}");
                false
            }
        }
    }
}

impl VmafGpu {
    /// The caps a sink pad takes: its template (the distorted pad: what downstream takes),
    /// steered to the other pad's size and format where that is the one to follow.
    pub(super) fn answer_caps(
        &self,
        pad: &gst_base::AggregatorPad,
        is_ref: bool,
        q: &mut gst::query::Caps,
    ) -> bool {
        let templ = pad.pad_template_caps();
        let mut caps = if is_ref {
            templ.clone()
        } else {
            // the distorted frames go downstream: what downstream takes
            self.obj().src_pad().peer_query_caps(Some(&templ))
        };
        // Steer upstream converters to the other pad's size and format (its latest
        // caps: negotiation looks ahead of the frames still queued): before the first
        // pair (a distorted video scaled to the reference's size), and where the other
        // pad has moved on from the size being scored (this pad follows it). Not while
        // the other pad is still at that size: this pad may be the first of a change
        // on both, whose new size must pass (pinned to the other's old size, a
        // converter that cannot scale fails, one that can scales back to the old size).
        let other_pad = if is_ref {
            &self.dist_pad
        } else {
            &self.ref_pad
        };
        let other = other_pad
            .current_caps()
            .and_then(|c| gst_video::VideoInfo::from_caps(&c).ok());
        let scoring = self.state.lock().unwrap().as_ref().and_then(|s| s.geometry);
        let pin = other.filter(|info| scoring.is_none_or(|g| Geometry::of(info) != g));
        if let Some(info) = pin {
            let mut want = gst_video::VideoCapsBuilder::new()
                .format(info.format())
                .width(info.width() as i32)
                .height(info.height() as i32)
                .build();
            // in either memory (one pad may carry CUDA memory, the other system memory)
            want.get_mut()
                .expect("new caps")
                .set_features_simple(Some(gst::CapsFeatures::new_any()));
            caps = caps.intersect(&want);
        }
        // CUDA memory first where the engine reads it there, else system memory first.
        let device_route = self
            .state
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|s| s.device_route);
        caps = device::order_memory(caps, device_route);
        if let Some(filter) = q.filter() {
            caps = filter.intersect_with_mode(&caps, gst::CapsIntersectMode::First);
        }
        gst::debug!(CAT, obj = pad, "caps query: {caps}");
        q.set_result(&caps);
        true
    }
}

/// One frame's duration at the caps' frame rate (`None` for a variable or unknown rate).
pub(super) fn frame_duration(info: Option<&gst_video::VideoInfo>) -> Option<gst::ClockTime> {
    let fps = info?.fps();
    if fps.numer() <= 0 || fps.denom() <= 0 {
        return None;
    }
    gst::ClockTime::SECOND.mul_div_floor(fps.denom() as u64, fps.numer() as u64)
}

/// The caps of a pad in a line of a message: size, format and the caps themselves.
pub(super) fn caps_summary(caps: &Option<(gst::Caps, gst_video::VideoInfo)>) -> String {
    match caps {
        Some((c, i)) => format!("{}x{} {} ({c})", i.width(), i.height(), i.format().to_str()),
        None => "no caps".into(),
    }
}
