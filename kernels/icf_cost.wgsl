// Cost ℓ(v), gradient and Hessian of the ICF problem, and the cost along
// a search line: WGSL twin of src/icf/cost.rs. A library file: composed
// with icf_solver.wgsl into the solver stages icf_solve_coop.wgsl and
// icf_solve_serial.wgsl (src/gpu/shaders.rs), which define SOLVER_THREADS
// and the workgroup helpers (wg_sum, wg_max, wg_bcast_*, wg_sync).
//
// SOLVER_THREADS threads share one world (16 in the cooperative stage, 64 in
// its wide variant, 1 in the serial one), each owning the rows i ≡ lid (mod SOLVER_THREADS) of the
// dense arrays and the contacts c ≡ lid. A row of ∇ℓ and H is summed by its owner in the CPU's
// order (A, then contacts in order, then gains, then limits); scalar sums
// (ℓ, norms, line-search derivatives) are tree reductions. Values that steer
// control flow are broadcast with workgroupUniformLoad, so every barrier is
// reached by the whole workgroup. (Splitting a world over threads also
// keeps each invocation's loop count small: Mesa's llvmpipe stops any
// invocation after 65535 loop iterations in total.)

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
    return contact_terms_with(c, hw, vc, false);
}

/// contact_terms_with: with `secant`, the friction curvature along the slip
/// is the secant μn₀/s (see icf::cost::contact_terms_with).
fn contact_terms_with(c: IcfContact, hw: f32, vc: vec3f, secant: bool) -> ContactTerms {
    if (c.law == 1u) {
        return soft_contact_terms(c, hw, vc);
    }
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
    var proj = m3_sub(m3_identity(), nn);
    if (!secant) {
        proj = m3_sub(proj, m3_outer(t, t));
    }
    let hess = m3_add(m3_scale(proj, mn / s), m3_scale(nn, np.z));
    return ContactTerms(cost, impulse, hess);
}

/// soft_contact_terms: MuJoCo's soft contact (icf::cost::soft_contact_terms):
/// Σ over its rows (n, or the pyramid edges n ± μ_k t_k) with residual
/// r = d·(vc − (1 − hB)·vc0) + h·K·d·x < 0 of ½·D·r², the impulse
/// −D·r·d and the Hessian D·d dᵀ.
fn soft_contact_terms(c: IcfContact, hw: f32, vc: vec3f) -> ContactTerms {
    let n = c.normal;
    let x = vc - c.vc0 * (1.0 - hw * c.soft_b);
    let xn = dot3(n, x) + hw * c.soft_kpos;
    var out = ContactTerms(0.0, vec3f(0.0), M3(vec3f(0.0), vec3f(0.0), vec3f(0.0)));
    if (c.soft_mu.x == 0.0 && c.soft_mu.y == 0.0) {
        soft_row_add(&out, c.soft_d, n, xn);
        return out;
    }
    let t2 = cross3(n, c.t1);
    for (var k = 0u; k < 2u; k++) {
        var t = c.t1;
        var mu = c.soft_mu.x;
        if (k == 1u) {
            t = t2;
            mu = c.soft_mu.y;
        }
        let y = mu * dot3(t, x);
        soft_row_add(&out, c.soft_d, n + t * mu, xn + y);
        soft_row_add(&out, c.soft_d, n - t * mu, xn - y);
    }
    return out;
}

