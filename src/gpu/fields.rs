//! The per-world state on the device: [`Field`] (one `f32` array per
//! `Data<f32>` field), its [`Layout`], and [`GpuData`], the buffers holding
//! them. Data layer: knows no stage.
//!
//! Per-world arrays are flat `f32`; host reads and writes are world first:
//! field `f` of world `w` is the block `[w · n · width, (w + 1) · n · width)`
//! with `(n, width)` = [`Field::shape`], laid out like the matching
//! `Data<f32>` field (vectors xyz, quaternions wxyz, matrices row-major,
//! spatial vectors [ang; lin], spatial inertias [m, h, I row-major]);
//! [`Field::from_data`] writes that layout from a CPU `Data`. On the device
//! the [`Layout`] decides where each world's items go.

use super::buffers::{BufferSource, Readback, StorageBuffer, uniform_buffer};
use super::context::GpuContext;
use super::error::GpuError;
use crate::dynamics::Data;
use crate::math::{Mat3, Motion, Real, SpatialInertia, Vec3};
use crate::model::Model;
use bytemuck::{Pod, Zeroable};

/// What a per-world field has one element per (its `(n, width)` shape's `n`),
/// and the WGSL function that indexes its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Items {
    /// Position coordinates (nq; `q_at`).
    Coordinates,
    /// Degrees of freedom (nv; `dof_at`).
    Dofs,
    /// The world itself (1; `world_at`).
    World,
    /// Bodies, the world body included (nbody; `body_at`).
    Bodies,
    /// Joints (njnt; `jnt_at`).
    Joints,
    /// Geoms (ngeom; `geom_at`).
    Geoms,
    /// Sites (nsite; `site_at`).
    Sites,
    /// Entries of a dense nv × nv matrix, row-major (`mass_at`).
    DofPairs,
}

impl Items {
    /// Number of items in one world of `model`.
    pub fn count(self, model: &Model) -> usize {
        match self {
            Items::Coordinates => model.nq,
            Items::Dofs => model.nv,
            Items::World => 1,
            Items::Bodies => model.bodies.len(),
            Items::Joints => model.joints.len(),
            Items::Geoms => model.geoms.len(),
            Items::Sites => model.sites.len(),
            Items::DofPairs => model.nv * model.nv,
        }
    }

    /// The WGSL expression of the number of items in one world.
    pub fn wgsl_count(self) -> &'static str {
        match self {
            Items::Coordinates => "dims.nq",
            Items::Dofs => "dims.nv",
            Items::World => "1u",
            Items::Bodies => "dims.nbody",
            Items::Joints => "dims.njnt",
            Items::Geoms => "dims.ngeom",
            Items::Sites => "dims.nsite",
            Items::DofPairs => "dims.nv * dims.nv",
        }
    }
}

/// Where the per-world arrays put world w's item k (a [`GpuData`] choice,
/// passed to the kernels in the `field_layout` uniform, so one compiled
/// kernel serves both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// World first: each world's block laid out like its `Data<f32>` field
    /// (element (w, k) at w·n + k, components interleaved). A thread per
    /// world reading one item makes a warp touch 32 separate blocks.
    WorldMajor,
    /// Item first, world last, one plane per component (component c of
    /// element (w, k) at (c·n + k)·nworld + w): a warp of 32 consecutive
    /// worlds reading one component of one item reads 128 contiguous bytes
    /// (one transaction). Also the ICF and CENIC per-world arrays put the
    /// world index last.
    #[default]
    FieldMajor,
}

/// Where element `item` (of `n` per world), component `c` (of `width`), of
/// world `w` (of `nworld`) sits in a field's region, in floats; the host twin
/// of the generated WGSL `*_ix` functions.
pub fn element_index(layout: Layout, nworld: usize, n: usize, width: usize, w: usize, item: usize, c: usize) -> usize {
    match layout {
        Layout::WorldMajor => (w * n + item) * width + c,
        Layout::FieldMajor => (c * n + item) * nworld + w,
    }
}

