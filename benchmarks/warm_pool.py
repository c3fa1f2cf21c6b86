"""Each driver's own warm parents against one shared pool (``RLCOMPARE_WARM_POOL``), side by side.

    python benchmarks/warm_pool.py [--adapters sb3] [--drivers 4]

A script that calls ``rlcompare run --warm-start`` once per workload starts a driver per call. With its
own parents, each driver imports the framework again; drivers that name one pool share the parent the
first one started. Per adapter, ``--drivers`` drivers each run one seed of a tiny CartPole PPO workload,
one after the other: first each with its own parents, then all with one pool. Prints the wall time of
all the drivers, the CPU seconds of every process they started (drivers, parents, runs: the pool's
parents are read before the pool is removed, as they outlive the drivers), and the runs' median
start-up and throughput, each with the ratio pool / own. Goal: CPU and wall ratios under 1, falling
as drivers are added; start-up and throughput about 1 (a forked run's figures are a warm start's either
way: docs/criteria.md, "Warm starts").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcompare.pyenvs import warm  # noqa: E402
from rlcompare.store.sqlite_store import Store  # noqa: E402

WORKLOAD = """id = "pooled"
env = "CartPole-v1"
algorithm = "PPO"
env_steps = 1024
seeds = 1
[hyperparameters]
rollout_steps = 128
minibatch_size = 64
epochs = 2
[evaluation]
interval_steps = 512
episodes = 2
"""


def _children_cpu() -> float:
    times = os.times()
    return times.children_user + times.children_system


def _process_cpu(pid: int) -> float:
    """CPU seconds of a running process (its own and its reaped children's), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def measure(adapter: str, drivers: int, pooled: bool, scratch: Path) -> dict[str, float]:
    """``drivers`` drivers of one run each, one after the other: their wall time, the CPU of all they
    started, and their runs' medians."""
    workload = scratch / "pooled.toml"
    workload.write_text(WORKLOAD, encoding="utf-8")
    pool = scratch / f"pool-{adapter}"
    env = {**os.environ, warm.WARM_START_ENV: "1"}
    env.pop(warm.WARM_POOL_ENV, None)
    if pooled:
        warm.open_pool(pool, owner=os.getpid())
        env[warm.WARM_POOL_ENV] = str(pool)
    stores = [scratch / f"{adapter}-{'pool' if pooled else 'own'}-{number}.db" for number in range(drivers)]
    cpu, started = _children_cpu(), time.perf_counter()
    for store in stores:
        done = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                               adapter, "--store", str(store), "--warm-start", "--no-parity"],
                              env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{adapter} ({'pool' if pooled else 'own'}): {done.stderr.strip()[-400:]}")
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if pooled:
        for entry in pool.glob("*/parent.json"):
            cpu += _process_cpu(int(json.loads(entry.read_text(encoding="utf-8"))["pid"]))
        shutil.rmtree(pool)
    records = []
    for store in stores:
        with Store(store) as opened:
            records.extend(opened.runs_frame().to_dict("records"))
    return {"drivers wall s": wall, "all CPU s": cpu,
            "start-up s": statistics.median(record["startup_seconds"] or 0.0 for record in records),
            "throughput": statistics.median(record["throughput"] or 0.0 for record in records)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapters", default="sb3", help="comma-separated (main-environment adapters)")
    parser.add_argument("--drivers", type=int, default=4)
    args = parser.parse_args()
    print(f"# {args.drivers} drivers one after the other, one tiny CartPole PPO run each, warm starts; "
          "own parents first, then one pool")
    print(f"{'adapter':10}{'figure':16}{'own':>10}{'pool':>10}{'pool/own':>10}")
    with tempfile.TemporaryDirectory() as scratch:
        for adapter in args.adapters.split(","):
            own = measure(adapter, args.drivers, False, Path(scratch))
            shared = measure(adapter, args.drivers, True, Path(scratch))
            for figure in own:
                ratio = shared[figure] / own[figure] if own[figure] else float("nan")
                print(f"{adapter:10}{figure:16}{own[figure]:10.2f}{shared[figure]:10.2f}{ratio:10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
