//! MPC tasks with seeded goals, shared by the examples, the evaluation and
//! the tests.
//!
//! | task | model | dt × H (s) | episode | goal (per seed) | success |
//! |---|---|---|---|---|---|
//! | `reacher` | gymnasium `reacher.xml` | 0.02 × 25 | 1 s | target in a disc of 0.2 m (gymnasium's) | fingertip within 2 cm of the target at the end |
//! | `pusher` | gymnasium Pusher-v5 ([`pusher_model`]) | 0.05 × 10 | 5 s | object placed as gymnasium does, goal in a 0.1 m disc around gymnasium's | object centre within 5 cm of the goal at the end |
//! | `billiards` | built-in: a striker confined to a 0.25 m box bats a puck | 0.05 × 30 | 2 s | target 0.35–0.6 m from the puck, ±25° off the line | puck within 5 cm of the target at the end |
//! | `push` | built-in: a sphere finger on two slides pushes a free box on a floor ([`PUSH_XML`]) | 0.05 × 20 | 4 s | on a ring 0.4 m from the box's start, angle from the seed | box centre within 5 cm of the goal at the end |
//! | `half_cheetah` | gymnasium `half_cheetah.xml` | 0.05 × 16 | 3 s | forward speed 1–3 m/s | mean speed over the last half within 25 % of the goal |
//! | `cube_turn` | built-in ([`CUBE_TURN_XML`]): two fingertips on slides turn a cube on a table | 0.05 × 15 | 3 s | yaw ±30–90° | cube's orientation within 10° of the goal at the end |
//! | `pusher_plain` | as `pusher` | 0.05 × 10 | 5 s | as `pusher` | as `pusher` |
//!
//! Costs use little beyond what the task asks for, so that the first
//! contact has to be found: the case for contacts from distance
//! ([`Task::cfd`]). The pusher's is the object's distance to the goal, a
//! small control effort (10⁻³, so that idle controls decay), a weak
//! work-plane term drawing the fork to the object's height and two weak
//! terms ([`PusherCost`], weight 0.3 each against the object term's 1)
//! that draw the fork's crossbar to the point behind the object along
//! the current object→goal direction ([`Target::Behind`]) and a point
//! inside the fork's U to the object's centre (the cage term), both in
//! 3-D (a fork beside or ahead of the object may lift over it to get
//! behind: a stiff work plane held it in the plane, where it had to push
//! through the object; gymnasium's reward has a fork–object distance
//! term at weight 0.5). Without them an arm that swings past the object,
//! farther than the contacts-from-distance width, has no gradient left;
//! with the object in the U the fork pushes it along any direction
//! within about ±80° of its heading, where a flat face alone lets it
//! slide off sideways. The object's contact is MuJoCo's soft contact
//! (the model's [`Semantics::MuJoCo`](crate::model::Semantics::MuJoCo)):
//! on the 7.9e-6 kg object it is soft (0.393 N/m at the fork's centimetre
//! penetrations), so a push faster than a few cm/s sinks the fork into the
//! object, and pushes take seconds. The billiards' is the puck's distance to the target.
//! The suite's tasks ([`SUITE`]) have costs as a user would write them:
//! `pusher_plain` is the pusher with the object's distance and the effort
//! alone ([`PUSHER_PLAIN`]), `cube_turn` the cube's orientation error and
//! a small effort.
//! The planner simulates fixed steps: one per interval (reacher), four
//! (pusher: coarser steps mispredict the frictionless push, see
//! `BENCHMARKS.md`) or more (billiards and cube turn 5, cheetah 8); the plant runs CENIC
//! at accuracy 1e-3.
//! Each task names the evaluation's planning budget per interval
//! ([`Task::budget`], the same for every planner) and its gradient
//! planner settings ([`Task::ilqr`]).

use super::cost::{
    ControlEffort, Cost, CostSum, JointLimitMargin, OrientationError, Penalty, QuadraticTracking, Target,
    TargetDistance, Workspace,
};
use super::{Budget, Episode, IlqrOptions, MpcError, Plant, Problem};
use crate::batch::WorldParams;
use crate::diff::Cfd;
use crate::integrator::{CenicParams, Mode};
use crate::model::Model;
use crate::rl::EnvRng;
use crate::rl::tasks::pusher_v5_mjcf;
use std::path::Path;
use std::sync::Arc;

/// The built-in tasks.
pub const NAMES: [&str; 7] = ["reacher", "pusher", "billiards", "half_cheetah", "cube_turn", "pusher_plain", "push"];

/// The evaluation suite of contact tasks with unshaped costs (each the
/// goal's own distance or orientation error, plus at most a small control
/// effort), and the reacher as the contact-free control case: `push` (a
/// finger on two slides pushes a box), [`cube_turn`], [`pusher_plain`],
/// [`billiards`] (the puck batted to a target: its cost is the puck's
/// distance alone) and [`reacher`]. A name [`Task::new`] does not know is
/// reported and skipped by the evaluation (`examples/mpc.rs --suite`).
pub const SUITE: [&str; 5] = ["push", "cube_turn", "pusher_plain", "billiards", "reacher"];

/// The tasks whose model is built in (the others load the shared gymnasium models).
pub const BUILT_IN: [&str; 3] = ["billiards", "cube_turn", "push"];

