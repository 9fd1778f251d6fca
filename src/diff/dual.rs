//! Forward-mode dual numbers: a value and `N` tangents, implementing
//! [`Real`] so that every generic CPU stage (kinematics, collision, the ICF
//! builder and cost) runs on them unchanged.
//!
//! The value part of every operation is computed with exactly the same `f64`
//! operation as plain `f64` (`a.v * b.v`, `a.v.sqrt()`, `a.v.mul_add(..)`,
//! …), and comparisons look at values only, so a pipeline run in `Dual<N>`
//! takes the same branches (contact sets, manifold features, clamps) and
//! produces bit-identical values to the `f64` run at the same inputs. The
//! tangents follow the usual derivative rules; at kinks (`abs`, `max`,
//! `min`, clamps) they follow the branch the value took.
//!
//! Non-differentiable points are given finite one-sided or zero
//! derivatives where the usual rule would produce `0/0`: `sqrt` (and
//! `hypot`, `cbrt`) at 0 with a zero input tangent gives a zero tangent —
//! the case of the norm of a zero vector, whose input tangent `2 x·dx`
//! vanishes. `powf` with a constant exponent never evaluates `ln` of the
//! base.

// Index loops over the N tangents read better than zipped iterators here.
#![allow(clippy::needless_range_loop)]

use crate::math::Real;
use core::cmp::Ordering;
use core::fmt;
use core::iter::Sum;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign};
use num_traits::{Float, FloatConst, Num, NumCast, One, ToPrimitive, Zero};

/// A dual number: value `v` and `N` tangents `d` (directional derivatives
/// with respect to `N` seeded inputs).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Dual<const N: usize> {
    /// Value (bit-identical to the `f64` computation).
    pub v: f64,
    /// Tangents ∂v/∂(seed i), i < N.
    pub d: [f64; N],
}

// SAFETY: `repr(C)` struct of `f64` fields only (no padding, every bit
// pattern is valid), `Copy` and `'static`.
unsafe impl<const N: usize> bytemuck::Zeroable for Dual<N> {}
// SAFETY: see above.
unsafe impl<const N: usize> bytemuck::Pod for Dual<N> {}

impl<const N: usize> Dual<N> {
    /// A constant (all tangents zero).
    #[inline(always)]
    pub const fn cst(v: f64) -> Self {
        Self { v, d: [0.0; N] }
    }
    /// An input seeded in tangent slot `slot` (tangent 1 there, 0 elsewhere).
    #[inline]
    pub fn var(v: f64, slot: usize) -> Self {
        let mut d = [0.0; N];
        d[slot] = 1.0;
        Self { v, d }
    }
    /// Value `v` with tangents `d · f` (chain rule for a unary function with derivative `f`).
    #[inline(always)]
    fn chain(v: f64, x: &Self, f: f64) -> Self {
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = x.d[i] * f;
        }
        Self { v, d }
    }
    /// Value `v` with tangents `a·fa + b·fb`.
    #[inline(always)]
    fn chain2(v: f64, a: &Self, fa: f64, b: &Self, fb: f64) -> Self {
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = a.d[i] * fa + b.d[i] * fb;
        }
        Self { v, d }
    }
    /// Tangents of `x` divided by `den`, with 0/0 = 0 (non-differentiable
    /// point reached with a zero input tangent).
    #[inline(always)]
    fn chain_div(v: f64, x: &Self, den: f64) -> Self {
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = if x.d[i] == 0.0 { 0.0 } else { x.d[i] / den };
        }
        Self { v, d }
    }
    /// True when every tangent is zero.
    #[inline]
    pub fn is_constant(&self) -> bool {
        self.d.iter().all(|&x| x == 0.0)
    }
}

impl<const N: usize> Default for Dual<N> {
    fn default() -> Self {
        Self::cst(0.0)
    }
}

impl<const N: usize> fmt::Debug for Dual<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dual({:?}, {:?})", self.v, self.d)
    }
}

impl<const N: usize> fmt::Display for Dual<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.v, f)
    }
}

impl<const N: usize> PartialEq for Dual<N> {
    /// Compares values only (branch decisions must match the `f64` path).
    #[inline(always)]
    fn eq(&self, o: &Self) -> bool {
        self.v == o.v
    }
}

impl<const N: usize> PartialOrd for Dual<N> {
    /// Compares values only.
    #[inline(always)]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.v.partial_cmp(&o.v)
    }
}

impl<const N: usize> Add for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = self.d[i] + o.d[i];
        }
        Self { v: self.v + o.v, d }
    }
}

impl<const N: usize> Sub for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = self.d[i] - o.d[i];
        }
        Self { v: self.v - o.v, d }
    }
}

