"""One d3rlpy online run, built from the adapter's native configuration (imports d3rlpy and torch).

:func:`build_algo` makes the algorithm from the configuration alone (the parity probe uses it too);
:func:`build` adds the harness's environment, the replay buffer and the explorer, and returns a
:class:`D3rlpySetup` that :func:`rlcompare.adapter.train_with_setup` drives: ``run`` calls
``fit_online`` once for the whole budget, with a callback after every env step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import WorkloadLike
from rlcompare_d3rlpy import CONTINUOUS, cache_size

if TYPE_CHECKING:
    import numpy as np

Trace = Callable[..., None]


def _no_trace(_event: str, _value: float | None = None) -> None:
    return None


def build_algo(native: dict[str, Any], seed: int) -> Any:
    """d3rlpy's algorithm (not yet built: ``create_impl`` or ``build_with_env`` makes its networks),
    configured from ``native``: config class and fields, Adam with the clip norm, the encoder; every
    scaler off, CPU, no compiled graphs."""
    import d3rlpy
    from d3rlpy.models.encoders import VectorEncoderFactory
    from d3rlpy.optimizers import AdamFactory

    d3rlpy.seed(seed)  # random, numpy and torch
    config_class = getattr(d3rlpy.algos, native["config_class"])
    optimizer = {key: value for key, value in native["optimizer"].items() if key != "class"}
    encoder = native["encoder"]
    encoder_factory = VectorEncoderFactory(hidden_units=list(encoder["hidden_units"]) or [256, 256],
                                           activation=encoder["activation"])
    kwargs: dict[str, Any] = dict(native["config"])
    if native["config_class"] in ("DQNConfig", "DoubleDQNConfig"):
        kwargs.update(optim_factory=AdamFactory(**optimizer), encoder_factory=encoder_factory)
    else:
        kwargs.update(actor_optim_factory=AdamFactory(**optimizer), critic_optim_factory=AdamFactory(**optimizer),
                      actor_encoder_factory=encoder_factory, critic_encoder_factory=encoder_factory)
        if native["config_class"] == "SACConfig":
            kwargs["temp_optim_factory"] = AdamFactory(**optimizer)
    config = config_class(observation_scaler=None, action_scaler=None, reward_scaler=None, compile_graph=False,
                          **kwargs)
    return config.create(device=False)


@dataclass(frozen=True)
class ScaledActions:
    """A picklable env factory whose environment takes actions scaled to [-1, 1] (Gymnasium's
    ``RescaleAction``), the space d3rlpy's tanh actors and NormalNoise act in."""

    env_fn: Callable[[], Any]

    def __call__(self) -> Any:
        import gymnasium

        env = self.env_fn()
        dtype = env.action_space.dtype.type
        return gymnasium.wrappers.RescaleAction(env, dtype(-1.0), dtype(1.0))


@dataclass
class D3rlpySetup:
    """Everything built for one run; :attr:`env_steps` is d3rlpy's own count (``total_step``)."""

    workload: WorkloadLike
    algo: Any
    env: Any
    buffer: Any
    explorer: Any
    native: dict[str, Any]
    trace: Trace = _no_trace
    env_steps: int = 0
    #: The env's own action bounds where d3rlpy acts on the action scaled to [-1, 1] (SAC, TD3, DDPG).
    action_bounds: tuple[Any, Any] | None = None
    _updated: bool = field(default=False, repr=False)

    def run(self, after_update: Callable[[int], None]) -> None:
        """``fit_online`` for the whole budget; ``after_update(total_step)`` after every env step (and
        the updates d3rlpy made at it), from d3rlpy's own ``callback``."""
        from d3rlpy.logging import NoopAdapterFactory

        fit = self.native["fit_online"]
        setup = self

        def callback(_algo: Any, _epoch: int, total_step: int) -> None:
            setup.env_steps = total_step
            if setup._updated:
                setup.trace("update")
                setup._updated = False
            after_update(total_step)

        self.algo.fit_online(
            self.env, buffer=self.buffer, explorer=self.explorer, n_steps=fit["n_steps"],
            n_steps_per_epoch=max(1, int(self.workload.evaluation.interval_steps)),
            update_interval=fit["update_interval"], n_updates=fit["n_updates"],
            update_start_step=fit["update_start_step"], random_steps=fit["random_steps"], eval_env=None,
            save_interval=10**9, logger_adapter=NoopAdapterFactory(), show_progress=False, callback=callback)

    def policy_fn(self, deterministic: bool) -> Callable[[np.ndarray], np.ndarray]:
        """Batch of observations -> batch of actions: ``algo.predict`` (greedy; TD3, DDPG and SAC: the
        tanh mean, mapped back to the env's bounds); not deterministic: DQN acts epsilon-greedily at the
        current training epsilon (as SB3's ``predict``), SAC samples (``algo.sample_action``)."""
        import numpy as np

        algo, explorer = self.algo, self.explorer
        algorithm = self.workload.algorithm

        def act(observations: np.ndarray) -> np.ndarray:
            x = np.asarray(observations, dtype=np.float32).reshape(len(observations), -1)
            if algorithm == "DQN":
                actions = algo.predict(x)
                if not deterministic:
                    epsilon = explorer.untraced_epsilon(max(1, self.env_steps))
                    explore = np.random.random(len(actions)) < epsilon
                    actions = np.where(explore, np.random.randint(algo.action_size, size=len(actions)), actions)
                return actions.astype(np.int64)
            actions = algo.predict(x) if deterministic or algorithm != "SAC" else algo.sample_action(x)
            low, high = self.action_bounds  # type: ignore[misc]
            return np.clip(low + (high - low) * (actions + 1.0) / 2.0, low, high)

        return act

    def close(self) -> None:
        self.env.close()


