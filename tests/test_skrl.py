"""The skrl adapter trained for real through the runner, with tiny budgets."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from rlcompare.errors import IncompatibleError
from rlcompare.execution.runner import LocalRunner
from rlcompare.parity.schedules import canonical_schedule
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

pytestmark = pytest.mark.framework

TINY = {
    "PPO": {"env": "CartPole-v1", "env_steps": 512, "parallelism": {"envs_per_worker": 2},
            "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
    "A2C": {"env": "CartPole-v1", "env_steps": 400, "parallelism": {"envs_per_worker": 2},
            "hyperparameters": {"normalize_advantage": True, "value_coef": 1.0}},
    "DQN": {"env": "CartPole-v1", "env_steps": 600, "hyperparameters": {"learning_starts": 100, "buffer_size": 1000}},
    "SAC": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
    # a delay of 3 critic steps per actor step, so that the traced target syncs tell it from DDPG's 1
    "TD3": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000, "policy_delay": 3}},
    "DDPG": {"env": "Pendulum-v1", "env_steps": 300,
             "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
    # continuous PPO on one env: skrl's trainer resets it itself at every episode end
    "PPO-PENDULUM": {"algorithm": "PPO", "env": "Pendulum-v1", "env_steps": 512,
                     "hyperparameters": {"rollout_steps": 128, "minibatch_size": 64, "epochs": 2}},
    # one environment per subprocess (AsyncVectorEnv): the harness must count steps made there
    "PPO-SUBPROC": {"algorithm": "PPO", "env": "CartPole-v1", "env_steps": 512, "parallelism": {"workers": 2},
                    "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
}


def _workload(name: str, spec: dict) -> Workload:
    return workload_from_dict({"id": f"tiny-{name.lower()}", "algorithm": name, "seeds": 1,
                               "evaluation": {"interval_steps": 200, "episodes": 2}, **spec}, "test")


@pytest.fixture(scope="module")
def skrl_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    workloads = [_workload(name, spec) for name, spec in TINY.items()]
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), workloads, ["skrl"])
    store = Store(tmp_path_factory.mktemp("skrl") / "runs.db")
    logs = Path.cwd() / "runs"  # where skrl writes TensorBoard logs and checkpoints unless told not to
    existed = logs.exists()
    summary = LocalRunner(store, jobs=2, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [
        o.record.traceback for o in summary.outcomes]
    assert existed or not logs.exists(), "skrl wrote experiment data into the working directory"
    return store


@pytest.mark.parametrize("name", list(TINY))
def test_skrl_run_is_valid_and_stored_with_curve_versions_and_fidelity(skrl_store: Store, name: str) -> None:
    workload = _workload(name, TINY[name])
    runs = skrl_store.runs_frame().set_index("run_id")
    run = runs.loc[f"tiny-{name.lower()}__skrl__s0"]
    assert run["status"] == "ok"
    assert workload.env_steps <= run["env_steps"] <= workload.env_steps + workload.rollout_env_steps
    # skrl's count (vector steps x envs) is exactly the harness's: no step is an autoreset-only step
    assert run["framework_env_steps"] == run["env_steps"]
    assert run["torch_threads"] == 1
    versions = json.loads(run["versions_json"])
    assert versions["skrl"].startswith("2.") and versions["torch"].startswith("2.13.0")
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert set(fidelity) >= {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields
                             if key != "algorithm"}
    assert set(fidelity) >= {"network.hidden_sizes", "network.activation", "parallelism.envs_per_worker",
                             "parallelism.workers", "parallelism.mode"}
    # canonical settings and the family's variant settings only: nothing that could pad the fidelity share
    assert not [s for s in fidelity if not s.startswith(("hyperparameters.", "network.", "parallelism.", "defaults.",
                                                         "parity.", "schedule."))], sorted(fidelity)
    assert fidelity["hyperparameters.learning_rate"]["native_name"] == "learning_rate"
    assert fidelity["hyperparameters.gamma"] == {**fidelity["hyperparameters.gamma"], "status": "exact",
                                                 "native_name": "discount_factor"}
    assert [64, 64] in fidelity["network.hidden_sizes"]["native_value"].values()
    native = json.loads(run["native_config_json"])
    assert native["agent"] == f"skrl.agents.torch.{workload.algorithm}"
    assert native["models"]["activation"] == "torch.nn.Tanh"
    assert native["cfg"]["experiment"] == {"write_interval": 0, "checkpoint_interval": 0}
    curves = skrl_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 3
    assert curve["env_steps"].is_monotonic_increasing
    assert curve["env_steps"].iloc[-1] == run["env_steps"]
    assert all(math.isfinite(value) for value in curve["return_mean"])
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


def test_skrl_native_config_follows_the_canonical_settings(skrl_store: Store) -> None:
    runs = skrl_store.runs_frame().set_index("run_id")
    ppo = json.loads(runs.loc["tiny-ppo__skrl__s0"]["native_config_json"])
    assert {key: ppo["cfg"][key] for key in ("rollouts", "mini_batches", "learning_epochs", "value_clip",
                                             "time_limit_bootstrap")} == {
        "rollouts": 64, "mini_batches": 4, "learning_epochs": 2, "value_clip": 0.0, "time_limit_bootstrap": True}
    assert ppo["env"]["class"] == "gymnasium.vector.SyncVectorEnv" and ppo["env"]["autoreset_mode"] == "same-step"
    assert ppo["memory"] == {"class": "RandomMemory", "memory_size": 64, "replacement": False}
    dqn = json.loads(runs.loc["tiny-dqn__skrl__s0"]["native_config_json"])
    assert dqn["cfg"]["learning_starts"] == dqn["cfg"]["random_timesteps"] == 100
    assert dqn["cfg"]["update_interval"] == 4 and dqn["cfg"]["polyak"] == 1.0
    assert dqn["cfg"]["target_update_interval"] == 250  # 1000 env steps / train_every 4
    assert dqn["env"]["class"] == "gymnasium.Env"
    sac = json.loads(runs.loc["tiny-sac__skrl__s0"]["native_config_json"])
    assert sac["cfg"]["learn_entropy"] is True and sac["cfg"]["initial_entropy_value"] == 1.0
    subproc = json.loads(runs.loc["tiny-ppo-subproc__skrl__s0"]["native_config_json"])
    assert subproc["env"]["class"] == "gymnasium.vector.AsyncVectorEnv" and subproc["env"]["n_envs"] == 2


#: The honest status of every canonical TD3/DDPG setting on the tiny workloads (one env, learning_starts 100).
DETERMINISTIC_STATUSES = {
    "learning_rate": "exact", "gamma": "exact", "buffer_size": "exact", "minibatch_size": "exact", "tau": "exact",
    "train_every": "exact", "gradient_steps": "exact",
    # skrl's warm-up acts with one constant random action; without noise, as canonical
    "learning_starts": "approximate", "exploration_noise": "exact",
}
TD3_STATUSES = {**DETERMINISTIC_STATUSES, "policy_delay": "exact", "target_policy_noise": "exact",
                "target_noise_clip": "exact"}


@pytest.mark.parametrize("name", ["TD3", "DDPG"])
def test_skrl_td3_and_ddpg_follow_the_canonical_schedule(skrl_store: Store, name: str) -> None:
    """Traced from inside skrl: one critic step per env step from learning_starts on, the actor and
    the targets moved after every policy_delay-th critic step (TD3: 3 here) or every one (DDPG),
    nothing reported as departing from the canonical schedule."""
    workload = _workload(name, TINY[name])
    run = skrl_store.runs_frame().set_index("run_id").loc[f"tiny-{name.lower()}__skrl__s0"]
    traced = json.loads(run["schedule_json"])
    canonical = canonical_schedule(workload.to_dict())
    # skrl updates after every vector step t >= learning_starts (t from 0), one critic step each
    assert traced["update"]["count"] == traced["gradient_step"]["count"] == canonical["gradient_steps"] == 200
    assert traced["gradient_step"]["first_env_step"] == canonical["first_gradient_step"] == 101
    delay = 3 if name == "TD3" else 1
    syncs = traced["target_sync"]
    assert syncs["count"] == 200 // delay
    assert syncs["mean_effective_interval_gradient_steps"] == canonical["target_sync_interval_gradient_steps"] == delay
    assert syncs["max_interval_gradient_steps"] == delay
    assert "exploration" not in traced
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert not [setting for setting in fidelity if setting.startswith("schedule.")], fidelity
    expected = TD3_STATUSES if name == "TD3" else DETERMINISTIC_STATUSES
    assert {key: fidelity[f"hyperparameters.{key}"]["status"] for key in expected} == expected
    assert set(expected) == {key for key in type(workload.hyperparameters).model_fields if key != "algorithm"}
    assert fidelity["network.hidden_sizes"]["status"] == "exact"
    native = json.loads(run["native_config_json"])
    cfg = native["cfg"]
    assert native["env"]["action_rescale"] == [-1.0, 1.0]  # the actor and its noises act in canonical units
    assert cfg["learning_starts"] == cfg["random_timesteps"] == 100 and cfg["batch_size"] == 32
    assert cfg["gradient_steps"] == 1 and cfg["polyak"] == 0.005 and cfg["learning_rate"] == [1e-3, 1e-3]
    assert cfg["exploration_noise"] == "skrl.resources.noises.torch.GaussianNoise"
    assert cfg["exploration_noise_kwargs"] == {"mean": 0.0, "std": 0.1}  # the canonical std, unconverted
    assert cfg["exploration_scheduler"] is None and cfg["grad_norm_clip"] == 0.0
    assert native["memory"] == {"class": "RandomMemory", "memory_size": 1000, "replacement": True}
    if name == "TD3":
        assert cfg["policy_delay"] == 3 and cfg["smooth_regularization_clip"] == 0.5
        assert cfg["smooth_regularization_noise"] == "skrl.resources.noises.torch.GaussianNoise"
        assert cfg["smooth_regularization_noise_kwargs"] == {"mean": 0.0, "std": 0.2}
        assert native["models"]["layout"] == {"policy": [64, 64], "critic_1": [64, 64], "critic_2": [64, 64]}
    else:
        assert "policy_delay" not in cfg and "smooth_regularization_noise" not in cfg
        assert native["models"]["layout"] == {"policy": [64, 64], "critic": [64, 64]}


def test_skrl_td3_and_ddpg_fidelity_follows_the_workload() -> None:
    from rlcompare_skrl import SkrlAdapter

    adapter = SkrlAdapter()
    for algorithm in ("TD3", "DDPG"):
        # no warm-up: the noise is skrl's GaussianNoise at the canonical std for the whole run
        workload = workload_from_dict({"id": "x", "env": "Pendulum-v1", "algorithm": algorithm, "env_steps": 1000,
                                       "hyperparameters": {"learning_starts": 0, "exploration_noise": 0.3}}, "test")
        fidelity = {item.setting: item for item in adapter.fidelity(workload)}
        assert set(fidelity) >= {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields
                                 if key != "algorithm"}
        noise = fidelity["hyperparameters.exploration_noise"]
        assert noise.status.value == "exact" and noise.native_name == "exploration_noise"
        assert noise.native_value == {"class": "GaussianNoise", "mean": 0.0, "std": 0.3}
        assert fidelity["hyperparameters.learning_starts"].status.value == "exact"
        assert not [key for key in fidelity if key.startswith("defaults.")]
        # two envs, an update every env step: skrl updates once per vector step, 2 gradient steps each
        workload = workload_from_dict({"id": "x", "env": "Pendulum-v1", "algorithm": algorithm, "env_steps": 1000,
                                       "parallelism": {"envs_per_worker": 2}, "hyperparameters": {}}, "test")
        fidelity = {item.setting: item for item in adapter.fidelity(workload)}
        assert fidelity["hyperparameters.train_every"].status.value == "approximate"
        assert fidelity["hyperparameters.gradient_steps"].status.value == "approximate"
        assert fidelity["hyperparameters.gradient_steps"].native_value == 2
        # the exploration noise is approximate only through the warm-up, which a zero noise leaves alone
        workload = workload_from_dict({"id": "x", "env": "Pendulum-v1", "algorithm": algorithm, "env_steps": 1000,
                                       "hyperparameters": {"exploration_noise": 0.0}}, "test")
        fidelity = {item.setting: item for item in adapter.fidelity(workload)}
        assert fidelity["hyperparameters.exploration_noise"].status.value == "exact"


def test_skrl_td3_builds_skrl_noises_in_scaled_units_and_acts_in_env_units() -> None:
    """The built agent holds skrl's GaussianNoise at the canonical stds, acts on [-1, 1], and the
    harness's policy maps the actor's scaled action back to Pendulum's [-2, 2]."""
    import gymnasium
    import numpy as np
    import torch
    from rlcompare_skrl import SkrlAdapter, build
    from skrl.resources.noises.torch import GaussianNoise

    workload = workload_from_dict({"id": "x", "env": "Pendulum-v1", "algorithm": "TD3", "env_steps": 100,
                                   "hyperparameters": {"exploration_noise": 0.3, "target_policy_noise": 0.25,
                                                       "target_noise_clip": 0.4}}, "test")
    config, _ = SkrlAdapter().native_config(workload)
    setup = build(workload, config, [lambda: gymnasium.make("Pendulum-v1")], 0)
    try:
        agent = setup.agent
        assert isinstance(agent._exploration_noise, GaussianNoise)
        assert float(agent._exploration_noise.distribution.stddev) == pytest.approx(0.3)
        assert float(agent._smooth_regularization_noise.distribution.stddev) == pytest.approx(0.25)
        assert agent.cfg.smooth_regularization_clip == 0.4 and agent.cfg.exploration_scheduler is None
        assert agent.cfg.policy_delay == 2
        assert setup.env.action_space.low.tolist() == [-1.0] and setup.env.action_space.high.tolist() == [1.0]
        observations = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
        with torch.no_grad():
            scaled = agent.policy.net(torch.as_tensor(observations)).numpy()
        for deterministic in (True, False):  # the actor's action, without noise, as SB3's predict
            actions = setup.policy_fn(deterministic)(observations)
            assert actions.shape == (5, 1)
            np.testing.assert_allclose(actions, 2.0 * scaled, rtol=1e-6, atol=1e-6)
    finally:
        setup.close()


