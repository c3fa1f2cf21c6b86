"""A release-pinned adapter: the same adapter code, run in an environment of its own in which the
framework's distribution (the adapter's first ``distributions`` entry) is pinned to one release.

The rest of the environment resolves as the release's own requirements allow, except torch, which
stays at the main environment's version wherever the adapter needs it (the same build, CPU-only
here, for every release). What each run's environment held is recorded with the run.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping, Sequence
from typing import Any

from rlcompare.harness.contract import Adapter
from rlcompare.harness.subjects import split_subject, subject_id

#: Kept at the main environment's version in every release environment that needs it.
SHARED_PINS = ("torch",)


def pinned_requirements(adapter_class: type[Adapter], release: str) -> tuple[str, ...]:
    """The adapter's environment requirements with its framework distribution at ``release``
    (extras kept) and torch at the main environment's version."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    framework = canonicalize_name(adapter_class.distributions[0])
    requirements: list[str] = []
    found = False
    for text in adapter_class.environment_requirements():
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
        marker = f"; {requirement.marker}" if requirement.marker is not None else ""
        if name == framework:
            requirements.append(f"{requirement.name}{extras}=={release}{marker}")
            found = True
        elif name in SHARED_PINS and not requirement.specifier and _installed(requirement.name):
            requirements.append(f"{requirement.name}{extras}=={_installed(requirement.name)}{marker}")
        else:
            requirements.append(text)
    if not found:
        requirements.insert(0, f"{adapter_class.distributions[0]}=={release}")
    return tuple(requirements)


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def release_adapter(adapter_class: type[Adapter], release: str) -> type[Adapter]:
    """The adapter as it runs against ``release``: the same code (a worker finds the adapter's own
    class by its module and name), an environment of its own with the release pinned; ``subject``
    is the id its runs are stored under."""
    attributes: dict[str, Any] = {
        "environment_requires": pinned_requirements(adapter_class, release),
        "requires_isolation": True,
        "release": release,
        "subject": subject_id(adapter_class.id, release),
        "__module__": adapter_class.__module__,
        "__qualname__": adapter_class.__qualname__,
    }
    return type(adapter_class.__name__, (adapter_class,), attributes)


def subject_adapters(adapters: Mapping[str, type[Adapter]], subjects: Sequence[str]) -> dict[str, type[Adapter]]:
    """``adapters`` with a release adapter for every subject of ``subjects`` that names a release
    of an installed adapter."""
    found = dict(adapters)
    for subject in subjects:
        adapter_id, release = split_subject(subject)
        if release is not None and adapter_id in adapters:
            found[subject] = release_adapter(adapters[adapter_id], release)
    return found
