"""skrl's own update on rlcompare's parity probes (PPO here; A2C, DQN and SAC in their own modules).

The agent is built by the adapter's own :func:`rlcompare_skrl.build` from the probe's workload (the
same models, memory and agent ``train()`` runs), the probe's weights are loaded into skrl's models,
the batch goes into skrl's memory through the agent's own ``record_transition`` (PPO, A2C) or the
memory's ``add_samples`` (DQN, SAC), and skrl's own ``update`` does the rest: GAE in
``skrl/agents/torch/ppo/ppo.py:compute_gae``, the losses and exactly one optimizer step.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rlcompare.adapter import ParityOutcome, ParityProbe, make_env
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
    from rlcompare_skrl import SkrlAdapter, SkrlSetup

#: What skrl's on-policy agents do that the agent's configuration does not show, from their source
#: (``skrl/agents/torch/ppo/ppo.py`` and ``a2c/a2c.py``, ``compute_gae``): advantages are normalized
#: once over the whole rollout with torch's unbiased std and 1e-8.
ADVANTAGE_NORMALIZATION = "whole rollout, (A - mean) / (std(unbiased) + 1e-8), always on"


def build_setup(adapter: SkrlAdapter, probe: ParityProbe) -> SkrlSetup:
    """The adapter's own build of the probe's workload, the agent initialized as the trainer would."""
    from rlcompare_skrl import build

    workload = probe.workload_view()
    config, _ = adapter.native_config(workload)
    factory = functools.partial(make_env, workload.env, dict(workload.env_kwargs))
    setup = build(workload, config, [factory] * workload.parallelism.total_envs, probe.seed)
    setup.agent.init()  # creates the memory's tensors; TensorBoard and checkpoints are off (interval 0)
    setup.agent.enable_training_mode(True)  # as SequentialTrainer.train does: record_transition stores only then
    return setup


def mlp_parameters(model: Any, prefix: str, probe: ParityProbe, out: str = "out") -> dict[str, Any]:
    """The probe's ``prefix.*`` weights loaded into the Linear layers of one of the adapter's skrl models."""
    layers = linear_layers(model.net)
    return load_linear_stack(layers, stack_names(prefix, len(layers), out), probe.weights)


def actor_critic_parameters(agent: Any, probe: ParityProbe) -> dict[str, Any]:
    """The probe's weights in the adapter's skrl policy (Categorical or Gaussian mixin) and value model."""
    parameters = {**mlp_parameters(agent.policy, "policy", probe), **mlp_parameters(agent.value, "value", probe)}
    if not probe.discrete:
        load_tensor(agent.policy.log_std_parameter, probe.weights["policy.log_std"])
        parameters["policy.log_std"] = agent.policy.log_std_parameter
    return parameters


@contextlib.contextmanager
def collecting_values(model: Any, known: Sequence[tuple[Any, Any]]) -> Iterator[list[Any]]:
    """Inside, ``model.act`` answers for the observation tensors in ``known`` (the very tensor
    objects) with the paired values: what the network that collected the batch said of them. In
    training that network is skrl's value model at the time (nothing updates it during a rollout);
    the probe's batch was collected by weights that differ from the probe's, so its stored values
    stand in, and skrl's own code (the truncation bootstrap in ``record_transition``,
    ``last_values`` in ``update``) uses them. Yields the list of tensors that were answered."""
    original = model.act
    answered: list[Any] = []

    def act(inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        observations = inputs.get("observations")
        for tensor, values in known:
            if observations is tensor:
                answered.append(tensor)
                return values, {}
        return original(inputs, *args, **kwargs)

    model.act = act
    try:
        yield answered
    finally:
        del model.act  # the instance attribute goes; the class's method is back


def fill_rollout(agent: Any, probe: ParityProbe, behaviour: bool) -> list[tuple[Any, Any]]:
    """The probe's rollout through the agent's own ``record_transition`` (PPO and A2C): skrl adds
    ``gamma * V(final observation)`` to a truncated step's reward there when ``time_limit_bootstrap``
    is on, and stores ``log_prob`` and ``values`` from what ``act`` left in the agent's attributes.

    ``behaviour``: the batch was collected by other weights than the probe's (PPO): its stored
    log-probabilities and values are what ``act`` had, and the value model answers the stored
    values for the final and last observations (see :func:`collecting_values`; the returned pairs
    serve ``update``). Otherwise (A2C, which updates the policy that collected) skrl's own models
    compute them, as ``act`` does."""
    import numpy as np
    import torch

    batch = probe.batch
    steps, envs = batch["rewards"].shape
    column = lambda array: torch.as_tensor(np.asarray(array).reshape(envs, -1), dtype=torch.float32)  # noqa: E731
    flags = lambda array: torch.as_tensor(np.asarray(array).reshape(envs, 1) > 0.5)  # noqa: E731
    memory = agent.memory
    memory.reset()
    known: list[tuple[Any, Any]] = []  # the tensors themselves: they are matched by identity
    nexts = []
    for t in range(steps):
        following = batch["last_obs"] if t == steps - 1 else batch["obs"][t + 1]
        truncated = batch["truncated"][t] > 0.5
        next_obs = column(np.where(truncated[:, None], batch["terminal_obs"][t], following))
        known.append((next_obs, column(batch["terminal_values"][t])))
        nexts.append(next_obs)
    last_obs = column(batch["last_obs"])
    known.append((last_obs, column(batch["last_values"])))
    with contextlib.ExitStack() as stack:
        if behaviour:
            stack.enter_context(collecting_values(agent.value, known))
        for t in range(steps):
            observations, actions = column(batch["obs"][t]), column(batch["actions"][t])
            if behaviour:
                agent._current_log_prob = column(batch["old_log_prob"][t])
                agent._current_values = column(batch["old_values"][t])
            else:
                with torch.no_grad():  # what act() computes, for the actions the batch took
                    inputs = {"observations": observations, "states": None}
                    _, outputs = agent.policy.act({**inputs, "taken_actions": actions}, role="policy")
                    agent._current_log_prob = outputs["log_prob"]
                    agent._current_values = agent.value.act(inputs, role="value")[0]
            agent.record_transition(
                observations=observations, states=None, actions=actions, rewards=column(batch["rewards"][t]),
                next_observations=nexts[t], next_states=None, terminated=flags(batch["terminated"][t]),
                truncated=flags(batch["truncated"][t]), infos={}, timestep=t, timesteps=steps)
    agent._current_next_observations = last_obs  # update() asks the value model for the last values of it
    return known if behaviour else []


def run_update(agent: Any, optimizers: tuple[Any, ...], known: Sequence[tuple[Any, Any]] = ()) -> OneStep:
    """skrl's own ``update`` with its optimizers wrapped in :class:`OneStep`, as ``post_interaction``
    runs it (models in training mode around it); ``known`` (from :func:`fill_rollout`, its last pair
    the last observation) answers the value model's ``last_values`` call."""
    agent.enable_models_training_mode(True)
    try:
        with contextlib.ExitStack() as stack:
            answered = stack.enter_context(collecting_values(agent.value, known)) if known else None
            step = stack.enter_context(OneStep(*optimizers))
            agent.update(timestep=0, timesteps=1)
    finally:
        agent.enable_models_training_mode(False)
    if answered is not None and not any(tensor is known[-1][0] for tensor in answered):
        raise RuntimeError("skrl's update did not ask its value model for the last observation's value")
    return step


