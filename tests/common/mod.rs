//! Helpers shared by integration tests.
#![allow(dead_code)]

#[macro_use]
pub mod gpu;
pub mod icf;

use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Material, Model, ModelBuilder, WORLD};
use std::path::PathBuf;

/// A 0.1 kg ball of radius 5 cm on a vertical slide joint above a plane
/// (the point mass of DiffMJX Fig. 4 with gravity): 2e5 N/m stiffness per
/// material (1e5 N/m for the pair), light dissipation (0.1 s/m) so it
/// bounces several times.
pub fn bouncing_ball() -> Model {
    let mat = Material { stiffness: 2e5, dissipation: 0.1, mu_static: 0.5, mu_dynamic: 0.5, soft: None };
    let mut b = ModelBuilder::new("bouncing_ball");
    b.add_geom(GeomSpec { material: mat, ..GeomSpec::new("ground", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD) });
    let body = b.add_body(BodySpec::new("ball", WORLD, [0.0, 0.0, 0.0]));
    b.add_joint(JointSpec { axis: [0.0, 0.0, 1.0], ..JointSpec::new("z", JointKind::Slide, body) });
    b.add_geom(GeomSpec {
        material: mat,
        mass: Some(0.1),
        ..GeomSpec::new("ball", GeomKind::Sphere, [0.05, 0.0, 0.0], body)
    });
    b.build().unwrap()
}

/// Whether the shared data folder must be present: `CENIC_REQUIRE_SHARED=1`
/// (set by `.ci/run`) turns every skip for missing shared data into a
/// failure, so that CI cannot pass by skipping the models people use.
pub fn shared_required() -> bool {
    std::env::var("CENIC_REQUIRE_SHARED").is_ok_and(|v| v == "1")
}

/// Skips (prints `SKIPPED: why`) or, under [`shared_required`], fails.
pub fn skip_shared(why: &str) {
    assert!(!shared_required(), "CENIC_REQUIRE_SHARED=1 but {why}");
    eprintln!("SKIPPED: {why}");
}

/// The shared data folder (`../shared` next to the crate, or `$CENIC_SHARED`),
/// or `None` with a clear message when it is absent (tests then skip; they
/// fail under `CENIC_REQUIRE_SHARED=1`).
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CENIC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    if dir.is_dir() {
        Some(dir)
    } else {
        skip_shared(&format!("shared data folder {} not found (set CENIC_SHARED to its path)", dir.display()));
        None
    }
}

/// A path under the shared folder, or `None` (with a message) when absent;
/// fails under `CENIC_REQUIRE_SHARED=1`.
pub fn shared_file(rel: &str) -> Option<PathBuf> {
    let p = shared_dir()?.join(rel);
    if p.exists() {
        Some(p)
    } else {
        skip_shared(&format!("{} not found", p.display()));
        None
    }
}

/// Small deterministic RNG (SplitMix64) so tests need no extra crates.
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    /// Uniformly distributed unit quaternion (w, x, y, z).
    pub fn quat(&mut self) -> [f64; 4] {
        let q = [self.normal(), self.normal(), self.normal(), self.normal()];
        let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
        [q[0] / n, q[1] / n, q[2] / n, q[3] / n]
    }
}

/// A body inertial with a tilted principal frame (so that products of
/// inertia are non-zero): mass (kg), centre of mass (m), principal moments (kg·m²).
pub fn inertial(mass: f64, pos: [f64; 3], diag: [f64; 3]) -> Option<cenic::model::Inertial> {
    Some(cenic::model::Inertial { mass, pos, quat: [0.9, 0.1, -0.3, 0.2], diag })
}

/// Positions and velocities of every world of a batch (world after world).
pub fn batch_state(b: &dyn cenic::batch::Batch) -> (Vec<f64>, Vec<f64>) {
    let m = b.model();
    let (mut q, mut v) = (vec![0.0; b.nworld() * m.nq], vec![0.0; b.nworld() * m.nv]);
    b.qpos(&mut q);
    b.qvel(&mut v);
    (q, v)
}