/// How a task's success is measured on an episode.
#[derive(Clone, Debug, PartialEq)]
pub enum Measure {
    /// The distance (m) of a body point to its target at the end of the episode.
    FinalDistance(TargetDistance),
    /// The mean of velocity coordinate `dof` over the last half of the
    /// episode, relative to `goal`: |mean − goal| / goal.
    MeanSpeed {
        /// Velocity index (into v).
        dof: usize,
        /// Goal speed (m/s).
        goal: f64,
    },
    /// The angle (rad) between a body's orientation and its goal at the
    /// end of the episode (geodesic, [`OrientationError::angle`]).
    FinalAngle(OrientationError),
}

/// A control task: the planning problem, the plant and the goal.
#[derive(Clone)]
pub struct Task {
    /// Task name (one of [`NAMES`]).
    pub name: &'static str,
    /// The planning problem (planner's model and integration).
    pub problem: Problem,
    /// The plant's integration (the model is the problem's).
    pub plant_mode: Mode,
    /// The plant's physical parameters.
    pub plant_params: WorldParams,
    /// Initial state.
    pub x0: Vec<f64>,
    /// Control intervals in an episode.
    pub steps: usize,
    /// Contacts from distance suited to the task (for the gradient planner).
    pub cfd: Cfd,
    /// Settings of the gradient planner for this task (contacts from
    /// distance off: the evaluation turns them on with [`Task::cfd`]).
    pub ilqr: IlqrOptions,
    /// Planning budget per control interval of the evaluation (the same
    /// for every planner).
    pub budget: Budget,
    /// What counts as success.
    pub measure: Measure,
    /// Success when the measure is at most this (m, rad, or relative).
    pub tolerance: f64,
    /// Body points to draw (name, body, offset in m), the first one the tracked one.
    pub draw: Vec<(String, usize, [f64; 3])>,
    /// The goal of the tracked point (m, world), for plots.
    pub goal: [f64; 3],
}

impl Task {
    /// The task `name` for goal `seed`; `models_dir` is the folder of the
    /// shared gymnasium models (`…/models/gymnasium`).
    pub fn new(name: &str, models_dir: &Path, seed: u64) -> Result<Self, MpcError> {
        match name {
            "reacher" => reacher(models_dir, seed),
            "pusher" => pusher(models_dir, seed),
            "billiards" => billiards(seed),
            "half_cheetah" => half_cheetah(models_dir, seed),
            "cube_turn" => cube_turn(seed),
            "pusher_plain" => pusher_plain(models_dir, seed),
            "push" => push(seed),
            _ => Err(MpcError::Input(format!("unknown task '{name}' (known: {})", NAMES.join(", ")))),
        }
    }

    /// A plant for this task, at the initial state.
    pub fn plant(&self) -> Plant {
        let mut p = Plant::new(self.problem.model.clone(), self.plant_mode.clone(), self.plant_params);
        p.set_state(&self.x0);
        p
    }

    /// The success measure of an episode (see [`Measure`]).
    pub fn error(&self, ep: &Episode) -> f64 {
        let nx = self.problem.nx();
        match &self.measure {
            Measure::FinalDistance(d) => {
                let mut ws = Workspace::new(self.problem.model.clone());
                d.distance(&mut ws, ep.final_state(nx))
            }
            Measure::MeanSpeed { dof, goal } => {
                let rows = ep.states.len() / nx;
                let from = rows / 2;
                let nq = self.problem.model.nq;
                let mean = (from..rows).map(|k| ep.states[k * nx + nq + dof]).sum::<f64>() / (rows - from) as f64;
                (mean - goal).abs() / goal.abs()
            }
            Measure::FinalAngle(o) => {
                let mut ws = Workspace::new(self.problem.model.clone());
                o.angle(&mut ws, ep.final_state(nx))
            }
        }
    }

    /// Whether the episode met the goal (and the plant did not fail).
    pub fn success(&self, ep: &Episode) -> bool {
        ep.failure.is_none() && self.error(ep) <= self.tolerance
    }
}

fn load(models_dir: &Path, file: &str) -> Result<Arc<Model>, MpcError> {
    let path = models_dir.join(file);
    Model::from_mjcf_file(&path).map(Arc::new).map_err(|e| MpcError::Input(format!("{}: {e}", path.display())))
}

fn body(model: &Model, name: &str) -> Result<usize, MpcError> {
    model.body_id(name).ok_or_else(|| MpcError::Input(format!("model '{}' has no body '{name}'", model.name)))
}

fn joint_qpos(model: &Model, name: &str) -> Result<usize, MpcError> {
    model
        .joint_id(name)
        .map(|j| model.joints[j].qpos_adr)
        .ok_or_else(|| MpcError::Input(format!("model '{}' has no joint '{name}'", model.name)))
}

/// The plant's integration: CENIC at accuracy 1e-3.
fn plant_mode() -> Mode {
    Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..Default::default() })
}

fn state(model: &Model, q: Vec<f64>) -> Vec<f64> {
    let mut x = q;
    x.extend(std::iter::repeat_n(0.0, model.nv));
    x
}

/// A point's world position at state `x`.
fn world_point(model: &Arc<Model>, x: &[f64], body: usize, offset: [f64; 3]) -> [f64; 3] {
    Workspace::new(model.clone()).point(&x[..model.nq], body, offset)
}

/// The gradient planner's settings on every task: each linearization
/// serves two further iterations (the Jacobian pass costs 25–60 rollouts).
fn default_ilqr() -> IlqrOptions {
    IlqrOptions { reuse: 2, ..Default::default() }
}

/// The evaluation's budget: 80 % of the control interval in CPU time, so
/// that planning runs faster than real time on one core with room for the
/// last iteration's overrun.
fn default_budget(problem: &Problem) -> Budget {
    Budget::CpuTime(std::time::Duration::from_secs_f64(0.8 * problem.dt))
}

