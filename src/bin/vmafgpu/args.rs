//! The command line: libvmaf 3.2.0's `vmaf` options (same names, same meanings, same getopt_long
//! spelling: `-w 176`, `-w176`, `--width 176`, `--width=176`, unambiguous prefixes of long names,
//! clustered flags `-nq`) and vmafgpu's additions. libvmaf's `-h` is the height, so there is no
//! short help option; `--help` is long only.

use std::fmt;

/// A usage error: libvmaf prints the reason and its usage, and exits with status 1.
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// `-p/--pixel_format`: libvmaf's chroma subsampling names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixFmt {
    P420,
    P422,
    P444,
}

/// `--xml` (libvmaf's default), `--json`, `--csv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Xml,
    Json,
    Csv,
}

/// One `-m/--model`: `version=NAME` or `path=FILE`, `name=`, `disable_clip`,
/// `enable_transform`, and feature overloads `feature.option=value`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelArg {
    pub version: Option<String>,
    pub path: Option<String>,
    /// The name of the model's score in the report (libvmaf's default `vmaf`).
    pub name: String,
    pub disable_clip: bool,
    pub enable_transform: bool,
    /// `feature.option=value` parts, in order (the element's `model-params`).
    pub overloads: Vec<String>,
}

impl ModelArg {
    /// What libvmaf prints before the pooled score: the version, else the path.
    pub fn label(&self) -> &str {
        self.version
            .as_deref()
            .or(self.path.as_deref())
            .unwrap_or("")
    }
}

/// A `--feature` libvmaf computes that vmafgpu computes too: libvmaf's name, the element's
/// property that turns it on, and the metrics it reports.
pub struct Feature {
    pub name: &'static str,
    pub property: &'static str,
    pub metrics: &'static [&'static str],
    /// libvmaf's collector names of the metrics, for the names with option suffixes (the
    /// features that take options: cambi, speed_chroma, speed_temporal).
    pub provided: &'static [&'static str],
}

/// One `--feature NAME[=option=value:...]`: an index into [`FEATURES`] and its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureArg {
    pub index: usize,
    pub options: Vec<(String, String)>,
}

impl FeatureArg {
    pub fn feature(&self) -> &'static Feature {
        &FEATURES[self.index]
    }

    /// The options as the element's `feature-params` parts (`cambi.enc_bitdepth=8`).
    pub fn params(&self) -> Vec<String> {
        let name = self.feature().name;
        (self.options.iter())
            .map(|(k, v)| format!("{name}.{k}={v}"))
            .collect()
    }

    /// The metrics' names in the report: libvmaf's, with the options' suffix (`cambi_encbd_8`).
    pub fn metrics(&self) -> Result<Vec<String>, String> {
        let f = self.feature();
        if self.options.is_empty() {
            return Ok(f.metrics.iter().map(|m| m.to_string()).collect());
        }
        let e = gstvmafgpu::model::Extractor::from_name(f.name)
            .ok_or_else(|| format!("{} takes no options", f.name))?;
        let o = gstvmafgpu::model::ExtractorOptions::from_dict(e, &self.options)?;
        Ok(f.provided.iter().map(|p| o.feature_name(p)).collect())
    }
}

pub const FEATURES: [Feature; 8] = [
    Feature {
        name: "psnr",
        property: "psnr",
        metrics: &["psnr_y", "psnr_cb", "psnr_cr"],
        provided: &[],
    },
    Feature {
        name: "float_ssim",
        property: "ssim",
        metrics: &["float_ssim"],
        provided: &[],
    },
    Feature {
        name: "float_ms_ssim",
        property: "ms-ssim",
        metrics: &["float_ms_ssim"],
        provided: &[],
    },
    Feature {
        name: "ciede",
        property: "ciede",
        metrics: &["ciede2000"],
        provided: &[],
    },
    Feature {
        name: "psnr_hvs",
        property: "psnr-hvs",
        metrics: &["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"],
        provided: &[],
    },
    Feature {
        name: "cambi",
        property: "cambi",
        metrics: &["cambi"],
        provided: &["Cambi_feature_cambi_score"],
    },
    Feature {
        name: "speed_chroma",
        property: "speed-chroma",
        metrics: &["speed_chroma_u", "speed_chroma_v", "speed_chroma_uv"],
        provided: &[
            "Speed_chroma_feature_speed_chroma_u_score",
            "Speed_chroma_feature_speed_chroma_v_score",
            "Speed_chroma_feature_speed_chroma_uv_score",
        ],
    },
    Feature {
        name: "speed_temporal",
        property: "speed-temporal",
        metrics: &["speed_temporal"],
        provided: &["Speed_temporal_feature_speed_temporal_score"],
    },
];

