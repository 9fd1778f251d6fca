//! Bad MJCF gives a `ModelError` that names the problem and where it is:
//! file, line, element (with its name) and attribute.

use cenic::model::{Model, ModelError};

/// Loads `xml` as if from "bad.xml" and returns the error and its message.
fn fail(xml: &str) -> (ModelError, String) {
    let e = Model::from_mjcf_str_named(xml, "models/bad.xml").expect_err("the model should be rejected");
    let msg = e.to_string();
    (e, msg)
}

/// The error is an MJCF error at `line` on `element`, about `attribute`, and
/// its message contains every string in `words`.
fn assert_at(e: &ModelError, msg: &str, line: u32, element: &str, attribute: Option<&str>, words: &[&str]) {
    match e {
        ModelError::Mjcf { file, line: l, element: el, attribute: a, .. } => {
            assert_eq!(file, "models/bad.xml", "{msg}");
            assert_eq!(*l, line, "{msg}");
            assert_eq!(el, element, "{msg}");
            assert_eq!(a.as_deref(), attribute, "{msg}");
        }
        other => panic!("expected an MJCF error, got {other:?}"),
    }
    assert!(msg.starts_with(&format!("models/bad.xml:{line}:")), "{msg}");
    for w in words {
        assert!(msg.contains(w), "message should contain {w:?}: {msg}");
    }
}

#[test]
fn malformed_xml() {
    let (e, msg) = fail(
        "<mujoco>
  <worldbody>
    <body name=\"a\">
      <geom size=\"0.1\"/>
  </worldbody>
</mujoco>",
    );
    assert!(matches!(e, ModelError::Xml { ref file, .. } if file == "models/bad.xml"), "{e:?}");
    // The close tag </worldbody> on line 5 does not match <body>.
    assert!(msg.contains("malformed XML") && msg.contains("line 5") && msg.contains("body"), "{msg}");
}

#[test]
fn unknown_joint_type() {
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body name="arm">
      <joint name="elbow" type="spherical"/>
      <geom size="0.1"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 4, "joint name=\"elbow\"", Some("type"), &["unknown joint type \"spherical\""]);
}

#[test]
fn negative_mass() {
    // Explicit inertial: found by the builder's validation, mapped back to the <inertial> line.
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body name="heavy">
      <joint/>
      <inertial pos="0 0 0" mass="-2" diaginertia="1 1 1"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 5, "inertial", None, &["mass must be finite and ≥ 0", "-2"]);
    // Geom mass: rejected where it is written.
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body>
      <joint/>
      <geom name="g" size="0.1"
            mass="-1"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 6, "geom name=\"g\"", Some("mass"), &["≥ 0", "-1"]);
}

#[test]
fn inertia_not_positive_definite() {
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body name="b">
      <joint/>
      <inertial pos="0 0 0" mass="1" diaginertia="1 1 3"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 5, "inertial", None, &["triangle inequality"]);
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body name="b">
      <joint/>
      <inertial pos="0 0 0" mass="1" fullinertia="1 1 1 2 0 0"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 5, "inertial", Some("fullinertia"), &["not positive definite"]);
}

#[test]
fn mesh_with_too_few_vertices() {
    let (e, msg) = fail(
        r#"<mujoco>
  <asset>
    <mesh name="tri" vertex="0 0 0  1 0 0  0 1 0"/>
  </asset>
  <worldbody>
    <body>
      <joint/>
      <geom type="mesh" mesh="tri"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 3, "mesh name=\"tri\"", None, &["at least 4 vertices", "got 3"]);
}

#[test]
fn unknown_element() {
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body name="b">
      <joint/>
      <geom size="0.1"/>
      <wheel radius="2"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 6, "wheel", None, &["unknown element <wheel> in <body>"]);
}

#[test]
fn unknown_attribute() {
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body name="b">
      <joint/>
      <geom name="ball" size="0.1" colour="red"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 5, "geom name=\"ball\"", Some("colour"), &["unsupported attribute 'colour'", "friction"]);
}

