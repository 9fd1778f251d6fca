// Solver state of the serial stage with the factor in a private array of
// SOLVER_NV × SOLVER_NV floats per thread (src/gpu/icf.rs
// SolverState::Private; SOLVER_NV generated with the variant). The vectors
// stay in the storage buffers (icf_vec_storage.wgsl). solver_load brings the
// factor in when `factor`, solver_store writes it back when `factor`.

var<private> solver_fac: array<f32, SOLVER_NV * SOLVER_NV>;

fn fac(w: u32, i: u32, j: u32) -> f32 {
    return solver_fac[i * SOLVER_NV + j];
}
fn set_fac(w: u32, i: u32, j: u32, x: f32) {
    solver_fac[i * SOLVER_NV + j] = x;
}
fn solver_load(w: u32, lid: u32, factor: bool) {
    if (factor) {
        for (var i = 0u; i < dims.nv; i++) {
            for (var j = 0u; j < dims.nv; j++) {
                solver_fac[i * SOLVER_NV + j] = icf_factor[fac_at(w, i, j)];
            }
        }
    }
}
fn solver_store(w: u32, lid: u32, factor: bool) {
    if (factor) {
        for (var i = 0u; i < dims.nv; i++) {
            for (var j = 0u; j < dims.nv; j++) {
                icf_factor[fac_at(w, i, j)] = solver_fac[i * SOLVER_NV + j];
            }
        }
    }
}
