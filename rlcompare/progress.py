"""Progress of a matrix on the terminal (stderr), one line per finished run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from rlcompare.plan import PlannedRun
    from rlcompare.runner import RunOutcome, RunSummary

STYLES = {"ok": "green", "failed": "red", "timeout": "yellow", "invalid": "magenta", "interrupted": "yellow"}


class ConsoleProgress:
    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.console = Console(stderr=True, highlight=False)

    def started(self, planned: PlannedRun) -> None:
        self.console.print(f"[dim]start[/dim] {planned.run_id}")

    def finished(self, outcome: RunOutcome) -> None:
        self.done += 1
        record = outcome.record
        style = STYLES.get(outcome.status, "white")
        parts = [f"[{style}]{outcome.status:<11}[/{style}] [{self.done}/{self.total}] {outcome.run_id}"]
        if record.final_return_mean is not None:
            parts.append(f"return {record.final_return_mean:.1f}")
        if record.throughput:
            parts.append(f"{record.throughput:.0f} steps/s")
        parts.append(f"{record.wall_seconds or 0.0:.1f} s")
        if outcome.status != "ok" and record.error:
            parts.append(f"- {record.error}")
        self.console.print("  ".join(parts))

    def close(self, summary: RunSummary, store: str) -> None:
        counts = ", ".join(f"{count} {status}" for status, count in sorted(summary.counts.items())) or "nothing run"
        skipped = f", {len(summary.skipped)} already stored" if summary.skipped else ""
        self.console.print(f"{counts}{skipped}; stored in {store}")
