"""rejax's own PPO targets and update on rlcompare's PPO parity probe (imports JAX and rejax).

The probe's algorithm is built as ``train()`` builds it (``PPO.create`` from the adapter's mapped
configuration, on the gymnax twin of the probe's environment), then:

1. the probe's weights are loaded into rejax's flax parameter trees: the actor
   (``DiscretePolicy``/``GaussianPolicy``: ``features`` MLP ``Dense_i``, then ``action_logits`` or
   ``action_mean``, and the state-independent ``action_log_std``) and the critic (``VNetwork``:
   ``Dense_0 .. Dense_k``); a flax ``kernel`` is ``(in, out)``, the transpose of the canonical
   ``weight``;
2. each network gets the optimizer rejax builds for it (``PPO.initialize_network_params``:
   ``optax.chain(optax.clip(max_grad_norm), optax.adam(learning_rate))``) with a pass-through between
   the two links that keeps what reaches Adam (the gradient after clipping) in its state; its
   structure is checked against the one rejax built;
3. the batch becomes rejax's ``Trajectory`` (``done`` is terminated or truncated, as gymnax reports
   it), ``PPO.calculate_gae`` computes advantages and targets, and ``PPO.update`` (actor, then critic)
   makes one optimizer step of each on the whole batch as one minibatch.

The rollout's last value: rejax computes it in ``train_iteration`` with the critic that collected
the rollout, before any update; the probe's stored ``last_values`` are that value, so they are used
(masked by the last step's ``done``, as ``train_iteration`` masks it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN, as_arrays

if TYPE_CHECKING:
    from rlcompare_rejax import RejaxAdapter


def _recording() -> Any:
    """An optax transformation that passes updates through and keeps them in its state."""
    import jax
    import optax

    def init(params: Any) -> Any:
        return jax.tree.map(lambda p: p * 0, params)

    def update(updates: Any, _state: Any, _params: Any = None) -> tuple[Any, Any]:
        return updates, updates

    return optax.GradientTransformation(init, update)


def _dense(weights: dict[str, Any], name: str) -> dict[str, Any]:
    import jax.numpy as jnp
    import numpy as np

    return {"kernel": jnp.asarray(np.asarray(weights[f"{name}.weight"], dtype=np.float32).T),
            "bias": jnp.asarray(np.asarray(weights[f"{name}.bias"], dtype=np.float32))}


def _names(prefix: str, hidden: int) -> list[str]:
    return [f"{prefix}.{i}" for i in range(hidden)] + [f"{prefix}.out"]


def _actor_params(probe: ParityProbe, hidden: int) -> dict[str, Any]:
    import jax.numpy as jnp
    import numpy as np

    names = _names("policy", hidden)
    tree: dict[str, Any] = {"features": {f"Dense_{i}": _dense(probe.weights, names[i]) for i in range(hidden)}}
    if probe.discrete:
        tree["action_logits"] = _dense(probe.weights, names[-1])
    else:
        tree["action_mean"] = _dense(probe.weights, names[-1])
        tree["action_log_std"] = jnp.asarray(np.asarray(probe.weights["policy.log_std"], dtype=np.float32))
    return {"params": tree}


def _critic_params(probe: ParityProbe, hidden: int) -> dict[str, Any]:
    names = _names("value", hidden)
    return {"params": {f"Dense_{i}": _dense(probe.weights, name) for i, name in enumerate(names)}}


def _canonical(actor: Any, critic: Any, hidden: int, discrete: bool) -> dict[str, Any]:
    """Flax trees (actor, critic) back to canonical names, kernels transposed to ``(out, in)``."""
    import numpy as np

    out: dict[str, Any] = {}
    policy, value = _names("policy", hidden), _names("value", hidden)
    layers = [(policy[i], actor["params"]["features"][f"Dense_{i}"]) for i in range(hidden)]
    layers.append((policy[-1], actor["params"]["action_logits" if discrete else "action_mean"]))
    layers += [(name, critic["params"][f"Dense_{i}"]) for i, name in enumerate(value)]
    for name, layer in layers:
        out[f"{name}.weight"] = np.asarray(layer["kernel"]).T
        out[f"{name}.bias"] = np.asarray(layer["bias"])
    if not discrete:
        out["policy.log_std"] = np.asarray(actor["params"]["action_log_std"])
    return out


def ppo_update(adapter: RejaxAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO minibatch step of rejax's own code on the probe (module docstring)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    import rejax
    from flax.training.train_state import TrainState
    from rejax.algos.ppo import AdvantageMinibatch, Trajectory

    from rlcompare_rejax.envs import make_gymnax

    workload = probe.workload_view()
    config, _ = adapter.native_config(workload)
    env, params = make_gymnax(workload.env)
    algo = rejax.PPO.create(env=env, env_params=params, **config)
    if algo.num_epochs != 1 or algo.num_minibatches != 1:
        return ParityOutcome.unverifiable(f"{algo.num_epochs} epoch(s) of {algo.num_minibatches} minibatch(es) on the "
                                          "probe: one optimizer step needs one of each")
    hidden = len(probe.network["hidden_sizes"])
    ts = algo.init_state(jax.random.PRNGKey(probe.seed))

    def train_state(params_tree: Any, built: Any) -> Any:
        tx = optax.chain(optax.clip(algo.max_grad_norm), _recording(), optax.adam(learning_rate=algo.learning_rate))
        state = TrainState.create(apply_fn=(), params=params_tree, tx=tx)
        rejax_structure = jax.tree.structure(built.opt_state)
        ours = jax.tree.structure((state.opt_state[0], state.opt_state[2]))
        if rejax_structure != ours or jax.tree.structure(built.params) != jax.tree.structure(params_tree):
            raise RuntimeError(f"rejax's optimizer or parameters changed shape: {rejax_structure} vs {ours}")
        return state

    actor_ts = train_state(_actor_params(probe, hidden), ts.actor_ts)
    critic_ts = train_state(_critic_params(probe, hidden), ts.critic_ts)
    ts = ts.replace(actor_ts=actor_ts, critic_ts=critic_ts)

    batch = probe.batch
    steps, envs = batch["rewards"].shape
    done = np.maximum(batch["terminated"], batch["truncated"]) > 0.5
    f32 = np.float32
    actions = batch["actions"].astype(np.int32) if probe.discrete else batch["actions"].astype(f32)
    trajectories = Trajectory(obs=jnp.asarray(batch["obs"].astype(f32)), action=jnp.asarray(actions),
                              log_prob=jnp.asarray(batch["old_log_prob"].astype(f32)),
                              reward=jnp.asarray(batch["rewards"].astype(f32)),
                              value=jnp.asarray(batch["old_values"].astype(f32)), done=jnp.asarray(done))
    last_val = jnp.where(jnp.asarray(done[-1]), 0, jnp.asarray(batch["last_values"].astype(f32)))
    advantages, targets = algo.calculate_gae(trajectories, last_val)

    def flat(x: Any) -> Any:
        return x.reshape((steps * envs, *x.shape[2:]))

    minibatch = AdvantageMinibatch(jax.tree.map(flat, trajectories), flat(advantages), flat(targets))
    new_ts = algo.update(ts, minibatch)

    grads = _canonical(new_ts.actor_ts.opt_state[1], new_ts.critic_ts.opt_state[1], hidden, probe.discrete)
    updated = _canonical(new_ts.actor_ts.params, new_ts.critic_ts.params, hidden, probe.discrete)
    return ParityOutcome(
        RAN,
        targets=as_arrays({"advantages": np.asarray(advantages), "returns": np.asarray(targets)}),
        gradients=as_arrays(grads), updated=as_arrays(updated),
        defaults={"optimizer": "adam (optax.adam), one per network", "adam_eps": 1e-8,
                  "initialization": "flax default: lecun_normal kernels, zero biases",
                  "observation_normalization": bool(algo.normalize_observations),
                  "reward_normalization": bool(algo.normalize_rewards),
                  "action_squashing": "none" if probe.discrete else "clip",
                  "log_std_init": 0.0, "learning_rate_schedule": "constant",
                  "value_clipping": "max(clipped, unclipped)", "value_loss": "mse", "value_loss_scale": 0.5,
                  "advantage_normalization": "per minibatch", "advantage_std": "biased",
                  "grad_clip_scope": "per element", "truncation_bootstrap": False},
        notes=(
            "the gradient is what reached Adam after optax.clip, recorded by a pass-through inserted in "
            "rejax's own chain (optax.clip(max_grad_norm), optax.adam(learning_rate))",
            "the rollout's last value is the probe's stored last_values: rejax computes it with the collecting "
            "critic before the update (PPO.train_iteration)",
            "done = terminated or truncated, as gymnax reports both: no bootstrap at truncation",
        ),
    )
