//! `<include file="..."/>`: the children of the included file's root
//! (`<mujoco>`, or the older `<mujocoinclude>`) replace
//! the include element, anywhere in the tree, before anything else is read
//! (as MuJoCo does). The loader then sees one document; a [`SourceMap`]
//! maps every byte of it back to the file and line it was written in, so
//! errors name the included file.
//!
//! Paths are resolved as MuJoCo 4 resolves them: relative to the main
//! model's folder first, else to the including file's folder (absolute
//! paths as given). Mesh files named inside an included file are still
//! found relative to the main model's folder or `compiler meshdir`, as in
//! MuJoCo. An include cycle is an error naming the chain; a file included
//! twice is an error as in MuJoCo ("already included").

use super::xml::tag;
use crate::model::ModelError;
use std::path::{Path, PathBuf};

/// One source file taking part in a model.
#[derive(Debug)]
struct SourceFile {
    /// Name as shown in errors (the main file's name as given; included
    /// files as resolved).
    name: String,
    text: String,
    /// Canonical path (for cycle and repeat detection), when the file exists on disk.
    canonical: Option<PathBuf>,
    /// The include element that brought this file in: (file index, byte offset).
    included_at: Option<(usize, usize)>,
}

/// A stretch of the expanded text copied from one file.
#[derive(Clone, Copy, Debug)]
struct Segment {
    /// Start in the expanded text.
    start: usize,
    /// Index into `files`.
    file: usize,
    /// Start in that file's text.
    offset: usize,
    /// Generated text (not in any file): every byte maps to `offset`.
    fixed: bool,
}

/// A piece of a document rewritten from the expanded text (see
/// [`SourceMap::remap`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum Piece {
    /// Output from byte `out` on is the previous text's `from..to`.
    Copy { out: usize, from: usize, to: usize },
    /// Output from byte `out` on (up to the next piece) was generated for
    /// what the previous text has at byte `at`.
    Generated { out: usize, at: usize },
}

/// Where each byte of the expanded document came from.
#[derive(Debug)]
pub(super) struct SourceMap {
    files: Vec<SourceFile>,
    /// Sorted by `start`.
    segments: Vec<Segment>,
}

impl SourceMap {
    /// File name, 1-based line and column (in characters) of byte `pos`
    /// of the expanded text.
    pub fn locate(&self, pos: usize) -> (&str, u32, u32) {
        let i = self.segments.partition_point(|s| s.start <= pos).saturating_sub(1);
        let (file, at) = match self.segments.get(i) {
            Some(s) if s.fixed => (&self.files[s.file], s.offset),
            Some(s) => (&self.files[s.file], s.offset + (pos - s.start)),
            None => (&self.files[0], pos),
        };
        let (line, col) = line_col(&file.text, at);
        (&file.name, line, col)
    }
}

impl SourceMap {
    /// The map of a document rewritten from the text this map describes:
    /// `pieces` (in output order) say where each stretch of the new text
    /// came from.
    pub(super) fn remap(self, pieces: &[Piece]) -> SourceMap {
        let mut segments = Vec::with_capacity(pieces.len() + self.segments.len());
        // The segment of the previous text that holds byte `pos`.
        let seg_at = |pos: usize| self.segments.partition_point(|s| s.start <= pos).saturating_sub(1);
        let offset_in = |s: &Segment, pos: usize| if s.fixed { s.offset } else { s.offset + (pos - s.start) };
        for piece in pieces {
            match *piece {
                Piece::Copy { out, from, to } => {
                    let mut i = seg_at(from);
                    while let Some(s) = self.segments.get(i) {
                        if s.start >= to && s.start > from {
                            break;
                        }
                        let p = s.start.max(from);
                        segments.push(Segment {
                            start: out + (p - from),
                            file: s.file,
                            offset: offset_in(s, p),
                            fixed: s.fixed,
                        });
                        i += 1;
                    }
                }
                Piece::Generated { out, at } => {
                    if let Some(s) = self.segments.get(seg_at(at)) {
                        segments.push(Segment { start: out, file: s.file, offset: offset_in(s, at), fixed: true });
                    }
                }
            }
        }
        SourceMap { files: self.files, segments }
    }
}

/// 1-based line and column (characters) of byte `at` in `text`.
fn line_col(text: &str, at: usize) -> (u32, u32) {
    let at = at.min(text.len());
    let mut at_char = at;
    while !text.is_char_boundary(at_char) {
        at_char -= 1;
    }
    let before = &text[..at_char];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) + 1;
    (line as u32, col as u32)
}

/// Expands every `<include>` of the model text `text` (from `file_name`,
/// whose folder is `main_dir`): returns the expanded text and its map.
pub(super) fn expand(text: &str, file_name: &str, main_dir: &Path) -> Result<(String, SourceMap), ModelError> {
    let mut x = Expander {
        main_dir: main_dir.to_path_buf(),
        out: String::with_capacity(text.len()),
        map: SourceMap { files: vec![], segments: vec![] },
    };
    let canonical = std::fs::canonicalize(Path::new(file_name)).ok();
    x.map.files.push(SourceFile { name: file_name.to_string(), text: text.to_string(), canonical, included_at: None });
    x.file(0, main_dir.to_path_buf(), true)?;
    Ok((x.out, x.map))
}

struct Expander {
    main_dir: PathBuf,
    out: String,
    map: SourceMap,
}

impl Expander {
    /// Appends file `fi` (its root element for the main file, the root's
    /// content for an included one) with its includes expanded.
    fn file(&mut self, fi: usize, dir: PathBuf, is_main: bool) -> Result<(), ModelError> {
        let text = std::mem::take(&mut self.map.files[fi].text);
        let r = self.file_text(fi, &text, dir, is_main);
        self.map.files[fi].text = text;
        r
    }

