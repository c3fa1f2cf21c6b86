"""``stop_when_solved``: a run ends at its first evaluation at the success threshold (seconds-to-solve
studies need nothing after it), and is valid short of its budget only where the harness's own curve
shows that evaluation; an adapter that stops short on its own is still invalid."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from rlcompare.errors import InvalidWorkloadError
from rlcompare.harness.validity import BudgetTolerance, judge_run, solved_at
from rlcompare.spec.workload import workload_from_dict
from rlcompare.studies.loading import builtin_studies
from tests.conftest import run_cli

BASE = {"id": "w", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 4_000,
        "hyperparameters": {"rollout_steps": 64}, "evaluation": {"interval_steps": 512, "episodes": 2}}
GRAIN = BudgetTolerance("rollout", 64, 64)


def _judge(steps: int, solved: int | None):
    return judge_run(env_steps=steps, framework_env_steps=steps, budget=4_000, tolerance=GRAIN,
                     evaluation_returns=[10.0, 30.0], final_return=30.0, solved_at=solved)


def test_the_field_needs_a_threshold_and_leaves_other_workloads_digests_alone() -> None:
    with pytest.raises(InvalidWorkloadError, match="stop_when_solved"):
        workload_from_dict({**BASE, "stop_when_solved": True}, "t")
    plain = workload_from_dict({**BASE, "success_threshold": 20.0}, "t")
    stopping = workload_from_dict({**BASE, "success_threshold": 20.0, "stop_when_solved": True}, "t")
    assert "stop_when_solved" not in plain.to_dict()  # written only where it says something
    assert stopping.to_dict()["stop_when_solved"] is True
    assert plain.digest != stopping.digest  # it shapes the runs, so it is part of what they are


def test_the_solving_point_is_read_from_the_curve_past_the_untrained_policy() -> None:
    curve = [(0, 0, 50.0), (512, 530, 10.0), (1024, 1040, 25.0), (1536, 1550, 40.0)]
    assert solved_at(curve, 20.0, True) == 1040  # not grid point 0, where the untrained policy was lucky
    assert solved_at(curve, 20.0, False) is None
    assert solved_at(curve, None, True) is None
    assert solved_at(curve, 100.0, True) is None
    assert solved_at([(None, 0, 50.0), (None, 700, float("nan")), (None, 900, 21.0)], 20.0, True) == 900


def test_a_run_stopped_at_its_solving_evaluation_is_valid_and_one_stopped_elsewhere_is_not() -> None:
    stopped = _judge(1_040, 1_040)
    assert stopped.valid, stopped.summary()
    assert "stopped when solved (an evaluation at 1040 env steps" in stopped.to_dict()["checks"][1]["detail"]
    assert _judge(1_040 + 64, 1_040).valid  # an asynchronous loop stops within one budget grain after
    for steps, solved in ((1_040 + 65, 1_040), (1_000, 1_040), (1_040, None)):
        verdict = _judge(steps, solved)
        assert not verdict.valid
        assert any("short of the budget of 4000" in reason for reason in verdict.reasons), verdict.reasons


@settings(max_examples=200, deadline=None)
@given(steps=st.integers(0, 10_000), solved=st.one_of(st.none(), st.integers(1, 10_000)))
def test_the_rule_only_ever_widens_the_window_down_to_a_solving_point(steps: int, solved: int | None) -> None:
    plain = _judge(steps, None).valid
    with_stop = _judge(steps, solved).valid
    if plain:
        assert with_stop  # a run within its budget stays valid whatever it solved
    elif with_stop:
        assert solved is not None and solved <= steps <= solved + GRAIN.overshoot_steps and steps < 4_000


def _runs(store: Path) -> list[dict]:
    with sqlite3.connect(store) as connection:
        connection.row_factory = sqlite3.Row
        rows = [dict(row) for row in connection.execute("SELECT * FROM runs ORDER BY run_id")]
        for row in rows:
            row["curve"] = [tuple(point) for point in connection.execute(
                "SELECT grid_steps, env_steps, return_mean FROM curves WHERE run_id = ? ORDER BY env_steps",
                (row["run_id"],))]
    return rows


def test_the_harness_stops_a_framework_loop_that_knows_nothing_of_it(fake_plugin: Path, tmp_path: Path) -> None:
    """The fake adapter steps at random until its budget and never looks for a stop: the checkpoint's
    stop unwinds its loop, the worker keeps the solving policy, and the run is valid short of its
    budget. Random CartPole play averages about 22, so a threshold of 15 is reached within a few
    evaluations; with 500 it is never reached and the run trains its whole budget."""
    for threshold, name in ((15.0, "low"), (500.0, "high")):
        spec = {**BASE, "id": name, "seeds": 1, "success_threshold": threshold, "stop_when_solved": True,
                "evaluation": {"interval_steps": 512, "episodes": 5}}
        (tmp_path / f"{name}.toml").write_text(tomli_w.dumps(spec), encoding="utf-8")
        done = run_cli(["run", "--workload", str(tmp_path / f"{name}.toml"), "--adapters", "fake",
                        "--store", str(tmp_path / "runs.db"), "--no-parity"])
        assert done.returncode == 0, done.stderr
    low, high = _runs(tmp_path / "runs.db")[1], _runs(tmp_path / "runs.db")[0]
    assert low["workload_id"] == "low" and high["workload_id"] == "high"
    assert low["status"] == "ok", low["error"]
    # stopped at the first grid point past 0 whose evaluation reached 15, right there
    *before, (grid, steps, mean) = low["curve"]
    assert steps == low["env_steps"] < 4_000 and grid == steps and mean >= 15.0
    assert all(point[2] < 15.0 for point in before if point[0] > 0)
    assert mean == low["final_return_mean"]  # the solving evaluation is the run's final one
    assert "stopped when solved" in json.loads(low["validity_json"])["checks"][1]["detail"]
    assert high["status"] == "ok" and high["env_steps"] == 4_000
    assert all(point[2] < 500.0 for point in high["curve"])


def test_an_adapter_that_never_steps_gains_nothing_from_a_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The outside 'idle' cheat reports its budget done without stepping: with a threshold its random
    policy reaches at once, no evaluation past the start happened, so nothing excuses its short run."""
    cheats = Path(__file__).resolve().parent / "plugins" / "cheats"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(cheats), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    spec = {**BASE, "id": "idle-w", "seeds": 1, "success_threshold": 5.0, "stop_when_solved": True}
    (tmp_path / "w.toml").write_text(tomli_w.dumps(spec), encoding="utf-8")
    run_cli(["run", "--workload", str(tmp_path / "w.toml"), "--adapters", "idle",
             "--store", str(tmp_path / "runs.db"), "--no-parity"])
    (run,) = _runs(tmp_path / "runs.db")
    assert run["status"] == "invalid"
    assert "short of the budget of 4000" in run["error"]


