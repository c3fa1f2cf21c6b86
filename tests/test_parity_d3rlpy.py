"""d3rlpy's own updates on rlcompare's parity probes, judged against the reference updates, in
d3rlpy's own environment (asked as ``rlcompare parity`` asks them: all probes in one interpreter)."""

from __future__ import annotations

import importlib

import pytest

from rlcompare.harness.counted_envs import action_space_kind
from rlcompare.parity.reference import ReferenceUpdate, declared_variants
from rlcompare.parity.runner import ParityRequest, ask_many, interpreter_for
from rlcompare.parity.verdict import DIFFERS, VERIFIED, ParityVerdict

pytestmark = pytest.mark.framework

#: SAC's four departures the probe measured: the critics' loss without 1/2 and the temperature's loss on
#: alpha (sac_impl.py, ensemble_q_function.py), the exact tanh correction (distributions.py), and the
#: actor using the temperature *after* its step while the critics used it before (SACImpl: critic step,
#: then update_temp inside compute_actor_loss, then the actor's step).
SAC_DECLARED = frozenset({"critic_loss_no_half", "alpha_loss_on_alpha", "log_prob_exact_tanh",
                          "actor_alpha_after_update"})
#: What d3rlpy's update is, by (family, probe case).
EXPECTED: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("DQN", "discrete"): (VERIFIED, ()),
    ("DQN", "discrete-clipped"): (VERIFIED, ()),
    ("SAC", "continuous"): (DIFFERS, ("actor_alpha_after_update", "alpha_loss_on_alpha", "critic_loss_no_half",
                                      "log_prob_exact_tanh")),
    ("TD3", "continuous"): (VERIFIED, ()),
    ("DDPG", "continuous"): (VERIFIED, ()),
}


def _reference(family: str) -> ReferenceUpdate:
    module = importlib.import_module(f"rlcompare.parity.{'td3' if family == 'DDPG' else family.lower()}")
    return getattr(module, f"{family}Reference")()


def _probe(family: str, case_name: str) -> tuple[ReferenceUpdate, object]:
    reference = _reference(family)
    case = next(case for case in reference.cases() if case.name == case_name)
    return reference, reference.build_probe(reference.case_workload(case))


@pytest.fixture(scope="module")
def verdicts() -> dict[tuple[str, str], ParityVerdict]:
    from rlcompare_d3rlpy import D3rlpyAdapter

    asked = []
    for family, case_name in EXPECTED:
        reference, probe = _probe(family, case_name)
        case = next(case for case in reference.cases() if case.name == case_name)
        declared = declared_variants(reference, D3rlpyAdapter().fidelity(reference.case_workload(case)))
        asked.append((ParityRequest("d3rlpy", D3rlpyAdapter, reference, case, declared), probe))
    answers = ask_many(asked, interpreter_for(D3rlpyAdapter))
    return dict(zip(EXPECTED, answers, strict=True))


def test_d3rlpy_is_asked_exactly_the_probes_it_can_run() -> None:
    from rlcompare_d3rlpy import D3rlpyAdapter

    capabilities = D3rlpyAdapter().capabilities()
    runnable = set()
    for family in ("PPO", "A2C", "PG", "DQN", "SAC", "TD3", "DDPG"):
        reference = _reference(family)
        for case in reference.cases():
            workload = reference.case_workload(case)
            if capabilities.refusal(workload, action_space_kind(workload.env, workload.env_kwargs)) is None:
                runnable.add((family, case.name))
    assert runnable == set(EXPECTED)


@pytest.mark.parametrize(("family", "case"), list(EXPECTED))
def test_d3rlpy_update_matches_the_reference(verdicts: dict[tuple[str, str], ParityVerdict], family: str,
                                             case: str) -> None:
    verdict = verdicts[(family, case)]
    status, variant = EXPECTED[(family, case)]
    assert (verdict.status, verdict.variant) == (status, variant), verdict.summary()
    checks = {check.part: check for check in verdict.checks}
    assert set(checks) == {"targets", "gradients", "updates"}
    assert checks["targets"].ok, verdict.summary()  # d3rlpy's TD targets are the canonical ones everywhere
    if status == VERIFIED:
        assert all(check.ok for check in verdict.checks), verdict.summary()
    defaults = verdict.defaults
    assert defaults["optimizer"] == "adam" and defaults["adam_eps"] == 1e-8
    assert defaults["observation_normalization"] is False and defaults["reward_normalization"] is False
    assert defaults["action_scaler"] is None and defaults["learning_rate_schedule"] == "constant"
    if family == "DQN":
        assert defaults["td_loss"] == "huber (beta 1, mean)" and defaults["double_q"] is False
        assert defaults["max_grad_norm"] == (0.05 if case == "discrete-clipped" else 10.0)
    if family in ("TD3", "DDPG"):
        assert defaults["n_critics"] == (2 if family == "TD3" else 1)
        assert defaults["critic_loss"] == "sum_i mean((Q_i - y)^2)"


def test_d3rlpy_sac_alpha_reaches_the_critics_before_its_step_and_the_actor_after(
        verdicts: dict[tuple[str, str], ParityVerdict]) -> None:
    """The losses d3rlpy reports are the reference's under its three other declared variants, the critics'
    with the temperature from before its step and the actor's with the temperature after it; the
    fidelity report declares all four."""
    from rlcompare_d3rlpy import D3rlpyAdapter

    verdict = verdicts[("SAC", "continuous")]
    reference, probe = _probe("SAC", "continuous")
    three = SAC_DECLARED - {"actor_alpha_after_update"}
    before = reference.expected(probe, three)
    after = reference.expected(probe, three | {"alpha_after_update"})
    assert verdict.losses["critic_loss"] == pytest.approx(before.losses["critic"], rel=1e-5)
    assert verdict.losses["actor_loss"] == pytest.approx(after.losses["actor"], rel=1e-5)
    assert verdict.losses["actor_loss"] != pytest.approx(before.losses["actor"], rel=1e-4)
    assert verdict.losses["temp_loss"] == pytest.approx(before.losses["ent_coef_loss"], rel=1e-5)
    workload = reference.case_workload(reference.cases()[0])
    assert declared_variants(reference, D3rlpyAdapter().fidelity(workload)) == SAC_DECLARED
