"""RLlib's own update on the parity probes (a local Learner, no Ray cluster); the schedule its
training runs trace is checked on test_rllib's runs (test_training_runs_trace_their_schedule).

PPO differs from the canonical update in two named ways: RLlib's
``GeneralAdvantageEstimation`` standardizes the advantages over its train batch *including* the one
artificial bootstrap row per episode chunk that ``AddOneTsToEpisodesAndTruncate`` appends (masked
out of the loss, not out of the mean and standard deviation), with the biased standard deviation and
``max(std, 1e-4)`` (the variant ``advantage_norm_with_bootstrap_rows``); and its Adam's epsilon is
torch's 1e-8. RLlib's gradients match the reference under exactly those two variants to float32
rounding, which pins down that nothing else differs.
"""

from __future__ import annotations

from typing import Any

import pytest

from rlcompare.harness.parity import RAN, UNVERIFIABLE, ParityOutcome, ParityProbe
from rlcompare.parity import ppo as ppo_reference
from rlcompare.parity.dqn import DQNReference
from rlcompare.parity.networks import tensors
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.reference import ReferenceUpdate
from rlcompare.parity.verdict import DIFFERS, TOLERANCES, VERIFIED, _check, judge

pytestmark = pytest.mark.framework

#: The PPO variant that names RLlib's advantage normalization (see the module docstring).
BOOTSTRAP_ROWS = "advantage_norm_with_bootstrap_rows"


def _probe(reference: ReferenceUpdate, case_name: str) -> tuple[Any, ParityProbe]:
    case = next(case for case in reference.cases() if case.name == case_name)
    return case, reference.build_probe(reference.case_workload(case))


def _answer(probe: ParityProbe) -> ParityOutcome:
    import torch
    from rlcompare_rllib import RLlibAdapter

    torch.set_num_threads(1)  # as the parity worker pins it
    return RLlibAdapter().parity_update(probe)


@pytest.fixture(scope="module", params=["discrete", "continuous"])
def ppo(request: pytest.FixtureRequest) -> tuple[Any, ParityProbe, ParityOutcome]:
    case, probe = _probe(PPOReference(), request.param)
    return case, probe, _answer(probe)


def test_ppo_targets_are_the_canonical_gae_and_the_step_differs(ppo: tuple[Any, ParityProbe, ParityOutcome]) -> None:
    case, probe, outcome = ppo
    assert outcome.status == RAN
    verdict = judge(PPOReference(), case, probe, outcome, "rllib")
    checks = {check.part: check for check in verdict.checks}
    # GAE and returns over the stored values: RLlib's compute_value_targets is the canonical one
    assert checks["targets"].error < 1e-6
    assert verdict.status == DIFFERS
    assert verdict.variant == ("adam_eps_1e-8", BOOTSTRAP_ROWS)
    assert checks["gradients"].error > 10 * TOLERANCES["gradients"]


def test_ppo_step_is_the_reference_with_bootstrap_rows_and_adam_eps_1e_8(
        ppo: tuple[Any, ParityProbe, ParityOutcome]) -> None:
    _, probe, outcome = ppo
    expected = PPOReference().expected(probe, frozenset({"adam_eps_1e-8", BOOTSTRAP_ROWS}))
    assert _check("gradients", outcome.gradients, expected.gradients).error < 1e-5
    changes = {name: value - probe.weights[name] for name, value in outcome.updated.items()}
    reference = {name: value - probe.weights[name] for name, value in expected.updated.items()}
    assert _check("updates", changes, reference).error < 1e-4
    # without the bootstrap rows in the normalization, no Adam epsilon explains the step
    alone = PPOReference().expected(probe, frozenset({"adam_eps_1e-8"}))
    assert _check("gradients", outcome.gradients, alone.gradients).error > TOLERANCES["gradients"]


