//! No allocation inside a step: a counting global allocator
//! records every allocation and reallocation made by the test's own thread
//! while clutter20 steps, after a warm-up that lets the contact list, the
//! ICF problem and the solver workspaces grow to the pile's size.
//!
//! `ALLOC_TRACE=1 cargo test --release --test alloc` prints a backtrace
//! for every counted allocation (to find the one a failure reports).

mod common;

use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::Model;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The system allocator, counting the calls of threads that opted in.
struct Counting;

thread_local! {
    /// Whether this thread's allocations are counted.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Allocations and reallocations of this thread while counting.
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: the thread-local may already be gone while a thread exits.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            if TRACE.load(Ordering::Relaxed) {
                on.set(false);
                eprintln!("{}", std::backtrace::Backtrace::force_capture());
                on.set(true);
            }
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Print a backtrace per counted allocation (`ALLOC_TRACE` set).
static TRACE: AtomicBool = AtomicBool::new(false);

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    TRACE.store(std::env::var_os("ALLOC_TRACE").is_some(), Ordering::Relaxed);
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    COUNT.with(|c| c.get())
}

/// The counter itself works: a `Vec` that grows is seen.
#[test]
fn the_counter_sees_allocations() {
    let n = allocations(|| {
        let v: Vec<u64> = std::hint::black_box((0..100).collect());
        assert_eq!(v.len(), 100);
    });
    assert!(n >= 1, "a collected Vec counted {n} allocations");
}

fn clutter() -> Option<Arc<Model>> {
    let path = common::shared_file("scenes/clutter20.xml")?;
    Some(Arc::new(Model::from_mjcf_file(&path).expect("clutter20.xml loads")))
}

/// Fixed 1 ms steps of the clutter pile, once it has settled into the bin
/// (about 50 contacts), allocate nothing.
#[test]
fn clutter_fixed_step_allocates_nothing() {
    let Some(model) = clutter() else { return };
    let mut w = World::<f64>::new(model, Mode::Fixed { dt: 1e-3 });
    // Warm-up: the objects fall and land; storage grows to the pile's size.
    w.advance(1.0).unwrap();
    let contacts = w.sim.contacts.len();
    assert!(contacts >= 20, "the pile should be in contact after 1 s: {contacts} contacts");
    let newton = w.stats.newton_iterations;
    let n = allocations(|| {
        for _ in 0..20 {
            w.sim.step(1e-3).unwrap();
        }
        w.advance(0.02).unwrap();
    });
    assert!(w.stats.newton_iterations > newton, "the counted steps solved nothing");
    assert_eq!(n, 0, "40 fixed steps of clutter20 ({contacts} contacts) allocated {n} times");
}

/// Error-controlled advances (step doubling, rejections, conservative
/// advancement) of the settling pile allocate nothing.
#[test]
fn clutter_error_controlled_advance_allocates_nothing() {
    let Some(model) = clutter() else { return };
    for accuracy in [1e-2, 1e-3] {
        let mode = Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() });
        let mut w = World::<f64>::new(model.clone(), mode);
        w.advance(1.0).unwrap();
        let (accepted, rejected) = (w.stats.accepted, w.stats.rejected);
        let n = allocations(|| {
            for _ in 0..5 {
                w.advance(0.01).unwrap();
            }
        });
        let steps = w.stats.accepted - accepted;
        assert!(steps >= 5, "accuracy {accuracy:e}: only {steps} steps counted");
        assert_eq!(
            n,
            0,
            "accuracy {accuracy:e}: 50 ms of clutter20 ({steps} steps, {} rejected) allocated {n} times",
            w.stats.rejected - rejected
        );
    }
}
