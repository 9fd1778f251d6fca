//! `<replicate>` (MuJoCo 4's meta-element), expanded before the model is
//! read, as MuJoCo's parser does it:
//! - Each of the `count` replicas of the enclosed elements becomes a
//!   `<frame>` at the replica's pose: replica i sits at
//!   Σₖ₌₀^{i−1} R(k·euler)·offset, rotated by i·euler (MuJoCo's
//!   `mjuu_frameaccum`; the angles follow `compiler angle` and
//!   `eulerseq`), with the replicate's `childclass`.
//! - Every named element inside a replica gets the suffix `sep` + the
//!   replica index, zero-padded to the digits of `count`; nested
//!   replicates append their own suffix first (innermost first).
//! - Elements that refer into the replicated subtree (contact pairs and
//!   excludes, tendons, equality constraints, actuators, sensors) are
//!   replicated with it, as MuJoCo's `mjs_attach` does: for each replica,
//!   each reference is tried with the replica's suffix and, where no such
//!   element exists, kept as written (equality constraints have no such
//!   fallback); an element with at least one reference into the replica is
//!   copied, named with the suffix, and the original disappears. The copies
//!   follow the other elements of their kind, replica by replica, in
//!   MuJoCo's order. An equality constraint that refers both into and out of
//!   a replicate is an error (MuJoCo drops it silently).
//!
//! The rewritten document keeps a source map, so errors name the line of
//! the element as written (generated `<frame>`s: the `<replicate>` line).
//! Replicas are counted before anything is copied: a model that would grow
//! beyond [`MAX_EXPANDED_BYTES`] of MJCF is refused.

use super::frames;
use super::include::{Piece, SourceMap, xml_error};
use super::xml::{parse_reals, tag};
use crate::model::ModelError;
use roxmltree::{Document, Node};
use std::collections::HashSet;

/// Largest MJCF text (bytes) replicates may expand a model to.
pub(super) const MAX_EXPANDED_BYTES: u64 = 32 << 20;

/// Name spaces that references resolve in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Body,
    Joint,
    Geom,
    Site,
    Camera,
    Light,
    Frame,
    Tendon,
    Actuator,
    Sensor,
    Equality,
    Pair,
    Exclude,
    /// A reference to something replicas cannot hold (never matches).
    Other,
}

/// The elements that refer to others, in MuJoCo's copy order (`mjCModel::operator+=`).
const LISTS: [Kind; 6] = [Kind::Pair, Kind::Exclude, Kind::Tendon, Kind::Equality, Kind::Actuator, Kind::Sensor];

/// The name space of a named element of the kinematic tree.
fn tree_kind(t: &str) -> Option<Kind> {
    Some(match t {
        "body" => Kind::Body,
        "joint" | "freejoint" => Kind::Joint,
        "geom" => Kind::Geom,
        "site" => Kind::Site,
        "camera" => Kind::Camera,
        "light" => Kind::Light,
        "frame" => Kind::Frame,
        _ => return None,
    })
}

/// The list an element of section `section` belongs to.
fn list_kind(section: &str, t: &str) -> Option<Kind> {
    match section {
        "contact" if t == "pair" => Some(Kind::Pair),
        "contact" if t == "exclude" => Some(Kind::Exclude),
        "tendon" if matches!(t, "fixed" | "spatial") => Some(Kind::Tendon),
        "equality" => Some(Kind::Equality),
        "actuator" => Some(Kind::Actuator),
        "sensor" => Some(Kind::Sensor),
        _ => None,
    }
}

/// The name space of an `objtype`/`reftype` value.
fn obj_kind(v: Option<&str>) -> Kind {
    match v.map(str::trim) {
        Some("body" | "xbody") => Kind::Body,
        Some("geom") => Kind::Geom,
        Some("site") => Kind::Site,
        Some("camera") => Kind::Camera,
        Some("joint") => Kind::Joint,
        Some("tendon") => Kind::Tendon,
        Some("actuator") => Kind::Actuator,
        _ => Kind::Other,
    }
}