/// Adds one unilateral soft row with direction `d` and residual `r` (acting while r < 0).
fn soft_row_add(out: ptr<function, ContactTerms>, dd: f32, d: vec3f, r: f32) {
    if (r < 0.0) {
        (*out).cost += 0.5 * dd * r * r;
        (*out).impulse += d * (-dd * r);
        (*out).hess = m3_add((*out).hess, m3_scale(m3_outer(d, d), dd));
    }
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
    if (l.soft != 0u) {
        // MuJoCo's soft limit (icf::cost::soft_row_terms with bounds [0, ∞)).
        if (!(l.soft_d > 0.0)) {
            return vec3f(0.0);
        }
        let vref = (1.0 - hw * l.soft_b) * l.soft_vel0 - hw * l.soft_kpos;
        let r = l.sign * vd - vref;
        let g = -l.soft_d * r;
        if (g < 0.0) {
            return vec3f(0.0);
        }
        return vec3f(0.5 * l.soft_d * r * r, g, l.soft_d);
    }
    let kappa = hw * l.stiffness + l.damping;
    if (!(kappa > 0.0)) {
        return vec3f(0.0);
    }
    let v_hat = l.fe0 / kappa;
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
        out += j.col * ivec(w, row, j.dof);
    }
    return out;
}

/// Most dof blocks (src/gpu/model.rs MAX_DOF_BLOCKS): a bit each in a u32.
const MAX_BLOCKS: u32 = 32u;

/// Per block b: the later blocks whose rows column block b of L reaches
/// (contact couplings and the fill of natural order); and the earlier
/// blocks whose columns reach the rows of b (the transpose). Set by
/// plan_blocks for the launch's contacts; every thread of a world holds
/// the same.
var<private> blk_later: array<u32, MAX_BLOCKS>;
var<private> blk_earlier: array<u32, MAX_BLOCKS>;
/// icf_eval assembles only the Hessian entries the structured
/// factorization and the rounding floor read (row i: the blocks of
/// blk_later, blk_earlier and its own), not the nv² of the dense one.
/// Set by plan_blocks (icf_solver.wgsl) when the structured factorization
/// runs on a factor that is not kept.
var<private> blk_assemble: bool = false;

/// The first run of consecutive blocks of mask m ≠ 0: (its first block,
/// the block after its last).
fn first_run(m: u32) -> vec2u {
    let c0 = firstTrailingBit(m);
    let gaps = ~(m >> c0);
    var c1 = 32u;
    if (gaps != 0u) {
        c1 = c0 + firstTrailingBit(gaps);
    }
    return vec2u(c0, c1);
}

/// The dofs [lo, hi) of the first run of consecutive blocks of *m ≠ 0,
/// and *m without that run.
fn take_run(m: ptr<function, u32>) -> vec2u {
    let run = first_run(*m);
    *m = drop_below(*m, run.y);
    return vec2u(block_start(run.x), block_start(run.y));
}

/// The lowest block of *m ≠ 0, and *m without it.
fn take_bit(m: ptr<function, u32>) -> u32 {
    let c = firstTrailingBit(*m);
    *m &= *m - 1u;
    return c;
}

/// m without its blocks below c.
fn drop_below(m: u32, c: u32) -> u32 {
    if (c >= 32u) {
        return 0u;
    }
    return m & ~((1u << c) - 1u);
}

/// First dof of dof block b (Dof.block), nv for b = icf_dims.nblock.
fn block_start(b: u32) -> u32 {
    return icf_dims.block_start[b / 4u][b % 4u];
}

/// Row i of A times icf_vec row `src`. A = M + hD never couples two dof
/// blocks: only row i's block is summed (the products skipped are exact
/// zeros, so the sum is the same as over the whole row).
fn a_row_dot(w: u32, i: u32, src: u32) -> f32 {
    var lo = 0u;
    var hi = dims.nv;
    if (icf_dims.nblock > 1u) {
        let b = dofs[i].block;
        lo = block_start(b);
        hi = block_start(b + 1u);
    }
    var s = 0.0;
    for (var j = lo; j < hi; j++) {
        s += amat(w, i, j) * ivec(w, src, j);
    }
    return s;
}

/// evaluate (cooperative): ℓ at the iterate (row VEC_V), ∇ℓ into row
/// VEC_GRAD and, when `with_hess`, the dense Hessian into icf_factor (full
/// rows). Leaves A v in VEC_AV and, per contact, vc, the impulse and G.
/// `ncon` must be uniform. Returns ℓ (uniform).
/// Set by the Newton loop: this iteration's Hessian takes the secant
/// friction curvature (SolverParams::secant_friction_iterations).
var<private> secant_friction: bool = false;

