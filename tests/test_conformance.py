"""Every built-in adapter passes the conformance kit (:mod:`rlcompare.testing`), rule by rule.

The kit is shared by the whole module, so each adapter's tiny run (and RLlib's start-up) happens
once for all its rules. The plugin module's import time is measured, not asserted (no wall-clock
assertions here); ``pytest -s`` prints each adapter's figures at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.testing.conformance import RULES, Kit, describe_timings

BUILTIN_ADAPTERS = sorted(build_plugin_manager(autoload=False).adapters)


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kit]:
    kit = Kit(tmp_path_factory.mktemp("conformance"), timeout_seconds=600, max_import_seconds=None,
              plugins_factory=lambda: build_plugin_manager(autoload=False))
    yield kit
    print("\nconformance kit per adapter:\n" + "\n".join(describe_timings(list(kit.subjects.values()))))


@pytest.mark.framework
@pytest.mark.parametrize("rule", [rule.id for rule in RULES])
@pytest.mark.parametrize("adapter_id", BUILTIN_ADAPTERS)
def test_builtin_adapter_keeps_the_contract(kit: Kit, adapter_id: str, rule: str) -> None:
    kit.check(adapter_id, rule)


def test_every_builtin_adapter_is_checked() -> None:
    assert {"sb3", "tianshou", "rllib", "torchrl", "skrl"} <= set(BUILTIN_ADAPTERS)


def test_the_tiny_workload_is_small_and_derived_from_a_registered_one(tmp_path: Path) -> None:
    kit = Kit(tmp_path, plugins_factory=lambda: build_plugin_manager(autoload=False))
    workload = kit.subject("sb3").workload
    assert workload.algorithm == "A2C" and workload.env == "CartPole-v1"  # sb3's first algorithm, alphabetically
    assert workload.env_steps == 2_000 and workload.seeds == 1 and workload.parallelism.workers == 1
    assert workload.evaluation.interval_steps == 500 and workload.evaluation.episodes == 4
    rllib = kit.subject("rllib").workload  # no A2C: its first offered algorithm with a workload is DQN
    assert rllib.algorithm == "DQN" and rllib.hyperparameters.learning_starts <= rllib.env_steps // 4
