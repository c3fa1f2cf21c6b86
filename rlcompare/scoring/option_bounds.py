"""The range of every scoring option (:class:`rlcompare.scoring.engine.ScoringOptions`).

One table, read by the command line (``--reps``, ``--seed``) and by bundles read from a file
(:mod:`rlcompare.reporting.bundle_schema`), so that a bundle can ask for no computation the command
line would refuse: the cost of a scoring grows with the repetitions and stability samples, and an
unbounded value is a request to compute until killed. Kept free of numpy so the command line can
import it at start-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: Bootstrap repetitions: fewer give intervals too coarse to report, more than ten times the
#: default (2000) buy no digit a report prints and cost memory in proportion.
MIN_REPS = 100
MAX_REPS = 20_000
#: Bootstrap seeds are what numpy's legacy seeding accepts: 0 to 2**32 - 1.
SEED_LIMIT = 2**32


@dataclass(frozen=True)
class Bound:
    """An inclusive range (``low < value`` when ``open_low``; likewise ``open_high``)."""

    low: float
    high: float
    whole: bool = True
    open_low: bool = False
    open_high: bool = False

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        low = f"above {_number(self.low)}" if self.open_low else f"from {_number(self.low)}"
        high = f"and below {_number(self.high)}" if self.open_high else f"to {_number(self.high)}"
        return f"{kind} {low} {high}"

    def holds(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.whole and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


#: Each option of ``ScoringOptions`` and its range.
OPTION_BOUNDS: dict[str, Bound] = {
    "reps": Bound(MIN_REPS, MAX_REPS),
    "seed": Bound(0, SEED_LIMIT - 1),
    "confidence": Bound(0.0, 1.0, whole=False, open_low=True, open_high=True),
    # joint replicates behind ties and rank stability (the engine uses at most ``reps`` of them)
    "stability_samples": Bound(1, MAX_REPS),
    # Dirichlet concentration: far below 1 the weight draws degenerate to one criterion
    "concentration": Bound(0.01, 1e6, whole=False),
    "profile_points": Bound(2, 1001),
}


def option_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is not a valid ``name`` option (None when it is, or when ``name`` is unknown)."""
    bound = OPTION_BOUNDS.get(name)
    if bound is None or bound.holds(value):
        return None
    return f"expected {bound.describe()}"
