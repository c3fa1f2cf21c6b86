"""Tianshou's DQN update on the parity probe: the probe's transitions in the collector's replay
buffer, Tianshou's ``QLearningOffPolicyAlgorithm._preprocess_batch`` for the TD targets
(``Algorithm.compute_nstep_return`` over ``DQN._target_q``) and ``DQN._update_with_batch`` for the
loss and the step (``tianshou/algorithm/modelfree/dqn.py``)."""

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

if TYPE_CHECKING:
    from rlcompare_tianshou import TianshouAdapter, TianshouSetup

SAMPLING_NOTE = ("the batch is handed to Tianshou in order: DQN.update(buffer, sample_size=0), Tianshou's own "
                 "'whole buffer' sample, instead of the trainer's random minibatch of batch_size")


def dqn_update(adapter: TianshouAdapter, probe: ParityProbe) -> ParityOutcome:
    """One DQN gradient step on the probe's minibatch."""
    without_numba_jit()
    from tianshou.utils.torch_utils import policy_within_training_step

    setup = built_setup(adapter, probe)
    try:
        algorithm, buffer, batch = setup.algorithm, setup.collector.buffer, probe.batch
        layers = len(probe.network["hidden_sizes"]) + 1
        parameters = load_linear_stack(linear_layers(algorithm.policy.model), stack_names("q", layers), probe.weights)
        if algorithm.model_old is None:
            return ParityOutcome.unverifiable("the built DQN has no target network (target_update_freq 0)")
        load_linear_stack(linear_layers(algorithm.model_old), stack_names("q_target", layers), probe.weights)
        refusal = replay_in_order(buffer, batch, discrete=True)
        if refusal is not None:
            return ParityOutcome.unverifiable(refusal)
        synced_before = algorithm._iter % algorithm.target_update_freq == 0
        with keeping_td_targets(algorithm, len(batch["rewards"])) as kept, OneStep(algorithm.optim._optim) as step, \
                policy_within_training_step(algorithm.policy):
            stats = algorithm.update(buffer=buffer, sample_size=0)
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"Tianshou made {step.steps} optimizer steps on one minibatch")
        q_target = kept["q_target"]
        notes = [SAMPLING_NOTE, NUMBA_NOTE]
        if synced_before:
            notes.append("this was the built DQN's first update (its counter at 0): Tianshou's _update_with_batch "
                         "copied the online network into the target after _preprocess_batch had computed the "
                         "targets and before the step, so the step is unaffected; the target network is not "
                         "compared")
        return ParityOutcome(RAN, targets={"q_target": q_target}, gradients=step.gradients_of(parameters),
                             updated=values_of(parameters), losses={"q": float(stats.loss)}, notes=tuple(notes),
                             defaults=dqn_defaults(setup))
    finally:
        setup.close()


def dqn_defaults(setup: TianshouSetup) -> dict[str, Any]:
    """What Tianshou's DQN really uses, read back from the built algorithm."""
    algorithm = setup.algorithm
    delta = algorithm.huber_loss_delta
    return {**optimizer_defaults(algorithm.optim), **network_defaults(algorithm.policy.model),
            "td_loss": "mse" if delta is None else f"huber (delta {delta:g}, mean)",
            "double_q": bool(algorithm.is_double),
            "target_update": f"hard every {algorithm.target_update_freq} updates (from the first update)"
            if algorithm.use_target_network else "none (online targets)",
            "n_step": algorithm.n_step, "gamma": algorithm.gamma,
            "max_grad_norm": algorithm.optim._max_grad_norm,
            "grad_clip_scope": "joint (the Q-network)" if algorithm.optim._max_grad_norm is not None else "none",
            "learning_rate_schedule": "constant" if not algorithm.lr_schedulers else
            ", ".join(type(s).__name__ for s in algorithm.lr_schedulers),
            "truncation_bootstrap": True,  # Algorithm.value_mask masks terminated transitions only
            "reward_normalization": False}
