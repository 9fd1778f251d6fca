//! XML access for the MJCF loader: attribute lookup through default
//! classes, value parsing, per-element attribute lists and errors that name
//! the file, line, element and attribute.

use super::defaults::{Class, DKind};
use super::include::SourceMap;
use crate::model::ModelError;
use roxmltree::{Document, Node};

/// Source of errors: the parsed document (includes expanded) and where
/// each of its bytes came from (for file names and line numbers).
pub(super) struct Ctx<'a> {
    pub doc: &'a Document<'a>,
    pub map: &'a SourceMap,
}

/// An attribute value and where it was written (on the element itself or
/// in a default class).
#[derive(Clone, Copy, Debug)]
pub(super) struct Attr<'a> {
    pub name: &'a str,
    pub value: &'a str,
    pub node: Node<'a, 'a>,
    /// Byte offset of the attribute in the document.
    pub pos: usize,
}

impl<'a> Ctx<'a> {
    /// An error about `node` as a whole.
    pub fn err_node(&self, node: Node<'a, 'a>, message: impl Into<String>) -> ModelError {
        self.err_at(node, node.range().start, None, message)
    }
    /// The file and line where `node` starts, as "file:line".
    pub fn line_of(&self, node: Node<'a, 'a>) -> String {
        let (file, line, _) = self.map.locate(node.range().start);
        format!("{file}:{line}")
    }
    /// An error about one attribute value.
    pub fn err_attr(&self, a: &Attr<'a>, message: impl Into<String>) -> ModelError {
        self.err_at(a.node, a.pos, Some(a.name), message)
    }
    fn err_at(&self, node: Node<'a, 'a>, pos: usize, attr: Option<&str>, message: impl Into<String>) -> ModelError {
        let (file, line, column) = self.map.locate(pos);
        ModelError::Mjcf {
            file: file.to_string(),
            line,
            column,
            element: element_label(node),
            attribute: attr.map(str::to_string),
            message: message.into(),
        }
    }
}

/// `geom name="x"`, or `geom (default class "a")` for elements inside a default class.
pub(super) fn element_label(node: Node) -> String {
    let tag = node.tag_name().name();
    if let Some(parent) = node.parent_element().filter(|p| p.tag_name().name() == "default") {
        let class = parent.attribute("class").unwrap_or("main");
        return format!("{tag} (default class \"{class}\")");
    }
    match node.attribute("name") {
        Some(n) => format!("{tag} name=\"{n}\""),
        None => tag.to_string(),
    }
}

/// The attribute `name` written on `node` itself.
pub(super) fn own_attr<'a>(node: Node<'a, 'a>, name: &str) -> Option<Attr<'a>> {
    node.attributes().find(|a| a.name() == name).map(|a| Attr {
        name: a.name(),
        value: a.value(),
        node,
        pos: a.range().start,
    })
}

/// Attributes an element may carry: `supported` ones are read; `ignored`
/// ones are accepted and have no effect on the simulation (rendering,
/// bookkeeping, MuJoCo solver settings). Anything else is an error.
pub(super) struct Schema {
    pub supported: &'static [&'static str],
    pub ignored: &'static [&'static str],
}

/// Checks every attribute of `node` against `schema`; `in_default` also
/// rejects `name` and `class` (not allowed inside default classes).
pub(super) fn check_attrs<'a>(
    ctx: &Ctx<'a>,
    node: Node<'a, 'a>,
    schema: &Schema,
    in_default: bool,
) -> Result<(), ModelError> {
    for a in node.attributes() {
        let n = a.name();
        let known = schema.supported.contains(&n) || schema.ignored.contains(&n);
        let forbidden = in_default && matches!(n, "name" | "class" | "childclass");
        if !known || forbidden {
            let at = Attr { name: n, value: a.value(), node, pos: a.range().start };
            let list: Vec<&str> =
                schema.supported.iter().copied().filter(|s| !(in_default && matches!(*s, "name" | "class"))).collect();
            let msg = if forbidden {
                format!("attribute '{n}' is not allowed in a default class")
            } else {
                format!("unsupported attribute '{n}' (supported: {})", list.join(", "))
            };
            return Err(ctx.err_attr(&at, msg));
        }
    }
    Ok(())
}

