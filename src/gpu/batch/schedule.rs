//! The launches of one iteration of a batch: the runs of trial parts of
//! the mode's iteration ([`FIXED_ITERATION`], [`STEP_DOUBLING_ITERATION`]),
//! grouped by [`Fusion`] into launches of generated entry points, between
//! the collision and the Newton solves (each a listing of the unfinished
//! solves and a solve launch over that list).

use crate::gpu::buffers::BufferSource;
use crate::gpu::cenic::{
    self, FIXED_ITERATION, Fusion, IterationOp, Part, STEP_DOUBLING_ITERATION, entry_name, group_parts,
};
use crate::gpu::context::GpuContext;
use crate::gpu::error::GpuError;
use crate::gpu::kernel::Kernel;
use crate::integrator::Mode;

/// One launch of an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Launch {
    /// `steps[k]`: a run of trial parts.
    Parts(usize),
    /// The collision (a host round trip with the host collision).
    Collide,
    /// The listing of the unfinished Newton solves, which sizes the next
    /// [`Launch::Solve`].
    List,
    /// One Newton solve launch over the listed worlds.
    Solve,
}

/// An iteration's launches and the kernels of its runs of parts.
#[derive(Debug)]
pub(super) struct Schedule {
    /// One kernel per distinct run of parts.
    steps: Vec<Kernel>,
    /// The iteration, in order.
    pub(super) launches: Vec<Launch>,
}

impl Schedule {
    /// The iteration of `mode` for `nworld` worlds, its parts grouped by
    /// `fusion` (on a `software` adapter, with `loops` the loop estimate of
    /// a part), the kernels bound over `sources`.
    pub(super) fn new(
        ctx: &GpuContext,
        mode: &Mode,
        nworld: usize,
        fusion: Fusion,
        loops: impl Fn(Part) -> f64,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let ops: &[IterationOp] = match mode {
            Mode::Fixed { .. } => &FIXED_ITERATION,
            Mode::ErrorControlled(_) => &STEP_DOUBLING_ITERATION,
            m => unreachable!("refused before: {}", m.name()),
        };
        let mut named: Vec<(String, Kernel)> = vec![];
        let mut launches = vec![];
        for op in ops {
            match op {
                IterationOp::Collide => launches.push(Launch::Collide),
                IterationOp::Solve => launches.extend([Launch::List, Launch::Solve]),
                IterationOp::Parts(parts) => {
                    for run in group_parts(parts, fusion, ctx.is_software(), &loops) {
                        let name = entry_name(run);
                        let k = match named.iter().position(|(n, _)| *n == name) {
                            Some(k) => k,
                            None => {
                                let k = Kernel::new(ctx, &cenic::FILE, &name, nworld, sources)?;
                                named.push((name, k));
                                named.len() - 1
                            }
                        };
                        launches.push(Launch::Parts(k));
                    }
                }
            }
        }
        Ok(Self { steps: named.into_iter().map(|(_, k)| k).collect(), launches })
    }

    /// The kernel of a run of parts.
    pub(super) fn step(&self, k: usize) -> &Kernel {
        &self.steps[k]
    }

    /// The launches of one iteration, in order: WGSL entry points of trial
    /// parts, `collide`, `list unfinished solves` and `solve`.
    pub(super) fn names(&self) -> Vec<String> {
        self.launches
            .iter()
            .map(|l| match l {
                Launch::Parts(k) => self.steps[*k].name(),
                Launch::Collide => "collide".into(),
                Launch::List => "list unfinished solves".into(),
                Launch::Solve => "solve".into(),
            })
            .collect()
    }
}
