//! Kinematics, mass matrix and bias forces against MuJoCo 4.0.0 at seeded
//! random states (fixtures written by `scripts/mujoco_fixtures.py`).
//!
//! Norm: for each state, max_ij |M_ours − M_mujoco| ≤ 1e-9 · max(1, max_ij |M_mujoco|),
//! and the same for the bias forces (Coriolis, centrifugal, gravity; MuJoCo's
//! `qfrc_bias`) and for body positions; all in f64.

mod common;
mod mujoco_fixture;

use cenic::dynamics::{Data, bias_forces, kinematics, mass_matrix, velocities};
use cenic::model::Model;
use mujoco_fixture as fx;
use std::path::PathBuf;

const TOL: f64 = 1e-9;

fn model(name: &str) -> Option<Model> {
    let path = if name == "free_ball_chain" {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/free_ball_chain.xml")
    } else {
        common::shared_file(&format!("models/gymnasium/{name}.xml"))?
    };
    Some(Model::from_mjcf_file(&path).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// max |a − b| / max(1, max |b|).
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale
}

fn check(name: &str) {
    let Some(m) = model(name) else { return };
    let fx = fx::load(name);
    let states = fx["states"].as_array().unwrap();
    assert!(states.len() >= 5, "{name}: {} states", states.len());
    let mut d = Data::<f64>::new(&m);
    let (mut worst_m, mut worst_b, mut worst_x) = (0.0f64, 0.0f64, 0.0f64);
    for (s, st) in states.iter().enumerate() {
        d.set_state(&fx::vec(&st["qpos"]), &fx::vec(&st["qvel"]));
        kinematics(&m, &mut d);
        velocities(&m, &mut d);
        mass_matrix(&m, &mut d);
        bias_forces(&m, &mut d);

        let xpos: Vec<f64> = fx::mat(&st["xpos"]).concat();
        let ours_xpos: Vec<f64> = d.xpos.iter().flat_map(|p| p.to_array()).collect();
        let ex = rel_err(&ours_xpos, &xpos);
        assert!(ex <= TOL, "{name} state {s}: body positions differ from MuJoCo (rel {ex:e})");
        for (b, q) in fx::mat(&st["xquat"]).iter().enumerate() {
            fx::close_quat(
                d.xquat[b].to_array(),
                [q[0], q[1], q[2], q[3]],
                TOL,
                &format!("{name} state {s} body {b} quat"),
            );
        }

        let theirs_m: Vec<f64> = fx::mat(&st["mass_matrix"]).concat();
        let em = rel_err(&d.mass, &theirs_m);
        assert!(
            em <= TOL,
            "{name} state {s}: mass matrix differs from MuJoCo (rel {em:e})\nours {:?}\nMuJoCo {theirs_m:?}",
            d.mass
        );

        let theirs_b = fx::vec(&st["qfrc_bias"]);
        let eb = rel_err(&d.bias, &theirs_b);
        assert!(
            eb <= TOL,
            "{name} state {s}: bias forces differ from MuJoCo (rel {eb:e})\nours {:?}\nMuJoCo {theirs_b:?}",
            d.bias
        );
        (worst_m, worst_b, worst_x) = (worst_m.max(em), worst_b.max(eb), worst_x.max(ex));
    }
    eprintln!(
        "{name}: {} states, max rel error: mass matrix {worst_m:.2e}, bias {worst_b:.2e}, body positions {worst_x:.2e}",
        states.len()
    );
}

#[test]
fn ant_matches_mujoco() {
    check("ant");
}

#[test]
fn humanoid_matches_mujoco() {
    check("humanoid");
}

#[test]
fn half_cheetah_matches_mujoco() {
    check("half_cheetah");
}

#[test]
fn inverted_double_pendulum_matches_mujoco() {
    check("inverted_double_pendulum");
}

#[test]
fn free_ball_chain_matches_mujoco() {
    check("free_ball_chain");
}

#[test]
fn free_ball_chain_model_matches_mujoco() {
    // Our own model exercises fullinertia, explicit inertials, welded bodies and
    // several joints per body: its compiled structure must equal MuJoCo's too.
    let m = model("free_ball_chain").unwrap();
    let fx = fx::load("free_ball_chain");
    assert_eq!((m.nq, m.nv, m.bodies.len()), (fx::u(&fx["nq"]), fx::u(&fx["nv"]), fx::u(&fx["nbody"])));
    let types = fx::strs(&fx["jnt_type"]);
    assert_eq!(m.joints.iter().map(|j| j.kind.name().to_string()).collect::<Vec<_>>(), types);
    for (i, b) in m.bodies.iter().enumerate() {
        let mass = fx::f(&fx["body_mass"][i]);
        if mass > 0.0 {
            fx::close_rel(b.mass, mass, 1e-9, &format!("body {i} mass"));
        }
    }
    fx::close_rel(m.total_mass(), fx::f(&fx["total_mass"]), 1e-9, "total mass");
    let qpos0 = fx::vec(&fx["qpos0"]);
    for (a, b) in m.qpos0.iter().zip(&qpos0) {
        fx::close(*a, *b, 1e-12, "qpos0");
    }
    // Geom poses from fromto, zaxis and euler; principal inertias (fullinertia, explicit quat).
    for (i, g) in m.geoms.iter().enumerate() {
        for k in 0..3 {
            fx::close(g.pos[k], fx::f(&fx["geom_pos"][i][k]), 1e-12, &format!("geom {i} pos"));
        }
        fx::close_quat(g.quat, fx::arr::<4>(&fx["geom_quat"][i]), 1e-12, &format!("geom {i} quat"));
    }
    for (i, b) in m.bodies.iter().enumerate() {
        let mut ours = b.inertia;
        let mut theirs = fx::arr::<3>(&fx["body_inertia"][i]);
        ours.sort_by(|a, b| a.partial_cmp(b).unwrap());
        theirs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for k in 0..3 {
            fx::close(ours[k], theirs[k], 1e-12, &format!("body {i} principal inertia"));
        }
    }
}