macro_rules! fields {
    ($($(#[doc = $doc:literal])* $v:ident: $name:literal, $wgsl:literal, $width:literal, $items:ident;)*) => {
        /// A per-world `f32` array: state, kinematics and dynamics outputs,
        /// scratch. Declared once here (name, WGSL element type, width,
        /// items): the WGSL accessors (`<name>_get`, `<name>_set`,
        /// `<name>_ix`) and the field offsets of `world_data` are generated
        /// from this list ([`Field::wgsl_declarations`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Field {
            $($(#[doc = $doc])* $v,)*
        }

        impl Field {
            /// Every field, in storage order.
            pub const ALL: [Field; [$(Field::$v),*].len()] = [$(Field::$v),*];

            /// The WGSL name (= the `Data` field name).
            pub fn name(self) -> &'static str {
                match self {
                    $(Field::$v => $name,)*
                }
            }

            /// The WGSL type of one element (`f32`, `P3`, `P9`, `vec4f`, `PMotion`, `PInertia`).
            pub fn wgsl_type(self) -> &'static str {
                match self {
                    $(Field::$v => $wgsl,)*
                }
            }

            /// Floats per element.
            pub fn width(self) -> usize {
                match self {
                    $(Field::$v => $width,)*
                }
            }

            /// What the elements are per world.
            pub fn items(self) -> Items {
                match self {
                    $(Field::$v => Items::$items,)*
                }
            }
        }
    };
}

fields! {
    /// Positions (nq).
    Q: "q", "f32", 1, Coordinates;
    /// Velocities (nv).
    V: "v", "f32", 1, Dofs;
    /// Step size of each world (1; s).
    H: "h", "f32", 1, World;
    /// Body frame origins (nbody × 3; m).
    Xpos: "xpos", "P3", 3, Bodies;
    /// Body orientations (nbody × 4; w, x, y, z).
    Xquat: "xquat", "vec4f", 4, Bodies;
    /// Body rotation matrices (nbody × 9, row-major).
    Xmat: "xmat", "P9", 9, Bodies;
    /// Body centres of mass (nbody × 3; m).
    Xipos: "xipos", "P3", 3, Bodies;
    /// Joint anchors (njnt × 3; m).
    Xanchor: "xanchor", "P3", 3, Joints;
    /// Joint axes (njnt × 3).
    Xaxis: "xaxis", "P3", 3, Joints;
    /// Geom positions (ngeom × 3; m).
    GeomXpos: "geom_xpos", "P3", 3, Geoms;
    /// Geom rotation matrices (ngeom × 9, row-major).
    GeomXmat: "geom_xmat", "P9", 9, Geoms;
    /// Site positions (nsite × 3; m).
    SiteXpos: "site_xpos", "P3", 3, Sites;
    /// Site orientations (nsite × 4; w, x, y, z).
    SiteXquat: "site_xquat", "vec4f", 4, Sites;
    /// Reference point of each body's spatial quantities (nbody × 3; m).
    BodyRef: "body_ref", "P3", 3, Bodies;
    /// Spatial inertias about `body_ref` (nbody × 13: kg, kg·m, kg·m² row-major).
    Cinert: "cinert", "PInertia", 13, Bodies;
    /// Motion subspaces (nv × 6: ang, lin).
    Cdof: "cdof", "PMotion", 6, Dofs;
    /// Body spatial velocities (nbody × 6: rad/s, m/s).
    Cvel: "cvel", "PMotion", 6, Bodies;
    /// Time derivatives of `cdof` (nv × 6).
    CdofDot: "cdof_dot", "PMotion", 6, Dofs;
    /// Mass matrix with armature (nv × nv, row-major; kg·m² / kg).
    Mass: "mass", "f32", 1, DofPairs;
    /// Bias forces (nv; N·m or N).
    Bias: "bias", "f32", 1, Dofs;
    /// Passive spring forces (nv; N·m or N).
    Passive: "passive", "f32", 1, Dofs;
    /// Scratch: composite inertias (nbody × 13).
    Crb: "crb", "PInertia", 13, Bodies;
    /// Scratch: bias-recursion accelerations (nbody × 6).
    Cacc: "cacc", "PMotion", 6, Bodies;
    /// Scratch: bias-recursion forces (nbody × 6).
    Cfrc: "cfrc", "PMotion", 6, Bodies;
}

impl Field {
    /// Inputs the host sets (everything else is computed by kernels).
    pub fn is_input(self) -> bool {
        matches!(self, Field::Q | Field::V | Field::H)
    }

    /// (items, floats per item) of one world.
    pub fn shape(self, model: &Model) -> (usize, usize) {
        (self.items().count(model), self.width())
    }

    /// Whether the field lives in `world_data` (all but [`Field::Mass`],
    /// which keeps a buffer of its own: the dense nv × nv block would
    /// dominate the shared one, and the solve reads it).
    pub fn in_world_data(self) -> bool {
        self != Field::Mass
    }

    /// Floats per world.
    pub fn per_world(self, model: &Model) -> usize {
        let (n, w) = self.shape(model);
        n * w
    }

    /// This field of a CPU `Data` in the GPU layout of one world (`None` for
    /// [`Field::H`], which `Data` does not hold).
    pub fn from_data<T: Real>(self, data: &Data<T>) -> Option<Vec<T>> {
        fn v3s<T: Real>(a: &[Vec3<T>]) -> Vec<T> {
            a.iter().flat_map(|v| v.to_array()).collect()
        }
        fn m3s<T: Real>(a: &[Mat3<T>]) -> Vec<T> {
            a.iter().flat_map(|m| m.m.into_iter().flatten()).collect()
        }
        fn motions<T: Real>(a: &[Motion<T>]) -> Vec<T> {
            a.iter().flat_map(|m| m.ang.to_array().into_iter().chain(m.lin.to_array())).collect()
        }
        fn forces<T: Real>(a: &[crate::math::Force<T>]) -> Vec<T> {
            a.iter().flat_map(|m| m.ang.to_array().into_iter().chain(m.lin.to_array())).collect()
        }
        fn inertias<T: Real>(a: &[SpatialInertia<T>]) -> Vec<T> {
            a.iter()
                .flat_map(|s| std::iter::once(s.m).chain(s.h.to_array()).chain(s.i.m.into_iter().flatten()))
                .collect()
        }
        Some(match self {
            Field::Q => data.q.clone(),
            Field::V => data.v.clone(),
            Field::H => return None,
            Field::Xpos => v3s(&data.xpos),
            Field::Xquat => data.xquat.iter().flat_map(|q| q.to_array()).collect(),
            Field::Xmat => m3s(&data.xmat),
            Field::Xipos => v3s(&data.xipos),
            Field::Xanchor => v3s(&data.xanchor),
            Field::Xaxis => v3s(&data.xaxis),
            Field::GeomXpos => v3s(&data.geom_xpos),
            Field::GeomXmat => m3s(&data.geom_xmat),
            Field::SiteXpos => v3s(&data.site_xpos),
            Field::SiteXquat => data.site_xquat.iter().flat_map(|q| q.to_array()).collect(),
            Field::BodyRef => v3s(&data.body_ref),
            Field::Cinert => inertias(&data.cinert),
            Field::Cdof => motions(&data.cdof),
            Field::Cvel => motions(&data.cvel),
            Field::CdofDot => motions(&data.cdof_dot),
            Field::Mass => data.mass.clone(),
            Field::Bias => data.bias.clone(),
            Field::Passive => data.passive.clone(),
            Field::Crb => inertias(&data.crb),
            Field::Cacc => motions(&data.cacc),
            Field::Cfrc => forces(&data.cfrc),
        })
    }
}

/// The component paths of a WGSL element type, in storage order, and the
/// constructor of an element from its components `e[k]`.
/// A WGSL element type's component paths and the constructor from its components.
type Components = (&'static [&'static str], fn(&[String]) -> String);

