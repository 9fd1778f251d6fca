//! MJCF loader (work in progress).

use super::{Model, ModelError};

impl Model {
    /// Loads a model from an MJCF file.
    pub fn from_mjcf_file(path: impl AsRef<std::path::Path>) -> Result<Model, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Io { path: path.display().to_string(), message: e.to_string() })?;
        Self::from_mjcf_str(&text)
    }
    /// Loads a model from MJCF text.
    pub fn from_mjcf_str(_text: &str) -> Result<Model, ModelError> {
        unimplemented!()
    }
}
