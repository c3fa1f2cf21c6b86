"""The entry point of one run's own process: ``python -m rlcompare.worker SPEC.json``.

The runner starts a fresh interpreter per run and hands it the run spec as JSON (never a fork of
the driver), so frameworks with incompatible dependencies can later run under their own Python.
The worker writes its outcome to ``result.json`` in the run directory; the curve is appended to
``progress.jsonl`` as it is measured, so a crash keeps every finished evaluation point.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from rlcompare.driver_watch import watch_driver
from rlcompare.rundir import RESULT, write_json_atomically

RESULT_FILE = RESULT


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Train and evaluate one run as ``spec`` says; return the result record."""
    from rlcompare.context import TrainingContext
    from rlcompare.host import distribution_versions, host_info, loaded_versions
    from rlcompare.plugins import build_plugin_manager
    from rlcompare.workload import workload_from_dict

    workload = workload_from_dict(spec["workload"], f"run {spec['run_id']}")
    adapter = build_plugin_manager().adapter(spec["adapter"])
    result: dict[str, Any] = {
        "run_id": spec["run_id"],
        "status": "failed",
        "host": host_info(),
        "versions": distribution_versions(adapter.distributions),
        "fidelity": [entry.to_dict() for entry in adapter.fidelity(workload)],
    }
    context = TrainingContext(workload, spec["seed"], spec["run_dir"], launched_at=spec.get("launched_at"))
    try:
        outcome = adapter.train(workload, context)
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
