// Solver state of the cooperative stages in workgroup memory shared by the
// world's SOLVER_THREADS threads (src/gpu/icf.rs SolverState::Workgroup;
// SOLVER_NV generated with the variant): the factor, A (SOLVER_NV ×
// SOLVER_NV each) and the vectors (ICF_NVEC × SOLVER_NV). solver_load brings
// A and the vectors in (the factor too when `factor`); solver_store writes
// the vectors back (and the factor when `factor`).

var<workgroup> solver_fac: array<f32, SOLVER_NV * SOLVER_NV>;
var<workgroup> solver_a: array<f32, SOLVER_NV * SOLVER_NV>;
var<workgroup> solver_vec: array<f32, ICF_NVEC * SOLVER_NV>;

fn fac(w: u32, i: u32, j: u32) -> f32 {
    return solver_fac[i * SOLVER_NV + j];
}
fn set_fac(w: u32, i: u32, j: u32, x: f32) {
    solver_fac[i * SOLVER_NV + j] = x;
}
fn ivec(w: u32, row: u32, i: u32) -> f32 {
    return solver_vec[row * SOLVER_NV + i];
}
fn set_ivec(w: u32, row: u32, i: u32, x: f32) {
    solver_vec[row * SOLVER_NV + i] = x;
}
fn amat(w: u32, i: u32, j: u32) -> f32 {
    return solver_a[i * SOLVER_NV + j];
}
fn solver_load(w: u32, lid: u32, factor: bool) {
    for (var i = lid; i < dims.nv; i += SOLVER_THREADS) {
        for (var j = 0u; j < dims.nv; j++) {
            solver_a[i * SOLVER_NV + j] = icf_a[mass_at(w, i, j)];
            if (factor) {
                solver_fac[i * SOLVER_NV + j] = icf_factor[fac_at(w, i, j)];
            }
        }
        for (var row = 0u; row < ICF_NVEC; row++) {
            solver_vec[row * SOLVER_NV + i] = icf_vec[ivec_at(w, row, i)];
        }
    }
    workgroupBarrier();
}
fn solver_store(w: u32, lid: u32, factor: bool) {
    workgroupBarrier();
    for (var i = lid; i < dims.nv; i += SOLVER_THREADS) {
        for (var row = 0u; row < ICF_NVEC; row++) {
            icf_vec[ivec_at(w, row, i)] = solver_vec[row * SOLVER_NV + i];
        }
        if (factor) {
            for (var j = 0u; j < dims.nv; j++) {
                icf_factor[fac_at(w, i, j)] = solver_fac[i * SOLVER_NV + j];
            }
        }
    }
}
