"""Development-facilitation criteria, measured on a tiny installed package (pluggy) through a test
adapter, with real registry entries (built-in ones, or built-in ones with facts replaced, validated by
the registry's own schema)."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

import pluggy
import pytest
import rlcompare_criteria.development as development
from rlcompare_criteria import api_coverage, cold_import, feature_coverage, footprint, fresh_interpreter, licence

from rlcompare.adapter import Adapter, Capabilities
from rlcompare.plugins.manager import Plugins
from rlcompare.plugins.register import Register
from rlcompare.registry.entries import FrameworkEntry, framework_entry_from_dict
from rlcompare.registry.loading import load_builtin_entries
from rlcompare.scoring.criteria import ALL_WORKLOADS, MeasurementCache, ScoringData
from rlcompare.store.sqlite_store import Store
from tests.test_criteria_support import run_record, workload_spec, write_store

FINISHED_AT = dt.datetime(2025, 1, 31, 12, tzinfo=dt.UTC).timestamp()


class PluggyAdapter(Adapter):
    id = "plug"
    framework = "pluggy-fw"
    import_name = "pluggy"
    distributions = ("pluggy",)

    def capabilities(self) -> Capabilities:
        return Capabilities(algorithms=frozenset({"PPO", "DQN", "TRPO"}), rollout_workers=True,
                            modes=frozenset({"sync", "async"}))

    def fidelity(self, workload: Any) -> list:
        return []

    def train(self, workload: Any, context: Any) -> Any:
        raise NotImplementedError


class BareAdapter(PluggyAdapter):
    id = "bare"
    framework = "bare-fw"
    import_name = None
    distributions = ()


def entry_like(base_id: str, new_id: str, **facts: Any) -> FrameworkEntry:
    """A real, schema-validated registry entry: a built-in one under another id, with some facts
    replaced (each given as a value, or as a dict of fact fields such as value and complete)."""
    base = next(entry for entry in load_builtin_entries() if entry.id == base_id)
    data = base.model_dump(mode="python")
    data["id"] = new_id
    for name, fact in facts.items():
        update = fact if isinstance(fact, dict) else {"value": fact}
        data[name] = {**data[name], **update}
    return framework_entry_from_dict(data, f"test entry {new_id}")


#: pluggy-fw: GPL, four algorithm names (one twice), vectorized envs, multi-process and multi-node,
#: synchronization unknown, architecture complete (non-distributed), released 2024-01-31.
ENTRY = entry_like(
    "stable-baselines3", "pluggy-fw", licence="GPL-3.0-only",
    algorithms={"value": ("PPO", "DQN", "IMPALA"), "complete": False},
    simulation_parallelism={"value": ("vectorized-cpu",), "complete": False},
    computing_parallelism={"value": ("multi-process", "multi-node"), "complete": False},
    synchronization={"value": "unknown", "complete": False, "evidence": (), "searched": "nowhere, on purpose"},
    architecture={"value": ("non-distributed",), "complete": True},
    latest_release={"value": {"version": "1.0", "date": dt.date(2024, 1, 31)}},
)


def _plugins(frameworks: dict[str, FrameworkEntry] | None) -> Plugins:
    """Real plugins: the two test adapters and the given registry entries, through the Register."""
    register = Register()
    register.add_adapter(PluggyAdapter)
    register.add_adapter(BareAdapter)
    for entry in (frameworks or {}).values():
        register.add_framework(entry)
    return Plugins(manager=pluggy.PluginManager("rlcompare"), register=register, errors=[])


def _data(tmp_path: Path, frameworks: dict[str, Any] | None) -> ScoringData:
    spec = workload_spec("w")
    runs = [(run_record(spec, adapter, 0, framework=fw, final_return=1.0, finished_at=FINISHED_AT), [])
            for adapter, fw in (("plug", "pluggy-fw"), ("bare", "bare-fw"), ("ghost", "ghost-fw"))]
    path = write_store(tmp_path / "store.db", runs)
    with Store(path) as store:
        return ScoringData(store.runs_frame(), catalogue=_plugins(frameworks).scoring_catalogue(),
                           cache=MeasurementCache(tmp_path / "cache.json"))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> ScoringData:
    return _data(tmp_path_factory.mktemp("dev"), {"pluggy-fw": ENTRY})


def _values(result: Any) -> dict[str, list[float]]:
    grouped: dict[str, list[float]] = {}
    for row in result.values.itertuples():
        assert row.workload_id == ALL_WORKLOADS
        grouped.setdefault(row.adapter, []).append(row.value)
    return grouped


def _missing(result: Any) -> dict[str, str]:
    return {row.adapter: row.reason for row in result.missing.itertuples()}


def _criterion(criterion_id: str) -> Any:
    return next(c for c in development.CRITERIA if c.id == criterion_id)


def test_glue_size_is_counted_with_radon(data: ScoringData) -> None:
    """Over the adapter's whole top-level package: for ``plug``, defined in this module, every module
    of ``tests`` (docs/criteria.md, glue_lines), not this module alone."""
    from radon.complexity import cc_visit
    from radon.raw import analyze
    from radon.visitors import Function

    sources = [path.read_text(encoding="utf-8") for path in sorted(Path(__file__).parent.rglob("*.py"))]
    assert inspect.getsource(sys.modules[__name__]) in sources and len(sources) > 1
    lines = _criterion("glue_lines").compute(data)
    assert _values(lines)["plug"] == [float(sum(analyze(source).lloc for source in sources))]
    complexity = _criterion("glue_complexity").compute(data)
    expected = sum(b.complexity for source in sources for b in cc_visit(source) if isinstance(b, Function))
    assert _values(complexity)["plug"] == [float(expected)]
    assert _missing(lines)["ghost"] == "adapter 'ghost' is not installed here (no plugin registers it)"


def test_install_footprint_reads_installed_metadata(data: ScoringData) -> None:
    record = importlib.metadata.distribution("pluggy").files
    expected_bytes = sum(f.size or f.locate().stat().st_size for f in record)
    assert _values(_criterion("install_distributions").compute(data))["plug"] == [1.0]  # pluggy needs nothing
    assert _values(_criterion("install_size").compute(data))["plug"] == [pytest.approx(expected_bytes / 2**20)]
    assert _missing(_criterion("install_size").compute(data))["bare"] == (
        "adapter 'bare' declares no import name and no distributions")


def test_install_closure_follows_requirements() -> None:
    closure = footprint.install_closure("pytest")
    assert {"pytest", "pluggy", "iniconfig"} <= set(closure["names"])
    assert closure["distributions"] == len(closure["names"])


def test_install_closure_follows_extras_and_unions_roots() -> None:
    plain = footprint.install_closure("ray")
    with_rllib = footprint.install_closure("ray[rllib]")
    assert "gymnasium" not in plain["names"] and "gymnasium" in with_rllib["names"]  # rllib's extra needs it
    both = footprint.install_closure("ray[rllib]", "pluggy")
    assert set(both["names"]) == set(with_rllib["names"]) | {"pluggy"}
    assert both["bytes"] >= with_rllib["bytes"]


def test_cold_import_is_timed_in_fresh_interpreters_and_cached(data: ScoringData, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _values(_criterion("cold_import").compute(data))["plug"]
    assert len(samples) == cold_import.IMPORT_REPEATS and all(0 < s < 30 for s in samples)
    cached = json.loads(data.cache.path.read_text())
    assert any(key.startswith("import|pluggy|pluggy|") for key in cached)

    def no_subprocess(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("measured again instead of using the cache")

    monkeypatch.setattr(fresh_interpreter.subprocess, "run", no_subprocess)
    fresh = ScoringData(data.runs, catalogue=data.catalogue, cache=MeasurementCache(data.cache.path))
    assert _values(_criterion("cold_import").compute(fresh))["plug"] == samples


def test_api_coverage_is_introspected(data: ScoringData) -> None:
    docs = _values(_criterion("docstring_coverage").compute(data))["plug"][0]
    hints = _values(_criterion("type_hint_coverage").compute(data))["plug"][0]
    counts = api_coverage.introspect_api("pluggy")
    assert counts["objects"] > 5 and counts["functions"] > 5
    assert docs == pytest.approx(counts["documented"] / counts["objects"])
    assert hints == pytest.approx(counts["typed"] / counts["functions"])
    assert 0 < docs <= 1 and 0 < hints <= 1
    assert _missing(_criterion("docstring_coverage").compute(data))["bare"] == "adapter 'bare' declares no import name"


def test_the_last_timed_interpreter_walks_the_api_as_a_fresh_one_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API walked after the timed import is the one introspect_api walks in an interpreter of its
    own, and no interpreter is started for it; without the warm-up only the timed ones start."""
    calls: list[str] = []
    real_run_in = fresh_interpreter.run_in
    monkeypatch.setattr(fresh_interpreter, "run_in", lambda *a: calls.append(a[2][0]) or real_run_in(*a))
    timed = cold_import.time_cold_import(["pluggy"], repeats=2, warm_up=False, walk_api=True)
    assert len(calls) == 2 and len(timed["seconds"]) == 2 and len(timed["cpu_seconds"]) == 2
    assert timed["api"] == api_coverage.introspect_api(["pluggy"])
    assert timed["api"]["objects"] > 5
    assert "api" not in cold_import.time_cold_import(["pluggy"], repeats=1)


