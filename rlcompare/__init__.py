"""rlcompare: a plugin-based, comparative registry of open-source RL frameworks."""

from __future__ import annotations

from rlcompare.hookspecs import hookimpl

__version__ = "0.1.0"
__all__ = ["__version__", "hookimpl"]
