//! Model constants packed for the GPU (uploaded once) and per-world
//! physical parameters (one entry per world).
//!
//! Each `Gpu*` struct is `#[repr(C)]` with the layout of the WGSL struct of
//! the same name without the prefix in `kernels/data.wgsl` (vec3 fields are
//! followed by a 4-byte scalar, vec4 fields are 16-byte aligned);
//! [`struct_layouts`] lists sizes and field offsets so that a test can
//! compare them with naga's layout. Values are converted to `f32` exactly
//! as the CPU f32 path converts them (`T::c`).

use super::buffers::{BufferSource, StorageBuffer, uniform_buffer};
use super::context::GpuContext;
use super::error::GpuError;
use crate::batch::WorldParams;
use crate::model::{JointKind, Model};
use bytemuck::{Pod, Zeroable};

/// "No index" marker (`NONE` in `kernels/common.wgsl`).
pub const NONE: u32 = u32::MAX;

/// Joint kind codes (`JOINT_*` in `kernels/common.wgsl`).
pub fn joint_code(kind: JointKind) -> u32 {
    match kind {
        JointKind::Free => 0,
        JointKind::Ball => 1,
        JointKind::Hinge => 2,
        JointKind::Slide => 3,
    }
}

fn f3(a: [f64; 3]) -> [f32; 3] {
    a.map(|x| x as f32)
}
fn f4(a: [f64; 4]) -> [f32; 4] {
    a.map(|x| x as f32)
}

/// Sizes of one world and gravity (WGSL `Dims`, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuDims {
    /// Number of worlds.
    pub nworld: u32,
    /// Bodies, including the world body 0.
    pub nbody: u32,
    /// Joints.
    pub njnt: u32,
    /// Degrees of freedom.
    pub nv: u32,
    /// Position coordinates.
    pub nq: u32,
    /// Geoms.
    pub ngeom: u32,
    /// Sites.
    pub nsite: u32,
    /// Contact capacity per world (entries of `contacts` per world).
    pub ncon: u32,
    /// Gravity (m/s², world frame); w unused.
    pub gravity: [f32; 4],
}

/// A body (WGSL `Body`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuBody {
    /// Parent body (the world's parent is 0).
    pub parent: u32,
    /// Root of the body's tree (0 for the world).
    pub root: u32,
    /// First joint.
    pub jnt_adr: u32,
    /// Number of joints.
    pub jnt_num: u32,
    /// First dof.
    pub dof_adr: u32,
    /// Number of dofs.
    pub dof_num: u32,
    /// Weld group.
    pub weld: u32,
    /// Padding.
    pub _pad: u32,
    /// Position in the parent frame (m).
    pub pos: [f32; 3],
    /// Mass (kg).
    pub mass: f32,
    /// Orientation in the parent frame (w, x, y, z).
    pub quat: [f32; 4],
    /// Centre of mass in the body frame (m).
    pub ipos: [f32; 3],
    /// Padding.
    pub _pad1: f32,
    /// Principal axes of inertia in the body frame (w, x, y, z).
    pub iquat: [f32; 4],
    /// Principal moments of inertia (kg·m²).
    pub inertia: [f32; 3],
    /// Padding.
    pub _pad2: f32,
}

/// A joint (WGSL `Joint`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuJoint {
    /// [`joint_code`] of the kind.
    pub kind: u32,
    /// Body moved by the joint.
    pub body: u32,
    /// First position coordinate.
    pub qpos_adr: u32,
    /// First dof.
    pub dof_adr: u32,
    /// Anchor in the body frame (m).
    pub pos: [f32; 3],
    /// Joint value at the model pose (rad or m).
    pub reference: f32,
    /// Unit axis in the body frame.
    pub axis: [f32; 3],
    /// Spring stiffness (N·m/rad or N/m).
    pub stiffness: f32,
    /// Spring rest position (rad or m).
    pub springref: f32,
    /// Rotor inertia (kg·m² or kg).
    pub armature: f32,
    /// Viscous damping (N·m·s/rad or N·s/m).
    pub damping: f32,
    /// 1 when `range` applies.
    pub limited: u32,
    /// Position limits (rad or m).
    pub range: [f32; 2],
    /// Padding.
    pub _pad: [f32; 2],
}

/// Most dof blocks the GPU's Newton solve tells apart (`MAX_BLOCKS` in
/// `kernels/icf_cost.wgsl`: one bit per block in a `u32` mask).
pub const MAX_DOF_BLOCKS: usize = 32;

