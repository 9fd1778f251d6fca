// Newton's method on the convex ICF cost with dense Cholesky and an exact
// line search: WGSL twin of src/icf/solver.rs (IcfSolver::solve). A library
// file (see icf_cost.wgsl): SOLVER_THREADS threads share one world, rows
// and contacts split over them.
//
// A solve may span several dispatches: each pauses before its loop
// iterations could exceed icf_params.loop_budget (Mesa's llvmpipe stops an
// invocation after 65535 loop iterations in total; hardware adapters get
// no budget) and keeps the Newton state (iterate, iteration count, last
// step and residual) in the world's buffers; the host dispatches again
// while icf_count_unfinished finds unfinished solves.

/// f32::EPSILON.
const F32_EPS: f32 = 1.1920929e-7;
/// Stands for +∞ in the θ test (WGSL may assume no infinities).
const BIG: f32 = 3.0e38;

/// ‖D x‖ of icf_vec row `row` with D = diag(M)^(−½) (row VEC_SCALE); uniform.
fn scaled_norm(w: u32, lid: u32, row: u32) -> f32 {
    var s = 0.0;
    for (var i = lid; i < dims.nv; i += SOLVER_THREADS) {
        let y = ivec(w, row, i) * ivec(w, VEC_SCALE, i);
        s += y * y;
    }
    return sqrt(wg_sum(lid, vec4f(s, 0.0, 0.0, 0.0)).x);
}

/// rounding_floor (src/icf/solver.rs): EPS·‖D (|H| |v|)‖, the change of the
/// gradient a one-ulp change of the iterate can cause, from the Hessian
/// still unfactored in icf_factor. Below it the residual is rounding noise.
fn rounding_floor(w: u32, lid: u32) -> f32 {
    let nv = dims.nv;
    var sum = 0.0;
    for (var i = lid; i < nv; i += SOLVER_THREADS) {
        var s = 0.0;
        if (blk_on) {
            // Only the blocks row i's block shares with others (the terms
            // skipped are exact zeros).
            let b = dofs[i].block;
            var m = blk_later[b] | blk_earlier[b] | (1u << b);
            loop {
                if (m == 0u) {
                    break;
                }
                let run = take_run(&m);
                for (var j = run.x; j < run.y; j++) {
                    s += abs(fac(w, i, j) * ivec(w, VEC_V, j));
                }
            }
        } else {
            for (var j = 0u; j < nv; j++) {
                s += abs(fac(w, i, j) * ivec(w, VEC_V, j));
            }
        }
        let y = s * ivec(w, VEC_SCALE, i);
        sum += y * y;
    }
    return F32_EPS * sqrt(wg_sum(lid, vec4f(sum, 0.0, 0.0, 0.0)).x);
}

/// In-place Cholesky of the world's icf_factor (math::cholesky_factor),
/// right-looking: after column j, each row owner subtracts L_ij L_kj from
/// its entries (i, k), k ≤ i, so every entry sees the same subtractions in
/// the same order as the CPU's left-looking loops. Returns the failing
/// pivot, or NONE (uniform).
fn cholesky_factor(w: u32, lid: u32) -> u32 {
    let nv = dims.nv;
    for (var j = 0u; j < nv; j++) {
        wg_sync();
        let d = wg_bcast_f32(lid, fac(w, j, j));
        if (!(d > 0.0) || non_finite(d)) {
            return j;
        }
        let ds = sqrt(d);
        let inv = 1.0 / ds;
        if (lid == j % SOLVER_THREADS) {
            set_fac(w, j, j, ds);
        }
        // Owned rows below j, in increasing order.
        let first = j + 1u + (lid + SOLVER_THREADS - (j + 1u) % SOLVER_THREADS) % SOLVER_THREADS;
        for (var i = first; i < nv; i += SOLVER_THREADS) {
            set_fac(w, i, j, fac(w, i, j) * inv);
        }
        wg_sync();
        for (var i = first; i < nv; i += SOLVER_THREADS) {
            let lij = fac(w, i, j);
            var k = j + 1u;
            // Four entries per iteration (fewer loop iterations, same arithmetic).
            for (; k + 3u <= i; k += 4u) {
                set_fac(w, i, k, fac(w, i, k) - lij * fac(w, k, j));
                set_fac(w, i, k + 1u, fac(w, i, k + 1u) - lij * fac(w, k + 1u, j));
                set_fac(w, i, k + 2u, fac(w, i, k + 2u) - lij * fac(w, k + 2u, j));
                set_fac(w, i, k + 3u, fac(w, i, k + 3u) - lij * fac(w, k + 3u, j));
            }
            for (; k <= i; k++) {
                set_fac(w, i, k, fac(w, i, k) - lij * fac(w, k, j));
            }
        }
    }
    wg_sync();
    return NONE;
}

/// Solves L Lᵀ x = b in place on icf_vec row `row`, column by column.
fn cholesky_solve(w: u32, lid: u32, row: u32) {
    let nv = dims.nv;
    for (var j = 0u; j < nv; j++) {
        wg_sync();
        let y = wg_bcast_f32(lid, ivec(w, row, j) / fac(w, j, j));
        if (lid == j % SOLVER_THREADS) {
            set_ivec(w, row, j, y);
        }
        let first = j + 1u + (lid + SOLVER_THREADS - (j + 1u) % SOLVER_THREADS) % SOLVER_THREADS;
        for (var i = first; i < nv; i += SOLVER_THREADS) {
            set_ivec(w, row, i, ivec(w, row, i) - fac(w, i, j) * y);
        }
    }
    for (var jj = 0u; jj < nv; jj++) {
        let j = nv - 1u - jj;
        wg_sync();
        let x = wg_bcast_f32(lid, ivec(w, row, j) / fac(w, j, j));
        if (lid == j % SOLVER_THREADS) {
            set_ivec(w, row, j, x);
        }
        for (var i = lid; i < j; i += SOLVER_THREADS) {
            set_ivec(w, row, i, ivec(w, row, i) - fac(w, j, i) * x);
        }
    }
    wg_sync();
}

