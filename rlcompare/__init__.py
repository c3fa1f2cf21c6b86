"""rlcompare: a plugin-based, comparative registry of open-source RL frameworks."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    # Imported on first use: a run's worker imports ``rlcompare`` without the plugin machinery.
    if name == "hookimpl":
        from rlcompare.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'rlcompare' has no attribute {name!r}")
