//! GPU ICF kernels (WGSL, f32) against the CPU f32 path, stage by stage
//! from identical states: the problem build (A, r, k, v0, the scaling, the
//! contact Jacobians and lagged contact terms, gain laws, joint limits),
//! the cost / gradient / Hessian, and the Newton solution v1 with its
//! residual, with both solver stages (serial: one thread per world;
//! cooperative: a workgroup per world). 67 worlds per model with different random states, steps,
//! controls and material multipliers; contacts computed by the CPU
//! (`cenic::collision::collide` on `Data<f32>`, or hand-made for the servo
//! scene) and uploaded with `GpuContact::from_contact`. Every GPU output is
//! pre-filled with NaN, so a value a kernel fails to write fails the test.
//!
//! Tolerances (relative to the largest CPU value of the quantity in the
//! world, as in `gpu_parity_dynamics.rs`):
//! - Both sides evaluate the same formulas in f32 in the same order, on
//!   inputs that already differ: the GPU's mass matrix, bias forces and
//!   motion subspaces match the CPU's to ≤ 6e-7 of their scale (measured
//!   in `gpu_parity_dynamics.rs`). A, r, k, J and the lagged terms are one
//!   or two operations away from those, so `TOL_BUILD` = 2e-5 leaves a
//!   margin of ~15× over the measured differences (printed) while a wrong
//!   formula (a dropped damping term h·D, a sign of a Jacobian column, a
//!   missing material multiplier) is off by ≥ 1e-2.
//! - The cost, gradient and Hessian at a common v sum up to a few hundred
//!   such terms, some cancelling (gradient ≈ 0 near the solution is judged
//!   on the scale of A v, the contact impulses are stiff): `TOL_COST` = 1e-4.
//! - The solutions: both solvers stop at ‖D∇ℓ‖ ≤ 1e-6·max(1, ‖D r‖) (the
//!   f32 floor), so each v1 is within the tolerance of its own problem's
//!   minimiser; the problems differ by the build differences above,
//!   amplified by the conditioning of H (stiff contacts: k h² against M).
//!   We require the GPU solution to satisfy the *CPU* problem's optimality
//!   condition: ‖D∇ℓ_CPU(v1_GPU)‖ ≤ 1e-5·max(1, ‖D r‖) + 1e-4·‖D |H| |v1|‖
//!   (10× the solver tolerance, plus 100× the measured ~1e-6 relative
//!   difference of the problems' terms times the size of the gradient's
//!   terms; stiff joint limits make the second part dominate). A wrong line
//!   search or friction law leaves residuals of the order of the terms
//!   themselves. And v1 must agree to `TOL_V1` = 2e-3 of max(|v1|, 1e-2 m/s).
//!
//! Runs on any wgpu adapter, including Mesa's lavapipe; without one each
//! test prints "SKIPPED: no GPU adapter" unless `CENIC_REQUIRE_GPU` is set.

#[macro_use]
mod common;

use common::gpu::context;

use cenic::batch::WorldParams;
use cenic::collision::{Contact, Contacts, collide};
use cenic::dynamics::{self, Data};
use cenic::gpu::batch::HostCollision;
use cenic::gpu::context::run_pass;
use cenic::gpu::icf::{IcfBuffers, IcfKernels, IcfVec, SolverVariant};
use cenic::gpu::{BufferSource, Field, GpuDynamics, Readback, Stage};
use cenic::icf::{Actuation, FactorKind, IcfBuilder, IcfProblem, IcfSolver, MaterialScale, SolverParams, cost};
use cenic::math::Vec3;
use cenic::model::{
    Actuator, ActuatorKind, BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Model, ModelBuilder,
    SoftMaterial, WORLD,
};
use cenic::scenes;
use common::Rng;
use std::sync::Arc;

const TOL_BUILD: f32 = 2e-5;
const TOL_COST: f32 = 1e-4;
const TOL_RESIDUAL: f64 = 1e-5;
const TOL_RESIDUAL_H: f64 = 1e-4;
const TOL_V1: f32 = 2e-3;
const NWORLD: usize = 67;

/// A free box on the ground, a two-joint servo arm with limits (damping,
/// armature, an effort-limited servo, a control range), and a slider driven
/// by a motor with a gear, force and control ranges.
fn servo_scene() -> Model {
    let mut b = ModelBuilder::new("servo_scene");
    b.add_geom(GeomSpec::new("ground", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD));
    let bx = b.add_body(BodySpec::new("box", WORLD, [0.0, 0.0, 0.05]));
    b.add_joint(JointSpec::new("box_free", JointKind::Free, bx));
    b.add_geom(GeomSpec { mass: Some(0.5), ..GeomSpec::new("box_geom", GeomKind::Box, [0.05, 0.05, 0.05], bx) });
    let inertial = |m: f64| {
        Some(Inertial { mass: m, pos: [0.0, 0.0, -0.1], quat: [1.0, 0.0, 0.0, 0.0], diag: [0.01, 0.01, 0.002] })
    };
    let l1 = b.add_body(BodySpec { inertial: inertial(1.0), ..BodySpec::new("l1", WORLD, [0.3, 0.0, 0.4]) });
    b.add_joint(JointSpec {
        axis: [0.0, 1.0, 0.0],
        range: Some([-0.5, 0.5]),
        damping: 0.3,
        armature: 0.01,
        ..JointSpec::new("j1", JointKind::Hinge, l1)
    });
    let l2 = b.add_body(BodySpec { inertial: inertial(0.5), ..BodySpec::new("l2", l1, [0.0, 0.0, -0.2]) });
    b.add_joint(JointSpec {
        axis: [1.0, 0.0, 0.0],
        range: Some([-1.0, 1.0]),
        ..JointSpec::new("j2", JointKind::Hinge, l2)
    });
    b.add_geom(GeomSpec::new("tip", GeomKind::Sphere, [0.03, 0.0, 0.0], l2));
    let sl = b.add_body(BodySpec { inertial: inertial(0.8), ..BodySpec::new("slider", WORLD, [-0.3, 0.0, 0.2]) });
    b.add_joint(JointSpec {
        axis: [1.0, 0.0, 0.0],
        range: Some([-0.2, 0.2]),
        damping: 1.0,
        ..JointSpec::new("s", JointKind::Slide, sl)
    });
    b.add_actuator(Actuator {
        name: "a1".into(),
        joint: 1,
        kind: ActuatorKind::Position { kp: 200.0, kd: 5.0, effort_limit: 3.0 },
        ctrl_range: None,
    });
    b.add_actuator(Actuator {
        name: "a2".into(),
        joint: 2,
        kind: ActuatorKind::Position { kp: 50.0, kd: 1.0, effort_limit: f64::INFINITY },
        ctrl_range: Some([-0.8, 0.8]),
    });
    b.add_actuator(Actuator {
        name: "m".into(),
        joint: 3,
        kind: ActuatorKind::Motor { gear: 2.0, force_range: Some([-4.0, 4.0]) },
        ctrl_range: Some([-3.0, 3.0]),
    });
    b.build().unwrap()
}