def test_a_cold_import_measured_now_keeps_the_api_walked_with_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring measures the cold import first; the API counts come with it, so the docstring criterion
    finds them cached and starts no interpreter, and the counts are those of introspect_api."""
    data = _data(tmp_path, {"pluggy-fw": ENTRY})  # a cache of its own: nothing measured yet
    seconds = _values(_criterion("cold_import").compute(data))["plug"]
    assert len(seconds) == cold_import.IMPORT_REPEATS

    def no_subprocess(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the API was walked again in an interpreter of its own")

    monkeypatch.setattr(fresh_interpreter.subprocess, "run", no_subprocess)
    docs = _values(_criterion("docstring_coverage").compute(data))["plug"][0]
    monkeypatch.undo()
    counts = api_coverage.introspect_api("pluggy")
    assert docs == pytest.approx(counts["documented"] / counts["objects"])


def test_failed_import_is_missing_with_the_error() -> None:
    result = cold_import.time_cold_import("no_such_module_for_rlcompare", repeats=1)
    assert result["error"].startswith("import no_such_module_for_rlcompare failed: ModuleNotFoundError")


def test_coverage_from_capabilities_and_registry(data: ScoringData) -> None:
    assert _values(_criterion("algorithm_coverage").compute(data))["plug"] == [0.5]  # PPO, DQN of 4
    assert _values(_criterion("registry_algorithms").compute(data))["plug"] == [3.0]  # distinct names
    features = _criterion("distributed_feature_coverage").compute(data)
    # offered: vectorized envs, workers, async (capabilities) and multi-node (taxonomy); not offered:
    # a distributed architecture (the architecture list is complete); unknown: GPU batch simulation and
    # multi-GPU (incomplete lists that do not name them), counted as not offered: unknown never helps
    # (4 of the 5 known would give a framework that leaves facts unknown a better share) -> 4 of 7
    assert _values(features)["plug"] == [pytest.approx(4 / 7)]
    assert features.notes[("plug", ALL_WORKLOADS)] == (
        "4 of 7: vectorized environments, multi-process workers, asynchronous sampling or learning, "
        "multi-node cluster; unknown (counted as not offered): GPU batch simulation, multi-GPU training")
    assert _missing(features)["bare"] == "framework 'bare-fw' has no registry entry"


def test_complete_lists_and_false_are_known_absence_incomplete_lists_are_not(tmp_path: Path) -> None:
    entry = entry_like(
        "stable-baselines3", "pluggy-fw",
        simulation_parallelism={"value": (), "complete": True},        # known: none at all
        computing_parallelism={"value": ("multi-process",), "complete": False},  # says nothing of GPUs/nodes
        architecture={"value": ("non-distributed",), "complete": True},
    )
    found, _ = feature_coverage.distributed_features(_data(tmp_path, {"pluggy-fw": entry}), "plug")
    assert found["GPU batch simulation"] is False
    assert found["multi-GPU training"] is None and found["multi-node cluster"] is None
    assert found["distributed architecture"] is False
    assert found["vectorized environments"] is True  # declared in the adapter's capabilities


def test_licence_and_release_age_from_the_registry(data: ScoringData) -> None:
    result = _criterion("licence").compute(data)
    assert _values(result)["plug"] == [0.5]
    assert result.labels[("plug", ALL_WORKLOADS)] == "GPL-3.0-only"
    age = _criterion("release_age").compute(data)
    assert _values(age)["plug"] == [366.0]  # 2024-01-31 to 2025-01-31, a leap year
    assert age.labels[("plug", ALL_WORKLOADS)] == "1.0 (2024-01-31)"


def test_every_builtin_adapter_gets_release_age_and_licence_from_its_real_registry_entry(tmp_path: Path) -> None:
    from rlcompare.plugins.manager import build_plugin_manager

    plugins = build_plugin_manager(autoload=False)
    spec = workload_spec("w")
    runs = [(run_record(spec, adapter_id, 0, framework=adapter.framework, final_return=1.0), [])
            for adapter_id, adapter in sorted(plugins.adapters.items())]
    with Store(write_store(tmp_path / "store.db", runs)) as store:
        data = ScoringData(store.runs_frame(), catalogue=plugins.scoring_catalogue(), cache=MeasurementCache(tmp_path / "c.json"))
    ages = _values(_criterion("release_age").compute(data))
    licences = _criterion("licence").compute(data)
    for adapter_id, adapter in plugins.adapters.items():
        entry = plugins.frameworks[adapter.framework]
        released = entry.latest_release.value.date
        measured = dt.datetime.fromtimestamp(data.measured_at, dt.UTC).date()
        assert ages[adapter_id] == [float(max(0, (measured - released).days))], adapter_id
        assert licences.labels[(adapter_id, ALL_WORKLOADS)] == entry.licence.value
        assert licences.notes[(adapter_id, ALL_WORKLOADS)].endswith("from the registry")


def test_licence_falls_back_to_the_framework_own_distribution_not_the_first_listed(tmp_path: Path) -> None:
    class NumpyFirst(PluggyAdapter):
        id = "numpy-first"
        framework = "nowhere-fw"
        distributions = ("numpy", "pluggy")  # numpy first, but the framework is pluggy

    register = Register()
    register.add_adapter(NumpyFirst)
    plugins = Plugins(manager=pluggy.PluginManager("rlcompare"), register=register, errors=[])
    runs = [(run_record(workload_spec("w"), "numpy-first", 0, framework="nowhere-fw", final_return=1.0), [])]
    with Store(write_store(tmp_path / "store.db", runs)) as store:
        data = ScoringData(store.runs_frame(), catalogue=plugins.scoring_catalogue(), cache=MeasurementCache(None))
    licence = _criterion("licence").compute(data)
    assert licence.labels[("numpy-first", ALL_WORKLOADS)] == "MIT"  # pluggy's, not numpy's BSD
    assert licence.notes[("numpy-first", ALL_WORKLOADS)] == "permissive, from the package metadata of pluggy"


def test_without_a_registry_cells_are_missing_or_fall_back_to_package_metadata(tmp_path: Path) -> None:
    data = _data(tmp_path, None)
    for criterion_id in ("registry_algorithms", "distributed_feature_coverage", "release_age"):
        assert _missing(_criterion(criterion_id).compute(data))["plug"] == "no framework registry is installed"
    licence = _criterion("licence").compute(data)
    assert _values(licence)["plug"] == [1.0]  # pluggy's metadata: MIT
    assert licence.notes[("plug", ALL_WORKLOADS)] == "permissive, from the package metadata of pluggy"
    assert "no framework registry is installed" in _missing(licence)["ghost"]


def test_unknown_registry_facts_are_missing_with_the_reason(tmp_path: Path) -> None:
    unknown = {"value": "unknown", "complete": False, "evidence": (), "searched": "nowhere, on purpose"}
    entry = entry_like("stable-baselines3", "pluggy-fw", licence=unknown, algorithms=unknown,
                       latest_release=unknown)
    data = _data(tmp_path, {"pluggy-fw": entry})
    assert _missing(_criterion("registry_algorithms").compute(data))["plug"] == "the registry records algorithms as unknown"
    assert _missing(_criterion("release_age").compute(data))["plug"] == "the registry records latest_release as unknown"
    licence = _criterion("licence").compute(data)  # unknown in the registry: the package metadata says MIT
    assert licence.labels[("plug", ALL_WORKLOADS)] == "MIT"


def test_a_framework_that_never_released_has_no_release_age(tmp_path: Path) -> None:
    entry = entry_like("stable-baselines3", "pluggy-fw", latest_release="none")
    data = _data(tmp_path, {"pluggy-fw": entry})
    assert _missing(_criterion("release_age").compute(data))["plug"] == "the framework has never made a release"


@pytest.mark.parametrize(("text", "expected"), [
    ("MIT", ("permissive", 1.0)), ("BSD-3-Clause", ("permissive", 1.0)), ("Apache-2.0", ("permissive", 1.0)),
    ("LGPLv2+", ("weak copyleft", 0.75)), ("MPL-2.0", ("weak copyleft", 0.75)),
    ("GPL-3.0-or-later", ("strong copyleft", 0.5)), ("AGPL-3.0", ("network copyleft", 0.25)),
    ("Simplified BSD", ("permissive", 1.0)), ("Proprietary", None),
])
def test_licence_classes(text: str, expected: tuple[str, float] | None) -> None:
    assert licence.classify_licence(text) == expected


def test_remeasure_measures_each_key_once_more_and_keeps_the_cache_fresh(tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.json"
    calls: list[str] = []

    def measure() -> int:
        calls.append("measured")
        return len(calls)

    assert MeasurementCache(cache_path).get_or_compute("k", measure) == 1
    assert MeasurementCache(cache_path).get_or_compute("k", measure) == 1  # warm: not measured again
    refreshing = MeasurementCache(cache_path, refresh=True)
    assert refreshing.get_or_compute("k", measure) == 2
    assert refreshing.get_or_compute("k", measure) == 2  # once per scoring, not per criterion
    assert MeasurementCache(cache_path).get_or_compute("k", measure) == 2
    assert json.loads(cache_path.read_text()) == {"k": 2}


def test_two_commands_measuring_at_once_keep_each_others_measurements(tmp_path: Path) -> None:
    """A ``score`` beside a ``run`` (or two test workers): each read the file before the other
    wrote, and each save merges into the file as it is then instead of writing its own copy."""
    cache_path = tmp_path / "cache.json"
    first, second = MeasurementCache(cache_path), MeasurementCache(cache_path)
    assert first.lookup("a") == second.lookup("b") == (False, None)  # both loaded the empty file
    first.get_or_compute("a", lambda: 1)
    second.get_or_compute("b", lambda: 2)
    first.keep("c", 3)
    assert json.loads(cache_path.read_text()) == {"a": 1, "b": 2, "c": 3}
    assert MeasurementCache(cache_path).lookup("b") == (True, 2)
    assert not list(tmp_path.glob("*.tmp"))


def test_the_default_cache_lives_in_the_user_cache_not_beside_the_store(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    monkeypatch.delenv("RLCOMPARE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert MeasurementCache.default_path() == tmp_path / "xdg" / "rlcompare" / "measurements.json"
    monkeypatch.setenv("RLCOMPARE_CACHE_DIR", str(tmp_path / "mine"))
    assert MeasurementCache.default_path() == tmp_path / "mine" / "measurements.json"


# -- what a run imports of its framework ---------------------------------------------------------------


def test_framework_modules_are_the_modules_of_its_package_the_adapter_imports() -> None:
    from rlcompare.harness.framework_import import imported_modules

    source = '''
from __future__ import annotations
import os
import lazyfw
import lazyfwx.other
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from lazyfw.typing_only import Hint
else:
    from lazyfw.runtime import Thing
from . import sibling

def train():
    from lazyfw.agents.ppo import PPO
    import lazyfw.trainers, numpy
    from lazyfw.agents.ppo import PPO_CFG
    importlib.import_module("lazyfw.memories")
    __import__("lazyfw.models")
    import_module(name_chosen_at_run_time)
'''
    assert imported_modules(source, "lazyfw") == ["lazyfw", "lazyfw.runtime", "lazyfw.agents.ppo", "lazyfw.trainers",
                                                  "lazyfw.memories", "lazyfw.models"]
    # bodies that never run are left out; a home-made TYPE_CHECKING flag that does run is not
    never = """
