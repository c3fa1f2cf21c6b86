"""The framework registry: a versioned, sourced catalogue of open-source RL frameworks.

Each framework is one TOML file in ``rlcompare/frameworks/``; plugins contribute entries through
the ``rlcompare_register_frameworks`` hook (see :mod:`rlcompare.builtin_frameworks`). Every fact
carries its own sources (URL, ``doi:...`` or ``arXiv:...``) and an as-of date, and ``"unknown"`` is
a legitimate value: a fact nobody could establish is recorded as unknown, never guessed.

The vocabulary of the taxonomy fields (architecture, simulation and computing parallelism,
synchronization) follows the survey "Acceleration for Deep Reinforcement Learning using Parallel and
Distributed Computing" (Liu, Xu, Qiao, Li; ACM CSUR 2024, doi:10.1145/3703453).

This module only needs pydantic and tomllib: listing frameworks must stay light. pandas is imported
inside :func:`feature_matrix` and :func:`registry_frame` only.
"""

from __future__ import annotations

import difflib
import functools
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rlcompare.errors import UnknownNameError, UsageError

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
UNKNOWN = "unknown"
FRAMEWORK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
#: Where the built-in entries live, relative to the ``rlcompare`` package.
BUILTIN_DIRECTORY = "frameworks"


class InvalidFrameworkEntryError(UsageError):
    """A registry entry that does not validate; the message names the file and the field."""


# -------------------------------------------------------------------------------------------------
# vocabulary
# -------------------------------------------------------------------------------------------------

BACKENDS = ("pytorch", "tensorflow", "jax", "mindspore", "paddlepaddle", "numpy", "warp", "agnostic")

#: The survey's learning-system architectures, plus ``non-distributed`` for libraries that have
#: one learner process and no actor/learner split (environments may still run in sub-processes).
ARCHITECTURES = ("centralized", "decentralized", "gossip", "fine-grained", "non-distributed")
SIMULATION_PARALLELISM = ("vectorized-cpu", "async-env-pool", "gpu-batch")
COMPUTING_PARALLELISM = ("multi-process", "multi-thread", "multi-node", "multi-gpu", "tpu", "fpga")
SYNCHRONIZATION = ("synchronous", "asynchronous", "stale-synchronous", "hybrid")
DOCS = ("site", "repository", "none")
TYPE_HINTS = ("checked", "annotated", "none")

#: The survey's taxonomy dimensions: the columns of :func:`feature_matrix`.
TAXONOMY_FIELDS: dict[str, tuple[str, ...]] = {
    "architecture": ARCHITECTURES,
    "simulation_parallelism": SIMULATION_PARALLELISM,
    "computing_parallelism": COMPUTING_PARALLELISM,
    "synchronization": SYNCHRONIZATION,
}
FEATURE_FIELDS = ("multi_agent", "offline_rl", "evolutionary")

ALGORITHM_PATTERN = re.compile(r"^[A-Z0-9][A-Z0-9+-]*$")
ENV_API_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
SPDX_PATTERN = re.compile(r"^[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*$")


@dataclass(frozen=True)
class FieldSpec:
    """What values one fact accepts; ``kind`` picks the check in :func:`_check_value`."""

    kind: Literal["bool", "year", "text", "url", "spdx", "choice", "choices", "names"]
    description: str
    allowed: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    may_be_unknown: bool = True
    extra_values: tuple[str, ...] = ()  # accepted besides the kind's values, e.g. "none" for homepage


