// Position update on the configuration manifold: WGSL twin of
// src/dynamics/integrate.rs. Joints are independent, so one thread per
// (world, joint); each world uses its own step h[w] (s).

/// q ← q ⊗ exp(r) renormalised (the renormalisation only removes rounding).
fn rotate_quat(a: u32, rot_body: vec3f) {
    let qn = quat_normalize(quat_mul(vec4f(q[a], q[a + 1u], q[a + 2u], q[a + 3u]), quat_exp(rot_body)));
    q[a] = qn.x;
    q[a + 1u] = qn.y;
    q[a + 2u] = qn.z;
    q[a + 3u] = qn.w;
}

/// q ← q ⊕ h·N(q)·v: free-joint positions += h·v_lin; quaternions (free and
/// ball) by the exact exponential of the body-frame rotation h·ω; hinge and
/// slide q += h·v.
@compute @workgroup_size(WORKGROUP_SIZE)
fn integrate_q(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t >= dims.nworld * dims.njnt) {
        return;
    }
    let w = t / dims.njnt;
    let j = joints[t % dims.njnt];
    let qa = q_at(w, j.qpos_adr);
    let da = dof_at(w, j.dof_adr);
    let hw = h[w];
    // A zero step leaves q bit-identical (idle worlds of a batch), without
    // the renormalisation's rounding.
    if (hw == 0.0) {
        return;
    }
    switch j.kind {
        case JOINT_FREE: {
            for (var k = 0u; k < 3u; k++) {
                q[qa + k] += hw * v[da + k];
            }
            rotate_quat(qa + 3u, vec3f(v[da + 3u], v[da + 4u], v[da + 5u]) * hw);
        }
        case JOINT_BALL: {
            rotate_quat(qa, vec3f(v[da], v[da + 1u], v[da + 2u]) * hw);
        }
        default: {
            // JOINT_HINGE, JOINT_SLIDE
            q[qa] += hw * v[da];
        }
    }
}
