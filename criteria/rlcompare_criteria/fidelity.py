"""Workload fidelity: how much of each workload reaches the framework as asked."""

from __future__ import annotations

import json

from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionResult, ScoringData
from rlcompare_criteria.adapter_lookup import Row

#: What each fidelity status is worth: the setting reached the framework exactly, approximately, or not.
FIDELITY_SCORES = {"exact": 1.0, "approximate": 0.5, "unsupported": 0.0}


def setting_fidelity(data: ScoringData) -> CriterionResult:
    """Per adapter, one sample per workload it started: the mean fidelity score of every setting in
    the run's fidelity report (the last started run of the workload)."""
    runs = data.attempted_runs
    runs = runs[runs["fidelity_json"].notna()] if "fidelity_json" in runs else runs.iloc[0:0]
    latest = runs.drop_duplicates(["adapter", "workload_id"], keep="last")
    rows: list[Row] = []
    notes: dict[tuple[str, str], str] = {}
    for adapter_id, group in latest.groupby("adapter", sort=True):
        counts = {status: 0 for status in FIDELITY_SCORES}
        for sample, text in enumerate(group["fidelity_json"].tolist()):
            entries = json.loads(text) if isinstance(text, str) else list(text or [])
            statuses = [str(item.get("status")) for item in entries if isinstance(item, dict)]
            if not statuses:
                continue
            for status in statuses:
                counts[status] = counts.get(status, 0) + 1
            rows.append((adapter_id, ALL_WORKLOADS, sample,
                         sum(FIDELITY_SCORES.get(status, 0.0) for status in statuses) / len(statuses)))
        notes[(adapter_id, ALL_WORKLOADS)] = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    have = {row[0] for row in rows}
    missing = [(a, ALL_WORKLOADS, "no started run with a fidelity report") for a in data.adapters if a not in have]
    return CriterionResult.build(rows, missing, notes=notes)
