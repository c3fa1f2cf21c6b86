"""Where an adapter's framework is installed, and which of its modules a training run needs.

An adapter that fits the main environment is measured there; one that runs in an environment of
its own (numpy<2, an old gymnasium, a pinned torch: :mod:`rlcompare.pyenvs`) is measured in
that environment, the one its recorded runs used, else the newest one built for it that is not
stale. Without this, every development criterion that reads installed packages would be missing
for exactly the frameworks isolation exists for, and a criterion missing for one competing adapter
is left out of everyone's overall score.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlcompare.scoring.criteria import ScoringData


@dataclass(frozen=True)
class Installation:
    """A Python environment the criteria read metadata from and start interpreters in."""

    python: str
    #: Where its distributions live; None: this interpreter's own ``sys.path``.
    site_packages: tuple[str, ...] | None
    python_version: str
    #: The adapter environment's key; None for the main environment.
    environment_key: str | None = None

    @property
    def label(self) -> str:
        return "the main environment" if self.environment_key is None else f"environment {self.environment_key}"

    @property
    def cache_tag(self) -> str:
        """Part of every cache key of a measurement made here."""
        return f"{self.python}|py{self.python_version}"

    def distribution(self, name: str) -> importlib.metadata.Distribution | None:
        if self.site_packages is None:
            try:
                return importlib.metadata.distribution(name)
            except importlib.metadata.PackageNotFoundError:
                return None
        return next(iter(importlib.metadata.Distribution.discover(name=name, path=list(self.site_packages))), None)

    def version(self, name: str) -> str | None:
        distribution = self.distribution(name)
        return None if distribution is None else distribution.version

    def marker_environment(self) -> dict[str, str]:
        """What requirement markers see in this environment (its Python may not be this one)."""
        major, minor = self.python_version.split(".")[:2]
        return {"python_version": f"{major}.{minor}", "python_full_version": self.python_version}

    def process_environment(self) -> dict[str, str]:
        """The environment variables of an interpreter started here: an adapter environment's gets
        nothing of this process's import path (as its workers do)."""
        env = dict(os.environ)
        if self.environment_key is not None:
            from rlcompare.execution.backend import enter_environment

            enter_environment(env, self.python)
        return env


MAIN = Installation(sys.executable, None, platform.python_version())


def _environment_installation(folder: Path) -> Installation | None:
    """The installation of a complete adapter environment folder, or None when it is not one."""
    from rlcompare.pyenvs.manager import COMPLETE, read_info

    if not (folder / COMPLETE).exists():
        return None
    info = read_info(folder)
    site_packages = tuple(str(path) for path in sorted(folder.glob("lib/python*/site-packages")))
    version = str(info.get("python_version") or "")
    if not site_packages or not version:
        return None
    return Installation(str(folder / "bin" / "python"), site_packages, version, str(info.get("key") or folder.name))


def _recorded_environments(data: ScoringData, adapter_id: str) -> list[Path]:
    """The environment folders the adapter's runs recorded, newest run first."""
    runs = data.runs
    if "environment_json" not in runs.columns:
        return []
    rows = runs[(runs["adapter"] == adapter_id) & runs["environment_json"].notna()]
    if "finished_at" in rows.columns:
        rows = rows.sort_values("finished_at", ascending=False, na_position="last")
    folders: list[Path] = []
    for text in rows["environment_json"]:
        try:
            python = json.loads(text)["python"] if isinstance(text, str) else text["python"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(python, str) or not python:
            continue  # a damaged record: no interpreter to find
        folder = Path(python).parent.parent
        if folder not in folders:
            folders.append(folder)
    return folders


def installation_of(data: ScoringData, adapter_class: Any) -> tuple[Installation | None, str | None]:
    """(where the adapter's framework is installed, None) or (None, why it is nowhere to measure).

    The environment its recorded runs ran in, if it is still there; else the main environment
    when the adapter fits there; else the newest environment built for it whose linked sources
    still exist."""

    def find() -> tuple[Installation | None, str | None]:
        for folder in _recorded_environments(data, adapter_class.id):
            found = _environment_installation(folder)
            if found is not None:
                return found, None
        from rlcompare.pyenvs.manager import isolation_reason, ready_environments

        reason = isolation_reason(adapter_class)
        if reason is None:
            return MAIN, None
        for folder in ready_environments(adapter_class.id):  # a stale one holds another checkout's adapter
            found = _environment_installation(folder)
            if found is not None:
                return found, None
        return None, (f"adapter {adapter_class.id!r} needs an environment of its own ({reason}) and none is built "
                      f"(`rlcompare env build {adapter_class.id}`)")

    return data.memo(f"installation|{adapter_class.id}", find)


# -- the framework modules a run imports ------------------------------------------------------------


def _imports_by_name(call: ast.Call) -> bool:
    """``import_module("literal")`` (plain or as ``importlib.import_module``) or ``__import__("literal")``."""
    function = call.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return (name in ("import_module", "__import__") and bool(call.args) and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str))


