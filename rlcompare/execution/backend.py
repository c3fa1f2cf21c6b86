"""The execution-backend seam: where and how planned runs execute, behind one small protocol.

A backend runs each planned run as the same fresh-interpreter worker (``python -m rlcompare.harness.worker``)
and tells the driver how it ended; the driver (:mod:`rlcompare.execution.driver`) plans, resumes,
stores and recovers, and is the only writer of the store, whatever the backend. Backends are
registered through the ``rlcompare_register_backends`` hook, the built-in ``local`` and ``ray``
exactly as an outside package would register ``slurm`` or ``kubernetes``.

A backend keeps each run's evaluation points and result in the run's directory on the driver's
machine (:class:`rlcompare.harness.run_directory.RunDirectory`) as they arrive, so a crash anywhere keeps them.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from rlcompare.errors import PluginError
from rlcompare.harness.protocol import CurvePoint, RunResult
from rlcompare.pyenvs.processes import process_environment

if TYPE_CHECKING:
    from rlcompare.harness.run_directory import RunDirectory
    from rlcompare.plan.matrix import PlannedRun

#: The module every run's worker process runs (``python -m WORKER_MODULE SPEC.json``).
WORKER_MODULE = "rlcompare.harness.worker"
#: Every process of a run inherits these variables, so stragglers can be found after the fact: the
#: run id, and the attempt (the run directory's path: it names the store and differs for every
#: attempt). Cleanup matches the attempt only, so two drivers running the same run id (on one store
#: or two) never stop each other's processes.
RUN_ID_ENV = "RLCOMPARE_RUN_ID"
ATTEMPT_ENV = "RLCOMPARE_ATTEMPT"


@dataclass(frozen=True)
class Limits:
    """What a run may use; a run past either is stopped (timeout / failed with the figure)."""

    timeout_seconds: float | None = None
    max_memory_bytes: int | None = None


@dataclass(frozen=True)
class BackendOptions:
    """What the command line says about execution (a backend reads the options it knows)."""

    jobs: int = 1
    address: str | None = None
    #: Fork each local run from a parent that imported its framework (:mod:`rlcompare.pyenvs.warm`);
    #: None: as ``RLCOMPARE_WARM_START`` says.
    warm_start: bool | None = None


@dataclass
class Ending:
    """How one run ended, as its backend saw it."""

    result: RunResult | None
    stop_status: str | None = None
    stop_reason: str | None = None
    wall_seconds: float | None = None
    cpu_seconds: float | None = None
    peak_rss_bytes: int | None = None
    cpus_given: int | None = None
    output_tail: str = ""
    #: What happened on the way that is not an error (stored as the run's note), e.g. a re-run.
    note: str | None = None
    #: Attempts the backend ended and started again (e.g. after losing a cluster node): why, and the
    #: evaluation points each reached. The driver stores each as an interrupted attempt of the run.
    earlier_attempts: list[tuple[str, list[CurvePoint]]] = field(default_factory=list)


class Backend(ABC):
    """Executes planned runs. Subclasses set ``name`` and ``description`` and implement the methods.

    The driver calls :meth:`open` once, then repeatedly: :meth:`submit` while fewer than
    :meth:`capacity` runs are in flight, :meth:`wait` for a moment, :meth:`poll` each run in flight
    (None while it runs; an :class:`Ending` once it ended), :meth:`cancel` to stop one (interrupt,
    shutdown); and :meth:`close` at the end.
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    #: Whether one worker may train several runs in one program (``parallelism.seeds_per_program``): its
    #: worker writes the other runs' results into their run directories, which it must see (a worker on
    #: the driver's file system). A backend that runs workers elsewhere sets it False; such workloads
    #: are then refused before anything is written.
    programs_of_seeds: ClassVar[bool] = True

    def __init__(self, limits: Limits | None = None, options: BackendOptions | None = None) -> None:
        self.limits = limits or Limits()
        self.options = options or BackendOptions()

    def check(self) -> None:  # noqa: B027 - optional hook
        """Check the options before anything is written (e.g. that a cluster answers); raise
        :class:`rlcompare.errors.UsageError` with one line when they are wrong."""

    def open(self) -> None:  # noqa: B027 - optional hook
        """Prepare (start or join a cluster). Raise :class:`rlcompare.errors.UsageError` with one
        line when it cannot."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what :meth:`open` took."""

    def cpus_given(self) -> int | None:
        """The CPUs each run gets, when the backend knows it before the matrix starts (None: it
        does not, e.g. a cluster that places runs as they come)."""
        return None

    @abstractmethod
    def capacity(self) -> int:
        """How many runs may be in flight at once."""

    @abstractmethod
    def submit(self, planned: PlannedRun, directory: RunDirectory) -> Any:
        """Start ``planned`` (its spec is in ``directory``); return a handle for :meth:`poll`."""

    @abstractmethod
    def wait(self, handles: Sequence[Any], timeout: float) -> Sequence[Any]:
        """Return, after at most ``timeout`` seconds, the handles that may have news (all of them
        when the backend cannot tell); the driver polls those."""

    @abstractmethod
    def poll(self, handle: Any) -> Ending | None:
        """Sample the run, enforce the limits; None while it runs, else how it ended."""

    @abstractmethod
    def cancel(self, handle: Any, status: str, reason: str) -> Ending:
        """Stop the run's whole process tree and say how it ended (``status`` with ``reason``)."""


def worker_environment(planned: PlannedRun, base: dict[str, str] | None = None,
                       directory: RunDirectory | None = None) -> dict[str, str]:
    """A run's environment: thread pins identical for every adapter, the run id and the attempt
    (``directory``'s path) on every process, no inherited Ray address (a framework using Ray starts
    its own) (:func:`rlcompare.pyenvs.processes.process_environment`). Without ``directory`` the worker
    marks itself with its spec's run directory."""
    env = process_environment(os.environ if base is None else base, planned.workload.parallelism.threads_per_worker,
                              None if planned.environment is None else planned.environment.python)
    env[RUN_ID_ENV] = planned.run_id
    if directory is not None:
        env[ATTEMPT_ENV] = str(directory.path)
    return env


def worker_python(planned: PlannedRun, default: str) -> str:
    """The interpreter a run's worker starts with: its adapter environment's, else ``default``."""
    return default if planned.environment is None else planned.environment.python


def cpus_needed(planned: PlannedRun) -> int:
    """CPUs a run keeps busy: its training process, plus one per rollout-worker process when it has
    separate ones, each with the workload's torch/BLAS threads (vectorized envs step in-process)."""
    parallelism = planned.workload.parallelism
    processes = 1 + (parallelism.workers if parallelism.workers > 1 else 0)
    return processes * parallelism.threads_per_worker


def check_backend_class(backend_class: Any) -> None:
    """Refuse, at registration, a backend class that breaks the contract's declarations."""
    label = getattr(backend_class, "__qualname__", repr(backend_class))
    if not isinstance(backend_class, type) or not issubclass(backend_class, Backend):
        raise PluginError(label, "add_backend expects a subclass of rlcompare.execution.backend.Backend")
    name = getattr(backend_class, "name", None)
    if not isinstance(name, str) or not re.match(r"^[a-z][a-z0-9_-]{0,31}$", name):
        raise PluginError(label, f"backend name {name!r} must be lower case letters, digits, '-' or '_'")
    if getattr(backend_class, "__abstractmethods__", None):
        missing = ", ".join(sorted(backend_class.__abstractmethods__))
        raise PluginError(label, f"backend {name!r} does not implement {missing}")
