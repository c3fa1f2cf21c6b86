"""The user's cache folder for rlcompare: measurements and parsed data that are slow to make again.

``$RLCOMPARE_CACHE_DIR``, else ``$XDG_CACHE_HOME/rlcompare``, else ``~/.cache/rlcompare``. Everything
in it is keyed by what it was made from, so a stale file is never used, and losing it only costs
time.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("RLCOMPARE_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "rlcompare"
