// The ICF builder and the step-size dependent terms: WGSL twin of
// src/icf/builder.rs (IcfBuilder::build) and src/icf/problem.rs
// (IcfProblem::set_time_step). Like the CPU builder, these are the only
// kernels that read the model, the multibody data and the contacts.
//
// Needs kinematics, velocities, mass_matrix, bias_forces and
// passive_forces at (q0, v0), and the contacts. Worlds with
// icf_world[w].solving == 0 are skipped.

/// The h-independent part of one world's problem except the contacts:
/// k(q0, v0), v0, gain laws, joint limits, and the contact count. One
/// thread per world.
/// Reads: q, v, bias, passive, ctrl, target_velocity, contact_count, actuators, icf_limit_defs, dofs, world_params, icf_dims; writes: icf_world, icf_vec (force, v0), icf_gain, icf_limit.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_build(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld && icf_world[w].solving != 0u) {
        icf_build_world(w);
    }
}

/// The whole problem of world w (IcfBuilder::build): icf_build_world, every
/// contact constraint and the Jacobian rows, in one thread.
fn icf_build_all(w: u32) {
    icf_build_world(w);
    let n = icf_world[w].ncon;
    for (var c = 0u; c < n; c++) {
        icf_build_contact(w, c);
    }
    icf_build_rows_world(w);
}

/// icf_build for world w.
fn icf_build_world(w: u32) {
    let nv = dims.nv;
    for (var i = 0u; i < nv; i++) {
        let vi = v_get(dof_at(w, i));
        icf_vec[ivec_at(w, VEC_V0, i)] = vi;
        // Damping at v0 goes into k; A = M + hD makes it implicit.
        icf_vec[ivec_at(w, VEC_FORCE, i)] = bias_get(dof_at(w, i)) - passive_get(dof_at(w, i)) + dofs[i].damping * vi;
    }
    for (var ai = 0u; ai < icf_dims.nu; ai++) {
        let a = actuators[ai];
        var u = ctrl[w * icf_dims.nu + ai];
        if (a.has_ctrl_range != 0u) {
            u = min(max(u, a.ctrl_lo), a.ctrl_hi);
        }
        if (a.kind == ACT_MOTOR) {
            if (a.has_force_range != 0u) {
                u = min(max(u, a.force_lo), a.force_hi);
            }
            icf_vec[ivec_at(w, VEC_FORCE, a.dof)] -= a.gear * u;
        } else {
            icf_gain[gain_at(w, a.gain_slot)] = IcfGain(
                a.dof,
                a.kp,
                a.kd,
                u - q_get(q_at(w, a.qpos_adr)),
                target_velocity[w * icf_dims.nu + ai],
                a.effort_limit,
                0.0,
                0.0,
            );
        }
    }
    for (var li = 0u; li < icf_dims.nlimit; li++) {
        let d = icf_limit_defs[li];
        let qv = q_get(q_at(w, d.qpos_adr));
        // Written as on the CPU: q − lo for a lower limit, hi − q for an upper one.
        var g0 = qv - d.q_limit;
        if (d.sign < 0.0) {
            g0 = d.q_limit - qv;
        }
        // The spring scales with the world's masses, so its time scale does not.
        let ms = world_params[w].mass_scale;
        let s = ms * spring_law_at(d, -g0);
        var lim = IcfLimit(d.dof, d.sign, g0, s.x, s.y, s.z, 0u, 0.0, 0.0, 0.0, 0.0, 0.0);
        if (d.soft != 0u) {
            // MuJoCo's limit exists once it is reached (g0 < 0): icf::soft::soft_row.
            let imp = impedance(d, abs(g0)).x;
            lim.soft = 1u;
            if (g0 < 0.0 && d.invweight > 0.0) {
                lim.soft_d = ms / regulariser(imp, d.invweight);
            }
            lim.soft_b = d.soft_b;
            lim.soft_kpos = d.soft_k * imp * g0;
            lim.soft_vel0 = d.sign * v_get(dof_at(w, d.dof));
        }
        icf_limit[limit_at(w, li)] = lim;
    }
    let found = atomicLoad(&contact_count[w]);
    icf_world[w].ncon = min(found, dims.ncon);
    icf_world[w].overflow = found - min(found, dims.ncon);
}

