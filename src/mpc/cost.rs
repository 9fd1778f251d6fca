//! Costs of a control problem: running terms l(x, u) (a rate, per second)
//! and terminal terms l_T(x), each with its gradient and Gauss–Newton
//! Hessian.
//!
//! The objective of a plan of H intervals of `dt` seconds is
//!
//!   J = Σ_{k<H} dt · l(x_k, u_k) + l_T(x_H),
//!
//! with x = [q (nq), v (nv)] in the simulator's coordinates (quaternion
//! components of free and ball joints as they are; derivatives are taken
//! with respect to those components, like the interval Jacobians of
//! [`crate::diff::DiffRollout`]).
//!
//! Terms are residuals r (of x and u) under a penalty ρ: l = w ρ(r). The
//! gradient is w J_rᵀ ∇ρ and the Gauss–Newton Hessian w J_rᵀ ∇²ρ J_r (the
//! second derivatives of r are dropped, so the Hessian stays positive
//! semidefinite). Body points and their Jacobians ∂p/∂q come from forward
//! kinematics in dual numbers ([`Workspace`]).

use crate::diff::Dual;
use crate::dynamics::{Data, kinematics};
use crate::math::Vec3;
use crate::model::Model;
use burn::tensor::{DType, Device, Tensor, TensorData};
use std::sync::Arc;

/// Dual-number lanes of the kinematics Jacobian (⌈nq / 8⌉ passes per state).
const KIN_LANES: usize = 8;

/// Gradient and Gauss–Newton Hessian of a cost at one state and control
/// (row-major; Hessians symmetric). Terms add into it.
#[derive(Clone, Debug, PartialEq)]
pub struct CostDerivatives {
    /// State size.
    pub nx: usize,
    /// Control size.
    pub nc: usize,
    /// ∂l/∂x (nx).
    pub lx: Vec<f64>,
    /// ∂l/∂u (nc).
    pub lu: Vec<f64>,
    /// ∂²l/∂x² (nx × nx).
    pub lxx: Vec<f64>,
    /// ∂²l/∂u² (nc × nc).
    pub luu: Vec<f64>,
    /// ∂²l/∂u∂x (nc × nx).
    pub lux: Vec<f64>,
}

impl CostDerivatives {
    /// Zero derivatives for `nx` states and `nc` controls.
    pub fn new(nx: usize, nc: usize) -> Self {
        Self {
            nx,
            nc,
            lx: vec![0.0; nx],
            lu: vec![0.0; nc],
            lxx: vec![0.0; nx * nx],
            luu: vec![0.0; nc * nc],
            lux: vec![0.0; nc * nx],
        }
    }

    /// Sets everything to zero.
    pub fn clear(&mut self) {
        for v in [&mut self.lx, &mut self.lu, &mut self.lxx, &mut self.luu, &mut self.lux] {
            v.fill(0.0);
        }
    }

    /// Multiplies everything by `s`.
    pub fn scale(&mut self, s: f64) {
        for v in [&mut self.lx, &mut self.lu, &mut self.lxx, &mut self.luu, &mut self.lux] {
            v.iter_mut().for_each(|x| *x *= s);
        }
    }
}

/// A cost: running rate and terminal terms with derivatives (see the
/// [module docs](self)).
pub trait Cost: Send + Sync {
    /// The running cost rate l(x, u) (cost per second); when `d` is given,
    /// its gradient and Gauss–Newton Hessian are added into it.
    fn running(&self, ws: &mut Workspace, x: &[f64], u: &[f64], d: Option<&mut CostDerivatives>) -> f64;

    /// The terminal cost l_T(x); when `d` is given, its derivatives are
    /// added into it (the control parts stay untouched).
    fn terminal(&self, ws: &mut Workspace, x: &[f64], d: Option<&mut CostDerivatives>) -> f64;

    /// The objective J of a trajectory: states `xs` ((n + 1) × nx),
    /// controls `us` (n × nc), interval `dt` (s). With `derivs` (n + 1
    /// entries) each entry is overwritten with the derivatives of its
    /// term of J: dt·l at k < n (including the factor dt), l_T at n. Costs
    /// that evaluate faster over whole trajectories (e.g. [`BurnCost`])
    /// override it.
    fn trajectory(
        &self,
        ws: &mut Workspace,
        xs: &[f64],
        us: &[f64],
        dt: f64,
        derivs: Option<&mut [CostDerivatives]>,
    ) -> f64 {
        let nx = ws.nx();
        let n = xs.len() / nx - 1;
        let nc = us.len().checked_div(n).unwrap_or(0);
        let mut total = 0.0;
        match derivs {
            Some(ds) => {
                for (k, d) in ds.iter_mut().enumerate().take(n + 1) {
                    d.clear();
                    let x = &xs[k * nx..(k + 1) * nx];
                    if k < n {
                        total += dt * self.running(ws, x, &us[k * nc..(k + 1) * nc], Some(d));
                        d.scale(dt);
                    } else {
                        total += self.terminal(ws, x, Some(d));
                    }
                }
            }
            None => {
                for k in 0..n {
                    total += dt * self.running(ws, &xs[k * nx..(k + 1) * nx], &us[k * nc..(k + 1) * nc], None);
                }
                total += self.terminal(ws, &xs[n * nx..], None);
            }
        }
        total
    }
}

