//! examples/python/score.py, the element through PyGObject (`gi.repository.Gst`): it runs
//! `filesrc ! rawvideoparse ! vmafgpu` on the golden pairs, reads every `VMAF` message into a
//! dict and checks the per-frame and pooled VMAF it read `==` libvmaf 3.2.0's golden JSON (the
//! messages carry the full f64). The plugin is the cdylib cargo builds beside this test.
//!
//! Without PyGObject (Debian's python3-gi and gir1.2-gstreamer-1.0, scripts/install-deps.sh)
//! the test prints why and passes, unless VMAFGPU_REQUIRE_PYTHON is set. VMAFGPU_PYTHON names
//! the interpreter; by default `python3`, else `/usr/bin/python3` (where Debian's python3-gi
//! is, when `python3` is another installation).

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A Python that imports `gi` with GStreamer's typelib.
fn python_with_gi() -> Option<String> {
    let candidates = match std::env::var("VMAFGPU_PYTHON") {
        Ok(p) => vec![p],
        Err(_) => vec!["python3".to_string(), "/usr/bin/python3".to_string()],
    };
    candidates.into_iter().find(|py| {
        Command::new(py)
            .args([
                "-c",
                "import gi; gi.require_version('Gst', '1.0'); from gi.repository import Gst",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A folder holding only the plugin cargo built (target/<profile>/deps/libgstvmafgpu.so, beside
/// this test's executable), so that GStreamer scans nothing else from the target folder.
fn plugin_dir(scratch: &Path) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let so = [deps, deps.parent().unwrap()]
        .iter()
        .map(|d| d.join("libgstvmafgpu.so"))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "no libgstvmafgpu.so in {} or its parent: cargo builds the cdylib with the tests",
                deps.display()
            )
        });
    let dir = scratch.join("plugin");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&so, dir.join("libgstvmafgpu.so")).unwrap();
    dir
}

struct Case {
    name: &'static str,
    width: u32,
    height: u32,
    bitdepth: u32,
    window: u32,
}

#[test]
fn python_reads_libvmafs_vmaf_from_the_messages() {
    let Some(python) = python_with_gi() else {
        let why = "no python3 with PyGObject and the Gst typelib (apt-get install python3-gi \
                   gir1.2-gstreamer-1.0, or scripts/install-deps.sh)";
        if std::env::var_os("VMAFGPU_REQUIRE_PYTHON").is_some() {
            panic!("VMAFGPU_REQUIRE_PYTHON is set and there is {why}");
        }
        eprintln!("skipped: {why}");
        return;
    };
    let scratch = std::env::temp_dir().join(format!("vmafgpu-python-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let plugins = plugin_dir(&scratch);
    let data = manifest().join("tests/data");
    for c in [
        Case {
            name: "carphone",
            width: 176,
            height: 144,
            bitdepth: 8,
            window: 30,
        },
        Case {
            name: "bbb360p10",
            width: 640,
            height: 360,
            bitdepth: 10,
            window: 0,
        },
    ] {
        let file = |side: &str| {
            let p = data.join(format!("yuv/{}_{side}.yuv", c.name));
            assert!(
                p.exists(),
                "{}: run scripts/fetch-test-data.sh",
                p.display()
            );
            p
        };
        let golden = data.join(format!("goldens/{}_v3.2.0.json", c.name));
        let out = Command::new(&python)
            .arg(manifest().join("examples/python/score.py"))
            .args([file("ref"), file("dis")])
            .args(["-W", &c.width.to_string(), "-H", &c.height.to_string()])
            .args(["-b", &c.bitdepth.to_string(), "--backend", "cpu"])
            .args(["--window", &c.window.to_string()])
            .arg("--golden")
            .arg(&golden)
            .env("GST_PLUGIN_PATH", &plugins)
            .env("GST_REGISTRY", scratch.join("registry.bin"))
            .output()
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{}: score.py failed ({:?})\n{stdout}\n{stderr}",
            c.name,
            out.status
        );
        // the script's own == checks passed; check its pooled line against the golden here too
        let text = std::fs::read_to_string(&golden).unwrap();
        let want: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mean = want["pooled_metrics"]["vmaf"]["mean"].as_f64().unwrap();
        let line = format!("vmaf_v0.6.1: {mean:.6}");
        assert!(
            stdout.contains(&line),
            "{}: no {line:?} in\n{stdout}",
            c.name
        );
        assert!(stdout.contains("per-frame VMAF ==: ok"), "{stdout}");
        assert!(stdout.contains("pooled mean ==: ok"), "{stdout}");
        let frames = want["frames"].as_array().unwrap().len();
        let windows = if c.window > 0 {
            frames / c.window as usize
        } else {
            0
        };
        let counts = format!("frames {frames} (messages: {frames} frame, {windows} window)");
        assert!(
            stdout.contains(&counts),
            "{}: no {counts:?} in\n{stdout}",
            c.name
        );
        print!("{}: {stdout}", c.name);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
