"""Under how much contention each adapter's timings were measured, and where two adapters' timings on
one workload were measured under different contention.

Start-up, throughput and memory measure the framework only when every adapter ran under the same
conditions: two identical adapters measured in different ``run`` invocations on a loaded machine
rank apart on noise. Every run records the machine's load while it ran (the 1-minute load average at
its start and end, over the machine's CPUs; CPU steal; the runs its driver had in flight), and the
driver interleaves adapters so that one matrix spreads its load evenly. This module turns those
figures into one line per workload where they disagree.

The rule: per valid run, the load per CPU is the mean of its load averages at start and end divided
by the machine's CPUs (the run's own processes count too, alike for every adapter of a workload);
per adapter and workload, the mean over its valid runs. A workload is flagged when two adapters'
means differ by more than :data:`LOAD_TOLERANCE` (half a CPU's worth of runnable processes per
CPU), or their mean CPU steal by more than :data:`STEAL_TOLERANCE`. Runs without load figures
(stores from before they were recorded) count neither way.
"""

from __future__ import annotations

import math
from typing import Any

#: Mean load per CPU (1-minute load average / CPUs) two adapters' valid runs on one workload may
#: differ by before their timing figures are said to be measured under different contention.
LOAD_TOLERANCE = 0.5
#: Mean share of CPU time stolen by the hypervisor two adapters may differ by, likewise.
STEAL_TOLERANCE = 0.05
#: Timing figures are scored from valid runs only.
_TIMED_STATUSES = ("ok",)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def run_load_per_cpu(load_start: Any, load_end: Any, load_cpus: Any) -> float | None:
    """One run's load per CPU: the mean of its recorded load averages over the machine's CPUs."""
    loads = [value for value in (_number(load_start), _number(load_end)) if value is not None]
    cpus = _number(load_cpus)
    if not loads or not cpus or cpus <= 0:
        return None
    return sum(loads) / len(loads) / cpus


def contention_by_workload(runs: Any) -> list[dict[str, Any]]:
    """Per workload and adapter (sorted), over its valid runs that recorded their load: how many,
    the mean load per CPU, the mean CPU steal (None where no run recorded it) and the most runs in
    flight at once. ``runs`` is a store's runs frame (older stores lack the columns: no rows)."""
    if len(runs) == 0 or "load_start" not in runs:
        return []
    found: dict[tuple[str, str], dict[str, list[float]]] = {}
    columns = (runs["workload_id"], runs["adapter"], runs["status"], runs["load_start"], runs["load_end"],
               runs["load_cpus"], runs["cpu_steal"], runs["runs_in_flight"])
    for workload, adapter, status, start, end, cpus, steal, in_flight in zip(*columns, strict=True):
        load = run_load_per_cpu(start, end, cpus)
        if status not in _TIMED_STATUSES or load is None:
            continue
        figures = found.setdefault((str(workload), str(adapter)), {"load": [], "steal": [], "in_flight": []})
        figures["load"].append(load)
        for key, value in (("steal", _number(steal)), ("in_flight", _number(in_flight))):
            if value is not None:
                figures[key].append(value)
    return [{"workload": workload, "adapter": adapter, "runs": len(figures["load"]),
             "load_per_cpu": sum(figures["load"]) / len(figures["load"]),
             "cpu_steal": sum(figures["steal"]) / len(figures["steal"]) if figures["steal"] else None,
             "runs_in_flight": int(max(figures["in_flight"])) if figures["in_flight"] else None}
            for (workload, adapter), figures in sorted(found.items())]


def contended_workloads(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The workloads of :func:`contention_by_workload` rows whose adapters' load (or steal) differs
    beyond the tolerances, each with its rows."""
    by_workload: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_workload.setdefault(row["workload"], []).append(row)
    flagged = {}
    for workload, group in by_workload.items():
        loads = [row["load_per_cpu"] for row in group]
        steals = [row["cpu_steal"] for row in group if row["cpu_steal"] is not None]
        if len(group) > 1 and (max(loads) - min(loads) > LOAD_TOLERANCE
                               or (len(steals) > 1 and max(steals) - min(steals) > STEAL_TOLERANCE)):
            flagged[workload] = group
    return flagged


def contention_warnings(runs: Any) -> list[str]:
    """One line per workload whose adapters' timing figures were measured under different contention
    (for reports and ``rlcompare score``); empty when they agree or no run recorded its load."""
    lines = []
    for workload, group in sorted(contended_workloads(contention_by_workload(runs)).items()):
        figures = "; ".join(
            f"{row['adapter']} {row['load_per_cpu']:.2f}"
            + ("" if row["cpu_steal"] is None else f" (steal {row['cpu_steal']:.0%})")
            + f" over {row['runs']} run{'s' if row['runs'] != 1 else ''}" for row in group)
        lines.append(f"{workload}: timing figures (start-up, throughput, memory) were measured under different "
                     f"machine load, as load average per CPU: {figures} (they differ by more than "
                     f"{LOAD_TOLERANCE:g} load per CPU or {STEAL_TOLERANCE:.0%} steal): compare them with care")
    return lines