def tracked_losses(agent: Any, names: Mapping[str, tuple[str, float]]) -> dict[str, float]:
    """The losses skrl's ``update`` tracked (``track_data``), by rlcompare's names, each divided by
    the scale skrl multiplied it with (the reference reports the unweighted terms)."""
    losses = {}
    for name, (tag, scale) in names.items():
        values = agent.tracking_data.get(tag)
        if values and scale:
            losses[name] = float(values[-1]) / scale
    return losses


def preprocessor_name(agent: Any, attribute: str) -> str:
    """``none`` where skrl left its empty preprocessor in place, else the preprocessor's class."""
    preprocessor = getattr(agent, attribute, None)
    if preprocessor is None or getattr(preprocessor, "__name__", "") == "_empty_preprocessor":
        return "none"
    return type(preprocessor).__name__


def optimizer_defaults(optimizer: Any) -> dict[str, Any]:
    return {"optimizer": type(optimizer).__name__, "adam_eps": optimizer.defaults.get("eps"),
            "adam_betas": list(optimizer.defaults.get("betas", ())) or None}


def policy_defaults(policy: Any) -> dict[str, Any]:
    """What the adapter's skrl policy does with its distribution, read from the mixin's attributes."""
    if not hasattr(policy, "_g_clip_log_std"):
        return {"distribution": "categorical (logits)" if getattr(policy, "_c_unnormalized_log_prob", True)
                else "categorical (probabilities)"}
    reduction = policy._g_reduction
    return {
        "distribution": "diagonal Gaussian (skrl GaussianMixin)",
        "log_std": "state-independent parameter" if hasattr(policy, "log_std_parameter") else "network output",
        "log_std_clipping": [policy._g_min_log_std, policy._g_max_log_std] if policy._g_clip_log_std else "none",
        "action_squashing": "clip" if policy._g_clip_actions else "none",
        "mean_clipping": bool(policy._g_clip_mean_actions),
        "mean_bounded_by_tanh": bool(getattr(policy, "bounded", False)),
        "log_prob": "Gaussian of the unsquashed sample, " + (getattr(reduction, "__name__", "none") if reduction
                                                              else "per dimension") + " over dimensions",
    }


