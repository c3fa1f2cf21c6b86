"""The registry's evidence and facts: where a statement was read, a verbatim excerpt, and its value.

An :class:`Evidence` item is exactly one of three shapes: a repository file at a commit, a web page
on a date, or a paper at a locator, always with the excerpt that supports the fact. A :class:`Fact`
holds a value (or ``"unknown"`` with what was searched) and its evidence. Which values a fact
accepts depends on its field and is checked by :mod:`rlcompare.registry.entries`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from datetime import date
from typing import Any, Literal
from urllib.parse import quote, urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rlcompare.registry.vocabulary import Survey

UNKNOWN = "unknown"
#: Longest excerpt an evidence item may quote.
MAX_EXCERPT_CHARS = 300


# -------------------------------------------------------------------------------------------------
# evidence
# -------------------------------------------------------------------------------------------------

REPO_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
COMMIT_PATTERN = re.compile(r"^[0-9a-f]{40}$")
DOI_PATTERN = re.compile(r"^10\.\d{4,9}/\S+$")
ARXIV_PATTERN = re.compile(r"^(\d{4}\.\d{4,5}(v\d+)?|[a-z-]+(\.[A-Z]{2})?/\d{7}(v\d+)?)$")
EVIDENCE_SHAPES: dict[str, tuple[str, ...]] = {
    "repository": ("repo", "commit", "path"),
    "web": ("url", "accessed"),
    "paper": ("doi", "arxiv", "locator"),
    # a statement by the framework's own authors, for a framework without public code: never verified
    "author": ("author", "stated"),
}
#: How outputs say that a fact rests only on its authors' word.
AUTHOR_STATED = "stated by its authors, not verified"


def is_well_formed_url(text: str) -> bool:
    """An absolute http(s) URL with a dotted host and no whitespace."""
    if any(char.isspace() for char in text):
        return False
    parsed = urlparse(text)
    host = parsed.hostname or ""
    return parsed.scheme in ("http", "https") and "." in host and not host.startswith(".")


def normalize_whitespace(text: str) -> str:
    """Runs of whitespace as one space, ends stripped: how excerpts are compared with their source."""
    return " ".join(text.split())


def _not_in_future(value: date | None, what: str) -> date | None:
    if value is not None and value > date.today():
        raise ValueError(f"{what} {value.isoformat()} is in the future")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Evidence(_Strict):
    """Where a fact was read, and a verbatim excerpt from there that supports it.

    Exactly one shape: a repository file (``repo``, ``commit``, ``path``), a web page (``url``,
    ``accessed``) or a paper (``doi`` or ``arxiv``, and ``locator``).
    """

    repo: str | None = Field(None, description="GitHub owner/name.")
    commit: str | None = Field(None, description="The 40-hex commit the file was read at.")
    path: str | None = Field(None, description="File inside the repository.")
    url: str | None = Field(None, description="http(s) address of the page.")
    accessed: date | None = Field(None, description="When the page was read.")
    doi: str | None = Field(None, description="DOI, e.g. 10.1145/3703453.")
    arxiv: str | None = Field(None, description="arXiv id, e.g. 2411.05614.")
    locator: str | None = Field(None, description="Where in the paper: 'Table 3', 'Section 4.2, p. 12'.")
    author: str | None = Field(None, max_length=200,
                               description="Who of the framework's authors states it (a name and role).")
    stated: date | None = Field(None, description="When they stated it.")
    excerpt: str = Field(description="Verbatim text from the source that supports the fact.")

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str | None) -> str | None:
        if value is not None and not REPO_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a GitHub owner/name")
        return value

    @field_validator("commit")
    @classmethod
    def _commit(cls, value: str | None) -> str | None:
        if value is not None and not COMMIT_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a full commit id (40 lower-case hex digits)")
        return value

    @field_validator("path")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or value.startswith("/") or value != value.strip()):
            raise ValueError(f"{value!r} is not a file path inside the repository")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not is_well_formed_url(value):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value

    @field_validator("accessed")
    @classmethod
    def _accessed(cls, value: date | None) -> date | None:
        return _not_in_future(value, "access date")

    @field_validator("stated")
    @classmethod
    def _stated(cls, value: date | None) -> date | None:
        return _not_in_future(value, "statement date")

    @field_validator("author")
    @classmethod
    def _author(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must name who states it (a name and role)")
        return value

    @field_validator("doi")
    @classmethod
    def _doi(cls, value: str | None) -> str | None:
        if value is not None and not DOI_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a DOI (e.g. '10.1145/3703453', without 'doi:')")
        return value

    @field_validator("arxiv")
    @classmethod
    def _arxiv(cls, value: str | None) -> str | None:
        if value is not None and not ARXIV_PATTERN.match(value):
            raise ValueError(f"{value!r} is not an arXiv id (e.g. '2411.05614', without 'arXiv:')")
        return value

    @field_validator("excerpt")
    @classmethod
    def _excerpt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must quote the source (a non-empty verbatim excerpt)")
        if len(value) > MAX_EXCERPT_CHARS:
            raise ValueError(f"is {len(value)} characters; quote at most {MAX_EXCERPT_CHARS}")
        return value

    @model_validator(mode="after")
    def _one_shape(self) -> Evidence:
        given = {name for shape in EVIDENCE_SHAPES.values() for name in shape if getattr(self, name) is not None}
        shapes = [shape for shape, names in EVIDENCE_SHAPES.items() if given & set(names)]
        if len(shapes) != 1:
            raise ValueError(
                "an evidence item is exactly one of: a repository file (repo, commit, path), a web page "
                "(url, accessed), a paper (doi or arxiv, locator) or an authors' statement (author, stated); "
                f"got {', '.join(sorted(given)) or 'none of them'}"
            )
        shape = shapes[0]
        if shape == "paper":
            needed = ["locator"] + ([] if self.doi or self.arxiv else ["doi or arxiv"])
            if self.doi and self.arxiv:
                raise ValueError("a paper is cited by doi or by arxiv, not both (use two evidence items)")
        else:
            needed = list(EVIDENCE_SHAPES[shape])
        lacking = [name for name in needed if " or " in name or getattr(self, name) is None]
        if lacking:
            what = {"repository": "repository file", "author": "statement of the authors"}.get(shape, shape)
            raise ValueError(f"a {what} needs "
                             f"{', '.join(repr(name) for name in lacking)}")
        return self

    @property
    def kind(self) -> Literal["repository", "web", "paper", "author"]:
        if self.repo is not None:
            return "repository"
        if self.author is not None:
            return "author"
        return "web" if self.url is not None else "paper"

    @property
    def source(self) -> str:
        """The source as one citable string: a permalink, a URL, or a DOI/arXiv id with the locator."""
        if self.kind == "repository":
            return f"https://github.com/{self.repo}/blob/{self.commit}/{quote(str(self.path))}"
        if self.kind == "web":
            return str(self.url)
        if self.kind == "author":
            return f"{AUTHOR_STATED}: {self.author}, {self.stated.isoformat() if self.stated else ''}"
        paper = f"doi:{self.doi}" if self.doi else f"arXiv:{self.arxiv}"
        return f"{paper}, {self.locator}"

    def describe(self) -> str:
        """The source with its date where it has one (``rlcompare show framework``)."""
        if self.kind == "web" and self.accessed is not None:
            return f"{self.source} (accessed {self.accessed.isoformat()})"
        return self.source

    def to_json_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in type(self).model_fields if getattr(self, name) is not None}
        if self.accessed is not None:
            data["accessed"] = self.accessed.isoformat()
        if self.stated is not None:
            data["stated"] = self.stated.isoformat()
        return {"kind": self.kind, "source": self.source, **data}


def survey_evidence(survey: Survey, evidence: Evidence) -> bool:
    """Whether ``evidence`` is read from ``survey`` itself (its paper, page or source file)."""
    if evidence.kind == "paper":
        return (evidence.doi is not None and evidence.doi == survey.doi) or (
            evidence.arxiv is not None and survey.arxiv is not None
            and evidence.arxiv.split("v")[0] == survey.arxiv)
    if evidence.kind == "web":
        return any(str(evidence.url).rstrip("/").startswith(url.rstrip("/")) for url in survey.urls)
    return (evidence.repo, evidence.path) in survey.files


class Release(_Strict):
    """A published release: its version and its date."""

    version: str = Field(min_length=1)
    date: dt.date

    @field_validator("date")
    @classmethod
    def _date(cls, value: dt.date) -> dt.date:
        return _not_in_future(value, "release date")  # type: ignore[return-value]

    def __str__(self) -> str:
        return f"{self.version} ({self.date.isoformat()})"


class Absence(_Strict):
    """A claim that something is *not* in a repository at a commit, made checkable: ``text`` does not
    occur in ``path`` (compared case-insensitively, whitespace collapsed), or, without ``text``, there
    is no file ``path``. The evidence checker re-reads the file at the commit (``docs/registry.md``)."""

    repo: str = Field(description="GitHub owner/name.")
    commit: str = Field(description="The 40-hex commit the claim is about.")
    path: str = Field(description="The file read (or the file that does not exist).")
    text: str | None = Field(None, min_length=1, max_length=MAX_EXCERPT_CHARS,
                             description="What the file does not contain; omitted: the file does not exist.")

    _repo = field_validator("repo")(Evidence._repo.__func__)  # type: ignore[attr-defined]
    _commit = field_validator("commit")(Evidence._commit.__func__)  # type: ignore[attr-defined]
    _path = field_validator("path")(Evidence._path.__func__)  # type: ignore[attr-defined]

    def describe(self) -> str:
        where = f"{self.repo}@{self.commit[:12]}:{self.path}"
        return f"no file {where}" if self.text is None else f"{self.text!r} not in {where}"


class Fact(_Strict):
    """One statement: its value, the evidence for it, and when that evidence was checked."""

    value: Any = Field(description="The value, or 'unknown'.")
    evidence: tuple[Evidence, ...] = Field((), description="Sources with verbatim excerpts.")
    as_of: date = Field(description="When the evidence was checked.")
    note: str = Field("", description="Why the value is what it is, caveats.")
    searched: str = Field("", description="For 'unknown': what was searched, where, and found nothing.")
    complete: bool = Field(
        False, description="For lists: the evidence gives the whole set, so anything absent is absent."
    )
    absent: tuple[Absence, ...] = Field(
        (), description="What a 'searched' note or an absence says is not in the repository, re-checkable.")

    @field_validator("value")
    @classmethod
    def _freeze(cls, value: Any) -> Any:
        # Entries are immutable and shared (cached): lists become tuples, a release table a Release.
        if isinstance(value, list):
            return tuple(value)
        if isinstance(value, Mapping):
            try:
                return Release.model_validate(value)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                raise ValueError(f"a release is a table {{ version = \"1.2.0\", date = 2025-07-25 }} ({problems})") from None
        return value

    @field_validator("as_of")
    @classmethod
    def _as_of(cls, value: date) -> date:
        return _not_in_future(value, "as_of")  # type: ignore[return-value]

    @property
    def is_unknown(self) -> bool:
        return isinstance(self.value, str) and self.value == UNKNOWN

    @property
    def author_stated(self) -> bool:
        """Whether the fact rests on its authors' statements alone (never verified against a source)."""
        return bool(self.evidence) and all(item.kind == "author" for item in self.evidence)

    @property
    def sources(self) -> tuple[str, ...]:
        """Each distinct source of the evidence, as a string (permalink, URL, or paper and locator)."""
        return tuple(dict.fromkeys(item.source for item in self.evidence))

    def json_value(self) -> Any:
        if isinstance(self.value, tuple):
            return list(self.value)
        if isinstance(self.value, Release):
            return {"version": self.value.version, "date": self.value.date.isoformat()}
        return self.value

    def __str__(self) -> str:
        # Readers that only want the value (reports, criteria) can format a fact directly.
        if isinstance(self.value, tuple):
            return ", ".join(self.value)
        return str(self.value)
