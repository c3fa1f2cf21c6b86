"""The native arm (``settings = "native"``): each adapter's own recommended settings, resolved when the
matrix is planned; SB3's from the RL Baselines3 Zoo's YAML, read as files; refusals that say why;
digests and staleness per adapter; and one real SB3 run on the zoo's CartPole entry."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rlcompare.errors import IncompatibleError
from rlcompare.execution.runner import LocalRunner
from rlcompare.harness.contract import Recommendation
from rlcompare.plan.matrix import build_plan, native_workload
from rlcompare.plugins.manager import build_plugin_manager
from rlcompare.scoring.engine import split_stale_runs
from rlcompare.spec.workload import workload_from_dict
from rlcompare.store.sqlite_store import Store
from tests.conftest import run_cli


def _workload(env: str = "CartPole-v1", algorithm: str = "PPO", **extra: object) -> object:
    return workload_from_dict({"id": "native", "env": env, "algorithm": algorithm, "env_steps": 2048, "seeds": 1,
                               "settings": "native", "evaluation": {"interval_steps": 1024, "episodes": 2},
                               **extra}, "test")


def _zoo(algorithm: str) -> dict:
    spec = importlib.util.find_spec("rl_zoo3")
    assert spec is not None and spec.submodule_search_locations, "rl-zoo3 is installed by make install"
    folder = Path(next(iter(spec.submodule_search_locations))) / "hyperparams"
    return yaml.safe_load((folder / f"{algorithm.lower()}.yml").read_text(encoding="utf-8"))


# -- SB3's recommendations: the zoo's entries ----------------------------------------------------------


def test_sb3_recommends_the_zoo_entry_in_canonical_terms_with_its_schedules_native() -> None:
    from rlcompare_sb3 import StableBaselines3Adapter

    entry = _zoo("PPO")["CartPole-v1"]
    recommended = StableBaselines3Adapter().recommended_settings("CartPole-v1", "PPO")
    assert recommended is not None and "rl_zoo3/hyperparams/ppo.yml, entry CartPole-v1" in recommended.source
    hp = recommended.hyperparameters
    assert (hp["rollout_steps"], hp["minibatch_size"], hp["epochs"]) == (entry["n_steps"], entry["batch_size"],
                                                                        entry["n_epochs"])
    assert (hp["gamma"], hp["gae_lambda"], hp["entropy_coef"]) == (entry["gamma"], entry["gae_lambda"], entry["ent_coef"])
    assert entry["learning_rate"] == f"lin_{hp['learning_rate']}" and entry["clip_range"] == f"lin_{hp['clip_range']}"
    assert recommended.native == {"learning_rate_schedule": "linear", "clip_range_schedule": "linear"}
    assert recommended.parallelism == {"envs_per_worker": entry["n_envs"], "workers": 1}
    assert recommended.network == {"hidden_sizes": [64, 64], "activation": "tanh"}  # SB3's MlpPolicy default


def test_what_the_zoo_leaves_out_takes_sb3s_default_not_the_canonical_one() -> None:
    from rlcompare_sb3 import StableBaselines3Adapter

    adapter = StableBaselines3Adapter()
    a2c = adapter.recommended_settings("CartPole-v1", "A2C")  # the zoo sets n_envs and ent_coef only
    assert a2c is not None and a2c.hyperparameters == {"optimizer": "rmsprop", "entropy_coef": 0.0}
    dqn = adapter.recommended_settings("CartPole-v1", "DQN")
    assert dqn is not None and dqn.network == {"hidden_sizes": [256, 256], "activation": "relu"}  # its policy_kwargs
    assert dqn.hyperparameters["train_every"] == 256 and dqn.hyperparameters["minibatch_size"] == 64
    acrobot = adapter.recommended_settings("Acrobot-v1", "DQN")  # gradient_steps -1: one per env step
    assert acrobot is not None and acrobot.hyperparameters["gradient_steps"] == acrobot.hyperparameters["train_every"]
    td3 = adapter.recommended_settings("Pendulum-v1", "TD3")
    assert td3 is not None and td3.hyperparameters["exploration_noise"] == 0.1 and td3.network["hidden_sizes"] == [400, 300]
    assert adapter.recommended_settings("CartPole-v0", "PPO") is None  # no entry: the pair is refused


def test_a_zoo_entry_with_settings_the_adapter_cannot_apply_is_refused_naming_them() -> None:
    from rlcompare_sb3 import StableBaselines3Adapter

    with pytest.raises(IncompatibleError, match="use_sde"):
        StableBaselines3Adapter().recommended_settings("Pendulum-v1", "PPO")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_policy_kwargs_are_read_never_evaluated(text: str) -> None:
    from rlcompare_sb3.zoo import _policy_kwargs

    try:
        value = _policy_kwargs(text)
    except (IncompatibleError, ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return
    assert isinstance(value, dict)


def test_a_hostile_policy_kwargs_string_is_not_run(tmp_path: Path) -> None:
    from rlcompare_sb3.zoo import _policy_kwargs

    marker = tmp_path / "ran"
    with pytest.raises((ValueError, IncompatibleError)):
        _policy_kwargs(f"dict(net_arch=__import__('pathlib').Path({str(marker)!r}).touch())")
    assert not marker.exists()


# -- planning --------------------------------------------------------------------------------------


def test_the_native_arm_resolves_each_adapters_settings_and_refuses_those_without() -> None:
    catalogue = build_plugin_manager(autoload=False).plan_catalogue()
    plan = build_plan(catalogue, [_workload()], ["sb3"])
    [run] = plan.runs
    assert run.workload.settings == "native" and run.workload.hyperparameters.rollout_steps == 32
    assert run.workload.native["settings"] == {"learning_rate_schedule": "linear", "clip_range_schedule": "linear"}
    fidelity = {item["setting"]: item for item in run.fidelity}
    assert fidelity["native.learning_rate_schedule"]["status"] == "exact"
    assert fidelity["hyperparameters.learning_rate"]["status"] == "approximate"  # canonically constant
    everyone = build_plan(catalogue, [_workload()])
    refused = {pair.adapter_id: pair.reason for pair in everyone.refused}
    assert "declares no recommended settings for PPO on CartPole-v1" in refused["skrl"]
    assert {r.adapter_id for r in everyone.runs} == {"sb3", "tianshou", "rllib"}  # zoo, test script, tuned example
    assert everyone.refused[0].workload.settings == "native"  # the declared workload, not a resolution
    with pytest.raises(IncompatibleError, match="in the native arm"):
        build_plan(catalogue, [_workload()], ["skrl"])


def test_recommended_settings_that_do_not_validate_refuse_the_pair_with_the_field() -> None:
    from rlcompare_sb3 import StableBaselines3Adapter

    class Careless(StableBaselines3Adapter):
        id = "careless"

        def recommended_settings(self, env: str, algorithm: str) -> Recommendation | None:
            return Recommendation(source="a typo", hyperparameters={"learning_rate": -1.0})

    class Broken(StableBaselines3Adapter):
        id = "broken"

        def recommended_settings(self, env: str, algorithm: str) -> Recommendation | None:
            raise KeyError("CartPole-v1")

    with pytest.raises(IncompatibleError, match="do not validate.*learning_rate"):
        native_workload(Careless(), _workload())
    with pytest.raises(IncompatibleError, match="recommended_settings\\(\\) failed \\(KeyError"):
        native_workload(Broken(), _workload())


def test_a_canonical_workload_digests_as_before_and_a_native_one_apart() -> None:
    canonical = workload_from_dict({"id": "w", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 2048}, "test")
    assert "settings" not in canonical.to_dict() and "native" not in canonical.to_dict()
    explicit = workload_from_dict({**canonical.to_dict(), "settings": "canonical"}, "test")
    assert explicit.digest == canonical.digest
    native = workload_from_dict({**canonical.to_dict(), "settings": "native"}, "test")
    assert native.digest != canonical.digest


def test_a_canonical_workload_cannot_smuggle_native_settings(tmp_path: Path) -> None:
    (tmp_path / "w.toml").write_text('id = "w"\nenv = "CartPole-v1"\nalgorithm = "PPO"\nenv_steps = 2048\n'
                                     '[native.settings]\nlearning_rate_schedule = "linear"\n', encoding="utf-8")
    done = run_cli(["plan", "--workload", "w.toml", "--adapters", "sb3"], cwd=tmp_path)
    assert done.returncode == 2
    [line] = [line for line in done.stderr.splitlines() if line.startswith("rlcompare: error:")]
    assert "native" in line and "canonical workload has none" in line


def test_native_runs_of_two_adapters_are_both_current_while_a_changed_canonical_spec_is_stale() -> None:
    native = json.dumps({"settings": "native"})
    runs = pd.DataFrame({
        "run_id": ["n__a__s0", "n__b__s0", "c__a__s0", "c__b__s0"],
        "workload_id": ["n", "n", "c", "c"], "adapter": ["a", "b", "a", "b"],
        "workload_digest": ["da", "db", "old", "new"], "finished_at": [1.0, 2.0, 1.0, 2.0],
        "workload_json": [native, native, "{}", "{}"],
    })
    current, stale = split_stale_runs(runs)
    assert sorted(current["run_id"]) == ["c__b__s0", "n__a__s0", "n__b__s0"]
    assert list(stale["run_id"]) == ["c__a__s0"]


def test_a_refusal_is_history_once_the_pair_has_run_since() -> None:
    runs = pd.DataFrame({
        "run_id": ["w__a__s-1", "w__a__s0", "w__b__s-1", "v__a__s0", "v__a__s-1"],
        "workload_id": ["w", "w", "w", "v", "v"], "adapter": ["a", "a", "b", "a", "a"],
        "workload_digest": ["d", "d", "d", "e", "e"], "finished_at": [1.0, 2.0, 1.0, 1.0, 2.0],
        "status": ["unsupported", "ok", "unsupported", "ok", "unsupported"], "seed": [-1, 0, -1, 0, -1],
    })
    current, stale = split_stale_runs(runs)
    assert stale.empty and "w__a__s-1" not in set(current["run_id"])  # a's refusal of w came before its run
    # b never ran w: its refusal stands; a refused v after running it: the newer refusal stands too
    assert sorted(current["run_id"]) == ["v__a__s-1", "v__a__s0", "w__a__s0", "w__b__s-1"]


def test_a_native_workload_nobody_can_run_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "w.toml").write_text('id = "pend"\nenv = "Pendulum-v1"\nalgorithm = "PPO"\nenv_steps = 2048\n'
                                     'settings = "native"\n', encoding="utf-8")
    done = run_cli(["run", "--workload", "w.toml", "--adapters", "sb3", "--store", "s.db"], cwd=tmp_path)
    assert done.returncode == 2
    [line] = [line for line in done.stderr.splitlines() if line.startswith("rlcompare: error:")]
    assert "in the native arm" in line and "use_sde" in line
    assert not (tmp_path / "s.db").exists()


# -- one real run on the zoo's entry --------------------------------------------------------------


@pytest.mark.framework
def test_sb3_trains_the_zoo_entry_with_its_linear_schedules(tmp_path: Path) -> None:
    catalogue = build_plugin_manager(autoload=False).plan_catalogue()
    plan = build_plan(catalogue, [_workload()], ["sb3"])
    store = Store(tmp_path / "runs.db")
    [outcome] = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan).outcomes
    assert outcome.status == "ok", outcome.record.get("traceback")
    run = store.runs_frame().iloc[0]
    assert run["env_steps"] == 2048 == run["framework_env_steps"]  # 8 envs x 32 steps x 8 rollouts
    native = json.loads(run["native_config_json"])
    assert native["n_steps"] == 32 and native["batch_size"] == 256 and native["n_epochs"] == 20
    # the schedules reached SB3 as callables, rl_zoo3's linear_schedule
    assert native["learning_rate"] == "LinearSchedule(initial=0.001)"
    assert native["clip_range"] == "LinearSchedule(initial=0.2)"
    recorded = json.loads(run["workload_json"])
    assert recorded["settings"] == "native" and "rl-zoo3" in recorded["native"]["source"]
    assert dataclasses.asdict(Recommendation("x")) == {"source": "x", "hyperparameters": {}, "network": None,
                                                       "parallelism": None, "native": {}}


# -- Tianshou's recommendations: its own test scripts ---------------------------------------------


def _tianshou_fidelity(env: str, algorithm: str) -> dict[str, dict]:
    catalogue = build_plugin_manager(autoload=False).plan_catalogue()
    [run] = build_plan(catalogue, [_workload(env, algorithm)], ["tianshou"]).runs
    return {item["setting"]: item for item in run.fidelity}


@pytest.mark.parametrize(("env", "algorithm", "native"), [
    ("Pendulum-v1", "TD3", {"n_step_return_horizon": 3, "actor_learning_rate": 1e-4, "actor_max_action": "env"}),
    ("Pendulum-v1", "DDPG", {"n_step_return_horizon": 3, "actor_learning_rate": 1e-4, "actor_max_action": "env"}),
    ("Pendulum-v1", "SAC", {"n_step_return_horizon": 3, "alpha_learning_rate": 3e-4, "conditioned_sigma": False}),
    ("CartPole-v0", "DQN", {"n_step_return_horizon": 3, "huber_loss_delta": None, "max_grad_norm": None,
                            "prefill_with_policy": True,
                            "exploration_schedule": [[0, 0.1], [10_000, 0.1], [50_000, 0.01]]}),
    ("CartPole-v1", "PPO", {"shared_network": True, "orthogonal_init": True, "optimizer_eps": 1e-8}),
])
def test_tianshou_recommends_its_test_script_and_applies_every_native_setting(env, algorithm, native) -> None:
    from rlcompare_tianshou import TianshouAdapter

    recommended = TianshouAdapter().recommended_settings(env, algorithm)
    assert recommended is not None and recommended.native == native
    assert "thu-ml/tianshou@1d579674 test/" in recommended.source
    assert ("the script trains CartPole-v1" in recommended.source) == (env == "CartPole-v0")
    fidelity = _tianshou_fidelity(env, algorithm)
    for key in native:  # every native setting reached the config, each with an exact entry naming where
        assert fidelity[f"native.{key}"]["status"] == "exact", fidelity[f"native.{key}"]
        assert fidelity[f"native.{key}"]["native_name"]
    assert "1d579674" in fidelity["native.source"]["value"]


def test_a_canonical_setting_a_native_one_replaces_is_marked_approximate() -> None:
    dqn = _tianshou_fidelity("CartPole-v0", "DQN")
    for name in ("exploration_initial_eps", "exploration_final_eps", "exploration_fraction", "learning_starts"):
        assert dqn[f"hyperparameters.{name}"]["status"] == "approximate"
        assert "in the native arm with native." in dqn[f"hyperparameters.{name}"]["note"]
    assert dqn["hyperparameters.gamma"]["status"] == "exact"
    td3 = _tianshou_fidelity("Pendulum-v1", "TD3")
    assert td3["hyperparameters.learning_rate"]["note"].endswith("native.actor_learning_rate")


def test_a_native_setting_the_family_does_not_take_is_reported_unsupported() -> None:
    from rlcompare_tianshou import TianshouAdapter

    workload = workload_from_dict({"id": "w", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 2048,
                                   "settings": "native", "native": {"source": "a test",
                                                                     "settings": {"actor_learning_rate": 1e-4}}}, "t")
    entries = {item.setting: item for item in TianshouAdapter().fidelity(workload)}
    assert entries["native.actor_learning_rate"].status.value == "unsupported"


def test_tianshou_refuses_the_scripts_it_cannot_run_naming_what_they_do() -> None:
    from rlcompare_tianshou import TianshouAdapter

    adapter = TianshouAdapter()
    with pytest.raises(IncompatibleError, match="test_reinforce.py.*collection_step_num_episodes=8"):
        adapter.recommended_settings("CartPole-v0", "PG")
    with pytest.raises(IncompatibleError, match="test_a2c_with_il.py.*collection_step_num_episodes=16"):
        adapter.recommended_settings("CartPole-v1", "A2C")
    assert adapter.recommended_settings("Acrobot-v1", "DQN") is None  # no script for that environment
    assert adapter.recommended_settings("Pendulum-v1", "PPO") is None  # the adapter's PPO is discrete only


def test_the_scripts_epsilon_schedule_is_piecewise_linear_over_env_steps() -> None:
    from rlcompare_tianshou import _piecewise_epsilon

    epsilon = _piecewise_epsilon([[0, 0.1], [10_000, 0.1], [50_000, 0.01]])
    assert [round(epsilon(steps), 6) for steps in (0, 9_999, 10_000, 30_000, 50_000, 90_000)] == \
        [0.1, 0.1, 0.1, 0.055, 0.01, 0.01]


@pytest.mark.framework
def test_tianshou_trains_its_dqn_script_with_the_scripts_warm_up_and_epsilon(tmp_path: Path) -> None:
    """The script's DQN: 640 warm-up steps by the exploring policy (not uniform random), epsilon 0.1
    held (the schedule's first phase), 3-step targets, MSE loss, no clipping, four layers of 128."""
    catalogue = build_plugin_manager(autoload=False).plan_catalogue()
    workload = _workload("CartPole-v0", "DQN", env_steps=1_500, evaluation={"interval_steps": 750, "episodes": 2})
    plan = build_plan(catalogue, [workload], ["tianshou"])
    store = Store(tmp_path / "runs.db")
    [outcome] = LocalRunner(store, jobs=1, timeout_seconds=300).run(plan).outcomes
    assert outcome.status == "ok", outcome.record.get("traceback")
    run = store.runs_frame().iloc[0]
    native = json.loads(run["native_config_json"])
    assert native["prefill"] == {"n_step": 640, "with_policy": True}
    assert native["algorithm"]["n_step_return_horizon"] == 3 and native["algorithm"]["huber_loss_delta"] is None
    assert native["algorithm"]["max_grad_norm"] is None and native["network"]["hidden_sizes"] == [128] * 4
    exploration = json.loads(run["schedule_json"])["exploration"]["samples"]
    assert exploration and all(value == pytest.approx(0.1) for _, value in exploration)  # canonically 1.0 first


# -- RLlib's recommendations: its tuned examples ---------------------------------------------------------


def _rllib_native(env: str, algorithm: str) -> tuple[object, dict[str, dict]]:
    catalogue = build_plugin_manager(autoload=False).plan_catalogue()
    budget = {"env_steps": 30_000} if algorithm == "SAC" else {}
    [run] = build_plan(catalogue, [_workload(env, algorithm, **budget)], ["rllib"]).runs
    return run.workload, {item["setting"]: item for item in run.fidelity}


@pytest.mark.parametrize(("env", "algorithm", "commit"), [
    ("CartPole-v0", "PPO", "4d543200"), ("CartPole-v1", "DQN", "7156122e"), ("Pendulum-v1", "SAC", "06d824cd"),
])
def test_rllib_recommends_its_tuned_example_and_reports_every_native_setting(env, algorithm, commit) -> None:
    from rlcompare_rllib.examples import EXAMPLES

    workload, fidelity = _rllib_native(env, algorithm)
    native = EXAMPLES[algorithm][-1]
    assert workload.native["settings"] == native
    assert f"ray-project/ray@{commit}" in fidelity["native.source"]["value"]
    assert ("the script trains CartPole-v1" in fidelity["native.source"]["value"]) == (env == "CartPole-v0")
    for key in native:
        assert fidelity[f"native.{key}"]["status"] == "exact", fidelity[f"native.{key}"]
        assert fidelity[f"native.{key}"]["native_name"]


def test_rllib_builds_its_tuned_examples_into_the_algorithm_config() -> None:
    """Each native setting reaches RLlib's own AlgorithmConfig (built, not run: no Ray is started)."""
    from rlcompare_rllib import RLlibAdapter

    adapter = RLlibAdapter()
    ppo, ppo_fidelity = _rllib_native("CartPole-v0", "PPO")
    config = adapter.build_config(ppo, 0, "CartPole-v0")
    assert (config.lr, config.num_epochs, config.vf_loss_coeff, config.minibatch_size) == (3e-4, 6, 0.01, 128)
    assert (config.lambda_, config.clip_param, config.vf_clip_param) == (1.0, 0.3, 10.0)
    assert (config.use_kl_loss, config.kl_coeff, config.kl_target, config.grad_clip) == (True, 0.2, 0.01, None)
    assert (config.num_env_runners, config.num_envs_per_env_runner, config.train_batch_size_per_learner) == \
        (2, 1, 4_000)
    model = config.model_config
    assert (model["fcnet_hiddens"], model["fcnet_activation"], model["vf_share_layers"]) == ([32], "linear", True)
    assert ppo_fidelity["network.activation"]["status"] == "approximate"  # the example's linear layers
    assert ppo_fidelity["hyperparameters.max_grad_norm"]["status"] == "approximate"

    dqn, dqn_fidelity = _rllib_native("CartPole-v1", "DQN")
    config = adapter.build_config(dqn, 0, "CartPole-v1")
    assert config.n_step == (2, 5) and config.dueling and config.double_q  # a tuple: RLlib draws n per row
    assert config.replay_buffer_config["type"] == "PrioritizedEpisodeReplayBuffer"
    assert (config.replay_buffer_config["alpha"], config.replay_buffer_config["beta"]) == (0.6, 0.4)
    assert [list(point) for point in config.epsilon] == [[0, 1.0], [10_000, 0.02]]
    assert (config.get_rollout_fragment_length(), config.target_network_update_freq, config.grad_clip) == (5, 500, 40.0)
    assert config.rollout_fragment_length == "auto"  # n_step's upper end: DQNConfig.validate fails on a range and 5
    assert config.model_config["head_fcnet_hiddens"] == [256]
    assert config.model_config["head_fcnet_bias_initializer"] == "zeros_"
    assert dqn_fidelity["hyperparameters.exploration_fraction"]["status"] == "approximate"

    sac, sac_fidelity = _rllib_native("Pendulum-v1", "SAC")
    config = adapter.build_config(sac, 0, "Pendulum-v1")
    assert (config.actor_lr, config.critic_lr, config.alpha_lr, config.initial_alpha) == (2e-4, 8e-4, 9e-4, 1.001)
    assert config.replay_buffer_config["type"] == "PrioritizedEpisodeReplayBuffer" and config.n_step == (2, 5)
    assert config.model_config["fusionnet_hiddens"] == [256, 256, 256]
    assert config.model_config["head_fcnet_kernel_initializer_kwargs"] == {"gain": 0.01}
    assert sac_fidelity["hyperparameters.learning_rate"]["note"].endswith("native.alpha_learning_rate")


def test_rllib_refuses_its_pendulum_ppo_script_naming_what_it_does() -> None:
    from rlcompare_rllib import RLlibAdapter

    with pytest.raises(IncompatibleError, match="pendulum_ppo.py.*not a whole rollout per env"):
        RLlibAdapter().recommended_settings("Pendulum-v1", "PPO")
    assert RLlibAdapter().recommended_settings("Acrobot-v1", "DQN") is None