def on_policy_defaults(setup: SkrlSetup, fresh_log_std: Any) -> dict[str, Any]:
    """The on-policy agent's effective settings, read back from the built objects."""
    agent = setup.agent
    cfg = agent.cfg
    scheduler = getattr(agent, "scheduler", None)
    defaults: dict[str, Any] = {
        **optimizer_defaults(agent.optimizer),
        "initialization": "PyTorch's default Linear init (kaiming_uniform, a=sqrt 5): skrl's models leave it",
        "observation_normalization": preprocessor_name(agent, "_observation_preprocessor"),
        "value_normalization": preprocessor_name(agent, "_value_preprocessor"),
        "reward_normalization": "none" if cfg.rewards_shaper is None else repr(cfg.rewards_shaper),
        "learning_rate_schedule": "constant" if scheduler is None else type(scheduler).__name__,
        "grad_clip_scope": "joint (policy and value)" if cfg.grad_norm_clip > 0 else "none",
        "max_grad_norm": cfg.grad_norm_clip,
        "advantage_normalization": ADVANTAGE_NORMALIZATION,
        "value_loss": "mse",
        "truncation_bootstrap": bool(cfg.time_limit_bootstrap),
        "entropy_loss_scale": cfg.entropy_loss_scale,
        "mixed_precision": bool(cfg.mixed_precision),
        "mini_batches": cfg.mini_batches,
        **policy_defaults(agent.policy),
    }
    if fresh_log_std is not None:
        defaults["log_std_init"] = float(fresh_log_std.mean())
    return defaults


def ppo_update(adapter: SkrlAdapter, probe: ParityProbe) -> ParityOutcome:
    """One PPO minibatch step: the rollout through skrl's ``record_transition``, skrl's ``update``
    (``compute_gae``, the clipped surrogate, one Adam step)."""
    setup = build_setup(adapter, probe)
    try:
        agent = setup.agent
        cfg = agent.cfg
        if cfg.learning_epochs != 1 or cfg.mini_batches != 1:
            return ParityOutcome.unverifiable(f"the probe's workload mapped to {cfg.learning_epochs} epochs of "
                                              f"{cfg.mini_batches} minibatches, not one step")
        fresh_log_std = None if probe.discrete else agent.policy.log_std_parameter.detach().clone()
        parameters = actor_critic_parameters(agent, probe)
        known = fill_rollout(agent, probe, behaviour=True)
        step = run_update(agent, (agent.optimizer,), known)
        if step.steps != 1:
            return ParityOutcome.unverifiable(f"skrl's PPO made {step.steps} optimizer steps on one minibatch")
        values = agent.memory.get_tensor_by_name("values").squeeze(-1)
        returns = agent.memory.get_tensor_by_name("returns").squeeze(-1)
        targets = {"advantages": (returns - values).double().numpy(), "returns": returns.double().numpy()}
        defaults = on_policy_defaults(setup, fresh_log_std)
        defaults.update(value_clipping="off" if cfg.value_clip <= 0 else f"clip_range {cfg.value_clip}",
                        value_loss_scale=cfg.value_loss_scale, ratio_clip=cfg.ratio_clip,
                        kl_threshold=cfg.kl_threshold or "off")
        return ParityOutcome(
            RAN, targets=targets, gradients=step.gradients_of(parameters), updated=values_of(parameters),
            losses=tracked_losses(agent, {"policy": ("Loss / Policy loss", 1.0),
                                          "value": ("Loss / Value loss", cfg.value_loss_scale),
                                          "entropy": ("Loss / Entropy loss", cfg.entropy_loss_scale)}),
            defaults=defaults,
            notes=("the rollout went through skrl's record_transition (its truncation bootstrap) and skrl's "
                   "update (compute_gae, one Adam step); the value model answered the stored values of the "
                   "policy that collected the batch for the final and last observations",
                   "advantages are returns - values from skrl's memory: compute_gae normalizes the advantages "
                   "it stores, over the whole rollout (the probe's one minibatch)"),
        )
    finally:
        setup.close()


