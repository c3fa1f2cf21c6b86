"""The entry point of one run's own process: ``python -m rlcompare.worker SPEC.json``.

The runner starts a fresh interpreter per run and hands it the run spec as JSON (never a fork of
the driver), so a framework with dependencies that conflict with rlcompare's runs under its own
Python environment (:mod:`rlcompare.environments`). The worker is minimal: the driver validated the
workload, resolved the adapter and computed its fidelity report, so the spec carries plain data
(the resolved workload, the adapter's ``module:qualname``, the fidelity report, the budget
tolerance, the distributions to record) and the worker needs only the standard library, numpy,
gymnasium, the harness's light modules and the adapter's own module: no pydantic, no pluggy, no
plugin manager, no registry.
The worker writes its outcome to ``result.json`` in the run directory; the curve is appended to
``progress.jsonl`` as it is measured, so a crash keeps every finished evaluation point.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.driver_watch import watch_driver
from rlcompare.rundir import RESULT, write_json_atomically

RESULT_FILE = RESULT

if TYPE_CHECKING:
    from rlcompare.adapter import Adapter


def load_adapter_class(reference: str) -> type[Adapter]:
    """The adapter class a spec names as ``module:qualname`` (importing only that module)."""
    from rlcompare.adapter import Adapter

    module_name, _, qualname = str(reference).partition(":")
    if not module_name or not qualname:
        raise ValueError(f"the run spec's adapter_class must be 'module:qualname', got {reference!r}")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, Adapter)):
        raise TypeError(f"{reference} is not an rlcompare adapter class")
    return target


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Train and evaluate one run as ``spec`` says; return the result record."""
    from rlcompare.context import TrainingContext
    from rlcompare.host import distribution_versions, host_info, loaded_versions
    from rlcompare.workload_view import workload_view

    workload = workload_view(spec["workload"], spec.get("workload_derived"))
    adapter = load_adapter_class(spec.get("adapter_class") or "")()
    result: dict[str, Any] = {
        "run_id": spec["run_id"],
        "status": "failed",
        "host": host_info(),
        "versions": distribution_versions(spec.get("distributions") or ()),
        "fidelity": spec.get("fidelity"),
    }
    context = TrainingContext(workload, spec["seed"], spec["run_dir"], launched_at=spec.get("launched_at"))
    try:
        outcome = adapter.train(workload, context)  # type: ignore[arg-type]
        context.stop_training()
        final = context.final_evaluation(outcome.policy, outcome.framework_env_steps)
        result.update(
            status="ok",
            framework_env_steps=outcome.framework_env_steps,
            native_config=outcome.native_config,
            final_return_mean=final.return_mean,
            final_return_std=final.return_std,
        )
    except Exception as exc:  # noqa: BLE001 - any failure of a framework is a failed run, stored
        result["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        result["traceback"] = traceback.format_exc()
    finally:
        context.stop_training()
        result.update(context.summary())
        context.close()
        result["versions"].update(loaded_versions())  # gymnasium and numpy as imported by this run
    return result


def main(argv: list[str] | None = None) -> int:
    watch_driver()  # first: a worker whose driver dies stops, whatever it is doing
    argv = sys.argv[1:] if argv is None else argv
    spec_path = Path(argv[0])
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    started = time.time()
    try:
        result = run_spec(spec)
    except Exception as exc:  # noqa: BLE001 - e.g. the adapter's plugin vanished; still a result
        result = {
            "run_id": spec.get("run_id"),
            "status": "failed",
            "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
            "traceback": traceback.format_exc(),
        }
    result["worker_seconds"] = time.time() - started
    # atomic and synced: the driver (or the next one, if this one died) never reads half a result
    write_json_atomically(Path(spec["run_dir"]) / RESULT, result)
    sys.stdout.flush()
    # Frameworks sometimes leave non-daemon threads behind; the result is safe, so leave now.
    os._exit(0 if result["status"] == "ok" else 1)


if __name__ == "__main__":
    raise SystemExit(main())
