//! Collision benchmarks: narrow-phase queries per second for each
//! ordered geom-kind pair at random near-contact poses, and full `collide()`
//! (broadphase + narrow phase + materials) on the 20-object clutter scene.
//!
//! Run: `cargo bench --bench collision -- --warm-up-time 1 --measurement-time 3`.
//! Throughput is reported in elements/s = queries/s (narrow phase) or
//! `collide()` calls/s (clutter).

use std::hint::black_box;

use cenic::collision::{Contacts, Manifold, Shape, collide, narrow_phase_fn};
use cenic::dynamics::{Data, kinematics};
use cenic::math::{Mat3, Quat, Real, Vec3};
use cenic::model::{
    BodySpec, ConvexMesh, GeomKind, GeomSpec, JointKind, JointSpec, Material, Model, ModelBuilder, WORLD,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Kinds whose pairs are benchmarked. Only the analytic routines exist on
/// this branch; after merging the convex routines, add
/// `GeomKind::Cylinder, GeomKind::Ellipsoid, GeomKind::Mesh` here.
const BENCH_KINDS: &[GeomKind] = &[GeomKind::Plane, GeomKind::Sphere, GeomKind::Capsule, GeomKind::Box];

/// Poses per pair type (one criterion iteration runs them all).
const POSES: usize = 256;

/// Small deterministic RNG (SplitMix64).
struct Rng(u64);
impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    fn unit(&mut self) -> Vec3<f64> {
        loop {
            let v = Vec3::new(self.range(-1.0, 1.0), self.range(-1.0, 1.0), self.range(-1.0, 1.0));
            if v.norm() > 0.1 && v.norm() <= 1.0 {
                return v.normalize();
            }
        }
    }
    fn rot(&mut self) -> Mat3<f64> {
        let axis = self.unit();
        Quat::from_axis_angle(axis, self.range(0.0, std::f64::consts::TAU)).to_mat3()
    }
}

fn random_size(rng: &mut Rng, kind: GeomKind) -> Vec3<f64> {
    let mut s = || rng.range(0.03, 0.15);
    match kind {
        GeomKind::Plane => Vec3::new(1.0, 1.0, 0.1),
        GeomKind::Sphere => Vec3::new(s(), 0.0, 0.0),
        GeomKind::Capsule | GeomKind::Cylinder => Vec3::new(s(), s(), 0.0),
        _ => Vec3::new(s(), s(), s()),
    }
}

