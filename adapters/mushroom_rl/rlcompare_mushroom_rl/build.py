"""MushroomRL's objects for one run: the harness's environment as a MushroomRL ``Environment``, the
networks, the agent, ``Core``, and the policy the harness evaluates. Imported only to train or to
answer a parity probe (it imports MushroomRL and torch).

Every class MushroomRL instantiates itself (networks, losses, the epsilon ``Parameter``) is defined
at module level, so MushroomRL's serialization could pickle them; nothing is saved during a run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - torch's own spelling
from mushroom_rl.core import Core, Environment, MDPInfo
from mushroom_rl.utils.parameters import Parameter
from mushroom_rl.utils.spaces import Box, Discrete

from rlcompare.adapter import TrainingResult, WorkloadLike, episode_step_limit

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext

#: Adam's epsilon of the canonical PPO (SB3, CleanRL).
PPO_ADAM_EPS = 1e-5
#: MushroomRL's SAC log-std bounds (its defaults, and the canonical ones).
LOG_STD_BOUNDS = (-20.0, 2.0)

# -------------------------------------------------------------------------------------------------
# the environment
# -------------------------------------------------------------------------------------------------


class HarnessEnvironment(Environment):
    """A MushroomRL ``Environment`` around one Gymnasium environment made by the harness's factory.

    ``step`` returns ``(next_state, reward, absorbing, info)`` as MushroomRL 1.x expects, with
    ``absorbing = terminated``; the environment is never reset behind ``Core``'s back, so the next
    state of an episode's last step is its real final observation. A truncation the environment makes
    before ``Core``'s horizon is left in :attr:`truncated` for :class:`HarnessCore`. Observations go
    out as float32 (MushroomRL's torch approximators take numpy arrays as they are). Continuous
    actions may be clipped to the bounds (PPO's Gaussian samples, as SB3 clips them).
    """

    def __init__(self, env: Any, gamma: float, horizon: float, seed: int | None, clip_actions: bool) -> None:
        import gymnasium

        self.env = env
        space = env.action_space
        self.discrete = isinstance(space, gymnasium.spaces.Discrete)
        observation = env.observation_space
        observation_space = Box(low=np.asarray(observation.low, dtype=np.float64).ravel(),
                                high=np.asarray(observation.high, dtype=np.float64).ravel())
        if self.discrete:
            action_space = Discrete(int(space.n))
        else:
            action_space = Box(low=np.asarray(space.low, dtype=np.float64), high=np.asarray(space.high, dtype=np.float64))
        self.clip_actions = clip_actions and not self.discrete
        self.truncated = False
        self._seed = seed
        super().__init__(MDPInfo(observation_space, action_space, gamma, horizon))

    def seed(self, seed: int) -> None:
        self._seed = seed

    def reset(self, state: Any = None) -> np.ndarray:
        if self._seed is not None:
            observation, _ = self.env.reset(seed=self._seed)
            self._seed = None
        else:
            observation, _ = self.env.reset()
        self.truncated = False
        return np.asarray(observation, dtype=np.float32).ravel()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        if self.discrete:
            native: Any = int(np.asarray(action).ravel()[0])
        else:
            space = self.env.action_space
            native = np.asarray(action, dtype=space.dtype).reshape(space.shape)
            if self.clip_actions:
                native = np.clip(native, space.low, space.high)
        observation, reward, terminated, truncated, _ = self.env.step(native)
        self.truncated = bool(truncated) and not bool(terminated)
        return np.asarray(observation, dtype=np.float32).ravel(), float(reward), bool(terminated), {}

    def render(self, record: bool = False) -> None:
        return None

    def close(self) -> None:
        self.env.close()


class HarnessCore(Core):
    """MushroomRL's ``Core`` that also ends an episode where the environment truncates it before the
    horizon (``Core._step`` knows only ``absorbing`` and its own step count): the transition is
    marked ``last``, not ``absorbing``, so MushroomRL bootstraps it and resets the environment next."""

    def _step(self, render: bool, record: bool) -> tuple[tuple[Any, ...], dict[str, Any]]:
        sample, info = super()._step(render, record)
        if getattr(self.mdp, "truncated", False) and not sample[-1]:
            sample = (*sample[:-1], True)
        return sample, info


# -------------------------------------------------------------------------------------------------
# networks and losses (MushroomRL calls network(input_shape, output_shape, use_cuda=..., dropout=..., **params))
# -------------------------------------------------------------------------------------------------


def _mlp(inputs: int, hidden: list[int], outputs: int, activation: str, squash: bool = False) -> torch.nn.Sequential:
    layers: list[torch.nn.Module] = []
    for width in hidden:
        layers += [torch.nn.Linear(inputs, width), getattr(torch.nn, activation)()]
        inputs = width
    layers.append(torch.nn.Linear(inputs, outputs))
    if squash:
        layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


class MLPNetwork(torch.nn.Module):
    """The workload's MLP from the state to ``output_shape[0]`` outputs (policy logits or mean, a value
    of shape ``(n, 1)``, an actor's action with ``squash``: tanh on the output)."""

    def __init__(self, input_shape: tuple[int, ...], output_shape: tuple[int, ...], hidden_sizes: list[int],
                 activation: str, squash: bool = False, **_: Any) -> None:
        super().__init__()
        self.net = _mlp(int(np.prod(input_shape)), list(hidden_sizes), int(output_shape[0]), activation, squash)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state.float())


class QNetwork(torch.nn.Module):
    """One Q-value per action; given actions (MushroomRL's fit), the Q-values of those, shape ``(n,)``."""

    def __init__(self, input_shape: tuple[int, ...], output_shape: tuple[int, ...], hidden_sizes: list[int],
                 activation: str, **_: Any) -> None:
        super().__init__()
        self.net = _mlp(int(np.prod(input_shape)), list(hidden_sizes), int(output_shape[0]), activation)

    def forward(self, state: torch.Tensor, action: torch.Tensor | None = None) -> torch.Tensor:
        q = self.net(state.float())
        if action is None:
            return q
        return q.gather(1, action.long().reshape(-1, 1)).squeeze(1)


class CriticNetwork(torch.nn.Module):
    """Q(s, a) on the observation then the action, shape ``(n,)`` (MushroomRL's actor-critic targets
    are ``reward + gamma * q_next`` with ``reward`` of shape ``(n,)``)."""

    def __init__(self, input_shape: tuple[int, ...], output_shape: tuple[int, ...], hidden_sizes: list[int],
                 activation: str, **_: Any) -> None:
        super().__init__()
        self.net = _mlp(int(np.prod(input_shape)), list(hidden_sizes), int(output_shape[0]), activation)

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([state.float(), action.float()], dim=1)).squeeze(1)