fn icf_eval(w: u32, lid: u32, ncon: u32, with_hess: bool) -> f32 {
    let nv = dims.nv;
    let hw = icf_world[w].h;
    var part = 0.0;
    for (var ci = lid; ci < ncon; ci += SOLVER_THREADS) {
        let at = con_at(w, ci);
        let vc = contact_velocity(w, ci, VEC_V);
        let ct = contact_terms_with(icf_con[at], hw, vc, with_hess && secant_friction);
        part += ct.cost;
        icf_con[at].vc = vc;
        icf_con[at].impulse = ct.impulse;
        icf_con[at].g0 = ct.hess.r0;
        icf_con[at].g1 = ct.hess.r1;
        icf_con[at].g2 = ct.hess.r2;
    }
    wg_sync();
    for (var i = lid; i < nv; i += SOLVER_THREADS) {
        let av = a_row_dot(w, i, VEC_V);
        set_ivec(w, VEC_AV, i, av);
        let vi = ivec(w, VEC_V, i);
        let ri = ivec(w, VEC_R, i);
        part += 0.5 * vi * av - ri * vi;
        var g = av - ri;
        if (with_hess) {
            if (blk_assemble) {
                // A couples no two blocks: row i's entries in the other
                // blocks start at zero.
                let b = dofs[i].block;
                let own = vec2u(block_start(b), block_start(b + 1u));
                var m = blk_later[b] | blk_earlier[b] | (1u << b);
                loop {
                    if (m == 0u) {
                        break;
                    }
                    let run = take_run(&m);
                    for (var j = run.x; j < run.y; j++) {
                        if (j >= own.x && j < own.y) {
                            set_fac(w, i, j, amat(w, i, j));
                        } else {
                            set_fac(w, i, j, 0.0);
                        }
                    }
                }
            } else {
                for (var j = 0u; j < nv; j++) {
                    set_fac(w, i, j, amat(w, i, j));
                }
            }
        }
        let nk = icf_rows[rows_at(w, i, 0u)];
        for (var k = 1u; k <= nk; k++) {
            let idx = icf_rows[rows_at(w, i, k)];
            let ci = idx / icf_dims.ndofc;
            let c = icf_con[con_at(w, ci)];
            let col = icf_jac[jac_at(w, ci, idx % icf_dims.ndofc)].col;
            g -= dot3(col, c.impulse);
            if (with_hess) {
                let gj = m3_mul_v(M3(c.g0, c.g1, c.g2), col);
                for (var e2 = 0u; e2 < c.jac_len; e2++) {
                    let j2 = icf_jac[jac_at(w, ci, e2)];
                    set_fac(w, i, j2.dof, fac(w, i, j2.dof) + dot3(gj, j2.col));
                }
            }
        }
        for (var gi = 0u; gi < icf_dims.ngain; gi++) {
            let gn = icf_gain[gain_at(w, gi)];
            if (gn.dof == i) {
                let gt = gain_terms(gn, hw, vi);
                part += gt.x;
                g -= gt.y;
                if (with_hess) {
                    set_fac(w, i, i, fac(w, i, i) + gt.z);
                }
            }
        }
        for (var li = 0u; li < icf_dims.nlimit; li++) {
            let l = icf_limit[limit_at(w, li)];
            if (l.dof == i) {
                let lt = limit_terms(l, hw, vi);
                part += lt.x;
                g -= l.sign * lt.y;
                if (with_hess) {
                    set_fac(w, i, i, fac(w, i, i) + lt.z);
                }
            }
        }
        set_ivec(w, VEC_GRAD, i, g);
    }
    let cost = wg_sum(lid, vec4f(part, 0.0, 0.0, 0.0)).x;
    wg_sync();
    return cost;
}

