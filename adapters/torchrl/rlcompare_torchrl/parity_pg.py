"""TorchRL's own PG update on the parity probe: the learner ``train()`` builds (the actor,
``ReinforceLoss``, Adam over the actor), the probe's rollout in a ``TensorDict`` as the collector
delivers it, the adapter's ``MonteCarloReturns`` (TorchRL's ``reward2go``, then the batch
standardization) and its ``learn_on_policy``: one full-batch ``ReinforceLoss.forward`` and one step
on ``loss_actor``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import (
    OneStep,
    linear_layers,
    load_linear_stack,
    load_tensor,
    stack_names,
    values_of,
)
from rlcompare_torchrl.parity import captured_losses, learner, rollout, state_independent_scale, time_major

if TYPE_CHECKING:
    from rlcompare_torchrl import TorchRLAdapter


def pg_update(adapter: TorchRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PG update: the Monte Carlo returns over the rollout, then one full-batch step."""
    import torch

    setup = learner(adapter, probe)
    layers = len(probe.network["hidden_sizes"]) + 1
    parameters = load_linear_stack(linear_layers(setup.actor), stack_names("policy", layers), probe.weights)
    if not probe.discrete:
        scale = state_independent_scale(setup.actor)
        load_tensor(scale, probe.weights["policy.log_std"])
        parameters["policy.log_std"] = scale
    returns = setup.extras["advantage"]
    with torch.no_grad():
        data = returns(rollout(probe, None, stored_values=False))
    group = setup.optimizer.param_groups[0]
    defaults = {"optimizer": type(setup.optimizer).__name__, "adam_eps": group["eps"], "learning_rate": group["lr"],
                "return_standardization": "batch" if returns.standardize else "none",
                "return_standardization_std": "population", "loss": type(setup.loss).__name__,
                "initialization": "PyTorch default (torchrl.modules.MLP of nn.Linear, reset_parameters)"}
    with OneStep(setup.optimizer) as step, captured_losses(setup.loss) as outputs:
        setup.learn_on_policy(data)
    if step.steps != 1 or len(outputs) != 1:
        return ParityOutcome.unverifiable(f"TorchRL made {step.steps} optimizer steps ({len(outputs)} loss calls) "
                                          "on one rollout")
    loss = float(outputs[0]["loss_actor"])
    return ParityOutcome(RAN, targets={"returns": time_major(data["advantage"])},
                         gradients=step.gradients_of(parameters), updated=values_of(parameters),
                         losses={"policy": loss, "total": loss}, defaults=defaults,
                         notes=("the critic ReinforceLoss requires is built and never trained: only loss_actor is "
                                "optimized",))
