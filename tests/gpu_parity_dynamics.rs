//! GPU (WGSL, f32) against the CPU f32 path (`Data::<f32>` +
//! `cenic::dynamics::*`), stage by stage from identical states: every field
//! of the kinematics, velocities, mass-matrix, bias- and passive-force
//! stages, on 64+ worlds with different random states and mass scales, for
//! three models (all joint kinds with off-centre anchors and references;
//! 20 free bodies; an ant-like articulated robot). GPU outputs are
//! pre-filled with NaN so anything a kernel fails to write fails the test.
//! Also `integrate_q` parity (both branches of the exponential map),
//! bit-identical repeated runs, and the error paths.
//!
//! Runs on any wgpu adapter, including Mesa's lavapipe. Without an adapter
//! each test prints "SKIPPED: no GPU adapter" and passes, unless
//! `CENIC_REQUIRE_GPU` is set (CI sets it, since it installs lavapipe).

#[macro_use]
mod common;

use common::inertial;

use cenic::batch::WorldParams;
use cenic::dynamics::{self, Data};
use cenic::gpu::{Field, GpuContext, GpuDynamics, GpuError, GpuOptions, Stage};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Model, ModelBuilder, Site, WORLD};
use common::Rng;
use std::sync::Arc;

// Tolerances: the largest |GPU − CPU| of a field in a world, relative to
// the largest |CPU| value of that field in that world (so a 1e3 kg·m² mass
// matrix entry and a 1e-3 one are judged on the matrix's own scale).
//
// Both sides evaluate the same formulas in f32 in the same order, so the
// differences come only from the GPU compiler's freedom: fused multiply-add
// contraction, reassociation inside dot/cross products, and the driver's
// sin/cos/sqrt/division (WGSL allows a few ulp). Each such difference is
// ~1 ulp = 6e-8 of the operands' scale; the longest chains (a body frame
// after ~5 joints, then parallel-axis shifts, then CRBA / RNEA sums over up
// to 9 bodies) compound a few tens of them, and subtractive cancellation
// (e.g. I = I_c + m(|c|² 1 − c cᵀ) far from the reference point) can lift
// one entry's error to the scale of its largest term, which is why the
// scale is the field's, not the entry's. Measured on lavapipe (Mesa 22.3,
// LLVM 15): at most 6e-7 (see the printed table); the bounds leave a ≥ 15×
// margin for other drivers without letting a wrong formula through (a
// dropped joint reference or armature gives errors of order 1e-2).
/// Poses, anchors, axes, rotation matrices, reference points (m, unitless).
const TOL_KINEMATICS: f32 = 1e-5;
/// cinert, cdof, cvel, cdof_dot, crb, cacc (kg, kg·m, kg·m², rad/s, m/s, …).
const TOL_SPATIAL: f32 = 1e-5;
/// Mass matrix, bias forces and the bias recursion's forces, passive forces.
const TOL_DYNAMICS: f32 = 2e-5;
/// Positions after integrate_q (m, rad, quaternion components; all O(1)).
const TOL_INTEGRATE: f32 = 2e-6;

const NWORLD: usize = 67; // Not a multiple of the workgroup size: exercises the bounds checks.

