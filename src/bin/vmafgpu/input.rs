//! The two inputs: raw `.yuv` (geometry from `-w -h -p -b`) and `.y4m` (geometry from its
//! header), read by a thread of ours into `appsrc` (one `read` per frame straight into the
//! buffer, which comes from the element's own pool when it offers one: the pinned pool with CUDA),
//! and anything else through `decodebin`, with NVIDIA's decoders first when the scores are
//! computed on CUDA ([`choose_decoders`]).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use gst::glib;
use gst::prelude::*;
use gst_video::prelude::*;

use crate::args::{Args, PixFmt};

/// Geometry and sample format of raw frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFormat {
    pub width: u32,
    pub height: u32,
    pub pix: PixFmt,
    pub bitdepth: u32,
}

impl RawFormat {
    /// The GStreamer format the element reads (planar, little-endian, at the real bit depth).
    pub fn video_format(&self) -> Result<gst_video::VideoFormat, String> {
        use gst_video::VideoFormat as F;
        Ok(match (self.pix, self.bitdepth) {
            (PixFmt::P420, 8) => F::I420,
            (PixFmt::P420, 10) => F::I42010le,
            (PixFmt::P420, 12) => F::I42012le,
            (PixFmt::P422, 8) => F::Y42b,
            (PixFmt::P422, 10) => F::I42210le,
            (PixFmt::P422, 12) => F::I42212le,
            (PixFmt::P444, 8) => F::Y444,
            (PixFmt::P444, 10) => F::Y44410le,
            (PixFmt::P444, 12) => F::Y44412le,
            (PixFmt::P444, 16) => F::Y44416le,
            (p, b) => {
                return Err(format!(
                    "{} {b}-bit input is not supported (16 bits only as 4:4:4)",
                    pix_name(p)
                ));
            }
        })
    }

    fn bytes_per_sample(&self) -> usize {
        if self.bitdepth > 8 { 2 } else { 1 }
    }

    /// (width, height) of each chroma plane; libvmaf rounds up in files, as GStreamer does.
    fn chroma_size(&self) -> (usize, usize) {
        let (w, h) = (self.width as usize, self.height as usize);
        match self.pix {
            PixFmt::P420 => (w.div_ceil(2), h.div_ceil(2)),
            PixFmt::P422 => (w.div_ceil(2), h),
            PixFmt::P444 => (w, h),
        }
    }

    /// Bytes of one frame in the file (planes packed, rows packed).
    pub fn frame_bytes(&self) -> usize {
        let (cw, ch) = self.chroma_size();
        (self.width as usize * self.height as usize + 2 * cw * ch) * self.bytes_per_sample()
    }

    /// (row bytes, rows) of plane `p` in the file.
    fn plane_rows(&self, p: usize) -> (usize, usize) {
        let bps = self.bytes_per_sample();
        if p == 0 {
            (self.width as usize * bps, self.height as usize)
        } else {
            let (cw, ch) = self.chroma_size();
            (cw * bps, ch)
        }
    }
}

pub fn pix_name(p: PixFmt) -> &'static str {
    match p {
        PixFmt::P420 => "4:2:0",
        PixFmt::P422 => "4:2:2",
        PixFmt::P444 => "4:4:4",
    }
}

/// A `.y4m` stream header (`YUV4MPEG2 W.. H.. F..:.. C...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Y4m {
    pub format: RawFormat,
    pub fps: (i32, i32),
    /// Bytes of the header line, newline included.
    pub header_len: u64,
}

