//! Billiards and contacts from distance. When the
//! cue ball misses the object ball, the gradient of the object ball's
//! distance to a target with respect to the cue velocity is zero without
//! CFD and points toward contact with it; gradient descent with CFD makes
//! the balls collide; CFD never changes the forward trajectory.

mod common;

use burn::tensor::{DType, Device, Tensor, TensorData};
use cenic::diff::{Cfd, DiffRollout};
use cenic::integrator::{CenicParams, Mode};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Material, Model, ModelBuilder, WORLD};
use std::sync::Arc;

const R: f64 = 0.0286;
const MASS: f64 = 0.17;
const OBJ: [f64; 2] = [0.5, 0.1];
const NSTEPS: usize = 10;

/// Two billiard balls (radius 2.86 cm, 0.17 kg) on a table: 1e5 N/m per
/// pair, dissipation 1 s/m, μ = 0.2.
fn billiards() -> Model {
    let mat = Material { stiffness: 2e5, dissipation: 1.0, mu_static: 0.2, mu_dynamic: 0.2, soft: None };
    let mut b = ModelBuilder::new("billiards");
    b.add_geom(GeomSpec { material: mat, ..GeomSpec::new("table", GeomKind::Plane, [2.0, 2.0, 0.1], WORLD) });
    for name in ["cue", "object"] {
        let body = b.add_body(BodySpec::new(name, WORLD, [0.0, 0.0, R]));
        b.add_joint(JointSpec::new(&format!("{name}_free"), JointKind::Free, body));
        b.add_geom(GeomSpec {
            material: mat,
            mass: Some(MASS),
            ..GeomSpec::new(name, GeomKind::Sphere, [R, 0.0, 0.0], body)
        });
    }
    b.build().unwrap()
}

/// Balls resting on the table (at their static penetration), the cue at
/// the origin moving with (vx, vy), the object ball at `OBJ`.
fn initial_state(vx: f64, vy: f64) -> Vec<f64> {
    let z = R - MASS * 9.81 / 1e5;
    let mut x = vec![0.0; 26];
    x[..7].copy_from_slice(&[0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0]);
    x[7..14].copy_from_slice(&[OBJ[0], OBJ[1], z, 1.0, 0.0, 0.0, 0.0]);
    x[14] = vx;
    x[15] = vy;
    x
}

/// Target for the object ball: 0.3 m beyond it along the line from the cue's start.
fn target() -> [f64; 2] {
    let n = (OBJ[0] * OBJ[0] + OBJ[1] * OBJ[1]).sqrt();
    [OBJ[0] + 0.3 * OBJ[0] / n, OBJ[1] + 0.3 * OBJ[1] / n]
}

fn rollout(cfd: Option<Cfd>) -> DiffRollout {
    let mode = Mode::ErrorControlled(CenicParams { accuracy: 1e-4, ..CenicParams::default() });
    DiffRollout::new(Arc::new(billiards()), mode, 0.1).with_cfd(cfd)
}

const CFD: Cfd = Cfd { width: 0.1, strength: 1.0 };

/// Loss |p_obj(T) − target| and its gradient w.r.t. the cue velocity
/// (vx, vy), through burn; also the trajectory values.
fn loss_and_grad(r: &DiffRollout, v: [f64; 2]) -> (f64, [f64; 2], Vec<f64>) {
    let device = Device::flex().autodiff();
    let opts = (&device, DType::F64);
    let x = initial_state(v[0], v[1]);
    let head = Tensor::<2>::from_data(TensorData::new(x[..14].to_vec(), [1, 14]), opts);
    let vel = Tensor::<2>::from_data(TensorData::new(v.to_vec(), [1, 2]), opts).require_grad();
    let tail = Tensor::<2>::from_data(TensorData::new(x[16..].to_vec(), [1, 10]), opts);
    let x0 = Tensor::cat(vec![head, vel.clone(), tail], 1);
    let traj = r.rollout(x0, None, None, NSTEPS).unwrap();
    let values: Vec<f64> = traj.to_data().iter::<f64>().collect();
    let t = target();
    let goal = Tensor::<2>::from_data(TensorData::new(t.to_vec(), [1, 2]), opts);
    let obj: Tensor<2> = traj.slice([0..1, NSTEPS..NSTEPS + 1, 7..9]).reshape([1, 2]);
    let loss = (obj - goal).powi_scalar(2).sum().sqrt();
    let l: f64 = loss.to_data().iter::<f64>().next().unwrap();
    let grads = loss.backward();
    let g: Vec<f64> = vel.grad(&grads).unwrap().to_data().iter::<f64>().collect();
    (l, [g[0], g[1]], values)
}

