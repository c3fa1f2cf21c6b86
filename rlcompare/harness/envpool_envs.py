"""EnvPool as the simulation backend (``parallelism.simulation = "envpool"``), counted by the harness.

EnvPool (https://github.com/sail-sg/envpool) steps a batch of environments in C++. A workload that
asks for it gets, from :meth:`rlcompare.harness.context.TrainingContext.vector_env`, one
:class:`CountedEnvPool`: a Gymnasium vector environment over one EnvPool of the worker's environments,
whose every step the harness counts into the same counter slots as :class:`~rlcompare.harness.counted_envs.CountingWrapper`
(env ``i`` into slot ``first_slot + i``), so a run's ``env_steps`` mean the same with either backend.

What EnvPool does and what the wrapper makes of it (envpool 1.2.0, ``envpool/python/envpool.py`` and
``gymnasium_envpool.py``; measured by :func:`dynamics_check` and ``tests/test_envpool.py``):

- **Autoreset.** EnvPool resets an ended environment on the *next* ``step`` call, which ignores that
  environment's action and returns the first observation with reward 0 and ``elapsed_step`` 0:
  Gymnasium 1.x's ``NEXT_STEP`` mode. That step is no transition, and the harness does not count it
  (Gymnasium's ``SyncVectorEnv`` calls ``reset()`` there, which the counting wrapper does not count
  either). In ``SAME_STEP`` mode the wrapper resets the ended environments at once
  (``EnvPool.reset(env_id)``, which clears EnvPool's pending reset) and returns their first
  observations, the last ones in ``info["final_obs"]`` as Gymnasium's ``SyncVectorEnv`` does.
- **Seeds.** ``envpool.make(seed=s)`` seeds environment ``i`` with ``s + i``, as Gymnasium's
  ``reset(seed=s)`` seeds sub-environment ``i``; EnvPool cannot reseed, so a reset with another seed
  rebuilds the pool. EnvPool draws from its own generator (``std::mt19937``), not NumPy's, so the
  same seed gives other episodes than Gymnasium's environment: only the distributions agree.
- **Termination at the time limit.** EnvPool reports ``terminated = done and not truncated``: an
  episode that fails on its last allowed step is truncated only (Gymnasium's ``TimeLimit`` says both).
- **Dynamics.** Only the environments in :data:`CHECKED_ENVS` are offered: from EnvPool's
  observation (the state, or for Acrobot the angles recovered from their sines and cosines), one step
  of Gymnasium's environment gives EnvPool's next observation to float32 rounding, the same reward and
  the same termination, and the same time limits. EnvPool's ``Pendulum-v1`` is not: it integrates the
  angle with the *unclipped* velocity (gym 0.21's order; Gymnasium clips first), up to 0.02 rad apart
  whenever the speed saturates. Box2D, MuJoCo and Atari environments are not checked (EnvPool's Atari
  applies its own preprocessing by default).

The training environments are EnvPool's; evaluation stays on Gymnasium's environments, the same for
every run. Standard library, numpy and gymnasium (1.1 or newer, for ``AutoresetMode``) at import;
envpool itself when a pool is built.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from rlcompare.harness.counted_envs import EnvFactory, attach_counts, make_env
from rlcompare.harness.workload_view import WorkloadLike

#: The values of ``parallelism.simulation``.
GYMNASIUM, ENVPOOL = "gymnasium", "envpool"
SIMULATIONS = (GYMNASIUM, ENVPOOL)
#: The EnvPool release the checks below were made with (``pip install 'rlcompare[envpool]'``).
ENVPOOL_REQUIREMENT = "envpool==1.2.0"


def _cartesian(obs: np.ndarray) -> np.ndarray:
    return np.asarray(obs, dtype=np.float64)


def _acrobot(obs: np.ndarray) -> np.ndarray:
    # observation: cos θ1, sin θ1, cos θ2, sin θ2, θ1', θ2'; state: θ1, θ2, θ1', θ2'
    return np.array([math.atan2(obs[1], obs[0]), math.atan2(obs[3], obs[2]), obs[4], obs[5]], dtype=np.float64)


#: The environments EnvPool may simulate: each checked step by step against Gymnasium's
#: (:func:`dynamics_check`), with the map from EnvPool's observation to Gymnasium's ``state``.
CHECKED_ENVS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "CartPole-v1": _cartesian,
    "Acrobot-v1": _acrobot,
    "MountainCar-v0": _cartesian,
    "MountainCarContinuous-v0": _cartesian,
}
def _pendulum(obs: np.ndarray) -> np.ndarray:
    # observation: cos θ, sin θ, θ'; state: θ, θ'
    return np.array([math.atan2(obs[1], obs[0]), obs[2]], dtype=np.float64)


#: Maps for environments that are not offered, so that :func:`dynamics_check` shows how they differ.
STATE_MAPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {**CHECKED_ENVS, "Pendulum-v1": _pendulum}
#: Environments EnvPool has that are known to differ from Gymnasium's, and how.
KNOWN_DIFFERENT = {
    "Pendulum-v1": "EnvPool integrates the angle with the unclipped angular velocity (gym 0.21's order), "
                   "Gymnasium with the clipped one: up to 0.02 rad apart whenever the speed saturates at 8",
}


def simulation_of(workload: WorkloadLike) -> str:
    """The workload's ``parallelism.simulation`` (``"gymnasium"`` for a spec written before it existed)."""
    return str(getattr(workload.parallelism, "simulation", GYMNASIUM) or GYMNASIUM)


