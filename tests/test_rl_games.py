"""The rl_games adapter: its declarations without rl_games installed, and one real tiny run per family
in rl_games' own environment (rl-games 1.6.5 pins psutil<6 and pulls wandb, opencv-python and
setproctitle), through the runner.

The real runs use the environment :mod:`rlcompare.pyenvs` builds for the adapter with uv (in the user
cache; reused when ready), as every `rlcompare run` with this adapter does.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_rl_games import RlGamesAdapter

from rlcompare.adapter import Fidelity
from rlcompare.errors import IncompatibleError
from rlcompare.execution.backend import BackendOptions, Limits
from rlcompare.execution.driver import Driver
from rlcompare.execution.local import LocalBackend
from rlcompare.plan.matrix import build_plan
from rlcompare.plan.placement import place_runs
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]


def _ppo(**changes: object) -> Workload:
    spec: dict[str, object] = {
        "id": "rlg-ppo-tiny", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 2048, "seeds": 1,
        "parallelism": {"envs_per_worker": 2},
        "hyperparameters": {"rollout_steps": 64, "minibatch_size": 64, "epochs": 2},
        "evaluation": {"interval_steps": 512, "episodes": 2},
    }
    spec.update(changes)
    return workload_from_dict(spec, "test")


def _sac(**changes: object) -> Workload:
    spec: dict[str, object] = {
        "id": "rlg-sac-tiny", "env": "Pendulum-v1", "algorithm": "SAC", "env_steps": 600, "seeds": 1,
        "parallelism": {"envs_per_worker": 2},
        "network": {"hidden_sizes": [32, 32], "activation": "relu"},
        "hyperparameters": {"learning_starts": 200, "minibatch_size": 64, "train_every": 2},
        "evaluation": {"interval_steps": 200, "episodes": 1},
    }
    spec.update(changes)
    return workload_from_dict(spec, "test")


def _by_setting(workload: Workload) -> dict[str, object]:
    return {entry.setting: entry for entry in RlGamesAdapter().fidelity(workload)}


# -- declarations, in the main environment (no rl_games there) ------------------------------------------


def test_capabilities_offer_ppo_on_both_spaces_and_sac_on_continuous_only() -> None:
    capabilities = RlGamesAdapter().capabilities()
    assert capabilities.algorithms == frozenset({"PPO", "SAC"})
    assert capabilities.algorithm_action_spaces["SAC"] == frozenset({"continuous"})
    assert capabilities.modes == frozenset({"sync"}) and not capabilities.rollout_workers


@pytest.mark.parametrize(("algorithm", "env", "space", "why"), [
    ("A2C", "CartPole-v1", "discrete", "not offered"), ("DQN", "CartPole-v1", "discrete", "not offered"),
    ("SAC", "CartPole-v1", "discrete", "continuous action spaces only"),
])
def test_unsupported_pairs_are_refused_naming_both(algorithm: str, env: str, space: str, why: str) -> None:
    workload = workload_from_dict({"id": f"x-{algorithm.lower()}", "env": env, "algorithm": algorithm,
                                   "env_steps": 1000}, "test")
    with pytest.raises(IncompatibleError, match=rf"'rl-games'.*'x-{algorithm.lower()}'.*{why}"):
        RlGamesAdapter().check_compatible(workload, space)


def test_rollout_workers_and_async_sampling_are_refused() -> None:
    for parallelism, why in (({"envs_per_worker": 2, "workers": 2}, "rollout workers"),
                             ({"envs_per_worker": 2, "mode": "async"}, "async sampling")):
        with pytest.raises(IncompatibleError, match=why):
            RlGamesAdapter().check_compatible(_ppo(parallelism=parallelism), "discrete")


def test_every_canonical_ppo_setting_is_reported_with_its_native_name() -> None:
    entries = _by_setting(_ppo())
    native = {name: entries[f"hyperparameters.{name}"].native_name for name in (
        "learning_rate", "gamma", "gae_lambda", "clip_range", "rollout_steps", "minibatch_size", "epochs",
        "entropy_coef", "value_coef", "max_grad_norm", "normalize_advantage")}
    assert native == {"learning_rate": "learning_rate", "gamma": "gamma", "gae_lambda": "tau", "clip_range": "e_clip",
                      "rollout_steps": "horizon_length", "minibatch_size": "minibatch_size", "epochs": "mini_epochs",
                      "entropy_coef": "entropy_coef", "value_coef": "critic_coef", "max_grad_norm": "grad_norm",
                      "normalize_advantage": "normalize_advantage"}
    # rl_games' loss is a + 0.5 * critic_coef * mse - entropy_coef * H: the canonical 0.5 needs critic_coef 1
    assert entries["hyperparameters.value_coef"].native_value == 1.0
    assert entries["hyperparameters.value_coef"].status is Fidelity.EXACT
    assert entries["hyperparameters.normalize_advantage"].status is Fidelity.APPROXIMATE
    assert "whole rollout" in entries["hyperparameters.normalize_advantage"].note
    assert entries["defaults.adam_eps"].native_value == 1e-8
    assert entries["defaults.truncation_bootstrap"].native_value is False
    assert entries["parallelism.envs_per_worker"].native_name == "num_actors"


def test_minibatches_are_unshuffled_slices_and_a_non_divisor_is_rounded() -> None:
    entry = _by_setting(_ppo())["hyperparameters.minibatch_size"]
    assert entry.status is Fidelity.APPROXIMATE and "not reshuffled" in entry.note
    whole = _by_setting(_ppo(hyperparameters={"rollout_steps": 64, "minibatch_size": 128, "epochs": 2}))
    assert whole["hyperparameters.minibatch_size"].status is Fidelity.EXACT  # one minibatch: no order to differ
    rounded = _by_setting(_ppo(hyperparameters={"rollout_steps": 64, "minibatch_size": 100, "epochs": 2}))
    assert rounded["hyperparameters.minibatch_size"].native_value == 128
    assert "rounded to 128" in rounded["hyperparameters.minibatch_size"].note


def test_ppo_configuration_pins_the_canonical_choices() -> None:
    params, _ = RlGamesAdapter().native_config(_ppo(parallelism={"envs_per_worker": 4}))
    config = params["config"]
    assert (config["clip_value"], config["truncate_grads"], config["normalize_input"], config["value_bootstrap"],
            config["lr_schedule"], config["num_actors"]) == (False, True, False, False, None, 4)
    assert (config["horizon_length"], config["minibatch_size"], config["mini_epochs"]) == (64, 64, 2)
    assert params["network"]["separate"] is True and params["network"]["mlp"]["units"] == [64, 64]


def test_sac_mapping_counts_vector_steps_and_declares_its_departures() -> None:
    entries = _by_setting(_sac())
    params, _ = RlGamesAdapter().native_config(_sac())
    config = params["config"]
    # learning_starts 200 over 2 envs: 100 random vector steps, updates from the 101st on
    assert config["num_warmup_steps"] == 101
    assert (config["num_updates_per_step"], config["policy_frequency"], config["critic_grad_clip"]) == (1, 1, 0.0)
    assert entries["hyperparameters.train_every"].status is Fidelity.EXACT
    assert entries["hyperparameters.entropy_coef"].status is Fidelity.APPROXIMATE  # max(alpha, 0.01) in the actor loss
    assert entries["network.hidden_sizes"].status is Fidelity.APPROXIMATE
    for setting in ("defaults.alpha_loss", "defaults.squash_correction_eps", "defaults.critic_action_space",
                    "defaults.actor_scale_mapping", "defaults.truncation_bootstrap"):
        assert entries[setting].status is Fidelity.APPROXIMATE, setting
    rate = _by_setting(_sac(hyperparameters={"train_every": 1, "learning_starts": 200}))
    assert rate["hyperparameters.gradient_steps"].status is Fidelity.APPROXIMATE


def test_declarations_import_no_rl_games_nor_torch() -> None:
    code = (
        "import sys\nfrom rlcompare_rl_games import RlGamesAdapter\n"
        "from rlcompare.spec.workload import workload_from_dict\n"
        "w = workload_from_dict({'id': 'x', 'env': 'CartPole-v1', 'algorithm': 'PPO', 'env_steps': 1000}, 't')\n"
        "a = RlGamesAdapter(); a.fidelity(w); a.capabilities(); a.budget_tolerance(w)\n"
        "print(sorted(m for m in ('rl_games', 'torch', 'tensorboardX') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- real runs, in rl_games' own environment ------------------------------------------------------------

TINY = {"PPO": _ppo(), "SAC": _sac()}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plugins = build_plugin_manager()
    # the adapter declares it cannot share the main environment: placing the plan builds (or reuses) its
    # own with uv, exactly as `rlcompare run` does
    plan = place_runs(plugins.adapters, build_plan(plugins.plan_catalogue(), list(TINY.values()), ["rl-games"]))
    assert {run.environment is not None for run in plan.runs} == {True}
    runs = Store(tmp_path_factory.mktemp("rl-games") / "runs.db")
    cwd_before = sorted(os.listdir(Path.cwd()))
    summary = Driver(runs, LocalBackend(Limits(900, None), BackendOptions(jobs=1))).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [o.record.traceback for o in summary.outcomes]
    assert sorted(os.listdir(Path.cwd())) == cwd_before, "rl_games wrote into the working directory"
    return runs


def _run(store: Store, algorithm: str) -> object:
    return store.runs_frame().set_index("run_id").loc[f"{TINY[algorithm].id}__rl-games__s0"]


@pytest.mark.framework
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("algorithm", list(TINY))
def test_run_is_valid_counted_and_stored(store: Store, algorithm: str) -> None:
    workload = TINY[algorithm]
    run = _run(store, algorithm)
    assert run["status"] == "ok", run["validity_json"]  # "invalid" when the verdict fails
    tolerance = RlGamesAdapter().budget_tolerance(workload)
    assert workload.env_steps <= run["env_steps"] <= workload.env_steps + tolerance.overshoot_steps
    # every step rl_games took is one the harness counted, and the other way round
    assert run["framework_env_steps"] == run["env_steps"]
    assert run["episodes"] > 0
    versions = json.loads(run["versions_json"])
    assert versions["rl-games"] == "1.6.5" and versions["torch"].startswith("2.13.0")
    curves = store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 3 and curve["env_steps"].iloc[0] == 0
    assert curve["env_steps"].is_monotonic_increasing
    assert all(math.isfinite(value) for value in curve["return_mean"])
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


@pytest.mark.framework
@pytest.mark.timeout(1800)
def test_ppo_native_config_and_schedule_are_rl_games_own(store: Store) -> None:
    run = _run(store, "PPO")
    native = json.loads(run["native_config_json"])
    assert native["algo"] == {"name": "a2c_discrete"} and native["model"] == {"name": "discrete_a2c"}
    assert native["config"]["horizon_length"] == 64 and native["config"]["num_actors"] == 2
    assert native["config"]["value_bootstrap"] is False and native["config"]["critic_coef"] == 1.0
    schedule = run["schedule_json"]
    schedule = json.loads(schedule) if isinstance(schedule, str) else schedule
    updates, steps = schedule["update"], schedule["gradient_step"]
    rollout = 64 * 2
    assert updates["count"] == 2048 // rollout
    assert updates["min_interval_env_steps"] == updates["max_interval_env_steps"] == rollout
    assert steps["count"] == updates["count"] * 2 * 2  # 2 epochs of 2 minibatches of 64


@pytest.mark.framework
@pytest.mark.timeout(1800)
def test_sac_updates_after_every_vector_step_past_the_warm_up(store: Store) -> None:
    run = _run(store, "SAC")
    native = json.loads(run["native_config_json"])
    assert native["algo"] == {"name": "sac"} and native["network"]["log_std_bounds"] == [-5.0, 2.0]
    schedule = run["schedule_json"]
    schedule = json.loads(schedule) if isinstance(schedule, str) else schedule
    updates = schedule["update"]
    # 100 random vector steps of 2 envs, then one update after each of the remaining 200 vector steps
    assert updates["count"] == (600 - 200) // 2
    assert updates["first_env_step"] == 202
    assert schedule["gradient_step"]["count"] == schedule["target_sync"]["count"] == updates["count"]
