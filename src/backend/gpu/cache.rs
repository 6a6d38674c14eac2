//! The on-disk cache of compiled kernels, shared by the GPU backends: CUDA keeps the CUBIN that
//! NVRTC builds for the device's real architecture, HIP the code object hipRTC returns. A warm
//! cache turns the 1-2 s of run-time compilation at start-up into one file read.
//!
//! - **Where**: `$VMAFGPU_CACHE_DIR` if set (empty or `off`: no cache), else
//!   `$XDG_CACHE_HOME/vmafgpu` (an absolute `XDG_CACHE_HOME` only, as the XDG spec says), else
//!   `$HOME/.cache/vmafgpu`, else no cache ([`location_from`]).
//! - **Key**: a 128-bit FNV-1a hash ([`Key::new`]) of the cache format version, the entry's
//!   kind, and the parts the backend gives: the kernel text, every compile option, the device
//!   architecture, the driver/runtime/compiler versions. Anything that changes the binary
//!   changes the key, so a stale entry is simply never looked up (old ones age out,
//!   [`MAX_ENTRIES`]).
//! - **Entry** (`{kind}-{key:032x}.bin`): a [`HEADER_LEN`]-byte header (magic, format version,
//!   key, payload length, FNV-1a-64 checksum of the payload) and the payload. A file that does
//!   not check out in every field (corrupt, truncated, another format or key) is recompiled
//!   and overwritten ([`Invalid`]).
//! - **Writes are atomic**: a new entry is written to a uniquely named temporary file in the
//!   same directory and renamed over the entry's name, so concurrent processes see either no
//!   entry or a complete one, never a half-written file.
//! - **Never an error**: a directory that cannot be created or written means the kernels are
//!   compiled in memory as without a cache; the process says so once on stderr.
//!
//! The hash is written out here (not `std::hash::DefaultHasher`, whose algorithm may change
//! between Rust releases) so that a key is the same for every build of the same inputs.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// The environment variable naming the cache directory; empty or `off` disables the cache.
pub const ENV_CACHE_DIR: &str = "VMAFGPU_CACHE_DIR";

/// The entry format version: part of every key and of every header. Bump it when the header
/// or what a backend stores changes.
pub const FORMAT_VERSION: u32 = 1;

/// The first bytes of every entry.
pub const MAGIC: [u8; 8] = *b"VMAFGPUK";

/// Header bytes: magic (8), format version (u32 LE), reserved zero (u32), key (u128 LE),
/// payload length (u64 LE), payload checksum (FNV-1a 64, u64 LE).
pub const HEADER_LEN: usize = 8 + 4 + 4 + 16 + 8 + 8;

/// Entries kept in one directory; beyond this the least recently used are removed after a
/// write (a hit refreshes an entry's modification time). The kernels of one machine need 2-3.
pub const MAX_ENTRIES: usize = 32;

/// A payload longer than this is taken for a corrupt header (our largest is a few MiB).
const MAX_PAYLOAD: u64 = 1 << 30;

/// Temporary files older than this are leftovers of a killed process and removed when pruning.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// FNV-1a, 128 bits (offset basis and prime from the FNV reference, draft-eastlake-fnv).
struct Fnv128(u128);

impl Fnv128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;

    fn new() -> Fnv128 {
        Fnv128(Self::OFFSET)
    }

    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u128;
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// One part, length first, so that ("ab", "c") and ("a", "bc") hash differently.
    fn part(&mut self, b: &[u8]) {
        self.bytes(&(b.len() as u64).to_le_bytes());
        self.bytes(b);
    }
}

/// FNV-1a, 64 bits: the payload checksum.
pub fn checksum(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// An entry's key: the hash of everything that determines the compiled binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key(pub u128);

impl Key {
    /// The key of an entry of `kind` (e.g. "cuda-cubin") built from `parts`: the kernel text,
    /// the compile options, the device architecture, the driver/runtime versions, in a fixed
    /// order. The cache format version is always included.
    pub fn new(kind: &str, parts: &[&[u8]]) -> Key {
        let mut h = Fnv128::new();
        h.part(b"vmafgpu kernel cache");
        h.part(&FORMAT_VERSION.to_le_bytes());
        h.part(kind.as_bytes());
        h.part(&(parts.len() as u64).to_le_bytes());
        for p in parts {
            h.part(p);
        }
        Key(h.0)
    }
}

/// Why an entry on disk was not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// Shorter than the header, or than the payload length in it.
    Truncated,
    /// Not an entry of this cache (magic).
    Magic,
    /// Another entry format version.
    Version,
    /// The header names another key.
    Key,
    /// Longer than the header says, or an absurd length.
    Length,
    /// The payload does not match its checksum.
    Checksum,
}

