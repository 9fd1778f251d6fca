//! The model zoo: the shared robot models and scenes run the same way
//! everywhere (convergence suite, speed benchmarks, the MuJoCo script), so
//! that their numbers compare.
//!
//! A [`Case`] is a model with an initial state. A run integrates it for a
//! horizon with either zero controls or [`smooth_control`]s (a seeded sum of
//! sines within each actuator's `ctrlrange`, held constant over each
//! [`CONTROL_INTERVAL`]), sampling every moving body's position and speed
//! at every control interval. `scripts/mujoco_bench.py` and
//! `scripts/mujoco_zoo_fixtures.py` implement the same controls, bit for
//! bit in the phases and frequencies, so MuJoCo runs see the same inputs.

use crate::dynamics::{self, Data};
use crate::integrator::{Mode, World, WorldStats};
use crate::model::{JointKind, Model, ModelError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Controls are held constant over intervals of this length (s).
pub const CONTROL_INTERVAL: f64 = 0.01;

/// A model and the state a run starts from.
#[derive(Clone, Debug)]
pub struct Case {
    /// Short name (the file stem, or a derived pose's name).
    pub name: String,
    /// The model.
    pub model: Arc<Model>,
    /// Initial positions (nq).
    pub qpos: Vec<f64>,
    /// Initial velocities (nv).
    pub qvel: Vec<f64>,
}

impl Case {
    /// A case starting from the model's reference pose at rest, or from
    /// keyframe `key`.
    pub fn new(name: &str, model: Arc<Model>, key: Option<&str>) -> Self {
        let (qpos, qvel) = match key.and_then(|k| model.keyframe(k)) {
            Some(k) => (k.qpos.clone(), k.qvel.clone()),
            None => (model.qpos0.clone(), vec![0.0; model.nv]),
        };
        Self { name: name.into(), model, qpos, qvel }
    }
}

/// The shared data folder: `$CENIC_SHARED`, else `../shared` next to the
/// crate, when it exists.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CENIC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    dir.is_dir().then_some(dir)
}