/// One world's inputs.
struct WorldCase {
    q: Vec<f32>,
    v: Vec<f32>,
    ctrl: Vec<f32>,
    vref: Vec<f32>,
    h: f32,
    params: WorldParams,
    contacts: Vec<Contact<f32>>,
    found: usize,
}

fn data_at(model: &Model, q: &[f32], v: &[f32], mass_scale: f32) -> Data<f32> {
    let mut d = Data::<f32>::new(model);
    d.q.copy_from_slice(q);
    d.v.copy_from_slice(v);
    d.mass_scale = mass_scale;
    dynamics::kinematics(model, &mut d);
    dynamics::velocities(model, &mut d);
    dynamics::mass_matrix(model, &mut d);
    dynamics::bias_forces(model, &mut d);
    dynamics::passive_forces(model, &mut d);
    d
}

fn random_params(rng: &mut Rng) -> WorldParams {
    WorldParams {
        mass_scale: rng.range(0.7, 1.4),
        materials: MaterialScale {
            stiffness: rng.range(0.5, 2.0),
            dissipation: rng.range(0.5, 2.0),
            mu_static: rng.range(0.8, 1.2),
            mu_dynamic: rng.range(0.6, 1.0),
        },
    }
}

/// Servo scene: box near the ground with hand-made contacts of every kind
/// (penetrating, touching, inside the margin, between two moving bodies),
/// the arm near or beyond its limits, controls inside and outside the ranges.
fn servo_cases(model: &Model, rng: &mut Rng) -> Vec<WorldCase> {
    (0..NWORLD)
        .map(|w| {
            let mut q: Vec<f32> = model.qpos0.iter().map(|&x| x as f32).collect();
            q[0] = rng.range(-0.1, 0.1) as f32;
            q[1] = rng.range(-0.1, 0.1) as f32;
            q[2] = 0.049;
            q[7] = rng.range(-0.55, 0.55) as f32;
            q[8] = rng.range(-1.05, 1.05) as f32;
            q[9] = rng.range(-0.25, 0.25) as f32;
            let mut v: Vec<f32> = (0..model.nv).map(|_| (0.3 * rng.normal()) as f32).collect();
            if w % 3 == 0 {
                // Slip far below the stiction tolerance: the sticking regime.
                for x in &mut v[0..6] {
                    *x = (1e-6 * rng.normal()) as f32;
                }
            }
            let params = random_params(rng);
            let d = data_at(model, &q, &v, params.mass_scale as f32);
            // Under MuJoCo's semantics the pairs' own materials: the GPU reads
            // their soft constants from the model's candidate pairs.
            let soft = model.options.semantics == cenic::model::Semantics::MuJoCo;
            let pair = |a: usize, b: usize, m| if soft { cenic::collision::pair_material(model, a, b) } else { m };
            let mat = pair(0, 1, common::icf::material(1e5, 10.0, 0.6, 0.3));
            let mut contacts = vec![];
            let phis = [-1e-3, -2e-4, 0.0, 4e-4];
            for (i, (dx, dy)) in [(-1.0f32, -1.0f32), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)].into_iter().enumerate() {
                contacts.push(Contact {
                    geom: [0, 1],
                    body: [0, 1],
                    pos: d.xpos[1] + Vec3::new(0.05 * dx, 0.05 * dy, -0.05),
                    normal: Vec3::new(0.0, 0.0, 1.0),
                    dist: phis[i],
                    feature: [0, i as u32],
                    material: mat,
                });
            }
            contacts.push(Contact {
                geom: [1, 2],
                body: [1, 3],
                pos: d.xpos[3] + Vec3::new(0.0, 0.0, -0.1),
                normal: Vec3::new(-0.9, 0.1, 0.3).normalize(),
                dist: -5e-4,
                feature: [0, 0],
                material: pair(1, 2, common::icf::material(3e4, 0.5, 0.8, 0.5)),
            });
            let found = contacts.len();
            WorldCase {
                q,
                v,
                ctrl: vec![rng.range(-0.7, 0.7) as f32, rng.range(-1.2, 1.2) as f32, rng.range(-4.0, 4.0) as f32],
                vref: vec![rng.normal() as f32, rng.normal() as f32, 0.0],
                h: rng.range(2e-4, 1e-2) as f32,
                params,
                contacts,
                found,
            }
        })
        .collect()
}

