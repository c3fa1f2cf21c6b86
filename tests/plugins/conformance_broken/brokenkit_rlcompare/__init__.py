"""Adapters that each break one rule of the adapter contract (tests of the conformance kit only).

:class:`Stepper` keeps every rule: it acts at random (it learns nothing and claims nothing about
learning: it exists to exercise the kit) in lockstep rollouts over every env, checkpointing after
each. Each subclass breaks exactly one rule; ``heavy`` (in :mod:`brokenkit_rlcompare.heavy`)
breaks the light-import rule and ``notrain`` (:mod:`brokenkit_rlcompare.notrain`) is refused at
registration, each in a plugin module of its own.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
from typing import Any

import numpy as np

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult

STRUCTURAL = ("network.hidden_sizes", "network.activation", "parallelism.envs_per_worker", "parallelism.workers")


class Stepper(Adapter):
    id = "stepper"
    framework = "brokenkit"
    summary = "random actions in lockstep rollouts; keeps every rule (tests only)"
    import_name = "brokenkit_fw"
    distributions = ("numpy",)
    #: Env steps taken, as a multiple of the budget.
    budget_factor = 1.0

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"A2C"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        values = {f"hyperparameters.{name}": value for name, value in workload.hyperparameters.model_dump().items()}
        values.update({name: None for name in STRUCTURAL})
        return [FidelityEntry(name, value, Fidelity.APPROXIMATE, "random", note="acts at random (tests only)")
                for name, value in values.items()]

    def act(self, space: Any, observations: np.ndarray) -> np.ndarray:
        return np.array([space.sample() for _ in range(len(observations))])

    def train(self, workload: Any, context: Any) -> TrainingResult:
        envs = [context.env_factory(slot)() for slot in range(workload.parallelism.total_envs)]
        space = envs[0].action_space
        space.seed(context.seed)
        for slot, env in enumerate(envs):
            env.reset(seed=context.seed * 1000 + slot)

        def policy(observations: np.ndarray) -> np.ndarray:
            return self.act(space, observations)

        context.start_training()
        steps, target = 0, int(workload.env_steps * self.budget_factor)
        while steps < target:
            for _ in range(workload.hyperparameters.rollout_steps):
                for env in envs:
                    _, _, terminated, truncated, _ = env.step(space.sample())
                    if terminated or truncated:
                        env.reset()
                steps += len(envs)
            self.after_rollout(context, policy, steps)
        for env in envs:
            env.close()
        return TrainingResult(policy=policy, framework_env_steps=steps)

    def after_rollout(self, context: Any, policy: Any, steps: int) -> None:
        context.checkpoint(policy, steps)


class UnregisteredFramework(Stepper):
    id = "nofw"
    framework = "brokenkit-unlisted"
    summary = "names a framework with no registry entry"


class EagerDeclarations(Stepper):
    id = "eagerdecl"
    summary = "imports its framework in fidelity()"

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        import brokenkit_fw  # noqa: F401 - the breach under test

        return super().fidelity(workload)


class PartialFidelity(Stepper):
    id = "partialfidelity"
    summary = "leaves gae_lambda and rollout_steps out of its fidelity report"

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        return [entry for entry in super().fidelity(workload)
                if entry.setting not in ("hyperparameters.gae_lambda", "hyperparameters.rollout_steps")]


class Overshoot(Stepper):
    id = "overshoot"
    summary = "trains for twice its budget"
    budget_factor = 2.0


class NoCheckpoints(Stepper):
    id = "nocheckpoints"
    summary = "never calls context.checkpoint"

    def after_rollout(self, context: Any, policy: Any, steps: int) -> None:
        pass


class SqueezedActions(Stepper):
    id = "squeezed"
    summary = "squeezes its actions, so a batch of one gets a 0-d array"

    def act(self, space: Any, observations: np.ndarray) -> np.ndarray:
        return super().act(space, observations).squeeze()


class LeakyProcesses(Stepper):
    id = "leaky"
    summary = "starts a helper process and leaves it running"

    def train(self, workload: Any, context: Any) -> TrainingResult:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # never stopped: the breach
        return super().train(workload, context)


class SkewedUpdate(Stepper):
    id = "skewedupdate"
    summary = "answers the A2C parity probe with an update whose value loss weighs three times its value_coef"

    def parity_update(self, probe: Any) -> Any:
        import dataclasses

        from rlcompare.parity.a2c import A2CReference

        hyperparameters = {**probe.hyperparameters, "value_coef": 3 * probe.hyperparameters["value_coef"]}
        return A2CReference().expected(dataclasses.replace(probe, hyperparameters=hyperparameters))


class PaddedFidelity(Stepper):
    id = "paddedfidelity"
    summary = "pads its fidelity report with exact entries no rule asks for"

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        return [*super().fidelity(workload),
                FidelityEntry("padding.made_up", 1, Fidelity.EXACT, "made_up"),
                FidelityEntry("algorithm", "A2C", Fidelity.EXACT, "A2C")]


class CoarseGrain(Stepper):
    id = "coarsegrain"
    summary = "declares a generation budget grain for A2C"

    def budget_tolerance(self, workload: Any) -> Any:
        from rlcompare.adapter import BudgetTolerance

        return BudgetTolerance("generation", 1_000, 1_000)


class LoneProgram(Stepper):
    id = "loneprogram"
    summary = "declares seeds in one program, trains one seed per process"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"A2C"}), action_spaces=frozenset({"discrete"}),
                            seeds_in_one_program=True)


ADAPTERS = (LoneProgram, Stepper, UnregisteredFramework, EagerDeclarations, PartialFidelity, Overshoot, NoCheckpoints,
            SqueezedActions, LeakyProcesses, SkewedUpdate, PaddedFidelity, CoarseGrain)



@hookimpl
def rlcompare_register_frameworks(register: Any) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry("brokenkit", "brokenkit", "control", source="brokenkit_rlcompare",
                                             where="A test fixture of rlcompare; never published.",
                                             as_of=datetime.date(2026, 12, 1)))


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    for adapter in ADAPTERS:
        register.add_adapter(adapter)
