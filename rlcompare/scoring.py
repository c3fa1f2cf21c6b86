"""The scoring engine: stored runs -> criterion cells with confidence intervals -> normalized scores
-> aggregates across workloads, overall score with its interval, ranks and rank stability.

Statistics use rliable's estimators (``rliable.library.get_interval_estimates``, its stratified
bootstrap, and ``rliable.metrics``). Cells with the same number of seeds are stacked into one
``(num_runs x num_cells)`` array per call, so a store of 100,000 runs needs a handful of bootstrap
calls rather than one per cell; a stratified bootstrap resamples each column independently, so the
interval of each column is the one a call on that column alone would give.

Normalization (documented per criterion in docs/criteria.md) maps every per-seed value to a score
where higher is better and the best adapter's mean is about 1:

``ratio``      higher: v / best mean on the workload; lower: best mean / v
``return``     (v - untrained return) / (success threshold - untrained return), per workload
``share``      v (or 1 - v when lower is better)
``half-life``  0.5 ** (v / half_life) (lower is better)

A censored seed (``+inf``: the event never happened within the budget) scores 0. A missing cell is
left out of every aggregate and of the overall score (whose weights are renormalized over the
criteria that have data, reported as weight coverage); it is never scored as zero.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlcompare.criteria_api import (
    ALL_WORKLOADS,
    CATEGORIES,
    HIGHER,
    VALUE_COLUMNS,
    Criterion,
    CriterionResult,
    CriterionValue,
    MeasurementCache,
    ScoringData,
)
from rlcompare.profiles import WeightProfile
from rlcompare.stats import DEFAULT_REPS, Estimate, seeded_global_numpy

if TYPE_CHECKING:
    from rlcompare.plugins import Plugins
    from rlcompare.store import Store

#: Arrays handed to rliable: one ``(num_runs x num_columns)`` array, or a list of them when the
#: columns differ in their number of runs (resampled independently, as rliable does for lists).
ScoreArrays = np.ndarray | list[np.ndarray]
Recorder = list[tuple[dict[str, ScoreArrays], Callable[..., np.ndarray]]]


@dataclass(frozen=True)
class ScoringOptions:
    """How the matrix is computed."""

    reps: int = DEFAULT_REPS
    """Bootstrap repetitions for every interval."""
    seed: int = 0
    """Seeds the bootstrap and the weight perturbations: a store always scores the same."""
    confidence: float = 0.95
    """Coverage of the intervals."""
    stability_samples: int = 1000
    """Weight perturbations drawn for rank stability."""
    concentration: float = 100.0
    """Dirichlet concentration around the profile's weights (alpha = concentration x weight)."""
    profile_points: int = 21
    """Thresholds in each performance profile."""


# -- rliable, seeded ---------------------------------------------------------------------------------


