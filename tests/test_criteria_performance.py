"""Performance criteria on synthetic stores with known answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.scoring.criteria import Criterion, CriterionResult
from rlcompare.scoring.engine import ScoreMatrix, ScoringOptions, score_store
from rlcompare.scoring.profiles import get_profile
from rlcompare.store.sqlite_store import Store
from tests.test_criteria_support import TEST_BUILTINS, curve, run_record, workload_spec, write_store

CART = workload_spec("cart", threshold=100.0)
PEND = workload_spec("pend", env="Pendulum-v1", algorithm="SAC")
SCALE_1 = workload_spec("scale-w1", env="Calibrated-v0")
SCALE_2 = workload_spec("scale-w2", env="Calibrated-v0", workers=2)
SCALE_4_ALONE = workload_spec("lonely-w4", env="Other-v0", workers=4)


def _cart_curve(reach_at: int | None) -> list[dict]:
    """0 -> 50 -> 100 (or 90 when ``reach_at`` is None) at steps 0, 500, 1000; seconds = steps / 100."""
    if reach_at == 500:
        return curve([(0, 0.0, 0.0), (500, 5.0, 100.0), (1000, 10.0, 100.0)])
    if reach_at == 1000:
        return curve([(0, 0.0, 0.0), (500, 5.0, 50.0), (1000, 10.0, 100.0)])
    return curve([(0, 0.0, 0.0), (500, 5.0, 50.0), (1000, 10.0, 90.0)])


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> ScoreMatrix:
    runs = []
    # adapter "a": 4 seeds on cart, one never reaches the threshold; both seeds on pend ok
    for seed, (ret, thr, reach) in enumerate([(100.0, 1000.0, 500), (110.0, 1200.0, 1000),
                                              (90.0, 800.0, None), (100.0, 1000.0, 500)]):
        runs.append((run_record(CART, "a", seed, final_return=ret, throughput=thr, startup=2.0 + seed,
                                training=1.0, peak_rss=(100 + seed) * 2**20), _cart_curve(reach)))
    runs += [(run_record(PEND, "a", s, final_return=-200.0 - s, throughput=500.0, startup=1.0, peak_rss=2**27),
              curve([(0, 0.0, -1000.0), (1000, 2.0, -200.0)])) for s in range(2)]
    # adapter "b": 3 ok + 1 failed on cart; refused on pend; all seeds fail on lonely-w4
    for seed in range(3):
        runs.append((run_record(CART, "b", seed, final_return=50.0, throughput=2000.0, startup=1.0, peak_rss=2**26),
                     _cart_curve(None)))
    runs.append((run_record(CART, "b", 3, status="failed", error="boom\ntrace"), []))
    runs.append((run_record(PEND, "b", -1, status="unsupported", error="algorithm SAC is not offered"), []))
    # scaling: "a" has a 1-worker baseline (mean 1000) and a 2-worker run (1500 -> 0.75)
    runs += [(run_record(SCALE_1, "a", s, final_return=1.0, throughput=t), []) for s, t in enumerate([900.0, 1100.0])]
    runs += [(run_record(SCALE_2, "a", s, final_return=1.0, throughput=t), []) for s, t in enumerate([1500.0, 1700.0])]
    runs += [(run_record(SCALE_4_ALONE, "a", 0, final_return=1.0, throughput=10.0), [])]
    runs += [(run_record(SCALE_4_ALONE, "b", s, status="timeout", error="killed"), []) for s in range(2)]
    path = write_store(tmp_path_factory.mktemp("perf") / "store.db", runs)
    plugins = build_plugin_manager(builtins=TEST_BUILTINS, autoload=False)
    with Store(path) as store:
        return score_store(store, plugins.scoring_catalogue(), get_profile("balanced"), ScoringOptions(reps=500))


def test_final_return_is_the_mean_over_finished_seeds(matrix: ScoreMatrix) -> None:
    cell = matrix.cell("final_return", "a", "cart")
    assert cell.point == pytest.approx(100.0)
    assert cell.n == 4
    assert 90.0 <= cell.low <= cell.point <= cell.high <= 110.0
    b = matrix.cell("final_return", "b", "cart")
    assert (b.point, b.low, b.high, b.n) == (50.0, 50.0, 50.0, 3)
    assert b.note == "3 of 4 seeds"


def test_throughput_startup_and_memory_are_exact(matrix: ScoreMatrix) -> None:
    assert matrix.cell("throughput", "a", "cart").point == pytest.approx(1000.0)
    assert matrix.cell("startup_latency", "a", "cart").point == pytest.approx(3.5)
    assert matrix.cell("peak_memory", "a", "cart").point == pytest.approx(101.5)
    assert matrix.cell("peak_memory", "b", "cart").point == pytest.approx(64.0)


def test_time_to_threshold_censors_seeds_that_never_reach_it(matrix: ScoreMatrix) -> None:
    seconds = matrix.cell("time_to_threshold_seconds", "a", "cart")
    steps = matrix.cell("time_to_threshold_steps", "a", "cart")
    assert seconds.point == pytest.approx((5.0 + 10.0 + 5.0) / 3)
    assert steps.point == pytest.approx((500 + 1000 + 500) / 3)
    assert (steps.n, steps.censored) == (3, 1)
    assert "1 of 4 seeds did not reach it" in steps.note
    never = matrix.cell("time_to_threshold_steps", "b", "cart")
    assert never.point is None and never.missing is None and never.label == "not reached"
    # censored seeds score 0: b never reaches the threshold, so its aggregate is exactly 0
    assert matrix.aggregates[("time_to_threshold_steps", "b")]["mean"].point == 0.0
    no_threshold = matrix.cell("time_to_threshold_seconds", "a", "pend")
    assert no_threshold.missing == "the workload sets no success threshold"


def test_sample_efficiency_is_the_curve_average(matrix: ScoreMatrix) -> None:
    # reach 500: (0+100)/2*500 + 100*500 = 75,000; reach 1000: 25*500 + 75*500 = 50,000;
    # never: 12,500 + 35,000 = 47,500; over 1,000 steps
    cell = matrix.cell("sample_efficiency", "a", "cart")
    assert cell.point == pytest.approx((75.0 + 50.0 + 47.5 + 75.0) / 4)
    assert matrix.cell("sample_efficiency", "a", "pend").point == pytest.approx(-600.0)


def test_completion_rate_counts_failures_and_leaves_refusals_missing(matrix: ScoreMatrix) -> None:
    assert matrix.cell("completion_rate", "b", "cart").point == pytest.approx(0.75)
    assert matrix.cell("completion_rate", "b", "lonely-w4").point == 0.0
    refused = matrix.cell("completion_rate", "b", "pend")
    assert refused.point is None
    assert refused.missing == "refused before running: algorithm SAC is not offered"


def test_pairs_without_a_finished_seed_are_missing_with_the_reason(matrix: ScoreMatrix) -> None:
    assert matrix.cell("throughput", "b", "pend").missing == "refused before running: algorithm SAC is not offered"
    timed_out = matrix.cell("final_return", "b", "lonely-w4")
    assert timed_out.missing == "no valid seed (2 timeout): killed"
    # a missing cell is never a zero: b's throughput aggregate is over cart alone
    assert matrix.aggregates[("throughput", "b")]["mean"].n == 3


def test_scaling_efficiency_pairs_workers_with_the_one_worker_baseline(matrix: ScoreMatrix) -> None:
    cell = matrix.cell("scaling_efficiency", "a", "scale-w2")
    assert cell.point == pytest.approx((1500 + 1700) / 2 / (2 * 1000.0))
    assert matrix.cell("scaling_efficiency", "a", "scale-w1") is None  # not applicable, not missing
    lonely = matrix.cell("scaling_efficiency", "a", "lonely-w4")
    assert lonely.missing.startswith("no 1-worker baseline (Other-v0, PPO, 1 envs per worker")
    assert matrix.cell("scaling_efficiency", "b", "lonely-w4").missing.startswith("no valid seed")


def test_normalized_ratio_scores_are_relative_to_the_best_mean(matrix: ScoreMatrix) -> None:
    # throughput on cart: b (2000) is best; a's per-seed ratios average 1000 / 2000
    refs = matrix.references["throughput"]["cart"]
    assert refs == {"best": 2000.0}
    assert matrix.references["peak_memory"]["cart"] == {"best": 64.0}
    # final return uses the untrained return (step-0 evaluations, 0) and the success threshold (100)
    assert matrix.references["final_return"]["cart"]["low"] == 0.0
    assert matrix.references["final_return"]["cart"]["high"] == 100.0


def test_a_failing_criterion_never_breaks_the_matrix(tmp_path: Path) -> None:
    def broken(data: object) -> CriterionResult:
        raise RuntimeError("no luck")

    path = write_store(tmp_path / "s.db", [(run_record(CART, "a", 0, final_return=1.0, throughput=5.0), [])])
    plugins = build_plugin_manager(builtins=TEST_BUILTINS[:3], autoload=False)
    plugins.register.criteria["broken"] = Criterion(
        id="broken", title="Broken", category="performance", unit="x", direction="higher", method="raises",
        compute=broken)
    with Store(path) as store:
        result = score_store(store, plugins.scoring_catalogue(), get_profile("balanced"), ScoringOptions(reps=200))
    assert result.errors == ["broken: criterion failed: RuntimeError: no luck"]
    assert result.cell("broken", "a").missing == "criterion failed: RuntimeError: no luck"
    assert result.cell("throughput", "a", "cart").point == 5.0
    assert result.overall["a"].score is not None


def test_a_store_of_refusals_scores_without_errors(tmp_path: Path) -> None:
    path = write_store(tmp_path / "s.db", [(run_record(CART, "a", -1, status="unsupported", error="nope"), [])])
    plugins = build_plugin_manager(builtins=TEST_BUILTINS, autoload=False)
    with Store(path) as store:
        result = score_store(store, plugins.scoring_catalogue(), get_profile("balanced"), ScoringOptions(reps=200))
    assert result.errors == []
    assert result.cell("completion_rate", "a", "cart").missing == "refused before running: nope"
    assert result.overall["a"].score is None and result.overall["a"].rank is None