#[allow(clippy::too_many_arguments)]
fn distance_task(
    name: &'static str,
    problem: Problem,
    x0: Vec<f64>,
    steps: usize,
    cfd: Cfd,
    measured: TargetDistance,
    tolerance: f64,
    extra: &[usize],
) -> Task {
    let goal = match measured.target {
        Target::Point(p) => p,
        Target::Body { body, offset } => world_point(&problem.model, &x0, body, offset),
        Target::Behind { body, .. } => world_point(&problem.model, &x0, body, [0.0; 3]),
    };
    let name_of = |b: usize| problem.model.bodies[b].name.clone();
    let mut draw = vec![(name_of(measured.body), measured.body, measured.offset)];
    draw.extend(extra.iter().map(|&b| (name_of(b), b, [0.0; 3])));
    Task {
        name,
        plant_mode: plant_mode(),
        plant_params: WorldParams::default(),
        x0,
        steps,
        cfd,
        ilqr: default_ilqr(),
        budget: default_budget(&problem),
        measure: Measure::FinalDistance(measured),
        tolerance,
        draw,
        goal,
        problem,
    }
}

/// Reacher: the fingertip to a random target (no contact).
pub fn reacher(models_dir: &Path, seed: u64) -> Result<Task, MpcError> {
    let model = load(models_dir, "reacher.xml")?;
    let mut rng = EnvRng::new(seed, 0);
    let mut q = model.qpos0.clone();
    rng.add_uniform(&mut q[..2], 0.1);
    let goal = loop {
        let g = [rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)];
        if (g[0] * g[0] + g[1] * g[1]).sqrt() < 0.2 {
            break g;
        }
    };
    q[joint_qpos(&model, "target_x")?] = goal[0];
    q[joint_qpos(&model, "target_y")?] = goal[1];
    let x0 = state(&model, q);
    let tip = body(&model, "fingertip")?;
    let target = body(&model, "target")?;
    let goal = world_point(&model, &x0, target, [0.0; 3]);
    let reach = TargetDistance {
        body: tip,
        offset: [0.0; 3],
        target: Target::Point(goal),
        axes: [true, true, false],
        running_weight: 1.0,
        terminal_weight: 2.0,
        penalty: Penalty::SmoothAbs { epsilon: 0.01 },
    };
    // Arm joint velocities damped, so that the fingertip stops on the target.
    let nx = model.nq + model.nv;
    let mut wv = vec![0.0; nx];
    wv[model.nq..model.nq + 2].fill(1e-3);
    let cost = CostSum::new()
        .with(reach.clone())
        .with(QuadraticTracking::diagonal(vec![0.0; nx], &wv, &wv))
        .with(ControlEffort::uniform(model.nu(), 1e-3));
    let problem = Problem::new(model.clone(), Mode::Fixed { dt: 0.02 }, 0.02, 25, Arc::new(cost))?;
    let cfd = Cfd { width: 0.05, strength: 1.0 };
    Ok(distance_task("reacher", problem, x0, 50, cfd, reach, 0.02, &[]))
}

/// The gymnasium Pusher-v5 model (`pusher.xml` with v5's edits, as
/// [`crate::rl::tasks::load_model`] makes it) with the goal marker's two
/// slide joints removed: the marker has no physics (it collides with
/// nothing), and the task's goal is a point of the cost, so the marker
/// stays at gymnasium's default goal and the state loses 4 entries that
/// every Jacobian pass would otherwise carry (nx = 18 instead of 22).
pub fn pusher_model(models_dir: &Path) -> Result<Arc<Model>, MpcError> {
    let path = models_dir.join("pusher.xml");
    let bad = |e: String| MpcError::Input(format!("{}: {e}", path.display()));
    let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    let goal_joints = [
        r#"<joint name="goal_slidey" type="slide" pos="0 0 0" axis="0 1 0" range="-10.3213 10.3" damping="0.5"/>"#,
        r#"<joint name="goal_slidex" type="slide" pos="0 0 0" axis="1 0 0" range="-10.3213 10.3" damping="0.5"/>"#,
    ];
    if let Some(missing) = goal_joints.iter().find(|t| !text.contains(**t)) {
        return Err(bad(format!("not gymnasium's pusher (no `{missing}`)")));
    }
    let mut v5 = pusher_v5_mjcf(&text).map_err(bad)?;
    for j in goal_joints {
        v5 = v5.replace(j, "");
    }
    let mut model = Model::from_mjcf_str(&v5).map_err(|e| bad(e.to_string()))?;
    // The object–table contact is frictionless (condim 1) and normal to the
    // object's two horizontal slides, so it exerts no generalized force:
    // drop it (object contype 2, the moving geoms that touch the object
    // accept 2) and spare every step and Jacobian pass its constraints and
    // phantom pairs.
    let object = body(&model, "object")?;
    let on_object: Vec<usize> =
        (0..model.geoms.len()).filter(|&g| model.geoms[g].body == object && model.geoms[g].contype != 0).collect();
    let partners: Vec<usize> = (0..model.geoms.len())
        .filter(|&g| {
            model.body_is_dynamic(model.geoms[g].body) && on_object.iter().any(|&o| model.geoms_can_collide(g, o))
        })
        .collect();
    for &g in &on_object {
        model.geoms[g].contype = 2;
        model.geoms[g].conaffinity = 0;
    }
    for g in partners {
        model.geoms[g].conaffinity |= 2;
    }
    Ok(Arc::new(model))
}

