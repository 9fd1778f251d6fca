//! Shared ICF test problems: a free box on the ground and a two-joint
//! position-servo arm with limits, with hand-made contacts of every kind.

use super::Rng;
use cenic::collision::Contact;
use cenic::dynamics::{self, Data};
use cenic::icf::{Actuation, IcfBuilder, IcfProblem, MaterialScale};
use cenic::math::Vec3;
use cenic::model::{
    Actuator, ActuatorKind, BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Material, Model,
    ModelBuilder, SoftMaterial, WORLD,
};

/// A free box on the ground and a two-joint position-servo arm with limits.
pub fn scene() -> Model {
    let mut b = ModelBuilder::new("icf_scene");
    b.add_geom(GeomSpec::new("ground", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD));
    let bx = b.add_body(BodySpec::new("box", WORLD, [0.0, 0.0, 0.05]));
    b.add_joint(JointSpec::new("box_free", JointKind::Free, bx));
    b.add_geom(GeomSpec { mass: Some(0.5), ..GeomSpec::new("box_geom", GeomKind::Box, [0.05, 0.05, 0.05], bx) });
    let l1 = b.add_body(BodySpec {
        inertial: Some(Inertial {
            mass: 1.0,
            pos: [0.0, 0.0, -0.1],
            quat: [1.0, 0.0, 0.0, 0.0],
            diag: [0.01, 0.01, 0.002],
        }),
        ..BodySpec::new("l1", WORLD, [0.3, 0.0, 0.4])
    });
    b.add_joint(JointSpec {
        axis: [0.0, 1.0, 0.0],
        range: Some([-0.5, 0.5]),
        damping: 0.3,
        armature: 0.01,
        ..JointSpec::new("j1", JointKind::Hinge, l1)
    });
    let l2 = b.add_body(BodySpec {
        inertial: Some(Inertial {
            mass: 0.5,
            pos: [0.0, 0.0, -0.1],
            quat: [1.0, 0.0, 0.0, 0.0],
            diag: [0.005, 0.005, 0.001],
        }),
        ..BodySpec::new("l2", l1, [0.0, 0.0, -0.2])
    });
    b.add_joint(JointSpec {
        axis: [1.0, 0.0, 0.0],
        range: Some([-1.0, 1.0]),
        ..JointSpec::new("j2", JointKind::Hinge, l2)
    });
    b.add_geom(GeomSpec::new("tip", GeomKind::Sphere, [0.03, 0.0, 0.0], l2));
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
        ctrl_range: None,
    });
    b.build().unwrap()
}

pub fn material(k: f64, d: f64, mus: f64, mud: f64) -> Material {
    Material { stiffness: k, dissipation: d, mu_static: mus, mu_dynamic: mud, soft: None }
}

/// Builds a problem at a random state with hand-made contacts of every kind.
pub fn random_problem(model: &Model, rng: &mut Rng, h: f64, box_at_rest: bool) -> (IcfProblem<f64>, Data<f64>) {
    random_problem_with(model, rng, h, box_at_rest, false)
}

/// MuJoCo's contact parameters for the hand-made contacts: frictional
/// (condim 3) or frictionless, with a margin and gap.
fn soft_material(condim: u8, mu: f64, margin: f64, gap: f64) -> Option<SoftMaterial> {
    Some(SoftMaterial { condim, friction: [mu, 0.8 * mu, 0.0, 0.0, 0.0], margin, gap, ..Default::default() })
}

/// [`random_problem`], with MuJoCo's soft contacts when `soft` (the model's
/// semantics decides the limits).
pub fn random_problem_with(
    model: &Model,
    rng: &mut Rng,
    h: f64,
    box_at_rest: bool,
    soft: bool,
) -> (IcfProblem<f64>, Data<f64>) {
    let mut data = Data::<f64>::new(model);
    // Box slightly penetrating, arm near/over its limits.
    data.q[0..3].copy_from_slice(&[rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), 0.049]);
    data.q[3..7].copy_from_slice(&[1.0, 0.0, 0.0, 0.0]);
    data.q[7] = rng.range(-0.55, 0.55);
    data.q[8] = rng.range(-1.05, 1.05);
    for v in data.v.iter_mut() {
        *v = 0.3 * rng.normal();
    }
    if box_at_rest {
        // Slip far below the stiction tolerance: the sticking regime.
        for v in data.v[0..6].iter_mut() {
            *v = 1e-6 * rng.normal();
        }
    }
    dynamics::kinematics(model, &mut data);
    dynamics::velocities(model, &mut data);
    dynamics::mass_matrix(model, &mut data);
    dynamics::bias_forces(model, &mut data);
    dynamics::passive_forces(model, &mut data);
    let z = Vec3::new(0.0, 0.0, 1.0);
    let mut contacts = vec![];
    // Four box corners on the ground: penetrating, touching, separated inside the margin.
    let phis = [-1e-3, -2e-4, 0.0, 4e-4];
    for (i, (dx, dy)) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)].into_iter().enumerate() {
        let corner = data.xpos[1] + Vec3::new(0.05 * dx, 0.05 * dy, -0.05);
        contacts.push(Contact {
            geom: [0, 1],
            body: [0, 1],
            pos: corner,
            normal: z,
            dist: phis[i],
            feature: [0, i as u32],
            material: Material {
                soft: if soft {
                    soft_material([3, 3, 1, 3][i], 0.6, [0.0, 1e-3, 0.0, 1e-3][i], [0.0, 5e-4, 0.0, 0.0][i])
                } else {
                    None
                },
                ..material(1e5, 10.0, 0.6, 0.3)
            },
        });
    }
    // Arm tip against the box side (both bodies dynamic), tilted normal.
    let n = Vec3::new(-0.9, 0.1, 0.3).normalize();
    contacts.push(Contact {
        geom: [1, 2],
        body: [1, 3],
        pos: data.xpos[3] + Vec3::new(0.0, 0.0, -0.1),
        normal: n,
        dist: -5e-4,
        feature: [0, 0],
        material: Material {
            soft: if soft { soft_material(3, 0.8, 0.0, 0.0) } else { None },
            ..material(3e4, 0.5, 0.8, 0.5)
        },
    });
    let ctrl = [rng.range(-0.6, 0.6), rng.range(-1.2, 1.2)];
    let vref = [rng.normal(), 0.0];
    let mut p = IcfProblem::new(model.nv);
    let mut builder = IcfBuilder::new(model);
    builder.build(
        model,
        &data,
        &contacts,
        Actuation { ctrl: &ctrl, target_velocity: &vref, applied: &[] },
        &MaterialScale::default(),
        &mut p,
    );
    p.set_time_step(h);
    (p, data)
}
