"""The scoring engine: stored runs -> criterion cells with confidence intervals -> normalized scores
-> aggregates across workloads, overall score with its interval, ranks and rank stability.

Every interval comes from one vectorized stratified bootstrap (:mod:`rlcompare.scoring.bootstrap`)
that resamples the seeds of each (adapter, workload) pair; the statistics of one pair's runs are
resampled jointly, since a seed's run is one replicate of everything measured on it.

Normalization (documented per criterion in docs/criteria.md) maps every per-seed value to a score
where higher is better and the best adapter's mean is about 1:

``ratio``      higher: v / best mean on the workload; lower: best mean / v
``return``     (v - untrained return) / (success threshold - untrained return), per workload
``share``      v (or 1 - v when lower is better)
``half-life``  0.5 ** (v / half_life) (lower is better)

A censored seed (``+inf``: the event never happened within the budget) scores 0.

**Missing data never raises a rank** (docs/criteria.md, "Missing data"):

1. Runs that broke a validity rule (status ``invalid``) count as not completed and contribute to no
   other performance criterion.
2. On a workload an adapter was asked to run (its runs started) but has no valid run on, it scores
   the worst score of the workload (0, or the lowest observed if lower) on every per-workload
   criterion other adapters have a value for. A pair refused up front does not apply.
3. A per-workload criterion that some adapter with valid runs has no value for, and a development
   criterion that some compared adapter has no value for, is left out of the overall score of every
   adapter (common support); the matrix lists what was left out and why.
4. Ranks order adapters first by the number of workloads they have a valid result on, then by
   overall score: an adapter that failed where another succeeded, and succeeded nowhere the other
   failed, always ranks below it, whatever the weights.
5. Before all of that, ranks order adapters by their parity standing (docs/parity.md): one whose
   update differs from the reference with no known variant to explain it ranks below one whose
   update was never verified, which ranks below one verified (or differing in a named way). A store
   whose runs record no parity verdicts ranks as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlcompare.parity.corrections import STANDING_TIER
from rlcompare.scoring.bootstrap import (
    DEFAULT_REPS,
    Aggregates,
    Column,
    ColumnMeans,
    Estimate,
    ImprovementProbability,
    Interval,
    Layout,
    ScoreDistribution,
    WeightedMean,
    aggregate_intervals,
    bootstrap,
)
from rlcompare.scoring.criteria import (
    ALL_WORKLOADS,
    CATEGORIES,
    HIGHER,
    PERFORMANCE,
    VALUE_COLUMNS,
    Criterion,
    CriterionResult,
    CriterionValue,
    MeasurementCache,
    ScoringData,
)
from rlcompare.scoring.profiles import WeightProfile
from rlcompare.store.records import STARTED_STATUSES

if TYPE_CHECKING:
    from rlcompare.scoring.criteria import ScoringCatalogue
    from rlcompare.store.sqlite_store import Store

AGGREGATES = ("iqm", "mean", "median", "optimality_gap")

MISSING_DATA_RULE = (
    "Invalid runs count as not completed and nowhere else. On a workload an adapter was asked to run "
    "but has no valid run on, it scores the workload's worst score on every criterion others have a "
    "value for; refused pairs do not apply. A criterion some compared adapter has no value for is left "
    "out of every overall score. Ranks order adapters by the number of workloads with a valid result, "
    "then by overall score."
)


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


def aggregate_estimates(
    score_dict: Mapping[str, np.ndarray | list[np.ndarray]], reps: int = DEFAULT_REPS, seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict[str, Estimate]]:
    """IQM, mean, median and optimality gap with stratified-bootstrap intervals for each key of
    ``score_dict`` (rliable's ``num_runs x num_tasks`` arrays, or lists of them)."""
    return aggregate_intervals(score_dict, reps=reps, confidence=confidence, seed=seed)


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
    valid_workloads: int = 0
    #: Workloads it was asked to run but has no valid run on (scored the worst there).
    failed_workloads: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "adapter": self.adapter, "framework": self.framework,
            "score": _estimate_dict(self.score), "rank": self.rank, "rank_stability": self.rank_stability,
            "weight_coverage": self.weight_coverage, "missing_criteria": self.missing_criteria,
            "valid_workloads": self.valid_workloads, "failed_workloads": self.failed_workloads,
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
    #: Runs that started but do not count: invalid, failed, timed out, interrupted (with reasons).
    excluded_runs: list[dict[str, Any]] = field(default_factory=list)
    #: (criterion, workload or '*') left out of every overall score, and why.
    left_out: list[dict[str, str]] = field(default_factory=list)
    #: (criterion, adapter, workload) scored the worst because the adapter has no valid run there.
    imputed: list[dict[str, Any]] = field(default_factory=list)
    #: Per adapter, its parity standing (None: no run records a verdict).
    parity: dict[str, str] | None = None

    def cell(self, criterion: str, adapter: str, workload_id: str = ALL_WORKLOADS) -> CriterionValue | None:
        return self.cells.get((criterion, adapter, workload_id))

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.to_dict(),
            "options": {name: getattr(self.options, name) for name in self.options.__dataclass_fields__},
            "missing_data_rule": MISSING_DATA_RULE,
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
            "excluded_runs": self.excluded_runs,
            "left_out": self.left_out,
            "imputed": self.imputed,
            "errors": self.errors,
            # only where runs record verdicts: a matrix of older runs reads back the same
            **({"parity": self.parity} if self.parity is not None else {}),
        }