    fn file_text(&mut self, fi: usize, text: &str, dir: PathBuf, is_main: bool) -> Result<(), ModelError> {
        let name = self.map.files[fi].name.clone();
        let doc = roxmltree::Document::parse(text).map_err(|e| xml_error(&name, e))?;
        let root = doc.root_element();
        let err = |pos: usize, element: &str, attribute: Option<&str>, message: String| {
            let (line, column) = line_col(text, pos);
            ModelError::Mjcf {
                file: name.clone(),
                line,
                column,
                element: element.to_string(),
                attribute: attribute.map(str::to_string),
                message,
            }
        };
        // Included files may also use the older root <mujocoinclude> (MuJoCo
        // splices the children of any root element and ignores its attributes).
        if is_main && tag(root) != "mujoco" {
            return Err(err(
                root.range().start,
                tag(root),
                None,
                format!("the root element must be <mujoco>, found <{}>", tag(root)),
            ));
        }
        if !is_main && !matches!(tag(root), "mujoco" | "mujocoinclude") {
            return Err(err(
                root.range().start,
                tag(root),
                None,
                format!(
                    "the root element of an included file must be <mujoco>, found <{}> (the older root \
                     <mujocoinclude> is accepted too)",
                    tag(root)
                ),
            ));
        }
        // The region copied: the whole document for the main file (so byte
        // offsets keep their meaning), the root's content for an included one.
        let (mut at, end) = if is_main {
            (0, text.len())
        } else {
            match (root.first_child(), root.last_child()) {
                (Some(a), Some(b)) => (a.range().start, b.range().end),
                _ => (0, 0),
            }
        };
        for inc in root.descendants().filter(|n| n.is_element() && tag(*n) == "include") {
            let range = inc.range();
            if let Some(a) = inc.attributes().find(|a| a.name() != "file") {
                return Err(err(
                    a.range().start,
                    "include",
                    Some(a.name()),
                    "unsupported attribute (include takes only 'file')".into(),
                ));
            }
            if let Some(c) = inc.children().find(|c| c.is_element()) {
                return Err(err(c.range().start, "include", None, "<include> cannot have child elements".into()));
            }
            let Some(f) = inc.attribute("file") else {
                return Err(err(range.start, "include", None, "missing required attribute 'file'".into()));
            };
            let file_pos =
                inc.attributes().find(|a| a.name() == "file").map(|a| a.range().start).unwrap_or(range.start);
            self.copy(fi, text, at, range.start);
            let (path, canonical) = self.resolve(f, &dir);
            let included = std::fs::read_to_string(&path).map_err(|e| {
                err(file_pos, "include", Some("file"), format!("cannot read '{}': {e}", path.display()))
            })?;
            if let Some(c) = &canonical {
                // A cycle: the file is among the files including this one.
                let mut chain = vec![];
                let mut k = Some(fi);
                while let Some(i) = k {
                    chain.push(i);
                    k = self.map.files[i].included_at.map(|(p, _)| p);
                }
                if chain.iter().any(|&i| self.map.files[i].canonical.as_ref() == Some(c)) {
                    let mut names: Vec<&str> = chain.iter().rev().map(|&i| self.map.files[i].name.as_str()).collect();
                    let shown = path.display().to_string();
                    names.push(&shown);
                    return Err(err(
                        file_pos,
                        "include",
                        Some("file"),
                        format!("include cycle: {}", names.join(" → ")),
                    ));
                }
                if let Some(prev) = self.map.files.iter().find(|s| s.canonical.as_ref() == Some(c)) {
                    let (by, pos) = prev.included_at.unwrap_or((0, 0));
                    let (line, _) = line_col(if by == fi { text } else { &self.map.files[by].text }, pos);
                    return Err(err(
                        file_pos,
                        "include",
                        Some("file"),
                        format!(
                            "'{}' is already included (by {} line {line}); MuJoCo includes each file once",
                            path.display(),
                            self.map.files[by].name
                        ),
                    ));
                }
            }
            self.map.files.push(SourceFile {
                name: path.display().to_string(),
                text: included,
                canonical,
                included_at: Some((fi, range.start)),
            });
            let child = self.map.files.len() - 1;
            let child_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            self.file(child, child_dir, false)?;
            at = range.end;
        }
        self.copy(fi, text, at, end);
        Ok(())
    }

    /// Copies `text[from..to]` of file `fi` to the output, recording where it came from.
    fn copy(&mut self, fi: usize, text: &str, from: usize, to: usize) {
        if to > from {
            self.map.segments.push(Segment { start: self.out.len(), file: fi, offset: from, fixed: false });
            self.out.push_str(&text[from..to]);
        }
    }

    /// The path of an included file and its canonical form: relative to
    /// the main model's folder if it exists there, else to `dir` (the
    /// including file's folder).
    fn resolve(&self, f: &str, dir: &Path) -> (PathBuf, Option<PathBuf>) {
        let p = Path::new(f);
        let candidates = if p.is_absolute() { vec![p.to_path_buf()] } else { vec![self.main_dir.join(p), dir.join(p)] };
        for c in &candidates {
            if c.is_file() {
                return (c.clone(), std::fs::canonicalize(c).ok());
            }
        }
        (candidates[0].clone(), None)
    }
}

/// A malformed-XML error of file `file`.
pub(super) fn xml_error(file: &str, e: roxmltree::Error) -> ModelError {
    let (p, msg) = (e.pos(), e.to_string());
    let msg = msg.strip_suffix(&format!(" at {p}")).unwrap_or(&msg);
    ModelError::Xml { file: file.to_string(), message: format!("line {}, column {}: {msg}", p.row, p.col) }
}
