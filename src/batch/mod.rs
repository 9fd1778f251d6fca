//! A batch of worlds of one model, each with its own clock, step size,
//! state, controls and physical parameters. [`CpuBatch`] steps worlds in
//! parallel with rayon; the GPU batch implements the same [`Batch`] trait.
//!
//! Bulk arrays are world-first: `qpos` is (nworld, nq), `qvel` is
//! (nworld, nv), `ctrl` is (nworld, nu), all row-major `f64`.
//! A world whose state becomes non-finite or whose solve fails is flagged
//! ([`WorldStatus::Failed`]) and frozen; the others keep running.

use crate::icf::MaterialScale;
use crate::integrator::{Mode, World, WorldStats};
use crate::math::Real;
use crate::model::Model;
use rayon::prelude::*;
use std::sync::Arc;

mod grain;
pub use grain::{Grain, TASK_NS};

/// Physical parameters that may differ between worlds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldParams {
    /// Multiplies every body mass and inertia.
    pub mass_scale: f64,
    /// Multipliers on contact stiffness, dissipation and friction.
    pub materials: MaterialScale,
}

impl Default for WorldParams {
    fn default() -> Self {
        Self { mass_scale: 1.0, materials: MaterialScale::default() }
    }
}

/// Health of a world.
#[derive(Clone, Debug, PartialEq)]
pub enum WorldStatus {
    /// Running normally.
    Ok,
    /// Frozen after a failure at `time` (s), with the reason.
    Failed {
        /// Simulation time of the failure (s).
        time: f64,
        /// What went wrong.
        reason: String,
    },
}

/// Errors of batch calls (bad arguments; never a per-world failure).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BatchError {
    /// A world index out of range.
    #[error("world index {world} out of range (nworld = {nworld})")]
    World {
        /// The index.
        world: usize,
        /// Number of worlds.
        nworld: usize,
    },
    /// A slice of the wrong length.
    #[error("{what}: expected {expected} values, got {got}")]
    Length {
        /// Which argument.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// A keyframe that does not exist.
    #[error("no keyframe '{0}'")]
    Keyframe(String),
    /// A backend problem (e.g. the GPU device was lost).
    #[error("{0}")]
    Backend(String),
}

/// The batch interface shared by the CPU and GPU paths.
pub trait Batch {
    /// The model.
    fn model(&self) -> &Arc<Model>;
    /// Number of worlds.
    fn nworld(&self) -> usize;
    /// Resets every world to qpos0, v = 0, zero controls, time 0, fresh
    /// statistics and status (contact capacities and parameters are kept).
    fn reset(&mut self);
    /// Resets one world to keyframe `key` (name or index).
    fn reset_to_keyframe(&mut self, world: usize, key: &str) -> Result<(), BatchError>;
    /// Sets one world's q (nq) and v (nv). Quaternions are normalised. The
    /// world keeps no last step
    /// ([`Simulator::set_state`](crate::integrator::Simulator::set_state)):
    /// its next step does not depend on what it did before.
    fn set_state(&mut self, world: usize, q: &[f64], v: &[f64]) -> Result<(), BatchError>;
    /// Sets one world's controls (nu): motor inputs or servo target positions.
    fn set_ctrl(&mut self, world: usize, ctrl: &[f64]) -> Result<(), BatchError>;
    /// Sets one world's servo target velocities (nu).
    fn set_target_velocity(&mut self, world: usize, vref: &[f64]) -> Result<(), BatchError>;
    /// Sets one world's physical parameters (kept across resets).
    fn set_params(&mut self, world: usize, params: WorldParams) -> Result<(), BatchError>;
    /// Advances every running world by `dt` (s) from its own time, actuation held constant.
    fn advance(&mut self, dt: f64) -> Result<(), BatchError>;
    /// Writes all positions into `out` (nworld × nq).
    fn qpos(&self, out: &mut [f64]);
    /// Writes all velocities into `out` (nworld × nv).
    fn qvel(&self, out: &mut [f64]);
    /// Each world's time (s).
    fn times(&self) -> Vec<f64>;
    /// One world's statistics.
    fn stats(&self, world: usize) -> WorldStats;
    /// One world's status.
    fn status(&self, world: usize) -> WorldStatus;

    /// Starts world `world` afresh at (q, v): time 0, zero controls and
    /// target velocities, fresh statistics, status [`WorldStatus::Ok`] (a
    /// failed world runs again). Quaternions are normalised. The world's
    /// parameters ([`Self::set_params`]) stay: they are its physics, not
    /// its state, and every kind of reset keeps them (as MuJoCo's
    /// `mj_resetData` keeps the model), so per-world randomization
    /// survives episodes.
    fn reset_world(&mut self, world: usize, q: &[f64], v: &[f64]) -> Result<(), BatchError>;

