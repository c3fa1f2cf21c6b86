"""The entry point of one run's own process: ``python -m rlcompare.harness.worker SPEC.json``.

The runner starts a fresh interpreter per run and hands it the run spec as JSON (never a fork of
the driver), so a framework with dependencies that conflict with rlcompare's runs under its own
Python environment (:mod:`rlcompare.pyenvs`). The worker is minimal: the driver validated the
workload, resolved the adapter and computed its fidelity report, so the spec carries plain data
(the resolved workload, the adapter's ``module:qualname``, the fidelity report, the budget
tolerance, the distributions to record) and the worker needs only the standard library, numpy,
gymnasium, the harness's light modules and the adapter's own module: no pydantic, no pluggy, no
plugin manager, no registry.
The worker writes its outcome to ``result.json`` in the run directory; the curve is appended to
``progress.jsonl`` as it is measured, so a crash keeps every finished evaluation point.
"""

from __future__ import annotations

# ruff: noqa: E402 - run as ``python -m``, the current directory leaves the import path first of all
from rlcompare.harness.import_path import drop_current_directory

if __name__ == "__main__":
    drop_current_directory()  # before numpy, gymnasium, the adapter and its framework are imported

import dataclasses
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from rlcompare.harness.contract import Adapter, TrainingResult
from rlcompare.harness.driver_watch import ATTEMPT_ENV, watch_driver
from rlcompare.harness.framework_import import measure_in_this_interpreter
from rlcompare.harness.host import distribution_versions, host_info, loaded_versions
from rlcompare.harness.preloaded import forked_from
from rlcompare.harness.protocol import RunResult, RunSpec
from rlcompare.harness.run_directory import RunDirectory
from rlcompare.harness.workload_view import workload_view


def load_adapter_class(reference: str) -> type[Adapter]:
    """The adapter class a spec names as ``module:qualname`` (importing only that module)."""
    module_name, _, qualname = str(reference).partition(":")
    if not module_name or not qualname:
        raise ValueError(f"the run spec's adapter_class must be 'module:qualname', got {reference!r}")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, Adapter)):
        raise TypeError(f"{reference} is not an rlcompare adapter class")
    return target


def run_spec(spec: RunSpec) -> list[RunResult]:
    """Train and evaluate the spec's run as it says, and with it the companions of its program
    (``parallelism.seeds_per_program``: the adapter's :meth:`~rlcompare.harness.contract.Adapter.train_seeds`,
    one context per run, their training clocks shared); return one result per run, the spec's own first.
    A run of a program records how many seeds the program trained."""
    from rlcompare.harness.context import TrainingContext  # numpy, gymnasium: after the timed import

    workload = workload_view(spec.workload, spec.workload_derived)
    members = [(spec.run_id, spec.seed, spec.run_dir)] + [
        (companion["run_id"], companion["seed"], companion["run_dir"]) for companion in spec.companions]
    together = len(members) > 1
    shared = {"host": host_info(), "versions": distribution_versions(spec.distributions), "fidelity": spec.fidelity}
    results = [RunResult(run_id=run_id, status="failed", seeds_in_program=len(members) if together else None,
                         **shared) for run_id, _seed, _run_dir in members]
    contexts = [TrainingContext(workload, seed, run_dir, launched_at=spec.launched_at)
                for _run_id, seed, run_dir in members]
    if together:
        TrainingContext.share_clocks(contexts)
    try:
        adapter = load_adapter_class(spec.adapter_class)()
        try:
            outcomes = adapter.train_seeds(workload, contexts) if together else [_train(adapter, workload, contexts[0])]
        finally:
            for context in contexts:
                context.stop_training()
        if len(outcomes) != len(contexts):
            raise RuntimeError(f"train_seeds returned {len(outcomes)} results for {len(contexts)} seeds")
        for index, (context, outcome) in enumerate(zip(contexts, outcomes, strict=True)):
            final = context.final_evaluation(outcome.policy, outcome.framework_env_steps)
            results[index] = dataclasses.replace(
                results[index], status="ok", framework_env_steps=outcome.framework_env_steps,
                native_config=outcome.native_config, final_return_mean=final.return_mean,
                final_return_std=final.return_std)
    except Exception as exc:  # noqa: BLE001 - any failure of a framework fails the runs not finished, stored
        results = [result if result.status == "ok" else
                   dataclasses.replace(result, error=_first_line(exc), traceback=traceback.format_exc())
                   for result in results]
    finally:
        for index, context in enumerate(contexts):
            context.stop_training()
            measured = context.summary()
            context.close()
            # gymnasium and numpy as imported by this run
            results[index] = dataclasses.replace(results[index], **measured,
                                                 versions={**results[index].versions, **loaded_versions()})
    return results


