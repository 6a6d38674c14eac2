//! `vmafgpu batch MANIFEST`: many pairs in one process (the GPU kernels compiled once), spread
//! over GPUs and CPU cores, one libvmaf JSON report each and a summary table; `--shard I/N` for
//! task runners that fan a manifest out over machines, `--resume` to skip finished pairs, and
//! `vmafgpu merge` to join the shards' summaries.

use std::collections::{HashSet, VecDeque};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::args::{self, Command, OutputFormat};
use crate::{Failure, score_pair};
use gstvmafgpu::vmafgpu::report::write_atomically;

/// One line of the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its position in the manifest (from 0): the pair's identity across shards.
    pub index: usize,
    pub id: String,
    pub reference: String,
    pub distorted: String,
    /// vmafgpu options for this pair alone (after the command line's).
    pub options: Vec<String>,
}

/// One row of the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub index: usize,
    pub id: String,
    pub reference: String,
    pub distorted: String,
    /// `ok` or `failed`.
    pub status: String,
    /// The report's file name (in the output directory).
    pub report: Option<String>,
    /// The model's label (`vmaf_v0.6.1`) and its pooled mean score.
    pub model: Option<String>,
    pub vmaf: Option<f64>,
    pub frames: Option<u64>,
    pub error: Option<String>,
    /// Taken from an existing report (`--resume`).
    pub resumed: bool,
    /// Seconds this pair took (0 when resumed), and the GPU it ran on.
    pub seconds: f64,
    pub device: Option<u32>,
}

/// The options of `batch` itself; the rest are vmafgpu's options for every pair.
#[derive(Debug)]
struct BatchArgs {
    manifest: String,
    output_dir: PathBuf,
    devices: Option<String>,
    /// `--jobs`, `None` for the default ([`default_jobs`]).
    jobs: Option<usize>,
    resume: bool,
    shard: Option<(usize, usize)>,
    common: Vec<String>,
}

fn usage(msg: impl Into<String>) -> Failure {
    Failure::Usage(msg.into())
}

fn parse_shard(v: &str) -> Result<(usize, usize), Failure> {
    let bad = || usage(format!("--shard {v}: give I/N with 0 <= I < N, e.g. 0/4"));
    let (i, n) = v.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

fn parse_batch_args(argv: &[String]) -> Result<BatchArgs, Failure> {
    let mut manifest = None;
    let mut output_dir = PathBuf::from(".");
    let mut devices = None;
    let mut jobs = None;
    let mut resume = false;
    let mut shard = None;
    let mut common = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = |n: &str| -> Result<String, Failure> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| usage(format!("Option {n} requires an argument"))),
            }
        };
        match name {
            "--output-dir" => output_dir = PathBuf::from(value(name)?),
            "--devices" => devices = Some(value(name)?),
            "--jobs" => {
                let v = value(name)?;
                jobs = Some(
                    v.parse()
                        .ok()
                        .filter(|&j| j > 0)
                        .ok_or_else(|| usage(format!("--jobs {v}: give a positive integer")))?,
                );
            }
            "--resume" => resume = true,
            "--shard" => shard = Some(parse_shard(&value(name)?)?),
            "-r" | "--reference" | "-d" | "--distorted" | "-o" | "--output" | "--xml" | "--csv" => {
                return Err(usage(format!(
                    "{a}: a batch takes its files from the manifest and writes a JSON report per \
                     pair into --output-dir"
                )));
            }
            _ if manifest.is_none() && !a.starts_with('-') => manifest = Some(a.clone()),
            _ => common.push(a.clone()),
        }
    }
    let manifest =
        manifest.ok_or_else(|| usage("vmafgpu batch needs a MANIFEST (CSV or JSON Lines)"))?;
    Ok(BatchArgs {
        manifest,
        output_dir,
        devices,
        jobs,
        resume,
        shard,
        common,
    })
}

