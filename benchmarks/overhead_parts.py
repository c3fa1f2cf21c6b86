"""Where rlcompare's training overhead over direct SB3 could come from, measured in one process.

    python benchmarks/overhead_parts.py [--steps 20000] [--repeats 4]

Trains the same SB3 PPO (the configuration the adapter builds, one torch thread) three ways,
alternating: on plain envs, on envs wrapped by the harness's step counter, and on counted envs with
the harness's per-step callback (no evaluation due). Prints the median training seconds of each and
their ratios to plain: the harness's own per-step cost, apart from process start, evaluation and
supervision (which ``benchmarks/overhead.py`` includes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()

    import torch
    from overhead import sb3_model, workload_dict
    from stable_baselines3.common.callbacks import BaseCallback

    from rlcompare.context import TrainingContext
    from rlcompare.envs import make_env
    from rlcompare.workload import workload_from_dict

    torch.set_num_threads(1)
    workload = workload_from_dict(workload_dict(args.steps), "overhead")
    envs = workload.parallelism.total_envs

    def plain() -> float:
        model = sb3_model(workload, [lambda: make_env(workload.env)] * envs)
        started = time.perf_counter()
        model.learn(total_timesteps=args.steps)
        return time.perf_counter() - started

    def counted(with_callback: bool) -> float:
        with tempfile.TemporaryDirectory() as scratch:
            context = TrainingContext(workload, 0, scratch)
            context._next_evaluation = 2**62  # no evaluation: only the per-step cost is timed
            model = sb3_model(workload, [context.env_factory(slot) for slot in range(envs)])

            class Harness(BaseCallback):
                def _on_step(self) -> bool:
                    context.checkpoint(None, self.num_timesteps)  # type: ignore[arg-type]
                    return True

            started = time.perf_counter()
            model.learn(total_timesteps=args.steps, callback=Harness() if with_callback else None)
            return time.perf_counter() - started

    ways = {"plain": plain, "counted": lambda: counted(False), "counted+callback": lambda: counted(True)}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeats):
        for name, way in ways.items():
            seconds[name].append(way())
    base = statistics.median(seconds["plain"])
    print(f"# SB3 PPO on {workload.env}, {args.steps} env steps, {args.repeats} alternating repeats, medians")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"{name:17s} {median:6.2f} s  ratio {median / base:.3f}  {[round(v, 2) for v in values]}")


if __name__ == "__main__":
    main()
