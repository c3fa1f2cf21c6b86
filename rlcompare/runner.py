"""The local runner: every run in a fresh interpreter of its own, ``jobs`` at a time, each with a
timeout; the runner measures the process tree and stores each run as soon as it ends.

A run that crashes or times out is stored with its status and the curve points it finished; a
killed driver loses nothing already stored, and ``--resume`` runs only what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcompare.context import read_progress
from rlcompare.plan import Plan, PlannedRun, RefusedPair, run_id_for
from rlcompare.plugins import Origin
from rlcompare.process_tree import RUN_ID_ENV, TreeMonitor, kill_tree
from rlcompare.records import RunRecord
from rlcompare.store import Store
from rlcompare.validity import judge_run
from rlcompare.worker import RESULT_FILE
from rlcompare.workload import Workload

SAMPLE_INTERVAL_SECONDS = 0.1
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass
class RunOutcome:
    run_id: str
    status: str
    record: RunRecord


@dataclass
class RunSummary:
    outcomes: list[RunOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def counts(self) -> Counter[str]:
        return Counter(outcome.status for outcome in self.outcomes)

    @property
    def all_ok(self) -> bool:
        return all(outcome.status == "ok" for outcome in self.outcomes)


@dataclass
class _Active:
    planned: PlannedRun
    process: subprocess.Popen[bytes]
    run_dir: Path
    started: float
    launched_at: float
    monitor: TreeMonitor
    log: Any
    timed_out: bool = False


def worker_environment(planned: PlannedRun) -> dict[str, str]:
    """The run's environment: thread pins identical for every adapter, no inherited Ray address."""
    env = dict(os.environ)
    threads = str(planned.workload.parallelism.threads_per_worker)
    for name in THREAD_ENV_VARS:
        env[name] = threads
    env["PYTHONUNBUFFERED"] = "1"
    env[RUN_ID_ENV] = planned.run_id
    env.pop("RAY_ADDRESS", None)
    return env


