//! The eight gymnasium MJCF models load with MuJoCo's structure and mass
//! properties (fixtures from MuJoCo 4.0.0, `scripts/mujoco_fixtures.py`),
//! and our benchmark scenes load with the extension attributes mapped exactly.

mod common;
mod mujoco_fixture;

use cenic::model::{ActuatorKind, GeomKind, JointKind, Model, Semantics, SoftMaterial};
use mujoco_fixture as fx;

const GYM: [&str; 8] =
    ["ant", "half_cheetah", "humanoid", "inverted_double_pendulum", "inverted_pendulum", "point", "pusher", "reacher"];

fn load_gym(name: &str) -> Option<Model> {
    let path = common::shared_file(&format!("models/gymnasium/{name}.xml"))?;
    Some(Model::from_mjcf_file(&path).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// Principal moments, sorted (the order of principal axes is a convention).
fn sorted(mut v: [f64; 3]) -> [f64; 3] {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

fn geom_kind_name(k: GeomKind) -> &'static str {
    k.name()
}

#[test]
fn gymnasium_models_match_mujoco() {
    for name in GYM {
        let Some(m) = load_gym(name) else { continue };
        let fx = fx::load(name);
        let what = |s: &str| format!("{name}: {s}");
        assert_eq!(m.name, fx["model_name"].as_str().unwrap(), "{}", what("model name"));
        assert_eq!(m.bodies.len(), fx::u(&fx["nbody"]), "{}", what("nbody"));
        assert_eq!(m.nq, fx::u(&fx["nq"]), "{}", what("nq"));
        assert_eq!(m.nv, fx::u(&fx["nv"]), "{}", what("nv"));
        assert_eq!(m.nu(), fx::u(&fx["nu"]), "{}", what("nu"));
        assert_eq!(m.joints.len(), fx::u(&fx["njnt"]), "{}", what("njnt"));
        assert_eq!(m.geoms.len(), fx::u(&fx["ngeom"]), "{}", what("ngeom"));
        fx::close(m.options.timestep, fx::f(&fx["timestep"]), 0.0, &what("timestep"));
        assert_eq!(m.options.gravity, fx::arr::<3>(&fx["gravity"]), "{}", what("gravity"));

        // Bodies: tree, masses (1e-9 relative), centres of mass and principal inertias.
        fx::close_rel(m.total_mass(), fx::f(&fx["total_mass"]), 1e-9, &what("total mass"));
        let names = fx::strs(&fx["body_names"]);
        let parents = &fx["body_parent"];
        for (i, b) in m.bodies.iter().enumerate() {
            let w = |s: &str| what(&format!("body {i} '{}' {s}", b.name));
            assert_eq!(b.name, names[i], "{}", w("name"));
            assert_eq!(b.parent, fx::u(&parents[i]), "{}", w("parent"));
            let mass = fx::f(&fx["body_mass"][i]);
            if mass == 0.0 {
                assert_eq!(b.mass, 0.0, "{}", w("mass"));
            } else {
                fx::close_rel(b.mass, mass, 1e-9, &w("mass"));
            }
            for k in 0..3 {
                fx::close(b.pos[k], fx::f(&fx["body_pos"][i][k]), 1e-12, &w("pos"));
                fx::close(b.ipos[k], fx::f(&fx["body_ipos"][i][k]), 1e-9, &w("centre of mass"));
            }
            fx::close_quat(b.quat, fx::arr::<4>(&fx["body_quat"][i]), 1e-12, &w("quat"));
            let (ours, theirs) = (sorted(b.inertia), sorted(fx::arr::<3>(&fx["body_inertia"][i])));
            for k in 0..3 {
                fx::close(ours[k], theirs[k], 1e-9, &w("principal inertia"));
            }
        }

        // Joints.
        let types = fx::strs(&fx["jnt_type"]);
        let jnames = fx::strs(&fx["jnt_names"]);
        for (i, j) in m.joints.iter().enumerate() {
            let w = |s: &str| what(&format!("joint {i} '{}' {s}", j.name));
            assert_eq!(j.kind.name(), types[i], "{}", w("type"));
            assert_eq!(j.name, jnames[i], "{}", w("name"));
            assert_eq!(j.body, fx::u(&fx["jnt_body"][i]), "{}", w("body"));
            let limited = fx["jnt_limited"][i].as_bool().unwrap();
            assert_eq!(j.range.is_some(), limited, "{}", w("limited"));
            if let Some(r) = j.range {
                for k in 0..2 {
                    fx::close(r[k], fx::f(&fx["jnt_range"][i][k]), 1e-12, &w("range"));
                }
            }
            if j.kind != JointKind::Free {
                for k in 0..3 {
                    fx::close(j.pos[k], fx::f(&fx["jnt_pos"][i][k]), 1e-12, &w("pos"));
                    fx::close(j.axis[k], fx::f(&fx["jnt_axis"][i][k]), 1e-12, &w("axis"));
                }
            }
            fx::close(j.stiffness, fx::f(&fx["jnt_stiffness"][i]), 1e-12, &w("stiffness"));
            if matches!(j.kind, JointKind::Hinge | JointKind::Slide) {
                fx::close(j.springref, fx::f(&fx["qpos_spring"][j.qpos_adr]), 1e-12, &w("springref"));
            }
        }
        for (i, d) in m.dofs.iter().enumerate() {
            fx::close(d.armature, fx::f(&fx["dof_armature"][i]), 1e-12, &what(&format!("dof {i} armature")));
            fx::close(d.damping, fx::f(&fx["dof_damping"][i]), 1e-12, &what(&format!("dof {i} damping")));
        }
        let qpos0 = fx::vec(&fx["qpos0"]);
        for (i, q) in m.qpos0.iter().enumerate() {
            fx::close(*q, qpos0[i], 1e-12, &what(&format!("qpos0[{i}]")));
        }

        // Geoms: type, body, size, pose (fromto and orientation semantics), filters.
        let gtypes = fx::strs(&fx["geom_type"]);
        for (i, g) in m.geoms.iter().enumerate() {
            let w = |s: &str| what(&format!("geom {i} '{}' {s}", g.name));
            assert_eq!(geom_kind_name(g.kind), gtypes[i], "{}", w("type"));
            assert_eq!(g.body, fx::u(&fx["geom_body"][i]), "{}", w("body"));
            let nsize = match g.kind {
                GeomKind::Sphere => 1,
                GeomKind::Capsule | GeomKind::Cylinder => 2,
                _ => 3,
            };
            for k in 0..nsize {
                fx::close(g.size[k], fx::f(&fx["geom_size"][i][k]), 1e-12, &w("size"));
            }
            for k in 0..3 {
                fx::close(g.pos[k], fx::f(&fx["geom_pos"][i][k]), 1e-12, &w("pos"));
            }
            fx::close_quat(g.quat, fx::arr::<4>(&fx["geom_quat"][i]), 1e-12, &w("quat"));
            assert_eq!(g.contype as i64, fx["geom_contype"][i].as_i64().unwrap(), "{}", w("contype"));
            assert_eq!(g.conaffinity as i64, fx["geom_conaffinity"][i].as_i64().unwrap(), "{}", w("conaffinity"));
            fx::close(g.margin, fx::f(&fx["geom_margin"][i]), 1e-12, &w("margin"));
            // Sliding friction, except condim-1 geoms mapped to frictionless.
            let mu = fx::f(&fx["geom_friction"][i][0]);
            if fx::u(&fx["geom_condim"][i]) > 1 || g.material.mu_static != 0.0 {
                fx::close(g.material.mu_static, mu, 1e-12, &w("friction"));
            }
        }

        // Actuators (all gymnasium actuators are motors on joints).
        for (i, a) in m.actuators.iter().enumerate() {
            let w = |s: &str| what(&format!("actuator {i} {s}"));
            assert_eq!(a.joint, fx::u(&fx["actuator_joint"][i]), "{}", w("joint"));
            let ActuatorKind::Motor { gear, force_range } = a.kind else { panic!("{}", w("kind")) };
            fx::close(gear, fx::f(&fx["actuator_gear"][i]), 1e-12, &w("gear"));
            assert_eq!(force_range, None, "{}", w("force range"));
            let limited = fx["actuator_ctrllimited"][i].as_bool().unwrap();
            assert_eq!(a.ctrl_range.is_some(), limited, "{}", w("ctrllimited"));
            if let Some(r) = a.ctrl_range {
                assert_eq!(r, fx::arr::<2>(&fx["actuator_ctrlrange"][i]), "{}", w("ctrlrange"));
            }
        }
        eprintln!("{name}: {} warning(s)", m.warnings.len());
        for w in &m.warnings {
            eprintln!("  {w}");
        }
    }
}

#[test]
fn gymnasium_warnings_are_the_expected_ones() {
    // Every MuJoCo setting without a cenic counterpart is reported.
    let Some(h) = load_gym("humanoid") else { return };
    assert_eq!(h.options.semantics, Semantics::MuJoCo, "gymnasium models get MuJoCo's semantics");
    let all = h.warnings.join("\n");
    // MuJoCo's integrator is read (MuJoCo's own step uses it), its solver settings are not.
    assert_eq!(h.options.integrator, cenic::model::Integrator::Rk4);
    assert!(!all.contains("integrator=") && all.contains("solver=\"PGS\""), "{all}");
    // MuJoCo's semantics combine condim per pair: no warning, the limbs keep
    // their friction against the condim-3 floor.
    assert!(!all.contains("condim=\"1\""), "{all}");
    let foot = h.geom_id("right_foot").unwrap();
    let floor = h.geom_id("floor").unwrap();
    let pair = SoftMaterial::combine(&h.geoms[foot].material.soft.unwrap(), &h.geoms[floor].material.soft.unwrap());
    assert_eq!((pair.condim, pair.friction[0]), (3, 1.0));
    // With cenic's physical law, friction is per geom: the humanoid's limbs
    // keep friction 1 against the condim-3 floor (MuJoCo uses condim 3
    // there), with a warning that says so.
    let Some(dir) = common::shared_file("models/gymnasium") else { return };
    let h = Model::from_mjcf_file_as(dir.join("humanoid.xml"), Semantics::Physical).unwrap();
    let all = h.warnings.join("\n");
    assert!(all.contains("condim=\"1\"") && all.contains("'right_foot'"), "{all}");
    assert_eq!(h.geoms[foot].material.mu_static, 1.0);
    // Frictionless where every partner is frictionless too: pusher's condim-1 arm touches nothing
    // with condim 3 (its collidable geoms all have condim 1).
    let p = Model::from_mjcf_file_as(dir.join("pusher.xml"), Semantics::Physical).unwrap();
    for g in &p.geoms {
        assert_eq!(g.material.mu_static, 0.0, "pusher geom '{}'", g.name);
    }
}

#[test]
fn contact_mapping_from_solref() {
    // half_cheetah: solref 0.02 1, solimp d0 = 0 (clamped to 1e-4), timestep 0.01 → τ = 0.02.
    let Some(m) = load_gym("half_cheetah") else { return };
    let tree = m.total_mass(); // one tree: every body below the torso
    let k = tree / ((1.0 - 1e-4) * 0.02 * 0.02);
    let d = 2.0 * (k / tree).sqrt() / 9.81;
    for g in &m.geoms {
        if g.body == 0 {
            assert_eq!(g.material.stiffness, f64::INFINITY, "{}", g.name);
        } else {
            assert!((g.material.stiffness - k).abs() <= 1e-12 * k, "{}: {} vs {k}", g.name, g.material.stiffness);
            assert!((g.material.dissipation - d).abs() <= 1e-12 * d, "{}: {}", g.name, g.material.dissipation);
            assert_eq!(g.material.mu_static, 0.4);
            assert_eq!(g.material.mu_dynamic, 0.4);
        }
    }
}

#[test]
fn cube_toss_scene_maps_extensions_exactly() {
    let Some(path) = common::shared_file("scenes/cube_toss.xml") else { return };
    let m = Model::from_mjcf_file(&path).unwrap();
    assert_eq!(m.name, "cube_toss");
    assert_eq!((m.nq, m.nv, m.nu(), m.bodies.len(), m.geoms.len()), (7, 6, 0, 2, 2));
    assert_eq!(m.options.stiction_tolerance, 1e-4);
    assert_eq!(m.options.gravity, [0.0, 0.0, -9.81]);
    for g in &m.geoms {
        assert_eq!(g.material.stiffness, 2e5, "{}", g.name);
        assert_eq!(g.material.dissipation, 10.0, "{}", g.name);
        assert_eq!(g.material.mu_static, 0.18, "{}", g.name);
        assert_eq!(g.material.mu_dynamic, 0.18, "{}", g.name);
    }
    let ground = &m.geoms[m.geom_id("ground").unwrap()];
    assert_eq!((ground.kind, ground.body), (GeomKind::Plane, 0));
    let cube = &m.bodies[m.body_id("cube").unwrap()];
    assert_eq!(cube.mass, 0.37);
    let i = 0.37 * (0.1f64 * 0.1 + 0.1 * 0.1) / 12.0;
    for x in cube.inertia {
        assert!((x - i).abs() < 1e-15, "{:?}", cube.inertia);
    }
    assert_eq!(m.joints[0].kind, JointKind::Free);
    assert_eq!(m.qpos0, vec![0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0]);
    let k = m.keyframe("toss").unwrap();
    assert_eq!(k.qpos, vec![0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0]);
    assert_eq!(k.qvel, vec![1.0, 0.0, 0.0, 0.0, 5.0, 3.0]);
    assert_eq!(k.time, 0.0);
    assert!(k.ctrl.is_empty());
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn clutter_scene_maps_extensions_exactly() {
    let Some(path) = common::shared_file("scenes/clutter20.xml") else { return };
    let m = Model::from_mjcf_file(&path).unwrap();
    assert_eq!((m.bodies.len(), m.geoms.len(), m.nq, m.nv), (21, 25, 140, 120));
    assert_eq!(m.options.stiction_tolerance, 1e-4);
    for g in &m.geoms {
        assert_eq!(
            (g.material.stiffness, g.material.dissipation, g.material.mu_static, g.material.mu_dynamic),
            (2e5, 10.0, 0.5, 0.5),
            "{}",
            g.name
        );
    }
    let statics = m.geoms.iter().filter(|g| g.body == 0).count();
    assert_eq!(statics, 5);
    for b in &m.bodies[1..] {
        let index: usize = b.name[3..].parse().unwrap();
        // Even objects are spheres, odd ones cubes (masses as written in the scene).
        #[allow(clippy::approx_constant)]
        let expected = if index.is_multiple_of(2) { 0.523598776 } else { 0.512 };
        assert_eq!(b.mass, expected, "{}", b.name);
    }
    // Body poses are the free joints' initial positions, quaternions normalised.
    let b9 = m.body_id("obj09").unwrap();
    let j = &m.joints[m.bodies[b9].jnt_adr];
    assert_eq!(&m.qpos0[j.qpos_adr..j.qpos_adr + 3], &[0.104760887, -0.103312205, 0.4]);
    let q = &m.qpos0[j.qpos_adr + 3..j.qpos_adr + 7];
    assert!((q.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-15);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}
