//! dm_control's suite models that need height fields and `springdamper`:
//! the quadruped (a height-field floor) and the dog (springdamper on its
//! joint defaults, 1,600 mesh files). They are not part of the project: set
//! `CENIC_DM_CONTROL` to dm_control's `dm_control/suite` folder to run these
//! tests (they skip with a message otherwise). Each loads with MuJoCo 4.0.0's
//! sizes (the quadruped also with its masses, stiffness and damping; fixtures
//! of `scripts/mujoco_mjcf_features.py` run with `CENIC_DM_CONTROL`, in
//! `tests/fixtures/mujoco/features_more/`) and simulates 1 s under CENIC from
//! its initial state, staying finite and on the floor.

mod mujoco_fixture;

use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::{GeomKind, Model};
use mujoco_fixture as fx;
use std::path::PathBuf;
use std::sync::Arc;

fn suite() -> Option<PathBuf> {
    match std::env::var_os("CENIC_DM_CONTROL") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            eprintln!("SKIPPED: set CENIC_DM_CONTROL to dm_control's dm_control/suite folder");
            None
        }
    }
}

/// Loads `name`.xml from the suite and checks it against MuJoCo's sizes;
/// with `masses`, also the masses, joint stiffness and dof damping.
fn load(name: &str, masses: bool) -> Option<Model> {
    let dir = suite()?;
    let m = Model::from_mjcf_file(dir.join(format!("{name}.xml"))).unwrap_or_else(|e| panic!("{name}: {e}"));
    let f = fx::load_from("mujoco/features_more", &format!("dm_control_{name}"));
    assert_eq!((m.nq, m.nv, m.nu()), (fx::u(&f["nq"]), fx::u(&f["nv"]), fx::u(&f["nu"])), "{name}: nq, nv, nu");
    assert_eq!((m.bodies.len(), m.geoms.len()), (fx::u(&f["nbody"]), fx::u(&f["ngeom"])), "{name}: bodies, geoms");
    if masses {
        fx::close_rel(m.total_mass(), fx::f(&f["total_mass"]), 1e-9, &format!("{name}: total mass"));
        for (i, b) in m.bodies.iter().enumerate() {
            fx::close(b.mass, fx::f(&f["body_mass"][i]), 1e-9, &format!("{name}: body {i} '{}' mass", b.name));
        }
        for (j, joint) in m.joints.iter().enumerate() {
            let what = format!("{name}: joint '{}' stiffness", joint.name);
            fx::close(joint.stiffness, fx::f(&f["jnt_stiffness"][j]), 1e-9, &what);
        }
        for (i, d) in m.dofs.iter().enumerate() {
            fx::close(d.damping, fx::f(&f["dof_damping"][i]), 1e-9, &format!("{name}: dof {i} damping"));
        }
    }
    Some(m)
}

/// Simulates `m` for 1 s under CENIC from qpos0; returns the final positions.
fn simulate(name: &str, m: Model) -> (Arc<Model>, Vec<f64>) {
    let m = Arc::new(m);
    let mut world = World::<f64>::new(m.clone(), Mode::ErrorControlled(CenicParams::default()));
    let start = std::time::Instant::now();
    world.advance(1.0).unwrap_or_else(|e| panic!("{name}: {}", e.describe(&m)));
    let q = world.sim.data.q.clone();
    assert!(q.iter().chain(&world.sim.data.v).all(|x| x.is_finite()), "{name}: state not finite");
    eprintln!("{name}: 1 s simulated in {:.2?} ({} steps)", start.elapsed(), world.stats.accepted);
    (m, q)
}

#[test]
fn quadruped_with_height_field_floor_loads_and_simulates() {
    let Some(m) = load("quadruped", true) else { return };
    let (m, q) = simulate("quadruped", m);
    assert!(m.geoms.iter().any(|g| g.kind == GeomKind::Hfield), "the floor is a height field");
    // The torso's free joint: it has fallen onto the floor, not through it.
    let root = &m.joints[0];
    let z = q[root.qpos_adr + 2];
    assert!(z > 0.2 && z < 1.0, "torso height {z} m after 1 s");
}

#[test]
fn dog_with_springdamper_loads_and_simulates() {
    // The dog's bones are non-convex meshes: MuJoCo's default mesh inertia
    // ("legacy") differs from cenic's convex-hull inertia, so its masses do
    // not match MuJoCo's (10.30 kg in MuJoCo, 11.73 in cenic); its sizes do.
    let Some(m) = load("dog", false) else { return };
    // springdamper (the caudal joints): MuJoCo's formula on cenic's effective masses.
    let mut springs = 0;
    for j in m.joints.iter().filter(|j| j.name.starts_with("Ca_")) {
        let w = m.dofs[j.dof_adr].invweight0;
        let (tc, ratio) = (0.001f64, 50.0f64);
        fx::close_rel(j.stiffness, 1.0 / w / (tc * tc * ratio * ratio), 1e-12, &format!("'{}' stiffness", j.name));
        fx::close_rel(j.damping, 2.0 / w / tc, 1e-12, &format!("'{}' damping", j.name));
        springs += 1;
    }
    assert!(springs > 10, "{springs} caudal joints");
    let (m, q) = simulate("dog", m);
    let z = q[m.joints[0].qpos_adr + 2];
    assert!(z > 0.1 && z < 1.5, "root height {z} m after 1 s");
}
