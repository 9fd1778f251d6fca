//! The Newton solver's tree factorization (LᵀDL over the dof forest)
//! against the dense Cholesky, on the gymnasium humanoid lying on the floor:
//! the same problems solved both ways agree to rounding, the solver picks
//! the tree only while every contact lies on one path to the root, and a
//! term that couples two branches sends it back to the dense factor.

mod common;

use std::sync::Arc;

use cenic::icf::{FactorKind, IcfProblem, IcfSolver, SolverParams};
use cenic::integrator::Simulator;
use cenic::math::{TreeLdl, Vec3};
use cenic::model::Model;

/// Solves `p` from its v0 with a tight tolerance; returns v and the
/// factorization the last factorizing iteration used.
fn solve(p: &IcfProblem<f64>) -> (Vec<f64>, FactorKind) {
    let params = SolverParams { tolerance: 1e-12, ..SolverParams::default() };
    let mut solver = IcfSolver::new(p.nv);
    let mut v = p.v0.clone();
    solver.solve(p, &mut v, &params).expect("the convex solve converges");
    (v, solver.factor_kind())
}

fn assert_close(a: &[f64], b: &[f64], what: &str) {
    let scale = b.iter().fold(1e-3f64, |m, x| m.max(x.abs()));
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= 1e-9 * scale, "{what}: dof {i}: {x} vs {y}");
    }
}

/// Problems of a gymnasium model (`name`.xml) under zero controls, one
/// every ten steps of `h` seconds over `steps` steps, as the simulator built
/// them.
fn problems(name: &str, h: f64, steps: usize) -> Option<Vec<IcfProblem<f64>>> {
    let path = common::shared_file(&format!("models/gymnasium/{name}.xml"))?;
    let model = Arc::new(Model::from_mjcf_file(&path).unwrap());
    let mut sim = Simulator::<f64>::new(model);
    let mut out = vec![];
    for step in 0..steps {
        sim.step(h).unwrap();
        if step % 10 == 9 {
            sim.compute_geometry();
            sim.problem.set_time_step(h);
            out.push(sim.problem.clone());
        }
    }
    Some(out)
}

/// The humanoid falling onto the floor: one problem per 30 ms over 1.5 s.
fn humanoid_problems() -> Option<Vec<IcfProblem<f64>>> {
    problems("humanoid", 0.003, 500)
}

/// The ant and half_cheetah touch the floor with their feet only: every
/// solve over the dof tree, equal to the dense one.
#[test]
fn ant_and_half_cheetah_solve_over_the_tree() {
    for name in ["ant", "half_cheetah"] {
        let Some(problems) = problems(name, 0.002, 600) else { return };
        let in_contact = problems.iter().filter(|p| !p.contacts.is_empty()).count();
        assert!(in_contact * 2 > problems.len(), "{name}: in contact in {in_contact} of {} problems", problems.len());
        for (k, p) in problems.iter().enumerate() {
            let (v, kind) = solve(p);
            assert_eq!(kind, FactorKind::Tree, "{name} problem {k}");
            let mut dense = p.clone();
            dense.dof_parent.clear();
            let (v_dense, _) = solve(&dense);
            assert_close(&v, &v_dense, &format!("{name} problem {k}"));
        }
    }
}

#[test]
fn humanoid_solves_with_the_tree_factor_equal_the_dense_ones() {
    let Some(problems) = humanoid_problems() else { return };
    let (mut tree, mut in_contact, mut coupled) = (0, 0, 0);
    for (k, p) in problems.iter().enumerate() {
        assert_eq!(p.dof_parent.len(), p.nv, "the builder gives the dof parents");
        let forest = TreeLdl::new(&p.dof_parent).expect("parents precede children");
        let on_paths = p
            .contacts
            .iter()
            .all(|c| forest.on_one_path(p.jac_dof[c.jac_start..c.jac_start + c.jac_len].iter().copied()));
        let (v_tree, kind) = solve(p);
        assert_eq!(kind == FactorKind::Tree, on_paths, "problem {k}: {kind:?}, every contact on one path: {on_paths}");
        coupled += usize::from(!on_paths);
        // Without parents the solver cannot use the tree: one dense block.
        let mut dense = p.clone();
        dense.dof_parent.clear();
        let (v_dense, dense_kind) = solve(&dense);
        assert_eq!(dense_kind, FactorKind::Dense);
        assert_close(&v_tree, &v_dense, &format!("problem {k} ({} contacts)", p.contacts.len()));
        tree += usize::from(kind == FactorKind::Tree);
        in_contact += usize::from(!p.contacts.is_empty());
    }
    eprintln!(
        "{} problems, {in_contact} in contact, {coupled} with a contact between two limbs, {tree} solved with the tree factor",
        problems.len()
    );
    assert!(in_contact >= problems.len() / 2, "the humanoid lies on the floor for most of the run");
    // A body against the floor touches one path; two limbs against each
    // other need the dense factor. Most problems are of the first kind.
    assert!(tree >= problems.len() * 3 / 4, "tree factor on {tree} of {} problems", problems.len());
}

#[test]
fn a_term_that_couples_two_branches_takes_the_dense_factor() {
    let Some(problems) = humanoid_problems() else { return };
    let model = Model::from_mjcf_file(common::shared_file("models/gymnasium/humanoid.xml").unwrap()).unwrap();
    let knee = |side: &str| {
        let j = model.joints.iter().position(|j| j.name == format!("{side}_knee")).expect("humanoid has both knees");
        model.joints[j].dof_adr
    };
    let (left, right) = (knee("left"), knee("right"));
    let mut p = problems.last().unwrap().clone();
    assert!(!p.contacts.is_empty());
    // A stiff contact between the two shins (one leg's knee against the
    // other's): its Hessian couples dofs that neither is the other's
    // ancestor, off the tree pattern.
    let mut c = p.contacts[0];
    c.jac_start = p.jac_dof.len();
    c.jac_len = 2;
    c.phi0 = -0.01;
    c.normal = Vec3::new(0.0, 1.0, 0.0);
    c.vc0 = Vec3::zero();
    p.jac_dof.extend([left, right]);
    p.jac_col.extend([Vec3::new(0.0, 0.3, 0.1), Vec3::new(0.1, -0.3, 0.0)]);
    p.contacts.push(c);
    p.set_time_step(0.003);
    let (v, kind) = solve(&p);
    assert_eq!(kind, FactorKind::Dense, "the coupled problem must not use the tree factor");
    let mut dense = p.clone();
    dense.dof_parent.clear();
    let (v_dense, _) = solve(&dense);
    assert_close(&v, &v_dense, "coupled problem");
}
