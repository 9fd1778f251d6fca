// Newton's method on the convex ICF cost with dense Cholesky and an exact
// line search: WGSL twin of src/icf/solver.rs (IcfSolver::solve). Composed
// after icf_cost.wgsl. One thread per world runs the whole Newton loop
// (worlds converge after different iteration counts; the iteration cap
// bounds the work), on the world's blocks of icf_factor and icf_vec.

/// f32::EPSILON.
const F32_EPS: f32 = 1.1920929e-7;
/// Stands for +∞ in the θ test (WGSL may assume no infinities).
const BIG: f32 = 3.0e38;

/// ‖D x‖ of icf_vec row `row` with D = diag(M)^(−½) (row VEC_SCALE).
fn scaled_norm(w: u32, row: u32) -> f32 {
    var s = 0.0;
    for (var i = 0u; i < dims.nv; i++) {
        let y = icf_vec[ivec_at(w, row, i)] * icf_vec[ivec_at(w, VEC_SCALE, i)];
        s += y * y;
    }
    return sqrt(s);
}

/// In-place Cholesky of the world's icf_factor (math::cholesky_factor).
/// Returns the failing pivot, or NONE on success.
fn cholesky_factor(w: u32) -> u32 {
    let nv = dims.nv;
    for (var j = 0u; j < nv; j++) {
        var d = icf_factor[mass_at(w, j, j)];
        for (var k = 0u; k < j; k++) {
            let l = icf_factor[mass_at(w, j, k)];
            d -= l * l;
        }
        if (!(d > 0.0) || non_finite(d)) {
            return j;
        }
        let ds = sqrt(d);
        icf_factor[mass_at(w, j, j)] = ds;
        let inv = 1.0 / ds;
        for (var i = j + 1u; i < nv; i++) {
            var s = icf_factor[mass_at(w, i, j)];
            for (var k = 0u; k < j; k++) {
                s -= icf_factor[mass_at(w, i, k)] * icf_factor[mass_at(w, j, k)];
            }
            icf_factor[mass_at(w, i, j)] = s * inv;
        }
    }
    return NONE;
}

/// Solves L Lᵀ x = b in place on icf_vec row `row` (math::cholesky_solve_in_place).
fn cholesky_solve(w: u32, row: u32) {
    let nv = dims.nv;
    for (var i = 0u; i < nv; i++) {
        var s = icf_vec[ivec_at(w, row, i)];
        for (var k = 0u; k < i; k++) {
            s -= icf_factor[mass_at(w, i, k)] * icf_vec[ivec_at(w, row, k)];
        }
        icf_vec[ivec_at(w, row, i)] = s / icf_factor[mass_at(w, i, i)];
    }
    for (var ii = 0u; ii < nv; ii++) {
        let i = nv - 1u - ii;
        var s = icf_vec[ivec_at(w, row, i)];
        for (var k = i + 1u; k < nv; k++) {
            s -= icf_factor[mass_at(w, k, i)] * icf_vec[ivec_at(w, row, k)];
        }
        icf_vec[ivec_at(w, row, i)] = s / icf_factor[mass_at(w, i, i)];
    }
}

/// IcfSolver::factorize: Hessian at the iterate into icf_factor, then
/// Cholesky; on failure (rounding in f32) retries with a growing diagonal
/// shift relative to the diagonal. `assembled`: the Hessian is already in
/// icf_factor. Returns the failing pivot of the last attempt, or NONE.
fn icf_factorize(w: u32, assembled: bool) -> u32 {
    let nv = dims.nv;
    var shift = 0.0;
    var pivot = NONE;
    for (var attempt = 0u; attempt < 6u; attempt++) {
        if (attempt > 0u || !assembled) {
            icf_eval(w, true);
        }
        if (shift > 0.0) {
            for (var i = 0u; i < nv; i++) {
                let d = icf_factor[mass_at(w, i, i)];
                icf_factor[mass_at(w, i, i)] = d + shift * max(abs(d), 1.0);
            }
        }
        pivot = cholesky_factor(w);
        if (pivot == NONE) {
            return NONE;
        }
        if (shift == 0.0) {
            shift = F32_EPS * 16.0;
        } else {
            shift = shift * 100.0;
        }
    }
    return pivot;
}

