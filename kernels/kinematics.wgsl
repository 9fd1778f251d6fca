// Forward kinematics and body velocities: WGSL twin of
// src/dynamics/kinematics.rs (same stages, same formulas, same order).
//
// The tree walks (`kinematics`, `velocities`) run one thread per world;
// stages that are independent per item once the body frames are known
// (`geom_poses`, `site_poses`, `com_quantities`) run one thread per
// (world, item) for more parallelism. Each entry point calls a function of
// one world (or item), which the fused CENIC chain (cenic.wgsl) calls too.

/// Body frames, joint anchors and joint axes at q of world w.
fn kinematics_world(w: u32) {
    let w0 = body_at(w, 0u);
    xpos_set(w0, pack3(vec3f(0.0)));
    xquat_set(w0, quat_identity());
    xmat_set(w0, pack9(m3_identity()));
    xipos_set(w0, pack3(vec3f(0.0)));
    for (var bi = 1u; bi < dims.nbody; bi++) {
        let body = bodies[bi];
        let pb = body_at(w, body.parent);
        let pquat = xquat_get(pb);
        var pos = unpack3(xpos_get(pb)) + quat_rotate(pquat, body.pos);
        var quat = quat_mul(pquat, body.quat);
        for (var ji = body.jnt_adr; ji < body.jnt_adr + body.jnt_num; ji++) {
            let j = joints[ji];
            let qa = j.qpos_adr;
            let ja = jnt_at(w, ji);
            switch j.kind {
                case JOINT_FREE: {
                    pos = vec3f(q_get(q_at(w, qa)), q_get(q_at(w, qa + 1u)), q_get(q_at(w, qa + 2u)));
                    quat = quat_normalize(vec4f(q_get(q_at(w, qa + 3u)), q_get(q_at(w, qa + 4u)), q_get(q_at(w, qa + 5u)), q_get(q_at(w, qa + 6u))));
                    xanchor_set(ja, pack3(pos));
                    xaxis_set(ja, pack3(quat_rotate(quat, j.axis)));
                }
                case JOINT_BALL: {
                    let anchor = pos + quat_rotate(quat, j.pos);
                    xanchor_set(ja, pack3(anchor));
                    xaxis_set(ja, pack3(quat_rotate(quat, j.axis)));
                    quat = quat_mul(quat, quat_normalize(vec4f(q_get(q_at(w, qa)), q_get(q_at(w, qa + 1u)), q_get(q_at(w, qa + 2u)), q_get(q_at(w, qa + 3u)))));
                    // Rotation about the anchor, not the body origin.
                    pos = anchor - quat_rotate(quat, j.pos);
                }
                case JOINT_HINGE: {
                    let anchor = pos + quat_rotate(quat, j.pos);
                    xanchor_set(ja, pack3(anchor));
                    xaxis_set(ja, pack3(quat_rotate(quat, j.axis)));
                    let angle = q_get(q_at(w, qa)) - j.reference;
                    quat = quat_mul(quat, quat_from_axis_angle(j.axis, angle));
                    pos = anchor - quat_rotate(quat, j.pos);
                }
                default: {
                    // JOINT_SLIDE
                    let axis_w = quat_rotate(quat, j.axis);
                    xanchor_set(ja, pack3(pos + quat_rotate(quat, j.pos)));
                    xaxis_set(ja, pack3(axis_w));
                    pos += axis_w * (q_get(q_at(w, qa)) - j.reference);
                }
            }
        }
        let b = body_at(w, bi);
        xpos_set(b, pack3(pos));
        xquat_set(b, quat);
        xmat_set(b, pack9(quat_to_mat3(quat)));
        xipos_set(b, pack3(pos + quat_rotate(quat, body.ipos)));
    }
}

