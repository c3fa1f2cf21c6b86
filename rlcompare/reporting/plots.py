"""The report's figures, drawn with matplotlib (Agg, no pyplot state): SVG for HTML, PDF for LaTeX.

Every figure plots numbers the report already holds (the scoring matrix, the runs, the curve bands
of :func:`rlcompare.reporting.tables.curve_bands`), with units on its axes and a legend, and tells
adapters apart by colour from a perceptually uniform colormap (cividis, readable in greyscale and
by colour-blind readers) *and* by marker, line style or hatch, so a greyscale print keeps them apart.
Labels from plugins and stores are escaped for matplotlib's mathtext (:func:`plot_text`).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rlcompare.reporting.escape import plot_text
from rlcompare.reporting.figure_model import COLORMAP, RenderedFigure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rlcompare.reporting.model import Report

#: Panels per figure at most (more workloads are in the tables).
MAX_PANELS = 12

RC = {
    "svg.fonttype": "none",        # text stays text: small, searchable, no embedded glyph paths
    "svg.hashsalt": "rlcompare",   # ids do not change between renders of the same figure
    "pdf.fonttype": 42,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.frameon": False,
}


#: Width of one character of tick-label text, in inches (DejaVu Sans at the sizes used here).
CHAR_INCHES = 0.065


def _new_figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    # Margins are set by hand (_margins): matplotlib's constrained layout measures every text
    # twice and took half of a report's rendering time.
    return Figure(figsize=(width, height), layout=None)


def _margins(figure: Figure, left: float, bottom: float, right: float = 0.2, top: float = 0.4,
             wspace: float = 0.0, hspace: float = 0.0) -> None:
    """Margins in inches (and gaps between panels, in inches) around a figure's axes."""
    width, height = figure.get_size_inches()
    figure.subplots_adjust(left=min(0.6, left / width), right=1 - min(0.4, right / width),
                           bottom=min(0.6, bottom / height), top=1 - min(0.4, top / height),
                           wspace=wspace, hspace=hspace)


def _label_inches(labels: Sequence[str], rotation: float = 0.0) -> float:
    """How far the longest of ``labels`` reaches from its axis, in inches."""
    import math

    longest = max((len(label) for label in labels), default=0) * CHAR_INCHES
    return longest * math.sin(math.radians(rotation)) if rotation else longest


def _grid(count: int, width: float = 4.2, height: float = 3.0) -> tuple[Figure, list[Any]]:
    columns = min(3, count)
    rows = (count + columns - 1) // columns
    figure = _new_figure(width * columns, height * rows)
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for ax in axes[count:]:
        ax.set_visible(False)
    _margins(figure, left=0.75, bottom=0.55, right=0.15, top=0.35, wspace=0.32, hspace=0.45)
    return figure, axes[:count]


# -- the figures -------------------------------------------------------------------------------------


def learning_curves(report: Report) -> tuple[Figure, str] | None:
    caption = ("Evaluation return of each adapter during training: mean over valid seeds, shaded 95% "
               "bootstrap interval over seeds at each evaluation point.")
    return _bands_figure(report, "curve_bands", "evaluation return", caption, with_threshold=True)


def accuracy_curves(report: Report) -> tuple[Figure, str] | None:
    caption = ("Greedy accuracy on the held-out problems of each language task during training (the share of "
               "evaluation episodes answered exactly right): mean over valid seeds, shaded 95% bootstrap interval "
               "over seeds at each evaluation point.")
    return _bands_figure(report, "accuracy_bands", "held-out accuracy", caption, with_threshold=False)


def _bands_figure(report: Report, table: str, quantity: str, caption: str,
                  with_threshold: bool) -> tuple[Figure, str] | None:
    bands = report.table(table)
    if bands.empty:
        return None
    styles = report.styles
    workloads = sorted(bands["workload"].unique().tolist())
    shown = workloads[:MAX_PANELS]
    figure, axes = _grid(len(shown))
    thresholds = report.thresholds
    for ax, workload in zip(axes, shown, strict=True):
        of_workload = bands[bands["workload"] == workload]
        for adapter, group in of_workload.groupby("adapter", sort=True):
            style = styles.get(adapter, {})
            ax.plot(group["env_steps"], group["mean"], color=style.get("color"), marker=style.get("marker"),
                    linestyle=style.get("linestyle"), markersize=4, label=plot_text(adapter))
            ax.fill_between(group["env_steps"], group["low"], group["high"], color=style.get("color"), alpha=0.2,
                            linewidth=0)
        if with_threshold and thresholds.get(workload) is not None:
            ax.axhline(thresholds[workload], color="black", linestyle=":", linewidth=1, label="success threshold")
        ax.set_title(plot_text(workload))
        ax.set_xlabel("env steps (harness count)")
        ax.set_ylabel(quantity)
        ax.legend(loc="lower right")
    if len(workloads) > len(shown):
        caption += f" First {len(shown)} of {len(workloads)} workloads; all are in the {table} table."
    return figure, caption