/// Every joint kind with off-centre anchors, tilted bodies, a joint
/// reference, springs, armature, sites, and a second tree (so reference
/// points differ between trees).
fn mixed_model() -> Model {
    let mut b = ModelBuilder::new("mixed");
    b.add_geom(GeomSpec::new("ground", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD));
    let base = b.add_body(BodySpec {
        inertial: inertial(2.0, [0.05, -0.02, 0.01], [0.03, 0.04, 0.05]),
        ..BodySpec::new("base", WORLD, [0.1, 0.2, 1.0])
    });
    b.add_joint(JointSpec::new("free", JointKind::Free, base));
    b.add_geom(GeomSpec {
        pos: [0.02, 0.0, 0.01],
        ..GeomSpec::new("base_box", GeomKind::Box, [0.1, 0.08, 0.05], base)
    });
    let l1 = b.add_body(BodySpec {
        quat: [0.8, 0.0, 0.6, 0.0],
        inertial: inertial(0.7, [0.0, 0.0, -0.15], [0.01, 0.012, 0.004]),
        ..BodySpec::new("l1", base, [0.2, 0.0, -0.1])
    });
    b.add_joint(JointSpec { pos: [0.0, 0.02, 0.03], armature: 0.01, ..JointSpec::new("ball", JointKind::Ball, l1) });
    let l2 = b.add_body(BodySpec {
        inertial: inertial(0.4, [0.05, 0.01, -0.1], [0.005, 0.006, 0.002]),
        ..BodySpec::new("l2", l1, [0.0, 0.0, -0.3])
    });
    b.add_joint(JointSpec {
        axis: [0.3, 1.0, 0.1],
        pos: [0.01, 0.0, 0.02],
        reference: 0.2,
        stiffness: 3.0,
        springref: -0.4,
        armature: 0.02,
        ..JointSpec::new("hinge", JointKind::Hinge, l2)
    });
    let l3 = b.add_body(BodySpec {
        quat: [0.7, 0.1, 0.0, -0.7],
        inertial: inertial(0.2, [0.0, 0.03, 0.0], [0.001, 0.002, 0.0015]),
        ..BodySpec::new("l3", l2, [0.1, 0.0, -0.2])
    });
    b.add_joint(JointSpec {
        axis: [1.0, 0.2, -0.4],
        pos: [0.0, 0.01, -0.02],
        reference: -0.1,
        stiffness: 40.0,
        springref: 0.05,
        armature: 0.3,
        ..JointSpec::new("slide", JointKind::Slide, l3)
    });
    b.add_geom(GeomSpec { pos: [0.0, 0.05, 0.0], ..GeomSpec::new("tip", GeomKind::Sphere, [0.05, 0.0, 0.0], l3) });
    b.add_site(Site {
        name: "tip_site".into(),
        body: l3,
        pos: [0.01, -0.02, 0.03],
        quat: [0.6, 0.0, 0.8, 0.0],
        kind: GeomKind::Sphere,
        size: [0.005; 3],
    });
    // A second tree: a pendulum hanging from the world with an off-centre hinge.
    let p = b.add_body(BodySpec {
        quat: [0.9, 0.3, 0.0, 0.1],
        inertial: inertial(1.1, [0.0, 0.0, -0.25], [0.02, 0.021, 0.003]),
        ..BodySpec::new("pendulum", WORLD, [-0.5, 0.3, 1.5])
    });
    b.add_joint(JointSpec { axis: [0.0, 1.0, 0.2], pos: [0.0, 0.0, 0.05], ..JointSpec::new("p", JointKind::Hinge, p) });
    b.add_geom(GeomSpec {
        pos: [0.0, 0.0, -0.25],
        ..GeomSpec::new("p_capsule", GeomKind::Capsule, [0.03, 0.2, 0.0], p)
    });
    b.add_site(Site {
        name: "p_site".into(),
        body: p,
        pos: [0.0, 0.0, -0.5],
        quat: [1.0, 0.0, 0.0, 0.0],
        kind: GeomKind::Sphere,
        size: [0.005; 3],
    });
    b.build().unwrap()
}

/// 20 free bodies of various shapes (inertia from geoms) above a ground plane.
fn clutter_model() -> Model {
    let mut b = ModelBuilder::new("clutter20");
    b.add_geom(GeomSpec::new("ground", GeomKind::Plane, [2.0, 2.0, 0.1], WORLD));
    for i in 0..20 {
        let body = b.add_body(BodySpec::new(&format!("b{i}"), WORLD, [0.1 * i as f64, 0.0, 0.2 + 0.1 * i as f64]));
        b.add_joint(JointSpec::new(&format!("j{i}"), JointKind::Free, body));
        let (kind, size) = match i % 3 {
            0 => (GeomKind::Box, [0.05, 0.03 + 0.002 * i as f64, 0.02]),
            1 => (GeomKind::Sphere, [0.04, 0.0, 0.0]),
            _ => (GeomKind::Capsule, [0.02, 0.05, 0.0]),
        };
        b.add_geom(GeomSpec {
            pos: [0.01, -0.01, 0.005],
            quat: [0.9, 0.0, 0.3, 0.3],
            ..GeomSpec::new(&format!("g{i}"), kind, size, body)
        });
    }
    b.build().unwrap()
}