/// Weight (cost per m and s) of the pusher's reach term (see [`PusherCost`]).
pub const PUSHER_REACH: f64 = 0.3;

/// Distance (m) from the object's centre, against the push, of the
/// point the pusher's reach term draws the fork's crossbar to: the
/// object's radius (0.05) plus the crossbar's (0.02), i.e. touching it.
pub const PUSHER_REACH_BEHIND: f64 = 0.07;

/// Distance (m) ahead of the object's centre, along the push, of the
/// point the reach term draws the middle of the fork's tine tips to
/// ([`PusherCost::nose`]): the tines (0.1 m long) around the object and
/// the crossbar [`PUSHER_REACH_BEHIND`] behind its centre.
pub const PUSHER_NOSE_AHEAD: f64 = 0.1 - PUSHER_REACH_BEHIND;

/// The pusher's cost besides the object's distance to the goal (weight
/// 1 per m and s, running and terminal): which shaping terms it has and
/// their weights. [`PusherCost::default`] is the task's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PusherCost {
    /// Reach weight (cost per m and s; 0: no reach term): the running cost
    /// gets `reach`·|p − b| (smoothed, in 3-D or the plane: [`PusherCost::reach_3d`]), p the fork's crossbar
    /// centre (`tips_arm`'s origin) and b the point [`PUSHER_REACH_BEHIND`]
    /// behind the object's centre, against the push. Without it, an arm
    /// that has swung more than the contacts-from-distance width away from
    /// the object sees no gradient at all and the plan stops (the task
    /// cost is flat there).
    pub reach: f64,
    /// Whether "against the push" is the current object→goal direction
    /// ([`Target::Behind`], with its derivatives through the object's
    /// position) rather than the initial one (fixed at the task's start).
    pub reach_follows: bool,
    /// Nose weight (cost per m and s; 0: none, the task's: the cage term
    /// holds the object in the U without fixing the heading, 33–36/40
    /// goals against 28–32/40 with the nose, `BENCHMARKS.md`): the running cost also gets
    /// `nose`·|n − a| (smoothed, likewise), n the middle of the fork's
    /// tine tips (offset (0.1, 0, 0) m on `tips_arm`) and a the point
    /// [`PUSHER_NOSE_AHEAD`] ahead of the object's centre along the push:
    /// the fork pointing along the push with the object between its tines. The object–fork contact is frictionless
    /// (condim 1), so an object pushed by the crossbar alone slides off
    /// it sideways; between the tines it stays in place.
    pub nose: f64,
    /// Work-plane weight (cost per m² and s, quadratic): the fork drawn
    /// to the object's height.
    pub plane: f64,
    /// Whether the work plane holds the two tine tips as well as the
    /// crossbar's centre (the fork level), not the crossbar alone.
    pub plane_tines: bool,
    /// Control effort weight (cost per (N m)² and s).
    pub effort: f64,
    /// Arm joint velocity weight (cost per (rad/s)² and s, quadratic; 0:
    /// none): a slower arm, whose pushes the planner's coarse steps
    /// predict better.
    pub velocity: f64,
    /// Joint-limit weight (cost per rad² and s; 0: none): the arm's seven
    /// hinges kept out of the band of [`PUSHER_LIMIT_MARGIN`] of their
    /// range inside each limit ([`JointLimitMargin`]).
    pub limits: f64,
    /// Whether the reach and nose terms measure distance in 3-D (their
    /// targets at the object's height) rather than in the plane.
    pub reach_3d: bool,
    /// Terminal weight of the object's distance to the goal (cost per m;
    /// the running weight is 1 per m and s).
    pub push_terminal: f64,
    /// Cage weight (cost per m and s; 0: none): the running cost gets
    /// `cage`·|c − o| (smoothed, 3-D), c the fork point [`PUSHER_CAGE`]
    /// (inside the U, touching the crossbar) and o the object's centre:
    /// the object held between the tines whatever the fork's heading.
    /// With the object in the U, the crossbar and a tine's inner side
    /// push it along any direction between their normals; the nose term
    /// instead asked for the heading along the push, which for most goals
    /// lies at the arm's joint limits (`tools/pusher_cage.rs`). With
    /// the reach term it still draws the fork to that pose; alone it
    /// leaves the fork no side to approach from (26/40 goals).
    pub cage: f64,
}

/// The fork point (m, in `tips_arm`'s frame) of the cage term
/// ([`PusherCost::cage`]): centred between the tines, the object's radius
/// (0.05) plus the crossbar's (0.02) ahead of the crossbar's axis.
pub const PUSHER_CAGE: [f64; 3] = [0.07, 0.0, 0.0];

/// Width of the pusher's joint-limit band ([`PusherCost::limits`]), as a
/// fraction of each hinge's range.
pub const PUSHER_LIMIT_MARGIN: f64 = 0.15;

impl Default for PusherCost {
    fn default() -> Self {
        Self {
            reach: PUSHER_REACH,
            reach_follows: true,
            nose: 0.0,
            plane: 1.0,
            plane_tines: false,
            effort: 1e-3,
            velocity: 0.0,
            limits: 0.0,
            reach_3d: true,
            push_terminal: 1.0,
            cage: PUSHER_REACH,
        }
    }
}

/// Pusher: the object to a random goal, cost on the object's distance
/// plus the shaping terms of [`PusherCost::default`] (see the
/// [module docs](self)).
pub fn pusher(models_dir: &Path, seed: u64) -> Result<Task, MpcError> {
    pusher_with(models_dir, seed, PusherCost::default())
}

