"""The vectorized stratified bootstrap against rliable, the reference: point estimates equal, interval
ends within Monte-Carlo error, on several shapes (1 seed, ties, censored values, unequal seeds)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import trim_mean

from rlcompare.scoring.bootstrap import (
    Aggregates,
    Column,
    ColumnMeans,
    ImprovementProbability,
    Layout,
    ScoreDistribution,
    WeightedMean,
    aggregate_intervals,
    bootstrap,
    layout_of,
    mean_interval,
)

REPS = 2_000


def rliable(score_dict: dict, func: Callable, reps: int = REPS) -> tuple[dict, dict]:
    from rliable import library

    np.random.seed(12345)  # rliable's bootstrap draws from numpy's global RNG
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return library.get_interval_estimates(score_dict, func, reps=reps)


def rliable_aggregates(*arrays: np.ndarray) -> np.ndarray:
    """rliable's aggregate metrics; for several arrays (different runs per task), pooled as our
    estimator defines them: IQM and optimality gap over pooled runs, mean and median of task means."""
    from rliable import metrics

    if len(arrays) == 1:
        s = arrays[0]
        return np.array([metrics.aggregate_iqm(s), metrics.aggregate_mean(s), metrics.aggregate_median(s),
                         metrics.aggregate_optimality_gap(s)])
    pooled = np.concatenate([a.ravel() for a in arrays])
    task_means = np.concatenate([a.mean(axis=0) for a in arrays])
    return np.array([trim_mean(pooled, 0.25), task_means.mean(), np.median(task_means),
                     1.0 - np.mean(np.minimum(pooled, 1.0))])


def close_to_reference(ours: float, reference: float, width: float, what: str) -> None:
    """Interval ends of two independent bootstraps of B=2000 differ by Monte-Carlo error: about
    0.09 standard deviations of the bootstrap distribution (width / 3.92) per end. Allow 5 of those,
    plus one atom for discrete statistics of very few runs."""
    tolerance = 5 * 0.09 * width / 3.92 + 1e-9
    assert abs(ours - reference) <= tolerance, f"{what}: {ours} vs rliable {reference} (tolerance {tolerance:.4g})"


SHAPES = {
    "10 seeds x 6 tasks": lambda rng: rng.normal(1.0, 0.5, size=(10, 6)),
    "ties": lambda rng: np.round(rng.gamma(2.0, size=(12, 5)), 0) / 4,
    "censored (zeros)": lambda rng: np.where(rng.random((15, 4)) < 0.4, 0.0, rng.uniform(0.2, 1.2, (15, 4))),
    "1 seed": lambda rng: rng.uniform(size=(1, 7)),
    "large pooled set (quartile bands)": lambda rng: rng.normal(size=(400, 12)),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_aggregates_agree_with_rliable(shape: str) -> None:
    scores = SHAPES[shape](np.random.default_rng(7))
    ours = aggregate_intervals({"x": scores}, reps=REPS, seed=3)["x"]
    points, intervals = rliable({"x": scores}, rliable_aggregates)
    for i, name in enumerate(("iqm", "mean", "median", "optimality_gap")):
        estimate = ours[name]
        assert estimate.point == pytest.approx(points["x"][i], abs=1e-12), name
        width = max(estimate.high - estimate.low, intervals["x"][1][i] - intervals["x"][0][i])
        close_to_reference(estimate.low, intervals["x"][0][i], width, f"{shape} {name} low")
        close_to_reference(estimate.high, intervals["x"][1][i], width, f"{shape} {name} high")
        if scores.shape[0] == 1:
            assert estimate.low == estimate.point == estimate.high


def test_unequal_seeds_per_task_agree_with_rliable_on_a_list_of_arrays() -> None:
    rng = np.random.default_rng(11)
    arrays = [rng.normal(0.5, 0.2, size=(5, 3)), rng.normal(0.8, 0.1, size=(3, 2)), rng.normal(0.1, 0.3, size=(9, 1))]
    ours = aggregate_intervals({"x": arrays}, reps=REPS, seed=5)["x"]
    points, intervals = rliable({"x": arrays}, rliable_aggregates)
    for i, name in enumerate(("iqm", "mean", "median", "optimality_gap")):
        assert ours[name].point == pytest.approx(points["x"][i], abs=1e-12), name
        width = intervals["x"][1][i] - intervals["x"][0][i]
        close_to_reference(ours[name].low, intervals["x"][0][i], width, f"{name} low")
        close_to_reference(ours[name].high, intervals["x"][1][i], width, f"{name} high")


@pytest.mark.parametrize("runs", [4, 40])  # the dense Mann-Whitney path and the cumulative-count path
def test_probability_of_improvement_agrees_with_rliable(runs: int) -> None:
    from rliable import metrics

    rng = np.random.default_rng(runs)
    x = np.round(rng.normal(0.3, 1.0, size=(runs, 3)), 1)  # rounded: ties count a half
    y = np.round(rng.normal(0.0, 1.0, size=(runs + 1, 3)), 1)
    layout, columns = layout_of({"x": x, "y": y})
    statistic = ImprovementProbability(layout, [list(zip(columns["x"], columns["y"], strict=True))])
    [interval] = bootstrap(layout, [statistic], reps=REPS, seed=2)
    points, intervals = rliable({"xy": [x, y]}, metrics.probability_of_improvement)
    assert interval.point[0] == pytest.approx(points["xy"], abs=1e-12)
    width = intervals["xy"][1] - intervals["xy"][0]
    close_to_reference(interval.low[0], intervals["xy"][0], width, "low")
    close_to_reference(interval.high[0], intervals["xy"][1], width, "high")


def test_score_distributions_agree_with_rliable_performance_profiles() -> None:
    from rliable import library

    rng = np.random.default_rng(4)
    scores = rng.uniform(0, 1.2, size=(10, 5))
    taus = np.linspace(0, 1.2, 7)
    layout, columns = layout_of({"x": scores})
    [interval] = bootstrap(layout, [ScoreDistribution(layout, [columns["x"]], taus)], reps=REPS, seed=9)
    np.random.seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        profiles, bands = library.create_performance_profile({"x": scores}, taus, reps=REPS)
    np.testing.assert_allclose(interval.point[0], profiles["x"], atol=1e-12)
    for t in range(len(taus)):
        width = bands["x"][1][t] - bands["x"][0][t]
        close_to_reference(interval.low[0, t], bands["x"][0][t], width, f"tau {taus[t]:.2f} low")
        close_to_reference(interval.high[0, t], bands["x"][1][t], width, f"tau {taus[t]:.2f} high")


def test_quartile_bands_give_exactly_the_sorted_trimmed_mean() -> None:
    """The band shortcut of the IQM computes the same value per replicate as fully sorted counts."""
    from rlcompare.scoring.bootstrap import TrimmedMean

    rng = np.random.default_rng(0)
    values = np.round(rng.normal(size=(600, 10)), 2)  # 6,000 runs: the band path, with ties
    layout, columns = layout_of({"x": values})
    iqm = TrimmedMean(layout, columns["x"], 0)
    assert not iqm.exact
    from rlcompare.scoring.bootstrap import LinearSums

    sums = LinearSums(layout, iqm.features)
    counts = layout.counts(np.random.default_rng(1), 50)
    banded = iqm.evaluate(counts, sums.evaluate(counts))
    exact = iqm._sorted(counts[:, iqm.sorted_positions])
    np.testing.assert_allclose(banded, exact, rtol=0, atol=1e-12)
    # and the original data gives scipy's trim_mean
    assert iqm.evaluate(np.ones((1, layout.total)), sums.point()[None])[0] == pytest.approx(trim_mean(values, 0.25, axis=None))


def test_counts_resample_each_unit_with_replacement_and_keep_its_size() -> None:
    layout = Layout([3, 1, 5, 3])
    counts = layout.counts(np.random.default_rng(0), 200)
    for unit, size in enumerate(layout.sizes):
        block = counts[:, layout.positions(unit)]
        assert (block.sum(axis=1) == size).all()
        assert (block >= 0).all() and (block == np.round(block)).all()
    # a unit of 3 runs: each run is drawn 0..3 times, and every run sometimes more than once
    assert counts[:, layout.positions(0)].max() == 3


def test_seeded_bootstrap_is_reproducible_and_the_seed_matters() -> None:
    values = list(np.random.default_rng(3).normal(size=12))
    assert mean_interval(values, seed=1) == mean_interval(values, seed=1)
    assert mean_interval(values, seed=1) != mean_interval(values, seed=2)


def test_statistics_of_one_run_set_are_resampled_jointly() -> None:
    """Two columns on the same unit see the same draws: a column and its negation have opposite
    replicates, so their sum never moves."""
    layout = Layout([8])
    values = np.random.default_rng(1).normal(size=8)
    summed = WeightedMean(layout, [[(Column(0, values), 1.0), (Column(0, -values), 1.0)]])
    single = ColumnMeans(layout, [Column(0, values)])
    total, mean = bootstrap(layout, [summed, single], reps=500, seed=0)
    assert total.low[0] == pytest.approx(0.0, abs=1e-12) and total.high[0] == pytest.approx(0.0, abs=1e-12)
    assert mean.low[0] < mean.point[0] < mean.high[0]


@settings(max_examples=25, deadline=None)
@given(runs=st.lists(st.integers(1, 9), min_size=1, max_size=5), data=st.data())
def test_aggregate_points_equal_rliable_estimators_for_any_shape(runs: list[int], data: st.DataObject) -> None:
    values = [np.array(data.draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=n, max_size=n)))[:, None]
              for n in runs]
    layout, columns = layout_of({"x": values})
    point = Aggregates(layout, [columns["x"]]).point()[0]
    np.testing.assert_allclose(point, rliable_aggregates(*values), rtol=1e-9, atol=1e-9)


def test_improvement_of_several_criteria_on_the_same_runs_is_computed_per_criterion() -> None:
    """Two criteria measured on the same runs share their units (joint resampling) but not their
    order: each pair's statistic equals the one computed for that criterion alone."""
    rng = np.random.default_rng(8)
    layout = Layout([40, 41])  # X's runs, Y's runs: above DENSE_PAIRS, the cumulative-count path
    first = (Column(0, rng.normal(0.5, 1, 40)), Column(1, rng.normal(0, 1, 41)))
    second = (Column(0, -first[0].values), Column(1, rng.normal(0, 1, 41)))
    both = ImprovementProbability(layout, [[first], [second]])
    alone = [ImprovementProbability(layout, [[pair]]) for pair in (first, second)]
    counts = layout.counts(np.random.default_rng(0), 64)
    np.testing.assert_allclose(both.evaluate(counts)[:, 0], alone[0].evaluate(counts)[:, 0])
    np.testing.assert_allclose(both.evaluate(counts)[:, 1], alone[1].evaluate(counts)[:, 0])