@pytest.mark.parametrize("family", ["TD3", "DDPG"])
def test_skrl_td3_and_ddpg_parity_probe_runs_skrl_update_and_is_verified(family: str) -> None:
    """skrl's own TD3.update / DDPG.update on the probe (in this process), judged against the
    reference with the variants the adapter's fidelity report declares (none): the canonical update.
    Each variant alone would not match: the probe tells them apart."""
    import importlib

    from rlcompare_skrl import SkrlAdapter

    from rlcompare.parity.reference import declared_variants
    from rlcompare.parity.verdict import compare, judge

    reference = getattr(importlib.import_module("rlcompare.parity.td3"), f"{family}Reference")()
    case = reference.cases()[0]
    workload = reference.case_workload(case)
    probe = reference.build_probe(workload)
    declared = declared_variants(reference, SkrlAdapter().fidelity(workload))
    assert declared == frozenset()
    outcome = SkrlAdapter().parity_update(probe)
    assert outcome.status == "ran", outcome.reason
    critics = ("critic1", "critic2") if family == "TD3" else ("critic1",)
    prefixes = ("actor", *critics)
    assert {name.split(".")[0] for name in outcome.gradients} == set(prefixes)
    assert {name.split(".")[0] for name in outcome.updated} == {*prefixes, *(f"{p}_target" for p in prefixes)}
    # every network and every target moved (the targets by one Polyak step)
    assert all((outcome.updated[name] != probe.weights[name]).any() for name in outcome.updated)
    assert outcome.targets["q_target"].shape == (len(probe.batch["rewards"]),)
    verdict = judge(reference, case, probe, outcome, "skrl", declared=declared)
    assert verdict.status == "verified" and verdict.variant == (), verdict.summary()
    assert all(check.ok for check in verdict.checks), verdict.summary()
    for name in reference.variants:
        assert not all(check.ok for check in compare(outcome, reference.expected(probe, frozenset({name})), probe)), name
    defaults = verdict.defaults
    assert defaults["optimizer"] == "Adam" and defaults["adam_eps"] == defaults["actor_adam_eps"] == 1e-8
    assert defaults["max_grad_norm"] == "none" and defaults["critic_action_space"] == "[-1, 1]"
    assert defaults["n_critics"] == len(critics) and defaults["truncation_bootstrap"] is True
    if family == "TD3":
        assert defaults["policy_delay"] == 1 and defaults["target_policy_noise"] == 0.0
    # the adapter declares no TD3/DDPG departure: nothing in its fidelity report names a variant setting
    assert not [item for item in SkrlAdapter().fidelity(workload) if item.setting.startswith("defaults.")]


