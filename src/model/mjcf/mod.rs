//! MJCF loader: [`Model::from_mjcf_file`], [`Model::from_mjcf_str`],
//! [`Model::from_mjcf_str_named`], [`Model::from_mjcf_file_as`].
//!
//! Reads the subset of MuJoCo's MJCF that robot models use, with MuJoCo's
//! semantics (checked against MuJoCo 4.0.0 by the fixtures in
//! `tests/fixtures/mujoco`), and builds the model through [`ModelBuilder`],
//! so every model gets the same validation as one written in code. Every
//! unknown or unsupported element or attribute is an error naming the file,
//! line, element and attribute; settings cenic accepts without modelling
//! them are listed in [`Model::warnings`].
//!
//! What loads, which [`Semantics`] a model gets, cenic's extension
//! attributes, what is refused, and how contact materials are derived from
//! MuJoCo's `solref`/`solimp` under the physical semantics: the guide's
//! chapter "Models and MJCF" (`docs/src/models.md`, section "MJCF
//! reference").

mod actuator;
mod constraint;
mod contact;
mod defaults;
mod frames;
mod hfield;
mod include;
mod meshfile;
mod replicate;
mod sensor;
#[cfg(test)]
mod tests;
mod tree;
mod xml;

use super::builder::InertiaFromGeom;
use super::visual::{Pattern, Texture, VisualMaterial};
use super::{Entity, Keyframe, Model, ModelBuilder, ModelError, Semantics};
use contact::GeomContact;
use defaults::{DKind, Defaults};
use roxmltree::Node;
use std::path::{Path, PathBuf};
use xml::{Ctx, Elem, Schema, check_attrs, elements, own_attr, tag};

impl Model {
    /// Loads a model from an MJCF file; mesh files are found relative to
    /// `compiler meshdir`, else to the file's folder.
    pub fn from_mjcf_file(path: impl AsRef<Path>) -> Result<Model, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Io { path: path.display().to_string(), message: e.to_string() })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        load(&text, &path.display().to_string(), &dir, None)
    }
    /// Loads a model from MJCF text (errors name the file `"<string>"`; mesh
    /// files are found relative to the current directory).
    pub fn from_mjcf_str(text: &str) -> Result<Model, ModelError> {
        load(text, "<string>", Path::new(""), None)
    }
    /// Loads a model from MJCF text that came from `file_name`: errors name
    /// that file, and mesh files are found relative to its folder.
    pub fn from_mjcf_str_named(text: &str, file_name: &str) -> Result<Model, ModelError> {
        let dir = Path::new(file_name).parent().map(Path::to_path_buf).unwrap_or_default();
        load(text, file_name, &dir, None)
    }
    /// [`Model::from_mjcf_file`] with the given constraint semantics, as if
    /// the file said `<option semantics="…">`: e.g. a model written for
    /// MuJoCo with cenic's physical laws (its `solref`/`solimp` mapped to
    /// Hunt–Crossley springs; the guide's "Models and MJCF", `docs/src/models.md`).
    pub fn from_mjcf_file_as(path: impl AsRef<Path>, semantics: Semantics) -> Result<Model, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Io { path: path.display().to_string(), message: e.to_string() })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        load(&text, &path.display().to_string(), &dir, Some(semantics))
    }
    /// [`Model::from_mjcf_str`] with the given constraint semantics.
    pub fn from_mjcf_str_as(text: &str, semantics: Semantics) -> Result<Model, ModelError> {
        load(text, "<string>", Path::new(""), Some(semantics))
    }
}

/// Compiler settings that affect parsing.
#[derive(Clone, Debug)]
pub(super) struct Compiler {
    /// Angles in degrees (MuJoCo's default) rather than radians.
    pub degree: bool,
    /// Euler sequence, e.g. `xyz` (lower case: moving axes).
    pub eulerseq: [u8; 3],
    /// `limited="auto"` means "limited iff a range is given".
    pub autolimits: bool,
    /// Folder for mesh files.
    pub meshdir: Option<String>,
    /// Strip folders from mesh file names.
    pub strippath: bool,
}

impl Default for Compiler {
    fn default() -> Self {
        Self { degree: true, eulerseq: *b"xyz", autolimits: true, meshdir: None, strippath: false }
    }
}

