//! How finely a batch splits its worlds over rayon's threads.
//!
//! Handing a task to another rayon thread wakes it (a futex wake, a
//! context switch, then the idle threads spin before they sleep again):
//! tens of microseconds of CPU. rayon splits a parallel loop down to one
//! item per task, so a batch of cheap worlds paid that per world: four
//! gymnasium ants (an environment step each ~27 µs) spent half of their
//! CPU time in the scheduler. [`Grain`] keeps the measured cost of one
//! item and sizes the tasks so that each holds at least [`TASK_NS`] of
//! work; a call with less than two tasks' worth runs inline (rayon does
//! not split a producer shorter than twice its minimum length). The
//! task size was chosen on the RL benchmark (BENCHMARKS.md, "Task size
//! of the CPU batch"): 50 µs beat 100 and 250 µs in wall time at 4–64
//! environments and the earlier one-world tasks in both wall and CPU time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Work (ns) one parallel task should hold so that handing it to another
/// thread costs a small share of it.
pub const TASK_NS: f64 = 50_000.0;

/// The measured cost of one item of a parallel loop, for its task size.
/// Only the scheduling depends on it, never a result: every item is
/// computed the same way whichever thread runs it.
#[derive(Debug, Default)]
pub struct Grain {
    /// Nanoseconds of work per item, an `f64` as bits (0: not measured yet).
    ns_per_item: AtomicU64,
}

impl Clone for Grain {
    fn clone(&self) -> Self {
        Self { ns_per_item: AtomicU64::new(self.ns_per_item.load(Ordering::Relaxed)) }
    }
}

impl Grain {
    /// Smallest number of items per task (rayon's `with_min_len`): all
    /// `n` items (one task on the calling thread) when their work is below
    /// two tasks' worth. Before the first measurement, 1.
    pub fn min_len(&self, n: usize) -> usize {
        self.min_len_on(n, rayon::current_num_threads())
    }

    /// [`Self::min_len`] on a pool of `pool` threads. One thread runs
    /// everything inline: a split there only adds the hand-off from the
    /// calling thread to the pool's (two humanoids on one rayon thread lost
    /// a quarter of their CPU time to it).
    fn min_len_on(&self, n: usize, pool: usize) -> usize {
        let per = f64::from_bits(self.ns_per_item.load(Ordering::Relaxed));
        if pool <= 1 {
            return n.max(1);
        }
        if per <= 0.0 {
            return 1;
        }
        let len = (TASK_NS / per).ceil().max(1.0) as usize;
        if 2 * len > n { n.max(1) } else { len }
    }

    /// Runs `call` with the task size for `n` items ([`Self::min_len`],
    /// for rayon's `with_min_len`) and records its wall time.
    pub fn timed<R>(&self, n: usize, call: impl FnOnce(usize) -> R) -> R {
        let (min_len, start) = (self.min_len(n), Instant::now());
        let r = call(min_len);
        self.record(n, min_len, start.elapsed());
        r
    }

    /// Records a call over `n` items that ran in tasks of at least
    /// `min_len` items and took `wall` (s of wall time on up to
    /// `rayon::current_num_threads()` threads).
    pub fn record(&self, n: usize, min_len: usize, wall: Duration) {
        self.record_on(n, min_len, wall, rayon::current_num_threads());
    }

    /// [`Self::record`] on a pool of `pool` threads.
    fn record_on(&self, n: usize, min_len: usize, wall: Duration, pool: usize) {
        if n == 0 {
            return;
        }
        let tasks = n.div_ceil(min_len.max(1));
        let threads = tasks.min(pool).max(1);
        let per = wall.as_nanos() as f64 * threads as f64 / n as f64;
        let old = f64::from_bits(self.ns_per_item.load(Ordering::Relaxed));
        // Half weight on the newest call: the work per world changes with
        // its contacts, and one call on a preempted thread should not
        // decide alone.
        let new = if old > 0.0 { 0.5 * (old + per) } else { per };
        self.ns_per_item.store(new.to_bits(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cheap_calls_run_as_one_task_and_dear_ones_split() {
        let g = Grain::default();
        assert_eq!(g.min_len_on(100, 2), 1, "unmeasured: split as rayon would");
        assert_eq!(g.min_len_on(100, 1), 100, "one thread: inline");
        // 3 items of 30 µs on one task: 90 µs, below two tasks' worth.
        g.record_on(3, 3, Duration::from_micros(90), 2);
        assert_eq!(g.min_len_on(3, 2), 3);
        // 256 items at the same cost: tasks of ⌈50/30⌉ = 2 items.
        assert_eq!(g.min_len_on(256, 2), 2);
        // Measured over two threads: 8 items, 4 per task, 120 µs of wall
        // time are 2·120/8 = 30 µs each, then averaged with the 30 before.
        g.record_on(8, 4, Duration::from_micros(120), 2);
        assert_eq!(g.min_len_on(256, 2), 2);
        g.record_on(8, 4, Duration::from_micros(480), 2);
        // (30 + 120)/2 = 75 µs per item: one item per task.
        assert_eq!(g.min_len_on(256, 2), 1);
        // Dear items (1 ms each) split down to one per task.
        let g = Grain::default();
        g.record_on(8, 8, Duration::from_millis(8), 2);
        assert_eq!(g.min_len_on(8, 2), 1);
    }
}
