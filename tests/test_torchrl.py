"""The TorchRL adapter trained for real through the runner, with tiny budgets."""

from __future__ import annotations

import json
import math
import subprocess
import sys

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
    # two worker processes (MultiSyncCollector), each with its own env: the harness must count their steps
    "PPO-WORKERS": {"algorithm": "PPO", "env": "CartPole-v1", "env_steps": 512, "parallelism": {"workers": 2},
                    "hyperparameters": {"rollout_steps": 64, "minibatch_size": 32, "epochs": 2}},
    # asynchronous collection (MultiAsyncCollector): workers keep stepping while the learner trains
    "DQN-ASYNC": {"algorithm": "DQN", "env": "CartPole-v1", "env_steps": 600,
                  "parallelism": {"workers": 2, "mode": "async"},
                  "hyperparameters": {"learning_starts": 100, "buffer_size": 1000}},
    # TD3 collected asynchronously: the actor and its exploration module run in two worker processes
    "TD3-ASYNC": {"algorithm": "TD3", "env": "Pendulum-v1", "env_steps": 300, "parallelism": {"workers": 2, "mode": "async"},
                  "hyperparameters": {"learning_starts": 100, "minibatch_size": 32, "buffer_size": 1000}},
}


def _workload(name: str, spec: dict) -> Workload:
    return workload_from_dict({"id": f"tiny-{name.lower()}", "algorithm": name, "seeds": 1,
                               "evaluation": {"interval_steps": 200, "episodes": 2}, **spec}, "test")


@pytest.fixture(scope="module")
def torchrl_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    workloads = [_workload(name, spec) for name, spec in TINY.items()]
    plan = build_plan(build_plugin_manager(autoload=False).plan_catalogue(), workloads, ["torchrl"])
    store = Store(tmp_path_factory.mktemp("torchrl") / "runs.db")
    summary = LocalRunner(store, jobs=2, timeout_seconds=300).run(plan)
    assert [o.status for o in summary.outcomes] == ["ok"] * len(TINY), [
        o.record.traceback for o in summary.outcomes]
    return store


@pytest.mark.parametrize("name", list(TINY))
def test_torchrl_run_is_valid_and_stored_with_curve_versions_and_fidelity(torchrl_store: Store, name: str) -> None:
    workload = _workload(name, TINY[name])
    runs = torchrl_store.runs_frame().set_index("run_id")
    run = runs.loc[f"tiny-{name.lower()}__torchrl__s0"]
    assert run["status"] == "ok"
    # the budget is respected within one rollout (two with asynchronous collection)...
    assert workload.env_steps <= run["env_steps"] <= workload.env_steps + workload.step_count_tolerance
    # ...and TorchRL's own frame count agrees with the harness's
    assert abs(run["framework_env_steps"] - run["env_steps"]) <= workload.step_count_tolerance
    assert run["torch_threads"] == 1
    versions = json.loads(run["versions_json"])
    assert versions["torchrl"].startswith("0.") and versions["torch"].startswith("2.13.0") and versions["tensordict"]
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert set(fidelity) >= {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields
                             if key != "algorithm"}
    assert set(fidelity) >= {"network.hidden_sizes", "network.activation", "parallelism.envs_per_worker",
                             "parallelism.workers", "parallelism.mode"}
    # canonical settings and the family's variant settings only: nothing that could pad the fidelity share
    assert not [s for s in fidelity if not s.startswith(("hyperparameters.", "network.", "parallelism.", "defaults.",
                                                         "parity.", "schedule."))], sorted(fidelity)
    assert fidelity["hyperparameters.learning_rate"] == {**fidelity["hyperparameters.learning_rate"],
                                                         "status": "exact", "native_name": "optim.lr"}
    assert [64, 64] in fidelity["network.hidden_sizes"]["native_value"].values()
    native = json.loads(run["native_config_json"])
    assert native["loss"]["class"] == {"PPO": "ClipPPOLoss", "A2C": "A2CLoss", "PG": "ReinforceLoss", "DQN": "DQNLoss",
                                       "SAC": "SACLoss", "TD3": "TD3Loss", "DDPG": "DDPGLoss"}[workload.algorithm]
    assert native["network"]["activation"] == "torch.nn.Tanh"
    curves = torchrl_store.curves_frame()
    curve = curves[curves["run_id"] == run.name]
    assert len(curve) >= 3
    assert curve["env_steps"].is_monotonic_increasing
    assert curve["env_steps"].iloc[-1] == run["env_steps"]
    assert all(math.isfinite(value) for value in curve["return_mean"])
    assert run["final_return_mean"] == pytest.approx(curve["return_mean"].iloc[-1])


