"""A comparison across gymnasium versions is flagged: in every report format and in ``rlcompare score``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rlcompare.store.library_versions import mixed_version_warnings, mixed_versions
from tests.reporting_support import synthetic_runs
from tests.test_criteria_support import write_store
from tests.test_reporting import REPS, run_command

WARNING = ("cart: runs used different gymnasium versions (alpha 1.2.2; beta 0.29.1): gymnasium behaviour "
           "may differ between them, so compare with care")


def _store(path: Path, beta_gymnasium: str) -> Path:
    """The synthetic store, every run on gymnasium 1.2.2 except beta's CartPole runs."""
    runs = synthetic_runs()
    for record, _ in runs:
        on_cart = record.workload_id == "cart" and record.adapter == "beta"
        record.versions_json = {**(record.versions_json or {}), "numpy": "2.2.6",
                                "gymnasium": beta_gymnasium if on_cart else "1.2.2"}
    return write_store(path, runs)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("versions")
    found = {}
    with pytest.MonkeyPatch.context() as patch:
        from rlcompare.cli import report as reporting_cli
        from rlcompare.cli import score as score_cli
        from tests.reporting_support import report_plugins

        patch.setattr(score_cli, "load_plugins", report_plugins)
        patch.setattr(reporting_cli, "load_plugins", report_plugins)
        for name, beta in (("mixed", "0.29.1"), ("same", "1.2.2")):
            store = _store(root / f"{name}.db", beta)
            assert run_command(["report", "--store", str(store), "--out", str(root / name),
                                "--format", "md,html,latex", "--reps", REPS]) == 0
            found[name] = root / name
    return found


def test_reports_flag_mixed_gymnasium_versions(reports: dict[str, Path]) -> None:
    markdown = (reports["mixed"] / "rlcompare-report.md").read_text()
    assert "> **Warning: runs on different gymnasium versions.**" in markdown
    assert f"> - {WARNING}" in markdown
    # near the top, before the ranking: a reader cannot miss it
    assert markdown.index("Warning: runs on different gymnasium versions") < markdown.index("## Ranking")
    html = (reports["mixed"] / "rlcompare-report.html").read_text()
    assert '<div class="warning" role="alert"><strong>Warning: runs on different gymnasium versions.</strong>' in html
    assert f"<li>{WARNING}" in html
    latex = (reports["mixed"] / "rlcompare-report.tex").read_text()
    assert "\\textbf{Warning: runs on different gymnasium versions.}" in latex and "\\item cart: runs used" in latex


def test_reports_on_one_gymnasium_version_carry_no_warning(reports: dict[str, Path]) -> None:
    for name in ("rlcompare-report.md", "rlcompare-report.html", "rlcompare-report.tex"):
        assert "different gymnasium versions" not in (reports["same"] / name).read_text()


def test_score_prints_the_caveat(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from rlcompare.cli import score as score_cli
    from tests.reporting_support import report_plugins

    monkeypatch.setattr(score_cli, "load_plugins", report_plugins)
    store = _store(tmp_path / "mixed.db", "0.29.1")
    assert run_command(["score", "--store", str(store), "--reps", REPS]) == 0
    out = capsys.readouterr().out
    assert "Warning: runs on different gymnasium versions:" in out and f"  {WARNING}" in out
    assert run_command(["score", "--store", str(store), "--reps", REPS, "--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # the JSON stays clean; the caveat goes to stderr
    assert f"warning: {WARNING}" in captured.err
    same = _store(tmp_path / "same.db", "1.2.2")
    assert run_command(["score", "--store", str(same), "--reps", REPS]) == 0
    assert "gymnasium versions" not in capsys.readouterr().out


def test_mixed_versions_ignores_runs_that_never_ran_or_record_none() -> None:
    runs = pd.DataFrame([
        {"workload_id": "w", "adapter": "a", "status": "ok", "versions_json": json.dumps({"gymnasium": "1.2.2"})},
        {"workload_id": "w", "adapter": "b", "status": "unsupported", "versions_json": json.dumps({"gymnasium": "0.26.3"})},
        {"workload_id": "w", "adapter": "c", "status": "ok", "versions_json": None},
        {"workload_id": "w", "adapter": "d", "status": "failed", "versions_json": json.dumps({"numpy": "1.26.4"})},
        {"workload_id": "v", "adapter": "a", "status": "ok", "versions_json": json.dumps({"gymnasium": "1.2.2"})},
        {"workload_id": "v", "adapter": "a", "status": "failed", "versions_json": json.dumps({"gymnasium": "1.0.0"})},
    ])
    assert mixed_versions(runs) == [{"workload": "v", "versions": {"a": ["1.0.0", "1.2.2"]}}]
    assert mixed_version_warnings(runs) == [
        "v: runs used different gymnasium versions (a 1.0.0, 1.2.2): gymnasium behaviour may differ between "
        "them, so compare with care"]
    assert mixed_versions(runs.iloc[:0]) == []
