// Mass matrix (composite rigid body algorithm), bias forces (recursive
// Newton–Euler with zero joint acceleration) and passive spring forces:
// WGSL twin of src/dynamics/rnea.rs. The recursions run one thread per
// world, with the composite inertias and the recursion's accelerations and
// forces in per-world scratch buffers (crb, cacc, cfrc).

/// Joint-space mass matrix M(q) (dense, row-major, nv × nv per world) with
/// armature on the diagonal; needs `com_quantities`. One thread per world.
/// Reads: cinert, cdof, bodies, dofs; writes: crb, mass.
@compute @workgroup_size(WORKGROUP_SIZE)
fn mass_matrix(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        mass_matrix_world(w);
    }
}

/// M(q) of world w.
fn mass_matrix_world(w: u32) {
    let nv = dims.nv;
    for (var k = 0u; k < nv * nv; k++) {
        mass[item_at(w, k, nv * nv)] = 0.0;
    }
    // Composite inertias: each body plus its subtree.
    for (var bi = 0u; bi < dims.nbody; bi++) {
        crb_set(body_at(w, bi), cinert_get(body_at(w, bi)));
    }
    for (var bi = dims.nbody - 1u; bi >= 1u; bi--) {
        let p = bodies[bi].parent;
        if (p != 0u) {
            let sum = inertia_add(unpack_inertia(crb_get(body_at(w, p))), unpack_inertia(crb_get(body_at(w, bi))));
            crb_set(body_at(w, p), pack_inertia(sum));
        }
    }
    for (var i = 0u; i < nv; i++) {
        let dof = dofs[i];
        let f = inertia_mul(unpack_inertia(crb_get(body_at(w, dof.body))), unpack_motion(cdof_get(dof_at(w, i))));
        // Walk the chain of ancestor dofs (including i itself).
        var j = i;
        loop {
            let mij = motion_dot(unpack_motion(cdof_get(dof_at(w, j))), f);
            mass[mass_at(w, i, j)] = mij;
            mass[mass_at(w, j, i)] = mij;
            j = dofs[j].parent;
            if (j == NONE) {
                break;
            }
        }
        mass[mass_at(w, i, i)] += dof.armature;
    }
}

/// Bias forces (Coriolis, centrifugal and gravity) at (q, v); needs
/// `com_quantities` and `velocities`. One thread per world.
/// Reads: v, cinert, cdof, cvel, cdof_dot, bodies, dofs; writes: cacc, cfrc, bias.
@compute @workgroup_size(WORKGROUP_SIZE)
fn bias_forces(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        bias_forces_world(w);
    }
}

/// Bias forces of world w.
fn bias_forces_world(w: u32) {
    // Gravity as an upward acceleration of the world frame; the world body
    // carries no force (the CPU's workspace entry stays zero).
    cacc_set(body_at(w, 0u), pack_motion(Motion(vec3f(0.0), -dims.gravity.xyz)));
    cfrc_set(body_at(w, 0u), pack_motion(motion_zero()));
    for (var bi = 1u; bi < dims.nbody; bi++) {
        let body = bodies[bi];
        var a = unpack_motion(cacc_get(body_at(w, body.parent)));
        for (var k = body.dof_adr; k < body.dof_adr + body.dof_num; k++) {
            a = motion_add(a, motion_scale(unpack_motion(cdof_dot_get(dof_at(w, k))), v_get(dof_at(w, k))));
        }
        let b = body_at(w, bi);
        cacc_set(b, pack_motion(a));
        let inert = unpack_inertia(cinert_get(b));
        let vel = unpack_motion(cvel_get(b));
        let iv = inertia_mul(inert, vel);
        cfrc_set(b, pack_motion(motion_add(inertia_mul(inert, a), cross_force(vel, iv))));
    }
    for (var bi = dims.nbody - 1u; bi >= 1u; bi--) {
        let p = bodies[bi].parent;
        if (p != 0u) {
            let sum = motion_add(unpack_motion(cfrc_get(body_at(w, p))), unpack_motion(cfrc_get(body_at(w, bi))));
            cfrc_set(body_at(w, p), pack_motion(sum));
        }
    }
    for (var i = 0u; i < dims.nv; i++) {
        bias_set(dof_at(w, i), motion_dot(unpack_motion(cdof_get(dof_at(w, i))), unpack_motion(cfrc_get(body_at(w, dofs[i].body)))));
    }
}

/// Passive joint spring forces −k (q − springref) for hinge and slide
/// joints (damping is implicit in the contact solve, not here). One thread per world.
/// Reads: q, joints; writes: passive.
@compute @workgroup_size(WORKGROUP_SIZE)
fn passive_forces(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        passive_forces_world(w);
    }
}

/// Passive spring forces of world w.
fn passive_forces_world(w: u32) {
    for (var i = 0u; i < dims.nv; i++) {
        passive_set(dof_at(w, i), 0.0);
    }
    for (var ji = 0u; ji < dims.njnt; ji++) {
        let j = joints[ji];
        if (j.stiffness != 0.0 && (j.kind == JOINT_HINGE || j.kind == JOINT_SLIDE)) {
            passive_set(dof_at(w, j.dof_adr), -j.stiffness * (q_get(q_at(w, j.qpos_adr)) - j.springref));
        }
    }
}
