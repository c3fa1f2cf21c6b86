"""The built-in report formats, registered through ``rlcompare_register_report_formats`` exactly as
an outside package registers its own. Renderers are imported when a report is rendered, so listing
formats stays light."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlcompare import hookimpl
from rlcompare.reporting.formats import Output, ReportFormat

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register
    from rlcompare.reporting.model import Report


def _lazy(target: str) -> Callable[[Report], Output]:
    module_name, _, attribute = target.partition(":")

    def render(report: Report) -> Output:
        function: Any = getattr(importlib.import_module(module_name), attribute)
        return function(report)

    render.__name__ = attribute
    render.__qualname__ = attribute
    return render


BUILTIN_FORMATS = (
    ReportFormat("md", "Markdown, README-ready: scores, per-workload tables, missing data, fidelity, citation",
                 _lazy("rlcompare.reporting.markup:render_markdown"), "rlcompare-report.md"),
    ReportFormat("html", "one self-contained HTML file: inline CSS and SVG plots, registry evidence, no network",
                 _lazy("rlcompare.reporting.markup:render_html"), "rlcompare-report.html"),
    ReportFormat("latex", "LaTeX document with booktabs tables and PDF figures (rlcompare-report-figures/)",
                 _lazy("rlcompare.reporting.markup:render_latex")),
    ReportFormat("csv", "every table as tidy CSV, one file each (rlcompare-report-csv/)",
                 _lazy("rlcompare.reporting.data_formats:render_csv")),
    ReportFormat("json", "every table, the matrix and the citation as one JSON document (with its JSON Schema)",
                 _lazy("rlcompare.reporting.data_formats:render_json")),
    ReportFormat("bibtex", "BibTeX entry citing the matrix by its content digest",
                 _lazy("rlcompare.reporting.data_formats:render_bibtex"), "rlcompare-matrix.bib"),
    ReportFormat("cff", "CITATION.cff of the matrix by its content digest",
                 _lazy("rlcompare.reporting.data_formats:render_cff"), "CITATION.cff"),
)


@hookimpl
def rlcompare_register_report_formats(register: Register) -> None:
    for report_format in BUILTIN_FORMATS:
        register.add_report_format(report_format)