/// Body frames, joint anchors and joint axes at q: one thread per world.
/// Reads: q, bodies, joints; writes: xpos, xquat, xmat, xipos, xanchor, xaxis.
@compute @workgroup_size(WORKGROUP_SIZE)
fn kinematics(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        kinematics_world(w);
    }
}

/// Pose of geom gi of world w from its body's frame.
fn geom_pose(w: u32, gi: u32) {
    let g = geoms[gi];
    let b = body_at(w, g.body);
    let bq = xquat_get(b);
    let at = geom_at(w, gi);
    geom_xpos_set(at, pack3(unpack3(xpos_get(b)) + quat_rotate(bq, g.pos)));
    geom_xmat_set(at, pack9(quat_to_mat3(quat_mul(bq, g.quat))));
}

/// Geom poses from body frames: one thread per (world, geom).
/// Reads: xpos, xquat, geoms; writes: geom_xpos, geom_xmat.
@compute @workgroup_size(WORKGROUP_SIZE)
fn geom_poses(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t < dims.nworld * dims.ngeom) {
        geom_pose(t / dims.ngeom, t % dims.ngeom);
    }
}

/// Pose of site si of world w from its body's frame.
fn site_pose(w: u32, si: u32) {
    let s = sites[si];
    let b = body_at(w, s.body);
    let bq = xquat_get(b);
    let at = site_at(w, si);
    site_xpos_set(at, pack3(unpack3(xpos_get(b)) + quat_rotate(bq, s.pos)));
    site_xquat_set(at, quat_mul(bq, s.quat));
}

/// Site poses from body frames: one thread per (world, site).
/// Reads: xpos, xquat, sites; writes: site_xpos, site_xquat.
@compute @workgroup_size(WORKGROUP_SIZE)
fn site_poses(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t < dims.nworld * dims.nsite) {
        site_pose(t / dims.nsite, t % dims.nsite);
    }
}

/// Spatial inertias (`cinert`) and motion subspaces (`cdof`) of every body
/// and dof of world w (com_quantities_body for each body).
fn com_quantities_world(w: u32) {
    for (var bi = 0u; bi < dims.nbody; bi++) {
        com_quantities_body(w, bi);
    }
}

/// Spatial inertia (`cinert`) and motion subspaces (`cdof`) of each body
/// about its tree's reference point: one thread per (world, body).
/// Reads: xpos, xquat, xmat, xipos, xanchor, xaxis, bodies, joints, world_params; writes: body_ref, cinert, cdof.
@compute @workgroup_size(WORKGROUP_SIZE)
fn com_quantities(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t < dims.nworld * dims.nbody) {
        com_quantities_body(t / dims.nbody, t % dims.nbody);
    }
}

/// `cinert` of body bi of world w and `cdof` of its dofs, about its tree's reference point.
fn com_quantities_body(w: u32, bi: u32) {
    let t = body_at(w, bi);
    let body = bodies[bi];
    var r = vec3f(0.0);
    if (body.root != 0u) {
        r = unpack3(xpos_get(body_at(w, body.root)));
    }
    body_ref_set(t, pack3(r));
    let scale = world_params[w].mass_scale;
    let m = body.mass * scale;
    let rm = quat_to_mat3(quat_mul(xquat_get(t), body.iquat));
    let d = body.inertia * scale;
    let ic = m3_mul(m3_mul(rm, m3_diag(d)), m3_transpose(rm));
    cinert_set(t, pack_inertia(inertia_from_com(m, unpack3(xipos_get(t)) - r, ic)));
    // Motion subspaces of this body's dofs.
    let bmat = unpack9(xmat_get(t));
    for (var ji = body.jnt_adr; ji < body.jnt_adr + body.jnt_num; ji++) {
        let j = joints[ji];
        let da = j.dof_adr;
        let anchor = unpack3(xanchor_get(jnt_at(w, ji)));
        switch j.kind {
            case JOINT_FREE: {
                for (var k = 0u; k < 3u; k++) {
                    var e = vec3f(0.0);
                    e[k] = 1.0;
                    cdof_set(dof_at(w, da + k), pack_motion(Motion(vec3f(0.0), e)));
                    let c = m3_col(bmat, k);
                    cdof_set(dof_at(w, da + 3u + k), pack_motion(Motion(c, cross3(c, r - anchor))));
                }
            }
            case JOINT_BALL: {
                // Body-frame axes (MuJoCo uses the body's final frame).
                for (var k = 0u; k < 3u; k++) {
                    let c = m3_col(bmat, k);
                    cdof_set(dof_at(w, da + k), pack_motion(Motion(c, cross3(c, r - anchor))));
                }
            }
            case JOINT_HINGE: {
                let c = unpack3(xaxis_get(jnt_at(w, ji)));
                cdof_set(dof_at(w, da), pack_motion(Motion(c, cross3(c, r - anchor))));
            }
            default: {
                // JOINT_SLIDE
                cdof_set(dof_at(w, da), pack_motion(Motion(vec3f(0.0), unpack3(xaxis_get(jnt_at(w, ji))))));
            }
        }
    }
}

