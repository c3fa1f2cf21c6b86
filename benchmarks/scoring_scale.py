"""How long scoring a large store takes, next to rliable's own bootstrap on the same arrays.

Builds (or reuses) a synthetic store of frameworks x workloads x seeds runs with evaluation curves,
scores it end to end with ``rlcompare.scoring.score_store`` (read the store, every criterion, cell
intervals, aggregates, overall score, ranks, rank stability, probability of improvement, profiles),
records every array handed to ``rliable.library.get_interval_estimates``, then replays exactly those
calls with the same number of bootstrap repetitions and prints both times and their ratio.

    python benchmarks/scoring_scale.py                      # 5 x 20 x 1,000 = 100,000 runs
    python benchmarks/scoring_scale.py --seeds 100 --reps 500

The ratio is ours / rliable alone; the goal is <= 1.5 (what scoring adds around the bootstrap).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlcompare.plugins import build_plugin_manager  # noqa: E402
from rlcompare.profiles import get_profile  # noqa: E402
from rlcompare.scoring import Recorder, ScoringOptions, score_store  # noqa: E402
from rlcompare.stats import DEFAULT_REPS  # noqa: E402
from rlcompare.store import CURVE_COLUMNS, RUN_COLUMNS, Store  # noqa: E402

CURVE_STEPS = (0, 2_500, 5_000, 7_500, 10_000)
THRESHOLD = 400.0


def _workload(index: int) -> dict:
    """A spec shaped (and sized) like a real workload's JSON."""
    return {
        "id": f"bench-{index:02d}", "description": "synthetic", "env": f"Bench{index}-v0", "env_kwargs": {},
        "algorithm": "PPO", "env_steps": CURVE_STEPS[-1], "seeds": 1000, "spec_version": 1,
        "parallelism": {"envs_per_worker": 4, "workers": 1, "mode": "sync", "threads_per_worker": 1},
        "network": {"hidden_sizes": [64, 64], "activation": "tanh"},
        "hyperparameters": {"learning_rate": 3e-4, "gamma": 0.99, "gae_lambda": 0.95, "clip_range": 0.2,
                            "rollout_steps": 128, "minibatch_size": 64, "epochs": 10, "entropy_coef": 0.0,
                            "value_coef": 0.5, "max_grad_norm": 0.5, "normalize_advantage": True},
        "evaluation": {"interval_steps": 2_500, "episodes": 10, "deterministic": True, "seed_offset": 1_000_000,
                       "at_start": True},
        "success_threshold": THRESHOLD,
    }


def build_store(path: Path, frameworks: int, workloads: int, seeds: int) -> tuple[int, int]:
    """Write the synthetic store: framework f learns at speed 1 + f/4; framework 1 fails every 50th
    seed; every seed of the last framework times out on the last workload (a missing cell).
    Returns (runs, curve points)."""
    rng = np.random.default_rng(0)
    specs = [_workload(w) for w in range(workloads)]
    texts = [json.dumps(spec, sort_keys=True) for spec in specs]
    digests = [hashlib.sha256(text.encode()).hexdigest()[:16] for text in texts]
    steps = np.array(CURVE_STEPS, dtype=float)
    run_rows, curve_rows = [], []
    for f in range(frameworks):
        adapter, speed = f"fw{f}", 1.0 + f / 4
        for w, spec in enumerate(specs):
            timed_out = f == frameworks - 1 and w == workloads - 1
            ceiling = rng.normal(450.0, 40.0, seeds)
            curves = ceiling[:, None] * (1.0 - np.exp(-speed * steps[None, :] / 3_000.0))
            throughput = rng.normal(1_000.0 * speed, 80.0, seeds)
            for seed in range(seeds):
                run_id = f"{spec['id']}__{adapter}__s{seed}"
                if timed_out or (f == 1 and seed % 50 == 0):
                    status, error = ("timeout", "killed by the timeout") if timed_out else (
                        "failed", "RuntimeError: synthetic failure")
                    run_rows.append(_row(run_id, spec, texts[w], digests[w], adapter, seed, status=status,
                                         error=error))
                    continue
                run_rows.append(_row(run_id, spec, texts[w], digests[w], adapter, seed, status="ok",
                                     final=float(curves[seed, -1]), throughput=float(throughput[seed]),
                                     startup=float(2.0 / speed + rng.random()),
                                     rss=int((300 + 40 * f + rng.random() * 20) * 2**20)))
                training = steps / throughput[seed]
                curve_rows += [(run_id, int(s), int(s), float(t), float(r), 0.0, 200.0, "[]")
                               for s, t, r in zip(steps, training, curves[seed], strict=True)]
    with Store(path) as store:  # creates the schema; the bulk insert below is one transaction
        store.save_run(dict(zip(RUN_COLUMNS, run_rows[0], strict=True)))
    connection = sqlite3.connect(path)
    with connection:
        connection.executemany(
            f"INSERT OR REPLACE INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join('?' * len(RUN_COLUMNS))})",
            run_rows)
        connection.executemany(
            f"INSERT OR REPLACE INTO curves ({', '.join(CURVE_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(CURVE_COLUMNS))})", curve_rows)
    connection.close()
    return len(run_rows), len(curve_rows)


