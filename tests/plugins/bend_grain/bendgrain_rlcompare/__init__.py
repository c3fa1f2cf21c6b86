"""PPO adapters that declare their own budget grain (tests only): the family sets the grain.

``coarse-ppo`` declares a generation grain (one generation of 8 pairs of 500-step episodes: the
window a PPO run would be held to on a 20,000-step budget becomes 12,000..28,000), ``wide-ppo`` a
rollout grain ten rollouts wide, ``fine-ppo`` a finer one than PPO gives (step by step, half a
rollout). Each maps every canonical setting exactly and trains nothing useful (random actions in
lockstep rollouts over every env, stopping at the budget); only the plan's refusal is under test.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
    BudgetTolerance,
    Capabilities,
    Fidelity,
    FidelityEntry,
    TrainingResult,
    WorkloadLike,
    entry,
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register


class GrainAdapter(Adapter):
    """Every canonical PPO setting exact; random actions; the family's budget grain."""

    id = "family-ppo"
    framework = "bendgrain"
    summary = "keeps the family's grain (tests only)"
    import_name = "numpy"
    distributions = ("numpy",)
    #: Check the budget after every vector step (a finer grain than a rollout), not after each rollout.
    check_every_step = False

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        entries = [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.EXACT, f"Config.{name}", value)
                   for name, value in workload.hyperparameters.model_dump().items()]
        net, par = workload.network, workload.parallelism
        return entries + [
            entry("network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "Config.hidden", list(net.hidden_sizes)),
            entry("network.activation", net.activation, Fidelity.EXACT, "Config.act", net.activation),
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "Config.envs", par.envs_per_worker),
            entry("parallelism.workers", par.workers, Fidelity.EXACT, "Config.workers", par.workers),
        ]

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        import numpy as np

        envs = [context.env_factory(slot)() for slot in range(workload.parallelism.total_envs)]
        space = envs[0].action_space
        space.seed(context.seed)
        for slot, env in enumerate(envs):
            env.reset(seed=context.seed * 1000 + slot)

        def policy(observations: Any) -> Any:
            return np.array([space.sample() for _ in range(len(observations))])

        context.start_training()
        context.checkpoint(policy, 0)
        steps = 0
        while not context.budget_reached:
            for _ in range(workload.hyperparameters.rollout_steps):
                if self.check_every_step and context.budget_reached:
                    break
                for env in envs:
                    _, _, terminated, truncated, _ = env.step(space.sample())
                    if terminated or truncated:
                        env.reset()
                steps += len(envs)
            context.checkpoint(policy, steps)
        for env in envs:
            env.close()
        return TrainingResult(policy=policy, framework_env_steps=steps)


class CoarsePPO(GrainAdapter):
    id = "coarse-ppo"
    summary = "claims PPO, declares a generation grain (tests only)"

    def budget_tolerance(self, workload: WorkloadLike) -> BudgetTolerance:
        generation = 2 * 8 * 500  # one generation of whole episodes
        return BudgetTolerance("generation", generation, generation)


class WidePPO(GrainAdapter):
    id = "wide-ppo"
    summary = "declares PPO's granularity, ten rollouts wide (tests only)"

    def budget_tolerance(self, workload: WorkloadLike) -> BudgetTolerance:
        steps = 10 * workload.rollout_env_steps
        return BudgetTolerance("rollout", steps, steps)


class FinePPO(GrainAdapter):
    id = "fine-ppo"
    summary = "declares a finer grain than PPO's: step by step, half a rollout (tests only)"
    check_every_step = True

    def budget_tolerance(self, workload: WorkloadLike) -> BudgetTolerance:
        steps = workload.rollout_env_steps // 2
        return BudgetTolerance("step", steps, steps)


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "bendgrain", "bendgrain", "control", where="A test package; never published.",
        notes="PPO adapters that declare their own budget grain (tests only).",
        as_of=datetime.date(2026, 12, 1), source="bendgrain_rlcompare",
    ))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    for adapter in (GrainAdapter, CoarsePPO, WidePPO, FinePPO):
        register.add_adapter(adapter)