fn wgsl_components(ty: &str) -> Components {
    const P3: [&str; 3] = ["x", "y", "z"];
    const V4: [&str; 4] = ["x", "y", "z", "w"];
    const P9: [&str; 9] = ["r0.x", "r0.y", "r0.z", "r1.x", "r1.y", "r1.z", "r2.x", "r2.y", "r2.z"];
    const PM: [&str; 6] = ["ang.x", "ang.y", "ang.z", "lin.x", "lin.y", "lin.z"];
    const PI: [&str; 13] = [
        "m", "h.x", "h.y", "h.z", "i.r0.x", "i.r0.y", "i.r0.z", "i.r1.x", "i.r1.y", "i.r1.z", "i.r2.x", "i.r2.y",
        "i.r2.z",
    ];
    fn p3(e: &[String]) -> String {
        format!("P3({}, {}, {})", e[0], e[1], e[2])
    }
    fn p9(e: &[String]) -> String {
        format!("P9({}, {}, {})", p3(&e[0..3]), p3(&e[3..6]), p3(&e[6..9]))
    }
    match ty {
        "f32" => (&[""], |e| e[0].clone()),
        "P3" => (&P3, p3),
        "vec4f" => (&V4, |e| format!("vec4f({}, {}, {}, {})", e[0], e[1], e[2], e[3])),
        "P9" => (&P9, p9),
        "PMotion" => (&PM, |e| format!("PMotion({}, {})", p3(&e[0..3]), p3(&e[3..6]))),
        "PInertia" => (&PI, |e| format!("PInertia({}, {}, {})", e[0], p3(&e[1..4]), p9(&e[4..13]))),
        other => panic!("no WGSL element type {other}"),
    }
}

