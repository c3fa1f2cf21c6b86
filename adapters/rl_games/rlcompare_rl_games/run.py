"""One rl_games training run on the harness's environments (imports rl_games; used by ``train()``
and the parity probe).

rl_games reaches environments through ``vecenv.create_vec_env(env_name, num_actors, **env_config)``
(``rl_games/common/vecenv.py``): the configuration registered under ``env_name`` names a
``vecenv_type``, whose constructor builds the vectorized env. :func:`register_harness_envs` registers
both for one run, so that the agent's own ``__init__`` builds a :class:`HarnessVecEnv` of the given
env factories.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from rlcompare.adapter import WorkloadLike, make_env

#: rl_games' ``vecenv_type`` of the harness's vectorized environment.
VECENV_TYPE = "RLCOMPARE_HARNESS"
_run_names = itertools.count()
#: The vectorized-env constructor of each registered name (one per run or probe in this process).
_CONSTRUCTORS: dict[str, Callable[[int], Any]] = {}


class HarnessVecEnv:
    """rl_games' ``IVecEnv`` over the harness's environments (``rl_games/common/ivecenv.py``).

    ``step`` steps each environment in turn and resets one whose episode ended in the same call (as
    rl_games' own ``RayVecEnv`` does), returning the new episode's first observation with
    ``done = terminated or truncated`` and ``info['time_outs']`` (truncated and not terminated, as
    rl_games' own Gymnasium wrapper reports it; the agent reads it only with ``value_bootstrap``).
    Continuous actions are clipped to the action space's bounds before they reach the environment,
    the canonical "clip when stepping" (the agent runs with ``clip_actions=False``). The first reset
    of environment ``i`` is seeded with ``seed * num_actors + i``.
    """

    def __init__(self, factories: Sequence[Callable[[], Any]], seed: int) -> None:
        self.envs = [factory() for factory in factories]
        self.seed_base = seed * len(self.envs)
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        self.discrete = isinstance(self.action_space, gymnasium.spaces.Discrete)
        self._seeded = False

    # -- IVecEnv -----------------------------------------------------------------------------------

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        actions = np.asarray(actions)
        observations, rewards = [], np.zeros(len(self.envs), dtype=np.float32)
        dones = np.zeros(len(self.envs), dtype=np.uint8)
        time_outs = np.zeros(len(self.envs), dtype=np.float32)
        for i, env in enumerate(self.envs):
            if self.discrete:
                action: Any = int(actions[i])
            else:
                action = np.clip(actions[i], self.action_space.low, self.action_space.high).astype(
                    self.action_space.dtype)
            obs, reward, terminated, truncated, _ = env.step(action)
            rewards[i] = reward
            if terminated or truncated:
                dones[i] = 1
                time_outs[i] = float(truncated and not terminated)
                obs, _ = env.reset()
            observations.append(obs)
        return self._stack(observations), rewards, dones, {"time_outs": time_outs}

    def reset(self) -> np.ndarray:
        observations = []
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=None if self._seeded else self.seed_base + i)
            observations.append(obs)
        self._seeded = True
        return self._stack(observations)

    def get_number_of_agents(self) -> int:
        return 1

    def has_action_masks(self) -> bool:
        return False

    def get_env_info(self) -> dict[str, Any]:
        return {"observation_space": self.observation_space, "action_space": self.action_space, "agents": 1,
                "value_size": 1}

    def seed(self, seed: int) -> None:
        self.seed_base = seed * len(self.envs)

    def set_train_info(self, env_frames: int, *args: Any, **kwargs: Any) -> None:
        pass

    def get_env_state(self) -> None:
        return None

    def set_env_state(self, env_state: Any) -> None:
        pass

    def close(self) -> None:
        for env in self.envs:
            env.close()

    @staticmethod
    def _stack(observations: list[Any]) -> np.ndarray:
        return np.stack([np.asarray(obs, dtype=np.float32) for obs in observations])


def register_harness_envs(env_id: str, env_kwargs: dict[str, Any], make_vec_env: Callable[[int], Any]) -> str:
    """Register a fresh rl_games environment name whose vectorized env is ``make_vec_env(num_actors)``;
    return the name. Its ``env_creator`` (read only by rl_games' players, never by training) makes an
    uncounted environment of the same id."""
    from rl_games.common import env_configurations, vecenv

    name = f"rlcompare-{env_id.replace('/', '-')}-{next(_run_names)}"
    env_configurations.register(name, {"vecenv_type": VECENV_TYPE,
                                       "env_creator": lambda **_: make_env(env_id, dict(env_kwargs))})
    _CONSTRUCTORS[name] = make_vec_env
    vecenv.register(VECENV_TYPE, lambda config_name, num_actors, **_: _CONSTRUCTORS[config_name](num_actors))
    return name


def _space_kind(env_id: str, env_kwargs: dict[str, Any]) -> str:
    env = make_env(env_id, dict(env_kwargs))
    try:
        return "discrete" if isinstance(env.action_space, gymnasium.spaces.Discrete) else "continuous"
    finally:
        env.close()


def rl_games_params(workload: WorkloadLike, native: dict[str, Any], env_name: str, seed: int,
                    train_dir: Path) -> dict[str, Any]:
    """The full ``params`` rl_games' ``Runner.load_config`` takes, from the adapter's mapping."""
    from rlcompare_rl_games import AGENTS, NO_CHECKPOINTS

    network = dict(native["network"])
    config = dict(native["config"])
    if workload.algorithm == "SAC":
        algo, model = "sac", "soft_actor_critic"
    else:
        kind = _space_kind(workload.env, dict(workload.env_kwargs))
        algo = AGENTS[kind]
        if kind == "discrete":
            model = "discrete_a2c"
            network["space"] = {"discrete": {}}
            for key in ("bounds_loss_coef", "clip_actions"):  # continuous only
                config.pop(key, None)
        else:
            model = "continuous_a2c_logstd"
            network["space"] = {"continuous": {
                "mu_activation": "None", "sigma_activation": "None", "mu_init": {"name": "default"},
                "sigma_init": {"name": "const_initializer", "val": 0.0}, "fixed_sigma": True}}
    config.update({
        "name": "run", "full_experiment_name": "run", "env_name": env_name, "env_config": {},
        "device": "cpu", "multi_gpu": False, "print_stats": False, "save_frequency": 0,
        "save_best_after": NO_CHECKPOINTS, "train_dir": str(train_dir), "max_epochs": -1, "max_frames": -1,
        "use_diagnostics": False,
    })
    return {"seed": seed, "torch_threads": int(workload.parallelism.threads_per_worker),
            "algo": {"name": algo}, "model": {"name": model}, "network": network, "config": config}


class BudgetReached(BaseException):  # noqa: N818 - a stop, not an error
    """Raised from the observer when the framework's frame count reaches the budget: it ends the
    agent's own ``train()`` loop, which has no stop of its own that counts correctly."""


def _observer_class() -> type:
    from rl_games.common.algo_observer import DefaultAlgoObserver

    class HarnessObserver(DefaultAlgoObserver):
        """rl_games' observer hook: after each epoch's frames are counted (``after_print_stats``,
        called once or twice per epoch by ``train()``), hand the harness the update."""

        def __init__(self) -> None:
            super().__init__()
            self.after_epoch: Callable[[Any], None] | None = None
            self.last_epoch = 0

        def after_print_stats(self, frame: int, epoch_num: int, total_time: float) -> None:
            super().after_print_stats(frame, epoch_num, total_time)
            if epoch_num != self.last_epoch and self.after_epoch is not None:
                self.last_epoch = epoch_num
                self.after_epoch(self.algo)

    return HarnessObserver


@dataclass
class RlGamesSetup:
    """Everything built for one run; :meth:`run` trains, :attr:`env_steps` is rl_games' own count."""

    workload: WorkloadLike
    agent: Any
    observer: Any
    native: dict[str, Any] = field(default_factory=dict)
    trace: Callable[..., None] | None = None

    @property
    def env_steps(self) -> int:
        """Env steps as rl_games counts them: ``agent.frame`` (PPO: ``horizon_length x num_actors`` per
        epoch; SAC: ``num_actors`` per vector step)."""
        return int(self.agent.frame)

    def run(self, after_update: Callable[[int], Any]) -> None:
        """The agent's own ``train()``, until its frame count reaches the workload's budget."""
        budget = self.workload.env_steps

        def after_epoch(agent: Any) -> None:
            if self.workload.algorithm != "SAC" or agent.epoch_num >= agent.num_warmup_steps:
                if self.trace is not None:
                    self.trace("update")
            after_update(int(agent.frame))
            if agent.frame >= budget:
                raise BudgetReached

        self.observer.after_epoch = after_epoch
        try:
            self.agent.train()
        except BudgetReached:
            pass

    def policy_fn(self, deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
        import torch

        agent = self.agent
        space = agent.vec_env.action_space if hasattr(agent, "vec_env") else None
        discrete = isinstance(space, gymnasium.spaces.Discrete)
        low, high = (None, None) if discrete else (space.low, space.high)

        def act(observations: np.ndarray) -> np.ndarray:
            batch = torch.as_tensor(np.asarray(observations, dtype=np.float32)).reshape(len(observations), -1)
            model = agent.model
            training = model.training
            model.eval()
            try:
                with torch.no_grad():
                    if self.workload.algorithm == "SAC":
                        # SACAgent.act: tanh-squashed sample, or tanh of the mean, rescaled to the bounds
                        actions = agent.act(batch, space.shape, sample=not deterministic).numpy()
                        return np.clip(actions, low, high)
                    res = model({"is_train": False, "prev_actions": None, "obs": batch, "rnn_states": None})
                    if discrete:
                        chosen = torch.argmax(res["logits"], dim=-1) if deterministic else res["actions"]
                        return chosen.reshape(len(observations)).numpy().astype(np.int64)
                    chosen = res["mus"] if deterministic else res["actions"]
                    return np.clip(chosen.reshape(len(observations), -1).numpy(), low, high)
            finally:
                model.train(training)

        return act

    def close(self) -> None:
        vec_env = getattr(self.agent, "vec_env", None)
        if vec_env is not None:
            vec_env.close()
        writer = getattr(self.agent, "writer", None)
        if writer is not None:
            writer.close()


def build(workload: WorkloadLike, native: dict[str, Any], factories: Sequence[Callable[[], Any]], seed: int,
          train_dir: Path, trace: Callable[..., None] | None = None) -> RlGamesSetup:
    """The agent, made as rl_games' ``Runner.run_train`` makes it (no ``torch.compile``, no checkpoint),
    on a :class:`HarnessVecEnv` of ``factories``."""
    factories = list(factories)
    return build_on(workload, native, lambda _num_actors: HarnessVecEnv(factories, seed), seed, train_dir, trace)


def build_on(workload: WorkloadLike, native: dict[str, Any], make_vec_env: Callable[[int], Any], seed: int,
             train_dir: Path, trace: Callable[..., None] | None = None) -> RlGamesSetup:
    """The agent on the vectorized env ``make_vec_env(num_actors)`` builds (the parity probe's replays
    its batch)."""
    from rl_games.torch_runner import Runner

    env_name = register_harness_envs(workload.env, dict(workload.env_kwargs), make_vec_env)
    params = rl_games_params(workload, native, env_name, seed, Path(train_dir))
    observer = _observer_class()()
    runner = Runner(algo_observer=observer)
    runner.load_config(params)
    agent = runner.algo_factory.create(runner.algo_name, base_name="run", params=runner.params)
    if trace is not None:
        _trace_steps(agent, workload.algorithm, trace)
    recorded = {"algo": params["algo"], "model": params["model"], "network": params["network"], "seed": seed,
                "torch_threads": params["torch_threads"],
                "config": {key: value for key, value in params["config"].items()
                           if key not in ("features", "reward_shaper", "network")}}
    recorded["config"]["reward_shaper"] = {}
    return RlGamesSetup(workload, agent, observer, recorded, trace)


def _trace_steps(agent: Any, algorithm: str, trace: Callable[..., None]) -> None:
    """Trace each step of the main optimizer (SAC: the critics') as a gradient step, and SAC's Polyak
    update of the target critics as a target sync."""
    optimizer = agent.critic_optimizer if algorithm == "SAC" else agent.optimizer
    step = optimizer.step

    def traced_step(*args: Any, **kwargs: Any) -> Any:
        trace("gradient_step")
        return step(*args, **kwargs)

    optimizer.step = traced_step
    if algorithm == "SAC":
        sync = agent.update_target_weights

        def traced_sync(*args: Any, **kwargs: Any) -> Any:
            trace("target_sync")
            return sync(*args, **kwargs)

        agent.update_target_weights = traced_sync
