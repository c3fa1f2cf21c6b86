"""Which library versions the runs of a store used, and where they differ between adapters."""

from __future__ import annotations

import json
from typing import Any

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
