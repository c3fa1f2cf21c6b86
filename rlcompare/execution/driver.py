"""The driver: runs a plan on a backend and stores every run as soon as it ends.

The driver is backend-agnostic and the only writer of the store. Nothing finished is lost: a run's
files live in its run directory beside the store (:mod:`rlcompare.harness.run_directory`) until the store has
committed them; a run that finished while its driver was gone, or that could not be stored (disk
full, store locked), is stored by the next ``run`` on the store. SIGINT and SIGTERM stop the matrix
cleanly: in-flight runs are stopped and stored as ``interrupted`` with the evaluation points they
finished.

Drivers that meet on one store share the work: each claims a run in the store before starting it
(:mod:`rlcompare.store.claims`) and leaves alone a run another live driver claimed, or one another
driver stored ok since this one started (any stored ok run, with ``--resume``). Every attempt is
marked with its own run directory, so cleanup never reaches another driver's processes, and a
stored ok attempt is never displaced by a later one that did not finish (both are kept).
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlcompare.errors import InvalidWorkloadError
from rlcompare.execution.backend import Backend, Ending, cpus_needed
from rlcompare.harness.calibration import CALIBRATED_ENV_ID, ideal_throughput
from rlcompare.harness.protocol import CurvePoint, Origin, RunResult, RunSpec
from rlcompare.harness.run_directory import RunDirectory, orphaned, remove_root_if_empty
from rlcompare.harness.validity import judge_run, solved_at
from rlcompare.parity.schedules import schedule_differences
from rlcompare.plan.matrix import Plan, PlannedRun, RefusedPair, run_id_for
from rlcompare.spec.builtin_families import builtin_families
from rlcompare.spec.families import Families
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.claims import ClaimOutcome, ClaimOwner
from rlcompare.store.records import RunRecord
from rlcompare.store.sqlite_store import Store, StoreWriteError

#: Longest wait between two looks at the runs in flight.
POLL_SECONDS = 0.1


@dataclass
class RunOutcome:
    run_id: str
    status: str
    record: RunRecord


@dataclass
class RunSummary:
    outcomes: list[RunOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: Runs another live driver on the same store had claimed: (run id, which driver); it runs them.
    taken: list[tuple[str, str]] = field(default_factory=list)
    #: Runs whose new attempt did not finish while a finished one was stored: that one stays the
    #: run's result, and the new attempt is kept beside it (``rlcompare show run``).
    kept_earlier: list[str] = field(default_factory=list)
    #: Runs a previous driver left in their run directories (finished, or interrupted), stored now;
    #: they do not count towards this matrix's exit status.
    recovered: list[RunOutcome] = field(default_factory=list)
    #: Runs whose result could not be stored: (run id, run directory, why); ``--resume`` stores them.
    unstored: list[tuple[str, str, str]] = field(default_factory=list)
    #: The signal that stopped the matrix, if one did.
    interrupted_by: int | None = None

    @property
    def counts(self) -> Counter[str]:
        return Counter(outcome.status for outcome in self.outcomes)

    @property
    def all_ok(self) -> bool:
        return all(outcome.status == "ok" for outcome in self.outcomes) and not self.unstored


@dataclass
class _InFlight:
    planned: PlannedRun
    directory: RunDirectory
    launched_at: float
    handle: Any
    #: The most runs this driver had in flight at once while this one ran (itself included).
    peak_in_flight: int = 1
    #: The other runs trained in this run's program (``parallelism.seeds_per_program``), each with its
    #: own directory: stored from it when the program ends.
    companions: list[tuple[PlannedRun, RunDirectory]] = field(default_factory=list)


def run_spec(planned: PlannedRun, directory: RunDirectory, launched_at: float) -> RunSpec:
    """What the worker receives (plain data: the resolved workload, the adapter class as
    ``module:qualname``, its fidelity report, the distributions to record), plus what a driver needs
    to store the run later. The worker builds no plugin manager and validates nothing."""
    return RunSpec(
        run_id=planned.run_id, adapter=planned.adapter_id, adapter_class=planned.adapter_class,
        framework=planned.framework, seed=planned.seed, workload=planned.workload.to_dict(),
        workload_derived=planned.workload.derived(), run_dir=str(directory.path), launched_at=launched_at,
        fidelity=tuple(planned.fidelity), distributions=tuple(planned.distributions),
        tolerance=planned.budget_tolerance, origin=planned.origin, environment=planned.environment,
        parity=planned.parity, framework_modules=planned.framework_modules,
    )


class Driver:
    """Runs a plan on a backend, storing each run as it ends."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        on_finish: Callable[[RunOutcome], None] | None = None,
        on_start: Callable[[PlannedRun], None] | None = None,
        families: Families | None = None,
    ) -> None:
        self.store = store
        self.backend = backend
        self.on_finish = on_finish
        self.on_start = on_start
        #: The families the workloads of runs left behind by another driver may name.
        self.families = builtin_families() if families is None else families
        self._stop_signal: int | None = None
        self._started_at = time.time()
        #: This driver, as it claims runs in the store.
        self.owner = ClaimOwner.this_process()

    def run(self, plan: Plan, resume: bool = False) -> RunSummary:
        summary = RunSummary()
        self._started_at = time.time()
        try:
            self._recover(summary)
            for refused in plan.refused:
                self._store(_refused_record(refused), [], None, summary)
            return self._run(plan, resume, summary)
        finally:
            self.store.release_claims(self.owner)  # e.g. runs not started after a signal
            remove_root_if_empty(self.store.path)  # no empty folder left beside the store

    def _run(self, plan: Plan, resume: bool, summary: RunSummary) -> RunSummary:
        done = self.store.finished_digests() if resume else {}
        pending: list[PlannedRun] = []
        for planned in plan.runs:
            if done.get(planned.run_id) == planned.workload.digest:
                summary.skipped.append(planned.run_id)
            else:
                pending.append(planned)
        if not pending:
            return summary
        companions_of = group_programs(pending)  # several seeds in one program: the first stands for them
        pending = round_robin([planned for planned in pending if planned.run_id in companions_of])
        self.backend.open()
        active: list[_InFlight] = []
        restore = self._catch_signals()
        try:
            capacity = max(1, self.backend.capacity())
            while ((pending and not summary.unstored) or active) and self._stop_signal is None:
                while pending and len(active) < capacity and not summary.unstored and self._stop_signal is None:
                    leader = pending.pop(0)
                    started = self._claim_and_submit(leader, resume, summary, companions_of[leader.run_id])
                    if started is None:
                        continue
                    active.append(started)
                    for run in active:
                        run.peak_in_flight = max(run.peak_in_flight, len(active))
                news = {id(handle) for handle in self.backend.wait([run.handle for run in active], POLL_SECONDS)}
                for run in [run for run in active if id(run.handle) in news]:
                    ending = self.backend.poll(run.handle)
                    if ending is not None:
                        active.remove(run)
                        summary.outcomes.extend(self._finish(run, ending, summary))
            if self._stop_signal is not None:
                reason = f"interrupted by {signal.Signals(self._stop_signal).name}"
                for run in active:
                    ending = self.backend.cancel(run.handle, "interrupted", reason)
                    summary.outcomes.extend(self._finish(run, ending, summary))
                active.clear()
                summary.interrupted_by = self._stop_signal
        finally:
            for run in active:  # an unexpected error: stop what runs; its files stay for recovery
                try:
                    self.backend.cancel(run.handle, "interrupted", "its driver failed")
                except Exception:  # noqa: BLE001 - best effort while another error propagates
                    pass
            self.backend.close()
            restore()
        return summary

    def _catch_signals(self) -> Callable[[], None]:
        """SIGINT and SIGTERM stop the matrix after storing what is in flight; a second signal
        while that happens is ignored. Only possible (and needed) in the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def stop(signum: int, _frame: Any) -> None:
            if self._stop_signal is None:
                self._stop_signal = signum

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore

    def _claim_and_submit(self, planned: PlannedRun, resume: bool, summary: RunSummary,
                          companions: Sequence[PlannedRun] = ()) -> _InFlight | None:
        """Claim the run (and the companions of its program) in the store, then start the ones claimed as
        one program; None when another driver has them all or did them."""
        claimed = [run for run in (self._claim(member, resume, summary) for member in (planned, *companions))
                   if run is not None]
        if not claimed:
            return None
        (leader, directory), *others = claimed
        return self._submit(leader, directory, others)

    def _claim(self, planned: PlannedRun, resume: bool, summary: RunSummary) -> tuple[PlannedRun, RunDirectory] | None:
        """Claim one run in the store with a directory of its own; None when another driver has it or did it."""
        directory = RunDirectory.create(self.store.path, planned.run_id)
        try:
            claim = self.store.claim_run(planned.run_id, planned.workload.digest, str(directory.path), self.owner,
                                         done_since=float("-inf") if resume else self._started_at)
        except BaseException:
            directory.remove()
            raise
        if claim.outcome is not ClaimOutcome.CLAIMED:
            directory.remove()
            if claim.outcome is ClaimOutcome.DONE:
                summary.skipped.append(planned.run_id)
            else:
                holder = claim.holder.describe() if claim.holder is not None else "another driver"
                summary.taken.append((planned.run_id, holder))
            return None
        return planned, directory

    def _submit(self, planned: PlannedRun, directory: RunDirectory,
                companions: Sequence[tuple[PlannedRun, RunDirectory]] = ()) -> _InFlight:
        launched_at = time.time()
        for companion, companion_directory in companions:  # each its own spec, so a later driver can store it
            companion_directory.write_spec(run_spec(companion, companion_directory, launched_at))
        spec = run_spec(planned, directory, launched_at)
        if companions:
            spec = dataclasses.replace(spec, companions=tuple(
                {"run_id": companion.run_id, "seed": companion.seed, "run_dir": str(companion_directory.path)}
                for companion, companion_directory in companions))
        directory.write_spec(spec)
        handle = self.backend.submit(planned, directory)
        if self.on_start is not None:
            for member in (planned, *(companion for companion, _ in companions)):
                self.on_start(member)
        return _InFlight(planned, directory, launched_at, handle, companions=list(companions))

    def _finish(self, run: _InFlight, ending: Ending, summary: RunSummary) -> list[RunOutcome]:
        outcomes = [self._finish_one(run, ending, summary)]
        for planned, directory in run.companions:  # the program's other runs: their results, its ending
            result = directory.read_result()
            shared = dataclasses.replace(ending, result=result, earlier_attempts=[], output_tail=ending.output_tail)
            if result is None and shared.stop_status is None:
                shared.stop_status, shared.stop_reason = "failed", "its program ended without this run's result"
            companion = _InFlight(planned, directory, run.launched_at, run.handle, run.peak_in_flight)
            outcomes.append(self._finish_one(companion, shared, summary))
        return outcomes

    def _finish_one(self, run: _InFlight, ending: Ending, summary: RunSummary) -> RunOutcome:
        for reason, points in ending.earlier_attempts:  # kept beside the final attempt, never lost
            earlier = Ending(result=None, stop_status="interrupted", stop_reason=reason)
            self._store(build_record(run.planned, earlier, points, run.launched_at), points, run.directory, summary,
                        keep_directory=True)
        curve = run.directory.read_progress()
        record = build_record(run.planned, ending, curve, run.launched_at, runs_in_flight=run.peak_in_flight)
        self._store(record, curve, run.directory, summary)
        outcome = RunOutcome(run.planned.run_id, record.status, record)
        if self.on_finish is not None:
            self.on_finish(outcome)
        return outcome

    def _store(self, record: RunRecord, curve: Sequence[CurvePoint], directory: RunDirectory | None,
               summary: RunSummary, keep_directory: bool = False) -> bool:
        """Commit the run; on failure keep its directory (the next run on the store commits it)."""
        try:
            current = self.store.save_run(record, curve, attempt=str(directory.path) if directory is not None else None)
        except StoreWriteError as error:
            where = str(directory.path) if directory is not None else "(refused pair, planned again)"
            summary.unstored.append((record.run_id, where, str(error)))
            return False
        if keep_directory:
            return True
        if not current:
            summary.kept_earlier.append(record.run_id)
        if directory is not None:
            directory.remove()
        return True

    def _recover(self, summary: RunSummary) -> None:
        """Store the runs of a previous driver that died or could not store them: finished ones
        with their result (judged as usual), unfinished ones as interrupted with their points."""
        for found in list(orphaned(self.store.path)):
            directory = found.claim()
            if directory is None:
                continue  # another driver took it over first
            spec = directory.read_spec()
            if spec is None:
                continue  # a spec this version cannot read is left for the user
            try:
                planned = planned_from_spec(spec, self.families)
            except InvalidWorkloadError:
                continue
            result = directory.read_result()
            ending = Ending(result=result, output_tail=directory.output_tail())
            if result is None:
                ending.stop_status, ending.stop_reason = "interrupted", "its driver stopped before the run ended"
            else:
                ending.wall_seconds = result.worker_seconds or None
            curve = directory.read_progress()
            record = build_record(planned, ending, curve, spec.launched_at)
            if self._store(record, curve, directory, summary):
                summary.recovered.append(RunOutcome(record.run_id, record.status, record))


def planned_from_spec(spec: RunSpec, families: Families | None = None) -> PlannedRun:
    """The planned run a run directory's spec describes (to store a run its driver left behind);
    its workload may name any of ``families`` (default: the built-in ones)."""
    workload = workload_from_dict(spec.workload, f"run {spec.run_id}", families)
    return PlannedRun(workload, spec.adapter, spec.framework, spec.seed, spec.tolerance, spec.origin,
                      spec.adapter_class, spec.fidelity, spec.distributions, spec.environment, spec.parity)


#: What a run that ended before its worker wrote a result is stored with.
_NO_RESULT = RunResult(run_id="?", status="failed")


def group_programs(runs: Sequence[PlannedRun]) -> dict[str, list[PlannedRun]]:
    """The runs that train together (``parallelism.seeds_per_program`` > 1): the runs of one adapter and
    one workload, in seed order, in groups of that many (the last may be smaller; after a resume, the
    seeds still to run). Returns each group's first run id with the others of its group; a run alone
    maps to no companions."""
    groups: dict[str, list[PlannedRun]] = {}
    together: dict[tuple[str, str], list[PlannedRun]] = {}
    for planned in runs:
        size = getattr(planned.workload.parallelism, "seeds_per_program", 1)
        if size > 1:
            together.setdefault((planned.adapter_id, planned.workload.digest), []).append(planned)
        else:
            groups[planned.run_id] = []
    for members in together.values():
        members.sort(key=lambda planned: planned.seed)
        size = members[0].workload.parallelism.seeds_per_program
        for start in range(0, len(members), size):
            leader, *others = members[start:start + size]
            groups[leader.run_id] = others
    return groups


def round_robin(runs: Sequence[PlannedRun]) -> list[PlannedRun]:
    """``runs`` taken one adapter at a time in turn (adapters in order of first appearance, each
    adapter's runs in their planned order), so the machine's load spreads evenly over the adapters
    instead of one adapter's seeds running back to back (their timings are then compared under the
    same contention)."""
    queues: dict[str, list[PlannedRun]] = {}
    for planned in runs:
        queues.setdefault(planned.adapter_id, []).append(planned)
    ordered: list[PlannedRun] = []
    for turn in range(max((len(queue) for queue in queues.values()), default=0)):
        ordered.extend(queue[turn] for queue in queues.values() if turn < len(queue))
    return ordered


def build_record(planned: PlannedRun, ending: Ending, curve: Sequence[CurvePoint], launched_at: float,
                 runs_in_flight: int | None = None) -> RunRecord:
    """The stored record of a run: its result, curve and measurements, judged for validity.
    ``runs_in_flight``: the most runs its driver had in flight at once while it ran (None: unknown,
    e.g. a run left by a driver that died)."""
    workload = planned.workload
    tolerance = planned.budget_tolerance
    result = ending.result or _NO_RESULT
    status = ending.stop_status or result.status
    error = ending.stop_reason or result.error
    training = result.training_seconds or 0.0
    steps = result.env_steps
    framework_steps = result.framework_env_steps
    verdict = None
    if status == "ok":
        verdict = judge_run(
            env_steps=steps, framework_env_steps=framework_steps, budget=workload.env_steps, tolerance=tolerance,
            evaluation_returns=[point.return_mean for point in curve],
            final_return=result.final_return_mean,
            solved_at=solved_at([(point.grid_steps, point.env_steps, point.return_mean) for point in curve],
                                workload.success_threshold, workload.stop_when_solved),
        )
        if not verdict.valid:
            status, error = "invalid", "; ".join(verdict.reasons)
    wall = ending.wall_seconds
    return RunRecord(
        **_identity(workload, planned.adapter_id, planned.framework, planned.seed, planned.origin),
        status=status,
        error=error,
        started_at=launched_at,
        finished_at=launched_at + (wall or 0.0),
        wall_seconds=wall,
        startup_seconds=result.startup_seconds,
        training_seconds=result.training_seconds,
        evaluation_seconds=result.evaluation_seconds,
        env_steps=steps,
        framework_env_steps=framework_steps,
        step_count_gap=abs(steps - framework_steps) if steps is not None and framework_steps is not None else None,
        step_count_tolerance=tolerance.count_gap_steps,
        budget_granularity=tolerance.granularity,
        budget_overshoot_steps=tolerance.overshoot_steps,
        episodes=result.episodes,
        evaluations=len(curve),
        throughput=(steps / training) if steps and training > 0 else None,
        ideal_throughput=workload_ideal_throughput(workload),
        cpu_seconds=ending.cpu_seconds,
        peak_rss_bytes=ending.peak_rss_bytes,
        cpus_needed=cpus_needed(planned),
        cpus_given=ending.cpus_given,
        load_start=result.load_start,
        load_end=result.load_end,
        load_cpus=result.load_cpus,
        cpu_steal=result.cpu_steal,
        runs_in_flight=runs_in_flight,
        final_return_mean=result.final_return_mean if status == "ok" else None,
        final_return_std=result.final_return_std if status == "ok" else None,
        success_threshold=workload.success_threshold,
        budget_env_steps=workload.env_steps,
        torch_threads=result.torch_threads,
        host_fingerprint=result.host.get("fingerprint"),
        versions_json=result.versions if ending.result is not None else None,
        host_json=result.host if ending.result is not None else None,
        fidelity_json=None if result.fidelity is None else [*result.fidelity, *schedule_entries(workload, result)],
        native_config_json=result.native_config,
        validity_json=None if verdict is None else verdict.to_dict(),
        environment_key=None if planned.environment is None else planned.environment.key,
        environment_json=None if planned.environment is None else planned.environment.to_dict(),
        schedule_json=result.schedule,
        parity_json=None if planned.parity is None else list(planned.parity),
        development_json=result.development,
        traceback=result.traceback or (ending.output_tail if status not in ("ok", "invalid") else None),
        note=ending.note,
        seeds_in_program=result.seeds_in_program if (result.seeds_in_program or 1) > 1 else None,
    )


def schedule_entries(workload: Workload, result: RunResult) -> list[dict[str, Any]]:
    """Fidelity entries for how the schedule the framework followed (traced from inside it)
    departs from the one the canonical settings define: the run's fidelity report says what ran."""
    return [{"setting": f"schedule.{difference.aspect}", "value": difference.canonical, "status": "approximate",
             "native_name": None, "native_value": difference.measured, "note": f"traced: {difference.text}"}
            for difference in schedule_differences(workload.to_dict(), result.schedule)]


