//! Height fields (MuJoCo's `hfield` asset): elevation samples on a regular
//! grid, collided with convex geoms as the triangular prisms between each
//! grid triangle and the field's base (see `collision::narrowphase::hfield`).

/// A height field: `nrow` × `ncol` elevation samples over the rectangle
/// [−`size[0]`, `size[0]`] × [−`size[1]`, `size[1]`] of its geom's frame.
/// Sample (r, c) sits at x = c·2·`size[0]`/(ncol − 1) − `size[0]`,
/// y = r·2·`size[1]`/(nrow − 1) − `size[1]`, at height
/// z = `data[r·ncol + c]`·`size[2]`; the solid reaches down to z = −`size[3]`.
#[derive(Clone, Debug, PartialEq)]
pub struct HeightField {
    /// Name (may be empty).
    pub name: String,
    /// Number of rows (samples along y), ≥ 2.
    pub nrow: usize,
    /// Number of columns (samples along x), ≥ 2.
    pub ncol: usize,
    /// [radius_x, radius_y, elevation_z, base_z] (m), each > 0.
    pub size: [f64; 4],
    /// Elevations normalised to [0, 1] (row-major, row 0 at y = −`size[1]`),
    /// stored in single precision as MuJoCo stores them.
    pub data: Vec<f32>,
}

impl HeightField {
    /// A height field from raw elevations (any units; row-major, row 0 at
    /// y = −`size[1]`), normalised to [0, 1] as MuJoCo's compiler does
    /// (subtract the minimum, divide by the range when it exceeds 1e-6, in
    /// single precision). Fails on fewer than 2 rows or columns, a data
    /// length other than nrow·ncol, non-finite data or a size that is not
    /// positive and finite.
    pub fn new(name: &str, nrow: usize, ncol: usize, size: [f64; 4], raw: &[f32]) -> Result<Self, String> {
        if nrow < 2 || ncol < 2 {
            return Err(format!("a height field needs at least 2 rows and 2 columns, got {nrow} × {ncol}"));
        }
        if nrow.checked_mul(ncol) != Some(raw.len()) {
            return Err(format!("elevation data has {} values, expected nrow·ncol = {nrow}·{ncol}", raw.len()));
        }
        if let Some(i) = size.iter().position(|s| !(*s > 0.0 && s.is_finite())) {
            return Err(format!("size[{i}] must be positive and finite, got {} m", size[i]));
        }
        if let Some(i) = raw.iter().position(|x| !x.is_finite()) {
            return Err(format!("elevation value {i} is not finite: {}", raw[i]));
        }
        let emin = raw.iter().copied().fold(f32::INFINITY, f32::min);
        let emax = raw.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        // MuJoCo's mjEPS (1e-6) as a float comparison.
        let range = emax - emin;
        let data = raw.iter().map(|&x| if range > 1e-6 { (x - emin) / range } else { x - emin }).collect();
        Ok(Self { name: name.to_string(), nrow, ncol, size, data })
    }

    /// Height (m) of sample (row r, column c).
    #[inline]
    pub fn height(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.ncol + c] as f64 * self.size[2]
    }

    /// MuJoCo's size of a height-field geom (`geom_size`): [radius_x,
    /// radius_y, elevation_z/4 + base_z/2] (m); its volume and inertia are
    /// those of a box of these half-sizes (MuJoCo does the same).
    pub fn geom_size(&self) -> [f64; 3] {
        [self.size[0], self.size[1], 0.25 * self.size[2] + 0.5 * self.size[3]]
    }

    /// Radius of a ball about the geom origin that holds the field (m),
    /// MuJoCo's `geom_rbound`.
    pub fn radius(&self) -> f64 {
        let [a, b, c, d] = self.size;
        (a * a + b * b + (c * c).max(d * d)).sqrt()
    }
}
