//! LᵀDL factorization of a symmetric positive-definite matrix whose
//! sparsity follows a forest of dofs: entry (i, j) may be non-zero only
//! when i is j, an ancestor of j, or a descendant of j. A joint-space mass
//! matrix has this pattern, and so does H = M + hD + Σ JᵀGJ when every
//! contact's Jacobian touches one path to the root (a body against the
//! world or against its own ancestors).
//!
//! Eliminating from the last dof towards the roots makes no fill outside
//! the pattern (the ancestors of a dof are a chain, so the update of one
//! ancestor's row touches only that ancestor's own ancestors): the work is
//! Σₖ dₖ² / 2 multiply-adds, dₖ the number of ancestors of dof k, instead of
//! the dense Cholesky's n³ / 6. For the humanoid (27 dofs, one tree) that
//! is about a quarter; for a chain it equals the dense count.
//!
//! The factor lives in a compressed array (MuJoCo's layout for its sparse
//! mass matrix): each row's entries at its ancestors, nearest last, so the
//! elimination's inner loop is a contiguous axpy.

use super::{CholeskyError, Real};

/// The ancestor lists of a dof forest (the factorization's structure).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeLdl {
    /// Parent of each dof (`usize::MAX` at a root) this structure is for.
    parent: Vec<usize>,
    /// `anc[anc_start[k]..anc_start[k + 1]]`: the ancestors of dof k in
    /// increasing order (nearest last).
    anc_start: Vec<usize>,
    anc: Vec<usize>,
    /// Last dof of each dof's subtree: the descendants of k are exactly
    /// k + 1 ..= `subtree_end[k]` (dofs in depth-first preorder).
    subtree_end: Vec<usize>,
    /// Multiply-adds of one factorization ([`factor_flops`](Self::factor_flops)).
    flops: usize,
}

impl TreeLdl {
    /// The structure for `parent` (parent dof of each dof, `usize::MAX` at a
    /// root), or `None` when the dofs are not in depth-first preorder (each
    /// subtree contiguous, parents first), as MJCF's body order gives.
    pub fn new(parent: &[usize]) -> Option<Self> {
        let mut s = Self::default();
        s.analyze(parent).then_some(s)
    }

    /// Rebuilds the structure for `parent` unless it is already for it.
    /// Returns false (and leaves no usable structure) when the dofs are not
    /// in depth-first preorder.
    pub fn analyze(&mut self, parent: &[usize]) -> bool {
        if self.parent == parent && !self.anc_start.is_empty() {
            return true;
        }
        self.parent.clear();
        self.anc_start.clear();
        self.anc.clear();
        self.subtree_end.clear();
        // Preorder: a dof's parent is the dof before it or an ancestor of
        // that one (the previous dof closes a sibling's subtree).
        let is_ancestor = |a: usize, mut k: usize| {
            while k != usize::MAX && k > a {
                k = parent[k];
            }
            k == a
        };
        let preorder = parent
            .iter()
            .enumerate()
            .all(|(k, &p)| p == usize::MAX || (p < k && (p + 1 == k || is_ancestor(p, k - 1))));
        if !preorder {
            return false;
        }
        self.subtree_end.extend(0..parent.len());
        for k in (0..parent.len()).rev() {
            if parent[k] != usize::MAX {
                self.subtree_end[parent[k]] = self.subtree_end[parent[k]].max(self.subtree_end[k]);
            }
        }
        self.parent.extend_from_slice(parent);
        self.anc_start.push(0);
        for k in 0..parent.len() {
            let start = self.anc.len();
            let mut p = parent[k];
            while p != usize::MAX {
                self.anc.push(p);
                p = parent[p];
            }
            self.anc[start..].reverse();
            self.anc_start.push(self.anc.len());
        }
        self.flops =
            (0..parent.len()).map(|k| self.anc_start[k + 1] - self.anc_start[k]).map(|d| d * (d + 1) / 2).sum();
        true
    }

    /// Number of dofs.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True for a structure of no dofs.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Ancestors of dof `k`, increasing (nearest last).
    #[inline]
    pub fn ancestors(&self, k: usize) -> &[usize] {
        &self.anc[self.anc_start[k]..self.anc_start[k + 1]]
    }

    /// Multiply-adds of one factorization, Σₖ dₖ(dₖ + 1)/2.
    pub fn factor_flops(&self) -> usize {
        self.flops
    }