/// A model with free bodies: states from `snapshots` (a CPU f32 run)
/// with small velocity perturbations; contacts from the CPU collision.
fn collision_cases(model: &Model, snapshots: &[(Vec<f32>, Vec<f32>)], ncon: usize, rng: &mut Rng) -> Vec<WorldCase> {
    (0..NWORLD)
        .map(|w| {
            let (q, v0) = &snapshots[w % snapshots.len()];
            let v: Vec<f32> = v0.iter().map(|x| x + (0.05 * rng.normal()) as f32).collect();
            let params = random_params(rng);
            let d = data_at(model, q, &v, params.mass_scale as f32);
            let mut c = Contacts::with_capacity(model, ncon);
            c.skin = 1e-3;
            collide(model, &d, &mut c);
            WorldCase {
                q: q.clone(),
                v,
                ctrl: vec![],
                vref: vec![],
                h: rng.range(1e-3, 2e-2) as f32,
                params,
                found: c.list.len() + c.overflow,
                contacts: c.list,
            }
        })
        .collect()
}

/// Snapshots of a CPU f32 fixed-step run from `key` (or qpos0), every `every` steps.
fn snapshots(model: &Arc<Model>, key: Option<&str>, dt: f64, steps: usize, every: usize) -> Vec<(Vec<f32>, Vec<f32>)> {
    let mut w = cenic::integrator::World::<f32>::new(model.clone(), cenic::integrator::Mode::Fixed { dt });
    if let Some(k) = key {
        w.sim.reset_to_keyframe(k).unwrap();
    }
    let mut out = vec![];
    for s in 0..steps {
        w.advance(dt).unwrap();
        if s % every == every - 1 {
            out.push((w.sim.data.q.clone(), w.sim.data.v.clone()));
        }
    }
    out
}

/// max |a − b| / max(|b|, floor) over a slice.
fn rel(a: &[f32], b: &[f32], floor: f32) -> f32 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(floor, |m, x| m.max(x.abs()));
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max) / scale
}

fn all_finite(x: &[f32]) -> bool {
    x.iter().all(|v| v.is_finite())
}

#[derive(Default, Debug)]
struct Worst {
    a: f32,
    r: f32,
    force: f32,
    scale: f32,
    jac: f32,
    lagged: f32,
    gains: f32,
    limits: f32,
    cost: f32,
    grad: f32,
    hess: f32,
    v1: f32,
    /// Largest residual over its tolerance.
    residual: f64,
    iterations: i64,
}

/// Builds, evaluates and solves every case on both sides and compares.
/// Gymnasium's humanoid falling onto the floor: most solves over the dof
/// tree, and the dense factorization, on the GPU as on the CPU, where a
/// limb touches another (a contact off one path to the root).
#[test]
fn humanoid_parity() {
    let Some(path) = common::shared_file("models/gymnasium/humanoid.xml") else { return };
    let model = Arc::new(Model::from_mjcf_file(&path).unwrap());
    let snaps = snapshots(&model, None, 3e-3, 600, 9);
    let snaps: Vec<_> = snaps.into_iter().skip(20).collect();
    let mut rng = Rng::new(6);
    let cases = collision_cases(&model, &snaps, 32, &mut rng);
    let tree = check_model("humanoid", model.clone(), &cases, 32, None);
    assert!(
        context().is_none() || tree * 2 > cases.len(),
        "humanoid: {tree} of {} worlds over the dof tree",
        cases.len()
    );
}

