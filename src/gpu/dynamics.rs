//! [`GpuDynamics`]: a model and `nworld` world states on the GPU, with the
//! multibody stages (kinematics, velocities, mass matrix, bias and passive
//! forces, position update) and readback: the multibody stage wrappers
//! ([`super::kinematics`], [`super::rnea`], [`super::integrate`]) over one
//! model and state.

use super::buffers::{BufferSource, Readback};
use super::context::{GpuContext, run_pass};
use super::error::GpuError;
use super::fields::{Field, GpuData, Layout};
use super::integrate::IntegrateKernels;
use super::kinematics::KinematicsKernels;
use super::model::GpuModel;
use super::rnea::RneaKernels;
use crate::batch::WorldParams;
use crate::model::Model;
use std::sync::Arc;

/// A multibody stage, named after its CPU function in [`crate::dynamics`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// [`crate::dynamics::kinematics`]: poses, `body_ref`, `cinert`, `cdof`.
    Kinematics,
    /// [`crate::dynamics::velocities`]: `cvel`, `cdof_dot`.
    Velocities,
    /// [`crate::dynamics::mass_matrix`]: `mass`.
    MassMatrix,
    /// [`crate::dynamics::bias_forces`]: `bias`.
    BiasForces,
    /// [`crate::dynamics::passive_forces`]: `passive`.
    PassiveForces,
    /// [`crate::dynamics::integrate_q`] with each world's step `h`: updates `q`.
    IntegrateQ,
}

impl Stage {
    /// Everything derived from (q, v), in dependency order.
    pub const FORWARD: [Stage; 5] =
        [Stage::Kinematics, Stage::Velocities, Stage::MassMatrix, Stage::BiasForces, Stage::PassiveForces];
}

/// A model and `nworld` worlds on the GPU. Buffers, pipelines and bind
/// groups are created in [`GpuDynamics::new`]; running stages only records
/// and submits commands. Initial state: q = qpos0, v = 0, h = the model's
/// timestep, default [`WorldParams`].
pub struct GpuDynamics {
    ctx: Arc<GpuContext>,
    model: Arc<Model>,
    nworld: usize,
    gmodel: GpuModel,
    data: GpuData,
    kinematics: KinematicsKernels,
    rnea: RneaKernels,
    integrate: IntegrateKernels,
    readback: Readback,
}

impl std::fmt::Debug for GpuDynamics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDynamics")
            .field("model", &self.model.name)
            .field("nworld", &self.nworld)
            .field("adapter", &self.ctx.adapter_name())
            .finish_non_exhaustive()
    }
}

impl GpuDynamics {
    /// Uploads `model` and allocates `nworld` (≥ 1) worlds in the default [`Layout`].
    pub fn new(ctx: Arc<GpuContext>, model: Arc<Model>, nworld: usize) -> Result<Self, GpuError> {
        Self::with_layout(ctx, model, nworld, Layout::default())
    }

    /// [`Self::new`] with the per-world arrays in `layout`.
    pub fn with_layout(
        ctx: Arc<GpuContext>,
        model: Arc<Model>,
        nworld: usize,
        layout: Layout,
    ) -> Result<Self, GpuError> {
        if nworld == 0 {
            return Err(GpuError::Length { what: "nworld", expected: 1, got: 0 });
        }
        let gmodel = GpuModel::new(&ctx, &model, nworld)?;
        let data = GpuData::with_layout(&ctx, &model, nworld, layout)?;
        let sources: [&dyn BufferSource; 2] = [&gmodel, &data];
        let kinematics = KinematicsKernels::new(&ctx, &model, nworld, &sources)?;
        let rnea = RneaKernels::new(&ctx, nworld, &sources)?;
        let integrate = IntegrateKernels::new(&ctx, &model, nworld, &sources)?;
        let readback = Readback::new(&ctx, Readback::DEFAULT_SIZE);
        let gpu = Self { ctx, model, nworld, gmodel, data, kinematics, rnea, integrate, readback };
        let q0: Vec<f32> = gpu.model.qpos0.iter().map(|&x| x as f32).collect();
        gpu.set_field(Field::Q, &q0.repeat(nworld))?;
        gpu.set_field(Field::H, &vec![gpu.model.options.timestep as f32; nworld])?;
        gpu.ctx.check_errors()?;
        Ok(gpu)
    }