/// The header and payload of an entry for `key`.
pub fn encode(key: Key, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + payload.len());
    v.extend_from_slice(&MAGIC);
    v.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&key.0.to_le_bytes());
    v.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    v.extend_from_slice(&checksum(payload).to_le_bytes());
    v.extend_from_slice(payload);
    v
}

/// The payload of an entry file's bytes if every header field checks out for `key`.
pub fn decode(key: Key, file: &[u8]) -> Result<&[u8], Invalid> {
    if file.len() < HEADER_LEN {
        return Err(Invalid::Truncated);
    }
    let (h, payload) = file.split_at(HEADER_LEN);
    let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    if h[..8] != MAGIC {
        return Err(Invalid::Magic);
    }
    if u32_at(8) != FORMAT_VERSION || u32_at(12) != 0 {
        return Err(Invalid::Version);
    }
    if u128::from_le_bytes(h[16..32].try_into().expect("16 bytes")) != key.0 {
        return Err(Invalid::Key);
    }
    let len = u64_at(32);
    if len > MAX_PAYLOAD {
        return Err(Invalid::Length);
    }
    match (payload.len() as u64).cmp(&len) {
        std::cmp::Ordering::Less => return Err(Invalid::Truncated),
        std::cmp::Ordering::Greater => return Err(Invalid::Length),
        std::cmp::Ordering::Equal => {}
    }
    if checksum(payload) != u64_at(40) {
        return Err(Invalid::Checksum);
    }
    Ok(payload)
}

/// What [`Cache::load_or_compile`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A valid entry was read; nothing was compiled.
    Hit,
    /// Compiled. `found`: what was wrong with the entry on disk, if there was one; `stored`:
    /// whether the new entry was written (false: the directory is not writable, said once).
    Compiled {
        found: Option<Invalid>,
        stored: bool,
    },
    /// No cache (disabled or no directory): compiled in memory.
    Disabled,
}

/// What this process's caches did so far (all [`Cache`]s together): the GPU tests read them to
/// check that a warm start compiled nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Entries read and used.
    pub hits: u64,
    /// Compilations through a cache (disabled ones included).
    pub compiles: u64,
    /// Entries written.
    pub stored: u64,
    /// Entries found invalid (then recompiled).
    pub invalid: u64,
    /// Writes that failed.
    pub write_failures: u64,
}

static HITS: AtomicU64 = AtomicU64::new(0);
static COMPILES: AtomicU64 = AtomicU64::new(0);
static STORED: AtomicU64 = AtomicU64::new(0);
static INVALID: AtomicU64 = AtomicU64::new(0);
static WRITE_FAILURES: AtomicU64 = AtomicU64::new(0);

/// This process's [`Counters`].
pub fn counters() -> Counters {
    Counters {
        hits: HITS.load(Ordering::Relaxed),
        compiles: COMPILES.load(Ordering::Relaxed),
        stored: STORED.load(Ordering::Relaxed),
        invalid: INVALID.load(Ordering::Relaxed),
        write_failures: WRITE_FAILURES.load(Ordering::Relaxed),
    }
}

/// The cache directory for an environment (`env` looks a variable up): see the module
/// documentation. `None`: no cache.
pub fn location_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(v) = env(ENV_CACHE_DIR) {
        return if v.is_empty() || v.eq_ignore_ascii_case("off") {
            None
        } else {
            Some(PathBuf::from(v))
        };
    }
    if let Some(x) = env("XDG_CACHE_HOME").map(PathBuf::from)
        && x.is_absolute()
    {
        return Some(x.join("vmafgpu"));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join("vmafgpu"))
}

/// The process's cache, located from the environment on first use ([`location_from`]).
pub fn global() -> &'static Cache {
    static GLOBAL: OnceLock<Cache> = OnceLock::new();
    GLOBAL.get_or_init(|| Cache {
        dir: location_from(|k| std::env::var_os(k)),
        max_entries: MAX_ENTRIES,
    })
}

/// A cache directory (or none).
#[derive(Clone, Debug)]
pub struct Cache {
    dir: Option<PathBuf>,
    max_entries: usize,
}

