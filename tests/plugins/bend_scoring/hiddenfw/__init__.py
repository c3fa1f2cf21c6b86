"""hiddenfw (tests only): a tiny UNPUBLISHED RL framework, hill climbing on a linear policy in numpy.

It stands for a framework with no public repository: its licence, release, algorithms and
taxonomy are unknown to the registry (``bendscoring_rlcompare``); ``openfw`` is the same code, public.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

EPISODE_LIMIT = 500


def act(weights: np.ndarray, observations: Any) -> np.ndarray:
    """Greedy discrete actions of a linear policy for a batch of observations."""
    return np.argmax(np.atleast_2d(observations) @ weights, axis=1)


def hill_climb(env: Any, rng: np.random.Generator, stop: Callable[[], bool],
               report: Callable[[Callable[[Any], np.ndarray], int], None], noise: float = 0.5) -> np.ndarray:
    """Perturb the best weights, keep a perturbation whose episode scores at least as well; after
    every episode, ``report(policy, env_steps)``; return when ``stop()`` says so."""
    best = np.zeros((env.observation_space.shape[0], env.action_space.n))
    best_return, steps = -np.inf, 0
    while not stop():
        candidate = best + noise * rng.normal(size=best.shape)
        observation, _ = env.reset(seed=int(rng.integers(1 << 30)))
        total = 0.0
        for _ in range(EPISODE_LIMIT):
            observation, reward, terminated, truncated, _ = env.step(int(act(candidate, observation)[0]))
            steps += 1
            total += float(reward)
            if terminated or truncated or stop():
                break
        if total >= best_return:
            best, best_return = candidate, total
        report(lambda observations, weights=best: act(weights, observations), steps)
    return best


def random_actions(env: Any, rng: np.random.Generator, stop: Callable[[], bool],
                   report: Callable[[Callable[[Any], np.ndarray], int], None]) -> None:
    """Act at random (it never learns) until ``stop()``, reporting after every step."""
    space = env.action_space
    space.seed(int(rng.integers(1 << 30)))

    def policy(observations: Any) -> np.ndarray:
        return np.array([space.sample() for _ in range(len(np.atleast_2d(observations)))])

    env.reset(seed=int(rng.integers(1 << 30)))
    steps = 0
    while not stop():
        _, _, terminated, truncated, _ = env.step(space.sample())
        steps += 1
        if terminated or truncated:
            env.reset(seed=int(rng.integers(1 << 30)))
        report(policy, steps)
