//! Helpers for the element tests: plugin init, synthetic frames, two-harness setup, bus
//! collection, and an oracle that scores the expected pairs with the engine directly.
#![allow(dead_code)]

use gst::prelude::*;
use gstvmafgpu::engine::{FrameScores, Scorer, ScorerConfig};
use gstvmafgpu::{
    Chroma, ChromaFormat, FrameMessage, Picture, PlaneRef, PooledMessage, VmafMessage,
    WindowMessage,
};

pub fn init() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        gst::init().unwrap();
        gstvmafgpu::plugin_register_static().unwrap();
    });
}

pub const FRAME: gst::ClockTime = gst::ClockTime::from_mseconds(40);

pub fn info(format: gst_video::VideoFormat, width: u32, height: u32) -> gst_video::VideoInfo {
    init();
    gst_video::VideoInfo::builder(format, width, height)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap()
}

/// A textured test frame (different for every `seed`); `distort` adds a deterministic error
/// pattern. Planar 4:2:0 8- or 16-bit-container formats only.
pub fn frame(
    info: &gst_video::VideoInfo,
    seed: u64,
    distort: bool,
    pts: gst::ClockTime,
) -> gst::Buffer {
    let bpc = info.format_info().depth()[0];
    let max = (1u32 << bpc) - 1;
    let wide = bpc > 8;
    let mut buffer = gst::Buffer::with_size(info.size()).unwrap();
    {
        let b = buffer.get_mut().unwrap();
        b.set_pts(pts);
        b.set_duration(FRAME);
        let mut map = b.map_writable().unwrap();
        let data = map.as_mut_slice();
        for plane in 0..info.n_planes() as usize {
            let (pw, ph) = if plane == 0 {
                (info.width(), info.height())
            } else {
                (info.comp_width(plane as u8), info.comp_height(plane as u8))
            };
            let off = info.offset()[plane];
            let stride = info.stride()[plane] as usize;
            for y in 0..ph {
                for x in 0..pw {
                    let s = seed as u32;
                    let mut v = if plane == 0 {
                        ((x * 3 + y * 5 + s * 11) ^ (x * y / 3 + s * 7)) % 256
                    } else {
                        128 + ((x + y + s) % 16)
                    };
                    if distort {
                        v = (v + (x * 7 + y * 3 + s) % 9).saturating_sub(4).min(255);
                    }
                    let v = v * (max + 1) / 256;
                    if wide {
                        let i = off + y as usize * stride + 2 * x as usize;
                        data[i..i + 2].copy_from_slice(&(v as u16).to_le_bytes());
                    } else {
                        data[off + y as usize * stride + x as usize] = v as u8;
                    }
                }
            }
        }
    }
    buffer
}

/// Score `pairs` with the engine directly (a fresh clip): what the element must report for them.
pub fn oracle(
    info: &gst_video::VideoInfo,
    pairs: &[(&gst::Buffer, &gst::Buffer)],
    cfg: ScorerConfig,
) -> Vec<FrameScores> {
    let mut scorer = Scorer::new(cfg).unwrap();
    let bpc = info.format_info().depth()[0] as u8;
    let mut out = Vec::new();
    for (r, d) in pairs {
        let rm = r.map_readable().unwrap();
        let dm = d.map_readable().unwrap();
        let (rp, dp) = (
            picture(info, bpc, rm.as_slice()),
            picture(info, bpc, dm.as_slice()),
        );
        out.extend(scorer.push(&rp, &dp).unwrap());
    }
    out.extend(scorer.finish().unwrap().0);
    out
}

/// An I420-layout picture over raw frame bytes.
fn picture<'a>(info: &gst_video::VideoInfo, bpc: u8, data: &'a [u8]) -> Picture<'a> {
    let plane = |p: usize| PlaneRef {
        data: &data[info.offset()[p]..],
        stride: info.stride()[p] as usize,
    };
    Picture {
        width: info.width() as usize,
        height: info.height() as usize,
        bpc,
        format: ChromaFormat::Yuv420,
        luma: plane(0),
        chroma: Chroma::Planar {
            u: plane(1),
            v: plane(2),
        },
    }
}

/// The element with `props`, a harness feeding `ref_sink` (and reading `src`), one feeding
/// `dist_sink`, and a bus collecting its messages.
pub struct Rig {
    pub element: gst::Element,
    pub r: gst_check::Harness,
    pub d: gst_check::Harness,
    pub bus: gst::Bus,
}

