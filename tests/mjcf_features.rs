//! MJCF features as public model collections use them:
//! includes, option flags, contact filtering, general actuators with
//! activation states, fixed and spatial tendons, equality constraints,
//! sensors, fluid forces and friction loss. Each model under
//! `tests/models/features/` is compared with MuJoCo 4.0.0 through the
//! fixtures of `scripts/mujoco_fixtures.py` (`tests/fixtures/mujoco/features/`):
//! sizes and masses, effective masses, compiled actuator parameters,
//! kinematic quantities at random states (tendon lengths and Jacobians,
//! actuator moments and forces, equality rows, fluid forces, contact pairs,
//! sensors) and contact-free trajectories (MuJoCo RK4 at 0.1 ms).

mod mujoco_fixture;

use cenic::collision::{Contacts, collide};
use cenic::dynamics::{self, Data};
use cenic::icf::{Actuation, IcfBuilder, IcfProblem, MaterialScale};
use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::{ActuatorKind, EqualityKind, Model};
use mujoco_fixture as fx;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

const FEATURES: [&str; 11] = [
    "actuators",
    "contact_filter",
    "contact_filter_noparent",
    "equality",
    "fluid",
    "frictionloss",
    "includes",
    "sensors",
    "tendons",
    "flags",
    "tendon_limit",
];

fn model_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/models").join(rel)
}

fn load(name: &str) -> (Model, Value) {
    let m =
        Model::from_mjcf_file(model_path(&format!("features/{name}.xml"))).unwrap_or_else(|e| panic!("{name}: {e}"));
    (m, fx::load(&format!("features/features_{name}")))
}

/// Sizes, masses, effective masses and rest lengths as MuJoCo compiles them.
#[test]
fn structure_matches_mujoco() {
    for name in FEATURES {
        let (m, fx) = load(name);
        check_structure(name, &m, &fx);
    }
}

