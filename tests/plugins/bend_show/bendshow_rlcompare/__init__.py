"""An adapter whose training fails after a few env steps (tests only): the failed run is stored with
its traceback, which ``rlcompare show run ID`` prints."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult, WorkloadLike, entry

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register


class DivergingUpdate(RuntimeError):
    """What the crashing adapter's framework raises (a name to find in the stored traceback)."""


class CrashingAdapter(Adapter):
    id = "crashing"
    framework = "bendshow"
    summary = "fails after a few env steps (tests only)"
    import_name = "numpy"
    distributions = ("numpy",)

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
        env = context.env_factory(0)()
        env.reset(seed=context.seed)
        context.start_training()
        for _ in range(10):
            env.step(env.action_space.sample())
        env.close()
        raise DivergingUpdate("the loss became NaN after 10 env steps (on purpose)")


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "bendshow", "bendshow", "control", where="A test package; never published.",
        notes="An adapter whose training fails (tests only).",
        as_of=datetime.date(2026, 12, 1), source="bendshow_rlcompare",
    ))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(CrashingAdapter)
