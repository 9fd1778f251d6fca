// Forward kinematics and body velocities: WGSL twin of
// src/dynamics/kinematics.rs (same stages, same formulas, same order).
//
// The tree walks (`kinematics`, `velocities`) run one thread per world;
// stages that are independent per item once the body frames are known
// (`geom_poses`, `site_poses`, `com_quantities`) run one thread per
// (world, item) for more parallelism.

/// Body frames, joint anchors and joint axes at q: one thread per world.
@compute @workgroup_size(WORKGROUP_SIZE)
fn kinematics(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    let w0 = body_at(w, 0u);
    xpos[w0] = pack3(vec3f(0.0));
    xquat[w0] = quat_identity();
    xmat[w0] = pack9(m3_identity());
    xipos[w0] = pack3(vec3f(0.0));
    for (var bi = 1u; bi < dims.nbody; bi++) {
        let body = bodies[bi];
        let pb = body_at(w, body.parent);
        let pquat = xquat[pb];
        var pos = unpack3(xpos[pb]) + quat_rotate(pquat, body.pos);
        var quat = quat_mul(pquat, body.quat);
        for (var ji = body.jnt_adr; ji < body.jnt_adr + body.jnt_num; ji++) {
            let j = joints[ji];
            let qa = q_at(w, j.qpos_adr);
            let ja = jnt_at(w, ji);
            switch j.kind {
                case JOINT_FREE: {
                    pos = vec3f(q[qa], q[qa + 1u], q[qa + 2u]);
                    quat = quat_normalize(vec4f(q[qa + 3u], q[qa + 4u], q[qa + 5u], q[qa + 6u]));
                    xanchor[ja] = pack3(pos);
                    xaxis[ja] = pack3(quat_rotate(quat, j.axis));
                }
                case JOINT_BALL: {
                    let anchor = pos + quat_rotate(quat, j.pos);
                    xanchor[ja] = pack3(anchor);
                    xaxis[ja] = pack3(quat_rotate(quat, j.axis));
                    quat = quat_mul(quat, quat_normalize(vec4f(q[qa], q[qa + 1u], q[qa + 2u], q[qa + 3u])));
                    // Rotation about the anchor, not the body origin.
                    pos = anchor - quat_rotate(quat, j.pos);
                }
                case JOINT_HINGE: {
                    let anchor = pos + quat_rotate(quat, j.pos);
                    xanchor[ja] = pack3(anchor);
                    xaxis[ja] = pack3(quat_rotate(quat, j.axis));
                    let angle = q[qa] - j.reference;
                    quat = quat_mul(quat, quat_from_axis_angle(j.axis, angle));
                    pos = anchor - quat_rotate(quat, j.pos);
                }
                default: {
                    // JOINT_SLIDE
                    let axis_w = quat_rotate(quat, j.axis);
                    xanchor[ja] = pack3(pos + quat_rotate(quat, j.pos));
                    xaxis[ja] = pack3(axis_w);
                    pos += axis_w * (q[qa] - j.reference);
                }
            }
        }
        let b = body_at(w, bi);
        xpos[b] = pack3(pos);
        xquat[b] = quat;
        xmat[b] = pack9(quat_to_mat3(quat));
        xipos[b] = pack3(pos + quat_rotate(quat, body.ipos));
    }
}

/// Geom poses from body frames: one thread per (world, geom).
@compute @workgroup_size(WORKGROUP_SIZE)
fn geom_poses(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t >= dims.nworld * dims.ngeom) {
        return;
    }
    let w = t / dims.ngeom;
    let gi = t % dims.ngeom;
    let g = geoms[gi];
    let b = body_at(w, g.body);
    let bq = xquat[b];
    geom_xpos[t] = pack3(unpack3(xpos[b]) + quat_rotate(bq, g.pos));
    geom_xmat[t] = pack9(quat_to_mat3(quat_mul(bq, g.quat)));
}

/// Site poses from body frames: one thread per (world, site).
@compute @workgroup_size(WORKGROUP_SIZE)
fn site_poses(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t >= dims.nworld * dims.nsite) {
        return;
    }
    let w = t / dims.nsite;
    let s = sites[t % dims.nsite];
    let b = body_at(w, s.body);
    let bq = xquat[b];
    site_xpos[t] = pack3(unpack3(xpos[b]) + quat_rotate(bq, s.pos));
    site_xquat[t] = quat_mul(bq, s.quat);
}

