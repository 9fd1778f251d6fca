//! Small box-constrained quadratic programs, min ½ xᵀHx + gᵀx over
//! lo ≤ x ≤ hi, by projected Newton (Bertsekas 1982, as used for
//! control-limited DDP by Tassa, Mansard & Todorov 2014): Newton steps on
//! the free variables, an Armijo search along the projected path, and the
//! free set re-estimated from the gradient at each iterate.

use crate::math::{cholesky_factor, cholesky_solve_in_place};

/// The solution of [`box_qp`].
#[derive(Clone, Debug, PartialEq)]
pub struct BoxQp {
    /// The minimiser.
    pub x: Vec<f64>,
    /// Whether each variable is free (not held at a bound by the gradient).
    pub free: Vec<bool>,
    /// Cholesky factor of H restricted to the free variables (nf × nf,
    /// lower triangle), for feedback gains.
    pub factor: Vec<f64>,
    /// Newton iterations.
    pub iterations: usize,
}

impl BoxQp {
    /// Indices of the free variables.
    pub fn free_indices(&self) -> Vec<usize> {
        (0..self.x.len()).filter(|&i| self.free[i]).collect()
    }

    /// Solves H_ff y = b for the free variables (b and y of length nf).
    pub fn solve_free(&self, b: &mut [f64]) {
        cholesky_solve_in_place(&self.factor, b.len(), b);
    }
}

fn value(h: &[f64], g: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    (0..n).map(|i| x[i] * (g[i] + 0.5 * (0..n).map(|j| h[i * n + j] * x[j]).sum::<f64>())).sum()
}

fn factor_free(h: &[f64], free: &[usize], n: usize) -> Option<Vec<f64>> {
    let nf = free.len();
    let mut f = vec![0.0; nf * nf];
    for (a, &i) in free.iter().enumerate() {
        for (b, &j) in free.iter().enumerate() {
            f[a * nf + b] = h[i * n + j];
        }
    }
    cholesky_factor(&mut f, nf).ok().map(|_| f)
}

