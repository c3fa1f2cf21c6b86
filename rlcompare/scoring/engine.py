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
3. **Unknown never helps**: a criterion some adapter has a value for scores every adapter without
   one the worst (0, or the lowest observed if lower) — a development criterion every adapter, a
   per-workload criterion every adapter whose runs started on the workload — so an unknown registry
   fact, a failed measurement or a missing distribution never takes a criterion out of anyone's
   overall score. Only a criterion no adapter has a value for is left out (its weight passes to its
   category). The matrix lists what was imputed and why.
4. Ranks order adapters by tier before their overall score: parity standing (docs/parity.md), the
   number of workloads with a valid result, then (learning first, unless the profile opts out) the
   workloads solved and learned; adapters of one tier whose overall scores are not separated share a
   rank (:mod:`rlcompare.scoring.ranking`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

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
    percentile_interval,
)
from rlcompare.scoring.criteria import (
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
from rlcompare.scoring.missing_data import MISSING_DATA_RULE, Support, apply_missing_data_rule
from rlcompare.scoring.profiles import WeightProfile
from rlcompare.scoring.ranking import RANKING_RULE, Learning, Tier, learning_by_adapter, rank_adapters
from rlcompare.store.records import STARTED_STATUSES

if TYPE_CHECKING:
    from rlcompare.scoring.criteria import ScoringCatalogue
    from rlcompare.store.sqlite_store import Store

AGGREGATES = ("iqm", "mean", "median", "optimality_gap")

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
    """Joint replicates behind ties and rank stability (at most ``reps``): bootstrap replicate i of
    the seeds, scored under weight draw i."""
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
    #: Workloads whose success threshold the valid seeds' mean final return reaches.
    solved_workloads: int = 0
    #: Workloads learned (at least half of the way from the untrained return to the threshold).
    learned_workloads: int = 0
    #: What ranks it before its overall score, in words (``rlcompare.scoring.ranking.Tier``).
    tier: str = ""
    #: Adapters sharing its rank: the bootstrap does not separate their overall scores.
    tied_with: list[str] = field(default_factory=list)
    #: Why it ranks below an adapter with a lower overall score (None when it does not).
    rank_note: str | None = None

    @property
    def rank_text(self) -> str:
        """The rank as every output prints it: ``2=`` when tied, ``-`` when unranked."""
        if self.rank is None:
            return "-"
        return f"{self.rank}=" if self.tied_with else str(self.rank)

    def to_dict(self) -> dict[str, Any]:
        return {
            "adapter": self.adapter, "framework": self.framework,
            "score": _estimate_dict(self.score), "rank": self.rank, "rank_stability": self.rank_stability,
            "tied": bool(self.tied_with), "tied_with": self.tied_with, "tier": self.tier,
            "rank_note": self.rank_note,
            "weight_coverage": self.weight_coverage, "missing_criteria": self.missing_criteria,
            "valid_workloads": self.valid_workloads, "failed_workloads": self.failed_workloads,
            "solved_workloads": self.solved_workloads, "learned_workloads": self.learned_workloads,
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
    #: Criteria no adapter has a value for (workload '*'), left out of every overall score, and why.
    left_out: list[dict[str, str]] = field(default_factory=list)
    #: (criterion, adapter, workload) scored the worst: no valid run there, or no value where others have one.
    imputed: list[dict[str, Any]] = field(default_factory=list)
    #: Per adapter, its parity standing (None: no run records a verdict).
    parity: dict[str, str] | None = None
    #: Each pair of ranked adapters of one tier: P(x's overall score > y's) over the joint
    #: replicates, and whether that separates them (else they share a rank).
    overall_comparisons: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ranked_adapters(self) -> list[str]:
        """The adapters in rank order, tied ones by score (unranked last, then by id): the order
        every ranking lists, so a higher score is never listed below a lower one of the same rank."""
        def key(adapter: str) -> tuple[bool, int, float, str]:
            o = self.overall[adapter]
            return (o.rank is None, o.rank or 0, -(o.score.point if o.score is not None else 0.0), adapter)

        return sorted(self.adapters, key=key)

    def cell(self, criterion: str, adapter: str, workload_id: str = ALL_WORKLOADS) -> CriterionValue | None:
        return self.cells.get((criterion, adapter, workload_id))

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.to_dict(),
            "options": {name: getattr(self.options, name) for name in self.options.__dataclass_fields__},
            "missing_data_rule": MISSING_DATA_RULE,
            "ranking_rule": RANKING_RULE,
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
            "overall_comparisons": self.overall_comparisons,
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
    data = store_scoring_data(store, catalogue, cache if cache is not None else MeasurementCache.default())
    return score(data, catalogue.criteria, profile, options, inputs)


def store_scoring_data(store: Store, catalogue: ScoringCatalogue, cache: MeasurementCache) -> ScoringData:
    """What the criteria of ``catalogue`` receive for ``store``: its current runs (those of an older
    spec of a workload kept apart as stale) and, loaded on demand, their curves."""
    current, stale = split_stale_runs(store.runs_frame())
    kept = set(current["run_id"])

    def curves() -> pd.DataFrame:
        frame = store.curves_frame()
        return frame[frame["run_id"].isin(kept)]

    return ScoringData(current, curves=curves, catalogue=catalogue, cache=cache, stale_runs=stale)


def split_stale_runs(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(current, stale): per workload id, the runs of its current spec (the digest of its most
    recently finished run) and the runs of any other digest."""
    if runs.empty:
        return runs, runs
    finished = pd.to_numeric(runs["finished_at"], errors="coerce").fillna(-np.inf)
    # a native-arm workload is resolved per adapter (each its own recommended settings, so its own
    # digest): its current spec is per (workload, adapter); a canonical one's is the workload's
    spec_key = runs["workload_id"].astype(str)
    if "workload_json" in runs.columns:
        native = runs["workload_json"].map(_is_native).to_numpy(dtype=bool)
        spec_key = spec_key.where(~native, spec_key + "\x00" + runs["adapter"].astype(str))
    latest = runs.assign(_finished=finished, _spec=spec_key).sort_values("_finished", kind="stable")
    current_digest = latest.groupby("_spec")["workload_digest"].last()
    is_current = runs["workload_digest"].to_numpy() == spec_key.map(current_digest).to_numpy()
    superseded = np.zeros(len(runs), dtype=bool)
    if "seed" in runs.columns and "status" in runs.columns:
        # a pair refused once (its record: seed -1, unsupported) and run since: the refusal is history,
        # neither a current record nor a run that did not count
        refused = ((runs["status"].astype(str) == "unsupported") & (pd.to_numeric(runs["seed"], errors="coerce") < 0))
        if refused.any():
            pair = runs["workload_id"].astype(str) + "\x00" + runs["adapter"].astype(str)
            last_started = finished[~refused.to_numpy()].groupby(pair[~refused.to_numpy()]).max()
            superseded = refused.to_numpy() & (finished.to_numpy() < pair.map(last_started).fillna(-np.inf).to_numpy())
    keep = ~superseded
    return (runs[is_current & keep].reset_index(drop=True), runs[~is_current & keep].reset_index(drop=True))


def _is_native(text: Any) -> bool:
    """Whether a run's recorded workload is a native-arm one (``settings = "native"``)."""
    if not isinstance(text, str) or '"native"' not in text:
        return False
    try:
        return json.loads(text).get("settings") == "native"
    except (ValueError, AttributeError):
        return False


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
    support = apply_missing_data_rule(data, criteria, normalized, results)
    with_values = set(support.scores["criterion"].unique().tolist())
    weights = profile.resolve(criteria, [cid for cid in criteria if cid in with_values])

    layout = _UnitLayout()
    raw = values[np.isfinite(values["value"].to_numpy())]
    raw_cells = layout.columns(raw, "value")
    everything = layout.columns(support.scores, "score")  # imputed included: every score counts (rule 3)
    built = layout.build()

    raw_stat = ColumnMeans(built, [column for _, column in raw_cells])
    aggregate_sets = _group_columns(everything, ("criterion", "adapter"))
    aggregate_stat = Aggregates(built, [columns for _, columns in aggregate_sets])
    overall_sets = _overall_sets(data, everything, weights)
    # the overall score is a weighted sum of per-criterion means: resampled once, kept, and weighted
    # twice (the profile's weights for the interval, perturbed weights for ties and rank stability)
    criterion_sets = _criterion_sets(everything, weights)
    criterion_stat = WeightedMean(built, [weighted for _, weighted in criterion_sets])
    pairwise = _pairwise_sets(criteria, everything)
    improvement_stat = ImprovementProbability(built, [tasks for _, tasks in pairwise])
    profile_sets = _profile_sets(criteria, everything, options.profile_points)
    profile_stats = [ScoreDistribution(built, [columns for _, columns in sets], taus)
                     for _, taus, sets in profile_sets]
    if inputs is not None:
        inputs.update(cells=raw_cells, aggregates=aggregate_sets, overall=overall_sets, pairwise=pairwise,
                      profiles=profile_sets)
    intervals = bootstrap(built, [raw_stat, aggregate_stat, criterion_stat, improvement_stat, *profile_stats],
                          options.reps, options.confidence, options.seed, keep=(2,))
    raw_interval, aggregate_interval, criterion_interval, improvement_interval = intervals[:4]
    criterion_keys = [key for key, _ in criterion_sets]
    overall_interval = _overall_interval(data.adapters, criterion_keys, criterion_interval, overall_sets, weights,
                                         options.confidence)

    cells = _cells(data, results, raw_cells, raw_interval, values)
    aggregates = {
        key: {name: Estimate(float(aggregate_interval.point[s, i]), float(aggregate_interval.low[s, i]),
                             float(aggregate_interval.high[s, i]), max(len(c.values) for c in columns))
              for i, name in enumerate(AGGREGATES)}
        for s, (key, columns) in enumerate(aggregate_sets)
    }
    overall = _overall(data, weights, overall_sets, overall_interval, support)
    comparisons = _rank(data, overall, criterion_keys, criterion_interval, weights, options, profile.learning_first)
    return ScoreMatrix(
        profile=profile, options=options, criteria=criteria, weights=weights, adapters=data.adapters,
        frameworks=data.adapter_frameworks, workloads=sorted(data.runs["workload_id"].unique().tolist()),
        cells=cells, references=references, aggregates=aggregates, overall=overall,
        improvement=_improvement(pairwise, improvement_interval),
        performance_profiles=_profiles(profile_sets, intervals[4:]), errors=errors,
        excluded_runs=_excluded_runs(data), left_out=support.left_out, imputed=support.imputed,
        parity=data.parity_standing, overall_comparisons=comparisons,
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


# -- overall score, ranks -----------------------------------------------------------------------------


def _by_adapter(
    scored: Sequence[tuple[tuple[str, str, str], Column]], weights: Mapping[str, float],
) -> dict[str, dict[str, list[Column]]]:
    """The positively weighted columns of each adapter, by criterion (in the order they come)."""
    by_adapter: dict[str, dict[str, list[Column]]] = {}
    for (cid, adapter, _), column in scored:
        if weights.get(cid, 0.0) > 0:
            by_adapter.setdefault(adapter, {}).setdefault(cid, []).append(column)
    return by_adapter


def _overall_sets(
    data: ScoringData, scored: Sequence[tuple[tuple[str, str, str], Column]], weights: Mapping[str, float],
) -> list[tuple[str, list[tuple[Column, float]], list[str]]]:
    """Per adapter: each (criterion, workload) column with its weight in the overall score, and the
    positively weighted criteria it has no column for. A criterion's weight is shared evenly by the
    adapter's workloads; weights are renormalized over the criteria it has."""
    by_adapter = _by_adapter(scored, weights)
    sets = []
    for adapter in data.adapters:
        columns = by_adapter.get(adapter, {})
        coverage = sum(weights[cid] for cid in columns)
        missing = sorted(cid for cid, w in weights.items() if w > 0 and cid not in columns)
        weighted = [(column, weights[cid] / coverage / len(of_criterion))
                    for cid, of_criterion in columns.items() for column in of_criterion] if coverage > 0 else []
        sets.append((adapter, weighted, missing))
    return sets


def _criterion_sets(
    scored: Sequence[tuple[tuple[str, str, str], Column]], weights: Mapping[str, float],
) -> list[tuple[tuple[str, str], list[tuple[Column, float]]]]:
    """Per (adapter, criterion) with a positive weight: its columns, each weighing 1 / its number of
    workloads (the criterion's mean over the adapter's workloads, the overall score's building block)."""
    return [((adapter, cid), [(column, 1.0 / len(columns)) for column in columns])
            for adapter, of_adapter in sorted(_by_adapter(scored, weights).items())
            for cid, columns in of_adapter.items()]


def _overall_interval(
    adapters: Sequence[str], criterion_keys: Sequence[tuple[str, str]], criterion_interval: Interval,
    sets: Sequence[tuple[str, list[tuple[Column, float]], list[str]]], weights: Mapping[str, float],
    confidence: float,
) -> Interval:
    """Each adapter's overall score (in ``adapters`` order) with its interval: the criterion means
    under the profile's weights, renormalized over the criteria the adapter has."""
    index = {adapter: i for i, adapter in enumerate(adapters)}
    coverage = {adapter: sum(weights[cid] for cid in weights if cid not in missing and weights[cid] > 0)
                for adapter, _, missing in sets}
    matrix = np.zeros((len(criterion_keys), len(adapters)))
    for row, (adapter, cid) in enumerate(criterion_keys):
        if coverage[adapter] > 0:
            matrix[row, index[adapter]] = weights[cid] / coverage[adapter]
    replicates = criterion_interval.replicates
    assert replicates is not None  # kept by the bootstrap call
    return percentile_interval(criterion_interval.point @ matrix, replicates @ matrix, confidence)


def _overall(
    data: ScoringData, weights: Mapping[str, float],
    sets: Sequence[tuple[str, list[tuple[Column, float]], list[str]]], interval: Interval, support: Support,
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


def _joint_scores(
    adapters: Sequence[str], criterion_keys: Sequence[tuple[str, str]], criterion_interval: Interval,
    weights: Mapping[str, float], options: ScoringOptions,
) -> np.ndarray:
    """Joint replicates of the overall scores of ``adapters`` (replicates x adapters): bootstrap
    replicate i of the seeds (which carries the spread of every figure measured on them, timings
    included) scored under weight draw i, a Dirichlet draw around the profile's weights
    (alpha = concentration x weight), renormalized over the criteria each adapter has."""
    criteria = [cid for cid, w in weights.items() if w > 0]
    replicates = criterion_interval.replicates
    assert replicates is not None
    count = min(options.stability_samples, replicates.shape[0])
    if count == 0 or not criteria:
        return np.zeros((0, len(adapters)))
    a_index = {adapter: i for i, adapter in enumerate(adapters)}
    c_index = {cid: j for j, cid in enumerate(criteria)}
    means = np.zeros((count, len(adapters), len(criteria)))
    has = np.zeros((len(adapters), len(criteria)))
    for s, (adapter, cid) in enumerate(criterion_keys):
        if adapter in a_index:
            means[:, a_index[adapter], c_index[cid]] = replicates[:count, s]
            has[a_index[adapter], c_index[cid]] = 1.0
    base = np.array([weights[cid] for cid in criteria])
    rng = np.random.default_rng(options.seed)
    draws = rng.dirichlet(options.concentration * base / base.sum(), size=count)  # (replicates, criteria)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.einsum("rac,rc->ra", means, draws) / (draws @ has.T)


def _rank(
    data: ScoringData, overall: Mapping[str, OverallScore], criterion_keys: Sequence[tuple[str, str]],
    criterion_interval: Interval, weights: Mapping[str, float], options: ScoringOptions, learning_first: bool,
) -> list[dict[str, Any]]:
    """Tiers, ranks with ties, rank stability and the notes that say why a higher score ranks lower
    (:mod:`rlcompare.scoring.ranking`); returns the same-tier comparisons behind the ties."""
    parity = data.parity_standing
    learned = learning_by_adapter(data)
    tiers = {}
    for adapter, o in overall.items():
        found = learned.get(adapter, Learning())
        o.solved_workloads, o.learned_workloads = len(found.solved), len(found.learned)
        tiers[adapter] = Tier(parity.get(adapter, "unverified") if parity else None, o.valid_workloads,
                              o.solved_workloads, o.learned_workloads, learning_first)
        o.tier = tiers[adapter].describe()
    ranked = [adapter for adapter, o in overall.items() if o.score is not None]
    if not ranked:
        return []
    points = np.array([overall[a].score.point for a in ranked])
    joint = _joint_scores(ranked, criterion_keys, criterion_interval, weights, options)
    ranking = rank_adapters(ranked, tiers, points, joint, options.confidence)
    for adapter in ranked:
        o = overall[adapter]
        o.rank, o.rank_stability = ranking.ranks[adapter], ranking.stability[adapter]
        o.tied_with, o.rank_note = ranking.tied_with[adapter], ranking.notes.get(adapter)
    return ranking.comparisons


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
