"""Reports: one path from the store to every format, each format written and read back, and the
numbers of a report equal to those ``rlcompare score --json`` prints."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rlcompare.cli import report as reporting_cli
from rlcompare.cli import score as score_cli
from rlcompare.errors import PluginError, RLCompareError
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.plugins.register import Register
from rlcompare.reporting.formats import ReportFormat
from rlcompare.reporting.model import TABLES
from rlcompare.reporting.numbers import format_number
from tests.reporting_support import REPORT_BUILTINS, report_plugins, synthetic_store

REPS = "300"
ALL_FORMATS = "html,md,latex,csv,json,bibtex,cff"


def run_command(argv: list[str]) -> int:
    """One of score / report / cite / bundle / verify, in this process, as the CLI runs it."""
    parser = argparse.ArgumentParser(prog="rlcompare")
    commands = parser.add_subparsers(dest="command")
    score_cli.add_commands(commands)
    reporting_cli.add_commands(commands)
    args = parser.parse_args(argv)
    handlers = {**score_cli.COMMANDS, **reporting_cli.COMMANDS}
    try:
        return handlers[args.command](args)
    except RLCompareError as error:
        print(f"rlcompare: error: {error}", file=sys.stderr)
        return error.exit_status


@pytest.fixture(autouse=True)
def plugins_for_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(score_cli, "load_plugins", report_plugins)
    monkeypatch.setattr(reporting_cli, "load_plugins", report_plugins)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic store's report in every built-in format, written once by one command."""
    root = tmp_path_factory.mktemp("report")
    store = synthetic_store(root / "store.db")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reporting_cli, "load_plugins", report_plugins)
        assert run_command(["report", "--store", str(store), "--out", str(root / "out"), "--format", ALL_FORMATS,
                            "--reps", REPS]) == 0
    return root


def test_several_formats_are_written_at_once(written: Path) -> None:
    out = written / "out"
    for name in ("rlcompare-report.html", "rlcompare-report.md", "rlcompare-report.tex", "rlcompare-report.json",
                 "rlcompare-report.schema.json", "rlcompare-matrix.bib", "CITATION.cff"):
        assert (out / name).is_file(), name
    assert {p.stem for p in (out / "rlcompare-report-csv").glob("*.csv")} == set(TABLES)
    assert {p.stem for p in (out / "rlcompare-report-figures").glob("*.pdf")} >= {"scores", "learning-curves",
                                                                                "scaling", "resources"}


