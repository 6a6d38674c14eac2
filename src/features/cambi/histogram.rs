use super::recip::RECIP;
use super::{CONTRAST_WEIGHTS, CScratch, Lut, ScaleStats, grow, units};

/// Samples per chunk of the row scans (whole chunks are compared as fixed-size arrays).
const CHUNK: usize = 32;

/// Lanes of the histogram updates: a run is added in aligned blocks of this many columns.
pub(super) const LANES: usize = 16;

/// Columns of margin on each side of a histogram row, so that the blocks covering a run's
/// reach (`pad` <= 32 columns beyond it, rounded out to whole blocks) stay inside the row.
pub(super) const MARGIN: usize = 48;

/// The histograms of one scale: `rows` rows of counts, column `x` of row `r` at
/// `r * stride + MARGIN + x`. The margins count as if the window went on past the frame edge;
/// they are never read. Only the rows written since the last [`Hist::reset`] are non-zero;
/// `reset` zeroes just those.
#[derive(Default)]
pub(super) struct Hist {
    counts: Vec<i16>,
    stride: usize,
    /// Every row written since the last reset (start, length).
    dirty: Vec<(usize, usize)>,
    /// Whether row `r` (at the current stride) is in `dirty`.
    is_dirty: Vec<bool>,
}

impl Hist {
    /// All counts zero, `rows` rows for `w` columns.
    fn reset(&mut self, rows: usize, w: usize) {
        for &(start, len) in &self.dirty {
            self.counts[start..start + len].fill(0);
        }
        self.dirty.clear();
        self.stride = (w + 2 * MARGIN).next_multiple_of(LANES);
        if self.counts.len() < rows * self.stride {
            self.counts.resize(rows * self.stride, 0);
        }
        self.is_dirty.clear();
        self.is_dirty.resize(rows, false);
    }

    /// Row `r` (with its margins) for writing.
    #[inline(always)]
    fn row(&mut self, r: usize) -> &mut [i16] {
        let stride = self.stride;
        if !self.is_dirty[r] {
            self.is_dirty[r] = true;
            self.dirty.push((r * stride, stride));
        }
        &mut self.counts[r * stride..(r + 1) * stride]
    }
}

/// A run of equal changes of one histogram row, in consecutive columns `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Run {
    /// Histogram row + 1; 0 for no run.
    code: u16,
    /// +1 (pixels entering the window) or -1 (leaving it).
    delta: i16,
    start: u32,
    end: u32,
}

impl Run {
    const NONE: Run = Run {
        code: 0,
        delta: 0,
        start: 0,
        end: 0,
    };

    /// Extend the run by the change of `code` at column `j`, or close it (into `runs`) and start
    /// anew.
    #[inline(always)]
    fn push(&mut self, code: u16, j: u32, delta: i16, runs: &mut Vec<Run>) {
        if self.code == code && self.end + 1 == j {
            self.end = j;
        } else {
            if self.code != 0 {
                runs.push(*self);
            }
            *self = Run {
                code,
                delta,
                start: j,
                end: j,
            };
        }
    }

    /// Add `delta` times the run's box filter to its histogram row: column `x` changes by
    /// `delta` times the number of run columns within `pad` of `x`, `min(x - (start - pad) + 1,
    /// run length, window, (end + pad) - x + 1)`. The row's counts stay within
    /// `0..=ws * ws + ws` while a step's runs are applied one by one (every decrement is of a
    /// pixel counted, every increment of a pixel of the entering row), and end as the exact
    /// counts of the new window (at most `ws * ws` <= 4225).
    #[inline(always)]
    fn apply(&self, hist: &mut Hist, pad: usize) {
        const IOTA: [i16; LANES] = {
            let mut a = [0i16; LANES];
            let mut t = 0;
            while t < LANES {
                a[t] = t as i16;
                t += 1;
            }
            a
        };
        let row = hist.row(self.code as usize - 1);
        let (j0, j1) = (self.start as usize, self.end as usize);
        // Storage columns of the reach, rounded out to whole blocks (inside the row: MARGIN
        // >= pad + LANES - 1).
        let b0 = (j0 + MARGIN - pad) / LANES;
        let b1 = (j1 + MARGIN + pad) / LANES;
        // Lane t of block b is column x = b * LANES + t - MARGIN; its change is
        // max(0, min(x - (j0 - pad) + 1, plateau, (j1 + pad) - x + 1)). Columns are below
        // MAX_DIMENSION and pad at most 32, so all of this fits i16.
        let plateau = (j1 - j0 + 1).min(2 * pad + 1) as i16;
        let mut up = (b0 * LANES + pad + 1) as i16 - (j0 + MARGIN) as i16;
        let mut down = (j1 + MARGIN + pad + 1) as i16 - (b0 * LANES) as i16;
        let delta = self.delta;
        let (blocks, _) = row.as_chunks_mut::<LANES>();
        for blk in &mut blocks[b0..=b1] {
            for t in 0..LANES {
                let cover = (up + IOTA[t]).min(plateau).min(down - IOTA[t]).max(0);
                blk[t] += delta * cover;
            }
            up += LANES as i16;
            down -= LANES as i16;
        }
    }
}

