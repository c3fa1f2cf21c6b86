"""Development-facilitation criteria: measured from the adapter code, the installed packages and
the framework registry, one value per adapter (workload id ``*``).

Nothing here is an opinion typed into a table: glue size is counted with radon, install footprint
is read from installed distributions' metadata, import time is timed in fresh interpreters, API
coverage is introspected in a subprocess. Expensive measurements are cached per (distribution,
version) in the store's measurement cache. A registry entry, field or package that is not there
makes the cell missing with the reason, never zero.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
import inspect
import json
import re
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from rlcompare.criteria_api import ALL_WORKLOADS, DEVELOPMENT, HIGHER, LOWER, Criterion, CriterionResult, ScoringData
from rlcompare.hookspecs import hookimpl
from rlcompare_criteria.installations import MAIN, Installation, as_modules, framework_modules, installation_of

#: How the registry spells a fact nobody could establish.
UNKNOWN = "unknown"
#: Fresh-interpreter imports timed per framework; their spread gives the interval.
IMPORT_REPEATS = 3
SUBPROCESS_TIMEOUT_SECONDS = 600
#: Part of the cache key of the measurements made in fresh interpreters: bumped when how they are
#: made changes (2: a discarded warm-up import, further modules that raise are skipped), so that a
#: value measured the old way is not read back.
MEASURE_METHOD = 2

Row = tuple[str, str, int, float]
Missing = tuple[str, str, str]


# -- what every criterion here needs -----------------------------------------------------------------


def _adapter_class(data: ScoringData, adapter_id: str) -> tuple[Any, str | None]:
    adapters = data.plugins.adapters if data.plugins is not None else {}
    if adapter_id not in adapters:
        return None, f"adapter {adapter_id!r} is not installed here (no plugin registers it)"
    return adapters[adapter_id], None


def _installation(data: ScoringData, adapter_id: str) -> tuple[Installation | None, str | None]:
    """Where the adapter's framework is installed: the main environment, or the adapter's own
    (:mod:`rlcompare_criteria.installations`)."""
    adapter, reason = _adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    return installation_of(data, adapter)


def _framework_distribution(data: ScoringData, adapter_id: str) -> tuple[str | None, str | None, str | None]:
    """(distribution, installed version, reason when unavailable) of the adapter's framework: the
    distribution that provides the adapter's ``import_name`` (the framework's own package), else the
    first of its declared ``distributions``, as installed where the adapter runs."""
    adapter, reason = _adapter_class(data, adapter_id)
    if adapter is None:
        return None, None, reason
    installation, reason = _installation(data, adapter_id)
    if installation is None:
        return None, None, reason
    declared = tuple(getattr(adapter, "distributions", ()) or ())
    name = _providing_distribution(getattr(adapter, "import_name", None), declared, installation)
    if name is None:
        if not declared:
            return None, None, f"adapter {adapter_id!r} declares no import name and no distributions"
        name = declared[0]
    version = _installed_version(name, installation)
    if version is None:
        where = "" if installation.environment_key is None else f" in {installation.label}"
        return name, None, f"distribution {name!r} is not installed{where}"
    return name, version, None


@functools.cache
def _installed_version(name: str, installation: Installation = MAIN) -> str | None:
    return installation.version(name)


@functools.cache
def _providing_distribution(import_name: str | None, candidates: tuple[str, ...],
                            installation: Installation = MAIN) -> str | None:
    """Which of the adapter's declared distributions provides the top-level module of
    ``import_name`` (its ``top_level.txt``, else its file list), so a framework's licence and
    version are its own even when another distribution is listed first."""
    if not import_name:
        return None
    top = import_name.split(".")[0]
    for name in candidates:
        distribution = installation.distribution(name)
        if distribution is None:
            continue
        top_level = distribution.read_text("top_level.txt")
        if top_level is not None:
            if top in top_level.split():
                return name
            continue
        for path in distribution.files or ():
            if path.parts and path.parts[0] in (top, f"{top}.py") and len(path.parts) <= 2:
                return name
    return None


def _registry_entry(data: ScoringData, adapter_id: str) -> tuple[Any, str | None]:
    framework = data.adapter_frameworks.get(adapter_id)
    adapter, _ = _adapter_class(data, adapter_id)
    if adapter is not None:
        framework = getattr(adapter, "framework", framework)
    frameworks = data.plugins.frameworks if data.plugins is not None else {}
    if not frameworks:
        return None, "no framework registry is installed"
    if framework not in frameworks:
        return None, f"framework {framework!r} has no registry entry"
    return frameworks[framework], None


def registry_value(entry: Any, names: Sequence[str]) -> tuple[Any, str | None]:
    """(value, None) for the first of ``names`` the entry records, else (None, why). Registry facts
    carry their value with their evidence (``fact.value``); a fact recorded as "unknown" is missing.
    ``false`` and an empty list are values (known absence), not missing ones."""
    for name in names:
        raw = entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)
        value = getattr(raw, "value", raw)
        if isinstance(value, str) and value == UNKNOWN:
            return None, f"the registry records {name} as unknown"
        if value is not None and value != "":
            return value, None
    return None, f"the registry entry has no {names[0]}"


def _fact(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)


def _per_adapter(
    data: ScoringData,
    measure: Callable[[str], tuple[list[float] | float | None, str | None]],
) -> tuple[list[Row], list[Missing]]:
    """Run ``measure(adapter_id) -> (value or samples, reason when missing)`` for each adapter."""
    rows: list[Row] = []
    missing: list[Missing] = []
    for adapter_id in data.adapters:
        value, reason = measure(adapter_id)
        if value is None:
            missing.append((adapter_id, ALL_WORKLOADS, reason or "not measured"))
            continue
        samples = value if isinstance(value, list) else [value]
        rows += [(adapter_id, ALL_WORKLOADS, seed, float(sample)) for seed, sample in enumerate(samples)]
    return rows, missing


def _simple(measure: Callable[[ScoringData, str], tuple[Any, str | None]]) -> Callable[[ScoringData], CriterionResult]:
    def compute(data: ScoringData) -> CriterionResult:
        rows, missing = _per_adapter(data, lambda adapter_id: measure(data, adapter_id))
        return CriterionResult.build(rows, missing)

    compute.__name__ = measure.__name__
    compute.__doc__ = measure.__doc__
    return compute


# -- adapter glue ------------------------------------------------------------------------------------


def _adapter_source(data: ScoringData, adapter_id: str) -> tuple[str | None, str | None]:
    adapter, reason = _adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    module = inspect.getmodule(adapter)
    try:
        return inspect.getsource(module), None
    except (OSError, TypeError):
        return None, f"the source of adapter {adapter_id!r} is not available"


def _glue(data: ScoringData, adapter_id: str) -> tuple[dict[str, float] | None, str | None]:
    """Logical lines and summed cyclomatic complexity of the adapter module (radon), cached per
    exact source text: re-analysing every adapter on every scoring was a third of its time."""
    import hashlib

    source, reason = _adapter_source(data, adapter_id)
    if source is None:
        return None, reason
    key = f"glue|{hashlib.sha256(source.encode()).hexdigest()}|radon {_version('radon')}"

    def measure() -> dict[str, float]:
        from radon.complexity import cc_visit
        from radon.raw import analyze
        from radon.visitors import Function

        # cc_visit lists methods as functions too, and classes separately: count functions only.
        return {"lines": float(analyze(source).lloc),
                "complexity": float(sum(b.complexity for b in cc_visit(source) if isinstance(b, Function)))}

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


# -- install footprint -------------------------------------------------------------------------------


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def install_closure(*requirements: str, installation: Installation = MAIN) -> dict[str, Any]:
    """The installed distributions that ``requirements`` (e.g. ``"ray[rllib]"``, ``"torch"``) pull in,
    themselves included, following the extras asked for and skipping requirements whose markers do
    not hold in ``installation``, and the bytes their installed files take."""
    from packaging.requirements import InvalidRequirement, Requirement

    markers = installation.marker_environment()
    seen: dict[str, int] = {}
    versions: dict[str, str] = {}
    extras_seen: dict[str, set[str]] = {}
    queue = [requirement for requirement in map(Requirement, requirements)
             if requirement.marker is None or requirement.marker.evaluate({**markers, "extra": ""})]
    while queue:
        requirement = queue.pop()
        name = _canonical(requirement.name)
        extras = set(requirement.extras)
        if name in seen and extras <= extras_seen[name]:
            continue
        distribution = installation.distribution(name)
        if distribution is None:
            continue  # an optional or platform-specific dependency that is not installed
        seen[name] = _installed_bytes(distribution)
        versions[name] = distribution.version
        extras_seen[name] = extras_seen.get(name, set()) | extras
        for text in distribution.requires or []:
            try:
                dependency = Requirement(text)
            except InvalidRequirement:
                continue
            if dependency.marker is not None and not any(
                dependency.marker.evaluate({**markers, "extra": extra}) for extra in ("", *extras_seen[name])
            ):
                continue
            queue.append(dependency)
    return {"distributions": len(seen), "bytes": sum(seen.values()), "names": sorted(seen),
            "versions": dict(sorted(versions.items()))}


def _installed_bytes(distribution: importlib.metadata.Distribution) -> int:
    total = 0
    for path in distribution.files or []:
        size = path.size
        if size is None:  # RECORD without sizes: ask the file system
            try:
                size = path.locate().stat().st_size
            except OSError:
                size = 0
        total += int(size)
    return total


def _footprint(data: ScoringData, adapter_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """Everything the adapter needs installed: the closure of its ``install_requires`` (or of its
    ``distributions``), so a framework that needs torch without requiring it is charged for it too."""
    name, version, reason = _framework_distribution(data, adapter_id)
    if reason is not None:
        return None, reason
    adapter, _ = _adapter_class(data, adapter_id)
    installation, _ = _installation(data, adapter_id)
    assert installation is not None  # _framework_distribution found one
    requirements = tuple(getattr(adapter, "install_requires", ()) or ()) or tuple(adapter.distributions)
    key = f"install|{'+'.join(sorted(requirements))}|{version}|{installation.cache_tag}"
    return data.cache.get_or_compute(key, lambda: install_closure(*requirements, installation=installation),
                                     f"the install footprint of {adapter_id} in {installation.label}"), None


def install_size(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    footprint, reason = _footprint(data, adapter_id)
    return (None, reason) if footprint is None else (footprint["bytes"] / 2**20, None)


def install_distributions(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    footprint, reason = _footprint(data, adapter_id)
    return (None, reason) if footprint is None else (float(footprint["distributions"]), None)


# -- cold import time --------------------------------------------------------------------------------

#: One discarded import first (the first interpreter after a build or a reboot reads the files from
#: disk and can take several times longer), then the timed ones. The first module must import; a
#: further one that fails to (an optional part the adapter guards with ``try``) is skipped and named.
_TIME_IMPORT = r"""
import importlib, json, sys, time
started = time.perf_counter()
importlib.import_module(sys.argv[1])
skipped = []
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except Exception as error:
        skipped.append(f"{name}: {type(error).__name__}")
