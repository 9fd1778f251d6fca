"""cenic.Model: loading, sizes, summary, and errors for bad files."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cenic


def test_ant_sizes_and_summary(gym_models):
    m = cenic.Model.from_mjcf(gym_models / "ant.xml")
    # ant.xml: a free torso (7 + 6) and 8 hinge joints, 8 motors.
    assert (m.nq, m.nv, m.nu, m.na) == (15, 14, 8, 0)
    sizes = m.sizes()
    assert sizes["nq"] == 15 and sizes["nv"] == 14 and sizes["nu"] == 8
    assert sizes["nbody"] == m.nbody == len(m.body_names) == 14
    assert m.body_names[1] == "torso"
    assert m.timestep == pytest.approx(0.01)
    text = m.summary()
    assert "nq = 15, nv = 14, nu = 8" in text
    mass = float(re.search(r"total mass = ([0-9.]+) kg", text).group(1))
    assert mass == pytest.approx(m.total_mass, rel=1e-5)
    assert m.qpos0.shape == (15,) and m.qpos0.dtype == np.float64
    r = m.ctrl_range
    assert r.shape == (8, 2) and np.all(r[:, 0] == -1.0) and np.all(r[:, 1] == 1.0)
    assert len(m.actuator_names) == 8 and len(m.joint_names) == 9


def test_summary_matches_cli(cenic_bin, gym_models):
    import subprocess

    path = gym_models / "half_cheetah.xml"
    out = subprocess.run([str(cenic_bin), "info", str(path)], capture_output=True, text=True, check=True)
    assert out.stdout == cenic.Model.from_mjcf(path).summary()


def test_builtin_and_from_xml():
    cube = cenic.Model.builtin("cube_toss")
    assert (cube.nq, cube.nv, cube.nu) == (7, 6, 0)
    assert "toss" in cube.keyframe_names
    xml = '<mujoco><worldbody><body><joint type="slide" axis="0 0 1"/><geom type="sphere" size="0.1" mass="2"/></body></worldbody></mujoco>'
    m = cenic.Model.from_xml(xml)
    assert (m.nq, m.nv) == (1, 1) and m.total_mass == pytest.approx(2.0)
    with pytest.raises(ValueError, match="unknown scene"):
        cenic.Model.builtin("nope")


def test_missing_file_is_a_model_error(tmp_path):
    path = tmp_path / "does_not_exist.xml"
    with pytest.raises(cenic.ModelError, match="does_not_exist.xml"):
        cenic.Model.from_mjcf(path)


def test_malformed_mjcf_names_the_line(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text('<mujoco>\n  <worldbody>\n    <geom type="sphere" size="abc"/>\n  </worldbody>\n</mujoco>\n')
    with pytest.raises(cenic.ModelError) as e:
        cenic.Model.from_mjcf(path)
    msg = str(e.value)
    assert "bad.xml" in msg and "3" in msg and "size" in msg
    assert isinstance(e.value, cenic.CenicError)


def test_unsupported_feature_is_explained():
    xml = '<mujoco><worldbody><body><freejoint/><geom type="sphere" size="0.1"/></body></worldbody><actuator><muscle joint="x"/></actuator></mujoco>'
    with pytest.raises(cenic.ModelError):
        cenic.Model.from_xml(xml)
