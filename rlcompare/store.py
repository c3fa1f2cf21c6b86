"""The results store: one SQLite file, a versioned schema, one transaction per finished run.

``runs`` has one row per run id (``workload__adapter__sN``) with a ``status`` column; evaluation
curves live in ``curves``. :meth:`Store.runs_frame` and :meth:`Store.curves_frame` are the analysis
interface (pandas DataFrames).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlcompare.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1

#: Statuses a run can be stored with.
STATUSES = ("ok", "failed", "timeout", "unsupported")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    workload_id TEXT NOT NULL,
    workload_digest TEXT NOT NULL,
    adapter TEXT NOT NULL,
    framework TEXT NOT NULL,
    algorithm TEXT NOT NULL,
    env_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unsupported')),
    error TEXT,
    started_at REAL,
    finished_at REAL,
    wall_seconds REAL,
    startup_seconds REAL,
    training_seconds REAL,
    evaluation_seconds REAL,
    env_steps INTEGER,
    framework_env_steps INTEGER,
    step_count_gap INTEGER,
    step_count_tolerance INTEGER,
    episodes INTEGER,
    throughput REAL,
    ideal_throughput REAL,
    cpu_seconds REAL,
    peak_rss_bytes INTEGER,
    final_return_mean REAL,
    final_return_std REAL,
    success_threshold REAL,
    budget_env_steps INTEGER,
    torch_threads INTEGER,
    host_fingerprint TEXT,
    workload_json TEXT NOT NULL,
    versions_json TEXT,
    host_json TEXT,
    fidelity_json TEXT,
    native_config_json TEXT,
    traceback TEXT
);
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

RUN_COLUMNS = (
    "run_id", "workload_id", "workload_digest", "adapter", "framework", "algorithm", "env_id", "seed",
    "status", "error", "started_at", "finished_at", "wall_seconds", "startup_seconds", "training_seconds",
    "evaluation_seconds", "env_steps", "framework_env_steps", "step_count_gap", "step_count_tolerance", "episodes",
    "throughput", "ideal_throughput", "cpu_seconds",
    "peak_rss_bytes", "final_return_mean", "final_return_std", "success_threshold", "budget_env_steps",
    "torch_threads", "host_fingerprint", "workload_json", "versions_json", "host_json", "fidelity_json",
    "native_config_json", "traceback",
)
CURVE_COLUMNS = (
    "run_id", "env_steps", "framework_env_steps", "train_seconds", "return_mean", "return_std",
    "episode_length_mean", "returns_json",
)


class Store:
    """A results store in one SQLite file; created on first write, never by a read."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None

    # -- connection --------------------------------------------------------------------------------

    def _connect(self, create: bool) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        if not create and not self.path.exists():
            raise StoreError(f"no results store at {self.path} (run `rlcompare run` first or pass --store)")
        try:
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
            elif version != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: schema version {version}, this rlcompare reads {SCHEMA_VERSION}"
                )
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable results store ({exc})") from None
        self._connection = connection
        return connection

    @staticmethod
    def _schema_version(connection: sqlite3.Connection) -> int | None:
        has_meta = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not has_meta:
            return None
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

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

    def save_run(self, run: dict[str, Any], curve: Iterable[dict[str, Any]] = ()) -> None:
        """Store one finished run and its curve in a single transaction (replacing an older try)."""
        row = {column: run.get(column) for column in RUN_COLUMNS}
        if row["status"] not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {row['status']!r}")
        for column in ("workload_json", "versions_json", "host_json", "fidelity_json", "native_config_json"):
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
