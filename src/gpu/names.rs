//! Names the kernels also see: enums whose values are WGSL constants (or
//! WGSL function names), with one trait, [`KernelName`], so that Rust and
//! WGSL spell them from one list and the compiler checks every use. Data
//! layer: knows no stage; the stages' own names (trial parts, sensor kinds)
//! implement the trait where they are defined.
//!
//! The constants of the names every kernel file may use (trial stages,
//! geom and pair kinds) are generated here and composed into every module
//! after `kernels/data.wgsl` ([`super::data::DATA`]).

use crate::collision::{MAX_MANIFOLD, PAIR_KINDS};
use crate::model::GeomKind;

/// A name the kernels also see: a closed set of values, each with a name
/// and a code (its index in [`Self::ALL`] unless the type says otherwise).
pub trait KernelName: Copy + PartialEq + Sized + 'static {
    /// Every value, in code order.
    const ALL: &'static [Self];

    /// The name (lower case; the WGSL constant is `<PREFIX>_<NAME>` upper-cased).
    fn name(self) -> &'static str;

    /// The value's code in WGSL.
    fn code(self) -> u32 {
        Self::ALL.iter().position(|v| *v == self).expect("every value is in ALL") as u32
    }

    /// The value of `code`, if any.
    fn from_code(code: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.code() == code)
    }
}

/// `const <PREFIX>_<NAME>: u32 = <code>u;` for every value of `T`, under a
/// comment line naming where the list comes from.
pub fn wgsl_constants<T: KernelName>(prefix: &str, source: &str) -> String {
    let mut out = format!("// {prefix}_* (generated from {source}).\n");
    for v in T::ALL {
        out += &format!("const {prefix}_{}: u32 = {}u;\n", v.name().to_uppercase(), v.code());
    }
    out
}

/// The part of a trial a world is at (`CenicWorld.stage`, the constants
/// `STAGE_*`). Fixed steps: Begin → Forward0 → (collision) → Build0 →
/// Choose0 → Step0 → (solve) → Solve0 → Begin. Step doubling goes on from
/// Solve0: Step1 → (solve) → Solve1 → Forward1 → (collision) → Build1 →
/// Start2 → Step2 → (solve) → Solve2 → Begin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrialStage {
    /// Starting a trial.
    Begin,
    /// The geometry at x0.
    Forward0,
    /// The problem at x0 (after the collision).
    Build0,
    /// Choosing the step.
    Choose0,
    /// The full (or fixed) step's terms.
    Step0,
    /// The full (or fixed) step's solution.
    Solve0,
    /// The first half step's terms.
    Step1,
    /// The first half step's solution.
    Solve1,
    /// The geometry at the midpoint.
    Forward1,
    /// The problem at the midpoint (after the collision).
    Build1,
    /// Starting the second half step.
    Start2,
    /// The second half step's terms.
    Step2,
    /// The second half step's solution and the error control.
    Solve2,
}

impl KernelName for TrialStage {
    const ALL: &'static [Self] = &[
        TrialStage::Begin,
        TrialStage::Forward0,
        TrialStage::Build0,
        TrialStage::Choose0,
        TrialStage::Step0,
        TrialStage::Solve0,
        TrialStage::Step1,
        TrialStage::Solve1,
        TrialStage::Forward1,
        TrialStage::Build1,
        TrialStage::Start2,
        TrialStage::Step2,
        TrialStage::Solve2,
    ];

    fn name(self) -> &'static str {
        match self {
            TrialStage::Begin => "begin",
            TrialStage::Forward0 => "forward0",
            TrialStage::Build0 => "build0",
            TrialStage::Choose0 => "choose0",
            TrialStage::Step0 => "step0",
            TrialStage::Solve0 => "solve0",
            TrialStage::Step1 => "step1",
            TrialStage::Solve1 => "solve1",
            TrialStage::Forward1 => "forward1",
            TrialStage::Build1 => "build1",
            TrialStage::Start2 => "start2",
            TrialStage::Step2 => "step2",
            TrialStage::Solve2 => "solve2",
        }
    }
}

/// Geom kinds (`GEOM_*`): the model's [`GeomKind`], coded as `kind as u32`.
impl KernelName for GeomKind {
    const ALL: &'static [Self] = &GeomKind::ALL;

    fn name(self) -> &'static str {
        GeomKind::name(self)
    }

    fn code(self) -> u32 {
        self as u32
    }
}

/// The pair-kind code of the kernels (`kind(A) · GEOM_KINDS + kind(B)`).
pub fn pair_code(a: GeomKind, b: GeomKind) -> u32 {
    a as u32 * GeomKind::COUNT as u32 + b as u32
}

/// The generated WGSL of the geom kinds (`GEOM_*`), the manifold size and
/// the pair-kind codes (`PAIR_<A>_<B>`), from [`GeomKind`] and
/// [`PAIR_KINDS`].
pub fn kind_constants() -> String {
    let mut out = wgsl_constants::<GeomKind>("GEOM", "src/model GeomKind");
    out += &format!("const GEOM_KINDS: u32 = {}u;\n", GeomKind::COUNT);
    out += &format!(
        "/// Most points a single narrow-phase call may produce (collision::MAX_MANIFOLD).\nconst MAX_MANIFOLD: u32 = {MAX_MANIFOLD}u;\n"
    );
    out += "// PAIR_* (generated from src/collision/narrowphase.rs PAIR_KINDS).\n";
    for p in &PAIR_KINDS {
        out += &format!(
            "const PAIR_{}_{}: u32 = {}u;\n",
            p.a.name().to_uppercase(),
            p.b.name().to_uppercase(),
            pair_code(p.a, p.b)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        for (i, s) in TrialStage::ALL.iter().enumerate() {
            assert_eq!(s.code(), i as u32);
            assert_eq!(TrialStage::from_code(i as u32), Some(*s));
        }
        for k in GeomKind::ALL {
            assert_eq!(GeomKind::from_code(k as u32), Some(k));
        }
        let text = wgsl_constants::<TrialStage>("STAGE", "test");
        assert!(text.contains("const STAGE_BUILD0: u32 = 2u;"), "{text}");
    }
}
