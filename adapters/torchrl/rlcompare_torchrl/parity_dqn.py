"""TorchRL's own DQN update on the parity probe: the learner ``train()`` builds
(``QValueActor``, ``DQNLoss`` with its TD(0) value estimator and delayed target parameters, Adam),
the probe's transitions written to the adapter's own ``ReplayBuffer`` and drawn back in order, and
one ``gradient_step`` as the training loop makes it (``DQNLoss.forward``, ``clip_grad_norm_``,
``Adam.step``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_linear_stack, stack_names, values_of
from rlcompare_torchrl.parity import captured_losses, learner

if TYPE_CHECKING:
    from rlcompare_torchrl import TorchRLAdapter, TorchRLSetup

IN_ORDER_NOTE = ("the probe's batch is written to the adapter's ReplayBuffer (LazyTensorStorage) and drawn back "
                 "whole and in order: its RandomSampler (uniform, with replacement) is replaced by "
                 "SamplerWithoutReplacement(shuffle=False) for the probe")


def load_target(loss: Any, online: dict[str, Any], weights: dict[str, Any], prefix: str, target_prefix: str,
                online_params: str, target_params: str) -> dict[str, Any]:
    """Copy the probe's target-network weights into a TorchRL loss's delayed parameters: the target
    ``TensorDictParams`` (``loss.<target_params>``) mirrors the online one (``loss.<online_params>``) key for
    key, so each target entry takes the canonical name of the online parameter at its key (``q.0.weight``
    -> ``q_target.0.weight``). Returns ``canonical target name -> tensor``."""
    import torch

    by_id = {id(parameter): name for name, parameter in online.items()}
    source = getattr(loss, online_params).flatten_keys(".")
    target = getattr(loss, target_params).flatten_keys(".")
    loaded = {}
    with torch.no_grad():
        for key, parameter in source.items():
            name = by_id.get(id(parameter))
            if name is None:
                continue
            name = target_prefix + name.removeprefix(prefix)
            value = torch.as_tensor(weights[name], dtype=target[key].dtype).reshape(target[key].shape)
            target[key].copy_(value)
            loaded[name] = target[key]
    expected = {name for name in weights if name.startswith(target_prefix)}
    if set(loaded) != expected:
        raise RuntimeError(f"TorchRL's target parameters cover {sorted(loaded)}, the probe has {sorted(expected)}")
    return loaded


@contextmanager
def captured_value_targets(loss: Any) -> Iterator[list[Any]]:
    """The TD targets TorchRL's value estimator returns inside (``value_estimate`` wrapped: the loss
    module uses them and keeps no copy)."""
    estimator = loss.value_estimator
    original = estimator.value_estimate
    targets: list[Any] = []

    def value_estimate(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        targets.append(value.detach())
        return value

    estimator.value_estimate = value_estimate
    try:
        yield targets
    finally:
        del estimator.value_estimate  # the instance attribute: the class's method again


def transitions(probe: ParityProbe, discrete: bool) -> Any:
    """The probe's minibatch as TorchRL's collector stores transitions in the replay buffer: batch
    ``[B]``, ``("next", ...)`` with the reward, ``done`` / ``terminated`` / ``truncated`` and the next
    observation."""
    import numpy as np
    import torch
    from tensordict import TensorDict

    batch = probe.batch
    size = len(batch["rewards"])
    terminated = batch["terminated"].astype(bool)
    truncated = batch["truncated"].astype(bool)

    def column(array: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.as_tensor(np.asarray(array)).to(dtype).reshape(size, 1)

    falses = np.zeros(size, dtype=bool)
    actions = torch.as_tensor(batch["actions"]).to(torch.int64 if discrete else torch.float32)
    return TensorDict({
        "observation": torch.as_tensor(batch["obs"], dtype=torch.float32), "action": actions,
        "done": column(falses, torch.bool), "terminated": column(falses, torch.bool),
        "truncated": column(falses, torch.bool),
        "next": {"observation": torch.as_tensor(batch["next_obs"], dtype=torch.float32),
                 "reward": column(batch["rewards"]), "done": column(terminated | truncated, torch.bool),
                 "terminated": column(terminated, torch.bool), "truncated": column(truncated, torch.bool)},
    }, batch_size=[size])


def in_order(setup: TorchRLSetup, data: Any) -> Any:
    """``data`` through the adapter's replay buffer, drawn back whole and in order (see IN_ORDER_NOTE)."""
    from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement

    buffer = setup.extras["buffer"]
    if buffer.batch_size != len(data):
        raise RuntimeError(f"the replay buffer samples {buffer.batch_size}, the probe's minibatch is {len(data)}")
    buffer.set_sampler(SamplerWithoutReplacement(shuffle=False))
    buffer.extend(data)
    return buffer.sample()


