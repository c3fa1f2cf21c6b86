"""Public-API docstring and type-hint coverage, introspected in a fresh interpreter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rlcompare.scoring.criteria import ScoringData
from rlcompare_criteria import fresh_interpreter
from rlcompare_criteria.installations import MAIN, Installation, as_modules

#: Imports what a run imports of the framework (the first module must import; a further one that
#: fails to is skipped), as the cold-import timing does.
_IMPORT = r'''
import importlib, sys

importlib.import_module(sys.argv[1])
for further in sys.argv[2:]:  # the framework modules the adapter imports
    try:
        importlib.import_module(further)
    except Exception:
        pass
'''

#: Walks the public API of the package ``sys.argv[1]`` as imported so far, into ``counts``. Run
#: after :data:`_IMPORT` (:data:`INTROSPECT`), or after the last timed import of
#: :mod:`rlcompare_criteria.cold_import`, which imports the same modules the same way: the walk sees
#: the same modules either way, and the interpreter that timed the import is not started again.
WALK = r'''
import importlib, inspect, json, sys

name = sys.argv[1]
top = name.split(".")[0]
root = sys.modules[name]
# The public API: the package and the public submodules importing it brings in (importing every
# submodule of a large framework would be slow and can fail on optional dependencies).
modules = [root] + [
    module for key, module in sorted(sys.modules.items())
    if key.startswith(name + ".") and module is not None
    and not any(part.startswith("_") for part in key.split("."))
]
seen = set()
counts = {"objects": 0, "documented": 0, "functions": 0, "typed": 0}


def public_names(module):
    names = getattr(module, "__all__", None)
    if not isinstance(names, (list, tuple)):
        names = list(vars(module))
    return [n for n in names if isinstance(n, str) and not n.startswith("_")]


def typed(function, method):
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if method and params and params[0].name in ("self", "cls"):
        params = params[1:]
    empty = inspect.Parameter.empty
    return all(p.annotation is not empty for p in params) and signature.return_annotation is not empty


def visit(obj, method=False):
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
        except Exception:  # a lazy attribute whose optional dependency is missing (gymnasium's jax parts)
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
'''

#: A fresh interpreter's whole introspection: import, walk, print the counts as one JSON line.
INTROSPECT = _IMPORT + WALK + "print(json.dumps(counts))\n"


def introspect_api(modules: str | Sequence[str], installation: Installation = MAIN) -> dict[str, Any]:
    """Docstring and type-hint counts of the public API of ``modules`` (the first is the package
    walked; the others are imported first so that the submodules they load are walked too),
    measured in a fresh interpreter of ``installation``."""
    line, error = fresh_interpreter.run_in(installation, INTROSPECT, as_modules(modules))
    return {"error": error} if line is None else json.loads(line)


def _api_counts(data: ScoringData, adapter_id: str) -> tuple[dict[str, Any] | None, str | None]:
    return fresh_interpreter.measured_in_fresh_interpreter(data, adapter_id, "api", introspect_api, "the public API")


def docstring_coverage(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    counts, reason = _api_counts(data, adapter_id)
    if counts is None:
        return None, reason
    if counts["objects"] == 0:
        return None, "no public classes or functions found"
    return counts["documented"] / counts["objects"], None


def type_hint_coverage(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    counts, reason = _api_counts(data, adapter_id)
    if counts is None:
        return None, reason
    if counts["functions"] == 0:
        return None, "no public Python functions found"
    return counts["typed"] / counts["functions"], None