/// The dof blocks of the GPU's structured Newton solve: the CPU's tree
/// blocks (kinematic trees, merged where a tendon, equality constraint or
/// actuator couples them; `crate::icf::tree_blocks`), consecutive ones
/// merged further into at most [`MAX_DOF_BLOCKS`] blocks of about equal
/// tree counts. Returns the block of each dof and the first dof of each
/// block followed by nv; one block (a dense solve) when the trees' dofs
/// are not contiguous. A and M + hD never couple two blocks, so the ICF
/// Hessian's blocks between two of them are exactly zero unless a contact
/// couples them.
pub fn dof_blocks(model: &Model) -> (Vec<u32>, Vec<u32>) {
    let (trees, _) = crate::icf::tree_blocks(model);
    if trees.len() <= 1 {
        return (vec![0; model.nv], vec![0, model.nv as u32]);
    }
    let per = trees.len().div_ceil(MAX_DOF_BLOCKS);
    let mut starts: Vec<u32> = trees.chunks(per).map(|c| c[0].0 as u32).collect();
    starts.push(model.nv as u32);
    let mut dof_block = vec![0; model.nv];
    for (b, w) in starts.windows(2).enumerate() {
        dof_block[w[0] as usize..w[1] as usize].fill(b as u32);
    }
    (dof_block, starts)
}

/// A degree of freedom (WGSL `Dof`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuDof {
    /// Body moved.
    pub body: u32,
    /// Joint.
    pub joint: u32,
    /// Previous dof towards the world, [`NONE`] at a tree root.
    pub parent: u32,
    /// The dof's block ([`dof_blocks`]).
    pub block: u32,
    /// Armature (kg·m² or kg).
    pub armature: f32,
    /// Damping (N·m·s/rad or N·s/m).
    pub damping: f32,
    /// Padding.
    pub _pad1: [f32; 2],
}

/// A geom (WGSL `Geom`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuGeom {
    /// Body.
    pub body: u32,
    /// `GeomKind as u32`.
    pub kind: u32,
    /// Mesh index, [`NONE`] when not a mesh.
    pub mesh: u32,
    /// Collision type bits.
    pub contype: u32,
    /// Collision affinity bits.
    pub conaffinity: u32,
    /// Padding.
    pub _pad: [u32; 3],
    /// Position in the body frame (m).
    pub pos: [f32; 3],
    /// Bounding radius (m); `f32::MAX` for planes (WGSL may assume no infinities).
    pub rbound: f32,
    /// Orientation in the body frame (w, x, y, z).
    pub quat: [f32; 4],
    /// Shape parameters (m).
    pub size: [f32; 3],
    /// Contact margin (m).
    pub margin: f32,
    /// Stiffness (N/m; −1 marks a rigid geom, infinite on the CPU), dissipation (s/m), μs, μd.
    pub material: [f32; 4],
}

/// A site (WGSL `Site`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuSite {
    /// Body.
    pub body: u32,
    /// Padding.
    pub _pad: [u32; 3],
    /// Position in the body frame (m).
    pub pos: [f32; 3],
    /// Padding.
    pub _pad1: f32,
    /// Orientation in the body frame (w, x, y, z).
    pub quat: [f32; 4],
}

/// Per-world physical parameters (WGSL `WorldParams`), from [`WorldParams`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuWorldParams {
    /// Multiplies every body mass and inertia.
    pub mass_scale: f32,
    /// Multiplies contact stiffness.
    pub stiffness: f32,
    /// Multiplies Hunt–Crossley dissipation.
    pub dissipation: f32,
    /// Multiplies static friction.
    pub mu_static: f32,
    /// Multiplies dynamic friction.
    pub mu_dynamic: f32,
    /// Padding.
    pub _pad: [f32; 3],
}

impl From<&WorldParams> for GpuWorldParams {
    fn from(p: &WorldParams) -> Self {
        Self {
            mass_scale: p.mass_scale as f32,
            stiffness: p.materials.stiffness as f32,
            dissipation: p.materials.dissipation as f32,
            mu_static: p.materials.mu_static as f32,
            mu_dynamic: p.materials.mu_dynamic as f32,
            _pad: [0.0; 3],
        }
    }
}

/// The model's arrays packed for the GPU (host side, no device needed).
#[derive(Clone, Debug, PartialEq)]
pub struct PackedModel {
    /// One per body (index 0 is the world).
    pub bodies: Vec<GpuBody>,
    /// One per joint.
    pub joints: Vec<GpuJoint>,
    /// One per dof.
    pub dofs: Vec<GpuDof>,
    /// One per geom.
    pub geoms: Vec<GpuGeom>,
    /// One per site.
    pub sites: Vec<GpuSite>,
}

