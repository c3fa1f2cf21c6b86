"""SBX's own DQN, SAC, TD3 and DDPG updates on the parity probes.

The probe's batch goes into SB3's ``ReplayBuffer`` (which SBX builds and samples; truncations as
``TimeLimit.truncated`` infos, as SB3's collection stores them), drawn back in order through the
buffer's own ``_get_samples`` instead of its random sampler; SBX's ``train()`` then runs its jitted
update on it: the target computation, the loss, one step of each optimizer and the Polyak step of the
targets. Gradients and TD targets are tapped inside the jitted code (:class:`rlcompare_sbx.parity.Taps`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare_sbx import configure_jax
from rlcompare_sbx.parity import Path, Taps, _vec_env, adam_eps, dense_names, initialization, load_dense, read_dense

if TYPE_CHECKING:
    from rlcompare_sbx import SBXAdapter

_IN_ORDER = ("the minibatch is the probe's batch in order, drawn through SB3's ReplayBuffer._get_samples instead of "
             "its random sampler")
_TAPPED = ("gradients and TD targets recorded inside SBX's jitted update (jax.debug.callback on the gradients each "
           "TrainState's optimizer receives and on the target_q_values its loss function closes over)")


def _replay_batch(model: Any, batch: dict[str, Any], discrete: bool = False) -> int:
    """The probe's batch added to SB3's ``ReplayBuffer`` as SB3's collection stores transitions
    (truncations as ``TimeLimit.truncated`` infos; continuous actions in the policy's ``[-1, 1]``
    space), and the buffer's sampler replaced by its own ``_get_samples`` over the batch in order.
    Returns its size."""
    import numpy as np

    size = len(batch["rewards"])
    buffer = model.replay_buffer
    for i in range(size):
        done = bool(batch["terminated"][i] or batch["truncated"][i])
        info = {"TimeLimit.truncated": bool(batch["truncated"][i] and not batch["terminated"][i])}
        action = np.array([[int(batch["actions"][i])]]) if discrete else batch["actions"][i][None].astype(np.float32)
        buffer.add(batch["obs"][i][None].astype(np.float32), batch["next_obs"][i][None].astype(np.float32),
                   action, np.array([batch["rewards"][i]], dtype=np.float32), np.array([done]), [info])
    buffer.sample = lambda batch_size, env=None: buffer._get_samples(np.arange(size), env=env)
    return size


def _model(adapter: SBXAdapter, probe: ParityProbe) -> tuple[Any, Any]:
    configure_jax(1)
    env = _vec_env(probe)
    model, _ = adapter.build_model(probe.workload_view(), env, probe.seed)
    return model, env


def _tap_optimizers(taps: Taps, owner: Any, states: dict[str, str]) -> None:
    """Replace each TrainState ``owner.<attribute>`` by the same state whose optimizer taps the
    gradients it receives, as ``states[attribute]``."""
    for attribute, name in states.items():
        state = getattr(owner, attribute)
        setattr(owner, attribute, state.replace(tx=taps.transformation(name, state.tx)))


def _critic_base(params: Any) -> tuple[str, ...]:
    """Where SBX's ``VectorCritic`` keeps its vmapped ``ContinuousCritic``: ``("params", <its name>)``."""
    (name,) = params["params"].keys()
    return ("params", name)


def _critic_layers(params: Any, prefix: str, hidden: int) -> dict[Path, str]:
    base = _critic_base(params)
    return {(*base, path[-1]): name for path, name in dense_names(prefix, hidden).items()}


def _load_critics(state: Any, probe: ParityProbe, critics: int, hidden: int) -> tuple[Any, dict[str, Any]]:
    """The probe's critics (and their targets) in SBX's vmapped critic state; with the layer maps."""
    params, target = state.params, state.target_params
    layers: dict[str, Any] = {}
    for i in range(critics):
        online = _critic_layers(params, f"critic{i + 1}", hidden)
        lagging = _critic_layers(target, f"critic{i + 1}_target", hidden)
        params = load_dense(params, online, probe.weights, index=i)
        target = load_dense(target, lagging, probe.weights, index=i)
        layers[f"critic{i + 1}"], layers[f"critic{i + 1}_target"] = online, lagging
    return state.replace(params=params, target_params=target), layers


def _read_critics(state: Any, layers: dict[str, Any], critics: int, gradient: Any = None) -> tuple[dict, dict]:
    """(online critics' gradients or values, target critics' values), by canonical name."""
    online: dict[str, Any] = {}
    targets: dict[str, Any] = {}
    for i in range(critics):
        source = state.params if gradient is None else gradient
        online.update(read_dense(source, layers[f"critic{i + 1}"], index=i))
        targets.update(read_dense(state.target_params, layers[f"critic{i + 1}_target"], index=i))
    return online, targets


def _losses(model: Any, names: tuple[str, ...]) -> dict[str, float]:
    return {name.removeprefix("train/"): float(value) for name, value in model.logger.name_to_value.items()
            if name.removeprefix("train/") in names}


# -- DQN ---------------------------------------------------------------------------------------------


