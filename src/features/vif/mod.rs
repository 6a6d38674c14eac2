//! VIF (visual information fidelity), the fixed-point version of libvmaf 3.2.0's `integer_vif`
//! feature extractor (`libvmaf/src/feature/integer_vif.c` and `integer_vif.h`, plain C path).
//!
//! [`compute`] turns a reference and a distorted luma plane into four [`VifScaleAccum`]s (one per
//! scale), the integer sums libvmaf keeps in its `VifResiduals`-shaped locals. [`VifAccum::scores`]
//! is the only floating-point step that follows: it turns the sums into `integer_vif_scale0..3`
//! with libvmaf's types (double sums rounded to float, a float division).
//!
//! # The algorithm, as libvmaf's C path does it
//!
//! Per scale `s` (0..3) on an image of `w x h` (scale 0: the luma plane; each further scale
//! halves `w` and `h`, rounding down):
//! 1. vertical pass of the symmetric filter `s` over every row (rows outside the image are
//!    mirrored: `-1 -> 1`, `h -> h - 2`), giving per column the filtered `mu1`, `mu2` and the
//!    filtered products `ref*ref`, `dis*dis`, `ref*dis`, each rounded and shifted by a
//!    scale- and depth-dependent amount;
//! 2. the same filter horizontally on those rows (columns mirrored the same way);
//! 3. per pixel: `sigma1_sq`, `sigma2_sq`, `sigma12` from the filtered values, then either the
//!    "log" branch (`sigma1_sq >= 2 * 65536`: base-2 logs from a 16-bit table, the gain `g` in
//!    double, limited by `enhn_gain_limit`) or the "non-log" branch;
//! 4. for the next scale: filter `s + 1` over the image (same mirroring), keep every other row
//!    and column.
//!
//! 8-bit content (a [`Plane`] with `bpc == 8`) takes libvmaf's 8-bit code at scale 0
//! (`vif_statistic_8`, `subsample_rd_8`); 9- to 16-bit content the 16-bit code. Above scale 0
//! every depth runs `vif_statistic_16` / `subsample_rd_16` on 16-bit samples.
//!
//! # Exactness and speed
//!
//! Every value libvmaf computes is computed here with the same result: the same rounding
//! constants and shifts, the same truncating casts (`(uint16_t)`, `(uint32_t)`, the wrap-around
//! `(int32_t)(u32 - u32)`), the same double arithmetic for the gain (`g = sigma12 / (sigma1_sq +
//! 65536e-10)` in f64, then truncation to int32 / int64), the same log table. What differs is only
//! how exact integer sums are formed, which cannot change them:
//! - filters are folded on their symmetry (`c * (a + b)` for the two taps `c`);
//! - a 64-bit sum of 32-bit products is kept as two 32-bit sums of their 16-bit halves and
//!   recombined (`hi * 65536 + lo`) before libvmaf's rounding shift, so that the row loops run on
//!   32-bit lanes;
//! - the per-pixel branches become a branch-free pass plus a pass over the pixels that take the
//!   gain path.
//!
//! Every 32-bit sum has its bound beside it (none can wrap; the dev profile's overflow checks
//! would catch one). The row loops work on blocks of columns held in registers; on x86-64 CPUs
//! with AVX2 the same code is compiled a second time for AVX2 and chosen at run time (integer
//! results cannot depend on it; the double steps use no FMA), with explicit AVX2 kernels, and
//! with AVX-512 a fused row kernel (module `avx2::wide512`). The tests compare every build
//! with a literal scalar transcription of libvmaf's C loops, and `tests/simd_parity.rs` the
//! builds with each other.

// Index loops over slices re-cut to one length are the form of the row kernels that the
// compiler vectorises without bounds checks (and the literal C transcription in the tests).
#![allow(clippy::needless_range_loop)]

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::features::isa::Isa;
use crate::picture::Plane;

/// libvmaf 3.2.0 `libvmaf/src/feature/integer_vif.h`: `vif_filter1d_table[0]` (17 taps, sum 65536).
const FILTER_0: [u16; 17] = [
    489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935,
    489,
];
/// libvmaf 3.2.0 `integer_vif.h`: `vif_filter1d_table[1]` (9 taps, sum 65536).
const FILTER_1: [u16; 9] = [1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244];
/// libvmaf 3.2.0 `integer_vif.h`: `vif_filter1d_table[2]` (5 taps, sum 65536).
const FILTER_2: [u16; 5] = [3571, 16004, 26386, 16004, 3571];
/// libvmaf 3.2.0 `integer_vif.h`: `vif_filter1d_table[3]` (3 taps, sum 65536).
const FILTER_3: [u16; 3] = [10904, 43728, 10904];

/// libvmaf 3.2.0 `integer_vif.c`: `sigma_nsq = 65536 << 1` (the noise variance, Q16).
const SIGMA_NSQ: i32 = 65536 << 1;

/// libvmaf 3.2.0 `integer_vif.c`: `eps = 65536 * 1.0e-10` (double).
const GAIN_EPS: f64 = 65536.0 * 1.0e-10;

/// libvmaf 3.2.0 `integer_vif.h`: `DEFAULT_VIF_ENHN_GAIN_LIMIT` (also the option's maximum; its
/// minimum is 1.0, which disables enhancement gain).
pub const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;

/// Parameters of the VIF feature (libvmaf's `vif` extractor options that change scores).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VifParams {
    /// libvmaf's `vif_enhn_gain_limit` (alias `egl`): upper limit of the gain `g`; 1.0 to 100.0.
    pub enhn_gain_limit: f64,
}

impl Default for VifParams {
    fn default() -> Self {
        VifParams {
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
        }
    }
}