/// Largest displacement of the object ball along the trajectory (m).
fn object_moved(traj: &[f64]) -> f64 {
    (0..=NSTEPS)
        .map(|k| {
            let p = &traj[k * 26 + 7..k * 26 + 9];
            ((p[0] - OBJ[0]).powi(2) + (p[1] - OBJ[1]).powi(2)).sqrt()
        })
        .fold(0.0, f64::max)
}

#[test]
fn contacts_from_distance_give_gradients_toward_contact_without_changing_the_forward_pass() {
    let v = [1.0, 0.0];
    let (l0, g_off, traj_off) = loss_and_grad(&rollout(None), v);
    let (l_on, g_on, traj_on) = loss_and_grad(&rollout(Some(CFD)), v);
    eprintln!("miss: loss {l0:.4} m; gradient without CFD {g_off:?}, with CFD {g_on:?}");
    // The cue misses: the object ball stays put.
    assert!(object_moved(&traj_off) < 1e-4, "the cue should miss");
    // The forward pass is bit-identical with and without CFD.
    assert_eq!(l0.to_bits(), l_on.to_bits());
    assert!(traj_off.iter().zip(&traj_on).all(|(a, b)| a.to_bits() == b.to_bits()), "CFD changed the forward pass");
    // Without CFD the object ball does not depend on the cue at all.
    assert_eq!(g_off, [0.0, 0.0], "gradient without CFD must vanish");
    // With CFD the descent direction turns the cue toward the object ball (+y).
    assert!(
        g_on.iter().all(|g| g.is_finite()) && -g_on[1] > 0.0,
        "CFD gradient {g_on:?} does not point toward contact"
    );
    let aim = (-g_on[1]) / (g_on[0] * g_on[0] + g_on[1] * g_on[1]).sqrt();
    assert!(aim > 0.5, "descent direction mostly sideways toward the ball, got cos = {aim}");
}

#[test]
fn gradient_descent_with_cfd_makes_the_balls_collide_and_reduces_the_distance() {
    let r = rollout(Some(CFD));
    let mut v = [1.0, 0.0];
    let (l0, _, _) = loss_and_grad(&r, v);
    let mut hit_at = None;
    let mut last = l0;
    for it in 0..8 {
        let (l, g, traj) = loss_and_grad(&r, v);
        let moved = object_moved(&traj);
        eprintln!("iteration {it}: v = ({:.4}, {:.4}) m/s, loss {l:.4} m, object ball moved {moved:.4} m", v[0], v[1]);
        last = l;
        if moved > 0.01 {
            hit_at = Some(it);
            break;
        }
        // Normalised gradient step of 0.04 m/s.
        let n = (g[0] * g[0] + g[1] * g[1]).sqrt();
        assert!(n > 0.0 && n.is_finite());
        v = [v[0] - 0.04 * g[0] / n, v[1] - 0.04 * g[1] / n];
    }
    let it = hit_at.expect("gradient descent with CFD never made the balls collide");
    assert!(it > 0, "the balls collided before any step");
    assert!(last < l0, "distance to target did not decrease: {l0} → {last}");
}
