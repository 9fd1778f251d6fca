//! Sweep-and-prune broadphase against the O(n²) reference
//! ([`brute_force_pairs`]) on random scenes of 200 geoms (all kinds incl.
//! planes, random contype/conaffinity masks and margins, parent–child
//! bodies), over consecutive updates with moving geoms (incremental
//! insertion sort) and teleports (large reorders). Also checks that the
//! bounding volumes are conservative: every analytic pair the broadphase
//! drops has no contact in the narrow phase.

mod common;

use cenic::collision::{BroadPhase, Manifold, brute_force_pairs, narrow_phase_pair};
use cenic::dynamics::{Data, kinematics};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Model, ModelBuilder, WORLD};
use common::Rng;

const NGEOM: usize = 200;

fn random_kind(rng: &mut Rng) -> GeomKind {
    let k =
        [GeomKind::Sphere, GeomKind::Capsule, GeomKind::Box, GeomKind::Cylinder, GeomKind::Ellipsoid, GeomKind::Mesh];
    k[(rng.next_u64() % k.len() as u64) as usize]
}

fn random_geom(rng: &mut Rng, b: &mut ModelBuilder, body: usize, mesh: usize) -> GeomSpec {
    let kind = random_kind(rng);
    let mut s = || rng.range(0.03, 0.15);
    let size = match kind {
        GeomKind::Sphere => [s(), 0.0, 0.0],
        GeomKind::Capsule | GeomKind::Cylinder => [s(), s(), 0.0],
        _ => [s(), s(), s()],
    };
    let mut g = GeomSpec::new("", kind, size, body);
    if kind == GeomKind::Mesh {
        g.mesh = Some(mesh);
    }
    g.pos = [rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), rng.range(-0.1, 0.1)];
    g.quat = rng.quat();
    // Masks: mostly colliding, some one-sided, some never.
    let masks = [1u32, 1, 1, 2, 3, 0];
    g.contype = masks[(rng.next_u64() % 6) as usize];
    g.conaffinity = masks[(rng.next_u64() % 6) as usize];
    if rng.uniform() < 0.2 {
        g.margin = rng.range(0.0, 0.05);
    }
    let _ = b;
    g
}

/// A random scene: 2 planes and a few static boxes on the world, the rest
/// on free bodies, some of which carry hinged children (parent–child pairs).
fn scene(seed: u64) -> Model {
    let mut rng = Rng::new(seed);
    let mut b = ModelBuilder::new("bp");
    b.options.margin = rng.range(0.0, 0.01);
    let mesh = b
        .add_mesh("tet", &[[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.12, 0.0], [0.0, 0.0, 0.08], [0.05, 0.05, 0.05]])
        .unwrap();
    let mut floor = GeomSpec::new("floor", GeomKind::Plane, [5.0, 5.0, 0.1], WORLD);
    floor.contype = 1;
    floor.conaffinity = 3;
    b.add_geom(floor);
    let mut wall = GeomSpec::new("wall", GeomKind::Plane, [5.0, 5.0, 0.1], WORLD);
    wall.pos = [0.9, 0.0, 0.0];
    wall.quat = [0.5f64.sqrt(), 0.0, -(0.5f64.sqrt()), 0.0]; // normal −x
    wall.margin = 0.02;
    b.add_geom(wall);
    for i in 0..4 {
        let mut g = GeomSpec::new("", GeomKind::Box, [0.3, 0.05, 0.2], WORLD);
        g.pos = [-0.6 + 0.4 * i as f64, 0.7, 0.2];
        b.add_geom(g);
    }
    let mut parent: Option<usize> = None;
    while b.geom_count() < NGEOM {
        let child = parent.is_some() && rng.uniform() < 0.5;
        let body = if child {
            let p = parent.unwrap();
            let body = b.add_body(BodySpec::new("", p, [0.12, 0.0, 0.0]));
            let mut j = JointSpec::new("", JointKind::Hinge, body);
            j.axis = [0.0, 1.0, 0.0];
            b.add_joint(j);
            body
        } else {
            let body = b.add_body(BodySpec::new("", WORLD, [0.0, 0.0, 0.5]));
            b.add_joint(JointSpec::new("", JointKind::Free, body));
            parent = Some(body);
            body
        };
        let ng = 1 + (rng.next_u64() % 3) as usize;
        for _ in 0..ng.min(NGEOM - b.geom_count()) {
            let g = random_geom(&mut rng, &mut b, body, mesh);
            b.add_geom(g);
        }
    }
    b.build().unwrap()
}