impl VifParams {
    /// Refuse values libvmaf's option parser refuses (`vif_enhn_gain_limit` outside 1.0..=100.0).
    pub fn validate(&self) -> Result<()> {
        let g = self.enhn_gain_limit;
        if (1.0..=DEFAULT_ENHN_GAIN_LIMIT).contains(&g) {
            Ok(())
        } else {
            Err(Error::Model(format!(
                "vif_enhn_gain_limit {g} is outside libvmaf's range 1.0 to 100.0"
            )))
        }
    }
}

/// The integer sums of one scale: libvmaf's `VifResiduals` (`accum_num_log`, `accum_den_log`,
/// `accum_num_non_log`, `accum_den_non_log`).
///
/// Bounds at 15360x8640 (132 710 400 pixels at scale 0, fewer above), any depth up to 16 bits,
/// any content, `enhn_gain_limit` in 1..=100; the per-pixel figures are in [`bounds`], and
/// `tests::accumulator_bounds` checks them on worst-case content and that the totals fit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VifScaleAccum {
    /// Sum over "log" pixels with `sigma12 > 0 && sigma2_sq > 0` of
    /// `log2_64(g^2 sigma1_sq + sv_sq + 2^17) - log2_64(sv_sq + 2^17)` (Q11 base-2 logs).
    /// Each term is in `0..=bounds::NUM_LOG_PER_PIXEL` (57 344). Total in `0..=7.62e12`
    /// (i64 max 9.2e18).
    pub num_log: i64,
    /// Sum over "log" pixels (`sigma1_sq >= 2^17`) of `log2_32(sigma1_sq + 2^17) - 17 * 2048`.
    /// Each term is in `2048..=bounds::DEN_LOG_PER_PIXEL` (26 627). Total in `0..=3.54e12`.
    pub den_log: i64,
    /// Sum over "non-log" pixels (`sigma1_sq < 2^17`) of `max(sigma2_sq, 0)` (the Q16 variance
    /// of the distorted image, normalised to 8 bits). Each term is in
    /// `0..=bounds::SIGMA_SQ_MAX` (2^30 + 2^20). Total in `0..=1.43e17` (i64 max 9.2e18).
    pub num_non_log: i64,
    /// Number of "non-log" pixels: `0..=132 710 400`.
    pub den_non_log: i64,
}

/// The four scales of VIF.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VifAccum {
    pub scales: [VifScaleAccum; 4],
}

/// Per-pixel bounds of the accumulator terms (see [`VifScaleAccum`]).
pub mod bounds;

/// The base-2 log table libvmaf's `log_generate()` fills: entry `i` (32767..=65535) is
/// `(uint16_t)round(log2f((float)i) * 2048)`; every other entry is 0 (libvmaf zero-allocates the
/// state). Built once; a GPU backend uploads it.
///
/// libvmaf calls the C library's `log2f`. This table takes `log2` in double and rounds it to
/// float, which is `log2f` correctly rounded; glibc's `log2f` differs from that on 5 inputs of
/// the range, none of which changes a table entry (`tests::log2_table_matches_log2f` checks this
/// against the platform's `f32::log2`, which is glibc's `log2f` on Linux).
pub fn log2_table() -> &'static [u16; 65537] {
    static TABLE: OnceLock<Box<[u16; 65537]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Box<[u16; 65537]> = vec![0u16; 65537]
            .into_boxed_slice()
            .try_into()
            .expect("65537 entries");
        for (i, e) in t.iter_mut().enumerate().take(65536).skip(32767) {
            let l = (i as f64).log2() as f32;
            *e = ((l * 2048.0) as f64).round() as u16;
        }
        t
    })
}

/// libvmaf 3.2.0 `integer_vif.h`: `log2_32()`: Q11 base-2 log of `temp` from its 16 leading
/// bits. `temp` must be at least 2^15 (always 2^18 or more here).
#[inline(always)]
fn log2_32(table: &[u16; 65537], temp: u32) -> i32 {
    let k = 16 - temp.leading_zeros() as i32;
    debug_assert!(k >= 0);
    let idx = (temp >> k) & 0xffff;
    table[idx as usize] as i32 + 2048 * k
}

/// libvmaf 3.2.0 `integer_vif.h`: `log2_64()`: as [`log2_32`] for 64-bit values (>= 2^17).
#[inline(always)]
fn log2_64(table: &[u16; 65537], temp: u64) -> i32 {
    let k = 48 - temp.leading_zeros() as i32;
    debug_assert!(k >= 0);
    let idx = (temp >> k) & 0xffff;
    table[idx as usize] as i32 + 2048 * k
}

/// Mirror an index into `0..n` the way libvmaf pads (`-k -> k`, `n - 1 + k -> n - 1 - k`).
#[inline(always)]
fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let m = if i < 0 {
        -i
    } else if i >= n {
        2 * (n - 1) - i
    } else {
        i
    };
    m as usize
}

/// A read-only image of one scale: `w x h` samples, rows `stride` apart.
#[derive(Clone, Copy)]
struct Img<'a> {
    data: &'a [u16],
    w: usize,
    h: usize,
    stride: usize,
}

