//! Height fields against MuJoCo 4.0.0 (fixtures of `scripts/mujoco_hfield.py`
//! in `tests/fixtures/mujoco/features_more/`): the elevation data read from
//! inline values, PNG and MuJoCo's binary files; the contacts (φ, normal,
//! point) of a sphere, a capsule and a box resting on and sliding over a
//! bumpy field; a ball rolling down a sloped field (trajectory against
//! MuJoCo's RK4 at 0.1 ms); and the analytic height of a flat field.

mod mujoco_fixture;

use cenic::collision::{Contacts, collide};
use cenic::dynamics::{self, Data};
use cenic::integrator::{CenicParams, Mode, World};
use cenic::math::Vec3;
use cenic::model::{GeomKind, Model};
use mujoco_fixture as fx;
use std::path::PathBuf;
use std::sync::Arc;

fn model(name: &str) -> Model {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/models/features").join(format!("{name}.xml"));
    Model::from_mjcf_file(&p).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The elevation data MuJoCo compiles from each source, bit for bit.
#[test]
fn elevation_data_matches_mujoco() {
    let m = model("hfield_files");
    let f = fx::load_from("mujoco/features_more", "hfield_data");
    let fields = f["fields"].as_array().unwrap();
    assert_eq!(m.hfields.len(), fields.len());
    for (h, want) in m.hfields.iter().zip(fields) {
        assert_eq!(h.name, want["name"].as_str().unwrap());
        assert_eq!((h.nrow, h.ncol), (fx::u(&want["nrow"]), fx::u(&want["ncol"])), "{}", h.name);
        assert_eq!(h.size.to_vec(), fx::vec(&want["size"]), "{}", h.name);
        // Single precision, bit for bit (the JSON holds them as doubles).
        let theirs: Vec<f32> = fx::vec(&want["data"]).iter().map(|&x| x as f32).collect();
        assert_eq!(h.data, theirs, "{}: elevations", h.name);
    }
    // The inline field of the bumps model: its flipped rows and normalisation
    // give the heights MuJoCo's contacts are computed on (checked below), and
    // the geom's size is MuJoCo's geom_size.
    let m = model("hfield_bumps");
    let g = &m.geoms[m.geom_id("terrain").unwrap()];
    assert_eq!(g.kind, GeomKind::Hfield);
    assert_eq!(g.size, [1.0, 1.0, 0.25 * 0.12 + 0.5 * 0.1]);
}

/// One MuJoCo contact: geoms, φ, point, normal (from the field to the geom).
struct MjContact {
    geom: [String; 2],
    dist: f64,
    pos: [f64; 3],
    normal: [f64; 3],
}

/// Contacts of the sphere, capsule and box on the bumpy field at MuJoCo's
/// states, resting and sliding: the same number per pair as MuJoCo. Sphere
/// and capsule contacts: each MuJoCo contact has a cenic contact (the
/// nearest point) with the same φ, point and (opposite: cenic's normal
/// points into the field) normal. Box contacts: each prism's φ and normal
/// are its exact penetration by the separating-axis theorem (the fixture's
/// `exact`, computed independently in the script), which MuJoCo's EPA does
/// not always reach on these polytope pairs (it stops at a repeated support
/// point, reporting a shallower depth).
#[test]
fn bumpy_field_contacts_match_mujoco() {
    let m = model("hfield_bumps");
    let f = fx::load_from("mujoco/features_more", "hfield_contacts");
    let mut d = Data::<f64>::new(&m);
    let mut contacts = Contacts::new(&m);
    let (mut worst_phi, mut worst_n, mut worst_p, mut total) = (0.0f64, 0.0f64, 0.0f64, 0);
    let (mut box_phi, mut box_n, mut box_total, mut mujoco_box_phi) = (0.0f64, 0.0f64, 0, 0.0f64);
    let mut kinds = std::collections::HashSet::new();
    for (si, st) in f["states"].as_array().unwrap().iter().enumerate() {
        d.q.copy_from_slice(&fx::vec(&st["qpos"]));
        dynamics::kinematics(&m, &mut d);
        contacts.skin = 0.0;
        collide(&m, &d, &mut contacts);
        let want: Vec<MjContact> = st["contacts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| MjContact {
                geom: [c["geom"][0].as_str().unwrap().into(), c["geom"][1].as_str().unwrap().into()],
                dist: fx::f(&c["dist"]),
                pos: fx::arr::<3>(&c["pos"]),
                normal: fx::arr::<3>(&c["normal"]),
            })
            .collect();
        let ours: Vec<_> = contacts.list.iter().filter(|c| c.dist < 0.0).collect();
        let label = format!("state {si} ({} {})", st["kind"].as_str().unwrap(), st["body"].as_str().unwrap());
        assert_eq!(ours.len(), want.len(), "{label}: {} cenic contacts, MuJoCo {}", ours.len(), want.len());
        if let Some(exact) = st.get("exact") {
            // The box: prism by prism against the exact penetration.
            let exact = exact.as_array().unwrap();
            assert_eq!(exact.len(), ours.len(), "{label}: prisms");
            for e in exact {
                let prism = fx::u(&e[0]) as u32;
                let c = ours
                    .iter()
                    .find(|c| c.feature[1] == prism)
                    .unwrap_or_else(|| panic!("{label}: no cenic contact on prism {prism}"));
                let n = Vec3::from_array(fx::arr::<3>(&e[2]));
                box_phi = box_phi.max((c.dist + fx::f(&e[1])).abs());
                box_n = box_n.max((c.normal + n).norm());
                assert!((c.dist + fx::f(&e[1])).abs() < 1e-9, "{label}: prism {prism} φ {} vs −{}", c.dist, e[1]);
                assert!((c.normal + n).norm() < 1e-6, "{label}: prism {prism} normal {:?} vs −{n:?}", c.normal);
                box_total += 1;
            }
            // MuJoCo's depths are lower bounds of the exact ones (EPA stopped
            // early): sorted, each is at most the exact one of the same rank.
            let mut theirs: Vec<f64> = want.iter().map(|w| -w.dist).collect();
            let mut exact_depths: Vec<f64> = exact.iter().map(|e| fx::f(&e[1])).collect();
            theirs.sort_by(f64::total_cmp);
            exact_depths.sort_by(f64::total_cmp);
            for (t, e) in theirs.iter().zip(&exact_depths) {
                assert!(*t <= e + 1e-9, "{label}: MuJoCo depth {t} beyond the exact {e}");
                mujoco_box_phi = mujoco_box_phi.max(e - t);
            }
            kinds.insert(GeomKind::Box);
            continue;
        }
        for w in &want {
            assert_eq!(w.geom[0], "terrain", "{label}");
            let g = m.geom_id(&w.geom[1]).unwrap();
            kinds.insert(m.geoms[g].kind);
            let p = Vec3::from_array(w.pos);
            let c = ours
                .iter()
                .filter(|c| c.geom.contains(&g))
                .min_by(|a, b| (a.pos - p).norm().total_cmp(&(b.pos - p).norm()))
                .unwrap_or_else(|| panic!("{label}: no cenic contact for {}", w.geom[1]));
            let n = Vec3::from_array(w.normal);
            worst_phi = worst_phi.max((c.dist - w.dist).abs());
            worst_n = worst_n.max((c.normal + n).norm());
            worst_p = worst_p.max((c.pos - p).norm());
            assert!((c.dist - w.dist).abs() < 1e-9, "{label}: φ {} vs MuJoCo {}", c.dist, w.dist);
            assert!((c.normal + n).norm() < 1e-7, "{label}: normal {:?} vs MuJoCo −{n:?}", c.normal);
            assert!((c.pos - p).norm() < 1e-7, "{label}: point {:?} vs MuJoCo {p:?}", c.pos);
            total += 1;
        }
    }
    eprintln!(
        "spheres and capsules, {total} contacts against MuJoCo: max |Δφ| {worst_phi:.2e} m, max |Δn| {worst_n:.2e}, \
         max |Δpoint| {worst_p:.2e} m"
    );
    eprintln!(
        "boxes, {box_total} prism contacts against the exact penetration: max |Δφ| {box_phi:.2e} m, max |Δn| \
         {box_n:.2e}; MuJoCo's box depths are up to {mujoco_box_phi:.2e} m shallower (sorted, rank by rank)"
    );
    assert!(kinds.contains(&GeomKind::Sphere) && kinds.contains(&GeomKind::Capsule) && kinds.contains(&GeomKind::Box));
    assert!(total > 60 && box_total > 60, "{total} {box_total}");
}

