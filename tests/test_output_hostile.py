"""Hostile names in everything rlcompare writes or prints.

Arbitrary Unicode names (controls, bidirectional overrides, every language's special characters)
go through each format's escaping layer and the small render path around it; each output must
parse with that format's reader and show the name literally, or in the neutralised form
:mod:`rlcompare.reporting.escape` documents (restated here by :func:`shown`, independently of the
code under test). A few end-to-end checks then write whole reports and run commands with such names,
and plant links in the output folder.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import re
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from rlcompare.cli.main import main
from rlcompare.cli.progress import ConsoleProgress
from rlcompare.cli.terminal import VisibleStream, raw_stream, terminal_console, visible_output
from rlcompare.errors import UsageError
from rlcompare.reporting.citation import Citation
from rlcompare.reporting.data_formats import csv_text, json_text
from rlcompare.reporting.escape import bibtex, csv_cell, latex, markdown, plot_text, terminal, visible, yaml_string
from rlcompare.reporting.formats import ReportFormat
from rlcompare.reporting.markup import _environment
from rlcompare.reporting.output_folder import write_files
from tests.reporting_support import report_plugins
from tests.test_criteria_support import curve, run_record, workload_spec, write_store

#: Names per format (at least 2,000; RLCOMPARE_HOSTILE_EXAMPLES=20000 for a longer hunt).
EXAMPLES = max(2000, int(os.environ.get("RLCOMPARE_HOSTILE_EXAMPLES", "2000")))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- the documented rule, restated --------------------------------------------------------------------

BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: Characters every format treats specially somewhere, weighted in beside the full Unicode range.
SPECIAL = ("".join(BIDI) + "".join(map(chr, range(0x20))) + "\x7f\x85\x9b\u2028\u2029\ufeff\ufffe\uffff"
           + "[]{}\\%$&#_^~<>|*-=+@'\"`!?,.:;/() \t\r\n–—’“…±µßœ" + "0123456789")
names = st.text(st.one_of(st.characters(), st.sampled_from(SPECIAL)), max_size=24)


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cs") or char in BIDI


def shown(name: str, lines: bool = False) -> str:
    """``name`` as escape.py's docstring says every output shows it."""
    out = []
    for char in name.replace("\r\n", "\n"):
        if char in "\n\r\u2028\u2029":
            out.append("\n" if lines else " ")
        elif char == "\t":
            out.append("\t" if lines else " ")
        elif _hidden(char):
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def hides_nothing(text: str, lines: bool = True) -> bool:
    allowed = "\n\t" if lines else ""
    return not any((_hidden(c) or c in "\u2028\u2029") and c not in allowed for c in text)


def collapsed(text: str) -> str:
    return " ".join(text.split())


# -- HTML ------------------------------------------------------------------------------------------------


class _Parsed(HTMLParser):
    """Start tags, the text inside each element, and attributes, as a browser's parser reads them."""

    VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})

    def __init__(self, strict: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self.strict = strict
        self.tags: list[str] = []
        self.text: dict[str, str] = {}
        self.attributes: dict[str, str | None] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in self.VOID:
            self._open.append(tag)
        self.attributes.update(attrs)

    def handle_endtag(self, tag: str) -> None:
        if self.strict:  # every element closed, in order
            assert self._open and self._open.pop() == tag, (tag, self._open)
        elif tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag):]

    def handle_data(self, data: str) -> None:
        key = self._open[-1] if self._open else ""
        self.text[key] = self.text.get(key, "") + data


def parsed_html(text: str, strict: bool = True) -> _Parsed:
    parser = _Parsed(strict)
    parser.feed(text)
    parser.close()
    return parser


HTML_SNIPPET = '<td title="{{ name }}">{{ name }}</td><pre>{{ name }}</pre>'


@PROPERTY
@given(names)
def test_html_parses_and_shows_every_name(name: str) -> None:
    html = _environment("html").from_string(HTML_SNIPPET).render(name=name)
    assert hides_nothing(html)
    parsed = parsed_html(html)
    assert parsed.tags == ["td", "pre"]
    assert parsed.text.get("td", "") == parsed.text.get("pre", "") == shown(name, lines=True)
    assert parsed.attributes["title"] == shown(name, lines=True)


# -- Markdown --------------------------------------------------------------------------------------------

COMMONMARK = MarkdownIt("commonmark").enable("table")


