"""Tianshou's TD3 and DDPG update on the parity probe: the probe's transitions in the collector's
replay buffer, Tianshou's ``ActorCriticOffPolicyAlgorithm._preprocess_batch`` for the TD targets
(``Algorithm.compute_nstep_return`` over ``_target_q``: the lagged actor's action, TD3's smoothing
noise -- 0 in the probe -- and the lagged critic(s)), then ``TD3._update_with_batch`` (a step of each
critic, one of the actor against the first stepped critic, the Polyak step of all lagged networks) or
``DDPG._update_with_batch`` (critic, actor, Polyak step) (``tianshou/algorithm/modelfree/td3.py``,
``ddpg.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_linear_stack, stack_names, values_of
from rlcompare_tianshou.parity import (
    NUMBA_NOTE,
    built_setup,
    keeping_td_targets,
    network_defaults,
    optimizer_defaults,
    replay_in_order,
    without_numba_jit,
)
from rlcompare_tianshou.parity_dqn import SAMPLING_NOTE

if TYPE_CHECKING:
    from rlcompare_tianshou import TianshouAdapter, TianshouSetup


def _networks(algorithm: Any, family: str) -> dict[str, Any]:
    """Canonical prefix -> Tianshou module: the ``ContinuousActorDeterministic`` (``preprocess`` Net,
    ``last`` layer, ``max_action * tanh``), the ``ContinuousCritic``\\ (s) (input: observation then
    action) and their lagged copies."""
    networks = {"actor": algorithm.policy.actor, "actor_target": algorithm.actor_old,
                "critic1": algorithm.critic, "critic1_target": algorithm.critic_old}
    if family == "TD3":
        networks.update(critic2=algorithm.critic2, critic2_target=algorithm.critic2_old)
    return networks


def _parameters(algorithm: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights loaded into Tianshou's networks: canonical name -> parameter (lagged copies included)."""
    layers = len(probe.network["hidden_sizes"]) + 1
    parameters: dict[str, Any] = {}
    for prefix, module in _networks(algorithm, probe.family).items():
        parameters.update(load_linear_stack(linear_layers(module), stack_names(prefix, layers), probe.weights))
    return parameters


def td3_update(adapter: TianshouAdapter, probe: ParityProbe) -> ParityOutcome:
    """One TD3 (or DDPG) gradient step on the probe's minibatch: critics, actor, targets."""
    without_numba_jit()
    from tianshou.utils.torch_utils import policy_within_training_step

    if probe.family not in ("TD3", "DDPG"):
        return ParityOutcome.unverifiable(f"td3_update answers TD3 and DDPG probes, not {probe.family}")
    setup = built_setup(adapter, probe)
    try:
        algorithm, buffer, batch = setup.algorithm, setup.collector.buffer, probe.batch
        if probe.family == "TD3":
            if algorithm.update_actor_freq != 1 or algorithm._cnt != 0:
                return ParityOutcome.unverifiable(f"the built TD3 steps its actor every {algorithm.update_actor_freq}"
                                                  f" critic steps (count {algorithm._cnt}); the probe's delay is 1")
            if algorithm.policy_noise != 0:
                return ParityOutcome.unverifiable(f"the built TD3's target smoothing noise is "
                                                  f"{algorithm.policy_noise:g}; the probe's is 0")
        if algorithm.n_step_return_horizon != 1:
            return ParityOutcome.unverifiable(f"the built {probe.family} uses {algorithm.n_step_return_horizon}-step "
                                              "returns; the probe's target is one-step")
        parameters = _parameters(algorithm, probe)
        refusal = replay_in_order(buffer, batch)
        if refusal is not None:
            return ParityOutcome.unverifiable(refusal)
        critic_optims = [algorithm.critic_optim] + ([algorithm.critic2_optim] if probe.family == "TD3" else [])
        optimizers = tuple(optim._optim for optim in (*critic_optims, algorithm.policy_optim))
        with keeping_td_targets(algorithm, len(batch["rewards"])) as kept, OneStep(*optimizers) as step, \
                policy_within_training_step(algorithm.policy):
            stats = algorithm.update(buffer=buffer, sample_size=0)
        if step.steps != len(optimizers):
            return ParityOutcome.unverifiable(f"Tianshou made {step.steps} optimizer steps, one per optimizer "
                                              f"({len(optimizers)}: critics, then actor) expected")
        trained = {name: parameter for name, parameter in parameters.items() if "_target." not in name}
        if probe.family == "TD3":
            losses = {"critic": stats.critic1_loss + stats.critic2_loss, "critic1": stats.critic1_loss,
                      "critic2": stats.critic2_loss, "actor": stats.actor_loss}
        else:
            losses = {"critic": stats.critic_loss, "actor": stats.actor_loss}
        return ParityOutcome(
            RAN, targets={"q_target": kept["q_target"]}, gradients=step.gradients_of(trained), updated=values_of(parameters),
            losses=losses, defaults=td3_defaults(setup, probe.family),
            notes=(SAMPLING_NOTE, NUMBA_NOTE) + (
                ("the critic loss reported is the sum of Tianshou's two critic losses (one optimizer each), "
                 "as the reference's one loss over both critics",) if probe.family == "TD3" else ()),
        )
    finally:
        setup.close()


def td3_defaults(setup: TianshouSetup, family: str) -> dict[str, Any]:
    """What Tianshou's TD3/DDPG really use, read back from the built algorithm and Tianshou's code."""
    algorithm = setup.algorithm
    actor = algorithm.policy.actor
    critics = [algorithm.critic] + ([algorithm.critic2] if family == "TD3" else [])
    optims = {"actor": algorithm.policy_optim, "critic1": algorithm.critic_optim}
    if family == "TD3":
        optims["critic2"] = algorithm.critic2_optim
    defaults: dict[str, Any] = {
        **optimizer_defaults(algorithm.critic_optim), **network_defaults(actor, *critics),
        "optimizers": {name: optimizer_defaults(optim) for name, optim in optims.items()},
        "n_critics": len(critics),
        "target_update": f"polyak tau {algorithm.tau:g} of the lagged actor and critic(s) with every actor step",
        # _update_with_batch: each critic (its own optimizer), then the actor against critic 1 after its step
        "update_order": ("critic1, critic2, actor, targets" if family == "TD3" else "critic1, actor, targets"),
        "actor_q": "Q_1 (after its step)",
        "critic_loss": "mean((Q_i - y)^2) per critic, one optimizer each (no factor 1/2)",
        "action_squashing": f"max_action {float(actor.max_action):g} * tanh",
        "action_bounds": [setup.policy.action_space.low.tolist(), setup.policy.action_space.high.tolist()],
        "action_scaling": bool(setup.policy.action_scaling),
        "action_bound_method": setup.policy.action_bound_method,
        "critic_action_space": "[-1, 1]" if setup.policy.action_scaling else "env bounds",
        "n_step": algorithm.n_step_return_horizon, "gamma": algorithm.gamma, "truncation_bootstrap": True,
        "learning_rate_schedule": "constant" if not algorithm.lr_schedulers else
        ", ".join(type(s).__name__ for s in algorithm.lr_schedulers),
        "grad_clip_scope": "none", "reward_normalization": False,
    }
    if family == "TD3":
        defaults.update(policy_delay=int(algorithm.update_actor_freq), target_policy_noise=float(algorithm.policy_noise),
                        target_noise_clip=float(algorithm.noise_clip),
                        target_action_clamp="none (Tianshou does not clamp the smoothed target action to [-1, 1])")
    return defaults
