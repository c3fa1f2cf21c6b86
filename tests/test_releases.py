"""Release tracking (``rlcompare run --versions``): option parsing, the plan's subjects, the pinned
environments, the change intervals, and one real matrix of the numpy-only test adapter against two
numpy releases, each built into an environment of its own and shown side by side in the report."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlcompare.errors import UsageError
from rlcompare.harness.subjects import split_subject, subject_id
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.releases import parse_versions, with_releases
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.pyenvs.manager import EnvironmentSpec, isolation_reason, preference_attempts
from rlcompare.pyenvs.releases import pinned_requirements, release_adapter, subject_adapters
from rlcompare.scoring.bootstrap import difference_interval
from rlcompare.spec.workload import workload_from_dict
from tests.conftest import ROOT, TINY_WORKLOAD

ISOLATED_PLUGINS = ROOT / "tests" / "plugins" / "isolated"


@pytest.fixture(scope="module")
def plugins() -> object:
    return build_plugin_manager(autoload=False)


def _adapters(plugins: object) -> dict:
    return plugins.adapters  # type: ignore[attr-defined]


# -- the option ----------------------------------------------------------------------------------


def test_versions_are_parsed_per_adapter_in_the_order_given(plugins: object) -> None:
    releases = parse_versions(["sb3=2.7.0,2.4.0", "skrl=1.4.3"], _adapters(plugins), ["sb3", "skrl"])
    assert releases == {"sb3": ("2.7.0", "2.4.0"), "skrl": ("1.4.3",)}
    assert parse_versions([], _adapters(plugins), ["sb3"]) == {}


@pytest.mark.parametrize(("option", "named"), [
    ("sb3", "expected ADAPTER=VERSION"), ("=2.4.0", "expected ADAPTER=VERSION"), ("sb3=", "expected ADAPTER=VERSION"),
    ("nosuch=1.0", "'nosuch'"), ("skrl=1.0", "'skrl' has no run"), ("sb3=two", "'two'"),
    ("sb3=2.4,2.4.0", "'2.4.0' of 'sb3' is listed twice"), ("sb3=v2.4.0", "write 'v2.4.0'"),
    ("sb3=2.4.0,", "''"),
])
def test_a_bad_versions_option_is_refused_naming_the_offending_part(plugins: object, option: str, named: str) -> None:
    with pytest.raises(UsageError, match="--versions") as refused:
        parse_versions([option], _adapters(plugins), ["sb3"])
    assert named in str(refused.value)


def test_an_adapter_given_twice_is_refused(plugins: object) -> None:
    with pytest.raises(UsageError, match="'sb3' is given twice"):
        parse_versions(["sb3=2.4.0", "sb3=2.7.0"], _adapters(plugins), ["sb3"])


@functools.cache
def _builtin_adapters() -> dict:
    """The built-in adapters, looked up once for every generated example."""
    return dict(build_plugin_manager(autoload=False).adapters)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_option_text_is_parsed_or_refused_in_one_line(text: str) -> None:
    adapters = _builtin_adapters()
    try:
        releases = parse_versions([text], adapters, sorted(adapters))
    except UsageError as error:
        assert "--versions" in str(error) and "\n" not in str(error)
        return
    [(adapter_id, versions)] = releases.items()
    for release in versions:  # each subject id splits back into the adapter and its release
        assert split_subject(subject_id(adapter_id, release)) == (adapter_id, release)


# -- the plan ------------------------------------------------------------------------------------


def test_each_run_of_a_tracked_adapter_becomes_one_run_per_release(plugins: object) -> None:
    workload = workload_from_dict({"id": "w", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 256, "seeds": 2,
                                   "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 1}}, "test")
    plan = build_plan(plugins.plan_catalogue(), [workload], ["sb3", "skrl"])  # type: ignore[attr-defined]
    tracked = with_releases(plan, {"sb3": ("2.4.0", "2.7.0")})
    subjects = sorted({run.adapter_id for run in tracked.runs})
    assert subjects == ["sb3@2.4.0", "sb3@2.7.0", "skrl"]
    assert len(tracked.runs) == 6 and len({run.run_id for run in tracked.runs}) == 6
    for run in tracked.runs:
        assert split_subject(run.adapter_id) == (run.adapter_id.split("@")[0], run.release)
        assert run.adapter_class.endswith(":StableBaselines3Adapter") == run.adapter_id.startswith("sb3")
    assert "w__sb3@2.4.0__s1" in {run.run_id for run in tracked.runs}
    assert with_releases(plan, {}) is plan


# -- the environments ----------------------------------------------------------------------------


def test_a_release_pins_the_framework_and_keeps_torch_at_the_main_version(plugins: object) -> None:
    adapters = _adapters(plugins)
    sb3 = release_adapter(adapters["sb3"], "2.4.0")
    assert sb3.id == "sb3" and sb3.subject == "sb3@2.4.0" and sb3.release == "2.4.0"
    assert sb3.__qualname__ == adapters["sb3"].__qualname__  # a worker finds the adapter's own class
    assert pinned_requirements(adapters["sb3"], "2.4.0") == ("stable-baselines3==2.4.0", f"torch=={version('torch')}")
    assert isolation_reason(sb3) == "release 2.4.0 pinned"
    spec = EnvironmentSpec.for_adapter(sb3)  # the release decides; numpy and gymnasium stay where it allows
    assert spec.requirements == ("stable-baselines3==2.4.0", f"torch=={version('torch')}", "numpy", "gymnasium")
    assert spec.preferred == (f"numpy=={version('numpy')}", f"gymnasium=={version('gymnasium')}")
    # extras stay; an adapter's own pin of its framework gives way to the release
    assert pinned_requirements(adapters["rllib"], "2.50.0")[0] == "ray[rllib]==2.50.0"
    assert pinned_requirements(adapters["sample-factory"], "2.1.0")[0] == "sample-factory==2.1.0"
    found = subject_adapters(adapters, ["sb3@2.4.0", "skrl", "gone@1.0"])
    assert found["sb3@2.4.0"].release == "2.4.0" and found["skrl"] is adapters["skrl"] and "gone@1.0" not in found


def test_the_framework_itself_is_never_a_preference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ISOLATED_PLUGINS))
    from tinyenv_rlcompare import TinyFitAdapter  # its framework distribution is numpy

    spec = EnvironmentSpec.for_adapter(release_adapter(TinyFitAdapter, "1.26.4"))
    assert spec.requirements[:2] == ("numpy==1.26.4", "gymnasium")
    assert spec.preferred == (f"gymnasium=={version('gymnasium')}",)


def test_preferred_pins_are_dropped_only_as_far_as_the_resolver_needs() -> None:
    assert preference_attempts(["numpy==2.4.6", "gymnasium==1.2.2"]) == [
        ("numpy==2.4.6", "gymnasium==1.2.2"), ("numpy==2.4.6",), ("gymnasium==1.2.2",), ()]
    assert preference_attempts([]) == [()]


# -- the change between two releases -------------------------------------------------------------


def test_the_change_interval_excludes_zero_only_for_a_real_change() -> None:
    rng = np.random.default_rng(0)
    before = rng.normal(100.0, 1.0, 10)
    moved = difference_interval(before + 10.0, before, reps=2_000, seed=1)
    assert moved is not None and moved.point == pytest.approx(10.0) and moved.low > 0
    same = difference_interval(rng.normal(100.0, 1.0, 10), before, reps=2_000, seed=1)
    assert same is not None and same.low <= 0 <= same.high
    assert difference_interval([1.0], [1.0, 2.0]) is None  # one value: no interval, no verdict
    assert difference_interval([1.0, float("nan")], [1.0, 2.0]) is None


# -- a real matrix against two releases ----------------------------------------------------------


def _cli(args: list[str], cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RLCOMPARE_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ISOLATED_PLUGINS)])}
    env.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)
    return subprocess.run([sys.executable, "-m", "rlcompare", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


#: Two numpy releases the test adapter (numpy only) runs on: the main environment's and a 1.x one.
RELEASES = ("1.26.4", version("numpy"))


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    cache = tmp_path_factory.mktemp("cache")
    work = tmp_path_factory.mktemp("releases")
    (work / "tiny.toml").write_text(TINY_WORKLOAD, encoding="utf-8")
    done = _cli(["run", "--workload", "tiny.toml", "--adapters", "tinyfit", "--versions",
                 f"tinyfit={','.join(RELEASES)}", "--store", "s.db", "--jobs", "2"], cache, work)
    return work, done


def test_each_release_runs_in_its_own_environment_and_records_its_version(
        tracked: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    work, done = tracked
    assert done.returncode == 0, done.stderr
    for release in RELEASES:
        assert f"tinyfit@{release}: own environment" in done.stderr and f"release {release} pinned" in done.stderr
    connection = sqlite3.connect(work / "s.db")
    connection.row_factory = sqlite3.Row
    runs = connection.execute("SELECT * FROM runs ORDER BY run_id").fetchall()
    assert sorted(run["adapter"] for run in runs) == sorted(f"tinyfit@{r}" for r in RELEASES for _ in range(2))
    keys = {}
    for run in runs:
        assert run["status"] == "ok", run["error"]
        release = run["adapter"].split("@")[1]
        recorded = json.loads(run["versions_json"])
        assert recorded["numpy"] == release  # the worker ran on that release...
        assert recorded["gymnasium"] == version("gymnasium")  # ...and on the main gymnasium, which both allow
        assert json.loads(run["native_config_json"])["numpy"] == release
        keys.setdefault(release, set()).add(run["environment_key"])
    assert all(len(found) == 1 for found in keys.values()) and len(set().union(*keys.values())) == 2


def test_the_report_shows_each_criterion_across_the_releases(
        tracked: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    work, done = tracked
    assert done.returncode == 0, done.stderr
    made = _cli(["report", "--store", "s.db", "--out", "out", "--format", "md,csv"], work.parent / "cache2", work)
    assert made.returncode == 0, made.stderr
    text = (work / "out" / "rlcompare-report.md").read_text(encoding="utf-8")
    section = text[text.index("## Across releases: tinyfit"):]
    header = next(line for line in section.splitlines() if line.startswith("| criterion | workload |"))
    assert header == f"| criterion | workload | {RELEASES[0]} | {RELEASES[1]} |"
    final = next(line for line in section.splitlines() if line.startswith("| Final evaluation return"))
    assert final.count("[") >= 3  # each release's interval, and the change's
    import pandas as pd

    table = pd.read_csv(work / "out" / "rlcompare-report-csv" / "releases.csv")
    first, second = (table[table["release"] == r] for r in RELEASES)
    assert first["change"].isna().all() and set(first["criterion"]) == set(second["criterion"])
    judged = second[second["change_low"].notna()]
    assert not judged.empty
    for row in judged.itertuples():  # the flag is the interval's: changed exactly when it excludes zero
        assert bool(row.changed) == (not row.change_low <= 0 <= row.change_high)


def test_a_release_the_index_does_not_have_is_refused_in_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY_WORKLOAD, encoding="utf-8")
    done = _cli(["run", "--workload", "tiny.toml", "--adapters", "tinyfit", "--versions", "tinyfit=0.0.1",
                 "--store", "s.db"], tmp_path / "cache", tmp_path)
    assert done.returncode == 2, done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("rlcompare: error:")]
    assert "numpy==0.0.1" in error and "do not resolve" in error
    assert not list(tmp_path.glob("s.db*"))  # the store was never opened
