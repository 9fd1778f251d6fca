//! Sensors evaluated on the device (`kernels/sensors.wgsl`), the twin of
//! [`crate::dynamics::sensors`]: [`GpuSensors`] fills every world's
//! `sensordata` (MuJoCo's layout, [`crate::model::Sensor::adr`]) from a
//! batch's buffers after an advance, behind
//! [`Batch::sensordata`](crate::batch::Batch::sensordata).
//!
//! One evaluation is one submission and one host wait: the batch's
//! kinematics and velocity stages at the final state (given by the batch
//! to [`GpuSensors::read`]), `sensors` (one thread per
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
//!   terms after a reset or `set_state`, as on the CPU.
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
//! touch sensors read the last step's solve, zero after `set_state`, which
//! leaves a world without a last step).

use super::buffers::{BufferSource, Readback, StorageBuffer, uniform_buffer};
use super::compose::KernelFile;
use super::context::GpuContext;
use super::data::DATA;
use super::error::GpuError;
use super::icf::{COST, STATE_STORAGE, VEC_STORAGE, WG_SERIAL};
use super::kernel::Kernel;
use super::model::{NONE, StructLayout};
use super::names::{KernelName, wgsl_constants};
use crate::model::{ActuatorKind, FrameObject, Model, SensorKind, TendonPath, display_name};
use bytemuck::{Pod, Zeroable};
use std::sync::{Arc, Mutex};

/// `kernels/sensors.wgsl`, after `icf_cost.wgsl` (whose `contact_terms`
/// the touch sensors use, run by one thread with the state in storage),
/// with the sensor and frame kinds generated after it ([`wgsl_constants`]).
pub static FILE: KernelFile = KernelFile::new(
    "sensors",
    include_str!("../../kernels/sensors.wgsl"),
    &[&DATA, &WG_SERIAL, &COST, &VEC_STORAGE, &STATE_STORAGE],
)
.with_generated(kind_constants);

/// The sensor kinds of `kernels/sensors.wgsl` (`SENSOR_*`): the MJCF
/// element names of [`SensorKind`], and `unsupported` for
/// [`SensorKind::Unsupported`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SensorCode {
    /// `jointpos`.
    JointPos,
    /// `jointvel`.
    JointVel,
    /// `tendonpos`.
    TendonPos,
    /// `tendonvel`.
    TendonVel,
    /// `actuatorpos`.
    ActuatorPos,
    /// `actuatorvel`.
    ActuatorVel,
    /// `actuatorfrc`.
    ActuatorFrc,
    /// `framepos`.
    FramePos,
    /// `framequat`.
    FrameQuat,
    /// `framexaxis`.
    FrameXAxis,
    /// `frameyaxis`.
    FrameYAxis,
    /// `framezaxis`.
    FrameZAxis,
    /// `framelinvel`.
    FrameLinVel,
    /// `frameangvel`.
    FrameAngVel,
    /// `subtreecom`.
    SubtreeCom,
    /// `touch`.
    Touch,
    /// `accelerometer`.
    Accelerometer,
    /// `gyro`.
    Gyro,
    /// `velocimeter`.
    Velocimeter,
    /// A MuJoCo sensor cenic does not compute (reads NaN).
    Unsupported,
}

impl KernelName for SensorCode {
    const ALL: &'static [Self] = &[
        SensorCode::JointPos,
        SensorCode::JointVel,
        SensorCode::TendonPos,
        SensorCode::TendonVel,
        SensorCode::ActuatorPos,
        SensorCode::ActuatorVel,
        SensorCode::ActuatorFrc,
        SensorCode::FramePos,
        SensorCode::FrameQuat,
        SensorCode::FrameXAxis,
        SensorCode::FrameYAxis,
        SensorCode::FrameZAxis,
        SensorCode::FrameLinVel,
        SensorCode::FrameAngVel,
        SensorCode::SubtreeCom,
        SensorCode::Touch,
        SensorCode::Accelerometer,
        SensorCode::Gyro,
        SensorCode::Velocimeter,
        SensorCode::Unsupported,
    ];

    fn name(self) -> &'static str {
        match self {
            SensorCode::JointPos => "jointpos",
            SensorCode::JointVel => "jointvel",
            SensorCode::TendonPos => "tendonpos",
            SensorCode::TendonVel => "tendonvel",
            SensorCode::ActuatorPos => "actuatorpos",
            SensorCode::ActuatorVel => "actuatorvel",
            SensorCode::ActuatorFrc => "actuatorfrc",
            SensorCode::FramePos => "framepos",
            SensorCode::FrameQuat => "framequat",
            SensorCode::FrameXAxis => "framexaxis",
            SensorCode::FrameYAxis => "frameyaxis",
            SensorCode::FrameZAxis => "framezaxis",
            SensorCode::FrameLinVel => "framelinvel",
            SensorCode::FrameAngVel => "frameangvel",
            SensorCode::SubtreeCom => "subtreecom",
            SensorCode::Touch => "touch",
            SensorCode::Accelerometer => "accelerometer",
            SensorCode::Gyro => "gyro",
            SensorCode::Velocimeter => "velocimeter",
            SensorCode::Unsupported => "unsupported",
        }
    }
}

