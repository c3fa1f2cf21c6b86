"""TorchRL's own TD3 and DDPG update on the parity probe: the learner ``train()`` builds (a deterministic
actor, an ``MLP`` then ``TanhModule`` onto the env's bounds; ``ValueOperator`` critics reading
(observation, action), which ``TD3Loss`` stacks into two and ``DDPGLoss`` keeps as one, with delayed
target copies of actor and critics; an Adam for the critics, one for the actor; ``SoftUpdate``), the
probe's transitions written to the adapter's ``ReplayBuffer`` and drawn back in order, and one
``gradient_step`` as the training loop makes it (the probe's ``policy_delay`` is 1): the critics on
``TD3Loss.value_loss`` / ``DDPGLoss.loss_value`` and their Adam step, the actor on ``actor_loss`` /
``loss_actor`` against the stepped critics (their detached parameters share the storage the critics'
Adam updates in place) and its Adam step, then one Polyak step of the target actor and critics.

How TorchRL's parts meet the canonical names: the actor's ``Linear`` layers in order
(``actor.i``, ``actor.out``, then ``TanhModule``); TD3's critic parameters are stacked ``[2, ...]``
(``critic1`` at 0, ``critic2`` at 1), DDPG's one critic is ``critic1``; the target parameter sets
mirror the online ones key for key."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe
from rlcompare.harness.parity import RAN
from rlcompare.harness.parity_torch import OneStep, linear_layers, load_linear_stack, stack_names
from rlcompare_torchrl.parity import learner
from rlcompare_torchrl.parity_dqn import IN_ORDER_NOTE, captured_value_targets, in_order, load_target, transitions
from rlcompare_torchrl.parity_sac import Views, _gradients, _values, _whole, load_critics

if TYPE_CHECKING:
    from rlcompare_torchrl import TorchRLAdapter, TorchRLSetup

ACTION_NOTE = ("the probe's actions ([-1, 1]) are stored in the replay buffer in the env's bounds, as TorchRL's "
               "collector stores the TanhModule's actions (low + (a + 1) (high - low) / 2): TorchRL's critics see "
               "env-scaled actions, the target actor's action included")


def _actor(setup: TorchRLSetup, probe: ParityProbe) -> tuple[Views, Views]:
    """The probe's actor and target actor in TorchRL's: (online views, target views). The actor's
    ``Linear`` layers are the tensors of ``loss.actor_network_params`` (the actor's Adam holds them)."""
    layers = linear_layers(setup.actor)
    count = len(probe.network["hidden_sizes"]) + 1
    if len(layers) != count:
        raise RuntimeError(f"TorchRL's actor has {len(layers)} Linear layers, the probe's {count - 1} hidden and one "
                           "output")
    online = load_linear_stack(layers, stack_names("actor", count), probe.weights)
    target = load_target(setup.loss, online, probe.weights, "actor.", "actor_target.", "actor_network_params",
                         "target_actor_network_params")
    return ({name: (tensor, _whole) for name, tensor in online.items()},
            {name: (tensor, _whole) for name, tensor in target.items()})


def _single_critic(params: Any, probe: ParityProbe, name: str) -> Views:
    """The probe's critic ``name`` in ``DDPGLoss``'s (unstacked) ``value_network_params`` or
    ``target_value_network_params``: the MLP's Linear layers in order."""
    import torch

    flat = params.flatten_keys(".")
    weights = [key for key in flat.keys() if key.endswith("weight")]
    views: Views = {}
    with torch.no_grad():
        for key, canonical in zip(weights, stack_names(name, len(weights)), strict=True):
            for kind, leaf in (("weight", key), ("bias", key.removesuffix("weight") + "bias")):
                tensor = flat[leaf]
                tensor.copy_(torch.as_tensor(probe.weights[f"{canonical}.{kind}"], dtype=tensor.dtype)
                             .reshape(tensor.shape))
                views[f"{canonical}.{kind}"] = (tensor, _whole)
    return views


def _critics(setup: TorchRLSetup, probe: ParityProbe) -> tuple[Views, Views]:
    """The probe's critics and their targets in TorchRL's loss: (online views, target views)."""
    loss = setup.loss
    if probe.family == "TD3":
        names = tuple(f"critic{i + 1}" for i in range(int(loss.num_qvalue_nets)))
        return (load_critics(loss.qvalue_network_params, probe, names),
                load_critics(loss.target_qvalue_network_params, probe, tuple(f"{name}_target" for name in names)))
    return (_single_critic(loss.value_network_params, probe, "critic1"),
            _single_critic(loss.target_value_network_params, probe, "critic1_target"))


def td3_update(adapter: TorchRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One TD3 (or DDPG) gradient step on the probe's minibatch, through the adapter's ``gradient_step``:
    the critic step, then (delay 1) the actor step against the stepped critics and the Polyak step."""
    import torch

    setup = learner(adapter, probe)
    if setup.config["schedule"].get("policy_delay") != 1:
        return ParityOutcome.unverifiable(f"the probe's policy_delay is 1, the adapter configured "
                                          f"{setup.config['schedule'].get('policy_delay')}")
    loss = setup.loss
    defaults = deterministic_defaults(setup, probe.family)
    actor, actor_target = _actor(setup, probe)
    critics, critic_targets = _critics(setup, probe)
    online: Views = {**actor, **critics}

    data = transitions(probe, discrete=False)
    low = torch.as_tensor(probe.action_space["low"], dtype=torch.float32)
    high = torch.as_tensor(probe.action_space["high"], dtype=torch.float32)
    data["action"] = low + (data["action"] + 1.0) * (high - low) / 2
    sample = in_order(setup, data)
    optimizers = (setup.optimizer, setup.extras["actor_optimizer"])
    critic_loss, actor_loss = ("value_loss", "actor_loss") if probe.family == "TD3" else ("loss_value", "loss_actor")
    with (OneStep(*optimizers) as step, captured_value_targets(loss) as targets,
          _captured(loss, critic_loss) as critic_losses, _captured(loss, actor_loss) as actor_losses,
          _captured(setup.extras["target_updater"], "step") as polyak_steps):
        setup.gradient_step(sample)
    if (step.steps != len(optimizers) or len(targets) != 1 or len(polyak_steps) != 1 or len(critic_losses) != 1
            or len(actor_losses) != 1):
        return ParityOutcome.unverifiable(
            f"TorchRL made {step.steps} optimizer steps, {len(targets)} target computations, {len(critic_losses)} "
            f"critic and {len(actor_losses)} actor losses and {len(polyak_steps)} target updates for one gradient "
            "step (the probe's delay is 1: one of each)")
    losses = {"critic": float(critic_losses[0][0]), "actor": float(actor_losses[0][0])}
    return ParityOutcome(
        RAN, targets={"q_target": targets[0].double().reshape(-1).numpy()},
        gradients=_gradients(step, online), updated={**_values(online), **_values(actor_target),
                                                     **_values(critic_targets)},
        losses=losses, defaults=defaults,
        notes=(IN_ORDER_NOTE, ACTION_NOTE,
               f"the training step as the adapter's train() makes it ({type(loss).__name__}.{critic_loss} and the "
               f"critics' Adam step, then {type(loss).__name__}.{actor_loss} against the critics after their step "
               "and the actor's Adam step, then SoftUpdate.step)",
               f"the TD targets are read from {type(loss).__name__}'s value estimator "
               f"({type(loss.value_estimator).__name__}.value_estimate)"),
    )


@contextmanager
def _captured(owner: Any, method: str) -> Iterator[list[Any]]:
    """The results of every ``owner.<method>(...)`` call made inside (an instance attribute wraps the
    class's method and is removed after), detached."""
    original = getattr(owner, method)
    results: list[Any] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        results.append(tuple(item.detach() if hasattr(item, "detach") else item for item in result)
                       if isinstance(result, tuple) else result)
        return result

    setattr(owner, method, wrapped)
    try:
        yield results
    finally:
        delattr(owner, method)


def deterministic_defaults(setup: TorchRLSetup, family: str) -> dict[str, Any]:
    """What TorchRL built for TD3 / DDPG, read back from the objects (before the probe's weights are loaded)."""
    from torchrl.modules import TanhModule

    loss, critic_optimizer = setup.loss, setup.optimizer
    actor_optimizer = setup.extras["actor_optimizer"]
    updater = setup.extras["target_updater"]
    tanh = [module for module in setup.actor.modules() if isinstance(module, TanhModule)]
    key = tanh[0].out_keys[0] if tanh else None
    key = key if isinstance(key, str) or key is None else "_".join(key)
    bounds = [getattr(tanh[0], f"{key}_low").tolist(), getattr(tanh[0], f"{key}_high").tolist()] if tanh else None
    group = critic_optimizer.param_groups[0]
    td3 = family == "TD3"
    critics = int(loss.num_qvalue_nets) if td3 else 1
    defaults: dict[str, Any] = {
        "optimizer": f"{type(critic_optimizer).__name__} (critics), {type(actor_optimizer).__name__} (actor)",
        "adam_eps": group.get("eps"), "adam_eps_actor": actor_optimizer.param_groups[0].get("eps"),
        "learning_rate": group["lr"], "learning_rate_schedule": "constant (no scheduler built)",
        "initialization": "PyTorch default (torchrl.modules.MLP of nn.Linear, reset_parameters)",
        "observation_normalization": False, "reward_normalization": False,
        "action_squashing": "tanh" if tanh else "none",
        "action_bounds": f"scaled to the env's bounds {bounds} by TanhModule" if bounds else "[-1, 1]",
        "critic_loss": f"{loss.loss_function}, summed over the {critics} critic(s), no factor 1/2",
        "n_critics": critics,
        "target_actor": bool(loss.delay_actor),
        "target_update": f"polyak tau {1 - float(updater.eps):g} after every actor step ({type(updater).__name__})",
        "policy_delay": int(setup.config["schedule"]["policy_delay"]),
        "gamma": float(loss.value_estimator.gamma), "value_estimator": type(loss.value_estimator).__name__,
        "grad_clip_scope": "none",
    }
    if td3:
        defaults.update(target_policy_noise=_plain_scale(loss.policy_noise),
                        target_noise_clip=_plain_scale(loss.noise_clip),
                        target_action_clamp=[loss.min_action.tolist(), loss.max_action.tolist()])
    return defaults


def _plain_scale(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else float(value)
