"""Documentation that is generated from the code must match the code."""

from __future__ import annotations

from pathlib import Path

from rlcompare.cli.mapping_doc import render

ROOT = Path(__file__).resolve().parents[1]


def test_hyperparameter_mapping_doc_is_current() -> None:
    committed = (ROOT / "docs" / "hyperparameters.md").read_text(encoding="utf-8")
    assert committed == render(), "regenerate with: python -m rlcompare.cli.mapping_doc > docs/hyperparameters.md"


def test_mapping_doc_covers_every_adapter_and_algorithm() -> None:
    text = render()
    for algorithm in ("PPO", "A2C", "DQN", "SAC", "ES"):
        assert f"## {algorithm} " in text
    for adapter in ("`sb3`", "`rllib`", "`tianshou`", "`torchrl`", "`skrl`", "`evotorch`"):
        assert adapter in text
    assert "`rllib` refuses A2C" in text
    assert "`sb3` refuses ES" in text and "`evotorch` refuses PPO" in text
    assert "`hyperparameters.sigma` | 0.1 |" in text
