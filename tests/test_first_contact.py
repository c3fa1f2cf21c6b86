"""First contact: the demo's promise (at least four frameworks, at least two seeds, a report, a
citation, a one-screen summary) and the uv install's package sources."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlcompare.spec.builtin_workloads import BUILTIN_SUITES, CARTPOLE_PPO_DEMO
from tests.conftest import ROOT
from tests.reporting_support import synthetic_runs
from tests.test_criteria_support import write_store
from tests.test_reporting import REPS, run_command


@pytest.fixture(autouse=True)
def report_plugins_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlcompare.cli import report as reporting_cli
    from tests.reporting_support import report_plugins

    monkeypatch.setattr(reporting_cli, "load_plugins", report_plugins)


def _makefile_variable(name: str) -> str:
    match = re.search(rf"^{name} :?= (.+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert match, name
    return match.group(1).strip()


def test_the_demo_compares_at_least_four_frameworks_with_two_seeds_and_prints_a_summary() -> None:
    from rlcompare.plugins.manager import build_plugin_manager

    adapters = _makefile_variable("DEMO_ADAPTERS").split(",")
    registered = build_plugin_manager().adapters
    assert len(adapters) >= 4 and set(adapters) <= set(registered)
    assert len({registered[a].framework for a in adapters}) == len(adapters)  # four frameworks, not four ids
    [suite] = [suite for suite in BUILTIN_SUITES if suite.name == "demo"]
    assert suite.workload_ids == (CARTPOLE_PPO_DEMO["id"],) and CARTPOLE_PPO_DEMO["seeds"] >= 2
    demo = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ndemo: install")[1].split("\n\n")[0]
    assert "--suite demo --adapters $(DEMO_ADAPTERS)" in demo and "--summary" in demo and "cite" in demo and "html" in demo
    assert re.search(r"about \d+ minutes", demo)  # the expected time, printed before it starts


def test_report_summary_is_one_screen_in_rank_order_and_shows_names_as_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = write_store(tmp_path / "s.db", synthetic_runs(hostile=True))
    out = tmp_path / "out"
    capsys.readouterr()
    assert run_command(["report", "--store", str(store), "--out", str(out), "--format", "md", "--reps", REPS,
                        "--summary"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == str(out / "rlcompare-report.md")
    summary = printed[2:]
    assert len(summary) <= 24 and all(len(line) <= 200 for line in summary)
    assert "\x1b" not in "".join(summary) and "digest sha256:" in summary[0]
    header = summary[1].split()
    assert header[:2] == ["rank", "adapter"] and "steps/s" in header
    legend = next(i for i, line in enumerate(summary) if line.startswith("'=' shares a rank"))
    rows = summary[2:legend]
    assert [row.split()[0].rstrip("=") for row in rows] == sorted((row.split()[0].rstrip("=") for row in rows), key=int)
    assert any("be<script>ta&%_$#{}\\" in row for row in rows)  # the hostile name, shown literally
    # under the table, why a higher score ranks lower, from the report's own rank notes (at most three)
    notes = summary[legend + 1:-1]
    assert len(notes) <= 4 and all(": ranked below " in note for note in notes[:3])
    assert summary[-1] == f"Full report: {out / 'rlcompare-report.md'}"


def test_uv_is_handed_pips_package_sources() -> None:
    """``make install`` installs with uv, which reads no pip configuration: the project hands it
    pip's settings (else torch would resolve to a CUDA build from PyPI)."""
    env = {"PATH": os.environ.get("PATH", ""), "PIP_CONFIG_FILE": os.devnull, "HOME": "/nonexistent",
           "PIP_INDEX_URL": "https://example.invalid/simple", "PIP_FIND_LINKS": "/opt/wheels /srv/wheels",
           "PIP_CONSTRAINT": "/etc/c.txt", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "rlcompare.pyenvs.indexes"], env=env, capture_output=True,
                          text=True, timeout=60, check=True, cwd="/")
    assert done.stdout.split() == ["--index-strategy", "unsafe-best-match", "--index-url", "https://example.invalid/simple",
                                   "--find-links", "/opt/wheels", "--find-links", "/srv/wheels",
                                   "--constraint", "/etc/c.txt"]


def test_the_summary_says_why_a_higher_score_ranks_lower_in_at_most_three_lines() -> None:
    """The ranking puts parity standing and workloads solved before the score: the summary prints the
    report's rank note under the table, so a rank 4 with a higher score than rank 2 is explained."""
    from types import SimpleNamespace

    import pandas as pd

    from rlcompare.cli.summary import MAX_RANK_NOTES, summary_lines

    names = ["a", "b", "c", "d", "e", "f"]
    overall = pd.DataFrame({
        "adapter": names, "rank": [1, 2, 3, 4, 5, 6], "tied": [False] * 6,
        "score": [0.5, 0.4, 0.3, 0.9, 0.8, 0.7], "low": [0.4] * 6, "high": [0.9] * 6,
        "rank_note": ["", "", "", *(f"ranked below a, b, c despite a higher overall score: n{i}" for i in range(3))],
    })
    overall.loc[5, "rank_note"] = "\x1b[31m" + "x" * 400
    cells = pd.DataFrame({"criterion": ["throughput"], "adapter": ["a"], "point": [10.0]})
    tables = {"overall": overall, "cells": cells}
    report = SimpleNamespace(matrix=SimpleNamespace(adapters=names, profile=SimpleNamespace(name="balanced")),
                             table=tables.__getitem__, runs=pd.DataFrame({"workload_id": ["w"]}),
                             digest="sha256:" + "0" * 64)
    lines = summary_lines(report, ["out.html"])  # type: ignore[arg-type]
    legend = next(i for i, line in enumerate(lines) if line.startswith("'=' shares a rank"))
    notes = lines[legend + 1:-1]
    assert notes[:2] == ["d: ranked below a, b, c despite a higher overall score: n0",
                         "e: ranked below a, b, c despite a higher overall score: n1"]
    assert len(notes) == MAX_RANK_NOTES and notes[2].startswith("f: ") and len(notes[2]) <= 160
    assert "\x1b" not in "".join(lines)
    overall.loc[2, "rank_note"] = "ranked below a despite a higher overall score: n"
    more = summary_lines(report, ["out.html"])  # type: ignore[arg-type]
    assert more[-2] == "... and 1 more: why each adapter ranks where it does is in the report"
