//! Row force elements of the ICF problem ([`RowConstraint`]): tendon
//! limits, springs and dampers, equality constraints and general
//! actuators. Part of the ICF builder (the only code that reads the model).
//!
//! Each equality constraint is a stiff spring–damper per row, with
//! MuJoCo's soft-constraint law ([`crate::model::soft`]) on the effective
//! mass MuJoCo uses for it: the violation e(q0) gives the lagged force
//! −F(e), the tangent stiffness acts implicitly over the step (−h·k·ė) and
//! the damping on ė, where ė = j·v is the row's rate. Connect and weld
//! rows evaluate the impedance at the norm of their violation vector, as
//! MuJoCo does. Tendon limits are one-sided rows built like joint limits.

use super::builder::IcfBuilder;
use super::problem::{IcfProblem, RowConstraint, STICTION_EPS_RATIO, SoftRow};
use super::soft::{RowState, soft_row};
use crate::dynamics::Data;
use crate::math::{Quat, Real, Vec3};
use crate::model::soft::Softness;
use crate::model::{EqualityKind, GeneralActuator, Model, Semantics, TendonPath, Transmission};

impl IcfBuilder {
    /// A general actuator with control `u` (already clamped): an implicit
    /// row when its force does not grow with its own motion, else an
    /// explicit force at (q0, v0) (see [`GeneralActuator`]).
    pub(super) fn general_actuator<T: Real>(
        &mut self,
        model: &Model,
        data: &Data<T>,
        ai: usize,
        g: &GeneralActuator,
        u: T,
        problem: &mut IcfProblem<T>,
    ) {
        let nv = model.nv;
        let input = match g.act_adr {
            Some(k) => data.act[k],
            None => u,
        };
        let [g0, g1, g2] = g.gain.map(T::c);
        let [b0, b1, b2] = g.bias.map(T::c);
        let kp = -(g1 * input + b1);
        let kd = -(g2 * input + b2);
        let length = data.actuator_length[ai];
        let force = g0 * input + b0 - kp * length;
        let (lo, hi) = match g.force_range {
            Some([lo, hi]) => (T::c(lo), T::c(hi)),
            None => (-T::infinity(), T::infinity()),
        };
        let moment = &data.actuator_moment[ai * nv..(ai + 1) * nv];
        if kp >= T::zero() && kd >= T::zero() && (kp > T::zero() || kd > T::zero()) {
            let (jac_start, jac_len) = push_dense_row(problem, moment, T::one());
            let kappa = T::zero();
            let pos = T::zero();
            problem.rows.push(RowConstraint {
                jac_start,
                jac_len,
                pos,
                force,
                stiffness: kp,
                damping: kd,
                lo,
                hi,
                kappa,
                soft: None,
            });
        } else {
            let mut rate = T::zero();
            for (m, v) in moment.iter().zip(&data.v) {
                rate += *m * *v;
            }
            let f = (force - kd * rate).max(lo).min(hi);
            for (k, m) in moment.iter().enumerate() {
                problem.force[k] -= *m * f;
            }
        }
    }

    /// Tendon springs and dampers (bilateral rows) and tendon limits (two
    /// one-sided rows each).
    pub(super) fn tendon_rows<T: Real>(&mut self, model: &Model, data: &Data<T>, problem: &mut IcfProblem<T>) {
        let nv = model.nv;
        let flags = model.options.flags;
        let mujoco = model.options.semantics == Semantics::MuJoCo;
        for (ti, t) in model.tendons.iter().enumerate() {
            let jac = &data.ten_jac[ti * nv..(ti + 1) * nv];
            let len = data.ten_length[ti];
            let k = if flags.spring { t.stiffness } else { 0.0 };
            let c = if flags.damper { t.damping } else { 0.0 };
            if k > 0.0 || c > 0.0 {
                // Spring towards the rest-length band (no force inside it).
                let [lo, hi] = t.springlength.map(T::c);
                let pos = if len > hi {
                    len - hi
                } else if len < lo {
                    len - lo
                } else {
                    T::zero()
                };
                let stiffness = if pos != T::zero() { T::c(k) } else { T::zero() };
                let (jac_start, jac_len) = push_dense_row(problem, jac, T::one());
                problem.rows.push(RowConstraint {
                    jac_start,
                    jac_len,
                    pos,
                    force: -T::c(k) * pos,
                    stiffness,
                    damping: T::c(c),
                    lo: -T::infinity(),
                    hi: T::infinity(),
                    kappa: T::zero(),
                    soft: None,
                });
            }
            let (Some([lo, hi]), Some(law)) = (t.range, t.limit_law) else { continue };
            let m = t.limit_margin;
            for (sign, g0) in [(T::one(), len - T::c(lo + m)), (-T::one(), T::c(hi - m) - len)] {
                let (f, k, c) = law.at(-g0);
                let s = data.mass_scale;
                let (jac_start, jac_len) = push_dense_row(problem, jac, sign);
                let soft = mujoco.then(|| {
                    let st = RowState {
                        x: g0,
                        norm: g0.abs(),
                        active: g0 < T::zero(),
                        vel0: pool_velocity(problem, jac_start, &data.v),
                    };
                    soft_row(model, &t.limit_softness, false, st, t.invweight0, s)
                });
                problem.rows.push(RowConstraint {
                    jac_start,
                    jac_len,
                    pos: g0,
                    force: f * s,
                    stiffness: k * s,
                    damping: c * s,
                    lo: T::zero(),
                    hi: T::infinity(),
                    kappa: T::zero(),
                    soft,
                });
            }
        }
    }

