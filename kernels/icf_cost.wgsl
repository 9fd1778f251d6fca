// Cost ℓ(v), gradient and Hessian of the ICF problem, and the cost along
// a search line: WGSL twin of src/icf/cost.rs, term by term in the same
// order. Also composed in front of icf_solver.wgsl (src/gpu/shaders.rs
// STAGE_DEPS), whose Newton loop calls these functions.

/// normal_potential: (P(vn), γn(vn), g' = −dγn/dvn) of the Hunt–Crossley
/// impulse γn = h·max(0, fe0 − h k vn)·max(0, 1 − d vn), with the
/// potential expanded around v̂ so that no term cancels (src/icf/cost.rs).
fn normal_potential(hw: f32, k: f32, d: f32, fe0: f32, vn: f32) -> vec3f {
    let a = hw * k;
    var v_hat = fe0 / a;
    if (d > 0.0) {
        v_hat = min(fe0 / a, 1.0 / d);
    }
    if (!(vn < v_hat)) {
        return vec3f(0.0);
    }
    let x = v_hat - vn;
    let fs = max(fe0 - a * v_hat, 0.0);
    let fd = max(1.0 - d * v_hat, 0.0);
    let pot = hw * x * (fs * fd + x * (0.5 * (fs * d + a * fd) + x * (a * d / 3.0)));
    let spring = fs + a * x;
    let damp = fd + d * x;
    return vec3f(pot, hw * spring * damp, hw * (a * damp + d * spring));
}

/// contact_terms: cost, impulse on B and G = −dγ/dvc of a contact at contact velocity vc.
struct ContactTerms {
    cost: f32,
    impulse: vec3f,
    hess: M3,
}

fn contact_terms(c: IcfContact, hw: f32, vc: vec3f) -> ContactTerms {
    let n = c.normal;
    let vn = dot3(n, vc);
    let vt = vc - n * vn;
    let np = normal_potential(hw, c.stiffness, c.dissipation, c.fe0, vn);
    let s = sqrt(dot3(vt, vt) + c.eps * c.eps);
    let mn = c.mu * c.n0;
    let cost = mn * (s - c.eps) + np.x;
    let t = vt / s;
    let impulse = n * np.y - t * mn;
    let nn = m3_outer(n, n);
    let proj = m3_sub(m3_sub(m3_identity(), m3_outer(t, t)), nn);
    let hess = m3_add(m3_scale(proj, mn / s), m3_scale(nn, np.z));
    return ContactTerms(cost, impulse, hess);
}

/// gain_terms: (cost, impulse h·τ, stiffness −d(hτ)/dv) of τ(v) = clamp(−K v + b, −e, e).
fn gain_terms(g: IcfGain, hw: f32, vd: f32) -> vec3f {
    let e = g.effort;
    if (g.gain > 0.0) {
        let u = g.bias - g.gain * vd;
        if (abs(u) <= e) {
            return vec3f(hw * 0.5 * u * u / g.gain, hw * u, hw * g.gain);
        }
        // Huber: e|u| − e²/2, continuous with the quadratic part.
        var eu = e;
        if (u < 0.0) {
            eu = -e;
        }
        return vec3f(hw * (e * abs(u) - 0.5 * e * e) / g.gain, hw * eu, 0.0);
    }
    // No velocity dependence: a constant (clamped) force.
    let tau = min(max(g.bias, -e), e);
    return vec3f(-hw * tau * vd, hw * tau, 0.0);
}

/// limit_terms: (cost, impulse along +sign, −dγ/dvn) of a one-sided limit at dof velocity vd.
fn limit_terms(l: IcfLimit, hw: f32, vd: f32) -> vec3f {
    let kappa = hw * l.stiffness + l.damping;
    let v_hat = -l.stiffness * l.g0 / kappa;
    let x = v_hat - l.sign * vd;
    if (x > 0.0) {
        return vec3f(0.5 * hw * kappa * x * x, hw * kappa * x, hw * kappa);
    }
    return vec3f(0.0);
}

