"""The document formats: Markdown, HTML and LaTeX, rendered with Jinja2 from one view of a report.

:func:`report_view` lays the report out for reading (the numbers formatted as ``rlcompare score``
formats them); every template escapes every expression for its language
(:mod:`rlcompare.reporting.escape`): HTML shows nothing hidden (:func:`visible`) and autoescapes,
LaTeX and Markdown escape through ``finalize``. Text that is already valid in the target language
(formatted numbers) is marked :class:`Safe`.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import TYPE_CHECKING, Any

from rlcompare.harness.language_ids import LANGUAGE_TASK_IDS
from rlcompare.reporting import plots
from rlcompare.reporting.escape import Safe, latex, markdown, visible
from rlcompare.reporting.numbers import format_number
from rlcompare.reporting.tables import (
    FRAMEWORK_FACTS,
    contention_warnings,
    family_reference,
    grain_rows,
    gymnasium_warnings,
    imputed_reasons,
    missing_reasons,
    variant_settings,
)
from rlcompare.scoring.bootstrap import Estimate
from rlcompare.scoring.criteria import ALL_WORKLOADS

if TYPE_CHECKING:
    from jinja2 import Environment

    from rlcompare.reporting.model import Report

FIGURE_DIRECTORY = "rlcompare-report-figures"
#: How the ranking shows each parity standing (:mod:`rlcompare.parity.corrections`); the flagged one
#: is set off (bold, or red in HTML) in every format.
STANDING_TEXT = {"verified": "verified", "unverified": "unverified",
                 "unexplained": "UNEXPLAINED: differs from the reference", "not-applicable": "not applicable"}
#: The effective defaults in the order docs/parity.md lists them (others follow, sorted).
DEFAULT_KEYS = ("optimizer", "adam_eps", "initialization", "observation_normalization", "reward_normalization",
                "action_squashing", "action_bounds", "log_std_init", "learning_rate_schedule", "value_clipping",
                "grad_clip_scope", "advantage_normalization", "value_loss", "td_loss", "target_update", "double_q")


# -- numbers -----------------------------------------------------------------------------------------


def number(value: float | None) -> Safe:
    return Safe(format_number(value))


def estimate_text(estimate: Any) -> Safe | str:
    if estimate is None:
        return "missing"
    text = format_number(estimate.point)
    if estimate.n > 1:
        text += f" [{format_number(estimate.low)}, {format_number(estimate.high)}]"
    return Safe(text)


def cell_text(cell: Any) -> Safe | str:
    """A raw cell as ``rlcompare score`` prints it; a missing cell as ``missing`` (reasons are listed
    apart, escaped)."""
    if cell is None:
        return Safe("n/a")
    if cell.missing is not None:
        return Safe("missing")
    if cell.label is not None:
        return cell.label  # text from a criterion or the registry: escaped by the template
    text = format_number(cell.point)
    if cell.n > 1:
        text += f" [{format_number(cell.low)}, {format_number(cell.high)}]"
    if cell.censored:
        text += f" ({cell.censored} censored)"
    return Safe(text)


def _heading(criterion: Any) -> str:
    title = str(criterion.title or criterion.id)
    unit, direction = criterion.unit, criterion.direction
    return f"{title} ({unit}, {direction} is better)"


# -- the view -----------------------------------------------------------------------------------------


def report_view(report: Report) -> dict[str, Any]:
    """Everything the templates show, as plain data (strings still to be escaped)."""
    matrix = report.matrix
    adapters = matrix.adapters
    overall = report.table("overall")
    per_workload = [cid for cid, c in matrix.criteria.items() if c.per_workload]
    per_adapter = [cid for cid, c in matrix.criteria.items() if not c.per_workload]

    standings = matrix.parity or {}
    # in rank order, each rank with its tie mark, the tier that ranks it before the score beside the
    # score, and why a higher score ranks lower (notes): score and rank never disagree unexplained
    ranking = [{"rank": matrix.overall[row.adapter].rank_text,
                "adapter": row.adapter, "framework": row.framework,
                "score": estimate_text(matrix.overall[row.adapter].score),
                "tier": row.tier, "tied_with": row.tied_with or "",
                "valid_workloads": str(row.valid_workloads),
                "stability": Safe("-") if row.rank_stability is None or row.rank_stability != row.rank_stability
                else f"{row.rank_stability:.0%}",
                "coverage": f"{row.weight_coverage:.0%}", "failed": row.failed_workloads or "",
                "parity": STANDING_TEXT.get(standings.get(row.adapter, "unverified"), "unverified"),
                "parity_flag": standings.get(row.adapter) == "unexplained"}
               for row in overall.itertuples()]
    rank_notes = [{"adapter": row.adapter, "note": row.rank_note} for row in overall.itertuples() if row.rank_note]
    scores = []
    for cid, criterion in matrix.criteria.items():
        if not any((cid, a) in matrix.aggregates for a in adapters):
            continue
        scores.append({"id": cid, "title": str(criterion.title),
                       "unit": str(criterion.unit), "weight": Safe(f"{matrix.weights.get(cid, 0.0):.3f}"),
                       "cells": [estimate_text(matrix.aggregates[(cid, a)]["mean"]) if (cid, a) in matrix.aggregates
                                 else "missing" for a in adapters]})
    workloads_by_id = {row.workload: row for row in report.table("workloads").itertuples()}
    fidelity_rows_all = report.table("fidelity")
    native_sources = fidelity_rows_all[fidelity_rows_all["setting"] == "native.source"].drop_duplicates(
        ["workload", "adapter"], keep="last")
    workloads = []
    for workload_id in matrix.workloads:
        spec = workloads_by_id.get(workload_id)
        rows = []
        for cid in per_workload:
            cells = [matrix.cell(cid, a, workload_id) for a in adapters]
            if all(cell is None for cell in cells):
                continue
            rows.append({"id": cid, "heading": _heading(matrix.criteria[cid]), "cells": [cell_text(c) for c in cells]})
        sources = [f"{row.adapter}'s settings: {row.value}" for row in native_sources.itertuples()
                   if row.workload == workload_id]
        workloads.append({
            "id": workload_id, "rows": rows,
            "description": "" if spec is None else str(spec.description or ""),
            "facts": [] if spec is None else [*_workload_facts(spec), *sources],
        })
    development = [{"id": cid, "heading": _heading(matrix.criteria[cid]),
                    "cells": [cell_text(matrix.cell(cid, a, ALL_WORKLOADS)) for a in adapters]} for cid in per_adapter]
    notes = [{"criterion": cell.criterion, "adapter": cell.adapter,
              "workload": "all workloads" if cell.workload_id == ALL_WORKLOADS else cell.workload_id,
              "note": cell.note} for cell in matrix.cells.values() if cell.note and cell.missing is None]
    fidelity = report.table("fidelity")
    fidelity_rows = [{"workload": r.workload, "adapter": r.adapter, "setting": r.setting, "value": r.value or "",
                      "status": r.status, "native": "" if not r.native_name else f"{r.native_name} = {r.native_value}",
                      "note": r.note or ""} for r in fidelity.itertuples()]
    summary = [{"workload": r.workload, "adapter": r.adapter, "exact": str(r.exact), "approximate": str(r.approximate),
                "unsupported": str(r.unsupported), "refused": r.refused > 0}
               for r in report.table("fidelity_summary").itertuples()]
    versions: dict[str, list[str]] = {}
    for row in report.table("versions").itertuples():
        versions.setdefault(row.adapter, []).append(f"{row.distribution} {row.version or 'not installed'}")
    evidence: dict[str, list[dict[str, str]]] = {}
    for row in report.table("registry_evidence").itertuples():
        if row.fact is None or row.fact != row.fact:
            continue
        evidence.setdefault(row.framework, []).append({
            "fact": row.fact, "value": row.value or "", "source": row.source or "", "excerpt": row.excerpt or "",
            "as_of": row.as_of or "", "url": row.source if isinstance(row.source, str)
            and row.source.startswith(("https://", "http://")) and " " not in row.source else ""})
    features = report.table("feature_matrix")
    feature_rows = []
    if not features.empty:
        wide = features.pivot_table(index=["dimension", "value"], columns="framework", values="offered",
                                    aggfunc="first", dropna=False)
        for (dimension, value), row in wide.iterrows():
            marks = [_mark(row.get(f)) for f in report.frameworks]
            if all(m == "?" for m in marks):
                continue
            feature_rows.append({"feature": f"{dimension}: {value}", "marks": marks})
    return {
        "version": report.version, "generated": report.generated, "store": report.store, "digest": report.digest,
        "citation": report.citation, "profile": matrix.profile, "options": matrix.options,
        "adapters": adapters, "adapter_headers": [f"{a} ({matrix.frameworks.get(a, '?')})" for a in adapters],
        "runs": len(report.runs[report.runs["status"] != "unsupported"]), "workload_ids": matrix.workloads,
        "ranking": ranking, "rank_notes": rank_notes, "learning_first": matrix.profile.learning_first,
        "ties": any(matrix.overall[a].tied_with for a in adapters), "scores": scores,
        "overall_cells": [estimate_text(matrix.overall[a].score) for a in adapters], "workloads": workloads, "development": development,
        "notes": notes, "missing": missing_reasons(matrix), "excluded": matrix.excluded_runs,
        "imputed": imputed_reasons(matrix), "left_out": matrix.left_out,
        "errors": matrix.errors, "fidelity": fidelity_rows, "fidelity_summary": summary,
        "grains": grain_rows(report.runs),
        "versions": sorted(versions.items()), "hosts": report.table("hosts").to_dict("records"),
        "gymnasium_warnings": gymnasium_warnings(report.runs),
        "contention_warnings": contention_warnings(report.runs),
        "frameworks": report.table("frameworks").to_dict("records"), "framework_facts": FRAMEWORK_FACTS,
        "framework_ids": report.frameworks, "evidence": evidence, "features": feature_rows,
        "commands": report.commands, "criteria": report.table("criteria").to_dict("records"),
        **_parity_view(report),
        "release_series": _releases_view(report),
    }


def _releases_view(report: Report) -> list[dict[str, Any]]:
    """Per framework tracked across releases (``rlcompare run --versions``): each criterion's value
    per release, and its change from the release before with the interval that flags it."""
    table = report.table("releases")
    criteria = report.matrix.criteria
    series = []
    for adapter_id in dict.fromkeys(table["adapter"]):
        group = table[table["adapter"] == adapter_id]
        releases = list(dict.fromkeys(group["release"]))
        rows = []
        for (criterion, workload), items in group.groupby(["criterion", "workload"], sort=False):
            cells, changed = [], False
            for item in items.itertuples():
                if isinstance(item.missing, str):
                    cells.append({"value": Safe("missing"), "change": "", "changed": False})
                    continue
                value = estimate_text(Estimate(item.point, item.low, item.high, int(item.n)))
                change: Safe | str = ""
                if item.change is not None and item.change == item.change:
                    change = Safe(f"{'+' if item.change > 0 else ''}{format_number(item.change)}")
                    if item.change_low is not None and item.change_low == item.change_low:
                        change = Safe(f"{change} [{format_number(item.change_low)}, {format_number(item.change_high)}]")
                flagged = item.changed is True
                changed = changed or flagged
                cells.append({"value": value, "change": change, "changed": flagged})
            heading = _heading(criteria[criterion]) if criterion in criteria else criterion
            rows.append({"criterion": heading, "workload": "all workloads" if workload == ALL_WORKLOADS else workload,
                         "cells": cells, "changed": changed})
        series.append({"adapter": adapter_id, "releases": releases, "rows": rows,
                       "changes": sum(row["changed"] for row in rows)})
    return series



def _parity_view(report: Report) -> dict[str, Any]:
    """The parity section and the ranking's parity note: each verdict with what its variant changes
    per setting, the effective defaults side by side per family, the schedule differences."""
    standings = report.matrix.parity
    rows = []
    for r in report.table("parity").itertuples():
        names = [name for name in (r.variant or "").split(" + ") if name]
        unexplained = r.verdict == "differs" and not names
        rows.append({"adapter": r.adapter, "framework": r.framework, "family": r.family, "probe": r.probe,
                     "verdict": STANDING_TEXT["unexplained"] if unexplained else r.verdict,
                     "unexplained": unexplained, "variant": r.variant or "",
                     "settings": variant_settings(names, family_reference(report.families, r.family)),
                     "detail": r.detail or "", "versions": r.versions or ""})
    defaults = report.table("effective_defaults")
    families = []
    for family, group in defaults.groupby("family", sort=True):
        present = set(group["adapter"])
        adapters = [a for a in report.matrix.adapters if a in present] + sorted(present - set(report.matrix.adapters))
        values = {(row.adapter, row.key): row.value for row in group.itertuples()}
        keys = [k for k in DEFAULT_KEYS if k in set(group["key"])] + sorted(set(group["key"]) - set(DEFAULT_KEYS))
        families.append({"family": family, "adapters": adapters, "columns": Safe("l" * (len(adapters) + 1)),
                         "rows": [{"key": key, "cells": [values.get((a, key)) or Safe("-") for a in adapters]}
                                  for key in keys]})
    runs = report.runs
    traced = "schedule_json" in runs and bool(runs["schedule_json"].notna().any())
    return {
        "parity_probed": standings is not None, "parity_rows": rows, "parity_defaults": families,
        "parity_unexplained": [a for a in report.matrix.adapters if (standings or {}).get(a) == "unexplained"],
        "parity_unverified": [a for a in report.matrix.adapters if (standings or {}).get(a) == "unverified"],
        "schedules_traced": traced,
        "schedule_differences": [{"workload": r.workload, "adapter": r.adapter, "aspect": r.aspect, "text": r.text}
                                 for r in report.table("schedule_differences").itertuples()],
    }


def _mark(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return "?"


def _workload_facts(spec: Any) -> list[str]:
    family = f" ({spec.family})" if isinstance(spec.family, str) else ""  # gradient or evolutionary
    unit = " (generated tokens: one env step of a language task is one token)" if spec.env in LANGUAGE_TASK_IDS else ""
    facts = [f"environment {spec.env}, algorithm {spec.algorithm}{family}, "
             f"budget {format_number(spec.env_steps)} env steps{unit}"]
    if getattr(spec, "settings", None) == "native":
        facts.append("native arm: each adapter runs its own recommended settings for this environment and "
                     "algorithm (their sources and values: the fidelity report, settings native.*); the budget, "
                     "evaluation and threshold are the workload's")
    if spec.workers is not None and getattr(spec, "settings", None) != "native":
        facts.append(f"parallelism: {spec.workers} worker(s) x {spec.envs_per_worker} env(s), {spec.mode}, "
                     f"{spec.threads_per_worker} torch thread(s) per process")
    if spec.evaluation_episodes is not None:
        facts.append(f"evaluation: {spec.evaluation_episodes} episodes every "
                     f"{format_number(spec.evaluation_interval)} env steps")
    if spec.success_threshold is not None and spec.success_threshold == spec.success_threshold:
        facts.append(f"success threshold: {spec.success_threshold:g}")
    return facts


# -- templates ----------------------------------------------------------------------------------------


@functools.cache
def _environment(kind: str) -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    loader = PackageLoader("rlcompare.reporting", "templates")
    common = {"loader": loader, "undefined": StrictUndefined, "trim_blocks": True, "lstrip_blocks": True,
              "keep_trailing_newline": True}
    if kind == "html":
        from markupsafe import Markup

        def finalize(value: Any) -> Any:  # nothing hidden, then autoescape; figures and CSS are Markup
            return value if isinstance(value, Markup) else visible(value, lines=True)

        return Environment(autoescape=select_autoescape(default=True, default_for_string=True), finalize=finalize,
                           **common)
    escape = latex if kind == "latex" else markdown
    delimiters = {}
    if kind == "latex":  # LaTeX is full of braces: blocks <% %>, expressions << >>, comments <# #>
        delimiters = {"block_start_string": "<%", "block_end_string": "%>", "variable_start_string": "<<",
                      "variable_end_string": ">>", "comment_start_string": "<#", "comment_end_string": "#>"}
    env = Environment(autoescape=False, finalize=lambda value: escape("" if value is None else value),
                      **delimiters, **common)
    env.filters["safe"] = Safe
    return env


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (which then cannot close it)."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def render_markdown(report: Report) -> str:
    view = report_view(report)
    bibtex = report.citation.bibtex()
    commands = "\n".join(visible(command, lines=True) for command in report.commands)
    return _environment("md").get_template("report.md.j2").render(
        **view, bibtex=Safe(bibtex), bibtex_fence=Safe(_fence(bibtex)), commands_text=Safe(commands),
        commands_fence=Safe(_fence(commands)))


def render_html(report: Report) -> str:
    from markupsafe import Markup

    view = report_view(report)
    figures = [{"id": f.id, "title": f.title, "caption": f.caption, "svg": Markup(f.svg)}
               for f in plots.figures(report, "svg")]
    css = resources.files("rlcompare.reporting") / "templates" / "report.css"
    return _environment("html").get_template("report.html.j2").render(
        **view, figures=figures, css=Markup(css.read_text(encoding="utf-8")), bibtex=report.citation.bibtex(),
        styles=report.styles)


def render_latex(report: Report) -> dict[str, str | bytes]:
    view = report_view(report)
    figures = plots.figures(report, "pdf")
    files: dict[str, str | bytes] = {f"{FIGURE_DIRECTORY}/{f.id}.pdf": f.data for f in figures}
    files["rlcompare-report.tex"] = _environment("latex").get_template("report.tex.j2").render(
        **view, figures=[{"path": Safe(f"{FIGURE_DIRECTORY}/{f.id}.pdf"), "title": f.title, "caption": f.caption}
                         for f in figures],
        feature_columns=Safe("l" + "c" * len(view["framework_ids"])),
        adapter_columns=Safe("l" + "r" * len(view["adapters"])), score_columns=Safe("lr" + "r" * len(view["adapters"])),
    )
    return files
