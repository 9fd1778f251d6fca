"""The README's Python examples run, and the type stubs describe the module."""

from __future__ import annotations

import ast
import os
import pathlib
import re

import pytest

import cenic
from cenic import _cenic

REPO = pathlib.Path(__file__).resolve().parents[2]


def python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Python") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_example_runs(shared, monkeypatch, capsys):
    monkeypatch.chdir(REPO)  # the example names ../shared relative to the repository
    monkeypatch.setenv("CENIC_SHARED", str(shared))
    exec(compile(python_blocks()[0], "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "(64, 7)" in out


def test_readme_mpc_example_runs(shared, monkeypatch, capsys):
    monkeypatch.setenv("CENIC_SHARED", str(shared))
    scope: dict = {}
    exec(compile(python_blocks()[2], "README.md", "exec"), scope)
    out = capsys.readouterr().out
    assert out.startswith("True "), out  # the reacher reaches its target
    assert "(51, 8)" in out
    assert scope["stats"]["iterations"] <= 5 and scope["u_now"].shape == (2,)


def test_readme_torch_wrapper():
    code = python_blocks()[1]
    compile(code, "README.md", "exec")  # at least valid Python
    torch = pytest.importorskip("torch")
    scope: dict = {}
    exec(code, scope)
    model = cenic.Model.builtin("cube_toss")
    x0 = torch.tensor([0, 0, 0.3, 1, 0, 0, 0, 1, 0, 0, 0, 5, 3.0], dtype=torch.float64, requires_grad=True)
    u = torch.zeros(5, 6, dtype=torch.float64, requires_grad=True)
    theta = torch.ones(1, dtype=torch.float64, requires_grad=True)
    kw = dict(interval=0.01, dt=1e-3, control="applied", param_names=["friction"])
    traj = scope["CenicRollout"].apply(x0, u, theta, model, kw)
    traj[-1, 2].backward()
    r = cenic.rollout_jacobians(model, x0.detach().numpy(), u.detach().numpy(), theta.detach().numpy(), **kw)
    g = torch.zeros_like(traj).numpy()
    g[-1, 2] = 1.0
    gx, _, _ = r.vjp(g)
    assert torch.allclose(x0.grad, torch.from_numpy(gx))


def test_stubs_match_the_module():
    stub = ast.parse((REPO / "python" / "cenic" / "_cenic.pyi").read_text())
    names = set()
    for node in stub.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            cls = getattr(_cenic, node.name)
            members = [n.name for n in node.body if isinstance(n, ast.FunctionDef)]
            for m in members:
                assert hasattr(cls, m), f"{node.name}.{m} is in the stub but not in the module"
            inherited = set(dir(Exception)) if issubclass(cls, Exception) else set()
            public = {m for m in dir(cls) if not m.startswith("_")} - inherited
            missing = public - set(members)
            assert not missing, f"{node.name}: {sorted(missing)} missing from the stub"
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
            assert hasattr(_cenic, node.name), node.name
    public = {n for n in dir(_cenic) if not n.startswith("_")}
    assert public <= names | {"ArrayLike"}, sorted(public - names)
    assert cenic.Batch.__doc__ and cenic.rollout_jacobians.__doc__ and cenic.Batch.advance.__doc__
    assert os.path.isfile(REPO / "python" / "cenic" / "py.typed")
