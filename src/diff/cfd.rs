//! Contacts from distance (DiffMJX Sec. 4 and B.3), in the backward pass only.
//!
//! At each recorded solve, pairs that are apart but closer than the width,
//! 0 ≤ φ0 < w_c, receive a phantom normal impulse
//!
//!   γ_ph = h · F · ρ̂(1 − φ0/w_c),   ρ̂(x) = ρ(x)/ρ(1),
//!   ρ(x) = (softplus(β x) − ln 2)/β − x/2,   β = [`SOFTPLUS_SHARPNESS`],
//!
//! a softplus ramp in the gap that is zero with zero slope at φ0 = w_c and
//! grows smoothly to F (N) at contact. It acts along the contact normal at
//! the contact point like a real contact impulse and is added to the
//! residual R = ∇ℓ only when its Jacobians ∂R/∂(x0, u, θ) are formed; the
//! forward solve, v1 and the Hessian H(v1) are untouched (γ_ph does not
//! depend on v1). So the forward trajectory is bit-identical with or without
//! CFD, and near misses get gradients that say how the outcome would change
//! if the bodies came closer.
//!
//! Phantom pairs come from a separate collision query with margin w_c at the
//! recorded state; they are not regular constraints.

use crate::collision::{Contacts, collide};
use crate::dynamics::Data;
use crate::math::Real;
use crate::model::Model;

/// Sharpness β of the softplus ramp (dimensionless): the ramp turns on over
/// about 1/β of the width.
pub const SOFTPLUS_SHARPNESS: f64 = 4.0;

/// Settings of contacts from distance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cfd {
    /// Width w_c (m): pairs with 0 ≤ φ0 < w_c get a phantom impulse.
    pub width: f64,
    /// Strength F (N): the phantom force at contact (φ0 = 0). A useful
    /// scale is the weight of the lighter body; the gradient direction does
    /// not depend on it, its size does.
    pub strength: f64,
}

/// ρ(x) = (softplus(βx) − ln 2)/β − x/2 for generic scalars.
fn ramp<T: Real>(x: T) -> T {
    let b = T::c(SOFTPLUS_SHARPNESS);
    ((b * x).exp().ln_1p() - T::c(core::f64::consts::LN_2)) / b - x * T::c(0.5)
}

/// Phantom normal impulse (N·s) for gap `phi` (m, 0 ≤ φ < width) over a step of `h` seconds.
pub fn phantom_impulse<T: Real>(cfd: &Cfd, h: T, phi: T) -> T {
    let x = T::one() - phi / T::c(cfd.width);
    h * T::c(cfd.strength) * ramp(x) / ramp(T::one())
}

/// Adds the phantom impulses of the pairs in `contacts` (a query with margin
/// `cfd.width` at the state in `data`) to the residual `grad` (nv):
/// R −= Σ Jᵀ n γ_ph, J = J_B(p) − J_A(p).
pub(crate) fn add_phantom<T: Real>(
    cfd: &Cfd,
    model: &Model,
    data: &Data<T>,
    contacts: &mut Contacts<T>,
    h: T,
    grad: &mut [T],
) -> usize {
    contacts.skin = cfd.width;
    collide(model, data, contacts);
    let mut count = 0;
    for c in &contacts.list {
        if !(c.dist.f64() >= 0.0 && c.dist.f64() < cfd.width) {
            continue;
        }
        count += 1;
        let impulse = c.normal * phantom_impulse(cfd, h, c.dist);
        for (body, sign) in [(c.body[1], T::one()), (c.body[0], -T::one())] {
            let r = c.pos - data.body_ref[body];
            let mut d = model.bodies[body].last_dof;
            while let Some(k) = d {
                grad[k] -= data.cdof[k].point_velocity(r).dot(impulse) * sign;
                d = model.dofs[k].parent;
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::super::dual::Dual;
    use super::*;

    #[test]
    fn ramp_is_zero_with_zero_slope_at_the_width_and_full_at_contact() {
        let cfd = Cfd { width: 0.1, strength: 2.0 };
        let at = |phi: f64| phantom_impulse(&cfd, Dual::<1>::cst(1.0), Dual::var(phi, 0));
        let w = at(0.1);
        assert!(w.v.abs() < 1e-15 && w.d[0].abs() < 1e-12);
        assert!((at(0.0).v - 2.0).abs() < 1e-12);
        // Monotone: larger when closer.
        let mut prev = 0.0;
        for i in (0..100).rev() {
            let p = at(0.001 * i as f64);
            assert!(p.v > prev && p.d[0] < 0.0);
            prev = p.v;
        }
    }
}