#[test]
fn bad_number() {
    let (e, msg) = fail(
        r#"<mujoco>
  <worldbody>
    <body name="b">
      <joint/>
      <geom name="ball" size="0.1x"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    assert_at(&e, &msg, 5, "geom name=\"ball\"", Some("size"), &["\"0.1x\" is not a number"]);
    // Wrong count.
    let (e, msg) = fail("<mujoco>\n<worldbody>\n<body pos=\"1 2\"/>\n</worldbody>\n</mujoco>");
    assert_at(&e, &msg, 3, "body", Some("pos"), &["expected 3 numbers, got 2"]);
}

#[test]
fn more_bad_values_name_their_place() {
    // Negative size.
    let (e, msg) = fail(
        "<mujoco><worldbody>\n<body><joint/><geom type=\"capsule\" size=\"0.1 -1\"/></body>\n</worldbody></mujoco>",
    );
    assert_at(&e, &msg, 2, "geom", Some("size"), &["size[1] must be positive"]);
    // Unknown geom type.
    let (e, msg) = fail("<mujoco><worldbody>\n\n<geom type=\"torus\" size=\"1\"/>\n</worldbody></mujoco>");
    assert_at(&e, &msg, 3, "geom", Some("type"), &["unknown geom type \"torus\""]);
    // Unknown default class.
    let (e, msg) =
        fail("<mujoco><worldbody>\n<body><joint class=\"leg\"/><geom size=\"1\"/></body>\n</worldbody></mujoco>");
    assert_at(&e, &msg, 2, "joint", Some("class"), &["unknown default class \"leg\""]);
    // Actuator on a joint that does not exist.
    let (e, msg) = fail(
        "<mujoco><worldbody><body><joint name=\"a\"/><geom size=\"1\"/></body></worldbody>\n<actuator>\n<motor name=\"m\" joint=\"b\"/>\n</actuator></mujoco>",
    );
    assert_at(&e, &msg, 3, "motor name=\"m\"", Some("joint"), &["unknown joint \"b\""]);
    // A joint that moves nothing: the builder's singular mass matrix, mapped to the joint.
    let (e, msg) = fail("<mujoco><worldbody><body>\n<joint name=\"idle\"/>\n</body></worldbody></mujoco>");
    assert_at(&e, &msg, 2, "joint name=\"idle\"", None, &["mass matrix is singular"]);
    // Keyframe of the wrong length: builder validation mapped to the <key> line.
    let (e, msg) = fail(
        "<mujoco><worldbody><body><joint/><geom size=\"1\"/></body></worldbody>\n<keyframe>\n<key name=\"k\" qpos=\"1 2\"/>\n</keyframe></mujoco>",
    );
    assert_at(&e, &msg, 3, "key name=\"k\"", None, &["qpos has 2 values", "nq = 1"]);
    // Errors inside default classes point at the default.
    let (e, msg) = fail(
        "<mujoco>\n<default>\n<default class=\"x\">\n<geom friction=\"a\"/>\n</default>\n</default>\n<worldbody><geom class=\"x\" size=\"1\"/></worldbody></mujoco>",
    );
    assert_at(&e, &msg, 4, "geom (default class \"x\")", Some("friction"), &["\"a\" is not a number"]);
    // Unsupported features say so.
    let (e, msg) = fail("<mujoco><compiler coordinate=\"global\"/><worldbody/></mujoco>");
    assert_at(&e, &msg, 1, "compiler", Some("coordinate"), &["not supported"]);
    let (e, msg) = fail("<mujoco><worldbody/><equality>\n<weld body1=\"a\"/></equality></mujoco>");
    assert_at(&e, &msg, 2, "weld", Some("body1"), &["unknown body \"a\""]);
    let (e, msg) = fail(
        "<mujoco><worldbody/><tendon>\n<spatial>\n<site site=\"a\"/><geom geom=\"cyl\"/></spatial></tendon></mujoco>",
    );
    assert_at(&e, &msg, 3, "site", Some("site"), &["unknown site \"a\""]);
    let (e, msg) = fail(
        "<mujoco><worldbody><body><geom name=\"cyl\" type=\"cylinder\" size=\"0.1 0.1\"/><joint/><site name=\"a\"/><site name=\"b\"/></body></worldbody><tendon>\n<spatial>\n<site site=\"a\"/><geom geom=\"cyl\"/><site site=\"b\"/></spatial></tendon></mujoco>",
    );
    assert_at(&e, &msg, 3, "geom", None, &["wrapping around geom \"cyl\" is not supported", "add sites"]);
    let (e, msg) = fail(
        "<mujoco><worldbody/><asset>\n<hfield name=\"h\" nrow=\"2\" ncol=\"2\" size=\"1 1 1 1\" elevation=\"1 2 3\"/></asset></mujoco>",
    );
    assert_at(&e, &msg, 2, "hfield name=\"h\"", Some("elevation"), &["3 numbers", "nrow·ncol = 4"]);
}

/// Height fields, frames and replicates: what cenic (like MuJoCo) refuses,
/// named where it is written, with what is supported instead.
#[test]
fn height_field_frame_and_replicate_refusals_name_their_place() {
    let field = "<asset><hfield name=\"h\" nrow=\"2\" ncol=\"2\" size=\"1 1 0.1 0.1\"/></asset>";
    // A height field on a moving body.
    let (e, msg) = fail(&format!(
        "<mujoco>{field}<worldbody><body><freejoint/>\n<geom name=\"t\" type=\"hfield\" hfield=\"h\"/></body></worldbody></mujoco>"
    ));
    assert_at(&e, &msg, 2, "geom name=\"t\"", None, &["static body"]);
    // A height-field geom without its field, and an unknown field.
    let (e, msg) = fail(&format!("<mujoco>{field}<worldbody>\n<geom type=\"hfield\"/></worldbody></mujoco>"));
    assert_at(&e, &msg, 2, "geom", None, &["needs an 'hfield' attribute"]);
    let (e, msg) =
        fail(&format!("<mujoco>{field}<worldbody>\n<geom type=\"hfield\" hfield=\"x\"/></worldbody></mujoco>"));
    assert_at(&e, &msg, 2, "geom", Some("hfield"), &["unknown height field \"x\""]);
    let (e, msg) = fail(&format!("<mujoco>{field}<worldbody>\n<geom size=\"1\" hfield=\"h\"/></worldbody></mujoco>"));
    assert_at(&e, &msg, 2, "geom", Some("hfield"), &["needs type=\"hfield\""]);
    // Sizes MuJoCo refuses, and a field too large to allocate.
    let (e, msg) =
        fail("<mujoco><asset>\n<hfield name=\"h\" nrow=\"2\" ncol=\"2\" size=\"1 1 0 1\"/></asset></mujoco>");
    assert_at(&e, &msg, 2, "hfield name=\"h\"", Some("size"), &["size[2] must be positive"]);
    let (e, msg) =
        fail("<mujoco><asset>\n<hfield name=\"h\" nrow=\"100000\" ncol=\"100000\" size=\"1 1 1 1\"/></asset></mujoco>");
    assert_at(&e, &msg, 2, "hfield name=\"h\"", None, &["exceed cenic's limit"]);
    let (e, msg) = fail("<mujoco><asset>\n<hfield name=\"h\" file=\"nope.png\" size=\"1 1 1 1\"/></asset></mujoco>");
    assert_at(&e, &msg, 2, "hfield name=\"h\"", Some("file"), &["cannot read height-field file", "nope.png"]);
    // <inertial> inside a frame.
    let (e, msg) = fail(
        "<mujoco><worldbody><body><joint/><geom size=\"1\"/><frame>\n<inertial pos=\"0 0 0\" mass=\"1\"/></frame></body></worldbody></mujoco>",
    );
    assert_at(&e, &msg, 2, "inertial", None, &["cannot be inside <frame>"]);
    let (e, msg) = fail("<mujoco><worldbody>\n<frame size=\"1\"><geom size=\"1\"/></frame></worldbody></mujoco>");
    assert_at(&e, &msg, 2, "frame", Some("size"), &["unsupported attribute 'size'"]);
    // Replicate counts, children, sizes.
    let (e, msg) =
        fail("<mujoco><worldbody>\n<replicate count=\"0\"><geom size=\"1\"/></replicate></worldbody></mujoco>");
    assert_at(&e, &msg, 2, "replicate", Some("count"), &["positive integer"]);
    let (e, msg) = fail("<mujoco><worldbody>\n<replicate><geom size=\"1\"/></replicate></worldbody></mujoco>");
    assert_at(&e, &msg, 2, "replicate", None, &["missing required attribute 'count'"]);
    let (e, msg) = fail(
        "<mujoco><worldbody>\n<replicate count=\"2\"><geom size=\"1\"/>\n<inertial pos=\"0 0 0\" mass=\"1\"/></replicate></worldbody></mujoco>",
    );
    assert_at(&e, &msg, 3, "inertial", None, &["cannot be replicated"]);
    let (e, msg) = fail(
        "<mujoco><worldbody>\n<replicate count=\"100000\"><replicate count=\"100000\"><geom size=\"1\"/></replicate></replicate></worldbody></mujoco>",
    );
    assert_at(&e, &msg, 2, "replicate", None, &["MiB of MJCF", "limit"]);
    // A geom inside a replica keeps its line, and its name says which replica.
    let (e, msg) = fail(
        "<mujoco><worldbody>\n<replicate count=\"3\" sep=\"#\">\n<geom name=\"g\" size=\"-1\"/></replicate></worldbody></mujoco>",
    );
    assert_at(&e, &msg, 3, "geom name=\"g#0\"", Some("size"), &["must be positive"]);
    // An equality constraint between a replicated body and one outside the replicate.
    let (e, msg) = fail(
        "<mujoco><worldbody><body name=\"base\"><joint/><geom size=\"1\"/></body><replicate count=\"2\"><body name=\"b\"><joint/><geom size=\"1\"/></body></replicate></worldbody>\n<equality>\n<connect body1=\"b\" body2=\"base\" anchor=\"0 0 0\"/></equality></mujoco>",
    );
    assert_at(&e, &msg, 3, "connect", None, &["inside and outside the <replicate>"]);
}

#[test]
fn missing_file_is_an_io_error() {
    let e = Model::from_mjcf_file("/nonexistent/robot.xml").unwrap_err();
    assert!(matches!(e, ModelError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("/nonexistent/robot.xml"), "{e}");
}
