"""A third-party plugin used by the tests: ``paced`` acts at random and sleeps after every step, so a
run lasts a known wall time while its CPU stays nearly idle (for tests that must act while runs are
in flight, such as losing a cluster node, on a machine with few, busy CPUs).

It is no evidence that any framework works.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult

#: Seconds each environment step sleeps (the environment variable overrides it).
STEP_SECONDS_ENV = "PACEDFW_STEP_SECONDS"
STEP_SECONDS = 0.01


class PacedAdapter(Adapter):
    id = "paced"
    framework = "pacedfw"
    summary = "random actions at a fixed pace of steps per second (tests only)"
    distributions = ("numpy",)

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO", "A2C", "DQN", "SAC"}), rollout_workers=False)

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        return [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.APPROXIMATE, note="random actions")
                for name, value in workload.hyperparameters.model_dump().items()]

    def train(self, workload: Any, context: Any) -> TrainingResult:
        pause = float(os.environ.get(STEP_SECONDS_ENV, STEP_SECONDS))
        env = context.env_factory(0)()
        rng = np.random.default_rng(context.seed)
        space = env.action_space

        def policy(observations: np.ndarray) -> np.ndarray:
            return np.array([space.sample() for _ in range(len(observations))])

        space.seed(context.seed)
        env.reset(seed=context.seed)
        context.start_training()
        steps = 0
        while not context.budget_reached:
            _, _, terminated, truncated, _ = env.step(space.sample())
            steps += 1
            if terminated or truncated:
                env.reset(seed=int(rng.integers(1 << 30)))
            context.checkpoint(policy, steps)
            time.sleep(pause)
        env.close()
        return TrainingResult(policy=policy, framework_env_steps=steps, native_config={"random": True})


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    register.add_adapter(PacedAdapter)