import typing as t
if t.TYPE_CHECKING:
    import lazyfw.hint_only
if False:
    import lazyfw.dead
if 0:
    import lazyfw.dead_too
"""
    assert imported_modules(never, "lazyfw") == []
    home_made = """
TYPE_CHECKING = True
if TYPE_CHECKING:
    from lazyfw.agents import Agent
"""
    assert imported_modules(home_made, "lazyfw") == ["lazyfw.agents"]


def _one_adapter_data(tmp_path: Path, adapter_class: type[Adapter]) -> ScoringData:
    """Scoring data of one valid run of ``adapter_class``, registered as an outside plugin would be."""
    register = Register()
    register.add_adapter(adapter_class)
    plugins = Plugins(manager=pluggy.PluginManager("rlcompare"), register=register, errors=[])
    record = run_record(workload_spec("w"), adapter_class.id, 0, framework=adapter_class.framework, final_return=1.0,
                        finished_at=FINISHED_AT)
    with Store(write_store(tmp_path / "store.db", [(record, [])])) as store:
        return ScoringData(store.runs_frame(), catalogue=plugins.scoring_catalogue(), cache=MeasurementCache(None))


LAZY_FRAMEWORK = {
    "lazyfw/__init__.py": '"""A framework whose top-level package imports nothing."""\n',
    "lazyfw/agents.py": '"""What training needs: slow to import."""\nimport time\n\ntime.sleep(0.4)\n\n\n'
                        'class Agent:\n    """An agent."""\n',
    "lazyfw/broken.py": 'raise RuntimeError("an optional part that does not work here")\n',
    "lazyfw-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: lazyfw\nVersion: 1.0\n",
    "lazyfw_pkg_adapter/__init__.py": (
        '"""An adapter package whose framework imports live in a helper module."""\n'
        "from tests.test_criteria_development import PluggyAdapter\n\n\n"
        "class PackagedAdapter(PluggyAdapter):\n"
        '    id = "packaged"\n    framework = "lazy-fw"\n    import_name = "lazyfw"\n    distributions = ("lazyfw",)\n'),
    "lazyfw_pkg_adapter/helpers.py": "def agent():\n    from lazyfw.agents import Agent\n    return Agent\n",
    "lazyfw-1.0.dist-info/top_level.txt": "lazyfw\n",
    "lazyfw_adapter.py": (
        '"""The adapter of lazyfw: imports its agents lazily, as adapters do."""\n'
        "from tests.test_criteria_development import PluggyAdapter\n\n\n"
        "class LazyAdapter(PluggyAdapter):\n"
        '    id = "lazy"\n    framework = "lazy-fw"\n    import_name = "lazyfw"\n    distributions = ("lazyfw",)\n\n'
        "    def train(self, workload, context):\n"
        "        from lazyfw.agents import Agent\n"
        "        return Agent\n"),
}


def test_a_framework_with_an_empty_top_level_is_timed_on_what_a_run_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gaming attempt: a framework whose ``import lazyfw`` loads nothing would win the cold-import
    criterion on an empty module; it is timed on the modules its adapter imports, and its public
    API is walked there too."""
    for name, text in LAZY_FRAMEWORK.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[1])]))
    from lazyfw_adapter import LazyAdapter

    data = _one_adapter_data(tmp_path, LazyAdapter)
    from rlcompare.harness.framework_import import framework_modules

    assert framework_modules(LazyAdapter) == ("lazyfw", "lazyfw.agents")
    seconds = _values(_criterion("cold_import").compute(data))["lazy"]
    assert min(seconds) >= 0.4  # the sleep in lazyfw.agents counts
    assert cold_import.time_cold_import("lazyfw", repeats=1)["seconds"][0] < 0.4  # what the top level alone costs
    counts = api_coverage.introspect_api(["lazyfw", "lazyfw.agents"])
    assert counts["objects"] == 1 and counts["documented"] == 1  # lazyfw.agents.Agent, reached through the run's imports
    assert api_coverage.introspect_api("lazyfw")["objects"] == 0
    # imports in a helper module of the adapter's package count too
    from lazyfw_pkg_adapter import PackagedAdapter

    assert framework_modules(PackagedAdapter) == ("lazyfw", "lazyfw.agents")
    # an optional module that raises (not only ImportError) is skipped and named, after one warm-up
    calls: list[list[str]] = []
    real_run_in = fresh_interpreter.run_in
    monkeypatch.setattr(fresh_interpreter, "run_in", lambda *a: calls.append(list(a[2])) or real_run_in(*a))
    timed = cold_import.time_cold_import(["lazyfw", "lazyfw.broken"], repeats=2)
    assert len(timed["seconds"]) == 2 and len(calls) == 3  # the first import is discarded
    assert timed["skipped"] == ["lazyfw.broken: RuntimeError"]


