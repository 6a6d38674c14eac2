use super::*;
use std::cell::Cell;
use std::ffi::OsStr;

/// A fresh directory for one test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p =
            std::env::temp_dir().join(format!("vmafgpu-cache-unit-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn key(s: &str) -> Key {
    Key::new("test", &[s.as_bytes(), b"--opt", b"sm_90"])
}

/// `load_or_compile` with a compiler that counts its calls and returns `payload`.
fn run(cache: &Cache, k: Key, payload: &[u8], calls: &Cell<u32>) -> (Vec<u8>, Outcome) {
    cache
        .load_or_compile("test", k, || {
            calls.set(calls.get() + 1);
            Ok::<_, String>(payload.to_vec())
        })
        .unwrap()
}

#[test]
fn cache_hash_is_fnv1a_reference() {
    // FNV test vectors (draft-eastlake-fnv): "" and "a", 64 and 128 bits.
    assert_eq!(checksum(b""), 0xcbf29ce484222325);
    assert_eq!(checksum(b"a"), 0xaf63dc4c8601ec8c);
    assert_eq!(checksum(b"foobar"), 0x85944171f73967e8);
    let h = |b: &[u8]| {
        let mut f = Fnv128::new();
        f.bytes(b);
        f.0
    };
    assert_eq!(h(b""), 0x6c62272e07bb014262b821756295c58d);
    assert_eq!(h(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
}

#[test]
fn cache_key_is_stable_and_sees_every_part() {
    // Pinned: a key must not change between builds or Rust releases (else every user's cache
    // goes cold on upgrade); change it only together with FORMAT_VERSION.
    let k = Key::new("cuda-cubin", &[b"text", b"--fmad=false", b"sm_90"]);
    assert_eq!(format!("{:032x}", k.0), PINNED_KEY);
    let base: [&[u8]; 3] = [b"text", b"opts", b"sm_90"];
    let k0 = Key::new("kind", &base);
    for i in 0..3 {
        let mut p = base;
        p[i] = b"other";
        assert_ne!(Key::new("kind", &p), k0, "part {i} ignored");
    }
    assert_ne!(Key::new("kind2", &base), k0, "kind ignored");
    // Part boundaries count.
    assert_ne!(Key::new("k", &[b"ab", b"c"]), Key::new("k", &[b"a", b"bc"]));
    assert_ne!(Key::new("k", &[b"a"]), Key::new("k", &[b"a", b""]));
}

/// [`cache_key_is_stable_and_sees_every_part`]'s pinned key.
/// (Computed independently with a few lines of Python implementing the same FNV-1a parts.)
const PINNED_KEY: &str = "a7436346046168d033be331714604651";

#[test]
fn cache_cold_then_warm() {
    let d = TempDir::new("warm");
    let cache = Cache::at(&d.0);
    let calls = Cell::new(0);
    let (b, o) = run(&cache, key("a"), b"CUBIN-A", &calls);
    assert_eq!(
        (b.as_slice(), &o),
        (
            &b"CUBIN-A"[..],
            &Outcome::Compiled {
                found: None,
                stored: true
            }
        )
    );
    assert_eq!(calls.get(), 1);
    // Warm: the same bytes, no compile, also through a second Cache on the same directory.
    for c in [&cache, &Cache::at(&d.0)] {
        let (b, o) = run(c, key("a"), b"WRONG", &calls);
        assert_eq!((b.as_slice(), o), (&b"CUBIN-A"[..], Outcome::Hit));
    }
    assert_eq!(calls.get(), 1);
    let file = fs::read(cache.entry_path("test", key("a")).unwrap()).unwrap();
    assert_eq!(file.len(), HEADER_LEN + 7);
    assert_eq!(decode(key("a"), &file), Ok(&b"CUBIN-A"[..]));
    // A stale key (other text, options, architecture or version) is another entry: compiled.
    let (b, o) = run(&cache, key("b"), b"CUBIN-B", &calls);
    assert_eq!(
        (b.as_slice(), o),
        (
            &b"CUBIN-B"[..],
            Outcome::Compiled {
                found: None,
                stored: true
            }
        )
    );
    assert_eq!(calls.get(), 2);
    // No temporary file is left behind.
    let names: Vec<_> = fs::read_dir(&d.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.to_string_lossy().starts_with("test-")),
        "{names:?}"
    );
}

#[test]
fn cache_invalid_entries_are_recompiled_and_replaced() {
    let d = TempDir::new("invalid");
    let cache = Cache::at(&d.0);
    let k = key("x");
    let path = cache.entry_path("test", k).unwrap();
    let good = encode(k, b"PAYLOAD-0123456789");
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let mut bad_len = good.clone();
    bad_len.push(0);
    let mut version = good.clone();
    version[8] = version[8].wrapping_add(1);
    let mut garbage = good.clone();
    garbage[0] = b'X';
    let mut absurd = good.clone();
    absurd[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    let cases: Vec<(&str, Vec<u8>, Invalid)> = vec![
        ("empty", Vec::new(), Invalid::Truncated),
        (
            "header only, cut",
            good[..HEADER_LEN - 1].to_vec(),
            Invalid::Truncated,
        ),
        (
            "payload cut",
            good[..good.len() - 3].to_vec(),
            Invalid::Truncated,
        ),
        ("trailing byte", bad_len, Invalid::Length),
        ("absurd length", absurd, Invalid::Length),
        ("flipped payload bit", flipped, Invalid::Checksum),
        ("other format version", version, Invalid::Version),
        ("not an entry", garbage, Invalid::Magic),
        (
            "another key's entry",
            encode(key("y"), b"PAYLOAD-0123456789"),
            Invalid::Key,
        ),
    ];
    for (what, bytes, why) in cases {
        fs::create_dir_all(&d.0).unwrap();
        fs::write(&path, &bytes).unwrap();
        let calls = Cell::new(0);
        let (b, o) = run(&cache, k, b"FRESH", &calls);
        assert_eq!(calls.get(), 1, "{what}: not recompiled");
        assert_eq!(b, b"FRESH", "{what}");
        assert_eq!(
            o,
            Outcome::Compiled {
                found: Some(why),
                stored: true
            },
            "{what}"
        );
        // Overwritten with a valid entry: the next call is a hit.
        assert_eq!(
            decode(k, &fs::read(&path).unwrap()),
            Ok(&b"FRESH"[..]),
            "{what}"
        );
        let (b, o) = run(&cache, k, b"WRONG", &calls);
        assert_eq!(
            (b.as_slice(), o, calls.get()),
            (&b"FRESH"[..], Outcome::Hit, 1),
            "{what}"
        );
    }
}

#[test]
fn cache_unwritable_directory_falls_back() {
    let d = TempDir::new("unwritable");
    fs::create_dir_all(&d.0).unwrap();
    // A directory below a regular file can never be created (not even by root).
    let blocker = d.0.join("file");
    fs::write(&blocker, b"not a directory").unwrap();
    let cache = Cache::at(blocker.join("vmafgpu"));
    let calls = Cell::new(0);
    for n in 1..=2 {
        let (b, o) = run(&cache, key("a"), b"BIN", &calls);
        assert_eq!(
            (b.as_slice(), o),
            (
                &b"BIN"[..],
                Outcome::Compiled {
                    found: None,
                    stored: false
                }
            )
        );
        assert_eq!(calls.get(), n);
    }
    // The entry's directory is a file: also nothing stored, no error.
    let cache = Cache::at(&blocker);
    let (b, o) = run(&cache, key("a"), b"BIN", &calls);
    assert_eq!(
        (b.as_slice(), o),
        (
            &b"BIN"[..],
            Outcome::Compiled {
                found: None,
                stored: false
            }
        )
    );
}

#[test]
fn cache_disabled_always_compiles() {
    let cache = Cache::disabled();
    assert!(cache.dir().is_none());
    let calls = Cell::new(0);
    for n in 1..=3 {
        let (b, o) = run(&cache, key("a"), b"BIN", &calls);
        assert_eq!(
            (b.as_slice(), o, calls.get()),
            (&b"BIN"[..], Outcome::Disabled, n)
        );
    }
}

#[test]
fn cache_compile_error_is_returned_and_not_stored() {
    let d = TempDir::new("error");
    let cache = Cache::at(&d.0);
    let r = cache.load_or_compile("test", key("a"), || Err::<Vec<u8>, _>("syntax error"));
    assert_eq!(r, Err("syntax error"));
    assert!(!cache.entry_path("test", key("a")).unwrap().exists());
}

#[test]
fn cache_location_from_environment() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsStr::new(v).to_os_string())
        }
    };
    let p = |s: &str| Some(PathBuf::from(s));
    assert_eq!(
        location_from(env(&[
            (ENV_CACHE_DIR, "/tmp/mine"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u")
        ])),
        p("/tmp/mine")
    );
    assert_eq!(
        location_from(env(&[(ENV_CACHE_DIR, "off"), ("HOME", "/h")])),
        None
    );
    assert_eq!(
        location_from(env(&[(ENV_CACHE_DIR, "OFF"), ("HOME", "/h")])),
        None
    );
    assert_eq!(
        location_from(env(&[(ENV_CACHE_DIR, ""), ("HOME", "/h")])),
        None
    );
    assert_eq!(
        location_from(env(&[("XDG_CACHE_HOME", "/xdg"), ("HOME", "/h")])),
        p("/xdg/vmafgpu")
    );
    // A relative XDG_CACHE_HOME is invalid (XDG spec): ignored.
    assert_eq!(
        location_from(env(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")])),
        p("/h/.cache/vmafgpu")
    );
    assert_eq!(
        location_from(env(&[("XDG_CACHE_HOME", ""), ("HOME", "/h")])),
        p("/h/.cache/vmafgpu")
    );
    assert_eq!(location_from(env(&[("HOME", "")])), None);
    assert_eq!(location_from(env(&[])), None);
}

#[test]
fn cache_keeps_at_most_max_entries() {
    let d = TempDir::new("prune");
    let cache = Cache::at(&d.0).with_max_entries(3);
    let calls = Cell::new(0);
    for i in 0..6 {
        run(&cache, key(&format!("k{i}")), b"BIN", &calls);
        // Distinct modification times, oldest first.
        let p = cache.entry_path("test", key(&format!("k{i}"))).unwrap();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i as u64);
        fs::File::options()
            .append(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
    // A leftover temporary file of a killed process, old: removed by the next prune.
    let tmp = d.0.join(".test-x.bin.1.2.3.tmp");
    fs::write(&tmp, b"half").unwrap();
    fs::File::options()
        .append(true)
        .open(&tmp)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH)
        .unwrap();
    run(&cache, key("k6"), b"BIN", &calls);
    let left: Vec<bool> = (0..7)
        .map(|i| {
            cache
                .entry_path("test", key(&format!("k{i}")))
                .unwrap()
                .exists()
        })
        .collect();
    assert_eq!(left, [false, false, false, false, true, true, true]);
    assert!(!tmp.exists());
}

#[test]
fn cache_many_threads_at_once() {
    let d = TempDir::new("threads");
    let cache = Cache::at(&d.0);
    let keys: Vec<Key> = (0..3).map(|i| key(&format!("t{i}"))).collect();
    let payload = |i: usize| format!("BINARY-{i}-").repeat(5000).into_bytes();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (cache, keys) = (&cache, &keys);
            s.spawn(move || {
                for round in 0..20 {
                    let i = (t + round) % keys.len();
                    let (b, _) = cache
                        .load_or_compile("test", keys[i], || Ok::<_, ()>(payload(i)))
                        .unwrap();
                    assert!(b == payload(i), "thread {t}: wrong or torn payload");
                }
            });
        }
    });
    for (i, k) in keys.iter().enumerate() {
        let file = fs::read(cache.entry_path("test", *k).unwrap()).unwrap();
        assert!(decode(*k, &file) == Ok(&payload(i)[..]));
    }
    assert_eq!(
        fs::read_dir(&d.0).unwrap().count(),
        keys.len(),
        "temporary files left"
    );
}
