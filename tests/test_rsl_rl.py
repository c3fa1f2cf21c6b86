"""The RSL-RL adapter: its declarations, its VecEnv over the harness's environments, and one real tiny
PPO run on Pendulum-v1 through the runner (RSL-RL acts in continuous action spaces only)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rlcompare_rsl_rl import PENDULUM_PPO, PPO_DEPARTURES, RslRlAdapter

from rlcompare.adapter import Fidelity
from rlcompare.errors import IncompatibleError
from rlcompare.execution.runner import LocalRunner
from rlcompare.parity.schedules import canonical_schedule
from rlcompare.plan.matrix import build_plan
from rlcompare.plugins.manager import BUILTIN_PLUGINS, Plugins, build_plugin_manager
from rlcompare.spec.workload import Workload, workload_from_dict
from rlcompare.store.sqlite_store import Store

ROOT = Path(__file__).resolve().parents[1]

#: One tiny run: 2 envs x 128 steps per rollout (256 env steps), 6 rollouts; 256 / 48 is not whole,
#: so the minibatch count is rounded (5 of 51, one transition left out) and marked.
TINY = {"id": "tiny-rsl-rl", "env": "Pendulum-v1", "algorithm": "PPO", "env_steps": 1_500, "seeds": 1,
        "parallelism": {"envs_per_worker": 2},
        "network": {"hidden_sizes": [32, 32], "activation": "tanh"},
        "hyperparameters": {"rollout_steps": 128, "minibatch_size": 48, "epochs": 2},
        "evaluation": {"interval_steps": 512, "episodes": 2}}


def _plugins() -> Plugins:
    """The built-in plugins and this adapter's (a built-in once listed in BUILTIN_PLUGINS; an entry point until then)."""
    return build_plugin_manager((*BUILTIN_PLUGINS, "rlcompare_rsl_rl"), autoload=False)


def _workload(**changes: object) -> Workload:
    return workload_from_dict({**TINY, **changes}, "test")


def _by_setting(workload: Workload) -> dict[str, object]:
    return {entry.setting: entry for entry in RslRlAdapter().fidelity(workload)}


# -- declarations ---------------------------------------------------------------------------------


def test_capabilities_offer_ppo_on_continuous_actions_in_process() -> None:
    capabilities = RslRlAdapter().capabilities()
    assert capabilities.algorithms == frozenset({"PPO"})
    assert capabilities.action_spaces == frozenset({"continuous"})
    assert capabilities.vectorized_envs and not capabilities.rollout_workers


def test_discrete_actions_and_rollout_workers_are_refused_naming_both() -> None:
    cartpole = workload_from_dict({**TINY, "id": "x-cartpole", "env": "CartPole-v1"}, "test")
    with pytest.raises(IncompatibleError, match=r"'rsl-rl'.*'x-cartpole'.*continuous.*discrete"):
        RslRlAdapter().check_compatible(cartpole, "discrete")
    workers = _workload(id="x-workers", parallelism={"envs_per_worker": 2, "workers": 2})
    with pytest.raises(IncompatibleError, match=r"'rsl-rl'.*rollout workers"):
        RslRlAdapter().check_compatible(workers, "continuous")


