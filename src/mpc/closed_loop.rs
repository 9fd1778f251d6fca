//! The receding-horizon loop: plan, apply the first control on the plant
//! for one interval, shift, repeat.

use super::cost::Workspace;
use super::{Budget, MpcError, PlanStats, Planner, apply_controls};
use crate::batch::WorldParams;
use crate::diff::ControlKind;
use crate::integrator::{Mode, World};
use crate::model::Model;
use std::sync::Arc;

/// The controlled system: a world of its own (its model, integration mode
/// and physical parameters may differ from the planner's).
pub struct Plant {
    /// The world.
    pub world: World<f64>,
    /// What the controls drive.
    pub control: ControlKind,
}

impl Plant {
    /// A plant of `model` integrated in `mode`, with physical parameters `params`.
    pub fn new(model: Arc<Model>, mode: Mode, params: WorldParams) -> Self {
        let mut world = World::new(model, mode);
        world.sim.data.mass_scale = params.mass_scale;
        world.sim.materials = params.materials;
        Self { world, control: ControlKind::Actuators }
    }

    /// Sets the plant's state x = [q, v] (quaternions normalised).
    pub fn set_state(&mut self, x: &[f64]) {
        let nq = self.world.sim.model.nq;
        self.world.sim.set_state(&x[..nq], &x[nq..]);
    }

    /// The plant's state [q, v].
    pub fn state(&self) -> Vec<f64> {
        let d = &self.world.sim.data;
        d.q.iter().chain(&d.v).copied().collect()
    }

    /// Holds controls `u` for `dt` seconds.
    pub fn step(&mut self, u: &[f64], dt: f64) -> Result<(), String> {
        apply_controls(&mut self.world, self.control, u);
        self.world.advance(dt).map_err(|e| e.describe(&self.world.sim.model))
    }
}

/// A closed-loop run.
#[derive(Clone, Debug, Default)]
pub struct Episode {
    /// Control interval (s).
    pub dt: f64,
    /// Plant states x_0 … x_n ((n + 1) × nx; fewer rows when the plant failed).
    pub states: Vec<f64>,
    /// Applied controls (n × nc; the last one led to the failure when the plant failed).
    pub controls: Vec<f64>,
    /// Running cost rate l(x_k, u_k) of the plant at each interval (per s).
    pub running_cost: Vec<f64>,
    /// Terminal cost l_T of the last state.
    pub terminal_cost: f64,
    /// Per interval: what the planner did.
    pub plans: Vec<PlanStats>,
    /// Intervals whose planning failed (the previous plan, shifted, was applied), with the reasons.
    pub planning_errors: Vec<(usize, String)>,
    /// Why the plant stopped early, if it did.
    pub failure: Option<String>,
}

impl Episode {
    /// Mean planning wall time per interval (s).
    pub fn mean_plan_seconds(&self) -> f64 {
        self.plans.iter().map(|p| p.seconds).sum::<f64>() / self.plans.len().max(1) as f64
    }

    /// Mean planning CPU time per interval (s, see [`super::cpu_seconds`]).
    pub fn mean_plan_cpu_seconds(&self) -> f64 {
        self.plans.iter().map(|p| p.cpu_seconds).sum::<f64>() / self.plans.len().max(1) as f64
    }

    /// Σ dt·l + l_T over the episode.
    pub fn total_cost(&self) -> f64 {
        self.running_cost.iter().sum::<f64>() * self.dt + self.terminal_cost
    }

    /// The last state (nx = states.len() / rows).
    pub fn final_state(&self, nx: usize) -> &[f64] {
        &self.states[self.states.len() - nx..]
    }
}

/// Runs `steps` control intervals on `plant` from `x0` (which is also set
/// as its state), planning before each with `budget`. A planning error is
/// recorded and the previous plan, shifted, applied; a plant failure ends
/// the episode (recorded in [`Episode::failure`]).
pub fn closed_loop(
    planner: &mut dyn Planner,
    plant: &mut Plant,
    x0: &[f64],
    steps: usize,
    budget: Budget,
) -> Result<Episode, MpcError> {
    let problem = planner.problem().clone();
    let (nx, nc, dt) = (problem.nx(), problem.nc(), problem.dt);
    if x0.len() != nx {
        return Err(MpcError::Input(format!("initial state: expected {nx} values, got {}", x0.len())));
    }
    plant.control = problem.control;
    plant.set_state(x0);
    let mut ws = Workspace::new(plant.world.sim.model.clone());
    let mut ep = Episode { dt, ..Default::default() };
    ep.states.extend_from_slice(&plant.state());
    for k in 0..steps {
        let x = plant.state();
        if k > 0 {
            planner.shift();
        }
        match planner.plan(&x, budget) {
            Ok(s) => ep.plans.push(s),
            Err(e) => {
                ep.planning_errors.push((k, e.to_string()));
                ep.plans.push(PlanStats::default());
            }
        }
        let u = planner.controls()[..nc].to_vec();
        ep.running_cost.push(problem.cost.running(&mut ws, &x, &u, None));
        ep.controls.extend_from_slice(&u);
        if let Err(e) = plant.step(&u, dt) {
            ep.failure = Some(format!("interval {k} (t = {:.3} s): {e}", k as f64 * dt));
            break;
        }
        ep.states.extend_from_slice(&plant.state());
    }
    let last = ep.final_state(nx).to_vec();
    ep.terminal_cost = problem.cost.terminal(&mut ws, &last, None);
    Ok(ep)
}