/// prepare_line (cooperative): A w into VEC_AW and J w per contact (A v and
/// J v are still those of the last icf_eval at the same v); returns the
/// quadratic part's (ℓ, ℓ', ℓ'') coefficients (q0, q1, q2) and ℓ'(0) =
/// ∇ℓ·w (row VEC_GRAD, as on the CPU: no evaluation at α = 0), uniform.
fn icf_prepare_line(w: u32, lid: u32, ncon: u32) -> vec4f {
    var q = vec4f(0.0);
    for (var i = lid; i < dims.nv; i += SOLVER_THREADS) {
        let aw = a_row_dot(w, i, VEC_W);
        set_ivec(w, VEC_AW, i, aw);
        let vi = ivec(w, VEC_V, i);
        let wi = ivec(w, VEC_W, i);
        let av = ivec(w, VEC_AV, i);
        let ri = ivec(w, VEC_R, i);
        q += vec4f(0.5 * vi * av - ri * vi, wi * (av - ri), wi * aw, ivec(w, VEC_GRAD, i) * wi);
    }
    for (var ci = lid; ci < ncon; ci += SOLVER_THREADS) {
        icf_con[con_at(w, ci)].uc = contact_velocity(w, ci, VEC_W);
    }
    let s = wg_sum(lid, q);
    wg_sync();
    return s;
}

/// line_eval (cooperative): (ℓ(α), ℓ'(α), ℓ''(α)) along v + α w, from the
/// quadratic coefficients `qc` of icf_prepare_line. Uniform result.
fn icf_line_eval(w: u32, lid: u32, ncon: u32, qc: vec3f, alpha: f32) -> vec3f {
    let hw = icf_world[w].h;
    var part = vec3f(0.0);
    for (var ci = lid; ci < ncon; ci += SOLVER_THREADS) {
        let c = icf_con[con_at(w, ci)];
        let ct = contact_terms(c, hw, c.vc + c.uc * alpha);
        part += vec3f(ct.cost, -dot3(ct.impulse, c.uc), dot3(c.uc, m3_mul_v(ct.hess, c.uc)));
    }
    // Gains and limits: one thread each, in turn.
    for (var gi = lid; gi < icf_dims.ngain; gi += SOLVER_THREADS) {
        let g = icf_gain[gain_at(w, gi)];
        let wd = ivec(w, VEC_W, g.dof);
        let gt = gain_terms(g, hw, ivec(w, VEC_V, g.dof) + alpha * wd);
        part += vec3f(gt.x, -gt.y * wd, gt.z * wd * wd);
    }
    for (var li = lid; li < icf_dims.nlimit; li += SOLVER_THREADS) {
        let l = icf_limit[limit_at(w, li)];
        let wd = ivec(w, VEC_W, l.dof);
        let lt = limit_terms(l, hw, ivec(w, VEC_V, l.dof) + alpha * wd);
        part += vec3f(lt.x, -l.sign * lt.y * wd, lt.z * wd * wd);
    }
    let s = wg_sum(lid, vec4f(part, 0.0)).xyz;
    return vec3f(qc.x + alpha * qc.y + 0.5 * alpha * alpha * qc.z, qc.y + alpha * qc.z, qc.z) + s;
}

/// evaluate for one world (the icf_evaluate entry points): ℓ, ∇ℓ (row
/// VEC_GRAD) and the dense Hessian (icf_factor) at the iterate in row VEC_V;
/// ℓ into icf_world[w].cost.
fn evaluate_world(w: u32, lid: u32) {
    if (wg_bcast_u32(lid, icf_world[w].solving) == 0u) {
        return;
    }
    let ncon = wg_bcast_u32(lid, icf_world[w].ncon);
    solver_load(w, lid, false);
    let cost = icf_eval(w, lid, ncon, true);
    solver_store(w, lid, true);
    if (lid == 0u) {
        icf_world[w].cost = cost;
    }
}