impl Cache {
    /// A cache in `dir` (created when the first entry is written).
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: Some(dir.into()),
            max_entries: MAX_ENTRIES,
        }
    }

    /// No cache: every call compiles.
    pub fn disabled() -> Cache {
        Cache {
            dir: None,
            max_entries: MAX_ENTRIES,
        }
    }

    /// Keep at most `n` (at least 1) entries.
    pub fn with_max_entries(mut self, n: usize) -> Cache {
        self.max_entries = n.max(1);
        self
    }

    /// The directory, if the cache is on.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file of an entry of `kind` (letters, digits, `-`; anything else becomes `_`).
    pub fn entry_path(&self, kind: &str, key: Key) -> Option<PathBuf> {
        let kind: String = kind
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Some(
            self.dir
                .as_ref()?
                .join(format!("{kind}-{:032x}.bin", key.0)),
        )
    }

    /// The payload stored for `key`, or `compile`'s (then stored). A compile error is returned
    /// as it is (and nothing is stored); cache trouble never is an error.
    pub fn load_or_compile<E>(
        &self,
        kind: &str,
        key: Key,
        compile: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<(Vec<u8>, Outcome), E> {
        let Some(path) = self.entry_path(kind, key) else {
            COMPILES.fetch_add(1, Ordering::Relaxed);
            return compile().map(|b| (b, Outcome::Disabled));
        };
        let found = match fs::read(&path) {
            Ok(mut file) => match decode(key, &file) {
                Ok(_) => {
                    HITS.fetch_add(1, Ordering::Relaxed);
                    touch(&path);
                    file.drain(..HEADER_LEN);
                    return Ok((file, Outcome::Hit));
                }
                Err(why) => {
                    INVALID.fetch_add(1, Ordering::Relaxed);
                    Some(why)
                }
            },
            Err(_) => None,
        };
        COMPILES.fetch_add(1, Ordering::Relaxed);
        let payload = compile()?;
        let stored = match self.store(&path, key, &payload) {
            Ok(()) => {
                STORED.fetch_add(1, Ordering::Relaxed);
                self.prune();
                true
            }
            Err(e) => {
                WRITE_FAILURES.fetch_add(1, Ordering::Relaxed);
                warn_once(&path, &e);
                false
            }
        };
        Ok((payload, Outcome::Compiled { found, stored }))
    }

    /// Write the entry atomically: a unique temporary file beside it, renamed over it.
    fn store(&self, path: &Path, key: Key, payload: &[u8]) -> std::io::Result<()> {
        let dir = path.parent().expect("an entry path has a directory");
        fs::create_dir_all(dir)?;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = path.file_name().expect("an entry path has a name");
        let tmp = dir.join(format!(
            ".{}.{}.{}.{nanos}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let r = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(&encode(key, payload))?;
            drop(f);
            fs::rename(&tmp, path)
        })();
        if r.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        r
    }

    /// Remove the least recently used entries beyond `max_entries` and stale temporary files.
    /// Failures are ignored (another process may be pruning too).
    fn prune(&self) {
        let Some(dir) = self.dir.as_deref() else {
            return;
        };
        let Ok(rd) = fs::read_dir(dir) else { return };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(modified) = e.metadata().and_then(|m| m.modified()) else {
                continue;
            };
            if name.starts_with('.') && name.ends_with(".tmp") {
                if now
                    .duration_since(modified)
                    .is_ok_and(|age| age > STALE_TMP)
                {
                    let _ = fs::remove_file(e.path());
                }
            } else if name.ends_with(".bin") {
                entries.push((modified, e.path()));
            }
        }
        if entries.len() > self.max_entries {
            entries.sort();
            let excess = entries.len() - self.max_entries;
            for (_, p) in &entries[..excess] {
                let _ = fs::remove_file(p);
            }
        }
    }
}

/// Mark an entry as just used (its modification time), for [`Cache::prune`].
fn touch(path: &Path) {
    if let Ok(f) = fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// Say once per process that the cache cannot be written (the kernels still work).
fn warn_once(path: &Path, e: &std::io::Error) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "vmafgpu: kernel cache not writable ({}: {e}); compiling kernels in memory \
             (set {ENV_CACHE_DIR} to another directory, or to off)",
            path.display()
        )
    });
}

/// The identity of a library file for a key: its path, size and modification time (a runtime
/// rebuilt or replaced at the same path gets another key even with the same version number).
/// Only the path if it cannot be read (e.g. a bare name resolved by the dynamic loader).
pub fn file_identity(path: &str) -> Vec<u8> {
    let mut v = path.as_bytes().to_vec();
    if let Ok(m) = fs::metadata(path) {
        v.extend_from_slice(&m.len().to_le_bytes());
        let t = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        v.extend_from_slice(&t.to_le_bytes());
    }
    v
}

#[cfg(test)]
mod tests;
