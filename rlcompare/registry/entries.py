"""The framework registry: a versioned catalogue of open-source RL frameworks with checkable provenance.

Each framework is one TOML file in ``rlcompare/registry/frameworks/``; plugins contribute entries through
the ``rlcompare_register_frameworks`` hook (see :mod:`rlcompare.builtins.frameworks`). Every fact
carries its evidence: where it was read (a repository file at a commit, a web page on a date, or a
paper at a table or section) and a short verbatim excerpt that supports it. ``"unknown"`` is a
legitimate value, recorded with what was searched: a fact nobody could establish is never guessed.

An entry's ``domain`` decides which axes it must state: ``control`` entries (classic deep-RL
frameworks) use the taxonomy of the survey "Acceleration for Deep Reinforcement Learning using
Parallel and Distributed Computing" (Liu, Xu, Qiao, Li; ACM CSUR 2024, doi:10.1145/3703453);
``llm`` entries (RL for LLM post-training) use the axes of the 2026 comparisons of those libraries
(:mod:`rlcompare.registry.vocabulary`).

This module only needs pydantic and tomllib: listing frameworks must stay light. pandas is imported
inside :func:`feature_matrix` and :func:`registry_frame` only.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from rlcompare.errors import UnknownNameError, UsageError
from rlcompare.registry.facts import (
    UNKNOWN,
    Evidence,
    Fact,
    Release,
    _Strict,
    is_well_formed_url,
    survey_evidence,
)
from rlcompare.registry.vocabulary import (
    ALGORITHM_PATTERN,
    ARCHITECTURES,
    BACKENDS,
    COMPUTING_PARALLELISM,
    DOCS,
    DOMAINS,
    ENV_API_PATTERN,
    INFERENCE_BACKENDS,
    LORA,
    ORCHESTRATION,
    PARTIAL_ROLLOUTS,
    PLACEMENT,
    ROLLOUT_BUFFER,
    SIMULATION_PARALLELISM,
    SPDX_PATTERN,
    STALENESS,
    SURVEYS,
    SYNCHRONIZATION,
    TRAINING_BACKENDS,
    TYPE_HINTS,
    WEIGHT_SYNC,
)

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 2
FRAMEWORK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
#: Where the built-in entries live, relative to the ``rlcompare`` package.
BUILTIN_DIRECTORY = "frameworks"
#: How many problems one error line names before saying "and N more".
MAX_PROBLEMS_SHOWN = 12


class InvalidFrameworkEntryError(UsageError):
    """A registry entry that does not validate; the message names the file and the field."""


# -------------------------------------------------------------------------------------------------
# fields
# -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """What values one fact accepts; ``kind`` picks the check in :func:`_check_value`."""

    kind: Literal["bool", "year", "text", "url", "spdx", "choice", "choices", "names", "release"]
    description: str
    group: Literal["common", "control", "llm"] = "common"
    allowed: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    may_be_unknown: bool = True
    extra_values: tuple[str, ...] = ()  # accepted besides the kind's values, e.g. "none" for homepage


def _control(kind: Any, description: str, **kwargs: Any) -> FieldSpec:
    return FieldSpec(kind, description, group="control", **kwargs)


def _llm(description: str, allowed: tuple[str, ...]) -> FieldSpec:
    return FieldSpec("choices", description, group="llm", allowed=allowed)


#: Every fact an entry can state, in display order. Keys are what ``--where`` and the JSON output use.
FIELDS: dict[str, FieldSpec] = {
    "repository": FieldSpec("url", "Source repository, or 'none' (with a note) while the code is unpublished.",
                            may_be_unknown=False, extra_values=("none",)),
    "homepage": FieldSpec("url", "Project or documentation home page.", extra_values=("none",)),
    "licence": FieldSpec("spdx", "SPDX licence identifier.", pattern=SPDX_PATTERN),
    "institution": FieldSpec("text", "Institution that created or maintains it."),
    "first_release_year": FieldSpec("year", "Year of the first public release or the paper releasing it."),
    "latest_release": FieldSpec("release", "Latest release: {version, date}, or 'none' if never released.",
                                extra_values=("none",)),
    "surveys": FieldSpec("choices", "Comparisons (surveys) that cover it, by id.", allowed=tuple(SURVEYS)),
    "backend": FieldSpec("choices", "Deep-learning backends.", allowed=BACKENDS),
    "algorithms": FieldSpec("names", "Algorithms shipped, canonical upper-case names.", pattern=ALGORITHM_PATTERN),
    "synchronization": FieldSpec("choices", "How acting (generation) and learning synchronise.",
                                 allowed=SYNCHRONIZATION),
    "docs": FieldSpec("choice", "Documentation: a hosted site, files in the repository, or none.", allowed=DOCS),
    "type_hints": FieldSpec("choice", "Type hints: checked in CI, annotated, or none.", allowed=TYPE_HINTS),
    "tests": FieldSpec("bool", "Has an automated test suite."),
    "coverage_reported": FieldSpec("bool", "Publishes test-coverage measurements."),
    "ci": FieldSpec("bool", "Runs continuous integration."),
    # the seed survey's axes (required for control entries)
    "multi_agent": _control("bool", "Multi-agent RL support."),
    "offline_rl": _control("bool", "Offline (batch) RL support."),
    "evolutionary": _control("bool", "Evolutionary or population-based methods (ES, GA, CEM, PBT)."),
    "architecture": _control("choices", "Learning-system architecture.", allowed=ARCHITECTURES),
    "simulation_parallelism": _control("choices", "How environments run in parallel.",
                                       allowed=SIMULATION_PARALLELISM),
    "computing_parallelism": _control("choices", "Parallel hardware it uses.", allowed=COMPUTING_PARALLELISM),
    "env_apis": _control("names", "Environment interfaces supported.", pattern=ENV_API_PATTERN),
    # the LLM post-training axes (required for llm entries)
    "orchestration": _llm("Orchestration primitive that runs and connects generation and training.",
                          ORCHESTRATION),
    "rollout_buffer": _llm("How finished rollouts reach the trainer.", ROLLOUT_BUFFER),
    "weight_sync": _llm("How new weights reach the inference engines.", WEIGHT_SYNC),
    "staleness": _llm("How off-policy lag between generation and training is bounded or corrected.",
                      STALENESS),
    "partial_rollouts": _llm("What happens to generations in flight when weights change.", PARTIAL_ROLLOUTS),
    "lora": _llm("LoRA (adapter) training support.", LORA),
    "training_backend": _llm("Distributed training backends.", TRAINING_BACKENDS),
    "inference_backend": _llm("Inference (generation) engines.", INFERENCE_BACKENDS),
    "placement": _llm("Generator and trainer on the same GPUs (colocated) or separate ones (disaggregated).",
                      PLACEMENT),
}
LIST_KINDS = ("choices", "names")
COMMON_FIELDS = tuple(name for name, spec in FIELDS.items() if spec.group == "common")
CONTROL_FIELDS = tuple(name for name, spec in FIELDS.items() if spec.group == "control")
LLM_FIELDS = tuple(name for name, spec in FIELDS.items() if spec.group == "llm")
#: Facts each domain must state; the other domain's axes are optional.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "control": (*COMMON_FIELDS, *CONTROL_FIELDS),
    "llm": (*COMMON_FIELDS, *LLM_FIELDS),
}

#: The survey's taxonomy dimensions: the columns of :func:`feature_matrix`.
TAXONOMY_FIELDS: dict[str, tuple[str, ...]] = {
    "architecture": ARCHITECTURES,
    "simulation_parallelism": SIMULATION_PARALLELISM,
    "computing_parallelism": COMPUTING_PARALLELISM,
    "synchronization": SYNCHRONIZATION,
}
FEATURE_FIELDS = ("multi_agent", "offline_rl", "evolutionary")
#: The axes each domain is compared on, in display order (``rlcompare frameworks`` shows these).
DOMAIN_AXES: dict[str, tuple[str, ...]] = {
    "control": ("backend", "architecture", "simulation_parallelism", "computing_parallelism", "synchronization"),
    "llm": ("orchestration", "placement", "rollout_buffer", "weight_sync", "staleness", "partial_rollouts",
            "lora", "training_backend", "inference_backend"),
}

#: Friendly spellings accepted by ``--where``.
KEY_ALIASES = {"license": "licence", "backends": "backend", "algorithm": "algorithms", "env_api": "env_apis",
               "survey": "surveys"}
#: Plain (unsourced) attributes that ``--where`` can also filter on.
PLAIN_KEYS = ("id", "name", "domain")


# -------------------------------------------------------------------------------------------------
# facts and entries
# -------------------------------------------------------------------------------------------------


class FrameworkEntry(_Strict):
    """One framework of the registry. Every field but ``id``, ``name``, ``domain`` and ``notes`` is a
    :class:`Fact`; facts of the other domain's axes are optional and ``None`` when not given."""

    schema_version: Literal[2] = Field(SCHEMA_VERSION, description="Version of this entry format.")
    id: str = Field(pattern=FRAMEWORK_ID_PATTERN, description="What users type, e.g. 'stable-baselines3'.")
    name: str = Field(min_length=1, description="Display name.")
    domain: Literal["control", "llm"] = Field(description="Which axes apply: " + "; ".join(
        f"{key}: {text}" for key, text in DOMAINS.items()))
    notes: str = Field("", description="Free text: scope, caveats, naming decisions.")
    repository: Fact | None = None
    homepage: Fact | None = None
    licence: Fact | None = None
    institution: Fact | None = None
    first_release_year: Fact | None = None
    latest_release: Fact | None = None
    surveys: Fact | None = None
    backend: Fact | None = None
    algorithms: Fact | None = None
    synchronization: Fact | None = None
    docs: Fact | None = None
    type_hints: Fact | None = None
    tests: Fact | None = None
    coverage_reported: Fact | None = None
    ci: Fact | None = None
    multi_agent: Fact | None = None
    offline_rl: Fact | None = None
    evolutionary: Fact | None = None
    architecture: Fact | None = None
    simulation_parallelism: Fact | None = None
    computing_parallelism: Fact | None = None
    env_apis: Fact | None = None
    orchestration: Fact | None = None
    rollout_buffer: Fact | None = None
    weight_sync: Fact | None = None
    staleness: Fact | None = None
    partial_rollouts: Fact | None = None
    lora: Fact | None = None
    training_backend: Fact | None = None
    inference_backend: Fact | None = None
    placement: Fact | None = None

    @model_validator(mode="after")
    def _valid_facts(self) -> FrameworkEntry:
        problems = [missing_fields_problem(self.domain, [n for n in REQUIRED_FIELDS[self.domain]
                                                         if getattr(self, n) is None])]
        for name, spec in FIELDS.items():
            fact: Fact | None = getattr(self, name)
            if fact is not None:
                problems += _fact_problems(name, spec, fact)
        problems = [problem for problem in problems if problem]
        if problems:
            raise ValueError(join_problems(problems))
        return self

    def fact(self, name: str) -> Fact | None:
        """The fact ``name``; ``None`` when it is the other domain's axis and the entry does not state it."""
        if name not in FIELDS:
            raise UnknownNameError("registry field", name, FIELDS)
        return getattr(self, name)

    def value(self, name: str) -> Any:
        """The value of a fact (``None`` when not stated), or of ``id`` / ``name`` / ``domain``."""
        if name in PLAIN_KEYS:
            return getattr(self, name)
        fact = self.fact(name)
        return None if fact is None else fact.value

    def facts(self) -> dict[str, Fact]:
        """Every fact the entry states, in field order."""
        return {name: fact for name in FIELDS if (fact := getattr(self, name)) is not None}

    @property
    def axes(self) -> tuple[str, ...]:
        """The axes the entry's domain is compared on."""
        return DOMAIN_AXES[self.domain]

    def plain_values(self) -> dict[str, Any]:
        """``id``, ``name``, ``domain`` and every stated fact's bare value (lists as tuples, or 'unknown')."""
        return {"id": self.id, "name": self.name, "domain": self.domain,
                **{name: fact.value for name, fact in self.facts().items()}}

    @property
    def taxonomy(self) -> dict[str, Any]:
        """The seed survey's four taxonomy dimensions, bare values (``None`` where not stated)."""
        return {name: self.value(name) for name in TAXONOMY_FIELDS}

    def sources(self) -> list[str]:
        """Every distinct evidence source of the entry, in field order."""
        seen: dict[str, None] = {}
        for fact in self.facts().values():
            seen.update(dict.fromkeys(fact.sources))
        return list(seen)

    def to_json_dict(self) -> dict[str, Any]:
        """Plain values at the top level; per fact: ``evidence``, ``sources``, ``as_of``, and the
        notes, searches and complete flags where given."""
        data: dict[str, Any] = {"id": self.id, "name": self.name, "schema_version": self.schema_version,
                                "domain": self.domain, "axes": list(self.axes), "notes": self.notes}
        evidence: dict[str, list[dict[str, Any]]] = {}
        sources: dict[str, list[str]] = {}
        as_of: dict[str, str] = {}
        fact_notes: dict[str, str] = {}
        searched: dict[str, str] = {}
        complete: list[str] = []
        for name, fact in self.facts().items():
            data[name] = fact.json_value()
            evidence[name] = [item.to_json_dict() for item in fact.evidence]
            sources[name] = list(fact.sources)
            as_of[name] = fact.as_of.isoformat()
            if fact.note:
                fact_notes[name] = fact.note
            if fact.searched:
                searched[name] = fact.searched
            if fact.complete:
                complete.append(name)
        data.update(evidence=evidence, sources=sources, as_of=as_of, fact_notes=fact_notes, searched=searched,
                    complete=complete)
        return data