    /// Dry friction of joints and tendons (`frictionloss` F): a row with
    /// f = clamp(−(F/ε)·s, −F, F), i.e. Coulomb friction regularised like
    /// contact friction, reaching its bound F at the slip rate
    /// ε = vs·[`STICTION_EPS_RATIO`] (vs: the stiction tolerance).
    pub(super) fn friction_rows<T: Real>(&mut self, model: &Model, data: &Data<T>, problem: &mut IcfProblem<T>) {
        let nv = model.nv;
        let eps = model.options.stiction_tolerance * STICTION_EPS_RATIO;
        let mujoco = model.options.semantics == Semantics::MuJoCo;
        // Under MuJoCo's semantics a soft friction row (no position reference).
        let push = |problem: &mut IcfProblem<T>,
                    f: f64,
                    (jac_start, jac_len): (usize, usize),
                    soft: Option<(&Softness, f64)>| {
            let f = T::c(f);
            let (pos, stiffness, kappa) = (T::zero(), T::zero(), T::zero());
            let damping = f / T::c(eps);
            let soft = soft.map(|(softness, diag_a)| {
                let vel0 = pool_velocity(problem, jac_start, &data.v);
                let st = RowState { x: T::zero(), norm: T::zero(), active: true, vel0 };
                soft_row(model, softness, true, st, diag_a, data.mass_scale)
            });
            problem.rows.push(RowConstraint {
                jac_start,
                jac_len,
                pos,
                force: T::zero(),
                stiffness,
                damping,
                lo: -f,
                hi: f,
                kappa,
                soft,
            });
        };
        for j in model.joints.iter().filter(|j| j.frictionloss > 0.0) {
            let start = problem.row_dof.len();
            problem.row_dof.push(j.dof_adr);
            problem.row_coef.push(T::one());
            let soft = mujoco.then_some((&j.friction_softness, model.dofs[j.dof_adr].invweight0));
            push(problem, j.frictionloss, (start, 1), soft);
        }
        for (ti, t) in model.tendons.iter().enumerate().filter(|(_, t)| t.frictionloss > 0.0) {
            let entries = push_dense_row(problem, &data.ten_jac[ti * nv..(ti + 1) * nv], T::one());
            push(problem, t.frictionloss, entries, mujoco.then_some((&t.friction_softness, t.invweight0)));
        }
    }

