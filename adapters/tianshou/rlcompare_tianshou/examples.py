"""Tianshou's recommended settings for the native arm: the test scripts Tianshou ships with its source.

Tianshou publishes no tuned-hyperparameter files; its own settings for the classic environments are
the defaults of the scripts under ``test/`` in its repository (the 2020 platform comparison measured
Tianshou with these scripts' ancestors). They are transcribed here from Tianshou 2.0.1 (the version
the adapter pins; tag v2.0.1, commit ``1d579674``), one per family, each with its script as the
source. A script's value becomes a canonical setting where the canonical model has one, in the
canonical unit (``train_every`` in env steps over every env, so a collect of 8 steps over 8 envs is
8; ``target_update_interval`` in env steps, so 320 gradient steps, one per 10 env steps, are 3,200);
what the canonical model has no field for is a native-only setting the adapter applies
(:func:`rlcompare_tianshou.apply_native_settings`). A script whose training the adapter cannot run
(whole-episode collection, minibatched REINFORCE or A2C) is refused with its settings named.

The scripts train on CartPole-v1 and Pendulum-v1; CartPole-v0 has the same dynamics with a 200-step
episode limit, so the CartPole scripts are recommended for both (the source says so).
"""

from __future__ import annotations

from typing import Any

from rlcompare.adapter import IncompatibleError, NativeSetting, Recommendation

REPOSITORY = "thu-ml/tianshou"
#: The v2.0.1 release commit, whose scripts the settings below were read from.
COMMIT = "1d579674a9eea34d707c35c12f0ff7c077c3f800"

_CARTPOLE = ("CartPole-v0", "CartPole-v1")
_PENDULUM = ("Pendulum-v1",)