/// Scratch for evaluating costs on one thread: forward kinematics of the
/// model in `f64` and in dual numbers, each cached for the last q.
pub struct Workspace {
    model: Arc<Model>,
    data: Data<f64>,
    dual: Data<Dual<KIN_LANES>>,
    kin_q: Option<Vec<f64>>,
    jac_q: Option<Vec<f64>>,
    /// ∂xpos_b/∂q (nbody × 3 × nq).
    dpos: Vec<f64>,
    /// ∂xmat_b/∂q (nbody × 9 × nq).
    dmat: Vec<f64>,
}

impl Workspace {
    /// A workspace for `model`.
    pub fn new(model: Arc<Model>) -> Self {
        let (nb, nq) = (model.bodies.len(), model.nq);
        Self {
            data: Data::new(&model),
            dual: Data::new(&model),
            kin_q: None,
            jac_q: None,
            dpos: vec![0.0; nb * 3 * nq],
            dmat: vec![0.0; nb * 9 * nq],
            model,
        }
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// State size nq + nv.
    pub fn nx(&self) -> usize {
        self.model.nq + self.model.nv
    }

    fn kinematics_at(&mut self, q: &[f64]) {
        if self.kin_q.as_deref() != Some(q) {
            self.data.q.copy_from_slice(q);
            kinematics(&self.model, &mut self.data);
            self.kin_q = Some(q.to_vec());
        }
    }

    fn jacobians_at(&mut self, q: &[f64]) {
        if self.jac_q.as_deref() == Some(q) {
            return;
        }
        let (nb, nq) = (self.model.bodies.len(), self.model.nq);
        let mut start = 0;
        while start < nq {
            for (k, (d, &x)) in self.dual.q.iter_mut().zip(q).enumerate() {
                *d = if k >= start && k < start + KIN_LANES { Dual::var(x, k - start) } else { Dual::cst(x) };
            }
            kinematics(&self.model, &mut self.dual);
            let lanes = KIN_LANES.min(nq - start);
            for b in 0..nb {
                let p = self.dual.xpos[b].to_array();
                for (c, pc) in p.iter().enumerate() {
                    for s in 0..lanes {
                        self.dpos[(b * 3 + c) * nq + start + s] = pc.d[s];
                    }
                }
                let m = self.dual.xmat[b].m;
                for (c, mc) in m.iter().flatten().enumerate() {
                    for s in 0..lanes {
                        self.dmat[(b * 9 + c) * nq + start + s] = mc.d[s];
                    }
                }
            }
            start += KIN_LANES;
        }
        self.jac_q = Some(q.to_vec());
    }

    /// World position (m) of the point at `offset` (m, body frame) on body
    /// `body` at positions `q`.
    pub fn point(&mut self, q: &[f64], body: usize, offset: [f64; 3]) -> [f64; 3] {
        self.kinematics_at(q);
        (self.data.xpos[body] + self.data.xmat[body] * Vec3::from_array(offset)).to_array()
    }

    /// ∂p/∂q (3 × nq, row-major) of [`point`](Self::point), written to `out`.
    pub fn point_jacobian(&mut self, q: &[f64], body: usize, offset: [f64; 3], out: &mut [f64]) {
        self.jacobians_at(q);
        let nq = self.model.nq;
        for c in 0..3 {
            for j in 0..nq {
                let mut s = self.dpos[(body * 3 + c) * nq + j];
                for (i, o) in offset.iter().enumerate() {
                    s += self.dmat[(body * 9 + c * 3 + i) * nq + j] * o;
                }
                out[c * nq + j] = s;
            }
        }
    }

    /// World rotation matrix (rows) of body `body` at positions `q`.
    pub fn rotation(&mut self, q: &[f64], body: usize) -> [[f64; 3]; 3] {
        self.kinematics_at(q);
        self.data.xmat[body].m
    }

    /// ∂R/∂q (9 × nq, row-major; row 3i + j is ∂R_ij/∂q) of
    /// [`rotation`](Self::rotation), written to `out`.
    pub fn rotation_jacobian(&mut self, q: &[f64], body: usize, out: &mut [f64]) {
        self.jacobians_at(q);
        let nq = self.model.nq;
        out[..9 * nq].copy_from_slice(&self.dmat[body * 9 * nq..(body + 1) * 9 * nq]);
    }
}

/// How a residual r is penalised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Penalty {
    /// ½|r|².
    Quadratic,
    /// √(|r|² + ε²) − ε (units of r): quadratic within ε of zero, then
    /// linear — a distance whose gradient does not fade far from the goal
    /// (MuJoCo MPC's smooth-abs norm). Its curvature for Gauss–Newton is
    /// that of the quadratic majorizer touching it at r, I/√(|r|² + ε²)
    /// (iteratively reweighted least squares), not the exact Hessian,
    /// which vanishes along r far from zero: with it, a Newton step along
    /// r is unbounded, while the majorizer's step at most reaches r = 0.
    SmoothAbs {
        /// ε (units of r).
        epsilon: f64,
    },
}

