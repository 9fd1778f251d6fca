//! The ICF builder: the only code that reads the [`Model`], the multibody
//! [`Data`] and the contacts to fill an [`IcfProblem`].

use super::problem::{ContactConstraint, GainConstraint, IcfProblem, LimitConstraint};
use super::soft::{RowState, soft_contact, soft_row};
use crate::collision::Contact;
use crate::dynamics::Data;
use crate::math::{Real, Vec3};
use crate::model::{ActuatorKind, JointKind, Model, Semantics};

/// Per-world multipliers on contact materials (1 = as in the model), for
/// domain randomisation and system identification. The scalar type is
/// `f64` for settings and the simulator's scalar `T` inside the builder, so
/// that the multipliers can be differentiated (see [`crate::diff`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaterialScale<T = f64> {
    /// Multiplies every contact stiffness.
    pub stiffness: T,
    /// Multiplies every Hunt–Crossley dissipation.
    pub dissipation: T,
    /// Multiplies every static friction coefficient.
    pub mu_static: T,
    /// Multiplies every dynamic friction coefficient.
    pub mu_dynamic: T,
}

impl<T: Real> Default for MaterialScale<T> {
    fn default() -> Self {
        Self { stiffness: T::one(), dissipation: T::one(), mu_static: T::one(), mu_dynamic: T::one() }
    }
}

impl<T: Real> MaterialScale<T> {
    /// Converts the scalar type (through `f64`).
    pub fn cast<U: Real>(&self) -> MaterialScale<U> {
        MaterialScale {
            stiffness: U::c(self.stiffness.f64()),
            dissipation: U::c(self.dissipation.f64()),
            mu_static: U::c(self.mu_static.f64()),
            mu_dynamic: U::c(self.mu_dynamic.f64()),
        }
    }
}

/// Actuation held constant over a step.
#[derive(Clone, Copy, Debug)]
pub struct Actuation<'a, T> {
    /// One control per actuator: motor input (before gear) or servo target position (rad or m).
    pub ctrl: &'a [T],
    /// Servo target velocities v_ref (rad/s or m/s), one per actuator; zero when empty.
    pub target_velocity: &'a [T],
    /// External generalized forces (nv; N or N·m, MuJoCo's `qfrc_applied`);
    /// zero when empty. For a free joint: a world-frame force at the body
    /// origin, then a body-frame torque.
    pub applied: &'a [T],
}

/// Builds ICF problems for one model. Holds only scratch space.
#[derive(Clone, Debug)]
pub struct IcfBuilder {
    /// Mass of each body's weld group (bodies moving rigidly together), kg.
    weld_mass: Vec<f64>,
    /// Scratch: slot of each dof in the contact or row being assembled (usize::MAX if none).
    pub(super) mark: Vec<usize>,
    /// Dof ranges of the kinematic trees (merged where a tendon, equality
    /// constraint or actuator couples trees) when they are contiguous (else empty).
    blocks: Vec<(usize, usize)>,
    /// Tree block of each dof.
    dof_block: Vec<usize>,
    /// Parent dof of each dof (`usize::MAX` at a tree root).
    dof_parent: Vec<usize>,
}

/// Scale factor of the Delassus estimate w ≈ 2.65/m (guide: design,
/// §Contacts under the physical semantics, `docs/src/design.md`).
const DELASSUS_FACTOR: f64 = 2.65;

impl IcfBuilder {
    /// Scratch for `model`.
    pub fn new(model: &Model) -> Self {
        let mut weld_mass = vec![0.0; model.bodies.len()];
        for b in &model.bodies {
            weld_mass[b.weld] += b.mass;
        }
        let weld_mass = model.bodies.iter().map(|b| weld_mass[b.weld]).collect();
        let (blocks, dof_block) = tree_blocks(model);
        let dof_parent = model.dofs.iter().map(|d| d.parent.unwrap_or(usize::MAX)).collect();
        Self { weld_mass, mark: vec![usize::MAX; model.nv], blocks, dof_block, dof_parent }
    }

