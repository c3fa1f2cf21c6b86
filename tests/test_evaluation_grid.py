"""Evaluation on a common grid: every adapter is evaluated at the first update boundary at or after
each multiple of the evaluation interval, and each point records the grid point it stands for and
the updates made before it.

The harness's rule is tested on the harness itself (a training context stepped by hand, as an
adapter that checkpoints after every env step, one that checkpoints after every update, and one
that traces no update), then on real frameworks: SB3, whose callback checkpoints after every env
step, and skrl, which checkpoints after every update, on one tiny CartPole PPO workload.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rlcompare.harness.context import TrainingContext
from rlcompare.harness.evaluation import EvaluationGrid
from rlcompare.harness.protocol import CurvePoint
from rlcompare.spec.evaluation_grid import interval_warning, interval_warnings
from rlcompare.spec.workload import Workload, workload_from_dict

ENVS, ROLLOUT = 4, 64
UPDATE = ENVS * ROLLOUT  # env steps one PPO update covers


def _workload(interval: int, env_steps: int = 5 * UPDATE, **extra: object) -> Workload:
    return workload_from_dict({
        "id": "grid", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": env_steps, "seeds": 1,
        "parallelism": {"envs_per_worker": ENVS},
        "hyperparameters": {"rollout_steps": ROLLOUT, "minibatch_size": 64, "epochs": 1},
        "evaluation": {"interval_steps": interval, "episodes": 1}, **extra}, "test")


def _random_policy(observations: np.ndarray) -> np.ndarray:
    return np.zeros(len(observations), dtype=np.int64)


def _train(workload: Workload, run_dir: Path, *, checkpoint_every_step: bool, traces_updates: bool,
           trace_at_update_start: bool = True) -> list[CurvePoint]:
    """Step the workload's envs by hand as a PPO loop would (a rollout of every env, then an update)
    and call the harness the way an adapter of each kind does."""
    context = TrainingContext(workload, seed=0, run_dir=run_dir)
    envs = [factory() for factory in context.env_factories()]
    for slot, env in enumerate(envs):
        env.reset(seed=slot)
    context.start_training()
    if not checkpoint_every_step:
        context.checkpoint(_random_policy, 0)  # train_with_setup: step 0, then after every update
    try:
        while not context.budget_reached:
            for _ in range(ROLLOUT):
                for env in envs:
                    _, _, terminated, truncated, _ = env.step(0)
                    if terminated or truncated:
                        env.reset()
                if checkpoint_every_step:  # SB3's callback: after every step of the vector env
                    context.checkpoint(_random_policy, context.env_steps)
            if traces_updates and trace_at_update_start:
                context.trace("update")  # SB3 traces train() as it starts
            # ... the update itself ...
            if traces_updates and not trace_at_update_start:
                context.trace("update")  # RLlib, TorchRL: once it is done
            if not checkpoint_every_step:
                context.checkpoint(_random_policy, context.env_steps)
        context.final_evaluation(_random_policy, context.env_steps)
    finally:
        for env in envs:
            env.close()
        context.close()
    return context.curve


def _grid(curve: list[CurvePoint]) -> list[tuple[int | None, int | None]]:
    return [(point.grid_steps, point.updates) for point in curve]


# -- the rule, on the harness ---------------------------------------------------------------------------


def test_an_adapter_that_checkpoints_every_step_is_evaluated_after_the_same_updates(tmp_path: Path) -> None:
    """The quick suite's old situation: an interval (1,000 here) that is not a multiple of the update
    (256): SB3 used to be evaluated mid-rollout, one update short of the others."""
    workload = _workload(interval=1_000)
    every_step = _train(workload, tmp_path / "sb3-like", checkpoint_every_step=True, traces_updates=True)
    every_update = _train(workload, tmp_path / "skrl-like", checkpoint_every_step=False, traces_updates=True,
                          trace_at_update_start=False)
    # the same grid points, after the same number of updates: the first boundary at or after 1,000 is
    # update 4 (1,024 env steps), the end of training (update 5, 1,280) is off the grid
    expected = [(0, None), (1_000, 4), (None, 5)]
    assert _grid(every_step) == _grid(every_update) == expected
    assert [point.env_steps for point in every_update] == [0, 1_024, 1_280]
    # SB3-like: made at the first env step after the update (one step of each of the 4 envs)
    assert [point.env_steps for point in every_step] == [ENVS, 1_024 + ENVS, 1_280]


def test_on_an_interval_that_is_a_multiple_of_the_update_every_point_is_an_update_boundary(tmp_path: Path) -> None:
    workload = _workload(interval=2 * UPDATE, env_steps=6 * UPDATE)
    every_step = _train(workload, tmp_path / "a", checkpoint_every_step=True, traces_updates=True)
    every_update = _train(workload, tmp_path / "b", checkpoint_every_step=False, traces_updates=True)
    expected = [(0, None), (512, 2), (1_024, 4), (1_536, 6)]  # the last: the final evaluation, on the grid
    assert _grid(every_step) == _grid(every_update) == expected
    assert [p.env_steps for p in every_update] == [0, 512, 1_024, 1_536]


def test_an_adapter_that_traces_no_update_is_evaluated_at_the_first_checkpoint_as_before(tmp_path: Path) -> None:
    workload = _workload(interval=1_000)
    curve = _train(workload, tmp_path / "untraced", checkpoint_every_step=True, traces_updates=False)
    # today's rule: the first checkpoint at or after 1,000 (a vector step of 4 envs lands on 1,000)
    assert [p.env_steps for p in curve] == [ENVS, 1_000, 1_280]
    assert _grid(curve) == [(0, None), (1_000, None), (None, None)]  # no update count: placed by the checkpoint


def test_points_are_written_with_their_grid_point_and_updates(tmp_path: Path) -> None:
    workload = _workload(interval=1_000)
    _train(workload, tmp_path / "run", checkpoint_every_step=False, traces_updates=True)
    lines = (tmp_path / "run" / "progress.jsonl").read_text(encoding="utf-8").splitlines()
    written = [CurvePoint.from_dict(json.loads(line)) for line in lines]
    assert _grid(written) == [(0, None), (1_000, 4), (None, 5)]


def test_the_grid_rule_waits_for_an_update_at_or_after_the_point() -> None:
    grid = EvaluationGrid(interval=1_000, at_start=True)
    assert grid.due(env_steps=4, updates=0, last_update_at=None) == 0  # before any update: at once
    grid.taken(0)
    assert grid.due(env_steps=996, updates=3, last_update_at=768) is None  # not yet at the point
    assert grid.due(env_steps=1_004, updates=3, last_update_at=768) is None  # past it, mid-rollout: wait
    assert grid.due(env_steps=1_028, updates=4, last_update_at=1_024) == 1_000
    grid.taken(1_000)
    # one update covering several points (evolution strategies): stands for the last of them
    assert grid.due(env_steps=3_500, updates=5, last_update_at=3_500) == 3_000
    grid.taken(3_000)
    assert grid.next_point == 4_000
    assert grid.final(3_900) is None and grid.final(4_100) == 4_000
    late = EvaluationGrid(interval=1_000, at_start=False)
    assert late.due(env_steps=500, updates=0, last_update_at=None) is None
    with pytest.raises(ValueError, match="positive"):
        EvaluationGrid(interval=0, at_start=True)


def test_curve_points_of_older_progress_files_read_without_grid_figures() -> None:
    old = {"env_steps": 5_000, "framework_env_steps": 5_000, "train_seconds": 1.0, "return_mean": 9.0,
           "return_std": 1.0, "returns": [9.0], "episode_length_mean": 9.0}
    point = CurvePoint.from_dict(old)
    assert point.grid_steps is None and point.updates is None


# -- suites and the plan-time warning -------------------------------------------------------------------


def test_builtin_workloads_evaluate_on_update_boundaries() -> None:
    from rlcompare.spec.builtin_workloads import builtin_workloads

    workloads = builtin_workloads()
    for workload in workloads:
        if workload.family.granularity in ("rollout", "update"):
            assert workload.evaluation.interval_steps % workload.rollout_env_steps == 0, workload.id
    assert interval_warnings(workloads) == []
    quick = next(w for w in workloads if w.id == "cartpole-ppo-quick")
    assert quick.evaluation.interval_steps == 5_120 == 20 * quick.rollout_env_steps


def test_an_interval_off_the_update_size_is_warned_about_not_refused() -> None:
    workload = _workload(interval=1_000)
    line = interval_warning(workload)
    assert line is not None and "grid" in line and "1,000" in line and "(256 env steps)" in line
    assert "768 or 1,024" in line
    assert interval_warning(_workload(interval=1_024)) is None
    assert interval_warnings([workload, workload]) == [line]  # once per workload


def test_plan_prints_the_interval_warning_once_per_workload(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from rlcompare.cli.main import main

    spec = tmp_path / "off-grid.toml"
    spec.write_text('id = "off-grid"\nenv = "CartPole-v1"\nalgorithm = "PPO"\nenv_steps = 50000\nseeds = 2\n'
                    '[evaluation]\ninterval_steps = 5000\n', encoding="utf-8")
    assert main(["plan", "--workload", str(spec), "--adapters", "sb3"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: workload off-grid: evaluation.interval_steps (5,000)") == 1


# -- real frameworks ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def framework_curves(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    from rlcompare.execution.runner import LocalRunner
    from rlcompare.plan.matrix import build_plan
    from rlcompare.plugins.manager import build_plugin_manager
    from rlcompare.store.sqlite_store import Store

    workload = _workload(interval=600)  # not a multiple of the 256-step update, on purpose
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["sb3", "skrl"])
    store = Store(tmp_path_factory.mktemp("grid") / "runs.db")
    summary = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok", "ok"], [o.record.traceback for o in summary.outcomes]
    curves = store.curves_frame()
    store.close()
    return {adapter: group.sort_values("env_steps").to_dict("records") for adapter, group in curves.groupby("adapter")}


def _whole(value: object) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)  # type: ignore[arg-type]


@pytest.mark.framework
def test_sb3_and_skrl_are_evaluated_at_the_same_grid_points_after_the_same_updates(
        framework_curves: dict[str, list[dict]]) -> None:
    grids = {adapter: [(_whole(p["grid_steps"]), _whole(p["updates"])) for p in curve]
             for adapter, curve in framework_curves.items()}
    # grid points 0, 600 and 1,200: the first update boundaries at or after them are updates 3 (768)
    # and 5 (1,280, the end of training, which is then also the final evaluation)
    assert grids["sb3"] == grids["skrl"] == [(0, None), (600, 3), (1_200, 5)]
    sb3_steps = [int(p["env_steps"]) for p in framework_curves["sb3"]]
    skrl_steps = [int(p["env_steps"]) for p in framework_curves["skrl"]]
    assert skrl_steps == [0, 768, 1_280]
    # SB3 checkpoints from its per-step callback: one vector step after the update (was: 600, after 2)
    assert sb3_steps[:2] == [ENVS, 768 + ENVS] and sb3_steps[2] == 1_280


# -- time to threshold, read on the grid ----------------------------------------------------------------


def _point(steps: int, value: float, grid: int | None, updates: int | None) -> CurvePoint:
    return CurvePoint(env_steps=steps, framework_env_steps=steps, train_seconds=steps / 1000, return_mean=value,
                      return_std=0.0, returns=(value,), episode_length_mean=value, grid_steps=grid, updates=updates)


def test_time_to_threshold_is_the_grid_point_with_one_interval_of_resolution(tmp_path: Path) -> None:
    from rlcompare_criteria.performance import time_to_threshold_steps

    from rlcompare.scoring.criteria import ScoringData
    from rlcompare.store.sqlite_store import Store
    from tests.test_criteria_support import run_record, workload_spec, write_store

    gridded = {**workload_spec("w", env_steps=20_480, threshold=100.0), "evaluation": {"interval_steps": 5_120}}
    old = workload_spec("old", env_steps=20_480, threshold=100.0)
    runs = []
    for seed in range(2):
        # SB3-like: made one vector step after the boundary; skrl-like: on it; both stand for 10,240
        runs.append((run_record(gridded, "every_step", seed), [
            _point(4, 10.0, 0, None), _point(5_124, 50.0, 5_120, 20), _point(10_244, 120.0, 10_240, 40)]))
        runs.append((run_record(gridded, "every_update", seed), [
            _point(0, 10.0, 0, None), _point(5_120, 50.0, 5_120, 20), _point(10_240, 120.0, 10_240, 40)]))
        # a store from before the grid: read at the env steps, as it was, and no claim of resolution
        runs.append((run_record(old, "before", seed), [_point(0, 10.0, None, None), _point(7_000, 120.0, None, None)]))
    with Store(write_store(tmp_path / "s.db", runs)) as store:
        data = ScoringData(store.runs_frame(), curves=store.curves_frame())
    result = time_to_threshold_steps(data)
    values = result.values.groupby(["adapter", "workload_id"])["value"].apply(sorted).to_dict()
    assert values == {("every_step", "w"): [10_240.0, 10_240.0], ("every_update", "w"): [10_240.0, 10_240.0],
                      ("before", "old"): [7_000.0, 7_000.0]}
    assert "+-5,120 env steps (one evaluation interval)" in result.notes[("every_step", "w")]
    assert "differences within it are ties" in result.notes[("every_update", "w")]
    assert ("before", "old") not in result.notes
