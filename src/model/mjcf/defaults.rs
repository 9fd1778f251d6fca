//! Default classes (`<default>`): nested classes inherit their parent's
//! attributes; an element takes missing attributes from its `class`, else
//! from the nearest enclosing body's `childclass`, else from `main`.
//!
//! As in MuJoCo, all actuator types share one set of actuator defaults per
//! class: `<motor ctrlrange=...>` in a default also applies to
//! `<position>` actuators of that class. MuJoCo also translates one type's
//! parameters into another's (a `<general gainprm>` default sets a
//! `<position>`'s kp); cenic does not, and rejects an actuator whose class
//! carries parameters written for another actuator type (see
//! [`super::actuator`]).

use super::xml::{self, Attr, Ctx, Schema, check_attrs, elements, own_attr, tag};
use crate::model::ModelError;
use roxmltree::Node;
use std::collections::HashMap;

/// Element kinds that take defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum DKind {
    Joint,
    Geom,
    Site,
    Mesh,
    Actuator,
    Tendon,
    Equality,
    Pair,
}

/// One default class with all attributes it defines or inherits.
#[derive(Clone, Debug)]
pub(super) struct Class<'a> {
    attrs: HashMap<(DKind, &'a str), Attr<'a>>,
}

impl<'a> Class<'a> {
    /// The default value of attribute `name` for elements of kind `k`.
    pub fn get(&self, k: DKind, name: &str) -> Option<Attr<'a>> {
        self.attrs.get(&(k, name)).copied()
    }
}

/// All default classes; index 0 is `main`.
pub(super) struct Defaults<'a> {
    pub classes: Vec<Class<'a>>,
    index: HashMap<String, usize>,
}

/// Default-class children that are accepted and ignored: they configure
/// elements cenic ignores (rendering) or rejects where they are used.
const IGNORED: &[&str] = &["camera", "light", "material", "flex", "skin"];
/// Actuator types cenic does not support (their defaults could change
/// other actuators through the shared actuator defaults).
const UNSUPPORTED_ACTUATORS: &[&str] = &["muscle", "adhesion", "plugin"];

impl<'a> Defaults<'a> {
    /// Only the (empty) `main` class.
    pub fn new() -> Self {
        Self { classes: vec![Class { attrs: HashMap::new() }], index: HashMap::from([("main".to_string(), 0)]) }
    }

    /// Index of the class called `name`.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// Resolves a `class` / `childclass` attribute to a class index.
    pub fn resolve(&self, ctx: &Ctx<'a>, a: Option<Attr<'a>>) -> Result<Option<usize>, ModelError> {
        match a {
            None => Ok(None),
            Some(a) => match self.lookup(a.value) {
                Some(i) => Ok(Some(i)),
                None => Err(ctx.err_attr(&a, format!("unknown default class \"{}\"", a.value))),
            },
        }
    }

    /// Parses a top-level `<default>` (the `main` class and its nested classes).
    pub fn parse_top(&mut self, ctx: &Ctx<'a>, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(ctx, node, &Schema { supported: &["class"], ignored: &[] }, false)?;
        if let Some(a) = own_attr(node, "class").filter(|a| a.value != "main") {
            return Err(ctx.err_attr(&a, "the top-level default class must be \"main\" (or unnamed)"));
        }
        // Several top-level <default>s (e.g. one per included file) all add
        // to class "main", as in MuJoCo.
        self.parse_class(ctx, node, 0)
    }

    fn parse_class(&mut self, ctx: &Ctx<'a>, node: Node<'a, 'a>, ci: usize) -> Result<(), ModelError> {
        let mut seen: Vec<&str> = vec![];
        let mut nested = vec![];
        for child in elements(node) {
            let t = tag(child);
            let (kind, schema) = match t {
                "default" => {
                    nested.push(child);
                    continue;
                }
                "joint" => (DKind::Joint, &xml::JOINT),
                "geom" => (DKind::Geom, &xml::GEOM),
                "site" => (DKind::Site, &xml::SITE),
                "mesh" => (DKind::Mesh, &xml::MESH),
                "motor" => (DKind::Actuator, &xml::MOTOR),
                "position" => (DKind::Actuator, &xml::POSITION),
                "intvelocity" => (DKind::Actuator, &xml::INTVELOCITY),
                "velocity" => (DKind::Actuator, &xml::VELOCITY),
                "damper" => (DKind::Actuator, &xml::DAMPER),
                "cylinder" => (DKind::Actuator, &xml::CYLINDER),
                "general" => (DKind::Actuator, &xml::GENERAL),
                "tendon" => (DKind::Tendon, &xml::TENDON),
                "equality" => (DKind::Equality, &xml::EQUALITY_DEFAULT),
                "pair" => (DKind::Pair, &xml::PAIR),
                _ if IGNORED.contains(&t) => continue,
                _ if UNSUPPORTED_ACTUATORS.contains(&t) => {
                    return Err(ctx.err_node(
                        child,
                        format!(
                            "<{t}> defaults are not supported (cenic supports motor, position, velocity, \
                             intvelocity, damper, cylinder and general actuators)"
                        ),
                    ));
                }
                _ => return Err(ctx.err_node(child, format!("unknown element <{t}> in a default class"))),
            };
            if seen.contains(&t) {
                return Err(ctx.err_node(child, format!("repeated <{t}> in one default class")));
            }
            seen.push(t);
            check_attrs(ctx, child, schema, true)?;
            for a in child.attributes() {
                let attr = Attr { name: a.name(), value: a.value(), node: child, pos: a.range().start };
                self.classes[ci].attrs.insert((kind, a.name()), attr);
            }
        }
        for child in nested {
            check_attrs(ctx, child, &Schema { supported: &["class"], ignored: &[] }, false)?;
            let Some(name) = own_attr(child, "class") else {
                return Err(ctx.err_node(child, "a nested default class needs a 'class' attribute"));
            };
            if self.index.contains_key(name.value) {
                return Err(ctx.err_attr(&name, format!("repeated default class name \"{}\"", name.value)));
            }
            let class = Class { attrs: self.classes[ci].attrs.clone() };
            self.classes.push(class);
            let idx = self.classes.len() - 1;
            self.index.insert(name.value.to_string(), idx);
            self.parse_class(ctx, child, idx)?;
        }
        Ok(())
    }
}
