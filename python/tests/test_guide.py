"""The guide's and README's Python snippets run.

Every ```python block of docs/src/*.md and README.md is executed, from the
repository root (the snippets name ../shared relative to it) with
CENIC_SHARED set. A block fenced ```python,ignore needs what a test cannot
have (a Ray cluster, GPUs with PyTorch's NCCL, RLlib's learners): it is only
compiled. A block that imports torch runs where PyTorch is installed and is
only compiled elsewhere (PyTorch is not a dependency).
"""

from __future__ import annotations

import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(python(?:,ignore)?)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str, str]]:
    """(id, info string, code) of every Python block, README first."""
    files = [REPO / "README.md", *sorted((REPO / "docs" / "src").glob("*.md"))]
    out = []
    for f in files:
        text = f.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((f"{f.relative_to(REPO)}:{line}", m.group(1), m.group(2)))
    return out


BLOCKS = blocks()


def test_the_guide_has_python_snippets():
    ids = [b[0] for b in BLOCKS]
    assert any(i.startswith("README.md") for i in ids), ids
    assert sum(i.startswith("docs/src/") for i in ids) >= 6, ids


# Snippets that read the shared models (a path under ../shared, or a gymnasium task or MPC task,
# which find their models through CENIC_SHARED) need the shared folder; the others run without it.
NEEDS_SHARED = re.compile(r"\.\./shared|make_vec\(|cenic\.make\(|MpcTask\(")


def uses_torch(code: str) -> bool:
    return re.search(r"^\s*import .*\btorch\b", code, re.M) is not None


@pytest.mark.parametrize("where,info,code", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_snippet_runs(where, info, code, request, monkeypatch, capsys):
    compiled = compile(code, where, "exec")  # every block is valid Python
    if info == "python,ignore":
        return
    if uses_torch(code):
        pytest.importorskip("torch")
    monkeypatch.chdir(REPO)
    if NEEDS_SHARED.search(code):
        monkeypatch.setenv("CENIC_SHARED", str(request.getfixturevalue("shared")))
    exec(compiled, {"__name__": "__guide__"})
    capsys.readouterr()


def test_torch_wrapper_backpropagates_the_rollouts_vjp(monkeypatch):
    """The guide's PyTorch wrapper gives the gradient of Rollout.vjp, and its
    backward forms no Jacobian block (the reverse pass)."""
    code = next(c for _, _, c in BLOCKS if "class CenicRollout" in c)
    torch = pytest.importorskip("torch")
    import cenic

    made = []
    record = cenic.rollout_jacobians

    def recorded(*args, **kwargs):
        made.append(record(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(cenic, "rollout_jacobians", recorded)
    scope: dict = {}
    exec(code, scope)
    made.clear()  # the snippet's own example
    model = cenic.Model.builtin("cube_toss")
    x0 = torch.tensor([0, 0, 0.3, 1, 0, 0, 0, 1, 0, 0, 0, 5, 3.0], dtype=torch.float64, requires_grad=True)
    u = torch.zeros(5, 6, dtype=torch.float64, requires_grad=True)
    theta = torch.ones(1, dtype=torch.float64, requires_grad=True)
    kw = dict(interval=0.01, dt=1e-3, control="applied", param_names=["friction"])
    traj = scope["CenicRollout"].apply(x0, u, theta, model, kw)
    traj[-1, 2].backward()
    assert len(made) == 1 and not made[0].dense_built
    r = record(model, x0.detach().numpy(), u.detach().numpy(), theta.detach().numpy(), **kw)
    g = torch.zeros_like(traj).numpy()
    g[-1, 2] = 1.0
    gx, _, _ = r.vjp(g)
    assert torch.allclose(x0.grad, torch.from_numpy(gx))
