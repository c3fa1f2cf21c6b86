"""SB3's own TD3 and DDPG update on the parity probe: the probe's weights in SB3's ``Actor`` and
``ContinuousCritic`` and in their targets (``td3/policies.py``), the batch added to SB3's
``ReplayBuffer`` (truncations as ``TimeLimit.truncated`` infos, as SB3's collection stores them) and
drawn back in order through the buffer's own ``_get_samples``, and ``TD3.train()`` (``td3/td3.py``,
which SB3's DDPG runs too) making its two optimizer steps (critics, then actor) and the Polyak step of
the targets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_linear_stack, stack_names, values_of
from rlcompare_sb3.parity import _keeping_td_target, _model, _replay_batch

if TYPE_CHECKING:
    from rlcompare_sb3 import StableBaselines3Adapter


def td3_update(adapter: StableBaselines3Adapter, probe: ParityProbe) -> ParityOutcome:
    """One TD3 (or DDPG) gradient step on the probe's batch: ``train(gradient_steps=1, batch_size=B)``."""
    import stable_baselines3.td3.td3 as sb3_td3

    model, env = _model(adapter, probe)
    try:
        online, targets = _parameters(model, probe)
        size = _replay_batch(model, probe.batch)
        model._current_progress_remaining = 1.0  # the learning-rate schedule at its start
        optimizers = (model.actor.optimizer, model.critic.optimizer)
        with _keeping_td_target(sb3_td3, "mse_loss") as captured, OneStep(*optimizers) as step:
            model.train(gradient_steps=1, batch_size=size)
        if step.steps != len(optimizers) or "q_target" not in captured:
            return ParityOutcome.unverifiable(f"SB3's {probe.family} train() made {step.steps} optimizer steps, not "
                                              "one for the critics and one for the actor (the probe's delay is 1)")
        losses = {name.removeprefix("train/"): float(value) for name, value in model.logger.name_to_value.items()
                  if name in ("train/critic_loss", "train/actor_loss")}
        return ParityOutcome(
            RAN, targets={"q_target": captured["q_target"]}, gradients=step.gradients_of(online),
            updated={**values_of(online), **values_of(targets)}, losses=losses, defaults=_defaults(model),
            notes=("the minibatch is the probe's batch in order, drawn through SB3's ReplayBuffer._get_samples "
                   "instead of its random sampler",),
        )
    finally:
        env.close()


def _parameters(model: Any, probe: ParityProbe) -> tuple[dict[str, Any], dict[str, Any]]:
    """The probe's weights loaded into SB3's TD3/DDPG: (online actor and critics, their targets)."""
    policy = model.policy
    layers = len(probe.network["hidden_sizes"]) + 1
    online = load_linear_stack(linear_layers(policy.actor.mu), stack_names("actor", layers), probe.weights)
    targets = load_linear_stack(linear_layers(policy.actor_target.mu), stack_names("actor_target", layers),
                                probe.weights)
    for i, (q_net, q_target) in enumerate(zip(policy.critic.q_networks, policy.critic_target.q_networks,
                                              strict=True)):
        online.update(load_linear_stack(linear_layers(q_net), stack_names(f"critic{i + 1}", layers), probe.weights))
        targets.update(load_linear_stack(linear_layers(q_target), stack_names(f"critic{i + 1}_target", layers),
                                         probe.weights))
    return online, targets


def _defaults(model: Any) -> dict[str, Any]:
    """What SB3's TD3/DDPG built, read back from its objects."""
    return {
        "optimizer": type(model.actor.optimizer).__name__, "adam_eps": model.actor.optimizer.defaults.get("eps"),
        "adam_eps_critic": model.critic.optimizer.defaults.get("eps"),
        "n_critics": int(model.policy.critic.n_critics), "policy_delay": int(model.policy_delay),
        "target_policy_noise": float(model.target_policy_noise), "target_noise_clip": float(model.target_noise_clip),
        "action_bounds": [model.action_space.low.tolist(), model.action_space.high.tolist()],
        "truncation_bootstrap": bool(model.replay_buffer.handle_timeout_termination),
        "share_features_extractor": bool(model.policy.share_features_extractor),
    }