/// Where each builder entity came from, to map builder errors back to MJCF.
#[derive(Default)]
struct Sources<'a> {
    body: Vec<Node<'a, 'a>>,
    inertial: Vec<Option<Node<'a, 'a>>>,
    joint: Vec<Node<'a, 'a>>,
    geom: Vec<Node<'a, 'a>>,
    site: Vec<Node<'a, 'a>>,
    mesh: Vec<Node<'a, 'a>>,
    hfield: Vec<Node<'a, 'a>>,
    actuator: Vec<Node<'a, 'a>>,
    tendon: Vec<Node<'a, 'a>>,
    equality: Vec<Node<'a, 'a>>,
    pair: Vec<Node<'a, 'a>>,
    sensor: Vec<Node<'a, 'a>>,
    key: Vec<Node<'a, 'a>>,
    camera: Vec<Node<'a, 'a>>,
    option: Option<Node<'a, 'a>>,
    compiler: Option<Node<'a, 'a>>,
}

/// Loader state while walking the document.
pub(super) struct Loader<'c, 'a> {
    ctx: &'c Ctx<'a>,
    defaults: &'c Defaults<'a>,
    compiler: Compiler,
    dir: PathBuf,
    b: ModelBuilder,
    src: Sources<'a>,
    contacts: Vec<GeomContact>,
    /// Contact settings of each explicit pair.
    pair_contacts: Vec<GeomContact>,
    /// qpos0 as the builder will compute it (for keyframes without qpos).
    qpos0: Vec<f64>,
    nv: usize,
    /// Body poses relative to the parent (free joints start there).
    body_pose: Vec<([f64; 3], [f64; 4])>,
    /// Limits of each joint (for `inheritrange`).
    joint_ranges: Vec<Option<[f64; 2]>>,
    /// Limits of each tendon (for `inheritrange`).
    tendon_ranges: Vec<Option<[f64; 2]>>,
    /// Joints with `springdamper` (time constant s, damping ratio), applied
    /// once the effective masses are known.
    springdampers: Vec<(usize, [f64; 2])>,
    /// `<option semantics>` when given (with its element), or the caller's choice.
    semantics: Option<(Semantics, Option<Node<'a, 'a>>)>,
}

/// What cenic collides instead of unsupported geometry (for error messages).
pub(super) const GEOM_TYPES: &str =
    "cenic collides planes, height fields, spheres, capsules, boxes, cylinders, ellipsoids and convex meshes";

/// Top-level sections that are accepted and ignored entirely.
const IGNORED_SECTIONS: &[&str] = &["size", "custom"];