/// J x for contact `ci` of world `w`, x = icf_vec row `row`.
fn contact_velocity(w: u32, ci: u32, row: u32) -> vec3f {
    var out = vec3f(0.0);
    let n = icf_con[con_at(w, ci)].jac_len;
    for (var e = 0u; e < n; e++) {
        let j = icf_jac[jac_at(w, ci, e)];
        out += j.col * icf_vec[ivec_at(w, row, j.dof)];
    }
    return out;
}

/// icf_vec row `dst` = A · row `src`.
fn icf_matvec(w: u32, src: u32, dst: u32) {
    let nv = dims.nv;
    for (var i = 0u; i < nv; i++) {
        var s = 0.0;
        for (var j = 0u; j < nv; j++) {
            s += icf_a[mass_at(w, i, j)] * icf_vec[ivec_at(w, src, j)];
        }
        icf_vec[ivec_at(w, dst, i)] = s;
    }
}

/// evaluate: ℓ at the iterate (row VEC_V), ∇ℓ into row VEC_GRAD and, when
/// `with_hess`, the dense Hessian into icf_factor. Leaves A v in VEC_AV and
/// J v in each contact's vc. Returns ℓ.
fn icf_eval(w: u32, with_hess: bool) -> f32 {
    let nv = dims.nv;
    let hw = icf_world[w].h;
    icf_matvec(w, VEC_V, VEC_AV);
    var cost = 0.0;
    for (var i = 0u; i < nv; i++) {
        let vi = icf_vec[ivec_at(w, VEC_V, i)];
        let av = icf_vec[ivec_at(w, VEC_AV, i)];
        let ri = icf_vec[ivec_at(w, VEC_R, i)];
        cost += 0.5 * vi * av - ri * vi;
        icf_vec[ivec_at(w, VEC_GRAD, i)] = av - ri;
    }
    if (with_hess) {
        for (var k = 0u; k < nv * nv; k++) {
            icf_factor[w * nv * nv + k] = icf_a[w * nv * nv + k];
        }
    }
    let ncon = icf_world[w].ncon;
    for (var ci = 0u; ci < ncon; ci++) {
        let at = con_at(w, ci);
        let vc = contact_velocity(w, ci, VEC_V);
        icf_con[at].vc = vc;
        let c = icf_con[at];
        let ct = contact_terms(c, hw, vc);
        cost += ct.cost;
        for (var e = 0u; e < c.jac_len; e++) {
            let j = icf_jac[jac_at(w, ci, e)];
            icf_vec[ivec_at(w, VEC_GRAD, j.dof)] -= dot3(j.col, ct.impulse);
        }
        if (with_hess) {
            // Jᵀ G J over the contact's non-zero columns only.
            for (var e1 = 0u; e1 < c.jac_len; e1++) {
                let j1 = icf_jac[jac_at(w, ci, e1)];
                let gj = m3_mul_v(ct.hess, j1.col);
                for (var e2 = 0u; e2 < c.jac_len; e2++) {
                    let j2 = icf_jac[jac_at(w, ci, e2)];
                    icf_factor[mass_at(w, j1.dof, j2.dof)] += dot3(gj, j2.col);
                }
            }
        }
    }
    for (var gi = 0u; gi < icf_dims.ngain; gi++) {
        let g = icf_gain[w * icf_dims.ngain + gi];
        let gt = gain_terms(g, hw, icf_vec[ivec_at(w, VEC_V, g.dof)]);
        cost += gt.x;
        icf_vec[ivec_at(w, VEC_GRAD, g.dof)] -= gt.y;
        if (with_hess) {
            icf_factor[mass_at(w, g.dof, g.dof)] += gt.z;
        }
    }
    for (var li = 0u; li < icf_dims.nlimit; li++) {
        let l = icf_limit[w * icf_dims.nlimit + li];
        let lt = limit_terms(l, hw, icf_vec[ivec_at(w, VEC_V, l.dof)]);
        cost += lt.x;
        icf_vec[ivec_at(w, VEC_GRAD, l.dof)] -= l.sign * lt.y;
        if (with_hess) {
            icf_factor[mass_at(w, l.dof, l.dof)] += lt.z;
        }
    }
    return cost;
}