/// The name space of reference attribute `attr` of element `el` (a list
/// element or a tendon's path element).
fn ref_kind(el: Node, attr: &str) -> Option<Kind> {
    Some(match attr {
        "joint" | "jointinparent" | "joint1" | "joint2" => Kind::Joint,
        "tendon" | "tendon1" | "tendon2" => Kind::Tendon,
        "site" | "refsite" | "cranksite" | "slidersite" | "sidesite" | "site1" | "site2" => Kind::Site,
        "body" | "body1" | "body2" => Kind::Body,
        "geom" | "geom1" | "geom2" => Kind::Geom,
        "actuator" => Kind::Actuator,
        "objname" => obj_kind(el.attribute("objtype")),
        "refname" => obj_kind(el.attribute("reftype")),
        _ => return None,
    })
}

/// One reference of a list element: where its value is written and its
/// value after the replications so far.
#[derive(Clone, Debug)]
struct Ref {
    /// Byte range of the attribute value in the text.
    range: std::ops::Range<usize>,
    kind: Kind,
    value: String,
}

/// An element of a list (as written, or a replica's copy of it).
#[derive(Clone, Debug)]
struct Entry<'a> {
    node: Node<'a, 'a>,
    kind: Kind,
    /// Suffix appended to the element's own name.
    suffix: String,
    refs: Vec<Ref>,
}

impl Entry<'_> {
    /// The element's name after its suffixes (empty when unnamed).
    fn name(&self) -> String {
        self.node.attribute("name").map(|n| format!("{n}{}", self.suffix)).unwrap_or_default()
    }
}

/// A `<replicate>` element's attributes.
struct Replicate {
    count: usize,
    sep: String,
    offset: [f64; 3],
    euler: [f64; 3],
    childclass: Option<String>,
}

impl Replicate {
    /// The suffix of replica `i`: `sep` and `i` zero-padded to the digits of `count`.
    fn suffix(&self, i: usize) -> String {
        let digits = self.count.to_string().len();
        format!("{}{i:0digits$}", self.sep)
    }
}

/// Expands every `<replicate>` of the document `text` (described by `map`;
/// `file` names the main file for XML errors). Returns the text unchanged
/// when it has none.
pub(super) fn expand(text: String, map: SourceMap, file: &str) -> Result<(String, SourceMap), ModelError> {
    if !text.contains("replicate") {
        return Ok((text, map));
    }
    let doc = Document::parse(&text).map_err(|e| xml_error(file, e))?;
    let root = doc.root_element();
    // All worldbody sections (MuJoCo reads several in order).
    let worlds: Vec<Node> = root.children().filter(|n| n.is_element() && tag(*n) == "worldbody").collect();
    if !worlds.iter().any(|w| w.descendants().any(|n| n.is_element() && tag(n) == "replicate")) {
        return Ok((text, map));
    }
    let x = Expander { map: &map, angle: Angles::of(root) };
    // Sizes first: refuse before allocating.
    let mut total = text.len() as u64;
    for w in &worlds {
        total = total.saturating_add(x.growth(*w)?);
    }
    if total > MAX_EXPANDED_BYTES {
        let r = worlds.iter().flat_map(|w| w.descendants()).find(|n| n.is_element() && tag(*n) == "replicate").unwrap();
        return Err(x.err(
            r.range().start,
            r,
            None,
            format!(
                "the replicates expand the model to about {} MiB of MJCF; cenic's limit is {} MiB",
                total >> 20,
                MAX_EXPANDED_BYTES >> 20
            ),
        ));
    }
    // The reference lists, then MuJoCo's replication events in order.
    let mut lists: Vec<Vec<Entry>> = LISTS.iter().map(|_| vec![]).collect();
    for section in root.children().filter(|n| n.is_element()) {
        for el in section.children().filter(|n| n.is_element()) {
            if let Some(k) = list_kind(tag(section), tag(el)) {
                let li = LISTS.iter().position(|l| *l == k).unwrap();
                lists[li].push(Entry { node: el, kind: k, suffix: String::new(), refs: refs_of(el) });
            }
        }
    }
    for w in &worlds {
        x.events(*w, &mut lists)?;
    }
    // The surviving originals stay in place; the copies follow the last
    // section of their kind.
    let survivors: HashSet<usize> =
        lists.iter().flatten().filter(|e| e.suffix.is_empty()).map(|e| e.node.range().start).collect();
    let mut last_section = [None; LISTS.len()];
    for section in root.children().filter(|n| n.is_element()) {
        for (li, k) in LISTS.iter().enumerate() {
            let holds = match k {
                Kind::Pair | Kind::Exclude => tag(section) == "contact",
                Kind::Tendon => tag(section) == "tendon",
                Kind::Equality => tag(section) == "equality",
                Kind::Actuator => tag(section) == "actuator",
                _ => tag(section) == "sensor",
            };
            if holds {
                last_section[li] = Some(section.range().start);
            }
        }
    }
    let mut out = Out { text: &text, out: String::with_capacity(total as usize), pieces: vec![] };
    let start = content(root).map_or(root.range().end, |(s, _)| s);
    out.copy(0, start);
    let mut at = start;
    for section in root.children().filter(|n| n.is_element()) {
        out.copy(at, section.range().start);
        match tag(section) {
            "worldbody" => x.tree(section, "", &mut out),
            "contact" | "tendon" | "equality" | "actuator" | "sensor" => {
                let copies: Vec<&Entry> = LISTS
                    .iter()
                    .enumerate()
                    .filter(|(li, _)| last_section[*li] == Some(section.range().start))
                    .flat_map(|(li, _)| lists[li].iter().filter(|e| !e.suffix.is_empty()))
                    .collect();
                section_text(section, &survivors, &copies, &mut out);
            }
            _ => out.copy(section.range().start, section.range().end),
        }
        at = section.range().end;
    }
    out.copy(at, text.len());
    let Out { out: expanded, pieces, .. } = out;
    Ok((expanded, map.remap(&pieces)))
}

