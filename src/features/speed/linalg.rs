use super::{EIGENVALUE_EPS, EIGENVALUE_MAX_ITERS};

/// `get_sign`.
fn sign(x: f32) -> i32 {
    if x >= 0.0 { 1 } else { -1 }
}

/// `sqrt` of a float argument (promoted to double), stored as float.
fn sqrtf_c(x: f32) -> f32 {
    (x as f64).sqrt() as f32
}

/// `pythagoras`.
fn pythagoras(x: f32, y: f32) -> f32 {
    sqrtf_c(x * x + y * y)
}

/// `compute_column_norm`: the norm of `a[start_row..n][col]`.
fn column_norm(a: &[f32], col: usize, start_row: usize, n: usize) -> f32 {
    let mut norm = 0.0f32;
    for i in start_row..n {
        norm += a[i * n + col] * a[i * n + col];
    }
    sqrtf_c(norm)
}

/// `compute_householder_transform`.
fn householder(a: &mut [f32], col: usize, start_row: usize, n: usize) -> f32 {
    if n - start_row == 1 {
        return 0.0;
    }
    let xnorm = column_norm(a, col, start_row + 1, n);
    if xnorm == 0.0 {
        return 0.0;
    }
    let alpha = a[start_row * n + col];
    let beta = (-sign(alpha)) as f32 * pythagoras(alpha, xnorm);
    let tau = (beta - alpha) / beta;
    let s = alpha - beta;
    if s != 0.0 {
        for i in start_row..n {
            a[i * n + col] /= s;
        }
        a[start_row * n + col] = beta;
    }
    tau
}

/// `convert_to_tridiagonal` (adapted gsl_linalg_symmtd_decomp): `a` is overwritten; returns the
/// diagonal and the subdiagonal.
fn tridiagonalize(a: &mut [f32], n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut v = vec![0.0f32; n];
    let mut x = vec![0.0f32; n];
    for i in 0..n.saturating_sub(2) {
        let tau = householder(a, i, i + 1, n);
        for j in i + 1..n {
            v[j] = a[j * n + i];
        }
        if tau != 0.0 {
            a[(i + 1) * n + i] = v[i + 1];
            v[i + 1] = 1.0;
            let start = i + 1;
            // x = tau * A * v
            for r in start..n {
                x[r] = 0.0;
                for c in start..n {
                    x[r] += tau * a[r * n + c] * v[c];
                }
            }
            // x -= 0.5 * tau * dot(x, v) * v
            let mut xv = 0.0f32;
            for r in start..n {
                xv += x[r] * v[r];
            }
            let alpha = (-0.5 * tau as f64 * xv as f64) as f32;
            for r in start..n {
                x[r] += alpha * v[r];
            }
            // A -= x v' + v x'
            for r in start..n {
                for c in start..n {
                    a[r * n + c] -= x[r] * v[c] + v[r] * x[c];
                }
            }
        }
    }
    let d = (0..n).map(|i| a[i * n + i]).collect();
    let sd = (0..n - 1).map(|i| a[(i + 1) * n + i]).collect();
    (d, sd)
}

/// `chop_small_elements` on a block of `n`.
fn chop_small_elements(d: &[f32], sd: &mut [f32], n: usize) {
    for i in 0..n - 1 {
        if ((sd[i].abs()) as f64) < EIGENVALUE_EPS * ((d[i].abs() + d[i + 1].abs()) as f64) {
            sd[i] = 0.0;
        }
    }
}

/// `trailing_eigenvalue`.
fn trailing_eigenvalue(d: &[f32], sd: &[f32], n: usize) -> f32 {
    let ta = d[n - 2];
    let tb = d[n - 1];
    let tab = sd[n - 2];
    let dt = ((ta - tb) as f64 / 2.0) as f32;
    if dt > 0.0 {
        tb - tab * (tab / (dt + pythagoras(dt, tab)))
    } else if dt == 0.0 {
        tb - tab.abs()
    } else {
        tb + tab * (tab / (-dt + pythagoras(dt, tab)))
    }
}

/// `create_givens`: `(c, s)`.
fn create_givens(a: f32, b: f32) -> (f32, f32) {
    if b == 0.0 {
        (1.0, 0.0)
    } else if b.abs() > a.abs() {
        let t = -a / b;
        let s1 = (1.0 / ((1.0 + t * t) as f64).sqrt()) as f32;
        (s1 * t, s1)
    } else {
        let t = -b / a;
        let c1 = (1.0 / ((1.0 + t * t) as f64).sqrt()) as f32;
        (c1, c1 * t)
    }
}

/// `qr_step` on a block of `n` (`d` has `n` entries, `sd` `n - 1`).
fn qr_step(d: &mut [f32], sd: &mut [f32], n: usize) {
    let mut mu = trailing_eigenvalue(d, sd, n);
    if EIGENVALUE_EPS * (mu.abs() as f64) > ((d[0].abs() + sd[0].abs()) as f64) {
        mu = 0.0;
    }
    let mut x = d[0] - mu;
    let mut z = sd[0];
    let mut bk = 0.0f32;
    let mut zk = 0.0f32;
    let mut ap = d[0];
    let mut bp = sd[0];
    let mut aq = d[1];

    if n == 2 {
        let (c, s) = create_givens(x, z);
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        d[0] = ap1;
        sd[0] = bp1;
        d[1] = aq1;
        return;
    }

    let mut bq = sd[1];
    for k in 0..n - 1 {
        let (c, s) = create_givens(x, z);
        // G' T G
        let bk1 = c * bk - s * zk;
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let zp1 = -s * bq;
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        let bq1 = c * bq;

        let ak = ap1;
        bk = bp1;
        zk = zp1;
        ap = aq1;
        bp = bq1;

        if k < n - 2 {
            aq = d[k + 2];
        }
        if k + 3 < n {
            bq = sd[k + 2];
        }
        d[k] = ak;
        if k > 0 {
            sd[k - 1] = bk1;
        }
        if k < n - 2 {
            sd[k + 1] = bp;
        }
        x = bk;
        z = zk;
    }
    d[n - 1] = ap;
    sd[n - 2] = bk;
}

