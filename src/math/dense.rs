//! Dense symmetric positive-definite solves on row-major `n×n` slices.
//! Written without allocation so the same loops run on the GPU.

use super::Real;

/// Failure of a Cholesky factorisation: the matrix is not numerically
/// positive definite at pivot `pivot` (or holds a non-finite value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("matrix is not positive definite (pivot {pivot})")]
pub struct CholeskyError {
    /// Row whose pivot was not positive.
    pub pivot: usize,
}

/// In-place Cholesky factorisation `A = L Lᵀ` of a symmetric positive-definite
/// row-major `n×n` matrix. On success the lower triangle of `a` holds `L`
/// (the strict upper triangle is left untouched).
pub fn cholesky_factor<T: Real>(a: &mut [T], n: usize) -> Result<(), CholeskyError> {
    debug_assert!(a.len() >= n * n);
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            let l = a[j * n + k];
            d -= l * l;
        }
        if !(d > T::zero()) || !d.is_finite() {
            return Err(CholeskyError { pivot: j });
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        let inv = T::one() / d;
        for i in (j + 1)..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s * inv;
        }
    }
    Ok(())
}

/// Solves `L Lᵀ x = b` in place (`b` becomes `x`), with `L` from [`cholesky_factor`].
pub fn cholesky_solve_in_place<T: Real>(l: &[T], n: usize, b: &mut [T]) {
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in (i + 1)..n {
            s -= l[k * n + i] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_spd_system() {
        let n = 3;
        let a0 = [4.0, 1.0, 0.5, 1.0, 3.0, -0.2, 0.5, -0.2, 1.0f64];
        let mut a = a0;
        cholesky_factor(&mut a, n).unwrap();
        let mut x = [1.0, 2.0, 3.0];
        cholesky_solve_in_place(&a, n, &mut x);
        for i in 0..n {
            let r: f64 = (0..n).map(|j| a0[i * n + j] * x[j]).sum();
            assert!((r - [1.0, 2.0, 3.0][i]).abs() < 1e-13);
        }
    }

    #[test]
    fn rejects_indefinite() {
        let mut a = [1.0, 2.0, 2.0, 1.0f64];
        assert_eq!(cholesky_factor(&mut a, 2), Err(CholeskyError { pivot: 1 }));
    }
}