/// Parse the header line of a `.y4m` file.
pub fn parse_y4m_header(line: &str) -> Result<Y4m, String> {
    let body = line.trim_end_matches('\n');
    let mut tags = body.split(' ');
    if tags.next() != Some("YUV4MPEG2") {
        return Err("not a YUV4MPEG2 file (no YUV4MPEG2 signature)".into());
    }
    let (mut w, mut h, mut fps) = (0u32, 0u32, (25, 1));
    let mut colour = "420jpeg";
    for t in tags.filter(|t| !t.is_empty()) {
        let (tag, v) = t.split_at(1);
        match tag {
            "W" => w = v.parse().map_err(|_| format!("bad width tag {t:?}"))?,
            "H" => h = v.parse().map_err(|_| format!("bad height tag {t:?}"))?,
            "F" => {
                fps = v
                    .split_once(':')
                    .and_then(|(n, d)| Some((n.parse().ok()?, d.parse().ok()?)))
                    .filter(|&(n, d): &(i32, i32)| n > 0 && d > 0)
                    .ok_or_else(|| format!("bad frame rate tag {t:?}"))?
            }
            "C" => colour = v,
            "I" if !matches!(v, "p" | "?") => {
                return Err(format!("interlaced y4m (I{v}) is not supported"));
            }
            _ => {} // A (aspect), X (comments)
        }
    }
    if w == 0 || h == 0 {
        return Err("the header has no W or H".into());
    }
    let (pix, bitdepth) = match colour {
        "420" | "420jpeg" | "420paldv" | "420mpeg2" => (PixFmt::P420, 8),
        "422" => (PixFmt::P422, 8),
        "444" => (PixFmt::P444, 8),
        c => {
            let parsed = c.split_once('p').and_then(|(s, b)| {
                let pix = match s {
                    "420" => PixFmt::P420,
                    "422" => PixFmt::P422,
                    "444" => PixFmt::P444,
                    _ => return None,
                };
                Some((pix, b.parse::<u32>().ok()?))
            });
            match parsed {
                Some((p, b)) if [10, 12, 16].contains(&b) => (p, b),
                _ => {
                    return Err(format!(
                        "colour space C{c} is not supported (420, 422, 444 at 8, 10, 12 or 16 bits)"
                    ));
                }
            }
        }
    };
    Ok(Y4m {
        format: RawFormat {
            width: w,
            height: h,
            pix,
            bitdepth,
        },
        fps,
        header_len: line.len() as u64,
    })
}

/// What an input file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Raw(RawFormat),
    Y4m(Y4m),
    /// Anything else: GStreamer's decodebin.
    Decoded,
}

/// An input file and how it is read.
#[derive(Clone, Debug)]
pub struct Input {
    pub path: String,
    pub kind: Kind,
    /// Frames in the file, where the file says (raw and y4m).
    pub frames: Option<u64>,
}

