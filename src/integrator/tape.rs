//! A record of the ICF solves behind a world's accepted states, for the
//! gradient pass of [`crate::diff`]: per solve the start state (q0, v0), the
//! step h, the contact skin, the converged velocity v1 and the identity of
//! each contact (geoms and features). In fixed-step mode that is one solve
//! per step; in CENIC mode the two accepted half steps of each accepted step
//! (the full step only estimates the error). Storage is flat and grows by
//! amortised doubling; nothing else is allocated.

use crate::collision::Contact;
use crate::math::Real;

/// Identity of one contact of a recorded solve: geom ids (A, B) and feature ids (see
/// [`crate::collision::ContactPoint::feature`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactKey {
    /// Geom ids (A, B).
    pub geom: [u32; 2],
    /// Feature ids on A and B.
    pub feature: [u32; 2],
}

impl ContactKey {
    /// The key of a contact.
    pub fn of<T>(c: &Contact<T>) -> Self {
        Self { geom: [c.geom[0] as u32, c.geom[1] as u32], feature: c.feature }
    }
}

/// One recorded solve, borrowed from a [`Tape`].
#[derive(Clone, Copy, Debug)]
pub struct TapeSolve<'a> {
    /// Time step of the solve (s).
    pub h: f64,
    /// Speculative contact skin of its geometry query (m).
    pub skin: f64,
    /// Positions at the start (nq).
    pub q0: &'a [f64],
    /// Velocities at the start (nv).
    pub v0: &'a [f64],
    /// Converged velocity v1 (nv); the step ends at (q0 ⊕ h·v1, v1).
    pub v1: &'a [f64],
    /// The contacts of the solve, in order.
    pub contacts: &'a [ContactKey],
}

/// Recorded solves of one world, in order (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Tape {
    nq: usize,
    nv: usize,
    h: Vec<f64>,
    skin: Vec<f64>,
    q0: Vec<f64>,
    v0: Vec<f64>,
    v1: Vec<f64>,
    contact_start: Vec<usize>,
    contacts: Vec<ContactKey>,
}

impl Tape {
    /// An empty tape for states with `nq` positions and `nv` velocities.
    pub fn new(nq: usize, nv: usize) -> Self {
        Self { nq, nv, contact_start: vec![0], ..Default::default() }
    }

    /// Number of recorded solves.
    pub fn len(&self) -> usize {
        self.h.len()
    }

    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// Bytes of recorded data: per solve h, skin, q0, v0, v1 and the
    /// contact index, plus the contact keys.
    pub fn bytes(&self) -> usize {
        use core::mem::size_of;
        size_of::<f64>() * (self.h.len() + self.skin.len() + self.q0.len() + self.v0.len() + self.v1.len())
            + size_of::<usize>() * self.contact_start.len()
            + size_of::<ContactKey>() * self.contacts.len()
    }

    /// Forgets all solves (keeps storage).
    pub fn clear(&mut self) {
        self.h.clear();
        self.skin.clear();
        self.q0.clear();
        self.v0.clear();
        self.v1.clear();
        self.contact_start.clear();
        self.contact_start.push(0);
        self.contacts.clear();
    }

    /// Appends a solve: start state (q0, v0), step `h` (s), contact `skin`
    /// (m), converged velocity `v1` and the contacts.
    pub fn push<T: Real>(&mut self, q0: &[T], v0: &[T], h: f64, skin: f64, v1: &[T], contacts: &[Contact<T>]) {
        debug_assert!(q0.len() == self.nq && v0.len() == self.nv && v1.len() == self.nv);
        self.h.push(h);
        self.skin.push(skin);
        self.q0.extend(q0.iter().map(|x| x.f64()));
        self.v0.extend(v0.iter().map(|x| x.f64()));
        self.v1.extend(v1.iter().map(|x| x.f64()));
        self.contacts.extend(contacts.iter().map(ContactKey::of));
        self.contact_start.push(self.contacts.len());
    }

    /// Appends every solve of `other`.
    pub fn append(&mut self, other: &Tape) {
        let base = self.contacts.len();
        self.h.extend_from_slice(&other.h);
        self.skin.extend_from_slice(&other.skin);
        self.q0.extend_from_slice(&other.q0);
        self.v0.extend_from_slice(&other.v0);
        self.v1.extend_from_slice(&other.v1);
        self.contacts.extend_from_slice(&other.contacts);
        self.contact_start.extend(other.contact_start[1..].iter().map(|s| s + base));
    }

    /// Solve `i`.
    pub fn solve(&self, i: usize) -> TapeSolve<'_> {
        let (nq, nv) = (self.nq, self.nv);
        TapeSolve {
            h: self.h[i],
            skin: self.skin[i],
            q0: &self.q0[i * nq..(i + 1) * nq],
            v0: &self.v0[i * nv..(i + 1) * nv],
            v1: &self.v1[i * nv..(i + 1) * nv],
            contacts: &self.contacts[self.contact_start[i]..self.contact_start[i + 1]],
        }
    }
}