def test_an_import_name_that_is_not_the_frameworks_own_is_not_measured(tmp_path: Path) -> None:
    """Gaming attempt: ``import_name = "json"`` would time the standard library (milliseconds) and
    introspect its well-documented API in the framework's place."""

    class Disguised(PluggyAdapter):
        id = "disguised"
        import_name = "json"

    data = _one_adapter_data(tmp_path, Disguised)
    for criterion_id in ("cold_import", "docstring_coverage", "type_hint_coverage"):
        result = _criterion(criterion_id).compute(data)
        assert result.values.empty
        assert _missing(result)["disguised"] == ("adapter 'disguised': import name 'json' is not a package of any "
                                                 "distribution it declares (pluggy)")


def test_a_failed_measurement_is_not_kept_and_an_interpreter_that_is_gone_is_one_line(tmp_path: Path) -> None:
    from rlcompare_criteria.installations import Installation

    gone = Installation(str(tmp_path / "env" / "bin" / "python"), (str(tmp_path),), "3.11.7", "0123456789abcdef")
    result = cold_import.time_cold_import("json", repeats=1, installation=gone)
    assert result["error"].startswith("environment 0123456789abcdef cannot start Python (")
    cache = MeasurementCache(tmp_path / "m.json")
    attempts: list[int] = []

    def failing() -> dict[str, str]:
        attempts.append(1)
        return {"error": "import x failed"}

    keep = lambda value: "error" not in value  # noqa: E731
    assert cache.get_or_compute("import|x", failing, keep=keep) == {"error": "import x failed"}
    assert MeasurementCache(tmp_path / "m.json").get_or_compute("import|x", failing, keep=keep) == failing()
    assert len(attempts) == 3  # measured each time: an error is never read back from the cache
    assert cache.get_or_compute("import|y", lambda: {"seconds": [1.0]}, keep=keep) == {"seconds": [1.0]}
    assert MeasurementCache(tmp_path / "m.json").get_or_compute("import|y", failing, keep=keep) == {"seconds": [1.0]}
