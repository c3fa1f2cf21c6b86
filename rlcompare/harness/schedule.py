"""The schedule a run actually followed, traced from inside its framework: when gradient steps,
target-network syncs and exploration changes happened, against the harness's own count of env
steps. Adapters call ``context.trace(event, value)`` from the framework's callbacks, hooks, or by
wrapping its optimizer and target update; the harness keeps a compact summary (every event would
be tens of thousands of lines for an off-policy run) that the run records, and the parity layer
compares it with the schedule the family's canonical settings define.

Events:

- ``gradient_step``: one optimizer step of the main loss (DQN: the Q loss; SAC: the critic's);
- ``target_sync``: the target network moved toward the online one (a hard copy, or one Polyak step);
- ``exploration``: the exploration parameter now in force (``value``: DQN's epsilon), traced when it
  changes or at least once per update;
- ``update``: one pass of the algorithm's update (a rollout's epochs, or one train call).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

EVENTS = ("gradient_step", "target_sync", "exploration", "update")
#: Samples of a count or value kept per event kind (the curve of the schedule).
MAX_SAMPLES = 200


def gradient_steps_between_target_syncs(hyperparameters: Any) -> int:
    """The canonical DQN schedule in gradient steps, for a framework that counts its target interval
    in gradient steps: ``target_update_interval`` is in env steps and the copy happens between env
    steps, so of the copies between two updates only the last counts; the target is renewed every
    ``ceil(target_update_interval / train_every)`` updates, that is every ``gradient_steps *
    ceil(target_update_interval / train_every)`` gradient steps (the zoo's CartPole settings: 128,
    once per update, not 10 * 128 / 256 = 5, which copies inside an update's run of gradient steps)."""
    hp = hyperparameters
    return max(1, int(hp.gradient_steps) * math.ceil(int(hp.target_update_interval) / int(hp.train_every)))


@dataclass
class _Series:
    count: int = 0
    first_env_step: int | None = None
    last_env_step: int | None = None
    #: Intervals between consecutive events, in env steps and in gradient steps.
    interval_sum: int = 0
    interval_min: int | None = None
    interval_max: int | None = None
    gradient_interval_sum: int = 0
    #: Intervals counted in gradient steps: only those that start once gradient steps have begun.
    gradient_intervals: int = 0
    gradient_interval_max: int | None = None
    last_gradient_steps: int | None = None
    #: Events at a gradient-step count no earlier event of the kind had (*effective* events: two
    #: target syncs with no gradient step between them leave the same target as the second alone).
    effective: int = 0
    #: Effective events once gradient steps have begun (the first and last of them bound the mean interval).
    effective_learning: int = 0
    effective_first: tuple[int, int] | None = None  # (env steps, gradient steps)
    effective_last: tuple[int, int] | None = None
    samples: list[tuple[int, float]] = field(default_factory=list)
    stride: int = 1


class ScheduleTrace:
    """Accumulates events cheaply (a few integer updates each) and summarizes them."""

    def __init__(self) -> None:
        self._series: dict[str, _Series] = {}

    def record(self, event: str, env_steps: int, value: float | None = None) -> None:
        if event not in EVENTS:
            raise ValueError(f"unknown schedule event {event!r}; known: {', '.join(EVENTS)}")
        series = self._series.setdefault(event, _Series())
        gradient_steps = self._series["gradient_step"].count if "gradient_step" in self._series else 0
        if series.last_env_step is not None:
            interval = env_steps - series.last_env_step
            series.interval_sum += interval
            series.interval_min = interval if series.interval_min is None else min(series.interval_min, interval)
            series.interval_max = interval if series.interval_max is None else max(series.interval_max, interval)
            if series.last_gradient_steps:  # before learning starts an interval holds no gradient steps
                gap = gradient_steps - series.last_gradient_steps
                series.gradient_interval_sum += gap
                series.gradient_intervals += 1
                series.gradient_interval_max = gap if series.gradient_interval_max is None else max(
                    series.gradient_interval_max, gap)
        if series.effective_last is None or gradient_steps != series.effective_last[1]:
            series.effective += 1
            series.effective_last = (env_steps, gradient_steps)
            if gradient_steps > 0:  # intervals are measured once learning has begun
                series.effective_learning += 1
                series.effective_first = series.effective_first or series.effective_last
        series.count += 1
        series.first_env_step = env_steps if series.first_env_step is None else series.first_env_step
        series.last_env_step = env_steps
        series.last_gradient_steps = gradient_steps
        if (series.count - 1) % series.stride == 0:
            series.samples.append((env_steps, float(series.count if value is None else value)))
            if len(series.samples) > MAX_SAMPLES:  # keep every other sample, and sample half as often
                series.samples = series.samples[::2]
                series.stride *= 2

    def summary(self) -> dict[str, Any]:
        """Per event: count, first and last env step, interval statistics, sampled curve."""
        out: dict[str, Any] = {}
        for event, series in self._series.items():
            intervals = series.count - 1
            out[event] = {
                "count": series.count, "first_env_step": series.first_env_step,
                "last_env_step": series.last_env_step,
                "mean_interval_env_steps": series.interval_sum / intervals if intervals else None,
                "min_interval_env_steps": series.interval_min, "max_interval_env_steps": series.interval_max,
                "mean_interval_gradient_steps": (series.gradient_interval_sum / series.gradient_intervals
                                                 if series.gradient_intervals else None),
                "max_interval_gradient_steps": series.gradient_interval_max,
                "effective_count": series.effective,
                "mean_effective_interval_env_steps": _mean_gap(series, 0),
                "mean_effective_interval_gradient_steps": _mean_gap(series, 1),
                "first_effective_gradient_step": None if series.effective_first is None else series.effective_first[1],
                "samples": [list(sample) for sample in series.samples],
            }
        return out


def _mean_gap(series: _Series, part: int) -> float | None:
    """Mean interval between effective events, in env steps (``part`` 0) or gradient steps (1)."""
    if series.effective_learning < 2 or series.effective_first is None or series.effective_last is None:
        return None
    return (series.effective_last[part] - series.effective_first[part]) / (series.effective_learning - 1)