class LocalRunner:
    """Runs planned runs as subprocesses on this machine."""

    def __init__(
        self,
        store: Store,
        jobs: int = 1,
        timeout_seconds: float | None = None,
        python: str = sys.executable,
        on_finish: Callable[[RunOutcome], None] | None = None,
        on_start: Callable[[PlannedRun], None] | None = None,
    ) -> None:
        self.store = store
        self.jobs = jobs
        self.timeout_seconds = timeout_seconds
        self.python = python
        self.on_finish = on_finish
        self.on_start = on_start

    def run(self, plan: Plan, resume: bool = False) -> RunSummary:
        summary = RunSummary()
        for refused in plan.refused:
            self.store.save_run(_refused_record(refused))
        done = self.store.finished_digests() if resume else {}
        pending: list[PlannedRun] = []
        for planned in plan.runs:
            if done.get(planned.run_id) == planned.workload.digest:
                summary.skipped.append(planned.run_id)
            else:
                pending.append(planned)
        scratch = Path(tempfile.mkdtemp(prefix="rlcompare-runs-"))
        active: list[_Active] = []
        try:
            while pending or active:
                while pending and len(active) < self.jobs:
                    active.append(self._launch(pending.pop(0), scratch))
                time.sleep(SAMPLE_INTERVAL_SECONDS)
                for run in list(active):
                    run.monitor.sample()
                    if run.process.poll() is None:
                        if self._expired(run):
                            run.timed_out = True
                            kill_tree(run.monitor)
                            run.process.wait()
                        else:
                            continue
                    active.remove(run)
                    summary.outcomes.append(self._finish(run))
        finally:
            for run in active:  # interrupted: stop what is running, keep what finished
                kill_tree(run.monitor)
                run.log.close()
            shutil.rmtree(scratch, ignore_errors=True)
        return summary

    def _expired(self, run: _Active) -> bool:
        limit = self.timeout_seconds
        return limit is not None and time.monotonic() - run.started > limit

    def _launch(self, planned: PlannedRun, scratch: Path) -> _Active:
        run_dir = scratch / planned.run_id
        run_dir.mkdir(parents=True)
        launched_at = time.time()
        spec = {
            "run_id": planned.run_id,
            "adapter": planned.adapter_id,
            "seed": planned.seed,
            "workload": planned.workload.to_dict(),
            "run_dir": str(run_dir),
            "launched_at": launched_at,
        }
        spec_path = run_dir / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        log = (run_dir / "output.log").open("wb")
        started = time.monotonic()
        process = subprocess.Popen(
            [self.python, "-m", "rlcompare.worker", str(spec_path)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=worker_environment(planned),
            start_new_session=True,  # its own process group, so the whole tree can be stopped
        )
        if self.on_start is not None:
            self.on_start(planned)
        return _Active(planned, process, run_dir, started, launched_at, TreeMonitor(process.pid, planned.run_id), log)

    def _finish(self, run: _Active) -> RunOutcome:
        wall = time.monotonic() - run.started
        run.log.close()
        kill_tree(run.monitor)  # whatever the run left behind in its process group or tree goes with it
        result_path = run.run_dir / RESULT_FILE
        result: dict[str, Any] = {}
        if result_path.exists():
            result = json.loads(result_path.read_text(encoding="utf-8"))
        curve = read_progress(run.run_dir / "progress.jsonl")
        record = _run_record(run, result, curve, wall, self.timeout_seconds)
        self.store.save_run(record, curve)
        outcome = RunOutcome(run.planned.run_id, record.status, record)
        if self.on_finish is not None:
            self.on_finish(outcome)
        return outcome


def _output_tail(run_dir: Path, lines: int = 20) -> str:
    path = run_dir / "output.log"
    if not path.exists():
        return ""
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def _run_record(
    run: _Active, result: dict[str, Any], curve: Sequence[dict[str, Any]], wall: float, timeout: float | None
) -> RunRecord:
    planned = run.planned
    workload = planned.workload
    tolerance = planned.budget_tolerance
    status = result.get("status", "failed")
    error = result.get("error")
    if run.timed_out:
        status, error = "timeout", f"killed by the {timeout:g} s timeout after {len(curve)} evaluation points"
    elif not result:
        error = f"worker exited with status {run.process.returncode} and no result"
    training = result.get("training_seconds") or 0.0
    steps = result.get("env_steps")
    framework_steps = result.get("framework_env_steps")
    verdict = None
    if status == "ok":
        verdict = judge_run(
            env_steps=steps, framework_env_steps=framework_steps, budget=workload.env_steps, tolerance=tolerance,
            evaluation_returns=[point.get("return_mean") for point in curve],
            final_return=result.get("final_return_mean"),
        )
        if not verdict.valid:
            status, error = "invalid", "; ".join(verdict.reasons)
    return RunRecord(
        **_identity(workload, planned.adapter_id, planned.framework, planned.seed, planned.origin),
        status=status,
        error=error,
        started_at=run.launched_at,
        finished_at=run.launched_at + wall,
        wall_seconds=wall,
        startup_seconds=result.get("startup_seconds"),
        training_seconds=result.get("training_seconds"),
        evaluation_seconds=result.get("evaluation_seconds"),
        env_steps=steps,
        framework_env_steps=framework_steps,
        step_count_gap=abs(steps - framework_steps) if steps is not None and framework_steps is not None else None,
        step_count_tolerance=tolerance.count_gap_steps,
        budget_granularity=tolerance.granularity,
        budget_overshoot_steps=tolerance.overshoot_steps,
        episodes=result.get("episodes"),
        evaluations=len(curve),
        throughput=(steps / training) if steps and training > 0 else None,
        ideal_throughput=workload_ideal_throughput(workload),
        cpu_seconds=run.monitor.cpu_seconds,
        peak_rss_bytes=run.monitor.peak_rss_bytes,
        final_return_mean=result.get("final_return_mean") if status == "ok" else None,
        final_return_std=result.get("final_return_std") if status == "ok" else None,
        success_threshold=workload.success_threshold,
        budget_env_steps=workload.env_steps,
        torch_threads=result.get("torch_threads"),
        host_fingerprint=(result.get("host") or {}).get("fingerprint"),
        versions_json=result.get("versions"),
        host_json=result.get("host"),
        fidelity_json=result.get("fidelity"),
        native_config_json=result.get("native_config"),
        validity_json=None if verdict is None else verdict.to_dict(),
        traceback=result.get("traceback") or (_output_tail(run.run_dir) if status not in ("ok", "invalid") else None),
    )


def workload_ideal_throughput(workload: Workload) -> float | None:
    """Known ideal env steps/s on a calibrated environment (None elsewhere)."""
    from rlcompare.envs import CALIBRATED_ENV_ID, ideal_throughput

    if workload.env != CALIBRATED_ENV_ID:
        return None
    step_cost_ms = float(workload.env_kwargs.get("step_cost_ms", 1.0))
    return ideal_throughput(step_cost_ms, workload.parallelism.workers)


def _refused_record(refused: RefusedPair) -> RunRecord:
    workload = refused.workload
    return RunRecord(
        **_identity(workload, refused.adapter_id, refused.framework, -1, refused.origin),
        status="unsupported",
        error=refused.reason,
        success_threshold=workload.success_threshold,
        budget_env_steps=workload.env_steps,
    )


def _identity(workload: Workload, adapter_id: str, framework: str, seed: int, origin: Origin) -> dict[str, Any]:
    """The fields that say which run a record is and which code produced it."""
    return {
        "run_id": run_id_for(workload.id, adapter_id, seed), "workload_id": workload.id,
        "workload_digest": workload.digest, "adapter": adapter_id, "framework": framework,
        "algorithm": workload.algorithm, "env_id": workload.env, "seed": seed,
        "adapter_plugin": origin.plugin, "adapter_distribution": origin.distribution,
        "adapter_version": origin.version, "workload_json": workload.to_dict(),
    }
