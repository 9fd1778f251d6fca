// The ICF solver's vectors (icf_vec) and A (icf_a) read and written in the
// storage buffers: the accessors icf_cost.wgsl and icf_solver.wgsl use, for
// the solver states that keep them there (src/gpu/icf.rs SolverState::Storage
// and SolverState::Private).

fn ivec(w: u32, row: u32, i: u32) -> f32 {
    return icf_vec[ivec_at(w, row, i)];
}
fn set_ivec(w: u32, row: u32, i: u32, x: f32) {
    icf_vec[ivec_at(w, row, i)] = x;
}
fn amat(w: u32, i: u32, j: u32) -> f32 {
    return icf_a[mass_at(w, i, j)];
}