def envpool_installed() -> bool:
    return importlib.util.find_spec("envpool") is not None


def envpool_refusal(env_id: str, env_kwargs: dict[str, Any] | None = None, installed: bool | None = None) -> str | None:
    """Why EnvPool cannot simulate ``env_id`` for the harness, or None when it can."""
    if env_id not in CHECKED_ENVS:
        known = KNOWN_DIFFERENT.get(env_id)
        why = f"EnvPool's {env_id} differs from Gymnasium's ({known})" if known else (
            f"{env_id} is not among the environments checked equal to Gymnasium's under EnvPool")
        return f"{why}; EnvPool simulates {', '.join(CHECKED_ENVS)}"
    if env_kwargs:
        return (f"EnvPool takes no env_kwargs here (got {sorted(env_kwargs)}): its environments are made with "
                "their registered settings only")
    if not (envpool_installed() if installed is None else installed):
        return f"the envpool package is not installed (pip install 'rlcompare[envpool]', which pins {ENVPOOL_REQUIREMENT})"
    return None


def _make_pool(env_id: str, num_envs: int, seed: int, threads: int) -> Any:
    import envpool

    # sync mode (batch_size = num_envs): every step steps every environment, results in env order
    return envpool.make(env_id, env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, seed=int(seed),
                        num_threads=int(threads))


