//! Loader unit tests. Expected numbers marked "MuJoCo" were computed once
//! with MuJoCo 4.0.0 (Python: compile the same XML, print `m.body_mass`,
//! `m.body_quat`, `m.geom_size`, …) and hard-coded here, digits as printed.
#![allow(clippy::approx_constant)]

use crate::model::{ActuatorKind, GeomKind, JointKind, Model};

fn load(xml: &str) -> Model {
    Model::from_mjcf_str(xml).unwrap_or_else(|e| panic!("{e}"))
}

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol * b.abs().max(1.0), "{a} vs {b}");
}

fn close_quat(a: [f64; 4], b: [f64; 4]) {
    let d1 = (0..4).map(|i| (a[i] - b[i]).abs()).fold(0.0, f64::max);
    let d2 = (0..4).map(|i| (a[i] + b[i]).abs()).fold(0.0, f64::max);
    assert!(d1.min(d2) < 1e-12, "{a:?} vs {b:?}");
}

#[test]
fn default_class_inheritance() {
    // Nested classes inherit; childclass applies to the body's own elements
    // and its descendants; class="main" selects the top-level defaults.
    let m = load(
        r#"<mujoco>
          <default>
            <geom size="0.2" density="10"/>
            <default class="a">
              <geom size="0.3"/>
              <default class="b"><geom density="20"/></default>
            </default>
          </default>
          <worldbody>
            <body childclass="a"><joint/><geom/><geom class="b"/>
              <body><joint/><geom class="main"/></body>
            </body>
            <body><joint/><geom/></body>
          </worldbody>
        </mujoco>"#,
    );
    let sizes: Vec<f64> = m.geoms.iter().map(|g| g.size[0]).collect();
    assert_eq!(sizes, [0.3, 0.3, 0.2, 0.2]);
    // MuJoCo: body_mass.
    for (b, want) in m.bodies.iter().zip([0.0, 3.392920065876977, 0.3351032163829113, 0.3351032163829113]) {
        close(b.mass, want, 1e-12);
    }
}

#[test]
fn actuator_defaults_are_shared_between_motor_and_position() {
    // As in MuJoCo, a <motor> default sets ctrlrange for <position> too.
    let m = load(
        r#"<mujoco>
          <default><motor ctrlrange="-2 2"/><position kp="30"/></default>
          <worldbody><body><joint name="j" range="-1 1"/><geom size="0.1"/></body></worldbody>
          <actuator>
            <position joint="j" kv="2" forcerange="-5 5"/>
            <motor joint="j" gear="7"/>
            <position joint="j" inheritrange="0.5"/>
          </actuator>
        </mujoco>"#,
    );
    assert_eq!(m.actuators[0].ctrl_range, Some([-2.0, 2.0]));
    assert_eq!(m.actuators[0].kind, ActuatorKind::Position { kp: 30.0, kd: 2.0, effort_limit: 5.0 });
    assert_eq!(m.actuators[1].kind, ActuatorKind::Motor { gear: 7.0, force_range: None });
    assert_eq!(m.actuators[1].ctrl_range, Some([-2.0, 2.0]));
    // inheritrange: half the joint range (degrees → radians) about its centre.
    let r = m.actuators[2].ctrl_range.unwrap();
    close(r[0], -0.5f64.to_radians(), 1e-15);
    close(r[1], 0.5f64.to_radians(), 1e-15);
    assert_eq!(m.actuators[2].kind, ActuatorKind::Position { kp: 30.0, kd: 0.0, effort_limit: f64::INFINITY });
}

