"""The Tunix adapter: its declarations without JAX installed, one real tiny GRPO run through the CLI, and
Tunix's own advantages and loss on the GRPO parity probe.

google-tunix 0.1.7 pins a JAX stack (jax 0.10.2, flax 0.12.8) the main environment does not hold, so the
run and the probes use the environment :mod:`rlcompare.pyenvs` builds for the adapter with uv (in the
test run's cache), as every `rlcompare run` with this adapter does.

Measured: Tunix's GRPO update is the reference's with two departures. Its advantages divide by the
group's standard deviation plus 1e-6 (``std_eps_1e-6``, declared), and its loss never trains ``<eos>``:
its sampler cuts each completion before its ``<eos>`` and the learner masks ``completion_ids != pad_id``,
so the ``<eos>`` ending a completion is outside the loss, and a completion that was only ``<eos>`` drops
out of the per-completion means (``eos_untrained``, declared). Every probe differs, explained by those two
(the Dr. GRPO case, without std scaling, by the second alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rlcompare_tunix import ADVANTAGE_ESTIMATORS, LOSS_AGG_MODES, TunixAdapter

from rlcompare.adapter import Fidelity
from rlcompare.harness.language_ids import EOS_ID
from rlcompare.harness.parity import ParityOutcome, ParityProbe
from rlcompare.parity.grpo import GRPOReference
from rlcompare.parity.reference import declared_variants
from rlcompare.parity.runner import ParityRequest, answer_many, interpreter_for, parity_requests
from rlcompare.parity.verdict import DIFFERS, judge
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.spec.builtin_families import GRPOHyperparameters
from rlcompare.spec.settings import counted_settings, outside_settings
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]
HYPERPARAMETERS = [name for name in GRPOHyperparameters.model_fields if name != "algorithm"]
REFERENCE = GRPOReference()
CASES = {case.name: case for case in REFERENCE.cases()}
VARIANT_SETTINGS = {variant.setting for variant in REFERENCE.variants.values()}
#: 8 global steps of 4 prompts x 4 completions (at most 3 tokens each: 48 a step), two optimizer steps on each
BUDGET, INTERVAL = 384, 96
RUN_ID = "addition-grpo-tunix-test__tunix__s0"
WORKLOAD_TOML = f"""
id = "addition-grpo-tunix-test"
env = "rlcompare/DigitAddition-v0"
env_kwargs = {{ digits = 1, max_new_tokens = 3 }}
algorithm = "GRPO"
env_steps = {BUDGET}
seeds = 1

[hyperparameters]
learning_rate = 1e-3
group_size = 4
prompts_per_step = 4
iterations = 2
clip_high = 0.28
kl_coef = 0.04

