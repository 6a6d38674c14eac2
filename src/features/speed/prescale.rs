//! SpEED's prescalers (libvmaf's vif_tools.c): nearest, bilinear with precomputed columns,
//! bicubic and lanczos4, on the CPU, and the index and weight tables the GPU's prescale kernel
//! reads (built by the same functions, so both routes read the same positions and weights).

use super::*;

/// `mirror(float i, float left, float right)`.
pub(super) fn mirror_f(i: f32, left: f32, right: f32) -> f32 {
    if i < left {
        -i
    } else if i > right {
        2.0 * right - i
    } else {
        i
    }
}

/// A mirrored float position converted to an index as C's `int` conversion does, checked.
pub(super) fn mirrored_index(i: f32, n: usize) -> Result<usize> {
    let m = mirror_f(i, 0.0, (n as i32 - 1) as f32) as i32;
    if m >= 0 && (m as usize) < n {
        Ok(m as usize)
    } else {
        Err(Error::Unsupported {
            metric: "speed",
            reason: format!("prescale reads position {m} outside a dimension of {n}"),
        })
    }
}

#[derive(Debug)]
pub(super) enum Prescaler {
    /// Input and output sizes equal: libvmaf copies the frame.
    Identity,
    Nearest,
    /// With the column table of `vif_scale_frame_bilinear_precompute_columns_s`.
    Bilinear {
        x1a: Vec<usize>,
        x2a: Vec<usize>,
        dxa: Vec<f32>,
    },
    Bicubic,
    Lanczos4,
}

/// `(c + 0.5) * ratio - 0.5` in double, stored as float.
pub(super) fn src_pos(c: usize, ratio: f32) -> f32 {
    ((c as f64 + 0.5) * ratio as f64 - 0.5) as f32
}

/// `bicubic_kernel`.
pub(super) fn bicubic_kernel(t: f32) -> f32 {
    let a = -0.75f32;
    let t = if t < 0.0 { -t } else { t };
    if t < 1.0 {
        return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    }
    if t < 2.0 {
        return (((t - 5.0) * t + 8.0) * t - 4.0) * a;
    }
    0.0
}

/// `lanczos4_kernel`.
pub(super) fn lanczos4_kernel(x: f32, a: f32) -> f32 {
    if x as f64 == 0.0 {
        return 1.0;
    }
    if x > -a && x < a {
        let (xd, ad) = (x as f64, a as f64);
        return (ad * (PI * xd).sin() * (PI * xd / ad).sin() / (PI * PI * xd * xd)) as f32;
    }
    0.0
}

impl Prescaler {
    pub(super) fn new(
        method: PrescaleMethod,
        sw: usize,
        sh: usize,
        dw: usize,
        dh: usize,
    ) -> Result<Self> {
        if sw == dw && sh == dh {
            return Ok(Prescaler::Identity);
        }
        Ok(match method {
            PrescaleMethod::Nearest => Prescaler::Nearest,
            PrescaleMethod::Bicubic => Prescaler::Bicubic,
            PrescaleMethod::Lanczos4 => Prescaler::Lanczos4,
            PrescaleMethod::Bilinear => {
                let ratio_x = sw as f32 / dw as f32;
                let mut x1a = Vec::with_capacity(dw);
                let mut x2a = Vec::with_capacity(dw);
                let mut dxa = Vec::with_capacity(dw);
                for x in 0..dw {
                    let xx = src_pos(x, ratio_x);
                    let x1 = mirrored_index((xx as f64).floor() as f32, sw)?;
                    let x2 = mirrored_index((xx as f64).ceil() as f32, sw)?;
                    x1a.push(x1);
                    x2a.push(x2);
                    dxa.push(xx - x1 as i32 as f32);
                }
                Prescaler::Bilinear { x1a, x2a, dxa }
            }
        })
    }

