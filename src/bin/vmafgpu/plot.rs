//! `--plot FILE.svg|FILE.png`: per-frame scores against time, one panel per metric, with the
//! pooled value as a horizontal line and the worst frames marked (plotters; the text in the
//! embedded DejaVu Sans Mono, so no system font is needed). Also used by examples/embed.rs for
//! its window means.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

/// The font every text is drawn in (assets/fonts/DejaVuSansMono.LICENSE: Bitstream Vera licence).
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSansMono.ttf");
const FAMILY: &str = "sans-serif";

/// Size of one panel in pixels (SVG user units).
const WIDTH: u32 = 1000;
const PANEL_HEIGHT: u32 = 300;
const HEADER: u32 = 60;

/// One metric's panel.
#[derive(Clone, Debug)]
pub struct Panel {
    pub metric: String,
    /// (frame index, value), in frame order.
    pub points: Vec<(u64, f64)>,
    /// The pooled value drawn as a line, and how it was pooled (`mean`, ...).
    pub pooled: Option<(f64, String)>,
    /// Higher values are worse (cambi): the worst frames are the highest.
    pub lower_is_better: bool,
}

impl Panel {
    /// The `n` worst points (lowest, or highest when lower is better), worst first; ties in
    /// frame order.
    pub fn worst(&self, n: usize) -> Vec<(u64, f64)> {
        let mut p: Vec<_> = self
            .points
            .iter()
            .copied()
            .filter(|p| p.1.is_finite())
            .collect();
        p.sort_by(|a, b| {
            let o = a.1.total_cmp(&b.1);
            if self.lower_is_better { o.reverse() } else { o }.then(a.0.cmp(&b.0))
        });
        p.truncate(n);
        p
    }
}

/// A whole figure: a title, a caption line (the unmatched counts), the panels.
#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    pub caption: String,
    /// Frames per second, when known: the x labels then give seconds too.
    pub fps: Option<f64>,
    /// What a point on the x axis is (`frame`, `window start frame`).
    pub x_desc: String,
    pub panels: Vec<Panel>,
    /// How many worst points to mark in each panel.
    pub worst: usize,
    /// What the points are, in panel titles (`frames`, `windows`).
    pub points: String,
}

/// Write `fig` to `path`: SVG for `.svg`, PNG for `.png`.
pub fn write(path: &Path, fig: &Figure) -> Result<(), String> {
    let bytes = match format_of(path)? {
        PlotFormat::Svg => svg(fig)?.into_bytes(),
        PlotFormat::Png => png(fig)?,
    };
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    Svg,
    Png,
}

/// The format a plot file's name asks for.
pub fn format_of(path: &Path) -> Result<PlotFormat, String> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
    {
        Some(e) if e == "svg" => Ok(PlotFormat::Svg),
        Some(e) if e == "png" => Ok(PlotFormat::Png),
        _ => Err(format!(
            "plot file {}: the name must end in .svg or .png",
            path.display()
        )),
    }
}

fn size(fig: &Figure) -> (u32, u32) {
    (
        WIDTH,
        HEADER + PANEL_HEIGHT * fig.panels.len().max(1) as u32,
    )
}

/// The figure as an SVG document.
pub fn svg(fig: &Figure) -> Result<String, String> {
    register_font()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size(fig)).into_drawing_area();
        draw(&root, fig)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// The figure as a PNG file (8-bit RGB).
pub fn png(fig: &Figure) -> Result<Vec<u8>, String> {
    register_font()?;
    let (w, h) = size(fig);
    let mut pixels = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
        draw(&root, fig)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let mut file = Vec::new();
    let mut enc = ::png::Encoder::new(&mut file, w, h);
    enc.set_color(::png::ColorType::Rgb);
    enc.set_depth(::png::BitDepth::Eight);
    enc.write_header()
        .and_then(|mut wr| wr.write_image_data(&pixels))
        .map_err(|e| format!("cannot encode the PNG: {e}"))?;
    Ok(file)
}