impl<const N: usize> Mul for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Self::chain2(self.v * o.v, &self, o.v, &o, self.v)
    }
}

impl<const N: usize> Div for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        let v = self.v / o.v;
        let inv = 1.0 / o.v;
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = (self.d[i] - v * o.d[i]) * inv;
        }
        Self { v, d }
    }
}

impl<const N: usize> Rem for Dual<N> {
    type Output = Self;
    #[inline]
    fn rem(self, o: Self) -> Self {
        // a % b = a − trunc(a/b)·b, with trunc piecewise constant.
        let q = (self.v / o.v).trunc();
        Self::chain2(self.v % o.v, &self, 1.0, &o, -q)
    }
}

impl<const N: usize> Neg for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = -self.d[i];
        }
        Self { v: -self.v, d }
    }
}

macro_rules! assign_op {
    ($tr:ident, $f:ident, $op:tt) => {
        impl<const N: usize> $tr for Dual<N> {
            #[inline(always)]
            fn $f(&mut self, o: Self) {
                *self = *self $op o;
            }
        }
    };
}
assign_op!(AddAssign, add_assign, +);
assign_op!(SubAssign, sub_assign, -);
assign_op!(MulAssign, mul_assign, *);
assign_op!(DivAssign, div_assign, /);
assign_op!(RemAssign, rem_assign, %);

impl<const N: usize> Sum for Dual<N> {
    /// Starts from −0.0 like `f64`'s `Sum`, so the value is bit-identical.
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::cst(-0.0), |a, b| a + b)
    }
}

impl<'a, const N: usize> Sum<&'a Dual<N>> for Dual<N> {
    fn sum<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.fold(Self::cst(-0.0), |a, b| a + *b)
    }
}

impl<const N: usize> Zero for Dual<N> {
    #[inline(always)]
    fn zero() -> Self {
        Self::cst(0.0)
    }
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.v == 0.0
    }
}

impl<const N: usize> One for Dual<N> {
    #[inline(always)]
    fn one() -> Self {
        Self::cst(1.0)
    }
}

impl<const N: usize> Num for Dual<N> {
    type FromStrRadixErr = <f64 as Num>::FromStrRadixErr;
    fn from_str_radix(s: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
        f64::from_str_radix(s, radix).map(Self::cst)
    }
}

impl<const N: usize> ToPrimitive for Dual<N> {
    super::rules::to_primitive_methods!();
}

impl<const N: usize> NumCast for Dual<N> {
    fn from<T: ToPrimitive>(n: T) -> Option<Self> {
        n.to_f64().map(Self::cst)
    }
}

impl<const N: usize> FloatConst for Dual<N> {
    super::rules::float_consts!();
}

impl<const N: usize> Float for Dual<N> {
    super::rules::float_methods!();
    fn mul_add(self, a: Self, b: Self) -> Self {
        let mut d = [0.0; N];
        for i in 0..N {
            d[i] = self.d[i] * a.v + a.d[i] * self.v + b.d[i];
        }
        Self { v: self.v.mul_add(a.v, b.v), d }
    }
    fn powf(self, n: Self) -> Self {
        let v = self.v.powf(n.v);
        let fx = if n.v == 0.0 { 0.0 } else { n.v * self.v.powf(n.v - 1.0) };
        let mut d = [0.0; N];
        let ln = if n.is_constant() { 0.0 } else { self.v.ln() };
        for i in 0..N {
            d[i] = self.d[i] * fx + if n.d[i] == 0.0 { 0.0 } else { n.d[i] * v * ln };
        }
        Self { v, d }
    }
    fn max(self, o: Self) -> Self {
        // f64::max returns the non-NaN operand; follow the operand whose value is returned.
        if self.v >= o.v || o.v.is_nan() { Self { v: self.v.max(o.v), d: self.d } } else { o }
    }
    fn min(self, o: Self) -> Self {
        if self.v <= o.v || o.v.is_nan() { Self { v: self.v.min(o.v), d: self.d } } else { o }
    }
    fn hypot(self, o: Self) -> Self {
        let v = self.v.hypot(o.v);
        let mut d = [0.0; N];
        for i in 0..N {
            let num = self.v * self.d[i] + o.v * o.d[i];
            d[i] = if num == 0.0 { 0.0 } else { num / v };
        }
        Self { v, d }
    }
}

impl<const N: usize> Real for Dual<N> {
    #[inline(always)]
    fn c(x: f64) -> Self {
        Self::cst(x)
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self.v
    }
    const EPS: Self = Self::cst(f64::EPSILON);
}

#[cfg(test)]
mod tests {
    use super::*;

    type D2 = Dual<2>;

