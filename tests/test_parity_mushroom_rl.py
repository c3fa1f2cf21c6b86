"""MushroomRL's own updates on rlcompare's parity probes, judged against the reference updates."""

from __future__ import annotations

import importlib

import pytest

from rlcompare.parity.reference import ReferenceUpdate, declared_variants
from rlcompare.parity.runner import ParityRequest, ask_many, interpreter_for
from rlcompare.parity.verdict import DIFFERS, UNVERIFIABLE, VERIFIED, ParityVerdict

pytestmark = pytest.mark.framework

#: What MushroomRL 1.10's update is, by (family, probe case). PPO: PPO.fit normalizes advantages with
#: numpy's biased std, and neither PPO._update_policy nor the critic's TorchApproximator._fit_batch
#: clips gradients. DQN: TorchApproximator does not clip either (the clipped probe shows it; the other
#: matches). TD3, DDPG: the canonical update (the probe's delay is 1 and its smoothing noise 0). SAC:
#: the actor is two networks, no place for the probe's one trunk with two heads.
EXPECTED: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("PPO", "discrete"): (DIFFERS, ("advantage_std_biased", "no_grad_clip")),
    ("PPO", "continuous"): (DIFFERS, ("advantage_std_biased", "no_grad_clip")),
    ("DQN", "discrete"): (VERIFIED, ()),
    ("DQN", "discrete-clipped"): (DIFFERS, ("no_grad_clip",)),
    ("TD3", "continuous"): (VERIFIED, ()),
    ("DDPG", "continuous"): (VERIFIED, ()),
    ("SAC", "continuous"): (UNVERIFIABLE, ()),
}


def _reference(family: str) -> ReferenceUpdate:
    module = importlib.import_module(f"rlcompare.parity.{'td3' if family == 'DDPG' else family.lower()}")
    return getattr(module, f"{family}Reference")()


@pytest.fixture(scope="module")
def verdicts() -> dict[tuple[str, str], ParityVerdict]:
    """MushroomRL's answer to every probe, asked as ``rlcompare parity`` asks them: all in one fresh
    interpreter, each judged on its own."""
    from rlcompare_mushroom_rl import MushroomRLAdapter

    asked = []
    for family, case_name in EXPECTED:
        reference = _reference(family)
        case = next(case for case in reference.cases() if case.name == case_name)
        workload = reference.case_workload(case)
        declared = declared_variants(reference, MushroomRLAdapter().fidelity(workload))
        asked.append((ParityRequest("mushroom-rl", MushroomRLAdapter, reference, case, declared),
                      reference.build_probe(workload)))
    answers = ask_many(asked, interpreter_for(MushroomRLAdapter))
    return dict(zip(EXPECTED, answers, strict=True))


@pytest.mark.parametrize(("family", "case"), list(EXPECTED))
def test_update_matches_the_reference_or_the_declared_variant_that_explains_it(
        verdicts: dict[tuple[str, str], ParityVerdict], family: str, case: str) -> None:
    verdict = verdicts[(family, case)]
    status, variant = EXPECTED[(family, case)]
    assert verdict.status == status, verdict.summary()
    assert verdict.variant == variant, verdict.summary()
    if status == UNVERIFIABLE:
        assert "two separate approximators" in verdict.reason
        return
    # the targets (GAE with the truncation bootstrap, TD targets) are canonical in every case
    assert {check.part: check.ok for check in verdict.checks}["targets"], verdict.summary()
    defaults = verdict.defaults
    assert defaults["optimizer"] == "Adam"
    assert defaults["adam_eps"] == (1e-5 if family == "PPO" else 1e-8)
    if family == "PPO":
        assert defaults["critic_optimizer"]["adam_eps"] == 1e-5
        assert defaults["advantage_normalization"].startswith("whole rollout")
    if family == "DQN":
        assert defaults["td_loss"].startswith("huber") and defaults["double_q"] is False
        assert defaults["target_update"].startswith("hard copy every 10000 fits")


def test_declared_variants_are_exactly_what_the_fidelity_report_says() -> None:
    """The fidelity report declares every variant the probes find (the conformance kit's parity rule)."""
    from rlcompare_mushroom_rl import MushroomRLAdapter

    for family, found in (("PPO", {"advantage_std_biased", "no_grad_clip"}), ("DQN", {"no_grad_clip"})):
        reference = _reference(family)
        workload = reference.case_workload(reference.cases()[0])
        declared = declared_variants(reference, MushroomRLAdapter().fidelity(workload))
        assert found <= declared, declared


def test_dqn_probe_leaves_the_target_network_alone() -> None:
    from rlcompare_mushroom_rl import MushroomRLAdapter

    reference = _reference("DQN")
    probe = reference.build_probe(reference.case_workload(reference.cases()[0]))
    outcome = MushroomRLAdapter().parity_update(probe)
    targets = [name for name in outcome.updated if name.startswith("q_target.")]
    assert targets and all((outcome.updated[name] == probe.weights[name]).all() for name in targets)