pub fn rig(props: &[(&str, &str)], caps: &gst::Caps) -> Rig {
    init();
    let element = gst::ElementFactory::make("vmafgpu").build().unwrap();
    for (k, v) in props {
        element.set_property_from_str(k, v);
    }
    let bus = gst::Bus::new();
    element.set_bus(Some(&bus));
    let mut r = gst_check::Harness::with_element(&element, Some("ref_sink"), Some("src"));
    let mut d = gst_check::Harness::with_element(&element, Some("dist_sink"), None);
    r.set_src_caps(caps.clone());
    d.set_src_caps(caps.clone());
    Rig { element, r, d, bus }
}

impl Rig {
    /// Send EOS on both pads and return every buffer that came out of `src`.
    pub fn finish(&mut self) -> Vec<gst::Buffer> {
        self.r.push_event(gst::event::Eos::new());
        self.d.push_event(gst::event::Eos::new());
        self.drain()
    }

    /// Pull output buffers until the EOS event comes out of `src`.
    pub fn drain(&mut self) -> Vec<gst::Buffer> {
        let mut out = Vec::new();
        loop {
            while let Some(b) = self.r.try_pull() {
                out.push(b);
            }
            match self.r.pull_event() {
                Ok(ev) if ev.type_() == gst::EventType::Eos => break,
                Ok(_) => {}
                Err(e) => panic!("no EOS from src: {e}"),
            }
        }
        while let Some(b) = self.r.try_pull() {
            out.push(b);
        }
        out
    }

    pub fn messages(&self) -> Messages {
        collect(&self.bus)
    }
}

/// Everything the element posted, decoded.
#[derive(Default, Debug)]
pub struct Messages {
    pub frames: Vec<FrameMessage>,
    pub windows: Vec<WindowMessage>,
    pub pooled: Vec<PooledMessage>,
    /// Errors and warnings: (message, debug).
    pub errors: Vec<(String, String)>,
    pub warnings: Vec<(String, String)>,
    /// The warning that backend=auto fell back to the CPU (posted at start on a machine
    /// without a usable GPU), kept out of `warnings` so that their counts do not depend on the
    /// machine.
    pub fallback: Vec<String>,
    /// Kinds in posting order: 'f', 'w', 'p'.
    pub order: String,
}

pub fn collect(bus: &gst::Bus) -> Messages {
    let mut m = Messages::default();
    while let Some(msg) = bus.pop() {
        push_message(&mut m, &msg);
    }
    m
}

pub fn push_message(m: &mut Messages, msg: &gst::Message) {
    if let Some(v) = VmafMessage::from_message(msg) {
        match v.expect("VMAF message decodes") {
            VmafMessage::Frame(f) => {
                m.frames.push(f);
                m.order.push('f');
            }
            VmafMessage::Window(w) => {
                m.windows.push(w);
                m.order.push('w');
            }
            VmafMessage::Pooled(p) => {
                m.pooled.push(p);
                m.order.push('p');
            }
        }
        return;
    }
    match msg.view() {
        gst::MessageView::Error(e) => m.errors.push((
            e.error().to_string(),
            e.debug().map(|d| d.to_string()).unwrap_or_default(),
        )),
        gst::MessageView::Warning(w) if w.error().to_string().starts_with("backend=auto:") => {
            m.fallback.push(w.error().to_string())
        }
        gst::MessageView::Warning(w) => m.warnings.push((
            w.error().to_string(),
            w.debug().map(|d| d.to_string()).unwrap_or_default(),
        )),
        _ => {}
    }
}

/// Compare the element's frame messages with expected engine scores; collects every mismatch.
pub fn check_frames(got: &[FrameMessage], want: &[FrameScores], want_index: &[u64]) {
    assert_eq!(got.len(), want.len(), "number of frame messages");
    assert_eq!(want.len(), want_index.len());
    let mut bad = Vec::new();
    for ((g, w), &i) in got.iter().zip(want).zip(want_index) {
        if g.index != i {
            bad.push(format!("message index {} where {i} was expected", g.index));
        }
        if g.metrics != w.metrics {
            bad.push(format!(
                "frame {}: metrics {:?}\n  expected {:?}",
                g.index, g.metrics, w.metrics
            ));
        }
        if g.score != w.vmaf() {
            bad.push(format!(
                "frame {}: score {} expected {}",
                g.index,
                g.score,
                w.vmaf()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
