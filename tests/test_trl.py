"""The TRL adapter: its declarations without TRL installed, one real tiny GRPO run in TRL's own
environment through the runner, and its GRPO parity (TRL's own advantages and loss) with an outside
adapter that aggregates the loss other than it declares.

TRL pulls transformers, accelerate and datasets, which the main environment does not hold: the run and
the probes use the environment :mod:`rlcompare.pyenvs` builds for the adapter (uv, in the user cache,
reused when ready), as every `rlcompare run` with this adapter does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_trl import LOSS_TYPES, TRLAdapter

from rlcompare.adapter import Fidelity
from rlcompare.errors import IncompatibleError
from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.execution.local import LocalBackend
from rlcompare.parity.grpo import GRPOReference
from rlcompare.parity.reference import declared_variants
from rlcompare.parity.runner import ParityRequest, answer_many, interpreter_for
from rlcompare.parity.verdict import DIFFERS, VERIFIED, judge
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]
DIFFERS_PLUGINS = ROOT / "tests" / "plugins" / "grpodiffers"
#: Ten optimizer steps of 4 prompts x 4 completions of at most 3 tokens; evaluated every 96 tokens.
BUDGET, INTERVAL = 480, 96


def _workload(**changes: object) -> Workload:
    spec: dict[str, object] = {
        "id": "trl-tiny", "env": "rlcompare/DigitAddition-v0", "algorithm": "GRPO", "env_steps": BUDGET, "seeds": 1,
        "hyperparameters": {"group_size": 4, "prompts_per_step": 4, "kl_coef": 0.04, "clip_high": 0.28},
        "evaluation": {"interval_steps": INTERVAL, "episodes": 4},
    }
    spec.update(changes)
    return workload_from_dict(spec, "test")


def test_every_grpo_setting_is_mapped_exactly_with_its_native_name() -> None:
    entries = {entry.setting: entry for entry in TRLAdapter().fidelity(_workload())}
    native = {name.removeprefix("hyperparameters."): entry.native_name for name, entry in entries.items()
              if name.startswith("hyperparameters.")}
    assert native == {"learning_rate": "learning_rate", "group_size": "num_generations",
                      "prompts_per_step": "per_device_train_batch_size", "iterations": "num_iterations",
                      "clip_low": "epsilon", "clip_high": "epsilon_high", "kl_coef": "beta",
                      "loss_aggregation": "loss_type", "advantage_scaling": "scale_rewards",
                      "temperature": "temperature", "max_grad_norm": "max_grad_norm"}
    assert {entry.status for entry in entries.values()} == {Fidelity.EXACT}
    assert entries["language_model"].native_name == "transformers.Qwen2ForCausalLM"
    config, _ = TRLAdapter().native_config(_workload())
    assert (config["per_device_train_batch_size"], config["num_generations"], config["max_completion_length"]) == (16, 4, 3)
    assert config["lr_scheduler_type"] == "constant" and config["use_bias_correction_kl"] is False
    assert config["shuffle_dataset"] is False and config["gradient_accumulation_steps"] == 1
    for aggregation, loss_type in LOSS_TYPES.items():
        config, _ = TRLAdapter().native_config(_workload(hyperparameters={"loss_aggregation": aggregation}))
        assert config["loss_type"] == loss_type


def test_control_workloads_are_refused_naming_both() -> None:
    workload = workload_from_dict({"id": "x-ppo", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000}, "t")
    with pytest.raises(IncompatibleError, match=r"'trl'.*'x-ppo'.*PPO is not offered"):
        TRLAdapter().check_compatible(workload, "discrete")


def test_declarations_import_no_torch_nor_trl() -> None:
    code = (
        "import sys\nfrom rlcompare_trl import TRLAdapter\n"
        "from rlcompare.spec.workload import workload_from_dict\n"
        "w = workload_from_dict({'id': 'x', 'env': 'rlcompare/DigitAddition-v0', 'algorithm': 'GRPO', "
        "'env_steps': 1920}, 't')\n"
        "a = TRLAdapter(); a.fidelity(w); a.capabilities(); a.budget_tolerance(w); a.check_compatible(w, 'discrete')\n"
        "print(sorted(m for m in ('torch', 'trl', 'transformers', 'datasets', 'gymnasium') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- in TRL's own environment ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trl_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plugins = build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_trl"), autoload=False)
    plan = place_runs(plugins.adapters, build_plan(plugins.plan_catalogue(), [_workload()], ["trl"]))
    assert [run.environment is not None for run in plan.runs] == [True]
    store = Store(tmp_path_factory.mktemp("trl") / "runs.db")
    summary = Driver(store, LocalBackend(Limits(900, None), BackendOptions(jobs=1))).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"], [o.record.traceback for o in summary.outcomes]
    return store


@pytest.mark.framework
@pytest.mark.timeout(900)
def test_a_tiny_grpo_run_is_valid_and_every_generated_token_is_counted_by_the_harness(trl_store: Store) -> None:
    run = trl_store.runs_frame().iloc[0]
    assert run["status"] == "ok" and json.loads(run["validity_json"])["valid"], run["validity_json"]
    assert run["framework_env_steps"] == run["env_steps"]  # TRL's token count less its prompts: the harness's
    assert BUDGET <= run["env_steps"] < BUDGET + 48  # stops at the first step past the budget
    native = json.loads(run["native_config_json"])
    assert native["tokens_scored"] == run["env_steps"] and native["completions_scored"] == 16 * native["optimizer_steps"]
    assert native["loss_type"] == "dapo" and native["beta"] == 0.04
    curve = trl_store.curves_frame()
    assert list(curve["grid_steps"].dropna().astype(int))[:5] == [0, 96, 192, 288, 384]
    assert all(0.0 <= value <= 1.0 for value in curve["return_mean"])
    assert run["startup_seconds"] > 0 and run["training_seconds"] > 0


GRPO = GRPOReference()
CASES = {case.name: case for case in GRPO.cases()}


@pytest.fixture(scope="module")
def answers() -> dict[tuple[str, str], object]:
    """Each GRPO probe answered by TRL, and by the outside adapter that averages per completion behind a
    token-mean report, in fresh interpreters of TRL's environment, as ``rlcompare parity`` asks them."""
    sys.path.insert(0, str(DIFFERS_PLUGINS))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(DIFFERS_PLUGINS), os.environ.get("PYTHONPATH")]))
    try:
        from grpodiffers_rlcompare import SequenceMeanTRL

        found = {}
        for adapter_id, adapter in (("trl", TRLAdapter), ("trl-seqmean", SequenceMeanTRL)):
            asked = [(ParityRequest(adapter_id, adapter, GRPO, case), GRPO.build_probe(GRPO.case_workload(case)))
                     for case in CASES.values()]
            for (request, probe), (verdict, outcome) in zip(asked, answer_many(asked, interpreter_for(TRLAdapter)),
                                                            strict=True):
                assert outcome is not None, verdict.summary()
                declared = declared_variants(GRPO, adapter().fidelity(GRPO.case_workload(request.case)))
                found[(adapter_id, request.case.name)] = judge(GRPO, request.case, probe, outcome, adapter_id,
                                                               None, declared)
        return found
    finally:
        sys.path.remove(str(DIFFERS_PLUGINS))
        os.environ["PYTHONPATH"] = os.environ["PYTHONPATH"].removeprefix(str(DIFFERS_PLUGINS)).lstrip(os.pathsep)


@pytest.mark.framework
@pytest.mark.parametrize("case", sorted(CASES))
def test_trl_grpo_advantages_and_loss_are_the_reference_for_every_aggregation(answers: dict, case: str) -> None:
    verdict = answers[("trl", case)]
    assert verdict.status == VERIFIED, verdict.summary()
    assert {check.part for check in verdict.checks} == {"targets", "gradients"}
    assert verdict.defaults["loss_type"] == LOSS_TYPES[case]


@pytest.mark.framework
def test_an_adapter_that_averages_per_completion_behind_a_token_mean_report_is_caught(answers: dict) -> None:
    verdict = answers[("trl-seqmean", "token_mean")]
    assert verdict.status == DIFFERS and verdict.variant == ("aggregation_sequence_mean",), verdict.summary()
    # where it configures what it declares, it is verified like TRL
    assert answers[("trl-seqmean", "sequence_mean")].status == VERIFIED
    assert answers[("trl-seqmean", "constant")].status == VERIFIED
