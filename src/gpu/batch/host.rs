//! [`HostCollision`]: the contact buffers of a batch filled on the host
//! (for stage tests and comparisons).

use crate::collision::{Contact, Contacts, collide};
use crate::dynamics::Data;
use crate::gpu::buffers::{BufferSource, StorageBuffer};
use crate::gpu::collision::{GpuCollisionPair, PairIndex, pairs_buffer};
use crate::gpu::contact::GpuContact;
use crate::gpu::context::GpuContext;
use crate::gpu::error::GpuError;
use crate::gpu::fields::{Layout, element_index};
use crate::model::Model;
use rayon::prelude::*;

/// The shared contact buffers (`contacts`, `contact_count` in
/// `kernels/data.wgsl`), filled on the host: from given contacts
/// ([`HostCollision::upload`], for stage tests) or by running the CPU
/// collision on the GPU's geom poses ([`HostCollision::collide`]).
pub struct HostCollision {
    ncon: usize,
    layout: Layout,
    contacts: StorageBuffer<GpuContact>,
    count: StorageBuffer<u32>,
    status: StorageBuffer<u32>,
    worlds: Vec<Contacts<f32>>,
    packed: Vec<GpuContact>,
    stored: Vec<GpuContact>,
    counts: Vec<u32>,
    /// Candidate-pair index of each geom pair (ngeom × ngeom).
    pairs: PairIndex,
    /// The candidate pairs (model constants).
    pair_constants: StorageBuffer<GpuCollisionPair>,
}

impl std::fmt::Debug for HostCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCollision").field("nworld", &self.worlds.len()).field("ncon", &self.ncon).finish()
    }
}

impl HostCollision {
    /// WGSL names of the buffers this provides (`collision_status` stays
    /// zero: the CPU collision has no loop budget; `collision_pairs`, the
    /// candidate pairs, carry the soft-contact constants the ICF builder reads).
    pub const BUFFER_NAMES: [&'static str; 4] = ["contacts", "contact_count", "collision_status", "collision_pairs"];

    /// Contact buffers for `nworld` worlds of `model`, `ncon` per world, in the default [`Layout`].
    pub fn new(ctx: &GpuContext, model: &Model, nworld: usize, ncon: usize) -> Result<Self, GpuError> {
        Self::with_layout(ctx, model, nworld, ncon, Layout::default())
    }

    /// [`Self::new`] with the contacts stored in `layout` (that of the kernels' [`GpuData`](crate::gpu::GpuData)).
    pub fn with_layout(
        ctx: &GpuContext,
        model: &Model,
        nworld: usize,
        ncon: usize,
        layout: Layout,
    ) -> Result<Self, GpuError> {
        let dummy = GpuContact::from_contact(&dummy_contact(), 0);
        Ok(Self {
            ncon,
            layout,
            contacts: StorageBuffer::new(ctx, "contacts", nworld * ncon)?,
            count: StorageBuffer::new(ctx, "contact_count", nworld)?,
            status: StorageBuffer::new(ctx, "collision_status", nworld)?,
            worlds: (0..nworld).map(|_| Contacts::with_capacity(model, ncon)).collect(),
            packed: vec![dummy; nworld * ncon],
            stored: vec![dummy; nworld * ncon],
            counts: vec![0; nworld],
            pairs: PairIndex::new(model),
            pair_constants: pairs_buffer(ctx, model)?,
        })
    }

    /// Contact capacity per world.
    pub fn capacity(&self) -> usize {
        self.ncon
    }

    /// Uploads world `world`'s contacts: the first `ncon` of `list`, and
    /// `found` (≥ `list.len()`; more than the capacity is an overflow) as its count.
    pub fn upload(&self, ctx: &GpuContext, world: usize, list: &[Contact<f32>], found: usize) -> Result<(), GpuError> {
        let nworld = self.counts.len();
        for (c, contact) in list.iter().take(self.ncon).enumerate() {
            let at = element_index(self.layout, nworld, self.ncon, 1, world, c, 0);
            let pair = self.pairs.of(contact.geom);
            self.contacts.write_at(ctx, at, &[GpuContact::from_contact(contact, pair)])?;
        }
        self.count.write_at(ctx, world, &[found.max(list.len()) as u32])
    }

    /// Finds every world's contacts on the host from the geom poses
    /// `geom_xpos` (nworld × ngeom × 3) and `geom_xmat` (nworld × ngeom × 9),
    /// with the speculative `skin` (m), for the worlds flagged in `active`,
    /// and uploads them.
    pub fn collide(
        &mut self,
        ctx: &GpuContext,
        model: &Model,
        geom_xpos: &[f32],
        geom_xmat: &[f32],
        active: &[bool],
        skin: f64,
    ) -> Result<(), GpuError> {
        let ng = model.geoms.len();
        let ncon = self.ncon.max(1);
        let pairs = &self.pairs;
        self.worlds
            .par_iter_mut()
            .zip(self.packed.par_chunks_mut(ncon))
            .zip(self.counts.par_iter_mut())
            .enumerate()
            .for_each_init(
                || Data::<f32>::new(model),
                |data, (w, ((contacts, out), count))| {
                    if !active[w] {
                        *count = 0;
                        return;
                    }
                    for g in 0..ng {
                        let p = &geom_xpos[(w * ng + g) * 3..(w * ng + g + 1) * 3];
                        data.geom_xpos[g] = crate::math::Vec3::from_slice(p);
                        let m = &geom_xmat[(w * ng + g) * 9..(w * ng + g + 1) * 9];
                        for r in 0..3 {
                            for c in 0..3 {
                                data.geom_xmat[g].m[r][c] = m[r * 3 + c];
                            }
                        }
                    }
                    contacts.skin = skin;
                    collide(model, data, contacts);
                    for (o, c) in out.iter_mut().zip(&contacts.list) {
                        *o = GpuContact::from_contact(c, pairs.of(c.geom));
                    }
                    *count = (contacts.list.len() + contacts.overflow) as u32;
                },
            );
        if self.ncon > 0 {
            let nworld = self.counts.len();
            for (i, c) in self.packed.iter().enumerate() {
                self.stored[element_index(self.layout, nworld, self.ncon, 1, i / self.ncon, i % self.ncon, 0)] = *c;
            }
            self.contacts.write(ctx, &self.stored)?;
        }
        self.count.write(ctx, &self.counts)
    }
}

fn dummy_contact() -> Contact<f32> {
    Contact {
        geom: [0, 0],
        body: [0, 0],
        pos: crate::math::Vec3::zero(),
        normal: crate::math::Vec3::zero(),
        dist: 0.0,
        feature: [0, 0],
        material: crate::model::Material {
            stiffness: 0.0,
            dissipation: 0.0,
            mu_static: 0.0,
            mu_dynamic: 0.0,
            soft: None,
        },
    }
}

impl BufferSource for HostCollision {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        match name {
            "contacts" => Some(self.contacts.buffer()),
            "contact_count" => Some(self.count.buffer()),
            "collision_status" => Some(self.status.buffer()),
            "collision_pairs" => Some(self.pair_constants.buffer()),
            _ => None,
        }
    }
}
