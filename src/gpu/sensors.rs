//! Sensors evaluated on the device (`kernels/sensors.wgsl`), the twin of
//! [`crate::dynamics::sensors`]: [`GpuSensors`] fills every world's
//! `sensordata` (MuJoCo's layout, [`crate::model::Sensor::adr`]) from a
//! [`super::GpuBatch`]'s buffers after an advance, behind
//! [`Batch::sensordata`](crate::batch::Batch::sensordata).
//!
//! One evaluation is one submission and one host wait: the batch's
//! kinematics and velocity stages at the final state
//! ([`super::GpuBatch::encode_state_kinematics`]), `sensors` (one thread per
//! (sensor, world)), and the copy of the (nworld × nsensordata) f32 array
//! into a staging buffer created with the other buffers. What each kind
//! reads:
//!
//! - the state q, v and its kinematics: `jointpos`, `jointvel`,
//!   `tendonpos`/`tendonvel` of fixed tendons, `actuatorpos`/`actuatorvel`,
//!   `framepos`, `framequat`, `framexaxis`/`yaxis`/`zaxis` (with reference
//!   frames), `framelinvel`, `frameangvel`, `subtreecom`, `gyro`,
//!   `velocimeter`;
//! - the controls and servo targets: `actuatorfrc` (motors and position
//!   servos, the actuators the GPU simulates);
//! - each world's last accepted solve, which the batch keeps until the
//!   world's next advance: `accelerometer` (the generalized acceleration
//!   (v₁ − v₀)/h of the solve, the CPU's `Simulator::qacc`) and `touch` (its
//!   contact impulses at the solution velocity over h). Both read zero
//!   terms after a reset, as on the CPU.
//!
//! `tendonpos`/`tendonvel` of spatial tendons are not evaluated (the GPU
//! has no tendon path kinematics): [`GpuSensors::unsupported`] names them
//! and reading fails with [`GpuError::Unsupported`]; the batch is still
//! created. MuJoCo sensor types cenic does not compute at all
//! ([`SensorKind::Unsupported`]) read NaN, as on the CPU.
//!
//! Unlike the CPU batch, which stores the values at the end of each
//! advance, the device evaluates them when read: after `set_state` or
//! `set_ctrl` they follow the new state and controls (accelerometers and
//! touch sensors still read the last step's solve).

use super::GpuError;
use super::buffers::{BufferSource, Readback, StorageBuffer};
use super::context::GpuContext;
use super::icf::uniform_buffer;
use super::model::{NONE, StructLayout};
use super::shaders::Kernel;
use crate::model::{ActuatorKind, FrameObject, Model, SensorKind, TendonPath, display_name};
use bytemuck::{Pod, Zeroable};
use std::sync::{Arc, Mutex};

/// The sensor kinds of `kernels/sensors.wgsl`, by code (the generated
/// `SENSOR_*` constants, upper-cased): MJCF element names, and
/// `unsupported` for [`SensorKind::Unsupported`].
pub const KINDS: [&str; 20] = [
    "jointpos",
    "jointvel",
    "tendonpos",
    "tendonvel",
    "actuatorpos",
    "actuatorvel",
    "actuatorfrc",
    "framepos",
    "framequat",
    "framexaxis",
    "frameyaxis",
    "framezaxis",
    "framelinvel",
    "frameangvel",
    "subtreecom",
    "touch",
    "accelerometer",
    "gyro",
    "velocimeter",
    "unsupported",
];

/// The frame kinds of frame sensors, by code (the generated `FRAME_*` constants).
pub const FRAMES: [&str; 4] = ["body", "xbody", "geom", "site"];

/// The code of `kind` in [`KINDS`].
fn kind_code(kind: &SensorKind) -> u32 {
    let name = if matches!(kind, SensorKind::Unsupported { .. }) { "unsupported" } else { kind.name() };
    KINDS.iter().position(|k| *k == name).expect("every sensor kind has a code") as u32
}

/// (FRAME_* code, index) of a frame.
fn frame_code(o: FrameObject) -> (u32, u32) {
    let (kind, id) = match o {
        FrameObject::Body(b) => (0, b),
        FrameObject::XBody(b) => (1, b),
        FrameObject::Geom(g) => (2, g),
        FrameObject::Site(s) => (3, s),
    };
    (kind, id as u32)
}

