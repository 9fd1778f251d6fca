//! MJCF frame conventions, reproducing MuJoCo's compiler (user_util.cc):
//! the orientation alternatives (`quat`, `axisangle`, `euler`, `xyaxes`,
//! `zaxis`) and `fromto`. Quaternions are (w, x, y, z).

use super::Compiler;
use super::xml::Elem;
use super::xml::{Attr, ORIENTATION_ATTRS};
use crate::model::ModelError;

/// MuJoCo's `mjEPS` for degenerate vectors.
const EPS: f64 = 1e-14;

/// Hamilton product a·b.
pub(super) fn quat_mul(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ]
}

/// Rotates `v` by the unit quaternion `q`.
pub(super) fn quat_rotate(q: [f64; 4], v: [f64; 3]) -> [f64; 3] {
    let p = quat_mul(quat_mul(q, [0.0, v[0], v[1], v[2]]), [q[0], -q[1], -q[2], -q[3]]);
    [p[1], p[2], p[3]]
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Normalises a 3-vector in place; returns its original length.
fn normalize3(v: &mut [f64; 3]) -> f64 {
    let n = norm(v);
    if n >= EPS {
        v.iter_mut().for_each(|x| *x /= n);
    }
    n
}

/// Normalised quaternion, or an error for a (near) zero one.
pub(super) fn normalize_quat(q: [f64; 4]) -> Result<[f64; 4], &'static str> {
    let n = norm(&q);
    if !n.is_finite() || n < EPS {
        return Err("zero quaternion is not allowed");
    }
    Ok(q.map(|x| x / n))
}

/// Rotation of angle `angle` (rad) about `axis` (any length).
pub(super) fn axisangle(axis: [f64; 3], angle: f64) -> Result<[f64; 4], &'static str> {
    let mut a = axis;
    if normalize3(&mut a) < EPS {
        return Err("axisangle axis is too small");
    }
    let (s, c) = (0.5 * angle).sin_cos();
    Ok([c, a[0] * s, a[1] * s, a[2] * s])
}

/// Euler angles (rad) in the sequence `seq`: lower-case letters rotate
/// about the moving (body) axes, upper-case about the fixed axes.
pub(super) fn euler(angles: [f64; 3], seq: [u8; 3]) -> [f64; 4] {
    let mut q = [1.0, 0.0, 0.0, 0.0];
    for i in 0..3 {
        let (s, c) = (0.5 * angles[i]).sin_cos();
        let mut r = [c, 0.0, 0.0, 0.0];
        match seq[i].to_ascii_lowercase() {
            b'x' => r[1] = s,
            b'y' => r[2] = s,
            _ => r[3] = s,
        }
        q = if seq[i].is_ascii_lowercase() { quat_mul(q, r) } else { quat_mul(r, q) };
    }
    q
}

/// Frame with x axis along `v[0..3]` and y axis in the plane of `v[0..3]` and `v[3..6]`.
pub(super) fn xyaxes(v: [f64; 6]) -> Result<[f64; 4], &'static str> {
    let mut x = [v[0], v[1], v[2]];
    if normalize3(&mut x) < EPS {
        return Err("xyaxes x axis is too small");
    }
    let mut y = [v[3], v[4], v[5]];
    let d = x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    for k in 0..3 {
        y[k] -= x[k] * d;
    }
    if normalize3(&mut y) < EPS {
        return Err("xyaxes y axis is too small or parallel to x");
    }
    let mut z = [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]];
    if normalize3(&mut z) < EPS {
        return Err("xyaxes: cross(x, y) is too small");
    }
    Ok(frame2quat(x, y, z))
}

/// The minimal rotation taking the z axis to `v` (any length): MuJoCo's
/// `mjuu_z2quat` (for v = −z it rotates by π about x).
pub(super) fn z2quat(v: [f64; 3]) -> [f64; 4] {
    let mut axis = [-v[1], v[0], 0.0]; // z × v
    let s = normalize3(&mut axis);
    if s < EPS {
        axis = [1.0, 0.0, 0.0];
    }
    let ang = s.atan2(v[2]);
    let (sn, c) = (0.5 * ang).sin_cos();
    [c, axis[0] * sn, axis[1] * sn, axis[2] * sn]
}

/// Frame whose z axis is along `v`.
pub(super) fn zaxis(v: [f64; 3]) -> Result<[f64; 4], &'static str> {
    let mut z = v;
    if normalize3(&mut z) < EPS {
        return Err("zaxis is too small");
    }
    Ok(z2quat(z))
}