class CountedEnvPool(gymnasium.vector.VectorEnv):
    """One EnvPool of ``num_envs`` environments as a Gymnasium vector environment, every real step
    counted into the harness's counter slots ``first_slot .. first_slot + num_envs - 1``.

    ``autoreset_mode``: ``NEXT_STEP`` (EnvPool's own; the reset step is not counted) or ``SAME_STEP``
    (ended environments reset inside the step that ended them; ``info["final_obs"]`` holds their last
    observations, masked by ``info["_final_obs"]``). The spaces are Gymnasium's environment's (the
    ones the harness evaluates on). ``reset(options={"reset_mask": mask})`` resets some environments.
    """

    def __init__(self, env_id: str, num_envs: int, seed: int, counter_path: str | Path | None,
                 first_slot: int = 0, threads: int = 1,
                 autoreset_mode: gymnasium.vector.AutoresetMode | str = gymnasium.vector.AutoresetMode.NEXT_STEP) -> None:
        mode = gymnasium.vector.AutoresetMode(autoreset_mode)
        if mode is gymnasium.vector.AutoresetMode.DISABLED:
            raise ValueError("CountedEnvPool autoresets: NEXT_STEP (EnvPool's own) or SAME_STEP")
        reference = make_env(env_id)
        try:
            self.single_observation_space = reference.observation_space
            self.single_action_space = reference.action_space
        finally:
            reference.close()
        self.env_id = env_id
        self.num_envs = int(num_envs)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": mode, "simulation": ENVPOOL}
        self.autoreset_mode = mode
        self.threads = int(threads)
        self._seed = int(seed)
        self._pool = _make_pool(env_id, self.num_envs, self._seed, self.threads)
        self._pending = np.zeros(self.num_envs, dtype=bool)  # NEXT_STEP: ended, reset by the next step
        self._counter_path = None if counter_path is None else str(counter_path)
        self._first_slot = int(first_slot)
        self._table: np.ndarray | None = None
        self._discrete = isinstance(self.single_action_space, gymnasium.spaces.Discrete)

    # -- counting ------------------------------------------------------------------------------------

    def _slots(self) -> np.ndarray | None:
        if self._table is None and self._counter_path is not None:
            table = np.frombuffer(attach_counts(self._counter_path), dtype=np.int64).reshape(-1, 2)
            end = self._first_slot + self.num_envs
            if self._first_slot < 0 or end > len(table):
                raise IndexError(f"env slots {self._first_slot}..{end - 1} outside the {len(table)} slots of "
                                 f"{self._counter_path}")
            self._table = table[self._first_slot:end]
        return self._table

    def _count(self, stepped: np.ndarray | None, ended: np.ndarray) -> None:
        table = self._slots()
        if table is None:
            return
        if stepped is None:
            table[:, 0] += 1
        else:
            table[:, 0] += stepped
        if ended.any():
            table[:, 1] += ended

    # -- the vector env ----------------------------------------------------------------------------

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        seed = self._base_seed(seed)
        if seed is not None and seed != self._seed:  # EnvPool cannot reseed: a new pool, env i seeded seed + i
            self._pool.close()
            self._seed = seed
            self._pool = _make_pool(self.env_id, self.num_envs, seed, self.threads)
        mask = None if options is None else options.get("reset_mask")
        if mask is not None:
            ids = np.flatnonzero(np.asarray(mask, dtype=bool)).astype(np.int32)
            observations = self._last_obs.copy()
            if len(ids):
                fresh, info = self._pool.reset(ids)
                observations[np.asarray(info["env_id"])] = fresh
                self._pending[ids] = False
            self._last_obs = observations
            return observations.copy(), {}
        observations, info = self._pool.reset()
        self._pending[:] = False
        self._last_obs = np.array(observations)
        return np.array(observations), dict(info)

    def _base_seed(self, seed: int | list[int | None] | None) -> int | None:
        if seed is None or isinstance(seed, (int, np.integer)):
            return None if seed is None else int(seed)
        seeds = list(seed)
        if all(item is None for item in seeds):
            return None
        if len(seeds) != self.num_envs or any(item != seeds[0] + i for i, item in enumerate(seeds)):
            raise ValueError(f"EnvPool seeds its environments seed, seed + 1, ...: got {seeds}")
        return int(seeds[0])

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = np.asarray(actions)
        if self._discrete:
            actions = actions.reshape(self.num_envs)
        observations, rewards, terminated, truncated, info = self._pool.step(actions)
        observations = np.array(observations)
        ended = np.logical_or(terminated, truncated)
        info = dict(info)
        if self.autoreset_mode is gymnasium.vector.AutoresetMode.NEXT_STEP:
            self._count(~self._pending, ended)
            self._pending = ended
        else:
            self._count(None, ended)
            if ended.any():
                ids = np.flatnonzero(ended).astype(np.int32)
                final = np.full(self.num_envs, None, dtype=object)
                for i in ids:
                    final[i] = observations[i].copy()
                fresh, reset_info = self._pool.reset(ids)
                observations[np.asarray(reset_info["env_id"])] = fresh
                info["final_obs"], info["_final_obs"] = final, ended.copy()
                info["final_info"], info["_final_info"] = np.full(self.num_envs, None, dtype=object), ended.copy()
        self._last_obs = observations
        return (observations.copy(), np.asarray(rewards, dtype=np.float64), np.asarray(terminated, dtype=bool),
                np.asarray(truncated, dtype=bool), info)

    def close_extras(self, **kwargs: Any) -> None:
        pool, self._pool = getattr(self, "_pool", None), None
        if pool is not None:
            pool.close()
        self._table = None


# -------------------------------------------------------------------------------------------------
# the vector environment a workload asks for
# -------------------------------------------------------------------------------------------------


def make_vector_env(workload: WorkloadLike, seed: int, counter_path: str | Path,
                    autoreset_mode: gymnasium.vector.AutoresetMode | str = gymnasium.vector.AutoresetMode.NEXT_STEP,
                    num_envs: int | None = None, first_slot: int = 0,
                    threads: int | None = None) -> gymnasium.vector.VectorEnv:
    """The workload's training environments (slots ``first_slot ..``, ``num_envs`` of them: default every
    environment of the workload) as one counted Gymnasium vector environment: one
    :class:`CountedEnvPool` when the workload asks for EnvPool (``threads`` EnvPool threads, default
    the workload's workers), else Gymnasium's ``SyncVectorEnv`` (``AsyncVectorEnv`` with more than one
    worker) over the harness's counted factories, not yet reset (Gymnasium's environments are seeded
    by ``reset(seed=...)``; the pool is built with ``seed``)."""
    par = workload.parallelism
    count = int(par.total_envs if num_envs is None else num_envs)
    mode = gymnasium.vector.AutoresetMode(autoreset_mode)
    if simulation_of(workload) == ENVPOOL:
        refusal = envpool_refusal(workload.env, dict(workload.env_kwargs))
        if refusal is not None:
            raise ValueError(f"parallelism.simulation = 'envpool': {refusal}")
        return CountedEnvPool(workload.env, count, seed, counter_path, first_slot,
                              int(par.workers if threads is None else threads), mode)
    factories = [EnvFactory(workload.env, dict(workload.env_kwargs), str(counter_path), slot)
                 for slot in range(first_slot, first_slot + count)]
    vector_class = gymnasium.vector.SyncVectorEnv if par.workers == 1 else gymnasium.vector.AsyncVectorEnv
    return vector_class(factories, autoreset_mode=mode)


# -------------------------------------------------------------------------------------------------
# the equivalence check: EnvPool's dynamics against Gymnasium's
# -------------------------------------------------------------------------------------------------