def test_torchrl_native_config_follows_the_canonical_settings(torchrl_store: Store) -> None:
    runs = torchrl_store.runs_frame().set_index("run_id")
    ppo = json.loads(runs.loc["tiny-ppo__torchrl__s0"]["native_config_json"])
    assert ppo["collector"]["class"] == "Collector" and ppo["collector"]["frames_per_batch"] == 128
    assert ppo["replay_buffer"] == {"batch_size": 32}
    assert ppo["schedule"]["epochs"] == 2
    assert ppo["loss"]["normalize_advantage"] is True and ppo["loss"]["clip_value"] is None
    assert ppo["envs"]["env"] == "SerialEnv(2)"
    dqn = json.loads(runs.loc["tiny-dqn__torchrl__s0"]["native_config_json"])
    assert dqn["collector"]["init_random_frames"] == 100 and dqn["collector"]["frames_per_batch"] == 4
    assert dqn["loss"]["double_dqn"] is False and dqn["loss"]["loss_function"] == "smooth_l1"
    assert dqn["EGreedyModule"] == {"eps_init": 1.0, "eps_end": 0.05, "annealing_num_steps": 60}
    sac = json.loads(runs.loc["tiny-sac__torchrl__s0"]["native_config_json"])
    assert sac["loss"]["alpha_init"] == 1.0 and sac["loss"]["fixed_alpha"] is False
    assert sac["SoftUpdate"] == {"tau": 0.005}
    pg = json.loads(runs.loc["tiny-pg__torchrl__s0"]["native_config_json"])
    assert pg["returns"] == {"gamma": 0.99, "standardize": True} and pg["collector"]["frames_per_batch"] == 128
    assert pg["optim"] == {"lr": 1e-3, "class": "Adam"} and pg["schedule"]["epochs"] == 1
    workers = json.loads(runs.loc["tiny-ppo-workers__torchrl__s0"]["native_config_json"])
    assert workers["collector"]["class"] == "MultiSyncCollector" and workers["envs"]["workers"] == 2
    asynchronous = json.loads(runs.loc["tiny-dqn-async__torchrl__s0"]["native_config_json"])
    assert asynchronous["collector"]["class"] == "MultiAsyncCollector"
    assert asynchronous["collector"]["frames_per_batch"] == 2  # each worker's share of train_every


