"""The reference DQN update: one gradient step of the TD loss on one minibatch.

Equations (Mnih et al. 2015, "Human-level control through deep reinforcement learning", Nature
518:529-533; double Q-learning: van Hasselt, Guez and Silver 2016, AAAI), with the choices the paper
leaves open fixed as Stable-Baselines3 2.x fixes them (``stable_baselines3/dqn/dqn.py``,
``dqn/policies.py``, ``common/buffers.py``):

- **Target**: ``y = r + gamma * (1 - terminated) * max_a Q_target(s', a)``; a transition cut off by
  a time limit (truncated, not terminated) is bootstrapped (SB3's ``handle_timeout_termination``).
  With ``double_q``: ``Q_target(s', argmax_a Q(s', a))``.
- **Loss**: Huber (smooth L1, delta 1) between ``Q(s, a)`` and ``y``, averaged over the minibatch.
- **Optimizer**: one Adam step (``eps = 1e-8``, torch's default, as SB3's DQN policy leaves it),
  after clipping the global gradient norm to ``max_grad_norm``. The target network does not move in
  the step (its sync is a matter of the schedule, traced separately).
- The Q-network is the workload's ``network`` with one output per action.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from rlcompare.harness.parity import RAN, ParityOutcome, ParityProbe
from rlcompare.parity.networks import adam_step, as_float32, clip_by_global_norm, init_mlp, mlp, rmsprop_step, tensors
from rlcompare.parity.reference import ProbeCase, ReferenceUpdate, Variant, space_of
from rlcompare.spec.workload import Workload

BATCH = 32
ADAM_EPS = 1e-8
HIDDEN = [16, 16]

DQN_HYPERPARAMETERS = {
    "learning_rate": 1e-3, "gamma": 0.99, "buffer_size": BATCH, "learning_starts": 0, "minibatch_size": BATCH,
    "train_every": 1, "gradient_steps": 1, "target_update_interval": 10_000, "exploration_initial_eps": 1.0,
    "exploration_final_eps": 0.05, "exploration_fraction": 0.1, "max_grad_norm": 10.0, "double_q": False,
}


class DQNReference(ReferenceUpdate):
    family = "DQN"
    variants: ClassVar[dict[str, Variant]] = {variant.name: variant for variant in (
        Variant("mse_loss", "squared TD error instead of the Huber loss", "defaults.td_loss", "huber", "mse"),
        Variant("half_mse_loss", "half the squared TD error (0.5 * mean(delta^2))", "defaults.td_loss", "huber",
                "0.5 * mse"),
        Variant("double_q", "double Q-learning targets although double_q is off", "hyperparameters.double_q",
                False, True),
        Variant("no_truncation_bootstrap", "truncated transitions are not bootstrapped (treated as terminal)",
                "defaults.truncation_bootstrap", True, False),
        Variant("online_target", "targets from the online network, not the target network",
                "defaults.target_network", "separate", "online"),
        Variant("adam_eps_1e-5", "Adam epsilon 1e-5 instead of 1e-8", "defaults.adam_eps", ADAM_EPS, 1e-5),
        Variant("adam_eps_0.01", "Adam epsilon 0.01/32 (Dopamine's 3.125e-4)", "defaults.adam_eps", ADAM_EPS,
                0.01 / 32),
        Variant("no_grad_clip", "no gradient-norm clipping although max_grad_norm is set",
                "hyperparameters.max_grad_norm", "clipped", "not clipped"),
        Variant("rmsprop", "RMSprop (alpha 0.99, eps 1e-5) instead of Adam", "defaults.optimizer", "adam",
                "rmsprop"),
        Variant("sum_loss", "the loss summed over the minibatch instead of averaged", "defaults.td_loss_reduction",
                "mean", "sum"),
    )}
    exclusive: ClassVar[tuple[frozenset[str], ...]] = (
        frozenset({"mse_loss", "half_mse_loss"}), frozenset({"adam_eps_1e-5", "adam_eps_0.01"}),
        frozenset({"rmsprop", "adam_eps_1e-5"}), frozenset({"rmsprop", "adam_eps_0.01"}),
        frozenset({"double_q", "online_target"}),
    )

    def cases(self) -> list[ProbeCase]:
        """Two probes: the gradient's norm under ``max_grad_norm`` (clipping idle: the loss's scale
        shows), and far over it (clipping acts: whether it is applied shows). One probe cannot show
        both, since a clipped gradient has the same norm whatever the loss's scale."""
        base = {"env": "CartPole-v1", "algorithm": "DQN", "env_steps": 2 * BATCH, "seeds": 1,
                "parallelism": {"envs_per_worker": 1, "workers": 1},
                "network": {"hidden_sizes": HIDDEN, "activation": "relu"}, "evaluation": {"interval_steps": 2 * BATCH}}
        return [
            ProbeCase("discrete", {**base, "id": "parity-dqn-discrete", "hyperparameters": DQN_HYPERPARAMETERS}),
            ProbeCase("discrete-clipped", {**base, "id": "parity-dqn-discrete-clipped",
                                           "hyperparameters": {**DQN_HYPERPARAMETERS, "max_grad_norm": 0.05}}),
        ]

    def build_probe(self, workload: Workload, seed: int = 0) -> ParityProbe:
        rng = np.random.default_rng(2_000 + seed)
        observation_dim, space = space_of(workload.env, workload.env_kwargs)
        hidden = list(workload.network.hidden_sizes)
        actions = space["n"]
        online = init_mlp(rng, "q", observation_dim, hidden, actions)
        # a target network that lags: the online weights moved away, so using one for the other shows
        target = {name.replace("q.", "q_target.", 1): as_float32(value + rng.normal(0.0, 0.2, value.shape))
                  for name, value in online.items()}
        size = int(workload.hyperparameters.minibatch_size)
        terminated = np.zeros(size)
        truncated = np.zeros(size)
        terminated[[3, 11, 20]] = 1.0
        truncated[[7, 26]] = 1.0
        batch = {
            "obs": as_float32(rng.normal(0.0, 1.0, (size, observation_dim))),
            "actions": rng.integers(0, actions, size).astype(np.float64),
            # rewards of a CartPole-like scale (1 per step) with spread, so the TD errors straddle
            # the Huber loss's kink at 1
            "rewards": as_float32(rng.normal(1.0, 1.5, size)),
            "next_obs": as_float32(rng.normal(0.0, 1.0, (size, observation_dim))),
            "terminated": terminated, "truncated": truncated,
        }
        return ParityProbe(family=self.family, action_space=space, observation_dim=observation_dim,
                           network={"hidden_sizes": hidden, "activation": workload.network.activation},
                           hyperparameters=workload.hyperparameters.model_dump(mode="json"),
                           weights={**online, **target}, batch=batch, workload=workload.to_dict(),
                           derived=workload.derived(), seed=seed)

    def expected(self, probe: ParityProbe, variants: frozenset[str] = frozenset()) -> ParityOutcome:
        import torch

        hp = probe.hyperparameters
        batch = probe.batch
        hidden, act = probe.network["hidden_sizes"], probe.network["activation"]
        online_names = sorted(name for name in probe.weights if name.startswith("q."))
        params = tensors({name: probe.weights[name] for name in online_names})
        target = tensors({name.replace("q_target.", "q.", 1): value for name, value in probe.weights.items()
                          if name.startswith("q_target.")}, requires_grad=False)
        obs, next_obs = torch.tensor(batch["obs"]), torch.tensor(batch["next_obs"])
        actions = torch.tensor(batch["actions"]).long()
        rewards = torch.tensor(batch["rewards"])
        ends = batch["terminated"] if "no_truncation_bootstrap" not in variants else np.maximum(
            batch["terminated"], batch["truncated"])
        not_done = torch.tensor(1.0 - ends)
        with torch.no_grad():
            evaluator = {name: value.detach() for name, value in params.items()} if "online_target" in variants \
                else target
            next_q = mlp(evaluator, "q", hidden, act, next_obs)
            if hp["double_q"] or "double_q" in variants:
                chosen = mlp({k: v.detach() for k, v in params.items()}, "q", hidden, act, next_obs).argmax(dim=1)
                next_value = next_q.gather(1, chosen.unsqueeze(1)).squeeze(1)
            else:
                next_value = next_q.max(dim=1).values
            q_target = rewards + hp["gamma"] * not_done * next_value
        q = mlp(params, "q", hidden, act, obs).gather(1, actions.unsqueeze(1)).squeeze(1)
        if "mse_loss" in variants:
            loss = ((q - q_target) ** 2)
        elif "half_mse_loss" in variants:
            loss = 0.5 * ((q - q_target) ** 2)
        else:
            loss = torch.nn.functional.smooth_l1_loss(q, q_target, reduction="none")
        loss = loss.sum() if "sum_loss" in variants else loss.mean()
        grads = dict(zip(online_names, torch.autograd.grad(loss, [params[name] for name in online_names]),
                         strict=True))
        if "no_grad_clip" not in variants:
            grads = clip_by_global_norm(grads, hp["max_grad_norm"])
        if "rmsprop" in variants:
            updated = rmsprop_step(params, grads, hp["learning_rate"], 1e-5)
        else:
            eps = 1e-5 if "adam_eps_1e-5" in variants else 0.01 / 32 if "adam_eps_0.01" in variants else ADAM_EPS
            updated = adam_step(params, grads, hp["learning_rate"], eps)
        numpy = lambda tensor: tensor.detach().numpy().astype(np.float64)  # noqa: E731
        return ParityOutcome(RAN, targets={"q_target": numpy(q_target)},
                             gradients={name: numpy(grad) for name, grad in grads.items()},
                             updated={name: numpy(value) for name, value in updated.items()},
                             losses={"q": float(loss.detach())})

