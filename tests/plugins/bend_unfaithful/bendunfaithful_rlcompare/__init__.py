"""An A2C adapter whose framework has a setting for few of A2C's canonical hyperparameters (tests
only): its report is complete and honest, but leaves most settings unsupported, so `rlcompare plan`
refuses every pair and the conformance kit can run no tiny workload. The kit must say so: the cause
is fidelity, not the import rules."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, Fidelity, FidelityEntry, TrainingResult, WorkloadLike, entry

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare.plugins.register import Register

#: The only canonical A2C settings the framework has.
MAPPED = ("learning_rate", "gamma", "rollout_steps")


class MostlyUnsupported(Adapter):
    id = "unfaithful"
    framework = "bendunfaithful"
    summary = "maps 3 of A2C's 9 canonical settings (tests only)"
    import_name = "numpy"
    distributions = ("numpy",)

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"A2C"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        entries = [FidelityEntry(f"hyperparameters.{name}", value,
                                 Fidelity.EXACT if name in MAPPED else Fidelity.UNSUPPORTED,
                                 f"Config.{name}" if name in MAPPED else None, value if name in MAPPED else None)
                   for name, value in workload.hyperparameters.model_dump().items()]
        net, par = workload.network, workload.parallelism
        return entries + [
            entry("network.hidden_sizes", list(net.hidden_sizes), Fidelity.EXACT, "Config.hidden", list(net.hidden_sizes)),
            entry("network.activation", net.activation, Fidelity.EXACT, "Config.act", net.activation),
            entry("parallelism.envs_per_worker", par.envs_per_worker, Fidelity.EXACT, "Config.envs", par.envs_per_worker),
            entry("parallelism.workers", par.workers, Fidelity.EXACT, "Config.workers", par.workers),
        ]

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        raise NotImplementedError("never planned: most settings are unsupported")


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "bendunfaithful", "bendunfaithful", "control", where="A test package; never published.",
        notes="An adapter that maps few canonical settings (tests only).",
        as_of=datetime.date(2026, 12, 1), source="bendunfaithful_rlcompare",
    ))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(MostlyUnsupported)
