"""Adapter environments: keys, pip's index settings, isolation decisions, builds with uv (real
ones, of the numpy-only test adapter in tests/plugins/isolated), and a run whose worker lives in an
environment that holds only numpy, gymnasium and that adapter."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_criteria import adapter_lookup, cold_import, footprint

from rlcompare.pyenvs import manager as manager_module
from rlcompare.pyenvs.indexes import IndexSettings, pip_index_settings
from rlcompare.pyenvs.manager import (
    BYTECODE_MODE_ENV,
    COMPLETE,
    EnvironmentManager,
    EnvironmentSpec,
    isolation_reason,
    unsatisfied,
)
from tests.conftest import ROOT, TINY_WORKLOAD

ISOLATED_PLUGINS = ROOT / "tests" / "plugins" / "isolated"


def _env(cache: Path) -> dict[str, str]:
    parts = [str(ROOT), str(ISOLATED_PLUGINS)]
    return {**os.environ, "RLCOMPARE_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(parts)}


def _cli(args: list[str], cache: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rlcompare", *args], capture_output=True, text=True,
                          env=_env(cache), cwd=cwd, timeout=600)


@pytest.fixture
def isolated_plugin(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(ISOLATED_PLUGINS))
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    return ISOLATED_PLUGINS


# -- keys and settings (no builds) -------------------------------------------------------------------


def test_the_key_changes_when_any_of_its_parts_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("torch<=2.14.1\n", encoding="utf-8")
    indexes = IndexSettings(extra_index_urls=("file:///opt/pypi/simple",), find_links=("/opt/wheels",),
                            constraints=(str(constraints),))
    spec = EnvironmentSpec("tinyenv", ("numpy<2",), None, ("/src/rlcompare", "/src/tinyenv_rlcompare"))
    lock = "numpy==1.26.4\ngymnasium==0.29.1\n"

    def key(manager: EnvironmentManager, spec: EnvironmentSpec = spec, lock: str = lock, python: str = "3.11.7") -> str:
        return manager.key(spec, lock, python)["key"]

    manager = EnvironmentManager(tmp_path, indexes, uv="/nonexistent/uv")
    base = key(manager)
    assert key(manager) == base  # deterministic
    variants = {
        "lock": key(manager, lock=lock.replace("1.26.4", "1.26.3")),
        "python": key(manager, python="3.12.1"),
        "index url": key(EnvironmentManager(tmp_path, IndexSettings(index_url="https://example.org/simple",
                                                                    find_links=("/opt/wheels",)), uv="-")),
        "find-links": key(EnvironmentManager(tmp_path, IndexSettings(extra_index_urls=indexes.extra_index_urls,
                                                                     constraints=indexes.constraints), uv="-")),
        "sources": key(manager, spec=EnvironmentSpec("tinyenv", spec.requirements, None, ("/other/rlcompare",))),
    }
    constraints.write_text("torch<=2.13.0\n", encoding="utf-8")
    variants["constraint file content"] = key(manager)
    constraints.write_text("torch<=2.14.1\n", encoding="utf-8")
    monkeypatch.setattr(manager_module, "WORKER_PROTOCOL", manager_module.WORKER_PROTOCOL + 1)
    variants["worker protocol"] = key(manager)
    assert all(value != base for value in variants.values()), variants
    assert len(set(variants.values())) == len(variants)


def test_pip_settings_are_read_as_pip_reads_them_and_handed_to_uv(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text(
        "[global]\nfind-links = /opt/wheels\nextra-index-url = file:///a/simple file:///b/simple\n"
        "[install]\nconstraint = /etc/c.txt\n", encoding="utf-8")
    environ = {"HOME": str(home), "XDG_CONFIG_DIRS": str(tmp_path / "none"), "PIP_INDEX_URL": "https://idx/simple"}
    settings = pip_index_settings(environ)
    assert settings == IndexSettings(index_url="https://idx/simple", extra_index_urls=("file:///a/simple", "file:///b/simple"),
                                     find_links=("/opt/wheels",), constraints=("/etc/c.txt",))
    args = settings.uv_arguments()
    assert args[:2] == ["--index-strategy", "unsafe-best-match"]  # pip's rule across indexes
    assert ["--find-links", "/opt/wheels"] == args[args.index("--find-links"):args.index("--find-links") + 2]
    assert args.count("--extra-index-url") == 2 and "--index-url" in args
    # an environment variable overrides the files; PIP_CONFIG_FILE=/dev/null turns the files off
    assert pip_index_settings({**environ, "PIP_FIND_LINKS": "/w1 /w2"}).find_links == ("/w1", "/w2")
    assert pip_index_settings({**environ, "PIP_CONFIG_FILE": os.devnull}).find_links == ()


def test_only_adapters_that_do_not_fit_the_main_environment_get_their_own(isolated_plugin: Path) -> None:
    from tinyenv_rlcompare import TinyEnvAdapter, TinyFitAdapter

    reason = isolation_reason(TinyEnvAdapter)
    assert reason is not None and "gymnasium" in reason and "==0.29.1" in reason
    assert isolation_reason(TinyFitAdapter) is None  # fits: runs in the main environment at zero cost
    assert unsatisfied(["numpy>=1", "surely-not-installed-dist"]) == ["surely-not-installed-dist is not installed"]

    class Declared(TinyFitAdapter):
        id = "declared"
        requires_isolation = True

    assert isolation_reason(Declared) == "it declares requires_isolation"
    spec = EnvironmentSpec.for_adapter(TinyEnvAdapter)
    assert spec.requirements == ("numpy<2", "gymnasium==0.29.1", "numpy", "gymnasium")
    # one that fits, isolated on request, gets the main environment's versions: like for like
    from importlib.metadata import version

    assert EnvironmentSpec.for_adapter(TinyFitAdapter).requirements == (
        "numpy", "gymnasium", f"numpy=={version('numpy')}", f"gymnasium=={version('gymnasium')}")
    assert any(source.endswith("tinyenv_rlcompare") for source in spec.sources)


# -- real builds -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def isolated_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """One matrix of the pinned test adapter: the driver builds its environment, then runs it there."""
    cache = tmp_path_factory.mktemp("cache")
    work = tmp_path_factory.mktemp("run")
    (work / "tiny.toml").write_text(TINY_WORKLOAD, encoding="utf-8")
    done = _cli(["run", "--workload", "tiny.toml", "--adapters", "tinyenv", "--seeds", "1", "--store", "s.db"],
                cache, cwd=work)
    return cache, work / "s.db", done


def test_a_run_whose_adapter_conflicts_runs_in_an_environment_of_numpy_gymnasium_and_the_adapter(
        isolated_run: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    cache, store, done = isolated_run
    assert done.returncode == 0, done.stderr
    assert "tinyenv: own environment" in done.stderr and "gymnasium 1.2.2 does not satisfy ==0.29.1" in done.stderr
    [environment] = [path for path in (cache / "environments").iterdir() if path.name.startswith("tinyenv-")
                     and path.is_dir()]
    python = environment / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print([n for n in ('pydantic', 'pluggy', "
                            "'torch', 'pandas', 'rich') if u.find_spec(n)])"], capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"]}, timeout=60)
    assert probe.stdout.strip() == "[]", probe.stderr  # not even installed there
    connection = sqlite3.connect(store)
    connection.row_factory = sqlite3.Row
    run = connection.execute("SELECT * FROM runs WHERE run_id = 'tiny__tinyenv__s0'").fetchone()
    curve = connection.execute("SELECT env_steps, return_mean FROM curves WHERE run_id = 'tiny__tinyenv__s0' "
                               "ORDER BY env_steps").fetchall()
    assert run["status"] == "ok", run["error"]
    assert run["environment_key"] == environment.name.split("-")[-1]
    recorded = json.loads(run["environment_json"])
    assert recorded["python"] == str(python) and recorded["lock_digest"]
    versions = json.loads(run["versions_json"])
    assert versions["gymnasium"] == "0.29.1" and versions["numpy"].startswith("1.")
    native = json.loads(run["native_config_json"])
    assert native["python"] == str(python) and native["loaded"] == []
    assert not any(native["importable"].values())
    # the curve the driver stored: at the start, every 200 steps, and at the end of the budget
    assert [row[0] for row in curve] == [1, 200, 400, 600] and run["evaluations"] == 4
    assert run["env_steps"] == run["framework_env_steps"] == 600
    assert json.loads(run["fidelity_json"])  # computed by the driver, recorded with the run


def test_env_list_shows_the_environment_and_a_second_build_does_nothing(
        isolated_run: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    cache, _store, _done = isolated_run
    listed = _cli(["env", "list"], cache)
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split("\t")[:4] == ["adapter", "key", "state", "size"]
    [row] = rows
    adapter, key, state, size, own, python, path = row.split("\t")
    assert (adapter, state, python) == ("tinyenv", "ready", f"{sys.version_info.major}.{sys.version_info.minor}."
                                        f"{sys.version_info.micro}")
    assert size.endswith("MiB") and Path(path).name == f"tinyenv-{key}"
    info = json.loads(_cli(["env", "list", "tinyenv", "--json"], cache).stdout)[0]["info"]
    assert info["key_parts"]["worker_protocol"] == manager_module.WORKER_PROTOCOL
    assert info["uv_version"] and info["requirements"][:2] == ["numpy<2", "gymnasium==0.29.1"]
    again = _cli(["env", "build", "tinyenv"], cache)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split("\t")[:3] == ["tinyenv", key, "up to date"]


def test_development_criteria_measure_an_isolated_adapter_in_its_own_environment(
        isolated_run: tuple[Path, Path, subprocess.CompletedProcess[str]], isolated_plugin: Path,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Install footprint, cold import and API coverage of an adapter that runs in its own environment
    are measured there (gymnasium 0.29.1, numpy 1.x), not reported missing because the main
    environment lacks those versions, nor taken from the main environment's (gymnasium 1.2.2)."""
    import importlib.metadata

    import pluggy
    import rlcompare_criteria.development as development
    from rlcompare_criteria.installations import installation_of
    from tinyenv_rlcompare import TinyEnvAdapter

    from rlcompare.harness.measurement_cache import MeasurementCache
    from rlcompare.plugins.manager import Plugins
    from rlcompare.plugins.register import Register
    from rlcompare.scoring.criteria import ScoringData
    from rlcompare.store.sqlite_store import Store

    class NamedTinyEnv(TinyEnvAdapter):  # the same adapter, naming gymnasium as its framework's package
        import_name = "gymnasium"

    cache, store_path, done = isolated_run
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("RLCOMPARE_CACHE_DIR", str(cache))
    register = Register()
    register.add_adapter(NamedTinyEnv)
    plugins = Plugins(manager=pluggy.PluginManager("rlcompare"), register=register, errors=[])
    with Store(store_path) as store:
        runs = store.runs_frame()
    logged: list[str] = []
    data = ScoringData(runs, catalogue=plugins.scoring_catalogue(), cache=MeasurementCache(tmp_path / "m.json", log=logged.append))
    installation, reason = installation_of(data, NamedTinyEnv)
    recorded = json.loads(runs.loc[runs["adapter"] == "tinyenv", "environment_json"].iloc[0])
    assert reason is None and installation is not None
    assert (installation.python, installation.environment_key) == (recorded["python"], recorded["key"])
    assert importlib.metadata.version("gymnasium") != "0.29.1"  # the main environment's is another
    assert adapter_lookup.framework_distribution(data, "tinyenv") == ("gymnasium", "0.29.1", None)

    def value(criterion_id: str) -> list[float]:
        result = next(c for c in development.CRITERIA if c.id == criterion_id).compute(data)
        assert result.missing.empty, result.missing.to_dict("records")
        return result.values["value"].tolist()

    closure = footprint.install_closure("numpy", "gymnasium", installation=installation)
    assert closure["versions"]["gymnasium"] == "0.29.1" and closure["versions"]["numpy"].startswith("1.")
    assert "farama-notifications" in closure["names"]  # gymnasium 0.29's own requirement, read in the environment
    assert value("install_distributions") == [float(closure["distributions"])]
    assert value("install_size") == [pytest.approx(closure["bytes"] / 2**20)]
    seconds = value("cold_import")
    assert len(seconds) == cold_import.IMPORT_REPEATS and all(0 < s < 60 for s in seconds)
    assert 0 < value("docstring_coverage")[0] <= 1
    assert f"measuring the cold import of gymnasium, in environment {recorded['key']} (once; kept in " \
           f"{tmp_path / 'm.json'})" in logged, logged
    # the same adapter with its environment gone and none built: missing, saying how to build one
    gone = runs.assign(environment_json=None)
    monkeypatch.setenv("RLCOMPARE_CACHE_DIR", str(tmp_path / "empty-cache"))
    without = ScoringData(gone, catalogue=plugins.scoring_catalogue(), cache=MeasurementCache(None))
    result = next(c for c in development.CRITERIA if c.id == "install_size").compute(without)
    assert result.values.empty
    [reason] = result.missing["reason"].tolist()
    assert "needs an environment of its own" in reason and "`rlcompare env build tinyenv`" in reason


