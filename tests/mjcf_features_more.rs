//! MJCF features of MuJoCo 4.0 that public robot models use, checked
//! against MuJoCo through the fixtures of `scripts/mujoco_mjcf_features.py`
//! (`tests/fixtures/mujoco/features_more/`): `<mujocoinclude>` roots,
//! massless bodies, joint `springdamper`, `<frame>` and `<replicate>`
//! (sizes, names in MuJoCo's order, the body tree with poses and masses,
//! joint, geom and site poses, stiffness and damping, actuator, tendon,
//! sensor and contact-pair targets), height-field models (the static body
//! holding a field gets MuJoCo's box mass), and the models MuJoCo refuses.

mod mujoco_fixture;

use cenic::model::{ActuatorKind, Model, SensorKind, SpatialElement, TendonPath, Transmission};
use mujoco_fixture as fx;
use serde_json::Value;
use std::path::PathBuf;

fn model_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/models/features").join(rel)
}

fn load(name: &str) -> (Model, Value) {
    let m = Model::from_mjcf_file(model_path(&format!("{name}.xml"))).unwrap_or_else(|e| panic!("{name}: {e}"));
    (m, fx::load_from("mujoco/features_more", name))
}

fn close3(a: [f64; 3], b: [f64; 3], tol: f64, what: &str) {
    for k in 0..3 {
        fx::close(a[k], b[k], tol, &format!("{what}[{k}]"));
    }
}

/// The joint or tendon an actuator drives, as (kind, name).
fn actuator_target(m: &Model, a: usize) -> (String, String) {
    let act = &m.actuators[a];
    match &act.kind {
        ActuatorKind::General(g) => match g.transmission {
            Transmission::Joint(j) => ("joint".into(), m.joints[j].name.clone()),
            Transmission::Tendon(t) => ("tendon".into(), m.tendons[t].name.clone()),
            Transmission::Site(s) => ("site".into(), m.sites[s].name.clone()),
        },
        _ => ("joint".into(), m.joints[act.joint].name.clone()),
    }
}

