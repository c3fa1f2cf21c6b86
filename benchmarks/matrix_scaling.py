"""How a matrix of identical single-process runs speeds up with more slots: serially (--jobs 1), two
at a time (--jobs 2), and on a local Ray cluster of this machine's CPUs (the ray backend).

    python benchmarks/matrix_scaling.py [--runs 12] [--steps 3000] [--adapter sb3]

Each run is Stable-Baselines3 PPO on the calibrated-cost CartPole (1 ms of CPU per step), one env,
one worker, one torch thread: a run that keeps exactly one CPU busy. Wall time covers the whole
matrix on an existing cluster: Ray's own start (a few seconds, once per cluster, not per matrix) is
measured apart and shown with and without. Prints ``speedup jobs2 X`` and ``speedup ray X``; on a
2-core machine the goals are >= 1.8 and >= 1.7.
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
from rlcompare.execution.local import LocalBackend  # noqa: E402
from rlcompare.execution.ray_backend import RayBackend  # noqa: E402
from rlcompare.harness.host import usable_cpus  # noqa: E402
from rlcompare.plan.matrix import build_plan  # noqa: E402
from rlcompare.plugins.manager import build_plugin_manager  # noqa: E402
from rlcompare.spec.workload import workload_from_dict  # noqa: E402
from rlcompare.store.sqlite_store import Store  # noqa: E402


def workload(runs: int, steps: int) -> object:
    return workload_from_dict({
        "id": "one-cpu", "env": "rlcompare/CalibratedCartPole-v0", "env_kwargs": {"step_cost_ms": 1.0},
        "algorithm": "PPO", "env_steps": steps, "seeds": runs,
        "parallelism": {"envs_per_worker": 1, "workers": 1, "threads_per_worker": 1},
        "hyperparameters": {"rollout_steps": 256, "minibatch_size": 64, "epochs": 2},
        "evaluation": {"interval_steps": steps, "episodes": 1, "at_start": False},
    }, "matrix_scaling")


def run_matrix(backend: object, plan: object, scratch: Path, name: str) -> tuple[float, int]:
    store_path = scratch / f"{name}.db"
    with Store(store_path) as store:
        store.check_writable()
        started = time.perf_counter()
        summary = Driver(store, backend).run(plan)
        elapsed = time.perf_counter() - started
    return elapsed, sum(1 for outcome in summary.outcomes if outcome.status == "ok")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--adapter", default="sb3")
    args = parser.parse_args(argv)

    plugins = build_plugin_manager()
    plan = build_plan(plugins.plan_catalogue(), [workload(args.runs, args.steps)], [args.adapter])
    cpus = usable_cpus()
    print(f"{args.runs} runs of {args.adapter} PPO on the calibrated CartPole, {args.steps} steps each, "
          f"1 CPU each; this machine: {cpus} usable CPUs")
    limits = Limits(timeout_seconds=1800)
    with tempfile.TemporaryDirectory() as scratch:
        results = {}
        ray_start = 0.0
        for name, backend in (
            ("serial", LocalBackend(limits, BackendOptions(jobs=1))),
            ("jobs2", LocalBackend(limits, BackendOptions(jobs=2))),
            ("ray", RayBackend(limits, BackendOptions())),
        ):
            if name == "ray":  # the cluster is up before the matrix, as `ray start` would have it
                started = time.perf_counter()
                backend.open()
                ray_start = time.perf_counter() - started
                backend.open = lambda: None  # type: ignore[method-assign]
            elapsed, ok = run_matrix(backend, plan, Path(scratch), name)
            results[name] = elapsed
            print(f"{name:>7}: {elapsed:7.1f} s wall, {ok}/{args.runs} runs ok")
    print(f"ray start (once per cluster): {ray_start:.1f} s")
    print(f"speedup jobs2 {results['serial'] / results['jobs2']:.2f}")
    print(f"speedup ray {results['serial'] / results['ray']:.2f}  "
          f"({results['serial'] / (results['ray'] + ray_start):.2f} with Ray's start)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
