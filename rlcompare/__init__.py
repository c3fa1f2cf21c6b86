"""rlcompare: a plugin-based, comparative registry of open-source RL frameworks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlcompare.hookspecs import hookimpl

__version__ = "0.1.0"
__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    # Lazy: a run's worker imports rlcompare's harness modules where pluggy is not installed.
    if name == "hookimpl":
        from rlcompare.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'rlcompare' has no attribute {name!r}")
