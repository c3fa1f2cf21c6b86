"""TorchRL's own update on rlcompare's parity probes, PPO (and what the other families share): the
learner that ``train()`` builds (:func:`rlcompare_torchrl.build_learner`: the same actor, critic, loss
module, ``GAE`` and optimizer), the probe's weights loaded into its networks, the probe's rollout in
a ``TensorDict`` laid out as TorchRL's collector delivers it, and TorchRL's own code doing the rest:
``GAE.forward`` for the targets, then the adapter's ``learn_on_policy`` (``ClipPPOLoss.forward``,
``clip_grad_norm_``, one ``Adam.step``) as its training loop runs it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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
)

if TYPE_CHECKING:
    import numpy as np

    from rlcompare_torchrl import TorchRLAdapter, TorchRLSetup

#: What the loss reads from a rollout besides the observation and action.
GAE_NOTE = ("GAE (torchrl.objectives.value.GAE, the adapter's own) over the stored values of the policy that "
            "collected the batch: 'state_value' and ('next', 'state_value') are in the TensorDict and the value "
            "network is skipped (set_skip_existing), as it runs on the critic that collected the rollout in "
            "training (GAE is computed before the epochs); a truncated step's ('next', 'state_value') is the "
            "collecting critic's value of its final observation")


def learner(adapter: TorchRLAdapter, probe: ParityProbe) -> TorchRLSetup:
    """The adapter's learner for the probe's workload, configured by its usual mapping (no environments
    are stepped and no collector is built)."""
    from rlcompare_torchrl import build_learner

    workload = probe.workload_view()
    config, _ = adapter.native_config(workload)
    return build_learner(workload, config, probe.seed)


@contextmanager
def captured_losses(loss_module: Any) -> Iterator[list[Any]]:
    """The outputs of every ``loss_module(...)`` call made inside (a forward hook: the training code
    sums them and drops them)."""
    outputs: list[Any] = []
    handle = loss_module.register_forward_hook(lambda _module, _inputs, output: outputs.append(output.detach()))
    try:
        yield outputs
    finally:
        handle.remove()


# -- PPO and A2C -------------------------------------------------------------------------------------


def actor_critic_parameters(setup: TorchRLSetup, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in TorchRL's ``ProbabilisticActor`` (an ``MLP`` of logits or the Gaussian
    mean, then ``AddStateIndependentNormalScale`` whose ``state_independent_scale`` is the log-std:
    scale = exp, clamped at 1e-4) and the ``ValueOperator`` critic (the GAE's value network, the loss's
    critic): ``canonical name -> parameter``. The loss module's functional parameters are these."""
    layers = len(probe.network["hidden_sizes"]) + 1
    critic = setup.extras["advantage"].value_network
    parameters = {
        **load_linear_stack(linear_layers(setup.actor), stack_names("policy", layers), probe.weights),
        **load_linear_stack(linear_layers(critic), stack_names("value", layers), probe.weights),
    }
    if not probe.discrete:
        scale = state_independent_scale(setup.actor)
        load_tensor(scale, probe.weights["policy.log_std"])
        parameters["policy.log_std"] = scale
    return parameters


def state_independent_scale(actor: Any) -> Any:
    from tensordict.nn import AddStateIndependentNormalScale

    scales = [module for module in actor.modules() if isinstance(module, AddStateIndependentNormalScale)]
    if len(scales) != 1 or scales[0].scale_mapping != "exp":
        raise RuntimeError("expected one AddStateIndependentNormalScale with scale_mapping 'exp' in TorchRL's actor")
    return scales[0].state_independent_scale


