"""The measurement cache: expensive measurements (development criteria, parity verdicts) kept in the
user's cache between commands, keyed by what determines them."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rlcompare.harness.host import cache_dir


class MeasurementCache:
    """Expensive measurements (import time, API introspection, install size) kept in a JSON file,
    keyed by what determines them (distribution, version, Python), so scoring again is quick.

    The default file lives in the user's cache directory (``$RLCOMPARE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/rlcompare``, else ``~/.cache/rlcompare``), never next to a store. With
    ``refresh`` every key is measured again once (``rlcompare score --remeasure``).
    """

    def __init__(self, path: Path | None, refresh: bool = False, log: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.refresh = refresh
        #: Told of each measurement before it is made (the first scoring on a machine times imports
        #: in fresh interpreters for a minute or two: the command says so instead of going quiet).
        self.log = log
        self._data: dict[str, Any] | None = None
        self._fresh: set[str] = set()
        #: What this object measured (or was told to keep): merged into the file at every save, so two
        #: commands measuring at once (a ``score`` beside a ``run``) keep each other's measurements.
        self._measured: dict[str, Any] = {}

    @staticmethod
    def default_path() -> Path:
        return cache_dir() / "measurements.json"

    @classmethod
    def default(cls, refresh: bool = False, log: Callable[[str], None] | None = None) -> MeasurementCache:
        return cls(cls.default_path(), refresh, log)

    def _read_file(self) -> dict[str, Any]:
        if self.path is None or not self.path.is_file():
            return {}
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # a damaged cache is only a slower run, never an error
        return loaded if isinstance(loaded, dict) else {}

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            self._data = self._read_file()
        return self._data

    def get_or_compute(self, key: str, compute: Callable[[], Any], what: str | None = None,
                       keep: Callable[[Any], bool] | None = None) -> Any:
        """The value kept under ``key``, else ``compute()``'s, kept unless ``keep`` says no (an error
        worth retrying); ``what`` names the measurement for the log (default: the key's first two parts)."""
        data = self._load()
        if key not in data or (self.refresh and key not in self._fresh):
            if self.log is not None:
                if what is None:
                    kind, _, rest = key.partition("|")
                    what = f"{kind} of {rest.split('|')[0][:60]}"
                where = "" if self.path is None else f"; kept in {self.path}"
                self.log(f"measuring {what} (once{where})")
            value = compute()
            if keep is not None and not keep(value):
                return value
            data[key] = value
            self._measured[key] = value
            self._fresh.add(key)
            self._save()
        return data[key]

    def lookup(self, key: str) -> tuple[bool, Any]:
        """(found, value) of ``key``: not found when absent, or when refreshing and not yet measured
        again in this command."""
        data = self._load()
        if key not in data or (self.refresh and key not in self._fresh):
            return False, None
        return True, data[key]

    def keep(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` (measured now)."""
        self._load()[key] = value
        self._measured[key] = value
        self._fresh.add(key)
        self._save()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The file's lock (a sidecar ``.lock``), held while it is read, merged and replaced."""
        assert self.path is not None
        import fcntl

        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _save(self) -> None:
        """Merge what this object measured into the file as it is now (another command may have
        added measurements since it was read) and replace it atomically."""
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._locked():
                merged = {**self._read_file(), **self._measured}
                partial = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
                partial.write_text(json.dumps(merged, indent=1, sort_keys=True), encoding="utf-8")
                os.replace(partial, self.path)
            data = self._load()
            for key, value in merged.items():  # what other commands measured meanwhile; ours stay as they are
                data.setdefault(key, value)
        except OSError:
            pass  # an unwritable cache only means measuring again next time
