"""The framework's licence, classed by the obligations it puts on users' code."""

from __future__ import annotations

import re

from rlcompare.scoring.criteria import ALL_WORKLOADS, CriterionResult, ScoringData
from rlcompare_criteria.adapter_lookup import (
    Missing,
    Row,
    framework_distribution,
    installation_for,
    registry_entry,
    registry_value,
)
from rlcompare_criteria.installations import MAIN, Installation

#: Licence classes and their scores: how much use the licence permits without obligations on the
#: user's own code (permissive 1, weak copyleft 0.75, strong copyleft 0.5, network copyleft 0.25).
#: Checked in this order, as whole words, so that "LGPL" is not read as "GPL".
LICENCE_CLASSES: tuple[tuple[str, float, str], ...] = (
    ("network copyleft", 0.25, r"agpl|affero"),
    ("weak copyleft", 0.75, r"lgpl|lesser general|mpl|mozilla|epl|eclipse public"),
    ("strong copyleft", 0.5, r"gpl|general public licen[cs]e"),
    ("permissive", 1.0, r"mit|bsd|apache|isc|zlib|unlicense|psf|python software foundation|cc0|bsl"),
)


def classify_licence(text: str) -> tuple[str, float] | None:
    """(class, score) of a licence name or SPDX expression, or None when it is not recognised."""
    lowered = text.lower()
    for name, score, pattern in LICENCE_CLASSES:
        if re.search(rf"(?<![a-z])(?:{pattern})(?:v?\d)?(?![a-z])", lowered):
            return name, score
    return None


def _metadata_licence(distribution: str, installation: Installation = MAIN) -> str | None:
    found = installation.distribution(distribution)
    if found is None:
        return None
    metadata = found.metadata
    expression = metadata.get("License-Expression")
    if expression:
        return expression
    text = (metadata.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= 80:  # a name, not the licence's full text
        return text
    for classifier in metadata.get_all("Classifier") or []:
        if classifier.startswith("License :: ") and classifier.split(" :: ")[-1] != "OSI Approved":
            return classifier.split(" :: ")[-1]
    return None


def licence(data: ScoringData) -> CriterionResult:
    rows: list[Row] = []
    missing: list[Missing] = []
    labels: dict[tuple[str, str], str] = {}
    notes: dict[tuple[str, str], str] = {}
    for adapter_id in data.adapters:
        key = (adapter_id, ALL_WORKLOADS)
        entry, registry_reason = registry_entry(data, adapter_id)
        text = None
        if entry is not None:
            text, registry_reason = registry_value(entry, ("licence",))
        source = "registry"
        if text is None:
            name, _, package_reason = framework_distribution(data, adapter_id)
            installation, _ = installation_for(data, adapter_id)
            text = _metadata_licence(name, installation or MAIN) if name else None
            source = "package metadata"
            if text is None:
                reasons = [registry_reason or "the registry entry has no licence",
                           package_reason or "its package metadata names none"]
                missing.append((*key, "; ".join(reasons)))
                continue
        text = str(text)
        classified = classify_licence(text)
        if classified is None:
            missing.append((*key, f"licence {text!r} is not one the scoring classifies"))
            continue
        rows.append((*key, 0, classified[1]))
        labels[key] = text
        if source == "package metadata":
            source = f"package metadata of {name}"
        notes[key] = f"{classified[0]}, from the {source}"
    return CriterionResult.build(rows, missing, labels=labels, notes=notes)