fn check_structure(name: &str, m: &Model, fx: &Value) {
    {
        let w = |s: &str| format!("{name}: {s}");
        assert_eq!(m.nq, fx::u(&fx["nq"]), "{}", w("nq"));
        assert_eq!(m.nv, fx::u(&fx["nv"]), "{}", w("nv"));
        assert_eq!(m.nu(), fx::u(&fx["nu"]), "{}", w("nu"));
        assert_eq!(m.na, fx::u(&fx["na"]), "{}", w("na"));
        assert_eq!(m.bodies.len(), fx::u(&fx["nbody"]), "{}", w("nbody"));
        assert_eq!(m.tendons.len(), fx::u(&fx["ntendon"]), "{}", w("ntendon"));
        assert_eq!(m.equalities.len(), fx::u(&fx["neq"]), "{}", w("neq"));
        assert_eq!(m.pairs.len(), fx::u(&fx["npair"]), "{}", w("npair"));
        assert_eq!(m.excludes.len(), fx::u(&fx["nexclude"]), "{}", w("nexclude"));
        assert_eq!(m.nsensordata, fx::u(&fx["nsensordata"]), "{}", w("nsensordata"));
        fx::close_rel(m.total_mass(), fx::f(&fx["total_mass"]), 1e-12, &w("total mass"));
        for (i, b) in m.bodies.iter().enumerate() {
            fx::close(b.mass, fx::f(&fx["body_mass"][i]), 1e-12, &w(&format!("body {i} mass")));
            for k in 0..2 {
                let want = fx::f(&fx["body_invweight0"][i][k]);
                fx::close(b.invweight0[k], want, 1e-9, &w(&format!("body {i} invweight0[{k}]")));
            }
        }
        for (i, d) in m.dofs.iter().enumerate() {
            fx::close(d.invweight0, fx::f(&fx["dof_invweight0"][i]), 1e-9, &w(&format!("dof {i} invweight0")));
        }
        for (i, t) in m.tendons.iter().enumerate() {
            fx::close(t.invweight0, fx::f(&fx["tendon_invweight0"][i]), 1e-9, &w(&format!("tendon {i} invweight0")));
            fx::close(t.length0, fx::f(&fx["tendon_length0"][i]), 1e-12, &w(&format!("tendon {i} length0")));
        }
        for (i, s) in m.sensors.iter().enumerate() {
            assert_eq!(s.adr, fx::u(&fx["sensor_adr"][i]), "{}", w(&format!("sensor {i} address")));
        }
        // Actuator parameters: MuJoCo's gain and bias parameters, and activation addresses.
        for (i, a) in m.actuators.iter().enumerate() {
            let (gain, bias) = (fx::vec(&fx["actuator_gainprm"][i]), fx::vec(&fx["actuator_biasprm"][i]));
            let what = w(&format!("actuator {i} '{}'", a.name));
            let (ours_gain, ours_bias, act_adr) = match a.kind {
                ActuatorKind::Motor { .. } => ([1.0, 0.0, 0.0], [0.0; 3], None),
                ActuatorKind::Position { kp, kd, .. } => ([kp, 0.0, 0.0], [0.0, -kp, -kd], None),
                ActuatorKind::General(g) => (g.gain, g.bias, g.act_adr),
            };
            for k in 0..3 {
                fx::close(ours_gain[k], gain[k], 1e-12, &format!("{what} gain[{k}]"));
                fx::close(ours_bias[k], bias[k], 1e-12, &format!("{what} bias[{k}]"));
            }
            let mj_adr = fx["actuator_actadr"][i].as_i64().unwrap();
            assert_eq!(act_adr.map(|x| x as i64).unwrap_or(-1), mj_adr, "{what} act address");
        }
        // Equality constraints: MuJoCo's anchors (eq_data) for body connects and welds.
        for (i, e) in m.equalities.iter().enumerate() {
            let data = fx::vec(&fx["eq_data"][i]);
            match e.kind {
                EqualityKind::Connect { anchor, .. } => {
                    for k in 0..3 {
                        fx::close(anchor[0][k], data[k], 1e-12, &w(&format!("connect {i} anchor")));
                        fx::close(anchor[1][k], data[3 + k], 1e-12, &w(&format!("connect {i} second anchor")));
                    }
                }
                EqualityKind::Weld { anchor, quat, torquescale, .. } => {
                    for k in 0..3 {
                        fx::close(anchor[1][k], data[k], 1e-12, &w(&format!("weld {i} anchor")));
                        fx::close(anchor[0][k], data[3 + k], 1e-12, &w(&format!("weld {i} relative position")));
                    }
                    fx::close_quat(quat[0], [data[6], data[7], data[8], data[9]], 1e-12, &w(&format!("weld {i} quat")));
                    fx::close(torquescale, data[10], 0.0, &w(&format!("weld {i} torquescale")));
                }
                _ => {}
            }
        }
    }
}

/// Everything that depends on the state alone, at MuJoCo's random states:
/// tendon lengths and Jacobians, actuator lengths, moments and forces,
/// equality-constraint violations and Jacobians (MuJoCo's efc_pos and
/// efc_J), fluid forces, the set of contacting geom pairs, and sensors
/// (accelerometers from MuJoCo's qacc; touch is tested on its own).
#[test]
fn state_quantities_match_mujoco() {
    for name in FEATURES {
        let (m, fx) = load(name);
        check_states(name, &m, &fx);
    }
}

