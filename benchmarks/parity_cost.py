"""What the parity probes of every built-in adapter cost, side by side: all of an adapter's probes in
one interpreter (as ``rlcompare parity`` asks them), one interpreter per probe, and a second
command that finds every verdict in the cache.

    python benchmarks/parity_cost.py [--adapters sb3,skrl]

CPU seconds are this process's and its children's (user + system), so they count the probes'
interpreters, the framework imports and the judging; the verdicts of the two ways of asking are
checked to be the same.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcompare.harness.measurement_cache import MeasurementCache  # noqa: E402
from rlcompare.parity.runner import ask, interpreter_for, parity_requests, run_requests  # noqa: E402
from rlcompare.plugins.manager import build_plugin_manager  # noqa: E402


def cpu_seconds() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapters", default=None, help="comma-separated adapter ids (default: every built-in)")
    args = parser.parse_args()
    plugins = build_plugin_manager()
    chosen = args.adapters.split(",") if args.adapters else None
    requests, _ = parity_requests(plugins.adapters, plugins.algorithms, chosen)
    for request in requests:  # environments built and interpreters found before anything is timed
        interpreter_for(request.adapter_class)

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        cache_path = Path(scratch) / "parity.json"
        started, wall = cpu_seconds(), time.perf_counter()
        batched = run_requests(requests, MeasurementCache(cache_path))
        rows.append(("one interpreter per adapter", cpu_seconds() - started, time.perf_counter() - wall))

        started, wall = cpu_seconds(), time.perf_counter()
        run_requests(requests, MeasurementCache(cache_path))
        rows.append(("again, from the cache", cpu_seconds() - started, time.perf_counter() - wall))

    started, wall = cpu_seconds(), time.perf_counter()
    single = []
    for request in requests:
        probe = request.reference.build_probe(request.reference.case_workload(request.case))
        single.append(ask(request, probe, interpreter_for(request.adapter_class)))
    rows.append(("one interpreter per probe", cpu_seconds() - started, time.perf_counter() - wall))

    same = [(a.status, a.variant) for a in batched] == [(b.status, b.variant) for b in single]
    base = rows[0][1]
    print(f"{len(requests)} probes of {len({r.adapter_id for r in requests})} adapters; verdicts the same both ways: "
          f"{same}")
    print(f"{'how':32s} {'CPU s':>8s} {'wall s':>8s} {'CPU / batched':>14s}")
    for name, cpu, seconds in rows:
        print(f"{name:32s} {cpu:8.1f} {seconds:8.1f} {cpu / base:13.2f}x")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