/// hermite_min: minimiser in (0, 1) of the cubic with derivative
/// d0 + 2 c2 t + 3 c3 t², or −1 when there is none.
fn hermite_min(d0: f32, c2: f32, c3: f32) -> f32 {
    let a = 3.0 * c3;
    let b = 2.0 * c2;
    let c = d0;
    var t: f32;
    if (abs(a) <= F32_EPS * (abs(b) + abs(c))) {
        if (b > 0.0) {
            t = -c / b;
        } else {
            return -1.0;
        }
    } else {
        let disc = b * b - 4.0 * a * c;
        if (disc < 0.0) {
            return -1.0;
        }
        // The root where the derivative crosses from negative to positive.
        var s = sqrt(disc);
        if (b < 0.0) {
            s = -s;
        }
        let qq = -0.5 * (b + s);
        let r1 = qq / a;
        let r2 = c / qq;
        if (r1 > 0.0 && r1 < 1.0 && b + 2.0 * a * r1 > 0.0) {
            t = r1;
        } else if (r2 > 0.0 && r2 < 1.0 && b + 2.0 * a * r2 > 0.0) {
            t = r2;
        } else {
            return -1.0;
        }
    }
    if (t > 0.0 && t < 1.0) {
        return t;
    }
    return -1.0;
}

/// IcfSolver::line_search along row VEC_W from row VEC_V: α = 1 when
/// ℓ'(1) ≤ 0; otherwise the root of ℓ'(α) in (0, 1) by Newton with bisection
/// fallback, from the minimiser of the cubic Hermite interpolant. Returns (α, iterations).
fn line_search(w: u32, max_iter: u32) -> vec2f {
    icf_prepare_line(w);
    let e0 = icf_line_eval(w, 0.0);
    let f0 = e0.x;
    let d0 = e0.y;
    if (!(d0 < 0.0)) {
        return vec2f(0.0, 1.0);
    }
    let e1 = icf_line_eval(w, 1.0);
    let f1 = e1.x;
    let d1 = e1.y;
    if (d1 <= 0.0) {
        return vec2f(1.0, 2.0);
    }
    // Cubic Hermite p(t) = f0 + d0 t + c2 t² + c3 t³ through both ends.
    let df = f1 - f0;
    let c2 = 3.0 * df - 2.0 * d0 - d1;
    let c3 = d0 + d1 - 2.0 * df;
    var alpha = hermite_min(d0, c2, c3);
    if (alpha < 0.0) {
        alpha = 0.5;
    }
    var lo = 0.0;
    var hi = 1.0;
    let tol = abs(d0) * max(1e-10, F32_EPS * 10.0);
    var iters = 2u;
    for (var it = 0u; it < max_iter; it++) {
        let e = icf_line_eval(w, alpha);
        let d = e.y;
        let dd = e.z;
        iters++;
        if (abs(d) <= tol) {
            break;
        }
        if (d < 0.0) {
            lo = alpha;
        } else {
            hi = alpha;
        }
        let newton = alpha - d / dd;
        if (dd > 0.0 && newton > lo && newton < hi) {
            alpha = newton;
        } else {
            alpha = 0.5 * (lo + hi);
        }
        if (hi - lo <= F32_EPS * 4.0) {
            break;
        }
    }
    return vec2f(alpha, f32(iters));
}

fn solve_done(w: u32, status: u32, detail: f32) {
    icf_world[w].status = status;
    icf_world[w].detail = detail;
    icf_world[w].converged = u32(status == SOLVE_OK);
}

