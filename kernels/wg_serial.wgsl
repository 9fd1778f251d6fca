// icf_cost.wgsl's and icf_solver.wgsl's workgroup helpers for one thread
// per world (SOLVER_THREADS = 1): every "workgroup" reduction and broadcast
// is the identity and no barrier is needed. Composed in front of the stages
// that run the ICF math serially (src/gpu/icf.rs WG_SERIAL).

/// Threads per world.
const SOLVER_THREADS: u32 = 1u;

fn wg_sum(lid: u32, x: vec4f) -> vec4f {
    return x;
}
fn wg_max(lid: u32, x: f32) -> f32 {
    return x;
}
fn wg_bcast_u32(lid: u32, x: u32) -> u32 {
    return x;
}
fn wg_bcast_f32(lid: u32, x: f32) -> f32 {
    return x;
}
fn wg_sync() {}