/// Minimises ½ xᵀHx + gᵀx subject to lo ≤ x ≤ hi (H: n × n row-major,
/// symmetric, positive definite on every free set; bounds may be
/// infinite), starting from `x0` projected into the box. `None` when H is
/// not positive definite on a free set.
pub fn box_qp(h: &[f64], g: &[f64], lo: &[f64], hi: &[f64], x0: &[f64]) -> Option<BoxQp> {
    const MAX_ITER: usize = 100;
    const MIN_GRAD: f64 = 1e-10;
    const ARMIJO: f64 = 0.1;
    const STEP_DEC: f64 = 0.6;
    let n = g.len();
    let clamp = |x: &mut [f64]| x.iter_mut().enumerate().for_each(|(i, v)| *v = v.max(lo[i]).min(hi[i]));
    let mut x = x0.to_vec();
    clamp(&mut x);
    let mut f = value(h, g, &x);
    let mut grad = vec![0.0; n];
    let mut free = vec![true; n];
    let mut factor: Option<Vec<f64>> = None;
    let mut factored_for: Vec<bool> = vec![];
    let mut iterations = 0;
    for _ in 0..MAX_ITER {
        iterations += 1;
        for i in 0..n {
            grad[i] = g[i] + (0..n).map(|j| h[i * n + j] * x[j]).sum::<f64>();
        }
        for i in 0..n {
            free[i] = !((x[i] <= lo[i] && grad[i] > 0.0) || (x[i] >= hi[i] && grad[i] < 0.0));
        }
        let idx: Vec<usize> = (0..n).filter(|&i| free[i]).collect();
        if idx.is_empty() {
            break;
        }
        if factored_for != free {
            factor = Some(factor_free(h, &idx, n)?);
            factored_for = free.clone();
        }
        let fac = factor.as_ref().expect("factored");
        if idx.iter().map(|&i| grad[i] * grad[i]).sum::<f64>().sqrt() < MIN_GRAD {
            break;
        }
        // Newton step on the free variables, clamped ones held: target
        // x_f = −H_ff⁻¹ (g_f + H_fc x_c).
        let mut rhs: Vec<f64> = idx
            .iter()
            .map(|&i| g[i] + (0..n).filter(|&j| !free[j]).map(|j| h[i * n + j] * x[j]).sum::<f64>())
            .collect();
        cholesky_solve_in_place(fac, idx.len(), &mut rhs);
        let mut dir = vec![0.0; n];
        for (a, &i) in idx.iter().enumerate() {
            dir[i] = -rhs[a] - x[i];
        }
        let slope: f64 = (0..n).map(|i| dir[i] * grad[i]).sum();
        if slope >= 0.0 {
            break;
        }
        let mut step = 1.0;
        let mut trial = vec![0.0; n];
        let accepted = loop {
            for i in 0..n {
                trial[i] = x[i] + step * dir[i];
            }
            clamp(&mut trial);
            let ft = value(h, g, &trial);
            if (ft - f) / (step * slope) > ARMIJO {
                break Some(ft);
            }
            step *= STEP_DEC;
            if step < 1e-12 {
                break None;
            }
        };
        let Some(ft) = accepted else { break };
        let improvement = f - ft;
        x.copy_from_slice(&trial);
        f = ft;
        if improvement < 1e-14 * f.abs().max(1e-300) {
            break;
        }
    }
    // The free set and factor at the solution.
    for i in 0..n {
        grad[i] = g[i] + (0..n).map(|j| h[i * n + j] * x[j]).sum::<f64>();
        free[i] = !((x[i] <= lo[i] && grad[i] > 0.0) || (x[i] >= hi[i] && grad[i] < 0.0));
    }
    let idx: Vec<usize> = (0..n).filter(|&i| free[i]).collect();
    let factor = if factored_for == free { factor.unwrap_or_default() } else { factor_free(h, &idx, n)? };
    Some(BoxQp { x, free, factor, iterations })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks the KKT conditions of the box QP at `r.x`.
    fn kkt(h: &[f64], g: &[f64], lo: &[f64], hi: &[f64], r: &BoxQp) {
        let n = g.len();
        for i in 0..n {
            let gi = g[i] + (0..n).map(|j| h[i * n + j] * r.x[j]).sum::<f64>();
            assert!(r.x[i] >= lo[i] && r.x[i] <= hi[i]);
            if r.x[i] > lo[i] && r.x[i] < hi[i] {
                assert!(gi.abs() < 1e-9, "interior variable {i} has gradient {gi}");
            } else if r.x[i] <= lo[i] {
                assert!(gi > -1e-9, "variable {i} at its lower bound with gradient {gi}");
            } else {
                assert!(gi < 1e-9, "variable {i} at its upper bound with gradient {gi}");
            }
        }
    }

    #[test]
    fn unconstrained_solution_is_the_newton_step_and_bounds_give_kkt_points() {
        let h = [4.0, 1.0, 0.5, 1.0, 3.0, -0.2, 0.5, -0.2, 2.0];
        let g = [1.0, -2.0, 0.5];
        let inf = [f64::INFINITY; 3];
        let ninf = [f64::NEG_INFINITY; 3];
        let r = box_qp(&h, &g, &ninf, &inf, &[0.0; 3]).unwrap();
        kkt(&h, &g, &ninf, &inf, &r);
        assert!(r.free.iter().all(|&f| f));
        // Tight boxes: every combination of active bounds is handled.
        for (lo, hi) in
            [([-0.1, -0.1, -0.1], [0.1, 0.1, 0.1]), ([-1.0, 0.0, -1.0], [0.0, 0.3, 1.0]), ([0.2; 3], [0.5; 3])]
        {
            let r = box_qp(&h, &g, &lo, &hi, &[0.0; 3]).unwrap();
            kkt(&h, &g, &lo, &hi, &r);
        }
        // Indefinite H is refused.
        assert!(box_qp(&[1.0, 2.0, 2.0, 1.0], &[1.0, 1.0], &ninf[..2], &inf[..2], &[0.0; 2]).is_none());
    }
}
