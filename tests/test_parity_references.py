"""The A2C, SAC, TD3 and DDPG reference updates: deterministic probes with terminations and truncations, variants
that each show on some probe, Stable-Baselines3 (the model of both canonical updates) verified on
every probe, and an SB3 configured differently in one known way caught with the variant that names it."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from rlcompare.harness.parity import ParityProbe
from rlcompare.parity.a2c import A2CReference
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate
from rlcompare.parity.runner import Interpreter, ParityRequest, ask_many
from rlcompare.parity.sac import SACReference
from rlcompare.parity.td3 import DDPGReference, TD3Reference
from rlcompare.parity.verdict import DIFFERS, VERIFIED, compare, judge

REFERENCES = [A2CReference(), SACReference(), TD3Reference(), DDPGReference()]


def _probe(reference: ReferenceUpdate, case: ProbeCase) -> ParityProbe:
    return reference.build_probe(reference.case_workload(case))


def _case(reference: ReferenceUpdate, name: str) -> ProbeCase:
    return next(case for case in reference.cases() if case.name == name)


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda reference: reference.family)
def test_probes_are_deterministic_and_hold_terminations_and_truncations(reference: ReferenceUpdate) -> None:
    for case in reference.cases():
        probe = _probe(reference, case)
        assert probe.family == reference.family
        assert _probe(reference, case).digest() == probe.digest()
        terminated, truncated = probe.batch["terminated"], probe.batch["truncated"]
        assert terminated.sum() >= 1 and truncated.sum() >= 1
        assert not np.any((terminated > 0) & (truncated > 0))  # each end is one or the other
        # every parameter the update moves has a weight in the probe, and the canonical update moves it
        expected = reference.expected(probe)
        assert set(expected.updated) <= set(probe.weights)
        assert all(np.any(expected.updated[name] != probe.weights[name]) for name in expected.updated)


def test_sac_probe_has_distinct_targets_a_live_temperature_and_actions_in_the_policy_space() -> None:
    reference = SACReference()
    probe = _probe(reference, reference.cases()[0])
    for critic in ("critic1", "critic2"):
        assert not np.allclose(probe.weights[f"{critic}.0.weight"], probe.weights[f"{critic}_target.0.weight"])
    assert probe.weights["log_alpha"].shape == (1,) and probe.weights["log_alpha"][0] != 0.0
    assert np.all(np.abs(probe.batch["actions"]) <= 1.0) and probe.batch["actions"].shape == (32, 1)
    expected = reference.expected(probe)
    assert expected.targets["q_target"].shape == (32,)
    assert {"critic1_target.out.weight", "critic2_target.0.bias", "log_alpha"} <= set(expected.updated)


@pytest.mark.parametrize("reference", [TD3Reference(), DDPGReference()], ids=lambda reference: reference.family)
def test_td3_and_ddpg_probes_have_lagging_targets_and_move_actor_critics_and_targets(reference: ReferenceUpdate) -> None:
    """Two critics for TD3, one for DDPG; every target lags its online network; the probe's delay of 1
    steps the actor and moves every target (a delay of 2 would leave the actor unmoved on the first
    critic step), and its smoothing noise is 0 (the reference is deterministic and says so)."""
    probe = _probe(reference, reference.cases()[0])
    critics = ("critic1", "critic2") if reference.family == "TD3" else ("critic1",)
    assert {name.split(".")[0] for name in probe.weights} == {"actor", "actor_target", *critics,
                                                                *(f"{c}_target" for c in critics)}
    for prefix in ("actor", *critics):
        assert not np.allclose(probe.weights[f"{prefix}.0.weight"], probe.weights[f"{prefix}_target.0.weight"])
    expected = reference.expected(probe)
    assert {"actor.out.weight", "actor_target.out.weight", f"{critics[-1]}_target.0.bias"} <= set(expected.updated)
    assert probe.hyperparameters.get("policy_delay", 1) == 1
    if reference.family == "TD3":
        assert probe.hyperparameters["target_policy_noise"] == 0.0
        noisy = ParityProbe(**{**probe.__dict__, "hyperparameters": {**probe.hyperparameters,
                                                                     "target_policy_noise": 0.2}})
        with pytest.raises(ValueError, match="target_policy_noise must be 0"):
            reference.expected(noisy)


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda reference: reference.family)
def test_every_variant_shows_in_the_gradients_or_updates_of_some_probe(reference: ReferenceUpdate) -> None:
    probes = {case.name: (case, _probe(reference, case)) for case in reference.cases()}
    canonical = {name: reference.expected(probe) for name, (_, probe) in probes.items()}
    for variant in reference.variants:
        separations = {}
        for name, (case, probe) in probes.items():
            if variant in case.excluded:
                continue
            checks = compare(reference.expected(probe, frozenset({variant})), canonical[name], probe)
            separations[name] = {check.part: check.error / check.tolerance for check in checks
                                 if check.part in ("gradients", "updates")}
        assert separations, f"{variant} is excluded from every probe"
        best = max(ratio for parts in separations.values() for ratio in parts.values())
        assert best > 1.0, f"{variant} cannot be told from the canonical update: {separations}"


# -- Stable-Baselines3 -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sb3() -> type:
    pytest.importorskip("stable_baselines3")
    from rlcompare_sb3 import StableBaselines3Adapter

    return StableBaselines3Adapter


#: The probes SB3 is asked, by test id.
SB3_PROBES = {"A2C-discrete": (A2CReference(), "discrete"), "A2C-discrete-rmsprop": (A2CReference(), "discrete-rmsprop"),
              "A2C-continuous": (A2CReference(), "continuous"), "SAC-continuous": (SACReference(), "continuous"),
              "TD3-continuous": (TD3Reference(), "continuous"), "DDPG-continuous": (DDPGReference(), "continuous")}


@pytest.fixture(scope="module")
def sb3_verdicts(sb3: type) -> dict[str, Any]:
    """SB3's answer to each probe of SB3_PROBES, asked as ``rlcompare parity`` asks them: all in one
    fresh interpreter (SB3 imported once), each judged on its own."""
    asked = []
    for reference, case_name in SB3_PROBES.values():
        case = _case(reference, case_name)
        asked.append((ParityRequest("sb3", sb3, reference, case), _probe(reference, case)))
    return dict(zip(SB3_PROBES, ask_many(asked, Interpreter(sys.executable, "test", {})), strict=True))


@pytest.mark.framework
@pytest.mark.parametrize("probe_id", list(SB3_PROBES))
def test_sb3_is_verified(sb3_verdicts: dict[str, Any], probe_id: str) -> None:
    verdict = sb3_verdicts[probe_id]
    assert verdict.status == VERIFIED, verdict.summary() + " " + verdict.reason
    assert {check.part for check in verdict.checks} == {"targets", "gradients", "updates"}
    # far inside the tolerances: float32 against float64, not a near miss
    assert all(check.error < check.tolerance / 10 for check in verdict.checks), verdict.summary()


def _sb3_verdict(sb3: type, reference: ReferenceUpdate, case_name: str) -> Any:
    """SB3's answer in this process (so that a test can configure SB3 differently), judged."""
    case = _case(reference, case_name)
    probe = _probe(reference, case)
    return judge(reference, case, probe, sb3().parity_update(probe), "sb3")