fn load(text: &str, file: &str, dir: &Path, semantics: Option<Semantics>) -> Result<Model, ModelError> {
    let (text, map) = include::expand(text, file, dir)?;
    let (text, map) = replicate::expand(text, map, file)?;
    // Every file was parsed on its own first; the spliced text parses too.
    let doc = roxmltree::Document::parse(&text).map_err(|e| include::xml_error(file, e))?;
    let ctx = Ctx { doc: &doc, map: &map };
    let root = doc.root_element();
    if tag(root) != "mujoco" {
        return Err(ctx.err_node(root, format!("the root element must be <mujoco>, found <{}>", tag(root))));
    }
    check_attrs(&ctx, root, &xml::MUJOCO, false)?;
    let mut sections: Vec<(&str, Node)> = vec![];
    for child in elements(root) {
        let t = tag(child);
        match t {
            "compiler" | "option" | "default" | "asset" | "worldbody" | "tendon" | "actuator" | "keyframe"
            | "sensor" | "contact" | "equality" | "visual" | "statistic" => sections.push((t, child)),
            _ if IGNORED_SECTIONS.contains(&t) => {}
            "extension" => {
                return Err(ctx.err_node(
                    child,
                    "<extension> (engine plugins) is not supported: cenic simulates rigid bodies with its built-in \
                     joints, tendons, actuators and equality constraints",
                ));
            }
            "deformable" => {
                return Err(ctx.err_node(
                    child,
                    "<deformable> (flex and skin) is not supported: cenic simulates rigid bodies only",
                ));
            }
            _ => return Err(ctx.err_node(child, format!("unknown element <{t}> in <mujoco>"))),
        }
    }
    let of = |t: &str| sections.iter().filter(move |(s, _)| *s == t).map(|(_, n)| *n).collect::<Vec<_>>();

    let mut compiler = Compiler::default();
    let mut b = ModelBuilder::new(root.attribute("model").unwrap_or("MuJoCo Model"));
    let mut src = Sources::default();
    for node in of("compiler") {
        parse_compiler(&ctx, node, &mut compiler, &mut b)?;
        src.compiler = Some(node);
    }
    let mut defaults = Defaults::new();
    for node in of("default") {
        defaults.parse_top(&ctx, node)?;
    }
    let mut l = Loader {
        ctx: &ctx,
        defaults: &defaults,
        compiler,
        dir: dir.to_path_buf(),
        b,
        src,
        contacts: vec![],
        pair_contacts: vec![],
        qpos0: vec![],
        nv: 0,
        body_pose: vec![([0.0; 3], [1.0, 0.0, 0.0, 0.0])],
        joint_ranges: vec![],
        tendon_ranges: vec![],
        springdampers: vec![],
        semantics: None,
    };
    for node in of("option") {
        l.option(node)?;
    }
    if let Some(s) = semantics {
        l.semantics = Some((s, None));
    }
    l.visual_assets(&of("asset"))?;
    for node in of("asset") {
        l.asset(node)?;
    }
    for node in of("visual") {
        l.visual(node)?;
    }
    for node in of("statistic") {
        l.statistic(node)?;
    }
    let worlds = of("worldbody");
    l.src.body.push(worlds.first().copied().unwrap_or(root));
    l.src.inertial.push(None);
    for node in worlds {
        l.worldbody(node)?;
    }
    for node in of("tendon") {
        l.tendon(node)?;
    }
    for node in of("equality") {
        l.equality(node)?;
    }
    for node in of("contact") {
        l.contact(node)?;
    }
    for node in of("actuator") {
        l.actuator(node)?;
    }
    for node in of("sensor") {
        l.sensor(node)?;
    }
    for node in of("keyframe") {
        l.keyframe(node)?;
    }
    l.finish()
}

fn parse_compiler<'a>(
    ctx: &Ctx<'a>,
    node: Node<'a, 'a>,
    c: &mut Compiler,
    b: &mut ModelBuilder,
) -> Result<(), ModelError> {
    check_attrs(ctx, node, &xml::COMPILER, false)?;
    let el = Elem::plain(ctx, node);
    if let Some(a) = el.keyword("angle", &["degree", "radian"])? {
        c.degree = a == "degree";
    }
    if let Some(a) = el.keyword("inertiafromgeom", &["true", "false", "auto"])? {
        b.inertia_from_geom = match a {
            "true" => InertiaFromGeom::Always,
            "false" => InertiaFromGeom::Never,
            _ => InertiaFromGeom::Auto,
        };
    }
    if let Some("global") = el.keyword("coordinate", &["local", "global"])? {
        return Err(el.err_attr(
            &own_attr(node, "coordinate").unwrap(),
            "coordinate=\"global\" is not supported (MuJoCo dropped it in 2.3.3); convert the model to local coordinates",
        ));
    }
    if let Some(m) = el.real("settotalmass")? {
        // MuJoCo: a non-positive value disables the rescaling.
        b.total_mass = if m > 0.0 { Some(m) } else { None };
    }
    if let Some(a) = el.attr("eulerseq") {
        let s = a.value.trim().as_bytes();
        if s.len() != 3 || !s.iter().all(|ch| b"xyzXYZ".contains(ch)) {
            return Err(el.err_attr(&a, format!("eulerseq \"{}\" must be 3 letters from xyzXYZ", a.value)));
        }
        c.eulerseq = [s[0], s[1], s[2]];
    }
    if let Some(d) = el.str("assetdir") {
        c.meshdir.get_or_insert_with(|| d.to_string());
    }
    if let Some(d) = el.str("meshdir") {
        c.meshdir = Some(d.to_string());
    }
    if let Some(v) = el.bool("autolimits")? {
        c.autolimits = v;
    }
    if let Some(v) = el.bool("strippath")? {
        c.strippath = v;
    }
    for attr in ["boundmass", "boundinertia"] {
        if el.real(attr)?.is_some_and(|v| v != 0.0) {
            return Err(el.err_attr(&el.attr(attr).unwrap(), format!("{attr} is not supported")));
        }
    }
    for (attr, bad) in [("balanceinertia", true), ("alignfree", true)] {
        if el.bool(attr)? == Some(bad) {
            return Err(el.err_attr(&el.attr(attr).unwrap(), format!("{attr}=\"true\" is not supported")));
        }
    }
    if el.bool("fusestatic")? == Some(true) {
        b.warn("compiler fusestatic=\"true\" ignored: static bodies are kept as separate bodies (same physics)");
    }
    if el.bool("discardvisual")? == Some(true) {
        b.warn("compiler discardvisual=\"true\" ignored: visual geoms are kept (with contype = conaffinity = 0 they never collide)");
    }
    if el.reals("inertiagrouprange", 2, 2)?.is_some_and(|r| r != [0.0, 5.0]) {
        return Err(el.err_attr(
            &el.attr("inertiagrouprange").unwrap(),
            "inertiagrouprange other than \"0 5\" is not supported",
        ));
    }
    Ok(())
}

