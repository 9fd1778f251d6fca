//! The reverse pass's rule for forward kinematics, written by hand
//! instead of recorded (guide: design, §Gradients, "Reverse pass").
//!
//! Recorded scalar by scalar, kinematics with the spatial inertias and
//! motion subspaces would be half of a robot's tape (the ant: ~4 700 of
//! ~9 200 nodes per solve) and a quarter of its reverse time. Its adjoint has a
//! structure the tape cannot see: every output is fixed to one frame of the
//! kinematic tree, so a small motion (ω, v) of that frame moves it
//! rigidly, and the adjoint of each output is a wrench on its frame. Summed
//! from the leaves towards the root, each dof's adjoint is its motion
//! subspace applied to the wrench of everything it moves, the transpose of
//! the position Jacobian, in one pass.
//!
//! [`kinematics_leaves`] runs [`kinematics`] in `f64` and writes each
//! output that can move as a fresh leaf of the tape (the others as
//! constants); the rest of the pipeline records on those leaves. After the sweep has brought the adjoints down to them,
//! [`KinematicsAdjoint::pull_back`] adds the adjoints of q, the mass scale
//! and the geom offset scales. It equals the recorded sweep to rounding
//! (unit test below, on every joint kind): the tangent of every recorded
//! orientation is a rotation (normalised quaternions, unit hinge axes), so
//! only rotation tangents need a rule.
//!
//! Frames: a body's final frame (after its joints) carries its pose, centre
//! of mass, inertia, geoms and sites; the frame just before joint j carries
//! j's anchor and axis (j does not move them), and the motion subspace of a
//! hinge or slide. Wrenches are kept as (force, torque about the world
//! origin), so moving one to the parent is a sum.

use super::dual::Dual;
use super::rev::Rev;
use crate::dynamics::{Data, kinematics};
use crate::math::{Mat3, Quat, Real, Vec3, q4, v3};
use crate::model::{JointKind, Model};

type V = Vec3<f64>;

/// Force (N-like: adjoint of a position) and torque about the world origin.
#[derive(Clone, Copy, Default)]
struct Wrench {
    f: V,
    t: V,
}

impl Wrench {
    /// A point `p` fixed to the frame, with adjoint `bar`: δp = v + ω × p.
    #[inline]
    fn point(&mut self, p: V, bar: V) {
        self.f += bar;
        self.t += p.cross(bar);
    }
    /// A direction `a` fixed to the frame: δa = ω × a.
    #[inline]
    fn vector(&mut self, a: V, bar: V) {
        self.t += a.cross(bar);
    }
    /// A rotation matrix fixed to the frame: δR = [ω]× R.
    #[inline]
    fn matrix(&mut self, r: &Mat3<f64>, bar: &Mat3<f64>) {
        for k in 0..3 {
            self.t += r.col(k).cross(bar.col(k));
        }
    }
    /// A quaternion fixed to the frame: δq = ½ (0, ω) ⊗ q, so
    /// ⟨q̄, δq⟩ = ω · ½ vec(q̄ ⊗ q*) (right multiplication's transpose is
    /// right multiplication by the conjugate, for any q).
    #[inline]
    fn quat(&mut self, q: Quat<f64>, bar: Quat<f64>) {
        self.t += (bar * q.conj()).vec() * 0.5;
    }
    fn add(&mut self, o: &Wrench) {
        self.f += o.f;
        self.t += o.t;
    }
}

/// The adjoints of a vector's components (`adj[0]` for a constant).
#[inline]
pub(super) fn bar3(x: Vec3<Rev>, adj: &[f64]) -> V {
    Vec3::new(adj[x.x.index()], adj[x.y.index()], adj[x.z.index()])
}
#[inline]
fn barq(x: Quat<Rev>, adj: &[f64]) -> Quat<f64> {
    Quat::new(adj[x.w.index()], adj[x.x.index()], adj[x.y.index()], adj[x.z.index()])
}
#[inline]
fn barm(x: &Mat3<Rev>, adj: &[f64]) -> Mat3<f64> {
    Mat3 { m: x.m.map(|r| r.map(|e| adj[e.index()])) }
}

