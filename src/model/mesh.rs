//! Convex meshes: the convex hull of user vertices (computed with parry3d),
//! kept in the geom frame exactly as given (unlike MuJoCo, we do not
//! re-centre meshes at their centre of mass: the geom frame is the frame
//! the vertices were written in).
//!
//! Besides the triangles, the hull keeps its planar faces as convex polygons
//! (coplanar triangles merged), which the narrow phase clips to build
//! face-to-face contact manifolds.

use super::inertia::UnitMassProps;
use crate::math::{Mat3, Vec3};
use parry3d_f64::math::Vector3 as PVec;
use std::collections::HashMap;

/// A planar face of a hull: a convex polygon whose vertex loop is
/// `ConvexMesh::polygon_vertices[start .. start + count]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshPolygon {
    /// Outward unit normal in the geom frame.
    pub normal: [f64; 3],
    /// Plane offset (m): `normal · x = offset` for points x of the face.
    pub offset: f64,
    /// First entry of the vertex loop in `polygon_vertices`.
    pub start: u32,
    /// Number of vertices of the loop (≥ 3).
    pub count: u32,
}

/// A convex polyhedron: hull vertices and outward-oriented triangles.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvexMesh {
    /// Name (may be empty).
    pub name: String,
    /// Hull vertices in the geom frame (m).
    pub vertices: Vec<[f64; 3]>,
    /// Hull triangles (indices into `vertices`), counter-clockwise seen from outside.
    pub faces: Vec<[u32; 3]>,
    /// Planar faces: coplanar adjacent triangles merged into convex polygons.
    pub polygons: Vec<MeshPolygon>,
    /// Vertex loops of `polygons` (indices into `vertices`), concatenated;
    /// each loop is counter-clockwise seen from outside.
    pub polygon_vertices: Vec<u32>,
}

impl ConvexMesh {
    /// Computes the convex hull of `points` (m). Fails when there are fewer
    /// than 4 points, a non-finite coordinate, or the points do not span a volume.
    pub fn from_points(name: &str, points: &[[f64; 3]]) -> Result<Self, String> {
        if points.len() < 4 {
            return Err(format!("mesh needs at least 4 vertices that span a volume, got {}", points.len()));
        }
        if let Some(i) = points.iter().position(|p| !p.iter().all(|x| x.is_finite())) {
            return Err(format!("mesh vertex {i} is not finite: {:?}", points[i]));
        }
        let pts: Vec<PVec> = points.iter().map(|p| PVec::new(p[0], p[1], p[2])).collect();
        let (verts, faces) =
            parry3d_f64::transformation::try_convex_hull(&pts).map_err(|e| format!("convex hull failed: {e:?}"))?;
        let vertices: Vec<[f64; 3]> = verts.iter().map(|v| [v.x, v.y, v.z]).collect();
        let (polygons, polygon_vertices) = merge_coplanar(&vertices, &faces);
        let mesh = ConvexMesh { name: name.to_string(), vertices, faces, polygons, polygon_vertices };
        let props = mesh.unit_mass_props();
        let extent = points.iter().flat_map(|p| p.iter()).fold(0.0f64, |m, x| m.max(x.abs())).max(f64::MIN_POSITIVE);
        if mesh.faces.len() < 4 || !(props.volume > 1e-12 * extent * extent * extent) {
            return Err(format!(
                "mesh vertices are degenerate (coplanar or collinear): hull volume {:e} m³",
                props.volume
            ));
        }
        Ok(mesh)
    }

    /// Volume, centre of mass and inertia about the centre of mass at unit
    /// density, from the signed tetrahedra of the hull triangles.
    pub fn unit_mass_props(&self) -> UnitMassProps {
        let v = |i: u32| Vec3::from_array(self.vertices[i as usize]);
        let mut vol = 0.0;
        let mut first = Vec3::zero();
        // Second moments ∫ x_i x_j dV about the origin.
        let mut sec = Mat3::zero();
        for f in &self.faces {
            let (a, b, c) = (v(f[0]), v(f[1]), v(f[2]));
            let d = a.dot(b.cross(c)) / 6.0;
            vol += d;
            first += (a + b + c) * (d / 4.0);
            // ∫ over tetrahedron (0, a, b, c) of x xᵀ = d/20 (Σ p pᵀ + (Σp)(Σp)ᵀ).
            let s = a + b + c;
            let m = Mat3::outer(a, a) + Mat3::outer(b, b) + Mat3::outer(c, c) + Mat3::outer(s, s);
            sec = sec + m.scale(d / 20.0);
        }
        let com = if vol.abs() > 0.0 { first * (1.0 / vol) } else { Vec3::zero() };
        // Inertia about the origin: tr(S) 1 − S; then shift to the centre of mass.
        let tr = sec.m[0][0] + sec.m[1][1] + sec.m[2][2];
        let io = Mat3::identity().scale(tr) - sec;
        let ic = io - (Mat3::identity().scale(com.norm2()) - Mat3::outer(com, com)).scale(vol);
        UnitMassProps { volume: vol, com, inertia: ic }
    }

    /// Largest distance of a vertex from the geom origin (m).
    pub fn radius(&self) -> f64 {
        self.vertices.iter().map(|p| Vec3::from_array(*p).norm()).fold(0.0, f64::max)
    }
}