/// Random poses: free bodies in a 1.6 × 1.6 × 0.8 m region straddling the
/// floor and the wall, random orientations and hinge angles.
fn set_random_poses(model: &Model, data: &mut Data<f64>, rng: &mut Rng) {
    for j in &model.joints {
        let a = j.qpos_adr;
        match j.kind {
            JointKind::Free => {
                data.q[a] = rng.range(-0.8, 1.0);
                data.q[a + 1] = rng.range(-0.8, 0.8);
                data.q[a + 2] = rng.range(-0.1, 0.7);
                let q = rng.quat();
                data.q[a + 3..a + 7].copy_from_slice(&q);
            }
            JointKind::Hinge => data.q[a] = rng.range(-3.0, 3.0),
            _ => {}
        }
    }
}

/// Small motion of every free body (a few mm, a few degrees).
fn nudge(model: &Model, data: &mut Data<f64>, rng: &mut Rng) {
    for j in &model.joints {
        let a = j.qpos_adr;
        match j.kind {
            JointKind::Free => {
                for k in 0..3 {
                    data.q[a + k] += rng.range(-0.01, 0.01);
                }
                for k in 3..7 {
                    data.q[a + k] += rng.range(-0.02, 0.02);
                }
            }
            JointKind::Hinge => data.q[a] += rng.range(-0.05, 0.05),
            _ => {}
        }
    }
}

fn sap_pairs(bp: &BroadPhase<f64>) -> Vec<(usize, usize)> {
    bp.pairs().iter().map(|&(a, b)| (a as usize, b as usize)).collect()
}

/// Analytic pairs dropped by the broadphase must have no contact.
/// The broadphase's pairs of `model` at qpos0, after checking that they
/// are the brute-force reference's.
fn pairs_at_rest(model: &Model) -> Vec<(usize, usize)> {
    let mut data = Data::<f64>::new(model);
    kinematics(model, &mut data);
    let mut bp = BroadPhase::<f64>::new(model);
    bp.update(model, &data, 0.0);
    let pairs = sap_pairs(&bp);
    assert_eq!(pairs, brute_force_pairs(model, &data, 0.0), "sweep and prune against brute force");
    pairs
}

fn check_conservative(model: &Model, data: &Data<f64>, pairs: &[(usize, usize)]) -> usize {
    let analytic = |k: GeomKind| matches!(k, GeomKind::Plane | GeomKind::Sphere | GeomKind::Capsule | GeomKind::Box);
    let mut m = Manifold::default();
    let mut checked = 0;
    let n = model.geoms.len();
    for a in 0..n {
        for b in a + 1..n {
            let (ka, kb) = (model.geoms[a].kind, model.geoms[b].kind);
            if !analytic(ka) || !analytic(kb) || !model.geoms_can_collide(a, b) || pairs.binary_search(&(a, b)).is_ok()
            {
                continue;
            }
            narrow_phase_pair(model, data, a, b, 0.0, &mut m);
            assert_eq!(m.len, 0, "pair ({a}, {b}) dropped by the broadphase has contacts {:?}", m.as_slice());
            checked += 1;
        }
    }
    checked
}

#[test]
fn sweep_and_prune_matches_brute_force() {
    for seed in [1u64, 2, 3, 4] {
        let model = scene(seed);
        assert_eq!(model.geoms.len(), NGEOM);
        assert!(model.geoms.iter().any(|g| g.kind == GeomKind::Plane));
        let mut data = Data::<f64>::new(&model);
        let mut rng = Rng::new(100 + seed);
        let mut bp = BroadPhase::<f64>::new(&model);
        let mut total = 0;
        let mut filtered_out = 0;
        let mut buffer = core::ptr::null();
        for frame in 0..40 {
            if frame == 0 || frame == 20 {
                set_random_poses(&model, &mut data, &mut rng); // teleport: large reorder
            } else {
                nudge(&model, &mut data, &mut rng);
            }
            kinematics(&model, &mut data);
            bp.update(&model, &data, 0.0);
            // Small motions reuse the pair buffer (no allocation per update).
            if frame == 1 {
                buffer = bp.pairs().as_ptr();
            } else if (2..20).contains(&frame) {
                assert_eq!(bp.pairs().as_ptr(), buffer, "pair buffer reallocated at frame {frame}");
            }
            let got = sap_pairs(&bp);
            let want = brute_force_pairs(&model, &data, 0.0);
            assert_eq!(got, want, "seed {seed} frame {frame}: sweep and prune differs from brute force");
            assert!(got.windows(2).all(|w| w[0] < w[1]), "pairs must be sorted and unique");
            for &(a, b) in &got {
                assert!(a < b && model.geoms_can_collide(a, b));
                assert!(!(model.geoms[a].kind == GeomKind::Plane && model.geoms[b].kind == GeomKind::Plane));
            }
            total += got.len();
            if frame % 10 == 0 {
                check_conservative(&model, &data, &want);
            }
            // Close pairs removed by the filters (masks, parent–child, same body, both static).
            for a in 0..NGEOM {
                for b in a + 1..NGEOM {
                    let d = (data.geom_xpos[a] - data.geom_xpos[b]).norm();
                    if d < 0.1 && !model.geoms_can_collide(a, b) {
                        filtered_out += 1;
                    }
                }
            }
        }
        eprintln!("seed {seed}: {} pairs per frame on average, {filtered_out} close pairs filtered", total / 40);
        assert!(total / 40 > 50, "scene too sparse to test anything: {} pairs per frame", total / 40);
        assert!(filtered_out > 0);
    }
}

