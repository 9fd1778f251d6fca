//! How a model looks: geom colours and materials, cameras, the model's
//! statistic (centre and extent, MuJoCo's `<statistic>`). None of it has
//! any effect on the simulation; [`crate::render`] draws from it.

use super::{GeomKind, Model};
use crate::math::Real;

/// MuJoCo's default geom colour (grey, opaque).
pub const DEFAULT_RGBA: [f32; 4] = [0.5, 0.5, 0.5, 1.0];

/// The look of one geom (MJCF `rgba`, `material`, `group`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GeomVisual {
    /// Colour (linear RGB and alpha in [0, 1]) when written; `None` takes
    /// the material's colour, else [`DEFAULT_RGBA`] (MuJoCo: a geom's own
    /// `rgba` overrides its material's).
    pub rgba: Option<[f32; 4]>,
    /// Index into [`Visual::materials`].
    pub material: Option<usize>,
    /// Visibility group (MuJoCo renders groups 0, 1 and 2 by default).
    pub group: i32,
}

/// The pattern of a material's texture (MJCF builtin textures).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// One colour, `rgb1` (`builtin="flat"`, `"none"` or a texture file, of
    /// which cenic takes no pixels).
    Flat,
    /// A 2 × 2 checker of `rgb1` and `rgb2` per texture repeat (`builtin="checker"`).
    Checker,
}

/// A texture as cenic draws it: a pattern of one or two colours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Texture {
    /// Pattern.
    pub pattern: Pattern,
    /// First colour (linear RGB in [0, 1]).
    pub rgb1: [f32; 3],
    /// Second colour (the checker's other squares).
    pub rgb2: [f32; 3],
}

/// A visual material (MJCF `asset/material`).
#[derive(Clone, Debug, PartialEq)]
pub struct VisualMaterial {
    /// Name.
    pub name: String,
    /// Colour multiplying the texture (default white).
    pub rgba: [f32; 4],
    /// Texture, when the material names one.
    pub texture: Option<Texture>,
    /// Texture repeats over a plane's full size (MJCF `texrepeat`), x and y.
    pub texrepeat: [f32; 2],
}

/// How a model camera moves (MJCF `camera mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CameraMode {
    /// Rigidly attached to its body.
    Fixed,
    /// At a constant world offset from its body's origin, constant world orientation.
    Track,
    /// At a constant world offset from the centre of mass of its body's
    /// subtree, constant world orientation.
    TrackCom,
}

/// A camera of the model (MJCF `camera`): looks along its frame's −z with
/// +y up, as in MuJoCo.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCamera {
    /// Name (may be empty).
    pub name: String,
    /// Body it is attached to.
    pub body: usize,
    /// Movement mode.
    pub mode: CameraMode,
    /// Position in the body frame (m).
    pub pos: [f64; 3],
    /// Orientation in the body frame (w, x, y, z).
    pub quat: [f64; 4],
    /// Vertical field of view (degrees).
    pub fovy: f64,
}

/// Everything visual of a model (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Visual {
    /// Materials referenced by [`GeomVisual::material`].
    pub materials: Vec<VisualMaterial>,
    /// Cameras.
    pub cameras: Vec<ModelCamera>,
    /// `<statistic extent>` when written (m).
    pub extent: Option<f64>,
    /// `<statistic center>` when written (m).
    pub center: Option<[f64; 3]>,
    /// Vertical field of view of the free camera (degrees, `<visual><global fovy>`).
    pub fovy: f64,
}

impl Default for Visual {
    fn default() -> Self {
        Self { materials: vec![], cameras: vec![], extent: None, center: None, fovy: 45.0 }
    }
}

impl Visual {
    /// The index of the camera called `name`.
    pub fn camera(&self, name: &str) -> Option<usize> {
        self.cameras.iter().position(|c| c.name == name)
    }
}

/// The colour of a geom and its checker's second colour, if it has one:
/// (rgba, checker (rgb2, squares per metre along x and y)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeomLook {
    /// Colour (alpha 0: not drawn).
    pub rgba: [f32; 4],
    /// The other colour of a checker and its repeat (1/m), on planes.
    pub checker: Option<([f32; 3], [f32; 2])>,
}

