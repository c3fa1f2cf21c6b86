"""What planning needs of the registered plugins: the adapters (with their origins), the algorithm
families workload files may name, and the registered workloads and suites."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rlcompare.errors import UnknownNameError
from rlcompare.harness.contract import Adapter
from rlcompare.harness.protocol import UNKNOWN_ORIGIN, Origin
from rlcompare.spec.families import Families
from rlcompare.spec.workload import Suite, Workload


@dataclass(frozen=True)
class PlanCatalogue:
    """The plugins' contribution to a plan (built by the plugin manager, or by hand in a test)."""

    families: Families
    adapters: Mapping[str, type[Adapter]]
    adapter_origins: Mapping[str, Origin]
    workloads: Mapping[str, Workload]
    suites: Mapping[str, Suite]

    def adapter(self, adapter_id: str) -> Adapter:
        """An instance of the adapter ``adapter_id``, or an error naming the closest one."""
        if adapter_id not in self.adapters:
            raise UnknownNameError("adapter", adapter_id, self.adapters, "rlcompare list adapters")
        return self.adapters[adapter_id]()

    def origin(self, adapter_id: str) -> Origin:
        """Which plugin and distribution registered the adapter."""
        return self.adapter_origins.get(adapter_id, UNKNOWN_ORIGIN)

    def suite(self, name: str) -> list[Workload]:
        """The workloads of suite ``name``, or an error naming the closest suite or workload."""
        if name not in self.suites:
            raise UnknownNameError("suite", name, self.suites, "rlcompare list suites")
        workloads = []
        for workload_id in self.suites[name].workload_ids:
            if workload_id not in self.workloads:
                raise UnknownNameError("workload", workload_id, self.workloads, "rlcompare list workloads")
            workloads.append(self.workloads[workload_id])
        return workloads
