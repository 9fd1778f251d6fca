//! Small fixed-size linear algebra, quaternions and spatial (6D) algebra,
//! generic over the scalar type ([`Real`]: `f32` or `f64`).
//!
//! Everything here is plain data with `Copy` semantics and branch-light
//! functions, so that each routine has an obvious WGSL twin in
//! `kernels/common.wgsl`.

mod dense;
mod mat3;
mod quat;
mod spatial;
mod tree;
mod vec3;

pub(crate) use dense::dot as dense_dot;
pub use dense::{CholeskyError, cholesky_factor, cholesky_solve_in_place};
pub use mat3::Mat3;
pub use quat::Quat;
pub use spatial::{Force, Motion, SpatialInertia};
pub use tree::TreeLdl;
pub use vec3::Vec3;

use core::fmt::{Debug, Display};
use core::iter::Sum;
use core::ops::{AddAssign, DivAssign, MulAssign, SubAssign};

/// Floating-point scalar used throughout the simulator: `f32` (GPU parity
/// reference) or `f64` (accuracy and gradient reference).
pub trait Real:
    num_traits::Float
    + num_traits::FloatConst
    + Default
    + Debug
    + Display
    + Send
    + Sync
    + 'static
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Sum
    + bytemuck::Pod
{
    /// Converts an `f64` constant or model parameter to this scalar type.
    fn c(x: f64) -> Self;
    /// Converts to `f64` (exact for both implementations).
    fn f64(self) -> f64;
    /// Machine epsilon of this type.
    const EPS: Self;
}

impl Real for f64 {
    #[inline(always)]
    fn c(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self
    }
    const EPS: Self = f64::EPSILON;
}

impl Real for f32 {
    #[inline(always)]
    fn c(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self as f64
    }
    const EPS: Self = f32::EPSILON;
}

/// Converts a `[f64; 3]` model constant into a [`Vec3`] of scalar `T`.
#[inline(always)]
pub fn v3<T: Real>(a: [f64; 3]) -> Vec3<T> {
    Vec3::new(T::c(a[0]), T::c(a[1]), T::c(a[2]))
}

/// Converts a `[f64; 4]` model quaternion (w, x, y, z) into a [`Quat`] of scalar `T`.
#[inline(always)]
pub fn q4<T: Real>(a: [f64; 4]) -> Quat<T> {
    Quat::new(T::c(a[0]), T::c(a[1]), T::c(a[2]), T::c(a[3]))
}
