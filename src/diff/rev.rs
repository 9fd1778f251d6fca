//! Reverse-mode scalars: a value and the index of its node on this
//! thread's tape, implementing [`Real`] so that every generic CPU stage
//! (kinematics, collision, the ICF builder and cost) records its
//! derivatives while it runs unchanged.
//!
//! Values follow the rules of [`super::Dual`]: every operation computes
//! its value with exactly the `f64` operation of plain `f64`, and
//! comparisons look at values only, so a pipeline run in [`Rev`] takes the
//! same branches and produces bit-identical values to the `f64` run.
//! Derivatives at kinks follow the branch the value took.
//!
//! The tape ([`tape`]) is thread-local: a node holds at most two parents
//! and the local partial derivatives towards them. Operations whose inputs
//! are all constants record nothing (their result is a constant, index 0),
//! so model constants cost no tape. One [`tape::backward`] sweep then gives
//! the adjoint of every node for one seeded output combination.
//!
//! Where [`super::Dual`] returns a zero tangent for a zero input tangent
//! at a point with an infinite derivative (`sqrt`, `hypot`, `cbrt` at 0:
//! the norm of a zero vector), the reverse rule uses a zero partial, which
//! gives the same result whenever the forward tangent is defined.

use crate::math::Real;
use core::cmp::Ordering;
use core::fmt;
use core::iter::Sum;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign};
use num_traits::{Float, FloatConst, Num, NumCast, One, ToPrimitive, Zero};

/// A reverse-mode scalar: value `v` and the index of its node on this
/// thread's [`tape`] (0: a constant).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Rev {
    /// Value (bit-identical to the `f64` computation).
    pub v: f64,
    /// Node on this thread's tape; 0 for constants.
    idx: u64,
}

// SAFETY: `repr(C)` struct of an `f64` and a `u64` (no padding, every bit
// pattern is valid: index 0 is a constant), `Copy` and `'static`.
unsafe impl bytemuck::Zeroable for Rev {}
// SAFETY: see above.
unsafe impl bytemuck::Pod for Rev {}

/// The thread-local tape of [`Rev`] operations.
pub mod tape {
    use core::cell::UnsafeCell;
    use core::mem::ManuallyDrop;

    /// One recorded operation: up to two parents and the partial
    /// derivatives of its value towards them (parent 0 is the constant
    /// node, whose adjoint is never read).
    #[derive(Clone, Copy)]
    pub(super) struct Node {
        pub a: u32,
        pub b: u32,
        pub da: f64,
        pub db: f64,
    }

    /// Node 0: the constant node every constant's index points to.
    const CONSTANT: Node = Node { a: 0, b: 0, da: 0.0, db: 0.0 };

    pub(super) struct State {
        pub nodes: Vec<Node>,
        pub recording: bool,
    }

    thread_local! {
        // An `UnsafeCell` rather than a `RefCell`, and no destructor: a
        // push is a handful of instructions and runs for every operation of
        // the recorded pipeline, where a borrow flag, or the state check
        // that a thread-local with a destructor makes on every access, is a
        // measurable share (the reverse pass 15–25 % slower with the check).
        // `FREE_AT_EXIT` frees the storage when the thread ends.
        static TAPE: UnsafeCell<ManuallyDrop<State>> =
            const { UnsafeCell::new(ManuallyDrop::new(State { nodes: Vec::new(), recording: true })) };
        static FREE_AT_EXIT: FreeAtExit = const { FreeAtExit };
    }

    /// Frees this thread's tape storage at thread exit (its destructor is
    /// registered by [`clear`], which every recording passes through). `TAPE`
    /// has no destructor, so it stays usable here and afterwards.
    struct FreeAtExit;

    impl Drop for FreeAtExit {
        fn drop(&mut self) {
            with(|t| t.nodes = Vec::new());
        }
    }

    /// Registers the thread-exit release of the tape storage.
    fn free_at_exit() {
        // Ignored when the thread's destructors already run.
        let _ = FREE_AT_EXIT.try_with(|_| ());
    }

