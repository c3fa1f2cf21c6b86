"""A canonical serialization of JSON-like data, and the content digest taken over it.

The same data always gives the same bytes, whatever the order of dict keys, the spelling of a
number (``1``, ``1.0``, ``1e0``) or the Python/numpy type that holds it: keys are sorted, a float
with an integral value is written as that integer, any other float as its shortest round-trip
``repr`` (so two spellings of one double agree), non-finite floats as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``, tuples as lists, text as UTF-8 with nothing escaped but what
JSON requires. Lists keep their order: callers sort what has no meaningful order (runs, curve
points) before serializing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

DIGEST_ALGORITHM = "sha256"
#: Integral floats up to this magnitude are exact integers; above it a float's repr is kept.
_EXACT_INTEGERS = 2**53


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data in canonical form (see the module docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, Mapping):
        return {str(key): canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return canonical(item())
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return canonical(tolist())
    raise TypeError(f"cannot serialize {type(value).__name__} canonically")


def _number(value: float) -> int | float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) <= _EXACT_INTEGERS:
        return int(value)
    return value


def canonical_bytes(value: Any, *, is_canonical: bool = False) -> bytes:
    """The canonical UTF-8 JSON text of ``value``: sorted keys, no insignificant whitespace.
    ``is_canonical`` skips the conversion for data that :func:`canonical` returned already."""
    return json.dumps(value if is_canonical else canonical(value), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False).encode("utf-8")


def digest(value: Any, *, is_canonical: bool = False) -> str:
    """``sha256:<hex>`` of the canonical serialization of ``value``."""
    return f"{DIGEST_ALGORITHM}:{hashlib.sha256(canonical_bytes(value, is_canonical=is_canonical)).hexdigest()}"
