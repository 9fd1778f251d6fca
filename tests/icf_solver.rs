//! The Newton solver: every solve ends with the
//! scaled momentum-balance residual ‖D ∇ℓ‖ below its tolerance
//! ε·max(1, ‖D r‖); a hard case (stiffness 1e8 N/m, stiction tolerance
//! 1e-5 m/s, h = 10 ms) converges; warm starts and Hessian reuse work.

mod common;

use cenic::collision::Contact;
use cenic::dynamics::{self, Data};
use cenic::icf::cost::{CostWork, evaluate};
use cenic::icf::{Actuation, IcfBuilder, IcfProblem, IcfSolver, MaterialScale, SolverParams};
use cenic::math::Vec3;
use common::Rng;
use common::icf::{material, random_problem, scene};

/// Independent residual check: ‖D ∇ℓ(v)‖ recomputed from the cost module.
fn residual(p: &IcfProblem<f64>, v: &[f64]) -> f64 {
    let mut g = vec![0.0; p.nv];
    evaluate(p, v, &mut g, None, &mut CostWork::default());
    g.iter().zip(&p.scale).map(|(a, s)| (a * s) * (a * s)).sum::<f64>().sqrt()
}

#[test]
fn every_solve_ends_below_its_residual_tolerance() {
    let model = scene();
    let mut rng = Rng::new(3);
    let mut solver = IcfSolver::new(model.nv);
    let mut max_iters = 0;
    for trial in 0..300 {
        let h = [1e-4, 1e-3, 1e-2, 5e-2][trial % 4];
        let (p, _) = random_problem(&model, &mut rng, h, trial % 3 == 0);
        for params in
            [SolverParams::default(), SolverParams { hessian_reuse: true, tolerance: 1e-6, ..Default::default() }]
        {
            let mut v = p.v0.clone();
            let stats = solver.solve(&p, &mut v, &params).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
            assert!(stats.converged);
            let r = residual(&p, &v);
            assert!(r <= stats.tolerance, "trial {trial}: residual {r:e} > tolerance {:e}", stats.tolerance);
            assert!((r - stats.residual).abs() <= 1e-12 + 1e-9 * r, "reported residual differs");
            max_iters = max_iters.max(stats.iterations);
        }
    }
    eprintln!("max Newton iterations over 600 solves: {max_iters}");
}

#[test]
fn warm_start_at_the_solution_needs_no_iteration() {
    let model = scene();
    let mut rng = Rng::new(5);
    let (p, _) = random_problem(&model, &mut rng, 1e-3, false);
    let mut solver = IcfSolver::new(model.nv);
    let mut v = p.v0.clone();
    let first = solver.solve(&p, &mut v, &SolverParams::default()).unwrap();
    assert!(first.iterations > 0);
    let again = solver.solve(&p, &mut v, &SolverParams::default()).unwrap();
    assert_eq!(again.iterations, 0);
    assert_eq!(again.factorizations, 0);
}

/// A 0.5 kg box resting on four stiff corner contacts (k = 1e8 N/m,
/// vs = 1e-5 m/s, h = 10 ms) in several regimes: at rest, sliding, thrown
/// down, spinning. Newton must converge; the iteration counts are printed.
#[test]
fn hard_case_stiff_contact_tiny_stiction_converges() {
    let model = scene();
    let mut solver = IcfSolver::new(model.nv);
    let mut builder = IcfBuilder::new(&model);
    let regimes: [(&str, [f64; 6]); 5] = [
        ("rest", [0.0; 6]),
        ("slide", [1.0, 0.3, 0.0, 0.0, 0.0, 0.0]),
        ("impact", [0.2, 0.0, -2.0, 0.0, 0.0, 0.0]),
        ("spin", [0.0, 0.0, 0.0, 0.0, 0.0, 20.0]),
        ("tumble", [0.5, -0.5, -1.0, 5.0, -3.0, 2.0]),
    ];
    for (name, v_box) in regimes {
        let mut data = Data::<f64>::new(&model);
        // Static penetration of 4 springs of 1e8 N/m under 0.5 kg.
        let pen = 0.5 * 9.81 / (4.0 * 1e8);
        data.q[2] = 0.05 - pen;
        data.v[0..6].copy_from_slice(&v_box);
        dynamics::kinematics(&model, &mut data);
        dynamics::velocities(&model, &mut data);
        dynamics::mass_matrix(&model, &mut data);
        dynamics::bias_forces(&model, &mut data);
        dynamics::passive_forces(&model, &mut data);
        let contacts: Vec<Contact<f64>> = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
            .iter()
            .enumerate()
            .map(|(i, (dx, dy))| Contact {
                geom: [0, 1],
                body: [0, 1],
                pos: data.xpos[1] + Vec3::new(0.05 * dx, 0.05 * dy, -0.05),
                normal: Vec3::new(0.0, 0.0, 1.0),
                dist: -pen,
                feature: [0, i as u32],
                material: material(1e8, 10.0, 0.5, 0.4),
            })
            .collect();
        let mut p = IcfProblem::new(model.nv);
        let ctrl = [0.0, 0.0];
        builder.build(
            &model,
            &data,
            &contacts,
            Actuation { ctrl: &ctrl, target_velocity: &[], applied: &[] },
            &MaterialScale::default(),
            &mut p,
        );
        p.stiction_tolerance = 1e-5;
        p.set_time_step(1e-2);
        let mut v = p.v0.clone();
        let stats = solver
            .solve(&p, &mut v, &SolverParams { max_iterations: 200, ..Default::default() })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = residual(&p, &v);
        eprintln!(
            "hard case '{name}': {} Newton iterations, {} line-search iterations, residual {r:.3e} ≤ {:.3e}",
            stats.iterations, stats.line_search_iterations, stats.tolerance
        );
        assert!(stats.converged && r <= stats.tolerance);
        // Physically sensible: the box does not sink through the ground.
        assert!(v[2] > -0.05, "{name}: vz = {}", v[2]);
    }
}