impl<'a> Img<'a> {
    fn of(p: &Plane<'a>) -> Img<'a> {
        Img {
            data: p.data,
            w: p.width,
            h: p.height,
            stride: p.stride,
        }
    }

    fn compact(data: &'a [u16], w: usize, h: usize) -> Img<'a> {
        Img {
            data,
            w,
            h,
            stride: w,
        }
    }

    #[inline(always)]
    fn row(&self, y: usize) -> &'a [u16] {
        &self.data[y * self.stride..y * self.stride + self.w]
    }

    /// The `FW` rows around row `i` (mirrored at the top and bottom edges).
    #[inline(always)]
    fn taps<const FW: usize>(&self, i: usize) -> [&'a [u16]; FW] {
        let half = (FW / 2) as isize;
        std::array::from_fn(|k| self.row(mirror(i as isize - half + k as isize, self.h)))
    }
}

/// Rounding shift `(x + round) >> shift` of libvmaf's vertical passes.
#[derive(Clone, Copy)]
struct Shift {
    round: u64,
    shift: u32,
}

impl Shift {
    fn new(shift: u32) -> Shift {
        Shift {
            round: if shift == 0 { 0 } else { 1 << (shift - 1) },
            shift,
        }
    }
}

/// Which vertical pass a statistic runs.
#[derive(Clone, Copy)]
enum Vertical {
    /// `vif_statistic_8` (8-bit content, scale 0).
    Eight,
    /// `vif_statistic_16` with its `mu` and square rounding shifts.
    Sixteen { mu: Shift, sq: Shift },
}

/// Mirrored columns kept on each side of a vertical-pass row (half of the widest filter).
const PAD: usize = 8;

/// Scratch rows of one call, allocated once for the widest scale (scale 0).
///
/// The eight per-row quantities, in this order in `v` and `h`: `mu1`, `mu2` (the filtered
/// means), then `xx`, `yy`, `xy` (the filtered products), each split into 16-bit halves
/// (`value = hi * 65536 + lo`, `hi` first) so that every horizontal filter sum of a half fits in
/// 32 bits (`<= 65536 * 65535`) and the row loops run on 32-bit lanes.
struct Scratch {
    /// Vertical-pass outputs (libvmaf's `buf.tmp.*`), `PAD + w + PAD` long, data at `PAD..`.
    v: [Vec<u32>; 8],
    /// Horizontal sums (`w` long).
    h: [Vec<u32>; 8],
    /// Per-pixel `sigma1_sq`, `max(sigma2_sq, 0)`, `sigma12` of one row.
    s1: Vec<i32>,
    s2: Vec<i32>,
    s12: Vec<i32>,
    /// `numer1` and `g * g * sigma1_sq` of the pixels of a row that take the gain path.
    numer1: Vec<u32>,
    prod: Vec<f64>,
    /// AVX2 and AVX-512 kernels: the last rows of per-sample quantities (see `avx2::statistic`
    /// and `fused_statistic`), their interleaved pairs, and the vertical-pass rows as offset
    /// `i16` (sized on first use).
    #[cfg(target_arch = "x86_64")]
    ring: Vec<i16>,
    #[cfg(target_arch = "x86_64")]
    pairs: Vec<i16>,
    #[cfg(target_arch = "x86_64")]
    vs: Vec<i32>,
    #[cfg(target_arch = "x86_64")]
    hs: [Vec<i32>; 8],
    #[cfg(target_arch = "x86_64")]
    vh: [Vec<i16>; 8],
    /// AVX-512 kernel: the vertical-pass rows of the output rows that share a pass.
    #[cfg(target_arch = "x86_64")]
    vg: [[Vec<i16>; 8]; avx2::G],
}

impl Scratch {
    fn new(w: usize) -> Scratch {
        Scratch {
            v: std::array::from_fn(|_| vec![0; w + 2 * PAD]),
            h: std::array::from_fn(|_| vec![0; w]),
            s1: vec![0; w],
            s2: vec![0; w],
            s12: vec![0; w],
            numer1: vec![0; w],
            prod: vec![0.0; w],
            #[cfg(target_arch = "x86_64")]
            ring: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            pairs: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            vs: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            hs: Default::default(),
            #[cfg(target_arch = "x86_64")]
            vh: Default::default(),
            #[cfg(target_arch = "x86_64")]
            vg: Default::default(),
        }
    }
}

/// Fill `half` mirrored columns on each side of `row[PAD..PAD + w]` (libvmaf's
/// `PADDING_SQ_DATA`: `-f -> f`, `w - 1 + f -> w - 1 - f`).
#[inline(always)]
fn pad_row(row: &mut [u32], w: usize, half: usize) {
    for f in 1..=half {
        row[PAD - f] = row[PAD + f];
        row[PAD + w - 1 + f] = row[PAD + w - 1 - f];
    }
}

/// Run `block::<CH>(j0)` over `0..w` in blocks of `CH` columns, then `block::<1>` over the
/// remaining columns. The blocks keep their sums in registers (`[u32; CH]` arrays the compiler
/// turns into vectors).
macro_rules! blocks {
    ($w:expr, $ch:literal, |$j0:ident, $n:ident| $body:expr) => {{
        let w = $w;
        let mut start = 0;
        while start + $ch <= w {
            {
                let $j0 = start;
                const $n: usize = $ch;
                $body;
            }
            start += $ch;
        }
        while start < w {
            {
                let $j0 = start;
                const $n: usize = 1;
                $body;
            }
            start += 1;
        }
    }};
}

/// `CH` samples of `row` from `j0`, widened.
#[inline(always)]
fn load<const CH: usize>(row: &[u16], j0: usize) -> [u32; CH] {
    let a: &[u16; CH] = row[j0..j0 + CH].try_into().unwrap();
    a.map(|x| x as u32)
}

/// `CH` values of `row` from `j0`.
#[inline(always)]
fn load32<const CH: usize>(row: &[u32], j0: usize) -> [u32; CH] {
    *<&[u32; CH]>::try_from(&row[j0..j0 + CH]).unwrap()
}

/// Store `x` at `row[j0..]`.
#[inline(always)]
fn store<const CH: usize>(row: &mut [u32], j0: usize, x: [u32; CH]) {
    row[j0..j0 + CH].copy_from_slice(&x);
}

/// `sum_k f[k] * rows[k][j]` for `CH` columns from `j0` (a vertical filter of samples <=
/// 65535), folded on the filter's symmetry. Bound: `<= 65536 * 65535 < 2^32` (filters sum to
/// 65536); a folded term `f[k] * (a + b) <= 16004 * 131070 < 2^32` (16004 is the largest
/// off-centre tap of any filter).
#[inline(always)]
fn vsum<const FW: usize, const CH: usize>(
    f: &[u16; FW],
    rows: &[&[u16]; FW],
    j0: usize,
) -> [u32; CH] {
    let half = FW / 2;
    let c = f[half] as u32;
    let mut acc = load::<CH>(rows[half], j0).map(|a| c * a);
    for k in 0..half {
        let c = f[k] as u32;
        let (a0, a1) = (load::<CH>(rows[k], j0), load::<CH>(rows[FW - 1 - k], j0));
        for l in 0..CH {
            acc[l] += c * (a0[l] + a1[l]);
        }
    }
    acc
}

/// `out[j] = sum_k f[k] * p[j + k]` over a padded row of values <= 65535 (`p.len() >= w + FW -
/// 1`), folded on the symmetry. Same bounds as [`vsum`].
#[inline(always)]
fn hsum<const FW: usize>(f: &[u16; FW], p: &[u32], out: &mut [u32]) {
    let half = FW / 2;
    blocks!(out.len(), 32, |j0, CH| {
        let c = f[half] as u32;
        let mut acc = load32::<CH>(p, j0 + half).map(|a| c * a);
        for k in 0..half {
            let c = f[k] as u32;
            let (a0, a1) = (load32::<CH>(p, j0 + k), load32::<CH>(p, j0 + FW - 1 - k));
            for l in 0..CH {
                acc[l] += c * (a0[l] + a1[l]);
            }
        }
        store(out, j0, acc)
    });
}

/// Vertical pass of `vif_statistic_8` (8-bit samples, scale 0) for one row: libvmaf's 32-bit
/// sums (`mu <= 65536 * 255`, squares `<= 65536 * 255^2 < 2^32`; a folded square term
/// `f[k] * (a0^2 + a1^2) <= 7455 * 130050 < 2^32`), `mu` rounded by `+ 128 >> 8`, squares kept
/// whole (then split into halves).
#[inline(always)]
fn vertical_8<const FW: usize>(
    f: &[u16; FW],
    ra: &[&[u16]; FW],
    da: &[&[u16]; FW],
    w: usize,
    s: &mut Scratch,
) {
    let half = FW / 2;
    let [vm1, vm2, vxxh, vxxl, vyyh, vyyl, vxyh, vxyl] = &mut s.v;
    blocks!(w, 16, |j0, CH| {
        let c = f[half] as u32;
        let (a, b) = (load::<CH>(ra[half], j0), load::<CH>(da[half], j0));
        let mut m1 = a.map(|a| c * a);
        let mut m2 = b.map(|b| c * b);
        let mut xx = a.map(|a| c * (a * a));
        let mut yy = b.map(|b| c * (b * b));
        let mut xy = [0u32; CH];
        for l in 0..CH {
            xy[l] = c * (a[l] * b[l]);
        }
        for k in 0..half {
            let c = f[k] as u32;
            let (a0, a1) = (load::<CH>(ra[k], j0), load::<CH>(ra[FW - 1 - k], j0));
            let (b0, b1) = (load::<CH>(da[k], j0), load::<CH>(da[FW - 1 - k], j0));
            for l in 0..CH {
                let (a0, a1, b0, b1) = (a0[l], a1[l], b0[l], b1[l]);
                m1[l] += c * (a0 + a1);
                m2[l] += c * (b0 + b1);
                xx[l] += c * (a0 * a0 + a1 * a1);
                yy[l] += c * (b0 * b0 + b1 * b1);
                xy[l] += c * (a0 * b0 + a1 * b1);
            }
        }
        let o = PAD + j0;
        store(vm1, o, m1.map(|m| (m + 128) >> 8));
        store(vm2, o, m2.map(|m| (m + 128) >> 8));
        store(vxxh, o, xx.map(|x| x >> 16));
        store(vxxl, o, xx.map(|x| x & 0xffff));
        store(vyyh, o, yy.map(|x| x >> 16));
        store(vyyl, o, yy.map(|x| x & 0xffff));
        store(vxyh, o, xy.map(|x| x >> 16));
        store(vxyl, o, xy.map(|x| x & 0xffff))
    });
}

/// Vertical pass of `vif_statistic_16` for one row. libvmaf sums `mu` in 32 bits (`<= 65536 *
/// 65535`) and the squares in 64 bits (`<= 65536 * 65535^2 < 2^48`); here each product
/// (`<= 65535^2 < 2^32`) is split into 16-bit halves summed in 32 bits (bounds as [`vsum`]),
/// recombined exactly in 64 bits before libvmaf's rounding shift. Outputs are cast as libvmaf
/// casts them (`mu` to 16 bits, squares to 32; neither loses anything: `mu <= 65535`, squares
/// `<= 65535^2`).
#[inline(always)]
fn vertical_16<const FW: usize>(
    f: &[u16; FW],
    ra: &[&[u16]; FW],
    da: &[&[u16]; FW],
    w: usize,
    mu: Shift,
    sq: Shift,
    s: &mut Scratch,
) {
    let half = FW / 2;
    let (mr, ms) = (mu.round as u32, mu.shift);
    let (sr, ss) = (sq.round, sq.shift);
    let [vm1, vm2, vxxh, vxxl, vyyh, vyyl, vxyh, vxyl] = &mut s.v;
    blocks!(w, 8, |j0, CH| {
        let m1 = vsum::<FW, CH>(f, ra, j0);
        let m2 = vsum::<FW, CH>(f, da, j0);
        let c = f[half] as u32;
        let (a, b) = (load::<CH>(ra[half], j0), load::<CH>(da[half], j0));
        let (mut xxh, mut xxl, mut yyh, mut yyl, mut xyh, mut xyl) = (
            [0u32; CH], [0u32; CH], [0u32; CH], [0u32; CH], [0u32; CH], [0u32; CH],
        );
        for l in 0..CH {
            let (pa, pb, pab) = (a[l] * a[l], b[l] * b[l], a[l] * b[l]);
            (xxh[l], xxl[l]) = (c * (pa >> 16), c * (pa & 0xffff));
            (yyh[l], yyl[l]) = (c * (pb >> 16), c * (pb & 0xffff));
            (xyh[l], xyl[l]) = (c * (pab >> 16), c * (pab & 0xffff));
        }
        for k in 0..half {
            let c = f[k] as u32;
            let (a0, a1) = (load::<CH>(ra[k], j0), load::<CH>(ra[FW - 1 - k], j0));
            let (b0, b1) = (load::<CH>(da[k], j0), load::<CH>(da[FW - 1 - k], j0));
            for l in 0..CH {
                let (a0, a1, b0, b1) = (a0[l], a1[l], b0[l], b1[l]);
                let (p0, p1) = (a0 * a0, a1 * a1);
                xxh[l] += c * ((p0 >> 16) + (p1 >> 16));
                xxl[l] += c * ((p0 & 0xffff) + (p1 & 0xffff));
                let (p0, p1) = (b0 * b0, b1 * b1);
                yyh[l] += c * ((p0 >> 16) + (p1 >> 16));
                yyl[l] += c * ((p0 & 0xffff) + (p1 & 0xffff));
                let (p0, p1) = (a0 * b0, a1 * b1);
                xyh[l] += c * ((p0 >> 16) + (p1 >> 16));
                xyl[l] += c * ((p0 & 0xffff) + (p1 & 0xffff));
            }
        }
        let o = PAD + j0;
        // m + round <= 65536 * 65535 + 32768 < 2^32.
        store(vm1, o, m1.map(|m| ((m + mr) >> ms) as u16 as u32));
        store(vm2, o, m2.map(|m| ((m + mr) >> ms) as u16 as u32));
        // (uint32_t)((accum + round) >> shift) of the recombined 64-bit sum, split again.
        for (h, l, vh, vl) in [
            (xxh, xxl, &mut *vxxh, &mut *vxxl),
            (yyh, yyl, &mut *vyyh, &mut *vyyl),
            (xyh, xyl, &mut *vxyh, &mut *vxyl),
        ] {
            let mut x = [0u32; CH];
            for q in 0..CH {
                x[q] = ((((h[q] as u64) << 16) + l[q] as u64 + sr) >> ss) as u32;
            }
            store(vh, o, x.map(|x| x >> 16));
            store(vl, o, x.map(|x| x & 0xffff));
        }
    });
}

/// Horizontal pass shared by both statistics (mirror the row ends, filter), then the sigmas of
/// each pixel of the row.
#[inline(always)]
fn horizontal<const FW: usize>(f: &[u16; FW], w: usize, s: &mut Scratch) {
    let half = FW / 2;
    let base = PAD - half;
    for (v, h) in s.v.iter_mut().zip(s.h.iter_mut()) {
        pad_row(v, w, half);
        hsum(f, &v[base..base + w + FW - 1], &mut h[..w]);
    }
    let [m1, m2, xxh, xxl, yyh, yyl, xyh, xyl] = &s.h;
    let (m1, m2) = (&m1[..w], &m2[..w]);
    let (xxh, xxl, yyh, yyl) = (&xxh[..w], &xxl[..w], &yyh[..w], &yyl[..w]);
    let (xyh, xyl) = (&xyh[..w], &xyl[..w]);
    let (s1, s2, s12) = (&mut s.s1[..w], &mut s.s2[..w], &mut s.s12[..w]);
    for j in 0..w {
        let (mu1, mu2) = (m1[j] as u64, m2[j] as u64);
        // mu <= 65536 * 65535, so mu^2 + 2^31 < 2^64.
        let mu1_sq = ((mu1 * mu1 + 2147483648) >> 32) as u32;
        let mu2_sq = ((mu2 * mu2 + 2147483648) >> 32) as u32;
        let mu1_mu2 = ((mu1 * mu2 + 2147483648) >> 32) as u32;
        // libvmaf: (uint32_t)((accum + 32768) >> 16) with accum = hi * 65536 + lo (64 bits);
        // lo + 32768 <= 65536 * 65535 + 32768 < 2^32; the wrapping add is libvmaf's cast.
        let xx_filt = xxh[j].wrapping_add((xxl[j] + 32768) >> 16);
        let yy_filt = yyh[j].wrapping_add((yyl[j] + 32768) >> 16);
        let xy_filt = xyh[j].wrapping_add((xyl[j] + 32768) >> 16);
        // libvmaf: (int32_t)(u32 - u32), wrapping.
        s1[j] = xx_filt.wrapping_sub(mu1_sq) as i32;
        s2[j] = (yy_filt.wrapping_sub(mu2_sq) as i32).max(0);
        s12[j] = xy_filt.wrapping_sub(mu1_mu2) as i32;
    }
}

/// The per-pixel part of `vif_statistic_8/_16` for one row of sigmas.
///
/// libvmaf branches per pixel; here a first, branch-free pass sums the "non-log" terms and
/// `accum_den_log` and packs the sigmas of the pixels that take the gain path
/// (`sigma1_sq >= sigma_nsq`, `sigma12 > 0`, `sigma2_sq > 0`) to the front of `s`; a second pass
/// does libvmaf's double arithmetic on those (vectorisable: no integer conversion wider than 32
/// bits), a third the 64-bit conversion and the logs. The sums are the same integers.
#[inline(always)]
fn accumulate_row(
    w: usize,
    s: &mut Scratch,
    egl: f64,
    table: &[u16; 65537],
    acc: &mut VifScaleAccum,
) {
    let (s1, s2, s12) = (&mut s.s1[..w], &mut s.s2[..w], &mut s.s12[..w]);
    let (mut num_log, mut den_log, mut num_non_log, mut den_non_log) = (0i64, 0i64, 0i64, 0i64);
    let mut n = 0;
    for j in 0..w {
        let (sigma1_sq, sigma2_sq, sigma12) = (s1[j], s2[j], s12[j]);
        let log = sigma1_sq >= SIGMA_NSQ;
        // The log of a pixel outside the log branch is taken of 2^17 + 2^17 and discarded.
        let arg = (SIGMA_NSQ + if log { sigma1_sq } else { SIGMA_NSQ }) as u32;
        let d = (log2_32(table, arg) - 2048 * 17) as i64;
        den_log += if log { d } else { 0 };
        num_non_log += if log { 0 } else { sigma2_sq as i64 };
        den_non_log += !log as i64;
        // Pack (n <= j: this overwrites entries already read).
        (s1[n], s2[n], s12[n]) = (sigma1_sq, sigma2_sq, sigma12);
        n += (log & (sigma12 > 0) & (sigma2_sq > 0)) as usize;
    }
    let (s1, s2, s12) = (&s1[..n], &s2[..n], &s12[..n]);
    let (numer1, prod) = (&mut s.numer1[..n], &mut s.prod[..n]);
    for j in 0..n {
        let (sigma1_sq, sigma2_sq, sigma12) = (s1[j], s2[j], s12[j]);
        // libvmaf: double g = sigma12 / (sigma1_sq + eps);
        let g = sigma12 as f64 / (sigma1_sq as f64 + GAIN_EPS);
        // int32_t sv_sq = sigma2_sq - g * sigma12;  (truncation toward zero; in range, as
        // 0 <= g * sigma12 and sigma2_sq < 2^31)
        let sv_sq = (sigma2_sq as f64 - g * sigma12 as f64) as i32;
        let sv_sq = sv_sq.max(0);
        // g = MIN(g, vif_enhn_gain_limit);
        let g = if g < egl { g } else { egl };
        // uint32_t numer1 = (sv_sq + sigma_nsq);
        numer1[j] = (sv_sq + SIGMA_NSQ) as u32;
        prod[j] = g * g * sigma1_sq as f64;
    }
    for j in 0..n {
        // int64_t numer1_tmp = (int64_t)((g * g * sigma1_sq)) + numer1;
        let numer1_tmp = prod[j] as i64 + numer1[j] as i64;
        num_log += (log2_64(table, numer1_tmp as u64) - log2_64(table, numer1[j] as u64)) as i64;
    }
    acc.num_log += num_log;
    acc.den_log += den_log;
    acc.num_non_log += num_non_log;
    acc.den_non_log += den_non_log;
}

/// One scale's statistic (`vif_statistic_8` or `vif_statistic_16`).
#[inline(always)]
fn statistic<const FW: usize>(
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Vertical,
    egl: f64,
    s: &mut Scratch,
) -> VifScaleAccum {
    let table = log2_table();
    let mut acc = VifScaleAccum::default();
    let w = r.w;
    for i in 0..r.h {
        let rr = r.taps::<FW>(i);
        let dr = d.taps::<FW>(i);
        match v {
            Vertical::Eight => vertical_8(f, &rr, &dr, w, s),
            Vertical::Sixteen { mu, sq } => vertical_16(f, &rr, &dr, w, mu, sq, s),
        }
        horizontal(f, w, s);
        accumulate_row(w, s, egl, table, &mut acc);
    }
    acc
}

/// `subsample_rd_8` / `subsample_rd_16`: filter `f` over `r` and `d` (vertical sums rounded by
/// `v` and cast to 16 bits, horizontal by `+ 32768 >> 16`), keep even rows and columns into
/// `out_r` / `out_d` (`w / 2 x h / 2`, compact). Only the kept rows are filtered.
#[inline(always)]
fn subsample<const FW: usize>(
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Shift,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    let (w, h) = (r.w, r.h);
    let (ow, oh) = (w / 2, h / 2);
    let half = FW / 2;
    let base = PAD - half;
    let (vr, vs) = (v.round as u32, v.shift);
    for oi in 0..oh {
        let i = 2 * oi;
        let [v_r, v_d, ..] = &mut s.v;
        let [h_r, h_d, ..] = &mut s.h;
        for (img, vv, hh) in [(r, v_r, h_r), (d, v_d, h_d)] {
            let rows = img.taps::<FW>(i);
            blocks!(w, 16, |j0, CH| {
                // subsample_rd_16 casts to uint16_t, subsample_rd_8 does not; the value fits
                // either way (<= 65535).
                let t = vsum::<FW, CH>(f, &rows, j0);
                store(vv, PAD + j0, t.map(|t| ((t + vr) >> vs) as u16 as u32))
            });
            pad_row(vv, w, half);
            hsum(f, &vv[base..base + w + FW - 1], &mut hh[..w]);
        }
        let (hr, hd) = (&s.h[0][..w], &s.h[1][..w]);
        let orow_r = &mut out_r[oi * ow..oi * ow + ow];
        let orow_d = &mut out_d[oi * ow..oi * ow + ow];
        for oj in 0..ow {
            orow_r[oj] = ((hr[2 * oj] + 32768) >> 16) as u16;
            orow_d[oj] = ((hd[2 * oj] + 32768) >> 16) as u16;
        }
    }
}

/// [`statistic`], or its AVX2 kernel when `fast` and the scale suits it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn statistic_any<const FW: usize>(
    fast: bool,
    wide: bool,
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Vertical,
    egl: f64,
    s: &mut Scratch,
) -> VifScaleAccum {
    #[cfg(target_arch = "x86_64")]
    if fast && avx2::fits(f, r.w) {
        // SAFETY: `fast` is true only in compute_avx2, which runs only on CPUs with AVX2, BMI1,
        // BMI2 and LZCNT (Isa::Avx2), the features avx2::statistic requires.
        return unsafe { avx2::statistic(f, r, d, v, egl, s, wide) };
    }
    let _ = (fast, wide);
    statistic(f, r, d, v, egl, s)
}

