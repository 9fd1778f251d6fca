use std::fmt;

/// The model element an error refers to (index into the builder's lists).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entity {
    /// The model as a whole.
    Model,
    /// A body.
    Body(usize),
    /// A joint.
    Joint(usize),
    /// A geom.
    Geom(usize),
    /// A site.
    Site(usize),
    /// A mesh.
    Mesh(usize),
    /// An actuator.
    Actuator(usize),
    /// A tendon.
    Tendon(usize),
    /// An equality constraint.
    Equality(usize),
    /// An explicit contact pair.
    Pair(usize),
    /// A sensor.
    Sensor(usize),
    /// A keyframe.
    Keyframe(usize),
    /// A camera.
    Camera(usize),
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entity::Model => write!(f, "model"),
            Entity::Body(i) => write!(f, "body #{i}"),
            Entity::Joint(i) => write!(f, "joint #{i}"),
            Entity::Geom(i) => write!(f, "geom #{i}"),
            Entity::Site(i) => write!(f, "site #{i}"),
            Entity::Mesh(i) => write!(f, "mesh #{i}"),
            Entity::Actuator(i) => write!(f, "actuator #{i}"),
            Entity::Tendon(i) => write!(f, "tendon #{i}"),
            Entity::Equality(i) => write!(f, "equality #{i}"),
            Entity::Pair(i) => write!(f, "contact pair #{i}"),
            Entity::Sensor(i) => write!(f, "sensor #{i}"),
            Entity::Keyframe(i) => write!(f, "keyframe #{i}"),
            Entity::Camera(i) => write!(f, "camera #{i}"),
        }
    }
}

/// An error building or loading a model. Every variant names what is wrong
/// and where.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// A model element failed validation in the builder.
    #[error("{entity}{}: {message}", name_suffix(.name))]
    Invalid {
        /// The element.
        entity: Entity,
        /// Its name, if any.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// An MJCF problem at a known place in the source.
    #[error("{file}:{line}:{column}: <{element}>{}: {message}", attr_suffix(.attribute))]
    Mjcf {
        /// File name (or `<string>` for text).
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
        /// Element tag, with its name when it has one (e.g. `joint name="hip"`).
        element: String,
        /// Offending attribute, when there is one.
        attribute: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// The MJCF text is not well-formed XML.
    #[error("{file}: malformed XML: {message}")]
    Xml {
        /// File name (or `<string>` for text).
        file: String,
        /// Parser message, including line and column.
        message: String,
    },
    /// A file could not be read.
    #[error("cannot read '{path}': {message}")]
    Io {
        /// Path.
        path: String,
        /// OS message.
        message: String,
    },
}

fn name_suffix(name: &str) -> String {
    if name.is_empty() { String::new() } else { format!(" '{name}'") }
}

fn attr_suffix(a: &Option<String>) -> String {
    match a {
        Some(a) => format!(" attribute '{a}'"),
        None => String::new(),
    }
}

impl ModelError {
    /// Convenience constructor for builder validation errors.
    pub fn invalid(entity: Entity, name: &str, message: impl Into<String>) -> Self {
        ModelError::Invalid { entity, name: name.to_string(), message: message.into() }
    }
}
