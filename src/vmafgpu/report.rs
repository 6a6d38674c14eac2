//! Report files.
//!
//! [`Report`] renders libvmaf's JSON, XML and CSV report layouts (`libvmaf/src/output.c`): the
//! same keys, frame numbering and `pooled_metrics`, except that numbers carry 17 significant
//! digits (`%.17g`, enough to read back the exact `f64`) where libvmaf prints 6 decimals.
//! [`ReportRows`] renders each frame's row as it is scored into a spill file, so that memory
//! stays flat for any length; at the end its head, rows and tail are the bytes
//! [`Report::render`] gives. [`ReportTarget`] checks the path at start and writes through a
//! temporary file renamed into place (through symbolic links; FIFOs and devices directly), so a
//! crash never leaves a half-written report.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::messages::MetricStats;

/// Format `x` like C's `printf("%.17g", x)`: 17 significant digits, trailing zeros removed,
/// exponent form below 1e-4 and from 1e17. 17 digits always read back to the same `f64`.
pub fn fmt_g17(x: f64) -> String {
    const P: i32 = 17;
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // the exponent after rounding to P significant digits decides the style (C99 7.21.6.1)
    let e_form = format!("{:.*e}", (P - 1) as usize, x);
    let (mant, exp) = e_form.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    fn strip(s: &str) -> &str {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.')
        } else {
            s
        }
    }
    if !(-4..P).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mant), exp.abs())
    } else {
        let fixed = format!("{:.*}", (P - 1 - exp) as usize, x);
        strip(&fixed).to_string()
    }
}

/// Output formats of `results-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Xml,
    Csv,
}

/// One frame of a report: its number and metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportFrame {
    pub index: u64,
    pub metrics: Vec<(String, f64)>,
}

/// Everything a report file holds.
#[derive(Clone, Debug)]
pub struct Report<'a> {
    /// `version` string (libvmaf writes its own version there).
    pub version: &'a str,
    /// Frames scored per second of processing, as libvmaf's `fps`.
    pub fps: f64,
    pub width: u32,
    pub height: u32,
    pub frames: &'a [ReportFrame],
    pub pooled: &'a [(String, MetricStats)],
}

fn num_json(x: f64) -> String {
    if x.is_finite() {
        fmt_g17(x)
    } else {
        "null".into()
    }
}

impl Report<'_> {
    /// What the report holds besides its rows.
    pub fn summary(&self) -> Summary<'_> {
        Summary {
            version: self.version,
            fps: self.fps,
            width: self.width,
            height: self.height,
            pooled: self.pooled,
        }
    }

    /// The report text in `format`.
    pub fn render(&self, format: Format) -> String {
        let summary = self.summary();
        let mut o = String::new();
        summary.head(format, &mut o);
        let columns: Vec<&str> = self.pooled.iter().map(|(n, _)| n.as_str()).collect();
        for (k, f) in self.frames.iter().enumerate() {
            write_row(format, k as u64, f.index, &f.metrics, &columns, &mut o);
        }
        summary.tail(format, &mut o);
        o
    }
}

/// What a report holds besides its rows: the part known only at the end of the stream.
#[derive(Clone, Copy, Debug)]
pub struct Summary<'a> {
    /// `version` string (libvmaf writes its own version there).
    pub version: &'a str,
    /// Frames scored per second of processing, as libvmaf's `fps`.
    pub fps: f64,
    pub width: u32,
    pub height: u32,
    pub pooled: &'a [(String, MetricStats)],
}