@PROPERTY
@given(names)
def test_markdown_parses_and_shows_every_name_in_a_paragraph_a_table_and_a_list(name: str) -> None:
    text = markdown(name)
    assert hides_nothing(text, lines=False) and "\n" not in text
    expected = collapsed(shown(name))
    paragraph = parsed_html(COMMONMARK.render(f"{text} end\n"))
    assert paragraph.tags == ["p"] and collapsed(paragraph.text["p"]) == collapsed(f"{expected} end")
    table = parsed_html(COMMONMARK.render(f"| a | b |\n|---|---|\n| {text} | x |\n"))
    assert table.tags == ["table", "thead", "tr", "th", "th", "tbody", "tr", "td", "td"]
    assert collapsed(table.text.get("td", "")) == collapsed(f"{expected}x")
    item = parsed_html(COMMONMARK.render(f"- {text}\n"))
    assert item.tags == ["ul", "li"] and collapsed(item.text.get("li", "")) == expected


# -- LaTeX and BibTeX ------------------------------------------------------------------------------------

#: How each piece of escape.py's LaTeX reads back (the typeset character, or nothing).
TEX_READS = {
    r"\textbackslash{}": "\\", r"\{": "{", r"\}": "}", r"\$": "$", r"\&": "&", r"\#": "#", r"\%": "%", r"\_": "_",
    r"\textasciicircum{}": "^", r"\textasciitilde{}": "~", r"\textless{}": "<", r"\textgreater{}": ">",
    r"\textbar{}": "|", "{[}": "[", "{]}": "]", "{*}": "*", "{}": "", r"\textbraceleft{}": "{",
    r"\textbraceright{}": "}", r"\ldots{}": "…", r"$\pm$": "±", r"$\times$": "×", r"$\geq$": "≥", r"$\leq$": "≤",
    r"$\cdot$": "·", r"$^\circ$": "°", r"$\mu$": "µ", r"\ss{}": "ß", r"\ae{}": "æ", r"\AE{}": "Æ", r"\o{}": "ø",
    r"\O{}": "Ø", r"\oe{}": "œ", r"\OE{}": "Œ", r"\l{}": "ł", r"\L{}": "Ł",
}
_TEX_TOKEN = re.compile("|".join(re.escape(t) for t in sorted(TEX_READS, key=len, reverse=True)) + r"|[\s\S]")
TEX_SPECIALS = set("\\{}$&#%_^~[]*")
#: Typographic characters LaTeX spells with ASCII (and sets as the same character).
TEX_SPELLED = {"–": "--", "—": "---", "‘": "`", "’": "'", "“": "``", "”": "''"}


def untex(text: str) -> str:
    """What escape.py's LaTeX typesets; a special character outside an escape fails."""
    out = []
    for match in _TEX_TOKEN.finditer(text):
        token = match.group()
        if token in TEX_READS:
            out.append(TEX_READS[token])
        else:
            assert token not in TEX_SPECIALS, (token, text)
            out.append(token)
    return "".join(out)


