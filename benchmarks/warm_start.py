"""Cold against warm starts (``rlcompare run --warm-start``): the same tiny matrix both ways, side by side.

    python benchmarks/warm_start.py [--adapters sb3,torchrl] [--seeds 4] [--jobs 1]

Each adapter trains a tiny CartPole PPO workload ``--seeds`` times with cold starts (a fresh interpreter
per run, the default) and with warm starts (each run forked from a parent that imported the framework
once), cold first, in the main environment. Prints per adapter: the driver's wall time for the matrix
and the CPU seconds of every process it started (runs and parents), then the runs' median start-up,
training time, throughput and peak memory, each with the ratio warm / cold. Goal: CPU and wall ratios
well under 1 for a matrix of short runs, start-up and throughput ratios about 1 (the start-up of a
forked run counts its parent's preload), peak memory below 1 (pages a forked run never touches are
not counted: docs/criteria.md, "Warm starts").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcompare.execution.runner import LocalRunner  # noqa: E402
from rlcompare.plan.matrix import build_plan  # noqa: E402
from rlcompare.plugins.manager import build_plugin_manager  # noqa: E402
from rlcompare.pyenvs import warm  # noqa: E402
from rlcompare.spec.workload import workload_from_dict  # noqa: E402
from rlcompare.store.sqlite_store import Store  # noqa: E402

WORKLOAD = {"id": "warmth", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1024,
            "hyperparameters": {"rollout_steps": 128, "minibatch_size": 64, "epochs": 2},
            "evaluation": {"interval_steps": 512, "episodes": 2}}


def _children_cpu() -> float:
    times = os.times()
    return times.children_user + times.children_system


def measure(adapter: str, seeds: int, jobs: int, warm_start: bool, scratch: Path) -> dict[str, float]:
    """One matrix of ``seeds`` runs of ``adapter``: the driver's wall and its children's CPU, and the runs' medians."""
    os.environ[warm.WARM_START_ENV] = "1" if warm_start else "0"
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(),
                      [workload_from_dict({**WORKLOAD, "seeds": seeds}, "benchmark")], [adapter])
    cpu, started = _children_cpu(), time.perf_counter()
    with Store(scratch / f"{adapter}-{'warm' if warm_start else 'cold'}.db") as store:
        outcomes = LocalRunner(store, jobs=jobs).run(plan).outcomes
        warm.PARENTS.stop_all()  # the parents' CPU is counted once they are reaped
        wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    records = [outcome.record for outcome in outcomes]
    failed = [record.error for record in records if record.status != "ok"]
    if failed:
        raise SystemExit(f"{adapter} ({'warm' if warm_start else 'cold'}): {failed[0]}")
    return {"matrix wall s": wall, "matrix CPU s": cpu,
            "start-up s": statistics.median(record.startup_seconds or 0.0 for record in records),
            "training s": statistics.median(record.training_seconds or 0.0 for record in records),
            "throughput": statistics.median(record.throughput or 0.0 for record in records),
            "peak MiB": statistics.median((record.peak_rss_bytes or 0) / 2**20 for record in records)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapters", default="sb3,torchrl", help="comma-separated (main-environment adapters)")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    print(f"# tiny CartPole PPO, {args.seeds} seeds per adapter, --jobs {args.jobs}; cold first, then warm")
    print(f"{'adapter':10}{'figure':16}{'cold':>10}{'warm':>10}{'warm/cold':>11}")
    with tempfile.TemporaryDirectory() as scratch:
        for adapter in args.adapters.split(","):
            cold = measure(adapter, args.seeds, args.jobs, False, Path(scratch))
            hot = measure(adapter, args.seeds, args.jobs, True, Path(scratch))
            for figure in cold:
                ratio = hot[figure] / cold[figure] if cold[figure] else float("nan")
                print(f"{adapter:10}{figure:16}{cold[figure]:10.2f}{hot[figure]:10.2f}{ratio:11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
