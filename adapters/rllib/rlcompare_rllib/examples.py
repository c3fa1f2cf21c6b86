"""RLlib's recommended settings for the native arm: the tuned examples RLlib ships in its repository.

RLlib keeps one script per algorithm and environment that its CI runs as a learning test
(``rllib/tuned_examples/<algo>/``, moved to ``rllib/examples/algorithms/<algo>/`` in late 2025; the
wheel ships neither). A script sets what it tunes and leaves the rest to the algorithm's config
defaults, so a recommendation here is the script's settings over the defaults of the RLlib the
adapter pins (2.60.0, ``ray.__commit__`` b7f4259e), both transcribed and each traced to its line:

- **PPO, CartPole** (``cartpole_ppo.py`` at ``4d543200``, the settings it kept from the old path): ``lr=0.0003, num_epochs=6,
  vf_loss_coeff=0.01`` and ``DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="linear",
  vf_share_layers=True)``, a linear policy and value sharing one layer; PPOConfig's defaults for the
  rest (``ppo.py``): 2 env runners of one env each, ``train_batch_size=4000`` (2,000 steps of each
  env), ``minibatch_size=128``, ``lambda_=1.0``, ``clip_param=0.3``, ``vf_clip_param=10.0`` (a clamp
  of the squared value error), ``use_kl_loss=True`` with ``kl_coeff=0.2`` adapted towards
  ``kl_target=0.01``, no gradient clipping, ``gamma=0.99``.
- **DQN, CartPole** (``cartpole_dqn.py`` at ``7156122e``, the settings of the old path's
  ``6d0bbd66``): ``lr=0.0005, train_batch_size_per_learner=32``, a prioritized buffer of 50,000
  (alpha 0.6, beta 0.4), ``n_step=(2, 5)`` (n drawn per sampled row from {2, 3, 4}: numpy's
  ``integers`` excludes the upper end), double and dueling Q, epsilon linear from 1.0 to 0.02 over the
  first 10,000 env steps, ``[256]`` tanh with a ``[256]`` head and zero biases; DQNConfig's defaults
  for the rest (``dqn.py``): a hard target copy every 500 env steps, learning after 1,000, one update
  of 32 per sample call of ``n_step[1] = 5`` env steps (``rollout_fragment_length="auto"``), Huber
  loss, gradient norm clipped at 40.
- **SAC, Pendulum** (``pendulum_sac.py`` at ``06d824cd``, the version that sets the fusion layers of
  the Q encoder RLlib 2.60 builds): actor, critic and alpha learning rates 2e-4, 8e-4 and 9e-4,
  ``initial_alpha=1.001``, ``n_step=(2, 5)``, ``tau=0.005``, batch 256, a target update at every
  learner update, a prioritized buffer of 100,000 (alpha 1.0, beta 0.0), learning after 256 steps,
  ``[256, 256]`` relu with Xavier-uniform kernels, linear heads with orthogonal kernels (gain 0.01),
  fusion layers ``[256, 256, 256]`` relu; SACConfig's defaults for the rest (``sac.py``): twin Q,
  target entropy ``-dim(A)``, one update per sample call of 5 env steps, no gradient clipping.

Each script trains CartPole-v1 or Pendulum-v1; CartPole-v0 has the same dynamics with a 200-step
episode limit, so the CartPole scripts are recommended for both (the source says so). RLlib's PPO
script for Pendulum (``pendulum_ppo.py``) asks for a train batch of 1,024 over 2 x 20 envs, which is
not a whole rollout per env: it is refused with that named.
"""

from __future__ import annotations

from typing import Any

from rlcompare.adapter import IncompatibleError, NativeSetting, Recommendation

REPOSITORY = "ray-project/ray"
#: The RLlib release whose config defaults complete each script (``ray.__commit__`` of ray 2.60.0).
RELEASE = "2.60.0 (b7f4259e)"

_CARTPOLE = ("CartPole-v0", "CartPole-v1")
_PENDULUM = ("Pendulum-v1",)

