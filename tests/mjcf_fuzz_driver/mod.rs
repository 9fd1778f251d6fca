//! A mutation driver for the MJCF loader, shared by `tests/mjcf_fuzz.rs`
//! (a bounded number of cases in `cargo test`) and `tools/mjcf_fuzz.rs`
//! (millions of cases; included with `#[path]`).
//!
//! The corpus is every MJCF file of the project's test models, fixtures and
//! example scenes, and of the shared folder's models and scenes. A case
//! takes one file (loaded as if from its own path, so its includes and mesh
//! files resolve) and applies one to three mutations, chosen by a seeded
//! generator: attribute values replaced (numbers at their limits, lists of
//! the wrong length, garbage, huge counts), numbers inside values changed,
//! elements swapped, deleted, duplicated, moved into another element or
//! wrapped in a new one (nesting), new elements and attributes from a
//! vocabulary of the features (replicate, frame, hfield, include, …),
//! broken includes (missing, the file itself, a folder, a binary file),
//! truncation, and byte edits. The loader must return for every case:
//! `Ok(model)` or `Err(error)` with a non-empty message, never panic. A
//! loaded model then runs kinematics and collision at qpos0, which must not
//! panic either. `check_case` runs one case under `catch_unwind` and with a
//! time limit; the callers install [`LimitAllocator`], so a case that tries
//! to allocate without bound aborts the run instead of exhausting memory.
#![allow(dead_code)]

use cenic::collision::{Contacts, collide};
use cenic::dynamics::{self, Data};
use cenic::model::Model;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Most bytes the process may hold at once (4 GiB): beyond it an
/// allocation fails, which aborts the process (`handle_alloc_error`).
pub const ALLOC_LIMIT: usize = 4 << 30;

/// The system allocator with a cap on the bytes held at once.
pub struct LimitAllocator;

