"""A third-party plugin used by the tests: a new algorithm family (the cross-entropy method, CEM),
the registry entry of its (unpublished) framework, an adapter offering it, and a workload naming
it, registered as any outside package would; the adapter passes the conformance kit.

The adapter is a real, tiny CEM on a linear policy over the harness's own environment, in numpy:
sample parameter vectors around a mean, keep the elite fraction by episode return, refit.
"""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
from pydantic import Field

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult
from rlcompare.spec.families import AlgorithmFamily, CanonicalHyperparameters


class CEMHyperparameters(CanonicalHyperparameters):
    """Cross-entropy method over the parameters of a linear policy."""

    population_size: int = Field(16, gt=1, description="Parameter vectors sampled per generation.")
    elite_fraction: float = Field(0.25, gt=0, le=1, description="Share of the population refitted to.")
    initial_std: float = Field(1.0, gt=0, description="Initial standard deviation of the sampling distribution.")


def generation_steps(workload: Any) -> int:
    """One generation of single episodes of at most 500 steps (CartPole's limit)."""
    return workload.hyperparameters.population_size * 500


CEM = AlgorithmFamily(
    name="CEM", description="Cross-entropy method on a linear policy (discrete actions)",
    hyperparameters=CEMHyperparameters, action_spaces=frozenset({"discrete"}), kind="evolutionary",
    granularity="generation", budget_grain=generation_steps,
)


class CEMAdapter(Adapter):
    id = "cem"
    framework = "cemfw"
    summary = "numpy cross-entropy method (tests only)"
    distributions = ("numpy",)

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"CEM"}), vectorized_envs=False)

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        entries = [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.EXACT, name)
                   for name, value in workload.hyperparameters.model_dump().items()]
        network, parallelism = workload.network, workload.parallelism
        linear = "the policy is linear (observation x action scores); no hidden layers"
        entries += [
            FidelityEntry("network.hidden_sizes", list(network.hidden_sizes), Fidelity.UNSUPPORTED, note=linear),
            FidelityEntry("network.activation", network.activation, Fidelity.UNSUPPORTED, note=linear),
            FidelityEntry("parallelism.envs_per_worker", parallelism.envs_per_worker,
                          Fidelity.EXACT if parallelism.envs_per_worker == 1 else Fidelity.UNSUPPORTED,
                          note="one environment, episodes one after another"),
            FidelityEntry("parallelism.workers", parallelism.workers,
                          Fidelity.EXACT if parallelism.workers == 1 else Fidelity.UNSUPPORTED,
                          note="in-process only"),
        ]
        return entries

    def train(self, workload: Any, context: Any) -> TrainingResult:
        hp = workload.hyperparameters
        env = context.env_factory(0)()
        rng = np.random.default_rng(context.seed)
        obs_dim, actions = env.observation_space.shape[0], env.action_space.n
        mean, std = np.zeros(obs_dim * actions), np.full(obs_dim * actions, hp.initial_std)

        def policy_of(theta: np.ndarray) -> Any:
            weights = theta.reshape(obs_dim, actions)
            return lambda observations: np.asarray(observations, dtype=float) @ weights

        def act(theta: np.ndarray) -> Any:
            scores = policy_of(theta)
            return lambda observations: scores(observations).argmax(axis=-1)

        context.start_training()
        steps = 0
        while steps < workload.env_steps:
            population = mean + std * rng.standard_normal((hp.population_size, mean.size))
            returns = []
            for theta in population:
                observation, _ = env.reset(seed=int(rng.integers(1 << 30)))
                total, done = 0.0, False
                while not done:
                    observation, reward, terminated, truncated, _ = env.step(int(act(theta)(observation[None])[0]))
                    total, steps, done = total + float(reward), steps + 1, terminated or truncated
                returns.append(total)
            elite = population[np.argsort(returns)[-max(1, int(hp.elite_fraction * len(population))):]]
            mean, std = elite.mean(axis=0), elite.std(axis=0) + 1e-3
            context.checkpoint(act(mean), steps)
        env.close()
        return TrainingResult(policy=act(mean), framework_env_steps=steps, native_config={"cem": True})




@hookimpl
def rlcompare_register_frameworks(register: Any) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "cemfw", "cemfw", "control",
        where="Not published; the code ships inside the test package.",
        notes="A numpy cross-entropy method shipped inside an outside test package.",
        as_of=datetime.date(2026, 12, 1), source="cemfw_rlcompare",
    ))


@hookimpl
def rlcompare_register_algorithms(register: Any) -> None:
    register.add_algorithm(CEM)


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    register.add_adapter(CEMAdapter)


@hookimpl
def rlcompare_register_workloads(register: Any) -> None:
    # a plain table: the register validates it against the families registered so far, CEM included
    register.add_workload(
        {"id": "cartpole-cem", "env": "CartPole-v1", "algorithm": "CEM", "env_steps": 600, "seeds": 1,
         "hyperparameters": {"population_size": 4}, "evaluation": {"interval_steps": 300, "episodes": 2}},
    )