def dqn_update(adapter: TorchRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One DQN gradient step on the probe's minibatch, through the adapter's ``gradient_step``."""
    setup = learner(adapter, probe)
    loss = setup.loss
    layers = len(probe.network["hidden_sizes"]) + 1
    parameters = load_linear_stack(linear_layers(setup.actor), stack_names("q", layers), probe.weights)
    target = load_target(loss, parameters, probe.weights, "q.", "q_target.", "value_network_params",
                         "target_value_network_params")
    sample = in_order(setup, transitions(probe, discrete=True))
    target_before = values_of(target)
    with OneStep(setup.optimizer) as step, captured_losses(loss) as outputs, captured_value_targets(loss) as targets:
        setup.gradient_step(sample)
    if step.steps != 1 or len(targets) != 1:
        return ParityOutcome.unverifiable(f"TorchRL made {step.steps} optimizer steps and {len(targets)} target "
                                          "computations for one gradient step")
    target_after = values_of(target)
    moved = sorted(name for name in target_after if (target_after[name] != target_before[name]).any())
    notes = [IN_ORDER_NOTE, "the TD targets are read from DQNLoss's value estimator (TD0Estimator.value_estimate)"]
    if moved:  # the canonical step leaves the target network alone (its sync is the schedule's)
        notes.append(f"the gradient step moved the target network ({', '.join(moved[:4])})")
    return ParityOutcome(
        RAN, targets={"q_target": targets[0].double().reshape(-1).numpy()},
        gradients=step.gradients_of(parameters), updated={**values_of(parameters), **target_after},
        losses={"q": float(outputs[0]["loss"])}, defaults=dqn_defaults(setup), notes=tuple(notes),
    )


def dqn_defaults(setup: TorchRLSetup) -> dict[str, Any]:
    """What TorchRL built for DQN, read back from the objects."""
    loss, optimizer = setup.loss, setup.optimizer
    group = optimizer.param_groups[0]
    greedy = setup.extras["greedy"]
    updater = setup.extras["target_updater"]
    interval = setup.config["schedule"].get("target_update_interval")
    return {
        "optimizer": type(optimizer).__name__, "adam_eps": group.get("eps"), "learning_rate": group["lr"],
        "learning_rate_schedule": "constant (no scheduler built)",
        "initialization": "PyTorch default (torchrl.modules.MLP of nn.Linear, reset_parameters)",
        "observation_normalization": False, "reward_normalization": False,
        "td_loss": {"smooth_l1": "huber", "l2": "mse", "l1": "l1"}.get(loss.loss_function, loss.loss_function),
        "double_q": bool(loss.double_dqn), "delay_value": bool(loss.delay_value),
        "value_estimator": type(loss.value_estimator).__name__, "gamma": float(loss.value_estimator.gamma),
        "target_update": f"hard every {interval} env steps ({type(updater).__name__}, stepped by the training loop "
                         "when the env-step count crosses a multiple of the interval)",
        "grad_clip_scope": "joint (the Q-network)",
        "exploration": f"{type(greedy).__name__}: eps {float(greedy.eps_init):g} -> {float(greedy.eps_end):g} "
                       f"linearly over {int(greedy.annealing_num_steps)} env steps",
    }
