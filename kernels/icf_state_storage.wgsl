// Solver state in the storage buffers (src/gpu/icf.rs SolverState::Storage):
// the Hessian / Cholesky factor in icf_factor (world first), nothing to load
// or store around a solve launch. The vectors: icf_vec_storage.wgsl.

fn fac(w: u32, i: u32, j: u32) -> f32 {
    return icf_factor[fac_at(w, i, j)];
}
fn set_fac(w: u32, i: u32, j: u32, x: f32) {
    icf_factor[fac_at(w, i, j)] = x;
}
fn solver_load(w: u32, lid: u32, factor: bool) {}
fn solver_store(w: u32, lid: u32, factor: bool) {}
