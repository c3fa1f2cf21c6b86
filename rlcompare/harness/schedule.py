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

from dataclasses import dataclass, field
from typing import Any

EVENTS = ("gradient_step", "target_sync", "exploration", "update")
#: Samples of a count or value kept per event kind (the curve of the schedule).
MAX_SAMPLES = 200


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
                "samples": [list(sample) for sample in series.samples],
            }
        return out