    /// Fills `problem` for the state in `data`, which must hold the results
    /// of `kinematics`, `velocities`, `mass_matrix`, `bias_forces` and
    /// `passive_forces` at (q0, v0). Call [`IcfProblem::set_time_step`] next.
    pub fn build<T: Real>(
        &mut self,
        model: &Model,
        data: &Data<T>,
        contacts: &[Contact<T>],
        act: Actuation<'_, T>,
        materials: &MaterialScale<T>,
        problem: &mut IcfProblem<T>,
    ) {
        let nv = model.nv;
        let flags = model.options.flags;
        let mujoco = model.options.semantics == Semantics::MuJoCo;
        problem.nv = nv;
        problem.clear_constraints();
        if problem.blocks != self.blocks {
            problem.blocks.clone_from(&self.blocks);
            problem.dof_block.clone_from(&self.dof_block);
            problem.mass.copy_from_slice(&data.mass);
        } else {
            // M is block diagonal over the trees: the entries between two
            // trees are zero in both and need no copy (nv² per call otherwise).
            for bi in 0..problem.block_count() {
                let (s, m) = problem.block(bi);
                for i in s..s + m {
                    problem.mass[i * nv + s..i * nv + s + m].copy_from_slice(&data.mass[i * nv + s..i * nv + s + m]);
                }
            }
        }
        if problem.dof_parent != self.dof_parent {
            problem.dof_parent.clone_from(&self.dof_parent);
        }
        problem.v0.copy_from_slice(&data.v);
        problem.stiction_tolerance = T::c(model.options.stiction_tolerance);
        for (i, dof) in model.dofs.iter().enumerate() {
            let d = if flags.damper { T::c(dof.damping) } else { T::zero() };
            problem.damping[i] = d;
            // Damping at v0 goes into k; A = M + hD makes it implicit.
            let applied = act.applied.get(i).copied().unwrap_or(T::zero());
            problem.force[i] = data.bias[i] - data.passive[i] - applied + d * data.v[i];
        }

        for (ai, a) in model.actuators.iter().enumerate().filter(|_| flags.actuation) {
            let mut u = act.ctrl.get(ai).copied().unwrap_or(T::zero());
            if let Some([lo, hi]) = a.ctrl_range.filter(|_| flags.clampctrl) {
                u = u.max(T::c(lo)).min(T::c(hi));
            }
            if let ActuatorKind::General(g) = &a.kind {
                self.general_actuator(model, data, ai, g, u, problem);
                continue;
            }
            let j = &model.joints[a.joint];
            match a.kind {
                ActuatorKind::Motor { gear, force_range } => {
                    if let Some([lo, hi]) = force_range {
                        u = u.max(T::c(lo)).min(T::c(hi));
                    }
                    problem.force[j.dof_adr] -= T::c(gear) * u;
                }
                ActuatorKind::Position { kp, kd, effort_limit } => {
                    problem.gains.push(GainConstraint {
                        dof: j.dof_adr,
                        kp: T::c(kp),
                        kd: T::c(kd),
                        q_err: u - data.q[j.qpos_adr],
                        v_ref: act.target_velocity.get(ai).copied().unwrap_or(T::zero()),
                        effort: T::c(effort_limit),
                        gain: T::zero(),
                        bias: T::zero(),
                    });
                }
                ActuatorKind::General(_) => unreachable!("handled above"),
            }
        }
        self.tendon_rows(model, data, problem);
        if flags.frictionloss {
            self.friction_rows(model, data, problem);
        }
        if flags.equality {
            self.equality_rows(model, data, problem);
        }

        for j in &model.joints {
            let (Some([lo, hi]), Some(law), JointKind::Hinge | JointKind::Slide) = (j.range, j.limit_law, j.kind)
            else {
                continue;
            };
            let q = data.q[j.qpos_adr];
            let m = j.limit_margin;
            for (sign, g0) in [(T::one(), q - T::c(lo + m)), (-T::one(), T::c(hi - m) - q)] {
                // The spring scales with the world's masses, so its time scale does not.
                let (f, k, c) = law.at(-g0);
                let s = data.mass_scale;
                // MuJoCo's limit exists once q is within the margin (g0 < 0).
                let soft = mujoco.then(|| {
                    let st = RowState { x: g0, norm: g0.abs(), active: g0 < T::zero(), vel0: sign * data.v[j.dof_adr] };
                    soft_row(model, &j.limit_softness, false, st, model.dofs[j.dof_adr].invweight0, s)
                });
                problem.limits.push(LimitConstraint {
                    dof: j.dof_adr,
                    sign,
                    g0,
                    fe0: f * s,
                    stiffness: k * s,
                    damping: c * s,
                    soft,
                });
            }
        }

        for c in contacts {
            let start = problem.jac_dof.len();
            // J = J_B(p) − J_A(p), merged over the dof chains of both bodies.
            for (body, sign) in [(c.body[1], T::one()), (c.body[0], -T::one())] {
                let r = c.pos - data.body_ref[body];
                let mut d = model.bodies[body].last_dof;
                while let Some(k) = d {
                    let col = data.cdof[k].point_velocity(r) * sign;
                    if self.mark[k] == usize::MAX {
                        self.mark[k] = problem.jac_dof.len();
                        problem.jac_dof.push(k);
                        problem.jac_col.push(col);
                    } else {
                        problem.jac_col[self.mark[k]] += col;
                    }
                    d = model.dofs[k].parent;
                }
            }
            for e in start..problem.jac_dof.len() {
                self.mark[problem.jac_dof[e]] = usize::MAX;
            }
            let mut w = 0.0;
            for b in c.body {
                if model.body_is_dynamic(b) && self.weld_mass[b] > 0.0 {
                    w += DELASSUS_FACTOR / self.weld_mass[b];
                }
            }
            let mat = &c.material;
            let soft = mat.soft.as_ref().map(|s| soft_contact(model, data, c, s, materials, data.mass_scale));
            let mut con = ContactConstraint {
                phi0: c.dist,
                normal: c.normal,
                stiffness: T::c(mat.stiffness) * materials.stiffness,
                dissipation: T::c(mat.dissipation) * materials.dissipation,
                mu_static: T::c(mat.mu_static) * materials.mu_static,
                mu_dynamic: T::c(mat.mu_dynamic) * materials.mu_dynamic,
                // The estimate is of the world's masses, which data.mass_scale multiplies.
                delassus: T::c(w) / data.mass_scale,
                jac_start: start,
                jac_len: problem.jac_dof.len() - start,
                vc0: Vec3::zero(),
                fe0: T::zero(),
                n0: T::zero(),
                mu: T::zero(),
                eps: T::zero(),
                soft,
            };
            if con.soft.is_some() {
                // The soft contact replaces the Hunt–Crossley law and friction.
                (con.stiffness, con.dissipation, con.mu_static, con.mu_dynamic) =
                    (T::zero(), T::zero(), T::zero(), T::zero());
            }
            con.vc0 = problem.contact_velocity(&con, &data.v);
            problem.contacts.push(con);
        }
    }
}

