"""Filtering the registry: ``rlcompare frameworks --where KEY=VALUE[,VALUE...]``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlcompare.errors import UnknownNameError, UsageError
from rlcompare.registry.entries import FrameworkEntry, choice_problem
from rlcompare.registry.facts import (
    UNKNOWN,
    Release,
)
from rlcompare.registry.fields import FIELDS, KEY_ALIASES, PLAIN_KEYS
from rlcompare.registry.vocabulary import (
    DOMAINS,
)

if TYPE_CHECKING:
    pass

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
    problem = choice_problem(value, allowed) or ""
    raise UsageError(f"--where {text!r}: '{key}' value {problem}")


def filter_entries(entries: Iterable[FrameworkEntry], conditions: Iterable[str | Condition]) -> list[FrameworkEntry]:
    """Entries matching every condition (conditions are ANDed; comma-separated values are ORed)."""
    parsed = [c if isinstance(c, Condition) else parse_condition(c) for c in conditions]
    return [entry for entry in entries if all(condition.matches(entry) for condition in parsed)]


