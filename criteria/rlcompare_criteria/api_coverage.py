"""Public-API docstring and type-hint coverage, introspected in a fresh interpreter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria import fresh_interpreter, in_run
from rlcompare_criteria.adapter_lookup import per_adapter_premeasure
from rlcompare_criteria.installations import MAIN, Installation, as_modules

#: A fresh interpreter's whole introspection: import what a run imports of the framework (the first
#: module must import; a further one that fails to is skipped), walk the public API it loaded, print
#: the counts as one JSON line; the same code a run's worker runs first thing
#: (:func:`rlcompare.harness.framework_import.measure_in_this_interpreter`).
INTROSPECT = r"""
import json, sys
import rlcompare.harness.worker  # what a run's worker has loaded when it times its import: the same start
from rlcompare.harness.framework_import import measure_in_this_interpreter
measured = measure_in_this_interpreter(sys.argv[1:])
if "error" in measured["import"]:
    sys.exit(measured["import"]["error"])
print(json.dumps(measured["api"]))
"""


def introspect_api(modules: str | Sequence[str], installation: Installation = MAIN) -> dict[str, Any]:
    """Docstring and type-hint counts of the public API of ``modules`` (the first is the package
    walked; the others are imported first so that the submodules they load are walked too),
    measured in a fresh interpreter of ``installation``."""
    line, error = fresh_interpreter.run_in(installation, INTROSPECT, as_modules(modules))
    return {"error": error} if line is None else json.loads(line)


def _api_counts(data: ScoringData, adapter_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """The counts a run of the adapter walked (:mod:`rlcompare_criteria.in_run`), else a fresh
    interpreter's (cached)."""
    counts = in_run.api_counts(data, adapter_id)
    if counts is not None:
        return counts, None
    return fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "api", introspect_api, "the public API")


def docstring_coverage(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    counts, reason = _api_counts(data, adapter_id)
    if counts is None:
        return None, reason
    if counts["objects"] == 0:
        return None, "no public classes or functions found"
    return counts["documented"] / counts["objects"], None


def type_hint_coverage(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    counts, reason = _api_counts(data, adapter_id)
    if counts is None:
        return None, reason
    if counts["functions"] == 0:
        return None, "no public Python functions found"
    return counts["typed"] / counts["functions"], None


#: The public APIs of the adapters no run of this command finished, walked ahead in fresh interpreters.
premeasure_api = per_adapter_premeasure(_api_counts, measured_by_runs=True)
