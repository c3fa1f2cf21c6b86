"""rlcompare plugin for tinyac, the worked example of docs/writing-an-adapter.md.

It registers the framework's registry entry (tinyac has no public repository yet) and an adapter
that runs rlcompare's A2C workloads with tinyac's numpy A2C. Importing this module imports neither
tinyac nor numpy: ``rlcompare list`` imports every plugin module.
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
    Setting,
    TrainingResult,
    WorkloadLike,
    entry,
    map_settings,
)

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: The algorithm family this adapter runs. A new family (say, evolution strategies) would be
#: registered by one more hook, ``rlcompare_register_algorithms``, where that hook exists.
ALGORITHM = "A2C"

#: Canonical A2C setting -> tinyac's A2CConfig field. All exact: tinyac implements each as defined.
SETTINGS = [
    Setting("learning_rate", "A2CConfig.lr"),
    Setting("optimizer", "A2CConfig.optimizer"),
    Setting("gamma", "A2CConfig.gamma"),
    Setting("gae_lambda", "A2CConfig.gae_lambda"),
    Setting("rollout_steps", "A2CConfig.n_steps"),
    Setting("entropy_coef", "A2CConfig.ent_coef"),
    Setting("value_coef", "A2CConfig.vf_coef"),
    Setting("max_grad_norm", "A2CConfig.max_grad_norm"),
    Setting("normalize_advantage", "A2CConfig.normalize_advantage"),
]


class TinyACAdapter(Adapter):
    id = "tinyac"
    framework = "tinyac"
    summary = "tinyac's numpy A2C (worked example of an outside adapter)"
    import_name = "tinyac"
    distributions = ("tinyac", "numpy")

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({ALGORITHM}), action_spaces=frozenset({"discrete"}),
                            vectorized_envs=True, rollout_workers=False, modes=frozenset({"sync"}))

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        """tinyac's keyword arguments and the fidelity report, from one table (they cannot disagree)."""
        config, entries = map_settings(workload, SETTINGS)
        config = {key.removeprefix("A2CConfig."): value for key, value in config.items()}
        net, par = workload.network, workload.parallelism
        config.update(hidden_sizes=tuple(net.hidden_sizes), activation=net.activation)
        entries += [
            entry("network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "A2CConfig.hidden_sizes",
                  list(net.hidden_sizes), "separate policy and value MLPs of this shape"),
            entry("network.activation", net.activation, Fidelity.EXACT, "A2CConfig.activation", net.activation),
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "A2C(envs)",
                  par.envs_per_worker, "stepped in turn in the training process"),
            entry("parallelism.workers", par.workers, Fidelity.EXACT, "A2C(envs)", 1, "in the training process"),
        ]
        return config, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return self.native_config(workload)[1]

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        import tinyac  # the framework is imported here, and only here

        config, _ = self.native_config(workload)
        envs = [make() for make in context.env_factories()]
        model = tinyac.A2C(envs, tinyac.A2CConfig(**config), seed=context.seed)

        def policy(observations: Any) -> Any:
            return model.predict(observations, deterministic=context.deterministic)

        context.start_training()
        model.learn(should_stop=lambda: context.budget_reached,
                    after_update=lambda m: context.checkpoint(policy, m.num_timesteps))
        for env in envs:
            env.close()
        return TrainingResult(policy=policy, framework_env_steps=model.num_timesteps, native_config=config)


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    # The registry entry. tinyac has no public repository yet: ``repository = "none"`` with a note
    # saying where the code lives, and every other fact "unknown" with what was searched (the
    # helper fills these); ``facts=`` would cite whatever is public, a paper or a page.
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "tinyac", "tinyac", "control",
        where="Not published yet; the code ships inside the example package.",
        notes="A numpy-only A2C used as the worked example of an outside adapter.",
        as_of=datetime.date(2026, 12, 1), source="tinyac_rlcompare",
    ))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(TinyACAdapter)