#: Every fact of an entry, in display order. Keys are what ``--where`` and the JSON output use.
FIELDS: dict[str, FieldSpec] = {
    "in_survey": FieldSpec("bool", "Compared among the 16 libraries of the survey (doi:10.1145/3703453)."),
    "repository": FieldSpec("url", "Source repository.", may_be_unknown=False),
    "homepage": FieldSpec("url", "Project or documentation home page.", extra_values=("none",)),
    "licence": FieldSpec("spdx", "SPDX licence identifier.", pattern=SPDX_PATTERN),
    "institution": FieldSpec("text", "Institution that created or maintains it."),
    "first_release_year": FieldSpec("year", "Year of the first public release or the paper releasing it."),
    "backend": FieldSpec("choices", "Deep-learning backends.", allowed=BACKENDS),
    "algorithms": FieldSpec("names", "Algorithms shipped, canonical upper-case names.", pattern=ALGORITHM_PATTERN),
    "multi_agent": FieldSpec("bool", "Multi-agent RL support."),
    "offline_rl": FieldSpec("bool", "Offline (batch) RL support."),
    "evolutionary": FieldSpec("bool", "Evolutionary or population-based methods (ES, GA, CEM, PBT)."),
    "architecture": FieldSpec("choices", "Learning-system architecture.", allowed=ARCHITECTURES),
    "simulation_parallelism": FieldSpec("choices", "How environments run in parallel.",
                                        allowed=SIMULATION_PARALLELISM),
    "computing_parallelism": FieldSpec("choices", "Parallel hardware it uses.", allowed=COMPUTING_PARALLELISM),
    "synchronization": FieldSpec("choices", "How acting and learning synchronise.", allowed=SYNCHRONIZATION),
    "env_apis": FieldSpec("names", "Environment interfaces supported.", pattern=ENV_API_PATTERN),
    "docs": FieldSpec("choice", "Documentation: a hosted site, files in the repository, or none.", allowed=DOCS),
    "type_hints": FieldSpec("choice", "Type hints: checked in CI, annotated, or none.", allowed=TYPE_HINTS),
    "tests": FieldSpec("bool", "Has an automated test suite."),
    "coverage_reported": FieldSpec("bool", "Publishes test-coverage measurements."),
    "ci": FieldSpec("bool", "Runs continuous integration."),
}
LIST_KINDS = ("choices", "names")

#: Friendly spellings accepted by ``--where``.
KEY_ALIASES = {"license": "licence", "backends": "backend", "algorithm": "algorithms", "env_api": "env_apis"}
#: Plain (unsourced) attributes that ``--where`` can also filter on.
PLAIN_KEYS = ("id", "name")


# -------------------------------------------------------------------------------------------------
# sources
# -------------------------------------------------------------------------------------------------

DOI_PATTERN = re.compile(r"^doi:10\.\d{4,9}/\S+$", re.IGNORECASE)
ARXIV_PATTERN = re.compile(r"^arXiv:(\d{4}\.\d{4,5}(v\d+)?|[a-z-]+(\.[A-Z]{2})?/\d{7}(v\d+)?)$")


def is_well_formed_url(text: str) -> bool:
    """An absolute http(s) URL with a dotted host and no whitespace."""
    if any(char.isspace() for char in text):
        return False
    parsed = urlparse(text)
    host = parsed.hostname or ""
    return parsed.scheme in ("http", "https") and "." in host and not host.startswith(".")


def source_kind(text: str) -> Literal["url", "doi", "arxiv"] | None:
    """Which kind of source ``text`` is, or ``None`` when it is none of them."""
    if DOI_PATTERN.match(text):
        return "doi"
    if ARXIV_PATTERN.match(text):
        return "arxiv"
    if is_well_formed_url(text):
        return "url"
    return None


# -------------------------------------------------------------------------------------------------
# schema
# -------------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fact(_Strict):
    """One sourced statement: its value, where it comes from, and when it was checked."""

    value: Any = Field(description="The value, or 'unknown'.")
    sources: tuple[str, ...] = Field(min_length=1, description="URLs, 'doi:...' or 'arXiv:...' ids.")
    as_of: date = Field(description="When the sources were checked.")
    note: str = Field("", description="Why the value is what it is, caveats.")
    complete: bool = Field(
        False, description="For lists: the sources give the whole set, so anything absent is absent."
    )

    @field_validator("value")
    @classmethod
    def _freeze_lists(cls, value: Any) -> Any:
        # Entries are immutable and shared (cached): lists become tuples.
        return tuple(value) if isinstance(value, list) else value

    @field_validator("sources")
    @classmethod
    def _well_formed_sources(cls, sources: tuple[str, ...]) -> tuple[str, ...]:
        for source in sources:
            if source_kind(source) is None:
                raise ValueError(
                    f"{source!r} is not a URL (http/https), a DOI ('doi:10.…') or an arXiv id ('arXiv:…')"
                )
        return sources

    @property
    def is_unknown(self) -> bool:
        return isinstance(self.value, str) and self.value == UNKNOWN

    def __str__(self) -> str:
        # Readers that only want the value (reports, criteria) can format a fact directly.
        if isinstance(self.value, tuple):
            return ", ".join(self.value)
        return str(self.value)


