"""TorchRL's own SAC update on the parity probe: the learner ``train()`` builds (a ``ProbabilisticActor``
of an ``MLP`` with ``2 * dim(A)`` outputs, ``NormalParamExtractor`` and ``TanhNormal`` over the env's
bounds; one ``ValueOperator`` critic that ``SACLoss`` stacks into two, with delayed target copies;
``log_alpha``; one Adam over actor, critics and ``log_alpha``; ``SoftUpdate``), the probe's
transitions written to the adapter's ``ReplayBuffer`` and drawn back in order, and one
``gradient_step`` as the training loop makes it (``SACLoss.forward``: critic, actor and temperature
losses from one forward; one backward of their sum; one optimizer step; one Polyak step), sampling
noise switched off.

How TorchRL's parts meet the canonical names: the actor's last ``Linear`` has ``2 * dim(A)`` rows,
the first ``dim(A)`` the Gaussian's mean (``actor.mean``), the rest the scale's pre-activation
(``actor.log_std``); TorchRL maps it to the scale with ``NormalParamExtractor``'s mapping (its
default, ``biased_softplus_1.0``: ``softplus(x + b) + 0.01`` with ``softplus(b) = 0.99``), where the
canonical actor takes ``exp(clamp(x, -20, 2))``. The critics' parameters are stacked ``[2, ...]``
(``critic1`` at 0, ``critic2`` at 1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN, as_arrays
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_tensor, stack_names, without_sampling_noise
from rlcompare_torchrl.parity import captured_losses, learner
from rlcompare_torchrl.parity_dqn import IN_ORDER_NOTE, captured_value_targets, in_order, transitions

if TYPE_CHECKING:
    import numpy as np

    from rlcompare_torchrl import TorchRLAdapter, TorchRLSetup

#: canonical name -> (the framework's tensor, the canonical part of a tensor of its shape)
Views = dict[str, tuple[Any, Callable[[Any], Any]]]

ACTION_NOTE = ("the probe's actions ([-1, 1]) are stored in the replay buffer in the env's bounds, as TorchRL's "
               "collector stores the TanhNormal's actions (low + (a + 1) (high - low) / 2): TorchRL's critics see "
               "env-scaled actions")


def _whole(tensor: Any) -> Any:
    return tensor


def _rows(start: int, stop: int) -> Callable[[Any], Any]:
    return lambda tensor: tensor[start:stop]


def _index(i: int) -> Callable[[Any], Any]:
    return lambda tensor: tensor[i]


def load_actor(setup: TorchRLSetup, probe: ParityProbe) -> Views:
    """The probe's actor in TorchRL's: the hidden layers, then mean and log-std heads stacked as the
    rows of the MLP's last layer (``NormalParamExtractor`` splits its output in two: loc, then scale)."""
    import torch

    layers = linear_layers(setup.actor)
    hidden = len(probe.network["hidden_sizes"])
    if len(layers) != hidden + 1:
        raise RuntimeError(f"TorchRL's actor has {len(layers)} Linear layers, the probe's {hidden} hidden and one head")
    actions = layers[-1].out_features // 2
    views: Views = {}
    with torch.no_grad():
        for layer, name in zip(layers[:-1], stack_names("actor", hidden + 1)[:-1], strict=True):
            for kind in ("weight", "bias"):
                load_tensor(getattr(layer, kind), probe.weights[f"{name}.{kind}"])
                views[f"{name}.{kind}"] = (getattr(layer, kind), _whole)
        for kind in ("weight", "bias"):
            parameter = getattr(layers[-1], kind)
            stacked = [probe.weights[f"actor.mean.{kind}"], probe.weights[f"actor.log_std.{kind}"]]
            load_tensor(parameter, torch.cat([torch.as_tensor(part) for part in stacked]).numpy())
            views[f"actor.mean.{kind}"] = (parameter, _rows(0, actions))
            views[f"actor.log_std.{kind}"] = (parameter, _rows(actions, 2 * actions))
    return views


def load_critics(params: Any, probe: ParityProbe, names: tuple[str, ...]) -> Views:
    """The probe's critics in one of ``SACLoss``'s stacked parameter sets (``qvalue_network_params`` or
    ``target_qvalue_network_params``: ``[2, ...]`` leaves, the MLP's Linear layers in order)."""
    import torch

    flat = params.flatten_keys(".")
    keys = list(flat.keys())
    weights = [key for key in keys if key.endswith("weight")]
    views: Views = {}
    with torch.no_grad():
        for i, critic in enumerate(names):
            canonical = stack_names(critic, len(weights))
            for key, name in zip(weights, canonical, strict=True):
                for kind, leaf in (("weight", key), ("bias", key.removesuffix("weight") + "bias")):
                    tensor = flat[leaf]
                    tensor[i].copy_(torch.as_tensor(probe.weights[f"{name}.{kind}"], dtype=tensor.dtype))
                    views[f"{name}.{kind}"] = (tensor, _index(i))
    return views


def _values(views: Views) -> dict[str, np.ndarray]:
    return as_arrays({name: select(tensor.detach()) for name, (tensor, select) in views.items()})


