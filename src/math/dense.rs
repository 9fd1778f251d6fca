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
    assert!(a.len() >= n * n);
    for j in 0..n {
        // Rows j and below, split so row j can be read while later rows are written.
        let (head, tail) = a.split_at_mut((j + 1) * n);
        let row_j = &mut head[j * n..j * n + j + 1];
        let d = row_j[j] - dot(&row_j[..j], &row_j[..j]);
        if !(d > T::zero()) || !d.is_finite() {
            return Err(CholeskyError { pivot: j });
        }
        let d = d.sqrt();
        row_j[j] = d;
        let inv = T::one() / d;
        let row_j = &row_j[..j];
        for row_i in tail.chunks_exact_mut(n).take(n - j - 1) {
            row_i[j] = (row_i[j] - dot(&row_i[..j], row_j)) * inv;
        }
    }
    Ok(())
}

/// Σ aᵢbᵢ over equal-length slices, in four interleaved partial sums (the
/// additions of one sum wait on each other; four keep the FPU busy).
#[inline]
pub(crate) fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // A free body's 6 dofs: the block-sparse ICF factorization's common case, unrolled.
    if let (Ok(x), Ok(y)) = (<&[T; 6]>::try_from(a), <&[T; 6]>::try_from(b)) {
        return (x[0] * y[0] + x[1] * y[1]) + (x[2] * y[2] + x[3] * y[3]) + (x[4] * y[4] + x[5] * y[5]);
    }
    let mut s = [T::zero(); 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        s[0] += x[0] * y[0];
        s[1] += x[1] * y[1];
        s[2] += x[2] * y[2];
        s[3] += x[3] * y[3];
    }
    for (x, y) in ra.iter().zip(rb) {
        s[0] += *x * *y;
    }
    (s[0] + s[1]) + (s[2] + s[3])
}

/// Solves `L Lᵀ x = b` in place (`b` becomes `x`), with `L` from [`cholesky_factor`].
pub fn cholesky_solve_in_place<T: Real>(l: &[T], n: usize, b: &mut [T]) {
    assert!(l.len() >= n * n && b.len() >= n);
    // Forward: L y = b, row by row.
    for i in 0..n {
        let row = &l[i * n..i * n + i + 1];
        b[i] = (b[i] - dot(&row[..i], &b[..i])) / row[i];
    }
    // Backward: Lᵀ x = y, column-oriented so L is read by rows.
    for i in (0..n).rev() {
        let row = &l[i * n..i * n + i + 1];
        let x = b[i] / row[i];
        b[i] = x;
        for (bk, lk) in b[..i].iter_mut().zip(&row[..i]) {
            *bk -= *lk * x;
        }
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
