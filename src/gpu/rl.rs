//! The built-in RL tasks evaluated on the device (`kernels/rl.wgsl`): a
//! [`DeviceEvaluator`] computes every environment's observation, reward,
//! reward terms, termination flag and carry from a [`GpuBatch`]'s buffers
//! after an advance, so only one (num_envs × (obs_dim + 2 + n_terms)) f32
//! array is read back per environment step.
//!
//! One evaluation is one compute pass, after the batch's advance has
//! completed ([`GpuBatch::finish`]): `rl_forces` (contact wrenches and
//! constraint forces of each world's last accepted solve, when the task
//! observes them), the batch's kinematics and velocity stages at the final
//! state ([`GpuBatch::encode_state_kinematics`]), `rl_observe`; then one
//! readback (an environment step costs two host waits: the advance's and
//! this one). The batch's buffers are read through
//! [`GpuBatch::with_state_sources`] in the layout of `kernels/data.wgsl` as it
//! stands (the forces read the ICF problem buffers `icf_world`, `icf_con`,
//! `icf_jac`, `icf_limit` and `contacts` directly: a change of that layout
//! must be mirrored in `rl_forces`).

use super::batch::GpuBatch;
use super::buffers::{BufferSource, Readback, StorageBuffer, uniform_buffer};
use super::compose::KernelFile;
use super::context::{GpuContext, run_pass};
use super::data::DATA;
use super::error::GpuError;
use super::icf::{COST, STATE_STORAGE, VEC_STORAGE, WG_SERIAL};
use super::kernel::Kernel;
use crate::batch::Batch;
use crate::rl::tasks::{Builtin, Kind};
use crate::rl::{EnvConfig, EvalKind, EvalOut, Evaluate, RlError, Task, VecEnv};
use bytemuck::{Pod, Zeroable};
use std::sync::Arc;

/// `kernels/rl.wgsl`, after `icf_cost.wgsl` (whose per-row terms
/// `rl_forces` uses, run by one thread with the state in storage).
pub static FILE: KernelFile = KernelFile::new(
    "rl",
    include_str!("../../kernels/rl.wgsl"),
    &[&DATA, &WG_SERIAL, &COST, &VEC_STORAGE, &STATE_STORAGE],
);

/// Task settings of `rl_observe` (WGSL `RlParams`, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RlParams {
    /// [`Kind`] index.
    pub kind: u32,
    /// Observation size.
    pub obs_dim: u32,
    /// Floats per world in the output: obs_dim + 2 + reward terms.
    pub stride: u32,
    /// Carry size.
    pub carry_dim: u32,
    /// 1 after a step, 0 after resets.
    pub step: u32,
    /// 1 when the task reads forces.
    pub forces: u32,
    /// Task bodies and site (see [`Builtin`]).
    pub body_a: u32,
    /// See [`Builtin::body_b`].
    pub body_b: u32,
    /// See [`Builtin::body_c`].
    pub body_c: u32,
    /// See [`Builtin::site`].
    pub site: u32,
    /// 1: end episodes when unhealthy.
    pub terminate_when_unhealthy: u32,
    /// Actuators.
    pub nu: u32,
    /// Environment step (s).
    pub dt: f32,
    /// See [`crate::rl::tasks::Params`].
    pub forward_reward_weight: f32,
    /// See [`crate::rl::tasks::Params`].
    pub ctrl_cost_weight: f32,
    /// See [`crate::rl::tasks::Params`].
    pub contact_cost_weight: f32,
    /// See [`crate::rl::tasks::Params`].
    pub contact_cost_max: f32,
    /// See [`crate::rl::tasks::Params`].
    pub healthy_reward: f32,
    /// See [`crate::rl::tasks::Params`].
    pub healthy_z_lo: f32,
    /// See [`crate::rl::tasks::Params`].
    pub healthy_z_hi: f32,
    /// See [`crate::rl::tasks::Params`].
    pub contact_force_lo: f32,
    /// See [`crate::rl::tasks::Params`].
    pub contact_force_hi: f32,
    /// See [`crate::rl::tasks::Params`].
    pub dist_weight: f32,
    /// See [`crate::rl::tasks::Params`].
    pub near_weight: f32,
}

impl RlParams {
    /// The settings of `task` for environment steps of `dt` seconds.
    pub fn new(task: &Builtin, nu: usize, dt: f64) -> Self {
        let spec = task.spec();
        let p = &task.params;
        let kind = Kind::ALL.iter().position(|k| *k == task.kind).unwrap_or(0) as u32;
        Self {
            kind,
            obs_dim: spec.obs_dim as u32,
            stride: (spec.obs_dim + 2 + spec.reward_terms.len()) as u32,
            carry_dim: spec.carry_dim as u32,
            step: 0,
            forces: (spec.needs.contact_forces || spec.needs.constraint_forces) as u32,
            body_a: task.body_a as u32,
            body_b: task.body_b as u32,
            body_c: task.body_c as u32,
            site: task.site as u32,
            terminate_when_unhealthy: p.terminate_when_unhealthy as u32,
            nu: nu as u32,
            dt: dt as f32,
            forward_reward_weight: p.forward_reward_weight as f32,
            ctrl_cost_weight: p.ctrl_cost_weight as f32,
            contact_cost_weight: p.contact_cost_weight as f32,
            contact_cost_max: p.contact_cost_max as f32,
            healthy_reward: p.healthy_reward as f32,
            healthy_z_lo: p.healthy_z_range[0] as f32,
            healthy_z_hi: p.healthy_z_range[1] as f32,
            contact_force_lo: p.contact_force_range[0] as f32,
            contact_force_hi: p.contact_force_range[1] as f32,
            dist_weight: p.dist_weight as f32,
            near_weight: p.near_weight as f32,
        }
    }
}