fn feature_names() -> String {
    FEATURES
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Everything the command line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub reference: String,
    pub distorted: String,
    pub width: u32,
    pub height: u32,
    pub pix_fmt: Option<PixFmt>,
    pub bitdepth: u32,
    /// Any of `-w -h -p -b` given: the inputs are raw (as in libvmaf; `.y4m` files keep their
    /// header).
    pub use_yuv: bool,
    /// The models, in `-m` order (libvmaf's default vmaf_v0.6.1 without `-m`); none with
    /// `--no_prediction` and no `-m`.
    pub models: Vec<ModelArg>,
    /// `--feature`s, in order, without repeats.
    pub features: Vec<FeatureArg>,
    pub output: Option<String>,
    pub output_format: OutputFormat,
    pub threads: Option<u32>,
    pub subsample: Option<u32>,
    /// 0: every frame.
    pub frame_cnt: u64,
    pub frame_skip_ref: u64,
    pub frame_skip_dist: u64,
    pub quiet: bool,
    pub no_prediction: bool,
    pub backend: Option<String>,
    pub device: Option<u32>,
    /// The element's `sync` (default `index`: libvmaf pairs frames in file order).
    pub sync: String,
    /// `--plot FILE.svg|FILE.png`: per-frame chart.
    pub plot: Option<String>,
    /// `--verbose`: the decoders chosen and the timing of the run's phases, on stderr.
    pub verbose: bool,
}

impl Args {
    /// The first model (the batch summary's), unless `--no_prediction`.
    pub fn scored_model(&self) -> Option<&ModelArg> {
        self.models.first().filter(|_| !self.no_prediction)
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Run(Box<Args>),
    Help,
    Version,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opt {
    Reference,
    Distorted,
    Width,
    Height,
    PixelFormat,
    Bitdepth,
    Model,
    Output,
    Xml,
    Json,
    Csv,
    Sub,
    Threads,
    Feature,
    Subsample,
    Cpumask,
    Gpumask,
    AomCtc,
    NflxCtc,
    FrameCnt,
    FrameSkipRef,
    FrameSkipDist,
    NoPrediction,
    Version,
    Quiet,
    Backend,
    Device,
    Sync,
    Plot,
    Verbose,
    Help,
}

/// (short, long, takes a value, option): libvmaf's table, then vmafgpu's own options.
const OPTIONS: &[(Option<char>, &str, bool, Opt)] = &[
    (Some('r'), "reference", true, Opt::Reference),
    (Some('d'), "distorted", true, Opt::Distorted),
    (Some('w'), "width", true, Opt::Width),
    (Some('h'), "height", true, Opt::Height),
    (Some('p'), "pixel_format", true, Opt::PixelFormat),
    (Some('b'), "bitdepth", true, Opt::Bitdepth),
    (Some('m'), "model", true, Opt::Model),
    (Some('o'), "output", true, Opt::Output),
    (None, "xml", false, Opt::Xml),
    (None, "json", false, Opt::Json),
    (None, "csv", false, Opt::Csv),
    (None, "sub", false, Opt::Sub),
    (None, "threads", true, Opt::Threads),
    (None, "feature", true, Opt::Feature),
    (None, "subsample", true, Opt::Subsample),
    (Some('c'), "cpumask", true, Opt::Cpumask),
    (None, "gpumask", true, Opt::Gpumask),
    (None, "aom_ctc", true, Opt::AomCtc),
    (None, "nflx_ctc", true, Opt::NflxCtc),
    (None, "frame_cnt", true, Opt::FrameCnt),
    (None, "frame_skip_ref", true, Opt::FrameSkipRef),
    (None, "frame_skip_dist", true, Opt::FrameSkipDist),
    (Some('n'), "no_prediction", false, Opt::NoPrediction),
    (Some('v'), "version", false, Opt::Version),
    (Some('q'), "quiet", false, Opt::Quiet),
    (None, "backend", true, Opt::Backend),
    (None, "device", true, Opt::Device),
    (None, "sync", true, Opt::Sync),
    (None, "plot", true, Opt::Plot),
    (None, "verbose", false, Opt::Verbose),
    (None, "help", false, Opt::Help),
];

fn spelling(opt: Opt) -> String {
    let (short, long, _, _) = OPTIONS.iter().find(|o| o.3 == opt).expect("listed");
    match short {
        Some(c) => format!("-{c}/--{long}"),
        None => format!("--{long}"),
    }
}

/// libvmaf's `Invalid argument "X" for option -w/--width; should be an integer`.
fn invalid(opt: Opt, value: &str, should_be: &str) -> UsageError {
    usage(format!(
        "Invalid argument \"{value}\" for option {}; should be {should_be}",
        spelling(opt)
    ))
}

/// C's `strtoul(s, &end, 0)` with the whole string consumed: decimal, `0x` hex, `0` octal.
fn parse_unsigned(opt: Opt, value: &str) -> Result<u64, UsageError> {
    let s = value.trim_start();
    let s = s.strip_prefix('+').unwrap_or(s);
    let parsed = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8)
    } else {
        s.parse()
    };
    match parsed {
        Ok(v) if v <= u64::from(u32::MAX) => Ok(v),
        _ => Err(invalid(opt, value, "an integer")),
    }
}