/// Visits every output of [`kinematics`] that can depend on q, the mass
/// scale or a geom offset scale, in a fixed order: per body its pose,
/// centre of mass, reference point, spatial inertia, its joints' anchors
/// and axes and its dofs' motion subspaces; then geoms and sites.
fn for_each_output<T: Real>(model: &Model, data: &mut Data<T>, mut f: impl FnMut(&mut T)) {
    fn v3<T>(x: &mut Vec3<T>, f: &mut impl FnMut(&mut T)) {
        [&mut x.x, &mut x.y, &mut x.z].into_iter().for_each(f);
    }
    fn q4<T>(x: &mut Quat<T>, f: &mut impl FnMut(&mut T)) {
        [&mut x.w, &mut x.x, &mut x.y, &mut x.z].into_iter().for_each(f);
    }
    fn m3<T>(x: &mut Mat3<T>, f: &mut impl FnMut(&mut T)) {
        x.m.iter_mut().flatten().for_each(f);
    }
    let f = &mut f;
    for (bi, body) in model.bodies.iter().enumerate() {
        v3(&mut data.xpos[bi], f);
        q4(&mut data.xquat[bi], f);
        m3(&mut data.xmat[bi], f);
        v3(&mut data.xipos[bi], f);
        v3(&mut data.body_ref[bi], f);
        let ci = &mut data.cinert[bi];
        f(&mut ci.m);
        v3(&mut ci.h, f);
        m3(&mut ci.i, f);
        for ji in body.jnt_adr..body.jnt_adr + body.jnt_num {
            let j = &model.joints[ji];
            v3(&mut data.xanchor[ji], f);
            v3(&mut data.xaxis[ji], f);
            for d in &mut data.cdof[j.dof_adr..j.dof_adr + j.kind.nv()] {
                v3(&mut d.ang, f);
                v3(&mut d.lin, f);
            }
        }
    }
    for gi in 0..model.geoms.len() {
        v3(&mut data.geom_xpos[gi], f);
        m3(&mut data.geom_xmat[gi], f);
    }
    for si in 0..model.sites.len() {
        v3(&mut data.site_xpos[si], f);
        q4(&mut data.site_xquat[si], f);
    }
}

/// [`kinematics`] in forward tangents, for [`Leaves::new`] of this stage
/// and the stages after it: q, v, the mass scale and the geom offset
/// scales at random values near `qpos0`, 0 and 1, each with two random
/// tangents. An output whose tangents are both exactly zero is a
/// structural constant (a planar robot's out-of-plane components, a free
/// joint's translational subspaces); making those leaves would cost the
/// stages downstream the nodes the recorded kinematics never made
/// (half_cheetah's reverse pass 1.24× slower).
pub(super) fn probe(model: &Model) -> Data<Dual<2>> {
    let mut rng = crate::rl::EnvRng::new(0x5eed, 0);
    let mut data = Data::<Dual<2>>::new(model);
    let mut var = |x: f64| Dual { v: x + rng.uniform(-0.2, 0.2), d: [rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5)] };
    for (q, &q0) in data.q.iter_mut().zip(&model.qpos0) {
        *q = var(q0);
    }
    data.v.iter_mut().for_each(|v| *v = var(0.0));
    data.mass_scale = var(1.0);
    data.geom_offset_scale.iter_mut().for_each(|s| *s = var(1.0));
    kinematics(model, &mut data);
    data
}