/// Body spatial velocities (`cvel`) and motion-subspace derivatives
/// (`cdof_dot`) at v; needs `kinematics` and `com_quantities`. One thread per world.
/// Reads: v, cdof, bodies, joints; writes: cvel, cdof_dot.
@compute @workgroup_size(WORKGROUP_SIZE)
fn velocities(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld) {
        velocities_world(w);
    }
}

/// `cvel` and `cdof_dot` of world w at v.
fn velocities_world(w: u32) {
    cvel_set(body_at(w, 0u), pack_motion(motion_zero()));
    for (var bi = 1u; bi < dims.nbody; bi++) {
        let body = bodies[bi];
        // A tree root's parent is the world (at rest), so the change of
        // reference point between trees never matters.
        var vel = unpack_motion(cvel_get(body_at(w, body.parent)));
        for (var ji = body.jnt_adr; ji < body.jnt_adr + body.jnt_num; ji++) {
            let j = joints[ji];
            let da = j.dof_adr;
            switch j.kind {
                case JOINT_FREE: {
                    // Translational axes are fixed in the world frame.
                    for (var k = 0u; k < 3u; k++) {
                        cdof_dot_set(dof_at(w, da + k), pack_motion(motion_zero()));
                        vel = motion_add(vel, motion_scale(unpack_motion(cdof_get(dof_at(w, da + k))), v_get(dof_at(w, da + k))));
                    }
                    for (var k = 3u; k < 6u; k++) {
                        cdof_dot_set(dof_at(w, da + k), pack_motion(cross_motion(vel, unpack_motion(cdof_get(dof_at(w, da + k))))));
                    }
                    for (var k = 3u; k < 6u; k++) {
                        vel = motion_add(vel, motion_scale(unpack_motion(cdof_get(dof_at(w, da + k))), v_get(dof_at(w, da + k))));
                    }
                }
                case JOINT_BALL: {
                    for (var k = 0u; k < 3u; k++) {
                        cdof_dot_set(dof_at(w, da + k), pack_motion(cross_motion(vel, unpack_motion(cdof_get(dof_at(w, da + k))))));
                    }
                    for (var k = 0u; k < 3u; k++) {
                        vel = motion_add(vel, motion_scale(unpack_motion(cdof_get(dof_at(w, da + k))), v_get(dof_at(w, da + k))));
                    }
                }
                default: {
                    // JOINT_HINGE, JOINT_SLIDE
                    let c = unpack_motion(cdof_get(dof_at(w, da)));
                    vel = motion_add(vel, motion_scale(c, v_get(dof_at(w, da))));
                    cdof_dot_set(dof_at(w, da), pack_motion(cross_motion(vel, c)));
                }
            }
        }
        cvel_set(body_at(w, bi), pack_motion(vel));
    }
}