def dqn_update(adapter: SBXAdapter, probe: ParityProbe) -> ParityOutcome:
    """One DQN gradient step on the probe's batch: ``train(batch_size=B, gradient_steps=1)``."""
    import numpy as np

    model, env = _model(adapter, probe)
    try:
        policy = model.policy
        hidden = len(probe.network["hidden_sizes"])
        online, lagging = dense_names("q", hidden), dense_names("q_target", hidden)
        state = policy.qf_state
        policy.qf_state = state.replace(params=load_dense(state.params, online, probe.weights),
                                        target_params=load_dense(state.target_params, lagging, probe.weights))
        taps = Taps()
        _tap_optimizers(taps, policy, {"qf_state": "q"})
        size = _replay_batch(model, probe.batch, discrete=True)
        model._current_progress_remaining = 1.0
        with taps.td_targets():
            model.train(batch_size=size, gradient_steps=1)
        if taps.count("q") != 1 or taps.count("q_target") != 1:
            return ParityOutcome.unverifiable("SBX's DQN train() did not make one step of its Q-network")
        defaults = {
            "optimizer": "optax.adam", "adam_eps": adam_eps(policy), "td_loss": "huber (optax.huber_loss, delta 1)",
            "double_q": False, "max_grad_norm": "none (no clipping in SBX's DQN)",
            "target_update": (f"polyak tau={model.tau}" if model.tau < 1 else "hard copy")
            + f" every {model.target_update_interval} vector steps",
            "truncation_bootstrap": bool(model.replay_buffer.handle_timeout_termination),
            "exploration": f"linear {model.exploration_initial_eps} -> {model.exploration_final_eps} over "
                           f"{model.exploration_fraction} of the budget",
            "initialization": initialization(), "q_network_units": int(policy.n_units),
        }
        return ParityOutcome(
            RAN, targets={"q_target": np.asarray(taps.one("q_target"), dtype=np.float64).reshape(-1)},
            gradients=read_dense(taps.one("q"), online),
            updated={**read_dense(policy.qf_state.params, online), **read_dense(policy.qf_state.target_params, lagging)},
            losses=_losses(model, ("critic_loss",)), defaults=defaults, notes=(_IN_ORDER, _TAPPED))
    finally:
        env.close()


# -- SAC ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def without_sampling_noise() -> Iterator[None]:
    """Inside the block, TensorFlow Probability's ``Normal`` (JAX substrate) samples its mean: SBX's
    squashed Gaussian (``TanhTransformedDistribution`` of a ``MultivariateNormalDiag``, which draws
    standard normals and shifts and scales them) then samples ``tanh(mean)``, through its own
    bijectors (the Tanh bijector caches the pre-squash value its log-probability inverts)."""
    import jax.numpy as jnp
    import tensorflow_probability.substrates.jax as tfp

    normal = tfp.distributions.Normal
    original = normal._sample_n

    def mean(self: Any, n: Any, seed: Any = None) -> Any:
        shape = (n, *self.batch_shape)
        loc = jnp.asarray(self.loc) + jnp.zeros_like(jnp.asarray(self.scale))
        return jnp.broadcast_to(loc, shape).astype(self.dtype)

    normal._sample_n = mean
    try:
        yield
    finally:
        normal._sample_n = original


def sac_update(adapter: SBXAdapter, probe: ParityProbe) -> ParityOutcome:
    """One SAC gradient step on the probe's batch: ``train(gradient_steps=1, batch_size=B)``."""
    import jax.numpy as jnp
    import numpy as np

    model, env = _model(adapter, probe)
    try:
        if "log_ent_coef" not in model.ent_coef_state.params:
            return ParityOutcome.unverifiable("SBX's SAC was built with a fixed entropy coefficient; the probe asks "
                                              "for a learned one (entropy_coef 'auto')")
        policy = model.policy
        hidden = len(probe.network["hidden_sizes"])
        actor_layers = dense_names("actor", hidden, heads=("mean", "log_std"))
        policy.actor_state = policy.actor_state.replace(params=load_dense(policy.actor_state.params, actor_layers,
                                                                          probe.weights))
        policy.qf_state, critic_layers = _load_critics(policy.qf_state, probe, 2, hidden)
        log_alpha = model.ent_coef_state.params["log_ent_coef"]
        model.ent_coef_state = model.ent_coef_state.replace(params={
            **model.ent_coef_state.params,
            "log_ent_coef": jnp.asarray(probe.weights["log_alpha"].reshape(log_alpha.shape), dtype=log_alpha.dtype)})
        taps = Taps()
        _tap_optimizers(taps, policy, {"actor_state": "actor", "qf_state": "critic"})
        _tap_optimizers(taps, model, {"ent_coef_state": "alpha"})
        size = _replay_batch(model, probe.batch)
        model._current_progress_remaining = 1.0
        with taps.td_targets(), without_sampling_noise():
            model.train(gradient_steps=1, batch_size=size)
        if any(taps.count(name) != 1 for name in ("actor", "critic", "alpha", "q_target")):
            return ParityOutcome.unverifiable("SBX's SAC train() did not make one step of each optimizer (actor, "
                                              "critics, temperature)")
        critic_gradients, _ = _read_critics(policy.qf_state, critic_layers, 2, gradient=taps.one("critic"))
        critics, critic_targets = _read_critics(policy.qf_state, critic_layers, 2)
        gradients = {**read_dense(taps.one("actor"), actor_layers), **critic_gradients,
                     "log_alpha": np.asarray(taps.one("alpha")["log_ent_coef"], dtype=np.float64).reshape(1)}
        updated = {**read_dense(policy.actor_state.params, actor_layers), **critics, **critic_targets,
                   "log_alpha": np.asarray(model.ent_coef_state.params["log_ent_coef"], dtype=np.float64).reshape(1)}
        return ParityOutcome(
            RAN, targets={"q_target": np.asarray(taps.one("q_target"), dtype=np.float64).reshape(-1)},
            gradients=gradients, updated=updated,
            losses=_losses(model, ("actor_loss", "critic_loss", "ent_coef_loss", "ent_coef")),
            defaults=_sac_defaults(model), notes=(_IN_ORDER, _TAPPED, "sampling noise off: TensorFlow Probability's "
                                                  "Normal samples its mean, so the actor samples tanh(mean)"))
    finally:
        env.close()


