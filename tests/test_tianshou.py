"""The Tianshou adapter trained for real through the runner, with tiny budgets."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from rlcompare_tianshou import NUMBA_CACHE_ENV

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
    "A2C": {"env": "CartPole-v1", "env_steps": 400, "parallelism": {"envs_per_worker": 2}, "hyperparameters": {}},
    "PG": {"env": "CartPole-v1", "env_steps": 512, "parallelism": {"envs_per_worker": 2},
           "hyperparameters": {"rollout_steps": 64}},
    "DQN": {"env": "CartPole-v1", "env_steps": 600, "hyperparameters": {"learning_starts": 100, "buffer_size": 1000}},
    "SAC": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
    "TD3": {"env": "Pendulum-v1", "env_steps": 300,
            "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000, "policy_delay": 3}},
    "DDPG": {"env": "Pendulum-v1", "env_steps": 300,
             "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
    # one environment per subprocess (SubprocVectorEnv): the harness must count steps made there
    "PPO-SUBPROC": {"algorithm": "PPO", "env": "CartPole-v1", "env_steps": 512, "parallelism": {"workers": 2},
                    "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
}


def _workload(name: str, spec: dict) -> Workload:
    return workload_from_dict({"id": f"tiny-{name.lower()}", "algorithm": name, "seeds": 1,
                               "evaluation": {"interval_steps": 200, "episodes": 2}, **spec}, "test")


def _one_rollout(workload: Workload) -> int:
    """Steps the harness's count and Tianshou's may differ by: one collect step."""
    hp = workload.hyperparameters
    per_env = hp.rollout_steps if workload.algorithm in ("PPO", "A2C", "PG") else hp.train_every  # type: ignore[union-attr]
    return workload.parallelism.total_envs * per_env


@pytest.fixture(scope="module")
def tianshou_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    workloads = [_workload(name, spec) for name, spec in TINY.items()]
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), workloads, ["tianshou"])
    store = Store(tmp_path_factory.mktemp("tianshou") / "runs.db")
    # Tianshou's numba helpers compiled once for the whole test run (conftest sets RLCOMPARE_NUMBA_CACHE)
    summary = LocalRunner(store, jobs=2, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [
        o.record.get("traceback") for o in summary.outcomes]
    return store


@pytest.mark.parametrize("name", list(TINY))
def test_tianshou_run_is_stored_with_curve_versions_and_fidelity(tianshou_store: Store, name: str) -> None:
    workload = _workload(name, TINY[name])
    runs = tianshou_store.runs_frame().set_index("run_id")
    run = runs.loc[f"tiny-{name.lower()}__tianshou__s0"]
    assert run["status"] == "ok"
    assert run["env_steps"] >= workload.env_steps
    # the harness counts on its own; Tianshou's collector count must agree within one collect step
    assert abs(run["framework_env_steps"] - run["env_steps"]) <= _one_rollout(workload)
    assert run["torch_threads"] == 1
    versions = json.loads(run["versions_json"])
    assert versions["tianshou"].startswith("2.") and versions["torch"].startswith("2.13.0")
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert set(fidelity) >= {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields
                             if key != "algorithm"}
    assert fidelity["hyperparameters.learning_rate"] == {**fidelity["hyperparameters.learning_rate"],
                                                         "status": "exact", "native_name": "optim.lr"}
    assert fidelity["network.hidden_sizes"]["status"] == "exact"
    assert [64, 64] in fidelity["network.hidden_sizes"]["native_value"].values()
    native = json.loads(run["native_config_json"])
    assert native["class"] == f"tianshou.algorithm.{workload.algorithm}"
    assert native["network"]["activation"] == "torch.nn.Tanh"
    curves = tianshou_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 3
    assert curve["env_steps"].is_monotonic_increasing
    assert curve["env_steps"].iloc[-1] == run["env_steps"]
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


def test_tianshou_native_config_follows_the_canonical_settings(tianshou_store: Store) -> None:
    runs = tianshou_store.runs_frame().set_index("run_id")
    ppo = json.loads(runs.loc["tiny-ppo__tianshou__s0"]["native_config_json"])
    assert ppo["trainer"] == {"collection_step_num_env_steps": 128, "batch_size": 32, "update_step_num_repetitions": 2}
    assert ppo["algorithm"]["value_clip"] is False and ppo["algorithm"]["advantage_normalization"] is True
    dqn = json.loads(runs.loc["tiny-dqn__tianshou__s0"]["native_config_json"])
    assert dqn["algorithm"]["is_double"] is False
    assert dqn["algorithm"]["target_update_freq"] == 250  # 1000 env steps / train_every 4
    assert dqn["prefill"] == {"n_step": 100}
    sac = json.loads(runs.loc["tiny-sac__tianshou__s0"]["native_config_json"])
    assert sac["algorithm"]["alpha"].startswith("AutoAlpha(target_entropy=-dim(A)")
    td3 = json.loads(runs.loc["tiny-td3__tianshou__s0"]["native_config_json"])
    assert td3["algorithm"] == {"gamma": 0.99, "tau": 0.005, "update_actor_freq": 3, "policy_noise": 0.2,
                                "noise_clip": 0.5, "n_step_return_horizon": 1}
    assert td3["network"]["layout"] == {"actor": [64, 64], "critic1": [64, 64], "critic2": [64, 64]}
    ddpg = json.loads(runs.loc["tiny-ddpg__tianshou__s0"]["native_config_json"])
    assert ddpg["algorithm"] == {"gamma": 0.99, "tau": 0.005, "n_step_return_horizon": 1}
    assert ddpg["network"]["layout"] == {"actor": [64, 64], "critic": [64, 64]}
    for native in (td3, ddpg):
        # Gaussian noise of 0.1 half-widths on the action scaled to [-1, 1], added by the collector
        assert native["policy"] == {"exploration_noise": 0.1, "action_scaling": True, "action_bound_method": "clip"}
        assert native["collector_exploration_noise"] is True
        assert native["trainer"] == {"batch_size": 32, "collection_step_num_env_steps": 1,
                                     "update_step_num_gradient_steps_per_sample": 1.0}
    subproc = json.loads(runs.loc["tiny-ppo-subproc__tianshou__s0"]["native_config_json"])
    assert subproc["venv"] == {"class": "SubprocVectorEnv", "n_envs": 2}


@pytest.mark.parametrize("algorithm", ["TD3", "DDPG"])
def test_tianshou_td3_and_ddpg_follow_the_canonical_schedule(tianshou_store: Store, algorithm: str) -> None:
    """Traced from inside Tianshou: one critic step per env step after learning_starts, the actor
    stepped and the targets moved every policy_delay-th critic step (TD3: 3 here) or after every one
    (DDPG), nothing reported as departing from the canonical schedule; what Tianshou does differently
    is in the notes of the settings it touches, marked approximate."""
    from rlcompare.parity.schedules import canonical_schedule

    workload = _workload(algorithm, TINY[algorithm])
    run = tianshou_store.runs_frame().set_index("run_id").loc[f"tiny-{algorithm.lower()}__tianshou__s0"]
    traced = json.loads(run["schedule_json"])
    canonical = canonical_schedule(workload.to_dict())
    assert traced["gradient_step"]["count"] == canonical["gradient_steps"] == 200
    assert traced["gradient_step"]["first_env_step"] == canonical["first_gradient_step"] == 101
    assert traced["update"]["count"] == canonical["updates"] == 200
    syncs = traced["target_sync"]
    assert syncs["mean_effective_interval_gradient_steps"] == canonical["target_sync_interval_gradient_steps"]
    assert syncs["max_interval_gradient_steps"] == (3 if algorithm == "TD3" else 1)
    # TD3: Tianshou moves the targets after critic steps 1, 4, ..., 199 (67), not 3, 6, ..., 198 (66)
    assert syncs["count"] == (67 if algorithm == "TD3" else 200) and syncs["first_env_step"] == 101
    assert "exploration" not in traced
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    departures = [name for name in fidelity if name.startswith(("schedule.", "defaults."))]
    # TD3: the phase check sees the first actor step and target sync after critic step 1, canonical 3
    assert departures == (["schedule.target_sync_first_gradient_step"] if algorithm == "TD3" else []), fidelity
    if algorithm == "TD3":
        phase = fidelity["schedule.target_sync_first_gradient_step"]
        assert (phase["native_value"], phase["value"]) == (1.0, 3.0) and phase["status"] == "approximate"
    statuses = {name.removeprefix("hyperparameters."): item["status"] for name, item in fidelity.items()
                if name.startswith("hyperparameters.")}
    approximate = {"exploration_noise"} | ({"policy_delay", "target_policy_noise"} if algorithm == "TD3" else set())
    assert statuses == {key: "approximate" if key in approximate else "exact"
                        for key in type(workload.hyperparameters).model_fields if key != "algorithm"}
    noise = fidelity["hyperparameters.exploration_noise"]
    assert noise["native_name"] == "policy.exploration_noise" and noise["native_value"] == 0.1
    assert "no conversion" in noise["note"] and "unclipped" in noise["note"]
    if algorithm == "TD3":
        assert fidelity["hyperparameters.policy_delay"]["native_name"] == "algorithm.update_actor_freq"
        assert "1, 4, 7" in fidelity["hyperparameters.policy_delay"]["note"]
        assert "does not clamp" in fidelity["hyperparameters.target_policy_noise"]["note"]


def test_tianshou_td3_fidelity_follows_the_noise_settings() -> None:
    """Without noise nothing is left to clip, so the noise settings map exactly; a canonical noise clip
    of 0 (no smoothing noise at all) reaches Tianshou, which reads noise_clip 0 as 'no clip', as
    policy_noise 0; a policy delay of 1 has no phase to differ in."""
    from rlcompare_tianshou import TianshouAdapter

    adapter = TianshouAdapter()
    td3 = workload_from_dict(
        {"id": "td3", "env": "Pendulum-v1", "algorithm": "TD3", "env_steps": 1000,
         "hyperparameters": {"exploration_noise": 0.0, "target_noise_clip": 0.0, "policy_delay": 1}}, "test")
    config, entries = adapter.native_config(td3)
    fidelity = {item.setting: item for item in entries}
    assert {name: item.status.value for name, item in fidelity.items() if name.startswith("hyperparameters.")} == {
        f"hyperparameters.{key}": "exact" for key in type(td3.hyperparameters).model_fields if key != "algorithm"}
    assert config["algorithm"]["policy_noise"] == 0.0 and config["algorithm"]["noise_clip"] == 0.0
    assert fidelity["hyperparameters.target_policy_noise"].native_value == 0.0
    assert config["policy"]["exploration_noise"] == 0.0
    ddpg = workload_from_dict({"id": "ddpg", "env": "Pendulum-v1", "algorithm": "DDPG", "env_steps": 1000,
                               "parallelism": {"envs_per_worker": 2}, "hyperparameters": {"train_every": 3}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(ddpg)}
    assert fidelity["hyperparameters.train_every"].status.value == "approximate"
    assert fidelity["hyperparameters.exploration_noise"].status.value == "approximate"
    assert not [name for name in fidelity if name.startswith("defaults.")]  # its parity probe is verified


@pytest.mark.parametrize("family", ["TD3", "DDPG"])
def test_tianshou_td3_and_ddpg_updates_are_the_reference(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tianshou's own TD3/DDPG update on the probe (policy delay 1, no smoothing noise, lagging targets),
    run in this process and judged: the reference update, nothing to declare (Tianshou's TD3 departures
    -- the unclipped stored noisy action, the unclamped smoothed target action, the actor's phase -- need
    exploration noise, smoothing noise or a delay, which the probe has none of)."""
    import importlib

    from rlcompare_tianshou import TianshouAdapter

    from rlcompare.parity.reference import declared_variants
    from rlcompare.parity.verdict import VERIFIED, judge

    reference = getattr(importlib.import_module("rlcompare.parity.td3"), f"{family}Reference")()
    case = reference.cases()[0]
    workload = reference.case_workload(case)
    probe = reference.build_probe(workload)
    adapter = TianshouAdapter()
    # in this process, numba's JIT off as the probe process has it (it takes effect if numba is not imported
    # yet); the variable is undone afterwards, so that later tests' subprocesses compile as Tianshou ships
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    outcome = adapter.parity_update(probe)
    assert outcome.status == "ran", outcome.reason
    declared = declared_variants(reference, adapter.fidelity(workload))
    assert declared == frozenset()
    verdict = judge(reference, case, probe, outcome, "tianshou", declared=declared)
    assert verdict.status == VERIFIED, verdict.summary()
    assert {check.part for check in verdict.checks} == {"targets", "gradients", "updates"}
    assert all(check.ok for check in verdict.checks), verdict.summary()
    critics = ["critic1", "critic2"] if family == "TD3" else ["critic1"]
    names = {f"{prefix}.{layer}.{kind}" for prefix in ["actor", *critics] for layer in ("0", "1", "out")
             for kind in ("weight", "bias")}
    assert set(outcome.gradients) == names
    assert set(outcome.updated) == names | {name.replace(".", "_target.", 1) for name in names}
    defaults = outcome.defaults
    assert defaults["n_critics"] == len(critics) and defaults["critic_action_space"] == "[-1, 1]"
    assert defaults["update_order"] == ", ".join([*critics, "actor", "targets"])
    assert all(optim == {"optimizer": "Adam", "adam_eps": 1e-8, "adam_betas": [0.9, 0.999]}
               for optim in defaults["optimizers"].values())
    if family == "TD3":
        assert defaults["policy_delay"] == 1 and defaults["target_policy_noise"] == 0.0


