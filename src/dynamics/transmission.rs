//! Tendon lengths and Jacobians, and actuator lengths and moments (the
//! transmission stage, MuJoCo's `mj_tendon` and `mj_transmission`).

use super::{Data, point_jacobian};
use crate::math::{Real, Vec3};
use crate::model::{ActuatorKind, Model, SpatialElement, TendonPath, Transmission};

/// Fills `ten_length`, `ten_jac`, `actuator_length` and `actuator_moment`
/// at the configuration of `data` (after [`super::kinematics`]).
pub fn transmissions<T: Real>(model: &Model, data: &mut Data<T>) {
    let nv = model.nv;
    for (ti, t) in model.tendons.iter().enumerate() {
        let mut row = std::mem::take(&mut data.ten_jac);
        let jac = &mut row[ti * nv..(ti + 1) * nv];
        jac.iter_mut().for_each(|x| *x = T::zero());
        data.ten_length[ti] = match &t.path {
            TendonPath::Fixed(list) => {
                let mut len = T::zero();
                for &(j, coef) in list {
                    let jt = &model.joints[j];
                    len += T::c(coef) * data.q[jt.qpos_adr];
                    jac[jt.dof_adr] += T::c(coef);
                }
                len
            }
            TendonPath::Spatial(path) => spatial_length(model, data, path, jac),
        };
        data.ten_jac = row;
    }
    for (ai, a) in model.actuators.iter().enumerate() {
        let mut moment = std::mem::take(&mut data.actuator_moment);
        let m = &mut moment[ai * nv..(ai + 1) * nv];
        m.iter_mut().for_each(|x| *x = T::zero());
        let joint = |gear: f64, j: usize, m: &mut [T]| {
            let jt = &model.joints[j];
            m[jt.dof_adr] = T::c(gear);
            T::c(gear) * data.q[jt.qpos_adr]
        };
        data.actuator_length[ai] = match a.kind {
            ActuatorKind::Motor { gear, .. } => joint(gear, a.joint, m),
            ActuatorKind::Position { .. } => joint(1.0, a.joint, m),
            ActuatorKind::General(g) => match g.transmission {
                Transmission::Joint(j) => joint(g.gear[0], j, m),
                Transmission::Tendon(t) => {
                    let gear = T::c(g.gear[0]);
                    for (x, y) in m.iter_mut().zip(&data.ten_jac[t * nv..(t + 1) * nv]) {
                        *x = gear * *y;
                    }
                    gear * data.ten_length[t]
                }
                Transmission::Site(s) => {
                    // Force gear[0..3] and torque gear[3..6] in the site frame.
                    let site = &model.sites[s];
                    let rot = data.site_xquat[s];
                    let f = rot.rotate(Vec3::new(T::c(g.gear[0]), T::c(g.gear[1]), T::c(g.gear[2])));
                    let tq = rot.rotate(Vec3::new(T::c(g.gear[3]), T::c(g.gear[4]), T::c(g.gear[5])));
                    let (mut jp, mut jr) = (std::mem::take(&mut data.jac_a), std::mem::take(&mut data.jac_r));
                    point_jacobian(model, data, site.body, data.site_xpos[s], &mut jp, Some(&mut jr));
                    for k in 0..nv {
                        m[k] = f.x * jp[k]
                            + f.y * jp[nv + k]
                            + f.z * jp[2 * nv + k]
                            + tq.x * jr[k]
                            + tq.y * jr[nv + k]
                            + tq.z * jr[2 * nv + k];
                    }
                    (data.jac_a, data.jac_r) = (jp, jr);
                    T::zero()
                }
            },
        };
        data.actuator_moment = moment;
    }
}

/// Length of a spatial tendon and its Jacobian (added into `jac`, nv):
/// straight segments between consecutive sites of each branch, a branch's
/// length divided by the divisor of the pulley that starts it.
fn spatial_length<T: Real>(model: &Model, data: &mut Data<T>, path: &[SpatialElement], jac: &mut [T]) -> T {
    let nv = model.nv;
    let mut len = T::zero();
    let mut divisor = T::one();
    let mut prev: Option<usize> = None;
    let (mut ja, mut jb) = (std::mem::take(&mut data.jac_a), std::mem::take(&mut data.jac_b));
    for el in path {
        let s = match *el {
            SpatialElement::Pulley { divisor: d } => {
                divisor = T::c(d);
                prev = None;
                continue;
            }
            SpatialElement::Site(s) => s,
        };
        if let Some(p) = prev {
            let d = data.site_xpos[s] - data.site_xpos[p];
            let dist = d.norm();
            len += dist / divisor;
            // The Jacobian of a zero-length segment is undefined; MuJoCo skips it too.
            if dist > T::c(1e-15) {
                let u = d / (dist * divisor);
                let (bp, bs) = (model.sites[p].body, model.sites[s].body);
                point_jacobian(model, data, bs, data.site_xpos[s], &mut jb, None);
                point_jacobian(model, data, bp, data.site_xpos[p], &mut ja, None);
                for k in 0..nv {
                    jac[k] += u.x * (jb[k] - ja[k])
                        + u.y * (jb[nv + k] - ja[nv + k])
                        + u.z * (jb[2 * nv + k] - ja[2 * nv + k]);
                }
            }
        }
        prev = Some(s);
    }
    (data.jac_a, data.jac_b) = (ja, jb);
    len
}
