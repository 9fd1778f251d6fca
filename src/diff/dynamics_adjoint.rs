//! The reverse pass's rule for the rigid-body stages after kinematics —
//! body velocities ([`velocities`]), the mass matrix ([`mass_matrix`],
//! composite rigid bodies) and the bias forces ([`bias_forces`],
//! Newton–Euler) — written by hand instead of recorded (guide: design,
//! §Gradients, "Reverse pass").
//!
//! Recorded, these stages would be about half of a robot's tape after
//! kinematics (the ant: ~2 800 nodes per solve). Their reverse is each
//! recursion run backwards on spatial vectors: the adjoint of a product
//! `I·x` of a spatial inertia and a motion, of a cross product of motions
//! or of a motion and a force, is a handful of 3-vector operations, and the
//! sums over subtrees become sums over ancestors. [`dynamics_leaves`]
//! computes the stages in `f64` and writes each output that can move
//! (mass-matrix entries, bias forces, body velocities and accelerations,
//! motion-subspace derivatives) as a fresh leaf of the tape; [`DynamicsAdjoint::pull_back`]
//! then adds the adjoints of their inputs: the spatial inertias and motion
//! subspaces (leaves of [`super::kinematics_adjoint`]) and v. It equals the
//! recorded sweep to rounding (unit test below).

use super::kinematics_adjoint::{Leaves, bar3, copy_values, probe};
use super::rev::{Rev, tape};
use crate::dynamics::{Data, bias_forces, mass_matrix, velocities};
use crate::math::{Force, Motion, Real, SpatialInertia, Vec3};
use crate::model::{JointKind, Model};

type V = Vec3<f64>;

/// Visits every output of the three stages in a fixed order: each
/// mass-matrix entry of a dof and an ancestor dof (once; `f` sees the
/// lower-triangle slot, which the upper one then copies, so both share one
/// node as in the recorded stage), the bias forces, then per body its
/// velocity and acceleration, then the motion-subspace derivatives.
fn for_each_output<T: Real>(model: &Model, data: &mut Data<T>, mut f: impl FnMut(&mut T)) {
    fn motion<T>(x: &mut Motion<T>, f: &mut impl FnMut(&mut T)) {
        [&mut x.ang.x, &mut x.ang.y, &mut x.ang.z, &mut x.lin.x, &mut x.lin.y, &mut x.lin.z].into_iter().for_each(f);
    }
    let f = &mut f;
    let nv = model.nv;
    for i in 0..nv {
        let mut j = Some(i);
        while let Some(jj) = j {
            f(&mut data.mass[i * nv + jj]);
            data.mass[jj * nv + i] = data.mass[i * nv + jj];
            j = model.dofs[jj].parent;
        }
    }
    data.bias.iter_mut().for_each(&mut *f);
    for bi in 0..model.bodies.len() {
        motion(&mut data.cvel[bi], f);
        motion(&mut data.cacc[bi], f);
    }
    for d in &mut data.cdof_dot {
        motion(d, f);
    }
}

/// Runs the three stages in `f64` on `values` (after
/// [`super::kinematics_adjoint::kinematics_leaves`]) at the values of
/// `data.v`, and writes the outputs into `data` as that function does.
/// Returns the range of the leaves.
pub(crate) fn dynamics_leaves(
    model: &Model,
    values: &mut Data<f64>,
    data: &mut Data<Rev>,
    adjoint: &mut DynamicsAdjoint,
) -> core::ops::Range<usize> {
    copy_values(&data.v, &mut values.v);
    velocities(model, values);
    mass_matrix(model, values);
    bias_forces(model, values);
    let first = tape::len();
    let leaves = &mut adjoint.leaves;
    leaves.values.clear();
    for_each_output(model, values, |x| leaves.values.push(*x));
    for_each_output(model, data, leaves.writer());
    first..tape::len()
}

/// Workspace of [`DynamicsAdjoint::pull_back`] (allocated once).
pub(crate) struct DynamicsAdjoint {
    /// The outputs of [`for_each_output`] as leaves.
    leaves: Leaves,
    /// Adjoints of the composite inertias, then of the body inertias (nbody).
    crb_bar: Vec<SpatialInertia<f64>>,
    /// Adjoints of the bodies' net forces, subtree totals (nbody).
    frc_bar: Vec<Force<f64>>,
    /// Adjoints of the body accelerations (nbody).
    acc_bar: Vec<Motion<f64>>,
    /// Adjoints of the body velocities (nbody).
    vel_bar: Vec<Motion<f64>>,
    /// Adjoints of the motion subspaces and of their derivatives (nv).
    cdof_bar: Vec<Motion<f64>>,
    dot_bar: Vec<Motion<f64>>,
    /// Adjoint of v (nv).
    v_bar: Vec<f64>,
}

