use super::{Real, Vec3};
use core::ops::{Add, Mul, Sub};

/// A 3×3 matrix stored row-major: `m[row][col]`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Mat3<T> {
    /// Rows.
    pub m: [[T; 3]; 3],
}

impl<T: Real> Mat3<T> {
    /// From rows.
    #[inline(always)]
    pub fn from_rows(m: [[T; 3]; 3]) -> Self {
        Self { m }
    }
    /// From columns.
    #[inline(always)]
    pub fn from_cols(a: Vec3<T>, b: Vec3<T>, c: Vec3<T>) -> Self {
        Self::from_rows([[a.x, b.x, c.x], [a.y, b.y, c.y], [a.z, b.z, c.z]])
    }
    /// The zero matrix.
    #[inline(always)]
    pub fn zero() -> Self {
        Self { m: [[T::zero(); 3]; 3] }
    }
    /// The identity matrix.
    #[inline(always)]
    pub fn identity() -> Self {
        Self::diag(Vec3::splat(T::one()))
    }
    /// Diagonal matrix.
    #[inline(always)]
    pub fn diag(d: Vec3<T>) -> Self {
        let z = T::zero();
        Self::from_rows([[d.x, z, z], [z, d.y, z], [z, z, d.z]])
    }
    /// Outer product `a bᵀ`.
    #[inline(always)]
    pub fn outer(a: Vec3<T>, b: Vec3<T>) -> Self {
        Self::from_rows([
            [a.x * b.x, a.x * b.y, a.x * b.z],
            [a.y * b.x, a.y * b.y, a.y * b.z],
            [a.z * b.x, a.z * b.y, a.z * b.z],
        ])
    }
    /// Cross-product matrix: `skew(a) b = a × b`.
    #[inline(always)]
    pub fn skew(a: Vec3<T>) -> Self {
        let z = T::zero();
        Self::from_rows([[z, -a.z, a.y], [a.z, z, -a.x], [-a.y, a.x, z]])
    }
    /// Column `j`.
    #[inline(always)]
    pub fn col(&self, j: usize) -> Vec3<T> {
        Vec3::new(self.m[0][j], self.m[1][j], self.m[2][j])
    }
    /// Row `i`.
    #[inline(always)]
    pub fn row(&self, i: usize) -> Vec3<T> {
        Vec3::from_array(self.m[i])
    }
    /// Transpose.
    #[inline(always)]
    pub fn transpose(&self) -> Self {
        let m = &self.m;
        Self::from_rows([[m[0][0], m[1][0], m[2][0]], [m[0][1], m[1][1], m[2][1]], [m[0][2], m[1][2], m[2][2]]])
    }
    /// `selfᵀ v`.
    #[inline(always)]
    pub fn tmul(&self, v: Vec3<T>) -> Vec3<T> {
        Vec3::new(self.col(0).dot(v), self.col(1).dot(v), self.col(2).dot(v))
    }
    /// Scales every entry.
    #[inline(always)]
    pub fn scale(&self, s: T) -> Self {
        let mut r = *self;
        for row in r.m.iter_mut() {
            for x in row.iter_mut() {
                *x *= s;
            }
        }
        r
    }
    /// Determinant.
    #[inline]
    pub fn det(&self) -> T {
        let m = &self.m;
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    }
    /// Symmetric eigen-decomposition by cyclic Jacobi rotations: returns
    /// eigenvalues (ascending) and the rotation whose columns are the
    /// corresponding eigenvectors (right-handed, determinant +1).
    pub fn sym_eigen(&self) -> (Vec3<T>, Mat3<T>) {
        let mut a = *self;
        let mut v = Mat3::identity();
        for _sweep in 0..50 {
            let off = a.m[0][1].abs() + a.m[0][2].abs() + a.m[1][2].abs();
            let scale = a.m[0][0].abs() + a.m[1][1].abs() + a.m[2][2].abs();
            if off <= T::EPS * T::c(1e-3) * scale.max(T::min_positive_value()) || off == T::zero() {
                break;
            }
            for (p, q) in [(0usize, 1usize), (0, 2), (1, 2)] {
                let apq = a.m[p][q];
                if apq == T::zero() {
                    continue;
                }
                let theta = (a.m[q][q] - a.m[p][p]) / (T::c(2.0) * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + T::one()).sqrt());
                let c = T::one() / (t * t + T::one()).sqrt();
                let s = t * c;
                // A ← Gᵀ A G with G the rotation in the (p, q) plane.
                for k in 0..3 {
                    let akp = a.m[k][p];
                    let akq = a.m[k][q];
                    a.m[k][p] = c * akp - s * akq;
                    a.m[k][q] = s * akp + c * akq;
                }
                for k in 0..3 {
                    let apk = a.m[p][k];
                    let aqk = a.m[q][k];
                    a.m[p][k] = c * apk - s * aqk;
                    a.m[q][k] = s * apk + c * aqk;
                }
                for k in 0..3 {
                    let vkp = v.m[k][p];
                    let vkq = v.m[k][q];
                    v.m[k][p] = c * vkp - s * vkq;
                    v.m[k][q] = s * vkp + c * vkq;
                }
            }
        }
        // Sort ascending.
        let mut idx = [0usize, 1, 2];
        let d = [a.m[0][0], a.m[1][1], a.m[2][2]];
        idx.sort_by(|&i, &j| d[i].partial_cmp(&d[j]).unwrap_or(core::cmp::Ordering::Equal));
        let vals = Vec3::new(d[idx[0]], d[idx[1]], d[idx[2]]);
        let mut vecs = Mat3::from_cols(v.col(idx[0]), v.col(idx[1]), v.col(idx[2]));
        if vecs.det() < T::zero() {
            for row in vecs.m.iter_mut() {
                row[2] = -row[2];
            }
        }
        (vals, vecs)
    }
}

impl<T: Real> Mul<Vec3<T>> for Mat3<T> {
    type Output = Vec3<T>;
    #[inline(always)]
    fn mul(self, v: Vec3<T>) -> Vec3<T> {
        Vec3::new(self.row(0).dot(v), self.row(1).dot(v), self.row(2).dot(v))
    }
}

impl<T: Real> Mul for Mat3<T> {
    type Output = Self;
    #[inline]
    fn mul(self, o: Self) -> Self {
        let mut r = Self::zero();
        for i in 0..3 {
            for j in 0..3 {
                r.m[i][j] = self.m[i][0] * o.m[0][j] + self.m[i][1] * o.m[1][j] + self.m[i][2] * o.m[2][j];
            }
        }
        r
    }
}

impl<T: Real> Add for Mat3<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        let mut r = self;
        for i in 0..3 {
            for j in 0..3 {
                r.m[i][j] += o.m[i][j];
            }
        }
        r
    }
}

impl<T: Real> Sub for Mat3<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        let mut r = self;
        for i in 0..3 {
            for j in 0..3 {
                r.m[i][j] -= o.m[i][j];
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sym_eigen_reconstructs() {
        let a = Mat3::from_rows([[4.0, 1.0, 0.5], [1.0, 3.0, -0.2], [0.5, -0.2, 1.0f64]]);
        let (d, v) = a.sym_eigen();
        let r = v * Mat3::diag(d) * v.transpose();
        for i in 0..3 {
            for j in 0..3 {
                assert!((r.m[i][j] - a.m[i][j]).abs() < 1e-12);
            }
        }
        assert!(d.x <= d.y && d.y <= d.z);
        assert!((v.det() - 1.0).abs() < 1e-12);
    }
}