#[test]
fn degrees_and_radians() {
    // Default angle="degree": hinge range, ref and springref convert; slide values do not.
    let m = load(
        r#"<mujoco><worldbody>
          <body><joint range="-10 30" ref="5" springref="7"/><geom size="0.1"/></body>
          <body><joint type="slide" range="-10 30" ref="5"/><geom size="0.1"/></body>
        </worldbody></mujoco>"#,
    );
    // MuJoCo: jnt_range, qpos0, qpos_spring.
    let r = m.joints[0].range.unwrap();
    close(r[0], -0.17453292519943295, 1e-15);
    close(r[1], 0.5235987755982988, 1e-15);
    close(m.qpos0[0], 0.08726646259971647, 1e-15);
    close(m.joints[0].springref, 0.12217304763960307, 1e-15);
    assert_eq!(m.joints[1].range, Some([-10.0, 30.0]));
    assert_eq!(m.qpos0[1], 5.0);

    let m = load(
        r#"<mujoco><compiler angle="radian"/><worldbody>
          <body><joint range="-1 2" ref="0.5"/><geom size="0.1"/></body>
        </worldbody></mujoco>"#,
    );
    assert_eq!(m.joints[0].range, Some([-1.0, 2.0]));
    assert_eq!(m.qpos0, vec![0.5]);
}

#[test]
fn orientations_in_context() {
    // angle="radian" with eulerseq="ZXY" (extrinsic) and axisangle; MuJoCo: body_quat.
    let m = load(
        r#"<mujoco><compiler angle="radian" eulerseq="ZXY"/><worldbody>
          <body euler="0.3 -0.5 1.2"><joint/><geom size="0.1"/>
            <body axisangle="1 1 0 2.0" pos="0 0 1"><joint/><geom size="0.1"/></body>
          </body>
        </worldbody></mujoco>"#,
    );
    close_quat(m.bodies[1].quat, [0.7698226806613264, -0.12014247631977643, 0.5714598517275828, 0.25762853798958335]);
    close_quat(m.bodies[2].quat, [0.5403023058681398, 0.5950098395293859, 0.5950098395293859, 0.0]);
    // Two alternatives on one element are an error (as in MuJoCo).
    let e = Model::from_mjcf_str(r#"<mujoco><worldbody><body quat="1 0 0 0" euler="1 2 3"/></worldbody></mujoco>"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("multiple orientation") && e.contains("'euler'"), "{e}");
}

#[test]
fn fromto_for_box_ellipsoid_cylinder() {
    let m = load(
        r#"<mujoco><worldbody><body><joint/>
          <geom type="box" fromto="0 0 0 1 1 0" size="0.1 0.2"/>
          <geom type="ellipsoid" fromto="0 0 0 0 1 0" size="0.1 0.2"/>
          <geom type="cylinder" fromto="0 0 0 0 0.2 0.6" size="0.05"/>
        </body></worldbody></mujoco>"#,
    );
    // MuJoCo: geom_size, geom_pos, geom_quat, body_mass, body_inertia, body_ipos.
    let sizes = [[0.1, 0.1, 0.7071067811865476], [0.1, 0.1, 0.5], [0.05, 0.31622776601683794, 0.0]];
    let pos = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.0], [0.0, 0.1, 0.3]];
    let quat = [
        [0.7071067811865476, 0.4999999999999999, -0.4999999999999999, 0.0],
        [0.7071067811865476, 0.7071067811865475, 0.0, 0.0],
        [0.16018224300696726, 0.9870874576374967, 0.0, 0.0],
    ];
    for (i, g) in m.geoms.iter().enumerate() {
        for k in 0..3 {
            close(g.size[k], sizes[i][k], 1e-15);
            close(g.pos[k], pos[i][k], 1e-15);
        }
        close_quat(g.quat, quat[i]);
    }
    let b = &m.bodies[1];
    close(b.mass, 82.47978765175382, 1e-12);
    let mut inertia = b.inertia;
    inertia.sort_by(|a, b| b.partial_cmp(a).unwrap());
    for (x, y) in inertia.iter().zip([15.96310616624151, 14.221441889133184, 3.2510480672538176]) {
        close(*x, y, 1e-12);
    }
    for (x, y) in b.ipos.iter().zip([0.3429236671520514, 0.4759102477136777, 0.018067314214741777]) {
        close(*x, y, 1e-12);
    }
}