def test_skrl_subprocess_envs_are_counted_by_the_harness(skrl_store: Store) -> None:
    run = skrl_store.runs_frame().set_index("run_id").loc["tiny-ppo-subproc__skrl__s0"]
    assert run["env_steps"] == run["framework_env_steps"] == 512
    assert run["episodes"] > 0


def test_skrl_fidelity_flags_what_it_cannot_map() -> None:
    from rlcompare_skrl import SkrlAdapter

    adapter = SkrlAdapter()
    a2c = workload_from_dict({"id": "a2c", "env": "CartPole-v1", "algorithm": "A2C", "env_steps": 1000,
                              "parallelism": {"workers": 2, "envs_per_worker": 2},
                              "hyperparameters": {"optimizer": "rmsprop"}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(a2c)}
    assert fidelity["hyperparameters.optimizer"].status.value == "unsupported"
    assert fidelity["hyperparameters.value_coef"].status.value == "unsupported"  # skrl weighs it 1, default 0.5
    assert fidelity["hyperparameters.normalize_advantage"].status.value == "unsupported"
    assert fidelity["parallelism.envs_per_worker"].status.value == "approximate"
    dqn = workload_from_dict({"id": "dqn", "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 1000,
                              "parallelism": {"envs_per_worker": 3}, "hyperparameters": {"train_every": 4}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(dqn)}
    assert fidelity["hyperparameters.max_grad_norm"].status.value == "unsupported"
    assert fidelity["hyperparameters.train_every"].status.value == "approximate"
    assert fidelity["hyperparameters.train_every"].native_value == 1
    ppo = workload_from_dict({"id": "ppo", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000,
                              "hyperparameters": {}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(ppo)}
    assert fidelity["hyperparameters.normalize_advantage"].status.value == "approximate"


def test_skrl_listing_and_fidelity_do_not_import_the_framework() -> None:
    code = ("import sys; from rlcompare_skrl import SkrlAdapter; from rlcompare.spec.workload import "
            "workload_from_dict; w = workload_from_dict({'id': 'x', 'env': 'CartPole-v1', 'algorithm': 'SAC', "
            "'env_steps': 10}, 't'); SkrlAdapter().fidelity(w); SkrlAdapter().capabilities(); "
            "[SkrlAdapter().fidelity(workload_from_dict({'id': 'x', 'env': 'Pendulum-v1', 'algorithm': a, "
            "'env_steps': 10}, 't')) for a in ('TD3', 'DDPG')]; "
            "print(sorted(m for m in ('torch', 'skrl') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("spec", "reason"), [
    ({"env": "Pendulum-v1", "algorithm": "DQN"}, "DQN runs on discrete action spaces only, Pendulum-v1 has continuous"),
    ({"env": "CartPole-v1", "algorithm": "SAC"}, "SAC runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "TD3"}, "TD3 runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "DDPG"}, "DDPG runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "DQN", "parallelism": {"workers": 2, "mode": "async"}},
     "async sampling is not offered"),
])
def test_skrl_refuses_what_it_cannot_run(spec: dict, reason: str) -> None:
    workload = workload_from_dict({"id": "refused", "env_steps": 1000, "hyperparameters": {}, **spec}, "test")
    with pytest.raises(IncompatibleError, match=f"adapter 'skrl' cannot run workload 'refused': .*{reason}"):
        build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["skrl"])
