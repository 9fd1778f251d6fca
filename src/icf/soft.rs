//! MuJoCo's soft constraints in the ICF builder (models with
//! [`Semantics::MuJoCo`](crate::model::Semantics::MuJoCo)): the D = 1/R,
//! B and K·d·x of each constraint row as MuJoCo's `mj_diagApprox` and
//! `mj_makeImpedance` compute them, from the model's effective masses
//! (`body_invweight0`, `dof_invweight0`, `tendon_invweight0`). The rows
//! themselves ([`SoftRow`], [`SoftContact`]) are described in
//! the `problem` module.

use super::builder::MaterialScale;
use super::problem::{SoftContact, SoftRow};
use crate::collision::Contact;
use crate::dynamics::Data;
use crate::math::{Real, Vec3};
use crate::model::soft::{Softness, regulariser};
use crate::model::{GeomKind, Model, SoftMaterial};

/// The constants of a pair's soft contact, the same for all its contacts
/// (computed once per pair on the GPU, per contact on the CPU).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftPairConstants {
    /// K, B and solimp of the pair ([`SoftLaw`](crate::model::soft::SoftLaw)).
    pub law: crate::model::soft::SoftLaw,
    /// MuJoCo's diagonal approximation Â of the first row (1/kg): the two
    /// bodies' translational inverse weights, times 1 + μ² for a pyramid.
    pub diag: f64,
    /// D = 1/(scale·R(Â)): 1 for a frictionless contact, 2·μ_r² for the
    /// pyramid's edges (μ_r² = μ²/impratio, MuJoCo's regularised cone).
    pub scale: f64,
    /// Friction slopes of the pyramid's edges along t1 and t2 ([0, 0]: frictionless).
    pub mu: [f64; 2],
    /// The pair's margin (m): its contacts act below it.
    pub reach: f64,
}

/// The soft-contact constants of the geom pair `geoms` (bodies `bodies`)
/// with MuJoCo parameters `s` (the pair's, [`SoftMaterial::combine`]),
/// as MuJoCo's `mj_diagApprox` and `mj_makeImpedance` compute them. A
/// pyramid with zero friction is frictionless (its edges would all be the
/// normal, with R = 0).
pub fn soft_pair_constants(model: &Model, bodies: [usize; 2], s: &SoftMaterial) -> SoftPairConstants {
    let law = Softness { solref: s.solref, solimp: s.solimp }.soft_law(refsafe_step(model), false);
    let tran: f64 = bodies.iter().map(|&b| model.bodies[b].invweight0[0]).sum();
    let f = [s.friction[0], s.friction[1]];
    if s.condim > 1 && f[0] > 0.0 {
        // Â = tran·(1 + μ²) for the first edge; R1 = R0/impratio sets the
        // regularised cone μ_r = μ·√(R1/R0), and every edge gets
        // R_py = 2·μ_r²·R0.
        let mu_r2 = f[0] * f[0] / model.options.impratio.max(crate::model::soft::MIN_VAL);
        SoftPairConstants { law, diag: tran * (1.0 + f[0] * f[0]), scale: 2.0 * mu_r2, mu: f, reach: s.margin }
    } else {
        SoftPairConstants { law, diag: tran, scale: 1.0, mu: [0.0; 2], reach: s.margin }
    }
}

/// The soft contact of `c` with MuJoCo parameters `s` (the pair's,
/// [`SoftMaterial::combine`]). `scale` multiplies D (stiffness), B
/// (dissipation) and the friction (mu_static); `mass_scale` is the world's
/// mass multiplier, which scales D as it scales the effective masses.
pub(super) fn soft_contact<T: Real>(
    model: &Model,
    data: &Data<T>,
    c: &Contact<T>,
    s: &SoftMaterial,
    scale: &MaterialScale<T>,
    mass_scale: T,
) -> SoftContact<T> {
    let k = soft_pair_constants(model, c.body, s);
    // MuJoCo 4: a contact acts once φ < margin; beyond, within the gap, it
    // is only detected.
    let x = c.dist - T::c(k.reach);
    let (imp, kpos) = k.law.at(x);
    let d = T::one() / (T::c(k.scale) * regulariser(imp, T::c(k.diag)));
    let active = x < T::zero() && k.diag > 0.0;
    SoftContact {
        d: if active { d * mass_scale * scale.stiffness } else { T::zero() },
        mu: k.mu.map(|m| T::c(m) * scale.mu_static),
        b: T::c(k.law.b) * scale.dissipation,
        kpos,
        reach: T::c(k.reach),
        t1: contact_tangent(model, data, c),
        w0: Vec3::zero(),
        hk: T::zero(),
    }
}

/// MuJoCo's first contact tangent (`mju_makeFrame`), which orients the
/// friction pyramid: the capsule's axis for a plane–capsule contact (the
/// one pair whose collision routine gives a tangent), else the world y
/// axis, or z when the normal is within 60° of y; made orthogonal to the
/// normal. A capsule standing on the plane (axis within 0.06° of the
/// normal) takes the default, where MuJoCo's frame is ill-defined.
pub(super) fn contact_tangent<T: Real>(model: &Model, data: &Data<T>, c: &Contact<T>) -> Vec3<T> {
    let n = c.normal;
    let [a, b] = c.geom.map(|g| model.geoms[g].kind);
    if (a, b) == (GeomKind::Plane, GeomKind::Capsule) {
        let axis = data.geom_xmat[c.geom[1]].col(2);
        let t = axis - n * n.dot(axis);
        if t.norm2().f64() > 1e-6 {
            return t.normalize();
        }
    }
    let y = if n.y.abs().f64() < 0.5 {
        Vec3::new(T::zero(), T::one(), T::zero())
    } else {
        Vec3::new(T::zero(), T::zero(), T::one())
    };
    (y - n * n.dot(y)).normalize()
}

/// Where a soft row stands: its coordinate x = pos − margin (negative
/// when violated), the violation `norm` its impedance is evaluated at
/// (|x|, or the norm of a connect or weld violation vector), whether it
/// acts, and its velocity `vel0` = j·v0.
pub(super) struct RowState<T> {
    pub x: T,
    pub norm: T,
    pub active: bool,
    pub vel0: T,
}

/// A soft row in state `st` with softness `softness` (a friction row, with
/// no position reference, when `friction`) and diagonal approximation
/// `diag_a` of its inverse inertia; `mass_scale` scales D as it scales the
/// effective masses.
pub(super) fn soft_row<T: Real>(
    model: &Model,
    softness: &Softness,
    friction: bool,
    st: RowState<T>,
    diag_a: f64,
    mass_scale: T,
) -> SoftRow<T> {
    let law = softness.soft_law(refsafe_step(model), friction);
    let (imp, _) = law.at(st.norm);
    let kpos = T::c(law.k) * imp * st.x;
    let d = if st.active && diag_a > 0.0 { mass_scale / regulariser(imp, T::c(diag_a)) } else { T::zero() };
    SoftRow { d, b: T::c(law.b), kpos, vel0: st.vel0, vref: T::zero() }
}

/// The time step of MuJoCo's safety clamp τ ≥ 2·timestep (0 when the
/// model's `refsafe` flag is off).
fn refsafe_step(model: &Model) -> f64 {
    if model.options.flags.refsafe { model.options.timestep } else { 0.0 }
}