def test_torchrl_td3_and_ddpg_native_config_holds_the_noise_in_env_units(torchrl_store: Store) -> None:
    """TorchRL adds TD3's noises in env units: on Pendulum (actions in [-2, 2], half-width 2) the
    canonical 0.2 / 0.5 / 0.1 half-widths reach TD3Loss and AdditiveGaussianModule as 0.4 / 1.0 / 0.2."""
    runs = torchrl_store.runs_frame().set_index("run_id")
    td3 = json.loads(runs.loc["tiny-td3__torchrl__s0"]["native_config_json"])
    assert td3["loss"]["policy_noise"] == pytest.approx(0.4) and td3["loss"]["noise_clip"] == pytest.approx(1.0)
    assert td3["loss"]["num_qvalue_nets"] == 2 and td3["loss"]["loss_function"] == "l2"
    assert td3["loss"]["delay_actor"] is True and td3["loss"]["delay_qvalue"] is True
    assert td3["AdditiveGaussianModule"] == {"std": pytest.approx(0.2)}
    assert td3["SoftUpdate"] == {"tau": 0.005} and td3["schedule"]["policy_delay"] == 3
    assert td3["collector"]["init_random_frames"] == 100 and td3["collector"]["frames_per_batch"] == 1
    ddpg = json.loads(runs.loc["tiny-ddpg__torchrl__s0"]["native_config_json"])
    assert ddpg["loss"]["delay_actor"] is True and ddpg["loss"]["delay_value"] is True  # SB3's DDPG has a target actor
    assert "policy_noise" not in ddpg["loss"] and ddpg["schedule"]["policy_delay"] == 1
    assert ddpg["AdditiveGaussianModule"] == {"std": pytest.approx(0.2)}
    asynchronous = json.loads(runs.loc["tiny-td3-async__torchrl__s0"]["native_config_json"])
    assert asynchronous["collector"]["class"] == "MultiAsyncCollector"
    assert asynchronous["collector"]["frames_per_batch"] == 1  # each worker's share of train_every
    assert asynchronous["AdditiveGaussianModule"] == {"std": pytest.approx(0.2)}


@pytest.mark.parametrize("algorithm", ["TD3", "DDPG"])
def test_torchrl_td3_and_ddpg_follow_the_canonical_schedule(torchrl_store: Store, algorithm: str) -> None:
    """Traced from inside the training loop: one critic step per env step from learning_starts on,
    the actor and the targets moved after every policy_delay-th critic step over the run (TD3: 3
    here) or every one (DDPG), nothing reported as departing from the canonical schedule."""
    run = torchrl_store.runs_frame().set_index("run_id").loc[f"tiny-{algorithm.lower()}__torchrl__s0"]
    traced = json.loads(run["schedule_json"])
    assert traced["gradient_step"]["count"] == pytest.approx(200, abs=2)
    assert traced["update"]["count"] == pytest.approx(200, abs=2)
    delay = 3 if algorithm == "TD3" else 1
    assert traced["target_sync"]["count"] == traced["gradient_step"]["count"] // delay
    assert traced["target_sync"]["mean_effective_interval_gradient_steps"] == pytest.approx(delay)
    assert traced["target_sync"]["max_interval_gradient_steps"] == delay
    fidelity = {item["setting"]: item for item in json.loads(run["fidelity_json"])}
    assert not [name for name in fidelity if name.startswith("schedule.")], fidelity


def test_torchrl_worker_processes_are_counted_by_the_harness(torchrl_store: Store) -> None:
    run = torchrl_store.runs_frame().set_index("run_id").loc["tiny-ppo-workers__torchrl__s0"]
    # every step happened in one of two collector processes; the harness saw them all, and the
    # synchronous collector steps no further than the frames it delivered
    assert run["env_steps"] == run["framework_env_steps"] == 512
    assert run["episodes"] > 0