impl SensorCode {
    /// The code of `kind`.
    pub fn of(kind: &SensorKind) -> Self {
        match kind {
            SensorKind::JointPos(_) => SensorCode::JointPos,
            SensorKind::JointVel(_) => SensorCode::JointVel,
            SensorKind::TendonPos(_) => SensorCode::TendonPos,
            SensorKind::TendonVel(_) => SensorCode::TendonVel,
            SensorKind::ActuatorPos(_) => SensorCode::ActuatorPos,
            SensorKind::ActuatorVel(_) => SensorCode::ActuatorVel,
            SensorKind::ActuatorFrc(_) => SensorCode::ActuatorFrc,
            SensorKind::FramePos(..) => SensorCode::FramePos,
            SensorKind::FrameQuat(..) => SensorCode::FrameQuat,
            SensorKind::FrameXAxis(..) => SensorCode::FrameXAxis,
            SensorKind::FrameYAxis(..) => SensorCode::FrameYAxis,
            SensorKind::FrameZAxis(..) => SensorCode::FrameZAxis,
            SensorKind::FrameLinVel(_) => SensorCode::FrameLinVel,
            SensorKind::FrameAngVel(_) => SensorCode::FrameAngVel,
            SensorKind::SubtreeCom(_) => SensorCode::SubtreeCom,
            SensorKind::Touch(_) => SensorCode::Touch,
            SensorKind::Accelerometer(_) => SensorCode::Accelerometer,
            SensorKind::Gyro(_) => SensorCode::Gyro,
            SensorKind::Velocimeter(_) => SensorCode::Velocimeter,
            SensorKind::Unsupported { .. } => SensorCode::Unsupported,
        }
    }
}

/// The frame kinds of frame sensors (`FRAME_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameCode {
    /// A body's frame.
    Body,
    /// A body's inertial frame.
    XBody,
    /// A geom's frame.
    Geom,
    /// A site's frame.
    Site,
}

impl KernelName for FrameCode {
    const ALL: &'static [Self] = &[FrameCode::Body, FrameCode::XBody, FrameCode::Geom, FrameCode::Site];

    fn name(self) -> &'static str {
        match self {
            FrameCode::Body => "body",
            FrameCode::XBody => "xbody",
            FrameCode::Geom => "geom",
            FrameCode::Site => "site",
        }
    }
}

/// ([`FrameCode`], index) of a frame.
fn frame_code(o: FrameObject) -> (u32, u32) {
    let (kind, id) = match o {
        FrameObject::Body(b) => (FrameCode::Body, b),
        FrameObject::XBody(b) => (FrameCode::XBody, b),
        FrameObject::Geom(g) => (FrameCode::Geom, g),
        FrameObject::Site(s) => (FrameCode::Site, s),
    };
    (kind.code(), id as u32)
}

/// The generated WGSL constants composed after `kernels/sensors.wgsl`:
/// `SENSOR_*` ([`SensorCode`]) and `FRAME_*` ([`FrameCode`]).
pub fn kind_constants() -> String {
    wgsl_constants::<SensorCode>("SENSOR", "src/gpu/sensors.rs SensorCode")
        + &wgsl_constants::<FrameCode>("FRAME", "src/gpu/sensors.rs FrameCode")
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
    /// [`SensorCode`].
    pub kind: u32,
    /// First value in the world's row.
    pub adr: u32,
    /// Joint, tendon, actuator, body, site or frame index.
    pub obj: u32,
    /// Frame sensors: [`FrameCode`] of `obj`.
    pub obj_type: u32,
    /// Frame sensors: the reference frame ([`NONE`] without one).
    pub ref_id: u32,
    /// Its [`FrameCode`].
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
                kind: SensorCode::of(&s.kind).code(),
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
    /// The sensors of `nworld` worlds of `model`, reading the batch buffers
    /// of `sources` (the model, the per-world data, the contacts and the
    /// ICF buffers).
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
        let kernel = Kernel::new(ctx, &FILE, "sensors", nworld * model.sensors.len(), &all)?;
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