#[inline]
fn bar_motion(x: &Motion<Rev>, adj: &[f64]) -> Motion<f64> {
    Motion::new(bar3(x.ang, adj), bar3(x.lin, adj))
}
#[inline]
fn add3(x: Vec3<Rev>, bar: V, adj: &mut [f64]) {
    adj[x.x.index()] += bar.x;
    adj[x.y.index()] += bar.y;
    adj[x.z.index()] += bar.z;
}

/// Reverse of f = I·x = (I ω + h × v, m v − h × ω) for x = (ω, v): adds
/// the inertia's adjoint to `ibar` and returns x̄.
#[inline]
fn inertia_times_bar(
    i: &SpatialInertia<f64>,
    x: Motion<f64>,
    fbar: Force<f64>,
    ibar: &mut SpatialInertia<f64>,
) -> Motion<f64> {
    let (w, v) = (x.ang, x.lin);
    ibar.i = ibar.i + crate::math::Mat3::outer(fbar.ang, w);
    ibar.h += v.cross(fbar.ang) - w.cross(fbar.lin);
    ibar.m += v.dot(fbar.lin);
    Motion::new(i.i.transpose() * fbar.ang + i.h.cross(fbar.lin), fbar.ang.cross(i.h) + fbar.lin * i.m)
}

/// Reverse of d = a ×ₘ b = (a.ang × b.ang, a.ang × b.lin + a.lin × b.ang):
/// adds ā and b̄.
#[inline]
fn cross_motion_bar(a: Motion<f64>, b: Motion<f64>, dbar: Motion<f64>, abar: &mut Motion<f64>, bbar: &mut Motion<f64>) {
    abar.ang += b.ang.cross(dbar.ang) + b.lin.cross(dbar.lin);
    abar.lin += b.ang.cross(dbar.lin);
    bbar.ang += dbar.ang.cross(a.ang) + dbar.lin.cross(a.lin);
    bbar.lin += dbar.lin.cross(a.ang);
}

impl DynamicsAdjoint {
    pub fn new(model: &Model) -> Self {
        let leaves = Leaves::new(|f| {
            let mut data = probe(model);
            velocities(model, &mut data);
            mass_matrix(model, &mut data);
            bias_forces(model, &mut data);
            for_each_output(model, &mut data, f);
        });
        let (nb, nv) = (model.bodies.len(), model.nv);
        Self {
            leaves,
            crb_bar: vec![SpatialInertia::zero(); nb],
            frc_bar: vec![Force::zero(); nb],
            acc_bar: vec![Motion::zero(); nb],
            vel_bar: vec![Motion::zero(); nb],
            cdof_bar: vec![Motion::zero(); nv],
            dot_bar: vec![Motion::zero(); nv],
            v_bar: vec![0.0; nv],
        }
    }