/// `compiler angle` and `eulerseq` (the last `<compiler>` that sets them wins).
#[derive(Clone, Copy)]
struct Angles {
    degree: bool,
    seq: [u8; 3],
}

impl Angles {
    fn of(root: Node) -> Self {
        let mut a = Angles { degree: true, seq: *b"xyz" };
        for c in root.children().filter(|n| n.is_element() && tag(*n) == "compiler") {
            if let Some(v) = c.attribute("angle") {
                a.degree = v.trim() != "radian";
            }
            if let Some(s) = c.attribute("eulerseq").map(|s| s.trim().as_bytes())
                && s.len() == 3
                && s.iter().all(|ch| b"xyzXYZ".contains(ch))
            {
                a.seq = [s[0], s[1], s[2]];
            }
        }
        a
    }
}

struct Expander<'m> {
    map: &'m SourceMap,
    angle: Angles,
}

/// The rewritten text and where its pieces came from.
struct Out<'t> {
    text: &'t str,
    out: String,
    pieces: Vec<Piece>,
}

impl Out<'_> {
    /// Copies `text[from..to]`.
    fn copy(&mut self, from: usize, to: usize) {
        if to > from {
            self.pieces.push(Piece::Copy { out: self.out.len(), from, to });
            self.out.push_str(&self.text[from..to]);
        }
    }
    /// Writes generated text that stands for byte `at` of the input.
    fn generate(&mut self, s: &str, at: usize) {
        if !s.is_empty() {
            self.pieces.push(Piece::Generated { out: self.out.len(), at });
            self.out.push_str(s);
        }
    }
    /// Copies `text[from..to]` with the byte ranges of `subs` (sorted,
    /// disjoint, inside) replaced by their strings.
    fn copy_with(&mut self, from: usize, to: usize, subs: &mut [(std::ops::Range<usize>, String)]) {
        subs.sort_by_key(|(r, _)| r.start);
        let mut at = from;
        for (r, s) in subs.iter() {
            self.copy(at, r.start);
            self.generate(&escape(s), r.start);
            at = r.end;
        }
        self.copy(at, to);
    }
}