#: family -> (script path, commit, environments, hyperparameters, network, parallelism, native-only settings)
EXAMPLES: dict[str, tuple[str, str, tuple[str, ...], dict[str, Any], dict[str, Any], dict[str, Any],
                          dict[str, Any]]] = {
    "PPO": ("rllib/examples/algorithms/ppo/cartpole_ppo.py", "4d5432002e1dde475e998961013efb211c84012e", _CARTPOLE,
            {"learning_rate": 3e-4, "gamma": 0.99, "gae_lambda": 1.0, "clip_range": 0.3, "rollout_steps": 2_000,
             "minibatch_size": 128, "epochs": 6, "entropy_coef": 0.0, "value_coef": 0.01,
             "normalize_advantage": True},
            {"hidden_sizes": [32]}, {"envs_per_worker": 1, "workers": 2},
            {"activation": "linear", "shared_network": True, "use_kl_loss": True, "kl_coeff": 0.2,
             "kl_target": 0.01, "vf_clip_param": 10.0, "max_grad_norm": None}),
    "DQN": ("rllib/examples/algorithms/dqn/cartpole_dqn.py", "7156122e30689af8425becc3923be7484d594853", _CARTPOLE,
            {"learning_rate": 5e-4, "gamma": 0.99, "buffer_size": 50_000, "learning_starts": 1_000,
             "minibatch_size": 32, "train_every": 5, "gradient_steps": 1, "target_update_interval": 500,
             "exploration_initial_eps": 1.0, "exploration_final_eps": 0.02, "max_grad_norm": 40.0,
             "double_q": True},
            {"hidden_sizes": [256], "activation": "tanh"}, {"envs_per_worker": 1, "workers": 1},
            {"exploration_schedule": [[0, 1.0], [10_000, 0.02]], "n_step": [2, 5], "dueling": True,
             "prioritized_replay": {"alpha": 0.6, "beta": 0.4}, "head_hidden_sizes": [256],
             "bias_initializer": "zeros_"}),
    "SAC": ("rllib/examples/algorithms/sac/pendulum_sac.py", "06d824cd395076c45dd8746d787717e720ed20ab", _PENDULUM,
            {"learning_rate": 8e-4, "gamma": 0.99, "buffer_size": 100_000, "learning_starts": 256,
             "minibatch_size": 256, "tau": 0.005, "train_every": 5, "gradient_steps": 1, "entropy_coef": "auto"},
            {"hidden_sizes": [256, 256], "activation": "relu"}, {"envs_per_worker": 1, "workers": 1},
            {"actor_learning_rate": 2e-4, "alpha_learning_rate": 9e-4, "initial_alpha": 1.001, "n_step": [2, 5],
             "prioritized_replay": {"alpha": 1.0, "beta": 0.0}, "target_network_update_freq": 1,
             "kernel_initializer": "xavier_uniform_", "head_kernel_initializer": ["orthogonal_", {"gain": 0.01}],
             "fusion_hidden_sizes": [256, 256, 256], "fusion_activation": "relu"}),
}

#: Scripts whose training the adapter cannot run: (environments, the script, what it does).
REFUSED: dict[str, tuple[tuple[str, ...], str, str]] = {
    "PPO": (_PENDULUM, "rllib/examples/algorithms/ppo/pendulum_ppo.py@8c7aec54",
            "train_batch_size_per_learner=1024 over num_env_runners=2 x num_envs_per_env_runner=20 (25.6 steps of "
            "each env: not a whole rollout per env) and a MeanStdFilter observation connector"),
}

_N_STEP = ("n-step TD targets, n drawn per sampled row from [low, high) (numpy integers), as RLlib's episode "
           "buffers sample them; the canonical families use 1-step")
_PRIORITIZED = ("PrioritizedEpisodeReplayBuffer with these alpha and beta, where the canonical buffer samples "
                "uniformly")