#: family -> (script path, environments, hyperparameters, network, parallelism, native-only settings)
EXAMPLES: dict[str, tuple[str, tuple[str, ...], dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "TD3": ("test/continuous/test_td3.py", _PENDULUM,
            {"learning_rate": 1e-3, "gamma": 0.99, "buffer_size": 20_000, "learning_starts": 0, "minibatch_size": 128,
             "tau": 0.005, "train_every": 8, "gradient_steps": 1, "policy_delay": 2, "target_policy_noise": 0.2,
             "target_noise_clip": 0.5, "exploration_noise": 0.1},
            {"hidden_sizes": [128, 128], "activation": "relu"}, {"envs_per_worker": 8, "workers": 1},
            {"n_step_return_horizon": 3, "actor_learning_rate": 1e-4, "actor_max_action": "env"}),
    "DDPG": ("test/continuous/test_ddpg.py", _PENDULUM,
             {"learning_rate": 1e-3, "gamma": 0.99, "buffer_size": 20_000, "learning_starts": 0, "minibatch_size": 128,
              "tau": 0.005, "train_every": 8, "gradient_steps": 1, "exploration_noise": 0.1},
             {"hidden_sizes": [128, 128], "activation": "relu"}, {"envs_per_worker": 8, "workers": 1},
             {"n_step_return_horizon": 3, "actor_learning_rate": 1e-4, "actor_max_action": "env"}),
    "SAC": ("test/continuous/test_sac_with_il.py", _PENDULUM,
            {"learning_rate": 1e-3, "gamma": 0.99, "buffer_size": 20_000, "learning_starts": 0, "minibatch_size": 128,
             "tau": 0.005, "train_every": 10, "gradient_steps": 1, "entropy_coef": "auto"},
            {"hidden_sizes": [128, 128], "activation": "relu"}, {"envs_per_worker": 10, "workers": 1},
            {"n_step_return_horizon": 3, "alpha_learning_rate": 3e-4, "conditioned_sigma": False}),
    "DQN": ("test/discrete/test_dqn.py", _CARTPOLE,
            {"learning_rate": 1e-3, "gamma": 0.9, "buffer_size": 20_000, "learning_starts": 640, "minibatch_size": 64,
             "train_every": 10, "gradient_steps": 1, "target_update_interval": 3_200, "exploration_initial_eps": 0.1,
             "exploration_final_eps": 0.01, "double_q": True},
            {"hidden_sizes": [128, 128, 128, 128], "activation": "relu"}, {"envs_per_worker": 10, "workers": 1},
            {"n_step_return_horizon": 3, "huber_loss_delta": None, "max_grad_norm": None, "prefill_with_policy": True,
             "exploration_schedule": [[0, 0.1], [10_000, 0.1], [50_000, 0.01]]}),
    "PPO": ("test/discrete/test_ppo_discrete.py", _CARTPOLE,
            {"learning_rate": 3e-4, "gamma": 0.99, "gae_lambda": 0.95, "clip_range": 0.2, "rollout_steps": 100,
             "minibatch_size": 64, "epochs": 10, "entropy_coef": 0.0, "value_coef": 0.5, "max_grad_norm": 0.5,
             "normalize_advantage": False},
            {"hidden_sizes": [64, 64], "activation": "relu"}, {"envs_per_worker": 20, "workers": 1},
            {"shared_network": True, "orthogonal_init": True, "optimizer_eps": 1e-8}),
}

#: Families whose script trains in a way the adapter cannot run: the script and what it does.
REFUSED: dict[str, tuple[str, tuple[str, ...], str]] = {
    "PG": ("test/discrete/test_reinforce.py", _CARTPOLE,
           "collection_step_num_episodes=8 (whole episodes per update) and update_step_num_repetitions=2 with "
           "batch_size=64 (minibatched passes over each batch), where the PG family collects rollout_steps per env "
           "and takes one full-batch step"),
    "A2C": ("test/discrete/test_a2c_with_il.py", _CARTPOLE,
            "collection_step_num_episodes=16 (whole episodes per update) with batch_size=64 (minibatch steps), "
            "where the A2C family takes one full-batch step per rollout"),
}

#: How the Tianshou adapter applies each native setting: the families it applies to, where it goes in the
#: config ("component.keyword"), the canonical settings it overrides and what it does.
NATIVE_SETTINGS: dict[str, NativeSetting] = {
    "n_step_return_horizon": NativeSetting(
        ("DQN", "SAC", "TD3", "DDPG"), "algorithm.n_step_return_horizon", (),
        "n-step TD targets (Tianshou's n_step_return_horizon); the canonical families use 1-step"),
    "huber_loss_delta": NativeSetting(
        ("DQN",), "algorithm.huber_loss_delta", (),
        "TD loss: None is Tianshou's default mean squared error (the canonical DQN uses Huber 1)"),
    "max_grad_norm": NativeSetting(
        ("DQN",), "algorithm.max_grad_norm", ("max_grad_norm",),
        "None: Tianshou's DQN without gradient clipping, as the script builds it"),
    "actor_learning_rate": NativeSetting(
        ("TD3", "DDPG"), "actor_optim.lr", ("learning_rate",),
        "the actor's own Adam step size; learning_rate is the critics'"),
    "alpha_learning_rate": NativeSetting(
        ("SAC",), "alpha_optim.lr", ("learning_rate",),
        "the entropy temperature's own Adam step size (AutoAlpha); learning_rate is actor's and critics'"),
    "optimizer_eps": NativeSetting(
        ("PPO", "A2C", "PG"), "optim.eps", ("learning_rate",),
        "Adam's epsilon: Tianshou's (and torch's) default, where the canonical on-policy adapters use 1e-5"),
    "actor_max_action": NativeSetting(
        ("TD3", "DDPG"), "policy.actor_max_action", ("exploration_noise",),
        "the actor's tanh output scaled to the env's bound before the policy clips it to [-1, 1] and maps it to "
        "[low, high], as the script builds it (max_action=env.action_space.high)"),
    "conditioned_sigma": NativeSetting(
        ("SAC",), "actor.conditioned_sigma", (),
        "the Gaussian actor's log-std: a state-independent parameter (False) as in the script"),
    "exploration_schedule": NativeSetting(
        ("DQN",), "exploration.schedule", ("exploration_initial_eps", "exploration_final_eps", "exploration_fraction"),
        "epsilon piecewise linear over env steps [(steps, eps), ...], as the script's train_fn sets it before every "
        "collect (0.1 until 10k, then to 0.01 at 50k)"),
    "prefill_with_policy": NativeSetting(
        ("DQN", "SAC", "TD3", "DDPG"), "prefill.with_policy", ("learning_starts",),
        "the learning_starts steps are collected by the exploring policy (epsilon 0.1 on the untrained Q-network), "
        "as the script's initial collect, not by uniform random actions"),
    "shared_network": NativeSetting(
        ("PPO", "A2C"), "network.shared", (),
        "actor and critic share one Net (the script's ActorCritic over one preprocessing net)"),
    "orthogonal_init": NativeSetting(
        ("PPO", "A2C"), "network.orthogonal_init", (),
        "every Linear layer orthogonally initialised (gain 1) with zero bias, as the script does"),
}


def source(path: str) -> str:
    return f"{REPOSITORY}@{COMMIT[:8]} {path} (Tianshou 2.0.1's test script; its argparse defaults)"


def recommendation(env: str, algorithm: str) -> Recommendation | None:
    """The script's settings for ``env`` and ``algorithm`` (see the module docstring); None where Tianshou
    ships no script for the pair; :class:`IncompatibleError` naming what a refused script does."""
    if algorithm in REFUSED:
        path, envs, why = REFUSED[algorithm]
        if env in envs:
            raise IncompatibleError(f"Tianshou's own settings ({source(path)}) set {why}")
        return None
    if algorithm not in EXAMPLES:
        return None
    path, envs, hyperparameters, network, parallelism, native = EXAMPLES[algorithm]
    if env not in envs:
        return None
    where = source(path)
    if env == "CartPole-v0":
        where += "; the script trains CartPole-v1, the same dynamics with a 500-step episode limit"
    return Recommendation(source=where, hyperparameters=dict(hyperparameters), network=dict(network),
                          parallelism=dict(parallelism), native=dict(native))