    /// The context.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }
    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.nworld
    }
    /// The model buffers (for later phases' kernels).
    pub fn gpu_model(&self) -> &GpuModel {
        &self.gmodel
    }
    /// Sets the contact capacity per world (`Dims.ncon`), before creating
    /// the kernels that read or write contacts.
    pub fn set_contact_capacity(&mut self, ncon: usize) -> Result<(), GpuError> {
        self.gmodel.set_contact_capacity(&self.ctx, ncon)
    }
    /// The per-world buffers (for later phases' kernels).
    pub fn gpu_data(&self) -> &GpuData {
        &self.data
    }

    /// Uploads a whole field, world first (nworld × [`Field::per_world`] floats).
    pub fn set_field(&self, field: Field, values: &[f32]) -> Result<(), GpuError> {
        let expected = self.nworld * field.per_world(&self.model);
        if values.len() != expected {
            return Err(GpuError::Length { what: field.name(), expected, got: values.len() });
        }
        self.data.write(&self.ctx, field, values)
    }

    /// Uploads one world's block of a field ([`Field::per_world`] floats).
    pub fn set_world_field(&self, field: Field, world: usize, values: &[f32]) -> Result<(), GpuError> {
        let n = field.per_world(&self.model);
        if world >= self.nworld {
            return Err(GpuError::Length { what: "world index", expected: self.nworld, got: world });
        }
        if values.len() != n {
            return Err(GpuError::Length { what: field.name(), expected: n, got: values.len() });
        }
        self.data.write_world(&self.ctx, field, world, values)
    }

    /// Sets every world's positions (nworld × nq) and velocities (nworld × nv), as given (no normalisation).
    pub fn set_state(&self, q: &[f32], v: &[f32]) -> Result<(), GpuError> {
        self.set_field(Field::Q, q)?;
        self.set_field(Field::V, v)
    }

    /// Sets every world's step size (nworld; s) used by [`Stage::IntegrateQ`].
    pub fn set_step(&self, h: &[f32]) -> Result<(), GpuError> {
        self.set_field(Field::H, h)
    }

    /// Sets every world's physical parameters (nworld entries).
    pub fn set_params(&self, params: &[WorldParams]) -> Result<(), GpuError> {
        self.gmodel.set_params(&self.ctx, params)
    }

    /// Fills every output field (everything but q, v, h) with `value`:
    /// with NaN, a value a kernel fails to write shows up in a parity test.
    pub fn fill_outputs(&self, value: f32) -> Result<(), GpuError> {
        for f in Field::ALL.into_iter().filter(|f| !f.is_input()) {
            self.data.fill(&self.ctx, f, value)?;
        }
        Ok(())
    }

    /// Records `stage` into a compute pass (for callers composing larger
    /// command buffers, e.g. a full step with later phases' kernels).
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>, stage: Stage) {
        match stage {
            Stage::Kinematics => self.kinematics.encode_kinematics(pass),
            Stage::Velocities => self.kinematics.encode_velocities(pass),
            Stage::MassMatrix => self.rnea.encode_mass_matrix(pass),
            Stage::BiasForces => self.rnea.encode_bias_forces(pass),
            Stage::PassiveForces => self.rnea.encode_passive_forces(pass),
            Stage::IntegrateQ => self.integrate.encode_integrate_q(pass),
        }
    }

    /// Runs `stages` in order, in one compute pass of one submission (wgpu
    /// orders the dispatches' buffer accesses). Returns without waiting;
    /// reads wait for the work.
    pub fn run(&self, stages: &[Stage]) -> Result<(), GpuError> {
        run_pass(&self.ctx, "cenic stages", |pass| {
            for &s in stages {
                self.encode(pass, s);
            }
        })
    }

    /// Reads a whole field back (nworld × [`Field::per_world`] floats, world first).
    pub fn read(&self, field: Field) -> Result<Vec<f32>, GpuError> {
        self.data.read(&self.ctx, &self.readback, field)
    }

    /// Reads one world's block of a field.
    pub fn read_world(&self, field: Field, world: usize) -> Result<Vec<f32>, GpuError> {
        if world >= self.nworld {
            return Err(GpuError::Length { what: "world index", expected: self.nworld, got: world });
        }
        self.data.read_world(&self.ctx, &self.readback, field, world)
    }
}
