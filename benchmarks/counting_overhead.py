"""What the harness's step counting adds to every environment step.

    python benchmarks/counting_overhead.py [--steps 20000] [--repeats 21]

Steps CartPole-v1 (``gymnasium.make``, fixed actions) raw, through the previous counter (a numpy
memmap row update per step, kept here for reference) and through :class:`rlcompare.harness.counted_envs.CountingWrapper`,
alternating the three in a shuffled order every repeat so they share the machine's noise. Times are
the stepping thread's CPU time (other processes on a busy machine inflate wall time, not this).
Prints the median per-step time of each and the median of the per-repeat differences from raw; the
last line, ``us_per_step``, is what counting adds over raw CartPole. A second table repeats the
comparison over an environment whose step does nothing, which isolates the wrapper's own cost from
CartPole's variance. No assertions: the figures are for the issue notes (goal: <= 0.5 us).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

from rlcompare.harness.counted_envs import CountingWrapper, StepCounter  # noqa: E402

SLOT = 3


class MemmapCountingWrapper(gymnasium.Wrapper):
    """The counter before: a ``(slots, 2)`` int64 numpy memmap, one row updated per step."""

    def __init__(self, env: gymnasium.Env, counter_path: str) -> None:
        super().__init__(env)
        self._counts = np.memmap(counter_path, dtype=np.int64, mode="r+", shape=(StepCounter(counter_path).slots, 2))

    def step(self, action: Any) -> Any:
        observation, reward, terminated, truncated, info = self.env.step(action)
        row = self._counts[SLOT]
        row[0] += 1
        row[1] += int(terminated or truncated)
        return observation, reward, terminated, truncated, info


class NoopEnv(gymnasium.Env):
    """An environment whose step costs next to nothing (never ends)."""

    observation_space = gymnasium.spaces.Discrete(2)
    action_space = gymnasium.spaces.Discrete(2)
    _result = (0, 0.0, False, False, {})

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: Any) -> Any:
        return self._result


def cpu_seconds_per_step(env: gymnasium.Env, actions: list[int]) -> float:
    step, reset = env.step, env.reset
    started = time.thread_time()
    for action in actions:
        _, _, terminated, truncated, _ = step(action)
        if terminated or truncated:
            reset()
    return (time.thread_time() - started) / len(actions)


def compare(make: Callable[[], gymnasium.Env], counter_path: str, steps: int, repeats: int) -> dict[str, list[float]]:
    envs = {
        "raw": make(),
        "memmap (before)": MemmapCountingWrapper(make(), counter_path),
        "counting": CountingWrapper(make(), counter_path, SLOT),
    }
    actions = [(index // 3) % 2 for index in range(steps)]
    for env in envs.values():
        env.reset(seed=0)
        cpu_seconds_per_step(env, actions[:1000])  # warm up: attach the counter, fill caches
    times: dict[str, list[float]] = {name: [] for name in envs}
    order = list(envs)
    for _ in range(repeats):
        random.shuffle(order)
        for name in order:
            times[name].append(cpu_seconds_per_step(envs[name], actions) * 1e6)
    return times


def print_table(title: str, times: dict[str, list[float]]) -> float:
    print(f"# {title}")
    raw = times["raw"]
    added = 0.0
    for name, values in times.items():
        line = f"{name:16s} {statistics.median(values):7.3f} us/step"
        if name != "raw":
            added = statistics.median(value - base for value, base in zip(values, raw, strict=True))
            line += f"   added {added:6.3f} us/step"
        print(line)
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    random.seed(0)
    with tempfile.TemporaryDirectory() as scratch:
        counter = StepCounter(Path(scratch) / "steps.bin", create=True)
        print(f"# gymnasium {gymnasium.__version__}, numpy {np.__version__}; {args.repeats} alternating repeats "
              f"of {args.steps} steps; stepping thread's CPU time; medians")
        cartpole = compare(lambda: gymnasium.make("CartPole-v1"), str(counter.path), args.steps, args.repeats)
        added = print_table("CartPole-v1", cartpole)
        noop = compare(NoopEnv, str(counter.path), args.steps, args.repeats)
        print_table("no-op env (the wrapper's own cost)", noop)
        # both counting wrappers wrote to SLOT: 2 wrappers x 2 tables x (warm-up + repeats x steps)
        expected = 4 * (1000 + args.repeats * args.steps)
        if counter.totals()[0] != expected:
            raise SystemExit(f"counted {counter.totals()[0]} steps, expected {expected}")
    print(f"us_per_step {added:.3f}")


if __name__ == "__main__":
    main()