impl Summary<'_> {
    /// The text before the first row.
    ///
    /// Layouts: libvmaf 3.2.0 libvmaf/src/output.c: vmaf_write_output_json, _xml, _csv.
    fn head(&self, format: Format, o: &mut String) {
        match format {
            Format::Json => {
                let _ = writeln!(o, "{{");
                let _ = writeln!(o, "  \"version\": \"{}\",", self.version);
                if self.fps.is_finite() {
                    let _ = writeln!(o, "  \"fps\": {:.2},", self.fps);
                } else {
                    let _ = writeln!(o, "  \"fps\": null,");
                }
                o.push_str("  \"frames\": [");
            }
            Format::Xml => {
                let _ = writeln!(o, "<VMAF version=\"{}\">", self.version);
                let _ = writeln!(
                    o,
                    "  <params qualityWidth=\"{}\" qualityHeight=\"{}\" />",
                    self.width, self.height
                );
                let _ = writeln!(o, "  <fyi fps=\"{:.2}\" />", self.fps);
                let _ = writeln!(o, "  <frames>");
            }
            // a header row of metric names, every field followed by a comma
            Format::Csv => {
                o.push_str("Frame,");
                for (name, _) in self.pooled {
                    let _ = write!(o, "{name},");
                }
                o.push('\n');
            }
        }
    }

    /// The text after the last row.
    fn tail(&self, format: Format, o: &mut String) {
        match format {
            Format::Json => {
                o.push_str("\n  ],\n");
                o.push_str("  \"pooled_metrics\": {");
                for (k, (name, st)) in self.pooled.iter().enumerate() {
                    o.push_str(if k > 0 { ",\n" } else { "\n" });
                    let _ = write!(o, "    \"{name}\": {{");
                    let stats = [
                        ("min", st.min),
                        ("max", st.max),
                        ("mean", st.mean),
                        ("harmonic_mean", st.harmonic_mean),
                    ];
                    for (j, (stat, v)) in stats.iter().enumerate() {
                        o.push_str(if j > 0 { ",\n" } else { "\n" });
                        let _ = write!(o, "      \"{stat}\": {}", num_json(*v));
                    }
                    o.push_str("\n    }");
                }
                o.push_str("\n  },\n");
                o.push_str("  \"aggregate_metrics\": {");
                o.push_str("\n  }\n");
                o.push_str("}\n");
            }
            Format::Xml => {
                let _ = writeln!(o, "  </frames>");
                let _ = writeln!(o, "  <pooled_metrics>");
                for (name, st) in self.pooled {
                    let _ = writeln!(
                        o,
                        "    <metric name=\"{name}\" min=\"{}\" max=\"{}\" mean=\"{}\" harmonic_mean=\"{}\" />",
                        fmt_g17(st.min),
                        fmt_g17(st.max),
                        fmt_g17(st.mean),
                        fmt_g17(st.harmonic_mean)
                    );
                }
                let _ = writeln!(o, "  </pooled_metrics>");
                let _ = writeln!(o, "  <aggregate_metrics />");
                let _ = writeln!(o, "</VMAF>");
            }
            Format::Csv => {}
        }
    }
}

/// Append row `k` (0 for the first row of the report), frame `index`, to `o`. CSV writes the
/// values of `columns` (the pooled metrics' names) in their order, skipping those the frame
/// lacks.
fn write_row(
    format: Format,
    k: u64,
    index: u64,
    metrics: &[(String, f64)],
    columns: &[&str],
    o: &mut String,
) {
    match format {
        Format::Json => {
            o.push_str(if k > 0 { ",\n" } else { "\n" });
            let _ = writeln!(o, "    {{");
            let _ = writeln!(o, "      \"frameNum\": {index},");
            let _ = writeln!(o, "      \"metrics\": {{");
            for (j, (name, v)) in metrics.iter().enumerate() {
                let comma = if j + 1 < metrics.len() { "," } else { "" };
                let _ = writeln!(o, "        \"{name}\": {}{comma}", num_json(*v));
            }
            let _ = writeln!(o, "      }}");
            o.push_str("    }");
        }
        Format::Xml => {
            let _ = write!(o, "    <frame frameNum=\"{index}\" ");
            for (name, v) in metrics {
                let _ = write!(o, "{name}=\"{}\" ", fmt_g17(*v));
            }
            let _ = writeln!(o, "/>");
        }
        Format::Csv => {
            let _ = write!(o, "{index},");
            for name in columns {
                if let Some((_, v)) = metrics.iter().find(|(n, _)| n == name) {
                    let _ = write!(o, "{},", fmt_g17(*v));
                }
            }
            o.push('\n');
        }
    }
}