/// Returns the worlds solved over the dof tree (0 when skipped).
fn check_model(
    name: &str,
    model: Arc<Model>,
    cases: &[WorldCase],
    ncon: usize,
    variant: Option<SolverVariant>,
) -> usize {
    let Some(ctx) = context() else {
        eprintln!("SKIPPED: no GPU adapter");
        return 0;
    };
    let (nv, nu) = (model.nv, model.nu());
    assert!(cases.iter().any(|c| !c.contacts.is_empty()), "{name}: no contacts in any world");
    assert!(cases.iter().all(|c| c.found <= ncon), "{name}: capacity too small for the test");

    // CPU f32 reference.
    let mut cpu = vec![];
    let mut cpu_kind = vec![];
    let mut builder = IcfBuilder::new(&model);
    for c in cases {
        let d = data_at(&model, &c.q, &c.v, c.params.mass_scale as f32);
        let mut p = IcfProblem::<f32>::new(nv);
        let act = Actuation { ctrl: &c.ctrl, target_velocity: &c.vref, applied: &[] };
        builder.build(&model, &d, &c.contacts, act, &c.params.materials.cast(), &mut p);
        p.set_time_step(c.h);
        let mut v1 = c.v.clone();
        let mut solver = IcfSolver::<f32>::new(nv);
        let stats = solver.solve(&p, &mut v1, &SolverParams::default()).unwrap();
        cpu_kind.push(solver.factor_kind());
        cpu.push((p, v1, stats, d));
    }

    // GPU.
    let mut gpu = GpuDynamics::new(ctx.clone(), model.clone(), NWORLD).unwrap();
    gpu.set_contact_capacity(ncon).unwrap();
    let contacts = HostCollision::new(&ctx, &model, NWORLD, ncon).unwrap();
    let mut icf = IcfBuffers::new(&ctx, &model, NWORLD, ncon).unwrap();
    if let Some(v) = variant {
        icf.set_variant(v);
    }
    let name = format!("{name} ({:?} solver)", icf.variant());
    let sources: [&dyn BufferSource; 4] = [gpu.gpu_model(), gpu.gpu_data(), &contacts, &icf];
    let kernels = IcfKernels::new(&ctx, NWORLD, ncon, icf.variant(), &sources).unwrap();
    let readback = Readback::new(&ctx, Readback::DEFAULT_SIZE);
    let q: Vec<f32> = cases.iter().flat_map(|c| c.q.clone()).collect();
    let v: Vec<f32> = cases.iter().flat_map(|c| c.v.clone()).collect();
    gpu.set_state(&q, &v).unwrap();
    gpu.set_params(&cases.iter().map(|c| c.params).collect::<Vec<_>>()).unwrap();
    gpu.set_step(&cases.iter().map(|c| c.h).collect::<Vec<_>>()).unwrap();
    gpu.fill_outputs(f32::NAN).unwrap();
    for (w, c) in cases.iter().enumerate() {
        contacts.upload(&ctx, w, &c.contacts, c.found).unwrap();
        icf.ctrl.write_at(&ctx, w * nu, &c.ctrl).unwrap();
        icf.target_velocity.write_at(&ctx, w * nu, &c.vref).unwrap();
    }
    icf.world.write(&ctx, &vec![cenic::gpu::icf::GpuIcfWorld { solving: 1, ..Default::default() }; NWORLD]).unwrap();
    icf.fill_outputs(&ctx, f32::NAN).unwrap();
    icf.set_params(&ctx, &SolverParams::default());
    gpu.run(&Stage::FORWARD).unwrap();
    run_pass(&ctx, "build", |pass| {
        kernels.encode_build(pass);
        kernels.encode_set_time_step(pass);
    })
    .unwrap();
    let problems = icf.read_problems(&ctx, &readback).unwrap();
    let gpu_mass = gpu.read(Field::Mass).unwrap();

    let mut worst = Worst::default();
    // Totals over the worlds, [GPU, CPU].
    let mut line_evals = [0usize; 2];
    let mut newton = [0usize; 2];
    let mut ncontacts = 0;
    for (w, ((gp, iw), (cp, _, _, _))) in problems.iter().zip(&cpu).enumerate() {
        let ctx_msg = format!("{name} world {w}");
        assert_eq!(iw.ncon as usize, cp.contacts.len(), "{ctx_msg}: contact count");
        assert_eq!(iw.overflow, 0, "{ctx_msg}: overflow");
        assert_eq!(gp.h, cp.h, "{ctx_msg}: h");
        for (label, a, b) in
            [("A", &gp.a, &cp.a), ("r", &gp.r, &cp.r), ("k", &gp.force, &cp.force), ("D", &gp.scale, &cp.scale)]
        {
            assert!(all_finite(a), "{ctx_msg}: {label} not written (NaN)");
            let e = rel(a, b, 1e-6);
            assert!(e <= TOL_BUILD, "{ctx_msg}: {label} differs by {e:e} (relative)");
            let slot = match label {
                "A" => &mut worst.a,
                "r" => &mut worst.r,
                "k" => &mut worst.force,
                _ => &mut worst.scale,
            };
            *slot = slot.max(e);
        }
        assert_eq!(gp.v0, cp.v0, "{ctx_msg}: v0");
        // A = M + hD from the GPU's own M exactly as the CPU forms it.
        let m = &gpu_mass[w * nv * nv..(w + 1) * nv * nv];
        for i in 0..nv {
            let want = m[i * nv + i] + gp.h * model.dofs[i].damping as f32;
            let got = gp.a[i * nv + i];
            assert!((got - want).abs() <= 1e-6 * want.abs(), "{ctx_msg}: A diagonal {i}: {got} vs M + hD = {want}");
        }
        // Contacts: same dofs in the same order, columns and lagged terms close.
        ncontacts += cp.contacts.len();
        for (ci, (gc, cc)) in gp.contacts.iter().zip(&cp.contacts).enumerate() {
            let gd = &gp.jac_dof[gc.jac_start..gc.jac_start + gc.jac_len];
            let cd = &cp.jac_dof[cc.jac_start..cc.jac_start + cc.jac_len];
            assert_eq!(gd, cd, "{ctx_msg} contact {ci}: Jacobian dofs");
            let gcol: Vec<f32> =
                gp.jac_col[gc.jac_start..gc.jac_start + gc.jac_len].iter().flat_map(|c| c.to_array()).collect();
            let ccol: Vec<f32> =
                cp.jac_col[cc.jac_start..cc.jac_start + cc.jac_len].iter().flat_map(|c| c.to_array()).collect();
            assert!(all_finite(&gcol), "{ctx_msg} contact {ci}: Jacobian not written");
            let e = rel(&gcol, &ccol, 1e-6);
            assert!(e <= TOL_BUILD, "{ctx_msg} contact {ci}: Jacobian differs by {e:e}");
            worst.jac = worst.jac.max(e);
            assert_eq!((gc.phi0, gc.normal.to_array()), (cc.phi0, cc.normal.to_array()), "{ctx_msg} contact {ci}");
            let vscale = cc.vc0.norm().max(1e-3);
            let mut lag = (gc.vc0 - cc.vc0).norm() / vscale;
            for (x, y) in [
                (gc.stiffness, cc.stiffness),
                (gc.dissipation, cc.dissipation),
                (gc.mu_static, cc.mu_static),
                (gc.mu_dynamic, cc.mu_dynamic),
                (gc.delassus, cc.delassus),
                (gc.fe0, cc.fe0),
                (gc.mu, cc.mu),
            ] {
                assert!(x.is_finite(), "{ctx_msg} contact {ci}: lagged term not written");
                lag = lag.max((x - y).abs() / y.abs().max(1e-6));
            }
            // n0 = h·fe0·(1 − d vn0) cancels near vn0 = 1/d (and d carries one
            // rounding of the world's multiplier): judged on the size of its terms.
            let n0_scale = cp.h * cc.fe0.abs() * (1.0 + cc.dissipation * cc.normal.dot(cc.vc0).abs());
            assert!(gc.n0.is_finite(), "{ctx_msg} contact {ci}: n0 not written");
            lag = lag.max((gc.n0 - cc.n0).abs() / n0_scale.max(1e-9));
            // ε = max(vs/10, μ·R·n0) inherits n0's cancellation.
            let eps_scale = (1e-5f32).max(cc.mu * 1e-3 * cc.delassus * n0_scale);
            assert!(gc.eps.is_finite(), "{ctx_msg} contact {ci}: ε not written");
            lag = lag.max((gc.eps - cc.eps).abs() / eps_scale);
            assert!(lag <= TOL_BUILD, "{ctx_msg} contact {ci}: lagged terms differ by {lag:e}: {gc:?} vs {cc:?}");
            worst.lagged = worst.lagged.max(lag);
            // MuJoCo's soft contact: D, B, K·d·x, the friction slopes and the tangent.
            assert_eq!(gc.soft.is_some(), cc.soft.is_some(), "{ctx_msg} contact {ci}: contact law");
            if let (Some(g), Some(c)) = (gc.soft, cc.soft) {
                let mut e = (g.t1 - c.t1).norm();
                for (x, y, floor) in [
                    (g.d, c.d, 1e-6),
                    (g.b, c.b, 1e-6),
                    (g.kpos, c.kpos, 1e-3),
                    (g.mu[0], c.mu[0], 1e-6),
                    (g.mu[1], c.mu[1], 1e-6),
                    (g.hk, c.hk, 1e-6),
                ] {
                    assert!(x.is_finite(), "{ctx_msg} contact {ci}: soft term not written");
                    e = e.max((x - y).abs() / y.abs().max(floor));
                }
                let w0 = (g.w0 - c.w0).norm() / c.w0.norm().max(1e-3);
                assert!(e.max(w0) <= TOL_BUILD, "{ctx_msg} contact {ci}: soft terms differ by {e:e}: {g:?} vs {c:?}");
                worst.lagged = worst.lagged.max(e);
            }
        }
        assert_eq!(gp.gains.len(), cp.gains.len());
        for (g, c) in gp.gains.iter().zip(&cp.gains) {
            assert_eq!((g.dof, g.kp, g.kd, g.effort, g.v_ref), (c.dof, c.kp, c.kd, c.effort, c.v_ref), "{ctx_msg}");
            let e = [(g.q_err, c.q_err), (g.gain, c.gain), (g.bias, c.bias)]
                .iter()
                .map(|(x, y)| (x - y).abs() / y.abs().max(1e-3))
                .fold(0.0, f32::max);
            assert!(e <= TOL_BUILD, "{ctx_msg}: gain law differs by {e:e}: {g:?} vs {c:?}");
            worst.gains = worst.gains.max(e);
        }
        assert_eq!(gp.limits.len(), cp.limits.len());
        for (l, c) in gp.limits.iter().zip(&cp.limits) {
            assert_eq!((l.dof, l.sign), (c.dof, c.sign), "{ctx_msg}");
            let e = [(l.g0, c.g0), (l.fe0, c.fe0), (l.stiffness, c.stiffness), (l.damping, c.damping)]
                .iter()
                .map(|(x, y)| (x - y).abs() / y.abs().max(1e-6))
                .fold(0.0, f32::max);
            assert!(e <= TOL_BUILD, "{ctx_msg}: limit differs by {e:e}: {l:?} vs {c:?}");
            worst.limits = worst.limits.max(e);
            assert_eq!(l.soft.is_some(), c.soft.is_some(), "{ctx_msg}: limit law");
            if let (Some(g), Some(c)) = (l.soft, c.soft) {
                let e = [
                    (g.d, c.d, 1e-6),
                    (g.b, c.b, 1e-6),
                    (g.kpos, c.kpos, 1e-3),
                    (g.vel0, c.vel0, 1e-3),
                    (g.vref, c.vref, 1e-3),
                ]
                .iter()
                .map(|(x, y, f)| (x - y).abs() / y.abs().max(*f))
                .fold(0.0, f32::max);
                assert!(e <= TOL_BUILD, "{ctx_msg}: soft limit differs by {e:e}: {g:?} vs {c:?}");
                worst.limits = worst.limits.max(e);
            }
        }
    }

    // Cost, gradient and Hessian at a common velocity (the CPU's v1 plus noise).
    let mut rng = Rng::new(99);
    let probe: Vec<Vec<f32>> =
        cpu.iter().map(|(_, v1, _, _)| v1.iter().map(|x| x + (0.02 * rng.normal()) as f32).collect()).collect();
    for (w, p) in probe.iter().enumerate() {
        icf.write_vec(&ctx, w, IcfVec::V, p).unwrap();
    }
    run_pass(&ctx, "evaluate", |pass| kernels.encode_evaluate(pass)).unwrap();
    let grads = icf.read_vec(&ctx, &readback, IcfVec::Grad).unwrap();
    let hess = icf.factor.read(&ctx, &readback).unwrap();
    let worlds = icf.world.read(&ctx, &readback).unwrap();
    let mut work = cost::CostWork::default();
    for (w, (cp, ..)) in cpu.iter().enumerate() {
        let mut g = vec![0.0f32; nv];
        let mut hh = vec![0.0f32; nv * nv];
        let l = cost::evaluate(cp, &probe[w], &mut g, Some(&mut hh), &mut work);
        // ℓ is judged on the scale of its quadratic part ½|vᵀAv| + |rᵀv|.
        let av: f32 = (0..nv).map(|i| (0..nv).map(|j| cp.a[i * nv + j] * probe[w][j]).sum::<f32>() * probe[w][i]).sum();
        let rv: f32 = (0..nv).map(|i| cp.r[i] * probe[w][i]).sum();
        let lscale = (0.5 * av.abs() + rv.abs()).max(l.abs()).max(1e-9);
        let ec = (worlds[w].cost - l).abs() / lscale;
        // The gradient (≈ 0 near v1) on the scale of its terms, r and A v.
        let gscale: f32 = cp.r.iter().chain(&g).fold(1e-6f32, |m, x| m.max(x.abs()));
        let gg = &grads[w * nv..(w + 1) * nv];
        let eg = gg.iter().zip(&g).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max) / gscale;
        let eh = rel(&hess[w * nv * nv..(w + 1) * nv * nv], &hh, 1e-6);
        assert!(
            worlds[w].cost.is_finite() && all_finite(&grads[w * nv..(w + 1) * nv]),
            "{name} world {w}: cost not written"
        );
        assert!(ec <= TOL_COST, "{name} world {w}: cost {} vs {l} ({ec:e})", worlds[w].cost);
        assert!(eg <= TOL_COST, "{name} world {w}: gradient differs by {eg:e}");
        assert!(eh <= TOL_COST, "{name} world {w}: Hessian differs by {eh:e}");
        worst.cost = worst.cost.max(ec);
        worst.grad = worst.grad.max(eg);
        worst.hess = worst.hess.max(eh);
    }

    // Solve from v0 on both sides.
    for (w, c) in cases.iter().enumerate() {
        icf.write_vec(&ctx, w, IcfVec::V, &c.v).unwrap();
    }
    kernels.solve(&ctx, &icf, &readback).unwrap();
    let v1 = icf.read_vec(&ctx, &readback, IcfVec::V).unwrap();
    let worlds = icf.world.read(&ctx, &readback).unwrap();
    // The factorization over the dof tree where the CPU takes it (its
    // last factorizing iteration; every iteration of a solve sees the
    // same contacts), and nowhere else.
    for (w, kind) in cpu_kind.iter().enumerate() {
        let tree = *kind == FactorKind::Tree;
        assert_eq!(
            worlds[w].structured == 3,
            tree,
            "{name} world {w}: GPU structured {}, CPU {kind:?}",
            worlds[w].structured
        );
    }
    let tree_worlds = cpu_kind.iter().filter(|k| **k == FactorKind::Tree).count();
    for (w, (cp, cv1, cstats, _)) in cpu.iter().enumerate() {
        let gs = worlds[w].solve_result().unwrap_or_else(|e| panic!("{name} world {w}: GPU solve failed: {e}"));
        let gv = &v1[w * nv..(w + 1) * nv];
        assert!(all_finite(gv), "{name} world {w}: v1 not written");
        let e = rel(gv, cv1, 1e-2);
        assert!(e <= TOL_V1, "{name} world {w}: v1 differs by {e:e}\n gpu {gv:?}\n cpu {cv1:?}");
        worst.v1 = worst.v1.max(e);
        // The GPU's v1 satisfies the CPU problem's optimality condition, up
        // to the solver tolerance and to what the problems' differences can
        // cause: ‖D δH v‖ ≤ δ·‖D |H| |v|‖ with δ the relative difference of
        // the problems' terms (≤ 1e-6 measured, TOL_RESIDUAL_H = 1e-4).
        let mut g = vec![0.0f32; nv];
        let mut hh = vec![0.0f32; nv * nv];
        cost::evaluate(cp, gv, &mut g, Some(&mut hh), &mut work);
        let norm = |x: &mut dyn Iterator<Item = f64>| x.map(|y| y * y).sum::<f64>().sqrt();
        let res = norm(&mut g.iter().zip(&cp.scale).map(|(x, s)| (x * s) as f64));
        let dr = norm(&mut cp.r.iter().zip(&cp.scale).map(|(x, s)| (x * s) as f64));
        let hv = norm(
            &mut (0..nv)
                .map(|i| (0..nv).map(|j| (hh[i * nv + j] * gv[j]).abs() as f64).sum::<f64>() * cp.scale[i] as f64),
        );
        let tol = TOL_RESIDUAL * dr.max(1.0) + TOL_RESIDUAL_H * hv;
        assert!(res <= tol, "{name} world {w}: CPU residual of the GPU solution {res:e} > {tol:e}");
        assert!(gs.residual <= gs.tolerance * 1.0001, "{name} world {w}: GPU residual above its tolerance");
        worst.residual = worst.residual.max(res / tol);
        worst.iterations = worst.iterations.max((gs.iterations as i64 - cstats.iterations as i64).abs());
        line_evals[0] += gs.line_search_iterations;
        line_evals[1] += cstats.line_search_iterations;
        newton[0] += gs.iterations;
        newton[1] += cstats.iterations;
    }
    eprintln!(
        "{name}: {NWORLD} worlds, {ncontacts} contacts, {tree_worlds} solved over the dof tree; largest relative \
         differences {worst:?}; Newton iterations GPU {} CPU {}, line-search evaluations GPU {} CPU {}",
        newton[0], newton[1], line_evals[0], line_evals[1]
    );
    // The same line search, counted the same way: the GPU once evaluated
    // ℓ at α = 0 as well (one evaluation more per Newton iteration, where
    // the CPU takes ℓ'(0) = ∇ℓ·w).
    let slack = newton[1] / 4 + 2;
    assert!(
        line_evals[0] <= line_evals[1] + slack && line_evals[1] <= line_evals[0] + slack,
        "{name}: line-search evaluations GPU {} against CPU {} (Newton iterations {} / {})",
        line_evals[0],
        line_evals[1],
        newton[0],
        newton[1]
    );
    tree_worlds
}

