"""Cold import time: what a run imports of the framework, timed in fresh interpreters."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria import fresh_interpreter, in_run
from rlcompare_criteria.adapter_lookup import per_adapter_premeasure
from rlcompare_criteria.installations import MAIN, Installation, as_modules

#: Fresh-interpreter imports timed per framework; their spread gives the interval.
IMPORT_REPEATS = 3
#: One discarded import first (the first interpreter after a build or a reboot reads the files from
#: disk and can take several times longer; skipped where a run has just imported the framework, see
#: :func:`time_cold_import`), then the timed ones, each in a fresh interpreter, the way a run's worker
#: times its own import (:func:`rlcompare.harness.framework_import.time_framework_import`, first thing
#: in the interpreter: the same code, so in-run and fresh figures are one method). The last timed
#: interpreter may walk the public API after its import (``"api"``), as a run's worker does.
_TIME_IMPORT = r"""
import json, sys
import rlcompare.harness.worker  # what a run's worker has loaded when it times its import: the same start
from rlcompare.harness.framework_import import measure_in_this_interpreter
walk = WALK
measured = measure_in_this_interpreter(sys.argv[1:], walk_api=walk)
timing = measured["import"]
if "error" in timing:
    sys.exit(timing["error"])
if walk:
    timing["api"] = measured.get("api") or {"error": "not walked"}
print(json.dumps(timing))
"""


def time_cold_import(modules: str | Sequence[str], repeats: int = IMPORT_REPEATS,
                     installation: Installation = MAIN, warm_up: bool = True,
                     walk_api: bool = False) -> dict[str, Any]:
    """Seconds to import ``modules`` (in order) in ``repeats`` fresh interpreters of
    ``installation`` after one discarded import (the interpreter's own start-up excluded), with the
    CPU seconds each interpreter spent meanwhile, or the error of the first import that failed.

    ``warm_up=False`` skips the discarded import: for a framework a run has just imported in this
    environment, whose files are read from memory already. ``walk_api`` has the last
    interpreter walk the public API after its timed import, under ``"api"`` (the counts
    :func:`rlcompare_criteria.api_coverage.introspect_api` returns: the same modules imported the
    same way)."""
    names = as_modules(modules)
    samples: list[float] = []
    cpu: list[float] = []
    skipped: list[str] = []
    api: dict[str, Any] | None = None
    first = 0 if warm_up else 1
    for repeat in range(first, repeats + 1):
        last = walk_api and repeat == repeats
        line, error = fresh_interpreter.run_in(installation, _TIME_IMPORT.replace("WALK", str(last)), names)
        if line is None:
            return {"error": error}
        result = json.loads(line)
        skipped = result["skipped"]
        if repeat:  # the first is the warm-up
            samples.append(float(result["seconds"]))
            cpu.append(float(result["cpu_seconds"]))
        if last:
            api = result["api"]
    measured: dict[str, Any] = {"seconds": samples, "cpu_seconds": cpu, "skipped": skipped}
    return measured if api is None else {**measured, "api": api}


def measure_cold_import(data: ScoringData, adapter_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """The cold import of the adapter's framework in fresh interpreters (cached, or measured now and
    kept). Measured now while its public API is not cached, the last timed interpreter also walks the
    API and the counts are kept under the API's own key."""
    found, reason = fresh_interpreter.target(data, adapter_id)
    if found is None:
        return None, reason
    api_key = found.key("api")
    api_cached, _ = data.cache.lookup(api_key)

    def measure(modules: Sequence[str], installation: Installation) -> dict[str, Any]:
        result = time_cold_import(modules, installation=installation, walk_api=not api_cached)
        api = result.pop("api", None)
        if api is not None and "error" not in api:
            data.cache.keep(api_key, api)
        return result

    return fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "import", measure, "the cold import")


def cold_import(data: ScoringData, adapter_id: str) -> tuple[list[float] | None, str | None]:
    """The runs' own timings where every adapter of the store whose runs started has them
    (:mod:`rlcompare_criteria.in_run`), else timings in fresh interpreters (cached); an adapter
    without a started run is timed in fresh interpreters either way."""
    samples = in_run.import_seconds(data, adapter_id)
    if samples and in_run.every_adapter_timed_in_runs(data):
        return samples, None
    result, reason = measure_cold_import(data, adapter_id)
    return (None, reason) if result is None else (result["seconds"], None)


#: The cold imports of the adapters no run of this command finished, measured ahead in fresh
#: interpreters (their public APIs walked by the last timed interpreter), never beside runs.
premeasure_cold_import = per_adapter_premeasure(measure_cold_import, measured_by_runs=True, timed=True)