def workload_ideal_throughput(workload: Workload) -> float | None:
    """Known ideal env steps/s on a calibrated environment (None elsewhere)."""
    if workload.env != CALIBRATED_ENV_ID:
        return None
    step_cost_ms = float(workload.env_kwargs.get("step_cost_ms", 1.0))
    return ideal_throughput(step_cost_ms, workload.parallelism.workers)


def _refused_record(refused: RefusedPair) -> RunRecord:
    workload = refused.workload
    return RunRecord(
        **_identity(workload, refused.adapter_id, refused.framework, -1, refused.origin),
        status="unsupported",
        error=refused.reason,
        success_threshold=workload.success_threshold,
        budget_env_steps=workload.env_steps,
    )


def _identity(workload: Workload, adapter_id: str, framework: str, seed: int, origin: Origin) -> dict[str, Any]:
    """The fields that say which run a record is and which code produced it."""
    return {
        "run_id": run_id_for(workload.id, adapter_id, seed), "workload_id": workload.id,
        "workload_digest": workload.digest, "adapter": adapter_id, "framework": framework,
        "algorithm": workload.algorithm, "env_id": workload.env, "seed": seed,
        "adapter_plugin": origin.plugin, "adapter_distribution": origin.distribution,
        "adapter_version": origin.version, "workload_json": workload.to_dict(),
    }