    /// Active equality constraints, one bilateral row per constrained coordinate.
    pub(super) fn equality_rows<T: Real>(&mut self, model: &Model, data: &Data<T>, problem: &mut IcfProblem<T>) {
        let nv = model.nv;
        let mujoco = model.options.semantics == Semantics::MuJoCo;
        for eq in model.equalities.iter().filter(|e| e.active) {
            // MuJoCo's soft row for violation e, impedance at `norm`, inverse
            // inertia row kind k, and the row's J̇·v (MuJoCo subtracts it from
            // the reference of connect and weld rows).
            let soft = |problem: &IcfProblem<T>, start: usize, e: T, norm: T, k: usize, jdot_v: T| {
                mujoco.then(|| {
                    let vel0 = pool_velocity(problem, start, &data.v);
                    let st = RowState { x: e, norm, active: true, vel0 };
                    let mut row = soft_row(model, &eq.softness, false, st, eq.invweight0[k], data.mass_scale);
                    row.kpos += jdot_v;
                    row
                })
            };
            match eq.kind {
                EqualityKind::Connect { body, anchor } => {
                    let p = points(data, body, anchor);
                    let e = p[0] - p[1];
                    let jdv = point_bias_acc(data, body[0], p[0]) - point_bias_acc(data, body[1], p[1]);
                    let (ks, kt, c) = eq.laws[0].stiffness(e.norm());
                    for i in 0..3 {
                        let start = self.point_row(model, data, problem, body, p, |lin, _| lin[i]);
                        let soft = soft(problem, start, e[i], e.norm(), 0, jdv[i]);
                        push_spring(problem, data, start, e[i], [ks, kt, c], soft);
                    }
                }
                EqualityKind::Weld { body, anchor, quat, torquescale } => {
                    let p = points(data, body, anchor);
                    let e = p[0] - p[1];
                    // Orientation error: the vector part of conj(Q1)·Q0 for the two frames.
                    let frame = |k: usize| data.xquat[body[k]] * Quat::from_array(quat[k].map(T::c));
                    let (q0, q1c) = (frame(0), frame(1).conj());
                    let ts = T::c(torquescale);
                    let er = (q1c * q0).vec() * ts;
                    let norm = (e.norm2() + er.norm2()).sqrt();
                    let jdv = point_bias_acc(data, body[0], p[0]) - point_bias_acc(data, body[1], p[1]);
                    let jdv_rot = weld_rotation_bias_acc(data, body, q0, q1c) * ts;
                    let (ks, kt, c) = eq.laws[0].stiffness(norm);
                    for i in 0..3 {
                        let start = self.point_row(model, data, problem, body, p, |lin, _| lin[i]);
                        let soft = soft(problem, start, e[i], norm, 0, jdv[i]);
                        push_spring(problem, data, start, e[i], [ks, kt, c], soft);
                    }
                    let (ks, kt, c) = eq.laws[1].stiffness(norm);
                    let half = T::c(0.5) * ts;
                    for i in 0..3 {
                        // d/dt vec(conj(Q1)·Q0) = ½ vec(conj(Q1)·[0, ω0 − ω1]·Q0).
                        let rot = |_: Vec3<T>, ang: Vec3<T>| {
                            let w = Quat::from_array([T::zero(), ang.x, ang.y, ang.z]);
                            (q1c * w * q0).vec()[i] * half
                        };
                        let start = self.point_row(model, data, problem, body, p, rot);
                        let soft = soft(problem, start, er[i], norm, 1, jdv_rot[i]);
                        push_spring(problem, data, start, er[i], [ks, kt, c], soft);
                    }
                }
                EqualityKind::Joint { joint, polycoef } => {
                    let value = |j: usize| {
                        let jt = &model.joints[j];
                        data.q[jt.qpos_adr] - T::c(model.qpos0[jt.qpos_adr])
                    };
                    let Some(j0) = joint[0] else { continue };
                    let (e, slope) = coupling(value(j0), joint[1].map(value), &polycoef);
                    let start = problem.row_dof.len();
                    push_entry(problem, &mut self.mark, start, model.joints[j0].dof_adr, T::one());
                    if let Some(j1) = joint[1] {
                        push_entry(problem, &mut self.mark, start, model.joints[j1].dof_adr, -slope);
                    }
                    self.finish_row(problem, start);
                    let (ks, kt, c) = eq.laws[0].stiffness(e.abs());
                    let soft = soft(problem, start, e, e.abs(), 0, T::zero());
                    push_spring(problem, data, start, e, [ks, kt, c], soft);
                }
                EqualityKind::Tendon { tendon, polycoef } => {
                    let value = |t: usize| data.ten_length[t] - T::c(model.tendons[t].length0);
                    let Some(t0) = tendon[0] else { continue };
                    let (e, slope) = coupling(value(t0), tendon[1].map(value), &polycoef);
                    let start = problem.row_dof.len();
                    for (t, w) in [(Some(t0), T::one()), (tendon[1], -slope)] {
                        let Some(t) = t else { continue };
                        for (k, x) in data.ten_jac[t * nv..(t + 1) * nv].iter().enumerate() {
                            if *x != T::zero() {
                                push_entry(problem, &mut self.mark, start, k, *x * w);
                            }
                        }
                    }
                    self.finish_row(problem, start);
                    let (ks, kt, c) = eq.laws[0].stiffness(e.abs());
                    let soft = soft(problem, start, e, e.abs(), 0, T::zero());
                    push_spring(problem, data, start, e, [ks, kt, c], soft);
                }
            }
        }
    }

