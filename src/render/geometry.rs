//! Triangle meshes of the visible geoms, in their geom frames: what the
//! rasterizer draws, one vertex buffer for the whole model.

use crate::model::{GeomKind, Model};
use bytemuck::{Pod, Zeroable};
use std::f64::consts::PI;

/// Slices around the axis of round shapes (MuJoCo's default `quality numslices`).
pub const SLICES: usize = 28;
/// Stacks from pole to pole of spheres and ellipsoids (MuJoCo's `numstacks`).
pub const STACKS: usize = 16;

/// How finely round shapes are tessellated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detail {
    /// Slices around the axis (≥ 3).
    pub slices: usize,
    /// Stacks from pole to pole of spheres and ellipsoids (even, ≥ 2:
    /// a capsule's caps take half each).
    pub stacks: usize,
}

impl Detail {
    /// MuJoCo's default ([`SLICES`], [`STACKS`]).
    pub const MUJOCO: Detail = Detail { slices: SLICES, stacks: STACKS };

    /// Checks the bounds above.
    pub fn check(self) -> Result<Self, String> {
        if self.slices < 3 || self.stacks < 2 || !self.stacks.is_multiple_of(2) {
            return Err(format!(
                "tessellation needs ≥ 3 slices and an even number ≥ 2 of stacks, got {} slices, {} stacks",
                self.slices, self.stacks
            ));
        }
        Ok(self)
    }
}

/// One vertex of the model's triangle list (WGSL `VertexIn` in `kernels/render.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Vertex {
    /// Position in the geom frame (m).
    pub pos: [f32; 3],
    /// Outward unit normal in the geom frame.
    pub normal: [f32; 3],
    /// Geom index.
    pub geom: u32,
}

/// Triangles of one geom under construction (geom frame, f64).
struct Tris {
    geom: u32,
    out: Vec<Vertex>,
    detail: Detail,
}

impl Tris {
    fn tri(&mut self, p: [[f64; 3]; 3], n: [[f64; 3]; 3]) {
        for k in 0..3 {
            self.out.push(Vertex {
                pos: p[k].map(|x| x as f32),
                normal: unit(n[k]).map(|x| x as f32),
                geom: self.geom,
            });
        }
    }
    /// A quad a b c d (counter-clockwise) with per-vertex normals.
    fn quad(&mut self, p: [[f64; 3]; 4], n: [[f64; 3]; 4]) {
        self.tri([p[0], p[1], p[2]], [n[0], n[1], n[2]]);
        self.tri([p[0], p[2], p[3]], [n[0], n[2], n[3]]);
    }
}

fn unit(v: [f64; 3]) -> [f64; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if n > 0.0 { [v[0] / n, v[1] / n, v[2] / n] } else { [0.0, 0.0, 1.0] }
}

/// A point of the unit sphere at longitude `i` of `d.slices`, latitude `j` of `d.stacks` (j = 0: south pole).
fn sphere_point(d: Detail, i: usize, j: usize) -> [f64; 3] {
    let (a, b) = (2.0 * PI * i as f64 / d.slices as f64, PI * (j as f64 / d.stacks as f64 - 0.5));
    [b.cos() * a.cos(), b.cos() * a.sin(), b.sin()]
}

/// An ellipsoid of semi-axes `r` centred at `c` (latitude band `j0..j1` of the unit sphere).
fn ellipsoid(t: &mut Tris, r: [f64; 3], c: [f64; 3], j0: usize, j1: usize) {
    let d = t.detail;
    let at = |i, j| {
        let u = sphere_point(d, i, j);
        ([c[0] + r[0] * u[0], c[1] + r[1] * u[1], c[2] + r[2] * u[2]], [u[0] / r[0], u[1] / r[1], u[2] / r[2]])
    };
    for j in j0..j1 {
        for i in 0..d.slices {
            let (a, na) = at(i, j);
            let (b, nb) = at(i + 1, j);
            let (cc, nc) = at(i + 1, j + 1);
            let (d, nd) = at(i, j + 1);
            t.quad([a, b, cc, d], [na, nb, nc, nd]);
        }
    }
}

