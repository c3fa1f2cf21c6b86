"""The local runner and the store, exercised with the test plugin's harness-only adapters."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import gymnasium
import numpy
import pytest

from rlcompare.cli.main import main
from rlcompare.execution.runner import LocalRunner
from rlcompare.store.sqlite_store import SCHEMA_VERSION, Store
from tests.conftest import plan_of, process_alive


def test_plan_prints_greppable_run_ids(fake_plugin: Path, tiny_workload: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--workload", str(tiny_workload), "--adapters", "fake,sb3", "--seeds", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ids = [line.split("\t")[0] for line in lines]
    assert ids == [f"tiny__{a}__s{s}" for a in ("fake", "sb3") for s in range(3)]


def test_failing_adapter_is_stored_as_failed_and_the_others_finish(
    fake_plugin: Path, tiny_workload: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_path = tmp_path / "runs.db"
    status = main(["run", "--workload", str(tiny_workload), "--adapters", "raising,fake",
                   "--store", str(store_path), "--jobs", "2"])
    assert status == 1  # some runs failed, the rest stored
    with Store(store_path) as store:
        runs = store.runs_frame().set_index("run_id")
        curves = store.curves_frame()
    assert set(runs.index) == {"tiny__raising__s0", "tiny__raising__s1", "tiny__fake__s0", "tiny__fake__s1"}
    raising = runs.loc["tiny__raising__s0"]
    assert raising["status"] == "failed"
    assert "boom from the raising adapter" in raising["error"]
    assert "RuntimeError" in raising["traceback"]
    assert raising["env_steps"] == 300  # counted by the harness up to the failure
    fake = runs.loc["tiny__fake__s1"]
    assert fake["status"] == "ok"
    assert fake["env_steps"] >= 600
    assert fake["framework_env_steps"] == fake["env_steps"]
    assert fake["throughput"] == pytest.approx(fake["env_steps"] / fake["training_seconds"])
    assert fake["startup_seconds"] > 0 and fake["evaluation_seconds"] > 0 and fake["peak_rss_bytes"] > 0
    versions = json.loads(fake["versions_json"])
    assert versions["numpy"] == numpy.__version__ and versions["gymnasium"] == gymnasium.__version__
    assert json.loads(fake["host_json"])["fingerprint"] == fake["host_fingerprint"]
    fake_curve = curves[curves["run_id"] == "tiny__fake__s1"]
    # evaluated at the start, every 200 steps and at the end
    assert list(fake_curve["env_steps"]) == [1, 200, 400, 600]
    assert all(len(json.loads(r)) == 2 for r in fake_curve["returns_json"])


def test_store_schema_is_versioned_and_frames_are_pandas(fake_plugin: Path, tiny_workload: Path, tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    with Store(store_path) as store:
        LocalRunner(store).run(plan_of(tiny_workload, ["fake"], seeds=1))
    connection = sqlite3.connect(store_path)
    assert connection.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert connection.execute("SELECT status FROM runs").fetchall() == [("ok",)]
    connection.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    connection.commit()
    connection.close()
    from rlcompare.errors import StoreError

    with pytest.raises(StoreError, match="schema version 99"):
        Store(store_path).runs_frame()


def test_resume_runs_only_what_is_missing(fake_plugin: Path, tiny_workload: Path, tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    plan = plan_of(tiny_workload, ["fake"], seeds=2)
    with Store(store_path) as store:
        first = LocalRunner(store).run(type(plan)(runs=plan.runs[:1]))
        assert [o.run_id for o in first.outcomes] == ["tiny__fake__s0"]
        second = LocalRunner(store).run(plan, resume=True)
    assert second.skipped == ["tiny__fake__s0"]
    assert [o.run_id for o in second.outcomes] == ["tiny__fake__s1"]


def test_resume_reruns_a_run_whose_workload_changed(fake_plugin: Path, tiny_workload: Path, tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    with Store(store_path) as store:
        LocalRunner(store).run(plan_of(tiny_workload, ["fake"], seeds=1))
        tiny_workload.write_text(tiny_workload.read_text().replace("env_steps = 600", "env_steps = 800"))
        again = LocalRunner(store).run(plan_of(tiny_workload, ["fake"], seeds=1), resume=True)
    assert again.skipped == [] and [o.status for o in again.outcomes] == ["ok"]


def test_timeout_kills_the_whole_tree_and_keeps_finished_points(
    fake_plugin: Path, tiny_workload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("FAKEFW_PID_FILE", str(pid_file))
    store_path = tmp_path / "runs.db"
    with Store(store_path) as store:
        summary = LocalRunner(store, timeout_seconds=6).run(plan_of(tiny_workload, ["sleepy"], seeds=1))
        runs = store.runs_frame()
        curves = store.curves_frame()
    assert [o.status for o in summary.outcomes] == ["timeout"]
    assert runs["status"].tolist() == ["timeout"]
    assert "timeout" in runs["error"].iloc[0]
    assert len(curves) >= 1, "evaluation points finished before the timeout are kept"
    worker_pid, child_pid = (int(p) for p in pid_file.read_text().split())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(process_alive(p) for p in (worker_pid, child_pid)):
        time.sleep(0.1)
    assert not process_alive(worker_pid) and not process_alive(child_pid), "no process of the run may survive it"



def test_killed_worker_is_stored_as_failed_without_losing_others(
    fake_plugin: Path, tiny_workload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed from outside (e.g. by the OOM killer) is a failed run, not a lost matrix."""
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("FAKEFW_PID_FILE", str(pid_file))
    store_path = tmp_path / "runs.db"

    def kill_sleepy(planned: object) -> None:
        if getattr(planned, "adapter_id", "") == "sleepy":
            deadline = time.monotonic() + 30
            while not pid_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(int(pid_file.read_text().split()[0]), 9)

    with Store(store_path) as store:
        runner = LocalRunner(store, jobs=1, timeout_seconds=60, on_start=kill_sleepy)
        summary = runner.run(plan_of(tiny_workload, ["sleepy", "fake"], seeds=1))
    statuses = {o.run_id: o.status for o in summary.outcomes}
    assert statuses == {"tiny__sleepy__s0": "failed", "tiny__fake__s0": "ok"}
    assert "no result" in summary.outcomes[0].record.error