def test_every_canonical_ppo_setting_is_mapped_with_its_native_name() -> None:
    entries = _by_setting(_workload())
    native = {name: entries[f"hyperparameters.{name}"].native_name for name in
              ("learning_rate", "gamma", "gae_lambda", "clip_range", "rollout_steps", "minibatch_size", "epochs",
               "entropy_coef", "value_coef", "max_grad_norm")}
    assert native == {"learning_rate": "learning_rate", "gamma": "gamma", "gae_lambda": "lam",
                      "clip_range": "clip_param", "rollout_steps": "num_steps_per_env",
                      "minibatch_size": "num_mini_batches", "epochs": "num_learning_epochs",
                      "entropy_coef": "entropy_coef", "value_coef": "value_loss_coef",
                      "max_grad_norm": "max_grad_norm"}
    statuses = {setting: entry.status for setting, entry in entries.items()}
    assert statuses["hyperparameters.max_grad_norm"] is Fidelity.APPROXIMATE  # clipped per network
    assert statuses["hyperparameters.normalize_advantage"] is Fidelity.EXACT
    assert statuses["network.hidden_sizes"] is Fidelity.EXACT
    # only canonical settings and the variants' settings of the PPO reference
    assert all(setting.startswith(("hyperparameters.", "network.", "parallelism.", "defaults."))
               for setting in entries)
    departures = {entry.setting: entry.native_value for entry in PPO_DEPARTURES}
    assert departures == {"defaults.adam_eps": 1e-8, "defaults.grad_clip_scope": "per network",
                          "defaults.truncation_bootstrap": False}


def test_minibatch_size_becomes_a_count_rounded_and_marked() -> None:
    entries = _by_setting(_workload())
    config, _ = RslRlAdapter().native_config(_workload())
    minibatch = entries["hyperparameters.minibatch_size"]
    assert config["algorithm"]["num_mini_batches"] == 5 and minibatch.native_value == 5
    assert minibatch.status is Fidelity.APPROXIMATE and "the last 1 never" in minibatch.note
    # the same permutation every epoch: approximate once there are several minibatches and epochs
    assert entries["hyperparameters.epochs"].status is Fidelity.APPROXIMATE
    whole = _workload(hyperparameters={"rollout_steps": 128, "minibatch_size": 64, "epochs": 1})
    whole_entries = _by_setting(whole)
    assert whole_entries["hyperparameters.minibatch_size"].status is Fidelity.EXACT
    assert whole_entries["hyperparameters.epochs"].status is Fidelity.EXACT
    assert RslRlAdapter().native_config(whole)[0]["algorithm"]["num_mini_batches"] == 4


def test_fixed_settings_turn_rsl_rl_defaults_into_canonical_ppo() -> None:
    config, _ = RslRlAdapter().native_config(_workload())
    algorithm = config["algorithm"]
    assert (algorithm["schedule"], algorithm["use_clipped_value_loss"],
            algorithm["normalize_advantage_per_mini_batch"]) == ("fixed", False, True)
    assert config["actor"]["hidden_dims"] == config["critic"]["hidden_dims"] == [32, 32]
    assert config["actor"]["distribution_cfg"] == {"class_name": "GaussianDistribution", "init_std": 1.0,
                                                   "std_type": "log"}
    assert config["actor"]["obs_normalization"] is config["critic"]["obs_normalization"] is False


def test_unsupported_values_are_marked_with_the_reason() -> None:
    entries = _by_setting(_workload(hyperparameters={"normalize_advantage": False},
                                    network={"hidden_sizes": [], "activation": "relu"}))
    assert entries["hyperparameters.normalize_advantage"].status is Fidelity.UNSUPPORTED
    assert "always normalizes" in entries["hyperparameters.normalize_advantage"].note
    assert entries["network.hidden_sizes"].status is Fidelity.UNSUPPORTED
    assert entries["network.hidden_sizes"].native_value == {"actor": [256, 256, 256], "critic": [256, 256, 256]}


def test_the_plugin_registers_a_pendulum_ppo_workload() -> None:
    plugins = _plugins()
    assert plugins.workloads[PENDULUM_PPO["id"]].env == "Pendulum-v1"
    assert plugins.adapter("rsl-rl") is not None