/// SpringLaw::at: (force, tangent stiffness ≥ 0, damping) of a limit's
/// spring at violation r (rad or m; r ≤ 0: the tangent at 0 extended).
fn spring_law_at(d: IcfLimitDef, r: f32) -> vec3f {
    let rp = max(r, 0.0);
    let imp = impedance(d, rp);
    let dd = imp.x;
    let ks = d.mk * dd * dd / (1.0 - dd);
    let kt = ks + d.mk * rp * imp.y * dd * (2.0 - dd) / ((1.0 - dd) * (1.0 - dd));
    return vec3f(ks * r, max(kt, 0.0), d.damp * sqrt(ks));
}

/// model::soft::impedance: MuJoCo's impedance d(r) and dd/dr for r ≥ 0.
fn impedance(d: IcfLimitDef, r: f32) -> vec2f {
    return impedance_of(vec4f(d.imp_d0, d.imp_dmax, d.imp_width, d.imp_mid), d.imp_power, r);
}

/// model::soft::regulariser: MuJoCo's R = max(mjMINVAL, (1 − d)/d·Â).
fn regulariser(imp: f32, diag: f32) -> f32 {
    return max((1.0 - imp) * diag / imp, 1e-15);
}

/// model::soft::impedance for solimp (d0, d_max, width, midpoint) and power.
fn impedance_of(imp: vec4f, p: f32, r: f32) -> vec2f {
    let d0 = imp.x;
    let dmax = imp.y;
    let width = imp.z;
    let mid = imp.w;
    // MuJoCo's flat function: equal ends or no width give the mean, constant.
    if (d0 == dmax || width <= 1e-15) {
        return vec2f(0.5 * (d0 + dmax), 0.0);
    }
    let x = r / width;
    if (!(x < 1.0)) {
        return vec2f(dmax, 0.0);
    }
    var y = x;
    var dy = 1.0;
    if (p != 1.0) {
        if (x <= mid) {
            let a = 1.0 / pow(mid, p - 1.0);
            y = a * pow(x, p);
            dy = a * p * pow(x, p - 1.0);
        } else {
            let b = 1.0 / pow(1.0 - mid, p - 1.0);
            y = 1.0 - b * pow(1.0 - x, p);
            dy = b * p * pow(1.0 - x, p - 1.0);
        }
    }
    let v = d0 + y * (dmax - d0);
    if (v < 0.0001 || v > 0.9999) {
        return vec2f(clamp(v, 0.0001, 0.9999), 0.0);
    }
    return vec2f(v, dy * (dmax - d0) / width);
}

/// One contact constraint: its Jacobian J = J_B(p) − J_A(p) merged over
/// the dof chains of both bodies (B's chain first, in the CPU's order),
/// materials with the world's multipliers, the Delassus estimate and
/// vc0 = J v0. One thread per (world, contact slot).
/// Reads: contacts, contact_count, v, body_ref, cdof, dofs, icf_bodies, world_params, icf_world, icf_dims; writes: icf_con, icf_jac.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_build_contacts(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t >= dims.nworld * dims.ncon) {
        return;
    }
    let w = t / dims.ncon;
    let slot = t % dims.ncon;
    // Reads the count itself: icf_build may run in the same pass, unordered with this kernel's threads.
    if (icf_world[w].solving != 0u && slot < min(atomicLoad(&contact_count[w]), dims.ncon)) {
        icf_build_contact(w, slot);
    }
}