def rollout(probe: ParityProbe, log_prob_key: str | None, stored_values: bool) -> Any:
    """The probe's rollout (``[T, N]``) as TorchRL's collector delivers it from a ``SerialEnv`` of N
    environments: a ``TensorDict`` of batch ``[N, T]`` (time last), with ``("next", ...)`` holding the
    reward, ``done`` / ``terminated`` / ``truncated`` and the next observation (the final observation
    where an episode ended, which TorchRL keeps before resetting); with ``stored_values``, the
    collecting policy's values ``state_value`` and ``("next", "state_value")`` for GAE too."""
    import numpy as np
    import torch
    from tensordict import TensorDict

    batch = probe.batch
    steps, envs = batch["rewards"].shape
    terminated = batch["terminated"].astype(bool)
    truncated = batch["truncated"].astype(bool)
    done = terminated | truncated
    next_obs = np.concatenate([batch["obs"][1:], batch["last_obs"][None]], axis=0)
    next_obs = np.where(done[..., None], batch["terminal_obs"], next_obs)

    def tensor(array: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(np.swapaxes(np.asarray(array), 0, 1))).to(dtype)

    def column(array: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return tensor(array, dtype).unsqueeze(-1)

    actions = tensor(batch["actions"], torch.int64 if probe.discrete else torch.float32)
    data = {
        "observation": tensor(batch["obs"]), "action": actions,
        "done": column(np.zeros((steps, envs)), torch.bool), "terminated": column(np.zeros((steps, envs)), torch.bool),
        "truncated": column(np.zeros((steps, envs)), torch.bool),
        "next": {"observation": tensor(next_obs), "reward": column(batch["rewards"]),
                 "done": column(done, torch.bool), "terminated": column(terminated, torch.bool),
                 "truncated": column(truncated, torch.bool)},
    }
    if stored_values:
        next_values = np.concatenate([batch["old_values"][1:], batch["last_values"][None]], axis=0)
        # a truncated step bootstraps from the value of its final observation; a terminated one's next value
        # is multiplied by (1 - terminated) in TorchRL's GAE: terminal_values is 0 there
        next_values = np.where(done, batch["terminal_values"], next_values)
        data["state_value"] = column(batch["old_values"])
        data["next"]["state_value"] = column(next_values)
    if log_prob_key is not None:
        data[log_prob_key] = tensor(batch["old_log_prob"])
    return TensorDict(data, batch_size=[envs, steps])


def advantages(setup: TorchRLSetup, data: Any, stored_values: bool) -> Any:
    """TorchRL's GAE (the adapter's ``extras["advantage"]``) on ``data``: reading the stored values
    (the value network's module is skipped where its output is present), or calling the value network
    on the observations and next observations as in training."""
    import torch
    from tensordict.nn import set_skip_existing

    gae = setup.extras["advantage"]
    with torch.no_grad(), set_skip_existing(stored_values):
        data = gae(data)
    return data


def time_major(value: Any) -> np.ndarray:
    """``[N, T, 1]`` -> ``[T, N]`` float64."""
    return value.detach().squeeze(-1).transpose(0, 1).double().numpy()


def on_policy_defaults(setup: TorchRLSetup, log_std_init: float | None) -> dict[str, Any]:
    """What TorchRL built for PPO / A2C, read back from the objects."""
    import torch
    from torchrl.modules import IndependentNormal

    loss, optimizer, gae = setup.loss, setup.optimizer, setup.extras["advantage"]
    group = optimizer.param_groups[0]
    actor_count = sum(1 for _ in setup.actor.parameters())
    critic_count = sum(1 for _ in gae.value_network.parameters())
    defaults: dict[str, Any] = {
        "optimizer": type(optimizer).__name__, "learning_rate": group["lr"],
        "learning_rate_schedule": "constant (no scheduler built)",
        "initialization": "PyTorch default (torchrl.modules.MLP of nn.Linear, reset_parameters)",
        "observation_normalization": False, "reward_normalization": False,
        "grad_clip_scope": "joint" if len(setup.parameters) == actor_count + critic_count else "per network",
        "value_loss": {"l2": "mse", "smooth_l1": "huber", "l1": "l1"}.get(loss.loss_critic_type, loss.loss_critic_type),
        "entropy_bonus": bool(loss.entropy_bonus), "entropy_coeff": float(loss.entropy_coeff),
        "critic_coeff": float(loss.critic_coeff) if loss.critic_coeff is not None else None,
        "gae_gamma": float(gae.gamma), "gae_lambda": float(gae.lmbda), "gae_average": bool(gae.average_gae),
        "loss": type(loss).__name__,
    }
    for key in ("eps", "alpha", "betas", "momentum", "centered", "weight_decay"):
        if key in group:
            name = f"{type(optimizer).__name__.lower()}_eps" if key == "eps" else f"optimizer_{key}"
            defaults[name] = group[key]
    if hasattr(loss, "clip_epsilon"):
        defaults["clip_epsilon"] = float(loss.clip_epsilon)
    if hasattr(loss, "clip_value"):
        defaults["value_clipping"] = "off" if loss.clip_value is None else float(loss.clip_value)
    if hasattr(loss, "normalize_advantage"):
        # torchrl._utils._standardize: (A - mean) / std.clamp_min(eps), eps float32's resolution, torch's std
        resolution = torch.finfo(torch.float).resolution
        defaults["advantage_normalization"] = (
            f"per minibatch, (A - mean) / std.clamp_min({resolution:g}), unbiased std"
            if loss.normalize_advantage else "off")
    if log_std_init is not None:
        distribution = setup.actor.module[-1].distribution_class
        defaults["log_std_init"] = log_std_init
        defaults["action_distribution"] = distribution.__name__
        squashed = distribution is not IndependentNormal
        defaults["action_squashing"] = "tanh" if squashed else "clip" if setup.extras["clip_actions"] else "none"
    return defaults


def ppo_update(adapter: TorchRLAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO minibatch step: GAE over the rollout, then the adapter's ``learn_on_policy`` (one epoch of
    one minibatch: ``ClipPPOLoss`` on the replay buffer's sample, ``clip_grad_norm_``, ``Adam.step``)."""
    setup = learner(adapter, probe)
    log_std_init = None if probe.discrete else float(state_independent_scale(setup.actor).detach().mean())
    defaults = on_policy_defaults(setup, log_std_init)
    parameters = actor_critic_parameters(setup, probe)
    data = advantages(setup, rollout(probe, setup.loss.tensor_keys.sample_log_prob, stored_values=True),
                      stored_values=True)
    targets = {"advantages": time_major(data["advantage"]), "returns": time_major(data["value_target"])}
    with OneStep(setup.optimizer) as step, captured_losses(setup.loss) as outputs:
        setup.learn_on_policy(data)
    if step.steps != 1 or len(outputs) != 1:
        return ParityOutcome.unverifiable(f"TorchRL made {step.steps} optimizer steps ({len(outputs)} loss calls) "
                                          "on one epoch of one minibatch")
    out = outputs[0]
    critic_coeff = float(setup.loss.critic_coeff)
    losses = {"policy": float(out["loss_objective"]), "value": float(out["loss_critic"]) / critic_coeff,
              "entropy": -float(out["entropy"]),
              "total": sum(float(value) for key, value in out.items() if key.startswith("loss_"))}
    return ParityOutcome(
        RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters), losses=losses,
        defaults=defaults,
        notes=(GAE_NOTE, "the minibatch is the replay buffer's sample of the whole rollout (SamplerWithoutReplacement: "
                         "a permutation; the loss is a mean)"),
    )
