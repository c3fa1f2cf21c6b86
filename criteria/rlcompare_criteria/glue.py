"""Adapter glue: logical lines and cyclomatic complexity of the adapter's whole package (radon).

What counts is every ``.py`` file of the package that holds the adapter (its *glue package*): the
top-level package of the adapter's module, every module and subpackage under it, whatever their
names. Helper modules count (EvoTorch's ``problem.py``), and so do parity-probe modules
(``parity*.py``): reaching a framework's own update is code its adapter needs, and a name or a
marker that took code out of the count would let an author hide glue behind it. An adapter that
skips its probes writes less glue but is ``unverified`` (its exact settings count as approximate,
and it ranks after every verified adapter), which costs it more than the lines save.

Benchmark baselines (a framework trained directly, without the harness, for
``benchmarks/overhead.py``) are not part of an adapter: they live with the benchmarks
(``benchmarks/baselines.py``), and an adapter module holds no code that only they use.

Two cases narrow the package: an adapter whose top-level package is its framework's own (a framework
shipping its adapter inside itself) counts the package that holds its module, not the whole
framework; an adapter in a single top-level module counts that module.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Any

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria.adapter_lookup import adapter_class


def glue_package(adapter: Any) -> str:
    """The name of the adapter's glue package (see the module docstring)."""
    module_name = str(adapter.__module__)
    top = module_name.split(".")[0]
    framework = str(adapter.import_name or "").split(".")[0]
    if top != framework or "." not in module_name:
        return top
    module = sys.modules.get(module_name)
    return module_name if module is not None and hasattr(module, "__path__") else module_name.rpartition(".")[0]


def glue_files(adapter: Any) -> tuple[list[Path], str | None]:
    """The source files of the adapter's glue package, sorted, or the reason they cannot be read."""
    name = glue_package(adapter)
    module = sys.modules.get(name)
    if module is None:
        return [], f"the package {name!r} of adapter {adapter.id!r} is not imported"
    folders = list(getattr(module, "__path__", None) or ())
    if folders:
        files = sorted({path for folder in folders for path in Path(folder).rglob("*.py")})
    else:
        origin = getattr(module, "__file__", None)
        files = [Path(origin)] if origin and origin.endswith(".py") else []
    if not files:
        return [], f"the source of adapter {adapter.id!r} is not available"
    return files, None


def _adapter_sources(data: ScoringData, adapter_id: str) -> tuple[dict[str, str] | None, str | None]:
    """``file name (relative to the package) -> source`` of every file of the adapter's glue package."""
    adapter, reason = adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    files, reason = glue_files(adapter)
    if reason is not None:
        return None, reason
    sources = {}
    for path in files:
        try:
            sources[_relative(path)] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None, f"the source of adapter {adapter_id!r} is not readable ({path.name})"
    return sources, None


def _relative(path: Path) -> str:
    """The file's name below the folder that holds its top-level package (the cache key: the same
    package installed elsewhere is the same glue)."""
    parts = path.parts
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return "/".join(parts[len(folder.parts):])


def _glue(data: ScoringData, adapter_id: str) -> tuple[dict[str, float] | None, str | None]:
    """Logical lines and summed cyclomatic complexity over the adapter's glue package (radon),
    cached per exact source text: re-analysing every adapter on every scoring was a third of its time."""
    import hashlib

    sources, reason = _adapter_sources(data, adapter_id)
    if sources is None:
        return None, reason
    digest = hashlib.sha256()
    for name, text in sorted(sources.items()):
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    key = f"glue-package|{digest.hexdigest()}|radon {_version('radon')}"

    def measure() -> dict[str, float]:
        from radon.complexity import cc_visit
        from radon.raw import analyze
        from radon.visitors import Function

        # cc_visit lists methods as functions too, and classes separately: count functions only.
        return {"lines": float(sum(analyze(text).lloc for text in sources.values())),
                "complexity": float(sum(block.complexity for text in sources.values() for block in cc_visit(text)
                                        if isinstance(block, Function))),
                "modules": float(len(sources))}

    return data.cache.get_or_compute(key, measure), None


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def glue_lines(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    glue, reason = _glue(data, adapter_id)
    return (None, reason) if glue is None else (glue["lines"], None)


def glue_complexity(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    glue, reason = _glue(data, adapter_id)
    return (None, reason) if glue is None else (glue["complexity"], None)
