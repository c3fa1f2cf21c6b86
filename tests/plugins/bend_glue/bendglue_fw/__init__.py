"""The "framework" of the bendglue adapter (tests only): an agent that acts at random in lockstep
rollouts over its environments. It learns nothing and claims nothing about learning.

A folder of the same name in the current directory must never shadow it in a run's worker or a
parity probe's process: ``WHERE`` says which copy was imported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Which copy of the framework was imported.
WHERE = "installed"
PATH = str(Path(__file__).resolve())


class RandomAgent:
    """Random actions over ``envs``; ``learn`` steps them rollout by rollout until ``should_stop``."""

    def __init__(self, envs: list[Any], seed: int) -> None:
        self.envs = envs
        self.space = envs[0].action_space
        self.space.seed(seed)
        for slot, env in enumerate(envs):
            env.reset(seed=seed * 1000 + slot)
        self.num_timesteps = 0

    def predict(self, observations: Any) -> Any:
        import numpy as np

        return np.array([self.space.sample() for _ in range(len(observations))])

    def learn(self, rollout_steps: int, should_stop: Callable[[], bool], after_rollout: Callable[[int], None]) -> None:
        while not should_stop():
            for _ in range(rollout_steps):
                for env in self.envs:
                    _, _, terminated, truncated, _ = env.step(self.space.sample())
                    if terminated or truncated:
                        env.reset()
                self.num_timesteps += len(self.envs)
            after_rollout(self.num_timesteps)
