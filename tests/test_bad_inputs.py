"""Every bad input is answered in one line with exit status 2, before anything runs, and nothing is
written: the regression corpus of malformed inputs found by trying the tool from outside."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlcompare.cli.main import main
from rlcompare.harness.run_directory import runs_root
from tests.conftest import GOOD_PLUGINS, TINY_WORKLOAD, _with_path, run_cli


def _status(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    status = main(args)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return status, err


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def workload(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_WORKLOAD, encoding="utf-8")
    return path


def _foreign_db(path: Path) -> Path:
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("CREATE TABLE users (name TEXT)")
        connection.execute("INSERT INTO users VALUES ('ada')")
    connection.close()
    return path


def _store_cases(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (--store value, fragment of the one-line message)."""
    (tmp_path / "folder").mkdir()
    random_bytes = tmp_path / "random.db"
    random_bytes.write_bytes(os.urandom(4096))
    newer = tmp_path / "newer.db"
    connection = sqlite3.connect(newer)
    with connection:
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("INSERT INTO meta VALUES ('schema_version', '99')")
        connection.execute("CREATE TABLE runs (run_id TEXT)")
        connection.execute("CREATE TABLE curves (run_id TEXT)")
    connection.close()
    invalid = tmp_path / "invalid.db"
    connection = sqlite3.connect(invalid)
    with connection:
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("INSERT INTO meta VALUES ('schema_version', 'x')")
        connection.execute("CREATE TABLE runs (run_id TEXT)")
        connection.execute("CREATE TABLE curves (run_id TEXT)")
    connection.close()
    return {
        "directory": (str(tmp_path / "folder"), "is not a regular file"),
        "dev-null": ("/dev/null", "is not a regular file"),
        "random bytes": (str(random_bytes), "not an SQLite file"),
        "missing folder": (str(tmp_path / "nope" / "s.db"), "does not exist"),
        "empty path": ("", "is not a file path"),
        "in memory": (":memory:", "an in-memory store keeps nothing"),
        "newer schema": (str(newer), "schema version 99"),
        "invalid schema": (str(invalid), "invalid schema version"),
        "another application's database": (str(_foreign_db(tmp_path / "app.db")), "another application's database"),
    }


@pytest.mark.parametrize("case", ["directory", "dev-null", "random bytes", "missing folder", "empty path",
                                  "in memory", "newer schema", "invalid schema", "another application's database"])
