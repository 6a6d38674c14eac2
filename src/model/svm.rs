//! The prediction half of libsvm as libvmaf 3.2.0 carries it (libvmaf/src/svm.cpp): the text
//! model parser and `svm_predict()` for regression models (nu-SVR, epsilon-SVR) with the RBF
//! kernel, the only kind VMAF models use.

/// A regression SVM with an RBF kernel.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Svm {
    gamma: f64,
    rho: f64,
    /// (coefficient, end of its nodes in `nodes`) per support vector, in file order: the order
    /// of the sum in `svm_predict`.
    sv: Vec<(f64, usize)>,
    /// Every support vector's sparse `(index, value)` nodes, one after the other, in file order
    /// (libsvm's `svm_node` lists without their `index == -1` terminators).
    nodes: Vec<(i32, f64)>,
}

/// Splits the header like svm.cpp's `read_next()`: tokens end at a space or a newline.
struct Tokens<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.pos..];
        let start = rest.find(|c: char| !c.is_ascii_whitespace())?;
        let rest = &rest[start..];
        let len = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        self.pos += start + len;
        Some(&rest[..len])
    }

    /// What follows the current token's line (svm.cpp reads the support vectors line by line
    /// right after the `SV` token and its newline).
    fn rest_after_line(&self) -> &'a str {
        let rest = &self.text[self.pos..];
        match rest.find('\n') {
            Some(i) => &rest[i + 1..],
            None => "",
        }
    }
}

fn num<T: std::str::FromStr>(tok: Option<&str>, what: &str) -> Result<T, String> {
    let tok = tok.ok_or_else(|| format!("libsvm model: {what} is missing a value"))?;
    tok.parse()
        .map_err(|_| format!("libsvm model: bad {what} value {tok:?}"))
}

