"""The Stable-Baselines3 adapter trained for real through the runner, with tiny budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlcompare.execution.runner import LocalRunner
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store

pytestmark = pytest.mark.framework

TINY = {
    "PPO": {"env": "CartPole-v1", "env_steps": 512, "parallelism": {"envs_per_worker": 2},
            "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
    "A2C": {"env": "CartPole-v1", "env_steps": 400, "parallelism": {"envs_per_worker": 2}, "hyperparameters": {}},
    "DQN": {"env": "CartPole-v1", "env_steps": 600, "hyperparameters": {"learning_starts": 100, "buffer_size": 1000}},
    "SAC": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
    "TD3": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000, "policy_delay": 3}},
    "DDPG": {"env": "Pendulum-v1", "env_steps": 300,
             "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
}


@pytest.fixture(scope="module")
def sb3_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    workloads = [
        workload_from_dict({"id": f"tiny-{algorithm.lower()}", "algorithm": algorithm, "seeds": 1,
                            "evaluation": {"interval_steps": 200, "episodes": 2}, **spec}, "test")
        for algorithm, spec in TINY.items()
    ]
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), workloads, ["sb3"])
    store = Store(tmp_path_factory.mktemp("sb3") / "runs.db")
    summary = LocalRunner(store, jobs=2, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [o.record.get("traceback") for o in summary.outcomes]
    return store


@pytest.mark.parametrize("algorithm", list(TINY))
def test_sb3_run_is_stored_with_curve_versions_and_fidelity(sb3_store: Store, algorithm: str) -> None:
    runs = sb3_store.runs_frame().set_index("run_id")
    run = runs.loc[f"tiny-{algorithm.lower()}__sb3__s0"]
    assert run["status"] == "ok"
    assert run["env_steps"] >= TINY[algorithm]["env_steps"]
    # the harness's own count equals SB3's num_timesteps
    assert run["framework_env_steps"] == run["env_steps"]
    assert run["torch_threads"] == 1
    versions = json.loads(run["versions_json"])
    assert versions["stable-baselines3"] and versions["torch"].startswith("2.13.0")
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert fidelity["hyperparameters.learning_rate"]["status"] == "exact"
    assert fidelity["network.hidden_sizes"]["native_value"] in ([64, 64], {"pi": [64, 64], "vf": [64, 64]},
                                                                 {"pi": [64, 64], "qf": [64, 64]})
    native = json.loads(run["native_config_json"])
    assert native["class"] == f"stable_baselines3.{algorithm}"
    curves = sb3_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 3
    assert curve["env_steps"].is_monotonic_increasing
    assert curve["env_steps"].iloc[-1] == run["env_steps"]
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


@pytest.mark.parametrize("algorithm", ["SAC", "TD3", "DDPG"])
def test_sb3_off_policy_actor_critics_follow_the_canonical_schedule(sb3_store: Store, algorithm: str) -> None:
    """Traced from inside SB3: one critic step per env step after learning_starts, the targets moved
    after every gradient step (SAC, DDPG) or every policy_delay-th (TD3: 3 here), nothing reported as
    departing from the canonical schedule; TD3's and DDPG's exploration noise is SB3's own."""
    run = sb3_store.runs_frame().set_index("run_id").loc[f"tiny-{algorithm.lower()}__sb3__s0"]
    traced = json.loads(run["schedule_json"])
    assert traced["gradient_step"]["count"] == pytest.approx(200, abs=2)
    syncs = traced["target_sync"]["mean_effective_interval_gradient_steps"]
    assert syncs == pytest.approx(3 if algorithm == "TD3" else 1, rel=0.05)
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert not [name for name in fidelity if name.startswith("schedule.")], fidelity
    if algorithm != "SAC":
        # SB3 noises the warm-up's uniform random actions too (learning_starts 100 here): not canonical
        noise = fidelity["hyperparameters.exploration_noise"]
        assert noise["status"] == "approximate" and "warm-up" in noise["note"]
        assert json.loads(run["native_config_json"])["action_noise"].startswith("NormalActionNoise(")
        from rlcompare_sb3 import StableBaselines3Adapter

        for hyperparameters in ({"learning_starts": 0}, {"exploration_noise": 0.0}):
            other = workload_from_dict({"id": "t", "env": "Pendulum-v1", "algorithm": algorithm, "env_steps": 300,
                                        "hyperparameters": hyperparameters}, "test")
            entries = {item.setting: item for item in StableBaselines3Adapter().fidelity(other)}
            assert entries["hyperparameters.exploration_noise"].status.value == "exact"


def test_sb3_td3_draws_its_exploration_noise_per_env() -> None:
    """With several envs each gets its own draw (SB3's plain NormalActionNoise would give them all one)."""
    import gymnasium as gym
    from rlcompare_sb3 import StableBaselines3Adapter
    from stable_baselines3.common.vec_env import DummyVecEnv

    workload = workload_from_dict({"id": "t", "env": "Pendulum-v1", "algorithm": "TD3", "env_steps": 300,
                                   "parallelism": {"envs_per_worker": 3},
                                   "hyperparameters": {"exploration_noise": 0.3}}, "test")
    env = DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 3)
    try:
        model, _, _ = StableBaselines3Adapter().build_model(workload, env, 0)
        draws = model.action_noise()
    finally:
        env.close()
    assert draws.shape == (3, 1) and len({float(value) for value in draws[:, 0]}) == 3
    assert all(noise._sigma[0] == 0.3 for noise in model.action_noise.noises)


def test_sb3_fidelity_flags_what_it_cannot_map() -> None:
    from rlcompare_sb3 import StableBaselines3Adapter

    workload = workload_from_dict(
        {"id": "dqn", "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 1000,
         "parallelism": {"envs_per_worker": 3}, "hyperparameters": {"double_q": True, "train_every": 4}}, "test")
    fidelity = {item.setting: item for item in StableBaselines3Adapter().fidelity(workload)}
    assert fidelity["hyperparameters.double_q"].status.value == "unsupported"
    assert fidelity["hyperparameters.train_every"].status.value == "approximate"
    assert fidelity["hyperparameters.train_every"].native_value == 1


def test_sb3_refuses_dqn_on_continuous_actions(tmp_path: Path) -> None:
    from rlcompare.errors import IncompatibleError

    workload = workload_from_dict({"id": "dqn-pendulum", "env": "Pendulum-v1", "algorithm": "DQN",
                                   "env_steps": 1000, "hyperparameters": {}}, "test")
    with pytest.raises(IncompatibleError, match="adapter 'sb3' cannot run workload 'dqn-pendulum'"):
        build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["sb3"])
