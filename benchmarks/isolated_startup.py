"""Start-up of a run in an adapter's own environment against the same adapter in the main one.

    python benchmarks/isolated_startup.py [--repeats 5] [--adapter tinyfit]

The adapter (default: ``tinyfit``, the numpy-only test adapter of tests/plugins/isolated, which fits
both) runs one tiny CartPole run per repeat, alternately in the main environment and in its own
(built first, or found in the cache). Prints the median of each way: ``startup`` is the run's stored
start-up time (worker launched to training started: interpreter, imports, adapter, environments),
``wall`` the run's wall time; ``delta`` is own - main. Goal: startup delta <= +0.5 s. Also prints
how long finding the ready environment took (what ``rlcompare run`` adds before the matrix starts).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "plugins" / "isolated"))

from rlcompare.execution.runner import LocalRunner  # noqa: E402
from rlcompare.plan.matrix import WorkerEnvironment, build_plan  # noqa: E402
from rlcompare.plugins.manager import build_plugin_manager  # noqa: E402
from rlcompare.pyenvs.manager import EnvironmentManager, EnvironmentSpec  # noqa: E402
from rlcompare.spec.workload import workload_from_dict  # noqa: E402
from rlcompare.store.sqlite_store import Store  # noqa: E402

WORKLOAD = {"id": "startup", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 400, "seeds": 1,
            "hyperparameters": {"rollout_steps": 64}, "evaluation": {"interval_steps": 400, "episodes": 2}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--adapter", default="tinyfit")
    args = parser.parse_args()

    import os

    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "plugins" / "isolated")])
    plugins = build_plugin_manager()
    plan = build_plan(plugins.plan_catalogue(), [workload_from_dict(WORKLOAD, "benchmark")], [args.adapter])
    manager = EnvironmentManager()
    spec = EnvironmentSpec.for_adapter(plugins.adapters[args.adapter])
    environment = manager.ensure(spec)
    print(f"# environment {environment.key}: {'built' if environment.built else 'found ready'} in "
          f"{environment.seconds:.2f} s ({environment.path})")
    found = statistics.median(_time(lambda: manager.ensure(spec)) for _ in range(5))
    print(f"# finding a ready environment: {found * 1000:.1f} ms (median of 5)")
    own = WorkerEnvironment(str(environment.python), environment.key, environment.lock_digest, args.adapter)
    plans = {"main": plan, "own": dataclasses.replace(plan, runs=[dataclasses.replace(run, environment=own)
                                                                    for run in plan.runs])}
    figures: dict[str, dict[str, list[float]]] = {way: {"startup": [], "wall": []} for way in plans}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            for way in ("main", "own") if repeat % 2 == 0 else ("own", "main"):
                with Store(Path(scratch) / f"{way}-{repeat}.db") as store:
                    [outcome] = LocalRunner(store).run(plans[way]).outcomes
                record = outcome.record
                if record.status != "ok":
                    print(f"{way} run {repeat} ended {record.status}: {record.error}", file=sys.stderr)
                    return 1
                figures[way]["startup"].append(record.startup_seconds or 0.0)
                figures[way]["wall"].append(record.wall_seconds or 0.0)
    print(f"{'':10}{'main':>10}{'own':>10}{'delta':>10}   (median of {args.repeats}, seconds)")
    for name in ("startup", "wall"):
        main_value = statistics.median(figures["main"][name])
        own_value = statistics.median(figures["own"][name])
        print(f"{name:10}{main_value:10.3f}{own_value:10.3f}{own_value - main_value:+10.3f}")
    for way in plans:
        print(f"# {way} startup: " + " ".join(f"{value:.3f}" for value in figures[way]["startup"]))
    return 0


def _time(call: object) -> float:
    started = time.perf_counter()
    call()  # type: ignore[operator]
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())
