//! A 0.1 m, 0.37 kg cube tossed onto a table, like the ContactNets cube:
//! one world, error-controlled integration, prints a trajectory summary.
//!
//! `cargo run --release --example cube_toss -- [ACCURACY]` (default 1e-3).

use cenic::integrator::{CenicParams, Mode, World};
use cenic::math::{Quat, Vec3};
use std::sync::Arc;

fn main() {
    let accuracy: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1e-3);
    let model = Arc::new(cenic::scenes::cube_toss());
    let mut world = World::<f64>::new(model, Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() }));
    world.sim.reset_to_keyframe("toss").expect("keyframe");
    println!("cube toss at accuracy {accuracy:e}");
    println!(
        "{:>6} {:>9} {:>9} {:>9} {:>8} {:>9} {:>8}",
        "t [s]", "x [m]", "y [m]", "z [m]", "tilt[°]", "|v| [m/s]", "contacts"
    );
    let start = std::time::Instant::now();
    for i in 0..=20 {
        if i > 0 {
            world.advance(0.1).expect("step failed");
        }
        let q = &world.sim.data.q;
        let v = &world.sim.data.v;
        // Tilt: angle between the world z axis and the nearest cube face normal.
        let up = Quat::from_slice(&q[3..7]).inv_rotate(Vec3::new(0.0, 0.0, 1.0));
        let tilt = up.x.abs().max(up.y.abs()).max(up.z.abs()).min(1.0).acos().to_degrees();
        let speed = Vec3::from_slice(&v[0..3]).norm();
        println!(
            "{:>6.2} {:>9.4} {:>9.4} {:>9.4} {:>8.2} {:>9.4} {:>8}",
            world.time(),
            q[0],
            q[1],
            q[2],
            tilt,
            speed,
            world.sim.contacts.len()
        );
    }
    let s = world.stats;
    println!(
        "{} accepted steps ({} rejected), h in [{:.2e}, {:.2e}] s, {} Newton iterations; wall {:.3} s",
        s.accepted,
        s.rejected,
        s.min_h,
        s.max_h,
        s.newton_iterations,
        start.elapsed().as_secs_f64()
    );
}
