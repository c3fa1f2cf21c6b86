"""How many env steps each adapter needs to reach a workload's success threshold, with intervals:
a built-in workload re-run with more seeds and a finer evaluation grid than its suite uses, and the
schedule each framework actually followed.

    python benchmarks/steps_to_threshold.py            # cartpole-ppo-quick, the demo's four adapters, 3 seeds
    python benchmarks/steps_to_threshold.py cartpole-ppo-quick --adapters sb3,skrl --seeds 5 --interval 1000
    python benchmarks/steps_to_threshold.py cartpole-dqn --adapters sb3,tianshou,skrl --seeds 3

Prints per adapter: the steps to the first evaluation at or above the threshold on each seed (``-``
when never), their mean with a 95% bootstrap interval over seeds, the final returns, the parity
verdicts of its family, and how its traced schedule departed from the canonical one. The store is
kept (``--store``) so the runs can be reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcompare.execution.runner import LocalRunner  # noqa: E402
from rlcompare.parity.runner import default_cache  # noqa: E402
from rlcompare.parity.schedules import schedule_differences  # noqa: E402
from rlcompare.plan.matrix import build_plan  # noqa: E402
from rlcompare.plan.parity import with_parity  # noqa: E402
from rlcompare.plan.placement import place_runs  # noqa: E402
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager  # noqa: E402
from rlcompare.spec.workload import workload_from_dict  # noqa: E402
from rlcompare.store.sqlite_store import Store  # noqa: E402


def mean_interval(values: list[float], reps: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """Mean and 95% percentile-bootstrap interval over the values (seeds)."""
    data = np.asarray(values, dtype=float)
    draws = data[np.random.default_rng(seed).integers(0, len(data), (reps, len(data)))].mean(axis=1)
    return float(data.mean()), float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", nargs="?", default="cartpole-ppo-quick",
                        help="a registered workload id (rlcompare list workloads; default cartpole-ppo-quick)")
    parser.add_argument("--adapters", default="sb3,skrl,tianshou,torchrl",
                        help="comma-separated adapter ids (default: the demo's four)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=None, help="evaluation interval in env steps")
    parser.add_argument("--episodes", type=int, default=None, help="evaluation episodes per point")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--store", default=None)
    parser.add_argument("--plugin", action="append", default=[],
                        help="a module in benchmarks/ registering more adapters (e.g. ppo_ablation_adapters)")
    args = parser.parse_args()

    if args.plugin:  # the runs' workers import the plugin's adapters too
        here = str(Path(__file__).resolve().parent)
        sys.path.insert(0, here)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    plugins = build_plugin_manager(builtins=(*BUILTIN_PLUGINS, *args.plugin))
    base = plugins.workloads[args.workload].to_dict()
    evaluation = dict(base["evaluation"])
    if args.interval:
        evaluation["interval_steps"] = args.interval
    if args.episodes:
        evaluation["episodes"] = args.episodes
    workload = workload_from_dict({**base, "seeds": args.seeds, "evaluation": evaluation}, args.workload,
                                  plugins.algorithms)
    adapters = args.adapters.split(",")
    plan = build_plan(plugins.plan_catalogue(), [workload], adapters)
    plan = place_runs(plugins.adapters, plan)
    plan = with_parity(plan, plugins.adapters, plugins.algorithms, default_cache())
    store_path = Path(args.store) if args.store else Path(tempfile.mkdtemp()) / "steps.db"
    print(f"# {workload.id}: {workload.env} {workload.algorithm}, {workload.env_steps} env steps, threshold "
          f"{workload.success_threshold}, evaluation every {workload.evaluation.interval_steps} steps x "
          f"{workload.evaluation.episodes} episodes, {args.seeds} seeds; store {store_path}", flush=True)
    with Store(store_path) as store:
        LocalRunner(store, jobs=args.jobs, timeout_seconds=3600).run(plan)
        runs, curves = store.runs_frame(), store.curves_frame()
    threshold = workload.success_threshold
    for adapter in adapters:
        mine = runs[runs["adapter"] == adapter].sort_values("seed")
        reached, finals = [], []
        for run in mine.itertuples():
            points = curves[curves["run_id"] == run.run_id].sort_values("env_steps")
            hit = points[points["return_mean"] >= threshold]["env_steps"]
            reached.append(float(hit.iloc[0]) if len(hit) else None)
            finals.append(run.final_return_mean)
        got = [value for value in reached if value is not None]
        if got:
            mean, low, high = mean_interval(got)
            summary = f"mean {mean:.0f} ({low:.0f}-{high:.0f})"
        else:
            summary = "never"
        print(f"{adapter}: steps to {threshold}: {['-' if v is None else int(v) for v in reached]} -> {summary} "
              f"on {len(got)}/{len(reached)} seeds; final returns {[None if f != f else round(f, 1) for f in finals]}")
        verdicts = json.loads(mine["parity_json"].iloc[0]) if mine["parity_json"].iloc[0] else []
        for verdict in verdicts:
            print(f"  parity {verdict['family']}/{verdict['case']}: {verdict.get('summary') or verdict['status']}")
        for text in sorted({d.text for run in mine.itertuples() if isinstance(run.schedule_json, str)
                            for d in schedule_differences(workload.to_dict(), json.loads(run.schedule_json))}):
            print(f"  schedule: {text}")


if __name__ == "__main__":
    main()
