//! Dense linear algebra of the baseline integrators: LU with partial
//! pivoting (TAMSI's and implicit Euler's non-symmetric Newton systems)
//! and the matrix exponential (the exponential integrator). Row-major
//! n×n slices; no allocation once the scratch is sized.

use crate::math::Real;

/// In-place LU factorisation P·A = L·U with partial pivoting (row-major
/// n×n; L unit lower, U upper, both in `a`; `piv[i]` the row swapped into
/// row i). Returns the first zero or non-finite pivot as an error.
pub fn lu_factor<T: Real>(a: &mut [T], n: usize, piv: &mut [usize]) -> Result<(), usize> {
    for k in 0..n {
        let mut p = k;
        let mut best = a[k * n + k].abs();
        for i in k + 1..n {
            let x = a[i * n + k].abs();
            if x > best {
                best = x;
                p = i;
            }
        }
        piv[k] = p;
        if best <= T::zero() || !best.is_finite() {
            return Err(k);
        }
        if p != k {
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
        }
        let inv = T::one() / a[k * n + k];
        for i in k + 1..n {
            let l = a[i * n + k] * inv;
            a[i * n + k] = l;
            if l != T::zero() {
                for j in k + 1..n {
                    let u = a[k * n + j];
                    a[i * n + j] -= l * u;
                }
            }
        }
    }
    Ok(())
}

