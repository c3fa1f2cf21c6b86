"""SBX's own update on rlcompare's parity probes: the probe's weights loaded into SBX's Flax parameter
trees, the probe's batch into SB3's buffers (which SBX fills and reads), and SBX's own jitted update
doing the rest.

JAX has no optimizer objects to wrap, so what ``OneStep`` records for a torch framework is recorded
here inside SBX's own jitted code, with ``jax.debug.callback`` (:class:`Taps`):

- the **gradients** an Optax transformation receives when its state steps: the TrainState's ``tx``
  replaced by the same transformation with a tap in front (``TrainState.apply_gradients`` calls
  ``tx.update(grads, ...)``); for PPO, whose chains clip first (``optax.chain(clip_by_global_norm,
  adam)``, sbx/ppo/policies.py), the tap sits on the output of ``optax.clip_by_global_norm``, patched
  while SBX builds the policy, so the recorded gradient is the clipped one Adam steps with;
- the **TD targets** where SBX computes them: the loss function it differentiates (``mse_loss``,
  ``huber_loss``, inner functions of ``update_critic`` / ``update_qnetwork``) closes over
  ``target_q_values``; while SBX's update is traced, ``jax.value_and_grad`` is wrapped so that the
  closure's ``target_q_values`` is tapped as SBX computed it.

Flax's ``Dense`` keeps its kernel as ``(in, out)``; the probe's weights are ``torch.nn.Linear``'s
``(out, in)``: loaded and read back transposed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe, make_env
from rlcompare.harness.parity import RAN
from rlcompare_sbx import configure_jax

if TYPE_CHECKING:
    import numpy as np

    from rlcompare_sbx import SBXAdapter

#: Parameter paths of a Flax tree, as tuples of keys (``("params", "Dense_0", "kernel")``).
Path = tuple[str, ...]


class Taps:
    """Values recorded from inside jitted code, in the order the callbacks ran, by tap name."""

    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {}

    def tap(self, name: str, tree: Any) -> None:
        """Inside traced code: record ``tree`` (any pytree of arrays) under ``name`` when it runs."""
        import jax

        jax.debug.callback(lambda value: self.values.setdefault(name, []).append(_numpy_tree(value)), tree)

    def one(self, name: str) -> Any:
        """The single value recorded under ``name`` (an optimizer that stepped once, one target)."""
        import jax

        jax.effects_barrier()
        found = self.values.get(name, [])
        if len(found) != 1:
            raise RuntimeError(f"{name} was recorded {len(found)} times, not once")
        return found[0]

    def count(self, name: str) -> int:
        import jax

        jax.effects_barrier()
        return len(self.values.get(name, []))

    def transformation(self, name: str, inner: Any) -> Any:
        """``inner`` (an Optax GradientTransformation) with the gradients it receives tapped as ``name``;
        its state is ``inner``'s, unchanged, so it replaces ``inner`` in a built TrainState."""
        import optax

        def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            self.tap(name, updates)
            return inner.update(updates, state, params, **extra)

        return optax.GradientTransformationExtraArgs(inner.init, update)

    def after(self, name: str, inner: Any) -> Any:
        """``inner`` with the updates it *returns* tapped as ``name`` (a clipping transformation)."""
        import optax

        def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            updates, state = inner.update(updates, state, params, **extra)
            self.tap(name, updates)
            return updates, state

        return optax.GradientTransformationExtraArgs(inner.init, update)

    @contextlib.contextmanager
    def td_targets(self, loss_names: Sequence[str] = ("mse_loss", "huber_loss")) -> Iterator[None]:
        """While SBX traces its update: the ``target_q_values`` its loss functions close over, tapped
        as ``q_target`` (``jax.value_and_grad`` wrapped; restored after)."""
        import jax

        original = jax.value_and_grad

        def value_and_grad(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            if getattr(fun, "__name__", "") in loss_names and "target_q_values" in fun.__code__.co_freevars:
                cell = fun.__closure__[fun.__code__.co_freevars.index("target_q_values")]  # type: ignore[index]
                self.tap("q_target", cell.cell_contents)
            return original(fun, *args, **kwargs)

        jax.value_and_grad = value_and_grad
        try:
            yield
        finally:
            jax.value_and_grad = original


def _numpy_tree(tree: Any) -> Any:
    import jax
    import numpy as np

    return jax.tree_util.tree_map(lambda leaf: np.array(leaf, dtype=np.float64), tree)


# -- Flax parameter trees <-> canonical names --------------------------------------------------------


def dense_names(prefix: str, hidden: int, heads: Sequence[str] = ("out",), module: str = "Dense") -> dict[Path, str]:
    """Flax's ``Dense_i`` of a stack of ``hidden`` hidden layers then one layer per head, by canonical
    name (``prefix.0`` ..., then ``prefix.<head>``), as paths under ``("params",)``."""
    names = [*(f"{prefix}.{i}" for i in range(hidden)), *(f"{prefix}.{head}" for head in heads)]
    return {("params", f"{module}_{i}"): name for i, name in enumerate(names)}


def load_dense(params: Any, layers: Mapping[Path, str], weights: Mapping[str, np.ndarray],
               index: int | None = None) -> Any:
    """``params`` (a Flax tree) with each Dense layer of ``layers`` replaced by the probe's weights
    (transposed to Flax's ``(in, out)``); ``index`` selects one member of a vmapped stack (SBX's
    ``VectorCritic`` keeps its critics on a leading axis)."""
    import jax.numpy as jnp
    import numpy as np

    tree = _thaw(params)
    for path, name in layers.items():
        node = _node(tree, path)
        for leaf, value in (("kernel", np.asarray(weights[f"{name}.weight"]).T),
                            ("bias", np.asarray(weights[f"{name}.bias"]))):
            value = jnp.asarray(value, dtype=node[leaf].dtype)
            if index is None:
                if node[leaf].shape != value.shape:
                    raise ValueError(f"{name}.{leaf}: SBX's {'/'.join(path)} has shape {node[leaf].shape}, "
                                     f"the probe's {value.shape}")
                node[leaf] = value
            else:
                node[leaf] = node[leaf].at[index].set(value)
    return tree


def read_dense(tree: Any, layers: Mapping[Path, str], index: int | None = None) -> dict[str, np.ndarray]:
    """The Dense layers of ``layers`` in ``tree`` (parameters or gradients) by canonical name, in
    ``torch.nn.Linear``'s layout."""
    import numpy as np

    found = {}
    for path, name in layers.items():
        node = _node(tree, path)
        kernel, bias = np.asarray(node["kernel"], dtype=np.float64), np.asarray(node["bias"], dtype=np.float64)
        if index is not None:
            kernel, bias = kernel[index], bias[index]
        found[f"{name}.weight"], found[f"{name}.bias"] = kernel.T.copy(), bias.copy()
    return found


def _node(tree: Any, path: Path) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def _thaw(tree: Any) -> Any:
    """A mutable copy of a (possibly frozen) Flax tree: nested dicts."""
    if hasattr(tree, "items"):
        return {key: _thaw(value) for key, value in tree.items()}
    return tree


# -- PPO ---------------------------------------------------------------------------------------------


def _vec_env(probe: ParityProbe) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    workload = probe.workload_view()
    return DummyVecEnv([lambda: make_env(workload.env, dict(workload.env_kwargs))] * workload.parallelism.total_envs)


@contextlib.contextmanager
def _clip_taps(taps: Taps) -> Iterator[None]:
    """While SBX builds a PPO policy: ``optax.clip_by_global_norm`` returns the clipping with its
    output tapped, as ``clipped0`` (the actor's chain, built first) and ``clipped1`` (the critic's)."""
    import optax

    original = optax.clip_by_global_norm
    made = []

    def clip_by_global_norm(max_norm: float) -> Any:
        made.append(max_norm)
        return taps.after(f"clipped{len(made) - 1}", original(max_norm))

    optax.clip_by_global_norm = clip_by_global_norm
    try:
        yield
    finally:
        optax.clip_by_global_norm = original


def ppo_update(adapter: SBXAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO minibatch step: the batch in SB3's ``RolloutBuffer`` (SBX's), its GAE, SBX's ``train()``."""
    configure_jax(1)
    import numpy as np
    import torch

    taps = Taps()
    env = _vec_env(probe)
    try:
        with _clip_taps(taps):
            model, _ = adapter.build_model(probe.workload_view(), env, probe.seed)
        policy = model.policy
        hidden = len(probe.network["hidden_sizes"])
        actor_layers, value_layers = dense_names("policy", hidden), dense_names("value", hidden)
        actor_params = load_dense(policy.actor_state.params, actor_layers, probe.weights)
        if not probe.discrete:
            import jax.numpy as jnp

            log_std = actor_params["params"]["log_std"]
            actor_params["params"]["log_std"] = jnp.asarray(probe.weights["policy.log_std"], dtype=log_std.dtype)
        policy.actor_state = policy.actor_state.replace(params=actor_params)
        policy.vf_state = policy.vf_state.replace(params=load_dense(policy.vf_state.params, value_layers,
                                                                    probe.weights))
        batch = probe.batch
        gamma = float(probe.hyperparameters["gamma"])
        # SBX's collect_rollouts bootstraps a truncated episode by adding gamma * V(final observation) to
        # its last reward (sbx/common/on_policy_algorithm.py); the probe holds that value
        rewards = batch["rewards"] + gamma * batch["terminal_values"] * batch["truncated"]
        dones = np.maximum(batch["terminated"], batch["truncated"])
        buffer = model.rollout_buffer
        buffer.reset()
        steps, envs = rewards.shape
        episode_starts = np.ones(envs, dtype=np.float32)
        for t in range(steps):
            actions = batch["actions"][t].reshape(envs, 1) if probe.discrete else batch["actions"][t]
            buffer.add(batch["obs"][t].astype(np.float32), actions, rewards[t].astype(np.float32), episode_starts,
                       torch.as_tensor(batch["old_values"][t], dtype=torch.float32),
                       torch.as_tensor(batch["old_log_prob"][t], dtype=torch.float32))
            episode_starts = dones[t].astype(np.float32)
        buffer.compute_returns_and_advantage(last_values=torch.as_tensor(batch["last_values"], dtype=torch.float32),
                                             dones=dones[-1])
        targets = {"advantages": buffer.advantages.copy(), "returns": buffer.returns.copy()}
        model._current_progress_remaining = 1.0  # the learning-rate and clip-range schedules at their start
        model.train()
        if taps.count("clipped0") != 1 or taps.count("clipped1") != 1:
            return ParityOutcome.unverifiable(f"SBX's PPO made {taps.count('clipped0')} actor and "
                                              f"{taps.count('clipped1')} critic optimizer steps on one minibatch")
        gradients = {**read_dense(taps.one("clipped0"), actor_layers), **read_dense(taps.one("clipped1"), value_layers)}
        updated = {**read_dense(policy.actor_state.params, actor_layers),
                   **read_dense(policy.vf_state.params, value_layers)}
        if not probe.discrete:
            gradients["policy.log_std"] = np.asarray(taps.one("clipped0")["params"]["log_std"], dtype=np.float64)
            updated["policy.log_std"] = np.asarray(policy.actor_state.params["params"]["log_std"], dtype=np.float64)
        losses = {name.removeprefix("train/"): float(value) for name, value in model.logger.name_to_value.items()
                  if name in ("train/policy_gradient_loss", "train/value_loss", "train/entropy_loss", "train/pg_loss")}
        return ParityOutcome(
            RAN, targets=targets, gradients=gradients, updated=updated, losses=losses, defaults=ppo_defaults(model),
            notes=("a truncated episode's bootstrap (gamma * V(final observation)) is added to its reward as SBX's "
                   "collect_rollouts adds it",
                   "gradients recorded inside SBX's jitted _one_update, at the output of each optimizer chain's "
                   "clip_by_global_norm (jax.debug.callback)"),
        )
    finally:
        env.close()


def adam_eps(policy: Any) -> float:
    """The epsilon of the Adam SBX built: its ``optimizer_kwargs`` or Optax's default."""
    import inspect

    import optax

    default = inspect.signature(optax.adam).parameters["eps"].default
    return float(policy.optimizer_kwargs.get("eps", default))


def initialization() -> str:
    """What SBX's ``nn.Dense`` layers are initialized with (SBX passes no initializer but for PPO's
    optional ``ortho_init`` head): Flax's defaults, read from Flax."""
    import flax.linen as nn
    from flax.linen import linear

    dense = nn.Dense(1)
    kernel = ("lecun_normal (flax.linen.linear.default_kernel_init)"
              if dense.kernel_init is linear.default_kernel_init else repr(dense.kernel_init))
    bias = "zeros" if dense.bias_init is nn.initializers.zeros_init() or dense.bias_init is nn.initializers.zeros \
        else repr(dense.bias_init)
    return f"flax Dense defaults: kernel {kernel}, bias {bias}"


def ppo_defaults(model: Any) -> dict[str, Any]:
    """What SBX's PPO built, read back from the model (not from the adapter's mapping)."""
    policy = model.policy
    hyperparams = policy.actor_state.opt_state[1].hyperparams
    return {
        "optimizer": f"optax.{getattr(policy.optimizer_class, '__name__', policy.optimizer_class)}",
        "adam_eps": float(f"{float(hyperparams.get('eps', adam_eps(policy))):.6g}"),  # held as float32
        "grad_clip_scope": "per network (actor and critic optax chains, each clip_by_global_norm)",
        "initialization": initialization(),
        "orthogonal_init": bool(policy.ortho_init),
        "observation_normalization": False,
        "share_features_extractor": False,
        "advantage_std": "biased (jnp.std)" if model.normalize_advantage else "none",
        "value_clipping": "off" if model.clip_range_vf is None else str(model.clip_range_vf),
        "target_kl": model.target_kl,
        "normalize_advantage": bool(model.normalize_advantage),
        "ent_coef": float(model.ent_coef), "vf_coef": float(model.vf_coef),
        "max_grad_norm": float(model.max_grad_norm),
        "log_std_init": float(policy.log_std_init),
        "truncation_bootstrap": True,
    }