def missing_fields_problem(domain: Any, missing: Sequence[str]) -> str:
    """One line naming every missing required fact, or ``""``."""
    if not missing:
        return ""
    names = ", ".join(f"'{name}'" for name in missing)
    plural = "s" if len(missing) > 1 else ""
    return f"{len(missing)} required field{plural} missing for a {domain} entry: {names}"


def join_problems(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
    more = len(problems) - MAX_PROBLEMS_SHOWN
    return shown + (f" (and {more} more)" if more > 0 else "")


def _fact_problems(name: str, spec: FieldSpec, fact: Fact) -> list[str]:
    problems = []
    value_problem = _check_value(spec, fact)
    if value_problem:
        problems.append(f"field '{name}.value': {value_problem}")
    if fact.is_unknown:
        if not fact.searched.strip():
            problems.append(f"field '{name}.searched' is required when the value is 'unknown' "
                            "(what was searched, where)")
    elif name == "repository" and fact.value == "none":
        # Nothing public to cite yet: the note says where the code lives and when it will be published.
        if not fact.note.strip():
            problems.append("field 'repository.note': a repository of 'none' needs a note (where the code lives, "
                            "when it will be published)")
    elif not fact.evidence and not (name == "surveys" and fact.value == ()):
        problems.append(f"field '{name}.evidence' needs at least one item with an excerpt "
                        "(or value 'unknown' with 'searched')")
    if name == "surveys" and isinstance(fact.value, tuple) and value_problem is None:
        for survey_id in fact.value:
            survey = SURVEYS.get(survey_id)
            if survey is not None and not any(survey_evidence(survey, item) for item in fact.evidence):
                problems.append(f"field 'surveys.evidence': no excerpt from {survey_id} ({survey.citation}) "
                                "naming the library")
        if fact.value == () and not fact.note.strip():
            problems.append("field 'surveys.note': an empty survey list needs a note (which comparisons omit it)")
    if name == "first_release_year" and isinstance(fact.value, int) and fact.value > date.today().year:
        problems.append(f"field 'first_release_year.value': {fact.value} is in the future")
    return problems


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
    if kind == "release":
        if isinstance(value, Release):
            return None
        return f"expected a table {{ version = \"1.2.0\", date = 2025-07-25 }}, 'none' or 'unknown', got {value!r}"
    if isinstance(value, Release):
        return "a { version, date } table applies to latest_release only"
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
    if not close:  # an abbreviation such as 'nccl' for 'nccl-broadcast'
        close = [choice for choice in allowed if value and choice.startswith(value)][:2]
        close = close if len(close) == 1 else []
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message


# -------------------------------------------------------------------------------------------------
# loading
# -------------------------------------------------------------------------------------------------


def framework_entry_from_dict(data: Any, source: str, default_as_of: date | None = None) -> FrameworkEntry:
    """Validate one entry; raise :class:`InvalidFrameworkEntryError` naming ``source`` and every field
    at fault, on one line.

    A top-level ``as_of`` (a date) is the default for every fact that does not give its own.
    """
    if not isinstance(data, Mapping):
        raise InvalidFrameworkEntryError(f"{source}: an entry must be a table, got {type(data).__name__}")
    data = dict(data)
    version = data.get("schema_version")
    problems: list[str] = []
    if version is None:
        # Named together with every other problem, so that a new entry is fixed in one go.
        problems.append(f"field 'schema_version' is required (= {SCHEMA_VERSION})")
        data["schema_version"] = SCHEMA_VERSION
    elif version != SCHEMA_VERSION:
        raise InvalidFrameworkEntryError(
            f"{source}: field 'schema_version': unsupported version {version!r} (this rlcompare reads version "
            f"{SCHEMA_VERSION}; see docs/registry.md)"
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
    domain = data.get("domain")
    if isinstance(domain, str) and domain in REQUIRED_FIELDS:
        problems.append(missing_fields_problem(domain, [name for name in REQUIRED_FIELDS[domain] if name not in data]))
    else:  # without a domain, the facts every entry needs are still named now
        problems.append(missing_fields_problem("control or llm", [name for name in COMMON_FIELDS if name not in data]))
    try:
        entry = FrameworkEntry.model_validate(data)
    except ValidationError as exc:
        problems += describe_validation_problems(exc)
        entry = None
    # The entry's own check repeats the missing fields when nothing else failed: say it once.
    problems = list(dict.fromkeys(p for p in problems if p))
    if problems or entry is None:
        raise InvalidFrameworkEntryError(f"{source}: {join_problems(problems)}") from None
    return entry


def unpublished_entry(
    framework_id: str,
    name: str,
    domain: str,
    *,
    where: str,
    source: str,
    as_of: date | None = None,
    notes: str = "",
    facts: Mapping[str, Any] | None = None,
) -> FrameworkEntry:
    """The registry entry of a framework whose code is not public yet, validated.

    ``repository`` is ``"none"`` with ``where`` as its note (where the code lives, when it will be
    published), ``surveys`` an empty list (no comparison covers unpublished code), and every other
    fact the domain requires ``"unknown"``, searched nowhere but the framework's own files. ``facts``
    replaces any of them (or adds an optional one) with what is public (a paper, a page), as the
    TOML tables of ``docs/registry.md``; it may not name ``repository`` or a non-fact key. Raises :class:`InvalidFrameworkEntryError` naming ``source``, like
    :func:`framework_entry_from_dict`.
    """
    not_facts = [key for key in (facts or {}) if key not in FIELDS or key == "repository"]
    if not_facts:
        raise InvalidFrameworkEntryError(
            f"{source}: facts may name the entry's facts but 'repository' (set by where=), got "
            + ", ".join(repr(key) for key in not_facts)
        )
    searched = f"No public source yet: {name} is unpublished; its own files are the only record."
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "id": framework_id, "name": name, "domain": domain,
                            "notes": notes, "as_of": as_of or date.today()}
    for field_name in REQUIRED_FIELDS.get(domain, COMMON_FIELDS):
        data[field_name] = {"value": UNKNOWN, "searched": searched}
    data["repository"] = {"value": "none", "note": where}
    data["surveys"] = {"value": [], "note": f"Unpublished: no comparison covers {name}."}
    data.update(facts or {})
    return framework_entry_from_dict(data, source)


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
    directory = resources.files("rlcompare.registry") / BUILTIN_DIRECTORY
    return sorted((item for item in directory.iterdir() if item.name.endswith(".toml")),
                  key=lambda item: item.name.removesuffix(".toml"))


def load_framework_resource(item: Any) -> FrameworkEntry:
    """Read one packaged entry (an ``importlib.resources`` traversable, zip-safe)."""
    return _entry_from_text(item.read_text(encoding="utf-8"), str(item), item.name.removesuffix(".toml"))


@functools.cache
def load_builtin_entries() -> tuple[FrameworkEntry, ...]:
    """Every built-in entry; the first invalid file raises, naming the file and the field."""
    return tuple(validated_entry(item, data) for item, data in load_builtin_entry_tables())


def validated_entry(item: Any, data: dict[str, Any]) -> FrameworkEntry:
    """A packaged entry from its parsed table, its id checked against the file name."""
    source, stem = str(item), item.name.removesuffix(".toml")
    entry = framework_entry_from_dict(data, source)
    if entry.id != stem:
        raise InvalidFrameworkEntryError(f"{source}: field 'id': {entry.id!r} does not match the file name {stem!r}")
    return entry


def load_builtin_entry_tables(items: Sequence[Any] | None = None) -> list[tuple[Any, dict[str, Any]]]:
    """Each packaged file with its parsed TOML. Parsing 40 files of evidence takes longer than the
    rest of listing the registry, so the parsed tables are kept in the user cache, keyed by the
    files' exact bytes; a missing or unreadable cache only means parsing again."""
    import hashlib
    import json

    from rlcompare.harness.host import cache_dir

    items = list(builtin_framework_files() if items is None else items)
    texts = [item.read_text(encoding="utf-8") for item in items]
    digest = hashlib.sha256("\0".join(f"{item.name}\0{text}" for item, text in zip(items, texts, strict=True))
                            .encode()).hexdigest()[:24]
    cached = cache_dir() / f"registry-{SCHEMA_VERSION}-{digest}.json"
    try:
        tables = json.loads(cached.read_text(encoding="utf-8"))
        if isinstance(tables, list) and len(tables) == len(items):
            return list(zip(items, tables, strict=True))
    except (OSError, ValueError):
        pass
    tables = []
    for item, text in zip(items, texts, strict=True):
        try:
            tables.append(tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            raise InvalidFrameworkEntryError(f"{item}: not valid TOML ({exc})") from None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(cached.name + f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(tables, default=str), encoding="utf-8")
        os.replace(partial, cached)
    except OSError:
        pass
    return list(zip(items, tables, strict=True))


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming every error: the dotted field path, what was expected, what was given."""
    return join_problems(describe_validation_problems(exc))


def describe_validation_problems(exc: ValidationError) -> list[str]:
    """One short phrase per error; missing fields are named together in one phrase."""
    missing: list[str] = []
    problems: list[str] = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        field = ".".join(loc)
        kind = error["type"]
        if kind == "missing":
            missing.append(field)
        elif kind == "model_type":
            problems.append(f"field '{field}': expected a table (got {error['input']!r})")
        elif kind == "extra_forbidden":
            message = f"field '{field}' is not a known setting"
            if len(loc) == 1:
                known = [*FrameworkEntry.model_fields, "as_of"]
            elif len(loc) == 2:
                known = list(Fact.model_fields)
            else:
                known = list(Evidence.model_fields)
            close = difflib.get_close_matches(loc[-1], known, n=1)
            if close:
                message += f"; did you mean '{close[0]}'?"
            problems.append(message)
        else:
            text = error["msg"].removeprefix("Value error, ")
            message = text if not field else f"field '{field}': {text}"
            if "input" in error and kind != "value_error" and not isinstance(error["input"], dict):
                message += f" (got {error['input']!r})"
            problems.append(message)
    if missing:
        names = ", ".join(f"'{name}'" for name in missing)
        hint = ""
        if any(len(name.split(".")) == 2 for name in missing):
            hint = " (each fact is a table with value, evidence or searched, and as_of)"
        problems.insert(0, f"field{'s' if len(missing) > 1 else ''} {names} "
                           f"{'are' if len(missing) > 1 else 'is'} required{hint}")
    return problems


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
    if actual is None:  # the fact does not apply to the entry's domain and is not stated
        return False
    if wanted == UNKNOWN:
        return isinstance(actual, str) and actual == UNKNOWN
    if isinstance(actual, Release):
        return str(wanted).casefold() in (actual.version.casefold(), actual.date.isoformat())
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
    if key == "domain":
        return _parse_choice(key, value, tuple(DOMAINS), text)
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
        return _parse_choice(key, value, (*spec.allowed, *spec.extra_values), text)
    return value


def _parse_choice(key: str, value: str, allowed: Sequence[str], text: str) -> str:
    folded = {choice.casefold(): choice for choice in allowed}
    if value.casefold() in folded:
        return folded[value.casefold()]
    problem = _choice_problem(value, allowed) or ""
    raise UsageError(f"--where {text!r}: '{key}' value {problem}")


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
    ``("synchronization", "asynchronous")``. ``dimensions`` may name any list axis (the survey's
    taxonomy by default, or LLM axes such as ``weight_sync``). A cell is True when the evidence
    lists the value, False when the fact is ``complete`` and does not list it, and <NA> otherwise:
    an unlisted value of an incomplete list is not evidence of absence, and an axis an entry does not
    state is unknown. With ``include_features``, the boolean facts (multi-agent, offline RL,
    evolutionary) follow as ``("features", name)`` columns.
    """
    import pandas as pd

    entries = list(load_builtin_entries() if entries is None else entries)
    dimensions = list(dimensions)
    matrix_axes = {name: spec.allowed for name, spec in FIELDS.items() if spec.kind == "choices"}
    for dimension in dimensions:
        if dimension not in matrix_axes:
            raise UnknownNameError("taxonomy dimension", dimension, matrix_axes)
    columns = [(dimension, value) for dimension in dimensions for value in matrix_axes[dimension]]
    if include_features:
        columns += [("features", name) for name in FEATURE_FIELDS]
    rows = []
    for entry in entries:
        row: list[bool | None] = []
        for dimension, value in columns:
            fact = entry.fact(value if dimension == "features" else dimension)
            if fact is None or fact.is_unknown:
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
    """One row per framework, one column per fact value (lists as Python lists, a release as
    ``{version, date}``, ``None`` where the entry does not state the fact); for reports."""
    import pandas as pd

    entries = list(load_builtin_entries() if entries is None else entries)
    records = []
    for entry in entries:
        record: dict[str, Any] = {"id": entry.id, "name": entry.name, "domain": entry.domain}
        for name in FIELDS:
            fact = entry.fact(name)
            record[name] = None if fact is None else fact.json_value()
        records.append(record)
    return pd.DataFrame.from_records(records, columns=["id", "name", "domain", *FIELDS]).set_index("id")