def tex_shown(name: str) -> str:
    """The documented LaTeX form: :func:`shown`, then ASCII (Unicode's decomposition, or ``\\uXXXX``)."""
    out = []
    for char in shown(name):
        if char.isascii() or char in TEX_READS.values():
            out.append(char)
        elif char in TEX_SPELLED:
            out.append(TEX_SPELLED[char])
        else:
            ascii_form = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
            code = ord(char)
            out.append(ascii_form if ascii_form and ascii_form.isprintable()
                       else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(out)


@PROPERTY
@given(names)
def test_latex_is_ascii_escaped_and_shows_every_name(name: str) -> None:
    text = latex(name)
    assert text.isascii() and text.isprintable()
    assert untex(text) == tex_shown(name)
    # nothing after \\ or \item can read as an optional argument or a star
    assert not re.search(r"^\s*[\[*]", text), text


def parse_bibtex(text: str) -> tuple[str, str, dict[str, str]]:
    """A strict BibTeX reader: braces counted as BibTeX counts them (a backslash does not hide one),
    each field once, nothing after the entry's closing brace."""
    head = re.match(r"@(\w+)\{([^,{}\s]+),\n", text)
    assert head, text
    position, fields = head.end(), {}
    while field := re.compile(r"[ \t]*(\w+) = ").match(text, position):
        position = field.end()
        if text[position] == "{":
            depth, start = 0, position
            while True:
                assert position < len(text), f"unbalanced braces in {field.group(1)}: {text}"
                depth += {"{": 1, "}": -1}.get(text[position], 0)
                position += 1
                if depth == 0:
                    break
            value = text[start + 1:position - 1]
        else:
            bare = re.compile(r"[A-Za-z0-9]+").match(text, position)
            assert bare, text[position:]
            value, position = bare.group(), bare.end()
        assert field.group(1) not in fields, field.group(1)
        fields[field.group(1)] = value
        separator = re.compile(r",\n|\n").match(text, position)
        assert separator, text[position:]
        position = separator.end()
    assert text[position:] == "}\n", text[position:]
    return head.group(1), head.group(2), fields


DIGEST = "sha256:" + "ab" * 32
BIBTEX_FIELDS = ["title", "author", "year", "month", "howpublished", "version", "note"]


def citation_naming(name: str) -> Citation:
    return Citation(digest=DIGEST, rlcompare_version="0.1.0", adapters=(name, "alpha"), frameworks=(name,),
                    workloads=(name,), profile=name, runs=3, date=dt.date(2023, 11, 14), authors=(name, "Ada"))


@PROPERTY
@given(names)
def test_bibtex_entry_parses_with_its_own_fields_and_shows_every_name(name: str) -> None:
    citation = citation_naming(name)
    text = citation.bibtex()
    assert text.isascii() and hides_nothing(text)
    kind, key, fields = parse_bibtex(text)
    assert (kind, key) == ("misc", "rlcompare_abababababab")
    assert list(fields) == BIBTEX_FIELDS
    assert (fields["year"], fields["month"], fields["version"]) == ("2023", "nov", DIGEST)
    title = fields["title"]
    assert title.startswith("{") and title.endswith("}")
    assert untex(title[1:-1]) == tex_shown(citation.title)
    first, second = fields["author"].rsplit(" and ", 1)
    assert untex(first[1:-1]) == tex_shown(name) and second == "{Ada}"
    assert tex_shown(name) in untex(fields["note"])
    assert bibtex(name) in text


# -- CITATION.cff, CSV, JSON ---------------------------------------------------------------------------


@PROPERTY
@given(names)
def test_cff_loads_as_yaml_and_shows_every_name(name: str) -> None:
    citation = citation_naming(name)
    text = citation.cff()
    assert hides_nothing(text)
    cff = yaml.safe_load(text)
    assert cff["title"] == shown(citation.title)
    assert [author["name"] for author in cff["authors"]] == [shown(name), "Ada"]
    assert cff["keywords"][-1] == shown(name) and cff["version"] == DIGEST
    assert cff["abstract"] == citation.text() == shown(citation.text())
    assert yaml.safe_load(yaml_string(name)) == shown(name)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def plain_number(text: str) -> bool:
    return re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text) is not None


@PROPERTY
@given(names)
def test_csv_round_trips_every_name_and_never_starts_a_formula(name: str) -> None:
    frame = pd.DataFrame({"name": [name], "score": [-1.5], "count": ["-2"], "flag": [True]})
    rows = list(csv.reader(io.StringIO(csv_text(frame), newline="")))
    assert rows[0] == ["name", "score", "count", "flag"]
    assert len(rows) == 2 and rows[1][1:] == ["-1.5", "-2", "True"]  # numbers stay numbers
    cell = rows[1][0]
    expected = shown(name, lines=True)
    if expected.startswith(FORMULA_STARTS) and not plain_number(expected):
        expected = "'" + expected
    assert cell == expected
    assert hides_nothing(cell) and (not cell.startswith(FORMULA_STARTS) or plain_number(cell))


@PROPERTY
@given(names)
def test_json_keeps_every_name_exactly_and_hides_nothing(name: str) -> None:
    text = json_text({"adapter": name, "rows": [{"framework": name}]})
    assert text.isascii() and hides_nothing(text)
    assert json.loads(text) == {"adapter": name, "rows": [{"framework": name}]}


# -- the terminal --------------------------------------------------------------------------------------


@PROPERTY
@given(names)
def test_terminal_text_and_printed_lines_show_every_name_and_no_control(name: str) -> None:
    assert terminal(name) == shown(name) and hides_nothing(terminal(name), lines=False)
    assert plot_text(name) == shown(name).replace("$", r"\$")
    raw = io.StringIO()
    stream = VisibleStream(raw)
    stream.write(name)
    stream.write("\n")
    assert raw.getvalue() == shown(name + "\n", lines=True) and hides_nothing(raw.getvalue())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names)