/// IcfSolver::solve: minimises ℓ from the warm start in row VEC_V, which
/// receives v1; statistics and the SOLVE_* status into icf_world. One
/// thread per world.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_solve(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld || icf_world[w].solving == 0u) {
        return;
    }
    let nv = dims.nv;
    let prm = icf_params;
    // The f32 floor of the relative tolerance (1e-6), as on the CPU.
    let eps = max(prm.tolerance, 1e-6);
    let tol = eps * max(scaled_norm(w, VEC_R), 1.0);
    icf_world[w].tolerance = tol;
    icf_world[w].iterations = 0u;
    icf_world[w].line_search_iterations = 0u;
    icf_world[w].factorizations = 0u;
    icf_world[w].converged = 0u;
    let reuse = prm.hessian_reuse != 0u;
    var factor_valid = reuse && icf_world[w].factor_valid != 0u;
    var prev_step = BIG;
    var prev_residual = BIG;
    for (var iter = 0u; iter < prm.max_iterations; iter++) {
        // Without a usable factor the Hessian is assembled with the gradient
        // (one pass); with one, only if the reuse rule asks for a new factor.
        let assemble = !factor_valid;
        icf_eval(w, assemble);
        let gnorm = scaled_norm(w, VEC_GRAD);
        icf_world[w].residual = gnorm;
        if (non_finite(gnorm)) {
            icf_world[w].factor_valid = 0u;
            solve_done(w, SOLVE_NON_FINITE, 0.0);
            return;
        }
        if (gnorm <= tol) {
            icf_world[w].iterations = iter;
            icf_world[w].factor_valid = u32(factor_valid);
            solve_done(w, SOLVE_OK, 0.0);
            return;
        }
        var need_factor = !factor_valid;
        if (!need_factor && iter > 0u) {
            // Stale factor: linear convergence at rate ρ. Keep it only if ρ
            // predicts reaching the tolerance within the iteration budget.
            let rho = gnorm / prev_residual;
            var budget = 1.0;
            if (prm.reuse_target_iterations > iter + 1u) {
                budget = f32(prm.reuse_target_iterations - iter);
            }
            var predicted = BIG;
            if (rho < 1.0) {
                predicted = log(tol / gnorm) / log(rho);
            }
            need_factor = !(predicted <= budget);
        }
        prev_residual = gnorm;
        if (need_factor) {
            let pivot = icf_factorize(w, assemble);
            if (pivot != NONE) {
                icf_world[w].factor_valid = 0u;
                solve_done(w, SOLVE_NOT_PD, f32(pivot));
                return;
            }
            factor_valid = true;
            icf_world[w].factorizations += 1u;
        }
        for (var i = 0u; i < nv; i++) {
            icf_vec[ivec_at(w, VEC_W, i)] = -icf_vec[ivec_at(w, VEC_GRAD, i)];
        }
        cholesky_solve(w, VEC_W);
        let ls = line_search(w, prm.max_line_search_iterations);
        let alpha = ls.x;
        icf_world[w].line_search_iterations += u32(ls.y);
        var step = 0.0;
        for (var i = 0u; i < nv; i++) {
            let dv = alpha * icf_vec[ivec_at(w, VEC_W, i)];
            icf_vec[ivec_at(w, VEC_V, i)] += dv;
            let s = dv / icf_vec[ivec_at(w, VEC_SCALE, i)];
            step += s * s;
        }
        step = sqrt(step);
        icf_world[w].iterations = iter + 1u;
        let theta = step / prev_step;
        if (prm.theta_criterion != 0u && theta < 1.0 && theta / (1.0 - theta) * step <= tol) {
            icf_eval(w, false);
            icf_world[w].residual = scaled_norm(w, VEC_GRAD);
            icf_world[w].factor_valid = u32(factor_valid);
            solve_done(w, SOLVE_OK, 0.0);
            return;
        }
        if (alpha == 0.0 || step == 0.0) {
            // No descent possible at this precision from a fresh factor:
            // the iterate is as good as it gets.
            if (need_factor) {
                icf_world[w].factor_valid = u32(factor_valid);
                solve_done(w, SOLVE_STALLED, gnorm);
                return;
            }
            factor_valid = false;
        }
        prev_step = step;
    }
    icf_world[w].factor_valid = u32(factor_valid);
    solve_done(w, SOLVE_MAX_ITERATIONS, f32(prm.max_iterations));
}
