"""Development criteria measured by ``rlcompare run``, so the first ``report`` or ``score`` finds
them in the measurement cache instead of spending minutes measuring first.

Criteria that keep expensive measurements in the cache (cold import time, public-API coverage,
install footprint, glue size) declare a ``premeasure`` step
(:attr:`rlcompare.scoring.criteria.Criterion.premeasure`): the very measurements their ``compute``
makes, with the same scripts, repeats and cache keys. ``run`` starts ONE process at a time
(``python -m rlcompare.cli.premeasure``) that calls those steps for every adapter of the plan, in
the environment its runs use.

Runs measure time, and so does the cold import: neither may take the other's CPU, and a process
beside a run slows it even on another CPU (on a 2-CPU machine, paired runs of SB3 made 7% fewer
env steps per CPU-second, median of 6 pairs, with it than without). With the driver's round-robin
order that cost would fall on the first adapters' first seeds. So the first process starts only
once every run is submitted (no run starts beside it but those already in flight) and those in
flight leave a CPU free: the tail of the matrix, where one run at a time finishes. It runs at the
lowest priority (``nice 19``, inherited by the interpreters it starts) and times nothing: an import
timed beside a busy CPU takes 10-13% longer even with a CPU of its own
(``python benchmarks/import_timing.py``), so it measures what does not depend on the machine's load
(install footprint, glue, public API) and leaves the timings for after the runs.
Once the runs are over, the timings and whatever else is left (no CPU was free during the matrix,
or the niced process is still at work: it is stopped, keeping what it measured) are measured by a
second process at normal priority, as the first scoring would have measured them (the framework of
an adapter whose run finished is in memory already, so its timing skips the discarded warm-up
import; the last timed interpreter walks the public API), and kept as scoring keeps them. ``run`` waits for
that process before it exits, so a report that follows measures nothing; an interrupted matrix
stops it, and what it had measured stays cached.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, TYPE_CHECKING, Any

from rlcompare.execution.backend import cpus_needed
from rlcompare.harness.host import usable_cpus
from rlcompare.harness.measurement_cache import MeasurementCache
from rlcompare.plan.matrix import Plan, PlannedRun
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.scoring.criteria import ScoringCatalogue, ScoringData

if TYPE_CHECKING:
    import pandas as pd

    from rlcompare.execution.driver import RunOutcome

#: The niceness of the process measuring alongside runs and of every interpreter it starts.
NICENESS = 19
#: The module the measuring process runs.
MODULE = "rlcompare.cli.premeasure"
#: How the process announces, on stderr, each measurement it makes (a value found cached is not),
#: each one a step made but did not keep, and each step that failed.
MEASURING = "measuring "
NOT_KEPT = "not kept: "
FAILED = "failed: "
#: Seconds ``run`` waits for the process before saying that it waits.
QUIET_WAIT_SECONDS = 2.0


@dataclass(frozen=True)
class PlannedAdapter:
    """An adapter of the plan, as the measuring process measures it."""

    adapter: str
    framework: str
    #: The adapter environment its runs use (:class:`rlcompare.harness.protocol.WorkerEnvironment`
    #: as a dict); None: the main environment.
    environment: dict[str, str] | None = None


@dataclass
class Premeasured:
    """What one pass over the plan's adapters did not finish."""

    #: Measurements made but not kept (what a criterion's step returned), one line each.
    not_kept: list[str] = field(default_factory=list)
    #: Steps that raised (scoring measures those later, as before), one line each.
    failed: list[str] = field(default_factory=list)


def planned_adapters(plan: Plan) -> list[PlannedAdapter]:
    """Every adapter of ``plan`` in the order its runs start, then those only in refused pairs (the
    store keeps those too, and scoring measures every adapter in the store)."""
    found: dict[str, PlannedAdapter] = {}
    for run in plan.runs:
        if run.adapter_id not in found:
            environment = None if run.environment is None else run.environment.to_dict()
            found[run.adapter_id] = PlannedAdapter(run.adapter_id, run.framework, environment)
    for refused in plan.refused:
        found.setdefault(refused.adapter_id, PlannedAdapter(refused.adapter_id, refused.framework))
    return list(found.values())


def planned_runs_frame(adapters: Sequence[PlannedAdapter]) -> pd.DataFrame:
    """The ``runs`` frame a criterion's ``premeasure`` receives: one row per planned adapter."""
    import pandas as pd

    return pd.DataFrame({
        "adapter": [a.adapter for a in adapters],
        "framework": [a.framework for a in adapters],
        "status": ["planned"] * len(adapters),
        "environment_json": [None if a.environment is None else json.dumps(a.environment) for a in adapters],
    })