#[test]
fn filters_masks_parent_child_and_static() {
    let mut b = ModelBuilder::new("filters");
    b.add_geom(GeomSpec::new("floor", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD));
    let mut s = GeomSpec::new("static", GeomKind::Box, [0.1, 0.1, 0.1], WORLD);
    s.pos = [0.0, 0.0, 0.05];
    b.add_geom(s);
    let p = b.add_body(BodySpec::new("parent", WORLD, [0.0, 0.0, 0.1]));
    b.add_joint(JointSpec::new("", JointKind::Free, p));
    b.add_geom(GeomSpec::new("pg", GeomKind::Sphere, [0.1, 0.0, 0.0], p));
    let c = b.add_body(BodySpec::new("child", p, [0.05, 0.0, 0.0]));
    b.add_joint(JointSpec::new("", JointKind::Hinge, c));
    b.add_geom(GeomSpec::new("cg", GeomKind::Sphere, [0.1, 0.0, 0.0], c));
    let o = b.add_body(BodySpec::new("other", WORLD, [0.0, 0.05, 0.1]));
    b.add_joint(JointSpec::new("", JointKind::Free, o));
    let mut og = GeomSpec::new("og", GeomKind::Sphere, [0.1, 0.0, 0.0], o);
    og.contype = 2;
    og.conaffinity = 2; // collides only with itself's kind of mask: nobody here
    b.add_geom(og);
    // floor–static (both static), parent–child and the masked geom are out.
    assert_eq!(pairs_at_rest(&b.build().unwrap()), vec![(0, 2), (0, 3), (1, 2), (1, 3)]);
}

#[test]
fn planes_pair_only_with_geoms_reaching_them() {
    let mut b = ModelBuilder::new("plane");
    b.options.margin = 0.01;
    b.add_geom(GeomSpec::new("floor", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD));
    for (i, z) in [0.05, 0.115, 0.125, 1.0].into_iter().enumerate() {
        let body = b.add_body(BodySpec::new(&format!("b{i}"), WORLD, [3.0 * i as f64, 0.0, z]));
        b.add_joint(JointSpec::new("", JointKind::Free, body));
        b.add_geom(GeomSpec::new("", GeomKind::Sphere, [0.1, 0.0, 0.0], body));
    }
    // Spheres (r 0.1) at heights 0.05 (overlapping), 0.115 (within both
    // inflations, 0.01 each), 0.125 (beyond), 1.0 (far).
    assert_eq!(pairs_at_rest(&b.build().unwrap()), vec![(0, 1), (0, 2)]);
}

/// Geoms that may collide with the floor only (gymnasium's ant: its legs
/// have contype 1 and conaffinity 0, the floor conaffinity 1) stay out of
/// the sweep but still pair with the floor; a geom that may collide with
/// nothing gets no pair at all, even where its box overlaps others.
#[test]
fn geoms_that_pair_with_planes_only_skip_the_sweep() {
    let mut b = ModelBuilder::new("legs");
    let mut floor = GeomSpec::new("floor", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD);
    (floor.contype, floor.conaffinity) = (1, 1);
    b.add_geom(floor);
    let body = b.add_body(BodySpec::new("torso", WORLD, [0.0, 0.0, 0.05]));
    b.add_joint(JointSpec::new("", JointKind::Free, body));
    // Three overlapping legs touching the floor, and a visual-only geom.
    for (i, masks) in [(1, 0), (1, 0), (1, 0), (0, 0)].into_iter().enumerate() {
        let leg = b.add_body(BodySpec::new(&format!("leg{i}"), body, [0.02 * i as f64, 0.0, 0.0]));
        b.add_joint(JointSpec::new("", JointKind::Hinge, leg));
        let mut g = GeomSpec::new("", GeomKind::Sphere, [0.1, 0.0, 0.0], leg);
        (g.contype, g.conaffinity) = masks;
        b.add_geom(g);
    }
    assert_eq!(pairs_at_rest(&b.build().unwrap()), vec![(0, 1), (0, 2), (0, 3)]);
}
