use super::{Mat3, Real, Vec3};
use core::ops::Mul;

/// A quaternion (w, x, y, z); unit quaternions represent rotations with
/// MuJoCo's convention (Hamilton product, `q ⊗ p` applies `p` first).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Quat<T> {
    /// Scalar part.
    pub w: T,
    /// Vector part, x.
    pub x: T,
    /// Vector part, y.
    pub y: T,
    /// Vector part, z.
    pub z: T,
}

impl<T: Real> Default for Quat<T> {
    fn default() -> Self {
        Self::identity()
    }
}

impl<T: Real> Quat<T> {
    /// Creates a quaternion from its components (not normalised).
    #[inline(always)]
    pub const fn new(w: T, x: T, y: T, z: T) -> Self {
        Self { w, x, y, z }
    }
    /// The identity rotation.
    #[inline(always)]
    pub fn identity() -> Self {
        Self::new(T::one(), T::zero(), T::zero(), T::zero())
    }
    /// From an array (w, x, y, z).
    #[inline(always)]
    pub fn from_array(a: [T; 4]) -> Self {
        Self::new(a[0], a[1], a[2], a[3])
    }
    /// To an array (w, x, y, z).
    #[inline(always)]
    pub fn to_array(self) -> [T; 4] {
        [self.w, self.x, self.y, self.z]
    }
    /// Reads four consecutive scalars (w, x, y, z).
    #[inline(always)]
    pub fn from_slice(s: &[T]) -> Self {
        Self::new(s[0], s[1], s[2], s[3])
    }
    /// Writes four consecutive scalars (w, x, y, z).
    #[inline(always)]
    pub fn write(self, s: &mut [T]) {
        s[0] = self.w;
        s[1] = self.x;
        s[2] = self.y;
        s[3] = self.z;
    }
    /// Vector part.
    #[inline(always)]
    pub fn vec(self) -> Vec3<T> {
        Vec3::new(self.x, self.y, self.z)
    }
    /// Norm.
    #[inline(always)]
    pub fn norm(self) -> T {
        (self.w * self.w + self.x * self.x + self.y * self.y + self.z * self.z).sqrt()
    }
    /// Unit quaternion in the same direction (identity for a zero
    /// quaternion; NaN stays NaN so bad states are detected, not hidden).
    #[inline(always)]
    pub fn normalize(self) -> Self {
        let n = self.norm();
        if n > T::zero() {
            let s = T::one() / n;
            Self::new(self.w * s, self.x * s, self.y * s, self.z * s)
        } else if n.is_nan() {
            self
        } else {
            Self::identity()
        }
    }
    /// Conjugate (the inverse rotation for a unit quaternion).
    #[inline(always)]
    pub fn conj(self) -> Self {
        Self::new(self.w, -self.x, -self.y, -self.z)
    }
    /// Rotation of `angle` radians about the unit `axis`.
    #[inline]
    pub fn from_axis_angle(axis: Vec3<T>, angle: T) -> Self {
        let h = angle * T::c(0.5);
        let s = h.sin();
        Self::new(h.cos(), axis.x * s, axis.y * s, axis.z * s)
    }
    /// Exact exponential map of a rotation vector `r` (axis × angle, radians):
    /// the unit quaternion `exp(r/2)`. Series expansion near zero keeps it
    /// accurate for tiny rotations.
    #[inline]
    pub fn exp(r: Vec3<T>) -> Self {
        let th2 = r.norm2();
        let th = th2.sqrt();
        let half = T::c(0.5);
        // sin(θ/2)/θ, with its Taylor series below a small threshold.
        let (c, s) = if th < T::c(1e-4) {
            (T::one() - th2 / T::c(8.0), half - th2 / T::c(48.0))
        } else {
            ((th * half).cos(), (th * half).sin() / th)
        };
        Self::new(c, r.x * s, r.y * s, r.z * s)
    }
    /// Logarithm: the rotation vector (axis × angle, angle in [0, π]) of a unit quaternion.
    #[inline]
    pub fn log(self) -> Vec3<T> {
        // Use the representative with w ≥ 0 so the angle is at most π.
        let q = if self.w < T::zero() { Self::new(-self.w, -self.x, -self.y, -self.z) } else { self };
        let v = q.vec();
        let s = v.norm();
        if s < T::c(1e-12) {
            return v * T::c(2.0);
        }
        let angle = T::c(2.0) * s.atan2(q.w);
        v * (angle / s)
    }
    /// Rotates a vector.
    #[inline(always)]
    pub fn rotate(self, v: Vec3<T>) -> Vec3<T> {
        // v + 2 w (u × v) + 2 u × (u × v)
        let u = self.vec();
        let t = u.cross(v) * T::c(2.0);
        v + t * self.w + u.cross(t)
    }
    /// Rotates a vector by the inverse rotation.
    #[inline(always)]
    pub fn inv_rotate(self, v: Vec3<T>) -> Vec3<T> {
        self.conj().rotate(v)
    }
    /// Rotation matrix (columns are the rotated unit axes).
    #[inline]
    pub fn to_mat3(self) -> Mat3<T> {
        let (w, x, y, z) = (self.w, self.x, self.y, self.z);
        let two = T::c(2.0);
        let one = T::one();
        Mat3::from_rows([
            [one - two * (y * y + z * z), two * (x * y - w * z), two * (x * z + w * y)],
            [two * (x * y + w * z), one - two * (x * x + z * z), two * (y * z - w * x)],
            [two * (x * z - w * y), two * (y * z + w * x), one - two * (x * x + y * y)],
        ])
    }
    /// Unit quaternion from a rotation matrix (Shepperd's method).
    pub fn from_mat3(m: &Mat3<T>) -> Self {
        let r = &m.m;
        let tr = r[0][0] + r[1][1] + r[2][2];
        let one = T::one();
        let two = T::c(2.0);
        let quarter = T::c(0.25);
        let q = if tr > T::zero() {
            let s = (tr + one).sqrt() * two;
            Self::new(quarter * s, (r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s)
        } else if r[0][0] > r[1][1] && r[0][0] > r[2][2] {
            let s = (one + r[0][0] - r[1][1] - r[2][2]).sqrt() * two;
            Self::new((r[2][1] - r[1][2]) / s, quarter * s, (r[0][1] + r[1][0]) / s, (r[0][2] + r[2][0]) / s)
        } else if r[1][1] > r[2][2] {
            let s = (one + r[1][1] - r[0][0] - r[2][2]).sqrt() * two;
            Self::new((r[0][2] - r[2][0]) / s, (r[0][1] + r[1][0]) / s, quarter * s, (r[1][2] + r[2][1]) / s)
        } else {
            let s = (one + r[2][2] - r[0][0] - r[1][1]).sqrt() * two;
            Self::new((r[1][0] - r[0][1]) / s, (r[0][2] + r[2][0]) / s, (r[1][2] + r[2][1]) / s, quarter * s)
        };
        q.normalize()
    }
    /// Rotation angle (radians, in [0, π]) between two unit quaternions.
    #[inline]
    pub fn angle_to(self, o: Self) -> T {
        (self.conj() * o).log().norm()
    }
    /// True when every component is finite.
    #[inline(always)]
    pub fn is_finite(self) -> bool {
        self.w.is_finite() && self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
    /// Converts the scalar type.
    #[inline(always)]
    pub fn cast<U: Real>(self) -> Quat<U> {
        Quat::new(U::c(self.w.f64()), U::c(self.x.f64()), U::c(self.y.f64()), U::c(self.z.f64()))
    }
}

impl<T: Real> Mul for Quat<T> {
    type Output = Self;
    /// Hamilton product.
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Self::new(
            self.w * o.w - self.x * o.x - self.y * o.y - self.z * o.z,
            self.w * o.x + self.x * o.w + self.y * o.z - self.z * o.y,
            self.w * o.y - self.x * o.z + self.y * o.w + self.z * o.x,
            self.w * o.z + self.x * o.y - self.y * o.x + self.z * o.w,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_log_roundtrip_and_matrix_agree() {
        let r = Vec3::new(0.3, -1.1, 0.7f64);
        let q = Quat::exp(r);
        assert!((q.norm() - 1.0).abs() < 1e-15);
        let back = q.log();
        assert!((back - r).norm() < 1e-14);
        let v = Vec3::new(0.2, 0.5, -0.9);
        let a = q.rotate(v);
        let b = q.to_mat3() * v;
        assert!((a - b).norm() < 1e-14);
        let q2 = Quat::from_mat3(&q.to_mat3());
        assert!(q.angle_to(q2) < 1e-7);
    }

    #[test]
    fn exp_small_angle_series_matches_closed_form() {
        for &th in &[1e-9, 1e-6, 9e-5, 1.1e-4, 1e-3] {
            let r = Vec3::new(th, 0.0, 0.0f64);
            let q = Quat::exp(r);
            assert!((q.w - (th / 2.0).cos()).abs() < 1e-16);
            assert!((q.x - (th / 2.0).sin()).abs() < 1e-17);
        }
    }
}