/// Everything the fixture records, compared.
fn check_structure(name: &str, m: &Model, fx: &Value) {
    let w = |s: &str| format!("{name}: {s}");
    assert_eq!(m.nq, fx::u(&fx["nq"]), "{}", w("nq"));
    assert_eq!(m.nv, fx::u(&fx["nv"]), "{}", w("nv"));
    assert_eq!(m.nu(), fx::u(&fx["nu"]), "{}", w("nu"));
    assert_eq!(m.bodies.len(), fx::u(&fx["nbody"]), "{}", w("nbody"));
    assert_eq!(m.joints.len(), fx::u(&fx["njnt"]), "{}", w("njnt"));
    assert_eq!(m.geoms.len(), fx::u(&fx["ngeom"]), "{}", w("ngeom"));
    assert_eq!(m.sites.len(), fx::u(&fx["nsite"]), "{}", w("nsite"));
    assert_eq!(m.tendons.len(), fx::u(&fx["ntendon"]), "{}", w("ntendon"));
    assert_eq!(m.equalities.len(), fx::u(&fx["neq"]), "{}", w("neq"));
    assert_eq!(m.pairs.len(), fx::u(&fx["npair"]), "{}", w("npair"));
    assert_eq!(m.excludes.len(), fx::u(&fx["nexclude"]), "{}", w("nexclude"));
    assert_eq!(m.sensors.len(), fx::u(&fx["nsensor"]), "{}", w("nsensor"));
    assert_eq!(m.nsensordata, fx::u(&fx["nsensordata"]), "{}", w("nsensordata"));
    fx::close_rel(m.total_mass(), fx::f(&fx["total_mass"]), 1e-12, &w("total mass"));
    let names = |v: Vec<&String>| v.into_iter().cloned().collect::<Vec<_>>();
    let bodies: Vec<String> =
        m.bodies.iter().enumerate().map(|(i, b)| if i == 0 { "world".into() } else { b.name.clone() }).collect();
    assert_eq!(bodies, fx::strs(&fx["body_names"]), "{}", w("body names"));
    assert_eq!(names(m.joints.iter().map(|j| &j.name).collect()), fx::strs(&fx["jnt_names"]), "{}", w("joints"));
    assert_eq!(names(m.geoms.iter().map(|g| &g.name).collect()), fx::strs(&fx["geom_names"]), "{}", w("geoms"));
    assert_eq!(names(m.sites.iter().map(|s| &s.name).collect()), fx::strs(&fx["site_names"]), "{}", w("sites"));
    assert_eq!(names(m.tendons.iter().map(|t| &t.name).collect()), fx::strs(&fx["tendon_names"]), "{}", w("tendons"));
    assert_eq!(
        names(m.actuators.iter().map(|a| &a.name).collect()),
        fx::strs(&fx["actuator_names"]),
        "{}",
        w("actuators")
    );
    assert_eq!(names(m.sensors.iter().map(|s| &s.name).collect()), fx::strs(&fx["sensor_names"]), "{}", w("sensors"));
    for (i, b) in m.bodies.iter().enumerate().skip(1) {
        let what = |s: &str| w(&format!("body '{}' {s}", b.name));
        assert_eq!(b.parent, fx::u(&fx["body_parent"][i]), "{}", what("parent"));
        fx::close(b.mass, fx::f(&fx["body_mass"][i]), 1e-12, &what("mass"));
        let mut mine = b.inertia;
        let mut theirs = fx::arr::<3>(&fx["body_inertia"][i]);
        mine.sort_by(f64::total_cmp);
        theirs.sort_by(f64::total_cmp);
        close3(mine, theirs, 1e-12, &what("inertia"));
        close3(b.ipos, fx::arr::<3>(&fx["body_ipos"][i]), 1e-12, &what("ipos"));
        close3(b.pos, fx::arr::<3>(&fx["body_pos"][i]), 1e-12, &what("pos"));
        fx::close_quat(b.quat, fx::arr::<4>(&fx["body_quat"][i]), 1e-12, &what("quat"));
    }
    for (i, j) in m.joints.iter().enumerate() {
        let what = |s: &str| w(&format!("joint '{}' {s}", j.name));
        assert_eq!(j.body, fx::u(&fx["jnt_body"][i]), "{}", what("body"));
        close3(j.pos, fx::arr::<3>(&fx["jnt_pos"][i]), 1e-12, &what("pos"));
        if matches!(j.kind, cenic::model::JointKind::Hinge | cenic::model::JointKind::Slide) {
            close3(j.axis, fx::arr::<3>(&fx["jnt_axis"][i]), 1e-12, &what("axis"));
        }
        fx::close_rel(j.stiffness, fx::f(&fx["jnt_stiffness"][i]), 1e-9, &what("stiffness"));
    }
    for (i, d) in m.dofs.iter().enumerate() {
        let what = |s: &str| w(&format!("dof {i} {s}"));
        fx::close(d.damping, fx::f(&fx["dof_damping"][i]), 1e-9, &what("damping"));
        fx::close(d.invweight0, fx::f(&fx["dof_invweight0"][i]), 1e-9, &what("invweight0"));
    }
    for (i, x) in m.qpos0.iter().enumerate() {
        fx::close(*x, fx::f(&fx["qpos0"][i]), 1e-12, &w(&format!("qpos0[{i}]")));
    }
    for (i, g) in m.geoms.iter().enumerate() {
        let what = |s: &str| w(&format!("geom {i} '{}' {s}", g.name));
        assert_eq!(g.body, fx::u(&fx["geom_body"][i]), "{}", what("body"));
        close3(g.pos, fx::arr::<3>(&fx["geom_pos"][i]), 1e-12, &what("pos"));
        fx::close_quat(g.quat, fx::arr::<4>(&fx["geom_quat"][i]), 1e-12, &what("quat"));
    }
    for (i, s) in m.sites.iter().enumerate() {
        let what = |t: &str| w(&format!("site '{}' {t}", s.name));
        assert_eq!(s.body, fx::u(&fx["site_body"][i]), "{}", what("body"));
        close3(s.pos, fx::arr::<3>(&fx["site_pos"][i]), 1e-12, &what("pos"));
        fx::close_quat(s.quat, fx::arr::<4>(&fx["site_quat"][i]), 1e-12, &what("quat"));
    }
    for (t, tendon) in m.tendons.iter().enumerate() {
        let path: Vec<(String, String)> = match &tendon.path {
            TendonPath::Fixed(js) => js.iter().map(|(j, _)| ("joint".into(), m.joints[*j].name.clone())).collect(),
            TendonPath::Spatial(es) => es
                .iter()
                .map(|e| match e {
                    SpatialElement::Site(s) => ("site".into(), m.sites[*s].name.clone()),
                    SpatialElement::Pulley { .. } => ("pulley".into(), String::new()),
                })
                .collect(),
        };
        let want: Vec<(String, String)> = fx["tendon_paths"][t]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_str().unwrap().to_string()))
            .collect();
        assert_eq!(path, want, "{}", w(&format!("tendon '{}' path", tendon.name)));
    }
    for a in 0..m.nu() {
        let want = &fx["actuator_targets"][a];
        let (kind, target) = actuator_target(m, a);
        let kind = if kind == "joint" && want[0] == "jointinparent" { "jointinparent".to_string() } else { kind };
        assert_eq!(
            (kind.as_str(), target.as_str()),
            (want[0].as_str().unwrap(), want[1].as_str().unwrap()),
            "{}",
            w(&format!("actuator {a} target"))
        );
    }
    for (s, sensor) in m.sensors.iter().enumerate() {
        let object = match &sensor.kind {
            SensorKind::JointPos(j) | SensorKind::JointVel(j) => Some(m.joints[*j].name.clone()),
            SensorKind::Touch(site) | SensorKind::Accelerometer(site) => Some(m.sites[*site].name.clone()),
            SensorKind::ActuatorFrc(a) => Some(m.actuators[*a].name.clone()),
            _ => None,
        };
        if let Some(o) = object {
            assert_eq!(o, fx::strs(&fx["sensor_objects"])[s], "{}", w(&format!("sensor {s} object")));
        }
    }
    let mut pairs: Vec<Vec<String>> = m
        .pairs
        .iter()
        .map(|p| {
            let mut v = vec![m.geoms[p.geom[0]].name.clone(), m.geoms[p.geom[1]].name.clone()];
            v.sort();
            v
        })
        .collect();
    let mut want: Vec<Vec<String>> = fx["pair_geoms"].as_array().unwrap().iter().map(fx::strs).collect();
    pairs.sort();
    want.sort();
    assert_eq!(pairs, want, "{}", w("contact pairs"));
    let body_name = |b: usize| if b == 0 { "world".to_string() } else { m.bodies[b].name.clone() };
    let mut excludes: Vec<Vec<String>> = m
        .excludes
        .iter()
        .map(|e| {
            let mut v = vec![body_name(e[0]), body_name(e[1])];
            v.sort();
            v
        })
        .collect();
    let mut want: Vec<Vec<String>> = fx["excludes"].as_array().unwrap().iter().map(fx::strs).collect();
    excludes.sort();
    want.sort();
    assert_eq!(excludes, want, "{}", w("excludes"));
}