/// `s` escaped for an attribute value in double quotes.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// The byte range of an element's content (from its first to its last child), if any.
fn content(node: Node) -> Option<(usize, usize)> {
    Some((node.first_child()?.range().start, node.last_child()?.range().end))
}

/// The references of a list element (on itself, and on a tendon's path elements).
fn refs_of(el: Node) -> Vec<Ref> {
    let mut refs = vec![];
    let mut add = |n: Node| {
        for a in n.attributes() {
            if let Some(kind) = ref_kind(n, a.name()) {
                refs.push(Ref { range: a.range_value(), kind, value: a.value().to_string() });
            }
        }
    };
    add(el);
    if matches!(tag(el), "fixed" | "spatial") {
        for c in el.children().filter(|n| n.is_element()) {
            add(c);
        }
    }
    refs
}

/// Writes a section: its surviving elements in place (the others dropped)
/// and then `copies`, each an original element with its suffix and its
/// references as replicated.
fn section_text(section: Node, survivors: &HashSet<usize>, copies: &[&Entry], out: &mut Out) {
    let Some((start, end)) = content(section) else {
        // No children: nothing was in it, and nothing is added to it.
        out.copy(section.range().start, section.range().end);
        return;
    };
    out.copy(section.range().start, start);
    let mut at = start;
    for el in section.children().filter(|n| n.is_element()) {
        if list_kind(tag(section), tag(el)).is_some() && !survivors.contains(&el.range().start) {
            out.copy(at, el.range().start);
            at = el.range().end;
        }
    }
    out.copy(at, end);
    for e in copies {
        let r = e.node.range();
        let mut subs: Vec<(std::ops::Range<usize>, String)> =
            e.refs.iter().map(|x| (x.range.clone(), x.value.clone())).collect();
        if let Some(a) = e.node.attributes().find(|a| a.name() == "name") {
            subs.push((a.range_value(), e.name()));
        }
        out.generate("\n", r.start);
        out.copy_with(r.start, r.end, &mut subs);
    }
    out.copy(end, section.range().end);
}

