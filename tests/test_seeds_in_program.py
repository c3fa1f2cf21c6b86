"""Several seeds trained in one program (``parallelism.seeds_per_program``): each seed stays a run of its
own (own counter, curve, evaluation and validity verdict), the runs record how many seeds shared the
program, and each run's training time is the program's, so its throughput is its own steps over the
shared time and is not overstated. Driven through the CLI with the harness's test adapter ``batched``
(random actions; it trains nothing); rejax's real vmapped program is checked in test_rejax.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from rlcompare.errors import InvalidWorkloadError
from rlcompare.execution.driver import group_programs
from rlcompare.plan.matrix import PlannedRun
from rlcompare.spec.workload import workload_from_dict
from tests.conftest import run_cli

SPEC = {"id": "together", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 600, "seeds": 3,
        "parallelism": {"seeds_per_program": 2}, "hyperparameters": {"rollout_steps": 64},
        "evaluation": {"interval_steps": 200, "episodes": 2}}


def _write(tmp_path: Path, spec: dict) -> Path:
    path = tmp_path / f"{spec['id']}.toml"
    path.write_text(tomli_w.dumps(spec), encoding="utf-8")
    return path


def _runs(store: Path) -> dict[str, dict]:
    connection = sqlite3.connect(store)
    connection.row_factory = sqlite3.Row
    rows = {row["run_id"]: dict(row) for row in connection.execute("SELECT * FROM runs")}
    for run_id, row in rows.items():
        row["curve"] = [tuple(point) for point in connection.execute(
            "SELECT env_steps, return_mean FROM curves WHERE run_id = ? ORDER BY env_steps", (run_id,))]
    connection.close()
    return rows


def test_seeds_of_one_program_are_runs_of_their_own_sharing_one_process_and_its_time(
        fake_plugin: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    done = run_cli(["run", "--workload", str(_write(tmp_path, SPEC)), "--adapters", "batched", "--store", str(store)])
    assert done.returncode == 0, done.stderr
    runs = _runs(store)
    assert sorted(runs) == [f"together__batched__s{seed}" for seed in range(3)]
    first, second, alone = (runs[f"together__batched__s{seed}"] for seed in range(3))
    for run in runs.values():
        assert run["status"] == "ok", run["error"]
        assert run["env_steps"] == run["framework_env_steps"] == 600  # each seed counted on its own
        # its own evaluations (the grid's step-0 point after the adapter's first step, as for ``fake``)
        assert [steps for steps, _ in run["curve"]] == [1, 200, 400, 600]
        assert run["throughput"] == pytest.approx(run["env_steps"] / run["training_seconds"])
    # seeds 0 and 1 trained in one process, as one program; seed 2 (the rest) alone
    native = [json.loads(run["native_config_json"]) for run in (first, second)]
    assert native[0]["pid"] == native[1]["pid"] and native[0]["program_seeds"] == [0, 1]
    assert first["seeds_in_program"] == second["seeds_in_program"] == 2 and alone["seeds_in_program"] is None
    assert "program_seeds" not in json.loads(alone["native_config_json"])
    # the program's time is each run's: their training clocks ran together, so neither run's throughput
    # counts the other's steps (the pair's throughput is their sum over the same time)
    assert first["training_seconds"] == pytest.approx(second["training_seconds"], rel=0.5, abs=0.05)
    assert first["wall_seconds"] == second["wall_seconds"] and first["cpu_seconds"] == second["cpu_seconds"]
    shown = run_cli(["show", "run", "together__batched__s1", "--store", str(store)])
    assert shown.returncode == 0, shown.stderr


def test_a_failing_program_fails_every_run_of_it_with_the_reason_and_keeps_their_points(
        fake_plugin: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    spec = {**SPEC, "seeds": 2}
    done = run_cli(["run", "--workload", str(_write(tmp_path, spec)), "--adapters", "batched", "--store", str(store)],
                   env={"BATCHED_FAIL_AT": "300"})
    assert done.returncode != 0
    runs = _runs(store)
    assert {run["status"] for run in runs.values()} == {"failed"}
    for run in runs.values():
        assert "batched failed at 300 env steps" in run["error"]
        assert [steps for steps, _ in run["curve"]] == [1, 200]  # the points each finished stay
    assert not (tmp_path / "s.db.runs").exists()  # every run directory stored and removed


def test_an_adapter_without_programs_of_seeds_is_refused_naming_the_setting(fake_plugin: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    refused = run_cli(["run", "--workload", str(_write(tmp_path, SPEC)), "--adapters", "fake,batched",
                       "--store", str(store)])
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "rlcompare: error: adapter 'fake' cannot run workload 'together': several seeds in one program "
        "(parallelism.seeds_per_program) are not offered"]
    assert not store.exists()  # nothing written


def _planned(seeds: list[int], size: int, adapter: str = "a") -> list[PlannedRun]:
    workload = workload_from_dict({**SPEC, "parallelism": {"seeds_per_program": size}}, "t")
    return [PlannedRun(workload, adapter, "fw", seed) for seed in seeds]


def test_programs_group_one_adapters_seeds_in_order_and_regroup_what_a_resume_leaves() -> None:
    groups = group_programs(_planned([0, 1, 2, 3, 4], 2))
    assert {leader: [run.seed for run in others] for leader, others in groups.items()} == {
        "together__a__s0": [1], "together__a__s2": [3], "together__a__s4": []}
    # seed 0 done before: the seeds left train together from seed 1
    resumed = group_programs(_planned([4, 3, 1, 2], 2))
    assert {leader: [run.seed for run in others] for leader, others in resumed.items()} == {
        "together__a__s1": [2], "together__a__s3": [4]}
    # two adapters never share a program; one seed per program is a run alone
    mixed = group_programs([*_planned([0, 1], 2, "a"), *_planned([0, 1], 2, "b"), *_planned([0, 1], 1, "c")])
    assert {leader: len(others) for leader, others in mixed.items()} == {
        "together__a__s0": 1, "together__b__s0": 1, "together__c__s0": 0, "together__c__s1": 0}


def test_an_adapter_may_report_the_setting_without_it_counting() -> None:
    from rlcompare.spec.settings import outside_settings

    # a canonical setting, as parallelism.simulation: listed by the adapters that honour it, not counted
    assert outside_settings(["parallelism.seeds_per_program", "hyperparameters.made_up"], ["learning_rate"]) == [
        "hyperparameters.made_up"]


def test_the_setting_shapes_the_runs_only_where_it_says_something() -> None:
    alone = workload_from_dict({**SPEC, "parallelism": {}}, "t")
    together = workload_from_dict(SPEC, "t")
    assert "seeds_per_program" not in alone.to_dict()["parallelism"]  # a workload without it reads as before
    assert together.to_dict()["parallelism"]["seeds_per_program"] == 2 and alone.digest != together.digest
    with pytest.raises(InvalidWorkloadError, match=r"parallelism\.seeds_per_program.*stop_when_solved"):
        workload_from_dict({**SPEC, "success_threshold": 100.0, "stop_when_solved": True}, "t")


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.integers(max_value=0), st.integers(min_value=65), st.floats(), st.text(max_size=20),
                 st.booleans(), st.lists(st.integers(), max_size=2)))
def test_any_other_seeds_per_program_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(InvalidWorkloadError) as refused:
        workload_from_dict({**SPEC, "parallelism": {"seeds_per_program": value}}, "t")
    message = str(refused.value)
    assert "parallelism.seeds_per_program" in message and "\n" not in message


def test_a_backend_whose_tasks_run_one_seed_refuses_programs_before_writing(fake_plugin: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    refused = run_cli(["run", "--workload", str(_write(tmp_path, SPEC)), "--adapters", "batched", "--backend", "ray",
                       "--store", str(store)])
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "rlcompare: error: workload 'together': field 'parallelism.seeds_per_program': the ray backend runs one "
        "seed per task; run several seeds in one program on the local backend"]
    assert not store.exists()
