"""A third-party adapter used by the tests of adapter environments: numpy only, and pinned to a
numpy and a gymnasium that the main environment does not have, so the driver must run it in an
environment of its own (``tinyfit``: the same without pins). It "trains" a linear CartPole policy by random search (no framework).

Inside its environment only numpy, gymnasium, this module and rlcompare's light modules are
importable; ``native_config`` reports what the worker saw, so the tests can check it from the store.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import numpy as np

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult

#: Pins the main environment (gymnasium 1.x, numpy 2.x) does not satisfy.
REQUIREMENTS = ("numpy<2", "gymnasium==0.29.1")


class TinyEnvAdapter(Adapter):
    id = "tinyenv"
    framework = "tinyenv"
    summary = "random search over a linear policy, numpy only, in its own environment (tests only)"
    distributions = ("numpy", "gymnasium")
    environment_requires = REQUIREMENTS

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO", "A2C", "DQN", "SAC"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        return [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.APPROXIMATE, note="random search")
                for name, value in workload.hyperparameters.model_dump().items()]

    def train(self, workload: Any, context: Any) -> TrainingResult:
        env = context.env_factory(0)()
        rng = np.random.default_rng(context.seed)
        size = env.observation_space.shape[0]
        best, best_return = np.zeros(size), -np.inf

        def act(weights: np.ndarray, observations: np.ndarray) -> np.ndarray:
            return (np.asarray(observations) @ weights > 0).astype(np.int64)

        def policy(observations: np.ndarray) -> np.ndarray:
            return act(best, observations)

        context.start_training()
        steps = 0
        while not context.budget_reached:
            candidate = best + rng.normal(scale=0.5, size=size)
            observation, _ = env.reset(seed=int(rng.integers(1 << 30)))
            total, done = 0.0, False
            while not done and not context.budget_reached:
                observation, reward, terminated, truncated, _ = env.step(int(act(candidate, observation[None])[0]))
                total += float(reward)
                steps += 1
                done = terminated or truncated
                context.checkpoint(policy, steps)
            if total > best_return:
                best, best_return = candidate, total
        env.close()
        seen = {name: importlib.util.find_spec(name) is not None for name in ("pydantic", "pluggy", "torch")}
        return TrainingResult(policy=policy, framework_env_steps=steps, native_config={
            "python": sys.executable, "importable": seen, "numpy": np.__version__,
            "loaded": sorted(name for name in ("pydantic", "pluggy", "torch", "pandas") if name in sys.modules),
        })


class TinyFitAdapter(TinyEnvAdapter):
    """The same, without pins: it fits the main environment, and gets its own only with --isolate
    (benchmarks/isolated_startup.py compares the two)."""

    id = "tinyfit"
    environment_requires = ("numpy", "gymnasium")


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    register.add_adapter(TinyEnvAdapter)
    register.add_adapter(TinyFitAdapter)