def _train(adapter: Adapter, workload: Any, context: Any) -> TrainingResult:
    """One run's training by the adapter's ``train``; with ``stop_when_solved``, the evaluation that solved is
    the run's last and its policy the trained one."""
    from rlcompare.harness.context import SolvedStop

    try:
        return adapter.train(workload, context)
    except SolvedStop:
        assert context.solved_policy is not None
        return TrainingResult(policy=context.solved_policy, framework_env_steps=context.solved_framework_env_steps)


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:500]


def measure_framework(data: Any) -> dict[str, Any] | None:
    """The framework's cold import, timed first thing in this fresh interpreter (before numpy,
    gymnasium and the harness's own modules, as a fresh interpreter of the cold-import criterion
    times it), and its public API walked: what the development criteria read from the store instead
    of starting interpreters of their own (:mod:`rlcompare.harness.framework_import`). None when the
    spec names no framework modules."""
    modules = data.get("framework_modules") if isinstance(data, dict) else None
    if not isinstance(modules, list) or not modules or not all(isinstance(name, str) for name in modules):
        return None
    preloaded = forked_from()
    if preloaded is not None:
        # a warm start: the parent imported these first thing, as this function does in a cold worker
        if list(preloaded.modules) != modules or preloaded.measurement is None:
            return None
        return {**preloaded.measurement, "warm_start": {"preload_seconds": preloaded.seconds, "parent": preloaded.parent}}
    return measure_in_this_interpreter(modules)


def with_preload(result: RunResult, launched_at: float) -> RunResult:
    """``result`` with a cold start's start-up, in a warm start: the parent's preload (the interpreter's
    start and the framework's import, which a cold worker spends after its launch) and the run's own
    time from its fork, instead of its time since the driver launched it (which, for a parent's first
    run, includes the parent's start)."""
    preloaded = forked_from()
    if preloaded is None or result.startup_seconds is None:
        return result
    waited = max(0.0, preloaded.forked_at - launched_at)
    return dataclasses.replace(result, startup_seconds=result.startup_seconds - waited + preloaded.seconds)


def main(argv: list[str] | None = None) -> int:
    watch_driver()  # first: a worker whose driver dies stops, whatever it is doing
    argv = sys.argv[1:] if argv is None else argv
    data = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    started = time.time()
    run_id = str(data.get("run_id")) if isinstance(data, dict) else "?"
    if isinstance(data, dict) and isinstance(data.get("run_dir"), str):
        # every process this run starts is marked with the attempt, whatever backend started it
        os.environ.setdefault(ATTEMPT_ENV, data["run_dir"])
    development = measure_framework(data)
    launched = data.get("launched_at") if isinstance(data, dict) else None
    launched_at = float(launched) if isinstance(launched, (int, float)) else started
    companions: list[tuple[Path, RunResult]] = []
    try:
        spec = RunSpec.from_dict(data)
        # several seeds in one program: each companion's result goes to its own directory
        result, *others = run_spec(spec)
        companions = [(Path(companion["run_dir"]), other)
                      for companion, other in zip(spec.companions, others, strict=True)]
    except Exception as exc:  # noqa: BLE001 - e.g. the adapter's plugin vanished; still a result
        result = RunResult(run_id=run_id, status="failed", error=_first_line(exc), traceback=traceback.format_exc())
    for run_dir, other in companions:
        RunDirectory(run_dir).write_result(
            dataclasses.replace(with_preload(other, launched_at), worker_seconds=time.time() - started, development=development))
    result = dataclasses.replace(with_preload(result, launched_at), worker_seconds=time.time() - started, development=development)
    # atomic and synced: the driver (or the next one, if this one died) never reads half a result
    RunDirectory(Path(data["run_dir"])).write_result(result)
    sys.stdout.flush()
    # Frameworks sometimes leave non-daemon threads behind; the result is safe, so leave now.
    os._exit(0 if result.status == "ok" else 1)


if __name__ == "__main__":
    raise SystemExit(main())