class FrameworkEntry(_Strict):
    """One framework of the registry. Every field but ``id``, ``name`` and ``notes`` is a :class:`Fact`."""

    schema_version: Literal[1] = Field(SCHEMA_VERSION, description="Version of this entry format.")
    id: str = Field(pattern=FRAMEWORK_ID_PATTERN, description="What users type, e.g. 'stable-baselines3'.")
    name: str = Field(min_length=1, description="Display name.")
    notes: str = Field("", description="Free text: scope, caveats, naming decisions.")
    in_survey: Fact
    repository: Fact
    homepage: Fact
    licence: Fact
    institution: Fact
    first_release_year: Fact
    backend: Fact
    algorithms: Fact
    multi_agent: Fact
    offline_rl: Fact
    evolutionary: Fact
    architecture: Fact
    simulation_parallelism: Fact
    computing_parallelism: Fact
    synchronization: Fact
    env_apis: Fact
    docs: Fact
    type_hints: Fact
    tests: Fact
    coverage_reported: Fact
    ci: Fact

    @model_validator(mode="after")
    def _valid_values(self) -> FrameworkEntry:
        for name, spec in FIELDS.items():
            fact: Fact = getattr(self, name)
            problem = _check_value(spec, fact)
            if problem:
                raise ValueError(f"field '{name}.value': {problem}")
        return self

    def fact(self, name: str) -> Fact:
        if name not in FIELDS:
            raise UnknownNameError("registry field", name, FIELDS)
        return getattr(self, name)

    def value(self, name: str) -> Any:
        """The value of a fact, or of ``id`` / ``name``."""
        if name in PLAIN_KEYS:
            return getattr(self, name)
        return self.fact(name).value

    def facts(self) -> dict[str, Fact]:
        return {name: getattr(self, name) for name in FIELDS}

    def plain_values(self) -> dict[str, Any]:
        """``id``, ``name`` and every fact's bare value (lists as tuples, or 'unknown')."""
        return {"id": self.id, "name": self.name, **{name: fact.value for name, fact in self.facts().items()}}

    @property
    def taxonomy(self) -> dict[str, Any]:
        """The survey's four taxonomy dimensions, bare values."""
        return {name: getattr(self, name).value for name in TAXONOMY_FIELDS}

    def sources(self) -> list[str]:
        """Every distinct source of the entry, in field order."""
        seen: dict[str, None] = {}
        for fact in self.facts().values():
            seen.update(dict.fromkeys(fact.sources))
        return list(seen)

    def to_json_dict(self) -> dict[str, Any]:
        """Plain values at the top level; per field: ``sources``, ``as_of``, and notes where given."""
        data: dict[str, Any] = {"id": self.id, "name": self.name, "schema_version": self.schema_version,
                                "notes": self.notes}
        sources: dict[str, list[str]] = {}
        as_of: dict[str, str] = {}
        fact_notes: dict[str, str] = {}
        complete: list[str] = []
        for name, fact in self.facts().items():
            data[name] = list(fact.value) if isinstance(fact.value, tuple) else fact.value
            sources[name] = list(fact.sources)
            as_of[name] = fact.as_of.isoformat()
            if fact.note:
                fact_notes[name] = fact.note
            if fact.complete:
                complete.append(name)
        data.update(sources=sources, as_of=as_of, fact_notes=fact_notes, complete=complete)
        return data


