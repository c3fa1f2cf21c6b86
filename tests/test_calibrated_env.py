"""The calibrated-cost environment behind the scaling suite: a known CPU cost per step, so the ideal
throughput of k workers is known and recorded next to what a framework reached."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.calibration import CALIBRATED_ENV_ID, ideal_throughput
from rlcompare.harness.counted_envs import make_env
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store


def test_each_step_costs_the_calibrated_cpu_time() -> None:
    env = make_env(CALIBRATED_ENV_ID, {"step_cost_ms": 2.0})
    env.reset(seed=0)
    steps = 100
    started = time.thread_time()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    cpu_per_step_ms = (time.thread_time() - started) / steps * 1000
    assert 2.0 <= cpu_per_step_ms < 3.0
    assert env.spec.max_episode_steps == 500


def test_ideal_throughput_is_workers_over_step_cost() -> None:
    assert ideal_throughput(1.0, 1) == pytest.approx(1000.0)
    assert ideal_throughput(0.5, 4) == pytest.approx(8000.0)


def test_runs_on_the_calibrated_env_record_their_ideal(fake_plugin: Path, tmp_path: Path) -> None:
    workload = workload_from_dict(
        {"id": "calibrated", "env": CALIBRATED_ENV_ID, "env_kwargs": {"step_cost_ms": 1.0}, "algorithm": "PPO",
         "env_steps": 300, "seeds": 1, "hyperparameters": {}, "evaluation": {"episodes": 1, "interval_steps": 300}},
        "test",
    )
    plan = build_plan(build_plugin_manager().plan_catalogue(), [workload], ["fake"])
    with Store(tmp_path / "runs.db") as store:
        [outcome] = LocalRunner(store).run(plan).outcomes
    record = outcome.record
    assert outcome.status == "ok"
    assert record.ideal_throughput == pytest.approx(1000.0)
    # one process stepping at 1 ms of CPU per step cannot beat 1000 steps/s
    assert 0 < record.throughput <= record.ideal_throughput * 1.02


def test_scaling_suite_differs_only_in_workers() -> None:
    """The calibrated arm of the scaling suite (its EnvPool arm is checked in test_envpool)."""
    workloads = [w for w in build_plugin_manager(autoload=False).suite("scaling") if w.env == CALIBRATED_ENV_ID]
    assert [w.parallelism.workers for w in workloads] == [1, 2, 4]
    assert {w.env for w in workloads} == {CALIBRATED_ENV_ID}
    assert {w.parallelism.envs_per_worker for w in workloads} == {1}
    # the same rollout size (env steps per update) at every worker count
    assert {w.rollout_env_steps for w in workloads} == {512}