impl Field {
    /// The fields stored in `world_data`, in order.
    pub fn in_world_data_order() -> impl Iterator<Item = Field> {
        Field::ALL.into_iter().filter(|f| f.in_world_data())
    }

    /// The generated WGSL of the per-world fields, composed after
    /// `kernels/data.wgsl` (which declares the `field_layout` uniform,
    /// `world_data`, `mass` and the element index functions): the number of
    /// `vec4u` of field offsets, and per field in `world_data` its index
    /// (`<name>_ix(element, component)`), getter and setter.
    pub fn wgsl_declarations() -> String {
        let nfield = Field::in_world_data_order().count();
        let mut out = format!(
            "// Per-world fields (generated from src/gpu/fields.rs Field).\n\n\
             /// vec4u entries of FieldLayout.offsets (one u32 per field in world_data).\n\
             const FIELD_OFFSET_VEC4S: u32 = {}u;\n",
            nfield.div_ceil(4)
        );
        for (k, f) in Field::in_world_data_order().enumerate() {
            let (name, ty, width) = (f.name(), f.wgsl_type(), f.width());
            let upper = name.to_uppercase();
            let (paths, make) = wgsl_components(ty);
            // Scalar fields index elements only (compound assignments go through world_data[<name>_ix(i)]).
            let ix = |c: usize| if width == 1 { format!("{name}_ix(i)") } else { format!("{name}_ix(i, {c}u)") };
            let e: Vec<String> = (0..width).map(|c| format!("world_data[{}]", ix(c))).collect();
            let sets: String = paths
                .iter()
                .enumerate()
                .map(|(c, path)| {
                    let dot = if path.is_empty() { String::new() } else { format!(".{path}") };
                    format!("    world_data[{}] = x{dot};\n", ix(c))
                })
                .collect();
            let ix_fn = if width == 1 {
                format!(
                    "fn {name}_ix(i: u32) -> u32 {{\n    return field_ix(F_{upper}, {}, 1u, i, 0u);\n}}",
                    f.items().wgsl_count()
                )
            } else {
                format!(
                    "fn {name}_ix(i: u32, c: u32) -> u32 {{\n    return field_ix(F_{upper}, {}, {width}u, i, c);\n}}",
                    f.items().wgsl_count()
                )
            };
            out += &format!(
                "
const F_{upper}: u32 = {k}u;
{ix_fn}
fn {name}_get(i: u32) -> {ty} {{
    return {};
}}
fn {name}_set(i: u32, x: {ty}) {{
{sets}}}
",
                make(&e)
            );
        }
        out
    }
}