/// Runs [`kinematics`] in `f64` on `values` at the values of `data.q`,
/// the mass scale and the geom offset scales, and writes the outputs into
/// `data` (bit-identical to running it there): the outputs that move
/// as fresh leaves of this thread's tape
/// (recording must be on), the others as constants. Returns the range of
/// the leaves: sweep the nodes above it before
/// [`KinematicsAdjoint::pull_back`], the nodes below it after (the leaves
/// themselves have no parents).
pub(crate) fn kinematics_leaves(
    model: &Model,
    values: &mut Data<f64>,
    data: &mut Data<Rev>,
    adjoint: &mut KinematicsAdjoint,
) -> core::ops::Range<usize> {
    copy_values(&data.q, &mut values.q);
    values.mass_scale = data.mass_scale.v;
    copy_values(&data.geom_offset_scale, &mut values.geom_offset_scale);
    kinematics(model, values);
    let first = super::rev::tape::len();
    let leaves = &mut adjoint.leaves;
    leaves.values.clear();
    for_each_output(model, values, |x| leaves.values.push(*x));
    for_each_output(model, data, leaves.writer());
    first..super::rev::tape::len()
}

/// `dst[i] = src[i].v`.
pub(super) fn copy_values(src: &[Rev], dst: &mut [f64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.v;
    }
}

/// A stage's outputs as leaves of the tape: which ones move, and their
/// values (allocated once per model).
pub(super) struct Leaves {
    /// Per output of the stage's walk: whether it becomes a leaf.
    moving: Vec<bool>,
    /// How many do.
    n_moving: usize,
    /// The outputs' values, in the walk's order (gathered per solve).
    pub values: Vec<f64>,
}

impl Leaves {
    /// From the forward tangents of a walk over the stage's outputs
    /// ([`probe`]): an output whose two tangents are exactly zero is a
    /// structural constant.
    pub fn new(probed: impl FnOnce(&mut dyn FnMut(&mut Dual<2>))) -> Self {
        let mut moving = vec![];
        probed(&mut |x: &mut Dual<2>| moving.push(x.d != [0.0; 2]));
        let n_moving = moving.iter().filter(|&&m| m).count();
        Self { values: Vec::with_capacity(moving.len()), moving, n_moving }
    }

    /// The writer of the outputs the walk visits, in order: value
    /// `values[i]`, a leaf where it moves (all pushed in one tape access),
    /// a constant elsewhere.
    pub fn writer(&self) -> impl FnMut(&mut Rev) + '_ {
        let mut node = super::rev::tape::push_leaves(self.n_moving);
        let step = u64::from(node != 0);
        let mut i = 0;
        move |x: &mut Rev| {
            *x = if self.moving[i] {
                node += step;
                Rev::on_node(self.values[i], node - step)
            } else {
                Rev::cst(self.values[i])
            };
            i += 1;
        }
    }
}

/// Workspace of [`KinematicsAdjoint::pull_back`] (allocated once).
pub(crate) struct KinematicsAdjoint {
    /// Wrench on each body's final frame (nbody).
    body: Vec<Wrench>,
    /// Wrench on the frame just before each joint (njnt).
    joint: Vec<Wrench>,
    /// The outputs of [`for_each_output`] as leaves.
    leaves: Leaves,
}

impl KinematicsAdjoint {
    pub fn new(model: &Model) -> Self {
        Self {
            body: vec![Wrench::default(); model.bodies.len()],
            joint: vec![Wrench::default(); model.joints.len()],
            leaves: Leaves::new(|f| for_each_output(model, &mut probe(model), f)),
        }
    }