def _check_value(spec: FieldSpec, fact: Fact) -> str | None:
    """A one-line problem with ``fact.value`` under ``spec``, or ``None`` when it is valid."""
    value = fact.value
    if isinstance(value, str) and value == UNKNOWN:
        if not spec.may_be_unknown:
            return "must be known, 'unknown' is not accepted here"
        if fact.complete:
            return "'complete' applies to known lists only"
        return None
    if fact.complete and spec.kind not in LIST_KINDS:
        return "'complete' applies to list values only"
    if isinstance(value, str) and value in spec.extra_values:
        return None
    kind = spec.kind
    if kind == "bool":
        return None if isinstance(value, bool) else f"expected true, false or 'unknown', got {value!r}"
    if kind == "year":
        if isinstance(value, bool) or not isinstance(value, int) or not 1980 <= value <= 2100:
            return f"expected a year (e.g. 2019) or 'unknown', got {value!r}"
        return None
    if not isinstance(value, (str, list, tuple)):
        return f"unexpected value {value!r}"
    if kind in ("text", "url", "spdx", "choice"):
        if not isinstance(value, str) or not value.strip():
            return f"expected a non-empty string or 'unknown', got {value!r}"
        if kind == "url" and not is_well_formed_url(value):
            return f"{value!r} is not an http(s) URL"
        if kind == "spdx" and spec.pattern is not None and not spec.pattern.match(value):
            return f"{value!r} is not an SPDX licence expression (e.g. 'MIT', 'Apache-2.0')"
        if kind == "choice":
            return _choice_problem(value, spec.allowed)
        return None
    # list kinds
    if not isinstance(value, (list, tuple)):
        return f"expected a list or 'unknown', got {value!r}"
    seen: set[str] = set()
    for item in value:
        if not isinstance(item, str):
            return f"list items must be strings, got {item!r}"
        if item in seen:
            return f"{item!r} is listed twice"
        seen.add(item)
        if kind == "choices":
            problem = _choice_problem(item, spec.allowed)
            if problem:
                return problem
        elif spec.pattern is not None and not spec.pattern.match(item):
            return f"{item!r} does not match {spec.pattern.pattern}"
    return None


def _choice_problem(value: str, allowed: Sequence[str]) -> str | None:
    if value in allowed:
        return None
    message = f"{value!r} is not one of {', '.join(allowed)}"
    close = difflib.get_close_matches(value, allowed, n=1, cutoff=0.5)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message


# -------------------------------------------------------------------------------------------------
# loading
# -------------------------------------------------------------------------------------------------


def framework_entry_from_dict(data: Any, source: str, default_as_of: date | None = None) -> FrameworkEntry:
    """Validate one entry; raise :class:`InvalidFrameworkEntryError` naming ``source`` and the field.

    A top-level ``as_of`` (a date) is the default for every fact that does not give its own.
    """
    if not isinstance(data, Mapping):
        raise InvalidFrameworkEntryError(f"{source}: an entry must be a table, got {type(data).__name__}")
    data = dict(data)
    if "schema_version" in data and data["schema_version"] != SCHEMA_VERSION:
        raise InvalidFrameworkEntryError(
            f"{source}: field 'schema_version': unsupported version {data['schema_version']!r} "
            f"(this rlcompare reads version {SCHEMA_VERSION})"
        )
    file_as_of = data.pop("as_of", default_as_of)
    if isinstance(file_as_of, str):  # JSON and Python callers write dates as ISO strings
        try:
            file_as_of = date.fromisoformat(file_as_of)
        except ValueError:
            pass
    if file_as_of is not None and not isinstance(file_as_of, date):
        raise InvalidFrameworkEntryError(f"{source}: field 'as_of': expected a date (YYYY-MM-DD), got {file_as_of!r}")
    for name in FIELDS:
        fact = data.get(name)
        if isinstance(fact, Mapping) and "as_of" not in fact and file_as_of is not None:
            data[name] = {**fact, "as_of": file_as_of}
    try:
        return FrameworkEntry.model_validate(data)
    except ValidationError as exc:
        raise InvalidFrameworkEntryError(f"{source}: {describe_validation_error(exc)}") from None