def test_rich_tables_show_every_name_as_text(name: str) -> None:
    from rich.table import Table

    out = io.StringIO()
    table = Table(title=name)
    table.add_column(name)
    table.add_row(f"[bold]{name}[/bold] :smile:")
    terminal_console(out, width=400).print(table)
    printed = out.getvalue()
    assert hides_nothing(printed)
    assert "[bold]" in printed and ":smile:" in printed  # markup and emoji codes are text
    for word in shown(name, lines=True).split():
        assert word in printed


# -- targeted cases -------------------------------------------------------------------------------------


def test_latex_brackets_and_star_cannot_become_arguments() -> None:
    assert latex("[opt] name") == "{[}opt{]} name" and latex("*star") == "{*}star"
    assert latex("a--b ``q'' ,,") == "a-{}-b `{}`q'{}' ,{},"
    assert latex("日本") == r"\textbackslash{}u65e5\textbackslash{}u672c"


def test_bibtex_keeps_its_fields_whatever_a_name_holds() -> None:
    payload = "x}, year = {1999}, note = {owned"
    citation = Citation(digest=DIGEST, rlcompare_version="0.1.0", adapters=("a{",), frameworks=("fw}",),
                        workloads=("w",), profile=payload, runs=1, date=dt.date(2023, 1, 2))
    _, _, fields = parse_bibtex(citation.bibtex())
    assert list(fields) == BIBTEX_FIELDS and fields["year"] == "2023" and "owned" not in fields["note"]
    # the value's own braces pair where they can ("a{" with "x}", "{1999}"); the odd one is a command
    assert r"a\{ on w (x\}, year = \{1999\}, note = \textbraceleft{}owned profile)" in fields["title"]
    assert bibtex("{a}") == r"\{a\}" and bibtex("}{") == r"\textbraceright{}\textbraceleft{}"
    assert bibtex("\uff5b") == r"\textbraceleft{}"  # a fullwidth brace is a brace once spelled in ASCII
    assert list(parse_bibtex(citation_naming("\uff5d").bibtex())[2]) == BIBTEX_FIELDS