def test_declarations_import_neither_rsl_rl_nor_torch() -> None:
    code = (
        "import sys\nfrom rlcompare_rsl_rl import RslRlAdapter\n"
        "from rlcompare.spec.workload import workload_from_dict\n"
        "w = workload_from_dict({'id': 'x', 'env': 'Pendulum-v1', 'algorithm': 'PPO', 'env_steps': 1000}, 't')\n"
        "a = RslRlAdapter(); a.fidelity(w); a.capabilities(); a.budget_tolerance(w)\n"
        "print(sorted(m for m in ('rsl_rl', 'torch', 'tensordict') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- the VecEnv over the harness's environments ---------------------------------------------------


@pytest.mark.framework
def test_vec_env_resets_ended_episodes_and_reports_dones_and_clipped_actions() -> None:
    import functools

    import torch
    from rlcompare_rsl_rl.run import HarnessVecEnv

    from rlcompare.adapter import make_env

    factory = functools.partial(make_env, "Pendulum-v1", {"max_episode_steps": 3})
    env = HarnessVecEnv([factory, factory], seed=7)
    try:
        first = env.get_observations()["policy"]
        assert first.shape == (2, 3) and first.dtype == torch.float32
        dones = [env.step(torch.full((2, 1), 50.0))[2] for _ in range(3)]
        assert [d.tolist() for d in dones] == [[0, 0], [0, 0], [1, 1]]  # truncated at the step limit
        assert env.episode_length_buf.tolist() == [0, 0]
        _, rewards, _, extras = env.step(torch.zeros(2, 1))
        assert extras == {} and rewards.shape == (2,)
        # an action of 50 was clipped to the bound 2: Pendulum's reward (-0.001 u^2 term) stays above -17
        assert all(-17.0 < reward <= 0.0 for reward in rewards.tolist())
    finally:
        env.close()


# -- one real tiny run through the runner ---------------------------------------------------------


@pytest.fixture(scope="module")
def rsl_rl_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    plan = build_plan(_plugins().plan_catalogue(), [_workload()], ["rsl-rl"])
    store = Store(tmp_path_factory.mktemp("rsl-rl") / "runs.db")
    cwd_before = sorted(os.listdir(Path.cwd()))
    summary = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"], [o.record.traceback for o in summary.outcomes]
    assert sorted(os.listdir(Path.cwd())) == cwd_before, "RSL-RL wrote into the working directory"
    return store


@pytest.mark.framework
def test_rsl_rl_run_is_valid_counted_and_stored(rsl_rl_store: Store) -> None:
    workload = _workload()
    run = rsl_rl_store.runs_frame().set_index("run_id").loc["tiny-rsl-rl__rsl-rl__s0"]
    assert run["status"] == "ok", run["validity_json"]
    # 6 rollouts of 2 x 128 steps: the first at or past the budget of 1,500
    assert run["env_steps"] == run["framework_env_steps"] == 1_536
    assert run["torch_threads"] == 1
    versions = json.loads(run["versions_json"])
    assert versions["rsl-rl-lib"] == "5.5.1" and versions["torch"].startswith("2.13.0")
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert set(fidelity) >= {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields
                             if key != "algorithm"}
    native = json.loads(run["native_config_json"])
    assert native["algorithm"]["num_mini_batches"] == 5 and native["num_steps_per_env"] == 128
    assert native["learning_iterations"] == 6 and native["env"]["num_envs"] == 2
    curves = rsl_rl_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert list(curve["env_steps"]) == [0, 512, 1024, 1536]  # the grid's update boundaries, then the end
    assert all(math.isfinite(value) for value in curve["return_mean"])
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


@pytest.mark.framework
def test_rsl_rl_traces_its_updates_and_optimizer_steps(rsl_rl_store: Store) -> None:
    run = rsl_rl_store.runs_frame().set_index("run_id").loc["tiny-rsl-rl__rsl-rl__s0"]
    traced = json.loads(run["schedule_json"])
    canonical = canonical_schedule(_workload().to_dict())
    assert traced["update"]["count"] == canonical["updates"] == 6
    assert traced["update"]["first_env_step"] == canonical["first_gradient_step"] == 256
    # 2 epochs x 5 minibatches per update (the canonical 2 x ceil(256 / 48) = 12: the rounded count)
    assert traced["gradient_step"]["count"] == 6 * 2 * 5
