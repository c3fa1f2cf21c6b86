"""Which Gymnasium environments have a gymnax twin, and the harness's step counter inside the jitted
program (the counter part imports JAX: only the training process loads it).

rejax steps gymnax environments inside its compiled training program (``rejax/algos/mixins.py``:
``VectorizedEnvMixin.vmap_step`` is ``jax.vmap(env.step)`` called from ``train_iteration``), so no
Gymnasium environment, and no harness wrapper around one, is ever stepped while it trains. The
harness's count comes from :class:`CountedEnv` instead: a gymnax environment wrapper whose state
carries, per environment, the steps and the finished episodes, incremented in ``step`` outside
gymnax's auto-reset, read back after each jitted segment and handed to the harness's counter.

The table below is the whole of what this adapter runs: the Gymnasium id a workload names, the gymnax
id that implements the same task, and the gymnax parameters that make it the same (CartPole-v0 is
CartPole-v1 with a 200-step limit, as Gymnasium registers it). Anything else is refused, naming the
environment; :mod:`rlcompare_rejax.equivalence` checks each pair before a run is compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GymnaxTwin:
    """The gymnax environment that implements a Gymnasium one."""

    gymnax_id: str
    #: gymnax ``EnvParams`` fields replaced to match the Gymnasium registration.
    params: dict[str, Any] = field(default_factory=dict)
    #: The Gymnasium environment's internal state (``env.unwrapped.state``), field by field, as
    #: gymnax's ``EnvState`` names them (the equivalence check copies it over).
    state_fields: tuple[str, ...] = ()


TWINS: dict[str, GymnaxTwin] = {
    "CartPole-v1": GymnaxTwin("CartPole-v1", {}, ("x", "x_dot", "theta", "theta_dot")),
    "CartPole-v0": GymnaxTwin("CartPole-v1", {"max_steps_in_episode": 200}, ("x", "x_dot", "theta", "theta_dot")),
    "Pendulum-v1": GymnaxTwin("Pendulum-v1", {}, ("theta", "theta_dot")),
    "Acrobot-v1": GymnaxTwin("Acrobot-v1", {}, ("joint_angle1", "joint_angle2", "velocity_1", "velocity_2")),
}


def twin_refusal(env_id: str, env_kwargs: dict[str, Any] | None = None) -> str | None:
    """Why rejax cannot run ``env_id`` (None when it can): gymnax must implement the same task."""
    if env_id not in TWINS:
        return (f"environment {env_id} has no gymnax implementation that rejax can step inside its jitted "
                f"program (offered: {', '.join(sorted(TWINS))})")
    if env_kwargs:
        return (f"environment {env_id} with arguments {dict(env_kwargs)}: the gymnax twin is configured for the "
                "registered Gymnasium environment only")
    return None


def make_gymnax(env_id: str, overrides: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """The gymnax twin of ``env_id`` and its parameters (``overrides`` replace parameters: the
    equivalence check's test alters the environment this way). Imports gymnax."""
    import gymnax

    twin = TWINS[env_id]
    env, params = gymnax.make(twin.gymnax_id)
    changes = {**twin.params, **(overrides or {})}
    return env, params.replace(**changes) if changes else params


def counted_env(env: Any) -> Any:
    """``env`` wrapped in :class:`CountedEnv` (built here so the class, which subclasses gymnax's
    ``Environment``, loads only with JAX)."""
    return _counted_class()(env)


_COUNTED: list[type] = []


def _counted_class() -> type:
    if _COUNTED:
        return _COUNTED[0]
    import jax.numpy as jnp
    from flax import struct
    from gymnax.environments.environment import Environment

    @struct.dataclass
    class CountedState:
        """gymnax's state of one environment, and the harness's counts of it: ``steps`` (every call
        of ``step``) and ``episodes`` (every step that ended an episode), int32 scalars per
        environment (``(num_envs,)`` once rejax vmaps the environment)."""

        env_state: Any
        steps: Any
        episodes: Any

    class CountedEnv(Environment):
        """A gymnax environment that counts its own steps in its state.

        ``step`` calls the wrapped environment's ``step`` (gymnax's ``Environment.step``: the
        transition, then the auto-reset when ``done``) and adds one step, and one episode when
        ``done``, to the state it returns: the count sits outside the auto-reset, so a reset never
        clears it. Every attribute rejax reads is forwarded explicitly (``action_space``,
        ``observation_space``, ``default_params``, ``name``, ``num_actions``): ``Algorithm.create``
        deep-copies its configuration, environment included (``rejax/algos/algorithm.py``), and a
        wrapper that forwards through ``__getattr__`` recurses without end under ``deepcopy``.
        """

        def __init__(self, env: Any) -> None:
            super().__init__()
            self.env = env

        @property
        def default_params(self) -> Any:
            return self.env.default_params

        def reset(self, key: Any, params: Any = None) -> tuple[Any, Any]:
            obs, state = self.env.reset(key, params)
            zero = jnp.zeros((), dtype=jnp.int32)
            return obs, CountedState(env_state=state, steps=zero, episodes=zero)

        def step(self, key: Any, state: Any, action: Any, params: Any = None) -> tuple[Any, ...]:
            obs, env_state, reward, done, info = self.env.step(key, state.env_state, action, params)
            counted = CountedState(env_state=env_state, steps=state.steps + 1,
                                   episodes=state.episodes + done.astype(jnp.int32))
            return obs, counted, reward, done, info

        def action_space(self, params: Any = None) -> Any:
            return self.env.action_space(params)

        def observation_space(self, params: Any) -> Any:
            return self.env.observation_space(params)

        def state_space(self, params: Any) -> Any:
            return self.env.state_space(params)

        @property
        def name(self) -> str:
            return self.env.name

        @property
        def num_actions(self) -> int:
            return self.env.num_actions

    _COUNTED.append(CountedEnv)
    return CountedEnv
