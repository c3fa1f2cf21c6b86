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

:func:`read_bundle` trusts nothing in the file before checking it: it reads at most
:data:`MAX_BUNDLE_BYTES` (inflated, for gzip) and holds the document to its schema
(:mod:`rlcompare.reporting.bundle_schema`), so a hostile file is one line, never a traceback, a hang
or an allocation failure. :func:`verify_bundle` recomputes the digest from ``inputs``, the citation
and the matrix from the inputs, and names what differs: the digest (and which part of the inputs,
which runs), the citation's fields, the stated section and run digests, and each score.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import io
import json
import math
import os
import stat
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import rlcompare
from rlcompare.errors import UsageError
from rlcompare.reporting.bundle_schema import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    MAX_DEPTH,
    SECTIONS,
    InvalidBundleError,
    check_bundle,
)
from rlcompare.reporting.canonical import canonical, digest
from rlcompare.reporting.citation import Citation, citation_of
from rlcompare.reporting.inputs import BundleError, ScoringInputs, score_inputs
from rlcompare.reporting.output_folder import write_files
from rlcompare.scoring.criteria import ScoringCatalogue

if TYPE_CHECKING:
    from rlcompare.scoring.engine import ScoreMatrix

#: Most bytes a bundle file may hold, and most its gzip may inflate to: far above a matrix of every
#: framework on a hundred workloads (tens of MB), far below what fills a machine's memory.
MAX_BUNDLE_BYTES = 256 * 2**20
#: Bytes read (or inflated) at a time, so that a limit is noticed before memory is spent past it.
READ_CHUNK = 2**20
_GZIP_MAGIC = b"\x1f\x8b"
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
    # a temporary file beside it, moved into place; a link planted at either name is replaced, never followed
    write_files(path.parent, {path.name: payload}, option="--out")
    return path


def read_bundle(path: str | Path) -> Bundle:
    """A bundle from ``path``; a file that is not one, or not a well-formed one, is a
    :class:`UsageError` naming the file and the field (exit status 2). Nothing is trusted before it
    is checked: the file and what it inflates to are read up to :data:`MAX_BUNDLE_BYTES`, the JSON
    nests at most :data:`MAX_DEPTH` deep, and every field has its type and range
    (:func:`rlcompare.reporting.bundle_schema.check_bundle`) before anything is computed from it."""
    path = Path(path)
    try:
        document = _parse(path, _payload(path))
        if not isinstance(document, dict) or document.get("format") != BUNDLE_FORMAT:
            raise UsageError(f"{path}: not an rlcompare bundle (format is not {BUNDLE_FORMAT!r})")
        version = document.get("bundle_version")
        if version != BUNDLE_VERSION or isinstance(version, bool):
            raise UsageError(f"{path}: bundle_version {version!r}, this rlcompare reads {BUNDLE_VERSION}")
        try:
            check_bundle(document)
        except InvalidBundleError as error:
            raise InvalidBundleError(f"{path}: {error}") from None
        raw = document["inputs"]
        try:
            inputs = ScoringInputs.from_dict(raw)
        except BundleError as error:
            raise UsageError(f"{path}: {error}") from None
    except MemoryError:
        raise UsageError(f"{path}: too large to read in the memory available") from None
    return Bundle(inputs, raw, document["digest"], document["matrix"], dict(document["sections"]),
                  dict(document["run_digests"]),
                  {k: v for k, v in document.items() if k not in ("inputs", "matrix", "run_digests")})


def _size(count: int) -> str:
    return f"{count // 2**20} MiB" if count >= 2**20 and count % 2**20 == 0 else f"{count} bytes"


def _read_at_most(stream: BinaryIO, limit: int) -> bytearray | None:
    """Everything ``stream`` holds, or None when that is more than ``limit`` bytes (read in chunks:
    no more than ``limit`` plus one chunk is ever held)."""
    data = bytearray()
    while chunk := stream.read(min(READ_CHUNK, limit + 1 - len(data))):
        data += chunk
        if len(data) > limit:
            return None
    return data