#[test]
fn mesh_scale_refpos_refquat() {
    let m = load(
        r#"<mujoco>
          <asset><mesh name="t" vertex="0 0 0 1 0 0 0 1 0 0 0 1" scale="2 3 4" refpos="0.1 0 0"
                       refquat="0.7071067811865476 0 0 0.7071067811865476"/></asset>
          <worldbody><body><joint/><geom type="mesh" mesh="t" density="2"/></body></worldbody>
        </mujoco>"#,
    );
    assert_eq!(m.geoms[0].kind, GeomKind::Mesh);
    let b = &m.bodies[1];
    // MuJoCo: body_mass, body_ipos, body_inertia.
    close(b.mass, 8.000000000000007, 1e-12);
    for (x, y) in b.ipos.iter().zip([0.5, -0.45000000000000007, 1.0]) {
        close(*x, y, 1e-12);
    }
    let mut inertia = b.inertia;
    inertia.sort_by(|a, b| b.partial_cmp(a).unwrap());
    for (x, y) in inertia.iter().zip([8.057438783826285, 6.045317581009225, 3.2972436351644867]) {
        close(*x, y, 1e-12);
    }
}

#[test]
fn limits_follow_autolimits() {
    let m = load(
        r#"<mujoco><worldbody><body>
          <joint range="-1 1"/><joint axis="1 0 0" limited="false" range="-1 1"/><joint axis="0 1 0"/>
          <geom size="0.1"/>
        </body></worldbody></mujoco>"#,
    );
    assert!(m.joints[0].range.is_some() && m.joints[1].range.is_none() && m.joints[2].range.is_none());
    let e = Model::from_mjcf_str(
        r#"<mujoco><compiler autolimits="false"/><worldbody><body><joint range="0 1"/><geom size="0.1"/></body></worldbody></mujoco>"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("autolimits") && e.contains("attribute 'range'"), "{e}");
    let e = Model::from_mjcf_str(
        r#"<mujoco><worldbody><body><joint limited="true"/><geom size="0.1"/></body></worldbody></mujoco>"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("needs 'range'"), "{e}");
}

#[test]
fn keyframe_defaults_and_free_joint_reference() {
    let m = load(
        r#"<mujoco><worldbody>
          <body pos="1 2 3" quat="0 0 0 2"><freejoint/><geom size="0.1"/></body>
          <body><joint name="h" ref="10"/><geom size="0.1"/></body>
        </worldbody>
        <actuator><motor joint="h"/></actuator>
        <keyframe><key name="a" qvel="1 2 3 4 5 6 7"/><key time="2" ctrl="0.5"/></keyframe>
        </mujoco>"#,
    );
    assert_eq!(m.joints[0].kind, JointKind::Free);
    let q0 = [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 10f64.to_radians()];
    assert_eq!(m.qpos0, q0);
    let a = m.keyframe("a").unwrap();
    assert_eq!((a.qpos.as_slice(), a.ctrl.as_slice()), (&q0[..], &[0.0][..]));
    assert_eq!(a.qvel, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let b = m.keyframe("1").unwrap();
    assert_eq!((b.time, b.qvel.as_slice(), b.ctrl.as_slice()), (2.0, &[0.0; 7][..], &[0.5][..]));
}

#[test]
fn condim_one_is_frictionless_only_among_condim_one_geoms() {
    let text = r#"<mujoco><option semantics="SEM"/><worldbody>
          <geom name="floor" type="plane" size="1 1 1" condim="1" friction="0.7"/>
          <body><freejoint/><geom name="a" size="0.1" condim="1" friction="0.8"/></body>
          <body pos="1 0 0"><freejoint/><geom name="b" size="0.1" friction="0.6" contype="2" conaffinity="2"/>
            <geom name="c" size="0.1" pos="0 0 0.3" condim="1" contype="2" conaffinity="2"/></body>
          <body pos="2 0 0"><freejoint/><geom name="d" size="0.1" condim="1" friction="0.9" contype="2" conaffinity="2"/></body>
        </worldbody></mujoco>"#;
    // cenic's physical law: friction per geom, so condim 1 means frictionless
    // only for a geom that can meet condim-1 geoms alone.
    let m = load(&text.replace("SEM", "physical"));
    let mu = |n: &str| m.geoms[m.geom_id(n).unwrap()].material.mu_static;
    // floor and a can only meet each other; c shares b's body and can meet only d.
    assert_eq!((mu("floor"), mu("a"), mu("c")), (0.0, 0.0, 0.0));
    assert_eq!(mu("b"), 0.6);
    // d can touch b (condim 3): MuJoCo uses condim 3 for that pair, so d keeps its friction.
    assert_eq!(mu("d"), 0.9);
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(m.warnings[0].contains("'d'") && m.warnings[0].contains("('b')"), "{}", m.warnings[0]);
    // MuJoCo's semantics combine per pair: the larger condim and friction.
    let m = load(&text.replace("SEM", "mujoco"));
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let soft = |n: &str| m.geoms[m.geom_id(n).unwrap()].material.soft.unwrap();
    let pair = |a: &str, b: &str| crate::model::SoftMaterial::combine(&soft(a), &soft(b));
    assert_eq!((pair("floor", "a").condim, pair("floor", "a").friction[0]), (1, 0.8));
    assert_eq!((pair("b", "d").condim, pair("b", "d").friction[0]), (3, 0.9));
}

#[test]
fn static_geoms_are_rigid_and_explicit_values_win() {
    let m = load(
        r#"<mujoco><option timestep="0.001" gravity="0 0 -9.81"/><worldbody>
          <geom name="floor" type="plane" size="1 1 1"/>
          <body><freejoint/><geom name="ball" size="0.1" mass="2" solref="0.05 0.5" solimp="0.8 0.9 0.01"/>
            <geom name="stiff" size="0.05" mass="1" stiffness="3000" friction_dynamic="0.5"/></body>
        </worldbody></mujoco>"#,
    );
    let g = |n: &str| m.geoms[m.geom_id(n).unwrap()].material;
    assert_eq!(g("floor").stiffness, f64::INFINITY);
    // m_ref = 3 kg (the whole tree).
    let k = 3.0 / (0.2 * 0.025 * 0.025);
    close(g("ball").stiffness, k, 1e-12);
    close(g("ball").dissipation, 2.0 * 0.5 * (k / 3.0f64).sqrt() / 9.81, 1e-12);
    // Explicit stiffness with the default solref's damping ratio 1.
    assert_eq!(g("stiff").stiffness, 3000.0);
    close(g("stiff").dissipation, 2.0 * (3000.0f64 / 3.0).sqrt() / 9.81, 1e-12);
    assert_eq!((g("stiff").mu_static, g("stiff").mu_dynamic), (1.0, 0.5));
}

#[test]
fn mesh_files_relative_to_meshdir() {
    // A unit cube as OBJ and as binary STL (two triangles per face) in <dir>/meshes.
    let dir = std::env::temp_dir().join(format!("cenic_mjcf_mesh_{}", std::process::id()));
    std::fs::create_dir_all(dir.join("meshes")).unwrap();
    let corners: Vec<[f32; 3]> =
        (0..8).map(|i| [(i & 1) as f32, ((i >> 1) & 1) as f32, ((i >> 2) & 1) as f32]).collect();
    let obj: String = corners.iter().map(|c| format!("v {} {} {}\n", c[0], c[1], c[2])).collect();
    std::fs::write(dir.join("meshes/cube.obj"), obj).unwrap();
    let mut stl = vec![0u8; 80];
    stl.extend_from_slice(&4u32.to_le_bytes());
    for t in [[0, 1, 2], [1, 3, 2], [4, 5, 6], [5, 7, 6]] {
        stl.extend_from_slice(&[0u8; 12]);
        for v in t {
            for c in corners[v] {
                stl.extend_from_slice(&c.to_le_bytes());
            }
        }
        stl.extend_from_slice(&[0u8; 2]);
    }
    std::fs::write(dir.join("meshes/cube.stl"), stl).unwrap();
    let xml = r#"<mujoco><compiler meshdir="meshes"/>
      <asset><mesh file="cube.obj"/><mesh name="c2" file="cube.stl" scale="2 2 2"/></asset>
      <worldbody><body><freejoint/><geom type="mesh" mesh="cube" density="100"/><geom type="mesh" mesh="c2" density="1"/></body></worldbody>
    </mujoco>"#;
    let m = Model::from_mjcf_str_named(xml, dir.join("robot.xml").to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.meshes.len(), 2);
    assert_eq!(m.meshes[0].name, "cube");
    close(m.bodies[1].mass, 100.0 + 8.0, 1e-12);
    // A missing file names the file and the attribute.
    let e = Model::from_mjcf_str_named(&xml.replace("cube.obj", "nope.obj"), dir.join("robot.xml").to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope.obj") && e.contains("attribute 'file'"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unmodelled_settings_warn() {
    let text = r#"<mujoco>
          <option integrator="implicitfast" cone="elliptic" density="1.2" SEM><flag gravity="disable" warmstart="disable"/></option>
          <worldbody><body>
            <joint name="j" frictionloss="0.1"/>
            <geom name="g" size="0.1" priority="1" gap="0.01" condim="6"/>
            <body pos="0.3 0 0"><joint name="b" type="ball" stiffness="2"/><geom size="0.1"/></body>
          </body></worldbody>
          <sensor><jointpos joint="j"/></sensor>
        </mujoco>"#;
    for (semantics, extra) in [
        ("", &["cone=\"elliptic\": cenic's MuJoCo semantics use the pyramidal cone"][..]),
        (r#"semantics="physical""#, &["priority and gap act only under MuJoCo's semantics", "'g'"][..]),
    ] {
        let m = load(&text.replace("SEM", semantics));
        assert_eq!(m.options.gravity, [0.0; 3]);
        // Simulated now, no warning: fluid density, joint friction loss, sensors.
        assert_eq!((m.options.density, m.joints[0].frictionloss, m.nsensordata), (1.2, 0.1, 1));
        let all = m.warnings.join("\n");
        assert_eq!(m.options.integrator, crate::model::Integrator::ImplicitFast);
        for w in [
            "integrator=\"implicitfast\": MuJoCo's step in cenic",
            "joint 'b': stiffness on a ball joint",
            "'g' (condim 6)",
        ]
        .iter()
        .chain(extra)
        {
            assert!(all.contains(w), "{semantics}: missing warning {w:?} in:\n{all}");
        }
    }
}

#[test]
fn unsupported_settings_are_rejected() {
    let body = r#"<worldbody><body><joint name="j" range="-1 1"/><geom size="0.1"/></body></worldbody>"#;
    for (extra, words) in [
        (r#"<actuator><muscle joint="j"/></actuator>"#, "<muscle> actuators are not supported"),
        (r#"<actuator><general joint="j" gaintype="muscle"/></actuator>"#, "gaintype \"muscle\" is not supported"),
        (r#"<actuator><general joint="j" dyntype="user"/></actuator>"#, "dyntype \"user\" is not supported"),
        (r#"<actuator><motor tendon="t"/></actuator>"#, "unknown tendon \"t\""),
        (r#"<option><flag override="enable"/></option>"#, "flag override=\"enable\" is not supported"),
        (r#"<compiler boundmass="0.01"/>"#, "boundmass is not supported"),
        (r#"<contact><exclude body1="a" body2="b"/></contact>"#, "unknown body \"a\""),
        (r#"<default><muscle/></default>"#, "<muscle> defaults are not supported"),
        (r#"<keyframe><key mpos="1 2 3"/></keyframe>"#, "keyframe 'mpos' is not supported"),
        (r#"<equality><flex flex="f"/></equality>"#, "<flex> equality constraints are not supported"),
        (r#"<sensor><contact/></sensor>"#, "<contact> sensors are not supported"),
    ] {
        let xml = format!("<mujoco>{extra}{body}</mujoco>");
        let e = Model::from_mjcf_str(&xml).expect_err(extra).to_string();
        assert!(e.contains(words), "{extra}: {e}");
    }
    let e = Model::from_mjcf_str(
        r#"<mujoco><worldbody><body><joint type="ball" range="0 30"/><geom size="1"/></body></worldbody></mujoco>"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("limits on ball joints are not supported"), "{e}");
    let e = Model::from_mjcf_str(
        r#"<mujoco><worldbody><body><geom type="sphere" fromto="0 0 0 0 0 1" size="1"/></body></worldbody></mujoco>"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("fromto needs a capsule"), "{e}");
}
