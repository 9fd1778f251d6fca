// The cooperative ICF solver stage: icf_cost.wgsl and icf_solver.wgsl
// (composed in front, src/gpu/icf.rs SOLVE_COOP) run by one workgroup
// of SOLVER_THREADS threads per world. For large problems (dense nv × nv
// work per world); small ones use icf_solve_serial.wgsl, whose thread per
// world avoids the cost of barriers (which Mesa's llvmpipe pays per
// workgroup, ~15 µs, even when idle).

// SOLVER_THREADS, the threads per world of the cooperative kernels
// (icf_evaluate, icf_solve; one world per workgroup, a power of two for the
// tree reductions), is generated with the stage variant (src/gpu/icf.rs
// SolverVariant::threads: 16, or 64 in the wide stage).

/// Per-thread partial sums of a reduction, and the broadcast slots.
var<workgroup> wg_red: array<vec4f, SOLVER_THREADS>;
var<workgroup> wg_vec: vec4f;
var<workgroup> wg_f32: f32;
var<workgroup> wg_u32: u32;

/// Sum of x over the workgroup (a fixed tree, so the result is
/// deterministic), the same uniform value in every thread.
fn wg_sum(lid: u32, x: vec4f) -> vec4f {
    wg_red[lid] = x;
    workgroupBarrier();
    for (var s = SOLVER_THREADS / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            wg_red[lid] = wg_red[lid] + wg_red[lid + s];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        wg_vec = wg_red[0];
    }
    return workgroupUniformLoad(&wg_vec);
}

/// Largest x over the workgroup, uniform.
fn wg_max(lid: u32, x: f32) -> f32 {
    wg_red[lid] = vec4f(x);
    workgroupBarrier();
    for (var s = SOLVER_THREADS / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            wg_red[lid] = max(wg_red[lid], wg_red[lid + s]);
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        wg_vec = wg_red[0];
    }
    return workgroupUniformLoad(&wg_vec).x;
}

/// Thread 0's x, as a uniform value.
fn wg_bcast_u32(lid: u32, x: u32) -> u32 {
    if (lid == 0u) {
        wg_u32 = x;
    }
    return workgroupUniformLoad(&wg_u32);
}
fn wg_bcast_f32(lid: u32, x: f32) -> f32 {
    if (lid == 0u) {
        wg_f32 = x;
    }
    return workgroupUniformLoad(&wg_f32);
}

/// Makes every thread's storage writes visible to the workgroup.
fn wg_sync() {
    storageBarrier();
    workgroupBarrier();
}

/// The world of a cooperative launch (one workgroup per world, the launch
/// split over y above 65535 workgroups); uniform.
fn coop_world(wid: vec3u, nwg: vec3u) -> u32 {
    return wid.x + wid.y * nwg.x;
}

/// icf_cost::evaluate with the Hessian, one workgroup per world (parity tests).
/// Reads: as icf_evaluate_serial (icf_solve_serial.wgsl); writes: as icf_evaluate_serial.
@compute @workgroup_size(SOLVER_THREADS)
fn icf_evaluate(
    @builtin(workgroup_id) wid: vec3u,
    @builtin(num_workgroups) nwg: vec3u,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = coop_world(wid, nwg);
    if (w < dims.nworld) {
        evaluate_world(w, lid);
    }
}

/// IcfSolver::solve, one workgroup per world.
/// Reads: as icf_solve_serial (icf_solve_serial.wgsl); writes: as icf_solve_serial.
@compute @workgroup_size(SOLVER_THREADS)
fn icf_solve(
    @builtin(workgroup_id) wid: vec3u,
    @builtin(num_workgroups) nwg: vec3u,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = coop_world(wid, nwg);
    if (w < dims.nworld) {
        solve_world(w, lid);
    }
}

/// icf_solve for the worlds of the last listing (icf_list_unfinished*,
/// which sizes this launch: it runs indirectly), a workgroup per world.
/// Reads: as icf_solve, icf_active; writes: as icf_solve, icf_active (the most dispatches).
@compute @workgroup_size(SOLVER_THREADS)
fn icf_solve_listed(
    @builtin(workgroup_id) wid: vec3u,
    @builtin(num_workgroups) nwg: vec3u,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = wg_bcast_u32(lid, listed_world(coop_world(wid, nwg)));
    if (w < dims.nworld) {
        solve_world(w, lid);
    }
}