fn parse_u32(opt: Opt, value: &str) -> Result<u32, UsageError> {
    parse_unsigned(opt, value).map(|v| v as u32)
}

/// libvmaf's `parse_model_config`: `key=value` pairs separated by `:`.
fn parse_model(value: &str) -> Result<ModelArg, UsageError> {
    let mut m = ModelArg {
        name: "vmaf".into(),
        ..Default::default()
    };
    for part in value.split(':') {
        let mut kv = part.splitn(3, '=');
        let key = kv.next().unwrap_or("");
        let val = kv.next();
        let val = match (key, val) {
            (_, Some(v)) => v,
            ("disable_clip" | "enable_transform", None) => "true",
            (_, None) => {
                return Err(usage(format!(
                    "Problem parsing model, bad option string \"{key}\"."
                )));
            }
        };
        match key {
            "path" => m.path = Some(val.to_string()),
            "name" => m.name = val.to_string(),
            "version" => m.version = Some(val.to_string()),
            "disable_clip" => m.disable_clip |= val == "true",
            "enable_transform" => m.enable_transform |= val == "true",
            _ => {
                // a feature overload: feature.option=value
                match key.split_once('.') {
                    Some((feature, option)) if !feature.is_empty() && !option.is_empty() => {
                        m.overloads.push(format!("{key}={val}"))
                    }
                    _ => {
                        return Err(usage(format!(
                            "Problem parsing model: \"{key}\" (a model option is path=, version=, \
                             name=, disable_clip, enable_transform or feature.option=value)"
                        )));
                    }
                }
            }
        }
    }
    if m.version.is_none() && m.path.is_none() {
        return Err(usage(format!(
            "Problem parsing model \"{value}\": give version=NAME or path=FILE"
        )));
    }
    Ok(m)
}

/// `--feature NAME[=option=value:option=value]` (libvmaf's `parse_feature_config`). Options are
/// taken for cambi, speed_chroma and speed_temporal (checked against libvmaf's option tables
/// when the run starts); the other features are computed with libvmaf's default options only.
fn parse_feature(value: &str) -> Result<FeatureArg, UsageError> {
    let (name, opts) = match value.split_once('=') {
        Some((n, o)) => (n, Some(o)),
        None => (value, None),
    };
    let Some(index) = FEATURES.iter().position(|f| f.name == name) else {
        return Err(usage(format!(
            "Unknown feature \"{name}\" (--feature {value}): vmafgpu computes {} (the model's \
             own features come with -m)",
            feature_names()
        )));
    };
    let mut options = Vec::new();
    for kv in opts.into_iter().flat_map(|o| o.split(':')) {
        let mut parts = kv.splitn(3, '=');
        let (key, val) = (parts.next().unwrap_or(""), parts.next());
        let Some(val) = val else {
            return Err(usage(format!(
                "Problem parsing feature \"{name}\", bad option string \"{key}\"."
            )));
        };
        options.push((key.to_string(), val.to_string()));
    }
    if !options.is_empty() && FEATURES[index].provided.is_empty() {
        return Err(usage(format!(
            "Feature options are not supported for {name} (--feature {value}): vmafgpu computes \
             {name} with libvmaf's default options only (options are taken for cambi, \
             speed_chroma and speed_temporal); give --feature {name}"
        )));
    }
    Ok(FeatureArg { index, options })
}

