"""How many runs one driver can keep committing: a no-op run (it trains nothing and reports at once)
through the Ray backend, so only the driver, Ray's scheduling and the store are measured.

    python benchmarks/driver_scale.py [--runs 2000] [--address ADDR]

Prints runs committed per second and the driver's CPU time per run (its overhead: run directory,
spec, streaming, validity verdict, store transaction), and from them how many nodes one driver can
keep busy for runs of a given length. Goals: >= 200 runs committed/s, <= 20 ms driver overhead per run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlcompare.execution.backend import BackendOptions, Limits  # noqa: E402
from rlcompare.execution.driver import Driver  # noqa: E402
from rlcompare.execution.ray_backend import RayBackend  # noqa: E402
from rlcompare.execution.ray_task import execute_noop  # noqa: E402
from rlcompare.harness.validity import BudgetTolerance  # noqa: E402
from rlcompare.plan.matrix import Plan, PlannedRun  # noqa: E402
from rlcompare.spec.workload import workload_from_dict  # noqa: E402
from rlcompare.store.sqlite_store import Store  # noqa: E402


def plan(runs: int) -> Plan:
    workload = workload_from_dict({"id": "noop", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000,
                                   "seeds": 1, "hyperparameters": {}}, "driver_scale")
    tolerance = BudgetTolerance.for_workload(workload)
    return Plan(runs=[PlannedRun(workload, "noop", "noop", seed, tolerance) for seed in range(runs)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--address", help="an existing Ray cluster (default: a local one on loopback)")
    args = parser.parse_args(argv)

    backend = RayBackend(Limits(), BackendOptions(address=args.address), execute=execute_noop)
    with tempfile.TemporaryDirectory() as scratch, Store(Path(scratch) / "scale.db") as store:
        store.check_writable()
        # Ray's start and stop are the cluster's, once, not the driver's per run: measured apart
        started = time.perf_counter()
        backend.open()
        ray_start = time.perf_counter() - started
        backend.open = lambda: None  # type: ignore[method-assign]
        close, backend.close = backend.close, lambda: None  # type: ignore[method-assign]
        cpu, wall = time.process_time(), time.perf_counter()
        summary = Driver(store, backend).run(plan(args.runs))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        close()
        stored = len(store.runs_frame())
    ok = sum(1 for outcome in summary.outcomes if outcome.status == "ok")
    rate = ok / wall
    per_run_ms = 1000 * cpu / max(1, args.runs)
    print(f"{ok}/{args.runs} no-op runs ok, {stored} stored, in {wall:.1f} s wall ({cpu:.1f} s driver CPU); "
          f"Ray's start, apart: {ray_start:.1f} s")
    print(f"runs committed/s: {rate:.0f}  (goal >= 200)")
    print(f"driver overhead per run: {per_run_ms:.1f} ms CPU  (goal <= 20)")
    for minutes in (1, 10, 60):
        print(f"  runs of {minutes:>2} min: one driver keeps ~{rate * minutes * 60:,.0f} run slots busy "
              f"(e.g. {rate * minutes * 60 / 32:,.0f} nodes of 32 CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
