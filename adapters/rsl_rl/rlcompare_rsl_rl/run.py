"""One RSL-RL training run (imports torch, tensordict and RSL-RL): the harness's environments as an
RSL-RL ``VecEnv``, the ``OnPolicyRunner`` built from the adapter's ``train_cfg``, and the policy
handed to the harness.
"""

from __future__ import annotations

import copy
import os
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

# RSL-RL's logger imports GitPython at module level (rsl_rl/utils/logger.py), which refuses to import
# where no git executable is found unless told to stay quiet; the adapter logs nothing through it.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from rsl_rl.env import VecEnv  # noqa: E402
from rsl_rl.runners import OnPolicyRunner  # noqa: E402
from tensordict import TensorDict  # noqa: E402

from rlcompare_rsl_rl import OBS_GROUP, REPORT_TIME_OUTS  # noqa: E402

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext, WorkloadLike

DEVICE = "cpu"


class HarnessVecEnv(VecEnv):
    """RSL-RL's vectorized environment (``rsl_rl/env/vec_env.py``) over Gymnasium environments.

    The environments are made by the given factories (the harness's counted ones in training) and
    stepped one after the other in this process. As RSL-RL expects of its simulators, the env resets
    itself: an environment whose episode ended (terminated or truncated) is reset in the same
    ``step`` and the observation returned for it is the new episode's first. ``dones`` is
    ``terminated | truncated``; ``extras["time_outs"]`` (the truncations) is reported only when
    :data:`rlcompare_rsl_rl.REPORT_TIME_OUTS` says so (its docstring: why not). Actions are clipped
    to the action space's bounds before they reach the environment (RSL-RL's Gaussian samples are
    unbounded; the rollout keeps the unclipped sample, as canonical PPO does). Environment ``i``'s
    first reset is seeded with ``seed * num_envs + i``, so no two envs of any two run seeds share a
    stream; its later resets continue from there.
    """

    def __init__(self, env_fns: Sequence[Callable[[], Any]], seed: int, report_time_outs: bool = REPORT_TIME_OUTS) -> None:
        import gymnasium

        self.envs = [make() for make in env_fns]
        space = self.envs[0].action_space
        if not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f"RSL-RL's PPO acts in continuous (Box) action spaces, not {type(space).__name__}")
        self.action_space = space
        self.num_envs = len(self.envs)
        self.num_actions = int(np.prod(space.shape))
        spec = self.envs[0].spec
        self.max_episode_length = int(spec.max_episode_steps) if spec is not None and spec.max_episode_steps else 0
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long)
        self.device = DEVICE
        self.cfg: dict[str, Any] = {}
        self.report_time_outs = report_time_outs
        self._low = space.low.astype(np.float64)
        self._high = space.high.astype(np.float64)
        first = [env.reset(seed=seed * self.num_envs + index)[0] for index, env in enumerate(self.envs)]
        self._obs = torch.as_tensor(np.stack([np.asarray(o, dtype=np.float32).reshape(-1) for o in first]))

    def get_observations(self) -> TensorDict:
        return TensorDict({OBS_GROUP: self._obs.clone()}, batch_size=[self.num_envs], device=self.device)

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict[str, Any]]:
        batch = np.clip(actions.detach().cpu().numpy().astype(np.float64), self._low.reshape(-1),
                        self._high.reshape(-1))
        observations, rewards = [], np.zeros(self.num_envs, dtype=np.float32)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        for index, env in enumerate(self.envs):
            action = batch[index].reshape(self.action_space.shape).astype(self.action_space.dtype)
            obs, reward, term, trunc, _info = env.step(action)
            rewards[index] = float(reward)
            terminated[index], truncated[index] = bool(term), bool(trunc)
            if term or trunc:
                obs, _ = env.reset()
            observations.append(np.asarray(obs, dtype=np.float32).reshape(-1))
        dones = terminated | truncated
        self.episode_length_buf += 1
        self.episode_length_buf[torch.as_tensor(dones)] = 0
        self._obs = torch.as_tensor(np.stack(observations))
        extras: dict[str, Any] = {}
        if self.report_time_outs:
            extras["time_outs"] = torch.as_tensor(truncated & ~terminated)
        return (self.get_observations(), torch.as_tensor(rewards), torch.as_tensor(dones.astype(np.int64)),
                extras)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def seed_everything(seed: int) -> None:
    """RSL-RL draws from torch's global generator (network initialization, sampling, minibatch
    permutations); the adapter seeds it, numpy's and Python's."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


class RslRlRun:
    """The runner for one workload, driven one learning iteration at a time."""

    def __init__(self, workload: WorkloadLike, train_cfg: dict[str, Any], env_fns: Sequence[Callable[[], Any]],
                 seed: int) -> None:
        self.workload = workload
        self.train_cfg = copy.deepcopy(train_cfg)
        self.seed = seed
        seed_everything(seed)
        self.env = HarnessVecEnv(env_fns, seed)
        # the runner pops class names out of the configuration it is given: it gets a copy
        self.runner = OnPolicyRunner(self.env, copy.deepcopy(train_cfg), log_dir=None, device=DEVICE)
        self.iterations = 0

    @property
    def alg(self) -> Any:
        return self.runner.alg

    @property
    def collection_size(self) -> int:
        """Env steps per learning iteration, as RSL-RL's ``Logger.log`` counts them
        (``num_steps_per_env * num_envs``)."""
        return int(self.train_cfg["num_steps_per_env"]) * self.env.num_envs

    @property
    def env_steps(self) -> int:
        """RSL-RL's own count: iterations done x collection size."""
        return self.iterations * self.collection_size

    @property
    def native(self) -> dict[str, Any]:
        return {**self.train_cfg, "runner": "rsl_rl.runners.OnPolicyRunner", "device": DEVICE,
                "log_dir": None, "seed": self.seed, "learning_iterations": self.iterations,
                "learn": {"num_learning_iterations": 1, "init_at_random_ep_len": False},
                "env": {"class": "rlcompare_rsl_rl.run.HarnessVecEnv", "num_envs": self.env.num_envs,
                        "time_outs": self.env.report_time_outs, "actions": "clipped to the action space's bounds"}}

    def iterate(self) -> None:
        """One learning iteration: a rollout of every env, GAE, the epochs of minibatch steps."""
        self.runner.learn(num_learning_iterations=1)
        self.iterations += 1

    def trace_into(self, context: TrainingContext) -> None:
        """Trace the schedule from inside RSL-RL: each call of ``PPO.update`` is an update, each step
        of its optimizer a gradient step (one wrapped Python call each)."""
        alg = self.alg
        update, step = alg.update, alg.optimizer.step

        def traced_update(*args: Any, **kwargs: Any) -> Any:
            context.trace("update")
            return update(*args, **kwargs)

        def traced_step(*args: Any, **kwargs: Any) -> Any:
            context.trace("gradient_step")
            return step(*args, **kwargs)

        alg.update, alg.optimizer.step = traced_update, traced_step

    def policy_fn(self, deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
        """Batch of observations in, batch of actions out: the live actor's mean (deterministic) or a
        sample of its Gaussian, clipped to the action space's bounds as the env clips them."""
        actor = self.alg.get_policy()
        space = self.env.action_space

        def act(observations: np.ndarray) -> np.ndarray:
            rows = np.asarray(observations, dtype=np.float32).reshape(len(observations), -1)
            obs = TensorDict({OBS_GROUP: torch.as_tensor(rows)}, batch_size=[len(rows)], device=DEVICE)
            with torch.no_grad():
                actions = actor(obs, stochastic_output=not deterministic)
            batch = actions.cpu().numpy().reshape(len(rows), *space.shape)
            return np.clip(batch, space.low, space.high).astype(space.dtype)

        return act

    def close(self) -> None:
        self.env.close()