fn check_states(name: &str, m: &Model, fx: &Value) {
    {
        let m = m.clone();
        let (nv, nu) = (m.nv, m.nu());
        let mut builder = IcfBuilder::new(&m);
        let mut problem = IcfProblem::<f64>::new(nv);
        let mut contacts = Contacts::new(&m);
        for (si, st) in fx["states"].as_array().unwrap().iter().enumerate() {
            let w = |s: &str| format!("{name} state {si}: {s}");
            let mut d = Data::<f64>::new(&m);
            d.set_state(&fx::vec(&st["qpos"]), &fx::vec(&st["qvel"]));
            d.act.copy_from_slice(&fx::vec(&st["act"]));
            let ctrl = fx::vec(&st["ctrl"]);
            dynamics::kinematics(&m, &mut d);
            dynamics::velocities(&m, &mut d);
            dynamics::transmissions(&m, &mut d);
            dynamics::mass_matrix(&m, &mut d);
            dynamics::bias_forces(&m, &mut d);
            dynamics::passive_forces(&m, &mut d);
            for t in 0..m.tendons.len() {
                fx::close(d.ten_length[t], fx::f(&st["ten_length"][t]), 1e-12, &w(&format!("tendon {t} length")));
                for k in 0..nv {
                    let want = fx::f(&st["ten_J"][t][k]);
                    fx::close(d.ten_jac[t * nv + k], want, 1e-12, &w(&format!("tendon {t} Jacobian [{k}]")));
                }
            }
            let input =
                dynamics::SensorInput { ctrl: &ctrl, target_velocity: &[], qacc: &fx::vec(&st["qacc"]), contacts: &[] };
            for a in 0..nu {
                let what = w(&format!("actuator {a} '{}'", m.actuators[a].name));
                fx::close(d.actuator_length[a], fx::f(&st["actuator_length"][a]), 1e-12, &format!("{what} length"));
                for k in 0..nv {
                    let want = fx::f(&st["actuator_moment"][a][k]);
                    fx::close(d.actuator_moment[a * nv + k], want, 1e-12, &format!("{what} moment [{k}]"));
                }
                let f = dynamics::actuator_force(&m, &d, a, &input);
                fx::close(f, fx::f(&st["actuator_force"][a]), 1e-10, &format!("{what} force"));
            }
            // Fluid forces: the passive forces less the joint springs.
            if m.options.has_fluid() {
                let mut springs = d.clone();
                let mut no_fluid = m.clone();
                no_fluid.options.density = 0.0;
                no_fluid.options.viscosity = 0.0;
                dynamics::passive_forces(&no_fluid, &mut springs);
                for k in 0..nv {
                    let fluid = d.passive[k] - springs.passive[k];
                    fx::close(fluid, fx::f(&st["qfrc_fluid"][k]), 1e-10, &w(&format!("fluid force [{k}]")));
                }
            }
            // Equality rows: built by the ICF builder, compared with MuJoCo's efc rows.
            let act = Actuation { ctrl: &ctrl, target_velocity: &[], applied: &[] };
            builder.build(&m, &d, &[], act, &MaterialScale::default(), &mut problem);
            let eq_rows: Vec<_> = equality_rows(&m, &problem);
            let want_pos = fx::vec(&st["eq_pos"]);
            assert_eq!(eq_rows.len(), want_pos.len(), "{}", w("number of equality rows"));
            for (r, (pos, jac)) in eq_rows.iter().enumerate() {
                fx::close(*pos, want_pos[r], 1e-10, &w(&format!("equality row {r} violation")));
                for k in 0..nv {
                    let want = fx::f(&st["eq_J"][r][k]);
                    fx::close(jac[k], want, 1e-10, &w(&format!("equality row {r} Jacobian [{k}]")));
                }
            }
            // Contacting geom pairs (each pair once; pairs exactly touching,
            // |φ| < 1e-12 m, are reported by MuJoCo and not by cenic and
            // carry no force either way). None when contacts are switched off.
            {
                contacts.skin = 0.0;
                collide(&m, &d, &mut contacts);
                let touching = |dist: f64| dist.abs() < 1e-12;
                let mut ours: Vec<[usize; 2]> =
                    contacts.list.iter().filter(|c| !touching(c.dist)).map(|c| sorted(c.geom)).collect();
                let mut theirs: Vec<[usize; 2]> = st["contact_geoms"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| !touching(fx::f(&p[2])))
                    .map(|p| sorted([fx::u(&p[0]), fx::u(&p[1])]))
                    .collect();
                for v in [&mut ours, &mut theirs] {
                    v.sort();
                    v.dedup();
                }
                assert_eq!(ours, theirs, "{}", w("contacting geom pairs"));
            }
            // Sensors (with MuJoCo's qacc for accelerometers; touch needs a
            // contact solve). A body's inertial frame from several geoms has
            // principal axes in an order and with signs that may differ
            // from MuJoCo's eigen-decomposition (same frame, other axis
            // labels): sensors reading such a frame are skipped.
            dynamics::sensors(&m, &mut d, input);
            let want = fx::vec(&st["sensordata"]);
            let same_axes = |b: usize| {
                let theirs = fx::arr::<4>(&fx["body_iquat"][b]);
                let ours = m.bodies[b].iquat;
                let dot: f64 = (0..4).map(|k| ours[k] * theirs[k]).sum();
                (dot.abs() - 1.0).abs() < 1e-9
            };
            for s in &m.sensors {
                use cenic::model::{FrameObject::Body, SensorKind::*};
                let skip = match &s.kind {
                    Touch(_) => true,
                    FramePos(_, r) => matches!(r, Some(Body(b)) if !same_axes(*b)),
                    FrameQuat(o, r) | FrameXAxis(o, r) | FrameYAxis(o, r) | FrameZAxis(o, r) => {
                        [Some(*o), *r].iter().flatten().any(|f| matches!(f, Body(b) if !same_axes(*b)))
                    }
                    _ => false,
                };
                if skip {
                    continue;
                }
                for k in 0..s.kind.dim() {
                    let (a, b) = (d.sensordata[s.adr + k], want[s.adr + k]);
                    let what = w(&format!("sensor {} '{}' [{k}]", s.kind.name(), s.name));
                    if let cenic::model::SensorKind::Unsupported { .. } = s.kind {
                        assert!(a.is_nan(), "{what}: unsupported sensors read NaN");
                    } else if matches!(s.kind, cenic::model::SensorKind::FrameQuat(..)) {
                        let q = |v: &[f64]| [v[0], v[1], v[2], v[3]];
                        fx::close_quat(q(&d.sensordata[s.adr..]), q(&want[s.adr..]), 1e-10, &what);
                        break;
                    } else {
                        fx::close(a, b, 1e-9, &what);
                    }
                }
            }
        }
    }
}