/// Split one CSV line (RFC 4180 quoting: `"a, b"`, `""` for a quote).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.trim().is_empty() => {
                cur.clear();
                quoted = true;
            }
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    out.push(cur);
    Ok(out.into_iter().map(|f| f.trim().to_string()).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonEntry {
    reference: String,
    distorted: String,
    id: Option<String>,
    options: Option<JsonOptions>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JsonOptions {
    Line(String),
    List(Vec<String>),
}

/// Read a manifest: JSON Lines (`{"reference": ..., "distorted": ..., "id": ..., "options":
/// "..." or [...]}`) or CSV with a header row (`reference,distorted[,id][,options]`). Blank
/// lines and lines starting with `#` are skipped. Relative paths are relative to the manifest.
pub fn read_manifest(path: &Path) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read manifest {}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new(""));
    let resolve = |p: &str| {
        if Path::new(p).is_absolute() {
            p.to_string()
        } else {
            base.join(p).display().to_string()
        }
    };
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let json = lines.first().is_some_and(|(_, l)| l.starts_with('{'));
    let mut raw = Vec::new();
    if json {
        for (n, l) in &lines {
            let e: JsonEntry =
                serde_json::from_str(l).map_err(|e| format!("{}:{n}: {e}", path.display()))?;
            let options = match e.options {
                None => Vec::new(),
                Some(JsonOptions::Line(s)) => s.split_whitespace().map(String::from).collect(),
                Some(JsonOptions::List(v)) => v,
            };
            raw.push((e.reference, e.distorted, e.id, options));
        }
    } else {
        let Some(((_, header), rows)) = lines.split_first() else {
            return Ok(Vec::new());
        };
        let header = csv_fields(header).map_err(|e| format!("{}:1: {e}", path.display()))?;
        let col = |name: &str| header.iter().position(|h| h == name);
        let (Some(rc), Some(dc)) = (col("reference"), col("distorted")) else {
            return Err(format!(
                "{}: the CSV header must name the columns reference and distorted (and may \
                 name id and options)",
                path.display()
            ));
        };
        if let Some(h) = header
            .iter()
            .find(|h| !["reference", "distorted", "id", "options"].contains(&h.as_str()))
        {
            return Err(format!("{}: unknown column {h:?}", path.display()));
        }
        for (n, l) in rows {
            let f = csv_fields(l).map_err(|e| format!("{}:{n}: {e}", path.display()))?;
            if f.len() != header.len() {
                return Err(format!(
                    "{}:{n}: {} fields, the header has {}",
                    path.display(),
                    f.len(),
                    header.len()
                ));
            }
            let get = |c: Option<usize>| c.map(|c| f[c].clone()).filter(|v| !v.is_empty());
            let options = get(col("options"))
                .map(|s| s.split_whitespace().map(String::from).collect())
                .unwrap_or_default();
            raw.push((f[rc].clone(), f[dc].clone(), get(col("id")), options));
        }
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (index, (r, d, id, options)) in raw.into_iter().enumerate() {
        let id = id.unwrap_or_else(|| format!("pair-{index:05}"));
        if id.contains('/') || id.starts_with('.') {
            return Err(format!("pair {index}: id {id:?} cannot name a report file"));
        }
        if !seen.insert(id.clone()) {
            return Err(format!("pair {index}: id {id:?} appears twice"));
        }
        out.push(Entry {
            index,
            id,
            reference: resolve(&r),
            distorted: resolve(&d),
            options,
        });
    }
    Ok(out)
}

/// The GPUs of `--devices`: `all` (CUDA_VISIBLE_DEVICES, else the NVIDIA driver's list) or a
/// list like `0,2`.
/// Pairs at a time on each GPU when `--jobs` is not given. Each pair still pays its pipeline's
/// set-up (the backend and its buffers, about 0.3 s); four at a time overlap it with the others'
/// scoring (BENCHMARKS.md, fourteenth session: 6.2 times the throughput of one process per pair
/// with four at a time, 1.5 times with one).
pub const GPU_JOBS: usize = 4;

/// The NVIDIA GPUs visible: `CUDA_VISIBLE_DEVICES`, else the driver's list (0 without one).
fn visible_gpus() -> usize {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) => v.split(',').filter(|s| !s.trim().is_empty()).count(),
        Err(_) => std::fs::read_dir("/proc/driver/nvidia/gpus")
            .map(|d| d.count())
            .unwrap_or(0),
    }
}

/// The `--backend` among the options for every pair (the last one given), if any.
fn backend_option(common: &[String]) -> Option<&str> {
    let mut found = None;
    let mut it = common.iter();
    while let Some(a) = it.next() {
        if a == "--backend" {
            found = it.next().map(String::as_str);
        } else if let Some(v) = a.strip_prefix("--backend=") {
            found = Some(v);
        }
    }
    found
}

/// Pairs at a time per worker set when `--jobs` is not given: [`GPU_JOBS`] on GPUs (`--devices`,
/// `--backend cuda|hip`, or the default backend on a machine with an NVIDIA GPU), one on the
/// CPU (a pair then has every core).
fn default_jobs(devices: bool, common: &[String]) -> usize {
    let gpu = devices
        || match backend_option(common) {
            Some("cuda" | "hip") => true,
            Some("auto") | None => visible_gpus() > 0,
            Some(_) => false,
        };
    if gpu { GPU_JOBS } else { 1 }
}

