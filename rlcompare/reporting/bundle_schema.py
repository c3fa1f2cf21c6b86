"""The shape of a bundle, checked before anything in it is used.

A bundle arrives from anywhere: :func:`check_bundle` holds every field to its type (a run's columns
to :class:`rlcompare.store.records.RunRecord`'s, a curve point's to the curves table's), refuses a
key it does not know, keeps every scoring option inside the range the command line accepts
(:mod:`rlcompare.scoring.option_bounds`) and bounds how deep the document nests and how many
adapters and workloads it holds, so that scoring it costs what scoring a store of that size
costs. A problem is one :class:`InvalidBundleError` naming the field, e.g.
``inputs.runs[3].seed: expected a whole number, got "x"``. Free-form parts (workload specs, hosts,
the runs' JSON columns, the matrix) are checked for depth and text only: they are read by code
that reports what it cannot use.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, ValidationError, create_model

from rlcompare.errors import UsageError
from rlcompare.reporting.inputs import CURVE_TYPES, DECLARATION_FIELDS, INPUTS_VERSION
from rlcompare.scoring.criteria import ALL_WORKLOADS, CATEGORIES, Criterion
from rlcompare.scoring.option_bounds import OPTION_BOUNDS, option_problem
from rlcompare.store import records

BUNDLE_FORMAT = "rlcompare-bundle"
BUNDLE_VERSION = 1
#: Input sections, each digested on its own so that verify can say which changed.
SECTIONS = ("runs", "curves", "workloads", "hosts", "criteria", "measurements", "profile", "options",
            "rlcompare_version", "inputs_version")
#: Deepest nesting of objects and lists a bundle may have (bundles written here nest 8 deep).
MAX_DEPTH = 64
#: Distinct adapters and workloads a bundle may hold: the matrix, its pairwise comparisons and its
#: joint replicates grow with their product and the square of the adapters.
MAX_ADAPTERS = 256
MAX_WORKLOADS = 4096
MAX_PAIRS = 65_536
#: Non-finite numbers as the canonical form writes them.
NON_FINITE = ("NaN", "Infinity", "-Infinity")
_INT64 = 2**63
#: 9999-12-31T23:59:59Z, the last second a date can name.
MAX_TIMESTAMP = 253_402_300_799
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_SHOWN_PARTS = 8
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class InvalidBundleError(UsageError):
    """A bundle that is not well formed: one line naming the field (exit status 2)."""


# -- values ----------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -_INT64 <= value < _INT64:
        raise ValueError("expected a whole number (64-bit)")
    return value


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _INT64:
        raise ValueError("expected a count (a whole number, 0 or more)")
    return value


def _real(value: Any) -> Any:
    if isinstance(value, str) and value in NON_FINITE:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, int)
                                                                          and not -_INT64 <= value < _INT64):
        raise ValueError("expected a number")
    return value


def _flag(value: Any) -> Any:
    # a boolean column comes back from SQLite as 0 or 1
    if not isinstance(value, bool) and value not in (0, 1):
        raise ValueError("expected true or false")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _share(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError("expected a non-negative number")
    return value


def _timestamp(value: Any) -> float:
    # a POSIX time a date can be made of (the citation's date is when the newest run finished)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_TIMESTAMP:
        raise ValueError("expected a time (POSIX seconds, before the year 10000)")
    return value


def _digest(value: Any) -> str:
    if not isinstance(value, str) or not _DIGEST.fullmatch(value):
        raise ValueError("expected a digest (sha256: and 64 hexadecimal digits)")
    return value


def _date(value: Any) -> str:
    try:
        dt.date.fromisoformat(_text(value))
    except ValueError:
        raise ValueError("expected a date (YYYY-MM-DD)") from None
    return value


Text = Annotated[str, PlainValidator(_text)]
Whole = Annotated[int, PlainValidator(_whole)]
Count = Annotated[int, PlainValidator(_count)]
Real = Annotated[float, PlainValidator(_real)]
Flag = Annotated[bool, PlainValidator(_flag)]
Share = Annotated[float, PlainValidator(_share)]
Timestamp = Annotated[float, PlainValidator(_timestamp)]
Digest = Annotated[str, PlainValidator(_digest)]
IsoDate = Annotated[str, PlainValidator(_date)]
JsonObject = dict[str, Any]
Row3 = tuple[Text, Text, Text]


class _Strict(BaseModel):
    # built when the first bundle is read, not when the command line starts
    model_config = ConfigDict(extra="forbid", defer_build=True)


# -- the inputs ------------------------------------------------------------------------------------

_SCALARS: dict[Any, Any] = {str: Text, int: Whole, float: Real, bool: Flag}


def _run_model() -> type[BaseModel]:
    """A run row's model, derived from :class:`RunRecord`: its columns, their types and which may
    be NULL. A column may be absent (a bundle written before it existed); the JSON columns hold
    their record's shape, and ``workload_json``/``host_json`` are left out of a row whose spec or
    host the inputs hold once for all runs."""
    hints = typing.get_type_hints(records.RunRecord)
    fields: dict[str, Any] = {}
    for name, (_, nullable) in records.column_types().items():
        hint = hints[name]
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if args and type(None) in typing.get_args(hint):
            hint = args[0]
        kind = _SCALARS.get(hint, hint)
        if name.endswith("_at") and hint is float:
            kind = Timestamp
        if name == "status":
            kind = Literal[records.STATUSES]  # type: ignore[valid-type]
        if nullable or name.endswith("_json"):
            fields[name] = (kind | None, None)
        else:
            fields[name] = (kind, ...)
    return create_model("BundleRun", __base__=_Strict, **fields)


def _curve_model() -> type[BaseModel]:
    """A curve point's model: the curves table's columns; run and step are required."""
    kinds = {"TEXT": Text, "INTEGER": Whole, "REAL": Real, "JSON": list[Real]}
    fields: dict[str, Any] = {name: (kinds[sql] | None, None) for name, sql in CURVE_TYPES.items()}
    fields.update(run_id=(Text, ...), env_steps=(Whole, ...))
    return create_model("BundleCurvePoint", __base__=_Strict, **fields)


BundleRun = _run_model()
BundleCurvePoint = _curve_model()


class Declaration(_Strict):
    """A criterion as the inputs declare it (:func:`rlcompare.reporting.inputs.inputs_from_frames`)."""

    id: Text
    title: Text | None = None
    category: Text | None = None
    unit: Text | None = None
    direction: Text | None = None
    method: Text | None = None
    normalization: Text | None = None
    per_workload: Flag | None = None
    half_life: Share | None = None
    description: JsonObject | None = None
    recorded: Flag = False
    plugin: Text | None = None
    distribution: Text | None = None
    version: Text | None = None


class Recorded(_Strict):
    """A development criterion's recorded result (:class:`rlcompare.reporting.inputs.RecordedResult`)."""

    values: list[tuple[Text, Text, Whole, Real]] = []
    missing: list[Row3] = []
    labels: list[Row3] = []
    notes: list[Row3] = []
    error: tuple[Text, Text] | None = None


