"""Drivers that meet: two or three ``rlcompare run`` at once on one store share the work (each run
done once), on two stores they never touch each other's processes, and a stored ok attempt is never
displaced by a later one that did not finish. Real drivers in subprocesses, with the harness's test
adapter ``paced`` (tests/plugins/paced: random actions at a fixed pace, so runs overlap in time
without loading the CPUs)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from rlcompare.execution.process_tree import ATTEMPT_ENV, RUN_ID_ENV, TreeMonitor, kill_tree
from rlcompare.harness.protocol import CurvePoint
from rlcompare.store.claims import ClaimOutcome, ClaimOwner
from rlcompare.store.records import RunRecord
from rlcompare.store.sqlite_store import Store
from tests.conftest import TINY_WORKLOAD, _with_path

PACED = Path(__file__).parent / "plugins" / "paced"
MARK = f"rlcompare-concurrent-{os.getpid()}"


def _workload(tmp_path: Path, seeds: int) -> Path:
    path = tmp_path / f"tiny{seeds}.toml"
    path.write_text(TINY_WORKLOAD.replace("seeds = 2", f"seeds = {seeds}"), encoding="utf-8")
    return path


def _driver(workload: Path, store: Path, *extra: str, step_seconds: float = 0.004) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": _with_path(PACED), "RLCOMPARE_TEST_MARK": MARK,
           "PACEDFW_STEP_SECONDS": str(step_seconds)}
    env.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)
    return subprocess.Popen([sys.executable, "-m", "rlcompare", "run", "--workload", str(workload), "--adapters",
                             "paced", "--store", str(store), "--no-parity", "--json", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(drivers: list[subprocess.Popen[str]]) -> list[dict]:
    outputs = [driver.communicate(timeout=300) for driver in drivers]
    for driver, (_out, err) in zip(drivers, outputs, strict=True):
        assert driver.returncode == 0, err
    return [json.loads(out) for out, _err in outputs]


def _stored(store: Path) -> tuple[dict[str, str], int, int]:
    """(run id -> status, attempts kept beside the current ones, claims left)."""
    connection = sqlite3.connect(store)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        statuses = dict(connection.execute("SELECT run_id, status FROM runs"))
        attempts = connection.execute("SELECT count(*) FROM attempts").fetchone()[0]
        claims = connection.execute("SELECT count(*) FROM claims").fetchone()[0]
        return statuses, attempts, claims
    finally:
        connection.close()


def _our_run_processes() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            environ = process.environ()
            if RUN_ID_ENV in environ and environ.get("RLCOMPARE_TEST_MARK") == MARK and process.pid != os.getpid():
                found.append(process)
        except psutil.Error:
            continue
    return found


@pytest.fixture(autouse=True)
def no_run_survives():
    yield
    deadline = time.monotonic() + 20
    while _our_run_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _our_run_processes()


def test_two_drivers_on_two_stores_with_the_same_workload_both_finish_ok(tmp_path: Path) -> None:
    """Same run ids on two stores: the driver whose run ends first cleans up its own attempt only
    (before, it adopted and killed the other driver's worker: `worker exited with status -15`)."""
    workload = _workload(tmp_path, 1)
    slow = _driver(workload, tmp_path / "a.db", step_seconds=0.01)
    fast = _driver(workload, tmp_path / "b.db", step_seconds=0.001)
    results = _finish([fast, slow])
    for result, store in zip(results, ("b.db", "a.db"), strict=True):
        assert result["runs"] == [{"run_id": "tiny__paced__s0", "status": "ok"}]
        assert _stored(tmp_path / store) == ({"tiny__paced__s0": "ok"}, 0, 0)


@pytest.mark.parametrize(("drivers", "resume"), [(2, False), (3, True)], ids=["two-drivers", "three-resume"])
def test_drivers_on_one_store_share_the_work_each_run_done_once(tmp_path: Path, drivers: int, resume: bool) -> None:
    workload = _workload(tmp_path, 2 * drivers)
    store = tmp_path / "s.db"
    Store(store).create()  # the store exists: every driver starts on it at once
    extra = ("--resume",) if resume else ()
    results = _finish([_driver(workload, store, *extra) for _ in range(drivers)])
    ran = [[run["run_id"] for run in result["runs"]] for result in results]
    everything = [run for runs in ran for run in runs]
    expected = {f"tiny__paced__s{seed}" for seed in range(2 * drivers)}
    assert sorted(everything) == sorted(expected)  # each run once, by exactly one driver
    assert sum(1 for runs in ran if runs) >= 2  # the work was shared
    statuses, attempts, claims = _stored(store)
    assert statuses == dict.fromkeys(expected, "ok") and attempts == 0 and claims == 0
    for result, runs in zip(results, ran, strict=True):  # what each left, it says why
        left = set(expected) - set(runs)
        assert left == set(result["skipped"]) | {taken["run_id"] for taken in result["taken"]}


def _record(status: str, final: float | None, finished_at: float, seed: int = 0) -> RunRecord:
    return RunRecord(run_id=f"w__a__s{seed}", workload_id="w", workload_digest="d", adapter="a", framework="f",
                     algorithm="PPO", env_id="CartPole-v1", seed=seed, status=status, workload_json={},
                     final_return_mean=final, finished_at=finished_at,
                     error=None if status == "ok" else f"{status} on purpose")


def _point(steps: int, value: float) -> CurvePoint:
    return CurvePoint(env_steps=steps, framework_env_steps=steps, train_seconds=1.0, return_mean=value,
                      return_std=0.0, returns=(value,), episode_length_mean=value)


@pytest.mark.parametrize("later", ["failed", "interrupted", "timeout"])
def test_a_stored_ok_is_never_displaced_by_a_later_unfinished_attempt_and_both_are_kept(
        tmp_path: Path, later: str) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create()
        assert store.save_run(_record("ok", 500.0, 1.0), [_point(100, 20.0), _point(200, 500.0)])
        assert not store.save_run(_record(later, None, 2.0), [_point(100, 9.0)])
        run = store.runs_frame().iloc[0]
        assert (run["status"], run["final_return_mean"]) == ("ok", 500.0)
        assert store.curves_frame()["return_mean"].tolist() == [20.0, 500.0]
        [kept] = store.attempts("w__a__s0")
        assert (kept["status"], kept["record"]["error"], len(kept["curve"])) == (later, f"{later} on purpose", 1)
        # a later finished attempt becomes current; the earlier ok is kept, not lost
        assert store.save_run(_record("ok", 480.0, 3.0), [_point(100, 480.0)])
        assert store.runs_frame().iloc[0]["final_return_mean"] == 480.0
        assert [(a["status"], a["record"]["final_return_mean"]) for a in store.attempts("w__a__s0")] == [
            (later, None), ("ok", 500.0)]
        # an unfinished attempt replaces an unfinished one, keeping it too
        store.save_run(_record("failed", None, 4.0, seed=1))
        assert store.save_run(_record("interrupted", None, 5.0, seed=1))
        assert [a["status"] for a in store.attempts("w__a__s1")] == ["failed"]


def test_a_claim_is_taken_over_only_from_a_provably_dead_driver(tmp_path: Path) -> None:
    me = ClaimOwner.this_process()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = ClaimOwner(me.host, me.boot, sleeper.pid, _start(sleeper.pid))
        dead = ClaimOwner(me.host, me.boot, alive.pid, (alive.start or 0.0) + 1.0)  # the pid, reused
        rebooted = ClaimOwner(me.host, "another-boot", sleeper.pid, alive.start)
        elsewhere = ClaimOwner("another-machine", me.boot, 2**22 + 7, 1.0)
        with Store(tmp_path / "s.db") as store:
            store.create()
            for index, holder in enumerate((alive, elsewhere, dead, rebooted)):
                run_id = f"w__a__s{index}"
                assert store.claim_run(run_id, "d", f"attempt-{index}", holder, None).outcome is ClaimOutcome.CLAIMED
                claim = store.claim_run(run_id, "d", f"mine-{index}", me, None)
                expected = ClaimOutcome.TAKEN if holder in (alive, elsewhere) else ClaimOutcome.CLAIMED
                assert claim.outcome is expected, holder
                if expected is ClaimOutcome.TAKEN:
                    assert claim.holder == holder
            # a run stored ok since (or ever, with --resume) needs no claim
            store.save_run(_record("ok", 1.0, 10.0, seed=9))
            assert store.claim_run("w__a__s9", "d", "x", me, 5.0).outcome is ClaimOutcome.DONE
            assert store.claim_run("w__a__s9", "d", "x", me, float("-inf")).outcome is ClaimOutcome.DONE
            assert store.claim_run("w__a__s9", "d", "x", me, 11.0).outcome is ClaimOutcome.CLAIMED
            assert store.claim_run("w__a__s9", "other-digest", "y", me, float("-inf")).outcome is ClaimOutcome.CLAIMED
    finally:
        sleeper.kill()
        sleeper.wait()


def _start(pid: int) -> float | None:
    from rlcompare.harness.run_directory import process_start

    return process_start(pid)


def test_cleanup_stops_its_own_attempt_only_not_another_with_the_same_run_id(tmp_path: Path) -> None:
    def start(attempt: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, RUN_ID_ENV: "w__a__s0", ATTEMPT_ENV: attempt, "RLCOMPARE_TEST_MARK": MARK}
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env,
                                start_new_session=True)

    mine, theirs = start(str(tmp_path / "a.runs" / "w__a__s0.1")), start(str(tmp_path / "b.runs" / "w__a__s0.1"))
    try:
        monitor = TreeMonitor(mine.pid, str(tmp_path / "a.runs" / "w__a__s0.1"))
        kill_tree(monitor, grace_seconds=1.0)
        assert mine.wait(timeout=10) is not None
        assert theirs.poll() is None  # same run id, another store's attempt: untouched
    finally:
        for process in (mine, theirs):
            process.kill()
            process.wait()
