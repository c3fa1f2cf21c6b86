"""Learning check (not part of CI): every adapter trains CartPole-v1 with the same canonical
settings, 3 seeds x 100k env steps, and the harness's final evaluation returns are printed, with the
first env step at which an evaluation reached the task's threshold (475).

    python benchmarks/learning_check.py [--adapters A,B (default: every installed adapter)] [--seeds 3]
                                        [--steps 100000] [--jobs 2] [--store learning_check.db]

Gradient adapters train the classic suite's ``cartpole-ppo``; evolutionary ones (EvoTorch) its
``cartpole-es``; adapters without either (d3rlpy) its ``cartpole-dqn``, all on the same env-step
budget. An adapter that can run none of them on CartPole (RSL-RL: continuous actions only) is listed
with the reason its refusal gives, and the others run. Each adapter should reach >= 450 with equivalent
settings; one that does not points at an unfair mapping (a bug in its adapter) or a real difference,
to be explained from its fidelity report. Completed runs are kept in the store, so an interrupted
check resumes with --resume.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcompare.cli.progress import ConsoleProgress  # noqa: E402
from rlcompare.errors import IncompatibleError  # noqa: E402
from rlcompare.execution.backend import BackendOptions, Limits  # noqa: E402
from rlcompare.execution.driver import Driver  # noqa: E402
from rlcompare.execution.local import LocalBackend  # noqa: E402
from rlcompare.plan.matrix import Plan, build_plan  # noqa: E402
from rlcompare.plugins.manager import build_plugin_manager  # noqa: E402
from rlcompare.spec.builtin_workloads import CLASSIC  # noqa: E402
from rlcompare.spec.workload import workload_from_dict  # noqa: E402
from rlcompare.store.sqlite_store import Store  # noqa: E402

GOAL = 450.0
#: The classic workload each algorithm family is checked on.
WORKLOAD_BY_ALGORITHM = {"PPO": "cartpole-ppo", "ES": "cartpole-es", "DQN": "cartpole-dqn"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapters", default=None, help="comma-separated adapter ids (default: every installed one)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--store", default="learning_check.db")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    plugins = build_plugin_manager()
    workloads = {}
    for algorithm, workload_id in WORKLOAD_BY_ALGORITHM.items():
        spec = next(spec for spec in CLASSIC if spec["id"] == workload_id)
        workloads[algorithm] = workload_from_dict(
            {**spec, "id": f"learning-check-{workload_id}", "env_steps": args.steps, "seeds": args.seeds,
             "evaluation": {"interval_steps": args.steps // 10, "episodes": 20}},
            "learning check",
        )
    runs_planned = []
    refused: dict[str, str] = {}
    adapter_ids = args.adapters.split(",") if args.adapters else sorted(plugins.adapters)
    for adapter_id in adapter_ids:
        offered = plugins.adapter(adapter_id).capabilities().algorithms
        reasons = []
        for algorithm in (name for name in WORKLOAD_BY_ALGORITHM if name in offered):
            try:
                runs_planned += build_plan(plugins.plan_catalogue(), [workloads[algorithm]], [adapter_id]).runs
                break
            except IncompatibleError as error:  # e.g. a PPO for continuous actions only: the next family
                reasons.append(str(error))
        else:
            refused[adapter_id] = "; ".join(reasons) or f"offers none of {', '.join(WORKLOAD_BY_ALGORITHM)}"
    # an adapter that does not fit this environment (sample-factory: numpy<2, gymnasium<1.0) runs in
    # its own, built (or reused) here exactly as `rlcompare run` does
    from rlcompare.plan.placement import place_runs

    plan = place_runs(plugins.adapters, Plan(runs=runs_planned), log=lambda message: print(message, file=sys.stderr))
    progress = ConsoleProgress(total=len(plan.runs))
    with Store(args.store) as store:
        backend = LocalBackend(Limits(3 * 3600), BackendOptions(jobs=args.jobs))
        Driver(store, backend, on_start=progress.started, on_finish=progress.finished).run(plan, resume=args.resume)
        runs = store.runs_frame()
        curves = store.curves_frame()
    print(f"\n# CartPole-v1, {args.steps:,} env steps, final evaluation return (20 episodes, deterministic);")
    print("# 'first >= T': env steps (harness count) of the first evaluation reaching threshold T, per seed")
    for algorithm, workload in workloads.items():
        rows_of = runs[runs["workload_id"] == workload.id]
        if rows_of.empty:
            continue
        threshold = workload.success_threshold
        print(f"\n## {workload.id} ({algorithm}, {workload.family.kind})")
        print(f"{'adapter':<10} {'per seed':<26} {'mean':>7} {'throughput':>11}  reaches {GOAL:g}  "
              f"first >= {threshold:g}")
        for adapter, rows in rows_of.groupby("adapter"):
            finals = [f"{value:.1f}" if value == value else rows.iloc[i]["status"]
                      for i, value in enumerate(rows["final_return_mean"])]
            mean = rows["final_return_mean"].mean()
            first = [_first_reaching(curves, run_id, threshold) for run_id in rows["run_id"]]
            print(f"{adapter:<10} {', '.join(finals):<26} {mean:>7.1f} {rows['throughput'].mean():>9.0f}/s  "
                  f"{'yes' if (rows['final_return_mean'] >= GOAL).all() else 'NO':<11}  "
                  f"{', '.join('never' if step is None else f'{step:,}' for step in first)}")


    for adapter_id, reason in refused.items():
        print(f"\n{adapter_id}: cannot learn CartPole here: {reason}")


def _first_reaching(curves: Any, run_id: str, threshold: float | None) -> int | None:
    """Env steps of the run's first evaluation whose mean return reached ``threshold``."""
    if threshold is None:
        return None
    points = curves[(curves["run_id"] == run_id) & (curves["return_mean"] >= threshold)]
    return None if points.empty else int(points["env_steps"].min())


if __name__ == "__main__":
    main()
