"""The harness's environment factory: every environment a framework trains on comes from here,
wrapped so that rlcompare counts env steps and episodes itself rather than trusting a framework.

Counts live in a small memory-mapped file with one row per environment slot, so environments
stepped in other processes (subprocess vector envs, rollout workers on this host) are counted
without locks: each slot has exactly one writer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from rlcompare.limits import COUNTER_SLOTS

#: Slots in a counter file; an adapter gives each environment instance its own slot index.
DEFAULT_SLOTS = COUNTER_SLOTS


class StepCounter:
    """Per-slot ``(env steps, episodes)`` counts in a shared memory-mapped file."""

    def __init__(self, path: str | Path, slots: int = DEFAULT_SLOTS, create: bool = False) -> None:
        self.path = Path(path)
        mode = "w+" if create else "r+"
        self._counts = np.memmap(self.path, dtype=np.int64, mode=mode, shape=(slots, 2))

    @property
    def slots(self) -> int:
        return int(self._counts.shape[0])

    def add(self, slot: int, steps: int, episodes: int) -> None:
        row = self._counts[slot]
        row[0] += steps
        row[1] += episodes

    def totals(self) -> tuple[int, int]:
        steps, episodes = self._counts.sum(axis=0)
        return int(steps), int(episodes)


class CountingWrapper(gymnasium.Wrapper):
    """Counts every ``step`` (and every finished episode) into its slot of a :class:`StepCounter`."""

    def __init__(self, env: gymnasium.Env, counter_path: str | Path, slot: int) -> None:
        super().__init__(env)
        self._counter_path = str(counter_path)
        self._slot = slot
        self._counter: StepCounter | None = None

    def step(self, action: Any) -> Any:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if self._counter is None:  # attached lazily: the wrapper may be built in another process
            self._counter = StepCounter(self._counter_path)
        self._counter.add(self._slot, 1, int(terminated or truncated))
        return observation, reward, terminated, truncated, info


@dataclass(frozen=True)
class EnvFactory:
    """A picklable zero-argument callable returning a counted environment (for any framework)."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    counter_path: str | None = None
    slot: int = 0

    def __call__(self, *_: Any, **__: Any) -> gymnasium.Env:
        env = make_env(self.env_id, self.env_kwargs)
        if self.counter_path is None:
            return env
        return CountingWrapper(env, self.counter_path, self.slot)


def make_env(env_id: str, env_kwargs: dict[str, Any] | None = None) -> gymnasium.Env:
    """``gymnasium.make`` with rlcompare's own environments registered first."""
    register_builtin_envs()
    return gymnasium.make(env_id, **(env_kwargs or {}))


def action_space_kind(env_id: str, env_kwargs: dict[str, Any] | None = None) -> str:
    """``'discrete'``, ``'continuous'`` (a Box) or the space's class name."""
    env = make_env(env_id, env_kwargs)
    try:
        space = env.action_space
    finally:
        env.close()
    if isinstance(space, gymnasium.spaces.Discrete):
        return "discrete"
    if isinstance(space, gymnasium.spaces.Box):
        return "continuous"
    return type(space).__name__.lower()


CALIBRATED_ENV_ID = "rlcompare/CalibratedCartPole-v0"


class CalibratedCartPole(CartPoleEnv):
    """CartPole whose every step also costs ``step_cost_ms`` of busy CPU time.

    CartPole's own step is cheaper than one inter-process message, so on it more rollout workers
    only look slower. With a known CPU cost per step, the ideal throughput of ``k`` workers is
    ``k / step_cost`` and a framework's scaling can be judged against it.
    """

    def __init__(self, step_cost_ms: float = 1.0, **kwargs: Any) -> None:
        if isinstance(step_cost_ms, bool) or not isinstance(step_cost_ms, (int, float)) or not (
                0 < step_cost_ms <= 1000):
            raise ValueError(f"step_cost_ms must be a number of milliseconds in (0, 1000], got {step_cost_ms!r}")
        super().__init__(**kwargs)
        self.step_cost_seconds = step_cost_ms / 1000.0

    def step(self, action: Any) -> Any:
        import time

        # Busy-wait on this thread's CPU clock, not the wall clock: the cost is CPU work, the same
        # however loaded the machine is, so the ideal throughput stays known.
        deadline = time.thread_time() + self.step_cost_seconds
        while time.thread_time() < deadline:
            pass
        return super().step(action)


def ideal_throughput(step_cost_ms: float, workers: int) -> float:
    """Env steps per second that ``workers`` processes could reach if stepping were all they did."""
    return workers * 1000.0 / step_cost_ms


def register_builtin_envs() -> None:
    """Register rlcompare's own environments (ids under ``rlcompare/``) once per process."""
    if CALIBRATED_ENV_ID not in gymnasium.envs.registry:
        gymnasium.register(
            id=CALIBRATED_ENV_ID,
            entry_point="rlcompare.envs:CalibratedCartPole",
            max_episode_steps=500,
            reward_threshold=475.0,
        )