/// Merges adjacent coplanar hull triangles into convex polygons (flood fill
/// over shared edges), and returns the polygons and their vertex loops.
/// Coplanar means: every vertex of the neighbour lies within 1e-9 · extent
/// of the seed triangle's plane.
fn merge_coplanar(vertices: &[[f64; 3]], faces: &[[u32; 3]]) -> (Vec<MeshPolygon>, Vec<u32>) {
    let v = |i: u32| Vec3::from_array(vertices[i as usize]);
    let extent = vertices.iter().flat_map(|p| p.iter()).fold(0.0f64, |m, x| m.max(x.abs())).max(f64::MIN_POSITIVE);
    let tol = 1e-9 * extent;
    // Directed edge → triangle.
    let mut edge_face: HashMap<(u32, u32), usize> = HashMap::new();
    for (t, f) in faces.iter().enumerate() {
        for k in 0..3 {
            edge_face.insert((f[k], f[(k + 1) % 3]), t);
        }
    }
    let tri_normal = |f: &[u32; 3]| (v(f[1]) - v(f[0])).cross(v(f[2]) - v(f[0]));
    let mut group = vec![usize::MAX; faces.len()];
    let mut polygons = Vec::new();
    let mut loops = Vec::new();
    for seed in 0..faces.len() {
        if group[seed] != usize::MAX {
            continue;
        }
        let gid = polygons.len();
        let n0 = tri_normal(&faces[seed]).normalize();
        let p0 = v(faces[seed][0]);
        let mut members = vec![seed];
        group[seed] = gid;
        let mut k = 0;
        while k < members.len() {
            let f = faces[members[k]];
            k += 1;
            for e in 0..3 {
                let Some(&t) = edge_face.get(&(f[(e + 1) % 3], f[e])) else { continue };
                if group[t] != usize::MAX {
                    continue;
                }
                let coplanar = faces[t].iter().all(|&i| (v(i) - p0).dot(n0).abs() <= tol);
                if coplanar && tri_normal(&faces[t]).dot(n0) > 0.0 {
                    group[t] = gid;
                    members.push(t);
                }
            }
        }
        // Boundary edges (whose twin is not in the group), chained into a loop.
        let mut next: HashMap<u32, u32> = HashMap::new();
        let mut area_normal = Vec3::zero();
        for &t in &members {
            let f = faces[t];
            area_normal += tri_normal(&f);
            for e in 0..3 {
                let (a, b) = (f[e], f[(e + 1) % 3]);
                let twin_inside = edge_face.get(&(b, a)).is_some_and(|&u| group[u] == gid);
                if !twin_inside {
                    next.insert(a, b);
                }
            }
        }
        let normal = area_normal.normalize();
        let start = loops.len() as u32;
        let first = *next.keys().min().unwrap_or(&faces[seed][0]);
        let mut cur = first;
        for _ in 0..next.len() {
            loops.push(cur);
            match next.get(&cur) {
                Some(&n) if n != first => cur = n,
                _ => break,
            }
        }
        let count = loops.len() as u32 - start;
        let offset = loops[start as usize..].iter().map(|&i| normal.dot(v(i))).fold(f64::MIN, f64::max);
        polygons.push(MeshPolygon { normal: normal.to_array(), offset, start, count });
    }
    (polygons, loops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cube_hull_mass_props() {
        let mut pts = vec![];
        for i in 0..8 {
            pts.push([
                if i & 1 == 0 { -0.5 } else { 0.5 } + 1.0,
                if i & 2 == 0 { -1.0 } else { 1.0 },
                if i & 4 == 0 { -1.5 } else { 1.5 },
            ]);
        }
        pts.push([1.0, 0.0, 0.0]); // interior point, dropped by the hull
        let m = ConvexMesh::from_points("box", &pts).unwrap();
        assert_eq!(m.vertices.len(), 8);
        let p = m.unit_mass_props();
        assert!((p.volume - 6.0).abs() < 1e-12);
        assert!((p.com - Vec3::new(1.0, 0.0, 0.0)).norm() < 1e-12);
        // Box 1 × 2 × 3: Ixx = V (4 + 9)/12.
        assert!((p.inertia.m[0][0] - 6.0 * 13.0 / 12.0).abs() < 1e-10);
        assert!((p.inertia.m[1][1] - 6.0 * 10.0 / 12.0).abs() < 1e-10);
        assert!((p.inertia.m[2][2] - 6.0 * 5.0 / 12.0).abs() < 1e-10);
        assert!(p.inertia.m[0][1].abs() < 1e-12);
        // Six square faces, each a counter-clockwise loop of 4 corners on its plane.
        assert_eq!(m.polygons.len(), 6);
        for poly in &m.polygons {
            assert_eq!(poly.count, 4);
            let n = Vec3::from_array(poly.normal);
            let ids = &m.polygon_vertices[poly.start as usize..(poly.start + poly.count) as usize];
            let pt = |k: usize| Vec3::from_array(m.vertices[ids[k % 4] as usize]);
            for k in 0..4 {
                assert!((n.dot(pt(k)) - poly.offset).abs() < 1e-12);
                assert!((pt(k + 1) - pt(k)).cross(pt(k + 2) - pt(k + 1)).dot(n) > 0.0, "loop is not CCW");
            }
        }
    }

    #[test]
    fn too_few_or_flat_vertices_are_rejected() {
        let e = ConvexMesh::from_points("m", &[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).unwrap_err();
        assert!(e.contains("at least 4"), "{e}");
        let flat = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]];
        assert!(ConvexMesh::from_points("m", &flat).is_err());
    }
}
