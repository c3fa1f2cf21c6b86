"""How long scoring a large store takes, next to rliable on the same arrays.

Builds (or reuses) a synthetic store of frameworks x workloads x seeds runs with evaluation curves,
scores it end to end with ``rlcompare.scoring.score_store`` (read the store, every criterion, cell
intervals, aggregates, overall score, ranks, rank stability, probability of improvement and
performance profiles with their intervals), keeps the columns every statistic was computed from,
then computes the same intervals with rliable's ``get_interval_estimates`` on exactly those arrays
and prints both CPU times and their ratio.

    python benchmarks/scoring_scale.py                      # 5 x 20 x 1,000 = 100,000 runs
    python benchmarks/scoring_scale.py --seeds 10 --replay-reps 2000

rliable's cost is linear in its repetitions (one call of the statistic per replicate), so by default
it is replayed with fewer repetitions (``--replay-reps``) and scaled to ``--reps``; the output says
so. The goal is ratio <= 0.1 (ours / rliable, CPU time).
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

from rlcompare.harness.measurement_cache import MeasurementCache  # noqa: E402
from rlcompare.harness.validity import BudgetTolerance, judge_run  # noqa: E402
from rlcompare.plugins.manager import build_plugin_manager  # noqa: E402
from rlcompare.scoring.engine import DEFAULT_REPS, ScoringOptions, score_store  # noqa: E402
from rlcompare.scoring.profiles import get_profile  # noqa: E402
from rlcompare.store.sqlite_store import CURVE_COLUMNS, RUN_COLUMNS, Store  # noqa: E402

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
                # columns as CURVE_COLUMNS: the synthetic points lie on the evaluation grid
                curve_rows += [(run_id, int(s), int(s), float(t), float(r), 0.0, 200.0, "[]", int(s), None)
                               for s, t, r in zip(steps, training, curves[seed], strict=True)]
    with Store(path) as store:  # creates the schema; the bulk insert below is one transaction
        store.create()
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


_TOLERANCE = BudgetTolerance("rollout", 512, 512)
_VALID = None


def _row(run_id: str, spec: dict, text: str, digest: str, adapter: str, seed: int, *, status: str,
         error: str | None = None, final: float | None = None, throughput: float | None = None,
         startup: float | None = None, rss: int | None = None) -> tuple:
    global _VALID
    if _VALID is None:  # every ok run here keeps every rule: judge one, store the verdict with each
        verdict = judge_run(env_steps=spec["env_steps"], framework_env_steps=spec["env_steps"],
                            budget=spec["env_steps"], tolerance=_TOLERANCE, evaluation_returns=[0.0],
                            final_return=0.0)
        _VALID = json.dumps(verdict.to_dict())
    training = spec["env_steps"] / throughput if throughput else None
    ok = status == "ok"
    values = {
        "run_id": run_id, "workload_id": spec["id"], "workload_digest": digest, "adapter": adapter,
        "framework": f"framework-{adapter}", "algorithm": spec["algorithm"], "env_id": spec["env"], "seed": seed,
        "status": status, "error": error, "started_at": 1.7e9, "finished_at": 1.7e9 + 60,
        "startup_seconds": startup, "training_seconds": training, "env_steps": spec["env_steps"],
        "framework_env_steps": spec["env_steps"] if ok else None, "step_count_tolerance": 512,
        "budget_granularity": "rollout", "budget_overshoot_steps": 512, "evaluations": len(CURVE_STEPS) if ok else 0,
        "throughput": throughput, "peak_rss_bytes": rss, "final_return_mean": final,
        "success_threshold": spec["success_threshold"], "budget_env_steps": spec["env_steps"],
        "workload_json": text, "validity_json": _VALID if ok else None,
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


def rliable_calls(inputs: dict) -> list[tuple[str, dict, object]]:
    """The rliable calls that compute what the engine computed, on the same columns: one
    ``get_interval_estimates`` per statistic kind (and per group of equal-sized cells)."""
    from rliable import library, metrics
    from scipy.stats import trim_mean

    def stack(columns: list) -> np.ndarray | list:
        sizes = {len(c.values) for c in columns}
        if len(sizes) == 1:
            return np.column_stack([c.values for c in columns])
        return [c.values[:, None] for c in columns]

    def aggregates(*arrays: np.ndarray) -> np.ndarray:
        if len(arrays) == 1:
            s = arrays[0]
            return np.array([metrics.aggregate_iqm(s), metrics.aggregate_mean(s), metrics.aggregate_median(s),
                             metrics.aggregate_optimality_gap(s)])
        pooled = np.concatenate([a.ravel() for a in arrays])
        means = np.concatenate([a.mean(axis=0) for a in arrays])
        return np.array([trim_mean(pooled, 0.25), means.mean(), np.median(means), 1 - np.minimum(pooled, 1).mean()])

    calls: list[tuple[str, dict, object]] = []
    by_size: dict[int, list] = {}
    for _, column in inputs["cells"]:
        by_size.setdefault(len(column.values), []).append(column)
    for size, columns in by_size.items():
        calls.append(("cells", {f"n={size}": np.column_stack([c.values for c in columns])},
                      lambda x: x.mean(axis=0)))
    calls.append(("aggregates", {f"{k}": stack(cols) for k, cols in inputs["aggregates"]}, aggregates))
    for adapter, weighted, _ in inputs["overall"]:
        if not weighted:
            continue
        weights = np.array([w for _, w in weighted])
        calls.append(("overall", {adapter: [c.values[:, None] for c, _ in weighted]},
                      lambda *arrays, w=weights: np.array([sum(a.mean() * x for a, x in zip(arrays, w, strict=True))])))
    for (cid, x, y, _), tasks in inputs["pairwise"]:
        xs, ys = stack([t[0] for t in tasks]), stack([t[1] for t in tasks])
        if isinstance(xs, list) or isinstance(ys, list):
            continue  # rliable's estimator needs equal runs per task
        calls.append(("improvement", {f"{cid}:{x},{y}": [xs, ys]}, metrics.probability_of_improvement))
    for cid, taus, adapters in inputs["profiles"]:
        for adapter, columns in adapters:
            scores = stack(columns)
            if isinstance(scores, list):
                continue
            calls.append(("profiles", {f"{cid}:{adapter}": scores},
                          lambda s, t=taus: library.score_distributions(s, t)))
    return calls


def replay(calls: list[tuple[str, dict, object]], reps: int, replay_reps: int) -> dict[str, float]:
    """rliable's CPU seconds per kind of statistic, scaled from ``replay_reps`` to ``reps``."""
    from rliable import library

    np.random.seed(0)
    seconds: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind, score_dict, func in calls:
            with Timer() as timer:
                library.get_interval_estimates(score_dict, func, reps=replay_reps)
            seconds[kind] = seconds.get(kind, 0.0) + timer.cpu * reps / replay_reps
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", type=int, default=5)
    parser.add_argument("--workloads", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=1_000)
    parser.add_argument("--reps", type=int, default=DEFAULT_REPS, help="bootstrap repetitions (both sides)")
    parser.add_argument("--replay-reps", type=int, default=100,
                        help="repetitions rliable actually runs; its time is scaled to --reps")
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

        plugins = build_plugin_manager(builtins=("rlcompare_criteria.performance", "rlcompare_criteria.development"), autoload=False)
        import rliable.library  # noqa: F401 - imported up front so neither side pays for it
        import scipy.stats  # noqa: F401

        inputs: dict = {}
        options = ScoringOptions(reps=args.reps)
        with Timer() as ours, Store(path) as store:
            matrix = score_store(store, plugins.scoring_catalogue(), get_profile("balanced"), options,
                                 cache=MeasurementCache(Path(scratch) / "cache.json"), inputs=inputs)
        calls = rliable_calls(inputs)
        alone = replay(calls, args.reps, min(args.replay_reps, args.reps))

    total = sum(alone.values())
    cells = sum(1 for cell in matrix.cells.values() if cell.missing is None)
    missing = sum(1 for cell in matrix.cells.values() if cell.missing is not None)
    ranks = ", ".join(f"{a} #{o.rank} ({o.score.point:.3f})" for a, o in sorted(
        matrix.overall.items(), key=lambda item: item[1].rank or 99) if o.score is not None)
    print(f"matrix: {cells} cells with values, {missing} missing with a reason; {ranks}")
    print(f"ours (score_store end to end, every interval): {ours.cpu:.2f} s CPU, {ours.wall:.2f} s wall")
    scaled = "" if args.replay_reps >= args.reps else f", run with {args.replay_reps} and scaled linearly"
    print(f"rliable get_interval_estimates on the same arrays ({len(calls)} calls, reps={args.reps}{scaled}): "
          f"{total:.2f} s CPU")
    print("  by statistic: " + ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in alone.items()))
    print(f"ratio: {ours.cpu / total:.3f} (ours end to end / rliable's bootstrap alone, CPU time; goal <= 0.1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
