"""Cold import time: what a run imports of the framework, timed in fresh interpreters."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria import fresh_interpreter
from rlcompare_criteria.installations import MAIN, Installation, as_modules

#: Fresh-interpreter imports timed per framework; their spread gives the interval.
IMPORT_REPEATS = 3
#: The least share of a timed import's wall time its interpreter spent on a CPU for the timing to
#: count as made with a CPU to itself. An import after the warm-up is CPU-bound: measured alone it
#: keeps 0.97-1.0 of its wall time on a CPU; next to busy processes on every CPU, 0.05-0.4 (at nice 19
#: or not), and its seconds grow in proportion.
MIN_CPU_SHARE = 0.8

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

    ``warm_up=False`` skips the discarded import: for a framework a run or a parity probe has just
    imported in this environment, whose files are read from memory already. ``walk_api`` has the last
    interpreter walk the public API after its timed import, under ``"api"`` (the counts
    :func:`rlcompare_criteria.api_coverage.introspect_api` returns: the same modules imported the
    same way)."""
    from rlcompare_criteria.api_coverage import WALK

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


def cpu_share(result: dict[str, Any]) -> float | None:
    """The least share of wall time on a CPU over the timed imports of ``result`` (None: a value
    measured before the CPU time was recorded)."""
    pairs = list(zip(result.get("cpu_seconds") or (), result.get("seconds") or (), strict=False))
    if not pairs:
        return None
    return min(cpu / wall if wall > 0 else 1.0 for cpu, wall in pairs)


def had_a_cpu(result: dict[str, Any]) -> bool:
    """Whether every timed import of ``result`` ran with a CPU to itself (:data:`MIN_CPU_SHARE`)."""
    share = cpu_share(result)
    return share is None or share >= MIN_CPU_SHARE


def measure_cold_import(data: ScoringData, adapter_id: str, keep: Callable[[dict[str, Any]], bool] | None = None,
                        warm: bool = False) -> tuple[dict[str, Any] | None, str | None]:
    """The cold import of the adapter's framework (cached, or measured now and kept unless ``keep``
    says no). Measured now while its public API is not cached, the last timed interpreter also walks
    the API and the counts are kept under the API's own key (they do not depend on the machine's
    load, so they are kept even where the timing is not). ``warm``: a run or probe of this command
    imported the framework already, so no discarded warm-up import is needed."""
    found, reason = fresh_interpreter.target(data, adapter_id)
    if found is None:
        return None, reason
    api_key = found.key(data, adapter_id, "api")
    api_cached, _ = data.cache.lookup(api_key)

    def measure(modules: Sequence[str], installation: Installation) -> dict[str, Any]:
        result = time_cold_import(modules, installation=installation, warm_up=not warm, walk_api=not api_cached)
        api = result.pop("api", None)
        if api is not None:
            data.cache.keep(api_key, api)
        return result

    return fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "import", measure, "the cold import", keep=keep)


def cold_import(data: ScoringData, adapter_id: str) -> tuple[list[float] | None, str | None]:
    result, reason = measure_cold_import(data, adapter_id)
    return (None, reason) if result is None else (result["seconds"], None)


def premeasure_cold_import(data: ScoringData, alongside_runs: bool) -> list[str]:
    """The cold imports of ``data.adapters``, measured ahead (and their public APIs, walked by the
    last timed interpreter). Never beside runs (nothing is timed then: beside a busy CPU an import
    takes 10-13% longer even with a CPU of its own, ``benchmarks/import_timing.py``); after them, a
    timing that did not have a CPU to itself (:func:`had_a_cpu`: another program was busy) is not
    kept, so scoring times it again, and is named in the returned lines. An adapter in
    ``data.warm_adapters`` (its framework imported by a run of this command) is timed without the
    discarded warm-up import."""
    if alongside_runs:
        return []
    left: list[str] = []
    for adapter_id in data.adapters:
        shared: list[dict[str, Any]] = []

        def keep(value: dict[str, Any], shared: list[dict[str, Any]] = shared) -> bool:
            if had_a_cpu(value):
                return True
            shared.append(value)
            return False

        measure_cold_import(data, adapter_id, keep=keep, warm=adapter_id in data.warm_adapters)
        for value in shared:
            left.append(f"the cold import of {adapter_id} shared its CPU with other processes "
                        f"(on a CPU {cpu_share(value):.0%} of its time; {MIN_CPU_SHARE:.0%} needed): "
                        "scoring times it again")
    return left