def _categories(value: dict[str, Any]) -> dict[str, Any]:
    unknown = [name for name in value if name not in CATEGORIES]
    if unknown:
        raise ValueError(f"unknown category {unknown[0]!r} (expected {', '.join(CATEGORIES)})")
    if not any(share > 0 for share in value.values()):
        raise ValueError("at least one category needs a positive share")
    return value


class Profile(_Strict):
    """The weight profile (:class:`rlcompare.scoring.profiles.WeightProfile`), as a weights file allows it."""

    name: Text
    description: Text
    categories: Annotated[dict[str, Share], AfterValidator(_categories)]
    weights: dict[str, Share] = {}
    learning_first: Annotated[bool, PlainValidator(_bool)] = True


def _option(name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        problem = option_problem(name, value)
        if problem is not None:
            raise ValueError(problem)
        return value

    return check


#: The scoring options: each one :data:`OPTION_BOUNDS` knows, within its range (absent: the default).
Options = create_model("BundleOptions", __base__=_Strict,
                       **{name: (Annotated[Any, PlainValidator(_option(name))], None) for name in OPTION_BOUNDS})


class Inputs(_Strict):
    """:class:`rlcompare.reporting.inputs.ScoringInputs` as data."""

    inputs_version: Literal[INPUTS_VERSION]  # type: ignore[valid-type]
    rlcompare_version: Text
    runs: list[BundleRun]  # type: ignore[valid-type]
    curves: list[BundleCurvePoint]  # type: ignore[valid-type]
    workloads: dict[str, JsonObject]
    hosts: dict[str, JsonObject]
    criteria: list[Declaration]
    measurements: dict[str, Recorded]
    profile: Profile
    options: Options  # type: ignore[valid-type]


# -- the document ----------------------------------------------------------------------------------


class CitationBlock(_Strict):
    """What ``rlcompare cite`` prints, as data (:meth:`rlcompare.reporting.citation.Citation.to_dict`)."""

    key: Text
    title: Text
    digest: Digest
    rlcompare_version: Text
    adapters: list[Text]
    frameworks: list[Text]
    workloads: list[Text]
    profile: Text
    runs: Count
    date: IsoDate
    authors: Annotated[list[Text], Field(min_length=1)]


class Source(_Strict):
    store: Text


Sections = create_model("BundleSections", __base__=_Strict, **{name: (Digest, ...) for name in SECTIONS})


class Document(_Strict):
    """A whole bundle (:func:`rlcompare.reporting.bundle.bundle_document`)."""

    format: Literal[BUNDLE_FORMAT]  # type: ignore[valid-type]
    bundle_version: Literal[BUNDLE_VERSION]  # type: ignore[valid-type]
    digest: Digest
    rlcompare_version: Text
    created: Text
    source: Source
    citation: CitationBlock
    sections: Sections  # type: ignore[valid-type]
    run_digests: dict[str, Digest]
    inputs: Inputs
    matrix: JsonObject


# -- checking --------------------------------------------------------------------------------------


def check_bundle(document: Any) -> None:
    """Raise :class:`InvalidBundleError` naming the first field of ``document`` (parsed JSON) that
    is not what a bundle holds there; return when every field is."""
    check_nesting(document)
    try:
        Document.model_validate(document)
    except ValidationError as exc:
        raise InvalidBundleError(describe(exc, document)) from None
    _check_consistency(document["inputs"])


def check_nesting(document: Any, max_depth: int = MAX_DEPTH) -> None:
    """Bound the depth of ``document`` (without recursing: a hostile depth cannot exhaust the stack)
    and refuse text that is not Unicode (a lone surrogate, which no UTF-8 file can hold)."""
    stack: list[tuple[Any, int, Any]] = [(document, 0, None)]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict):
            children = value.items()
        elif isinstance(value, list):
            children = enumerate(value)  # type: ignore[assignment]
        else:
            if isinstance(value, str) and not value.isascii():
                _unicode(value, where)
            continue
        if depth >= max_depth:
            raise InvalidBundleError(f"{_where(where)}: nested deeper than {max_depth} levels")
        for key, child in children:
            if isinstance(key, str) and not key.isascii():
                _unicode(key, where)
            if isinstance(child, (dict, list)) or (isinstance(child, str) and not child.isascii()):
                stack.append((child, depth + 1, (where, key)))


