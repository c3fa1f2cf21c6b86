"""The harness's evaluation: every adapter's policy is judged on the same environments, seeds and
protocol, with the time spent here excluded from training time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlcompare.harness.counted_envs import make_env
from rlcompare.harness.language import evaluation_env_kwargs

#: A policy maps a batch of observations to a batch of actions (numpy in, numpy out).
Policy = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class EvaluationResult:
    returns: list[float]
    lengths: list[int]

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        return float(np.std(self.returns))


class Evaluator:
    """Runs ``episodes`` evaluation episodes side by side, one batched policy call per step.

    Each episode has its own plain environment, reset once with its own seed and stepped until it
    ends, never a gymnasium vector env: vector autoreset changed in gymnasium 1.0 (an ended sub-env
    is reset by the next ``step`` instead of inside the same one), and the ruler must not change
    with the gymnasium a framework pins.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], seeds: list[int]) -> None:
        self.seeds = seeds
        # a language task is evaluated on its held-out problems
        kwargs = evaluation_env_kwargs(env_id, env_kwargs)
        self.envs = [make_env(env_id, kwargs) for _ in seeds]

    def evaluate(self, policy: Policy) -> EvaluationResult:
        observations = [env.reset(seed=seed)[0] for env, seed in zip(self.envs, self.seeds, strict=True)]
        returns = np.zeros(len(self.envs))
        lengths = np.zeros(len(self.envs), dtype=np.int64)
        active = list(range(len(self.envs)))
        while active:
            actions = policy(np.stack([observations[i] for i in active]))
            still_active = []
            for i, action in zip(active, actions, strict=True):
                observation, reward, terminated, truncated, _ = self.envs[i].step(action)
                returns[i] += float(reward)
                lengths[i] += 1
                observations[i] = observation
                if not (terminated or truncated):
                    still_active.append(i)
            active = still_active
        return EvaluationResult(returns=returns.tolist(), lengths=lengths.tolist())

    def close(self) -> None:
        for env in self.envs:
            env.close()


class EvaluationGrid:
    """The common evaluation grid: every multiple of ``interval`` env steps (0 too when ``at_start``),
    each evaluated once, by one rule for every adapter.

    A grid point is evaluated at the first *update boundary* at or after it: at the first checkpoint
    after an update that was traced (``context.trace("update")``) at or after the point's env steps.
    So an adapter that calls ``checkpoint`` after every env step (SB3) and one that calls it after
    every update are evaluated after the same updates. An update's position is the harness's count
    when it was traced (with rollout workers in other processes a few steps of the next rollout may
    be counted already: an update that ended just before a point can then count as at it). Until a
    run has traced an update (an adapter that traces none, or an off-policy run before learning
    starts) a due point is evaluated at the first checkpoint at or after it instead: there is no
    update boundary to wait for. An evaluation that comes late for several grid points (one update
    covers more than an interval) stands for the last of them. The final evaluation, when training has ended, is the last update boundary: it
    stands for a grid point that is due by then, else for none (off the grid).
    """

    def __init__(self, interval: int, at_start: bool) -> None:
        if interval < 1:
            raise ValueError(f"evaluation interval must be a positive number of env steps, got {interval}")
        self.interval = interval
        #: The next grid point not evaluated yet.
        self.next_point = 0 if at_start else interval

    def due(self, env_steps: int, updates: int, last_update_at: int | None) -> int | None:
        """The grid point an evaluation made now stands for (``env_steps`` counted, ``updates`` traced
        so far, the last at ``last_update_at``), or None when none is due yet."""
        if env_steps < self.next_point:
            return None
        if updates == 0 or last_update_at is None:
            return self._last_point_at(env_steps)
        if last_update_at < self.next_point:
            return None  # the update boundary at or after the point has not come yet
        return self._last_point_at(last_update_at)

    def final(self, env_steps: int) -> int | None:
        """The grid point the final evaluation (training has ended) stands for, or None (off the grid)."""
        return None if env_steps < self.next_point else self._last_point_at(env_steps)

    def taken(self, grid_point: int) -> None:
        """Record that ``grid_point`` was evaluated: the next due point is the one after it."""
        self.next_point = max(self.next_point, grid_point + self.interval)

    def _last_point_at(self, env_steps: int) -> int:
        return max(self.next_point, (env_steps // self.interval) * self.interval)
