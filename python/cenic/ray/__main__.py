"""``python -m cenic.ray sysid fit --ray ADDRESS ...``: ``cenic sysid fit``
with its gradients on a Ray cluster (what ``cenic sysid fit --ray`` runs)."""

import sys

from . import _cli

sys.exit(_cli(sys.argv[1:]))
