"""One rejax training run, driven segment by segment (imports JAX, rejax and gymnax).

rejax's own ``train`` (``rejax/algos/mixins.py``, ``OnPolicyMixin.train``) is a ``lax.scan`` over
evaluations, each a ``lax.fori_loop`` of ``train_iteration`` (one rollout of every env, then
``num_epochs`` passes of ``num_minibatches`` minibatch updates), followed by ``eval_callback``. This
run uses the same loop body, ``algo.train_iteration``, in a ``lax.fori_loop`` whose trip count is an
argument of the compiled program: one compilation serves every segment, and between segments the
harness reads the counts and evaluates on its own Gymnasium environments (rejax's ``eval_callback``
and its 128 stochastic evaluation episodes per ``eval_freq`` never run, and nothing is uncounted).

The program is compiled ahead of time (``jax.jit(...).lower(...).compile()``) before the harness's
training clock starts, so compile time is start-up and throughput is the compiled program's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np


class RejaxRun:
    """A rejax algorithm built from the workload's mapped configuration, on the counted gymnax twin of
    the workload's environment, with its train state and compiled programs.

    ``seeds``: one seed, or a list of them trained in one program (``parallelism.seeds_per_program``):
    the train state is then vmapped over the seeds (rejax's own way of training many seeds at once,
    ``jax.vmap(algo.train)``), one compiled program runs every seed's iterations, and :class:`SeedView`
    reads one seed's counts, step count and policy out of it."""

    def __init__(self, algorithm: str, env_id: str, config: dict[str, Any], seeds: int | list[int],
                 pad_batch: int = 1) -> None:
        import jax
        import jax.numpy as jnp
        import rejax

        from rlcompare_rejax.envs import counted_env, make_gymnax

        self.algorithm = algorithm
        self.config = dict(config)
        env, params = make_gymnax(env_id)
        self.env = counted_env(env)
        algo_class = {"PPO": rejax.PPO}[algorithm]
        self.algo = algo_class.create(env=self.env, env_params=params, **self.config)
        # rejax's own evaluation (128 stochastic episodes per eval_freq, outside the harness's count)
        # is never called: the segments below run train_iteration alone; replaced all the same
        self.algo = self.algo.replace(eval_callback=lambda _algo, _ts, _rng: (), skip_initial_evaluation=True)
        self.steps_per_iteration = int(self.algo.num_envs * self.algo.num_steps)
        self.gradient_steps_per_iteration = int(self.algo.num_epochs * self.algo.num_minibatches)
        self.discrete = bool(self.algo.discrete)
        self.pad_batch = max(1, int(pad_batch))
        algo = self.algo

        def iterate(ts: Any, iterations: Any) -> Any:
            return jax.lax.fori_loop(0, iterations, lambda _, state: algo.train_iteration(state), ts)

        self.batched = not isinstance(seeds, int)
        started = time.perf_counter()
        if self.batched:
            self.seeds = [int(seed) for seed in seeds]  # type: ignore[union-attr]
            keys = jnp.stack([jax.random.PRNGKey(seed) for seed in self.seeds])
            init = jax.jit(jax.vmap(algo.init_state)).lower(keys).compile()
            initial = init(keys)
            iterate = jax.vmap(iterate, in_axes=(0, None))  # every seed runs the same number of iterations
        else:
            self.seeds = [int(seeds)]  # type: ignore[arg-type]
            key = jax.random.PRNGKey(self.seeds[0])
            initial = jax.jit(algo.init_state).lower(key).compile()(key)
        # strongly typed leaves (init_state leaves Python scalars such as global_step=0 weakly typed),
        # so the state the compiled program returns has exactly the types it was compiled for
        self.ts = jax.tree.map(lambda leaf: jnp.array(leaf, dtype=jnp.asarray(leaf).dtype), initial)
        self._iterate = jax.jit(iterate).lower(self.ts, jnp.int32(0)).compile()
        self._act = self._compile_policy()
        self.compile_seconds = time.perf_counter() - started
        self.iterations = 0

    # -- training ----------------------------------------------------------------------------------

    def run_iterations(self, iterations: int) -> None:
        """Run ``iterations`` of rejax's ``train_iteration`` in the compiled program, to completion."""
        import jax
        import jax.numpy as jnp

        self.ts = self._iterate(self.ts, jnp.int32(iterations))
        jax.block_until_ready(self.ts)
        self.iterations += iterations

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The harness's counts carried in the jitted state: steps and finished episodes per env
        (``ts.env_state`` is the vmapped :class:`~rlcompare_rejax.envs.CountedEnv` state)."""
        state = self.ts.env_state
        return np.asarray(state.steps, dtype=np.int64), np.asarray(state.episodes, dtype=np.int64)

    @property
    def framework_steps(self) -> int:
        """rejax's own count: ``ts.global_step``, advanced by ``num_envs`` per vector step."""
        return int(self.ts.global_step)

    # -- the policy --------------------------------------------------------------------------------

    def _compile_policy(self) -> Callable[..., Any]:
        """The actor's action for a batch, compiled once for a padded batch size.

        rejax's ``make_act`` samples from the policy (``DiscretePolicy.act``/``GaussianPolicy.act``,
        ``rejax/networks.py``); greedy evaluation takes the logits' argmax, or the Gaussian mean
        clipped to the action bounds (as ``GaussianPolicy.act`` clips its samples). Observations are
        normalized with ``ts.obs_rms_state`` when ``normalize_observations`` is on (it is off here).
        """
        import jax
        import jax.numpy as jnp

        algo = self.algo
        actor = algo.actor
        normalize = bool(getattr(algo, "normalize_observations", False))
        discrete = self.discrete
        if not discrete:
            space = algo.action_space
            low, high = np.asarray(space.low, dtype=np.float32), np.asarray(space.high, dtype=np.float32)

        def features(module: Any, obs: Any) -> Any:
            return module.features(obs)

        def act(params: Any, rms: Any, obs: Any, key: Any, deterministic: Any) -> Any:
            if normalize:
                obs = algo.normalize_obs(rms, obs)
            if discrete:
                logits = actor.apply(params, obs, method=lambda m, o: m.action_logits(m.features(o)))
                sampled = jax.random.categorical(key, logits, axis=-1)
                return jnp.where(deterministic, jnp.argmax(logits, axis=-1), sampled)
            mean = actor.apply(params, obs, method=lambda m, o: m.action_mean(m.features(o)))
            log_std = params["params"]["action_log_std"]
            sampled = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
            return jnp.clip(jnp.where(deterministic, mean, sampled), low, high)

        obs_shape = tuple(algo.obs_space.shape)
        example = jnp.zeros((self.pad_batch, *obs_shape), dtype=jnp.float32)
        params, rms = self._actor_state(0)  # one seed's parameters: the same shapes for every seed
        return jax.jit(act).lower(params, rms, example, jax.random.PRNGKey(0), jnp.bool_(True)).compile()

    def _actor_state(self, index: int) -> tuple[Any, Any]:
        """The actor's parameters and observation statistics of the seed at ``index`` (of the one seed
        when the state is not batched)."""
        import jax

        params = self.ts.actor_ts.params
        rms = getattr(self.ts, "obs_rms_state", None)
        if not self.batched:
            return params, rms
        pick = lambda leaf: leaf[index]  # noqa: E731
        return jax.tree.map(pick, params), None if rms is None else jax.tree.map(pick, rms)

    def policy_fn(self, deterministic: bool, seed: int, index: int = 0) -> Callable[[np.ndarray], np.ndarray]:
        """A numpy policy on the current parameters of the seed at ``index`` (frozen now: later segments
        do not change it)."""
        import jax
        import jax.numpy as jnp

        params, rms = self._actor_state(index)
        compiled, pad, discrete = self._act, self.pad_batch, self.discrete
        keys = [jax.random.PRNGKey(seed)]
        flag = jnp.bool_(deterministic)

        def policy(observations: np.ndarray) -> np.ndarray:
            batch = np.asarray(observations, dtype=np.float32)
            rows = batch.shape[0]
            out = []
            for start in range(0, rows, pad):
                chunk = batch[start:start + pad]
                padded = np.zeros((pad, *batch.shape[1:]), dtype=np.float32)
                padded[:len(chunk)] = chunk
                keys[0], key = jax.random.split(keys[0])
                out.append(np.asarray(compiled(params, rms, padded, key, flag))[:len(chunk)])
            actions = np.concatenate(out, axis=0)
            if discrete:
                return actions.astype(np.int64).reshape(rows)
            return actions.astype(np.float32).reshape(rows, -1)

        return policy


class SeedView:
    """One seed of a :class:`RejaxRun` trained in one program with others, read as a run of its own: its
    counts, rejax's step count and its policy (the program itself runs every seed's iterations)."""

    def __init__(self, run: RejaxRun, index: int) -> None:
        self.program = run
        self.index = index
        self.algo = run.algo
        self.steps_per_iteration = run.steps_per_iteration
        self.gradient_steps_per_iteration = run.gradient_steps_per_iteration

    @property
    def iterations(self) -> int:
        return self.program.iterations

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        steps, episodes = self.program.counts()
        return steps[self.index], episodes[self.index]

    @property
    def framework_steps(self) -> int:
        return int(self.program.ts.global_step[self.index])

    def policy_fn(self, deterministic: bool, seed: int) -> Callable[[np.ndarray], np.ndarray]:
        return self.program.policy_fn(deterministic, seed, index=self.index)


def iterations_to(target_steps: int, done_steps: int, steps_per_iteration: int) -> int:
    """Iterations that take the run from ``done_steps`` to the first iteration boundary at or after
    ``target_steps`` (at least one)."""
    return max(1, math.ceil((target_steps - done_steps) / steps_per_iteration))
