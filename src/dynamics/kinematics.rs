//! Forward kinematics (body, joint, geom and site poses; spatial inertias
//! and motion subspaces) and body velocities.

use super::Data;
use crate::math::{Motion, Quat, Real, SpatialInertia, Vec3, q4, v3};
use crate::model::{JointKind, Model};

/// Forward kinematics at `data.q`: body frames, joint anchors and axes,
/// geom and site poses, then each body's spatial inertia (`cinert`) and
/// each dof's motion subspace (`cdof`) about the tree reference point.
pub fn kinematics<T: Real>(model: &Model, data: &mut Data<T>) {
    data.xpos[0] = Vec3::zero();
    data.xquat[0] = Quat::identity();
    data.xmat[0] = crate::math::Mat3::identity();
    data.xipos[0] = Vec3::zero();
    for bi in 1..model.bodies.len() {
        let body = &model.bodies[bi];
        let (ppos, pquat) = (data.xpos[body.parent], data.xquat[body.parent]);
        let mut xpos = ppos + pquat.rotate(v3(body.pos));
        let mut xquat = pquat * q4(body.quat);
        for ji in body.jnt_adr..body.jnt_adr + body.jnt_num {
            let j = &model.joints[ji];
            let qa = j.qpos_adr;
            match j.kind {
                JointKind::Free => {
                    xpos = Vec3::from_slice(&data.q[qa..qa + 3]);
                    xquat = Quat::from_slice(&data.q[qa + 3..qa + 7]).normalize();
                    data.xanchor[ji] = xpos;
                    data.xaxis[ji] = xquat.rotate(v3(j.axis));
                }
                JointKind::Ball => {
                    let anchor = xpos + xquat.rotate(v3(j.pos));
                    data.xanchor[ji] = anchor;
                    data.xaxis[ji] = xquat.rotate(v3(j.axis));
                    xquat = xquat * Quat::from_slice(&data.q[qa..qa + 4]).normalize();
                    // Rotation about the anchor, not the body origin.
                    xpos = anchor - xquat.rotate(v3(j.pos));
                }
                JointKind::Hinge => {
                    let anchor = xpos + xquat.rotate(v3(j.pos));
                    let axis_w = xquat.rotate(v3(j.axis));
                    data.xanchor[ji] = anchor;
                    data.xaxis[ji] = axis_w;
                    let angle = data.q[qa] - T::c(j.reference);
                    xquat = xquat * Quat::from_axis_angle(v3(j.axis), angle);
                    xpos = anchor - xquat.rotate(v3(j.pos));
                }
                JointKind::Slide => {
                    let axis_w = xquat.rotate(v3(j.axis));
                    data.xanchor[ji] = xpos + xquat.rotate(v3(j.pos));
                    data.xaxis[ji] = axis_w;
                    xpos += axis_w * (data.q[qa] - T::c(j.reference));
                }
            }
        }
        data.xpos[bi] = xpos;
        data.xquat[bi] = xquat;
        data.xmat[bi] = xquat.to_mat3();
        data.xipos[bi] = xpos + xquat.rotate(v3(body.ipos));
    }
    for (gi, g) in model.geoms.iter().enumerate() {
        let (p, q) = (data.xpos[g.body], data.xquat[g.body]);
        data.geom_xpos[gi] = p + q.rotate(v3::<T>(g.pos) * data.geom_offset_scale[gi]);
        data.geom_xmat[gi] = (q * q4(g.quat)).to_mat3();
    }
    for (si, s) in model.sites.iter().enumerate() {
        let (p, q) = (data.xpos[s.body], data.xquat[s.body]);
        data.site_xpos[si] = p + q.rotate(v3(s.pos));
        data.site_xquat[si] = q * q4(s.quat);
    }
    com_quantities(model, data);
}

/// Spatial inertias and motion subspaces about each tree's reference point.
fn com_quantities<T: Real>(model: &Model, data: &mut Data<T>) {
    for bi in 0..model.bodies.len() {
        let body = &model.bodies[bi];
        let r = if body.root == 0 { Vec3::zero() } else { data.xpos[body.root] };
        data.body_ref[bi] = r;
        let m = T::c(body.mass) * data.mass_scale;
        let rot = data.xquat[bi] * q4(body.iquat);
        let rm = rot.to_mat3();
        let d = v3::<T>(body.inertia) * data.mass_scale;
        let ic = rm * crate::math::Mat3::diag(d) * rm.transpose();
        data.cinert[bi] = SpatialInertia::from_com(m, data.xipos[bi] - r, ic);
        // Motion subspaces of this body's dofs.
        let bmat = data.xmat[bi];
        for ji in body.jnt_adr..body.jnt_adr + body.jnt_num {
            let j = &model.joints[ji];
            let da = j.dof_adr;
            let anchor = data.xanchor[ji];
            match j.kind {
                JointKind::Free => {
                    for k in 0..3 {
                        data.cdof[da + k] = Motion::new(Vec3::zero(), Vec3::unit(k));
                        let w = bmat.col(k);
                        data.cdof[da + 3 + k] = Motion::new(w, w.cross(r - anchor));
                    }
                }
                JointKind::Ball => {
                    // Body-frame axes (MuJoCo uses the body's final frame).
                    let frame = bmat;
                    for k in 0..3 {
                        let w = frame.col(k);
                        data.cdof[da + k] = Motion::new(w, w.cross(r - anchor));
                    }
                }
                JointKind::Hinge => {
                    let w = data.xaxis[ji];
                    data.cdof[da] = Motion::new(w, w.cross(r - anchor));
                }
                JointKind::Slide => {
                    data.cdof[da] = Motion::new(Vec3::zero(), data.xaxis[ji]);
                }
            }
        }
    }
}

/// Body spatial velocities (`cvel`) and motion-subspace derivatives
/// (`cdof_dot`) at `data.v`; needs [`kinematics`] first.
pub fn velocities<T: Real>(model: &Model, data: &mut Data<T>) {
    data.cvel[0] = Motion::zero();
    for bi in 1..model.bodies.len() {
        let body = &model.bodies[bi];
        // A tree root's parent is the world (at rest), so the change of
        // reference point between trees never matters.
        let mut cvel = data.cvel[body.parent];
        for ji in body.jnt_adr..body.jnt_adr + body.jnt_num {
            let j = &model.joints[ji];
            let da = j.dof_adr;
            match j.kind {
                JointKind::Free => {
                    // Translational axes are fixed in the world frame.
                    for k in 0..3 {
                        data.cdof_dot[da + k] = Motion::zero();
                        cvel += data.cdof[da + k].scale(data.v[da + k]);
                    }
                    for k in 3..6 {
                        data.cdof_dot[da + k] = cvel.cross_motion(data.cdof[da + k]);
                    }
                    for k in 3..6 {
                        cvel += data.cdof[da + k].scale(data.v[da + k]);
                    }
                }
                JointKind::Ball => {
                    for k in 0..3 {
                        data.cdof_dot[da + k] = cvel.cross_motion(data.cdof[da + k]);
                    }
                    for k in 0..3 {
                        cvel += data.cdof[da + k].scale(data.v[da + k]);
                    }
                }
                JointKind::Hinge | JointKind::Slide => {
                    cvel += data.cdof[da].scale(data.v[da]);
                    data.cdof_dot[da] = cvel.cross_motion(data.cdof[da]);
                }
            }
        }
        data.cvel[bi] = cvel;
    }
}
