"""Cold import time: what a run imports of the framework, timed in fresh interpreters."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
#: disk and can take several times longer), then the timed ones. The first module must import; a
#: further one that fails to (an optional part the adapter guards with ``try``) is skipped and named.
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
print(json.dumps({"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
                  "skipped": skipped}))
"""


def time_cold_import(modules: str | Sequence[str], repeats: int = IMPORT_REPEATS,
                     installation: Installation = MAIN) -> dict[str, Any]:
    """Seconds to import ``modules`` (in order) in ``repeats`` fresh interpreters of
    ``installation`` after one discarded import (the interpreter's own start-up excluded), with the
    CPU seconds each interpreter spent meanwhile, or the error of the first import that failed."""
    names = as_modules(modules)
    samples: list[float] = []
    cpu: list[float] = []
    skipped: list[str] = []
    for repeat in range(repeats + 1):
        line, error = fresh_interpreter.run_in(installation, _TIME_IMPORT, names)
        if line is None:
            return {"error": error}
        result = json.loads(line)
        skipped = result["skipped"]
        if repeat:  # the first is the warm-up
            samples.append(float(result["seconds"]))
            cpu.append(float(result["cpu_seconds"]))
    return {"seconds": samples, "cpu_seconds": cpu, "skipped": skipped}


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


def cold_import(data: ScoringData, adapter_id: str) -> tuple[list[float] | None, str | None]:
    result, reason = fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "import", time_cold_import, "the cold import")
    return (None, reason) if result is None else (result["seconds"], None)


def premeasure_cold_import(data: ScoringData, alongside_runs: bool) -> list[str]:
    """The cold imports of ``data.adapters``, measured ahead. Alongside runs a timing is kept only
    when every timed import had a CPU to itself (:func:`had_a_cpu`); one that shared its CPU is
    dropped and named in the returned lines, to be measured again once the runs are over (as
    scoring would measure it)."""
    left: list[str] = []
    for adapter_id in data.adapters:
        shared: list[dict[str, Any]] = []

        def keep(value: dict[str, Any], shared: list[dict[str, Any]] = shared) -> bool:
            if had_a_cpu(value):
                return True
            shared.append(value)
            return False

        fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "import", time_cold_import,
                                                        "the cold import", keep=keep if alongside_runs else None)
        for value in shared:
            left.append(f"the cold import of {adapter_id} shared its CPU with other processes "
                        f"(on a CPU {cpu_share(value):.0%} of its time; {MIN_CPU_SHARE:.0%} needed)")
    return left
