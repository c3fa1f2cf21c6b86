"""Cold import time: what a run imports of the framework, timed in fresh interpreters."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria import fresh_interpreter
from rlcompare_criteria.api_coverage import WALK
from rlcompare_criteria.installations import MAIN, Installation, as_modules

#: Fresh-interpreter imports timed per framework; their spread gives the interval.
IMPORT_REPEATS = 3
#: One discarded import first (the first interpreter after a build or a reboot reads the files from
#: disk and can take several times longer; skipped where a run has just imported the framework, see
#: :func:`time_cold_import`), then the timed ones. The first module must import; a further one that
#: fails to (an optional part the adapter guards with ``try``) is skipped and named. The script prints
#: its result as one JSON line; :func:`time_cold_import` may add the API walk before that print.
_TIME_IMPORT = r"""
import importlib, json, sys, time
started, cpu = time.perf_counter(), time.process_time()
importlib.import_module(sys.argv[1])
skipped = []
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except Exception as error:
        skipped.append(f"{name}: {type(error).__name__}")
timing = {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu, "skipped": skipped}
"""
_PRINT_TIMING = "print(json.dumps(timing))\n"
#: The last timed interpreter walks the public API once its import is timed (what
#: :func:`rlcompare_criteria.api_coverage.introspect_api` would start one more interpreter for).
_PRINT_TIMING_AND_API = "print(json.dumps({**timing, 'api': counts}))\n"


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
        script = _TIME_IMPORT + (WALK + _PRINT_TIMING_AND_API if last else _PRINT_TIMING)
        line, error = fresh_interpreter.run_in(installation, script, names)
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


def measure_cold_import(data: ScoringData, adapter_id: str, warm: bool = False) -> tuple[dict[str, Any] | None, str | None]:
    """The cold import of the adapter's framework (cached, or measured now and kept). Measured now
    while its public API is not cached, the last timed interpreter also walks the API and the counts
    are kept under the API's own key. ``warm``: a run of this command imported
    the framework already, so no discarded warm-up import is needed."""
    found, reason = fresh_interpreter.target(data, adapter_id)
    if found is None:
        return None, reason
    api_key = found.key("api")
    api_cached, _ = data.cache.lookup(api_key)

    def measure(modules: Sequence[str], installation: Installation) -> dict[str, Any]:
        result = time_cold_import(modules, installation=installation, warm_up=not warm, walk_api=not api_cached)
        api = result.pop("api", None)
        if api is not None:
            data.cache.keep(api_key, api)
        return result

    return fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "import", measure, "the cold import")


def cold_import(data: ScoringData, adapter_id: str) -> tuple[list[float] | None, str | None]:
    result, reason = measure_cold_import(data, adapter_id)
    return (None, reason) if result is None else (result["seconds"], None)


def premeasure_cold_import(data: ScoringData, alongside_runs: bool) -> list[str]:
    """The cold imports of ``data.adapters``, measured ahead (and their public APIs, walked by the
    last timed interpreter) and kept as scoring keeps them. Never beside runs (nothing is timed then:
    beside a busy CPU an import takes 10-13% longer even with a CPU of its own,
    ``benchmarks/import_timing.py``). An adapter in ``data.warm_adapters`` (its framework imported
    by a run of this command) is timed without the discarded warm-up import."""
    if alongside_runs:
        return []
    for adapter_id in data.adapters:
        measure_cold_import(data, adapter_id, warm=adapter_id in data.warm_adapters)
    return []
