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
//! # Exactness
//!
//! Every integer step is libvmaf's, with its types: 32-bit sums where libvmaf keeps 32 bits (they
//! cannot overflow, the bound is written beside each), 64-bit sums elsewhere, the same rounding
//! constants and shifts, the same wrap-around casts (`(int32_t)(u32 - u32)`), and the same double
//! arithmetic for the gain (`g = sigma12 / (sigma1_sq + 65536e-10)` in f64, truncating casts).
//! Only the order in which exact integer sums are added differs (filters are folded on their
//! symmetry, which changes nothing: each sum is exact in its type).

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::features::{MIN_HEIGHT, MIN_WIDTH};
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
/// any content, any `enhn_gain_limit`; see [`bounds`] for the per-pixel figures and
/// `tests::accumulator_bounds_fit` for the check that they fit:
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VifScaleAccum {
    /// Sum over "log" pixels with `sigma12 > 0 && sigma2_sq > 0` of
    /// `log2_64(g^2 sigma1_sq + sv_sq + 2^17) - log2_64(sv_sq + 2^17)` (Q11 base-2 logs).
    /// Each term is in `0..=bounds::NUM_LOG_PER_PIXEL` (27 219): the first log is at most
    /// 2048 * log2(2^33 + 2^32) and the second at least 2048 * 17, rounded by the table.
    /// Total in `0..=3.62e12` (i64 max 9.2e18).
    pub num_log: i64,
    /// Sum over "log" pixels (`sigma1_sq >= 2^17`) of `log2_32(sigma1_sq + 2^17) - 17 * 2048`.
    /// Each term is in `1..=bounds::DEN_LOG_PER_PIXEL` (26 625: `sigma1_sq < 2^30 + 2^20`).
    /// Total in `0..=3.54e12`.
    pub den_log: i64,
    /// Sum over "non-log" pixels (`sigma1_sq < 2^17`) of `max(sigma2_sq, 0)` (Q16 variance of
    /// the distorted image normalised to 8 bits). Each term is in
    /// `0..=bounds::SIGMA_SQ_MAX` (2^30 + 2^20; the variance of samples in 0..=65535 is at most
    /// 65535^2 / 4 < 2^30, plus rounding). Total in `0..=1.43e17` (i64 max 9.2e18).
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
pub mod bounds {
    /// Pixels of a 15360x8640 frame (the largest frame the bounds are written for).
    pub const PIXELS_16K: i64 = 15360 * 8640;
    /// Upper bound of any `sigma1_sq`, `sigma2_sq` (Q16, normalised to 8 bits): 2^30 + 2^20.
    pub const SIGMA_SQ_MAX: i64 = (1 << 30) + (1 << 20);
    /// Upper bound of one `accum_den_log` term: `2048 * log2(2^17 + SIGMA_SQ_MAX) - 2048 * 17`
    /// rounded up (table entries are `round(2048 * log2f(i))`, so at most 1 above).
    pub const DEN_LOG_PER_PIXEL: i64 = 26_625;
    /// Upper bound of one `accum_num_log` term: the numerator `g^2 sigma1_sq + sv_sq + 2^17` is
    /// below `sigma12^2 / sigma1_sq + 2^31 < 2^33`, so its log is below 2048 * 33 + 1; the
    /// denominator's log is at least 2048 * 17. 2048 * 16 + 1 = 32 769 bounds it (measured
    /// worst: far lower).
    pub const NUM_LOG_PER_PIXEL: i64 = 2048 * 16 + 1;
}

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

/// Scratch rows of one call, allocated once for the widest scale.
struct Scratch {
    /// Vertical pass outputs, each `w + 2 * 8` long (8 mirrored columns on each side).
    mu1: Vec<u32>,
    mu2: Vec<u32>,
    xx: Vec<u32>,
    yy: Vec<u32>,
    xy: Vec<u32>,
    /// Per-pixel sigmas of one row.
    s1: Vec<i32>,
    s2: Vec<i32>,
    s12: Vec<i32>,
}

const PAD: usize = 8;

impl Scratch {
    fn new(w: usize) -> Scratch {
        let n = w + 2 * PAD;
        Scratch {
            mu1: vec![0; n],
            mu2: vec![0; n],
            xx: vec![0; n],
            yy: vec![0; n],
            xy: vec![0; n],
            s1: vec![0; w],
            s2: vec![0; w],
            s12: vec![0; w],
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

/// Vertical pass of `vif_statistic_8` (8-bit samples, scale 0): every sum fits 32 bits
/// (`65536 * 255^2 < 2^32`), `mu` is rounded by `>> 8`, the squares are kept unshifted.
#[inline(always)]
fn vertical_stat_8<const FW: usize>(
    f: &[u16; FW],
    rr: [&[u16]; FW],
    dr: [&[u16]; FW],
    w: usize,
    s: &mut Scratch,
) {
    let (mu1, mu2) = (&mut s.mu1[PAD..PAD + w], &mut s.mu2[PAD..PAD + w]);
    let (xx, yy, xy) = (
        &mut s.xx[PAD..PAD + w],
        &mut s.yy[PAD..PAD + w],
        &mut s.xy[PAD..PAD + w],
    );
    let rr = rr.map(|r| &r[..w]);
    let dr = dr.map(|r| &r[..w]);
    for j in 0..w {
        // accum_mu <= 65536 * 255; accum_ref etc. <= 65536 * 255^2 < 2^32.
        let (mut m1, mut m2, mut sxx, mut syy, mut sxy) = (0u32, 0u32, 0u32, 0u32, 0u32);
        for k in 0..FW {
            let c = f[k] as u32;
            let a = rr[k][j] as u32;
            let b = dr[k][j] as u32;
            let ca = c * a;
            let cb = c * b;
            m1 += ca;
            m2 += cb;
            sxx += ca * a;
            syy += cb * b;
            sxy += ca * b;
        }
        mu1[j] = (m1 + 128) >> 8;
        mu2[j] = (m2 + 128) >> 8;
        xx[j] = sxx;
        yy[j] = syy;
        xy[j] = sxy;
    }
}

/// Vertical pass of `vif_statistic_16`: `mu` sums in 32 bits (`<= 65536 * 65535 + 32768 <
/// 2^32`), square sums in 64 bits (`<= 65536 * 65535^2 < 2^48`), both rounded and shifted,
/// `mu` truncated to 16 bits and the squares to 32 bits as libvmaf casts them (no value is
/// lost: `mu <= 65535`, squares `<= 65535^2`).
#[inline(always)]
fn vertical_stat_16<const FW: usize>(
    f: &[u16; FW],
    rr: [&[u16]; FW],
    dr: [&[u16]; FW],
    w: usize,
    mu_shift: Shift,
    sq_shift: Shift,
    s: &mut Scratch,
) {
    let (mu1, mu2) = (&mut s.mu1[PAD..PAD + w], &mut s.mu2[PAD..PAD + w]);
    let (xx, yy, xy) = (
        &mut s.xx[PAD..PAD + w],
        &mut s.yy[PAD..PAD + w],
        &mut s.xy[PAD..PAD + w],
    );
    let rr = rr.map(|r| &r[..w]);
    let dr = dr.map(|r| &r[..w]);
    let (mr, ms) = (mu_shift.round as u32, mu_shift.shift);
    let (sr, ss) = (sq_shift.round, sq_shift.shift);
    for j in 0..w {
        let (mut m1, mut m2, mut sxx, mut syy, mut sxy) = (0u32, 0u32, 0u64, 0u64, 0u64);
        for k in 0..FW {
            let c = f[k] as u32;
            let a = rr[k][j] as u32;
            let b = dr[k][j] as u32;
            let ca = c * a;
            let cb = c * b;
            m1 += ca;
            m2 += cb;
            sxx += ca as u64 * a as u64;
            syy += cb as u64 * b as u64;
            sxy += ca as u64 * b as u64;
        }
        mu1[j] = ((m1 + mr) >> ms) as u16 as u32;
        mu2[j] = ((m2 + mr) >> ms) as u16 as u32;
        xx[j] = ((sxx + sr) >> ss) as u32;
        yy[j] = ((syy + sr) >> ss) as u32;
        xy[j] = ((sxy + sr) >> ss) as u32;
    }
}

/// Horizontal pass shared by both statistics, then the sigmas of each pixel of the row.
#[inline(always)]
fn horizontal_stat<const FW: usize>(f: &[u16; FW], w: usize, s: &mut Scratch) {
    let half = FW / 2;
    for row in [&mut s.mu1, &mut s.mu2, &mut s.xx, &mut s.yy, &mut s.xy] {
        pad_row(row, w, half);
    }
    let base = PAD - half;
    let mu1 = &s.mu1[base..base + w + FW - 1];
    let mu2 = &s.mu2[base..base + w + FW - 1];
    let xx = &s.xx[base..base + w + FW - 1];
    let yy = &s.yy[base..base + w + FW - 1];
    let xy = &s.xy[base..base + w + FW - 1];
    let (s1, s2, s12) = (&mut s.s1[..w], &mut s.s2[..w], &mut s.s12[..w]);
    for j in 0..w {
        // accum_mu <= 65536 * 65535 < 2^32; accum_ref etc. <= 65536 * (2^32 - 1) < 2^48.
        let (mut m1, mut m2, mut sxx, mut syy, mut sxy) = (0u32, 0u32, 0u64, 0u64, 0u64);
        for k in 0..FW {
            let c = f[k] as u32;
            m1 += c * mu1[j + k];
            m2 += c * mu2[j + k];
            sxx += c as u64 * xx[j + k] as u64;
            syy += c as u64 * yy[j + k] as u64;
            sxy += c as u64 * xy[j + k] as u64;
        }
        // (2^32 - 65536)^2 + 2^31 < 2^64.
        let mu1_sq = ((m1 as u64 * m1 as u64 + 2147483648) >> 32) as u32;
        let mu2_sq = ((m2 as u64 * m2 as u64 + 2147483648) >> 32) as u32;
        let mu1_mu2 = ((m1 as u64 * m2 as u64 + 2147483648) >> 32) as u32;
        let xx_filt = ((sxx + 32768) >> 16) as u32;
        let yy_filt = ((syy + 32768) >> 16) as u32;
        let xy_filt = ((sxy + 32768) >> 16) as u32;
        // libvmaf: (int32_t)(u32 - u32), wrapping.
        s1[j] = xx_filt.wrapping_sub(mu1_sq) as i32;
        s2[j] = (yy_filt.wrapping_sub(mu2_sq) as i32).max(0);
        s12[j] = xy_filt.wrapping_sub(mu1_mu2) as i32;
    }
}

/// The per-pixel part of `vif_statistic_8/_16` for one row of sigmas.
#[inline(always)]
fn accumulate_row(
    s1: &[i32],
    s2: &[i32],
    s12: &[i32],
    egl: f64,
    table: &[u16; 65537],
    acc: &mut VifScaleAccum,
) {
    let (mut num_log, mut den_log, mut num_non_log, mut den_non_log) = (0i64, 0i64, 0i64, 0i64);
    for ((&sigma1_sq, &sigma2_sq), &sigma12) in s1.iter().zip(s2).zip(s12) {
        if sigma1_sq >= SIGMA_NSQ {
            den_log += (log2_32(table, (SIGMA_NSQ + sigma1_sq) as u32) - 2048 * 17) as i64;
            if sigma12 > 0 && sigma2_sq > 0 {
                // libvmaf: double g = sigma12 / (sigma1_sq + eps);
                let g = sigma12 as f64 / (sigma1_sq as f64 + GAIN_EPS);
                // int32_t sv_sq = sigma2_sq - g * sigma12;  (truncation toward zero)
                let sv_sq = (sigma2_sq as f64 - g * sigma12 as f64) as i32;
                let sv_sq = sv_sq.max(0);
                // g = MIN(g, vif_enhn_gain_limit);
                let g = if g < egl { g } else { egl };
                let numer1 = (sv_sq + SIGMA_NSQ) as u32;
                let numer1_tmp = (g * g * sigma1_sq as f64) as i64 + numer1 as i64;
                num_log +=
                    (log2_64(table, numer1_tmp as u64) - log2_64(table, numer1 as u64)) as i64;
            }
        } else {
            num_non_log += sigma2_sq as i64;
            den_non_log += 1;
        }
    }
    acc.num_log += num_log;
    acc.den_log += den_log;
    acc.num_non_log += num_non_log;
    acc.den_non_log += den_non_log;
}

/// One scale's statistic (`vif_statistic_8` when `eight_bit`, else `vif_statistic_16`).
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
            Vertical::Eight => vertical_stat_8(f, rr, dr, w, s),
            Vertical::Sixteen { mu, sq } => vertical_stat_16(f, rr, dr, w, mu, sq, s),
        }
        horizontal_stat(f, w, s);
        accumulate_row(&s.s1[..w], &s.s2[..w], &s.s12[..w], egl, table, &mut acc);
    }
    acc
}

/// `subsample_rd_8` / `subsample_rd_16`: filter `f` over `r` and `d` (vertical sums rounded by
/// `v`, horizontal by `+ 32768 >> 16`), keep even rows and columns into `out_r`/`out_d`
/// (`w / 2 x h / 2`, compact). Only the kept rows and columns are computed.
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
    let (vr, vs) = (v.round as u32, v.shift);
    for oi in 0..oh {
        let i = 2 * oi;
        let rr = r.taps::<FW>(i).map(|x| &x[..w]);
        let dr = d.taps::<FW>(i).map(|x| &x[..w]);
        {
            let tr = &mut s.mu1[PAD..PAD + w];
            let td = &mut s.mu2[PAD..PAD + w];
            for j in 0..w {
                // <= 65536 * 65535 + 32768 < 2^32.
                let (mut ar, mut ad) = (0u32, 0u32);
                for k in 0..FW {
                    let c = f[k] as u32;
                    ar += c * rr[k][j] as u32;
                    ad += c * dr[k][j] as u32;
                }
                // subsample_rd_16 casts to uint16_t, subsample_rd_8 does not; the value fits
                // either way (<= 65535).
                tr[j] = ((ar + vr) >> vs) as u16 as u32;
                td[j] = ((ad + vr) >> vs) as u16 as u32;
            }
        }
        pad_row(&mut s.mu1, w, half);
        pad_row(&mut s.mu2, w, half);
        let base = PAD - half;
        let tr = &s.mu1[base..base + w + FW - 1];
        let td = &s.mu2[base..base + w + FW - 1];
        let orow_r = &mut out_r[oi * ow..oi * ow + ow];
        let orow_d = &mut out_d[oi * ow..oi * ow + ow];
        for oj in 0..ow {
            let j = 2 * oj;
            let (mut ar, mut ad) = (0u32, 0u32);
            for k in 0..FW {
                let c = f[k] as u32;
                ar += c * tr[j + k];
                ad += c * td[j + k];
            }
            orow_r[oj] = ((ar + 32768) >> 16) as u16;
            orow_d[oj] = ((ad + 32768) >> 16) as u16;
        }
    }
}