    /// Central difference of `f` at `x` (h = 1e-6).
    fn fd(f: impl Fn(f64) -> f64, x: f64) -> f64 {
        let h = 1e-6 * x.abs().max(1.0);
        (f(x + h) - f(x - h)) / (2.0 * h)
    }

    #[test]
    fn unary_rules_match_finite_differences_and_values_match_f64() {
        type F = (fn(D2) -> D2, fn(f64) -> f64);
        let cases: &[(F, f64)] = &[
            ((|x| x.sqrt(), |x| x.sqrt()), 0.7),
            ((|x| x.exp(), |x| x.exp()), 0.3),
            ((|x| x.ln(), |x| x.ln()), 1.7),
            ((|x| x.sin(), |x| x.sin()), 0.4),
            ((|x| x.cos(), |x| x.cos()), 0.4),
            ((|x| x.tan(), |x| x.tan()), 0.4),
            ((|x| x.asin(), |x| x.asin()), 0.4),
            ((|x| x.acos(), |x| x.acos()), 0.4),
            ((|x| x.atan(), |x| x.atan()), 0.4),
            ((|x| x.tanh(), |x| x.tanh()), 0.4),
            ((|x| x.sinh(), |x| x.sinh()), 0.4),
            ((|x| x.cosh(), |x| x.cosh()), 0.4),
            ((|x| x.asinh(), |x| x.asinh()), 0.4),
            ((|x| x.acosh(), |x| x.acosh()), 1.4),
            ((|x| x.atanh(), |x| x.atanh()), 0.4),
            ((|x| x.cbrt(), |x| x.cbrt()), 0.4),
            ((|x| x.recip(), |x| x.recip()), 0.4),
            ((|x| x.powi(3), |x| x.powi(3)), -0.4),
            ((|x| x.powf(D2::cst(2.5)), |x| x.powf(2.5)), 0.4),
            ((|x| x.exp_m1(), |x| x.exp_m1()), 0.4),
            ((|x| x.ln_1p(), |x| x.ln_1p()), 0.4),
            ((|x| x.log2(), |x| x.log2()), 0.4),
            ((|x| x.log10(), |x| x.log10()), 0.4),
            ((|x| x.exp2(), |x| x.exp2()), 0.4),
            ((|x| x.abs(), |x| x.abs()), -0.4),
            ((|x| x.to_degrees(), |x| x.to_degrees()), -0.4),
            ((|x| x.mul_add(x, D2::cst(0.3)), |x| x.mul_add(x, 0.3)), 0.4),
            ((|x| x.hypot(D2::cst(0.3)), |x| x.hypot(0.3)), 0.4),
            ((|x| x.atan2(D2::cst(-0.3)), |x| x.atan2(-0.3)), 0.4),
            ((|x| D2::cst(0.3).atan2(x), |x| 0.3f64.atan2(x)), -0.4),
            ((|x| D2::cst(1.3).powf(x), |x| 1.3f64.powf(x)), 0.4),
            ((|x| x % D2::cst(0.3), |x| x % 0.3), 0.4),
            ((|x| x.copysign(D2::cst(-1.0)), |x| x.copysign(-1.0)), 0.4),
        ];
        for (i, &((fd_, ff), x)) in cases.iter().enumerate() {
            let y = fd_(D2::var(x, 1));
            assert_eq!(y.v.to_bits(), ff(x).to_bits(), "case {i}: value differs from f64");
            assert_eq!(y.d[0], 0.0);
            let g = fd(ff, x);
            assert!((y.d[1] - g).abs() <= 1e-7 * g.abs().max(1.0), "case {i}: {} vs {g}", y.d[1]);
        }
    }

    #[test]
    fn binary_rules_and_sqrt_at_zero() {
        let a = D2::var(0.7, 0);
        let b = D2::var(-1.3, 1);
        let p = a * b;
        assert_eq!(p.d, [-1.3, 0.7]);
        let q = a / b;
        assert!((q.d[0] - 1.0 / -1.3).abs() < 1e-15 && (q.d[1] + 0.7 / (1.3 * 1.3)).abs() < 1e-15);
        assert_eq!(a.max(b).d, [1.0, 0.0]);
        assert_eq!(a.min(b).d, [0.0, 1.0]);
        // |x| of a zero vector: zero tangent, not NaN.
        let z = D2::var(0.0, 0);
        let n = (z * z + z * z).sqrt();
        assert_eq!(n.d, [0.0, 0.0]);
        let s: D2 = [a, b].into_iter().sum();
        assert_eq!(s.d, [1.0, 1.0]);
        assert_eq!(s.v.to_bits(), [0.7f64, -1.3].into_iter().sum::<f64>().to_bits());
    }
}
