"""Comparing a framework's update with the reference: ``verified``, or ``differs`` with the variant
that explains the difference (or none), or ``unverifiable`` with the adapter's reason.

Three parts are compared, each where the adapter returned it: the targets (advantages and returns,
or TD targets), the gradient the optimizer received, and the change one optimizer step made to
every parameter. Each part's error is the relative error of the worst array,
``||framework - reference|| / ||reference||``, against a tolerance that float32 arithmetic in the
framework stays well inside (float64 in the reference): 1e-4 for targets, 2e-3 for gradients, 5e-3
for parameter changes. The gradient is the sharp instrument: Adam's first step moves every
parameter by about ``lr * sign(gradient)``, so the update alone barely sees a loss scaled by two.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rlcompare.harness.parity import RAN, ParityOutcome, ParityProbe
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate

VERIFIED = "verified"
DIFFERS = "differs"
UNVERIFIABLE = "unverifiable"
FAILED = "failed"
STATUSES = (VERIFIED, DIFFERS, UNVERIFIABLE, FAILED)

#: Part -> relative tolerance (see the module docstring).
TOLERANCES: dict[str, float] = {"targets": 1e-4, "gradients": 2e-3, "updates": 5e-3}
#: Below this norm a reference array counts as zero (its error is then absolute).
FLOOR = 1e-6


@dataclass(frozen=True)
class PartCheck:
    """One part of the comparison: the worst array's relative error against the tolerance."""

    part: str
    error: float
    tolerance: float
    worst: str
    missing: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.missing and self.error <= self.tolerance

    def describe(self) -> str:
        if self.missing:
            return f"{self.part}: missing {', '.join(self.missing[:4])}"
        return f"{self.part}: {self.error:.2g} (tolerance {self.tolerance:g}, worst {self.worst})"


@dataclass(frozen=True)
class ParityVerdict:
    """The verdict on one (adapter, family, probe case)."""

    adapter: str
    family: str
    case: str
    status: str
    #: The variants under which the reference matches the framework (``differs``), else empty.
    variant: tuple[str, ...] = ()
    reason: str = ""
    checks: tuple[PartCheck, ...] = ()
    #: Other variant sets of the same size that match as well, by increasing error.
    alternatives: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    probe_digest: str = ""
    losses: dict[str, float] = field(default_factory=dict)

    @property
    def explained(self) -> bool:
        """verified, or differs with a named variant."""
        return self.status == VERIFIED or (self.status == DIFFERS and bool(self.variant))

    def summary(self) -> str:
        """One line: the status and what it rests on."""
        if self.status == VERIFIED:
            return "verified (" + "; ".join(check.describe() for check in self.checks) + ")"
        if self.status == DIFFERS:
            if self.variant:
                return f"differs: matches the reference with {' + '.join(self.variant)}"
            return "differs, and no known variant explains it (" + "; ".join(
                check.describe() for check in self.checks if not check.ok) + ")"
        return f"{self.status}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["variant"] = list(self.variant)
        data["alternatives"] = [list(item) for item in self.alternatives]
        data["summary"] = self.summary()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParityVerdict:
        checks = tuple(PartCheck(c["part"], float(c["error"]), float(c["tolerance"]), str(c["worst"]),
                                 tuple(c.get("missing") or ())) for c in data.get("checks") or ())
        return cls(adapter=str(data["adapter"]), family=str(data["family"]), case=str(data["case"]),
                   status=str(data["status"]), variant=tuple(data.get("variant") or ()),
                   reason=str(data.get("reason") or ""), checks=checks,
                   alternatives=tuple(tuple(item) for item in data.get("alternatives") or ()),
                   notes=tuple(data.get("notes") or ()), defaults=dict(data.get("defaults") or {}),
                   versions=dict(data.get("versions") or {}), probe_digest=str(data.get("probe_digest") or ""),
                   losses=dict(data.get("losses") or {}))


