"""Release tracking: the same workloads run against several releases of one framework.

``rlcompare run ... --versions sb3=2.4.0,2.7.0`` turns each run of adapter ``sb3`` into one run per
release. A release is a *subject* of its own, ``sb3@2.4.0`` (:mod:`rlcompare.harness.subjects`): the id
the store, the scores and the reports key it by, so every criterion is measured and shown per
release, side by side, by the same machinery that compares frameworks, and the report adds how each
criterion changed from one release to the next. The runs of a release go to an environment of their
own with the framework pinned (:mod:`rlcompare.pyenvs.releases`); the adapter's code is the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from rlcompare.errors import UsageError
from rlcompare.harness.contract import Adapter
from rlcompare.harness.subjects import subject_id
from rlcompare.plan.matrix import Plan

OPTION = "--versions"


def parse_versions(texts: Sequence[str], adapters: Mapping[str, type[Adapter]],
                   planned: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """``ADAPTER=V1,V2`` options as releases per adapter, each a version the package index could
    hold (PEP 440). Refused, naming the offending part: an adapter not in the plan or without a
    framework distribution, a malformed or repeated version, an adapter given twice."""
    from packaging.version import InvalidVersion, Version

    releases: dict[str, tuple[str, ...]] = {}
    for text in texts:
        adapter_id, separator, listed = text.partition("=")
        adapter_id = adapter_id.strip()
        if not separator or not adapter_id or not listed.strip():
            raise UsageError(f"{OPTION} {text!r}: expected ADAPTER=VERSION[,VERSION...], e.g. sb3=2.4.0,2.7.0")
        if adapter_id in releases:
            raise UsageError(f"{OPTION}: adapter {adapter_id!r} is given twice")
        if adapter_id not in adapters:
            raise UsageError(f"{OPTION}: no adapter {adapter_id!r} is installed (see `rlcompare list adapters`)")
        if adapter_id not in planned:
            raise UsageError(f"{OPTION}: adapter {adapter_id!r} has no run in this plan (see --adapters)")
        if not adapters[adapter_id].distributions:
            raise UsageError(f"{OPTION}: adapter {adapter_id!r} names no framework distribution to pin")
        versions: list[str] = []
        for item in listed.split(","):
            item = item.strip()
            try:
                version = str(Version(item))
            except InvalidVersion:
                raise UsageError(f"{OPTION}: {item!r} (for {adapter_id!r}) is not a version such as 2.4.0") from None
            if item != version:  # 'v2.4', '2.4.0-rc1': the normalized spelling is the subject's id
                raise UsageError(f"{OPTION}: write {item!r} (for {adapter_id!r}) as {version!r}")
            if any(Version(earlier) == Version(version) for earlier in versions):
                raise UsageError(f"{OPTION}: version {version!r} of {adapter_id!r} is listed twice")
            versions.append(version)
        releases[adapter_id] = tuple(versions)
    return releases


def with_releases(plan: Plan, releases: Mapping[str, Sequence[str]]) -> Plan:
    """``plan`` with each run of an adapter in ``releases`` replaced by one run per release (the
    subject ``adapter@release``); refused pairs are refused for every release alike."""
    if not releases:
        return plan
    runs = []
    for run in plan.runs:
        for release in releases.get(run.adapter_id, (None,)):
            runs.append(run if release is None else
                        dataclasses.replace(run, adapter_id=subject_id(run.adapter_id, release), release=release))
    refused = [dataclasses.replace(pair, adapter_id=subject_id(pair.adapter_id, release))
               for pair in plan.refused for release in releases.get(pair.adapter_id, (None,))]
    return Plan(runs=runs, refused=refused)
