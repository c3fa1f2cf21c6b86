"""TorchRL's own updates on the parity probes (PPO, A2C, DQN, SAC, TD3, DDPG) judged against the reference updates,
and the schedule TorchRL's training traces from inside (gradient steps, updates, DQN's target syncs and
epsilon), stored with a short real run."""

from __future__ import annotations

import functools
import json

import pytest

from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.parity import UNVERIFIABLE, ParityOutcome, ParityProbe
from rlcompare.parity.a2c import A2CReference
from rlcompare.parity.dqn import DQNReference
from rlcompare.parity.pg import PGReference
from rlcompare.parity.ppo import PPOReference
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, declared_variants
from rlcompare.parity.runner import ParityRequest, ask, interpreter_for
from rlcompare.parity.sac import SACReference
from rlcompare.parity.schedules import epsilon_at, schedule_differences
from rlcompare.parity.td3 import DDPGReference, TD3Reference
from rlcompare.parity.verdict import DIFFERS, VERIFIED, ParityVerdict, judge
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

pytestmark = pytest.mark.framework

REFERENCES: dict[str, type[ReferenceUpdate]] = {"PPO": PPOReference, "A2C": A2CReference, "DQN": DQNReference,
                                                "SAC": SACReference, "TD3": TD3Reference, "DDPG": DDPGReference,
                                                "PG": PGReference}

#: (family, probe case) -> (status, variant): what TorchRL 0.14's update measured.
EXPECTED: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("PPO", "discrete"): (VERIFIED, ()),
    ("PPO", "continuous"): (VERIFIED, ()),
    ("A2C", "discrete"): (VERIFIED, ()),
    ("A2C", "discrete-rmsprop"): (VERIFIED, ()),
    ("A2C", "continuous"): (VERIFIED, ()),
    ("DQN", "discrete"): (VERIFIED, ()),
    ("DQN", "discrete-clipped"): (VERIFIED, ()),
    # six departures together, as the adapter's fidelity report declares them (no search of up to three
    # variants finds them): the critics see env-scaled actions and log pi carries the scaling's log-det
    # (TanhNormal over the env's bounds), the exact tanh correction, a biased-softplus scale
    # (NormalParamExtractor), no 1/2 on the critic loss, and the actor's loss against the critics before
    # their step (one forward, one optimizer step)
    ("SAC", "continuous"): (DIFFERS, ("actor_uses_old_critic", "critic_loss_no_half", "critic_sees_env_actions",
                                      "log_prob_action_scale", "log_prob_exact_tanh", "scale_biased_softplus")),
    # one departure, declared: the critics see the TanhModule's env-scaled actions (replay buffer, target
    # actor and actor loss alike); the step order (critics, then the actor against the stepped critics,
    # then SoftUpdate), the l2 loss without 1/2, -Q1, Adam's 1e-8 and the truncation bootstrap are canonical
    ("TD3", "continuous"): (DIFFERS, ("critic_sees_env_actions",)),
    ("DDPG", "continuous"): (DIFFERS, ("critic_sees_env_actions",)),
    # reward2go and the batch standardization (the adapter's), ReinforceLoss's loss_actor, Adam 1e-8
    ("PG", "discrete"): (VERIFIED, ()),
    ("PG", "continuous"): (VERIFIED, ()),
    ("PG", "discrete-raw"): (VERIFIED, ()),
}


def _case(family: str, name: str) -> tuple[ReferenceUpdate, ProbeCase, ParityProbe]:
    reference = REFERENCES[family]()
    case = next(case for case in reference.cases() if case.name == name)
    return reference, case, reference.build_probe(reference.case_workload(case))


@functools.cache  # one update per probe case for the tests that read its verdict
def _outcome(family: str, name: str) -> ParityOutcome:
    from rlcompare_torchrl import TorchRLAdapter

    return TorchRLAdapter().parity_update(_case(family, name)[2])


