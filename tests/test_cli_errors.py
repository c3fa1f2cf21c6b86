"""Bad input: one line naming the offending field or name, exit status 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompare.cli.main import main
from tests.conftest import TINY_WORKLOAD, run_cli

# (what is wrong, the TOML text, a fragment the one-line message must contain)
INVALID_WORKLOADS = [
    ("missing env", TINY_WORKLOAD.replace('env = "CartPole-v1"\n', ""), "field 'env' is required"),
    ("unknown algorithm", TINY_WORKLOAD.replace('"PPO"', '"PPOO"'), "field 'algorithm'"),
    ("negative budget", TINY_WORKLOAD.replace("env_steps = 600", "env_steps = -5"), "field 'env_steps'"),
    ("misspelled hyperparameter", TINY_WORKLOAD.replace("epochs = 2", "epochs = 2\nlearning_rat = 0.1"),
     "field 'hyperparameters.learning_rat' is not a known setting; did you mean 'learning_rate'"),
    ("wrong type", TINY_WORKLOAD + '[parallelism]\nworkers = "two"\n', "field 'parallelism.workers'"),
    ("zero seeds", TINY_WORKLOAD.replace("seeds = 2", "seeds = 0"), "field 'seeds'"),
    ("unknown environment", TINY_WORKLOAD.replace("CartPole-v1", "CartPole-v9"),
     "unknown environment 'CartPole-v9'; did you mean 'CartPole-v1'"),
    ("unknown top-level field", TINY_WORKLOAD.replace('id = "tiny"', 'id = "tiny"\nbudget = 5'),
     "field 'budget' is not a known setting"),
    ("evaluation interval past budget", TINY_WORKLOAD.replace("interval_steps = 200", "interval_steps = 5000"),
     "evaluation.interval_steps (5000) exceeds env_steps (600)"),
    ("not TOML", TINY_WORKLOAD + "this is = = not toml\n", "not valid TOML"),
    ("future spec version", "spec_version = 2\n" + TINY_WORKLOAD, "field 'spec_version'"),
    ("unknown activation", TINY_WORKLOAD + '[network]\nactivation = "gelu"\n', "field 'network.activation'"),
    ("gamma out of range", TINY_WORKLOAD.replace("epochs = 2", "epochs = 2\ngamma = 1.5"),
     "field 'hyperparameters.gamma'"),
    ("zero-width layer", TINY_WORKLOAD + "[network]\nhidden_sizes = [64, 0]\n", "field 'network.hidden_sizes.1': Input should be greater than 0 (got 0)"),
    ("algorithm-specific setting on the wrong algorithm", TINY_WORKLOAD.replace("epochs = 2", "epochs = 2\nbuffer_size = 10"),
     "field 'hyperparameters.buffer_size' is not a known setting"),
]


def _main_status(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        status = main(args)
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    return status, capsys.readouterr().err


@pytest.mark.parametrize(("kind", "text", "expected"), INVALID_WORKLOADS, ids=[k for k, _, _ in INVALID_WORKLOADS])
def test_invalid_workload_exits_2_naming_the_field(
    kind: str, text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = tmp_path / "bad.toml"
    workload.write_text(text, encoding="utf-8")
    store = tmp_path / "store.db"
    status, err = _main_status(["run", "--workload", str(workload), "--store", str(store)], capsys)
    assert status == 2, kind
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert expected in lines[0]
    assert str(workload) in lines[0] or "environment" in lines[0]
    assert not store.exists(), "nothing may be written on bad input"


BAD_OPTIONS = [
    (["run", "--suite", "quick", "--seeds", "-1"], "argument --seeds: expected a positive integer, got -1"),
    (["run", "--suite", "quick", "--seeds", "0"], "argument --seeds"),
    (["run", "--suite", "quick", "--jobs", "0"], "argument --jobs: expected a positive integer, got 0"),
    (["run", "--suite", "quick", "--timeout", "0"], "argument --timeout"),
    (["run", "--suite", "quik"], "unknown suite 'quik'; did you mean 'quick'"),
    (["run", "--suite", "quick", "--adapters", "sb33"], "unknown adapter 'sb33'; did you mean 'sb3'"),
    (["run", "--suite", "quick", "--adapters", "sb3,"], "argument --adapters"),
    (["run"], "give --suite NAME or --workload FILE"),
    (["run", "--workload", "does-not-exist.toml"], "does-not-exist.toml: cannot read workload file"),
    (["plan", "--suite", "quick", "--seeds", "x"], "argument --seeds"),
]


@pytest.mark.parametrize(("args", "expected"), BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_bad_option_exits_2_with_one_line(
    args: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store.db"
    full = [*args, "--store", str(store)] if args[0] == "run" else args
    status, err = _main_status(full, capsys)
    assert status == 2
    assert len(err.strip().splitlines()) == 1, err
    assert expected in err
    assert not store.exists()


def test_both_suite_and_workload_refused(tiny_workload: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _main_status(["plan", "--suite", "quick", "--workload", str(tiny_workload)], capsys)
    assert status == 2
    assert "either --suite or --workload" in err


def test_report_without_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports"
    status, err = _main_status(["report", "--store", str(tmp_path / "none.db"), "--out", str(out)], capsys)
    assert status == 2
    assert "--store: no results store" in err
    assert not out.exists()


def test_errors_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """The same contract through the installed entry point, not only in-process."""
    result = run_cli(["run", "--suite", "quick", "--jobs", "0", "--store", str(tmp_path / "s.db")])
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["rlcompare run: error: argument --jobs: expected a positive integer, got 0"]
    assert not (tmp_path / "s.db").exists()
