//! The MJCF loader under fuzzing, at scale: the mutation driver of
//! `tests/mjcf_fuzz.rs` (`tests/mjcf_fuzz_driver/mod.rs`) over the project's
//! models and the shared folder's, for `--cases N` cases (default one
//! million) from case `--start S` (default 0), single thread. Every case
//! must load or be rejected with an error: a panic or an error without a
//! message is a failure (its mutated text is written to
//! `target/mjcf_fuzz_failures/case_<n>.xml`), a case running over 20 s aborts
//! the run (watchdog), and so does an allocation beyond 4 GiB.
//!
//! `cargo run --release --example mjcf_fuzz -- [--cases N] [--start S] [--step] [--dump CASE]`
//!
//! `--step`: every loaded model also takes one simulator step (its own time
//! step; an error is fine, a panic is a failure). `--dump CASE`: print the
//! mutated text of one case (and its corpus file) instead of running.
//!
//! Prints progress every 100,000 cases and the totals: cases, loaded,
//! rejected, failures, wall time. Exits with status 1 when a case failed.

#[path = "../examples/common/mod.rs"]
mod common;
#[path = "../tests/mjcf_fuzz_driver/mod.rs"]
mod mjcf_fuzz_driver;

use common::arg;
use mjcf_fuzz_driver::{LimitAllocator, Outcome, check_case, corpus, spawn_watchdog, watch};
use std::time::Instant;

#[global_allocator]
static GLOBAL: LimitAllocator = LimitAllocator;

fn main() {
    let cases: u64 = arg("--cases").and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let start: u64 = arg("--start").and_then(|s| s.parse().ok()).unwrap_or(0);
    if std::env::args().any(|a| a == "--step") {
        mjcf_fuzz_driver::STEP.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let shared = cenic::zoo::shared_dir();
    let seeds = corpus(shared.as_deref());
    println!(
        "corpus: {} files ({}); cases {start}..{}",
        seeds.len(),
        if shared.is_some() { "project and shared folder" } else { "project only: set CENIC_SHARED" },
        start + cases
    );
    if let Some(case) = arg("--dump").and_then(|s| s.parse::<u64>().ok()) {
        // The mutated text of one case (to rerun it by hand).
        let (seed, text) = mjcf_fuzz_driver::case_text(&seeds, case);
        println!("<!-- case {case}, from {} -->\n{text}", seed.path.display());
        return;
    }
    spawn_watchdog(mjcf_fuzz_driver::CASE_TIME_LIMIT);
    std::panic::set_hook(Box::new(|_| {}));
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mjcf_fuzz_failures");
    let t0 = Instant::now();
    let (mut loaded, mut rejected, mut failed) = (0u64, 0u64, 0u64);
    for case in start..start + cases {
        watch(case);
        match check_case(&seeds, case) {
            Ok(Outcome::Loaded) => loaded += 1,
            Ok(Outcome::Rejected) => rejected += 1,
            Err(f) => {
                failed += 1;
                std::fs::create_dir_all(&out).unwrap();
                let path = out.join(format!("case_{case}.xml"));
                std::fs::write(&path, &f.text).unwrap();
                println!("FAILED case {case} ({}): {} -> {}", f.file.display(), f.what, path.display());
            }
        }
        if (case + 1 - start).is_multiple_of(100_000) {
            println!("{} cases, {:.1} s", case + 1 - start, t0.elapsed().as_secs_f64());
        }
    }
    println!(
        "{cases} cases: {loaded} loaded, {rejected} rejected, {failed} failed, {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
