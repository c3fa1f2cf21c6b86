"""The parity verdicts a plan's runs record: for each (adapter, family) in the plan, the probes of
the family's reference update, answered by the adapter in its own environment (cached per code and
framework version, so a second ``run`` is a lookup), and the fidelity report they correct."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping

from rlcompare.harness.contract import Adapter
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.parity.corrections import corrected_fidelity, not_applicable
from rlcompare.parity.reference import ReferenceUpdate
from rlcompare.parity.runner import ParityRequest, parity_requests, run_requests
from rlcompare.parity.verdict import ParityVerdict
from rlcompare.plan.matrix import Plan
from rlcompare.spec.families import Families


def with_parity(plan: Plan, adapters: Mapping[str, type[Adapter]], families: Families, cache: MeasurementCache,
                log: Callable[[str], None] | None = None) -> Plan:
    """``plan`` with every run carrying its adapter's parity verdicts on its family and the fidelity
    report they correct."""
    verdicts: dict[tuple[str, str], tuple[dict, ...]] = {}
    # every pair's requests asked together: run_requests probes the adapters at once, one per CPU
    asked: list[ParityRequest] = []
    pending: dict[tuple[str, str], tuple[list[ParityVerdict], int]] = {}
    for adapter_id, name in sorted({(run.adapter_id, run.workload.algorithm) for run in plan.runs}):
        family = families.get(name)
        if family is None or family.kind != "gradient":
            verdicts[(adapter_id, name)] = (not_applicable(adapter_id, name),)
            continue
        requests, unverifiable = parity_requests(adapters, families, [adapter_id], [name])
        pending[(adapter_id, name)] = (list(unverifiable), len(requests))
        asked.extend(requests)
    answers = iter(run_requests(asked, cache, log))
    for pair, (unverifiable, count) in pending.items():
        found = [*unverifiable, *itertools.islice(answers, count)]
        verdicts[pair] = tuple(verdict.to_dict() for verdict in found)
    runs = []
    for run in plan.runs:
        found = verdicts[(run.adapter_id, run.workload.algorithm)]
        family = families.get(run.workload.algorithm)
        reference = family.parity if family is not None and isinstance(family.parity, ReferenceUpdate) else None
        fidelity = corrected_fidelity(run.fidelity, found, reference, run.workload.algorithm)
        runs.append(dataclasses.replace(run, parity=found, fidelity=tuple(fidelity)))
    return Plan(runs=runs, refused=plan.refused)
