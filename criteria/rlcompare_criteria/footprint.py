"""Install footprint: bytes and distributions of the framework's transitive requirement closure."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria.adapter_lookup import adapter_class, canonical_name, framework_distribution, installation_for
from rlcompare_criteria.installations import MAIN, Installation


def install_closure(*requirements: str, installation: Installation = MAIN) -> dict[str, Any]:
    """The installed distributions that ``requirements`` (e.g. ``"ray[rllib]"``, ``"torch"``) pull in,
    themselves included, following the extras asked for and skipping requirements whose markers do
    not hold in ``installation``, and the bytes their installed files take."""
    from packaging.requirements import InvalidRequirement, Requirement

    markers = installation.marker_environment()
    seen: dict[str, int] = {}
    versions: dict[str, str] = {}
    extras_seen: dict[str, set[str]] = {}
    queue = [requirement for requirement in map(Requirement, requirements)
             if requirement.marker is None or requirement.marker.evaluate({**markers, "extra": ""})]
    while queue:
        requirement = queue.pop()
        name = canonical_name(requirement.name)
        extras = set(requirement.extras)
        if name in seen and extras <= extras_seen[name]:
            continue
        distribution = installation.distribution(name)
        if distribution is None:
            continue  # an optional or platform-specific dependency that is not installed
        seen[name] = _installed_bytes(distribution)
        versions[name] = distribution.version
        extras_seen[name] = extras_seen.get(name, set()) | extras
        for text in distribution.requires or []:
            try:
                dependency = Requirement(text)
            except InvalidRequirement:
                continue
            if dependency.marker is not None and not any(
                dependency.marker.evaluate({**markers, "extra": extra}) for extra in ("", *extras_seen[name])
            ):
                continue
            queue.append(dependency)
    return {"distributions": len(seen), "bytes": sum(seen.values()), "names": sorted(seen),
            "versions": dict(sorted(versions.items()))}


def _installed_bytes(distribution: importlib.metadata.Distribution) -> int:
    total = 0
    for path in distribution.files or []:
        size = path.size
        if size is None:  # RECORD without sizes: ask the file system
            try:
                size = path.locate().stat().st_size
            except OSError:
                size = 0
        total += int(size)
    return total


def _footprint(data: ScoringData, adapter_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """Everything the adapter needs installed: the closure of its ``install_requires`` (or of its
    ``distributions``), so a framework that needs torch without requiring it is charged for it too."""
    name, version, reason = framework_distribution(data, adapter_id)
    if reason is not None:
        return None, reason
    adapter, _ = adapter_class(data, adapter_id)
    installation, _ = installation_for(data, adapter_id)
    assert installation is not None  # framework_distribution found one
    requirements = adapter.install_requires or adapter.distributions
    key = f"install|{'+'.join(sorted(requirements))}|{version}|{installation.cache_tag}"
    return data.cache.get_or_compute(key, lambda: install_closure(*requirements, installation=installation),
                                     f"the install footprint of {adapter_id} in {installation.label}"), None


def install_size(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    footprint, reason = _footprint(data, adapter_id)
    return (None, reason) if footprint is None else (footprint["bytes"] / 2**20, None)


def install_distributions(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    footprint, reason = _footprint(data, adapter_id)
    return (None, reason) if footprint is None else (float(footprint["distributions"]), None)