/// A ball rolls down a 5° field from rest, across a grid line and onto a
/// triangle's diagonal: cenic's trajectory follows MuJoCo's (RK4 at 0.1 ms)
/// to within a millimetre, and while it rolls on one triangle both follow
/// a solid sphere rolling without slipping (x = x0 − ½·(5/7)·g·sin θ·t²).
#[test]
fn ball_rolls_down_a_sloped_field_like_mujoco() {
    let m = Arc::new(model("hfield_slope"));
    let f = fx::load_from("mujoco/features_more", "hfield_roll");
    let mut world =
        World::<f64>::new(m.clone(), Mode::ErrorControlled(CenicParams { accuracy: 1e-4, ..Default::default() }));
    let theta = (0.35f64 / 4.0).atan();
    let a = 5.0 / 7.0 * 9.81 * theta.sin();
    let (mut t, mut worst, mut worst_roll) = (0.0, 0.0f64, 0.0f64);
    for s in f["samples"].as_array().unwrap() {
        let ts = fx::f(&s["time"]);
        if ts > t {
            world.advance(ts - t).unwrap_or_else(|e| panic!("t = {t}: {}", e.describe(&m)));
            t = ts;
        }
        let q = fx::vec(&s["qpos"]);
        let x = world.sim.data.q[0];
        let err = (0..3).map(|k| (world.sim.data.q[k] - q[k]).abs()).fold(0.0, f64::max);
        worst = worst.max(err);
        let roll = 1.0 - 0.5 * a * ts * ts;
        if ts <= 0.7 {
            worst_roll = worst_roll.max((x - roll).abs());
        }
        eprintln!("t = {ts:.2}: x = {x:.5} (MuJoCo {:.5}, rolling sphere {roll:.5}), |Δpos| = {err:.2e} m", q[0]);
    }
    eprintln!("largest |Δpos| against MuJoCo {worst:.2e} m, |Δx| against rolling (t ≤ 0.7 s) {worst_roll:.2e} m");
    assert!(worst < 2e-3, "largest |Δpos| against MuJoCo {worst:.2e} m");
    assert!(worst_roll < 2e-3, "largest |Δx| against the rolling sphere {worst_roll:.2e} m");
}