fn register_font() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
            .map_err(|_| "the embedded plot font does not load".to_string())
    })
    .clone()
}

/// `85.415076`-style values in titles: six significant decimals at most.
fn short(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let (header, body) = root.split_vertically(HEADER);
    header
        .draw(&Text::new(
            fig.title.clone(),
            (10, 8),
            (FAMILY, 20).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    header
        .draw(&Text::new(
            fig.caption.clone(),
            (10, 34),
            (FAMILY, 15).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    if fig.panels.is_empty() {
        return Ok(());
    }
    let areas = body.split_evenly((fig.panels.len(), 1));
    for (area, panel) in areas.iter().zip(&fig.panels) {
        draw_panel(area, panel, fig).map_err(err)?;
    }
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    fig: &Figure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let finite: Vec<_> = panel
        .points
        .iter()
        .copied()
        .filter(|p| p.1.is_finite())
        .collect();
    let x_max = panel.points.last().map_or(1, |p| p.0).max(1) as f64;
    let (mut lo, mut hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
    let pooled = panel.pooled.as_ref().map(|p| p.0).filter(|v| v.is_finite());
    if let Some(v) = pooled {
        (lo, hi) = (lo.min(v), hi.max(v));
    }
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = if hi > lo { (hi - lo) * 0.08 } else { 1.0 };
    let (lo, hi) = (lo - pad, hi + pad);

    let worst = panel.worst(fig.worst);
    let mut title = panel.metric.clone();
    if let Some((v, how)) = &panel.pooled {
        title += &format!(" - pooled ({how}) {}", short(*v));
    }
    if !worst.is_empty() {
        let frames: Vec<_> = worst.iter().map(|p| p.0.to_string()).collect();
        title += &format!(" - worst {} {}", fig.points, frames.join(", "));
    }

    let mut chart = ChartBuilder::on(area)
        .caption(title, (FAMILY, 16))
        .margin(8)
        .margin_right(40)
        .x_label_area_size(32)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_max, lo..hi)?;
    let fps = fig.fps.filter(|f| *f > 0.0);
    let x_label = |x: &f64| match fps {
        Some(f) => format!("{x:.0} ({:.2} s)", x / f),
        None => format!("{x:.0}"),
    };
    let x_desc = match fps {
        Some(f) => format!("{} (seconds at {} fps)", fig.x_desc, short(f)),
        None => fig.x_desc.clone(),
    };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(panel.metric.as_str())
        .x_labels(8)
        .x_label_formatter(&x_label)
        .label_style((FAMILY, 12))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    chart.draw_series(LineSeries::new(
        finite.iter().map(|&(i, v)| (i as f64, v)),
        BLUE.stroke_width(1),
    ))?;
    if let Some(v) = pooled {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, v), (x_max, v)],
            GREEN.stroke_width(2),
        )))?;
    }
    chart.draw_series(
        worst
            .iter()
            .map(|&(i, v)| Circle::new((i as f64, v), 4, RED.filled())),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(n: u64) -> Figure {
        let vmaf: Vec<_> = (0..n)
            .map(|i| (i, 80.0 + (i as f64 * 0.7).sin() * 10.0))
            .collect();
        let mean = vmaf.iter().map(|p| p.1).sum::<f64>() / n as f64;
        Figure {
            title: "vmafgpu: ref.yuv vs dist.yuv".into(),
            caption: "unmatched frames: reference 0, distorted 2".into(),
            fps: Some(25.0),
            x_desc: "frame".into(),
            panels: vec![
                Panel {
                    metric: "vmaf".into(),
                    points: vmaf,
                    pooled: Some((mean, "mean".into())),
                    lower_is_better: false,
                },
                Panel {
                    metric: "psnr_y".into(),
                    points: (0..n).map(|i| (i, 30.0 + i as f64 * 0.1)).collect(),
                    pooled: Some((32.5, "mean".into())),
                    lower_is_better: false,
                },
            ],
            worst: 3,
            points: "frames".into(),
        }
    }

    /// The point counts of the `<polyline>`s drawn in `stroke` (the axes are black polylines).
    fn polylines(svg: &str, stroke: &str) -> Vec<usize> {
        svg.match_indices("<polyline")
            .map(|(at, _)| &svg[at..at + svg[at..].find("/>").unwrap()])
            .filter(|p| p.contains(&format!("stroke=\"{stroke}\"")))
            .map(|p| {
                let rest = &p[p.find("points=\"").unwrap() + 8..];
                rest[..rest.find('"').unwrap()].split_whitespace().count()
            })
            .collect()
    }

    #[test]
    fn svg_has_panels_series_pool_and_worst_frames() {
        let fig = figure(48);
        let s = svg(&fig).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..100]);
        assert!(s.contains("vmafgpu: ref.yuv vs dist.yuv"));
        assert!(s.contains("unmatched frames: reference 0, distorted 2"));
        let worst = fig.panels[0].worst(3);
        assert_eq!(worst.len(), 3);
        assert!(worst.windows(2).all(|w| w[0].1 <= w[1].1));
        let title = format!(
            "vmaf - pooled (mean) {} - worst frames {}, {}, {}",
            short(fig.panels[0].pooled.as_ref().unwrap().0),
            worst[0].0,
            worst[1].0,
            worst[2].0
        );
        assert!(s.contains(&title), "no {title:?}");
        assert!(s.contains("psnr_y - pooled (mean) 32.5 - worst frames 0, 1, 2"));
        assert!(s.contains("frame (seconds at 25 fps)"));
        assert!(s.contains("0 (0.00 s)") && s.contains("10 (0.40 s)"));
        // per panel: the series (one point per frame, blue) and the pooled line (green)
        assert_eq!(polylines(&s, "#0000FF"), [48, 48]);
        assert_eq!(polylines(&s, "#00FF00"), [2, 2]);
        // three worst-frame markers per panel
        assert_eq!(s.matches("<circle").count(), 6);
    }

    #[test]
    fn svg_without_fps_and_lower_is_better() {
        let mut fig = figure(10);
        fig.fps = None;
        fig.panels.truncate(1);
        fig.panels[0].lower_is_better = true;
        fig.panels[0].points = (0..10).map(|i| (i, i as f64)).collect();
        fig.panels[0].pooled = None;
        let s = svg(&fig).unwrap();
        assert!(s.contains("vmaf - worst frames 9, 8, 7"));
        assert!(!s.contains("seconds"));
        assert_eq!(polylines(&s, "#0000FF"), [10]);
        assert!(polylines(&s, "#00FF00").is_empty());
    }

    #[test]
    fn png_is_a_png_of_the_size_with_ink() {
        let fig = figure(30);
        let p = png(&fig).unwrap();
        assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        let dec = ::png::Decoder::new(std::io::Cursor::new(&p));
        let mut reader = dec.read_info().unwrap();
        let (w, h) = (reader.info().width, reader.info().height);
        assert_eq!((w, h), (WIDTH, HEADER + 2 * PANEL_HEIGHT));
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        let px = &buf[..frame.buffer_size()];
        let dark = px.chunks(3).filter(|c| c.iter().all(|&v| v < 100)).count();
        let blue = px
            .chunks(3)
            .filter(|c| c[2] > 200 && c[0] < 80 && c[1] < 80)
            .count();
        let red = px
            .chunks(3)
            .filter(|c| c[0] > 200 && c[1] < 80 && c[2] < 80)
            .count();
        // text and axes (black), the series (blue), the markers (red)
        assert!(dark > 2000, "{dark} dark pixels");
        assert!(blue > 500, "{blue} blue pixels");
        assert!(red > 50, "{red} red pixels");
    }

    #[test]
    fn plot_formats() {
        assert_eq!(format_of(Path::new("a.SVG")), Ok(PlotFormat::Svg));
        assert_eq!(format_of(Path::new("x/a.png")), Ok(PlotFormat::Png));
        assert!(format_of(Path::new("a.pdf")).is_err());
        assert!(format_of(Path::new("svg")).is_err());
    }
}