fn devices(spec: &str) -> Result<Vec<u32>, Failure> {
    if spec == "all" {
        let n = visible_gpus();
        if n == 0 {
            return Err(Failure::Run(
                "--devices all: no GPU found (no /proc/driver/nvidia/gpus); give --devices 0,1,..."
                    .into(),
            ));
        }
        return Ok((0..n as u32).collect());
    }
    spec.split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|_| usage(format!("--devices {spec}: give all or a list like 0,2")))
        })
        .collect()
}

/// The summary row of a pair whose report is already there (`--resume`), if it is complete.
fn resumed_row(e: &Entry, a: &args::Args, report: &Path, file: &str) -> Option<Row> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report).ok()?).ok()?;
    let frames = v["frames"].as_array()?.len() as u64;
    v["pooled_metrics"].as_object()?;
    let (model, vmaf) = match a.scored_model() {
        Some(m) => (
            Some(m.label().to_string()),
            Some(v["pooled_metrics"][&m.name]["mean"].as_f64()?),
        ),
        None => (None, None),
    };
    Some(Row {
        index: e.index,
        id: e.id.clone(),
        reference: e.reference.clone(),
        distorted: e.distorted.clone(),
        status: "ok".into(),
        report: Some(file.to_string()),
        model,
        vmaf,
        frames: Some(frames),
        error: None,
        resumed: true,
        seconds: 0.0,
        device: None,
    })
}

/// Score one manifest entry (on `device`, if any) into its report.
fn run_entry(b: &BatchArgs, e: &Entry, device: Option<u32>) -> Row {
    let started = Instant::now();
    let file = format!("{}.json", e.id);
    let report = b.output_dir.join(&file);
    let mut row = Row {
        index: e.index,
        id: e.id.clone(),
        reference: e.reference.clone(),
        distorted: e.distorted.clone(),
        status: "failed".into(),
        report: None,
        model: None,
        vmaf: None,
        frames: None,
        error: None,
        resumed: false,
        seconds: 0.0,
        device,
    };
    let mut argv: Vec<String> = vec![
        "-r".into(),
        e.reference.clone(),
        "-d".into(),
        e.distorted.clone(),
        "-q".into(),
    ];
    argv.extend(b.common.iter().cloned());
    argv.extend(e.options.iter().cloned());
    if let Some(d) = device {
        argv.extend(["--device".into(), d.to_string()]);
    }
    let a = match args::parse(&argv) {
        Ok(Command::Run(a)) => a,
        Ok(_) => {
            row.error = Some("--help/--version in a batch's options".into());
            return row;
        }
        Err(err) => {
            row.error = Some(err.0);
            return row;
        }
    };
    if b.resume
        && let Some(r) = resumed_row(e, &a, &report, &file)
    {
        return r;
    }
    let result = score_pair(&a, false).and_then(|s| {
        write_atomically(&report, &s.render(OutputFormat::Json))
            .map_err(|err| Failure::Run(format!("could not write {}: {err}", report.display())))?;
        crate::write_plot(&a, &s)?;
        Ok(s)
    });
    row.seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(s) => {
            row.status = "ok".into();
            row.report = Some(file);
            row.frames = Some(s.collected.scored);
            if let Some(m) = a.scored_model() {
                row.model = Some(m.label().to_string());
                row.vmaf = s.collected.mean(&m.name);
            }
        }
        Err(Failure::Run(msg) | Failure::Usage(msg)) => row.error = Some(msg),
    }
    row
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The summary as CSV (one row per pair, in manifest order) and JSON (an array of rows).
fn write_summary(dir: &Path, stem: &str, rows: &[Row]) -> Result<(), Failure> {
    let mut csv = String::from(
        "index,id,reference,distorted,status,report,model,vmaf,frames,error,resumed,seconds,device\n",
    );
    let opt = |o: &Option<String>| o.as_deref().map(csv_field).unwrap_or_default();
    for r in rows {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{:.3},{}\n",
            r.index,
            csv_field(&r.id),
            csv_field(&r.reference),
            csv_field(&r.distorted),
            r.status,
            opt(&r.report),
            opt(&r.model),
            r.vmaf
                .map(gstvmafgpu::vmafgpu::report::fmt_g17)
                .unwrap_or_default(),
            r.frames.map(|f| f.to_string()).unwrap_or_default(),
            opt(&r.error),
            r.resumed,
            r.seconds,
            r.device.map(|d| d.to_string()).unwrap_or_default(),
        ));
    }
    let json = serde_json::to_string_pretty(rows).expect("rows serialise") + "\n";
    for (ext, text) in [("csv", &csv), ("json", &json)] {
        let p = dir.join(format!("{stem}.{ext}"));
        write_atomically(&p, text)
            .map_err(|e| Failure::Run(format!("could not write {}: {e}", p.display())))?;
    }
    Ok(())
}

