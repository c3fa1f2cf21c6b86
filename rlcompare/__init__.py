"""rlcompare: a plugin-based, comparative registry of open-source RL frameworks.

This package's own namespace holds only the version and the hook markers: ``from rlcompare import
hookimpl`` is all a plugin module needs to implement a hook (:mod:`rlcompare.hookspecs` lists them).
The markers are pluggy's, made on first use; where pluggy is not installed (a run's worker inside
an adapter's own environment imports the adapter's plugin module, which decorates its hooks, but
never builds a plugin manager) plain markers set the same attribute with the same options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    hookspec: Any
    hookimpl: Any

__version__ = "0.1.0"
__all__ = ["PROJECT_NAME", "__version__", "hookimpl", "hookspec"]

#: The pluggy project name, which is also the entry-point group plugins declare.
PROJECT_NAME = "rlcompare"


class _PlainMarker:
    """Marks hook functions as pluggy's markers do (the same attribute and options)."""

    def __init__(self, project_name: str, kind: str, defaults: dict[str, Any]) -> None:
        self.attribute, self.defaults = f"{project_name}_{kind}", defaults

    def __call__(self, function: Callable[..., Any] | None = None, **options: Any) -> Any:
        def mark(target: Callable[..., Any]) -> Callable[..., Any]:
            setattr(target, self.attribute, {**self.defaults, **options})
            return target

        return mark if function is None else mark(function)


def _markers() -> tuple[Any, Any]:
    """pluggy's markers where pluggy is installed, else plain ones that set the same attributes."""
    try:
        import pluggy
    except ModuleNotFoundError:  # only where no plugin manager is ever built (see _PlainMarker)
        spec = _PlainMarker(PROJECT_NAME, "spec", {"firstresult": False, "historic": False,
                                                   "warn_on_impl": None, "warn_on_impl_args": None})
        impl = _PlainMarker(PROJECT_NAME, "impl", {"wrapper": False, "hookwrapper": False, "optionalhook": False,
                                                   "tryfirst": False, "trylast": False, "specname": None})
        return spec, impl
    return pluggy.HookspecMarker(PROJECT_NAME), pluggy.HookimplMarker(PROJECT_NAME)


def __getattr__(name: str) -> Any:
    # The markers are made on first use: the harness imports this package inside a run's worker,
    # which needs neither pluggy nor a plugin manager.
    if name in ("hookspec", "hookimpl"):
        globals()["hookspec"], globals()["hookimpl"] = _markers()
        return globals()[name]
    raise AttributeError(f"module 'rlcompare' has no attribute {name!r}")
