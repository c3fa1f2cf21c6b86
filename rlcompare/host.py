"""What a run records about where it ran: library versions and a host fingerprint."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import sys
from collections.abc import Iterable
from typing import Any

#: Recorded with every run, whatever the adapter.
CORE_DISTRIBUTIONS = ("rlcompare", "gymnasium", "numpy")

#: Libraries whose behaviour a comparison depends on whatever the framework: a report flags
#: workloads whose runs used different versions of them.
HARNESS_LIBRARIES = ("gymnasium", "numpy")


def distribution_versions(names: Iterable[str]) -> dict[str, str | None]:
    """Installed version of each distribution (None when it is not installed)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in dict.fromkeys([*CORE_DISTRIBUTIONS, *names]):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def loaded_versions(names: Iterable[str] = HARNESS_LIBRARIES) -> dict[str, str]:
    """``__version__`` of each module this process has imported: the versions a run really ran
    with, even where installed metadata and the importable module disagree (a path override)."""
    versions = {}
    for name in names:
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None)
        if isinstance(version, str):
            versions[name] = version
    return versions


#: Runs with this status never started, so they ran on no library version at all.
_NEVER_RAN = ("unsupported",)


def mixed_versions(runs: Any, library: str = "gymnasium") -> list[dict[str, Any]]:
    """Workloads whose runs did not all use the same version of ``library``:
    ``[{"workload": id, "versions": {adapter: [version, ...]}}]``, sorted by workload.

    ``runs`` is a table of runs with the columns ``workload_id``, ``adapter``, ``status`` and
    ``versions_json`` (a store's runs frame). Adapters in their own environments may pin another
    gymnasium, whose dynamics, wrappers or seeding may differ. Runs that record no version of
    ``library`` (older stores) count neither way.
    """
    seen: dict[str, dict[str, set[str]]] = {}
    if len(runs) == 0:
        return []
    for workload, adapter, status, text in zip(runs["workload_id"], runs["adapter"], runs["status"],
                                               runs["versions_json"], strict=True):
        try:
            versions = json.loads(text) if isinstance(text, str) else text
        except ValueError:
            continue
        version = versions.get(library) if isinstance(versions, dict) else None
        if status in _NEVER_RAN or not version:
            continue
        seen.setdefault(str(workload), {}).setdefault(str(adapter), set()).add(str(version))
    return [{"workload": workload, "versions": {adapter: sorted(found) for adapter, found in sorted(by_adapter.items())}}
            for workload, by_adapter in sorted(seen.items()) if len(set().union(*by_adapter.values())) > 1]


def mixed_version_warnings(runs: Any, library: str = "gymnasium") -> list[str]:
    """:func:`mixed_versions` as one line per workload, for reports and ``rlcompare score``."""
    return [f"{item['workload']}: runs used different {library} versions ("
            + "; ".join(f"{adapter} {', '.join(versions)}" for adapter, versions in item["versions"].items())
            + f"): {library} behaviour may differ between them, so compare with care"
            for item in mixed_versions(runs, library)]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def host_info() -> dict[str, Any]:
    """The hardware and OS a run saw, with a short fingerprint digest of them."""
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    info: dict[str, Any] = {
        "cpu_model": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(affinity) if affinity is not None else os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "gpu": None,
    }
    payload = json.dumps(info, sort_keys=True).encode()
    info["fingerprint"] = hashlib.sha256(payload).hexdigest()[:12]
    return info