def _unicode(text: str, where: Any) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidBundleError(f"{_where(where)}: text that is not valid Unicode") from None


def _where(where: Any) -> str:
    parts: list[Any] = []
    while where is not None:
        where, key = where
        parts.append(key)
    parts.reverse()
    if len(parts) > _SHOWN_PARTS:  # a path as deep as the limit says nothing more after a few steps
        return f"{field_path(parts[:_SHOWN_PARTS])}... ({len(parts)} levels down)"
    return field_path(parts) or "(top level)"


def field_path(parts: typing.Iterable[Any]) -> str:
    """``inputs.runs[3].curve[0]`` from ``("inputs", "runs", 3, "curve", 0)``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _NAME.fullmatch(str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return text


#: What each kind of pydantic error expected, in words.
_EXPECTED = {"list_type": "a list", "dict_type": "an object", "model_type": "an object",
             "model_attributes_type": "an object", "tuple_type": "a list", "string_type": "text",
             "int_type": "a whole number", "float_type": "a number", "bool_type": "true or false"}


def describe(exc: ValidationError, document: Any) -> str:
    """One line for the first error of ``exc``: the field's path in ``document``, what it should
    be and what it is."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = list(first["loc"])
    # pydantic's location may name a union member or a tuple slot after the real path: keep the
    # part that exists in the document
    parts: list[Any] = []
    value = document
    for part in loc:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            if first["type"] == "missing" and part == loc[-1]:
                parts.append(part)
            break
        parts.append(part)
    where = field_path(parts) or "(top level)"
    kind = first["type"]
    if kind == "missing":
        message = f"{where}: required, and missing"
    elif kind == "extra_forbidden":
        message = f"{where}: not a field a bundle has here"
        known = _known_fields(loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        if close:
            message += f"; did you mean {close[0]!r}?"
    else:
        context = first.get("ctx") or {}
        if kind in _EXPECTED:
            expected = f"expected {_EXPECTED[kind]}"
        elif kind == "literal_error":
            expected = f"expected {context.get('expected', 'another value')}"
        elif kind in ("too_long", "too_short"):
            expected = (f"expected at most {context.get('max_length')} entries" if kind == "too_long"
                        else f"expected at least {context.get('min_length')} entries")
        else:
            expected = str(first["msg"]).removeprefix("Value error, ")
        message = f"{where}: {expected}" + (f", got {_show(value)}" if expected.startswith("expected") else "")
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problems)"
    return message