/// Split `args` (without the program name) into options and their values, getopt_long style.
fn tokens(args: &[String]) -> Result<Vec<(Opt, Option<String>)>, UsageError> {
    let mut out = Vec::new();
    let mut i = 0;
    let takes = |o: Opt| OPTIONS.iter().any(|x| x.3 == o && x.2);
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            if let Some(rest) = args.get(i) {
                return Err(usage(format!("Unexpected argument \"{rest}\"")));
            }
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let exact = OPTIONS.iter().find(|o| o.1 == name);
            let opt = match exact {
                Some(o) => o.3,
                None => {
                    let matches: Vec<_> =
                        OPTIONS.iter().filter(|o| o.1.starts_with(name)).collect();
                    match matches.as_slice() {
                        [one] => one.3,
                        [] => return Err(usage(format!("Unrecognized option \"--{name}\""))),
                        many => {
                            let names: Vec<_> = many.iter().map(|o| format!("--{}", o.1)).collect();
                            return Err(usage(format!(
                                "Option \"--{name}\" is ambiguous: {}",
                                names.join(", ")
                            )));
                        }
                    }
                }
            };
            if takes(opt) {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            usage(format!("Option {} requires an argument", spelling(opt)))
                        })?;
                        i += 1;
                        v
                    }
                };
                out.push((opt, Some(value)));
            } else if inline.is_some() {
                return Err(usage(format!("Option {} takes no argument", spelling(opt))));
            } else {
                out.push((opt, None));
            }
        } else if let Some(shorts) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            for (k, c) in shorts.char_indices() {
                let Some(o) = OPTIONS.iter().find(|o| o.0 == Some(c)) else {
                    return Err(usage(format!("Unrecognized option \"-{c}\"")));
                };
                if o.2 {
                    let rest = &shorts[k + c.len_utf8()..];
                    let value = if !rest.is_empty() {
                        rest.to_string()
                    } else {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            usage(format!("Option {} requires an argument", spelling(o.3)))
                        })?;
                        i += 1;
                        v
                    };
                    out.push((o.3, Some(value)));
                    break;
                }
                out.push((o.3, None));
            }
        } else {
            return Err(usage(format!(
                "Unexpected argument \"{a}\" (give the files with -r/--reference and -d/--distorted)"
            )));
        }
    }
    Ok(out)
}

