"""Run validity: each rule, the tolerances that follow from the workload and the adapter, and the
verdict stored with every run (including runs of a version-1 store, judged when it is upgraded)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rlcompare.adapter import Adapter
from rlcompare.harness.validity import BudgetTolerance, judge_run
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import SCHEMA_VERSION, Store

PPO = {"id": "p", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 10_000,
       "parallelism": {"envs_per_worker": 4}, "hyperparameters": {"rollout_steps": 128}}
DQN = {"id": "d", "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 10_000,
       "parallelism": {"envs_per_worker": 2}, "hyperparameters": {"train_every": 8}}


def _judge(steps: int | None, framework: int | None, tolerance: BudgetTolerance, returns=(1.0,), final=1.0):
    return judge_run(env_steps=steps, framework_env_steps=framework, budget=10_000, tolerance=tolerance,
                     evaluation_returns=list(returns), final_return=final)


def test_the_default_tolerance_is_one_rollout_or_update_interval_of_every_env() -> None:
    ppo = workload_from_dict(PPO, "t")
    assert BudgetTolerance.for_workload(ppo) == BudgetTolerance("rollout", 512, 512)  # 128 x 4 envs
    assert BudgetTolerance.for_workload(workload_from_dict(DQN, "t")) == BudgetTolerance("update", 16, 16)
    asynchronous = workload_from_dict({**PPO, "parallelism": {"envs_per_worker": 4, "mode": "async"}}, "t")
    # the batch learned from and up to two more of every env in flight
    assert BudgetTolerance.for_workload(asynchronous).overshoot_steps == 3 * 512


def test_a_run_within_its_tolerance_is_valid() -> None:
    tolerance = BudgetTolerance("rollout", 512, 512)
    for steps in (9_488, 10_000, 10_512):
        verdict = _judge(steps, steps - 100, tolerance)
        assert verdict.valid, verdict.summary()
    assert _judge(10_240, 10_240, tolerance).summary() == "valid"


@pytest.mark.parametrize(("steps", "framework", "returns", "final", "expected"), [
    (0, 10_000, (1.0,), 1.0, "the harness counted 0 env steps"),
    (20_000, 20_000, (1.0,), 1.0, "20000 env steps, 10000 past the budget of 10000; one rollout allows 512"),
    (9_000, 9_000, (1.0,), 1.0, "9000 env steps, 1000 short of the budget of 10000"),
    (10_000, 100_000, (1.0,), 1.0, "a gap of 90000, more than the 512 allowed"),
    (10_000, None, (1.0,), 1.0, "the adapter reported no framework step count"),
    (10_000, 10_000, (), None, "no evaluation happened"),
    (10_000, 10_000, (1.0, float("nan")), 1.0, "1 evaluation returns are not finite numbers"),
    (10_000, 10_000, (1.0,), float("inf"), "1 evaluation returns are not finite numbers"),
])
def test_each_broken_rule_makes_the_run_invalid_with_its_reason(steps, framework, returns, final, expected) -> None:
    verdict = _judge(steps, framework, BudgetTolerance("rollout", 512, 512), returns, final)
    assert not verdict.valid
    assert any(expected in reason for reason in verdict.reasons), verdict.reasons
    data = verdict.to_dict()
    assert data["valid"] is False and len(data["checks"]) == 5


def test_tolerances_are_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="granularity must be one of"):
        BudgetTolerance("forever", 1, 1)
    with pytest.raises(ValueError, match="overshoot_steps must be a non-negative"):
        BudgetTolerance("episode", -1, 0)


def test_every_builtin_adapter_declares_a_tolerance_for_every_builtin_workload_it_runs() -> None:
    plugins = build_plugin_manager(autoload=False)
    for adapter_class in plugins.adapters.values():
        adapter: Adapter = adapter_class()
        for workload in plugins.workloads.values():
            if adapter.capabilities().refusal(workload, None) is None:
                tolerance = adapter.budget_tolerance(workload)
                assert tolerance.overshoot_steps >= 1 and tolerance.count_gap_steps >= 1, (adapter.id, workload.id)


V1_RUNS = """CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, workload_id TEXT NOT NULL, workload_digest TEXT NOT NULL, adapter TEXT NOT NULL,
    framework TEXT NOT NULL, algorithm TEXT NOT NULL, env_id TEXT NOT NULL, seed INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unsupported')), error TEXT,
    env_steps INTEGER, framework_env_steps INTEGER, final_return_mean REAL, budget_env_steps INTEGER,
    workload_json TEXT NOT NULL)"""
V1_CURVES = """CREATE TABLE curves (run_id TEXT NOT NULL, env_steps INTEGER NOT NULL, framework_env_steps INTEGER,
    train_seconds REAL NOT NULL, return_mean REAL NOT NULL, return_std REAL NOT NULL, episode_length_mean REAL,
    returns_json TEXT NOT NULL, PRIMARY KEY (run_id, env_steps))"""


def _v1_store(path: Path) -> Path:
    workload = workload_from_dict(PPO, "t")
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        connection.execute(V1_RUNS)
        connection.execute(V1_CURVES)
        for run_id, steps, framework in (("p__a__s0", 10_000, 10_000), ("p__a__s1", 25_000, 25_000)):
            connection.execute(
                "INSERT INTO runs VALUES (?, 'p', ?, 'a', 'a-fw', 'PPO', 'CartPole-v1', 0, 'ok', NULL, ?, ?, 9.0, "
                "10000, ?)", (run_id, workload.digest, steps, framework, json.dumps(workload.to_dict())))
            connection.execute("INSERT INTO curves VALUES (?, ?, ?, 1.0, 9.0, 0.0, 9.0, '[]')", (run_id, steps, framework))
    connection.close()
    return path


def test_a_version_1_store_is_read_upgraded_without_changing_the_file(tmp_path: Path) -> None:
    path = _v1_store(tmp_path / "old.db")
    before = path.read_bytes()
    with Store(path) as store:
        runs = store.runs_frame().set_index("run_id")
    assert runs.loc["p__a__s0", "status"] == "ok"
    assert runs.loc["p__a__s1", "status"] == "invalid" and "past the budget" in runs.loc["p__a__s1", "error"]
    assert json.loads(runs.loc["p__a__s0", "validity_json"])["valid"] is True
    assert path.read_bytes() == before


def test_a_version_1_store_is_migrated_when_written(tmp_path: Path) -> None:
    path = _v1_store(tmp_path / "old.db")
    with Store(path) as store:
        store.create()
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    status = dict(connection.execute("SELECT run_id, status FROM runs"))
    assert status == {"p__a__s0": "ok", "p__a__s1": "invalid"}
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert connection.execute("SELECT count(*) FROM curves").fetchone() == (2,)


def test_a_workload_with_other_seeds_is_serialized_with_them_even_after_the_original_was() -> None:
    workload = workload_from_dict(PPO, "t")
    assert workload.to_dict()["seeds"] == 2 and workload.digest  # both made and kept
    more = workload.with_seeds(7)
    assert more.to_dict()["seeds"] == 7 and json.loads(more.json_text)["seeds"] == 7
    assert more.digest == workload.digest  # the seed count is not part of what shapes a run