def test_csv_cells_that_would_be_formulas_start_with_a_quote() -> None:
    cells = ["- name: x", "=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "a=b"]
    assert [csv_cell(c) for c in cells] == ["'- name: x", "'=HYPERLINK(\"http://x\")", "'+1+1", "'-2+3",
                                            "'@SUM(A1)", "'\tx", "\nx", "a=b"]  # a CR is a line break
    assert [csv_cell(c) for c in ("-1.5", "+2", "-3e-05", -4.0, None)] == ["-1.5", "+2", "-3e-05", -4.0, None]


def test_the_registry_s_own_excerpts_leave_as_text_not_formulas() -> None:
    from rlcompare.registry.loading import load_builtin_entries
    from rlcompare.reporting.tables import registry_evidence_table

    entries = {entry.id: entry for entry in load_builtin_entries()}
    frame = registry_evidence_table(sorted(entries), entries)
    raw = [cell for row in csv.reader(io.StringIO(frame.to_csv(index=False))) for cell in row]
    assert any(cell.startswith("- ") for cell in raw)  # YAML-like lists quoted from the frameworks' sources
    cells = [cell for row in csv.reader(io.StringIO(csv_text(frame))) for cell in row]
    assert len(cells) == len(raw) and any(cell.startswith("'- ") for cell in cells)
    assert all(not cell.startswith(FORMULA_STARTS) or plain_number(cell) for cell in cells)


def test_list_formats_prints_a_plugin_s_description_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    from rlcompare.cli import report as reporting_cli

    description = "\x1b[2Jwipe [link=https://example.invalid]click[/link] :smile: \u202eesrever"
    plugins = SimpleNamespace(
        report_formats={"odd": ReportFormat("odd", description, lambda report: "")},
        origin=lambda kind, name: SimpleNamespace(plugin="odd\x07", distribution="odd-dist", version="1"))
    capsys.readouterr()
    assert reporting_cli.list_formats(plugins, as_json=False) == 0  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert hides_nothing(out) and "[link=https://example.invalid]click[/link]" in out and ":smile:" in out
    assert "\\u001b[2Jwipe" in out and "\\u202eesrever" in out and "odd\\u0007" in out


def test_bidi_controls_and_surrogates_are_shown_not_obeyed() -> None:
    assert visible("abc\u202edef") == "abc\\u202edef" and visible("\u2066x\u2069") == "\\u2066x\\u2069"
    assert visible("bad\udc80name") == "bad\\udc80name"  # an undecodable file name's byte
    assert markdown("\u202e") == "\\\\u202e" and latex("\u200f") == r"\textbackslash{}u200f"
    # a plugin format returning such text writes it, visibly, rather than failing to encode it
    files = ReportFormat("x", "x", lambda report: "a\udc80b").outputs(None)  # type: ignore[arg-type]
    assert files == {"rlcompare-report.x": b"a\\udc80b"}


# -- writing under --out ---------------------------------------------------------------------------------


def test_links_planted_in_the_output_folder_are_replaced_never_followed(tmp_path: Path) -> None:
    outside, out = tmp_path / "outside", tmp_path / "out"
    outside.mkdir()
    out.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me")
    (out / "report.md").symlink_to(victim)
    (out / "dangling.md").symlink_to(outside / "created-through-link.txt")
    (out / "tables").symlink_to(outside, target_is_directory=True)
    written = write_files(out, {"report.md": b"new", "dangling.md": b"d", "tables/t.csv": b"1"})
    assert written == [out / "report.md", out / "dangling.md", out / "tables" / "t.csv"]
    assert victim.read_text() == "keep me" and sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert (out / "report.md").read_bytes() == b"new" and (out / "tables" / "t.csv").read_bytes() == b"1"
    assert sorted(p.name for p in out.iterdir()) == ["dangling.md", "report.md", "tables"]  # no partial files
    (out / "file").write_text("x")
    with pytest.raises(UsageError, match=r"^--out: cannot write .*file/t\.csv"):
        write_files(out, {"file/t.csv": b"1"})
    (out / "folder").mkdir()
    with pytest.raises(UsageError, match="a folder is in the way"):
        write_files(out, {"folder": b"1"})


# -- end to end: a store of hostile names ---------------------------------------------------------------

ESC_ADAPTER = "[ev\x1b]0;owned\x07il\x1b[31m"
BIDI_ADAPTER = "*rtl\u202eeman"
WORKLOAD = "w\u202e{ork"
ERROR = "Boom \x1b[2J\x07\nsecond line\r\u202eover"


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = workload_spec(WORKLOAD, threshold=100.0)
    spec["description"] = "desc \x1b[2J\x07 \u2066x\u2069 } [x]"
    runs = []
    for adapter, framework, speed in ((ESC_ADAPTER, "fw{\x9b", 1.0), (BIDI_ADAPTER, "- name: fw\u202e", 2.0)):
        for seed in range(2):
            record = run_record(spec, adapter, seed, framework=framework, final_return=90.0 + seed * speed,
                                throughput=1000.0 * speed + seed, startup=1.0, training=5.0 / speed,
                                peak_rss=2**27)
            runs.append((record, curve([(0, 0.0, 10.0), (1000, 1.0, 100.0 + seed)])))
    runs.append((run_record(spec, ESC_ADAPTER, 2, status="failed", framework="fw{\x9b", error=ERROR), []))
    return write_store(tmp_path_factory.mktemp("hostile") / "store.db", runs)


@pytest.fixture(scope="module")
def hostile_report(hostile_store: Path) -> Path:
    """Every built-in format written by `rlcompare report` into a folder with links planted in it."""
    out = hostile_store.parent / "out"
    outside = hostile_store.parent / "outside"
    outside.mkdir()
    out.mkdir()
    (outside / "victim.md").write_text("keep me")
    (out / "rlcompare-report.md").symlink_to(outside / "victim.md")
    (out / "rlcompare-report-csv").symlink_to(outside, target_is_directory=True)
    with pytest.MonkeyPatch.context() as patch:
        from rlcompare.cli import report as reporting_cli

        patch.setattr(reporting_cli, "load_plugins", report_plugins)
        assert main(["report", "--store", str(hostile_store), "--out", str(out), "--reps", "200",
                     "--format", "html,md,latex,csv,json,bibtex,cff"]) == 0
    assert (outside / "victim.md").read_text() == "keep me" and [p.name for p in outside.iterdir()] == ["victim.md"]
    assert not (out / "rlcompare-report.md").is_symlink() and not (out / "rlcompare-report-csv").is_symlink()
    return out


def test_every_report_format_parses_and_hides_nothing(hostile_report: Path) -> None:
    texts = {p.relative_to(hostile_report).as_posix(): p.read_text(encoding="utf-8")
             for p in hostile_report.rglob("*") if p.is_file() and p.suffix != ".pdf"}
    assert len(texts) >= 10
    for name, text in texts.items():
        assert hides_nothing(text), name
        if name.endswith((".tex", ".bib")):
            assert r"\textbackslash{}u202e" in text, name
        elif not name.startswith("rlcompare-report-csv/") and not name.endswith("schema.json"):
            assert "\\u202e" in text, name
    html = parsed_html(texts["rlcompare-report.html"], strict=False)
    assert "svg" in html.tags and "script" not in html.tags
    assert shown(ESC_ADAPTER) in texts["rlcompare-report.html"].replace("&#34;", '"').replace("&#39;", "'")
    report = json.loads(texts["rlcompare-report.json"])
    assert {row["adapter"] for row in report["tables"]["overall"]} == {ESC_ADAPTER, BIDI_ADAPTER}  # exact data
    cff = yaml.safe_load(texts["CITATION.cff"])
    assert cff["title"] == shown(report["citation"]["title"])
    _, _, fields = parse_bibtex(texts["rlcompare-matrix.bib"])
    assert list(fields) == BIBTEX_FIELDS and fields["year"] == "2023"
    tex = texts["rlcompare-report.tex"]
    assert not re.search(r"(\\\\|\\item)\s*[\[*]", tex)
    assert latex(ESC_ADAPTER) in tex and latex(ESC_ADAPTER).startswith("{[}")
    assert markdown(BIDI_ADAPTER) in texts["rlcompare-report.md"]
    for name, text in texts.items():
        if name.endswith(".csv"):
            for row in csv.reader(io.StringIO(text, newline="")):
                assert all(not cell.startswith(FORMULA_STARTS) or plain_number(cell) for cell in row), (name, row)
    frameworks = {row[1] for row in csv.reader(io.StringIO(texts["rlcompare-report-csv/overall.csv"]))}
    assert "'- name: fw\\u202e" in frameworks


def test_commands_print_no_control_sequence(hostile_store: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from rlcompare.cli import score as score_cli

    monkeypatch.setattr(score_cli, "load_plugins", report_plugins)
    capsys.readouterr()
    assert main(["score", "--store", str(hostile_store), "--reps", "200"]) == 0
    scored = capsys.readouterr()
    run_id = f"{WORKLOAD}__{ESC_ADAPTER}__s2"
    assert main(["show", "run", run_id, "--store", str(hostile_store)]) == 0
    shown_run = capsys.readouterr()
    for text in (scored.out, scored.err, shown_run.out, shown_run.err):
        assert hides_nothing(text), text
    assert shown(ESC_ADAPTER) in scored.out and shown(BIDI_ADAPTER) in scored.out
    assert "Boom \\u001b[2J\\u0007" in shown_run.out and "\\u202eover" in shown_run.out
    assert not isinstance(sys.stdout, VisibleStream)  # what was there before is back after a command


def test_progress_lines_are_one_line_per_event_with_nothing_hidden() -> None:
    stream = io.StringIO()
    with visible_output():
        progress = ConsoleProgress(total=2, stream=stream)
        planned = SimpleNamespace(run_id=f"w__{ESC_ADAPTER}__s0")
        progress.started(planned)  # type: ignore[arg-type]
        record = SimpleNamespace(final_return_mean=None, throughput=None, wall_seconds=1.0, error=ERROR, note=None)
        progress.finished(SimpleNamespace(status="failed", run_id=planned.run_id, record=record))  # type: ignore[arg-type]
        progress.close(SimpleNamespace(counts={"failed": 1}, skipped=[]), "store\x1b[8m.db")  # type: ignore[arg-type]
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and hides_nothing(stream.getvalue())
    assert lines[1].startswith("failed") and lines[1].endswith("- " + shown(ERROR))


def test_a_live_progress_bar_still_draws_on_the_terminal_under_visible_output() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal_stream = Terminal()
    with visible_output():
        wrapped = VisibleStream(terminal_stream)
        assert raw_stream(wrapped) is terminal_stream and not wrapped.isatty()
        progress = ConsoleProgress(total=1, stream=wrapped)  # type: ignore[arg-type]
        assert progress.live
        planned = SimpleNamespace(run_id=f"w__{BIDI_ADAPTER}\x07__s0")
        progress.started(planned)  # type: ignore[arg-type]
        progress.close(SimpleNamespace(counts={}, skipped=[]), "store.db")  # type: ignore[arg-type]
    printed = terminal_stream.getvalue()
    assert "\u202e" not in printed and "\x07" not in printed and "\\u202e" in printed
