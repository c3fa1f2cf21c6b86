"""Published against measured: one verdict per claim of a study's table.

- A figure in the same unit here as in the source (a final return, env steps to a threshold) is
  compared directly (env steps to a threshold, read on the evaluation grid, with our interval
  reaching one evaluation interval lower: the crossing lies in the interval before the point that
  saw it). The published interval is a t interval of the mean it reports: mean +-
  t(k-1) * sd / sqrt(k), k the seeds behind it (a standard deviation printed over the population of
  seeds is turned into the sample one), or, for a deviation over the evaluation episodes of one
  agent, k the episodes; the mean alone where the source gives no spread. Ours: the t interval of
  the mean of our seeds or, against a single published run (one draw from the distribution over
  seeds, not a mean of it), the prediction interval of one more run: mean +- t(k-1) * sd *
  sqrt(1 + 1/k). Intervals that overlap: *consistent*; apart: *not consistent*, saying which side
  and by how much.
- Seconds depend on the hardware, so they are never compared as seconds: for every two frameworks
  with a published figure in one cell, the published ratio (its interval from the two published
  intervals, times never below zero) against the percentile-bootstrap interval of the ratio of our
  means (each framework's seeds resampled on their own, with a generator of the claim's own, in one
  fixed order of the two, so that a claim and its reverse get the same verdict). A reversed order
  is said.
- *Not comparable*, with the reason: no adapter runs the framework here, its runs are missing
  (refused, failed, not run), a seed did not finish (a figure over the others would hide it) or
  was not run, fewer than two seeds were measured (no interval), a seed never reached the
  threshold (its time is unknown, not large), or a time of zero (the threshold met before
  training: no ratio).

Everything here works on plain numbers; :mod:`rlcompare.cli.study` gathers them from a store.
"""

from __future__ import annotations

import math
import zlib
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
    #: How far below each value the truth may lie: env steps to a threshold are read on the
    #: evaluation grid, so a seed that first evaluates at the threshold at step v crossed it after
    #: v - interval; 0 for a figure measured exactly.
    resolution: float = 0.0
    #: Where every seed ran out of budget before the threshold: the budget (each value lies above it).
    censored_above: float | None = None


#: (arm, cell id, adapter id, metric) -> what was measured.
MeasuredTable = Mapping[tuple[str, str, str, str], Measured]


@dataclass(frozen=True)
class Interval:
    point: float
    low: float
    high: float

    def overlaps(self, other: Interval) -> bool:
        """Whether the two share a point; bounds that touch up to rounding do (a ratio's bound computed
        as ``a / b`` and as ``1 / (b / a)`` differs in its last bits, and a claim and its reverse must
        get one verdict)."""
        slack = 1e-9 * max(abs(self.low), abs(self.high), abs(other.low), abs(other.high), 1.0)
        return self.low <= other.high + slack and other.low <= self.high + slack

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


def _t(confidence: float, degrees: int | None) -> float:
    """The two-sided Student t quantile (the normal one where the degrees of freedom are unknown)."""
    if degrees is None:
        return NormalDist().inv_cdf(0.5 + confidence / 2)
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, degrees))


def published_interval(row: PublishedRow, confidence: float = CONFIDENCE) -> Interval:
    """The interval the published statistic allows for the mean it reports (never below zero for a time)."""
    if row.std is None:
        return Interval(row.mean, row.mean, row.mean)
    if row.std_over == "episodes":
        count, degrees, sd = row.episodes or 1, (row.episodes - 1 if row.episodes and row.episodes > 1 else None), row.std
    else:
        count = row.n or 1
        degrees = count - 1 if count > 1 else None
        sd = row.std * math.sqrt(count / (count - 1)) if row.std_ddof == 0 and count > 1 else row.std
    half = _t(confidence, degrees) * sd / math.sqrt(count)
    low = row.mean - half
    if row.metric != "final_return":
        low = max(0.0, low)
    return Interval(row.mean, low, row.mean + half)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The mean of ``values`` and its t interval."""
    array = np.asarray(values, dtype=float)
    half = _t(confidence, len(array) - 1) * float(array.std(ddof=1)) / math.sqrt(len(array))
    return Interval(float(array.mean()), float(array.mean()) - half, float(array.mean()) + half)


def prediction_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Where one more run would land: mean +- t(k-1) * sd * sqrt(1 + 1/k)."""
    array = np.asarray(values, dtype=float)
    half = _t(confidence, len(array) - 1) * float(array.std(ddof=1)) * math.sqrt(1 + 1 / len(array))
    return Interval(float(array.mean()), float(array.mean()) - half, float(array.mean()) + half)