    /// Whether this factorization costs fewer multiply-adds than dense
    /// Cholesky factors of diagonal blocks of the given sizes (an m-dof
    /// block: Σⱼ j(j+1)/2 = m(m² − 1)/6): the rule the CPU solver and the
    /// GPU batch both choose by. Free bodies (6-dof chains) only tie.
    pub fn beats_dense_blocks(&self, block_sizes: impl IntoIterator<Item = usize>) -> bool {
        let dense: usize = block_sizes.into_iter().map(|m| m * (m * m).saturating_sub(1) / 6).sum();
        self.flops < dense
    }

    /// True when `dofs` (any order, repeats allowed) lie on one path to a
    /// root: every one is the deepest one or an ancestor of it. A term
    /// ψ(J v) whose Jacobian has such columns keeps H's pattern.
    pub fn on_one_path(&self, dofs: impl Iterator<Item = usize> + Clone) -> bool {
        let Some(deepest) = dofs.clone().max() else { return true };
        // In preorder, d is an ancestor of `deepest` iff `deepest` lies in
        // d's subtree range: one comparison per dof.
        dofs.into_iter().all(|d| deepest <= self.subtree_end[d])
    }

    /// Length of the compressed storage of [`load`](Self::load):
    /// Σₖ dₖ entries below the diagonal, then the n diagonal entries.
    pub fn storage_len(&self) -> usize {
        self.anc.len() + self.len()
    }

    /// Index of dof k's diagonal entry in the compressed storage.
    #[inline]
    pub fn diag_index(&self, k: usize) -> usize {
        self.anc.len() + k
    }

    /// Gathers the pattern of the row-major n × n symmetric matrix `h`
    /// (its lower triangle) into the compressed storage `out`: row k's
    /// entries at its ancestors, in the order of [`ancestors`](Self::ancestors),
    /// then the diagonal. The ancestors of an ancestor i of k are a prefix
    /// of k's, so row i is a prefix-aligned copy of row k's columns and the
    /// elimination's inner loop runs over contiguous memory.
    pub fn load<T: Real>(&self, h: &[T], n: usize, out: &mut [T]) {
        assert!(n == self.len() && h.len() >= n * n && out.len() >= self.storage_len());
        for k in 0..n {
            let row = &h[k * n..k * n + k + 1];
            let start = self.anc_start[k];
            for (o, &i) in out[start..].iter_mut().zip(self.ancestors(k)) {
                *o = row[i];
            }
            out[self.anc.len() + k] = row[k];
        }
    }

    /// Factorizes in place the compressed matrix of [`load`](Self::load):
    /// afterwards it holds D on the diagonal and L's entries at each row's
    /// ancestors, with H = Lᵀ D L and L unit lower triangular. Fails at the
    /// first pivot that is not positive and finite.
    pub fn factor<T: Real>(&self, a: &mut [T]) -> Result<(), CholeskyError> {
        let (off, diag) = a[..self.storage_len()].split_at_mut(self.anc.len());
        for k in (0..self.len()).rev() {
            let d = diag[k];
            if !(d > T::zero()) || !d.is_finite() {
                return Err(CholeskyError { pivot: k });
            }
            let inv = T::one() / d;
            let (sk, ek) = (self.anc_start[k], self.anc_start[k + 1]);
            // Row i (the x-th ancestor of k) loses L_ki·(row k) on its own
            // ancestors, which are the first x ancestors of k: rows i and k
            // are updated over the same leading positions.
            let (head, row_k) = off.split_at_mut(sk);
            let row_k = &mut row_k[..ek - sk];
            for (x, &i) in self.ancestors(k).iter().enumerate() {
                let lki = row_k[x];
                let t = lki * inv;
                diag[i] -= t * lki;
                let si = self.anc_start[i];
                for (ai, &akj) in head[si..si + x].iter_mut().zip(&row_k[..x]) {
                    *ai -= t * akj;
                }
            }
            for l in row_k.iter_mut() {
                *l *= inv;
            }
        }
        Ok(())
    }