fn cast<T: Real>(s: &Shape<'static, f64>) -> Shape<'static, T> {
    let m = s.rot.m;
    let rot = Mat3::from_rows(m.map(|r| r.map(T::c)));
    Shape { kind: s.kind, size: s.size.cast(), mesh: s.mesh, hfield: None, prism: None, pos: s.pos.cast(), rot }
}

/// Deepest φ of the pair (m), with a margin large enough to always report.
fn phi(a: &Shape<'_, f64>, b: &Shape<'_, f64>) -> f64 {
    let mut m = Manifold::default();
    narrow_phase_fn::<f64>(a.kind, b.kind)(a, b, 10.0, &mut m);
    m.as_slice().iter().map(|p| p.dist).fold(f64::INFINITY, f64::min)
}

/// Random poses with φ ∈ [−5 mm, 5 mm]: B is moved along a random
/// direction from A until the narrow phase itself reports the target φ
/// (bisection), so any routine can be benchmarked the same way.
fn near_contact_poses(
    ka: GeomKind,
    kb: GeomKind,
    mesh: &'static ConvexMesh,
    seed: u64,
) -> Vec<(Shape<'static, f64>, Shape<'static, f64>)> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(POSES);
    let mk = |rng: &mut Rng, kind: GeomKind| Shape {
        kind,
        size: random_size(rng, kind),
        mesh: if kind == GeomKind::Mesh { Some(mesh) } else { None },
        hfield: None,
        prism: None,
        pos: Vec3::zero(),
        rot: rng.rot(),
    };
    while out.len() < POSES {
        let a = mk(&mut rng, ka);
        let mut b = mk(&mut rng, kb);
        let target = rng.range(-0.005, 0.005);
        let dir = rng.unit();
        let (mut lo, mut hi) = (0.0, 2.0);
        for _ in 0..50 {
            let mid = 0.5 * (lo + hi);
            b.pos = a.pos + dir * mid;
            if phi(&a, &b) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        b.pos = a.pos + dir * hi;
        if (phi(&a, &b) - target).abs() < 1e-3 {
            out.push((a, b));
        }
    }
    out
}

fn bench_narrow_phase(c: &mut Criterion) {
    let mesh: &'static ConvexMesh = Box::leak(Box::new(
        ConvexMesh::from_points(
            "bench",
            &[
                [0.05, 0.0, 0.0],
                [-0.05, 0.02, 0.0],
                [0.0, 0.06, 0.01],
                [0.0, -0.04, 0.05],
                [0.01, 0.0, -0.06],
                [0.03, 0.03, 0.03],
            ],
        )
        .unwrap(),
    ));
    let mut group = c.benchmark_group("narrow_phase");
    group.throughput(Throughput::Elements(POSES as u64));
    for (i, &ka) in BENCH_KINDS.iter().enumerate() {
        for &kb in &BENCH_KINDS[i..] {
            if ka == GeomKind::Plane && kb == GeomKind::Plane {
                continue;
            }
            let poses = near_contact_poses(ka, kb, mesh, 1000 + 10 * ka as u64 + kb as u64);
            let margin = 0.0;
            let name = format!("{}_{}", ka.name(), kb.name());
            let f64_fn = narrow_phase_fn::<f64>(ka, kb);
            group.bench_function(format!("{name}/f64"), |bch| {
                let mut m = Manifold::default();
                bch.iter(|| {
                    let mut n = 0;
                    for (a, b) in &poses {
                        m.clear();
                        f64_fn(a, b, margin, &mut m);
                        n += m.len;
                    }
                    black_box(n)
                })
            });
            let poses32: Vec<(Shape<'static, f32>, Shape<'static, f32>)> =
                poses.iter().map(|(a, b)| (cast::<f32>(a), cast::<f32>(b))).collect();
            let f32_fn = narrow_phase_fn::<f32>(ka, kb);
            group.bench_function(format!("{name}/f32"), |bch| {
                let mut m = Manifold::default();
                bch.iter(|| {
                    let mut n = 0;
                    for (a, b) in &poses32 {
                        m.clear();
                        f32_fn(a, b, 0.0, &mut m);
                        n += m.len;
                    }
                    black_box(n)
                })
            });
        }
    }
    group.finish();
}

