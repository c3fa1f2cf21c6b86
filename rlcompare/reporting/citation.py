"""Citations of a scoring matrix: BibTeX, CITATION.cff and one line of text.

A citation names the matrix by its content digest (:meth:`ScoringInputs.digest`: sha256 over what
the matrix was computed from) and the rlcompare version that computed it, so a reader holding the
bundle can check (``rlcompare verify``) that it is the matrix cited. Its date is when the newest
run finished, not when the citation was printed: citing the same matrix twice gives the same text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlcompare.reporting.escape import bibtex as bibtex_field
from rlcompare.reporting.escape import visible, yaml_string

if TYPE_CHECKING:
    from rlcompare.reporting.inputs import ScoringInputs
    from rlcompare.scoring.engine import ScoreMatrix

CITATION_FORMATS = ("bibtex", "cff", "text")
DEFAULT_AUTHOR = "rlcompare"


@dataclass(frozen=True)
class Citation:
    """What a citation of one matrix says."""

    digest: str
    rlcompare_version: str
    adapters: tuple[str, ...]
    frameworks: tuple[str, ...]
    workloads: tuple[str, ...]
    profile: str
    runs: int
    date: dt.date
    authors: tuple[str, ...] = field(default=(DEFAULT_AUTHOR,))

    @property
    def short_digest(self) -> str:
        return self.digest.split(":", 1)[-1][:12]

    @property
    def key(self) -> str:
        return f"rlcompare_{self.short_digest}"

    @property
    def title(self) -> str:
        workloads = ", ".join(self.workloads) if len(self.workloads) <= 4 else f"{len(self.workloads)} workloads"
        return (f"rlcompare scoring matrix: {', '.join(self.adapters)} on {workloads} "
                f"({self.profile} profile)")

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "digest": self.digest,
                "rlcompare_version": self.rlcompare_version, "adapters": list(self.adapters),
                "frameworks": list(self.frameworks), "workloads": list(self.workloads), "profile": self.profile,
                "runs": self.runs, "date": self.date.isoformat(), "authors": list(self.authors)}

    # -- formats ------------------------------------------------------------------------------------

    def bibtex(self) -> str:
        """A ``@misc`` entry; every field escaped for LaTeX with its braces balanced
        (:func:`rlcompare.reporting.escape.bibtex`), so no name can end a field or add one; the
        title's capitals kept by braces, each author braced (an ``and`` in a name stays in it)."""
        fields = [
            ("title", "{" + bibtex_field(self.title) + "}"),
            ("author", " and ".join("{" + bibtex_field(a) + "}" for a in self.authors)),
            ("year", str(self.date.year)),
            ("month", self.date.strftime("%b").lower()),
            ("howpublished", bibtex_field(f"rlcompare {self.rlcompare_version} scoring matrix")),
            ("version", bibtex_field(self.digest)),
            ("note", bibtex_field(f"Content digest {self.digest}; {self.runs} runs of "
                           f"{', '.join(self.frameworks)}; computed by rlcompare {self.rlcompare_version}; "
                           f"check with rlcompare verify")),
        ]
        body = ",\n".join(f"  {name} = {{{value}}}" if name != "month" else f"  {name} = {value}"
                          for name, value in fields)
        return f"@misc{{{self.key},\n{body}\n}}\n"

    def cff(self) -> str:
        """CITATION.cff (version 1.2.0) of the matrix as a dataset; every scalar one line with
        nothing hidden, double-quoted (:func:`rlcompare.reporting.escape.yaml_string`)."""
        q = yaml_string

        lines = [
            "cff-version: 1.2.0",
            f"message: {q('If you use this scoring matrix, please cite it as below; rlcompare verify checks a bundle against its digest.')}",
            "type: dataset",
            f"title: {q(self.title)}",
            "authors:",
            *[f"  - name: {q(author)}" for author in self.authors],
            f"version: {q(self.digest)}",
            f"date-released: {q(self.date.isoformat())}",
            "identifiers:",
            "  - type: other",
            f"    value: {q(self.digest)}",
            f"    description: {q('sha256 content digest of the runs, curves, measurements, weight profile and options the matrix was computed from')}",
            "keywords:",
            *[f"  - {q(word)}" for word in ("reinforcement learning", "benchmark", *self.frameworks)],
            f"abstract: {q(self.text())}",
        ]
        return "\n".join(lines) + "\n"

    def text(self) -> str:
        """One line of text, nothing hidden (:func:`rlcompare.reporting.escape.visible`)."""
        authors = ", ".join(self.authors)
        return visible(f"{authors} ({self.date.year}). {self.title}. rlcompare {self.rlcompare_version}, "
                       f"{self.runs} runs, content digest {self.digest}.")

    def render(self, format_name: str) -> str:
        if format_name == "bibtex":
            return self.bibtex()
        if format_name == "cff":
            return self.cff()
        return self.text() + "\n"


def citation_of(inputs: ScoringInputs, matrix: ScoreMatrix, authors: Sequence[str] = ()) -> Citation:
    """The citation of ``matrix``, computed from ``inputs``."""
    finished = [row["finished_at"] for row in inputs.runs if isinstance(row.get("finished_at"), (int, float))]
    when = dt.datetime.fromtimestamp(max(finished), dt.UTC).date() if finished else dt.date(1970, 1, 1)
    started = [row for row in inputs.runs if row.get("status") != "unsupported"]
    return Citation(
        digest=inputs.digest(), rlcompare_version=inputs.rlcompare_version, adapters=tuple(matrix.adapters),
        frameworks=tuple(sorted(set(matrix.frameworks.values()))), workloads=tuple(matrix.workloads),
        profile=matrix.profile.name, runs=len(started), date=when,
        authors=tuple(authors) or (DEFAULT_AUTHOR,),
    )
