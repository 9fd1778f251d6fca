// Position update on the configuration manifold: WGSL twin of
// src/dynamics/integrate.rs. Joints are independent, so one thread per
// (world, joint); each world uses its own step h[w] (s).

/// q ← q ⊗ exp(r) renormalised (the renormalisation only removes rounding),
/// for the quaternion at coordinates a .. a + 4 of world w.
fn rotate_quat(w: u32, a: u32, rot_body: vec3f) {
    let qw = vec4f(q_get(q_at(w, a)), q_get(q_at(w, a + 1u)), q_get(q_at(w, a + 2u)), q_get(q_at(w, a + 3u)));
    let qn = quat_normalize(quat_mul(qw, quat_exp(rot_body)));
    q_set(q_at(w, a), qn.x);
    q_set(q_at(w, a + 1u), qn.y);
    q_set(q_at(w, a + 2u), qn.z);
    q_set(q_at(w, a + 3u), qn.w);
}

/// q ← q ⊕ h·N(q)·v: free-joint positions += h·v_lin; quaternions (free and
/// ball) by the exact exponential of the body-frame rotation h·ω; hinge and
/// slide q += h·v.
/// Reads: v, h, joints; writes: q.
@compute @workgroup_size(WORKGROUP_SIZE)
fn integrate_q(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t < dims.nworld * dims.njnt) {
        integrate_joint(t / dims.njnt, t % dims.njnt);
    }
}

/// integrate_q of every joint of world w.
fn integrate_world(w: u32) {
    for (var ji = 0u; ji < dims.njnt; ji++) {
        integrate_joint(w, ji);
    }
}

/// integrate_q of joint ji of world w.
fn integrate_joint(w: u32, ji: u32) {
    let j = joints[ji];
    let qa = j.qpos_adr;
    let da = j.dof_adr;
    let hw = h_get(world_at(w));
    // A zero step leaves q bit-identical (idle worlds of a batch), without
    // the renormalisation's rounding.
    if (hw == 0.0) {
        return;
    }
    switch j.kind {
        case JOINT_FREE: {
            for (var k = 0u; k < 3u; k++) {
                world_data[q_ix(q_at(w, qa + k))] += hw * v_get(dof_at(w, da + k));
            }
            rotate_quat(w, qa + 3u, vec3f(v_get(dof_at(w, da + 3u)), v_get(dof_at(w, da + 4u)), v_get(dof_at(w, da + 5u))) * hw);
        }
        case JOINT_BALL: {
            rotate_quat(w, qa, vec3f(v_get(dof_at(w, da)), v_get(dof_at(w, da + 1u)), v_get(dof_at(w, da + 2u))) * hw);
        }
        default: {
            // JOINT_HINGE, JOINT_SLIDE
            world_data[q_ix(q_at(w, qa))] += hw * v_get(dof_at(w, da));
        }
    }
}