    /// Solves H x = b in place (`b` becomes `x`) with the factor of
    /// [`factor`](Self::factor).
    pub fn solve<T: Real>(&self, l: &[T], b: &mut [T]) {
        let n = self.len();
        let (off, diag) = l[..self.storage_len()].split_at(self.anc.len());
        // Lᵀ y = b: y_k is final once every descendant has passed it on.
        for k in (0..n).rev() {
            let yk = b[k];
            let row = &off[self.anc_start[k]..self.anc_start[k + 1]];
            for (&i, &lki) in self.ancestors(k).iter().zip(row) {
                b[i] -= lki * yk;
            }
        }
        for (x, d) in b[..n].iter_mut().zip(diag) {
            *x /= *d;
        }
        // L x = z, ancestors first; each sum nearest ancestor first, the
        // order of the GPU's walk up the parents (kernels/icf_solver.wgsl).
        for k in 0..n {
            let row = &off[self.anc_start[k]..self.anc_start[k + 1]];
            let mut xk = b[k];
            for (&i, &lki) in self.ancestors(k).iter().zip(row).rev() {
                xk -= lki * b[i];
            }
            b[k] = xk;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{cholesky_factor, cholesky_solve_in_place};

    /// A forest: dofs 0–2 a chain (a free joint's first half), 3 and 5
    /// children of 2, 4 a child of 3, 6 a separate root with child 7.
    const PARENT: [usize; 8] = [usize::MAX, 0, 1, 2, 3, 2, usize::MAX, 6];

    /// An SPD matrix with the forest's pattern: Jᵀ J + I for rows that each
    /// touch one path to a root.
    fn pattern_matrix(t: &TreeLdl) -> Vec<f64> {
        let n = t.len();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            a[i * n + i] = 1.0 + 0.1 * i as f64;
        }
        for (r, leaf) in [4usize, 5, 7, 2, 4].into_iter().enumerate() {
            let mut dofs = t.ancestors(leaf).to_vec();
            dofs.push(leaf);
            let coef: Vec<f64> = dofs.iter().map(|&d| ((r * 7 + d * 3) % 5) as f64 - 1.7).collect();
            for (x, &i) in dofs.iter().enumerate() {
                for (y, &j) in dofs.iter().enumerate() {
                    a[i * n + j] += coef[x] * coef[y];
                }
            }
        }
        a
    }

    #[test]
    fn solve_matches_dense_cholesky() {
        let t = TreeLdl::new(&PARENT).unwrap();
        let n = t.len();
        let a0 = pattern_matrix(&t);
        let b0: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin() + 0.3).collect();
        let mut l = vec![0.0; t.storage_len()];
        t.load(&a0, n, &mut l);
        t.factor(&mut l).unwrap();
        let mut x = b0.clone();
        t.solve(&l, &mut x);
        let mut ld = a0.clone();
        cholesky_factor(&mut ld, n).unwrap();
        let mut xd = b0.clone();
        cholesky_solve_in_place(&ld, n, &mut xd);
        for i in 0..n {
            let r: f64 = (0..n).map(|j| a0[i * n + j] * x[j]).sum();
            assert!((r - b0[i]).abs() < 1e-12, "residual row {i}: {r} vs {}", b0[i]);
            assert!((x[i] - xd[i]).abs() < 1e-12 * xd[i].abs().max(1.0), "dof {i}: {} vs {}", x[i], xd[i]);
        }
    }

    #[test]
    fn entries_off_the_pattern_are_not_read() {
        let t = TreeLdl::new(&PARENT).unwrap();
        let n = t.len();
        let mut a = pattern_matrix(&t);
        // Dofs 4 and 5 sit on different branches: their entry is off the pattern.
        a[4 * n + 5] = f64::NAN;
        a[5 * n + 4] = f64::NAN;
        let mut l = vec![0.0; t.storage_len()];
        t.load(&a, n, &mut l);
        t.factor(&mut l).unwrap();
        let mut x = vec![1.0; n];
        t.solve(&l, &mut x);
        assert!(x.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn paths_and_structure() {
        let t = TreeLdl::new(&PARENT).unwrap();
        assert_eq!(t.ancestors(4), &[0, 1, 2, 3]);
        assert_eq!(t.ancestors(7), &[6]);
        assert!(t.on_one_path([4, 1, 3].into_iter()));
        assert!(!t.on_one_path([4, 5].into_iter()));
        assert!(!t.on_one_path([7, 2].into_iter()));
        // 0+1+3+6+10+6+0+1
        assert_eq!(t.factor_flops(), 27);
        // Dense blocks: one of 8 dofs 84, of 6 and 2 dofs 35 + 1, two of 4 dofs 10 + 10.
        assert!(t.beats_dense_blocks([8]) && t.beats_dense_blocks([6, 2]) && !t.beats_dense_blocks([4, 4]));
        assert!(TreeLdl::new(&[usize::MAX, 2, 0]).is_none());
        // 2's parent 0 is neither 1 nor 1's ancestor: 0's subtree is split.
        assert!(TreeLdl::new(&[usize::MAX, usize::MAX, 0]).is_none());
        assert!(TreeLdl::new(&[usize::MAX, 0, usize::MAX, 2, 1]).is_none());
    }

    #[test]
    fn rejects_indefinite() {
        let t = TreeLdl::new(&[usize::MAX, 0]).unwrap();
        let mut l = [0.0; 3];
        t.load(&[1.0, 2.0, 2.0, 1.0f64], 2, &mut l);
        assert_eq!(t.factor(&mut l), Err(CholeskyError { pivot: 0 }));
    }
}
