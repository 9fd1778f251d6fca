//! The parts of `num_traits::Float` and `ToPrimitive` that [`super::Dual`] and
//! [`super::Rev`] implement with the same text: value rules that read only
//! `self.v`, and the derivative table of the elementary functions written
//! once against each type's `cst`, `chain` (unary: value, input, ∂) and
//! `chain2` (binary). Each type supplies those three and the methods whose
//! rules differ.

/// `Float` methods shared by the forward- and reverse-mode scalars.
macro_rules! float_methods {
    () => {
        fn nan() -> Self {
            Self::cst(f64::NAN)
        }
        fn infinity() -> Self {
            Self::cst(f64::INFINITY)
        }
        fn neg_infinity() -> Self {
            Self::cst(f64::NEG_INFINITY)
        }
        fn neg_zero() -> Self {
            Self::cst(-0.0)
        }
        fn min_value() -> Self {
            Self::cst(f64::MIN)
        }
        fn min_positive_value() -> Self {
            Self::cst(f64::MIN_POSITIVE)
        }
        fn epsilon() -> Self {
            Self::cst(f64::EPSILON)
        }
        fn max_value() -> Self {
            Self::cst(f64::MAX)
        }
        fn is_nan(self) -> bool {
            self.v.is_nan()
        }
        fn is_infinite(self) -> bool {
            self.v.is_infinite()
        }
        fn is_finite(self) -> bool {
            self.v.is_finite()
        }
        fn is_normal(self) -> bool {
            self.v.is_normal()
        }
        fn is_subnormal(self) -> bool {
            self.v.is_subnormal()
        }
        fn classify(self) -> core::num::FpCategory {
            self.v.classify()
        }
        fn floor(self) -> Self {
            Self::cst(self.v.floor())
        }
        fn ceil(self) -> Self {
            Self::cst(self.v.ceil())
        }
        fn round(self) -> Self {
            Self::cst(self.v.round())
        }
        fn trunc(self) -> Self {
            Self::cst(self.v.trunc())
        }
        fn fract(self) -> Self {
            Self::chain(self.v.fract(), &self, 1.0)
        }
        fn abs(self) -> Self {
            Self::chain(self.v.abs(), &self, if self.v < 0.0 { -1.0 } else { 1.0 })
        }
        fn signum(self) -> Self {
            Self::cst(self.v.signum())
        }
        fn is_sign_positive(self) -> bool {
            self.v.is_sign_positive()
        }
        fn is_sign_negative(self) -> bool {
            self.v.is_sign_negative()
        }
        fn recip(self) -> Self {
            let v = self.v.recip();
            Self::chain(v, &self, -v * v)
        }
        fn powi(self, n: i32) -> Self {
            let f = if n == 0 { 0.0 } else { n as f64 * self.v.powi(n - 1) };
            Self::chain(self.v.powi(n), &self, f)
        }
        fn sqrt(self) -> Self {
            let v = self.v.sqrt();
            Self::chain_div(v, &self, 2.0 * v)
        }
        fn exp(self) -> Self {
            let v = self.v.exp();
            Self::chain(v, &self, v)
        }
        fn exp2(self) -> Self {
            let v = self.v.exp2();
            Self::chain(v, &self, v * core::f64::consts::LN_2)
        }
        fn ln(self) -> Self {
            Self::chain(self.v.ln(), &self, 1.0 / self.v)
        }
        fn log(self, base: Self) -> Self {
            // log_b(x) = ln x / ln b.
            let v = self.v.log(base.v);
            let lb = base.v.ln();
            Self::chain2(v, &self, 1.0 / (self.v * lb), &base, -v / (base.v * lb))
        }
        fn log2(self) -> Self {
            Self::chain(self.v.log2(), &self, 1.0 / (self.v * core::f64::consts::LN_2))
        }
        fn log10(self) -> Self {
            Self::chain(self.v.log10(), &self, 1.0 / (self.v * core::f64::consts::LN_10))
        }
        fn to_degrees(self) -> Self {
            Self::chain(self.v.to_degrees(), &self, 180.0 / core::f64::consts::PI)
        }
        fn to_radians(self) -> Self {
            Self::chain(self.v.to_radians(), &self, core::f64::consts::PI / 180.0)
        }
        fn clamp(self, lo: Self, hi: Self) -> Self {
            if self.v < lo.v {
                lo
            } else if self.v > hi.v {
                hi
            } else {
                self
            }
        }
        fn abs_sub(self, o: Self) -> Self {
            if self.v <= o.v { Self::cst(0.0) } else { self - o }
        }
        fn cbrt(self) -> Self {
            let v = self.v.cbrt();
            Self::chain_div(v, &self, 3.0 * v * v)
        }
        fn sin(self) -> Self {
            Self::chain(self.v.sin(), &self, self.v.cos())
        }
        fn cos(self) -> Self {
            Self::chain(self.v.cos(), &self, -self.v.sin())
        }
        fn tan(self) -> Self {
            let v = self.v.tan();
            Self::chain(v, &self, 1.0 + v * v)
        }
        fn asin(self) -> Self {
            Self::chain(self.v.asin(), &self, 1.0 / (1.0 - self.v * self.v).sqrt())
        }
        fn acos(self) -> Self {
            Self::chain(self.v.acos(), &self, -1.0 / (1.0 - self.v * self.v).sqrt())
        }
        fn atan(self) -> Self {
            Self::chain(self.v.atan(), &self, 1.0 / (1.0 + self.v * self.v))
        }
        fn atan2(self, x: Self) -> Self {
            // self = y.
            let r2 = self.v * self.v + x.v * x.v;
            let v = self.v.atan2(x.v);
            if r2 == 0.0 {
                return Self::cst(v);
            }
            Self::chain2(v, &self, x.v / r2, &x, -self.v / r2)
        }
        fn sin_cos(self) -> (Self, Self) {
            (self.sin(), self.cos())
        }
        fn exp_m1(self) -> Self {
            Self::chain(self.v.exp_m1(), &self, self.v.exp())
        }
        fn ln_1p(self) -> Self {
            Self::chain(self.v.ln_1p(), &self, 1.0 / (1.0 + self.v))
        }
        fn sinh(self) -> Self {
            Self::chain(self.v.sinh(), &self, self.v.cosh())
        }
        fn cosh(self) -> Self {
            Self::chain(self.v.cosh(), &self, self.v.sinh())
        }
        fn tanh(self) -> Self {
            let v = self.v.tanh();
            Self::chain(v, &self, 1.0 - v * v)
        }
        fn asinh(self) -> Self {
            Self::chain(self.v.asinh(), &self, 1.0 / (self.v * self.v + 1.0).sqrt())
        }
        fn acosh(self) -> Self {
            Self::chain(self.v.acosh(), &self, 1.0 / (self.v * self.v - 1.0).sqrt())
        }
        fn atanh(self) -> Self {
            Self::chain(self.v.atanh(), &self, 1.0 / (1.0 - self.v * self.v))
        }
        fn integer_decode(self) -> (u64, i16, i8) {
            self.v.integer_decode()
        }
        fn copysign(self, sign: Self) -> Self {
            let v = self.v.copysign(sign.v);
            let flip = self.v.is_sign_negative() != sign.v.is_sign_negative();
            Self::chain(v, &self, if flip { -1.0 } else { 1.0 })
        }
    };
}
pub(super) use float_methods;