/// prepare_line: A v, A w and, per contact, J v and J w for the line v + α w
/// (v = row VEC_V, w = row VEC_W).
fn icf_prepare_line(w: u32) {
    icf_matvec(w, VEC_V, VEC_AV);
    icf_matvec(w, VEC_W, VEC_AW);
    let ncon = icf_world[w].ncon;
    for (var ci = 0u; ci < ncon; ci++) {
        let at = con_at(w, ci);
        icf_con[at].vc = contact_velocity(w, ci, VEC_V);
        icf_con[at].uc = contact_velocity(w, ci, VEC_W);
    }
}

/// line_eval: (ℓ(α), ℓ'(α), ℓ''(α)) along v + α w; needs icf_prepare_line.
fn icf_line_eval(w: u32, alpha: f32) -> vec3f {
    let nv = dims.nv;
    let hw = icf_world[w].h;
    var q0 = 0.0;
    var q1 = 0.0;
    var q2 = 0.0;
    for (var i = 0u; i < nv; i++) {
        let vi = icf_vec[ivec_at(w, VEC_V, i)];
        let wi = icf_vec[ivec_at(w, VEC_W, i)];
        let av = icf_vec[ivec_at(w, VEC_AV, i)];
        let ri = icf_vec[ivec_at(w, VEC_R, i)];
        q0 += 0.5 * vi * av - ri * vi;
        q1 += wi * (av - ri);
        q2 += wi * icf_vec[ivec_at(w, VEC_AW, i)];
    }
    var f = q0 + alpha * q1 + 0.5 * alpha * alpha * q2;
    var d1 = q1 + alpha * q2;
    var d2 = q2;
    let ncon = icf_world[w].ncon;
    for (var ci = 0u; ci < ncon; ci++) {
        let c = icf_con[con_at(w, ci)];
        let ct = contact_terms(c, hw, c.vc + c.uc * alpha);
        f += ct.cost;
        d1 -= dot3(ct.impulse, c.uc);
        d2 += dot3(c.uc, m3_mul_v(ct.hess, c.uc));
    }
    for (var gi = 0u; gi < icf_dims.ngain; gi++) {
        let g = icf_gain[w * icf_dims.ngain + gi];
        let wd = icf_vec[ivec_at(w, VEC_W, g.dof)];
        let gt = gain_terms(g, hw, icf_vec[ivec_at(w, VEC_V, g.dof)] + alpha * wd);
        f += gt.x;
        d1 -= gt.y * wd;
        d2 += gt.z * wd * wd;
    }
    for (var li = 0u; li < icf_dims.nlimit; li++) {
        let l = icf_limit[w * icf_dims.nlimit + li];
        let wd = icf_vec[ivec_at(w, VEC_W, l.dof)];
        let lt = limit_terms(l, hw, icf_vec[ivec_at(w, VEC_V, l.dof)] + alpha * wd);
        f += lt.x;
        d1 -= l.sign * lt.y * wd;
        d2 += lt.z * wd * wd;
    }
    return vec3f(f, d1, d2);
}

/// ℓ, ∇ℓ (row VEC_GRAD) and the dense Hessian (icf_factor) at the iterate
/// in row VEC_V; ℓ into icf_world[w].cost. One thread per world (for
/// parity tests of the cost; the solver calls icf_eval directly).
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_evaluate(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld || icf_world[w].solving == 0u) {
        return;
    }
    icf_world[w].cost = icf_eval(w, true);
}