print(json.dumps({"seconds": time.perf_counter() - started, "skipped": skipped}))
"""


def _run_in(installation: Installation, script: str, names: Sequence[str]) -> tuple[str | None, str | None]:
    """(last line of stdout, None) of ``python -c script NAMES...`` in a fresh interpreter of
    ``installation``, or (None, one line saying why not)."""
    try:
        done = subprocess.run([installation.python, "-c", script, *names], capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT_SECONDS, check=False, env=installation.process_environment())
    except subprocess.TimeoutExpired:
        return None, f"import {names[0]} took over {SUBPROCESS_TIMEOUT_SECONDS} s"
    except OSError as error:  # the environment's interpreter is gone (removed meanwhile)
        return None, f"{installation.label} cannot start Python ({error.strerror or error})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"import {names[0]} failed: {last[:200]}"
    lines = done.stdout.strip().splitlines()
    return (lines[-1], None) if lines else (None, f"import {names[0]} printed nothing")


def time_cold_import(modules: str | Sequence[str], repeats: int = IMPORT_REPEATS,
                     installation: Installation = MAIN) -> dict[str, Any]:
    """Seconds to import ``modules`` (in order) in ``repeats`` fresh interpreters of
    ``installation`` after one discarded import (the interpreter's own start-up excluded), or the
    error of the first import that failed."""
    names = as_modules(modules)
    samples = []
    skipped: list[str] = []
    for repeat in range(repeats + 1):
        line, error = _run_in(installation, _TIME_IMPORT, names)
        if line is None:
            return {"error": error}
        result = json.loads(line)
        skipped = result["skipped"]
        if repeat:  # the first is the warm-up
            samples.append(float(result["seconds"]))
    return {"seconds": samples, "skipped": skipped}


def _framework_modules(data: ScoringData, adapter_id: str) -> tuple[tuple[str, ...] | None, str | None]:
    """The framework modules a run of the adapter imports (its import name first)."""
    adapter, reason = _adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    modules = framework_modules(adapter)
    return (modules, None) if modules else (None, f"adapter {adapter_id!r} declares no import name")


def _import_name_is_its_frameworks(data: ScoringData, adapter_id: str) -> str | None:
    """Why the adapter's ``import_name`` cannot be measured as its framework's, or None: it must be a
    package one of its declared distributions installs (``import_name = "json"`` would otherwise time
    and introspect the standard library in the framework's place)."""
    adapter, _ = _adapter_class(data, adapter_id)
    installation, _ = _installation(data, adapter_id)
    declared = tuple(getattr(adapter, "distributions", ()) or ())
    import_name = getattr(adapter, "import_name", None)
    if installation is None or _providing_distribution(import_name, declared, installation) is not None:
        return None
    return (f"adapter {adapter_id!r}: import name {import_name!r} is not a package of any distribution it declares "
            f"({', '.join(declared) or 'none'})")


def _measured(data: ScoringData, adapter_id: str, kind: str, measure: Callable[..., dict[str, Any]],
              what: str) -> tuple[dict[str, Any] | None, str | None]:
    """``measure(modules, installation=...)`` of what a run imports of the adapter's framework, in a
    fresh interpreter where the adapter runs, cached per modules, distribution version and environment."""
    modules, reason = _framework_modules(data, adapter_id)
    name, version, dist_reason = _framework_distribution(data, adapter_id)
    if modules is None or dist_reason is not None or name is None or version is None:
        return None, reason or dist_reason
    installation, reason = _installation(data, adapter_id)
    if installation is None:
        return None, reason
    foreign = _import_name_is_its_frameworks(data, adapter_id)
    if foreign is not None:
        return None, foreign
    key = f"{kind}|{'+'.join(modules)}|{_canonical(name)}|{version}|{installation.cache_tag}|method {MEASURE_METHOD}"
    further = len(modules) - 1
    more = f", {further} module{'s' if further > 1 else ''} of it its adapter imports" if further else ""
    # an error is not kept: the next scoring tries again (an environment being rebuilt, a timeout)
    result = data.cache.get_or_compute(key, lambda: measure(modules, installation=installation),
                                       f"{what} of {modules[0]}{more}, in {installation.label}",
                                       keep=lambda value: "error" not in value)
    return (None, result["error"]) if "error" in result else (result, None)


def cold_import(data: ScoringData, adapter_id: str) -> tuple[list[float] | None, str | None]:
    result, reason = _measured(data, adapter_id, "import", time_cold_import, "the cold import")
    return (None, reason) if result is None else (result["seconds"], None)


# -- public-API introspection ------------------------------------------------------------------------

_INTROSPECT = r'''
import importlib, inspect, json, sys

name = sys.argv[1]
top = name.split(".")[0]
root = importlib.import_module(name)
for further in sys.argv[2:]:  # the framework modules the adapter imports
    try:
        importlib.import_module(further)
    except Exception:
        pass
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
print(json.dumps(counts))
'''


def introspect_api(modules: str | Sequence[str], installation: Installation = MAIN) -> dict[str, Any]:
    """Docstring and type-hint counts of the public API of ``modules`` (the first is the package
    walked; the others are imported first so that the submodules they load are walked too),
    measured in a fresh interpreter of ``installation``."""
    line, error = _run_in(installation, _INTROSPECT, as_modules(modules))
    return {"error": error} if line is None else json.loads(line)


def _api_counts(data: ScoringData, adapter_id: str) -> tuple[dict[str, Any] | None, str | None]:
    return _measured(data, adapter_id, "api", introspect_api, "the public API")


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


# -- coverage from capabilities and the registry ----------------------------------------------------


def algorithm_coverage(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    from rlcompare.workload import ALGORITHMS

    adapter, reason = _adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    offered = set(adapter().capabilities().algorithms)
    return len(offered & set(ALGORITHMS)) / len(ALGORITHMS), None


def registry_algorithms(data: ScoringData, adapter_id: str) -> tuple[float | None, str | None]:
    entry, reason = _registry_entry(data, adapter_id)
    if entry is None:
        return None, reason
    algorithms, reason = registry_value(entry, ("algorithms",))
    if algorithms is None:
        return None, reason
    if isinstance(algorithms, str):
        algorithms = [part for part in re.split(r"[,\s]+", algorithms) if part]
    return float(len(set(map(str, algorithms)))), None


#: Parallel and distributed features, each offered when the adapter's capabilities declare it
#: (what rlcompare can actually run) or the registry's taxonomy records it (the survey's vocabulary).
#: Values: (capability test, taxonomy dimension, taxonomy values that mean "offered").
FEATURES: dict[str, tuple[Callable[[Any], bool] | None, str, frozenset[str]]] = {
    "vectorized environments": (lambda caps: bool(caps.vectorized_envs), "simulation_parallelism",
                                frozenset({"vectorized-cpu"})),
    "multi-process workers": (lambda caps: bool(caps.rollout_workers), "computing_parallelism",
                              frozenset({"multi-process"})),
    "asynchronous sampling or learning": (lambda caps: "async" in caps.modes, "synchronization",
                                          frozenset({"asynchronous", "stale-synchronous", "hybrid"})),
    "GPU batch simulation": (None, "simulation_parallelism", frozenset({"gpu-batch"})),
    "multi-GPU training": (None, "computing_parallelism", frozenset({"multi-gpu"})),
    "multi-node cluster": (None, "computing_parallelism", frozenset({"multi-node"})),
    "distributed architecture": (None, "architecture",
                                 frozenset({"centralized", "decentralized", "gossip", "fine-grained"})),
}


def distributed_features(data: ScoringData, adapter_id: str) -> tuple[dict[str, bool | None] | None, str | None]:
    """Each feature: True (offered), False (not offered) or None (the registry does not know).

    Per docs/registry.md: a list value that names the feature's value means offered; a list marked
    ``complete`` that does not name it means not offered; an incomplete list that does not name it
    says nothing (None); "unknown" says nothing.
    """
    adapter, reason = _adapter_class(data, adapter_id)
    if adapter is None:
        return None, reason
    entry, reason = _registry_entry(data, adapter_id)
    if entry is None:
        return None, reason
    capabilities = adapter().capabilities()
    found: dict[str, bool | None] = {}
    for feature, (declared, dimension, offered_values) in FEATURES.items():
        if declared is not None and declared(capabilities):
            found[feature] = True
            continue
        fact = _fact(entry, dimension)
        values, _ = registry_value(entry, (dimension,))
        if values is None:
            found[feature] = None
            continue
        values = {values} if isinstance(values, str) else set(map(str, values))
        if values & offered_values:
            found[feature] = True
        else:
            found[feature] = False if bool(getattr(fact, "complete", False)) else None
    return found, None


def distributed_feature_coverage(data: ScoringData) -> CriterionResult:
    rows: list[Row] = []
    missing: list[Missing] = []
    notes = {}
    for adapter_id in data.adapters:
        found, reason = distributed_features(data, adapter_id)
        known = {feature: present for feature, present in (found or {}).items() if present is not None}
        if found is None or not known:
            missing.append((adapter_id, ALL_WORKLOADS, reason or "the registry taxonomy is unknown"))
            continue
        rows.append((adapter_id, ALL_WORKLOADS, 0, sum(known.values()) / len(known)))
        offered = [feature for feature, present in known.items() if present]
        note = f"{len(offered)} of {len(known)}: " + (", ".join(offered) if offered else "none")
        unknown = [feature for feature, present in found.items() if present is None]
        if unknown:
            note += f"; unknown: {', '.join(unknown)}"
        notes[(adapter_id, ALL_WORKLOADS)] = note
    return CriterionResult.build(rows, missing, notes=notes)


# -- licence -----------------------------------------------------------------------------------------

#: Licence classes and their scores: how much use the licence permits without obligations on the
#: user's own code (permissive 1, weak copyleft 0.75, strong copyleft 0.5, network copyleft 0.25).
#: Checked in this order, as whole words, so that "LGPL" is not read as "GPL".
LICENCE_CLASSES: tuple[tuple[str, float, str], ...] = (
    ("network copyleft", 0.25, r"agpl|affero"),
    ("weak copyleft", 0.75, r"lgpl|lesser general|mpl|mozilla|epl|eclipse public"),
    ("strong copyleft", 0.5, r"gpl|general public licen[cs]e"),
    ("permissive", 1.0, r"mit|bsd|apache|isc|zlib|unlicense|psf|python software foundation|cc0|bsl"),
)


def classify_licence(text: str) -> tuple[str, float] | None:
    """(class, score) of a licence name or SPDX expression, or None when it is not recognised."""
    lowered = text.lower()
    for name, score, pattern in LICENCE_CLASSES:
        if re.search(rf"(?<![a-z])(?:{pattern})(?:v?\d)?(?![a-z])", lowered):
            return name, score
    return None


def _metadata_licence(distribution: str, installation: Installation = MAIN) -> str | None:
    found = installation.distribution(distribution)
    if found is None:
        return None
    metadata = found.metadata
    expression = metadata.get("License-Expression")
    if expression:
        return expression
    text = (metadata.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= 80:  # a name, not the licence's full text
        return text
    for classifier in metadata.get_all("Classifier") or []:
        if classifier.startswith("License :: ") and classifier.split(" :: ")[-1] != "OSI Approved":
            return classifier.split(" :: ")[-1]
    return None


def licence(data: ScoringData) -> CriterionResult:
    rows: list[Row] = []
    missing: list[Missing] = []
    labels: dict[tuple[str, str], str] = {}
    notes: dict[tuple[str, str], str] = {}
    for adapter_id in data.adapters:
        key = (adapter_id, ALL_WORKLOADS)
        entry, registry_reason = _registry_entry(data, adapter_id)
        text = None
        if entry is not None:
            text, registry_reason = registry_value(entry, ("licence", "license"))
        source = "registry"
        if text is None:
            name, _, package_reason = _framework_distribution(data, adapter_id)
            installation, _ = _installation(data, adapter_id)
            text = _metadata_licence(name, installation or MAIN) if name else None
            source = "package metadata"
            if text is None:
                reasons = [registry_reason or "the registry entry has no licence",
                           package_reason or "its package metadata names none"]
                missing.append((*key, "; ".join(reasons)))
                continue
        text = str(text)
        classified = classify_licence(text)
        if classified is None:
            missing.append((*key, f"licence {text!r} is not one the scoring classifies"))
            continue
        rows.append((*key, 0, classified[1]))
        labels[key] = text
        if source == "package metadata":
            source = f"package metadata of {name}"
        notes[key] = f"{classified[0]}, from the {source}"
    return CriterionResult.build(rows, missing, labels=labels, notes=notes)


# -- maintenance -------------------------------------------------------------------------------------


def _as_date(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value[:10])
        except ValueError:
            return None
    for name in ("date", "released", "release_date"):  # a nested release record
        inner = value.get(name) if isinstance(value, dict) else getattr(value, name, None)
        if inner is not None and inner is not value:
            return _as_date(inner)
    return None


def release_age(data: ScoringData) -> CriterionResult:
    rows: list[Row] = []
    missing: list[Missing] = []
    labels: dict[tuple[str, str], str] = {}
    measured = data.measured_at
    today = dt.datetime.fromtimestamp(measured, dt.UTC).date() if measured else dt.datetime.now(dt.UTC).date()
    for adapter_id in data.adapters:
        key = (adapter_id, ALL_WORKLOADS)
        entry, reason = _registry_entry(data, adapter_id)
        if entry is None:
            missing.append((*key, reason or "no registry entry"))
            continue
        raw, reason = registry_value(entry, ("latest_release",))
        if isinstance(raw, str) and raw == "none":
            missing.append((*key, "the framework has never made a release"))
            continue
        released = _as_date(raw) if raw is not None else None
        if released is None:
            missing.append((*key, reason or f"the registry's latest release {raw!r} has no date"))
            continue
        rows.append((*key, 0, float(max(0, (today - released).days))))
        version = raw.get("version") if isinstance(raw, dict) else getattr(raw, "version", None)
        labels[key] = f"{version} ({released.isoformat()})" if version else released.isoformat()
    return CriterionResult.build(rows, missing, labels=labels)


# -- fidelity ----------------------------------------------------------------------------------------

#: What each fidelity status is worth: the setting reached the framework exactly, approximately, or not.
FIDELITY_SCORES = {"exact": 1.0, "approximate": 0.5, "unsupported": 0.0}


def setting_fidelity(data: ScoringData) -> CriterionResult:
    """Per adapter, one sample per workload it started: the mean fidelity score of every setting in
    the run's fidelity report (the last started run of the workload)."""
    runs = data.attempted_runs
    runs = runs[runs["fidelity_json"].notna()] if "fidelity_json" in runs else runs.iloc[0:0]
    latest = runs.drop_duplicates(["adapter", "workload_id"], keep="last")
    rows: list[Row] = []
    notes: dict[tuple[str, str], str] = {}
    for adapter_id, group in latest.groupby("adapter", sort=True):
        counts = {status: 0 for status in FIDELITY_SCORES}
        for sample, text in enumerate(group["fidelity_json"].tolist()):
            entries = json.loads(text) if isinstance(text, str) else list(text or [])
            statuses = [str(item.get("status")) for item in entries if isinstance(item, dict)]
            if not statuses:
                continue
            for status in statuses:
                counts[status] = counts.get(status, 0) + 1
            rows.append((adapter_id, ALL_WORKLOADS, sample,
                         sum(FIDELITY_SCORES.get(status, 0.0) for status in statuses) / len(statuses)))
        notes[(adapter_id, ALL_WORKLOADS)] = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    have = {row[0] for row in rows}
    missing = [(a, ALL_WORKLOADS, "no started run with a fidelity report") for a in data.adapters if a not in have]
    return CriterionResult.build(rows, missing, notes=notes)


# -- registration ------------------------------------------------------------------------------------

_RATIO = " Scored as the best adapter's value divided by this one."

CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        id="glue_lines", title="Adapter glue size", category=DEVELOPMENT, unit="logical lines", direction=LOWER,
        per_workload=False, compute=_simple(glue_lines),
        method="Logical lines of code (radon's LLOC) of the adapter module: the glue needed to run "
               "rlcompare's standard workloads (translation of the canonical settings, training loop, "
               "policy hand-over) on the framework." + _RATIO,
    ),
    Criterion(
        id="glue_complexity", title="Adapter glue complexity", category=DEVELOPMENT, unit="cyclomatic complexity",
        direction=LOWER, per_workload=False, compute=_simple(glue_complexity),
        method="Sum of the cyclomatic complexity (radon) of every function and method in the adapter "
               "module." + _RATIO,
    ),
    Criterion(
        id="install_size", title="Install footprint (size)", category=DEVELOPMENT, unit="MiB", direction=LOWER,
        per_workload=False, compute=_simple(install_size),
        method="Bytes of the installed files (RECORD sizes from importlib.metadata) of the framework's "
               "distribution and every distribution its requirements pull in transitively (extras and "
               "requirements whose markers do not hold here excluded). Shared dependencies count for "
               "every framework that needs them." + _RATIO,
    ),
    Criterion(
        id="install_distributions", title="Install footprint (distributions)", category=DEVELOPMENT,
        unit="distributions", direction=LOWER, per_workload=False, compute=_simple(install_distributions),
        method="Number of installed distributions in the same transitive requirement closure as the "
               "install size, the framework's own included." + _RATIO,
    ),
    Criterion(
        id="cold_import", title="Cold import time", category=DEVELOPMENT, unit="s", direction=LOWER,
        per_workload=False, compute=_simple(cold_import),
        method=f"Seconds to import, in {IMPORT_REPEATS} fresh Python interpreters of the environment the "
               "adapter runs in (the interpreter's own start-up excluded), what a run imports of the "
               "framework: its import name and every module of its package the adapter module imports "
               "(a framework whose top-level package is empty is not timed on next to nothing). The "
               "repeats give the interval. Cached per distribution version and environment." + _RATIO,
    ),
    Criterion(
        id="docstring_coverage", title="Public-API docstring coverage", category=DEVELOPMENT, unit="share",
        direction=HIGHER, normalization="share", per_workload=False, compute=_simple(docstring_coverage),
        method="Share of public classes, functions and methods with a non-empty docstring, introspected "
               "in a fresh interpreter of the environment the adapter runs in, after importing what a run "
               "imports of the framework (as for the cold import time): the names the framework package "
               "and its public submodules then loaded export (``__all__`` where defined), defined in the "
               "package itself, and the public methods of those classes.",
    ),
    Criterion(
        id="type_hint_coverage", title="Public-API type-hint coverage", category=DEVELOPMENT, unit="share",
        direction=HIGHER, normalization="share", per_workload=False, compute=_simple(type_hint_coverage),
        method="Share of the public Python functions and methods (same walk as docstring coverage) "
               "whose every parameter (self and cls aside) and return value is annotated.",
    ),
    Criterion(
        id="algorithm_coverage", title="Canonical algorithm coverage", category=DEVELOPMENT, unit="share",
        direction=HIGHER, normalization="share", per_workload=False, compute=_simple(algorithm_coverage),
        method="Share of rlcompare's canonical algorithms (PPO, A2C, DQN, SAC) the adapter declares in its "
               "capabilities, i.e. that can be compared on identical workloads.",
    ),
    Criterion(
        id="registry_algorithms", title="Algorithms offered", category=DEVELOPMENT, unit="algorithms",
        direction=HIGHER, per_workload=False, compute=_simple(registry_algorithms),
        method="Number of distinct algorithms the framework offers according to its registry entry. "
               "Scored as a ratio to the framework offering the most.",
    ),
    Criterion(
        id="distributed_feature_coverage", title="Distributed-feature coverage", category=DEVELOPMENT,
        unit="share", direction=HIGHER, normalization="share", per_workload=False,
        compute=distributed_feature_coverage,
        method="Share of seven parallel and distributed features offered, among those whose status is "
               "known: vectorized environments, multi-process workers, asynchronous sampling or learning "
               "(declared in the adapter's capabilities, or recorded in the registry taxonomy), GPU batch "
               "simulation, multi-GPU training, multi-node cluster execution and a distributed "
               "actor/learner architecture (registry taxonomy, the survey's vocabulary). Features the "
               "registry records as unknown are left out of the share and named in the note; without a "
               "registry entry the cell is missing.",
    ),
    Criterion(
        id="licence", title="Licence", category=DEVELOPMENT, unit="class", direction=HIGHER,
        normalization="share", per_workload=False, compute=licence,
        method="The framework's licence from its registry entry (else its package metadata), classed "
               "by the obligations it puts on users' code: permissive 1, weak copyleft 0.75, strong "
               "copyleft 0.5, network copyleft 0.25. An unclassifiable licence is missing.",
    ),
    Criterion(
        id="setting_fidelity", title="Workload fidelity", category=DEVELOPMENT, unit="share", direction=HIGHER,
        normalization="share", per_workload=False, compute=setting_fidelity,
        method="How much of the workload reaches the framework as asked: every setting of a run's "
               "fidelity report (canonical hyperparameters, network, parallelism, evaluation) scores 1 "
               "when mapped exactly, 0.5 approximately and 0 when unsupported; one sample per workload "
               "started (its latest run), averaged. A pair with most canonical settings unsupported is "
               "refused before running.",
    ),
    Criterion(
        id="release_age", title="Latest release age", category=DEVELOPMENT, unit="days", direction=LOWER,
        normalization="half-life", half_life=365.0, per_workload=False, compute=release_age,
        method="Days from the framework's latest release (the registry entry's sourced latest_release "
               "fact: version and date) to the newest run in the store, so re-scoring a store gives the "
               "same figure; missing when the registry records it as unknown or the framework never "
               "released. Scored 0.5 ** (days / 365): a release a year old scores 0.5.",
    ),
)


@hookimpl
def rlcompare_register_criteria(register: Any) -> None:
    for criterion in CRITERIA:
        register.add_criterion(criterion)
