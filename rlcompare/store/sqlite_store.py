"""The results store: one SQLite file, a versioned schema, one transaction per finished run.

``runs`` has one row per run id (``workload__adapter__sN``) with a ``status`` column: the run's
current attempt, the one scoring reads; evaluation curves live in ``curves``. Every earlier attempt
of a run is kept in ``attempts`` (its row and curve as JSON), and an attempt that did not finish
(failed, timeout, interrupted) never displaces one that did (ok or invalid): it goes to
``attempts`` instead. ``claims`` says which driver runs which run (:mod:`rlcompare.store.claims`).
:meth:`Store.runs_frame` and :meth:`Store.curves_frame` are the analysis interface (pandas
DataFrames).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.errors import StoreError
from rlcompare.harness.protocol import CurvePoint
from rlcompare.harness.validity import BudgetTolerance, judge_run
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store import claims, records
from rlcompare.store.records import RunRecord

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 9

#: Run statuses (see :mod:`rlcompare.store.records`).
STATUSES = records.STATUSES
RUN_COLUMNS = records.run_columns()
CURVE_COLUMNS = (
    "run_id", "env_steps", "framework_env_steps", "train_seconds", "return_mean", "return_std",
    "episode_length_mean", "returns_json", "grid_steps", "updates",
)
#: Columns version 6 added: to ``curves`` (each point's grid point and updates before it) and to
#: ``runs`` (the machine's load while the run ran).
_CURVE_COLUMNS_6 = {"grid_steps": "INTEGER", "updates": "INTEGER"}
_RUN_COLUMNS_6 = ("load_start", "load_end", "load_cpus", "cpu_steal", "runs_in_flight")

#: Statuses of an attempt that ran to its end and was judged: a later attempt that did not finish
#: never displaces one of these as the run's current attempt.
FINISHED_STATUSES = ("ok", "invalid")
_ATTEMPTS_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS attempts (
    run_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    status TEXT NOT NULL,
    finished_at REAL,
    record_json TEXT NOT NULL,
    curve_json TEXT NOT NULL,
    PRIMARY KEY (run_id, number)
)"""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
{records.runs_table_sql()};
CREATE INDEX IF NOT EXISTS runs_by_workload ON runs (workload_id, adapter);
CREATE TABLE IF NOT EXISTS curves (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    env_steps INTEGER NOT NULL,
    framework_env_steps INTEGER,
    train_seconds REAL NOT NULL,
    return_mean REAL NOT NULL,
    return_std REAL NOT NULL,
    episode_length_mean REAL,
    returns_json TEXT NOT NULL,
    grid_steps INTEGER,
    updates INTEGER,
    PRIMARY KEY (run_id, env_steps)
);
{_ATTEMPTS_TABLE_SQL};
{claims.CLAIMS_TABLE_SQL};
"""


def _migrate_1_to_2(connection: sqlite3.Connection) -> None:
    """Version 2 adds validity verdicts, budget tolerances and plugin origins, and the statuses
    ``invalid`` and ``interrupted``: rebuild ``runs`` (SQLite cannot alter a CHECK) and judge
    every finished run of version 1 by today's rules, with the default tolerance of its workload."""
    old = [row[1] for row in connection.execute("PRAGMA table_info(runs)")]
    common = [column for column in RUN_COLUMNS if column in old]
    connection.execute("ALTER TABLE runs RENAME TO runs_v1")
    connection.execute("DROP INDEX IF EXISTS runs_by_workload")
    connection.execute(records.runs_table_sql())
    connection.execute("CREATE INDEX IF NOT EXISTS runs_by_workload ON runs (workload_id, adapter)")
    connection.execute(f"INSERT INTO runs ({', '.join(common)}) SELECT {', '.join(common)} FROM runs_v1")
    connection.execute("DROP TABLE runs_v1")
    finished = connection.execute(
        "SELECT run_id, workload_json, env_steps, framework_env_steps, budget_env_steps, final_return_mean "
        "FROM runs WHERE status = 'ok'").fetchall()
    for run_id, workload_text, steps, framework_steps, budget, final in finished:
        try:
            workload = workload_from_dict(json.loads(workload_text), f"stored run {run_id}")
        except Exception:  # noqa: BLE001 - a workload this version no longer reads: judged without it
            workload = None
        tolerance = BudgetTolerance.for_workload(workload) if workload else BudgetTolerance("step", 0, 0)
        returns = [row[0] for row in connection.execute("SELECT return_mean FROM curves WHERE run_id = ?", (run_id,))]
        verdict = judge_run(env_steps=steps, framework_env_steps=framework_steps, budget=int(budget or 0),
                            tolerance=tolerance, evaluation_returns=returns, final_return=final)
        connection.execute(
            "UPDATE runs SET validity_json = ?, budget_granularity = ?, budget_overshoot_steps = ?, "
            "evaluations = ?, status = ?, error = ? WHERE run_id = ?",
            (json.dumps(verdict.to_dict()), tolerance.granularity, tolerance.overshoot_steps, len(returns),
             "ok" if verdict.valid else "invalid", None if verdict.valid else "; ".join(verdict.reasons), run_id))