def _quantiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    low, high = np.quantile(samples, [(1 - confidence) / 2, (1 + confidence) / 2], method="inverted_cdf")
    return float(low), float(high)


def ratio_interval(numerator: Sequence[float], denominator: Sequence[float], rng: np.random.Generator,
                   confidence: float = CONFIDENCE, reps: int = REPS) -> Interval:
    """The ratio of two means of positive times with its percentile-bootstrap interval (each side's
    seeds resampled on their own)."""
    top, bottom = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    tops = top[rng.integers(0, len(top), (reps, len(top)))].mean(axis=1)
    bottoms = bottom[rng.integers(0, len(bottom), (reps, len(bottom)))].mean(axis=1)
    return Interval(float(top.mean() / bottom.mean()), *_quantiles(tops / bottoms, confidence))


def published_ratio(top: PublishedRow, bottom: PublishedRow, confidence: float = CONFIDENCE) -> Interval:
    a, b = published_interval(top, confidence), published_interval(bottom, confidence)
    point = a.point / b.point if b.point > 0 else math.inf
    return Interval(point, a.low / b.high if b.high > 0 else math.inf, a.high / b.low if b.low > 0 else math.inf)


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
    if row.metric in HARDWARE_BOUND and min(measured.values) <= 0:
        return f"{row.adapter}: a seed met the threshold before training (time 0): no ratio"
    return None


def _judge_value(arm: Arm, row: PublishedRow, measured: Measured | None) -> Verdict:
    unit = METRIC_UNITS[row.metric]
    published = published_interval(row)
    claim = f"{row.label}: {_number(row.mean)} {unit}"
    if (row.adapter is not None and measured is not None and measured.censored_above is not None
            and published.high < measured.censored_above):  # every seed is known to lie above the claim
        return Verdict(arm, row.cell, row.metric, claim, published.format(), f"> {_number(measured.censored_above)}",
                       "not consistent", f"measured higher: no seed of {row.adapter} reached the threshold within "
                       f"{_number(measured.censored_above)} {unit}, beyond the published interval")
    why = _unusable(row, measured)
    if why is not None:
        return Verdict(arm, row.cell, row.metric, claim, published.format(), "", "not comparable", why)
    assert measured is not None
    seeds = len(measured.values)
    single = row.n == 1
    ours = prediction_interval(measured.values) if single else mean_interval(measured.values)
    against = "where one more of our runs would land (one published run)" if single else "our mean's interval"
    if measured.resolution > 0:  # the crossing lies up to one evaluation interval before what was read
        ours = Interval(ours.point, max(0.0, ours.low - measured.resolution), ours.high)
        against += f", reaching {_number(measured.resolution)} {unit} lower (one evaluation interval)"
    if ours.overlaps(published):
        return Verdict(arm, row.cell, row.metric, claim, published.format(), ours.format(), "consistent",
                       f"the published interval overlaps {against} ({seeds} seeds)")
    side = "higher" if ours.low > published.high else "lower"
    return Verdict(arm, row.cell, row.metric, claim, published.format(), ours.format(), "not consistent",
                   f"measured {side} by {_number(abs(ours.point - published.point))} {unit}: the published "
                   f"interval lies outside {against} ({seeds} seeds)")