def premeasure(adapters: Sequence[PlannedAdapter], catalogue: ScoringCatalogue, cache: MeasurementCache,
               alongside_runs: bool, log: Callable[[str], None] | None = None,
               warm: Collection[str] = ()) -> Premeasured:
    """Every criterion's ``premeasure`` for each adapter in turn (one adapter's measurements together,
    so an interrupted matrix leaves whole adapters measured). ``warm``: adapters whose framework a run
    of this command has imported (:attr:`ScoringData.warm_adapters`)."""
    done = Premeasured()
    say = log or (lambda _line: None)
    steps = [(criterion_id, criterion.premeasure) for criterion_id, criterion in catalogue.criteria.items()
             if criterion.premeasure is not None]
    for adapter in adapters:
        data = ScoringData(planned_runs_frame([adapter]), catalogue=catalogue, cache=cache,
                           warm_adapters=frozenset(warm))
        for criterion_id, step in steps:
            try:
                left = step(data, alongside_runs)
            except Exception as error:  # noqa: BLE001 - one criterion's failure must not stop the others
                done.failed.append(f"{criterion_id} of {adapter.adapter}: {type(error).__name__}: {error}")
                say(FAILED + done.failed[-1])
                continue
            for line in left:
                done.not_kept.append(line)
                say(NOT_KEPT + line)
    return done


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _lowest_priority() -> None:
    """In the child between fork and exec: one system call, nothing that takes a lock."""
    os.nice(NICENESS)