/// Parse the command line (without the program name).
pub fn parse(args: &[String]) -> Result<Command, UsageError> {
    let mut reference = None;
    let mut distorted = None;
    let (mut width, mut height, mut bitdepth) = (0, 0, 0);
    let mut pix_fmt = None;
    let mut use_yuv = false;
    let mut models = Vec::new();
    let mut features: Vec<FeatureArg> = Vec::new();
    let mut output = None;
    let mut output_format = None;
    let mut threads = None;
    let mut subsample = None;
    let (mut frame_cnt, mut frame_skip_ref, mut frame_skip_dist) = (0, 0, 0);
    let mut quiet = false;
    let mut no_prediction = false;
    let mut backend = None;
    let mut device = None;
    let mut sync = "index".to_string();
    let mut plot = None;
    let mut verbose = false;
    for (opt, value) in tokens(args)? {
        let v = value.unwrap_or_default();
        match opt {
            Opt::Reference => reference = Some(v),
            Opt::Distorted => distorted = Some(v),
            Opt::Width => {
                width = parse_u32(opt, &v)?;
                use_yuv = true;
            }
            Opt::Height => {
                height = parse_u32(opt, &v)?;
                use_yuv = true;
            }
            Opt::PixelFormat => {
                pix_fmt = Some(match v.as_str() {
                    "420" => PixFmt::P420,
                    "422" => PixFmt::P422,
                    "444" => PixFmt::P444,
                    _ => return Err(invalid(opt, &v, "a valid pixel format (420/422/444)")),
                });
                use_yuv = true;
            }
            Opt::Bitdepth => {
                bitdepth = parse_u32(opt, &v)?;
                if ![8, 10, 12, 16].contains(&bitdepth) {
                    return Err(invalid(opt, &v, "a valid bitdepth (8/10/12/16)"));
                }
                use_yuv = true;
            }
            Opt::Model => models.push(parse_model(&v)?),
            Opt::Output => output = Some(v),
            Opt::Xml => output_format = Some(OutputFormat::Xml),
            Opt::Json => output_format = Some(OutputFormat::Json),
            Opt::Csv => output_format = Some(OutputFormat::Csv),
            Opt::Sub => {
                return Err(usage(
                    "--sub (subtitle output) is not supported: use --xml, --json or --csv",
                ));
            }
            Opt::Threads => threads = Some(parse_u32(opt, &v)?),
            Opt::Feature => {
                let f = parse_feature(&v)?;
                match features.iter().find(|g: &&FeatureArg| g.index == f.index) {
                    None => features.push(f),
                    Some(g) if *g == f => {}
                    Some(_) => {
                        return Err(usage(format!(
                            "--feature {v}: {} is asked for twice with different options; \
                             vmafgpu computes one set of options per feature",
                            FEATURES[f.index].name
                        )));
                    }
                }
            }
            Opt::Subsample => {
                let n = parse_u32(opt, &v)?;
                // libvmaf treats 0 as 1; the element's maximum is 128
                if n > 128 {
                    return Err(invalid(opt, &v, "at most 128"));
                }
                subsample = Some(n.max(1));
            }
            // libvmaf's SIMD restriction: vmafgpu's numbers are libvmaf's C path whatever it is
            Opt::Cpumask => {
                parse_u32(opt, &v)?;
            }
            Opt::Gpumask => {
                return Err(usage(
                    "--gpumask is not supported: choose the device with --backend and --device",
                ));
            }
            Opt::AomCtc | Opt::NflxCtc => {
                return Err(usage(format!(
                    "{} is not supported: its presets set psnr and float_ssim options, which \
                     vmafgpu does not compute (give the models with -m and the features with \
                     --feature)",
                    spelling(opt)
                )));
            }
            Opt::FrameCnt => frame_cnt = parse_unsigned(opt, &v)?,
            Opt::FrameSkipRef => frame_skip_ref = parse_unsigned(opt, &v)?,
            Opt::FrameSkipDist => frame_skip_dist = parse_unsigned(opt, &v)?,
            Opt::NoPrediction => no_prediction = true,
            Opt::Version => return Ok(Command::Version),
            Opt::Quiet => quiet = true,
            Opt::Backend => backend = Some(v),
            Opt::Device => device = Some(parse_u32(opt, &v)?),
            Opt::Sync => {
                if v != "index" && v != "timestamp" {
                    return Err(invalid(opt, &v, "index or timestamp"));
                }
                sync = v;
            }
            Opt::Plot => {
                let lower = v.to_ascii_lowercase();
                if !(lower.ends_with(".svg") || lower.ends_with(".png")) {
                    return Err(invalid(opt, &v, "a file name ending in .svg or .png"));
                }
                plot = Some(v);
            }
            Opt::Verbose => verbose = true,
            Opt::Help => return Ok(Command::Help),
        }
    }
    let reference =
        reference.ok_or_else(|| usage("Reference .y4m or .yuv (-r/--reference) is required"))?;
    let distorted =
        distorted.ok_or_else(|| usage("Distorted .y4m or .yuv (-d/--distorted) is required"))?;
    if use_yuv && !(width > 0 && height > 0 && pix_fmt.is_some() && bitdepth > 0) {
        return Err(usage(
            "The following options are required for .yuv input:\n  --width/-w\n  --height/-h\n  \
             --pixel_format/-p\n  --bitdepth/-b",
        ));
    }
    if models.is_empty() && !no_prediction {
        models.push(ModelArg {
            version: Some("vmaf_v0.6.1".into()),
            name: "vmaf".into(),
            ..Default::default()
        });
    }
    for (i, m) in models.iter().enumerate() {
        if models[..i].iter().any(|o| o.name == m.name) {
            return Err(usage(
                "Each model should be uniquely named. Set using `--model` via the `name=...` param.",
            ));
        }
    }
    Ok(Command::Run(Box::new(Args {
        reference,
        distorted,
        width,
        height,
        pix_fmt,
        bitdepth,
        use_yuv,
        models,
        features,
        output,
        output_format: output_format.unwrap_or(OutputFormat::Xml),
        threads,
        subsample,
        frame_cnt,
        frame_skip_ref,
        frame_skip_dist,
        quiet,
        no_prediction,
        backend,
        device,
        sync,
        plot,
        verbose,
    })))
}