/// Contact constraint `slot` of world w (see icf_build_contacts).
fn icf_build_contact(w: u32, slot: u32) {
    let t = con_at(w, slot);
    let c = contacts[t];
    var n = 0u;
    for (var side = 0u; side < 2u; side++) {
        var body = c.body.y;
        var sign = 1.0;
        if (side == 1u) {
            body = c.body.x;
            sign = -1.0;
        }
        let r = c.pos - unpack3(body_ref_get(body_at(w, body)));
        var d = icf_bodies[body].last_dof;
        loop {
            if (d == NONE) {
                break;
            }
            let cd = unpack_motion(cdof_get(dof_at(w, d)));
            let col = (cd.lin + cross3(cd.ang, r)) * sign;
            var merged = false;
            for (var e = 0u; e < n; e++) {
                let at = jac_at(w, slot, e);
                if (icf_jac[at].dof == d) {
                    icf_jac[at].col += col;
                    merged = true;
                    break;
                }
            }
            if (!merged) {
                icf_jac[jac_at(w, slot, n)] = JacEntry(col, d);
                n++;
            }
            d = dofs[d].parent;
        }
    }
    var vc0 = vec3f(0.0);
    for (var e = 0u; e < n; e++) {
        let j = icf_jac[jac_at(w, slot, e)];
        vc0 += j.col * v_get(dof_at(w, j.dof));
    }
    let p = world_params[w];
    // The Delassus estimate is of the world's masses, which mass_scale multiplies.
    let wd = (icf_bodies[c.body.x].delassus + icf_bodies[c.body.y].delassus) / p.mass_scale;
    var con = IcfContact(
        c.normal,
        c.dist,
        vc0,
        c.stiffness * p.stiffness,
        vec3f(0.0),
        c.dissipation * p.dissipation,
        vec3f(0.0),
        c.mu_static * p.mu_static,
        c.mu_dynamic * p.mu_dynamic,
        wd,
        n,
        0.0,
        0.0,
        0.0,
        0.0,
        0u,
        vec3f(0.0),
        0.0,
        vec3f(0.0),
        0.0,
        vec3f(0.0),
        0.0,
        vec3f(0.0),
        0.0,
        vec3f(0.0),
        0.0,
        vec2f(0.0),
        0.0,
        0.0,
    );
    let pair = collision_pairs[c.pair];
    if (pair.soft != 0u) {
        // MuJoCo's soft contact (icf::soft::soft_contact), replacing the
        // Hunt–Crossley law and friction.
        let x = c.dist - pair.soft_more.w;
        let imp = impedance_of(pair.soft_imp, pair.soft_more.z, abs(x)).x;
        let d = 1.0 / (pair.soft_law.w * regulariser(imp, pair.soft_law.z));
        con.law = 1u;
        con.stiffness = 0.0;
        con.dissipation = 0.0;
        con.mu_static = 0.0;
        con.mu_dynamic = 0.0;
        if (x < 0.0 && pair.soft_law.z > 0.0) {
            con.soft_d = d * p.mass_scale * p.stiffness;
        }
        con.soft_mu = pair.soft_more.xy * p.mu_static;
        con.soft_b = pair.soft_law.y * p.dissipation;
        con.soft_kpos = pair.soft_law.x * imp * x;
        con.t1 = contact_tangent(w, c, pair.kinds);
    }
    icf_con[t] = con;
}

/// icf::soft::contact_tangent: MuJoCo's first contact tangent, the
/// capsule's axis for a plane–capsule contact, else the world y axis (z
/// when the normal is within 60° of y), made orthogonal to the normal.
fn contact_tangent(w: u32, c: Contact, kinds: u32) -> vec3f {
    let n = c.normal;
    if (kinds == PAIR_PLANE_CAPSULE) {
        let axis = m3_col(unpack9(geom_xmat_get(geom_at(w, c.geom.y))), 2u);
        let t = axis - n * dot3(n, axis);
        if (dot3(t, t) > 1e-6) {
            return t / sqrt(dot3(t, t));
        }
    }
    var y = vec3f(0.0, 0.0, 1.0);
    if (abs(n.y) < 0.5) {
        y = vec3f(0.0, 1.0, 0.0);
    }
    let t = y - n * dot3(n, y);
    return t / sqrt(dot3(t, t));
}

/// For each dof, the Jacobian entries acting on it, in contact order (the
/// solver assembles rows of ∇ℓ and H from them in the CPU's summation
/// order). Needs icf_build_contacts. One thread per world.
/// Reads: icf_con, icf_jac, icf_world, icf_dims; writes: icf_rows.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_build_rows(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld && icf_world[w].solving != 0u) {
        icf_build_rows_world(w);
    }
}