    /// The `dw` x `dh` scaled image (compact) of the compact `sw` x `sh` image `src`.
    pub(super) fn apply(
        &self,
        src: &[f32],
        sw: usize,
        sh: usize,
        dw: usize,
        dh: usize,
    ) -> Result<Vec<f32>> {
        let ratio_x = sw as f32 / dw as f32;
        let ratio_y = sh as f32 / dh as f32;
        let mut dst = Vec::with_capacity(dw * dh);
        match self {
            Prescaler::Identity => dst.extend_from_slice(&src[..sw * sh]),
            Prescaler::Nearest => {
                for y in 0..dh {
                    let ry = (y as f32 * ratio_y) as i32 as usize;
                    for x in 0..dw {
                        let rx = (x as f32 * ratio_x) as i32 as usize;
                        let v = src.get(ry * sw + rx).filter(|_| rx < sw).ok_or_else(|| {
                            Error::Unsupported {
                                metric: "speed",
                                reason: format!("nearest prescale reads ({rx}, {ry}) outside"),
                            }
                        })?;
                        dst.push(*v);
                    }
                }
            }
            Prescaler::Bilinear { x1a, x2a, dxa } => {
                for y in 0..dh {
                    let yy = src_pos(y, ratio_y);
                    let y1 = mirrored_index((yy as f64).floor() as f32, sh)?;
                    let y2 = mirrored_index((yy as f64).ceil() as f32, sh)?;
                    let dy = yy - y1 as i32 as f32;
                    let r1 = &src[y1 * sw..(y1 + 1) * sw];
                    let r2 = &src[y2 * sw..(y2 + 1) * sw];
                    for ((&x1, &x2), &dx) in x1a.iter().zip(x2a).zip(dxa) {
                        dst.push(
                            (1.0 - dy) * (1.0 - dx) * r1[x1]
                                + (1.0 - dy) * dx * r1[x2]
                                + dy * (1.0 - dx) * r2[x1]
                                + dy * dx * r2[x2],
                        );
                    }
                }
            }
            Prescaler::Bicubic => {
                for y in 0..dh {
                    let yy = src_pos(y, ratio_y);
                    let y0 = (yy as f64).floor() as i32;
                    let dy = yy - y0 as f32;
                    let mut wy = [0.0f32; 4];
                    let mut ys = [0usize; 4];
                    for j in -1i32..=2 {
                        wy[(j + 1) as usize] = bicubic_kernel(j as f32 - dy);
                        ys[(j + 1) as usize] = mirrored_index((y0 + j) as f32, sh)?;
                    }
                    for x in 0..dw {
                        let xx = src_pos(x, ratio_x);
                        let x0 = (xx as f64).floor() as i32;
                        let dx = xx - x0 as f32;
                        let mut wx = [0.0f32; 4];
                        let mut xs = [0usize; 4];
                        for i in -1i32..=2 {
                            wx[(i + 1) as usize] = bicubic_kernel(i as f32 - dx);
                            xs[(i + 1) as usize] = mirrored_index((x0 + i) as f32, sw)?;
                        }
                        let mut interp = 0.0f32;
                        for j in 0..4 {
                            for i in 0..4 {
                                let weight = wx[i] * wy[j];
                                interp += src[ys[j] * sw + xs[i]] * weight;
                            }
                        }
                        dst.push(interp);
                    }
                }
            }
            Prescaler::Lanczos4 => {
                const A: i32 = 4;
                const N: usize = (2 * A + 1) as usize;
                for y in 0..dh {
                    let yy = src_pos(y, ratio_y);
                    let y0 = (yy as f64).floor() as i32;
                    let dy = yy - y0 as f32;
                    let mut wy = [0.0f32; N];
                    let mut ys = [0usize; N];
                    for i in -A..=A {
                        wy[(i + A) as usize] = lanczos4_kernel(i as f32 - dy, A as f32);
                        ys[(i + A) as usize] = mirrored_index((y0 + i) as f32, sh)?;
                    }
                    for x in 0..dw {
                        let xx = src_pos(x, ratio_x);
                        let x0 = (xx as f64).floor() as i32;
                        let dx = xx - x0 as f32;
                        let mut wx = [0.0f32; N];
                        let mut xs = [0usize; N];
                        for i in -A..=A {
                            wx[(i + A) as usize] = lanczos4_kernel(i as f32 - dx, A as f32);
                            xs[(i + A) as usize] = mirrored_index((x0 + i) as f32, sw)?;
                        }
                        let mut value = 0.0f32;
                        let mut weight_sum = 0.0f32;
                        for iy in 0..N {
                            for ix in 0..N {
                                let weight = wx[ix] * wy[iy];
                                weight_sum += weight;
                                value += src[ys[iy] * sw + xs[ix]] * weight;
                            }
                        }
                        dst.push(value / weight_sum);
                    }
                }
            }
        }
        Ok(dst)
    }
}

/// One axis of a prescale as [`PrescaleTables`] lays it out: per output position its source
/// indices and weights, or the error the CPU's prescale meets there.
type Axis = Vec<Result<(Vec<usize>, Vec<f32>)>>;

