"""TorchRL's own A2C update on the parity probe: the learner ``train()`` builds (the actor, the
``ValueOperator`` critic, ``A2CLoss``, ``GAE``, Adam or RMSprop), the probe's rollout in a
``TensorDict`` as the collector delivers it, ``GAE.forward`` calling the critic on the observations
and next observations (A2C updates the policy that collected: the probe's own network), and the
adapter's ``learn_on_policy``: one full-batch ``A2CLoss.forward``, ``clip_grad_norm_``, one step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, values_of
from rlcompare_torchrl.parity import (
    actor_critic_parameters,
    advantages,
    captured_losses,
    learner,
    on_policy_defaults,
    rollout,
    state_independent_scale,
    time_major,
)

if TYPE_CHECKING:
    from rlcompare_torchrl import TorchRLAdapter

GAE_NOTE = ("GAE (torchrl.objectives.value.GAE, the adapter's own) calls the critic on 'observation' and "
            "('next', 'observation'), the final observation where an episode ended, as in training; the stored "
            "values are not handed to it")


def a2c_update(adapter: TorchRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One A2C update: GAE over the rollout, then the adapter's ``learn_on_policy`` (one full-batch step)."""
    setup = learner(adapter, probe)
    log_std_init = None if probe.discrete else float(state_independent_scale(setup.actor).detach().mean())
    defaults = on_policy_defaults(setup, log_std_init)
    defaults["advantage_normalization"] = ("off (A2CLoss has none)" if setup.loss.advantage_norm is None
                                           else type(setup.loss.advantage_norm).__name__)
    parameters = actor_critic_parameters(setup, probe)
    data = advantages(setup, rollout(probe, None, stored_values=False), stored_values=False)
    targets = {"advantages": time_major(data["advantage"]), "returns": time_major(data["value_target"])}
    with OneStep(setup.optimizer) as step, captured_losses(setup.loss) as outputs:
        setup.learn_on_policy(data)
    if step.steps != 1 or len(outputs) != 1:
        return ParityOutcome.unverifiable(f"TorchRL made {step.steps} optimizer steps ({len(outputs)} loss calls) "
                                          "on one rollout")
    out = outputs[0]
    losses = {"policy": float(out["loss_objective"]),
              "value": float(out["loss_critic"]) / float(setup.loss.critic_coeff),
              "total": sum(float(value) for key, value in out.items() if key.startswith("loss_"))}
    if "entropy" in out.keys():
        losses["entropy"] = -float(out["entropy"])
    return ParityOutcome(RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters),
                         losses=losses, defaults=defaults, notes=(GAE_NOTE,))