def _row(run_id: str, spec: dict, text: str, digest: str, adapter: str, seed: int, *, status: str,
         error: str | None = None, final: float | None = None, throughput: float | None = None,
         startup: float | None = None, rss: int | None = None) -> tuple:
    training = spec["env_steps"] / throughput if throughput else None
    values = {
        "run_id": run_id, "workload_id": spec["id"], "workload_digest": digest, "adapter": adapter,
        "framework": f"framework-{adapter}", "algorithm": spec["algorithm"], "env_id": spec["env"], "seed": seed,
        "status": status, "error": error, "started_at": 1.7e9, "finished_at": 1.7e9 + 60,
        "startup_seconds": startup, "training_seconds": training, "env_steps": spec["env_steps"],
        "throughput": throughput, "peak_rss_bytes": rss, "final_return_mean": final,
        "success_threshold": spec["success_threshold"], "budget_env_steps": spec["env_steps"],
        "workload_json": text,
    }
    return tuple(values.get(column) for column in RUN_COLUMNS)


class Timer:
    """Wall-clock and process CPU seconds of a block. The CPU figure is the one to compare on a
    shared machine: other processes stretch wall time unevenly between the two measurements."""

    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def replay(recorder: Recorder, reps: int, seed: int) -> Timer:
    """rliable's get_interval_estimates on the recorded arrays, alone."""
    from rliable import library

    np.random.seed(seed)
    with warnings.catch_warnings(), Timer() as timer:
        warnings.simplefilter("ignore", FutureWarning)
        for score_dict, func in recorder:
            library.get_interval_estimates(score_dict, func, reps=reps)
    return timer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", type=int, default=5)
    parser.add_argument("--workloads", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=1_000)
    parser.add_argument("--reps", type=int, default=DEFAULT_REPS, help="bootstrap repetitions (both sides)")
    parser.add_argument("--store", type=Path, help="reuse or create this store (default: a temporary one)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        path = args.store or Path(scratch) / "scale.db"
        started = time.perf_counter()
        if path.exists():
            print(f"store: reusing {path}")
        else:
            runs, points = build_store(path, args.frameworks, args.workloads, args.seeds)
            print(f"store: {runs:,} runs ({args.frameworks} frameworks x {args.workloads} workloads x "
                  f"{args.seeds:,} seeds), {points:,} curve points, built in {time.perf_counter() - started:.1f} s")

        plugins = build_plugin_manager(builtins=("criteria.performance", "criteria.development"), autoload=False)
        import rliable.library  # noqa: F401 - imported up front so neither side pays for it

        recorder: Recorder = []
        options = ScoringOptions(reps=args.reps)
        with Timer() as ours, Store(path) as store:
            matrix = score_store(store, plugins, get_profile("balanced"), options, recorder=recorder)
        alone = replay(recorder, args.reps, options.seed)

    cells = sum(1 for cell in matrix.cells.values() if cell.missing is None)
    missing = sum(1 for cell in matrix.cells.values() if cell.missing is not None)
    ranks = ", ".join(f"{a} #{o.rank} ({o.score.point:.3f})" for a, o in sorted(
        matrix.overall.items(), key=lambda item: item[1].rank or 99) if o.score is not None)
    print(f"matrix: {cells} cells with values, {missing} missing with a reason; {ranks}")
    print(f"ours (score_store end to end): {ours.cpu:.2f} s CPU, {ours.wall:.2f} s wall")
    print(f"rliable get_interval_estimates alone, same arrays, reps={args.reps} ({len(recorder)} calls): "
          f"{alone.cpu:.2f} s CPU, {alone.wall:.2f} s wall")
    print(f"ratio: {ours.cpu / alone.cpu:.2f} (ours / rliable alone, CPU time; wall time "
          f"{ours.wall / alone.wall:.2f}; goal <= 1.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