def _declared(family: str, name: str) -> frozenset[str]:
    from rlcompare_torchrl import TorchRLAdapter

    reference, case, _ = _case(family, name)
    return declared_variants(reference, TorchRLAdapter().fidelity(reference.case_workload(case)))


def _verdict(family: str, name: str) -> ParityVerdict:
    reference, case, probe = _case(family, name)
    return judge(reference, case, probe, _outcome(family, name), "torchrl", declared=_declared(family, name))


def test_torchrl_sac_departures_are_found_only_as_declared() -> None:
    """Six departures are more than the search combines: undeclared, the SAC update is unexplained."""
    reference, case, probe = _case("SAC", "continuous")
    undeclared = judge(reference, case, probe, _outcome("SAC", "continuous"), "torchrl")
    assert undeclared.status == DIFFERS and not undeclared.variant
    assert _declared("SAC", "continuous") == frozenset(EXPECTED["SAC", "continuous"][1])


def test_every_probe_case_of_every_family_has_an_expectation() -> None:
    assert set(EXPECTED) == {(family, case.name) for family, reference in REFERENCES.items()
                             for case in reference().cases()}


@pytest.mark.parametrize(("family", "case"), list(EXPECTED))
def test_torchrl_parity_verdict(family: str, case: str) -> None:
    verdict = _verdict(family, case)
    assert (verdict.status, verdict.variant) == EXPECTED[family, case], verdict.summary()
    assert {check.part for check in verdict.checks} == {"targets", "gradients", "updates"}
    if verdict.status == VERIFIED:
        # far inside the tolerances: float32 against float64
        assert all(check.error < check.tolerance / 10 for check in verdict.checks), verdict.summary()
    assert verdict.defaults["optimizer"].startswith("Adam" if case != "discrete-rmsprop" else "RMSprop")


def test_torchrl_parity_reads_its_defaults_back_from_the_built_objects() -> None:
    ppo = _verdict("PPO", "continuous").defaults
    assert ppo["adam_eps"] == 1e-5 and ppo["value_clipping"] == "off" and ppo["grad_clip_scope"] == "joint"
    assert ppo["value_loss"] == "mse" and ppo["log_std_init"] == 0.0 and ppo["action_squashing"] == "clip"
    rmsprop = _verdict("A2C", "discrete-rmsprop").defaults
    assert rmsprop["rmsprop_eps"] == 1e-5 and rmsprop["optimizer_alpha"] == 0.99
    assert rmsprop["optimizer_centered"] is False and rmsprop["advantage_normalization"].startswith("off")
    dqn = _verdict("DQN", "discrete")
    assert dqn.defaults["td_loss"] == "huber" and dqn.defaults["adam_eps"] == 1e-8 and dqn.defaults["double_q"] is False
    assert dqn.defaults["target_update"].startswith("hard every 10000 env steps")
    assert not any("moved the target network" in note for note in dqn.notes)
    sac = _verdict("SAC", "continuous")
    assert "biased_softplus" in sac.defaults["log_std"]
    assert sac.defaults["action_bounds"].startswith("scaled to the env's bounds [[-2.0], [2.0]]")
    assert sac.defaults["target_update"].startswith("polyak tau 0.005")
    assert sac.defaults["critic_loss"].startswith("l2") and sac.defaults["target_entropy"] == -1.0
    # the TD targets already differ (env-scaled actions, log pi's scaling term, the scale's mapping)
    assert next(check for check in sac.checks if check.part == "targets").error > 1e-2


def test_torchrl_parity_probe_runs_in_a_fresh_interpreter() -> None:
    from rlcompare_torchrl import TorchRLAdapter

    reference, case, probe = _case("DQN", "discrete-clipped")
    verdict = ask(ParityRequest("torchrl", TorchRLAdapter, reference, case), probe, interpreter_for(TorchRLAdapter))
    assert verdict.status == VERIFIED, verdict.summary()
    assert any(note.startswith("probe answered in") for note in verdict.notes)
    assert verdict.versions["torchrl"].startswith("0.")