/// The generated WGSL constants composed after `kernels/sensors.wgsl`:
/// `SENSOR_*` ([`KINDS`]) and `FRAME_*` ([`FRAMES`]).
pub fn wgsl_constants() -> String {
    let mut out = String::from("// Sensor and frame kinds (generated from src/gpu/sensors.rs KINDS, FRAMES).\n");
    for (i, k) in KINDS.iter().enumerate() {
        out += &format!("const SENSOR_{}: u32 = {i}u;\n", k.to_uppercase());
    }
    for (i, k) in FRAMES.iter().enumerate() {
        out += &format!("const FRAME_{}: u32 = {i}u;\n", k.to_uppercase());
    }
    out
}

/// Sizes and switches of `sensors` (WGSL `SensorParams`, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuSensorParams {
    /// Sensors.
    pub nsensor: u32,
    /// Values per world.
    pub nsensordata: u32,
    /// 0 when the model's `sensor` flag is off (all values zero).
    pub enabled: u32,
    /// Bits of a quiet NaN, written for [`SensorKind::Unsupported`].
    pub nan_bits: u32,
}

/// A sensor (WGSL `SensorDef`), from [`crate::model::Sensor`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuSensor {
    /// Code in [`KINDS`].
    pub kind: u32,
    /// First value in the world's row.
    pub adr: u32,
    /// Joint, tendon, actuator, body, site or frame index.
    pub obj: u32,
    /// Frame sensors: [`FRAMES`] code of `obj`.
    pub obj_type: u32,
    /// Frame sensors: the reference frame ([`NONE`] without one).
    pub ref_id: u32,
    /// Its [`FRAMES`] code.
    pub ref_type: u32,
    /// Fixed tendons: first term in the term table.
    pub term_adr: u32,
    /// Fixed tendons: number of terms.
    pub term_num: u32,
    /// Clamp to ±cutoff when > 0.
    pub cutoff: f32,
    /// Number of values.
    pub dim: u32,
    /// Touch sensors: the site's shape ([`crate::model::GeomKind`] as u32).
    pub site_kind: u32,
    /// Padding.
    pub _pad0: u32,
    /// Touch sensors: the site's size (m).
    pub size: [f32; 3],
    /// Padding.
    pub _pad1: f32,
}

/// One term coef·q of a fixed tendon (WGSL `SensorTerm`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuSensorTerm {
    /// The joint's position coordinate.
    pub qpos_adr: u32,
    /// Its dof.
    pub dof_adr: u32,
    /// Coefficient.
    pub coef: f32,
    /// Padding.
    pub _pad: u32,
}

/// Sizes and field offsets of the structs above, keyed by WGSL name (for
/// comparing with the composed `sensors` stage).
pub fn struct_layouts() -> Vec<StructLayout> {
    vec![
        struct_layout!("SensorParams", GpuSensorParams, [nsensor, nsensordata, enabled, nan_bits]),
        struct_layout!(
            "SensorDef",
            GpuSensor,
            [kind, adr, obj, obj_type, ref_id, ref_type, term_adr, term_num, cutoff, dim, site_kind, size]
        ),
        struct_layout!("SensorTerm", GpuSensorTerm, [qpos_adr, dof_adr, coef]),
    ]
}

/// A model's sensors packed for the device.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedSensors {
    /// The uniform.
    pub params: GpuSensorParams,
    /// One per sensor.
    pub defs: Vec<GpuSensor>,
    /// Fixed-tendon terms.
    pub terms: Vec<GpuSensorTerm>,
    /// The sensors the device does not evaluate, named with their kind and
    /// why (`None` when it evaluates them all).
    pub unsupported: Option<String>,
}