    /// Pushes the row entries j = f(lin, ang) of the velocity of point
    /// p[0] on body[0] relative to point p[1] on body[1], where (lin, ang)
    /// is a dof's contribution to a point's linear and the body's angular
    /// velocity; f must be linear in (lin, ang). Returns the row's start in the pools.
    fn point_row<T: Real>(
        &mut self,
        model: &Model,
        data: &Data<T>,
        problem: &mut IcfProblem<T>,
        body: [usize; 2],
        p: [Vec3<T>; 2],
        f: impl Fn(Vec3<T>, Vec3<T>) -> T,
    ) -> usize {
        let start = problem.row_dof.len();
        for (k, sign) in [(0, T::one()), (1, -T::one())] {
            let r = p[k] - data.body_ref[body[k]];
            let mut d = model.bodies[body[k]].last_dof;
            while let Some(dof) = d {
                let cd = data.cdof[dof];
                push_entry(problem, &mut self.mark, start, dof, sign * f(cd.point_velocity(r), cd.ang));
                d = model.dofs[dof].parent;
            }
        }
        self.finish_row(problem, start);
        start
    }

    /// Clears the marks of the row started at pool index `start`.
    fn finish_row<T: Real>(&mut self, problem: &IcfProblem<T>, start: usize) {
        for e in start..problem.row_dof.len() {
            self.mark[problem.row_dof[e]] = usize::MAX;
        }
    }
}

/// Closes the row whose entries start at pool index `start` with a
/// bilateral spring on violation `e`: force −ks·e (secant stiffness ks),
/// tangent stiffness k, damping c, all scaled with the world's masses (the
/// laws are per effective mass), or MuJoCo's `soft` row.
fn push_spring<T: Real>(
    problem: &mut IcfProblem<T>,
    data: &Data<T>,
    start: usize,
    e: T,
    [ks, k, c]: [T; 3],
    soft: Option<SoftRow<T>>,
) {
    let s = data.mass_scale;
    problem.rows.push(RowConstraint {
        jac_start: start,
        jac_len: problem.row_dof.len() - start,
        pos: e,
        force: -ks * e * s,
        stiffness: k * s,
        damping: c * s,
        lo: -T::infinity(),
        hi: T::infinity(),
        kappa: T::zero(),
        soft,
    });
}

/// The velocity j·v of the row whose entries start at pool index `start`
/// (the last row pushed to the pools).
fn pool_velocity<T: Real>(problem: &IcfProblem<T>, start: usize, v: &[T]) -> T {
    let mut s = T::zero();
    for e in start..problem.row_dof.len() {
        s += problem.row_coef[e] * v[problem.row_dof[e]];
    }
    s
}

/// The velocity-product acceleration (m/s²) of the point `p` (world) fixed
/// to `body`: its acceleration at zero generalized acceleration, from the
/// bias accelerations of [`crate::dynamics::bias_forces`] (which carry the
/// same gravity offset for every body; it cancels in differences).
fn point_bias_acc<T: Real>(data: &Data<T>, body: usize, p: Vec3<T>) -> Vec3<T> {
    let r = p - data.body_ref[body];
    let (a, v) = (data.cacc[body], data.cvel[body]);
    a.point_velocity(r) + v.ang.cross(v.point_velocity(r))
}

/// J̇·v of a weld's orientation rows before `torquescale`: the
/// velocity-product part of d²/dt² vec(conj(Q1)·Q0), with ė =
/// ½·vec(conj(Q1)·[0, ω0 − ω1]·Q0) (ω in the world frame) and
/// Q̇k = ½·[0, ωk]·Qk.
fn weld_rotation_bias_acc<T: Real>(data: &Data<T>, body: [usize; 2], q0: Quat<T>, q1c: Quat<T>) -> Vec3<T> {
    let pure = |x: Vec3<T>| Quat::from_array([T::zero(), x.x, x.y, x.z]);
    let (w0, w1) = (data.cvel[body[0]].ang, data.cvel[body[1]].ang);
    let (a0, a1) = (data.cacc[body[0]].ang, data.cacc[body[1]].ang);
    let w = pure(w0 - w1);
    let half = T::c(0.5);
    let (l, r) = ((pure(w1) * w).to_array(), (w * pure(w0)).to_array());
    let dw = [T::zero(), a0.x - a1.x, a0.y - a1.y, a0.z - a1.z];
    let inner = Quat::from_array(std::array::from_fn(|k| half * (r[k] - l[k]) + dw[k]));
    (q1c * inner * q0).vec() * half
}