fn has_ext(path: &str, ext: &str) -> bool {
    std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// Open `path` to see what it is. libvmaf: any of `-w -h -p -b` makes both inputs raw; here a
/// `.y4m` keeps its header and other files are raw then, and without them `.yuv` needs them.
pub fn probe(path: &str, a: &Args) -> Result<Input, String> {
    let file = File::open(path).map_err(|e| format!("could not open file: {path} ({e})"))?;
    let len = file.metadata().map(|m| m.len()).ok();
    if has_ext(path, "y4m") {
        let mut r = BufReader::new(file);
        let mut line = String::new();
        (&mut r)
            .take(4096)
            .read_line(&mut line)
            .map_err(|e| format!("problem with file {path}: {e}"))?;
        let y4m = parse_y4m_header(&line).map_err(|e| format!("problem with file {path}: {e}"))?;
        let frames =
            len.map(|l| (l.saturating_sub(y4m.header_len)) / (y4m.format.frame_bytes() as u64 + 6));
        return Ok(Input {
            path: path.into(),
            kind: Kind::Y4m(y4m),
            frames,
        });
    }
    if a.use_yuv {
        let format = RawFormat {
            width: a.width,
            height: a.height,
            pix: a.pix_fmt.expect("checked with -w -h -b"),
            bitdepth: a.bitdepth,
        };
        format
            .video_format()
            .map_err(|e| format!("problem with file {path}: {e}"))?;
        let frames = len.map(|l| l / format.frame_bytes() as u64);
        return Ok(Input {
            path: path.into(),
            kind: Kind::Raw(format),
            frames,
        });
    }
    if has_ext(path, "yuv") {
        // libvmaf's usage error
        return Err(String::new());
    }
    Ok(Input {
        path: path.into(),
        kind: Kind::Decoded,
        frames: None,
    })
}

/// NVIDIA's hardware decoders (GStreamer's nvcodec plugin), which decodebin prefers when the
/// scores are computed with CUDA. nvcodec registers them only where a CUDA device with NVDEC
/// exists, and each advertises the profiles and sizes its device decodes: a file they cannot
/// take goes to GStreamer's other decoders.
pub const NVIDIA_DECODERS: [&str; 5] =
    ["nvh264dec", "nvh265dec", "nvvp9dec", "nvav1dec", "nvvp8dec"];

/// What decoded frames reach the element as: system memory (the element maps buffers on the
/// host). `video/x-raw(memory:CUDAMemory)` once the element takes CUDA memory.
pub const DECODED_CAPS: &str = "video/x-raw";

/// Which decoders decodebin uses for files GStreamer decodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoders {
    /// `--backend cpu` or `hip`: never NVIDIA's (skipped in decodebin).
    Software,
    /// `--backend cuda` or `auto` with these NVIDIA decoders present: ranked above the others.
    Nvidia(Vec<&'static str>),
    /// `--backend cuda` or `auto` without any NVIDIA decoder (no nvcodec plugin, or no CUDA
    /// device with NVDEC): GStreamer's default decoders.
    Fallback,
}

impl Decoders {
    /// The `--verbose` line saying the choice.
    pub fn describe(&self, backend: &str) -> String {
        match self {
            Decoders::Software => {
                format!(
                    "decoders: GStreamer's software decoders (backend {backend}; NVIDIA's skipped)"
                )
            }
            Decoders::Nvidia(names) => format!(
                "decoders: NVIDIA first where the codec allows ({}; backend {backend}), frames \
                 to the element as {DECODED_CAPS}",
                names.join(", ")
            ),
            Decoders::Fallback => format!(
                "decoders: no NVIDIA decoder here (none of {} registered: no nvcodec plugin or \
                 no CUDA device with NVDEC), GStreamer's default decoders (backend {backend})",
                NVIDIA_DECODERS.join(", ")
            ),
        }
    }
}

/// The decoders for `backend` (`--backend`, None: auto), `present` telling which factories
/// exist.
pub fn choose_decoders(backend: Option<&str>, present: impl Fn(&str) -> bool) -> Decoders {
    match backend.unwrap_or("auto") {
        "cuda" | "auto" => {
            let found: Vec<&'static str> = NVIDIA_DECODERS
                .iter()
                .copied()
                .filter(|n| present(n))
                .collect();
            if found.is_empty() {
                Decoders::Fallback
            } else {
                Decoders::Nvidia(found)
            }
        }
        _ => Decoders::Software,
    }
}

/// The choice for this process's GStreamer registry; with NVIDIA decoders present and chosen,
/// their ranks are raised above GStreamer's software decoders (PRIMARY) for decodebin.
pub fn decoders(backend: Option<&str>) -> Decoders {
    let registry = gst::Registry::get();
    let choice = choose_decoders(backend, |n| {
        registry
            .find_feature(n, gst::ElementFactory::static_type())
            .is_some()
    });
    if let Decoders::Nvidia(names) = &choice {
        for n in names {
            if let Some(f) = registry.find_feature(n, gst::ElementFactory::static_type()) {
                f.set_rank(gst::Rank::PRIMARY + 1);
            }
        }
    }
    choice
}

/// `decodebin` skipping NVIDIA's decoders when `skip` (ranks are the process's; this is the
/// decodebin's own).
fn decodebin(skip_nvidia: bool) -> Result<gst::Element, String> {
    let decode = make("decodebin")?;
    if skip_nvidia {
        decode.connect("autoplug-select", false, |values| {
            let factory = values.get(3)?.get::<gst::ElementFactory>().ok()?;
            // GstAutoplugSelectResult: 0 try, 2 skip
            let ty = glib::Type::from_name("GstAutoplugSelectResult")?;
            let class = glib::EnumClass::with_type(ty)?;
            let skip = NVIDIA_DECODERS.contains(&factory.name().as_str());
            class.to_value(if skip { 2 } else { 0 })
        });
    }
    Ok(decode)
}

pub fn make(factory: &str) -> Result<gst::Element, String> {
    gst::ElementFactory::make(factory)
        .build()
        .map_err(|_| format!("GStreamer element {factory} is missing (install its plugin)"))
}

/// Frames to drop at the start and the most to pass (0: all).
#[derive(Clone, Copy, Debug)]
pub struct Range {
    pub skip: u64,
    pub count: u64,
}

/// Add `input`'s source to `pipeline`, its frames going into `entry`. Raw and y4m files get a
/// reader thread (returned, to join), decoded files a decodebin (frames counted by a probe)
/// with `decoders`, then [`DECODED_CAPS`], then (`convert`) a videoconvert: NVIDIA's decoders
/// give NV12 and P010, which the element does not all take.
pub fn add_source(
    pipeline: &gst::Pipeline,
    input: &Input,
    range: Range,
    entry: &gst::Pad,
    stop: &Arc<AtomicBool>,
    decoders: &Decoders,
    convert: bool,
) -> Result<Option<std::thread::JoinHandle<()>>, String> {
    let err = |e: &dyn std::fmt::Debug| format!("{}: {e:?}", input.path);
    match input.kind {
        Kind::Raw(format) => add_reader(pipeline, input, format, (25, 1), 0, range, entry, stop),
        Kind::Y4m(y) => add_reader(
            pipeline,
            input,
            y.format,
            y.fps,
            y.header_len,
            range,
            entry,
            stop,
        ),
        Kind::Decoded => {
            let src = make("filesrc")?;
            src.set_property("location", &input.path);
            let decode = decodebin(*decoders == Decoders::Software)?;
            let filter = make("capsfilter")?;
            filter.set_property(
                "caps",
                gst::Caps::from_str(DECODED_CAPS).map_err(|e| err(&e))?,
            );
            pipeline
                .add_many([&src, &decode, &filter])
                .map_err(|e| err(&e))?;
            src.link(&decode).map_err(|e| err(&e))?;
            let out = filter.static_pad("src").expect("capsfilter has src");
            if convert {
                let conv = make("videoconvert")?;
                conv.set_property_from_str("dither", "none");
                pipeline.add(&conv).map_err(|e| err(&e))?;
                filter.link(&conv).map_err(|e| err(&e))?;
                conv.static_pad("src")
                    .expect("videoconvert has src")
                    .link(entry)
                    .map_err(|e| err(&e))?;
            } else {
                out.link(entry).map_err(|e| err(&e))?;
            }
            let name = input.path.clone();
            let target = filter.static_pad("sink").expect("capsfilter has sink");
            decode.connect_pad_added(move |_, pad| {
                let is_video = pad
                    .current_caps()
                    .and_then(|c| c.structure(0).map(|s| s.name().starts_with("video/")))
                    .unwrap_or(false);
                if is_video
                    && !target.is_linked()
                    && let Err(e) = pad.link(&target)
                {
                    eprintln!("{name}: cannot use its video stream: {e:?}");
                }
            });
            if range.skip > 0 || range.count > 0 {
                let counter = std::sync::atomic::AtomicU64::new(0);
                entry.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
                    let seen = counter.fetch_add(1, Ordering::Relaxed) + 1;
                    let past_end = range.count > 0 && seen > range.skip + range.count;
                    if seen > range.skip && !past_end {
                        return gst::PadProbeReturn::Ok;
                    }
                    // the buffer goes no further (taken here: gstreamer-rs 0.24 with
                    // PadProbeReturn::Drop makes the core unref a null pointer)
                    drop(info.take_buffer());
                    if past_end {
                        // enough: end this input here, and upstream stops at the EOS flow
                        if seen == range.skip + range.count + 1 {
                            pad.send_event(gst::event::Eos::new());
                        }
                        info.flow_res = Err(gst::FlowError::Eos);
                    }
                    gst::PadProbeReturn::Handled
                });
            }
            Ok(None)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn add_reader(
    pipeline: &gst::Pipeline,
    input: &Input,
    format: RawFormat,
    fps: (i32, i32),
    header_len: u64,
    range: Range,
    entry: &gst::Pad,
    stop: &Arc<AtomicBool>,
) -> Result<Option<std::thread::JoinHandle<()>>, String> {
    let err = |e: &dyn std::fmt::Debug| format!("{}: {e:?}", input.path);
    let info = gst_video::VideoInfo::builder(format.video_format()?, format.width, format.height)
        .fps(gst::Fraction::new(fps.0, fps.1))
        .build()
        .map_err(|e| err(&e))?;
    let caps = info.to_caps().map_err(|e| err(&e))?;
    let src = make("appsrc")?;
    src.set_property("caps", &caps);
    src.set_property_from_str("format", "time");
    src.set_property("block", true);
    src.set_property("max-bytes", (4 * info.size()) as u64);
    pipeline.add(&src).map_err(|e| err(&e))?;
    src.static_pad("src")
        .expect("appsrc has a src pad")
        .link(entry)
        .map_err(|e| err(&e))?;
    let file =
        File::open(&input.path).map_err(|e| format!("could not open file: {}: {e}", input.path))?;
    let reader = Reader {
        path: input.path.clone(),
        file,
        format,
        info,
        y4m: matches!(input.kind, Kind::Y4m(_)),
        header_len,
        range,
        duration: gst::ClockTime::SECOND
            .mul_div_floor(fps.1 as u64, fps.0 as u64)
            .unwrap_or(gst::ClockTime::ZERO),
        src,
        stop: stop.clone(),
        read_threads: read_threads(),
    };
    let handle = std::thread::Builder::new()
        .name(format!("read {}", input.path))
        .spawn(move || reader.run())
        .map_err(|e| err(&e))?;
    Ok(Some(handle))
}

struct Reader {
    path: String,
    file: File,
    format: RawFormat,
    info: gst_video::VideoInfo,
    y4m: bool,
    header_len: u64,
    range: Range,
    duration: gst::ClockTime,
    src: gst::Element,
    stop: Arc<AtomicBool>,
    /// Threads reading one raw frame ([`read_threads`]).
    read_threads: usize,
}

/// How many threads read one raw frame (each a part, at its offset, straight into the buffer):
/// a copy out of the page cache runs at a few GB/s per thread, and 2,000 1080p frames/s need
/// 6.2 GB/s per input. `VMAFGPU_READ_THREADS` (1 to 8), else a quarter of the cores, 1 to 4.
pub fn read_threads() -> usize {
    if let Some(n) = std::env::var("VMAFGPU_READ_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.clamp(1, 8);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / 4).clamp(1, 4)
}

/// Fill `buf` from `file` at `offset`, in `threads` parts read at once (positioned reads: the
/// file's offset is not used); false when the file ends before `buf` is full (a last partial
/// frame: libvmaf stops there too).
fn read_at_parallel(
    file: &File,
    offset: u64,
    buf: &mut [u8],
    threads: usize,
) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    if file.metadata()?.len() < offset + buf.len() as u64 {
        return Ok(false);
    }
    // parts of whole 64 KiB blocks (the last takes the rest)
    let part = buf.len().div_ceil(threads).next_multiple_of(1 << 16);
    std::thread::scope(|s| {
        let mut parts = buf.chunks_mut(part).enumerate();
        let (_, first) = parts.next().expect("a frame has bytes");
        let others: Vec<_> = parts
            .map(|(j, c)| s.spawn(move || file.read_exact_at(c, offset + (j * part) as u64)))
            .collect();
        let mut result = file.read_exact_at(first, offset);
        for h in others {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a reader panicked")));
            result = result.and(r);
        }
        result
    })?;
    Ok(true)
}

/// Whether GStreamer's layout of `info` is the file's: planes and rows packed.
fn packed(info: &gst_video::VideoInfo, f: &RawFormat) -> bool {
    let mut offset = 0;
    for p in 0..3 {
        let (row, rows) = f.plane_rows(p);
        if info.offset()[p] != offset || info.stride()[p] as usize != row {
            return false;
        }
        offset += row * rows;
    }
    info.size() == offset
}

impl Reader {
    fn run(mut self) {
        if let Err(e) = self.read_all() {
            let msg = format!("problem while reading {}: {e}", self.path);
            let _ = self.src.post_message(
                gst::message::Error::builder(gst::ResourceError::Read, &msg)
                    .src(&self.src)
                    .build(),
            );
        }
        let _ = self
            .src
            .emit_by_name::<gst::FlowReturn>("end-of-stream", &[]);
    }

    /// Read the frame header of a y4m frame (`FRAME[ params]\n`); false at the end of the file.
    fn frame_header(&self, r: &mut BufReader<&File>) -> std::io::Result<bool> {
        let mut line = Vec::new();
        (&mut *r).take(1024).read_until(b'\n', &mut line)?;
        if line.is_empty() {
            return Ok(false);
        }
        if !line.starts_with(b"FRAME") || line.last() != Some(&b'\n') {
            return Err(std::io::Error::other("bad y4m FRAME header"));
        }
        Ok(true)
    }

    fn read_all(&mut self) -> std::io::Result<()> {
        let frame_bytes = self.format.frame_bytes();
        let file = &self.file;
        let mut r = BufReader::with_capacity(1 << 16, file);
        r.seek(SeekFrom::Start(self.header_len))?;
        // skipped frames
        if self.y4m {
            for _ in 0..self.range.skip {
                if !self.frame_header(&mut r)? {
                    return Ok(());
                }
                r.seek_relative(frame_bytes as i64)?;
            }
        } else {
            r.seek(SeekFrom::Current(
                (self.range.skip * frame_bytes as u64) as i64,
            ))?;
        }
        let pool = self.element_pool();
        let tight = packed(&self.info, &self.format);
        let mut scratch = if tight {
            Vec::new()
        } else {
            vec![0u8; frame_bytes]
        };
        let mut n = 0u64;
        while self.range.count == 0 || n < self.range.count {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if self.y4m && !self.frame_header(&mut r)? {
                return Ok(());
            }
            let mut buffer = match pool.as_ref().map(|p| p.acquire_buffer(None)) {
                Some(Ok(b)) => b,
                _ => gst::Buffer::with_size(self.info.size())
                    .map_err(|e| std::io::Error::other(e.to_string()))?,
            };
            {
                let b = buffer.get_mut().expect("a new buffer is writable");
                let pts = self.duration * n;
                b.set_pts(pts);
                b.set_dts(pts);
                b.set_duration(self.duration);
                let full = if tight && self.packed_buffer(b, frame_bytes) {
                    let mut map = b
                        .map_writable()
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                    self.read_frame(&mut r, n, &mut map.as_mut_slice()[..frame_bytes])?
                } else {
                    if scratch.is_empty() {
                        scratch = vec![0u8; frame_bytes];
                    }
                    let full = self.read_frame(&mut r, n, &mut scratch)?;
                    if full {
                        self.copy_planes(&scratch, b)?;
                    }
                    full
                };
                if !full {
                    // the end, or a last partial frame (libvmaf stops there too)
                    return Ok(());
                }
            }
            let ret = self
                .src
                .emit_by_name::<gst::FlowReturn>("push-buffer", &[&buffer]);
            if ret != gst::FlowReturn::Ok {
                return Ok(());
            }
            n += 1;
        }
        Ok(())
    }

    /// Read frame `n` (after the skipped ones) into `dest`: a raw file's by positioned reads in
    /// parallel, a y4m's (whose frame headers come between) from `r`.
    fn read_frame(
        &self,
        r: &mut BufReader<&File>,
        n: u64,
        dest: &mut [u8],
    ) -> std::io::Result<bool> {
        if self.y4m || self.read_threads < 2 {
            return read_full(r, dest);
        }
        let at = self.header_len + (self.range.skip + n) * dest.len() as u64;
        read_at_parallel(&self.file, at, dest, self.read_threads)
    }

    /// Whether `buffer` holds the frame packed as in the file (its video meta, if any, has
    /// `info`'s packed layout), so that the file is read straight into it.
    fn packed_buffer(&self, buffer: &gst::BufferRef, frame_bytes: usize) -> bool {
        if buffer.size() < frame_bytes {
            return false;
        }
        match buffer.meta::<gst_video::VideoMeta>() {
            Some(m) => {
                m.stride()[..3] == self.info.stride()[..3]
                    && m.offset()[..3] == self.info.offset()[..3]
            }
            None => true,
        }
    }

    /// Copy a packed frame into `buffer`'s planes (its strides: its video meta, else `info`'s).
    fn copy_planes(&self, data: &[u8], buffer: &mut gst::BufferRef) -> std::io::Result<()> {
        let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(buffer, &self.info)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut off = 0;
        for p in 0..3u32 {
            let (row, rows) = self.format.plane_rows(p as usize);
            let stride = frame.plane_stride()[p as usize] as usize;
            let plane = frame
                .plane_data_mut(p)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            for y in 0..rows {
                plane[y * stride..y * stride + row]
                    .copy_from_slice(&data[off + y * row..off + (y + 1) * row]);
            }
            off += row * rows;
        }
        Ok(())
    }

    /// The buffer pool the element offers on this pad (the CUDA backend's pinned memory, which
    /// the GPU reads by DMA), configured and active; None when it offers none.
    fn element_pool(&self) -> Option<gst::BufferPool> {
        let caps = self.info.to_caps().ok()?;
        let pad = self.src.static_pad("src")?;
        let mut q = gst::query::Allocation::new(Some(&caps), true);
        if !pad.peer_query(&mut q) {
            return None;
        }
        let (pool, _, _, _) = q.allocation_pools().next()?;
        let pool = pool?;
        let mut config = pool.config();
        config.set_params(Some(&caps), self.info.size() as u32, 2, 0);
        config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_META);
        pool.set_config(config).ok()?;
        pool.set_active(true).ok()?;
        Some(pool)
    }
}

/// Fill `buf` from `r`: true when full, false at the end of the file (even mid-frame).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame larger than the reader's buffer is read in one `read` straight into the
    /// destination (std's BufReader passes such reads through when it holds nothing): no copy
    /// through its 64 KiB buffer, no 4 KiB steps.
    #[test]
    fn frames_read_in_one_call() {
        struct Counting(Vec<usize>, usize);
        impl Read for Counting {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                let n = b.len().min(self.1);
                self.0.push(b.len());
                self.1 -= n;
                Ok(n)
            }
        }
        let frame = 1920 * 1080 * 3 / 2;
        let mut r = BufReader::with_capacity(1 << 16, Counting(Vec::new(), 2 * frame + 10));
        let mut buf = vec![0u8; frame];
        assert!(read_full(&mut r, &mut buf).unwrap());
        assert!(read_full(&mut r, &mut buf).unwrap());
        assert!(!read_full(&mut r, &mut buf).unwrap());
        assert_eq!(&r.get_ref().0[..2], [frame, frame]);
    }

    /// Parallel positioned reads give the file's bytes, whatever the split, and stop at a last
    /// partial frame.
    #[test]
    fn parallel_reads_equal_the_file() {
        let path = std::env::temp_dir().join(format!("vmafgpu-read-{}", std::process::id()));
        let data: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        for threads in [1, 2, 3, 4, 8] {
            for (at, len) in [(0usize, 300_000usize), (123_457, 700_000), (999_000, 1_003)] {
                let mut buf = vec![0u8; len];
                assert!(read_at_parallel(&file, at as u64, &mut buf, threads).unwrap());
                assert!(buf == data[at..at + len], "{threads} threads at {at}");
            }
            let mut buf = vec![0u8; 2_000];
            assert!(!read_at_parallel(&file, 999_500, &mut buf, threads).unwrap());
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn y4m_headers() {
        let y =
            parse_y4m_header("YUV4MPEG2 W176 H144 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG\n")
                .unwrap();
        assert_eq!(
            (y.format.width, y.format.height, y.format.bitdepth),
            (176, 144, 8)
        );
        assert_eq!(y.fps, (30000, 1001));
        assert_eq!(y.format.pix, PixFmt::P420);
        let y = parse_y4m_header("YUV4MPEG2 W640 H360 F25:1 C420p10\n").unwrap();
        assert_eq!((y.format.pix, y.format.bitdepth), (PixFmt::P420, 10));
        assert_eq!(y.format.frame_bytes(), 640 * 360 * 3);
        assert!(parse_y4m_header("YUV4MPEG2 W64 H64 Cmono\n").is_err());
        assert!(parse_y4m_header("YUV4MPEG2 W64 H64 It\n").is_err());
        assert!(parse_y4m_header("YUV4MPEG W64 H64\n").is_err());
    }

    /// NVIDIA's decoders for cuda and auto where present, never for cpu or hip, and the
    /// fallback (with its line) where none is present, as in CI.
    #[test]
    fn decoder_choice() {
        let none = |_: &str| false;
        let some = |n: &str| n == "nvh264dec" || n == "nvav1dec";
        for b in [Some("cuda"), Some("auto"), None] {
            assert_eq!(choose_decoders(b, none), Decoders::Fallback);
            assert_eq!(
                choose_decoders(b, some),
                Decoders::Nvidia(vec!["nvh264dec", "nvav1dec"])
            );
        }
        for b in ["cpu", "hip"] {
            assert_eq!(choose_decoders(Some(b), some), Decoders::Software);
            assert_eq!(choose_decoders(Some(b), none), Decoders::Software);
        }
        assert!(
            Decoders::Fallback
                .describe("cuda")
                .contains("no NVIDIA decoder")
        );
        assert!(
            Decoders::Nvidia(vec!["nvh264dec"])
                .describe("cuda")
                .contains("nvh264dec")
        );
        // this machine's registry: the choice names only factories that exist
        gst::init().unwrap();
        match decoders(Some("cuda")) {
            Decoders::Nvidia(names) => {
                for n in names {
                    let f = gst::ElementFactory::find(n).unwrap();
                    assert_eq!(f.rank(), gst::Rank::PRIMARY + 1);
                }
            }
            d => assert_eq!(d, Decoders::Fallback),
        }
        assert_eq!(decoders(Some("cpu")), Decoders::Software);
        // the caps are a valid system-memory caps (switching to CUDA memory: this string)
        let caps = gst::Caps::from_str(DECODED_CAPS).unwrap();
        assert_eq!(caps.structure(0).unwrap().name(), "video/x-raw");
        assert!(caps.features(0).unwrap().contains("memory:SystemMemory"));
    }

    #[test]
    fn raw_layouts() {
        gst::init().unwrap();
        for (w, h, pix, b, tight) in [
            (176, 144, PixFmt::P420, 8, true),
            (33, 35, PixFmt::P420, 10, false),
            (35, 33, PixFmt::P422, 12, false),
            (34, 34, PixFmt::P444, 16, true),
        ] {
            let f = RawFormat {
                width: w,
                height: h,
                pix,
                bitdepth: b,
            };
            let info = gst_video::VideoInfo::builder(f.video_format().unwrap(), w, h)
                .build()
                .unwrap();
            for p in 0..3 {
                let (row, rows) = f.plane_rows(p);
                assert!(info.stride()[p] as usize >= row);
                assert_eq!(info.comp_height(p as u8) as usize, rows);
            }
            assert_eq!(packed(&info, &f), tight, "{w}x{h}");
        }
        let f = RawFormat {
            width: 64,
            height: 64,
            pix: PixFmt::P420,
            bitdepth: 16,
        };
        assert!(f.video_format().is_err());
    }
}
