"""What a run imports of its framework, timed where the framework is imported anyway.

A run's worker imports the adapter's framework once, first thing in a fresh interpreter, so it times
that import (:func:`time_framework_import`) and walks the public API it loaded
(:func:`public_api_counts`) before anything else is imported: the cold-import and API criteria read
those figures from the store instead of starting interpreters of their own after the matrix. Where
the runs do not have them (a store from before, a run that never started), the criteria make the very
same measurement in fresh interpreters, with these functions, so the two are one method.

Standard library only: the worker imports this module before numpy, gymnasium or the framework.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
import time
from pathlib import Path
from typing import Any


def time_framework_import(modules: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Import ``modules`` in order and time it: ``{"modules", "seconds", "cpu_seconds", "skipped"}``
    (wall and CPU seconds of the whole import; a further module that fails to import is skipped and
    named, as an optional part the adapter guards with ``try``), or ``{"modules", "error"}`` when the
    first one fails. Meaningful as a *cold* import only first thing in a fresh interpreter."""
    names = [str(name) for name in modules]
    if not names:
        return {"modules": [], "error": "no framework modules to import"}
    started, cpu = time.perf_counter(), time.process_time()
    try:
        importlib.import_module(names[0])
    except Exception as error:  # noqa: BLE001 - the run that follows says more; the figure is missing
        return {"modules": names, "error": f"{type(error).__name__}: {error}"[:300]}
    skipped = []
    for name in names[1:]:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001
            skipped.append(f"{name}: {type(error).__name__}")
    return {"modules": names, "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
            "skipped": skipped}


def public_api_counts(name: str) -> dict[str, int]:
    """Docstring and type-hint counts of the public API of the imported package ``name``: the package
    and the public submodules importing it brought in (importing every submodule of a large framework
    would be slow and can fail on optional dependencies), their public classes and functions defined
    in the package (not re-exported from another), and the public methods of those classes.
    ``objects``/``documented`` count docstrings, ``functions``/``typed`` fully annotated signatures."""
    import inspect

    top = name.split(".")[0]
    root = sys.modules[name]
    modules = [root] + [
        module for key, module in sorted(sys.modules.items())
        if key.startswith(name + ".") and module is not None
        and not any(part.startswith("_") for part in key.split("."))
    ]
    seen: set[int] = set()
    counts = {"objects": 0, "documented": 0, "functions": 0, "typed": 0}

    def public_names(module: Any) -> list[str]:
        names = getattr(module, "__all__", None)
        if not isinstance(names, (list, tuple)):
            names = list(vars(module))
        return [n for n in names if isinstance(n, str) and not n.startswith("_")]

    def typed(function: Any, method: bool) -> bool | None:
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            return None
        params = list(signature.parameters.values())
        if method and params and params[0].name in ("self", "cls"):
            params = params[1:]
        empty = inspect.Parameter.empty
        return all(p.annotation is not empty for p in params) and signature.return_annotation is not empty

    def visit(obj: Any, method: bool = False) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        counts["objects"] += 1
        counts["documented"] += bool((getattr(obj, "__doc__", None) or "").strip())
        if inspect.isfunction(obj):
            result = typed(obj, method)
            if result is not None:
                counts["functions"] += 1
                counts["typed"] += bool(result)

    for module in modules:
        for attribute in public_names(module):
            try:
                obj = getattr(module, attribute, None)
            except Exception:  # noqa: BLE001 - a lazy attribute whose optional dependency is missing
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if (getattr(obj, "__module__", None) or "").split(".")[0] != top:
                continue  # re-exported from another package
            visit(obj)
            if inspect.isclass(obj):
                for member_name, member in vars(obj).items():
                    if member_name.startswith("_"):
                        continue
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if inspect.isfunction(member):
                        visit(member, method=True)
    counts["modules"] = len(modules)
    return counts


def measure_in_this_interpreter(modules: list[str] | tuple[str, ...], walk_api: bool = True) -> dict[str, Any]:
    """What a run records of its framework (``RunResult.development``): the timed import of
    ``modules`` under ``"import"`` and, when it imported and ``walk_api``, the public API's counts
    under ``"api"`` and the seconds the walk took under ``"api_seconds"`` (a run's start-up includes
    them)."""
    timing = time_framework_import(modules)
    measured: dict[str, Any] = {"import": timing}
    if walk_api and "error" not in timing:
        started = time.perf_counter()
        try:
            measured["api"] = public_api_counts(timing["modules"][0])
        except Exception as error:  # noqa: BLE001 - a walk that fails leaves the figure to the criteria
            measured["api"] = {"error": f"{type(error).__name__}: {error}"[:300]}
        measured["api_seconds"] = time.perf_counter() - started
    return measured


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
