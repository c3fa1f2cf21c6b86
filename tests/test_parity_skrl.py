"""skrl's own updates on rlcompare's parity probes, judged against the reference updates, and the
schedule a short real skrl run traces from inside the framework."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from rlcompare.execution.runner import LocalRunner
from rlcompare.parity.reference import ReferenceUpdate, declared_variants
from rlcompare.parity.runner import ParityRequest, ask_many, interpreter_for
from rlcompare.parity.schedules import canonical_schedule, epsilon_at
from rlcompare.parity.verdict import DIFFERS, UNVERIFIABLE, VERIFIED, ParityVerdict, compare
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

pytestmark = pytest.mark.framework

#: What skrl's update is, by (family, probe case): the verdict and the variants that explain it.
#: PPO: skrl builds torch's Adam with its default eps 1e-8 (skrl/agents/torch/ppo/ppo.py, __init__),
#: the canonical one (SB3, CleanRL) 1e-5. DQN: skrl's DQN.update takes F.mse_loss of the TD error
#: and never clips the gradient (skrl/agents/torch/dqn/dqn.py, update). A2C: three departures at
#: once, one of which no variant names (see the test of the explanation below). SAC: the adapter's
#: skrl actor cannot hold the probe's actor. TD3, DDPG: skrl's TD3.update / DDPG.update are the
#: canonical update (torch's Adam eps 1e-8 is the canonical one there; summed F.mse_loss per critic;
#: the actor on the first critic after its step; the critics on the [-1, 1] action; no truncation
#: flag in skrl's memory, so truncated transitions bootstrap).
EXPECTED: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("PPO", "discrete"): (DIFFERS, ("adam_eps_1e-8",)),
    ("PPO", "continuous"): (DIFFERS, ("adam_eps_1e-8",)),
    ("A2C", "discrete"): (DIFFERS, ("adam_eps_1e-8", "normalize_advantage", "value_coef_ignored")),
    ("A2C", "discrete-rmsprop"): (DIFFERS, ("adam_eps_1e-8", "normalize_advantage", "optimizer_adam",
                                            "value_coef_ignored")),
    ("A2C", "continuous"): (DIFFERS, ("adam_eps_1e-8", "normalize_advantage", "value_coef_ignored")),
    ("DQN", "discrete"): (DIFFERS, ("mse_loss",)),
    ("DQN", "discrete-clipped"): (DIFFERS, ("mse_loss", "no_grad_clip")),
    ("SAC", "continuous"): (UNVERIFIABLE, ()),
    ("TD3", "continuous"): (VERIFIED, ()),
    ("DDPG", "continuous"): (VERIFIED, ()),
}


def _reference(family: str) -> ReferenceUpdate:
    module = importlib.import_module(f"rlcompare.parity.{'td3' if family == 'DDPG' else family.lower()}")
    return getattr(module, f"{family}Reference")()


@pytest.fixture(scope="module")
def verdicts() -> dict[tuple[str, str], ParityVerdict]:
    """skrl's answer to every probe of EXPECTED, asked as ``rlcompare parity`` asks them: all in one
    fresh interpreter (skrl imported once), each judged on its own."""
    from rlcompare_skrl import SkrlAdapter

    asked = []
    for family, case_name in EXPECTED:
        reference = _reference(family)
        case = next(case for case in reference.cases() if case.name == case_name)
        workload = reference.case_workload(case)
        declared = declared_variants(reference, SkrlAdapter().fidelity(workload))  # as rlcompare parity asks
        asked.append((ParityRequest("skrl", SkrlAdapter, reference, case, declared), reference.build_probe(workload)))
    answers = ask_many(asked, interpreter_for(SkrlAdapter))
    return dict(zip(EXPECTED, answers, strict=True))


@pytest.mark.parametrize(("family", "case"), list(EXPECTED))
def test_skrl_update_matches_the_reference_or_the_variant_that_explains_it(
        verdicts: dict[tuple[str, str], ParityVerdict], family: str, case: str) -> None:
    verdict = verdicts[(family, case)]
    status, variant = EXPECTED[(family, case)]
    assert verdict.status == status, verdict.summary()
    assert verdict.variant == variant, verdict.summary()
    if status == VERIFIED:
        assert all(check.ok for check in verdict.checks), verdict.summary()
    if status == DIFFERS:  # the targets (GAE with skrl's truncation bootstrap, TD targets) are canonical
        assert {check.part: check.ok for check in verdict.checks}["targets"], verdict.summary()
    defaults = verdict.defaults
    assert defaults["optimizer"] == "Adam" and defaults["adam_eps"] == 1e-8
    assert defaults["observation_normalization"] == "none"
    if family == "A2C":
        assert defaults["value_loss_scale"] == 1.0 and defaults["advantage_normalization"].endswith("always on")
    if family == "SAC":
        assert "state-dependent log-std head" in verdict.reason
        assert defaults["log_std"] == "state-independent parameter" and defaults["action_squashing"] == "clip"
        assert defaults["mean_bounded_by_tanh"] is True and defaults["critic_loss"] == "(mse(Q1, y) + mse(Q2, y)) / 2"
    if family in ("DQN", "SAC"):
        # skrl 2.1's random_act under gymnasium 1.x: the same "random" action on every call
        assert defaults["random_actions"].startswith("constant"), defaults["random_actions"]
    if family == "PPO":
        assert verdict.losses["value"] > 0
        assert defaults["value_clipping"] == "off" and defaults["kl_threshold"] == "off"
        assert defaults["truncation_bootstrap"] is True and defaults["grad_clip_scope"].startswith("joint")
        if case == "continuous":
            assert defaults["log_std_init"] == 0.0 and defaults["log_std_clipping"] == [-20, 2]
            assert defaults["action_squashing"] == "none" and defaults["log_std"] == "state-independent parameter"
    if family in ("TD3", "DDPG"):
        assert defaults["actor_adam_eps"] == 1e-8 and defaults["max_grad_norm"] == "none"
        assert defaults["critic_action_space"] == "[-1, 1]" and defaults["truncation_bootstrap"] is True
        assert defaults["n_critics"] == (2 if family == "TD3" else 1)
        assert verdict.losses["critic"] > 0
        if family == "TD3":
            assert defaults["policy_delay"] == 1 and defaults["target_policy_noise"] == 0.0
    if family == "DQN":
        assert defaults["td_loss"].startswith("mse") and defaults["double_q"] is False
        assert defaults["target_update"].startswith("hard copy every 10000 gradient steps")


@pytest.mark.parametrize("case_name", ["discrete", "discrete-rmsprop", "continuous"])
def test_skrl_a2c_is_the_reference_with_adam_normalized_advantages_and_an_unweighted_value_loss(
        case_name: str) -> None:
    """skrl's A2C.update (skrl/agents/torch/a2c/a2c.py): torch's Adam (eps 1e-8) whatever optimizer
    was asked for, advantages normalized by compute_gae whatever normalize_advantage says, and
    ``F.mse_loss(returns, values)`` added with coefficient 1 whatever value_coef says. The reference
    under those variants matches; leaving any one out does not, and the search alone (up to three
    variants) cannot find the RMSprop probe's four: the adapter's fidelity report declares them."""
    from rlcompare_skrl import SkrlAdapter

    reference = _reference("A2C")
    case = next(case for case in reference.cases() if case.name == case_name)
    probe = reference.build_probe(reference.case_workload(case))
    outcome = SkrlAdapter().parity_update(probe)
    explained = frozenset(EXPECTED[("A2C", case_name)][1])
    assert all(check.ok for check in compare(outcome, reference.expected(probe, explained), probe))
    for name in explained:
        assert not all(check.ok for check in compare(outcome, reference.expected(probe, explained - {name}), probe))


def test_skrl_dqn_probe_leaves_the_target_network_alone() -> None:
    from rlcompare_skrl import SkrlAdapter

    reference = _reference("DQN")
    case = reference.cases()[0]
    probe = reference.build_probe(reference.case_workload(case))
    outcome = SkrlAdapter().parity_update(probe)
    targets = [name for name in outcome.updated if name.startswith("q_target.")]
    assert targets and all((outcome.updated[name] == probe.weights[name]).all() for name in targets)
    assert any((outcome.updated[name] != probe.weights[name]).any() for name in outcome.updated
               if name.startswith("q."))


# -- the schedule of a short real run ----------------------------------------------------------------

RUNS = {
    "DQN": {"env": "CartPole-v1", "env_steps": 600,
            "hyperparameters": {"learning_starts": 100, "buffer_size": 1000, "target_update_interval": 100,
                                "train_every": 4, "gradient_steps": 2, "exploration_fraction": 0.5}},
    "PPO": {"env": "CartPole-v1", "env_steps": 512, "parallelism": {"envs_per_worker": 2},
            "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
    "SAC": {"env": "Pendulum-v1", "env_steps": 200,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
}


def _workload(name: str) -> Workload:
    return workload_from_dict({"id": f"schedule-{name.lower()}", "algorithm": name, "seeds": 1,
                               "evaluation": {"interval_steps": 200, "episodes": 1}, **RUNS[name]}, "test")


@pytest.fixture(scope="module")
def schedules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    workloads = [_workload(name) for name in RUNS]
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), workloads, ["skrl"])
    store = Store(Path(tmp_path_factory.mktemp("skrl-schedule")) / "runs.db")
    summary = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(RUNS), [o.record.traceback for o in summary.outcomes]
    runs = store.runs_frame().set_index("run_id")
    return {name: json.loads(runs.loc[f"schedule-{name.lower()}__skrl__s0"]["schedule_json"]) for name in RUNS}


def test_skrl_ppo_traces_one_update_per_rollout_of_its_gradient_steps(schedules: dict[str, dict]) -> None:
    traced = schedules["PPO"]
    canonical = canonical_schedule(_workload("PPO").to_dict())
    assert traced["update"]["count"] == canonical["updates"] == 4
    assert traced["update"]["mean_interval_env_steps"] == canonical["update_interval_env_steps"] == 128
    assert traced["gradient_step"]["count"] == canonical["gradient_steps"] == 32  # 2 epochs x 4 minibatches
    assert traced["gradient_step"]["first_env_step"] == 128
    assert "target_sync" not in traced and "exploration" not in traced


def test_skrl_dqn_traces_gradient_steps_target_syncs_and_epsilon(schedules: dict[str, dict]) -> None:
    workload = _workload("DQN")
    traced = schedules["DQN"]
    canonical = canonical_schedule(workload.to_dict())
    # skrl updates after vector step t when t >= learning_starts and t % update_interval == 0 (t from 0):
    # the first update follows env step 101, the canonical one env step 104
    assert traced["update"]["count"] == 125 and canonical["updates"] == 125
    assert traced["update"]["first_env_step"] == 101
    assert traced["update"]["mean_interval_env_steps"] == 4
    assert traced["gradient_step"]["count"] == canonical["gradient_steps"] == 250
    # target_update_interval 100 env steps -> 50 gradient steps; skrl counts them from its first update
    syncs = traced["target_sync"]
    assert syncs["count"] == 5 and syncs["mean_interval_gradient_steps"] == 50
    assert syncs["mean_interval_env_steps"] == 100 and syncs["first_env_step"] == 197
    # epsilon is asked for from random_timesteps (= learning_starts) on, and follows the canonical line
    exploration = traced["exploration"]
    assert exploration["first_env_step"] == 100 and exploration["count"] > 100
    for env_steps, epsilon in exploration["samples"]:
        assert epsilon == pytest.approx(epsilon_at(workload.to_dict(), env_steps), abs=1e-6)


def test_skrl_sac_traces_a_polyak_step_after_every_gradient_step(schedules: dict[str, dict]) -> None:
    traced = schedules["SAC"]
    canonical = canonical_schedule(_workload("SAC").to_dict())
    # skrl's SAC updates after every vector step t >= learning_starts (t from 0)
    assert traced["update"]["count"] == traced["gradient_step"]["count"] == canonical["gradient_steps"] == 100
    assert traced["gradient_step"]["first_env_step"] == 101
    assert traced["target_sync"]["count"] == 100 and traced["target_sync"]["mean_interval_gradient_steps"] == 1
    assert "exploration" not in traced
