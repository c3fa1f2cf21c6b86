"""Point estimates and confidence intervals over seeds, using rliable's estimators."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

DEFAULT_REPS = 2_000


@contextmanager
def seeded_global_numpy(seed: int) -> Iterator[None]:
    """Seed numpy's global RNG for the duration, then restore it.

    rliable's ``StratifiedBootstrap.update_indices`` draws from ``np.random`` (the global RNG) and
    ignores the ``random_state`` it is given, so only this makes its intervals reproducible.
    """
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% bootstrap confidence interval over ``n`` seeds."""

    point: float
    low: float
    high: float
    n: int

    def format(self, digits: int = 1) -> str:
        if self.n == 0:
            return "missing"
        text = f"{self.point:.{digits}f}"
        if self.n > 1:
            text += f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return text + f" (n={self.n})"


def mean_with_ci(values: Sequence[float], reps: int = DEFAULT_REPS, seed: int = 0) -> Estimate:
    """Mean over seeds with a 95% percentile-bootstrap interval (rliable's ``get_interval_estimates``).

    The bootstrap is seeded, so a report is reproducible from its store.
    """
    array = np.asarray([value for value in values if value is not None and np.isfinite(value)], dtype=float)
    if array.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    if array.size == 1:
        value = float(array[0])
        return Estimate(value, value, value, 1)
    import warnings

    from rliable import library

    with warnings.catch_warnings(), seeded_global_numpy(seed):
        warnings.simplefilter("ignore", FutureWarning)  # arch deprecates the RandomState rliable passes on
        points, intervals = library.get_interval_estimates(
            {"x": array.reshape(-1, 1)},
            lambda scores: np.array([np.mean(scores)]),
            reps=reps,
            random_state=np.random.RandomState(seed),
        )
    return Estimate(float(points["x"][0]), float(intervals["x"][0][0]), float(intervals["x"][1][0]), int(array.size))