fn sorted(g: [usize; 2]) -> [usize; 2] {
    [g[0].min(g[1]), g[0].max(g[1])]
}

/// The equality rows of a built problem, in model order: (violation, dense Jacobian row).
fn equality_rows(m: &Model, p: &IcfProblem<f64>) -> Vec<(f64, Vec<f64>)> {
    // Equality rows come last (after actuator, tendon and friction rows).
    let n: usize = m.equalities.iter().filter(|e| e.active && m.options.flags.equality).map(|e| e.rows()).sum();
    p.rows[p.rows.len() - n..]
        .iter()
        .map(|r| {
            let mut jac = vec![0.0; m.nv];
            for e in r.jac_start..r.jac_start + r.jac_len {
                jac[p.row_dof[e]] += p.row_coef[e];
            }
            (r.pos, jac)
        })
        .collect()
}

/// Largest difference between cenic's and MuJoCo's trajectory samples of
/// `name` (constant controls from the fixture, initial state from keyframe
/// 0 when there is one): (max |Δq| over hinge/slide/position coordinates
/// in rad or m, max |Δq| over quaternion components, max |Δact|).
fn trajectory_error(name: &str, mode: Mode) -> (f64, f64, f64) {
    let (m, fx) = load(name);
    let tr = &fx["trajectory"];
    let m = Arc::new(m);
    let mut world = World::<f64>::new(m.clone(), mode);
    if !m.keyframes.is_empty() {
        world.sim.reset_to_keyframe("0").unwrap();
    }
    for (c, x) in world.sim.ctrl.iter_mut().zip(fx::vec(&tr["ctrl"])) {
        *c = x;
    }
    let quat_coords: Vec<bool> = {
        let mut v = vec![false; m.nq];
        for j in &m.joints {
            let a = match j.kind {
                cenic::model::JointKind::Free => j.qpos_adr + 3,
                cenic::model::JointKind::Ball => j.qpos_adr,
                _ => continue,
            };
            v[a..a + 4].iter_mut().for_each(|x| *x = true);
        }
        v
    };
    let (mut eq, mut equat, mut eact) = (0.0f64, 0.0f64, 0.0f64);
    let mut t = 0.0;
    for s in tr["samples"].as_array().unwrap() {
        let ts = fx::f(&s["time"]);
        if ts > t {
            world.advance(ts - t).unwrap_or_else(|e| panic!("{name} at t = {t}: {}", e.describe(&m)));
            t = ts;
        }
        for (k, want) in fx::vec(&s["qpos"]).into_iter().enumerate() {
            let d = (world.sim.data.q[k] - want).abs();
            if quat_coords[k] {
                // Quaternions agree up to sign; compare the closer sign.
                let flip = (world.sim.data.q[k] + want).abs();
                equat = equat.max(d.min(flip));
            } else {
                eq = eq.max(d);
            }
        }
        for (k, want) in fx::vec(&s["act"]).into_iter().enumerate() {
            eact = eact.max((world.sim.data.act[k] - want).abs());
        }
    }
    (eq, equat, eact)
}