    /// Runs `f` on this thread's tape.
    #[inline(always)]
    pub(super) fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
        // SAFETY: the state is thread-local, and every access goes through
        // this function with a closure that neither re-enters it nor lets
        // the reference escape, so no two references to it coexist.
        TAPE.with(|t| f(unsafe { &mut *t.get() }))
    }

    /// Forgets every node of this thread's tape (keeping its storage) and
    /// turns recording on. [`super::Rev`] values made before are invalid
    /// afterwards.
    pub fn clear() {
        free_at_exit();
        with(|t| {
            t.nodes.clear();
            t.nodes.push(CONSTANT);
            t.recording = true;
        });
    }

    /// Makes sure the tape holds its constant node 0 (a thread that
    /// records without [`clear`]). Called by [`super::Rev::var`]: every
    /// recording starts from a leaf, so a push never needs the check.
    #[inline]
    pub(super) fn start() {
        if with(|t| t.nodes.is_empty()) {
            free_at_exit();
            with(|t| t.nodes.push(CONSTANT));
        }
    }

    /// Appends `n` leaves (nodes without parents) in one access and returns
    /// the index of the first; 0 (no nodes) while recording is off.
    pub(in crate::diff) fn push_leaves(n: usize) -> u64 {
        start();
        with(|t| {
            if !t.recording {
                return 0;
            }
            let first = t.nodes.len();
            debug_assert!(first + n < u32::MAX as usize, "Rev tape full");
            t.nodes.resize(first + n, CONSTANT);
            first as u64
        })
    }

    /// Frees this thread's tape storage (the next [`clear`] starts empty).
    pub fn release() {
        with(|t| {
            t.nodes = Vec::new();
            t.recording = true;
        });
    }

    /// Nodes on this thread's tape.
    pub fn len() -> usize {
        with(|t| t.nodes.len())
    }

    /// Bytes of tape storage held by this thread (its capacity).
    pub fn capacity_bytes() -> usize {
        with(|t| t.nodes.capacity() * core::mem::size_of::<Node>())
    }

    /// Turns recording on or off and returns the previous setting. While
    /// off, operations return constants: values are still exact, for
    /// quantities (e.g. a Hessian) whose derivatives are not needed.
    pub fn set_recording(on: bool) -> bool {
        with(|t| core::mem::replace(&mut t.recording, on))
    }

    /// Reverse sweep: `adj` must hold the seeds (adjoints of the outputs,
    /// indexed by node, length at least [`len`]); afterwards `adj[i]` is
    /// the adjoint of node i. Nodes with a zero adjoint contribute nothing.
    pub fn backward(adj: &mut [f64]) {
        backward_range(adj, 1..len());
    }

    /// The reverse sweep over the nodes in `range` only, last first: a
    /// caller that supplies a stage's adjoint by hand sweeps the nodes
    /// recorded after the stage, applies its own rule to the stage's
    /// output leaves, then sweeps the nodes before them.
    pub fn backward_range(adj: &mut [f64], range: core::ops::Range<usize>) {
        with(|t| {
            let nodes = &t.nodes[..range.end];
            assert!(adj.len() >= nodes.len(), "adjoint vector shorter than the tape");
            // Without a branch (a mispredicted skip costs more than the
            // products): a node whose adjoint is zero adds exact zeros, also
            // where a partial is infinite (0·∞ is selected away, not NaN).
            // A one-parent node's second parent is the constant node 0,
            // whose adjoint is never read.
            for i in (range.start.max(1)..nodes.len()).rev() {
                let a = adj[i];
                let n = nodes[i];
                let live = a != 0.0;
                let (ca, cb) = (a * n.da, a * n.db);
                adj[n.a as usize] += if live { ca } else { 0.0 };
                adj[n.b as usize] += if live { cb } else { 0.0 };
            }
        });
    }
}

#[inline(always)]
fn push(a: u64, da: f64, b: u64, db: f64) -> u64 {
    tape::with(|t| {
        if !t.recording {
            return 0;
        }
        // Node 0 exists: a non-constant parent came from `Rev::var` (`tape::start`).
        let i = t.nodes.len();
        debug_assert!(i > 0 && i < u32::MAX as usize, "Rev tape not started or full");
        t.nodes.push(tape::Node { a: a as u32, b: b as u32, da, db });
        i as u64
    })
}