def _payload(path: Path) -> bytearray:
    """The bytes of the bundle at ``path``, inflated when gzip, at most :data:`MAX_BUNDLE_BYTES`."""
    limit = MAX_BUNDLE_BYTES
    try:
        # not blocking: a named pipe with nobody writing to it reads as empty instead of waiting forever
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise UsageError(f"{path}: {_size(info.st_size)}, larger than a bundle may be ({_size(limit)})")
            payload = _read_at_most(handle, limit)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if payload is None:
        raise UsageError(f"{path}: larger than a bundle may be ({_size(limit)})")
    if payload[:2] != _GZIP_MAGIC:
        return payload
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(payload)) as packed:
            inflated = _read_at_most(packed, limit)
    except (OSError, EOFError, zlib.error) as exc:
        raise UsageError(f"{path}: not an rlcompare bundle (not gzip: {exc})") from None
    if inflated is None:
        raise UsageError(f"{path}: inflates to more than a bundle may be ({_size(limit)})")
    return inflated


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(path: Path, payload: bytearray) -> Any:
    """The JSON document in ``payload`` (UTF-8; NaN and Infinity, which JSON has not, refused)."""
    try:
        text = payload.decode("utf-8")
        payload.clear()  # the bytes are not needed beside their text: half the memory
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise UsageError(f"{path}: not an rlcompare bundle (nested deeper than {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not an rlcompare bundle (not JSON: {exc})") from None


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
    #: What the bundle states about its inputs besides the digest (its citation, version, and the
    #: digests of its sections and runs) that the inputs do not bear out.
    statement_differences: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The matrix recomputed from the inputs (None when it could not be).
    recomputed: ScoreMatrix | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return (self.digest == self.stated_digest and not self.score_differences and not self.statement_differences
                and not self.problems)

    def lines(self) -> list[str]:
        """What verify prints, one difference list per line; names from the bundle cannot break a
        line or send a terminal control sequence."""
        return [_printable(line) for line in self._lines()]

    def _lines(self) -> list[str]:
        if self.ok:
            return [f"{self.path}: verified: digest {self.digest}, its citation, and all {self.score_count} values "
                    f"of the matrix recomputed from its inputs match", *[f"  {note}" for note in self.notes]]
        lines = [f"{self.path}: does NOT verify"]
        if self.digest != self.stated_digest:
            lines.append(f"  digest differs: stated {self.stated_digest}, recomputed {self.digest}")
            if self.changed_sections:
                lines.append(f"  inputs changed: {', '.join(self.changed_sections)}")
            if self.changed_runs:
                shown = self.changed_runs[:SHOWN_DIFFERENCES]
                more = len(self.changed_runs) - len(shown)
                lines.append(f"  runs changed: {', '.join(shown)}" + (f" and {more} more" if more > 0 else ""))
        if self.statement_differences:
            lines.append(_listed("citation and digests differ from the inputs", self.statement_differences, "entries"))
        if self.score_differences:
            lines.append(_listed("scores differ", self.score_differences, "numbers"))
        lines += [f"  {problem}" for problem in [*self.problems, *self.notes]]
        return lines


def _printable(text: str) -> str:
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _listed(what: str, differences: list[str], unit: str) -> str:
    shown = differences[:SHOWN_DIFFERENCES]
    return (f"  {what} ({len(differences)} {unit}): " + "; ".join(shown)
            + ("; ..." if len(differences) > len(shown) else ""))


def verify_bundle(path: str | Path, catalogue: ScoringCatalogue) -> Verification:
    """Recompute the digest, the citation and the matrix of the bundle at ``path`` and compare each
    with what the bundle states."""
    bundle = read_bundle(path)
    recomputed = digest(canonical(bundle.raw_inputs))
    result = Verification(str(path), bundle.digest, recomputed)
    sections = {name: digest(bundle.raw_inputs.get(name)) for name in SECTIONS}
    runs = _run_digests(bundle.raw_inputs)
    changed_sections = [name for name in SECTIONS if bundle.sections.get(name) != sections[name]]
    changed_runs = sorted([run for run, value in runs.items() if bundle.run_digests.get(run) != value]
                          + [run for run in bundle.run_digests if run not in runs])
    if recomputed != bundle.digest:
        result.changed_sections, result.changed_runs = changed_sections, changed_runs
    else:  # the inputs are the ones digested: a section or run digest that differs was edited
        result.statement_differences += [f"sections.{name}: stated {bundle.sections.get(name)}, recomputed "
                                         f"{sections[name]}" for name in changed_sections]
        result.statement_differences += [f"run_digests.{run}: stated {bundle.run_digests.get(run)}, recomputed "
                                         f"{runs.get(run)}" for run in changed_runs]
    if bundle.header["rlcompare_version"] != bundle.inputs.rlcompare_version:
        result.statement_differences.append(
            f"rlcompare_version: stated {bundle.header['rlcompare_version']}, recomputed {bundle.inputs.rlcompare_version}")

    if bundle.inputs.rlcompare_version != rlcompare.__version__:
        result.notes.append(f"note: computed by rlcompare {bundle.inputs.rlcompare_version}, verified with "
                               f"{rlcompare.__version__}")
    matrix: ScoreMatrix | None = None
    try:
        matrix = score_inputs(bundle.inputs, catalogue)
    except BundleError as error:
        result.problems.append(f"scores cannot be recomputed: {error}")
    except (KeyError, TypeError, ValueError) as exc:
        result.problems.append(f"scores cannot be recomputed: inputs are malformed ({type(exc).__name__}: {exc})")
    stated_citation = bundle.header["citation"]
    _compare(stated_citation, _citation(bundle, recomputed, matrix), "citation", result.statement_differences)
    if matrix is None:
        return result
    result.recomputed = matrix
    differences: list[str] = []
    result.score_count = _compare(canonical(bundle.matrix), canonical(matrix.to_dict()), "", differences)
    result.score_differences = differences
    return result


def _citation(bundle: Bundle, recomputed_digest: str, matrix: ScoreMatrix | None) -> dict[str, Any]:
    """The citation of the bundle's inputs, as data. Its authors are whom the bundle names (no input
    says who they are). Where the matrix cannot be recomputed (the bundle then fails anyway) only
    what the inputs alone give is recomputed: the digest, the key made from it, and the version."""
    stated = bundle.header["citation"]
    if matrix is None:
        short = Citation(recomputed_digest, "", (), (), (), "", 0, dt.date(1970, 1, 1)).key
        return {**stated, "digest": recomputed_digest, "key": short,
                "rlcompare_version": bundle.inputs.rlcompare_version}
    citation = citation_of(bundle.inputs, matrix, stated["authors"])
    return dataclasses.replace(citation, digest=recomputed_digest).to_dict()


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
    return text if len(text) <= 80 else text[:77] + "..."
