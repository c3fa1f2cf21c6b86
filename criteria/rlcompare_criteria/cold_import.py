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

#: One discarded import first (the first interpreter after a build or a reboot reads the files from
#: disk and can take several times longer), then the timed ones. The first module must import; a
#: further one that fails to (an optional part the adapter guards with ``try``) is skipped and named.
_TIME_IMPORT = r"""
import importlib, json, sys, time
started = time.perf_counter()
importlib.import_module(sys.argv[1])
skipped = []
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except Exception as error:
        skipped.append(f"{name}: {type(error).__name__}")
print(json.dumps({"seconds": time.perf_counter() - started, "skipped": skipped}))
"""


def time_cold_import(modules: str | Sequence[str], repeats: int = IMPORT_REPEATS,
                     installation: Installation = MAIN) -> dict[str, Any]:
    """Seconds to import ``modules`` (in order) in ``repeats`` fresh interpreters of
    ``installation`` after one discarded import (the interpreter's own start-up excluded), or the
    error of the first import that failed."""
    names = as_modules(modules)
    samples = []
    skipped: list[str] = []
    for repeat in range(repeats + 1):
        line, error = fresh_interpreter.run_in(installation, _TIME_IMPORT, names)
        if line is None:
            return {"error": error}
        result = json.loads(line)
        skipped = result["skipped"]
        if repeat:  # the first is the warm-up
            samples.append(float(result["seconds"]))
    return {"seconds": samples, "skipped": skipped}


def cold_import(data: ScoringData, adapter_id: str) -> tuple[list[float] | None, str | None]:
    result, reason = fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "import", time_cold_import, "the cold import")
    return (None, reason) if result is None else (result["seconds"], None)