    /// [`Self::reset_world`] of every world in one call, world w at
    /// (q[w·nq..], v[w·nv..]) (nworld × nq and nworld × nv). The GPU batch
    /// writes whole fields instead of ~35 small writes per world.
    fn reset_worlds_all(&mut self, q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        let (nq, nv) = (self.model().nq, self.model().nv);
        check_rows(self.model(), self.nworld(), None, q, v)?;
        for w in 0..self.nworld() {
            self.reset_world(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv])?;
        }
        Ok(())
    }

    /// [`Self::reset_world`] of the worlds with `mask[w]` set, world w at
    /// (q[w·nq..], v[w·nv..]) (mask: nworld; q: nworld × nq; v: nworld ×
    /// nv; the rows of other worlds are not read). The GPU batch resets them
    /// in one upload and one launch; RL autoresets use it.
    fn reset_worlds(&mut self, mask: &[bool], q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        let (nq, nv) = (self.model().nq, self.model().nv);
        check_rows(self.model(), self.nworld(), Some(mask), q, v)?;
        for w in (0..self.nworld()).filter(|&w| mask[w]) {
            self.reset_world(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv])?;
        }
        Ok(())
    }

    /// Sets every world's controls (nworld × nu) in one call.
    fn set_ctrl_all(&mut self, ctrl: &[f64]) -> Result<(), BatchError> {
        let nu = self.model().nu();
        check_len("ctrl", self.nworld() * nu, ctrl.len())?;
        for w in 0..self.nworld() {
            self.set_ctrl(w, &ctrl[w * nu..(w + 1) * nu])?;
        }
        Ok(())
    }

    /// The constraint forces of each world's last step (the last accepted
    /// step of its last `advance`, whatever was set since): into
    /// `body_wrench` (nworld × nbody × 6) the contact wrench on each body
    /// as [torque about the world origin (N·m), force (N)], world frame,
    /// and into `qfrc` (nworld × nv) the generalized constraint force of
    /// contacts and joint limits (N or N·m). Each is the impulse of the
    /// step's convex solve divided by its duration. Returns false, with
    /// both zeroed, when the backend does not provide them.
    fn constraint_forces(&self, body_wrench: &mut [f64], qfrc: &mut [f64]) -> bool {
        body_wrench.fill(0.0);
        qfrc.fill(0.0);
        false
    }
    /// Writes all actuator activations into `out` (nworld × na). Batches
    /// that do not simulate activations report an error unless na = 0.
    fn act(&self, out: &mut [f64]) -> Result<(), BatchError> {
        let _ = out;
        unsupported(self.model().na == 0, "actuator activations")
    }
    /// Sets one world's actuator activations (na).
    fn set_act(&mut self, world: usize, act: &[f64]) -> Result<(), BatchError> {
        let _ = (world, act);
        unsupported(self.model().na == 0, "actuator activations")
    }
    /// Writes all sensor values into `out` (nworld × nsensordata), as of
    /// each world's last `advance` or `reset_world` (see [`crate::integrator::Simulator::compute_sensors`]).
    /// Batches that do not compute sensors report an error unless the model has none.
    fn sensordata(&self, out: &mut [f64]) -> Result<(), BatchError> {
        let _ = out;
        unsupported(self.model().nsensordata == 0, "sensor data")
    }
}

/// Ok when `trivial` (nothing to read or write), else an error saying this batch lacks `what`.
fn unsupported(trivial: bool, what: &str) -> Result<(), BatchError> {
    if trivial {
        Ok(())
    } else {
        Err(BatchError::Backend(format!("{what} are not available from this batch (use CpuBatch)")))
    }
}

/// A batch of CPU worlds in scalar type `T`, stepped in parallel.
pub struct CpuBatch<T: Real> {
    model: Arc<Model>,
    worlds: Vec<World<T>>,
    status: Vec<WorldStatus>,
    mode: Mode,
    /// Task size of `advance` (the worlds' measured cost).
    advance_grain: Grain,
    /// Task size of `constraint_forces`.
    forces_grain: Grain,
}

impl<T: Real> CpuBatch<T> {
    /// `nworld` worlds of `model` at qpos0, all advancing in `mode`.
    pub fn new(model: Arc<Model>, nworld: usize, mode: Mode) -> Self {
        let worlds = (0..nworld).map(|_| World::new(model.clone(), mode.clone())).collect();
        Self {
            model,
            worlds,
            status: vec![WorldStatus::Ok; nworld],
            mode,
            advance_grain: Grain::default(),
            forces_grain: Grain::default(),
        }
    }

