"""Run validity: whether a finished run may count as a result, decided once and stored with it.

A run that finished without an error still does not count when it broke the rules every adapter is
held to: the harness counted no environment steps, the run went past (or stopped short of) its
budget by more than the adapter's declared granularity allows, the framework's own step count
disagrees with the harness's, no evaluation happened, or an evaluation returned NaN. Such a run is
stored with status ``invalid`` and the reasons, is left out of every performance criterion and
counts as not completed. The tolerances follow from the workload and the adapter's declared
:class:`BudgetTolerance`, never from a constant.

The algorithm family sets the grain (:meth:`BudgetTolerance.for_workload`): an adapter may declare
a finer tolerance than its family gives, never a coarser one (a coarser declaration refuses the
pair when the run matrix is planned, :func:`grain_refusal`), so no adapter is held to a wider window
than another on the same workload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rlcompare.harness.workload_view import ASYNC_UNITS

if TYPE_CHECKING:
    from rlcompare.harness.workload_view import WorkloadLike

#: How an adapter's training loop meets its budget, from finest to coarsest.
GRANULARITIES = ("step", "update", "rollout", "episode", "generation")


@dataclass(frozen=True)
class BudgetTolerance:
    """How far a run of one adapter on one workload may land from its budget of env steps.

    ``overshoot_steps`` bounds ``|harness steps - budget|``: a loop that checks the budget after
    each rollout (or episode, or generation) ends up to one such unit past it. ``count_gap_steps``
    bounds ``|framework steps - harness steps|``: the framework may report its count at a coarser
    grain than the harness counts.
    """

    granularity: str
    overshoot_steps: int
    count_gap_steps: int

    def __post_init__(self) -> None:
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {', '.join(GRANULARITIES)}, got {self.granularity!r}")
        for name in ("overshoot_steps", "count_gap_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative whole number of env steps, got {value!r}")

    @classmethod
    def for_workload(cls, workload: WorkloadLike) -> BudgetTolerance:
        """What the workload's algorithm family allows, and the default: one unit of the family's
        grain, as the family declares it (one rollout of every env for on-policy methods, one
        update interval for off-policy ones, one generation for evolutionary ones); with
        asynchronous sampling, :data:`ASYNC_UNITS` of them (the samplers run ahead of the learner:
        besides the batch learned from, up to two more of every env in flight, as double-buffered
        samplers keep them). An adapter may declare a finer tolerance, never a coarser one
        (:func:`grain_refusal`; the plan refuses the pair)."""
        steps = workload.rollout_env_steps
        if workload.parallelism.mode == "async":
            steps *= ASYNC_UNITS
        return cls(workload.family.granularity, steps, steps)

    def window(self, budget: int) -> tuple[int, int]:
        """The env steps a run of ``budget`` may end at, both ends included."""
        return max(0, budget - self.overshoot_steps), budget + self.overshoot_steps

    def describe(self) -> str:
        """One phrase: ``rollout, +-256 env steps`` (and the count gap where it differs)."""
        text = f"{self.granularity}, +-{self.overshoot_steps} env steps"
        if self.count_gap_steps != self.overshoot_steps:
            text += f", counts within {self.count_gap_steps}"
        return text

    def coarser_than(self, allowed: BudgetTolerance) -> list[str]:
        """How this tolerance is coarser than ``allowed`` (empty when it is as fine or finer): a
        coarser granularity, or more env steps of overshoot or of count gap."""
        found = []
        if GRANULARITIES.index(self.granularity) > GRANULARITIES.index(allowed.granularity):
            found.append(f"a {self.granularity} is coarser than a {allowed.granularity}")
        if self.overshoot_steps > allowed.overshoot_steps:
            found.append(f"{self.overshoot_steps} env steps of overshoot, more than {allowed.overshoot_steps}")
        if self.count_gap_steps > allowed.count_gap_steps:
            found.append(f"a count gap of {self.count_gap_steps}, more than {allowed.count_gap_steps}")
        return found

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def grain_refusal(declared: BudgetTolerance, allowed: BudgetTolerance, family: str) -> str | None:
    """Why a declared tolerance may not judge a run of a family that allows ``allowed`` (None when
    it may): the family sets the grain; an adapter may declare a finer one, never a coarser one."""
    coarser = declared.coarser_than(allowed)
    if not coarser:
        return None
    return (f"it declares a budget grain of {declared.describe()}, coarser than {family} allows "
            f"({allowed.describe()}): {'; '.join(coarser)}")


@dataclass(frozen=True)
class Check:
    """One rule, whether the run kept it, and the figures it was judged on."""

    rule: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Verdict:
    """Every rule's check; the run is valid when all passed."""

    checks: tuple[Check, ...]

    @property
    def valid(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def reasons(self) -> list[str]:
        return [check.detail for check in self.checks if not check.passed]

    def summary(self) -> str:
        """One line: ``valid``, or ``invalid: reason; reason``."""
        return "valid" if self.valid else "invalid: " + "; ".join(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "reasons": self.reasons,
                "checks": [asdict(check) for check in self.checks]}


def judge_run(
    *,
    env_steps: int | None,
    framework_env_steps: int | None,
    budget: int,
    tolerance: BudgetTolerance,
    evaluation_returns: Sequence[float],
    final_return: float | None,
    solved_at: int | None = None,
) -> Verdict:
    """Judge a run that finished without an error.

    ``evaluation_returns`` are the mean returns of its evaluation points (the final one included).
    ``solved_at``: for a workload with ``stop_when_solved``, the env steps of the run's first evaluation
    at the success threshold (:func:`solved_at`); the run may end there, short of its budget, or up to
    one budget grain after it (a loop that stops asynchronously).
    """
    steps = int(env_steps or 0)
    checks = [Check("steps", steps > 0, f"the harness counted {steps} env steps" if steps <= 0
                    else f"{steps} env steps counted by the harness")]

    low, high = budget - tolerance.overshoot_steps, budget + tolerance.overshoot_steps
    within = low <= steps <= high
    stopped_when_solved = (not within and solved_at is not None
                           and solved_at <= steps <= min(high, solved_at + tolerance.overshoot_steps))
    if stopped_when_solved:
        detail = (f"{steps} env steps: stopped when solved (an evaluation at {solved_at} env steps reached the "
                  f"threshold), short of the budget of {budget}")
        within = True
    elif within:
        detail = f"{steps} env steps for a budget of {budget} (allowed {max(0, low)}..{high})"
    else:
        side = "past" if steps > high else "short of"
        detail = (f"{steps} env steps, {abs(steps - budget)} {side} the budget of {budget}; one "
                  f"{tolerance.granularity} allows {tolerance.overshoot_steps}")
    checks.append(Check("budget", within, detail))

    if framework_env_steps is None:
        checks.append(Check("step_counts", False, "the adapter reported no framework step count"))
    else:
        gap = abs(int(framework_env_steps) - steps)
        agree = gap <= tolerance.count_gap_steps
        checks.append(Check(
            "step_counts", agree,
            f"framework counted {framework_env_steps} env steps, the harness {steps}"
            + ("" if agree else f": a gap of {gap}, more than the {tolerance.count_gap_steps} allowed"),
        ))

    evaluations = len(evaluation_returns)
    checks.append(Check("evaluated", evaluations > 0,
                        f"{evaluations} evaluation points" if evaluations else "no evaluation happened"))

    returns = [*evaluation_returns, *([] if final_return is None else [final_return])]
    bad = [value for value in returns if value is None or not math.isfinite(float(value))]
    checks.append(Check("finite_returns", not bad,
                        "every evaluation return is finite" if not bad
                        else f"{len(bad)} evaluation returns are not finite numbers"))
    return Verdict(tuple(checks))


def solved_at(points: Sequence[tuple[int | None, int, float]], threshold: float | None,
              stop_when_solved: bool) -> int | None:
    """The env steps of the first evaluation past grid point 0 whose mean return reaches ``threshold``, for
    a workload with ``stop_when_solved`` (``points``: (grid point or None, env steps, mean return) in
    curve order; the untrained policy's evaluation never counts); else None. Read from the harness's own
    curve, so an adapter cannot claim a stop it did not earn."""
    if not stop_when_solved or threshold is None:
        return None
    for grid, steps, mean in points:
        past_start = (grid if grid is not None else steps) > 0
        if past_start and mean is not None and math.isfinite(float(mean)) and float(mean) >= float(threshold):
            return int(steps)
    return None