/// [`pusher`] with reach weight `reach` (cost per m and s; 0: none), the
/// other terms as [`PusherCost::default`].
pub fn pusher_with_reach(models_dir: &Path, seed: u64, reach: f64) -> Result<Task, MpcError> {
    pusher_with(models_dir, seed, PusherCost { reach, ..Default::default() })
}

/// [`pusher`] with the shaping terms of `shaping`.
pub fn pusher_with(models_dir: &Path, seed: u64, shaping: PusherCost) -> Result<Task, MpcError> {
    let model = pusher_model(models_dir)?;
    let mut rng = EnvRng::new(seed, 0);
    let mut q = model.qpos0.clone();
    let (oy, ox) = (joint_qpos(&model, "obj_slidey")?, joint_qpos(&model, "obj_slidex")?);
    // gymnasium: qpos[-4:-2] (slide y, slide x) = (U(−0.3, 0), U(−0.2, 0.2)), at least 0.17 from the goal;
    // the goal here is (slide y, slide x) = g instead of gymnasium's (0, 0).
    let (obj, goal) = loop {
        let o = [rng.uniform(-0.3, 0.0), rng.uniform(-0.2, 0.2)];
        let r = 0.1 * rng.uniform(0.0, 1.0).sqrt();
        let a = std::f64::consts::TAU * rng.uniform(0.0, 1.0);
        let g = [r * a.cos(), r * a.sin()];
        if ((o[0] - g[0]).powi(2) + (o[1] - g[1]).powi(2)).sqrt() > 0.17 {
            break (o, g);
        }
    };
    q[oy] = obj[0];
    q[ox] = obj[1];
    let x0 = state(&model, q);
    let object = body(&model, "object")?;
    let marker = world_point(&model, &x0, body(&model, "goal")?, [0.0; 3]);
    let goal = [marker[0] + goal[1], marker[1] + goal[0], marker[2]];
    let push = TargetDistance {
        body: object,
        offset: [0.0; 3],
        target: Target::Point(goal),
        axes: [true, true, false],
        running_weight: 1.0,
        terminal_weight: shaping.push_terminal,
        penalty: Penalty::SmoothAbs { epsilon: 0.01 },
    };
    // The work plane: the fork at the object's height. From above, every contact
    // normal to the object is vertical and moves neither slide, so contacts
    // from distance alone give no reason to come down.
    let tip = body(&model, "tips_arm")?;
    let o0 = world_point(&model, &x0, object, [0.0; 3]);
    let mut cost = CostSum::new().with(push.clone());
    let points: &[[f64; 3]] =
        if shaping.plane_tines { &[[0.0; 3], [0.1, -0.1, 0.0], [0.1, 0.1, 0.0]] } else { &[[0.0; 3]] };
    for &offset in points {
        cost = cost.with(TargetDistance {
            body: tip,
            offset,
            target: Target::Point([0.0, 0.0, o0[2]]),
            axes: [false, false, true],
            running_weight: shaping.plane / points.len() as f64,
            terminal_weight: 0.0,
            penalty: Penalty::Quadratic,
        });
    }
    if shaping.reach > 0.0 {
        // The push direction is horizontal: the goal at the object's height.
        let goal = [goal[0], goal[1], o0[2]];
        let target = if shaping.reach_follows {
            Target::Behind { body: object, goal, distance: PUSHER_REACH_BEHIND, smoothing: 0.02 }
        } else {
            let (dx, dy) = (goal[0] - o0[0], goal[1] - o0[1]);
            let n = (dx * dx + dy * dy).sqrt();
            Target::Body { body: object, offset: [-PUSHER_REACH_BEHIND * dx / n, -PUSHER_REACH_BEHIND * dy / n, 0.0] }
        };
        let axes = [true, true, shaping.reach_3d];
        cost = cost.with(TargetDistance {
            body: tip,
            offset: [0.0; 3],
            target,
            axes,
            running_weight: shaping.reach,
            terminal_weight: 0.0,
            penalty: Penalty::SmoothAbs { epsilon: 0.01 },
        });
        if shaping.nose > 0.0 {
            cost = cost.with(TargetDistance {
                body: tip,
                offset: [0.1, 0.0, 0.0],
                target: Target::Behind { body: object, goal, distance: -PUSHER_NOSE_AHEAD, smoothing: 0.02 },
                axes,
                running_weight: shaping.nose,
                terminal_weight: 0.0,
                penalty: Penalty::SmoothAbs { epsilon: 0.01 },
            });
        }
    }
    if shaping.cage > 0.0 {
        cost = cost.with(TargetDistance {
            body: tip,
            offset: PUSHER_CAGE,
            target: Target::Body { body: object, offset: [0.0; 3] },
            axes: [true, true, true],
            running_weight: shaping.cage,
            terminal_weight: 0.0,
            penalty: Penalty::SmoothAbs { epsilon: 0.01 },
        });
    }
    if shaping.velocity > 0.0 {
        // The arm's 7 hinges are the first velocity coordinates (the object's slides follow).
        let nx = model.nq + model.nv;
        let mut wv = vec![0.0; nx];
        wv[model.nq..model.nq + model.nu()].fill(shaping.velocity);
        cost = cost.with(QuadraticTracking::diagonal(vec![0.0; nx], &wv, &vec![0.0; nx]));
    }
    if shaping.limits > 0.0 {
        // The arm's hinges (the object's slides are limited far outside the table).
        let mut limits = JointLimitMargin::of_model(&model, PUSHER_LIMIT_MARGIN, shaping.limits);
        limits.joints.retain(|&(i, ..)| i < model.nu());
        cost = cost.with(limits);
    }
    let cost = cost.with(ControlEffort::uniform(model.nu(), shaping.effort));
    // Four steps of 12.5 ms per interval: at 25 ms the fork's predicted
    // position one interval ahead missed the plant's by several mm, enough
    // to lose the frictionless push (BENCHMARKS.md, "Pusher");
    // the shorter horizon (0.5 s) keeps the 40 steps per plan of 20 × 2
    // steps, so a linearization still fits the budget.
    let problem = Problem::new(model.clone(), Mode::Fixed { dt: 0.0125 }, 0.05, 10, Arc::new(cost))?;
    let cfd = Cfd { width: 0.5, strength: 1.0 };
    Ok(distance_task("pusher", problem, x0, 100, cfd, push, 0.05, &[tip]))
}

