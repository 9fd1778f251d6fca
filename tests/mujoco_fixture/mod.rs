//! Reading the MuJoCo reference fixtures written by `scripts/mujoco_fixtures.py`
//! (committed under `tests/fixtures/mujoco`).
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;

/// The fixture of model `name` (e.g. "ant").
pub fn load(name: &str) -> Value {
    load_from("mujoco", name)
}

/// The fixture `name` of the fixture folder `dir` under `tests/fixtures`.
pub fn load_from(dir: &str, name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(dir).join(format!("{name}.json"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A number.
pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A count.
pub fn u(v: &Value) -> usize {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}")) as usize
}

/// A vector of numbers.
pub fn vec(v: &Value) -> Vec<f64> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}")).iter().map(f).collect()
}

/// A matrix (array of rows).
pub fn mat(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}")).iter().map(vec).collect()
}

/// A list of strings.
pub fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Fixed-size array from a vector.
pub fn arr<const N: usize>(v: &Value) -> [f64; N] {
    let x = vec(v);
    assert_eq!(x.len(), N, "{v}");
    std::array::from_fn(|i| x[i])
}

/// |a − b| ≤ tol · max(1, |b|), with a message naming `what`.
pub fn close(a: f64, b: f64, tol: f64, what: &str) {
    assert!((a - b).abs() <= tol * b.abs().max(1.0), "{what}: {a} vs MuJoCo {b} (diff {:e})", a - b);
}

/// |a − b| ≤ tol · |b| (relative), with a message naming `what`.
pub fn close_rel(a: f64, b: f64, tol: f64, what: &str) {
    assert!((a - b).abs() <= tol * b.abs(), "{what}: {a} vs MuJoCo {b} (rel diff {:e})", (a - b) / b);
}

/// Quaternions equal up to sign.
pub fn close_quat(a: [f64; 4], b: [f64; 4], tol: f64, what: &str) {
    let d1 = (0..4).map(|i| (a[i] - b[i]).abs()).fold(0.0, f64::max);
    let d2 = (0..4).map(|i| (a[i] + b[i]).abs()).fold(0.0, f64::max);
    assert!(d1.min(d2) <= tol, "{what}: {a:?} vs MuJoCo {b:?}");
}