    /// An estimate of the memory one world of `model` takes (bytes): the
    /// world itself, its multibody and ICF storage (dense nv × nv
    /// matrices), and its reserved contact list. For refusing batches that
    /// cannot fit before allocating them.
    pub fn memory_per_world(model: &Model) -> usize {
        let (nv, nb, ng) = (model.nv, model.bodies.len(), model.geoms.len());
        let s = size_of::<T>();
        // Dense: M in Data and the problem, A, the Hessian and its factor, scratch.
        let dense = 8 * nv * nv;
        // Per body: poses, inertias, velocities, accelerations, forces (~120 scalars).
        let per_object = 40 * nv + 120 * nb + 30 * ng;
        let contacts = 16 * ng.max(1) * size_of::<crate::collision::Contact<T>>();
        size_of::<World<T>>() + s * (dense + per_object) + contacts
    }

    /// Direct access to one world (for recording steps, reading contacts, …).
    pub fn world(&self, w: usize) -> &World<T> {
        &self.worlds[w]
    }

    /// Mutable access to one world.
    pub fn world_mut(&mut self, w: usize) -> &mut World<T> {
        &mut self.worlds[w]
    }

    /// Sets a contact capacity per world; overflowing contacts are counted
    /// in each world's [`WorldStats::contact_overflow`].
    pub fn set_contact_capacity(&mut self, capacity: usize) {
        for w in &mut self.worlds {
            w.sim.contacts.capacity = capacity;
        }
    }

    /// A fresh world in slot `w` (state, time, statistics and status
    /// reset), keeping the batch's contact capacity and the world's parameters.
    fn renew(&mut self, w: usize) {
        self.keeping_params(w, |b| {
            let capacity = b.worlds[w].sim.contacts.capacity;
            b.worlds[w] = World::new(b.model.clone(), b.mode.clone());
            b.worlds[w].sim.contacts.capacity = capacity;
        });
        self.status[w] = WorldStatus::Ok;
    }

    /// Runs `reset` on world `w` and puts its parameters (mass scale,
    /// contact materials) back: they are the world's physics, not its
    /// state, and every reset keeps them.
    fn keeping_params(&mut self, w: usize, reset: impl FnOnce(&mut Self)) {
        let sim = &self.worlds[w].sim;
        let kept = (sim.data.mass_scale, sim.materials);
        reset(self);
        let sim = &mut self.worlds[w].sim;
        (sim.data.mass_scale, sim.materials) = kept;
    }

    fn check(&self, world: usize) -> Result<(), BatchError> {
        if world < self.worlds.len() { Ok(()) } else { Err(BatchError::World { world, nworld: self.worlds.len() }) }
    }
}

/// A length error unless `got == expected`.
pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), BatchError> {
    if expected == got { Ok(()) } else { Err(BatchError::Length { what, expected, got }) }
}

/// The lengths of a many-world reset's arguments: `mask` (when given)
/// nworld, `q` nworld × nq, `v` nworld × nv.
pub(crate) fn check_rows(
    model: &Model,
    nworld: usize,
    mask: Option<&[bool]>,
    q: &[f64],
    v: &[f64],
) -> Result<(), BatchError> {
    if let Some(mask) = mask {
        check_len("mask", nworld, mask.len())?;
    }
    check_len("q", nworld * model.nq, q.len())?;
    check_len("v", nworld * model.nv, v.len())
}

