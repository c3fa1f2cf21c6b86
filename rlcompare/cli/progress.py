"""Progress of a matrix on stderr: on a terminal, a live bar (done / failed / running / remaining,
time left) with one line per finished run above it; otherwise plain lines, one per event, never
wrapped, for logs and CI. Every name and error in a line is one line with nothing hidden
(:func:`rlcompare.reporting.escape.terminal`): a run's error text cannot move the cursor or start a
line of its own."""

from __future__ import annotations

import sys
import time
from typing import IO, TYPE_CHECKING, Any

from rlcompare.cli.terminal import raw_stream, terminal_console
from rlcompare.execution.backend import cpus_needed
from rlcompare.reporting.escape import terminal

if TYPE_CHECKING:
    from rlcompare.execution.backend import Backend
    from rlcompare.execution.driver import RunOutcome, RunSummary
    from rlcompare.plan.matrix import Plan, PlannedRun

def note(message: str) -> None:
    """One ``rlcompare: MESSAGE`` line on stderr: what a command is doing (building an environment,
    measuring a framework) while it would otherwise say nothing."""
    print(f"rlcompare: {terminal(message)}", file=sys.stderr)


STYLES = {"ok": "green", "failed": "red", "timeout": "yellow", "invalid": "magenta", "interrupted": "yellow"}


class ConsoleProgress:
    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.done = self.failed = self.running = 0
        self.started_at = time.monotonic()
        self.live = bool(getattr(raw_stream(self.stream), "isatty", lambda: False)())
        self._progress: Any = None
        self._task: Any = None
        if self.live and total:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            console = terminal_console(self.stream, markup=True)
            self._progress = Progress(TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.fields[counts]}"), TimeRemainingColumn(), console=console,
                                      transient=True)
            self._task = self._progress.add_task("runs", total=total, counts=self._counts())
            self._progress.start()

    def _counts(self) -> str:
        remaining = self.total - self.done - self.running
        return f"{self.done - self.failed} ok, {self.failed} not ok, {self.running} running, {remaining} to go"

    def _line(self, text: str, markup: str | None = None) -> None:
        if self._progress is not None:
            self._progress.console.print(markup if markup is not None else _escape(text), soft_wrap=True)
        else:
            print(text, file=self.stream, flush=True)

    def warn_oversubscribed(self, plan: Plan, backend: Backend) -> None:
        """Say up front which runs will keep more CPUs busy than they are given (contention)."""
        given = backend.cpus_given()
        if given is None:
            return
        crowded = [run for run in plan.runs if cpus_needed(run) > given]
        if crowded:
            workloads = sorted({terminal(run.workload.id) for run in crowded})
            self._line(f"note: {len(crowded)} runs ({', '.join(workloads)}) keep more CPUs busy than the "
                       f"{given} each gets here: their throughput measures contention, not the framework")

    def started(self, planned: PlannedRun) -> None:
        self.running += 1
        run_id = terminal(planned.run_id)
        self._line(f"start {run_id}", f"[dim]start[/dim] {_escape(run_id)}")
        self._update()

    def finished(self, outcome: RunOutcome) -> None:
        self.running = max(0, self.running - 1)
        self.done += 1
        if outcome.status != "ok":
            self.failed += 1
        record = outcome.record
        parts = [f"[{self.done}/{self.total}] {outcome.run_id}"]
        if record.final_return_mean is not None:
            parts.append(f"return {record.final_return_mean:.1f}")
        if record.throughput:
            parts.append(f"{record.throughput:.0f} steps/s")
        parts.append(f"{record.wall_seconds or 0.0:.1f} s")
        if outcome.status != "ok" and record.error:
            parts.append(f"- {record.error}")
        if record.note:
            parts.append(f"({record.note})")
        text = terminal("  ".join(parts))
        style = STYLES.get(outcome.status, "white")
        self._line(f"{outcome.status:<11} {text}", f"[{style}]{outcome.status:<11}[/{style}] {_escape(text)}")
        self._update()

    def _update(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done, counts=self._counts())

    def close(self, summary: RunSummary, store: str) -> None:
        if self._progress is not None:
            self._progress.stop()
        counts = ", ".join(f"{count} {status}" for status, count in sorted(summary.counts.items())) or "nothing run"
        skipped = f", {len(summary.skipped)} already stored" if summary.skipped else ""
        elapsed = time.monotonic() - self.started_at
        print(f"{counts}{skipped}; stored in {terminal(store)} ({elapsed:.0f} s)", file=self.stream, flush=True)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
