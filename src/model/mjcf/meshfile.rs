//! Vertices of mesh files (binary and ASCII STL, Wavefront OBJ). Only the
//! vertices matter: cenic collides with, and takes inertia from, the convex
//! hull of a mesh.

use std::path::Path;

/// Reads the vertices (file units, before `scale`) of an STL or OBJ file.
pub(super) fn read_vertices(path: &Path) -> Result<Vec<[f64; 3]>, String> {
    let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).unwrap_or_default();
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read mesh file '{}': {e}", path.display()))?;
    let what = |m: String| format!("mesh file '{}': {m}", path.display());
    match ext.as_str() {
        "stl" => stl(&bytes).map_err(what),
        "obj" => obj(&String::from_utf8_lossy(&bytes)).map_err(what),
        _ => Err(what(format!("unsupported mesh file type '.{ext}' (supported: .stl, .obj)"))),
    }
}

/// Binary STL when the size matches 84 + 50·n bytes, else ASCII STL.
fn stl(b: &[u8]) -> Result<Vec<[f64; 3]>, String> {
    if b.len() >= 84 {
        let n = u32::from_le_bytes([b[80], b[81], b[82], b[83]]) as usize;
        if b.len() == 84 + 50 * n {
            let mut v = Vec::with_capacity(3 * n);
            for t in 0..n {
                let base = 84 + 50 * t + 12; // skip the normal
                for k in 0..3 {
                    let p: [f64; 3] = std::array::from_fn(|c| {
                        let o = base + 12 * k + 4 * c;
                        f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]) as f64
                    });
                    v.push(p);
                }
            }
            return Ok(v);
        }
    }
    let text = std::str::from_utf8(b).map_err(|_| "neither binary STL (size mismatch) nor ASCII STL".to_string())?;
    if !text.trim_start().starts_with("solid") {
        return Err("neither binary STL (size mismatch) nor ASCII STL (no 'solid' header)".into());
    }
    let mut v = vec![];
    for (i, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        if it.next() == Some("vertex") {
            v.push(three(&mut it).ok_or_else(|| format!("line {}: bad vertex '{}'", i + 1, line.trim()))?);
        }
    }
    Ok(v)
}

/// `v x y z [w]` lines of an OBJ file.
fn obj(text: &str) -> Result<Vec<[f64; 3]>, String> {
    let mut v = vec![];
    for (i, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        if it.next() == Some("v") {
            v.push(three(&mut it).ok_or_else(|| format!("line {}: bad vertex '{}'", i + 1, line.trim()))?);
        }
    }
    Ok(v)
}

fn three<'s>(it: &mut impl Iterator<Item = &'s str>) -> Option<[f64; 3]> {
    let mut p = [0.0; 3];
    for x in p.iter_mut() {
        *x = it.next()?.parse().ok().filter(|x: &f64| x.is_finite())?;
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_ascii_stl_and_obj() {
        let tri = [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.5]];
        let mut b = vec![0u8; 80];
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&[0u8; 12]);
        for p in tri {
            for c in p {
                b.extend_from_slice(&c.to_le_bytes());
            }
        }
        b.extend_from_slice(&[0u8; 2]);
        assert_eq!(stl(&b).unwrap(), vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.5]]);
        let ascii = "solid t\n facet normal 0 0 1\n  outer loop\n   vertex 0 0 0\n   vertex 1 0 0\n   vertex 0 2 0.5\n  endloop\n endfacet\nendsolid t\n";
        assert_eq!(stl(ascii.as_bytes()).unwrap().len(), 3);
        assert_eq!(
            obj("# c\nv 1 2 3\nv 4 5 6 1\nvn 0 0 1\nf 1 2 3\n").unwrap(),
            vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        );
        assert!(obj("v 1 2\n").unwrap_err().contains("line 1"));
    }
}
