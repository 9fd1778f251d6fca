//! Convex meshes: the convex hull of user vertices (computed with parry3d),
//! kept in the geom frame exactly as given (unlike MuJoCo, we do not
//! re-centre meshes at their centre of mass: the geom frame is the frame
//! the vertices were written in).

use super::inertia::UnitMassProps;
use crate::math::{Mat3, Vec3};
use parry3d_f64::math::Vector3 as PVec;

/// A convex polyhedron: hull vertices and outward-oriented triangles.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvexMesh {
    /// Name (may be empty).
    pub name: String,
    /// Hull vertices in the geom frame (m).
    pub vertices: Vec<[f64; 3]>,
    /// Hull triangles (indices into `vertices`), counter-clockwise seen from outside.
    pub faces: Vec<[u32; 3]>,
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
        let mesh =
            ConvexMesh { name: name.to_string(), vertices: verts.iter().map(|v| [v.x, v.y, v.z]).collect(), faces };
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
    }

    #[test]
    fn too_few_or_flat_vertices_are_rejected() {
        let e = ConvexMesh::from_points("m", &[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).unwrap_err();
        assert!(e.contains("at least 4"), "{e}");
        let flat = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]];
        assert!(ConvexMesh::from_points("m", &flat).is_err());
    }
}