/// The `field_layout` uniform (WGSL `FieldLayout` in `kernels/data.wgsl`;
/// `offsets` holds `FIELD_OFFSET_VEC4S` vec4u).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct GpuFieldLayout {
    field_major: u32,
    _pad: [u32; 3],
    offsets: [u32; 24],
}

/// Every [`Field`] of `nworld` worlds: one `world_data` buffer holding all
/// but [`Field::Mass`] (a region each, in [`Field::in_world_data_order`]) in
/// the chosen [`Layout`], `mass`, and the `field_layout` uniform that tells
/// the kernels where things are. Host reads and writes are world first
/// whatever the layout.
pub struct GpuData {
    world_data: StorageBuffer<f32>,
    mass: StorageBuffer<f32>,
    layout_buffer: wgpu::Buffer,
    layout: Layout,
    /// Per field (Field::ALL order): offset in its buffer, elements per world, width.
    regions: Vec<(usize, usize, usize)>,
    nworld: usize,
}

impl std::fmt::Debug for GpuData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuData(nworld = {}, {:?})", self.nworld, self.layout)
    }
}

impl GpuData {
    /// WGSL names of the buffers this provides.
    pub const BUFFER_NAMES: [&'static str; 3] = ["world_data", "mass", "field_layout"];

    /// Zeroed buffers for `nworld` worlds of `model` in the default [`Layout`].
    pub fn new(ctx: &GpuContext, model: &Model, nworld: usize) -> Result<Self, GpuError> {
        Self::with_layout(ctx, model, nworld, Layout::default())
    }

    /// Zeroed buffers for `nworld` worlds of `model` in `layout`.
    pub fn with_layout(ctx: &GpuContext, model: &Model, nworld: usize, layout: Layout) -> Result<Self, GpuError> {
        let mut regions = Vec::with_capacity(Field::ALL.len());
        let mut offsets = [0u32; 24];
        let mut total = 0usize;
        let mut k = 0;
        for f in Field::ALL {
            let (n, width) = f.shape(model);
            if f.in_world_data() {
                regions.push((total, n, width));
                offsets[k] = u32::try_from(total).map_err(|_| GpuError::Limits {
                    adapter: ctx.adapter_name().into(),
                    limit: "world_data offsets (u32)",
                    required: total as u64,
                    available: u32::MAX as u64,
                })?;
                k += 1;
                // Regions start on 16-byte boundaries.
                total += (nworld * n * width).next_multiple_of(4);
            } else {
                regions.push((0, n, width));
            }
        }
        let uniform = GpuFieldLayout { field_major: (layout == Layout::FieldMajor) as u32, _pad: [0; 3], offsets };
        let layout_buffer = uniform_buffer(ctx, "field_layout", &uniform);
        Ok(Self {
            world_data: StorageBuffer::new(ctx, "world_data", total)?,
            mass: StorageBuffer::new(ctx, "mass", nworld * Field::Mass.per_world(model))?,
            layout_buffer,
            layout,
            regions,
            nworld,
        })
    }

    /// The layout of the per-world arrays.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    fn region(&self, field: Field) -> (&StorageBuffer<f32>, usize, usize, usize) {
        let (off, n, width) = self.regions[Field::ALL.iter().position(|f| *f == field).expect("a field")];
        (if field.in_world_data() { &self.world_data } else { &self.mass }, off, n, width)
    }

    /// Uploads a whole field, world first (nworld × n × width floats).
    pub fn write(&self, ctx: &GpuContext, field: Field, values: &[f32]) -> Result<(), GpuError> {
        let (buf, off, n, width) = self.region(field);
        if values.len() != self.nworld * n * width {
            return Err(GpuError::Length { what: field.name(), expected: self.nworld * n * width, got: values.len() });
        }
        let mut packed = vec![0.0f32; values.len()];
        for w in 0..self.nworld {
            for k in 0..n {
                for c in 0..width {
                    packed[element_index(self.layout, self.nworld, n, width, w, k, c)] =
                        values[(w * n + k) * width + c];
                }
            }
        }
        buf.write_at(ctx, off, &packed)
    }