/// An element plus the default class its missing attributes come from.
#[derive(Clone, Copy)]
pub(super) struct Elem<'c, 'a> {
    pub ctx: &'c Ctx<'a>,
    pub node: Node<'a, 'a>,
    pub class: Option<(&'c Class<'a>, DKind)>,
}

impl<'c, 'a> Elem<'c, 'a> {
    /// An element without default classes.
    pub fn plain(ctx: &'c Ctx<'a>, node: Node<'a, 'a>) -> Self {
        Self { ctx, node, class: None }
    }
    /// The attribute written on the element, else from its default class.
    pub fn attr(&self, name: &str) -> Option<Attr<'a>> {
        own_attr(self.node, name).or_else(|| self.class.and_then(|(c, k)| c.get(k, name)))
    }
    /// Whether the element itself (not a default) writes `name`.
    pub fn has_own(&self, name: &str) -> bool {
        self.node.attribute(name).is_some()
    }
    /// An error about the element as a whole.
    pub fn err(&self, message: impl Into<String>) -> ModelError {
        self.ctx.err_node(self.node, message)
    }
    /// An error about attribute `a`.
    pub fn err_attr(&self, a: &Attr<'a>, message: impl Into<String>) -> ModelError {
        self.ctx.err_attr(a, message)
    }
    /// String value.
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.attr(name).map(|a| a.value)
    }
    /// Between `min` and `max` real numbers.
    pub fn reals(&self, name: &str, min: usize, max: usize) -> Result<Option<Vec<f64>>, ModelError> {
        let Some(a) = self.attr(name) else { return Ok(None) };
        let v = parse_reals(a.value).map_err(|m| self.err_attr(&a, m))?;
        if v.len() < min || v.len() > max {
            let want = if min == max { format!("{min}") } else { format!("{min} to {max}") };
            return Err(self.err_attr(&a, format!("expected {want} numbers, got {} (\"{}\")", v.len(), a.value)));
        }
        Ok(Some(v))
    }
    /// A `solimp`-like attribute: 1 to 5 numbers, the rest from MuJoCo's
    /// defaults (as MuJoCo fills a partial solimp).
    pub fn solimp(&self, name: &str) -> Result<Option<[f64; 5]>, ModelError> {
        Ok(self.reals(name, 1, 5)?.map(|v| {
            let mut s = crate::model::soft::SOLIMP_DEFAULT;
            s[..v.len()].copy_from_slice(&v);
            s
        }))
    }
    /// Exactly `N` real numbers.
    pub fn arr<const N: usize>(&self, name: &str) -> Result<Option<[f64; N]>, ModelError> {
        Ok(self.reals(name, N, N)?.map(|v| std::array::from_fn(|i| v[i])))
    }
    /// One real number.
    pub fn real(&self, name: &str) -> Result<Option<f64>, ModelError> {
        Ok(self.arr::<1>(name)?.map(|v| v[0]))
    }
    /// One real number that must be ≥ 0 (and finite).
    pub fn nonneg(&self, name: &str) -> Result<Option<f64>, ModelError> {
        let v = self.real(name)?;
        if let (Some(x), Some(a)) = (v, self.attr(name))
            && !(x >= 0.0 && x.is_finite())
        {
            return Err(self.err_attr(&a, format!("must be finite and ≥ 0, got {x}")));
        }
        Ok(v)
    }
    /// An integer.
    pub fn int(&self, name: &str) -> Result<Option<i64>, ModelError> {
        let Some(a) = self.attr(name) else { return Ok(None) };
        a.value
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| self.err_attr(&a, format!("\"{}\" is not an integer", a.value)))
    }
    /// One of `options` (returned as written in `options`).
    pub fn keyword(&self, name: &str, options: &[&'static str]) -> Result<Option<&'static str>, ModelError> {
        let Some(a) = self.attr(name) else { return Ok(None) };
        let v = a.value.trim();
        match options.iter().find(|o| **o == v) {
            Some(o) => Ok(Some(*o)),
            None => Err(self.err_attr(&a, format!("invalid value \"{v}\" (expected one of: {})", options.join(", ")))),
        }
    }
    /// `true` or `false`.
    pub fn bool(&self, name: &str) -> Result<Option<bool>, ModelError> {
        Ok(self.keyword(name, &["true", "false"])?.map(|v| v == "true"))
    }
}

/// Whitespace-separated real numbers (NaN is rejected).
pub(super) fn parse_reals(s: &str) -> Result<Vec<f64>, String> {
    s.split_whitespace()
        .map(|t| match t.parse::<f64>() {
            Ok(x) if !x.is_nan() => Ok(x),
            _ => Err(format!("\"{t}\" is not a number")),
        })
        .collect()
}

/// Element children of `node`, skipping comments and text.
pub(super) fn elements<'a>(node: Node<'a, 'a>) -> impl Iterator<Item = Node<'a, 'a>> {
    node.children().filter(|n| n.is_element())
}