#[test]
fn servo_scene_parity() {
    let model = Arc::new(servo_scene());
    let mut rng = Rng::new(1);
    let cases = servo_cases(&model, &mut rng);
    check_model("servo scene", model, &cases, 8, None);
}

/// The servo scene under MuJoCo's semantics: soft contacts (pyramidal on
/// the box, frictionless at the arm's tip, a margin) and soft limits.
#[test]
fn servo_scene_mujoco_semantics_parity() {
    let mut model = servo_scene();
    model.options.semantics = cenic::model::Semantics::MuJoCo;
    for (g, condim, margin) in [(0, 3, 0.0), (1, 3, 1e-3), (2, 1, 0.0)] {
        let soft = SoftMaterial { condim, margin, friction: [0.8, 0.8, 0.0, 0.0, 0.0], ..Default::default() };
        model.geoms[g].material.soft = Some(soft);
        model.geoms[g].margin = margin;
    }
    let model = Arc::new(model);
    let mut rng = Rng::new(4);
    let cases = servo_cases(&model, &mut rng);
    assert!(cases.iter().any(|c| c.contacts.iter().any(|k| k.material.soft.is_some())));
    check_model("servo scene (MuJoCo semantics)", model, &cases, 8, None);
}

/// Gymnasium's ant (MuJoCo's semantics from its MJCF): pyramidal contacts
/// along the capsule legs, soft hip and ankle limits, states of a fall onto
/// the floor.
#[test]
fn ant_parity() {
    let Some(path) = common::shared_file("models/gymnasium/ant.xml") else { return };
    let model = Arc::new(Model::from_mjcf_file(&path).unwrap());
    assert_eq!(model.options.semantics, cenic::model::Semantics::MuJoCo);
    let snaps = snapshots(&model, None, 2e-3, 400, 20);
    let snaps: Vec<_> = snaps.into_iter().skip(4).collect();
    let mut rng = Rng::new(5);
    let cases = collision_cases(&model, &snaps, 16, &mut rng);
    // The ant's feet touch the floor only: every solve over the dof tree,
    // by one thread per world and by several (the tree factorization's
    // ancestors dealt to the threads).
    for variant in [None, Some(SolverVariant::Cooperative)] {
        let tree = check_model("ant", model.clone(), &cases, 16, variant);
        assert!(context().is_none() || tree == cases.len(), "ant: {tree} of {} worlds over the dof tree", cases.len());
    }
}

