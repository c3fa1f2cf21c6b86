"""Store schema version 6: each curve point's grid point and updates, each run's machine load.

A version-5 store (before them) is still scored as it is (read-only, upgraded in memory), migrated
when written to, and a bundle written before the columns existed still verifies.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rlcompare.harness.protocol import CurvePoint
from rlcompare.reporting.bundle import SECTIONS, _run_digests, read_bundle
from rlcompare.reporting.canonical import canonical, digest
from rlcompare.store.records import RunRecord
from rlcompare.store.sqlite_store import SCHEMA_VERSION, Store
from tests.reporting_support import synthetic_runs
from tests.test_criteria_support import write_store
from tests.test_reporting import REPS, run_command

NEW_CURVE_COLUMNS = ("grid_steps", "updates")
NEW_RUN_COLUMNS = ("load_start", "load_end", "load_cpus", "cpu_steal", "runs_in_flight")


@pytest.fixture(autouse=True)
def report_plugins_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlcompare.cli import report as reporting_cli
    from rlcompare.cli import score as score_cli
    from tests.reporting_support import report_plugins

    monkeypatch.setattr(score_cli, "load_plugins", report_plugins)
    monkeypatch.setattr(reporting_cli, "load_plugins", report_plugins)


def _version_5(path: Path) -> Path:
    """The synthetic store as version 5 wrote it: without the columns version 6 added."""
    write_store(path, synthetic_runs())
    connection = sqlite3.connect(path)
    with connection:
        for column in NEW_CURVE_COLUMNS:
            connection.execute(f"ALTER TABLE curves DROP COLUMN {column}")
        for column in NEW_RUN_COLUMNS:
            connection.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        for table in ("attempts", "claims"):  # version 7's
            connection.execute(f"DROP TABLE {table}")
        connection.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return path


def _score(store: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert run_command(["score", "--store", str(store), "--reps", REPS, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_version_6_stores_each_points_grid_point_and_each_runs_load(tmp_path: Path) -> None:
    assert SCHEMA_VERSION >= 6
    record = RunRecord(run_id="w__a__s0", workload_id="w", workload_digest="d", adapter="a", framework="f",
                       algorithm="PPO", env_id="CartPole-v1", seed=0, status="ok", workload_json={},
                       load_start=0.5, load_end=1.5, load_cpus=2, cpu_steal=0.01, runs_in_flight=2)
    points = [CurvePoint(env_steps=4, framework_env_steps=4, train_seconds=0.0, return_mean=9.0, return_std=0.0,
                         returns=(9.0,), episode_length_mean=9.0),
              CurvePoint(env_steps=5_124, framework_env_steps=5_124, train_seconds=1.0, return_mean=20.0,
                         return_std=0.0, returns=(20.0,), episode_length_mean=20.0, grid_steps=5_120, updates=20)]
    path = write_store(tmp_path / "s.db", [(record, points)])
    with Store(path) as store:
        run = store.runs_frame().iloc[0]
        curve = store.curves_frame()
    assert (run["load_start"], run["load_end"], run["load_cpus"], run["cpu_steal"], run["runs_in_flight"]) == (
        0.5, 1.5, 2, 0.01, 2)
    assert curve["grid_steps"].isna().tolist() == [True, False] and curve["grid_steps"].iloc[1] == 5_120
    assert curve["updates"].iloc[1] == 20


def test_a_read_only_version_5_store_is_scored_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    current = _score(write_store(tmp_path / "v6.db", synthetic_runs()), capsys)
    folder = tmp_path / "published"
    folder.mkdir()
    old = _version_5(folder / "v5.db")
    before = old.read_bytes()
    old.chmod(0o444)
    folder.chmod(0o555)
    try:
        scored = _score(old, capsys)
    finally:
        folder.chmod(0o755)
        old.chmod(0o644)
    assert old.read_bytes() == before  # upgraded in memory only
    # the same matrix as the same runs stored by this version (no figure of version 6 changes a score)
    assert scored["adapters"] == current["adapters"] and scored["cells"] == current["cells"]
    with Store(old) as store:
        assert store.runs_frame()["load_start"].isna().all()
        assert store.curves_frame()["grid_steps"].isna().all()


def test_a_version_5_store_is_migrated_when_written(tmp_path: Path) -> None:
    old = _version_5(tmp_path / "v5.db")
    with Store(old) as store:
        store.create()
    connection = sqlite3.connect(old)
    assert connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"attempts", "claims"} <= tables
    curve_columns = {row[1] for row in connection.execute("PRAGMA table_info(curves)")}
    run_columns = {row[1] for row in connection.execute("PRAGMA table_info(runs)")}
    assert set(NEW_CURVE_COLUMNS) <= curve_columns and set(NEW_RUN_COLUMNS) <= run_columns
    assert connection.execute("SELECT count(*) FROM runs WHERE load_start IS NOT NULL").fetchone() == (0,)
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    connection.close()


def _bundle(store: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert run_command(["bundle", "--store", str(store), "--out", str(out), "--reps", REPS]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def test_bundles_carry_the_new_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = synthetic_runs()
    for record, points in runs:
        record.load_start, record.load_end, record.load_cpus, record.runs_in_flight = 0.3, 0.5, 2, 1
        points[:] = [CurvePoint(**{**point.__dict__, "grid_steps": point.env_steps, "updates": 3}) for point in points]
    bundle = tmp_path / "matrix.json"
    inputs = _bundle(write_store(tmp_path / "s.db", runs), bundle, capsys)["inputs"]
    assert all(run["load_start"] == 0.3 and run["runs_in_flight"] == 1 for run in inputs["runs"])
    assert inputs["curves"] and all(point["grid_steps"] == point["env_steps"] and point["updates"] == 3
                                    for point in inputs["curves"])
    assert run_command(["verify", str(bundle)]) == 0
    assert "verified" in capsys.readouterr().out


def test_a_bundle_from_before_the_new_columns_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The runs of a version-5 store, bundled as an rlcompare before version 6 wrote them: the inputs
    hold no key of the new columns at all (not even null)."""
    document = _bundle(_version_5(tmp_path / "v5.db"), tmp_path / "matrix.json", capsys)
    inputs = document["inputs"]
    for run in inputs["runs"]:
        for column in NEW_RUN_COLUMNS:
            assert run.pop(column) is None
    for point in inputs["curves"]:
        for column in NEW_CURVE_COLUMNS:
            assert point.pop(column) is None
    inputs = canonical(inputs)
    document.update(inputs=inputs, digest=digest(inputs, is_canonical=True), run_digests=_run_digests(inputs),
                    sections={name: digest(inputs.get(name), is_canonical=True) for name in SECTIONS})
    document["citation"].update(digest=document["digest"], key="rlcompare_" + document["digest"][7:19])
    old = tmp_path / "old-matrix.json"
    old.write_text(json.dumps(document), encoding="utf-8")
    assert read_bundle(old).inputs.curves_frame()["grid_steps"].isna().all()
    assert run_command(["verify", str(old)]) == 0, capsys.readouterr()
    assert "verified" in capsys.readouterr().out