/// Solves Aᵀ x = b in place with the factor of [`lu_factor`] (P·A = L·U,
/// so Aᵀ = Uᵀ·Lᵀ·P): Uᵀ y = b, Lᵀ w = y, x = Pᵀ w.
pub fn lu_solve_transpose<T: Real>(lu: &[T], n: usize, piv: &[usize], b: &mut [T]) {
    for i in 0..n {
        let mut s = b[i];
        for j in 0..i {
            s -= lu[j * n + i] * b[j];
        }
        b[i] = s / lu[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for j in i + 1..n {
            s -= lu[j * n + i] * b[j];
        }
        b[i] = s;
    }
    for k in (0..n).rev() {
        b.swap(k, piv[k]);
    }
}

/// Solves A x = b in place with the factor of [`lu_factor`].
pub fn lu_solve<T: Real>(lu: &[T], n: usize, piv: &[usize], b: &mut [T]) {
    for (k, &p) in piv.iter().enumerate().take(n) {
        b.swap(k, p);
    }
    for i in 0..n {
        let mut s = b[i];
        for j in 0..i {
            s -= lu[i * n + j] * b[j];
        }
        b[i] = s;
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for j in i + 1..n {
            s -= lu[i * n + j] * b[j];
        }
        b[i] = s / lu[i * n + i];
    }
}

/// c = a·b (row-major n×n).
pub fn matmul<T: Real>(a: &[T], b: &[T], c: &mut [T], n: usize) {
    c[..n * n].iter_mut().for_each(|x| *x = T::zero());
    for i in 0..n {
        for k in 0..n {
            let x = a[i * n + k];
            if x == T::zero() {
                continue;
            }
            let (row_b, row_c) = (&b[k * n..k * n + n], &mut c[i * n..i * n + n]);
            for (cj, bj) in row_c.iter_mut().zip(row_b) {
                *cj += x * *bj;
            }
        }
    }
}

/// Scratch of [`expm`].
#[derive(Clone, Debug, Default)]
pub struct ExpmWork<T> {
    a2: Vec<T>,
    a4: Vec<T>,
    a6: Vec<T>,
    u: Vec<T>,
    v: Vec<T>,
    tmp: Vec<T>,
    piv: Vec<usize>,
}

/// Degree of the diagonal Padé approximant of [`expm`].
pub const PADE_DEGREE: usize = 7;

/// Higham's (2005) bound θ₇ on ‖A‖₁ below which the [7/7] Padé
/// approximant of e^A is accurate to double precision.
const THETA_7: f64 = 0.95;

/// Coefficients c_k = (2m − k)!·m! / ((2m)!·k!·(m − k)!) of the [m/m] Padé
/// approximant of eˣ: N(x) = Σ c_k x^k, D(x) = N(−x).
fn pade_coefficients(m: usize) -> [f64; PADE_DEGREE + 1] {
    let mut c = [0.0; PADE_DEGREE + 1];
    c[0] = 1.0;
    for k in 1..=m {
        // c_k / c_{k−1} = (m − k + 1) / (k (2m − k + 1)).
        c[k] = c[k - 1] * (m - k + 1) as f64 / (k as f64 * (2 * m - k + 1) as f64);
    }
    c
}

/// The matrix exponential e^A of `a` (row-major n×n) into `out`, by scaling
/// and squaring with the [7/7] Padé approximant (Higham 2005, without
/// balancing): A is scaled by 2^-s until ‖A‖₁ ≤ θ₇, then the approximant
/// is squared s times. Returns s. `a` is used as scratch.
#[allow(clippy::needless_range_loop)] // dense matrix loops read best with indices
pub fn expm<T: Real>(a: &mut [T], n: usize, out: &mut [T], w: &mut ExpmWork<T>) -> Result<u32, usize> {
    let nn = n * n;
    for v in [&mut w.a2, &mut w.a4, &mut w.a6, &mut w.u, &mut w.v, &mut w.tmp] {
        v.resize(nn, T::zero());
    }
    w.piv.resize(n, 0);
    let norm1 = (0..n).map(|j| (0..n).map(|i| a[i * n + j].abs().f64()).sum::<f64>()).fold(0.0, f64::max);
    let s = if norm1 > THETA_7 { (norm1 / THETA_7).log2().ceil() as u32 } else { 0 };
    let scale = T::c(0.5f64.powi(s as i32));
    a[..nn].iter_mut().for_each(|x| *x *= scale);
    let c = pade_coefficients(PADE_DEGREE).map(T::c);
    matmul(a, a, &mut w.a2, n);
    matmul(&w.a2, &w.a2, &mut w.a4, n);
    matmul(&w.a4, &w.a2, &mut w.a6, n);
    // U = A (c7 A⁶ + c5 A⁴ + c3 A² + c1 I), V = c6 A⁶ + c4 A⁴ + c2 A² + c0 I.
    for i in 0..nn {
        w.tmp[i] = c[7] * w.a6[i] + c[5] * w.a4[i] + c[3] * w.a2[i];
        w.v[i] = c[6] * w.a6[i] + c[4] * w.a4[i] + c[2] * w.a2[i];
    }
    for i in 0..n {
        w.tmp[i * n + i] += c[1];
        w.v[i * n + i] += c[0];
    }
    matmul(a, &w.tmp, &mut w.u, n);
    // D = V − U (into tmp), N = V + U (into out); out ← D⁻¹ N column by column.
    for i in 0..nn {
        w.tmp[i] = w.v[i] - w.u[i];
        out[i] = w.v[i] + w.u[i];
    }
    lu_factor(&mut w.tmp, n, &mut w.piv)?;
    let col = &mut w.a2;
    for j in 0..n {
        for i in 0..n {
            col[i] = out[i * n + j];
        }
        lu_solve(&w.tmp, n, &w.piv, &mut col[..n]);
        for i in 0..n {
            out[i * n + j] = col[i];
        }
    }
    for _ in 0..s {
        w.a4[..nn].copy_from_slice(&out[..nn]);
        matmul(&w.a4, &w.a4, out, n);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Solves A x = b (or Aᵀ x = b) for a known x with the LU factors of a
    /// 3 × 3 system whose factorization pivots.
    fn check_lu_solve(transpose: bool) {
        let a0: [f64; 9] = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, -1.0, 4.0];
        let x: [f64; 3] = [1.0, -2.0, 0.5];
        let at = |i: usize, j: usize| if transpose { a0[j * 3 + i] } else { a0[i * 3 + j] };
        let mut b = [0.0f64; 3];
        for (i, bi) in b.iter_mut().enumerate() {
            *bi = (0..3).map(|j| at(i, j) * x[j]).sum();
        }
        let mut a = a0;
        let mut piv = [0; 3];
        lu_factor(&mut a, 3, &mut piv).unwrap();
        assert_ne!(piv, [0, 1, 2], "the case must pivot");
        if transpose {
            lu_solve_transpose(&a, 3, &piv, &mut b);
        } else {
            lu_solve(&a, 3, &piv, &mut b);
        }
        for i in 0..3 {
            assert!((b[i] - x[i]).abs() < 1e-14, "{b:?}");
        }
    }

    #[test]
    fn lu_solves_a_nonsymmetric_system() {
        check_lu_solve(false);
    }

    #[test]
    fn lu_transpose_solve_matches_the_transposed_system() {
        check_lu_solve(true);
    }

    /// e^{tA} of a damped oscillator against its closed form, for a
    /// stiff (scaled) and a mild case.
    #[test]
    fn expm_matches_the_damped_oscillator() {
        for (k, c, t) in [(4.0f64, 0.4f64, 0.3f64), (1e6, 300.0, 0.01)] {
            // ẍ + c ẋ + k x = 0 → A = [[0, 1], [−k, −c]].
            let mut a = [0.0, t, -k * t, -c * t];
            let mut out = [0.0; 4];
            let mut w = ExpmWork::default();
            expm(&mut a, 2, &mut out, &mut w).unwrap();
            // Closed form for x(0)=1, ẋ(0)=0 (underdamped).
            let zeta_w = c / 2.0;
            let wd = (k - zeta_w * zeta_w).sqrt();
            let e = (-zeta_w * t).exp();
            let x = e * ((wd * t).cos() + zeta_w / wd * (wd * t).sin());
            let xd = -e * (k / wd) * (wd * t).sin();
            assert!((out[0] - x).abs() < 1e-12 * (1.0 + x.abs()), "x {} vs {x}", out[0]);
            assert!((out[2] - xd).abs() < 1e-10 * (1.0 + xd.abs()), "ẋ {} vs {xd}", out[2]);
        }
    }
}