def _ratio_either_way(top: PublishedRow, bottom: PublishedRow, measured_top: Measured, measured_bottom: Measured,
                      rng: np.random.Generator, reps: int = REPS) -> Interval:
    """The ratio of our means, resampled in one order of the two frameworks whichever the table
    lists first, so that a claim and its reverse get the same verdict."""
    if (top.framework, top.label) <= (bottom.framework, bottom.label):
        return ratio_interval(measured_top.values, measured_bottom.values, rng, reps=reps)
    inverse = ratio_interval(measured_bottom.values, measured_top.values, rng, reps=reps)
    return Interval(1 / inverse.point if inverse.point else math.inf, 1 / inverse.high if inverse.high else math.inf,
                    1 / inverse.low if inverse.low else math.inf)


def _claim_rng(seed: int, *parts: str) -> np.random.Generator:
    """A generator of the claim's own: its draws do not depend on the rows before it."""
    return np.random.default_rng([seed, zlib.crc32("\x1f".join(parts).encode("utf-8"))])


def _judge_ratio(arm: Arm, top: PublishedRow, bottom: PublishedRow, measured_top: Measured | None,
                 measured_bottom: Measured | None, seed: int, reps: int = REPS) -> Verdict:
    published = published_ratio(top, bottom)
    claim = f"{top.label} / {bottom.label}: {_number(published.point)}x"
    why = _unusable(top, measured_top) or _unusable(bottom, measured_bottom)
    if why is None and top.adapter == bottom.adapter:
        why = f"both rows are measured by {top.adapter}"
    if why is not None:
        return Verdict(arm, top.cell, top.metric, claim, published.format(), "", "not comparable",
                       f"{why} (seconds from other hardware compare only as ratios between frameworks)")
    assert measured_top is not None and measured_bottom is not None
    first, second = sorted((top.framework + top.label, bottom.framework + bottom.label))
    rng = _claim_rng(seed, arm, top.cell, top.metric, first, second)
    ours = _ratio_either_way(top, bottom, measured_top, measured_bottom, rng, reps)
    seeds = f"{len(measured_top.values)} and {len(measured_bottom.values)} seeds"
    if ours.overlaps(published):
        return Verdict(arm, top.cell, top.metric, claim, published.format(), ours.format(), "consistent",
                       f"the ratio intervals overlap ({seeds})")
    reversed_order = (published.high < 1 < ours.low) or (ours.high < 1 < published.low)
    if reversed_order:
        reason = f"the order is reversed: {top.label} is {'slower' if ours.low > 1 else 'faster'} here"
    else:
        relatively = "slower" if ours.low > published.high else "faster"
        reason = f"{top.label} is relatively {relatively} here than published"
    return Verdict(arm, top.cell, top.metric, claim, published.format(), ours.format(), "not consistent",
                   f"{reason}: {_number(ours.point)}x where {_number(published.point)}x was published ({seeds})")


def judge(study: Study, measured: MeasuredTable, arms: Sequence[Arm] | None = None, seed: int = 0,
          reps: int | None = None) -> list[Verdict]:
    """Every claim of ``study``'s table in each arm, in the table's order: each same-unit row on its
    own, each two rows of a hardware-bound metric in one cell as a ratio."""
    verdicts: list[Verdict] = []
    for arm in arms or study.arms:
        for index, row in enumerate(study.published):
            def found(published: PublishedRow, arm: Arm = arm) -> Measured | None:
                if published.adapter is None:
                    return None
                return measured.get((arm, published.cell, published.adapter, published.metric))

            if row.metric not in HARDWARE_BOUND:
                verdicts.append(_judge_value(arm, row, found(row)))
                continue
            later = [other for other in study.published[index + 1:]
                     if other.cell == row.cell and other.metric == row.metric]
            for other in later:
                verdicts.append(_judge_ratio(arm, row, other, found(row), found(other), seed, reps or REPS))
            alone = not later and not any(other.cell == row.cell and other.metric == row.metric
                                          for other in study.published[:index])
            if alone:
                verdicts.append(Verdict(arm, row.cell, row.metric, f"{row.label}: {_number(row.mean)} s",
                                        published_interval(row).format(), "", "not comparable",
                                        "seconds from other hardware compare only as ratios between frameworks, "
                                        "and no other framework has a figure in this cell"))
    return verdicts