// ---------------------------------------------------------------- the structured factorization
//
// H = A + Σ JᵀGJ + gains and limits is block diagonal over the dof blocks
// (kinematic trees, Dof.block; A never couples two) except where a contact
// couples two blocks. In the right-looking Cholesky above, run in natural
// order, every entry of L in a block pair that neither a contact nor the
// fill of an earlier column couples stays exactly zero, and so do the
// products that would update it. cholesky_factor_blocks and
// cholesky_solve_blocks skip exactly those (a − 0·x) operations: every
// other entry sees the same operations in the same order, and the factor
// and the solutions equal the dense ones bit for bit (for finite values).
// Work: about Σ over columns of (rows the column reaches)² / 2 instead of
// nv³ / 6. plan_blocks chooses it per solve launch when its loop count is
// smaller than the dense one's (never for one block: a single tree).
// The CPU's block factorization (src/icf/sparse.rs, BlockStructure) orders
// the trees by minimum degree instead, with less fill; natural order here
// keeps the structured factor equal to this file's dense one.
// The block masks (blk_later, blk_earlier) and their run helpers live in
// icf_cost.wgsl, whose icf_eval assembles only the entries they reach.

/// The structured variants run in this launch (plan_blocks; uniform).
var<private> blk_on: bool = false;
/// icf_factor holds a factor computed in this launch with the structure of
/// blk_later (a factor kept from an earlier launch is solved densely).
var<private> blk_factor: bool = false;

/// The first row at or after `lo` that thread `lid` owns (i ≡ lid mod SOLVER_THREADS).
fn owned_from(lid: u32, lo: u32) -> u32 {
    return lo + (lid + SOLVER_THREADS - lo % SOLVER_THREADS) % SOLVER_THREADS;
}

/// Rows of [lo, hi) that thread `lid` owns.
fn owned_count(lid: u32, lo: u32, hi: u32) -> f32 {
    let first = owned_from(lid, lo);
    if (first >= hi) {
        return 0.0;
    }
    return f32((hi - 1u - first) / SOLVER_THREADS + 1u);
}

/// fac(i, k) −= lij·fac(k, j) for k in [k0, k1): four per loop iteration,
/// the last ones without a loop.
fn row_update(w: u32, i: u32, j: u32, lij: f32, k0: u32, k1: u32) {
    var k = k0;
    for (; k + 4u <= k1; k += 4u) {
        set_fac(w, i, k, fac(w, i, k) - lij * fac(w, k, j));
        set_fac(w, i, k + 1u, fac(w, i, k + 1u) - lij * fac(w, k + 1u, j));
        set_fac(w, i, k + 2u, fac(w, i, k + 2u) - lij * fac(w, k + 2u, j));
        set_fac(w, i, k + 3u, fac(w, i, k + 3u) - lij * fac(w, k + 3u, j));
    }
    if (k < k1) {
        set_fac(w, i, k, fac(w, i, k) - lij * fac(w, k, j));
    }
    if (k + 1u < k1) {
        set_fac(w, i, k + 1u, fac(w, i, k + 1u) - lij * fac(w, k + 1u, j));
    }
    if (k + 2u < k1) {
        set_fac(w, i, k + 2u, fac(w, i, k + 2u) - lij * fac(w, k + 2u, j));
    }
}

/// cholesky_factor over the blocks column j reaches only (see above).
fn cholesky_factor_blocks(w: u32, lid: u32) -> u32 {
    let nv = dims.nv;
    for (var j = 0u; j < nv; j++) {
        wg_sync();
        let d = wg_bcast_f32(lid, fac(w, j, j));
        if (!(d > 0.0) || non_finite(d)) {
            return j;
        }
        let ds = sqrt(d);
        let inv = 1.0 / ds;
        if (lid == j % SOLVER_THREADS) {
            set_fac(w, j, j, ds);
        }
        let bj = dofs[j].block;
        let cols = blk_later[bj] | (1u << bj);
        // Owned rows below j in the runs of blocks the column reaches.
        var m = cols;
        loop {
            if (m == 0u) {
                break;
            }
            let run = take_run(&m);
            let hi = run.y;
            for (var i = owned_from(lid, max(run.x, j + 1u)); i < hi; i += SOLVER_THREADS) {
                set_fac(w, i, j, fac(w, i, j) * inv);
            }
        }
        wg_sync();
        m = cols;
        loop {
            if (m == 0u) {
                break;
            }
            let run = take_run(&m);
            let hi = run.y;
            for (var i = owned_from(lid, max(run.x, j + 1u)); i < hi; i += SOLVER_THREADS) {
                let lij = fac(w, i, j);
                // Entries (i, k), j < k ≤ i, of the same runs.
                var mk = cols;
                loop {
                    if (mk == 0u) {
                        break;
                    }
                    let rk = first_run(mk);
                    let k0 = max(block_start(rk.x), j + 1u);
                    if (k0 > i) {
                        break;
                    }
                    mk = drop_below(mk, rk.y);
                    row_update(w, i, j, lij, k0, min(block_start(rk.y), i + 1u));
                }
            }
        }
    }
    wg_sync();
    return NONE;
}

/// cholesky_solve with a factor of cholesky_factor_blocks: only the rows
/// each column of L reaches.
fn cholesky_solve_blocks(w: u32, lid: u32, row: u32) {
    let nv = dims.nv;
    for (var j = 0u; j < nv; j++) {
        wg_sync();
        let y = wg_bcast_f32(lid, ivec(w, row, j) / fac(w, j, j));
        if (lid == j % SOLVER_THREADS) {
            set_ivec(w, row, j, y);
        }
        let bj = dofs[j].block;
        var m = blk_later[bj] | (1u << bj);
        loop {
            if (m == 0u) {
                break;
            }
            let run = take_run(&m);
            let hi = run.y;
            for (var i = owned_from(lid, max(run.x, j + 1u)); i < hi; i += SOLVER_THREADS) {
                set_ivec(w, row, i, ivec(w, row, i) - fac(w, i, j) * y);
            }
        }
    }
    for (var jj = 0u; jj < nv; jj++) {
        let j = nv - 1u - jj;
        wg_sync();
        let x = wg_bcast_f32(lid, ivec(w, row, j) / fac(w, j, j));
        if (lid == j % SOLVER_THREADS) {
            set_ivec(w, row, j, x);
        }
        let bj = dofs[j].block;
        var m = blk_earlier[bj] | (1u << bj);
        loop {
            if (m == 0u) {
                break;
            }
            let run = take_run(&m);
            let hi = min(run.y, j);
            for (var i = owned_from(lid, run.x); i < hi; i += SOLVER_THREADS) {
                set_ivec(w, row, i, ivec(w, row, i) - fac(w, j, i) * x);
            }
        }
    }
    wg_sync();
}