/// Quaternion of the rotation matrix with columns x, y, z (MuJoCo's `mjuu_frame2quat`).
pub(super) fn frame2quat(x: [f64; 3], y: [f64; 3], z: [f64; 3]) -> [f64; 4] {
    let m = [x, y, z]; // m[column][row]
    let mut q = [0.0; 4];
    if m[0][0] + m[1][1] + m[2][2] > 0.0 {
        q[0] = 0.5 * (1.0 + m[0][0] + m[1][1] + m[2][2]).sqrt();
        q[1] = 0.25 * (m[1][2] - m[2][1]) / q[0];
        q[2] = 0.25 * (m[2][0] - m[0][2]) / q[0];
        q[3] = 0.25 * (m[0][1] - m[1][0]) / q[0];
    } else if m[0][0] > m[1][1] && m[0][0] > m[2][2] {
        q[1] = 0.5 * (1.0 + m[0][0] - m[1][1] - m[2][2]).sqrt();
        q[0] = 0.25 * (m[1][2] - m[2][1]) / q[1];
        q[2] = 0.25 * (m[1][0] + m[0][1]) / q[1];
        q[3] = 0.25 * (m[2][0] + m[0][2]) / q[1];
    } else if m[1][1] > m[2][2] {
        q[2] = 0.5 * (1.0 - m[0][0] + m[1][1] - m[2][2]).sqrt();
        q[0] = 0.25 * (m[2][0] - m[0][2]) / q[2];
        q[1] = 0.25 * (m[1][0] + m[0][1]) / q[2];
        q[3] = 0.25 * (m[2][1] + m[1][2]) / q[2];
    } else {
        q[3] = 0.5 * (1.0 - m[0][0] - m[1][1] + m[2][2]).sqrt();
        q[0] = 0.25 * (m[0][1] - m[1][0]) / q[3];
        q[1] = 0.25 * (m[2][0] + m[0][2]) / q[3];
        q[2] = 0.25 * (m[2][1] + m[1][2]) / q[3];
    }
    let n = norm(&q);
    q.map(|v| v / n)
}

/// Pose and half-length of a shape given by `fromto` = [from (3), to (3)]:
/// the centre is the midpoint and the shape's z axis points from `to`
/// towards `from` (MuJoCo's convention, which matters for asymmetric use
/// of the frame, e.g. sites).
pub(super) fn fromto(ft: [f64; 6]) -> Result<([f64; 3], [f64; 4], f64), &'static str> {
    let v = [ft[0] - ft[3], ft[1] - ft[4], ft[2] - ft[5]];
    let len = norm(&v);
    if len < EPS {
        return Err("fromto points are too close");
    }
    let pos = [0.5 * (ft[0] + ft[3]), 0.5 * (ft[1] + ft[4]), 0.5 * (ft[2] + ft[5])];
    let u = v.map(|x| x / len);
    Ok((pos, z2quat(u), 0.5 * len))
}