def compare(outcome: ParityOutcome, expected: ParityOutcome, probe: ParityProbe) -> tuple[PartCheck, ...]:
    """Each part the framework returned, checked against the reference's."""
    checks = []
    if outcome.targets:
        checks.append(_check("targets", outcome.targets, expected.targets))
    if outcome.gradients:
        checks.append(_check("gradients", outcome.gradients, expected.gradients))
    if outcome.updated:
        changes = {name: np.asarray(value) - probe.weights[name] for name, value in outcome.updated.items()
                   if name in probe.weights}
        reference = {name: np.asarray(value) - probe.weights[name] for name, value in expected.updated.items()}
        checks.append(_check("updates", changes, reference))
    return tuple(checks)


def _check(part: str, actual: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray]) -> PartCheck:
    missing = tuple(sorted(name for name in reference if name not in actual))
    worst, error = "", 0.0
    for name, value in reference.items():
        if name not in actual:
            continue
        got = np.asarray(actual[name], dtype=np.float64)
        want = np.asarray(value, dtype=np.float64)
        if got.shape != want.shape:
            if got.size == want.size:
                got = got.reshape(want.shape)
            else:
                return PartCheck(part, float("inf"), TOLERANCES[part], f"{name} (shape {got.shape}, not {want.shape})")
        norm = float(np.linalg.norm(want))
        relative = float(np.linalg.norm(got - want)) / max(norm, FLOOR)
        if relative > error or not worst:
            worst, error = name, relative
    return PartCheck(part, error, TOLERANCES[part], worst, missing)


def judge(reference: ReferenceUpdate, case: ProbeCase, probe: ParityProbe, outcome: ParityOutcome,
          adapter: str, versions: Mapping[str, str | None] | None = None,
          declared: frozenset[str] = frozenset()) -> ParityVerdict:
    """The verdict on ``outcome``: compared with the canonical update; if it differs, with the
    reference under the variants the adapter's fidelity report ``declared`` (all of them at once:
    a framework may depart in more ways than a search can combine; of a matching set, the variants
    the probe cannot see are dropped), then under every variant set of
    one, then two, then three variants. Among the matching sets of the smallest size, the one with
    the smallest error (relative to tolerance) is reported, the others are alternatives."""
    base: dict[str, Any] = {"adapter": adapter, "family": reference.family, "case": case.name,
                            "notes": outcome.notes, "defaults": dict(outcome.defaults),
                            "versions": dict(versions or {}), "probe_digest": probe.digest(),
                            "losses": dict(outcome.losses)}
    if outcome.status != RAN:
        return ParityVerdict(status=UNVERIFIABLE, reason=outcome.reason or "no reason given", **base)
    if not (outcome.targets or outcome.gradients or outcome.updated):
        return ParityVerdict(status=UNVERIFIABLE, reason="the adapter returned no targets, gradients or updated "
                                                         "weights", **base)
    checks = compare(outcome, reference.expected(probe), probe)
    if all(check.ok for check in checks):
        return ParityVerdict(status=VERIFIED, checks=checks, **base)
    usable = frozenset(name for name in declared if name in reference.variants and name not in case.excluded)
    if usable and _matches(reference, probe, outcome, usable):
        for name in sorted(usable):  # keep only what this probe shows: a declared variant it cannot see is not proven
            if len(usable) > 1 and _matches(reference, probe, outcome, usable - {name}):
                usable = usable - {name}
        return ParityVerdict(status=DIFFERS, variant=tuple(sorted(usable)), checks=checks, **base)
    matches: list[tuple[float, tuple[str, ...]]] = []
    for variants in reference.variant_sets(case):
        if matches and len(variants) > len(matches[0][1]):
            break  # the smallest explanation wins
        found = compare(outcome, reference.expected(probe, variants), probe)
        if all(check.ok for check in found):
            matches.append((max(check.error / check.tolerance for check in found), tuple(sorted(variants))))
    if matches:
        ranked = [variant for _, variant in sorted(matches)]
        return ParityVerdict(status=DIFFERS, variant=ranked[0], alternatives=tuple(ranked[1:]), checks=checks, **base)
    return ParityVerdict(status=DIFFERS, checks=checks, reason="no known variant explains the difference", **base)


def _matches(reference: ReferenceUpdate, probe: ParityProbe, outcome: ParityOutcome, variants: frozenset[str]) -> bool:
    return all(check.ok for check in compare(outcome, reference.expected(probe, variants), probe))