impl Penalty {
    /// ρ(r); its gradient into `g` (len r) and Gauss–Newton curvature
    /// into `h` (r × r, positive definite; see the variants) when given.
    pub fn eval(&self, r: &[f64], grad: Option<(&mut [f64], &mut [f64])>) -> f64 {
        let n = r.len();
        let r2: f64 = r.iter().map(|x| x * x).sum();
        match *self {
            Penalty::Quadratic => {
                if let Some((g, h)) = grad {
                    g.copy_from_slice(r);
                    h.fill(0.0);
                    (0..n).for_each(|i| h[i * n + i] = 1.0);
                }
                0.5 * r2
            }
            Penalty::SmoothAbs { epsilon } => {
                let s = (r2 + epsilon * epsilon).sqrt();
                if let Some((g, h)) = grad {
                    h.fill(0.0);
                    for i in 0..n {
                        g[i] = r[i] / s;
                        h[i * n + i] = 1.0 / s;
                    }
                }
                s - epsilon
            }
        }
    }
}

/// Quadratic tracking of a reference state: running ½ (x − x_ref)ᵀ Q (x − x_ref),
/// terminal ½ (x − x_ref)ᵀ Q_T (x − x_ref).
#[derive(Clone, Debug, PartialEq)]
pub struct QuadraticTracking {
    /// Reference state x_ref (nx).
    pub reference: Vec<f64>,
    /// Q (nx × nx, symmetric positive semidefinite; cost per second per unit²).
    pub running: Vec<f64>,
    /// Q_T (nx × nx, symmetric positive semidefinite).
    pub terminal: Vec<f64>,
}

impl QuadraticTracking {
    /// Diagonal weights.
    pub fn diagonal(reference: Vec<f64>, running: &[f64], terminal: &[f64]) -> Self {
        let n = reference.len();
        assert!(running.len() == n && terminal.len() == n, "QuadraticTracking: weights must have nx entries");
        let diag = |w: &[f64]| {
            let mut m = vec![0.0; n * n];
            (0..n).for_each(|i| m[i * n + i] = w[i]);
            m
        };
        Self { running: diag(running), terminal: diag(terminal), reference }
    }

    fn quad(&self, w: &[f64], x: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        let n = self.reference.len();
        assert_eq!(x.len(), n, "QuadraticTracking: state size");
        let e: Vec<f64> = x.iter().zip(&self.reference).map(|(a, b)| a - b).collect();
        let mut value = 0.0;
        let mut d = d;
        if let Some(d) = d.as_mut() {
            for (a, b) in d.lxx.iter_mut().zip(w) {
                *a += b;
            }
        }
        let mut lx = vec![0.0; n];
        for i in 0..n {
            let we: f64 = (0..n).map(|j| w[i * n + j] * e[j]).sum();
            lx[i] = we;
            value += 0.5 * e[i] * we;
        }
        if let Some(d) = d {
            d.lx.iter_mut().zip(&lx).for_each(|(a, b)| *a += b);
        }
        value
    }
}

impl Cost for QuadraticTracking {
    fn running(&self, _: &mut Workspace, x: &[f64], _: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        self.quad(&self.running, x, d)
    }
    fn terminal(&self, _: &mut Workspace, x: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        self.quad(&self.terminal, x, d)
    }
}

/// Soft joint limits: a running rate w·Σ_j e_j² (per rad² and s) with
/// e_j how far coordinate q_j has entered the band of width `margin` ×
/// (hi − lo) inside either of its limits (zero in the middle of the
/// range). Hard limits are one-sided constraints: an arm pressed into one
/// gets no gradient toward leaving it, so a plan on the interval
/// Jacobians keeps the joint there; the band gives it one before the
/// limit is reached.
#[derive(Clone, Debug, PartialEq)]
pub struct JointLimitMargin {
    /// (index into q, lower limit, upper limit) per limited coordinate (rad or m).
    pub joints: Vec<(usize, f64, f64)>,
    /// Width of the band inside each limit, as a fraction of the range.
    pub margin: f64,
    /// Weight w (per rad² and s).
    pub weight: f64,
}