impl<'c, 'a> Loader<'c, 'a> {
    /// An element with the default class `class` for its kind.
    fn elem(&self, node: Node<'a, 'a>, class: usize, kind: DKind) -> Elem<'c, 'a> {
        let d: &'c Defaults<'a> = self.defaults;
        Elem { ctx: self.ctx, node, class: Some((&d.classes[class], kind)) }
    }

    /// The class of an element: its `class` attribute, else `inherited`.
    fn class_of(&self, node: Node<'a, 'a>, inherited: usize) -> Result<usize, ModelError> {
        Ok(self.defaults.resolve(self.ctx, own_attr(node, "class"))?.unwrap_or(inherited))
    }

    fn option(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::OPTION, false)?;
        self.src.option = Some(node);
        let el = Elem::plain(self.ctx, node);
        if let Some(t) = el.real("timestep")? {
            self.b.options.timestep = t;
        }
        if let Some(g) = el.arr::<3>("gravity")? {
            self.b.options.gravity = g;
        }
        if let Some(v) = el.real("stiction_tolerance")? {
            self.b.options.stiction_tolerance = v;
        }
        match el.keyword("semantics", &["mujoco", "physical"])? {
            Some("mujoco") => self.semantics = Some((Semantics::MuJoCo, Some(node))),
            Some(_) => self.semantics = Some((Semantics::Physical, Some(node))),
            None => {}
        }
        if let Some(r) = el.real("impratio")? {
            if !(r > 0.0 && r.is_finite()) {
                return Err(el.err_attr(&el.attr("impratio").unwrap(), format!("impratio must be positive, got {r}")));
            }
            self.b.options.impratio = r;
        }
        match el.keyword("integrator", &["Euler", "RK4", "implicit", "implicitfast"])? {
            Some("RK4") => self.b.options.integrator = crate::model::Integrator::Rk4,
            Some(k @ ("implicit" | "implicitfast")) => {
                self.b.options.integrator = if k == "implicit" {
                    crate::model::Integrator::Implicit
                } else {
                    crate::model::Integrator::ImplicitFast
                };
                self.b.warn(format!(
                    "option integrator=\"{k}\": MuJoCo's step in cenic (Mode::MuJoCo) takes it as Euler with implicit \
                     joint damping (other velocity derivatives explicit); cenic's own modes are implicit in every force"
                ));
            }
            _ => {}
        }
        if el.keyword("cone", &["pyramidal", "elliptic"])? == Some("elliptic") {
            self.b.warn(
                "option cone=\"elliptic\": cenic's MuJoCo semantics use the pyramidal cone (4 edges per contact)",
            );
        }
        let solver: Vec<String> =
            xml::OPTION_SOLVER.iter().filter_map(|a| node.attribute(*a).map(|v| format!("{a}=\"{v}\""))).collect();
        if !solver.is_empty() {
            self.b.warn(format!(
                "option {} ignored: cenic always uses its own convex contact solver (Newton on the step's convex problem)",
                solver.join(" ")
            ));
        }
        if let Some(d) = el.nonneg("density")? {
            self.b.options.density = d;
        }
        if let Some(v) = el.nonneg("viscosity")? {
            self.b.options.viscosity = v;
        }
        if let Some(w) = el.arr::<3>("wind")? {
            self.b.options.wind = w;
        }
        for child in elements(node) {
            if tag(child) != "flag" {
                return Err(self.ctx.err_node(child, format!("unknown element <{}> in <option>", tag(child))));
            }
            self.flag(child)?;
        }
        Ok(())
    }

    /// `<option><flag>`: MuJoCo's switches (see [`crate::model::Flags`]).
    fn flag(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::FLAG, false)?;
        let f = &mut self.b.options.flags;
        for a in node.attributes() {
            let at = own_attr(node, a.name()).unwrap();
            let on = match a.value() {
                "enable" => true,
                "disable" => false,
                v => return Err(self.ctx.err_attr(&at, format!("invalid value \"{v}\" (expected enable or disable)"))),
            };
            match a.name() {
                "constraint" => {
                    // MuJoCo: no contacts, limits, equality constraints or friction loss.
                    (f.contact, f.limit, f.equality, f.frictionloss) =
                        (f.contact && on, f.limit && on, f.equality && on, f.frictionloss && on);
                }
                "contact" => f.contact &= on,
                "limit" => f.limit &= on,
                "equality" => f.equality &= on,
                "frictionloss" => f.frictionloss &= on,
                "gravity" => f.gravity = on,
                "actuation" => f.actuation = on,
                "spring" => f.spring = on,
                "damper" => f.damper = on,
                // MuJoCo 2's switch for all passive forces.
                "passive" => (f.spring, f.damper, f.fluid) = (on, on, on),
                "clampctrl" => f.clampctrl = on,
                "filterparent" => f.filterparent = on,
                "refsafe" => f.refsafe = on,
                "sensor" => f.sensor = on,
                "eulerdamp" => f.eulerdamp = on,
                "override" if on => {
                    return Err(self.ctx.err_attr(
                        &at,
                        "flag override=\"enable\" is not supported (cenic uses each geom's or pair's own contact settings)",
                    ));
                }
                _ => {} // diagnostics, solver and collision-algorithm switches: no effect in cenic
            }
        }
        if !self.b.options.flags.gravity {
            self.b.options.gravity = [0.0; 3];
        }
        Ok(())
    }

    /// The textures, then the materials, of every `<asset>` (a material
    /// may name a texture written after it).
    fn visual_assets(&mut self, assets: &[Node<'a, 'a>]) -> Result<(), ModelError> {
        let mut textures: Vec<(&'a str, Texture)> = vec![];
        for child in assets.iter().flat_map(|a| elements(*a)).filter(|c| tag(*c) == "texture") {
            check_attrs(self.ctx, child, &xml::TEXTURE, false)?;
            let el = Elem::plain(self.ctx, child);
            let rgb = |name: &str, default: [f64; 3]| -> Result<[f32; 3], ModelError> {
                let c = el.arr::<3>(name)?.unwrap_or(default);
                if c.iter().any(|x| !(0.0..=1.0).contains(x)) {
                    return Err(
                        el.err_attr(&el.attr(name).unwrap(), format!("colour components must be in [0, 1], got {c:?}"))
                    );
                }
                Ok(c.map(|x| x as f32))
            };
            let pattern = match el.keyword("builtin", &["none", "flat", "checker", "gradient"])? {
                Some("checker") => Pattern::Checker,
                _ => Pattern::Flat,
            };
            let texture = Texture { pattern, rgb1: rgb("rgb1", [0.8; 3])?, rgb2: rgb("rgb2", [0.5; 3])? };
            // Texture files are not read: a file texture draws as its material's colour.
            let texture = if el.attr("file").is_some() {
                Texture { pattern: Pattern::Flat, rgb1: [1.0; 3], ..texture }
            } else {
                texture
            };
            if let Some(name) = el.str("name") {
                textures.push((name, texture));
            }
        }
        for child in assets.iter().flat_map(|a| elements(*a)).filter(|c| tag(*c) == "material") {
            check_attrs(self.ctx, child, &xml::MATERIAL, false)?;
            let el = Elem::plain(self.ctx, child);
            let Some(name) = el.str("name") else { return Err(el.err("a material needs a 'name'")) };
            let rgba = match el.arr::<4>("rgba")? {
                None => [1.0; 4],
                Some(c) if c.iter().all(|x| (0.0..=1.0).contains(x)) => c.map(|x| x as f32),
                Some(c) => {
                    return Err(
                        el.err_attr(&el.attr("rgba").unwrap(), format!("rgba components must be in [0, 1], got {c:?}"))
                    );
                }
            };
            let texture = match el.attr("texture") {
                None => None,
                Some(a) => match textures.iter().find(|(n, _)| *n == a.value) {
                    Some((_, t)) => Some(*t),
                    None => return Err(el.err_attr(&a, format!("unknown texture \"{}\"", a.value))),
                },
            };
            let texrepeat = el.arr::<2>("texrepeat")?.unwrap_or([1.0; 2]).map(|x| x as f32);
            self.b.visual.materials.push(VisualMaterial { name: name.to_string(), rgba, texture, texrepeat });
        }
        Ok(())
    }

    /// `<visual>`: the free camera's field of view (`global fovy`); the
    /// rest (quality, headlight, map, scale, rgba) configures MuJoCo's viewer.
    fn visual(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            match tag(child) {
                "global" => {
                    let el = Elem::plain(self.ctx, child);
                    if let Some(f) = el.real("fovy")? {
                        if !(f > 0.0 && f < 180.0) {
                            return Err(el.err_attr(
                                &el.attr("fovy").unwrap(),
                                format!("fovy must be in (0, 180) degrees, got {f}"),
                            ));
                        }
                        self.b.visual.fovy = f;
                    }
                }
                "quality" | "headlight" | "map" | "scale" | "rgba" => {}
                t => return Err(self.ctx.err_node(child, format!("unknown element <{t}> in <visual>"))),
            }
        }
        Ok(())
    }

    /// `<statistic>`: `extent` and `center` override the computed ones (cameras).
    fn statistic(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::STATISTIC, false)?;
        let el = Elem::plain(self.ctx, node);
        if let Some(e) = el.real("extent")? {
            if !(e > 0.0 && e.is_finite()) {
                return Err(el.err_attr(&el.attr("extent").unwrap(), format!("extent must be > 0, got {e}")));
            }
            self.b.visual.extent = Some(e);
        }
        if let Some(c) = el.arr::<3>("center")? {
            self.b.visual.center = Some(c);
        }
        Ok(())
    }

    fn asset(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            match tag(child) {
                "mesh" => self.mesh(child)?,
                "texture" | "material" | "skin" => {}
                "hfield" => self.hfield(child)?,
                t @ ("model" | "flex") => {
                    return Err(self.ctx.err_node(
                        child,
                        format!(
                            "asset <{t}> is not supported: cenic loads one rigid-body model per file (with <include>)"
                        ),
                    ));
                }
                t => return Err(self.ctx.err_node(child, format!("unknown element <{t}> in <asset>"))),
            }
        }
        Ok(())
    }

    fn mesh(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::MESH, false)?;
        let class = self.class_of(node, 0)?;
        let el = self.elem(node, class, DKind::Mesh);
        if let Some(a) = el.attr("builtin") {
            return Err(el.err_attr(&a, "builtin meshes are not supported"));
        }
        let file = el.attr("file");
        let name = match (el.str("name"), file) {
            (Some(n), _) => n.to_string(),
            (None, Some(f)) => {
                Path::new(f.value).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
            }
            (None, None) => return Err(el.err("a mesh needs a 'name' (or a 'file' to take it from)")),
        };
        let mut verts: Vec<[f64; 3]> = match (el.reals("vertex", 0, usize::MAX)?, file) {
            (Some(_), Some(f)) => return Err(el.err_attr(&f, "give either 'vertex' or 'file', not both")),
            (Some(v), None) => {
                if v.len() % 3 != 0 {
                    let a = el.attr("vertex").unwrap();
                    return Err(el.err_attr(&a, format!("{} numbers is not a multiple of 3", v.len())));
                }
                v.chunks(3).map(|c| [c[0], c[1], c[2]]).collect()
            }
            (None, Some(f)) => {
                let path = self.mesh_path(f.value);
                meshfile::read_vertices(&path).map_err(|m| el.err_attr(&f, m))?
            }
            (None, None) => return Err(el.err("a mesh needs 'vertex' or 'file'")),
        };
        let scale = el.arr::<3>("scale")?.unwrap_or([1.0; 3]);
        let refpos = el.arr::<3>("refpos")?.unwrap_or([0.0; 3]);
        let refquat = match el.arr::<4>("refquat")? {
            Some(q) => frames::normalize_quat(q).map_err(|m| el.err_attr(&el.attr("refquat").unwrap(), m))?,
            None => [1.0, 0.0, 0.0, 0.0],
        };
        // MuJoCo: v' = scale ∘ (refquat⁻¹ · (v − refpos)) (checked against MuJoCo 4.0.0).
        let inv = [refquat[0], -refquat[1], -refquat[2], -refquat[3]];
        for v in verts.iter_mut() {
            let r = frames::quat_rotate(inv, [v[0] - refpos[0], v[1] - refpos[1], v[2] - refpos[2]]);
            *v = [r[0] * scale[0], r[1] * scale[1], r[2] * scale[2]];
        }
        if el.int("maxhullvert")?.is_some_and(|h| h != -1) {
            self.b.warn(format!("mesh '{name}': maxhullvert ignored, cenic uses the full convex hull"));
        }
        if let Some("shell") = el.keyword("inertia", &["convex", "exact", "legacy", "shell"])? {
            return Err(el.err_attr(&el.attr("inertia").unwrap(), "inertia=\"shell\" is not supported"));
        }
        self.src.mesh.push(node);
        self.b.add_mesh(&name, &verts).map_err(|e| self.map_error(e))?;
        Ok(())
    }

    fn mesh_path(&self, file: &str) -> PathBuf {
        let mut f = PathBuf::from(file);
        if self.compiler.strippath {
            f = f.file_name().map(PathBuf::from).unwrap_or(f);
        }
        if f.is_absolute() {
            return f;
        }
        match &self.compiler.meshdir {
            Some(d) if Path::new(d).is_absolute() => Path::new(d).join(f),
            Some(d) => self.dir.join(d).join(f),
            None => self.dir.join(f),
        }
    }

    /// The joint named by the `joint` attribute.
    fn joint_ref(&self, el: &Elem<'c, 'a>) -> Result<usize, ModelError> {
        let Some(a) = el.attr("joint") else { return Err(el.err("missing required attribute 'joint'")) };
        self.b.joint_by_name(a.value).ok_or_else(|| el.err_attr(&a, format!("unknown joint \"{}\"", a.value)))
    }

    /// A range with MuJoCo's `limited` semantics (true, false, or auto:
    /// limited iff the range is given, when `compiler autolimits` is on).
    fn limits(&self, el: &Elem<'c, 'a>, limited: &str, range: &str) -> Result<Option<[f64; 2]>, ModelError> {
        let flag = el.keyword(limited, &["true", "false", "auto"])?.unwrap_or("auto");
        let r = el.arr::<2>(range)?;
        let on = match flag {
            "true" => true,
            "false" => false,
            _ if r.is_none() => false,
            _ if self.compiler.autolimits => true,
            _ => {
                return Err(el.err_attr(
                    &el.attr(range).unwrap(),
                    format!(
                        "'{range}' is given but not '{limited}': set compiler autolimits=\"true\" or give '{limited}'"
                    ),
                ));
            }
        };
        match (on, r) {
            (false, _) => Ok(None),
            (true, Some(r)) => Ok(Some(r)),
            (true, None) => Err(el.err_attr(&el.attr(limited).unwrap(), format!("{limited}=\"true\" needs '{range}'"))),
        }
    }

    fn keyframe(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            if tag(child) != "key" {
                return Err(self.ctx.err_node(child, format!("unknown element <{}> in <keyframe>", tag(child))));
            }
            check_attrs(self.ctx, child, &xml::KEY, false)?;
            let el = Elem::plain(self.ctx, child);
            for a in ["mpos", "mquat"] {
                if el.reals(a, 0, usize::MAX)?.is_some_and(|v| !v.is_empty()) {
                    return Err(el.err_attr(&el.attr(a).unwrap(), format!("keyframe '{a}' is not supported")));
                }
            }
            let nu = self.b.actuator_count();
            let na = self.b.activation_count();
            self.src.key.push(child);
            self.b.add_keyframe(Keyframe {
                name: el.str("name").unwrap_or("").to_string(),
                time: el.real("time")?.unwrap_or(0.0),
                qpos: el.reals("qpos", 0, usize::MAX)?.unwrap_or_else(|| self.qpos0.clone()),
                qvel: el.reals("qvel", 0, usize::MAX)?.unwrap_or_else(|| vec![0.0; self.nv]),
                ctrl: el.reals("ctrl", 0, usize::MAX)?.unwrap_or_else(|| vec![0.0; nu]),
                act: el.reals("act", 0, usize::MAX)?.unwrap_or_else(|| vec![0.0; na]),
            });
        }
        Ok(())
    }

    /// Maps a builder validation error to the MJCF element it came from.
    fn map_error(&self, e: ModelError) -> ModelError {
        map_error(self.ctx, &self.src, e)
    }

    /// The range of joint `j` if it is limited.
    fn joint_range(&self, j: usize) -> Option<[f64; 2]> {
        self.joint_ranges.get(j).copied().flatten()
    }

    fn finish(self) -> Result<Model, ModelError> {
        let Loader { ctx, b, src, contacts, pair_contacts, springdampers, semantics, .. } = self;
        let mut model = b.build().map_err(|e| map_error(ctx, &src, e))?;
        for (j, sd) in springdampers {
            tree::apply_springdamper(&mut model, j, sd);
        }
        if let Some((j, msg)) = tree::massless_moving_body(&model) {
            return Err(ctx.err_node(src.joint[j], msg));
        }
        // Explicit, else physical when cenic's contact attributes are used, else MuJoCo's.
        let uses_physical = |list: &[GeomContact]| list.iter().position(GeomContact::physical);
        model.options.semantics = match semantics {
            Some((s, _)) => s,
            None if uses_physical(&contacts).is_some() || uses_physical(&pair_contacts).is_some() => {
                Semantics::Physical
            }
            None => Semantics::MuJoCo,
        };
        if let Some((Semantics::MuJoCo, node)) = semantics {
            let physical = uses_physical(&contacts)
                .map(|i| src.geom[i])
                .or_else(|| uses_physical(&pair_contacts).map(|i| src.pair[i]));
            if let Some(n) = physical {
                let asked = match node {
                    Some(o) => format!("<option semantics=\"mujoco\"> ({})", ctx.line_of(o)),
                    None => "the loader was asked for MuJoCo's semantics".into(),
                };
                return Err(ctx.err_node(
                    n,
                    format!(
                        "'stiffness', 'dissipation' and 'friction_dynamic' set cenic's physical contact law, \
                         but {asked}: remove one or the other"
                    ),
                ));
            }
        }
        let (errors, warnings) = contact::assign_materials(&mut model, &contacts);
        if let Some((gi, msg)) = errors.into_iter().next() {
            return Err(ctx.err_node(src.geom[gi], msg));
        }
        model.warnings.extend(warnings);
        if let Some((pi, msg)) = contact::assign_pair_materials(&mut model, &pair_contacts) {
            return Err(ctx.err_node(src.pair[pi], msg));
        }
        Ok(model)
    }
}