class Bootstrap:
    """``rliable.library.get_interval_estimates`` with fixed reps and confidence, optionally
    recording each call (the scaling benchmark replays them to time rliable alone)."""

    def __init__(self, reps: int, confidence: float, recorder: Recorder | None = None) -> None:
        self.reps = reps
        self.confidence = confidence
        self.recorder = recorder

    def __call__(
        self, score_dict: dict[str, ScoreArrays], func: Callable[..., np.ndarray]
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        from rliable import library

        if self.recorder is not None:
            self.recorder.append((score_dict, func))
        with warnings.catch_warnings():  # arch deprecates the RandomState that rliable passes on
            warnings.simplefilter("ignore", FutureWarning)
            return library.get_interval_estimates(
                score_dict, func, reps=self.reps, confidence_interval_size=self.confidence
            )


def column_means(*arrays: np.ndarray) -> np.ndarray:
    """Mean of each column (each cell) across runs."""
    return np.concatenate([array.mean(axis=0) for array in arrays])


def aggregate_scores(*arrays: np.ndarray) -> np.ndarray:
    """[IQM, mean, median] across runs and tasks, with rliable's estimators; for a list of arrays
    with different numbers of runs, the same estimators over the pooled runs and task means."""
    from rliable import metrics

    if len(arrays) == 1:
        scores = arrays[0]
        return np.array([metrics.aggregate_iqm(scores), metrics.aggregate_mean(scores),
                         metrics.aggregate_median(scores)])
    from scipy.stats import trim_mean

    task_means = np.concatenate([array.mean(axis=0) for array in arrays])
    pooled = np.concatenate([array.ravel() for array in arrays])
    return np.array([trim_mean(pooled, proportiontocut=0.25), task_means.mean(), np.median(task_means)])


AGGREGATES = ("iqm", "mean", "median")


def aggregate_estimates(
    score_dict: Mapping[str, ScoreArrays], reps: int = DEFAULT_REPS, seed: int = 0, confidence: float = 0.95,
) -> dict[str, dict[str, Estimate]]:
    """IQM, mean and median with stratified-bootstrap intervals for each key of ``score_dict``
    (``num_runs x num_tasks`` arrays), exactly as rliable computes them."""
    with seeded_global_numpy(seed):
        return _aggregate_estimates(dict(score_dict), Bootstrap(reps, confidence))


def _aggregate_estimates(score_dict: dict[str, ScoreArrays], boot: Bootstrap) -> dict[str, dict[str, Estimate]]:
    results: dict[str, dict[str, Estimate]] = {}
    resampled = {key: arrays for key, arrays in score_dict.items() if _runs(arrays) > 1}
    points, intervals = boot(resampled, aggregate_scores) if resampled else ({}, {})
    for key, arrays in score_dict.items():
        n = _runs(arrays)
        if key in resampled:
            point, low, high = points[key], intervals[key][0], intervals[key][1]
        else:  # one run per task: nothing to resample, the interval is the point
            point = aggregate_scores(*(arrays if isinstance(arrays, list) else [arrays]))
            low = high = point
        results[key] = {name: Estimate(float(point[i]), float(low[i]), float(high[i]), n)
                        for i, name in enumerate(AGGREGATES)}
    return results


def _runs(arrays: ScoreArrays) -> int:
    return max(array.shape[0] for array in arrays) if isinstance(arrays, list) else arrays.shape[0]


# -- stacking cells by their number of runs ---------------------------------------------------------


@dataclass
class Blocks:
    """Per-seed values sorted by cell, with each cell's slice: the layout every step works on."""

    codes: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    starts: np.ndarray

    @classmethod
    def build(cls, codes: np.ndarray, values: np.ndarray, cells: int) -> Blocks:
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=cells)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        return cls(codes[order], values[order], counts, starts)

    def cell(self, index: int) -> np.ndarray:
        return self.values[self.starts[index]:self.starts[index] + self.counts[index]]

    def stacked(self, cells: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """``cells`` grouped by their number of values: (cells of the group, runs x cells array)."""
        cells = np.asarray(cells)
        groups = []
        for n in np.unique(self.counts[cells]):
            if n == 0:
                continue
            members = cells[self.counts[cells] == n]
            groups.append((members, self.values[self.starts[members][:, None] + np.arange(n)].T))
        return groups


def _as_arrays(groups: list[tuple[np.ndarray, np.ndarray]]) -> ScoreArrays:
    return groups[0][1] if len(groups) == 1 else [array for _, array in groups]


# -- the matrix --------------------------------------------------------------------------------------


@dataclass
class OverallScore:
    adapter: str
    framework: str
    score: Estimate | None
    weight_coverage: float
    missing_criteria: list[str]
    rank: int | None = None
    rank_stability: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "adapter": self.adapter, "framework": self.framework,
            "score": _estimate_dict(self.score), "rank": self.rank, "rank_stability": self.rank_stability,
            "weight_coverage": self.weight_coverage, "missing_criteria": self.missing_criteria,
        }


