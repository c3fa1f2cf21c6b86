"""What ``rlcompare plan`` shows of each adapter x workload pair before anything runs: the budget grain
the adapter declared and the window the family allows, and the adapter's fidelity report with the
fidelity share it would score (:mod:`rlcompare.spec.settings`), so an author sees both before a run."""

from __future__ import annotations

from typing import Any

from rlcompare.harness.validity import BudgetTolerance
from rlcompare.plan.matrix import Plan, PlannedRun
from rlcompare.spec.settings import fidelity_share


def grain_view(run: PlannedRun) -> dict[str, Any]:
    """The run's declared budget tolerance, the family's, and the env steps it may end at."""
    declared = run.budget_tolerance
    low, high = declared.window(run.workload.env_steps)
    return {"declared": declared.to_dict(), "allowed": BudgetTolerance.for_workload(run.workload).to_dict(),
            "window": [low, high]}


def grain_text(run: PlannedRun) -> str:
    """``rollout+-256`` : the grain a run's budget is judged at."""
    declared = run.budget_tolerance
    return f"{declared.granularity}+-{declared.overshoot_steps}"


def pair_views(plan: Plan) -> list[dict[str, Any]]:
    """One entry per planned (workload, adapter) pair: its grain, its fidelity report as declared (the
    parity probe corrects it when the matrix runs) and the fidelity share that report scores, as
    declared if the probe verifies the family's update and if it does not; then the refused pairs."""
    pairs: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for run in plan.runs:
        key = (run.workload.id, run.adapter_id)
        if key in seen:
            continue
        seen.add(key)
        names = list(type(run.workload.hyperparameters).model_fields)
        language = run.workload.language_model is not None
        entries = [dict(entry) for entry in run.fidelity]
        pairs.append({
            "workload": run.workload.id, "adapter": run.adapter_id, "framework": run.framework, "refused": None,
            "grain": grain_view(run), "fidelity": entries,
            "setting_fidelity": {"if_verified": fidelity_share(entries, names, True, language),
                                 "if_unverified": fidelity_share(entries, names, False, language)},
        })
    for refused in plan.refused:
        pairs.append({"workload": refused.workload.id, "adapter": refused.adapter_id, "framework": refused.framework,
                      "refused": refused.reason, "grain": None, "fidelity": [], "setting_fidelity": None})
    return pairs
