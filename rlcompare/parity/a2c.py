"""The reference A2C update: n-step (GAE) advantages over one rollout, one full-batch optimizer step.

Equations (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning",
arXiv:1602.01783, in its synchronous form; GAE: Schulman et al. 2016, arXiv:1506.02438), with the
choices the paper leaves open fixed as Stable-Baselines3 2.x fixes them (``stable_baselines3/a2c/a2c.py``,
``common/buffers.py`` ``RolloutBuffer.compute_returns_and_advantage``, ``common/on_policy_algorithm.py``
``collect_rollouts``, ``common/policies.py``):

- **Advantages**: GAE over the rollout (``gae_lambda`` 1.0 by default: n-step returns bootstrapped
  from the last observation's value), ``done_t`` is termination *or* truncation, and a truncated
  episode is bootstrapped by adding ``gamma V(s_final)`` to its last reward, as for PPO
  (:func:`rlcompare.parity.ppo.gae`). The values are those of the network being updated: A2C
  updates the policy that collected the rollout. Returns are ``A_t + V(s_t)``.
- **Advantage normalization** only when ``normalize_advantage`` (off by default; SB3's A2C:
  ``(A - mean) / (std + 1e-8)``, unbiased standard deviation).
- **Policy loss**: ``-mean(A log pi(a|s))``; **value loss**: ``mean((R - V(s))^2)`` (SB3's
  ``F.mse_loss``, no factor 1/2); **entropy**: ``-mean(H(pi(.|s)))``; the loss is
  ``policy + entropy_coef * entropy + value_coef * value``.
- **Optimizer**: one step over every parameter after clipping the global gradient norm to
  ``max_grad_norm``: Adam (``eps = 1e-5``, SB3's ``ActorCriticPolicy`` with ``optimizer = "adam"``),
  or RMSprop (``alpha = 0.99``, ``eps = 1e-5``, no momentum, not centered: SB3's A2C with
  ``use_rms_prop``, torch's ``RMSprop``, whose ``eps`` is added after the square root and whose
  square average starts at zero). SB3's ``RMSpropTFLike`` (TensorFlow's RMSProp) starts its square
  average at one and puts ``eps`` inside the square root: a variant.
- **Policy head** and networks as for PPO: categorical logits, or a Gaussian with a
  state-independent log-std (initially 0) and unsquashed actions; separate policy and value networks.

The probe is one rollout of 5 steps in 2 envs with a termination and a truncation in it, the
values stored with it computed by the probe's own network. Its entropy coefficient is 0.05 (at 0.01
an ignored entropy bonus moved the discrete probe's gradient by 0.07%, inside the tolerance), and the
RMSprop probe's learning rate is 1e-2, so that TensorFlow's RMSProp step (about ``lr * g``) is
resolved by float32 weights.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import numpy as np

from rlcompare.harness.parity import RAN, ParityOutcome, ParityProbe
from rlcompare.parity.networks import adam_step, as_float32, clip_by_global_norm, init_mlp, mlp, rmsprop_step, tensors
from rlcompare.parity.ppo import _distribution, _entropy, _log_prob, gae, random_rollout, sample_actions
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, Variant, space_of
from rlcompare.spec.workload import Workload

#: Rollout length and envs of the probe: one update on 10 transitions.
STEPS, ENVS = 5, 2
ADAM_EPS = 1e-5
RMSPROP_EPS = 1e-5
RMSPROP_ALPHA = 0.99
HIDDEN = [16, 16]

A2C_HYPERPARAMETERS = {
    "learning_rate": 7e-4, "optimizer": "adam", "gamma": 0.99, "gae_lambda": 1.0, "rollout_steps": STEPS,
    "entropy_coef": 0.05, "value_coef": 0.5, "max_grad_norm": 0.5, "normalize_advantage": False,
}

#: Variants about one optimizer, left out of the probes that use the other.
_RMSPROP_ONLY = frozenset({"rmsprop_tf_like", "rmsprop_eps_inside_sqrt", "rmsprop_eps_1e-8", "optimizer_adam"})
_ADAM_ONLY = frozenset({"optimizer_rmsprop"})


class A2CReference(ReferenceUpdate):
    family = "A2C"
    variants: ClassVar[dict[str, Variant]] = {variant.name: variant for variant in (
        Variant("rmsprop_tf_like", "TensorFlow's RMSProp (SB3's RMSpropTFLike): square average starting at 1, eps "
                "inside the square root", "defaults.optimizer", "torch RMSprop", "RMSpropTFLike"),
        Variant("rmsprop_eps_inside_sqrt", "RMSprop with eps inside the square root, the square average starting at 0 "
                "(Keras', optax's scale_by_rms)", "defaults.optimizer", "torch RMSprop", "eps inside sqrt"),
        Variant("rmsprop_eps_1e-8", "RMSprop epsilon 1e-8 (torch's default) instead of 1e-5", "defaults.rmsprop_eps",
                RMSPROP_EPS, 1e-8),
        Variant("optimizer_adam", "Adam (eps 1e-5) although the optimizer is RMSprop", "hyperparameters.optimizer",
                "rmsprop", "adam"),
        Variant("optimizer_rmsprop", "RMSprop (alpha 0.99, eps 1e-5) although the optimizer is Adam",
                "hyperparameters.optimizer", "adam", "rmsprop"),
        Variant("adam_eps_1e-8", "Adam epsilon 1e-8 (torch's default) instead of 1e-5", "defaults.adam_eps",
                ADAM_EPS, 1e-8),
        Variant("no_grad_clip", "no gradient-norm clipping although max_grad_norm is set",
                "hyperparameters.max_grad_norm", "clipped", "not clipped"),
        Variant("grad_clip_per_network", "gradient norm clipped per network (policy, value) instead of jointly",
                "defaults.grad_clip_scope", "joint", "per network"),
        Variant("normalize_advantage", "advantages normalized although normalize_advantage is off",
                "hyperparameters.normalize_advantage", False, True),
        Variant("half_value_loss", "value loss halved: 0.5 * mean((R - V)^2)", "defaults.value_loss_scale", 1.0, 0.5),
        Variant("huber_value_loss", "Huber (smooth L1) value loss instead of the squared error",
                "defaults.value_loss", "mse", "huber"),
        Variant("no_truncation_bootstrap", "truncated episodes are not bootstrapped (treated as terminated)",
                "defaults.truncation_bootstrap", True, False),
        Variant("no_entropy_bonus", "the entropy bonus is left out although entropy_coef is set",
                "hyperparameters.entropy_coef", "applied", "ignored"),
        Variant("value_coef_ignored", "the value loss is added with weight 1 whatever value_coef (skrl)",
                "hyperparameters.value_coef", "value_coef", 1.0),
    )}
    exclusive: ClassVar[tuple[frozenset[str], ...]] = (
        frozenset({"no_grad_clip", "grad_clip_per_network"}),
        *(frozenset(pair) for pair in itertools.combinations(
            ("rmsprop_tf_like", "rmsprop_eps_inside_sqrt", "rmsprop_eps_1e-8", "optimizer_adam"), 2)),
        frozenset({"adam_eps_1e-8", "optimizer_rmsprop"}),
        # Adam's epsilon means nothing beside an RMSprop variant (on the RMSprop probe it needs optimizer_adam)
        *(frozenset({"adam_eps_1e-8", name}) for name in ("rmsprop_tf_like", "rmsprop_eps_inside_sqrt",
                                                          "rmsprop_eps_1e-8")),
        frozenset({"half_value_loss", "huber_value_loss"}),
    )

    def cases(self) -> list[ProbeCase]:
        base = {"algorithm": "A2C", "env_steps": STEPS * ENVS, "seeds": 1,
                "parallelism": {"envs_per_worker": ENVS, "workers": 1},
                "network": {"hidden_sizes": HIDDEN, "activation": "tanh"},
                "evaluation": {"interval_steps": STEPS * ENVS}}
        # a larger step on the RMSprop probe: TensorFlow's RMSProp moves a parameter by about lr * g
        # (not lr * sign g), which at 7e-4 is below what float32 weights resolve
        rmsprop = {**A2C_HYPERPARAMETERS, "optimizer": "rmsprop", "learning_rate": 1e-2}
        return [
            ProbeCase("discrete", {**base, "id": "parity-a2c-discrete", "env": "CartPole-v1",
                                   "hyperparameters": A2C_HYPERPARAMETERS}, excluded=_RMSPROP_ONLY),
            ProbeCase("discrete-rmsprop", {**base, "id": "parity-a2c-discrete-rmsprop", "env": "CartPole-v1",
                                           "hyperparameters": rmsprop}, excluded=_ADAM_ONLY),
            ProbeCase("continuous", {**base, "id": "parity-a2c-continuous", "env": "Pendulum-v1",
                                     "hyperparameters": A2C_HYPERPARAMETERS}, excluded=_RMSPROP_ONLY),
        ]

    # -- the probe -----------------------------------------------------------------------------------

    def build_probe(self, workload: Workload, seed: int = 0) -> ParityProbe:
        import torch

        rng = np.random.default_rng(3_000 + seed)
        observation_dim, space = space_of(workload.env, workload.env_kwargs)
        hidden = list(workload.network.hidden_sizes)
        act = workload.network.activation
        discrete = space["kind"] == "discrete"
        actions_out = space["n"] if discrete else int(np.prod(space["shape"]))
        weights = {**init_mlp(rng, "policy", observation_dim, hidden, actions_out, out_scale=0.5),
                   **init_mlp(rng, "value", observation_dim, hidden, 1)}
        if not discrete:
            weights["policy.log_std"] = np.zeros(actions_out)
        steps, envs = workload.hyperparameters.rollout_steps, workload.parallelism.total_envs
        # one episode ends, another is cut off by its time limit; rewards with spread: some returns stray
        # from the values by more than 1 (where Huber differs)
        rollout = random_rollout(rng, steps, envs, observation_dim, (1, 0), (2, 1))
        obs, last_obs, terminal_obs = rollout["obs"], rollout["last_obs"], rollout["terminal_obs"]
        rewards, terminated, truncated = rollout["rewards"], rollout["terminated"], rollout["truncated"]
        # A2C collects with the policy it updates: the stored values are the probe's own network's
        params = tensors(weights, requires_grad=False)
        flat = torch.tensor(obs.reshape(steps * envs, observation_dim))
        value = lambda x: mlp(params, "value", hidden, act, x).squeeze(-1).numpy()  # noqa: E731
        with torch.no_grad():
            dist = _distribution(params, hidden, act, flat, discrete)
            actions = sample_actions(dist, discrete, rng)
            old_values = value(flat)
            terminal_values = value(torch.tensor(terminal_obs.reshape(steps * envs, observation_dim)))
            last_values = value(torch.tensor(last_obs))
        shape = (steps, envs)
        batch = {
            "obs": obs, "actions": actions.reshape(shape if discrete else (*shape, actions_out)),
            "rewards": rewards, "terminated": terminated, "truncated": truncated, "terminal_obs": terminal_obs,
            "old_values": as_float32(old_values.reshape(shape)),
            "terminal_values": as_float32(terminal_values.reshape(shape) * truncated),
            "last_obs": last_obs, "last_values": as_float32(last_values),
        }
        return ParityProbe(family=self.family, action_space=space, observation_dim=observation_dim,
                           network={"hidden_sizes": hidden, "activation": act},
                           hyperparameters=workload.hyperparameters.model_dump(mode="json"), weights=weights,
                           batch=batch, workload=workload.to_dict(), derived=workload.derived(), seed=seed)

    # -- the update ----------------------------------------------------------------------------------

    def expected(self, probe: ParityProbe, variants: frozenset[str] = frozenset()) -> ParityOutcome:
        import torch

        hp = probe.hyperparameters
        batch = probe.batch
        hidden, act = probe.network["hidden_sizes"], probe.network["activation"]
        advantages, returns = gae(batch, hp["gamma"], hp["gae_lambda"],
                                  bootstrap_truncated="no_truncation_bootstrap" not in variants)
        steps, envs = batch["rewards"].shape
        flat = lambda array: torch.tensor(array.reshape(steps * envs, *array.shape[2:]))  # noqa: E731
        obs, actions = flat(batch["obs"]), flat(batch["actions"])
        adv, ret = flat(advantages), flat(returns)

        params = tensors(probe.weights)
        dist = _distribution(params, hidden, act, obs, probe.discrete)
        log_prob = _log_prob(dist, actions, probe.discrete)
        entropy = _entropy(dist, probe.discrete)
        values = mlp(params, "value", hidden, act, obs).squeeze(-1)

        if hp["normalize_advantage"] != ("normalize_advantage" in variants) and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        policy_loss = -(adv * log_prob).mean()
        if "huber_value_loss" in variants:
            value_loss = torch.nn.functional.smooth_l1_loss(values, ret)
        else:
            value_loss = ((ret - values) ** 2).mean()
        if "half_value_loss" in variants:
            value_loss = 0.5 * value_loss
        entropy_loss = -entropy.mean()
        entropy_coef = 0.0 if "no_entropy_bonus" in variants else hp["entropy_coef"]
        value_coef = 1.0 if "value_coef_ignored" in variants else hp["value_coef"]
        loss = policy_loss + entropy_coef * entropy_loss + value_coef * value_loss

        names = sorted(params)
        grads = dict(zip(names, torch.autograd.grad(loss, [params[name] for name in names]), strict=True))
        if "grad_clip_per_network" in variants:
            grads = {**clip_by_global_norm({k: v for k, v in grads.items() if not k.startswith("value.")},
                                           hp["max_grad_norm"]),
                     **clip_by_global_norm({k: v for k, v in grads.items() if k.startswith("value.")},
                                           hp["max_grad_norm"])}
        elif "no_grad_clip" not in variants:
            grads = clip_by_global_norm(grads, hp["max_grad_norm"])
        updated = self._step(params, grads, hp, variants)
        numpy = lambda tensor: tensor.detach().numpy().astype(np.float64)  # noqa: E731
        return ParityOutcome(
            RAN, targets={"advantages": advantages, "returns": returns},
            gradients={name: numpy(grad) for name, grad in grads.items()},
            updated={name: numpy(value) for name, value in updated.items()},
            losses={"policy": float(policy_loss.detach()), "value": float(value_loss.detach()),
                    "entropy": float(entropy_loss.detach()), "total": float(loss.detach())},
        )

    @staticmethod
    def _step(params: dict[str, Any], grads: dict[str, Any], hp: dict[str, Any],
              variants: frozenset[str]) -> dict[str, Any]:
        """The optimizer's first step: the probe's optimizer, or the one a variant names."""
        rmsprop = hp["optimizer"] == "rmsprop"
        if "optimizer_adam" in variants or "optimizer_rmsprop" in variants:
            rmsprop = not rmsprop
        lr = hp["learning_rate"]
        if not rmsprop:
            return adam_step(params, grads, lr, 1e-8 if "adam_eps_1e-8" in variants else ADAM_EPS)
        if "rmsprop_tf_like" in variants:
            return rmsprop_tf_like_step(params, grads, lr, RMSPROP_EPS, RMSPROP_ALPHA)
        if "rmsprop_eps_inside_sqrt" in variants:
            return {name: value.detach() - lr * grads[name] / ((1 - RMSPROP_ALPHA) * grads[name] ** 2 + RMSPROP_EPS).sqrt()
                    for name, value in params.items()}
        return rmsprop_step(params, grads, lr, 1e-8 if "rmsprop_eps_1e-8" in variants else RMSPROP_EPS,
                            RMSPROP_ALPHA)


def rmsprop_tf_like_step(params: dict[str, Any], grads: dict[str, Any], lr: float, eps: float,
                         alpha: float) -> dict[str, Any]:
    """One step of SB3's ``RMSpropTFLike`` from fresh state (``common/sb2_compat/rmsprop_tf_like.py``):
    the square average starts at one, as TensorFlow's, and ``eps`` is added inside the square root."""
    return {name: value.detach() - lr * grads[name] / (alpha + (1 - alpha) * grads[name] ** 2 + eps).sqrt()
            for name, value in params.items()}
