// The serial ICF solver stage: icf_cost.wgsl and icf_solver.wgsl (composed
// in front, src/gpu/shaders.rs STAGE_DEPS) run by one thread per world,
// WORKGROUP_SIZE worlds per workgroup (wg_serial.wgsl: SOLVER_THREADS = 1,
// every "workgroup" helper the identity, no barrier). For small
// problems (few dofs), where a cooperative workgroup would idle.

/// icf_cost::evaluate with the Hessian, one thread per world (parity tests).
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_evaluate_serial(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        evaluate_world(w, 0u);
    }
}

/// IcfSolver::solve, one thread per world.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_solve_serial(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        solve_world(w, 0u);
    }
}
