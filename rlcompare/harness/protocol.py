"""The run protocol: what crosses the boundary between the driver and a run's worker process.

The driver writes a :class:`RunSpec` into the run's directory as JSON; the worker (a fresh
interpreter, perhaps in an adapter's own Python environment) reads it back, trains, appends a
:class:`CurvePoint` per evaluation to the progress file and writes one :class:`RunResult`. Each is
a frozen dataclass with a JSON round trip (``to_dict`` / ``from_dict``), so neither side reads or
writes loose dictionaries. Reading is defensive: a file written by a process that was killed, or
by another version, gives a :class:`ProtocolError` naming the field, never a ``KeyError`` deep in
the driver. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from rlcompare.harness.validity import BudgetTolerance


class ProtocolError(ValueError):
    """A spec, result or curve point that does not have the shape the protocol defines."""


@dataclass(frozen=True)
class Origin:
    """Where a registered object comes from: the plugin, and the distribution that installed it.
    Every run records its adapter's origin, so the run protocol carries it."""

    plugin: str
    distribution: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        if self.distribution is None:
            return repr(self.plugin)
        return f"{self.plugin!r} ({self.distribution} {self.version or '?'})"

    def to_dict(self) -> dict[str, str | None]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Origin:
        values = _table(data, "origin")
        return cls(_text(values, "plugin", "origin", default="?"), _optional_text(values, "distribution", "origin"),
                   _optional_text(values, "version", "origin"))


UNKNOWN_ORIGIN = Origin("?")


@dataclass(frozen=True)
class WorkerEnvironment:
    """Where a run's worker runs: an interpreter, and the key of the adapter environment it
    belongs to (see :mod:`rlcompare.pyenvs`)."""

    python: str
    key: str
    lock_digest: str
    adapter: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> WorkerEnvironment:
        values = _table(data, "environment")
        return cls(*(_text(values, name, "environment") for name in ("python", "key", "lock_digest", "adapter")))


@dataclass(frozen=True)
class RunSpec:
    """What one run's worker receives: the resolved workload (plain JSON data), the values the
    driver derived from its algorithm family, the adapter class as ``module:qualname``, the
    adapter's fidelity report, the distributions to record, where to write, and what a later
    driver needs to store the run if this one is gone (tolerance, origin, environment)."""

    run_id: str
    adapter: str
    adapter_class: str
    framework: str
    seed: int
    workload: dict[str, Any]
    workload_derived: dict[str, Any]
    run_dir: str
    launched_at: float
    fidelity: tuple[dict[str, Any], ...] = ()
    distributions: tuple[str, ...] = ()
    tolerance: BudgetTolerance | None = None
    origin: Origin = UNKNOWN_ORIGIN
    environment: WorkerEnvironment | None = None
    #: The adapter's parity verdicts on the workload's family (kept for a later driver to store).
    parity: tuple[dict[str, Any], ...] | None = None
    #: What the run imports of its framework, timed by the worker first thing (none: not timed).
    framework_modules: tuple[str, ...] = ()
    #: The other seeds this worker trains in the same program (``parallelism.seeds_per_program``), each
    #: a run of its own: ``{"run_id", "seed", "run_dir"}``. Empty: this run alone.
    companions: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "adapter": self.adapter, "adapter_class": self.adapter_class,
            "framework": self.framework, "seed": self.seed, "workload": self.workload,
            "workload_derived": self.workload_derived, "run_dir": self.run_dir, "launched_at": self.launched_at,
            "fidelity": list(self.fidelity), "distributions": list(self.distributions),
            "tolerance": None if self.tolerance is None else self.tolerance.to_dict(), "origin": self.origin.to_dict(),
            "environment": None if self.environment is None else self.environment.to_dict(),
            "parity": None if self.parity is None else list(self.parity),
            "framework_modules": list(self.framework_modules),
            "companions": [dict(companion) for companion in self.companions],
        }

    @classmethod
    def from_dict(cls, data: Any) -> RunSpec:
        values = _table(data, "run spec")
        where = "run spec"
        fidelity = values.get("fidelity") or []
        if not isinstance(fidelity, list) or not all(isinstance(item, dict) for item in fidelity):
            raise ProtocolError(f"{where}: field 'fidelity' must be a list of tables")
        distributions = values.get("distributions") or []
        if not isinstance(distributions, list) or not all(isinstance(item, str) for item in distributions):
            raise ProtocolError(f"{where}: field 'distributions' must be a list of names")
        tolerance = values.get("tolerance")
        if tolerance is not None:
            try:
                tolerance = BudgetTolerance(**_table(tolerance, f"{where} field 'tolerance'"))
            except (TypeError, ValueError) as exc:
                raise ProtocolError(f"{where}: field 'tolerance': {exc}") from None
        return cls(
            run_id=_text(values, "run_id", where),
            adapter=_text(values, "adapter", where),
            adapter_class=_text(values, "adapter_class", where, default=""),
            framework=_text(values, "framework", where, default="?"),
            seed=_integer(values, "seed", where),
            workload=_table(values.get("workload"), f"{where} field 'workload'"),
            workload_derived=_table(values.get("workload_derived") or {}, f"{where} field 'workload_derived'"),
            run_dir=_text(values, "run_dir", where),
            launched_at=_number(values, "launched_at", where),
            fidelity=tuple(fidelity),
            distributions=tuple(distributions),
            tolerance=tolerance,
            origin=Origin.from_dict(values["origin"]) if values.get("origin") else UNKNOWN_ORIGIN,
            environment=WorkerEnvironment.from_dict(values["environment"]) if values.get("environment") else None,
            parity=_parity(values.get("parity"), where),
            framework_modules=_names(values, "framework_modules", where),
            companions=_companions(values.get("companions"), where),
        )


