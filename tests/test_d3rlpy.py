"""The d3rlpy adapter: its declarations without d3rlpy installed, and real tiny runs in d3rlpy's own
environment (d3rlpy 2.8.1 pins gymnasium==1.0.0), through the driver and the local backend, as
`rlcompare run` runs them."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_d3rlpy import D3rlpyAdapter

from rlcompare.adapter import Fidelity
from rlcompare.errors import IncompatibleError
from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.execution.local import LocalBackend
from rlcompare.parity.schedules import canonical_schedule, schedule_differences
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import BUILTIN_PLUGINS, Plugins, build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]

TINY = {
    # a target copy every 8 env steps with an update every 4: every other update (16 gradient steps of 2 x 8)
    "DQN": {"env": "CartPole-v1", "env_steps": 600,
            "hyperparameters": {"learning_starts": 100, "buffer_size": 1000, "minibatch_size": 32,
                                "target_update_interval": 8, "gradient_steps": 2, "exploration_fraction": 0.5}},
    "SAC": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
    # a delay of 3 critic steps per actor step, so that the traced target syncs tell it from DDPG's 1
    "TD3": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000, "policy_delay": 3}},
    "DDPG": {"env": "Pendulum-v1", "env_steps": 300,
             "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
}


def _workload(name: str, **changes: object) -> Workload:
    spec: dict[str, object] = {"id": f"d3-{name.lower()}", "algorithm": name, "seeds": 1,
                               "network": {"hidden_sizes": [32, 32], "activation": "relu"},
                               "evaluation": {"interval_steps": 100, "episodes": 2}, **TINY[name]}
    spec.update(changes)
    return workload_from_dict(spec, "test")


def _plugins() -> Plugins:
    """The built-in plugins and this adapter's (listed with them until it is a built-in itself)."""
    return build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_d3rlpy"), autoload=False)


def _fidelity(workload: Workload) -> dict[str, object]:
    return {item.setting: item for item in D3rlpyAdapter().fidelity(workload)}


# -- declarations, in the main environment (no d3rlpy there) -------------------------------------------


def test_d3rlpy_offers_its_online_algorithms_on_one_env() -> None:
    capabilities = D3rlpyAdapter().capabilities()
    assert capabilities.algorithms == frozenset({"DQN", "SAC", "TD3", "DDPG"})
    assert not capabilities.vectorized_envs and not capabilities.rollout_workers
    assert D3rlpyAdapter.requires_isolation and "gymnasium==1.0.0" in D3rlpyAdapter.environment_requires
    assert "torch==2.13.0" in D3rlpyAdapter.environment_requires


@pytest.mark.parametrize(("spec", "reason"), [
    ({"env": "CartPole-v1", "algorithm": "DQN", "parallelism": {"envs_per_worker": 4}},
     "vectorized environments are not offered"),
    ({"env": "CartPole-v1", "algorithm": "DQN", "parallelism": {"workers": 2}}, "rollout workers are not offered"),
    ({"env": "Pendulum-v1", "algorithm": "DQN"}, "DQN runs on discrete action spaces only"),
    ({"env": "CartPole-v1", "algorithm": "SAC"}, "SAC runs on continuous action spaces only"),
    ({"env": "CartPole-v1", "algorithm": "PPO"}, "PPO is not offered"),
])
def test_d3rlpy_refuses_what_it_cannot_run(spec: dict, reason: str) -> None:
    workload = workload_from_dict({"id": "refused", "env_steps": 1000, **spec}, "test")
    with pytest.raises(IncompatibleError, match=f"adapter 'd3rlpy' cannot run workload 'refused': .*{reason}"):
        build_plan(_plugins().plan_catalogue(), [workload], ["d3rlpy"])


