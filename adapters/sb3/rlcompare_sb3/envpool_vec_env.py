"""SB3's ``VecEnv`` over the harness's counted vector environment (``context.vector_env``), for
workloads with ``parallelism.simulation = "envpool"``.

SB3's vector environments reset an ended environment inside the step that ended it and hand its last
observation over in ``info["terminal_observation"]``, with ``info["TimeLimit.truncated"]`` saying
whether it was cut by the time limit (``stable_baselines3/common/vec_env/dummy_vec_env.py``,
``step_wait``); on-policy algorithms bootstrap truncated episodes from that observation, off-policy
ones store it as the transition's next observation. The harness's EnvPool vector environment in
Gymnasium's ``SAME_STEP`` autoreset mode does the same reset (``EnvPool.reset(env_id)`` of the ended
environments, no extra step) and keeps the last observations in ``info["final_obs"]``: this class only
translates between the two conventions, so every step SB3 takes is one EnvPool step the harness counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv


class GymnasiumVectorVecEnv(VecEnv):
    """A Gymnasium vector environment in ``SAME_STEP`` autoreset mode as an SB3 ``VecEnv``."""

    def __init__(self, env: Any) -> None:
        import gymnasium

        if env.metadata.get("autoreset_mode") != gymnasium.vector.AutoresetMode.SAME_STEP:
            raise ValueError("SB3 needs a vector environment in SAME_STEP autoreset mode")
        self.env = env
        self._actions: np.ndarray | None = None
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]  # SB3's seed(s) sets s, s + 1, ...: EnvPool's own per-env seeding
        maybe_options = {"options": self._options[0]} if self._options[0] else {}
        observations, _ = self.env.reset(seed=seed, **maybe_options)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return np.asarray(observations)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        observations, rewards, terminated, truncated, info = self.env.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": bool(truncated[i] and not terminated[i])}
                                       for i in range(self.num_envs)]
        if dones.any():
            final = info["final_obs"]
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = final[i]
        return np.asarray(observations), np.asarray(rewards, dtype=np.float32), dones, infos

    def close(self) -> None:
        self.env.close()

    # SB3 asks these of its vector environments; EnvPool's environments have no Python objects to reach
    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == "render_mode":
            return [None for _ in self._get_indices(indices)]
        raise AttributeError(f"EnvPool's environments have no attribute {attr_name!r} to read")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"EnvPool's environments have no attribute {attr_name!r} to set")

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        raise AttributeError(f"EnvPool's environments have no method {method_name!r} to call")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]