impl PackedModel {
    /// Packs `model`.
    pub fn new(model: &Model) -> Self {
        let bodies = model
            .bodies
            .iter()
            .map(|b| GpuBody {
                parent: b.parent as u32,
                root: b.root as u32,
                jnt_adr: b.jnt_adr as u32,
                jnt_num: b.jnt_num as u32,
                dof_adr: b.dof_adr as u32,
                dof_num: b.dof_num as u32,
                weld: b.weld as u32,
                _pad: 0,
                pos: f3(b.pos),
                mass: b.mass as f32,
                quat: f4(b.quat),
                ipos: f3(b.ipos),
                _pad1: 0.0,
                iquat: f4(b.iquat),
                inertia: f3(b.inertia),
                _pad2: 0.0,
            })
            .collect();
        let joints = model
            .joints
            .iter()
            .map(|j| GpuJoint {
                kind: joint_code(j.kind),
                body: j.body as u32,
                qpos_adr: j.qpos_adr as u32,
                dof_adr: j.dof_adr as u32,
                pos: f3(j.pos),
                reference: j.reference as f32,
                axis: f3(j.axis),
                stiffness: j.stiffness as f32,
                springref: j.springref as f32,
                armature: j.armature as f32,
                damping: j.damping as f32,
                limited: j.range.is_some() as u32,
                range: j.range.map_or([0.0; 2], |r| [r[0] as f32, r[1] as f32]),
                _pad: [0.0; 2],
            })
            .collect();
        let (dof_block, _) = dof_blocks(model);
        let dofs = model
            .dofs
            .iter()
            .zip(&dof_block)
            .map(|(d, &block)| GpuDof {
                body: d.body as u32,
                joint: d.joint as u32,
                parent: d.parent.map_or(NONE, |p| p as u32),
                block,
                armature: d.armature as f32,
                damping: d.damping as f32,
                _pad1: [0.0; 2],
            })
            .collect();
        let geoms = model
            .geoms
            .iter()
            .map(|g| GpuGeom {
                body: g.body as u32,
                kind: g.kind as u32,
                mesh: g.mesh.map_or(NONE, |m| m as u32),
                contype: g.contype,
                conaffinity: g.conaffinity,
                _pad: [0; 3],
                pos: f3(g.pos),
                rbound: if g.rbound.is_finite() { g.rbound as f32 } else { f32::MAX },
                quat: f4(g.quat),
                size: f3(g.size),
                margin: g.margin as f32,
                material: [
                    if g.material.stiffness.is_finite() { g.material.stiffness as f32 } else { -1.0 },
                    g.material.dissipation as f32,
                    g.material.mu_static as f32,
                    g.material.mu_dynamic as f32,
                ],
            })
            .collect();
        let sites = model
            .sites
            .iter()
            .map(|s| GpuSite { body: s.body as u32, _pad: [0; 3], pos: f3(s.pos), _pad1: 0.0, quat: f4(s.quat) })
            .collect();
        Self { bodies, joints, dofs, geoms, sites }
    }
}

/// (WGSL struct name, size in bytes, [(field, offset in bytes)]) of a `Gpu*` struct.
pub type StructLayout = (&'static str, usize, Vec<(&'static str, usize)>);

/// Sizes and field offsets of the `Gpu*` structs, keyed by the WGSL struct
/// name, for comparing with the WGSL layout.
pub fn struct_layouts() -> Vec<StructLayout> {
    vec![
        struct_layout!("Dims", GpuDims, [nworld, nbody, njnt, nv, nq, ngeom, nsite, ncon, gravity]),
        struct_layout!(
            "Contact",
            super::contact::GpuContact,
            [pos, dist, normal, stiffness, dissipation, mu_static, mu_dynamic, geom, body, feature, pair]
        ),
        struct_layout!(
            "Body",
            GpuBody,
            [parent, root, jnt_adr, jnt_num, dof_adr, dof_num, weld, pos, mass, quat, ipos, iquat, inertia]
        ),
        struct_layout!(
            "Joint",
            GpuJoint,
            [
                kind, body, qpos_adr, dof_adr, pos, reference, axis, stiffness, springref, armature, damping, limited,
                range
            ]
        ),
        struct_layout!("Dof", GpuDof, [body, joint, parent, block, armature, damping]),
        struct_layout!(
            "Geom",
            GpuGeom,
            [body, kind, mesh, contype, conaffinity, pos, rbound, quat, size, margin, material]
        ),
        struct_layout!("Site", GpuSite, [body, pos, quat]),
        struct_layout!("WorldParams", GpuWorldParams, [mass_scale, stiffness, dissipation, mu_static, mu_dynamic]),
    ]
}

