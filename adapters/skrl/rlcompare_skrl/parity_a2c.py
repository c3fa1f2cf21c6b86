"""skrl's own A2C update on the parity probe: the rollout through the agent's ``record_transition``,
skrl's ``A2C.update`` (``skrl/agents/torch/a2c/a2c.py``: its ``compute_gae``, the policy, value and
entropy losses, one full-batch Adam step)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import values_of
from rlcompare_skrl.parity import (
    actor_critic_parameters,
    build_setup,
    fill_rollout,
    on_policy_defaults,
    run_update,
    tracked_losses,
)

if TYPE_CHECKING:
    from rlcompare_skrl import SkrlAdapter


def a2c_update(adapter: SkrlAdapter, probe: ParityProbe) -> ParityOutcome:
    """One A2C step on the probe's rollout, by skrl's ``A2C.update``."""
    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        cfg = agent.cfg
        if cfg.mini_batches != 1:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to {cfg.mini_batches} minibatches")
        fresh_log_std = None if probe.discrete else agent.policy.log_std_parameter.detach().clone()
        parameters = actor_critic_parameters(agent, probe)
        fill_rollout(agent, probe, behaviour=False)
        step = run_update(agent, (agent.optimizer,))
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"skrl's A2C made {step.steps} optimizer steps on one rollout")
        values = agent.memory.get_tensor_by_name("values").squeeze(-1)
        returns = agent.memory.get_tensor_by_name("returns").squeeze(-1)
        targets = {"advantages": (returns - values).double().numpy(), "returns": returns.double().numpy()}
        defaults = on_policy_defaults(setup, fresh_log_std)
        # A2C.update: value_loss = F.mse_loss(returns, values), added to the loss without a coefficient
        defaults.update(value_loss_scale=1.0, value_clipping="off",
                        requested_optimizer=probe.hyperparameters.get("optimizer", "adam"))
        return ParityOutcome(
            RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses=tracked_losses(agent, {"policy": ("Loss / Policy loss", 1.0), "value": ("Loss / Value loss", 1.0),
                                          "entropy": ("Loss / Entropy loss", cfg.entropy_loss_scale)}),
            defaults=defaults,
            notes=("the rollout went through skrl's record_transition (its truncation bootstrap from skrl's value "
                   "model) and skrl's update (compute_gae, one Adam step over the whole rollout)",
                   "advantages are returns - values from skrl's memory: compute_gae normalizes the advantages "
                   "it stores, over the whole rollout, whatever normalize_advantage says"),
        )
    finally:
        setup.close()