/// Contact-free trajectories against MuJoCo (RK4, 0.1 ms steps, 0.5 s):
/// cenic error-controlled at accuracy 1e-6. Actuators (implicit servos,
/// explicit motors, activation filters and integrators, tendon and site
/// transmissions), tendon springs and dampers (a spatial string across two
/// trees, a pulley), fluid forces and switched-off physics follow MuJoCo's
/// continuous dynamics: the differences shrink like √accuracy (measured
/// at 1e-5/1e-6/1e-7: actuators 1.8e-3/5.6e-4/1.8e-4, tendons
/// 2.6e-3/8.1e-4/2.6e-4, fluid 5.0e-4/1.5e-4/4.6e-5, the friction-braked
/// pendulum 7.2e-3/2.3e-3/7.2e-4 rad or m). Where the
/// models differ, the tolerance says by how much: MuJoCo's `filterexact`
/// activation under RK4 lags the exact filter solution (which cenic
/// integrates) by one RK4 step (1.5e-4 at 50 ms, τ = 20 ms); MuJoCo's soft
/// dry friction lets a block held by friction creep 2.6e-4 m in 0.5 s,
/// which MuJoCo's semantics reproduce (the models load with them). The
/// equality constraints follow MuJoCo's to 5e-4 with its J̇·v
/// correction of connect and weld rows (to 4e-2 without it).
#[test]
fn trajectories_match_mujoco() {
    let mode = || Mode::ErrorControlled(CenicParams { accuracy: 1e-6, ..Default::default() });
    for (name, tol_q, tol_act) in [
        ("actuators", 1e-3, 2e-4f64),
        ("tendons", 1.5e-3, 0.0),
        ("fluid", 5e-4, 0.0),
        ("frictionloss", 3e-3, 0.0),
        ("flags", 1e-9, 0.0),
        ("equality", 1e-3, 0.0),
    ] {
        let (eq, equat, eact) = trajectory_error(name, mode());
        eprintln!("{name}: max |Δq| {eq:.2e}, max |Δquat| {equat:.2e}, max |Δact| {eact:.2e}");
        assert!(eq <= tol_q && equat <= tol_q, "{name}: |Δq| {eq:e}, |Δquat| {equat:e} > {tol_q:e}");
        assert!(eact <= tol_act.max(1e-12), "{name}: |Δact| {eact:e} > {tol_act:e}");
    }
}

const CORPUS: [&str; 11] = [
    "acrobot",
    "ball_in_cup",
    "cartpole",
    "cheetah",
    "finger",
    "lander",
    "manipulator",
    "pendulum",
    "point_mass",
    "swimmer",
    "walker",
];

