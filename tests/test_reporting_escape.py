"""Every string from a plugin, a workload or a store is escaped for HTML, LaTeX and Markdown, and
never injects structure: names and texts carrying <script>, &, %, _, $, #, braces and backslashes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rlcompare.reporting.escape import latex, markdown, plot_text
from rlcompare.reporting.formats import write_report
from rlcompare.reporting.model import build_report
from rlcompare.scoring.engine import ScoringOptions
from rlcompare.scoring.profiles import get_profile
from tests.reporting_support import HOSTILE, report_plugins, synthetic_store

HOSTILE_ADAPTER = "be<script>ta&%_$#{}\\"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    store = synthetic_store(root / "store.db", hostile=True)
    plugins = report_plugins()
    report = build_report(store, plugins.reporting_catalogue(), get_profile("balanced"), ScoringOptions(reps=200))
    write_report(report, root / "out", [plugins.report_formats[f] for f in ("html", "md", "latex", "bibtex")])
    return root / "out"


def test_escape_functions() -> None:
    assert latex("a_b & 100% $x$ #1 {y} \\z ~^") == (
        r"a\_b \& 100\% \$x\$ \#1 \{y\} \textbackslash{}z \textasciitilde{}\textasciicircum{}")
    assert markdown("# title\n- item | cell <b>*x*</b> [l](u) $m$") == (
        r"\# title - item \| cell &lt;b&gt;\*x\*&lt;/b&gt; \[l\](u) \$m\$")
    assert markdown("1. first") == r"1\. first" and markdown("2.5 s") == "2.5 s"
    assert plot_text("cost $5$") == r"cost \$5\$"


def test_html_escapes_every_string(hostile: Path) -> None:
    html = (hostile / "rlcompare-report.html").read_text()
    assert "<script" not in html and "<b>" not in html
    assert "be&lt;script&gt;ta&amp;%_$#{}\\" in html  # the adapter, in tables
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; 100%" in html  # framework, description, reasons
    assert html.count("<svg") >= 5  # matplotlib drew the hostile labels as text


def test_markdown_cannot_be_given_structure(hostile: Path) -> None:
    text = (hostile / "rlcompare-report.md").read_text()
    fences = re.findall(r"^(`{3,})\w*\n.*?^\1$", text, re.M | re.S)
    assert len(fences) == 2  # the commands and the BibTeX, literal text inside fences no backtick run closes
    prose = re.sub(r"^(`{3,})\w*\n.*?^\1$", "", text, flags=re.M | re.S)
    assert "<script" not in prose and "<b>" not in prose
    # the description's line breaks, heading and table markers stay inside one paragraph
    line = next(line for line in text.splitlines() if "Injected heading" in line)
    assert line.startswith("line one # Injected heading \\| a \\| b \\| &lt;script&gt;")
    assert not any(line.startswith("# Injected") for line in text.splitlines())
    for block in re.findall(r"(?:^\|.*\|\n)+", prose, re.M):
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in block.splitlines()}
        assert len(widths) == 1, block
    assert "be&lt;script&gt;ta&amp;%\\_\\$#{}\\\\" in prose


def test_latex_escapes_every_string_and_compiles_where_tex_exists(hostile: Path, tmp_path: Path) -> None:
    text = (hostile / "rlcompare-report.tex").read_text()
    assert latex(HOSTILE_ADAPTER) in text and latex(HOSTILE) in text
    assert HOSTILE_ADAPTER not in text and "<script>" not in text
    bibtex = (hostile / "rlcompare-matrix.bib").read_text()
    assert latex(HOSTILE_ADAPTER) in bibtex
    unescaped = re.sub(r"\\[{}%$&#_]", "", bibtex)
    assert unescaped.count("{") == unescaped.count("}")
    engine = shutil.which("pdflatex")
    if engine is None:
        pytest.skip("no TeX engine here (pdflatex): the LaTeX was checked for escapes only")
    shutil.copytree(hostile, tmp_path / "build")
    done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "rlcompare-report.tex"],
                          cwd=tmp_path / "build", capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:]
