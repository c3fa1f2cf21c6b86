"""The gymnax/Gymnasium equivalence check: the environment rejax trains on must be the one the workload
names.

rejax trains on a gymnax environment inside its jitted program; the harness evaluates on the Gymnasium
one. Before a rejax run may be compared with any other, the two are run side by side: the same
initial states (Gymnasium's, copied into gymnax's state, since the two draw them with different
generators), the same random action sequences, and observations, rewards and episode ends compared
within stated tolerances, in two ways:

- **one step at a time, in float32** (the precision the training program runs in): at every step of
  Gymnasium's trajectory its state is copied into gymnax's and one gymnax transition is compared with
  Gymnasium's. This checks the dynamics exactly where they are used, without the chaos of a long
  float32 trajectory (CartPole's errors grow about 2.7e3-fold over 100 steps near upright).
- **whole episodes, in float64** (``jax.experimental.enable_x64`` around the check only, so the
  training program keeps its float32): from the copied initial state both environments run the whole
  action sequence on their own, and their internal states stay within 1e-9.

Gymnasium's observations are float32 in every environment checked, so observations are compared at
float32 precision in both modes and the float64 comparison is made on the internal states.

Stated differences (:data:`KNOWN_DIFFERENCES`), checked rather than assumed: gymnax reports one
``done`` for termination and truncation alike (its time limit is a terminal condition), and its
``step`` resets the environment on the step that ends an episode (the check calls ``step_env``, the
transition alone, so the final observation is compared). The verdict lists them with the figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Tolerances, stated once: (relative, absolute).
ONE_STEP_FLOAT32 = (1e-5, 1e-5)
EPISODE_STATE_FLOAT64 = (1e-9, 1e-9)
OBSERVATION_FLOAT32 = (1e-5, 1e-5)
REWARD = (1e-5, 1e-5)

KNOWN_DIFFERENCES = (
    "gymnax merges truncation into termination: its time limit sets `done`, where Gymnasium's TimeLimit "
    "sets `truncated` (rejax's algorithms therefore treat a truncated episode as terminated: no bootstrap)",
    "gymnax's `step` auto-resets: on the step that ends an episode it returns the next episode's first "
    "observation, Gymnasium the final one (the check compares `step_env`, the transition alone)",
    "initial states are drawn by different generators from the same distributions (the check copies "
    "Gymnasium's into gymnax)",
    "gymnax computes in float32 during training, Gymnasium in float64 (observations are float32 in both)",
)


@dataclass(frozen=True)
class EquivalenceVerdict:
    """Whether a gymnax environment behaves as the Gymnasium one, and by how much they differ."""

    env_id: str
    gymnax_id: str
    passed: bool
    episodes: int
    steps: int
    #: Largest absolute and relative errors seen, by comparison (one_step_obs, episode_state, ...).
    max_abs_error: dict[str, float]
    max_rel_error: dict[str, float]
    tolerances: dict[str, list[float]]
    #: What failed: one line each (empty when passed).
    failures: list[str] = field(default_factory=list)
    known_differences: list[str] = field(default_factory=list)
    #: The gymnax parameters the check ran with (non-default ones only).
    params_changed: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        head = "passed" if self.passed else "FAILED"
        text = (f"gymnax {self.gymnax_id} vs Gymnasium {self.env_id}: {head} over {self.episodes} episodes, "
                f"{self.steps} steps")
        return text if self.passed else text + ": " + "; ".join(self.failures[:3])


class _Errors:
    def __init__(self) -> None:
        self.abs: dict[str, float] = {}
        self.rel: dict[str, float] = {}
        self.failures: list[str] = []

    def compare(self, name: str, got: Any, want: Any, tolerance: tuple[float, float], where: str) -> None:
        import numpy as np

        got = np.asarray(got, dtype=np.float64).reshape(-1)
        want = np.asarray(want, dtype=np.float64).reshape(-1)
        diff = np.abs(got - want)
        rel = diff / np.maximum(np.abs(want), 1e-12)
        self.abs[name] = max(self.abs.get(name, 0.0), float(diff.max(initial=0.0)))
        self.rel[name] = max(self.rel.get(name, 0.0), float(np.where(diff > 0, rel, 0.0).max(initial=0.0)))
        rtol, atol = tolerance
        if not np.all(diff <= atol + rtol * np.abs(want)) and len(self.failures) < 20:
            self.failures.append(f"{name} at {where}: gymnax {got.tolist()} vs Gymnasium {want.tolist()}")

    def flag(self, name: str, got: bool, want: bool, where: str) -> None:
        if bool(got) != bool(want) and len(self.failures) < 20:
            self.failures.append(f"{name} at {where}: gymnax {bool(got)} vs Gymnasium {bool(want)}")


def check_equivalence(env_id: str, episodes: int = 3, seed: int = 0, max_steps: int | None = None,
                      param_overrides: dict[str, Any] | None = None) -> EquivalenceVerdict:
    """Run the Gymnasium environment ``env_id`` and its gymnax twin side by side (module docstring).

    ``episodes`` episodes from Gymnasium resets seeded ``seed, seed + 1, ...``, each under uniformly
    random actions from ``numpy.random.default_rng(seed + episode)``, up to ``max_steps`` steps per
    episode (None: to the episode's end). ``param_overrides`` replace gymnax parameters (the test
    alters the environment this way and expects the check to fail).
    """
    import jax
    import numpy as np

    from rlcompare.harness.counted_envs import make_env
    from rlcompare_rejax.envs import TWINS, make_gymnax

    twin = TWINS[env_id]
    env, params = make_gymnax(env_id, param_overrides)
    step_env = jax.jit(env.step_env)
    _, template = env.reset_env(jax.random.PRNGKey(0), params)
    errors = _Errors()
    steps = 0
    for episode in range(episodes):
        gym_env = make_env(env_id)
        try:
            actions, gym_states, gym_obs, gym_rewards, gym_ends, first_obs = _gymnasium_episode(
                gym_env, seed + episode, max_steps)
        finally:
            gym_env.close()
        steps += len(actions)
        rng = jax.random.PRNGKey(seed + episode)
        # one step at a time, float32, from Gymnasium's own state at every step
        for t, action in enumerate(actions):
            state = _gymnax_state(template, twin.state_fields, gym_states[t], t, np.float32)
            obs, new_state, reward, done = _step(step_env, params, rng, state, action)
            where = f"episode {episode} step {t} (float32, one step)"
            errors.compare("one_step_obs", obs, gym_obs[t], OBSERVATION_FLOAT32, where)
            errors.compare("one_step_state", _state_vector(new_state, twin.state_fields), gym_states[t + 1],
                           ONE_STEP_FLOAT32, where)
            errors.compare("reward", reward, gym_rewards[t], REWARD, where)
            errors.flag("done", done, gym_ends[t], where)
        # the whole episode, float64, from the copied initial state only
        with jax.experimental.enable_x64():
            state = _gymnax_state(template, twin.state_fields, gym_states[0], 0, np.float64)
            errors.compare("initial_obs", env.get_obs(state), first_obs, OBSERVATION_FLOAT32,
                           f"episode {episode} reset")
            for t, action in enumerate(actions):
                obs, state, reward, done = _step(step_env, params, rng, state, action)
                where = f"episode {episode} step {t} (float64, whole episode)"
                errors.compare("episode_state", _state_vector(state, twin.state_fields), gym_states[t + 1],
                               EPISODE_STATE_FLOAT64, where)
                errors.compare("episode_obs", obs, gym_obs[t], OBSERVATION_FLOAT32, where)
                errors.compare("episode_reward", reward, gym_rewards[t], REWARD, where)
                errors.flag("episode_done", done, gym_ends[t], where)
        _time_limit_probe(env_id, seed + episode, twin.state_fields, step_env, template, params, rng, errors,
                          episode)
        steps += 1
    tolerances = {"one_step_state": list(ONE_STEP_FLOAT32), "episode_state": list(EPISODE_STATE_FLOAT64),
                  "observations": list(OBSERVATION_FLOAT32), "rewards": list(REWARD)}
    return EquivalenceVerdict(env_id, twin.gymnax_id, not errors.failures, episodes, steps, errors.abs, errors.rel,
                              tolerances, errors.failures, list(KNOWN_DIFFERENCES),
                              {**twin.params, **(param_overrides or {})})


def _time_limit_probe(env_id: str, seed: int, fields: tuple[str, ...], step_env: Any, template: Any, params: Any,
                      rng: Any, errors: _Errors, episode: int) -> None:
    """The last step before the time limit, on both sides: Gymnasium's ``TimeLimit`` wrapper is set one
    step short of its limit and gymnax's state to the same time; the step must end the episode on
    both (truncated in Gymnasium, ``done`` in gymnax: a stated difference of kind, not of timing)."""
    import gymnasium
    import numpy as np

    from rlcompare.harness.counted_envs import make_env

    gym_env = make_env(env_id)
    try:
        gym_env.reset(seed=seed)
        wrapper = gym_env
        while not isinstance(wrapper, gymnasium.wrappers.TimeLimit):
            wrapper = wrapper.env
        limit = int(wrapper._max_episode_steps)  # noqa: SLF001 - Gymnasium keeps the limit here only
        wrapper._elapsed_steps = limit - 1  # noqa: SLF001
        state_before = np.array(gym_env.unwrapped.state, dtype=np.float64)
        action: Any = 0 if hasattr(gym_env.action_space, "n") else np.zeros(gym_env.action_space.shape, np.float32)
        _, _, terminated, truncated, _ = gym_env.step(action)
    finally:
        gym_env.close()
    state = _gymnax_state(template, fields, state_before, limit - 1, np.float32)
    _, _, _, done = _step(step_env, params, rng, state, action)
    errors.flag("time_limit_done", done, terminated or truncated, f"episode {episode} step {limit - 1} (time limit)")


def _gymnasium_episode(gym_env: Any, seed: int, max_steps: int | None) -> tuple[list[Any], ...]:
    """One Gymnasium episode under random actions: the actions, the internal states before and after
    every step (``len(actions) + 1`` of them), the observations and rewards after each step, whether
    each step ended the episode (terminated or truncated), and the first observation."""
    import numpy as np

    first_obs, _ = gym_env.reset(seed=seed)
    gym_env.action_space.seed(seed)
    rng = np.random.default_rng(seed)
    discrete = hasattr(gym_env.action_space, "n")
    states = [np.array(gym_env.unwrapped.state, dtype=np.float64)]
    actions, observations, rewards, ends = [], [], [], []
    while max_steps is None or len(actions) < max_steps:
        if discrete:
            action: Any = int(rng.integers(gym_env.action_space.n))
        else:
            low, high = gym_env.action_space.low, gym_env.action_space.high
            action = rng.uniform(low, high).astype(np.float32)
        obs, reward, terminated, truncated, _ = gym_env.step(action)
        actions.append(action)
        states.append(np.array(gym_env.unwrapped.state, dtype=np.float64))
        observations.append(np.asarray(obs, dtype=np.float64))
        rewards.append(float(reward))
        ends.append(bool(terminated or truncated))
        if terminated or truncated:
            break
    return actions, states, observations, rewards, ends, first_obs


def _gymnax_state(template: Any, fields: tuple[str, ...], values: Any, time: int, dtype: Any) -> Any:
    """gymnax's state (``template``, a reset one, with its other fields) for Gymnasium's internal
    ``values`` at step ``time``, in ``dtype`` precision."""
    import jax.numpy as jnp

    changes = {name: jnp.asarray(value, dtype=dtype) for name, value in zip(fields, values, strict=True)}
    return template.replace(time=jnp.asarray(time, dtype=jnp.int32), **changes)


def _state_vector(state: Any, fields: tuple[str, ...]) -> Any:
    import numpy as np

    return np.array([float(getattr(state, name)) for name in fields])


def _step(step_env: Any, params: Any, rng: Any, state: Any, action: Any) -> tuple[Any, Any, float, bool]:
    """One gymnax transition without the auto-reset (``step_env``, jitted)."""
    import jax.numpy as jnp
    import numpy as np

    if isinstance(action, int):
        native = jnp.asarray(action, dtype=jnp.int32)
    else:
        # the action as Gymnasium receives it (float32): Gymnasium's Pendulum computes its torque terms
        # in the action's precision (NumPy's promotion of a Python float with a float32 scalar), and
        # gymnax does the same under JAX's weak typing
        native = jnp.asarray(np.asarray(action))
    obs, state, reward, done, _ = step_env(rng, state, native, params)
    return np.asarray(obs), state, float(reward), bool(done)