/// The orientation an element specifies with one of the MJCF alternatives,
/// or `None`. Angles follow `compiler angle` and `eulerseq`. Alternatives
/// written on the element itself take precedence over those from its
/// default class; two on the same element (or in the same default) are an
/// error, as in MuJoCo.
pub(super) fn orientation(el: &Elem, compiler: &Compiler) -> Result<Option<[f64; 4]>, ModelError> {
    let own: Vec<Attr> = ORIENTATION_ATTRS.iter().filter_map(|n| super::xml::own_attr(el.node, n)).collect();
    let found: Vec<Attr> =
        if own.is_empty() { ORIENTATION_ATTRS.iter().filter_map(|n| el.attr(n)).collect() } else { own };
    let Some(a) = found.first().copied() else { return Ok(None) };
    if found.len() > 1 {
        return Err(el.err_attr(
            &found[1],
            format!("multiple orientation specifiers ('{}' and '{}') are not allowed", a.name, found[1].name),
        ));
    }
    // `el` reads the element's own value first, so this is the value found above.
    let reader = el;
    let bad = |m: &str| el.err_attr(&a, m.to_string());
    let angle = |x: f64| if compiler.degree { x.to_radians() } else { x };
    let q = match a.name {
        "quat" => normalize_quat(reader.arr::<4>("quat")?.unwrap()).map_err(bad)?,
        "axisangle" => {
            let v = reader.arr::<4>("axisangle")?.unwrap();
            axisangle([v[0], v[1], v[2]], angle(v[3])).map_err(bad)?
        }
        "euler" => {
            let v = reader.arr::<3>("euler")?.unwrap();
            euler(v.map(angle), compiler.eulerseq)
        }
        "xyaxes" => xyaxes(reader.arr::<6>("xyaxes")?.unwrap()).map_err(bad)?,
        _ => zaxis(reader.arr::<3>("zaxis")?.unwrap()).map_err(bad)?,
    };
    Ok(Some(q))
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // MuJoCo's printed digits, kept verbatim
mod tests {
    use super::*;

    /// Equal up to the quaternion sign (q and −q are the same rotation).
    fn assert_quat(q: [f64; 4], want: [f64; 4]) {
        let d1 = (0..4).map(|i| (q[i] - want[i]).abs()).fold(0.0, f64::max);
        let d2 = (0..4).map(|i| (q[i] + want[i]).abs()).fold(0.0, f64::max);
        assert!(d1.min(d2) < 1e-12, "{q:?} != {want:?}");
    }

    // Expected values below were computed once with MuJoCo 4.0.0 (Python:
    // compile a one-geom model with the attribute and print `m.geom_quat`,
    // `m.geom_pos`, `m.geom_size`), then hard-coded here.

    #[test]
    fn axisangle_degrees_matches_mujoco() {
        // <geom axisangle="1 2 3 30"/> with the default angle="degree".
        let q = axisangle([1.0, 2.0, 3.0], 30f64.to_radians()).unwrap();
        assert_quat(q, [0.9659258262890683, 0.06917229942468747, 0.13834459884937494, 0.20751689827406242]);
        assert!(axisangle([0.0; 3], 1.0).is_err());
    }

    #[test]
    fn euler_sequences_match_mujoco() {
        let a = [10f64, 20.0, 30.0].map(f64::to_radians);
        // Default eulerseq "xyz" (intrinsic).
        assert_quat(
            euler(a, *b"xyz"),
            [0.943714364147489, 0.12767944069578063, 0.14487812541736914, 0.2685358227515692],
        );
        // "ZYX" (extrinsic).
        assert_quat(
            euler(a, *b"ZYX"),
            [0.943714364147489, 0.2685358227515692, 0.14487812541736914, 0.12767944069578063],
        );
        assert_quat(
            euler(a, *b"zyx"),
            [0.9515485246437885, 0.2392983377447303, 0.18930785741199999, 0.03813457647485015],
        );
        // "XYZ" with angle="radian" and euler="0.1 0.2 0.3".
        assert_quat(
            euler([0.1, 0.2, 0.3], *b"XYZ"),
            [0.9833474432563558, 0.0342707985504821, 0.10602051106179562, 0.1435721750273919],
        );
    }

    #[test]
    fn xyaxes_and_zaxis_match_mujoco() {
        assert_quat(
            xyaxes([1.0, 1.0, 0.0, -1.0, 2.0, 0.5]).unwrap(),
            [0.9176985493045643, 0.10669003326258619, 0.04419245874739983, 0.380123185292065],
        );
        assert_quat(
            zaxis([1.0, 2.0, 3.0]).unwrap(),
            [0.9491532346616307, -0.28157860306687144, 0.14078930153343572, 0.0],
        );
        // Antiparallel to z: rotation by π about x.
        assert_quat(zaxis([0.0, 0.0, -1.0]).unwrap(), [6.123233995736766e-17, 1.0, 0.0, 0.0]);
        assert!(xyaxes([1.0, 0.0, 0.0, 2.0, 0.0, 0.0]).is_err());
        // quat="1 2 3 4" is normalised.
        assert_quat(
            normalize_quat([1.0, 2.0, 3.0, 4.0]).unwrap(),
            [0.18257418583505536, 0.3651483716701107, 0.5477225575051661, 0.7302967433402214],
        );
    }

    #[test]
    fn fromto_matches_mujoco() {
        // capsule fromto="0 0 0 0 0 1": z axis points from `to` to `from`.
        let (p, q, h) = fromto([0.0, 0.0, 0.0, 0.0, 0.0, 1.0]).unwrap();
        assert_eq!((p, h), ([0.0, 0.0, 0.5], 0.5));
        assert_quat(q, [6.123233995736766e-17, 1.0, 0.0, 0.0]);
        let (_, q, _) = fromto([0.0, 0.0, 1.0, 0.0, 0.0, 0.0]).unwrap();
        assert_quat(q, [1.0, 0.0, 0.0, 0.0]);
        let (p, q, h) = fromto([0.1, 0.2, 0.3, 0.5, -0.3, 0.2]).unwrap();
        for (a, b) in p.iter().zip([0.3, -0.04999999999999999, 0.25]) {
            assert!((a - b).abs() < 1e-15);
        }
        assert!((h - 0.32403703492039304).abs() < 1e-15);
        assert_quat(q, [0.7597049920732691, -0.507773910834096, -0.40621912866727683, 0.0]);
        // cylinder fromto="0 0 0 1 0 0".
        let (_, q, _) = fromto([0.0, 0.0, 0.0, 1.0, 0.0, 0.0]).unwrap();
        assert_quat(q, [0.7071067811865476, 0.0, -0.7071067811865475, 0.0]);
        assert!(fromto([1.0, 1.0, 1.0, 1.0, 1.0, 1.0]).is_err());
    }

    #[test]
    fn rotate_matches_matrix_convention() {
        // 90° about z takes x to y.
        let q = axisangle([0.0, 0.0, 1.0], std::f64::consts::FRAC_PI_2).unwrap();
        let v = quat_rotate(q, [1.0, 0.0, 0.0]);
        assert!((v[0]).abs() < 1e-15 && (v[1] - 1.0).abs() < 1e-15);
    }
}