def test_torchrl_parity_without_a_probe_module_is_unverifiable() -> None:
    from rlcompare_torchrl import TorchRLAdapter

    probe = ParityProbe(family="NEWFAMILY", action_space={"kind": "discrete", "n": 2}, observation_dim=4,
                        network={}, hyperparameters={}, weights={}, batch={})
    outcome = TorchRLAdapter().parity_update(probe)
    assert outcome.status == UNVERIFIABLE and "NEWFAMILY" in outcome.reason


# -- schedules ---------------------------------------------------------------------------------------

SCHEDULED = {
    "DQN": {"env": "CartPole-v1", "env_steps": 600,
            "hyperparameters": {"learning_starts": 100, "buffer_size": 1000, "target_update_interval": 100}},
    "PPO": {"env": "CartPole-v1", "env_steps": 512, "parallelism": {"envs_per_worker": 2},
            "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
}


def _scheduled_workload(name: str) -> Workload:
    return workload_from_dict({"id": f"schedule-{name.lower()}", "algorithm": name, "seeds": 1,
                               "evaluation": {"interval_steps": 300, "episodes": 1}, **SCHEDULED[name]}, "test")


@pytest.fixture(scope="module")
def schedules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    workloads = [_scheduled_workload(name) for name in SCHEDULED]
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), workloads, ["torchrl"])
    store = Store(tmp_path_factory.mktemp("torchrl-schedule") / "runs.db")
    summary = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(SCHEDULED), [
        o.record.traceback for o in summary.outcomes]
    runs = store.runs_frame().set_index("run_id")
    return {name: json.loads(runs.loc[f"schedule-{name.lower()}__torchrl__s0"]["schedule_json"]) for name in SCHEDULED}


def test_torchrl_dqn_traces_gradient_steps_target_syncs_and_epsilon(schedules: dict[str, dict]) -> None:
    schedule = schedules["DQN"]
    gradient, syncs, exploration = schedule["gradient_step"], schedule["target_sync"], schedule["exploration"]
    # one gradient step per train_every (4) env steps from learning_starts (100) to the budget (600)
    assert gradient["first_env_step"] == 100 and gradient["last_env_step"] == 600
    assert gradient["count"] == 126 and gradient["mean_interval_env_steps"] == 4
    assert schedule["update"]["count"] == gradient["count"]
    # a hard copy whenever the env-step count crosses a multiple of 100: 25 gradient steps apart
    assert syncs["count"] == 6 and syncs["first_env_step"] == 100
    assert syncs["min_interval_env_steps"] == syncs["max_interval_env_steps"] == 100
    assert syncs["mean_interval_gradient_steps"] == 25
    # epsilon after every batch of 4 frames, falling linearly to 0.05 over the first 10% (60 env steps)
    workload = _scheduled_workload("DQN").to_dict()
    assert exploration["count"] == 150
    for env_steps, value in exploration["samples"]:
        assert value == pytest.approx(epsilon_at(workload, env_steps), abs=1e-5)
    assert exploration["samples"][-1][1] == pytest.approx(0.05)
    assert schedule_differences(workload, schedule) == []


def test_torchrl_ppo_traces_its_epochs_of_minibatches(schedules: dict[str, dict]) -> None:
    schedule = schedules["PPO"]
    # 4 rollouts of 64 steps x 2 envs; each 2 epochs of 128 / 32 minibatches
    assert schedule["update"]["count"] == 4 and schedule["update"]["mean_interval_env_steps"] == 128
    assert schedule["update"]["mean_interval_gradient_steps"] == 8
    assert schedule["gradient_step"]["count"] == 32 and schedule["gradient_step"]["first_env_step"] == 128
    assert "target_sync" not in schedule and "exploration" not in schedule
    assert schedule_differences(_scheduled_workload("PPO").to_dict(), schedule) == []