// ---------------------------------------------------------------- the factorization over the dof tree
//
// Twin of math::TreeLdl (src/math/tree.rs; the guide's design chapter, "The
// Newton solve"): when every contact lies on one path to a root, H has the
// mass matrix's pattern (entry (i, j) non-zero only when one dof is the
// other's ancestor), and LᵀDL eliminated from the last dof to the first
// makes no fill. In place in icf_factor's dense storage: L_ki at (k, i) for
// each ancestor i of k, D_k on the diagonal. Each entry sees the CPU's
// operations in the CPU's order.

/// The tree factorization runs in this launch (plan_blocks; uniform).
var<private> tree_on: bool = false;
/// icf_factor holds a tree factor computed in this launch.
var<private> tree_factor_held: bool = false;

/// Whether contact ci's Jacobian lies on one path to a root. Its entries
/// list one body's chain (deepest dof first, parent after parent), then
/// the other body's dofs that chain lacks, again deepest first: on one
/// path when there are none, or when the second body's deepest dof has
/// the first body's deepest among its ancestors.
fn contact_on_one_path(w: u32, ci: u32) -> bool {
    let n = icf_con[con_at(w, ci)].jac_len;
    if (n == 0u) {
        return true;
    }
    let first = icf_jac[jac_at(w, ci, 0u)].dof;
    var prev = first;
    for (var e = 1u; e < n; e++) {
        let d = icf_jac[jac_at(w, ci, e)].dof;
        if (d != dofs[prev].parent) {
            // Ancestors precede their descendants: stop at or below `first`.
            var a = d;
            loop {
                if (a == NONE || a <= first) {
                    break;
                }
                a = dofs[a].parent;
            }
            return a == first;
        }
        prev = d;
    }
    return true;
}

/// LᵀDL of the world's icf_factor over the dof tree: for each dof k from
/// the last, the rows of its ancestors lose L_ki·(row k) on their own
/// ancestors (the x-th ancestor, nearest first, is thread x's modulo
/// SOLVER_THREADS), then row k is scaled by 1/D_k. Returns the failing
/// pivot, or NONE (uniform).
fn tree_factor(w: u32, lid: u32) -> u32 {
    let nv = dims.nv;
    for (var kk = 0u; kk < nv; kk++) {
        let k = nv - 1u - kk;
        wg_sync();
        let d = wg_bcast_f32(lid, fac(w, k, k));
        if (!(d > 0.0) || non_finite(d)) {
            return k;
        }
        let inv = 1.0 / d;
        var i = dofs[k].parent;
        var x = 0u;
        loop {
            if (i == NONE) {
                break;
            }
            if (x % SOLVER_THREADS == lid) {
                let lki = fac(w, k, i);
                let t = lki * inv;
                set_fac(w, i, i, fac(w, i, i) - t * lki);
                var j = dofs[i].parent;
                loop {
                    if (j == NONE) {
                        break;
                    }
                    set_fac(w, i, j, fac(w, i, j) - t * fac(w, k, j));
                    j = dofs[j].parent;
                }
            }
            i = dofs[i].parent;
            x++;
        }
        wg_sync();
        i = dofs[k].parent;
        x = 0u;
        loop {
            if (i == NONE) {
                break;
            }
            if (x % SOLVER_THREADS == lid) {
                set_fac(w, k, i, fac(w, k, i) * inv);
            }
            i = dofs[i].parent;
            x++;
        }
    }
    wg_sync();
    return NONE;
}

/// Solves Lᵀ D L x = b in place on icf_vec row `row` with tree_factor's
/// factor, by thread 0 (Σₖ dₖ operations each way).
fn tree_solve(w: u32, lid: u32, row: u32) {
    let nv = dims.nv;
    wg_sync();
    if (lid == 0u) {
        // Lᵀ y = b: y_k is final once every descendant has passed it on.
        for (var kk = 0u; kk < nv; kk++) {
            let k = nv - 1u - kk;
            let yk = ivec(w, row, k);
            var i = dofs[k].parent;
            loop {
                if (i == NONE) {
                    break;
                }
                set_ivec(w, row, i, ivec(w, row, i) - fac(w, k, i) * yk);
                i = dofs[i].parent;
            }
        }
        for (var k = 0u; k < nv; k++) {
            set_ivec(w, row, k, ivec(w, row, k) / fac(w, k, k));
        }
        // L x = z, ancestors first (nearest ancestor first, as on the CPU).
        for (var k = 0u; k < nv; k++) {
            var xk = ivec(w, row, k);
            var i = dofs[k].parent;
            loop {
                if (i == NONE) {
                    break;
                }
                xk = xk - fac(w, k, i) * ivec(w, row, i);
                i = dofs[i].parent;
            }
            set_ivec(w, row, k, xk);
        }
    }
    wg_sync();
}

/// The tree factorization's loop iterations on the busiest thread:
/// (factor, solve, the planning loops that counted them).
fn plan_tree(lid: u32) -> vec3f {
    let nv = dims.nv;
    var chol = 0.0;
    var solve = 0.0;
    var loops = 0.0;
    for (var k = 0u; k < nv; k++) {
        var d = 0u;
        var i = dofs[k].parent;
        loop {
            if (i == NONE) {
                break;
            }
            d++;
            i = dofs[i].parent;
        }
        let fd = f32(d);
        // Two walks over k's ancestors, and for each owned one a walk over its own.
        chol += 2.0 * fd + 4.0 + ceil(fd / f32(SOLVER_THREADS)) * (fd + 1.0);
        solve += 2.0 * fd + 3.0;
        loops += fd + 1.0;
    }
    return vec3f(chol + 1.0, solve + f32(nv) + 1.0, loops);
}

// ---------------------------------------------------------------- the factorization by levels
//
// A block's elimination level is 0 when no earlier column reaches it, else
// one more than the deepest earlier block that reaches it (blk_earlier).
// Blocks of one level reach no block of the same level, so one thread each
// can factor them at the same time, once the earlier levels are done:
// left-looking, column by column of the block, every entry (i, k) its
// columns reach takes the products L_ij·L_kj of the earlier columns j in
// ascending order, the same subtractions in the same order as the
// right-looking loops above, so the factor equals theirs bit for bit. Two
// barriers per level instead of two per column: the per-world chain of
// dependent steps shortens from nv columns to the levels. Opt-in
// (icf_dims.levels, IcfBuffers::set_level_factorization), and only where
// the busiest thread's loop count fits half the loop budget.