impl Rev {
    /// A constant.
    #[inline(always)]
    pub const fn cst(v: f64) -> Self {
        Self { v, idx: 0 }
    }
    /// A new independent input (a leaf node on this thread's tape).
    #[inline]
    pub fn var(v: f64) -> Self {
        tape::start();
        Self { v, idx: push(0, 0.0, 0, 0.0) }
    }
    /// Value `v` on node `idx` of this thread's tape (a leaf made by
    /// [`tape::push_leaves`]; 0 for a constant).
    #[inline(always)]
    pub(in crate::diff) fn on_node(v: f64, idx: u64) -> Self {
        Self { v, idx }
    }
    /// The node index (0 for constants): where [`tape::backward`] leaves
    /// this value's adjoint.
    #[inline(always)]
    pub fn index(&self) -> usize {
        self.idx as usize
    }
    /// True for constants (no node).
    #[inline(always)]
    pub fn is_constant(&self) -> bool {
        self.idx == 0
    }
    /// Value `v` with the derivatives of `self` (a straight-through
    /// surrogate: the node is shared).
    #[inline(always)]
    pub fn with_value(self, v: f64) -> Self {
        Self { v, idx: self.idx }
    }
    /// Value `v`, derivative `f` towards `x`. A zero partial records
    /// nothing (the result is a constant), and a unit partial shares `x`'s
    /// node: adjoints accumulate linearly, so a value whose derivative
    /// equals its parent's (x + c, x·1) needs no node of its own.
    #[inline(always)]
    fn chain(v: f64, x: &Self, f: f64) -> Self {
        if x.idx == 0 || f == 0.0 {
            return Self::cst(v);
        }
        if f == 1.0 {
            return Self { v, idx: x.idx };
        }
        Self { v, idx: push(x.idx, f, 0, 0.0) }
    }
    /// Value `v`, derivatives `fa`, `fb` towards `a`, `b` (a parent with a
    /// zero partial is dropped, as in [`Self::chain`]).
    #[inline(always)]
    fn chain2(v: f64, a: &Self, fa: f64, b: &Self, fb: f64) -> Self {
        let a_live = a.idx != 0 && fa != 0.0;
        let b_live = b.idx != 0 && fb != 0.0;
        match (a_live, b_live) {
            (false, false) => Self::cst(v),
            (false, true) => Self::chain(v, b, fb),
            (true, false) => Self::chain(v, a, fa),
            (true, true) => Self { v, idx: push(a.idx, fa, b.idx, fb) },
        }
    }
    /// Derivative `1/den` towards `x`, zero where `den` is 0 (see the module docs).
    #[inline(always)]
    fn chain_div(v: f64, x: &Self, den: f64) -> Self {
        Self::chain(v, x, if den == 0.0 { 0.0 } else { 1.0 / den })
    }
}

impl Default for Rev {
    fn default() -> Self {
        Self::cst(0.0)
    }
}

impl fmt::Debug for Rev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rev({:?}, node {})", self.v, self.idx)
    }
}

impl fmt::Display for Rev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.v, f)
    }
}

impl PartialEq for Rev {
    /// Compares values only (branch decisions must match the `f64` path).
    #[inline(always)]
    fn eq(&self, o: &Self) -> bool {
        self.v == o.v
    }
}

impl PartialOrd for Rev {
    /// Compares values only.
    #[inline(always)]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.v.partial_cmp(&o.v)
    }
}

impl Add for Rev {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self::chain2(self.v + o.v, &self, 1.0, &o, 1.0)
    }
}

impl Sub for Rev {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self::chain2(self.v - o.v, &self, 1.0, &o, -1.0)
    }
}

impl Mul for Rev {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Self::chain2(self.v * o.v, &self, o.v, &o, self.v)
    }
}

impl Div for Rev {
    type Output = Self;
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        let v = self.v / o.v;
        let inv = 1.0 / o.v;
        Self::chain2(v, &self, inv, &o, -v * inv)
    }
}

impl Rem for Rev {
    type Output = Self;
    #[inline]
    fn rem(self, o: Self) -> Self {
        // a % b = a − trunc(a/b)·b, with trunc piecewise constant.
        let q = (self.v / o.v).trunc();
        Self::chain2(self.v % o.v, &self, 1.0, &o, -q)
    }
}

impl Neg for Rev {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Self::chain(-self.v, &self, -1.0)
    }
}

macro_rules! assign_op {
    ($tr:ident, $f:ident, $op:tt) => {
        impl $tr for Rev {
            #[inline(always)]
            fn $f(&mut self, o: Self) {
                *self = *self $op o;
            }
        }
    };
}
assign_op!(AddAssign, add_assign, +);
assign_op!(SubAssign, sub_assign, -);
assign_op!(MulAssign, mul_assign, *);
assign_op!(DivAssign, div_assign, /);
assign_op!(RemAssign, rem_assign, %);

