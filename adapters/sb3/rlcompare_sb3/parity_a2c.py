"""SB3's own A2C update on the parity probe: the probe's weights in SB3's ``ActorCriticPolicy``, the
rollout replayed into SB3's ``RolloutBuffer`` the way ``OnPolicyAlgorithm.collect_rollouts``
(``common/on_policy_algorithm.py``) fills it (values, log-probabilities and the truncation bootstrap
computed by SB3's policy, which A2C updates after collecting with it), the buffer's own GAE, and
``A2C.train()`` (``a2c/a2c.py``) doing the one full-batch step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, values_of
from rlcompare_sb3.parity import _actor_critic_parameters, _defaults, _model

if TYPE_CHECKING:
    from rlcompare_sb3 import StableBaselines3Adapter


def a2c_update(adapter: StableBaselines3Adapter, probe: ParityProbe) -> ParityOutcome:
    """One A2C update: the batch through SB3's ``RolloutBuffer`` and ``compute_returns_and_advantage``,
    then ``train()`` with its one optimizer step."""
    import numpy as np
    import torch

    model, env = _model(adapter, probe)
    try:
        policy = model.policy
        parameters = _actor_critic_parameters(policy, probe)
        batch = probe.batch
        steps, envs = batch["rewards"].shape
        dones = np.maximum(batch["terminated"], batch["truncated"])
        buffer = model.rollout_buffer
        buffer.reset()
        policy.set_training_mode(False)  # as collect_rollouts
        episode_starts = np.ones(envs, dtype=np.float32)
        for t in range(steps):
            obs = torch.as_tensor(batch["obs"][t], dtype=torch.float32)
            actions = torch.as_tensor(batch["actions"][t], dtype=torch.float32)
            with torch.no_grad():
                # what collect_rollouts stores with each step: the collecting policy's value and log-prob
                values, log_prob, _ = policy.evaluate_actions(obs, actions.long() if probe.discrete else actions)
            rewards = batch["rewards"][t].astype(np.float32)
            for env_index in np.flatnonzero(batch["truncated"][t] > 0):
                # collect_rollouts' timeout handling: reward += gamma * V(terminal observation)
                terminal_obs = policy.obs_to_tensor(batch["terminal_obs"][t, env_index].astype(np.float32))[0]
                with torch.no_grad():
                    rewards[env_index] += model.gamma * policy.predict_values(terminal_obs)[0].item()
            buffer.add(batch["obs"][t].astype(np.float32), batch["actions"][t], rewards, episode_starts,
                       values, log_prob)
            episode_starts = dones[t].astype(np.float32)
        with torch.no_grad():
            last_values = policy.predict_values(torch.as_tensor(batch["last_obs"], dtype=torch.float32))
        buffer.compute_returns_and_advantage(last_values=last_values, dones=dones[-1])
        targets = {"advantages": buffer.advantages.copy(), "returns": buffer.returns.copy()}
        model._current_progress_remaining = 1.0  # the learning-rate schedule at its start
        with OneStep(policy.optimizer) as step:
            model.train()
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"SB3's A2C made {step.steps} optimizer steps on one rollout")
        losses = {name.removeprefix("train/"): float(value) for name, value in model.logger.name_to_value.items()
                  if name in ("train/policy_loss", "train/value_loss", "train/entropy_loss")}
        return ParityOutcome(
            RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses=losses, defaults=_a2c_defaults(model),
            notes=("the rollout is replayed into SB3's RolloutBuffer as collect_rollouts fills it: values, "
                   "log-probabilities and the truncation bootstrap (gamma * V(final observation) added to the "
                   "reward) from SB3's own policy",),
        )
    finally:
        env.close()


def _a2c_defaults(model: Any) -> dict[str, Any]:
    """SB3's defaults read back, with the optimizer's own settings (Adam's or RMSprop's)."""
    optimizer = model.policy.optimizer
    defaults = _defaults(model)
    settings = optimizer.defaults
    if "betas" not in settings:  # RMSprop (torch's, or SB3's RMSpropTFLike): no Adam epsilon
        defaults.pop("adam_eps", None)
        defaults.update({"rmsprop_eps": settings.get("eps"), "rmsprop_alpha": settings.get("alpha"),
                         "rmsprop_centered": settings.get("centered"), "rmsprop_momentum": settings.get("momentum")})
    defaults.update({"value_loss": "mse (F.mse_loss)", "grad_clip_scope": "joint (clip_grad_norm_ over "
                     "policy.parameters())", "truncation_bootstrap": True})
    return defaults
