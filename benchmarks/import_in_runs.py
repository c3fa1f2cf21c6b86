"""Cold imports timed inside runs against the same imports timed in fresh interpreters, side by side:
how far the figures a matrix records (each run's worker times its framework's import first thing,
beside whatever else the matrix runs) stand from the fresh-interpreter method on an idle machine.

    python benchmarks/import_in_runs.py [--store STORE] [--adapters sb3,skrl] [--jobs 2]

Without ``--store`` it first runs a tiny PPO matrix (1,024 env steps, 2 seeds per adapter, ``--jobs``
at a time) into a temporary store. Then, with no run in flight, it times each adapter's import in 3
fresh interpreters (the criterion's own function; no warm-up: the runs have just read the files)
and prints per adapter the median of the runs' timings, the fresh median and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "criteria"))

from rlcompare_criteria.cold_import import time_cold_import  # noqa: E402

TINY = """id = "import-in-runs"
env = "CartPole-v1"
algorithm = "PPO"
env_steps = 1024
seeds = 2
[parallelism]
envs_per_worker = 2
[hyperparameters]
rollout_steps = 128
minibatch_size = 64
epochs = 2
[evaluation]
interval_steps = 512
episodes = 2
"""


def run_matrix(folder: Path, adapters: str, jobs: int) -> Path:
    workload, store = folder / "tiny.toml", folder / "runs.db"
    workload.write_text(TINY, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters", adapters,
                    "--jobs", str(jobs), "--store", str(store), "--no-parity"], check=True)
    return store


def in_run_timings(store: Path) -> dict[str, tuple[list[str], list[float], list[int]]]:
    """Per adapter: (modules timed, the runs' import seconds, the runs in flight beside each)."""
    from rlcompare.store.sqlite_store import Store

    found: dict[str, tuple[list[str], list[float], list[int]]] = {}
    with Store(store) as opened:
        runs = opened.runs_frame()
    for row in runs.itertuples():
        if not isinstance(row.development_json, str):
            continue
        timing = json.loads(row.development_json).get("import") or {}
        if "seconds" not in timing:
            continue
        modules, seconds, beside = found.setdefault(row.adapter, (timing["modules"], [], []))
        seconds.append(float(timing["seconds"]))
        beside.append(int(row.runs_in_flight or 1))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a store whose runs timed their imports (default: run a tiny matrix first)")
    parser.add_argument("--adapters", default="sb3,skrl", help="adapters of the tiny matrix (default sb3,skrl)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once in the tiny matrix (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlcompare-import-in-runs-") as scratch:
        store = Path(args.store) if args.store else run_matrix(Path(scratch), args.adapters, args.jobs)
        timings = in_run_timings(store)
        if not timings:
            raise SystemExit(f"{store}: no run recorded its import timing")
        print(f"{'adapter':<12} {'runs':>4} {'in flight':>9} {'in runs (s)':>12} {'fresh (s)':>10} {'ratio':>7}")
        for adapter, (modules, seconds, beside) in sorted(timings.items()):
            fresh = time_cold_import(modules, warm_up=False)
            if "error" in fresh:
                print(f"{adapter:<12} fresh interpreter failed: {fresh['error']}")
                continue
            in_runs, alone = statistics.median(seconds), statistics.median(fresh["seconds"])
            print(f"{adapter:<12} {len(seconds):>4} {max(beside):>9} {in_runs:>12.2f} {alone:>10.2f} "
                  f"{in_runs / alone:>7.2f}")
    print("medians; 'in flight': the most runs the driver had in flight beside a timed one (itself included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
