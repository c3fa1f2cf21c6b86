"""Warm starts (``--warm-start``, :mod:`rlcompare.pyenvs.warm`): each run forked from a parent that
imported its framework once, against the cold start (a fresh interpreter per run) users get by default.

The rest of the suite runs warm (tests/conftest.py), so every fault test (timeouts, killed workers,
dead drivers, memory limits, lingering processes) exercises the forked path; the cold path keeps its
own checks here, side by side with the warm one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rlcompare.execution.runner import LocalRunner
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.pyenvs import warm
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store
from tests.conftest import plan_of, process_alive, run_cli


@pytest.fixture(autouse=True, scope="module")
def parents_of_each_driver() -> Iterator[None]:
    """Each driver's own parents here (the test run's shared pool is off; the pool's tests open their own)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(warm.WARM_POOL_ENV, raising=False)
        yield


@pytest.fixture
def warm_mode(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[bool]:
    """Cold or warm starts for this test, with parents of its own."""
    on = request.param == "warm"
    monkeypatch.setenv(warm.WARM_START_ENV, "1" if on else "0")
    monkeypatch.setattr(warm, "PARENTS", warm.Parents())
    yield on
    warm.PARENTS.stop_all()


# -- a real framework: the same run cold and warm ------------------------------------------------------------

SB3_TINY = {"id": "warmth", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 512, "seeds": 2,
            "hyperparameters": {"rollout_steps": 128, "minibatch_size": 64, "epochs": 2},
            "evaluation": {"interval_steps": 256, "episodes": 2}}


@pytest.fixture(scope="module")
def sb3_cold_and_warm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    workload = workload_from_dict(SB3_TINY, "test")
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["sb3"])
    frames = {}
    previous = os.environ.get(warm.WARM_START_ENV)
    try:
        for mode in ("cold", "warm"):
            os.environ[warm.WARM_START_ENV] = "1" if mode == "warm" else "0"
            store = Store(tmp_path_factory.mktemp(mode) / "runs.db")
            summary = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan)
            assert [o.status for o in summary.outcomes] == ["ok", "ok"], [o.record.traceback for o in summary.outcomes]
            frames[mode] = (store.runs_frame().set_index("run_id"), store.curves_frame())
    finally:
        if previous is None:
            os.environ.pop(warm.WARM_START_ENV, None)
        else:
            os.environ[warm.WARM_START_ENV] = previous
    return frames


@pytest.mark.framework
def test_a_forked_run_trains_as_a_fresh_interpreter_does(sb3_cold_and_warm: dict) -> None:
    """Same seed, same workload: the same steps, curve and final return whether the run's process is a
    fresh interpreter or a fork of one that imported SB3 and torch."""
    (cold, cold_curve), (hot, hot_curve) = sb3_cold_and_warm["cold"], sb3_cold_and_warm["warm"]
    columns = ["status", "env_steps", "framework_env_steps", "episodes", "final_return_mean", "torch_threads"]
    assert cold[columns].to_dict() == hot[columns].to_dict()
    key = ["run_id", "env_steps", "return_mean"]
    assert cold_curve[key].to_dict("records") == hot_curve[key].to_dict("records")
    assert json.loads(cold["fidelity_json"].iloc[0]) == json.loads(hot["fidelity_json"].iloc[0])


@pytest.mark.framework
def test_a_forked_run_records_the_parents_cold_import_and_counts_it_in_its_start_up(sb3_cold_and_warm: dict) -> None:
    (cold, _), (hot, _) = sb3_cold_and_warm["cold"], sb3_cold_and_warm["warm"]
    for run_id in hot.index:
        measured = json.loads(hot.loc[run_id, "development_json"])
        imported = measured["import"]
        assert imported["modules"][0] == "stable_baselines3" and imported["seconds"] > 0 and "error" not in imported
        preload = measured["warm_start"]["preload_seconds"]
        # the preload holds the import, and the run's start-up holds the preload
        assert preload >= imported["seconds"]
        assert hot.loc[run_id, "startup_seconds"] > preload
        assert measured["api"]["objects"] > 0
    # the first run waited for its parent's start: that wait is not counted twice
    first, second = (hot.loc[run_id, "startup_seconds"] for run_id in sorted(hot.index))
    assert first < 2 * second + 1.0
    for run_id in cold.index:
        assert "warm_start" not in json.loads(cold.loc[run_id, "development_json"])


