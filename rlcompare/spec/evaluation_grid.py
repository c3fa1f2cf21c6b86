"""Whether a workload's evaluation grid fits its algorithm family's updates.

The harness evaluates every adapter at the same points: each multiple of
``evaluation.interval_steps`` is evaluated at the first update boundary at or after it
(:class:`rlcompare.harness.evaluation.EvaluationGrid`). When the interval is a multiple of the env
steps one update covers (the family's budget grain), every grid point *is* an update boundary and
each evaluation lands exactly on it; otherwise it lands up to one update after the point, the same
for every adapter but later than the interval says. That is allowed (a workload stays valid), and
said once per workload by ``plan`` and ``run``: :func:`interval_warnings`.
"""

from __future__ import annotations

from collections.abc import Iterable

from rlcompare.spec.workload import Workload

#: Granularities whose grain is only an upper bound (an episode or a generation ends early when its
#: episodes do): no interval can be a multiple of the real update size, so none is asked for.
_VARIABLE_GRAINS = ("episode", "generation")


def interval_warning(workload: Workload) -> str | None:
    """One line when ``workload``'s evaluation interval is not a multiple of its family's update
    size, naming the nearest intervals that are; None when it is (or the grain varies)."""
    family = workload.family
    if family.granularity in _VARIABLE_GRAINS:
        return None
    grain = workload.rollout_env_steps
    interval = workload.evaluation.interval_steps
    if grain <= 1 or interval % grain == 0:
        return None
    below, above = interval // grain * grain, (interval // grain + 1) * grain
    nearest = f"{below:,} or {above:,}" if below else f"{above:,}"
    return (f"workload {workload.id}: evaluation.interval_steps ({interval:,}) is not a multiple of one "
            f"{family.granularity} of {workload.algorithm} ({grain:,} env steps): each evaluation lands on the first "
            f"update boundary after its point, up to {grain - 1:,} env steps late; {nearest} would land exactly")


def interval_warnings(workloads: Iterable[Workload]) -> list[str]:
    """:func:`interval_warning` of each distinct workload (by id, in order), the lines there are."""
    seen: dict[str, str | None] = {}
    for workload in workloads:
        if workload.id not in seen:
            seen[workload.id] = interval_warning(workload)
    return [line for line in seen.values() if line is not None]