/// The summary's file name: `summary`, or `summary.shard-I-of-N` for a shard.
fn summary_stem(shard: Option<(usize, usize)>) -> String {
    match shard {
        Some((i, n)) => format!("summary.shard-{i}-of-{n}"),
        None => "summary".into(),
    }
}

/// `vmafgpu batch MANIFEST [options]`.
pub fn batch(argv: &[String]) -> Result<(), Failure> {
    let b = parse_batch_args(argv)?;
    let entries = read_manifest(Path::new(&b.manifest)).map_err(Failure::Run)?;
    let entries: Vec<Entry> = match b.shard {
        Some((i, n)) => entries.into_iter().filter(|e| e.index % n == i).collect(),
        None => entries,
    };
    std::fs::create_dir_all(&b.output_dir)
        .map_err(|e| Failure::Run(format!("cannot create {}: {e}", b.output_dir.display())))?;
    // the options for every pair must parse before anything is scored
    let mut check: Vec<String> = ["-r", "REFERENCE", "-d", "DISTORTED"]
        .map(String::from)
        .to_vec();
    check.extend(b.common.iter().cloned());
    if let Err(e) = args::parse(&check) {
        return Err(Failure::Usage(e.0));
    }
    let jobs = b
        .jobs
        .unwrap_or_else(|| default_jobs(b.devices.is_some(), &b.common));
    let workers: Vec<Option<u32>> = match &b.devices {
        Some(spec) => devices(spec)?
            .into_iter()
            .flat_map(|d| std::iter::repeat_n(Some(d), jobs))
            .collect(),
        None => vec![None; jobs],
    };
    let queue = Mutex::new(entries.iter().collect::<VecDeque<_>>());
    let rows = Mutex::new(Vec::with_capacity(entries.len()));
    let total = entries.len();
    let show =
        std::io::stderr().is_terminal() && !b.common.iter().any(|c| c == "-q" || c == "--quiet");
    std::thread::scope(|s| {
        for device in &workers {
            s.spawn(|| {
                loop {
                    let Some(e) = queue.lock().unwrap().pop_front() else {
                        break;
                    };
                    let row = run_entry(&b, e, *device);
                    let mut rows = rows.lock().unwrap();
                    rows.push(row.clone());
                    if show || row.status != "ok" {
                        let what = match (&row.error, row.vmaf) {
                            (Some(err), _) => format!("failed: {err}"),
                            (None, Some(v)) => {
                                format!(
                                    "{}: {}",
                                    row.model.as_deref().unwrap_or(""),
                                    crate::output::c_f(v)
                                )
                            }
                            (None, None) => "ok".into(),
                        };
                        eprintln!("[{}/{total}] {}: {what}", rows.len(), row.id);
                    }
                }
            });
        }
    });
    let mut rows = rows.into_inner().unwrap();
    rows.sort_by_key(|r| r.index);
    write_summary(&b.output_dir, &summary_stem(b.shard), &rows)?;
    let failed = rows.iter().filter(|r| r.status != "ok").count();
    if failed > 0 {
        return Err(Failure::Run(format!(
            "{failed} of {} pairs failed (see {})",
            rows.len(),
            b.output_dir.join(summary_stem(b.shard) + ".csv").display()
        )));
    }
    Ok(())
}

/// `vmafgpu merge --output-dir DIR SUMMARY.json...`: the shards' summaries as one, in manifest
/// order; a pair in two shards is an error.
pub fn merge(argv: &[String]) -> Result<(), Failure> {
    let mut output_dir = None;
    let mut files = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--output-dir" => {
                output_dir =
                    Some(PathBuf::from(it.next().ok_or_else(|| {
                        usage("Option --output-dir requires an argument")
                    })?))
            }
            s if s.starts_with("--output-dir=") => {
                output_dir = Some(PathBuf::from(&s["--output-dir=".len()..]))
            }
            s if s.starts_with('-') => return Err(usage(format!("Unrecognized option \"{s}\""))),
            _ => files.push(a.clone()),
        }
    }
    let output_dir = output_dir.ok_or_else(|| usage("vmafgpu merge needs --output-dir DIR"))?;
    if files.is_empty() {
        return Err(usage("vmafgpu merge needs the shards' summary .json files"));
    }
    let mut rows: Vec<Row> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Failure::Run(format!("cannot read {f}: {e}")))?;
        let part: Vec<Row> = serde_json::from_str(&text)
            .map_err(|e| Failure::Run(format!("{f}: not a vmafgpu batch summary: {e}")))?;
        rows.extend(part);
    }
    rows.sort_by_key(|r| r.index);
    if let Some(w) = rows.windows(2).find(|w| w[0].index == w[1].index) {
        return Err(Failure::Run(format!(
            "pair {} ({}) is in two summaries",
            w[0].index, w[0].id
        )));
    }
    std::fs::create_dir_all(&output_dir)
        .map_err(|e| Failure::Run(format!("cannot create {}: {e}", output_dir.display())))?;
    write_summary(&output_dir, "summary", &rows)?;
    let failed = rows.iter().filter(|r| r.status != "ok").count();
    if failed > 0 {
        return Err(Failure::Run(format!(
            "{failed} of {} pairs failed",
            rows.len()
        )));
    }
    Ok(())
}