/// A flat field at height h: a sphere's contact is the plane contact,
/// φ = centre height − h − r, normal −z, anywhere over the field.
#[test]
fn flat_field_contact_is_analytic() {
    let xml = r#"<mujoco>
  <asset><hfield name="flat" nrow="4" ncol="5" size="1 0.8 0.3 0.2" elevation="1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"/></asset>
  <worldbody>
    <geom name="field" type="hfield" hfield="flat" pos="0 0 0.1"/>
    <body name="ball" pos="0 0 1"><freejoint/><geom name="ball" size="0.1"/></body>
  </worldbody>
</mujoco>"#;
    let m = Model::from_mjcf_str(xml).unwrap();
    let mut d = Data::<f64>::new(&m);
    let mut contacts = Contacts::new(&m);
    // All samples equal: normalised to 0 (MuJoCo: no range), so the surface is the geom's z.
    for (x, y, z) in [(0.13, -0.2, 0.195), (0.5, 0.51, 0.199), (-0.85, 0.62, 0.17)] {
        d.q[0..3].copy_from_slice(&[x, y, z]);
        dynamics::kinematics(&m, &mut d);
        collide(&m, &d, &mut contacts);
        assert!(!contacts.list.is_empty(), "no contact at ({x}, {y}, {z})");
        for c in &contacts.list {
            assert!((c.dist - (z - 0.1 - 0.1)).abs() < 1e-9, "φ {} at ({x}, {y}, {z})", c.dist);
            assert!((c.normal - Vec3::new(0.0, 0.0, -1.0)).norm() < 1e-9, "{:?}", c.normal);
            assert!((c.pos.z - (0.1 + 0.5 * (z - 0.2))).abs() < 1e-9 + 0.5 * 1e-9, "{:?}", c.pos);
        }
    }
}