/// An ant-like robot: free torso, four legs of hip (about z) and ankle
/// hinges with capsule geoms (inertia from geoms), armature 1 like MuJoCo's ant.
fn ant_model() -> Model {
    let mut b = ModelBuilder::new("ant");
    b.add_geom(GeomSpec::new("floor", GeomKind::Plane, [40.0, 40.0, 40.0], WORLD));
    let torso = b.add_body(BodySpec::new("torso", WORLD, [0.0, 0.0, 0.75]));
    b.add_joint(JointSpec::new("root", JointKind::Free, torso));
    b.add_geom(GeomSpec::new("torso_geom", GeomKind::Sphere, [0.25, 0.0, 0.0], torso));
    for (i, deg) in [45.0f64, 135.0, 225.0, 315.0].into_iter().enumerate() {
        let a = deg.to_radians();
        let (c, s) = (a.cos(), a.sin());
        // Capsule along the body's +x after a rotation about z by `a`.
        let yaw = [(a / 2.0).cos(), 0.0, 0.0, (a / 2.0).sin()];
        let along_x = [std::f64::consts::FRAC_1_SQRT_2, 0.0, std::f64::consts::FRAC_1_SQRT_2, 0.0];
        let hip =
            b.add_body(BodySpec { quat: yaw, ..BodySpec::new(&format!("hip{i}"), torso, [0.2 * c, 0.2 * s, 0.0]) });
        b.add_joint(JointSpec {
            axis: [0.0, 0.0, 1.0],
            range: Some([-0.52, 0.52]),
            armature: 1.0,
            damping: 1.0,
            ..JointSpec::new(&format!("hip_{i}"), JointKind::Hinge, hip)
        });
        b.add_geom(GeomSpec {
            pos: [0.1, 0.0, 0.0],
            quat: along_x,
            ..GeomSpec::new(&format!("thigh{i}"), GeomKind::Capsule, [0.08, 0.1, 0.0], hip)
        });
        let foot = b.add_body(BodySpec::new(&format!("foot{i}"), hip, [0.2, 0.0, 0.0]));
        b.add_joint(JointSpec {
            axis: [0.0, -1.0, 0.0],
            range: Some([0.52, 1.22]),
            armature: 1.0,
            damping: 1.0,
            ..JointSpec::new(&format!("ankle_{i}"), JointKind::Hinge, foot)
        });
        b.add_geom(GeomSpec {
            pos: [0.2, 0.0, 0.0],
            quat: along_x,
            ..GeomSpec::new(&format!("shin{i}"), GeomKind::Capsule, [0.08, 0.2, 0.0], foot)
        });
    }
    b.build().unwrap()
}

/// Random positions (quaternions unit in f64, then rounded to f32),
/// velocities and per-world mass scales for `nworld` worlds.
fn random_worlds(model: &Model, nworld: usize, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<WorldParams>) {
    let mut rng = Rng::new(seed);
    let (mut q, mut v, mut params) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..nworld {
        let mut qw = model.qpos0.clone();
        for j in &model.joints {
            let a = j.qpos_adr;
            match j.kind {
                JointKind::Free => {
                    for k in 0..3 {
                        qw[a + k] = rng.range(-1.0, 1.0);
                    }
                    qw[a + 3..a + 7].copy_from_slice(&rng.quat());
                }
                JointKind::Ball => qw[a..a + 4].copy_from_slice(&rng.quat()),
                JointKind::Hinge => qw[a] = rng.range(-3.0, 3.0),
                JointKind::Slide => qw[a] = rng.range(-1.0, 1.0),
            }
        }
        q.extend(qw.iter().map(|&x| x as f32));
        v.extend((0..model.nv).map(|_| (2.0 * rng.normal()) as f32));
        params.push(WorldParams { mass_scale: rng.range(0.5, 2.0), ..WorldParams::default() });
    }
    (q, v, params)
}

/// The CPU f32 reference of one world: every forward stage.
fn cpu_forward(model: &Model, q: &[f32], v: &[f32], mass_scale: f64) -> Data<f32> {
    let mut d = Data::<f32>::new(model);
    d.q.copy_from_slice(q);
    d.v.copy_from_slice(v);
    d.mass_scale = mass_scale as f32;
    dynamics::kinematics(model, &mut d);
    dynamics::velocities(model, &mut d);
    dynamics::mass_matrix(model, &mut d);
    dynamics::bias_forces(model, &mut d);
    dynamics::passive_forces(model, &mut d);
    d
}

fn tolerance(f: Field) -> f32 {
    match f {
        Field::Cinert | Field::Cdof | Field::Cvel | Field::CdofDot | Field::Crb | Field::Cacc => TOL_SPATIAL,
        Field::Mass | Field::Bias | Field::Passive | Field::Cfrc => TOL_DYNAMICS,
        _ => TOL_KINEMATICS,
    }
}