/// Dof ranges of the kinematic trees (roots are children of the world) and
/// the tree of each dof, when every tree's dofs are contiguous (true for
/// depth-first body orders such as MJCF's); otherwise empty (dense solve).
/// Trees that a tendon, equality constraint or actuator couples are merged
/// into one block (with every tree between them, to stay contiguous), so
/// the rows of those elements never couple two blocks.
pub(crate) fn tree_blocks(model: &Model) -> (Vec<(usize, usize)>, Vec<usize>) {
    let (blocks, dof_block) = separate_tree_blocks(model);
    if blocks.len() <= 1 {
        return (blocks, dof_block);
    }
    // joined[b]: block b is merged with block b + 1.
    let mut joined = vec![false; blocks.len()];
    for dofs in super::rows::coupled_dofs(model) {
        let bs = dofs.iter().map(|&d| dof_block[d]);
        if let (Some(lo), Some(hi)) = (bs.clone().min(), bs.max()) {
            joined[lo..hi].iter_mut().for_each(|j| *j = true);
        }
    }
    let mut merged: Vec<(usize, usize)> = vec![];
    let mut map = vec![0; blocks.len()];
    for (b, &(s, m)) in blocks.iter().enumerate() {
        match merged.last_mut() {
            Some(last) if joined[b - 1] => last.1 += m,
            _ => merged.push((s, m)),
        }
        map[b] = merged.len() - 1;
    }
    let dof_block = dof_block.iter().map(|&b| map[b]).collect();
    (merged, dof_block)
}

/// [`tree_blocks`] before merging coupled trees.
fn separate_tree_blocks(model: &Model) -> (Vec<(usize, usize)>, Vec<usize>) {
    let mut blocks: Vec<(usize, usize)> = vec![];
    let mut dof_block = vec![0; model.nv];
    let mut root_of_block: Vec<usize> = vec![];
    for (i, dof) in model.dofs.iter().enumerate() {
        let root = model.bodies[dof.body].root;
        match root_of_block.last() {
            Some(&r) if r == root => blocks.last_mut().unwrap().1 += 1,
            _ => {
                if root_of_block.contains(&root) {
                    return (vec![], vec![]); // a tree's dofs are split: not contiguous
                }
                root_of_block.push(root);
                blocks.push((i, 1));
            }
        }
        dof_block[i] = blocks.len() - 1;
    }
    (blocks, dof_block)
}