def score_heatmap(report: Report) -> tuple[Figure, str] | None:
    import numpy as np

    matrix = report.matrix
    overall = report.table("overall")
    adapters = overall["adapter"].tolist()
    criteria = [cid for cid in matrix.criteria if any((cid, a) in matrix.aggregates for a in adapters)]
    if not adapters or not criteria:
        return None
    values = np.full((len(adapters), len(criteria) + 1), np.nan)
    for i, adapter in enumerate(adapters):
        for j, cid in enumerate(criteria):
            estimate = matrix.aggregates.get((cid, adapter), {}).get("mean")
            if estimate is not None and np.isfinite(estimate.point):
                values[i, j] = estimate.point
        score = matrix.overall[adapter].score
        if score is not None:
            values[i, -1] = score.point
    labels = [plot_text(cid) + ("" if matrix.weights.get(cid, 0) > 0 else " (w=0)") for cid in criteria]
    figure = _new_figure(max(6.0, 0.55 * len(labels) + 3.5), max(2.6, 0.62 * len(adapters) + 2.2))
    ax = figure.subplots()
    top = max(1.0, float(np.nanmax(values)) if np.isfinite(values).any() else 1.0)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=COLORMAP, vmin=0.0, vmax=top, aspect="auto")
    # the rank as every output prints it (2= for a tie), starred where the tier, not the score, put it
    # below an adapter with a lower overall score (the caption and the ranking say why)
    row_labels = [plot_text(a) if matrix.overall[a].rank is None else
                  f"{plot_text(a)} (rank {matrix.overall[a].rank_text}{'*' if matrix.overall[a].rank_note else ''})"
                  for a in adapters]
    ax.set_xticks(range(len(labels) + 1), [*labels, "OVERALL"], rotation=60, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(len(adapters)), row_labels)
    _margins(figure, left=max(_label_inches(row_labels), 0.5 * _label_inches(labels[:1])) + 0.3,
             bottom=_label_inches(labels, 60) + 0.35, right=1.0, top=0.15)
    ax.axvline(len(labels) - 0.5, color="white", linewidth=3)
    ax.grid(False)
    for i, adapter in enumerate(adapters):
        for j in range(len(labels) + 1):
            value = values[i, j]
            if not np.isfinite(value):
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color="black")
                continue
            text = f"{value:.2f}"
            score = matrix.overall[adapter].score
            if j == len(labels) and score is not None and score.n > 1:
                text += f"\n[{score.low:.2f}, {score.high:.2f}]"
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="black" if value > 0.55 * top else "white")
    figure.colorbar(image, ax=ax, label="normalized score", fraction=0.03, pad=0.015)
    tier_keys = ", workloads solved and learned" if matrix.profile.learning_first else ""
    caption = ("Each criterion's normalized score, mean over workloads, and the overall score under the "
               f"{plot_text(matrix.profile.name)} profile with its 95% interval (last column). "
               "n/a: no value (see the missing cells). w=0: not weighted in this profile. Ranks order "
               f"adapters by tier (parity, valid workloads{tier_keys}), then by overall score: "
               "'=' marks a tie, '*' an adapter ranked below one with a lower score by its tier (see the ranking).")
    return figure, caption