impl Model {
    /// The colour a geom is drawn with: its own `rgba`, else its
    /// material's, multiplied by the material's texture colour; planes
    /// with a checker texture get the checker, `texrepeat` repeats of two
    /// squares over the plane's size (10 m for infinite planes).
    pub fn geom_look(&self, g: usize) -> GeomLook {
        let geom = &self.geoms[g];
        let mat = geom.visual.material.and_then(|m| self.visual.materials.get(m));
        let mut rgba = geom.visual.rgba.or(mat.map(|m| m.rgba)).unwrap_or(DEFAULT_RGBA);
        let mut checker = None;
        if let Some(m) = mat
            && let Some(t) = m.texture
        {
            match t.pattern {
                Pattern::Checker if geom.kind == GeomKind::Plane => {
                    let span = |s: f64| if s > 0.0 { 2.0 * s } else { 10.0 } as f32;
                    let rep = [2.0 * m.texrepeat[0] / span(geom.size[0]), 2.0 * m.texrepeat[1] / span(geom.size[1])];
                    let rgb2 = [rgba[0] * t.rgb2[0], rgba[1] * t.rgb2[1], rgba[2] * t.rgb2[2]];
                    checker = Some((rgb2, rep));
                }
                _ => {}
            }
            for (c, tc) in rgba.iter_mut().zip(t.rgb1) {
                *c *= tc;
            }
        }
        GeomLook { rgba, checker }
    }

    /// Whether MuJoCo's default visualisation shows geom `g` (groups 0–2, alpha > 0).
    pub fn geom_visible(&self, g: usize) -> bool {
        (0..3).contains(&self.geoms[g].visual.group) && self.geom_look(g).rgba[3] > 0.0
    }

    /// MuJoCo's `stat.center` and `stat.extent` (m) at the state whose
    /// kinematics `data` holds (MuJoCo computes them at qpos0): the
    /// bounding box of body origins and centres of mass, joint anchors,
    /// sites and geoms (each padded by its bounding radius; planes by a
    /// tenth of their size, 1 m when infinite), its centre and largest
    /// side, at least twice the mean body size; `<statistic>` values
    /// override them.
    pub fn statistic<T: Real>(&self, data: &crate::dynamics::Data<T>) -> ([f64; 3], f64) {
        let p = |v: &crate::math::Vec3<T>| [v.x.f64(), v.y.f64(), v.z.f64()];
        let mut lo = [1e10f64; 3];
        let mut hi = [-1e10f64; 3];
        let mut add = |x: [f64; 3], r: f64| {
            for i in 0..3 {
                lo[i] = lo[i].min(x[i] - r);
                hi[i] = hi[i].max(x[i] + r);
            }
        };
        for b in 1..self.bodies.len() {
            add(p(&data.xpos[b]), 0.0);
            add(p(&data.xipos[b]), 0.0);
        }
        for j in 0..self.joints.len() {
            add(p(&data.xanchor[j]), 0.0);
        }
        for s in 0..self.sites.len() {
            add(p(&data.site_xpos[s]), 0.0);
        }
        for (g, geom) in self.geoms.iter().enumerate() {
            let r = match geom.kind {
                GeomKind::Plane if geom.size[0] != 0.0 || geom.size[1] != 0.0 => 0.1 * geom.size[0].max(geom.size[1]),
                GeomKind::Plane => 1.0,
                GeomKind::Hfield => {
                    let f = &self.hfields[geom.hfield.unwrap_or(0)];
                    0.1 * f.size.iter().fold(0.0f64, |a, &b| a.max(b))
                }
                _ => geom.rbound,
            };
            add(p(&data.geom_xpos[g]), r);
        }
        let center = [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])];
        let mut extent = 2.0;
        if hi[0] > lo[0] {
            extent = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(hi[2] - lo[2]).max(1e-5);
        }
        // Body sizes: the largest distance from the centre of mass to a joint
        // anchor (of the body or a child) or to a geom's far side.
        let nb = self.bodies.len();
        let mut size = vec![0.0f64; nb];
        let dist =
            |a: [f64; 3], b: [f64; 3]| ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt();
        for (j, joint) in self.joints.iter().enumerate() {
            let a = p(&data.xanchor[j]);
            for id in [joint.body, self.bodies[joint.body].parent] {
                size[id] = size[id].max(dist(p(&data.xipos[id]), a));
            }
        }
        size[0] = 0.0;
        for (g, geom) in self.geoms.iter().enumerate() {
            if geom.body > 0 && geom.rbound > 0.0 && geom.rbound.is_finite() {
                let b = geom.body;
                size[b] = size[b].max(geom.rbound + dist(p(&data.xipos[b]), p(&data.geom_xpos[g])));
            }
        }
        if nb > 1 {
            let mean = size[1..].iter().map(|s| s.max(1e-5)).sum::<f64>() / (nb - 1) as f64;
            extent = extent.max(2.0 * mean);
        }
        (self.visual.center.unwrap_or(center), self.visual.extent.unwrap_or(extent))
    }
}