def build(workload: WorkloadLike, native: dict[str, Any], env_fn: Callable[[], Any], seed: int,
          trace: Trace = _no_trace) -> D3rlpySetup:
    """The algorithm, built on the harness's environment, its replay buffer and explorer, instrumented."""
    from d3rlpy.dataset import FIFOBuffer, ReplayBuffer

    from rlcompare.adapter import episode_step_limit

    algorithm = workload.algorithm
    action_bounds = None
    if algorithm in CONTINUOUS:
        space = _action_space(env_fn)
        action_bounds = (space.low.astype("float64"), space.high.astype("float64"))
        env_fn = ScaledActions(env_fn)
    algo = build_algo(native, seed)
    env = env_fn()
    env.reset(seed=seed)  # fit_online resets without a seed: the env's generator carries on from here
    env.action_space.seed(seed)  # the warm-up's random actions (random_steps)
    algo.build_with_env(env)
    algo.set_grad_step(1)  # d3rlpy's counter then counts the gradient steps made (SB3's _n_updates)
    limit = episode_step_limit(getattr(env_fn, "env_id", workload.env), workload.env_kwargs)
    buffer = ReplayBuffer(FIFOBuffer(limit=int(native["buffer"]["limit"])), env=env,
                          cache_size=cache_size(limit, workload.env_steps))
    explorer = _explorer(native.get("explorer"), trace)
    setup = D3rlpySetup(workload, algo, env, buffer, explorer, native, trace, action_bounds=action_bounds)
    _instrument(setup)
    return setup


def _action_space(env_fn: Callable[[], Any]) -> Any:
    """The action space of the environments ``env_fn`` builds, from an uncounted copy."""
    from rlcompare.adapter import make_env

    env = make_env(env_fn.env_id, env_fn.env_kwargs) if hasattr(env_fn, "env_id") else env_fn()
    try:
        return env.action_space
    finally:
        env.close()


def _explorer(spec: dict[str, Any] | None, trace: Trace) -> Any:
    """d3rlpy's explorer for the configuration: ``LinearDecayEpsilonGreedy`` (DQN) tracing each new
    epsilon, ``NormalNoise`` (TD3, DDPG), or None (SAC samples from its policy)."""
    if spec is None:
        return None
    from d3rlpy.algos import LinearDecayEpsilonGreedy, NormalNoise

    if spec["class"] == "NormalNoise":
        return NormalNoise(mean=float(spec["mean"]), std=float(spec["std"]))

    class TracedEpsilonGreedy(LinearDecayEpsilonGreedy):
        """d3rlpy's linear epsilon-greedy explorer; each new epsilon it computes is traced."""

        last: float | None = None

        def compute_epsilon(self, step: int) -> float:
            epsilon = super().compute_epsilon(step)
            if epsilon != self.last:
                self.last = epsilon
                trace("exploration", epsilon)
            return epsilon

        def untraced_epsilon(self, step: int) -> float:
            return LinearDecayEpsilonGreedy.compute_epsilon(self, step)

    return TracedEpsilonGreedy(start_epsilon=float(spec["start_epsilon"]), end_epsilon=float(spec["end_epsilon"]),
                               duration=int(spec["duration"]))


def _instrument(setup: D3rlpySetup) -> None:
    """Trace from inside d3rlpy: ``algo.update`` (one gradient step each; ``fit_online`` calls it
    ``n_updates`` times per update) and the impl's target update (DQN's hard copy ``update_target``,
    the actor-critics' Polyak ``update_critic_target``)."""
    algo, trace = setup.algo, setup.trace
    update = algo.update

    def traced_update(batch: Any) -> Any:
        trace("gradient_step")
        setup._updated = True
        return update(batch)

    algo.update = traced_update
    impl = algo.impl
    name = "update_target" if setup.workload.algorithm == "DQN" else "update_critic_target"
    sync = getattr(impl, name)

    def traced_sync() -> Any:
        trace("target_sync")
        return sync()

    setattr(impl, name, traced_sync)
