"""Workload fidelity: how much of each workload reaches the framework as asked."""

from __future__ import annotations

import json
from typing import Any

from rlcompare.parity.corrections import NOT_APPLICABLE, standing
from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionResult, ScoringData
from rlcompare.spec.settings import STATUS_SCORES, counted_settings, fidelity_share
from rlcompare_criteria.adapter_lookup import Row

#: What each fidelity status is worth: the setting reached the framework exactly, approximately, or not.
FIDELITY_SCORES = STATUS_SCORES


def setting_fidelity(data: ScoringData) -> CriterionResult:
    """Per adapter, one sample per workload it started (the last started run of the workload): the
    fidelity share of the run's report as corrected by the parity probe
    (:func:`rlcompare.spec.settings.fidelity_share`). Only the workload's canonical settings count
    (every hyperparameter of its family, the network, the envs and workers): the same settings for
    every adapter, whatever its report lists; one it leaves out counts as unsupported. A setting
    counts as exact only where the probe verified the family's update (declared but unverified is
    approximate); a departure the probe found or the driver traced only lowers the share."""
    runs = data.attempted_runs
    runs = runs[runs["fidelity_json"].notna()] if "fidelity_json" in runs else runs.iloc[0:0]
    latest = runs.drop_duplicates(["adapter", "workload_id"], keep="last")
    rows: list[Row] = []
    notes: dict[tuple[str, str], str] = {}
    specs = data.workload_specs
    for adapter_id, group in latest.groupby("adapter", sort=True):
        counts = {status: 0 for status in FIDELITY_SCORES}
        parity = group["parity_json"].tolist() if "parity_json" in group else [None] * len(group)
        for sample, (text, verdicts, digest) in enumerate(zip(group["fidelity_json"].tolist(), parity,
                                                                group["workload_digest"].tolist(), strict=True)):
            entries = [item for item in _loaded(text) if isinstance(item, dict)]
            verdicts = _loaded(verdicts) if verdicts is not None else None
            verified = standing(verdicts if isinstance(verdicts, list) else None) in ("verified", NOT_APPLICABLE)
            spec = specs.get(digest) or {}
            names = _hyperparameter_names(spec, entries)
            language = spec.get("language_model") is not None
            share = fidelity_share(entries, names, verified, language)
            if share is None:
                continue
            counted = set(counted_settings(names, language))
            status = {str(item.get("setting")): str(item.get("status")) for item in entries
                      if item.get("setting") in counted}
            for setting in counted:
                value = status.get(setting, "unsupported")
                value = "approximate" if value == "exact" and not verified else value
                counts[value] = counts.get(value, 0) + 1
            rows.append((adapter_id, ALL_WORKLOADS, sample, share))
        notes[(adapter_id, ALL_WORKLOADS)] = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    have = {row[0] for row in rows}
    missing = [(a, ALL_WORKLOADS, "no started run with a fidelity report") for a in data.adapters if a not in have]
    return CriterionResult.build(rows, missing, notes=notes)


def _hyperparameter_names(spec: dict[str, Any], entries: list[dict[str, Any]]) -> list[str]:
    """The canonical hyperparameters of a stored workload: its table (every validated workload stores
    all of its family's, defaults included); for a hand-made spec without one, those the report names."""
    table = spec.get("hyperparameters")
    if isinstance(table, dict) and table:
        return list(table)
    prefix = "hyperparameters."
    return list(dict.fromkeys(str(item.get("setting"))[len(prefix):] for item in entries
                              if str(item.get("setting")).startswith(prefix)))


def _loaded(value: Any) -> list[Any]:
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, (list, tuple)) else []