impl Sum for Rev {
    /// Starts from −0.0 like `f64`'s `Sum`, so the value is bit-identical.
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::cst(-0.0), |a, b| a + b)
    }
}

impl<'a> Sum<&'a Rev> for Rev {
    fn sum<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.fold(Self::cst(-0.0), |a, b| a + *b)
    }
}

impl Zero for Rev {
    #[inline(always)]
    fn zero() -> Self {
        Self::cst(0.0)
    }
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.v == 0.0
    }
}

impl One for Rev {
    #[inline(always)]
    fn one() -> Self {
        Self::cst(1.0)
    }
}

impl Num for Rev {
    type FromStrRadixErr = <f64 as Num>::FromStrRadixErr;
    fn from_str_radix(s: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
        f64::from_str_radix(s, radix).map(Self::cst)
    }
}

impl ToPrimitive for Rev {
    super::rules::to_primitive_methods!();
}

impl NumCast for Rev {
    fn from<T: ToPrimitive>(n: T) -> Option<Self> {
        n.to_f64().map(Self::cst)
    }
}

impl FloatConst for Rev {
    super::rules::float_consts!();
}

impl Float for Rev {
    super::rules::float_methods!();
    fn mul_add(self, a: Self, b: Self) -> Self {
        let v = self.v.mul_add(a.v, b.v);
        // Three parents: the product's node (value unused), then the sum.
        let p = Self::chain2(0.0, &self, a.v, &a, self.v);
        Self::chain2(v, &p, 1.0, &b, 1.0)
    }
    fn powf(self, n: Self) -> Self {
        let v = self.v.powf(n.v);
        let fx = if n.v == 0.0 { 0.0 } else { n.v * self.v.powf(n.v - 1.0) };
        let fn_ = if n.is_constant() { 0.0 } else { v * self.v.ln() };
        Self::chain2(v, &self, fx, &n, fn_)
    }
    fn max(self, o: Self) -> Self {
        // f64::max returns the non-NaN operand; follow the operand whose value is returned.
        if self.v >= o.v || o.v.is_nan() { Self { v: self.v.max(o.v), idx: self.idx } } else { o }
    }
    fn min(self, o: Self) -> Self {
        if self.v <= o.v || o.v.is_nan() { Self { v: self.v.min(o.v), idx: self.idx } } else { o }
    }
    fn hypot(self, o: Self) -> Self {
        let v = self.v.hypot(o.v);
        if v == 0.0 {
            return Self::cst(v);
        }
        Self::chain2(v, &self, self.v / v, &o, o.v / v)
    }
}

impl Real for Rev {
    #[inline(always)]
    fn c(x: f64) -> Self {
        Self::cst(x)
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self.v
    }
    const EPS: Self = Self::cst(f64::EPSILON);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::Dual;

    /// d f / dx at `x` by one reverse sweep.
    fn rev_derivative(f: impl Fn(Rev) -> Rev, x: f64) -> (f64, f64) {
        tape::clear();
        let a = Rev::var(x);
        let y = f(a);
        let mut adj = vec![0.0; tape::len()];
        adj[y.index()] += 1.0;
        tape::backward(&mut adj);
        (y.v, if y.is_constant() { 0.0 } else { adj[a.index()] })
    }