/// MJCF of the billiards-like task: a striker sphere on two actuated
/// slides, confined to a 0.25 m box, and a puck (a cylinder on its face)
/// sliding on a table with μ = 0.3.
pub const BILLIARDS_XML: &str = r#"<mujoco model="billiards">
  <option timestep="0.01"/>
  <worldbody>
    <geom name="table" type="plane" size="2 2 0.1" friction="0.3" contype="1" conaffinity="1"/>
    <body name="striker" pos="0 0 0.012">
      <joint name="striker_x" type="slide" axis="1 0 0" range="-0.1 0.15" damping="2"/>
      <joint name="striker_y" type="slide" axis="0 1 0" range="-0.1 0.1" damping="2"/>
      <geom name="striker" type="sphere" size="0.02" mass="0.5" contype="2" conaffinity="2"/>
    </body>
    <body name="puck" pos="0.1 0 0.012">
      <freejoint name="puck"/>
      <geom name="puck" type="cylinder" size="0.03 0.012" mass="0.1" friction="0.3" contype="3" conaffinity="3"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="x" joint="striker_x" gear="10" ctrlrange="-1 1"/>
    <motor name="y" joint="striker_y" gear="10" ctrlrange="-1 1"/>
  </actuator>
</mujoco>"#;

/// Billiards-like: the striker bats the puck toward a random target; the
/// target is out of the striker's reach, so the first contact decides.
pub fn billiards(seed: u64) -> Result<Task, MpcError> {
    let model = Arc::new(Model::from_mjcf_str(BILLIARDS_XML).map_err(|e| MpcError::Input(e.to_string()))?);
    let mut rng = EnvRng::new(seed, 0);
    let puck = body(&model, "puck")?;
    let q = model.qpos0.clone();
    let x0 = state(&model, q);
    let start = world_point(&model, &x0, puck, [0.0; 3]);
    let (d, a) = (rng.uniform(0.35, 0.6), rng.uniform(-25.0, 25.0).to_radians());
    let goal = [start[0] + d * a.cos(), start[1] + d * a.sin(), start[2]];
    let hit = TargetDistance {
        body: puck,
        offset: [0.0; 3],
        target: Target::Point(goal),
        axes: [true, true, false],
        running_weight: 0.0,
        terminal_weight: 1.0,
        penalty: Penalty::SmoothAbs { epsilon: 0.01 },
    };
    let mode = Mode::Fixed { dt: 0.01 };
    let problem = Problem::new(model.clone(), mode, 0.05, 30, Arc::new(hit.clone()))?;
    let cfd = Cfd { width: 0.1, strength: 1.0 };
    let mut task = distance_task("billiards", problem, x0, 40, cfd, hit, 0.05, &[body(&model, "striker")?]);
    // No slack acceptance: with no control effort the first full step is
    // bang-bang, and accepted without a decrease it parks the striker in a
    // corner of its box where every control sits on its bound, the box QP
    // has no free control left and planning stops (0/20 goals with it, 5/20
    // without, BENCHMARKS.md).
    task.ilqr.cfd_slack = -1.0;
    Ok(task)
}

/// Half cheetah: run forward at a random speed.
pub fn half_cheetah(models_dir: &Path, seed: u64) -> Result<Task, MpcError> {
    let model = load(models_dir, "half_cheetah.xml")?;
    let mut rng = EnvRng::new(seed, 0);
    let mut q = model.qpos0.clone();
    rng.add_uniform(&mut q, 0.1);
    let goal = rng.uniform(1.0, 3.0);
    let (nq, nx) = (model.nq, model.nq + model.nv);
    let rootx = model.joint_id("rootx").map(|j| model.joints[j].dof_adr).unwrap_or(0);
    let rooty = joint_qpos(&model, "rooty")?;
    let mut reference = vec![0.0; nx];
    reference[nq + rootx] = goal;
    let mut w = vec![0.0; nx];
    w[nq + rootx] = 1.0;
    w[rooty] = 1.0;
    let cost: Arc<dyn Cost> = Arc::new(
        CostSum::new()
            .with(QuadraticTracking::diagonal(reference, &w, &w))
            .with(ControlEffort::uniform(model.nu(), 0.05)),
    );
    let x0 = state(&model, q);
    // Eight steps of 6.25 ms per interval: with the plant's own integration
    // the planner solved 20/20 goals, at 25 ms steps against the CENIC plant
    // 5–7/20, at 6.25 ms 11/20 (BENCHMARKS.md): the running gait's contacts
    // need the finer steps more than the planner needs the iterations.
    let problem = Problem::new(model.clone(), Mode::Fixed { dt: 0.00625 }, 0.05, 16, cost)?;
    let torso = body(&model, "torso")?;
    let start = world_point(&model, &x0, torso, [0.0; 3]);
    Ok(Task {
        name: "half_cheetah",
        plant_mode: plant_mode(),
        plant_params: WorldParams::default(),
        steps: 60,
        cfd: Cfd { width: 0.05, strength: 10.0 },
        ilqr: default_ilqr(),
        budget: default_budget(&problem),
        measure: Measure::MeanSpeed { dof: rootx, goal },
        tolerance: 0.25,
        draw: vec![("torso".into(), torso, [0.0; 3])],
        goal: [start[0] + goal * 3.0, start[1], start[2]],
        x0,
        problem,
    })
}