pub const USAGE: &str = "\
Usage: vmafgpu batch MANIFEST [--output-dir DIR] [--devices all|0,2] [--jobs N] [--resume]
                     [--shard I/N] [vmafgpu options for every pair]
       vmafgpu merge --output-dir DIR SUMMARY.json...

MANIFEST: JSON Lines ({\"reference\": ..., \"distorted\": ..., \"id\": ..., \"options\": \"...\"})
or CSV with a header row (reference,distorted[,id][,options]); relative paths are relative to
the manifest. Each pair's report is DIR/ID.json (libvmaf's JSON); DIR/summary.csv and
DIR/summary.json list every pair (status, pooled VMAF, frames, error). --devices runs --jobs
pairs at a time on each GPU (else --jobs on the backend chosen; default 4 on a GPU, 1 on the
CPU); --resume keeps the reports already there;
--shard I/N takes the pairs whose manifest index is I modulo N (summary.shard-I-of-N.*).
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_lines() {
        assert_eq!(
            csv_fields("a, \"b,c\" ,\"d\"\"e\"").unwrap(),
            ["a", "b,c", "d\"e"]
        );
        assert!(csv_fields("\"a").is_err());
        assert_eq!(parse_shard("1/4").ok(), Some((1, 4)));
        assert!(parse_shard("4/4").is_err() && parse_shard("1").is_err());
    }

    #[test]
    fn default_jobs_follow_the_backend() {
        let opts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(default_jobs(true, &[]), GPU_JOBS);
        assert_eq!(default_jobs(false, &opts(&["--backend", "cuda"])), GPU_JOBS);
        assert_eq!(
            default_jobs(false, &opts(&["--backend=hip", "-q"])),
            GPU_JOBS
        );
        assert_eq!(default_jobs(false, &opts(&["--backend", "cpu"])), 1);
        // The last --backend counts.
        assert_eq!(
            default_jobs(false, &opts(&["--backend", "cuda", "--backend", "cpu"])),
            1
        );
        let auto = if visible_gpus() > 0 { GPU_JOBS } else { 1 };
        assert_eq!(default_jobs(false, &opts(&["--backend", "auto"])), auto);
        assert_eq!(default_jobs(false, &[]), auto);
    }

    #[test]
    fn manifests() {
        let dir = std::env::temp_dir().join(format!("vmafgpu-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("m.csv");
        std::fs::write(
            &csv,
            "# pairs\nreference,distorted,id,options\nr.yuv,/abs/d.yuv,one,-w 8 -h 8\nr2.y4m,d2.y4m,,\n",
        )
        .unwrap();
        let e = read_manifest(&csv).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].id, "one");
        assert_eq!(e[0].reference, dir.join("r.yuv").display().to_string());
        assert_eq!(e[0].distorted, "/abs/d.yuv");
        assert_eq!(e[0].options, ["-w", "8", "-h", "8"]);
        assert_eq!((e[1].id.as_str(), e[1].index), ("pair-00001", 1));
        let jsonl = dir.join("m.jsonl");
        std::fs::write(
            &jsonl,
            "{\"reference\": \"a\", \"distorted\": \"b\", \"options\": [\"--feature\", \"psnr\"]}\n\n{\"reference\": \"c\", \"distorted\": \"d\", \"id\": \"x\"}\n",
        )
        .unwrap();
        let e = read_manifest(&jsonl).unwrap();
        assert_eq!(e[0].options, ["--feature", "psnr"]);
        assert_eq!(e[1].id, "x");
        std::fs::write(&csv, "reference,distorted,id\na,b,x\nc,d,x\n").unwrap();
        assert!(read_manifest(&csv).unwrap_err().contains("twice"));
        std::fs::write(&csv, "ref,dist\na,b\n").unwrap();
        assert!(read_manifest(&csv).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
