//! Frames in CUDA memory (`video/x-raw(memory:CUDAMemory)`): the caps, the shared CUDA context
//! (`gst.cuda.context`, see `super::super::cuda`), how each buffer is read (where it is, or
//! mapped to system memory) and the CUDA buffer pool offered in the ALLOCATION query.

use std::sync::Arc;

use super::super::cuda::{self, CAPS_FEATURE};
use super::*;

/// The caps of every pad: the raw formats in system memory, then the same in CUDA memory.
pub(super) fn template_caps() -> gst::Caps {
    let mut caps = gst_video::VideoCapsBuilder::new()
        .format_list(FORMATS.iter().copied())
        .build();
    let on_device = gst_video::VideoCapsBuilder::for_encoding("video/x-raw")
        .features([CAPS_FEATURE])
        .format_list(FORMATS.iter().copied())
        .build();
    caps.merge(on_device);
    caps
}

/// Whether `caps` (their first structure) are in CUDA memory.
pub(super) fn is_cuda(caps: &gst::CapsRef) -> bool {
    caps.features(0).is_some_and(|f| f.contains(CAPS_FEATURE))
}

/// `caps` with the structures in CUDA memory first (`cuda_first`) or last, keeping the
/// order within each group.
pub(super) fn order_memory(caps: gst::Caps, cuda_first: bool) -> gst::Caps {
    if caps.is_any() || caps.size() < 2 {
        return caps;
    }
    let (mut first, mut last) = (gst::Caps::new_empty(), gst::Caps::new_empty());
    for (s, f) in caps.iter_with_features() {
        let on_device = f.contains(CAPS_FEATURE);
        let to = if on_device == cuda_first {
            &mut first
        } else {
            &mut last
        };
        to.get_mut()
            .expect("new caps")
            .append_structure_full(s.to_owned(), Some(f.to_owned()));
    }
    first.get_mut().expect("new caps").append(last);
    first
}

impl VmafGpu {
    /// The shared CUDA context (the CUDA backend's primary context, wrapped), made once;
    /// `None` where the settings do not score on CUDA or CUDA is unusable here.
    pub(super) fn cuda_context(&self) -> Option<Arc<cuda::Context>> {
        let (backend, device_id) = {
            let s = self.settings.lock().unwrap();
            (s.backend, s.device_id)
        };
        if !cfg!(feature = "cuda") || !matches!(backend, Backend::Auto | Backend::Cuda) {
            return None;
        }
        let mut guard = self.cuda.lock().unwrap();
        let made = guard.get_or_insert_with(|| {
            let r = cuda::Context::primary(device_id).map(Arc::new);
            match &r {
                Ok(c) => gst::info!(CAT, imp = self, "CUDA device {device_id}: sharing {c:?}"),
                Err(e) => gst::info!(CAT, imp = self, "no CUDA context to share: {e}"),
            }
            r
        });
        made.as_ref().ok().cloned()
    }

    /// Answer a CONTEXT query for `gst.cuda.context` with the shared context (a decoder
    /// upstream or a CUDA element downstream then works in the backend's context).
    pub(super) fn answer_context(&self, query: &mut gst::QueryRef) -> bool {
        let gst::QueryView::Context(q) = query.view() else {
            return false;
        };
        if q.context_type() != "gst.cuda.context" {
            return false;
        }
        let Some(ctx) = self.cuda_context() else {
            return false;
        };
        let answered = ctx.answer(self.obj().upcast_ref(), query);
        gst::debug!(
            CAT,
            imp = self,
            "CONTEXT query gst.cuda.context answered: {answered}"
        );
        answered
    }

    /// A `gst.cuda.context` set on the element: kept if it is the shared one; another
    /// context is not adopted (cudarc works in the primary context), and frames in its
    /// memory are mapped to system memory.
    pub(super) fn context_set(&self, context: &gst::Context) {
        if context.context_type() != "gst.cuda.context" {
            return;
        }
        let device_id = self.settings.lock().unwrap().device_id as i32;
        let Some(theirs) = cuda::context_of(self.obj().upcast_ref(), context, device_id) else {
            return;
        };
        let ours = self.cuda_context().map(|c| c.handle());
        if ours != Some(theirs.handle()) {
            gst::warning!(
                CAT,
                imp = self,
                "a gst.cuda.context was set ({theirs:?}) that is not the CUDA backend's \
                 ({ours:?}): not adopted; frames in its memory are mapped to system memory"
            );
        }
    }

    /// The engine's frame of a buffer: read where it is on the device when it is CUDA memory
    /// of the backend's context and the engine takes device planes, else mapped to system
    /// memory (CUDA memory is downloaded by its allocator then: logged once per pad).
    pub(super) fn frame_of(
        &self,
        buffer: &gst::Buffer,
        info: &gst_video::VideoInfo,
        is_ref: bool,
    ) -> Result<engine::Frame<'static>, String> {
        let cuda_memory = buffer
            .iter_memories()
            .any(|m| cuda::memory_context(m).is_some());
        if !cuda_memory {
            return input::frame_of(buffer, info);
        }
        let device_route = self
            .state
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|s| s.device_route);
        let why = match self.cuda_context().filter(|_| device_route) {
            Some(ctx) => match input::not_on_device(buffer, ctx.handle()) {
                None => return input::frame_on_device(buffer, info),
                Some(why) => why,
            },
            None => "the engine reads frames in device memory only with backend=cuda (or auto \
                     on a CUDA GPU) and no companion metric or CAMBI/SpEED host thread"
                .to_string(),
        };
        let warned = self
            .state
            .lock()
            .unwrap()
            .as_mut()
            .map(|s| std::mem::replace(&mut s.warned_download[usize::from(!is_ref)], true));
        if warned == Some(false) {
            gst::warning!(
                CAT,
                imp = self,
                "{}: frames in CUDA memory are downloaded to system memory (PCIe, host copies): \
                 {why}",
                self.pad_name(is_ref)
            );
        }
        input::frame_of(buffer, info)
    }

    /// Offer a CUDA buffer pool of the shared context for caps in CUDA memory, where the
    /// engine reads frames there; whether it did.
    pub(super) fn propose_cuda_pool(
        &self,
        pad: &gst_base::AggregatorPad,
        query: &mut gst::query::Allocation,
    ) -> bool {
        let device_route = self
            .state
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|s| s.device_route);
        let (Some(caps), need_pool) = query.get_owned() else {
            return false;
        };
        if !device_route || !need_pool {
            return false;
        }
        let Some(ctx) = self.cuda_context() else {
            return false;
        };
        let Ok(info) = gst_video::VideoInfo::from_caps(&caps) else {
            return false;
        };
        let (Some(pool), Ok(size)) = (ctx.buffer_pool(), u32::try_from(info.size())) else {
            return false;
        };
        let mut config = pool.config();
        config.set_params(Some(&caps), size, 0, 0);
        if let Err(e) = pool.set_config(config) {
            gst::warning!(CAT, obj = pad, "no CUDA buffer pool: {e}");
            return false;
        }
        query.add_allocation_pool(Some(&pool), size, 0, 0);
        gst::debug!(CAT, obj = pad, "offered a CUDA buffer pool of {ctx:?}");
        true
    }
}