def _sac_defaults(model: Any) -> dict[str, Any]:
    policy = model.policy
    return {
        "optimizer": "optax.adam", "adam_eps": adam_eps(policy), "adam_eps_ent_coef": adam_eps(policy),
        "action_squashing": "tanh (tfp.bijectors.Tanh)",
        "squash_correction_eps": 0.0,
        "action_bounds": [model.action_space.low.tolist(), model.action_space.high.tolist()],
        "target_update": f"polyak tau={model.tau} after every critic step",
        "target_entropy": float(model.target_entropy), "n_critics": int(policy.n_critics),
        "policy_delay": int(model.policy_delay),
        "order": "critics, Polyak step, actor, temperature (alpha from before its step in all three)",
        "truncation_bootstrap": bool(model.replay_buffer.handle_timeout_termination),
        "initialization": initialization(),
        "qf_learning_rate": float(model.qf_learning_rate),
    }


# -- TD3, DDPG ---------------------------------------------------------------------------------------


def td3_update(adapter: SBXAdapter, probe: ParityProbe) -> ParityOutcome:
    """One TD3 (or DDPG) gradient step on the probe's batch: ``train(gradient_steps=1, batch_size=B)``."""
    import numpy as np

    model, env = _model(adapter, probe)
    try:
        policy = model.policy
        hidden = len(probe.network["hidden_sizes"])
        critics = int(policy.n_critics)
        actor, actor_target = dense_names("actor", hidden), dense_names("actor_target", hidden)
        state = policy.actor_state
        policy.actor_state = state.replace(params=load_dense(state.params, actor, probe.weights),
                                           target_params=load_dense(state.target_params, actor_target, probe.weights))
        policy.qf_state, critic_layers = _load_critics(policy.qf_state, probe, critics, hidden)
        taps = Taps()
        _tap_optimizers(taps, policy, {"actor_state": "actor", "qf_state": "critic"})
        size = _replay_batch(model, probe.batch)
        model._current_progress_remaining = 1.0
        with taps.td_targets():
            model.train(gradient_steps=1, batch_size=size)
        if any(taps.count(name) != 1 for name in ("actor", "critic", "q_target")):
            return ParityOutcome.unverifiable(f"SBX's {probe.family} train() did not make one critic and one actor "
                                              "step (the probe's delay is 1)")
        critic_gradients, _ = _read_critics(policy.qf_state, critic_layers, critics, gradient=taps.one("critic"))
        critic_values, critic_targets = _read_critics(policy.qf_state, critic_layers, critics)
        updated = {**read_dense(policy.actor_state.params, actor),
                   **read_dense(policy.actor_state.target_params, actor_target), **critic_values, **critic_targets}
        defaults = {
            "optimizer": "optax.adam", "adam_eps": adam_eps(policy), "n_critics": critics,
            "policy_delay": int(model.policy_delay), "target_policy_noise": float(model.target_policy_noise),
            "target_noise_clip": float(model.target_noise_clip), "critic_loss_scale": 0.5,
            "actor_q": "min_i Q_i" if critics > 1 else "Q_1",
            "target_update": f"polyak tau={model.tau} of critics and actor after every critic step, before the actor's",
            "action_bounds": [model.action_space.low.tolist(), model.action_space.high.tolist()],
            "truncation_bootstrap": bool(model.replay_buffer.handle_timeout_termination),
            "initialization": initialization(),
            "qf_learning_rate": float(model.qf_learning_rate),
        }
        return ParityOutcome(
            RAN, targets={"q_target": np.asarray(taps.one("q_target"), dtype=np.float64).reshape(-1)},
            gradients={**read_dense(taps.one("actor"), actor), **critic_gradients}, updated=updated,
            losses=_losses(model, ("actor_loss", "critic_loss")), defaults=defaults, notes=(_IN_ORDER, _TAPPED))
    finally:
        env.close()
