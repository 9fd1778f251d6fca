//! Cameras: MuJoCo's free camera (look-at point, distance, azimuth,
//! elevation) and the model's cameras (fixed, `track`, `trackcom`), and the
//! frame each gives in a world's state.

use crate::dynamics::{Data, subtree_com};
use crate::math::Real;
use crate::model::{CameraMode, Model};
use bytemuck::{Pod, Zeroable};

/// MuJoCo's free camera: looks at `lookat` from `distance` away, from the
/// direction given by `azimuth` (degrees about +z from +x) and `elevation`
/// (degrees above the horizontal; negative looks down). MuJoCo's defaults
/// are azimuth 90, elevation −45.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FreeCamera {
    /// Point looked at (m, world).
    pub lookat: [f64; 3],
    /// Distance from the eye to `lookat` (m).
    pub distance: f64,
    /// Azimuth (degrees).
    pub azimuth: f64,
    /// Elevation (degrees).
    pub elevation: f64,
}

impl FreeCamera {
    /// MuJoCo's initial free camera of `model` at the state of `data`: at
    /// the model's centre, 1.5 extents away, azimuth 90, elevation −45.
    pub fn of_model<T: Real>(model: &Model, data: &Data<T>) -> Self {
        let (center, extent) = model.statistic(data);
        Self { lookat: center, distance: 1.5 * extent, azimuth: 90.0, elevation: -45.0 }
    }
}

/// Where a frame is seen from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Camera {
    /// A free camera (its field of view is the model's `visual global fovy`).
    Free(FreeCamera),
    /// The model camera of this index ([`crate::model::Visual::cameras`]).
    Model(usize),
}

/// A camera's pose and field of view in one world: the eye looks along
/// −`back` with `up` up, as MuJoCo's cameras do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraFrame {
    /// Eye position (m, world).
    pub eye: [f64; 3],
    /// Image x axis (world).
    pub right: [f64; 3],
    /// Image y axis (world).
    pub up: [f64; 3],
    /// Opposite of the viewing direction (world).
    pub back: [f64; 3],
    /// Vertical field of view (degrees).
    pub fovy: f64,
}

/// A camera frame as the rasterizer reads it (WGSL `View` in
/// `kernels/render.wgsl`, written by `kernels/render_gather.wgsl` too).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuView {
    /// Eye (m); w: 1 / tan(fovy / 2).
    pub eye: [f32; 4],
    /// Image x axis; w unused.
    pub right: [f32; 4],
    /// Image y axis; w unused.
    pub up: [f32; 4],
    /// −viewing direction; w unused.
    pub back: [f32; 4],
}

impl CameraFrame {
    /// The frame as the rasterizer reads it.
    pub fn to_gpu(&self) -> GpuView {
        let v = |a: [f64; 3], w: f64| [a[0] as f32, a[1] as f32, a[2] as f32, w as f32];
        GpuView {
            eye: v(self.eye, 1.0 / (0.5 * self.fovy.to_radians()).tan()),
            right: v(self.right, 0.0),
            up: v(self.up, 0.0),
            back: v(self.back, 0.0),
        }
    }
}

/// The frame of a free camera (MuJoCo's `mjv_updateCamera`).
pub fn free_frame(cam: &FreeCamera, fovy: f64) -> CameraFrame {
    let (az, el) = (cam.azimuth.to_radians(), cam.elevation.to_radians());
    let fwd = [el.cos() * az.cos(), el.cos() * az.sin(), el.sin()];
    let up = [-el.sin() * az.cos(), -el.sin() * az.sin(), el.cos()];
    let back = fwd.map(|x| -x);
    let right = cross(up, back);
    let eye = [0, 1, 2].map(|i| cam.lookat[i] - cam.distance * fwd[i]);
    CameraFrame { eye, right, up, back, fovy }
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// Rotation matrix (rows) of a unit quaternion (w, x, y, z).
pub(crate) fn quat_mat(q: [f64; 4]) -> [[f64; 3]; 3] {
    let [w, x, y, z] = q;
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)],
    ]
}

fn mat_mul(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let mut m = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    m
}

fn mat_vec(a: &[[f64; 3]; 3], v: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|i| a[i][0] * v[0] + a[i][1] * v[1] + a[i][2] * v[2])
}

/// What a model camera needs from qpos0 (MuJoCo's `cam_pos0`,
/// `cam_poscom0`, `cam_mat0`): its world position and orientation there,
/// and its offsets from its body's origin and its subtree's centre of mass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraRest {
    /// World orientation at qpos0 (rows).
    pub mat0: [[f64; 3]; 3],
    /// Eye minus the body's origin at qpos0 (m, world).
    pub offset_body: [f64; 3],
    /// Eye minus the body subtree's centre of mass at qpos0 (m, world).
    pub offset_com: [f64; 3],
}

/// The rest data of every model camera (from the kinematics of `data` at qpos0).
pub fn camera_rests(model: &Model, data0: &Data<f64>) -> Vec<CameraRest> {
    model
        .visual
        .cameras
        .iter()
        .map(|c| {
            let (p, r) = body_pose(data0, c.body);
            let mat0 = mat_mul(&r, &quat_mat(c.quat));
            let eye = add(p, mat_vec(&r, c.pos));
            let com = subtree_com(model, data0, c.body);
            CameraRest { mat0, offset_body: sub(eye, p), offset_com: sub(eye, [com.x, com.y, com.z]) }
        })
        .collect()
}

fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn body_pose<T: Real>(data: &Data<T>, b: usize) -> ([f64; 3], [[f64; 3]; 3]) {
    let p = data.xpos[b];
    let m = data.xmat[b].m;
    ([p.x.f64(), p.y.f64(), p.z.f64()], m.map(|r| r.map(|x| x.f64())))
}

/// What a camera's eye is attached to (see [`Rig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RigBase {
    /// The world origin (free cameras).
    Origin,
    /// A body's origin and rotation (fixed cameras).
    Body(usize),
    /// A body's origin, not its rotation (`track`).
    BodyTranslation(usize),
    /// The centre of mass of a body's subtree (`trackcom`).
    SubtreeCom(usize),
}

/// A camera as the same small computation on the host and on the device
/// (`kernels/render_gather.wgsl`): the eye is base + B·`pos` and the image
/// axes (right, up, back) are the columns of B·`axes`, with B the body's
/// rotation for [`RigBase::Body`], else the identity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rig {
    /// What the eye is attached to.
    pub base: RigBase,
    /// Eye offset (m; in the body frame for [`RigBase::Body`], else world).
    pub pos: [f64; 3],
    /// Rows of the axes matrix (its columns are right, up, back).
    pub axes: [[f64; 3]; 3],
    /// Vertical field of view (degrees).
    pub fovy: f64,
}

/// A [`Rig`] as the gather kernel reads it (WGSL `RenderRig`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuRig {
    /// 0 origin, 1 body, 2 body translation, 3 subtree centre of mass.
    pub base: u32,
    /// Body index (unused for the origin).
    pub body: u32,
    /// Padding.
    pub pad: [u32; 2],
    /// Eye offset (m); w: 1 / tan(fovy / 2).
    pub pos: [f32; 4],
    /// Rows of the axes matrix; w unused.
    pub axes: [[f32; 4]; 3],
}

impl Rig {
    /// The rig of `camera` in `model` (`rests` from [`camera_rests`]).
    pub fn new(model: &Model, rests: &[CameraRest], camera: &Camera) -> Self {
        match camera {
            Camera::Free(f) => {
                let fr = free_frame(f, model.visual.fovy);
                let axes = [0, 1, 2].map(|i| [fr.right[i], fr.up[i], fr.back[i]]);
                Rig { base: RigBase::Origin, pos: fr.eye, axes, fovy: fr.fovy }
            }
            Camera::Model(c) => {
                let cam = &model.visual.cameras[*c];
                let rest = &rests[*c];
                match cam.mode {
                    CameraMode::Fixed => {
                        Rig { base: RigBase::Body(cam.body), pos: cam.pos, axes: quat_mat(cam.quat), fovy: cam.fovy }
                    }
                    CameraMode::Track => Rig {
                        base: RigBase::BodyTranslation(cam.body),
                        pos: rest.offset_body,
                        axes: rest.mat0,
                        fovy: cam.fovy,
                    },
                    CameraMode::TrackCom => Rig {
                        base: RigBase::SubtreeCom(cam.body),
                        pos: rest.offset_com,
                        axes: rest.mat0,
                        fovy: cam.fovy,
                    },
                }
            }
        }
    }

    /// The camera frame in the state whose kinematics `data` holds.
    pub fn frame<T: Real>(&self, model: &Model, data: &Data<T>) -> CameraFrame {
        let identity = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let (base, b) = match self.base {
            RigBase::Origin => ([0.0; 3], identity),
            RigBase::Body(k) => body_pose(data, k),
            RigBase::BodyTranslation(k) => (body_pose(data, k).0, identity),
            RigBase::SubtreeCom(k) => {
                let c = subtree_com(model, data, k);
                ([c.x.f64(), c.y.f64(), c.z.f64()], identity)
            }
        };
        let m = mat_mul(&b, &self.axes);
        let col = |j: usize| [m[0][j], m[1][j], m[2][j]];
        CameraFrame { eye: add(base, mat_vec(&b, self.pos)), right: col(0), up: col(1), back: col(2), fovy: self.fovy }
    }

    /// The rig as the gather kernel reads it.
    pub fn to_gpu(&self) -> GpuRig {
        let (base, body) = match self.base {
            RigBase::Origin => (0, 0),
            RigBase::Body(b) => (1, b),
            RigBase::BodyTranslation(b) => (2, b),
            RigBase::SubtreeCom(b) => (3, b),
        };
        let f = 1.0 / (0.5 * self.fovy.to_radians()).tan();
        let p = self.pos;
        GpuRig {
            base,
            body: body as u32,
            pad: [0; 2],
            pos: [p[0] as f32, p[1] as f32, p[2] as f32, f as f32],
            axes: self.axes.map(|r| [r[0] as f32, r[1] as f32, r[2] as f32, 0.0]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MuJoCo's default free camera (azimuth 90, elevation −45) looks along
    /// +y and down, with +x to the right.
    #[test]
    fn free_camera_axes() {
        let f =
            free_frame(&FreeCamera { lookat: [1.0, 2.0, 3.0], distance: 2.0, azimuth: 90.0, elevation: -45.0 }, 45.0);
        let s = 0.5f64.sqrt();
        let close = |a: [f64; 3], b: [f64; 3]| (0..3).all(|i| (a[i] - b[i]).abs() < 1e-12);
        assert!(close(f.right, [1.0, 0.0, 0.0]), "{:?}", f.right);
        assert!(close(f.back, [0.0, -s, s]), "{:?}", f.back);
        assert!(close(f.up, [0.0, s, s]), "{:?}", f.up);
        assert!(close(f.eye, [1.0, 2.0 - 2.0 * s, 3.0 + 2.0 * s]), "{:?}", f.eye);
    }
}