#: How the RLlib adapter applies each native setting: where it goes (``training.<key>`` or
#: ``model_config.<key>``), the canonical settings it overrides and what it does.
NATIVE_SETTINGS: dict[str, NativeSetting] = {
    "activation": NativeSetting(("PPO",), "model_config.fcnet_activation", ("network.activation",),
                                "'linear': no nonlinearity, a linear policy and value function"),
    "shared_network": NativeSetting(("PPO",), "model_config.vf_share_layers", (),
                                    "policy and value heads on one shared encoder"),
    "use_kl_loss": NativeSetting(("PPO",), "training.use_kl_loss", (),
                                 "a KL penalty beside the clipped objective (RLlib's default)"),
    "kl_coeff": NativeSetting(("PPO",), "training.kl_coeff", (),
                              "the penalty's initial coefficient, x1.5 above 2 x kl_target and x0.5 below half"),
    "kl_target": NativeSetting(("PPO",), "training.kl_target", (), "the KL the coefficient adapts towards"),
    "vf_clip_param": NativeSetting(("PPO",), "training.vf_clip_param", (),
                                   "the squared value error clamped to [0, 10] (RLlib's default)"),
    "max_grad_norm": NativeSetting(("PPO",), "training.grad_clip", ("max_grad_norm",),
                                   "None: no gradient clipping (PPOConfig's default)"),
    "exploration_schedule": NativeSetting(("DQN",), "training.epsilon",
                                          ("exploration_initial_eps", "exploration_final_eps",
                                           "exploration_fraction"),
                                          "epsilon piecewise linear over env steps [(steps, eps), ...]"),
    "n_step": NativeSetting(("DQN", "SAC"), "training.n_step", (), _N_STEP),
    "dueling": NativeSetting(("DQN",), "training.dueling", (), "dueling Q heads (value and advantage streams)"),
    "prioritized_replay": NativeSetting(("DQN", "SAC"), "training.replay_buffer_config", (), _PRIORITIZED),
    "head_hidden_sizes": NativeSetting(("DQN",), "model_config.head_fcnet_hiddens", (),
                                       "hidden layers of the Q heads after the encoder"),
    "bias_initializer": NativeSetting(("DQN",), "model_config.fcnet_bias_initializer", (),
                                      "zero biases in the encoder and the heads (head_fcnet_bias_initializer too)"),
    "actor_learning_rate": NativeSetting(("SAC",), "training.actor_lr", ("learning_rate",),
                                         "the actor's own Adam step size; learning_rate is the critics'"),
    "alpha_learning_rate": NativeSetting(("SAC",), "training.alpha_lr", ("learning_rate",),
                                         "the temperature's own Adam step size"),
    "initial_alpha": NativeSetting(("SAC",), "training.initial_alpha", (), "the entropy temperature's start"),
    "target_network_update_freq": NativeSetting(("SAC",), "training.target_network_update_freq", (),
                                                "env steps between Polyak target updates (1: every update)"),
    "kernel_initializer": NativeSetting(("SAC",), "model_config.fcnet_kernel_initializer", (),
                                        "the encoders' weights (torch.nn.init function)"),
    "head_kernel_initializer": NativeSetting(("SAC",), "model_config.head_fcnet_kernel_initializer", (),
                                             "the heads' weights: [torch.nn.init function, its keyword arguments]"),
    "fusion_hidden_sizes": NativeSetting(("SAC",), "model_config.fusionnet_hiddens", (),
                                         "the critics' layers after observation and action encoders are joined"),
    "fusion_activation": NativeSetting(("SAC",), "model_config.fusionnet_activation", (),
                                       "the activation of those layers"),
}


def source(path: str, commit: str) -> str:
    return (f"{REPOSITORY}@{commit[:8]} {path} (RLlib's tuned example; PPOConfig/DQNConfig/SACConfig defaults "
            f"of RLlib {RELEASE} for what it leaves unset)")


def recommendation(env: str, algorithm: str) -> Recommendation | None:
    """The tuned example's settings for ``env`` and ``algorithm`` (see the module docstring); None where
    RLlib ships no script for the pair; :class:`IncompatibleError` naming what a refused script does."""
    if algorithm in REFUSED:
        envs, path, why = REFUSED[algorithm]
        if env in envs:
            raise IncompatibleError(f"RLlib's own settings ({REPOSITORY} {path}) set {why}")
    if algorithm not in EXAMPLES:
        return None
    path, commit, envs, hyperparameters, network, parallelism, native = EXAMPLES[algorithm]
    if env not in envs:
        return None
    where = source(path, commit)
    if env == "CartPole-v0":
        where += "; the script trains CartPole-v1, the same dynamics with a 500-step episode limit"
    return Recommendation(source=where, hyperparameters=dict(hyperparameters), network=dict(network),
                          parallelism=dict(parallelism), native=dict(native))