/// Every zoo case found under the shared folder `shared`: each model of
/// `models/gymnasium` from its reference pose, the benchmark scenes
/// (`cube_toss` from keyframe `toss`, `clutter20`), and `humanoid_lying`,
/// the humanoid on its back just above the floor (the stand-up task's
/// start: its knees, at 0, violate their range [−160°, −2°]). Sorted by name.
pub fn cases(shared: &Path) -> Result<Vec<Case>, ModelError> {
    let mut out = vec![];
    let gym = shared.join("models/gymnasium");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&gym).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "xml"));
    files.sort();
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let model = Arc::new(Model::from_mjcf_file(&f)?);
        if name == "humanoid" {
            out.push(humanoid_lying(model.clone()));
        }
        out.push(Case::new(&name, model, None));
    }
    for (file, key) in [("cube_toss.xml", Some("toss")), ("clutter20.xml", None)] {
        let f = shared.join("scenes").join(file);
        if f.exists() {
            let model = Arc::new(Model::from_mjcf_file(&f)?);
            out.push(Case::new(file.trim_end_matches(".xml"), model, key));
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The humanoid lying on its back: the root turned −90° about y, its
/// origin 0.15 m above the floor; every other joint at qpos0.
pub fn humanoid_lying(model: Arc<Model>) -> Case {
    let mut c = Case::new("humanoid_lying", model, None);
    if let Some(j) = c.model.joints.iter().find(|j| j.kind == JointKind::Free) {
        let a = j.qpos_adr;
        let h = std::f64::consts::FRAC_PI_4;
        c.qpos[a..a + 7].copy_from_slice(&[0.0, 0.0, 0.15, h.cos(), 0.0, -h.sin(), 0.0]);
    }
    c
}

/// SplitMix64: a small, exactly reproducible generator (the Python twin in
/// the scripts uses the same arithmetic modulo 2⁶⁴).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in [0, 1) from the generator (53 bits).
fn uniform(state: &mut u64) -> f64 {
    (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64
}

/// The seeded smooth control of actuator `i` at time `t` (s): the middle of
/// its `ctrlrange` (or [−1, 1] when unlimited) plus 0.8 of the half range
/// times a normalised sum of three sines of 0.3–2 Hz with random phases
/// and amplitudes, all drawn from SplitMix64 seeded with seed·1000 + i.
pub fn smooth_control(model: &Model, seed: u64, i: usize, t: f64) -> f64 {
    let [lo, hi] = model.actuators[i].ctrl_range.unwrap_or([-1.0, 1.0]);
    let mut s = seed.wrapping_mul(1000).wrapping_add(i as u64);
    let (mut sum, mut norm) = (0.0, 0.0);
    for _ in 0..3 {
        let f = 0.3 + 1.7 * uniform(&mut s);
        let phase = std::f64::consts::TAU * uniform(&mut s);
        let a = 0.2 + 0.8 * uniform(&mut s);
        sum += a * (std::f64::consts::TAU * f * t + phase).sin();
        norm += a;
    }
    0.5 * (lo + hi) + 0.8 * 0.5 * (hi - lo) * sum / norm
}

/// Controls of `n` intervals of `dt` seconds (row-major n × nu), as the
/// gradient-convergence harness and tests use them: [`smooth_control`]
/// with seed 1 at each interval's start, plus uniform noise of ±5 % of the
/// actuator's range from a fixed linear congruential generator (so the
/// controls have kinks where a smooth signal would hide contact events),
/// clamped to `ctrlrange`.
pub fn noisy_smooth_controls(model: &Model, n: usize, dt: f64) -> Vec<f64> {
    let nu = model.nu();
    let mut state = 7u64;
    let mut noise = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    };
    let mut u = vec![0.0; n * nu];
    for k in 0..n {
        for i in 0..nu {
            let [lo, hi] = model.actuators[i].ctrl_range.unwrap_or([-1.0, 1.0]);
            let x = smooth_control(model, 1, i, k as f64 * dt) + 0.1 * (hi - lo) * noise();
            u[k * nu + i] = x.clamp(lo, hi);
        }
    }
    u
}

/// Control sequence `seed` of `n` intervals of `dt` seconds (row-major
/// n × nu), as the gradient-event sweep (tools/grad_events.rs) draws them:
/// [`smooth_control`] with that seed at each interval's start plus uniform
/// noise of ±`noise` (control units) from SplitMix64 seeded with
/// seed·7919 + 17, clamped to `ctrlrange`.
pub fn seeded_noisy_controls(model: &Model, seed: u64, n: usize, dt: f64, noise: f64) -> Vec<f64> {
    let nu = model.nu();
    let mut s = seed.wrapping_mul(7919).wrapping_add(17);
    let mut u = vec![0.0; n * nu];
    for k in 0..n {
        for i in 0..nu {
            let [lo, hi] = model.actuators[i].ctrl_range.unwrap_or([-1.0, 1.0]);
            let x = smooth_control(model, seed, i, k as f64 * dt) + noise * (2.0 * uniform(&mut s) - 1.0);
            u[k * nu + i] = x.clamp(lo, hi);
        }
    }
    u
}

/// What a run recorded.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Sample times (s): 0 and the end of every control interval reached.
    pub times: Vec<f64>,
    /// Position of every moving body (world frame, m), per sample: times × (nbody − 1).
    pub xpos: Vec<[f64; 3]>,
    /// Largest linear speed of any body origin over the samples (m/s).
    pub max_speed: f64,
    /// Integration statistics.
    pub stats: WorldStats,
    /// Wall time of the integration, sampling excluded (s).
    pub wall_seconds: f64,
    /// Why the world stopped early, if it did.
    pub failure: Option<String>,
}

impl Run {
    /// Largest distance (m) between the body positions of two runs over the
    /// samples both have (∞ when one stopped before the other's end).
    pub fn max_position_error(&self, reference: &Run) -> f64 {
        if self.times.len() != reference.times.len() {
            return f64::INFINITY;
        }
        self.xpos
            .iter()
            .zip(&reference.xpos)
            .map(|(a, b)| ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt())
            .fold(0.0, f64::max)
    }
}

/// Integrates `case` for `horizon` seconds in `mode` (f64), with zero
/// controls (`seed` None) or [`smooth_control`]s of `seed`.
pub fn run(case: &Case, mode: &Mode, seed: Option<u64>, horizon: f64) -> Run {
    let model = &case.model;
    let mut world = World::<f64>::new(model.clone(), mode.clone());
    world.sim.set_state(&case.qpos, &case.qvel);
    let mut scratch = Data::<f64>::new(model);
    let mut out = Run::default();
    let n = (horizon / CONTROL_INTERVAL).round() as usize;
    sample(model, &world, &mut scratch, &mut out);
    for k in 0..n {
        let t = k as f64 * CONTROL_INTERVAL;
        if let Some(seed) = seed {
            for i in 0..model.nu() {
                world.sim.ctrl[i] = smooth_control(model, seed, i, t);
            }
        }
        let start = Instant::now();
        let r = world.advance(CONTROL_INTERVAL);
        out.wall_seconds += start.elapsed().as_secs_f64();
        if let Err(e) = r {
            out.failure = Some(format!("t = {:.4} s: {}", world.time(), e.describe(model)));
            break;
        }
        sample(model, &world, &mut scratch, &mut out);
    }
    out.stats = world.stats;
    out
}

fn sample(model: &Model, world: &World<f64>, scratch: &mut Data<f64>, out: &mut Run) {
    scratch.set_state(&world.sim.data.q, &world.sim.data.v);
    dynamics::kinematics(model, scratch);
    dynamics::velocities(model, scratch);
    out.times.push(world.time());
    for b in 1..model.bodies.len() {
        let p = scratch.xpos[b];
        out.xpos.push([p.x, p.y, p.z]);
        out.max_speed = out.max_speed.max(dynamics::point_velocity(scratch, b, p).norm());
    }
}

/// Slope of log(error) against log(accuracy) by least squares over the
/// pairs with a finite, positive error (the observed order of the error in
/// the requested accuracy); `None` with fewer than two such pairs.
pub fn convergence_order(points: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> =
        points.iter().filter(|(a, e)| *a > 0.0 && *e > 0.0 && e.is_finite()).map(|(a, e)| (a.ln(), e.ln())).collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    Some(sxy / sxx)
}

/// Kinetic energy ½ vᵀM(q)v (J) of a state.
pub fn kinetic_energy(model: &Model, q: &[f64], v: &[f64]) -> f64 {
    let mut d = Data::<f64>::new(model);
    d.set_state(q, v);
    dynamics::kinematics(model, &mut d);
    dynamics::mass_matrix(model, &mut d);
    let n = model.nv;
    let mut e = 0.0;
    for i in 0..n {
        for j in 0..n {
            e += 0.5 * v[i] * d.mass[i * n + j] * v[j];
        }
    }
    e
}
