//! [`GpuBatch`]: the [`Batch`](crate::batch::Batch) interface on the GPU. Every world runs its
//! own CENIC clock (or fixed steps) through the WGSL stages; the host
//! encodes whole iterations and reads back once per `advance`.
//!
//! An iteration is one trial per running world ([`FIXED_ITERATION`](super::cenic::FIXED_ITERATION),
//! [`STEP_DOUBLING_ITERATION`](super::cenic::STEP_DOUBLING_ITERATION) in [`super::cenic`]): launches of consecutive
//! trial parts (one thread per world: begin, geometry and dynamics, ICF
//! build, step choice, step-dependent terms, solution, position update,
//! error control; grouped per [`Fusion`](crate::gpu::Fusion)) between the collision and the
//! Newton solves. Fixed steps take 6 launches per iteration (5 on top of
//! the collision's own when it runs in passes), step doubling 14. Every
//! world records the part it is at, so a launch of parts only works on the
//! worlds at its part: idle, failed and rejected worlds cost a check.
//!
//! A Newton solve is two launches: `icf_list_unfinished*` lists the worlds
//! whose solve is unfinished (an atomic counter; any order, as each world's
//! arithmetic is its own) and sizes the indirect launch of the solve over
//! that list, so that idle, finished and waiting worlds cost nothing there
//! and a straggler costs only its own work. A solve that a software
//! adapter's loop budget paused resumes in the next listed launch. In
//! fixed steps each solve of an iteration repeats its listing and launch as
//! often as the longest solve of the last settled advance needed (one on
//! hardware), so that paused solves finish within the iteration instead of
//! holding every world for further iterations of every part; under error
//! control the trials of the worlds are not aligned, and a solve launches
//! once per iteration. The lists are sized at creation.
//!
//! Host round trips: [`Batch::advance`](crate::batch::Batch::advance) encodes the iterations it expects
//! to need (fixed steps: the exact count; error control: from the previous
//! advances' rate) into one submission and returns without waiting. The
//! first call that needs results (`times`, `status`, `stats`, `qpos`,
//! `qvel`, a host write, the next advance) settles it with one readback of
//! the worlds' clocks, states and running count (plus q and v when asked
//! for, in the same copy); when worlds are still running, more iterations
//! are encoded and the readback repeats. So an `advance` followed by any
//! reads costs one host wait. [`GpuContext::counters`](super::GpuContext::counters) counts them.
//!
//! Collision ([`CollisionBackend`]): by default on the GPU, one thread per
//! world (`collide_worlds` in `kernels/collision.wgsl`) for models without
//! GJK/EPA pairs, else the passes of [`GpuCollision`](crate::gpu::GpuCollision). With
//! [`CollisionBackend::Host`] the contacts come from [`HostCollision`]
//! instead: the geom poses are read back at every collision point, each
//! world's contacts are found by the CPU collision
//! ([`crate::collision::collide`] in f32, with a persistent broadphase per
//! world, as `World<f32>` does) and uploaded (a host wait per collision
//! point: for comparisons).

//!
//! Parts, bottom to top (each file uses only those before it):
//! `host` ([`HostCollision`]), `contacts` (where the contacts come from:
//! [`CollisionBackend`], [`CollisionLaunch`]), `schedule` (the launches of
//! one iteration), `profile` (timestamps around them), `view` (what the
//! host knows of the worlds), `pipeline` ([`Pipeline`]: every stage's
//! buffers and kernels, built in stage order, and the encoding of
//! iterations), `gpu_batch` ([`GpuBatch`]: settling advances, resets, the
//! [`Batch`](crate::batch::Batch) interface).

mod contacts;
mod gpu_batch;
mod host;
mod pipeline;
mod profile;
mod schedule;
mod view;

pub use contacts::{CollisionBackend, CollisionLaunch, default_contact_capacity};
pub use gpu_batch::GpuBatch;
pub use host::HostCollision;
pub use pipeline::{GpuBatchOptions, Pipeline};
pub use profile::LaunchTime;
