"""A TRL adapter whose GRPO loss aggregation silently differs from what it declares (tests only).

``trl-seqmean`` declares TRL's fidelity unchanged (``loss_aggregation`` exact, as ``'dapo'``, a token mean
over the batch) but configures ``loss_type='grpo'`` (each completion's mean, then the mean over completions)
wherever the workload asks for the token mean. The GRPO parity probe must catch it and name what it does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare_trl import TRLAdapter

from rlcompare import hookimpl
from rlcompare.adapter import FidelityEntry, WorkloadLike

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


class SequenceMeanTRL(TRLAdapter):
    id = "trl-seqmean"
    summary = "TRL GRPO averaging per completion behind a token-mean fidelity report"

    def native_config(self, workload: WorkloadLike) -> tuple[dict[str, Any], list[FidelityEntry]]:
        config, entries = super().native_config(workload)
        if config["loss_type"] == "dapo":
            config = {**config, "loss_type": "grpo"}
        return config, entries

    def fidelity(self, workload: WorkloadLike) -> list[FidelityEntry]:
        return super().native_config(workload)[1]


@hookimpl
def rlcompare_register_adapters(register: Register) -> None:
    register.add_adapter(SequenceMeanTRL)