    /// Adds (∂outputs/∂inputs)ᵀ · (the adjoints of the leaves of
    /// [`kinematics_leaves`]) to the adjoints of `data.q`, `data.mass_scale`
    /// and `data.geom_offset_scale` (nodes below the leaves); `values` is
    /// the data `kinematics_leaves` computed in. `adj[0]`, the
    /// constant node's, is cleared: the outputs that do not move read it.
    pub fn pull_back(&mut self, model: &Model, values: &Data<f64>, data: &Data<Rev>, adj: &mut [f64]) {
        adj[0] = 0.0;
        self.body.fill(Wrench::default());
        self.joint.fill(Wrench::default());
        let scale = values.mass_scale;
        let mut scale_bar = 0.0;
        for (bi, body) in model.bodies.iter().enumerate().skip(1) {
            let xpos = values.xpos[bi];
            let xquat = values.xquat[bi];
            let xmat = values.xmat[bi];
            let xipos = values.xipos[bi];
            let root = body.root;
            let r = if root == 0 { Vec3::zero() } else { values.xpos[root] };
            let w = &mut self.body[bi];
            w.point(xpos, bar3(data.xpos[bi], adj));
            w.quat(xquat, barq(data.xquat[bi], adj));
            w.matrix(&xmat, &barm(&data.xmat[bi], adj));
            w.point(xipos, bar3(data.xipos[bi], adj));

            // cinert = (m, m c, ic + m (|c|² 1 − c cᵀ)) with c = xipos − r,
            // m = mass · s, ic = rm diag(inertia · s) rmᵀ.
            let ci = &data.cinert[bi];
            let (mbar, hbar, ibar) = (adj[ci.m.index()], bar3(ci.h, adj), barm(&ci.i, adj));
            let m = body.mass * scale;
            let c = xipos - r;
            let ibar_c = ibar * c + ibar.transpose() * c;
            let trace = ibar.m[0][0] + ibar.m[1][1] + ibar.m[2][2];
            let cbar = (hbar + c * (2.0 * trace) - ibar_c) * m;
            w.point(xipos, cbar);
            let rm = (xquat * q4(body.iquat)).to_mat3();
            let ic0 = rm * Mat3::diag(v3(body.inertia)) * rm.transpose();
            let ic = ic0.scale(scale);
            // ⟨Ī, [ω]ic − ic[ω]⟩ = ω · Σ_j (ic col_j × Ī col_j + ic row_j × Ī row_j).
            for k in 0..3 {
                w.t += ic.col(k).cross(ibar.col(k)) + ic.row(k).cross(ibar.row(k));
            }
            scale_bar += body.mass * (mbar + hbar.dot(c) + c.dot(c) * trace - c.dot(ibar * c)) + frobenius(&ibar, &ic0);
            let mut rbar = -cbar;
            if root != 0 {
                rbar += bar3(data.body_ref[bi], adj);
            }

            // Motion subspaces (w, w × (r − anchor)) and joint frames.
            for ji in body.jnt_adr..body.jnt_adr + body.jnt_num {
                let j = &model.joints[ji];
                let anchor = values.xanchor[ji];
                let axis = values.xaxis[ji];
                let d = r - anchor;
                // The free joint's anchor and axis move with its own rotation.
                let free = j.kind == JointKind::Free;
                let fw = if free { &mut self.body[bi] } else { &mut self.joint[ji] };
                fw.point(anchor, bar3(data.xanchor[ji], adj));
                fw.vector(axis, bar3(data.xaxis[ji], adj));
                let (first, n) = match j.kind {
                    JointKind::Free => (3, 6),
                    JointKind::Ball => (0, 3),
                    _ => (0, 1),
                };
                for k in first..n {
                    let dof = &data.cdof[j.dof_adr + k];
                    let (abar, lbar) = (bar3(dof.ang, adj), bar3(dof.lin, adj));
                    if j.kind == JointKind::Slide {
                        self.joint[ji].vector(axis, lbar);
                        continue;
                    }
                    // Free and ball: body axes of the final frame; hinge: its axis.
                    let (wv, on_body) = match j.kind {
                        JointKind::Hinge => (axis, false),
                        _ => (xmat.col(k - first), true),
                    };
                    let wbar = abar + d.cross(lbar);
                    let dbar = lbar.cross(wv);
                    rbar += dbar;
                    if on_body {
                        self.body[bi].vector(wv, wbar);
                    } else {
                        self.joint[ji].vector(wv, wbar);
                    }
                    // The anchor: on the frame before the joint (a ball or
                    // hinge turns about it, so either frame gives the same).
                    if free {
                        self.body[bi].point(anchor, -dbar);
                    } else {
                        self.joint[ji].point(anchor, -dbar);
                    }
                }
            }
            if root != 0 {
                self.body[root].point(r, rbar);
            }
        }
        for (gi, g) in model.geoms.iter().enumerate() {
            let s = data.geom_offset_scale[gi];
            if g.body == 0 && s.is_constant() {
                continue;
            }
            let pbar = bar3(data.geom_xpos[gi], adj);
            let bq = values.xquat[g.body];
            if g.body != 0 {
                let w = &mut self.body[g.body];
                w.point(values.geom_xpos[gi], pbar);
                w.matrix(&values.geom_xmat[gi], &barm(&data.geom_xmat[gi], adj));
            }
            adj[s.index()] += bq.rotate(v3(g.pos)).dot(pbar);
        }
        for (si, s) in model.sites.iter().enumerate() {
            if s.body != 0 {
                let w = &mut self.body[s.body];
                w.point(values.site_xpos[si], bar3(data.site_xpos[si], adj));
                w.quat(values.site_xquat[si], barq(data.site_xquat[si], adj));
            }
        }
        adj[data.mass_scale.index()] += scale_bar;

        // Leaves to root: each joint's dofs take the wrench of everything
        // after them, then the joint's own frame joins it.
        for bi in (1..model.bodies.len()).rev() {
            let body = &model.bodies[bi];
            let mut w = self.body[bi];
            for ji in (body.jnt_adr..body.jnt_adr + body.jnt_num).rev() {
                let j = &model.joints[ji];
                let qa = j.qpos_adr;
                let q = &data.q;
                match j.kind {
                    JointKind::Hinge => {
                        let (a, c) = (values.xaxis[ji], values.xanchor[ji]);
                        adj[q[qa].index()] += a.dot(w.t - c.cross(w.f));
                    }
                    JointKind::Slide => adj[q[qa].index()] += values.xaxis[ji].dot(w.f),
                    JointKind::Free => {
                        for (k, f) in w.f.to_array().into_iter().enumerate() {
                            adj[q[qa + k].index()] += f;
                        }
                        // Turning about the body origin: δq̂ = ½ (0, ω) ⊗ q̂.
                        let t = w.t - values.xpos[bi].cross(w.f);
                        quat_bar(
                            &q[qa + 3..qa + 7],
                            &values.q[qa + 3..qa + 7],
                            Quat::new(0.0, t.x, t.y, t.z),
                            false,
                            adj,
                        );
                    }
                    JointKind::Ball => {
                        // Turning about the anchor, ω in the frame after the joint.
                        let c = values.xanchor[ji];
                        let t = frame_after(model, values, bi, ji).inv_rotate(w.t - c.cross(w.f));
                        quat_bar(&q[qa..qa + 4], &values.q[qa..qa + 4], Quat::new(0.0, t.x, t.y, t.z), true, adj);
                    }
                }
                w.add(&self.joint[ji]);
            }
            if body.parent != 0 {
                self.body[body.parent].add(&w);
            }
        }
    }
}

