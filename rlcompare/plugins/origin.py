"""Where a plugin comes from: rlcompare itself, one of its built-in distributions, or an outside
package found through the ``rlcompare`` entry-point group."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable

import rlcompare
from rlcompare.harness.protocol import Origin

__all__ = ["Origin", "builtin_origin", "entry_point_origin"]


def builtin_origin(module_name: str, entry_points: Iterable[importlib.metadata.EntryPoint]) -> Origin:
    """A built-in plugin comes from rlcompare itself or from one of its own distributions
    (``rlcompare-sb3``, ``rlcompare-criteria``, ...), installed like any outside package."""
    for entry_point in entry_points:  # the distribution whose own entry point names the module
        if entry_point.module == module_name and entry_point.attr is None and entry_point.dist is not None:
            return Origin(module_name, entry_point.dist.metadata["Name"], entry_point.dist.version)
    return Origin(module_name, "rlcompare", rlcompare.__version__)


def entry_point_origin(entry_point: importlib.metadata.EntryPoint) -> Origin:
    """An outside plugin: its entry point's name, and the distribution that declares it."""
    dist = entry_point.dist
    if dist is None:
        return Origin(entry_point.name)
    return Origin(entry_point.name, dist.metadata["Name"], dist.version)
