//! The MJCF loader under fuzzing, a bounded share (`MJCF_FUZZ_CASES`, default
//! 20,000 cases) of what `cargo run --release --example mjcf_fuzz` runs (see
//! `tests/mjcf_fuzz_driver/mod.rs` for the mutations): every mutated model of the
//! corpus is loaded or rejected with an error, without a panic, a hang
//! (watchdog: 20 s a case) or an allocation beyond 4 GiB (the allocator
//! refuses it, which aborts the test). Both outcomes occur.

mod mjcf_fuzz_driver;

use mjcf_fuzz_driver::{LimitAllocator, Outcome, check_case, corpus, spawn_watchdog, watch};

#[global_allocator]
static GLOBAL: LimitAllocator = LimitAllocator;

#[test]
fn mutated_models_load_or_are_rejected_without_panic() {
    let shared = cenic::zoo::shared_dir();
    if shared.is_none() {
        assert!(
            std::env::var("CENIC_REQUIRE_SHARED").as_deref() != Ok("1"),
            "CENIC_REQUIRE_SHARED=1 but the shared folder is missing (set CENIC_SHARED)"
        );
        eprintln!("SKIPPED part: no shared folder (set CENIC_SHARED); fuzzing the project's own models only");
    }
    let seeds = corpus(shared.as_deref());
    assert!(seeds.len() >= 40, "{} corpus files", seeds.len());
    let cases: u64 = std::env::var("MJCF_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    spawn_watchdog(mjcf_fuzz_driver::CASE_TIME_LIMIT);
    // Panics are caught and reported per case; keep the default hook quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let (mut loaded, mut rejected, mut failures) = (0u64, 0u64, vec![]);
    for case in 0..cases {
        watch(case);
        match check_case(&seeds, case) {
            Ok(Outcome::Loaded) => loaded += 1,
            Ok(Outcome::Rejected) => rejected += 1,
            Err(f) => failures.push(f),
        }
    }
    let _ = std::panic::take_hook();
    eprintln!(
        "{cases} cases on {} files: {loaded} loaded, {rejected} rejected, {} failed",
        seeds.len(),
        failures.len()
    );
    if let Some(f) = failures.first() {
        panic!(
            "{} failing cases; the first, case {} of {}: {}\n--- mutated text ---\n{}",
            failures.len(),
            f.case,
            f.file.display(),
            f.what,
            f.text
        );
    }
    assert!(loaded > cases / 50 && rejected > cases / 10, "loaded {loaded}, rejected {rejected}");
}
