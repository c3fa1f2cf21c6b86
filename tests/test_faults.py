"""Nothing lost, nothing left running: the driver killed, terminated or interrupted twice, two
drivers on one new store, a full disk, a run over its memory limit. Every test ends with the store's
``PRAGMA integrity_check`` ok and no process of the run left. Real drivers (``python -m rlcompare
run`` in a subprocess) with the harness's test adapters (tests/plugins/good)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rlcompare.execution.process_tree import RUN_ID_ENV
from rlcompare.harness.run_directory import RunDirectory, runs_root
from tests.conftest import GOOD_PLUGINS, TINY_WORKLOAD, _with_path

FAKE = TINY_WORKLOAD.replace("env_steps = 600", "env_steps = 3000")


#: Every process these tests start carries this mark, so processes of other test sessions on the
#: same machine (which carry run ids too) are not mistaken for ours.
MARK = f"rlcompare-faults-{os.getpid()}"


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": _with_path(GOOD_PLUGINS), "RLCOMPARE_TEST_MARK": MARK, **extra}
    env.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)
    return env


def _driver(args: list[str], **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rlcompare", "run", *args], env=_env(**extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run_processes() -> list[psutil.Process]:
    """Live processes of any run started by these tests (they carry RLCOMPARE_RUN_ID and our mark)."""
    found = []
    for process in psutil.process_iter():
        try:
            environ = process.environ()
            if RUN_ID_ENV in environ and environ.get("RLCOMPARE_TEST_MARK") == MARK and process.pid != os.getpid():
                found.append(process)
        except psutil.Error:
            continue
    return found


def _wait(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _evaluated_run_dirs(store: Path) -> list[Path]:
    root = runs_root(store)
    if not root.is_dir():
        return []
    return [d for d in root.iterdir() if (d / "progress.jsonl").is_file() and (d / "progress.jsonl").stat().st_size]


def _check_store(store: Path) -> dict[str, str]:
    connection = sqlite3.connect(store)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return dict(connection.execute("SELECT run_id, status FROM runs"))
    finally:
        connection.close()


@pytest.fixture(autouse=True)
def no_run_survives() -> Iterator[None]:
    yield
    _wait(lambda: not _run_processes(), timeout=20, what="every run process to end")


@pytest.fixture
def workload(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(FAKE, encoding="utf-8")
    return path


def test_sigkill_of_the_driver_stops_its_workers_and_resume_stores_what_was_left(
        workload: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    driver = _driver(["--workload", str(workload), "--adapters", "sleepy", "--seeds", "1", "--store", str(store)])
    _wait(lambda: _evaluated_run_dirs(store), what="an evaluation point of the sleepy run")
    assert _run_processes()
    driver.kill()
    driver.wait()
    # the worker watches its driver: it and its child stop without anyone else's help
    _wait(lambda: not _run_processes(), timeout=15, what="the orphaned worker to stop itself")
    [left] = list(runs_root(store).iterdir())
    assert (left / "progress.jsonl").stat().st_size > 0
    # the next driver stores the run it left (interrupted, with its points) and runs the fake one
    again = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                            "fake", "--seeds", "1", "--store", str(store), "--resume"], env=_env(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "stored 1 runs left by an earlier driver" in again.stderr
    assert _check_store(store) == {"tiny__sleepy__s0": "interrupted", "tiny__fake__s0": "ok"}
    points = sqlite3.connect(store).execute("SELECT count(*) FROM curves WHERE run_id = 'tiny__sleepy__s0'").fetchone()
    assert points[0] >= 1
    assert not runs_root(store).exists()


def test_a_run_that_finished_while_its_driver_was_gone_is_stored_not_rerun(workload: Path, tmp_path: Path) -> None:
    """The worker wrote its result, then the driver died before storing it: --resume ingests it."""
    store = tmp_path / "s.db"
    first = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                            "fake", "--seeds", "1", "--store", str(store)], env=_env(), capture_output=True,
                           text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    connection = sqlite3.connect(store)
    stored = connection.execute("SELECT env_steps, finished_at FROM runs WHERE run_id = 'tiny__fake__s0'").fetchone()
    connection.close()
    # replay the same run by hand into a run directory owned by a driver that no longer exists
    from rlcompare.execution.runner import run_spec
    from rlcompare.plan.matrix import build_plan
    from rlcompare.plugins.manager import build_plugin_manager
    from rlcompare.spec.workload import load_workload_file

    sys.path.insert(0, str(GOOD_PLUGINS))
    try:
        [planned] = build_plan(build_plugin_manager().plan_catalogue(), [load_workload_file(workload).with_seeds(1)], ["fake"]).runs
    finally:
        sys.path.remove(str(GOOD_PLUGINS))
    directory = RunDirectory.create(store, planned.run_id)
    directory.write_spec(run_spec(planned, directory, time.time()))
    worker = subprocess.run([sys.executable, "-m", "rlcompare.harness.worker", str(directory.spec)], env=_env(),
                            capture_output=True, timeout=300)
    assert worker.returncode == 0 and directory.read_result().status == "ok"
    directory.driver.write_text(json.dumps({"pid": 2**22 + 7, "start": 1.0}), encoding="utf-8")  # a dead owner
    again = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                            "fake", "--seeds", "1", "--store", str(store), "--resume"], env=_env(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "stored 1 runs left by an earlier driver" in again.stderr and "1 already stored" in again.stderr
    connection = sqlite3.connect(store)
    finished = connection.execute("SELECT finished_at FROM runs WHERE run_id = 'tiny__fake__s0'").fetchone()[0]
    connection.close()
    assert finished != stored[1]  # the ingested run replaced the first, and nothing was run a third time
    assert not runs_root(store).exists()
    _check_store(store)


@pytest.mark.parametrize(("signals", "status"), [((signal.SIGTERM,), 143), ((signal.SIGINT, signal.SIGINT), 130)],
                         ids=["sigterm", "double-sigint"])
def test_sigterm_and_double_sigint_store_in_flight_runs_as_interrupted(
        workload: Path, tmp_path: Path, signals: tuple[int, ...], status: int) -> None:
    store = tmp_path / "s.db"
    driver = _driver(["--workload", str(workload), "--adapters", "sleepy", "--seeds", "2", "--jobs", "2",
                      "--store", str(store)])
    _wait(lambda: len(_evaluated_run_dirs(store)) == 2, what="both runs to evaluate")
    for sig in signals:
        driver.send_signal(sig)
        time.sleep(0.05)
    out, err = driver.communicate(timeout=60)
    assert driver.returncode == status, err
    lines = [line for line in err.splitlines() if line.startswith("rlcompare:")]
    assert len(lines) == 1 and "runs in flight are stored as interrupted" in lines[0]
    assert _check_store(store) == {"tiny__sleepy__s0": "interrupted", "tiny__sleepy__s1": "interrupted"}
    connection = sqlite3.connect(store)
    assert connection.execute("SELECT count(*) FROM curves").fetchone()[0] >= 2  # their evaluation points
    reasons = {row[0] for row in connection.execute("SELECT error FROM runs")}
    assert reasons == {f"interrupted by {signal.Signals(signals[0]).name}"}
    assert not runs_root(store).exists()


def test_two_drivers_starting_on_one_new_store_both_store_everything(workload: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    other = tmp_path / "other.toml"
    other.write_text(FAKE.replace('id = "tiny"', 'id = "other"'), encoding="utf-8")
    drivers = [_driver(["--workload", str(path), "--adapters", "fake", "--seeds", "2", "--store", str(store)])
               for path in (workload, other)]
    results = [driver.communicate(timeout=300) for driver in drivers]
    assert [driver.returncode for driver in drivers] == [0, 0], [err for _, err in results]
    assert _check_store(store) == {f"{w}__fake__s{s}": "ok" for w in ("tiny", "other") for s in (0, 1)}


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def test_a_full_disk_keeps_finished_results_on_disk_until_resume_stores_them(workload: Path, tmp_path: Path) -> None:
    """The store fills up mid-matrix: the driver says so in one line, keeps what it could not store,
    starts nothing more; once there is room, --resume stores it. A small tmpfs when this machine
    lets the tests mount one; else the same fault from a file-size limit (EFBIG instead of ENOSPC)."""
    disk = tmp_path / "disk"
    tmpfs = _mount_tmpfs(disk, "320k")
    # the disk's size is set so that the store fills before a run's own files do, for the records of
    # cold starts (a forked run's record also names its parent: a few bytes more, which move the page
    # on which the disk fills; tests/test_warm_start.py covers forked runs' faults)
    extra: dict[str, str] = {"RLCOMPARE_WARM_START": "0"}
    if not tmpfs:
        disk.mkdir(exist_ok=True)
    store = disk / "s.db"
    args = [sys.executable]
    if not tmpfs:  # the driver and its workers may write files of at most 96 KiB
        args += ["-c", "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
                       "resource.setrlimit(resource.RLIMIT_FSIZE, (96 * 1024, 96 * 1024)); "
                       "from rlcompare.cli.main import main; sys.exit(main(sys.argv[1:]))"]
    else:
        args += ["-m", "rlcompare"]
    try:
        # a fat description makes every stored run big, so the disk fills after a few runs
        fat = FAKE.replace('id = "tiny"', 'id = "tiny"\ndescription = "' + "x" * 1900 + '"')
        workload.write_text(fat, encoding="utf-8")
        full = subprocess.run([*args, "run", "--workload", str(workload), "--adapters", "fake", "--seeds", "40",
                               "--store", str(store)], env=_env(**extra), capture_output=True, text=True, timeout=600)
        assert full.returncode == 1, full.stderr
        said = [line for line in full.stderr.splitlines() if line.startswith("rlcompare:")]
        # one line says what went wrong; the others can only be what the command did before the runs
        # (probing the fake adapter's update when no earlier test of this run has, once per cache)
        message = [line for line in said if not line.startswith("rlcompare: probing the updates of fake ")]
        assert len(message) == 1 and "could not be stored" in message[0] and "--resume" in message[0], said
        kept = [d for d in runs_root(store).iterdir() if (d / "result.json").exists()]
        assert kept, "the unstored result is kept in its run directory"
        stored_before = _check_store(store)
        assert len(stored_before) < 40
        if tmpfs:
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
            resumed = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload),
                                      "--adapters", "fake", "--seeds", "40", "--store", str(store), "--resume"],
                                     env=_env(), capture_output=True, text=True, timeout=600)
        else:
            resumed = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload),
                                      "--adapters", "fake", "--seeds", "40", "--store", str(store), "--resume"],
                                     env=_env(), capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        after = _check_store(store)
        assert len(after) == 40 and set(after.values()) == {"ok"}
        assert not runs_root(store).exists()
    finally:
        if tmpfs:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_run_over_max_memory_is_stopped_and_stored_as_failed(workload: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    done = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                           "hungry,fake", "--seeds", "1", "--store", str(store), "--max-memory", "250M"],
                          env=_env(FAKEFW_HUNGRY_MIB="400"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert _check_store(store) == {"tiny__hungry__s0": "failed", "tiny__fake__s0": "ok"}
    error = sqlite3.connect(store).execute("SELECT error FROM runs WHERE run_id = 'tiny__hungry__s0'").fetchone()[0]
    assert error.startswith("exceeded --max-memory 250 MiB: its process tree reached")
    assert not runs_root(store).exists()
