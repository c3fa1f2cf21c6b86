"""EvoTorch adapter: evolution strategies (ES) with EvoTorch's PGPE searcher on its GymNE problem.

The canonical ES family is OpenAI-ES (Salimans et al. 2017): mirrored Gaussian perturbations of the
policy's parameters, centred-rank fitness shaping, an Adam step on the mean, a fixed noise scale.
EvoTorch's PGPE with ``symmetric=True``, ``ranking_method="centered"``, ``optimizer="adam"`` and
``stdev_learning_rate=0`` is that algorithm up to the scale of its search gradient (see fidelity).

Parallelism maps to EvoTorch's own mechanism: ``workers == 1`` evaluates candidates in the training
process; ``workers > 1`` gives GymNE that many ``num_actors`` (Ray actors), each stepping one
environment of its own. Ray is a private instance on loopback, started here and shut down after
training (:mod:`rlcompare.harness.private_ray`). Every environment, in the process or in an actor, is one of
the harness's counted environments with a slot of its own (:mod:`rlcompare_evotorch.problem`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import (
    COUNTER_SLOTS,
    Adapter,
    BudgetTolerance,
    Capabilities,
    Fidelity,
    FidelityEntry,
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    map_settings,
)

if TYPE_CHECKING:
    import numpy as np

    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

ACTIVATIONS = {"tanh": "Tanh()", "relu": "ReLU()"}


def _popsize(value: int, workload: WorkloadLike) -> int:
    # mirrored sampling evaluates pairs: PGPE wants an even population
    return value + value % 2 if workload.hyperparameters.antithetic else value


def _popsize_exact(value: int, workload: WorkloadLike) -> tuple[Fidelity, str]:
    if _popsize(value, workload) == value:
        return Fidelity.EXACT, ""
    return Fidelity.APPROXIMATE, f"rounded up to {value + 1}: mirrored sampling evaluates pairs"


def _search_gradient(_: Any, __: WorkloadLike) -> tuple[Fidelity, str]:
    return (Fidelity.APPROXIMATE,
            "Adam on PGPE's search gradient, which is sigma^2 times OpenAI-ES's (mean of rank-weighted "
            "parameter perturbations, not of unit noise); Adam's normalization makes the steps nearly equal")


SETTINGS = [
    Setting("population_size", "popsize", convert=_popsize, judge=_popsize_exact),
    Setting("sigma", "stdev_init", note="stdev_learning_rate=0 keeps it fixed, as OpenAI-ES"),
    Setting("learning_rate", "center_learning_rate", judge=_search_gradient),
    Setting("antithetic", "symmetric"),
    Setting("centered_ranks", "ranking_method", convert=lambda value, _: "centered" if value else None,
            note="'centered' ranks in [-0.5, 0.5], or raw returns (zero-centred) when off"),
    Setting("episodes_per_candidate", "GymNE.num_episodes"),
]


def network_string(workload: WorkloadLike) -> str:
    """The workload's network in EvoTorch's network-string language (GymNE fills in the sizes)."""
    layers, previous = [], "obs_length"
    for width in workload.network.hidden_sizes:
        layers += [f"Linear({previous}, {width})", ACTIVATIONS[workload.network.activation]]
        previous = str(width)
    layers.append(f"Linear({previous}, act_length)")
    return " >> ".join(layers)


class EvoTorchAdapter(Adapter):
    id = "evotorch"
    framework = "evotorch"
    summary = "EvoTorch: evolution strategies (PGPE as OpenAI-ES) on GymNE; Ray actors for workers > 1"
    import_name = "evotorch"
    distributions = ("evotorch", "torch", "ray")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            algorithms=frozenset({"ES"}),
            action_spaces=frozenset({"discrete", "continuous"}),
            vectorized_envs=False,  # each evaluator steps one environment, one episode at a time
            rollout_workers=True,
            modes=frozenset({"sync"}),
            max_workers=COUNTER_SLOTS - 1,  # slot 0 is the main process's (unstepped) environment
        )

    # -- translation -------------------------------------------------------------------------------

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        kwargs, entries = map_settings(workload, SETTINGS)
        workers = workload.parallelism.workers
        gymne = {
            "network": network_string(workload),
            "num_episodes": kwargs.pop("GymNE.num_episodes"),
            "num_actors": workers if workers > 1 else None,
        }
        pgpe = {**kwargs, "stdev_learning_rate": 0.0, "optimizer": "adam", "distributed": False}
        entries += [
            entry("network.hidden_sizes", workload.network.hidden_sizes, Fidelity.EXACT, "GymNE.network",
                  gymne["network"], "the policy network whose parameters evolve; no value network"),
            entry("network.activation", workload.network.activation, Fidelity.EXACT, "GymNE.network",
                  ACTIVATIONS[workload.network.activation]),
            entry("parallelism.envs_per_worker", workload.parallelism.envs_per_worker, Fidelity.EXACT,
                  "GymNE", 1, "one environment per evaluator"),
            entry("parallelism.workers", workers, Fidelity.EXACT, "GymNE.num_actors", gymne["num_actors"],
                  "Ray actors evaluating the population" if workers > 1 else "evaluated in the training process"),
            entry("parallelism.mode", workload.parallelism.mode, Fidelity.EXACT, "PGPE.distributed", False,
                  "each generation is evaluated in full before the update"),
        ]
        return {"GymNE": gymne, "PGPE": pgpe}, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    def budget_tolerance(self, workload: WorkloadLike) -> BudgetTolerance:
        """One generation as EvoTorch runs it: the (possibly rounded) population, every candidate's
        episodes at the environment's step limit; the run may end up to that far past its budget."""
        hp = workload.hyperparameters
        from rlcompare.adapter import episode_step_limit  # gymnasium: loaded on first use

        limit = episode_step_limit(workload.env, workload.env_kwargs)
        if limit is None:
            return BudgetTolerance.for_workload(workload)
        grain = _popsize(hp.population_size, workload) * hp.episodes_per_candidate * limit
        return BudgetTolerance("generation", grain, grain)

    # -- training ----------------------------------------------------------------------------------

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        import torch
        from evotorch.algorithms import PGPE

        from rlcompare_evotorch.problem import CountedGymNE

        native, _ = self.native_config(workload)
        workers = workload.parallelism.workers
        torch.manual_seed(context.seed)
        factories = [context.env_factory(slot) for slot in range(workers + 1 if workers > 1 else 1)]
        ray = None
        if workers > 1:
            import ray

            from rlcompare.adapter import start_private_ray

            start_private_ray(workers + 1)  # one CPU per evaluation actor, one for the searcher
        try:
            problem = CountedGymNE(factories=factories, env_seed=context.seed * 10_000, **native["GymNE"])
            # Seeded through torch's global generator: a problem with its own generator
            # (problem.manual_seed) breaks EvoTorch 0.6.1's actors, which call a missing `seed`.
            searcher = PGPE(problem, **native["PGPE"])
            discrete = problem._act_space.__class__.__name__ == "Discrete"
            context.start_training()
            with context.until_solved():  # a stop_when_solved workload ends at its solving evaluation
                context.checkpoint(_policy(problem, searcher, discrete), 0)  # grid point 0, before any generation
                while problem.interaction_count < workload.env_steps:
                    searcher.step()  # one generation: sample, evaluate (in actors when workers > 1), update
                    context.trace("update")  # the generation's update: evaluations are placed after it
                    context.checkpoint(_policy(problem, searcher, discrete), problem.interaction_count)
            context.stop_training()
            policy = _policy(problem, searcher, discrete)
            steps = int(problem.interaction_count)
            if problem.actors is not None:
                problem.kill_actors()
        finally:
            if ray is not None:
                ray.shutdown()
        native_config = {**native, "searcher": "PGPE", "problem": "GymNE",
                         "generations": int(searcher.step_count)}
        return TrainingResult(policy=policy, framework_env_steps=steps, native_config=native_config)


def _policy(problem: Any, searcher: Any, discrete: bool) -> Any:
    """A batch policy from the search distribution's mean, acting as GymNE's evaluation does:
    argmax over the network's outputs (discrete) or the outputs clipped to the bounds (continuous)."""
    import torch

    module = problem.to_policy(searcher.status["center"])

    def policy(observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            outputs = module(torch.as_tensor(observations, dtype=torch.float32)).numpy()
        return outputs.argmax(axis=-1) if discrete else outputs

    return policy


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(EvoTorchAdapter)