def load_framework_file(path: str | Path) -> FrameworkEntry:
    """Read one entry from a TOML file whose stem must equal the entry's ``id``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidFrameworkEntryError(f"{path}: cannot read registry entry ({exc.strerror})") from None
    return _entry_from_text(text, str(path), path.stem)


def _entry_from_text(text: str, source: str, stem: str) -> FrameworkEntry:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidFrameworkEntryError(f"{source}: not valid TOML ({exc})") from None
    entry = framework_entry_from_dict(data, source)
    if entry.id != stem:
        raise InvalidFrameworkEntryError(f"{source}: field 'id': {entry.id!r} does not match the file name {stem!r}")
    return entry


def builtin_framework_files() -> list[Any]:
    """The packaged entry files (``importlib.resources`` traversables), sorted by name."""
    directory = resources.files("rlcompare") / BUILTIN_DIRECTORY
    return sorted((item for item in directory.iterdir() if item.name.endswith(".toml")),
                  key=lambda item: item.name.removesuffix(".toml"))


def load_framework_resource(item: Any) -> FrameworkEntry:
    """Read one packaged entry (an ``importlib.resources`` traversable, zip-safe)."""
    return _entry_from_text(item.read_text(encoding="utf-8"), str(item), item.name.removesuffix(".toml"))


@functools.cache
def load_builtin_entries() -> tuple[FrameworkEntry, ...]:
    """Every built-in entry; the first invalid file raises, naming the file and the field."""
    return tuple(load_framework_resource(item) for item in builtin_framework_files())


def describe_validation_error(exc: ValidationError) -> str:
    """One line for the first error: the dotted field path, what was expected, what was given."""
    errors = exc.errors()
    first = errors[0]
    loc = [str(part) for part in first["loc"]]
    field = ".".join(loc)
    kind = first["type"]
    if kind == "missing":
        message = f"field '{field}' is required"
        if len(loc) == 2 and loc[1] in ("value", "sources", "as_of"):
            message += " (each fact is a table with value, sources and as_of)"
    elif kind == "model_type":
        message = f"field '{field}': expected a table with value, sources and as_of (got {first['input']!r})"
    elif kind == "extra_forbidden":
        message = f"field '{field}' is not a known setting"
        known = list(Fact.model_fields) if len(loc) == 2 else [*FrameworkEntry.model_fields, "as_of"]
        close = difflib.get_close_matches(loc[-1], known, n=1)
        if close:
            message += f"; did you mean '{close[0]}'?"
    else:
        text = first["msg"].removeprefix("Value error, ")
        message = f"{text}" if not field else f"field '{field}': {text}"
        if "input" in first and kind not in ("value_error",) and not isinstance(first["input"], dict):
            message += f" (got {first['input']!r})"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return message


def entries_from_registered(registered: Mapping[str, Any]) -> tuple[dict[str, FrameworkEntry], list[str]]:
    """Entries that plugins registered, by id; a plugin may pass an entry or a plain table.

    Returns the valid entries and one line per rejected one (reported, never fatal for the others).
    """
    entries: dict[str, FrameworkEntry] = {}
    problems: list[str] = []
    for key, raw in sorted(registered.items()):
        if isinstance(raw, FrameworkEntry):
            entries[key] = raw
            continue
        try:
            entries[key] = framework_entry_from_dict(
                raw.model_dump() if isinstance(raw, BaseModel) else raw, f"framework {key!r}"
            )
        except InvalidFrameworkEntryError as error:
            problems.append(str(error))
    return entries, problems


# -------------------------------------------------------------------------------------------------
# filtering
# -------------------------------------------------------------------------------------------------

_TRUE = ("true", "yes", "1")
_FALSE = ("false", "no", "0")


@dataclass(frozen=True)
class Condition:
    """``KEY=VALUE[,VALUE...]`` from ``--where``: the fact matches if any of the values does."""

    key: str
    values: tuple[Any, ...]
    text: str

    def matches(self, entry: FrameworkEntry) -> bool:
        return any(_matches(entry.value(self.key), wanted) for wanted in self.values)


def _matches(actual: Any, wanted: Any) -> bool:
    if wanted == UNKNOWN:
        return isinstance(actual, str) and actual == UNKNOWN
    if isinstance(actual, (list, tuple)):
        return any(str(item).casefold() == str(wanted).casefold() for item in actual)
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return actual is wanted
    if isinstance(actual, int):
        return actual == wanted
    return str(actual).casefold() == str(wanted).casefold()


def where_keys() -> list[str]:
    return [*PLAIN_KEYS, *FIELDS]


def parse_condition(text: str) -> Condition:
    """Parse and check one ``KEY=VALUE`` expression; bad input raises a one-line usage error."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--where {text!r}: expected KEY=VALUE, e.g. synchronization=asynchronous")
    key = KEY_ALIASES.get(key, key)
    if key not in where_keys():
        raise UnknownNameError("--where key", key, where_keys(), "rlcompare frameworks --help")
    values = [part.strip() for part in raw.split(",")]
    if not all(values):
        raise UsageError(f"--where {text!r}: expected a value after '{key}=' (comma-separated for any of several)")
    return Condition(key, tuple(_parse_value(key, value, text) for value in values), text)


