"""Adapters that try to game the scoring matrix (tests only): an outside plugin, installed through
its entry point, whose adapters cheat in the ways a scoring matrix must not reward.

``idle`` never steps an environment; ``overshoot`` acts at random for twice its budget;
``unfaithful`` claims PPO while marking every setting unsupported; ``crash`` always fails;
``inflated`` reports ten times the steps the harness counted. None of them learns anything.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult

PPO = frozenset({"PPO"})


def _random_policy(space: Any) -> Any:
    def policy(observations: np.ndarray) -> np.ndarray:
        return np.array([space.sample() for _ in range(len(observations))])

    return policy


class _Cheat(Adapter):
    framework = "cheatfw"
    distributions = ("numpy",)
    import_name = "numpy"
    #: How many env steps to take, as a multiple of the budget.
    budget_factor = 1.0
    #: Multiplier on the step count reported as the framework's own.
    report_factor = 1.0

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=PPO)

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        return [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.EXACT, name, value)
                for name, value in workload.hyperparameters.model_dump().items()]

    def train(self, workload: Any, context: Any) -> TrainingResult:
        env = context.env_factory(0)()
        space = env.action_space
        space.seed(context.seed)
        env.reset(seed=context.seed)
        policy = _random_policy(space)
        context.start_training()
        steps, target = 0, int(workload.env_steps * self.budget_factor)
        while steps < target:
            _, _, terminated, truncated, _ = env.step(space.sample())
            steps += 1
            if terminated or truncated:
                env.reset()
            context.checkpoint(policy, int(steps * self.report_factor))
        env.close()
        return TrainingResult(policy=policy, framework_env_steps=int(steps * self.report_factor))


class IdleAdapter(_Cheat):
    id = "idle"
    summary = "never steps an environment, reports the budget as done"
    budget_factor = 0.0

    def train(self, workload: Any, context: Any) -> TrainingResult:
        env = context.env_factory(0)()
        context.start_training()
        return TrainingResult(policy=_random_policy(env.action_space), framework_env_steps=workload.env_steps)


class OvershootAdapter(_Cheat):
    id = "overshoot"
    summary = "acts at random for twice its budget"
    budget_factor = 2.0


class UnfaithfulAdapter(_Cheat):
    id = "unfaithful"
    summary = "claims PPO but marks every setting unsupported"

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        return [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.UNSUPPORTED)
                for name, value in workload.hyperparameters.model_dump().items()]


class CrashAdapter(_Cheat):
    id = "crash"
    summary = "fails every run"

    def train(self, workload: Any, context: Any) -> TrainingResult:
        context.start_training()
        raise RuntimeError("crash adapter fails on purpose")


class InflatedAdapter(_Cheat):
    id = "inflated"
    summary = "reports ten times the env steps it took"
    report_factor = 10.0


CHEATS = (IdleAdapter, OvershootAdapter, UnfaithfulAdapter, CrashAdapter, InflatedAdapter)


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    for adapter in CHEATS:
        register.add_adapter(adapter)