/// Our corpus of models written in the style of public control-benchmark
/// collections (`tests/models/corpus/`: shared files through `<include>`,
/// default classes, general actuators, tendons, equality constraints,
/// contact exclusions and pairs, option flags, sensors): each loads with
/// MuJoCo's sizes, masses and state quantities, and simulates 1 s under
/// CENIC (accuracy 1e-3) with constant mid-range controls without failing.
#[test]
fn corpus_models_match_mujoco_and_simulate() {
    for name in CORPUS {
        let path = model_path(&format!("corpus/{name}.xml"));
        let m = Model::from_mjcf_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let fx = fx::load(&format!("features/corpus_{name}"));
        check_structure(name, &m, &fx);
        check_states(name, &m, &fx);
        let m = Arc::new(m);
        let mut world = World::<f64>::new(m.clone(), Mode::ErrorControlled(CenicParams::default()));
        if !m.keyframes.is_empty() {
            world.sim.reset_to_keyframe("0").unwrap();
        }
        for (c, a) in world.sim.ctrl.iter_mut().zip(&m.actuators) {
            *c = match a.ctrl_range {
                Some([lo, hi]) => lo + 0.7 * (hi - lo),
                None => 0.3,
            };
        }
        world.advance(1.0).unwrap_or_else(|e| panic!("{name}: {}", e.describe(&m)));
        assert!((world.time() - 1.0).abs() < 1e-9);
        assert!(world.sim.data.q.iter().chain(&world.sim.data.v).chain(&world.sim.data.act).all(|x| x.is_finite()));
        eprintln!(
            "{name}: nq {} nv {} nu {} na {} ntendon {} neq {}: 1 s in {} steps ({} rejected), {} Newton iterations",
            m.nq,
            m.nv,
            m.nu(),
            m.na,
            m.tendons.len(),
            m.equalities.len(),
            world.stats.accepted,
            world.stats.rejected,
            world.stats.newton_iterations
        );
    }
}

/// Soft tendon limits settle where MuJoCo's do: a weight hanging from a
/// rope (spatial tendon at its upper length limit) and an arm resting on a
/// stop (fixed tendon at its lower limit, with a margin). The deflections
/// (0.6 mm and 0.8 mrad) come from solreflimit/solimplimit on the tendon's
/// effective mass, as in MuJoCo, and agree to 1e-7.
#[test]
fn tendon_limits_settle_where_mujoco_does() {
    let (m, fx) = load("tendon_limit");
    let m = Arc::new(m);
    let mut world =
        World::<f64>::new(m.clone(), Mode::ErrorControlled(CenicParams { accuracy: 1e-6, ..Default::default() }));
    world.advance(3.0).unwrap();
    let last = fx["trajectory"]["samples"].as_array().unwrap().last().unwrap();
    let want = fx::vec(&last["qpos"]);
    for k in 0..m.nq {
        fx::close(world.sim.data.q[k], want[k], 1e-7, &format!("settled coordinate {k}"));
    }
    // The rope is stretched beyond its 0.5 m limit by the weight.
    let mut d = world.sim.data.clone();
    dynamics::kinematics(&m, &mut d);
    dynamics::transmissions(&m, &mut d);
    assert!(d.ten_length[0] > 0.5 && d.ten_length[0] < 0.501, "rope length {}", d.ten_length[0]);
}