/// Tag name.
pub(super) fn tag<'a>(node: Node<'a, 'a>) -> &'a str {
    node.tag_name().name()
}

// ---- attribute lists (MuJoCo 3.x / 4.0 MJCF) ----

/// The orientation alternatives.
pub(super) const ORIENTATION_ATTRS: [&str; 5] = ["quat", "axisangle", "euler", "xyaxes", "zaxis"];

pub(super) const MUJOCO: Schema = Schema { supported: &["model"], ignored: &[] };
pub(super) const COMPILER: Schema = Schema {
    supported: &[
        "angle",
        "inertiafromgeom",
        "coordinate",
        "settotalmass",
        "eulerseq",
        "meshdir",
        "assetdir",
        "autolimits",
        "boundmass",
        "boundinertia",
        "strippath",
        "balanceinertia",
        "fusestatic",
        "discardvisual",
        "inertiagrouprange",
        "alignfree",
    ],
    ignored: &["texturedir", "usethread", "saveinertial", "fitaabb"],
};
pub(super) const OPTION: Schema = Schema {
    supported: &[
        "timestep",
        "gravity",
        "stiction_tolerance",
        "density",
        "viscosity",
        "wind",
        "semantics",
        "impratio",
        "cone",
        "integrator",
    ],
    // Solver settings first (`OPTION_SOLVER`), then the rest.
    ignored: &[
        "iterations",
        "solver",
        "tolerance",
        "ls_iterations",
        "ls_tolerance",
        "noslip_iterations",
        "noslip_tolerance",
        "ccd_iterations",
        "ccd_tolerance",
        "sdf_iterations",
        "sdf_initpoints",
        "jacobian",
        "apirate",
        "magnetic",
        "o_margin",
        "o_solref",
        "o_solimp",
        "o_friction",
        "actuatorgroupdisable",
        "collision",
        "sleep_tolerance",
    ],
};
/// MuJoCo solver settings that have no counterpart in cenic (noted in a
/// warning when present): the first entries of [`OPTION`]'s ignored list.
pub(super) const OPTION_SOLVER: &[&str] = OPTION.ignored.split_at(11).0;
pub(super) const BODY: Schema = Schema {
    supported: &["name", "pos", "childclass", "mocap", "gravcomp", "quat", "axisangle", "euler", "xyaxes", "zaxis"],
    ignored: &["user", "sleep"],
};
pub(super) const FRAME: Schema =
    Schema { supported: &["name", "childclass", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis"], ignored: &[] };
pub(super) const INERTIAL: Schema = Schema {
    supported: &["pos", "mass", "diaginertia", "fullinertia", "quat", "axisangle", "euler", "xyaxes", "zaxis"],
    ignored: &[],
};
pub(super) const JOINT: Schema = Schema {
    supported: &[
        "name",
        "class",
        "type",
        "pos",
        "axis",
        "range",
        "limited",
        "armature",
        "damping",
        "stiffness",
        "springref",
        "ref",
        "frictionloss",
        "springdamper",
        "actuatorfrclimited",
        "actuatorfrcrange",
        "actuatorgravcomp",
        "margin",
        "solreflimit",
        "solimplimit",
        "solreffriction",
        "solimpfriction",
    ],
    ignored: &["group", "user"],
};
pub(super) const FREEJOINT: Schema = Schema { supported: &["name", "align"], ignored: &["group"] };
pub(super) const GEOM: Schema = Schema {
    supported: &[
        "name",
        "class",
        "type",
        "size",
        "fromto",
        "pos",
        "quat",
        "axisangle",
        "euler",
        "xyaxes",
        "zaxis",
        "mesh",
        "mass",
        "density",
        "friction",
        "condim",
        "contype",
        "conaffinity",
        "margin",
        "solref",
        "solimp",
        "priority",
        "gap",
        "shellinertia",
        "hfield",
        "fitscale",
        "stiffness",
        "dissipation",
        "friction_dynamic",
        "fluidshape",
        "solmix",
        "rgba",
        "material",
        "group",
    ],
    ignored: &["user", "fluidcoef"],
};
pub(super) const CAMERA: Schema = Schema {
    supported: &[
        "name",
        "class",
        "mode",
        "pos",
        "quat",
        "axisangle",
        "euler",
        "xyaxes",
        "zaxis",
        "fovy",
        "focal",
        "focalpixel",
        "principal",
        "principalpixel",
        "sensorsize",
        "orthographic",
    ],
    ignored: &["target", "ipd", "resolution", "user", "output"],
};
pub(super) const TEXTURE: Schema = Schema {
    supported: &["name", "type", "builtin", "rgb1", "rgb2", "file"],
    ignored: &[
        "content_type",
        "gridsize",
        "gridlayout",
        "fileright",
        "fileleft",
        "fileup",
        "filedown",
        "filefront",
        "fileback",
        "mark",
        "markrgb",
        "random",
        "width",
        "height",
        "hflip",
        "vflip",
        "nchannel",
        "colorspace",
    ],
};
pub(super) const MATERIAL: Schema = Schema {
    supported: &["name", "class", "texture", "texrepeat", "rgba"],
    ignored: &["texuniform", "emission", "specular", "shininess", "reflectance", "metallic", "roughness"],
};
pub(super) const STATISTIC: Schema =
    Schema { supported: &["extent", "center"], ignored: &["meaninertia", "meanmass", "meansize"] };
pub(super) const SITE: Schema = Schema {
    supported: &["name", "class", "type", "size", "fromto", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis"],
    ignored: &["group", "material", "rgba", "user"],
};
pub(super) const HFIELD: Schema =
    Schema { supported: &["name", "file", "content_type", "nrow", "ncol", "elevation", "size"], ignored: &[] };
pub(super) const MESH: Schema = Schema {
    supported: &["name", "class", "file", "vertex", "scale", "refpos", "refquat", "maxhullvert", "inertia", "builtin"],
    ignored: &["content_type", "face", "normal", "texcoord", "smoothnormal", "material", "params"],
};
/// Attributes every actuator element takes (MuJoCo 4).
macro_rules! actuator_schema {
    ($($extra:literal),*) => {
        Schema {
            supported: &[
                "name", "class", "joint", "jointinparent", "tendon", "site", "refsite", "body", "cranksite",
                "slidersite", "gear", "ctrlrange", "ctrllimited", "forcerange", "forcelimited", "actrange",
                "actlimited", $($extra),*
            ],
            ignored: &["group", "user", "lengthrange", "cranklength", "nsample", "interp", "delay"],
        }
    };
}
pub(super) const MOTOR: Schema = actuator_schema!();
pub(super) const POSITION: Schema = actuator_schema!("kp", "kv", "dampratio", "timeconst", "inheritrange");
pub(super) const INTVELOCITY: Schema = actuator_schema!("kp", "kv", "dampratio", "timeconst", "inheritrange");
pub(super) const VELOCITY: Schema = actuator_schema!("kv");
pub(super) const DAMPER: Schema = actuator_schema!("kv");
pub(super) const CYLINDER: Schema = actuator_schema!("timeconst", "area", "diameter", "bias");
pub(super) const GENERAL: Schema =
    actuator_schema!("dyntype", "gaintype", "biastype", "dynprm", "gainprm", "biasprm", "actearly", "actdim");
/// Actuator attributes that set a shortcut's or general actuator's own
/// parameters (not shared between actuator types the way MuJoCo shares them).
pub(super) const ACTUATOR_PARAMS: &[&str] = &[
    "kp",
    "kv",
    "dampratio",
    "timeconst",
    "inheritrange",
    "area",
    "diameter",
    "bias",
    "dyntype",
    "gaintype",
    "biastype",
    "dynprm",
    "gainprm",
    "biasprm",
    "actearly",
    "actdim",
];
pub(super) const TENDON: Schema = Schema {
    supported: &[
        "name",
        "class",
        "range",
        "limited",
        "stiffness",
        "damping",
        "armature",
        "frictionloss",
        "springlength",
        "margin",
        "solreflimit",
        "solimplimit",
        "solreffriction",
        "solimpfriction",
        "actuatorfrclimited",
        "actuatorfrcrange",
    ],
    ignored: &["group", "user", "rgba", "width", "material"],
};
pub(super) const TENDON_JOINT: Schema = Schema { supported: &["joint", "coef"], ignored: &[] };
pub(super) const TENDON_SITE: Schema = Schema { supported: &["site"], ignored: &[] };
pub(super) const PULLEY: Schema = Schema { supported: &["divisor"], ignored: &[] };
pub(super) const EQUALITY_DEFAULT: Schema = Schema { supported: &["active", "solref", "solimp"], ignored: &[] };
pub(super) const CONNECT: Schema = Schema {
    supported: &["name", "class", "active", "solref", "solimp", "body1", "body2", "anchor", "site1", "site2"],
    ignored: &[],
};
pub(super) const WELD: Schema = Schema {
    supported: &[
        "name",
        "class",
        "active",
        "solref",
        "solimp",
        "body1",
        "body2",
        "anchor",
        "site1",
        "site2",
        "relpose",
        "torquescale",
    ],
    ignored: &[],
};
pub(super) const EQ_JOINT: Schema = Schema {
    supported: &["name", "class", "active", "solref", "solimp", "joint1", "joint2", "polycoef"],
    ignored: &[],
};
pub(super) const EQ_TENDON: Schema = Schema {
    supported: &["name", "class", "active", "solref", "solimp", "tendon1", "tendon2", "polycoef"],
    ignored: &[],
};
pub(super) const PAIR: Schema = Schema {
    supported: &[
        "name",
        "class",
        "geom1",
        "geom2",
        "condim",
        "friction",
        "solref",
        "solimp",
        "margin",
        "gap",
        "stiffness",
        "dissipation",
        "friction_dynamic",
    ],
    ignored: &["solreffriction"],
};
pub(super) const EXCLUDE: Schema = Schema { supported: &["name", "body1", "body2"], ignored: &[] };
/// Attributes of sensors; which object attribute a sensor needs is checked where it is read.
pub(super) const SENSOR: Schema = Schema {
    supported: &[
        "name", "cutoff", "joint", "tendon", "actuator", "site", "body", "objtype", "objname", "reftype", "refname",
        "noise",
    ],
    ignored: &["user", "nsample", "interp", "delay", "interval"],
};
pub(super) const KEY: Schema =
    Schema { supported: &["name", "time", "qpos", "qvel", "ctrl", "act", "mpos", "mquat"], ignored: &[] };
pub(super) const FLAG: Schema = Schema {
    supported: &[
        "gravity",
        "constraint",
        "equality",
        "frictionloss",
        "limit",
        "contact",
        "spring",
        "damper",
        "passive",
        "actuation",
        "clampctrl",
        "filterparent",
        "override",
        "refsafe",
        "sensor",
        "eulerdamp",
    ],
    ignored: &[
        "warmstart",
        "energy",
        "fwdinv",
        "invdiscrete",
        "diagexact",
        "ipc",
        "midphase",
        "nativeccd",
        "multiccd",
        "island",
        "autoreset",
        "sleep",
    ],
};
