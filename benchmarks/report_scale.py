"""How long ``rlcompare report`` takes, end to end, as a user runs it.

Times ``python -m rlcompare report --store STORE --out DIR --format FORMATS`` in a fresh
interpreter (imports, plugins, scoring, tables, figures, writing), ``--repeats`` times, and prints
each wall time and the median, with the machine's load average (the figures of a shared machine
stretch with its load). The store is either given (``--store``, e.g. the demo's) or a synthetic one
built like ``benchmarks/scoring_scale.py`` builds its store (frameworks x workloads x seeds runs
with evaluation curves, some failed and timed-out runs).

    python benchmarks/report_scale.py                                  # synthetic 5 x 10 x 100 = 5,000 runs
    python benchmarks/report_scale.py --store rlcompare.db --bar 3     # the demo store, bar 3 s
    python benchmarks/report_scale.py --format html,md,latex,csv,json --repeats 1

Bars: 3 s for the 6-run demo store, 30 s for 5,000 runs (``--format html``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from scoring_scale import build_store  # noqa: E402


def time_report(store: Path, formats: str, out: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rlcompare", "report", "--store", str(store), "--out", str(out),
                           "--format", formats], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"report failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return wall, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="time this store instead of a synthetic one")
    parser.add_argument("--frameworks", type=int, default=5)
    parser.add_argument("--workloads", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--format", default="html", help="report formats (default html)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bar", type=float, help="seconds the median must stay under (exit 1 when not)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rlcompare-report-bench-") as scratch:
        store = args.store
        if store is None:
            store = Path(scratch) / "synthetic.db"
            started = time.perf_counter()
            runs, points = build_store(store, args.frameworks, args.workloads, args.seeds)
            print(f"synthetic store: {runs:,} runs, {points:,} curve points "
                  f"({args.frameworks} frameworks x {args.workloads} workloads x {args.seeds} seeds), "
                  f"built in {time.perf_counter() - started:.1f} s")
        walls = []
        for repeat in range(args.repeats):
            out = Path(scratch) / f"out{repeat}"
            load = os.getloadavg()[0]
            wall, written = time_report(store, args.format, out)
            walls.append(wall)
            sizes = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
            print(f"repeat {repeat + 1}: {wall:.2f} s wall (load average {load:.2f} on {os.cpu_count()} CPUs), "
                  f"{len(written.splitlines())} files, {sizes / 2**20:.1f} MiB")
        median = statistics.median(walls)
        print(f"report --format {args.format} of {store.name}: median {median:.2f} s wall over {len(walls)} runs"
              + (f" (bar {args.bar:g} s: {'met' if median < args.bar else 'NOT met'})" if args.bar else ""))
        if args.bar and median >= args.bar:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
