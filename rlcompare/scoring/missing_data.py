"""The missing-data rule: what an adapter scores where it has no value, so that missing data never
raises a rank and unknown never helps (docs/criteria.md, "Missing data").

On a workload an adapter was asked to run but has no valid run on, it scores the workload's worst
score on every per-workload criterion others have a value for. Wherever else an adapter has no
value for a criterion some adapter has (an unknown registry fact, a failed measurement, a missing
distribution, a figure its runs do not report), it scores the worst there too: the criterion stays
in every overall score, and the adapter with the gap can only lose by it. Only a criterion no
adapter has a value for is left out (its weight passes to its category).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rlcompare.scoring.criteria import ALL_WORKLOADS, Criterion, CriterionResult, ScoringData
from rlcompare.store.records import STARTED_STATUSES

MISSING_DATA_RULE = (
    "Invalid runs count as not completed and nowhere else. On a workload an adapter was asked to run "
    "but has no valid run on, it scores the workload's worst score on every criterion others have a "
    "value for; refused pairs do not apply. Unknown never helps: an adapter without a value for a "
    "criterion others have a value for (an unknown registry fact, a failed measurement, a missing "
    "distribution) scores the worst there; only a criterion no adapter has a value for is left out. "
    "Ranks order adapters by parity standing, the number of workloads with a valid result, workloads "
    "solved and learned, then by overall score."
)


@dataclass
class Support:
    """Normalized scores after the missing-data rule (measured and imputed: what aggregates,
    pairwise views and overall scores are computed from), and what the rule did."""

    scores: pd.DataFrame
    left_out: list[dict[str, str]]
    imputed: list[dict[str, Any]]
    valid_workloads: dict[str, set[str]]
    failed_workloads: dict[str, set[str]]


def _missing_reasons(results: Mapping[str, CriterionResult]) -> dict[tuple[str, str, str], str]:
    """(criterion, adapter, workload) -> the reason the criterion gave for a missing cell."""
    reasons: dict[tuple[str, str, str], str] = {}
    for cid, result in results.items():
        for adapter, workload_id, reason in result.missing.itertuples(index=False):
            reasons.setdefault((cid, str(adapter), str(workload_id)), str(reason))
    return reasons


def apply_missing_data_rule(
    data: ScoringData, criteria: Mapping[str, Criterion], normalized: pd.DataFrame,
    results: Mapping[str, CriterionResult],
) -> Support:
    """Rules 2 and 3 of the module docstring: impute the worst score wherever an adapter lacks a
    value others have, so that no gap (a failed workload, an unknown fact, a failed measurement)
    takes a criterion out of anyone's overall score or raises anyone's rank."""
    runs = data.runs
    started = runs[runs["status"].isin(STARTED_STATUSES)]
    started_pairs = started.groupby(["adapter", "workload_id"]).size().to_dict()
    valid = runs[runs["status"] == "ok"]
    valid_workloads: dict[str, set[str]] = {adapter: set() for adapter in data.adapters}
    for adapter, workload_id in zip(valid["adapter"], valid["workload_id"], strict=True):
        valid_workloads.setdefault(adapter, set()).add(workload_id)
    failed_workloads: dict[str, set[str]] = {adapter: set() for adapter in data.adapters}
    for (adapter, workload_id) in started_pairs:
        if workload_id not in valid_workloads.get(adapter, set()):
            failed_workloads.setdefault(adapter, set()).add(workload_id)

    reasons = _missing_reasons(results)
    have = normalized.groupby(["criterion", "workload_id"])["adapter"].agg(lambda a: set(a.tolist())).to_dict()
    worst = normalized.groupby(["criterion", "workload_id"])["score"].min().to_dict()
    imputed_rows: list[dict[str, Any]] = []
    imputed: list[dict[str, Any]] = []
    for (cid, workload_id), adapters in sorted(have.items()):
        floor = min(0.0, float(worst[(cid, workload_id)]))
        for adapter in data.adapters:
            if adapter in adapters:
                continue
            if workload_id == ALL_WORKLOADS:
                draws = 1  # one value per adapter: one imputed value
            elif (adapter, workload_id) in started_pairs:
                draws = int(started_pairs[(adapter, workload_id)])
            else:
                continue  # not asked to run the workload, or refused up front: does not apply
            if workload_id != ALL_WORKLOADS and workload_id in failed_workloads.get(adapter, set()):
                reason = "no valid run"
            else:
                found = reasons.get((cid, adapter, workload_id)) or reasons.get((cid, adapter, ALL_WORKLOADS))
                reason = f"no value ({found})" if found else "no value"
            imputed.append({"criterion": cid, "adapter": adapter, "workload": workload_id, "score": floor,
                            "reason": reason})
            imputed_rows += [{"criterion": cid, "adapter": adapter, "workload_id": workload_id,
                              "seed": -1 - i, "score": floor} for i in range(draws)]
    scores = normalized
    if imputed_rows:
        scores = pd.concat([normalized, pd.DataFrame(imputed_rows)], ignore_index=True)
    scores = scores.astype({"seed": np.int64})
    ran = {adapter for adapter, workloads in valid_workloads.items() if workloads}
    return Support(scores, _left_out(criteria, have, reasons, ran), imputed, valid_workloads, failed_workloads)


def _left_out(
    criteria: Mapping[str, Criterion], have: Mapping[tuple[str, str], set[str]],
    reasons: Mapping[tuple[str, str, str], str], ran: set[str],
) -> list[dict[str, str]]:
    """The criteria no adapter has a value for (their weight passes to their category). The reason
    quoted is one an adapter with a valid result gave, where there is one (a refused pair's says
    little). A workload on which no adapter has a value simply does not count for the criterion."""
    with_values = {cid for cid, _ in have}
    first_reason: dict[tuple[str, str], str] = {}
    ordered = sorted(reasons.items(), key=lambda item: (item[0][1] not in ran, item[0]))
    for (cid, _, workload_id), reason in ordered:
        first_reason.setdefault((cid, workload_id), reason)
    left_out = []
    for cid in criteria:
        if cid not in with_values:
            example = next((r for (c, _), r in first_reason.items() if c == cid), None)
            left_out.append({"criterion": cid, "workload": ALL_WORKLOADS,
                             "reason": "no adapter has a value" + (f" ({example})" if example else "")})
    return left_out