@dataclass(frozen=True)
class CurvePoint:
    """One evaluation of a run's policy by the harness, made at ``env_steps``.

    ``grid_steps`` is the point of the workload's evaluation grid (a multiple of
    ``evaluation.interval_steps``) it stands for: the harness evaluates each grid point at the first
    update boundary at or after it (:class:`rlcompare.harness.evaluation.EvaluationGrid`); None for a
    final evaluation off the grid. ``updates`` is the number of updates the adapter had traced before
    it; None when it had traced none (then the point was placed at the first checkpoint at or after
    its grid point).
    """

    env_steps: int
    framework_env_steps: int | None
    train_seconds: float
    return_mean: float
    return_std: float
    returns: tuple[float, ...]
    episode_length_mean: float
    grid_steps: int | None = None
    updates: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["returns"] = list(self.returns)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> CurvePoint:
        values = _table(data, "curve point")
        where = "curve point"
        returns = values.get("returns") or []
        if not isinstance(returns, list) or not all(_is_number(item) or item is None for item in returns):
            raise ProtocolError(f"{where}: field 'returns' must be a list of numbers")
        return cls(
            env_steps=_integer(values, "env_steps", where),
            framework_env_steps=_optional_integer(values, "framework_env_steps", where),
            train_seconds=_number(values, "train_seconds", where, default=0.0),
            return_mean=_number(values, "return_mean", where, default=math.nan),
            return_std=_number(values, "return_std", where, default=math.nan),
            returns=tuple(math.nan if item is None else float(item) for item in returns),
            episode_length_mean=_number(values, "episode_length_mean", where, default=math.nan),
            grid_steps=_optional_integer(values, "grid_steps", where),
            updates=_optional_integer(values, "updates", where),
        )


#: Statuses a worker writes; the driver adds timeout, interrupted, invalid and unsupported.
WORKER_STATUSES = ("ok", "failed")