def test_the_seconds_to_solve_study_stops_when_solved_in_every_cell() -> None:
    study = next(study for study in builtin_studies() if study.id == "tianshou-2020")
    for cell in study.cells:
        workload = workload_from_dict(study.workload_dict(cell.id), "t")
        assert workload.stop_when_solved and workload.success_threshold == cell.success_threshold
    with pytest.raises(ValueError, match="stop_when_solved"):
        type(study.cells[0]).model_validate({"id": "c", "env": "CartPole-v1", "algorithm": "PPO",
                                             "env_steps": 10, "stop_when_solved": True})


@pytest.mark.framework
def test_a_real_framework_stops_inside_its_own_loop_and_keeps_its_native_configuration(tmp_path: Path) -> None:
    """SB3's ``learn`` is left at its callback's solving evaluation (the adapter's ``until_solved``):
    the run records SB3's own step count and configuration, as after a full budget."""
    spec = {**BASE, "id": "sb3-stop", "seeds": 1, "success_threshold": 15.0, "stop_when_solved": True,
            "env_steps": 20_000, "evaluation": {"interval_steps": 512, "episodes": 3}}
    (tmp_path / "w.toml").write_text(tomli_w.dumps(spec), encoding="utf-8")
    done = run_cli(["run", "--workload", str(tmp_path / "w.toml"), "--adapters", "sb3",
                    "--store", str(tmp_path / "runs.db"), "--no-parity"])
    assert done.returncode == 0, done.stderr
    (run,) = _runs(tmp_path / "runs.db")
    assert run["status"] == "ok", run["error"]
    assert run["env_steps"] < 20_000 and run["framework_env_steps"] == run["env_steps"]
    assert json.loads(run["native_config_json"])["class"] == "stable_baselines3.PPO"
    assert run["curve"][-1][1] == run["env_steps"] and run["curve"][-1][2] >= 15.0
