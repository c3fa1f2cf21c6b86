"""Reading registry entries: one TOML file per framework, the files rlcompare ships (parsed once
and cached in the user's cache, keyed by their bytes), and a file a user points at."""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.harness.host import cache_dir
from rlcompare.registry.entries import FrameworkEntry, InvalidFrameworkEntryError, framework_entry_from_dict
from rlcompare.registry.fields import SCHEMA_VERSION

if TYPE_CHECKING:
    pass

BUILTIN_DIRECTORY = "frameworks"


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


