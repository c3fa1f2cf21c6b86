"""Workload fidelity: how much of each workload reaches the framework as asked."""

from __future__ import annotations

import json

from rlcompare.parity.corrections import NOT_APPLICABLE, standing
from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionResult, ScoringData
from rlcompare_criteria.adapter_lookup import Row

#: What each fidelity status is worth: the setting reached the framework exactly, approximately, or not.
FIDELITY_SCORES = {"exact": 1.0, "approximate": 0.5, "unsupported": 0.0}


def setting_fidelity(data: ScoringData) -> CriterionResult:
    """Per adapter, one sample per workload it started: the mean fidelity score of every setting in
    the run's fidelity report (the last started run of the workload), as corrected by the parity
    probe. A setting counts as exact only where the probe verified the family's update (or named
    how it differs): declared but unverified is approximate."""
    runs = data.attempted_runs
    runs = runs[runs["fidelity_json"].notna()] if "fidelity_json" in runs else runs.iloc[0:0]
    latest = runs.drop_duplicates(["adapter", "workload_id"], keep="last")
    rows: list[Row] = []
    notes: dict[tuple[str, str], str] = {}
    for adapter_id, group in latest.groupby("adapter", sort=True):
        counts = {status: 0 for status in FIDELITY_SCORES}
        parity = group["parity_json"].tolist() if "parity_json" in group else [None] * len(group)
        for sample, (text, verdicts) in enumerate(zip(group["fidelity_json"].tolist(), parity, strict=True)):
            entries = json.loads(text) if isinstance(text, str) else list(text or [])
            verdicts = json.loads(verdicts) if isinstance(verdicts, str) else verdicts
            verified = standing(verdicts if isinstance(verdicts, list) else None) in ("verified", NOT_APPLICABLE)
            statuses = [str(item.get("status")) for item in entries if isinstance(item, dict)]
            if not verified:
                statuses = ["approximate" if status == "exact" else status for status in statuses]
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
