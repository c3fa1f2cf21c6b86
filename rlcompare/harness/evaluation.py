"""The harness's evaluation: every adapter's policy is judged on the same environments, seeds and
protocol, with the time spent here excluded from training time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlcompare.harness.counted_envs import make_env

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
        self.envs = [make_env(env_id, env_kwargs) for _ in seeds]

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
