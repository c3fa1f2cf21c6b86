"""Development criteria measured by ``rlcompare run`` (rlcompare.cli.premeasure): the first report
after a run finds them cached; beside runs the measuring process starts only in the matrix's tail,
on a CPU they leave free, at the lowest priority, times nothing, and what it leaves is measured after the runs at normal priority; one process at a time, stopped with the run."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlcompare_criteria import cold_import
from rlcompare_criteria.adapter_lookup import installation_for

from rlcompare.cli.premeasure import (
    NICENESS,
    NOT_KEPT,
    BackgroundMeasuring,
    PlannedAdapter,
    planned_adapters,
    planned_runs_frame,
)
from rlcompare.execution.driver import RunOutcome
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.harness.protocol import WorkerEnvironment
from rlcompare.plan.matrix import Plan, PlannedRun, RefusedPair
from rlcompare.pyenvs.manager import COMPLETE, INFO
from rlcompare.scoring.criteria import Criterion, ScoringCatalogue, ScoringData
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store
from tests.conftest import ROOT, run_cli

EXAMPLE = ROOT / "tests" / "plugins" / "example_adapter"


def _workload(threads: int = 1) -> Workload:
    return workload_from_dict({"id": f"w{threads}", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000,
                               "seeds": 1, "parallelism": {"threads_per_worker": threads}}, "test")


def _plan(threads: list[int]) -> Plan:
    return Plan(runs=[PlannedRun(_workload(t), f"a{index}", "fw", 0) for index, t in enumerate(threads)])


def _outcome(run: PlannedRun) -> RunOutcome:
    return RunOutcome(run.run_id, "ok", None)  # type: ignore[arg-type]  # only the run id is read


class _Recording(BackgroundMeasuring):
    """Records when it would start the process (and the CPUs the runs then held), starting none."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.launched_with: list[int] = []

    def launch(self, alongside_runs: bool) -> None:
        self.launched_with.append(sum(self.in_flight.values()))
        self.process = object()  # type: ignore[assignment]


# -- when it starts --------------------------------------------------------------------------------


@settings(deadline=None, max_examples=150)
@given(cpus=st.integers(1, 6), jobs=st.integers(1, 4), threads=st.lists(st.integers(1, 3), min_size=1, max_size=6),
       order=st.lists(st.integers(0, 5), min_size=6, max_size=6))
def test_beside_the_runs_it_starts_only_in_the_tail_on_a_cpu_they_leave_free(
        cpus: int, jobs: int, threads: list[int], order: list[int]) -> None:
    """Simulating the driver (``jobs`` runs in flight, finishing in any order): the process starts
    at most once, never before every run is submitted, only while runs are in flight, never on a
    CPU they hold (until the matrix ends: no run starts after it); and it does start in the tail
    as soon as the runs in flight leave a CPU free."""
    plan = _plan(threads)
    measuring = _Recording(plan, cpus=cpus)
    pending, active = list(plan.runs), []
    finishing = iter(order)
    chance = False  # a moment in the tail with runs in flight and a CPU free
    while pending or active:
        while pending and len(active) < jobs:
            active.append(pending.pop(0))
            measuring.on_start()(active[-1])
            assert pending or measuring.launched_with or sum(measuring.in_flight.values()) >= cpus
            assert not (pending and measuring.launched_with)
        if measuring.launched_with:
            assert sum(measuring.in_flight.values()) < cpus
        chance = chance or (not pending and 0 < sum(measuring.in_flight.values()) < cpus)
        done = active.pop(next(finishing, 0) % len(active))
        measuring.on_finish()(_outcome(done))
        chance = chance or (not pending and 0 < sum(measuring.in_flight.values()) < cpus)
    assert len(measuring.launched_with) <= 1
    if measuring.launched_with:
        assert 0 < measuring.launched_with[0] < cpus
    assert bool(measuring.launched_with) == chance


def test_a_full_machine_starts_it_once_every_run_is_submitted_and_a_cpu_is_free() -> None:
    plan = _plan([1, 1, 1])
    measuring = _Recording(plan, cpus=2)
    first, second, third = plan.runs
    measuring.on_start()(first)
    assert not measuring.launched_with  # a CPU is free, but runs are still to start beside it
    measuring.on_start()(second)
    measuring.on_finish()(_outcome(first))
    assert not measuring.launched_with  # the driver fills the slot at once
    measuring.on_start()(third)
    assert not measuring.launched_with
    measuring.on_finish()(_outcome(second))
    assert measuring.launched_with == [1]  # beside the last run, on the CPU the other left