    /// Uploads world `w`'s block of a field (n × width floats).
    pub fn write_world(&self, ctx: &GpuContext, field: Field, w: usize, values: &[f32]) -> Result<(), GpuError> {
        let (buf, off, n, width) = self.region(field);
        if values.len() != n * width {
            return Err(GpuError::Length { what: field.name(), expected: n * width, got: values.len() });
        }
        match self.layout {
            Layout::WorldMajor => buf.write_at(ctx, off + w * n * width, values),
            Layout::FieldMajor => {
                for (i, x) in values.iter().enumerate() {
                    buf.write_at(
                        ctx,
                        off + element_index(self.layout, self.nworld, n, width, w, i / width, i % width),
                        &[*x],
                    )?;
                }
                Ok(())
            }
        }
    }

    /// Sets every element of a field to `value`.
    pub fn fill(&self, ctx: &GpuContext, field: Field, value: f32) -> Result<(), GpuError> {
        let (buf, off, n, width) = self.region(field);
        buf.write_at(ctx, off, &vec![value; self.nworld * n * width])
    }

    /// Reads a whole field back, world first (waits for submitted work).
    pub fn read(&self, ctx: &GpuContext, readback: &Readback, field: Field) -> Result<Vec<f32>, GpuError> {
        let (buf, off, n, width) = self.region(field);
        let raw = buf.read_range(ctx, readback, off, self.nworld * n * width)?;
        Ok(self.unpack(field, &raw))
    }

    /// A field's region as stored (from [`Self::field_source`]) reordered world first.
    pub fn unpack(&self, field: Field, raw: &[f32]) -> Vec<f32> {
        let (_, _, n, width) = self.region(field);
        if self.layout == Layout::WorldMajor {
            return raw.to_vec();
        }
        let mut out = vec![0.0f32; raw.len()];
        for w in 0..self.nworld {
            for k in 0..n {
                for c in 0..width {
                    out[(w * n + k) * width + c] = raw[element_index(self.layout, self.nworld, n, width, w, k, c)];
                }
            }
        }
        out
    }

    /// The buffer holding `field`, and the byte range of its region (for
    /// reading several fields back in one copy; [`Self::unpack`] reorders).
    pub fn field_source(&self, field: Field) -> (&wgpu::Buffer, u64, u64) {
        let (buf, off, n, width) = self.region(field);
        (buf.buffer(), (off * 4) as u64, (self.nworld * n * width * 4) as u64)
    }

    /// Reads world `w`'s block of a field.
    pub fn read_world(
        &self,
        ctx: &GpuContext,
        readback: &Readback,
        field: Field,
        w: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let (buf, off, n, width) = self.region(field);
        if self.layout == Layout::WorldMajor {
            return buf.read_range(ctx, readback, off + w * n * width, n * width);
        }
        Ok(self.read(ctx, readback, field)?[w * n * width..(w + 1) * n * width].to_vec())
    }

    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.nworld
    }
}

impl BufferSource for GpuData {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        match name {
            "world_data" => Some(self.world_data.buffer()),
            "mass" => Some(self.mass.buffer()),
            "field_layout" => Some(&self.layout_buffer),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_layout_uniform_holds_every_offset() {
        // GpuFieldLayout::offsets is FIELD_OFFSET_VEC4S vec4u in kernels/data.wgsl.
        let n = Field::in_world_data_order().count();
        let held = size_of::<GpuFieldLayout>() / 4 - 4;
        assert_eq!(n.div_ceil(4) * 4, held, "{n} fields in world_data, {held} offsets in the uniform");
        assert!(Field::wgsl_declarations().contains(&format!("const FIELD_OFFSET_VEC4S: u32 = {}u;", n.div_ceil(4))));
    }
}