/// Per block: its elimination level (plan_blocks, when icf_dims.levels is set).
var<private> blk_level: array<u32, MAX_BLOCKS>;
/// Levels of this launch's structure; 0: the factorization by levels is off.
var<private> blk_nlevel: u32 = 0u;
/// The structured factorization runs by levels in this launch (uniform).
var<private> blk_by_level: bool = false;

/// x − Σ_j L_ij·L_kj in ascending j over the columns of the blocks in mask
/// m (all before block_start of k's block), then over [s, k).
fn left_update(w: u32, i: u32, k: u32, x0: f32, m0: u32, s: u32) -> f32 {
    var x = x0;
    var m = m0;
    loop {
        if (m == 0u) {
            break;
        }
        let run = take_run(&m);
        for (var j = run.x; j < run.y; j++) {
            x = x - fac(w, i, j) * fac(w, k, j);
        }
    }
    for (var j = s; j < k; j++) {
        x = x - fac(w, i, j) * fac(w, k, j);
    }
    return x;
}

/// Block b's columns of L, left-looking, by one thread (the blocks of
/// earlier levels done). Returns the failing pivot, or NONE.
fn factor_block(w: u32, b: u32) -> u32 {
    let s = block_start(b);
    let e = block_start(b + 1u);
    let earlier = blk_earlier[b];
    for (var k = s; k < e; k++) {
        let d = left_update(w, k, k, fac(w, k, k), earlier, s);
        if (!(d > 0.0) || non_finite(d)) {
            return k;
        }
        let ds = sqrt(d);
        let inv = 1.0 / ds;
        set_fac(w, k, k, ds);
        for (var i = k + 1u; i < e; i++) {
            set_fac(w, i, k, left_update(w, i, k, fac(w, i, k), earlier, s) * inv);
        }
        // Rows of the later blocks b reaches: the earlier columns that
        // reach both (the others' products are zeros, their entries never
        // assembled).
        var m = blk_later[b];
        loop {
            if (m == 0u) {
                break;
            }
            let c = take_bit(&m);
            let both = earlier & blk_earlier[c];
            for (var i = block_start(c); i < block_start(c + 1u); i++) {
                set_fac(w, i, k, left_update(w, i, k, fac(w, i, k), both, s) * inv);
            }
        }
    }
    return NONE;
}

/// cholesky_factor_blocks by levels: the blocks of each level dealt to the
/// threads in turn. Returns the smallest failing pivot, or NONE (uniform).
fn cholesky_factor_levels(w: u32, lid: u32) -> u32 {
    let nlev = wg_bcast_u32(lid, blk_nlevel);
    let nb = icf_dims.nblock;
    var failed = NONE;
    for (var lev = 0u; lev < nlev; lev++) {
        wg_sync();
        var slot = 0u;
        for (var b = 0u; b < nb; b++) {
            if (blk_level[b] == lev) {
                if (slot % SOLVER_THREADS == lid && failed == NONE) {
                    failed = factor_block(w, b);
                }
                slot++;
            }
        }
    }
    wg_sync();
    var mine = -BIG;
    if (failed != NONE) {
        mine = -f32(failed);
    }
    let first = wg_max(lid, mine);
    if (first < -1.0e30) {
        return NONE;
    }
    return u32(-first);
}

/// Σ over the blocks of mask m of (1 + the block's dofs).
fn mask_loops(m0: u32) -> f32 {
    var m = m0;
    var n = 0.0;
    loop {
        if (m == 0u) {
            break;
        }
        let c = take_bit(&m);
        n += 1.0 + f32(block_start(c + 1u) - block_start(c));
    }
    return n;
}

/// Loop iterations (an upper bound) of factor_block(b).
fn level_block_work(b: u32) -> f32 {
    let m = f32(block_start(b + 1u) - block_start(b));
    let e = mask_loops(blk_earlier[b]);
    let rows = mask_loops(blk_later[b]);
    return m * ((e + m + 3.0) * (2.0 + m + rows) + 4.0);
}

/// The levels of the launch's structure (blk_level, blk_nlevel) and this
/// thread's loop count of cholesky_factor_levels, uniform (the busiest
/// thread's).
fn plan_levels(lid: u32) -> f32 {
    let nb = icf_dims.nblock;
    var deepest = 0u;
    for (var b = 0u; b < nb; b++) {
        var l = 0u;
        var m = blk_earlier[b];
        loop {
            if (m == 0u) {
                break;
            }
            let e = take_bit(&m);
            l = max(l, blk_level[e] + 1u);
        }
        blk_level[b] = l;
        deepest = max(deepest, l);
    }
    blk_nlevel = deepest + 1u;
    var work = 0.0;
    for (var lev = 0u; lev <= deepest; lev++) {
        work += f32(nb) + 2.0;
        var slot = 0u;
        for (var b = 0u; b < nb; b++) {
            if (blk_level[b] == lev) {
                if (slot % SOLVER_THREADS == lid) {
                    work += level_block_work(b);
                }
                slot++;
            }
        }
    }
    return wg_max(lid, work) + 16.0 + 4.0 * f32(nb);
}