def scaling(report: Report) -> tuple[Figure, str] | None:
    groups = report.scaling_groups
    if not groups:
        return None
    styles = report.styles
    figure, axes = _grid(min(len(groups), MAX_PANELS))
    matrix = report.matrix
    for ax, (title, members) in zip(axes, groups[:MAX_PANELS], strict=True):
        workers = [w for w, _ in members]
        for adapter in matrix.adapters:
            xs, ys, lows, highs = [], [], [], []
            for count, workload in members:
                cell = matrix.cell("throughput", adapter, workload)
                if cell is None or cell.point is None:
                    continue
                xs.append(count)
                ys.append(cell.point)
                lows.append(cell.point - (cell.low if cell.low is not None else cell.point))
                highs.append((cell.high if cell.high is not None else cell.point) - cell.point)
            if xs:
                style = styles.get(adapter, {})
                ax.errorbar(xs, ys, yerr=[lows, highs], color=style.get("color"), marker=style.get("marker"),
                            linestyle=style.get("linestyle"), capsize=3, label=plot_text(adapter))
        ideal = [(count, report.ideal_throughput.get(workload)) for count, workload in members]
        ideal = [(c, v) for c, v in ideal if v is not None]
        if ideal:
            ax.plot([c for c, _ in ideal], [v for _, v in ideal], color="black", linestyle=":", linewidth=1.5,
                    label="ideal (calibrated step cost)")
        ax.set_xticks(workers)
        ax.set_xlabel("rollout workers")
        ax.set_ylabel("throughput (env steps/s)")
        ax.set_ylim(bottom=0)
        ax.set_title(plot_text(title))
        ax.legend(loc="upper left")
    caption = ("Training throughput against rollout workers for workloads that differ only in their number of "
               "workers: mean over seeds with 95% intervals, and the ideal throughput the runs recorded.")
    return figure, caption


def performance_profiles(report: Report) -> tuple[Figure, str] | None:
    profiles = report.matrix.performance_profiles
    if not profiles:
        return None
    styles = report.styles
    figure, axes = _grid(len(profiles))
    for ax, (cid, profile) in zip(axes, sorted(profiles.items()), strict=True):
        taus = profile["taus"]
        for adapter, band in sorted(profile["adapters"].items()):
            style = styles.get(adapter, {})
            ax.plot(taus, band["point"], color=style.get("color"), linestyle=style.get("linestyle"),
                    marker=style.get("marker"), markevery=4, markersize=4, label=plot_text(adapter))
            ax.fill_between(taus, band["low"], band["high"], color=style.get("color"), alpha=0.2, linewidth=0)
        ax.set_title(plot_text(cid))
        ax.set_xlabel("normalized score threshold τ")
        ax.set_ylabel("fraction of runs with score > τ")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(loc="lower left")
    caption = ("Performance profiles (score distributions): the share of runs across workloads whose normalized "
               "score exceeds each threshold, with 95% bootstrap bands.")
    return figure, caption


def improvement(report: Report) -> tuple[Figure, str] | None:
    import numpy as np

    table = report.table("improvement")
    if table.empty:
        return None
    pairs = sorted({(x, y) for x, y in zip(table["x"], table["y"], strict=True)})
    criteria = sorted(table["criterion"].unique().tolist())
    values = np.full((len(pairs), len(criteria)), np.nan)
    texts = [["" for _ in criteria] for _ in pairs]
    for row in table.itertuples():
        i, j = pairs.index((row.x, row.y)), criteria.index(row.criterion)
        values[i, j] = row.p
        texts[i][j] = f"{row.p:.2f}\n[{row.low:.2f}, {row.high:.2f}]"
    figure = _new_figure(max(6.0, 0.9 * len(criteria) + 3.0), max(2.8, 0.6 * len(pairs) + 2.2))
    ax = figure.subplots()
    image = ax.imshow(np.ma.masked_invalid(values), cmap=COLORMAP, vmin=0.0, vmax=1.0, aspect="auto")
    column_labels = [plot_text(c) for c in criteria]
    row_labels = [f"P({plot_text(x)} > {plot_text(y)})" for x, y in pairs]
    ax.set_xticks(range(len(criteria)), column_labels, rotation=60, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(len(pairs)), row_labels)
    _margins(figure, left=max(_label_inches(row_labels), 0.5 * _label_inches(column_labels[:1])) + 0.3,
             bottom=_label_inches(column_labels, 60) + 0.35, right=1.1, top=0.15)
    ax.grid(False)
    for i in range(len(pairs)):
        for j in range(len(criteria)):
            if np.isfinite(values[i, j]):
                ax.text(j, i, texts[i][j], ha="center", va="center", fontsize=6.5,
                        color="black" if values[i, j] > 0.55 else "white")
            else:
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=6.5)
    figure.colorbar(image, ax=ax, label="P(improvement)", fraction=0.03, pad=0.015)
    caption = ("Probability that the first adapter's normalized score beats the second's on a workload they "
               "share (Mann-Whitney over seeds, averaged over workloads), with 95% intervals; 0.5 is a tie.")
    return figure, caption


RESOURCE_CRITERIA = (("startup_latency", "start-up (s)"), ("throughput", "throughput (env steps/s)"),
                     ("peak_memory", "peak memory (MiB)"))


