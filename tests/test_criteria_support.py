"""Synthetic stores for the criteria and scoring tests: runs written with Store.save_run, no training."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlcompare.harness.protocol import CurvePoint
from rlcompare.store.records import RunRecord
from rlcompare.store.sqlite_store import Store

BUILTINS_WITH_CRITERIA = ("rlcompare_criteria.performance", "rlcompare_criteria.development")
#: The plugins these tests score with (not BUILTIN_PLUGINS, which lists adapters whose frameworks
#: may be absent here).
TEST_BUILTINS = ("rlcompare.builtins.workloads", "rlcompare_sb3", *BUILTINS_WITH_CRITERIA)


def workload_spec(workload_id: str, env: str = "CartPole-v1", algorithm: str = "PPO", env_steps: int = 1000,
                  workers: int = 1, envs_per_worker: int = 1, threshold: float | None = None) -> dict[str, Any]:
    return {
        "id": workload_id, "env": env, "algorithm": algorithm, "env_steps": env_steps, "seeds": 3,
        "parallelism": {"workers": workers, "envs_per_worker": envs_per_worker, "mode": "sync",
                        "threads_per_worker": 1},
        "success_threshold": threshold,
    }


def run_record(workload: dict[str, Any], adapter: str, seed: int, status: str = "ok", *,
               framework: str | None = None, final_return: float | None = None, throughput: float | None = None,
               startup: float | None = None, training: float | None = None, peak_rss: int | None = None,
               error: str | None = None, finished_at: float = 1_700_000_000.0) -> RunRecord:
    digest = hashlib.sha256(json.dumps(workload, sort_keys=True).encode()).hexdigest()[:16]
    return RunRecord(
        run_id=f"{workload['id']}__{adapter}__s{seed}", workload_id=workload["id"], workload_digest=digest,
        adapter=adapter, framework=framework or f"{adapter}-fw", algorithm=workload["algorithm"],
        env_id=workload["env"], seed=seed, status=status, error=error, finished_at=finished_at,
        startup_seconds=startup, training_seconds=training, throughput=throughput,
        peak_rss_bytes=peak_rss, final_return_mean=final_return if status == "ok" else None,
        success_threshold=workload.get("success_threshold"), budget_env_steps=workload["env_steps"],
        env_steps=workload["env_steps"], workload_json=workload,
    )


def curve(points: Sequence[tuple[int, float, float]]) -> list[CurvePoint]:
    """Curve points from (env_steps, train_seconds, return_mean)."""
    return [CurvePoint(env_steps=steps, framework_env_steps=None, train_seconds=seconds, return_mean=value,
                       return_std=0.0, returns=(), episode_length_mean=math.nan)
            for steps, seconds, value in points]


def write_store(path: Path, runs: Sequence[tuple[RunRecord, list[CurvePoint]]]) -> Path:
    with Store(path) as store:
        for run, points in runs:
            store.save_run(run, points)
    return path


def test_run_record_round_trips(tmp_path: Path) -> None:
    spec = workload_spec("w")
    path = write_store(tmp_path / "s.db", [(run_record(spec, "a", 0, final_return=1.0), curve([(0, 0.0, 0.0)]))])
    with Store(path) as store:
        runs = store.runs_frame()
        assert runs.loc[0, "run_id"] == "w__a__s0"
        assert len(store.curves_frame()) == 1