def test_torchrl_fidelity_flags_what_it_cannot_map() -> None:
    from rlcompare_torchrl import TorchRLAdapter

    adapter = TorchRLAdapter()
    dqn = workload_from_dict(
        {"id": "dqn", "env": "CartPole-v1", "algorithm": "DQN", "env_steps": 1000,
         "parallelism": {"envs_per_worker": 3}, "hyperparameters": {"train_every": 4, "learning_starts": 100}},
        "test")
    fidelity = {item.setting: item for item in adapter.fidelity(dqn)}
    assert fidelity["hyperparameters.train_every"].status.value == "approximate"
    assert fidelity["hyperparameters.train_every"].native_value == 3
    assert fidelity["hyperparameters.learning_starts"].status.value == "approximate"
    ppo = workload_from_dict({"id": "ppo", "env": "CartPole-v1", "algorithm": "PPO", "env_steps": 1000,
                              "hyperparameters": {"rollout_steps": 100, "minibatch_size": 64}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(ppo)}
    assert fidelity["hyperparameters.minibatch_size"].status.value == "approximate"
    a2c = workload_from_dict({"id": "a2c", "env": "CartPole-v1", "algorithm": "A2C", "env_steps": 1000,
                              "hyperparameters": {"normalize_advantage": True}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(a2c)}
    assert fidelity["hyperparameters.normalize_advantage"].status.value == "unsupported"


def test_torchrl_listing_and_fidelity_do_not_import_the_framework() -> None:
    code = ("import sys; from rlcompare_torchrl import TorchRLAdapter; from rlcompare.spec.workload import "
            "workload_from_dict; w = workload_from_dict({'id': 'x', 'env': 'CartPole-v1', 'algorithm': 'SAC', "
            "'env_steps': 10}, 't'); TorchRLAdapter().fidelity(w); TorchRLAdapter().capabilities(); "
            "[TorchRLAdapter().fidelity(workload_from_dict({'id': a.lower(), 'env': 'Pendulum-v1', 'algorithm': a, "
            "'env_steps': 10}, 't')) for a in ('TD3', 'DDPG')]; "
            "print(sorted(m for m in ('torch', 'torchrl', 'tensordict') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("spec", "reason"), [
    ({"env": "Pendulum-v1", "algorithm": "DQN"}, "DQN runs on discrete action spaces only, Pendulum-v1 has continuous"),
    ({"env": "CartPole-v1", "algorithm": "SAC"}, "SAC runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "TD3"}, "TD3 runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "DDPG"}, "DDPG runs on continuous action spaces only, CartPole-v1 has discrete"),
    ({"env": "CartPole-v1", "algorithm": "PPO", "parallelism": {"workers": 2, "mode": "async"}},
     "asynchronous collection .* is offered for the off-policy DQN, SAC, TD3 and DDPG only; PPO is on-policy"),
])
def test_torchrl_refuses_what_it_cannot_run(spec: dict, reason: str) -> None:
    workload = workload_from_dict({"id": "refused", "env_steps": 1000, "hyperparameters": {}, **spec}, "test")
    with pytest.raises(IncompatibleError, match=f"adapter 'torchrl' cannot run workload 'refused': .*{reason}"):
        build_plan(build_plugin_manager(autoload=False).plan_catalogue(), [workload], ["torchrl"])


