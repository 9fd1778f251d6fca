//! Trajectory output: one CSV row per sample, world and body.

use crate::dynamics::{self, Data};
use crate::model::Model;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

/// CSV header of trajectory files: body origin position and linear velocity
/// in the world frame (m, m/s), orientation body-to-world (unit quaternion
/// w, x, y, z) and angular velocity in the world frame (rad/s).
pub const TRAJECTORY_HEADER: &str = "t,world,body,px,py,pz,qw,qx,qy,qz,vx,vy,vz,wx,wy,wz";

/// Writes body trajectories of a batch as CSV.
pub struct TrajectoryWriter {
    model: Arc<Model>,
    out: BufWriter<std::fs::File>,
    scratch: Data<f64>,
}

impl TrajectoryWriter {
    /// Creates the file and writes the header.
    pub fn create(path: &Path, model: Arc<Model>) -> std::io::Result<Self> {
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        writeln!(out, "{TRAJECTORY_HEADER}")?;
        Ok(Self { scratch: Data::new(&model), model, out })
    }

    /// Writes one sample of every world: `times` (nworld), `qpos` (nworld × nq),
    /// `qvel` (nworld × nv). Bodies are the moving bodies (the world body is skipped).
    pub fn write_batch(&mut self, times: &[f64], qpos: &[f64], qvel: &[f64]) -> std::io::Result<()> {
        let (nq, nv) = (self.model.nq, self.model.nv);
        for (w, t) in times.iter().enumerate() {
            self.scratch.set_state(&qpos[w * nq..(w + 1) * nq], &qvel[w * nv..(w + 1) * nv]);
            dynamics::kinematics(&self.model, &mut self.scratch);
            dynamics::velocities(&self.model, &mut self.scratch);
            for b in 1..self.model.bodies.len() {
                let d = &self.scratch;
                let p = d.xpos[b];
                let q = d.xquat[b];
                let v = dynamics::point_velocity(d, b, p);
                let om = d.cvel[b].ang;
                writeln!(
                    self.out,
                    "{t},{w},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    body_label(&self.model, b),
                    p.x,
                    p.y,
                    p.z,
                    q.w,
                    q.x,
                    q.y,
                    q.z,
                    v.x,
                    v.y,
                    v.z,
                    om.x,
                    om.y,
                    om.z
                )?;
            }
        }
        Ok(())
    }

    /// Flushes the file.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The body's name, or `#index` for unnamed bodies.
fn body_label(model: &Model, b: usize) -> String {
    let n = &model.bodies[b].name;
    if n.is_empty() { format!("#{b}") } else { n.clone() }
}

/// Registers a TrueType font as plotters' "sans-serif" so PNG plots get
/// text; returns false when no font is found (DejaVu Sans is looked up in
/// the usual Linux locations), and plots are then drawn without labels.
/// The font is read once per process.
pub fn register_plot_font() -> bool {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        let font = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf"]
            .iter()
            .find_map(|p| std::fs::read(p).ok());
        // plotters keeps a 'static reference to the bytes.
        font.is_some_and(|bytes| {
            plotters::style::register_font(
                "sans-serif",
                plotters::style::FontStyle::Normal,
                Box::leak(bytes.into_boxed_slice()),
            )
            .is_ok()
        })
    })
}
