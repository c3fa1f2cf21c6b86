"""Where rlcompare's training overhead over direct SB3 could come from, measured in one process.

    python benchmarks/overhead_parts.py [--steps 20000] [--repeats 4]

Trains the same SB3 PPO (the configuration the adapter builds, one torch thread) three ways,
alternating: on plain envs, on envs wrapped by the harness's step counter, and on counted envs with
the harness's per-step callback (no evaluation due). Prints the median training seconds of each and
their ratios to plain: the harness's own per-step cost, apart from process start, evaluation and
supervision (which ``benchmarks/overhead.py`` includes).

Single runs on a shared machine vary by 5-15%, more than the effect sought, so the script also
*accounts* for the harness's cost: it counts the calls the harness adds to one counted run (one
counting-wrapper step per env step, one ``checkpoint`` per vector step), times each kind of call
alone (the stepping thread's CPU time, many repeats, as ``benchmarks/counting_overhead.py``) and
prints their product as a share of the plain run: the harness's per-step cost, without the noise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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

    from rlcompare.harness.context import TrainingContext
    from rlcompare.harness.counted_envs import make_env
    from rlcompare.spec.workload import workload_from_dict

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
                    calls["checkpoint"] += 1
                    context.checkpoint(None, self.num_timesteps)  # type: ignore[arg-type]
                    return True

            started = time.perf_counter()
            model.learn(total_timesteps=args.steps, callback=Harness() if with_callback else None)
            elapsed = time.perf_counter() - started
            calls["step"] = context.counter.totals()[0]
            context.close()
            return elapsed

    calls = {"checkpoint": 0, "step": 0}
    ways = {"plain": plain, "counted": lambda: counted(False), "counted+callback": lambda: counted(True)}
    # warm-up, untimed: the first model of a process pays torch's one-time initialisation
    sb3_model(workload, [lambda: make_env(workload.env)] * envs).learn(total_timesteps=1024)
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeats):
        for name, way in ways.items():
            seconds[name].append(way())
    base = statistics.median(seconds["plain"])
    print(f"# SB3 PPO on {workload.env}, {args.steps} env steps, {args.repeats} alternating repeats, medians")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"{name:17s} {median:6.2f} s  ratio {median / base:.3f}  {[round(v, 2) for v in values]}")
    account(workload, calls["step"], calls["checkpoint"] // args.repeats, base)


def account(workload: Any, steps: int, checkpoints: int, plain_seconds: float, repeats: int = 21) -> None:
    """Print the harness's per-step cost in one counted run: calls made x CPU time per call."""
    import gymnasium
    from counting_overhead import compare

    from rlcompare.harness.context import TrainingContext
    from rlcompare.harness.counted_envs import StepCounter

    with tempfile.TemporaryDirectory() as scratch:
        counter = StepCounter(Path(scratch) / "steps.bin", create=True)
        times = compare(lambda: gymnasium.make(workload.env), str(counter.path), 20_000, repeats)
        step_us = statistics.median(c - r for c, r in zip(times["counting"], times["raw"], strict=True))
        context = TrainingContext(workload, 0, Path(scratch) / "run")
        context._next_evaluation = 2**62  # nothing due: the cost of every call but the evaluating ones
        per_call = []
        for _ in range(repeats):
            started = time.thread_time()
            for _ in range(10_000):
                context.checkpoint(None, 0)  # type: ignore[arg-type]
            per_call.append((time.thread_time() - started) / 10_000 * 1e6)
        checkpoint_us = statistics.median(per_call)
        context.close()
    total = steps * step_us * 1e-6 + checkpoints * checkpoint_us * 1e-6
    print(f"# accounted: the calls the harness adds to one counted run, times CPU time per call ({repeats} repeats)")
    print(f"counting wrapper {steps:7d} steps x {step_us:.3f} us = {steps * step_us * 1e-3:6.1f} ms")
    print(f"checkpoint       {checkpoints:7d} calls x {checkpoint_us:.3f} us = {checkpoints * checkpoint_us * 1e-3:6.1f} ms")
    print(f"accounted harness cost {total * 1e3:.1f} ms = {100 * total / plain_seconds:.2f}% of the plain run")


if __name__ == "__main__":
    main()