@dataclass
class ScoreMatrix:
    """Everything ``rlcompare score`` shows: raw cells, normalized aggregates, overall scores."""

    profile: WeightProfile
    options: ScoringOptions
    criteria: dict[str, Criterion]
    weights: dict[str, float]
    adapters: list[str]
    frameworks: dict[str, str]
    workloads: list[str]
    cells: dict[tuple[str, str, str], CriterionValue]
    references: dict[str, dict[str, dict[str, Any]]]
    aggregates: dict[tuple[str, str], dict[str, Estimate]]
    overall: dict[str, OverallScore]
    improvement: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    performance_profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def cell(self, criterion: str, adapter: str, workload_id: str = ALL_WORKLOADS) -> CriterionValue | None:
        return self.cells.get((criterion, adapter, workload_id))

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.to_dict(),
            "options": {name: getattr(self.options, name) for name in self.options.__dataclass_fields__},
            "criteria": [{**_describe(c), "weight": self.weights.get(cid, 0.0)} for cid, c in self.criteria.items()],
            "adapters": [self.overall[a].to_dict() for a in self.adapters],
            "workloads": self.workloads,
            "cells": [cell.to_dict() for cell in self.cells.values()],
            "scores": [
                {"criterion": cid, "adapter": adapter, **{name: _estimate_dict(e) for name, e in estimates.items()}}
                for (cid, adapter), estimates in self.aggregates.items()
            ],
            "references": self.references,
            "probability_of_improvement": self.improvement,
            "performance_profiles": self.performance_profiles,
            "errors": self.errors,
        }


def _describe(criterion: Any) -> dict[str, Any]:
    if hasattr(criterion, "describe"):
        return criterion.describe()
    return {name: getattr(criterion, name, None) for name in ("id", "title", "category", "unit", "direction", "method")}


