"""Adapter glue: logical lines and cyclomatic complexity of the adapter module (radon)."""

from __future__ import annotations

import importlib.metadata
import inspect

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria.adapter_lookup import adapter_class


def _adapter_source(data: ScoringData, adapter_id: str) -> tuple[str | None, str | None]:
    adapter, reason = adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    module = inspect.getmodule(adapter)
    try:
        return inspect.getsource(module), None
    except (OSError, TypeError):
        return None, f"the source of adapter {adapter_id!r} is not available"


def _glue(data: ScoringData, adapter_id: str) -> tuple[dict[str, float] | None, str | None]:
    """Logical lines and summed cyclomatic complexity of the adapter module (radon), cached per
    exact source text: re-analysing every adapter on every scoring was a third of its time."""
    import hashlib

    source, reason = _adapter_source(data, adapter_id)
    if source is None:
        return None, reason
    key = f"glue|{hashlib.sha256(source.encode()).hexdigest()}|radon {_version('radon')}"

    def measure() -> dict[str, float]:
        from radon.complexity import cc_visit
        from radon.raw import analyze
        from radon.visitors import Function

        # cc_visit lists methods as functions too, and classes separately: count functions only.
        return {"lines": float(analyze(source).lloc),
                "complexity": float(sum(b.complexity for b in cc_visit(source) if isinstance(b, Function)))}

    return data.cache.get_or_compute(key, measure), None


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def glue_lines(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    glue, reason = _glue(data, adapter_id)
    return (None, reason) if glue is None else (glue["lines"], None)


def glue_complexity(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    glue, reason = _glue(data, adapter_id)
    return (None, reason) if glue is None else (glue["complexity"], None)