/// The structure of world w's Hessian for its `ncon` contacts (blk_later,
/// blk_earlier) and the choice of blk_on. Returns the loop-count bounds
/// (uniform) of the variants that will run: (factorization, the two
/// triangular solves, rounding_floor, this analysis).
fn plan_blocks(w: u32, lid: u32, ncon: u32) -> vec4f {
    let nv = f32(dims.nv);
    let r = f32((dims.nv + SOLVER_THREADS - 1u) / SOLVER_THREADS);
    let dense = vec4f(
        nv * (4.0 + 2.0 * r) + r * (nv * nv / 8.0 + 4.0 * nv) + r,
        2.0 * nv * (2.0 + r),
        r * (1.0 + nv),
        0.0,
    );
    blk_on = false;
    blk_factor = false;
    blk_assemble = false;
    blk_by_level = false;
    blk_nlevel = 0u;
    tree_on = false;
    tree_factor_held = false;
    // The tree factorization where it pays and no contact couples two
    // branches (a factor kept across launches is solved densely, so not
    // with Hessian reuse).
    if (icf_dims.tree != 0u && icf_params.hessian_reuse == 0u) {
        var paths = true;
        for (var ci = 0u; ci < ncon; ci++) {
            if (!contact_on_one_path(w, ci)) {
                paths = false;
                break;
            }
        }
        if (paths) {
            tree_on = true;
            let t = plan_tree(lid);
            return vec4f(t.x, t.y, dense.z, t.z + f32(ncon) * f32(icf_dims.ndofc + 2u) + 16.0);
        }
    }
    let nb = icf_dims.nblock;
    if (nb <= 1u) {
        return dense;
    }
    var loops = 0.0;
    for (var b = 0u; b < nb; b++) {
        blk_later[b] = 0u;
        blk_earlier[b] = 0u;
    }
    // A contact's Jacobian lists one body's chain, then the other's
    // (icf_build_contact); each chain lies in one tree, so its first and
    // last entries name the (at most two) blocks it couples.
    for (var ci = 0u; ci < ncon; ci++) {
        let n = icf_con[con_at(w, ci)].jac_len;
        if (n > 0u) {
            let a = dofs[icf_jac[jac_at(w, ci, 0u)].dof].block;
            let b = dofs[icf_jac[jac_at(w, ci, n - 1u)].dof].block;
            if (a != b) {
                blk_later[min(a, b)] |= 1u << max(a, b);
            }
        }
    }
    // Fill: eliminating block b couples the later blocks it reaches with
    // each other; the first of them (b's parent in the elimination tree)
    // takes them over, and passes them on in its turn.
    for (var b = 0u; b < nb; b++) {
        let m = blk_later[b];
        if (m != 0u) {
            let p = firstTrailingBit(m);
            blk_later[p] |= m & ~(1u << p);
        }
    }
    var chol = 0.0;
    var solve = 0.0;
    var floor = 0.0;
    for (var b = 0u; b < nb; b++) {
        var m = blk_later[b];
        loop {
            if (m == 0u) {
                break;
            }
            let c = take_bit(&m);
            blk_earlier[c] |= 1u << b;
            loops += 1.0;
        }
    }
    // This thread's loop iterations, column block by column block: per
    // column, the runs of blocks it reaches (a loop iteration each, and
    // one that ends the loop) and its owned rows there; per row of the
    // update, the runs up to the row's own (and the one that ends the
    // loop) and four entries per iteration.
    for (var b = 0u; b < nb; b++) {
        let ncol = f32(block_start(b + 1u) - block_start(b));
        var rows = 0.0;
        var update = 0.0;
        var prefix = 0.0;
        var m = blk_later[b] | (1u << b);
        loop {
            if (m == 0u) {
                break;
            }
            let run = take_run(&m);
            let lo = run.x;
            let hi = run.y;
            let own = owned_count(lid, lo, hi);
            prefix += 1.0 + f32(hi - lo) / 4.0;
            rows += 1.0 + own;
            update += own * (prefix + 1.0);
            loops += 1.0;
        }
        chol += ncol * (6.0 + 2.0 * rows + update);
        var back = 0.0;
        m = blk_earlier[b] | (1u << b);
        loop {
            if (m == 0u) {
                break;
            }
            let run = take_run(&m);
            back += 1.0 + owned_count(lid, run.x, run.y);
            loops += 1.0;
        }
        solve += ncol * (6.0 + rows + back);
        var span = 0.0;
        m = blk_later[b] | blk_earlier[b] | (1u << b);
        loop {
            if (m == 0u) {
                break;
            }
            let run = take_run(&m);
            span += 1.0 + f32(run.y - run.x);
            loops += 1.0;
        }
        floor += owned_count(lid, block_start(b), block_start(b + 1u)) * (2.0 + span);
    }
    loops += 4.0 * f32(nb) + f32(ncon) + 16.0;
    var blocks = vec4f(wg_max(lid, chol) + r, wg_max(lid, solve), wg_max(lid, floor) + r, wg_max(lid, loops));
    var by_level = false;
    if (icf_dims.levels != 0u) {
        let chol_levels = plan_levels(lid);
        // plan_levels' own loops: the levels, then per level every block.
        blocks.w += 4.0 * f32(nb) * f32(nb + 1u) + 32.0;
        if (chol_levels <= 0.5 * f32(icf_params.loop_budget)) {
            blocks.x = chol_levels;
            by_level = true;
        }
    }
    // A factor kept from an earlier launch (Hessian reuse) is solved densely.
    var solve_cost = blocks.y;
    if (icf_params.hessian_reuse != 0u) {
        solve_cost = max(blocks.y, dense.y);
    }
    if (blocks.x + solve_cost + blocks.z >= dense.x + dense.y + dense.z) {
        return vec4f(dense.xyz, blocks.w);
    }
    blk_on = true;
    blk_by_level = by_level;
    // A factor that may be kept for later launches is solved densely there,
    // so its Hessian is assembled in full.
    blk_assemble = icf_params.hessian_reuse == 0u;
    return vec4f(blocks.x, solve_cost, blocks.z, blocks.w);
}

