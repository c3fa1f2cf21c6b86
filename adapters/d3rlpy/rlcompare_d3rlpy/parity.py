"""d3rlpy's own updates on rlcompare's parity probes (DQN, SAC, TD3, DDPG).

The algorithm is built as ``train()`` builds it (:func:`rlcompare_d3rlpy.run.build_algo` from the
adapter's native configuration of the probe's workload, ``create_impl`` for the probe's shapes, the
gradient-step counter at 1), the probe's weights are loaded into d3rlpy's own modules, and the
probe's transitions go through d3rlpy's data path: each one an ``Episode`` appended to a
``ReplayBuffer`` (one step and ``terminated=True`` for a termination; otherwise the observation and
the next observation, not terminated), picked in order by the buffer's ``BasicTransitionPicker``
(``ReplayBuffer.sample_transition`` with index ``i`` instead of a random one) into a
``TransitionMiniBatch``. Then ``algo.update(batch)``: d3rlpy's ``TorchMiniBatch.from_batch`` and the
impl's ``inner_update``, every optimizer inside :class:`OneStep`.

The TD target is read where d3rlpy computes it: the impl's ``compute_target`` output (the target
networks' value at the next observation, minus the entropy term for SAC), combined as d3rlpy's
``compute_error`` combines it, ``r + gamma * target * (1 - terminal)``
(``d3rlpy/models/torch/q_functions/mean_q_function.py``).
"""

from __future__ import annotations

import contextlib
import inspect
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

if TYPE_CHECKING:
    import numpy as np

    from rlcompare_d3rlpy import D3rlpyAdapter

FAMILIES = ("DQN", "SAC", "TD3", "DDPG")
SAMPLING_NOTE = ("the probe's transitions are d3rlpy Episodes in a ReplayBuffer(InfiniteBuffer), picked in order by "
                 "its BasicTransitionPicker (ReplayBuffer.sample_transition with index i, not a random one)")
TARGET_NOTE = ("q_target: the impl's compute_target output combined as d3rlpy's compute_error combines it, "
               "r + gamma * target * (1 - terminal)")


def parity_update(adapter: D3rlpyAdapter, probe: ParityProbe) -> ParityOutcome:
    """One d3rlpy update on the probe's minibatch."""
    if probe.family not in FAMILIES:
        return ParityOutcome.unverifiable(f"d3rlpy's adapter offers no {probe.family}")
    import torch

    from rlcompare_d3rlpy.run import build_algo

    workload = probe.workload_view()
    native, _ = adapter.native_config(workload)
    algo = build_algo(native, probe.seed)
    action_size = int(probe.action_space["n"]) if probe.discrete else int(probe.action_space["shape"][0])
    algo.create_impl((probe.observation_dim,), action_size)
    algo.set_grad_step(1)  # as train() does
    impl = algo.impl
    parameters, optimizers = _load(probe, impl)
    batch = minibatch(probe, action_size)
    kept: dict[str, Any] = {}
    compute_target = impl.compute_target

    def keeping_target(torch_batch: Any) -> Any:
        target = compute_target(torch_batch)
        kept["y"] = torch_batch.rewards + impl._gamma ** torch_batch.intervals * target * (1 - torch_batch.terminals)  # noqa: SLF001
        return target

    impl.compute_target = keeping_target
    noise = without_sampling_noise() if probe.family == "SAC" else contextlib.nullcontext()
    with OneStep(*optimizers) as step, noise:
        losses = algo.update(batch)
    if step.steps != len(optimizers):
        return ParityOutcome.unverifiable(f"d3rlpy made {step.steps} optimizer steps, {len(optimizers)} expected "
                                          "(one per optimizer)")
    trained = {name: parameter for name, parameter in parameters.items() if "_target." not in name}
    with torch.no_grad():
        q_target = kept["y"].reshape(-1).double().numpy()
    notes = [SAMPLING_NOTE, TARGET_NOTE]
    if probe.family == "SAC":
        notes.append("sampling noise off (Normal samples its mean), as in the reference")
    return ParityOutcome(RAN, targets={"q_target": q_target}, gradients=step.gradients_of(trained),
                         updated=values_of(parameters if probe.family != "DQN" else trained),
                         losses={name: float(value) for name, value in losses.items()}, notes=tuple(notes),
                         defaults=defaults(probe.family, algo))


def minibatch(probe: ParityProbe, action_size: int) -> Any:
    """The probe's batch through d3rlpy's data path, in order (see the module docstring)."""
    import numpy as np
    from d3rlpy.constants import ActionSpace
    from d3rlpy.dataset import Episode, InfiniteBuffer, ReplayBuffer, TransitionMiniBatch

    batch = probe.batch
    obs = np.asarray(batch["obs"], dtype=np.float32)
    next_obs = np.asarray(batch["next_obs"], dtype=np.float32)
    rewards = np.asarray(batch["rewards"], dtype=np.float32).reshape(-1, 1)
    if probe.discrete:
        actions: np.ndarray = np.asarray(batch["actions"]).astype(np.int64).reshape(-1, 1)
    else:
        actions = np.asarray(batch["actions"], dtype=np.float32).reshape(len(rewards), -1)
    episodes = []
    for i in range(len(rewards)):
        if batch["terminated"][i]:
            episodes.append(Episode(observations=obs[i:i + 1], actions=actions[i:i + 1], rewards=rewards[i:i + 1],
                                    terminated=True))
        else:  # a truncated transition too: its next observation is there, so d3rlpy bootstraps it
            episodes.append(Episode(observations=np.stack([obs[i], next_obs[i]]),
                                    actions=np.stack([actions[i], actions[i]]),
                                    rewards=np.stack([rewards[i], np.zeros_like(rewards[i])]), terminated=False))
    space = ActionSpace.DISCRETE if probe.discrete else ActionSpace.CONTINUOUS
    buffer = ReplayBuffer(InfiniteBuffer(), episodes=episodes, action_space=space, action_size=action_size)
    transitions = [buffer.transition_picker(*buffer.buffer[i]) for i in range(buffer.transition_count)]
    return TransitionMiniBatch.from_transitions(transitions)