/// [`subsample`], or its AVX2 kernel when `fast` and the scale suits it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn subsample_any<const FW: usize>(
    fast: bool,
    wide: bool,
    f: &[u16; FW],
    r: Img<'_>,
    d: Img<'_>,
    v: Shift,
    s: &mut Scratch,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    #[cfg(target_arch = "x86_64")]
    if fast && avx2::fits(f, r.w) {
        // SAFETY: as in statistic_any (avx2::subsample requires AVX2 only).
        return unsafe { avx2::subsample(f, r, d, v, s, out_r, out_d, wide) };
    }
    let _ = (fast, wide);
    subsample(f, r, d, v, s, out_r, out_d)
}

/// Explicit AVX2 kernels of the statistic and the subsampling (filters whose taps all fit in
/// `i16`: scale 0 to 2; scale 3's centre tap 43728 does not, and that scale is tiny).
///
/// # How the sums are formed
/// Every filtered quantity is a sum `S = sum_k c[k] * x[k]` of 16-bit taps `c[k] <= 32767` and
/// 16-bit values `x[k] <= 65535` with `S < 2^32` (the filters sum to 65536). The values are
/// stored offset by `-32768` as `i16` and multiplied pairwise with `vpmaddwd` (two taps per
/// 32-bit lane): `S' = sum_k c[k] * (x[k] - 32768) = S - 32768 * 65536`. Each partial sum of
/// `S'` stays inside `i32` (`|S'| <= 32768 * 65536 = 2^31`, at most `2^31 - 1` upward since every
/// `x - 32768 <= 32767`; a partial sum is bounded by the same figure because its taps are a subset
/// of non-negative taps), and `S = S' + 2^31` is then recovered exactly in wrapping 32-bit
/// arithmetic. The squares are split into 16-bit halves exactly as in the portable code (8-bit
/// content: `a * a <= 65025` is kept whole in the vertical pass).
///
/// Vertical pass: rows `k` and `k + 1` are interleaved (`vpunpck{l,h}wd`) and each pair of taps
/// is one `vpmaddwd`; the in-lane order that the interleave creates is undone by the pack
/// (`vpackssdw`) that stores the results. Horizontal pass: a load at column `j - half + 2t` holds
/// the pairs `(x[j + 2m - half + 2t], x[j + 2m - half + 2t + 1])`, so nine `vpmaddwd` give the 17-tap
/// sums of the even output columns and nine more (from one column further) those of the odd
/// columns. The order of the pixels of a row does not matter to the per-row sums, so the
/// sigmas are stored even columns first.
#[cfg(target_arch = "x86_64")]
mod avx2;

