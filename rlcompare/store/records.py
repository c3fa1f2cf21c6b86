"""The run record: everything stored about one run, in one typed place.

The driver builds a :class:`RunRecord` when a run ends (or is refused up front) and the store
writes it; the store's ``runs`` table is derived from this class (:func:`run_columns`), so a column
cannot exist in one and not the other. Fields ending in ``_json`` hold plain data (dicts, lists)
that the store keeps as JSON text.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

#: Statuses a run can be stored with. ``invalid``: finished, but broke a validity rule
#: (:mod:`rlcompare.harness.validity`); ``interrupted``: stopped by the user with what it had finished;
#: ``unsupported``: refused before running (capabilities or fidelity).
STATUSES = ("ok", "invalid", "failed", "timeout", "interrupted", "unsupported")
#: Statuses of runs that started (everything but a refusal).
STARTED_STATUSES = STATUSES[:-1]


@dataclass
class RunRecord:
    """One run of one adapter on one workload with one seed, or one refused pair (seed -1)."""

    run_id: str
    workload_id: str
    workload_digest: str
    adapter: str
    framework: str
    algorithm: str
    env_id: str
    seed: int
    status: str
    workload_json: dict[str, Any]
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    wall_seconds: float | None = None
    startup_seconds: float | None = None
    training_seconds: float | None = None
    evaluation_seconds: float | None = None
    env_steps: int | None = None
    framework_env_steps: int | None = None
    step_count_gap: int | None = None
    step_count_tolerance: int | None = None
    budget_granularity: str | None = None
    budget_overshoot_steps: int | None = None
    episodes: int | None = None
    evaluations: int | None = None
    throughput: float | None = None
    ideal_throughput: float | None = None
    cpu_seconds: float | None = None
    peak_rss_bytes: int | None = None
    #: CPUs the run keeps busy (its processes x threads) and CPUs its backend gave it: a run that
    #: needs more than it was given measures contention, not its framework (flagged in reports).
    cpus_needed: int | None = None
    cpus_given: int | None = None
    #: The machine's load while the run ran (:mod:`rlcompare.harness.machine_load`): the 1-minute
    #: load average at start and end, the CPUs it is spread over, the share of CPU time stolen by the
    #: hypervisor (None where the platform does not say), and the most runs its driver had in flight
    #: at once while it ran (itself included). Reports warn when compared timings differ in load
    #: (:mod:`rlcompare.store.contention`).
    load_start: float | None = None
    load_end: float | None = None
    load_cpus: int | None = None
    cpu_steal: float | None = None
    runs_in_flight: int | None = None
    final_return_mean: float | None = None
    final_return_std: float | None = None
    success_threshold: float | None = None
    budget_env_steps: int | None = None
    torch_threads: int | None = None
    host_fingerprint: str | None = None
    adapter_plugin: str | None = None
    adapter_distribution: str | None = None
    adapter_version: str | None = None
    versions_json: dict[str, Any] | None = None
    host_json: dict[str, Any] | None = None
    fidelity_json: list[dict[str, Any]] | None = None
    native_config_json: dict[str, Any] | None = None
    validity_json: dict[str, Any] | None = None
    #: The adapter's own environment the run's worker ran in (None: the main environment): its key
    #: and its python, lock digest and adapter (:mod:`rlcompare.pyenvs`).
    environment_key: str | None = None
    environment_json: dict[str, Any] | None = None
    #: The schedule the framework followed, traced from inside it (:mod:`rlcompare.harness.schedule`).
    schedule_json: dict[str, Any] | None = None
    #: The parity verdicts of the run's adapter on its algorithm family, for the framework version it
    #: ran (``rlcompare parity``), each as :meth:`rlcompare.parity.verdict.ParityVerdict.to_dict`.
    parity_json: list[dict[str, Any]] | None = None
    #: What the run's worker measured of its framework where it imported it, first thing in its
    #: fresh interpreter: ``{"import": {...}, "api": {...}}``
    #: (:func:`rlcompare.harness.framework_import.measure_in_this_interpreter`), read by the
    #: development criteria.
    development_json: dict[str, Any] | None = None
    traceback: str | None = None
    #: What happened to a run on its way that is not an error (e.g. re-run after losing its cluster
    #: node, and on which node it finished).
    note: str | None = None
    #: How many seeds (runs) trained in the one program this run was part of
    #: (``parallelism.seeds_per_program``); NULL: the run trained alone. The runs of a program share its
    #: training time, its wall time, CPU time and peak memory (the program's, recorded with each).
    seeds_in_program: int | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")

    def row(self) -> dict[str, Any]:
        """Column name -> value, JSON fields still as Python data."""
        return {name: getattr(self, name) for name in run_columns()}


_SQL_TYPES = {str: "TEXT", int: "INTEGER", float: "REAL", bool: "INTEGER"}


@functools.cache
def column_types() -> dict[str, tuple[str, bool]]:
    """Each stored field: (SQLite type, may be NULL)."""
    hints = typing.get_type_hints(RunRecord)
    columns: dict[str, tuple[str, bool]] = {}
    for item in dataclasses.fields(RunRecord):
        hint = hints[item.name]
        nullable = False
        args = typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            nullable = type(None) in args
            hint = next(arg for arg in args if arg is not type(None))
        origin = typing.get_origin(hint) or hint
        columns[item.name] = (_SQL_TYPES.get(origin, "TEXT"), nullable)
    return columns


def run_columns() -> tuple[str, ...]:
    return tuple(column_types())


def json_columns() -> tuple[str, ...]:
    return tuple(name for name in run_columns() if name.endswith("_json"))


def runs_table_sql(table: str = "runs") -> str:
    """``CREATE TABLE`` for the runs table, derived from :class:`RunRecord`."""
    lines = []
    for name, (sql_type, nullable) in column_types().items():
        line = f"    {name} {sql_type}"
        if name == "run_id":
            line += " PRIMARY KEY"
        elif not nullable:
            line += " NOT NULL"
        if name == "status":
            line += f" CHECK (status IN ({', '.join(repr(s) for s in STATUSES)}))"
        lines.append(line)
    return f"CREATE TABLE IF NOT EXISTS {table} (\n" + ",\n".join(lines) + "\n)"
