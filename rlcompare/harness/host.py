"""What a run records about where it ran: library versions and a host fingerprint."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Recorded with every run, whatever the adapter.
CORE_DISTRIBUTIONS = ("rlcompare", "gymnasium", "numpy")

#: Libraries whose behaviour a comparison depends on whatever the framework: a report flags
#: workloads whose runs used different versions of them. Each is recorded where the run imported it
#: (envpool: the runs with ``parallelism.simulation = "envpool"`` only).
HARNESS_LIBRARIES = ("gymnasium", "numpy", "envpool")


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


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, which a container's CPU set limits), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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


def cache_dir() -> Path:
    """The user's cache folder for rlcompare: measurements and parsed data that are slow to make again.

    ``$RLCOMPARE_CACHE_DIR``, else ``$XDG_CACHE_HOME/rlcompare``, else ``~/.cache/rlcompare``. Everything
    in it is keyed by what it was made from, so a stale file is never used, and losing it only costs
    time.
    """
    base = os.environ.get("RLCOMPARE_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "rlcompare"