def test_tianshou_s_compiled_helpers_are_kept_where_the_run_says(tianshou_store: Store) -> None:
    folder = os.environ[NUMBA_CACHE_ENV]  # set for the whole test run (conftest)
    natives = [json.loads(text) for text in tianshou_store.runs_frame()["native_config_json"]]
    assert {native["numba_cache"] for native in natives} == {folder}
    kept = {path.name.split("-")[0] for path in Path(folder).rglob("*.nbi")}
    assert {"manager._prev_index", "manager._next_index", "algorithm_base._gae"} <= kept


def test_without_the_variable_tianshou_compiles_as_it_ships() -> None:
    import subprocess

    code = ("from rlcompare_tianshou import cache_compiled_helpers; print(cache_compiled_helpers()); "
            "from tianshou.data.buffer import manager; print(type(manager._prev_index._cache).__name__)")
    environment = {key: value for key, value in os.environ.items() if key != NUMBA_CACHE_ENV}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment)
    assert result.stdout.split() == ["None", "NullCache"]  # numba's default: nothing kept on disk


def test_tianshou_subprocess_envs_are_counted_by_the_harness(tianshou_store: Store) -> None:
    run = tianshou_store.runs_frame().set_index("run_id").loc["tiny-ppo-subproc__tianshou__s0"]
    # every step happened in one of two subprocesses; the harness saw them all
    assert run["env_steps"] == run["framework_env_steps"] == 512
    assert run["episodes"] > 0