def test_a_bad_store_is_refused_before_any_run_and_left_untouched(
        case: str, workload: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    store, fragment = _store_cases(tmp_path)[case]
    before = {p: _digest(p) for p in tmp_path.rglob("*") if p.is_file()}
    launched: list[object] = []
    monkeypatch.setattr("rlcompare.execution.local.LocalBackend.submit",
                        lambda self, planned, directory: launched.append(planned))
    status, err = _status(["run", "--workload", str(workload), "--adapters", "sb3", "--store", store], capsys)
    assert status == 2 and len(err) == 1 and fragment in err[0], err
    assert not launched
    after = {p: _digest(p) for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing written, nothing created (no -journal, -wal or .runs beside it)
    assert not Path("/dev/null-journal").exists()


#: As root, the commands run as root without any capability (setpriv clears the bounding set, so
#: none comes back at exec): file permissions bind such a process as they bind any user, while the
#: checkout and its .venv, root's own, stay readable wherever they are (a clone in /root or another
#: folder private to root is out of reach of every other user, so `nobody` could not even import
#: rlcompare from it).
WITHOUT_CAPABILITIES = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]


def _as_unprivileged(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m rlcompare ARGS`` in a process that file permissions bind (they do not bind root
    with its capabilities)."""
    prefix = [] if os.geteuid() != 0 else WITHOUT_CAPABILITIES
    env = {**os.environ, "HOME": str(cwd), "RLCOMPARE_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([*prefix, sys.executable, "-m", "rlcompare", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def _permissions_bind(path: Path) -> str | None:
    """None when a process started as :func:`_as_unprivileged` starts them is refused writing to the
    read-only ``path`` and can import rlcompare; else why not."""
    probe = ("import os, sys, rlcompare; print(int(os.access(sys.argv[1], os.W_OK)), end='')")
    prefix = [] if os.geteuid() != 0 else WITHOUT_CAPABILITIES
    try:
        done = subprocess.run([*prefix, sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                              timeout=60)
    except OSError as error:
        return f"{prefix[0] if prefix else sys.executable} cannot be started: {error}"
    if done.returncode != 0:
        return f"{' '.join(prefix) or 'the interpreter'} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    return None if done.stdout == "0" else f"a read-only file stays writable to {' '.join(prefix) or 'this user'}"


@pytest.fixture
def published() -> Iterator[Path]:
    """A store in a folder, both read-only (a published matrix)."""
    import tempfile

    from tests.test_criteria_support import run_record, workload_spec, write_store

    tmp_path = Path(tempfile.mkdtemp(prefix="rlcompare-published-"))
    folder = tmp_path / "published"
    folder.mkdir()
    store = write_store(folder / "s.db", [(run_record(workload_spec("w"), a, s, final_return=1.0 + s,
                                                      throughput=100.0), []) for a in ("a", "b") for s in (0, 1)])
    connection = sqlite3.connect(store)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    (tmp_path / "cache").mkdir()
    store.chmod(0o444)
    folder.chmod(0o555)
    yield store
    folder.chmod(0o755)
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_read_only_store_is_scored_without_being_changed_and_refused_for_run(published: Path) -> None:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv (util-linux): file permissions cannot be made to bind")
    why_not = _permissions_bind(published)
    assert why_not is None, f"file permissions cannot be made to bind the commands under test: {why_not}"
    before = {p.name: _digest(p) for p in published.parent.iterdir()}
    workload = published.parent.parent / "tiny.toml"
    workload.write_text(TINY_WORKLOAD, encoding="utf-8")
    workload.chmod(0o644)
    scored = _as_unprivileged(["score", "--store", str(published), "--reps", "100"], published.parent.parent)
    assert scored.returncode == 0, scored.stderr
    assert "OVERALL SCORE" in scored.stdout
    run = _as_unprivileged(["run", "--workload", str(workload), "--adapters", "sb3", "--store", str(published)],
                           published.parent.parent)
    lines = [line for line in run.stderr.splitlines() if line.startswith("rlcompare:")]
    assert run.returncode == 2 and len(lines) == 1 and "is not writable" in lines[0], run.stderr
    assert {p.name: _digest(p) for p in published.parent.iterdir()} == before


def test_other_applications_databases_are_never_changed_by_score_or_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = _foreign_db(tmp_path / "app.db")
    before = _digest(database)
    for args in (["score", "--store", str(database)], ["report", "--store", str(database), "--out",
                                                        str(tmp_path / "out")]):
        status, err = _status(args, capsys)
        assert status == 2 and len(err) == 1 and "another application's database" in err[0], err
    assert _digest(database) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_damaged_store_pages_give_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_criteria_support import run_record, workload_spec, write_store

    store = write_store(tmp_path / "s.db", [(run_record(workload_spec("w"), "a", s, final_return=1.0,
                                                        throughput=100.0), []) for s in range(200)])
    sqlite3.connect(store).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(store.read_bytes())
    data[8192:16384] = os.urandom(8192)  # two pages of the runs table's b-tree
    store.write_bytes(bytes(data))
    status, err = _status(["score", "--store", str(store), "--reps", "100"], capsys)
    assert status == 2 and len(err) == 1 and str(store) in err[0], err


# -- workloads and options -------------------------------------------------------------------------

BAD_WORKLOADS = [
    ("algorithm as a list", TINY_WORKLOAD.replace('algorithm = "PPO"', 'algorithm = ["PPO"]'), "field 'algorithm'"),
    ("algorithm as a table", TINY_WORKLOAD.replace('algorithm = "PPO"', "algorithm = {name = 'PPO'}"),
     "field 'algorithm'"),
    ("unknown env_kwargs", TINY_WORKLOAD + "[env_kwargs]\nwind = 3\n", "field 'env_kwargs'"),
    ("step cost zero", TINY_WORKLOAD.replace("CartPole-v1", "rlcompare/CalibratedCartPole-v0")
     + "[env_kwargs]\nstep_cost_ms = 0\n", "step_cost_ms must be a number of milliseconds in (0, 1000]"),
    ("step cost text", TINY_WORKLOAD.replace("CartPole-v1", "rlcompare/CalibratedCartPole-v0")
     + '[env_kwargs]\nstep_cost_ms = "x"\n', "step_cost_ms must be a number"),
    ("negative step cost", TINY_WORKLOAD.replace("CartPole-v1", "rlcompare/CalibratedCartPole-v0")
     + "[env_kwargs]\nstep_cost_ms = -1\n", "step_cost_ms must be a number"),
    ("budget 10**19", TINY_WORKLOAD.replace("env_steps = 600", "env_steps = 9223372036854775807"), "field 'env_steps'"),
    ("a billion seeds", TINY_WORKLOAD.replace("seeds = 2", "seeds = 1000000000"), "field 'seeds'"),
    ("300-character id", TINY_WORKLOAD.replace('id = "tiny"', f'id = "{"x" * 300}"'), "field 'id'"),
    ("a million workers", TINY_WORKLOAD + "[parallelism]\nworkers = 1000000\n", "field 'parallelism.workers'"),
    ("600 envs per worker", TINY_WORKLOAD + "[parallelism]\nenvs_per_worker = 600\n",
     "field 'parallelism.envs_per_worker'"),
    ("more envs than counter slots", TINY_WORKLOAD + "[parallelism]\nenvs_per_worker = 100\nworkers = 6\n",
     "the harness counts at most 512 per run"),
    ("infinite learning rate", TINY_WORKLOAD.replace("epochs = 2", "epochs = 2\nlearning_rate = inf"),
     "field 'hyperparameters.learning_rate'"),
    ("budget as a boolean", TINY_WORKLOAD.replace("env_steps = 600", "env_steps = true"), "field 'env_steps'"),
    ("switch as a number", TINY_WORKLOAD.replace("episodes = 2", "episodes = 2\ndeterministic = 1"),
     "field 'evaluation.deterministic'"),
]


@pytest.mark.parametrize(("case", "text", "fragment"), BAD_WORKLOADS, ids=[c[0] for c in BAD_WORKLOADS])
def test_bad_workloads_are_one_line_and_start_nothing(case: str, text: str, fragment: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.toml"
    path.write_text(text, encoding="utf-8")
    for command in ("plan", "run"):
        status, err = _status([command, "--workload", str(path), "--adapters", "sb3", "--store",
                               str(tmp_path / "s.db")] if command == "run" else
                              [command, "--workload", str(path), "--adapters", "sb3"], capsys)
        assert status == 2 and len(err) == 1 and fragment in err[0], (case, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.toml"]


def test_files_that_are_not_workloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latin = tmp_path / "latin.toml"
    latin.write_bytes(TINY_WORKLOAD.replace("tiny", "t\xe9").encode("latin-1"))
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.toml"
    huge.write_bytes(b"# " + b"x" * (2 << 20))
    cases = [(latin, "is not UTF-8 text"), (fifo, "must be a regular file"), (Path("/dev/zero"), "must be a regular file"),
             (huge, "at most 1,048,576 are read"), (tmp_path, "must be a regular file")]
    for path, fragment in cases:
        status, err = _status(["plan", "--workload", str(path)], capsys)
        assert status == 2 and len(err) == 1 and fragment in err[0], (path, err)


def test_weights_that_are_not_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_criteria_support import run_record, workload_spec, write_store

    store = write_store(tmp_path / "s.db", [(run_record(workload_spec("w"), "a", 0, final_return=1.0), [])])
    weights = tmp_path / "w.toml"
    weights.write_bytes(b"[weights]\nfinal_return = \xff\n")
    status, err = _status(["score", "--store", str(store), "--weights", str(weights)], capsys)
    assert status == 2 and len(err) == 1 and "is not UTF-8 text" in err[0]


@pytest.mark.parametrize(("args", "fragment"), [
    (["plan", "--suite", "quick", "--adapters", "sb3,sb3"], "'sb3' is listed twice"),
    (["score", "--seed", "-1"], "--seed: expected a whole number from 0"),
    (["plan", "--suite", "quick", "--seeds", "1000000000"], "--seeds: expected 1 to 1000"),
    (["run", "--suite", "quick", "--max-memory", "lots"], "--max-memory: expected a size such as 512M"),
])
def test_bad_options_are_one_line(args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status, err = _status(args, capsys)
    except SystemExit as exit_:
        status, err = int(exit_.code), [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1 and fragment in err[0], err


def test_a_closed_pipe_is_not_a_traceback() -> None:
    for command in ("rlcompare frameworks --json | head -1", "rlcompare list criteria | head -2",
                    "rlcompare frameworks | head -1"):
        done = subprocess.run(["bash", "-o", "pipefail", "-c", command.replace("rlcompare", f"{sys.executable} -m rlcompare", 1)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stderr == "", (command, done.stderr)


def test_sb3_runs_leave_nothing_in_the_temporary_folder(workload: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    store = tmp_path / "s.db"
    done = run_cli(["run", "--workload", str(workload), "--adapters", "sb3", "--seeds", "1", "--store", str(store)],
                   env={"TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr
    # torch keeps one compile cache per user there (torchinductor_<user>); no run leaves anything of its own
    assert [p.name for p in scratch.iterdir() if not p.name.startswith("torchinductor_")] == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("s.db")) == ["s.db", "s.db-shm", "s.db-wal"] \
        or sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("s.db")) == ["s.db"]
    assert not runs_root(store).exists()
    assert not (tmp_path / "s.db.measurements.json").exists()


def test_resumed_runs_of_a_changed_workload_are_never_pooled_with_stale_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", _with_path(GOOD_PLUGINS))
    monkeypatch.syspath_prepend(str(GOOD_PLUGINS))
    path = tmp_path / "tiny.toml"
    store = tmp_path / "s.db"
    path.write_text(TINY_WORKLOAD.replace("seeds = 2", "seeds = 3"), encoding="utf-8")
    assert main(["run", "--workload", str(path), "--adapters", "fake", "--store", str(store)]) == 0
    changed = TINY_WORKLOAD.replace("epochs = 2", "epochs = 3")  # another digest, 2 seeds
    path.write_text(changed, encoding="utf-8")
    assert main(["run", "--workload", str(path), "--adapters", "fake", "--store", str(store), "--resume"]) == 0
    capsys.readouterr()
    assert main(["score", "--store", str(store), "--reps", "100", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    stale = [run for run in data["excluded_runs"] if run["status"] == "stale"]
    assert [run["run_id"] for run in stale] == ["tiny__fake__s2"]
    assert "changed since this run" in stale[0]["reason"]
    cell = next(c for c in data["cells"] if c["criterion"] == "final_return" and c["adapter"] == "fake")
    assert cell["n"] == 2