def _gradients(step: OneStep, views: Views) -> dict[str, np.ndarray]:
    import numpy as np

    out = {}
    for name, (tensor, select) in views.items():
        gradient = step.gradients.get(id(tensor))
        out[name] = np.asarray(select(gradient)) if gradient is not None else np.zeros(select(tensor).shape)
    return out


def sac_update(adapter: TorchRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One SAC gradient step on the probe's minibatch, through the adapter's ``gradient_step``."""
    import numpy as np
    import torch

    setup = learner(adapter, probe)
    loss = setup.loss
    defaults = sac_defaults(setup)
    actor = load_actor(setup, probe)
    critics = load_critics(loss.qvalue_network_params, probe, ("critic1", "critic2"))
    target = load_critics(loss.target_qvalue_network_params, probe, ("critic1_target", "critic2_target"))
    load_tensor(loss.log_alpha, probe.weights["log_alpha"])
    online: Views = {**actor, **critics, "log_alpha": (loss.log_alpha, lambda tensor: tensor.reshape(1))}

    data = transitions(probe, discrete=False)
    low = torch.as_tensor(probe.action_space["low"], dtype=torch.float32)
    high = torch.as_tensor(probe.action_space["high"], dtype=torch.float32)
    data["action"] = low + (data["action"] + 1.0) * (high - low) / 2
    sample = in_order(setup, data)
    with (without_sampling_noise(), OneStep(setup.optimizer) as step, captured_losses(loss) as outputs,
          captured_value_targets(loss) as targets):
        setup.gradient_step(sample)
    if step.steps != 1 or len(targets) != 1:
        return ParityOutcome.unverifiable(f"TorchRL made {step.steps} optimizer steps and {len(targets)} target "
                                          "computations for one gradient step")
    out = outputs[0]
    losses = {"ent_coef": float(out["alpha"]), "ent_coef_loss": float(out["loss_alpha"]),
              "critic": float(out["loss_qvalue"]), "actor": float(out["loss_actor"])}
    return ParityOutcome(
        RAN, targets={"q_target": targets[0].double().reshape(-1).numpy()},
        gradients=_gradients(step, online), updated={**_values(online), **_values(target)},
        losses={key: float(np.float64(value)) for key, value in losses.items()}, defaults=defaults,
        notes=(IN_ORDER_NOTE, ACTION_NOTE,
               "SACLoss computes the critic, actor and temperature losses in one forward and TorchRL's training "
               "loop (and the adapter's) steps them with one optimizer: the actor's loss sees the critics before "
               "their step",
               "the TD targets are read from SACLoss's value estimator (TD0Estimator.value_estimate)"),
    )


def sac_defaults(setup: TorchRLSetup) -> dict[str, Any]:
    """What TorchRL built for SAC, read back from the objects (before the probe's weights are loaded)."""
    from tensordict.nn import NormalParamExtractor

    loss, optimizer = setup.loss, setup.optimizer
    extractors = [module for module in setup.actor.modules() if isinstance(module, NormalParamExtractor)]
    mapping = extractors[0].scale_mapping if extractors else None
    scale = (f"{type(mapping).__name__}: softplus(x + {float(mapping.bias):.4f}) + {mapping.min_val:g}, "
             f"clamp_min {extractors[0].scale_lb:g}") if mapping is not None and hasattr(mapping, "min_val") \
        else repr(mapping)
    distribution = setup.actor.module[-1]
    kwargs = getattr(distribution, "distribution_kwargs", {}) or {}
    bounds = [kwargs[key].tolist() for key in ("low", "high") if key in kwargs]
    groups = optimizer.param_groups
    return {
        "optimizer": f"{type(optimizer).__name__} ({len(groups)} parameter groups: actor, critics, log_alpha; "
                     "one step)",
        "adam_eps": groups[0].get("eps"), "learning_rate": groups[0]["lr"],
        "learning_rate_schedule": "constant (no scheduler built)",
        "initialization": "PyTorch default (torchrl.modules.MLP of nn.Linear, reset_parameters)",
        "observation_normalization": False, "reward_normalization": False,
        "action_squashing": "tanh", "action_distribution": distribution.distribution_class.__name__,
        "action_bounds": f"scaled to the env's bounds {bounds} by the distribution" if bounds else "[-1, 1]",
        "log_std": f"state-dependent scale, {scale}",
        "critic_loss": f"{loss.loss_function}, summed over the {loss.num_qvalue_nets} critics, no factor 1/2",
        "alpha_init": float(loss.log_alpha.detach().exp()), "fixed_alpha": not loss.log_alpha.requires_grad,
        "target_entropy": float(loss.target_entropy),
        "target_update": f"polyak tau {1 - float(setup.extras['target_updater'].eps):g} after every gradient step "
                         f"({type(setup.extras['target_updater']).__name__})",
        "gamma": float(loss.value_estimator.gamma), "value_estimator": type(loss.value_estimator).__name__,
        "grad_clip_scope": "none",
    }