/// Check what [`compute`] needs: equal geometry and depth, 8..=16 bits, at least
/// [`super::MIN_WIDTH`] x [`super::MIN_HEIGHT`], planes long enough for their stride, a valid gain limit.
pub fn check(r: &Plane<'_>, d: &Plane<'_>, p: &VifParams) -> Result<()> {
    super::check_pair(r, d)?;
    p.validate()
}

/// [`check`], then [`compute`].
pub fn try_compute(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> Result<VifAccum> {
    check(&r, &d, p)?;
    Ok(compute(r, d, p))
}

/// The VIF accumulators of one frame pair, as libvmaf 3.2.0's `integer_vif` extractor computes
/// them (plain C path).
///
/// # Panics
/// If the planes break what [`check`] checks (the engine checks first; [`try_compute`] returns
/// the error instead). Samples above `2^bpc - 1` do not panic but give meaningless results.
pub fn compute(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    compute_with(r, d, p, Isa::detected())
}

/// [`compute`] with the build of the kernels chosen by the caller (the parity tests run every
/// build the CPU supports; the results are the same integers).
///
/// # Panics
/// As [`compute`], and if this CPU cannot run `isa` ([`Isa::supported`]).
#[doc(hidden)]
pub fn compute_with(r: Plane<'_>, d: Plane<'_>, p: &VifParams, isa: Isa) -> VifAccum {
    if let Err(e) = check(&r, &d, p) {
        panic!("vif::compute: {e}");
    }
    assert!(
        isa.supported(),
        "vif::compute_with: {isa:?} is not supported by this CPU"
    );
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compute_avx2 only requires the CPU features of Isa::Avx2, checked above.
        Isa::Avx2 => unsafe { compute_avx2(r, d, p) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compute_avx512 only requires the CPU features of Isa::Avx512, checked above.
        Isa::Avx512 => unsafe { compute_avx512(r, d, p) },
        _ => compute_inner(r, d, p, false, false),
    }
}

/// [`compute_inner`] compiled for AVX2 (the integer row loops vectorise over 8 lanes). Floating
/// point is unaffected: AVX2 does not include FMA, and Rust never contracts `a * b + c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt")]
unsafe fn compute_avx2(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    compute_inner(r, d, p, true, false)
}

/// [`compute_inner`] compiled for AVX-512 (F, BW, VL), with the 512-bit filter passes of the
/// explicit kernels. Floating point is unaffected: `avx512f` implies FMA in Rust, but rustc
/// never contracts `a * b + c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,avx512f,avx512bw,avx512vl")]
unsafe fn compute_avx512(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    compute_inner(r, d, p, true, true)
}

/// The whole computation, inlined into each instruction-set variant.
///
/// `fast`: use the explicit AVX2 kernels (only from [`compute_avx2`] and [`compute_avx512`]);
/// `wide`: with their 512-bit filter passes (only from [`compute_avx512`]).
#[inline(always)]
fn compute_inner(r: Plane<'_>, d: Plane<'_>, p: &VifParams, fast: bool, wide: bool) -> VifAccum {
    let (w, h, bpc) = (r.width, r.height, r.bpc);
    let egl = p.enhn_gain_limit;
    // The buffers of the last call on this thread, reused when the width is the same (taken out
    // of the cell for the call, so a nested call would simply allocate its own). Every element
    // that is read has been written earlier in the same call (the scales already share them).
    let Workspace {
        mut s,
        img: [mut r1, mut d1, mut r2, mut d2, mut r3, mut d3],
        ..
    } = match WORKSPACE.with(|c| c.take()) {
        Some(ws) if ws.w == w => *ws,
        _ => Workspace {
            w,
            s: Scratch::new(w),
            img: Default::default(),
        },
    };
    let mut acc = VifAccum::default();

    let (r0, d0) = (Img::of(&r), Img::of(&d));
    let b = bpc as u32;

    // Scale 0: vif_statistic_8 for 8-bit content, vif_statistic_16 otherwise (vertical mu shift
    // bpc, square shift 2 * (bpc - 8)).
    acc.scales[0] = statistic_any(
        fast,
        wide,
        &FILTER_0,
        r0,
        d0,
        if bpc == 8 {
            Vertical::Eight
        } else {
            Vertical::Sixteen {
                mu: Shift::new(b),
                sq: Shift::new(2 * (b - 8)),
            }
        },
        egl,
        &mut s,
    );

    // Scales 1..3 images, compact.
    let (w1, h1) = (w / 2, h / 2);
    let (w2, h2) = (w1 / 2, h1 / 2);
    let (w3, h3) = (w2 / 2, h2 / 2);
    for (v, n) in [(&mut r1, w1 * h1), (&mut d1, w1 * h1)]
        .into_iter()
        .chain([(&mut r2, w2 * h2), (&mut d2, w2 * h2)])
        .chain([(&mut r3, w3 * h3), (&mut d3, w3 * h3)])
    {
        super::resize_scratch(v, n, 0, "the VIF scale planes");
    }
    let cimg = Img::compact;
    let s16 = Shift::new(16);
    let v16 = Vertical::Sixteen { mu: s16, sq: s16 };

    // subsample_rd_8 (8-bit) / subsample_rd_16 at scale 0: vertical shift bpc.
    subsample_any(
        fast,
        wide,
        &FILTER_1,
        r0,
        d0,
        Shift::new(b),
        &mut s,
        &mut r1,
        &mut d1,
    );
    acc.scales[1] = statistic_any(
        fast,
        wide,
        &FILTER_1,
        cimg(&r1, w1, h1),
        cimg(&d1, w1, h1),
        v16,
        egl,
        &mut s,
    );
    subsample_any(
        fast,
        wide,
        &FILTER_2,
        cimg(&r1, w1, h1),
        cimg(&d1, w1, h1),
        s16,
        &mut s,
        &mut r2,
        &mut d2,
    );
    acc.scales[2] = statistic_any(
        fast,
        wide,
        &FILTER_2,
        cimg(&r2, w2, h2),
        cimg(&d2, w2, h2),
        v16,
        egl,
        &mut s,
    );
    subsample_any(
        fast,
        wide,
        &FILTER_3,
        cimg(&r2, w2, h2),
        cimg(&d2, w2, h2),
        s16,
        &mut s,
        &mut r3,
        &mut d3,
    );
    acc.scales[3] = statistic_any(
        fast,
        wide,
        &FILTER_3,
        cimg(&r3, w3, h3),
        cimg(&d3, w3, h3),
        v16,
        egl,
        &mut s,
    );
    WORKSPACE.with(|c| {
        c.set(Some(Box::new(Workspace {
            w,
            s,
            img: [r1, d1, r2, d2, r3, d3],
        })))
    });
    acc
}

/// The buffers of one [`compute`] at width `w`: the scratch rows and the images of scales 1..3
/// (reference, distorted, per scale).
struct Workspace {
    w: usize,
    s: Scratch,
    img: [Vec<u16>; 6],
}

thread_local! {
    /// The [`Workspace`] of the last [`compute`] on this thread (about 3 MB at 1080p).
    static WORKSPACE: std::cell::Cell<Option<Box<Workspace>>> =
        const { std::cell::Cell::new(None) };
}

thread_local! {
    /// Set by [`compute_with_avx512_no_vnni`] for the duration of its call.
    static NO_VNNI: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`compute_with`] with [`Isa::Avx512`], but its statistic kernel built without AVX-512 VNNI
/// (`vpmaddwd` then `vpaddd` instead of `vpdpwssd`), which a CPU with VNNI never runs otherwise:
/// for the parity tests.
///
/// # Panics
/// As [`compute_with`].
#[doc(hidden)]
pub fn compute_with_avx512_no_vnni(r: Plane<'_>, d: Plane<'_>, p: &VifParams) -> VifAccum {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            NO_VNNI.with(|c| c.set(false));
        }
    }
    NO_VNNI.with(|c| c.set(true));
    let _reset = Reset;
    compute_with(r, d, p, Isa::Avx512)
}