/// ⟨a, b⟩ (Frobenius).
fn frobenius(a: &Mat3<f64>, b: &Mat3<f64>) -> f64 {
    (0..3).map(|i| (0..3).map(|j| a.m[i][j] * b.m[i][j]).sum::<f64>()).sum()
}

/// Adds the adjoint of a joint quaternion `q` (raw, normalised by
/// kinematics) whose rotation has the torque `t` = (0, τ): with
/// q̂ = q/|q|, ω = 2 vec(δq̂ ⊗ q̂*) in the world (`body_frame` false) or
/// ω = 2 vec(q̂* ⊗ δq̂) in the joint's child frame (true), so
/// ∂(τ·ω)/∂q̂ = 2 (0, τ) ⊗ q̂ or 2 q̂ ⊗ (0, τ), then through the
/// normalisation (I − q̂ q̂ᵀ)/|q|. A zero q (kinematics uses the identity)
/// has no adjoint.
fn quat_bar(q: &[Rev], value: &[f64], t: Quat<f64>, body_frame: bool, adj: &mut [f64]) {
    let raw = Quat::new(value[0], value[1], value[2], value[3]);
    let n = raw.norm();
    if !(n > 0.0) {
        return;
    }
    let qh = Quat::new(raw.w / n, raw.x / n, raw.y / n, raw.z / n);
    let g = if body_frame { qh * t } else { t * qh };
    let g = [g.w, g.x, g.y, g.z].map(|x| 2.0 * x);
    let qa = [qh.w, qh.x, qh.y, qh.z];
    let radial: f64 = g.iter().zip(&qa).map(|(a, b)| a * b).sum();
    for k in 0..4 {
        adj[q[k].index()] += (g[k] - qa[k] * radial) / n;
    }
}

