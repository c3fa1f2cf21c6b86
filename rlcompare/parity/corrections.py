"""What the parity verdicts change in a run's fidelity report: the probe corrects the report instead
of trusting it.

- a variant that explains a difference becomes a fidelity entry with the framework's real value
  (an entry the adapter declared for the same setting turns ``approximate``, with the finding in its
  note);
- a difference no variant explains is an ``unsupported`` entry ``parity.<family>``;
- an update the probe could not check is an ``approximate`` entry ``parity.<family>`` with the
  reason (declared but unverified), a verified one an ``exact`` entry.

The *standing* of an adapter on a family summarizes its verdicts for ranking: ``verified`` (every
probe verified, or differs with a named variant), ``unverified`` (a probe unverifiable, failed, or
not run) or ``unexplained`` (a probe differs and no known variant explains it);
``not-applicable`` for families that make no gradient update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlcompare.parity.reference import ReferenceUpdate
from rlcompare.parity.verdict import DIFFERS, VERIFIED

NOT_APPLICABLE = "not-applicable"
STANDINGS = ("unexplained", "unverified", "verified", NOT_APPLICABLE)
#: Rank tier of each standing: an adapter never ranks above one of a higher tier.
STANDING_TIER = {"unexplained": 0, "unverified": 1, "verified": 2, NOT_APPLICABLE: 2}


def standing(verdicts: Sequence[Mapping[str, Any]] | None) -> str:
    """The standing of one (adapter, family) from its verdicts (``None``: not probed)."""
    if verdicts is None:
        return "unverified"
    statuses = [verdict.get("status") for verdict in verdicts]
    if statuses and all(status == NOT_APPLICABLE for status in statuses):
        return NOT_APPLICABLE
    if any(verdict.get("status") == DIFFERS and not verdict.get("variant") for verdict in verdicts):
        return "unexplained"
    if statuses and all(status == VERIFIED or (status == DIFFERS and verdict.get("variant"))
                        for status, verdict in zip(statuses, verdicts, strict=True)):
        return "verified"
    return "unverified"


def not_applicable(adapter: str, family: str) -> dict[str, Any]:
    """The verdict recorded for a family that makes no gradient update to probe (ES)."""
    return {"adapter": adapter, "family": family, "case": "-", "status": NOT_APPLICABLE,
            "reason": f"{family} makes no gradient update", "variant": []}


def corrected_fidelity(entries: Sequence[Mapping[str, Any]], verdicts: Sequence[Mapping[str, Any]],
                       reference: ReferenceUpdate | None, family: str) -> list[dict[str, Any]]:
    """``entries`` (a run's fidelity report, plain data) corrected by the parity ``verdicts``."""
    corrected = [dict(entry) for entry in entries]
    by_setting = {entry["setting"]: entry for entry in corrected}
    state = standing(verdicts)
    if state == NOT_APPLICABLE:
        return corrected
    found: dict[str, list[str]] = {}
    for verdict in verdicts:
        for name in verdict.get("variant") or ():
            found.setdefault(name, []).append(str(verdict.get("case")))
    for name, cases in found.items():
        variant = reference.variants.get(name) if reference is not None else None
        if variant is None:
            continue
        note = f"parity probe ({', '.join(cases)}): {variant.description}"
        declared = by_setting.get(variant.setting)
        if declared is not None:
            if declared.get("status") == "exact":
                declared["status"] = "approximate"
            declared["note"] = f"{declared.get('note') or ''}; {note}".lstrip("; ")
            declared.setdefault("native_value", variant.framework)
            continue
        entry = {"setting": variant.setting, "value": variant.canonical, "status": "approximate",
                 "native_name": None, "native_value": variant.framework, "note": note}
        corrected.append(entry)
        by_setting[variant.setting] = entry
    summary = "; ".join(f"{v.get('case')}: {v.get('summary') or v.get('reason') or v.get('status')}" for v in verdicts)
    status = {"verified": "exact", "unverified": "approximate", "unexplained": "unsupported"}[state]
    note = {"verified": "the framework's own update matches the reference (or differs as the entries above say)",
            "unverified": "declared, not verified by the parity probe",
            "unexplained": "the framework's update differs from the reference and no known variant explains it"}[state]
    corrected.append({"setting": f"parity.{family}", "value": "the reference update", "status": status,
                      "native_name": None, "native_value": state, "note": f"{note} ({summary})"[:600]})
    return corrected
