//! What the host knows of a batch's worlds, refreshed when an advance is
//! settled: times, statuses, statistics and state as last read, and the
//! advance still in flight.

use crate::batch::WorldStatus;
use crate::integrator::WorldStats;

/// What the host knows of the worlds, refreshed when an advance is settled.
#[derive(Debug, Default)]
pub(super) struct HostView {
    /// The advance submitted and not yet known to be complete.
    pub(super) unsettled: Option<Unsettled>,
    pub(super) times: Vec<f64>,
    pub(super) status: Vec<WorldStatus>,
    /// Statistics since each world's reset (read on demand).
    pub(super) stats: Option<Vec<WorldStats>>,
    /// q and v, world first (read on demand, with the settling readback when possible).
    pub(super) state: Option<(Vec<f32>, Vec<f32>)>,
    /// Iterations encoded since creation (= the device's iteration counter).
    pub(super) iterations: u64,
    /// Iterations per simulated second the last settled advance needed
    /// (error control: the estimate for the next one).
    pub(super) rate: Option<f64>,
    /// q and v, the statistics were read since the last settled advance
    /// (then the next settling readback brings them along).
    pub(super) asked_state: bool,
    pub(super) asked_stats: bool,
    /// Worlds listed for solve launches since creation (the device's count, wrapping).
    pub(super) listed: u32,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Unsettled {
    pub(super) dt: f64,
    /// Value of the iteration counter when the advance started.
    pub(super) first_iteration: u64,
    /// Iterations encoded for it so far.
    pub(super) iterations: u64,
}