/// A cylinder side of radius `r` from z = −h to h (without caps).
fn tube(t: &mut Tris, r: f64, h: f64) {
    let slices = t.detail.slices;
    for i in 0..slices {
        let a0 = 2.0 * PI * i as f64 / slices as f64;
        let a1 = 2.0 * PI * (i + 1) as f64 / slices as f64;
        let (n0, n1) = ([a0.cos(), a0.sin(), 0.0], [a1.cos(), a1.sin(), 0.0]);
        let p = |n: [f64; 3], z: f64| [r * n[0], r * n[1], z];
        t.quad([p(n0, -h), p(n1, -h), p(n1, h), p(n0, h)], [n0, n1, n1, n0]);
    }
}

/// A disc of radius `r` at height `z` facing `sign` (±1) along z.
fn disc(t: &mut Tris, r: f64, z: f64, sign: f64) {
    let n = [0.0, 0.0, sign];
    let slices = t.detail.slices;
    for i in 0..slices {
        let a0 = 2.0 * PI * i as f64 / slices as f64;
        let a1 = 2.0 * PI * (i + 1) as f64 / slices as f64;
        let p = |a: f64| [r * a.cos(), r * a.sin(), z];
        t.tri([[0.0, 0.0, z], p(a0), p(a1)], [n; 3]);
    }
}

/// Half-size of an infinite plane as drawn (m): beyond any far clipping distance in use.
pub const INFINITE_PLANE: f64 = 1.0e4;

/// The triangles of geom `g` in its frame (empty for invisible geoms), at MuJoCo's detail.
pub fn geom_triangles(model: &Model, g: usize) -> Vec<Vertex> {
    geom_triangles_with(model, g, Detail::MUJOCO)
}

/// The triangles of geom `g` in its frame with round shapes at `detail`.
pub fn geom_triangles_with(model: &Model, g: usize, detail: Detail) -> Vec<Vertex> {
    let geom = &model.geoms[g];
    let mut t = Tris { geom: g as u32, out: vec![], detail };
    let stacks = detail.stacks;
    let [a, b, c] = geom.size;
    match geom.kind {
        GeomKind::Plane => {
            let sx = if a > 0.0 { a } else { INFINITE_PLANE };
            let sy = if b > 0.0 { b } else { INFINITE_PLANE };
            let n = [0.0, 0.0, 1.0];
            t.quad([[-sx, -sy, 0.0], [sx, -sy, 0.0], [sx, sy, 0.0], [-sx, sy, 0.0]], [n; 4]);
        }
        GeomKind::Sphere => ellipsoid(&mut t, [a; 3], [0.0; 3], 0, stacks),
        GeomKind::Ellipsoid => ellipsoid(&mut t, [a, b, c], [0.0; 3], 0, stacks),
        GeomKind::Capsule => {
            tube(&mut t, a, b);
            ellipsoid(&mut t, [a; 3], [0.0, 0.0, -b], 0, stacks / 2);
            ellipsoid(&mut t, [a; 3], [0.0, 0.0, b], stacks / 2, stacks);
        }
        GeomKind::Cylinder => {
            tube(&mut t, a, b);
            disc(&mut t, a, b, 1.0);
            disc(&mut t, a, -b, -1.0);
        }
        GeomKind::Box => {
            let h = [a, b, c];
            for axis in 0..3 {
                for sign in [-1.0, 1.0] {
                    let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
                    let corner = |su: f64, sv: f64| {
                        let mut p = [0.0; 3];
                        p[axis] = sign * h[axis];
                        p[u] = su * h[u];
                        p[v] = sv * h[v];
                        p
                    };
                    let mut n = [0.0; 3];
                    n[axis] = sign;
                    t.quad([corner(-1.0, -1.0), corner(1.0, -1.0), corner(1.0, 1.0), corner(-1.0, 1.0)], [n; 4]);
                }
            }
        }
        GeomKind::Mesh => {
            if let Some(mesh) = geom.mesh.and_then(|m| model.meshes.get(m)) {
                for f in &mesh.faces {
                    let p = f.map(|i| mesh.vertices[i as usize]);
                    let e1 = [p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]];
                    let e2 = [p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]];
                    let n =
                        [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
                    t.tri(p, [n; 3]);
                }
            }
        }
        GeomKind::Hfield => {
            if let Some(f) = geom.hfield.and_then(|h| model.hfields.get(h)) {
                let (nr, nc) = (f.nrow, f.ncol);
                let at = |r: usize, col: usize| {
                    [
                        (2.0 * col as f64 / (nc - 1).max(1) as f64 - 1.0) * f.size[0],
                        (2.0 * r as f64 / (nr - 1).max(1) as f64 - 1.0) * f.size[1],
                        f.data[r * nc + col] as f64 * f.size[2],
                    ]
                };
                for r in 0..nr.saturating_sub(1) {
                    for col in 0..nc.saturating_sub(1) {
                        let p = [at(r, col), at(r, col + 1), at(r + 1, col + 1), at(r + 1, col)];
                        for tri in [[p[0], p[1], p[2]], [p[0], p[2], p[3]]] {
                            let e1 = [tri[1][0] - tri[0][0], tri[1][1] - tri[0][1], tri[1][2] - tri[0][2]];
                            let e2 = [tri[2][0] - tri[0][0], tri[2][1] - tri[0][1], tri[2][2] - tri[0][2]];
                            let n = [
                                e1[1] * e2[2] - e1[2] * e2[1],
                                e1[2] * e2[0] - e1[0] * e2[2],
                                e1[0] * e2[1] - e1[1] * e2[0],
                            ];
                            t.tri(tri, [n; 3]);
                        }
                    }
                }
            }
        }
    }
    t.out
}