def _migrate_2_to_3(connection: sqlite3.Connection) -> None:
    """Version 3 records the CPUs a run needed and the CPUs its backend gave it."""
    present = {row[1] for row in connection.execute("PRAGMA table_info(runs)")}
    for column in ("cpus_needed", "cpus_given"):
        if column not in present:
            connection.execute(f"ALTER TABLE runs ADD COLUMN {column} INTEGER")


def _migrate_3_to_4(connection: sqlite3.Connection) -> None:
    """Version 4 records the adapter environment each run's worker ran in (NULL: the main one)."""
    present = {row[1] for row in connection.execute("PRAGMA table_info(runs)")}
    for column in ("environment_key", "environment_json"):
        if column not in present:
            connection.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")


def _migrate_4_to_5(connection: sqlite3.Connection) -> None:
    """Version 5 records the schedule a run followed and its adapter's parity verdicts."""
    present = {row[1] for row in connection.execute("PRAGMA table_info(runs)")}
    for column in ("schedule_json", "parity_json"):
        if column not in present:
            connection.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")


def _migrate_5_to_6(connection: sqlite3.Connection) -> None:
    """Version 6 records each evaluation point's grid point and the updates made before it, and the
    machine's load while each run ran. Older points and runs have them NULL: their evaluations were
    placed by the rule of their time (the first checkpoint at or after each interval)."""
    present = {row[1] for row in connection.execute("PRAGMA table_info(curves)")}
    for column, sql_type in _CURVE_COLUMNS_6.items():
        if column not in present:
            connection.execute(f"ALTER TABLE curves ADD COLUMN {column} {sql_type}")
    present = {row[1] for row in connection.execute("PRAGMA table_info(runs)")}
    types = records.column_types()
    for column in _RUN_COLUMNS_6:
        if column not in present:
            connection.execute(f"ALTER TABLE runs ADD COLUMN {column} {types[column][0]}")


def _migrate_6_to_7(connection: sqlite3.Connection) -> None:
    """Version 7 keeps every attempt of a run (``attempts``), records which driver runs which run
    (``claims``), and a run's note (``runs.note``: e.g. re-run after a lost node). Older stores
    kept one attempt per run: theirs is the current one."""
    connection.execute(_ATTEMPTS_TABLE_SQL)
    connection.execute(claims.CLAIMS_TABLE_SQL)
    if "note" not in {row[1] for row in connection.execute("PRAGMA table_info(runs)")}:
        connection.execute("ALTER TABLE runs ADD COLUMN note TEXT")


def _migrate_7_to_8(connection: sqlite3.Connection) -> None:
    """Version 8 records what each run's worker measured of its framework where it imported it (the
    cold import, the public API: ``runs.development_json``). Older runs have it NULL: the development
    criteria measure those frameworks in fresh interpreters, as before."""
    if "development_json" not in {row[1] for row in connection.execute("PRAGMA table_info(runs)")}:
        connection.execute("ALTER TABLE runs ADD COLUMN development_json TEXT")


def _migrate_8_to_9(connection: sqlite3.Connection) -> None:
    """Version 9 records how many seeds trained in one program with each run (``runs.seeds_in_program``,
    ``parallelism.seeds_per_program``). Older runs have it NULL: each trained alone."""
    if "seeds_in_program" not in {row[1] for row in connection.execute("PRAGMA table_info(runs)")}:
        connection.execute("ALTER TABLE runs ADD COLUMN seeds_in_program INTEGER")


_MIGRATIONS = {1: _migrate_1_to_2, 2: _migrate_2_to_3, 3: _migrate_3_to_4, 4: _migrate_4_to_5, 5: _migrate_5_to_6,
               6: _migrate_6_to_7, 7: _migrate_7_to_8, 8: _migrate_8_to_9}