impl JointLimitMargin {
    /// Every limited hinge and slide joint of `model`.
    pub fn of_model(model: &Model, margin: f64, weight: f64) -> Self {
        let joints = model.joints.iter().filter_map(|j| j.range.map(|r| (j.qpos_adr, r[0], r[1]))).collect();
        Self { joints, margin, weight }
    }
}

impl Cost for JointLimitMargin {
    fn running(&self, _: &mut Workspace, x: &[f64], _: &[f64], mut d: Option<&mut CostDerivatives>) -> f64 {
        let mut value = 0.0;
        for &(i, lo, hi) in &self.joints {
            let m = self.margin * (hi - lo);
            let e = (x[i] - (hi - m)).max(0.0) - ((lo + m) - x[i]).max(0.0);
            if e == 0.0 {
                continue;
            }
            value += self.weight * e * e;
            if let Some(d) = d.as_deref_mut() {
                d.lx[i] += 2.0 * self.weight * e;
                d.lxx[i * d.nx + i] += 2.0 * self.weight;
            }
        }
        value
    }
    fn terminal(&self, _: &mut Workspace, _: &[f64], _: Option<&mut CostDerivatives>) -> f64 {
        0.0
    }
}

/// Control effort ½ (u − u_ref)ᵀ R (u − u_ref) per second (running only).
#[derive(Clone, Debug, PartialEq)]
pub struct ControlEffort {
    /// Reference control u_ref (nc).
    pub reference: Vec<f64>,
    /// R (nc × nc, symmetric positive semidefinite).
    pub weights: Vec<f64>,
}

impl ControlEffort {
    /// R = w·I around zero for `nc` controls.
    pub fn uniform(nc: usize, w: f64) -> Self {
        let mut weights = vec![0.0; nc * nc];
        (0..nc).for_each(|i| weights[i * nc + i] = w);
        Self { reference: vec![0.0; nc], weights }
    }
}

impl Cost for ControlEffort {
    fn running(&self, _: &mut Workspace, _: &[f64], u: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        let n = self.reference.len();
        assert_eq!(u.len(), n, "ControlEffort: control size");
        let e: Vec<f64> = u.iter().zip(&self.reference).map(|(a, b)| a - b).collect();
        let mut value = 0.0;
        let mut lu = vec![0.0; n];
        for i in 0..n {
            lu[i] = (0..n).map(|j| self.weights[i * n + j] * e[j]).sum();
            value += 0.5 * e[i] * lu[i];
        }
        if let Some(d) = d {
            d.lu.iter_mut().zip(&lu).for_each(|(a, b)| *a += b);
            d.luu.iter_mut().zip(&self.weights).for_each(|(a, b)| *a += b);
        }
        value
    }
    fn terminal(&self, _: &mut Workspace, _: &[f64], _: Option<&mut CostDerivatives>) -> f64 {
        0.0
    }
}

/// What a [`TargetDistance`] measures the distance to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// A fixed point (m, world frame).
    Point([f64; 3]),
    /// A point (m, body frame) on a body.
    Body {
        /// Body index.
        body: usize,
        /// Offset in the body frame (m).
        offset: [f64; 3],
    },
    /// The point `distance` (m) behind body `body`'s origin o, against the
    /// direction from o to the fixed point `goal` (m, world), in the
    /// distance's selected axes: t = o − distance · e / √(|e|² + ε²),
    /// e = goal − o, ε = `smoothing` (m). Where to stand to push o toward
    /// the goal; it follows the body (derivatives include ∂t/∂o), and ε
    /// keeps the direction smooth as o nears the goal (t → o there).
    Behind {
        /// Body index.
        body: usize,
        /// The goal o is pushed to (m, world).
        goal: [f64; 3],
        /// Distance behind o (m).
        distance: f64,
        /// ε (m, > 0).
        smoothing: f64,
    },
}

/// Distance of a body point to a target: r = the selected world axes of
/// p_body − p_target (m), l = w ρ(r).
#[derive(Clone, Debug, PartialEq)]
pub struct TargetDistance {
    /// Body index.
    pub body: usize,
    /// Point on the body (m, body frame).
    pub offset: [f64; 3],
    /// The target.
    pub target: Target,
    /// Which world axes count (e.g. `[true, true, false]`: horizontal distance).
    pub axes: [bool; 3],
    /// Running weight (cost per second per unit of ρ).
    pub running_weight: f64,
    /// Terminal weight.
    pub terminal_weight: f64,
    /// The penalty ρ.
    pub penalty: Penalty,
}

