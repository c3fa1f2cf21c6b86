"""What a store measured for a study: per (arm, cell, adapter, metric), each seed's value as the
criterion of that name computes it (the figures `score` and `report` show), or why there is none."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.scoring.criteria import CriterionResult, ScoringCatalogue
from rlcompare.scoring.engine import store_scoring_data
from rlcompare.studies.model import ARMS, Study, Unplannable
from rlcompare.studies.verdicts import Measured

if TYPE_CHECKING:
    from rlcompare.store.sqlite_store import Store


def _missing_reason(result: CriterionResult, adapter: str, workload_id: str) -> str | None:
    missing = result.missing
    rows = missing[(missing["adapter"] == adapter) & (missing["workload_id"] == workload_id)]
    return None if rows.empty else str(rows["reason"].iloc[0])


def measured_from_store(study: Study, store: Store, catalogue: ScoringCatalogue,
                        unplanned: Mapping[tuple[str, str], str] | None = None,
                        unrunnable: Sequence[Unplannable] = ()) -> dict[tuple[str, str, str, str], Measured]:
    """Our figures for every published row of ``study`` in each of its arms. ``unplanned``: why a
    (workload id, adapter) pair is not planned now, and ``unrunnable``: the cells that cannot be
    planned at all (``rlcompare.cli.study.study_plan``), said for rows the store has no run of."""
    data = store_scoring_data(store, catalogue, MeasurementCache(None))
    current = data.runs
    results: dict[str, CriterionResult | str] = {}
    for metric in sorted({row.metric for row in study.published}):
        criterion = catalogue.criteria.get(metric)
        results[metric] = (f"criterion {metric!r} is not installed" if criterion is None
                           else criterion.compute(data))
    table: dict[tuple[str, str, str, str], Measured] = {}
    for arm in (arm for arm in ARMS if arm in study.arms):
        for row in study.published:
            if row.adapter is None:
                continue
            workload_id = study.workload_id(row.cell, arm)
            result = results[row.metric]
            if isinstance(result, str):
                table[(arm, row.cell, row.adapter, row.metric)] = Measured(missing=result)
                continue
            values = result.values
            mine = values[(values["adapter"] == row.adapter) & (values["workload_id"] == workload_id)]
            numbers = tuple(float(value) for value in mine.sort_values("seed")["value"])
            reason = _missing_reason(result, row.adapter, workload_id)
            runs = current[(current["adapter"] == row.adapter) & (current["workload_id"] == workload_id)]
            unfinished = runs[runs["status"].astype(str) != "ok"].sort_values("seed")
            never = sum(1 for value in numbers if math.isinf(value))
            censored = None
            if numbers and not unfinished.empty:
                # a figure over the seeds that finished would hide the others (a framework that fails
                # on hard seeds would look better for it)
                said = ", ".join(f"seed {int(run.seed)} {run.status}" for run in unfinished.itertuples())
                reason = f"{len(unfinished)} of {len(unfinished) + len(numbers)} seeds did not finish ({said})"
            elif numbers and len(numbers) < study.seeds:
                reason = (f"{len(numbers)} of the study's {study.seeds} seeds were run (`rlcompare study run "
                          f"{study.id}` runs the others)")
            elif never:
                reason = (f"{never} of {len(numbers)} seeds never reached the threshold within the budget "
                          "(their time is unknown)")
                if never == len(numbers) and row.metric == "time_to_threshold_steps":
                    censored = float(study.cell(row.cell).env_steps)  # every seed of the study lies above it
            elif not numbers and reason is None:
                cannot = [cell for cell in unrunnable if cell.concerns(row.cell, arm, row.adapter)]
                if not runs.empty:
                    reason = "no finished run: " + ", ".join(sorted(set(runs["status"].astype(str))))
                elif (workload_id, row.adapter) in (unplanned or {}):
                    reason = f"not planned: {(unplanned or {})[(workload_id, row.adapter)]}"
                elif cannot:
                    reason = f"cannot be planned: {cannot[0].describe()}"
                else:
                    reason = "not run"
            resolution = 0.0
            if row.metric == "time_to_threshold_steps" and reason is None:
                resolution = float(max((data.evaluation_interval(digest) or 0 for digest in runs["workload_digest"]),
                                       default=0))
            table[(arm, row.cell, row.adapter, row.metric)] = Measured(numbers if reason is None else (), reason,
                                                                       resolution, censored)
    return table