def test_no_process_starts_beside_runs_once_none_is_in_flight() -> None:
    plan = _plan([2])
    measuring = _Recording(plan, cpus=2)
    measuring.on_start()(plan.runs[0])
    measuring.on_finish()(_outcome(plan.runs[0]))
    assert measuring.launched_with == []  # measured after the matrix, at normal priority (wait)


def test_a_matrix_that_starts_no_run_measures_nothing() -> None:
    measuring = _Recording(_plan([1]), cpus=4)
    measuring.wait()
    assert measuring.launched_with == []


# -- what it measures ------------------------------------------------------------------------------


def test_the_plan_names_every_adapter_once_with_the_environment_its_runs_use(tmp_path: Path) -> None:
    environment = WorkerEnvironment(str(tmp_path / "env" / "bin" / "python"), "0123456789abcdef", "lock", "b")
    workload = _workload()
    plan = Plan(runs=[PlannedRun(workload, "a", "fa", 0), PlannedRun(workload, "b", "fb", 0, environment=environment),
                      PlannedRun(workload, "a", "fa", 1)],
                refused=[RefusedPair(workload, "c", "fc", "no"), RefusedPair(workload, "a", "fa", "no")])
    assert planned_adapters(plan) == [PlannedAdapter("a", "fa"), PlannedAdapter("b", "fb", environment.to_dict()),
                                      PlannedAdapter("c", "fc")]


