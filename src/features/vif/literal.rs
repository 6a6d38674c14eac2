use super::*;

const FILTERS: [&[u16]; 4] = [&FILTER_0, &FILTER_1, &FILTER_2, &FILTER_3];
const ROWS_PAD: usize = 8;
const COLS_PAD: usize = 8;

/// A frame buffer: `ROWS_PAD` rows above and below row 0..h, `stride` samples a row.
struct Frame {
    data: Vec<u16>,
    stride: usize,
}

impl Frame {
    fn idx(&self, y: isize, x: usize) -> usize {
        ((ROWS_PAD as isize + y) as usize) * self.stride + x
    }
    fn get(&self, y: isize, x: usize) -> u16 {
        self.data[self.idx(y, x)]
    }
    /// libvmaf's `pad_top_and_bottom`.
    fn pad_top_and_bottom(&mut self, h: usize, fwidth: usize) {
        let s = self.stride;
        for i in 1..=(fwidth / 2) as isize {
            let (dst, src) = (self.idx(-i, 0), self.idx(i, 0));
            self.data.copy_within(src..src + s, dst);
            let (dst, src) = (
                self.idx(h as isize - 1 + i, 0),
                self.idx(h as isize - 1 - i, 0),
            );
            self.data.copy_within(src..src + s, dst);
        }
    }
}

/// libvmaf's `PADDING_SQ_DATA(_2)` on one temporary row (`COLS_PAD` before column 0).
fn pad_cols<T: Copy>(t: &mut [T], w: usize, half: usize) {
    for f in 1..=half {
        t[COLS_PAD - f] = t[COLS_PAD + f];
        t[COLS_PAD + w - 1 + f] = t[COLS_PAD + w - 1 - f];
    }
}

pub fn compute(r: &Plane<'_>, d: &Plane<'_>, egl: f64) -> VifAccum {
    let (mut w, mut h, bpc) = (r.width, r.height, r.bpc as u32);
    let stride = w;
    let mk = |p: &Plane<'_>| {
        let mut f = Frame {
            data: vec![0; (h + 2 * ROWS_PAD) * stride],
            stride,
        };
        for y in 0..h {
            let i = f.idx(y as isize, 0);
            f.data[i..i + w].copy_from_slice(p.row(y));
        }
        f.pad_top_and_bottom(h, FILTERS[0].len());
        f
    };
    let (mut rf, mut df) = (mk(r), mk(d));
    let mut acc = VifAccum::default();
    for scale in 0..4 {
        if scale > 0 {
            subsample(&mut rf, &mut df, w, h, scale, bpc);
            w /= 2;
            h /= 2;
        }
        acc.scales[scale] = statistic(&rf, &df, w, h, scale, bpc, egl);
    }
    acc
}

