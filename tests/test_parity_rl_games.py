"""rl_games' PPO parity probes (its own ``train_epoch`` on the probe's batch) and its SAC verdict.

The probes run as ``rlcompare parity`` runs them: in a fresh interpreter of rl_games' own environment,
built with uv or reused, both in one interpreter (``--batch``). Measured: rl_games' PPO epoch is the
canonical PPO update with two departures, each of which shows on both probes:

- ``adam_eps_1e-8``: its PPO agents build ``Adam(eps=1e-08)``;
- ``no_truncation_bootstrap``: a truncated episode is cut like a terminated one
  (``value_bootstrap=False`` in the adapter's configuration).

Normalizing the advantages over the whole rollout (not per minibatch) cannot show on a probe of one
minibatch; the fidelity report says it (``hyperparameters.normalize_advantage``, approximate).
"""

from __future__ import annotations

import numpy as np
import pytest
from rlcompare_rl_games import SAC_UNVERIFIABLE, RlGamesAdapter

from rlcompare.harness.parity import ParityOutcome, ParityProbe
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.runner import (
    ParityRequest,
    answer_many,
    interpreter_for,
    parity_requests,
)
from rlcompare.parity.verdict import DIFFERS, ParityVerdict, compare
from rlcompare.plugins.manager import build_plugin_manager

REFERENCE = PPOReference()
CASES = {case.name: case for case in REFERENCE.cases()}
ADAPTER = f"{RlGamesAdapter.__module__}:{RlGamesAdapter.__qualname__}"
#: The two departures of rl_games' PPO epoch from the canonical update (module docstring).
DEPARTURES = frozenset({"adam_eps_1e-8", "no_truncation_bootstrap"})


# -- without rl_games ----------------------------------------------------------------------------------


def test_both_ppo_probes_and_the_sac_probe_are_planned_for_rl_games() -> None:
    plugins = build_plugin_manager()
    requests, verdicts = parity_requests(plugins.adapters, plugins.algorithms, ["rl-games"], ["PPO", "SAC"])
    assert verdicts == []
    assert sorted((request.reference.family, request.case.name) for request in requests) == [
        ("PPO", "continuous"), ("PPO", "discrete"), ("SAC", "continuous")]


@pytest.mark.parametrize(("family", "reason"), [("DQN", "no DQN agent"), ("SAC", "log_std_bounds")])
def test_other_families_are_unverifiable_with_their_reason_without_importing_rl_games(family: str, reason: str) -> None:
    probe = ParityProbe(family=family, action_space={"kind": "discrete", "n": 2}, observation_dim=4, network={},
                        hyperparameters={}, weights={}, batch={})
    outcome = RlGamesAdapter().parity_update(probe)
    assert outcome.status == "unverifiable" and reason in outcome.reason
    assert SAC_UNVERIFIABLE.startswith("rl_games' SAC actor")


# -- the PPO probes, in rl_games' own environment ---------------------------------------------------------


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]]:
    """Each PPO probe answered by the adapter's ``parity_update`` in one fresh interpreter of rl_games'
    environment, and judged, as ``rlcompare parity`` does (:func:`rlcompare.parity.runner.answer_many`)."""
    asked = [(ParityRequest("rl-games", RlGamesAdapter, REFERENCE, case), REFERENCE.build_probe(REFERENCE.case_workload(case)))
             for case in CASES.values()]
    found = {}
    for name, (_, probe), (verdict, outcome) in zip(CASES, asked, answer_many(asked, interpreter_for(RlGamesAdapter)),
                                                    strict=True):
        assert outcome is not None, verdict.summary()
        found[name] = (probe, outcome, verdict)
    return found


@pytest.mark.framework
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", sorted(CASES))
def test_verdict_is_differs_named_by_adam_eps_and_truncation(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]], case: str) -> None:
    _, outcome, verdict = answers[case]
    assert outcome.status == "ran"
    assert (verdict.status, verdict.variant) == (DIFFERS, tuple(sorted(DEPARTURES)))
    checks = {check.part: check for check in verdict.checks}
    assert not checks["targets"].ok  # the GAE targets already differ: the truncated episode


@pytest.mark.framework
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", sorted(CASES))
def test_epoch_is_canonical_ppo_with_the_two_departures(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]], case: str) -> None:
    probe, outcome, _ = answers[case]
    checks = compare(outcome, REFERENCE.expected(probe, DEPARTURES), probe)
    assert [check.part for check in checks] == ["targets", "gradients", "updates"]
    assert all(check.ok for check in checks), [check.describe() for check in checks]
    assert max(check.error for check in checks if check.part != "updates") < 1e-5  # float32 against float64
    for departure in DEPARTURES:  # each is needed
        assert not all(check.ok for check in compare(outcome, REFERENCE.expected(probe, DEPARTURES - {departure}),
                                                      probe)), departure


@pytest.mark.framework
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_canonical_parameter_is_loaded_stepped_and_read_back(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]], case: str) -> None:
    probe, outcome, _ = answers[case]
    assert set(outcome.updated) == set(outcome.gradients) == set(probe.weights)
    assert ("policy.log_std" in outcome.updated) is (case == "continuous")
    assert set(outcome.targets) == {"advantages", "returns"}
    assert outcome.targets["advantages"].shape == probe.batch["rewards"].shape
    assert set(outcome.losses) == {"policy", "value", "entropy", "total"}
    assert all(np.isfinite(value).all() for value in outcome.gradients.values())


@pytest.mark.framework
@pytest.mark.timeout(900)
def test_defaults_are_read_back_from_the_built_agent(
        answers: dict[str, tuple[ParityProbe, ParityOutcome, ParityVerdict]]) -> None:
    defaults = answers["discrete"][1].defaults
    assert {key: defaults[key] for key in (
        "optimizer", "adam_eps", "learning_rate_schedule", "clip_value", "normalize_input", "normalize_value",
        "value_bootstrap", "truncate_grads", "grad_clip_scope", "advantage_normalization", "minibatch_shuffle",
        "critic_coef", "ppo")} == {
        "optimizer": "Adam", "adam_eps": 1e-8, "learning_rate_schedule": "IdentityScheduler", "clip_value": False,
        "normalize_input": False, "normalize_value": False, "value_bootstrap": False, "truncate_grads": True,
        "grad_clip_scope": "joint", "advantage_normalization": "per rollout", "minibatch_shuffle": False,
        "critic_coef": 1.0, "ppo": True}
    assert defaults["learning_rate"] == pytest.approx(3e-4)
    continuous = answers["continuous"][1].defaults
    assert (continuous["log_std_init"], continuous["action_squashing"], continuous["bounds_loss_coef"]) == (
        0.0, "none", 0.0)