/// `<include>`: a cycle names the chain, a missing file names the include
/// element and line, a file included twice is refused as in MuJoCo, and
/// errors inside an included file name that file and line.
#[test]
fn include_errors_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("cenic_include_{}", std::process::id()));
    std::fs::create_dir_all(dir.join("parts")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    let load = |name: &str| Model::from_mjcf_file(dir.join(name)).unwrap_err().to_string();
    write("cycle.xml", "<mujoco>\n  <include file=\"parts/a.xml\"/>\n</mujoco>");
    write("parts/a.xml", "<mujoco>\n\n  <include file=\"b.xml\"/>\n</mujoco>");
    write("parts/b.xml", "<mujoco><include file=\"parts/a.xml\"/></mujoco>");
    let e = load("cycle.xml");
    assert!(
        e.contains("include cycle") && e.contains("cycle.xml → ") && e.contains("a.xml → ") && e.contains("b.xml → "),
        "{e}"
    );
    assert!(e.contains("b.xml:1:"), "the cycle is reported where it closes: {e}");
    write("missing.xml", "<mujoco>\n\n  <include file=\"nope.xml\"/>\n</mujoco>");
    let e = load("missing.xml");
    assert!(e.contains("missing.xml:3:") && e.contains("<include> attribute 'file'") && e.contains("nope.xml"), "{e}");
    write("twice.xml", "<mujoco><include file=\"parts/c.xml\"/>\n<include file=\"parts/c.xml\"/></mujoco>");
    write("parts/c.xml", "<mujoco><option timestep=\"0.01\"/></mujoco>");
    let e = load("twice.xml");
    assert!(e.contains("twice.xml:2:") && e.contains("already included"), "{e}");
    write("bad_inside.xml", "<mujoco><worldbody><include file=\"parts/bad.xml\"/></worldbody></mujoco>");
    write("parts/bad.xml", "<mujoco>\n  <body>\n    <geom size=\"-1\"/>\n  </body>\n</mujoco>");
    let e = load("bad_inside.xml");
    assert!(e.contains("parts/bad.xml:3:") && e.contains("<geom> attribute 'size'"), "{e}");
    write("not_mujoco.xml", "<mujoco><include file=\"parts/robot.xml\"/></mujoco>");
    write("parts/robot.xml", "<robot/>");
    let e = load("not_mujoco.xml");
    assert!(e.contains("must be <mujoco>, found <robot>"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keyframes carry activations: the lander starts from its hover keyframe
/// with both engines at half throttle.
#[test]
fn keyframe_sets_activations() {
    let m = Arc::new(Model::from_mjcf_file(model_path("corpus/lander.xml")).unwrap());
    assert_eq!(m.keyframes[0].act, vec![0.5, 0.5]);
    let mut world = World::<f64>::new(m.clone(), Mode::Fixed { dt: 0.005 });
    world.sim.reset_to_keyframe("hover").unwrap();
    assert_eq!(world.sim.data.act, vec![0.5, 0.5]);
    assert_eq!(world.sim.ctrl, vec![0.5, 0.5]);
    // A keyframe with the wrong number of activations is refused, naming it.
    let bad =
        std::fs::read_to_string(model_path("corpus/lander.xml")).unwrap().replace("act=\"0.5 0.5\"", "act=\"0.5\"");
    let e =
        Model::from_mjcf_str_named(&bad, model_path("corpus/lander.xml").to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("key name=\"hover\"") && e.contains("act has 1 values, the model has na = 2"), "{e}");
}

/// Touch sensors read the normal force of the contacts inside their site:
/// a 2 kg box at rest on the floor weighs 2·9.81 N on its sole.
#[test]
fn touch_sensor_weighs_a_resting_box() {
    let (m, _) = load("sensors");
    let m = Arc::new(m);
    let mut world = World::<f64>::new(m.clone(), Mode::ErrorControlled(CenicParams::default()));
    world.advance(1.5).unwrap();
    let touch = m.sensors.iter().find(|s| matches!(s.kind, cenic::model::SensorKind::Touch(_))).unwrap();
    let w = world.sim.data.sensordata[touch.adr];
    assert!((w - 2.0 * 9.81).abs() < 0.02 * 2.0 * 9.81, "touch {w} N");
}

/// An explicit contact pair uses its own friction: a box on the floor with
/// geom friction 1 and pair friction 0.2 slides to rest after
/// v0/(0.2·g) seconds, as Coulomb friction predicts.
#[test]
fn contact_pair_uses_its_own_friction() {
    let xml = r#"<mujoco>
      <worldbody>
        <geom name="floor" type="plane" size="5 5 0.1" friction="1"/>
        <body name="box" pos="0 0 0.1">
          <freejoint/>
          <geom name="box" type="box" size="0.1 0.1 0.1" mass="1" friction="1"/>
        </body>
      </worldbody>
      <contact><pair geom1="floor" geom2="box" friction="0.2 0.2"/></contact>
      <keyframe><key qpos="0 0 0.1 1 0 0 0" qvel="1 0 0 0 0 0"/></keyframe>
    </mujoco>"#;
    let m = Arc::new(Model::from_mjcf_str(xml).unwrap());
    assert_eq!(m.pairs[0].material.mu_static, 0.2);
    let mut world =
        World::<f64>::new(m.clone(), Mode::ErrorControlled(CenicParams { accuracy: 1e-4, ..Default::default() }));
    world.sim.reset_to_keyframe("0").unwrap();
    world.advance(0.25).unwrap();
    let v = world.sim.data.v[0];
    let want = 1.0 - 0.2 * 9.81 * 0.25;
    assert!((v - want).abs() < 0.02, "sliding speed {v} m/s after 0.25 s, Coulomb {want}");
    world.advance(0.5).unwrap();
    assert!(world.sim.data.v[0].abs() < 1e-3, "at rest after v0/(μg) = 0.51 s: {}", world.sim.data.v[0]);
}

/// Dry friction (frictionloss) holds a block against a push below it and
/// lets a push above it accelerate the block by (F − f)/m: with cenic's
/// physical law a held block creeps below vs/10; with MuJoCo's soft
/// friction row it creeps at MuJoCo's steady rate F·R/B (the force
/// −B·v/R of the row's reference balances the push).
#[test]
fn frictionloss_holds_and_slips_like_coulomb() {
    use cenic::model::Semantics;
    let path = model_path("features/frictionloss.xml");
    for semantics in [Semantics::Physical, Semantics::MuJoCo] {
        let m = Arc::new(Model::from_mjcf_file_as(&path, semantics).unwrap());
        let j = &m.joints[0];
        let law = j.friction_softness.soft_law(m.options.timestep, true);
        let imp = law.at(0.0).0;
        let r = (1.0 - imp) / imp * m.dofs[j.dof_adr].invweight0;
        for (push, want_acc) in [(0.5, 0.0), (3.0, 2.0)] {
            let mode = Mode::ErrorControlled(CenicParams { accuracy: 1e-6, ..Default::default() });
            let mut world = World::<f64>::new(m.clone(), mode);
            world.sim.ctrl[0] = push;
            world.advance(0.5).unwrap();
            let (x, v) = (world.sim.data.q[0], world.sim.data.v[0]);
            let creep = match (semantics, want_acc == 0.0) {
                (Semantics::MuJoCo, true) => push * r / law.b,
                _ => 0.0,
            };
            assert!(
                (v - want_acc * 0.5 - creep).abs() < 1e-4 * (1.0 + 0.1 * creep / 1e-4) + 1e-5,
                "{semantics:?}, push {push} N: v = {v}, creep {creep}"
            );
            assert!((x - 0.5 * want_acc * 0.25).abs() < 5e-4, "{semantics:?}, push {push} N: x = {x}");
        }
    }
}

/// The batch interface reads and writes activations and reads sensor data
/// (CPU batch; the GPU batch's sensors: `gpu_sensors.rs`).
#[test]
fn cpu_batch_reads_activations_and_sensors() {
    use cenic::batch::{Batch, CpuBatch};
    let m = Arc::new(Model::from_mjcf_file(model_path("corpus/lander.xml")).unwrap());
    let mut batch = CpuBatch::<f64>::new(m.clone(), 2, Mode::ErrorControlled(CenicParams::default()));
    batch.reset_to_keyframe(0, "hover").unwrap();
    batch.set_act(1, &[0.2, 0.9]).unwrap();
    batch.set_ctrl(1, &[0.2, 0.9]).unwrap();
    assert!(batch.set_act(1, &[0.2]).is_err(), "wrong length");
    let mut act = vec![0.0; 2 * m.na];
    batch.act(&mut act).unwrap();
    assert_eq!(act, vec![0.5, 0.5, 0.2, 0.9]);
    batch.advance(0.2).unwrap();
    let mut sensors = vec![0.0; 2 * m.nsensordata];
    batch.sensordata(&mut sensors).unwrap();
    for w in 0..2 {
        assert_eq!(&sensors[w * m.nsensordata..(w + 1) * m.nsensordata], batch.world(w).sim.data.sensordata.as_slice());
    }
    // World 1 throttles asymmetrically: it turns (the gyro reads a rate about y).
    let gyro = &m.sensors[0];
    assert!(sensors[m.nsensordata + gyro.adr + 1].abs() > 0.1, "gyro {:?}", &sensors[m.nsensordata..]);
    assert!(sensors[gyro.adr + 1].abs() < 1e-6, "symmetric thrust does not turn world 0");
}