static HELD: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for LimitAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size() > ALLOC_LIMIT {
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size() > ALLOC_LIMIT {
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grow = new_size.saturating_sub(layout.size());
        if HELD.fetch_add(grow, Ordering::Relaxed) + grow > ALLOC_LIMIT {
            HELD.fetch_sub(grow, Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            HELD.fetch_sub(grow, Ordering::Relaxed);
        } else {
            HELD.fetch_sub(layout.size().saturating_sub(new_size), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// SplitMix64: small, seedable, good enough to choose mutations.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// One corpus file: its path (for includes and mesh files) and text.
#[derive(Clone, Debug)]
pub struct Seed {
    pub path: PathBuf,
    pub text: String,
}

/// Every MJCF file under the project's `tests/models`, `tests/fixtures`
/// and `examples/scenes`, and under `shared`'s `models` and `scenes` when
/// given; sorted by path.
pub fn corpus(shared: Option<&Path>) -> Vec<Seed> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("tests/models"), root.join("tests/fixtures"), root.join("examples/scenes")];
    if let Some(s) = shared {
        dirs.push(s.join("models"));
        dirs.push(s.join("scenes"));
    }
    let mut out = vec![];
    for d in dirs {
        walk(&d, &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn walk(dir: &Path, out: &mut Vec<Seed>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "xml")
            && let Ok(text) = std::fs::read_to_string(&p)
            && text.contains("<mujoco")
        {
            out.push(Seed { path: p, text });
        }
    }
}

/// Values that probe the limits of attribute parsing.
const VALUES: &[&str] = &[
    "",
    " ",
    "0",
    "-0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "1e400",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "0.5 0.5",
    "1 2 3",
    "1 2 3 4",
    "1 2 3 4 5 6 7 8 9 10 11 12",
    "0 0 0 0",
    "1,2,3",
    "true",
    "false",
    "auto",
    "x",
    "\u{e9}\u{2603}",
    "&amp;",
    "&lt;frame&gt;",
    "1000000",
    "100000000",
    "2147483647",
    "-2147483648",
    "world",
    "main",
    "hfield",
    "mesh",
    "plane",
    "free",
    "ball",
];

/// Elements inserted somewhere (features, nesting and limits).
const ELEMENTS: &[&str] = &[
    "<frame pos=\"0.1 0 0\" euler=\"0 0 30\"><geom size=\"0.1\"/></frame>",
    "<frame><frame><body><geom size=\"0.1\"/></body></frame></frame>",
    "<replicate count=\"3\" offset=\"0.1 0 0\"><geom size=\"0.05\"/></replicate>",
    "<replicate count=\"1000000\"><geom size=\"0.05\"/></replicate>",
    "<replicate count=\"1000\"><replicate count=\"1000\"><geom size=\"0.05\"/></replicate></replicate>",
    "<replicate count=\"2\" sep=\"-\"><body name=\"r\"><joint name=\"rj\"/><geom size=\"0.05\"/></body></replicate>",
    "<replicate count=\"2\"><inertial pos=\"0 0 0\" mass=\"1\"/></replicate>",
    "<body><joint/><inertial pos=\"0 0 0\" mass=\"0\" diaginertia=\"0 0 0\"/></body>",
    "<body><inertial pos=\"0 0 0\" mass=\"0\" diaginertia=\"0 0 0\"/></body>",
    "<body><freejoint/><geom type=\"hfield\" hfield=\"h\"/></body>",
    "<geom type=\"hfield\" hfield=\"nope\"/>",
    "<geom type=\"hfield\"/>",
    "<hfield name=\"h\" nrow=\"3\" ncol=\"3\" size=\"1 1 1 1\" elevation=\"1 2 3 4 5 6 7 8 9\"/>",
    "<hfield name=\"h\" nrow=\"100000\" ncol=\"100000\" size=\"1 1 1 1\"/>",
    "<hfield name=\"h\" nrow=\"2\" ncol=\"2\" size=\"1 1 1 1\" elevation=\"nan 1 2 3\"/>",
    "<hfield name=\"h\" file=\"missing.png\" size=\"1 1 1 1\"/>",
    "<include file=\"missing.xml\"/>",
    "<include file=\".\"/>",
    "<include/>",
    "<joint springdamper=\"0.1 0.5\"/>",
    "<joint springdamper=\"-1 1\"/>",
    "<default class=\"c\"><joint springdamper=\"0.2 1\"/></default>",
    "<body name=\"a\"><body name=\"a\"/></body>",
    "<worldbody/>",
    "<mujoco/>",
    "<geom type=\"box\" size=\"0.1 0.1 0.1\" pos=\"1e308 0 0\"/>",
    "<geom size=\"1e-300\"/>",
    "<site/>",
    "<camera/>",
];

/// Byte ranges (start, end) in a text.
type Spans = Vec<(usize, usize)>;

/// `(start, end)` byte ranges of every element of `text` (document order),
/// and of every attribute value; empty when it does not parse.
fn ranges(text: &str) -> (Spans, Spans) {
    let Ok(doc) = roxmltree::Document::parse(text) else { return (vec![], vec![]) };
    let mut elements = vec![];
    let mut values = vec![];
    for n in doc.descendants().filter(|n| n.is_element()) {
        elements.push((n.range().start, n.range().end));
        for a in n.attributes() {
            values.push((a.range_value().start, a.range_value().end));
        }
    }
    (elements, values)
}

/// The nearest char boundary at or below `i`.
fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// An include target that breaks: missing, the file itself, a folder, a
/// binary file, another corpus file.
fn broken_include(rng: &mut Rng, seed: &Seed, corpus: &[Seed]) -> String {
    let own = seed.path.display().to_string();
    let dir = seed.path.parent().map(|p| p.display().to_string()).unwrap_or_default();
    let stl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/features/hfield/field.bin");
    let other = rng.pick(corpus).path.display().to_string();
    let target = match rng.below(6) {
        0 => "missing/nothing.xml".to_string(),
        1 => own,
        2 => dir,
        3 => stl.display().to_string(),
        4 => other,
        _ => "../".repeat(rng.below(5)) + "x.xml",
    };
    format!("<include file=\"{target}\"/>")
}

/// One mutation of `text` (of corpus file `seed`).
pub fn mutate(rng: &mut Rng, text: &str, seed: &Seed, corpus: &[Seed]) -> String {
    let (elements, values) = ranges(text);
    let mut t = text.to_string();
    match rng.below(12) {
        // An attribute value replaced by a value at a limit.
        0 | 1 if !values.is_empty() => {
            let (a, b) = *rng.pick(&values);
            t.replace_range(a..b, rng.pick::<&str>(VALUES));
        }
        // A number inside a value changed.
        2 if !values.is_empty() => {
            let (a, b) = *rng.pick(&values);
            let v = &text[a..b];
            let tokens: Vec<&str> = v.split_whitespace().collect();
            if !tokens.is_empty() {
                let k = rng.below(tokens.len());
                let mut new: Vec<String> = tokens.iter().map(|s| s.to_string()).collect();
                new[k] = match rng.below(6) {
                    0 => format!("{}", -tokens[k].parse::<f64>().unwrap_or(1.0)),
                    1 => format!("{}", tokens[k].parse::<f64>().unwrap_or(1.0) * 1e6),
                    2 => "0".into(),
                    3 => rng.pick(VALUES).to_string(),
                    4 => format!("{} {}", tokens[k], tokens[k]),
                    _ => String::new(),
                };
                t.replace_range(a..b, &new.join(" "));
            }
        }
        // Two elements swapped (element order).
        3 if elements.len() > 2 => {
            let (a0, a1) = *rng.pick(&elements);
            let (b0, b1) = *rng.pick(&elements);
            if a1 <= b0 {
                let (x, y) = (text[a0..a1].to_string(), text[b0..b1].to_string());
                t = format!("{}{}{}{}{}", &text[..a0], y, &text[a1..b0], x, &text[b1..]);
            } else if b1 <= a0 {
                let (x, y) = (text[b0..b1].to_string(), text[a0..a1].to_string());
                t = format!("{}{}{}{}{}", &text[..b0], y, &text[b1..a0], x, &text[a1..]);
            }
        }
        // An element deleted or duplicated.
        4 if !elements.is_empty() => {
            let (a, b) = *rng.pick(&elements);
            if rng.below(2) == 0 {
                t.replace_range(a..b, "");
            } else {
                let copy = text[a..b].to_string();
                t.insert_str(b, &copy);
            }
        }
        // Nesting: an element moved or copied into another, or wrapped.
        5 if elements.len() > 1 => {
            let (a, b) = *rng.pick(&elements);
            let copy = text[a..b].to_string();
            let (c, d) = *rng.pick(&elements);
            // Just before the target's end (inside it when it has an end tag).
            let at = text[c..d].rfind("</").map(|k| c + k).unwrap_or(c);
            if rng.below(2) == 0 {
                t.insert_str(at, &copy);
            } else {
                let wrapper =
                    *rng.pick(&["body", "frame", "worldbody", "default", "asset", "replicate count=\"2\"", "mujoco"]);
                let close = wrapper.split(' ').next().unwrap();
                t.replace_range(a..b, &format!("<{wrapper}>{copy}</{close}>"));
            }
        }
        // A feature element inserted somewhere.
        6 | 7 if !elements.is_empty() => {
            let (c, d) = *rng.pick(&elements);
            let at = text[c..d].rfind("</").map(|k| c + k).unwrap_or(c);
            t.insert_str(at, rng.pick::<&str>(ELEMENTS));
        }
        // A broken include.
        8 if !elements.is_empty() => {
            let (c, d) = *rng.pick(&elements);
            let at = text[c..d].rfind("</").map(|k| c + k).unwrap_or(c);
            t.insert_str(at, &broken_include(rng, seed, corpus));
        }
        // An attribute added to an element.
        9 if !elements.is_empty() => {
            let (c, _) = *rng.pick(&elements);
            let attr = *rng.pick(&[
                "springdamper",
                "hfield",
                "type",
                "childclass",
                "class",
                "count",
                "mass",
                "size",
                "pos",
                "quat",
                "euler",
                "range",
                "file",
                "name",
                "nrow",
                "elevation",
                "sep",
                "offset",
            ]);
            let at = text[c..].find(|ch: char| ch.is_whitespace() || ch == '>' || ch == '/').map_or(c, |k| c + k);
            t.insert_str(at, &format!(" {attr}=\"{}\"", rng.pick(VALUES)));
        }
        // Truncation.
        10 => {
            let at = floor_char(text, rng.below(text.len().max(1)));
            t.truncate(at);
        }
        // Byte edits (ASCII, so the text stays UTF-8).
        _ => {
            for _ in 0..1 + rng.below(4) {
                if t.is_empty() {
                    break;
                }
                let at = floor_char(&t, rng.below(t.len()));
                let ch = *rng.pick(&['<', '>', '/', '"', '=', ' ', '0', '-', 'e', '.', 'x', '\n']);
                if rng.below(2) == 0 {
                    t.insert(at, ch);
                } else {
                    let end = t[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                    t.replace_range(at..end, "");
                }
            }
        }
    }
    t
}

/// The outcome of one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The loader built a model (and kinematics and collision ran on it).
    Loaded,
    /// The loader returned an error with a message.
    Rejected,
}

/// A failed case: what went wrong, the case's seed and its text.
#[derive(Debug)]
pub struct Failure {
    pub what: String,
    pub case: u64,
    pub file: PathBuf,
    pub text: String,
}

/// Whether a loaded model also takes one simulator step.
pub static STEP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Longest a case may take (a hang otherwise).
pub const CASE_TIME_LIMIT: Duration = Duration::from_secs(20);

/// The corpus file and mutated text of case `case` (seed of its generator).
pub fn case_text(corpus: &[Seed], case: u64) -> (&Seed, String) {
    let mut rng = Rng::new(case.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5DEE_CE66);
    let seed = rng.pick(corpus);
    let mut text = seed.text.clone();
    for _ in 0..1 + rng.below(3) {
        text = mutate(&mut rng, &text, seed, corpus);
    }
    (seed, text)
}

/// Runs case `case` (seed of its generator) on the corpus: the mutated text,
/// then the loader, under `catch_unwind` and the time limit.
pub fn check_case(corpus: &[Seed], case: u64) -> Result<Outcome, Failure> {
    let (seed, text) = case_text(corpus, case);
    let name = seed.path.display().to_string();
    let start = Instant::now();
    let result = std::panic::catch_unwind(|| match Model::from_mjcf_str_named(&text, &name) {
        Ok(m) => {
            // A model the loader accepts runs kinematics and collision.
            let mut d = Data::<f64>::new(&m);
            dynamics::kinematics(&m, &mut d);
            let mut c = Contacts::new(&m);
            collide(&m, &d, &mut c);
            // Large models are not stepped (replicates of overlapping geoms
            // can make a million contacts: slow, not wrong).
            if STEP.load(Ordering::Relaxed) && m.geoms.len() <= 200 && m.nv <= 200 {
                // And a step of the simulator (an error is fine, a panic is not).
                let mut sim = cenic::integrator::Simulator::<f64>::new(std::sync::Arc::new(m));
                let h = sim.model.options.timestep;
                let _ = sim.step(h);
            }
            Ok(Outcome::Loaded)
        }
        Err(e) if e.to_string().trim().is_empty() => Err("an error without a message".to_string()),
        Err(_) => Ok(Outcome::Rejected),
    });
    let fail = |what: String| Failure { what, case, file: seed.path.clone(), text: text.clone() };
    let outcome = match result {
        Ok(Ok(o)) => o,
        Ok(Err(what)) => return Err(fail(what)),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(fail(format!("panic: {msg}")));
        }
    };
    if start.elapsed() > CASE_TIME_LIMIT {
        return Err(fail(format!("took {:?} (a hang)", start.elapsed())));
    }
    Ok(outcome)
}

/// The case being run, for the watchdog: (case id, start in ms since `EPOCH`).
static CURRENT: [AtomicUsize; 2] = [AtomicUsize::new(usize::MAX), AtomicUsize::new(0)];
static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Marks the start of case `case` for the watchdog.
pub fn watch(case: u64) {
    let now = EPOCH.get_or_init(Instant::now).elapsed().as_millis() as usize;
    CURRENT[1].store(now, Ordering::Relaxed);
    CURRENT[0].store(case as usize, Ordering::Relaxed);
}

/// A thread that aborts the process, naming the case, when one case runs
/// longer than `limit` (a hang that `check_case` could not return from).
pub fn spawn_watchdog(limit: Duration) {
    EPOCH.get_or_init(Instant::now);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let case = CURRENT[0].load(Ordering::Relaxed);
            let start = CURRENT[1].load(Ordering::Relaxed);
            let now = EPOCH.get().unwrap().elapsed().as_millis() as usize;
            if case != usize::MAX && now.saturating_sub(start) > limit.as_millis() as usize {
                eprintln!("HANG: case {case} has run for {} s", (now - start) / 1000);
                std::process::abort();
            }
        }
    });
}