    #[test]
    fn unary_rules_match_dual_numbers_and_values_match_f64() {
        type F = (fn(Rev) -> Rev, fn(Dual<1>) -> Dual<1>);
        let cases: &[(F, f64)] = &[
            ((|x| x.sqrt(), |x| x.sqrt()), 0.7),
            ((|x| x.exp(), |x| x.exp()), 0.3),
            ((|x| x.ln(), |x| x.ln()), 1.7),
            ((|x| x.sin(), |x| x.sin()), 0.4),
            ((|x| x.cos(), |x| x.cos()), 0.4),
            ((|x| x.tan(), |x| x.tan()), 0.4),
            ((|x| x.asin(), |x| x.asin()), 0.4),
            ((|x| x.acos(), |x| x.acos()), 0.4),
            ((|x| x.atan(), |x| x.atan()), 0.4),
            ((|x| x.tanh(), |x| x.tanh()), 0.4),
            ((|x| x.cbrt(), |x| x.cbrt()), 0.4),
            ((|x| x.recip(), |x| x.recip()), 0.4),
            ((|x| x.powi(3), |x| x.powi(3)), -0.4),
            ((|x| x.powf(Rev::cst(2.5)), |x| x.powf(Dual::cst(2.5))), 0.4),
            ((|x| Rev::cst(1.3).powf(x), |x| Dual::cst(1.3).powf(x)), 0.4),
            ((|x| x.powf(x), |x| x.powf(x)), 0.4),
            ((|x| x.abs(), |x| x.abs()), -0.4),
            ((|x| x.mul_add(x, Rev::cst(0.3)), |x| x.mul_add(x, Dual::cst(0.3))), 0.4),
            ((|x| x.mul_add(Rev::cst(0.7), x * x), |x| x.mul_add(Dual::cst(0.7), x * x)), 0.4),
            ((|x| x.hypot(Rev::cst(0.3)), |x| x.hypot(Dual::cst(0.3))), 0.4),
            ((|x| x.atan2(Rev::cst(-0.3)), |x| x.atan2(Dual::cst(-0.3))), 0.4),
            ((|x| Rev::cst(0.3).atan2(x), |x| Dual::cst(0.3).atan2(x)), -0.4),
            ((|x| x % Rev::cst(0.3), |x| x % Dual::cst(0.3)), 0.4),
            ((|x| (x * x - x) / (x + Rev::cst(2.0)), |x| (x * x - x) / (x + Dual::cst(2.0))), 0.4),
            ((|x| x.max(x * x), |x| x.max(x * x)), 0.4),
            ((|x| x.min(x * x), |x| x.min(x * x)), 0.4),
            // The norm of a zero vector: zero derivative, not NaN.
            (
                (
                    |x| ((x - Rev::cst(0.4)) * (x - Rev::cst(0.4))).sqrt(),
                    |x| ((x - Dual::cst(0.4)) * (x - Dual::cst(0.4))).sqrt(),
                ),
                0.4,
            ),
        ];
        for (i, &((fr, fd), x)) in cases.iter().enumerate() {
            let (v, d) = rev_derivative(fr, x);
            let y = fd(Dual::var(x, 0));
            assert_eq!(v.to_bits(), y.v.to_bits(), "case {i}: value differs");
            let tol = 1e-14 * y.d[0].abs().max(1.0);
            assert!((d - y.d[0]).abs() <= tol, "case {i}: reverse {d} vs forward {}", y.d[0]);
        }
    }

    #[test]
    fn unit_partials_share_nodes_and_dead_infinite_partials_stay_finite() {
        tape::clear();
        let x = Rev::var(1.5);
        let before = tape::len();
        // x + c and x·1 share x's node; x·0 is a constant.
        let y = x + Rev::cst(0.25);
        let one = x * Rev::cst(1.0);
        let zero = x * Rev::cst(0.0);
        assert_eq!(tape::len(), before);
        assert!(y.index() == x.index() && one.index() == x.index() && zero.is_constant());
        // A node with an infinite partial (ln at 0) that the output does not use.
        let d = Rev::var(0.0);
        let dead = d.ln();
        assert!(!dead.is_constant());
        let z = y * x + one;
        let mut adj = vec![0.0; tape::len()];
        adj[z.index()] = 1.0;
        tape::backward(&mut adj);
        // d/dx [(x + 0.25)·x + x] = 2x + 1.25.
        assert_eq!(adj[x.index()], 2.0 * 1.5 + 0.25 + 1.0);
        assert_eq!(adj[d.index()], 0.0);
    }

    #[test]
    fn constants_record_nothing_and_pausing_stops_recording() {
        tape::clear();
        let a = Rev::cst(2.0) * Rev::cst(3.0) + Rev::cst(1.0).sqrt();
        assert!(a.is_constant() && tape::len() == 1);
        let x = Rev::var(1.5);
        assert!(tape::set_recording(false));
        let y = x * x;
        assert!(y.is_constant() && y.v == 2.25 && tape::len() == 2);
        assert!(!tape::set_recording(true));
        let z = x * x + x;
        let mut adj = vec![0.0; tape::len()];
        adj[z.index()] = 1.0;
        tape::backward(&mut adj);
        assert_eq!(adj[x.index()], 4.0);
    }
}
