"""A run's directory: where one run's files live while it runs, until the store has committed them.

Run directories sit beside the store (``<store>.runs/<run id>.<token>/``), never in a temporary
folder, so a result survives the driver: a run that finished while its driver was gone (killed,
out of disk, store locked) is found and stored by the next ``rlcompare run`` on that store.
This module is the one place that knows the layout; it needs only the standard library, because
the worker (which may run in another Python environment) writes into it too.

::

    spec.json       what to run (written by the driver before the worker starts)
    driver.json     which driver owns the run (pid and start time), so others leave it alone
    steps.bin       the harness's step counter (memory-mapped, one row per env slot)
    progress.jsonl  evaluation points, appended and synced as they are measured
    result.json     the worker's outcome, written atomically when it ends
    output.log      the worker's stdout and stderr
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlcompare.harness.protocol import CurvePoint, ProtocolError, RunResult, RunSpec

SPEC = "spec.json"
DRIVER = "driver.json"
STEPS = "steps.bin"
PROGRESS = "progress.jsonl"
RESULT = "result.json"
LOG = "output.log"
RUNS_SUFFIX = ".runs"


def runs_root(store_path: str | Path) -> Path:
    """The folder of a store's run directories."""
    store_path = Path(store_path)
    return store_path.with_name(store_path.name + RUNS_SUFFIX)


def write_json_atomically(path: Path, data: Any, sync: bool = True) -> None:
    """Write ``data`` so that a reader sees the old file or the whole new one; with ``sync``, on
    disk before this returns (a result), else in the page cache (survives the process, like the
    store's own commits; enough for what only says how to find a run)."""
    partial = path.with_name(path.name + ".tmp")
    text = json.dumps(data, default=str)  # json.dumps runs in C; json.dump to a file does not
    with partial.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        if sync:
            os.fsync(handle.fileno())
    os.replace(partial, path)


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_start(pid: int) -> float | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), or None if it is gone."""
    fields = _stat_fields(pid)
    try:
        return None if fields is None else float(fields[19])
    except (IndexError, ValueError):
        return None


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie, not yet reaped, has ended)."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def process_is(pid: int, start: float | None) -> bool:
    """Whether process ``pid`` runs and is the one that started at ``start`` (:func:`process_start`), not a
    later process given the same pid."""
    fields = _stat_fields(pid)
    try:
        return bool(fields) and fields[0] not in ("Z", "X") and float(fields[19]) == start
    except (IndexError, ValueError):
        return False


@dataclass(frozen=True)
class RunDirectory:
    path: Path

    @classmethod
    def create(cls, store_path: str | Path, run_id: str) -> RunDirectory:
        """A new, empty directory for ``run_id`` owned by this process."""
        root = runs_root(store_path)
        path = root / f"{run_id}.{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except FileNotFoundError:  # the first run of this store (or of this matrix)
            root.mkdir(exist_ok=True)
            path.mkdir()
        directory = cls(path)
        write_json_atomically(directory.driver, {"pid": os.getpid(), "start": process_start(os.getpid()),
                                                 "claimed_at": time.time()}, sync=False)
        return directory

    @property
    def spec(self) -> Path:
        return self.path / SPEC

    @property
    def driver(self) -> Path:
        return self.path / DRIVER

    @property
    def steps(self) -> Path:
        return self.path / STEPS

    @property
    def progress(self) -> Path:
        return self.path / PROGRESS

    @property
    def result(self) -> Path:
        return self.path / RESULT

    @property
    def log(self) -> Path:
        return self.path / LOG

    def write_spec(self, spec: RunSpec) -> None:
        write_json_atomically(self.spec, spec.to_dict(), sync=False)

    def read_spec(self) -> RunSpec | None:
        """The run's spec; None when it is missing, unreadable or not a spec this version reads."""
        data = _read_json(self.spec)
        try:
            return None if data is None else RunSpec.from_dict(data)
        except ProtocolError:
            return None

    def write_result(self, result: RunResult, sync: bool = True) -> None:
        write_json_atomically(self.result, result.to_dict(), sync=sync)

    def read_result(self) -> RunResult | None:
        """The worker's result; None when there is none (or only a damaged one)."""
        data = _read_json(self.result)
        try:
            return None if data is None else RunResult.from_dict(data)
        except ProtocolError:
            return None

    def read_progress(self) -> list[CurvePoint]:
        """The evaluation points written so far; a torn last line (killed mid-write) is dropped."""
        points: list[CurvePoint] = []
        try:
            text = self.progress.read_text(encoding="utf-8")
        except OSError:
            return points
        for line in text.splitlines():
            try:
                points.append(CurvePoint.from_dict(json.loads(line)))
            except (json.JSONDecodeError, ProtocolError):
                break
        return points

    def output_tail(self, lines: int = 20) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def owner_alive(self) -> bool:
        """Whether the driver that owns this run is still running (same pid and start time)."""
        owner = _read_json(self.driver)
        if not owner or "pid" not in owner:
            return False
        return process_start(int(owner["pid"])) == owner.get("start")

    def claim(self) -> RunDirectory | None:
        """Take an orphaned run over: the directory is renamed (atomic, so of two drivers only one
        gets it) and this process becomes its owner. None when another driver was first."""
        run_id = self.path.name.rsplit(".", 1)[0]
        target = self.path.with_name(f"{run_id}.{secrets.token_hex(4)}")
        try:
            os.rename(self.path, target)
        except OSError:
            return None
        claimed = RunDirectory(target)
        write_json_atomically(claimed.driver, {"pid": os.getpid(), "start": process_start(os.getpid()),
                                               "claimed_at": time.time()})
        return claimed

    def remove(self) -> None:
        try:  # the files a run directory holds, then the directory: cheaper than rmtree's walk
            for entry in os.scandir(self.path):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            os.rmdir(self.path)
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)


def remove_root_if_empty(store_path: str | Path) -> None:
    """Remove the store's folder of run directories once nothing is left in it."""
    try:
        runs_root(store_path).rmdir()
    except OSError:
        pass


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def orphaned(store_path: str | Path) -> Iterator[RunDirectory]:
    """Run directories of the store whose driver is gone, oldest first."""
    root = runs_root(store_path)
    if not root.is_dir():
        return
    directories = [RunDirectory(path) for path in root.iterdir() if path.is_dir()]
    for directory in sorted(directories, key=lambda d: d.path.stat().st_mtime):
        if directory.spec.exists() and not directory.owner_alive():
            yield directory
