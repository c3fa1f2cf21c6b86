"""The error hierarchy of rlcompare.

Every error a user can cause is an :class:`RLCompareError`; its ``exit_status`` is what the CLI
returns and its message is one line that names the offending field, file or name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class RLCompareError(Exception):
    """Base class of every error rlcompare raises on purpose. Its text is always one line: names
    that come from user input (a TOML key with a newline in it) cannot break it."""

    exit_status: int = 2

    def __str__(self) -> str:
        text = " ".join(super().__str__().split())
        return text if len(text) <= 1_000 else text[:999] + "…"


class UsageError(RLCompareError):
    """Bad command-line usage or an invalid option value."""


class InvalidWorkloadError(UsageError):
    """A workload file or spec that does not validate."""


class InvalidStudyError(UsageError):
    """A study file or table that does not validate."""


class UnknownNameError(UsageError):
    """A name (adapter, suite, workload, environment, criterion) that is not registered."""

    def __init__(self, kind: str, name: str, known: Iterable[str], listing: str | None = None) -> None:
        known = sorted(known)
        self.kind, self.name, self.known = kind, name, known
        message = f"unknown {kind} {name!r}"
        same_but_case = [item for item in known if item.casefold() == name.casefold()]
        close = same_but_case or difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        if close:
            message += f"; did you mean {close[0]!r}?"
        elif known and len(known) <= 8:
            message += f"; known: {', '.join(known)}"
        if listing:
            message += f" (see `{listing}`)"
        super().__init__(message)


class IncompatibleError(UsageError):
    """An adapter x workload pair the adapter cannot run; refused before anything runs."""


class PluginError(RLCompareError):
    """A plugin that failed to load or to register; reported, never fatal for the others."""

    def __init__(self, plugin: str, reason: str) -> None:
        self.plugin, self.reason = plugin, reason
        super().__init__(f"plugin {plugin!r} failed: {reason}")


class StoreError(RLCompareError):
    """A results store that cannot be opened or has an incompatible schema."""


class RunFailedError(RLCompareError):
    """Raised inside a run's worker process; the run is stored as failed."""

    exit_status = 1