/// The changes of a column whose leaving code `a` and entering code `b` differ.
#[inline(always)]
fn column(sub: &mut Run, add: &mut Run, j: usize, a: u16, b: u16, runs: &mut Vec<Run>) {
    if a != 0 {
        sub.push(a, j as u32, -1, runs);
    }
    if b != 0 {
        add.push(b, j as u32, 1, runs);
    }
}

/// Move the window's histograms by one row: `leave` holds the codes of the row leaving the
/// window, `enter` those of the row entering it (an all-zero row stands for none). A code is 0
/// for a pixel that does not count, else its histogram row + 1. A column whose two codes are
/// equal changes nothing (libvmaf's `uh_slide` skips it too); the other changes are gathered
/// into runs of one row and sign in consecutive columns (`runs`), each applied as one box
/// filter: a run of `n` columns costs `n + ws` additions instead of libvmaf's `n * ws`, for the
/// same counts.
#[inline(always)]
fn step(hist: &mut Hist, w: usize, pad: usize, leave: &[u16], enter: &[u16], runs: &mut Vec<Run>) {
    runs.clear();
    let mut sub = Run::NONE;
    let mut add = Run::NONE;
    let (lc, lr) = leave[..w].as_chunks::<CHUNK>();
    let (ec, er) = enter[..w].as_chunks::<CHUNK>();
    for (k, (l, e)) in lc.iter().zip(ec).enumerate() {
        if l != e {
            for t in 0..CHUNK {
                if l[t] != e[t] {
                    column(&mut sub, &mut add, k * CHUNK + t, l[t], e[t], runs);
                }
            }
        }
    }
    let j0 = lc.len() * CHUNK;
    for (t, (&a, &b)) in lr.iter().zip(er).enumerate() {
        if a != b {
            column(&mut sub, &mut add, j0 + t, a, b, runs);
        }
    }
    for r in [sub, add] {
        if r.code != 0 {
            runs.push(r);
        }
    }
    for r in runs.iter() {
        r.apply(hist, pad);
    }
}