impl Expander<'_> {
    fn err(&self, pos: usize, node: Node, attr: Option<&str>, message: String) -> ModelError {
        let (file, line, column) = self.map.locate(pos);
        ModelError::Mjcf {
            file: file.to_string(),
            line,
            column,
            element: tag(node).to_string(),
            attribute: attr.map(str::to_string),
            message,
        }
    }

    /// The attributes of a `<replicate>`.
    fn replicate(&self, r: Node) -> Result<Replicate, ModelError> {
        let attr_err = |name: &str, msg: String| {
            let pos = r.attributes().find(|a| a.name() == name).map_or(r.range().start, |a| a.range().start);
            self.err(pos, r, Some(name), msg)
        };
        for a in r.attributes() {
            if !matches!(a.name(), "count" | "sep" | "offset" | "euler" | "childclass") {
                return Err(attr_err(
                    a.name(),
                    format!("unsupported attribute '{}' (supported: count, sep, offset, euler, childclass)", a.name()),
                ));
            }
        }
        if let Some(c) = r.children().find(|c| {
            c.is_element()
                && !matches!(
                    tag(*c),
                    "body" | "geom" | "site" | "joint" | "freejoint" | "frame" | "replicate" | "camera" | "light"
                )
        }) {
            return Err(self.err(
                c.range().start,
                c,
                None,
                format!(
                    "<{}> cannot be replicated: <replicate> holds bodies, joints, geoms, sites, cameras, lights, frames \
                     and replicates",
                    tag(c)
                ),
            ));
        }
        let count = match r.attribute("count") {
            None => return Err(self.err(r.range().start, r, None, "missing required attribute 'count'".into())),
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => return Err(attr_err("count", format!("count must be a positive integer, got \"{v}\""))),
            },
        };
        let three = |name: &str| -> Result<[f64; 3], ModelError> {
            let Some(v) = r.attribute(name) else { return Ok([0.0; 3]) };
            match parse_reals(v) {
                Ok(x) if x.len() == 3 && x.iter().all(|t| t.is_finite()) => Ok([x[0], x[1], x[2]]),
                Ok(x) if x.len() == 3 => Err(attr_err(name, format!("{name} must be finite, got \"{v}\""))),
                Ok(x) => Err(attr_err(name, format!("expected 3 numbers, got {} (\"{v}\")", x.len()))),
                Err(m) => Err(attr_err(name, m)),
            }
        };
        Ok(Replicate {
            count,
            sep: r.attribute("sep").unwrap_or("").to_string(),
            offset: three("offset")?,
            euler: three("euler")?,
            childclass: r.attribute("childclass").map(str::to_string),
        })
    }

    /// Bytes the replicates under `node` add to the text (saturating).
    fn growth(&self, node: Node) -> Result<u64, ModelError> {
        let mut g = 0u64;
        for c in node.children().filter(|n| n.is_element()) {
            if tag(c) == "replicate" {
                let r = self.replicate(c)?;
                let inner = (c.range().len() as u64).saturating_add(self.growth(c)?).saturating_add(160);
                g = g.saturating_add((r.count as u64).saturating_mul(inner)).saturating_add(r.count as u64 * 16);
            } else {
                g = g.saturating_add(self.growth(c)?);
            }
        }
        Ok(g)
    }

    /// Pose (position, quaternion) of each replica.
    fn poses(&self, r: &Replicate) -> Vec<([f64; 3], [f64; 4])> {
        let rad = |x: f64| if self.angle.degree { x.to_radians() } else { x };
        let mut pos = [0.0; 3];
        let mut out = Vec::with_capacity(r.count);
        for i in 0..r.count {
            let k = i as f64;
            let quat = frames::euler(r.euler.map(|e| rad(k * e)), self.angle.seq);
            out.push((pos, quat));
            let d = frames::quat_rotate(quat, r.offset);
            pos = [pos[0] + d[0], pos[1] + d[1], pos[2] + d[2]];
        }
        out
    }

    /// Writes a kinematic-tree element (worldbody, body, frame, …) with the
    /// names inside it suffixed by `suffix` and its replicates expanded.
    fn tree(&self, node: Node, suffix: &str, out: &mut Out) {
        let mut subs = vec![];
        if !suffix.is_empty()
            && tree_kind(tag(node)).is_some()
            && let Some(a) = node.attributes().find(|a| a.name() == "name")
        {
            subs.push((a.range_value(), format!("{}{suffix}", a.value())));
        }
        let Some((start, end)) = content(node) else {
            out.copy_with(node.range().start, node.range().end, &mut subs);
            return;
        };
        out.copy_with(node.range().start, start, &mut subs);
        let mut at = start;
        for c in node.children().filter(|n| n.is_element()) {
            out.copy(at, c.range().start);
            self.tree_or_replicate(c, suffix, out);
            at = c.range().end;
        }
        out.copy(at, end);
        out.copy(end, node.range().end);
    }

    /// [`Self::tree`] for a child that may itself be a replicate.
    fn tree_or_replicate(&self, node: Node, suffix: &str, out: &mut Out) {
        if tag(node) == "replicate" {
            // Validated by `growth` before anything was written.
            let r = self.replicate(node).expect("replicate validated");
            for (i, (p, q)) in self.poses(&r).into_iter().enumerate() {
                let class =
                    r.childclass.as_deref().map(|c| format!(" childclass=\"{}\"", escape(c))).unwrap_or_default();
                let head = format!(
                    "<frame pos=\"{:?} {:?} {:?}\" quat=\"{:?} {:?} {:?} {:?}\"{class}>",
                    p[0], p[1], p[2], q[0], q[1], q[2], q[3]
                );
                out.generate(&head, node.range().start);
                let inner = format!("{}{suffix}", r.suffix(i));
                if let Some((s, e)) = content(node) {
                    let mut a = s;
                    for k in node.children().filter(|n| n.is_element()) {
                        out.copy(a, k.range().start);
                        self.tree_or_replicate(k, &inner, out);
                        a = k.range().end;
                    }
                    out.copy(a, e);
                }
                out.generate("</frame>", node.range().start);
            }
        } else {
            self.tree(node, suffix, out);
        }
    }

    /// Named tree elements under `node` as MuJoCo has them when the
    /// replicate around them is attached: each name with the suffixes of the
    /// replicates between it and `node` (innermost first).
    fn names_inside(&self, node: Node, out: &mut Vec<(Kind, String)>) {
        for c in node.children().filter(|n| n.is_element()) {
            if tag(c) == "replicate" {
                let r = self.replicate(c).expect("replicate validated");
                let mut inner = vec![];
                self.names_inside(c, &mut inner);
                for i in 0..r.count {
                    let s = r.suffix(i);
                    out.extend(inner.iter().map(|(k, n)| (*k, format!("{n}{s}"))));
                }
            } else {
                if let (Some(k), Some(n)) = (tree_kind(tag(c)), c.attribute("name")) {
                    out.push((k, n.to_string()));
                }
                self.names_inside(c, out);
            }
        }
    }

    /// MuJoCo's replication events under `node` in parse order (nested
    /// replicates first, then siblings in document order), applied to the
    /// reference lists.
    fn events<'a>(&self, node: Node<'a, 'a>, lists: &mut [Vec<Entry<'a>>]) -> Result<(), ModelError> {
        for c in node.children().filter(|n| n.is_element()) {
            self.events(c, lists)?;
            if tag(c) == "replicate" {
                self.event(c, lists)?;
            }
        }
        Ok(())
    }

    /// One replicate attached `count` times: the list elements that refer
    /// into it are copied per replica and the originals removed.
    fn event<'a>(&self, node: Node<'a, 'a>, lists: &mut [Vec<Entry<'a>>]) -> Result<(), ModelError> {
        let r = self.replicate(node)?;
        let mut inside = vec![];
        self.names_inside(node, &mut inside);
        let snapshot: Vec<Vec<Entry<'a>>> = lists.to_vec();
        let mut copied: Vec<HashSet<usize>> = LISTS.iter().map(|_| HashSet::new()).collect();
        let mut copies: Vec<Vec<Entry<'a>>> = LISTS.iter().map(|_| vec![]).collect();
        for i in 0..r.count {
            let s = r.suffix(i);
            let mut names: HashSet<(Kind, String)> = inside.iter().map(|(k, n)| (*k, format!("{n}{s}"))).collect();
            for (li, list) in snapshot.iter().enumerate() {
                for (ei, e) in list.iter().enumerate() {
                    let resolved: Vec<bool> =
                        e.refs.iter().map(|x| names.contains(&(x.kind, format!("{}{s}", x.value)))).collect();
                    let n = resolved.iter().filter(|b| **b).count();
                    if n == 0 {
                        continue;
                    }
                    if e.kind == Kind::Equality && n < resolved.len() {
                        return Err(self.err(
                            e.node.range().start,
                            e.node,
                            None,
                            format!(
                                "this equality constraint refers to elements both inside and outside the <replicate> at \
                                 line {} (MuJoCo drops such a constraint); refer only to replicated elements, or move \
                                 the constraint's other element into the replicate",
                                self.map.locate(node.range().start).1
                            ),
                        ));
                    }
                    let mut c = e.clone();
                    c.suffix.push_str(&s);
                    for (x, hit) in c.refs.iter_mut().zip(&resolved) {
                        if *hit {
                            x.value.push_str(&s);
                        }
                    }
                    let name = c.name();
                    if !name.is_empty() {
                        names.insert((c.kind, name));
                    }
                    copied[li].insert(ei);
                    copies[li].push(c);
                    if copies[li].len() + list.len() > 1_000_000 {
                        return Err(self.err(
                            node.range().start,
                            node,
                            None,
                            "the replicated elements that refer into this replicate exceed one million".into(),
                        ));
                    }
                }
            }
        }
        for (li, list) in lists.iter_mut().enumerate() {
            let mut k = 0;
            list.retain(|_| {
                k += 1;
                !copied[li].contains(&(k - 1))
            });
            list.append(&mut copies[li]);
        }
        Ok(())
    }
}
