//! Narrow-phase throughput of the convex routines (pairs with a cylinder,
//! ellipsoid or convex mesh): queries per second at random near-contact
//! poses, φ uniform in [−0.02, 0.04] m with a 0.05 m margin (shapes 0.1–0.5 m,
//! hulls of 12–24 random points), in f64 and f32.
//!
//! `cargo bench --bench convex -- --warm-up-time 1 --measurement-time 2`

#[path = "../tests/common/mod.rs"]
mod common;

use cenic::collision::{CONVEX_PAIRS, Manifold, Shape, convex_separation, narrow_phase_fn, support};
use cenic::math::{Mat3, Quat, Vec3};
use cenic::model::{ConvexMesh, GeomKind};
use common::Rng;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const MARGIN: f64 = 0.05;
const POSES: usize = 256;

fn random_size(kind: GeomKind, rng: &mut Rng) -> Vec3<f64> {
    let mut r = || rng.range(0.1, 0.5);
    match kind {
        GeomKind::Plane => Vec3::new(1.0, 1.0, 0.1),
        GeomKind::Sphere => Vec3::new(r(), 0.0, 0.0),
        GeomKind::Capsule => Vec3::new(0.5 * r(), r(), 0.0),
        GeomKind::Mesh => Vec3::splat(1.0),
        _ => Vec3::new(r(), r(), r()),
    }
}

fn random_rot(rng: &mut Rng) -> Mat3<f64> {
    let q = rng.quat();
    Quat::new(q[0], q[1], q[2], q[3]).to_mat3()
}

/// Poses of the pair with φ uniform in [−0.02, 0.04] m (bisection along a random direction).
fn poses<'m>(ka: GeomKind, kb: GeomKind, meshes: &'m [ConvexMesh], seed: u64) -> Vec<(Shape<'m, f64>, Shape<'m, f64>)> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(POSES);
    while out.len() < POSES {
        let pick = |k: GeomKind, rng: &mut Rng| {
            (k == GeomKind::Mesh).then(|| &meshes[(rng.next_u64() % meshes.len() as u64) as usize])
        };
        let (ma, mb) = (pick(ka, &mut rng), pick(kb, &mut rng));
        let a = Shape {
            kind: ka,
            size: random_size(ka, &mut rng),
            mesh: ma,
            hfield: None,
            prism: None,
            pos: Vec3::zero(),
            rot: random_rot(&mut rng),
        };
        let mut b = Shape {
            kind: kb,
            size: random_size(kb, &mut rng),
            mesh: mb,
            hfield: None,
            prism: None,
            pos: Vec3::zero(),
            rot: random_rot(&mut rng),
        };
        let target = rng.range(-0.02, 0.04);
        if ka == GeomKind::Plane {
            let n = a.rot.col(2);
            let (low, _) = support::support(&b, -n);
            b.pos = n * (target - n.dot(low)) + n.any_orthonormal() * rng.range(-1.0, 1.0);
        } else {
            let u = Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize();
            let phi = |t: f64| {
                let bt = Shape { pos: u * t, ..b };
                convex_separation(&a, &bt, 10.0).map_or(10.0, |s| s.dist)
            };
            let (mut lo, mut hi) = (0.0, 3.0);
            if phi(lo) > target {
                continue;
            }
            for _ in 0..50 {
                let mid = 0.5 * (lo + hi);
                if phi(mid) < target { lo = mid } else { hi = mid }
            }
            b.pos = u * (0.5 * (lo + hi));
        }
        out.push((a, b));
    }
    out
}

fn cast<'m>(s: &Shape<'m, f64>) -> Shape<'m, f32> {
    let mut rot = Mat3::<f32>::zero();
    for i in 0..3 {
        for j in 0..3 {
            rot.m[i][j] = s.rot.m[i][j] as f32;
        }
    }
    Shape { kind: s.kind, size: s.size.cast(), mesh: s.mesh, hfield: None, prism: None, pos: s.pos.cast(), rot }
}

fn bench(c: &mut Criterion) {
    let mut rng = Rng::new(0xbe_ec);
    let meshes: Vec<ConvexMesh> = (0..8)
        .map(|i| {
            let n = 12 + 2 * i;
            let pts: Vec<[f64; 3]> =
                (0..n).map(|_| [0.25 * rng.normal(), 0.2 * rng.normal(), 0.15 * rng.normal()]).collect();
            ConvexMesh::from_points("hull", &pts).unwrap()
        })
        .collect();
    let sets: Vec<_> =
        CONVEX_PAIRS.iter().enumerate().map(|(i, &(ka, kb))| poses(ka, kb, &meshes, 1000 + i as u64)).collect();
    let mut g = c.benchmark_group("convex_f64");
    g.throughput(Throughput::Elements(POSES as u64));
    for (&(ka, kb), set) in CONVEX_PAIRS.iter().zip(&sets) {
        let f = narrow_phase_fn::<f64>(ka, kb);
        g.bench_function(format!("{}-{}", ka.name(), kb.name()), |bch| {
            let mut m = Manifold::default();
            bch.iter(|| {
                let mut n = 0;
                for (a, b) in set {
                    m.clear();
                    f(black_box(a), black_box(b), MARGIN, &mut m);
                    n += m.len;
                }
                n
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("convex_f32");
    g.throughput(Throughput::Elements(POSES as u64));
    for (&(ka, kb), set) in CONVEX_PAIRS.iter().zip(&sets) {
        let f = narrow_phase_fn::<f32>(ka, kb);
        let set32: Vec<_> = set.iter().map(|(a, b)| (cast(a), cast(b))).collect();
        g.bench_function(format!("{}-{}", ka.name(), kb.name()), |bch| {
            let mut m = Manifold::default();
            bch.iter(|| {
                let mut n = 0;
                for (a, b) in &set32 {
                    m.clear();
                    f(black_box(a), black_box(b), MARGIN as f32, &mut m);
                    n += m.len;
                }
                n
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
