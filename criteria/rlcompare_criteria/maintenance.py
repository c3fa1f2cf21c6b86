"""Maintenance: the age of the framework's latest release."""

from __future__ import annotations

import datetime as dt

from rlcompare.registry.facts import Release
from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionResult, ScoringData
from rlcompare_criteria.adapter_lookup import Missing, Row, registry_entry, registry_value


def release_age(data: ScoringData) -> CriterionResult:
    rows: list[Row] = []
    missing: list[Missing] = []
    labels: dict[tuple[str, str], str] = {}
    measured = data.measured_at
    today = dt.datetime.fromtimestamp(measured, dt.UTC).date() if measured else dt.datetime.now(dt.UTC).date()
    for adapter_id in data.adapters:
        key = (adapter_id, ALL_WORKLOADS)
        entry, reason = registry_entry(data, adapter_id)
        if entry is None:
            missing.append((*key, reason or "no registry entry"))
            continue
        raw, reason = registry_value(entry, ("latest_release",))
        if isinstance(raw, str) and raw == "none":
            missing.append((*key, "the framework has never made a release"))
            continue
        if not isinstance(raw, Release):
            missing.append((*key, reason or f"the registry's latest release {raw!r} has no date"))
            continue
        rows.append((*key, 0, float(max(0, (today - raw.date).days))))
        labels[key] = str(raw)
    return CriterionResult.build(rows, missing, labels=labels)
