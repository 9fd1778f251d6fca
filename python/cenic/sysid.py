"""System identification from Python: ``cenic sysid fit`` as a function.

:func:`sysid_fit` runs the command's fit in this process (the same flags,
defaults, validation and outputs) and returns its report;
:func:`cenic.ray.sysid_fit` is the same fit with each Adam step's segments
computed on a Ray cluster.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from . import _cenic

__all__ = ["sysid_argv", "sysid_fit"]


def sysid_argv(data: str | os.PathLike[str], out: str | os.PathLike[str], options: dict[str, Any]) -> list[str]:
    """The ``cenic sysid fit`` arguments of :func:`sysid_fit`'s keywords:
    ``name=value`` → ``--name value`` (underscores as dashes), ``True`` → a
    bare flag, ``False``/None → left out, a list → the flag repeated."""
    argv = ["fit", "--data", os.fspath(data), "--out", os.fspath(out)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                argv += [flag, str(v)]
        else:
            argv += [flag, str(value)]
    return argv


def sysid_fit(
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    _ray: Callable[[str, int, str], Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """``cenic sysid fit --data DATA --out OUT [flags]`` in this process:
    writes ``OUT/fitted.xml``, ``report.json``, ``loss.png`` and
    ``overlay.png`` and returns the report as a dict. ``options`` are the
    command's flags with underscores (``train="0-399"``, ``val="400-455"``,
    ``fit="side"`` (the default is the guide's recipe,
    ``"side,corner_radius,stiffness,dissipation"``), ``epochs=3``,
    ``batch=64``, ``init_side=0.09``, ``level=True``, ``horizon=[4, 16]``,
    ``quiet=True``, ...; see ``cenic
    sysid fit --help``). Errors raise :class:`cenic.CenicError` with the
    command's message."""
    _cenic.sysid_cli(sysid_argv(data, out, options), _ray)
    return json.loads((Path(out) / "report.json").read_text())
