"""The conformance kit as an adapter author meets it: ``pytest --rlcompare-adapter ID`` in a fresh
interpreter, on outside packages put on the path (tests/plugins/*/ with their *.dist-info).

- tests/plugins/conformance_broken: one adapter per contract rule, each breaking that rule; the kit
  must fail it with the message that says what to fix, and pass the rules it keeps.
- tests/plugins/example_adapter: the worked example of docs/writing-an-adapter.md (a framework with
  no public repository, a numpy A2C); it passes the kit, runs with ``rlcompare run`` and is scored.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from rlcompare.testing.conformance import RULES
from tests.conftest import ROOT, run_cli

BROKEN = ROOT / "tests" / "plugins" / "conformance_broken"
EXAMPLE = ROOT / "tests" / "plugins" / "example_adapter"

#: Rule -> the adapter that breaks it, and what the kit must say.
BREACHES: dict[str, tuple[str, tuple[str, ...]]] = {
    "registration": ("nofw", ("framework 'brokenkit-unlisted' names no registry entry (did you mean 'brokenkit'?)",
                              "rlcompare_register_frameworks")),
    "light_import": ("heavy", ("importing the plugin module 'brokenkit_rlcompare.heavy' imports brokenkit_fw",
                               "import the framework inside train() only")),
    "light_declarations": ("eagerdecl", ("capabilities() or fidelity() imported brokenkit_fw",
                                         "import the framework in train() only")),
    "fidelity_coverage": ("partialfidelity", ("fidelity() misses settings: gae_lambda, rollout_steps (A2C)",
                                              "add a FidelityEntry (rlcompare.adapter) for each canonical setting")),
    "canonical_settings": ("paddedfidelity", ("fidelity() lists settings outside the canonical set: padding.made_up, "
                                              "algorithm (A2C", "defaults.adam_eps", "remove them")),
    "budget_grain": ("coarsegrain", ("budget_tolerance() on workload 'conformance-coarsegrain': it declares a budget "
                                     "grain of generation, +-1000 env steps, coarser than A2C allows (rollout, +-",
                                     "a generation is coarser than a rollout", "stop at the family's grain")),
    "trains_within_budget": ("overshoot", ("is invalid: 4000 env steps, 2000 past the budget of 2000",
                                           "stop when context.budget_reached, within Adapter.budget_tolerance")),
    "checkpoints": ("nocheckpoints", ("no evaluation near env step 500, 1000, 1500 (points at 2000",
                                      "call context.checkpoint(policy, framework_steps) after every rollout")),
    "policy_batches": ("squeezed", ("returned an array of shape () for a batch of 1 observations",
                                    "batches shrink from 8 to 1 as evaluation episodes end")),
    "no_lingering_processes": ("leaky", ("1 processes outlived the run: python",
                                         "stop what train() starts")),
    "seeds_in_program": ("loneprogram", ("capabilities() declares seeds_in_one_program, but two seeds in one program "
                                         "did not train into valid runs",
                                         "does not train several seeds in one program",
                                         "implement Adapter.train_seeds(workload, contexts)")),
    "parity": ("skewedupdate", ("A2C (discrete): the update differs from the reference and no known variant "
                                "explains it", "rlcompare parity --adapters skewedupdate shows the verdicts")),
}
#: Rules a breach also fails, because the run it spoils is what they judge.
ALSO_FAILS = {"squeezed": {"trains_within_budget", "checkpoints", "no_lingering_processes"},
              # `rlcompare plan` refuses its pair: the tiny run every training rule judges never starts
              "coarsegrain": {"trains_within_budget", "checkpoints", "policy_batches", "no_lingering_processes"}}


def run_kit(package: Path, adapters: str, tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str],
                                                                             dict[tuple[str, str], str | None]]:
    """``pytest --rlcompare-adapter ADAPTERS`` in a fresh interpreter with ``package`` on the path;
    returns the run and ``(adapter, rule) -> failure message`` (None when the rule passed)."""
    report = tmp_path / "kit.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(ROOT)]),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "rlcompare.testing.pytest_plugin", "-p", "no:cacheprovider",
         "--rlcompare-adapter", adapters, f"--junitxml={report}", "-q", *extra],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )
    outcomes: dict[tuple[str, str], str | None] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        adapter, rule = case.get("name", "").removeprefix("rlcompare-conformance[").removesuffix("]").split("-", 1)
        failure = case.find("failure")
        outcomes[(adapter, rule)] = None if failure is None else (failure.text or failure.get("message") or "")
    return completed, outcomes


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                               dict[tuple[str, str], str | None]]:
    adapters = ",".join([*(adapter for adapter, _ in BREACHES.values()), "notrain"])
    return run_kit(BROKEN, adapters, tmp_path_factory.mktemp("broken"))


def test_every_rule_has_a_breach_under_test() -> None:
    assert set(BREACHES) == {rule.id for rule in RULES}


@pytest.mark.parametrize("rule", list(BREACHES))
def test_the_kit_fails_a_breach_saying_what_to_fix(broken: tuple[subprocess.CompletedProcess[str], dict],
                                                    rule: str) -> None:
    completed, outcomes = broken
    adapter, expected = BREACHES[rule]
    message = outcomes[(adapter, rule)]
    assert message is not None, f"{adapter} passed {rule}:\n{completed.stdout[-3000:]}"
    assert f"adapter '{adapter}' breaks rule {rule}" in message
    for text in expected:
        assert text in message, message
    # the message is short: one line of what and how (after the line naming adapter and rule)
    assert len(message.strip().splitlines()) == 2, message
    kept = {other.id for other in RULES} - {rule} - ALSO_FAILS.get(adapter, set())
    assert [other for other in sorted(kept) if outcomes[(adapter, other)] is not None] == []
    assert f"FAILED ::rlcompare-conformance[{adapter}-{rule}]" in completed.stdout


def test_a_class_refused_at_registration_is_named(broken: tuple[subprocess.CompletedProcess[str], dict]) -> None:
    _, outcomes = broken
    message = outcomes[("notrain", "registration")]
    assert message is not None and "adapter 'notrain' is not registered: " in message
    assert "adapter 'notrain' does not implement train" in message


def test_unknown_adapter_is_named(tmp_path: Path) -> None:
    completed, outcomes = run_kit(EXAMPLE, "tinyacc", tmp_path)
    message = outcomes[("tinyacc", "registration")]
    assert message is not None and "adapter 'tinyacc' is not registered; did you mean 'tinyac'?" in message


def test_the_worked_example_passes_the_kit_runs_and_is_scored(tmp_path: Path) -> None:
    completed, outcomes = run_kit(EXAMPLE, "tinyac", tmp_path)
    assert completed.returncode == 0, completed.stdout[-3000:]
    assert set(outcomes) == {("tinyac", rule.id) for rule in RULES} and not any(outcomes.values())
    assert "rlcompare conformance" in completed.stdout and "tinyac:" in completed.stdout

    env = {"PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(ROOT)]), "RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD": ""}
    listed = run_cli(["list", "adapters", "--json"], env=env)
    assert listed.returncode == 0 and "tinyac" in listed.stdout
    frameworks = run_cli(["frameworks", "--json"], env=env)
    assert frameworks.returncode == 0, frameworks.stderr
    entry = next(item for item in json.loads(frameworks.stdout) if item["id"] == "tinyac")
    assert entry["repository"] == "none"

    workload = tmp_path / "cartpole-a2c-small.toml"
    workload.write_text('id = "cartpole-a2c-small"\nenv = "CartPole-v1"\nalgorithm = "A2C"\nenv_steps = 4000\n'
                        'seeds = 2\n[parallelism]\nenvs_per_worker = 4\n[hyperparameters]\nrollout_steps = 5\n'
                        '[evaluation]\ninterval_steps = 1000\nepisodes = 3\n', encoding="utf-8")
    store = tmp_path / "results.db"
    ran = run_cli(["run", "--workload", str(workload), "--adapters", "tinyac", "--store", str(store)], env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    scored = run_cli(["score", "--store", str(store), "--json", "--reps", "200"], env=env)
    assert scored.returncode == 0, scored.stderr
    assert "tinyac" in scored.stdout


def test_the_pytest_plugin_module_is_light() -> None:
    """Loaded by every pytest session where rlcompare is installed: pytest only, until the option."""
    code = ("import sys, rlcompare.testing.pytest_plugin as p; "
            "print(sorted(m for m in sys.modules if m.startswith(('rlcompare', 'torch', 'numpy', 'pydantic'))))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    imported = set(ast.literal_eval(completed.stdout.strip()))
    # nothing beyond the plugin's own package and (at most) the hook markers; no torch, numpy, pydantic
    assert "rlcompare.testing.pytest_plugin" in imported
    assert imported <= {"rlcompare", "rlcompare.hookspecs", "rlcompare.testing", "rlcompare.testing.pytest_plugin"}


def test_an_outside_package_with_its_own_algorithm_family_and_framework_passes_the_kit(tmp_path: Path) -> None:
    """tests/plugins/algos registers a family (CEM), its framework's registry entry and an adapter."""
    completed, outcomes = run_kit(ROOT / "tests" / "plugins" / "algos", "cem", tmp_path)
    assert set(outcomes) == {("cem", rule.id) for rule in RULES}, completed.stdout[-2000:]
    assert not any(outcomes.values()), {key: value for key, value in outcomes.items() if value}
