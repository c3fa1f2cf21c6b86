"""How loaded the machine a run ran on was: its load average when the run started and when it ended,
and the share of CPU time the hypervisor took away meanwhile (steal).

Timing figures (start-up, throughput, memory) of two adapters compare only when both were measured
under similar contention; each run records these figures with its result so that reports can say
when they were not (:mod:`rlcompare.store.contention`). The run's worker samples them itself, on
the machine where it runs, whatever the backend. Standard library only; a figure a platform does
not offer (``/proc/stat`` outside Linux) is None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

#: The aggregate CPU line of /proc/stat: user nice system idle iowait irq softirq steal (guest time
#: is counted in user and nice already, so it is left out of the total).
_STAT_PATH = "/proc/stat"
_STEAL_FIELD = 7
_TOTAL_FIELDS = 8


def _load_average() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def _cpu_ticks() -> tuple[int, int] | None:
    """(steal ticks, total ticks) of every CPU since boot, or None where /proc/stat is not there."""
    try:
        with open(_STAT_PATH, encoding="ascii") as stat:
            first = stat.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) <= _STEAL_FIELD:
        return None
    try:
        ticks = [int(value) for value in first[1:_TOTAL_FIELDS + 1]]
    except ValueError:
        return None
    return ticks[_STEAL_FIELD], sum(ticks)


@dataclass(frozen=True)
class LoadSample:
    """The machine's 1-minute load average and CPU tick counters at one moment."""

    load_1m: float | None
    cpus: int | None
    ticks: tuple[int, int] | None

    @classmethod
    def now(cls) -> LoadSample:
        return cls(_load_average(), os.cpu_count(), _cpu_ticks())

    def until(self, end: LoadSample) -> RunLoad:
        """The load figures of a run that started at this sample and ended at ``end``."""
        steal = None
        if self.ticks is not None and end.ticks is not None:
            total = end.ticks[1] - self.ticks[1]  # 0 for a run shorter than a clock tick: nothing stolen seen
            steal = max(0.0, (end.ticks[0] - self.ticks[0]) / total) if total > 0 else 0.0
        return RunLoad(load_start=self.load_1m, load_end=end.load_1m, load_cpus=end.cpus or self.cpus,
                       cpu_steal=steal)


@dataclass(frozen=True)
class RunLoad:
    """What a run records about the machine's load: the 1-minute load average at its start and end,
    the CPUs that load is spread over (the machine's, not the run's affinity: load counts every
    process), and the share of CPU time stolen by the hypervisor between start and end."""

    load_start: float | None = None
    load_end: float | None = None
    load_cpus: int | None = None
    cpu_steal: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"load_start": self.load_start, "load_end": self.load_end, "load_cpus": self.load_cpus,
                "cpu_steal": self.cpu_steal}
