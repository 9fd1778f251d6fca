//! Built-in models, written in code with [`ModelBuilder`], so that the
//! command line and examples run without any file.

use crate::model::{
    BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Keyframe, Material, Model, ModelBuilder, WORLD,
};

/// Contact material of the built-in cube toss: 2e5 N/m per geom (1e5 N/m
/// per contact pair in series), dissipation 10 s/m, μs = μd = 0.18 (the
/// ContactNets estimate for an acrylic cube on wood).
pub const CUBE_TOSS_MATERIAL: Material =
    Material { stiffness: 2e5, dissipation: 10.0, mu_static: 0.18, mu_dynamic: 0.18, soft: None };

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
        act: vec![],
        name: "toss".into(),
        time: 0.0,
        qpos: vec![0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0],
        qvel: vec![1.0, 0.0, 0.0, 0.0, 5.0, 3.0],
        ctrl: vec![],
    });
    b.build().expect("built-in cube toss model is valid")
}

/// A bin (0.4 × 0.4 m floor area inside 5 cm thick, 0.4 m high walls on a
/// ground plane) with `n` objects alternating spheres (radius 0.05 m,
/// density 1000 kg/m³) and cubes (half size 0.04 m), stacked in a
/// deterministic staggered column above the floor so they fall and pile up.
/// `material` applies to every geom (per geom: a pair combines two in series).
/// Like `shared/scenes/clutter20.xml` for `n = 20`, with generated poses.
pub fn clutter(n: usize, material: Material) -> Model {
    let mut b = ModelBuilder::new("clutter");
    b.options.stiction_tolerance = 1e-4;
    let g = |name: &str, kind, size, body| GeomSpec { material, ..GeomSpec::new(name, kind, size, body) };
    b.add_geom(g("floor", GeomKind::Plane, [2.0, 2.0, 0.1], WORLD));
    for (i, (pos, size)) in [
        ([0.225, 0.0, 0.2], [0.025, 0.25, 0.2]),
        ([-0.225, 0.0, 0.2], [0.025, 0.25, 0.2]),
        ([0.0, 0.225, 0.2], [0.25, 0.025, 0.2]),
        ([0.0, -0.225, 0.2], [0.25, 0.025, 0.2]),
    ]
    .into_iter()
    .enumerate()
    {
        b.add_geom(GeomSpec { pos, ..g(&format!("wall{i}"), GeomKind::Box, size, WORLD) });
    }
    for i in 0..n {
        // Quadrants in turn, rising 6 cm per object, with a small twist for cubes.
        let (sx, sy) = [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)][i % 4];
        let jitter = 0.01 * ((i * 7 % 5) as f64 - 2.0);
        let pos = [sx * (0.1 + jitter), sy * (0.1 - jitter), 0.1 + 0.06 * i as f64];
        let angle = 0.4 * i as f64;
        let quat = if i % 2 == 1 { [(angle / 2.0).cos(), 0.1, 0.1, (angle / 2.0).sin()] } else { [1.0, 0.0, 0.0, 0.0] };
        let body = b.add_body(BodySpec { quat, ..BodySpec::new(&format!("obj{i:02}"), WORLD, pos) });
        b.add_joint(JointSpec::new(&format!("obj{i:02}_free"), JointKind::Free, body));
        if i % 2 == 0 {
            b.add_geom(g(&format!("obj{i:02}_geom"), GeomKind::Sphere, [0.05, 0.0, 0.0], body));
        } else {
            b.add_geom(g(&format!("obj{i:02}_geom"), GeomKind::Box, [0.04, 0.04, 0.04], body));
        }
    }
    b.build().expect("built-in clutter model is valid")
}
