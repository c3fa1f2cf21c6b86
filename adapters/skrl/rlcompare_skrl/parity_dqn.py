"""skrl's own DQN update on the parity probe: the batch in the agent's ``RandomMemory`` and drawn back
in order, skrl's ``DQN.update`` (``skrl/agents/torch/dqn/dqn.py``) computing the targets, the loss
(``F.mse_loss``) and the optimizer step, with no gradient clipping (skrl's DQN has none)."""

from __future__ import annotations

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


def dqn_update(adapter: SkrlAdapter, probe: ParityProbe) -> ParityOutcome:
    """One DQN gradient step on the probe's batch, by skrl's ``DQN.update`` (or ``DDQN.update``)."""
    import importlib

    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        cfg = agent.cfg
        if cfg.gradient_steps != 1:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to {cfg.gradient_steps} gradient steps "
                                              "per update, not one")
        online = mlp_parameters(agent.q_network, "q", probe)
        target = mlp_parameters(agent.target_q_network, "q_target", probe)
        size = fill_replay(agent, probe)
        if cfg.batch_size != size:
            return ParityOutcome.unverifiable(f"skrl's batch_size is {cfg.batch_size}, the probe's batch {size}")
        captured: dict[str, Any] = {}
        module = importlib.import_module(type(agent).__module__)  # skrl.agents.torch.dqn.dqn (or ddqn.ddqn)
        with sampled_in_order(agent.memory, size), capturing_targets(module, "mse_loss", captured):
            step = run_update(agent, (agent.optimizer,))
        if step.steps != 1 or "q_target" not in captured:
            return ParityOutcome.unverifiable(f"skrl's DQN update made {step.steps} optimizer steps"
                                              + ("" if "q_target" in captured else " and no mse_loss call"))
        return ParityOutcome(
            RAN, targets={"q_target": captured["q_target"]}, gradients=step.gradients_of(online),
            updated={**values_of(online), **values_of(target)},
            losses=tracked_losses(agent, {"q": ("Loss / Q-network loss", 1.0)}), defaults=dqn_defaults(setup),
            notes=("the minibatch is the probe's batch in order, drawn through skrl's Memory.sample_by_index "
                   "instead of RandomMemory.sample (uniform, with replacement)",
                   "skrl's DQN memory stores no truncation flag: truncated transitions bootstrap",),
        )
    finally:
        setup.close()


def dqn_defaults(setup: Any) -> dict[str, Any]:
    """What the built DQN agent uses, read back from its objects; the loss, the lack of gradient
    clipping and the target-update counting are skrl's code (``DQN.update``)."""
    agent = setup.agent
    cfg = agent.cfg
    n_envs = setup.n_envs
    scheduler = cfg.exploration_scheduler
    scheduler = getattr(scheduler, "untraced", scheduler)
    exploration: Any = "none (greedy)" if scheduler is None else repr(scheduler)
    if hasattr(scheduler, "decay_timesteps"):
        exploration = (f"linear {scheduler.initial} -> {scheduler.final} over {scheduler.decay_timesteps:g} vector "
                       f"steps ({scheduler.decay_timesteps * n_envs:g} env steps) from step 0, then flat; uniform "
                       f"random actions before random_timesteps={cfg.random_timesteps} vector steps")
    polyak = float(cfg.polyak)
    return {
        **optimizer_defaults(agent.optimizer),
        "initialization": "PyTorch's default Linear init (kaiming_uniform, a=sqrt 5): skrl's models leave it",
        "observation_normalization": preprocessor_name(agent, "_observation_preprocessor"),
        "reward_normalization": "none" if cfg.rewards_shaper is None else repr(cfg.rewards_shaper),
        "learning_rate_schedule": "constant" if agent.scheduler is None else type(agent.scheduler).__name__,
        "td_loss": "mse (F.mse_loss, DQN.update)",
        "max_grad_norm": "none (skrl's DQN.update does not clip gradients)",
        "double_q": type(agent).__name__ == "DDQN",
        "truncation_bootstrap": True,
        "target_update": (("hard copy" if polyak == 1.0 else f"polyak tau={polyak}")
                          + f" every {cfg.target_update_interval} gradient steps (skrl counts its target_update_"
                            "interval in gradient steps, from the first update)"),
        "learning_starts": f"{cfg.learning_starts} vector steps ({cfg.learning_starts * n_envs} env steps)",
        "update_interval": f"{cfg.update_interval} vector steps ({cfg.update_interval * n_envs} env steps), "
                           f"{cfg.gradient_steps} gradient steps each",
        "batch_size": cfg.batch_size,
        "replay_sampling": "uniform with replacement" if getattr(agent.memory, "_replacement", False)
        else "without replacement",
        "exploration": exploration,
        "random_actions": random_actions(agent.q_network),
    }
