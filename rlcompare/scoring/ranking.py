"""Ranks: tiers first, then the overall score, and ties where the scores are not separated.

Adapters are ordered by a tier, compared key by key, before their overall score
(docs/criteria.md, "Ranks"):

1. **parity** standing, where runs record verdicts (verified or not applicable, then unverified,
   then unexplained: docs/parity.md);
2. **valid workloads**: the workloads with at least one valid run (missing data never raises a rank);
3. **workloads solved**: the mean final evaluation return of the valid seeds reaches the workload's
   success threshold;
4. **workloads learned**: that mean covers at least :data:`LEARNED_SHARE` of the way from the
   untrained return (the harness's evaluations at env step 0) to the success threshold.

Keys 3 and 4 are *learning first*: under a profile that keeps it (every built-in one), speed and
footprint cannot lift an adapter that did not learn a workload above one that did. A profile that
wants raw speed opts out (``learning_first = false``) and its tier stops after key 2.

Within a tier the overall score orders adapters, and adapters whose scores are **not separated**
share a rank. Separation is read from joint replicates of the overall scores: each replicate
resamples the seeds of every (adapter, workload) pair, which also resamples the timing figures
measured on them (start-up, throughput, memory: a seed's run is one measurement), and draws the
weights from a Dirichlet distribution around the profile's. Two adapters are separated when one
scores above the other in more than ``1 - (1 - confidence) / 2`` of the replicates (97.5% at the
default 95%); two adapters of one tier get different ranks only when every pair that straddles the
boundary between their ranks is separated. Rank stability is the share of replicates in which an
adapter's rank stays within the ranks its group of tied adapters spans.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rlcompare.parity.corrections import STANDING_TIER

if TYPE_CHECKING:
    from rlcompare.scoring.criteria import ScoringData

#: A workload counts as learned when the mean final return of the valid seeds covers at least this
#: share of the way from the untrained return to the success threshold.
LEARNED_SHARE = 0.5

RANKING_RULE = (
    "Ranks order adapters by tier, then by overall score. The tier compares, in order: parity standing "
    "(where runs record verdicts), the number of workloads with a valid result, then, unless the profile "
    "sets learning_first = false, the number of workloads solved (the valid seeds' mean final return "
    f"reaches the success threshold) and learned (it covers at least {LEARNED_SHARE:.0%} of the way from "
    "the untrained return to the threshold). Within a tier, adapters whose overall scores the joint "
    "bootstrap (seeds resampled, which resamples their timing figures, and weights perturbed) does not "
    "separate share a rank and are marked tied."
)


@dataclass(frozen=True)
class Learning:
    """The workloads an adapter solved and learned (solved ones count as learned too)."""

    solved: frozenset[str] = frozenset()
    learned: frozenset[str] = frozenset()


def learning_by_adapter(data: ScoringData) -> dict[str, Learning]:
    """Per adapter, the workloads (with a success threshold) its valid seeds solved and learned,
    judged on the mean of their final evaluation returns (the harness's, after the full budget)."""
    ok = data.ok_runs
    thresholds = data.success_thresholds
    found: dict[str, Learning] = {adapter: Learning() for adapter in data.adapters}
    if ok.empty or not thresholds or "final_return_mean" not in ok:
        return found
    final = ok[["adapter", "workload_id"]].assign(final=ok["final_return_mean"].astype(float))
    means = final.dropna().groupby(["adapter", "workload_id"])["final"].mean()
    untrained = data.untrained_returns
    solved: dict[str, set[str]] = {}
    learned: dict[str, set[str]] = {}
    for (adapter, workload_id), mean in means.items():
        threshold = thresholds.get(workload_id)
        if threshold is None or not math.isfinite(threshold) or not math.isfinite(mean):
            continue
        start = untrained.get(workload_id)
        if mean >= threshold:
            solved.setdefault(adapter, set()).add(workload_id)
            learned.setdefault(adapter, set()).add(workload_id)
        elif start is not None and math.isfinite(start) and threshold > start \
                and (mean - start) / (threshold - start) >= LEARNED_SHARE:
            learned.setdefault(adapter, set()).add(workload_id)
    for adapter in found:
        found[adapter] = Learning(frozenset(solved.get(adapter, ())), frozenset(learned.get(adapter, ())))
    return found


@dataclass(frozen=True)
class Tier:
    """What ranks an adapter before its overall score, compared key by key (higher is better)."""

    parity: str | None
    valid: int
    solved: int
    learned: int
    learning_first: bool = True

    @property
    def key(self) -> tuple[int, int, int, int]:
        parity = STANDING_TIER[self.parity] if self.parity is not None else 0
        if not self.learning_first:
            return (parity, self.valid, 0, 0)
        return (parity, self.valid, self.solved, self.learned)

    def describe(self) -> str:
        """The tier in words, as every output shows it beside the score."""
        parts = [] if self.parity is None else [f"parity {self.parity}"]
        parts.append(f"{self.valid} valid")
        if self.learning_first:
            parts += [f"{self.solved} solved", f"{self.learned} learned"]
        return ", ".join(parts)

    def reason_below(self, other: Tier) -> tuple[str, str, str] | None:
        """Why this tier ranks below ``other``: the first key on which ``other`` is better, as
        (what this adapter has less of, its value, the other's), or None when it does not."""
        keys = (("a lower parity standing", self.parity, other.parity),
                ("fewer workloads with a valid result", self.valid, other.valid),
                ("fewer workloads solved", self.solved, other.solved),
                ("fewer workloads learned", self.learned, other.learned))
        for (phrase, mine, theirs), a, b in zip(keys, self.key, other.key, strict=True):
            if a != b:
                return (phrase, str(mine), str(theirs)) if a < b else None
        return None


@dataclass
class Ranking:
    """Ranks ("1224" competition ranks, ties sharing the better one), who each adapter is tied
    with, rank stability, the same-tier comparisons behind the ties, and why a higher score ranks lower."""

    ranks: dict[str, int]
    tied_with: dict[str, list[str]]
    stability: dict[str, float]
    comparisons: list[dict[str, Any]]
    notes: dict[str, str]


def rank_adapters(
    adapters: Sequence[str], tiers: Mapping[str, Tier], points: np.ndarray, joint: np.ndarray,
    confidence: float = 0.95,
) -> Ranking:
    """Rank ``adapters`` by tier, then overall score (``points``), tying adapters of one tier whose
    ``joint`` replicates of the overall score (replicates x adapters) do not separate them."""
    count = len(adapters)
    points = np.asarray(points, dtype=float)
    joint = np.asarray(joint, dtype=float).reshape(-1, count)
    if joint.shape[0] == 0:  # nothing was resampled: the points are the only replicate
        joint = points[None, :]
    keys = [tiers[a].key for a in adapters]
    distinct = sorted(set(keys))
    tier_of = np.array([distinct.index(k) for k in keys], dtype=np.int64)  # higher is better
    order = sorted(range(count), key=lambda i: (-tier_of[i], -points[i], adapters[i]))

    # beats[i, j]: the share of replicates in which i scores above j (equal scores count a half)
    above = (joint[:, :, None] > joint[:, None, :]).mean(axis=0)
    level = (joint[:, :, None] == joint[:, None, :]).mean(axis=0)
    beats = above + 0.5 * level
    tail = (1 - confidence) / 2
    separated = (beats >= 1 - tail) | (beats <= tail)

    groups: list[list[int]] = []
    start = 0
    while start < count:
        end = start
        while end + 1 < count and tier_of[order[end + 1]] == tier_of[order[start]]:
            end += 1
        segment = order[start:end + 1]
        group = [segment[0]]
        for k in range(1, len(segment)):
            # a boundary before position k only where every pair across it is separated
            if separated[np.ix_(segment[:k], segment[k:])].all():
                groups.append(group)
                group = []
            group.append(segment[k])
        groups.append(group)
        start = end + 1

    ranks: dict[str, int] = {}
    tied: dict[str, list[str]] = {}
    span = np.zeros(count, dtype=np.int64)
    nominal = np.zeros(count, dtype=np.int64)
    placed = 0
    for group in groups:
        for i in group:
            nominal[i], span[i] = placed + 1, len(group)
            ranks[adapters[i]] = placed + 1
            tied[adapters[i]] = [adapters[j] for j in group if j != i]
        placed += len(group)

    # each replicate's ranks (tiers fixed): higher tiers first, then that replicate's scores
    better = (tier_of[None, None, :] > tier_of[None, :, None]) | (
        (tier_of[None, None, :] == tier_of[None, :, None]) & (joint[:, None, :] > joint[:, :, None]))
    replicate_ranks = 1 + better.sum(axis=2)  # (replicates, adapters)
    kept = (replicate_ranks >= nominal[None, :]) & (replicate_ranks <= (nominal + span - 1)[None, :])
    stability = {adapters[i]: float(kept[:, i].mean()) for i in range(count)}

    comparisons = []
    for position, i in enumerate(order):
        for j in order[position + 1:]:
            if tier_of[i] == tier_of[j]:
                comparisons.append({"x": adapters[i], "y": adapters[j], "p": float(beats[i, j]),
                                    "separated": bool(separated[i, j])})
    return Ranking(ranks, tied, stability, comparisons, rank_notes(adapters, tiers, points, ranks))


def rank_notes(adapters: Sequence[str], tiers: Mapping[str, Tier], points: np.ndarray,
               ranks: Mapping[str, int]) -> dict[str, str]:
    """For each adapter ranked below one with a lower overall score, why: the tier key on which
    each of those is better (what every output prints beside the score)."""
    notes: dict[str, str] = {}
    for i, adapter in enumerate(adapters):
        reasons: dict[tuple[str, str, str], list[str]] = {}
        for j, other in enumerate(adapters):
            if ranks[other] < ranks[adapter] and points[j] < points[i]:
                reason = tiers[adapter].reason_below(tiers[other])
                if reason is not None:  # always, since tiers decide every rank a score does not
                    reasons.setdefault(reason, []).append(other)
        if reasons:
            above = sorted({a for others in reasons.values() for a in others}, key=lambda a: (ranks[a], a))
            ordered = sorted(reasons.items(), key=lambda item: min((ranks[a], a) for a in item[1]))
            parts = [f"{phrase} than {', '.join(sorted(others, key=lambda a: (ranks[a], a)))} ({mine} against {theirs})"
                     for (phrase, mine, theirs), others in ordered]
            notes[adapter] = f"ranked below {', '.join(above)} despite a higher overall score: " + "; ".join(parts)
    return notes
