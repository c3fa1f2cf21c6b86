"""Measurements made in a fresh interpreter of the environment an adapter runs in (the main one,
or the adapter's own), of what a run imports of its framework, cached per modules, distribution
version and environment."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlcompare.harness.framework_import import framework_modules
from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria.adapter_lookup import (
    adapter_class,
    canonical_name,
    framework_distribution,
    installation_for,
    providing_distribution,
)
from rlcompare_criteria.installations import Installation

SUBPROCESS_TIMEOUT_SECONDS = 600
#: Part of the cache key of the measurements made in fresh interpreters: bumped when how they are
#: made changes (2: a discarded warm-up import, further modules that raise are skipped; 3: the import
#: timed and the API walked by :mod:`rlcompare.harness.framework_import`, as runs do), so that a
#: value measured the old way is not read back.
MEASURE_METHOD = 3


def run_in(installation: Installation, script: str, names: Sequence[str]) -> tuple[str | None, str | None]:
    """(last line of stdout, None) of ``python -c script NAMES...`` in a fresh interpreter of
    ``installation``, or (None, one line saying why not)."""
    try:
        done = subprocess.run([installation.python, "-c", script, *names], capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT_SECONDS, check=False, env=installation.process_environment())
    except subprocess.TimeoutExpired:
        return None, f"import {names[0]} took over {SUBPROCESS_TIMEOUT_SECONDS} s"
    except OSError as error:  # the environment's interpreter is gone (removed meanwhile)
        return None, f"{installation.label} cannot start Python ({error.strerror or error})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"import {names[0]} failed: {last[:200]}"
    lines = done.stdout.strip().splitlines()
    return (lines[-1], None) if lines else (None, f"import {names[0]} printed nothing")


def run_framework_modules(data: ScoringData, adapter_id: str) -> tuple[tuple[str, ...] | None, str | None]:
    """The framework modules a run of the adapter imports (its import name first)."""
    adapter, reason = adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    modules = framework_modules(adapter)
    return (modules, None) if modules else (None, f"adapter {adapter_id!r} declares no import name")


def foreign_import_name(data: ScoringData, adapter_id: str) -> str | None:
    """Why the adapter's ``import_name`` cannot be measured as its framework's, or None: it must be a
    package one of its declared distributions installs (``import_name = "json"`` would otherwise time
    and introspect the standard library in the framework's place)."""
    adapter, _ = adapter_class(data, adapter_id)
    installation, _ = installation_for(data, adapter_id)
    declared = adapter.distributions
    import_name = adapter.import_name
    if installation is None or providing_distribution(import_name, declared, installation) is not None:
        return None
    return (f"adapter {adapter_id!r}: import name {import_name!r} is not a package of any distribution it declares "
            f"({', '.join(declared) or 'none'})")


@dataclass(frozen=True)
class Target:
    """What a fresh-interpreter measurement of an adapter's framework measures, and where it is kept."""

    #: The framework modules a run imports (the import name first).
    modules: tuple[str, ...]
    #: The environment the adapter runs in.
    installation: Installation
    #: The framework's distribution, canonical name and version.
    distribution: str
    version: str

    def key(self, kind: str) -> str:
        """The cache key of the ``kind`` measurement ("import", "api") of this target."""
        return (f"{kind}|{'+'.join(self.modules)}|{self.distribution}|{self.version}|"
                f"{self.installation.cache_tag}|method {MEASURE_METHOD}")

    def description(self, what: str) -> str:
        further = len(self.modules) - 1
        more = f", {further} module{'s' if further > 1 else ''} of it its adapter imports" if further else ""
        return f"{what} of {self.modules[0]}{more}, in {self.installation.label}"


def target(data: ScoringData, adapter_id: str) -> tuple[Target | None, str | None]:
    """What a run of the adapter imports of its framework and where, or (None, why it cannot be measured)."""
    modules, reason = run_framework_modules(data, adapter_id)
    name, version, dist_reason = framework_distribution(data, adapter_id)
    if modules is None or dist_reason is not None or name is None or version is None:
        return None, reason or dist_reason
    installation, reason = installation_for(data, adapter_id)
    if installation is None:
        return None, reason
    foreign = foreign_import_name(data, adapter_id)
    if foreign is not None:
        return None, foreign
    return Target(modules, installation, canonical_name(name), version), None


def measured_in_fresh_interpreter(data: ScoringData, adapter_id: str, kind: str, measure: Callable[..., dict[str, Any]],
                                  what: str) -> tuple[dict[str, Any] | None, str | None]:
    """``measure(modules, installation=...)`` of what a run imports of the adapter's framework, in a
    fresh interpreter where the adapter runs, cached per modules, distribution version and environment
    (a value measured now is kept unless it is an error)."""
    found, reason = target(data, adapter_id)
    if found is None:
        return None, reason
    # an error is not kept: the next scoring tries again (an environment being rebuilt, a timeout)
    result = data.cache.get_or_compute(found.key(kind),
                                       lambda: measure(found.modules, installation=found.installation),
                                       found.description(what),
                                       keep=lambda value: "error" not in value)
    return (None, result["error"]) if "error" in result else (result, None)
