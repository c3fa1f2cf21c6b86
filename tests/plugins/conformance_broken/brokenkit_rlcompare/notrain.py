"""A plugin module whose adapter class has no ``train``: refused by ``check_adapter_class`` when it
registers (tests of the conformance kit only)."""

from __future__ import annotations

from typing import Any

from rlcompare import hookimpl
from rlcompare.adapter import Adapter, Capabilities, FidelityEntry


class NoTrain(Adapter):
    id = "notrain"
    framework = "brokenkit"
    summary = "forgets to implement train()"

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"A2C"}))

    def fidelity(self, workload: Any) -> list[FidelityEntry]:
        return []


@hookimpl
def rlcompare_register_adapters(register: Any) -> None:
    register.add_adapter(NoTrain)
