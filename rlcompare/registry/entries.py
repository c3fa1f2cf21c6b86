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
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError, model_validator

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
from rlcompare.registry.fields import (
    COMMON_FIELDS,
    DOMAIN_AXES,
    FIELDS,
    FRAMEWORK_ID_PATTERN,
    LIST_KINDS,
    MAX_PROBLEMS_SHOWN,
    PLAIN_KEYS,
    REQUIRED_FIELDS,
    SCHEMA_VERSION,
    TAXONOMY_FIELDS,
    FieldSpec,
)
from rlcompare.registry.vocabulary import (
    DOMAINS,
    SURVEYS,
)

if TYPE_CHECKING:
    pass

class InvalidFrameworkEntryError(UsageError):
    """A registry entry that does not validate; the message names the file and the field."""


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
        if self.repository is not None and self.repository.value != "none":
            stated = [name for name, fact in self.facts().items() if any(e.kind == "author" for e in fact.evidence)]
            problems += [f"field '{name}.evidence': an authors' statement is evidence only for a framework without "
                         "public code (repository 'none'); cite the repository instead" for name in stated]
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
        absent: dict[str, list[str]] = {}
        for name, fact in self.facts().items():
            if fact.absent:
                absent[name] = [item.describe() for item in fact.absent]
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
                    complete=complete, absent=absent)
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
            return choice_problem(value, spec.allowed)
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
            problem = choice_problem(item, spec.allowed)
            if problem:
                return problem
        elif spec.pattern is not None and not spec.pattern.match(item):
            return f"{item!r} does not match {spec.pattern.pattern}"
    return None


def choice_problem(value: str, allowed: Sequence[str]) -> str | None:
    if value in allowed:
        return None
    message = f"{value!r} is not one of {', '.join(allowed)}"
    # an abbreviation such as 'nccl' for 'nccl-broadcast' first (when only one value starts so), then a
    # near spelling: 'nccl' is nearer to 'nixl' by letters than to what it abbreviates
    close = [choice for choice in allowed if value and choice.startswith(value)][:2]
    close = close if len(close) == 1 else difflib.get_close_matches(value, allowed, n=1, cutoff=0.5)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message


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