impl VifScaleAccum {
    /// libvmaf's `num[0]` and `den[0]`: double arithmetic, stored as float.
    pub fn num_den(&self) -> (f32, f32) {
        let num = self.num_log as f64 / 2048.0
            + (self.den_non_log as f64 - (self.num_non_log as f64 / 16384.0) / 65025.0);
        let den = self.den_log as f64 / 2048.0 + self.den_non_log as f64;
        (num as f32, den as f32)
    }

    /// `integer_vif_scaleN`: libvmaf's `num / den` in float, widened to double.
    pub fn score(&self) -> f64 {
        let (num, den) = self.num_den();
        (num / den) as f64
    }
}

impl VifAccum {
    /// `integer_vif_scale0..3` (libvmaf's `VMAF_integer_feature_vif_scaleN_score`).
    pub fn scores(&self) -> [f64; 4] {
        self.scales.map(|s| s.score())
    }
}

/// A literal, scalar transcription of libvmaf 3.2.0's C loops (`extract`, `subsample_rd_8/16`,
/// `decimate_and_pad`, `pad_top_and_bottom`, `vif_statistic_8/16`): frame buffers with
/// mirrored rows above and below, temporary rows with mirrored columns, the C types with C's
/// wrap-around for unsigned sums, and the per-pixel branches. It shares nothing with the
/// optimised code but the filter constants and the log table, and checks it where there
/// are no goldens (other depths, sizes, strides, synthetic extremes).
#[cfg(test)]
mod literal;

#[cfg(test)]
mod tests;