/// The rows of a report, rendered as frames are scored and kept in a spill file (unlinked at
/// once, so nothing is left behind whatever happens), not in memory: memory stays flat for a
/// run of any length. At the end, [`ReportRows::write_report`] writes the head (which holds
/// `fps`, known only then), the rows copied from the spill, and the tail: the same bytes as
/// [`Report::render`] on the same frames.
///
/// CSV rows depend on the pooled metrics' order (first-seen order across every frame,
/// [`MetricPool`](crate::model::pool::MetricPool)'s): a row is written with the names seen up
/// to its frame, a prefix of the final list, and the names after it are not in the frame, so
/// the row is the one the final list gives.
#[derive(Debug)]
pub struct ReportRows {
    format: Format,
    spill: std::io::BufWriter<std::fs::File>,
    /// Rows written.
    rows: u64,
    /// Bytes written to the spill.
    bytes: u64,
    /// CSV: every metric name seen, in first-seen order, and where each is in it.
    names: Vec<String>,
    seen: std::collections::HashSet<String>,
    /// The row being rendered (its allocation reused).
    line: String,
}

impl ReportRows {
    /// Rows in `format`, spilled to an unlinked file created in `dir`.
    pub fn new(format: Format, dir: &Path) -> std::io::Result<Self> {
        let seq = TMP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!(".vmafgpu-rows-{}-{seq}.tmp", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot create the spill file {}: {e}", path.display()),
                )
            })?;
        std::fs::remove_file(&path)?;
        Ok(Self {
            format,
            spill: std::io::BufWriter::with_capacity(1 << 16, file),
            rows: 0,
            bytes: 0,
            names: Vec::new(),
            seen: std::collections::HashSet::new(),
            line: String::new(),
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Render frame `index`'s row and add it to the spill.
    pub fn push(&mut self, index: u64, metrics: &[(String, f64)]) -> std::io::Result<()> {
        self.line.clear();
        if self.format == Format::Csv {
            for (name, _) in metrics {
                if !self.seen.contains(name) {
                    self.seen.insert(name.clone());
                    self.names.push(name.clone());
                }
            }
        }
        let columns: Vec<&str> = self.names.iter().map(String::as_str).collect();
        write_row(
            self.format,
            self.rows,
            index,
            metrics,
            &columns,
            &mut self.line,
        );
        self.spill.write_all(self.line.as_bytes())?;
        self.rows += 1;
        self.bytes += self.line.len() as u64;
        Ok(())
    }

    /// Write the whole report to `out`: `summary`'s head, every row so far, its tail. The rows
    /// stay: more can be pushed and the report written again.
    pub fn write_report(
        &mut self,
        summary: &Summary,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut text = String::new();
        summary.head(self.format, &mut text);
        out.write_all(text.as_bytes())?;
        self.spill.flush()?;
        let file = self.spill.get_mut();
        file.seek(SeekFrom::Start(0))?;
        let copied = std::io::copy(&mut (&mut *file).take(self.bytes), out);
        // back to the end for the next rows, whatever the copy did
        file.seek(SeekFrom::End(0))?;
        let copied = copied?;
        if copied != self.bytes {
            return Err(std::io::Error::other(format!(
                "the spill file of the report's rows is short: {copied} of {} bytes",
                self.bytes
            )));
        }
        text.clear();
        summary.tail(self.format, &mut text);
        out.write_all(text.as_bytes())
    }
}

/// Where a report goes, checked and prepared when the element starts, written at EOS.
///
/// A regular file (or a path where none is yet) is replaced atomically: the report is written
/// into a hidden temporary beside it, created at [`ReportTarget::prepare`] (so a missing
/// directory, a read-only directory or a directory as the target fail then, not at EOS) and
/// renamed into place once complete and flushed, so a crash never leaves a half-written report.
/// A symbolic link is followed: its final target is replaced and the link stays. Anything else
/// (a FIFO, a character device such as `/dev/stdout`, a regular file reached through
/// `/proc/self/fd` or `/dev/fd`) is written directly, appended to, with no temporary.
#[derive(Debug)]
pub enum ReportTarget {
    /// Replaced through `tmp`, which `file` writes (None once written).
    Replace {
        path: PathBuf,
        tmp: PathBuf,
        file: Option<std::fs::File>,
    },
    /// Written directly at EOS.
    Direct { path: PathBuf },
}

/// Distinguishes the temporaries of several reports to one path in one process.
static TMP_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `.<name>.vmafgpu-`: the start of the temporaries of a report named `name`, followed by
/// `<pid>-<sequence>.tmp`.
fn tmp_prefix(name: &std::ffi::OsStr) -> String {
    format!(".{}.vmafgpu-", name.to_string_lossy())
}

/// Follow `path` while it is a symbolic link (relative links from their own directory).
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // Linux's limit on links followed in one lookup (MAXSYMLINKS)
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p)?;
                p = if link.is_absolute() {
                    link
                } else {
                    p.parent().unwrap_or(Path::new("")).join(link)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Whether the process `pid` exists (Linux: /proc/<pid>).
fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Remove the temporaries of a report named `name` in `dir` left by processes that no longer
/// exist (killed before renaming). Returns the ones removed.
fn remove_stale(dir: &Path, name: &std::ffi::OsStr) -> Vec<PathBuf> {
    let prefix = tmp_prefix(name);
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let Some((pid, seq)) = rest.split_once('-') else {
            continue;
        };
        let Some(seq) = seq.strip_suffix(".tmp") else {
            continue;
        };
        let (Ok(pid), Ok(_)) = (pid.parse::<u32>(), seq.parse::<u64>()) else {
            continue;
        };
        if pid != std::process::id()
            && !process_alive(pid)
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    removed
}

impl ReportTarget {
    /// Check `path` and, for a file to replace, create its temporary (see the type). Returns
    /// the target and the stale temporaries removed beside it.
    pub fn prepare(path: &Path) -> std::io::Result<(Self, Vec<PathBuf>)> {
        if path.as_os_str().is_empty() {
            return Err(std::io::Error::other("empty path"));
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "it is a directory",
                ));
            }
            Ok(m) if !m.file_type().is_file() => {
                return Ok((
                    ReportTarget::Direct {
                        path: path.to_path_buf(),
                    },
                    Vec::new(),
                ));
            }
            _ => {}
        }
        let target = resolve_links(path)?;
        if target.starts_with("/proc") || target.starts_with("/dev/fd") {
            // a descriptor of this process (/dev/stdout redirected to a file): replacing the
            // file would detach it from the descriptor
            return Ok((
                ReportTarget::Direct {
                    path: path.to_path_buf(),
                },
                Vec::new(),
            ));
        }
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .ok_or_else(|| std::io::Error::other(format!("{} names no file", target.display())))?;
        let removed = remove_stale(dir, name);
        let seq = TMP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(
            "{}{}-{seq}.tmp",
            tmp_prefix(name),
            std::process::id()
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot create the temporary {}: {e}", tmp.display()),
                )
            })?;
        Ok((
            ReportTarget::Replace {
                path: target,
                tmp,
                file: Some(file),
            },
            removed,
        ))
    }

    /// The file finally written (a symbolic link's target).
    pub fn path(&self) -> &Path {
        match self {
            ReportTarget::Replace { path, .. } | ReportTarget::Direct { path } => path,
        }
    }

    /// Where the spill file of the report's rows goes ([`ReportRows::new`]): beside the
    /// temporary (on the report's file system), else the system's temporary directory.
    pub fn spill_dir(&self) -> PathBuf {
        match self {
            ReportTarget::Replace { tmp, .. } => tmp
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
            ReportTarget::Direct { .. } => std::env::temp_dir(),
        }
    }

    /// Write `contents` (once).
    pub fn write(&mut self, contents: &str) -> std::io::Result<()> {
        self.write_with(|w| w.write_all(contents.as_bytes()))
    }

    /// Write the report that `fill` writes (once), through a buffer.
    pub fn write_with(
        &mut self,
        fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match self {
            ReportTarget::Direct { path } => {
                let f = std::fs::OpenOptions::new().append(true).open(path)?;
                let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
                fill(&mut w)?;
                w.flush()
            }
            ReportTarget::Replace { path, tmp, file } => {
                let f = file
                    .take()
                    .ok_or_else(|| std::io::Error::other("report already written"))?;
                let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
                fill(&mut w)?;
                let f = w.into_inner().map_err(|e| e.into_error())?;
                // the replaced file's permissions carry over
                if let Ok(m) = std::fs::metadata(&*path) {
                    f.set_permissions(m.permissions())?;
                }
                f.sync_all()?;
                drop(f);
                std::fs::rename(&*tmp, &*path)?;
                *tmp = PathBuf::new();
                Ok(())
            }
        }
    }
}