#: First observations each side compares.
FIRST_OBSERVATIONS = 256


@dataclass(frozen=True)
class DynamicsReport:
    """EnvPool's environment against Gymnasium's, one transition at a time (:func:`dynamics_check`)."""

    env_id: str
    transitions: int
    episodes: int
    max_observation_error: float
    max_reward_error: float
    termination_mismatches: int
    time_limit: tuple[int | None, int | None]  # (EnvPool's, Gymnasium's)
    #: ((low, high) of EnvPool's first observations, (low, high) of Gymnasium's), per dimension.
    first_observations: tuple[tuple[list[float], list[float]], tuple[list[float], list[float]]]

    @property
    def equivalent(self) -> bool:
        """Equal to float32 rounding (1e-5), same rewards, terminations and time limits, and EnvPool's
        first observations inside the range of Gymnasium's (a twentieth of its width of slack),
        spreading over at least half of it."""
        (pool_low, pool_high), (gym_low, gym_high) = (np.asarray(pair, dtype=np.float64) for pair in
                                                      self.first_observations)
        width = gym_high - gym_low
        inside = bool(np.all(pool_low >= gym_low - 0.05 * width - 1e-6)
                      and np.all(pool_high <= gym_high + 0.05 * width + 1e-6))
        spread = bool(np.all(pool_high - pool_low >= 0.5 * width))
        return (self.max_observation_error <= 1e-5 and self.max_reward_error <= 1e-5
                and self.termination_mismatches == 0 and self.time_limit[0] == self.time_limit[1]
                and inside and spread)


def dynamics_check(env_id: str, transitions: int = 4_000, num_envs: int = 4, seed: int = 0,
                   state_of: Callable[[np.ndarray], np.ndarray] | None = None) -> DynamicsReport:
    """Step EnvPool's ``env_id`` with random actions; before each transition put Gymnasium's environment
    in the state EnvPool's observation shows (``state_of``: default :data:`CHECKED_ENVS`'s map) and
    step it with the same action; compare the next observation, the reward and the termination. Also
    compares the time limits and the range of :data:`FIRST_OBSERVATIONS` first observations. EnvPool
    cannot be put in a state, so this is the comparison its API allows."""
    state_of = state_of or STATE_MAPS.get(env_id) or _cartesian
    pool = _make_pool(env_id, num_envs, seed, 1)
    pool_limit = int(pool.config["max_episode_steps"])
    reference = make_env(env_id)
    limit = reference.spec.max_episode_steps if reference.spec is not None else None
    reference.reset(seed=seed)
    gym_env = reference.unwrapped
    rng = np.random.default_rng(seed)
    space = reference.action_space
    observations, _ = pool.reset()
    pending = np.zeros(num_envs, dtype=bool)
    worst_obs = worst_reward = 0.0
    mismatches = done = episodes = 0
    try:
        while done < transitions:
            if isinstance(space, gymnasium.spaces.Discrete):
                actions = rng.integers(int(space.n), size=num_envs)
            else:
                actions = rng.uniform(space.low, space.high, size=(num_envs, *space.shape)).astype(space.dtype)
            following, rewards, terminated, truncated, _ = pool.step(actions)
            for i in np.flatnonzero(~pending):
                gym_env.state = state_of(observations[i]).copy()
                if hasattr(gym_env, "steps_beyond_terminated"):
                    gym_env.steps_beyond_terminated = None  # CartPole: a fresh episode's reward rule
                expected, reward, gym_terminated, _, _ = gym_env.step(actions[i])
                worst_obs = max(worst_obs, float(np.max(np.abs(np.asarray(expected, dtype=np.float64) - following[i]))))
                worst_reward = max(worst_reward, abs(float(reward) - float(rewards[i])))
                # EnvPool says truncated only when an episode fails on its last allowed step
                if bool(gym_terminated) != bool(terminated[i]) and not truncated[i]:
                    mismatches += 1
                done += 1
            ended = np.logical_or(terminated, truncated)
            episodes += int(ended.sum())
            pending = ended
            observations = following
    finally:
        pool.close()
    starts = _make_pool(env_id, FIRST_OBSERVATIONS, seed + 1, 1)
    try:
        pool_firsts = np.array(starts.reset()[0])
    finally:
        starts.close()
    gym_firsts = np.stack([reference.reset(seed=seed + k)[0] for k in range(FIRST_OBSERVATIONS)])
    reference.close()
    return DynamicsReport(
        env_id, done, episodes, worst_obs, worst_reward, mismatches,
        (pool_limit, None if limit is None else int(limit)),
        ((pool_firsts.min(0).tolist(), pool_firsts.max(0).tolist()),
         (gym_firsts.min(0).tolist(), gym_firsts.max(0).tolist())),
    )
