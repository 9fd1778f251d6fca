// The serial ICF solver stage: icf_cost.wgsl and icf_solver.wgsl (composed
// in front, src/gpu/icf.rs SOLVE_SERIAL) run by one thread per world,
// WORKGROUP_SIZE worlds per workgroup (wg_serial.wgsl: SOLVER_THREADS = 1,
// every "workgroup" helper the identity, no barrier). For small
// problems (few dofs), where a cooperative workgroup would idle.

/// icf_cost::evaluate with the Hessian, one thread per world (parity tests).
/// Reads: icf_a, icf_vec (v), icf_con, icf_jac, icf_rows, icf_gain, icf_limit, icf_world, icf_dims; writes: icf_vec (grad), icf_factor (Hessian), icf_con (scratch), icf_world (cost).
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_evaluate_serial(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        evaluate_world(w, 0u);
    }
}

/// IcfSolver::solve, one thread per world.
/// Reads: icf_a, icf_vec (r, scale, warm start v), icf_con, icf_jac, icf_rows, icf_gain, icf_limit, icf_factor, icf_world, icf_params, icf_dims; writes: icf_vec (v1 and scratch), icf_factor, icf_con (scratch), icf_world (status, counts).
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_solve_serial(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        solve_world(w, 0u);
    }
}

/// icf_solve_serial for the worlds of the last listing
/// (icf_list_unfinished*, which sizes this launch: it runs indirectly).
/// Reads: as icf_solve_serial, icf_active; writes: as icf_solve_serial, icf_active (the most dispatches).
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_solve_serial_listed(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = listed_world(thread_index(gid, nwg));
    if (w < dims.nworld) {
        solve_world(w, 0u);
    }
}