@dataclass(frozen=True)
class RunResult:
    """What a run's worker writes when it ends: its status, the harness's measurements, and what
    the framework reported. A crash before training leaves most figures at None."""

    run_id: str
    status: str
    error: str | None = None
    traceback: str | None = None
    host: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    fidelity: tuple[dict[str, Any], ...] | None = None
    native_config: dict[str, Any] | None = None
    framework_env_steps: int | None = None
    final_return_mean: float | None = None
    final_return_std: float | None = None
    env_steps: int | None = None
    episodes: int | None = None
    startup_seconds: float | None = None
    training_seconds: float | None = None
    evaluation_seconds: float | None = None
    torch_threads: int | None = None
    worker_seconds: float | None = None
    #: What the framework's schedule did, traced by the adapter (:mod:`rlcompare.harness.schedule`).
    schedule: dict[str, Any] | None = None
    #: The machine's load while the run ran (:class:`rlcompare.harness.machine_load.RunLoad`).
    load_start: float | None = None
    load_end: float | None = None
    load_cpus: int | None = None
    cpu_steal: float | None = None
    #: What the worker measured of the framework where it imported it (first thing, in a fresh
    #: interpreter): ``{"import": {...}, "api": {...}}``
    #: (:func:`rlcompare.harness.framework_import.measure_in_this_interpreter`); None: not measured.
    development: dict[str, Any] | None = None
    #: How many seeds (runs) trained in the program this run was part of (None or 1: alone). Each run's
    #: training time is then the program's, so its throughput is its own steps over the shared time.
    seeds_in_program: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {item.name: getattr(self, item.name) for item in fields(self)}
        data["fidelity"] = None if self.fidelity is None else list(self.fidelity)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> RunResult:
        values = _table(data, "run result")
        where = "run result"
        status = _text(values, "status", where)
        if status not in WORKER_STATUSES:
            raise ProtocolError(f"{where}: field 'status' must be one of {', '.join(WORKER_STATUSES)}, got {status!r}")
        fidelity = values.get("fidelity")
        if fidelity is not None and (not isinstance(fidelity, list)
                                     or not all(isinstance(item, dict) for item in fidelity)):
            raise ProtocolError(f"{where}: field 'fidelity' must be a list of tables")
        versions = _table(values.get("versions") or {}, f"{where} field 'versions'")
        return cls(
            run_id=_text(values, "run_id", where, default="?"),
            status=status,
            error=_optional_text(values, "error", where),
            traceback=_optional_text(values, "traceback", where),
            host=_table(values.get("host") or {}, f"{where} field 'host'"),
            versions={str(key): None if value is None else str(value) for key, value in versions.items()},
            fidelity=None if fidelity is None else tuple(fidelity),
            native_config=(None if values.get("native_config") is None
                           else _table(values["native_config"], f"{where} field 'native_config'")),
            framework_env_steps=_optional_integer(values, "framework_env_steps", where),
            final_return_mean=_optional_number(values, "final_return_mean", where),
            final_return_std=_optional_number(values, "final_return_std", where),
            env_steps=_optional_integer(values, "env_steps", where),
            episodes=_optional_integer(values, "episodes", where),
            startup_seconds=_optional_number(values, "startup_seconds", where),
            training_seconds=_optional_number(values, "training_seconds", where),
            evaluation_seconds=_optional_number(values, "evaluation_seconds", where),
            torch_threads=_optional_integer(values, "torch_threads", where),
            worker_seconds=_optional_number(values, "worker_seconds", where),
            schedule=None if values.get("schedule") is None else _table(values["schedule"], f"{where} field 'schedule'"),
            load_start=_optional_number(values, "load_start", where),
            load_end=_optional_number(values, "load_end", where),
            load_cpus=_optional_integer(values, "load_cpus", where),
            cpu_steal=_optional_number(values, "cpu_steal", where),
            development=(None if values.get("development") is None
                         else _table(values["development"], f"{where} field 'development'")),
            seeds_in_program=_optional_integer(values, "seeds_in_program", where),
        )


def _names(values: Mapping[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = values.get(name) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ProtocolError(f"{where}: field {name!r} must be a list of names")
    return tuple(value)


def _parity(value: Any, where: str) -> tuple[dict[str, Any], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ProtocolError(f"{where}: field 'parity' must be a list of tables")
    return tuple(value)


# -- reading plain JSON values, with one clear error per field ----------------------------------------


def _table(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ProtocolError(f"{where}: expected a table, got {type(data).__name__}")
    return dict(data)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(values: Mapping[str, Any], name: str, where: str, default: str | None = None) -> str:
    value = values.get(name, default)
    if not isinstance(value, str):
        raise ProtocolError(f"{where}: field {name!r} must be text, got {type(value).__name__}")
    return value


def _optional_text(values: Mapping[str, Any], name: str, where: str) -> str | None:
    value = values.get(name)
    return None if value is None else _text(values, name, where)


def _integer(values: Mapping[str, Any], name: str, where: str) -> int:
    value = values.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProtocolError(f"{where}: field {name!r} must be a whole number, got {value!r}")
    return value


def _optional_integer(values: Mapping[str, Any], name: str, where: str) -> int | None:
    return None if values.get(name) is None else _integer(values, name, where)


def _number(values: Mapping[str, Any], name: str, where: str, default: float | None = None) -> float:
    value = values.get(name, default)
    if value is None:
        value = default
    if not _is_number(value):
        raise ProtocolError(f"{where}: field {name!r} must be a number, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _optional_number(values: Mapping[str, Any], name: str, where: str) -> float | None:
    return None if values.get(name) is None else _number(values, name, where)


def _companions(value: Any, where: str) -> tuple[dict[str, Any], ...]:
    """A run spec's ``companions``: tables of ``run_id`` (text), ``seed`` (integer), ``run_dir`` (text)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ProtocolError(f"{where}: field 'companions' must be a list of tables")
    companions = []
    for index, item in enumerate(value):
        table = _table(item, f"{where} field 'companions[{index}]'")
        inner = f"{where} field 'companions[{index}]'"
        companions.append({"run_id": _text(table, "run_id", inner), "seed": _integer(table, "seed", inner),
                           "run_dir": _text(table, "run_dir", inner)})
    return tuple(companions)
