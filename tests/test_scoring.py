"""The scoring engine: rliable agreement, interval coverage, normalization, overall score, ranks."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlcompare.scoring.criteria import Criterion, CriterionResult, ScoringData
from rlcompare.scoring.engine import ScoringOptions, normalize, score
from rlcompare.scoring.profiles import WeightProfile

ONLY = WeightProfile("test", "every criterion alike", {"performance": 1.0, "development": 1.0})


def rliable_intervals(score_dict: dict[str, np.ndarray], func: Any, reps: int, seed: int) -> tuple[dict, dict]:
    from rliable import library

    np.random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return library.get_interval_estimates(score_dict, func, reps=reps)


def runs_frame(pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """A runs frame with one ok run per (adapter, workload) pair: what the engine needs to know."""
    return pd.DataFrame({
        "run_id": [f"{w}__{a}__s0" for a, w in pairs], "adapter": [a for a, _ in pairs],
        "workload_id": [w for _, w in pairs], "framework": [f"{a}-fw" for a, _ in pairs], "seed": 0,
        "status": "ok", "error": None, "workload_digest": [w for _, w in pairs], "workload_json": "{}",
        "finished_at": 1.0, "success_threshold": None,
    })


def criterion(criterion_id: str, rows: Sequence[tuple[str, str, int, float]], *, direction: str = "higher",
              normalization: str = "share", category: str = "performance", **extra: Any) -> Criterion:
    frame = pd.DataFrame(list(rows), columns=["adapter", "workload_id", "seed", "value"])
    return Criterion(id=criterion_id, title=criterion_id, category=category, unit="u", direction=direction,
                     method="synthetic", normalization=normalization,
                     compute=lambda data: CriterionResult.build(frame), **extra)


def synthetic(criteria: Sequence[Criterion], profile: WeightProfile = ONLY, **options: Any) -> Any:
    pairs = sorted({(r.adapter, r.workload_id) for c in criteria for r in c.compute(None).values.itertuples()})
    data = ScoringData(runs_frame(pairs))
    return score(data, {c.id: c for c in criteria}, profile, ScoringOptions(**{"reps": 500, **options}))


# -- agreement with rliable ------------------------------------------------------------------------


def test_engine_iqm_matches_rliable_on_the_normalized_matrix() -> None:
    from rliable import metrics

    rng = np.random.default_rng(5)
    matrix = rng.uniform(0, 1, size=(8, 5))  # share-normalized: scores are the values themselves
    rows = [("a", f"w{t}", s, float(matrix[s, t])) for s in range(8) for t in range(5)]
    result = synthetic([criterion("c", rows)], reps=2000)
    iqm = result.aggregates[("c", "a")]["iqm"]
    points, intervals = rliable_intervals({"a": matrix}, lambda s: np.array([metrics.aggregate_iqm(s)]), 2000, 99)
    assert iqm.point == pytest.approx(points["a"][0], abs=1e-12)
    # same estimator, different draws of the same bootstrap: the bounds agree to Monte Carlo error
    assert iqm.low == pytest.approx(intervals["a"][0][0], abs=0.03)
    assert iqm.high == pytest.approx(intervals["a"][1][0], abs=0.03)


@settings(max_examples=4, deadline=None)
@given(mean=st.floats(-1e3, 1e3), sd=st.floats(0.01, 100.0), seed=st.integers(0, 2**16))
def test_cell_intervals_cover_the_true_mean_at_about_the_nominal_rate(mean: float, sd: float, seed: int) -> None:
    cells, seeds = 300, 20
    rng = np.random.default_rng(seed)
    draws = rng.normal(mean, sd, size=(cells, seeds))
    rows = [("a", f"w{c}", s, float(draws[c, s])) for c in range(cells) for s in range(seeds)]
    result = synthetic([criterion("c", rows, normalization="ratio")], reps=1000, seed=seed)
    covered = [result.cell("c", "a", f"w{c}").low <= mean <= result.cell("c", "a", f"w{c}").high
               for c in range(cells)]
    # a 95% percentile bootstrap of a mean over 20 seeds covers about 93-95% of the time
    assert 0.88 <= np.mean(covered) <= 0.99


# -- normalization ---------------------------------------------------------------------------------


def _normalized(values: Sequence[tuple[str, str, float]], data: ScoringData | None = None, **kwargs: Any) -> list[float]:
    frame = pd.DataFrame(list(values), columns=["adapter", "workload_id", "value"])
    crit = criterion("c", [], **kwargs)
    scores, _ = normalize(crit, frame, data or ScoringData(runs_frame([])))
    return [round(float(s), 6) for s in scores]


def test_ratio_normalization_is_relative_to_the_best_mean() -> None:
    values = [("a", "w", 100.0), ("a", "w", 300.0), ("b", "w", 100.0), ("c", "w", float("inf"))]
    assert _normalized(values, normalization="ratio", direction="higher")[:3] == [0.5, 1.5, 0.5]
    # lower is better: best mean is b's 100; c never got there (censored) and scores 0
    assert _normalized(values, normalization="ratio", direction="lower") == [1.0, round(1 / 3, 6), 1.0, 0.0]


def test_return_normalization_uses_untrained_return_and_threshold() -> None:
    runs = runs_frame([("a", "w")]).assign(success_threshold=200.0)
    curves = pd.DataFrame({"run_id": ["w__a__s0"], "env_steps": [0], "train_seconds": [0.0], "return_mean": [-100.0]})
    data = ScoringData(runs, curves=curves)
    assert _normalized([("a", "w", 50.0), ("a", "w", 200.0)], data, normalization="return") == [0.5, 1.0]
    # without a curve or threshold: the lowest and highest values seen
    assert _normalized([("a", "w", 50.0), ("a", "w", 150.0), ("b", "w", 100.0)], normalization="return") == [0.0, 1.0, 0.5]


def test_share_and_half_life_normalizations() -> None:
    assert _normalized([("a", "*", 0.25)], normalization="share") == [0.25]
    assert _normalized([("a", "*", 0.25)], normalization="share", direction="lower") == [0.75]
    assert _normalized([("a", "*", 365.0), ("b", "*", 0.0)], normalization="half-life", direction="lower") == [0.5, 1.0]


# -- overall score, ranks, stability ----------------------------------------------------------------


def test_overall_score_is_the_weighted_mean_and_an_adapter_without_performance_data_ranks_last() -> None:
    perf = criterion("p", [("a", "w", 0, 0.8), ("b", "w", 0, 0.4)])
    dev = criterion("d", [("a", "*", 0, 0.2), ("b", "*", 0, 1.0), ("c", "*", 0, 0.6)], category="development")
    profile = WeightProfile("x", "", {"performance": 0.75, "development": 0.25})
    result = synthetic([perf, dev], profile)
    assert result.weights == {"d": 0.25, "p": 0.75}
    assert result.overall["a"].score.point == pytest.approx(0.75 * 0.8 + 0.25 * 0.2)
    assert result.overall["b"].score.point == pytest.approx(0.75 * 0.4 + 0.25 * 1.0)
    # c ran no workload: its score is over what it has and says how much weight that was, but a
    # higher score over less data never lifts it above adapters with valid results on more workloads
    assert result.overall["c"].score.point == pytest.approx(0.6)
    assert result.overall["c"].weight_coverage == pytest.approx(0.25)
    assert result.overall["c"].missing_criteria == ["p"]
    assert [result.overall[a].valid_workloads for a in "abc"] == [2, 2, 1]
    assert [result.overall[a].rank for a in "abc"] == [1, 2, 3]


def test_a_category_without_data_passes_its_weight_to_the_other() -> None:
    perf = criterion("p", [("a", "w", 0, 0.8)])
    result = synthetic([perf], WeightProfile("x", "", {"performance": 0.3, "development": 0.7}))
    assert result.weights == {"p": 1.0}


def test_rank_stability_is_full_for_a_clear_winner_and_a_close_call_is_a_tie() -> None:
    clear = synthetic([criterion("p", [("a", "w", 0, 0.9), ("b", "w", 0, 0.1)]),
                       criterion("q", [("a", "w", 0, 0.9), ("b", "w", 0, 0.2)])])
    assert clear.overall["a"].rank_stability == 1.0 and clear.overall["b"].rank_stability == 1.0
    assert (clear.overall["a"].rank, clear.overall["b"].rank) == (1, 2) and not clear.overall["a"].tied_with
    close = synthetic([criterion("p", [("a", "w", 0, 0.51), ("b", "w", 0, 0.5)]),
                       criterion("q", [("a", "w", 0, 0.5), ("b", "w", 0, 0.51)]),
                       criterion("r", [("a", "w", 0, 0.5), ("b", "w", 0, 0.5)])])
    # perturbed weights put either one first: not separated, so they share the rank, marked tied,
    # and each stays within the ranks its tie spans
    assert (close.overall["a"].rank, close.overall["b"].rank) == (1, 1)
    assert close.overall["a"].tied_with == ["b"] and close.overall["a"].rank_text == "1="
    assert close.overall["a"].rank_stability == 1.0
    [comparison] = close.overall_comparisons
    assert 0.025 < comparison["p"] < 0.975 and not comparison["separated"]


def test_overall_interval_contains_the_point_and_reflects_seed_spread() -> None:
    rng = np.random.default_rng(0)
    rows = [("a", f"w{t}", s, float(v)) for t in range(3) for s, v in enumerate(rng.uniform(0, 1, 10))]
    rows += [("b", f"w{t}", s, 0.5) for t in range(3) for s in range(10)]
    result = synthetic([criterion("p", rows)])
    a, b = result.overall["a"].score, result.overall["b"].score
    assert a.low < a.point < a.high
    assert b.low == b.point == b.high == pytest.approx(0.5)


def test_probability_of_improvement_comes_with_its_interval() -> None:
    rows = [("a", "w", s, 0.9 + s / 100) for s in range(5)] + [("b", "w", s, 0.1 + s / 100) for s in range(5)]
    rows += [("c", "w", s, 0.1 + s / 100) for s in range(5)]
    result = synthetic([criterion("p", rows)])
    pairs = {(p["x"], p["y"]): p for p in result.improvement["p"]}
    assert pairs[("a", "b")]["p"] == 1.0 and (pairs[("a", "b")]["low"], pairs[("a", "b")]["high"]) == (1.0, 1.0)
    assert pairs[("b", "c")]["p"] == 0.5 and pairs[("b", "c")]["low"] < 0.5 < pairs[("b", "c")]["high"]


def test_performance_profiles_of_return_normalized_criteria_come_with_bands() -> None:
    # return normalization without thresholds or curves: (v - lowest) / (highest - lowest) per workload
    rows = [("a", "w", s, v) for s, v in enumerate([1.0, 0.8, 0.9, 1.0])]
    rows += [("b", "w", s, v) for s, v in enumerate([0.0, 0.2, 0.4, 0.6])]
    result = synthetic([criterion("p", rows, normalization="return"), criterion("q", rows)])
    assert "q" not in result.performance_profiles  # share-normalized: no profile
    profile = result.performance_profiles["p"]
    assert profile["taus"][0] == 0.0 and profile["taus"][-1] == 1.0
    a, b = profile["adapters"]["a"], profile["adapters"]["b"]
    tau = profile["taus"].index(0.5)
    assert a["point"][tau] == 1.0 and b["point"][tau] == 0.25  # b's 0.6 is the only one above 0.5
    assert b["low"][tau] == 0.0 and b["high"][tau] >= 0.5


def test_scoring_is_reproducible() -> None:
    rows = [("a", "w", s, float(v)) for s, v in enumerate(np.linspace(0, 1, 7))]
    first, second = synthetic([criterion("p", rows)]), synthetic([criterion("p", rows)])
    assert first.cell("p", "a", "w").to_dict() == second.cell("p", "a", "w").to_dict()
    assert first.overall["a"].score == second.overall["a"].score


def test_workloads_with_different_seed_counts_are_resampled_independently() -> None:
    from scipy.stats import trim_mean

    w0, w1 = [0.1, 0.2, 0.3, 0.4, 0.5], [0.9, 0.7, 0.8]
    rows = [("a", "w0", s, v) for s, v in enumerate(w0)] + [("a", "w1", s, v) for s, v in enumerate(w1)]
    result = synthetic([criterion("p", rows)])
    estimates = result.aggregates[("p", "a")]
    assert estimates["mean"].point == pytest.approx((0.3 + 0.8) / 2)
    assert estimates["median"].point == pytest.approx((0.3 + 0.8) / 2)
    assert estimates["iqm"].point == pytest.approx(trim_mean(w0 + w1, 0.25))
    assert estimates["mean"].low < estimates["mean"].point < estimates["mean"].high
    assert result.cell("p", "a", "w1").n == 3 and result.cell("p", "a", "w1").point == pytest.approx(0.8)


def test_nan_values_are_dropped_not_censored() -> None:
    result = synthetic([criterion("p", [("a", "w", 0, 0.5), ("a", "w", 1, float("nan"))])])
    cell = result.cell("p", "a", "w")
    assert (cell.n, cell.censored, cell.point) == (1, 0, 0.5)
