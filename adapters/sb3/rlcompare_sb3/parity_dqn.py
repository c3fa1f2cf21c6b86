"""SB3's own DQN update on the parity probe: the batch added to SB3's ``ReplayBuffer`` (truncations
as ``TimeLimit.truncated`` infos, as SB3's collection stores them) and drawn back in order through
the buffer's own ``_get_samples``; SB3's ``train()`` computes the targets, the loss and the step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_linear_stack, stack_names, values_of
from rlcompare_sb3.parity import _keeping_td_target, _model, _replay_batch

if TYPE_CHECKING:
    from rlcompare_sb3 import StableBaselines3Adapter


def dqn_update(adapter: StableBaselines3Adapter, probe: ParityProbe) -> ParityOutcome:
    import stable_baselines3.dqn.dqn as sb3_dqn

    model, env = _model(adapter, probe)
    try:
        policy = model.policy
        layers = len(probe.network["hidden_sizes"]) + 1
        online = load_linear_stack(linear_layers(policy.q_net), stack_names("q", layers), probe.weights)
        target = load_linear_stack(linear_layers(policy.q_net_target), stack_names("q_target", layers), probe.weights)
        size = _replay_batch(model, probe.batch, discrete=True)
        model._current_progress_remaining = 1.0
        with _keeping_td_target(sb3_dqn, "smooth_l1_loss") as captured, OneStep(policy.optimizer) as step:
            model.train(gradient_steps=1, batch_size=size)
        if step.steps != 1 or "q_target" not in captured:
            return ParityOutcome.unverifiable("SB3's DQN train() did not make one Huber-loss step on the probe")
        defaults = {
            "optimizer": type(policy.optimizer).__name__, "adam_eps": policy.optimizer.defaults.get("eps"),
            "td_loss": "huber (smooth_l1_loss)", "double_q": False,
            "target_update": (f"polyak tau={model.tau}" if model.tau < 1 else "hard copy")
            + f" every {model.target_update_interval} env steps",
            "truncation_bootstrap": bool(model.replay_buffer.handle_timeout_termination),
            "exploration": f"linear {model.exploration_initial_eps} -> {model.exploration_final_eps} over "
                           f"{model.exploration_fraction} of the budget",
            "max_grad_norm": model.max_grad_norm,
        }
        return ParityOutcome(RAN, targets={"q_target": captured["q_target"]},
                             gradients=step.gradients_of(online), updated={**values_of(online), **values_of(target)},
                             losses={"q": captured["loss"]}, defaults=defaults,
                             notes=("the minibatch is the probe's batch in order, drawn through SB3's "
                                    "ReplayBuffer._get_samples instead of its random sampler",))
    finally:
        env.close()