/// icf_build_rows for world w.
fn icf_build_rows_world(w: u32) {
    for (var i = 0u; i < dims.nv; i++) {
        icf_rows[rows_at(w, i, 0u)] = 0u;
    }
    let ncon = icf_world[w].ncon;
    for (var c = 0u; c < ncon; c++) {
        let n = icf_con[con_at(w, c)].jac_len;
        for (var e = 0u; e < n; e++) {
            let d = icf_jac[jac_at(w, c, e)].dof;
            let k = icf_rows[rows_at(w, d, 0u)] + 1u;
            icf_rows[rows_at(w, d, k)] = c * icf_dims.ndofc + e;
            icf_rows[rows_at(w, d, 0u)] = k;
        }
    }
}

/// σ(x) = x / √(1 + x²).
fn icf_sigmoid(x: f32) -> f32 {
    return x / sqrt(1.0 + x * x);
}

/// IcfProblem::set_time_step for each world's step h[w] (s): A = M + hD,
/// r = A v0 − h k, the scaling diag(M)^(−½), the lagged contact terms,
/// and gain laws. One thread per world.
/// Reads: h, mass, dofs, icf_dims; writes: icf_a, icf_vec (r, scale), icf_con, icf_gain, icf_world.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_set_time_step(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w < dims.nworld && icf_world[w].solving != 0u) {
        icf_set_time_step_world(w);
    }
}

/// icf_set_time_step for world w.
fn icf_set_time_step_world(w: u32) {
    let nv = dims.nv;
    let hw = h_get(world_at(w));
    icf_world[w].h = hw;
    icf_world[w].phase = NEWTON_START;
    for (var i = 0u; i < nv; i++) {
        for (var j = 0u; j < nv; j++) {
            icf_a[mass_at(w, i, j)] = mass[mass_at(w, i, j)];
        }
        icf_a[mass_at(w, i, i)] += hw * dofs[i].damping;
        // 1.17549435e-38: f32::MIN_POSITIVE.
        icf_vec[ivec_at(w, VEC_SCALE, i)] = 1.0 / sqrt(max(mass[mass_at(w, i, i)], 1.17549435e-38));
    }
    for (var i = 0u; i < nv; i++) {
        var s = 0.0;
        for (var j = 0u; j < nv; j++) {
            s += icf_a[mass_at(w, i, j)] * icf_vec[ivec_at(w, VEC_V0, j)];
        }
        icf_vec[ivec_at(w, VEC_R, i)] = s - hw * icf_vec[ivec_at(w, VEC_FORCE, i)];
    }
    let vs = icf_dims.stiction_tolerance;
    let sig10 = icf_sigmoid(10.0);
    let ncon = icf_world[w].ncon;
    for (var ci = 0u; ci < ncon; ci++) {
        let at = con_at(w, ci);
        var c = icf_con[at];
        let vn0 = dot3(c.normal, c.vc0);
        let vt0 = c.vc0 - c.normal * vn0;
        c.fe0 = -c.stiffness * c.phi0;
        c.n0 = hw * max(c.fe0, 0.0) * max(1.0 - c.dissipation * vn0, 0.0);
        // Stribeck-like blend from μs (sticking) to μd (sliding), lagged at v0 so ℓ stays convex.
        let s = sqrt(dot3(vt0, vt0)) / vs;
        c.mu = c.mu_dynamic + (c.mu_static - c.mu_dynamic) * 0.5 * (1.0 - icf_sigmoid(s - 10.0) / sig10);
        let reg = 1e-3 * c.delassus;
        // STICTION_EPS_RATIO = 0.1 (src/icf/problem.rs).
        c.eps = max(vs * 0.1, c.mu * reg * c.n0);
        icf_con[at] = c;
    }
    for (var gi = 0u; gi < icf_dims.ngain; gi++) {
        let at = gain_at(w, gi);
        let g = icf_gain[at];
        icf_gain[at].gain = hw * g.kp + g.kd;
        icf_gain[at].bias = g.kp * g.q_err + g.kd * g.v_ref;
    }
}