/// The clutter scene of `shared/scenes/clutter20.xml` (floor, 4 walls,
/// 10 spheres r 0.05 m and 10 cubes of half-size 0.04 m, per-geom
/// stiffness 2e5 N/m, dissipation 10 s/m, μ 0.5), built in code (the MJCF
/// loader is not on this branch) with the objects at settled-looking poses:
/// a 4 × 4 bottom layer 0.5 mm into the floor and touching each other, and
/// 4 objects on top lowered until they are 0.5 mm into what is below.
fn clutter20() -> (Model, Data<f64>) {
    let mat = Material { stiffness: 2e5, dissipation: 10.0, mu_static: 0.5, mu_dynamic: 0.5, soft: None };
    let mut b = ModelBuilder::new("clutter20");
    let mut floor = GeomSpec::new("floor", GeomKind::Plane, [2.0, 2.0, 0.1], WORLD);
    floor.material = mat;
    b.add_geom(floor);
    for (i, (pos, size)) in [
        ([0.225, 0.0, 0.2], [0.025, 0.25, 0.2]),
        ([-0.225, 0.0, 0.2], [0.025, 0.25, 0.2]),
        ([0.0, 0.225, 0.2], [0.25, 0.025, 0.2]),
        ([0.0, -0.225, 0.2], [0.25, 0.025, 0.2]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut w = GeomSpec::new(&format!("wall{i}"), GeomKind::Box, size, WORLD);
        w.pos = pos;
        w.material = mat;
        b.add_geom(w);
    }
    let mut rng = Rng(20);
    let add = |b: &mut ModelBuilder, pos: [f64; 3], sphere: bool, rng: &mut Rng| {
        let k = b.body_count();
        let mut spec = BodySpec::new(&format!("obj{k:02}"), WORLD, pos);
        if !sphere {
            spec.quat = yaw_quat(rng.range(-0.3, 0.3));
        }
        let body = b.add_body(spec);
        b.add_joint(JointSpec::new("", JointKind::Free, body));
        let mut g = if sphere {
            let mut g = GeomSpec::new("", GeomKind::Sphere, [0.05, 0.0, 0.0], body);
            g.mass = Some(1000.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.05f64.powi(3)); // 0.5236 kg
            g
        } else {
            let mut g = GeomSpec::new("", GeomKind::Box, [0.04, 0.04, 0.04], body);
            g.mass = Some(0.512);
            g
        };
        g.material = mat;
        b.add_geom(g);
    };
    // Bottom layer: 4 × 4 grid with 0.0995 m spacing, spheres and cubes alternating.
    for i in 0..4 {
        for j in 0..4 {
            let sphere = (i + j) % 2 == 0;
            let (x, y) = (-0.14925 + 0.0995 * i as f64, -0.14925 + 0.0995 * j as f64);
            add(&mut b, [x, y, if sphere { 0.0495 } else { 0.0395 }], sphere, &mut rng);
        }
    }
    // Top layer: 2 spheres and 2 cubes in pockets of the bottom layer.
    let pockets = [(-0.0995, -0.0995), (0.0995, 0.0995), (-0.0995, 0.0995), (0.0995, -0.0995)];
    for (n, (x, y)) in pockets.into_iter().enumerate() {
        add(&mut b, [x, y, 0.4], n < 2, &mut rng);
    }
    let model = b.build().unwrap();
    let mut data = Data::<f64>::new(&model);
    let mut contacts = Contacts::new(&model);
    // Lower each top object (bisection on its z) until its deepest contact is 0.5 mm.
    for body in model.bodies.len() - 4..model.bodies.len() {
        let qz = model.joints[model.bodies[body].jnt_adr].qpos_adr + 2;
        let (mut lo, mut hi) = (0.0, 0.4);
        for _ in 0..50 {
            let mid = 0.5 * (lo + hi);
            data.q[qz] = mid;
            kinematics(&model, &mut data);
            collide(&model, &data, &mut contacts);
            let deepest =
                contacts.list.iter().filter(|c| c.body.contains(&body)).map(|c| c.dist).fold(f64::INFINITY, f64::min);
            if deepest < -0.0005 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        data.q[qz] = hi;
    }
    kinematics(&model, &mut data);
    (model, data)
}

/// Quaternion (w, x, y, z) of a rotation by `a` rad about z.
fn yaw_quat(a: f64) -> [f64; 4] {
    [(0.5 * a).cos(), 0.0, 0.0, (0.5 * a).sin()]
}

fn bench_clutter(c: &mut Criterion) {
    let (model, d64) = clutter20();
    let mut group = c.benchmark_group("clutter20_collide");
    group.throughput(Throughput::Elements(1));
    let mut c64 = Contacts::new(&model);
    collide(&model, &d64, &mut c64);
    eprintln!(
        "clutter20: {} geoms, {} contacts, {} candidate pairs",
        model.geoms.len(),
        c64.len(),
        c64.broadphase.pairs().len()
    );
    group.bench_function("f64", |bch| {
        bch.iter(|| {
            collide(&model, &d64, &mut c64);
            black_box(c64.len())
        })
    });
    let mut d32 = Data::<f32>::new(&model);
    d32.set_state(&d64.q.clone(), &[]);
    kinematics(&model, &mut d32);
    let mut c32 = Contacts::new(&model);
    group.bench_function("f32", |bch| {
        bch.iter(|| {
            collide(&model, &d32, &mut c32);
            black_box(c32.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench_narrow_phase, bench_clutter);
criterion_main!(benches);
