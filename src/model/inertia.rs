//! Mass properties of geoms from a uniform density, with MuJoCo's formulas
//! (so models that rely on `inertiafromgeom` get MuJoCo's masses), and the
//! combination of several geoms into one body inertia.

use super::{GeomKind, mesh::ConvexMesh};
use crate::math::{Mat3, Quat, Vec3};
use std::f64::consts::PI;

/// Mass properties of a solid of density 1 kg/m³ in its own frame: volume
/// (m³), centre of mass (m) and the inertia tensor about the centre of mass
/// (kg·m², per unit density).
#[derive(Clone, Copy, Debug)]
pub struct UnitMassProps {
    /// Volume (m³).
    pub volume: f64,
    /// Centre of mass in the geom frame (m).
    pub com: Vec3<f64>,
    /// Inertia about the centre of mass, geom axes, for unit density.
    pub inertia: Mat3<f64>,
}

/// Mass properties of a geom at unit density. Planes have none (`None`).
pub fn geom_unit_mass_props(kind: GeomKind, size: [f64; 3], mesh: Option<&ConvexMesh>) -> Option<UnitMassProps> {
    let [a, b, c] = size;
    let diag = |v: f64, i: [f64; 3]| UnitMassProps {
        volume: v,
        com: Vec3::zero(),
        inertia: Mat3::diag(Vec3::new(i[0], i[1], i[2])),
    };
    match kind {
        GeomKind::Plane => None,
        GeomKind::Sphere => {
            let v = 4.0 / 3.0 * PI * a * a * a;
            let i = v * 2.0 * a * a / 5.0;
            Some(diag(v, [i, i, i]))
        }
        GeomKind::Capsule => {
            // Cylinder of height 2b plus a sphere split into two end caps.
            let h = 2.0 * b;
            let vs = 4.0 / 3.0 * PI * a * a * a;
            let vc = PI * a * a * h;
            let ixx = vc * (3.0 * a * a + h * h) / 12.0 + vs * (2.0 * a * a / 5.0 + h * h / 4.0 + 3.0 * h * a / 8.0);
            let izz = vc * a * a / 2.0 + vs * 2.0 * a * a / 5.0;
            Some(diag(vs + vc, [ixx, ixx, izz]))
        }
        GeomKind::Cylinder => {
            let h = 2.0 * b;
            let v = PI * a * a * h;
            let ixx = v * (3.0 * a * a + h * h) / 12.0;
            Some(diag(v, [ixx, ixx, v * a * a / 2.0]))
        }
        // MuJoCo gives a height field the mass properties of a box of its geom size.
        GeomKind::Box | GeomKind::Hfield => {
            let v = 8.0 * a * b * c;
            let (x, y, z) = (2.0 * a, 2.0 * b, 2.0 * c);
            Some(diag(v, [v * (y * y + z * z) / 12.0, v * (x * x + z * z) / 12.0, v * (x * x + y * y) / 12.0]))
        }
        GeomKind::Ellipsoid => {
            let v = 4.0 / 3.0 * PI * a * b * c;
            Some(diag(v, [v * (b * b + c * c) / 5.0, v * (a * a + c * c) / 5.0, v * (a * a + b * b) / 5.0]))
        }
        GeomKind::Mesh => mesh.map(|m| m.unit_mass_props()),
    }
}

/// Accumulates point-mass-free solids into one rigid-body inertia in a
/// common frame, then diagonalises it (MuJoCo's `ipos`, `iquat`, `inertia`).
#[derive(Clone, Copy, Debug, Default)]
pub struct InertiaAccumulator {
    mass: f64,
    /// Σ m_i c_i (kg·m).
    first: Vec3<f64>,
    /// Σ (I_i rotated + m_i (|c_i|² 1 − c_i c_iᵀ)) about the frame origin.
    second: Mat3<f64>,
}

impl InertiaAccumulator {
    /// Empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a solid of mass `mass` (kg) whose centre of mass is at `com`
    /// (m, in the common frame) with inertia `ic` about its centre of mass
    /// expressed in a frame rotated by `rot` relative to the common frame.
    pub fn add(&mut self, mass: f64, com: Vec3<f64>, rot: Quat<f64>, ic: Mat3<f64>) {
        let r = rot.to_mat3();
        let i_rot = r * ic * r.transpose();
        let shift = (Mat3::identity().scale(com.norm2()) - Mat3::outer(com, com)).scale(mass);
        self.mass += mass;
        self.first += com * mass;
        self.second = self.second + i_rot + shift;
    }
    /// Total mass (kg).
    pub fn mass(&self) -> f64 {
        self.mass
    }
    /// Centre of mass, principal-axes orientation and principal moments.
    /// Returns `None` when the mass is zero.
    pub fn principal(&self) -> Option<(Vec3<f64>, Quat<f64>, Vec3<f64>)> {
        if !(self.mass > 0.0) {
            return None;
        }
        let c = self.first * (1.0 / self.mass);
        // Back to the centre of mass.
        let ic = self.second - (Mat3::identity().scale(c.norm2()) - Mat3::outer(c, c)).scale(self.mass);
        let (vals, vecs) = ic.sym_eigen();
        // MuJoCo orders principal moments descending (largest first) in its
        // eigen-decomposition; the axis order does not change the dynamics.
        let vecs = Mat3::from_cols(vecs.col(2), vecs.col(1), vecs.col(0));
        let vecs = if vecs.det() < 0.0 { Mat3::from_cols(vecs.col(0), vecs.col(1), -vecs.col(2)) } else { vecs };
        Some((c, Quat::from_mat3(&vecs), Vec3::new(vals.z, vals.y, vals.x)))
    }
}