[evaluation]
interval_steps = {INTERVAL}
episodes = 8
"""


def _workload(**hyperparameters: object) -> Workload:
    return workload_from_dict({
        "id": "tunix-tiny", "env": "rlcompare/DigitAddition-v0", "env_kwargs": {"max_new_tokens": 3},
        "algorithm": "GRPO", "env_steps": 384, "seeds": 1,
        "hyperparameters": {"group_size": 4, "prompts_per_step": 4, **hyperparameters},
        "evaluation": {"interval_steps": 128, "episodes": 4}}, "test")


def _by_setting(workload: Workload) -> dict[str, object]:
    return {entry.setting: entry for entry in TunixAdapter().fidelity(workload)}


# -- declarations, in the main environment (no JAX there) ---------------------------------------------


def test_every_grpo_setting_is_mapped_and_nothing_else_is_listed() -> None:
    entries = _by_setting(_workload(kl_coef=0.04))
    assert set(counted_settings(HYPERPARAMETERS, language=True)) <= set(entries)
    assert outside_settings(entries, HYPERPARAMETERS, VARIANT_SETTINGS, language=True) == []
    native = {name: entries[f"hyperparameters.{name}"].native_name for name in HYPERPARAMETERS}
    assert native == {"learning_rate": "learning_rate", "group_size": "num_generations",
                      "prompts_per_step": "full_batch_size", "iterations": "num_iterations", "clip_low": "epsilon",
                      "clip_high": "epsilon_high", "kl_coef": "beta", "loss_aggregation": "loss_agg_mode",
                      "advantage_scaling": "advantage_estimator", "temperature": "temperature",
                      "max_grad_norm": "max_grad_norm"}
    assert entries["defaults.kl_estimator"].native_value == "low_var_kl"
    assert "<eos>" in entries["hyperparameters.loss_aggregation"].note


@pytest.mark.parametrize(("aggregation", "scaling"), [("token_mean", "group_std"), ("sequence_mean", "group_std"),
                                                      ("constant", "none")])
def test_aggregation_and_scaling_become_tunix_modes_and_the_std_eps_is_declared(aggregation: str,
                                                                              scaling: str) -> None:
    workload = _workload(loss_aggregation=aggregation, advantage_scaling=scaling)
    kwargs, entries = TunixAdapter().native_config(workload)
    assert kwargs["loss_agg_mode"] == LOSS_AGG_MODES[aggregation]
    assert kwargs["advantage_estimator"] == ADVANTAGE_ESTIMATORS[scaling]
    assert kwargs["kl_loss_mode"] == "low_var_kl" and kwargs["max_tokens_to_generate"] == 3
    expected = {"eos_untrained", "std_eps_1e-6"} if scaling == "group_std" else {"eos_untrained"}
    assert declared_variants(REFERENCE, entries) == expected


def test_a_temperature_with_several_iterations_is_approximate() -> None:
    assert _by_setting(_workload())["hyperparameters.temperature"].status is Fidelity.EXACT
    entry = _by_setting(_workload(iterations=2, temperature=0.7))["hyperparameters.temperature"]
    assert entry.status is Fidelity.APPROXIMATE and "ignores the temperature" in entry.note


def test_declarations_import_no_jax_nor_tunix() -> None:
    code = (
        "import sys\nfrom rlcompare_tunix import TunixAdapter\n"
        "from rlcompare.spec.workload import workload_from_dict\n"
        "w = workload_from_dict({'id': 'x', 'env': 'rlcompare/DigitAddition-v0', 'algorithm': 'GRPO', "
        "'env_steps': 1000}, 't')\n"
        "a = TunixAdapter(); a.fidelity(w); a.capabilities(); a.budget_tolerance(w); a.check_compatible(w, 'discrete')\n"
        "print(sorted(m for m in ('jax', 'tunix', 'flax', 'optax', 'torch') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_family_other_than_grpo_is_unverifiable_without_importing_jax() -> None:
    probe = ParityProbe(family="PPO", action_space={"kind": "discrete", "n": 2}, observation_dim=4, network={},
                        hyperparameters={}, weights={}, batch={})
    outcome = TunixAdapter().parity_update(probe)
    assert outcome.status == "unverifiable" and "PPO" in outcome.reason


def test_the_three_grpo_probes_are_planned_for_tunix() -> None:
    plugins = build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_tunix"), autoload=False)
    requests, verdicts = parity_requests(plugins.adapters, plugins.algorithms, ["tunix"], ["GRPO"])
    assert verdicts == []
    assert sorted(request.case.name for request in requests) == sorted(CASES)


# -- one real run, through the CLI, in Tunix's own environment -------------------------------------------


@pytest.fixture(scope="module")
def tunix_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    work = tmp_path_factory.mktemp("tunix")
    (work / "workload.toml").write_text(WORKLOAD_TOML, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RLCOMPARE_DISABLE_PLUGIN_AUTOLOAD", None)  # the adapter comes through its entry point
    done = subprocess.run([sys.executable, "-m", "rlcompare", "run", "--workload", str(work / "workload.toml"),
                           "--adapters", "tunix", "--store", str(work / "runs.db"), "--no-parity", "--json"],
                          capture_output=True, text=True, env=env, cwd=work, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return Store(work / "runs.db")


@pytest.fixture(scope="module")
def tunix_run(tunix_store: Store) -> object:
    return tunix_store.runs_frame().set_index("run_id").loc[RUN_ID]


@pytest.mark.framework
@pytest.mark.timeout(1200)
def test_tunix_run_is_valid_and_both_counts_agree(tunix_run: object) -> None:
    run = tunix_run
    assert run["status"] == "ok", run["validity_json"]
    assert json.loads(run["validity_json"])["valid"] is True
    # Tunix's sampler lengths and one <eos> per completion it stopped at <eos>: every token the harness stepped
    assert run["env_steps"] == run["framework_env_steps"]
    native = json.loads(run["native_config_json"])
    assert native["tokens_scored"] == run["env_steps"]
    assert native["sampled_tokens"] + native["eos_completions"] == run["framework_env_steps"]
    assert native["completion_mask_tokens"] + native["generated_pad_tokens"] == native["sampled_tokens"]
    assert native["completions"] == native["completions_scored"] == native["global_steps"] * 16
    # two optimizer steps per global step, each traced; the prompts ran out at the first boundary past the budget
    assert native["optimizer_steps"] == native["tunix_train_steps"] == 2 * native["global_steps"]
    assert BUDGET <= run["env_steps"] < BUDGET + 16 * 3
    # compiled on the run's shapes before the clock started, nothing compiled while it ran
    assert native["compiles_during_training"] == [] and native["warmup_seconds"] > 0
    assert native["xla_threads_pinned"] is True and native["xla_flags"].startswith("PJRT_NPROC=1 ")
    versions = json.loads(run["versions_json"])
    assert (versions["google-tunix"], versions["jax"], versions["flax"]) == ("0.1.7", "0.10.2", "0.12.8")


@pytest.mark.framework
@pytest.mark.timeout(1200)
def test_tunix_run_is_evaluated_on_the_grid_and_reports_every_grpo_setting(tunix_store: Store,
                                                                           tunix_run: object) -> None:
    curves = tunix_store.curves_frame()
    curve = curves[curves["run_id"] == RUN_ID]
    steps = list(curve["env_steps"])
    assert steps[0] == 0 and len(steps) >= BUDGET // INTERVAL + 1 and steps == sorted(steps)
    assert all(0.0 <= value <= 1.0 for value in curve["return_mean"])
    assert tunix_run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])
    reported = {item["setting"] for item in json.loads(tunix_run["fidelity_json"])}
    assert set(counted_settings(HYPERPARAMETERS, language=True)) <= reported


# -- Tunix's own advantages and loss on the parity probe ------------------------------------------------------


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[ParityProbe, ParityOutcome]]:
    """Each probe answered by the adapter's ``parity_update`` in a fresh interpreter of Tunix's environment,
    as ``rlcompare parity`` asks it (:func:`rlcompare.parity.runner.answer_many`)."""
    asked = [(ParityRequest("tunix", TunixAdapter, REFERENCE, case), REFERENCE.build_probe(REFERENCE.case_workload(case)))
             for case in CASES.values()]
    found = {}
    for name, (_, probe), (verdict, outcome) in zip(CASES, asked, answer_many(asked, interpreter_for(TunixAdapter)),
                                                    strict=True):
        assert outcome is not None, verdict.summary()
        found[name] = (probe, outcome)
    return found


@pytest.mark.framework
@pytest.mark.parametrize("name", sorted(CASES))
def test_tunix_advantages_are_the_references_with_its_std_eps(
        answers: dict[str, tuple[ParityProbe, ParityOutcome]], name: str) -> None:
    probe, outcome = answers[name]
    assert outcome.status == "ran", outcome.reason
    variants = frozenset({"std_eps_1e-6"}) if probe.hyperparameters["advantage_scaling"] == "group_std" else frozenset()
    expected = REFERENCE.expected(probe, variants).targets["advantages"]
    np.testing.assert_allclose(outcome.targets["advantages"], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.framework
@pytest.mark.parametrize("name", sorted(CASES))
def test_tunix_never_trains_eos_and_the_probe_names_it(
        answers: dict[str, tuple[ParityProbe, ParityOutcome]], name: str) -> None:
    probe, outcome = answers[name]
    assert outcome.defaults["eos_in_loss"] is False
    eos = np.asarray(probe.batch["completion_ids"]) == EOS_ID
    assert eos.any() and not outcome.gradients["per_token_logps"][eos].any()
    departures = frozenset({"eos_untrained", "std_eps_1e-6"} if probe.hyperparameters["advantage_scaling"] == "group_std"
                           else {"eos_untrained"})
    expected = REFERENCE.expected(probe, departures)
    np.testing.assert_allclose(outcome.gradients["per_token_logps"], expected.gradients["per_token_logps"],
                               rtol=1e-4, atol=1e-6)
    assert outcome.losses["policy"] == pytest.approx(expected.losses["policy"], rel=1e-4, abs=1e-6)
    declared = declared_variants(REFERENCE, TunixAdapter().fidelity(REFERENCE.case_workload(CASES[name])))
    verdict = judge(REFERENCE, CASES[name], probe, outcome, "tunix", None, declared)
    assert verdict.status == DIFFERS and verdict.variant == tuple(sorted(departures)), verdict.summary()