class BackgroundMeasuring:
    """Starts the measuring process once a CPU is left over by the runs, finishes what it left once
    they are over, or stops it.

    Driven by the driver's ``on_start``/``on_finish`` callbacks (wrap the progress display's with
    :meth:`on_start` and :meth:`on_finish`), so it needs no thread; use it as a context manager so
    that leaving the block for any reason stops what is still running.

    One process measures at a time, also after the runs on a machine with CPUs to spare: two imports
    timed at once on two CPUs took 10-13% longer than one alone (``python benchmarks/import_timing.py``),
    and a figure must not depend on how many others were measured beside it.
    """

    def __init__(self, plan: Plan, *, cpus: int | None = None, python: str = sys.executable,
                 log: Callable[[str], None] | None = None, env: Mapping[str, str] | None = None) -> None:
        self.adapters = planned_adapters(plan)
        self.cpus = usable_cpus() if cpus is None else cpus
        self.python = python
        self.log = log
        self.env = env
        self.runs = len(plan.runs)
        self.started = 0
        self.in_flight: dict[str, int] = {}
        #: The adapter of each run started, by run id.
        self._adapter_of: dict[str, str] = {}
        #: Adapters with a run finished ok: their framework has been imported on this machine just now.
        self.warm: set[str] = set()
        self.process: subprocess.Popen[bytes] | None = None
        self._errors: IO[bytes] | None = None
        self._alongside = False
        self._killed = False

    # -- the driver's events ------------------------------------------------------------------------

    def on_start(self, then: Callable[[PlannedRun], None] | None = None) -> Callable[[PlannedRun], None]:
        """The driver's ``on_start``: counts the run in flight, then calls ``then``."""

        def started(planned: PlannedRun) -> None:
            self.started += 1
            self.in_flight[planned.run_id] = cpus_needed(planned)
            self._adapter_of[planned.run_id] = planned.adapter_id
            self._maybe_launch()
            if then is not None:
                then(planned)

        return started

    def on_finish(self, then: Callable[[RunOutcome], None] | None = None) -> Callable[[RunOutcome], None]:
        """The driver's ``on_finish``: the run's CPUs are free again, then calls ``then``."""

        def finished(outcome: RunOutcome) -> None:
            self.in_flight.pop(outcome.run_id, None)
            if outcome.status == "ok" and outcome.run_id in self._adapter_of:
                self.warm.add(self._adapter_of[outcome.run_id])
            self._maybe_launch()
            if then is not None:
                then(outcome)

        return finished

    def cpu_left_over(self) -> bool:
        """Whether the measuring process may start beside the runs now: every run is submitted (no
        run starts beside it but those already in flight), some are still in flight (else it is
        measured after the matrix, at normal priority) and they leave a CPU free."""
        in_flight = sum(self.in_flight.values())
        return self.started >= self.runs and 0 < in_flight < self.cpus

    def _maybe_launch(self) -> None:
        if self.process is None and self.cpu_left_over():
            self.launch(alongside_runs=True)

    # -- the processes --------------------------------------------------------------------------------

    def launch(self, alongside_runs: bool) -> None:
        """Start the measuring process: niced while runs are (or may be) in flight."""
        if not self.adapters:
            return
        request = json.dumps({"adapters": [asdict(adapter) for adapter in self.adapters],
                              "alongside_runs": alongside_runs, "warm": sorted(self.warm)})
        self._close_errors()
        self._errors = tempfile.TemporaryFile()
        self._alongside = alongside_runs
        self._killed = False
        try:
            self.process = subprocess.Popen(
                [self.python, "-m", MODULE, request], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self._errors, env=None if self.env is None else dict(self.env),
                preexec_fn=_lowest_priority if alongside_runs else None,
                start_new_session=True,  # its own process group: stopped as a whole, never by the terminal's ^C
            )
        except OSError as error:
            self.process = None
            self._close_errors()
            self._say(f"cannot measure the development criteria ahead ({error}); `rlcompare score` measures them")

    def wait(self) -> None:
        """After the matrix: the timings (never made beside runs) and whatever the niced process has
        not finished (a matrix that left no CPU free, a measurement still in progress: it is stopped,
        keeping what it measured) are measured by a process at normal priority, as the first scoring
        would have measured them; then say what was measured (nothing when everything was cached). A
        matrix that started no run (everything resumed) measures nothing."""
        if self.process is None and not self.started:
            return
        if self.process is not None:  # started beside the runs, at nice 19
            self._kill()  # what it measured is cached; the rest is measured below at normal priority
            self._report()
        self.launch(alongside_runs=False)
        self._finish()

    def _finish(self) -> None:
        """Wait for the process at normal priority (saying so when it takes a while) and report on it."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout=QUIET_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            self._say("measuring the development criteria at normal priority now that the runs are over, so "
                      "that the report finds them cached")
            self.process.wait()
        self._report()

    def _report(self) -> Premeasured:
        """Say what the process that ended measured, did not keep or failed."""
        process = self.process
        assert process is not None and process.returncode is not None
        lines = self._output()
        done = Premeasured([line.removeprefix(NOT_KEPT) for line in lines if line.startswith(NOT_KEPT)],
                           [line.removeprefix(FAILED) for line in lines if line.startswith(FAILED)])
        # a measurement announced by a process stopped meanwhile was not made, nor one not kept
        measured = sum(line.startswith(MEASURING) for line in lines) - len(done.not_kept) - self._killed
        if done.not_kept:
            self._say(f"{_count(len(done.not_kept), 'measurement')} {'was' if len(done.not_kept) == 1 else 'were'} "
                      f"not kept ({done.not_kept[0]}); `rlcompare score` measures again")
        if measured > 0:
            when = f"beside the last runs (nice {NICENESS}, on a CPU they left free)" if self._alongside else "after the runs"
            self._say(f"made {_count(measured, 'development measurement')} of "
                      f"{', '.join(adapter.adapter for adapter in self.adapters)} {when}; they are cached for "
                      "the report")
        if done.failed or (process.returncode != 0 and not self._killed):
            last = (done.failed or lines or [f"exit status {process.returncode}"])[-1][:200]
            self._say(f"measuring the development criteria ahead failed ({last}); `rlcompare score` measures "
                      "what is missing")
        self._close_errors()
        return done

    def stop(self) -> None:
        """Stop the process and the interpreters it started; what it measured stays cached."""
        self._kill()
        self._close_errors()

    def _kill(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            self._killed = True
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            process.wait()

    def __enter__(self) -> BackgroundMeasuring:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)

    def _output(self) -> list[str]:
        """What the process wrote on stderr, line by line."""
        if self._errors is None:
            return []
        self._errors.seek(0)
        return self._errors.read().decode("utf-8", "replace").strip().splitlines()

    def _close_errors(self) -> None:
        if self._errors is not None:
            self._errors.close()
            self._errors = None


def main(argv: Sequence[str] | None = None) -> int:
    """The measuring process: ``python -m rlcompare.cli.premeasure '{"adapters": [...], "alongside_runs": B}'``."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    request: Any = json.loads(arguments[0])
    adapters = [PlannedAdapter(item["adapter"], item["framework"], item.get("environment"))
                for item in request["adapters"]]
    plugins = build_plugin_manager()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    done = premeasure(adapters, plugins.scoring_catalogue(), MeasurementCache.default(log=say),
                      bool(request.get("alongside_runs")), log=say, warm=request.get("warm") or ())
    return 1 if done.failed else 0


if __name__ == "__main__":
    sys.exit(main())
