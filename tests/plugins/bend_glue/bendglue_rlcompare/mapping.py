"""The bendglue adapter's fidelity report: every canonical PPO setting, the network, the parallelism."""

from __future__ import annotations

from rlcompare.adapter import Fidelity, FidelityEntry, WorkloadLike, entry


def fidelity_report(workload: WorkloadLike) -> list[FidelityEntry]:
    """Every canonical setting exact (the framework acts at random: this is a test fixture)."""
    entries = [FidelityEntry(f"hyperparameters.{name}", value, Fidelity.EXACT, f"RandomAgent.{name}", value)
               for name, value in workload.hyperparameters.model_dump().items()]
    net, par = workload.network, workload.parallelism
    for setting, value in (("network.hidden_sizes", list(net.hidden_sizes)), ("network.activation", net.activation),
                           ("parallelism.envs_per_worker", par.envs_per_worker), ("parallelism.workers", par.workers)):
        entries.append(entry(setting, value, Fidelity.EXACT, f"RandomAgent.{setting.split('.')[-1]}", value))
    return entries