#[test]
fn cube_toss_parity() {
    let model = Arc::new(scenes::cube_toss());
    // States around the first impacts and the slide (dt 2 ms, 0.2–0.8 s).
    let snaps = snapshots(&model, Some("toss"), 2e-3, 400, 20);
    let snaps: Vec<_> = snaps.into_iter().skip(5).collect();
    let mut rng = Rng::new(2);
    let cases = collision_cases(&model, &snaps, 8, &mut rng);
    // Both solver stages (the serial one is the default at nv = 6).
    check_model("cube toss", model.clone(), &cases, 8, None);
    check_model("cube toss", model, &cases, 8, Some(SolverVariant::Cooperative));
}

#[test]
fn clutter_parity() {
    let model = Arc::new(scenes::clutter(20, scenes::CUBE_TOSS_MATERIAL));
    let snaps = snapshots(&model, None, 4e-3, 150, 10);
    let mut rng = Rng::new(3);
    let cases = collision_cases(&model, &snaps, 160, &mut rng);
    check_model("clutter", model.clone(), &cases, 160, None);
    check_model("clutter", model, &cases, 160, Some(SolverVariant::Wide));
}

/// Per dof block, the later blocks its factor columns reach in natural
/// order: the contacts' couplings (`direct`) and with the fill of the
/// elimination (what `kernels/icf_solver.wgsl` plan_blocks computes).
fn block_coupling(model: &Model, contacts: &[Contact<f32>]) -> (Vec<u32>, Vec<u32>) {
    let (dof_block, starts) = cenic::gpu::model::dof_blocks(model);
    let nb = starts.len() - 1;
    let block = |b: usize| model.bodies[b].last_dof.map(|d| dof_block[d] as usize);
    let mut later = vec![0u32; nb];
    for c in contacts {
        if let (Some(a), Some(b)) = (block(c.body[0]), block(c.body[1]))
            && a != b
        {
            later[a.min(b)] |= 1 << a.max(b);
        }
    }
    let direct = later.clone();
    for b in 0..nb {
        let m = later[b];
        if m != 0 {
            let p = m.trailing_zeros() as usize;
            later[p] |= m & !(1 << p);
        }
    }
    (direct, later)
}

