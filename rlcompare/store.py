"""The results store: one SQLite file, a versioned schema, one transaction per finished run.

``runs`` has one row per run id (``workload__adapter__sN``) with a ``status`` column; evaluation
curves live in ``curves``. :meth:`Store.runs_frame` and :meth:`Store.curves_frame` are the analysis
interface (pandas DataFrames).
"""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare import records
from rlcompare.errors import StoreError
from rlcompare.records import RunRecord

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 2

#: Run statuses (see :mod:`rlcompare.records`).
STATUSES = records.STATUSES
RUN_COLUMNS = records.run_columns()
CURVE_COLUMNS = (
    "run_id", "env_steps", "framework_env_steps", "train_seconds", "return_mean", "return_std",
    "episode_length_mean", "returns_json",
)

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
    PRIMARY KEY (run_id, env_steps)
);
"""


def _migrate_1_to_2(connection: sqlite3.Connection) -> None:
    """Version 2 adds validity verdicts, budget tolerances and plugin origins, and the statuses
    ``invalid`` and ``interrupted``: rebuild ``runs`` (SQLite cannot alter a CHECK) and judge
    every finished run of version 1 by today's rules, with the default tolerance of its workload."""
    from rlcompare.validity import BudgetTolerance, judge_run
    from rlcompare.workload import workload_from_dict

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


_MIGRATIONS = {1: _migrate_1_to_2}


class Store:
    """A results store in one SQLite file; created on first write, never by a read."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._writable = False

    # -- connection --------------------------------------------------------------------------------

    def _connect(self, create: bool) -> sqlite3.Connection:
        """A connection for reading (the file opened read-only, never changed) or for writing (the
        schema created or migrated first)."""
        if self._connection is not None and (self._writable or not create):
            return self._connection
        self.close()
        if not create and not self.path.exists():
            raise StoreError(f"no results store at {self.path} (run `rlcompare run` first or pass --store)")
        try:
            connection = self._open_writer() if create else self._open_reader()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable results store ({exc})") from None
        self._connection, self._writable = connection, create
        return connection

    def _open_writer(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30)
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        version = self._schema_version(connection)
        if version is None:
            with connection:
                connection.executescript(_SCHEMA)
                connection.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
                connection.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('created_at', ?)", (str(time.time()),)
                )
        else:
            self._check_version(version)
            self._migrate(connection, version)
        return connection

    def _open_reader(self) -> sqlite3.Connection:
        uri = f"file:{urllib.parse.quote(str(self.path.resolve()))}?mode=ro"
        connection = sqlite3.connect(uri, uri=True, timeout=30)
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
            self._migrate(connection, version)
        connection.execute("PRAGMA foreign_keys = ON")
        return connection

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {version}, this rlcompare reads up to {SCHEMA_VERSION}")

    @staticmethod
    def _migrate(connection: sqlite3.Connection, version: int) -> None:
        if version >= SCHEMA_VERSION:
            return
        with connection:
            for step in range(version, SCHEMA_VERSION):
                _MIGRATIONS[step](connection)
            connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))

    @staticmethod
    def _schema_version(connection: sqlite3.Connection) -> int | None:
        has_meta = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not has_meta:
            return None
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else None

    def create(self) -> None:
        """Create the file and its schema now (or check an existing one), before any run."""
        self._connect(create=True)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
            self._writable = False

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        connection = self._connect(create=True)
        with connection:
            yield connection

    # -- writing -----------------------------------------------------------------------------------

    def save_run(self, record: RunRecord, curve: Iterable[dict[str, Any]] = ()) -> None:
        """Store one finished run and its curve in a single transaction (replacing an older try)."""
        row = record.row()
        for column in records.json_columns():
            if row[column] is not None and not isinstance(row[column], str):
                row[column] = json.dumps(row[column], sort_keys=True, default=str)
        points = [
            {**{column: point.get(column) for column in CURVE_COLUMNS},
             "run_id": row["run_id"], "returns_json": json.dumps(point.get("returns", []))}
            for point in curve
        ]
        with self._transaction() as connection:
            connection.execute("DELETE FROM curves WHERE run_id = ?", (row["run_id"],))
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

    # -- reading -----------------------------------------------------------------------------------

    def finished_digests(self) -> dict[str, str]:
        """``run_id -> workload digest`` of every run stored with status ok (for ``--resume``)."""
        if not self.path.exists():
            return {}
        rows = self._connect(create=False).execute(
            "SELECT run_id, workload_digest FROM runs WHERE status = 'ok'"
        ).fetchall()
        return dict(rows)

    def runs_frame(self) -> pd.DataFrame:
        """Every stored run, one row each, JSON columns left as text."""
        import pandas as pd

        connection = self._connect(create=False)
        return pd.read_sql_query("SELECT * FROM runs ORDER BY workload_id, adapter, seed", connection)

    def curves_frame(self) -> pd.DataFrame:
        """Every evaluation point of every run, joined with its run's workload, adapter and seed."""
        import pandas as pd

        connection = self._connect(create=False)
        return pd.read_sql_query(
            "SELECT c.*, r.workload_id, r.adapter, r.framework, r.seed FROM curves c "
            "JOIN runs r USING (run_id) ORDER BY r.workload_id, r.adapter, r.seed, c.env_steps",
            connection,
        )