/// The triangle list of every geom that MuJoCo's default view shows
/// ([`Model::geom_visible`]), geom after geom, at MuJoCo's detail.
pub fn model_triangles(model: &Model) -> Vec<Vertex> {
    model_triangles_with(model, Detail::MUJOCO)
}

/// [`model_triangles`] with round shapes at `detail`.
pub fn model_triangles_with(model: &Model, detail: Detail) -> Vec<Vertex> {
    (0..model.geoms.len())
        .filter(|&g| model.geom_visible(g))
        .flat_map(|g| geom_triangles_with(model, g, detail))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GeomSpec, ModelBuilder, WORLD};

    /// Every vertex of a primitive lies on its surface and its normal points outward.
    #[test]
    fn primitives_lie_on_their_surfaces() {
        let mut b = ModelBuilder::new("shapes");
        let kinds = [
            (GeomKind::Sphere, [0.3, 0.0, 0.0]),
            (GeomKind::Capsule, [0.1, 0.4, 0.0]),
            (GeomKind::Cylinder, [0.2, 0.3, 0.0]),
            (GeomKind::Box, [0.1, 0.2, 0.3]),
            (GeomKind::Ellipsoid, [0.1, 0.2, 0.3]),
        ];
        for (i, (k, s)) in kinds.iter().enumerate() {
            b.add_geom(GeomSpec::new(&format!("g{i}"), *k, *s, WORLD));
        }
        let m = b.build().unwrap();
        for (g, (k, [a, bb, c])) in kinds.iter().enumerate() {
            let tris = geom_triangles(&m, g);
            assert!(!tris.is_empty() && tris.len().is_multiple_of(3));
            for v in &tris {
                let p = v.pos.map(|x| x as f64);
                let f = match k {
                    GeomKind::Sphere => (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt() / a - 1.0,
                    GeomKind::Ellipsoid => ((p[0] / a).powi(2) + (p[1] / bb).powi(2) + (p[2] / c).powi(2)).sqrt() - 1.0,
                    GeomKind::Capsule => {
                        let z = p[2].clamp(-bb, *bb);
                        (p[0] * p[0] + p[1] * p[1] + (p[2] - z).powi(2)).sqrt() / a - 1.0
                    }
                    GeomKind::Cylinder => {
                        let r = (p[0] * p[0] + p[1] * p[1]).sqrt();
                        if (p[2].abs() - bb).abs() < 1e-6 && r <= a + 1e-6 { 0.0 } else { r / a - 1.0 }
                    }
                    _ => ((p[0].abs() / a).max(p[1].abs() / bb).max(p[2].abs() / c)) - 1.0,
                };
                assert!(f.abs() < 1e-5, "{k:?} vertex {p:?} off the surface by {f}");
                let n = v.normal.map(|x| x as f64);
                let outward = match k {
                    GeomKind::Box | GeomKind::Cylinder => n[0] * p[0] + n[1] * p[1] + n[2] * p[2] >= -1e-6,
                    _ => n[0] * p[0] + n[1] * p[1] + n[2] * p[2] > -1e-6,
                };
                assert!(outward, "{k:?} normal {n:?} points inward at {p:?}");
            }
        }
    }
}
