"""SB3's own SAC update on the parity probe: the probe's weights in SB3's ``Actor``, ``ContinuousCritic``
and target critic (``sac/policies.py``) and in ``log_ent_coef``, the batch added to SB3's
``ReplayBuffer`` (truncations as ``TimeLimit.truncated`` infos, as SB3's collection stores them) and
drawn back in order through the buffer's own ``_get_samples``, and ``SAC.train()`` (``sac/sac.py``)
making its three optimizer steps (temperature, critics, actor) and the Polyak step of the targets,
with sampling noise off."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import (
    OneStep,
    linear_layers,
    load_linear_stack,
    load_tensor,
    stack_names,
    values_of,
    without_sampling_noise,
)
from rlcompare_sb3.parity import _keeping_td_target, _model, _replay_batch

if TYPE_CHECKING:
    from rlcompare_sb3 import StableBaselines3Adapter


def sac_update(adapter: StableBaselines3Adapter, probe: ParityProbe) -> ParityOutcome:
    """One SAC gradient step on the probe's batch: ``train(gradient_steps=1, batch_size=B)``."""
    import stable_baselines3.sac.sac as sb3_sac

    model, env = _model(adapter, probe)
    try:
        if model.ent_coef_optimizer is None:
            return ParityOutcome.unverifiable("SB3's SAC was built with a fixed entropy coefficient; the probe "
                                              "asks for a learned one (entropy_coef 'auto')")
        online, targets = _sac_parameters(model, probe)
        size = _replay_batch(model, probe.batch)
        model._current_progress_remaining = 1.0  # the learning-rate schedule at its start
        optimizers = (model.actor.optimizer, model.critic.optimizer, model.ent_coef_optimizer)
        with _keeping_td_target(sb3_sac, "mse_loss") as captured, without_sampling_noise(), \
                OneStep(*optimizers) as step:
            model.train(gradient_steps=1, batch_size=size)
        if step.steps != len(optimizers) or "q_target" not in captured:
            return ParityOutcome.unverifiable(f"SB3's SAC train() made {step.steps} optimizer steps, not one each "
                                              "for the temperature, the critics and the actor")
        losses = {name.removeprefix("train/"): float(value) for name, value in model.logger.name_to_value.items()
                  if name in ("train/ent_coef", "train/ent_coef_loss", "train/critic_loss", "train/actor_loss")}
        return ParityOutcome(
            RAN, targets={"q_target": captured["q_target"]}, gradients=step.gradients_of(online),
            updated={**values_of(online), **values_of(targets)}, losses=losses, defaults=_sac_defaults(model),
            notes=("the minibatch is the probe's batch in order, drawn through SB3's ReplayBuffer._get_samples "
                   "instead of its random sampler", "sampling noise off: the actor's Gaussian samples its mean"),
        )
    finally:
        env.close()


def _sac_parameters(model: Any, probe: ParityProbe) -> tuple[dict[str, Any], dict[str, Any]]:
    """The probe's weights loaded into SB3's SAC: (online parameters with ``log_alpha``, target critics)."""
    policy = model.policy
    hidden = len(probe.network["hidden_sizes"])
    actor = policy.actor
    online = load_linear_stack([*linear_layers(actor.latent_pi), actor.mu, actor.log_std],
                               [*stack_names("actor", hidden + 1)[:-1], "actor.mean", "actor.log_std"], probe.weights)
    targets: dict[str, Any] = {}
    for i, (q_net, q_target) in enumerate(zip(policy.critic.q_networks, policy.critic_target.q_networks,
                                              strict=True)):
        online.update(load_linear_stack(linear_layers(q_net), stack_names(f"critic{i + 1}", hidden + 1),
                                        probe.weights))
        targets.update(load_linear_stack(linear_layers(q_target), stack_names(f"critic{i + 1}_target", hidden + 1),
                                         probe.weights))
    load_tensor(model.log_ent_coef, probe.weights["log_alpha"])
    online["log_alpha"] = model.log_ent_coef
    return online, targets


def _sac_defaults(model: Any) -> dict[str, Any]:
    """What SB3's SAC built, read back from its objects."""
    policy = model.policy
    actor_eps = model.actor.optimizer.defaults.get("eps")
    return {
        "optimizer": type(model.actor.optimizer).__name__, "adam_eps": actor_eps,
        "adam_eps_critic": model.critic.optimizer.defaults.get("eps"),
        "adam_eps_ent_coef": model.ent_coef_optimizer.defaults.get("eps"),
        "action_squashing": "tanh" if model.actor.squash_output else "none",
        "action_bounds": [model.action_space.low.tolist(), model.action_space.high.tolist()],
        "target_update": f"polyak tau={model.tau} every {model.target_update_interval} gradient step(s)",
        "target_entropy": float(model.target_entropy), "n_critics": int(policy.critic.n_critics),
        "share_features_extractor": bool(policy.share_features_extractor), "use_sde": bool(model.use_sde),
        "truncation_bootstrap": bool(model.replay_buffer.handle_timeout_termination),
        "squash_correction_eps": float(model.actor.action_dist.epsilon),
    }