impl Svm {
    /// Parse libsvm's text model format (the `"model"` string of a VMAF model JSON).
    ///
    /// Numbers are parsed as libstdc++'s `operator>>` does (strtod: correctly rounded), so the
    /// coefficients are the same doubles libvmaf holds. Only what prediction of a regression
    /// model with an RBF kernel needs is accepted; anything else is an error naming it.
    pub(crate) fn parse(text: &str) -> Result<Svm, String> {
        let mut t = Tokens { text, pos: 0 };
        let mut svm_type = None;
        let mut kernel = None;
        let mut gamma = None;
        let mut nr_class: Option<i32> = None;
        let mut total_sv: Option<usize> = None;
        let mut rho: Option<f64> = None;
        loop {
            let key = t
                .next()
                .ok_or("libsvm model: no \"SV\" line (support vectors) found")?;
            match key {
                "SV" => break,
                "svm_type" => svm_type = Some(t.next().unwrap_or("").to_string()),
                "kernel_type" => kernel = Some(t.next().unwrap_or("").to_string()),
                "gamma" => gamma = Some(num::<f64>(t.next(), "gamma")?),
                "nr_class" => nr_class = Some(num(t.next(), "nr_class")?),
                "total_sv" => total_sv = Some(num(t.next(), "total_sv")?),
                "rho" => {
                    // svm.cpp reads nr_class * (nr_class - 1) / 2 values: one for regression.
                    if nr_class != Some(2) {
                        return Err(
                            "libsvm model: \"rho\" before \"nr_class 2\" (regression models have nr_class 2)".into(),
                        );
                    }
                    rho = Some(num(t.next(), "rho")?);
                }
                // Unused by regression prediction; svm.cpp reads them, so skip their values.
                "degree" | "coef0" => {
                    num::<f64>(t.next(), key)?;
                }
                "label" | "probA" | "probB" | "nr_sv" => {
                    return Err(format!(
                        "libsvm model: \"{key}\" belongs to a classification or probability model; VMAF models are regression models"
                    ));
                }
                other => return Err(format!("libsvm model: unknown header key {other:?}")),
            }
        }
        match svm_type.as_deref() {
            Some("nu_svr") | Some("epsilon_svr") => {}
            Some(other) => {
                return Err(format!(
                    "libsvm model: svm_type {other:?} is not supported (nu_svr and epsilon_svr are)"
                ));
            }
            None => return Err("libsvm model: svm_type is missing".into()),
        }
        match kernel.as_deref() {
            Some("rbf") => {}
            Some(other) => {
                return Err(format!(
                    "libsvm model: kernel_type {other:?} is not supported (rbf is)"
                ));
            }
            None => return Err("libsvm model: kernel_type is missing".into()),
        }
        if nr_class != Some(2) {
            return Err("libsvm model: nr_class must be 2 for a regression model".into());
        }
        let gamma = gamma.ok_or("libsvm model: gamma is missing")?;
        let rho = rho.ok_or("libsvm model: rho is missing")?;
        let total_sv = total_sv.ok_or("libsvm model: total_sv is missing")?;

        let mut lines = t.rest_after_line().lines();
        let mut sv = Vec::with_capacity(total_sv.min(1 << 16));
        let mut all_nodes = Vec::new();
        for i in 0..total_sv {
            let line = lines.next().ok_or_else(|| {
                format!("libsvm model: total_sv is {total_sv} but only {i} support vectors follow")
            })?;
            let mut toks = line.split_ascii_whitespace();
            let coef: f64 = toks
                .next()
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| format!("libsvm model: support vector {i}: bad coefficient"))?;
            for tok in toks {
                let node = tok
                    .split_once(':')
                    .and_then(|(idx, v)| Some((idx.parse().ok()?, v.parse().ok()?)));
                all_nodes.push(node.ok_or_else(|| {
                    format!("libsvm model: support vector {i}: bad node {tok:?}")
                })?);
            }
            sv.push((coef, all_nodes.len()));
        }
        Ok(Svm {
            gamma,
            rho,
            sv,
            nodes: all_nodes,
        })
    }

    /// libsvm's `svm_predict()` for a regression model: `sum(coef_i * K(x, sv_i)) - rho`, the
    /// sum taken in support-vector order. `x` is the dense input, `x[i]` having index `i + 1`.
    pub(crate) fn predict(&self, x: &[f64]) -> f64 {
        let mut sum = 0.0;
        let mut start = 0;
        for &(coef, end) in &self.sv {
            sum += coef * self.rbf(x, &self.nodes[start..end]);
            start = end;
        }
        sum - self.rho
    }

    /// svm.cpp `Kernel::k_function()`, RBF case: the squared distance accumulated by walking the
    /// two sparse vectors in index order, then `exp(-gamma * d2)`.
    fn rbf(&self, x: &[f64], y: &[(i32, f64)]) -> f64 {
        let mut sum = 0.0;
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            let xi = i as i64 + 1;
            let (yi, yv) = (y[j].0 as i64, y[j].1);
            if xi == yi {
                let d = x[i] - yv;
                sum += d * d;
                i += 1;
                j += 1;
            } else if xi > yi {
                sum += yv * yv;
                j += 1;
            } else {
                sum += x[i] * x[i];
                i += 1;
            }
        }
        for &v in &x[i..] {
            sum += v * v;
        }
        for &(_, v) in &y[j..] {
            sum += v * v;
        }
        (-self.gamma * sum).exp()
    }

    #[cfg(test)]
    pub(crate) fn support_vectors(&self) -> usize {
        self.sv.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = "svm_type nu_svr\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho -1.5\nSV\n2 1:1 2:0.5 \n-1 2:1 \n";

    #[test]
    fn parse_and_predict_by_hand() {
        let m = Svm::parse(TINY).unwrap();
        assert_eq!(m.support_vectors(), 2);
        let x = [1.0, 1.0];
        // sv0: (1-1)^2 + (1-0.5)^2 = 0.25; sv1: index 1 only in x -> 1, (1-1)^2 = 0 -> 1.
        let want = 2.0 * (-0.5f64 * 0.25).exp() + -(-0.5f64 * 1.0).exp() - -1.5;
        assert_eq!(m.predict(&x), want);
    }

    #[test]
    fn sparse_vectors_in_either_direction() {
        // An SV with an index beyond the input, and one missing a middle index.
        let m = Svm::parse(
            "svm_type epsilon_svr\nkernel_type rbf\ngamma 1\nnr_class 2\ntotal_sv 2\nrho 0\nSV\n1 1:0.5 3:2\n1 3:1\n",
        )
        .unwrap();
        let x = [0.25, 0.75];
        let d0 = (0.25f64 - 0.5) * (0.25 - 0.5) + 0.75 * 0.75 + 2.0 * 2.0;
        let d1 = 0.25f64 * 0.25 + 0.75 * 0.75 + 1.0;
        assert_eq!(m.predict(&x), (-d0).exp() + (-d1).exp());
    }

    #[test]
    fn bad_models_are_errors() {
        for (text, needle) in [
            ("", "SV"),
            (
                "svm_type c_svc\nkernel_type rbf\nnr_class 2\nrho 0\ngamma 1\ntotal_sv 0\nSV\n",
                "c_svc",
            ),
            (
                "svm_type nu_svr\nkernel_type linear\nnr_class 2\nrho 0\ngamma 1\ntotal_sv 0\nSV\n",
                "linear",
            ),
            (
                "svm_type nu_svr\nkernel_type rbf\nnr_class 2\nrho 0\ngamma 1\ntotal_sv 3\nSV\n1 1:1\n",
                "only",
            ),
            (
                "svm_type nu_svr\nkernel_type rbf\nnr_class 2\nrho 0\ngamma x\ntotal_sv 0\nSV\n",
                "gamma",
            ),
            (
                "svm_type nu_svr\nkernel_type rbf\nnr_class 2\nrho 0\ngamma 1\ntotal_sv 1\nSV\n1 1;1\n",
                "node",
            ),
            (
                "svm_type nu_svr\nkernel_type rbf\nnr_class 2\ngamma 1\ntotal_sv 0\nSV\n",
                "rho",
            ),
            ("svm_type nu_svr\nbogus 1\nSV\n", "bogus"),
        ] {
            let e = Svm::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }
}