def _parse_value(key: str, value: str, text: str) -> Any:
    if value.casefold() == UNKNOWN:
        return UNKNOWN
    spec = FIELDS.get(key)
    if spec is None:  # id, name
        return value
    if spec.kind == "bool":
        if value.casefold() in _TRUE:
            return True
        if value.casefold() in _FALSE:
            return False
        raise UsageError(f"--where {text!r}: '{key}' takes true, false or unknown, got {value!r}")
    if spec.kind == "year":
        if not value.isdigit():
            raise UsageError(f"--where {text!r}: '{key}' takes a year, got {value!r}")
        return int(value)
    if spec.kind in ("choice", "choices"):
        folded = {choice.casefold(): choice for choice in (*spec.allowed, *spec.extra_values)}
        if value.casefold() in folded:
            return folded[value.casefold()]
        problem = _choice_problem(value, spec.allowed) or ""
        raise UsageError(f"--where {text!r}: '{key}' value {problem}")
    return value


def filter_entries(entries: Iterable[FrameworkEntry], conditions: Iterable[str | Condition]) -> list[FrameworkEntry]:
    """Entries matching every condition (conditions are ANDed; comma-separated values are ORed)."""
    parsed = [c if isinstance(c, Condition) else parse_condition(c) for c in conditions]
    return [entry for entry in entries if all(condition.matches(entry) for condition in parsed)]


# -------------------------------------------------------------------------------------------------
# tables for reports and criteria
# -------------------------------------------------------------------------------------------------


def feature_matrix(
    entries: Iterable[FrameworkEntry] | None = None,
    dimensions: Iterable[str] = tuple(TAXONOMY_FIELDS),
    include_features: bool = True,
) -> pd.DataFrame:
    """Frameworks x taxonomy as a DataFrame of nullable booleans.

    Rows are framework ids; columns are a MultiIndex ``(dimension, value)``, e.g.
    ``("synchronization", "asynchronous")``. A cell is True when the sources list the value, False
    when the fact is ``complete`` and does not list it, and <NA> otherwise: an unlisted value of an
    incomplete list is not evidence of absence. With ``include_features``, the boolean facts
    (multi-agent, offline RL, evolutionary) follow as ``("features", name)`` columns.
    """
    import pandas as pd

    entries = list(load_builtin_entries() if entries is None else entries)
    dimensions = list(dimensions)
    for dimension in dimensions:
        if dimension not in TAXONOMY_FIELDS:
            raise UnknownNameError("taxonomy dimension", dimension, TAXONOMY_FIELDS)
    columns = [(dimension, value) for dimension in dimensions for value in TAXONOMY_FIELDS[dimension]]
    if include_features:
        columns += [("features", name) for name in FEATURE_FIELDS]
    rows = []
    for entry in entries:
        row: list[bool | None] = []
        for dimension, value in columns:
            fact = entry.fact(value if dimension == "features" else dimension)
            if fact.is_unknown:
                row.append(None)
            elif dimension == "features":
                row.append(fact.value)
            elif value in fact.value:
                row.append(True)
            else:
                row.append(False if fact.complete else None)
        rows.append(row)
    frame = pd.DataFrame(rows, index=pd.Index([e.id for e in entries], name="framework"),
                         columns=pd.MultiIndex.from_tuples(columns, names=["dimension", "value"]))
    return frame.astype("boolean")


def registry_frame(entries: Iterable[FrameworkEntry] | None = None) -> pd.DataFrame:
    """One row per framework, one column per fact value (lists as Python lists); for reports."""
    import pandas as pd

    entries = list(load_builtin_entries() if entries is None else entries)
    records = []
    for entry in entries:
        record: dict[str, Any] = {"id": entry.id, "name": entry.name}
        for name, fact in entry.facts().items():
            record[name] = list(fact.value) if isinstance(fact.value, tuple) else fact.value
        records.append(record)
    return pd.DataFrame.from_records(records, columns=["id", "name", *FIELDS]).set_index("id")