def test_d3rlpy_dqn_maps_every_setting_to_its_native_name() -> None:
    workload = _workload("DQN")
    native, _ = D3rlpyAdapter().native_config(workload)
    assert native["config_class"] == "DQNConfig" and native["config"]["n_critics"] == 1
    assert native["config"]["target_update_interval"] == 4  # 2 gradient steps x ceil(8 / 4) updates
    assert native["fit_online"] == {"update_start_step": 100, "update_interval": 4, "n_updates": 2, "n_steps": 600,
                                    "random_steps": 101, "eval_env": None, "logger_adapter": "NoopAdapterFactory",
                                    "show_progress": False}
    assert native["explorer"] == {"class": "LinearDecayEpsilonGreedy", "start_epsilon": 1.0, "end_epsilon": 0.05,
                                  "duration": 300}
    assert native["optimizer"] == {"class": "AdamFactory", "clip_grad_norm": 10.0}
    assert native["encoder"] == {"class": "VectorEncoderFactory", "hidden_units": [32, 32], "activation": "relu"}
    entries = _fidelity(workload)
    # the first update is at env step 104, a multiple of 8: d3rlpy's copies before the updates at 112, 120, ...
    # are the canonical ones (the copy at 104 leaves the initial weights, d3rlpy's target at the start)
    assert entries["hyperparameters.target_update_interval"].status is Fidelity.EXACT
    default = _fidelity(_workload("DQN", hyperparameters={"learning_starts": 100}))  # a copy every 1,000 env steps
    assert default["hyperparameters.target_update_interval"].status is Fidelity.APPROXIMATE
    assert "out of phase" in default["hyperparameters.target_update_interval"].note
    assert entries["hyperparameters.buffer_size"].status is Fidelity.APPROXIMATE
    assert "time limit" in entries["hyperparameters.buffer_size"].note
    double = D3rlpyAdapter().native_config(_workload("DQN", hyperparameters={"double_q": True}))[0]
    assert double["config_class"] == "DoubleDQNConfig"


def test_d3rlpy_zoo_dqn_target_copy_is_exact_between_bursts() -> None:
    """The classic suite's CartPole DQN (128 gradient steps every 256 env steps, a copy every 10): one
    copy per update, before its burst, with d3rlpy's counter started at 1."""
    plugins = _plugins()
    entries = _fidelity(plugins.workloads["cartpole-dqn"])
    assert entries["hyperparameters.target_update_interval"].native_value == 128
    assert entries["hyperparameters.target_update_interval"].status is Fidelity.EXACT


def test_d3rlpy_actor_critics_map_rates_noise_and_temperature() -> None:
    sac, _ = D3rlpyAdapter().native_config(_workload("SAC"))
    assert sac["config"] | {} == {"actor_learning_rate": 3e-4, "critic_learning_rate": 3e-4, "temp_learning_rate": 3e-4,
                                  "initial_temperature": 1.0, "gamma": 0.99, "batch_size": 32, "tau": 0.005,
                                  "n_critics": 2}
    assert sac["explorer"] is None and sac["fit_online"]["random_steps"] == 101
    fixed, _ = D3rlpyAdapter().native_config(_workload("SAC", hyperparameters={"entropy_coef": 0.2}))
    assert fixed["config"]["initial_temperature"] == 0.2 and fixed["config"]["temp_learning_rate"] == 0.0
    td3, _ = D3rlpyAdapter().native_config(_workload("TD3"))
    assert td3["config"]["update_actor_interval"] == 3 and td3["config"]["n_critics"] == 2
    assert (td3["config"]["target_smoothing_sigma"], td3["config"]["target_smoothing_clip"]) == (0.2, 0.5)
    assert td3["explorer"] == {"class": "NormalNoise", "std": 0.1, "mean": 0.0}
    ddpg, _ = D3rlpyAdapter().native_config(_workload("DDPG"))
    assert ddpg["config_class"] == "DDPGConfig" and ddpg["config"]["n_critics"] == 1
    entries = _fidelity(_workload("SAC"))
    assert {entries[name].status for name in ("defaults.critic_loss_scale", "defaults.alpha_loss",
                                                "defaults.squash_correction_eps")} == {Fidelity.APPROXIMATE}
    assert "defaults.critic_loss_scale" not in _fidelity(_workload("TD3"))


def test_d3rlpy_linear_network_is_unsupported() -> None:
    entries = _fidelity(_workload("DQN", network={"hidden_sizes": [], "activation": "tanh"}))
    assert entries["network.hidden_sizes"].status is Fidelity.UNSUPPORTED