# -- off-policy (DQN, SAC): the batch in skrl's replay memory, drawn back in order ---------------------


def fill_replay(agent: Any, probe: ParityProbe) -> int:
    """The probe's transitions added to the agent's ``RandomMemory`` as ``record_transition`` adds
    them (``add_samples``: observations, actions, rewards, next observations, terminated; skrl's DQN
    and SAC store no truncation flag: a truncated transition is bootstrapped like any other)."""
    import numpy as np
    import torch

    batch = probe.batch
    size = len(batch["rewards"])
    rows = lambda array: torch.as_tensor(np.asarray(array).reshape(size, -1), dtype=torch.float32)  # noqa: E731
    actions = (torch.as_tensor(batch["actions"].reshape(size, 1), dtype=torch.int64) if probe.discrete
               else rows(batch["actions"]))
    memory = agent.memory
    memory.reset()
    memory.add_samples(observations=rows(batch["obs"]), states=None, actions=actions, rewards=rows(batch["rewards"]),
                       next_observations=rows(batch["next_obs"]), next_states=None,
                       terminated=torch.as_tensor(batch["terminated"].reshape(size, 1) > 0.5))
    if len(memory) != size:
        raise RuntimeError(f"skrl's memory holds {len(memory)} transitions after adding the probe's {size}")
    return size


@contextlib.contextmanager
def sampled_in_order(memory: Any, size: int) -> Iterator[None]:
    """Inside, the memory's ``sample`` hands back its first ``size`` transitions in order through the
    memory's own ``sample_by_index`` (skrl's ``RandomMemory.sample`` draws indexes with replacement)."""
    import torch

    def sample(names: list[str], *, batch_size: int, mini_batches: int = 1, sequence_length: int = 1) -> Any:
        if batch_size != size or sequence_length != 1:
            raise RuntimeError(f"skrl asked for {batch_size} transitions (sequences of {sequence_length}); "
                               f"the probe's batch has {size}")
        return memory.sample_by_index(names=names, indexes=torch.arange(size), mini_batches=mini_batches)

    memory.sample = sample
    try:
        yield
    finally:
        del memory.sample


@contextlib.contextmanager
def capturing_targets(module: Any, loss: str, captured: dict[str, Any]) -> Iterator[None]:
    """Inside, ``module.F.<loss>`` (the agent module's ``torch.nn.functional``) records its target
    argument on the first call (the TD target skrl computed), without touching torch itself."""
    import types

    functional = module.F
    original = getattr(functional, loss)

    def recording(prediction: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        captured.setdefault("q_target", target.detach().reshape(-1).double().numpy().copy())
        return original(prediction, target, *args, **kwargs)

    proxy = types.ModuleType(functional.__name__)
    proxy.__dict__.update(functional.__dict__)
    setattr(proxy, loss, recording)
    module.F = proxy
    try:
        yield
    finally:
        module.F = functional


def random_actions(model: Any, draws: int = 64) -> str:
    """What the model's ``random_act`` (skrl's uniform actions: DQN's epsilon-greedy and every off-policy
    agent's ``random_timesteps``) really draws, one observation at a time as a single env asks.
    skrl's ``sample_space`` (``skrl/utils/spaces/torch/spaces.py``) samples
    ``gymnasium.vector.utils.batch_space(space, n).sample()``; gymnasium 1.x seeds that batched space
    with a copy of the space's generator, which never advances, so every call can return the same
    action."""
    import torch

    inputs = {"observations": torch.zeros(1, model.num_observations), "states": None}
    samples = {tuple(model.random_act(inputs, role="random")[0].reshape(-1).tolist()) for _ in range(draws)}
    if len(samples) > 1:
        return f"varied ({len(samples)} distinct in {draws} draws)"
    (only,) = samples
    return (f"constant: {draws} of {draws} draws were {list(only)} (skrl's sample_space batches the space with a "
            "copy of its never-advancing RNG, gymnasium 1.x batch_space)")