def test_one_seed_gives_the_same_first_rollout_from_its_first_observation() -> None:
    """``Collector.set_seed`` seeds the environments but not the observations the collector already
    holds from its first reset (made before any seed): the adapter resets the collector after seeding,
    so two builds with one seed collect the same first rollout, first observation included (before,
    two runs of one seed diverged from their first update), and another seed collects another."""
    import functools

    import torch
    from rlcompare_torchrl import TorchRLAdapter, build

    from rlcompare.adapter import make_env
    from rlcompare.harness.workload_view import workload_view

    spec = _workload("PPO", TINY["PPO"])
    workload = workload_view(spec.model_dump(mode="json"), spec.derived())
    config, _ = TorchRLAdapter().native_config(workload)

    def first_rollout(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        fns = [functools.partial(make_env, workload.env, {}) for _ in range(workload.parallelism.total_envs)]
        setup = build(workload, config, fns, seed)
        try:
            batch = next(iter(setup.collector))
            return batch["observation"].clone(), batch["action"].clone()
        finally:
            setup.collector.shutdown()

    first, again, other = first_rollout(0), first_rollout(0), first_rollout(1)
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    assert not torch.equal(first[0][..., 0, :], other[0][..., 0, :])  # the first observations depend on the seed


@pytest.mark.parametrize("algorithm", ["TD3", "DDPG"])
def test_torchrl_td3_and_ddpg_fidelity_maps_every_canonical_setting_honestly(algorithm: str) -> None:
    """Every canonical TD3/DDPG setting is mapped; the noise scales are stated in the action range's
    half-widths (TorchRL's are in env units, converted when the action space is known); the warm-up's
    random actions carry no noise, as canonical. One ``defaults.*`` entry: the critics see the action in
    the env's bounds (the reference update's ``critic_sees_env_actions`` variant)."""
    from rlcompare_torchrl import TorchRLAdapter

    adapter = TorchRLAdapter()
    workload = workload_from_dict({"id": "det", "env": "Pendulum-v1", "algorithm": algorithm, "env_steps": 1000,
                                   "hyperparameters": {}}, "test")
    fidelity = {item.setting: item for item in adapter.fidelity(workload)}
    canonical = {f"hyperparameters.{key}" for key in type(workload.hyperparameters).model_fields if key != "algorithm"}
    assert canonical <= set(fidelity)
    # the one departure read from TorchRL's code (declared, so a probe would find it named)
    assert [name for name in fidelity if name.startswith(("defaults.", "schedule.", "parity."))] == [
        "defaults.critic_action_space"]
    assert fidelity["defaults.critic_action_space"].status.value == "approximate"
    statuses = {name: fidelity[name].status.value for name in canonical}
    assert statuses == dict.fromkeys(canonical, "exact")  # the warm-up's random actions carry no noise, as canonical
    noise = fidelity["hyperparameters.exploration_noise"]
    assert (noise.native_name, noise.native_value) == ("AdditiveGaussianModule.std", "0.1 x (high - low) / 2")
    assert "no noise" in noise.note
    assert fidelity["hyperparameters.tau"].native_name == "SoftUpdate.tau"
    if algorithm == "TD3":
        assert fidelity["hyperparameters.policy_delay"].native_value == 2
        smoothing = fidelity["hyperparameters.target_policy_noise"]
        assert (smoothing.native_name, smoothing.native_value) == ("loss.policy_noise", "0.2 x (high - low) / 2")
        clip = fidelity["hyperparameters.target_noise_clip"]
        assert (clip.native_name, clip.native_value) == ("loss.noise_clip", "0.5 x (high - low) / 2")
    assert fidelity["network.hidden_sizes"].native_value == {
        "actor": [64, 64], "qvalue (x2)" if algorithm == "TD3" else "qvalue": [64, 64]}
    # without a warm-up, or without noise, exact too
    for hyperparameters in ({"learning_starts": 0}, {"exploration_noise": 0.0}):
        other = workload_from_dict({"id": "det", "env": "Pendulum-v1", "algorithm": algorithm, "env_steps": 1000,
                                    "hyperparameters": hyperparameters}, "test")
        entries = {item.setting: item for item in adapter.fidelity(other)}
        assert entries["hyperparameters.exploration_noise"].status.value == "exact"
    # several envs: the update interval is rounded to whole vector steps, as for SAC
    vector = workload_from_dict({"id": "det", "env": "Pendulum-v1", "algorithm": algorithm, "env_steps": 1000,
                                 "parallelism": {"envs_per_worker": 3}, "hyperparameters": {"train_every": 4}}, "test")
    entries = {item.setting: item for item in adapter.fidelity(vector)}
    assert entries["hyperparameters.train_every"].status.value == "approximate"


@pytest.mark.parametrize("algorithm", ["TD3", "DDPG"])
def test_torchrl_td3_and_ddpg_parity_matches_the_reference_with_env_scaled_critic_actions(algorithm: str) -> None:
    """TorchRL's own TD3/DDPG step on the parity probe (critic step, actor step against the stepped
    critics, SoftUpdate), judged in-process: it is the reference update with one departure, the one the
    fidelity report declares (the critics see the TanhModule's env-scaled actions), to float32 precision."""
    import numpy as np
    from rlcompare_torchrl import TorchRLAdapter

    from rlcompare.parity.reference import declared_variants
    from rlcompare.parity.td3 import DDPGReference, TD3Reference
    from rlcompare.parity.verdict import DIFFERS, judge

    reference = {"TD3": TD3Reference, "DDPG": DDPGReference}[algorithm]()
    (case,) = reference.cases()
    workload = reference.case_workload(case)
    probe = reference.build_probe(workload)
    adapter = TorchRLAdapter()
    outcome = adapter.parity_update(probe)
    assert outcome.status == "ran", outcome.reason
    declared = declared_variants(reference, adapter.fidelity(workload))
    assert declared == frozenset({"critic_sees_env_actions"})
    verdict = judge(reference, case, probe, outcome, "torchrl", declared=declared)
    assert (verdict.status, verdict.variant) == (DIFFERS, ("critic_sees_env_actions",)), verdict.summary()
    # the canonical update is visibly another one: the TD targets already differ
    assert next(check for check in verdict.checks if check.part == "targets").error > 1e-2
    # the variant's update: every target, gradient and updated parameter (online and target) within float32
    expected = reference.expected(probe, frozenset({"critic_sees_env_actions"}))
    for part in ("targets", "gradients", "updated"):
        got, want = getattr(outcome, part), getattr(expected, part)
        assert set(got) == set(want), part
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-5, err_msg=f"{part} {name}")
    assert outcome.losses == pytest.approx(expected.losses, rel=1e-5)
    defaults = verdict.defaults
    assert defaults["adam_eps"] == defaults["adam_eps_actor"] == 1e-8 and defaults["policy_delay"] == 1
    assert defaults["n_critics"] == (2 if algorithm == "TD3" else 1) and defaults["target_actor"] is True
    assert defaults["target_update"].startswith("polyak tau 0.005")
    assert defaults["action_bounds"].startswith("scaled to the env's bounds [[-2.0], [2.0]]")
    assert any("env-scaled actions" in note for note in verdict.notes)


