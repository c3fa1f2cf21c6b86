"""The harness's environment factory: every environment a framework trains on comes from here,
wrapped so that rlcompare counts env steps and episodes itself rather than trusting a framework.

Counts live in a small memory-mapped file with one row per environment slot, so environments
stepped in other processes (subprocess vector envs, rollout workers, Ray actors on this host) are
counted without locks: each slot has exactly one writer. The file is mapped shared, so every
increment is in the file as soon as it is made: a reader in another process sees it at once, and a
writer that is killed leaves its counts behind.

Standard library, numpy and gymnasium only (0.26 to 1.x): a run's worker may live in an
environment built for one framework.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from rlcompare.harness.calibration import CALIBRATED_ENV_ID
from rlcompare.harness.language import register_language_envs
from rlcompare.harness.limits import COUNTER_SLOTS

#: Slots in a counter file; an adapter gives each environment instance its own slot index.
DEFAULT_SLOTS = COUNTER_SLOTS

#: Bytes per slot: two native int64 counts, env steps then episodes (a ``(slots, 2)`` int64 array).
SLOT_BYTES = 16


def _map_counter_file(path: Path, slots: int, create: bool) -> mmap.mmap:
    """Map the counter file shared and writable; ``create`` makes (or empties) it first."""
    fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
    try:
        if create:
            os.ftruncate(fd, 0)  # a reused path starts from zero counts
            os.ftruncate(fd, slots * SLOT_BYTES)
        size = os.fstat(fd).st_size
        if size == 0 or size % SLOT_BYTES:
            raise ValueError(f"counter file {path}: {size} bytes is not a whole number of {SLOT_BYTES}-byte slots")
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)  # the mapping keeps the file open


def attach_counts(path: str | Path) -> memoryview:
    """The counter file at ``path`` as a flat int64 view: ``[2 * slot]`` steps, ``[2 * slot + 1]`` episodes.

    Indexing a ``memoryview`` costs a fraction of a numpy scalar update, which is why the
    per-step path uses it; the view keeps the mapping alive for as long as it is referenced.
    """
    return memoryview(_map_counter_file(Path(path), 0, create=False)).cast("q")


class StepCounter:
    """Per-slot ``(env steps, episodes)`` counts in a shared memory-mapped file."""

    def __init__(self, path: str | Path, slots: int = DEFAULT_SLOTS, create: bool = False) -> None:
        self.path = Path(path)
        self._map = _map_counter_file(self.path, slots, create)
        self._counts = memoryview(self._map).cast("q")
        table = np.frombuffer(self._map, dtype=np.int64).reshape(-1, 2)
        self._steps = table[:, 0]
        self._episodes = table[:, 1]

    @property
    def slots(self) -> int:
        return len(self._counts) // 2

    def add(self, slot: int, steps: int, episodes: int) -> None:
        if not 0 <= slot < len(self._counts) // 2:
            raise IndexError(f"counter slot {slot} outside 0..{len(self._counts) // 2 - 1}")
        self._counts[2 * slot] += steps
        self._counts[2 * slot + 1] += episodes

    def steps(self) -> int:
        """Env steps over every slot (the cheap half of :meth:`totals`)."""
        return int(self._steps.sum())

    def totals(self) -> tuple[int, int]:
        return int(self._steps.sum()), int(self._episodes.sum())

    def flush(self) -> None:
        """Write the counts through to disk (every process's counts are already in the file)."""
        self._map.flush()

    def close(self) -> None:
        self._steps = self._episodes = np.zeros(0, dtype=np.int64)
        self._counts.release()
        try:
            self._map.close()
        except BufferError:  # someone still holds a view; the mapping closes when it is dropped
            pass


class CountingWrapper(gymnasium.Wrapper):
    """Counts every ``step`` (and every finished episode) into its slot of a :class:`StepCounter`.

    The counter file is attached on the first step, in the process that steps: a wrapper may be
    built in one process and stepped in another (pickled, or forked by a vector env).
    """

    def __init__(self, env: gymnasium.Env, counter_path: str | Path, slot: int) -> None:
        super().__init__(env)
        self._counter_path = str(counter_path)
        self._slot = slot
        self._index = 2 * slot
        self._counts: memoryview | None = None

    def step(self, action: Any) -> Any:
        # The hot path: one tuple, two attribute reads and one memoryview increment per step.
        result = self.env.step(action)
        counts = self._counts
        if counts is None:
            counts = self._attach()
        index = self._index
        counts[index] += 1
        if result[2] or result[3]:
            counts[index + 1] += 1
        return result

    def _attach(self) -> memoryview:
        counts = attach_counts(self._counter_path)
        if self._index + 1 >= len(counts):
            raise IndexError(f"env slot {self._slot} outside the {len(counts) // 2} slots of {self._counter_path}")
        self._counts = counts
        return counts

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_counts"] = None  # a mapping does not travel; the receiving process attaches its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


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


def register_builtin_envs() -> None:
    """Register rlcompare's own environments (ids under ``rlcompare/``) once per process."""
    register_language_envs()
    if CALIBRATED_ENV_ID not in gymnasium.envs.registry:
        gymnasium.register(
            id=CALIBRATED_ENV_ID,
            entry_point="rlcompare.harness.counted_envs:CalibratedCartPole",
            max_episode_steps=500,
            reward_threshold=475.0,
        )


def episode_step_limit(env_id: str, env_kwargs: dict[str, Any]) -> int | None:
    """The environment's episode step limit (``max_episode_steps``), or None when it has none."""
    override = env_kwargs.get("max_episode_steps")
    if isinstance(override, int) and not isinstance(override, bool) and override > 0:
        return override
    try:
        register_builtin_envs()
        limit = gymnasium.spec(env_id).max_episode_steps
    except Exception:  # noqa: BLE001 - an unknown environment is refused elsewhere, with its name
        return None
    return int(limit) if limit else None
