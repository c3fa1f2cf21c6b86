"""What the runs measured of their frameworks where they imported them (``runs.development_json``):
each worker times its framework's import first thing in its fresh interpreter and walks the public
API it loaded (:mod:`rlcompare.harness.framework_import`), so the development criteria read figures
from the store instead of starting interpreters of their own after the matrix.

A cold-import figure taken inside the runs is used only when every adapter of the store whose runs
started has one, so that one score never compares the runs of one adapter timed inside runs (beside
whatever else the matrix ran) against another's timed in fresh interpreters on an idle machine;
otherwise every adapter is timed in fresh interpreters, as before. An adapter refused on every
workload has no run: it is timed in fresh interpreters either way. API counts do not depend on the machine: a run's counts and a fresh
interpreter's are the same number, so either serves.
"""

from __future__ import annotations

import json
from typing import Any

from rlcompare.scoring.criteria import ScoringData

#: How the cold-import criterion says it used the runs' own timings.
IN_RUN_NOTE = "timed first thing in each run's own interpreter"


def _measured(data: ScoringData, adapter_id: str) -> list[dict[str, Any]]:
    """The development measurements the adapter's runs recorded, oldest run first."""

    def collect() -> list[dict[str, Any]]:
        runs = data.runs
        if "development_json" not in runs.columns:
            return []
        rows = runs[(runs["adapter"] == adapter_id) & runs["development_json"].notna()]
        if "started_at" in rows.columns:
            rows = rows.sort_values("started_at", na_position="first")
        found: list[dict[str, Any]] = []
        for value in rows["development_json"]:
            try:
                item = json.loads(value) if isinstance(value, str) else value
            except ValueError:
                continue
            if isinstance(item, dict):
                found.append(item)
        return found

    return data.memo(f"in-run development|{adapter_id}", collect)


def import_seconds(data: ScoringData, adapter_id: str) -> list[float]:
    """The adapter's runs' own cold-import timings (wall seconds), oldest run first; runs forked from one
    parent (``--warm-start``) share its one timing, which counts once."""
    samples = []
    parents: set[str] = set()
    for item in _measured(data, adapter_id):
        warm = item.get("warm_start")
        parent = warm.get("parent") if isinstance(warm, dict) else None
        if isinstance(parent, str):
            if parent in parents:
                continue
            parents.add(parent)
        timing = item.get("import")
        seconds = timing.get("seconds") if isinstance(timing, dict) else None
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0:
            samples.append(float(seconds))
    return samples


def started_adapters(data: ScoringData) -> list[str]:
    """The adapters of ``data`` with at least one run that started (not only refused pairs)."""
    return sorted(data.attempted_runs["adapter"].unique().tolist())


def every_adapter_timed_in_runs(data: ScoringData) -> bool:
    """Whether every adapter of ``data`` whose runs started has at least one cold-import timing from
    them (an adapter refused on every workload has no run to time it: it is timed in fresh
    interpreters either way)."""
    return data.memo("in-run development|all timed", lambda: bool(started_adapters(data)) and all(
        import_seconds(data, adapter) for adapter in started_adapters(data)))


def api_counts(data: ScoringData, adapter_id: str) -> dict[str, Any] | None:
    """The public API's counts from the adapter's newest run that walked it, or None."""
    for item in reversed(_measured(data, adapter_id)):
        counts = item.get("api")
        if isinstance(counts, dict) and "error" not in counts and isinstance(counts.get("objects"), int):
            return counts
    return None