fn subsample(rf: &mut Frame, df: &mut Frame, w: usize, h: usize, scale: usize, bpc: u32) {
    let filt = FILTERS[scale];
    let (fw, half) = (filt.len(), filt.len() / 2);
    let eight = bpc == 8 && scale == 1;
    let (round_vp, shift_vp) = if scale == 1 {
        (1u32 << (bpc - 1), bpc)
    } else {
        (32768, 16)
    };
    let mut mu1 = vec![0u16; w * h];
    let mut mu2 = vec![0u16; w * h];
    let mut tr = vec![0u32; w + 2 * COLS_PAD];
    let mut td = vec![0u32; w + 2 * COLS_PAD];
    for i in 0..h {
        for j in 0..w {
            let (mut ar, mut ad) = (0u32, 0u32);
            for (fi, &c) in filt.iter().enumerate() {
                let y = i as isize - half as isize + fi as isize;
                ar = ar.wrapping_add((c as u32).wrapping_mul(rf.get(y, j) as u32));
                ad = ad.wrapping_add((c as u32).wrapping_mul(df.get(y, j) as u32));
            }
            let (vr, vd) = (
                ar.wrapping_add(round_vp) >> shift_vp,
                ad.wrapping_add(round_vp) >> shift_vp,
            );
            // subsample_rd_8 keeps the u32, subsample_rd_16 casts to uint16_t.
            tr[COLS_PAD + j] = if eight { vr } else { vr as u16 as u32 };
            td[COLS_PAD + j] = if eight { vd } else { vd as u16 as u32 };
        }
        pad_cols(&mut tr, w, half);
        pad_cols(&mut td, w, half);
        for j in 0..w {
            let (mut ar, mut ad) = (0u32, 0u32);
            for fj in 0..fw {
                let c = filt[fj] as u32;
                let x = COLS_PAD + j + fj - half;
                ar = ar.wrapping_add(c.wrapping_mul(tr[x]));
                ad = ad.wrapping_add(c.wrapping_mul(td[x]));
            }
            mu1[i * w + j] = (ar.wrapping_add(32768) >> 16) as u16;
            mu2[i * w + j] = (ad.wrapping_add(32768) >> 16) as u16;
        }
    }
    // decimate_and_pad: pad width is that of filter scale - 1 (libvmaf passes the
    // subsample's own scale index, 0 for subsample_rd_8).
    for i in 0..h / 2 {
        for j in 0..w / 2 {
            let (ir, id) = (rf.idx(i as isize, j), df.idx(i as isize, j));
            rf.data[ir] = mu1[(2 * i) * w + 2 * j];
            df.data[id] = mu2[(2 * i) * w + 2 * j];
        }
    }
    rf.pad_top_and_bottom(h / 2, FILTERS[scale - 1].len());
    df.pad_top_and_bottom(h / 2, FILTERS[scale - 1].len());
}

fn log2_32(t: &[u16; 65537], temp: u32) -> i32 {
    let k = 16 - temp.leading_zeros() as i32;
    t[(temp >> k) as usize] as i32 + 2048 * k
}

fn log2_64(t: &[u16; 65537], temp: u64) -> i32 {
    assert!(temp >= 0x20000);
    let k = 48 - temp.leading_zeros() as i32;
    t[(temp >> k) as usize] as i32 + 2048 * k
}

