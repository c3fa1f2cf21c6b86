"""Training-time overhead of rlcompare: the same training run directly with the framework and
through rlcompare's runner, in one invocation, alternating to share the machine's noise.

    python benchmarks/overhead.py [--steps 20000] [--repeats 3] [--adapters sb3] [--python PATH]

Prints, per adapter, the median training seconds of each way and ``ratio`` (rlcompare / direct),
then the median of the per-repeat ratios with a 95% bootstrap interval over repeats (on a noisy
machine single runs vary by 10-20%; the interval says whether a difference is the harness's or the
machine's). Repeats alternate which way runs first (ABBA), so drift over the benchmark cancels.
``driver cpu`` is what supervising the run cost the driver process (sampling its process tree),
per second of the run: it runs on another core, not in the timed training.
rlcompare's figure is its stored training time (start-up and evaluation excluded, as in every
report); the direct figure times the framework's own training call in a fresh interpreter with the
same configuration, the same thread pinning and no evaluation. Goal: ratio <= 1.05 (sb3: <= 1.02).
``--python`` runs both ways under another interpreter; without it an adapter that needs its own
environment (sample-factory: numpy<2) runs both ways in that environment, built or found as
``rlcompare run`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.baselines import train_sample_factory_directly, train_setup_directly  # noqa: E402
from rlcompare.spec.builtin_workloads import CARTPOLE_PPO_QUICK  # noqa: E402


def workload_dict(steps: int) -> dict[str, Any]:
    return {**CARTPOLE_PPO_QUICK, "id": "overhead", "env_steps": steps, "seeds": 1,
            # few evaluation points: their time is excluded anyway, but they cost wall time here
            "evaluation": {"interval_steps": steps // 2, "episodes": 5, "at_start": False}}


def sb3_model(workload: Any, env_fns: list[Any]) -> Any:
    """The SB3 model the adapter builds for ``workload`` (seed 0, CPU), on a DummyVecEnv of ``env_fns``."""
    import stable_baselines3
    import torch
    from rlcompare_sb3 import ACTIVATIONS, StableBaselines3Adapter
    from stable_baselines3.common.vec_env import DummyVecEnv

    kwargs, _ = StableBaselines3Adapter().native_config(workload)
    policy_kwargs = dict(kwargs.pop("policy_kwargs"))
    policy_kwargs["activation_fn"] = getattr(torch.nn, ACTIVATIONS[workload.network.activation])
    return getattr(stable_baselines3, workload.algorithm)(
        "MlpPolicy", DummyVecEnv(env_fns), seed=0, device="cpu", verbose=0, policy_kwargs=policy_kwargs, **kwargs
    )


def direct_sb3(workload: Any) -> float:
    """SB3 called directly with the configuration the adapter builds; seconds in ``learn``."""
    import torch

    from rlcompare.harness.counted_envs import make_env

    torch.set_num_threads(workload.parallelism.threads_per_worker)
    model = sb3_model(workload, [lambda: make_env(workload.env)] * workload.parallelism.total_envs)
    started = time.perf_counter()
    model.learn(total_timesteps=workload.env_steps)
    return time.perf_counter() - started


def direct_rllib(workload: Any) -> float:
    """RLlib called directly with the config the adapter builds, on plain (uncounted) envs;
    seconds in the ``train()`` loop until the budget is sampled."""
    import ray
    from ray.tune.registry import register_env
    from rlcompare_rllib import RLlibAdapter, start_ray

    from rlcompare.harness.counted_envs import make_env

    start_ray(workload)  # the same cluster the adapter starts
    try:
        register_env("direct-env", lambda _config: make_env(workload.env, workload.env_kwargs))
        algorithm = RLlibAdapter().build_config(workload, 0, "direct-env").build_algo()
        import torch

        torch.set_num_threads(workload.parallelism.threads_per_worker)
        steps = 0
        started = time.perf_counter()
        while steps < workload.env_steps:
            steps = int(algorithm.train()["env_runners"]["num_env_steps_sampled_lifetime"])
        elapsed = time.perf_counter() - started
        algorithm.stop()
    finally:
        ray.shutdown()
    return elapsed


def direct_tianshou(workload: Any) -> float:
    """Tianshou called directly through the adapter's own builder, without rlcompare's context."""
    from rlcompare_tianshou import TianshouAdapter, build

    return train_setup_directly(TianshouAdapter, build, workload)


def direct_torchrl(workload: Any) -> float:
    """TorchRL called directly through the adapter's own builder, without rlcompare's context."""
    from rlcompare_torchrl import TorchRLAdapter, build

    return train_setup_directly(TorchRLAdapter, build, workload)


def direct_skrl(workload: Any) -> float:
    """skrl called directly through the adapter's own builder, without rlcompare's context."""
    from rlcompare_skrl import SkrlAdapter, build

    return train_setup_directly(SkrlAdapter, build, workload)


def direct_sample_factory(workload: Any) -> float:
    """Sample Factory through the adapter's own run builder on plain envs, without rlcompare's context."""
    with tempfile.TemporaryDirectory() as scratch:
        return train_sample_factory_directly(workload, 0, Path(scratch))


DIRECT = {"sb3": direct_sb3, "rllib": direct_rllib, "tianshou": direct_tianshou, "torchrl": direct_torchrl,
          "skrl": direct_skrl, "sample-factory": direct_sample_factory}


def run_direct(adapter: str, steps: int, python: str = sys.executable) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(
        [python, __file__, "--direct-child", adapter, "--steps", str(steps)],
        capture_output=True, text=True, env=env, check=True,
    )
    return float(json.loads(result.stdout.strip().splitlines()[-1])["seconds"])


def run_through_rlcompare(adapter: str, steps: int, python: str = sys.executable) -> tuple[float, float]:
    """Training seconds of one run through rlcompare's driver, and the driver's CPU seconds per
    wall second while it supervised the run."""
    from rlcompare.execution.backend import BackendOptions, Limits
    from rlcompare.execution.driver import Driver
    from rlcompare.execution.local import LocalBackend
    from rlcompare.plan.matrix import build_plan
    from rlcompare.plan.placement import place_runs
    from rlcompare.plugins.manager import build_plugin_manager
    from rlcompare.spec.workload import workload_from_dict
    from rlcompare.store.sqlite_store import Store

    workload = workload_from_dict(workload_dict(steps), "overhead")
    plugins = build_plugin_manager()
    plan = build_plan(plugins.plan_catalogue(), [workload], [adapter])
    if python == sys.executable:  # where `rlcompare run` would run it (its own environment if it needs one)
        plan = place_runs(plugins.adapters, plan)
    with tempfile.TemporaryDirectory() as scratch, Store(Path(scratch) / "overhead.db") as store:
        driver = Driver(store, LocalBackend(Limits(), BackendOptions(jobs=1), python=python))
        cpu, wall = time.process_time(), time.perf_counter()
        outcome = driver.run(plan).outcomes[0]
        driver_cpu = (time.process_time() - cpu) / (time.perf_counter() - wall)
    if outcome.status != "ok":
        raise SystemExit(f"{adapter}: run {outcome.status}: {outcome.record.error}")
    return float(outcome.record.training_seconds), driver_cpu


def adapter_python(adapter: str) -> str:
    """The interpreter the adapter's runs use: its own environment's (built or found, as ``rlcompare
    run`` does) when it cannot run in the main one, else this one."""
    from rlcompare.plugins.manager import build_plugin_manager
    from rlcompare.pyenvs.manager import EnvironmentManager, EnvironmentSpec, isolation_reason

    adapter_class = build_plugin_manager().adapters[adapter]
    if isolation_reason(adapter_class) is None:
        return sys.executable
    return str(EnvironmentManager().ensure(EnvironmentSpec.for_adapter(adapter_class)).python)


def median_ratio_interval(direct: list[float], through: list[float], draws: int = 10_000,
                          seed: int = 0) -> tuple[float, float, float]:
    """Median of the per-repeat ratios and its 95% percentile-bootstrap interval over repeats."""
    import numpy as np

    ratios = np.asarray(through) / np.asarray(direct)
    rng = np.random.default_rng(seed)
    medians = np.median(ratios[rng.integers(0, len(ratios), size=(draws, len(ratios)))], axis=1)
    low, high = np.percentile(medians, [2.5, 97.5])
    return float(np.median(ratios)), float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--adapters", default=",".join(DIRECT))
    parser.add_argument("--python", help="interpreter both ways run under (default: where the adapter's runs run)")
    parser.add_argument("--direct-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.direct_child:
        from rlcompare.spec.workload import workload_from_dict

        seconds = DIRECT[args.direct_child](workload_from_dict(workload_dict(args.steps), "overhead"))
        print(json.dumps({"seconds": seconds}))
        return
    print(f"# CartPole-v1 PPO, {args.steps} env steps, {args.repeats} alternating (ABBA) repeats, medians")
    for adapter in args.adapters.split(","):
        direct, through, driver_cpu = [], [], []
        python = args.python or adapter_python(adapter)
        for repeat in range(args.repeats):
            if repeat % 2 == 0:
                direct.append(run_direct(adapter, args.steps, python))
            seconds, cpu = run_through_rlcompare(adapter, args.steps, args.python or sys.executable)
            through.append(seconds)
            driver_cpu.append(cpu)
            if repeat % 2 == 1:
                direct.append(run_direct(adapter, args.steps, python))
            # as it goes: on a busy machine a long benchmark may be cut short
            print(f"  {adapter} repeat {repeat + 1}: direct {direct[-1]:.2f} s  rlcompare {through[-1]:.2f} s  "
                  f"ratio {through[-1] / direct[-1]:.3f}", flush=True)
        d, t = statistics.median(direct), statistics.median(through)
        print(f"{adapter}: direct {d:.2f} s  rlcompare {t:.2f} s  "
              f"(direct {[round(x, 2) for x in direct]}, rlcompare {[round(x, 2) for x in through]})")
        print(f"ratio {adapter} {t / d:.3f}")
        if len(direct) > 1:
            middle, low, high = median_ratio_interval(direct, through)
            print(f"paired ratio {adapter} {middle:.3f} (95% interval over repeats {low:.3f}-{high:.3f})")
        print(f"driver cpu {adapter} {statistics.median(driver_cpu):.3f} s per s of run")


if __name__ == "__main__":
    main()