@pytest.mark.framework
def test_runs_forked_from_one_parent_give_the_cold_import_criterion_one_sample(sb3_cold_and_warm: dict) -> None:
    from rlcompare_criteria.in_run import import_seconds

    from rlcompare.harness.measurement_cache import MeasurementCache
    from rlcompare.scoring.criteria import ScoringData

    catalogue = build_plugin_manager(autoload=False).scoring_catalogue()
    samples = {mode: import_seconds(ScoringData(frame.reset_index(), catalogue=catalogue, cache=MeasurementCache(None)),
                                    "sb3") for mode, (frame, _) in sb3_cold_and_warm.items()}
    assert len(samples["cold"]) == 2  # two fresh interpreters, two samples
    parents = {json.loads(value)["warm_start"]["parent"] for value in sb3_cold_and_warm["warm"][0]["development_json"]}
    assert len(parents) == 1 and len(samples["warm"]) == 1  # one parent imported once: one sample


# -- the harness's own adapters: faults, both ways ---------------------------------------------------------


@pytest.mark.parametrize("warm_mode", ["cold", "warm"], indirect=True)
def test_a_timeout_kills_the_run_and_all_it_started_and_the_next_run_starts(
        warm_mode: bool, fake_plugin: Path, tiny_workload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("FAKEFW_PID_FILE", str(pid_file))
    with Store(tmp_path / "runs.db") as store:
        summary = LocalRunner(store, timeout_seconds=6).run(plan_of(tiny_workload, ["sleepy", "fake"], seeds=1))
        runs = store.runs_frame().set_index("run_id")
    assert {o.run_id: o.status for o in summary.outcomes} == {"tiny__sleepy__s0": "timeout", "tiny__fake__s0": "ok"}
    worker_pid, child_pid = (int(p) for p in pid_file.read_text().split())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(process_alive(p) for p in (worker_pid, child_pid)):
        time.sleep(0.1)
    assert not process_alive(worker_pid) and not process_alive(child_pid), "no process of the run may survive it"
    parents = [parent.process.pid for parent in warm.PARENTS.parents.values()]
    assert len(parents) == (1 if warm_mode else 0) and all(process_alive(pid) for pid in parents)  # kept for later runs
    assert runs.loc["tiny__fake__s0", "startup_seconds"] > 0


@pytest.mark.parametrize("warm_mode", ["cold", "warm"], indirect=True)
def test_a_killed_driver_takes_its_runs_and_their_parent_with_it(
        warm_mode: bool, fake_plugin: Path, tiny_workload: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    driver = subprocess.Popen(  # the option, not the variable (set to 0), asks for warm starts here
        [sys.executable, "-m", "rlcompare", "run", "--workload", str(tiny_workload), "--adapters", "sleepy",
         "--seeds", "1", "--store", str(tmp_path / "runs.db"), "--no-parity", *(["--warm-start"] if warm_mode else [])],
        env={**os.environ, "FAKEFW_PID_FILE": str(pid_file), warm.WARM_START_ENV: "0"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists(), "the run never started"
    worker_pid = int(pid_file.read_text().split()[0])
    parent_pid = psutil.Process(worker_pid).ppid()
    assert (parent_pid != driver.pid) == warm_mode
    parent_folder = Path(psutil.Process(parent_pid).cmdline()[3]).parent if warm_mode else None
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (process_alive(worker_pid) or (warm_mode and process_alive(parent_pid))):
        time.sleep(0.1)
    assert not process_alive(worker_pid)
    assert not warm_mode or not process_alive(parent_pid)
    assert parent_folder is None or not parent_folder.exists()  # the parent leaves nothing in the temporary folder


def test_runs_of_one_environment_share_one_parent_and_a_changed_variable_gets_another(
        fake_plugin: Path, tiny_workload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(warm.WARM_START_ENV, "1")
    monkeypatch.setattr(warm, "PARENTS", warm.Parents())
    held = []
    for number, value in enumerate(("a", "a", "b")):
        monkeypatch.setenv("RLCOMPARE_TEST_VARIABLE", value)
        # pytest's own variable, another value in each test's each phase, is read by no framework's import
        monkeypatch.setenv("PYTEST_CURRENT_TEST", f"tests/test_x.py::test_{number} (call)")
        with Store(tmp_path / f"runs{number}.db") as store:
            summary = LocalRunner(store, jobs=2).run(plan_of(tiny_workload, ["fake"], seeds=2))
        assert [o.status for o in summary.outcomes] == ["ok", "ok"]
        held.append([parent.process.pid for parent in warm.PARENTS.parents.values()])
    first, second, third = held
    assert len(first) == 1 and first == second  # four runs in two tests, one parent
    assert len(third) == 2 and third[0] == first[0]  # a variable a framework may read at import: another
    warm.PARENTS.stop_all()
    assert not any(process_alive(pid) for pid in third)


def test_a_parent_that_cannot_start_leaves_its_runs_to_start_cold(
        fake_plugin: Path, tiny_workload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(warm.WARM_START_ENV, "1")
    monkeypatch.setattr(warm, "PARENTS", warm.Parents())
    monkeypatch.setattr(warm, "ZYGOTE_MODULE", "rlcompare.harness.no_such_parent")
    with Store(tmp_path / "runs.db") as store:
        summary = LocalRunner(store).run(plan_of(tiny_workload, ["fake"], seeds=1))
    assert [o.status for o in summary.outcomes] == ["ok"]
    assert warm.PARENTS.parents == {}


# -- the parent's contract: what each forked process gets ---------------------------------------------------

PROBE_MODULE = textwrap.dedent("""
    import json, os, random, sys
    import numpy
    print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "variable": os.environ.get("RLCOMPARE_RUN_ID"),
                      "random": random.random(), "numpy": float(numpy.random.rand()), "session": os.getsid(0) == os.getpid(),
                      "stdin": sys.stdin.read(), "driver_fd": os.environ.get("RLCOMPARE_DRIVER_FD")}))
    sys.exit(int(sys.argv[1]))
""")


def test_each_forked_process_gets_its_own_arguments_environment_directory_session_and_seeds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "PARENTS", warm.Parents())
    (tmp_path / "warm_probe_module.py").write_text(PROBE_MODULE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    seen = []
    for status, variable in ((0, "one"), (3, "two")):
        here = tmp_path / variable
        here.mkdir()
        monkeypatch.chdir(here)
        done = warm.run_module(sys.executable, "warm_probe_module", [str(status)], ["numpy"], timeout=60,
                               env={**env, "RLCOMPARE_RUN_ID": variable})
        assert done is not None
        code, output = done
        assert code == status, output
        seen.append(json.loads(output.strip().splitlines()[-1]))
    assert [item["argv"] for item in seen] == [["0"], ["3"]]
    assert [item["variable"] for item in seen] == ["one", "two"]
    assert [Path(item["cwd"]).name for item in seen] == ["one", "two"]
    assert all(item["session"] and item["stdin"] == "" and item["driver_fd"] for item in seen)
    assert seen[0]["random"] != seen[1]["random"] and seen[0]["numpy"] != seen[1]["numpy"]
    assert len(warm.PARENTS.parents) == 1  # the run id is each run's own: one parent forked both
    warm.PARENTS.stop_all()


LEARNING_MODULE = textwrap.dedent("""
    import json, sys
    from rlcompare.harness.preloaded import forked_from
    had = {name: name in sys.modules for name in ("warmpkg.lazy", "concurrent.futures")}
    import warmpkg.lazy, concurrent.futures
    print(json.dumps({"had": had, "preload_seconds": forked_from().seconds}))
    sys.exit(int(sys.argv[1]))
""")


def test_a_parent_imports_what_its_first_good_run_imported_of_its_packages_and_counts_it_as_preload(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run that ends well teaches its parent the modules it imported lazily of the packages the
    parent holds (``warmpkg.lazy`` here; torch's first optimizer imports ``torch._dynamo``); the runs
    forked after it have them, and count their import in their start-up's preload. A run that fails
    teaches nothing; packages that may start threads or open sockets at import (``concurrent``) are never
    learned."""
    monkeypatch.setattr(warm, "PARENTS", warm.Parents())
    (tmp_path / "warm_learner.py").write_text(LEARNING_MODULE, encoding="utf-8")
    (tmp_path / "warmpkg").mkdir()
    (tmp_path / "warmpkg" / "__init__.py").write_text("import concurrent\n", encoding="utf-8")
    (tmp_path / "warmpkg" / "lazy.py").write_text("import time\ntime.sleep(0.05)\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    seen = []
    for status in (1, 0, 0):
        done = warm.run_module(sys.executable, "warm_learner", [str(status)], ["warmpkg"], timeout=60, env=env)
        assert done is not None and done[0] == status, done
        seen.append(json.loads(done[1].strip().splitlines()[-1]))
        time.sleep(0.3)  # the parent learns after it reported the exit
    failed, first, later = seen
    assert failed["had"] == first["had"] == {"warmpkg.lazy": False, "concurrent.futures": False}
    assert later["had"] == {"warmpkg.lazy": True, "concurrent.futures": False}
    assert failed["preload_seconds"] == first["preload_seconds"]
    assert later["preload_seconds"] >= first["preload_seconds"] + 0.05  # the learned import's time
    warm.PARENTS.stop_all()


def test_a_parent_is_not_stopped_under_a_running_process_even_past_the_limit(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "PARENTS", warm.Parents(limit=1))
    (tmp_path / "warm_napper.py").write_text("import sys, time\ntime.sleep(float(sys.argv[1]))\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    watched, held = os.pipe()
    with (tmp_path / "log").open("wb") as log:
        napping = warm.start(sys.executable, "warm_napper", ["3"], env, [], log, watched)
    os.close(watched)
    assert napping is not None
    first = next(iter(warm.PARENTS.parents.values()))
    # another environment while the first parent's process runs: a second parent, the first kept
    assert warm.run_module(sys.executable, "warm_napper", ["0"], [], timeout=60, env={**env, "OTHER": "1"})[0] == 0
    assert len(warm.PARENTS.parents) == 2 and first.process.poll() is None
    assert napping.wait(30) == 0 and napping.peak_rss_bytes and napping.cpu_seconds is not None
    os.close(held)
    # once it ended, the parent used longest ago goes first
    assert warm.run_module(sys.executable, "warm_napper", ["0"], [], timeout=60, env={**env, "OTHER": "2"})[0] == 0
    assert len(warm.PARENTS.parents) == 1 and first.process.wait(10) == 0
    warm.PARENTS.stop_all()


def test_a_forked_process_past_its_timeout_is_killed_with_its_session(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "PARENTS", warm.Parents())
    (tmp_path / "warm_sleeper.py").write_text(
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open(sys.argv[1], 'w').write(f'{os.getpid()} {child.pid}')\n"
        "time.sleep(60)\n", encoding="utf-8")
    pids = tmp_path / "pids"
    with pytest.raises(subprocess.TimeoutExpired):
        warm.run_module(sys.executable, "warm_sleeper", [str(pids)], [], timeout=3,
                        env={**os.environ, "PYTHONPATH": str(tmp_path)})
    deadline = time.monotonic() + 5
    process_pids = [int(p) for p in pids.read_text().split()]
    while time.monotonic() < deadline and any(process_alive(p) for p in process_pids):
        time.sleep(0.1)
    assert not any(process_alive(p) for p in process_pids)
    warm.PARENTS.stop_all()


def test_warm_start_is_refused_on_a_backend_that_does_not_fork_its_runs(tiny_workload: Path, tmp_path: Path) -> None:
    done = run_cli(["run", "--workload", str(tiny_workload), "--adapters", "sb3", "--backend", "ray",
                    "--warm-start", "--store", str(tmp_path / "runs.db")])
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "rlcompare: error: --warm-start: only the local backend forks its runs, not 'ray'"]
    assert not (tmp_path / "runs.db").exists()


# -- a shared pool (RLCOMPARE_WARM_POOL): drivers share parents, runs still die with their driver ------------

POOL_PROBE = textwrap.dedent("""
    import json, os, sys, time
    from rlcompare.harness.driver_watch import watch_driver
    watch_driver()  # as the harness's workers do: the run ends with its driver
    open(sys.argv[1], "w").write(json.dumps({"pid": os.getpid(), "parent": os.getppid()}))
    time.sleep(float(sys.argv[2]))
""")


def _pool_driver(tmp_path: Path, pool: Path, name: str, seconds: float) -> subprocess.Popen[str]:
    """A driver process that forks ``warm_pool_probe`` from the pool, writing its pid and its parent's."""
    script = (f"import sys\nfrom rlcompare.pyenvs import warm\n"
              f"print(warm.run_module(sys.executable, 'warm_pool_probe', [{str(tmp_path / name)!r}, '{seconds}'], "
              f"['numpy'], timeout=120))")
    return subprocess.Popen([sys.executable, "-c", script], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(tmp_path), warm.WARM_POOL_ENV: str(pool)})


def _written(path: Path, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            time.sleep(0.05)
    raise AssertionError(f"{path.name} was never written")


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process_alive(pid):
        time.sleep(0.1)
    return not process_alive(pid)


def test_drivers_naming_one_pool_share_its_parent_and_a_killed_driver_takes_only_its_own_run(tmp_path: Path) -> None:
    (tmp_path / "warm_pool_probe.py").write_text(POOL_PROBE, encoding="utf-8")
    pool = tmp_path / ("deeper-than-a-socket-path-may-be-long-" * 3) / "pool"
    warm.open_pool(pool, owner=os.getpid())
    first = _pool_driver(tmp_path, pool, "first", 30)
    one = _written(tmp_path / "first")
    second = _pool_driver(tmp_path, pool, "second", 0)
    assert second.wait(60) == 0, second.stderr.read()
    two = json.loads((tmp_path / "second").read_text(encoding="utf-8"))
    assert one["parent"] == two["parent"] and one["parent"] not in (first.pid, second.pid)  # one parent, the pool's
    assert "(0, '')" in second.stdout.read()
    first.kill()  # the driver dies: its run follows (its own driver pipe), the shared parent stays
    first.wait()
    assert _gone(one["pid"]), "a pooled run outlived its driver"
    assert process_alive(one["parent"])
    third = _pool_driver(tmp_path, pool, "third", 0)
    assert third.wait(60) == 0 and json.loads((tmp_path / "third").read_text(encoding="utf-8"))["parent"] == one["parent"]
    shutil.rmtree(pool)  # the pool removed: its parent stops
    assert _gone(one["parent"])


def test_a_pooled_parent_stops_when_unused_for_the_pools_idle_time_and_when_the_pools_owner_ends(tmp_path: Path) -> None:
    (tmp_path / "warm_pool_probe.py").write_text(POOL_PROBE, encoding="utf-8")
    idle = tmp_path / "idle"
    warm.open_pool(idle, idle_seconds=1.0)
    assert _pool_driver(tmp_path, idle, "a", 0).wait(60) == 0
    parent = _written(tmp_path / "a")["parent"]
    assert _gone(parent, timeout=15), "an idle pooled parent did not stop"
    assert _pool_driver(tmp_path, idle, "b", 0).wait(60) == 0  # the next driver starts another
    assert _written(tmp_path / "b")["parent"] != parent
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    owned = tmp_path / "owned"
    warm.open_pool(owned, owner=owner.pid)
    assert _pool_driver(tmp_path, owned, "c", 0).wait(60) == 0
    parent = _written(tmp_path / "c")["parent"]
    assert process_alive(parent)
    owner.kill()
    owner.wait()
    assert _gone(parent), "a pooled parent outlived its pool's owner"


def test_the_pool_keys_parents_by_environment_but_not_by_pytests_per_process_variables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "warm_pool_probe.py").write_text(POOL_PROBE, encoding="utf-8")
    pool = tmp_path / "pool"
    warm.open_pool(pool, owner=os.getpid())
    parents = []
    for name, worker, variable in (("a", "gw0", "x"), ("b", "gw1", "x"), ("c", "gw0", "y")):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        monkeypatch.setenv("RLCOMPARE_TEST_VARIABLE", variable)
        assert _pool_driver(tmp_path, pool, name, 0).wait(60) == 0
        parents.append(_written(tmp_path / name)["parent"])
    assert parents[0] == parents[1] != parents[2]
    shutil.rmtree(pool)
    assert all(_gone(pid) for pid in set(parents))