impl PackedSensors {
    /// Packs `model`'s sensors.
    pub fn new(model: &Model) -> Self {
        let mut defs = Vec::with_capacity(model.sensors.len());
        let mut terms = vec![];
        let mut refused = vec![];
        for (i, s) in model.sensors.iter().enumerate() {
            let mut d = GpuSensor {
                kind: kind_code(&s.kind),
                adr: s.adr as u32,
                obj: 0,
                obj_type: 0,
                ref_id: NONE,
                ref_type: 0,
                term_adr: 0,
                term_num: 0,
                cutoff: s.cutoff as f32,
                dim: s.kind.dim() as u32,
                site_kind: 0,
                _pad0: 0,
                size: [0.0; 3],
                _pad1: 0.0,
            };
            let mut refuse = |why: String| {
                refused.push(format!("sensor '{}' ({}) {why}", display_name(&s.name, i), s.kind.name()));
            };
            match &s.kind {
                SensorKind::JointPos(j) | SensorKind::JointVel(j) | SensorKind::SubtreeCom(j) => d.obj = *j as u32,
                SensorKind::TendonPos(t) | SensorKind::TendonVel(t) => {
                    d.obj = *t as u32;
                    let tendon = &model.tendons[*t];
                    match &tendon.path {
                        TendonPath::Fixed(list) => {
                            d.term_adr = terms.len() as u32;
                            d.term_num = list.len() as u32;
                            for &(j, coef) in list {
                                let jt = &model.joints[j];
                                terms.push(GpuSensorTerm {
                                    qpos_adr: jt.qpos_adr as u32,
                                    dof_adr: jt.dof_adr as u32,
                                    coef: coef as f32,
                                    _pad: 0,
                                });
                            }
                        }
                        TendonPath::Spatial(_) => refuse(format!(
                            "reads spatial tendon '{}': the GPU evaluates fixed tendons only",
                            display_name(&tendon.name, *t)
                        )),
                    }
                }
                SensorKind::ActuatorPos(a) | SensorKind::ActuatorVel(a) | SensorKind::ActuatorFrc(a) => {
                    d.obj = *a as u32;
                    let act = &model.actuators[*a];
                    if let ActuatorKind::General(_) = act.kind {
                        refuse(format!(
                            "reads general actuator '{}': the GPU simulates motors and position servos only",
                            display_name(&act.name, *a)
                        ));
                    }
                }
                SensorKind::FramePos(o, r)
                | SensorKind::FrameQuat(o, r)
                | SensorKind::FrameXAxis(o, r)
                | SensorKind::FrameYAxis(o, r)
                | SensorKind::FrameZAxis(o, r) => {
                    (d.obj_type, d.obj) = frame_code(*o);
                    if let Some(r) = r {
                        (d.ref_type, d.ref_id) = frame_code(*r);
                    }
                }
                SensorKind::FrameLinVel(o) | SensorKind::FrameAngVel(o) => (d.obj_type, d.obj) = frame_code(*o),
                SensorKind::Touch(site)
                | SensorKind::Accelerometer(site)
                | SensorKind::Gyro(site)
                | SensorKind::Velocimeter(site) => {
                    d.obj = *site as u32;
                    let st = &model.sites[*site];
                    d.site_kind = st.kind as u32;
                    d.size = st.size.map(|x| x as f32);
                }
                SensorKind::Unsupported { .. } => {}
            }
            defs.push(d);
        }
        let params = GpuSensorParams {
            nsensor: defs.len() as u32,
            nsensordata: model.nsensordata as u32,
            enabled: model.options.flags.sensor as u32,
            nan_bits: f32::NAN.to_bits(),
        };
        let unsupported = (!refused.is_empty()).then(|| refused.join("; "));
        Self { params, defs, terms, unsupported }
    }
}

/// WGSL names of the buffers of `kernels/sensors.wgsl` (bindings 10–13).
pub const BUFFER_NAMES: [&str; 4] = ["sensor_params", "sensor_defs", "sensor_terms", "sensordata"];

/// The buffers of `kernels/sensors.wgsl`.
struct SensorBuffers {
    params: wgpu::Buffer,
    defs: StorageBuffer<GpuSensor>,
    terms: StorageBuffer<GpuSensorTerm>,
    out: StorageBuffer<f32>,
}

impl BufferSource for SensorBuffers {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        match name {
            "sensor_params" => Some(&self.params),
            "sensor_defs" => Some(self.defs.buffer()),
            "sensor_terms" => Some(self.terms.buffer()),
            "sensordata" => Some(self.out.buffer()),
            _ => None,
        }
    }
}

