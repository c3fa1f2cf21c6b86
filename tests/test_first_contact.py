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
    assert "about 3 minutes" in demo  # the expected time, printed before it starts


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
    rows = summary[2:-2]
    assert [row.split()[0].rstrip("=") for row in rows] == sorted((row.split()[0].rstrip("=") for row in rows), key=int)
    assert any("be<script>ta&%_$#{}\\" in row for row in rows)  # the hostile name, shown literally
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
