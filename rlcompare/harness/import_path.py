"""The import path of the processes the harness starts with ``python -m`` (a run's worker, the parity
worker, the conformance kit's worker).

``python -m`` puts the current directory first on ``sys.path``: a source folder in it named like a
framework (a checkout of ``stable_baselines3``, a ``gymnasium`` folder) would shadow the installed
package, and the run would measure whatever that folder holds. These processes import nothing from
the current directory: the driver hands them the adapter's ``module:qualname`` and every module they
need is installed (or on ``PYTHONPATH``, which stays as it is).
"""

from __future__ import annotations

import os
import sys


def drop_current_directory() -> None:
    """Take the entry ``python -m`` (or ``-c``) put first on ``sys.path`` for the current directory off
    it; entries the user asked for (``PYTHONPATH``) stay. Nothing to do under ``-P`` / ``PYTHONSAFEPATH``."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return
    first = sys.path[0]
    try:
        current = os.getcwd()
    except OSError:  # the directory went away: nothing of it can be imported either
        current = None
    if first == "" or (current is not None and os.path.abspath(first) == current):
        del sys.path[0]