/// The sensors of a batch's worlds on its device (see the module docs):
/// buffers, the kernel, a staging buffer and the host copy, all created
/// once; a read records one pass and waits once.
pub struct GpuSensors {
    ctx: Arc<GpuContext>,
    nworld: usize,
    nsensordata: usize,
    buffers: SensorBuffers,
    kernel: Kernel,
    readback: Readback,
    host: Mutex<Vec<f32>>,
    unsupported: Option<String>,
}

impl std::fmt::Debug for GpuSensors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuSensors")
            .field("nworld", &self.nworld)
            .field("nsensordata", &self.nsensordata)
            .field("unsupported", &self.unsupported)
            .finish_non_exhaustive()
    }
}

impl GpuSensors {
    /// Kernel file stem.
    pub const STAGE: &'static str = "sensors";

    /// The sensors of `nworld` worlds of `model`, reading the batch buffers
    /// of `sources` (those of [`super::GpuBatch::with_state_sources`]).
    pub fn new(
        ctx: &Arc<GpuContext>,
        model: &Model,
        nworld: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let packed = PackedSensors::new(model);
        let n = nworld * model.nsensordata;
        let buffers = SensorBuffers {
            params: uniform_buffer(ctx, "sensor_params", &packed.params),
            defs: StorageBuffer::from_slice(ctx, "sensor_defs", &packed.defs)?,
            terms: StorageBuffer::from_slice(ctx, "sensor_terms", &packed.terms)?,
            out: StorageBuffer::new(ctx, "sensordata", n)?,
        };
        let all: Vec<&dyn BufferSource> =
            std::iter::once(&buffers as &dyn BufferSource).chain(sources.iter().copied()).collect();
        let kernel = Kernel::new(ctx, Self::STAGE, "sensors", nworld * model.sensors.len(), &all)?;
        let readback = Readback::new(ctx, (n * 4) as u64);
        ctx.check_errors()?;
        Ok(Self {
            ctx: ctx.clone(),
            nworld,
            nsensordata: model.nsensordata,
            buffers,
            kernel,
            readback,
            host: Mutex::new(vec![0.0; n]),
            unsupported: packed.unsupported,
        })
    }

    /// Bytes of device memory of the sensor table and values (not the staging buffer).
    pub fn device_bytes(&self) -> u64 {
        BUFFER_NAMES.iter().filter_map(|n| self.buffers.buffer(n)).map(|b| b.size()).sum()
    }

    /// The sensors the device does not evaluate, each named with its kind
    /// and the reason; `None` when it evaluates them all.
    pub fn unsupported(&self) -> Option<&str> {
        self.unsupported.as_deref()
    }

    /// Evaluates every world's sensors and writes them into `out` (nworld ×
    /// nsensordata, world first): `encode_state` records the kinematics and
    /// velocity stages at the current state, then `sensors` runs and the
    /// values are copied back, one submission and one wait (a chunked read
    /// after the pass when they exceed the device's largest buffer).
    pub fn read(&self, encode_state: impl FnOnce(&mut wgpu::ComputePass<'_>), out: &mut [f64]) -> Result<(), GpuError> {
        if let Some(what) = &self.unsupported {
            return Err(GpuError::Unsupported(format!("{what} (use CpuBatch)")));
        }
        let n = self.nworld * self.nsensordata;
        if out.len() != n {
            return Err(GpuError::Length { what: "sensordata", expected: n, got: out.len() });
        }
        let mut host = self.host.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = (n * 4) as u64;
        let pass = |enc: &mut wgpu::CommandEncoder| {
            let mut pass =
                enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sensors"), timestamp_writes: None });
            encode_state(&mut pass);
            self.kernel.encode(&mut pass);
        };
        if bytes <= self.readback.size() {
            let parts = &mut [(self.buffers.out.buffer(), 0, bytemuck::cast_slice_mut(host.as_mut_slice()))];
            self.readback.read_parts(&self.ctx, "sensors", pass, parts)?;
        } else {
            let mut encoder =
                self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sensors") });
            pass(&mut encoder);
            self.ctx.submit([encoder.finish()]);
            self.buffers.out.read_range_into(&self.ctx, &self.readback, 0, &mut host)?;
        }
        out.iter_mut().zip(host.iter()).for_each(|(d, s)| *d = *s as f64);
        Ok(())
    }
}
