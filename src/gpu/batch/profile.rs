//! GPU time per launch of an iteration: from timestamps written around
//! each launch where the adapter has them between dispatches, else timed
//! on the host (each launch its own submission, waited for).

use crate::gpu::buffers::Readback;
use crate::gpu::context::GpuContext;
use crate::gpu::error::GpuError;
use std::sync::Mutex;

/// GPU time of one launch of an iteration, summed over a run
/// ([`GpuBatch::profile`](super::GpuBatch::profile)).
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchTime {
    /// The launch ([`GpuBatch::launch_names`](super::GpuBatch::launch_names)).
    pub name: String,
    /// Launches timed.
    pub count: u64,
    /// GPU time between the timestamps before and after them, summed (s).
    pub seconds: f64,
}

/// How the launches are timed.
pub(super) enum Profiler {
    /// Timestamps around each launch.
    Timestamps(Timestamps),
    /// Wall time of each launch submitted alone and waited for, per launch
    /// of the schedule: (launches, seconds).
    Host(Mutex<Vec<(u64, f64)>>),
}

/// Timestamps around each launch.
pub(super) struct Timestamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    /// Timestamps the query set holds (two per launch).
    capacity: u32,
    /// Per timed launch (in order): its index in the schedule.
    launches: Mutex<Vec<usize>>,
    /// Launches not timed since the last read (the set was full).
    missed: Mutex<u64>,
}

impl Profiler {
    /// Host timing of a schedule of `launches` launches.
    pub(super) fn host(launches: usize) -> Self {
        Profiler::Host(Mutex::new(vec![(0, 0.0); launches]))
    }

    /// GPU time per launch of the schedule (named `names`) since the last
    /// read (then reset), and the launches not timed.
    pub(super) fn read(
        &self,
        ctx: &GpuContext,
        readback: &Readback,
        names: &[String],
    ) -> Result<(Vec<LaunchTime>, u64), GpuError> {
        match self {
            Profiler::Timestamps(t) => t.read(ctx, readback, names),
            Profiler::Host(times) => {
                let times = std::mem::replace(
                    &mut *times.lock().unwrap_or_else(|e| e.into_inner()),
                    vec![(0, 0.0); names.len()],
                );
                let out = names
                    .iter()
                    .zip(times)
                    .map(|(n, (count, seconds))| LaunchTime { name: n.clone(), count, seconds })
                    .collect();
                Ok((out, 0))
            }
        }
    }

    /// Adds `seconds` of host-timed launch `k`.
    pub(super) fn add_host_time(&self, k: usize, seconds: f64) {
        if let Profiler::Host(times) = self {
            let mut times = times.lock().unwrap_or_else(|e| e.into_inner());
            times[k].0 += 1;
            times[k].1 += seconds;
        }
    }
}

impl Timestamps {
    /// Room for `capacity` launches between two reads; `None` when the
    /// adapter has no timestamps between dispatches.
    pub(super) fn new(ctx: &GpuContext, capacity: u32) -> Result<Option<Self>, GpuError> {
        if !ctx.supports_timestamps() {
            return Ok(None);
        }
        let capacity = (2 * capacity).clamp(2, wgpu::QUERY_SET_MAX_QUERIES);
        let set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("cenic launches"),
            ty: wgpu::QueryType::Timestamp,
            count: capacity,
        });
        let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cenic launch timestamps"),
            size: 8 * capacity as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        ctx.check_errors()?;
        Ok(Some(Self { set, resolve, capacity, launches: Mutex::default(), missed: Mutex::default() }))
    }

    /// Records `encode` (launch `k` of the schedule) between two
    /// timestamps when the query set has room, else untimed.
    pub(super) fn timed(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        k: usize,
        encode: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) {
        let mut launches = self.launches.lock().unwrap_or_else(|e| e.into_inner());
        let at = 2 * launches.len() as u32;
        if at + 2 > self.capacity {
            *self.missed.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            return encode(pass);
        }
        pass.write_timestamp(&self.set, at);
        encode(pass);
        pass.write_timestamp(&self.set, at + 1);
        launches.push(k);
    }

    /// GPU time per launch of the schedule (named `names`) since the last
    /// read (then reset), and the launches not timed.
    pub(super) fn read(
        &self,
        ctx: &GpuContext,
        readback: &Readback,
        names: &[String],
    ) -> Result<(Vec<LaunchTime>, u64), GpuError> {
        let launches = std::mem::take(&mut *self.launches.lock().unwrap_or_else(|e| e.into_inner()));
        let missed = std::mem::take(&mut *self.missed.lock().unwrap_or_else(|e| e.into_inner()));
        let mut ticks = vec![0u64; 2 * launches.len()];
        if !launches.is_empty() {
            let n = ticks.len() as u32;
            readback.read_parts(
                ctx,
                "launch timestamps",
                |enc| enc.resolve_query_set(&self.set, 0..n, &self.resolve, 0),
                &mut [(&self.resolve, 0, bytemuck::cast_slice_mut(&mut ticks))],
            )?;
        }
        let period = ctx.queue.get_timestamp_period() as f64 * 1e-9;
        let mut out: Vec<LaunchTime> =
            names.iter().map(|n| LaunchTime { name: n.clone(), count: 0, seconds: 0.0 }).collect();
        for (i, &k) in launches.iter().enumerate() {
            out[k].count += 1;
            out[k].seconds += ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
        }
        Ok((out, missed))
    }
}
