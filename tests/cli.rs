//! Command-line hardening: bad numbers and batches that
//! cannot fit in memory are refused with a clear message before anything
//! runs, and an accuracy the integrator cannot meet is reported per world.

use std::process::Command;

fn cenic(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cenic")).args(args).output().expect("cenic runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn rejects_accuracy_step_and_time_that_are_not_positive_finite_numbers() {
    for (flag, value) in [
        ("--accuracy", "nan"),
        ("--accuracy", "0"),
        ("--accuracy", "-1e-3"),
        ("--accuracy", "inf"),
        ("--dt", "0"),
        ("--dt", "nan"),
        ("--time", "-1"),
        ("--max-step", "0"),
        ("--min-step", "nan"),
    ] {
        let mut args = vec!["run", flag, value];
        if flag != "--time" {
            args.extend(["--time", "0.01"]);
        }
        let (ok, text) = cenic(&args);
        assert!(!ok, "{flag} {value} was accepted: {text}");
        assert!(text.contains(flag) && text.contains("positive finite"), "{flag} {value}: unclear message: {text}");
    }
}

#[test]
fn refuses_a_batch_larger_than_memory_and_says_how_much_it_needs() {
    let (ok, text) = cenic(&["run", "--worlds", "100000000", "--time", "0.01"]);
    assert!(!ok, "accepted: {text}");
    assert!(text.contains("--worlds 100000000 would need about") && text.contains("GB"), "unclear message: {text}");
}

#[test]
fn reports_an_accuracy_that_cannot_be_met_at_the_minimum_step() {
    // The cube toss in free fall at an accuracy a 1 ms step cannot deliver
    // (its step-doubling error is about g·h²/4 = 2.5e-6 m).
    let (ok, text) = cenic(&["run", "--accuracy", "1e-9", "--min-step", "1e-3", "--time", "0.05"]);
    assert!(!ok, "accepted: {text}");
    assert!(
        text.contains("world 0 failed at t = 0.000000 s: accuracy 1e-9 not met at the minimum step 1e-3 s")
            && text.contains("in the position of dof")
            && text.contains("(joint '"),
        "unclear message: {text}"
    );
    // The degraded mode accepts, counts and says so.
    let (ok, text) =
        cenic(&["run", "--accuracy", "1e-9", "--min-step", "1e-3", "--time", "0.05", "--accept-accuracy-misses"]);
    assert!(ok, "failed: {text}");
    assert!(
        text.contains("warning (degraded mode): 5") && text.contains("step(s) accepted at the minimum step"),
        "{text}"
    );
}