/// The pusher's cost without shaping ([`pusher_plain`]): the object's
/// distance to the goal (weight 1 per m and s, and 1 per m at the end) and
/// the control effort (10⁻³ per (N m)² and s), nothing else.
pub const PUSHER_PLAIN: PusherCost = PusherCost {
    reach: 0.0,
    reach_follows: false,
    nose: 0.0,
    plane: 0.0,
    plane_tines: false,
    effort: 1e-3,
    velocity: 0.0,
    limits: 0.0,
    reach_3d: false,
    push_terminal: 1.0,
    cage: 0.0,
};

/// Pusher-v5 as a user would write it: the [`pusher`]'s model, goals and
/// planner settings with the cost [`PUSHER_PLAIN`] (no reach, cage or
/// work-plane terms).
pub fn pusher_plain(models_dir: &Path, seed: u64) -> Result<Task, MpcError> {
    let mut task = pusher_with(models_dir, seed, PUSHER_PLAIN)?;
    task.name = "pusher_plain";
    Ok(task)
}

/// MJCF of the cube-turning task: an 8 cm cube (0.1 kg) on a table with
/// μ = 0.5, and two fingertips (1.2 cm spheres, 0.05 kg) at the cube's
/// mid-height, each on two horizontal slides driven by position actuators
/// (kp 20 N/m, joint damping 2 N s/m: critically damped), starting 1.3 cm
/// off opposite faces. The fingertips touch the cube only (not the table
/// or each other).
pub const CUBE_TURN_XML: &str = r#"<mujoco model="cube_turn">
  <option timestep="0.01"/>
  <worldbody>
    <geom name="table" type="plane" size="1 1 0.1" friction="0.5" contype="1" conaffinity="1"/>
    <body name="cube" pos="0 0 0.04">
      <freejoint name="cube"/>
      <geom name="cube" type="box" size="0.04 0.04 0.04" mass="0.1" friction="0.5" contype="1" conaffinity="3"/>
    </body>
    <body name="finger_a" pos="0.065 0 0.04">
      <joint name="a_x" type="slide" axis="1 0 0" range="-0.1 0.1" damping="2"/>
      <joint name="a_y" type="slide" axis="0 1 0" range="-0.1 0.1" damping="2"/>
      <geom name="finger_a" type="sphere" size="0.012" mass="0.05" friction="1" contype="2" conaffinity="0"/>
    </body>
    <body name="finger_b" pos="-0.065 0 0.04">
      <joint name="b_x" type="slide" axis="1 0 0" range="-0.1 0.1" damping="2"/>
      <joint name="b_y" type="slide" axis="0 1 0" range="-0.1 0.1" damping="2"/>
      <geom name="finger_b" type="sphere" size="0.012" mass="0.05" friction="1" contype="2" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <position name="a_x" joint="a_x" kp="20" ctrlrange="-0.1 0.1"/>
    <position name="a_y" joint="a_y" kp="20" ctrlrange="-0.1 0.1"/>
    <position name="b_x" joint="b_x" kp="20" ctrlrange="-0.1 0.1"/>
    <position name="b_y" joint="b_y" kp="20" ctrlrange="-0.1 0.1"/>
  </actuator>
</mujoco>"#;

/// Angle (rad) within which [`cube_turn`] counts as solved: 10°.
pub const CUBE_TURN_TOLERANCE: f64 = 10.0 * std::f64::consts::PI / 180.0;