fn statistic(
    rf: &Frame,
    df: &Frame,
    w: usize,
    h: usize,
    scale: usize,
    bpc: u32,
    egl: f64,
) -> VifScaleAccum {
    let table = log2_table();
    let filt = FILTERS[scale];
    let (fw, half) = (filt.len(), filt.len() / 2);
    let eight = bpc == 8 && scale == 0;
    let (round_vp, shift_vp, round_sq, shift_sq) = if scale == 0 {
        let sq = (bpc - 8) * 2;
        (
            1u32 << (bpc - 1),
            bpc,
            if bpc == 8 { 0 } else { 1u64 << (sq - 1) },
            sq,
        )
    } else {
        (32768, 16, 32768, 16)
    };
    let n = w + 2 * COLS_PAD;
    let (mut tm1, mut tm2) = (vec![0u32; n], vec![0u32; n]);
    let (mut txx, mut tyy, mut txy) = (vec![0u32; n], vec![0u32; n], vec![0u32; n]);
    let mut a = VifScaleAccum::default();
    for i in 0..h {
        for j in 0..w {
            let (mut m1, mut m2) = (0u32, 0u32);
            let (mut xx8, mut yy8, mut xy8) = (0u32, 0u32, 0u32);
            let (mut xx, mut yy, mut xy) = (0u64, 0u64, 0u64);
            for (fi, &c) in filt.iter().enumerate() {
                let y = i as isize - half as isize + fi as isize;
                let (pr, pd) = (rf.get(y, j) as u32, df.get(y, j) as u32);
                let (cr, cd) = ((c as u32).wrapping_mul(pr), (c as u32).wrapping_mul(pd));
                m1 = m1.wrapping_add(cr);
                m2 = m2.wrapping_add(cd);
                if eight {
                    xx8 = xx8.wrapping_add(cr.wrapping_mul(pr));
                    yy8 = yy8.wrapping_add(cd.wrapping_mul(pd));
                    xy8 = xy8.wrapping_add(cr.wrapping_mul(pd));
                } else {
                    xx = xx.wrapping_add(cr as u64 * pr as u64);
                    yy = yy.wrapping_add(cd as u64 * pd as u64);
                    xy = xy.wrapping_add(cr as u64 * pd as u64);
                }
            }
            let x = COLS_PAD + j;
            if eight {
                tm1[x] = m1.wrapping_add(128) >> 8;
                tm2[x] = m2.wrapping_add(128) >> 8;
                (txx[x], tyy[x], txy[x]) = (xx8, yy8, xy8);
            } else {
                tm1[x] = (m1.wrapping_add(round_vp) >> shift_vp) as u16 as u32;
                tm2[x] = (m2.wrapping_add(round_vp) >> shift_vp) as u16 as u32;
                txx[x] = (xx.wrapping_add(round_sq) >> shift_sq) as u32;
                tyy[x] = (yy.wrapping_add(round_sq) >> shift_sq) as u32;
                txy[x] = (xy.wrapping_add(round_sq) >> shift_sq) as u32;
            }
        }
        for t in [&mut tm1, &mut tm2, &mut txx, &mut tyy, &mut txy] {
            pad_cols(t, w, half);
        }
        for j in 0..w {
            let (mut m1, mut m2) = (0u32, 0u32);
            let (mut xx, mut yy, mut xy) = (0u64, 0u64, 0u64);
            for fj in 0..fw {
                let c = filt[fj] as u32;
                let x = COLS_PAD + j + fj - half;
                m1 = m1.wrapping_add(c.wrapping_mul(tm1[x]));
                m2 = m2.wrapping_add(c.wrapping_mul(tm2[x]));
                xx = xx.wrapping_add(c as u64 * txx[x] as u64);
                yy = yy.wrapping_add(c as u64 * tyy[x] as u64);
                xy = xy.wrapping_add(c as u64 * txy[x] as u64);
            }
            let sq = |a: u32, b: u32| ((a as u64 * b as u64).wrapping_add(1 << 31) >> 32) as u32;
            let (mu1_sq, mu2_sq, mu1_mu2) = (sq(m1, m1), sq(m2, m2), sq(m1, m2));
            let xx_filt = (xx.wrapping_add(32768) >> 16) as u32;
            let yy_filt = (yy.wrapping_add(32768) >> 16) as u32;
            let xy_filt = (xy.wrapping_add(32768) >> 16) as u32;
            let sigma1_sq = xx_filt.wrapping_sub(mu1_sq) as i32;
            let mut sigma2_sq = yy_filt.wrapping_sub(mu2_sq) as i32;
            let sigma12 = xy_filt.wrapping_sub(mu1_mu2) as i32;
            sigma2_sq = sigma2_sq.max(0);
            if sigma1_sq >= SIGMA_NSQ {
                a.den_log += (log2_32(table, (SIGMA_NSQ + sigma1_sq) as u32) - 2048 * 17) as i64;
                if sigma12 > 0 && sigma2_sq > 0 {
                    let eps = 65536.0 * 1.0e-10;
                    let mut g = sigma12 as f64 / (sigma1_sq as f64 + eps);
                    let mut sv_sq = (sigma2_sq as f64 - g * sigma12 as f64) as i32;
                    sv_sq = sv_sq.max(0);
                    g = if g < egl { g } else { egl };
                    let numer1 = (sv_sq + SIGMA_NSQ) as u32;
                    let numer1_tmp = (g * g * sigma1_sq as f64) as i64 + numer1 as i64;
                    a.num_log +=
                        (log2_64(table, numer1_tmp as u64) - log2_64(table, numer1 as u64)) as i64;
                }
            } else {
                a.num_non_log += sigma2_sq as i64;
                a.den_non_log += 1;
            }
        }
    }
    a
}