@pytest.mark.framework
def test_sb3_a2c_with_tensorflow_rmsprop_is_caught(sb3: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """SB3's A2C docs advise ``RMSpropTFLike`` to reproduce Stable-Baselines (TF) results; the
    reference expects torch's RMSprop."""
    import stable_baselines3
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    class A2CWithTFLikeRMSprop(stable_baselines3.A2C):
        def __init__(self, *args: Any, policy_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            policy_kwargs = {**(policy_kwargs or {}), "optimizer_class": RMSpropTFLike,
                             "optimizer_kwargs": {"alpha": 0.99, "eps": 1e-5, "weight_decay": 0}}
            super().__init__(*args, policy_kwargs=policy_kwargs, **kwargs)

    monkeypatch.setattr(stable_baselines3, "A2C", A2CWithTFLikeRMSprop)
    verdict = _sb3_verdict(sb3, A2CReference(), "discrete-rmsprop")
    assert verdict.status == DIFFERS and verdict.variant == ("rmsprop_tf_like",), verdict.summary()
    assert verdict.defaults["optimizer"] == "RMSpropTFLike"


@pytest.mark.framework
def test_sb3_a2c_with_normalized_advantages_is_caught(sb3: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """SB3's A2C with ``normalize_advantage=True`` where the probe asks for raw advantages."""
    import stable_baselines3

    class A2CNormalizing(stable_baselines3.A2C):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "normalize_advantage": True})

    monkeypatch.setattr(stable_baselines3, "A2C", A2CNormalizing)
    verdict = _sb3_verdict(sb3, A2CReference(), "continuous")
    assert verdict.status == DIFFERS and verdict.variant == ("normalize_advantage",), verdict.summary()


@pytest.mark.framework
def test_sb3_sac_with_the_critic_loss_doubled_is_caught(sb3: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """SAC's critic loss without SB3's factor 1/2 (as a framework summing the two critics' MSEs)."""
    import stable_baselines3.sac.sac as sb3_sac

    mse_loss = sb3_sac.F.mse_loss
    monkeypatch.setattr(sb3_sac.F, "mse_loss", lambda *args, **kwargs: 2.0 * mse_loss(*args, **kwargs))
    verdict = _sb3_verdict(sb3, SACReference(), "continuous")
    assert verdict.status == DIFFERS and verdict.variant == ("critic_loss_no_half",), verdict.summary()


@pytest.mark.framework
def test_sb3_sac_with_adam_eps_1e5_is_caught(sb3: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """SB3's SAC with ``policy_kwargs=dict(optimizer_kwargs=dict(eps=1e-5))`` (actor and critics)."""
    import stable_baselines3

    class SACWithEps(stable_baselines3.SAC):
        def __init__(self, *args: Any, policy_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            super().__init__(*args, policy_kwargs={**(policy_kwargs or {}), "optimizer_kwargs": {"eps": 1e-5}},
                             **kwargs)

    monkeypatch.setattr(stable_baselines3, "SAC", SACWithEps)
    verdict = _sb3_verdict(sb3, SACReference(), "continuous")
    assert verdict.status == DIFFERS and verdict.variant == ("adam_eps_1e-5",), verdict.summary()
    assert verdict.defaults["adam_eps"] == 1e-5


@pytest.mark.framework
def test_sb3_td3_with_half_the_critic_loss_is_caught(sb3: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """TD3's critic loss with a factor 1/2 (as frameworks that halve each MSE do), where SB3 sums them."""
    import stable_baselines3.td3.td3 as sb3_td3

    mse_loss = sb3_td3.F.mse_loss
    monkeypatch.setattr(sb3_td3.F, "mse_loss", lambda *args, **kwargs: 0.5 * mse_loss(*args, **kwargs))
    verdict = _sb3_verdict(sb3, TD3Reference(), "continuous")
    assert verdict.status == DIFFERS and verdict.variant == ("critic_loss_half",), verdict.summary()


@pytest.mark.framework
def test_sb3_ddpg_with_adam_eps_1e5_is_caught(sb3: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """SB3's DDPG with ``policy_kwargs=dict(optimizer_kwargs=dict(eps=1e-5))`` (actor and critic)."""
    import stable_baselines3

    class DDPGWithEps(stable_baselines3.DDPG):
        def __init__(self, *args: Any, policy_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            super().__init__(*args, policy_kwargs={**(policy_kwargs or {}), "optimizer_kwargs": {"eps": 1e-5}},
                             **kwargs)

    monkeypatch.setattr(stable_baselines3, "DDPG", DDPGWithEps)
    verdict = _sb3_verdict(sb3, DDPGReference(), "continuous")
    assert verdict.status == DIFFERS and verdict.variant == ("adam_eps_1e-5",), verdict.summary()
    assert verdict.defaults["adam_eps"] == 1e-5 and verdict.defaults["n_critics"] == 1
