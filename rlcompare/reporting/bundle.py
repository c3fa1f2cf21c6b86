"""Bundles: one file holding everything a scoring matrix was computed from, the matrix, and its digest.

A bundle is one JSON document (gzip-compressed when its name ends in ``.gz``)::

    {"format": "rlcompare-bundle", "bundle_version": 1,
     "digest": "sha256:...",            # of "inputs", canonical serialization
     "rlcompare_version": "...", "created": "...", "source": {"store": "..."},
     "citation": {...},                 # what `rlcompare cite` prints, as data
     "sections": {"runs": "sha256:...", ...},   # digest of each part of the inputs, to say what changed
     "run_digests": {"RUN_ID": "sha256:..."},   # each run's row and curve, likewise
     "inputs": {runs, curves, workloads, hosts, criteria, measurements, profile, options, ...},
     "matrix": {...}}                   # the scoring matrix, as `rlcompare score --json` prints it

``inputs`` is :class:`rlcompare.reporting.inputs.ScoringInputs` in canonical form: the runs (every
stored column: figures, fidelity, versions, validity, native configuration), their evaluation
curves, each workload spec and host fingerprint once, the criteria with the plugin and
distribution of each, the development measurements, the weight profile and the options.

:func:`verify_bundle` recomputes the digest from ``inputs`` and the matrix from the inputs, and
names what differs: the digest (and which part of the inputs, which runs), and each score.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rlcompare
from rlcompare.errors import UsageError
from rlcompare.reporting.canonical import canonical, digest
from rlcompare.reporting.citation import Citation
from rlcompare.reporting.inputs import BundleError, ScoringInputs, score_inputs
from rlcompare.scoring.criteria import ScoringCatalogue

if TYPE_CHECKING:
    from rlcompare.scoring.engine import ScoreMatrix

BUNDLE_FORMAT = "rlcompare-bundle"
BUNDLE_VERSION = 1
#: Input sections, each digested on its own so that verify can say which changed.
SECTIONS = ("runs", "curves", "workloads", "hosts", "criteria", "measurements", "profile", "options",
            "rlcompare_version", "inputs_version")
#: Scores agree when they differ by less than this (relative), whatever the BLAS summation order.
RELATIVE_TOLERANCE = 1e-9
#: Differences named per verify line at most.
SHOWN_DIFFERENCES = 8


@dataclass
class Bundle:
    """A bundle read from a file: the inputs, and what it states about them."""

    inputs: ScoringInputs
    raw_inputs: dict[str, Any]
    digest: str
    matrix: dict[str, Any]
    sections: dict[str, str] = field(default_factory=dict)
    run_digests: dict[str, str] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)


def _run_digests(inputs: Mapping[str, Any]) -> dict[str, str]:
    curves: dict[str, list[Any]] = {}
    for point in inputs.get("curves", []):
        curves.setdefault(str(point.get("run_id")), []).append(point)
    return {str(run["run_id"]): digest({"run": run, "curve": curves.get(str(run["run_id"]), [])})
            for run in inputs.get("runs", [])}


def bundle_document(inputs: ScoringInputs, matrix: ScoreMatrix, citation: Citation, source: str) -> dict[str, Any]:
    data = inputs.to_dict()
    return {
        "format": BUNDLE_FORMAT, "bundle_version": BUNDLE_VERSION, "digest": digest(data, is_canonical=True),
        "rlcompare_version": inputs.rlcompare_version,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "source": {"store": source},
        "citation": citation.to_dict(),
        "sections": {name: digest(data.get(name), is_canonical=True) for name in SECTIONS},
        "run_digests": _run_digests(data),
        "inputs": data,
        "matrix": canonical(matrix.to_dict()),
    }


def write_bundle(path: str | Path, document: Mapping[str, Any]) -> Path:
    """Write ``document`` to ``path`` (gzip when it ends in ``.gz``), replacing it whole or not at all."""
    path = Path(path)
    text = json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"
    payload = gzip.compress(text, mtime=0) if path.name.endswith(".gz") else text
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    partial.write_bytes(payload)
    os.replace(partial, path)
    return path


def read_bundle(path: str | Path) -> Bundle:
    """A bundle from ``path``; a file that is not one is an error naming the file (exit status 2)."""
    path = Path(path)
    try:
        payload = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        if payload[:2] == b"\x1f\x8b":
            payload = gzip.decompress(payload)
        document = json.loads(payload.decode("utf-8"))
    except (OSError, ValueError, EOFError) as exc:
        raise UsageError(f"{path}: not an rlcompare bundle (not JSON: {exc})") from None
    if not isinstance(document, dict) or document.get("format") != BUNDLE_FORMAT:
        raise UsageError(f"{path}: not an rlcompare bundle (format is not {BUNDLE_FORMAT!r})")
    if document.get("bundle_version") != BUNDLE_VERSION:
        raise UsageError(f"{path}: bundle_version {document.get('bundle_version')!r}, this rlcompare reads "
                         f"{BUNDLE_VERSION}")
    for key in ("digest", "inputs", "matrix"):
        if key not in document:
            raise UsageError(f"{path}: not an rlcompare bundle (no {key!r})")
    raw = document["inputs"]
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: inputs: expected an object")
    try:
        inputs = ScoringInputs.from_dict(raw)
    except BundleError as error:
        raise UsageError(f"{path}: {error}") from None
    return Bundle(inputs, raw, str(document["digest"]), document["matrix"], dict(document.get("sections") or {}),
                  dict(document.get("run_digests") or {}),
                  {k: v for k, v in document.items() if k not in ("inputs", "matrix", "run_digests")})


# -- verifying -----------------------------------------------------------------------------------------


@dataclass
class Verification:
    """What :func:`verify_bundle` found."""

    path: str
    stated_digest: str
    digest: str
    changed_sections: list[str] = field(default_factory=list)
    changed_runs: list[str] = field(default_factory=list)
    score_differences: list[str] = field(default_factory=list)
    score_count: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.digest == self.stated_digest and not self.score_differences and not self.problems

    def lines(self) -> list[str]:
        if self.ok:
            return [f"{self.path}: verified: digest {self.digest} and all {self.score_count} values of the "
                    f"matrix recomputed from its inputs match", *[f"  {note}" for note in self.notes]]
        lines = [f"{self.path}: does NOT verify"]
        if self.digest != self.stated_digest:
            lines.append(f"  digest differs: stated {self.stated_digest}, recomputed {self.digest}")
            if self.changed_sections:
                lines.append(f"  inputs changed: {', '.join(self.changed_sections)}")
            if self.changed_runs:
                shown = self.changed_runs[:SHOWN_DIFFERENCES]
                more = len(self.changed_runs) - len(shown)
                lines.append(f"  runs changed: {', '.join(shown)}" + (f" and {more} more" if more > 0 else ""))
        if self.score_differences:
            shown = self.score_differences[:SHOWN_DIFFERENCES]
            lines.append(f"  scores differ ({len(self.score_differences)} numbers): " + "; ".join(shown)
                         + ("; ..." if len(self.score_differences) > len(shown) else ""))
        lines += [f"  {problem}" for problem in [*self.problems, *self.notes]]
        return lines


def verify_bundle(path: str | Path, catalogue: ScoringCatalogue) -> Verification:
    """Recompute the digest and the matrix of the bundle at ``path`` and compare both."""
    bundle = read_bundle(path)
    recomputed = digest(canonical(bundle.raw_inputs))
    result = Verification(str(path), bundle.digest, recomputed)
    if recomputed != bundle.digest:
        result.changed_sections = [name for name in SECTIONS if name in bundle.sections
                                   and digest(bundle.raw_inputs.get(name)) != bundle.sections[name]]
        now = _run_digests(bundle.raw_inputs)
        result.changed_runs = sorted(
            [run for run, value in now.items() if bundle.run_digests.get(run) != value]
            + [run for run in bundle.run_digests if run not in now])

    if bundle.inputs.rlcompare_version != rlcompare.__version__:
        result.notes.append(f"note: computed by rlcompare {bundle.inputs.rlcompare_version}, verified with "
                               f"{rlcompare.__version__}")
    try:
        matrix = score_inputs(bundle.inputs, catalogue)
    except BundleError as error:
        result.problems.append(f"scores cannot be recomputed: {error}")
        return result
    except (KeyError, TypeError, ValueError) as exc:
        result.problems.append(f"scores cannot be recomputed: inputs are malformed ({type(exc).__name__}: {exc})")
        return result
    differences: list[str] = []
    result.score_count = _compare(canonical(bundle.matrix), canonical(matrix.to_dict()), "", differences)
    result.score_differences = differences
    return result


_KEYS = ("criterion", "adapter", "workload", "x", "y", "id", "run_id")
#: Parts of the matrix compared first, so that the differences shown first are the ones readers cite.
_FIRST = ("adapters", "cells", "scores")


def _label(item: Any, index: int) -> str:
    if isinstance(item, Mapping):
        parts = [str(item[key]) for key in _KEYS if key in item and isinstance(item[key], (str, int))]
        if parts:
            return "[" + ", ".join(parts) + "]"
    return f"[{index}]"


def _compare(stated: Any, recomputed: Any, where: str, out: list[str]) -> int:
    """Compare two canonical documents, appending ``where: stated X, recomputed Y`` for each
    difference; returns the number of leaf values compared."""
    if isinstance(stated, Mapping) and isinstance(recomputed, Mapping):
        count = 0
        keys = sorted(set(stated) | set(recomputed), key=lambda k: (_FIRST.index(k) if k in _FIRST else len(_FIRST), k))
        for key in keys:
            path = f"{where}.{key}" if where else str(key)
            if key not in stated or key not in recomputed:
                out.append(f"{path}: {'missing from the bundle' if key not in stated else 'not recomputed'}")
                continue
            count += _compare(stated[key], recomputed[key], path, out)
        return count
    if isinstance(stated, list) and isinstance(recomputed, list):
        if len(stated) != len(recomputed):
            out.append(f"{where}: {len(stated)} entries stated, {len(recomputed)} recomputed")
        return sum(_compare(s, r, where + _label(s, i), out)
                   for i, (s, r) in enumerate(zip(stated, recomputed, strict=False)))
    if _same(stated, recomputed):
        return 1
    out.append(f"{where}: stated {_show(stated)}, recomputed {_show(recomputed)}")
    return 1


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)
    return a == b


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