/// Largest |gpu − cpu| / max(|cpu|) over the block, or an error naming the
/// first non-finite GPU value.
fn block_error(gpu: &[f32], cpu: &[f32]) -> Result<f32, usize> {
    assert_eq!(gpu.len(), cpu.len());
    if let Some(i) = gpu.iter().position(|x| !x.is_finite()) {
        return Err(i);
    }
    let scale = cpu.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1e-6);
    Ok(gpu.iter().zip(cpu).fold(0.0f32, |m, (a, b)| m.max((a - b).abs())) / scale)
}

fn check_forward_parity(model: Model, seed: u64) {
    let ctx = gpu_or_skip!();
    let model = Arc::new(model);
    let (nq, nv) = (model.nq, model.nv);
    let (q, v, params) = random_worlds(&model, NWORLD, seed);
    let start = std::time::Instant::now();
    let gpu = GpuDynamics::new(ctx, model.clone(), NWORLD).unwrap();
    gpu.set_state(&q, &v).unwrap();
    gpu.set_params(&params).unwrap();
    gpu.fill_outputs(f32::NAN).unwrap();
    gpu.run(&Stage::FORWARD).unwrap();
    let fields: Vec<Field> = Field::ALL.into_iter().filter(|f| *f != Field::H).collect();
    let results: Vec<Vec<f32>> = fields.iter().map(|&f| gpu.read(f).unwrap()).collect();
    let gpu_time = start.elapsed();
    let mut worst = vec![0.0f32; fields.len()];
    for w in 0..NWORLD {
        let cpu = cpu_forward(&model, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv], params[w].mass_scale);
        for (k, &f) in fields.iter().enumerate() {
            let n = f.per_world(&model);
            let expected = f.from_data(&cpu).unwrap();
            assert_eq!(expected.len(), n, "{}: layout of {}", model.name, f.name());
            let got = &results[k][w * n..(w + 1) * n];
            match block_error(got, &expected) {
                Ok(e) => {
                    worst[k] = worst[k].max(e);
                    assert!(
                        e <= tolerance(f),
                        "{} world {w} field {}: relative error {e:e} > {:e}\n gpu {got:?}\n cpu {expected:?}",
                        model.name,
                        f.name(),
                        tolerance(f)
                    );
                }
                Err(i) => panic!("{} world {w} field {}[{i}] = {} (never written?)", model.name, f.name(), got[i]),
            }
        }
    }
    eprintln!("{}: {NWORLD} worlds, upload + forward + readback {gpu_time:?}; max relative errors:", model.name);
    for (f, e) in fields.iter().zip(&worst) {
        eprintln!("  {:<10} {e:.2e}", f.name());
    }
}

#[test]
fn forward_parity_mixed_joints() {
    check_forward_parity(mixed_model(), 1);
}

#[test]
fn forward_parity_clutter_of_20_free_bodies() {
    check_forward_parity(clutter_model(), 2);
}

#[test]
fn forward_parity_ant() {
    check_forward_parity(ant_model(), 3);
}

/// integrate_q on every joint kind with per-world steps from 1e-6 s (the
/// exponential map's series branch, |ω h| < 1e-4) to 0.1 s.
#[test]
fn integrate_q_parity() {
    let ctx = gpu_or_skip!();
    for (model, seed) in [(mixed_model(), 4), (ant_model(), 5)] {
        let model = Arc::new(model);
        let (nq, nv) = (model.nq, model.nv);
        let (q, v, _) = random_worlds(&model, NWORLD, seed);
        let steps = [1e-6f32, 1e-4, 2e-3, 0.1];
        let h: Vec<f32> = (0..NWORLD).map(|w| steps[w % steps.len()]).collect();
        let gpu = GpuDynamics::new(ctx.clone(), model.clone(), NWORLD).unwrap();
        gpu.set_state(&q, &v).unwrap();
        gpu.set_step(&h).unwrap();
        gpu.run(&[Stage::IntegrateQ]).unwrap();
        let got = gpu.read(Field::Q).unwrap();
        let mut worst = 0.0f32;
        let mut moved = 0.0f32;
        for w in 0..NWORLD {
            let mut expected = q[w * nq..(w + 1) * nq].to_vec();
            dynamics::integrate_q(&model, &mut expected, &v[w * nv..(w + 1) * nv], h[w]);
            for i in 0..nq {
                let (a, b) = (got[w * nq + i], expected[i]);
                assert!(a.is_finite(), "{} world {w} q[{i}] = {a}", model.name);
                worst = worst.max((a - b).abs());
                moved = moved.max((b - q[w * nq + i]).abs());
                assert!(
                    (a - b).abs() <= TOL_INTEGRATE,
                    "{} world {w} (h = {}) q[{i}]: gpu {a} cpu {b}",
                    model.name,
                    h[w]
                );
            }
        }
        assert!(moved > 0.1, "the step sizes should move the state");
        eprintln!("{}: integrate_q max |q_gpu − q_cpu| = {worst:.2e}", model.name);
    }
}