/// WGSL names of the buffers of `kernels/rl.wgsl` (bindings 120–123).
pub const BUFFER_NAMES: [&str; 4] = ["rl_params", "rl_out", "rl_carry", "rl_force"];

/// The buffers of `kernels/rl.wgsl`.
struct RlBuffers {
    params: wgpu::Buffer,
    out: StorageBuffer<f32>,
    carry: StorageBuffer<f32>,
    force: StorageBuffer<f32>,
}

impl BufferSource for RlBuffers {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        match name {
            "rl_params" => Some(&self.params),
            "rl_out" => Some(self.out.buffer()),
            "rl_carry" => Some(self.carry.buffer()),
            "rl_force" => Some(self.force.buffer()),
            _ => None,
        }
    }
}

/// Evaluates a built-in task on a [`GpuBatch`]'s device (see the module
/// docs). Buffers, kernels and the host copy of the output are created
/// once; an evaluation records one pass and reads one array.
pub struct DeviceEvaluator {
    ctx: Arc<GpuContext>,
    params: RlParams,
    buffers: RlBuffers,
    forces: Kernel,
    observe: Kernel,
    readback: Readback,
    host: Vec<f32>,
    nterms: usize,
}

impl std::fmt::Debug for DeviceEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceEvaluator").field("params", &self.params).finish_non_exhaustive()
    }
}

impl DeviceEvaluator {
    /// The evaluator of `task` on `batch`'s worlds, environment steps of `dt` seconds.
    pub fn new(batch: &GpuBatch, task: &Builtin, dt: f64) -> Result<Self, GpuError> {
        let ctx = batch.context().clone();
        let model = batch.model();
        let n = batch.nworld();
        let params = RlParams::new(task, model.nu(), dt);
        let spec = task.spec();
        let stride = params.stride as usize;
        let buffers = RlBuffers {
            params: uniform_buffer(&ctx, "rl_params", &params),
            out: StorageBuffer::new(&ctx, "rl_out", n * stride)?,
            carry: StorageBuffer::new(&ctx, "rl_carry", n * spec.carry_dim.max(1))?,
            force: StorageBuffer::new(&ctx, "rl_force", n * (model.bodies.len() * 6 + model.nv))?,
        };
        let (forces, observe) = batch.with_state_sources(|[a, b, c, d]| {
            let sources: [&dyn BufferSource; 5] = [&buffers, a, b, c, d];
            Ok::<_, GpuError>((
                Kernel::new(&ctx, &FILE, "rl_forces", n, &sources)?,
                Kernel::new(&ctx, &FILE, "rl_observe", n, &sources)?,
            ))
        })?;
        let readback = Readback::new(&ctx, (n * stride * 4) as u64);
        ctx.check_errors()?;
        Ok(Self {
            ctx,
            params,
            buffers,
            forces,
            observe,
            readback,
            host: vec![0.0; n * stride],
            nterms: spec.reward_terms.len(),
        })
    }

    /// Runs one evaluation on the device and reads the output back into the host copy.
    fn run(&mut self, batch: &GpuBatch, step: bool) -> Result<(), GpuError> {
        // The advance's iterations all done (its one host wait), then this pass.
        batch.finish()?;
        self.params.step = step as u32;
        self.ctx.queue.write_buffer(&self.buffers.params, 0, bytemuck::bytes_of(&self.params));
        let forces = self.params.forces == 1;
        run_pass(&self.ctx, "rl: evaluate", |pass| {
            if forces {
                self.forces.encode(pass);
            }
            batch.encode_state_kinematics(pass);
            self.observe.encode(pass);
        })?;
        self.buffers.out.read_range_into(&self.ctx, &self.readback, 0, &mut self.host)
    }
}

impl Evaluate<GpuBatch> for DeviceEvaluator {
    fn evaluate(
        &mut self,
        batch: &GpuBatch,
        _task: &dyn Task,
        kind: EvalKind,
        _ctrl: &[f64],
        mask: &[bool],
        out: EvalOut<'_>,
    ) -> Result<(), RlError> {
        let step = kind == EvalKind::Step;
        self.run(batch, step).map_err(|e| RlError::Batch(crate::batch::BatchError::Backend(e.to_string())))?;
        let (od, nt, stride) = (self.params.obs_dim as usize, self.nterms, self.params.stride as usize);
        for (i, row) in self.host.chunks(stride).enumerate() {
            if !step && !mask[i] {
                continue;
            }
            out.obs[i * od..(i + 1) * od].copy_from_slice(&row[..od]);
            if step {
                out.reward[i] = row[od];
                out.terminated[i] = row[od + 1] != 0.0;
                out.terms[i * nt..(i + 1) * nt].copy_from_slice(&row[od + 2..od + 2 + nt]);
            }
        }
        Ok(())
    }
}

/// A vectorized environment of built-in `task` on `batch` with the task
/// evaluated on the device ([`DeviceEvaluator`]).
pub fn device_env(batch: GpuBatch, task: Arc<Builtin>, config: EnvConfig) -> Result<VecEnv<GpuBatch>, RlError> {
    let dt = VecEnv::<GpuBatch>::step_duration(batch.model(), task.as_ref(), &config)?;
    let eval = DeviceEvaluator::new(&batch, &task, dt)
        .map_err(|e| RlError::Batch(crate::batch::BatchError::Backend(e.to_string())))?;
    VecEnv::with_evaluator(batch, task, config, Box::new(eval))
}