/// The structured Newton solve (factorization and triangular solves over
/// the dof blocks the contacts couple, `kernels/icf_solver.wgsl`) equals
/// the dense one bit for bit on the clutter of 20 free bodies: the same
/// v1, the same Cholesky factor over its block structure (lower triangle,
/// with ±0 equal; the entries outside it are never assembled, and are exact
/// zeros of the dense factor) and the same statistics from the same
/// problems, in worlds whose contacts couple
/// bodies with fill (a body touching two that do not touch each other) and
/// without. The structured run must take the structured path in most
/// worlds (`GpuIcfWorld::structured`), the dense run in none. Its CPU f32
/// parity is `clutter_parity`'s.
#[test]
fn clutter_structured_solve_equals_dense() {
    let Some(ctx) = context() else {
        eprintln!("SKIPPED: no GPU adapter");
        return;
    };
    let model = Arc::new(scenes::clutter(20, scenes::CUBE_TOSS_MATERIAL));
    let nv = model.nv;
    let ncon = 160;
    let snaps = snapshots(&model, None, 4e-3, 150, 10);
    let mut rng = Rng::new(7);
    let cases = collision_cases(&model, &snaps, ncon, &mut rng);
    let (mut coupled, mut filled) = (0, 0);
    for c in &cases {
        let (direct, later) = block_coupling(&model, &c.contacts);
        coupled += direct.iter().any(|&m| m != 0) as usize;
        filled += (direct != later) as usize;
    }
    eprintln!("clutter: {NWORLD} worlds, {coupled} with bodies in contact, {filled} with fill");
    assert!(filled >= 5 && coupled > filled, "the cases must include worlds with and without fill");

    let mut gpu = GpuDynamics::new(ctx.clone(), model.clone(), NWORLD).unwrap();
    gpu.set_contact_capacity(ncon).unwrap();
    let contacts = HostCollision::new(&ctx, &model, NWORLD, ncon).unwrap();
    let mut icf = IcfBuffers::new(&ctx, &model, NWORLD, ncon).unwrap();
    let sources: [&dyn BufferSource; 4] = [gpu.gpu_model(), gpu.gpu_data(), &contacts, &icf];
    let kernels = IcfKernels::new(&ctx, NWORLD, ncon, icf.variant(), &sources).unwrap();
    let readback = Readback::new(&ctx, Readback::DEFAULT_SIZE);
    let q: Vec<f32> = cases.iter().flat_map(|c| c.q.clone()).collect();
    let v: Vec<f32> = cases.iter().flat_map(|c| c.v.clone()).collect();
    gpu.set_state(&q, &v).unwrap();
    gpu.set_params(&cases.iter().map(|c| c.params).collect::<Vec<_>>()).unwrap();
    gpu.set_step(&cases.iter().map(|c| c.h).collect::<Vec<_>>()).unwrap();
    for (w, c) in cases.iter().enumerate() {
        contacts.upload(&ctx, w, &c.contacts, c.found).unwrap();
    }
    icf.set_params(&ctx, &SolverParams::default());
    gpu.run(&Stage::FORWARD).unwrap();
    let mut runs = vec![];
    for (structured, levels) in [(true, false), (false, false), (true, true)] {
        icf.set_structured(&ctx, structured);
        if levels {
            icf.set_level_factorization(&ctx, true);
        }
        icf.world
            .write(&ctx, &vec![cenic::gpu::icf::GpuIcfWorld { solving: 1, ..Default::default() }; NWORLD])
            .unwrap();
        icf.fill_outputs(&ctx, f32::NAN).unwrap();
        run_pass(&ctx, "build", |pass| {
            kernels.encode_build(pass);
            kernels.encode_set_time_step(pass);
        })
        .unwrap();
        for (w, c) in cases.iter().enumerate() {
            icf.write_vec(&ctx, w, IcfVec::V, &c.v).unwrap();
        }
        kernels.solve(&ctx, &icf, &readback).unwrap();
        let v1 = icf.read_vec(&ctx, &readback, IcfVec::V).unwrap();
        let factor = icf.factor.read(&ctx, &readback).unwrap();
        let worlds = icf.world.read(&ctx, &readback).unwrap();
        runs.push((v1, factor, worlds));
    }
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a == 0.0 && b == 0.0);
    let (dv, df, dw) = &runs[1];
    // The factorization by levels: the same results, in most worlds.
    let (lv, lf, lw) = &runs[2];
    let by_level = lw.iter().filter(|w| w.structured == 2).count();
    assert!(by_level * 2 > NWORLD, "factorization by levels in only {by_level} of {NWORLD} worlds");
    for w in 0..NWORLD {
        assert_eq!(
            (lw[w].iterations, lw[w].line_search_iterations, lw[w].factorizations, lw[w].status),
            (dw[w].iterations, dw[w].line_search_iterations, dw[w].factorizations, dw[w].status),
            "world {w}: statistics by levels differ"
        );
        for i in 0..nv {
            let k = w * nv + i;
            assert!(same(lv[k], dv[k]), "world {w}: v1[{i}] by levels {} vs {}", lv[k], dv[k]);
            for j in 0..=i {
                let k = (w * nv + i) * nv + j;
                assert!(
                    lf[k].is_nan() || same(lf[k], df[k]),
                    "world {w}: L[{i}][{j}] by levels {} vs {}",
                    lf[k],
                    df[k]
                );
            }
        }
    }
    eprintln!("clutter: factorization by levels in {by_level} of {NWORLD} worlds, bit for bit the dense results");
    let (sv, sf, sw) = &runs[0];
    let structured = sw.iter().filter(|w| w.structured == 1).count();
    assert!(structured * 2 > NWORLD, "structured path in only {structured} of {NWORLD} worlds");
    assert!(dw.iter().all(|w| w.structured == 0), "the dense run took the structured path");
    let mut skipped = 0usize;
    for w in 0..NWORLD {
        let (s, d) = (&sw[w], &dw[w]);
        s.solve_result().unwrap_or_else(|e| panic!("world {w}: structured solve failed: {e}"));
        assert_eq!(
            (s.iterations, s.line_search_iterations, s.factorizations, s.status),
            (d.iterations, d.line_search_iterations, d.factorizations, d.status),
            "world {w}: statistics differ"
        );
        assert!(same(s.residual, d.residual), "world {w}: residual {} vs {}", s.residual, d.residual);
        for i in 0..nv {
            let k = w * nv + i;
            assert!(same(sv[k], dv[k]), "world {w}: v1[{i}] {} vs {}", sv[k], dv[k]);
            for j in 0..=i {
                // The structured run assembles and factors only the
                // entries of its block structure: the others keep the NaN
                // they were filled with, and must be exact zeros of the
                // dense factor.
                let k = (w * nv + i) * nv + j;
                if sf[k].is_nan() {
                    skipped += 1;
                    assert!(df[k] == 0.0, "world {w}: L[{i}][{j}] = {} is outside the structure", df[k]);
                } else {
                    assert!(same(sf[k], df[k]), "world {w}: L[{i}][{j}] {} vs {}", sf[k], df[k]);
                }
            }
        }
    }
    // The structured worlds' factors skip most of the nv² entries.
    assert!(skipped > structured * nv * nv / 4, "{skipped} factor entries outside the structure");
    eprintln!(
        "clutter: structured path in {structured} of {NWORLD} worlds, bit for bit the dense results \
         ({skipped} factor entries outside the structure)"
    );
}