/// `compute_eigenvalues_tridiagonal` (adapted gsl_eigen_symm): the eigenvalues in the order the
/// reduction leaves them on the diagonal.
fn eigenvalues_tridiagonal(mut d: Vec<f32>, mut sd: Vec<f32>, n: usize) -> Vec<f32> {
    chop_small_elements(&d, &mut sd, n);
    let mut b = n - 1;
    let mut iter = 0;
    while b > 0 && iter < EIGENVALUE_MAX_ITERS {
        if sd[b - 1] == 0.0 {
            b -= 1;
            continue;
        }
        let mut a = b - 1;
        while a > 0 {
            if sd[a - 1] == 0.0 {
                break;
            }
            a -= 1;
        }
        let nb = b - a + 1;
        qr_step(&mut d[a..=b], &mut sd[a..b], nb);
        chop_small_elements(&d[a..=b], &mut sd[a..b], nb);
        iter += 1;
    }
    d
}

/// `compute_eigenvalues` of the symmetric `n` x `n` matrix `m`.
pub(super) fn eigenvalues(m: &[f32], n: usize) -> Vec<f32> {
    if n == 1 {
        return vec![m[0]];
    }
    let mut a = m.to_vec();
    let (d, sd) = tridiagonalize(&mut a, n);
    eigenvalues_tridiagonal(d, sd, n)
}

/// `matrix_mul` of square `n` x `n` matrices: `dst = x * y`, float, `k` ascending per element.
fn matmul_sq(dst: &mut [f32], x: &[f32], y: &[f32], n: usize) {
    dst.fill(0.0);
    for i in 0..n {
        for k in 0..n {
            let xik = x[i * n + k];
            for j in 0..n {
                dst[i * n + j] += xik * y[k * n + j];
            }
        }
    }
}

/// `matrix_transpose` (square, in place).
fn transpose_sq(m: &mut [f32], n: usize) {
    for i in 0..n {
        for j in 0..i {
            m.swap(i * n + j, j * n + i);
        }
    }
}

/// `vector_norm`.
fn vector_norm(x: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for &v in x {
        sum += v * v;
    }
    sqrtf_c(sum)
}

/// `matrix_qr_decomposition` (Householder): returns `(Q, R)` as the C leaves them (`Q`
/// transposed at the end, `R = P * A` with `P` the product of the reflections).
fn qr_decomposition(a: &[f32], n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut tmp_z = a.to_vec();
    let mut q = vec![0.0f32; n * n];
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    let mut tmp_q = vec![0.0f32; n * n];
    let mut tmp_mul = vec![0.0f32; n * n];
    let mut vec = vec![0.0f32; n];
    for k in 0..n - 1 {
        // matrix_minor(tmp_z, k)
        for i in 0..n {
            for j in 0..n {
                if i < k || j < k {
                    tmp_z[i * n + j] = if i == j { 1.0 } else { 0.0 };
                }
            }
        }
        for i in 0..n {
            vec[i] = tmp_z[i * n + k];
        }
        let norm = vector_norm(&vec);
        let sg = sign(a[k * n + k]);
        vec[k] += sg as f32 * norm;
        let d = vector_norm(&vec);
        for v in vec.iter_mut() {
            *v /= d;
        }
        // tmp_q = I - 2 v v'
        for i in 0..n {
            for j in 0..n {
                tmp_q[i * n + j] = -2.0 * vec[i] * vec[j];
            }
        }
        for i in 0..n {
            tmp_q[i * n + i] += 1.0;
        }
        matmul_sq(&mut tmp_mul, &tmp_q, &tmp_z, n);
        tmp_z.copy_from_slice(&tmp_mul);
        matmul_sq(&mut tmp_mul, &tmp_q, &q, n);
        q.copy_from_slice(&tmp_mul);
    }
    let mut r = vec![0.0f32; n * n];
    matmul_sq(&mut r, &q, a, n);
    transpose_sq(&mut q, n);
    (q, r)
}

/// `solve_linear_system`: `A X = B` (`A` `n` x `n`, `B` `n` x `cols`) by QR and back substitution.
/// `None` where a pivot of `R` is below `EIGENVALUE_EPS` (`solve_triangular_system`'s error).
pub(super) fn solve_linear_system(a: &[f32], n: usize, b: &[f32], cols: usize) -> Option<Vec<f32>> {
    let (mut q, r) = qr_decomposition(a, n);
    transpose_sq(&mut q, n);
    // tmp_rect = Q * B (matrix_mul: k ascending per element)
    let mut rhs = vec![0.0f32; n * cols];
    for i in 0..n {
        for k in 0..n {
            let qik = q[i * n + k];
            let brow = &b[k * cols..(k + 1) * cols];
            let out = &mut rhs[i * cols..(i + 1) * cols];
            for (o, &bv) in out.iter_mut().zip(brow) {
                *o += qik * bv;
            }
        }
    }
    // solve_triangular_system: R X = rhs, backward.
    let mut x = vec![0.0f32; n * cols];
    for i in (0..n).rev() {
        let den = r[i * n + i];
        if ((den.abs()) as f64) < EIGENVALUE_EPS {
            return None;
        }
        for j in 0..cols {
            let mut t = rhs[i * cols + j];
            for k in i + 1..n {
                t -= x[k * cols + j] * r[i * n + k];
            }
            x[i * cols + j] = t / den;
        }
    }
    Some(x)
}
