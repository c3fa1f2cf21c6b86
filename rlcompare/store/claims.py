"""Claims: which driver is running which run of a store, so drivers that meet share the work.

Before a driver starts a run it claims the run in the store (a row of ``claims``, written in the
same kind of short write transaction as a result); committing the run's result releases the claim.
A second driver on the same store leaves a claimed run alone while the claiming driver lives, and
takes the claim over only when that driver is provably dead: same machine (same boot), and no
process with its pid and start time. A claim from another machine (a store on a shared disk) is
never taken over automatically: the line that reports it names the machine and the pid.

Each attempt of a run is identified by its run directory (``<store>.runs/<run id>.<token>``): it
names the store and differs for every attempt, and every process of the attempt carries it
(:data:`rlcompare.execution.backend.ATTEMPT_ENV`), so cleanup never touches another attempt's
processes, whichever driver or store started them.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from dataclasses import asdict, dataclass
from enum import Enum

from rlcompare.harness.run_directory import process_start

CLAIMS_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS claims (
    run_id TEXT PRIMARY KEY,
    workload_digest TEXT NOT NULL,
    attempt TEXT NOT NULL,
    owner_json TEXT NOT NULL,
    claimed_at REAL NOT NULL
)"""


def boot_id() -> str:
    """This boot of this machine (Linux's random boot id; the hostname elsewhere)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return socket.gethostname()


@dataclass(frozen=True)
class ClaimOwner:
    """A driver process, identified well enough to tell later whether it still runs."""

    host: str
    boot: str
    pid: int
    start: float | None

    @classmethod
    def this_process(cls) -> ClaimOwner:
        return cls(socket.gethostname(), boot_id(), os.getpid(), process_start(os.getpid()))

    def provably_dead(self) -> bool:
        """True only when this machine can tell: same boot, and the pid is gone or is another
        process now. A machine that rebooted since the claim has no live process of it either."""
        if self.host != socket.gethostname():
            return False
        if self.boot != boot_id():
            return True
        if self.start is None:  # no /proc: the pid alone
            return not _pid_exists(self.pid)
        return process_start(self.pid) != self.start

    def describe(self) -> str:
        return f"driver pid {self.pid} on {self.host}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ClaimOwner | None:
        try:
            data = json.loads(text)
            return cls(str(data["host"]), str(data["boot"]), int(data["pid"]),
                       None if data.get("start") is None else float(data["start"]))
        except (ValueError, TypeError, KeyError):
            return None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ClaimOutcome(Enum):
    CLAIMED = "claimed"
    #: Stored ok with the same workload already (``--resume``), or by another driver since this
    #: one started: nothing to do.
    DONE = "done"
    #: Claimed by another live driver: it runs it.
    TAKEN = "taken"


@dataclass(frozen=True)
class Claim:
    outcome: ClaimOutcome
    #: The other driver, when ``TAKEN``.
    holder: ClaimOwner | None = None


def claim_run(connection: sqlite3.Connection, run_id: str, digest: str, attempt: str, owner: ClaimOwner,
              done_since: float | None, claimed_at: float) -> Claim:
    """Claim ``run_id`` for ``attempt`` of ``owner`` in one write transaction.

    ``done_since``: a stored ok run with the same workload digest that finished at or after this
    time (``float('-inf')`` for any, as ``--resume`` asks; None: never) makes the claim unnecessary.
    """
    connection.execute("BEGIN IMMEDIATE")
    try:
        if done_since is not None:
            row = connection.execute(
                "SELECT finished_at FROM runs WHERE run_id = ? AND status = 'ok' AND workload_digest = ?",
                (run_id, digest)).fetchone()
            if row is not None and (row[0] is None or row[0] >= done_since):
                connection.execute("COMMIT")
                return Claim(ClaimOutcome.DONE)
        row = connection.execute("SELECT owner_json FROM claims WHERE run_id = ?", (run_id,)).fetchone()
        if row is not None:
            holder = ClaimOwner.from_json(row[0])
            if holder is not None and holder != owner and not holder.provably_dead():
                connection.execute("COMMIT")
                return Claim(ClaimOutcome.TAKEN, holder)
        connection.execute(
            "INSERT OR REPLACE INTO claims (run_id, workload_digest, attempt, owner_json, claimed_at) "
            "VALUES (?, ?, ?, ?, ?)", (run_id, digest, attempt, owner.to_json(), claimed_at))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return Claim(ClaimOutcome.CLAIMED)


def release(connection: sqlite3.Connection, run_id: str, attempt: str) -> None:
    """Drop the claim of ``attempt`` on ``run_id`` (inside the caller's transaction); a claim
    another driver took over since is left alone."""
    connection.execute("DELETE FROM claims WHERE run_id = ? AND attempt = ?", (run_id, attempt))


def release_owned(connection: sqlite3.Connection, owner: ClaimOwner) -> None:
    """Drop every claim ``owner`` still holds (inside the caller's transaction)."""
    connection.execute("DELETE FROM claims WHERE owner_json = ?", (owner.to_json(),))