def _describe(criterion: Criterion) -> dict[str, Any]:
    return criterion.describe()


def _estimate_dict(estimate: Estimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {"point": _finite(estimate.point), "low": _finite(estimate.low), "high": _finite(estimate.high),
            "n": estimate.n}


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


# -- entry points ------------------------------------------------------------------------------------


def score_store(
    store: Store, catalogue: ScoringCatalogue, profile: WeightProfile, options: ScoringOptions | None = None,
    cache: MeasurementCache | None = None, inputs: dict[str, Any] | None = None,
) -> ScoreMatrix:
    """Score everything in ``store`` with the criteria of ``catalogue``. Runs of an older
    version of a workload (another digest under the same id) are not pooled with the current ones:
    they are listed as stale and left out."""
    current, stale = split_stale_runs(store.runs_frame())
    kept = set(current["run_id"])

    def curves() -> pd.DataFrame:
        frame = store.curves_frame()
        return frame[frame["run_id"].isin(kept)]

    data = ScoringData(current, curves=curves, catalogue=catalogue,
                       cache=cache if cache is not None else MeasurementCache.default(), stale_runs=stale)
    return score(data, catalogue.criteria, profile, options, inputs)


def split_stale_runs(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(current, stale): per workload id, the runs of its current spec (the digest of its most
    recently finished run) and the runs of any other digest."""
    if runs.empty:
        return runs, runs
    finished = pd.to_numeric(runs["finished_at"], errors="coerce").fillna(-np.inf)
    latest = runs.assign(_finished=finished).sort_values("_finished", kind="stable")
    current_digest = latest.groupby("workload_id")["workload_digest"].last()
    is_current = runs["workload_digest"].to_numpy() == runs["workload_id"].map(current_digest).to_numpy()
    return runs[is_current].reset_index(drop=True), runs[~is_current].reset_index(drop=True)


def score(
    data: ScoringData, criteria: Mapping[str, Criterion], profile: WeightProfile,
    options: ScoringOptions | None = None, inputs: dict[str, Any] | None = None,
) -> ScoreMatrix:
    """The scoring matrix of ``data`` under ``profile``. When ``inputs`` is given, it receives the
    columns every statistic was computed from (the scaling benchmark replays them in rliable)."""
    options = options or ScoringOptions()
    # performance first, then development; registration order within a category (a stable sort)
    order = {category: i for i, category in enumerate(CATEGORIES)}
    criteria = dict(sorted(criteria.items(), key=lambda item: order.get(item[1].category, 99)))
    results, errors = _compute_all(data, criteria)
    values = _values_frame(results)
    normalized, references = _normalize_all(data, criteria, values)
    support = _apply_missing_data_rule(data, criteria, normalized)
    present = [cid for cid in criteria if (support.scored["criterion"] == cid).any()]
    weights = profile.resolve(criteria, present)

    layout = _UnitLayout()
    raw = values[np.isfinite(values["value"].to_numpy())]
    raw_cells = layout.columns(raw, "value")
    everything = layout.columns(support.all_scores, "score")
    scored = layout.columns(support.scored, "score")
    built = layout.build()

    raw_stat = ColumnMeans(built, [column for _, column in raw_cells])
    aggregate_sets = _group_columns(everything, ("criterion", "adapter"))
    aggregate_stat = Aggregates(built, [columns for _, columns in aggregate_sets])
    overall_sets = _overall_sets(data, scored, weights)
    overall_stat = WeightedMean(built, [weighted for _, weighted, _ in overall_sets])
    pairwise = _pairwise_sets(criteria, everything)
    improvement_stat = ImprovementProbability(built, [tasks for _, tasks in pairwise])
    profile_sets = _profile_sets(criteria, everything, options.profile_points)
    profile_stats = [ScoreDistribution(built, [columns for _, columns in sets], taus)
                     for _, taus, sets in profile_sets]
    if inputs is not None:
        inputs.update(cells=raw_cells, aggregates=aggregate_sets, overall=overall_sets, pairwise=pairwise,
                      profiles=profile_sets)
    intervals = bootstrap(built, [raw_stat, aggregate_stat, overall_stat, improvement_stat, *profile_stats],
                          options.reps, options.confidence, options.seed)
    raw_interval, aggregate_interval, overall_interval, improvement_interval = intervals[:4]

    cells = _cells(data, results, raw_cells, raw_interval, values)
    aggregates = {
        key: {name: Estimate(float(aggregate_interval.point[s, i]), float(aggregate_interval.low[s, i]),
                             float(aggregate_interval.high[s, i]), max(len(c.values) for c in columns))
              for i, name in enumerate(AGGREGATES)}
        for s, (key, columns) in enumerate(aggregate_sets)
    }
    overall = _overall(data, weights, overall_sets, overall_interval, support)
    _rank(overall, aggregates, weights, options, data.parity_standing)
    return ScoreMatrix(
        profile=profile, options=options, criteria=criteria, weights=weights, adapters=data.adapters,
        frameworks=data.adapter_frameworks, workloads=sorted(data.runs["workload_id"].unique().tolist()),
        cells=cells, references=references, aggregates=aggregates, overall=overall,
        improvement=_improvement(pairwise, improvement_interval),
        performance_profiles=_profiles(profile_sets, intervals[4:]), errors=errors,
        excluded_runs=_excluded_runs(data), left_out=support.left_out, imputed=support.imputed,
        parity=data.parity_standing,
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


def _values_frame(results: Mapping[str, CriterionResult]) -> pd.DataFrame:
    """Every criterion's per-seed values in one frame; NaN and -inf (no value at all) dropped,
    +inf (a censored seed) kept."""
    frames = [result.values.assign(criterion=cid) for cid, result in results.items() if not result.values.empty]
    values = (pd.concat(frames, ignore_index=True) if frames
              else pd.DataFrame({column: [] for column in (*VALUE_COLUMNS, "criterion")}))
    values["value"] = values["value"].astype(float)
    values["seed"] = values["seed"].astype(np.int64)
    raw = values["value"].to_numpy()
    return values[~np.isnan(raw) & (raw != -np.inf)].reset_index(drop=True)


def _excluded_runs(data: ScoringData) -> list[dict[str, Any]]:
    runs = data.runs
    started = runs[runs["status"].isin(STARTED_STATUSES) & (runs["status"] != "ok")]
    excluded = [{"run_id": r.run_id, "adapter": r.adapter, "workload": r.workload_id, "seed": int(r.seed),
                 "status": r.status, "reason": r.error if isinstance(r.error, str) else ""}
                for r in started.sort_values("run_id").itertuples()]
    stale = data.stale_runs
    if stale is not None and not stale.empty:
        current = dict(zip(runs["workload_id"], runs["workload_digest"], strict=True))
        excluded += [{"run_id": r.run_id, "adapter": r.adapter, "workload": r.workload_id, "seed": int(r.seed),
                      "status": "stale",
                      "reason": f"workload {r.workload_id!r} changed since this run (its digest {r.workload_digest}, "
                                f"now {current.get(r.workload_id, '?')}); not pooled with the current runs"}
                     for r in stale.sort_values("run_id").itertuples()]
    return excluded


# -- resampling units ---------------------------------------------------------------------------------


class _UnitLayout:
    """Collects cells of per-seed values and gives each distinct (adapter, workload, seeds) one
    resampling unit, so every statistic over the same runs shares their resampled counts."""

    def __init__(self) -> None:
        self._units: dict[tuple[str, str, bytes], int] = {}
        self._sizes: list[int] = []

    def columns(self, frame: pd.DataFrame, value_column: str) -> list[tuple[tuple[str, str, str], Column]]:
        """One column per (criterion, adapter, workload_id) of ``frame``, values in seed order."""
        if frame.empty:
            return []
        frame = frame.sort_values(["criterion", "adapter", "workload_id", "seed"], kind="stable")
        keys = frame[["criterion", "adapter", "workload_id"]].to_numpy()
        seeds = frame["seed"].to_numpy(dtype=np.int64)
        values = frame[value_column].to_numpy(dtype=float)
        change = np.flatnonzero((keys[1:] != keys[:-1]).any(axis=1)) + 1
        starts = np.concatenate([[0], change])
        ends = np.concatenate([change, [len(frame)]])
        out = []
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            criterion, adapter, workload_id = (str(part) for part in keys[start])
            unit_key = (adapter, workload_id, seeds[start:end].tobytes())
            unit = self._units.get(unit_key)
            if unit is None:
                unit = self._units[unit_key] = len(self._sizes)
                self._sizes.append(end - start)
            out.append(((criterion, adapter, workload_id), Column(unit, values[start:end].copy())))
        return out

    def build(self) -> Layout:
        return Layout(self._sizes)


def _group_columns(
    columns: Sequence[tuple[tuple[str, str, str], Column]], by: tuple[str, str],
) -> list[tuple[tuple[str, str], list[Column]]]:
    """Columns grouped by (criterion, adapter), in sorted order."""
    groups: dict[tuple[str, str], list[Column]] = {}
    for (criterion, adapter, _), column in columns:
        groups.setdefault((criterion, adapter), []).append(column)
    return sorted(groups.items())


# -- raw cells ---------------------------------------------------------------------------------------


def _cells(
    data: ScoringData, results: Mapping[str, CriterionResult],
    raw_cells: Sequence[tuple[tuple[str, str, str], Column]], interval: Interval, values: pd.DataFrame,
) -> dict[tuple[str, str, str], CriterionValue]:
    """One :class:`CriterionValue` per (criterion, adapter, workload): mean of the finite per-seed
    values with its bootstrap interval, or the reason it is missing."""
    totals = values.groupby(["criterion", "adapter", "workload_id"]).size().to_dict()
    finite_index = {key: i for i, (key, _) in enumerate(raw_cells)}
    attempted = data.attempted_runs.groupby(["adapter", "workload_id"]).size().to_dict()
    cells: dict[tuple[str, str, str], CriterionValue] = {}
    for key, total in totals.items():
        cid, adapter, workload_id = key
        result = results[cid]
        index = finite_index.get(key)
        column = raw_cells[index][1] if index is not None else None
        n = 0 if column is None else len(column.values)
        censored = int(total) - n
        notes = [result.notes[(adapter, workload_id)]] if (adapter, workload_id) in result.notes else []
        started = attempted.get((adapter, workload_id))
        if workload_id != ALL_WORKLOADS and started and total < started:
            notes.append(f"{total} of {started} seeds")
        label = result.labels.get((adapter, workload_id))
        if censored:
            notes.append(f"{censored} of {total} seeds did not reach it within the budget")
            if n == 0:
                label = label or "not reached"
        point = low = high = None
        if index is not None:
            point, low, high = (float(interval.point[index]), float(interval.low[index]), float(interval.high[index]))
        cells[key] = CriterionValue(
            criterion=cid, adapter=adapter, workload_id=workload_id,
            values=tuple() if column is None else tuple(column.values.tolist()),
            point=point, low=low, high=high, n=n, censored=censored, label=label, note="; ".join(notes) or None,
        )
    for cid, result in results.items():
        for adapter, workload_id, reason in result.missing.itertuples(index=False):
            key = (cid, adapter, workload_id)
            if key not in cells:  # a value wins over a stale reason
                cells[key] = CriterionValue(criterion=cid, adapter=adapter, workload_id=workload_id,
                                            missing=str(reason))
    return dict(sorted(cells.items()))


# -- normalization -----------------------------------------------------------------------------------


def _normalize_all(
    data: ScoringData, criteria: Mapping[str, Criterion], values: pd.DataFrame,
) -> tuple[pd.DataFrame, dict[str, dict[str, dict[str, Any]]]]:
    """Per-seed normalized scores (criterion, adapter, workload_id, seed, score) and the reference
    points each criterion was normalized with, per workload."""
    frames = []
    references: dict[str, dict[str, dict[str, Any]]] = {}
    for cid, of_criterion in values.groupby("criterion", sort=False):
        criterion = criteria[cid]
        scores, refs = normalize(criterion, of_criterion, data)
        frames.append(pd.DataFrame({
            "criterion": cid, "adapter": of_criterion["adapter"].to_numpy(),
            "workload_id": of_criterion["workload_id"].to_numpy(), "seed": of_criterion["seed"].to_numpy(),
            "score": scores,
        }))
        references[cid] = refs
    if not frames:
        empty = {"criterion": [], "adapter": [], "workload_id": [], "seed": np.zeros(0, np.int64), "score": []}
        return pd.DataFrame(empty), references
    normalized = pd.concat(frames, ignore_index=True)
    return normalized[np.isfinite(normalized["score"].to_numpy())].reset_index(drop=True), references


def normalize(criterion: Criterion, values: pd.DataFrame, data: ScoringData) -> tuple[np.ndarray, dict[str, dict[str, Any]]]:
    """Scores (higher is better, about 1 for the best) for a criterion's per-seed ``values``
    (columns adapter, workload_id, value), and the reference points used, per workload."""
    raw = values["value"].to_numpy(dtype=float)
    workloads = values["workload_id"]
    finite = np.isfinite(raw)
    higher = criterion.direction == HIGHER
    kind = criterion.normalization
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
            half_life = float(criterion.half_life)
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


# -- the missing-data rule ---------------------------------------------------------------------------


@dataclass
class _Support:
    """Normalized scores after the missing-data rule: ``all_scores`` (measured and imputed, for
    aggregates and pairwise views) and ``scored`` (what enters overall scores: common support)."""

    all_scores: pd.DataFrame
    scored: pd.DataFrame
    left_out: list[dict[str, str]]
    imputed: list[dict[str, Any]]
    valid_workloads: dict[str, set[str]]
    failed_workloads: dict[str, set[str]]


def _apply_missing_data_rule(
    data: ScoringData, criteria: Mapping[str, Criterion], normalized: pd.DataFrame,
) -> _Support:
    runs = data.runs
    started = runs[runs["status"].isin(STARTED_STATUSES)]
    started_pairs = started.groupby(["adapter", "workload_id"]).size().to_dict()
    valid = runs[runs["status"] == "ok"]
    valid_workloads: dict[str, set[str]] = {adapter: set() for adapter in data.adapters}
    for adapter, workload_id in zip(valid["adapter"], valid["workload_id"], strict=True):
        valid_workloads.setdefault(adapter, set()).add(workload_id)
    failed_workloads: dict[str, set[str]] = {adapter: set() for adapter in data.adapters}
    for (adapter, workload_id) in started_pairs:
        if workload_id not in valid_workloads.get(adapter, set()):
            failed_workloads.setdefault(adapter, set()).add(workload_id)

    # Whose gaps shrink the common support of the per-adapter criteria: the adapters with a valid
    # result somewhere. One without any ranks below all of them whatever its score (rule 4), so a
    # refused or failing adapter in the matrix does not take a criterion out of the others' scores.
    competitors = [adapter for adapter in data.adapters if valid_workloads.get(adapter)] or list(data.adapters)
    have = normalized.groupby(["criterion", "workload_id"])["adapter"].agg(lambda a: set(a.tolist())).to_dict()
    worst = normalized.groupby(["criterion", "workload_id"])["score"].min().to_dict()
    imputed_rows: list[dict[str, Any]] = []
    imputed: list[dict[str, Any]] = []
    left_out: list[dict[str, str]] = []
    drop: set[tuple[str, str]] = set()
    for (cid, workload_id), adapters in sorted(have.items()):
        criterion = criteria[cid]
        if workload_id == ALL_WORKLOADS:
            lacking = [a for a in competitors if a not in adapters]
            if lacking:
                drop.add((cid, workload_id))
                left_out.append({"criterion": cid, "workload": workload_id,
                                 "reason": f"no value for {', '.join(lacking)}"})
            continue
        if criterion.category != PERFORMANCE:
            continue
        lacking_valid = [a for a in data.adapters if a not in adapters
                         and workload_id in valid_workloads.get(a, set())]
        if lacking_valid:
            drop.add((cid, workload_id))
            left_out.append({"criterion": cid, "workload": workload_id,
                             "reason": f"no value for {', '.join(lacking_valid)} despite valid runs"})
            continue
        floor = min(0.0, float(worst[(cid, workload_id)]))
        for adapter in data.adapters:
            if adapter in adapters or workload_id not in failed_workloads.get(adapter, set()):
                continue
            runs_started = int(started_pairs[(adapter, workload_id)])
            imputed.append({"criterion": cid, "adapter": adapter, "workload": workload_id, "score": floor,
                            "reason": "no valid run"})
            imputed_rows += [{"criterion": cid, "adapter": adapter, "workload_id": workload_id,
                              "seed": -1 - i, "score": floor} for i in range(runs_started)]
    scores = normalized
    if imputed_rows:
        scores = pd.concat([normalized, pd.DataFrame(imputed_rows)], ignore_index=True)
    scores = scores.astype({"seed": np.int64})
    keys = list(zip(scores["criterion"], scores["workload_id"], strict=True))
    keep = np.array([key not in drop for key in keys], dtype=bool) if keys else np.zeros(0, dtype=bool)
    return _Support(scores, scores[keep], left_out, imputed, valid_workloads, failed_workloads)


# -- overall score, ranks -----------------------------------------------------------------------------


def _overall_sets(
    data: ScoringData, scored: Sequence[tuple[tuple[str, str, str], Column]], weights: Mapping[str, float],
) -> list[tuple[str, list[tuple[Column, float]], list[str]]]:
    """Per adapter: each (criterion, workload) column with its weight in the overall score, and the
    positively weighted criteria it has no column for. A criterion's weight is shared evenly by the
    adapter's workloads; weights are renormalized over the criteria it has."""
    by_adapter: dict[str, dict[str, list[Column]]] = {}
    for (cid, adapter, _), column in scored:
        if weights.get(cid, 0.0) > 0:
            by_adapter.setdefault(adapter, {}).setdefault(cid, []).append(column)
    sets = []
    for adapter in data.adapters:
        columns = by_adapter.get(adapter, {})
        coverage = sum(weights[cid] for cid in columns)
        missing = sorted(cid for cid, w in weights.items() if w > 0 and cid not in columns)
        weighted = [(column, weights[cid] / coverage / len(of_criterion))
                    for cid, of_criterion in columns.items() for column in of_criterion] if coverage > 0 else []
        sets.append((adapter, weighted, missing))
    return sets


def _overall(
    data: ScoringData, weights: Mapping[str, float],
    sets: Sequence[tuple[str, list[tuple[Column, float]], list[str]]], interval: Interval, support: _Support,
) -> dict[str, OverallScore]:
    overall: dict[str, OverallScore] = {}
    for s, (adapter, weighted, missing) in enumerate(sets):
        framework = data.adapter_frameworks.get(adapter, "?")
        coverage = float(sum(w for cid, w in weights.items() if cid not in missing))
        estimate = None
        if weighted:
            n = max(len(column.values) for column, _ in weighted)
            estimate = Estimate(float(interval.point[s]), float(interval.low[s]), float(interval.high[s]), n)
        overall[adapter] = OverallScore(
            adapter, framework, estimate, coverage if weighted else 0.0, missing,
            valid_workloads=len(support.valid_workloads.get(adapter, set())),
            failed_workloads=sorted(support.failed_workloads.get(adapter, set())),
        )
    return overall


def _tiered_ranks(tiers: np.ndarray, valid: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Competition ranks ("1224") by (parity tier desc, valid workloads desc, score desc), per column
    of ``scores``."""
    tier_above = tiers[None, :, None] > tiers[:, None, None]
    same_tier = tiers[None, :, None] == tiers[:, None, None]
    better = tier_above | same_tier & ((valid[None, :, None] > valid[:, None, None]) | (
        (valid[None, :, None] == valid[:, None, None]) & (scores[None, :, ...] > scores[:, None, ...])))
    return 1 + better.sum(axis=1)


def _rank(
    overall: Mapping[str, OverallScore], aggregates: Mapping[tuple[str, str], dict[str, Estimate]],
    weights: Mapping[str, float], options: ScoringOptions, parity: Mapping[str, str] | None = None,
) -> None:
    """Ranks by parity tier, valid workloads, then overall score; and the share of Dirichlet
    perturbations of the weights (around the profile, concentration ``options.concentration``)
    under which each adapter keeps its rank."""
    scored = [adapter for adapter, o in overall.items() if o.score is not None]
    if not scored:
        return
    tiers = np.array([STANDING_TIER[parity.get(a, "unverified")] if parity else 0 for a in scored], dtype=float)
    valid = np.array([overall[a].valid_workloads for a in scored], dtype=float)
    nominal = _tiered_ranks(tiers, valid, np.array([overall[a].score.point for a in scored])[:, None])[:, 0]
    criteria = [cid for cid, w in weights.items() if w > 0]
    means = np.array([[aggregates[(cid, a)]["mean"].point if (cid, a) in aggregates else np.nan
                       for cid in criteria] for a in scored])
    base = np.array([weights[cid] for cid in criteria])
    rng = np.random.default_rng(options.seed)
    draws = rng.dirichlet(options.concentration * base / base.sum(), size=options.stability_samples)
    available = ~np.isnan(means)
    with np.errstate(invalid="ignore", divide="ignore"):
        perturbed = (np.nan_to_num(means) @ draws.T) / (available @ draws.T)
    ranks = _tiered_ranks(tiers, valid, perturbed)
    for i, adapter in enumerate(scored):
        overall[adapter].rank = int(nominal[i])
        overall[adapter].rank_stability = float(np.mean(ranks[i] == nominal[i]))


# -- pairwise and profile views ----------------------------------------------------------------------


def _pairwise_sets(
    criteria: Mapping[str, Criterion], columns: Sequence[tuple[tuple[str, str, str], Column]],
) -> list[tuple[tuple[str, str, str, int], list[tuple[Column, Column]]]]:
    """For each per-workload criterion and pair of adapters: their (X, Y) columns on the workloads
    both have, keyed (criterion, x, y, workloads)."""
    by_criterion: dict[str, dict[str, dict[str, Column]]] = {}
    for (cid, adapter, workload_id), column in columns:
        if workload_id == ALL_WORKLOADS or not criteria[cid].per_workload:
            continue
        by_criterion.setdefault(cid, {}).setdefault(adapter, {})[workload_id] = column
    sets = []
    for cid in sorted(by_criterion):
        adapters = sorted(by_criterion[cid])
        for i, x in enumerate(adapters):
            for y in adapters[i + 1:]:
                common = sorted(set(by_criterion[cid][x]) & set(by_criterion[cid][y]))
                if common:
                    tasks = [(by_criterion[cid][x][w], by_criterion[cid][y][w]) for w in common]
                    sets.append(((cid, x, y, len(common)), tasks))
    return sets


def _improvement(
    pairwise: Sequence[tuple[tuple[str, str, str, int], list[tuple[Column, Column]]]], interval: Interval,
) -> dict[str, list[dict[str, Any]]]:
    """P(X > Y) with its interval for every pair on each per-workload criterion (rliable's
    estimator: Mann-Whitney U per workload, averaged over the workloads both have)."""
    results: dict[str, list[dict[str, Any]]] = {}
    for p, ((cid, x, y, workloads), _) in enumerate(pairwise):
        results.setdefault(cid, []).append({
            "x": x, "y": y, "p": float(interval.point[p]), "low": float(interval.low[p]),
            "high": float(interval.high[p]), "workloads": workloads,
        })
    return results


def _profile_sets(
    criteria: Mapping[str, Criterion], columns: Sequence[tuple[tuple[str, str, str], Column]], points: int,
) -> list[tuple[str, np.ndarray, list[tuple[str, list[Column]]]]]:
    """Score distributions for the criteria normalized as returns (rliable's performance profiles of
    normalized scores): per criterion its thresholds and each adapter's columns."""
    by_criterion: dict[str, dict[str, list[Column]]] = {}
    for (cid, adapter, workload_id), column in columns:
        criterion = criteria[cid]
        if workload_id == ALL_WORKLOADS or criterion.normalization != "return":
            continue
        by_criterion.setdefault(cid, {}).setdefault(adapter, []).append(column)
    sets = []
    for cid in sorted(by_criterion):
        scores = np.concatenate([c.values for cols in by_criterion[cid].values() for c in cols])
        taus = np.linspace(0.0, max(1.0, float(np.quantile(scores, 0.99))), points)
        sets.append((cid, taus, sorted(by_criterion[cid].items())))
    return sets


def _profiles(
    sets: Sequence[tuple[str, np.ndarray, list[tuple[str, list[Column]]]]], intervals: Sequence[Interval],
) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for (cid, taus, adapters), interval in zip(sets, intervals, strict=True):
        results[cid] = {
            "taus": taus.round(6).tolist(),
            "adapters": {adapter: {"point": interval.point[s].round(6).tolist(),
                                   "low": interval.low[s].round(6).tolist(),
                                   "high": interval.high[s].round(6).tolist()}
                         for s, (adapter, _) in enumerate(adapters)},
        }
    return results


def measurement_cache_path(store_path: str | Path) -> Path:
    """Kept for callers of the old layout: development measurements now live in the user cache."""
    return MeasurementCache.default_path()