impl Drop for ReportTarget {
    fn drop(&mut self) {
        if let ReportTarget::Replace { tmp, .. } = self
            && !tmp.as_os_str().is_empty()
        {
            let _ = std::fs::remove_file(&*tmp);
        }
    }
}

/// Write `contents` to `path` as the element does (see [`ReportTarget`]).
pub fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    ReportTarget::prepare(path)?.0.write(contents)
}

// The literals are printf("%.17g") texts: 17 digits on purpose.
#[cfg(test)]
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::model::pool::MetricPool;

    #[test]
    fn g17_matches_printf() {
        // expected strings are what glibc printf("%.17g") prints
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (100.0, "100"),
            (0.1, "0.10000000000000001"),
            (38.570172929719533, "38.570172929719533"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (-2.5, "-2.5"),
            (1e-300, "1e-300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
        ];
        for (x, want) in cases {
            assert_eq!(fmt_g17(*x), *want, "{x:e}");
        }
    }

    /// Every number in libvmaf's golden JSON (printed by libvmaf with %.17g) reprints to the same
    /// text.
    #[test]
    fn g17_reprints_the_goldens() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/goldens");
        let mut checked = 0;
        let mut bad = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for line in text.lines() {
                let Some((key, val)) = line.trim().split_once("\": ") else {
                    continue;
                };
                let val = val.trim_end_matches(',');
                if key.contains("frameNum") || key.contains("fps") || key.contains("version") {
                    continue;
                }
                let Ok(x) = val.parse::<f64>() else { continue };
                checked += 1;
                if fmt_g17(x) != val {
                    bad.push(format!("{}: {val} -> {}", p.display(), fmt_g17(x)));
                }
            }
        }
        assert!(checked > 10_000, "only {checked} numbers found");
        assert!(
            bad.is_empty(),
            "{} of {checked} differ:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }

    /// Pooling the golden per-frame values reproduces libvmaf's pooled_metrics exactly.
    #[test]
    fn pool_matches_libvmaf() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/goldens");
        let mut checked = 0;
        let mut bad = Vec::new();
        for name in [
            "carphone_v3.2.0.json",
            "carphone_v3.2.0_vmaf_b_v0.6.3.json",
            "bbb720_v3.2.0.json",
        ] {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
            let mut pool = MetricPool::new();
            for f in v["frames"].as_array().unwrap() {
                let m: Vec<(String, f64)> = f["metrics"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
                    .collect();
                pool.push(&m);
            }
            for (metric, st) in pool.stats() {
                let want = &v["pooled_metrics"][&metric];
                for (stat, got) in [
                    ("min", st.min),
                    ("max", st.max),
                    ("mean", st.mean),
                    ("harmonic_mean", st.harmonic_mean),
                ] {
                    checked += 1;
                    let w = want[stat].as_f64().unwrap();
                    if got != w {
                        bad.push(format!("{name} {metric} {stat}: got {got:e}, want {w:e}"));
                    }
                }
            }
        }
        assert!(checked > 100);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// The report writer as it was before the rows were streamed (`Report::render` of a031de7, kept
    /// verbatim): the oracle the streamed report must equal byte for byte.
    mod legacy {
        use super::super::*;
        /// The report text in `format`.
        pub fn render(r: &Report, format: Format) -> String {
            match format {
                Format::Json => json(r),
                Format::Xml => xml(r),
                Format::Csv => csv(r),
            }
        }

        // Layout: libvmaf 3.2.0 libvmaf/src/output.c: vmaf_write_output_json.
        fn json(r: &Report) -> String {
            let mut o = String::new();
            let _ = writeln!(o, "{{");
            let _ = writeln!(o, "  \"version\": \"{}\",", r.version);
            if r.fps.is_finite() {
                let _ = writeln!(o, "  \"fps\": {:.2},", r.fps);
            } else {
                let _ = writeln!(o, "  \"fps\": null,");
            }
            o.push_str("  \"frames\": [");
            for (k, f) in r.frames.iter().enumerate() {
                o.push_str(if k > 0 { ",\n" } else { "\n" });
                let _ = writeln!(o, "    {{");
                let _ = writeln!(o, "      \"frameNum\": {},", f.index);
                let _ = writeln!(o, "      \"metrics\": {{");
                for (j, (name, v)) in f.metrics.iter().enumerate() {
                    let comma = if j + 1 < f.metrics.len() { "," } else { "" };
                    let _ = writeln!(o, "        \"{name}\": {}{comma}", num_json(*v));
                }
                let _ = writeln!(o, "      }}");
                o.push_str("    }");
            }
            o.push_str("\n  ],\n");
            o.push_str("  \"pooled_metrics\": {");
            for (k, (name, st)) in r.pooled.iter().enumerate() {
                o.push_str(if k > 0 { ",\n" } else { "\n" });
                let _ = write!(o, "    \"{name}\": {{");
                let stats = [
                    ("min", st.min),
                    ("max", st.max),
                    ("mean", st.mean),
                    ("harmonic_mean", st.harmonic_mean),
                ];
                for (j, (stat, v)) in stats.iter().enumerate() {
                    o.push_str(if j > 0 { ",\n" } else { "\n" });
                    let _ = write!(o, "      \"{stat}\": {}", num_json(*v));
                }
                o.push_str("\n    }");
            }
            o.push_str("\n  },\n");
            o.push_str("  \"aggregate_metrics\": {");
            o.push_str("\n  }\n");
            o.push_str("}\n");
            o
        }

        // Layout: libvmaf 3.2.0 libvmaf/src/output.c: vmaf_write_output_xml.
        fn xml(r: &Report) -> String {
            let mut o = String::new();
            let _ = writeln!(o, "<VMAF version=\"{}\">", r.version);
            let _ = writeln!(
                o,
                "  <params qualityWidth=\"{}\" qualityHeight=\"{}\" />",
                r.width, r.height
            );
            let _ = writeln!(o, "  <fyi fps=\"{:.2}\" />", r.fps);
            let _ = writeln!(o, "  <frames>");
            for f in r.frames {
                let _ = write!(o, "    <frame frameNum=\"{}\" ", f.index);
                for (name, v) in &f.metrics {
                    let _ = write!(o, "{name}=\"{}\" ", fmt_g17(*v));
                }
                let _ = writeln!(o, "/>");
            }
            let _ = writeln!(o, "  </frames>");
            let _ = writeln!(o, "  <pooled_metrics>");
            for (name, st) in r.pooled {
                let _ = writeln!(
                    o,
                    "    <metric name=\"{name}\" min=\"{}\" max=\"{}\" mean=\"{}\" harmonic_mean=\"{}\" />",
                    fmt_g17(st.min),
                    fmt_g17(st.max),
                    fmt_g17(st.mean),
                    fmt_g17(st.harmonic_mean)
                );
            }
            let _ = writeln!(o, "  </pooled_metrics>");
            let _ = writeln!(o, "  <aggregate_metrics />");
            let _ = writeln!(o, "</VMAF>");
            o
        }

        // Layout: libvmaf 3.2.0 libvmaf/src/output.c: vmaf_write_output_csv (a header row of metric
        // names, then one row per frame; every field followed by a comma).
        fn csv(r: &Report) -> String {
            let mut o = String::from("Frame,");
            for (name, _) in r.pooled {
                let _ = write!(o, "{name},");
            }
            o.push('\n');
            for f in r.frames {
                let _ = write!(o, "{},", f.index);
                for (name, _) in r.pooled {
                    if let Some((_, v)) = f.metrics.iter().find(|(n, _)| n == name) {
                        let _ = write!(o, "{},", fmt_g17(*v));
                    }
                }
                o.push('\n');
            }
            o
        }
    }

    fn sample() -> (Vec<ReportFrame>, Vec<(String, MetricStats)>) {
        let frames = vec![
            ReportFrame {
                index: 0,
                metrics: vec![
                    ("integer_adm2".into(), 0.5),
                    ("vmaf".into(), 38.570172929719533),
                ],
            },
            ReportFrame {
                index: 1,
                metrics: vec![("integer_adm2".into(), 0.25), ("vmaf".into(), 40.0)],
            },
        ];
        let mut pool = MetricPool::new();
        for f in &frames {
            pool.push(&f.metrics);
        }
        let stats = pool.stats().into_iter();
        (frames, stats.map(|(n, s)| (n, s.into())).collect())
    }

    #[test]
    fn json_has_libvmaf_layout() {
        let (frames, pooled) = sample();
        let r = Report {
            version: "3.2.0",
            fps: 12.345,
            width: 176,
            height: 144,
            frames: &frames,
            pooled: &pooled,
        };
        let text = r.render(Format::Json);
        let want = "{\n  \"version\": \"3.2.0\",\n  \"fps\": 12.35,\n  \"frames\": [\n    {\n      \"frameNum\": 0,\n      \"metrics\": {\n        \"integer_adm2\": 0.5,\n        \"vmaf\": 38.570172929719533\n      }\n    },\n    {\n      \"frameNum\": 1,\n      \"metrics\": {\n        \"integer_adm2\": 0.25,\n        \"vmaf\": 40\n      }\n    }\n  ],\n  \"pooled_metrics\": {\n    \"integer_adm2\": {\n      \"min\": 0.25,\n      \"max\": 0.5,\n      \"mean\": 0.375,\n      \"harmonic_mean\": 0.36363636363636354\n    },\n    \"vmaf\": {\n      \"min\": 38.570172929719533,\n      \"max\": 40,\n      \"mean\": 39.285086464859766,\n      \"harmonic_mean\": 39.272399353882044\n    }\n  },\n  \"aggregate_metrics\": {\n  }\n}\n";
        assert_eq!(text, want);
        // and it is JSON
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["frames"][1]["metrics"]["vmaf"].as_f64(), Some(40.0));
    }

    #[test]
    fn xml_and_csv_have_libvmaf_layout() {
        let (frames, pooled) = sample();
        let r = Report {
            version: "3.2.0",
            fps: 1.0,
            width: 176,
            height: 144,
            frames: &frames,
            pooled: &pooled,
        };
        let xml = r.render(Format::Xml);
        assert_eq!(
            xml,
            "<VMAF version=\"3.2.0\">\n  <params qualityWidth=\"176\" qualityHeight=\"144\" />\n  <fyi fps=\"1.00\" />\n  <frames>\n    <frame frameNum=\"0\" integer_adm2=\"0.5\" vmaf=\"38.570172929719533\" />\n    <frame frameNum=\"1\" integer_adm2=\"0.25\" vmaf=\"40\" />\n  </frames>\n  <pooled_metrics>\n    <metric name=\"integer_adm2\" min=\"0.25\" max=\"0.5\" mean=\"0.375\" harmonic_mean=\"0.36363636363636354\" />\n    <metric name=\"vmaf\" min=\"38.570172929719533\" max=\"40\" mean=\"39.285086464859766\" harmonic_mean=\"39.272399353882044\" />\n  </pooled_metrics>\n  <aggregate_metrics />\n</VMAF>\n"
        );
        let csv = r.render(Format::Csv);
        assert_eq!(
            csv,
            "Frame,integer_adm2,vmaf,\n0,0.5,38.570172929719533,\n1,0.25,40,\n"
        );
    }

    /// Frames whose metric sets change: a metric that appears only later (in the middle of the
    /// order), frames that lack one, a frame in another order, and values that print
    /// specially (NaN, infinities, -0, tiny and huge).
    fn awkward_frames(n: u64) -> Vec<ReportFrame> {
        let special = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            5e-324,
            1e300,
        ];
        // a fixed linear congruential sequence: varied, repeatable values
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64 * 100.0
        };
        (0..n)
            .map(|i| {
                let mut metrics = vec![("integer_adm2".to_string(), next())];
                if i >= n / 3 {
                    metrics.push(("psnr_y".to_string(), next()));
                }
                if i % 7 != 3 {
                    metrics.push(("integer_motion".to_string(), next()));
                }
                let v = if i % 11 == 5 {
                    special[(i / 11) as usize % special.len()]
                } else {
                    next()
                };
                metrics.push(("vmaf".to_string(), v));
                if i % 13 == 6 {
                    metrics.reverse();
                }
                ReportFrame {
                    index: 3 * i + 1,
                    metrics,
                }
            })
            .collect()
    }

    fn pooled_of(frames: &[ReportFrame]) -> Vec<(String, MetricStats)> {
        let mut pool = MetricPool::new();
        for f in frames {
            pool.push(&f.metrics);
        }
        let stats = pool.stats().into_iter();
        stats.map(|(n, s)| (n, s.into())).collect()
    }

    /// `frames` through [`ReportRows`] (in `dir`), then the report written: its bytes.
    fn streamed(rows: &mut ReportRows, frames: &[ReportFrame], summary: &Summary) -> Vec<u8> {
        for f in frames {
            rows.push(f.index, &f.metrics).unwrap();
        }
        let mut out = Vec::new();
        rows.write_report(summary, &mut out).unwrap();
        out
    }

    /// The streamed report (rows spilled as frames come, head and tail at the end) and the
    /// refactored `Report::render` are byte for byte the writer of before, for every format,
    /// on empty, small and awkward runs, and again after more rows (a second EOS).
    #[test]
    fn streamed_report_equals_the_previous_writer() {
        let dir = std::env::temp_dir().join(format!("vmafgpu-rows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let all = awkward_frames(2000);
        let cases: Vec<(&str, Vec<ReportFrame>, usize)> = vec![
            ("no frames", Vec::new(), 0),
            ("sample", sample().0, 1),
            ("awkward", all.clone(), 1500),
        ];
        let mut checked = 0;
        for (name, frames, split) in &cases {
            for format in [Format::Json, Format::Xml, Format::Csv] {
                for fps in [12.345, f64::NAN] {
                    let mut rows = ReportRows::new(format, &dir).unwrap();
                    // the first EOS after `split` frames, the second after all of them
                    for upto in [*split, frames.len()] {
                        let done = rows.rows() as usize;
                        let pooled = pooled_of(&frames[..upto]);
                        let report = Report {
                            version: "3.2.0 (vmafgpu 0.1.0)",
                            fps,
                            width: 176,
                            height: 144,
                            frames: &frames[..upto],
                            pooled: &pooled,
                        };
                        let want = legacy::render(&report, format);
                        assert_eq!(report.render(format), want, "{name} {format:?} render");
                        let got = streamed(&mut rows, &frames[done..upto], &report.summary());
                        assert_eq!(rows.rows() as usize, upto);
                        assert!(
                            got == want.as_bytes(),
                            "{name} {format:?} fps {fps} after {upto} frames: streamed \
                             differs:\n{}\n---- want ----\n{want}",
                            String::from_utf8_lossy(&got)
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 36);
        // the spill files are unlinked at once: nothing in the directory
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The rows are on disk, not in memory: the spill grows with each row.
    #[test]
    fn rows_go_to_the_spill_as_they_come() {
        let dir = std::env::temp_dir().join(format!("vmafgpu-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rows = ReportRows::new(Format::Json, &dir).unwrap();
        let frames = awkward_frames(5000);
        for f in &frames {
            rows.push(f.index, &f.metrics).unwrap();
        }
        // at most one buffer (64 KiB) of the rows is not yet in the file
        let on_disk = rows.spill.get_ref().metadata().unwrap().len();
        assert!(rows.bytes > 500_000, "{} bytes of rows", rows.bytes);
        assert!(
            on_disk + (1 << 16) >= rows.bytes,
            "{on_disk} of {} bytes on disk",
            rows.bytes
        );
        // and what is in memory is one row, not the run
        assert!(rows.line.capacity() < 1024, "{}", rows.line.capacity());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A target written through `write_with`: the rows' report lands at the path.
    #[test]
    fn a_target_takes_the_streamed_report() {
        let dir = std::env::temp_dir().join(format!("vmafgpu-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.xml");
        let (mut target, _) = ReportTarget::prepare(&p).unwrap();
        let mut rows = ReportRows::new(Format::Xml, &target.spill_dir()).unwrap();
        let (frames, pooled) = sample();
        for f in &frames {
            rows.push(f.index, &f.metrics).unwrap();
        }
        let report = Report {
            version: "3.2.0",
            fps: 1.0,
            width: 176,
            height: 144,
            frames: &frames,
            pooled: &pooled,
        };
        target
            .write_with(|w| rows.write_report(&report.summary(), w))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            legacy::render(&report, Format::Xml)
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "temporaries left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = std::env::temp_dir().join(format!("vmafgpu-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        std::fs::write(&p, "old").unwrap();
        write_atomically(&p, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "temporary file left behind");
        assert!(write_atomically(&dir.join("missing/r.json"), "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two reports to one path in one process: distinct temporaries, both written.
    #[test]
    fn two_targets_on_one_path_have_their_own_temporaries() {
        let dir = std::env::temp_dir().join(format!("vmafgpu-report2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        let (mut a, _) = ReportTarget::prepare(&p).unwrap();
        let (mut b, _) = ReportTarget::prepare(&p).unwrap();
        a.write("a").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a");
        b.write("b").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
