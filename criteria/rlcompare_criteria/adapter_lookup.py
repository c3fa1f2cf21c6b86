"""What every development criterion looks up for an adapter: its class, where its framework is
installed, the framework's distribution and registry entry; and the shape of a per-adapter result
(one value per adapter, workload id ``*``). A lookup that fails gives the reason, never a zero."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from rlcompare.registry.entries import FrameworkEntry
from rlcompare.registry.facts import Fact
from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionResult, ScoringData
from rlcompare_criteria.installations import MAIN, Installation, installation_of

#: How the registry spells a fact nobody could establish.
UNKNOWN = "unknown"

Row = tuple[str, str, int, float]
Missing = tuple[str, str, str]


def adapter_class(data: ScoringData, adapter_id: str) -> tuple[Any, str | None]:
    """The adapter class of a subject of the store: an adapter id, or ``adapter@release``
    (:mod:`rlcompare.plan.releases`), whose class pins that release."""
    from rlcompare.harness.subjects import split_subject
    from rlcompare.pyenvs.releases import subject_adapters

    adapters = data.catalogue.adapters if data.catalogue is not None else {}
    base, _release = split_subject(adapter_id)
    if base not in adapters:
        return None, f"adapter {base!r} is not installed here (no plugin registers it)"
    return subject_adapters(adapters, [adapter_id])[adapter_id], None


def installation_for(data: ScoringData, adapter_id: str) -> tuple[Installation | None, str | None]:
    """Where the adapter's framework is installed: the main environment, or the adapter's own
    (:mod:`rlcompare_criteria.installations`)."""
    adapter, reason = adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    return installation_of(data, adapter)


def framework_distribution(data: ScoringData, adapter_id: str) -> tuple[str | None, str | None, str | None]:
    """(distribution, installed version, reason when unavailable) of the adapter's framework: the
    distribution that provides the adapter's ``import_name`` (the framework's own package), else the
    first of its declared ``distributions``, as installed where the adapter runs."""
    adapter, reason = adapter_class(data, adapter_id)
    if adapter is None:
        return None, None, reason
    installation, reason = installation_for(data, adapter_id)
    if installation is None:
        return None, None, reason
    declared = adapter.distributions
    name = providing_distribution(adapter.import_name, declared, installation)
    if name is None:
        if not declared:
            return None, None, f"adapter {adapter_id!r} declares no import name and no distributions"
        name = declared[0]
    version = installed_version(name, installation)
    if version is None:
        where = "" if installation.environment_key is None else f" in {installation.label}"
        return name, None, f"distribution {name!r} is not installed{where}"
    return name, version, None


@functools.cache
def installed_version(name: str, installation: Installation = MAIN) -> str | None:
    return installation.version(name)


@functools.cache
def providing_distribution(import_name: str | None, candidates: tuple[str, ...],
                            installation: Installation = MAIN) -> str | None:
    """Which of the adapter's declared distributions provides the top-level module of
    ``import_name`` (its ``top_level.txt``, else its file list), so a framework's licence and
    version are its own even when another distribution is listed first."""
    if not import_name:
        return None
    top = import_name.split(".")[0]
    for name in candidates:
        distribution = installation.distribution(name)
        if distribution is None:
            continue
        top_level = distribution.read_text("top_level.txt")
        if top_level is not None:
            if top in top_level.split():
                return name
            continue
        for path in distribution.files or ():
            if path.parts and path.parts[0] in (top, f"{top}.py") and len(path.parts) <= 2:
                return name
    return None


def registry_entry(data: ScoringData, adapter_id: str) -> tuple[FrameworkEntry | None, str | None]:
    framework = data.adapter_frameworks.get(adapter_id)
    adapter, _ = adapter_class(data, adapter_id)
    if adapter is not None:
        framework = adapter.framework
    frameworks = data.catalogue.frameworks if data.catalogue is not None else {}
    if not frameworks:
        return None, "no framework registry is installed"
    if framework not in frameworks:
        return None, f"framework {framework!r} has no registry entry"
    return frameworks[framework], None


def registry_value(entry: FrameworkEntry, names: Sequence[str]) -> tuple[Any, str | None]:
    """(value, None) for the first of ``names`` the entry records, else (None, why). Registry facts
    carry their value with their evidence (``fact.value``); a fact recorded as "unknown", or resting on its
    authors' statement alone (a framework without public code), is missing.
    ``false`` and an empty list are values (known absence), not missing ones."""
    for name in names:
        value = entry.value(name)
        if isinstance(value, str) and value == UNKNOWN:
            return None, f"the registry records {name} as unknown"
        fact = entry.fact(name)
        if fact is not None and fact.author_stated:
            # never scored: an unverifiable claim may not beat (or tie) a verified fact
            return None, f"the registry has only its authors' statement of {name}, not verified"
        if value is not None and value != "":
            return value, None
    return None, f"the registry entry has no {names[0]}"


def registry_fact(entry: FrameworkEntry, name: str) -> Fact | None:
    """The fact ``name`` of the entry, with its evidence (None when the entry does not state it)."""
    return entry.fact(name)


def per_adapter(
    data: ScoringData,
    measure: Callable[[str], tuple[list[float] | float | None, str | None]],
) -> tuple[list[Row], list[Missing]]:
    """Run ``measure(adapter_id) -> (value or samples, reason when missing)`` for each adapter."""
    rows: list[Row] = []
    missing: list[Missing] = []
    for adapter_id in data.adapters:
        value, reason = measure(adapter_id)
        if value is None:
            missing.append((adapter_id, ALL_WORKLOADS, reason or "not measured"))
            continue
        samples = value if isinstance(value, list) else [value]
        rows += [(adapter_id, ALL_WORKLOADS, seed, float(sample)) for seed, sample in enumerate(samples)]
    return rows, missing


def per_adapter_criterion(measure: Callable[[ScoringData, str], tuple[Any, str | None]]) -> Callable[[ScoringData], CriterionResult]:
    def compute(data: ScoringData) -> CriterionResult:
        rows, missing = per_adapter(data, lambda adapter_id: measure(data, adapter_id))
        return CriterionResult.build(rows, missing)

    compute.__name__ = measure.__name__
    compute.__doc__ = measure.__doc__
    return compute


def per_adapter_premeasure(measure: Callable[[ScoringData, str], tuple[Any, str | None]], *,
                           measured_by_runs: bool = False, timed: bool = False,
                           ) -> Callable[[ScoringData, bool], list[str]]:
    """A criterion's ``premeasure``: ``measure(data, adapter_id)`` for each adapter, for what it keeps
    in ``data.cache``. It is the very function scoring calls, so the cache keys and scripts are the
    scoring's own, and scoring later reads the value instead of measuring it.

    ``measured_by_runs``: an adapter a run of this command finished (``data.warm_adapters``) is
    skipped, its run having measured it where it imported the framework
    (:mod:`rlcompare_criteria.in_run`). ``timed``: the measurement depends on the machine's load, so it
    is never made beside runs (beside a busy CPU an import takes longer even with a CPU of its own,
    ``benchmarks/import_timing.py``)."""

    def premeasure(data: ScoringData, alongside_runs: bool) -> list[str]:
        if timed and alongside_runs:
            return []
        for adapter_id in data.adapters:
            if not (measured_by_runs and adapter_id in data.warm_adapters):
                measure(data, adapter_id)
        return []

    premeasure.__name__ = f"premeasure_{measure.__name__}"
    return premeasure




def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
