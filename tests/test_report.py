"""The Markdown report, end to end through the CLI, and the statistics it prints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlcompare.cli import main
from rlcompare.scoring.bootstrap import mean_interval as mean_with_ci


def test_run_then_report_markdown(fake_plugin: Path, tiny_workload: Path, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    out = tmp_path / "reports"
    assert main(["run", "--workload", str(tiny_workload), "--adapters", "fake,raising", "--store", str(store)]) == 1
    assert main(["report", "--store", str(store), "--out", str(out), "--format", "md"]) == 0
    text = (out / "rlcompare-report.md").read_text()
    assert "## tiny" in text
    fake_row = next(line for line in text.splitlines() if line.startswith("| fake |"))
    assert "| 2/2 |" in fake_row
    assert "(n=2)" in fake_row
    assert "`tiny__raising__s0`: failed: RuntimeError: boom from the raising adapter" in text
    assert "**Fidelity of `fake`**" in text and "approximate" in text
    assert "## Hosts" in text
    assert "| `fakefw` | (not in the registry) |" in text  # the registry table covers every framework


def test_unknown_report_format_writes_nothing(fake_plugin: Path, tiny_workload: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    main(["run", "--workload", str(tiny_workload), "--adapters", "fake", "--seeds", "1", "--store", str(store)])
    out = tmp_path / "reports"
    assert main(["report", "--store", str(store), "--out", str(out), "--format", "md,pdf"]) == 2
    assert "unknown report format 'pdf'" in capsys.readouterr().err
    assert not out.exists()


def test_refused_pairs_are_reported_missing_with_reason(fake_plugin: Path, tmp_path: Path) -> None:
    workload = tmp_path / "pendulum-dqn.toml"
    workload.write_text('env = "Pendulum-v1"\nalgorithm = "DQN"\nenv_steps = 300\nseeds = 1\n'
                        "[hyperparameters]\nlearning_starts = 50\n[evaluation]\nepisodes = 1\n")
    store, out = tmp_path / "runs.db", tmp_path / "reports"
    # all adapters: sb3 cannot run DQN on a continuous action space, raising and sleepy offer
    # PPO only; the fake adapter runs it
    assert main(["run", "--workload", str(workload), "--store", str(store), "--timeout", "120"]) == 0
    assert main(["report", "--store", str(store), "--out", str(out)]) == 0
    text = (out / "rlcompare-report.md").read_text()
    assert "**Refused before running** (missing, not zero):" in text
    assert "`sb3`: adapter 'sb3' cannot run workload 'pendulum-dqn'" in text
    assert "`sleepy`: adapter 'sleepy' cannot run workload 'pendulum-dqn': algorithm DQN is not offered" in text
    assert "| fake |" in text


def test_mean_ci_is_reproducible_and_brackets_the_mean() -> None:
    values = [10.0, 12.0, 14.0, 30.0]
    first, second = mean_with_ci(values), mean_with_ci(values)
    assert first == second
    assert first.point == pytest.approx(np.mean(values))
    assert first.low < first.point < first.high
    assert min(values) <= first.low and first.high <= max(values)
    assert mean_with_ci([]).format() == "missing"
    assert mean_with_ci([5.0]).format() == "5.0 (n=1)"