/// Every kind on a flat field, far from the prisms' side walls (the field is
/// one cell, the geoms well inside one of its two triangles): one contact,
/// whose φ is the depth of the geom's lowest point below the surface, with
/// the surface normal, for random orientations of a sphere, capsule, box,
/// cylinder, ellipsoid and convex mesh.
#[test]
fn every_kind_on_a_flat_field_reaches_its_lowest_point() {
    let xml = r#"<mujoco>
  <asset>
    <hfield name="flat" nrow="2" ncol="2" size="1 1 0.2 0.1"/>
    <mesh name="hull" vertex="0 0 0.1  0.08 0 -0.05  -0.06 0.07 -0.04  -0.05 -0.06 -0.06  0.02 0.03 0.08"/>
  </asset>
  <worldbody>
    <geom name="field" type="hfield" hfield="flat" pos="0.05 -0.02 0.3" euler="3 -2 20"/>
    <body pos="0 0 1"><freejoint/><geom name="g" type="sphere" size="0.07"/></body>
    <body pos="0 0 2"><freejoint/><geom name="g1" type="capsule" size="0.04 0.06"/></body>
    <body pos="0 0 3"><freejoint/><geom name="g2" type="box" size="0.05 0.04 0.03"/></body>
    <body pos="0 0 4"><freejoint/><geom name="g3" type="cylinder" size="0.05 0.04"/></body>
    <body pos="0 0 5"><freejoint/><geom name="g4" type="ellipsoid" size="0.06 0.04 0.05"/></body>
    <body pos="0 0 6"><freejoint/><geom name="g5" type="mesh" mesh="hull"/></body>
  </worldbody>
</mujoco>"#;
    let m = Model::from_mjcf_str(xml).unwrap();
    let field = m.geom_id("field").unwrap();
    let mut d = Data::<f64>::new(&m);
    let mut contacts = Contacts::new(&m);
    let mut rng = 7u64;
    let mut uniform = || {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut kinds = 0;
    for g in 1..m.geoms.len() {
        let b = m.geoms[g].body;
        let a = m.joints[m.bodies[b].jnt_adr].qpos_adr;
        for _ in 0..40 {
            // Park every body far away, then place this one.
            for j in &m.joints {
                d.q[j.qpos_adr..j.qpos_adr + 3].copy_from_slice(&[5.0, 5.0, 5.0 + j.qpos_adr as f64]);
            }
            let q = [uniform() - 0.5, uniform() - 0.5, uniform() - 0.5, uniform() - 0.5];
            let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
            d.q[a + 3..a + 7].copy_from_slice(&q.map(|x| x / n));
            d.q[a..a + 3].copy_from_slice(&[0.4 + 0.2 * uniform() - 0.1, -0.45 + 0.2 * uniform() - 0.1, 0.0]);
            // Lower it so that its lowest point is 1 mm to 1 cm below the surface.
            dynamics::kinematics(&m, &mut d);
            let up = d.geom_xmat[field].col(2);
            let s = cenic::collision::Shape::of_geom(&m, &d, g);
            let (low, _) = cenic::collision::support::support(&s, -up);
            let depth = 0.001 + 0.009 * uniform();
            let h = up.dot(low - d.geom_xpos[field]);
            for k in 0..3 {
                d.q[a + k] -= up[k] * (h + depth);
            }
            dynamics::kinematics(&m, &mut d);
            contacts.skin = 0.0;
            collide(&m, &d, &mut contacts);
            let ours: Vec<_> = contacts.list.iter().filter(|c| c.geom.contains(&g)).collect();
            let kind = m.geoms[g].kind.name();
            assert_eq!(ours.len(), 1, "{kind}");
            assert!((ours[0].dist + depth).abs() < 1e-9, "{kind}: φ {}, lowest point {depth} m below", ours[0].dist);
            assert!((ours[0].normal + up).norm() < 1e-6, "{kind}: normal {:?}", ours[0].normal);
        }
        kinds += 1;
    }
    assert_eq!(kinds, 6);
}