/// Orientation of body `bi`'s frame just after its joint `upto` (values).
fn frame_after(model: &Model, values: &Data<f64>, bi: usize, upto: usize) -> Quat<f64> {
    let body = &model.bodies[bi];
    let mut x = values.xquat[body.parent] * q4(body.quat);
    for ji in body.jnt_adr..=upto {
        let j = &model.joints[ji];
        let q = |k: usize| values.q[j.qpos_adr + k];
        match j.kind {
            JointKind::Free => x = Quat::new(q(3), q(4), q(5), q(6)).normalize(),
            JointKind::Ball => x = x * Quat::new(q(0), q(1), q(2), q(3)).normalize(),
            JointKind::Hinge => x = x * Quat::from_axis_angle(v3(j.axis), q(0) - j.reference),
            JointKind::Slide => {}
        }
    }
    x
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::rev::tape;
    use super::*;
    use crate::rl::EnvRng;

    /// Every joint kind, several joints in one body, a site, geoms on the
    /// world and on bodies, non-trivial frames.
    pub(in crate::diff) const MODEL: &str = r#"
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" pos="0.1 0 -0.2"/>
    <body name="free" pos="0 0 1" quat="0.9 0.1 0.3 0.2">
      <freejoint/>
      <geom type="box" size=".1 .2 .3" pos=".05 .02 -.03" quat="0.8 0.2 0.1 0.3"/>
      <site name="s1" pos=".1 .2 .3" quat="0.7 0.1 0.5 0.2"/>
      <body name="ball" pos=".2 .1 0" quat="0.95 0 0.3 0.1">
        <joint type="ball" pos=".05 0 .02"/>
        <geom type="capsule" size=".05 .2" pos="0 .1 .1"/>
        <inertial pos=".02 .03 .01" quat="0.9 0.3 0.1 0.2" mass="1.3" diaginertia=".02 .03 .04"/>
        <body name="hinges" pos="0 .3 0">
          <joint type="hinge" axis="0 1 1" pos=".1 0 0"/>
          <joint type="slide" axis="1 0 .5" pos="0 .1 0"/>
          <joint type="hinge" axis="1 0 0" pos="0 0 .1" ref="0.3"/>
          <geom type="sphere" size=".07" pos=".1 .1 .1"/>
          <site name="s2" pos="0 .05 .1"/>
        </body>
      </body>
    </body>
    <body name="arm" pos="1 0 0">
      <joint type="slide" axis="0 0 1"/>
      <joint type="ball" pos="0 .1 0"/>
      <joint type="slide" axis="1 0.2 0" pos=".1 0 0"/>
      <geom type="box" size=".1 .1 .1" pos=".2 0 0"/>
    </body>
  </worldbody>
</mujoco>"#;

    /// Adjoints for this thread's tape, a random value added on the node
    /// of each output (constants skipped); the same values for one `round`.
    pub(in crate::diff) fn seeded_adjoints(outs: &[Rev], round: u64) -> Vec<f64> {
        let mut adj = vec![0.0; tape::len()];
        let mut rng = EnvRng::new(1000 + round, 0);
        for o in outs {
            let s = rng.uniform(-1.0, 1.0);
            if !o.is_constant() {
                adj[o.index()] += s;
            }
        }
        adj
    }

    /// The input adjoints of the recorded sweep and of the hand-written
    /// rules agree to 1e-12 of the largest.
    pub(in crate::diff) fn assert_equal_to_rounding(recorded: &[f64], by_hand: &[f64], round: u64) {
        let scale = recorded.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        for (i, (a, b)) in recorded.iter().zip(by_hand).enumerate() {
            assert!((a - b).abs() <= 1e-12 * scale, "round {round}, input {i}: recorded {a}, by hand {b}");
        }
    }

    /// The outputs (those that are leaves) in a fixed order.
    fn outputs(model: &Model, d: &Data<Rev>) -> Vec<Rev> {
        let mut o = vec![];
        let v3 = |o: &mut Vec<Rev>, x: Vec3<Rev>| o.extend([x.x, x.y, x.z]);
        let m3 = |o: &mut Vec<Rev>, x: &Mat3<Rev>| o.extend(x.m.iter().flatten().copied());
        for (bi, body) in model.bodies.iter().enumerate().skip(1) {
            v3(&mut o, d.xpos[bi]);
            let q = d.xquat[bi];
            o.extend([q.w, q.x, q.y, q.z]);
            m3(&mut o, &d.xmat[bi]);
            v3(&mut o, d.xipos[bi]);
            v3(&mut o, d.body_ref[bi]);
            o.push(d.cinert[bi].m);
            v3(&mut o, d.cinert[bi].h);
            m3(&mut o, &d.cinert[bi].i);
            for ji in body.jnt_adr..body.jnt_adr + body.jnt_num {
                v3(&mut o, d.xanchor[ji]);
                v3(&mut o, d.xaxis[ji]);
            }
        }
        for c in &d.cdof {
            v3(&mut o, c.ang);
            v3(&mut o, c.lin);
        }
        for gi in 0..model.geoms.len() {
            v3(&mut o, d.geom_xpos[gi]);
            m3(&mut o, &d.geom_xmat[gi]);
        }
        for si in 0..model.sites.len() {
            v3(&mut o, d.site_xpos[si]);
            let q = d.site_xquat[si];
            o.extend([q.w, q.x, q.y, q.z]);
        }
        o
    }

    /// The hand-written pull-back equals the recorded kinematics' sweep for
    /// random output adjoints, at random configurations (unnormalised
    /// quaternions in q included), with the mass and offset scales as inputs.
    #[test]
    fn pull_back_equals_the_recorded_sweep_on_every_joint_kind() {
        let model = Model::from_mjcf_str(MODEL).expect("test model");
        assert_eq!(model.joints.iter().filter(|j| j.kind == JointKind::Ball).count(), 2);
        let mut rng = EnvRng::new(7, 0);
        for round in 0..5 {
            let q0: Vec<f64> = (0..model.nq).map(|i| model.qpos0[i] + 0.7 * rng.uniform(-1.0, 1.0)).collect();
            let scales: Vec<f64> = (0..1 + model.geoms.len()).map(|_| 1.0 + 0.3 * rng.uniform(-1.0, 1.0)).collect();
            let mut results = vec![];
            for hand in [false, true] {
                tape::clear();
                let mut d = Data::<Rev>::new(&model);
                let ins: Vec<Rev> = q0.iter().chain(&scales).map(|&x| Rev::var(x)).collect();
                d.q.copy_from_slice(&ins[..model.nq]);
                d.mass_scale = ins[model.nq];
                d.geom_offset_scale.copy_from_slice(&ins[model.nq + 1..]);
                let mut ka = KinematicsAdjoint::new(&model);
                let mut values = Data::<f64>::new(&model);
                let leaves = if hand { kinematics_leaves(&model, &mut values, &mut d, &mut ka) } else { 0..0 };
                if !hand {
                    kinematics(&model, &mut d);
                }
                let mut adj = seeded_adjoints(&outputs(&model, &d), round);
                if hand {
                    tape::backward_range(&mut adj, leaves.end..tape::len());
                    ka.pull_back(&model, &values, &d, &mut adj);
                    tape::backward_range(&mut adj, 0..leaves.start);
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
