use super::Real;
use core::ops::{Add, AddAssign, Div, Index, IndexMut, Mul, Neg, Sub, SubAssign};

/// A 3-vector (x, y, z).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Vec3<T> {
    /// x component.
    pub x: T,
    /// y component.
    pub y: T,
    /// z component.
    pub z: T,
}

impl<T: Real> Vec3<T> {
    /// Creates a vector from its components.
    #[inline(always)]
    pub const fn new(x: T, y: T, z: T) -> Self {
        Self { x, y, z }
    }
    /// The zero vector.
    #[inline(always)]
    pub fn zero() -> Self {
        Self::new(T::zero(), T::zero(), T::zero())
    }
    /// All components equal to `s`.
    #[inline(always)]
    pub fn splat(s: T) -> Self {
        Self::new(s, s, s)
    }
    /// Unit vector along axis `i` (0, 1, 2).
    #[inline(always)]
    pub fn unit(i: usize) -> Self {
        let mut v = Self::zero();
        v[i] = T::one();
        v
    }
    /// From an array.
    #[inline(always)]
    pub fn from_array(a: [T; 3]) -> Self {
        Self::new(a[0], a[1], a[2])
    }
    /// To an array.
    #[inline(always)]
    pub fn to_array(self) -> [T; 3] {
        [self.x, self.y, self.z]
    }
    /// Reads three consecutive scalars from a slice.
    #[inline(always)]
    pub fn from_slice(s: &[T]) -> Self {
        Self::new(s[0], s[1], s[2])
    }
    /// Writes into three consecutive scalars of a slice.
    #[inline(always)]
    pub fn write(self, s: &mut [T]) {
        s[0] = self.x;
        s[1] = self.y;
        s[2] = self.z;
    }
    /// Dot product.
    #[inline(always)]
    pub fn dot(self, o: Self) -> T {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    /// Cross product `self × o`.
    #[inline(always)]
    pub fn cross(self, o: Self) -> Self {
        Self::new(self.y * o.z - self.z * o.y, self.z * o.x - self.x * o.z, self.x * o.y - self.y * o.x)
    }
    /// Squared Euclidean norm.
    #[inline(always)]
    pub fn norm2(self) -> T {
        self.dot(self)
    }
    /// Euclidean norm.
    #[inline(always)]
    pub fn norm(self) -> T {
        self.norm2().sqrt()
    }
    /// Unit vector in the same direction; returns zero for a zero vector.
    #[inline(always)]
    pub fn normalize(self) -> Self {
        let n = self.norm();
        if n > T::zero() { self * (T::one() / n) } else { Self::zero() }
    }
    /// Component-wise product.
    #[inline(always)]
    pub fn cmul(self, o: Self) -> Self {
        Self::new(self.x * o.x, self.y * o.y, self.z * o.z)
    }
    /// Component-wise absolute value.
    #[inline(always)]
    pub fn abs(self) -> Self {
        Self::new(self.x.abs(), self.y.abs(), self.z.abs())
    }
    /// Component-wise minimum.
    #[inline(always)]
    pub fn min(self, o: Self) -> Self {
        Self::new(self.x.min(o.x), self.y.min(o.y), self.z.min(o.z))
    }
    /// Component-wise maximum.
    #[inline(always)]
    pub fn max(self, o: Self) -> Self {
        Self::new(self.x.max(o.x), self.y.max(o.y), self.z.max(o.z))
    }
    /// Largest component.
    #[inline(always)]
    pub fn max_elem(self) -> T {
        self.x.max(self.y).max(self.z)
    }
    /// True when every component is finite.
    #[inline(always)]
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
    /// Converts the scalar type.
    #[inline(always)]
    pub fn cast<U: Real>(self) -> Vec3<U> {
        Vec3::new(U::c(self.x.f64()), U::c(self.y.f64()), U::c(self.z.f64()))
    }
    /// Some unit vector orthogonal to `self` (which must be a unit vector).
    #[inline]
    pub fn any_orthonormal(self) -> Self {
        // Cross with the axis least aligned with self: well conditioned.
        let a = self.abs();
        let e = if a.x <= a.y && a.x <= a.z {
            Self::unit(0)
        } else if a.y <= a.z {
            Self::unit(1)
        } else {
            Self::unit(2)
        };
        self.cross(e).normalize()
    }
}

impl<T: Real> Add for Vec3<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}
impl<T: Real> Sub for Vec3<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}
impl<T: Real> Neg for Vec3<T> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Self::new(-self.x, -self.y, -self.z)
    }
}
impl<T: Real> Mul<T> for Vec3<T> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, s: T) -> Self {
        Self::new(self.x * s, self.y * s, self.z * s)
    }
}
impl<T: Real> Div<T> for Vec3<T> {
    type Output = Self;
    #[inline(always)]
    fn div(self, s: T) -> Self {
        Self::new(self.x / s, self.y / s, self.z / s)
    }
}
impl<T: Real> AddAssign for Vec3<T> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}
impl<T: Real> SubAssign for Vec3<T> {
    #[inline(always)]
    fn sub_assign(&mut self, o: Self) {
        *self = *self - o;
    }
}
impl<T> Index<usize> for Vec3<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        match i {
            0 => &self.x,
            1 => &self.y,
            2 => &self.z,
            _ => panic!("Vec3 index {i} out of range"),
        }
    }
}
impl<T> IndexMut<usize> for Vec3<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        match i {
            0 => &mut self.x,
            1 => &mut self.y,
            2 => &mut self.z,
            _ => panic!("Vec3 index {i} out of range"),
        }
    }
}