#[test]
fn mujocoinclude_roots_load_like_mujoco() {
    let (m, f) = load("mujocoinclude");
    check_structure("mujocoinclude", &m, &f);
}

#[test]
fn massless_bodies_load_like_mujoco() {
    let (m, f) = load("massless");
    check_structure("massless", &m, &f);
    // The massless frames are bodies of their own, welded to the chassis.
    for name in ["camera_frame", "imu_frame", "tool_frame"] {
        let b = &m.bodies[m.body_id(name).unwrap()];
        assert_eq!((b.mass, b.jnt_num), (0.0, 0), "{name}");
    }
}

#[test]
fn springdamper_sets_stiffness_and_damping_like_mujoco() {
    let (m, f) = load("springdamper");
    check_structure("springdamper", &m, &f);
    // springdamper overrides the joint's own stiffness and damping.
    let hinge = &m.joints[m.joint_id("hinge").unwrap()];
    assert!(hinge.stiffness != 3.0 && hinge.damping != 2.0);
    assert!(m.warnings.iter().any(|w| w.contains("'ball'") && w.contains("springdamper")), "{:?}", m.warnings);
}

#[test]
fn frames_load_like_mujoco() {
    let (m, f) = load("frame");
    check_structure("frame", &m, &f);
}

#[test]
fn replicate_loads_like_mujoco() {
    let (m, f) = load("replicate");
    check_structure("replicate", &m, &f);
}

#[test]
fn height_field_models_load_like_mujoco() {
    for name in ["hfield_bumps", "hfield_files"] {
        let (m, f) = load(name);
        check_structure(name, &m, &f);
        assert_eq!(m.hfields.len(), fx::u(&f["nhfield"]), "{name}");
    }
}

/// The models MuJoCo refuses (its messages are in the fixture) are refused,
/// naming the element, its line and what is wrong.
#[test]
fn refusals_match_mujoco() {
    let f = fx::load_from("mujoco/features_more", "refused");
    let want = [
        ("massless_moving.xml", 6usize, "joint name=\"swing\"", "no mass or inertia"),
        ("point_mass_slide.xml", 6, "joint name=\"slide\"", "no mass or inertia"),
        ("springdamper_negative.xml", 4, "joint name=\"hinge\"", "springdamper"),
    ];
    for (file, line, element, text) in want {
        assert!(f["models"][file]["refused"].as_bool().unwrap(), "MuJoCo accepts {file}");
        let e = Model::from_mjcf_file(model_path(&format!("refused/{file}"))).expect_err(file).to_string();
        assert!(e.contains(&format!("{file}:{line}:")) && e.contains(element) && e.contains(text), "{file}: {e}");
    }
}