def resources(report: Report) -> tuple[Figure, str] | None:
    import numpy as np

    matrix = report.matrix
    present = [(cid, label) for cid, label in RESOURCE_CRITERIA if cid in matrix.criteria]
    workloads = matrix.workloads[:MAX_PANELS * 2]
    if not present or not workloads:
        return None
    styles = report.styles
    adapters = matrix.adapters
    workload_labels = [plot_text(w) for w in workloads]
    bottom = _label_inches(workload_labels, 20) + 0.35
    figure = _new_figure(min(11.0, max(4.5, 0.4 * len(workloads) * max(1, len(adapters)) + 1.5)),
                         2.2 * len(present) + bottom)
    axes = figure.subplots(len(present), 1, squeeze=False)[:, 0]
    _margins(figure, left=1.0, bottom=bottom, right=0.2, top=0.45, hspace=0.35)
    width = 0.8 / max(1, len(adapters))
    x = np.arange(len(workloads))
    for ax, (cid, label) in zip(axes, present, strict=True):
        for k, adapter in enumerate(adapters):
            points, errors = [], [[], []]
            for workload in workloads:
                cell = matrix.cell(cid, adapter, workload)
                point = cell.point if cell is not None and cell.point is not None else np.nan
                points.append(point)
                low = cell.low if cell is not None and cell.low is not None else point
                high = cell.high if cell is not None and cell.high is not None else point
                errors[0].append(max(0.0, point - low) if np.isfinite(point) else 0.0)
                errors[1].append(max(0.0, high - point) if np.isfinite(point) else 0.0)
            style = styles.get(adapter, {})
            offsets = x - 0.4 + width * (k + 0.5)
            ax.bar(offsets, np.nan_to_num(points), width, yerr=errors, color=style.get("color"),
                   hatch=style.get("hatch"), edgecolor="black", linewidth=0.6, capsize=2, label=plot_text(adapter))
            for offset, point in zip(offsets, points, strict=True):
                if not np.isfinite(point):
                    ax.text(offset, 0, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
        ax.set_ylabel(label)
        ax.set_xticks(x, workload_labels if ax is axes[-1] else [""] * len(workloads), rotation=20, ha="right",
                      rotation_mode="anchor")
        ax.grid(axis="x", visible=False)
    axes[0].legend(ncols=min(6, len(adapters)), loc="lower left", bbox_to_anchor=(0, 1.0))
    caption = ("Start-up latency (process launch to first training step), training throughput and peak resident "
               "memory of the run's process tree per workload: mean over valid seeds with 95% intervals.")
    return figure, caption


#: (id, title, drawing function), in report order.
FIGURES: tuple[tuple[str, str, Callable[[Report], tuple[Figure, str] | None]], ...] = (
    ("scores", "Scoring matrix", score_heatmap),
    ("learning-curves", "Learning curves", learning_curves),
    ("accuracy-curves", "Held-out accuracy (language tasks)", accuracy_curves),
    ("resources", "Start-up, throughput and memory", resources),
    ("scaling", "Throughput against workers", scaling),
    ("performance-profiles", "Performance profiles", performance_profiles),
    ("improvement", "Probability of improvement", improvement),
)

_SVG_ID = re.compile(r'(\bid="|href="#|url\(#)')


def figures(report: Report, file_format: str) -> list[RenderedFigure]:
    """The report's figures as ``svg`` or ``pdf``, rendered once per report and format."""
    if file_format not in report.rendered_figures:
        report.rendered_figures[file_format] = render_figures(report, file_format)
    return report.rendered_figures[file_format]


def render_figures(report: Report, file_format: str) -> list[RenderedFigure]:
    """Every figure that has data, rendered to ``svg`` (inline-ready: no XML prolog, ids prefixed
    per figure so that several can share one page) or ``pdf``."""
    import matplotlib

    figures = []
    with matplotlib.rc_context(RC):
        for figure_id, title, draw in FIGURES:
            drawn = draw(report)
            if drawn is None:
                continue
            figure, caption = drawn
            buffer = io.BytesIO()
            metadata = {"Date": None} if file_format == "svg" else {"CreationDate": None, "Creator": "rlcompare"}
            figure.savefig(buffer, format=file_format, metadata=metadata)
            data = buffer.getvalue()
            if file_format == "svg":
                data = _inline_svg(data.decode("utf-8"), figure_id).encode("utf-8")
            figures.append(RenderedFigure(figure_id, title, caption, data))
    return figures


def _inline_svg(text: str, prefix: str) -> str:
    start = text.find("<svg")
    text = text[start:]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    return _SVG_ID.sub(lambda m: m.group(1) + prefix + "-", text)