def test_an_adapter_with_its_own_environment_is_measured_there(tmp_path: Path) -> None:
    """The criteria find the environment from the plan exactly as they later find it from the stored
    runs, so the measurement lands under the key scoring reads."""
    folder = tmp_path / "myadapter-0123456789abcdef"
    (folder / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (folder / COMPLETE).write_text("", encoding="utf-8")
    (folder / INFO).write_text(json.dumps({"key": "0123456789abcdef", "python_version": "3.11.7"}), encoding="utf-8")
    environment = WorkerEnvironment(str(folder / "bin" / "python"), "0123456789abcdef", "lock", "fake")

    class Catalogue:
        adapters = {"fake": type("FakeAdapter", (), {"id": "fake"})}

    data = ScoringData(planned_runs_frame([PlannedAdapter("fake", "fakefw", environment.to_dict())]),
                       catalogue=Catalogue())  # type: ignore[arg-type]
    installation, reason = installation_for(data, "fake")
    assert reason is None and installation is not None
    assert installation.environment_key == "0123456789abcdef" and installation.python == environment.python


def test_a_premeasure_step_must_be_callable() -> None:
    with pytest.raises(ValueError, match="premeasure must be callable"):
        Criterion(id="x", title="x", category="development", unit="u", direction="higher", method="m",
                  compute=lambda data: None, premeasure="later")  # type: ignore[arg-type, return-value]


# -- the process -----------------------------------------------------------------------------------


def _fake_python(tmp_path: Path, body: str) -> str:
    """An executable standing in for the interpreter the process is started with."""
    script = tmp_path / "python"
    script.write_text(f"#!{sys.executable}\nimport os, sys, time\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


def test_beside_the_runs_it_runs_niced_and_after_them_a_process_at_normal_priority_times_the_rest(
        tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    python = _fake_python(tmp_path, "import json\n"
                                    "alongside = json.loads(sys.argv[-1])['alongside_runs']\n"
                                    f"open({str(calls)!r}, 'a').write(f'{{alongside}} {{os.nice(0)}}\\n')\n"
                                    "print('measuring the cold import of x (once)', file=sys.stderr)\n"
                                    f"if not alongside: print({NOT_KEPT!r} + 'the cold import of x', "
                                    "file=sys.stderr)")
    said: list[str] = []
    plan = _plan([1])
    base = os.nice(0)
    with BackgroundMeasuring(plan, cpus=4, python=python, log=said.append) as measuring:
        measuring.on_start()(plan.runs[0])
        assert measuring.process is not None
        measuring.process.wait(timeout=20)  # it finishes during the matrix
        measuring.wait()
    first, second = calls.read_text(encoding="utf-8").splitlines()
    assert first == f"True {min(base + NICENESS, 19)}" and second == f"False {base}"
    assert said == ["made 1 development measurement of a0 beside the last runs (nice 19, on a CPU they left free); "
                    "they are cached for the report",
                    "1 measurement was not kept (the cold import of x); `rlcompare score` measures again"]


def test_what_the_niced_process_has_not_finished_when_the_runs_end_is_finished_at_normal_priority(
        tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    python = _fake_python(tmp_path, "import json\n"
                                    "alongside = json.loads(sys.argv[-1])['alongside_runs']\n"
                                    f"open({str(calls)!r}, 'a').write(f'{{alongside}}\\n')\n"
                                    "print('measuring the public API of x (once)', file=sys.stderr, flush=True)\n"
                                    "if alongside: time.sleep(60)  # starved beside busy CPUs")
    plan = _plan([1])
    with BackgroundMeasuring(plan, cpus=4, python=python) as measuring:
        measuring.on_start()(plan.runs[0])
        # a process at nice 19 can wait long for a CPU on a machine other tests keep busy: wait for
        # its first line however long that takes (the suite's timeout bounds it), then time wait()
        deadline = time.monotonic() + 300
        while not calls.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        measuring.wait()
    assert calls.read_text(encoding="utf-8").split() == ["True", "False"]
    assert time.monotonic() - started < 30  # the niced process was stopped, not waited for (it sleeps 60 s)


def test_no_import_is_timed_beside_the_runs_and_after_them_one_is_kept_as_scoring_keeps_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Beside runs nothing is timed; after them the timing is kept whatever CPU share it had (as
    scoring keeps it: a tiny import can spend under 80% of its wall time on a CPU on an idle machine),
    and a framework a run of this command finished with is not timed at all: the run timed its own
    import first thing (rlcompare_criteria.in_run)."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from tinyac_rlcompare import TinyACAdapter

    timed: list[dict[str, Any]] = []
    measured = {"seconds": [1.0, 1.0, 1.0], "cpu_seconds": [0.3, 0.99, 1.0], "skipped": []}

    def time_cold_import(modules: Any, installation: Any, **options: Any) -> dict[str, Any]:
        timed.append(options)
        return dict(measured)

    monkeypatch.setattr(cold_import, "time_cold_import", time_cold_import)

    def kept_after(alongside_runs: bool, name: str, warm: frozenset[str] = frozenset()) -> tuple[list[str], list[Any]]:
        path = tmp_path / name
        data = ScoringData(planned_runs_frame([PlannedAdapter("tinyac", "tinyac")]),
                           catalogue=ScoringCatalogue({}, {"tinyac": TinyACAdapter}), cache=MeasurementCache(path),
                           warm_adapters=warm)
        left = cold_import.premeasure_cold_import(data, alongside_runs)
        return left, list(json.loads(path.read_text(encoding="utf-8")).values()) if path.exists() else []

    assert kept_after(True, "beside.json") == ([], [])
    assert timed == []  # not even started
    assert kept_after(False, "after.json") == ([], [measured])
    assert [options.get("warm_up", True) for options in timed] == [True]
    assert kept_after(False, "warm.json", warm=frozenset({"tinyac"})) == ([], [])
    assert len(timed) == 1


def test_after_the_runs_one_process_measures_told_which_frameworks_their_runs_imported(tmp_path: Path) -> None:
    """A matrix that left no CPU free: after it, one process at normal priority measures every
    adapter, told which adapters' runs finished ok (their framework imported just now: no warm-up
    import); a run that failed may not have imported it."""
    calls = tmp_path / "calls"
    calls.mkdir()
    python = _fake_python(tmp_path, "import json\n"
                                    "request = json.loads(sys.argv[-1])\n"
                                    "names = [a['adapter'] for a in request['adapters']]\n"
                                    f"open({str(calls)!r} + f'/{{os.getpid()}}', 'w').write(json.dumps("
                                    "[names, request['warm'], request['alongside_runs']]))\n"
                                    "for name in names: print(f'measuring the cold import of {name} (once)', "
                                    "file=sys.stderr)")
    plan = _plan([2, 2, 2])  # each run holds both CPUs: one at a time, none left free
    said: list[str] = []
    with BackgroundMeasuring(plan, cpus=2, python=python, log=said.append) as measuring:
        for run, status in zip(plan.runs, ("ok", "failed", "ok"), strict=True):
            measuring.on_start()(run)
            measuring.on_finish()(RunOutcome(run.run_id, status, None))  # type: ignore[arg-type]
        assert measuring.process is None  # the runs never left a CPU free
        measuring.wait()
    assert [json.loads(path.read_text(encoding="utf-8")) for path in calls.iterdir()] == [
        [["a0", "a1", "a2"], ["a0", "a2"], False]]
    assert said[-1] == "made 3 development measurements of a0, a1, a2 after the runs; they are cached for the report"


def test_leaving_the_block_stops_the_process_and_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    python = _fake_python(tmp_path, "import subprocess\n"
                                    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                                    f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
                                    "time.sleep(60)")
    plan = _plan([1])
    with BackgroundMeasuring(plan, cpus=4, python=python) as measuring:
        measuring.on_start()(plan.runs[0])
        deadline = time.monotonic() + 20
        while not (pids.exists() and " " in pids.read_text(encoding="utf-8")) and time.monotonic() < deadline:
            time.sleep(0.05)
    child = int(pids.read_text(encoding="utf-8").split()[1])
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert measuring.process is not None and measuring.process.returncode is not None
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# -- end to end ------------------------------------------------------------------------------------


def test_the_report_after_a_run_measures_nothing(tmp_path: Path) -> None:
    """``run`` on a cold measurement cache, then ``score``: no "measuring" line, while scoring the same
    store on another cold cache measures (so the check can fail). The cold import and the public API
    are not measured after the runs at all: the run's worker measured them first thing and the store
    keeps them, so scoring on another machine's cold cache reads the same figures."""
    env = {"PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(ROOT)]), "RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD": "",
           "RLCOMPARE_CACHE_DIR": str(tmp_path / "cache")}
    workload = tmp_path / "a2c.toml"
    workload.write_text('id = "a2c"\nenv = "CartPole-v1"\nalgorithm = "A2C"\nenv_steps = 1000\nseeds = 1\n'
                        '[parallelism]\nenvs_per_worker = 4\n[hyperparameters]\nrollout_steps = 5\n'
                        '[evaluation]\ninterval_steps = 500\nepisodes = 2\n', encoding="utf-8")
    store = tmp_path / "results.db"
    ran = run_cli(["run", "--workload", str(workload), "--adapters", "tinyac", "--store", str(store), "--no-parity"],
                  env=env)
    assert ran.returncode == 0, ran.stderr
    assert "development measurements of tinyac" in ran.stderr, ran.stderr
    cache = json.loads((tmp_path / "cache" / "measurements.json").read_text(encoding="utf-8"))
    kinds = {key.split("|")[0] for key in cache}
    assert kinds >= {"install", "glue-package"} and kinds.isdisjoint({"import", "api"}), kinds
    development = json.loads(Store(store).runs_frame()["development_json"].iloc[0])
    assert development["import"]["modules"][0] == "tinyac" and development["import"]["seconds"] > 0
    assert development["api"]["objects"] > 0

    scored = run_cli(["score", "--store", str(store), "--reps", "100", "--json"], env=env)
    assert scored.returncode == 0, scored.stderr
    assert "measuring" not in scored.stderr
    cells = {(cell["criterion"], cell["adapter"]): cell for cell in json.loads(scored.stdout)["cells"]}
    for criterion in ("cold_import", "docstring_coverage", "install_size", "glue_lines"):
        assert cells[(criterion, "tinyac")]["missing"] is None, cells[(criterion, "tinyac")]

    cold = run_cli(["score", "--store", str(store), "--reps", "100", "--json"],
                   env={**env, "RLCOMPARE_CACHE_DIR": str(tmp_path / "cold")})
    assert cold.returncode == 0, cold.stderr
    assert "rlcompare: measuring the install" in cold.stderr, cold.stderr
    assert "the cold import" not in cold.stderr and "the public API" not in cold.stderr
    again = {(cell["criterion"], cell["adapter"]): cell for cell in json.loads(cold.stdout)["cells"]}
    for criterion in ("cold_import", "docstring_coverage", "type_hint_coverage"):
        assert again[(criterion, "tinyac")]["point"] == cells[(criterion, "tinyac")]["point"] is not None, criterion