    /// Adds (∂outputs/∂inputs)ᵀ · (the adjoints of the leaves of
    /// [`dynamics_leaves`]) to the adjoints of `data.cinert`, `data.cdof`
    /// and `data.v`; `values` is the data `dynamics_leaves` computed in
    /// (its composite inertias and net forces are read). `adj[0]`, the
    /// constant node's, is cleared first: the outputs that do not move
    /// read it.
    pub fn pull_back(&mut self, model: &Model, values: &Data<f64>, data: &Data<Rev>, adj: &mut [f64]) {
        adj[0] = 0.0;
        let (nb, nv) = (model.bodies.len(), model.nv);
        self.crb_bar.fill(SpatialInertia::zero());
        self.frc_bar.fill(Force::zero());
        self.cdof_bar.fill(Motion::zero());
        self.v_bar.fill(0.0);
        let cdof = |k: usize| values.cdof[k];
        let v = |k: usize| values.v[k];

        // Mass matrix: M_ij = cdof_j · (crb_body(i) cdof_i) along i's ancestor dofs.
        for i in 0..nv {
            let b = model.dofs[i].body;
            let crb = values.crb[b];
            let fi = crb * cdof(i);
            let mut fbar = Force::zero();
            let mut j = Some(i);
            while let Some(jj) = j {
                let mbar = adj[data.mass[i * nv + jj].index()];
                let cj = cdof(jj);
                fbar += Force::new(cj.ang * mbar, cj.lin * mbar);
                self.cdof_bar[jj] += Motion::new(fi.ang * mbar, fi.lin * mbar);
                j = model.dofs[jj].parent;
            }
            let xbar = inertia_times_bar(&crb, cdof(i), fbar, &mut self.crb_bar[b]);
            self.cdof_bar[i] += xbar;
        }
        // Composite inertias are subtree sums: a body's inertia adjoint is
        // the sum over itself and its ancestors.
        for bi in 1..nb {
            let p = model.bodies[bi].parent;
            if p != 0 {
                let a = self.crb_bar[p];
                self.crb_bar[bi] += a;
            }
        }

        // Bias forces: bias_i = cdof_i · cfrc_body(i) (subtree totals).
        for (i, dof) in model.dofs.iter().enumerate() {
            let bbar = adj[data.bias[i].index()];
            let (c, f) = (cdof(i), &values.cfrc[dof.body]);
            self.frc_bar[dof.body] += Force::new(c.ang * bbar, c.lin * bbar);
            self.cdof_bar[i] += Motion::new(f.ang * bbar, f.lin * bbar);
        }
        for bi in 1..nb {
            let p = model.bodies[bi].parent;
            if p != 0 {
                let f = self.frc_bar[p];
                self.frc_bar[bi] += f;
            }
        }
        // Each body's own force I a + v ×f (I v).
        for bi in 1..nb {
            self.acc_bar[bi] = bar_motion(&data.cacc[bi], adj);
            self.vel_bar[bi] = bar_motion(&data.cvel[bi], adj);
        }
        for bi in 1..nb {
            let i = values.cinert[bi];
            let (a, vel) = (values.cacc[bi], values.cvel[bi]);
            let obar = self.frc_bar[bi];
            let abar = inertia_times_bar(&i, a, obar, &mut self.crb_bar[bi]);
            self.acc_bar[bi] += abar;
            let p = i * vel;
            // o = vel ×f p = (w × p.ang + u × p.lin, w × p.lin) for vel = (w, u).
            let (w, u) = (vel.ang, vel.lin);
            let mut vbar = Motion::new(p.ang.cross(obar.ang) + p.lin.cross(obar.lin), p.lin.cross(obar.ang));
            let pbar = Force::new(obar.ang.cross(w), obar.ang.cross(u) + obar.lin.cross(w));
            vbar += inertia_times_bar(&i, vel, pbar, &mut self.crb_bar[bi]);
            self.vel_bar[bi] += vbar;
        }
        // Accelerations: a_b = a_parent + Σ cdof_dot_k v_k, leaves to root.
        for k in 0..nv {
            self.dot_bar[k] = bar_motion(&data.cdof_dot[k], adj);
        }
        for bi in (1..nb).rev() {
            let body = &model.bodies[bi];
            let abar = self.acc_bar[bi];
            for k in body.dof_adr..body.dof_adr + body.dof_num {
                let d = values.cdof_dot[k];
                self.dot_bar[k] += abar.scale(v(k));
                self.v_bar[k] += abar.ang.dot(d.ang) + abar.lin.dot(d.lin);
            }
            if body.parent != 0 {
                self.acc_bar[body.parent] += abar;
            }
        }

        // Velocities backwards: cv += cdof_k v_k and cdof_dot_k = cv ×ₘ cdof_k
        // reversed, cv itself recovered by undoing the additions from the
        // body's velocity (to rounding, which only the adjoints see).
        for bi in (1..nb).rev() {
            let body = &model.bodies[bi];
            let mut cvbar = self.vel_bar[bi];
            let mut cv = values.cvel[bi];
            for ji in (body.jnt_adr..body.jnt_adr + body.jnt_num).rev() {
                let j = &model.joints[ji];
                let da = j.dof_adr;
                // Free: derivatives of the rotational dofs between the
                // translational and rotational additions; ball: derivatives
                // before its additions; hinge, slide: after its addition.
                let (dots, before) = match j.kind {
                    JointKind::Free => (da + 3..da + 6, da..da + 3),
                    JointKind::Ball => (da..da + 3, da..da),
                    _ => (da..da + 1, da..da + 1),
                };
                let undo = |k: usize,
                            cv: &mut Motion<f64>,
                            cvbar: Motion<f64>,
                            cdof_bar: &mut Motion<f64>,
                            v_bar: &mut f64| {
                    *cdof_bar += cvbar.scale(v(k));
                    *v_bar += cvbar.ang.dot(cdof(k).ang) + cvbar.lin.dot(cdof(k).lin);
                    *cv = *cv - cdof(k).scale(v(k));
                };
                if j.kind != JointKind::Hinge && j.kind != JointKind::Slide {
                    for k in dots.clone() {
                        undo(k, &mut cv, cvbar, &mut self.cdof_bar[k], &mut self.v_bar[k]);
                    }
                }
                for k in dots {
                    let mut cbar = Motion::zero();
                    cross_motion_bar(cv, cdof(k), self.dot_bar[k], &mut cvbar, &mut cbar);
                    self.cdof_bar[k] += cbar;
                }
                for k in before {
                    undo(k, &mut cv, cvbar, &mut self.cdof_bar[k], &mut self.v_bar[k]);
                }
            }
            if body.parent != 0 {
                self.vel_bar[body.parent] += cvbar;
            }
        }

        // Into the tape: inertias, subspaces, v.
        for bi in 1..nb {
            let (ci, bar) = (&data.cinert[bi], &self.crb_bar[bi]);
            adj[ci.m.index()] += bar.m;
            add3(ci.h, bar.h, adj);
            for r in 0..3 {
                for c in 0..3 {
                    adj[ci.i.m[r][c].index()] += bar.i.m[r][c];
                }
            }
        }
        for k in 0..nv {
            let (c, bar) = (&data.cdof[k], self.cdof_bar[k]);
            add3(c.ang, bar.ang, adj);
            add3(c.lin, bar.lin, adj);
            adj[data.v[k].index()] += self.v_bar[k];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kinematics_adjoint::tests::{assert_equal_to_rounding, seeded_adjoints};
    use super::super::kinematics_adjoint::{KinematicsAdjoint, kinematics_leaves};
    use super::*;
    use crate::dynamics::kinematics;
    use crate::rl::EnvRng;

    /// Kinematics and these stages by hand equal the recorded sweep for
    /// random adjoints of the stages' outputs, at random states, on every
    /// joint kind (the kinematics test model; the robots are checked
    /// through `tests/diff_adjoint.rs`).
    #[test]
    fn pull_back_equals_the_recorded_sweep_on_every_joint_kind() {
        let model = &Model::from_mjcf_str(super::super::kinematics_adjoint::tests::MODEL).expect("test model");
        let mut rng = EnvRng::new(11, 0);
        for round in 0..4 {
            let q0: Vec<f64> = (0..model.nq).map(|i| model.qpos0[i] + 0.7 * rng.uniform(-1.0, 1.0)).collect();
            let v0: Vec<f64> = (0..model.nv).map(|_| 2.0 * rng.uniform(-1.0, 1.0)).collect();
            let s = 1.0 + 0.3 * rng.uniform(-1.0, 1.0);
            let mut results = vec![];
            for hand in [false, true] {
                tape::clear();
                let mut d = Data::<Rev>::new(model);
                let ins: Vec<Rev> = q0.iter().chain(&v0).chain([&s]).map(|&x| Rev::var(x)).collect();
                d.q.copy_from_slice(&ins[..model.nq]);
                d.v.copy_from_slice(&ins[model.nq..model.nq + model.nv]);
                d.mass_scale = ins[model.nq + model.nv];
                let (mut ka, mut da) = (KinematicsAdjoint::new(model), DynamicsAdjoint::new(model));
                let mut values = Data::<f64>::new(model);
                let (mut kin, mut dynamics) = (0..0, 0..0);
                if hand {
                    kin = kinematics_leaves(model, &mut values, &mut d, &mut ka);
                    dynamics = dynamics_leaves(model, &mut values, &mut d, &mut da);
                } else {
                    kinematics(model, &mut d);
                    velocities(model, &mut d);
                    mass_matrix(model, &mut d);
                    bias_forces(model, &mut d);
                }
                let mut outs = vec![];
                for_each_output(model, &mut d, |x| outs.push(*x));
                let mut adj = seeded_adjoints(&outs, round);
                if hand {
                    tape::backward_range(&mut adj, dynamics.end..tape::len());
                    da.pull_back(model, &values, &d, &mut adj);
                    tape::backward_range(&mut adj, kin.end..dynamics.start);
                    ka.pull_back(model, &values, &d, &mut adj);
                    tape::backward_range(&mut adj, 0..kin.start);
                } else {
                    tape::backward(&mut adj);
                }
                results.push(ins.iter().map(|x| adj[x.index()]).collect::<Vec<f64>>());
            }
            assert_equal_to_rounding(&results[0], &results[1], round);
        }
        tape::release();
    }
}