/// The model on the GPU for `nworld` worlds: sizes (uniform), packed model
/// arrays and the per-world parameters.
pub struct GpuModel {
    /// Host copy of the sizes.
    pub dims: GpuDims,
    dims_buffer: wgpu::Buffer,
    bodies: StorageBuffer<GpuBody>,
    joints: StorageBuffer<GpuJoint>,
    dofs: StorageBuffer<GpuDof>,
    geoms: StorageBuffer<GpuGeom>,
    sites: StorageBuffer<GpuSite>,
    world_params: StorageBuffer<GpuWorldParams>,
}

impl std::fmt::Debug for GpuModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuModel").field("dims", &self.dims).finish_non_exhaustive()
    }
}

impl GpuModel {
    /// WGSL names of the buffers this provides.
    pub const BUFFER_NAMES: [&'static str; 7] = ["dims", "bodies", "joints", "dofs", "geoms", "sites", "world_params"];

    /// Uploads `model` for `nworld` worlds, all with default [`WorldParams`].
    pub fn new(ctx: &GpuContext, model: &Model, nworld: usize) -> Result<Self, GpuError> {
        let packed = PackedModel::new(model);
        let g = model.options.gravity;
        let dims = GpuDims {
            nworld: nworld as u32,
            nbody: model.bodies.len() as u32,
            njnt: model.joints.len() as u32,
            nv: model.nv as u32,
            nq: model.nq as u32,
            ngeom: model.geoms.len() as u32,
            nsite: model.sites.len() as u32,
            ncon: 0,
            gravity: [g[0] as f32, g[1] as f32, g[2] as f32, 0.0],
        };
        let dims_buffer = uniform_buffer(ctx, "dims", &dims);
        let params = vec![GpuWorldParams::from(&WorldParams::default()); nworld];
        Ok(Self {
            dims,
            dims_buffer,
            bodies: StorageBuffer::from_slice(ctx, "bodies", &packed.bodies)?,
            joints: StorageBuffer::from_slice(ctx, "joints", &packed.joints)?,
            dofs: StorageBuffer::from_slice(ctx, "dofs", &packed.dofs)?,
            geoms: StorageBuffer::from_slice(ctx, "geoms", &packed.geoms)?,
            sites: StorageBuffer::from_slice(ctx, "sites", &packed.sites)?,
            world_params: StorageBuffer::from_slice(ctx, "world_params", &params)?,
        })
    }

    /// Sets the contact capacity per world (`Dims.ncon`: entries of the
    /// `contacts` buffer per world), rewriting the uniform. Kernels created
    /// before keep their launch sizes: set it before creating contact kernels.
    pub fn set_contact_capacity(&mut self, ctx: &GpuContext, ncon: usize) -> Result<(), GpuError> {
        self.dims.ncon = u32::try_from(ncon).map_err(|_| GpuError::Limits {
            adapter: ctx.adapter_name().into(),
            limit: "contact capacity (u32)",
            required: ncon as u64,
            available: u32::MAX as u64,
        })?;
        ctx.queue.write_buffer(&self.dims_buffer, 0, bytemuck::bytes_of(&self.dims));
        Ok(())
    }

    /// Sets every world's parameters (one entry per world).
    pub fn set_params(&self, ctx: &GpuContext, params: &[WorldParams]) -> Result<(), GpuError> {
        let p: Vec<GpuWorldParams> = params.iter().map(GpuWorldParams::from).collect();
        if p.len() != self.world_params.len() {
            return Err(GpuError::Length { what: "world params", expected: self.world_params.len(), got: p.len() });
        }
        self.world_params.write(ctx, &p)
    }

    /// Sets one world's parameters.
    pub fn set_world_params(&self, ctx: &GpuContext, world: usize, params: &WorldParams) -> Result<(), GpuError> {
        self.world_params.write_at(ctx, world, &[GpuWorldParams::from(params)])
    }
}

impl BufferSource for GpuModel {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        Some(match name {
            "dims" => &self.dims_buffer,
            "bodies" => self.bodies.buffer(),
            "joints" => self.joints.buffer(),
            "dofs" => self.dofs.buffer(),
            "geoms" => self.geoms.buffer(),
            "sites" => self.sites.buffer(),
            "world_params" => self.world_params.buffer(),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_are_multiples_of_16() {
        // WGSL rounds struct sizes up to their 16-byte alignment.
        for (name, size, _) in struct_layouts() {
            assert_eq!(size % 16, 0, "{name}");
        }
    }
}
