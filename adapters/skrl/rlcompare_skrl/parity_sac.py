"""skrl's SAC on the parity probe: unverifiable as the adapter builds it, with the reason and the
defaults read back from the built agent.

The adapter's SAC policy is skrl's examples' shape (``rlcompare_skrl._build_models``,
``GaussianPolicy(bounded=True)`` over ``skrl.models.torch.GaussianMixin``): a tanh-bounded mean
scaled to the action bounds, one state-independent log-std parameter, samples clipped to the
bounds, and the log-probability of the unsquashed Gaussian (``GaussianMixin.act`` has no tanh
squashing correction). The probe's actor has a state-dependent log-std head and tanh-squashed
samples with the squashing correction: its weights have no place in that model, so skrl's
``SAC.update`` cannot run on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare_skrl.parity import build_setup, optimizer_defaults, policy_defaults, preprocessor_name, random_actions

if TYPE_CHECKING:
    from rlcompare_skrl import SkrlAdapter


def sac_update(adapter: SkrlAdapter, probe: ParityProbe) -> ParityOutcome:
    """Unverifiable: the adapter's skrl actor cannot hold the probe's actor (see the module docstring)."""
    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        policy = agent.policy
        log_std = getattr(policy, "log_std_parameter", None)
        reason = ("the adapter's skrl SAC policy (GaussianMixin, skrl's examples' shape) has a tanh-bounded mean "
                  "scaled to the action bounds and one state-independent log-std parameter"
                  + (f" of shape {tuple(log_std.shape)}" if log_std is not None else "")
                  + ", samples clipped to the bounds and the unsquashed Gaussian's log-probability; the probe's "
                  "actor has a state-dependent log-std head (actor.log_std.weight "
                  f"{tuple(probe.weights['actor.log_std.weight'].shape)}) and tanh-squashed samples with the "
                  "squashing correction, which that model cannot hold")
        return ParityOutcome.unverifiable(reason, **sac_defaults(setup))
    finally:
        setup.close()


def sac_defaults(setup: Any) -> dict[str, Any]:
    """What the built SAC agent uses, read back from its objects (``skrl/agents/torch/sac/sac.py``)."""
    agent = setup.agent
    cfg = agent.cfg
    n_envs = setup.n_envs
    learned = bool(cfg.learn_entropy)
    return {
        **optimizer_defaults(agent.critic_optimizer),
        "actor_adam_eps": agent.policy_optimizer.defaults.get("eps"),
        "alpha_adam_eps": agent.entropy_optimizer.defaults.get("eps") if learned else None,
        "initialization": "PyTorch's default Linear init (kaiming_uniform, a=sqrt 5): skrl's models leave it",
        "observation_normalization": preprocessor_name(agent, "_observation_preprocessor"),
        "reward_normalization": "none" if cfg.rewards_shaper is None else repr(cfg.rewards_shaper),
        "max_grad_norm": cfg.grad_norm_clip if cfg.grad_norm_clip > 0 else "none",
        "target_update": f"polyak tau={cfg.polyak} after every gradient step",
        "entropy": (f"learned, initial {cfg.initial_entropy_value}, target entropy {float(agent._target_entropy):g}, "
                    "loss on log_alpha, stepped after the critics and the actor") if learned
        else f"fixed {cfg.initial_entropy_value}",
        "critic_loss": "(mse(Q1, y) + mse(Q2, y)) / 2",
        "truncation_bootstrap": True,
        "action_bounds": [agent.action_space.low.tolist(), agent.action_space.high.tolist()],
        "learning_starts": f"{cfg.learning_starts} vector steps ({cfg.learning_starts * n_envs} env steps)",
        "random_timesteps": cfg.random_timesteps,
        "random_actions": random_actions(agent.policy),
        "gradient_steps": cfg.gradient_steps,
        **policy_defaults(agent.policy),
    }
