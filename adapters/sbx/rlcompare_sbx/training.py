"""One SBX training run (imports SBX, JAX and SB3; loaded by :meth:`SBXAdapter.train` only).

The loop is SB3's ``learn()`` as SBX inherits it, driven with an SB3 callback that hands the harness
a checkpoint after every env step (the harness evaluates on its grid, after the first traced update at
or after each grid point). The schedule is traced from inside SBX (:func:`trace_schedule`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import TrainingResult, WorkloadLike
from rlcompare_sbx import ACTIVATIONS, configure_jax

if TYPE_CHECKING:
    from rlcompare.adapter import TrainingContext
    from rlcompare_sbx import SBXAdapter

#: The families whose update is SBX's TD3 ``_train`` (DDPG is TD3 with one critic, no delay, no smoothing).
_DETERMINISTIC = ("TD3", "DDPG")


class CompileClock:
    """JAX's own compile-time events (``jax.monitoring``: tracing, lowering to MLIR and XLA's backend
    compile, the ``/jax/core/compile/`` durations), summed from the moment it is installed; those made
    while the harness evaluates a policy (a new batch size compiles SBX's jitted action selection
    again) are kept apart, as the harness keeps evaluation time out of training time."""

    PREFIX = "/jax/core/compile/"

    def __init__(self) -> None:
        self.seconds = 0.0
        self.events = 0
        self.evaluation_seconds = 0.0
        self.evaluation_events = 0
        self.evaluating = False

    @classmethod
    def install(cls) -> CompileClock:
        import jax

        clock = cls()
        jax.monitoring.register_event_duration_secs_listener(clock._record)
        return clock

    def _record(self, event: str, duration: float, **_kwargs: Any) -> None:
        if not event.startswith(self.PREFIX):
            return
        if self.evaluating:
            self.evaluation_seconds += float(duration)
            self.evaluation_events += 1
        else:
            self.seconds += float(duration)
            self.events += 1


def build_model(workload: WorkloadLike, kwargs: dict[str, Any], env: Any, seed: int) -> tuple[Any, dict[str, Any]]:
    """The SBX algorithm for ``workload`` on the vector env ``env``, from the adapter's keyword arguments
    (``SBXAdapter.native_config``): (model, the keyword arguments as passed, for the native config)."""
    import flax.linen
    import numpy as np
    import sbx
    from stable_baselines3.common.logger import Logger

    kwargs = dict(kwargs)
    policy_kwargs = dict(kwargs.pop("policy_kwargs"))
    policy_kwargs["activation_fn"] = getattr(flax.linen, ACTIVATIONS[workload.network.activation])
    if "action_noise" in kwargs:  # TD3, DDPG: SB3's noise object with the sigma the fidelity report states
        from stable_baselines3.common.noise import NormalActionNoise, VectorizedActionNoise

        actions = int(np.prod(env.action_space.shape))
        noise: Any = NormalActionNoise(np.zeros(actions), np.full(actions, float(kwargs["action_noise"])))
        if env.num_envs > 1:  # one draw per env (a plain NormalActionNoise gives every env the same draw)
            noise = VectorizedActionNoise(noise, env.num_envs)
        kwargs["action_noise"] = noise
    algorithm_class = getattr(sbx, workload.algorithm)
    model = algorithm_class("MlpPolicy", env, seed=seed, device="cpu", verbose=0, policy_kwargs=policy_kwargs,
                            **kwargs)
    # a logger with no outputs: SB3's default makes an empty folder in TMPDIR per run
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model, {**kwargs, "policy_kwargs": {key: str(value) for key, value in policy_kwargs.items()}}


def train(adapter: SBXAdapter, workload: WorkloadLike, context: TrainingContext) -> TrainingResult:
    jax_environment = configure_jax(workload.parallelism.threads_per_worker)
    started = time.perf_counter()
    clock = CompileClock.install()
    import jax
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    vec_env_class = DummyVecEnv if workload.parallelism.workers == 1 else SubprocVecEnv
    env = vec_env_class(context.env_factories())
    model, kwargs = adapter.build_model(workload, env, context.seed)
    deterministic = context.deterministic

    def policy(observations: Any) -> Any:
        clock.evaluating = True
        try:
            return model.predict(observations, deterministic=deterministic)[0]
        finally:
            clock.evaluating = False

    exploring = workload.algorithm == "DQN"
    traced: dict[str, float] = {}

    class HarnessCallback(BaseCallback):
        def _on_step(self) -> bool:
            if exploring and model.exploration_rate != traced.get("epsilon"):
                traced["epsilon"] = model.exploration_rate
                context.trace("exploration", model.exploration_rate)
            context.checkpoint(policy, self.num_timesteps)
            return True

    restore = trace_schedule(model, workload.algorithm, context)
    startup_compile, startup_events = clock.seconds, clock.events
    build_seconds = time.perf_counter() - started
    context.start_training()
    try:
        with context.until_solved():  # a stop_when_solved workload ends at its solving evaluation
            model.learn(total_timesteps=workload.env_steps, callback=HarnessCallback())
    finally:
        context.stop_training()
        restore()
        env.close()
    native = {
        "class": f"sbx.{workload.algorithm}", "vec_env": vec_env_class.__name__,
        "n_envs": workload.parallelism.total_envs, **{key: _plain(value) for key, value in kwargs.items()},
        "jax": {"backend": jax.default_backend(), "devices": len(jax.devices()), **jax_environment,
                "compile_seconds_start_up": round(startup_compile, 3),
                "compile_events_start_up": startup_events,
                "compile_seconds_training": round(clock.seconds - startup_compile, 3),
                "compile_events_training": clock.events - startup_events,
                "compile_seconds_evaluation": round(clock.evaluation_seconds, 3),
                "compile_events_evaluation": clock.evaluation_events,
                "build_seconds": round(build_seconds, 3)},
    }
    return TrainingResult(policy=policy, framework_env_steps=int(model.num_timesteps), native_config=native)


def _plain(value: Any) -> Any:
    """A native-config value as plain data (SB3's noise objects as their repr)."""
    return value if value is None or isinstance(value, (bool, int, float, str, list, dict)) else repr(value)


def trace_schedule(model: Any, algorithm: str, context: TrainingContext) -> Any:
    """Trace the schedule from inside SBX; returns a function that undoes the patches.

    - every ``train()`` call is an ``update``;
    - PPO: each call of the jitted minibatch update ``_one_update`` (an instance attribute shadowing the
      static method ``self._one_update`` calls) is a ``gradient_step``;
    - DQN: ``train(batch_size, gradient_steps)`` scans ``gradient_steps`` steps inside one jitted call,
      traced as that many ``gradient_step`` events; the target copy is ``DQN.soft_update``, which
      ``DQN._on_step`` calls through the class (patched on the class for the run's lifetime: the worker
      runs this one model), a ``target_sync``;
    - SAC, TD3, DDPG: ``train(gradient_steps, batch_size)`` loops ``gradient_steps`` critic steps in one
      jitted ``jax.lax.fori_loop``, each followed by a Polyak step of the targets (sbx/sac/sac.py,
      sbx/td3/td3.py ``_train``): that many ``gradient_step`` and ``target_sync`` events.
    """
    import inspect

    train = model.train
    keyword = "gradient_steps"
    parameters = list(inspect.signature(train).parameters)
    position = parameters.index(keyword) if keyword in parameters else -1

    def traced_train(*args: Any, **kwargs: Any) -> Any:
        context.trace("update")
        if algorithm != "PPO":
            steps = int(kwargs[keyword] if keyword in kwargs else args[position])
            for _ in range(steps):
                context.trace("gradient_step")
                if algorithm != "DQN":
                    context.trace("target_sync")
        return train(*args, **kwargs)

    model.train = traced_train
    undo = [lambda: delattr(model, "train")]
    if algorithm == "PPO":
        one_update = type(model)._one_update

        def traced_one_update(*args: Any, **kwargs: Any) -> Any:
            context.trace("gradient_step")
            return one_update(*args, **kwargs)

        model._one_update = traced_one_update
        undo.append(lambda: delattr(model, "_one_update"))
    if algorithm == "DQN":
        from sbx.dqn.dqn import DQN

        soft_update = DQN.__dict__["soft_update"]

        def traced_soft_update(tau: float, qf_state: Any) -> Any:
            context.trace("target_sync")
            return soft_update.__func__(tau, qf_state)

        DQN.soft_update = staticmethod(traced_soft_update)
        undo.append(lambda: setattr(DQN, "soft_update", soft_update))

    def restore() -> None:
        for step in reversed(undo):
            step()

    return restore