def _typing_flags(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names bound to ``typing.TYPE_CHECKING``, names bound to the ``typing`` module) in ``tree``; a
    name the module also assigns itself (``TYPE_CHECKING = True``) is not the real flag."""
    flags: set[str] = set()
    modules: set[str] = set()
    assigned: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("typing", "typing_extensions"):
            flags.update(alias.asname or alias.name for alias in node.names if alias.name == "TYPE_CHECKING")
        elif isinstance(node, ast.Import):
            modules.update(alias.asname or alias.name for alias in node.names
                           if alias.name in ("typing", "typing_extensions"))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned.add(node.id)
    return flags - assigned, modules - assigned


def _never_runs(node: ast.If, flags: set[str], typing_modules: set[str]) -> bool:
    """An ``if`` whose body never runs: the real ``typing.TYPE_CHECKING`` or a constant false test."""
    test = node.test
    if isinstance(test, ast.Constant):
        return not test.value
    if isinstance(test, ast.Name):
        return test.id in flags
    return (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING" and isinstance(test.value, ast.Name)
            and test.value.id in typing_modules)


def imported_modules(source: str, top: str) -> list[str]:
    """Modules of the package ``top`` that ``source`` imports anywhere (inside functions too, where
    adapters import their framework lazily; by import statements or by a literal name given to
    ``importlib.import_module`` or ``__import__``), in order of appearance. Left out: relative
    imports and the bodies of ``if`` statements that never run (``typing.TYPE_CHECKING``, a constant
    false test). A name computed at run time cannot be seen here."""
    tree = ast.parse(source)
    flags, typing_modules = _typing_flags(tree)
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _never_runs(node, flags, typing_modules):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Call) and _imports_by_name(node):
            found.append(node.args[0].value)  # importlib.import_module("pkg.mod"), __import__("pkg.mod")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return list(dict.fromkeys(name for name in found if name == top or name.startswith(top + ".")))


@functools.cache
def _glue_files(module_name: str) -> tuple[Path, ...]:
    """The source files of the package that holds ``module_name`` (every ``.py`` file under it, so
    that helper modules count), or of the module itself when it is a top-level module."""
    module = sys.modules.get(module_name)
    if module is None:
        return ()
    package = module if hasattr(module, "__path__") else sys.modules.get(module_name.rpartition(".")[0])
    if package is not None and getattr(package, "__path__", None):
        return tuple(sorted({path for folder in package.__path__ for path in Path(folder).rglob("*.py")}))
    origin = getattr(module, "__file__", None)
    return (Path(origin),) if origin and origin.endswith(".py") else ()


@functools.cache
def framework_modules(adapter_class: Any) -> tuple[str, ...]:
    """What a run of the adapter imports of its framework: the framework's import name, then every
    module of the framework's package that the adapter's glue imports (the package of the adapter's
    module, and of each class it derives from outside rlcompare). Importing only a framework's
    top-level package would time (and introspect) next to nothing for a framework whose top level is
    empty (``import skrl`` loads neither torch nor an agent) against everything for one whose top
    level imports its whole API (``import stable_baselines3``)."""
    name = getattr(adapter_class, "import_name", None)
    if not name:
        return ()
    top = name.split(".")[0]
    owners = [adapter_class.__module__] + [cls.__module__ for cls in adapter_class.__mro__[1:]
                                           if cls.__module__.split(".")[0] not in ("rlcompare", "builtins", "abc")]
    files = dict.fromkeys(path for owner in owners for path in _glue_files(owner))
    imported: list[str] = []
    for path in files:
        try:
            imported += imported_modules(path.read_text(encoding="utf-8"), top)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
    return tuple(dict.fromkeys([name, *imported]))


def as_modules(modules: str | Sequence[str]) -> list[str]:
    return [modules] if isinstance(modules, str) else list(modules)