/// Cube turn: two fingertips turn a cube on a table about z to a goal yaw
/// of ±30–90° (seeded). Cost: the cube's geodesic orientation error to the
/// goal ([`OrientationError`], smooth-abs with ε = 0.05 rad, weight 1 per
/// rad and s and 1 per rad at the end) plus a control effort of 10⁻³ per m²
/// and s on the fingertip targets. Success: within [`CUBE_TURN_TOLERANCE`]
/// at the end of the 3 s episode.
pub fn cube_turn(seed: u64) -> Result<Task, MpcError> {
    let model = Arc::new(Model::from_mjcf_str(CUBE_TURN_XML).map_err(|e| MpcError::Input(e.to_string()))?);
    let mut rng = EnvRng::new(seed, 0);
    let cube = body(&model, "cube")?;
    let x0 = state(&model, model.qpos0.clone());
    let sign = if rng.uniform(0.0, 1.0) < 0.5 { -1.0 } else { 1.0 };
    let yaw = sign * rng.uniform(30.0, 90.0).to_radians();
    let turn = OrientationError {
        body: cube,
        goal: OrientationError::yaw(yaw),
        running_weight: 1.0,
        terminal_weight: 1.0,
        penalty: Penalty::SmoothAbs { epsilon: 0.05 },
    };
    let cost = CostSum::new().with(turn.clone()).with(ControlEffort::uniform(model.nu(), 1e-3));
    let problem = Problem::new(model.clone(), Mode::Fixed { dt: 0.01 }, 0.05, 15, Arc::new(cost))?;
    let centre = world_point(&model, &x0, cube, [0.0; 3]);
    Ok(Task {
        name: "cube_turn",
        plant_mode: plant_mode(),
        plant_params: WorldParams::default(),
        steps: 60,
        cfd: Cfd { width: 0.05, strength: 1.0 },
        ilqr: default_ilqr(),
        budget: default_budget(&problem),
        measure: Measure::FinalAngle(turn),
        tolerance: CUBE_TURN_TOLERANCE,
        draw: vec![
            ("cube corner".into(), cube, [0.04, 0.04, 0.0]),
            ("finger_a".into(), body(&model, "finger_a")?, [0.0; 3]),
            ("finger_b".into(), body(&model, "finger_b")?, [0.0; 3]),
        ],
        goal: {
            let g = OrientationError::yaw(yaw);
            let c = [0.04, 0.04, 0.0];
            [0, 1, 2].map(|i| centre[i] + (0..3).map(|j| g[i][j] * c[j]).sum::<f64>())
        },
        x0,
        problem,
    })
}

/// MJCF of the push task: a 4 cm sphere finger (0.2 kg) on two actuated
/// slides (±5 N, damping 5 N·s/m: top speed 1 m/s) at a 10 cm box's centre
/// height, and the box (0.3 kg, μ = 0.5 on the floor: 1.5 N of sliding
/// friction) free on the floor. The finger does not touch the floor.
pub const PUSH_XML: &str = r#"<mujoco model="push">
  <option timestep="0.01"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" friction="0.5" contype="1" conaffinity="1"/>
    <body name="finger" pos="0 0 0.05">
      <joint name="finger_x" type="slide" axis="1 0 0" range="-0.8 0.8" damping="5"/>
      <joint name="finger_y" type="slide" axis="0 1 0" range="-0.8 0.8" damping="5"/>
      <geom name="finger" type="sphere" size="0.02" mass="0.2" friction="0.5" contype="2" conaffinity="2"/>
    </body>
    <body name="box" pos="0.2 0 0.05">
      <freejoint name="box"/>
      <geom name="box" type="box" size="0.05 0.05 0.05" mass="0.3" friction="0.5" contype="3" conaffinity="3"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="x" joint="finger_x" gear="5" ctrlrange="-1 1"/>
    <motor name="y" joint="finger_y" gear="5" ctrlrange="-1 1"/>
  </actuator>
</mujoco>"#;

/// Distance (m) of the push task's goals from the box's start.
pub const PUSH_GOAL_DISTANCE: f64 = 0.4;

/// Push: the finger pushes the box to a goal on a ring of
/// [`PUSH_GOAL_DISTANCE`] around the box's start, at an angle drawn
/// uniformly from the seed (goals beside and behind the box, seen from the
/// finger, need the finger to go around it). The cost is the task's alone:
/// the box's distance to the goal (running and terminal) and a 10⁻³
/// control effort, no term drawing the finger to the box, so the first
/// contact has to come from contacts from distance (width 0.3 m, the box
/// 0.13 m from the finger at the start). The episode lasts 4 s: around the
/// box and a 0.4 m push is about 1 m of finger travel, 1–2 s at the
/// finger's top speed with the box's friction to overcome, leaving the
/// planner time to find the contact.
pub fn push(seed: u64) -> Result<Task, MpcError> {
    let mut rng = EnvRng::new(seed, 0);
    push_toward(rng.uniform(-std::f64::consts::PI, std::f64::consts::PI))
}

/// [`push`] with the goal at angle `a` (rad) around the box's start,
/// measured from the direction away from the finger (0: straight ahead
/// of the finger's push, ±π/2: beside the box, π: behind the finger).
pub fn push_toward(a: f64) -> Result<Task, MpcError> {
    let model = Arc::new(Model::from_mjcf_str(PUSH_XML).map_err(|e| MpcError::Input(e.to_string()))?);
    let b = body(&model, "box")?;
    let x0 = state(&model, model.qpos0.clone());
    let start = world_point(&model, &x0, b, [0.0; 3]);
    let goal = [start[0] + PUSH_GOAL_DISTANCE * a.cos(), start[1] + PUSH_GOAL_DISTANCE * a.sin(), start[2]];
    let distance = TargetDistance {
        body: b,
        offset: [0.0; 3],
        target: Target::Point(goal),
        axes: [true, true, false],
        running_weight: 1.0,
        terminal_weight: 1.0,
        penalty: Penalty::SmoothAbs { epsilon: 0.01 },
    };
    let cost = CostSum::new().with(distance.clone()).with(ControlEffort::uniform(model.nu(), 1e-3));
    let problem = Problem::new(model.clone(), Mode::Fixed { dt: 0.01 }, 0.05, 20, Arc::new(cost))?;
    let cfd = Cfd { width: 0.3, strength: 1.0 };
    let mut task = distance_task("push", problem, x0, 80, cfd, distance, 0.05, &[body(&model, "finger")?]);
    // The box rests held by static friction, which absorbs nearly all of
    // the phantom gradient: without the strength continuation the plan
    // never leaves the zero plan on goals beside the box (BENCHMARKS.md, "Push").
    task.ilqr.cfd_boost = 10.0;
    Ok(task)
}
