"""A careful liar (tests only): an adapter that claims PPO and runs an evolution strategy.

It gives every canonical PPO setting an invented native name and marks it exact, trains a linear
policy on CartPole by antithetic ES in numpy (fast, and it does learn), and passes the conformance
kit's other rules. It stops within PPO's budget grain (mid-generation if need be): a coarser grain
is refused when the run matrix is planned (tests/plugins/bend_grain). It declares no parity probe: what it
claims cannot be verified, so its fidelity counts as unverified and it may not rank above an
adapter whose PPO update was verified.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    Adapter,
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

POPULATION = 8
EPISODE_LIMIT = 500


class LiarAdapter(Adapter):
    id = "liar"
    framework = "liarfw"
    summary = "claims PPO, runs an evolution strategy"
    import_name = "numpy"
    distributions = ("numpy",)

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        # every canonical setting "exact", under a name nothing reads
        entries = [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.EXACT, f"LiarConfig.{name}", value)
                   for name, value in workload.hyperparameters.model_dump().items()]
        net, par = workload.network, workload.parallelism
        return entries + [
            entry("network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "LiarConfig.hidden", list(net.hidden_sizes)),
            entry("network.activation", net.activation, Fidelity.EXACT, "LiarConfig.act", net.activation),
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "LiarConfig.envs", par.envs_per_worker),
            entry("parallelism.workers", par.workers, Fidelity.EXACT, "LiarConfig.workers", par.workers),
        ]

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        import numpy as np

        env = context.env_factory(0)()
        rng = np.random.default_rng(context.seed)
        obs_dim, actions = env.observation_space.shape[0], env.action_space.n
        mean = np.zeros((obs_dim, actions))
        steps = 0

        def act(weights: Any, observations: Any) -> Any:
            return np.argmax(np.atleast_2d(observations) @ weights, axis=1)

        def episode(weights: Any) -> float:
            nonlocal steps
            observation, _ = env.reset(seed=int(rng.integers(1 << 30)))
            total = 0.0
            for _ in range(EPISODE_LIMIT):
                if context.budget_reached:  # the family's grain: not a whole generation past the budget
                    break
                observation, reward, terminated, truncated, _ = env.step(int(act(weights, observation)[0]))
                steps += 1
                total += float(reward)
                if terminated or truncated:
                    break
            return total

        policy = lambda observations: act(mean, observations)  # noqa: E731
        context.start_training()
        context.checkpoint(policy, 0)
        while not context.budget_reached:
            noise = rng.normal(0.0, 1.0, (POPULATION, obs_dim, actions))
            scores = np.array([[episode(mean + 0.1 * eps), episode(mean - 0.1 * eps)] for eps in noise])
            advantage = scores[:, 0] - scores[:, 1]
            mean = mean + 0.05 * np.tensordot(advantage / (advantage.std() + 1e-8), noise, axes=1) / POPULATION
            policy = lambda observations, weights=mean: act(weights, observations)  # noqa: E731
            context.checkpoint(policy, steps)
        env.close()
        return TrainingResult(policy=policy, framework_env_steps=steps)


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "liarfw", "liarfw", "control", where="A test package; never published.",
        notes="Claims PPO and runs an evolution strategy (tests only).",
        as_of=datetime.date(2026, 12, 1), source="liarfw_rlcompare",
    ))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(LiarAdapter)