def test_report_numbers_equal_score_json(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run_command(["score", "--store", str(written / "store.db"), "--json", "--reps", REPS]) == 0
    scored = json.loads(capsys.readouterr().out)
    report = json.loads((written / "out" / "rlcompare-report.json").read_text())
    assert report["matrix"] == scored  # the report's matrix is the one `score --json` prints
    overall = {row["adapter"]: row for row in report["tables"]["overall"]}
    for adapter in scored["adapters"]:
        assert overall[adapter["adapter"]]["score"] == adapter["score"]["point"]
        assert overall[adapter["adapter"]]["rank"] == adapter["rank"]
    cells = pd.read_csv(written / "out" / "rlcompare-report-csv" / "cells.csv", float_precision="round_trip")
    by_key = {(c["criterion"], c["adapter"], c["workload"]): c for c in scored["cells"]}
    assert len(cells) == len(by_key)
    for row in cells.itertuples():
        expected = by_key[(row.criterion, row.adapter, row.workload)]["point"]
        assert (pd.isna(row.point) and expected is None) or row.point == expected
    markdown = (written / "out" / "rlcompare-report.md").read_text()
    html = (written / "out" / "rlcompare-report.html").read_text()
    latex = (written / "out" / "rlcompare-report.tex").read_text()
    for adapter in scored["adapters"]:
        score = adapter["score"]
        text = f"{format_number(score['point'])} [{format_number(score['low'])}, {format_number(score['high'])}]"
        assert text in markdown and text in html and text in latex


def test_json_report_validates_against_its_schema(written: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads((written / "out" / "rlcompare-report.json").read_text())
    schema = json.loads((written / "out" / "rlcompare-report.schema.json").read_text())
    jsonschema.validate(document, schema)
    assert document["schema_version"] == 1 and document["digest"].startswith("sha256:")
    broken = {**document, "tables": {k: v for k, v in document["tables"].items() if k != "cells"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_csv_tables_are_tidy_and_read_back(written: Path) -> None:
    folder = written / "out" / "rlcompare-report-csv"
    scores = pd.read_csv(folder / "scores.csv")
    assert set(scores.columns) >= {"criterion", "adapter", "statistic", "point", "low", "high"}
    assert not scores.duplicated(["criterion", "adapter", "statistic"]).any()
    assert set(scores["statistic"]) == {"iqm", "mean", "median", "optimality_gap"}
    excluded = pd.read_csv(folder / "excluded_runs.csv")
    assert excluded["run_id"].tolist() == ["cart__beta__s2"] and "diverged" in excluded["reason"].iloc[0]
    fidelity = pd.read_csv(folder / "fidelity.csv")
    assert {"exact", "approximate", "refused"} <= set(fidelity["status"])
    bands = pd.read_csv(folder / "curve_bands.csv")
    cart = bands[(bands["workload"] == "cart") & (bands["adapter"] == "alpha")]
    assert cart["seeds"].tolist() == [3, 3, 3] and (cart["low"] <= cart["mean"]).all()
    assert (cart["mean"] <= cart["high"]).all()
    evidence = pd.read_csv(folder / "registry_evidence.csv")
    assert set(evidence["framework"]) == {"alpha-fw", "beta-fw"}  # neither is in the registry: said so
    assert set(evidence["note"]) == {"not in the registry"}


def _bibtex_fields(text: str) -> tuple[str, str, dict[str, str]]:
    """A small BibTeX reader: entry type, key, and each field's value (outer braces removed)."""
    match = re.match(r"\s*@(\w+)\{([^,]+),", text)
    assert match, text
    fields, position = {}, match.end()
    while True:
        field = re.compile(r"\s*(\w+)\s*=\s*").match(text, position)
        if not field:
            break
        position = field.end()
        if text[position] == "{":
            depth, start = 0, position
            while True:
                if text[position] == "\\":
                    position += 2
                    continue
                depth += {"{": 1, "}": -1}.get(text[position], 0)
                position += 1
                if depth == 0:
                    break
            value = text[start + 1:position - 1]
        else:
            end = re.compile(r"[,}\n]").search(text, position).start()
            value, position = text[position:end].strip(), end
        fields[field.group(1)] = value
        position = re.compile(r"\s*,?").match(text, position).end()
    assert text[position:].strip() == "}", text[position:]
    return match.group(1), match.group(2), fields


def test_bibtex_and_cff_cite_the_digest(written: Path) -> None:
    yaml = pytest.importorskip("yaml")
    report = json.loads((written / "out" / "rlcompare-report.json").read_text())
    digest = report["digest"]
    kind, key, fields = _bibtex_fields((written / "out" / "rlcompare-matrix.bib").read_text())
    assert kind == "misc" and key == f"rlcompare_{digest[7:19]}"
    assert fields["version"] == digest and digest in fields["note"]
    assert "rlcompare 0.1.0" in fields["howpublished"] and fields["year"] == "2023"  # when the newest run finished
    assert "alpha, beta on calib-w1, calib-w2, cart, pend" in fields["title"]
    cff = yaml.safe_load((written / "out" / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "dataset"
    assert cff["identifiers"][0]["value"] == digest and cff["version"] == digest
    assert cff["title"] == report["citation"]["title"]
    assert str(cff["date-released"]) == report["citation"]["date"]


def _tabulars(text: str) -> list[tuple[str, list[str]]]:
    found = []
    for match in re.finditer(r"\\begin\{tabular\}\{([^}]*)\}(.*?)\\end\{tabular\}", text, re.S):
        found.append((match.group(1), [row for row in match.group(2).split("\\\\\n") if row.strip()]))
    return found


def test_latex_has_booktabs_tables_and_compiles_where_tex_exists(written: Path) -> None:
    out = written / "out"
    text = (out / "rlcompare-report.tex").read_text()
    assert "\\usepackage{booktabs}" in text and text.rstrip().endswith("\\end{document}")
    tables = _tabulars(text)
    assert len(tables) >= 6
    for spec, rows in tables:
        for row in rows:
            cells = row.replace("\\toprule", "").replace("\\midrule", "").replace("\\bottomrule", "")
            if cells.strip():
                assert len(re.findall(r"(?<!\\)&", cells)) == len(spec) - 1, (spec, row)
        assert "\\toprule" in rows[0] and "\\bottomrule" in rows[-1]
    unescaped = re.sub(r"\\[{}%$&#_]", "", text)
    assert unescaped.count("{") == unescaped.count("}")
    for figure in ("scores", "learning-curves", "scaling"):
        assert f"rlcompare-report-figures/{figure}.pdf" in text
        assert (out / "rlcompare-report-figures" / f"{figure}.pdf").read_bytes().startswith(b"%PDF")
    engine = shutil.which("pdflatex")
    if engine is None:
        return  # structurally checked only: no TeX engine here
    build = written / "latex"
    shutil.copytree(out, build)
    done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "rlcompare-report.tex"],
                          cwd=build, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (build / "rlcompare-report.pdf").stat().st_size > 10_000


def test_markdown_is_readme_ready(written: Path) -> None:
    text = (written / "out" / "rlcompare-report.md").read_text()
    assert text.startswith("# rlcompare report\n")
    for heading in ("## Ranking", "## Scores by criterion", "## Performance by workload", "### cart",
                    "## What does not count, and why", "## Fidelity", "## Frameworks", "## Reproduce", "## Cite"):
        assert f"\n{heading}\n" in text, heading
    assert "- cart\\_\\_beta\\_\\_s2: failed: RuntimeError: diverged" in text
    assert "- beta / pend: refused before running: algorithm SAC is not offered" in text
    tables = [block.splitlines() for block in re.findall(r"(?:^\|.*\|\n)+", text, re.M)]
    assert len(tables) >= 6
    for table in tables:
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
        assert len(widths) == 1, table


def test_html_is_one_self_contained_file(written: Path) -> None:
    html = (written / "out" / "rlcompare-report.html").read_text()
    assert html.count("<svg") >= 6 and "<style>" in html
    assert not re.search(r"""\bsrc\s*=""", html)
    assert "<script" not in html and "@import" not in html and "url(http" not in html
    for section in ("Fidelity", "Frameworks", "What does not count", "Reproduce", "Library versions and hosts"):
        assert section in html
    assert "rlcompare run --workload" in html and "rlcompare verify rlcompare-bundle.json" in html
    assert "per batch, not per minibatch" in html and "Test CPU" in html and "beta-lib 1.2.3" in html


def test_unknown_format_is_one_line_exit_2_and_nothing_written(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    store = synthetic_store(tmp_path / "store.db")
    out = tmp_path / "out"
    assert run_command(["report", "--store", str(store), "--out", str(out), "--format", "md,htlm"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("warning:")]
    assert err == ["rlcompare: error: unknown report format 'htlm'; did you mean 'html'? "
                   "(see `rlcompare list formats`)"]
    assert not out.exists()


THIRD_PARTY = '''
from rlcompare.hookspecs import hookimpl
from rlcompare.reporting.formats import ReportFormat


def _summary(report):
    lines = [f"{row.adapter}\\t{row.score}" for row in report.table("overall").itertuples()]
    return "\\n".join([report.digest, *lines]) + "\\n"


@hookimpl
def rlcompare_register_report_formats(register):
    register.add_report_format(ReportFormat("tsv-summary", "digest and overall scores", _summary, "summary.tsv"))
    register.add_report_format(ReportFormat("md", "a second md", _summary, "other.md"))
'''


def test_a_third_party_format_comes_in_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    (site / "summary_format-0.2.dist-info").mkdir(parents=True)
    (site / "summary_format.py").write_text(THIRD_PARTY, encoding="utf-8")
    (site / "summary_format-0.2.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: summary-format\nVersion: 0.2\n", encoding="utf-8")
    (site / "summary_format-0.2.dist-info" / "entry_points.txt").write_text(
        "[rlcompare]\nsummary = summary_format\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    plugins = build_plugin_manager(builtins=REPORT_BUILTINS, autoload=True)
    origin = plugins.origin("report format", "tsv-summary")
    assert (origin.plugin, origin.distribution, origin.version) == ("summary", "summary-format", "0.2")
    # the clash on "md" disables both registrations and names both plugins
    assert "md" not in plugins.report_formats
    clash = [str(e) for e in plugins.errors if "'md'" in str(e)]
    assert clash and "rlcompare.builtins.report_formats" in clash[0] and "summary-format 0.2" in clash[0]
    assert reporting_cli.list_formats(plugins, as_json=True) == 0
    listed = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed["tsv-summary"]["distribution"] == "summary-format" and "html" in listed

    monkeypatch.setattr(reporting_cli, "load_plugins", lambda: build_plugin_manager(builtins=REPORT_BUILTINS,
                                                                                     autoload=True))
    store = synthetic_store(tmp_path / "store.db")
    assert run_command(["report", "--store", str(store), "--out", str(tmp_path / "out"), "--format",
                        "tsv-summary,bibtex", "--reps", REPS]) == 0
    lines = (tmp_path / "out" / "summary.tsv").read_text().splitlines()
    assert lines[0].startswith("sha256:") and lines[0] in (tmp_path / "out" / "rlcompare-matrix.bib").read_text()
    assert [line.split("\t")[0] for line in lines[1:]] == ["alpha", "beta"]


def test_report_formats_are_checked_at_registration() -> None:
    register = Register()
    with pytest.raises(PluginError, match="must match"):
        register.add_report_format(ReportFormat("Bad Id", "x", lambda report: ""))
    with pytest.raises(PluginError, match="expects a rlcompare.reporting.formats.ReportFormat"):
        register.add_report_format(object())


def test_cite_prints_each_format(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(written / "store.db")
    capsys.readouterr()
    assert run_command(["cite", "--store", store, "--format", "text", "--reps", REPS]) == 0
    text = capsys.readouterr().out
    digest = json.loads((written / "out" / "rlcompare-report.json").read_text())["digest"]
    assert digest in text and "rlcompare 0.1.0" in text
    assert run_command(["cite", "--store", store, "--reps", REPS, "--author", "Ada Lovelace"]) == 0
    bibtex = capsys.readouterr().out
    assert bibtex == (written / "out" / "rlcompare-matrix.bib").read_text().replace("{rlcompare}", "{Ada Lovelace}")


def test_docs_describe_every_format_and_table() -> None:
    from rlcompare.builtins.report_formats import BUILTIN_FORMATS

    docs = (Path(__file__).resolve().parents[1] / "docs" / "reports.md").read_text(encoding="utf-8")
    for report_format in BUILTIN_FORMATS:
        assert f"| `{report_format.id}` |" in docs, report_format.id
    for table in TABLES:
        assert f"`{table}`" in docs, table
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for command in ("rlcompare cite", "rlcompare bundle", "rlcompare verify", "rlcompare score  --bundle",
                    "rlcompare list formats"):
        assert command in readme, command