pub(super) fn prescale_axis(method: PrescaleMethod, src: usize, dst: usize) -> Axis {
    let ratio = src as f32 / dst as f32;
    (0..dst)
        .map(|c| -> Result<(Vec<usize>, Vec<f32>)> {
            match method {
                PrescaleMethod::Nearest => Ok((vec![(c as f32 * ratio) as i32 as usize], vec![])),
                PrescaleMethod::Bilinear => {
                    let p = src_pos(c, ratio);
                    let i1 = mirrored_index((p as f64).floor() as f32, src)?;
                    let i2 = mirrored_index((p as f64).ceil() as f32, src)?;
                    Ok((vec![i1, i2], vec![p - i1 as i32 as f32]))
                }
                PrescaleMethod::Bicubic | PrescaleMethod::Lanczos4 => {
                    let p = src_pos(c, ratio);
                    let p0 = (p as f64).floor() as i32;
                    let dp = p - p0 as f32;
                    let a: i32 = if method == PrescaleMethod::Bicubic {
                        1
                    } else {
                        4
                    };
                    let hi = if method == PrescaleMethod::Bicubic {
                        2
                    } else {
                        4
                    };
                    let (mut idx, mut w) = (Vec::new(), Vec::new());
                    for i in -a..=hi {
                        w.push(if method == PrescaleMethod::Bicubic {
                            bicubic_kernel(i as f32 - dp)
                        } else {
                            lanczos4_kernel(i as f32 - dp, 4.0)
                        });
                        idx.push(mirrored_index((p0 + i) as f32, src)?);
                    }
                    Ok((idx, w))
                }
            }
        })
        .collect()
}

/// The prescale of a `sw` x `sh` image to `dw` x `dh` as tables ([`PrescaleTables`]), or the
/// error the CPU's prescale meets first in its order (the tables of a frame are the same
/// every frame, so is that error).
pub(super) fn prescale_tables(
    method: PrescaleMethod,
    (sw, sh): (usize, usize),
    (dw, dh): (usize, usize),
) -> Result<PrescaleTables> {
    let cols = prescale_axis(method, sw, dw);
    let rows = prescale_axis(method, sh, dh);
    let first_err = |a: &Axis| a.iter().find_map(|r| r.as_ref().err().cloned());
    let ok = |a: Axis| -> (Vec<usize>, Vec<f32>) {
        let (mut i, mut w) = (Vec::new(), Vec::new());
        for (ii, ww) in a.into_iter().flatten() {
            i.extend(ii);
            w.extend(ww);
        }
        (i, w)
    };
    if method == PrescaleMethod::Nearest {
        // Prescaler::apply reads (rx, ry) row by row and fails at the first one outside.
        let c: Vec<usize> = cols.iter().flatten().map(|(i, _)| i[0]).collect();
        let r: Vec<usize> = rows.iter().flatten().map(|(i, _)| i[0]).collect();
        let outside = |rx: usize, ry: usize| rx >= sw || ry >= sh;
        let bad = if outside(c[0], r[0]) {
            Some((c[0], r[0]))
        } else if let Some(&rx) = c.iter().find(|&&rx| outside(rx, r[0])) {
            Some((rx, r[0]))
        } else {
            r.iter()
                .find(|&&ry| outside(c[0], ry))
                .map(|&ry| (c[0], ry))
        };
        if let Some((rx, ry)) = bad {
            return Err(Error::Unsupported {
                metric: "speed",
                reason: format!("nearest prescale reads ({rx}, {ry}) outside"),
            });
        }
    } else {
        // The CPU: (bilinear: the columns at construction) the first row's taps, every
        // column's, then each further row's.
        if let Some(Err(e)) = rows.first() {
            return Err(e.clone());
        }
        if let Some(e) = first_err(&cols).or_else(|| first_err(&rows)) {
            return Err(e);
        }
    }
    let taps = match method {
        PrescaleMethod::Nearest => 1,
        PrescaleMethod::Bilinear => 2,
        PrescaleMethod::Bicubic => 4,
        PrescaleMethod::Lanczos4 => 9,
    };
    let (col_index, col_weight) = ok(cols);
    let (row_index, row_weight) = ok(rows);
    Ok(PrescaleTables {
        method,
        taps,
        col_index,
        col_weight,
        row_index,
        row_weight,
    })
}