/// `ToPrimitive` methods shared by the forward- and reverse-mode scalars.
macro_rules! to_primitive_methods {
    () => {
        fn to_i64(&self) -> Option<i64> {
            self.v.to_i64()
        }
        fn to_u64(&self) -> Option<u64> {
            self.v.to_u64()
        }
        fn to_i128(&self) -> Option<i128> {
            self.v.to_i128()
        }
        fn to_u128(&self) -> Option<u128> {
            self.v.to_u128()
        }
        fn to_f32(&self) -> Option<f32> {
            self.v.to_f32()
        }
        fn to_f64(&self) -> Option<f64> {
            Some(self.v)
        }
    };
}
pub(super) use to_primitive_methods;

/// `FloatConst`: every constant as a constant scalar (zero derivative).
macro_rules! float_consts {
    () => {
        super::rules::float_consts!(
            E, FRAC_1_PI, FRAC_1_SQRT_2, FRAC_2_PI, FRAC_2_SQRT_PI, FRAC_PI_2, FRAC_PI_3, FRAC_PI_4, FRAC_PI_6,
            FRAC_PI_8, LN_10, LN_2, LOG10_E, LOG2_E, PI, SQRT_2, TAU, LOG10_2, LOG2_10
        );
    };
    ($($name:ident),*) => {
        $(
            #[inline(always)]
            fn $name() -> Self {
                Self::cst(<f64 as FloatConst>::$name())
            }
        )*
    };
}
pub(super) use float_consts;
