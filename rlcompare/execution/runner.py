"""Running a plan on this machine in one call: :class:`LocalRunner` is the driver with the ``local``
backend, for scripts, benchmarks and tests that do not go through the command line.

    with Store("results.db") as store:
        summary = LocalRunner(store, jobs=2, timeout_seconds=600).run(plan)
"""

from __future__ import annotations

from collections.abc import Callable

from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver, RunOutcome, RunSummary, run_spec
from rlcompare.execution.local import LocalBackend
from rlcompare.plan.matrix import PlannedRun
from rlcompare.store.sqlite_store import Store

__all__ = ["LocalRunner", "RunOutcome", "RunSummary", "run_spec"]


class LocalRunner(Driver):
    """The driver on the local backend: ``jobs`` runs at a time, each with its limits."""

    def __init__(
        self,
        store: Store,
        jobs: int = 1,
        timeout_seconds: float | None = None,
        on_finish: Callable[[RunOutcome], None] | None = None,
        on_start: Callable[[PlannedRun], None] | None = None,
        max_memory_bytes: int | None = None,
    ) -> None:
        backend = LocalBackend(Limits(timeout_seconds, max_memory_bytes), BackendOptions(jobs=jobs))
        super().__init__(store, backend, on_finish=on_finish, on_start=on_start)