def test_tianshou_fidelity_flags_what_it_cannot_map() -> None:
    from rlcompare_tianshou import TianshouAdapter

    adapter = TianshouAdapter()
    dqn = workload_from_dict(
        {"id": "dqn", "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 1000,
         "parallelism": {"envs_per_worker": 3}, "hyperparameters": {"train_every": 4, "target_update_interval": 500}},
        "test")
    fidelity = {item.setting: item for item in adapter.fidelity(dqn)}
    assert fidelity["hyperparameters.train_every"].status.value == "approximate"
    assert fidelity["hyperparameters.train_every"].native_value == 3
    assert fidelity["hyperparameters.target_update_interval"].status.value == "approximate"
    a2c = workload_from_dict({"id": "a2c", "env": "CartPole-v1", "algorithm": "A2C", "env_steps": 1000,
                              "parallelism": {"workers": 2, "envs_per_worker": 2},
                              "hyperparameters": {"normalize_advantage": True}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(a2c)}
    assert fidelity["hyperparameters.normalize_advantage"].status.value == "unsupported"
    assert fidelity["parallelism.envs_per_worker"].status.value == "approximate"


def test_tianshou_listing_and_fidelity_do_not_import_the_framework() -> None:
    import subprocess

    code = ("import sys; from rlcompare_tianshou import TianshouAdapter; from rlcompare.spec.workload import "
            "workload_from_dict; w = workload_from_dict({'id': 'x', 'env': 'CartPole-v1', 'algorithm': 'SAC', "
            "'env_steps': 10}, 't'); TianshouAdapter().fidelity(w); TianshouAdapter().capabilities(); "
            "TianshouAdapter().fidelity(workload_from_dict({'id': 'y', 'env': 'Pendulum-v1', 'algorithm': 'TD3', "
            "'env_steps': 10}, 't')); "
            "print(sorted(m for m in ('torch', 'tianshou') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("spec", "reason"), [
    ({"env": "Pendulum-v1", "algorithm": "DQN"}, "DQN runs on discrete action spaces only, Pendulum-v1 has continuous"),
    ({"env": "CartPole-v1", "algorithm": "SAC"}, "SAC runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "TD3"}, "TD3 runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "DDPG"},
     "DDPG runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "PPO", "parallelism": {"workers": 2, "mode": "async"}},
     "async sampling is not offered"),
])
def test_tianshou_refuses_what_it_cannot_run(spec: dict, reason: str) -> None:
    workload = workload_from_dict({"id": "refused", "env_steps": 1000, "hyperparameters": {}, **spec}, "test")
    with pytest.raises(IncompatibleError, match=f"adapter 'tianshou' cannot run workload 'refused': .*{reason}"):
        build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["tianshou"])
