"""Tianshou's SAC update on the parity probe: the probe's transitions in the collector's replay
buffer, Tianshou's ``ActorCriticOffPolicyAlgorithm._preprocess_batch`` for the TD targets
(``Algorithm.compute_nstep_return`` over ``SAC._target_q_compute_value``), then ``SAC._update_with_batch``:
a step of each critic, of the actor, of ``AutoAlpha`` and the Polyak step of the target critics
(``tianshou/algorithm/modelfree/sac.py``, ``td3.py``, ``ddpg.py``)."""

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


def _parameters(algorithm: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in Tianshou's ``ContinuousActorProbabilistic`` (``preprocess`` Net, ``mu``
    and ``sigma`` heads), both ``ContinuousCritic`` (input: observation then action), their lagged
    copies and ``AutoAlpha``'s ``log_alpha``: canonical name -> parameter (lagged copies included)."""
    hidden = len(probe.network["hidden_sizes"])
    actor = algorithm.policy.actor
    parameters = {
        **load_linear_stack(linear_layers(actor.preprocess), [f"actor.{i}" for i in range(hidden)], probe.weights),
        **load_linear_stack(linear_layers(actor.mu), ["actor.mean"], probe.weights),
        **load_linear_stack(linear_layers(actor.sigma), ["actor.log_std"], probe.weights),
    }
    networks = {"critic1": algorithm.critic, "critic2": algorithm.critic2,
                "critic1_target": algorithm.critic_old, "critic2_target": algorithm.critic2_old}
    for prefix, module in networks.items():
        parameters.update(load_linear_stack(linear_layers(module), stack_names(prefix, hidden + 1), probe.weights))
    log_alpha = algorithm.alpha._log_alpha
    load_tensor(log_alpha, probe.weights["log_alpha"])
    parameters["log_alpha"] = log_alpha
    return parameters


def sac_update(adapter: TianshouAdapter, probe: ParityProbe) -> ParityOutcome:
    """One SAC gradient step on the probe's minibatch, sampling noise off."""
    without_numba_jit()
    import numpy as np
    from tianshou.algorithm.modelfree.sac import AutoAlpha
    from tianshou.utils.torch_utils import policy_within_training_step

    setup = built_setup(adapter, probe)
    try:
        algorithm, buffer, batch = setup.algorithm, setup.collector.buffer, probe.batch
        if not isinstance(algorithm.alpha, AutoAlpha):
            return ParityOutcome.unverifiable(f"the built SAC's temperature is {type(algorithm.alpha).__name__}, "
                                              "the probe's is learned")
        parameters = _parameters(algorithm, probe)
        refusal = replay_in_order(buffer, batch)
        if refusal is not None:
            return ParityOutcome.unverifiable(refusal)
        optimizers = (algorithm.critic_optim._optim, algorithm.critic2_optim._optim, algorithm.policy_optim._optim,
                      algorithm.alpha._optim)
        with keeping_td_targets(algorithm, len(batch["rewards"])) as kept, OneStep(*optimizers) as step, \
                policy_within_training_step(algorithm.policy), without_sampling_noise():
            stats = algorithm.update(buffer=buffer, sample_size=0)
        if step.steps != len(optimizers):
            return ParityOutcome.unverifiable(f"Tianshou made {step.steps} optimizer steps, one per optimizer "
                                              f"({len(optimizers)}) expected")
        trained = {name: parameter for name, parameter in parameters.items() if "_target." not in name}
        return ParityOutcome(
            RAN, targets={"q_target": kept["q_target"]}, gradients=step.gradients_of(trained), updated=values_of(parameters),
            losses={"critic": 0.5 * (stats.critic1_loss + stats.critic2_loss), "critic1": stats.critic1_loss,
                    "critic2": stats.critic2_loss, "actor": stats.actor_loss, "ent_coef_loss": stats.alpha_loss,
                    "ent_coef": float(np.exp(probe.weights["log_alpha"][0]))},
            notes=(SAMPLING_NOTE, NUMBA_NOTE,
                   "sampling noise off (Normal samples its mean), as in the reference; the critic loss reported is "
                   "half the sum of Tianshou's two critic losses, for comparison"),
            defaults=sac_defaults(setup),
        )
    finally:
        setup.close()


def sac_defaults(setup: TianshouSetup) -> dict[str, Any]:
    """What Tianshou's SAC really uses, read back from the built algorithm and Tianshou's code."""
    import inspect

    from tianshou.algorithm.modelfree.sac import correct_log_prob_gaussian_tanh
    from tianshou.utils.net.continuous import SIGMA_MAX, SIGMA_MIN

    algorithm = setup.algorithm
    actor = algorithm.policy.actor
    alpha = algorithm.alpha
    squash_eps = inspect.signature(correct_log_prob_gaussian_tanh).parameters["eps"].default
    return {
        **optimizer_defaults(algorithm.critic_optim), **network_defaults(actor, algorithm.critic, algorithm.critic2),
        "optimizers": {name: optimizer_defaults(optim) for name, optim in (
            ("actor", algorithm.policy_optim), ("critic1", algorithm.critic_optim),
            ("critic2", algorithm.critic2_optim), ("alpha", alpha._optim))},
        "target_update": f"polyak tau {algorithm.tau:g} after every gradient step",
        "target_entropy": getattr(alpha, "_target_entropy", None),
        "alpha": "learned (log_alpha)" if hasattr(alpha, "_log_alpha") else f"fixed {alpha.value:g}",
        # SAC._update_with_batch: critics, then actor, then alpha (from the actor's log-probabilities)
        "update_order": "critic1, critic2, actor, alpha, targets",
        "critic_loss": "mean((Q_i - y)^2) per critic, one optimizer each (no factor 1/2)",
        "action_squashing": "tanh", "squash_correction_eps": squash_eps,
        "log_std": "state-dependent head" if getattr(actor, "_c_sigma", False) else "state-independent parameter",
        "log_std_clipping": [SIGMA_MIN, SIGMA_MAX],
        "action_bounds": [setup.policy.action_space.low.tolist(), setup.policy.action_space.high.tolist()],
        "action_scaling": bool(setup.policy.action_scaling),
        "n_step": algorithm.n_step_return_horizon, "gamma": algorithm.gamma, "truncation_bootstrap": True,
        "learning_rate_schedule": "constant" if not algorithm.lr_schedulers else
        ", ".join(type(s).__name__ for s in algorithm.lr_schedulers),
        "grad_clip_scope": "none", "reward_normalization": False,
    }