/// cambi.c `calculate_c_values` for one scale: the c-value of every pixel, recorded only when
/// non-zero (`s.nz_val`, with its index `row * w + col` in `s.nz_idx`); the code plane and the
/// histograms live in `s`.
#[inline(always)]
pub(super) fn c_values(
    img: &[u16],
    mask: &[u8],
    w: usize,
    h: usize,
    pad: usize,
    lut: &Lut,
    s: &mut CScratch,
) -> ScaleStats {
    let CScratch {
        code,
        hist,
        zeros,
        runs,
        nz_val,
        nz_idx,
    } = s;
    nz_val.clear();
    nz_idx.clear();
    grow(code, w * h);
    let code = &mut code[..w * h];
    if lut.len == 0 {
        code.fill(0);
    } else {
        // code = v - lo + nd + 1 for a masked v in lo..lo + len, else 0.
        let lo = lut.lo as u16;
        let span = (lut.len - 1) as u16;
        let off = (lut.num_diffs + 1) as u16;
        let code_of = |v: u16, m: u8| {
            let x = v.wrapping_sub(lo);
            if (m != 0) & (x <= span) { x + off } else { 0 }
        };
        let (cc, cr) = code.as_chunks_mut::<CHUNK>();
        let (ic, ir) = img.as_chunks::<CHUNK>();
        let (mc, mr) = mask.as_chunks::<CHUNK>();
        for ((c, i), m) in cc.iter_mut().zip(ic).zip(mc) {
            for t in 0..CHUNK {
                c[t] = code_of(i[t], m[t]);
            }
        }
        for ((c, &v), &m) in cr.iter_mut().zip(ir).zip(mr) {
            *c = code_of(v, m);
        }
    }
    let code = &code[..];
    hist.reset(lut.rows, w);
    // Never written: all zero.
    grow(zeros, w);
    let zeros = &zeros[..w];
    let row = |r: usize| &code[r * w..(r + 1) * w];

    for r in 0..pad.min(h) {
        step(hist, w, pad, zeros, row(r), runs);
    }
    let mut total = 0u64;
    for i in 0..h {
        let leave = if i > pad { row(i - pad - 1) } else { zeros };
        let enter = if i + pad < h { row(i + pad) } else { zeros };
        if i > pad || i + pad < h {
            step(hist, w, pad, leave, enter, runs);
        }

        // Exact in double: a multiple of 2^-24 below 32000 * 9506.25 < 2^29.
        let mut row_sum = 0.0f64;
        let stride = hist.stride;
        let counts = &hist.counts[..lut.rows * stride];
        for (k, chunk) in row(i).chunks(CHUNK).enumerate() {
            // Skip the chunks without a pixel whose value tests any difference (codes
            // fire_lo..=fire_lo + fire_span; code 0 wraps far above).
            let mut any = 0u16;
            if let Ok(full) = <&[u16; CHUNK]>::try_from(chunk) {
                for &cd in full {
                    any |= (cd.wrapping_sub(lut.fire_lo) <= lut.fire_span) as u16;
                }
            } else {
                for &cd in chunk {
                    any |= (cd.wrapping_sub(lut.fire_lo) <= lut.fire_span) as u16;
                }
            }
            if any == 0 {
                continue;
            }
            let j0 = k * CHUNK;
            row_sum += match lut.num_diffs {
                1 => c_chunk::<1>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                2 => c_chunk::<2>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                4 => c_chunk::<4>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                8 => c_chunk::<8>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                16 => c_chunk::<16>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
                _ => c_chunk::<32>(chunk, j0, i * w, counts, stride, lut, nz_val, nz_idx),
            };
        }
        total = total.saturating_add(units(row_sum));
    }
    ScaleStats {
        units: total,
        nonzero: nz_val.len(),
    }
}

/// cambi.c `c_value_pixel` for the pixels of one chunk of a row (`ND` = `num_diffs`):
/// records the non-zero c-values (index `row_start + j0 + t`) and returns their sum, exact in
/// double (every partial sum is a multiple of 2^-24 below 32 * 9506.25 < 2^19).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn c_chunk<const ND: usize>(
    codes: &[u16],
    j0: usize,
    row_start: usize,
    counts: &[i16],
    stride: usize,
    lut: &Lut,
    nz_val: &mut Vec<f32>,
    nz_idx: &mut Vec<u32>,
) -> f64 {
    let mut sum = 0.0f64;
    for (t, &cd) in codes.iter().enumerate() {
        if cd == 0 {
            continue;
        }
        let r = cd as usize - 1;
        let fire = lut.fire[r];
        if fire == 0 {
            continue;
        }
        let at = r * stride + MARGIN + j0 + t;
        let p0 = counts[at] as i32;
        let mut c = 0.0f32;
        // Every difference is evaluated (rows r - ND..=r + ND exist, their counts are those
        // of one window, so p0 + pm <= ws * ws), and only the tested ones are kept: the max of
        // the same floats as libvmaf's.
        for (d, &weight) in CONTRAST_WEIGHTS[..ND].iter().enumerate() {
            let off = (d + 1) * stride;
            let p1 = counts[at + off] as i32;
            let p2 = counts[at - off] as i32;
            let pm = if p1 > p2 { p1 } else { p2 };
            // At most 9 * 4225^2 / 4 < 2^26: exact in i32, rounded to float as in C.
            let val = (weight * p0 * pm) as f32 * RECIP[(p0 + pm) as usize];
            if (fire >> d) & 1 != 0 && val > c {
                c = val;
            }
        }
        if c > 0.0 {
            nz_val.push(c);
            nz_idx.push((row_start + j0 + t) as u32);
            sum += c as f64;
        }
    }
    sum
}