/// Spatial inertia (`cinert`) and motion subspaces (`cdof`) of each body
/// about its tree's reference point: one thread per (world, body).
@compute @workgroup_size(WORKGROUP_SIZE)
fn com_quantities(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t >= dims.nworld * dims.nbody) {
        return;
    }
    let w = t / dims.nbody;
    let body = bodies[t % dims.nbody];
    var r = vec3f(0.0);
    if (body.root != 0u) {
        r = unpack3(xpos[body_at(w, body.root)]);
    }
    body_ref[t] = pack3(r);
    let scale = world_params[w].mass_scale;
    let m = body.mass * scale;
    let rm = quat_to_mat3(quat_mul(xquat[t], body.iquat));
    let d = body.inertia * scale;
    let ic = m3_mul(m3_mul(rm, m3_diag(d)), m3_transpose(rm));
    cinert[t] = pack_inertia(inertia_from_com(m, unpack3(xipos[t]) - r, ic));
    // Motion subspaces of this body's dofs.
    let bmat = unpack9(xmat[t]);
    for (var ji = body.jnt_adr; ji < body.jnt_adr + body.jnt_num; ji++) {
        let j = joints[ji];
        let da = dof_at(w, j.dof_adr);
        let anchor = unpack3(xanchor[jnt_at(w, ji)]);
        switch j.kind {
            case JOINT_FREE: {
                for (var k = 0u; k < 3u; k++) {
                    var e = vec3f(0.0);
                    e[k] = 1.0;
                    cdof[da + k] = pack_motion(Motion(vec3f(0.0), e));
                    let c = m3_col(bmat, k);
                    cdof[da + 3u + k] = pack_motion(Motion(c, cross3(c, r - anchor)));
                }
            }
            case JOINT_BALL: {
                // Body-frame axes (MuJoCo uses the body's final frame).
                for (var k = 0u; k < 3u; k++) {
                    let c = m3_col(bmat, k);
                    cdof[da + k] = pack_motion(Motion(c, cross3(c, r - anchor)));
                }
            }
            case JOINT_HINGE: {
                let c = unpack3(xaxis[jnt_at(w, ji)]);
                cdof[da] = pack_motion(Motion(c, cross3(c, r - anchor)));
            }
            default: {
                // JOINT_SLIDE
                cdof[da] = pack_motion(Motion(vec3f(0.0), unpack3(xaxis[jnt_at(w, ji)])));
            }
        }
    }
}

/// Body spatial velocities (`cvel`) and motion-subspace derivatives
/// (`cdof_dot`) at v; needs `kinematics` and `com_quantities`. One thread per world.
@compute @workgroup_size(WORKGROUP_SIZE)
fn velocities(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    cvel[body_at(w, 0u)] = pack_motion(motion_zero());
    for (var bi = 1u; bi < dims.nbody; bi++) {
        let body = bodies[bi];
        // A tree root's parent is the world (at rest), so the change of
        // reference point between trees never matters.
        var vel = unpack_motion(cvel[body_at(w, body.parent)]);
        for (var ji = body.jnt_adr; ji < body.jnt_adr + body.jnt_num; ji++) {
            let j = joints[ji];
            let da = dof_at(w, j.dof_adr);
            switch j.kind {
                case JOINT_FREE: {
                    // Translational axes are fixed in the world frame.
                    for (var k = 0u; k < 3u; k++) {
                        cdof_dot[da + k] = pack_motion(motion_zero());
                        vel = motion_add(vel, motion_scale(unpack_motion(cdof[da + k]), v[da + k]));
                    }
                    for (var k = 3u; k < 6u; k++) {
                        cdof_dot[da + k] = pack_motion(cross_motion(vel, unpack_motion(cdof[da + k])));
                    }
                    for (var k = 3u; k < 6u; k++) {
                        vel = motion_add(vel, motion_scale(unpack_motion(cdof[da + k]), v[da + k]));
                    }
                }
                case JOINT_BALL: {
                    for (var k = 0u; k < 3u; k++) {
                        cdof_dot[da + k] = pack_motion(cross_motion(vel, unpack_motion(cdof[da + k])));
                    }
                    for (var k = 0u; k < 3u; k++) {
                        vel = motion_add(vel, motion_scale(unpack_motion(cdof[da + k]), v[da + k]));
                    }
                }
                default: {
                    // JOINT_HINGE, JOINT_SLIDE
                    let c = unpack_motion(cdof[da]);
                    vel = motion_add(vel, motion_scale(c, v[da]));
                    cdof_dot[da] = pack_motion(cross_motion(vel, c));
                }
            }
        }
        cvel[body_at(w, bi)] = pack_motion(vel);
    }
}
