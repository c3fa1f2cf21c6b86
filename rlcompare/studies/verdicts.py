"""Published against measured: one verdict per claim of a study's table.

- A figure in the same unit here as in the source (a final return, env steps to a threshold) is
  compared directly. The published interval: mean +- z * std / sqrt(k), k the seeds behind the
  mean (one where the source does not say) or, for a standard deviation over the evaluation
  episodes of one agent, the episodes; the mean alone where the source gives no spread. Ours: the
  percentile-bootstrap interval of the mean of our seeds, or, against a single published run (one
  draw from the seeds' distribution, not a mean over seeds), the range our seeds span. Intervals
  that overlap: *consistent*; apart: *not consistent*, saying which side and by how much.
- Seconds depend on the hardware, so they are never compared as seconds: for every two frameworks
  with a published figure in one cell, the published ratio (its interval from the two published
  intervals) against the bootstrap interval of the ratio of our means (each framework's seeds
  resampled on their own). A reversed order is said.
- *Not comparable*, with the reason: no adapter runs the framework here, its runs are missing
  (refused, failed, not run), fewer than two seeds were measured (no interval), or a seed never
  reached the threshold (its time to the threshold is unknown, not large).

Everything here works on plain numbers; :mod:`rlcompare.cli.study` gathers them from a store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from rlcompare.studies.model import HARDWARE_BOUND, METRIC_UNITS, Arm, PublishedRow, Study

Status = Literal["consistent", "not consistent", "not comparable"]
STATUSES: tuple[Status, ...] = ("consistent", "not consistent", "not comparable")
CONFIDENCE = 0.95
REPS = 4_000
#: Seeds needed for an interval of our own.
MIN_SEEDS = 2


@dataclass(frozen=True)
class Measured:
    """Our per-seed values of one (arm, cell, adapter, metric), or why they are missing."""

    values: tuple[float, ...] = ()
    #: Why there is no figure (refused, failed, a seed that never reached the threshold); None: complete.
    missing: str | None = None


#: (arm, cell id, adapter id, metric) -> what was measured.
MeasuredTable = Mapping[tuple[str, str, str, str], Measured]


@dataclass(frozen=True)
class Interval:
    point: float
    low: float
    high: float

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high

    def format(self) -> str:
        if self.low == self.high:
            return _number(self.point)
        return f"{_number(self.point)} [{_number(self.low)}, {_number(self.high)}]"


@dataclass(frozen=True)
class Verdict:
    """One claim of the table, judged."""

    arm: Arm
    cell: str
    metric: str
    #: What the source claims, in words (e.g. "Tianshou PPO: 31.8 s" or "RLlib PG / Tianshou PG").
    claim: str
    published: str
    measured: str
    status: Status
    reason: str


def _number(value: float) -> str:
    if not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "nan"
    if value == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    return f"{value:,.{digits}f}"


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def published_interval(row: PublishedRow, confidence: float = CONFIDENCE) -> Interval:
    """The interval the published statistic allows for the mean it reports."""
    if row.std is None:
        return Interval(row.mean, row.mean, row.mean)
    count = (row.episodes or 1) if row.std_over == "episodes" else (row.n or 1)
    half = _z(confidence) * row.std / math.sqrt(count)
    return Interval(row.mean, row.mean - half, row.mean + half)


def _quantiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    low, high = np.quantile(samples, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def mean_interval(values: Sequence[float], rng: np.random.Generator, confidence: float = CONFIDENCE,
                  reps: int = REPS) -> Interval:
    """The mean of ``values`` with its percentile-bootstrap interval (seeds resampled)."""
    array = np.asarray(values, dtype=float)
    means = array[rng.integers(0, len(array), (reps, len(array)))].mean(axis=1)
    return Interval(float(array.mean()), *_quantiles(means, confidence))


def seed_range(values: Sequence[float]) -> Interval:
    """The mean of ``values`` and the range they span."""
    array = np.asarray(values, dtype=float)
    return Interval(float(array.mean()), float(array.min()), float(array.max()))


def ratio_interval(numerator: Sequence[float], denominator: Sequence[float], rng: np.random.Generator,
                   confidence: float = CONFIDENCE, reps: int = REPS) -> Interval:
    """The ratio of two means with its bootstrap interval (each side's seeds resampled on their own)."""
    top, bottom = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    tops = top[rng.integers(0, len(top), (reps, len(top)))].mean(axis=1)
    bottoms = bottom[rng.integers(0, len(bottom), (reps, len(bottom)))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(bottoms > 0, tops / bottoms, np.inf)
    return Interval(float(top.mean() / bottom.mean()) if bottom.mean() > 0 else math.inf,
                    *_quantiles(ratios, confidence))


def published_ratio(top: PublishedRow, bottom: PublishedRow, confidence: float = CONFIDENCE) -> Interval:
    a, b = published_interval(top, confidence), published_interval(bottom, confidence)
    point = a.point / b.point if b.point > 0 else math.inf
    high = a.high / b.low if b.low > 0 else math.inf
    return Interval(point, a.low / b.high if b.high > 0 else math.inf, high)


def _unusable(row: PublishedRow, measured: Measured | None) -> str | None:
    """Why ``row`` cannot be compared with what was measured, or None."""
    if row.adapter is None:
        return f"no adapter runs {row.framework} here"
    if measured is None:
        return f"{row.adapter} was not run on this cell"
    if measured.missing is not None:
        return f"{row.adapter}: {measured.missing}"
    if len(measured.values) < MIN_SEEDS:
        return f"{row.adapter}: {len(measured.values)} seed measured, {MIN_SEEDS} needed for an interval"
    return None


def _judge_value(arm: Arm, row: PublishedRow, measured: Measured | None, rng: np.random.Generator) -> Verdict:
    unit = METRIC_UNITS[row.metric]
    published = published_interval(row)
    claim = f"{row.label}: {_number(row.mean)} {unit}"
    why = _unusable(row, measured)
    if why is not None:
        return Verdict(arm, row.cell, row.metric, claim, published.format(), "", "not comparable", why)
    assert measured is not None
    single = row.n == 1
    ours = seed_range(measured.values) if single else mean_interval(measured.values, rng)
    against = "the range of our seeds (one published run)" if single else "the intervals"
    if ours.overlaps(published):
        return Verdict(arm, row.cell, row.metric, claim, published.format(), ours.format(), "consistent",
                       f"{against} overlap ({len(measured.values)} seeds)" if not single else
                       f"it lies within {against} ({len(measured.values)} seeds)")
    side = "higher" if ours.low > published.high else "lower"
    return Verdict(arm, row.cell, row.metric, claim, published.format(), ours.format(), "not consistent",
                   f"measured {side} by {_number(abs(ours.point - published.point))} {unit} "
                   f"({len(measured.values)} seeds)")


def _ratio_either_way(top: PublishedRow, bottom: PublishedRow, measured_top: Measured, measured_bottom: Measured,
                      rng: np.random.Generator) -> Interval:
    """The ratio of our means, resampled in one order of the two frameworks whichever the table
    lists first, so that a claim and its reverse get the same verdict."""
    if (top.framework, top.label) <= (bottom.framework, bottom.label):
        return ratio_interval(measured_top.values, measured_bottom.values, rng)
    inverse = ratio_interval(measured_bottom.values, measured_top.values, rng)
    return Interval(1 / inverse.point if inverse.point else math.inf, 1 / inverse.high if inverse.high else math.inf,
                    1 / inverse.low if inverse.low else math.inf)


def _judge_ratio(arm: Arm, top: PublishedRow, bottom: PublishedRow, measured_top: Measured | None,
                 measured_bottom: Measured | None, rng: np.random.Generator) -> Verdict:
    published = published_ratio(top, bottom)
    claim = f"{top.label} / {bottom.label}: {_number(published.point)}x"
    why = _unusable(top, measured_top) or _unusable(bottom, measured_bottom)
    if why is not None:
        return Verdict(arm, top.cell, top.metric, claim, published.format(), "", "not comparable",
                       f"{why} (seconds from other hardware compare only as ratios between frameworks)")
    assert measured_top is not None and measured_bottom is not None
    ours = _ratio_either_way(top, bottom, measured_top, measured_bottom, rng)
    if ours.overlaps(published):
        return Verdict(arm, top.cell, top.metric, claim, published.format(), ours.format(), "consistent",
                       "the ratio intervals overlap")
    reversed_order = (published.high < 1 < ours.low) or (ours.high < 1 < published.low)
    reason = (f"the order is reversed: {top.label} is {'slower' if ours.low > 1 else 'faster'} here"
              if reversed_order else f"measured ratio {'higher' if ours.low > published.high else 'lower'}")
    return Verdict(arm, top.cell, top.metric, claim, published.format(), ours.format(), "not consistent", reason)


def judge(study: Study, measured: MeasuredTable, arms: Sequence[Arm] | None = None, seed: int = 0) -> list[Verdict]:
    """Every claim of ``study``'s table in each arm, in the table's order: each same-unit row on its
    own, each two rows of a hardware-bound metric in one cell as a ratio."""
    rng = np.random.default_rng(seed)
    verdicts: list[Verdict] = []
    for arm in arms or study.arms:
        for index, row in enumerate(study.published):
            def found(published: PublishedRow, arm: Arm = arm) -> Measured | None:
                if published.adapter is None:
                    return None
                return measured.get((arm, published.cell, published.adapter, published.metric))

            if row.metric not in HARDWARE_BOUND:
                verdicts.append(_judge_value(arm, row, found(row), rng))
                continue
            later = [other for other in study.published[index + 1:]
                     if other.cell == row.cell and other.metric == row.metric]
            for other in later:
                verdicts.append(_judge_ratio(arm, row, other, found(row), found(other), rng))
            alone = not later and not any(other.cell == row.cell and other.metric == row.metric
                                          for other in study.published[:index])
            if alone:
                verdicts.append(Verdict(arm, row.cell, row.metric, f"{row.label}: {_number(row.mean)} s",
                                        published_interval(row).format(), "", "not comparable",
                                        "seconds from other hardware compare only as ratios between frameworks, "
                                        "and no other framework has a figure in this cell"))
    return verdicts
