"""The SBX adapter: its declarations without SBX installed, and real tiny runs in SBX's own environment
(JAX, Flax, Optax and TensorFlow Probability on the CPU, with the main environment's Stable-Baselines3,
torch, numpy and gymnasium), through the runner.

SBX stays out of the main environment: the real runs use the environment :mod:`rlcompare.pyenvs`
builds for it with uv (in the user cache; reused when ready), as every ``rlcompare run`` with this
adapter does. One tiny run per family shape: PPO (on-policy), DQN, TD3 (SBX's off-policy
actor-critics share the adapter's code path; SAC's update is checked by the parity probe).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_sbx import ENVIRONMENT_REQUIRES, SBXAdapter

from rlcompare.adapter import Fidelity
from rlcompare.errors import IncompatibleError
from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.jax_threads import thread_environment
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import BUILTIN_PLUGINS, build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]


def _workload(algorithm: str, **changes: object) -> Workload:
    env = "CartPole-v1" if algorithm in ("PPO", "DQN") else "Pendulum-v1"
    spec: dict[str, object] = {"id": f"sbx-{algorithm.lower()}", "env": env, "algorithm": algorithm,
                               "env_steps": 1000, "seeds": 1}
    spec.update(changes)
    return workload_from_dict(spec, "test")


def _entries(workload: Workload) -> dict[str, object]:
    return {entry.setting: entry for entry in SBXAdapter().fidelity(workload)}


# -- declarations, in the main environment (no SBX there) ---------------------------------------------


def test_capabilities_offer_sbx_families_with_their_action_spaces() -> None:
    capabilities = SBXAdapter().capabilities()
    assert capabilities.algorithms == frozenset({"PPO", "DQN", "SAC", "TD3", "DDPG"})
    assert capabilities.algorithm_action_spaces["DQN"] == frozenset({"discrete"})
    assert capabilities.algorithm_action_spaces["TD3"] == frozenset({"continuous"})
    assert "PPO" not in capabilities.algorithm_action_spaces  # both spaces


@pytest.mark.parametrize(("algorithm", "env", "space", "match"), [
    ("A2C", "CartPole-v1", "discrete", "A2C"),
    ("DQN", "Pendulum-v1", "continuous", "continuous"),
    ("SAC", "CartPole-v1", "discrete", "discrete"),
])
def test_unsupported_pairs_are_refused_naming_adapter_and_workload(algorithm: str, env: str, space: str,
                                                                   match: str) -> None:
    workload = workload_from_dict({"id": f"x-{algorithm.lower()}", "env": env, "algorithm": algorithm,
                                   "env_steps": 1000}, "test")
    with pytest.raises(IncompatibleError, match=rf"'sbx'.*'x-{algorithm.lower()}'.*{match}"):
        SBXAdapter().check_compatible(workload, space)


def test_ppo_marks_per_network_clipping_and_the_biased_advantage_std() -> None:
    entries = _entries(_workload("PPO"))
    assert entries["hyperparameters.max_grad_norm"].status is Fidelity.APPROXIMATE
    assert "separately" in entries["hyperparameters.max_grad_norm"].note
    assert entries["defaults.grad_clip_scope"].native_value == "per network"
    assert entries["defaults.advantage_std"].native_value == "biased"
    assert entries["hyperparameters.normalize_advantage"].status is Fidelity.APPROXIMATE
    assert entries["defaults.adam_eps"].status is Fidelity.EXACT
    exact = ("learning_rate", "gamma", "gae_lambda", "clip_range", "rollout_steps", "minibatch_size", "epochs",
             "entropy_coef", "value_coef")
    assert all(entries[f"hyperparameters.{name}"].status is Fidelity.EXACT for name in exact)
    # without normalization nothing about its std is claimed
    off = _entries(_workload("PPO", hyperparameters={"normalize_advantage": False}))
    assert off["hyperparameters.normalize_advantage"].status is Fidelity.EXACT and "defaults.advantage_std" not in off


def test_dqn_has_no_clipping_no_double_q_and_a_two_layer_q_network() -> None:
    entries = _entries(_workload("DQN"))
    assert entries["hyperparameters.max_grad_norm"].status is Fidelity.UNSUPPORTED
    assert entries["hyperparameters.double_q"].status is Fidelity.EXACT  # off, as SBX
    assert _entries(_workload("DQN", hyperparameters={"double_q": True}))[
        "hyperparameters.double_q"].status is Fidelity.UNSUPPORTED
    assert entries["network.hidden_sizes"].status is Fidelity.EXACT
    three = _entries(_workload("DQN", network={"hidden_sizes": [32, 16, 8]}))["network.hidden_sizes"]
    assert three.status is Fidelity.APPROXIMATE and three.native_value == [32, 32]
    linear = _entries(_workload("DQN", network={"hidden_sizes": []}))["network.hidden_sizes"]
    assert linear.status is Fidelity.UNSUPPORTED
    kwargs, _ = SBXAdapter().native_config(_workload("DQN", parallelism={"envs_per_worker": 4},
                                                     hyperparameters={"train_every": 8}))
    assert kwargs["train_freq"] == 2 and kwargs["target_update_interval"] == 1000  # SBX divides it by n_envs


def test_off_policy_departures_are_declared_per_family() -> None:
    sac, td3, ddpg = (_entries(_workload(name)) for name in ("SAC", "TD3", "DDPG"))
    assert sac["defaults.squash_correction_eps"].native_value == 0.0
    assert sac["hyperparameters.tau"].status is Fidelity.EXACT
    assert td3["defaults.critic_loss_scale"].native_value == 0.5
    assert td3["defaults.actor_q"].native_value == "min_i Q_i" and "defaults.actor_q" not in ddpg
    assert ddpg["defaults.critic_loss_scale"].native_value == 0.5
    for entries in (td3, ddpg):
        assert entries["hyperparameters.tau"].status is Fidelity.APPROXIMATE
        assert "before the actor's step" in entries["hyperparameters.tau"].note
    assert td3["hyperparameters.policy_delay"].status is Fidelity.APPROXIMATE  # targets move every critic step
    assert _entries(_workload("TD3", hyperparameters={"policy_delay": 1}))[
        "hyperparameters.policy_delay"].status is Fidelity.EXACT
    for name in ("SAC", "TD3", "DDPG"):  # SBX's DDPG would train its critic at 1e-3 otherwise
        kwargs, _ = SBXAdapter().native_config(_workload(name, hyperparameters={"learning_rate": 5e-4}))
        assert kwargs["qf_learning_rate"] == kwargs["learning_rate"] == 5e-4


def test_thread_environment_sizes_the_pjrt_pool_and_keeps_other_flags() -> None:
    one = thread_environment(1, "--xla_dump_to=/tmp/x --xla_cpu_multi_thread_eigen=true")
    assert one == {"PJRT_NPROC": "1", "XLA_FLAGS": "--xla_dump_to=/tmp/x --xla_cpu_multi_thread_eigen=false"}
    assert thread_environment(4) == {"PJRT_NPROC": "4", "XLA_FLAGS": ""}


def test_environment_pins_sbx_jax_on_the_cpu_and_the_main_sb3_stack() -> None:
    pins = dict(requirement.split("==") for requirement in ENVIRONMENT_REQUIRES)
    assert pins["sbx-rl"] and pins["jax[cpu]"] == pins["jaxlib"]
    assert pins["torch"] == "2.13.0"
    from importlib.metadata import version

    assert pins["stable-baselines3"] == version("stable-baselines3")
    assert pins["numpy"] == version("numpy") and pins["gymnasium"] == version("gymnasium")


def test_declarations_import_neither_sbx_nor_jax_nor_torch() -> None:
    code = (
        "import sys\nfrom rlcompare_sbx import SBXAdapter\n"
        "from rlcompare.spec.workload import workload_from_dict\n"
        "a = SBXAdapter()\n"
        "for alg, env in (('PPO', 'CartPole-v1'), ('DQN', 'CartPole-v1'), ('SAC', 'Pendulum-v1'), ('TD3', 'Pendulum-v1')):\n"
        "    w = workload_from_dict({'id': 'x', 'env': env, 'algorithm': alg, 'env_steps': 1000}, 't')\n"
        "    a.fidelity(w); a.budget_tolerance(w)\n"
        "a.capabilities()\n"
        "print(sorted(m for m in ('sbx', 'jax', 'flax', 'optax', 'torch', 'stable_baselines3') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- real runs, in SBX's own environment -----------------------------------------------------------------

TINY = {
    "PPO": {"env_steps": 512, "parallelism": {"envs_per_worker": 2},
            "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
    "DQN": {"env_steps": 600, "hyperparameters": {"learning_starts": 100, "buffer_size": 1000, "train_every": 4,
                                                  "target_update_interval": 100}},
    "TD3": {"env_steps": 300, "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000,
                                                  "policy_delay": 2}},
}


@pytest.fixture(scope="module")
def sbx_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    workloads = [_workload(name, evaluation={"interval_steps": 200, "episodes": 2}, **spec)
                 for name, spec in TINY.items()]
    plugins = build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_sbx"), autoload=False)  # built in or not yet
    # SBX is not in the main environment: placing the plan builds (or reuses) its own with uv, as `rlcompare run`
    plan = place_runs(plugins.adapters, build_plan(plugins.plan_catalogue(), workloads, ["sbx"]))
    assert {run.environment is not None for run in plan.runs} == {True}
    store = Store(tmp_path_factory.mktemp("sbx") / "runs.db")
    summary = LocalRunner(store, jobs=1, timeout_seconds=900).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [o.record.traceback for o in summary.outcomes]
    return store


def _run(store: Store, algorithm: str) -> object:
    return store.runs_frame().set_index("run_id").loc[f"sbx-{algorithm.lower()}__sbx__s0"]


@pytest.mark.framework
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("algorithm", list(TINY))
def test_sbx_run_is_valid_counted_versioned_and_jax_is_pinned(sbx_store: Store, algorithm: str) -> None:
    run = _run(sbx_store, algorithm)
    assert run["status"] == "ok", run["validity_json"]
    budget = TINY[algorithm]["env_steps"]
    tolerance = SBXAdapter().budget_tolerance(_workload(algorithm, **TINY[algorithm]))
    assert budget <= run["env_steps"] <= budget + tolerance.overshoot_steps
    assert run["framework_env_steps"] == run["env_steps"]  # SB3's num_timesteps, which SBX keeps
    versions = json.loads(run["versions_json"])
    assert versions["sbx-rl"] == "0.28.0" and versions["jax"] == versions["jaxlib"] == "0.10.2"
    assert versions["stable-baselines3"] == "2.9.2" and versions["torch"].startswith("2.13.0")
    native = json.loads(run["native_config_json"])
    assert native["class"] == f"sbx.{algorithm}" and native["vec_env"] == "DummyVecEnv"
    jax = native["jax"]
    assert (jax["backend"], jax["devices"], jax["PJRT_NPROC"]) == ("cpu", 1, "1")
    assert "--xla_cpu_multi_thread_eigen=false" in jax["XLA_FLAGS"]
    assert jax["compile_seconds_start_up"] > 0 and jax["compile_events_training"] > 0
    assert jax["compile_events_evaluation"] > 0  # the harness's batch sizes, compiled while it evaluates
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert fidelity["hyperparameters.learning_rate"]["status"] == "exact"
    assert fidelity["network.activation"]["native_value"] == "flax.linen.tanh"
    curves = sbx_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    # the step-0 point is evaluated at the first checkpoint, after SB3's first vector step
    assert len(curve) >= 3 and curve["env_steps"].iloc[0] <= TINY[algorithm].get("parallelism", {}).get(
        "envs_per_worker", 1)
    assert curve["env_steps"].is_monotonic_increasing and curve["env_steps"].iloc[-1] == run["env_steps"]
    assert all(math.isfinite(value) for value in curve["return_mean"])
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


@pytest.mark.framework
@pytest.mark.timeout(1800)
def test_sbx_schedules_are_traced_from_inside_sbx(sbx_store: Store) -> None:
    ppo = json.loads(_run(sbx_store, "PPO")["schedule_json"])
    # 4 rollouts of 2 x 64 steps, each 2 epochs of 4 minibatches of 32 (one jitted _one_update each)
    assert ppo["update"]["count"] == 4 and ppo["gradient_step"]["count"] == 32
    dqn = json.loads(_run(sbx_store, "DQN")["schedule_json"])
    # a gradient step every 4 env steps from env step 100 on, a target copy every 100 env steps
    assert dqn["gradient_step"]["count"] == pytest.approx(125, abs=2)
    assert dqn["target_sync"]["count"] == 6 and dqn["target_sync"]["mean_interval_env_steps"] == 100
    # epsilon traced at each change: linear from 1.0 over 10% of the 600-step budget, then flat at 0.05
    assert 60 <= dqn["exploration"]["count"] <= 63 and dqn["exploration"]["samples"][-1][1] == pytest.approx(0.05)
    td3 = json.loads(_run(sbx_store, "TD3")["schedule_json"])
    # SBX moves the targets after every critic step, the canonical TD3 only with every policy_delay-th
    assert td3["gradient_step"]["count"] == pytest.approx(200, abs=2)
    assert td3["target_sync"]["count"] == td3["gradient_step"]["count"]
    fidelity = {item["setting"]: item for item in json.loads(_run(sbx_store, "TD3")["fidelity_json"])}
    assert any(name.startswith("schedule.") for name in fidelity), sorted(fidelity)