def test_two_concurrent_builds_of_one_environment_build_it_once(tmp_path: Path) -> None:
    builders = [subprocess.Popen([sys.executable, "-m", "rlcompare", "env", "build", "tinyenv"], text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp_path))
                for _ in range(2)]
    outputs = [builder.communicate(timeout=600) for builder in builders]
    assert all(builder.returncode == 0 for builder in builders), outputs
    words = sorted(out.split("\t")[2] for out, _ in outputs)
    assert words == ["built", "up to date"]
    assert sum("building environment" in err for _, err in outputs) == 1


def test_an_interrupted_build_is_built_again_and_remove_removes_it(isolated_plugin: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tinyenv_rlcompare import TinyEnvAdapter

    monkeypatch.delenv(BYTECODE_MODE_ENV, raising=False)  # the default: compiled at the build, shared

    manager = EnvironmentManager(tmp_path / "environments")
    spec = EnvironmentSpec.for_adapter(TinyEnvAdapter)
    python, version = manager.interpreter(spec)
    key = manager.key(spec, manager.resolve(spec, python, version), version)["key"]
    leftover = tmp_path / "environments" / f"tinyenv-{key}"
    (leftover / "bin").mkdir(parents=True)
    (leftover / "bin" / "half-written").write_text("", encoding="utf-8")  # a build killed midway: no marker
    [state] = manager.states()
    assert state.state == "incomplete"
    environment = manager.ensure(spec)
    assert environment.built and environment.path == leftover and (leftover / COMPLETE).exists()
    assert not (leftover / "bin" / "half-written").exists()
    assert manager.ensure(spec).built is False
    first = environment.info["bytecode"]
    assert first["compiled"] > 100  # numpy and gymnasium: nothing compiled them before in this cache
    removed = _cli(["env", "remove", "tinyenv"], tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.strip() == f"removed\t{leftover}"
    assert not leftover.exists() and manager.states() == []
    # built again: the same files from uv's cache, so the bytecode compiled the first time is reused,
    # and Python takes it as valid (no module of numpy is compiled again at import)
    again = manager.ensure(spec)
    assert again.built and again.info["bytecode"]["reused"] >= first["compiled"] - 5
    verbose = subprocess.run([str(again.python), "-v", "-c", "import numpy, gymnasium"], capture_output=True,
                             text=True, env={"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120)
    assert verbose.returncode == 0, verbose.stderr[-2000:]
    assert "code object from" in verbose.stderr and "bytecode is stale" not in verbose.stderr
    assert manager.remove() == [again.path] and not any((tmp_path / "environments" / "bytecode").rglob("*.pyc"))


def test_on_import_bytecode_compiles_nothing_at_the_build_and_the_first_import_writes_it(
        isolated_plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tinyenv_rlcompare import TinyEnvAdapter

    monkeypatch.setenv(BYTECODE_MODE_ENV, "on-import")
    environment = EnvironmentManager(tmp_path / "environments").ensure(EnvironmentSpec.for_adapter(TinyEnvAdapter))
    assert environment.info["bytecode"] == {"mode": "on-import", "reused": 0, "compiled": 0}
    # none compiled (a wheel may ship a file or two of its own: numpy's distutils one)
    assert len(list(environment.path.rglob("*.pyc"))) < 5 and not (tmp_path / "environments" / "bytecode").exists()

    def import_verbosely(write: bool) -> str:
        env = {"PATH": os.environ["PATH"], **({} if write else {"PYTHONDONTWRITEBYTECODE": "1"})}
        result = subprocess.run([str(environment.python), "-v", "-c", "import numpy, gymnasium"], capture_output=True,
                                text=True, env=env, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stderr

    numpy_bytecode = f"'{environment.path}/lib/python"  # numpy's bytecode in the environment, as -v names it
    first = import_verbosely(write=True)  # compiled from source and written
    assert numpy_bytecode in first and "numpy/__pycache__/__init__" in first
    assert any(line.startswith("# created") and "numpy/__pycache__" in line for line in first.splitlines())
    second = import_verbosely(write=False)  # the bytecode the first import wrote is read, and valid
    assert any(line.startswith("# code object from '") and "numpy/__pycache__/__init__" in line
               for line in second.splitlines())
    assert "bytecode is stale" not in second and "# created" not in second


def test_an_environment_whose_checkout_is_gone_is_listed_stale_and_removed_alone(
        isolated_plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment links rlcompare and the adapter's package of the checkout it was built for;
    when that checkout is deleted, `env list` says stale and `env remove --stale` removes it and
    nothing else."""
    import shutil

    from tinyenv_rlcompare import TinyEnvAdapter

    manager = EnvironmentManager(tmp_path / "cache" / "environments")
    spec = EnvironmentSpec.for_adapter(TinyEnvAdapter)
    current = manager.ensure(spec)
    checkout = tmp_path / "old-checkout"
    shutil.copytree(Path(spec.sources[1]), checkout / "tinyenv_rlcompare")
    old = manager.ensure(EnvironmentSpec(spec.adapter, spec.requirements, spec.python,
                                         (spec.sources[0], str(checkout / "tinyenv_rlcompare"))))
    assert old.key != current.key
    shutil.rmtree(checkout)
    listed = _cli(["env", "list"], tmp_path / "cache")
    states = {row.split("\t")[1]: row.split("\t")[2] for row in listed.stdout.splitlines()[1:]}
    assert states == {current.key: "ready", old.key: "stale"}, listed.stdout + listed.stderr
    # scoring, with no environment recorded by runs, measures in the newest environment that is not
    # stale: the current one, though the stale one was built later
    import pandas as pd
    from rlcompare_criteria.installations import installation_of

    from rlcompare.scoring.criteria import ScoringData

    monkeypatch.setenv("RLCOMPARE_CACHE_DIR", str(tmp_path / "cache"))
    found, reason = installation_of(ScoringData(pd.DataFrame({"adapter": ["tinyenv"]})), TinyEnvAdapter)
    assert reason is None and found is not None and found.environment_key == current.key
    removed = _cli(["env", "remove", "--stale"], tmp_path / "cache")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.strip() == f"removed\t{old.path}"
    assert [state.key for state in manager.states()] == [current.key] and not old.path.exists()


def test_ready_environments_are_an_adapters_own_complete_and_not_stale_newest_first(tmp_path: Path) -> None:
    from rlcompare.pyenvs.manager import SOURCES, ready_environments

    source = tmp_path / "checkout"
    source.mkdir()

    def folder(name: str, complete: bool = True, linked: Path = source, when: float = 0.0) -> Path:
        path = tmp_path / "environments" / name
        (path / SOURCES).mkdir(parents=True)
        (path / SOURCES / "rlcompare").symlink_to(linked)
        if complete:
            (path / COMPLETE).write_text("x\n", encoding="utf-8")
            os.utime(path / COMPLETE, (when, when))
        return path

    older = folder("tiny-" + "1" * 16, when=1_000)
    newer = folder("tiny-" + "2" * 16, when=2_000)
    folder("tiny-" + "3" * 16, complete=False)  # an interrupted build
    folder("tiny-" + "4" * 16, linked=tmp_path / "deleted-checkout", when=3_000)  # stale
    folder("tiny-env-" + "5" * 16, when=4_000)  # another adapter whose id starts with "tiny-"
    assert ready_environments("tiny", tmp_path / "environments") == [newer, older]


@pytest.mark.parametrize(("args", "expected"), [
    (["list", "--stale"], "--stale goes with `env remove`, not `env list`"),
    (["build", "--stale"], "--stale goes with `env remove`, not `env build`"),
    (["remove", "--refresh"], "--refresh goes with `env build`, not `env remove`"),
])
def test_an_option_of_another_action_is_one_line_and_exit_2(args: list[str], expected: str, tmp_path: Path) -> None:
    done = _cli(["env", *args], tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip().splitlines() == [f"rlcompare: error: {expected}"]
    assert not (tmp_path / "environments").exists()  # nothing written


@pytest.mark.parametrize("action", ["build", "list", "remove"])
def test_a_bad_adapter_name_is_one_line_with_a_suggestion_and_exit_2(action: str, tmp_path: Path) -> None:
    done = _cli(["env", action, "tinyenb"], tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "rlcompare: error: unknown adapter 'tinyenb'; did you mean 'tinyenv'? (see `rlcompare list adapters`)"]


def test_a_version_3_store_gains_the_environment_columns_and_its_runs_read_as_main(tmp_path: Path) -> None:
    from rlcompare.store.records import RunRecord
    from rlcompare.store.sqlite_store import SCHEMA_VERSION, Store

    path = tmp_path / "v3.db"
    with Store(path) as store:
        store.create()
        store.save_run(RunRecord(run_id="w__a__s0", workload_id="w", workload_digest="d", adapter="a", framework="f",
                                 algorithm="PPO", env_id="CartPole-v1", seed=0, status="unsupported", workload_json={}))
    connection = sqlite3.connect(path)
    with connection:  # what a version-3 store looks like
        for column in ("environment_key", "environment_json", "schedule_json", "parity_json", "note"):
            connection.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        for table in ("attempts", "claims"):
            connection.execute(f"DROP TABLE {table}")
        connection.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    connection.close()
    with Store(path) as store:
        assert store.runs_frame()["environment_key"].isna().all()  # read upgraded in memory
        store.create()  # written: migrated in place
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(SCHEMA_VERSION),)
    assert connection.execute("SELECT environment_key, environment_json, schedule_json, parity_json FROM runs"
                              ).fetchall() == [(None, None, None, None)]