/// World positions of the anchors of two bodies.
fn points<T: Real>(data: &Data<T>, body: [usize; 2], anchor: [[f64; 3]; 2]) -> [Vec3<T>; 2] {
    std::array::from_fn(|k| data.xpos[body[k]] + data.xquat[body[k]].rotate(Vec3::from_array(anchor[k].map(T::c))))
}

/// Violation e = x0 − poly(x1) (or x0 − c0 without a second object) and
/// the slope poly'(x1) of a joint or tendon coupling.
fn coupling<T: Real>(x0: T, x1: Option<T>, c: &[f64; 5]) -> (T, T) {
    let [c0, c1, c2, c3, c4] = c.map(T::c);
    match x1 {
        None => (x0 - c0, T::zero()),
        Some(x) => {
            let poly = c0 + x * (c1 + x * (c2 + x * (c3 + x * c4)));
            let slope = c1 + x * (T::c(2.0) * c2 + x * (T::c(3.0) * c3 + x * T::c(4.0) * c4));
            (x0 - poly, slope)
        }
    }
}

/// Adds `coef` to entry `dof` of the row starting at pool index `start`.
fn push_entry<T: Real>(problem: &mut IcfProblem<T>, mark: &mut [usize], start: usize, dof: usize, coef: T) {
    if mark[dof] == usize::MAX || mark[dof] < start {
        mark[dof] = problem.row_dof.len();
        problem.row_dof.push(dof);
        problem.row_coef.push(coef);
    } else {
        problem.row_coef[mark[dof]] += coef;
    }
}

/// Pushes the non-zero entries of a dense row (nv) times `scale`; returns (start, len).
fn push_dense_row<T: Real>(problem: &mut IcfProblem<T>, row: &[T], scale: T) -> (usize, usize) {
    let start = problem.row_dof.len();
    for (k, x) in row.iter().enumerate() {
        if *x != T::zero() {
            problem.row_dof.push(k);
            problem.row_coef.push(*x * scale);
        }
    }
    (start, problem.row_dof.len() - start)
}

/// For each model element that can couple kinematic trees (tendons,
/// equality constraints, actuators on tendons): the dofs it may touch.
pub(super) fn coupled_dofs(model: &Model) -> Vec<Vec<usize>> {
    let chain = |b: usize, out: &mut Vec<usize>| {
        let mut d = model.bodies[b].last_dof;
        while let Some(k) = d {
            out.push(k);
            d = model.dofs[k].parent;
        }
    };
    let tendon = |t: usize, out: &mut Vec<usize>| match &model.tendons[t].path {
        TendonPath::Fixed(list) => out.extend(list.iter().map(|&(j, _)| model.joints[j].dof_adr)),
        TendonPath::Spatial(path) => {
            for el in path {
                if let crate::model::SpatialElement::Site(s) = *el {
                    chain(model.sites[s].body, out);
                }
            }
        }
    };
    let mut sets = vec![];
    for t in 0..model.tendons.len() {
        let mut v = vec![];
        tendon(t, &mut v);
        sets.push(v);
    }
    for eq in &model.equalities {
        let mut v = vec![];
        match eq.kind {
            EqualityKind::Connect { body, .. } | EqualityKind::Weld { body, .. } => {
                body.iter().for_each(|&b| chain(b, &mut v))
            }
            EqualityKind::Joint { joint, .. } => v.extend(joint.iter().flatten().map(|&j| model.joints[j].dof_adr)),
            EqualityKind::Tendon { tendon: t, .. } => t.iter().flatten().for_each(|&t| tendon(t, &mut v)),
        }
        sets.push(v);
    }
    for a in &model.actuators {
        if let crate::model::ActuatorKind::General(GeneralActuator { transmission: Transmission::Tendon(t), .. }) =
            a.kind
        {
            let mut v = vec![];
            tendon(t, &mut v);
            sets.push(v);
        }
    }
    sets
}