def test_d3rlpy_declarations_import_neither_d3rlpy_nor_torch() -> None:
    code = ("import sys\nfrom rlcompare_d3rlpy import D3rlpyAdapter\n"
            "from rlcompare.spec.workload import workload_from_dict\n"
            "for a, e in (('DQN', 'CartPole-v1'), ('SAC', 'Pendulum-v1'), ('TD3', 'Pendulum-v1')):\n"
            "    w = workload_from_dict({'id': 'x', 'env': e, 'algorithm': a, 'env_steps': 1000}, 't')\n"
            "    D3rlpyAdapter().fidelity(w); D3rlpyAdapter().capabilities()\n"
            "print(sorted(m for m in ('d3rlpy', 'torch') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- real runs, in d3rlpy's own environment -------------------------------------------------------------


@pytest.fixture(scope="module")
def d3rlpy_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plugins = _plugins()
    # the adapter declares it cannot share the main environment: placing the plan builds (or reuses)
    # its own with uv, exactly as `rlcompare run` does
    plan = place_runs(plugins.adapters, build_plan(plugins.plan_catalogue(), [_workload(n) for n in TINY], ["d3rlpy"]))
    assert {run.environment is not None for run in plan.runs} == {True}
    store = Store(tmp_path_factory.mktemp("d3rlpy") / "runs.db")
    cwd_before = sorted(os.listdir(Path.cwd()))
    summary = Driver(store, LocalBackend(Limits(600, None), BackendOptions(jobs=2))).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [o.record.traceback for o in summary.outcomes]
    assert sorted(os.listdir(Path.cwd())) == cwd_before, "d3rlpy wrote into the working directory"
    return store


def _run(store: Store, name: str) -> object:
    return store.runs_frame().set_index("run_id").loc[f"d3-{name.lower()}__d3rlpy__s0"]


@pytest.mark.framework
@pytest.mark.parametrize("name", list(TINY))
def test_d3rlpy_run_is_valid_counted_and_stored(d3rlpy_store: Store, name: str) -> None:
    workload = _workload(name)
    run = _run(d3rlpy_store, name)
    assert run["status"] == "ok", run["validity_json"]
    # fit_online steps exactly n_steps: d3rlpy's count is the harness's, to the step
    assert run["env_steps"] == run["framework_env_steps"] == workload.env_steps
    versions = json.loads(run["versions_json"])
    assert versions["d3rlpy"] == "2.8.1" and versions["gymnasium"] == "1.0.0" and versions["torch"].startswith("2.13.0")
    curves = d3rlpy_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert list(curve["env_steps"])[0] == 0 and len(curve) >= 3 and curve["env_steps"].is_monotonic_increasing
    assert all(math.isfinite(value) for value in curve["return_mean"])
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert set(fidelity) >= {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields
                             if key != "algorithm"}


@pytest.mark.framework
@pytest.mark.parametrize("name", list(TINY))
def test_d3rlpy_follows_the_canonical_schedule(d3rlpy_store: Store, name: str) -> None:
    """Traced from inside d3rlpy: the updates, their gradient steps, the target syncs (and DQN's
    epsilon) where the canonical settings put them; nothing reported as departing."""
    workload = _workload(name)
    traced = json.loads(_run(d3rlpy_store, name)["schedule_json"])
    canonical = canonical_schedule(workload.to_dict())
    assert traced["update"]["count"] == canonical["updates"]
    assert traced["gradient_step"]["count"] == canonical["gradient_steps"]
    assert traced["gradient_step"]["first_env_step"] == canonical["first_gradient_step"] - (
        canonical["first_gradient_step"] % workload.hyperparameters.train_every)
    syncs = traced["target_sync"]
    if name == "DQN":
        # a copy after every 4th gradient step (the second update's end), none inside an update
        assert syncs["max_interval_gradient_steps"] == syncs["mean_effective_interval_gradient_steps"] == 4
        assert traced["exploration"]["count"] > 100
    else:
        delay = 3 if name == "TD3" else 1
        assert syncs["count"] == canonical["gradient_steps"] // delay
        assert syncs["mean_effective_interval_gradient_steps"] == delay
        if name == "TD3":  # after critic steps 3, 6, ...: the canonical phase
            assert syncs["first_effective_gradient_step"] == 3
    assert schedule_differences(workload.to_dict(), traced) == []


@pytest.mark.framework
def test_d3rlpy_native_config_is_recorded(d3rlpy_store: Store) -> None:
    dqn = json.loads(_run(d3rlpy_store, "DQN")["native_config_json"])
    assert dqn["config_class"] == "DQNConfig" and dqn["fit_online"]["random_steps"] == 101
    td3 = json.loads(_run(d3rlpy_store, "TD3")["native_config_json"])
    assert td3["explorer"]["class"] == "NormalNoise" and td3["config"]["update_actor_interval"] == 3