@dataclass(frozen=True)
class ScaledMSE:
    """``scale x F.mse_loss``: the canonical value-loss coefficient on MushroomRL's critic loss."""

    scale: float

    def __call__(self, prediction: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        return self.scale * F.mse_loss(prediction, target, reduction=reduction)


class ScheduledEpsilon(Parameter):
    """DQN's epsilon as a MushroomRL ``Parameter`` (``EpsGreedy`` calls it once per action, which
    counts the call): 1 before ``warm_up`` env steps (uniform random actions), then SB3's linear
    schedule from ``initial`` to ``final`` over ``decay_steps`` env steps counted from step 0, then
    flat. ``on_change`` (the harness's trace) hears each new value."""

    def __init__(self, initial: float, final: float, decay_steps: float, warm_up: int) -> None:
        super().__init__(initial)
        self.final = final
        self.decay_steps = max(float(decay_steps), 1e-12)
        self.warm_up = warm_up
        self.steps = 0
        self.on_change: Callable[[float], None] | None = None
        self._last: float | None = None

    def update(self, *idx: Any, **kwargs: Any) -> None:
        self.steps += 1

    def value_at(self, steps_done: int) -> float:
        if steps_done < self.warm_up:
            return 1.0
        progress = min(1.0, steps_done / self.decay_steps)
        return float(self._initial_value + (self.final - self._initial_value) * progress)

    def _compute(self, *idx: Any, **kwargs: Any) -> float:
        value = self.value_at(max(self.steps - 1, 0))  # the steps done before this action
        if value != self._last:
            self._last = value
            if self.on_change is not None:
                self.on_change(value)
        return value


# -------------------------------------------------------------------------------------------------
# the run
# -------------------------------------------------------------------------------------------------


@dataclass
class MushroomSetup:
    """Everything built for one run."""

    workload: WorkloadLike
    agent: Any
    environment: HarnessEnvironment
    core: HarnessCore
    n_steps: int
    n_steps_per_fit: int
    extra_fits: int
    native: dict[str, Any] = field(default_factory=dict)
    #: The env's own action bounds where MushroomRL acts on the action scaled to [-1, 1].
    action_bounds: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def env_steps(self) -> int:
        """Env steps as MushroomRL's Core counts them."""
        return int(self.core._total_steps_counter)

    def close(self) -> None:
        self.environment.close()


def set_seeds(seed: int) -> None:
    """MushroomRL samples with numpy's and torch's global generators (minibatches, replay, epsilon)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def build(workload: WorkloadLike, config: dict[str, Any], env_fn: Callable[[], Any], seed: int) -> MushroomSetup:
    """The environment, agent and ``Core`` for ``workload`` as ``config`` (the adapter's
    ``native_config``) says; ``env_fn`` makes the harness's environment."""
    import gymnasium

    set_seeds(seed)
    algorithm = workload.algorithm
    settings = config["settings"]
    env = env_fn()
    rescale = config["environment"]["action_rescale"]
    action_bounds = None
    if rescale is not None and isinstance(env.action_space, gymnasium.spaces.Box):
        action_bounds = (np.asarray(env.action_space.low, dtype=np.float64),
                         np.asarray(env.action_space.high, dtype=np.float64))
        dtype = env.action_space.dtype.type
        env = gymnasium.wrappers.RescaleAction(env, dtype(rescale[0]), dtype(rescale[1]))
    limit = episode_step_limit(workload.env, dict(workload.env_kwargs))
    environment = HarnessEnvironment(env, float(workload.hyperparameters.gamma), limit or np.inf, seed,  # type: ignore[union-attr]
                                     clip_actions=algorithm == "PPO")
    network = {"hidden_sizes": list(workload.network.hidden_sizes),
               "activation": config["network"]["activation"].rsplit(".", 1)[-1]}
    builders = {"PPO": _ppo, "DQN": _dqn, "SAC": _sac, "TD3": _deterministic, "DDPG": _deterministic}
    agent, native = builders[algorithm](workload, settings, environment.info, network)
    core = HarnessCore(agent, environment)
    extra = int(settings.get("extra_fits", 0)) if algorithm != "PPO" else 0
    native = {"agent": config["algorithm"], **native,
              "network": config["network"], "core": config["core"], "extra_fits": extra,
              "environment": {**config["environment"], "horizon": limit, "class": "HarnessEnvironment"}}
    return MushroomSetup(workload, agent, environment, core, int(workload.env_steps), int(config["core"]["n_steps_per_fit"]),
                         extra, native, action_bounds)


def _adam(lr: float, eps: float | None = None) -> dict[str, Any]:
    return {"class": torch.optim.Adam, "params": {"lr": float(lr), **({"eps": eps} if eps is not None else {})}}


def _plain_optimizer(optimizer: dict[str, Any]) -> dict[str, Any]:
    return {"class": f"torch.optim.{optimizer['class'].__name__}", "params": dict(optimizer["params"])}


def _ppo(workload: WorkloadLike, settings: dict[str, Any], info: MDPInfo,
         network: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from mushroom_rl.algorithms.actor_critic import PPO
    from mushroom_rl.policy import BoltzmannTorchPolicy, GaussianTorchPolicy

    hp = workload.hyperparameters
    observation_shape = info.observation_space.shape
    if isinstance(info.action_space, Discrete):
        policy = BoltzmannTorchPolicy(MLPNetwork, observation_shape, (int(info.action_space.n),), beta=1.0, **network)
        policy_class = "BoltzmannTorchPolicy(beta=1)"
    else:
        policy = GaussianTorchPolicy(MLPNetwork, observation_shape, info.action_space.shape, std_0=1.0, **network)
        policy_class = "GaussianTorchPolicy(std_0=1)"
    actor_optimizer = _adam(hp.learning_rate, PPO_ADAM_EPS)  # type: ignore[union-attr]
    critic_params = {"network": MLPNetwork, "input_shape": observation_shape, "output_shape": (1,),
                     "optimizer": _adam(hp.learning_rate, PPO_ADAM_EPS),  # type: ignore[union-attr]
                     "loss": ScaledMSE(float(hp.value_coef)), "batch_size": int(hp.minibatch_size), **network}  # type: ignore[union-attr]
    critic_fit_params = {"n_epochs": int(hp.epochs)}  # type: ignore[union-attr]
    kwargs = {"n_epochs_policy": int(hp.epochs), "batch_size": int(hp.minibatch_size),  # type: ignore[union-attr]
              "eps_ppo": float(hp.clip_range), "lam": float(hp.gae_lambda), "ent_coeff": float(hp.entropy_coef)}  # type: ignore[union-attr]
    agent = PPO(info, policy, actor_optimizer, critic_params, critic_fit_params=critic_fit_params, **kwargs)
    native = {"policy": policy_class, "actor_optimizer": _plain_optimizer(actor_optimizer),
              "critic_params": {"optimizer": _plain_optimizer(critic_params["optimizer"]),
                                "loss": f"{float(hp.value_coef):g} * F.mse_loss",  # type: ignore[union-attr]
                                "batch_size": critic_params["batch_size"]},
              "critic_fit_params": critic_fit_params, **kwargs}
    return agent, native


def _dqn(workload: WorkloadLike, settings: dict[str, Any], info: MDPInfo,
         network: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from mushroom_rl.algorithms.value import DQN, DoubleDQN
    from mushroom_rl.approximators.parametric import TorchApproximator
    from mushroom_rl.policy import EpsGreedy

    hp = workload.hyperparameters
    n_actions = int(info.action_space.n)
    epsilon = ScheduledEpsilon(float(hp.exploration_initial_eps), float(hp.exploration_final_eps),  # type: ignore[union-attr]
                               float(hp.exploration_fraction) * workload.env_steps, int(hp.learning_starts))  # type: ignore[union-attr]
    optimizer = _adam(hp.learning_rate)  # type: ignore[union-attr]
    approximator_params = {"network": QNetwork, "input_shape": info.observation_space.shape,
                           "output_shape": (n_actions,), "n_actions": n_actions, "optimizer": optimizer,
                           "loss": F.smooth_l1_loss, **network}
    kwargs = {"batch_size": int(hp.minibatch_size), "target_update_frequency": int(settings["target_update_frequency"]),  # type: ignore[union-attr]
              "initial_replay_size": int(hp.learning_starts), "max_replay_size": int(hp.buffer_size)}  # type: ignore[union-attr]
    agent_class = DoubleDQN if hp.double_q else DQN  # type: ignore[union-attr]
    agent = agent_class(info, EpsGreedy(epsilon=epsilon), TorchApproximator, approximator_params=approximator_params,
                        **kwargs)
    native = {"approximator": "TorchApproximator", "optimizer": _plain_optimizer(optimizer), "loss": "F.smooth_l1_loss",
              "policy": "EpsGreedy(ScheduledEpsilon)",
              "epsilon": {"initial": epsilon.initial_value, "final": epsilon.final, "decay_steps": epsilon.decay_steps,
                          "warm_up": epsilon.warm_up}, **kwargs}
    return agent, native


def _critic_params(lr: float, info: MDPInfo, network: dict[str, Any], n_models: int,
                   loss: Callable[..., torch.Tensor] = F.mse_loss) -> dict[str, Any]:
    """Each critic: its own Adam on ``loss`` (MushroomRL fits an ensemble's models one by one)."""
    observation, action = info.observation_space.shape[0], info.action_space.shape[0]
    params = {"network": CriticNetwork, "input_shape": (observation + action,), "output_shape": (1,),
              "optimizer": _adam(lr), "loss": loss, **network}
    if n_models > 1:
        params["n_models"] = n_models
    return params


def _deterministic(workload: WorkloadLike, settings: dict[str, Any], info: MDPInfo,
                   network: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from mushroom_rl.algorithms.actor_critic import DDPG, TD3
    from mushroom_rl.policy import ClippedGaussianPolicy

    hp = workload.hyperparameters
    n_actions = int(info.action_space.shape[0])
    sigma = float(hp.exploration_noise)  # type: ignore[union-attr]
    # ClippedGaussianPolicy draws np.random.multivariate_normal(mu, sigma): sigma is the covariance
    policy_params = {"sigma": np.eye(n_actions) * sigma**2, "low": info.action_space.low, "high": info.action_space.high}
    actor_params = {"network": MLPNetwork, "input_shape": info.observation_space.shape, "output_shape": (n_actions,),
                    "squash": True, **network}
    actor_optimizer = _adam(hp.learning_rate)  # type: ignore[union-attr]
    td3 = workload.algorithm == "TD3"
    critic_params = _critic_params(float(hp.learning_rate), info, network, 2 if td3 else 1)  # type: ignore[union-attr]
    kwargs: dict[str, Any] = {"batch_size": int(hp.minibatch_size), "initial_replay_size": int(hp.learning_starts),  # type: ignore[union-attr]
                              "max_replay_size": int(hp.buffer_size), "tau": float(hp.tau)}  # type: ignore[union-attr]
    if td3:
        kwargs.update(policy_delay=int(hp.policy_delay), noise_std=float(hp.target_policy_noise),  # type: ignore[union-attr]
                      noise_clip=float(hp.target_noise_clip))  # type: ignore[union-attr]
    agent_class = TD3 if td3 else DDPG
    agent = agent_class(info, ClippedGaussianPolicy, policy_params, actor_params, actor_optimizer, critic_params,
                        **kwargs)
    native = {"policy_class": "ClippedGaussianPolicy", "policy_params": {"sigma": f"eye({n_actions}) * {sigma:g}**2",
                                                                          "low": -1.0, "high": 1.0},
              "actor_optimizer": _plain_optimizer(actor_optimizer),
              "critic_params": {"optimizer": _plain_optimizer(critic_params["optimizer"]), "loss": "F.mse_loss",
                                "n_models": 2 if td3 else 1}, **kwargs}
    return agent, native


def _sac(workload: WorkloadLike, settings: dict[str, Any], info: MDPInfo,
         network: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from mushroom_rl.algorithms.actor_critic import SAC

    hp = workload.hyperparameters
    n_actions = int(info.action_space.shape[0])
    actor = {"network": MLPNetwork, "input_shape": info.observation_space.shape, "output_shape": (n_actions,),
             **network}
    actor_optimizer = _adam(hp.learning_rate)  # type: ignore[union-attr]
    # the canonical SAC critic loss: 0.5 * sum_i mean((Q_i - y)^2)
    critic_params = _critic_params(float(hp.learning_rate), info, network, 2, ScaledMSE(0.5))  # type: ignore[union-attr]
    fixed = hp.entropy_coef != "auto"  # type: ignore[union-attr]
    kwargs: dict[str, Any] = {"batch_size": int(hp.minibatch_size), "initial_replay_size": int(hp.learning_starts),  # type: ignore[union-attr]
                              "max_replay_size": int(hp.buffer_size), "warmup_transitions": int(hp.learning_starts),  # type: ignore[union-attr]
                              "tau": float(hp.tau), "lr_alpha": 0.0 if fixed else float(hp.learning_rate),  # type: ignore[union-attr]
                              "use_log_alpha_loss": True, "log_std_min": LOG_STD_BOUNDS[0],
                              "log_std_max": LOG_STD_BOUNDS[1]}
    agent = SAC(info, actor, dict(actor), actor_optimizer, critic_params, **kwargs)
    if fixed:
        with torch.no_grad():
            agent._log_alpha.fill_(float(np.log(float(hp.entropy_coef))))  # type: ignore[union-attr]
    native = {"actor_mu_params": {"network": "MLPNetwork"}, "actor_sigma_params": {"network": "MLPNetwork"},
              "actor_optimizer": _plain_optimizer(actor_optimizer),
              "critic_params": {"optimizer": _plain_optimizer(critic_params["optimizer"]),
                                "loss": "0.5 * F.mse_loss", "n_models": 2},
              "log_alpha": "learned from 0" if not fixed else float(np.log(float(hp.entropy_coef))), **kwargs}  # type: ignore[union-attr]
    return agent, native


# -------------------------------------------------------------------------------------------------
# tracing, policies and the training loop
# -------------------------------------------------------------------------------------------------


def main_optimizer(agent: Any, algorithm: str) -> Any:
    """The optimizer whose steps are the run's gradient steps: PPO's policy Adam, DQN's Q-network
    Adam, the (first) critic's Adam of SAC, TD3 and DDPG."""
    if algorithm == "PPO":
        return agent._optimizer
    approximator = agent.approximator if algorithm == "DQN" else agent._critic_approximator
    return approximator[0]._optimizer


def trace_schedule(setup: MushroomSetup, context: TrainingContext) -> None:
    """Trace from inside MushroomRL: each step of :func:`main_optimizer` (``gradient_step``), each
    target update (DQN: ``_update_target``, the hard copy; the others: the Polyak step of the target
    critic(s)), and each new value of DQN's epsilon (``exploration``). Updates are traced by the
    fit callback (:func:`run_training`)."""
    agent, algorithm = setup.agent, setup.workload.algorithm
    optimizer = main_optimizer(agent, algorithm)
    step = optimizer.step

    def traced_step(*args: Any, **kwargs: Any) -> Any:
        context.trace("gradient_step")
        return step(*args, **kwargs)

    optimizer.step = traced_step
    if algorithm == "PPO":
        return
    update_target = agent._update_target
    if algorithm == "DQN":
        def traced_copy() -> None:
            context.trace("target_sync")
            update_target()

        agent._update_target = traced_copy
        agent.policy._epsilon.on_change = lambda value: context.trace("exploration", value)
        return
    critic_target = agent._target_critic_approximator

    def traced_polyak(online: Any, target: Any) -> None:
        if target is critic_target:
            context.trace("target_sync")
        update_target(online, target)

    agent._update_target = traced_polyak


def policy_fn(setup: MushroomSetup, deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
    """A batch-observations -> batch-actions callable over MushroomRL's live networks."""
    agent, algorithm = setup.agent, setup.workload.algorithm
    space = setup.environment.env.action_space
    bounds = setup.action_bounds

    def to_env(actions: np.ndarray) -> np.ndarray:
        if bounds is None:
            return actions
        low, high = bounds
        return np.clip(low + (high - low) * (actions + 1.0) / 2.0, low, high).astype(np.float32)

    def act(observations: np.ndarray) -> np.ndarray:
        obs = np.asarray(observations, dtype=np.float32).reshape(len(observations), -1)
        state = torch.as_tensor(obs)
        with torch.no_grad():
            if algorithm == "DQN":
                q = agent.approximator.predict(obs)
                return np.argmax(q, axis=1)
            if algorithm == "PPO":
                distribution = agent.policy.distribution_t(state)
                if setup.environment.discrete:
                    chosen = torch.argmax(distribution.logits, dim=-1) if deterministic else distribution.sample()
                    return chosen.reshape(-1).numpy()
                chosen = distribution.mean if deterministic else distribution.sample()
                return np.clip(chosen.numpy(), space.low, space.high)
            if algorithm == "SAC":
                if deterministic:
                    mean = agent.policy._mu_approximator.predict(obs, output_tensor=True)
                    return to_env(torch.tanh(mean).numpy())
                return to_env(agent.policy.compute_action_and_log_prob_t(obs, compute_log_prob=False).numpy())
            actions = agent._actor_approximator.predict(obs)  # TD3, DDPG: no exploration noise, as SB3's predict
            return to_env(np.asarray(actions, dtype=np.float64))

    return act


def run_training(setup: MushroomSetup, context: TrainingContext) -> TrainingResult:
    """``Core.learn`` over the whole budget, the harness's checkpoint after every fit (with the
    ``gradient_steps - 1`` extra fits before it), inside ``context.until_solved()``."""
    trace_schedule(setup, context)
    policy = policy_fn(setup, context.deterministic)
    agent, core = setup.agent, setup.core

    optimizer = main_optimizer(agent, setup.workload.algorithm)
    counted = {"steps": 0, "at_last_fit": 0}

    def count_step(*_: Any, **__: Any) -> None:
        counted["steps"] += 1

    optimizer.register_step_post_hook(count_step)

    def after_fit(_dataset: Any) -> None:
        for _ in range(setup.extra_fits):
            agent.fit([])
        # an update is a fit that stepped (off-policy fits before learning_starts only fill the memory)
        if counted["steps"] > counted["at_last_fit"]:
            context.trace("update")
        counted["at_last_fit"] = counted["steps"]
        context.checkpoint(policy, setup.env_steps)

    core.callbacks_fit = [after_fit]
    context.start_training()
    try:
        with context.until_solved():
            context.checkpoint(policy, 0)
            core.learn(n_steps=setup.n_steps, n_steps_per_fit=setup.n_steps_per_fit, quiet=True)
    finally:
        context.stop_training()
        setup.close()
    return TrainingResult(policy=policy, framework_env_steps=setup.env_steps,
                          native_config=setup.native)