impl<T: Real> Batch for CpuBatch<T> {
    fn model(&self) -> &Arc<Model> {
        &self.model
    }
    fn nworld(&self) -> usize {
        self.worlds.len()
    }
    fn reset(&mut self) {
        for w in 0..self.worlds.len() {
            self.renew(w);
        }
    }
    fn reset_to_keyframe(&mut self, world: usize, key: &str) -> Result<(), BatchError> {
        self.check(world)?;
        self.renew(world);
        let w = &mut self.worlds[world];
        w.sim.reset_to_keyframe(key).ok_or_else(|| BatchError::Keyframe(key.to_string()))?;
        Ok(())
    }
    fn set_state(&mut self, world: usize, q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("q", self.model.nq, q.len())?;
        check_len("v", self.model.nv, v.len())?;
        self.worlds[world].sim.set_state(q, v);
        Ok(())
    }
    fn set_ctrl(&mut self, world: usize, ctrl: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("ctrl", self.model.nu(), ctrl.len())?;
        for (d, s) in self.worlds[world].sim.ctrl.iter_mut().zip(ctrl) {
            *d = T::c(*s);
        }
        Ok(())
    }
    fn set_target_velocity(&mut self, world: usize, vref: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("target velocity", self.model.nu(), vref.len())?;
        for (d, s) in self.worlds[world].sim.target_velocity.iter_mut().zip(vref) {
            *d = T::c(*s);
        }
        Ok(())
    }
    fn set_params(&mut self, world: usize, params: WorldParams) -> Result<(), BatchError> {
        self.check(world)?;
        let sim = &mut self.worlds[world].sim;
        sim.data.mass_scale = T::c(params.mass_scale);
        sim.materials = params.materials.cast();
        Ok(())
    }
    fn advance(&mut self, dt: f64) -> Result<(), BatchError> {
        let (worlds, status) = (&mut self.worlds, &mut self.status);
        self.advance_grain.timed(worlds.len(), |min_len| {
            worlds.par_iter_mut().zip(status.par_iter_mut()).with_min_len(min_len).for_each(|(w, st)| {
                if *st != WorldStatus::Ok {
                    return;
                }
                if let Err(e) = w.advance(dt) {
                    *st = WorldStatus::Failed { time: w.time(), reason: e.describe(&w.sim.model) };
                }
            })
        });
        Ok(())
    }
    fn qpos(&self, out: &mut [f64]) {
        let nq = self.model.nq;
        for (w, chunk) in self.worlds.iter().zip(out.chunks_mut(nq)) {
            for (d, s) in chunk.iter_mut().zip(&w.sim.data.q) {
                *d = s.f64();
            }
        }
    }
    fn qvel(&self, out: &mut [f64]) {
        let nv = self.model.nv;
        for (w, chunk) in self.worlds.iter().zip(out.chunks_mut(nv.max(1))) {
            for (d, s) in chunk.iter_mut().zip(&w.sim.data.v) {
                *d = s.f64();
            }
        }
    }
    fn times(&self) -> Vec<f64> {
        self.worlds.iter().map(|w| w.time()).collect()
    }
    fn stats(&self, world: usize) -> WorldStats {
        self.worlds[world].stats
    }
    fn status(&self, world: usize) -> WorldStatus {
        self.status[world].clone()
    }
    fn act(&self, out: &mut [f64]) -> Result<(), BatchError> {
        let na = self.model.na;
        check_len("act", self.worlds.len() * na, out.len())?;
        for (w, chunk) in self.worlds.iter().zip(out.chunks_mut(na.max(1))) {
            for (d, s) in chunk.iter_mut().zip(&w.sim.data.act) {
                *d = s.f64();
            }
        }
        Ok(())
    }
    fn set_act(&mut self, world: usize, act: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("act", self.model.na, act.len())?;
        for (d, s) in self.worlds[world].sim.data.act.iter_mut().zip(act) {
            *d = T::c(*s);
        }
        Ok(())
    }
    fn sensordata(&self, out: &mut [f64]) -> Result<(), BatchError> {
        let n = self.model.nsensordata;
        check_len("sensordata", self.worlds.len() * n, out.len())?;
        for (w, chunk) in self.worlds.iter().zip(out.chunks_mut(n.max(1))) {
            for (d, s) in chunk.iter_mut().zip(&w.sim.data.sensordata) {
                *d = s.f64();
            }
        }
        Ok(())
    }
    fn reset_world(&mut self, world: usize, q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("q", self.model.nq, q.len())?;
        check_len("v", self.model.nv, v.len())?;
        // In place (no allocation: resets happen inside RL steps).
        self.keeping_params(world, |b| b.worlds[world].restart());
        self.status[world] = WorldStatus::Ok;
        let sim = &mut self.worlds[world].sim;
        sim.set_state(q, v);
        // Sensor values of the new state (zero controls, no contacts), as RL resets observe them.
        if !self.model.sensors.is_empty() {
            sim.compute_sensors();
        }
        Ok(())
    }
    fn set_ctrl_all(&mut self, ctrl: &[f64]) -> Result<(), BatchError> {
        let nu = self.model.nu();
        check_len("ctrl", self.worlds.len() * nu, ctrl.len())?;
        for (w, c) in self.worlds.iter_mut().zip(ctrl.chunks(nu.max(1))) {
            for (d, s) in w.sim.ctrl.iter_mut().zip(c) {
                *d = T::c(*s);
            }
        }
        Ok(())
    }
    fn constraint_forces(&self, body_wrench: &mut [f64], qfrc: &mut [f64]) -> bool {
        let (nb, nv) = (self.model.bodies.len(), self.model.nv);
        self.forces_grain.timed(self.worlds.len(), |min_len| {
            self.worlds
                .par_iter()
                .zip(body_wrench.par_chunks_mut((nb * 6).max(1)))
                .zip(qfrc.par_chunks_mut(nv.max(1)))
                .with_min_len(min_len)
                .for_each(|((w, bw), qf)| w.sim.constraint_forces(bw, qf))
        });
        true
    }
}