def _known_fields(loc: list[Any]) -> list[str]:
    """The fields of the model at ``loc`` (for a did-you-mean), or none when it is not a model."""
    model: Any = Document
    for part in loc:
        while typing.get_origin(model) in (typing.Union, types.UnionType):  # X | None
            model = next(arg for arg in typing.get_args(model) if arg is not type(None))
        if typing.get_origin(model) in (list, dict):  # an index or a key: to the item's type
            model = typing.get_args(model)[-1]
        elif isinstance(model, type) and issubclass(model, BaseModel) and part in model.model_fields:
            model = model.model_fields[part].annotation
        else:
            return []
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- what one field cannot say on its own ------------------------------------------------------------


def _check_consistency(inputs: Mapping[str, Any]) -> None:
    """Run ids once each, specs and hosts that runs point to present, no more adapters and workloads
    than a matrix can be scored for, recorded results of those adapters and workloads only, and
    criteria declared once, the recorded ones valid."""
    seen: set[str] = set()
    adapters: set[str] = set()
    workloads: set[str] = set()
    for i, run in enumerate(inputs["runs"]):
        where = f"inputs.runs[{i}]"
        if run["run_id"] in seen:
            raise InvalidBundleError(f"{where}.run_id: {run['run_id']!r} appears twice")
        seen.add(run["run_id"])
        if "workload_json" not in run and run["workload_digest"] not in inputs["workloads"]:
            raise InvalidBundleError(f"{where}.workload_digest: no spec {run['workload_digest']!r} in inputs.workloads")
        if "host_json" not in run and run.get("host_fingerprint") is not None \
                and run["host_fingerprint"] not in inputs["hosts"]:
            raise InvalidBundleError(f"{where}.host_fingerprint: no host {run['host_fingerprint']!r} in inputs.hosts")
        adapters.add(run["adapter"])
        workloads.add(run["workload_id"])
    if len(adapters) > MAX_ADAPTERS or len(workloads) > MAX_WORKLOADS or len(adapters) * len(workloads) > MAX_PAIRS:
        raise InvalidBundleError(
            f"inputs.runs: {len(adapters)} adapters on {len(workloads)} workloads, more than a bundle may hold "
            f"(at most {MAX_ADAPTERS} adapters, {MAX_WORKLOADS} workloads and {MAX_PAIRS} pairs)")
    for cid, recorded in inputs["measurements"].items():
        # a recorded result covers the runs' adapters and workloads (or all workloads), as it did
        # when it was measured; the matrix has no place for another
        for part in ("values", "missing", "labels", "notes"):
            for i, row in enumerate(recorded.get(part, [])):
                where = f"{field_path(('inputs', 'measurements', cid, part, i))}"
                if row[0] not in adapters:
                    raise InvalidBundleError(f"{where}[0]: adapter {row[0]!r} has no run in inputs.runs")
                if row[1] != ALL_WORKLOADS and row[1] not in workloads:
                    raise InvalidBundleError(f"{where}[1]: workload {row[1]!r} has no run in inputs.runs")
    declared: set[str] = set()
    for i, declaration in enumerate(inputs["criteria"]):
        cid = declaration["id"]
        if cid in declared:
            raise InvalidBundleError(f"inputs.criteria[{i}].id: {cid!r} is declared twice")
        declared.add(cid)
        if cid in inputs["measurements"]:  # replayed from the bundle: its declaration is all there is
            fields = {name: declaration[name] for name in DECLARATION_FIELDS if declaration.get(name) is not None}
            try:
                Criterion(id=cid, compute=lambda _data: None, **fields)  # type: ignore[arg-type,return-value]
            except (TypeError, ValueError) as exc:
                reason = str(exc).replace(f"criterion {cid!r}: ", "")
                if isinstance(exc, TypeError):
                    reason = "a title, category, unit, direction and method are required"
                raise InvalidBundleError(f"inputs.criteria[{i}]: recorded criterion {cid!r}: {reason}") from None