/// The same inputs give bit-identical outputs: twice on one instance, and on
/// a fresh instance.
#[test]
fn runs_are_bit_identical() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(ant_model());
    let (q, v, params) = random_worlds(&model, NWORLD, 6);
    let run = |gpu: &GpuDynamics| -> Vec<Vec<u32>> {
        gpu.set_state(&q, &v).unwrap();
        gpu.set_params(&params).unwrap();
        gpu.set_step(&vec![0.01; NWORLD]).unwrap();
        gpu.fill_outputs(f32::NAN).unwrap();
        // A step's worth of stages: forward, move, forward again.
        gpu.run(&Stage::FORWARD).unwrap();
        gpu.run(&[Stage::IntegrateQ]).unwrap();
        gpu.run(&Stage::FORWARD).unwrap();
        Field::ALL.iter().map(|&f| gpu.read(f).unwrap().iter().map(|x| x.to_bits()).collect()).collect()
    };
    let a = GpuDynamics::new(ctx.clone(), model.clone(), NWORLD).unwrap();
    let first = run(&a);
    let second = run(&a);
    let fresh = run(&GpuDynamics::new(ctx, model.clone(), NWORLD).unwrap());
    for (k, f) in Field::ALL.iter().enumerate() {
        assert!(first[k] == second[k], "field {} differs between runs", f.name());
        assert!(first[k] == fresh[k], "field {} differs on a fresh instance", f.name());
    }
}

/// Wrong lengths are errors, not panics; per-world uploads land in their world.
#[test]
fn bad_arguments_are_errors() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(mixed_model());
    let gpu = GpuDynamics::new(ctx.clone(), model.clone(), 3).unwrap();
    assert!(matches!(gpu.set_state(&[0.0; 5], &[0.0; 5]), Err(GpuError::Length { .. })));
    assert!(matches!(gpu.set_params(&[WorldParams::default()]), Err(GpuError::Length { .. })));
    assert!(matches!(gpu.set_world_field(Field::Q, 3, &vec![0.0; model.nq]), Err(GpuError::Length { .. })));
    assert!(matches!(GpuDynamics::new(ctx, model.clone(), 0), Err(GpuError::Length { .. })));
    // World 1 gets a shifted free-joint position; the others keep qpos0.
    let mut q1: Vec<f32> = model.qpos0.iter().map(|&x| x as f32).collect();
    q1[0] += 1.0;
    gpu.set_world_field(Field::Q, 1, &q1).unwrap();
    gpu.run(&[Stage::Kinematics]).unwrap();
    let x0 = gpu.read_world(Field::Xpos, 0).unwrap();
    let x1 = gpu.read_world(Field::Xpos, 1).unwrap();
    let x2 = gpu.read_world(Field::Xpos, 2).unwrap();
    assert_eq!(x0, x2);
    assert!((x1[3] - x0[3] - 1.0).abs() < 1e-6, "body 1 x: {} vs {}", x1[3], x0[3]);
}

/// Asking for an adapter that does not exist is a clear error, not a panic,
/// on any machine (this needs no GPU).
#[test]
fn missing_adapter_is_a_clear_error() {
    let mut opts = GpuOptions::from_env();
    opts.selection.adapter_name = Some("no-such-adapter-3f9a".into());
    match GpuContext::with_options(opts) {
        Err(e @ GpuError::NoAdapter(_)) => {
            let msg = e.to_string();
            assert!(msg.contains("no-such-adapter-3f9a") || msg.contains("no adapter"), "{msg}");
            assert!(msg.contains("mesa-vulkan-drivers"), "the message should say how to get an adapter: {msg}");
        }
        other => panic!("expected NoAdapter, got {other:?}"),
    }
    let none = GpuOptions { backends: cenic::gpu::wgpu::Backends::empty(), ..GpuOptions::from_env() };
    assert!(matches!(GpuContext::with_options(none), Err(GpuError::NoAdapter(_))));
}
