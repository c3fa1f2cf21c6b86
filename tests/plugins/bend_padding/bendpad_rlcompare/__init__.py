"""Two PPO adapters that train identically (tests only): ``plain`` reports its canonical settings,
``padded`` adds six "exact" entries that no rule asks for (``padding.made_up`` among them) to raise
its fidelity share. Neither may: the conformance kit fails ``padded`` naming the entries that are
neither canonical nor a variant setting of PPO's reference update, and the fidelity criterion scores
both the same.

Both map two canonical settings approximately and two not at all, declare one departure the parity
probe would check (``defaults.adam_eps``, approximate), and act at random in lockstep rollouts over
every env, stopping at the budget (they learn nothing and claim nothing about learning).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult, WorkloadLike, entry

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: Canonical PPO settings the framework maps approximately, and those it has no setting for.
APPROXIMATE = ("clip_range", "gae_lambda")
UNSUPPORTED = ("normalize_advantage", "value_coef")
#: What ``padded`` adds: exact entries outside the canonical settings (the last a variant setting of
#: PPO's reference update, which the kit allows but which never raises the share either).
PADDING = (
    entry("padding.made_up", 1, Fidelity.EXACT, "Config.made_up", 1, "nothing reads it"),
    entry("algorithm", "PPO", Fidelity.EXACT, "Config.algorithm", "PPO"),
    entry("evaluation.episodes", 10, Fidelity.EXACT, "Config.eval_episodes", 10),
    entry("parity.PPO", "the reference update", Fidelity.EXACT, "Config.update", "verified"),
    entry("schedule.gradient_steps", "as canonical", Fidelity.EXACT, "Config.schedule", "as canonical"),
    entry("defaults.truncation_bootstrap", True, Fidelity.EXACT, "Config.bootstrap", True),
)


class PlainAdapter(Adapter):
    id = "plain"
    framework = "bendpad"
    summary = "PPO settings as they are (tests only)"
    import_name = "numpy"
    distributions = ("numpy",)

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        entries = []
        for name, value in workload.hyperparameters.model_dump().items():
            status = (Fidelity.APPROXIMATE if name in APPROXIMATE else
                      Fidelity.UNSUPPORTED if name in UNSUPPORTED else Fidelity.EXACT)
            entries.append(FidelityEntry(f"hyperparameters.{name}", value, status,
                                         None if status is Fidelity.UNSUPPORTED else f"Config.{name}", value,
                                         "close, not the same" if status is Fidelity.APPROXIMATE else ""))
        net, par = workload.network, workload.parallelism
        return entries + [
            entry("network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "Config.hidden", list(net.hidden_sizes)),
            entry("network.activation", net.activation, Fidelity.EXACT, "Config.act", net.activation),
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "Config.envs", par.envs_per_worker),
            entry("parallelism.workers", par.workers, Fidelity.EXACT, "Config.workers", par.workers),
            entry("defaults.adam_eps", 1e-5, Fidelity.APPROXIMATE, "torch.optim.Adam(eps)", 1e-8,
                  "torch's default epsilon"),
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
                for env in envs:
                    _, _, terminated, truncated, _ = env.step(space.sample())
                    if terminated or truncated:
                        env.reset()
                steps += len(envs)
            context.checkpoint(policy, steps)
        for env in envs:
            env.close()
        return TrainingResult(policy=policy, framework_env_steps=steps)


class PaddedAdapter(PlainAdapter):
    id = "padded"
    summary = "the same, its fidelity report padded with six exact entries (tests only)"

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return [*super().fidelity(workload), *PADDING]


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "bendpad", "bendpad", "control", where="A test package; never published.",
        notes="Two identical PPO adapters, one padding its fidelity report (tests only).",
        as_of=datetime.date(2026, 12, 1), source="bendpad_rlcompare",
    ))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(PlainAdapter)
    register.add_adapter(PaddedAdapter)
