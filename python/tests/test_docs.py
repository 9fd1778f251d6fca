"""The type stubs describe the module (the README's and the guide's
examples run in test_guide.py)."""

from __future__ import annotations

import ast
import os
import pathlib

import cenic
from cenic import _cenic

REPO = pathlib.Path(__file__).resolve().parents[2]


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
