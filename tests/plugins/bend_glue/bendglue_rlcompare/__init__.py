"""An adapter whose glue spans several modules (tests only): the mapping table in
:mod:`bendglue_rlcompare.mapping`, the training loop in :mod:`bendglue_rlcompare.loop`, the parity
probe in :mod:`bendglue_rlcompare.parity_probe`; a benchmark baseline lives outside the package
(``bendglue_baselines``). The glue criterion counts the whole package, and only it."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from bendglue_rlcompare.mapping import fidelity_report
from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, FidelityEntry, TrainingResult, WorkloadLike

if TYPE_CHECKING:
    from rlcompare.adapter import ParityOutcome, ParityProbe, TrainingContext
    from rlcompare.plugins.register import Register


class GlueAdapter(Adapter):
    id = "glue"
    framework = "bendglue"
    summary = "random actions through a framework of its own, glue in several modules (tests only)"
    import_name = "bendglue_fw"
    distributions = ("bendglue-fw", "numpy")

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO"}), action_spaces=frozenset({"discrete"}))

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return fidelity_report(workload)

    def train(self, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
        from bendglue_rlcompare.loop import train_random_agent

        return train_random_agent(workload, context)

    def parity_update(self, probe: ParityProbe) -> ParityOutcome:
        from bendglue_rlcompare.parity_probe import answer

        return answer(probe)


@hookimpl
def rlcompare_register_frameworks(register: Register) -> None:
    from rlcompare.registry.entries import unpublished_entry

    register.add_framework(unpublished_entry(
        "bendglue", "bendglue", "control", where="A test package; never published.",
        notes="A random-action framework for an adapter whose glue spans modules (tests only).",
        as_of=datetime.date(2026, 12, 1), source="bendglue_rlcompare",
    ))


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(GlueAdapter)