impl TargetDistance {
    /// The residual (selected axes of p − target) and, with `jac`, ∂r/∂q.
    fn residual(&self, ws: &mut Workspace, q: &[f64], jac: Option<&mut Vec<f64>>) -> Vec<f64> {
        let p = ws.point(q, self.body, self.offset);
        let axes: Vec<usize> = (0..3).filter(|&i| self.axes[i]).collect();
        // Behind: e = goal − o on the axes, s = √(|e|² + ε²), t = o − d e / s.
        let (mut e, mut s) = ([0.0; 3], 1.0);
        let t = match self.target {
            Target::Point(t) => t,
            Target::Body { body, offset } => ws.point(q, body, offset),
            Target::Behind { body, goal, distance, smoothing } => {
                let o = ws.point(q, body, [0.0; 3]);
                axes.iter().for_each(|&i| e[i] = goal[i] - o[i]);
                s = (e.iter().map(|v| v * v).sum::<f64>() + smoothing * smoothing).sqrt();
                [0, 1, 2].map(|i| o[i] - distance * e[i] / s)
            }
        };
        if let Some(jac) = jac {
            let nq = q.len();
            let mut jp = vec![0.0; 3 * nq];
            ws.point_jacobian(q, self.body, self.offset, &mut jp);
            match self.target {
                Target::Point(_) => {}
                Target::Body { body, offset } => {
                    let mut jt = vec![0.0; 3 * nq];
                    ws.point_jacobian(q, body, offset, &mut jt);
                    jp.iter_mut().zip(&jt).for_each(|(a, b)| *a -= b);
                }
                Target::Behind { body, distance, .. } => {
                    // ∂t/∂o = I + (d / s)(I − e eᵀ / s²) on the axes (∂e/∂o = −I).
                    let mut jo = vec![0.0; 3 * nq];
                    ws.point_jacobian(q, body, [0.0; 3], &mut jo);
                    for &i in &axes {
                        for j in 0..nq {
                            let mut dt = jo[i * nq + j];
                            for k in 0..3 {
                                let m = if i == k { 1.0 } else { 0.0 } - e[i] * e[k] / (s * s);
                                dt += distance / s * m * jo[k * nq + j];
                            }
                            jp[i * nq + j] -= dt;
                        }
                    }
                }
            }
            jac.clear();
            for &i in &axes {
                jac.extend_from_slice(&jp[i * nq..(i + 1) * nq]);
            }
        }
        axes.iter().map(|&i| p[i] - t[i]).collect()
    }

    /// Current distance |r| (m) at state `x`.
    pub fn distance(&self, ws: &mut Workspace, x: &[f64]) -> f64 {
        let nq = ws.model().nq;
        self.residual(ws, &x[..nq], None).iter().map(|r| r * r).sum::<f64>().sqrt()
    }

    fn term(&self, w: f64, ws: &mut Workspace, x: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        residual_term(w, &self.penalty, ws, x, d, |ws, q, jac| self.residual(ws, q, jac))
    }
}

/// `w · penalty(r(q))` of a residual `r` of the positions with its
/// Gauss–Newton derivatives (gradient Jᵀg, Hessian JᵀHJ of the penalty's
/// g, H; J = ∂r/∂q row-major, as `residual` writes it) added to `d`.
fn residual_term<R: AsRef<[f64]>>(
    w: f64,
    penalty: &Penalty,
    ws: &mut Workspace,
    x: &[f64],
    d: Option<&mut CostDerivatives>,
    mut residual: impl FnMut(&mut Workspace, &[f64], Option<&mut Vec<f64>>) -> R,
) -> f64 {
    if w == 0.0 {
        return 0.0;
    }
    let nq = ws.model().nq;
    let q = &x[..nq];
    let Some(d) = d else {
        return w * penalty.eval(residual(ws, q, None).as_ref(), None);
    };
    let mut jac = vec![];
    let r = residual(ws, q, Some(&mut jac));
    let r = r.as_ref();
    let m = r.len();
    let (mut g, mut h) = (vec![0.0; m], vec![0.0; m * m]);
    let value = w * penalty.eval(r, Some((&mut g, &mut h)));
    let nx = d.nx;
    for a in 0..nq {
        d.lx[a] += w * (0..m).map(|i| jac[i * nq + a] * g[i]).sum::<f64>();
        for b in 0..nq {
            let mut s = 0.0;
            for i in 0..m {
                for j in 0..m {
                    s += jac[i * nq + a] * h[i * m + j] * jac[j * nq + b];
                }
            }
            d.lxx[a * nx + b] += w * s;
        }
    }
    value
}

impl Cost for TargetDistance {
    fn running(&self, ws: &mut Workspace, x: &[f64], _: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        self.term(self.running_weight, ws, x, d)
    }
    fn terminal(&self, ws: &mut Workspace, x: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        self.term(self.terminal_weight, ws, x, d)
    }
}

