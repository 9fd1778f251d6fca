//! The GPU path's files import each other without a cycle: every
//! `use super::…` / `crate::gpu::…` path of a file under `src/gpu` names a
//! file listed before it in `cenic::gpu::LAYERS` (the device plumbing knows
//! no stage, a stage no batch), never a facade (`mod.rs`) item; and every
//! WGSL entry point says in one line what it reads and writes. No GPU needed.

use cenic::gpu::LAYERS;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn gpu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gpu")
}

/// Every `.rs` file under `src/gpu` as (module key, path): `x` for
/// `x.rs`, `d` for `d/mod.rs`, `d/x` for `d/x.rs`, "" for the root `mod.rs`.
fn files() -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
            if p.is_dir() {
                walk(&p, &format!("{prefix}{stem}/"), out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let key =
                    if stem == "mod" { prefix.trim_end_matches('/').to_string() } else { format!("{prefix}{stem}") };
                out.push((key, p));
            }
        }
    }
    let mut out = vec![];
    walk(&gpu_dir(), "", &mut out);
    out
}

/// The code of a file without comments, strings and its `#[cfg(test)]`
/// module (which may use what it tests from anywhere).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let (mut i, mut in_str, mut in_comment) = (0, false, false);
    while i < chars.len() {
        let c = chars[i];
        if in_comment {
            if c == '\n' {
                in_comment = false;
                out.push('\n');
            }
        } else if in_str {
            if c == '\\' {
                i += 1;
            } else if c == '"' {
                in_str = false;
                out.push('"');
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            in_comment = true;
        } else if c == '\'' && chars.get(i + 1) == Some(&'"') && chars.get(i + 2) == Some(&'\'') {
            i += 2;
        } else if c == '"' {
            in_str = true;
            out.push('"');
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// Expands the `use` trees of `code` into full paths (`a::{b, c::d}` →
/// `a::b`, `a::c::d`), and adds the other paths written in the code.
fn paths(code: &str) -> Vec<String> {
    fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
        let tree = tree.trim();
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim_end_matches("::").trim();
            let inner = &tree[open + 1..tree.rfind('}').unwrap()];
            let base = if prefix.is_empty() { head.to_string() } else { format!("{prefix}::{head}") };
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&base, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(&base, &inner[start..], out);
        } else if !tree.is_empty() {
            let tree = tree.split(" as ").next().unwrap().trim();
            out.push(if prefix.is_empty() { tree.to_string() } else { format!("{prefix}::{tree}") });
        }
    }
    let mut out = vec![];
    let flat: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut rest = flat.as_str();
    while let Some(i) = rest.find("use ") {
        let before = if i == 0 { ' ' } else { rest[..i].chars().last().unwrap() };
        let tail = &rest[i + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        if before == ' ' || before == ';' || before == '}' || before == '{' {
            expand("", &tail[..end], &mut out);
        }
        rest = &tail[end..];
    }
    // Paths outside `use` (e.g. `super::icf::solve_error(…)`).
    for (i, _) in flat.match_indices("super::").chain(flat.match_indices("crate::gpu::")) {
        let word_start = i == 0 || !flat[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
        if word_start {
            let end =
                flat[i..].find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(flat.len() - i);
            let p = flat[i..i + end].trim_end_matches(':');
            if p != "super" && p != "crate::gpu" && !p.ends_with("::super") {
                out.push(p.to_string());
            }
        }
    }
    out
}

/// The file a path written in file `key` names (a module key), or `Err`
/// with the facade item it names instead; `None` for paths outside `src/gpu`.
fn target(key: &str, path: &str, modules: &HashMap<String, PathBuf>) -> Option<Result<String, String>> {
    let is_dir = modules.get(key).is_some_and(|p| p.ends_with("mod.rs"));
    // The directory module a path is relative to.
    let mut dir: Vec<&str> = if key.is_empty() { vec![] } else { key.split('/').collect() };
    if !is_dir {
        dir.pop();
    }
    let mut segs: Vec<&str> = path.split("::").collect();
    match segs.first() {
        Some(&"crate") if segs.get(1) == Some(&"gpu") => {
            dir.clear();
            segs.drain(..2);
        }
        Some(&"super") => {
            while segs.first() == Some(&"super") {
                segs.remove(0);
                if is_dir || segs.first() == Some(&"super") {
                    dir.pop()?;
                }
            }
            // `super` of a non-directory file is its directory (popped above only for `super::super`).
        }
        _ => return None,
    }
    let first = segs.first().copied().unwrap_or("*");
    let candidate = dir.iter().chain(std::iter::once(&first)).copied().collect::<Vec<_>>().join("/");
    if modules.contains_key(&candidate) {
        Some(Ok(candidate))
    } else if first == "self" || first == "*" && segs.len() <= 1 {
        Some(Err(format!("{}::{first}", dir.join("/"))))
    } else {
        Some(Err(format!(
            "item '{first}' of the facade {}mod.rs",
            if dir.is_empty() { String::new() } else { dir.join("/") + "/" }
        )))
    }
}

#[test]
fn gpu_files_import_only_lower_layers() {
    let files = files();
    let modules: HashMap<String, PathBuf> = files.iter().cloned().collect();
    let order: Vec<&str> = LAYERS.iter().flat_map(|(_, files)| files.iter().copied()).collect();
    let rank = |k: &str| order.iter().position(|o| *o == k);
    for (key, _) in &files {
        if !key.is_empty() {
            assert!(rank(key).is_some(), "src/gpu/{key} is in no layer of cenic::gpu::LAYERS");
        }
    }
    for k in &order {
        assert!(modules.contains_key(*k), "cenic::gpu::LAYERS lists '{k}', which is no file of src/gpu");
    }
    let mut errors = vec![];
    let mut edges = 0;
    for (key, path) in &files {
        if key.is_empty() {
            continue; // The facade declares and re-exports everything.
        }
        let text = std::fs::read_to_string(path).unwrap();
        let code = code(&text);
        // `super` resolves against the file only without inline modules.
        assert!(!code.contains("mod tests {"), "{key}: a test module not under #[cfg(test)]");
        let me = rank(key).unwrap();
        for p in paths(&code) {
            match target(key, &p, &modules) {
                None => {}
                Some(Ok(t)) if t == *key => {}
                Some(Ok(t)) => {
                    edges += 1;
                    let r = rank(&t).unwrap();
                    if r > me {
                        errors.push(format!("src/gpu/{key} uses {p} (src/gpu/{t}), listed after it"));
                    }
                }
                Some(Err(what)) => errors.push(format!("src/gpu/{key} uses {p}: {what}")),
            }
        }
    }
    assert!(errors.is_empty(), "layering violations:\n{}", errors.join("\n"));
    assert!(edges > 50, "the parser found only {edges} imports");
}

#[test]
fn the_checker_sees_an_upward_import() {
    let files = files();
    let modules: HashMap<String, PathBuf> = files.iter().cloned().collect();
    let code = code(
        "use super::batch::GpuBatch;\nuse super::{error::GpuError, fields::{Field, Layout}};\n// use super::rl;\n\"super::cenic\"\nfn f() { super::icf::solve_error(0, 0.0); }\n",
    );
    let found: std::collections::BTreeSet<String> =
        paths(&code).iter().filter_map(|p| target("buffers", p, &modules)?.ok()).collect();
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["batch", "error", "fields", "icf"]);
    assert!(matches!(target("context", "super::GpuError", &modules), Some(Err(_))));
    assert_eq!(target("batch/pipeline", "super::contacts::Collision", &modules), Some(Ok("batch/contacts".into())));
    assert_eq!(target("batch/pipeline", "crate::gpu::icf::IcfBuffers", &modules), Some(Ok("icf".into())));
    assert_eq!(target("batch", "super::rl::FILE", &modules), Some(Ok("rl".into())));
    assert!(matches!(target("batch/pipeline", "super::GpuBatch", &modules), Some(Err(_))));
}

/// Each compute entry point of every composed module carries, in the doc
/// comment right above it, one line `/// Reads: …; writes: ….`.
#[test]
fn every_entry_point_says_what_it_reads_and_writes() {
    let mut missing = vec![];
    let mut seen = 0;
    for m in cenic::gpu::shaders::modules() {
        let text = m.compose().text;
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if !l.trim_start().starts_with("@compute") {
                continue;
            }
            seen += 1;
            let name = lines[i + 1].trim_start().trim_start_matches("fn ").split('(').next().unwrap_or("?");
            let doc = lines[..i].iter().rev().take_while(|d| d.trim_start().starts_with("///"));
            if !doc.clone().any(|d| d.trim_start().starts_with("/// Reads: ") && d.contains("; writes: ")) {
                missing.push(format!("{}::{name}", m.name()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(seen > 30, "found {seen} entry points");
    assert!(missing.is_empty(), "entry points without a `/// Reads: …; writes: ….` line: {missing:?}");
}