/// Check what [`compute`] needs: equal geometry and depth, 8..=16 bits, at least
/// [`MIN_WIDTH`] x [`MIN_HEIGHT`], planes long enough for their stride, a valid gain limit.
pub fn check(r: &Plane<'_>, d: &Plane<'_>, p: &VifParams) -> Result<()> {
    if !(8..=16).contains(&r.bpc) {
        return Err(Error::BitDepth(r.bpc));
    }
    if (r.width, r.height, r.bpc) != (d.width, d.height, d.bpc) {
        return Err(Error::Mismatch(format!(
            "reference {}x{} at {} bits, distorted {}x{} at {} bits",
            r.width, r.height, r.bpc, d.width, d.height, d.bpc
        )));
    }
    if r.width < MIN_WIDTH || r.height < MIN_HEIGHT {
        return Err(Error::TooSmall {
            width: r.width,
            height: r.height,
            min_width: MIN_WIDTH,
            min_height: MIN_HEIGHT,
        });
    }
    for (what, pl) in [("reference", r), ("distorted", d)] {
        if pl.stride < pl.width || pl.data.len() < pl.stride * (pl.height - 1) + pl.width {
            return Err(Error::Geometry(format!(
                "{what} plane of {} samples with stride {} is too small for {}x{}",
                pl.data.len(),
                pl.stride,
                pl.width,
                pl.height
            )));
        }
    }
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
    let (w, h, bpc) = (r.width, r.height, r.bpc);
    assert!(
        (8..=16).contains(&bpc) && (w, h, bpc) == (d.width, d.height, d.bpc),
        "vif::compute: planes {}x{}@{} and {}x{}@{} (use vif::check first)",
        w,
        h,
        bpc,
        d.width,
        d.height,
        d.bpc
    );
    assert!(
        w >= MIN_WIDTH && h >= MIN_HEIGHT,
        "vif::compute: {w}x{h} is below the minimum"
    );
    let egl = p.enhn_gain_limit;
    let mut s = Scratch::new(w);
    let mut acc = VifAccum::default();

    let (r0, d0) = (Img::of(&r), Img::of(&d));
    let b = bpc as u32;

    // Scale 0: vif_statistic_8 for 8-bit content, vif_statistic_16 otherwise (vertical mu shift
    // bpc, square shift 2 * (bpc - 8)).
    acc.scales[0] = statistic(
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
    let mut r1 = vec![0u16; w1 * h1];
    let mut d1 = vec![0u16; w1 * h1];
    let mut r2 = vec![0u16; w2 * h2];
    let mut d2 = vec![0u16; w2 * h2];
    let mut r3 = vec![0u16; w3 * h3];
    let mut d3 = vec![0u16; w3 * h3];
    let cimg = Img::compact;
    let s16 = Shift::new(16);
    let v16 = Vertical::Sixteen { mu: s16, sq: s16 };

    // subsample_rd_8 (8-bit) / subsample_rd_16 at scale 0: vertical shift bpc.
    subsample(&FILTER_1, r0, d0, Shift::new(b), &mut s, &mut r1, &mut d1);
    acc.scales[1] = statistic(
        &FILTER_1,
        cimg(&r1, w1, h1),
        cimg(&d1, w1, h1),
        v16,
        egl,
        &mut s,
    );
    subsample(
        &FILTER_2,
        cimg(&r1, w1, h1),
        cimg(&d1, w1, h1),
        s16,
        &mut s,
        &mut r2,
        &mut d2,
    );
    acc.scales[2] = statistic(
        &FILTER_2,
        cimg(&r2, w2, h2),
        cimg(&d2, w2, h2),
        v16,
        egl,
        &mut s,
    );
    subsample(
        &FILTER_3,
        cimg(&r2, w2, h2),
        cimg(&d2, w2, h2),
        s16,
        &mut s,
        &mut r3,
        &mut d3,
    );
    acc.scales[3] = statistic(
        &FILTER_3,
        cimg(&r3, w3, h3),
        cimg(&d3, w3, h3),
        v16,
        egl,
        &mut s,
    );
    acc
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
