"""The MushroomRL adapter trained for real through the runner, with tiny budgets."""

from __future__ import annotations

import json
import math

import pytest

from rlcompare.errors import IncompatibleError
from rlcompare.execution.runner import LocalRunner
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

pytestmark = pytest.mark.framework

ADAPTER = "mushroom-rl"
TINY = {
    # two envs: MushroomRL's Core steps one, 2 x 64 steps of it per fit
    "PPO": {"env": "CartPole-v1", "env_steps": 512, "parallelism": {"envs_per_worker": 2},
            "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
    # two gradient steps per update: one Core fit and one extra fit
    "DQN": {"env": "CartPole-v1", "env_steps": 600,
            "hyperparameters": {"learning_starts": 100, "buffer_size": 1000, "gradient_steps": 2,
                                "target_update_interval": 100}},
    "SAC": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
    "TD3": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000, "policy_delay": 3}},
}


def _workload(name: str, spec: dict) -> Workload:
    return workload_from_dict({"id": f"tiny-{name.lower()}", "algorithm": name, "seeds": 1,
                               "evaluation": {"interval_steps": 200, "episodes": 2}, **spec}, "test")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    workloads = [_workload(name, spec) for name, spec in TINY.items()]
    plan = build_plan(build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_mushroom_rl"), autoload=False).plan_catalogue(), workloads, [ADAPTER])
    store = Store(tmp_path_factory.mktemp("mushroom_rl") / "runs.db")
    summary = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [o.record.traceback for o in summary.outcomes]
    return store


def _run(store: Store, name: str) -> dict:
    return store.runs_frame().set_index("run_id").loc[f"tiny-{name.lower()}__{ADAPTER}__s0"]


@pytest.mark.parametrize("name", list(TINY))
def test_run_is_valid_and_stored_with_curve_versions_and_fidelity(store: Store, name: str) -> None:
    workload = _workload(name, TINY[name])
    run = _run(store, name)
    assert run["status"] == "ok"
    # Core.learn(n_steps=budget) stops on the budget exactly, and counts every step the harness counts
    assert run["env_steps"] == workload.env_steps
    assert run["framework_env_steps"] == run["env_steps"]
    assert run["torch_threads"] == 1
    versions = json.loads(run["versions_json"])
    assert versions["mushroom-rl"] == "1.10.1" and versions["torch"].startswith("2.13.0")
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert set(fidelity) >= {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields
                             if key != "algorithm"}
    assert set(fidelity) >= {"network.hidden_sizes", "network.activation", "parallelism.envs_per_worker",
                             "parallelism.workers"}
    # canonical settings, the family's variant settings and what the traced schedule adds: nothing else
    assert not [s for s in fidelity
                if not s.startswith(("hyperparameters.", "network.", "parallelism.", "defaults.", "schedule."))]
    assert fidelity["hyperparameters.gamma"]["native_name"] == "MDPInfo.gamma"
    curves = store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 3
    assert curve["env_steps"].is_monotonic_increasing
    assert all(math.isfinite(value) for value in curve["return_mean"])
    native = json.loads(run["native_config_json"])
    assert native["environment"]["class"] == "HarnessEnvironment"


def test_ppo_on_two_envs_runs_one_with_the_same_env_steps_per_fit(store: Store) -> None:
    run = _run(store, "PPO")
    native = json.loads(run["native_config_json"])
    assert native["core"]["n_steps_per_fit"] == 128  # 2 envs x 64 steps, from one environment
    assert native["critic_fit_params"] == {"n_epochs": 2} and native["n_epochs_policy"] == 2
    assert native["actor_optimizer"]["params"] == {"lr": 3e-4, "eps": 1e-5}
    assert native["critic_params"]["loss"] == "0.5 * F.mse_loss"
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert fidelity["parallelism.envs_per_worker"]["status"] == "approximate"
    assert fidelity["hyperparameters.rollout_steps"]["status"] == "approximate"
    assert fidelity["hyperparameters.max_grad_norm"]["status"] == "unsupported"
    assert fidelity["defaults.advantage_std"]["native_value"] == "biased"
    traced = json.loads(run["schedule_json"])
    assert traced["update"]["count"] == 512 // 128
    # one epoch of 128 / 32 minibatches per policy pass: 2 x 4 policy steps per update
    assert traced["gradient_step"]["count"] == 4 * 2 * 4


def test_dqn_schedule_is_traced_from_inside_mushroom_rl(store: Store) -> None:
    run = _run(store, "DQN")
    traced = json.loads(run["schedule_json"])
    # fits every 4 env steps from the start; updates (2 gradient steps each) once the memory holds > 100
    assert traced["update"]["count"] == 600 // 4 - 100 // 4
    assert traced["gradient_step"]["count"] == 2 * traced["update"]["count"]
    assert traced["gradient_step"]["first_env_step"] == 104
    # a copy every 2 x ceil(100 / 4) = 50 fits, counted from the first fit
    assert traced["target_sync"]["count"] == (2 * 600 // 4) // 50
    assert traced["exploration"]["count"] > 1
    native = json.loads(run["native_config_json"])
    assert native["extra_fits"] == 1 and native["target_update_frequency"] == 50
    assert native["epsilon"]["warm_up"] == 100 and native["loss"] == "F.smooth_l1_loss"


def test_td3_moves_its_targets_at_every_fit_and_acts_on_scaled_actions(store: Store) -> None:
    """TD3.fit (DDPG.fit's loop) takes a Polyak step of every target after every critic step, not
    only with the actor's (every 3rd here): the traced schedule shows it and the fidelity says so."""
    run = _run(store, "TD3")
    traced = json.loads(run["schedule_json"])
    assert traced["update"]["count"] == traced["gradient_step"]["count"] == traced["target_sync"]["count"] == 300 - 100
    native = json.loads(run["native_config_json"])
    assert native["environment"]["action_rescale"] == [-1.0, 1.0]
    assert native["policy_delay"] == 3 and native["noise_std"] == 0.2
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert fidelity["hyperparameters.learning_starts"]["status"] == "approximate"
    assert fidelity["hyperparameters.policy_delay"]["status"] == "approximate"
    assert fidelity["schedule.target_sync_max_gradient_steps"]["native_value"] == 1.0


def test_refusals_name_the_adapter_and_the_reason() -> None:
    from rlcompare_mushroom_rl import MushroomRLAdapter

    adapter = MushroomRLAdapter()
    workers = workload_from_dict({"id": "w", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000,
                                  "parallelism": {"workers": 2}}, "test")
    with pytest.raises(IncompatibleError, match="mushroom-rl.*rollout workers"):
        adapter.check_compatible(workers, "discrete")
    a2c = workload_from_dict({"id": "a", "env": "CartPole-v1", "algorithm": "A2C", "env_steps": 1000}, "test")
    with pytest.raises(IncompatibleError, match="mushroom-rl.*A2C"):
        adapter.check_compatible(a2c, "discrete")
    dqn = workload_from_dict({"id": "d", "env": "Pendulum-v1", "algorithm": "DQN", "env_steps": 1000}, "test")
    with pytest.raises(IncompatibleError, match="mushroom-rl"):
        adapter.check_compatible(dqn, "continuous")


def test_fidelity_follows_the_workload() -> None:
    from rlcompare_mushroom_rl import MushroomRLAdapter

    adapter = MushroomRLAdapter()
    one = workload_from_dict({"id": "p", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000,
                              "hyperparameters": {"normalize_advantage": False}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(one)}
    assert fidelity["hyperparameters.normalize_advantage"].status.value == "unsupported"
    assert fidelity["parallelism.envs_per_worker"].status.value == "exact"
    assert fidelity["hyperparameters.rollout_steps"].status.value == "exact"
    dqn = workload_from_dict({"id": "d", "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 1000,
                              "hyperparameters": {"target_update_interval": 4, "double_q": True}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(dqn)}
    assert fidelity["hyperparameters.target_update_interval"].status.value == "exact"
    assert fidelity["hyperparameters.double_q"].native_value == "DoubleDQN"
    sac = workload_from_dict({"id": "s", "env": "Pendulum-v1", "algorithm": "SAC", "env_steps": 1000,
                              "hyperparameters": {"entropy_coef": 0.2, "learning_starts": 0}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(sac)}
    assert fidelity["hyperparameters.entropy_coef"].native_value == pytest.approx(math.log(0.2))
    assert fidelity["hyperparameters.learning_starts"].status.value == "exact"
    assert fidelity["network.hidden_sizes"].status.value == "approximate"


def test_the_worker_view_maps_as_the_validated_model_maps() -> None:
    """What the adapter computes inside the worker (from the plain-data view) is what the driver
    computed from the validated workload: the native configuration and the fidelity report."""
    from rlcompare_mushroom_rl import MushroomRLAdapter

    from rlcompare.harness.workload_view import workload_view

    adapter = MushroomRLAdapter()
    for name, spec in TINY.items():
        workload = _workload(name, spec)
        from_model = adapter.native_config(workload)
        from_view = adapter.native_config(workload_view(workload.to_dict()))
        assert from_view[0] == from_model[0]
        assert [item.to_dict() for item in from_view[1]] == [item.to_dict() for item in from_model[1]]
