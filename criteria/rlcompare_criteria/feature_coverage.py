"""Coverage from the adapter's capabilities and the registry: canonical algorithms, algorithms
offered, parallel and distributed features."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionResult, ScoringData
from rlcompare_criteria.adapter_lookup import Missing, Row, adapter_class, registry_entry, registry_fact, registry_value


def algorithm_coverage(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    from rlcompare.spec.workload import ALGORITHMS

    adapter, reason = adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    offered = set(adapter().capabilities().algorithms)
    return len(offered & set(ALGORITHMS)) / len(ALGORITHMS), None


def registry_algorithms(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    entry, reason = registry_entry(data, adapter_id)
    if entry is None:
        return None, reason
    algorithms, reason = registry_value(entry, ("algorithms",))
    if algorithms is None:
        return None, reason
    if isinstance(algorithms, str):
        algorithms = [part for part in re.split(r"[,\s]+", algorithms) if part]
    return float(len(set(map(str, algorithms)))), None


#: Parallel and distributed features, each offered when the adapter's capabilities declare it
#: (what rlcompare can actually run) or the registry's taxonomy records it (the survey's vocabulary).
#: Values: (capability test, taxonomy dimension, taxonomy values that mean "offered").
FEATURES: dict[str, tuple[Callable[[Any], bool] | None, str, frozenset[str]]] = {
    "vectorized environments": (lambda caps: bool(caps.vectorized_envs), "simulation_parallelism",
                                frozenset({"vectorized-cpu"})),
    "multi-process workers": (lambda caps: bool(caps.rollout_workers), "computing_parallelism",
                              frozenset({"multi-process"})),
    "asynchronous sampling or learning": (lambda caps: "async" in caps.modes, "synchronization",
                                          frozenset({"asynchronous", "stale-synchronous", "hybrid"})),
    "GPU batch simulation": (None, "simulation_parallelism", frozenset({"gpu-batch"})),
    "multi-GPU training": (None, "computing_parallelism", frozenset({"multi-gpu"})),
    "multi-node cluster": (None, "computing_parallelism", frozenset({"multi-node"})),
    "distributed architecture": (None, "architecture",
                                 frozenset({"centralized", "decentralized", "gossip", "fine-grained"})),
}


def distributed_features(data: ScoringData, adapter_id: str) -> tuple[dict[str, bool | None] | None, str | None]:
    """Each feature: True (offered), False (not offered) or None (the registry does not know).

    Per docs/registry.md: a list value that names the feature's value means offered; a list marked
    ``complete`` that does not name it means not offered; an incomplete list that does not name it
    says nothing (None); "unknown" says nothing.
    """
    adapter, reason = adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    entry, reason = registry_entry(data, adapter_id)
    if entry is None:
        return None, reason
    capabilities = adapter().capabilities()
    found: dict[str, bool | None] = {}
    for feature, (declared, dimension, offered_values) in FEATURES.items():
        if declared is not None and declared(capabilities):
            found[feature] = True
            continue
        fact = registry_fact(entry, dimension)
        values, _ = registry_value(entry, (dimension,))
        if values is None:
            found[feature] = None
            continue
        values = {values} if isinstance(values, str) else set(map(str, values))
        if values & offered_values:
            found[feature] = True
        else:
            found[feature] = False if fact is not None and fact.complete else None
    return found, None


def distributed_feature_coverage(data: ScoringData) -> CriterionResult:
    """The share of :data:`FEATURES` offered. A feature the registry does not know counts as not
    offered (unknown never helps: dividing by the known features only would give a framework whose
    taxonomy is unknown the best share); an adapter with no registry entry has no value (and scores
    the worst, docs/criteria.md "Missing data")."""
    rows: list[Row] = []
    missing: list[Missing] = []
    notes = {}
    for adapter_id in data.adapters:
        found, reason = distributed_features(data, adapter_id)
        if found is None:
            missing.append((adapter_id, ALL_WORKLOADS, reason or "the registry taxonomy is unknown"))
            continue
        offered = [feature for feature, present in found.items() if present]
        rows.append((adapter_id, ALL_WORKLOADS, 0, len(offered) / len(FEATURES)))
        note = f"{len(offered)} of {len(FEATURES)}: " + (", ".join(offered) if offered else "none")
        unknown = [feature for feature, present in found.items() if present is None]
        if unknown:
            note += f"; unknown (counted as not offered): {', '.join(unknown)}"
        notes[(adapter_id, ALL_WORKLOADS)] = note
    return CriterionResult.build(rows, missing, notes=notes)