pub const USAGE: &str = "\
Usage: vmafgpu [options]

VMAF and its companion metrics, computed by the vmafgpu GStreamer element (bit-exact with
libvmaf 3.2.0), with libvmaf's vmaf options.

libvmaf's options:
 --reference/-r $path:        reference: .y4m, raw .yuv (needs -w -h -p -b) or any file
                              GStreamer decodes (mp4, mkv, webm, ...)
 --distorted/-d $path:        distorted video, the same kinds
 --width/-w $unsigned:        width of raw input
 --height/-h $unsigned:       height of raw input
 --pixel_format/-p $string:   pixel format of raw input (420/422/444)
 --bitdepth/-b $unsigned:     bit depth of raw input (8/10/12/16)
 --model/-m $params:          model parameters, colon \":\" delimited
                              `path=` path to model file
                              `version=` built-in model version (default vmaf_v0.6.1)
                              `name=` name used in the report (optional)
                              `disable_clip`, `enable_transform`
                              `feature.option=value`: overloads, e.g. cambi.enc_bitdepth=8
                              (several -m: each model scored, each with its own name=)
 --output/-o $path:           output file
 --xml:                       write output file as XML (default)
 --json:                      write output file as JSON
 --csv:                       write output file as CSV
 --threads $unsigned:         number of CPU threads (default: one per core)
 --feature $string:           additional feature: psnr, float_ssim, float_ms_ssim, ciede,
                              psnr_hvs, cambi, speed_chroma, speed_temporal; options as
                              NAME=option=value:option=value for cambi, speed_chroma and
                              speed_temporal (e.g. cambi=enc_bitdepth=8)
 --cpumask $bitmask:          accepted and ignored (the numbers are libvmaf's C path)
 --frame_cnt $unsigned:       maximum number of frames to process
 --frame_skip_ref $unsigned:  skip the first N frames in reference
 --frame_skip_dist $unsigned: skip the first N frames in distorted
 --subsample $unsigned:       compute scores only every N frames
 --quiet/-q:                  no progress meter on a terminal
 --no_prediction/-n:          no prediction, extract features only
 --version/-v:                print version and exit

vmafgpu's own options:
 --backend $string:           auto (default: a GPU if one works, else the CPU), cpu, cuda, hip
 --device $unsigned:          GPU index (default 0)
 --sync $string:              pair frames by order (index, default, as libvmaf) or by
                              timestamp
 --plot $path:                chart of the per-frame scores (.svg or .png): VMAF and each
                              --feature metric against time, pooled value, worst frames
 --verbose:                   the decoders chosen and the timing of the run's phases
 --help:                      this text

Many pairs: vmafgpu batch MANIFEST [...], vmafgpu merge [...] (vmafgpu batch --help).

The pooled VMAF goes to stdout as `vmaf_v0.6.1: 85.415076` (libvmaf's line); with -o it goes,
as in libvmaf, to a terminal's stderr only. Exit status: 0, 1 for a usage error, 255 when
scoring fails.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Command, UsageError> {
        let v: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse(&v)
    }

    fn run(s: &str) -> Args {
        match parse_str(s).unwrap() {
            Command::Run(a) => *a,
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn getopt_spellings() {
        let a = run("-r a.yuv -db.yuv --width=176 --hei 144 -p420 -b 8 --json -o x -nq");
        assert_eq!(
            (a.reference.as_str(), a.distorted.as_str()),
            ("a.yuv", "b.yuv")
        );
        assert_eq!((a.width, a.height, a.bitdepth), (176, 144, 8));
        assert_eq!(a.pix_fmt, Some(PixFmt::P420));
        assert!(a.use_yuv && a.no_prediction && a.quiet);
        assert_eq!(a.output_format, OutputFormat::Json);
        assert!(a.models.is_empty());
        assert!(!a.verbose && run("-r a -d b --verbose").verbose);
        assert_eq!(run("-r a -d b --threads 0x10").threads, Some(16));
        assert_eq!(run("-r a -d b --frame_cnt 010").frame_cnt, 8);
        assert_eq!(run("-r a -d b").output_format, OutputFormat::Xml);
        assert_eq!(run("-r a -d b --plot x.SVG").plot.as_deref(), Some("x.SVG"));
        assert_eq!(run("-r a -d b").plot, None);
    }

    #[test]
    fn models() {
        let m =
            run("-r a -d b -m version=vmaf_v1.0.16_3d0h:name=v1:cambi.enc_bitdepth=8:disable_clip")
                .models
                .remove(0);
        assert_eq!(m.version.as_deref(), Some("vmaf_v1.0.16_3d0h"));
        assert_eq!(m.name, "v1");
        assert!(m.disable_clip && !m.enable_transform);
        assert_eq!(m.overloads, ["cambi.enc_bitdepth=8"]);
        let d = run("-r a -d b").models.remove(0);
        assert_eq!((d.label(), d.name.as_str()), ("vmaf_v0.6.1", "vmaf"));
        // several models, each named; libvmaf refuses two of one name
        let two = run("-r a -d b -m version=vmaf_v0.6.1 -m version=vmaf_v0.6.1neg:name=neg -n");
        let names: Vec<_> = two.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["vmaf", "neg"]);
        assert!(two.no_prediction && two.scored_model().is_none());
        for bad in [
            "-m vmaf_v0.6.1",
            "-m name=x",
            "-m version=a:bogus=1",
            "-m version=a -m version=b",
            "-m version=a:name=x -m path=b:name=x",
        ] {
            let e = parse_str(&format!("-r a -d b {bad}")).unwrap_err();
            assert!(e.0.contains("model"), "{bad}: {e}");
        }
        let e = parse_str("-r a -d b -m version=a -m version=b").unwrap_err();
        assert!(e.0.contains("uniquely named"), "{e}");
    }

    #[test]
    fn features() {
        let a = run("-r a -d b --feature psnr --feature=cambi --feature psnr");
        let names: Vec<_> = a.features.iter().map(|f| f.feature().name).collect();
        assert_eq!(names, ["psnr", "cambi"]);
        assert_eq!(a.features[1].metrics().unwrap(), ["cambi"]);
        let e = parse_str("-r a -d b --feature vif").unwrap_err();
        assert!(e.0.contains("Unknown feature \"vif\""), "{e}");
        let e = parse_str("-r a -d b --feature psnr=enable_chroma=false").unwrap_err();
        assert!(e.0.contains("not supported for psnr"), "{e}");
        // libvmaf's NAME=key=value:key=value
        let a = run("-r a -d b --feature cambi=enc_bitdepth=8:enc_width=1280");
        let f = &a.features[0];
        assert_eq!(f.params(), ["cambi.enc_bitdepth=8", "cambi.enc_width=1280"]);
        assert_eq!(f.metrics().unwrap(), ["cambi_encbd_8_encw_1280"]);
        let a = run("-r a -d b --feature speed_temporal=speed_kernelscale=2");
        assert_eq!(a.features[0].metrics().unwrap().len(), 1);
        let e = parse_str("-r a -d b --feature cambi=enc_bitdepth").unwrap_err();
        assert!(e.0.contains("bad option string \"enc_bitdepth\""), "{e}");
        let e = parse_str("-r a -d b --feature cambi --feature cambi=enc_bitdepth=8").unwrap_err();
        assert!(e.0.contains("different options"), "{e}");
    }

    #[test]
    fn errors() {
        for (args, want) in [
            ("-d b", "-r/--reference"),
            ("-r a", "-d/--distorted"),
            ("-r a -d b -w 176 -h 144", "required for .yuv"),
            ("-r a -d b -w x", "should be an integer"),
            ("-r a -d b -b 9", "valid bitdepth"),
            ("-r a -d b -p 411", "valid pixel format"),
            ("-r a -d b --bogus", "Unrecognized option"),
            ("-r a -d b --frame", "ambiguous"),
            ("-r a -d b --json=1", "takes no argument"),
            ("-r a -d b -o", "requires an argument"),
            ("-r a -d b c", "Unexpected argument"),
            ("-r a -d b --plot x.pdf", "ending in .svg or .png"),
        ] {
            let e = parse_str(args).unwrap_err();
            assert!(e.0.contains(want), "{args}: {e}");
        }
        assert_eq!(parse_str("-v").unwrap(), Command::Version);
        assert_eq!(parse_str("--help").unwrap(), Command::Help);
    }
}