/// IcfSolver::factorize: Cholesky of the Hessian in icf_factor (assembled
/// there unless `assembled` is false); on failure (rounding in f32) retries
/// with a growing diagonal shift relative to the diagonal. Returns the
/// failing pivot of the last attempt, NONE, or PAUSE when another attempt
/// would exceed the loop budget (uniform).
fn icf_factorize(w: u32, lid: u32, ncon: u32, assembled: bool, spent: ptr<function, f32>, costs: SolverCosts) -> u32 {
    var shift = 0.0;
    var pivot = NONE;
    for (var attempt = 0u; attempt < 6u; attempt++) {
        if (attempt > 0u && *spent + costs.attempt > f32(icf_params.loop_budget)) {
            return PAUSE;
        }
        *spent += costs.attempt;
        if (attempt > 0u || !assembled) {
            icf_eval(w, lid, ncon, true);
        }
        if (shift > 0.0) {
            for (var i = lid; i < dims.nv; i += SOLVER_THREADS) {
                let d = fac(w, i, i);
                set_fac(w, i, i, d + shift * max(abs(d), 1.0));
            }
        }
        if (tree_on) {
            pivot = tree_factor(w, lid);
        } else if (blk_by_level) {
            pivot = cholesky_factor_levels(w, lid);
        } else if (blk_on) {
            pivot = cholesky_factor_blocks(w, lid);
        } else {
            pivot = cholesky_factor(w, lid);
        }
        if (pivot == NONE) {
            blk_factor = blk_on;
            tree_factor_held = tree_on;
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

/// icf::solver::ROUNDING_STALL_RESIDUAL: a step below one ulp of ‖D⁻¹v‖
/// ends the solve as converged within this factor of the tolerance.
const ROUNDING_STALL_RESIDUAL: f32 = 10.0;

/// icf::solver::LINE_SEARCH_TOLERANCE: the line search stops at
/// |ℓ'(α)| ≤ this·|ℓ'(0)| unless exactness is asked for.
const LINE_SEARCH_TOLERANCE: f32 = 1e-2;

/// IcfSolver::line_search along row VEC_W from row VEC_V, where ℓ = f0
/// (icf_eval's cost): α = 1 when ℓ'(1) ≤ 0; otherwise the root of ℓ'(α)
/// in (0, 1) (to |ℓ'(α)| ≤ rel_tol·|ℓ'(0)|) by Newton with bisection
/// fallback, from the minimiser of the cubic Hermite interpolant. ℓ'(0) =
/// ∇ℓ·w needs no evaluation. Returns (α, evaluations), uniform; both as
/// the CPU counts them.
fn line_search(w: u32, lid: u32, ncon: u32, f0: f32, rel_tol: f32, max_iter: u32) -> vec2f {
    let qc = icf_prepare_line(w, lid, ncon);
    let d0 = qc.w;
    if (!(d0 < 0.0)) {
        return vec2f(0.0, 0.0);
    }
    let e1 = icf_line_eval(w, lid, ncon, qc.xyz, 1.0);
    let f1 = e1.x;
    let d1 = e1.y;
    if (d1 <= 0.0) {
        return vec2f(1.0, 1.0);
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
    let tol = abs(d0) * max(rel_tol, F32_EPS * 10.0);
    var iters = 1u;
    for (var it = 0u; it < max_iter; it++) {
        let e = icf_line_eval(w, lid, ncon, qc.xyz, alpha);
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

/// Factorization paused for the loop budget (icf_factorize).
const PAUSE: u32 = 0xfffffffeu;

/// Upper bounds on one thread's loop iterations (what llvmpipe counts) of
/// an evaluation, of one factorization attempt (evaluation + Cholesky) and
/// of a whole Newton iteration, from the world's actual sizes (uniform).
struct SolverCosts {
    eval: f32,
    attempt: f32,
    iteration: f32,
}

fn solver_costs(w: u32, lid: u32, ncon: u32, plan: vec4f) -> SolverCosts {
    let nv = f32(dims.nv);
    let r = f32((dims.nv + SOLVER_THREADS - 1u) / SOLVER_THREADS);
    let c = f32((ncon + SOLVER_THREADS - 1u) / SOLVER_THREADS);
    let nd = f32(icf_dims.ndofc);
    let gl = f32(icf_dims.ngain + icf_dims.nlimit);
    // Jacobian entries on the busiest thread's rows.
    var mine = 0.0;
    for (var i = lid; i < dims.nv; i += SOLVER_THREADS) {
        mine += f32(icf_rows[rows_at(w, i, 0u)]);
    }
    let lmax = wg_max(lid, mine);
    let red = 8.0;
    // A·v over a row, and the Hessian's row copied in full or over the
    // blocks the rounding floor also loops over (plan.z).
    var copy = r * nv;
    if (blk_assemble) {
        copy = plan.z;
    }
    let eval = c * (1.0 + nd) + r * (3.0 + nv + gl) + copy + lmax * (1.0 + nd) + red;
    // Factorization, solves and rounding floor: dense or structured (plan_blocks).
    let chol = plan.x;
    let solve = plan.y;
    let nls = f32(icf_params.max_line_search_iterations + 3u);
    let ls = r * (1.0 + nv) + c * (1.0 + nd) + red + nls * (c + gl + red + 2.0);
    let iteration = eval + chol + solve + ls + plan.z + 6.0 * (r + red);
    return SolverCosts(eval, eval + chol, iteration * 1.25 + 64.0);
}

/// Ends the solve with `status` (thread 0 writes).
fn solve_done(w: u32, lid: u32, status: u32, detail: f32, factor_valid: bool) {
    if (lid == 0u) {
        icf_world[w].status = status;
        icf_world[w].detail = detail;
        icf_world[w].converged = u32(status == SOLVE_OK);
        icf_world[w].factor_valid = u32(factor_valid);
        icf_world[w].phase = NEWTON_DONE;
    }
}

/// IcfSolver::solve for world w (the icf_solve entry points): minimises ℓ
/// from the warm start in row VEC_V, which receives v1; statistics and the
/// SOLVE_* status into icf_world. Resumes a solve started by an earlier
/// dispatch.
fn solve_world(w: u32, lid: u32) {
    let phase = wg_bcast_u32(lid, select(icf_world[w].phase, NEWTON_DONE, icf_world[w].solving == 0u));
    if (phase == NEWTON_DONE) {
        return;
    }
    let nv = dims.nv;
    let prm = icf_params;
    let ncon = wg_bcast_u32(lid, icf_world[w].ncon);
    let reuse = prm.hessian_reuse != 0u;
    // The dense state into the stage's own memory (src/gpu/icf.rs
    // SolverState), with the factor when a reused one is kept.
    solver_load(w, lid, reuse && wg_bcast_u32(lid, icf_world[w].factor_valid) != 0u);
    var iter = 0u;
    var tol0: f32;
    var tol: f32;
    var factor_valid: bool;
    var prev_step: f32;
    var prev_residual: f32;
    if (phase == NEWTON_START) {
        // The f32 floor of the relative tolerance (1e-6), relative to
        // ‖D r‖ with no absolute floor, as on the CPU.
        tol0 = max(prm.tolerance, 1e-6) * scaled_norm(w, lid, VEC_R);
        tol = tol0;
        factor_valid = reuse && wg_bcast_u32(lid, icf_world[w].factor_valid) != 0u;
        prev_step = BIG;
        prev_residual = BIG;
        if (lid == 0u) {
            icf_world[w].iterations = 0u;
            icf_world[w].line_search_iterations = 0u;
            icf_world[w].factorizations = 0u;
            icf_world[w].converged = 0u;
            icf_world[w].tol0 = tol0;
            icf_world[w].tolerance = tol0;
            icf_world[w].phase = NEWTON_RUNNING;
            // Until it finishes, the solve reads as not converged (a caller
            // that stops dispatching early sees a failure, never a stale OK).
            icf_world[w].status = SOLVE_MAX_ITERATIONS;
            icf_world[w].detail = f32(prm.max_iterations);
            icf_world[w].dispatches = 1u;
        }
    } else {
        if (lid == 0u) {
            icf_world[w].dispatches += 1u;
        }
        iter = wg_bcast_u32(lid, icf_world[w].iterations);
        tol0 = wg_bcast_f32(lid, icf_world[w].tol0);
        tol = wg_bcast_f32(lid, icf_world[w].tolerance);
        factor_valid = wg_bcast_u32(lid, icf_world[w].factor_valid) != 0u;
        prev_step = wg_bcast_f32(lid, icf_world[w].prev_step);
        prev_residual = wg_bcast_f32(lid, icf_world[w].prev_residual);
    }
    var ls_total = 0u;
    var factorizations = 0u;
    let plan = plan_blocks(w, lid, ncon);
    if (lid == 0u) {
        icf_world[w].structured = u32(blk_on) + u32(blk_by_level) + 3u * u32(tree_on);
    }
    let costs = solver_costs(w, lid, ncon, plan);
    let budget = f32(prm.loop_budget);
    let rows = f32((nv + SOLVER_THREADS - 1u) / SOLVER_THREADS);
    // Setup, the block analysis, and loading and storing the dense state
    // (2·(2 nv + ICF_NVEC) per row).
    var spent = 64.0 + 4.0 * rows + 32.0 + plan.w + 2.0 * rows * (2.0 * f32(nv) + f32(ICF_NVEC));
    let first = iter;
    for (; iter < prm.max_iterations; iter++) {
        // Pause before an iteration could exceed the budget (the first one
        // of a dispatch always runs, so every dispatch makes progress).
        if (iter > first && spent + costs.iteration > budget) {
            break;
        }
        spent += costs.iteration - costs.attempt;
        secant_friction = iter < prm.secant_friction_iterations;
        // Without reuse (or a usable factor) the Hessian is assembled with the
        // gradient in one pass; with one, only if the reuse rule asks for a
        // new factor (then the rounding floor keeps its last value).
        let assemble = !factor_valid || !reuse;
        let cost = icf_eval(w, lid, ncon, assemble);
        let gnorm = scaled_norm(w, lid, VEC_GRAD);
        if (non_finite(gnorm)) {
            solve_done(w, lid, SOLVE_NON_FINITE, 0.0, false);
            break;
        }
        if (assemble) {
            // Never ask for less than the rounding floor of the residual.
            tol = max(tol0, rounding_floor(w, lid));
        }
        if (gnorm <= tol) {
            solve_done(w, lid, SOLVE_OK, 0.0, factor_valid && !assemble);
            if (lid == 0u) {
                icf_world[w].residual = gnorm;
            }
            break;
        }
        var need_factor = assemble;
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
        var assembled = assemble;
        if (need_factor && !assemble) {
            // A kept factor is replaced: the Hessian is assembled now, and
            // with it the rounding floor refreshed (the CPU assembles and
            // refreshes it in every iteration); the solve ends here if the
            // residual is within the refreshed tolerance.
            icf_eval(w, lid, ncon, true);
            assembled = true;
            tol = max(tol0, rounding_floor(w, lid));
            if (gnorm <= tol) {
                // icf_factor holds the Hessian now, not the kept factor.
                solve_done(w, lid, SOLVE_OK, 0.0, false);
                if (lid == 0u) {
                    icf_world[w].residual = gnorm;
                }
                break;
            }
        }
        if (need_factor) {
            let pivot = icf_factorize(w, lid, ncon, assembled, &spent, costs);
            if (pivot == PAUSE) {
                // Redo this iteration (same v) in the next dispatch.
                factor_valid = false;
                break;
            }
            if (pivot != NONE) {
                solve_done(w, lid, SOLVE_NOT_PD, f32(pivot), false);
                break;
            }
            factor_valid = true;
            factorizations++;
        }
        for (var i = lid; i < nv; i += SOLVER_THREADS) {
            set_ivec(w, VEC_W, i, -ivec(w, VEC_GRAD, i));
        }
        if (tree_factor_held) {
            tree_solve(w, lid, VEC_W);
        } else if (blk_factor) {
            cholesky_solve_blocks(w, lid, VEC_W);
        } else {
            cholesky_solve(w, lid, VEC_W);
        }
        // Exact only near the solution of a tight solve (as on the CPU; in
        // f32 the tolerance is never below 1e-6, so never here).
        let ls_tol = select(1e-10, LINE_SEARCH_TOLERANCE, gnorm > 1e3 * tol || max(prm.tolerance, 1e-6) >= 1e-6);
        let ls = line_search(w, lid, ncon, cost, ls_tol, prm.max_line_search_iterations);
        let alpha = ls.x;
        ls_total += u32(ls.y);
        var step2 = 0.0;
        var vnorm2 = 0.0;
        for (var i = lid; i < nv; i += SOLVER_THREADS) {
            let dv = alpha * ivec(w, VEC_W, i);
            let vi = ivec(w, VEC_V, i) + dv;
            set_ivec(w, VEC_V, i, vi);
            let s = dv / ivec(w, VEC_SCALE, i);
            step2 += s * s;
            let sv = vi / ivec(w, VEC_SCALE, i);
            vnorm2 += sv * sv;
        }
        let sums = wg_sum(lid, vec4f(step2, vnorm2, 0.0, 0.0));
        let step = sqrt(sums.x);
        wg_sync();
        // θ needs two steps: the first iteration never exits here (as on the CPU).
        let theta = step / prev_step;
        let contracted = prm.theta_criterion != 0u && prev_step < BIG && theta < 1.0;
        // Or a step below one ulp of ‖D⁻¹v‖ near the tolerance (as on the
        // CPU, ROUNDING_STALL_RESIDUAL): v is as good as f32 resolves it.
        let resolved = step <= F32_EPS * sqrt(sums.y) && gnorm <= ROUNDING_STALL_RESIDUAL * tol;
        if ((contracted && theta / (1.0 - theta) * step <= tol) || resolved) {
            icf_eval(w, lid, ncon, false);
            let r = scaled_norm(w, lid, VEC_GRAD);
            solve_done(w, lid, SOLVE_OK, 0.0, factor_valid);
            if (lid == 0u) {
                icf_world[w].residual = r;
            }
            iter++;
            break;
        }
        if (alpha == 0.0 || step == 0.0) {
            // No descent possible at this precision from a fresh factor:
            // the iterate is as good as it gets.
            if (need_factor) {
                solve_done(w, lid, SOLVE_STALLED, gnorm, factor_valid);
                if (lid == 0u) {
                    icf_world[w].residual = gnorm;
                }
                iter++;
                break;
            }
            factor_valid = false;
        }
        prev_step = step;
    }
    solver_store(w, lid, reuse);
    // Sentinel: if llvmpipe's loop limiter cut this invocation short despite
    // the budget, this loop runs once instead of nv + 1 times; the solve is
    // then reported as not converged rather than returning a wrong v1.
    var sentinel = 0u;
    for (var k = 0u; k <= nv; k++) {
        sentinel++;
    }
    if (lid == 0u) {
        if (sentinel != nv + 1u) {
            icf_world[w].status = SOLVE_MAX_ITERATIONS;
            icf_world[w].detail = f32(iter);
            icf_world[w].converged = 0u;
            icf_world[w].phase = NEWTON_DONE;
        }
        icf_world[w].iterations = iter;
        icf_world[w].line_search_iterations += ls_total;
        icf_world[w].factorizations += factorizations;
        icf_world[w].tolerance = tol;
        icf_world[w].prev_step = prev_step;
        icf_world[w].prev_residual = prev_residual;
        if (icf_world[w].phase != NEWTON_DONE) {
            icf_world[w].factor_valid = u32(factor_valid && reuse);
            if (iter >= prm.max_iterations) {
                icf_world[w].status = SOLVE_MAX_ITERATIONS;
                icf_world[w].detail = f32(prm.max_iterations);
                icf_world[w].converged = 0u;
                icf_world[w].phase = NEWTON_DONE;
            }
        }
        if (icf_world[w].phase == NEWTON_DONE) {
            // How many launches of the unfinished solves an iteration
            // should plan (src/gpu/batch: the solve repeats).
            atomicMax(&icf_active[ACTIVE_MOST_DISPATCHES], icf_world[w].dispatches);
        }
    }
}

/// Counts the solves still running into icf_counter[0] (cleared by the
/// host). One thread per world.
/// Reads: icf_world (phase); writes: icf_counter[0].
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_count_unfinished(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    if (icf_world[w].solving != 0u && icf_world[w].phase != NEWTON_DONE) {
        atomicAdd(&icf_counter[0], 1u);
    }
}

// ---------------------------------------------------------------- lists of unfinished solves
//
// A batch launches its solves over a list of the worlds whose solve is
// unfinished instead of over every world: icf_list_unfinished<slot> lists
// them (in any order: each world's arithmetic is its own), sizes the
// slot's indirect launch of icf_solve[_serial]_listed from the count and
// records the slot for it, so that a straggler costs its own work, not a
// launch of every world. The two slots alternate (the host toggles them):
// a listing clears the other slot, whose launch has run, for the next one.

/// Workgroups a launch may have in x (WebGPU's guaranteed minimum of
/// max_compute_workgroups_per_dimension; more go to y, as dispatch_size does).
const LIST_GROUPS_X: u32 = 65535u;

/// Listed worlds per workgroup of a listed solve: a thread each in the
/// serial stage, a workgroup each in the cooperative ones.
fn listed_per_group() -> u32 {
    if (SOLVER_THREADS == 1u) {
        return WORKGROUP_SIZE;
    }
    return 1u;
}

/// Lists world w in `slot` when its solve is unfinished (the test of
/// icf_count_unfinished) and grows the slot's launch to cover it.
fn list_unfinished(w: u32, slot: u32) {
    if (w == 0u) {
        atomicStore(&icf_active[ACTIVE_SLOT], slot);
        let other = 1u - slot;
        atomicStore(&icf_active[ACTIVE_COUNT + other], 0u);
        atomicStore(&icf_dispatch[4u * other], 0u);
        atomicStore(&icf_dispatch[4u * other + 1u], 0u);
        atomicStore(&icf_dispatch[4u * other + 2u], 0u);
    }
    if (w >= dims.nworld || icf_world[w].solving == 0u || icf_world[w].phase == NEWTON_DONE) {
        return;
    }
    let i = atomicAdd(&icf_active[ACTIVE_COUNT + slot], 1u);
    atomicStore(&icf_active[ACTIVE_LIST + i], w);
    atomicAdd(&icf_active[ACTIVE_LISTED], 1u);
    let group = i / listed_per_group();
    atomicMax(&icf_dispatch[4u * slot], min(group + 1u, LIST_GROUPS_X));
    atomicMax(&icf_dispatch[4u * slot + 1u], group / LIST_GROUPS_X + 1u);
    atomicMax(&icf_dispatch[4u * slot + 2u], 1u);
}

/// The world at entry i of the last listing, NONE past its end.
fn listed_world(i: u32) -> u32 {
    let slot = atomicLoad(&icf_active[ACTIVE_SLOT]);
    if (i >= atomicLoad(&icf_active[ACTIVE_COUNT + slot])) {
        return NONE;
    }
    return atomicLoad(&icf_active[ACTIVE_LIST + i]);
}

/// Lists the unfinished solves in slot 0, one thread per world.
/// Reads: icf_world (solving, phase); writes: icf_active, icf_dispatch.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_list_unfinished0(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    list_unfinished(thread_index(gid, nwg), 0u);
}

/// Lists the unfinished solves in slot 1, one thread per world.
/// Reads: icf_world (solving, phase); writes: icf_active, icf_dispatch.
@compute @workgroup_size(WORKGROUP_SIZE)
fn icf_list_unfinished1(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    list_unfinished(thread_index(gid, nwg), 1u);
}
