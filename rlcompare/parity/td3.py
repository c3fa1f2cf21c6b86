"""The reference TD3 and DDPG updates: one gradient step of the critics on one minibatch, then one of
the actor against the stepped critics, then one Polyak step of the target actor and critics.

Equations (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods",
arXiv:1802.09477, Algorithm 1; DDPG: Lillicrap et al. 2016, arXiv:1509.02971, with the single critic
and the Gaussian exploration the field runs today), with the choices the papers leave open fixed as
Stable-Baselines3 2.x fixes them (``stable_baselines3/td3/td3.py`` ``TD3.train``,
``td3/policies.py`` ``Actor``, ``common/policies.py`` ``ContinuousCritic``, ``common/buffers.py``
``ReplayBuffer``; SB3's DDPG is TD3 with one critic, no delay and no target smoothing):

1. **Critics**: ``a' = clip(mu_target(s') + clip(eps, -c, c), -1, 1)`` with ``eps ~ N(0, sigma)``
   (target policy smoothing; the probe sets ``sigma = 0``, below), ``y = r + gamma * (1 - terminated)
   * min_i Q_target_i(s', a')`` (DDPG: its one critic); a truncated transition is bootstrapped
   (SB3's ``handle_timeout_termination``). Loss ``sum_i mean((Q_i(s, a) - y)^2)`` (no factor 1/2),
   one Adam step over all critics.
2. **Actor** (every ``policy_delay``-th critic step; the probe's delay is 1): ``-mean(Q_1(s, mu(s)))``
   with the first critic only, *after* its step; one Adam step.
3. **Targets**, with the actor's step: ``target <- tau * online + (1 - tau) * target`` for the
   target critics and the target actor (``polyak_update``).

- **Actor**: the hidden layers, a linear output layer, ``tanh``: actions in the policy's ``[-1, 1]``
  space, which the critics see (SB3's replay buffer stores the scaled action).
- **Optimizers**: two Adams (actor, critics), ``eps = 1e-8``, no gradient clipping.

What a one-step probe cannot show is left to the schedule and the fidelity report: the delay (the
first critic step of a run is not an actor step when ``policy_delay`` > 1, so the probe's delay is 1
and the run's traced schedule checks the delay) and the smoothing noise (a random draw no two
frameworks make alike: the probe's ``target_policy_noise`` is 0, so the clip and the ``[-1, 1]``
clamp of the target action are what the probe sees of it). The probe's minibatch of 32 transitions
has terminations and truncations; the target networks lag their online ones, so using one for the
other shows; the learning rate is 3e-3 so that every step shows.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlcompare.harness.parity import RAN, ParityOutcome, ParityProbe
from rlcompare.parity.networks import adam_step, as_float32, init_mlp, mlp, tensors
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, Variant, space_of
from rlcompare.spec.workload import Workload

BATCH = 32
ADAM_EPS = 1e-8
HIDDEN = [16, 16]

_COMMON_HYPERPARAMETERS = {
    "learning_rate": 3e-3, "gamma": 0.99, "buffer_size": BATCH, "learning_starts": 0, "minibatch_size": BATCH,
    "tau": 0.005, "train_every": 1, "gradient_steps": 1, "exploration_noise": 0.1,
}
TD3_HYPERPARAMETERS = {**_COMMON_HYPERPARAMETERS, "policy_delay": 1, "target_policy_noise": 0.0,
                       "target_noise_clip": 0.5}
DDPG_HYPERPARAMETERS = dict(_COMMON_HYPERPARAMETERS)


class TD3Reference(ReferenceUpdate):
    family = "TD3"
    #: The critics: two for TD3, one for DDPG.
    critics: ClassVar[tuple[str, ...]] = ("critic1", "critic2")
    hyperparameters: ClassVar[dict[str, Any]] = TD3_HYPERPARAMETERS
    seed_base: ClassVar[int] = 5_000
    variants: ClassVar[dict[str, Variant]] = {variant.name: variant for variant in (
        Variant("critic_loss_half", "critic loss with a factor 1/2: 0.5 * sum_i mean((Q_i - y)^2)",
                "defaults.critic_loss_scale", 1.0, 0.5),
        Variant("actor_uses_old_critic", "the actor's loss uses the critics from before their step",
                "defaults.actor_critic_order", "critics stepped first", "critics before their step"),
        Variant("actor_uses_min_q", "the actor's loss uses min_i Q_i, not the first critic",
                "defaults.actor_q", "Q_1", "min_i Q_i"),
        Variant("critic_sees_env_actions", "the critics see actions in the env's bounds, not in [-1, 1]",
                "defaults.critic_action_space", "[-1, 1]", "env bounds"),
        Variant("no_truncation_bootstrap", "truncated transitions are not bootstrapped (treated as terminal)",
                "defaults.truncation_bootstrap", True, False),
        Variant("adam_eps_1e-5", "Adam epsilon 1e-5 instead of 1e-8", "defaults.adam_eps", ADAM_EPS, 1e-5),
        Variant("target_actor_before_actor_step", "the target actor's Polyak step is taken before the actor's step, "
                "toward the actor from before it (SBX: every target moves after each critic step)",
                "hyperparameters.tau", "after the actor's step", "before the actor's step"),
    )}

    def cases(self) -> list[ProbeCase]:
        name = self.family.lower()
        return [ProbeCase("continuous", {
            "id": f"parity-{name}-continuous", "env": "Pendulum-v1", "algorithm": self.family, "env_steps": 2 * BATCH,
            "seeds": 1, "parallelism": {"envs_per_worker": 1, "workers": 1},
            "network": {"hidden_sizes": HIDDEN, "activation": "relu"}, "hyperparameters": self.hyperparameters,
            "evaluation": {"interval_steps": 2 * BATCH},
        })]

    # -- the probe -----------------------------------------------------------------------------------

    def build_probe(self, workload: Workload, seed: int = 0) -> ParityProbe:
        rng = np.random.default_rng(self.seed_base + seed)
        observation_dim, space = space_of(workload.env, workload.env_kwargs)
        hidden = list(workload.network.hidden_sizes)
        action_dim = int(np.prod(space["shape"]))
        weights = init_mlp(rng, "actor", observation_dim, hidden, action_dim)
        for critic in self.critics:
            weights.update(init_mlp(rng, critic, observation_dim + action_dim, hidden, 1))
        # targets that lag: the online weights moved away, so using one for the other shows
        for prefix in ("actor", *self.critics):
            weights.update({name.replace(f"{prefix}.", f"{prefix}_target.", 1):
                            as_float32(weights[name] + rng.normal(0.0, 0.2, weights[name].shape))
                            for name in list(weights) if name.startswith(f"{prefix}.")})
        size = int(workload.hyperparameters.minibatch_size)
        terminated = np.zeros(size)
        truncated = np.zeros(size)
        terminated[[3, 12, 21]] = 1.0
        truncated[[9, 27]] = 1.0
        batch = {
            "obs": as_float32(rng.normal(0.0, 1.0, (size, observation_dim))),
            "actions": as_float32(rng.uniform(-1.0, 1.0, (size, action_dim))),
            "rewards": as_float32(rng.normal(-1.0, 1.0, size)),
            "next_obs": as_float32(rng.normal(0.0, 1.0, (size, observation_dim))),
            "terminated": terminated, "truncated": truncated,
        }
        return ParityProbe(family=self.family, action_space=space, observation_dim=observation_dim,
                           network={"hidden_sizes": hidden, "activation": workload.network.activation},
                           hyperparameters=workload.hyperparameters.model_dump(mode="json"), weights=weights,
                           batch=batch, workload=workload.to_dict(), derived=workload.derived(), seed=seed)

    # -- the update ----------------------------------------------------------------------------------

    def expected(self, probe: ParityProbe, variants: frozenset[str] = frozenset()) -> ParityOutcome:
        import torch

        hp = probe.hyperparameters
        batch = probe.batch
        hidden, act = probe.network["hidden_sizes"], probe.network["activation"]
        lr, gamma, tau = hp["learning_rate"], hp["gamma"], hp["tau"]
        eps = 1e-5 if "adam_eps_1e-5" in variants else ADAM_EPS
        low = torch.tensor(probe.action_space["low"], dtype=torch.float64)
        high = torch.tensor(probe.action_space["high"], dtype=torch.float64)
        to_critic = (lambda a: low + (a + 1.0) * (high - low) / 2) if "critic_sees_env_actions" in variants \
            else (lambda a: a)

        params = tensors({name: value for name, value in probe.weights.items() if "_target." not in name})
        targets = tensors({name: value for name, value in probe.weights.items() if "_target." in name},
                          requires_grad=False)
        actor_names = sorted(name for name in params if name.startswith("actor."))
        critic_names = sorted(name for name in params if name.startswith("critic"))
        obs, next_obs = torch.tensor(batch["obs"]), torch.tensor(batch["next_obs"])
        actions, rewards = torch.tensor(batch["actions"]), torch.tensor(batch["rewards"])
        ends = batch["terminated"] if "no_truncation_bootstrap" not in variants else np.maximum(
            batch["terminated"], batch["truncated"])
        not_done = torch.tensor(1.0 - ends)

        # 1. the critics, against the target actor's smoothed action (noise 0 in the probe: clamped only)
        with torch.no_grad():
            smoothing = float(hp.get("target_policy_noise", 0.0) or 0.0)
            if smoothing:
                raise ValueError("the reference update is deterministic: the probe's target_policy_noise must be 0")
            next_actions = torch.clamp(_action(targets, "actor_target", hidden, act, next_obs), -1.0, 1.0)
            next_q = _min_q(targets, [f"{critic}_target" for critic in self.critics], hidden, act, next_obs,
                            to_critic(next_actions))
            q_target = rewards + gamma * not_done * next_q
        current = [_q(params, critic, hidden, act, obs, to_critic(actions)) for critic in self.critics]
        critic_loss = sum(((q - q_target) ** 2).mean() for q in current)
        if "critic_loss_half" in variants:
            critic_loss = 0.5 * critic_loss
        critic_grads = dict(zip(critic_names, torch.autograd.grad(critic_loss, [params[n] for n in critic_names]),
                                strict=True))
        new_critics = adam_step({name: params[name] for name in critic_names}, critic_grads, lr, eps)

        # 2. the actor, against the first critic after its step
        critics = {name: params[name].detach() for name in critic_names} if "actor_uses_old_critic" in variants \
            else new_critics
        actor_actions = to_critic(_action(params, "actor", hidden, act, obs))
        q_pi = (_min_q(critics, list(self.critics), hidden, act, obs, actor_actions)
                if "actor_uses_min_q" in variants else _q(critics, self.critics[0], hidden, act, obs, actor_actions))
        actor_loss = -q_pi.mean()
        actor_grads = dict(zip(actor_names, torch.autograd.grad(actor_loss, [params[n] for n in actor_names]),
                               strict=True))
        new_actor = adam_step({name: params[name] for name in actor_names}, actor_grads, lr, eps)

        # 3. the targets, with the actor's step
        online = {**new_critics, **new_actor}
        followed = {**online, **{name: params[name].detach() for name in actor_names}} \
            if "target_actor_before_actor_step" in variants else online
        new_targets = {name: tau * followed[name.replace("_target.", ".", 1)] + (1 - tau) * value
                       for name, value in targets.items()}

        numpy = lambda tensor: tensor.detach().numpy().astype(np.float64)  # noqa: E731
        return ParityOutcome(
            RAN, targets={"q_target": numpy(q_target)},
            gradients={name: numpy(grad) for name, grad in {**critic_grads, **actor_grads}.items()},
            updated={name: numpy(value) for name, value in {**online, **new_targets}.items()},
            losses={"critic": float(critic_loss.detach()), "actor": float(actor_loss.detach())},
        )


class DDPGReference(TD3Reference):
    """DDPG: TD3's update with one critic, no delay and no target smoothing (SB3's ``DDPG``)."""

    family = "DDPG"
    critics = ("critic1",)
    hyperparameters = DDPG_HYPERPARAMETERS
    seed_base = 6_000
    variants: ClassVar[dict[str, Variant]] = {name: variant for name, variant in TD3Reference.variants.items()
                                              if name != "actor_uses_min_q"}


def _action(params: dict[str, Any], prefix: str, hidden: list[int], act: str, obs: Any) -> Any:
    """The deterministic actor ``prefix``'s action at ``obs``, in ``[-1, 1]`` (``tanh`` of its output)."""
    import torch

    return torch.tanh(mlp(params, prefix, hidden, act, obs))


def _q(params: dict[str, Any], prefix: str, hidden: list[int], act: str, obs: Any, actions: Any) -> Any:
    """``Q(s, a)`` of critic ``prefix`` (input: the observation then the action), shape ``[B]``."""
    import torch

    return mlp(params, prefix, hidden, act, torch.cat([obs, actions], dim=-1)).squeeze(-1)


def _min_q(params: dict[str, Any], prefixes: list[str], hidden: list[int], act: str, obs: Any, actions: Any) -> Any:
    import torch

    values = [_q(params, prefix, hidden, act, obs, actions) for prefix in prefixes]
    return values[0] if len(values) == 1 else torch.min(torch.stack(values), dim=0).values
