"""A study's verdicts as Markdown and JSON: the publication and what it states about itself, then
per arm one row per claim: published, measured (95% interval over our seeds), verdict and why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rlcompare.reporting.escape import markdown
from rlcompare.studies.model import Study
from rlcompare.studies.verdicts import STATUSES, Verdict


def run_conditions(study: Study, runs: Any) -> str:
    """How the study's runs were made, from the store's own record: how many, the most in flight at once
    on how many CPUs, and how many a limit stopped (seconds compare best from exclusive runs)."""
    if len(runs) == 0:
        return ""
    mine = runs[runs["workload_id"].astype(str).str.startswith(f"{study.id}--")
                & (runs["status"].astype(str) != "unsupported")]  # refusals are not runs: the verdicts name them
    if len(mine) == 0:
        return ""
    statuses = Counter(str(status) for status in mine["status"])
    parts = [f"{len(mine)} runs stored ({', '.join(f'{n} {status}' for status, n in sorted(statuses.items()))})"]
    if "runs_in_flight" in mine and mine["runs_in_flight"].notna().any():
        cpus = mine["load_cpus"].dropna() if "load_cpus" in mine else []
        parts.append(f"at most {int(mine['runs_in_flight'].max())} in flight at once"
                     + (f" on {int(max(cpus))} CPUs" if len(cpus) else ""))
    return "Runs: " + ", ".join(parts) + "."


def verdicts_json(study: Study, verdicts: Sequence[Verdict], store: str, conditions: str = "") -> dict[str, Any]:
    return {
        "study": study.id, "title": study.title, "store": store, "conditions": conditions,
        "publication": study.publication.model_dump(mode="json"),
        "cells": [cell.model_dump(mode="json") for cell in study.cells],
        "counts": dict(Counter(verdict.status for verdict in verdicts)),
        "verdicts": [asdict(verdict) for verdict in verdicts],
    }


def verdicts_markdown(study: Study, verdicts: Sequence[Verdict], store: str, conditions: str = "") -> str:
    publication = study.publication
    counts = Counter(verdict.status for verdict in verdicts)
    lines = [
        f"# Study {markdown(study.id)}: {markdown(study.title)}", "",
        markdown(study.description), "",
        f"Published: {markdown(publication.title)}. Hardware stated: {markdown(publication.hardware)}. "
        f"Versions stated: {markdown(publication.versions)}. Statistic: {markdown(publication.statistic)}.", "",
    ]
    if publication.notes:
        lines += [markdown(publication.notes), ""]
    lines += ["Sources:", ""]
    lines += [f"- {markdown(evidence.describe())}" for evidence in publication.evidence]
    lines += ["", f"Measured in {markdown(store)}, {study.seeds} seeds per cell. Verdicts: "
              + ", ".join(f"{counts.get(status, 0)} {status}" for status in STATUSES) + "."
              + (f" {markdown(conditions)}" if conditions else ""), "",
              "How a claim is judged (docs/studies.md): a figure in the same unit here as there against the t "
              "interval of our mean, or, against a single published run, against where one more of our runs "
              "would land (the prediction interval); the published side is the t interval its statistic allows "
              "(over its seeds, or over the evaluation episodes of its one agent). Seconds from other hardware "
              "only as ratios between frameworks (bootstrap interval of the ratio of our means). Overlapping "
              "intervals: consistent, which means not contradicted at this number of seeds.", ""]
    for arm in study.arms:
        mine = [verdict for verdict in verdicts if verdict.arm == arm]
        lines += [f"## {arm.capitalize()} arm", ""]
        if not mine:
            lines += ["No claim judged in this arm.", ""]
            continue
        lines += ["| cell | metric | claim | published | measured | verdict | why |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += ["| " + " | ".join(markdown(part) for part in (
            verdict.cell, verdict.metric, verdict.claim, verdict.published, verdict.measured or "-",
            verdict.status, verdict.reason)) + " |" for verdict in mine]
        lines.append("")
    notes = [(cell.id, cell.note) for cell in study.cells if cell.note]
    if notes:
        lines += ["## Cells that depart from the publication", ""]
        lines += [f"- {markdown(cell)}: {markdown(note)}" for cell, note in notes]
        lines.append("")
    rows = ["## Published rows and their sources", ""]
    for row in study.published:
        sources = "; ".join(evidence.describe() for evidence in row.evidence)
        rows.append(f"- {markdown(row.label)} ({markdown(row.cell)}, {row.metric}): {markdown(sources)}")
    return "\n".join(lines + rows) + "\n"