def _estimate_dict(estimate: Estimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {"point": _finite(estimate.point), "low": _finite(estimate.low), "high": _finite(estimate.high),
            "n": estimate.n}


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


# -- entry points ------------------------------------------------------------------------------------


def measurement_cache_path(store_path: str | Path) -> Path:
    """Where expensive development measurements are cached: next to the store."""
    return Path(f"{store_path}.measurements.json")


def score_store(
    store: Store, plugins: Plugins, profile: WeightProfile, options: ScoringOptions | None = None,
    recorder: Recorder | None = None,
) -> ScoreMatrix:
    """Score everything in ``store`` with the criteria ``plugins`` registered."""
    data = ScoringData(store.runs_frame(), curves=store.curves_frame, plugins=plugins,
                       cache=MeasurementCache(measurement_cache_path(store.path)))
    return score(data, plugins.criteria, profile, options, recorder)


def score(
    data: ScoringData, criteria: Mapping[str, Criterion], profile: WeightProfile,
    options: ScoringOptions | None = None, recorder: Recorder | None = None,
) -> ScoreMatrix:
    """The scoring matrix of ``data`` under ``profile``."""
    options = options or ScoringOptions()
    # performance first, then development; registration order within a category (a stable sort)
    order = {category: i for i, category in enumerate(CATEGORIES)}
    criteria = dict(sorted(criteria.items(), key=lambda item: order.get(getattr(item[1], "category", None), 99)))
    results, errors = _compute_all(data, criteria)
    boot = Bootstrap(options.reps, options.confidence, recorder)
    with seeded_global_numpy(options.seed):
        cells, values = _raw_cells(data, criteria, results, boot)
        normalized, references = _normalize_all(data, criteria, values)
        aggregates = _aggregates(normalized, boot)
        present = [cid for cid in criteria if any(key[0] == cid for key in aggregates)]
        weights = profile.resolve(criteria, present)
        overall = _overall(data, normalized, weights, boot)
    _rank(overall, aggregates, weights, options)
    improvement = _probability_of_improvement(criteria, normalized)
    profiles = _performance_profiles(criteria, normalized, options.profile_points)
    return ScoreMatrix(
        profile=profile, options=options, criteria=criteria, weights=weights, adapters=data.adapters,
        frameworks=data.adapter_frameworks, workloads=sorted(data.runs["workload_id"].unique().tolist()),
        cells=cells, references=references, aggregates=aggregates, overall=overall,
        improvement=improvement, performance_profiles=profiles, errors=errors,
    )


def _compute_all(data: ScoringData, criteria: Mapping[str, Criterion]) -> tuple[dict[str, CriterionResult], list[str]]:
    """Every criterion's result; one that raises is reported and its cells are missing, so one bad
    criterion never breaks the matrix."""
    results: dict[str, CriterionResult] = {}
    errors: list[str] = []
    for cid, criterion in criteria.items():
        try:
            result = criterion.compute(data)
            if not isinstance(result, CriterionResult):
                raise TypeError(f"compute returned {type(result).__name__}, not CriterionResult")
        except Exception as exc:  # noqa: BLE001 - a plugin's failure is reported, not fatal
            reason = f"criterion failed: {type(exc).__name__}: {exc}".splitlines()[0]
            errors.append(f"{cid}: {reason}")
            result = CriterionResult.build(missing=[(a, ALL_WORKLOADS, reason) for a in data.adapters])
        results[cid] = result
    return results, errors


# -- raw cells ---------------------------------------------------------------------------------------


def _raw_cells(
    data: ScoringData, criteria: Mapping[str, Criterion], results: Mapping[str, CriterionResult], boot: Bootstrap,
) -> tuple[dict[tuple[str, str, str], CriterionValue], pd.DataFrame]:
    """One :class:`CriterionValue` per (criterion, adapter, workload): mean of the finite per-seed
    values with its bootstrap interval, or the reason it is missing."""
    frames = [result.values.assign(criterion=cid) for cid, result in results.items() if not result.values.empty]
    values = (pd.concat(frames, ignore_index=True) if frames
              else pd.DataFrame({column: [] for column in (*VALUE_COLUMNS, "criterion")}))
    values["value"] = values["value"].astype(float)
    # +inf is a censored seed; NaN and -inf are no value at all
    values = values[~np.isnan(values["value"]) & (values["value"] != -np.inf)]
    keys = ["criterion", "adapter", "workload_id"]
    grouped = values.groupby(keys, sort=True)
    codes = grouped.ngroup().to_numpy()
    index = grouped.size().index
    raw = values["value"].to_numpy()
    finite = np.isfinite(raw)
    cells_n = len(index)
    blocks = Blocks.build(codes[finite], raw[finite], cells_n)
    totals = np.bincount(codes, minlength=cells_n)

    point = np.full(cells_n, np.nan)
    low = np.full(cells_n, np.nan)
    high = np.full(cells_n, np.nan)
    groups = blocks.stacked(np.arange(cells_n))
    resampled = {f"n={array.shape[0]}": array for _, array in groups if array.shape[0] > 1}
    points, intervals = boot(resampled, column_means) if resampled else ({}, {})
    for members, array in groups:
        key = f"n={array.shape[0]}"
        if key in resampled:
            point[members], low[members], high[members] = points[key], intervals[key][0], intervals[key][1]
        else:
            point[members] = low[members] = high[members] = array[0]

    attempted = data.attempted_runs.groupby(["adapter", "workload_id"]).size().to_dict()
    cells: dict[tuple[str, str, str], CriterionValue] = {}
    for code, (cid, adapter, workload_id) in enumerate(index):
        result = results[cid]
        n, total = int(blocks.counts[code]), int(totals[code])
        censored = total - n
        notes = [result.notes[(adapter, workload_id)]] if (adapter, workload_id) in result.notes else []
        started = attempted.get((adapter, workload_id))
        if workload_id != ALL_WORKLOADS and started and total < started:
            notes.append(f"{total} of {started} seeds")
        label = result.labels.get((adapter, workload_id))
        if censored:
            notes.append(f"{censored} of {total} seeds did not reach it within the budget")
            if n == 0:
                label = label or "not reached"
        cells[(cid, adapter, workload_id)] = CriterionValue(
            criterion=cid, adapter=adapter, workload_id=workload_id, values=tuple() if n == 0 else blocks.cell(code),
            point=None if n == 0 else float(point[code]), low=None if n == 0 else float(low[code]),
            high=None if n == 0 else float(high[code]), n=n, censored=censored, label=label,
            note="; ".join(notes) or None,
        )
    for cid, result in results.items():
        for adapter, workload_id, reason in result.missing.itertuples(index=False):
            key = (cid, adapter, workload_id)
            if key not in cells:  # a value wins over a stale reason
                cells[key] = CriterionValue(criterion=cid, adapter=adapter, workload_id=workload_id,
                                            missing=str(reason))
    return dict(sorted(cells.items())), values


# -- normalization -----------------------------------------------------------------------------------


def _normalize_all(
    data: ScoringData, criteria: Mapping[str, Criterion], values: pd.DataFrame,
) -> tuple[pd.DataFrame, dict[str, dict[str, dict[str, Any]]]]:
    """Per-seed normalized scores (criterion, adapter, workload_id, score) and the reference
    points each criterion was normalized with, per workload."""
    frames = []
    references: dict[str, dict[str, dict[str, Any]]] = {}
    for cid, of_criterion in values.groupby("criterion", sort=False):
        criterion = criteria[cid]
        scores, refs = normalize(criterion, of_criterion, data)
        frames.append(pd.DataFrame({
            "criterion": cid, "adapter": of_criterion["adapter"].to_numpy(),
            "workload_id": of_criterion["workload_id"].to_numpy(), "score": scores,
        }))
        references[cid] = refs
    if not frames:
        return pd.DataFrame({"criterion": [], "adapter": [], "workload_id": [], "score": []}), references
    normalized = pd.concat(frames, ignore_index=True)
    return normalized[np.isfinite(normalized["score"].to_numpy())], references


def normalize(criterion: Criterion, values: pd.DataFrame, data: ScoringData) -> tuple[np.ndarray, dict[str, dict[str, Any]]]:
    """Scores (higher is better, about 1 for the best) for a criterion's per-seed ``values``
    (columns adapter, workload_id, value), and the reference points used, per workload."""
    raw = values["value"].to_numpy(dtype=float)
    workloads = values["workload_id"]
    finite = np.isfinite(raw)
    higher = getattr(criterion, "direction", HIGHER) == HIGHER
    kind = getattr(criterion, "normalization", "ratio")
    cell_means = values[finite].groupby(["workload_id", "adapter"])["value"].mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "ratio":
            best = cell_means.groupby(level=0).max() if higher else cell_means.groupby(level=0).min()
            ref = workloads.map(best).to_numpy(dtype=float)
            if higher:
                scores = np.where(ref > 0, raw / ref, 1.0)
            else:
                scores = np.where(raw > 0, ref / raw, np.where(raw == 0, 1.0, 0.0))
            references = {str(w): {"best": float(b)} for w, b in best.items()}
        elif kind == "return":
            low, high, references = _return_references(values[finite], data)
            lo = workloads.map(low).to_numpy(dtype=float)
            span = workloads.map(high).to_numpy(dtype=float) - lo
            scores = np.where(span > 0, (raw - lo) / span, 1.0)
            scores = scores if higher else 1.0 - scores
        elif kind == "share":
            scores = raw if higher else 1.0 - raw
            references = {}
        elif kind == "half-life":
            half_life = float(getattr(criterion, "half_life", 365.0))
            decay = np.power(0.5, raw / half_life)
            scores = decay if not higher else 1.0 - decay
            references = {ALL_WORKLOADS: {"half_life": half_life}}
        else:
            raise ValueError(f"criterion {criterion.id!r}: unknown normalization {kind!r}")
    scores = np.where(finite, scores, 0.0)  # a censored seed (never happened in the budget) scores 0
    return scores.astype(float), references


def _return_references(values: pd.DataFrame, data: ScoringData) -> tuple[dict[str, float], dict[str, float], dict[str, dict[str, Any]]]:
    """Per workload: the untrained return (step-0 evaluations, else the lowest value seen) and the
    success threshold (else the highest value seen)."""
    lowest = values.groupby("workload_id")["value"].min()
    highest = values.groupby("workload_id")["value"].max()
    untrained = data.untrained_returns
    thresholds = data.success_thresholds
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    references: dict[str, dict[str, Any]] = {}
    for workload_id in lowest.index:
        lo = untrained.get(workload_id)
        lo_source = "untrained return (evaluation at step 0)"
        if lo is None or not math.isfinite(lo):
            lo, lo_source = float(lowest[workload_id]), "lowest value seen"
        hi = thresholds.get(workload_id)
        hi_source = "success threshold"
        if hi is None or not hi > lo:
            hi, hi_source = float(highest[workload_id]), "highest value seen"
        low[workload_id], high[workload_id] = float(lo), float(hi)
        references[str(workload_id)] = {"low": float(lo), "low_from": lo_source, "high": float(hi),
                                        "high_from": hi_source, "degenerate": not hi > lo}
    return low, high, references


# -- aggregates, overall score, ranks ----------------------------------------------------------------


@dataclass
class _Layout:
    """Normalized scores of one criterion (or of all) laid out per adapter for rliable."""

    blocks: Blocks
    cells: pd.MultiIndex


def _layout(normalized: pd.DataFrame, keys: Sequence[str]) -> _Layout:
    grouped = normalized.groupby(list(keys), sort=True)
    codes = grouped.ngroup().to_numpy()
    index = grouped.size().index
    return _Layout(Blocks.build(codes, normalized["score"].to_numpy(dtype=float), len(index)), index)


def _aggregates(normalized: pd.DataFrame, boot: Bootstrap) -> dict[tuple[str, str], dict[str, Estimate]]:
    """Per criterion and adapter: IQM, mean and median of normalized scores across workloads."""
    results: dict[tuple[str, str], dict[str, Estimate]] = {}
    for cid, of_criterion in normalized.groupby("criterion", sort=True):
        layout = _layout(of_criterion, ["adapter", "workload_id"])
        adapters = layout.cells.get_level_values(0)
        score_dict = {}
        for adapter in adapters.unique():
            members = np.flatnonzero(adapters == adapter)
            score_dict[adapter] = _as_arrays(layout.blocks.stacked(members))
        for adapter, estimates in _aggregate_estimates(score_dict, boot).items():
            results[(str(cid), str(adapter))] = estimates
    return results


def _overall(
    data: ScoringData, normalized: pd.DataFrame, weights: Mapping[str, float], boot: Bootstrap,
) -> dict[str, OverallScore]:
    """Weighted mean of each criterion's mean normalized score, with a stratified-bootstrap interval
    over every (criterion, workload) column; weights renormalized over the criteria with data."""
    weighted = normalized[normalized["criterion"].isin([cid for cid, w in weights.items() if w > 0])]
    layout = _layout(weighted, ["adapter", "criterion", "workload_id"])
    adapters = layout.cells.get_level_values(0)
    criteria_of = layout.cells.get_level_values(1)
    overall: dict[str, OverallScore] = {}
    for adapter in data.adapters:
        framework = data.adapter_frameworks.get(adapter, "?")
        members = np.flatnonzero(adapters == adapter)
        available = sorted(set(criteria_of[members]))
        coverage = float(sum(weights[cid] for cid in available))
        missing = sorted(cid for cid, w in weights.items() if w > 0 and cid not in available)
        if coverage <= 0:
            overall[adapter] = OverallScore(adapter, framework, None, 0.0, missing)
            continue
        # a criterion's weight is shared evenly by its workloads
        of_cell = pd.Series(criteria_of[members])
        per_cell = of_cell.map(weights).to_numpy() / coverage / of_cell.map(of_cell.value_counts()).to_numpy()
        cell_weight = dict(zip(members.tolist(), per_cell.tolist(), strict=True))
        groups = layout.blocks.stacked(members)
        group_weights = [np.array([cell_weight[m] for m in group_members]) for group_members, _ in groups]

        def weighted_mean(*arrays: np.ndarray, _weights: list[np.ndarray] = group_weights) -> np.ndarray:
            return np.array([sum(float(a.mean(axis=0) @ w) for a, w in zip(arrays, _weights, strict=True))])

        point = weighted_mean(*[array for _, array in groups])[0]
        estimate = Estimate(point, point, point, max(array.shape[0] for _, array in groups))
        if estimate.n > 1:
            points, intervals = boot({adapter: _as_arrays(groups)}, weighted_mean)
            estimate = Estimate(float(points[adapter][0]), float(intervals[adapter][0][0]),
                                float(intervals[adapter][1][0]), estimate.n)
        overall[adapter] = OverallScore(adapter, framework, estimate, coverage, missing)
    return overall


def _competition_ranks(scores: np.ndarray) -> np.ndarray:
    """1 + the number of strictly better scores ("1224" ranking), per column."""
    return 1 + (scores[None, :, ...] > scores[:, None, ...]).sum(axis=1)


def _rank(
    overall: Mapping[str, OverallScore], aggregates: Mapping[tuple[str, str], dict[str, Estimate]],
    weights: Mapping[str, float], options: ScoringOptions,
) -> None:
    """Ranks by overall score, and the share of Dirichlet perturbations of the weights (around the
    profile, concentration ``options.concentration``) under which each adapter keeps its rank."""
    scored = [adapter for adapter, o in overall.items() if o.score is not None]
    if not scored:
        return
    nominal = _competition_ranks(np.array([overall[a].score.point for a in scored]))
    criteria = [cid for cid, w in weights.items() if w > 0]
    means = np.array([[aggregates[(cid, a)]["mean"].point if (cid, a) in aggregates else np.nan
                       for cid in criteria] for a in scored])
    base = np.array([weights[cid] for cid in criteria])
    rng = np.random.default_rng(options.seed)
    draws = rng.dirichlet(options.concentration * base / base.sum(), size=options.stability_samples)
    available = ~np.isnan(means)
    with np.errstate(invalid="ignore", divide="ignore"):
        perturbed = (np.nan_to_num(means) @ draws.T) / (available @ draws.T)
    ranks = _competition_ranks(perturbed)
    for i, adapter in enumerate(scored):
        overall[adapter].rank = int(nominal[i])
        overall[adapter].rank_stability = float(np.mean(ranks[i] == nominal[i]))


# -- pairwise and profile views ----------------------------------------------------------------------


def _probability_of_improvement(
    criteria: Mapping[str, Criterion], normalized: pd.DataFrame,
) -> dict[str, list[dict[str, Any]]]:
    """P(X > Y) for every pair of adapters on each per-workload criterion, with rliable's estimator
    (Mann-Whitney U per workload, averaged over the workloads both have), on normalized scores."""
    from rliable import metrics

    results: dict[str, list[dict[str, Any]]] = {}
    for cid, of_criterion in normalized.groupby("criterion", sort=True):
        if not getattr(criteria[cid], "per_workload", True):
            continue
        layout = _layout(of_criterion, ["adapter", "workload_id"])
        position = {key: i for i, key in enumerate(layout.cells)}
        by_adapter: dict[str, set[str]] = {}
        for adapter, workload_id in layout.cells:
            by_adapter.setdefault(adapter, set()).add(workload_id)
        adapters = sorted(by_adapter)
        pairs = []
        for i, x in enumerate(adapters):
            for y in adapters[i + 1:]:
                common = sorted(by_adapter[x] & by_adapter[y])
                if not common:
                    continue
                xs = [layout.blocks.cell(position[(x, w)]) for w in common]
                ys = [layout.blocks.cell(position[(y, w)]) for w in common]
                if len({len(a) for a in xs}) == 1 and len({len(b) for b in ys}) == 1:
                    p = metrics.probability_of_improvement(np.column_stack(xs), np.column_stack(ys))
                else:
                    p = np.mean([metrics.probability_of_improvement(a[:, None], b[:, None]) for a, b in zip(xs, ys, strict=True)])
                pairs.append({"x": x, "y": y, "p": float(p), "workloads": len(common)})
        results[str(cid)] = pairs
    return results


def _performance_profiles(
    criteria: Mapping[str, Criterion], normalized: pd.DataFrame, points: int,
) -> dict[str, dict[str, Any]]:
    """Score distributions (rliable's performance profiles): the share of runs, over every workload,
    whose normalized score exceeds each threshold tau."""
    from rliable import library

    results: dict[str, dict[str, Any]] = {}
    for cid, of_criterion in normalized.groupby("criterion", sort=True):
        if not getattr(criteria[cid], "per_workload", True):
            continue
        scores = of_criterion["score"].to_numpy(dtype=float)
        taus = np.linspace(0.0, max(1.0, float(np.quantile(scores, 0.99))), points)
        results[str(cid)] = {
            "taus": taus.round(6).tolist(),
            "adapters": {
                str(adapter): library.score_distributions(group["score"].to_numpy(dtype=float), taus).round(6).tolist()
                for adapter, group in of_criterion.groupby("adapter", sort=True)
            },
        }
    return results
