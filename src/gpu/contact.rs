//! The GPU contact record shared by the collision and ICF kernels.

use crate::collision::Contact;
use bytemuck::{Pod, Zeroable};

/// A contact as stored on the GPU (WGSL `Contact` in `kernels/data.wgsl`):
/// the f32 twin of [`crate::collision::Contact`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuContact {
    /// Contact point, world (m).
    pub pos: [f32; 3],
    /// Signed distance φ (m), negative when overlapping.
    pub dist: f32,
    /// Unit normal from geom A to geom B.
    pub normal: [f32; 3],
    /// Combined stiffness (N/m).
    pub stiffness: f32,
    /// Combined Hunt–Crossley dissipation (s/m).
    pub dissipation: f32,
    /// Combined static friction coefficient.
    pub mu_static: f32,
    /// Combined dynamic friction coefficient.
    pub mu_dynamic: f32,
    /// Padding.
    pub _pad0: f32,
    /// Geom ids (A, B).
    pub geom: [u32; 2],
    /// Body ids (A, B).
    pub body: [u32; 2],
    /// Feature ids (A, B).
    pub feature: [u32; 2],
    /// Index of the pair in the collision stage's candidate pairs
    /// (`gpu::collision::candidate_pairs`), whose soft-contact constants
    /// the ICF builder reads.
    pub pair: u32,
    /// Padding.
    pub _pad1: u32,
}

impl GpuContact {
    /// Packs a CPU contact (f32 path) of candidate pair `pair` for upload.
    pub fn from_contact(c: &Contact<f32>, pair: u32) -> Self {
        Self {
            pos: c.pos.to_array(),
            dist: c.dist,
            normal: c.normal.to_array(),
            stiffness: c.material.stiffness as f32,
            dissipation: c.material.dissipation as f32,
            mu_static: c.material.mu_static as f32,
            mu_dynamic: c.material.mu_dynamic as f32,
            _pad0: 0.0,
            geom: [c.geom[0] as u32, c.geom[1] as u32],
            body: [c.body[0] as u32, c.body[1] as u32],
            feature: c.feature,
            pair,
            _pad1: 0,
        }
    }
}
