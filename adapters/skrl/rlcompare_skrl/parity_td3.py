"""skrl's own TD3 and DDPG update on the parity probe: the probe's weights in the adapter's skrl
models (``DeterministicPolicy``: the MLP ending in tanh; ``Value`` critics on the observation then
the action) and in their targets, the batch in the agent's ``RandomMemory`` and drawn back in order,
and skrl's ``TD3.update`` (``skrl/agents/torch/td3/td3.py``) or ``DDPG.update``
(``skrl/agents/torch/ddpg/ddpg.py``) computing the TD target, the critic loss (``F.mse_loss`` per
critic, summed), the critics' Adam step, the actor's loss on the first critic after its step, the
actor's Adam step and the Polyak step of every target.

The probe's ``target_policy_noise`` is 0: skrl's ``GaussianNoise(std=0)`` (torch's ``Normal`` with
argument validation off) samples zeros, which TD3's update clamps to the noise clip, adds and clamps
to the action space ``[-1, 1]`` (``RescaleAction``); DDPG's update has no target smoothing and no
clamp, which the tanh actor's ``[-1, 1]`` output makes the same.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import values_of
from rlcompare_skrl.parity import (
    build_setup,
    capturing_targets,
    fill_replay,
    mlp_parameters,
    optimizer_defaults,
    preprocessor_name,
    random_actions,
    run_update,
    sampled_in_order,
    tracked_losses,
)

if TYPE_CHECKING:
    from rlcompare_skrl import SkrlAdapter


def td3_update(adapter: SkrlAdapter, probe: ParityProbe) -> ParityOutcome:
    """One TD3 (or DDPG) gradient step on the probe's batch, by skrl's ``TD3.update`` (``DDPG.update``):
    one step of the critics' Adam, one of the actor's, one Polyak step of the targets."""
    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        cfg = agent.cfg
        td3 = probe.family == "TD3"
        if cfg.gradient_steps != 1:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to {cfg.gradient_steps} gradient steps "
                                              "per update, not one")
        if td3 and cfg.policy_delay != 1:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to policy_delay {cfg.policy_delay}, "
                                              "not 1: the actor would not step on the probe's one critic step")
        online, targets = _parameters(agent, probe, td3)
        size = fill_replay(agent, probe)
        if cfg.batch_size != size:
            return ParityOutcome.unverifiable(f"skrl's batch_size is {cfg.batch_size}, the probe's batch {size}")
        captured: dict[str, Any] = {}
        module = importlib.import_module(type(agent).__module__)  # skrl.agents.torch.td3.td3 (or ddpg.ddpg)
        optimizers = (agent.critic_optimizer, agent.policy_optimizer)
        with sampled_in_order(agent.memory, size), capturing_targets(module, "mse_loss", captured):
            step = run_update(agent, optimizers)
        if step.steps != len(optimizers) or "q_target" not in captured:
            return ParityOutcome.unverifiable(
                f"skrl's {probe.family} update made {step.steps} optimizer steps, not one for the critics and one "
                "for the actor" + ("" if "q_target" in captured else ", and no mse_loss call"))
        return ParityOutcome(
            RAN, targets={"q_target": captured["q_target"]}, gradients=step.gradients_of(online),
            updated={**values_of(online), **values_of(targets)},
            losses=tracked_losses(agent, {"critic": ("Loss / Critic loss", 1.0),
                                          "actor": ("Loss / Policy loss", 1.0)}),
            defaults=td3_defaults(setup),
            notes=("the minibatch is the probe's batch in order, drawn through skrl's Memory.sample_by_index "
                   "instead of RandomMemory.sample (uniform, with replacement)",
                   f"skrl's {probe.family} memory stores no truncation flag: truncated transitions bootstrap",),
        )
    finally:
        setup.close()


def _parameters(agent: Any, probe: ParityProbe, td3: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The probe's weights loaded into the agent's skrl models: (online actor and critics, their targets)."""
    critics = [("critic_1", "critic1"), ("critic_2", "critic2")] if td3 else [("critic", "critic1")]
    online = mlp_parameters(agent.policy, "actor", probe)
    targets = mlp_parameters(agent.target_policy, "actor_target", probe)
    for attribute, name in critics:
        online.update(mlp_parameters(getattr(agent, attribute), name, probe))
        targets.update(mlp_parameters(getattr(agent, f"target_{attribute}"), f"{name}_target", probe))
    return online, targets


def td3_defaults(setup: Any) -> dict[str, Any]:
    """What the built TD3/DDPG agent uses, read back from its objects; the loss, the order of the
    steps and the actor's critic are skrl's code (``TD3.update``, ``DDPG.update``)."""
    agent = setup.agent
    cfg = agent.cfg
    n_envs = setup.n_envs
    td3 = hasattr(agent, "critic_2")
    smoothing = getattr(agent, "_smooth_regularization_noise", None)
    exploration = getattr(agent, "_exploration_noise", None)
    defaults: dict[str, Any] = {
        **optimizer_defaults(agent.critic_optimizer),
        "actor_adam_eps": agent.policy_optimizer.defaults.get("eps"),
        "initialization": "PyTorch's default Linear init (kaiming_uniform, a=sqrt 5): skrl's models leave it",
        "observation_normalization": preprocessor_name(agent, "_observation_preprocessor"),
        "reward_normalization": "none" if cfg.rewards_shaper is None else repr(cfg.rewards_shaper),
        "max_grad_norm": cfg.grad_norm_clip if cfg.grad_norm_clip > 0 else "none",
        "n_critics": 2 if td3 else 1,
        "critic_loss": "mse(Q1, y) + mse(Q2, y)" if td3 else "mse(Q, y)",
        "critic_loss_scale": 1.0,
        "actor_critic_order": "critics stepped first",
        "actor_q": "Q_1",
        "critic_action_space": "[-1, 1]" if (agent.action_space.low == -1).all() and (agent.action_space.high == 1).all()
        else "env bounds",
        "action_bounds": [agent.action_space.low.tolist(), agent.action_space.high.tolist()],
        "truncation_bootstrap": True,
        "target_update": f"polyak tau={cfg.polyak} of the target actor and critics after every actor step",
        "exploration_noise": "none" if exploration is None
        else f"{type(exploration).__name__}(std={float(exploration.distribution.stddev):g})",
        "learning_starts": f"{cfg.learning_starts} vector steps ({cfg.learning_starts * n_envs} env steps)",
        "random_timesteps": cfg.random_timesteps,
        "random_actions": random_actions(agent.policy),
        "gradient_steps": cfg.gradient_steps,
    }
    if td3:
        defaults.update(
            policy_delay=int(cfg.policy_delay),
            target_policy_noise="none" if smoothing is None else float(smoothing.distribution.stddev),
            target_noise_clip=float(cfg.smooth_regularization_clip))
    else:
        defaults["target_smoothing"] = "none (DDPG.update; no clamp of the target action, which tanh bounds)"
    return defaults
