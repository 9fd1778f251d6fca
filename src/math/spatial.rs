//! Spatial (6D) vectors in a world-aligned frame about a reference point,
//! in MuJoCo's order: rotational part first.
//!
//! A [`Motion`] `[ω; v]` is an angular velocity and the linear velocity of
//! the material point at the reference point; a [`Force`] `[τ; f]` is a
//! torque about the reference point and a force.

use super::{Mat3, Real, Vec3};
use core::ops::{Add, AddAssign, Mul, Neg, Sub};

/// Spatial motion vector `[ω; v]` (rad/s; m/s at the reference point).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Motion<T> {
    /// Angular part.
    pub ang: Vec3<T>,
    /// Linear part at the reference point.
    pub lin: Vec3<T>,
}

/// Spatial force vector `[τ; f]` (N·m about the reference point; N).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Force<T> {
    /// Torque about the reference point.
    pub ang: Vec3<T>,
    /// Force.
    pub lin: Vec3<T>,
}

impl<T: Real> Motion<T> {
    /// Creates a motion vector.
    #[inline(always)]
    pub fn new(ang: Vec3<T>, lin: Vec3<T>) -> Self {
        Self { ang, lin }
    }
    /// Zero motion.
    #[inline(always)]
    pub fn zero() -> Self {
        Self::new(Vec3::zero(), Vec3::zero())
    }
    /// Motion cross motion: `self ×ₘ m` (derivative of `m` carried by a frame moving with `self`).
    #[inline(always)]
    pub fn cross_motion(self, m: Motion<T>) -> Motion<T> {
        Motion::new(self.ang.cross(m.ang), self.ang.cross(m.lin) + self.lin.cross(m.ang))
    }
    /// Motion cross force: `self ×_f f`.
    #[inline(always)]
    pub fn cross_force(self, f: Force<T>) -> Force<T> {
        Force::new(self.ang.cross(f.ang) + self.lin.cross(f.lin), self.ang.cross(f.lin))
    }
    /// Power pairing `self · f` (W).
    #[inline(always)]
    pub fn dot(self, f: Force<T>) -> T {
        self.ang.dot(f.ang) + self.lin.dot(f.lin)
    }
    /// Linear velocity of the material point at `r` relative to the reference point.
    #[inline(always)]
    pub fn point_velocity(self, r: Vec3<T>) -> Vec3<T> {
        self.lin + self.ang.cross(r)
    }
    /// Scales both parts.
    #[inline(always)]
    pub fn scale(self, s: T) -> Self {
        Self::new(self.ang * s, self.lin * s)
    }
}

impl<T: Real> Add for Motion<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self::new(self.ang + o.ang, self.lin + o.lin)
    }
}
impl<T: Real> Sub for Motion<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self::new(self.ang - o.ang, self.lin - o.lin)
    }
}
impl<T: Real> Neg for Motion<T> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Self::new(-self.ang, -self.lin)
    }
}
impl<T: Real> AddAssign for Motion<T> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}

impl<T: Real> Force<T> {
    /// Creates a force vector.
    #[inline(always)]
    pub fn new(ang: Vec3<T>, lin: Vec3<T>) -> Self {
        Self { ang, lin }
    }
    /// Zero force.
    #[inline(always)]
    pub fn zero() -> Self {
        Self::new(Vec3::zero(), Vec3::zero())
    }
}
impl<T: Real> Add for Force<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self::new(self.ang + o.ang, self.lin + o.lin)
    }
}
impl<T: Real> Sub for Force<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self::new(self.ang - o.ang, self.lin - o.lin)
    }
}
impl<T: Real> AddAssign for Force<T> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}

/// Spatial inertia of a rigid body about the reference point, world axes:
/// mass `m` (kg), first moment `h = m·(c − p)` (kg·m; `c` the centre of mass,
/// `p` the reference point) and rotational inertia `i` about the reference
/// point (kg·m²).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpatialInertia<T> {
    /// Mass (kg).
    pub m: T,
    /// First moment of mass about the reference point (kg·m).
    pub h: Vec3<T>,
    /// Rotational inertia about the reference point, world axes (kg·m²).
    pub i: Mat3<T>,
}

impl<T: Real> SpatialInertia<T> {
    /// Zero inertia.
    #[inline(always)]
    pub fn zero() -> Self {
        Self { m: T::zero(), h: Vec3::zero(), i: Mat3::zero() }
    }
    /// From mass, centre of mass `com` relative to the reference point and the
    /// rotational inertia `ic` about the centre of mass (world axes).
    #[inline]
    pub fn from_com(m: T, com: Vec3<T>, ic: Mat3<T>) -> Self {
        // Parallel axis theorem: I_p = I_c + m (|c|² 1 − c cᵀ).
        let shift = (Mat3::identity().scale(com.norm2()) - Mat3::outer(com, com)).scale(m);
        Self { m, h: com * m, i: ic + shift }
    }
}

impl<T: Real> Mul<Motion<T>> for SpatialInertia<T> {
    type Output = Force<T>;
    /// Momentum of a body moving with `v`: `[I ω + h × v; m v − h × ω]`.
    #[inline(always)]
    fn mul(self, v: Motion<T>) -> Force<T> {
        Force::new(self.i * v.ang + self.h.cross(v.lin), v.lin * self.m - self.h.cross(v.ang))
    }
}

impl<T: Real> Add for SpatialInertia<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self { m: self.m + o.m, h: self.h + o.h, i: self.i + o.i }
    }
}
impl<T: Real> AddAssign for SpatialInertia<T> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}
