//! An application that embeds `vmafgpu` and reads its typed messages.
//!
//! ```text
//! cargo run --example embed            # 3 s of a test pattern against its JPEG (quality 25) copy
//! cargo run --example embed -- --live  # the same from a live source, with 1 s window messages
//! cargo run --example embed -- --plot windows.svg  # also draws the window means (.svg or .png)
//! ```
//!
//! The pipeline tees one test source into the reference pad and, through a lossy JPEG
//! round trip, into the distorted pad; the element passes the distorted frames on to a sink. The
//! application registers the plugin statically (no GST_PLUGIN_PATH needed), sets properties like
//! any element's, and decodes the bus messages with `VmafMessage::from_message`.

use gst::prelude::*;
use gstvmafgpu::{FrameMessage, PooledMessage, VmafMessage, WindowMessage};

// The `vmafgpu` command's charts (plotters, with the font embedded).
#[path = "../src/bin/vmafgpu/plot.rs"]
mod plot;

/// Frames per window message, and the test source's frame rate.
const WINDOW: u32 = 30;
const FPS: f64 = 30.0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let live = args.iter().any(|a| a == "--live");
    let plot_file = match args.iter().position(|a| a == "--plot") {
        Some(i) => Some(
            args.get(i + 1)
                .ok_or("--plot needs a file name (.svg or .png)")?,
        ),
        None => None,
    };
    if let Some(f) = plot_file {
        plot::format_of(std::path::Path::new(f))?;
    }
    gst::init()?;
    gstvmafgpu::plugin_register_static()?;

    let pipeline = gst::parse::launch(&format!(
        "videotestsrc is-live={live} num-buffers=90 pattern=ball \
           ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! tee name=t \
         t. ! queue ! v.ref_sink \
         t. ! queue ! jpegenc quality=25 ! jpegdec ! v.dist_sink \
         vmafgpu name=v ! fakesink sync={live}"
    ))?
    .downcast::<gst::Pipeline>()
    .map_err(|_| "not a pipeline")?;

    // properties are set like on any element (before the pipeline starts)
    let vmaf = pipeline.by_name("v").ok_or("no vmafgpu")?;
    vmaf.set_property_from_str("pool-method", "harmonic_mean");
    if live {
        // live monitoring: a window summary every second, no per-frame messages
        vmaf.set_property("frame-message", false);
    }
    if live || plot_file.is_some() {
        vmaf.set_property("window", WINDOW);
    }
    let mut windows = Vec::new();
    let mut pooled = None;

    let bus = pipeline.bus().ok_or("no bus")?;
    pipeline.set_state(gst::State::Playing)?;
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match VmafMessage::from_message(&msg) {
            Some(Ok(VmafMessage::Frame(f))) => on_frame(&f),
            Some(Ok(VmafMessage::Window(w))) => {
                on_window(&w);
                windows.push(w);
            }
            Some(Ok(VmafMessage::Pooled(p))) => {
                on_pooled(&p);
                pooled = Some(p);
            }
            Some(Err(e)) => eprintln!("undecodable VMAF message: {e}"),
            None => {}
        }
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                pipeline.set_state(gst::State::Null)?;
                return Err(format!("{} ({:?})", e.error(), e.debug()).into());
            }
            gst::MessageView::Warning(w) => eprintln!("warning: {}", w.error()),
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null)?;
    if let Some(f) = plot_file {
        plot::write(
            std::path::Path::new(f),
            &window_figure(&windows, pooled.as_ref()),
        )?;
        println!("wrote {f}");
    }
    Ok(())
}

/// The window means of VMAF (one point per window, at its first frame) with the pooled score,
/// the worst windows marked and the unmatched counts of the last message in the caption.
fn window_figure(windows: &[WindowMessage], pooled: Option<&PooledMessage>) -> plot::Figure {
    let (unmatched_ref, unmatched_dist) = match (pooled, windows.last()) {
        (Some(p), _) => (p.unmatched_ref, p.unmatched_dist),
        (None, Some(w)) => (w.unmatched_ref, w.unmatched_dist),
        (None, None) => (0, 0),
    };
    let method = |m| gstvmafgpu::vmafgpu::messages::pool_method_nick(m).to_string();
    let panel = plot::Panel {
        metric: "vmaf".into(),
        points: (windows.iter())
            .filter_map(|w| Some((w.index, w.scores.get("vmaf")?.mean)))
            .collect(),
        pooled: pooled.and_then(|p| Some((p.scores.score()?, method(p.scores.pool_method)))),
        lower_is_better: false,
    };
    plot::Figure {
        title: format!("vmafgpu: mean VMAF of each {WINDOW}-frame window"),
        caption: format!(
            "{} windows; unmatched frames: reference {unmatched_ref}, distorted {unmatched_dist}",
            windows.len()
        ),
        fps: Some(FPS),
        x_desc: "window start frame".into(),
        panels: vec![panel],
        worst: 3,
        points: "windows".into(),
    }
}

fn on_frame(f: &FrameMessage) {
    println!(
        "frame {:3} at {}: VMAF {:7.3} (VIF0 {:.4}, ADM2 {:.4}, motion2 {:.3})",
        f.index,
        f.timing.running_time.display(),
        f.score,
        f.get("integer_vif_scale0").unwrap_or(f64::NAN),
        f.get("integer_adm2").unwrap_or(f64::NAN),
        f.get("integer_motion2").unwrap_or(f64::NAN),
    );
}

fn on_window(w: &WindowMessage) {
    let vmaf = w.scores.get("vmaf");
    println!(
        "window from frame {} ({} frames): VMAF {:.3}, min {:.3}, max {:.3}; unmatched so far {}/{}",
        w.index,
        w.scores.frames,
        w.scores.score().unwrap_or(f64::NAN),
        vmaf.map_or(f64::NAN, |s| s.min),
        vmaf.map_or(f64::NAN, |s| s.max),
        w.unmatched_ref,
        w.unmatched_dist
    );
}

fn on_pooled(p: &PooledMessage) {
    println!(
        "pooled over {} frames on {} with {}: VMAF (harmonic mean) {:.6}",
        p.scores.frames,
        p.backend,
        p.model,
        p.scores.score().unwrap_or(f64::NAN)
    );
    for (name, st) in &p.scores.metrics {
        println!(
            "  {name:40} min {:10.6} max {:10.6} mean {:10.6} harmonic {:10.6}",
            st.min, st.max, st.mean, st.harmonic_mean
        );
    }
}