def test_ppo_defaults_and_notes_are_read_back(ppo: tuple[Any, ParityProbe, ParityOutcome]) -> None:
    _, probe, outcome = ppo
    defaults = outcome.defaults
    assert defaults["optimizer"] == "Adam" and defaults["adam_eps"] == 1e-8
    assert defaults["value_clipping"] == "off" and defaults["use_kl_loss"] is False
    assert defaults["grad_clip"] == probe.hyperparameters["max_grad_norm"]
    assert defaults["grad_clip_by"] == "global_norm"
    assert defaults["entropy_coeff"] == probe.hyperparameters["entropy_coef"]
    assert "GeneralAdvantageEstimation" in defaults["learner_connector"]
    assert defaults["vf_share_layers"] is False
    if probe.discrete:
        assert "action_squashing" not in defaults
    else:  # the adapter asks for canonical PPO's state-independent log-std, which starts at 0
        assert defaults["free_log_std"] is True and defaults["log_std_init"] == [0.0]
        assert defaults["normalize_actions"] is True
    assert any("20 rows for 16 transitions" in note for note in outcome.notes)
    assert pytest.approx(outcome.losses["entropy"], rel=1e-5) == float(-_entropy(probe))


def test_ppo_minibatches_count_the_bootstrap_rows() -> None:
    """With the probe's minibatch_size (16 = the 16 transitions), one epoch is two optimizer steps:
    RLlib's MiniBatchCyclicIterator cycles over the 20 rows, bootstrap rows included."""
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID
    from rlcompare_rllib import RLlibAdapter
    from rlcompare_rllib.parity import _ppo_episodes, build_learner, episode_chunks

    torch.set_num_threads(1)
    _, probe = _probe(PPOReference(), "discrete")
    config, learner, module = build_learner(RLlibAdapter(), probe)
    episodes = _ppo_episodes(probe, module, episode_chunks(probe.batch))
    steps = []
    optimizer = dict(learner.get_optimizers_for_module(DEFAULT_MODULE_ID))["default_optimizer"]
    step = optimizer.step
    optimizer.step = lambda *args, **kwargs: (steps.append(1), step(*args, **kwargs))[1]
    learner.update(episodes=episodes, timesteps={}, num_epochs=config.num_epochs, minibatch_size=config.minibatch_size,
                   shuffle_batch_per_epoch=config.shuffle_batch_per_epoch)
    assert config.minibatch_size == 16 and config.num_epochs == 1
    assert len(steps) == 2


@pytest.mark.parametrize("case_name", ["discrete", "discrete-clipped"])
def test_dqn_is_verified(case_name: str) -> None:
    case, probe = _probe(DQNReference(), case_name)
    outcome = _answer(probe)
    verdict = judge(DQNReference(), case, probe, outcome, "rllib")
    assert verdict.status == VERIFIED, verdict.summary()
    assert {check.part for check in verdict.checks} == {"targets", "gradients", "updates"}
    assert outcome.defaults["td_loss"] == "huber" and outcome.defaults["double_q"] is False
    assert outcome.defaults["adam_eps"] == 1e-8
    assert outcome.defaults["target_update"] == "hard every 10000 sampled env steps"
    assert any("target network moved by 0" in note for note in outcome.notes)


def test_sac_is_unverifiable_with_the_critic_architecture_as_reason() -> None:
    from rlcompare.parity.sac import SACReference

    _, probe = _probe(SACReference(), "continuous")
    outcome = _answer(probe)
    assert outcome.status == UNVERIFIABLE
    assert "TorchMultiStreamEncoder" in outcome.reason and "fusion network [256, 256]" in outcome.reason
    defaults = outcome.defaults
    assert defaults["adam_eps"] == {"qf": 1e-7, "qf_twin": 1e-7, "policy": 1e-7, "alpha": 1e-7}
    assert defaults["target_update"] == "polyak tau 0.005 every update" and defaults["target_entropy"] == -1.0


def test_a_family_without_a_probe_is_unverifiable() -> None:
    from rlcompare_rllib import RLlibAdapter

    _, probe = _probe(PPOReference(), "discrete")
    other = ParityProbe(**{**probe.__dict__, "family": "A2C"})
    outcome = RLlibAdapter().parity_update(other)
    assert outcome.status == UNVERIFIABLE and outcome.reason == "no A2C probe is implemented for RLlib"


def _entropy(probe: ParityProbe) -> float:
    """The mean entropy of the probe's policy at its observations (RLlib reports it before the step)."""
    import torch

    params = tensors(probe.weights, requires_grad=False)
    steps, envs = probe.batch["rewards"].shape
    obs = torch.tensor(probe.batch["obs"].reshape(steps * envs, -1))
    dist = ppo_reference._distribution(params, probe.network["hidden_sizes"], probe.network["activation"], obs,
                                       probe.discrete)
    return float(ppo_reference._entropy(dist, probe.discrete).mean())
