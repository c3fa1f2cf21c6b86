"""The scoring matrix cannot be gamed: adapters that never step, overshoot their budget, inflate
their step count, claim an algorithm they do not configure, or fail, never outrank one that trained
properly. Real runs: Stable-Baselines3 next to an outside plugin of cheating adapters
(tests/plugins/cheats, installed through its entry point), through the real runner and store."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.plan.matrix import Plan, build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.scoring.engine import ScoringOptions, score_store
from rlcompare.scoring.profiles import BUILTIN_PROFILES
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store
from tests.conftest import ROOT, run_cli
from tests.test_criteria_support import run_record, workload_spec, write_store

CHEATS = ROOT / "tests" / "plugins" / "cheats"
SCORING_BUILTINS = ("rlcompare.builtins.frameworks", "rlcompare.builtins.workloads", "rlcompare_sb3",
                    "rlcompare_criteria.performance", "rlcompare_criteria.development")
#: sb3 (which trains properly) and the outside package's cheats
UNDER_TEST = ("sb3", "idle", "overshoot", "unfaithful", "crash", "inflated")
#: The situation of the issue that found the problem: CartPole PPO, 6,000 steps, 2 seeds.
WORKLOAD = {"id": "cart", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 6000, "seeds": 2,
            "hyperparameters": {"rollout_steps": 256, "minibatch_size": 64, "epochs": 4, "learning_rate": 1e-3},
            "evaluation": {"interval_steps": 3000, "episodes": 3}, "success_threshold": 475.0}


@pytest.fixture(scope="module")
def cheat_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cheats") / "store.db"
    saved = dict(os.environ)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHEATS), os.environ.get("PYTHONPATH")]))
    os.environ.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)
    import sys

    sys.path.insert(0, str(CHEATS))
    try:
        plugins = build_plugin_manager(builtins=SCORING_BUILTINS)
        plan = build_plan(plugins.plan_catalogue(), [workload_from_dict(WORKLOAD, "test")])
        # sb3 next to the cheats; the other built-in distributions come in through their entry points too
        plan = Plan(runs=[run for run in plan.runs if run.adapter_id in UNDER_TEST],
                    refused=[pair for pair in plan.refused if pair.adapter_id in UNDER_TEST])
        with Store(path) as store:
            LocalRunner(store, jobs=2, timeout_seconds=300).run(plan)
    finally:
        sys.path.remove(str(CHEATS))
        os.environ.clear()
        os.environ.update(saved)
    return path


@pytest.fixture(scope="module")
def runs(cheat_store: Path) -> dict[str, list[dict]]:
    with Store(cheat_store) as store:
        frame = store.runs_frame()
    grouped: dict[str, list[dict]] = {}
    for row in frame.to_dict("records"):
        grouped.setdefault(row["adapter"], []).append(row)
    return grouped


@pytest.mark.framework
def test_each_cheat_is_judged_with_its_reason(runs: dict[str, list[dict]]) -> None:
    assert [r["status"] for r in runs["sb3"]] == ["ok", "ok"]
    assert all(json.loads(r["validity_json"])["valid"] for r in runs["sb3"])
    idle = runs["idle"]
    assert {r["status"] for r in idle} == {"invalid"}
    assert all("the harness counted 0 env steps" in r["error"] for r in idle)
    overshoot = runs["overshoot"]
    assert {r["status"] for r in overshoot} == {"invalid"}
    assert all("past the budget of 6000" in r["error"] for r in overshoot)
    inflated = runs["inflated"]
    assert {r["status"] for r in inflated} == {"invalid"}
    assert all("framework counted 60000 env steps, the harness 6000" in r["error"] for r in inflated)
    assert {r["status"] for r in runs["crash"]} == {"failed"}
    [refused] = runs["unfaithful"]
    assert refused["status"] == "unsupported" and "cannot run workload 'cart' faithfully" in refused["error"]
    assert "11 of 11 canonical PPO settings" in refused["error"]
    # every run says which plugin and distribution produced it
    assert {(r["adapter_plugin"], r["adapter_distribution"]) for r in runs["idle"]} == {("cheatfw", "cheatfw-rlcompare")}
    assert {(r["adapter_plugin"], r["adapter_distribution"]) for r in runs["sb3"]} == {("rlcompare_sb3", "rlcompare-sb3")}


@pytest.mark.framework
@pytest.mark.parametrize("profile", sorted(BUILTIN_PROFILES))
def test_no_cheat_outranks_or_outscores_the_adapter_that_trained(cheat_store: Path, profile: str) -> None:
    plugins = build_plugin_manager(builtins=SCORING_BUILTINS, autoload=False)
    with Store(cheat_store) as store:
        # the test run's measurement cache: SB3's development figures are measured once, not per profile
        matrix = score_store(store, plugins.scoring_catalogue(), BUILTIN_PROFILES[profile], ScoringOptions(reps=200),
                             cache=MeasurementCache.default())
    sb3 = matrix.overall["sb3"]
    assert sb3.rank == 1 and sb3.valid_workloads == 1
    for cheat in ("idle", "overshoot", "inflated", "crash", "unfaithful"):
        other = matrix.overall[cheat]
        assert other.valid_workloads == 0, cheat
        assert other.rank is None or other.rank > 1, cheat
        if other.score is not None:
            assert other.score.point < sb3.score.point, (profile, cheat)
    excluded = {run["run_id"]: run for run in matrix.excluded_runs}
    assert excluded["cart__idle__s0"]["status"] == "invalid"
    assert excluded["cart__crash__s1"]["reason"].startswith("RuntimeError: crash adapter fails on purpose")


@pytest.mark.framework
def test_score_output_shows_the_runs_that_do_not_count_with_their_reasons(cheat_store: Path) -> None:
    # the test run's measurement cache (RLCOMPARE_CACHE_DIR, inherited): nothing is measured again
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(CHEATS), os.environ.get("PYTHONPATH")]))}
    table = run_cli(["score", "--store", str(cheat_store), "--reps", "200"], env=env)
    assert table.returncode == 0, table.stderr
    assert "cart__overshoot__s0: invalid: " in table.stdout and "past the budget of 6000" in table.stdout
    assert "cart__inflated__s1: invalid: framework counted 60000 env steps" in table.stdout
    assert "by the number of workloads with a valid result" in table.stdout
    data = json.loads(run_cli(["score", "--store", str(cheat_store), "--reps", "200", "--json"], env=env).stdout)
    assert {r["adapter"] for r in data["excluded_runs"]} == {"idle", "overshoot", "inflated", "crash"}
    assert data["missing_data_rule"].startswith("Invalid runs count as not completed")
    ranked = sorted(data["adapters"], key=lambda a: (a["rank"] is None, a["rank"] or 0))
    assert ranked[0]["adapter"] == "sb3"


# -- the same situations on synthetic stores (no training) --------------------------------------------

A = workload_spec("wa", threshold=100.0)
B = workload_spec("wb", threshold=100.0)


def _score(tmp_path: Path, runs: list, profile: str = "balanced"):
    path = write_store(tmp_path / "s.db", runs)
    plugins = build_plugin_manager(builtins=("rlcompare_criteria.performance", "rlcompare_criteria.development"), autoload=False)
    with Store(path) as store:
        return score_store(store, plugins.scoring_catalogue(), BUILTIN_PROFILES[profile], ScoringOptions(reps=200),
                           cache=MeasurementCache(tmp_path / "cache.json"))


@pytest.mark.parametrize("profile", sorted(BUILTIN_PROFILES))
def test_an_adapter_whose_runs_all_failed_elsewhere_never_outranks_one_that_succeeded(
        tmp_path: Path, profile: str) -> None:
    runs = [(run_record(A, "good", s, final_return=60.0, throughput=900.0, startup=3.0, training=5.0,
                        peak_rss=2**28), []) for s in range(2)]
    # 'failing' was asked to run another workload and every seed failed: no performance data at all
    runs += [(run_record(B, "failing", s, status="failed", error="RuntimeError: boom"), []) for s in range(2)]
    matrix = _score(tmp_path, runs, profile)
    assert matrix.overall["good"].rank == 1
    assert matrix.overall["failing"].rank in (None, 2)
    assert matrix.overall["failing"].failed_workloads == ["wb"]


def test_an_invalid_run_counts_against_completion_and_nowhere_else(tmp_path: Path) -> None:
    runs = [(run_record(A, "x", s, final_return=90.0, throughput=1000.0), []) for s in range(3)]
    runs.append((run_record(A, "x", 3, status="invalid", error="the harness counted 0 env steps"), []))
    runs += [(run_record(A, "y", s, final_return=80.0, throughput=1000.0), []) for s in range(4)]
    matrix = _score(tmp_path, runs)
    assert matrix.cell("completion_rate", "x", "wa").point == pytest.approx(0.75)
    assert matrix.cell("final_return", "x", "wa").n == 3
    assert matrix.excluded_runs == [{"run_id": "wa__x__s3", "adapter": "x", "workload": "wa", "seed": 3,
                                     "status": "invalid", "reason": "the harness counted 0 env steps"}]


def test_a_workload_without_a_valid_run_scores_the_worst_there(tmp_path: Path) -> None:
    runs = [(run_record(w, "x", s, final_return=90.0, throughput=1000.0), []) for w in (A, B) for s in range(2)]
    runs += [(run_record(A, "y", s, final_return=95.0, throughput=2000.0), []) for s in range(2)]
    runs += [(run_record(B, "y", s, status="invalid", error="overshoot"), []) for s in range(2)]
    matrix = _score(tmp_path, runs, "performance")
    imputed = {(i["criterion"], i["adapter"], i["workload"]) for i in matrix.imputed}
    assert ("throughput", "y", "wb") in imputed and ("final_return", "y", "wb") in imputed
    assert matrix.overall["x"].rank == 1 and matrix.overall["y"].rank == 2
    # y's throughput aggregate averages its 2.0x on wa with the worst (0) on wb
    assert matrix.aggregates[("throughput", "y")]["mean"].point == pytest.approx((1.0 + 0.0) / 2)


def test_an_adapter_without_any_valid_result_does_not_take_a_criterion_out_of_the_others_scores(
        tmp_path: Path) -> None:
    """EvoTorch in a PPO suite is refused everywhere, so it has no fidelity report: that must not
    drop workload fidelity from the adapters that ran. A competing adapter's gap still does."""
    import dataclasses

    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    exact = [{"setting": "hyperparameters.learning_rate", "status": "exact"}]
    approximate = [{"setting": "hyperparameters.learning_rate", "status": "approximate"}]
    verified = [{"adapter": "x", "family": "PPO", "case": "discrete", "status": "verified"}]  # what was declared holds
    runs = [(dataclasses.replace(run_record(A, "x", s, final_return=90.0, throughput=1000.0), fidelity_json=exact,
                                 parity_json=verified), []) for s in range(2)]
    runs += [(dataclasses.replace(run_record(A, "y", s, final_return=90.0, throughput=1000.0),
                                  fidelity_json=approximate, parity_json=verified), []) for s in range(2)]
    refused = [(run_record(A, "refused", 0, status="unsupported", error="algorithm PPO is not offered"), [])]
    failing = [(run_record(A, "failing", s, status="failed", error="RuntimeError: boom"), []) for s in range(2)]
    matrix = _score(tmp_path / "1", runs + refused + failing)
    left_out = {entry["criterion"] for entry in matrix.left_out}
    assert "setting_fidelity" not in left_out, matrix.left_out
    assert matrix.cell("setting_fidelity", "x", "*").point > matrix.cell("setting_fidelity", "y", "*").point
    assert matrix.overall["x"].score.point > matrix.overall["y"].score.point  # the fidelity difference counts
    assert {matrix.overall["x"].rank, matrix.overall["y"].rank} == {1, 2}
    assert matrix.overall["refused"].rank in (None, 3, 4) and matrix.overall["failing"].rank in (None, 3, 4)
    # a competing adapter without the value scores the worst there (unknown never helps): the
    # criterion stays in every overall score, its own included
    lacking = [(run_record(A, "z", s, final_return=90.0, throughput=1000.0), []) for s in range(2)]
    matrix = _score(tmp_path / "2", runs + refused + lacking)
    assert "setting_fidelity" not in {entry["criterion"] for entry in matrix.left_out}, matrix.left_out
    assert matrix.weights["setting_fidelity"] > 0
    [imputed] = [i for i in matrix.imputed if i["criterion"] == "setting_fidelity" and i["adapter"] == "z"]
    assert imputed["score"] <= min(matrix.aggregates[("setting_fidelity", a)]["mean"].point for a in "xy")
    assert matrix.overall["z"].score.point <= min(matrix.overall[a].score.point for a in "xy")