def _load(probe: ParityProbe, impl: Any) -> tuple[dict[str, Any], list[Any]]:
    """The probe's weights in d3rlpy's modules: canonical name -> parameter, and the torch optimizers."""
    modules = impl._modules  # noqa: SLF001 - the impl's own module table (DQNModules, SACModules, ...)
    weights, layers = probe.weights, len(probe.network["hidden_sizes"]) + 1
    hidden = layers - 1
    parameters: dict[str, Any] = {}
    if probe.family == "DQN":
        parameters.update(load_linear_stack(linear_layers(modules.q_funcs[0]), stack_names("q", layers), weights))
        load_linear_stack(linear_layers(modules.targ_q_funcs[0]), stack_names("q_target", layers), weights)
        return parameters, [modules.optim.optim]
    critics = ("critic1", "critic2") if len(modules.q_funcs) == 2 else ("critic1",)
    for index, critic in enumerate(critics):
        parameters.update(load_linear_stack(linear_layers(modules.q_funcs[index]), stack_names(critic, layers), weights))
        parameters.update(load_linear_stack(linear_layers(modules.targ_q_funcs[index]),
                                            stack_names(f"{critic}_target", layers), weights))
    optimizers = [modules.critic_optim.optim, modules.actor_optim.optim]
    if probe.family == "SAC":
        names = [f"actor.{i}" for i in range(hidden)] + ["actor.mean", "actor.log_std"]
        parameters.update(load_linear_stack(linear_layers(modules.policy), names, weights))
        from d3rlpy.models.torch import get_parameter

        log_temp = get_parameter(modules.log_temp)
        load_tensor(log_temp, weights["log_alpha"])
        parameters["log_alpha"] = log_temp
        if modules.temp_optim is not None:
            optimizers.append(modules.temp_optim.optim)
        return parameters, optimizers
    parameters.update(load_linear_stack(linear_layers(modules.policy), stack_names("actor", layers), weights))
    parameters.update(load_linear_stack(linear_layers(modules.targ_policy), stack_names("actor_target", layers),
                                        weights))
    return parameters, optimizers


def defaults(family: str, algo: Any) -> dict[str, Any]:
    """What the built algorithm really uses, read back from its objects and d3rlpy's code."""
    from d3rlpy.models.torch.q_functions.utility import compute_huber_loss

    impl, config = algo.impl, algo.config
    modules = impl._modules  # noqa: SLF001
    wrapper = modules.optim if family == "DQN" else modules.critic_optim
    group = wrapper.optim.param_groups[0]
    found: dict[str, Any] = {
        "optimizer": type(wrapper.optim).__name__.lower(), "adam_eps": group["eps"],
        "initialization": "PyTorch's default (d3rlpy re-initializes nothing)",
        "observation_normalization": config.observation_scaler is not None,
        "reward_normalization": config.reward_scaler is not None,
        "action_scaler": None if config.action_scaler is None else type(config.action_scaler).__name__,
        "learning_rate_schedule": "constant" if wrapper._lr_scheduler is None else type(wrapper._lr_scheduler).__name__,  # noqa: SLF001
        "max_grad_norm": wrapper._clip_grad_norm,  # noqa: SLF001
        "grad_clip_scope": "global over the optimizer's parameters" if wrapper._clip_grad_norm else "none",  # noqa: SLF001
        "gamma": config.gamma, "truncation_bootstrap": "bootstrapped in the update; in a run the truncated step "
                                                       "never enters the replay buffer",
    }
    if family == "DQN":
        beta = inspect.signature(compute_huber_loss).parameters["beta"].default
        found.update(td_loss=f"huber (beta {beta:g}, mean)", double_q=type(impl).__name__ == "DoubleDQNImpl",
                     target_update=f"hard every {impl._target_update_interval} gradient steps (after the step)")  # noqa: SLF001
        return found
    found.update(target_update=f"polyak tau {config.tau:g}", critic_loss="sum_i mean((Q_i - y)^2)",
                 n_critics=config.n_critics, action_squashing="tanh")
    if family == "SAC":
        found.update(initial_temperature=config.initial_temperature,
                     temperature="learned" if modules.temp_optim is not None else "fixed",
                     target_entropy="-dim(A)", alpha_loss="-mean(exp(log_temp) * (log pi - dim(A)))",
                     update_order="critics (alpha before its step), temperature, actor (alpha after its step), "
                                  "targets",
                     log_std="state-dependent head, clamped to [-20, 2]", squash_correction="exact")
    elif family == "TD3":
        found.update(update_actor_interval=config.update_actor_interval,
                     target_smoothing=[config.target_smoothing_sigma, config.target_smoothing_clip])
    return found
