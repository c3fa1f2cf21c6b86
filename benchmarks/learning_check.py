"""Learning check (not part of CI): every adapter trains CartPole-v1 PPO with the same canonical
settings, 3 seeds x 100k env steps, and the harness's final evaluation returns are printed.

    python benchmarks/learning_check.py [--adapters sb3,rllib,tianshou,torchrl,skrl] [--seeds 3] [--steps 100000]
                                        [--jobs 2] [--store learning_check.db] [--python PATH]

``--python`` runs the workers under another interpreter: an adapter whose framework pins
incompatible versions (sample-factory: numpy<2, gymnasium<1.0) runs in its own environment.

Each adapter should reach >= 450 with equivalent settings; one that does not points at an unfair
mapping (a bug in its adapter) or a real difference, to be explained from its fidelity report.
Completed runs are kept in the store, so an interrupted check resumes with --resume.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcompare.builtin_workloads import CLASSIC  # noqa: E402
from rlcompare.execution.backend import BackendOptions, Limits  # noqa: E402
from rlcompare.execution.driver import Driver  # noqa: E402
from rlcompare.execution.local import LocalBackend  # noqa: E402
from rlcompare.plan import build_plan  # noqa: E402
from rlcompare.plugins import build_plugin_manager  # noqa: E402
from rlcompare.progress import ConsoleProgress  # noqa: E402
from rlcompare.store import Store  # noqa: E402
from rlcompare.workload import workload_from_dict  # noqa: E402

GOAL = 450.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapters", default="sb3,rllib,tianshou,torchrl,skrl")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--store", default="learning_check.db")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--python", default=sys.executable, help="interpreter the workers run under")
    args = parser.parse_args()

    spec = next(spec for spec in CLASSIC if spec["id"] == "cartpole-ppo")
    workload = workload_from_dict(
        {**spec, "id": "learning-check-cartpole-ppo", "env_steps": args.steps, "seeds": args.seeds,
         "evaluation": {"interval_steps": args.steps // 10, "episodes": 20}},
        "learning check",
    )
    plan = build_plan(build_plugin_manager(), [workload], args.adapters.split(","))
    progress = ConsoleProgress(total=len(plan.runs))
    with Store(args.store) as store:
        backend = LocalBackend(Limits(3 * 3600), BackendOptions(jobs=args.jobs), python=args.python)
        Driver(store, backend, on_start=progress.started, on_finish=progress.finished).run(plan, resume=args.resume)
        runs = store.runs_frame()
    runs = runs[runs["workload_id"] == workload.id]
    print(f"\n# CartPole-v1 PPO, {args.steps:,} env steps, final evaluation return (20 episodes, deterministic)")
    print(f"{'adapter':<10} {'per seed':<32} {'mean':>7} {'throughput':>11}  reaches {GOAL:g}")
    for adapter, rows in runs.groupby("adapter"):
        finals = [f"{value:.1f}" if value == value else rows.iloc[i]["status"]
                  for i, value in enumerate(rows["final_return_mean"])]
        mean = rows["final_return_mean"].mean()
        print(f"{adapter:<10} {', '.join(finals):<32} {mean:>7.1f} {rows['throughput'].mean():>9.0f}/s  "
              f"{'yes' if (rows['final_return_mean'] >= GOAL).all() else 'NO'}")


if __name__ == "__main__":
    main()
