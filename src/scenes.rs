//! Built-in models, written in code with [`ModelBuilder`], so that the
//! command line and examples run without any file.

use crate::model::{
    BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Keyframe, Material, Model, ModelBuilder, WORLD,
};

/// Contact material of the built-in cube toss: 2e5 N/m per geom (1e5 N/m
/// per contact pair in series), dissipation 10 s/m, μs = μd = 0.18 (the
/// ContactNets estimate for an acrylic cube on wood).
pub const CUBE_TOSS_MATERIAL: Material =
    Material { stiffness: 2e5, dissipation: 10.0, mu_static: 0.18, mu_dynamic: 0.18 };

/// A 0.1 m, 0.37 kg cube tossed onto a table, like the ContactNets cube:
/// ground plane at z = 0, cube with a free joint, keyframe `toss` starting
/// at 0.3 m with v = (1, 0, 0) m/s and ω = (0, 5, 3) rad/s (body frame);
/// stiction tolerance 1e-4 m/s. The same scene as `shared/scenes/cube_toss.xml`.
pub fn cube_toss() -> Model {
    let mut b = ModelBuilder::new("cube_toss");
    b.options.stiction_tolerance = 1e-4;
    b.options.gravity = [0.0, 0.0, -9.81];
    b.add_geom(GeomSpec {
        material: CUBE_TOSS_MATERIAL,
        ..GeomSpec::new("ground", GeomKind::Plane, [5.0, 5.0, 0.1], WORLD)
    });
    let cube = b.add_body(BodySpec::new("cube", WORLD, [0.0, 0.0, 0.3]));
    b.add_joint(JointSpec::new("cube_free", JointKind::Free, cube));
    b.add_geom(GeomSpec {
        material: CUBE_TOSS_MATERIAL,
        mass: Some(0.37),
        ..GeomSpec::new("cube_geom", GeomKind::Box, [0.05, 0.05, 0.05], cube)
    });
    b.add_keyframe(Keyframe {
        name: "toss".into(),
        time: 0.0,
        qpos: vec![0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0],
        qvel: vec![1.0, 0.0, 0.0, 0.0, 5.0, 3.0],
        ctrl: vec![],
    });
    b.build().expect("built-in cube toss model is valid")
}