/// Geodesic orientation error of a body against a goal orientation:
/// r = log(R_gᵀ R) (the rotation vector taking the goal frame to the
/// body's, rad), so |r| = θ ∈ [0, π] is the angle of the rotation between
/// them; l = w ρ(r). Its Jacobian is exact through the log map (the
/// Gauss–Newton Hessian drops second derivatives, as for every term).
/// Near θ = π the log map's axis is ill-conditioned: goals are meant to be
/// well inside that.
#[derive(Clone, Debug, PartialEq)]
pub struct OrientationError {
    /// Body index.
    pub body: usize,
    /// Goal orientation R_g (world frame, rows).
    pub goal: [[f64; 3]; 3],
    /// Running weight (cost per second per unit of ρ).
    pub running_weight: f64,
    /// Terminal weight.
    pub terminal_weight: f64,
    /// The penalty ρ (on the rotation vector, rad).
    pub penalty: Penalty,
}

impl OrientationError {
    /// R_g of a rotation by `angle` (rad) about world z.
    pub fn yaw(angle: f64) -> [[f64; 3]; 3] {
        let (s, c) = angle.sin_cos();
        [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    }

    /// The rotation vector r (rad) and, with `jac`, ∂r/∂q (3 × nq).
    fn residual(&self, ws: &mut Workspace, q: &[f64], jac: Option<&mut Vec<f64>>) -> [f64; 3] {
        let r = ws.rotation(q, self.body);
        let g = &self.goal;
        // E = R_gᵀ R.
        let e = |i: usize, j: usize, r: &[[f64; 3]; 3]| (0..3).map(|k| g[k][i] * r[k][j]).sum::<f64>();
        let em: [[f64; 3]; 3] = std::array::from_fn(|i| std::array::from_fn(|j| e(i, j, &r)));
        // w = vee(E − Eᵀ) = 2 sin θ n; cos θ = (tr E − 1) / 2.
        let w = [em[2][1] - em[1][2], em[0][2] - em[2][0], em[1][0] - em[0][1]];
        let sin = 0.5 * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
        let cos = 0.5 * (em[0][0] + em[1][1] + em[2][2] - 1.0);
        let theta = sin.atan2(cos);
        // r = f(θ) w, f = θ / (2 sin θ) → ½ as θ → 0.
        let f = if theta < 1e-6 { 0.5 + theta * theta / 12.0 } else { theta / (2.0 * sin) };
        if let Some(jac) = jac {
            let nq = q.len();
            let mut dr = vec![0.0; 9 * nq];
            ws.rotation_jacobian(q, self.body, &mut dr);
            // ∂E_ij = Σ_k g_ki ∂R_kj.
            let de = |i: usize, j: usize, a: usize| (0..3).map(|k| g[k][i] * dr[(3 * k + j) * nq + a]).sum::<f64>();
            // ∂r = f ∂w + w f'(θ) ∂θ with ∂θ = −∂tr E / (2 sin θ): the second
            // term is −w h(θ) ∂tr E, h = (sin θ − θ cos θ) / (4 sin³ θ) → 1/12 + θ²/30.
            let h = if theta < 1e-3 {
                1.0 / 12.0 + theta * theta / 30.0
            } else {
                (sin - theta * cos) / (4.0 * sin * sin * sin)
            };
            jac.clear();
            jac.resize(3 * nq, 0.0);
            for a in 0..nq {
                let dw = [de(2, 1, a) - de(1, 2, a), de(0, 2, a) - de(2, 0, a), de(1, 0, a) - de(0, 1, a)];
                let dtr = de(0, 0, a) + de(1, 1, a) + de(2, 2, a);
                for i in 0..3 {
                    jac[i * nq + a] = f * dw[i] - w[i] * h * dtr;
                }
            }
        }
        w.map(|wi| f * wi)
    }

    /// The angle θ (rad) between the body's orientation and the goal at state `x`.
    pub fn angle(&self, ws: &mut Workspace, x: &[f64]) -> f64 {
        let nq = ws.model().nq;
        let r = self.residual(ws, &x[..nq], None);
        (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt()
    }

    fn term(&self, w: f64, ws: &mut Workspace, x: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        residual_term(w, &self.penalty, ws, x, d, |ws, q, jac| self.residual(ws, q, jac))
    }
}

impl Cost for OrientationError {
    fn running(&self, ws: &mut Workspace, x: &[f64], _: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        self.term(self.running_weight, ws, x, d)
    }
    fn terminal(&self, ws: &mut Workspace, x: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        self.term(self.terminal_weight, ws, x, d)
    }
}

/// The sum of several costs.
#[derive(Clone, Default)]
pub struct CostSum {
    /// The terms.
    pub terms: Vec<Arc<dyn Cost>>,
}

impl CostSum {
    /// An empty sum.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a term.
    pub fn with(mut self, term: impl Cost + 'static) -> Self {
        self.terms.push(Arc::new(term));
        self
    }
}

impl Cost for CostSum {
    fn running(&self, ws: &mut Workspace, x: &[f64], u: &[f64], mut d: Option<&mut CostDerivatives>) -> f64 {
        self.terms.iter().map(|t| t.running(ws, x, u, d.as_deref_mut())).sum()
    }
    fn terminal(&self, ws: &mut Workspace, x: &[f64], mut d: Option<&mut CostDerivatives>) -> f64 {
        self.terms.iter().map(|t| t.terminal(ws, x, d.as_deref_mut())).sum()
    }
}

/// A residual written in burn tensor ops: rows are independent samples,
/// states (n, nx) and controls (n, nc) in, residuals (n, nr) out.
pub type RunningResidual = dyn Fn(Tensor<2>, Tensor<2>) -> Tensor<2> + Send + Sync;
/// A terminal residual in burn tensor ops: states (n, nx) in, residuals (n, nr) out.
pub type TerminalResidual = dyn Fn(Tensor<2>) -> Tensor<2> + Send + Sync;

/// A custom cost from residuals written in burn tensor ops, differentiated
/// by burn's autodiff: running rate ½ w |r(x, u)|², terminal ½ w_T |r_T(x)|²,
/// Gauss–Newton Hessians w J_rᵀ J_r.
///
/// The residual functions must treat rows independently (a batch of
/// samples). The Jacobian J_r of all steps comes from one backward pass:
/// each step's input is repeated nr times, and the sum of the diagonal
/// entries r_i of copy i is differentiated, so copy i's gradient is row i
/// of J_r. Evaluated on `Device::flex().autodiff()` in `f64`.
#[derive(Clone)]
pub struct BurnCost {
    /// Running residual r(x, u).
    pub running: Arc<RunningResidual>,
    /// Running residual size nr.
    pub running_size: usize,
    /// Running weight w (cost per second).
    pub running_weight: f64,
    /// Terminal residual r_T(x) (`None`: no terminal term).
    pub terminal: Option<Arc<TerminalResidual>>,
    /// Terminal residual size.
    pub terminal_size: usize,
    /// Terminal weight w_T.
    pub terminal_weight: f64,
}

fn burn_device() -> Device {
    Device::flex().autodiff()
}

fn tensor2(v: Vec<f64>, rows: usize, cols: usize) -> Tensor<2> {
    let device = burn_device();
    Tensor::<2>::from_data(TensorData::new(v, [rows, cols]), (&device, DType::F64))
}

fn values(t: Tensor<2>) -> Vec<f64> {
    t.to_data().iter::<f64>().collect()
}

/// A [`BurnCost`]'s residual Jacobians with respect to the states and the controls.
type ResidualJacobians = (Vec<f64>, Vec<f64>);

impl BurnCost {
    /// Residuals of `n` samples ((n, nr) row-major) and, when `jac`, their
    /// Jacobians with respect to the inputs: (n × nr × nx) and (n × nr × nc).
    fn residuals(
        &self,
        terminal: bool,
        xs: &[f64],
        us: &[f64],
        n: usize,
        jac: bool,
    ) -> (Vec<f64>, Option<ResidualJacobians>) {
        let nr = if terminal { self.terminal_size } else { self.running_size };
        let nx = xs.len() / n.max(1);
        let nc = if terminal || n == 0 { 0 } else { us.len() / n };
        let eval = |x: Tensor<2>, u: Option<Tensor<2>>| -> Tensor<2> {
            match (&self.terminal, u) {
                (Some(f), None) if terminal => f(x),
                (_, Some(u)) => (self.running)(x, u),
                _ => unreachable!("running residuals take controls"),
            }
        };
        let controls = |v: Vec<f64>, rows: usize| (!terminal).then(|| tensor2(v, rows, nc));
        if !jac {
            let r = eval(tensor2(xs.to_vec(), n, nx), controls(us.to_vec(), n));
            return (values(r), None);
        }
        // Copy i of step k: row k·nr + i.
        let repeat = |v: &[f64], w: usize| -> Vec<f64> {
            let mut out = Vec::with_capacity(n * nr * w);
            for k in 0..n {
                for _ in 0..nr {
                    out.extend_from_slice(&v[k * w..(k + 1) * w]);
                }
            }
            out
        };
        let x = tensor2(repeat(xs, nx), n * nr, nx).require_grad();
        let u = controls(repeat(us, nc), n * nr).map(|u| u.require_grad());
        let r = eval(x.clone(), u.clone());
        let mut mask = vec![0.0; n * nr * nr];
        for k in 0..n {
            for i in 0..nr {
                mask[(k * nr + i) * nr + i] = 1.0;
            }
        }
        let rv = values(r.clone());
        let grads = (r * tensor2(mask, n * nr, nr)).sum().backward();
        let jx = x.grad(&grads).map_or(vec![0.0; n * nr * nx], values);
        let ju = match u {
            Some(u) => u.grad(&grads).map_or(vec![0.0; n * nr * nc], values),
            None => vec![],
        };
        // The residual of step k is the one of its first copy.
        let r = (0..n).flat_map(|k| rv[k * nr * nr..k * nr * nr + nr].to_vec()).collect();
        (r, Some((jx, ju)))
    }

    /// Adds w·(J_rᵀ r, J_rᵀ J_r) of one step to `d`; returns ½ w |r|².
    fn accumulate(w: f64, r: &[f64], jx: &[f64], ju: &[f64], d: &mut CostDerivatives) -> f64 {
        let (nx, nc, nr) = (d.nx, d.nc, r.len());
        let ju = if ju.is_empty() { None } else { Some(ju) };
        for i in 0..nr {
            let rx = &jx[i * nx..(i + 1) * nx];
            for a in 0..nx {
                d.lx[a] += w * rx[a] * r[i];
                for b in 0..nx {
                    d.lxx[a * nx + b] += w * rx[a] * rx[b];
                }
            }
            if let Some(ju) = ju {
                let ru = &ju[i * nc..(i + 1) * nc];
                for a in 0..nc {
                    d.lu[a] += w * ru[a] * r[i];
                    for b in 0..nc {
                        d.luu[a * nc + b] += w * ru[a] * ru[b];
                    }
                    for b in 0..nx {
                        d.lux[a * nx + b] += w * ru[a] * rx[b];
                    }
                }
            }
        }
        0.5 * w * r.iter().map(|x| x * x).sum::<f64>()
    }
}

impl Cost for BurnCost {
    fn running(&self, ws: &mut Workspace, x: &[f64], u: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        let _ = ws;
        let (r, jac) = self.residuals(false, x, u, 1, d.is_some());
        match (d, jac) {
            (Some(d), Some((jx, ju))) => Self::accumulate(self.running_weight, &r, &jx, &ju, d),
            _ => 0.5 * self.running_weight * r.iter().map(|x| x * x).sum::<f64>(),
        }
    }

    fn terminal(&self, ws: &mut Workspace, x: &[f64], d: Option<&mut CostDerivatives>) -> f64 {
        let _ = ws;
        if self.terminal.is_none() {
            return 0.0;
        }
        let (r, jac) = self.residuals(true, x, &[], 1, d.is_some());
        match (d, jac) {
            (Some(d), Some((jx, _))) => Self::accumulate(self.terminal_weight, &r, &jx, &[], d),
            _ => 0.5 * self.terminal_weight * r.iter().map(|x| x * x).sum::<f64>(),
        }
    }

    fn trajectory(
        &self,
        ws: &mut Workspace,
        xs: &[f64],
        us: &[f64],
        dt: f64,
        derivs: Option<&mut [CostDerivatives]>,
    ) -> f64 {
        let nx = ws.nx();
        let n = xs.len() / nx - 1;
        let nc = us.len().checked_div(n).unwrap_or(0);
        let (nr, nt) = (self.running_size, self.terminal_size);
        let want = derivs.is_some();
        let (r, jr) = self.residuals(false, &xs[..n * nx], us, n, want);
        let (rt, jt) = if self.terminal.is_some() {
            let (a, b) = self.residuals(true, &xs[n * nx..], &[], 1, want);
            (a, b)
        } else {
            (vec![], None)
        };
        let w = self.running_weight * dt;
        let Some(ds) = derivs else {
            let run: f64 = 0.5 * w * r.iter().map(|x| x * x).sum::<f64>();
            return run + 0.5 * self.terminal_weight * rt.iter().map(|x| x * x).sum::<f64>();
        };
        let (jx, ju) = jr.expect("Jacobians requested");
        let mut total = 0.0;
        for (k, d) in ds.iter_mut().enumerate().take(n) {
            d.clear();
            let rows = k * nr..(k + 1) * nr;
            let ju_k = if nc == 0 { &[][..] } else { &ju[rows.start * nc..rows.end * nc] };
            total += Self::accumulate(w, &r[rows.clone()], &jx[rows.start * nx..rows.end * nx], ju_k, d);
        }
        let d = &mut ds[n];
        d.clear();
        if let Some((jxt, _)) = jt {
            total += Self::accumulate(self.terminal_weight, &rt[..nt], &jxt, &[], d);
        }
        total
    }
}

/// Objective values of several trajectories at once (for samplers): the
/// same as [`Cost::trajectory`] without derivatives.
pub(crate) fn objective(cost: &dyn Cost, ws: &mut Workspace, xs: &[f64], us: &[f64], dt: f64) -> f64 {
    let v = cost.trajectory(ws, xs, us, dt, None);
    if v.is_nan() { f64::INFINITY } else { v }
}