#: ``PRAGMA application_id`` of an rlcompare store ("RLCP"): a file without it (and without the
#: version-1 layout) belongs to someone else and is never written to.
APPLICATION_ID = 0x524C4350
SQLITE_HEADER = b"SQLite format 3\x00"
#: How long a writer waits for another driver's transaction before giving up on a store.
BUSY_TIMEOUT_SECONDS = 60.0


class StoreWriteError(StoreError):
    """A finished run could not be committed (disk full, store locked, I/O error): its result stays
    in its run directory and ``--resume`` stores it later."""

    exit_status = 1


class Store:
    """A results store in one SQLite file.

    Writers open it only after :meth:`check_writable` said it is an rlcompare store (or a new file)
    that can be written; readers open the file read-only and never change it. Every user-visible
    failure is a :class:`StoreError` naming the path.
    """

    def __init__(self, path: str | Path) -> None:
        self.given = str(path)  # as the user wrote it: pathlib turns '' into '.'
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._writable = False

    # -- checking ----------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Everything a run needs of its store, checked before anything runs: a regular file (or a
        new one in an existing, writable folder) that is an rlcompare store of a version this code
        reads, can be written, and is not damaged. Creates the schema when the file is new."""
        text = self.given
        if not text or text.strip() != text:
            raise StoreError(f"--store: {text!r} is not a file path")
        if text == ":memory:" or text.startswith("file:"):
            raise StoreError(f"--store: {text!r}: give a file path; an in-memory store keeps nothing")
        parent = self.path.parent
        if not parent.is_dir():
            raise StoreError(f"--store: {self.path}: folder {parent} does not exist")
        if self.path.exists() or self.path.is_symlink():
            if not self.path.is_file():
                raise StoreError(f"--store: {self.path} is not a regular file")
            if not os.access(self.path, os.R_OK | os.W_OK):
                raise StoreError(f"--store: {self.path} is not writable")
            self._check_owned()
        if not os.access(parent, os.W_OK | os.X_OK):
            raise StoreError(f"--store: folder {parent} is not writable (SQLite needs a journal beside the store)")
        connection = self._connect(create=True)
        try:
            problem = connection.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"--store: {self.path} is damaged ({exc})") from None
        if problem != "ok":
            raise StoreError(f"--store: {self.path} is damaged ({problem})")

    def _check_owned(self) -> None:
        """Refuse a file that is not an rlcompare store, reading nothing but its header and schema."""
        with self.path.open("rb") as handle:
            header = handle.read(100)
        if not header:
            return  # an empty file: SQLite treats it as a new database
        if not header.startswith(SQLITE_HEADER):
            raise StoreError(f"--store: {self.path} is not a results store (not an SQLite file)")
        application_id = int.from_bytes(header[68:72], "big", signed=True)
        if application_id == APPLICATION_ID:
            return
        try:
            connection = sqlite3.connect(f"{self._uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS)
            try:
                tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                version = self._schema_version(connection) if "meta" in tables else None
            finally:
                connection.close()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"--store: {self.path} is not a usable results store ({exc})") from None
        if not tables:
            return  # an SQLite file with nothing in it
        if application_id != 0 or version is None or not {"runs", "curves"} <= tables:
            listed = ", ".join(sorted(tables)[:5])
            raise StoreError(f"--store: {self.path} is another application's database (tables {listed}); "
                             "rlcompare writes only to its own stores")

    def _uri(self) -> str:
        return f"file:{urllib.parse.quote(str(self.path.resolve()))}"

    # -- connection --------------------------------------------------------------------------------

    def _connect(self, create: bool) -> sqlite3.Connection:
        """A connection for reading (the file opened read-only, never changed) or for writing (the
        schema created or migrated first)."""
        if self._connection is not None and (self._writable or not create):
            return self._connection
        self.close()
        try:
            missing = not create and not self.path.is_file()
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot reach the store ({exc.strerror})") from None
        if missing:
            raise StoreError(f"no results store at {self.path} (run `rlcompare run` first or pass --store)")
        try:
            connection = self._open_writer() if create else self._open_reader()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable results store ({exc})") from None
        self._connection, self._writable = connection, create
        return connection

    def _open_writer(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        try:
            # two drivers may create the same new store at once: the first takes the write lock,
            # the second waits for it and then finds the schema there
            connection.execute("BEGIN IMMEDIATE")
            try:
                version = self._schema_version(connection)
                if version is None:
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            connection.execute(statement)
                    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                                       (str(SCHEMA_VERSION),))
                    connection.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('created_at', ?)",
                                       (str(time.time()),))
                else:
                    self._check_version(version)
                    if version < SCHEMA_VERSION:
                        for step in range(version, SCHEMA_VERSION):
                            _MIGRATIONS[step](connection)
                        connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                                           (str(SCHEMA_VERSION),))
                    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            connection.close()
            raise
        connection.isolation_level = ""  # back to transactions per `with connection`
        return connection

    def _open_reader(self) -> sqlite3.Connection:
        self._check_owned()
        try:
            connection = sqlite3.connect(f"{self._uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS)
            version = self._schema_version(connection)
        except sqlite3.OperationalError:
            # a write-ahead-log store in a folder we cannot write: read it as an immutable file
            connection = sqlite3.connect(f"{self._uri()}?mode=ro&immutable=1", uri=True)
            version = self._schema_version(connection)
        if version is None:
            connection.close()
            raise StoreError(f"{self.path}: not a results store (no rlcompare schema)")
        self._check_version(version)
        if version < SCHEMA_VERSION:  # read an upgraded copy in memory; the file stays as it is
            upgraded = sqlite3.connect(":memory:")
            connection.backup(upgraded)
            connection.close()
            connection = upgraded
            with connection:
                for step in range(version, SCHEMA_VERSION):
                    _MIGRATIONS[step](connection)
        connection.execute("PRAGMA foreign_keys = ON")
        return connection

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {version}, this rlcompare reads up to {SCHEMA_VERSION} "
                             "(written by a newer rlcompare)")
        if version < 1:
            raise StoreError(f"{self.path}: invalid schema version {version}")

    @staticmethod
    def _schema_version(connection: sqlite3.Connection) -> int | None:
        has_meta = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not has_meta:
            return None
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            return None
        try:
            return int(row[0])
        except (TypeError, ValueError):
            return -1

    def check_readable(self) -> None:
        """A store that exists and can be read, else one line naming the path (before any work)."""
        try:
            exists = self.path.is_file()
        except OSError as exc:
            raise StoreError(f"--store: cannot reach {self.path} ({exc.strerror})") from None
        if not exists:
            if self.path.exists():
                raise StoreError(f"--store: {self.path} is not a regular file")
            raise StoreError(f"--store: no results store at {self.path} (run `rlcompare run` first)")
        if not os.access(self.path, os.R_OK):
            raise StoreError(f"--store: {self.path} is not readable")
        self._connect(create=False)

    def create(self) -> None:
        """Create the file and its schema now (or check an existing one), before any run."""
        self.check_writable()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
            self._writable = False

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------------

    def save_run(self, record: RunRecord, curve: Iterable[CurvePoint] = (), attempt: str | None = None) -> bool:
        """Store one finished attempt of a run and its curve in a single transaction, releasing
        ``attempt``'s claim on the run.

        The attempt becomes the run's current one (the one scoring reads; the previous current
        attempt is kept in ``attempts``) unless it did not finish (failed, timeout, interrupted)
        while the current one did (ok or invalid): then the current one stays and this attempt is
        kept in ``attempts``. Returns whether it became the current attempt.

        Raises :class:`StoreWriteError` when the transaction cannot be committed."""
        row = record.row()
        for column in records.json_columns():
            if row[column] is not None and not isinstance(row[column], str):
                row[column] = json.dumps(row[column], sort_keys=True, default=str)
        points = [{**point.to_dict(), "run_id": row["run_id"], "returns_json": json.dumps(list(point.returns))}
                  for point in curve]
        run_id = row["run_id"]
        try:
            connection = self._connect(create=True)
            with connection:
                stored = connection.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
                current = not (stored is not None and stored[0] in FINISHED_STATUSES
                               and record.status not in FINISHED_STATUSES)
                if not current:
                    self._keep_attempt(connection, run_id, row, points)
                else:
                    if stored is not None:
                        self._keep_current_attempt(connection, run_id)
                    connection.execute("DELETE FROM curves WHERE run_id = ?", (run_id,))
                    connection.execute(
                        f"INSERT OR REPLACE INTO runs ({', '.join(RUN_COLUMNS)}) "
                        f"VALUES ({', '.join('?' * len(RUN_COLUMNS))})",
                        [row[column] for column in RUN_COLUMNS],
                    )
                    connection.executemany(
                        f"INSERT OR REPLACE INTO curves ({', '.join(CURVE_COLUMNS)}) "
                        f"VALUES ({', '.join('?' * len(CURVE_COLUMNS))})",
                        [[point[column] for column in CURVE_COLUMNS] for point in points],
                    )
                if attempt is not None:
                    claims.release(connection, run_id, attempt)
        except sqlite3.DatabaseError as exc:
            raise StoreWriteError(f"{self.path}: could not store run {run_id} ({exc})") from None
        return current

    @staticmethod
    def _keep_attempt(connection: sqlite3.Connection, run_id: str, row: dict[str, Any],
                      points: list[dict[str, Any]]) -> None:
        number = connection.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM attempts WHERE run_id = ?",
                                    (run_id,)).fetchone()[0]
        curve = [{column: point[column] for column in CURVE_COLUMNS if column != "run_id"} for point in points]
        connection.execute(
            "INSERT INTO attempts (run_id, number, status, finished_at, record_json, curve_json) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, number, row["status"], row["finished_at"], json.dumps(row, default=str), json.dumps(curve)))

    def _keep_current_attempt(self, connection: sqlite3.Connection, run_id: str) -> None:
        """Copy the run's current attempt (row and curve) into ``attempts`` before it is replaced."""
        cursor = connection.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        names = [column[0] for column in cursor.description]
        stored = dict(zip(names, cursor.fetchone(), strict=True))
        cursor = connection.execute("SELECT * FROM curves WHERE run_id = ? ORDER BY env_steps", (run_id,))
        names = [column[0] for column in cursor.description]
        points = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
        self._keep_attempt(connection, run_id, stored, points)

    def claim_run(self, run_id: str, digest: str, attempt: str, owner: claims.ClaimOwner,
                  done_since: float | None) -> claims.Claim:
        """Claim a run before starting it (:func:`rlcompare.store.claims.claim_run`).

        Raises :class:`StoreWriteError` when the store cannot be written."""
        try:
            connection = self._connect(create=True)
            return claims.claim_run(connection, run_id, digest, attempt, owner, done_since, time.time())
        except sqlite3.DatabaseError as exc:
            raise StoreWriteError(f"{self.path}: could not claim run {run_id} ({exc})") from None

    def release_claims(self, owner: claims.ClaimOwner) -> None:
        """Drop every claim ``owner`` still holds (a driver ending); best effort."""
        if self._connection is None or not self._writable:
            return
        try:
            with self._connection:
                claims.release_owned(self._connection, owner)
        except sqlite3.DatabaseError:
            pass  # a claim left behind is taken over once its driver is gone

    def attempts(self, run_id: str) -> list[dict[str, Any]]:
        """The run's earlier (or displaced) attempts, oldest first: number, status, finished_at,
        and the stored row and curve."""
        rows = self._read_params(
            "SELECT number, status, finished_at, record_json, curve_json FROM attempts WHERE run_id = ? ORDER BY number",
            (run_id,))
        return [{"number": number, "status": status, "finished_at": finished_at, "record": json.loads(record),
                 "curve": json.loads(curve)} for number, status, finished_at, record, curve in rows]

    # -- reading -----------------------------------------------------------------------------------

    def finished_digests(self) -> dict[str, str]:
        """``run_id -> workload digest`` of every run stored with status ok (for ``--resume``)."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return {}
        rows = self._read("SELECT run_id, workload_digest FROM runs WHERE status = 'ok'")
        return dict(rows)

    def _read(self, query: str) -> list[tuple[Any, ...]]:
        return self._read_params(query, ())

    def _read_params(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._connect(create=False).execute(query, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot read the store ({exc})") from None

    def runs_frame(self) -> pd.DataFrame:
        """Every stored run, one row each, JSON columns left as text."""
        return self._frame("SELECT * FROM runs ORDER BY workload_id, adapter, seed")

    def curves_frame(self) -> pd.DataFrame:
        """Every evaluation point of every run, joined with its run's workload, adapter and seed."""
        return self._frame(
            "SELECT c.*, r.workload_id, r.adapter, r.framework, r.seed FROM curves c "
            "JOIN runs r USING (run_id) ORDER BY r.workload_id, r.adapter, r.seed, c.env_steps"
        )

    def _frame(self, query: str) -> pd.DataFrame:
        import pandas as pd

        connection = self._connect(create=False)
        try:
            return pd.read_sql_query(query, connection)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            raise StoreError(f"{self.path}: cannot read the store ({exc})") from None