class _WideActions:
    """A tiny continuous task whose two action dimensions have different half-widths (1 and 3)."""

    ID = "rlcompare-test/WideActions-v0"

    @classmethod
    def register(cls) -> None:
        import gymnasium
        import numpy as np

        class WideActions(gymnasium.Env):
            observation_space = gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)
            action_space = gymnasium.spaces.Box(np.array([-1.0, -3.0], np.float32), np.array([1.0, 3.0], np.float32))

            def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
                super().reset(seed=seed)
                return self.observation_space.sample(), {}

            def step(self, action: np.ndarray) -> tuple:
                return self.observation_space.sample(), -float(np.square(action).sum()), False, False, {}

        if cls.ID not in gymnasium.envs.registry:
            gymnasium.register(cls.ID, entry_point=WideActions, max_episode_steps=20)


def test_torchrl_td3_noise_is_scaled_per_action_dimension() -> None:
    """An action space whose dimensions differ in width gets one noise scale per dimension: TD3Loss's
    target smoothing and clip and the exploration module's std, each canonical value x (high - low) / 2.
    A tiny run trains through them (the critic steps, and the actor on every policy_delay-th)."""
    import functools

    from rlcompare_torchrl import TorchRLAdapter, build

    from rlcompare.adapter import make_env
    from rlcompare.harness.workload_view import workload_view

    _WideActions.register()
    spec = workload_from_dict({"id": "td3-wide", "algorithm": "TD3", "env": _WideActions.ID, "env_steps": 64,
                               "seeds": 1, "hyperparameters": {"learning_starts": 16, "minibatch_size": 8,
                                                               "buffer_size": 100, "policy_delay": 2}}, "test")
    workload = workload_view(spec.model_dump(mode="json"), spec.derived())
    config, _ = TorchRLAdapter().native_config(workload)
    setup = build(workload, config, [functools.partial(make_env, workload.env, {})], 0)
    try:
        setup.run(lambda steps: None)
    finally:
        setup.close()
    assert setup.native["loss"]["policy_noise"] == pytest.approx([0.2, 0.6])
    assert setup.native["loss"]["noise_clip"] == pytest.approx([0.5, 1.5])
    assert setup.native["AdditiveGaussianModule"]["std"] == pytest.approx([0.1, 0.3])
    assert setup.loss.policy_noise.tolist() == pytest.approx([0.2, 0.6])
    assert setup.extras["collect_policy"][-1].std.tolist() == pytest.approx([0.1, 0.3])
    assert setup.env_steps == 64 and setup.critic_steps == 64 - 16 + 1
