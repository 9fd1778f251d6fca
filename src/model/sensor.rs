//! Sensors (MJCF `<sensor>`): what each one measures. Values are computed
//! by [`crate::dynamics::sensors`] into a sensor data vector, MuJoCo's
//! `sensordata` layout (each sensor's values at [`Sensor::adr`]).

/// A frame a frame sensor reads (MJCF `objtype`/`reftype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameObject {
    /// A body's inertial frame: centre of mass and principal axes (`body`).
    Body(usize),
    /// A body's own frame (`xbody`).
    XBody(usize),
    /// A geom's frame.
    Geom(usize),
    /// A site's frame.
    Site(usize),
}

/// What a sensor measures. Site sensors express their output in the site frame.
#[derive(Clone, Debug, PartialEq)]
pub enum SensorKind {
    /// Hinge or slide joint position (rad or m).
    JointPos(usize),
    /// Hinge or slide joint velocity (rad/s or m/s).
    JointVel(usize),
    /// Tendon length (m).
    TendonPos(usize),
    /// Tendon length rate (m/s).
    TendonVel(usize),
    /// Actuator length L (see [`super::GeneralActuator`]; gear·q for joint actuators).
    ActuatorPos(usize),
    /// Actuator velocity L̇.
    ActuatorVel(usize),
    /// Actuator force f before the transmission (N or N·m), at the current
    /// state, clamped to its force range.
    ActuatorFrc(usize),
    /// Position of a frame (m, world frame, or the reference frame's when given).
    FramePos(FrameObject, Option<FrameObject>),
    /// Orientation of a frame (unit quaternion, relative to the reference frame when given).
    FrameQuat(FrameObject, Option<FrameObject>),
    /// x axis of a frame (in the world frame, or the reference frame's).
    FrameXAxis(FrameObject, Option<FrameObject>),
    /// y axis of a frame.
    FrameYAxis(FrameObject, Option<FrameObject>),
    /// z axis of a frame.
    FrameZAxis(FrameObject, Option<FrameObject>),
    /// Linear velocity of a frame's origin (m/s, world frame).
    FrameLinVel(FrameObject),
    /// Angular velocity of a frame (rad/s, world frame).
    FrameAngVel(FrameObject),
    /// Centre of mass of the subtree rooted at a body (m, world frame).
    SubtreeCom(usize),
    /// Sum of the normal contact forces (N) of contacts on the site's body
    /// whose point lies inside the site's volume, from the last step's contact solve.
    Touch(usize),
    /// Linear acceleration of the site minus gravity (m/s², site frame),
    /// from the last step's velocity change.
    Accelerometer(usize),
    /// Angular velocity (rad/s, site frame).
    Gyro(usize),
    /// Linear velocity of the site (m/s, site frame).
    Velocimeter(usize),
    /// A MuJoCo sensor type cenic does not compute: its values are NaN
    /// (the layout of the sensor data vector stays MuJoCo's).
    Unsupported {
        /// The MJCF element name.
        what: String,
        /// Number of values.
        dim: usize,
    },
}

impl SensorKind {
    /// Number of values this sensor writes.
    pub fn dim(&self) -> usize {
        match self {
            SensorKind::JointPos(_)
            | SensorKind::JointVel(_)
            | SensorKind::TendonPos(_)
            | SensorKind::TendonVel(_)
            | SensorKind::ActuatorPos(_)
            | SensorKind::ActuatorVel(_)
            | SensorKind::ActuatorFrc(_)
            | SensorKind::Touch(_) => 1,
            SensorKind::FrameQuat(..) => 4,
            SensorKind::Unsupported { dim, .. } => *dim,
            _ => 3,
        }
    }
    /// The MJCF element name.
    pub fn name(&self) -> &str {
        match self {
            SensorKind::JointPos(_) => "jointpos",
            SensorKind::JointVel(_) => "jointvel",
            SensorKind::TendonPos(_) => "tendonpos",
            SensorKind::TendonVel(_) => "tendonvel",
            SensorKind::ActuatorPos(_) => "actuatorpos",
            SensorKind::ActuatorVel(_) => "actuatorvel",
            SensorKind::ActuatorFrc(_) => "actuatorfrc",
            SensorKind::FramePos(..) => "framepos",
            SensorKind::FrameQuat(..) => "framequat",
            SensorKind::FrameXAxis(..) => "framexaxis",
            SensorKind::FrameYAxis(..) => "frameyaxis",
            SensorKind::FrameZAxis(..) => "framezaxis",
            SensorKind::FrameLinVel(_) => "framelinvel",
            SensorKind::FrameAngVel(_) => "frameangvel",
            SensorKind::SubtreeCom(_) => "subtreecom",
            SensorKind::Touch(_) => "touch",
            SensorKind::Accelerometer(_) => "accelerometer",
            SensorKind::Gyro(_) => "gyro",
            SensorKind::Velocimeter(_) => "velocimeter",
            SensorKind::Unsupported { what, .. } => what,
        }
    }
}

/// A sensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Sensor {
    /// Name (may be empty).
    pub name: String,
    /// What it measures.
    pub kind: SensorKind,
    /// Outputs are clamped to [−cutoff, cutoff] when cutoff > 0 (MJCF
    /// `cutoff`; not for quaternions).
    pub cutoff: f64,
    /// First index of its values in the sensor data vector (compiled).
    pub adr: usize,
}
