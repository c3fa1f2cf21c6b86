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
            "print(sorted(m for m in ('torch', 'skrl') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("spec", "reason"), [
    ({"env": "Pendulum-v1", "algorithm": "DQN"}, "DQN runs on discrete action spaces only, Pendulum-v1 has continuous"),
    ({"env": "CartPole-v1", "algorithm": "SAC"}, "SAC runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "DQN", "parallelism": {"workers": 2, "mode": "async"}},
     "async sampling is not offered"),
])
def test_skrl_refuses_what_it_cannot_run(spec: dict, reason: str) -> None:
    workload = workload_from_dict({"id": "refused", "env_steps": 1000, "hyperparameters": {}, **spec}, "test")
    with pytest.raises(IncompatibleError, match=f"adapter 'skrl' cannot run workload 'refused': .*{reason}"):
        build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["skrl"])
