"""A one-screen summary of a report for the terminal: the ranking with its intervals and ties, and
per adapter the figures a reader checks first (mean over workloads of steps and seconds to the
threshold, final return, training throughput), then where the full report is."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rlcompare.reporting.escape import terminal
from rlcompare.reporting.model import Report
from rlcompare.reporting.numbers import format_number

#: The raw figures shown beside each adapter: (criterion id, column heading).
SUMMARY_CRITERIA = (("time_to_threshold_steps", "steps to threshold"),
                    ("time_to_threshold_seconds", "s to threshold"),
                    ("final_return", "final return"), ("throughput", "steps/s"))


#: Rank notes shown under the table, and the longest line the summary prints.
MAX_RANK_NOTES = 3
MAX_LINE = 160


def _shortened(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _mean_point(cells: Any, criterion: str, adapter: str) -> float | None:
    rows = cells[(cells["criterion"] == criterion) & (cells["adapter"] == adapter)]
    points = [float(p) for p in rows["point"] if p is not None and not (isinstance(p, float) and math.isnan(p))]
    return sum(points) / len(points) if points else None


def summary_lines(report: Report, paths: Sequence[str] = ()) -> list[str]:
    """The ranking and the headline figures of ``report`` in at most about 20 short lines."""
    matrix = report.matrix
    overall = report.table("overall")
    cells = report.table("cells")
    workloads = sorted({str(w) for w in report.runs["workload_id"]}) if not report.runs.empty else []
    header = ["rank", "adapter", "overall [95% CI]", *(title for _, title in SUMMARY_CRITERIA)]
    rows = []
    for row in overall.itertuples(index=False):
        rank = f"{row.rank}{'=' if row.tied else ''}"
        score = "-" if row.score is None else (
            f"{format_number(row.score)} [{format_number(row.low)}, {format_number(row.high)}]")
        figures = []
        for criterion, _ in SUMMARY_CRITERIA:
            value = _mean_point(cells, criterion, row.adapter)
            figures.append("-" if value is None else format_number(value))
        rows.append([rank, terminal(row.adapter), score, *figures])
    widths = [max(len(str(line[i])) for line in [header, *rows]) for i in range(len(header))]
    lines = [f"{len(report.runs)} runs, {len(matrix.adapters)} adapters, {len(workloads)} workload(s) "
             f"({terminal(', '.join(workloads))}); profile {terminal(matrix.profile.name)}; digest "
             f"{report.digest[:19]}…",
             "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)) for line in rows]
    lines.append("'=' shares a rank: the bootstrap does not separate the overall scores. Figures are means over "
                 "workloads and seeds.")
    # why a higher score ranks lower (parity standing, workloads solved): the first few, on a line each
    notes = [(str(row.adapter), str(row.rank_note)) for row in overall.itertuples(index=False) if row.rank_note]
    for adapter, why in notes[:MAX_RANK_NOTES]:
        lines.append(_shortened(f"{terminal(adapter)}: {terminal(why)}", MAX_LINE))
    if len(notes) > MAX_RANK_NOTES:
        lines.append(f"... and {len(notes) - MAX_RANK_NOTES} more: why each adapter ranks where it does is in the report")
    if paths:
        lines.append(f"Full report: {terminal(paths[0])}")
    return lines