/// Maps a builder validation error ([`ModelError::Invalid`]) to the MJCF
/// element its entity came from; other errors pass through.
fn map_error<'a>(ctx: &Ctx<'a>, src: &Sources<'a>, e: ModelError) -> ModelError {
    let ModelError::Invalid { entity, name, message } = e else { return e };
    let pick = |v: &[Node<'a, 'a>], i: usize| v.get(i).copied();
    let node = match entity {
        Entity::Body(i) => match src.inertial.get(i).copied().flatten() {
            // Mass and inertia problems of explicit inertials point at <inertial>.
            Some(n) if message.contains("mass") || message.contains("inertia") => Some(n),
            _ => pick(&src.body, i),
        },
        Entity::Joint(i) => pick(&src.joint, i),
        Entity::Geom(i) => pick(&src.geom, i),
        Entity::Site(i) => pick(&src.site, i),
        Entity::Mesh(i) => pick(&src.mesh, i),
        Entity::Actuator(i) => pick(&src.actuator, i),
        Entity::Tendon(i) => pick(&src.tendon, i),
        Entity::Equality(i) => pick(&src.equality, i),
        Entity::Pair(i) => pick(&src.pair, i),
        Entity::Sensor(i) => pick(&src.sensor, i),
        Entity::Keyframe(i) => pick(&src.key, i),
        Entity::Camera(i) => pick(&src.camera, i),
        Entity::Model if name == "option" => src.option,
        Entity::Model if message.contains("settotalmass") => src.compiler,
        Entity::Model => None,
    };
    ctx.err_node(node.unwrap_or_else(|| ctx.doc.root_element()), message)
}
